/*
 * libFuzzer target for the internal message decoder (common/msg.c): the
 * datagrams of one channel, sent raw over a real SOCK_SEQPACKET
 * socketpair and taken by msg_recv(), as enid, enid-netd and enid-cloudd
 * take them, header, length, direction, flags and per-type checker alike.
 *
 * Input: one byte of set-up, then datagrams.
 *   set-up bits 0-1  the receiving end: netd from the broker, cloudd from
 *                    the broker, the broker from netd, from cloudd;
 *          bit 2     MSG_PERMIT_POLICY granted from the start;
 *          bit 3     the handshake already done;
 *          bit 4     typed: each datagram is a type byte (taken modulo
 *                    the types allowed in this direction), a 4-byte id and
 *                    the type's payload (zeroes past the input's end),
 *                    with a header msg_send() would write; otherwise raw:
 *                    a 2-byte little-endian length, then that many bytes.
 * At most MAX_DATAGRAMS per input.  A rejected datagram ends the input,
 * as it ends the channel between internal peers.
 *
 * Invariants, beyond "does not crash":
 * - msg_recv() says what the pure msg_validate() says on the channel's
 *   state before, reading no byte past the datagram (an exact-size heap
 *   copy); a datagram over the receive buffer is refused as such;
 * - a refused datagram leaves the channel's state as it was and names
 *   the cause;
 * - an accepted one records the handshake and once-only types and
 *   nothing else; sent again by msg_send() from the other end it gives
 *   the same bytes; validated again it passes; its type's checker passes
 *   on an exact-size copy of the payload;
 * - what every receiver then relies on holds, checked here apart from the
 *   checkers: each string field can be strlen()'d within its own bytes
 *   (ASan sees a missing NUL), counts fit their arrays, enums are known,
 *   prefixes are at most 32, the stats'
 *   counters are consistent; every address and CIDR is canonical, of
 *   its field's family (the IPv6 ones cloudd fills: no special address;
 *   absent: all zero), and formats and parses back to its very bytes.
 *
 *   make fuzz-msg [FUZZ_SECONDS=N]
 */
#include <sys/socket.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addr.h"
#include "msg.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)	do { if (!(x)) __builtin_trap(); } while (0)
#define MAX_DATAGRAMS	16

/* The payload struct of every type, from the one list, to check the
 * table's sizes against. */
#define SIZE_ENTRY(name, type, dirs, flags, ans)	[MSG_##name] = sizeof(type),
static const size_t type_size[MSG_TYPE_COUNT] = {
	MSG_TYPES(SIZE_ENTRY)
};
#undef SIZE_ENTRY

static const struct {
	enum msg_peer	self, peer;
} ends[4] = {
	{ PEER_NETD, PEER_BROKER },
	{ PEER_CLOUDD, PEER_BROKER },
	{ PEER_BROKER, PEER_NETD },
	{ PEER_BROKER, PEER_CLOUDD },
};

static int sv[2] = { -1, -1 };	/* [0] the sender's end, [1] ours */

/* A receiver's strlen(): on a copy of just the field, so that a missing
 * NUL is a heap overflow ASan reports. */
static size_t
field_len(const char *field, size_t size)
{
	char *copy;
	size_t n;

	CHECK((copy = malloc(size)) != NULL);
	memcpy(copy, field, size);
	n = strlen(copy);
	free(copy);
	CHECK(n < size);
	return n;
}

#define FIELD_LEN(f)	field_len((f), sizeof(f))

/* An address every receiver may take: canonical, IPv4 (all enid takes
 * for now), and the very bytes its text parses back to. */
static void
addr_usable(const struct ip_addr *a)
{
	char text[IP_ADDR_STR_LEN];
	struct ip_addr back;

	CHECK(ip_addr_valid(a) && a->family == AF_INET);
	ip_addr_format(a, text);
	CHECK(ip_addr_parse(text, &back, NULL) == 0);
	CHECK(memcmp(&back, a, sizeof(back)) == 0);
}

/* An IPv6 field cloudd fills: canonical, IPv6, no special address,
 * and the very bytes its text parses back to. */
static void
addr6_usable(const struct ip_addr *a)
{
	char text[IP_ADDR_STR_LEN];
	struct ip_addr back;

	CHECK(ip_addr_valid(a) && a->family == AF_INET6);
	CHECK(!ip_addr_is_special(a));
	ip_addr_format(a, text);
	CHECK(ip_addr_parse(text, &back, NULL) == 0);
	CHECK(memcmp(&back, a, sizeof(back)) == 0);
}

/* n addresses of one family (a request's or an answer's) */
static void
addrs_of_usable(int family, uint32_t n, const struct ip_addr *a)
{
	uint32_t i;

	CHECK(family == AF_INET || family == AF_INET6);
	for (i = 0; i < n; i++) {
		CHECK(a[i].family == family);
		if (family == AF_INET)
			addr_usable(&a[i]);
		else
			addr6_usable(&a[i]);
	}
}

static bool
all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n-- > 0)
		if (*b++ != 0)
			return false;
	return true;
}

static void
addrs_usable(uint32_t n, const struct ip_addr *a)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		addr_usable(&a[i]);
}

static void
cidr_usable(const struct ip_prefix *c)
{
	char text[IP_PREFIX_STR_LEN];
	struct ip_prefix back;

	CHECK(ip_prefix_valid(c) && c->addr.family == AF_INET);
	CHECK(c->len <= 32);
	ip_prefix_format(c, text);
	CHECK(ip_prefix_parse(text, &back, NULL) == 0);
	CHECK(memcmp(&back, c, sizeof(back)) == 0);
}

/* netd's fields of either family (version 8): canonical, and their
 * text parses back to the very bytes. */
static void
addr46_usable(const struct ip_addr *a)
{
	char text[IP_ADDR_STR_LEN];
	struct ip_addr back;

	CHECK(ip_addr_valid(a));
	ip_addr_format(a, text);
	CHECK(ip_addr_parse(text, &back, NULL) == 0);
	CHECK(memcmp(&back, a, sizeof(back)) == 0);
}

static void
cidr46_usable(const struct ip_prefix *c)
{
	char text[IP_PREFIX_STR_LEN];
	struct ip_prefix back;

	CHECK(ip_prefix_valid(c));
	CHECK(c->len <= ip_family_bits(c->addr.family));
	ip_prefix_format(c, text);
	CHECK(ip_prefix_parse(text, &back, NULL) == 0);
	CHECK(memcmp(&back, c, sizeof(back)) == 0);
}

static void
status_usable(const struct msg_cloud_status *st)
{
	CHECK(strcmp(cloud_outcome_name(st->outcome), "unknown") != 0);
	FIELD_LEN(st->code);
	FIELD_LEN(st->message);
	FIELD_LEN(st->request_id);
}

static void
tags_usable(uint32_t n, const struct msg_tag *t)
{
	uint32_t i;

	CHECK(n <= MSG_MAX_TAGS);
	for (i = 0; i < n; i++) {
		FIELD_LEN(t[i].key);
		FIELD_LEN(t[i].value);
	}
}

static void
sgs_usable(uint32_t n, const char (*sgs)[MSG_ID_LEN])
{
	uint32_t i;

	CHECK(n <= MSG_MAX_SGS);
	for (i = 0; i < n; i++)
		field_len(sgs[i], MSG_ID_LEN);
}

static void
stats_usable(const struct msg_cloud_stats_answer *m)
{
	uint64_t ended;
	uint32_t i, j;
	size_t n;

	CHECK(m->nactions <= MSG_STATS_ACTIONS);
	for (i = 0; i < MSG_STATS_ACTIONS; i++) {
		const struct msg_cloud_action_stats *a = &m->actions[i];

		if (i >= m->nactions) {
			static const struct msg_cloud_action_stats zero;

			CHECK(memcmp(a, &zero, sizeof(zero)) == 0);
			continue;
		}
		n = FIELD_LEN(a->action);
		CHECK(n > 0);
		for (j = 0; j < n; j++)
			CHECK((a->action[j] >= 'A' && a->action[j] <= 'Z') ||
			    (a->action[j] >= 'a' && a->action[j] <= 'z') ||
			    (a->action[j] >= '0' && a->action[j] <= '9'));
		/* The metrics add these up as doubles: no wrap, exact. */
		CHECK(a->calls <= MSG_STATS_COUNT_MAX);
		ended = 0;
		for (j = 0; j <= MSG_HIST_NBOUNDS; j++) {
			CHECK(a->latency.counts[j] <= a->calls);
			ended += a->latency.counts[j];
		}
		CHECK(ended <= a->calls);
		CHECK(a->errors <= ended);
		CHECK(a->throttles <= a->errors && a->retries <= a->errors);
	}
}

/* What the receiving code takes for granted once msg_recv() said OK. */
static void
payload_usable(unsigned int type, const void *p)
{
	uint32_t i;

	switch (type) {
	case MSG_LOG_LEVEL: {
		const struct msg_loglevel *m = p;

		CHECK(m->level >= 0 && m->level <= 3);
		break;
	}
	case MSG_NETD_POLICY: {
		const struct msg_netd_policy *m = p;
		bool v6 = false;

		/* IPv4 first, then IPv6 */
		CHECK(m->ncidrs <= MSG_MAX_VPC_CIDRS);
		for (i = 0; i < m->ncidrs; i++) {
			cidr46_usable(&m->cidrs[i]);
			CHECK(!v6 || m->cidrs[i].addr.family == AF_INET6);
			v6 = m->cidrs[i].addr.family == AF_INET6;
		}
		break;
	}
	case MSG_NETD_SETUP_ENI:
	case MSG_NETD_TEARDOWN_ENI: {
		const struct msg_netd_setup_eni *m = p;

		/* one of the two at least; absent is all zero */
		CHECK(m->addr.addr.family != 0 || m->addr6.family != 0);
		if (m->addr.addr.family != 0)
			cidr_usable(&m->addr);
		else
			CHECK(all_zero(&m->addr, sizeof(m->addr)));
		if (m->gateway.family != 0)
			addr_usable(&m->gateway);
		else
			CHECK(all_zero(&m->gateway, sizeof(m->gateway)));
		if (m->addr6.family != 0)
			addr6_usable(&m->addr6);
		else
			CHECK(all_zero(&m->addr6, sizeof(m->addr6)));
		break;
	}
	case MSG_NETD_ADD_POD:
	case MSG_NETD_DEL_POD: {
		const struct msg_netd_pod_rule *m = p;

		addr46_usable(&m->addr);
		if (m->addr6.family != 0) {
			CHECK(m->addr.family == AF_INET);
			addr6_usable(&m->addr6);
		} else
			CHECK(all_zero(&m->addr6, sizeof(m->addr6)));
		break;
	}
	case MSG_NETD_ADD_POD_ROUTE:
		addr46_usable(&((const struct msg_netd_pod_route *)p)->addr);
		break;
	case MSG_NETD_ROUTE:
		addr46_usable(&((const struct msg_netd_route *)p)->addr);
		break;
	case MSG_NETD_SNAT:
		addr_usable(&((const struct msg_netd_snat *)p)->to);
		break;
	case MSG_NETD_SNAT_STATE: {
		const struct msg_netd_snat_state *m = p;

		addr_usable(&m->to);
		CHECK(m->nuntranslated <= MSG_MAX_SNAT_CIDRS);
		for (i = 0; i < m->nuntranslated; i++)
			cidr_usable(&m->untranslated[i]);
		break;
	}
	case MSG_NETD_LINK:
		FIELD_LEN(((const struct msg_netd_link *)p)->name);
		break;
	case MSG_NETD_RULE: {
		const struct msg_netd_rule *m = p;

		/* one family, never mixed */
		cidr46_usable(&m->src);
		cidr46_usable(&m->dst);
		CHECK(m->src.addr.family == m->dst.addr.family);
		break;
	}
	case MSG_NETD_RESULT: {
		const struct msg_result *m = p;

		CHECK(strcmp(msg_status_name(m->status), "unknown") != 0);
		FIELD_LEN(m->message);
		break;
	}
	case MSG_CLOUD_INSTANCE: {
		const struct msg_cloud_instance *m = p;

		status_usable(&m->st);
		FIELD_LEN(m->instance_id);
		FIELD_LEN(m->instance_type);
		FIELD_LEN(m->az);
		FIELD_LEN(m->region);
		FIELD_LEN(m->primary_eni);
		FIELD_LEN(m->subnet_id);
		FIELD_LEN(m->vpc_id);
		addr_usable(&m->primary_ip);
		CHECK(m->ncidrs <= MSG_MAX_VPC_CIDRS);
		/* IPv4 first, then IPv6 */
		for (i = 0; i < m->ncidrs; i++)
			if (m->cidrs[i].addr.family == AF_INET) {
				CHECK(i == 0 || m->cidrs[i - 1].addr.family ==
				    AF_INET);
				cidr_usable(&m->cidrs[i]);
			} else {
				CHECK(ip_prefix_valid(&m->cidrs[i]) &&
				    m->cidrs[i].addr.family == AF_INET6);
			}
		if (!all_zero(&m->primary_ip6, sizeof(m->primary_ip6)))
			addr6_usable(&m->primary_ip6);
		if (!all_zero(&m->subnet_cidr6, sizeof(m->subnet_cidr6))) {
			addr6_usable(&m->subnet_cidr6.addr);
			CHECK(m->subnet_cidr6.len == 64);
		}
		CHECK(m->ipv6_supported <= 1);
		sgs_usable(m->nsgs, m->sgs);
		break;
	}
	case MSG_CLOUD_DESCRIBE_SUBNETS: {
		const struct msg_cloud_describe_subnets *m = p;

		CHECK(m->nids <= MSG_MAX_SUBNETS);
		for (i = 0; i < m->nids; i++)
			FIELD_LEN(m->ids[i]);
		break;
	}
	case MSG_CLOUD_SUBNET: {
		const struct msg_cloud_subnet *m = p;

		FIELD_LEN(m->subnet_id);
		FIELD_LEN(m->az);
		/* none only in an IPv6-only subnet; never 0/0 then */
		CHECK(m->ipv6_native <= 1);
		if (m->ipv6_native)
			CHECK(all_zero(&m->cidr, sizeof(m->cidr)));
		else
			cidr_usable(&m->cidr);
		CHECK(m->ipv6_state < IPV6_ST_MAX);
		if (m->ipv6_state == IPV6_ST_ASSOCIATED) {
			addr6_usable(&m->cidr6.addr);
			CHECK(m->cidr6.len == 64);
		} else {
			CHECK(all_zero(&m->cidr6, sizeof(m->cidr6)));
		}
		break;
	}
	case MSG_CLOUD_CREATE_ENI: {
		const struct msg_cloud_create_eni *m = p;

		FIELD_LEN(m->subnet_id);
		FIELD_LEN(m->client_token);
		FIELD_LEN(m->description);
		CHECK(m->nsecondary <= MSG_MAX_ENI_ADDRS);
		sgs_usable(m->nsgs, m->sgs);
		tags_usable(m->ntags, m->tags);
		break;
	}
	case MSG_CLOUD_ENI: {
		const struct msg_cloud_eni *m = p;

		status_usable(&m->st);
		FIELD_LEN(m->eni_id);
		FIELD_LEN(m->subnet_id);
		FIELD_LEN(m->instance_id);
		FIELD_LEN(m->attachment_id);
		CHECK(m->status < ENI_ST_MAX && m->attach_status < ENI_ST_MAX);
		CHECK(m->naddrs <= MSG_MAX_ENI_ADDRS);
		addr_usable(&m->primary_ip);
		addrs_usable(m->naddrs, m->addrs);
		CHECK(m->nprefixes <= MSG_MAX_ENI_PREFIXES);
		addrs_usable(m->nprefixes, m->prefixes);
		CHECK(m->ipv6_native <= 1);
		CHECK(m->naddrs6 <= MSG_MAX_ENI_ADDRS6);
		addrs_of_usable(AF_INET6, m->naddrs6, m->addrs6);
		CHECK(m->nprefixes6 <= MSG_MAX_ENI_PREFIXES6);
		addrs_of_usable(AF_INET6, m->nprefixes6, m->prefixes6);
		tags_usable(m->ntags, m->tags);
		break;
	}
	case MSG_CLOUD_ATTACH:
		FIELD_LEN(((const struct msg_cloud_attach *)p)->eni_id);
		break;
	case MSG_CLOUD_ATTACHED: {
		const struct msg_cloud_attached *m = p;

		status_usable(&m->st);
		FIELD_LEN(m->attachment_id);
		break;
	}
	case MSG_CLOUD_SET_DOT: {
		const struct msg_cloud_set_dot *m = p;

		FIELD_LEN(m->eni_id);
		FIELD_LEN(m->attachment_id);
		CHECK(m->value == 0 || m->value == 1);
		break;
	}
	case MSG_CLOUD_ASSIGN_IPS:
	case MSG_CLOUD_UNASSIGN_IPS: {
		const struct msg_cloud_ips *m = p;

		FIELD_LEN(m->eni_id);
		CHECK(m->naddrs <= MSG_MAX_ENI_ADDRS);
		CHECK(m->count <= MSG_MAX_ENI_ADDRS);
		addrs_of_usable((int)m->family, m->naddrs, m->addrs);
		break;
	}
	case MSG_CLOUD_ASSIGNED: {
		const struct msg_cloud_assigned *m = p;

		status_usable(&m->st);
		CHECK(m->naddrs <= MSG_MAX_ENI_ADDRS);
		addrs_of_usable(m->naddrs ? m->addrs[0].family : AF_INET,
		    m->naddrs, m->addrs);
		break;
	}
	case MSG_CLOUD_DETACH: {
		const struct msg_cloud_detach *m = p;

		FIELD_LEN(m->eni_id);
		FIELD_LEN(m->attachment_id);
		break;
	}
	case MSG_CLOUD_DELETE:
		FIELD_LEN(((const struct msg_cloud_delete *)p)->eni_id);
		break;
	case MSG_CLOUD_DESCRIBE_ENIS: {
		const struct msg_cloud_describe_enis *m = p;

		CHECK(m->filter < ENIS_FILTER_MAX);
		CHECK(m->status < ENI_ST_MAX);
		FIELD_LEN(m->instance_id);
		tags_usable(m->ntags, m->tags);
		break;
	}
	case MSG_CLOUD_CHECK_INSTANCES: {
		const struct msg_cloud_check_instances *m = p;

		CHECK(m->nids <= MSG_MAX_INSTANCE_IDS);
		for (i = 0; i < m->nids; i++)
			CHECK(FIELD_LEN(m->ids[i]) > 0);
		break;
	}
	case MSG_CLOUD_INSTANCES: {
		const struct msg_cloud_instances *m = p;

		status_usable(&m->st);
		CHECK(m->nids <= MSG_MAX_INSTANCE_IDS);
		for (i = 0; i < MSG_MAX_INSTANCE_IDS; i++)
			CHECK(m->exists[i] == 0 ||
			    (m->exists[i] == 1 && i < m->nids));
		break;
	}
	case MSG_CLOUD_DONE:
		status_usable(&((const struct msg_cloud_done *)p)->st);
		break;
	case MSG_CLOUD_STATS_ANSWER:
		stats_usable(p);
		break;
	default:
		/* No field with a meaning to check: ids, numbers, MACs. */
		break;
	}
}

/* Sent again by msg_send() from the other end: the very same bytes. */
static void
reencodes(const struct msg_chan *rx, const unsigned char *dgram, size_t n)
{
	static unsigned char back[sizeof(struct msg) + 1];
	struct msg_chan tx;
	struct msg_hdr hdr;
	ssize_t got;

	memcpy(&hdr, dgram, sizeof(hdr));
	msg_chan_init(&tx, sv[0], rx->peer, rx->self, "fuzz");
	CHECK(msg_send(&tx, hdr.type, hdr.id, dgram + sizeof(hdr),
	    n - sizeof(hdr)) == 0);
	got = recv(sv[1], back, sizeof(back), MSG_DONTWAIT | MSG_TRUNC);
	CHECK(got >= 0 && (size_t)got == n);
	CHECK(memcmp(back, dgram, n) == 0);
}

static bool
same_state(const struct msg_chan *a, const struct msg_chan *b)
{
	return a->fd == b->fd && a->self == b->self && a->peer == b->peer &&
	    a->peer_name == b->peer_name && a->greeted == b->greeted &&
	    a->permits == b->permits &&
	    memcmp(a->seen_once, b->seen_once, sizeof(a->seen_once)) == 0;
}

/* One datagram on chan: true if accepted (and the channel goes on). */
static bool
one_datagram(struct msg_chan *chan, const unsigned char *dgram, size_t n)
{
	static struct msg m;
	const struct msg_type_info *ti;
	struct msg_chan before = *chan, expect;
	enum msg_recv_result rr;
	const char *pure = NULL, *why;
	unsigned char *copy = NULL, *payload;

	if (n <= sizeof(struct msg)) {
		CHECK((copy = malloc(n ? n : 1)) != NULL);
		memcpy(copy, dgram, n);
		pure = msg_validate(&before, copy, n);
		CHECK(same_state(&before, chan));
	}
	CHECK(send(sv[0], dgram, n, MSG_DONTWAIT) == (ssize_t)n);
	memset(&m, 0xa5, sizeof(m));
	rr = msg_recv(chan, &m, &why);

	if (n == 0) {
		/* An empty datagram reads as the peer's end of file. */
		CHECK(rr == MSG_RECV_EOF && same_state(&before, chan));
		free(copy);
		return false;
	}
	if (n > sizeof(struct msg)) {
		CHECK(rr == MSG_RECV_BAD && why != NULL &&
		    strcmp(why, "datagram larger than any message") == 0);
		CHECK(same_state(&before, chan));
		return false;
	}
	CHECK(rr == MSG_RECV_OK || rr == MSG_RECV_BAD);
	CHECK(why == pure);
	if (rr == MSG_RECV_BAD) {
		CHECK(why != NULL && why[0] != '\0');
		CHECK(same_state(&before, chan));
		free(copy);
		return false;
	}

	/* Accepted: the header is one msg_send() writes, for a known type
	 * allowed this way, with its exact size. */
	CHECK(memcmp(&m, dgram, n) == 0);
	CHECK((ti = msg_type_info(m.hdr.type)) != NULL);
	CHECK(m.hdr.type < MSG_TYPE_COUNT && ti->size == type_size[m.hdr.type]);
	CHECK(n == sizeof(struct msg_hdr) + ti->size && m.hdr.len == ti->size);
	CHECK(m.hdr.flags == 0 && m.hdr.reserved == 0);
	CHECK(ti->dirs & msg_dir_bit(chan->peer, chan->self));
	CHECK(before.greeted || (ti->flags & MF_HANDSHAKE));
	CHECK(!(ti->flags & MF_POLICY) || (before.permits & MSG_PERMIT_POLICY));
	CHECK(!(ti->flags & MF_ONCE) || !((before.seen_once[m.hdr.type / 64] >>
	    (m.hdr.type % 64)) & 1));

	expect = before;
	if (ti->flags & MF_HANDSHAKE)
		expect.greeted = true;
	if (ti->flags & MF_ONCE)
		expect.seen_once[m.hdr.type / 64] |=
		    (uint64_t)1 << (m.hdr.type % 64);
	CHECK(same_state(&expect, chan));

	CHECK(msg_validate(&before, copy, n) == NULL);
	payload = copy + sizeof(struct msg_hdr);
	CHECK(ti->check(payload) == NULL);
	payload_usable(m.hdr.type, payload);
	reencodes(chan, dgram, n);
	free(copy);
	return true;
}

/* The types this end may receive, for typed mode. */
static size_t
allowed_types(const struct msg_chan *chan, unsigned int *types)
{
	unsigned int t, bit = msg_dir_bit(chan->peer, chan->self);
	size_t n = 0;

	for (t = 1; t < MSG_TYPE_COUNT; t++)
		if (msg_type_info(t)->dirs & bit)
			types[n++] = t;
	return n;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static unsigned char dgram[sizeof(struct msg) + 1024];
	unsigned int types[MSG_TYPE_COUNT];
	const uint8_t *p = data, *end = data + size;
	struct msg_chan chan;
	struct msg_hdr hdr;
	size_t ntypes, n, i, avail;
	unsigned int setup;
	bool typed;

	if (sv[0] == -1) {
		CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
		CHECK(sizeof(type_size) / sizeof(type_size[0]) ==
		    MSG_TYPE_COUNT);
	}
	if (size == 0)
		return 0;
	setup = *p++;
	msg_chan_init(&chan, sv[1], ends[setup & 3].self, ends[setup & 3].peer,
	    "fuzz");
	if (setup & 4)
		msg_chan_permit(&chan, MSG_PERMIT_POLICY);
	chan.greeted = (setup & 8) != 0;
	typed = (setup & 16) != 0;
	ntypes = allowed_types(&chan, types);
	CHECK(ntypes > 0);

	for (i = 0; i < MAX_DATAGRAMS && p < end; i++) {
		if (typed) {
			const struct msg_type_info *ti;

			memset(&hdr, 0, sizeof(hdr));
			hdr.type = (uint16_t)types[*p++ % ntypes];
			ti = msg_type_info(hdr.type);
			avail = (size_t)(end - p) < sizeof(hdr.id) ?
			    (size_t)(end - p) : sizeof(hdr.id);
			memcpy(&hdr.id, p, avail);
			p += avail;
			hdr.len = (uint32_t)ti->size;
			memcpy(dgram, &hdr, sizeof(hdr));
			avail = (size_t)(end - p) < ti->size ?
			    (size_t)(end - p) : ti->size;
			memcpy(dgram + sizeof(hdr), p, avail);
			memset(dgram + sizeof(hdr) + avail, 0,
			    ti->size - avail);
			p += avail;
			n = sizeof(hdr) + ti->size;
		} else {
			if (end - p < 2)
				break;
			n = (size_t)p[0] | (size_t)p[1] << 8;
			p += 2;
			if (n > (size_t)(end - p))
				n = (size_t)(end - p);
			if (n > sizeof(dgram))
				n = sizeof(dgram);
			memcpy(dgram, p, n);
			p += n;
		}
		if (!one_datagram(&chan, dgram, n))
			break;
	}
	return 0;
}
