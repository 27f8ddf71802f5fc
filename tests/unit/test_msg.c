/*
 * The message codec: every type round-trips through a real socketpair, and
 * every rejection case is refused before a field is read.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "msg.h"

/* An IPv4 address from its host-order number. */
#define IN4(h)	ip_addr_from_in(htonl(h))

struct pair {
	struct msg_chan	a, b;	/* a: sender side, b: receiver side */
};

static void
pair_open(struct pair *p, enum msg_peer from, enum msg_peer to)
{
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	msg_chan_init(&p->a, sv[0], from, to, "a");
	msg_chan_init(&p->b, sv[1], to, from, "b");
	/* Past the handshake, policy granted: these tests check codecs. */
	p->b.greeted = true;
	msg_chan_permit(&p->b, MSG_PERMIT_POLICY);
}

/* A receive side in the state the codec tests want (see pair_open). */
static struct msg_chan
open_rx(enum msg_peer self, enum msg_peer peer)
{
	struct msg_chan c;

	msg_chan_init(&c, -1, self, peer, "rx");
	c.greeted = true;
	msg_chan_permit(&c, MSG_PERMIT_POLICY);
	return c;
}

static void
pair_close(struct pair *p)
{
	close(p->a.fd);
	close(p->b.fd);
}

/*
 * A payload of the type that its checker accepts: zeroes, but for each
 * address a message must hold, 0.0.0.0, and each CIDR, 0.0.0.0/0 (a
 * zeroed address has no family, and is refused).
 */
static void
base(enum msg_type type, void *payload)
{
	const struct msg_type_info *ti = msg_type_info(type);
	const struct ip_addr none = ip_addr_from_in(0);

	memset(payload, 0, ti->size);
	switch (type) {
	case MSG_NETD_SETUP_ENI:
	case MSG_NETD_TEARDOWN_ENI:
		((struct msg_netd_setup_eni *)payload)->addr.addr = none;
		((struct msg_netd_setup_eni *)payload)->gateway = none;
		break;
	case MSG_NETD_ADD_POD:
	case MSG_NETD_DEL_POD:
		((struct msg_netd_pod_rule *)payload)->addr = none;
		break;
	case MSG_NETD_RULE:
		((struct msg_netd_rule *)payload)->src.addr = none;
		((struct msg_netd_rule *)payload)->dst.addr = none;
		break;
	case MSG_NETD_ADD_POD_ROUTE:
		((struct msg_netd_pod_route *)payload)->addr = none;
		break;
	case MSG_NETD_ROUTE:
		((struct msg_netd_route *)payload)->addr = none;
		break;
	case MSG_NETD_SNAT:
		((struct msg_netd_snat *)payload)->to = none;
		break;
	case MSG_NETD_SNAT_STATE:
		((struct msg_netd_snat_state *)payload)->to = none;
		break;
	case MSG_CLOUD_INSTANCE:
		((struct msg_cloud_instance *)payload)->primary_ip = none;
		break;
	case MSG_CLOUD_SUBNET:
		((struct msg_cloud_subnet *)payload)->cidr.addr = none;
		break;
	case MSG_CLOUD_ENI:
		((struct msg_cloud_eni *)payload)->primary_ip = none;
		break;
	case MSG_CLOUD_ASSIGN_IPS:
	case MSG_CLOUD_UNASSIGN_IPS:
		((struct msg_cloud_ips *)payload)->family = AF_INET;
		break;
	case MSG_CLOUD_ASSIGN_PREFIXES:
	case MSG_CLOUD_UNASSIGN_PREFIXES:
		((struct msg_cloud_prefixes *)payload)->family = AF_INET;
		break;
	default:
		break;
	}
}

/* A payload of the type's size, every string field terminated: base()
 * satisfies every checker (counts 0, enums 0, strings empty, addresses
 * 0.0.0.0). */
static void
test_every_type_round_trips(void **state)
{
	static struct msg m;
	unsigned char payload[MSG_MAX_PAYLOAD];
	unsigned int t;
	const char *why;

	(void)state;
	for (t = 1; t < MSG_TYPE_COUNT; t++) {
		const struct msg_type_info *ti = msg_type_info(t);
		enum msg_peer peers[] = { PEER_BROKER, PEER_NETD, PEER_CLOUDD };
		int f, r, sent = 0;

		assert_non_null(ti);
		assert_true(ti->size > 0 && ti->size <= MSG_MAX_PAYLOAD);
		for (f = 0; f < 3; f++) {
			for (r = 0; r < 3; r++) {
				struct pair p;

				if (!(ti->dirs & msg_dir_bit(peers[f], peers[r])))
					continue;
				base(t, payload);
				pair_open(&p, peers[f], peers[r]);
				assert_int_equal(msg_send(&p.a, t, 1000 + t,
				    payload, ti->size), 0);
				assert_int_equal(msg_recv(&p.b, &m, &why),
				    MSG_RECV_OK);
				assert_int_equal(m.hdr.type, t);
				assert_int_equal(m.hdr.id, 1000 + t);
				assert_int_equal(m.hdr.len, ti->size);
				assert_memory_equal(m.u.bytes, payload, ti->size);
				pair_close(&p);
				sent++;
			}
		}
		assert_true(sent > 0);	/* every type has a direction */
	}
}

static void
test_fields_survive(void **state)
{
	struct pair p;
	static struct msg m;
	struct msg_netd_setup_eni s, r;
	struct msg_cloud_create_eni c, *rc;
	const char *why;

	(void)state;
	memset(&s, 0, sizeof(s));
	memcpy(s.mac, "\x02\x11\x22\x33\x44\x55", 6);
	s.table = 101;
	s.addr.addr = ip_addr_from_in(htonl(0x0a00000a));
	s.addr.len = 20;
	s.gateway = ip_addr_from_in(htonl(0x0a000001));
	s.mtu = 9001;
	pair_open(&p, PEER_BROKER, PEER_NETD);
	assert_int_equal(msg_send(&p.a, MSG_NETD_SETUP_ENI, 7, &s,
	    sizeof(s)), 0);
	assert_int_equal(msg_recv(&p.b, &m, &why), MSG_RECV_OK);
	memcpy(&r, m.u.bytes, sizeof(r));
	assert_memory_equal(&r, &s, sizeof(s));
	pair_close(&p);

	memset(&c, 0, sizeof(c));
	msg_strlcpy(c.subnet_id, "subnet-0123", sizeof(c.subnet_id));
	c.nsgs = 2;
	msg_strlcpy(c.sgs[0], "sg-1", sizeof(c.sgs[0]));
	msg_strlcpy(c.sgs[1], "sg-2", sizeof(c.sgs[1]));
	c.ntags = 1;
	msg_strlcpy(c.tags[0].key, "enid.io/node", sizeof(c.tags[0].key));
	msg_strlcpy(c.tags[0].value, "i-0abc", sizeof(c.tags[0].value));
	pair_open(&p, PEER_BROKER, PEER_CLOUDD);
	assert_int_equal(msg_send(&p.a, MSG_CLOUD_CREATE_ENI, 8, &c,
	    sizeof(c)), 0);
	assert_int_equal(msg_recv(&p.b, &m, &why), MSG_RECV_OK);
	rc = (struct msg_cloud_create_eni *)(void *)m.u.bytes;
	assert_string_equal(rc->sgs[1], "sg-2");
	assert_string_equal(rc->tags[0].value, "i-0abc");
	pair_close(&p);
}

/* Raw datagrams, bypassing msg_send's own checks. */
static const char *
validate_raw(enum msg_peer from, enum msg_peer to, uint16_t type,
    uint32_t hdrlen, const void *payload, size_t len)
{
	static unsigned char buf[sizeof(struct msg_hdr) + MSG_MAX_PAYLOAD + 64];
	struct msg_chan rx = open_rx(to, from);
	struct msg_hdr h = { type, 0, hdrlen, 1, 0 };

	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), payload, len);
	return msg_validate(&rx, buf, sizeof(h) + len);
}

static void
test_rejects_unknown_type(void **state)
{
	unsigned char z[16] = { 0 };

	(void)state;
	assert_string_equal(validate_raw(PEER_BROKER, PEER_NETD, 0, 4, z, 4),
	    "unknown message type");
	assert_string_equal(validate_raw(PEER_BROKER, PEER_NETD,
	    MSG_TYPE_COUNT, 4, z, 4), "unknown message type");
	assert_string_equal(validate_raw(PEER_BROKER, PEER_NETD, 0xffff, 4, z,
	    4), "unknown message type");
}

/*
 * An IPv6-only ENI's set-up and teardown: no gateway, and an absent one
 * is all zero.  A stray byte behind family 0 was once taken (found by
 * fuzz_msg).
 */
static void
test_ipv6_only_eni_gateway(void **state)
{
	static const uint16_t types[] = { MSG_NETD_SETUP_ENI,
	    MSG_NETD_TEARDOWN_ENI };
	struct msg_netd_setup_eni m;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		memset(&m, 0, sizeof(m));
		assert_int_equal(ip_addr_parse("2600:1f14::10", &m.addr6,
		    NULL), 0);
		assert_null(validate_raw(PEER_BROKER, PEER_NETD, types[i],
		    sizeof(m), &m, sizeof(m)));
		m.gateway.bytes[3] = 1;
		assert_string_equal(validate_raw(PEER_BROKER, PEER_NETD,
		    types[i], sizeof(m), &m, sizeof(m)),
		    "gateway is no valid address");
		m.gateway.bytes[3] = 0;
		m.gateway.pad[0] = 1;
		assert_string_equal(validate_raw(PEER_BROKER, PEER_NETD,
		    types[i], sizeof(m), &m, sizeof(m)),
		    "gateway is no valid address");
	}
	/* set-up names the gateway an IPv4-less ENI cannot have */
	memset(&m, 0, sizeof(m));
	assert_int_equal(ip_addr_parse("2600:1f14::10", &m.addr6, NULL), 0);
	m.gateway = ip_addr_from_in(0x0a000001);
	assert_string_equal(validate_raw(PEER_BROKER, PEER_NETD,
	    MSG_NETD_SETUP_ENI, sizeof(m), &m, sizeof(m)),
	    "gateway without an IPv4 address");
}

static void
test_rejects_wrong_direction(void **state)
{
	struct msg_hello h = { MSG_PROTO_VERSION };
	struct msg_netd_pod_rule pr = { 0 };
	struct msg_cloud_delete d = { 0 };

	(void)state;
	/* A child may not send HELLO; netd may not receive cloud intents;
	 * cloudd may not send netd answers. */
	assert_string_equal(validate_raw(PEER_NETD, PEER_BROKER, MSG_HELLO,
	    sizeof(h), &h, sizeof(h)),
	    "message type not allowed in this direction");
	assert_string_equal(validate_raw(PEER_BROKER, PEER_NETD,
	    MSG_CLOUD_DELETE, sizeof(d), &d, sizeof(d)),
	    "message type not allowed in this direction");
	assert_string_equal(validate_raw(PEER_NETD, PEER_BROKER,
	    MSG_NETD_ADD_POD, sizeof(pr), &pr, sizeof(pr)),
	    "message type not allowed in this direction");
}

/* A dual-stack pod's rule request: its IPv4 address, then its IPv6 one;
 * never two of one family. */
static void
test_pod_rule_addr6(void **state)
{
	struct msg_netd_pod_rule pr;

	(void)state;
	memset(&pr, 0, sizeof(pr));
	assert_int_equal(ip_addr_parse("10.0.1.5", &pr.addr, NULL), 0);
	assert_int_equal(ip_addr_parse("2001:db8:1::5", &pr.addr6, NULL), 0);
	assert_null(validate_raw(PEER_BROKER, PEER_NETD, MSG_NETD_ADD_POD,
	    sizeof(pr), &pr, sizeof(pr)));
	assert_int_equal(ip_addr_parse("2001:db8:1::6", &pr.addr, NULL), 0);
	assert_string_equal(validate_raw(PEER_BROKER, PEER_NETD,
	    MSG_NETD_DEL_POD, sizeof(pr), &pr, sizeof(pr)),
	    "pod has two IPv6 addresses");
	/* An IPv6-only pod: its address in addr, as before. */
	memset(&pr.addr6, 0, sizeof(pr.addr6));
	assert_null(validate_raw(PEER_BROKER, PEER_NETD, MSG_NETD_ADD_POD,
	    sizeof(pr), &pr, sizeof(pr)));
}

static void
test_rejects_wrong_length(void **state)
{
	unsigned char z[64] = { 0 };
	struct msg_chan rx;

	(void)state;
	assert_string_equal(validate_raw(PEER_BROKER, PEER_NETD, MSG_HELLO, 3,
	    z, 3), "payload length differs from its type's size");
	assert_string_equal(validate_raw(PEER_BROKER, PEER_NETD, MSG_HELLO, 5,
	    z, 5), "payload length differs from its type's size");
	/* Header says one thing, datagram another. */
	assert_string_equal(validate_raw(PEER_BROKER, PEER_NETD, MSG_HELLO, 4,
	    z, 8), "header length differs from datagram length");
	rx = open_rx(PEER_NETD, PEER_BROKER);
	assert_string_equal(msg_validate(&rx, z, 5), "shorter than a header");
}

static void
test_rejects_unterminated_strings(void **state)
{
	struct msg_result r;
	struct msg_cloud_delete d;
	struct msg_cloud_create_eni c;

	(void)state;
	memset(&r, 'A', sizeof(r));
	r.status = ST_OK;
	r.error = 0;
	r.changed = 0;
	assert_string_equal(validate_raw(PEER_NETD, PEER_BROKER,
	    MSG_NETD_RESULT, sizeof(r), &r, sizeof(r)),
	    "unterminated result message");

	memset(&d, 'x', sizeof(d));
	d.deadline_ms = 1000;
	assert_string_equal(validate_raw(PEER_BROKER, PEER_CLOUDD,
	    MSG_CLOUD_DELETE, sizeof(d), &d, sizeof(d)),
	    "unterminated eni id");

	/* A string inside an array entry past the count is not read; one
	 * within the count is. */
	memset(&c, 0, sizeof(c));
	c.ntags = 1;
	memset(c.tags[0].value, 'v', sizeof(c.tags[0].value));
	assert_string_equal(validate_raw(PEER_BROKER, PEER_CLOUDD,
	    MSG_CLOUD_CREATE_ENI, sizeof(c), &c, sizeof(c)),
	    "unterminated tag");
}

static void
test_rejects_bad_values(void **state)
{
	struct msg_result r;
	struct msg_netd_policy pol;
	struct msg_cloud_ips ips;
	struct msg_cloud_done done;
	struct msg_loglevel ll = { 7 };
	struct msg_chan rx;
	struct msg_hdr h = { MSG_HELLO, 1, 4, 1, 0 };
	unsigned char buf[sizeof(h) + 4] = { 0 };

	(void)state;
	memset(&r, 0, sizeof(r));
	r.status = ST_MAX;
	assert_string_equal(validate_raw(PEER_NETD, PEER_BROKER,
	    MSG_NETD_RESULT, sizeof(r), &r, sizeof(r)),
	    "unknown result status");
	r.status = ST_OK;
	r.changed = MSG_MAX_CHANGED + 1;
	assert_string_equal(validate_raw(PEER_NETD, PEER_BROKER,
	    MSG_NETD_RESULT, sizeof(r), &r, sizeof(r)),
	    "more changes than one request makes");
	r.changed = MSG_MAX_CHANGED;
	assert_null(validate_raw(PEER_NETD, PEER_BROKER,
	    MSG_NETD_RESULT, sizeof(r), &r, sizeof(r)));
	memset(&pol, 0, sizeof(pol));
	pol.ncidrs = MSG_MAX_VPC_CIDRS + 1;
	assert_string_equal(validate_raw(PEER_BROKER, PEER_NETD,
	    MSG_NETD_POLICY, sizeof(pol), &pol, sizeof(pol)),
	    "too many CIDRs");
	pol.ncidrs = 1;
	pol.cidrs[0].addr = ip_addr_from_in(htonl(0x0a000000));
	pol.cidrs[0].len = 33;
	assert_string_equal(validate_raw(PEER_BROKER, PEER_NETD,
	    MSG_NETD_POLICY, sizeof(pol), &pol, sizeof(pol)),
	    "VPC CIDR is no valid CIDR");
	pol.cidrs[0].len = 16;
	assert_null(validate_raw(PEER_BROKER, PEER_NETD,
	    MSG_NETD_POLICY, sizeof(pol), &pol, sizeof(pol)));
	/* the second of two, IPv6: taken since version 8, after the
	 * IPv4 ones only */
	pol.ncidrs = 2;
	assert_int_equal(ip_prefix_parse("2600:1f14:abc::/56", &pol.cidrs[1],
	    NULL), 0);
	assert_null(validate_raw(PEER_BROKER, PEER_NETD,
	    MSG_NETD_POLICY, sizeof(pol), &pol, sizeof(pol)));
	pol.cidrs[2] = pol.cidrs[0];
	pol.ncidrs = 3;
	assert_string_equal(validate_raw(PEER_BROKER, PEER_NETD,
	    MSG_NETD_POLICY, sizeof(pol), &pol, sizeof(pol)),
	    "VPC IPv4 CIDR after an IPv6 one");
	pol.ncidrs = 2;
	pol.cidrs[1].len = 129;
	assert_string_equal(validate_raw(PEER_BROKER, PEER_NETD,
	    MSG_NETD_POLICY, sizeof(pol), &pol, sizeof(pol)),
	    "VPC CIDR is no valid CIDR");
	memset(&ips, 0, sizeof(ips));
	ips.naddrs = MSG_MAX_ENI_ADDRS + 1;
	assert_string_equal(validate_raw(PEER_BROKER, PEER_CLOUDD,
	    MSG_CLOUD_ASSIGN_IPS, sizeof(ips), &ips, sizeof(ips)),
	    "too many addresses");
	memset(&done, 0, sizeof(done));
	done.st.outcome = CO_MAX;
	assert_string_equal(validate_raw(PEER_CLOUDD, PEER_BROKER,
	    MSG_CLOUD_DONE, sizeof(done), &done, sizeof(done)),
	    "unknown cloud outcome");
	assert_string_equal(validate_raw(PEER_BROKER, PEER_NETD,
	    MSG_LOG_LEVEL, sizeof(ll), &ll, sizeof(ll)), "unknown log level");
	/* Reserved header bits. */
	memcpy(buf, &h, sizeof(h));
	rx = open_rx(PEER_NETD, PEER_BROKER);
	assert_string_equal(msg_validate(&rx, buf, sizeof(buf)),
	    "reserved header bits set");
}


/*
 * Each meaning check, reached: a payload of the type that its checker
 * accepts (base()) with one field spoiled.
 */
struct spoil {
	enum msg_type	type;
	enum msg_peer	from, to;
	size_t		off;		/* where to write */
	size_t		len;		/* how many bytes of fill */
	unsigned char	fill;
	uint32_t	value;		/* or, if len is 0, this u32 */
	const char	*expect;
};

#define B2N	PEER_BROKER, PEER_NETD
#define N2B	PEER_NETD, PEER_BROKER
#define B2C	PEER_BROKER, PEER_CLOUDD
#define C2B	PEER_CLOUDD, PEER_BROKER
#define SPOIL_FILL(t, d, s, fl, e) \
	{ t, d, offsetof(s, fl), sizeof(((s *)0)->fl), 'x', 0, e }
#define SPOIL_U32(t, d, s, fl, v, e) \
	{ t, d, offsetof(s, fl), 0, 0, v, e }
#define SPOIL_U8(t, d, s, fl, v, e) \
	{ t, d, offsetof(s, fl), 1, v, 0, e }
/* The reasons msg.c gives for an address or CIDR field, by its name. */
#define BAD_ADDR(f)	f " is no valid address (unknown family, or not " \
	"canonical)"
#define BAD_CIDR(f)	f " is no valid CIDR (unknown family, not " \
	"canonical, or a length past its family's bits)"
#define V6(f)		f " is IPv6, which enid does not take yet"
#define BAD_ADDR6(f)	f " is no valid address, or a special one"

static const struct spoil spoils[] = {
	SPOIL_U32(MSG_CLOUD_CHECK_INSTANCES, B2C,
	    struct msg_cloud_check_instances, nids, MSG_MAX_INSTANCE_IDS + 1,
	    "instance id count out of range"),
	SPOIL_U32(MSG_CLOUD_CHECK_INSTANCES, B2C,
	    struct msg_cloud_check_instances, nids, 1,
	    "empty or unterminated instance id"),
	SPOIL_U32(MSG_CLOUD_INSTANCES, C2B, struct msg_cloud_instances, nids,
	    MSG_MAX_INSTANCE_IDS + 1, "instance id count out of range"),
	SPOIL_U8(MSG_CLOUD_INSTANCES, C2B, struct msg_cloud_instances,
	    exists[0], 2, "instance existence flag out of range"),
	SPOIL_U8(MSG_CLOUD_INSTANCES, C2B, struct msg_cloud_instances,
	    exists[MSG_MAX_INSTANCE_IDS - 1], 1,
	    "instance existence flag out of range"),
	SPOIL_FILL(MSG_CLOUD_INSTANCES, C2B, struct msg_cloud_instances,
	    st.message, "unterminated string in cloud status"),
	SPOIL_U8(MSG_NETD_SETUP_ENI, B2N, struct msg_netd_setup_eni,
	    addr.len, 33, BAD_CIDR("ENI address")),
	SPOIL_U8(MSG_NETD_TEARDOWN_ENI, B2N, struct msg_netd_setup_eni,
	    addr.len, 40, BAD_CIDR("ENI address")),
	SPOIL_U8(MSG_NETD_SETUP_ENI, B2N, struct msg_netd_setup_eni,
	    addr.addr.family, AF_INET6, V6("ENI address")),
	SPOIL_U8(MSG_NETD_SETUP_ENI, B2N, struct msg_netd_setup_eni,
	    gateway.family, AF_INET6, V6("gateway")),
	SPOIL_U8(MSG_NETD_SETUP_ENI, B2N, struct msg_netd_setup_eni,
	    gateway.family, 7, BAD_ADDR("gateway")),
	SPOIL_U8(MSG_NETD_TEARDOWN_ENI, B2N, struct msg_netd_setup_eni,
	    gateway.pad[1], 1, BAD_ADDR("gateway")),
	SPOIL_U8(MSG_NETD_ADD_POD, B2N, struct msg_netd_pod_rule,
	    addr.family, 7, BAD_ADDR("pod address")),
	SPOIL_U8(MSG_NETD_SETUP_ENI, B2N, struct msg_netd_setup_eni,
	    addr.addr.family, 0, "ENI has neither an IPv4 nor an IPv6 address"),
	SPOIL_U8(MSG_NETD_SETUP_ENI, B2N, struct msg_netd_setup_eni,
	    addr6.family, AF_INET6, "ENI IPv6 address is a special one "
	    "(link-local, multicast, loopback, unspecified or IPv4-embedded)"),
	SPOIL_U8(MSG_NETD_TEARDOWN_ENI, B2N, struct msg_netd_setup_eni,
	    addr6.family, AF_INET, "ENI IPv6 address is no valid IPv6 address"),
	SPOIL_U8(MSG_NETD_SETUP_ENI, B2N, struct msg_netd_setup_eni,
	    addr6.bytes[0], 0x20, "ENI IPv6 address is no valid IPv6 address"),
	SPOIL_U8(MSG_NETD_ADD_POD, B2N, struct msg_netd_pod_rule,
	    addr.family, AF_UNSPEC, BAD_ADDR("pod address")),
	SPOIL_U8(MSG_NETD_DEL_POD, B2N, struct msg_netd_pod_rule,
	    addr.bytes[4], 1, BAD_ADDR("pod address")),
	SPOIL_U8(MSG_NETD_ADD_POD, B2N, struct msg_netd_pod_rule,
	    addr6.family, AF_INET6, "pod IPv6 address is a special one "
	    "(link-local, multicast, loopback, unspecified or IPv4-embedded)"),
	SPOIL_U8(MSG_NETD_DEL_POD, B2N, struct msg_netd_pod_rule,
	    addr6.family, AF_INET, "pod IPv6 address is no valid IPv6 address"),
	SPOIL_U8(MSG_NETD_ADD_POD, B2N, struct msg_netd_pod_rule,
	    addr6.bytes[0], 0x20, "pod IPv6 address is no valid IPv6 address"),
	SPOIL_U8(MSG_NETD_ADD_POD_ROUTE, B2N, struct msg_netd_pod_route,
	    addr.family, 7, BAD_ADDR("pod address")),
	SPOIL_U8(MSG_NETD_ROUTE, N2B, struct msg_netd_route,
	    addr.family, 7, BAD_ADDR("route destination")),
	SPOIL_U8(MSG_NETD_ROUTE, N2B, struct msg_netd_route,
	    addr.bytes[15], 1, BAD_ADDR("route destination")),
	SPOIL_U8(MSG_NETD_SNAT, B2N, struct msg_netd_snat, to.family,
	    AF_INET6, V6("SNAT target")),
	SPOIL_U8(MSG_NETD_SNAT_STATE, N2B, struct msg_netd_snat_state,
	    to.family, 0, BAD_ADDR("SNAT target")),
	SPOIL_U32(MSG_NETD_SNAT_STATE, N2B, struct msg_netd_snat_state,
	    nuntranslated, 1, BAD_CIDR("untranslated CIDR")),
	SPOIL_U8(MSG_CLOUD_INSTANCE, C2B, struct msg_cloud_instance,
	    primary_ip.family, AF_INET6, V6("instance primary address")),
	SPOIL_U32(MSG_CLOUD_INSTANCE, C2B, struct msg_cloud_instance, ncidrs,
	    1, "VPC CIDR is no valid CIDR"),
	SPOIL_U8(MSG_CLOUD_SUBNET, C2B, struct msg_cloud_subnet,
	    cidr.addr.family, AF_INET6, V6("subnet CIDR")),
	SPOIL_U8(MSG_CLOUD_ENI, C2B, struct msg_cloud_eni, primary_ip.family,
	    AF_INET6, V6("eni primary address")),
	SPOIL_U32(MSG_CLOUD_ENI, C2B, struct msg_cloud_eni, naddrs, 1,
	    BAD_ADDR("eni address")),
	SPOIL_U32(MSG_CLOUD_ASSIGN_IPS, B2C, struct msg_cloud_ips, naddrs, 1,
	    BAD_ADDR6("eni address")),
	SPOIL_U32(MSG_CLOUD_UNASSIGN_IPS, B2C, struct msg_cloud_ips, naddrs, 2,
	    BAD_ADDR6("eni address")),
	SPOIL_U32(MSG_CLOUD_ASSIGNED, C2B, struct msg_cloud_assigned, naddrs,
	    1, BAD_ADDR6("assigned address")),
	/* the family of a request for addresses or prefixes: 4 or 6 */
	SPOIL_U32(MSG_CLOUD_ASSIGN_IPS, B2C, struct msg_cloud_ips, family, 0,
	    "address request of no known family"),
	SPOIL_U32(MSG_CLOUD_UNASSIGN_IPS, B2C, struct msg_cloud_ips, family,
	    AF_UNIX, "address request of no known family"),
	SPOIL_U32(MSG_CLOUD_ASSIGN_PREFIXES, B2C, struct msg_cloud_prefixes,
	    family, 0, "prefix request of no known family"),
	SPOIL_U32(MSG_CLOUD_UNASSIGN_PREFIXES, B2C, struct msg_cloud_prefixes,
	    family, AF_INET6 + 1, "prefix request of no known family"),
	/* the IPv6 fields */
	SPOIL_U32(MSG_CLOUD_CREATE_ENI, B2C, struct msg_cloud_create_eni,
	    nipv6, 2, "more than one IPv6 address to create an ENI with"),
	SPOIL_U8(MSG_CLOUD_ENI, C2B, struct msg_cloud_eni, ipv6_native, 2,
	    "eni flag not 0 or 1"),
	SPOIL_U32(MSG_CLOUD_ENI, C2B, struct msg_cloud_eni, naddrs6, 1,
	    "eni IPv6 address not a usable IPv6 one"),
	SPOIL_U32(MSG_CLOUD_ENI, C2B, struct msg_cloud_eni, naddrs6,
	    MSG_MAX_ENI_ADDRS6 + 1, "too many IPv6 addresses"),
	SPOIL_U32(MSG_CLOUD_ENI, C2B, struct msg_cloud_eni, nprefixes6,
	    MSG_MAX_ENI_PREFIXES6 + 1, "too many prefixes"),
	SPOIL_U32(MSG_CLOUD_ENI, C2B, struct msg_cloud_eni, nprefixes6, 1,
	    BAD_ADDR6("prefix")),
	SPOIL_U32(MSG_CLOUD_ENI, C2B, struct msg_cloud_eni, nbad_addrs6,
	    MSG_MAX_LEFT_OUT + 1, "too many IPv6 entries left out"),
	SPOIL_U32(MSG_CLOUD_ENI, C2B, struct msg_cloud_eni, nbad_prefixes6,
	    MSG_MAX_LEFT_OUT + 1, "too many IPv6 entries left out"),
	SPOIL_U8(MSG_CLOUD_SUBNET, C2B, struct msg_cloud_subnet, ipv6_native,
	    2, "subnet flag not 0 or 1"),
	SPOIL_U32(MSG_CLOUD_SUBNET, C2B, struct msg_cloud_subnet, ipv6_state,
	    IPV6_ST_MAX, "unknown subnet IPv6 state"),
	SPOIL_U32(MSG_CLOUD_SUBNET, C2B, struct msg_cloud_subnet, ipv6_state,
	    IPV6_ST_ASSOCIATED,
	    "subnet IPv6 CIDR not an associated IPv6 /64 network"),
	SPOIL_U8(MSG_CLOUD_SUBNET, C2B, struct msg_cloud_subnet, cidr6.len,
	    64, "subnet IPv6 CIDR not an associated IPv6 /64 network"),
	SPOIL_U8(MSG_CLOUD_SUBNET, C2B, struct msg_cloud_subnet, ipv6_native,
	    1, "IPv6-only subnet with an IPv4 CIDR"),
	SPOIL_U8(MSG_CLOUD_INSTANCE, C2B, struct msg_cloud_instance,
	    primary_ip6.family, AF_INET6,
	    "instance primary IPv6 address not a usable IPv6 one"),
	SPOIL_U8(MSG_CLOUD_INSTANCE, C2B, struct msg_cloud_instance,
	    subnet_cidr6.len, 64,
	    "instance subnet IPv6 CIDR not an IPv6 /64 network"),
	SPOIL_U8(MSG_CLOUD_INSTANCE, C2B, struct msg_cloud_instance,
	    ipv6_supported, 2, "instance flag not 0 or 1"),
	SPOIL_FILL(MSG_NETD_LINK, N2B, struct msg_netd_link, name,
	    "unterminated link name"),
	SPOIL_FILL(MSG_NETD_ADD_POD_ROUTE, B2N, struct msg_netd_pod_route, dev,
	    "unterminated device name"),
	SPOIL_FILL(MSG_NETD_ROUTE, N2B, struct msg_netd_route, dev,
	    "unterminated device name"),
	SPOIL_U8(MSG_NETD_RULE, N2B, struct msg_netd_rule, src.len, 33,
	    BAD_CIDR("rule source")),
	SPOIL_U8(MSG_NETD_RULE, N2B, struct msg_netd_rule, dst.len, 33,
	    BAD_CIDR("rule destination")),
	SPOIL_U8(MSG_NETD_RULE, N2B, struct msg_netd_rule, dst.addr.family,
	    AF_INET6, "rule source and destination of different families"),
	SPOIL_U32(MSG_LOG_LEVEL, B2C, struct msg_loglevel, level, 4,
	    "unknown log level"),
	SPOIL_FILL(MSG_CLOUD_INSTANCE, C2B, struct msg_cloud_instance, st.code,
	    "unterminated string in cloud status"),
	SPOIL_FILL(MSG_CLOUD_INSTANCE, C2B, struct msg_cloud_instance,
	    st.request_id, "unterminated string in cloud status"),
	SPOIL_FILL(MSG_CLOUD_INSTANCE, C2B, struct msg_cloud_instance, vpc_id,
	    "unterminated string in instance"),
	SPOIL_U32(MSG_CLOUD_INSTANCE, C2B, struct msg_cloud_instance, ncidrs,
	    MSG_MAX_VPC_CIDRS + 1, "too many CIDRs"),
	SPOIL_U32(MSG_CLOUD_INSTANCE, C2B, struct msg_cloud_instance, nsgs,
	    MSG_MAX_SGS + 1, "too many security groups"),
	SPOIL_U32(MSG_CLOUD_DESCRIBE_SUBNETS, B2C,
	    struct msg_cloud_describe_subnets, nids, MSG_MAX_SUBNETS + 1,
	    "too many subnet ids"),
	SPOIL_FILL(MSG_CLOUD_SUBNET, C2B, struct msg_cloud_subnet, az,
	    "unterminated string in subnet"),
	SPOIL_U8(MSG_CLOUD_SUBNET, C2B, struct msg_cloud_subnet, cidr.len,
	    33, BAD_CIDR("subnet CIDR")),
	SPOIL_FILL(MSG_CLOUD_CREATE_ENI, B2C, struct msg_cloud_create_eni,
	    client_token, "unterminated string in create-eni"),
	SPOIL_U32(MSG_CLOUD_CREATE_ENI, B2C, struct msg_cloud_create_eni,
	    nsecondary, MSG_MAX_ENI_ADDRS + 1, "too many secondary addresses"),
	SPOIL_U32(MSG_CLOUD_CREATE_ENI, B2C, struct msg_cloud_create_eni,
	    ntags, MSG_MAX_TAGS + 1, "too many tags"),
	SPOIL_FILL(MSG_CLOUD_ENI, C2B, struct msg_cloud_eni, attachment_id,
	    "unterminated string in eni"),
	SPOIL_U32(MSG_CLOUD_ENI, C2B, struct msg_cloud_eni, status,
	    ENI_ST_MAX, "unknown eni status"),
	SPOIL_U32(MSG_CLOUD_ENI, C2B, struct msg_cloud_eni, attach_status,
	    ENI_ST_MAX, "unknown eni status"),
	SPOIL_U32(MSG_CLOUD_ENI, C2B, struct msg_cloud_eni, naddrs,
	    MSG_MAX_ENI_ADDRS + 1, "too many eni addresses"),
	SPOIL_FILL(MSG_CLOUD_ATTACH, B2C, struct msg_cloud_attach, eni_id,
	    "unterminated eni id"),
	SPOIL_FILL(MSG_CLOUD_ATTACHED, C2B, struct msg_cloud_attached,
	    attachment_id, "unterminated attachment id"),
	SPOIL_FILL(MSG_CLOUD_ATTACHED, C2B, struct msg_cloud_attached,
	    st.message, "unterminated string in cloud status"),
	SPOIL_FILL(MSG_CLOUD_SET_DOT, B2C, struct msg_cloud_set_dot,
	    attachment_id, "unterminated string in set-dot"),
	SPOIL_U8(MSG_CLOUD_SET_DOT, B2C, struct msg_cloud_set_dot, value, 2,
	    "delete-on-termination not 0 or 1"),
	SPOIL_FILL(MSG_CLOUD_UNASSIGN_IPS, B2C, struct msg_cloud_ips, eni_id,
	    "unterminated eni id"),
	SPOIL_U32(MSG_CLOUD_ASSIGN_IPS, B2C, struct msg_cloud_ips, count,
	    MSG_MAX_ENI_ADDRS + 1, "too many addresses"),
	SPOIL_U32(MSG_CLOUD_ASSIGNED, C2B, struct msg_cloud_assigned, naddrs,
	    MSG_MAX_ENI_ADDRS + 1, "too many addresses"),
	SPOIL_U32(MSG_CLOUD_ASSIGNED, C2B, struct msg_cloud_assigned,
	    st.outcome, CO_MAX, "unknown cloud outcome"),
	SPOIL_FILL(MSG_CLOUD_DETACH, B2C, struct msg_cloud_detach, eni_id,
	    "unterminated string in detach"),
	SPOIL_FILL(MSG_CLOUD_DESCRIBE_ENIS, B2C,
	    struct msg_cloud_describe_enis, instance_id,
	    "unterminated instance id"),
	SPOIL_U32(MSG_CLOUD_DESCRIBE_ENIS, B2C, struct msg_cloud_describe_enis,
	    filter, ENIS_FILTER_MAX, "unknown eni filter"),
	SPOIL_U32(MSG_CLOUD_DESCRIBE_ENIS, B2C, struct msg_cloud_describe_enis,
	    status, ENI_ST_MAX, "unknown eni status"),
	SPOIL_U32(MSG_CLOUD_DESCRIBE_ENIS, B2C, struct msg_cloud_describe_enis,
	    ntags, MSG_MAX_TAGS + 1, "too many tags"),
	SPOIL_FILL(MSG_CLOUD_DONE, C2B, struct msg_cloud_done, st.request_id,
	    "unterminated string in cloud status"),
	SPOIL_U32(MSG_CLOUD_ENI, C2B, struct msg_cloud_eni, nprefixes,
	    MSG_MAX_ENI_PREFIXES + 1, "too many prefixes"),
	SPOIL_U32(MSG_CLOUD_ENI, C2B, struct msg_cloud_eni, nprefixes, 1,
	    BAD_ADDR6("prefix")),	/* a zeroed address has no family */
	SPOIL_U32(MSG_CLOUD_ENI, C2B, struct msg_cloud_eni, nbad_prefixes,
	    MSG_MAX_ENI_PREFIXES + 1, "too many refused prefixes"),
	SPOIL_U32(MSG_CLOUD_CREATE_ENI, B2C, struct msg_cloud_create_eni,
	    nprefixes, MSG_MAX_ENI_PREFIXES + 1, "too many prefixes"),
	SPOIL_FILL(MSG_CLOUD_INSTANCE, C2B, struct msg_cloud_instance,
	    hypervisor, "unterminated string in instance"),
	SPOIL_U8(MSG_CLOUD_INSTANCE, C2B, struct msg_cloud_instance,
	    prefixes_ok, 2, "instance flag not 0 or 1"),
	SPOIL_U8(MSG_CLOUD_INSTANCE, C2B, struct msg_cloud_instance,
	    bare_metal, 7, "instance flag not 0 or 1"),
	SPOIL_U32(MSG_CLOUD_INSTANCE, C2B, struct msg_cloud_instance,
	    vcpus, MSG_MAX_VCPUS + 1, "instance vCPUs out of range"),
	SPOIL_FILL(MSG_CLOUD_ASSIGN_PREFIXES, B2C, struct msg_cloud_prefixes,
	    eni_id, "unterminated eni id"),
	SPOIL_U32(MSG_CLOUD_ASSIGN_PREFIXES, B2C, struct msg_cloud_prefixes,
	    count, MSG_MAX_ENI_PREFIXES + 1, "too many prefixes"),
	SPOIL_U32(MSG_CLOUD_UNASSIGN_PREFIXES, B2C, struct msg_cloud_prefixes,
	    nprefixes, MSG_MAX_ENI_PREFIXES + 1, "too many prefixes"),
	SPOIL_U32(MSG_CLOUD_UNASSIGN_PREFIXES, B2C, struct msg_cloud_prefixes,
	    nprefixes, 2, BAD_ADDR6("prefix")),
	SPOIL_U32(MSG_CLOUD_PREFIXES_ASSIGNED, C2B,
	    struct msg_cloud_prefixes_assigned, nprefixes, 1,
	    BAD_ADDR6("prefix")),
	SPOIL_U32(MSG_CLOUD_PREFIXES_ASSIGNED, C2B,
	    struct msg_cloud_prefixes_assigned, st.outcome, CO_MAX,
	    "unknown cloud outcome"),
	SPOIL_FILL(MSG_NETD_SNAT_STATE, N2B, struct msg_netd_snat_state,
	    differs, "unterminated string in SNAT state"),
	SPOIL_FILL(MSG_NETD_SNAT_STATE, N2B, struct msg_netd_snat_state,
	    message, "unterminated string in SNAT state"),
	SPOIL_U8(MSG_NETD_SNAT_STATE, N2B, struct msg_netd_snat_state,
	    in_place, 2, "SNAT state flag not 0 or 1"),
	SPOIL_U8(MSG_NETD_SNAT_STATE, N2B, struct msg_netd_snat_state,
	    enabled, 0xff, "SNAT state flag not 0 or 1"),
};

/* netd's SNAT state: what differs is said only of a table not in
 * place, and ends within its array. */
static void
test_snat_state_differs(void **state)
{
	static struct msg_netd_snat_state st;

	(void)state;
	base(MSG_NETD_SNAT_STATE, &st);
	msg_strlcpy(st.differs, "table ip enid absent", sizeof(st.differs));
	assert_null(validate_raw(N2B, MSG_NETD_SNAT_STATE, sizeof(st), &st,
	    sizeof(st)));
	st.in_place = 1;
	assert_string_equal(validate_raw(N2B, MSG_NETD_SNAT_STATE,
	    sizeof(st), &st, sizeof(st)),
	    "SNAT state in place, yet says what differs");
	st.differs[0] = '\0';
	assert_null(validate_raw(N2B, MSG_NETD_SNAT_STATE, sizeof(st), &st,
	    sizeof(st)));
	memset(st.differs, '\x1b', sizeof(st.differs));
	st.in_place = 0;
	assert_string_equal(validate_raw(N2B, MSG_NETD_SNAT_STATE,
	    sizeof(st), &st, sizeof(st)),
	    "unterminated string in SNAT state");
}

static void
test_every_meaning_check(void **state)
{
	static unsigned char payload[MSG_MAX_PAYLOAD];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(spoils) / sizeof(spoils[0]); i++) {
		const struct spoil *sp = &spoils[i];
		const struct msg_type_info *ti = msg_type_info(sp->type);
		const char *why;

		base(sp->type, payload);
		/* The base passes; the spoiled field must not. */
		assert_null(validate_raw(sp->from, sp->to, sp->type, ti->size,
		    payload, ti->size));
		if (sp->len == 0)
			memcpy(payload + sp->off, &sp->value, sizeof(uint32_t));
		else
			memset(payload + sp->off, sp->fill, sp->len);
		why = validate_raw(sp->from, sp->to, sp->type, ti->size,
		    payload, ti->size);
		if (why == NULL || strcmp(why, sp->expect) != 0)
			fail_msg("%s, offset %zu: got \"%s\", wanted \"%s\"",
			    msg_type_name(sp->type), sp->off,
			    why ? why : "(accepted)", sp->expect);
	}
}

/* A security group past the count is not read; one within it is. */
static void
test_array_entries_checked_within_count(void **state)
{
	struct msg_cloud_create_eni c;
	struct msg_cloud_describe_subnets d;

	(void)state;
	memset(&c, 0, sizeof(c));
	memset(c.sgs[3], 'g', sizeof(c.sgs[3]));
	c.nsgs = 3;
	assert_null(validate_raw(PEER_BROKER, PEER_CLOUDD,
	    MSG_CLOUD_CREATE_ENI, sizeof(c), &c, sizeof(c)));
	c.nsgs = 4;
	assert_string_equal(validate_raw(PEER_BROKER, PEER_CLOUDD,
	    MSG_CLOUD_CREATE_ENI, sizeof(c), &c, sizeof(c)),
	    "unterminated security group");
	memset(&d, 0, sizeof(d));
	memset(d.ids[1], 's', sizeof(d.ids[1]));
	d.nids = 2;
	assert_string_equal(validate_raw(PEER_BROKER, PEER_CLOUDD,
	    MSG_CLOUD_DESCRIBE_SUBNETS, sizeof(d), &d, sizeof(d)),
	    "unterminated subnet id");
}

/* A prefix is the first address of an aligned /28, within its count; one
 * past the count is not read.  Create asks for prefixes or addresses. */
static void
test_prefixes_checked(void **state)
{
	static struct msg_cloud_eni e;
	struct msg_cloud_prefixes p;
	struct msg_cloud_create_eni c;

	(void)state;
	base(MSG_CLOUD_ENI, &e);
	e.nprefixes = 2;
	e.prefixes[0] = IN4(0x0a000410);	/* 10.0.4.16/28 */
	e.prefixes[1] = IN4(0x0a000420);
	e.prefixes[2] = IN4(0x0a000421);	/* past the count */
	assert_null(validate_raw(PEER_CLOUDD, PEER_BROKER, MSG_CLOUD_ENI,
	    sizeof(e), &e, sizeof(e)));
	e.prefixes[1] = IN4(0x0a000428);	/* 10.0.4.40: not aligned */
	assert_string_equal(validate_raw(PEER_CLOUDD, PEER_BROKER,
	    MSG_CLOUD_ENI, sizeof(e), &e, sizeof(e)), "prefix not aligned");
	e.prefixes[1] = e.prefixes[0];
	assert_string_equal(validate_raw(PEER_CLOUDD, PEER_BROKER,
	    MSG_CLOUD_ENI, sizeof(e), &e, sizeof(e)), "prefix twice");
	e.prefixes[1] = IN4(0x0a000420);
	/* an address of the ENI's inside one of its prefixes: one address
	 * the pool could hand out twice */
	e.naddrs = 1;
	e.addrs[0] = IN4(0x0a00042f);		/* 10.0.4.47, in .32/28 */
	assert_string_equal(validate_raw(PEER_CLOUDD, PEER_BROKER,
	    MSG_CLOUD_ENI, sizeof(e), &e, sizeof(e)),
	    "an address of the eni in one of its prefixes");
	e.addrs[0] = IN4(0x0a000430);		/* 10.0.4.48: beside it */
	assert_null(validate_raw(PEER_CLOUDD, PEER_BROKER, MSG_CLOUD_ENI,
	    sizeof(e), &e, sizeof(e)));
	e.primary_ip = IN4(0x0a000411);	/* in .16/28 */
	assert_string_equal(validate_raw(PEER_CLOUDD, PEER_BROKER,
	    MSG_CLOUD_ENI, sizeof(e), &e, sizeof(e)),
	    "an address of the eni in one of its prefixes");
	e.primary_ip = IN4(0x0a000405);
	e.nbad_prefixes = MSG_MAX_ENI_ADDRS - 2;	/* 1 + 2 + 62 > 64 */
	assert_string_equal(validate_raw(PEER_CLOUDD, PEER_BROKER,
	    MSG_CLOUD_ENI, sizeof(e), &e, sizeof(e)),
	    "more addresses and prefixes than an ENI holds");
	e.nbad_prefixes = MSG_MAX_ENI_ADDRS - 3;
	assert_null(validate_raw(PEER_CLOUDD, PEER_BROKER, MSG_CLOUD_ENI,
	    sizeof(e), &e, sizeof(e)));
	/* IPv6 in the IPv4 fields: refused, the field named; an
	 * IPv4-mapped one is no IPv6 address at all */
	assert_int_equal(ip_addr_parse("2600:1f14::10", &e.addrs[0], NULL), 0);
	assert_string_equal(validate_raw(PEER_CLOUDD, PEER_BROKER,
	    MSG_CLOUD_ENI, sizeof(e), &e, sizeof(e)),
	    "eni address is IPv6, which enid does not take yet");
	e.addrs[0] = IN4(0x0a000430);
	assert_int_equal(ip_addr_parse("2600:1f14::", &e.prefixes[1], NULL), 0);
	assert_string_equal(validate_raw(PEER_CLOUDD, PEER_BROKER,
	    MSG_CLOUD_ENI, sizeof(e), &e, sizeof(e)),
	    "address of another family than the message's");
	e.prefixes[1].bytes[10] = e.prefixes[1].bytes[11] = 0xff;
	memset(e.prefixes[1].bytes, 0, 10);
	assert_string_equal(validate_raw(PEER_CLOUDD, PEER_BROKER,
	    MSG_CLOUD_ENI, sizeof(e), &e, sizeof(e)),
	    "prefix is no valid address, or a special one");
	e.prefixes[1] = IN4(0x0a000420);

	memset(&p, 0, sizeof(p));
	p.family = AF_INET;
	p.nprefixes = 1;
	p.prefixes[0] = IN4(0x0a00040f);
	assert_string_equal(validate_raw(PEER_BROKER, PEER_CLOUDD,
	    MSG_CLOUD_ASSIGN_PREFIXES, sizeof(p), &p, sizeof(p)),
	    "prefix not aligned");
	p.prefixes[0] = IN4(0x0a000400);
	assert_null(validate_raw(PEER_BROKER, PEER_CLOUDD,
	    MSG_CLOUD_ASSIGN_PREFIXES, sizeof(p), &p, sizeof(p)));
	p.count = 1;
	assert_string_equal(validate_raw(PEER_BROKER, PEER_CLOUDD,
	    MSG_CLOUD_ASSIGN_PREFIXES, sizeof(p), &p, sizeof(p)),
	    "both a prefix count and prefixes");
	p.nprefixes = 0;
	assert_null(validate_raw(PEER_BROKER, PEER_CLOUDD,
	    MSG_CLOUD_ASSIGN_PREFIXES, sizeof(p), &p, sizeof(p)));
	assert_string_equal(validate_raw(PEER_BROKER, PEER_CLOUDD,
	    MSG_CLOUD_UNASSIGN_PREFIXES, sizeof(p), &p, sizeof(p)),
	    "a prefix count to unassign");

	memset(&c, 0, sizeof(c));
	c.nprefixes = 1;
	assert_null(validate_raw(PEER_BROKER, PEER_CLOUDD,
	    MSG_CLOUD_CREATE_ENI, sizeof(c), &c, sizeof(c)));
	c.nsecondary = 1;
	assert_string_equal(validate_raw(PEER_BROKER, PEER_CLOUDD,
	    MSG_CLOUD_CREATE_ENI, sizeof(c), &c, sizeof(c)),
	    "both prefixes and secondary addresses");
	{
		static struct msg_cloud_instance in;

		base(MSG_CLOUD_INSTANCE, &in);
		strcpy(in.hypervisor, "nitro");
		assert_string_equal(validate_raw(PEER_CLOUDD, PEER_BROKER,
		    MSG_CLOUD_INSTANCE, sizeof(in), &in, sizeof(in)),
		    "prefixes_ok is not what the hypervisor says");
		in.prefixes_ok = 1;
		assert_null(validate_raw(PEER_CLOUDD, PEER_BROKER,
		    MSG_CLOUD_INSTANCE, sizeof(in), &in, sizeof(in)));
		strcpy(in.hypervisor, "xen");
		assert_non_null(validate_raw(PEER_CLOUDD, PEER_BROKER,
		    MSG_CLOUD_INSTANCE, sizeof(in), &in, sizeof(in)));
		in.bare_metal = 1;
		assert_null(validate_raw(PEER_CLOUDD, PEER_BROKER,
		    MSG_CLOUD_INSTANCE, sizeof(in), &in, sizeof(in)));
	}
	/* the answers flow back the way they came */
	assert_int_equal(msg_type_info(MSG_CLOUD_ASSIGN_PREFIXES)->
	    answers.single[0], MSG_CLOUD_PREFIXES_ASSIGNED);
	assert_int_equal(msg_type_info(MSG_CLOUD_UNASSIGN_PREFIXES)->
	    answers.single[0], MSG_CLOUD_DONE);
}

/* Send a datagram with a descriptor attached, as a compromised peer
 * could; msg is sz bytes. */
static void
send_with_fd(int sock, const void *msg, size_t sz, int fd)
{
	union {
		struct cmsghdr	hdr;
		char		b[CMSG_SPACE(sizeof(int))];
	} cbuf;
	struct iovec iov = { (void *)msg, sz };
	struct msghdr mh;
	struct cmsghdr *cm;

	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf.b;
	mh.msg_controllen = sizeof(cbuf.b);
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	assert_int_equal(sendmsg(sock, &mh, 0), (ssize_t)sz);
}

static void
test_rejects_descriptors(void **state)
{
	struct pair p;
	static struct msg m;
	struct msg_hdr h = { MSG_HELLO, 0, 4, 1, 0 };
	unsigned char buf[sizeof(h) + 4] = { 0 };
	const char *why;
	int fd = dup(0), probe;

	(void)state;
	memcpy(buf, &h, sizeof(h));
	pair_open(&p, PEER_BROKER, PEER_NETD);
	send_with_fd(p.a.fd, buf, sizeof(buf), fd);
	close(fd);
	assert_int_equal(msg_recv(&p.b, &m, &why), MSG_RECV_BAD);
	assert_string_equal(why, "message carries file descriptors");
	/* The received descriptor was closed, not leaked: the lowest free
	 * number is the one it had. */
	probe = dup(0);
	assert_int_equal(probe, fd);
	close(probe);
	pair_close(&p);
}

/*
 * A batch is checked message by message exactly as msg_recv checks one:
 * good ones pass in order, a bad one is named, and every descriptor the
 * batch carried is closed, also one on a message after the bad one.
 */
static void
test_batch_checks_each(void **state)
{
	struct pair p;
	static struct msg_batch b;
	const struct msg *m = NULL;
	struct msg_ping ping = { 0 };
	struct msg_hdr h = { MSG_PONG, 0, sizeof(ping), 9, 0 };
	unsigned char buf[sizeof(h) + sizeof(ping)] = { 0 };
	const char *why;
	int fd1 = dup(0), fd2 = dup(0), probe, probe2;
	uint32_t i;

	(void)state;
	memcpy(buf, &h, sizeof(h));
	pair_open(&p, PEER_NETD, PEER_BROKER);
	for (i = 1; i <= 3; i++) {
		ping.seq = i;
		assert_int_equal(msg_send(&p.a, MSG_PONG, i, &ping,
		    sizeof(ping)), 0);
	}
	send_with_fd(p.a.fd, buf, sizeof(buf), fd1);
	send_with_fd(p.a.fd, buf, sizeof(buf), fd2);
	close(fd1);
	close(fd2);
	assert_int_equal(msg_recv_batch(&p.b, &b), MSG_RECV_OK);
	assert_int_equal(b.n, 5);
	/* Both descriptors are closed already: the two lowest free numbers
	 * are the ones they had. */
	probe = dup(0);
	probe2 = dup(0);
	assert_int_equal(probe + probe2, fd1 + fd2);
	assert_true(probe == fd1 || probe == fd2);
	close(probe);
	close(probe2);
	for (i = 1; i <= 3; i++) {
		assert_int_equal(msg_batch_take(&p.b, &b, &m, &why),
		    MSG_RECV_OK);
		assert_int_equal(m->hdr.type, MSG_PONG);
		assert_int_equal(m->hdr.id, i);
	}
	assert_int_equal(msg_batch_take(&p.b, &b, &m, &why), MSG_RECV_BAD);
	assert_string_equal(why, "message carries file descriptors");
	pair_close(&p);
}

/* More than a batch waiting: a full batch, then the rest; then the end of
 * the channel, as msg_recv reports it. */
static void
test_batch_bounds_and_eof(void **state)
{
	struct pair p;
	static struct msg_batch b;
	const struct msg *m = NULL;
	struct msg_ping ping = { 0 };
	const char *why;
	uint32_t i, next = 1;

	(void)state;
	pair_open(&p, PEER_NETD, PEER_BROKER);
	for (i = 1; i <= MSG_BATCH_MAX + 3; i++) {
		ping.seq = i;
		assert_int_equal(msg_send(&p.a, MSG_PONG, i, &ping,
		    sizeof(ping)), 0);
	}
	assert_int_equal(msg_recv_batch(&p.b, &b), MSG_RECV_OK);
	assert_int_equal(b.n, MSG_BATCH_MAX);
	while (msg_batch_take(&p.b, &b, &m, &why) == MSG_RECV_OK)
		assert_int_equal(m->hdr.id, next++);
	assert_int_equal(msg_recv_batch(&p.b, &b), MSG_RECV_OK);
	assert_int_equal(b.n, 3);
	while (msg_batch_take(&p.b, &b, &m, &why) == MSG_RECV_OK)
		assert_int_equal(m->hdr.id, next++);
	assert_int_equal(next, MSG_BATCH_MAX + 4);
	assert_int_equal(msg_recv_batch(&p.b, &b), MSG_RECV_AGAIN);
	close(p.a.fd);
	assert_int_equal(msg_recv_batch(&p.b, &b), MSG_RECV_OK);
	assert_int_equal(msg_batch_take(&p.b, &b, &m, &why), MSG_RECV_EOF);
	assert_int_equal(msg_batch_take(&p.b, &b, &m, &why), MSG_RECV_AGAIN);
	close(p.b.fd);
}

/* An empty datagram reads as the end of the channel; descriptors on it
 * are closed all the same, on both receive paths. */
static void
test_empty_datagram_with_descriptors(void **state)
{
	struct pair p;
	static struct msg m;
	static struct msg_batch b;
	const struct msg *bm = NULL;
	const char *why;
	int fd, probe, batch;

	(void)state;
	for (batch = 0; batch < 2; batch++) {
		pair_open(&p, PEER_NETD, PEER_BROKER);
		fd = dup(0);
		send_with_fd(p.a.fd, "", 0, fd);
		close(fd);
		if (batch) {
			assert_int_equal(msg_recv_batch(&p.b, &b),
			    MSG_RECV_OK);
			assert_int_equal(msg_batch_take(&p.b, &b, &bm, &why),
			    MSG_RECV_EOF);
		} else
			assert_int_equal(msg_recv(&p.b, &m, &why),
			    MSG_RECV_EOF);
		probe = dup(0);
		assert_int_equal(probe, fd);
		close(probe);
		pair_close(&p);
	}
}

static void
test_rejects_oversized_datagram(void **state)
{
	struct pair p;
	static struct msg m;
	static unsigned char big[sizeof(struct msg) + 100];
	struct msg_hdr h = { MSG_HELLO, 0, sizeof(big) - 16, 1, 0 };
	const char *why;

	(void)state;
	memcpy(big, &h, sizeof(h));
	pair_open(&p, PEER_BROKER, PEER_NETD);
	assert_true(send(p.a.fd, big, sizeof(big), 0) > 0);
	assert_int_equal(msg_recv(&p.b, &m, &why), MSG_RECV_BAD);
	assert_string_equal(why, "datagram larger than any message");
	/* EOF after the peer closes. */
	close(p.a.fd);
	assert_int_equal(msg_recv(&p.b, &m, &why), MSG_RECV_EOF);
	close(p.b.fd);
}

static void
test_send_refuses_misuse(void **state)
{
	struct pair p;
	struct msg_hello h = { MSG_PROTO_VERSION };

	(void)state;
	pair_open(&p, PEER_NETD, PEER_BROKER);
	errno = 0;
	/* netd may not send HELLO, nor a wrong size, nor an unknown type. */
	assert_int_equal(msg_send(&p.a, MSG_HELLO, 1, &h, sizeof(h)), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(msg_send(&p.a, MSG_HELLO_ACK, 1, &h, sizeof(h)), -1);
	assert_int_equal(msg_send(&p.a, MSG_TYPE_COUNT, 1, &h, sizeof(h)), -1);
	pair_close(&p);
}

/* The table's flags, enforced by msg_recv on a fresh channel. */
static void
test_flags_enforced(void **state)
{
	struct pair p;
	static struct msg m;
	struct msg_hello hello = { MSG_PROTO_VERSION };
	struct msg_netd_policy pol;
	struct msg_netd_pod_rule pod;
	struct msg_ping ping = { 1 };
	const char *why;

	(void)state;
	memset(&pol, 0, sizeof(pol));
	base(MSG_NETD_ADD_POD, &pod);
	pair_open(&p, PEER_BROKER, PEER_NETD);
	p.b.greeted = false;
	p.b.permits = 0;
	/* Nothing but the handshake before the handshake. */
	assert_int_equal(msg_send(&p.a, MSG_PING, 1, &ping, sizeof(ping)), 0);
	assert_int_equal(msg_recv(&p.b, &m, &why), MSG_RECV_BAD);
	assert_string_equal(why, "message before the handshake");
	assert_false(p.b.greeted);
	assert_int_equal(msg_send(&p.a, MSG_HELLO, 2, &hello,
	    sizeof(hello)), 0);
	assert_int_equal(msg_recv(&p.b, &m, &why), MSG_RECV_OK);
	assert_true(p.b.greeted);
	/* HELLO is once only. */
	assert_int_equal(msg_send(&p.a, MSG_HELLO, 3, &hello,
	    sizeof(hello)), 0);
	assert_int_equal(msg_recv(&p.b, &m, &why), MSG_RECV_BAD);
	assert_string_equal(why, "message allowed only once, received again");
	/* A policy-gated request before the policy is refused... */
	assert_int_equal(msg_send(&p.a, MSG_NETD_ADD_POD, 4, &pod,
	    sizeof(pod)), 0);
	assert_int_equal(msg_recv(&p.b, &m, &why), MSG_RECV_BAD);
	assert_string_equal(why, "request before the policy was accepted");
	/* ...ungated ones pass... */
	assert_int_equal(msg_send(&p.a, MSG_PING, 5, &ping, sizeof(ping)), 0);
	assert_int_equal(msg_recv(&p.b, &m, &why), MSG_RECV_OK);
	/* ...the policy is accepted once, and only once... */
	assert_int_equal(msg_send(&p.a, MSG_NETD_POLICY, 6, &pol,
	    sizeof(pol)), 0);
	assert_int_equal(msg_recv(&p.b, &m, &why), MSG_RECV_OK);
	assert_int_equal(msg_send(&p.a, MSG_NETD_POLICY, 7, &pol,
	    sizeof(pol)), 0);
	assert_int_equal(msg_recv(&p.b, &m, &why), MSG_RECV_BAD);
	assert_string_equal(why, "message allowed only once, received again");
	/* ...and once the owner grants the permit, gated requests pass. */
	msg_chan_permit(&p.b, MSG_PERMIT_POLICY);
	assert_int_equal(msg_send(&p.a, MSG_NETD_ADD_POD, 8, &pod,
	    sizeof(pod)), 0);
	assert_int_equal(msg_recv(&p.b, &m, &why), MSG_RECV_OK);
	pair_close(&p);
}

/* Every type's flags are as the protocol needs them. */
static void
test_flag_table(void **state)
{
	unsigned int t;

	(void)state;
	for (t = 1; t < MSG_TYPE_COUNT; t++) {
		const struct msg_type_info *ti = msg_type_info(t);
		bool netd_request = ti->dirs == DIR_B2N &&
		    t != MSG_NETD_POLICY;

		/* Only the handshake is allowed before the handshake. */
		assert_int_equal(!!(ti->flags & MF_HANDSHAKE),
		    t == MSG_HELLO || t == MSG_HELLO_ACK);
		/* Every netd-only request waits for the policy. */
		assert_int_equal(!!(ti->flags & MF_POLICY), netd_request);
	}
	assert_true(msg_type_info(MSG_NETD_POLICY)->flags & MF_ONCE);
	assert_true(msg_type_info(MSG_HELLO)->flags & MF_ONCE);
	assert_true(msg_type_info(MSG_HELLO_ACK)->flags & MF_ONCE);
}

static void
test_names(void **state)
{
	(void)state;
	assert_string_equal(msg_type_name(MSG_NETD_SETUP_ENI), "NETD_SETUP_ENI");
	assert_string_equal(msg_type_name(MSG_TYPE_COUNT), "UNKNOWN");
	assert_string_equal(cloud_outcome_name(CO_SUBNET_FULL), "subnet-full");
	assert_string_equal(cloud_outcome_name(CO_MAX), "unknown");
	assert_string_equal(msg_status_name(ST_REFUSED), "refused");
}

/* The histogram's buckets: each bound belongs to its own bucket, one
 * microsecond more to the next, and past the last bound to the extra one. */
static void
test_hist_buckets(void **state)
{
	struct msg_hist h, sum;
	size_t i;

	(void)state;
	memset(&h, 0, sizeof(h));
	msg_hist_observe(&h, 0);
	msg_hist_observe(&h, 500);
	msg_hist_observe(&h, 501);
	msg_hist_observe(&h, 60000000);
	msg_hist_observe(&h, 60000001);
	msg_hist_observe(&h, UINT32_MAX);
	assert_int_equal(h.counts[0], 2);
	assert_int_equal(h.counts[1], 1);
	assert_int_equal(h.counts[MSG_HIST_NBOUNDS - 1], 1);
	assert_int_equal(h.counts[MSG_HIST_NBOUNDS], 2);
	assert_int_equal(msg_hist_count(&h), 6);
	assert_int_equal(h.sum_us, 0 + 500 + 501 + 60000000 + 60000001 +
	    (uint64_t)UINT32_MAX);
	for (i = 1; i < MSG_HIST_NBOUNDS; i++)
		assert_true(msg_hist_bounds_us[i] > msg_hist_bounds_us[i - 1]);
	memset(&sum, 0, sizeof(sum));
	msg_hist_add(&sum, &h);
	msg_hist_add(&sum, &h);
	assert_int_equal(msg_hist_count(&sum), 12);
	assert_int_equal(sum.sum_us, 2 * h.sum_us);
}

static const char *
stats_why(const struct msg_cloud_stats_answer *a)
{
	return validate_raw(PEER_CLOUDD, PEER_BROKER, MSG_CLOUD_STATS_ANSWER,
	    sizeof(*a), a, sizeof(*a));
}

/* cloudd's counters as the broker checks them: one good answer, then each
 * way a lying or broken cloudd could spoil it. */
static void
test_cloud_stats_checked(void **state)
{
	static struct msg_cloud_stats_answer good, a;
	struct msg_cloud_action_stats *e = &a.actions[0];
	const char *inconsistent = "cloud stats counters inconsistent";

	(void)state;
	memset(&good, 0, sizeof(good));
	good.nactions = 2;
	strcpy(good.actions[0].action, "AttachNetworkInterface");
	good.actions[0].calls = 4;		/* one still in flight */
	good.actions[0].latency.counts[0] = 2;
	good.actions[0].latency.counts[MSG_HIST_NBOUNDS] = 1;
	good.actions[0].errors = 2;
	good.actions[0].throttles = 1;
	good.actions[0].retries = 2;
	strcpy(good.actions[1].action, "AttachNetworkInterface");
	a = good;
	assert_null(stats_why(&a));
	a = good;
	a.nactions = MSG_STATS_ACTIONS + 1;
	assert_string_equal(stats_why(&a), "too many actions in cloud stats");
	a = good;
	a.actions[2].retries = 1;
	assert_string_equal(stats_why(&a),
	    "cloud stats entry past the count is not empty");
	a = good;
	a.nactions = 3;			/* the third has no name */
	assert_string_equal(stats_why(&a),
	    "cloud stats action name not alphanumeric");
	a = good;
	strcpy(e->action, "Attach-Network");
	assert_string_equal(stats_why(&a),
	    "cloud stats action name not alphanumeric");
	a = good;
	memset(e->action, 'A', sizeof(e->action));
	assert_string_equal(stats_why(&a),
	    "cloud stats action name not alphanumeric");
	a = good;
	e->calls = MSG_STATS_COUNT_MAX + 1;
	assert_string_equal(stats_why(&a), "cloud stats counter out of range");
	a = good;
	e->latency.counts[3] = 5;	/* more ended than started */
	assert_string_equal(stats_why(&a), inconsistent);
	a = good;
	e->latency.counts[3] = 2;
	assert_string_equal(stats_why(&a), inconsistent);
	a = good;
	e->errors = 4;			/* more failed than ended */
	assert_string_equal(stats_why(&a), inconsistent);
	a = good;
	e->throttles = 3;
	assert_string_equal(stats_why(&a), inconsistent);
	a = good;
	e->retries = 3;
	assert_string_equal(stats_why(&a), inconsistent);
}

/*
 * The answers column: every request the broker sends names at least one
 * answer, each answer is itself no request and flows back, and the
 * types that only answer or notify name none.
 */
static void
test_answers_column(void **state)
{
	unsigned int t, nreq = 0;

	(void)state;
	for (t = 1; t < MSG_TYPE_COUNT; t++) {
		const struct msg_type_info *ti = msg_type_info(t);
		const struct msg_answers *a = &ti->answers;
		enum msg_type all[4] = { a->single[0], a->single[1],
		    a->entry, a->end };
		bool request = false;
		unsigned int i, back;

		for (i = 0; i < 4; i++)
			if (all[i] != MSG_NONE)
				request = true;
		if (!request)
			continue;
		nreq++;
		/* sent by the broker only */
		assert_int_equal(ti->dirs & (DIR_N2B | DIR_C2B), 0);
		back = ((ti->dirs & DIR_B2N) ? DIR_N2B : 0) |
		    ((ti->dirs & DIR_B2C) ? DIR_C2B : 0);
		/* a stream has both its entry and its end */
		assert_int_equal(a->entry == MSG_NONE, a->end == MSG_NONE);
		for (i = 0; i < 4; i++) {
			const struct msg_type_info *ai;

			if (all[i] == MSG_NONE)
				continue;
			ai = msg_type_info(all[i]);
			assert_non_null(ai);
			assert_int_equal(ai->dirs & back, back);
			assert_int_equal(ai->answers.single[0], MSG_NONE);
			assert_int_equal(ai->answers.entry, MSG_NONE);
		}
	}
	assert_true(nreq >= 20);
	assert_int_equal(msg_type_info(MSG_LOG_LEVEL)->answers.single[0],
	    MSG_NONE);
	assert_int_equal(msg_type_info(MSG_PING)->answers.single[0], MSG_PONG);
	assert_int_equal(msg_type_info(MSG_NETD_DUMP_RULES)->answers.entry,
	    MSG_NETD_RULE);
}

static struct ip_addr
A6(const char *text)
{
	struct ip_addr a;

	assert_int_equal(ip_addr_parse(text, &a, NULL), 0);
	return a;
}

static const char *
check(enum msg_peer from, enum msg_peer to, enum msg_type type,
    const void *p, size_t size)
{
	return validate_raw(from, to, type, size, p, size);
}

/* The IPv6 fields cloudd fills, and the family of the requests. */
static void
test_ipv6_fields_checked(void **state)
{
	static struct msg_cloud_eni e;
	static struct msg_cloud_instance in;
	struct msg_cloud_subnet sn;
	struct msg_cloud_ips ips;
	struct msg_cloud_prefixes px;
	struct msg_cloud_assigned as;
	struct msg_cloud_create_eni c;
	uint32_t i;

	(void)state;
	/* an ENI's addresses and /80s */
	base(MSG_CLOUD_ENI, &e);
	e.naddrs6 = 2;
	e.addrs6[0] = A6("2600:1f14:abc:de00:1::5");
	e.addrs6[1] = A6("2600:1f14:abc:de00:2::9");
	e.nprefixes6 = 1;
	e.prefixes6[0] = A6("2600:1f14:abc:de00:3::");
	assert_null(check(PEER_CLOUDD, PEER_BROKER, MSG_CLOUD_ENI, &e,
	    sizeof(e)));
	e.addrs6[1] = A6("fe80::1");
	assert_string_equal(check(PEER_CLOUDD, PEER_BROKER, MSG_CLOUD_ENI,
	    &e, sizeof(e)), "eni IPv6 address not a usable IPv6 one");
	e.addrs6[1] = IN4(0x0a000001);
	assert_string_equal(check(PEER_CLOUDD, PEER_BROKER, MSG_CLOUD_ENI,
	    &e, sizeof(e)), "eni IPv6 address not a usable IPv6 one");
	e.addrs6[1] = e.addrs6[0];
	assert_string_equal(check(PEER_CLOUDD, PEER_BROKER, MSG_CLOUD_ENI,
	    &e, sizeof(e)), "IPv6 address twice");
	e.addrs6[1] = A6("2600:1f14:abc:de00:3::9");	/* in the /80 */
	assert_string_equal(check(PEER_CLOUDD, PEER_BROKER, MSG_CLOUD_ENI,
	    &e, sizeof(e)),
	    "an IPv6 address of the eni in one of its prefixes");
	e.addrs6[1] = A6("2600:1f14:abc:de00:2::9");
	e.prefixes6[0] = A6("2600:1f14:abc:de00:3:1::");	/* not /80 */
	assert_string_equal(check(PEER_CLOUDD, PEER_BROKER, MSG_CLOUD_ENI,
	    &e, sizeof(e)), "prefix not aligned");
	e.prefixes6[0] = A6("ff02::");
	assert_string_equal(check(PEER_CLOUDD, PEER_BROKER, MSG_CLOUD_ENI,
	    &e, sizeof(e)), "prefix is no valid address, or a special one");
	e.prefixes6[0] = A6("2600:1f14:abc:de00:3::");
	/* IPv6-only: no IPv4 address at all */
	e.ipv6_native = 1;
	assert_null(check(PEER_CLOUDD, PEER_BROKER, MSG_CLOUD_ENI, &e,
	    sizeof(e)));
	e.primary_ip = IN4(0x0a000005);
	assert_string_equal(check(PEER_CLOUDD, PEER_BROKER, MSG_CLOUD_ENI,
	    &e, sizeof(e)), "IPv6-only eni with IPv4 addresses");

	/* the VPC's CIDRs: IPv4 first, each family up to its cap */
	base(MSG_CLOUD_INSTANCE, &in);
	in.ncidrs = 2;
	assert_int_equal(ip_prefix_parse("10.0.0.0/16", &in.cidrs[0], NULL), 0);
	assert_int_equal(ip_prefix_parse("2600:1f14:abc:de00::/56",
	    &in.cidrs[1], NULL), 0);
	in.primary_ip6 = A6("2600:1f14:abc:de00::10");
	assert_int_equal(ip_prefix_parse("2600:1f14:abc:de00::/64",
	    &in.subnet_cidr6, NULL), 0);
	assert_null(check(PEER_CLOUDD, PEER_BROKER, MSG_CLOUD_INSTANCE, &in,
	    sizeof(in)));
	in.cidrs[2] = in.cidrs[0];
	in.ncidrs = 3;
	assert_string_equal(check(PEER_CLOUDD, PEER_BROKER,
	    MSG_CLOUD_INSTANCE, &in, sizeof(in)),
	    "VPC IPv4 CIDR after an IPv6 one");
	for (i = 0; i <= MSG_MAX_CIDRS; i++)
		in.cidrs[i] = in.cidrs[0];
	in.ncidrs = MSG_MAX_CIDRS + 1;
	assert_string_equal(check(PEER_CLOUDD, PEER_BROKER,
	    MSG_CLOUD_INSTANCE, &in, sizeof(in)), "too many CIDRs");
	in.ncidrs = 1;
	in.primary_ip6 = A6("::1");
	assert_string_equal(check(PEER_CLOUDD, PEER_BROKER,
	    MSG_CLOUD_INSTANCE, &in, sizeof(in)),
	    "instance primary IPv6 address not a usable IPv6 one");
	memset(&in.primary_ip6, 0, sizeof(in.primary_ip6));	/* none */
	assert_int_equal(ip_prefix_parse("2600:1f14:abc:de00::1/64",
	    &in.subnet_cidr6, NULL), 0);
	assert_string_equal(check(PEER_CLOUDD, PEER_BROKER,
	    MSG_CLOUD_INSTANCE, &in, sizeof(in)),
	    "instance subnet IPv6 CIDR not an IPv6 /64 network");

	/* a subnet: IPv6-only ones have no IPv4 CIDR, never 0/0 */
	base(MSG_CLOUD_SUBNET, &sn);
	sn.ipv6_state = IPV6_ST_ASSOCIATED;
	assert_int_equal(ip_prefix_parse("2600:1f14:abc:de00::/64", &sn.cidr6,
	    NULL), 0);
	assert_null(check(PEER_CLOUDD, PEER_BROKER, MSG_CLOUD_SUBNET, &sn,
	    sizeof(sn)));
	sn.ipv6_native = 1;
	assert_string_equal(check(PEER_CLOUDD, PEER_BROKER, MSG_CLOUD_SUBNET,
	    &sn, sizeof(sn)), "IPv6-only subnet with an IPv4 CIDR");
	memset(&sn.cidr, 0, sizeof(sn.cidr));
	assert_null(check(PEER_CLOUDD, PEER_BROKER, MSG_CLOUD_SUBNET, &sn,
	    sizeof(sn)));
	sn.ipv6_native = 0;
	assert_string_equal(check(PEER_CLOUDD, PEER_BROKER, MSG_CLOUD_SUBNET,
	    &sn, sizeof(sn)), BAD_CIDR("subnet CIDR"));
	base(MSG_CLOUD_SUBNET, &sn);
	sn.ipv6_state = IPV6_ST_DISASSOCIATED;
	assert_null(check(PEER_CLOUDD, PEER_BROKER, MSG_CLOUD_SUBNET, &sn,
	    sizeof(sn)));
	assert_int_equal(ip_prefix_parse("2600:1f14:abc:de00::/64", &sn.cidr6,
	    NULL), 0);
	assert_string_equal(check(PEER_CLOUDD, PEER_BROKER, MSG_CLOUD_SUBNET,
	    &sn, sizeof(sn)),
	    "subnet IPv6 CIDR not an associated IPv6 /64 network");
	assert_string_equal(cloud_ipv6_state_name(IPV6_ST_FAILING), "failing");
	assert_string_equal(cloud_ipv6_state_name(IPV6_ST_MAX), "unknown");

	/* requests: every address of the family asked for */
	base(MSG_CLOUD_ASSIGN_IPS, &ips);
	ips.family = AF_INET6;
	ips.naddrs = 1;
	ips.addrs[0] = A6("2600:1f14:abc:de00::20");
	assert_null(check(PEER_BROKER, PEER_CLOUDD, MSG_CLOUD_ASSIGN_IPS, &ips,
	    sizeof(ips)));
	ips.addrs[0] = IN4(0x0a000020);
	assert_string_equal(check(PEER_BROKER, PEER_CLOUDD,
	    MSG_CLOUD_ASSIGN_IPS, &ips, sizeof(ips)),
	    "address of another family than the message's");
	ips.family = AF_INET;
	assert_null(check(PEER_BROKER, PEER_CLOUDD, MSG_CLOUD_ASSIGN_IPS, &ips,
	    sizeof(ips)));
	ips.family = 0;
	assert_string_equal(check(PEER_BROKER, PEER_CLOUDD,
	    MSG_CLOUD_UNASSIGN_IPS, &ips, sizeof(ips)),
	    "address request of no known family");
	base(MSG_CLOUD_ASSIGN_PREFIXES, &px);
	px.family = AF_INET6;
	px.nprefixes = 1;
	px.prefixes[0] = A6("2600:1f14:abc:de00:7::");
	assert_null(check(PEER_BROKER, PEER_CLOUDD, MSG_CLOUD_ASSIGN_PREFIXES,
	    &px, sizeof(px)));
	px.prefixes[0] = A6("2600:1f14:abc:de00:7::10");
	assert_string_equal(check(PEER_BROKER, PEER_CLOUDD,
	    MSG_CLOUD_ASSIGN_PREFIXES, &px, sizeof(px)), "prefix not aligned");
	/* answers: one family throughout */
	base(MSG_CLOUD_ASSIGNED, &as);
	as.naddrs = 2;
	as.addrs[0] = A6("2600:1f14:abc:de00::20");
	as.addrs[1] = IN4(0x0a000020);
	assert_string_equal(check(PEER_CLOUDD, PEER_BROKER,
	    MSG_CLOUD_ASSIGNED, &as, sizeof(as)),
	    "address of another family than the message's");
	as.addrs[1] = A6("2600:1f14:abc:de00::21");
	assert_null(check(PEER_CLOUDD, PEER_BROKER, MSG_CLOUD_ASSIGNED, &as,
	    sizeof(as)));

	/* create: one IPv6 address at most, never with prefixes */
	memset(&c, 0, sizeof(c));
	c.nipv6 = 1;
	c.nsecondary = 3;
	assert_null(check(PEER_BROKER, PEER_CLOUDD, MSG_CLOUD_CREATE_ENI, &c,
	    sizeof(c)));
	c.nsecondary = 0;
	c.nprefixes = 1;
	assert_string_equal(check(PEER_BROKER, PEER_CLOUDD,
	    MSG_CLOUD_CREATE_ENI, &c, sizeof(c)),
	    "both prefixes and IPv6 addresses");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_type_round_trips),
		cmocka_unit_test(test_answers_column),
		cmocka_unit_test(test_fields_survive),
		cmocka_unit_test(test_rejects_unknown_type),
		cmocka_unit_test(test_ipv6_only_eni_gateway),
		cmocka_unit_test(test_rejects_wrong_direction),
		cmocka_unit_test(test_pod_rule_addr6),
		cmocka_unit_test(test_rejects_wrong_length),
		cmocka_unit_test(test_rejects_unterminated_strings),
		cmocka_unit_test(test_rejects_bad_values),
		cmocka_unit_test(test_every_meaning_check),
		cmocka_unit_test(test_snat_state_differs),
		cmocka_unit_test(test_array_entries_checked_within_count),
		cmocka_unit_test(test_prefixes_checked),
		cmocka_unit_test(test_ipv6_fields_checked),
		cmocka_unit_test(test_rejects_descriptors),
		cmocka_unit_test(test_rejects_oversized_datagram),
		cmocka_unit_test(test_send_refuses_misuse),
		cmocka_unit_test(test_flags_enforced),
		cmocka_unit_test(test_batch_checks_each),
		cmocka_unit_test(test_batch_bounds_and_eof),
		cmocka_unit_test(test_empty_datagram_with_descriptors),
		cmocka_unit_test(test_flag_table),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_hist_buckets),
		cmocka_unit_test(test_cloud_stats_checked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
