/*
 * The broker's intents: each becomes one or more cloud calls under the
 * intent's deadline, and exactly one answer (or a stream of entries ended
 * by CLOUD_DONE).  Every field of an answer is checked (ids, MACs,
 * addresses) before it is copied into a message for the broker.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "cloudd.h"
#include "log.h"

/* Run a step that ends the current one, then leave. */
#define THEN(call)	do { call; return; } while (0)

static void	intent_next(struct intent *it);

static const char *
intent_name(const struct intent *it)
{
	return msg_type_name(it->type);
}

static void
intent_free(struct intent *it)
{
	struct cloudd *cd = it->cd;

	TAILQ_REMOVE(&cd->intents, it, entry);
	cd->nintents--;
	free(it->inst);
	free(it->listed);
	free(it);
	peer_resume(&cd->peer);		/* room for another intent */
}

static void
intent_log(const struct intent *it, const struct msg_cloud_status *st)
{
	unsigned long long ms = (unsigned long long)(now_ms() - it->started);

	if (st->outcome == CO_OK)
		log_debug("intent %u %s: ok in %llu ms", it->id,
		    intent_name(it), ms);
	else
		(it->refused ? log_errorx : log_info)("intent %u %s: %s in "
		    "%llu ms: %s%s%s%s%s%s", it->id, intent_name(it),
		    cloud_outcome_name(st->outcome), ms, st->code,
		    st->code[0] ? ": " : "", st->message,
		    st->request_id[0] ? " (request " : "", st->request_id,
		    st->request_id[0] ? ")" : "");
}

/* The final answer, with st, for any intent type; frees the intent. */
static void
intent_reply(struct intent *it, const struct msg_cloud_status *st)
{
	struct cloudd *cd = it->cd;

	intent_log(it, st);
	switch (it->type) {
	case MSG_CLOUD_DESCRIBE_INSTANCE: {
		struct msg_cloud_instance *m = it->inst;

		if (st->outcome != CO_OK) {
			memset(m, 0, sizeof(*m));
			/* none: a zeroed address has no family */
			m->primary_ip = ip_addr_from_in(0);
		}
		m->st = *st;
		cloudd_send(cd, MSG_CLOUD_INSTANCE, it->id, m, sizeof(*m));
		break;
	}
	case MSG_CLOUD_CREATE_ENI: {
		struct msg_cloud_eni m;

		memset(&m, 0, sizeof(m));
		m.st = *st;
		m.device_index = -1;
		m.primary_ip = ip_addr_from_in(0);	/* none */
		cloudd_send(cd, MSG_CLOUD_ENI, it->id, &m, sizeof(m));
		break;
	}
	case MSG_CLOUD_ATTACH: {
		struct msg_cloud_attached m;

		memset(&m, 0, sizeof(m));
		m.st = *st;
		cloudd_send(cd, MSG_CLOUD_ATTACHED, it->id, &m, sizeof(m));
		break;
	}
	case MSG_CLOUD_ASSIGN_IPS: {
		struct msg_cloud_assigned m;

		memset(&m, 0, sizeof(m));
		m.st = *st;
		cloudd_send(cd, MSG_CLOUD_ASSIGNED, it->id, &m, sizeof(m));
		break;
	}
	case MSG_CLOUD_ASSIGN_PREFIXES: {
		struct msg_cloud_prefixes_assigned m;

		memset(&m, 0, sizeof(m));
		m.st = *st;
		cloudd_send(cd, MSG_CLOUD_PREFIXES_ASSIGNED, it->id, &m,
		    sizeof(m));
		break;
	}
	case MSG_CLOUD_CHECK_INSTANCES: {
		struct msg_cloud_instances m;

		/* A failed check claims nothing: no entry, so no instance
		 * can be taken for gone by a reader that skips st. */
		memset(&m, 0, sizeof(m));
		m.st = *st;
		if (st->outcome == CO_OK) {
			m.nids = it->req.ci.nids;
			memcpy(m.exists, it->exists, m.nids);
		}
		cloudd_send(cd, MSG_CLOUD_INSTANCES, it->id, &m, sizeof(m));
		break;
	}
	default: {
		struct msg_cloud_done m;

		memset(&m, 0, sizeof(m));
		m.st = *st;
		m.count = it->sent;
		cloudd_send(cd, MSG_CLOUD_DONE, it->id, &m, sizeof(m));
		break;
	}
	}
	intent_free(it);
}

static void
intent_fail(struct intent *it, enum cloud_outcome outcome, const char *fmt,
    ...) __attribute__((format(printf, 3, 4)));

static void
intent_fail(struct intent *it, enum cloud_outcome outcome, const char *fmt,
    ...)
{
	struct msg_cloud_status st;
	va_list ap;

	memset(&st, 0, sizeof(st));
	st.outcome = outcome;
	va_start(ap, fmt);
	vsnprintf(st.message, sizeof(st.message), fmt, ap);
	va_end(ap);
	ec2_sanitize(st.message);
	/* cloudd's own verdict (an answer that fails its checks): an
	 * error line, where the cloud's own failures are news. */
	it->refused = true;
	intent_reply(it, &st);
}

/* ---- call plumbing ---- */

static void	intent_call_cb(struct cloud_call *c,
		    const struct msg_cloud_status *st,
		    const struct ec2_answer *a, const char *body, size_t len,
		    void *arg);

/* The call may end, and the intent be answered and freed, before these
 * return: it is not touched afterwards unless the call never started. */
static void
intent_ec2(struct intent *it, enum ec2_action action, struct ec2_form *f,
    bool idempotent)
{
	if (cloud_ec2(it->cd, action, f, it->deadline, idempotent,
	    intent_call_cb, it) == -1)
		intent_fail(it, CO_TRANSIENT, "%s: out of memory",
		    ec2_action_name(action));
}

static void
intent_imds(struct intent *it, const char *path)
{
	if (cloud_imds(it->cd, path, it->deadline, intent_call_cb, it) == -1)
		intent_fail(it, CO_TRANSIENT, "IMDS %s: out of memory", path);
}

/* Steps of each intent, advanced by intent_step(). */
static void	intent_step(struct intent *it,
		    const struct msg_cloud_status *st,
		    const struct ec2_answer *a, const char *body, size_t len);

static bool	di_step_optional(const struct intent *it);

static void
intent_call_cb(struct cloud_call *c, const struct msg_cloud_status *st,
    const struct ec2_answer *a, const char *body, size_t len, void *arg)
{
	struct intent *it = arg;

	/* A MAC's IPv6 metadata is absent (404) on an interface without
	 * IPv6: none, and describe-instance goes on. */
	if (st->outcome == CO_NOT_FOUND && c->kind == CALL_IMDS &&
	    it->type == MSG_CLOUD_DESCRIBE_INSTANCE && di_step_optional(it)) {
		intent_step(it, st, NULL, NULL, 0);
		return;
	}
	if (st->outcome != CO_OK && !(a != NULL && a->is_error)) {
		intent_reply(it, st);
		return;
	}
	intent_step(it, st, a, body, len);
}

/* ---- describe-instance ---- */

/*
 * IMDS first (instance id, MAC, VPC CIDRs, instance type: no API
 * latency), then DescribeInstances and DescribeInstanceTypes at once:
 * the type comes from IMDS, so the second call need not wait for the
 * first (start-up is on every node's critical path), and the type EC2
 * describes must be IMDS's.
 */
enum {
	DI_INSTANCE_ID = 0,
	DI_MAC,
	DI_CIDRS,
	DI_CIDRS6,		/* the VPC's IPv6 blocks: 404 is none */
	DI_IPV6S,		/* the primary ENI's IPv6 addresses: likewise */
	DI_SUBNET6,		/* its subnet's IPv6 block: likewise */
	DI_TYPE_NAME,
	DI_DESCRIBE,
};

static bool
di_step_optional(const struct intent *it)
{
	return it->step == DI_CIDRS6 || it->step == DI_IPV6S ||
	    it->step == DI_SUBNET6;
}

/* The MAC's IPv6 metadata, each step's answer (body NULL: a 404, none).
 * What is not usable is left out with an error line, never the start's
 * failure: a node without IPv6 starts as before. */
static void
di_ipv6(struct intent *it, const char *body, size_t len)
{
	struct msg_cloud_instance *m = it->inst;
	char bad[160];
	const char *why;
	uint32_t n, nbad;

	switch (it->step) {
	case DI_CIDRS6:
		if (body == NULL)
			break;
		if (imds_cidr6_lines(body, len, 32, 64, &m->cidrs[m->ncidrs],
		    MSG_MAX_CIDRS6, &n, &nbad, bad, sizeof(bad)) == -1) {
			log_errorx("IMDS vpc-ipv6-cidr-blocks: not lines of "
			    "text; the VPC's IPv6 blocks left out");
			break;
		}
		m->ncidrs += n;
		if (nbad > 0)
			log_errorx("IMDS vpc-ipv6-cidr-blocks: %u left out, "
			    "not IPv6 blocks of /32 to /64 a host may use "
			    "(first %s)", nbad, bad);
		break;
	case DI_IPV6S:
		if (body == NULL)
			break;
		if (imds_ip6_first(body, len, &m->primary_ip6, bad,
		    sizeof(bad), &why) == -1 && why != NULL)
			log_errorx("IMDS ipv6s: primary IPv6 address \"%s\" "
			    "left out: %s", bad, why);
		break;
	case DI_SUBNET6:
		if (body == NULL)
			break;
		if (imds_cidr6_lines(body, len, 64, 64, &m->subnet_cidr6, 1,
		    &n, &nbad, bad, sizeof(bad)) == -1)
			log_errorx("IMDS subnet-ipv6-cidr-blocks: not lines "
			    "of text; left out");
		else if (nbad > 0)
			log_errorx("IMDS subnet-ipv6-cidr-blocks: %u left out "
			    "(first %s)", nbad, bad);
		break;
	}
}

/* DescribeInstances' answer into it->inst; -1 with st saying why. */
static int
di_described(struct intent *it, const struct ec2_answer *a,
    struct msg_cloud_status *st)
{
	struct cloudd *cd = it->cd;
	struct msg_cloud_instance *m = it->inst;
	const struct ec2_instance *in;
	const struct ec2_eni *p = NULL;
	uint8_t mac[6];
	uint32_t i, dev;

#define DI_FAIL(...) do {						\
	cloud_status(st, CO_FATAL, "", __VA_ARGS__);			\
	return -1;							\
} while (0)
	if (a->nitems != 1)
		DI_FAIL("DescribeInstances: %u instances in the answer for %s",
		    a->nitems, m->instance_id);
	in = &a->list.instances[0];
	if (strcmp(in->id, m->instance_id) != 0)
		DI_FAIL("DescribeInstances: answer is about another instance");
	if (!ec2_name_ok(in->type, sizeof(m->instance_type)) ||
	    !ec2_name_ok(in->az, sizeof(m->az)) ||
	    !ec2_id_ok(in->subnet_id, "subnet-") ||
	    !ec2_id_ok(in->vpc_id, "vpc-"))
		DI_FAIL("DescribeInstances: invalid type, zone, subnet or VPC "
		    "for %s", m->instance_id);
	if (strcmp(in->type, m->instance_type) != 0)
		DI_FAIL("DescribeInstances: %s is a %s, IMDS says %s",
		    m->instance_id, in->type, m->instance_type);
	for (i = 0; i < in->nenis; i++) {
		if (!in->enis[i].attached ||
		    ec2_uint(in->enis[i].device_index, 1024, &dev) == -1 ||
		    dev != 0)
			continue;
		p = &in->enis[i];
	}
	if (p == NULL)
		DI_FAIL("DescribeInstances: %s has no interface at device "
		    "index 0", m->instance_id);
	if (!ec2_id_ok(p->id, "eni-") || mac_parse(p->mac, mac) == -1)
		DI_FAIL("DescribeInstances: invalid primary interface id, MAC "
		    "or address");
	/* An IPv6-only primary interface has no IPv4 address: 0.0.0.0.
	 * DescribeInstances' interfaces carry no ipv6Native (that is
	 * DescribeNetworkInterfaces'): one without an IPv4 address and with
	 * an IPv6 one is such an interface too. */
	if (p->private_ip[0] == '\0' && (strcmp(p->ipv6_native, "true") ==
	    0 || p->naddrs6 > 0))
		m->primary_ip = ip_addr_from_in(0);
	else if (ec2_ip4_parse(p->private_ip, &m->primary_ip) == -1)
		DI_FAIL("DescribeInstances: invalid primary interface id, MAC "
		    "or address");
	if (memcmp(mac, it->mac, 6) != 0)
		DI_FAIL("DescribeInstances: primary interface MAC %s differs "
		    "from IMDS's", p->mac);
	for (i = 0; i < p->ngroups; i++)
		if (!ec2_id_ok(p->groups[i], "sg-"))
			DI_FAIL("DescribeInstances: invalid security group "
			    "\"%s\"", p->groups[i]);
	msg_strlcpy(m->az, in->az, sizeof(m->az));
	msg_strlcpy(m->region, cd->region, sizeof(m->region));
	msg_strlcpy(m->primary_eni, p->id, sizeof(m->primary_eni));
	memcpy(m->primary_mac, mac, 6);
	msg_strlcpy(m->subnet_id, in->subnet_id, sizeof(m->subnet_id));
	msg_strlcpy(m->vpc_id, in->vpc_id, sizeof(m->vpc_id));
	m->nsgs = p->ngroups;
	for (i = 0; i < p->ngroups; i++)
		msg_strlcpy(m->sgs[i], p->groups[i], sizeof(m->sgs[i]));
	msg_strlcpy(cd->vpc_id, in->vpc_id, sizeof(cd->vpc_id));
	return 0;
}

/* DescribeInstanceTypes' answer into it->inst's limits. */
static int
di_typed(struct intent *it, const struct ec2_answer *a,
    struct msg_cloud_status *st)
{
	struct msg_cloud_instance *m = it->inst;
	const struct ec2_instance_type *t;
	char enis[sizeof(t->max_enis)], ips[sizeof(t->ipv4_per_eni)];

	if (a->nitems != 1 || strcmp(a->list.types[0].name,
	    m->instance_type) != 0)
		DI_FAIL("DescribeInstanceTypes: no single answer for %s",
		    m->instance_type);
	t = &a->list.types[0];
	/* The cloud's figures as they are, however far past enid's
	 * maxima: the broker caps and warns (eni.c, engine_start). */
	if (ec2_type_limits(t, &m->max_enis, &m->ips_per_eni) == -1) {
		memcpy(enis, t->max_enis, sizeof(enis));
		memcpy(ips, t->ipv4_per_eni, sizeof(ips));
		ec2_sanitize(enis);
		ec2_sanitize(ips);
		DI_FAIL("DescribeInstanceTypes: invalid limits for %s: "
		    "\"%s\" ENIs of \"%s\" addresses (1 to %u of 1 to %u)",
		    m->instance_type, enis, ips, EC2_TYPE_MAX_ENIS,
		    EC2_TYPE_MAX_ENI_ADDRS);
	}
	if (strcmp(t->bare_metal, "true") != 0 &&
	    strcmp(t->bare_metal, "false") != 0 && t->bare_metal[0] != '\0')
		DI_FAIL("DescribeInstanceTypes: bareMetal of %s is neither "
		    "true nor false", m->instance_type);
	if (t->hypervisor[0] != '\0' &&
	    !ec2_name_ok(t->hypervisor, sizeof(m->hypervisor)))
		DI_FAIL("DescribeInstanceTypes: invalid hypervisor for %s",
		    m->instance_type);
	/* Told only for the kubelet's pod cap (enidctl show limits): not
	 * told is 0, not a failure; told wrong is. */
	if (t->vcpus[0] != '\0' &&
	    (ec2_uint(t->vcpus, MSG_MAX_VCPUS, &m->vcpus) == -1 ||
	    m->vcpus == 0))
		DI_FAIL("DescribeInstanceTypes: invalid vCPU count for %s",
		    m->instance_type);
	if (ec2_type_ipv6(t, &m->ipv6_supported, &m->ipv6_per_eni) == -1)
		DI_FAIL("DescribeInstanceTypes: invalid ipv6Supported or "
		    "ipv6AddressesPerInterface for %s", m->instance_type);
	msg_strlcpy(m->hypervisor, t->hypervisor, sizeof(m->hypervisor));
	m->bare_metal = strcmp(t->bare_metal, "true") == 0;
	m->prefixes_ok = m->bare_metal || strcmp(t->hypervisor, "nitro") == 0;
	return 0;
#undef DI_FAIL
}

/* One of the two calls ended (fail: how, or NULL if it went well).  The
 * answer goes once both have; if both failed, it is DescribeInstances'
 * failure, as when the two went one after the other. */
static void
di_call_end(struct intent *it, enum ec2_action action,
    const struct msg_cloud_status *fail)
{
	struct msg_cloud_status st;
	int i;

	if (fail != NULL)
		it->di_st[action == EC2_DESCRIBE_INSTANCES ? 0 : 1] = *fail;
	if (--it->di_pending > 0)
		return;
	for (i = 0; i < 2; i++)
		if (it->di_st[i].outcome != CO_OK)
			THEN(intent_reply(it, &it->di_st[i]));
	cloud_status(&st, CO_OK, "", "%s", "");
	intent_reply(it, &st);
}

static void
di_call_cb(struct cloud_call *c, const struct msg_cloud_status *st,
    const struct ec2_answer *a, const char *body, size_t len, void *arg)
{
	struct intent *it = arg;
	struct msg_cloud_status bad;
	int rc;

	(void)body;
	(void)len;
	if (st->outcome != CO_OK)
		THEN(di_call_end(it, c->action, st));
	if (a == NULL || a->is_error) {
		cloud_status(&bad, CO_FATAL, "", "%s: no answer to read",
		    ec2_action_name(c->action));
		THEN(di_call_end(it, c->action, &bad));
	}
	rc = c->action == EC2_DESCRIBE_INSTANCES ? di_described(it, a, &bad) :
	    di_typed(it, a, &bad);
	di_call_end(it, c->action, rc == -1 ? &bad : NULL);
}

/* Start one of the two; it is not touched afterwards (the other's end
 * may answer and free it). */
static void
di_ec2(struct intent *it, enum ec2_action action, struct ec2_form *f)
{
	struct msg_cloud_status st;

	if (cloud_ec2(it->cd, action, f, it->deadline, true, di_call_cb,
	    it) == 0)
		return;
	cloud_status(&st, CO_TRANSIENT, "", "%s: out of memory",
	    ec2_action_name(action));
	di_call_end(it, action, &st);
}

/* ---- describe-subnets and describe-enis: paged streams ---- */

/* After a page: the final answer if it was the last, else the next call. */
static void
page_done(struct intent *it, const struct ec2_answer *a,
    const struct msg_cloud_status *st, bool last)
{
	if (last || a->next_token[0] == '\0')
		THEN(intent_reply(it, st));
	snprintf(it->next_token, sizeof(it->next_token), "%s", a->next_token);
	intent_next(it);
}

static void
ds_page(struct intent *it, const struct ec2_answer *a,
    const struct msg_cloud_status *st)
{
	struct msg_cloud_subnet m;
	const struct ec2_subnet *s;
	char err[MSG_ERR_LEN], note[160];
	uint32_t i;
	bool native;

	for (i = 0; i < a->nitems; i++) {
		s = &a->list.subnets[i];
		memset(&m, 0, sizeof(m));
		/* IPv6-only: no IPv4 block (ec2_subnet6_to_msg checks),
		 * and maybe no count of free IPv4 addresses */
		native = strcmp(s->ipv6_native, "true") == 0;
		if (!ec2_id_ok(s->id, "subnet-") ||
		    !ec2_name_ok(s->az, sizeof(m.az)) ||
		    (!native && (ip_prefix_parse(s->cidr, &m.cidr,
		    NULL) == -1 || m.cidr.addr.family != AF_INET)) ||
		    (!(native && s->available[0] == '\0') &&
		    ec2_uint(s->available, 0xffffffu, &m.available) == -1))
			THEN(intent_fail(it, CO_FATAL, "DescribeSubnets: "
			    "entry %u of page %u has an invalid id, zone, "
			    "CIDR or count", i + 1, it->pages));
		if (ec2_subnet6_to_msg(s, &m, err, sizeof(err), note,
		    sizeof(note)) == -1)
			THEN(intent_fail(it, CO_FATAL, "DescribeSubnets: %s",
			    err));
		if (note[0] != '\0') {
			ec2_sanitize(note);
			log_errorx("DescribeSubnets: %s: %s; its IPv6 %s", s->id,
			    note, m.ipv6_state == IPV6_ST_ASSOCIATED ?
			    "block is the first one" : "is unusable");
		}
		msg_strlcpy(m.subnet_id, s->id, sizeof(m.subnet_id));
		msg_strlcpy(m.az, s->az, sizeof(m.az));
		cloudd_send(it->cd, MSG_CLOUD_SUBNET, it->id, &m, sizeof(m));
		it->sent++;
	}
	/* Subnets asked for by id come in one answer (no paging). */
	page_done(it, a, st, it->req.ds.nids > 0);
}

/* What ec2_eni_to_msg_noting left out of an ENI: prefixes that are not
 * aligned /28s or not the ENI's to hold, IPv6 addresses and /80s that are
 * not usable: the cloud's error, said; the ENI's others go on. */
static void
eni_left_out(const struct msg_cloud_eni *m, struct ec2_left_out *lo)
{
	/* the cloud's text, in a log line */
	ec2_sanitize(lo->prefix);
	ec2_sanitize(lo->addr6);
	ec2_sanitize(lo->prefix6);
	if (m->nbad_prefixes > 0)
		log_warnx("%s: %u prefix%s left out, not an aligned /%d, "
		    "named twice or over an address of the ENI's (\"%s\"%s)",
		    m->eni_id, m->nbad_prefixes,
		    m->nbad_prefixes == 1 ? "" : "es", MSG_PREFIX_LEN,
		    lo->prefix, m->nbad_prefixes == 1 ? "" : " first");
	if (m->nbad_addrs6 > 0)
		log_errorx("%s: %u ipv6Address%s left out (%s\"%s\": %s)",
		    m->eni_id, m->nbad_addrs6, m->nbad_addrs6 == 1 ? "" : "es",
		    m->nbad_addrs6 == 1 ? "" : "first ",
		    lo->addr6[0] ? lo->addr6 : "past the cap",
		    lo->addr6_why ? lo->addr6_why : "more than enid keeps");
	if (m->nbad_prefixes6 > 0)
		log_errorx("%s: %u ipv6Prefix%s left out (%s\"%s\": %s)",
		    m->eni_id, m->nbad_prefixes6,
		    m->nbad_prefixes6 == 1 ? "" : "es",
		    m->nbad_prefixes6 == 1 ? "" : "first ",
		    lo->prefix6[0] ? lo->prefix6 : "past the cap",
		    lo->prefix6_why ? lo->prefix6_why : "more than enid keeps");
}

static void
den_page(struct intent *it, const struct ec2_answer *a,
    const struct msg_cloud_status *st)
{
	struct msg_cloud_eni m;
	struct ec2_left_out lo;
	char err[MSG_ERR_LEN];
	uint32_t i;

	/* Check the whole page first: a broker that saw half a page could
	 * take a missing ENI for a gone one. */
	for (i = 0; i < a->nitems; i++)
		if (ec2_eni_to_msg(&a->list.enis[i], &m, err,
		    sizeof(err), NULL, 0) == -1)
			THEN(intent_fail(it, CO_FATAL, "DescribeNetwork"
			    "Interfaces page %u: %s", it->pages, err));
	/* A listing names each ENI once.  One that names an ENI again
	 * (pages that start over: they never end) or names more than the
	 * broker could take ends here, rather than page on until the page
	 * cap, on the describe calls' rate budget, long past the deadline. */
	if (a->nitems > 0 && it->listed == NULL &&
	    (it->listed = calloc(CLOUDD_MAX_LISTED,
	    sizeof(*it->listed))) == NULL)
		THEN(intent_fail(it, CO_TRANSIENT, "DescribeNetworkInterfaces:"
		    " out of memory"));
	for (i = 0; i < a->nitems; i++) {
		const char *id = a->list.enis[i].id;
		uint32_t j;

		for (j = 0; j < it->nlisted; j++)
			if (strcmp(it->listed[j], id) == 0)
				THEN(intent_fail(it, CO_FATAL, "DescribeNetwork"
				    "Interfaces page %u lists %s again; a "
				    "listing that repeats itself never ends",
				    it->pages, id));
		if (it->nlisted == CLOUDD_MAX_LISTED)
			THEN(intent_fail(it, CO_FATAL, "DescribeNetwork"
			    "Interfaces: more than %d ENIs listed",
			    CLOUDD_MAX_LISTED));
		msg_strlcpy(it->listed[it->nlisted++], id, MSG_ID_LEN);
	}
	for (i = 0; i < a->nitems; i++) {
		(void)ec2_eni_to_msg_noting(&a->list.enis[i], &m, err,
		    sizeof(err), &lo);
		eni_left_out(&m, &lo);
		m.st = *st;
		if (a->list.enis[i].tags_dropped > 0)
			log_debug("%s: %u tags over %d not passed on",
			    m.eni_id, a->list.enis[i].tags_dropped,
			    MSG_MAX_TAGS);
		cloudd_send(it->cd, MSG_CLOUD_ENI, it->id, &m, sizeof(m));
		it->sent++;
	}
	page_done(it, a, st, false);
}

/* ---- check-instances: one answer, however many pages ---- */

static void
ci_page(struct intent *it, const struct ec2_answer *a,
    const struct msg_cloud_status *st)
{
	char err[MSG_ERR_LEN];

	/* An answer about instances not asked for is the cloud's error
	 * (or not the cloud): none of it is used. */
	if (ec2_instances_mark(&it->req.ci, a->list.states, a->nitems,
	    it->exists, it->named, err, sizeof(err)) == -1)
		THEN(intent_fail(it, CO_FATAL, "DescribeInstances page %u: %s",
		    it->pages, err));
	page_done(it, a, st, false);
}

/* ---- single-answer intents ---- */

static void
ce_done(struct intent *it, const struct ec2_answer *a,
    const struct msg_cloud_status *st)
{
	struct msg_cloud_eni m;
	struct ec2_left_out lo;
	char err[MSG_ERR_LEN];

	if (!a->has_eni)
		THEN(intent_fail(it, CO_FATAL, "CreateNetworkInterface: "
		    "answer without a networkInterface"));
	if (ec2_eni_to_msg_noting(&a->eni, &m, err, sizeof(err), &lo) == -1)
		THEN(intent_fail(it, CO_FATAL, "CreateNetworkInterface: %s",
		    err));
	/* A new ENI holds the prefixes asked for, no more, no fewer: the
	 * broker counts its slots by them. */
	if (m.nprefixes + m.nbad_prefixes != it->req.ce.nprefixes)
		THEN(intent_fail(it, CO_FATAL, "CreateNetworkInterface: %s "
		    "with %u prefixes, %u asked for", m.eni_id,
		    m.nprefixes + m.nbad_prefixes, it->req.ce.nprefixes));
	eni_left_out(&m, &lo);
	/* Asked with an IPv6 address, it has one (the subnet may add one
	 * unasked: that is the subnet's setting, and passed on). */
	if (m.naddrs6 < it->req.ce.nipv6)
		THEN(intent_fail(it, CO_FATAL, "CreateNetworkInterface: %s "
		    "without the IPv6 address asked for", m.eni_id));
	if (strcmp(m.subnet_id, it->req.ce.subnet_id) != 0)
		THEN(intent_fail(it, CO_FATAL, "CreateNetworkInterface: "
		    "%s is in %s, not the subnet asked for", m.eni_id,
		    m.subnet_id));
	m.st = *st;
	log_debug("intent %u %s: %s created", it->id, intent_name(it),
	    m.eni_id);
	intent_log(it, st);
	cloudd_send(it->cd, MSG_CLOUD_ENI, it->id, &m, sizeof(m));
	intent_free(it);
}

static void
at_done(struct intent *it, const struct ec2_answer *a,
    const struct msg_cloud_status *st)
{
	struct msg_cloud_attached m;

	if (!ec2_id_ok(a->attachment_id, "eni-attach-"))
		THEN(intent_fail(it, CO_FATAL, "AttachNetworkInterface: "
		    "invalid attachment id \"%.64s\"", a->attachment_id));
	memset(&m, 0, sizeof(m));
	m.st = *st;
	msg_strlcpy(m.attachment_id, a->attachment_id, sizeof(m.attachment_id));
	intent_log(it, st);
	cloudd_send(it->cd, MSG_CLOUD_ATTACHED, it->id, &m, sizeof(m));
	intent_free(it);
}

/*
 * What an IPv6 assign or unassign names: n texts, each an address (or a
 * /80, prefixes), none twice, and each one asked for when the request
 * named them (asked, nasked); into out.  0, or -1 with err.
 */
static int
ipv6_named(const char (*texts)[EC2_IP6_LEN], uint32_t n, bool prefixes,
    const struct ip_addr *asked, uint32_t nasked, struct ip_addr *out,
    char *err, size_t errlen)
{
	char text[EC2_IP6_LEN];
	const char *why;
	uint32_t i, j;

	for (i = 0; i < n; i++) {
		snprintf(text, sizeof(text), "%s", texts[i]);
		ec2_sanitize(text);
		if ((prefixes ? ec2_prefix6_parse(texts[i], &out[i], &why) :
		    ec2_ip6_parse(texts[i], &out[i], &why)) == -1) {
			snprintf(err, errlen, "%s \"%.48s\" refused: %s",
			    prefixes ? "ipv6Prefix" : "IPv6 address", text,
			    why != NULL ? why : "not usable");
			return -1;
		}
		for (j = 0; j < i; j++)
			if (ip_addr_eq(&out[j], &out[i])) {
				snprintf(err, errlen, "%.48s named twice", text);
				return -1;
			}
		if (nasked == 0)
			continue;
		for (j = 0; j < nasked; j++)
			if (ip_addr_eq(&asked[j], &out[i]))
				break;
		if (j == nasked) {
			snprintf(err, errlen, "%.48s was not asked for", text);
			return -1;
		}
	}
	return 0;
}

/* AssignIpv6Addresses for addresses: exactly what was asked, the count
 * or the very addresses, and nothing but usable IPv6 addresses. */
static void
as6_done(struct intent *it, const struct ec2_answer *a,
    const struct msg_cloud_status *st)
{
	const struct msg_cloud_ips *r = &it->req.ip;
	struct msg_cloud_assigned m;
	char err[MSG_ERR_LEN];
	uint32_t want = r->naddrs > 0 ? r->naddrs : r->count;

	memset(&m, 0, sizeof(m));
	m.st = *st;
	if (a->nprefixes6 > 0 || strcmp(a->eni_id, r->eni_id) != 0)
		THEN(intent_fail(it, CO_FATAL, "AssignIpv6Addresses: the "
		    "answer is about another ENI or names prefixes"));
	if (ipv6_named(a->addrs6, a->naddrs6, false, r->addrs, r->naddrs,
	    m.addrs, err, sizeof(err)) == -1)
		THEN(intent_fail(it, CO_FATAL, "AssignIpv6Addresses: %s",
		    err));
	if (a->naddrs6 != want)
		THEN(intent_fail(it, CO_FATAL, "AssignIpv6Addresses: %u "
		    "addresses in the answer, %u asked for", a->naddrs6,
		    want));
	m.naddrs = a->naddrs6;
	intent_log(it, st);
	cloudd_send(it->cd, MSG_CLOUD_ASSIGNED, it->id, &m, sizeof(m));
	intent_free(it);
}

/* The same for /80 prefixes. */
static void
ap6_done(struct intent *it, const struct ec2_answer *a,
    const struct msg_cloud_status *st)
{
	const struct msg_cloud_prefixes *r = &it->req.px;
	struct msg_cloud_prefixes_assigned m;
	char err[MSG_ERR_LEN];
	uint32_t want = r->nprefixes > 0 ? r->nprefixes : r->count;

	memset(&m, 0, sizeof(m));
	m.st = *st;
	if (a->naddrs6 > 0 || strcmp(a->eni_id, r->eni_id) != 0)
		THEN(intent_fail(it, CO_FATAL, "AssignIpv6Addresses: the "
		    "answer is about another ENI or names addresses"));
	if (ipv6_named(a->prefixes6, a->nprefixes6, true, r->prefixes,
	    r->nprefixes, m.prefixes, err, sizeof(err)) == -1)
		THEN(intent_fail(it, CO_FATAL, "AssignIpv6Addresses: %s",
		    err));
	if (a->nprefixes6 != want)
		THEN(intent_fail(it, CO_FATAL, "AssignIpv6Addresses: %u "
		    "prefixes in the answer, %u asked for", a->nprefixes6,
		    want));
	m.nprefixes = a->nprefixes6;
	intent_log(it, st);
	cloudd_send(it->cd, MSG_CLOUD_PREFIXES_ASSIGNED, it->id, &m,
	    sizeof(m));
	intent_free(it);
}

/*
 * UnassignIpv6Addresses answers with what it removed, not <return>: the
 * ENI asked about, and nothing but what was asked (less is an address
 * already gone, which is what was asked for).
 */
static void
un6_done(struct intent *it, const struct ec2_answer *a,
    const struct msg_cloud_status *st)
{
	struct ip_addr seen[MSG_MAX_ENI_ADDRS];
	char err[MSG_ERR_LEN];
	const char *eni = it->type == MSG_CLOUD_UNASSIGN_IPS ?
	    it->req.ip.eni_id : it->req.px.eni_id;
	int rc;

	if (strcmp(a->eni_id, eni) != 0)
		THEN(intent_fail(it, CO_FATAL, "UnassignIpv6Addresses: the "
		    "answer is not about %s", eni));
	if (it->type == MSG_CLOUD_UNASSIGN_IPS ? a->nprefixes6 > 0 :
	    a->naddrs6 > 0)
		THEN(intent_fail(it, CO_FATAL, "UnassignIpv6Addresses: the "
		    "answer names %s, which were not asked about",
		    a->naddrs6 > 0 ? "addresses" : "prefixes"));
	if (it->type == MSG_CLOUD_UNASSIGN_IPS)
		rc = ipv6_named(a->addrs6, a->naddrs6, false,
		    it->req.ip.addrs, it->req.ip.naddrs, seen, err,
		    sizeof(err));
	else
		rc = ipv6_named(a->prefixes6, a->nprefixes6, true,
		    it->req.px.prefixes, it->req.px.nprefixes, seen, err,
		    sizeof(err));
	if (rc == -1)
		THEN(intent_fail(it, CO_FATAL, "UnassignIpv6Addresses: %s",
		    err));
	intent_reply(it, st);
}

static void
as_done(struct intent *it, const struct ec2_answer *a,
    const struct msg_cloud_status *st)
{
	struct msg_cloud_assigned m;
	uint32_t i;

	if (it->req.ip.family == AF_INET6)
		THEN(as6_done(it, a, st));
	memset(&m, 0, sizeof(m));
	m.st = *st;
	for (i = 0; i < a->naddrs; i++)
		if (ec2_ip4_parse(a->addrs[i], &m.addrs[i]) == -1)
			THEN(intent_fail(it, CO_FATAL, "AssignPrivateIp"
			    "Addresses: invalid address \"%.32s\"",
			    a->addrs[i]));
	m.naddrs = a->naddrs;
	if (m.naddrs == 0 && it->req.ip.naddrs > 0) {
		/* Older answers carry only <return>: what was asked. */
		if (!a->has_return || !a->return_true)
			THEN(intent_fail(it, CO_FATAL, "AssignPrivateIp"
			    "Addresses: answer names no address"));
		m.naddrs = it->req.ip.naddrs;
		memcpy(m.addrs, it->req.ip.addrs, sizeof(m.addrs));
	}
	if (m.naddrs == 0 ||
	    (it->req.ip.naddrs == 0 && m.naddrs != it->req.ip.count))
		THEN(intent_fail(it, CO_FATAL, "AssignPrivateIpAddresses: "
		    "%u addresses in the answer, %u asked for", m.naddrs,
		    it->req.ip.naddrs ? it->req.ip.naddrs : it->req.ip.count));
	intent_log(it, st);
	cloudd_send(it->cd, MSG_CLOUD_ASSIGNED, it->id, &m, sizeof(m));
	intent_free(it);
}

/*
 * The prefixes an AssignPrivateIpAddresses answer names.  Each must be an
 * aligned /28, named once, and be what was asked: that many, or exactly
 * those.  A wrong answer is refused whole: the broker cannot tell which
 * part of it to believe.
 */
static void
ap_done(struct intent *it, const struct ec2_answer *a,
    const struct msg_cloud_status *st)
{
	const struct msg_cloud_prefixes *r = &it->req.px;
	struct msg_cloud_prefixes_assigned m;
	uint32_t i, j, want;

	if (r->family == AF_INET6)
		THEN(ap6_done(it, a, st));
	memset(&m, 0, sizeof(m));
	m.st = *st;
	for (i = 0; i < a->nprefixes; i++) {
		if (ec2_prefix_parse(a->prefixes[i], &m.prefixes[i]) == -1)
			THEN(intent_fail(it, CO_FATAL, "AssignPrivateIp"
			    "Addresses: \"%.32s\" is not an aligned /%d",
			    a->prefixes[i], MSG_PREFIX_LEN));
		for (j = 0; j < i; j++)
			if (ip_addr_eq(&m.prefixes[j], &m.prefixes[i]))
				THEN(intent_fail(it, CO_FATAL, "AssignPrivate"
				    "IpAddresses: %.32s named twice",
				    a->prefixes[i]));
	}
	m.nprefixes = a->nprefixes;
	if (m.nprefixes == 0 && r->nprefixes > 0) {
		/* Older answers carry only <return>: what was asked. */
		if (!a->has_return || !a->return_true)
			THEN(intent_fail(it, CO_FATAL, "AssignPrivateIp"
			    "Addresses: answer names no prefix"));
		m.nprefixes = r->nprefixes;
		memcpy(m.prefixes, r->prefixes, sizeof(m.prefixes));
	}
	want = r->nprefixes > 0 ? r->nprefixes : r->count;
	if (m.nprefixes != want)
		THEN(intent_fail(it, CO_FATAL, "AssignPrivateIpAddresses: "
		    "%u prefixes in the answer, %u asked for", m.nprefixes,
		    want));
	for (i = 0; i < r->nprefixes; i++) {
		for (j = 0; j < m.nprefixes; j++)
			if (ip_addr_eq(&m.prefixes[j], &r->prefixes[i]))
				break;
		if (j == m.nprefixes)
			THEN(intent_fail(it, CO_FATAL, "AssignPrivateIp"
			    "Addresses: the answer's prefixes are not those "
			    "asked for"));
	}
	intent_log(it, st);
	cloudd_send(it->cd, MSG_CLOUD_PREFIXES_ASSIGNED, it->id, &m,
	    sizeof(m));
	intent_free(it);
}

static void
return_done(struct intent *it, const struct ec2_answer *a,
    const struct msg_cloud_status *st)
{
	if (a->is_error || (a->has_return && a->return_true))
		THEN(intent_reply(it, st));
	intent_fail(it, CO_FATAL, "%s: answer without <return>true</return>",
	    intent_name(it));
}

/* ---- the steps ---- */

static void
intent_step(struct intent *it, const struct msg_cloud_status *st,
    const struct ec2_answer *a, const char *body, size_t len)
{
	struct cloudd *cd = it->cd;
	char text[MSG_ID_LEN];

	/* Error answers that are an outcome, not a failure (deleting a
	 * gone ENI) arrive here with a parsed error answer. */
	if (a != NULL && a->is_error) {
		intent_reply(it, st);
		return;
	}
	switch (it->type) {
	case MSG_CLOUD_DESCRIBE_INSTANCE:
		switch (it->step) {
		case DI_INSTANCE_ID:
			if (imds_text(body, len, text, sizeof(text)) == -1 ||
			    !ec2_id_ok(text, "i-"))
				THEN(intent_fail(it, CO_FATAL, "IMDS: "
				    "invalid instance id"));
			msg_strlcpy(cd->instance_id, text,
			    sizeof(cd->instance_id));
			it->step = DI_MAC;
			break;
		case DI_MAC:
			if (imds_text(body, len, text, sizeof(text)) == -1 ||
			    mac_parse(text, it->mac) == -1)
				THEN(intent_fail(it, CO_FATAL, "IMDS: "
				    "invalid primary MAC"));
			it->step = DI_CIDRS;
			break;
		case DI_CIDRS:
			if (imds_cidr_lines(body, len, it->inst->cidrs,
			    &it->inst->ncidrs) == -1)
				THEN(intent_fail(it, CO_FATAL, "IMDS: "
				    "invalid or too many VPC CIDR blocks"));
			it->step = DI_CIDRS6;
			break;
		case DI_CIDRS6:
		case DI_IPV6S:
		case DI_SUBNET6:
			di_ipv6(it, st->outcome == CO_OK ? body : NULL, len);
			it->step++;
			break;
		case DI_TYPE_NAME:
			if (imds_text(body, len, text, sizeof(text)) == -1 ||
			    !ec2_name_ok(text, sizeof(it->inst->instance_type)))
				THEN(intent_fail(it, CO_FATAL, "IMDS: "
				    "invalid instance type"));
			msg_strlcpy(it->inst->instance_type, text,
			    sizeof(it->inst->instance_type));
			it->step = DI_DESCRIBE;
			break;
		default:	/* its EC2 calls end in di_call_cb() */
			THEN(intent_fail(it, CO_FATAL, "describe-instance: "
			    "answer out of turn"));
		}
		break;
	case MSG_CLOUD_DESCRIBE_SUBNETS:
		if (it->step == 0) {	/* the MAC, for the VPC id */
			if (imds_text(body, len, text, sizeof(text)) == -1 ||
			    mac_parse(text, it->mac) == -1)
				THEN(intent_fail(it, CO_FATAL, "IMDS: "
				    "invalid primary MAC"));
			it->step = 1;
			break;
		}
		if (it->step == 1) {
			if (imds_text(body, len, text, sizeof(text)) == -1 ||
			    !ec2_id_ok(text, "vpc-"))
				THEN(intent_fail(it, CO_FATAL, "IMDS: "
				    "invalid VPC id"));
			msg_strlcpy(cd->vpc_id, text, sizeof(cd->vpc_id));
			it->step = 2;
			break;
		}
		THEN(ds_page(it, a, st));
	case MSG_CLOUD_DESCRIBE_ENIS:
	case MSG_CLOUD_ATTACH:
		if (it->step == 0) {	/* our instance id from IMDS */
			if (imds_text(body, len, text, sizeof(text)) == -1 ||
			    !ec2_id_ok(text, "i-"))
				THEN(intent_fail(it, CO_FATAL, "IMDS: "
				    "invalid instance id"));
			msg_strlcpy(cd->instance_id, text,
			    sizeof(cd->instance_id));
			it->step = 1;
			break;
		}
		if (it->type == MSG_CLOUD_ATTACH)
			THEN(at_done(it, a, st));
		THEN(den_page(it, a, st));
	case MSG_CLOUD_CREATE_ENI:
		THEN(ce_done(it, a, st));
	case MSG_CLOUD_ASSIGN_IPS:
		THEN(as_done(it, a, st));
	case MSG_CLOUD_ASSIGN_PREFIXES:
		THEN(ap_done(it, a, st));
	case MSG_CLOUD_CHECK_INSTANCES:
		THEN(ci_page(it, a, st));
	case MSG_CLOUD_UNASSIGN_IPS:
		if (it->req.ip.family == AF_INET6)
			THEN(un6_done(it, a, st));
		THEN(return_done(it, a, st));
	case MSG_CLOUD_UNASSIGN_PREFIXES:
		if (it->req.px.family == AF_INET6)
			THEN(un6_done(it, a, st));
		THEN(return_done(it, a, st));
	default:
		THEN(return_done(it, a, st));
	}
	intent_next(it);
}

/* Issue the intent's next call. */
static void
intent_next(struct intent *it)
{
	struct cloudd *cd = it->cd;
	struct ec2_form f;
	char err[MSG_ERR_LEN], path[160], mac[MAC_STR_LEN];
	int rc = 0;

	memset(&f, 0, sizeof(f));
	switch (it->type) {
	case MSG_CLOUD_DESCRIBE_INSTANCE:
		switch (it->step) {
		case DI_INSTANCE_ID:
			THEN(intent_imds(it, "meta-data/instance-id"));
		case DI_MAC:
			msg_strlcpy(it->inst->instance_id, cd->instance_id,
			    sizeof(it->inst->instance_id));
			THEN(intent_imds(it, "meta-data/mac"));
		case DI_CIDRS:
		case DI_CIDRS6:
		case DI_IPV6S:
		case DI_SUBNET6:
			mac_format(it->mac, mac);
			snprintf(path, sizeof(path), "meta-data/network/"
			    "interfaces/macs/%s/%s", mac,
			    it->step == DI_CIDRS ? "vpc-ipv4-cidr-blocks" :
			    it->step == DI_CIDRS6 ? "vpc-ipv6-cidr-blocks" :
			    it->step == DI_IPV6S ? "ipv6s" :
			    "subnet-ipv6-cidr-blocks");
			THEN(intent_imds(it, path));
		case DI_TYPE_NAME:
			THEN(intent_imds(it, "meta-data/instance-type"));
		case DI_DESCRIBE: {
			struct ec2_form types;

			ec2_form_init(&f, EC2_DESCRIBE_INSTANCES);
			ec2_form_add(&f, "InstanceId.1", cd->instance_id);
			ec2_form_init(&types, EC2_DESCRIBE_INSTANCE_TYPES);
			ec2_form_add(&types, "InstanceType.1",
			    it->inst->instance_type);
			it->di_pending = 2;
			di_ec2(it, EC2_DESCRIBE_INSTANCES, &f);
			THEN(di_ec2(it, EC2_DESCRIBE_INSTANCE_TYPES, &types));
		}
		}
		return;
	case MSG_CLOUD_DESCRIBE_SUBNETS:
		if (it->step == 0 && it->req.ds.nids == 0 &&
		    cd->vpc_id[0] == '\0')
			THEN(intent_imds(it, "meta-data/mac"));
		if (it->step == 1) {
			mac_format(it->mac, mac);
			snprintf(path, sizeof(path), "meta-data/network/"
			    "interfaces/macs/%s/vpc-id", mac);
			THEN(intent_imds(it, path));
		}
		it->step = 2;
		if (++it->pages > CLOUDD_MAX_PAGES)
			THEN(intent_fail(it, CO_FATAL, "DescribeSubnets: "
			    "more than %d pages", CLOUDD_MAX_PAGES));
		rc = ec2_req_describe_subnets(&f, &it->req.ds, cd->vpc_id,
		    it->next_token, err, sizeof(err));
		if (rc == 0)
			THEN(intent_ec2(it, EC2_DESCRIBE_SUBNETS, &f, true));
		break;
	case MSG_CLOUD_DESCRIBE_ENIS:
	case MSG_CLOUD_ATTACH:
		if (it->step == 0 && cd->instance_id[0] == '\0' &&
		    (it->type == MSG_CLOUD_ATTACH ||
		    (it->req.den.filter == ENIS_BY_INSTANCE &&
		    it->req.den.instance_id[0] == '\0')))
			THEN(intent_imds(it, "meta-data/instance-id"));
		it->step = 1;
		if (it->type == MSG_CLOUD_ATTACH) {
			rc = ec2_req_attach(&f, &it->req.at, cd->instance_id,
			    err, sizeof(err));
			if (rc == 0)
				THEN(intent_ec2(it, EC2_ATTACH_ENI, &f,
				    false));
			break;
		}
		if (++it->pages > CLOUDD_MAX_PAGES)
			THEN(intent_fail(it, CO_FATAL, "DescribeNetwork"
			    "Interfaces: more than %d pages", CLOUDD_MAX_PAGES));
		rc = ec2_req_describe_enis(&f, &it->req.den, cd->instance_id,
		    it->next_token, err, sizeof(err));
		if (rc == 0)
			THEN(intent_ec2(it, EC2_DESCRIBE_ENIS, &f, true));
		break;
	case MSG_CLOUD_CHECK_INSTANCES:
		if (++it->pages > CLOUDD_MAX_PAGES)
			THEN(intent_fail(it, CO_FATAL, "DescribeInstances: "
			    "more than %d pages", CLOUDD_MAX_PAGES));
		rc = ec2_req_check_instances(&f, &it->req.ci, it->next_token,
		    err, sizeof(err));
		if (rc == 0)
			THEN(intent_ec2(it, EC2_CHECK_INSTANCES, &f, true));
		break;
	case MSG_CLOUD_CREATE_ENI:
		/* ClientToken makes a repeated create the same create. */
		if ((rc = ec2_req_create_eni(&f, &it->req.ce, err,
		    sizeof(err))) == 0)
			THEN(intent_ec2(it, EC2_CREATE_ENI, &f, true));
		break;
	case MSG_CLOUD_SET_DOT:
		if ((rc = ec2_req_set_dot(&f, &it->req.sd, err,
		    sizeof(err))) == 0)
			THEN(intent_ec2(it, EC2_MODIFY_ENI_ATTR, &f, true));
		break;
	case MSG_CLOUD_ASSIGN_IPS:
		/* By count it is not idempotent: a repeat adds more. */
		if ((rc = ec2_req_ips(&f, true, &it->req.ip, err,
		    sizeof(err))) == 0)
			THEN(intent_ec2(it, f.ipv6 ? EC2_ASSIGN_IPV6 :
			    EC2_ASSIGN_IPS, &f, it->req.ip.naddrs > 0));
		break;
	case MSG_CLOUD_UNASSIGN_IPS:
		if ((rc = ec2_req_ips(&f, false, &it->req.ip, err,
		    sizeof(err))) == 0)
			THEN(intent_ec2(it, f.ipv6 ? EC2_UNASSIGN_IPV6 :
			    EC2_UNASSIGN_IPS, &f, true));
		break;
	case MSG_CLOUD_ASSIGN_PREFIXES:
		/* By count it is not idempotent: a repeat adds more. */
		if ((rc = ec2_req_prefixes(&f, true, &it->req.px, err,
		    sizeof(err))) == 0)
			THEN(intent_ec2(it, f.ipv6 ? EC2_ASSIGN_IPV6 :
			    EC2_ASSIGN_IPS, &f, it->req.px.nprefixes > 0));
		break;
	case MSG_CLOUD_UNASSIGN_PREFIXES:
		if ((rc = ec2_req_prefixes(&f, false, &it->req.px, err,
		    sizeof(err))) == 0)
			THEN(intent_ec2(it, f.ipv6 ? EC2_UNASSIGN_IPV6 :
			    EC2_UNASSIGN_IPS, &f, true));
		break;
	case MSG_CLOUD_DETACH:
		if ((rc = ec2_req_detach(&f, &it->req.dt, err,
		    sizeof(err))) == 0)
			THEN(intent_ec2(it, EC2_DETACH_ENI, &f, true));
		break;
	case MSG_CLOUD_DELETE:
		if ((rc = ec2_req_delete(&f, &it->req.de, err,
		    sizeof(err))) == 0)
			THEN(intent_ec2(it, EC2_DELETE_ENI, &f, true));
		break;
	default:
		rc = -1;
		snprintf(err, sizeof(err), "not an intent");
		break;
	}
	ec2_form_free(&f);
	/* A request we won't send: refused without calling the cloud. */
	intent_fail(it, CO_FATAL, "%s", err);
}

void
intent_start(struct cloudd *cd, const struct msg *m)
{
	const struct msg_type_info *ti = msg_type_info(m->hdr.type);
	struct intent *it;
	uint32_t deadline_ms;

	/* cloudd_can_take() stops reading at CLOUDD_MAX_INTENTS. */
	if ((it = calloc(1, sizeof(*it))) == NULL)
		fatal("intent %u: out of memory", m->hdr.id);
	it->cd = cd;
	it->id = m->hdr.id;
	it->type = m->hdr.type;
	it->started = now_ms();
	memcpy(&it->req, m->u.bytes, ti->size);
	/* Every intent struct starts with its relative deadline. */
	memcpy(&deadline_ms, m->u.bytes, sizeof(deadline_ms));
	if (deadline_ms == 0)
		deadline_ms = CLOUDD_DEFAULT_DEADLINE_MS;
	if (deadline_ms > CLOUDD_MAX_DEADLINE_MS)
		deadline_ms = CLOUDD_MAX_DEADLINE_MS;
	it->deadline = it->started + deadline_ms;
	TAILQ_INSERT_TAIL(&cd->intents, it, entry);
	cd->nintents++;
	if (it->type == MSG_CLOUD_DESCRIBE_INSTANCE) {
		if ((it->inst = calloc(1, sizeof(*it->inst))) == NULL)
			fatal("intent %u: out of memory", it->id);
		if (cd->instance_id[0] != '\0')
			it->step = DI_MAC;
	}
	log_debug("intent %u %s: deadline %u ms", it->id, intent_name(it),
	    deadline_ms);
	intent_next(it);
}
