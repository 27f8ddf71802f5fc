/*
 * The admin socket's operations (ctl.sock, mode 0660, root and
 * admin_group; the socket itself is server.c).  Each op's request is
 * parsed whole by ctlreq.c first: a missing or mistyped field gets
 * "bad-request" and the connection is closed; nothing in the daemon
 * changes.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "addr.h"
#include "ctlreq.h"
#include "enid.h"
#include "log.h"

static struct json_object *
process_json(const struct child *ch)
{
	struct json_object *p = json_object_new_object();

	json_object_object_add(p, "name", json_object_new_string(ch->name));
	json_object_object_add(p, "pid", json_object_new_int(ch->pid));
	json_object_object_add(p, "ready", json_object_new_boolean(ch->ready));
	return p;
}

static struct json_object *
instance_json(const struct broker *b)
{
	const struct msg_cloud_instance *in = &b->instance;
	struct json_object *o = json_object_new_object();
	struct json_object *cidrs;
	char mac[MAC_STR_LEN], cidr[IP_PREFIX_STR_LEN];
	uint32_t i;

	json_object_object_add(o, "state",
	    json_object_new_string(instance_state_name(b->instance_state)));
	if (b->instance_state != INSTANCE_KNOWN) {
		if (b->instance_error[0] != '\0')
			json_object_object_add(o, "error",
			    json_object_new_string(b->instance_error));
		return o;
	}
	mac_format(in->primary_mac, mac);
	json_object_object_add(o, "id", json_object_new_string(in->instance_id));
	json_object_object_add(o, "type",
	    json_object_new_string(in->instance_type));
	json_object_object_add(o, "az", json_object_new_string(in->az));
	json_object_object_add(o, "primary_eni",
	    json_object_new_string(in->primary_eni));
	json_object_object_add(o, "primary_mac", json_object_new_string(mac));
	json_object_object_add(o, "subnet", json_object_new_string(in->subnet_id));
	cidrs = json_object_new_array();
	for (i = 0; i < in->ncidrs && i < MSG_MAX_CIDRS; i++) {
		ip_prefix_format(&in->cidrs[i], cidr);
		json_object_array_add(cidrs, json_object_new_string(cidr));
	}
	json_object_object_add(o, "vpc_cidrs", cidrs);
	json_object_object_add(o, "max_enis", json_object_new_int(in->max_enis));
	json_object_object_add(o, "ips_per_eni",
	    json_object_new_int(in->ips_per_eni));
	return o;
}

/* ---- the pool ---- */

/* Whole seconds from now until until, rounded up; 0 once it is past. */
static int64_t
secs_left(uint64_t until, uint64_t now)
{
	return until > now ? (int64_t)((until - now + 999) / 1000) : 0;
}

/*
 * Prefix delegation as the pool runs it: "on"; "unsupported" (asked
 * for, and the instance cannot hold prefixes: single addresses);
 * "pending" (asked for, the instance not known yet); "off".
 */
static const char *
prefix_mode(const struct broker *b)
{
	const struct engine *en = &b->engine;

	if (en->params.prefixes)
		return "on";
	if (en->prefixes_unsupported)
		return "unsupported";
	return b->cfg.pool.prefix_delegation ? "pending" : "off";
}

/* The subnets that refused a /28 lately, and for how long growth asks
 * them for single addresses only (eni.c, subnet_prefix_inhibit). */
static struct json_object *
prefix_inhibits_json(const struct engine *en, uint64_t now)
{
	struct json_object *list = json_object_new_array(), *o;
	uint32_t i;

	for (i = 0; i < en->nsubnets; i++) {
		const struct subnet *s = &en->subnets[i];

		if (s->prefix_inhibited_until <= now)
			continue;
		o = json_object_new_object();
		json_object_object_add(o, "subnet",
		    json_object_new_string(s->id));
		json_object_object_add(o, "inhibited_s", json_object_new_int64(
		    secs_left(s->prefix_inhibited_until, now)));
		json_object_array_add(list, o);
	}
	return list;
}

static struct json_object *
pool_json(struct broker *b)
{
	struct engine *en = &b->engine;
	struct json_object *o = json_object_new_object();
	uint32_t free_, assigned, cooling, other, i, k, nenis = 0;
	uint32_t nprefixes = 0, nfrozen = 0, nremoving = 0, pods6 = 0, n80 = 0;
	uint64_t now = now_ms();
	const struct pod *p;
	static const char *const phases[] = { "waiting", "starting",
	    "running" };

	engine_counts(b, &free_, &assigned, &cooling, &other);
	TAILQ_FOREACH(p, &en->pods, all)
		pods6 += p->ip6.family != 0;
	for (i = 0; i < POOL_MAX_ENIS; i++) {
		const struct eni *e = &en->enis[i];

		if (!e->used)
			continue;
		nenis++;
		n80 += e->prefix6.family == AF_INET6;
		for (k = 0; k < e->nprefixes; k++) {
			nprefixes++;
			if (e->prefixes[k].frozen_until > now)
				nfrozen++;
			if (e->prefixes[k].removing)
				nremoving++;
		}
	}
	json_object_object_add(o, "phase",
	    json_object_new_string(phases[en->phase]));
	json_object_object_add(o, "free", json_object_new_int((int32_t)free_));
	json_object_object_add(o, "assigned",
	    json_object_new_int((int32_t)assigned));
	json_object_object_add(o, "cooling",
	    json_object_new_int((int32_t)cooling));
	json_object_object_add(o, "other", json_object_new_int((int32_t)other));
	json_object_object_add(o, "enis", json_object_new_int((int32_t)nenis));
	json_object_object_add(o, "cloud_attached",
	    json_object_new_int((int32_t)en->cloud_attached));
	json_object_object_add(o, "pods", json_object_new_int((int32_t)en->npods));
	json_object_object_add(o, "waiting",
	    json_object_new_int((int32_t)en->nwaiters));
	json_object_object_add(o, "blocked",
	    json_object_new_string(pool_block_name(en->blocked)));
	/* IPv6: the pods that hold an address of it, and the ENIs' /80s
	 * those come from (the counts above are IPv4's). */
	json_object_object_add(o, "ip_family",
	    json_object_new_string(config_family_name(b->cfg.ip_family)));
	json_object_object_add(o, "pods_ipv6",
	    json_object_new_int((int32_t)pods6));
	json_object_object_add(o, "ipv6_prefixes",
	    json_object_new_int((int32_t)n80));
	if (en->last_failure[0] != '\0') {
		json_object_object_add(o, "last_failure",
		    json_object_new_string(en->last_failure));
		json_object_object_add(o, "last_failure_code",
		    json_object_new_string(en->last_failure_code));
		json_object_object_add(o, "last_failure_s_ago",
		    json_object_new_int64((int64_t)((now - en->last_failure_at)
		    / 1000)));
	}
	/* When growth is tried next, while it backs off. */
	if (en->grow_backoff_until > now)
		json_object_object_add(o, "next_growth_in_ms",
		    json_object_new_int64((int64_t)(en->grow_backoff_until -
		    now)));
	/* Prefix delegation: the /28 prefixes held (their addresses are in
	 * the counts above), frozen to drain, being given back. */
	json_object_object_add(o, "prefix_delegation",
	    json_object_new_string(prefix_mode(b)));
	json_object_object_add(o, "prefixes",
	    json_object_new_int((int32_t)nprefixes));
	json_object_object_add(o, "prefixes_frozen",
	    json_object_new_int((int32_t)nfrozen));
	json_object_object_add(o, "prefixes_removing",
	    json_object_new_int((int32_t)nremoving));
	json_object_object_add(o, "prefix_inhibited",
	    prefix_inhibits_json(en, now));
	return o;
}

/*
 * The cloud as the broker last heard it: seconds since it last answered
 * (null: never, since start), since a call last failed to reach it, and
 * why.  An outage shows as the first growing and the second recent.
 */
static struct json_object *
cloud_json(struct broker *b)
{
	struct engine *en = &b->engine;
	struct json_object *o = json_object_new_object();
	uint64_t now = now_ms();

	json_object_object_add(o, "last_answer_s_ago",
	    en->cloud_answered_at == 0 ? NULL : json_object_new_int64(
	    (int64_t)((now - en->cloud_answered_at) / 1000)));
	json_object_object_add(o, "unanswered_s",
	    json_object_new_int64((int64_t)((now - (en->cloud_answered_at ?
	    en->cloud_answered_at : b->started_ms)) / 1000)));
	if (en->cloud_failed_at != 0) {
		json_object_object_add(o, "last_failure_s_ago",
		    json_object_new_int64((int64_t)((now -
		    en->cloud_failed_at) / 1000)));
		json_object_object_add(o, "last_failure",
		    json_object_new_string(en->cloud_failure));
	}
	json_object_object_add(o, "reachable", json_object_new_boolean(
	    en->cloud_answered_at != 0 &&
	    en->cloud_answered_at >= en->cloud_failed_at));
	return o;
}

/* An address's state as show enis has always read: one that has cooled
 * is free, one given back and not reused yet cooling. */
static enum addr_state
addr_shown(const struct eni_addr *a, uint64_t now)
{
	if (a->state == ADDR_COOLING && addr_usable(a, now))
		return ADDR_FREE;
	if (a->state == ADDR_UNCONFIRMED)
		return ADDR_COOLING;
	return a->state;
}

/*
 * One /28 prefix of e: its addresses by state, as its addresses' own
 * entries show them (other: not in the pool yet, or being given back;
 * one the checks refused is not among them), and whether it is frozen
 * (no new pod in it, so that it drains) or being given back.
 */
static struct json_object *
prefix_json(const struct eni *e, const struct eni_prefix *px, uint64_t now)
{
	struct json_object *o = json_object_new_object();
	uint32_t n[ADDR_STATE_COUNT] = { 0 }, i;
	char cidr[CIDR4_STR_LEN];

	for (i = 0; i < e->naddrs; i++)
		if (e->addrs[i].block == px->base)
			n[addr_shown(&e->addrs[i], now)]++;
	cidr4_format(px->base, MSG_PREFIX_LEN, cidr);
	json_object_object_add(o, "cidr", json_object_new_string(cidr));
	json_object_object_add(o, "assigned",
	    json_object_new_int((int32_t)n[ADDR_ASSIGNED]));
	json_object_object_add(o, "free",
	    json_object_new_int((int32_t)n[ADDR_FREE]));
	json_object_object_add(o, "cooling",
	    json_object_new_int((int32_t)n[ADDR_COOLING]));
	json_object_object_add(o, "other", json_object_new_int(
	    (int32_t)(n[ADDR_PENDING] + n[ADDR_REMOVING])));
	json_object_object_add(o, "frozen",
	    json_object_new_boolean(px->frozen_until > now));
	json_object_object_add(o, "frozen_s",
	    json_object_new_int64(secs_left(px->frozen_until, now)));
	json_object_object_add(o, "removing",
	    json_object_new_boolean(px->removing));
	return o;
}

static struct json_object *
eni_json(struct broker *b, const struct eni *e)
{
	struct json_object *o = json_object_new_object();
	struct json_object *addrs = json_object_new_array();
	struct json_object *pfxs = json_object_new_array();
	char mac[MAC_STR_LEN], ip[IP4_STR_LEN], cidr[CIDR4_STR_LEN];
	char ip6[IP_ADDR_STR_LEN], cidr6[IP_PREFIX_STR_LEN];
	uint64_t now = now_ms();
	uint32_t i;

	(void)b;
	mac_format(e->mac, mac);
	json_object_object_add(o, "id", json_object_new_string(e->id));
	json_object_object_add(o, "state",
	    json_object_new_string(eni_state_shown(e->state)));
	json_object_object_add(o, "cause", json_object_new_string(e->cause));
	json_object_object_add(o, "since_s", json_object_new_int64(
	    (int64_t)((now - e->state_since) / 1000)));
	json_object_object_add(o, "primary",
	    json_object_new_boolean(e->primary));
	json_object_object_add(o, "subnet", json_object_new_string(e->subnet_id));
	json_object_object_add(o, "mac", json_object_new_string(mac));
	json_object_object_add(o, "device_index",
	    json_object_new_int(e->device_index));
	json_object_object_add(o, "table", json_object_new_int((int32_t)e->table));
	json_object_object_add(o, "delete_on_termination_pending",
	    json_object_new_boolean(e->dot_pending));
	for (i = 0; i < e->naddrs; i++) {
		struct json_object *a = json_object_new_object();

		ip4_format(e->addrs[i].ip, ip);
		json_object_object_add(a, "ip", json_object_new_string(ip));
		json_object_object_add(a, "state", json_object_new_string(
		    addr_state_name(addr_shown(&e->addrs[i], now))));
		if (e->addrs[i].pod != NULL)
			json_object_object_add(a, "container_id",
			    json_object_new_string(
			    e->addrs[i].pod->container_id));
		/* An address of a prefix names it; a single one does not. */
		if (e->addrs[i].block != 0) {
			cidr4_format(e->addrs[i].block, MSG_PREFIX_LEN, cidr);
			json_object_object_add(a, "prefix",
			    json_object_new_string(cidr));
		}
		json_object_array_add(addrs, a);
	}
	json_object_object_add(o, "addresses", addrs);
	for (i = 0; i < e->nprefixes; i++)
		json_object_array_add(pfxs, prefix_json(e, &e->prefixes[i],
		    now));
	json_object_object_add(o, "prefixes", pfxs);
	/* IPv6 (eni6.c): its own address and the /80 its pods' IPv6
	 * addresses come from, when it has them. */
	if (e->addr6.family == AF_INET6) {
		ip_addr_format(&e->addr6, ip6);
		json_object_object_add(o, "ipv6_address",
		    json_object_new_string(ip6));
	}
	if (e->prefix6.family == AF_INET6) {
		struct ip_prefix p6 = msg_prefix_of(&e->prefix6);

		ip_prefix_format(&p6, cidr6);
		json_object_object_add(o, "ipv6_prefix",
		    json_object_new_string(cidr6));
	}
	return o;
}

static struct json_object *
pod_json(const struct pod *p)
{
	struct json_object *o = json_object_new_object();
	static const char *const pst[] = { "adding", "ready", "deleting" };
	char ip[IP_ADDR_STR_LEN];

	json_object_object_add(o, "container_id",
	    json_object_new_string(p->container_id));
	json_object_object_add(o, "ifname", json_object_new_string(p->ifname));
	json_object_object_add(o, "namespace",
	    json_object_new_string(p->k8s_namespace));
	json_object_object_add(o, "name", json_object_new_string(p->k8s_name));
	/* Each family's address it holds: an IPv6-only pod has no "ip", a
	 * pod from before ip_family dual no "ip6". */
	if (p->ip.family != 0) {
		ip_addr_format(&p->ip, ip);
		json_object_object_add(o, "ip", json_object_new_string(ip));
	}
	if (p->ip6.family != 0) {
		ip_addr_format(&p->ip6, ip);
		json_object_object_add(o, "ip6", json_object_new_string(ip));
	}
	json_object_object_add(o, "eni", json_object_new_string(
	    p->eni ? p->eni->id : p->eni_id));
	json_object_object_add(o, "state", json_object_new_string(
	    p->lost ? "lost" : pst[p->state]));
	if (p->lost)
		json_object_object_add(o, "lost_why",
		    json_object_new_string(p->lost_why));
	json_object_object_add(o, "since", json_object_new_int64(p->since));
	return o;
}

static struct json_object *
subnet_json(const struct subnet *s)
{
	struct json_object *o = json_object_new_object();
	char cidr[IP_PREFIX_STR_LEN];
	uint64_t now = now_ms();

	json_object_object_add(o, "id", json_object_new_string(s->id));
	json_object_object_add(o, "configured",
	    json_object_new_boolean(s->configured));
	json_object_object_add(o, "known", json_object_new_boolean(s->known));
	if (s->known) {
		/* An IPv6-only subnet (ip_family ipv6) has no IPv4 CIDR. */
		if (s->cidr.addr.family == AF_INET) {
			ip_prefix_format(&s->cidr, cidr);
			json_object_object_add(o, "cidr",
			    json_object_new_string(cidr));
		}
		json_object_object_add(o, "az", json_object_new_string(s->az));
	}
	/* Its IPv6 block when associated, and the block's state. */
	if (s->cidr6.addr.family == AF_INET6) {
		ip_prefix_format(&s->cidr6, cidr);
		json_object_object_add(o, "cidr6", json_object_new_string(cidr));
	}
	if (s->ipv6_state != IPV6_ST_NONE)
		json_object_object_add(o, "ipv6_state", json_object_new_string(
		    cloud_ipv6_state_name(s->ipv6_state)));
	if (s->ipv6_native)
		json_object_object_add(o, "ipv6_native",
		    json_object_new_boolean(true));
	json_object_object_add(o, "available",
	    json_object_new_int((int32_t)s->available));
	json_object_object_add(o, "inhibited_s", json_object_new_int64(
	    secs_left(s->inhibited_until, now)));
	/* Refused a /28 lately: growth asks it for single addresses. */
	json_object_object_add(o, "prefix_inhibited_s", json_object_new_int64(
	    secs_left(s->prefix_inhibited_until, now)));
	return o;
}

/* Parse req, or answer bad-request: false then. */
static bool
parse_or_bad(struct jref *r, struct json_object *req, struct ctl_request *cr)
{
	char err[256];

	if (ctl_request_parse(req, cr, err, sizeof(err)) == 0)
		return true;
	jref_bad(r, "%s", err);
	return false;
}

/* ---- limits ---- */

/*
 * The pods a kubelet is commonly held to, whatever the addresses allow:
 * Kubernetes' default of 110, or 250 on an instance of 30 vCPUs or more
 * (what EKS sets with prefix delegation), by DescribeInstanceTypes' count
 * of the type's vCPUs.  Not told them, the default.
 */
static uint32_t
kubelet_pods_cap(const char *type, uint32_t vcpus, char *why, size_t whylen)
{
	if (vcpus == 0) {
		snprintf(why, whylen, "the default: the cloud did not give "
		    "the vCPUs of %s", type);
		return 110;
	}
	snprintf(why, whylen, "%s has %u vCPUs (250 from 30)", type, vcpus);
	return vcpus >= 30 ? 250 : 110;
}

bool
pool_limits(struct broker *b, struct pool_limits *l)
{
	const struct engine *en = &b->engine;
	struct subnet *primary;

	memset(l, 0, sizeof(*l));
	if (b->instance_state != INSTANCE_KNOWN || en->phase == PHASE_WAITING)
		return false;
	l->cloud_max_enis = b->instance.max_enis;
	l->cloud_ips_per_eni = b->instance.ips_per_eni;
	l->conf_max_enis = b->cfg.pool.max_enis;
	l->conf_max_pods = b->cfg.pool.max_pods;
	l->max_enis = en->params.max_enis;
	/* Each ENI keeps its own primary address; the rest are for pods
	 * (eni.c's capacity). */
	l->pod_ips_per_eni = en->ips_per_eni > 1 ? en->ips_per_eni - 1 : 0;
	if (l->pod_ips_per_eni > POOL_MAX_ADDRS)
		l->pod_ips_per_eni = POOL_MAX_ADDRS;
	/* The primary ENI serves pods only if its subnet is one growth may
	 * use (no subnets configured, or it is among them). */
	primary = subnet_by_id(b, b->instance.subnet_id);
	l->primary_for_pods = primary != NULL && primary->configured;
	l->pod_enis = l->max_enis;
	if (!l->primary_for_pods && l->pod_enis > 0)
		l->pod_enis--;
	l->pod_capacity = l->pod_enis * l->pod_ips_per_eni;
	/* With prefixes each slot of an ENI holds a /28: EC2's count, and
	 * what the pool's tables hold of it (POOL_MAX_PREFIXES an ENI, the
	 * pods one enid serves in all). */
	l->max_pods_with_prefixes = l->pod_capacity * POOL_PREFIX_ADDRS;
	l->prefix_capacity = l->pod_enis * POOL_PREFIX_ADDRS *
	    (l->pod_ips_per_eni < POOL_MAX_PREFIXES ? l->pod_ips_per_eni :
	    POOL_MAX_PREFIXES);
	if (l->prefix_capacity > POOL_MAX_HELD)
		l->prefix_capacity = POOL_MAX_HELD;
	l->max_pods = en->params.prefixes ? l->prefix_capacity :
	    l->pod_capacity;
	/* IPv6-only pods: a /80 does not run out; the pods enid holds do
	 * (ENID_MAX_PODS), as max_pods may say fewer. */
	l->ipv6_only = en->params.ipv6_only;
	if (l->ipv6_only)
		l->max_pods = POOL_MAX_HELD;
	if (l->conf_max_pods != 0 && l->conf_max_pods < l->max_pods)
		l->max_pods = l->conf_max_pods;
	l->kubelet_max_pods = kubelet_pods_cap(b->instance.instance_type,
	    b->instance.vcpus, l->kubelet_why, sizeof(l->kubelet_why));
	return true;
}

static struct json_object *
limits_json(struct broker *b, const struct pool_limits *l)
{
	struct json_object *o = json_object_new_object();

#define ADD_U32(name, v) \
	json_object_object_add(o, name, json_object_new_int64((int64_t)(v)))
	json_object_object_add(o, "instance_type",
	    json_object_new_string(b->instance.instance_type));
	/* What the pool counts: IPv4 addresses (ipv4, dual), or ENIs with
	 * their /80 (ipv6); enid's most pods either way. */
	json_object_object_add(o, "ip_family",
	    json_object_new_string(config_family_name(b->cfg.ip_family)));
	json_object_object_add(o, "pods_driven_by",
	    json_object_new_string(l->ipv6_only ? "enis" : "ipv4"));
	ADD_U32("enid_max_pods", POOL_MAX_HELD);
	ADD_U32("cloud_max_enis", l->cloud_max_enis);
	ADD_U32("cloud_ips_per_eni", l->cloud_ips_per_eni);
	ADD_U32("config_max_enis", l->conf_max_enis);
	ADD_U32("config_max_pods", l->conf_max_pods);
	ADD_U32("max_enis", l->max_enis);
	ADD_U32("pod_ips_per_eni", l->pod_ips_per_eni);
	json_object_object_add(o, "primary_for_pods",
	    json_object_new_boolean(l->primary_for_pods));
	ADD_U32("pod_enis", l->pod_enis);
	ADD_U32("pod_capacity", l->pod_capacity);
	ADD_U32("max_pods", l->max_pods);
	ADD_U32("warm_ip_target", b->cfg.pool.warm_ip_target);
	ADD_U32("minimum_ip_target", b->cfg.pool.minimum_ip_target);
	ADD_U32("warm_eni_target", b->cfg.pool.warm_eni_target);
	/* Prefix delegation: in effect or not, and whether the instance
	 * can hold prefixes at all (DescribeInstanceTypes: Nitro, or bare
	 * metal). */
	json_object_object_add(o, "prefix_delegation",
	    json_object_new_string(prefix_mode(b)));
	json_object_object_add(o, "prefixes_ok",
	    json_object_new_boolean(b->instance.prefixes_ok));
	json_object_object_add(o, "hypervisor",
	    json_object_new_string(b->instance.hypervisor));
	json_object_object_add(o, "bare_metal",
	    json_object_new_boolean(b->instance.bare_metal));
	ADD_U32("max_pods_with_prefixes", l->max_pods_with_prefixes);
	ADD_U32("prefix_capacity", l->prefix_capacity);
	ADD_U32("kubelet_max_pods", l->kubelet_max_pods);
	json_object_object_add(o, "kubelet_max_pods_why",
	    json_object_new_string(l->kubelet_why));
	ADD_U32("warm_prefix_target", b->cfg.pool.warm_prefix_target);
#undef ADD_U32
	return o;
}

static void
op_show(struct broker *b, struct jref *r, struct json_object *req)
{
	struct engine *en = &b->engine;
	struct json_object *o, *list;
	struct ctl_request cr;
	struct pool_limits lim;
	struct pod *p;
	uint32_t i;

	if (!parse_or_bad(r, req, &cr))
		return;
	o = json_object_new_object();
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	switch (cr.what) {
	case CTL_SHOW_POOL:
		json_object_object_add(o, "pool", pool_json(b));
		break;
	case CTL_SHOW_ENIS:
		list = json_object_new_array();
		for (i = 0; i < POOL_MAX_ENIS; i++)
			if (en->enis[i].used)
				json_object_array_add(list,
				    eni_json(b, &en->enis[i]));
		json_object_object_add(o, "enis", list);
		break;
	case CTL_SHOW_PODS:
		list = json_object_new_array();
		TAILQ_FOREACH(p, &en->pods, all)
			json_object_array_add(list, pod_json(p));
		json_object_object_add(o, "pods", list);
		break;
	case CTL_SHOW_SUBNETS:
		list = json_object_new_array();
		for (i = 0; i < en->nsubnets; i++)
			json_object_array_add(list,
			    subnet_json(&en->subnets[i]));
		json_object_object_add(o, "subnets", list);
		break;
	case CTL_SHOW_CONFIG:
		/* The broker wiped the secrets at start; config_to_json
		 * leaves their keys out anyway. */
		json_object_object_add(o, "config", config_to_json(&b->cfg));
		json_object_object_add(o, "config_path",
		    json_object_new_string(b->config_path));
		json_object_object_add(o, "static_credentials",
		    json_object_new_boolean(b->static_keys));
		break;
	case CTL_SHOW_LIMITS:
		if (!pool_limits(b, &lim)) {
			json_object_put(o);
			jref_error(r, "not-ready", "enid does not know its "
			    "instance's limits yet (instance %s)",
			    instance_state_name(b->instance_state));
			return;
		}
		json_object_object_add(o, "limits", limits_json(b, &lim));
		break;
	case CTL_SHOW_SNAT:
		/* Answered once netd has read its table back (snat.c). */
		json_object_put(o);
		snat_show(b, r);
		return;
	default:
		json_object_put(o);
		jref_bad(r, "internal: show %u", (unsigned)cr.what);
		return;
	}
	jref_reply(r, o);
}

static void
op_reconcile(struct broker *b, struct jref *r, struct json_object *req)
{
	struct engine *en = &b->engine;
	struct ctl_request cr;

	if (!parse_or_bad(r, req, &cr))
		return;
	if (en->phase == PHASE_WAITING) {
		jref_error(r, "not-ready", "enid does not know its instance "
		    "yet");
		return;
	}
	if (en->nrecon_waiters == sizeof(en->recon_waiters) /
	    sizeof(en->recon_waiters[0])) {
		jref_error(r, "busy", "too many reconcile requests waiting");
		return;
	}
	log_info("ctl: reconcile asked for by pid %d uid %u", (int)r->pid,
	    (unsigned)r->uid);
	en->recon_waiters[en->nrecon_waiters++] = *r;
	r->server = NULL;
	/* A run under way answers with the next one, which sees now. */
	if (en->recon != NULL)
		en->recon_again = true;
	else
		reconcile_now(b, "asked for by enidctl");
}

static void
op_drain(struct broker *b, struct jref *r, struct json_object *req)
{
	struct json_object *o;
	struct ctl_request cr;
	struct eni *e;

	if (!parse_or_bad(r, req, &cr))
		return;
	if ((e = eni_find(b, cr.eni)) == NULL) {
		jref_error(r, "unknown-eni", "no ENI \"%.64s\" in the pool",
		    cr.eni);
		return;
	}
	if (e->primary) {
		jref_error(r, "refused", "%s is the primary ENI; it is never "
		    "released", e->id);
		return;
	}
	if (e->state != ENI_READY && !eni_state_draining(e->state)) {
		jref_error(r, "refused", "%s is %s, not ready", e->id,
		    eni_state_shown(e->state));
		return;
	}
	log_info("ctl: drain of %s asked for by pid %d uid %u", e->id,
	    (int)r->pid, (unsigned)r->uid);
	/* One being torn down is on its way out already. */
	if (e->state != ENI_TEARING_DOWN)
		eni_set_state(e, ENI_DRAINING, "drain asked for by enidctl; "
		    "released once no pod is left on it");
	o = json_object_new_object();
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "eni", json_object_new_string(e->id));
	json_object_object_add(o, "state",
	    json_object_new_string(eni_state_shown(e->state)));
	jref_reply(r, o);
}

static void
op_status(struct broker *b, struct jref *r, struct json_object *req)
{
	struct json_object *o, *procs, *self;
	struct ctl_request cr;

	if (!parse_or_bad(r, req, &cr))
		return;
	o = json_object_new_object();
	procs = json_object_new_array();
	self = json_object_new_object();
	json_object_object_add(self, "name", json_object_new_string("enid"));
	json_object_object_add(self, "pid", json_object_new_int(getpid()));
	json_object_object_add(self, "ready", json_object_new_boolean(
	    b->netd.ready && b->cloudd.ready));
	json_object_array_add(procs, self);
	json_object_array_add(procs, process_json(&b->netd));
	json_object_array_add(procs, process_json(&b->cloudd));
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "version", json_object_new_string(VERSION));
	json_object_object_add(o, "uptime_s",
	    json_object_new_int64((int64_t)((now_ms() - b->started_ms) / 1000)));
	json_object_object_add(o, "log_level",
	    json_object_new_string(log_level_name(log_get_level())));
	json_object_object_add(o, "processes", procs);
	json_object_object_add(o, "instance", instance_json(b));
	json_object_object_add(o, "pool", pool_json(b));
	json_object_object_add(o, "cloud", cloud_json(b));
	json_object_object_add(o, "snat", snat_status_json(b));
	jref_reply(r, o);
}

static void
op_log_level(struct broker *b, struct jref *r, struct json_object *req)
{
	struct json_object *o;
	struct ctl_request cr;
	struct msg_loglevel ll;
	int level;

	if (!parse_or_bad(r, req, &cr))
		return;
	level = cr.level;
	log_set_level(level);
	memset(&ll, 0, sizeof(ll));
	ll.level = level;
	broker_notify(b, &b->netd, MSG_LOG_LEVEL, &ll, sizeof(ll));
	broker_notify(b, &b->cloudd, MSG_LOG_LEVEL, &ll, sizeof(ll));
	log_info("ctl: log level set to %s by pid %d uid %u",
	    log_level_name(level), (int)r->pid, (unsigned)r->uid);
	o = json_object_new_object();
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "log_level",
	    json_object_new_string(log_level_name(level)));
	jref_reply(r, o);
}

static void
op_metrics(struct broker *b, struct jref *r, struct json_object *req)
{
	struct ctl_request cr;

	if (!parse_or_bad(r, req, &cr))
		return;
	metrics_request(b, r);
}

const struct jop ctl_ops[] = {
	{ "status",	op_status },
	{ "show",	op_show },
	{ "reconcile",	op_reconcile },
	{ "drain",	op_drain },
	{ "log-level",	op_log_level },
	{ "metrics",	op_metrics },
	{ NULL,		NULL },
};
