/*
 * netd's nftables table as data (netd/snat.c): the desired table for SNAT
 * on and off, the expressions each statement is written as and parsed
 * back from (nft's own short prefix form too), the comparison naming the
 * first difference, the counters, and the trust checks of NETD_SNAT.
 * Pure: no root, no netlink.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/nf_tables.h>

#include "addr.h"
#include "conf.h"
#include "snat.h"

static uint32_t
ip(const char *s)
{
	uint32_t a = 0;

	assert_int_equal(ip4_parse(s, &a), 0);
	return a;
}

static struct ip_prefix
cidr(const char *s)
{
	struct ip_prefix c;

	assert_int_equal(ip_prefix_parse(s, &c, NULL), 0);
	return c;
}

/* A sync's target, as the message carries it. */
static const struct ip_addr *
to(const char *s)
{
	static struct ip_addr a;

	assert_int_equal(ip_addr_parse(s, &a, NULL), 0);
	return &a;
}

/* A node: primary link 2, VPC 10.0.0.0/16 and 10.1.0.0/20, one exclusion. */
static void
params(struct snat_params *p, bool on)
{
	memset(p, 0, sizeof(*p));
	p->enabled = on;
	p->random_fully = true;
	p->to = on ? ip("10.0.0.5") : 0;
	p->primary_ifindex = 2;
	p->connmark = 0x80;
	p->nvpc = 2;
	p->vpc[0] = cidr("10.0.0.0/16");
	p->vpc[1] = cidr("10.1.0.0/20");
	p->nexclude = 1;
	p->exclude[0] = cidr("192.168.0.0/16");
}

/* Every rule through its expressions and back: what was written reads
 * back as the same table. */
static void
roundtrip(const struct snat_table *want, struct snat_table *have)
{
	struct snat_expr e[SNAT_MAX_EXPRS];
	char why[SNAT_WHY_LEN];
	uint32_t i;
	size_t n;

	*have = *want;
	for (i = 0; i < want->nrules; i++) {
		n = snat_rule_exprs(&want->rules[i], e);
		assert_true(n > 0 && n <= SNAT_MAX_EXPRS);
		assert_int_equal(snat_rule_parse(e, n, &have->rules[i], why,
		    sizeof(why)), 0);
		have->rules[i].chain = want->rules[i].chain;
	}
}

static void
rule_text(const struct snat_table *t, uint32_t i, char *buf, size_t len)
{
	snat_rule_format(t, &t->rules[i], buf, len);
}

static void
test_desired_on(void **state)
{
	struct snat_params p;
	struct snat_table t;
	char buf[256];

	(void)state;
	params(&p, true);
	snat_desired(&p, &t);
	assert_int_equal(t.nchains, 3);
	assert_string_equal(t.chains[0].name, "mark-in");
	assert_int_equal(t.chains[0].prio, -150);
	assert_string_equal(t.chains[1].name, "mark-out");
	assert_int_equal(t.chains[1].prio, -90);
	assert_string_equal(t.chains[2].name, "snat-out");
	assert_true(t.chains[2].nat);
	assert_int_equal(t.chains[2].hook, SNAT_HOOK_POSTROUTING);
	assert_int_equal(t.chains[2].prio, 100);
	/* 2 mark rules, saddr return, 2 VPC + 1 exclusion returns, 2 snat */
	assert_int_equal(t.nrules, 8);
	rule_text(&t, 0, buf, sizeof(buf));
	assert_string_equal(buf, "mark-in: iif 2 ct state new fib daddr type "
	    "local ct mark set ct mark | 0x80 counter");
	rule_text(&t, 1, buf, sizeof(buf));
	assert_string_equal(buf, "mark-out: iif != 2 ct direction reply ct "
	    "mark & 0x80 == 0x80 meta mark set meta mark | 0x80 counter");
	rule_text(&t, 2, buf, sizeof(buf));
	assert_string_equal(buf, "snat-out: ip saddr 10.0.0.5/32 return");
	rule_text(&t, 3, buf, sizeof(buf));
	assert_string_equal(buf, "snat-out: ip daddr 10.0.0.0/16 return");
	rule_text(&t, 5, buf, sizeof(buf));
	assert_string_equal(buf, "snat-out: ip daddr 192.168.0.0/16 return");
	rule_text(&t, 7, buf, sizeof(buf));
	assert_string_equal(buf, "snat-out: oif 2 ip saddr 10.1.0.0/20 "
	    "counter snat to 10.0.0.5 fully-random");
}

static void
test_desired_off(void **state)
{
	struct snat_params p;
	struct snat_table t;

	(void)state;
	params(&p, false);
	snat_desired(&p, &t);
	assert_int_equal(t.nchains, 2);
	assert_int_equal(t.nrules, 2);
	assert_int_equal(snat_chain_find(&t, "snat-out"), -1);
}

static void
test_roundtrip_equal(void **state)
{
	struct snat_params p;
	struct snat_table want, have;
	char why[SNAT_WHY_LEN];

	(void)state;
	params(&p, true);
	snat_desired(&p, &want);
	roundtrip(&want, &have);
	assert_true(snat_table_equal(&have, &want, why, sizeof(why)));
	p.random_fully = false;
	snat_desired(&p, &want);
	roundtrip(&want, &have);
	assert_true(snat_table_equal(&have, &want, why, sizeof(why)));
	params(&p, false);
	snat_desired(&p, &want);
	roundtrip(&want, &have);
	assert_true(snat_table_equal(&have, &want, why, sizeof(why)));
}

/* The expressions nft itself writes for "ip saddr 10.0.0.0/16": a
 * two-byte load, no mask. */
static void
test_parse_nft_short_prefix(void **state)
{
	struct snat_expr e[3];
	struct snat_rule r;
	char why[SNAT_WHY_LEN];
	uint32_t ten = ip("10.0.0.0");

	(void)state;
	memset(e, 0, sizeof(e));
	e[0].kind = SX_PAYLOAD;
	e[0].key = NFT_PAYLOAD_NETWORK_HEADER;
	e[0].offset = 12;
	e[0].len = 2;
	e[0].dreg = NFT_REG_1;
	e[1].kind = SX_CMP;
	e[1].key = NFT_CMP_EQ;
	e[1].len = 2;
	e[1].sreg = NFT_REG_1;
	memcpy(e[1].data, &ten, 2);
	e[2].kind = SX_IMM_VERDICT;
	e[2].dreg = NFT_REG_VERDICT;
	e[2].verdict = NFT_RETURN;
	assert_int_equal(snat_rule_parse(e, 3, &r, why, sizeof(why)), 0);
	assert_int_equal(r.nstmts, 2);
	assert_int_equal(r.stmts[0].kind, SNAT_SADDR);
	assert_int_equal(r.stmts[0].value, ten);
	assert_int_equal(r.stmts[0].prefix, 16);
	assert_int_equal(r.stmts[1].kind, SNAT_RETURN);
	/* a value outside the mask is nothing netd writes */
	e[1].data[1] = 1;
	e[1].len = 2;
	e[0].len = 1;
	assert_int_equal(snat_rule_parse(e, 3, &r, why, sizeof(why)), -1);
}

/* Spoil one expression field at a time: each makes the rule foreign. */
static void
test_parse_refuses(void **state)
{
	struct snat_params p;
	struct snat_table want;
	struct snat_expr e[SNAT_MAX_EXPRS], bad[SNAT_MAX_EXPRS];
	struct snat_rule r;
	char why[SNAT_WHY_LEN];
	uint32_t i;
	size_t n, k;

	(void)state;
	params(&p, true);
	snat_desired(&p, &want);
	for (i = 0; i < want.nrules; i++) {
		n = snat_rule_exprs(&want.rules[i], e);
		for (k = 0; k < n; k++) {
			if (e[k].kind == SX_COUNTER)
				continue;	/* nothing to spoil */
			memcpy(bad, e, sizeof(e));
			bad[k].sreg = bad[k].dreg = 7;
			bad[k].key ^= 0x40;
			bad[k].verdict = NF_ACCEPT;
			bad[k].flags ^= 0x4;
			bad[k].family ^= 0x8;
			assert_int_equal(snat_rule_parse(bad, n, &r, why,
			    sizeof(why)), -1);
			assert_non_null(strstr(why, "does not write"));
		}
		/* a statement cut short (its last expression gone) */
		if (e[n - 1].kind == SX_NAT || e[n - 1].kind == SX_CT_SET)
			assert_int_equal(snat_rule_parse(e, n - 1, &r, why,
			    sizeof(why)), -1);
	}
	memset(bad, 0, sizeof(bad));
	assert_int_equal(snat_rule_parse(bad, SNAT_MAX_EXPRS + 1, &r, why,
	    sizeof(why)), -1);
}

static void
test_differences(void **state)
{
	struct snat_params p;
	struct snat_table want, have;
	char why[SNAT_WHY_LEN];

	(void)state;
	params(&p, true);
	snat_desired(&p, &want);

	memset(&have, 0, sizeof(have));
	assert_false(snat_table_equal(&have, &want, why, sizeof(why)));
	assert_string_equal(why, "table ip enid absent");

	roundtrip(&want, &have);
	have.foreign = true;
	snprintf(have.what, sizeof(have.what), "a set named x");
	assert_false(snat_table_equal(&have, &want, why, sizeof(why)));
	assert_string_equal(why, "a set named x");

	roundtrip(&want, &have);
	have.chains[1].prio = -150;	/* the #3563 trap: before DNAT */
	assert_false(snat_table_equal(&have, &want, why, sizeof(why)));
	assert_non_null(strstr(why, "chain mark-out"));
	assert_non_null(strstr(why, "priority -150"));

	roundtrip(&want, &have);
	have.rules[7].stmts[3].value = ip("10.0.0.6");
	assert_false(snat_table_equal(&have, &want, why, sizeof(why)));
	assert_non_null(strstr(why, "snat to 10.0.0.6"));

	roundtrip(&want, &have);
	have.rules[6].stmts[3].fully_random = false;
	assert_false(snat_table_equal(&have, &want, why, sizeof(why)));

	roundtrip(&want, &have);
	have.nrules--;			/* the last snat rule gone */
	assert_false(snat_table_equal(&have, &want, why, sizeof(why)));
	assert_non_null(strstr(why, "rule 6 missing"));

	/* SNAT turned off: the table with snat-out has a chain too many */
	roundtrip(&want, &have);
	params(&p, false);
	snat_desired(&p, &want);
	assert_false(snat_table_equal(&have, &want, why, sizeof(why)));
	assert_string_equal(why, "chain snat-out is not netd's");

	/* and the other way: missing */
	params(&p, true);
	snat_desired(&p, &want);
	have.nchains = 2;
	have.nrules = 2;
	assert_false(snat_table_equal(&have, &want, why, sizeof(why)));
	assert_string_equal(why, "chain snat-out missing");

	/* an extra rule in a chain */
	roundtrip(&want, &have);
	have.rules[have.nrules] = have.rules[1];
	have.nrules++;
	assert_false(snat_table_equal(&have, &want, why, sizeof(why)));
	assert_non_null(strstr(why, "extra rule 2"));
}

static void
test_counters(void **state)
{
	struct snat_params p;
	struct snat_table want, have;
	char why[SNAT_WHY_LEN];

	(void)state;
	params(&p, true);
	snat_desired(&p, &want);
	roundtrip(&want, &have);
	have.rules[0].stmts[4].packets = 3;		/* mark-in */
	have.rules[1].stmts[4].packets = 100;		/* mark-out */
	have.rules[6].stmts[2].packets = 5;
	have.rules[7].stmts[2].packets = 7;
	assert_true(snat_table_equal(&have, &want, why, sizeof(why)));
	assert_int_equal(snat_translated(&have), 12);
	assert_int_equal(snat_marked(&have), 3);
	params(&p, false);
	snat_desired(&p, &want);
	assert_int_equal(snat_translated(&want), 0);
}

static void
test_trust(void **state)
{
	struct enid_config cfg;
	struct ip_prefix vpc[1] = { cidr("10.0.0.0/16") };
	uint32_t addrs[2] = { ip("10.0.0.5"), ip("203.0.113.9") };
	char d[160];

	(void)state;
	config_defaults(&cfg);
	assert_true(cfg.snat.enabled);
	assert_null(snat_check_request(&cfg, vpc, 1, to("10.0.0.5"), addrs, 2,
	    d, sizeof(d)));
	assert_non_null(snat_check_request(&cfg, vpc, 1, to("0.0.0.0"), addrs,
	    2, d, sizeof(d)));
	/* an address the primary link does not hold, inside the VPC or not */
	assert_non_null(strstr(snat_check_request(&cfg, vpc, 1,
	    to("10.0.0.6"), addrs, 2, d, sizeof(d)), "primary link"));
	assert_string_equal(d, "to 10.0.0.6");
	assert_non_null(snat_check_request(&cfg, vpc, 1, to("8.8.8.8"), addrs,
	    2, d, sizeof(d)));
	/* never loopback, multicast or broadcast, even if listed */
	addrs[1] = ip("127.0.0.1");
	assert_non_null(snat_check_request(&cfg, vpc, 1, to("127.0.0.1"),
	    addrs, 2, d, sizeof(d)));
	addrs[1] = ip("224.0.0.1");
	assert_non_null(snat_check_request(&cfg, vpc, 1, to("224.0.0.1"),
	    addrs, 2, d, sizeof(d)));
	addrs[1] = ip("255.255.255.255");
	assert_non_null(snat_check_request(&cfg, vpc, 1,
	    to("255.255.255.255"), addrs, 2, d, sizeof(d)));
	/* an IPv6 target, named */
	assert_string_equal(snat_check_request(&cfg, vpc, 1, to("fd00::5"),
	    addrs, 2, d, sizeof(d)),
	    "the translation target is not an IPv4 address");
	assert_string_equal(d, "to fd00::5");
	/* SNAT off: only to = 0 */
	cfg.snat.enabled = false;
	assert_null(snat_check_request(&cfg, vpc, 1, to("0.0.0.0"), addrs, 2,
	    d, sizeof(d)));
	assert_non_null(snat_check_request(&cfg, vpc, 1, to("10.0.0.5"),
	    addrs, 2, d, sizeof(d)));
	/* exclusions overlapping the VPC */
	cfg.snat.enabled = true;
	cfg.snat.nexclude = 1;
	cfg.snat.exclude[0] = cidr("10.0.128.0/17");
	assert_non_null(strstr(snat_check_request(&cfg, vpc, 1,
	    to("10.0.0.5"), addrs, 2, d, sizeof(d)), "overlaps"));
	assert_non_null(strstr(d, "10.0.128.0/17"));
}

/* The kernel reports a nat expression with an address register with
 * NF_NAT_RANGE_MAP_IPS added to its flags: still netd's rule. */
static void
test_parse_kernel_nat_flags(void **state)
{
	struct snat_params p;
	struct snat_table want;
	struct snat_expr e[SNAT_MAX_EXPRS];
	struct snat_rule r;
	char why[SNAT_WHY_LEN];
	size_t n;

	(void)state;
	params(&p, true);
	snat_desired(&p, &want);
	n = snat_rule_exprs(&want.rules[6], e);
	assert_int_equal(e[n - 1].kind, SX_NAT);
	e[n - 1].flags |= NF_NAT_RANGE_MAP_IPS;
	assert_int_equal(snat_rule_parse(e, n, &r, why, sizeof(why)), 0);
	assert_true(r.stmts[3].fully_random);
	e[n - 1].flags |= NF_NAT_RANGE_PROTO_SPECIFIED;
	assert_int_equal(snat_rule_parse(e, n, &r, why, sizeof(why)), -1);
}

/* ---- the answers to a batch ---- */

/* An NLMSG_ERROR answering seq from pid: error 0 is an ack. */
static size_t
answer(void *buf, uint32_t seq, uint32_t pid, int error)
{
	struct nlmsghdr *h = buf;
	struct nlmsgerr *e;

	memset(buf, 0, NLMSG_SPACE(sizeof(*e)));
	h->nlmsg_len = NLMSG_LENGTH(sizeof(*e));
	h->nlmsg_type = NLMSG_ERROR;
	h->nlmsg_seq = seq;
	h->nlmsg_pid = pid;
	e = NLMSG_DATA(h);
	e->error = error;
	e->msg.nlmsg_seq = seq;
	return h->nlmsg_len;
}

/* Feed b one answer to seq. */
static int
feed(struct snat_batch *b, uint32_t seq, uint32_t pid, int error)
{
	char buf[128];

	return snat_batch_answer(b, buf, answer(buf, seq, pid, error));
}

static void
test_batch_all_acked(void **state)
{
	struct snat_batch b = { 100, 5, 42, 0, 0, 0 };
	uint32_t seq;

	(void)state;
	for (seq = 100; seq < 105; seq++)
		assert_int_equal(feed(&b, seq, 42, 0), 1);
	assert_int_equal(b.acks, 5);
	assert_int_equal(b.error, 0);
}

static void
test_batch_refused_begin_named(void **state)
{
	struct snat_batch b = { 100, 5, 42, 0, 0, 0 };

	(void)state;
	/* the kernel refuses the begin message (no CAP_NET_ADMIN, no such
	 * subsystem) and reads nothing after it */
	assert_int_equal(feed(&b, 99, 0, -EPERM), 1);
	assert_int_equal(b.error, -EPERM);
	assert_int_equal(b.error_seq, 99);
	assert_int_equal(b.acks, 0);
}

static void
test_batch_first_refusal_kept(void **state)
{
	struct snat_batch b = { 100, 5, 42, 0, 0, 0 };

	(void)state;
	feed(&b, 100, 42, 0);
	feed(&b, 102, 42, -EINVAL);
	feed(&b, 103, 42, -ENOENT);
	feed(&b, 105, 42, -EBUSY);	/* end */
	assert_int_equal(b.error, -EINVAL);
	assert_int_equal(b.error_seq, 102);
	assert_int_equal(b.acks, 3);
	/* a positive error is not one the kernel sends: still a refusal */
	b.error = 0;
	feed(&b, 104, 42, 7);
	assert_int_equal(b.error, -EPROTO);
	/* the end message refused alone: named as the end */
	memset(&b, 0, sizeof(b));
	b.first = 100;
	b.nmsgs = 5;
	feed(&b, 105, 0, -EBUSY);
	assert_int_equal(b.error_seq, 105);
	assert_int_equal(b.acks, 0);
}

static void
test_batch_others_ignored(void **state)
{
	struct snat_batch b = { 100, 5, 42, 0, 0, 0 };
	struct nlmsghdr *h;
	char buf[128];
	size_t len;

	(void)state;
	/* before begin, after end, another socket's, not an error */
	assert_int_equal(feed(&b, 98, 42, -EPERM), 0);
	assert_int_equal(feed(&b, 106, 42, -EPERM), 0);
	assert_int_equal(feed(&b, 101, 43, -EPERM), 0);
	len = answer(buf, 101, 42, -EPERM);
	h = (struct nlmsghdr *)buf;
	h->nlmsg_type = NLMSG_DONE;
	assert_int_equal(snat_batch_answer(&b, buf, len), 0);
	/* a sequence number wrapped around zero: begin at UINT32_MAX */
	b.first = 0;
	assert_int_equal(feed(&b, UINT32_MAX, 42, -EPERM), 1);
	assert_int_equal(b.error_seq, UINT32_MAX);
	b.error = 0;
	b.first = 100;
	assert_int_equal(b.acks, 0);
	/* shorter than its header says, or than an error message */
	len = answer(buf, 101, 42, 0);
	assert_int_equal(snat_batch_answer(&b, buf, len - 1), 0);
	h->nlmsg_len = NLMSG_LENGTH(sizeof(int));
	assert_int_equal(snat_batch_answer(&b, buf, len), -1);
	assert_int_equal(snat_batch_answer(&b, buf, 4), 0);
	assert_int_equal(b.acks, 0);
	assert_int_equal(b.error, 0);
}

/* ---- ip6 enid: the IPv6 source check of pods' veths ---- */

static void
test_src6(void **state)
{
	struct snat_table want, have, other;
	struct snat_expr e[SNAT_MAX_EXPRS];
	char buf[256], why[SNAT_WHY_LEN];
	size_t n, i;

	(void)state;
	snat_src6_desired("enid", &want);
	assert_int_equal(want.family, SNAT_FAMILY_IP6);
	assert_int_equal(want.nchains, 1);
	assert_string_equal(want.chains[0].name, "pod-src");
	assert_int_equal(want.chains[0].hook, SNAT_HOOK_PREROUTING);
	assert_int_equal(want.chains[0].prio, -300);
	assert_false(want.chains[0].nat);
	assert_int_equal(want.nrules, 1);
	rule_text(&want, 0, buf, sizeof(buf));
	assert_string_equal(buf, "pod-src: iifname \"enid*\" ip6 saddr != "
	    "fe80::/10 fib saddr . iif oif missing counter drop");
	/* Written and read back, it is itself. */
	roundtrip(&want, &have);
	assert_true(snat_table_equal(&have, &want, why, sizeof(why)));
	/* Another prefix is another table. */
	snat_src6_desired("pod", &other);
	assert_false(snat_table_equal(&other, &want, why, sizeof(why)));
	/* The expressions as nft 1.0.6 writes the same rule (its
	 * --debug=netlink): a prefix compare without NUL, the whole
	 * address masked, fib's present flag. */
	n = snat_rule_exprs(&want.rules[0], e);
	assert_int_equal(n, 9);
	assert_int_equal(e[1].len, 4);
	assert_memory_equal(e[1].data, "enid", 4);
	assert_int_equal(e[2].len, 16);
	assert_int_equal(e[2].offset, 8);
	assert_int_equal(e[4].key, NFT_CMP_NEQ);
	assert_int_equal(e[5].flags, NFTA_FIB_F_SADDR | NFTA_FIB_F_IIF |
	    NFTA_FIB_F_PRESENT);
	assert_int_equal(e[8].verdict, NF_DROP);
	/* What netd does not write is foreign: each expression spoiled. */
	for (i = 0; i < n; i++) {
		struct snat_expr bad[SNAT_MAX_EXPRS];
		struct snat_rule r;

		memcpy(bad, e, sizeof(bad));
		switch (bad[i].kind) {
		case SX_CMP:
			bad[i].data[bad[i].len - 1] ^= 0x01;
			break;
		case SX_COUNTER:
			continue;	/* counts are not compared */
		case SX_IMM_VERDICT:
			bad[i].verdict = NF_ACCEPT;
			break;
		case SX_FIB:
			bad[i].flags &= ~(uint32_t)NFTA_FIB_F_IIF;
			break;
		case SX_BITWISE:
			bad[i].data[1] = 0xff;
			break;
		default:
			bad[i].offset ^= 4;
			bad[i].key ^= 1;
			break;
		}
		if (snat_rule_parse(bad, n, &r, why, sizeof(why)) == 0) {
			r.chain = 0;
			have.rules[0] = r;
			if (snat_table_equal(&have, &want, why, sizeof(why)))
				fail_msg("expression %zu spoiled, still equal",
				    i);
		}
	}
	/* The dropped counter. */
	roundtrip(&want, &have);
	have.rules[0].stmts[3].packets = 7;
	assert_int_equal(snat_src6_dropped(&have), 7);
	/* Absent: named with its family. */
	memset(&have, 0, sizeof(have));
	assert_false(snat_table_equal(&have, &want, why, sizeof(why)));
	assert_string_equal(why, "table ip6 enid absent");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_desired_on),
		cmocka_unit_test(test_src6),
		cmocka_unit_test(test_desired_off),
		cmocka_unit_test(test_roundtrip_equal),
		cmocka_unit_test(test_parse_nft_short_prefix),
		cmocka_unit_test(test_parse_refuses),
		cmocka_unit_test(test_parse_kernel_nat_flags),
		cmocka_unit_test(test_differences),
		cmocka_unit_test(test_counters),
		cmocka_unit_test(test_trust),
		cmocka_unit_test(test_batch_all_acked),
		cmocka_unit_test(test_batch_refused_begin_named),
		cmocka_unit_test(test_batch_first_refusal_kept),
		cmocka_unit_test(test_batch_others_ignored),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
