/*
 * netd's nftables table as data: what it should hold, how each statement
 * is written as expressions and read back, how a read-back table compares
 * with the desired one, and the trust checks of NETD_SNAT.  See snat.h.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netlink.h>

#include "addr.h"
#include "snat.h"

#define REG		NFT_REG_1	/* the one data register netd uses */
#define RTN_LOCAL_TYPE	2		/* RTN_LOCAL: fib's "type local" */
#define IPHDR_SADDR	12
#define IPHDR_DADDR	16
#define IP6HDR_SADDR	8
/* fe80::/10 as nft matches it: the whole address loaded and masked. */
#define LL6_MASK	0xffc0
#define LL6_NET		0xfe80
#define IP6_ADDR_LEN	16
#define CT_STATE_NEW	NF_CT_STATE_BIT(IP_CT_NEW)
/* The kernel adds this to a nat expression's flags when it has an
 * address register, and reports it back. */
#define NAT_FLAGS_KERNEL NF_NAT_RANGE_MAP_IPS

/* ---- the desired table ---- */

static void
add_chain(struct snat_table *t, const char *name, bool nat, uint32_t hook,
    int32_t prio)
{
	struct snat_chain *c = &t->chains[t->nchains++];

	snprintf(c->name, sizeof(c->name), "%s", name);
	c->nat = nat;
	c->hook = hook;
	c->prio = prio;
	c->accept = true;
}

static struct snat_rule *
add_rule(struct snat_table *t, uint32_t chain)
{
	struct snat_rule *r = &t->rules[t->nrules++];

	memset(r, 0, sizeof(*r));
	r->chain = chain;
	return r;
}

static void
add_stmt(struct snat_rule *r, uint8_t kind, uint32_t value, uint8_t prefix)
{
	struct snat_stmt *s = &r->stmts[r->nstmts++];

	memset(s, 0, sizeof(*s));
	s->kind = kind;
	s->value = value;
	s->prefix = prefix;
}

void
snat_desired(const struct snat_params *p, struct snat_table *out)
{
	struct snat_rule *r;
	uint32_t i;

	memset(out, 0, sizeof(*out));
	out->family = SNAT_FAMILY_IP;
	out->present = true;
	/* Connections arriving on the primary link for the node itself
	 * (NodePort, host network), marked before DNAT rewrites daddr. */
	add_chain(out, SNAT_CHAIN_MARK_IN, false, SNAT_HOOK_PREROUTING,
	    SNAT_PRIO_MANGLE);
	r = add_rule(out, 0);
	add_stmt(r, SNAT_IIF, p->primary_ifindex, 0);
	add_stmt(r, SNAT_CT_STATE_NEW, 0, 0);
	add_stmt(r, SNAT_FIB_DADDR_LOCAL, 0, 0);
	add_stmt(r, SNAT_CT_MARK_OR, p->connmark, 0);
	add_stmt(r, SNAT_COUNTER, 0, 0);
	/* Their replies, after DNAT (aws-vpc-cni #3563: restored before it,
	 * a pod's ClusterIP traffic left through the primary link); only the
	 * reply direction, and only bit M of the packet mark (#3872). */
	add_chain(out, SNAT_CHAIN_MARK_OUT, false, SNAT_HOOK_PREROUTING,
	    SNAT_PRIO_AFTER_DNAT);
	r = add_rule(out, 1);
	add_stmt(r, SNAT_IIF_NOT, p->primary_ifindex, 0);
	add_stmt(r, SNAT_CT_REPLY, 0, 0);
	add_stmt(r, SNAT_CT_MARK_HAS, p->connmark, 0);
	add_stmt(r, SNAT_META_MARK_OR, p->connmark, 0);
	add_stmt(r, SNAT_COUNTER, 0, 0);
	if (p->to == 0)
		return;
	add_chain(out, SNAT_CHAIN_SNAT_OUT, true, SNAT_HOOK_POSTROUTING,
	    SNAT_PRIO_SRCNAT);
	r = add_rule(out, 2);
	add_stmt(r, SNAT_SADDR, p->to, 32);
	add_stmt(r, SNAT_RETURN, 0, 0);
	for (i = 0; i < p->nvpc && i < MSG_MAX_CIDRS; i++) {
		r = add_rule(out, 2);
		add_stmt(r, SNAT_DADDR, ip_addr_in4(&p->vpc[i].addr),
		    p->vpc[i].len);
		add_stmt(r, SNAT_RETURN, 0, 0);
	}
	for (i = 0; i < p->nexclude && i < CONF_MAX_SNAT_EXCLUDE; i++) {
		r = add_rule(out, 2);
		add_stmt(r, SNAT_DADDR, ip_addr_in4(&p->exclude[i].addr),
		    p->exclude[i].len);
		add_stmt(r, SNAT_RETURN, 0, 0);
	}
	for (i = 0; i < p->nvpc && i < MSG_MAX_CIDRS; i++) {
		r = add_rule(out, 2);
		add_stmt(r, SNAT_OIF, p->primary_ifindex, 0);
		add_stmt(r, SNAT_SADDR, ip_addr_in4(&p->vpc[i].addr),
		    p->vpc[i].len);
		add_stmt(r, SNAT_COUNTER, 0, 0);
		add_stmt(r, SNAT_SNAT_TO, p->to, 0);
		r->stmts[r->nstmts - 1].fully_random = p->random_fully;
	}
}

void
snat_src6_desired(const char *veth_prefix, struct snat_table *out)
{
	struct snat_rule *r;

	memset(out, 0, sizeof(*out));
	out->family = SNAT_FAMILY_IP6;
	out->present = true;
	add_chain(out, SNAT_CHAIN_POD_SRC, false, SNAT_HOOK_PREROUTING,
	    SNAT_PRIO_RAW);
	r = add_rule(out, 0);
	add_stmt(r, SNAT_IIFNAME_PREFIX, 0, 0);
	snprintf(r->stmts[0].name, sizeof(r->stmts[0].name), "%s",
	    veth_prefix);
	add_stmt(r, SNAT_SADDR6_NOT_LL, 0, 0);
	add_stmt(r, SNAT_FIB_SADDR_IIF_MISSING, 0, 0);
	add_stmt(r, SNAT_COUNTER, 0, 0);
	add_stmt(r, SNAT_DROP, 0, 0);
}

const char *
snat_family_name(uint8_t family)
{
	return family == SNAT_FAMILY_IP6 ? "ip6" : "ip";
}

/* ---- formatting and comparison ---- */

static size_t
fmt_stmt(const struct snat_stmt *s, char *buf, size_t len)
{
	char a[CIDR4_STR_LEN];

	switch (s->kind) {
	case SNAT_IIF:
		return (size_t)snprintf(buf, len, "iif %u", s->value);
	case SNAT_IIF_NOT:
		return (size_t)snprintf(buf, len, "iif != %u", s->value);
	case SNAT_OIF:
		return (size_t)snprintf(buf, len, "oif %u", s->value);
	case SNAT_CT_STATE_NEW:
		return (size_t)snprintf(buf, len, "ct state new");
	case SNAT_FIB_DADDR_LOCAL:
		return (size_t)snprintf(buf, len, "fib daddr type local");
	case SNAT_CT_REPLY:
		return (size_t)snprintf(buf, len, "ct direction reply");
	case SNAT_CT_MARK_HAS:
		return (size_t)snprintf(buf, len, "ct mark & 0x%x == 0x%x",
		    s->value, s->value);
	case SNAT_SADDR:
	case SNAT_DADDR:
		cidr4_format(s->value, s->prefix, a);
		return (size_t)snprintf(buf, len, "ip %s %s",
		    s->kind == SNAT_SADDR ? "saddr" : "daddr", a);
	case SNAT_CT_MARK_OR:
		return (size_t)snprintf(buf, len, "ct mark set ct mark | 0x%x",
		    s->value);
	case SNAT_META_MARK_OR:
		return (size_t)snprintf(buf, len, "meta mark set meta mark | "
		    "0x%x", s->value);
	case SNAT_COUNTER:
		return (size_t)snprintf(buf, len, "counter");
	case SNAT_RETURN:
		return (size_t)snprintf(buf, len, "return");
	case SNAT_SNAT_TO:
		ip4_format(s->value, a);
		return (size_t)snprintf(buf, len, "snat to %s%s", a,
		    s->fully_random ? " fully-random" : "");
	case SNAT_IIFNAME_PREFIX:
		return (size_t)snprintf(buf, len, "iifname \"%.15s*\"",
		    s->name);
	case SNAT_SADDR6_NOT_LL:
		return (size_t)snprintf(buf, len, "ip6 saddr != fe80::/10");
	case SNAT_FIB_SADDR_IIF_MISSING:
		return (size_t)snprintf(buf, len, "fib saddr . iif oif "
		    "missing");
	case SNAT_DROP:
		return (size_t)snprintf(buf, len, "drop");
	default:
		return (size_t)snprintf(buf, len, "?");
	}
}

void
snat_rule_format(const struct snat_table *t, const struct snat_rule *r,
    char *buf, size_t len)
{
	size_t off;
	uint32_t i;

	off = (size_t)snprintf(buf, len, "%s:",
	    r->chain < t->nchains ? t->chains[r->chain].name : "?");
	for (i = 0; i < r->nstmts && off + 1 < len; i++) {
		buf[off++] = ' ';
		buf[off] = '\0';
		off += fmt_stmt(&r->stmts[i], buf + off, len - off);
	}
}

int
snat_chain_find(const struct snat_table *t, const char *name)
{
	uint32_t i;

	for (i = 0; i < t->nchains && i < SNAT_MAX_CHAINS; i++)
		if (strcmp(t->chains[i].name, name) == 0)
			return (int)i;
	return -1;
}

static bool
stmt_equal(const struct snat_stmt *a, const struct snat_stmt *b)
{
	if (a->kind != b->kind || a->value != b->value)
		return false;
	if (a->kind == SNAT_IIFNAME_PREFIX &&
	    strncmp(a->name, b->name, sizeof(a->name)) != 0)
		return false;
	if ((a->kind == SNAT_SADDR || a->kind == SNAT_DADDR) &&
	    a->prefix != b->prefix)
		return false;
	return a->kind != SNAT_SNAT_TO || a->fully_random == b->fully_random;
}

static bool
rule_equal(const struct snat_rule *a, const struct snat_rule *b)
{
	uint32_t i;

	if (a->nstmts != b->nstmts)
		return false;
	for (i = 0; i < a->nstmts; i++)
		if (!stmt_equal(&a->stmts[i], &b->stmts[i]))
			return false;
	return true;
}

/* The n-th rule of chain c, or NULL. */
static const struct snat_rule *
nth_rule(const struct snat_table *t, uint32_t c, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < t->nrules; i++)
		if (t->rules[i].chain == c && n-- == 0)
			return &t->rules[i];
	return NULL;
}

static bool
chain_equal(const struct snat_chain *a, const struct snat_chain *b,
    char *why, size_t whylen)
{
	if (a->nat == b->nat && a->hook == b->hook && a->prio == b->prio &&
	    a->accept == b->accept)
		return true;
	snprintf(why, whylen, "chain %s is type %s hook %u priority %d "
	    "policy %s, not type %s hook %u priority %d policy accept",
	    a->name, a->nat ? "nat" : "filter", a->hook, a->prio,
	    a->accept ? "accept" : "drop", b->nat ? "nat" : "filter",
	    b->hook, b->prio);
	return false;
}

static bool
chain_rules_equal(const struct snat_table *have, uint32_t hc,
    const struct snat_table *want, uint32_t wc, char *why, size_t whylen)
{
	char h[SNAT_WHY_LEN / 2], w[SNAT_WHY_LEN / 2];
	const struct snat_rule *a, *b;
	uint32_t n;

	for (n = 0; n <= SNAT_MAX_RULES; n++) {
		a = nth_rule(have, hc, n);
		b = nth_rule(want, wc, n);
		if (a == NULL && b == NULL)
			return true;
		if (a != NULL && b != NULL && rule_equal(a, b))
			continue;
		if (a != NULL)
			snat_rule_format(have, a, h, sizeof(h));
		if (b != NULL)
			snat_rule_format(want, b, w, sizeof(w));
		if (a == NULL)
			snprintf(why, whylen, "chain %s: rule %u missing (%s)",
			    want->chains[wc].name, n + 1, w);
		else if (b == NULL)
			snprintf(why, whylen, "chain %s: extra rule %u (%s)",
			    want->chains[wc].name, n + 1, h);
		else
			snprintf(why, whylen, "rule %u is \"%s\", not \"%s\"",
			    n + 1, h, w);
		return false;
	}
	return true;
}

bool
snat_table_equal(const struct snat_table *have,
    const struct snat_table *want, char *why, size_t whylen)
{
	uint32_t i;
	int hc;

	if (!have->present) {
		snprintf(why, whylen, "table %s %s absent",
		    snat_family_name(want->family), SNAT_TABLE);
		return false;
	}
	if (have->foreign) {
		snprintf(why, whylen, "%s", have->what);
		return false;
	}
	for (i = 0; i < want->nchains; i++) {
		if ((hc = snat_chain_find(have, want->chains[i].name)) < 0) {
			snprintf(why, whylen, "chain %s missing",
			    want->chains[i].name);
			return false;
		}
		if (!chain_equal(&have->chains[hc], &want->chains[i], why,
		    whylen) || !chain_rules_equal(have, (uint32_t)hc, want,
		    i, why, whylen))
			return false;
	}
	for (i = 0; i < have->nchains; i++)
		if (snat_chain_find(want, have->chains[i].name) < 0) {
			snprintf(why, whylen, "chain %s is not netd's",
			    have->chains[i].name);
			return false;
		}
	return true;
}

static uint64_t
counted(const struct snat_table *t, int chain, uint8_t with)
{
	uint64_t sum = 0;
	uint32_t i, j;
	bool has;

	if (chain < 0)
		return 0;
	for (i = 0; i < t->nrules; i++) {
		const struct snat_rule *r = &t->rules[i];

		if (r->chain != (uint32_t)chain)
			continue;
		for (has = false, j = 0; j < r->nstmts; j++)
			has = has || r->stmts[j].kind == with;
		for (j = 0; has && j < r->nstmts; j++)
			if (r->stmts[j].kind == SNAT_COUNTER)
				sum += r->stmts[j].packets;
	}
	return sum;
}

uint64_t
snat_translated(const struct snat_table *t)
{
	return counted(t, snat_chain_find(t, SNAT_CHAIN_SNAT_OUT),
	    SNAT_SNAT_TO);
}

uint64_t
snat_marked(const struct snat_table *t)
{
	return counted(t, snat_chain_find(t, SNAT_CHAIN_MARK_IN),
	    SNAT_CT_MARK_OR);
}

uint64_t
snat_src6_dropped(const struct snat_table *t)
{
	return counted(t, snat_chain_find(t, SNAT_CHAIN_POD_SRC), SNAT_DROP);
}

/* ---- statements to expressions ---- */

static struct snat_expr *
ex(struct snat_expr *out, size_t *n, uint8_t kind, uint32_t key)
{
	struct snat_expr *e = &out[(*n)++];

	memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->key = key;
	e->sreg = e->dreg = REG;
	return e;
}

static void
ex_cmp(struct snat_expr *out, size_t *n, uint32_t op, const void *data,
    uint32_t len)
{
	struct snat_expr *e = ex(out, n, SX_CMP, op);

	e->len = len;
	memcpy(e->data, data, len);
}

static void
ex_bitwise(struct snat_expr *out, size_t *n, uint32_t mask, uint32_t xor)
{
	struct snat_expr *e = ex(out, n, SX_BITWISE, 0);

	e->len = 4;
	memcpy(e->data, &mask, 4);
	memcpy(e->xor, &xor, 4);
}

static void
stmt_exprs(const struct snat_stmt *s, struct snat_expr *out, size_t *n)
{
	static const uint32_t zero;
	static const uint8_t reply = IP_CT_DIR_REPLY;
	uint32_t v = s->value, local = RTN_LOCAL_TYPE, mask;
	struct snat_expr *e;

	switch (s->kind) {
	case SNAT_IIF:
	case SNAT_IIF_NOT:
	case SNAT_OIF:
		ex(out, n, SX_META_LOAD, s->kind == SNAT_OIF ? NFT_META_OIF :
		    NFT_META_IIF);
		ex_cmp(out, n, s->kind == SNAT_IIF_NOT ? NFT_CMP_NEQ :
		    NFT_CMP_EQ, &v, 4);
		break;
	case SNAT_CT_STATE_NEW:
		ex(out, n, SX_CT_LOAD, NFT_CT_STATE);
		ex_bitwise(out, n, CT_STATE_NEW, 0);
		ex_cmp(out, n, NFT_CMP_NEQ, &zero, 4);
		break;
	case SNAT_FIB_DADDR_LOCAL:
		e = ex(out, n, SX_FIB, NFT_FIB_RESULT_ADDRTYPE);
		e->flags = NFTA_FIB_F_DADDR;
		ex_cmp(out, n, NFT_CMP_EQ, &local, 4);
		break;
	case SNAT_CT_REPLY:
		ex(out, n, SX_CT_LOAD, NFT_CT_DIRECTION);
		ex_cmp(out, n, NFT_CMP_EQ, &reply, 1);
		break;
	case SNAT_CT_MARK_HAS:
		ex(out, n, SX_CT_LOAD, NFT_CT_MARK);
		ex_bitwise(out, n, v, 0);
		ex_cmp(out, n, NFT_CMP_EQ, &v, 4);
		break;
	case SNAT_SADDR:
	case SNAT_DADDR:
		e = ex(out, n, SX_PAYLOAD, NFT_PAYLOAD_NETWORK_HEADER);
		e->offset = s->kind == SNAT_SADDR ? IPHDR_SADDR : IPHDR_DADDR;
		e->len = 4;
		if (s->prefix < 32)
			ex_bitwise(out, n, prefix_mask(s->prefix), 0);
		v &= prefix_mask(s->prefix);
		ex_cmp(out, n, NFT_CMP_EQ, &v, 4);
		break;
	case SNAT_CT_MARK_OR:
	case SNAT_META_MARK_OR:
		/* x | M, as nft writes it: (x & ~M) ^ M */
		mask = ~v;
		ex(out, n, s->kind == SNAT_CT_MARK_OR ? SX_CT_LOAD :
		    SX_META_LOAD, s->kind == SNAT_CT_MARK_OR ? NFT_CT_MARK :
		    NFT_META_MARK);
		ex_bitwise(out, n, mask, v);
		ex(out, n, s->kind == SNAT_CT_MARK_OR ? SX_CT_SET :
		    SX_META_SET, s->kind == SNAT_CT_MARK_OR ? NFT_CT_MARK :
		    NFT_META_MARK);
		break;
	case SNAT_COUNTER:
		ex(out, n, SX_COUNTER, 0);
		break;
	case SNAT_RETURN:
		e = ex(out, n, SX_IMM_VERDICT, 0);
		e->dreg = NFT_REG_VERDICT;
		e->verdict = NFT_RETURN;
		break;
	case SNAT_SNAT_TO:
		e = ex(out, n, SX_IMM_DATA, 0);
		e->len = 4;
		memcpy(e->data, &v, 4);
		e = ex(out, n, SX_NAT, NFT_NAT_SNAT);
		e->family = NFPROTO_IPV4;
		e->flags = s->fully_random ? NF_NAT_RANGE_PROTO_RANDOM_FULLY : 0;
		break;
	case SNAT_IIFNAME_PREFIX:
		/* A wildcard name is a compare of its leading bytes only,
		 * without the NUL, as nft writes "name*". */
		ex(out, n, SX_META_LOAD, NFT_META_IIFNAME);
		ex_cmp(out, n, NFT_CMP_EQ, s->name,
		    (uint32_t)strnlen(s->name, sizeof(s->name) - 1));
		break;
	case SNAT_SADDR6_NOT_LL: {
		static const uint8_t ll_mask[IP6_ADDR_LEN] = { LL6_MASK >> 8,
		    LL6_MASK & 0xff };
		static const uint8_t net[IP6_ADDR_LEN] = { LL6_NET >> 8,
		    LL6_NET & 0xff };

		/* As nft 1.0 writes it: the whole address, masked. */
		e = ex(out, n, SX_PAYLOAD, NFT_PAYLOAD_NETWORK_HEADER);
		e->offset = IP6HDR_SADDR;
		e->len = IP6_ADDR_LEN;
		e = ex(out, n, SX_BITWISE, 0);
		e->len = IP6_ADDR_LEN;
		memcpy(e->data, ll_mask, IP6_ADDR_LEN);
		ex_cmp(out, n, NFT_CMP_NEQ, net, IP6_ADDR_LEN);
		break;
	}
	case SNAT_FIB_SADDR_IIF_MISSING:
		/* Is there a route back to the source through the arrival
		 * link?  A boolean (present) in the register's 4 bytes,
		 * compared with false. */
		e = ex(out, n, SX_FIB, NFT_FIB_RESULT_OIF);
		e->flags = NFTA_FIB_F_SADDR | NFTA_FIB_F_IIF |
		    NFTA_FIB_F_PRESENT;
		ex_cmp(out, n, NFT_CMP_EQ, &zero, 4);
		break;
	case SNAT_DROP:
		e = ex(out, n, SX_IMM_VERDICT, 0);
		e->dreg = NFT_REG_VERDICT;
		e->verdict = NF_DROP;
		break;
	}
}

size_t
snat_rule_exprs(const struct snat_rule *r, struct snat_expr *out)
{
	size_t n = 0;
	uint32_t i;

	for (i = 0; i < r->nstmts && i < SNAT_MAX_STMTS; i++)
		stmt_exprs(&r->stmts[i], out, &n);
	return n;
}

/* ---- expressions back to statements ---- */

struct cursor {
	const struct snat_expr	*e;
	size_t			 n, i;
};

static const struct snat_expr *
peek(const struct cursor *c, size_t ahead, uint8_t kind)
{
	const struct snat_expr *e;

	if (c->i + ahead >= c->n)
		return NULL;
	e = &c->e[c->i + ahead];
	return e->kind == kind ? e : NULL;
}

static uint32_t
u32_of(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* A register-4-byte compare with this op: its value, or false. */
static bool
cmp4(const struct snat_expr *e, uint32_t op, uint32_t *v)
{
	if (e == NULL || e->key != op || e->len != 4 || e->sreg != REG)
		return false;
	*v = u32_of(e->data);
	return true;
}

static bool
bitwise4(const struct snat_expr *e, uint32_t *mask, uint32_t *xor)
{
	if (e == NULL || e->len != 4 || e->sreg != REG || e->dreg != REG)
		return false;
	*mask = u32_of(e->data);
	*xor = u32_of(e->xor);
	return true;
}

static int
stmt_push(struct snat_rule *r, uint8_t kind, uint32_t value, uint8_t prefix)
{
	if (r->nstmts == SNAT_MAX_STMTS)
		return -1;
	add_stmt(r, kind, value, prefix);
	return 0;
}

/* The number of leading one bits if the network-order mask is a prefix
 * of len bytes, else -1. */
static int
mask_prefix(const uint8_t *mask, uint32_t len)
{
	int p = 0;
	uint32_t i;
	int b;

	for (i = 0; i < len; i++)
		for (b = 7; b >= 0; b--) {
			if (mask[i] & (1u << b)) {
				if (p != (int)(i * 8 + (uint32_t)(7 - b)))
					return -1;
				p++;
			}
		}
	return p;
}

/* payload bitwise cmp-neq: ip6 saddr != fe80::/10, exactly. */
static int
parse_saddr6_ll(struct cursor *c, struct snat_rule *r)
{
	static const uint8_t zero[IP6_ADDR_LEN];
	const struct snat_expr *b = peek(c, 1, SX_BITWISE),
	    *m = peek(c, 2, SX_CMP);

	if (b == NULL || m == NULL || b->len != IP6_ADDR_LEN ||
	    b->sreg != REG || b->dreg != REG ||
	    b->data[0] != (LL6_MASK >> 8) ||
	    b->data[1] != (LL6_MASK & 0xff) ||
	    memcmp(b->data + 2, zero, IP6_ADDR_LEN - 2) != 0 ||
	    memcmp(b->xor, zero, IP6_ADDR_LEN) != 0 ||
	    m->key != NFT_CMP_NEQ || m->len != IP6_ADDR_LEN ||
	    m->sreg != REG || m->data[0] != (LL6_NET >> 8) ||
	    m->data[1] != (LL6_NET & 0xff) ||
	    memcmp(m->data + 2, zero, IP6_ADDR_LEN - 2) != 0)
		return -1;
	c->i += 3;
	return stmt_push(r, SNAT_SADDR6_NOT_LL, 0, 0);
}

/* payload [bitwise] cmp: ip saddr/daddr with a prefix, at any load
 * length nft may use (a /16 loads 2 bytes). */
static int
parse_addr(struct cursor *c, struct snat_rule *r)
{
	const struct snat_expr *p = peek(c, 0, SX_PAYLOAD), *b, *m;
	uint8_t mask[4] = { 0xff, 0xff, 0xff, 0xff }, val[4] = { 0 };
	uint32_t addr, i;
	int prefix;

	if (p->key == NFT_PAYLOAD_NETWORK_HEADER && p->dreg == REG &&
	    p->offset == IP6HDR_SADDR && p->len == IP6_ADDR_LEN)
		return parse_saddr6_ll(c, r);
	if (p->key != NFT_PAYLOAD_NETWORK_HEADER || p->dreg != REG ||
	    p->len < 1 || p->len > 4 ||
	    (p->offset != IPHDR_SADDR && p->offset != IPHDR_DADDR))
		return -1;
	b = peek(c, 1, SX_BITWISE);
	m = peek(c, b ? 2 : 1, SX_CMP);
	if (m == NULL || m->key != NFT_CMP_EQ || m->len != p->len ||
	    m->sreg != REG)
		return -1;
	if (b != NULL) {
		if (b->len != p->len || b->sreg != REG || b->dreg != REG)
			return -1;
		for (i = 0; i < p->len; i++)
			if (b->xor[i] != 0)
				return -1;
		memcpy(mask, b->data, p->len);
	}
	if ((prefix = mask_prefix(mask, p->len)) < 1)
		return -1;
	memcpy(val, m->data, p->len);
	for (i = 0; i < p->len; i++)
		if (val[i] & ~mask[i])
			return -1;
	memcpy(&addr, val, 4);
	c->i += b ? 3 : 2;
	return stmt_push(r, p->offset == IPHDR_SADDR ? SNAT_SADDR : SNAT_DADDR,
	    addr, (uint8_t)prefix);
}

/* meta load: iif/oif compare, or mark | M set */
static int
parse_meta(struct cursor *c, struct snat_rule *r)
{
	const struct snat_expr *l = peek(c, 0, SX_META_LOAD), *s;
	uint32_t v, mask, xor;

	if (l->dreg != REG)
		return -1;
	if (l->key == NFT_META_IIFNAME) {
		const struct snat_expr *m = peek(c, 1, SX_CMP);
		uint32_t i;
		int rc;

		/* A prefix of a-z 0-9 (no NUL: a wildcard), as netd
		 * writes it. */
		if (m == NULL || m->key != NFT_CMP_EQ || m->sreg != REG ||
		    m->len < 1 || m->len > sizeof(r->stmts[0].name) - 1)
			return -1;
		for (i = 0; i < m->len; i++)
			if (!((m->data[i] >= 'a' && m->data[i] <= 'z') ||
			    (m->data[i] >= '0' && m->data[i] <= '9')))
				return -1;
		c->i += 2;
		if ((rc = stmt_push(r, SNAT_IIFNAME_PREFIX, 0, 0)) == 0)
			memcpy(r->stmts[r->nstmts - 1].name, m->data, m->len);
		return rc;
	}
	if (l->key == NFT_META_IIF || l->key == NFT_META_OIF) {
		const struct snat_expr *m = peek(c, 1, SX_CMP);
		bool eq = cmp4(m, NFT_CMP_EQ, &v);

		if (!eq && (l->key != NFT_META_IIF ||
		    !cmp4(m, NFT_CMP_NEQ, &v)))
			return -1;
		c->i += 2;
		return stmt_push(r, l->key == NFT_META_OIF ? SNAT_OIF :
		    eq ? SNAT_IIF : SNAT_IIF_NOT, v, 0);
	}
	s = peek(c, 2, SX_META_SET);
	if (l->key != NFT_META_MARK || !bitwise4(peek(c, 1, SX_BITWISE),
	    &mask, &xor) || s == NULL || s->key != NFT_META_MARK ||
	    s->sreg != REG || xor == 0 || mask != ~xor)
		return -1;
	c->i += 3;
	return stmt_push(r, SNAT_META_MARK_OR, xor, 0);
}

/* ct load: state new, direction reply, mark & M == M, mark | M set */
static int
parse_ct(struct cursor *c, struct snat_rule *r)
{
	const struct snat_expr *l = peek(c, 0, SX_CT_LOAD), *m, *s;
	uint32_t v, mask, xor;

	if (l->dreg != REG)
		return -1;
	if (l->key == NFT_CT_DIRECTION) {
		m = peek(c, 1, SX_CMP);
		if (m == NULL || m->key != NFT_CMP_EQ || m->len != 1 ||
		    m->sreg != REG || m->data[0] != IP_CT_DIR_REPLY)
			return -1;
		c->i += 2;
		return stmt_push(r, SNAT_CT_REPLY, 0, 0);
	}
	if (!bitwise4(peek(c, 1, SX_BITWISE), &mask, &xor))
		return -1;
	if (l->key == NFT_CT_STATE && mask == CT_STATE_NEW && xor == 0 &&
	    cmp4(peek(c, 2, SX_CMP), NFT_CMP_NEQ, &v) && v == 0) {
		c->i += 3;
		return stmt_push(r, SNAT_CT_STATE_NEW, 0, 0);
	}
	if (l->key != NFT_CT_MARK)
		return -1;
	if (xor == 0 && mask != 0 && cmp4(peek(c, 2, SX_CMP), NFT_CMP_EQ,
	    &v) && v == mask) {
		c->i += 3;
		return stmt_push(r, SNAT_CT_MARK_HAS, mask, 0);
	}
	s = peek(c, 2, SX_CT_SET);
	if (s == NULL || s->key != NFT_CT_MARK || s->sreg != REG ||
	    xor == 0 || mask != ~xor)
		return -1;
	c->i += 3;
	return stmt_push(r, SNAT_CT_MARK_OR, xor, 0);
}

static int
parse_one(struct cursor *c, struct snat_rule *r)
{
	const struct snat_expr *e = &c->e[c->i], *nat;
	uint32_t v;
	int rc;

	switch (e->kind) {
	case SX_META_LOAD:
		return parse_meta(c, r);
	case SX_CT_LOAD:
		return parse_ct(c, r);
	case SX_PAYLOAD:
		return parse_addr(c, r);
	case SX_FIB:
		if (e->key == NFT_FIB_RESULT_OIF && e->dreg == REG &&
		    e->flags == (NFTA_FIB_F_SADDR | NFTA_FIB_F_IIF |
		    NFTA_FIB_F_PRESENT)) {
			if (!cmp4(peek(c, 1, SX_CMP), NFT_CMP_EQ, &v) || v != 0)
				return -1;
			c->i += 2;
			return stmt_push(r, SNAT_FIB_SADDR_IIF_MISSING, 0, 0);
		}
		if (e->key != NFT_FIB_RESULT_ADDRTYPE || e->dreg != REG ||
		    e->flags != NFTA_FIB_F_DADDR ||
		    !cmp4(peek(c, 1, SX_CMP), NFT_CMP_EQ, &v) ||
		    v != RTN_LOCAL_TYPE)
			return -1;
		c->i += 2;
		return stmt_push(r, SNAT_FIB_DADDR_LOCAL, 0, 0);
	case SX_COUNTER:
		if ((rc = stmt_push(r, SNAT_COUNTER, 0, 0)) == 0) {
			r->stmts[r->nstmts - 1].packets = e->packets;
			r->stmts[r->nstmts - 1].bytes = e->bytes;
		}
		c->i++;
		return rc;
	case SX_IMM_VERDICT:
		if (e->verdict != NFT_RETURN && e->verdict != NF_DROP)
			return -1;
		c->i++;
		return stmt_push(r, e->verdict == NF_DROP ? SNAT_DROP :
		    SNAT_RETURN, 0, 0);
	case SX_IMM_DATA:
		nat = peek(c, 1, SX_NAT);
		if (e->len != 4 || e->dreg != REG || nat == NULL ||
		    nat->key != NFT_NAT_SNAT || nat->family != NFPROTO_IPV4 ||
		    nat->sreg != REG || (nat->flags &
		    ~(NF_NAT_RANGE_PROTO_RANDOM_FULLY | NAT_FLAGS_KERNEL)) != 0)
			return -1;
		c->i += 2;
		if ((rc = stmt_push(r, SNAT_SNAT_TO, u32_of(e->data), 0)) == 0)
			r->stmts[r->nstmts - 1].fully_random =
			    (nat->flags & NF_NAT_RANGE_PROTO_RANDOM_FULLY) != 0;
		return rc;
	default:
		return -1;
	}
}

static const char *
expr_name(uint8_t kind)
{
	static const char *const names[] = {
		[SX_META_LOAD] = "meta load", [SX_META_SET] = "meta set",
		[SX_CT_LOAD] = "ct load", [SX_CT_SET] = "ct set",
		[SX_PAYLOAD] = "payload", [SX_FIB] = "fib",
		[SX_BITWISE] = "bitwise", [SX_CMP] = "cmp",
		[SX_IMM_DATA] = "immediate", [SX_IMM_VERDICT] = "verdict",
		[SX_NAT] = "nat", [SX_COUNTER] = "counter",
	};

	return kind < sizeof(names) / sizeof(names[0]) && names[kind] ?
	    names[kind] : "?";
}

int
snat_rule_parse(const struct snat_expr *e, size_t n, struct snat_rule *out,
    char *why, size_t whylen)
{
	struct cursor c = { e, n, 0 };

	memset(out, 0, sizeof(*out));
	if (n > SNAT_MAX_EXPRS) {
		snprintf(why, whylen, "a rule of %zu expressions", n);
		return -1;
	}
	while (c.i < c.n) {
		size_t at = c.i;

		if (parse_one(&c, out) == -1) {
			snprintf(why, whylen, "a rule netd does not write (at "
			    "expression %zu, %s)", at + 1,
			    expr_name(e[at].kind));
			return -1;
		}
	}
	return 0;
}

/* ---- trust ---- */

const char *
snat_check_request(const struct enid_config *cfg, const struct ip_prefix *vpc,
    uint32_t nvpc, const struct ip_addr *target, const uint32_t *addrs,
    size_t naddrs, char *detail, size_t detaillen)
{
	char a[IP_ADDR_STR_LEN];
	uint32_t to;
	size_t j;

	detail[0] = '\0';
	ip_addr_format(target, a);
	if (ip_addr_to_in(target, &to) == -1) {
		snprintf(detail, detaillen, "to %s", a);
		return "the translation target is not an IPv4 address";
	}
	if (!cfg->snat.enabled && to != 0) {
		snprintf(detail, detaillen, "to %s", a);
		return "SNAT is off in netd's configuration (snat.enabled); "
		    "a translation target was sent";
	}
	if (cfg->snat.enabled && to == 0)
		return "SNAT is on in netd's configuration (snat.enabled); "
		    "no translation target was sent";
	if (to != 0) {
		snprintf(detail, detaillen, "to %s", a);
		if (ip_addr_is_loopback(target) ||
		    ip_addr_is_multicast(target) ||
		    ip_addr_is_reserved(target))
			return "the translation target is not a unicast "
			    "address";
		for (j = 0; j < naddrs; j++)
			if (addrs[j] == to)
				break;
		if (j == naddrs)
			return "the translation target is not an address of "
			    "the node's primary link";
	}
	if (config_check_snat_vpc(cfg, vpc, nvpc < MSG_MAX_CIDRS ? nvpc :
	    MSG_MAX_CIDRS, detail, detaillen) == -1)
		return "netd's snat.exclude overlaps the VPC's CIDRs";
	return NULL;
}

/* ---- the answers to a batch ---- */

int
snat_batch_answer(struct snat_batch *b, const void *msg, size_t len)
{
	const struct nlmsghdr *h = msg;
	const struct nlmsgerr *e;
	uint32_t i;

	if (len < sizeof(*h) || h->nlmsg_len > len ||
	    h->nlmsg_type != NLMSG_ERROR ||
	    h->nlmsg_seq - (b->first - 1) > b->nmsgs + 1 ||
	    (h->nlmsg_pid != 0 && h->nlmsg_pid != b->portid))
		return 0;
	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
		return -1;
	e = NLMSG_DATA(h);
	i = h->nlmsg_seq - b->first;	/* begin: UINT32_MAX, end: nmsgs */
	if (i < b->nmsgs)
		b->acks++;
	if (e->error != 0 && b->error == 0) {
		b->error = e->error < 0 ? e->error : -EPROTO;
		b->error_seq = h->nlmsg_seq;
	}
	return 1;
}
