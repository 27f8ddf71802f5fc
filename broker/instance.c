/*
 * Learning which instance this node is, from enid-cloudd, and fixing
 * enid-netd's policy from it: the primary ENI's MAC (which netd must never
 * touch) and the VPC's CIDR blocks (the only addresses netd may route).
 * Until the cloud has answered, the broker is up but not ready; a failed
 * attempt is retried with exponential backoff.
 */
#include <stdio.h>
#include <string.h>

#include "addr.h"
#include "enid.h"
#include "log.h"
#include "prereq.h"

#define INSTANCE_DEADLINE_MS	20000	/* doubled for each failure, */
#define INSTANCE_DEADLINE_MAX_MS 320000	/* up to this */
#define INSTANCE_RETRY_MIN_MS	1000
#define INSTANCE_RETRY_MAX_MS	60000
#define INSTANCE_POLICY_MS	2000

static void	instance_answer(struct broker *, void *, const struct msg *,
		    bool);

static void
instance_ask(struct broker *b)
{
	struct msg_cloud_describe_instance req;
	uint32_t n;

	/* Several metadata calls in a row: a slow metadata service (each
	 * attempt of cloudd's waits longer too) gets longer each time. */
	memset(&req, 0, sizeof(req));
	req.deadline_ms = INSTANCE_DEADLINE_MS;
	for (n = 0; n < b->instance_failures &&
	    req.deadline_ms < INSTANCE_DEADLINE_MAX_MS; n++)
		req.deadline_ms *= 2;
	b->instance_state = INSTANCE_ASKING;
	broker_request(b, &b->instance_req, &b->cloudd,
	    MSG_CLOUD_DESCRIBE_INSTANCE, &req, sizeof(req), req.deadline_ms,
	    instance_answer, NULL);
}

static void
instance_retry_timer(struct loop *l, struct loop_timer *t)
{
	(void)l;
	instance_ask(t->arg);
}

static void
instance_retry(struct broker *b, const char *why)
{
	b->instance_state = INSTANCE_RETRYING;
	b->instance_failures++;
	msg_strlcpy(b->instance_error, why, sizeof(b->instance_error));
	/* The ADDs waiting learn why now, not at their deadline. */
	waiters_fail(b, UINT64_MAX, "not-ready", "enid does not know its "
	    "instance yet: %s", why);
	log_warnx("instance: %s; asking again in %u s", why,
	    b->instance_retry_ms / 1000);
	loop_timer_after(&b->loop, &b->instance_timer, b->instance_retry_ms);
	b->instance_retry_ms *= 2;
	if (b->instance_retry_ms > INSTANCE_RETRY_MAX_MS)
		b->instance_retry_ms = INSTANCE_RETRY_MAX_MS;
}

static void
policy_answer(struct broker *b, void *arg, const struct msg *m, bool final)
{
	struct msg_result r;
	char why[MSG_ERR_LEN + 64];

	(void)arg;
	(void)final;
	if (m == NULL) {
		broker_shutdown(b, 1, "enid-netd did not acknowledge its policy");
		return;
	}
	memcpy(&r, m->u.bytes, sizeof(r));
	if (r.status != ST_OK) {
		snprintf(why, sizeof(why), "enid-netd refused its policy: %s",
		    r.message);
		broker_shutdown(b, 1, why);
		return;
	}
	b->netd_policy_set = true;
	log_info("enid-netd: policy set");
	/* The VPC's CIDRs are known only now: an exclusion overlapping
	 * one is a configuration error, and the pool does not start. */
	if (!snat_start(b))
		return;
	engine_start(b);
}

/* What netd will judge our requests by; sent once, never widened. */
static void
instance_send_policy(struct broker *b, const struct msg_cloud_instance *in)
{
	struct msg_netd_policy pol;
	uint32_t i;

	memset(&pol, 0, sizeof(pol));
	memcpy(pol.primary_mac, in->primary_mac, sizeof(pol.primary_mac));
	pol.ncidrs = in->ncidrs;
	memcpy(pol.cidrs, in->cidrs, sizeof(pol.cidrs));
	/* The IPv6 blocks only when pods may have IPv6: without one netd
	 * takes no IPv6 address at all.  That is also with ip_family ipv4
	 * when the checkpoint may hold pods of an earlier dual (the switch
	 * keeps them): their IPv6 rules are restored at start and removed
	 * at their DEL, which netd would refuse otherwise.  Sent before
	 * the checkpoint is read, so on its version alone; never narrowed
	 * after, when the last such pod goes. */
	for (i = 0; broker_ipv6_held(b) &&
	    i < b->nvpc6 && pol.ncidrs < MSG_MAX_VPC_CIDRS; i++)
		pol.cidrs[pol.ncidrs++] = b->vpc6[i];
	broker_request(b, &b->policy_req, &b->netd, MSG_NETD_POLICY, &pol,
	    sizeof(pol), INSTANCE_POLICY_MS, policy_answer, NULL);
}

/*
 * The VPC's CIDRs come in both families (IPv4 first).  instance.cidrs
 * keeps the IPv4 ones, which netd's policy, SNAT, the pods' answers and
 * the subnets' checks read; the IPv6 ones go to vpc6, which only the
 * IPv6 pool reads (ip_family dual or ipv6).  An IPv6 CIDR EC2 could give
 * a VPC is a /44 to /56 (REFERENCE.md); cloudd checked each is canonical
 * and not special.
 */
static void
instance_split_cidrs(struct broker *b, struct msg_cloud_instance *in)
{
	uint32_t i, n = 0;

	b->nvpc6 = 0;
	for (i = 0; i < in->ncidrs && i < MSG_MAX_VPC_CIDRS; i++) {
		if (in->cidrs[i].addr.family == AF_INET && n < MSG_MAX_CIDRS)
			in->cidrs[n++] = in->cidrs[i];
		else if (in->cidrs[i].addr.family == AF_INET6 &&
		    b->nvpc6 < MSG_MAX_CIDRS6)
			b->vpc6[b->nvpc6++] = in->cidrs[i];
	}
	memset(&in->cidrs[n], 0, sizeof(in->cidrs) - n * sizeof(in->cidrs[0]));
	in->ncidrs = n;
}

static bool
instance_ipv6_ok(struct broker *b, const struct msg_cloud_instance *in)
{
	char lines[PREREQ_MAX_LINES][PREREQ_LINE_LEN];
	const char *fam = config_family_name(b->cfg.ip_family);
	size_t i, n, wrong = 0;

	if (!config_family_v6(b->cfg.ip_family))
		return true;
	if (!in->ipv6_supported) {
		log_errorx("configuration: instance type %s does not take "
		    "IPv6 (ipv6Supported false), and ip_family \"%s\" needs "
		    "it", in->instance_type, fam);
		wrong++;
	}
	if (!in->prefixes_ok) {
		log_errorx("configuration: instance type %s is not built on "
		    "the Nitro system, so its ENIs take no /80 prefix, and "
		    "ip_family \"%s\" gives pods their IPv6 addresses from "
		    "one", in->instance_type, fam);
		wrong++;
	}
	n = prereq_judge(b->prereq, b->cfg.ip_family, in->primary_mac, lines,
	    PREREQ_MAX_LINES);
	for (i = 0; i < n && i < PREREQ_MAX_LINES; i++)
		log_errorx("configuration: %s", lines[i]);
	wrong += n;
	if (wrong == 0)
		return true;
	broker_shutdown(b, 1, "this instance or node cannot have IPv6 pods "
	    "(above)");
	return false;
}

static void
instance_answer(struct broker *b, void *arg, const struct msg *m, bool final)
{
	struct msg_cloud_instance in;
	char why[512], mac[MAC_STR_LEN];

	(void)arg;
	(void)final;
	if (m == NULL) {
		instance_retry(b, "describe-instance timed out");
		return;
	}
	memcpy(&in, m->u.bytes, sizeof(in));
	if (in.st.outcome != CO_OK) {
		snprintf(why, sizeof(why), "describe-instance: %s: %s%s%s",
		    cloud_outcome_name(in.st.outcome), in.st.code,
		    in.st.code[0] ? ": " : "", in.st.message);
		instance_retry(b, why);
		return;
	}
	instance_split_cidrs(b, &in);
	/* cloudd checked the fields; these are the ones policy rests on. */
	if (in.instance_id[0] == '\0' || mac_is_zero(in.primary_mac) ||
	    in.ncidrs == 0 || in.max_enis == 0 || in.ips_per_eni == 0) {
		instance_retry(b, "describe-instance answer lacks the instance "
		    "id, primary MAC, VPC CIDRs or limits");
		return;
	}
	/* An IPv6-only primary interface (cloudd says 0.0.0.0): this broker
	 * can still use IPv4 subnets on other ENIs, but has no address of
	 * the node's to translate pods' traffic to. */
	if (ip_addr_is_unspecified(&in.primary_ip))
		log_warnx("instance %s: its primary interface %s has no IPv4 "
		    "address (an IPv6-only subnet); pods' traffic leaving the "
		    "VPC has no node address to be translated to",
		    in.instance_id, in.primary_eni);
	if (!instance_ipv6_ok(b, &in))
		return;
	b->instance = in;
	b->instance_state = INSTANCE_KNOWN;
	b->instance_failures = 0;
	b->instance_error[0] = '\0';
	mac_format(in.primary_mac, mac);
	log_info("instance %s (%s in %s): primary ENI %s (%s), %u ENIs of %u "
	    "addresses", in.instance_id, in.instance_type, in.az,
	    in.primary_eni, mac, in.max_enis, in.ips_per_eni);
	instance_send_policy(b, &in);
}

void
instance_start(struct broker *b)
{
	loop_timer_init(&b->instance_timer, instance_retry_timer, b);
	b->instance_retry_ms = INSTANCE_RETRY_MIN_MS;
	instance_ask(b);
}

const char *
instance_state_name(enum instance_state s)
{
	switch (s) {
	case INSTANCE_UNKNOWN:
		return "unknown";
	case INSTANCE_ASKING:
		return "asking";
	case INSTANCE_RETRYING:
		return "retrying";
	case INSTANCE_KNOWN:
		return "known";
	}
	return "?";
}
