/*
 * libFuzzer target for enid-cloudd's EC2 answer parsing: the first byte
 * picks the action, the rest is the answer.  Whatever parses is also run
 * through the checks that stand between the parser and the broker, and
 * what those pass on must be what the broker's checker takes: for the
 * IPv6 fields, usable IPv6 addresses and aligned /80s within their caps,
 * the primary first, what was left out counted.
 *
 *   make fuzz-ec2-xml [FUZZ_SECONDS=N]
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ec2.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * An existence check asked about the first ids the answer names (so that
 * marking gets past "not asked for"), the last one left out when the
 * input's length is odd (so that it fails on one too).  On success, every
 * entry must have been asked for, have a state and be the only one naming
 * its instance; exists only where named.
 */
static void
check_instances(const struct ec2_answer *a, bool leave_last)
{
	static struct msg_cloud_check_instances m;
	uint8_t exists[MSG_MAX_INSTANCE_IDS], named[MSG_MAX_INSTANCE_IDS];
	char err[256];
	uint32_t i, j, k;
	int rc;

	memset(&m, 0, sizeof(m));
	for (i = 0; i < a->nitems && m.nids < MSG_MAX_INSTANCE_IDS; i++)
		if (i + 1 < a->nitems || !leave_last)
			msg_strlcpy(m.ids[m.nids++], a->list.states[i].id,
			    MSG_ID_LEN);
	memset(exists, 0, sizeof(exists));
	memset(named, 0, sizeof(named));
	rc = ec2_instances_mark(&m, a->list.states, a->nitems, exists, named,
	    err, sizeof(err));
	if (rc == -1) {
		if (strlen(err) >= sizeof(err))
			__builtin_trap();
		return;
	}
	for (i = 0; i < m.nids; i++) {
		if (exists[i] > named[i])
			__builtin_trap();
		for (k = 0, j = 0; j < a->nitems; j++)
			k += strcmp(m.ids[i], a->list.states[j].id) == 0;
		if (k > 1)
			__builtin_trap();
	}
	for (j = 0; j < a->nitems; j++) {
		if (a->list.states[j].state[0] == '\0')
			__builtin_trap();
		for (k = 0, i = 0; i < m.nids; i++)
			k += strcmp(m.ids[i], a->list.states[j].id) == 0;
		if (k == 0)
			__builtin_trap();
	}
}

#define CHECK(x)	do { if (!(x)) __builtin_trap(); } while (0)

static bool
usable6(const struct ip_addr *a)
{
	return ip_addr_valid(a) && a->family == AF_INET6 &&
	    !ip_addr_is_special(a) && ip_addr_ec2_service(a) == NULL;
}

/* An ENI through ec2_eni_to_msg_noting: what it passes on holds. */
static void
check_eni(const struct ec2_eni *e)
{
	static struct msg_cloud_eni m;
	struct ec2_left_out lo;
	struct ip_prefix p;
	char err[256];
	uint32_t i, j;

	if (ec2_eni_to_msg_noting(e, &m, err, sizeof(err), &lo) == -1) {
		CHECK(strlen(err) < sizeof(err));
		return;
	}
	CHECK(m.naddrs6 <= MSG_MAX_ENI_ADDRS6);
	CHECK(m.nprefixes6 <= MSG_MAX_ENI_PREFIXES6);
	CHECK(m.nbad_addrs6 <= MSG_MAX_LEFT_OUT);
	CHECK(m.nbad_prefixes6 <= MSG_MAX_LEFT_OUT);
	CHECK(m.naddrs6 + m.nbad_addrs6 == e->naddrs6 + e->addrs6_dropped ||
	    m.nbad_addrs6 == MSG_MAX_LEFT_OUT);
	CHECK((m.nbad_addrs6 > e->addrs6_dropped) == (lo.addr6[0] != '\0'));
	CHECK(m.ipv6_native <= 1);
	if (m.ipv6_native)
		CHECK(m.naddrs == 0 && m.nprefixes == 0 &&
		    ip_addr_is_unspecified(&m.primary_ip));
	for (i = 0; i < m.naddrs6; i++) {
		CHECK(usable6(&m.addrs6[i]));
		for (j = 0; j < i; j++)
			CHECK(!ip_addr_eq(&m.addrs6[i], &m.addrs6[j]));
	}
	/* the one marked primary, if it passed, comes first */
	for (i = 0; i < e->naddrs6; i++)
		if (e->addr6_primary[i] && m.naddrs6 > 0) {
			struct ip_addr a;

			if (ec2_ip6_parse(e->addrs6[i], &a, NULL) == 0)
				CHECK(ip_addr_eq(&a, &m.addrs6[0]));
			break;
		}
	for (i = 0; i < m.nprefixes6; i++) {
		p = msg_prefix_of(&m.prefixes6[i]);
		CHECK(usable6(&p.addr) && p.len == MSG_PREFIX6_LEN);
		CHECK(ip_prefix_is_network(&p));
		CHECK(!ec2_prefix6_holds_service(&p));
		for (j = 0; j < m.naddrs6; j++)
			CHECK(!ip_prefix_contains(&p, &m.addrs6[j]));
		for (j = 0; j < i; j++)
			CHECK(!ip_addr_eq(&m.prefixes6[i], &m.prefixes6[j]));
	}
}

static void
check_subnet(const struct ec2_subnet *s)
{
	static const struct ip_prefix zero;
	struct msg_cloud_subnet m;
	char err[256], note[160];

	memset(&m, 0, sizeof(m));
	if (ec2_subnet6_to_msg(s, &m, err, sizeof(err), note,
	    sizeof(note)) == -1) {
		CHECK(strlen(err) < sizeof(err));
		return;
	}
	CHECK(strlen(note) < sizeof(note));
	CHECK(m.ipv6_state < IPV6_ST_MAX && m.ipv6_native <= 1);
	if (m.ipv6_state == IPV6_ST_ASSOCIATED) {
		CHECK(usable6(&m.cidr6.addr) && m.cidr6.len == 64);
		CHECK(ip_prefix_is_network(&m.cidr6));
	} else {
		CHECK(memcmp(&m.cidr6, &zero, sizeof(zero)) == 0);
	}
	if (m.ipv6_native)
		CHECK(memcmp(&m.cidr, &zero, sizeof(zero)) == 0);
}

/* An IPv6 assign's or unassign's lists: each entry either refused or a
 * usable value. */
static void
check_assigned6(const struct ec2_answer *a)
{
	struct ip_addr x;
	uint32_t i;

	CHECK(a->naddrs6 <= MSG_MAX_ENI_ADDRS);
	CHECK(a->nprefixes6 <= MSG_MAX_ENI_PREFIXES);
	for (i = 0; i < a->naddrs6; i++)
		if (ec2_ip6_parse(a->addrs6[i], &x, NULL) == 0)
			CHECK(usable6(&x));
	for (i = 0; i < a->nprefixes6; i++)
		if (ec2_prefix6_parse(a->prefixes6[i], &x, NULL) == 0)
			CHECK(usable6(&x));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ec2_answer a;
	struct msg_cloud_eni m;
	enum ec2_action act;
	char err[256];
	uint32_t i, v;

	if (size < 1)
		return 0;
	act = (enum ec2_action)(data[0] % EC2_ACTION_COUNT);
	if (ec2_parse(act, (const char *)data + 1, size - 1, &a, err,
	    sizeof(err)) == -1) {
		/* the error message is always a terminated string */
		if (strlen(err) >= sizeof(err))
			__builtin_trap();
		return 0;
	}
	(void)ec2_code_ok(a.code);
	(void)ec2_request_id_ok(a.request_id);
	ec2_sanitize(a.message);
	if (a.has_eni) {
		(void)ec2_eni_to_msg(&a.eni, &m, err, sizeof(err), NULL, 0);
		check_eni(&a.eni);
	}
	switch (act) {
	case EC2_DESCRIBE_ENIS:
		for (i = 0; i < a.nitems; i++) {
			(void)ec2_eni_to_msg(&a.list.enis[i], &m, err,
			    sizeof(err), NULL, 0);
			check_eni(&a.list.enis[i]);
		}
		break;
	case EC2_DESCRIBE_INSTANCES:
		for (i = 0; i < a.nitems; i++) {
			uint32_t j;

			for (j = 0; j < a.list.instances[i].nenis; j++) {
				(void)ec2_eni_to_msg(
				    &a.list.instances[i].enis[j], &m, err,
				    sizeof(err), NULL, 0);
				check_eni(&a.list.instances[i].enis[j]);
			}
		}
		break;
	case EC2_DESCRIBE_INSTANCE_TYPES:
		for (i = 0; i < a.nitems; i++) {
			uint8_t ok;
			uint32_t per;

			(void)ec2_uint(a.list.types[i].max_enis, 64, &v);
			if (ec2_type_ipv6(&a.list.types[i], &ok, &per) == 0)
				CHECK(ok <= 1 &&
				    per <= EC2_TYPE_MAX_ENI_ADDRS);
		}
		break;
	case EC2_DESCRIBE_SUBNETS:
		for (i = 0; i < a.nitems; i++)
			check_subnet(&a.list.subnets[i]);
		break;
	case EC2_ASSIGN_IPV6:
	case EC2_UNASSIGN_IPV6:
		check_assigned6(&a);
		break;
	case EC2_CHECK_INSTANCES:
		check_instances(&a, size & 1);
		break;
	default:
		break;
	}
	ec2_answer_free(&a);
	return 0;
}
