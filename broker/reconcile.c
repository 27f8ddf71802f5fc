/*
 * Reconciliation: the pool against the cloud's and the kernel's own lists,
 * at start and every reconcile_interval_s (doc/design.md, reconciliation).
 *
 *   1. describe the ENIs attached to this instance: the attached count
 *      for limit decisions is the cloud's; tagged ENIs the pool doesn't
 *      know are adopted (through netd set-up); pool ENIs the cloud no
 *      longer has are dropped, and their pods logged; each ENI's
 *      addresses are corrected both ways; DeleteOnTermination is retried;
 *   2. describe the ENIs tagged for this instance: at start, ours that
 *      are left unattached (a crash between create and attach) go;
 *   3. dump netd's rules: a pod with an address gets its rules back,
 *      rules of no pod go;
 *   3a. each ready ENI's link and table are set up again by netd, which
 *      does only what is missing (an operator's "ip route flush table"),
 *      and says how much: that is drift;
 *   3b. once those rule repairs are in, dump the main table's host
 *      routes and the links: an enid-cni pod whose host veth is there
 *      but whose "ADDR/32 dev VETH" route is not gets it back from netd
 *      (which checks it against netd's own rule for the address);
 *   4. the leak collector: available ENIs older than leak_gc.grace_s,
 *      tagged for this instance, or for this cluster and an instance that
 *      no longer exists, are deleted.  Untagged ones and other clusters'
 *      are never touched.
 *
 * The questions of steps 1 to 4 are all asked as a run starts, so that
 * their answers take one round trip to the cloud rather than four (at
 * start, on every node's critical path); each answer is used in the order
 * above once it is complete.  The first run's questions also go out with
 * the first subnets describe; its answers wait for that (adopting an ENI
 * needs its subnet).
 *
 * A describe stream that does not end with an ok CLOUD_DONE is discarded
 * whole: a partial list would make present ENIs look gone.  Every address
 * the cloud names is checked before it joins the pool.
 */
#include <arpa/inet.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "addr.h"
#include "enid.h"
#include "log.h"

#define RECON_MAX_ENIS		(2 * POOL_MAX_ENIS)
#define RECON_MAX_RULES		(4 * CKPT_MAX_PODS + 64) /* dual: 4 a pod */
#define RECON_MAX_FIXES		64	/* stale rules removed per run */
#define RECON_RETRY_MS		5000
#define RECON_MAX_LEAKS		16	/* deleted per run */
#define RECON_MAX_ROUTES	(CKPT_MAX_PODS + 1024)	/* host routes */
#define RECON_MAX_LINKS		(CKPT_MAX_PODS + 1024)
#define RECON_ROUTES_INFLIGHT	16	/* host-route restores at once */
/*
 * A pod whose ADD was answered less than this before the route dump was
 * asked is not judged by it: enid-cni adds the host route after the
 * answer, so the dump may predate it (a restore racing the plugin is
 * harmless, as the plugin takes netd's route for its own, but it would
 * be reported as drift).
 */
#define RECON_ROUTE_GRACE_MS	5000

enum recon_step {
	RS_ATTACHED = 0,
	RS_OURS,
	RS_RULES,
	RS_ROUTES,
	RS_LEAKS,
	RS_INSTANCES,
	RS_DONE,
};

/* An ENI as the pool had it when the cloud was asked. */
struct recon_known {
	char			 id[MSG_ID_LEN];
	enum eni_state		 state;
	uint32_t		 naddrs;		/* single ones */
	uint32_t		 addrs[POOL_MAX_ADDRS];
	uint32_t		 nprefixes;
	uint32_t		 prefixes[POOL_MAX_PREFIXES];
	bool			 recheck;	/* asked for before the run */
};

/* The questions a run asks at its start. */
enum recon_ask {
	ASK_ATTACHED = 0,	/* describe: attached to this instance */
	ASK_OURS,		/* describe: tagged for this instance */
	ASK_RULES,		/* netd's rule dump */
	ASK_LEAKS,		/* describe: available, ours, this cluster */
	ASK_ROUTES,		/* netd's dump of host routes */
	ASK_LINKS,		/* netd's dump of links */
	ASK_COUNT,
};

struct recon_question {
	struct reconcile_run	*r;
	enum recon_ask		 which;
	struct breq		 req;
	bool			 asked;
	bool			 answered;
	bool			 overflow;
	char			 failure[MSG_ERR_LEN + 96];	/* "": ok */
	size_t			 n;
	size_t			 seen;		/* leak candidates, all told */
	/* its entries, grown as they come: a run holds only what the
	 * cloud and netd told it, not room for the most they could */
	void			*entries;
	size_t			 cap;
};

struct reconcile_run {
	struct broker		*b;
	enum recon_step		 step;
	uint32_t		 rules_id;	/* the rule dump's request id */
	bool			 rules_done;	/* its repairs are started */
	bool			 rebuilding;	/* taking in what the start skipped */
	bool			 first;
	/* the enidctl requests that waited when it started: those that
	 * come later are answered by the next run, which sees their now */
	uint32_t		 nwaiters;
	uint32_t		 rebuilt_enis;	/* at start: not drift */
	uint32_t		 rebuilt_addrs;
	char			 why[128];
	struct breq		 req;		/* check-instances */
	struct recon_question	 q[ASK_COUNT];
	/* the pool when the attached ENIs were asked for: an answer shows
	 * the cloud as it was then, so only what the pool had then is
	 * judged by it */
	size_t			 nknown;
	struct recon_known	 known[POOL_MAX_ENIS];
	/* the answer the step at hand reads */
	size_t			 nenis;
	const struct msg_cloud_eni *enis;
	size_t			 nrules;
	const struct msg_netd_rule *rules;
	/* each ready ENI's link and table, set up again: netd does what is
	 * missing, and says how much that was */
	struct recon_table_fix {
		struct reconcile_run	*r;
		struct breq		 req;
		char			 eni_id[MSG_ID_LEN];
		uint32_t		 table;
	}			 table_fixes[POOL_MAX_ENIS];
	size_t			 ntable_fixes;
	struct breq		 fixes[RECON_MAX_FIXES];
	struct ip_addr		 fix_ips[RECON_MAX_FIXES];
	size_t			 nfixes, fixes_out;
	size_t			 nleaks;
	struct msg_cloud_eni	 leaks[RECON_MAX_LEAKS];
	struct msg_cloud_check_instances check;
	/* host routes to put back: asked for RECON_ROUTES_INFLIGHT at a
	 * time, the run going on once all are answered */
	uint64_t		 routes_asked;	/* ms: the dump was asked */
	bool			 routes_done;	/* compared */
	size_t			 nroute_fixes, route_next, routes_out;
	struct msg_netd_pod_route *route_fixes;
	struct breq		 route_reqs[RECON_ROUTES_INFLIGHT];
	uint32_t		 drifts;
	bool			 deferred;	/* an adoption waits for its
						 * subnet to be described */
};

static void	recon_advance(struct reconcile_run *r);
static bool	recon_same_link(struct broker *, const struct eni *,
		    const struct msg_cloud_eni *);
static void	recon_finish(struct reconcile_run *r, const char *failure);

/* ---- helpers ---- */

static const char *
tag_value(const struct msg_cloud_eni *ce, const char *key)
{
	uint32_t i;

	for (i = 0; i < ce->ntags && i < MSG_MAX_TAGS; i++)
		if (strcmp(ce->tags[i].key, key) == 0)
			return ce->tags[i].value;
	return NULL;
}

static bool
tagged_for_us(struct broker *b, const struct msg_cloud_eni *ce)
{
	const char *creator = tag_value(ce, TAG_CREATOR);
	const char *inst = tag_value(ce, TAG_INSTANCE);

	return creator != NULL && strcmp(creator, TAG_CREATOR_VALUE) == 0 &&
	    inst != NULL && strcmp(inst, b->instance.instance_id) == 0;
}

/* Note the pool as it is now, as the attached ENIs are asked for. */
static void
recon_remember(struct reconcile_run *r)
{
	struct engine *en = &r->b->engine;
	uint32_t i, j;

	r->nknown = 0;
	for (i = 0; i < POOL_MAX_ENIS; i++) {
		const struct eni *e = &en->enis[i];
		struct recon_known *k;

		if (!e->used || e->id[0] == '\0')
			continue;
		k = &r->known[r->nknown++];
		memcpy(k->id, e->id, sizeof(k->id));
		k->state = e->state;
		k->naddrs = 0;
		for (j = 0; j < e->naddrs && k->naddrs < POOL_MAX_ADDRS; j++)
			if (e->addrs[j].block == 0)
				k->addrs[k->naddrs++] = e->addrs[j].ip;
		k->nprefixes = e->nprefixes;
		for (j = 0; j < e->nprefixes; j++)
			k->prefixes[j] = e->prefixes[j].base;
		k->recheck = e->recheck;
	}
}

/* Set up by netd, or being set up, and not on the cloud's removal path:
 * ready, configuring or draining as shown. */
static bool
with_netd(enum eni_state st)
{
	return st == ENI_READY || eni_state_configuring(st) ||
	    eni_state_draining(st);
}

static const struct recon_known *
recon_known(const struct reconcile_run *r, const char *id)
{
	size_t i;

	for (i = 0; i < r->nknown; i++)
		if (strcmp(r->known[i].id, id) == 0)
			return &r->known[i];
	return NULL;
}

static bool
known_addr(const struct recon_known *k, uint32_t ip)
{
	uint32_t i;

	for (i = 0; i < k->naddrs; i++)
		if (k->addrs[i] == ip)
			return true;
	return false;
}

static bool
known_prefix(const struct recon_known *k, uint32_t base)
{
	uint32_t i;

	for (i = 0; i < k->nprefixes; i++)
		if (k->prefixes[i] == base)
			return true;
	return false;
}

static void
drift(struct reconcile_run *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
drift(struct reconcile_run *r, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_warnx("reconcile: %s", msg);
	r->drifts++;
	r->b->engine.stats.drifts_fixed++;
}

/* A pool slot to carry an ENI that is not in the pool through the
 * removal path (detach if need be, wait, delete). */
static void
remove_foreign_slot(struct broker *b, const struct msg_cloud_eni *ce,
    const char *why)
{
	const char *inst;
	struct eni *e;

	if (eni_find(b, ce->eni_id) != NULL || (e = eni_new(b)) == NULL)
		return;
	msg_strlcpy(e->id, ce->eni_id, sizeof(e->id));
	msg_strlcpy(e->subnet_id, ce->subnet_id, sizeof(e->subnet_id));
	memcpy(e->mac, ce->mac, 6);
	e->ours = true;
	if ((inst = tag_value(ce, TAG_INSTANCE)) != NULL &&
	    strcmp(inst, b->instance.instance_id) != 0)
		msg_strlcpy(e->tag_instance, inst, sizeof(e->tag_instance));
	msg_strlcpy(e->attachment_id, ce->attachment_id,
	    sizeof(e->attachment_id));
	eni_set_state(e, ENI_WAITING, "%s", why);
	eni_remove(e, "%s", why);
}

/* ---- step 1: the ENIs attached to this instance ---- */

/*
 * Correct e's addresses by the cloud's answer.  fresh: e was made from
 * this answer, which has all of it.  Otherwise the answer is as old as
 * the question, so it speaks only of what the pool had then: an address
 * that arrived since (an assign answered meanwhile) is not dropped, one
 * that left since (an unassign) is not added back, and an ENI that
 * joined the pool since is left for the next run.
 */
static void
recon_addresses(struct reconcile_run *r, struct eni *e,
    const struct msg_cloud_eni *ce, bool fresh)
{
	struct broker *b = r->b;
	const struct recon_known *k = fresh ? NULL : recon_known(r, e->id);
	const struct pod *lp;
	char ip[IP4_STR_LEN], why[128];
	uint32_t addrs[MSG_MAX_ENI_ADDRS], i, j;

	/* Not while an address change of its own is on its way. */
	if (eni_addrs_changing(e) || (!fresh && k == NULL))
		return;
	ip_addrs_in4(ce->addrs, ce->naddrs < MSG_MAX_ENI_ADDRS ? ce->naddrs :
	    MSG_MAX_ENI_ADDRS, addrs);
	e->addrs_seen = b->engine.recon_asked;
	/* Judged by a run asked after the answer that was not all taken
	 * (recon_prefixes follows, on the same answer). */
	if (e->recheck && (fresh || k->recheck)) {
		e->recheck = false;
		engine_kick(b);
	}
	for (i = 0; i < ce->naddrs && i < MSG_MAX_ENI_ADDRS; i++) {
		if (eni_addr_index(e, addrs[i]) >= 0 ||
		    (k != NULL && known_addr(k, addrs[i])))
			continue;
		ip4_format(addrs[i], ip);
		if ((lp = pod_keeping_ip(b, &ce->addrs[i], e)) != NULL) {
			log_warnx("reconcile: %s: %s is still the address of "
			    "pod %s/%s, %s (%s); not used until it is deleted",
			    e->id, ip, lp->container_id, lp->ifname,
			    pod_keeping_why(lp), lp->eni_id);
			continue;
		}
		if (!eni_addr_acceptable(b, e, addrs[i], why,
		    sizeof(why))) {
			log_security("reconcile: %s carries %s, %s; never used",
			    e->id, ip, why);
			continue;
		}
		if (e->naddrs == POOL_MAX_ENI_ADDRS)
			break;
		memset(&e->addrs[e->naddrs], 0, sizeof(e->addrs[0]));
		e->addrs[e->naddrs].ip = addrs[i];
		e->addrs[e->naddrs].state = e->state == ENI_READY ||
		    eni_state_draining(e->state) ? ADDR_FREE : ADDR_PENDING;
		e->addrs[e->naddrs].pod = NULL;
		e->naddrs++;
		if (r->first || r->rebuilding) {
			/* At start the pool is rebuilt from the cloud: what it
			 * learns is not drift. */
			r->rebuilt_addrs++;
			log_debug("reconcile: %s: %s, as the cloud assigns it",
			    e->id, ip);
		} else
			drift(r, "%s: the cloud assigns %s, which the pool did "
			    "not have; added", e->id, ip);
	}
	for (i = e->naddrs; i-- > 0;) {
		bool present = false;

		if (e->addrs[i].block != 0)
			continue;	/* a prefix's: recon_prefixes */
		for (j = 0; j < ce->naddrs && j < MSG_MAX_ENI_ADDRS; j++)
			if (addrs[j] == e->addrs[i].ip)
				present = true;
		if (present && e->addrs[i].state == ADDR_UNCONFIRMED &&
		    e->addrs[i].cool_until <= b->engine.recon_asked) {
			/* Still there after any unassign could land. */
			addr_set(e, i, ADDR_COOLING);
			engine_kick(b);
		}
		if (present || (k != NULL && !known_addr(k, e->addrs[i].ip)))
			continue;
		ip4_format(e->addrs[i].ip, ip);
		if (e->addrs[i].pod != NULL)
			pod_lost(e->addrs[i].pod, "the cloud no longer assigns "
			    "its address");
		drift(r, "%s: %s is no longer assigned by the cloud; dropped",
		    e->id, ip);
		e->addrs[i] = e->addrs[--e->naddrs];
	}
}

/*
 * Correct e's prefixes by the cloud's answer, whole prefixes compared, as
 * recon_addresses does addresses: one the cloud delegates that the pool
 * did not have (when asked) is taken, checked; one the pool had that the
 * cloud no longer delegates is dropped with its addresses, and a pod on
 * one of them is lost.  A prefix's addresses kept out of use after an
 * unassign of unknown outcome come back once it is seen still there.
 */
static void
recon_prefixes(struct reconcile_run *r, struct eni *e,
    const struct msg_cloud_eni *ce, bool fresh)
{
	struct broker *b = r->b;
	const struct recon_known *k = fresh ? NULL : recon_known(r, e->id);
	char ip[IP4_STR_LEN];
	uint32_t prefixes[MSG_MAX_ENI_PREFIXES];
	uint32_t i, j, n = ce->nprefixes < MSG_MAX_ENI_PREFIXES ?
	    ce->nprefixes : MSG_MAX_ENI_PREFIXES;

	if (eni_addrs_changing(e) || (!fresh && k == NULL))
		return;
	ip_addrs_in4(ce->prefixes, n, prefixes);
	if (ce->nbad_prefixes > 0)
		log_security("reconcile: %s carries %u prefixes that are not "
		    "aligned /%d ones; never used", e->id, ce->nbad_prefixes,
		    MSG_PREFIX_LEN);
	for (i = 0; i < n; i++) {
		if (eni_prefix_index(e, prefixes[i]) >= 0 ||
		    (k != NULL && known_prefix(k, prefixes[i])))
			continue;
		if (eni_take_prefixes(e, &prefixes[i], 1,
		    e->state == ENI_READY || eni_state_draining(e->state) ?
		    ADDR_FREE : ADDR_PENDING, "reconcile") == 0)
			continue;
		ip4_format(prefixes[i], ip);
		if (r->first || r->rebuilding) {
			r->rebuilt_addrs += POOL_PREFIX_ADDRS;
			log_debug("reconcile: %s: prefix %s/%d, as the cloud "
			    "delegates it", e->id, ip, MSG_PREFIX_LEN);
		} else
			drift(r, "%s: the cloud delegates prefix %s/%d, which "
			    "the pool did not have; added", e->id, ip,
			    MSG_PREFIX_LEN);
	}
	for (i = e->nprefixes; i-- > 0;) {
		uint32_t base = e->prefixes[i].base;
		bool present = false;

		for (j = 0; j < n; j++)
			if (prefixes[j] == base)
				present = true;
		if (present) {
			for (j = 0; j < e->naddrs; j++)
				if (e->addrs[j].block == base &&
				    e->addrs[j].state == ADDR_UNCONFIRMED &&
				    e->addrs[j].cool_until <=
				    b->engine.recon_asked) {
					addr_set(e, j, ADDR_COOLING);
					engine_kick(b);
				}
			/* An address of it left out while a lost pod still
			 * had it comes back once that pod is gone. */
			if (eni_prefix_retake(e, base,
			    e->state == ENI_READY ||
			    eni_state_draining(e->state) ? ADDR_FREE :
			    ADDR_PENDING) > 0)
				engine_kick(b);
			continue;
		}
		if (k != NULL && !known_prefix(k, base))
			continue;
		ip4_format(base, ip);
		drift(r, "%s: prefix %s/%d is no longer delegated by the "
		    "cloud; dropped", e->id, ip, MSG_PREFIX_LEN);
		eni_drop_prefix(e, i, "the cloud no longer delegates its "
		    "prefix");
		engine_kick(b);
	}
}

static void
recon_primary(struct reconcile_run *r, const struct msg_cloud_eni *ce)
{
	struct broker *b = r->b;
	struct eni *e = eni_find(b, ce->eni_id);
	struct subnet *s;
	bool fresh = e == NULL;

	if (e == NULL) {
		if (memcmp(ce->mac, b->instance.primary_mac, 6) != 0 ||
		    strcmp(ce->eni_id, b->instance.primary_eni) != 0) {
			log_security("reconcile: device 0 is %s, not the "
			    "primary ENI %s that IMDS names; not used",
			    ce->eni_id, b->instance.primary_eni);
			return;
		}
		if ((e = eni_new(b)) == NULL)
			return;
		msg_strlcpy(e->id, ce->eni_id, sizeof(e->id));
		msg_strlcpy(e->subnet_id, ce->subnet_id, sizeof(e->subnet_id));
		memcpy(e->mac, ce->mac, 6);
		msg_strlcpy(e->attachment_id, ce->attachment_id,
		    sizeof(e->attachment_id));
		e->primary = true;
		e->device_index = 0;
		e->table = 0;
		e->primary_ip = ip_addr_in4(&ce->primary_ip);
		s = subnet_by_id(b, ce->subnet_id);
		e->subnet = s ? (int)(s - b->engine.subnets) : -1;
		eni_set_state(e, ENI_READY, "the primary ENI");
		log_info("%s: the primary ENI, in %s; %s%s", e->id,
		    e->subnet_id, b->engine.params.ipv6_only ? "its /80 "
		    "serves pods" : "its secondary addresses are pooled",
		    s && s->configured ? "" : " only if its subnet is "
		    "configured");
	} else if (!recon_same_link(b, e, ce))
		return;
	recon_addresses(r, e, ce, fresh);
	recon_prefixes(r, e, ce, fresh);
	if (!eni_addrs_changing(e))
		eni6_learn(e, ce, "reconcile:");
}

/*
 * An ENI about to be adopted, judged as a created one is: its link and
 * table must be its own.  One that names a pool ENI's MAC or device index
 * would have netd set up, and later tear down, that ENI's link and table;
 * one whose address is a pod's or the node's would be given to it.
 * Returns why it is refused, or NULL.
 */
static const char *
adopt_check(struct reconcile_run *r, const struct msg_cloud_eni *ce,
    const struct subnet *s, char *why, size_t whylen)
{
	struct broker *b = r->b;
	struct eni probe;
	char ip[IP4_STR_LEN], bad[96];
	uint32_t i;

	if (mac_is_zero(ce->mac) || (ce->mac[0] & 1) ||
	    memcmp(ce->mac, b->instance.primary_mac, 6) == 0)
		return "a MAC that is none, multicast, or the node's own";
	if (ce->device_index < 1 ||
	    (uint32_t)ce->device_index >= b->engine.params.max_enis)
		return "a device index outside the instance's secondaries";
	for (i = 0; i < POOL_MAX_ENIS; i++) {
		const struct eni *o = &b->engine.enis[i];

		if (!o->used)
			continue;
		if (memcmp(o->mac, ce->mac, 6) == 0)
			return "the MAC of an ENI in the pool";
		if (o->device_index == ce->device_index)
			return "the device index of an ENI in the pool";
	}
	/* An ENI of an IPv6-only subnet has no IPv4 address to check (its
	 * IPv6 ones are judged by eni6_learn, as a created ENI's are). */
	if (s->known && s->cidr.addr.family != AF_INET)
		return ip_addr_in4(&ce->primary_ip) != 0 || ce->naddrs > 0 ?
		    "an IPv4 address in an IPv6-only subnet" : NULL;
	/* Its own address, checked as a created ENI's is. */
	memset(&probe, 0, sizeof(probe));
	probe.subnet = (int)(s - b->engine.subnets);
	msg_strlcpy(probe.subnet_id, s->id, sizeof(probe.subnet_id));
	if (!eni_addr_acceptable(b, &probe, ip_addr_in4(&ce->primary_ip), bad,
	    sizeof(bad))) {
		ip4_format(ip_addr_in4(&ce->primary_ip), ip);
		snprintf(why, whylen, "its own address %s: %s", ip, bad);
		return why;
	}
	return NULL;
}

/*
 * A pool ENI the cloud lists as detaching, which enid is not removing: it
 * is being detached behind enid's back, and no pod placed on it from now
 * would route.  It leaves the pool now, as when it is no longer listed,
 * not once the detach is done (a reconcile interval later).
 */
static bool
recon_detaching(struct reconcile_run *r, struct eni *e,
    const struct msg_cloud_eni *ce)
{
	const struct recon_known *was;

	if (ce->attach_status != ENI_ST_DETACHING &&
	    ce->status != ENI_ST_DETACHING)
		return false;
	if (e->primary || !with_netd(e->state))
		return false;
	if ((was = recon_known(r, e->id)) == NULL || !with_netd(was->state))
		return false;
	drift(r, "%s: being detached from this instance, not by enid; "
	    "dropped from the pool", e->id);
	/* The cloud's word on the detach decides the removal's steps. */
	e->attachment_id[0] = '\0';
	eni_remove(e, "detached behind enid's back");
	return true;
}

/*
 * ENIs the start found attaching or detaching that are no longer listed as
 * attached to this instance: nothing of theirs is the pool's to hold.
 */
static void
start_skipped_prune(struct reconcile_run *r)
{
	struct engine *en = &r->b->engine;
	uint32_t k;
	size_t i;

	for (k = 0; k < en->nstart_skipped;) {
		for (i = 0; i < r->nenis; i++)
			if (strcmp(r->enis[i].eni_id, en->start_skipped[k]) ==
			    0 && strcmp(r->enis[i].instance_id,
			    r->b->instance.instance_id) == 0)
				break;
		if (i < r->nenis) {
			k++;
			continue;
		}
		log_info("reconcile: %s, attaching or detaching at the start, "
		    "is attached no more", en->start_skipped[k]);
		memcpy(en->start_skipped[k],
		    en->start_skipped[--en->nstart_skipped], MSG_ID_LEN);
	}
}

/* Was id found attaching by the start's reconcile?  take: and forget it. */
static bool
start_skipped(struct broker *b, const char *id, bool take)
{
	struct engine *en = &b->engine;
	uint32_t i;

	for (i = 0; i < en->nstart_skipped; i++)
		if (strcmp(en->start_skipped[i], id) == 0) {
			if (take)
				memcpy(en->start_skipped[i], en->start_skipped[
				    --en->nstart_skipped], MSG_ID_LEN);
			return true;
		}
	return false;
}

static void
recon_adopt(struct reconcile_run *r, const struct msg_cloud_eni *ce)
{
	struct broker *b = r->b;
	struct subnet *s = subnet_by_id(b, ce->subnet_id);
	struct eni *e;
	const char *bad;
	char why[160];
	bool skipped;

	if (ce->attach_status != ENI_ST_IN_USE && ce->status != ENI_ST_IN_USE) {
		/* Attaching or detaching: next time.  One an earlier life of
		 * enid was attaching is the start's to take in then. */
		if (r->first && b->engine.nstart_skipped < POOL_MAX_ENIS &&
		    !start_skipped(b, ce->eni_id, false))
			msg_strlcpy(b->engine.start_skipped[
			    b->engine.nstart_skipped++], ce->eni_id, MSG_ID_LEN);
		return;
	}
	if (s == NULL || !s->known) {
		log_info("reconcile: %s is in subnet %s, not known yet; "
		    "adopted once it is described", ce->eni_id, ce->subnet_id);
		if (s == NULL && b->engine.nsubnets < POOL_MAX_SUBNETS) {
			s = &b->engine.subnets[b->engine.nsubnets++];
			memset(s, 0, sizeof(*s));
			msg_strlcpy(s->id, ce->subnet_id, sizeof(s->id));
		}
		/* At start, the pods restored on it wait until the cloud has
		 * been asked about it, rather than look lost: also when it
		 * was added by an earlier run that a describe already in
		 * flight (without it) then answered. */
		if (s != NULL && !s->asked)
			r->deferred = true;
		subnets_describe(b);
		return;
	}
	/* Judged now, whatever comes of it: the rebuild waits no more. */
	skipped = start_skipped(b, ce->eni_id, true);
	if ((bad = adopt_check(r, ce, s, why, sizeof(why))) != NULL) {
		log_security("reconcile: %s is listed as attached and tagged for "
		    "this node, with %s; not adopted, and nothing is done "
		    "to it", ce->eni_id, bad);
		return;
	}
	if ((e = eni_new(b)) == NULL)
		return;
	msg_strlcpy(e->id, ce->eni_id, sizeof(e->id));
	msg_strlcpy(e->subnet_id, ce->subnet_id, sizeof(e->subnet_id));
	e->subnet = (int)(s - b->engine.subnets);
	memcpy(e->mac, ce->mac, 6);
	msg_strlcpy(e->attachment_id, ce->attachment_id,
	    sizeof(e->attachment_id));
	e->device_index = ce->device_index;
	e->primary_ip = ip_addr_in4(&ce->primary_ip);
	e->ours = true;
	e->dot_pending = !ce->delete_on_termination;
	eni_set_state(e, ENI_ATTACHING, "attached and tagged for this node");
	if (r->first || skipped) {
		r->rebuilt_enis++;
		r->rebuilding = true;	/* its addresses too (recon_addresses) */
		(r->first ? log_debug : log_info)("reconcile: %s: attached "
		    "and tagged for this node; taken into the pool%s", e->id,
		    r->first ? "" : " (it was attaching at the start)");
	} else
		drift(r, "%s: attached and tagged for this node but not in the "
		    "pool; adopting it", e->id);
	recon_addresses(r, e, ce, true);
	recon_prefixes(r, e, ce, true);
	eni6_learn(e, ce, "reconcile: adopted with");
	r->rebuilding = false;
	if (e->dot_pending)
		eni_set_dot(e);
	eni_configure(e);
}

/*
 * An ENI's MAC never changes: an entry that gives a pool ENI another one
 * (the node's own, say) is not the cloud's view of that ENI, and none of
 * it is used.  The ENI stays as the pool has it (it is listed).
 */
static bool
recon_same_link(struct broker *b, const struct eni *e,
    const struct msg_cloud_eni *ce)
{
	char got[MAC_STR_LEN], have[MAC_STR_LEN];

	if (memcmp(ce->mac, e->mac, 6) == 0)
		return true;
	mac_format(ce->mac, got);
	mac_format(e->mac, have);
	log_security("reconcile: %s is described with MAC %s%s, not its own "
	    "%s; the entry is not used", e->id, got,
	    memcmp(ce->mac, b->instance.primary_mac, 6) == 0 ?
	    " (the node's own link)" : "", have);
	return false;
}

/* The index of an entry of the answer with e's MAC, or r->nenis. */
static size_t
recon_mac_listed(const struct reconcile_run *r, const struct eni *e)
{
	size_t i;

	for (i = 0; i < r->nenis; i++)
		if (memcmp(r->enis[i].mac, e->mac, 6) == 0)
			break;
	return i;
}

static void
recon_attached(struct reconcile_run *r)
{
	struct broker *b = r->b;
	struct engine *en = &b->engine;
	size_t i;
	uint32_t k;

	/* The cloud's view, anew: the answer, less what enid removed since
	 * it was asked, plus what enid attached since. */
	en->cloud_attached = 0;
	en->ncloud_atts = 0;
	for (i = 0; i < r->nenis; i++) {
		const struct msg_cloud_eni *ce = &r->enis[i];
		const struct eni *e;

		if (strcmp(ce->instance_id, b->instance.instance_id) != 0) {
			log_security("reconcile: %s is listed as attached to "
			    "this instance but names %s; ignored", ce->eni_id,
			    ce->instance_id[0] ? ce->instance_id : "none");
			continue;
		}
		e = eni_find(b, ce->eni_id);
		if ((e == NULL && recon_known(r, ce->eni_id) != NULL) ||
		    (e != NULL && e->state == ENI_DELETING))
			continue;	/* seen available, or gone, since */
		if (ce->device_index >= 0)
			cloud_view_attached(b, ce->eni_id,
			    (uint32_t)ce->device_index);
		else
			en->cloud_attached++;
	}
	for (k = 0; k < POOL_MAX_ENIS; k++) {
		const struct eni *e = &en->enis[k];
		const struct recon_known *was;

		if (!e->used || e->attachment_id[0] == '\0' ||
		    e->device_index <= 0 || e->state == ENI_DELETING)
			continue;
		was = recon_known(r, e->id);
		if (was == NULL || was->state == ENI_CREATING ||
		    was->state == ENI_ATTACHING)
			cloud_view_attached(b, e->id, (uint32_t)e->device_index);
	}
	for (i = 0; i < r->nenis; i++) {
		const struct msg_cloud_eni *ce = &r->enis[i];
		struct eni *e;

		if (strcmp(ce->instance_id, b->instance.instance_id) != 0)
			continue;
		if (ce->device_index == 0) {
			recon_primary(r, ce);
			continue;
		}
		e = eni_find(b, ce->eni_id);
		if (e == NULL) {
			/* One the pool had when it asked has left it since
			 * (removed): the answer's "attached" is old news. */
			if (tagged_for_us(b, ce) &&
			    recon_known(r, ce->eni_id) == NULL)
				recon_adopt(r, ce);
			continue;
		}
		if (!recon_same_link(b, e, ce))
			continue;
		if (recon_detaching(r, e, ce))
			continue;
		if (with_netd(e->state)) {
			recon_addresses(r, e, ce, false);
			recon_prefixes(r, e, ce, false);
			if (!eni_addrs_changing(e))
				eni6_learn(e, ce, "reconcile:");
		}
		if (e->ours && !ce->delete_on_termination &&
		    e->state == ENI_READY) {
			e->dot_pending = true;
			eni_set_dot(e);
		}
	}
	start_skipped_prune(r);
	/* Pool ENIs the cloud no longer shows attached: only those that
	 * were attached already when it was asked. */
	for (k = 0; k < POOL_MAX_ENIS; k++) {
		struct eni *e = &en->enis[k];
		const struct recon_known *was;
		bool present = false;

		if (!e->used || e->id[0] == '\0' || !with_netd(e->state))
			continue;
		if ((was = recon_known(r, e->id)) == NULL ||
		    !with_netd(was->state))
			continue;
		for (i = 0; i < r->nenis; i++)
			if (strcmp(r->enis[i].eni_id, e->id) == 0)
				present = true;
		if (present)
			continue;
		if ((i = recon_mac_listed(r, e)) < r->nenis) {
			/* Its link is listed under another id: ids don't
			 * change, so the answer is wrong about one of them,
			 * and the pods on this one keep working. */
			log_security("reconcile: %s is not listed, but its MAC "
			    "is, as %s; the answer is inconsistent, the pool "
			    "keeps %s", e->id, r->enis[i].eni_id, e->id);
			continue;
		}
		if (e->primary) {
			log_errorx("reconcile: the primary ENI %s is not "
			    "listed as attached; the pool keeps it", e->id);
			continue;
		}
		drift(r, "%s: no longer attached to this instance; dropped "
		    "from the pool", e->id);
		/* Detached behind our back: it may still exist, available,
		 * and it is ours, so it leaves by the removal path. */
		e->attachment_id[0] = '\0';
		eni_remove(e, "detached behind enid's back");
	}
}

/* ---- step 2: ours, attached or not ---- */

static void
recon_ours(struct reconcile_run *r)
{
	struct broker *b = r->b;
	bool creating = false;
	const char *created;
	char *end;
	long long t;
	size_t i;
	uint32_t k;

	for (k = 0; k < POOL_MAX_ENIS; k++)
		if (b->engine.enis[k].used &&
		    b->engine.enis[k].state == ENI_CREATING)
			creating = true;
	for (i = 0; i < r->nenis; i++) {
		const struct msg_cloud_eni *ce = &r->enis[i];

		if (!tagged_for_us(b, ce) || eni_find(b, ce->eni_id) != NULL)
			continue;
		if (ce->instance_id[0] != '\0' &&
		    strcmp(ce->instance_id, b->instance.instance_id) != 0) {
			log_security("reconcile: %s is tagged for this node but "
			    "attached to %s; left alone", ce->eni_id,
			    ce->instance_id);
			continue;
		}
		/* Made by an earlier life of enid on this node (a crash
		 * between create and attach): nobody else may use it.
		 * Anything younger than this start, or later, could be a
		 * create whose answer is on its way; those wait for the
		 * leak collector's grace. */
		created = tag_value(ce, TAG_CREATED_AT);
		if (ce->status == ENI_ST_AVAILABLE && r->first && !creating &&
		    created != NULL && (t = strtoll(created, &end, 10)) > 0 &&
		    *end == '\0' && t < b->engine.started_wall)
			remove_foreign_slot(b, ce, "left over from before a "
			    "restart; deleting");
	}
}

/* ---- step 3: netd's rules ---- */

/*
 * The pods' IPv6 rules and host routes are judged while the broker keeps
 * pods' IPv6 (broker_ipv6_held: ip_family dual or ipv6, or ipv4 while
 * pods of an earlier dual hold IPv6 addresses).  Otherwise netd's IPv6
 * entries are dropped as they come: they are no pod's of this broker,
 * and no drift to remove either.
 */

/* Is p a pod rule's: one address, /32 or /128 by its family? */
static bool
host_prefix(const struct ip_prefix *p)
{
	return p->addr.family != AF_UNSPEC &&
	    p->len == ip_family_bits(p->addr.family);
}

/*
 * Did a pod rule change for ip go to netd after the rule dump was asked?
 * netd answers in order, so one sent before is in the dump; one sent
 * after is enid's own work in flight, which the dump may not show: not
 * drift (issue 27).  Request ids only grow.  An IPv4 address keeps its
 * last change (its rules_req) across pods; an IPv6 one is a single pod's,
 * whose own counts, and once that pod is gone the engine's last removal
 * of IPv6 rules stands for them all.
 */
static bool
rules_changing(const struct reconcile_run *r, const struct ip_addr *ip)
{
	const struct eni_addr *a;
	const struct pod *p;
	uint32_t req = 0;

	if (ip->family == AF_INET6) {
		if ((p = pod_with_ip(r->b, ip, false, NULL)) == NULL)
			p = pod_with_ip(r->b, ip, true, NULL);
		req = p != NULL ? p->rules6_req : r->b->engine.rules6_del_req;
	} else if ((a = engine_addr(r->b, ip_addr_in4(ip))) != NULL)
		req = a->rules_req;
	return req != 0 && (int32_t)(req - r->rules_id) > 0;
}

static struct pod *
pod_by_ip(struct broker *b, const struct ip_addr *ip)
{
	return pod_with_ip(b, ip, false, NULL);
}

static void
fix_answer(struct broker *b, void *arg, const struct msg *m, bool final)
{
	struct reconcile_run *r = arg;

	(void)b;
	(void)m;
	(void)final;
	if (--r->fixes_out == 0 && b->engine.recon_restores == 0)
		recon_advance(r);
}

/*
 * A pod's rules a run restored are in (or it is gone): the run, once all
 * its repairs are done, goes on, so that an operator's "enidctl
 * reconcile" answers with the node repaired, not on its way (issue 27).
 */
void
reconcile_restored(struct broker *b)
{
	struct reconcile_run *r = b->engine.recon;

	if (b->engine.recon_restores > 0 && --b->engine.recon_restores > 0)
		return;
	if (r != NULL && (r->step == RS_ROUTES || r->step == RS_LEAKS) &&
	    r->rules_done && r->fixes_out == 0)
		recon_advance(r);
}

/*
 * The checkpoint was unusable, or there is none of this node's (a new
 * node, or one whose files were moved aside by hand after a downgrade):
 * a pod's "to" rule in the kernel is the only record left that its
 * address is held.  Such an address, if the
 * cloud still has it on one of the pool's ENIs, is kept as a pod named
 * "enid-recovered-<ip>" so it is never handed out twice and its pod keeps
 * its routing; the runtime's next CNI GC, which never lists that name,
 * gives it back.
 *
 * With ip_family dual an IPv6 address is recovered the same way, if it
 * lies in the /80 of one of the pool's ENIs, as a record of its own
 * ("enid-recovered-" and the address, ':' written '-'): the kernel's
 * rules do not say which IPv4 address went with it, so a dual-stack pod
 * comes back as two records.  Binding it (pods_bind_restored) moves the
 * ENI's next IPv6 address past it: it is never handed out again.
 */
static const struct eni *
recover_eni(struct broker *b, const struct ip_addr *ip)
{
	uint32_t dst = ip_addr_in4(ip);
	struct ip_prefix pfx;
	size_t k;
	int idx;

	for (k = 0; k < POOL_MAX_ENIS; k++) {
		const struct eni *c = &b->engine.enis[k];

		if (!c->used || !(eni_state_arriving(c->state) ||
		    c->state == ENI_READY || eni_state_draining(c->state)))
			continue;
		if (ip->family == AF_INET6) {
			if (c->prefix6.family != AF_INET6)
				continue;
			pfx = msg_prefix_of(&c->prefix6);
			if (ip_prefix_contains(&pfx, ip))
				return c;
			continue;
		}
		if (c->primary_ip != dst &&
		    (idx = eni_addr_index(c, dst)) >= 0 &&
		    (c->addrs[idx].state == ADDR_FREE ||
		    c->addrs[idx].state == ADDR_PENDING))
			return c;
	}
	return NULL;
}

static void
recon_recover_pods(struct reconcile_run *r)
{
	struct broker *b = r->b;
	const struct enid_config *cfg = &b->cfg;
	size_t i, k;
	int n = 0;

	for (i = 0; i < r->nrules; i++) {
		const struct msg_netd_rule *ru = &r->rules[i];
		struct ckpt_pod cp;
		char ip[IP_ADDR_STR_LEN], cid[CKPT_CID_LEN];
		const struct eni *e;

		if (ru->priority != cfg->routing.rule_priority_to ||
		    !host_prefix(&ru->dst) ||
		    pod_by_ip(b, &ru->dst.addr) != NULL)
			continue;
		e = recover_eni(b, &ru->dst.addr);
		ip_addr_format(&ru->dst.addr, ip);
		if (e == NULL && r->deferred) {
			/* Maybe on an ENI of a subnet not described yet:
			 * the run that adopts it judges the address. */
			log_info("reconcile: the kernel routes %s to a pod, and "
			    "no ENI of the pool has it yet; judged once the "
			    "subnets of attached ENIs are described", ip);
			continue;
		}
		if (e == NULL) {
			log_warnx("reconcile: the kernel routes %s to a pod, but "
			    "no ENI of the pool has it; its rules go", ip);
			continue;
		}
		snprintf(cid, sizeof(cid), "enid-recovered-%s", ip);
		for (k = 0; cid[k] != '\0'; k++)
			if (cid[k] == ':')
				cid[k] = '-';
		memset(&cp, 0, sizeof(cp));
		cp.container_id = cid;
		cp.ifname = "eth0";
		cp.k8s_namespace = cp.k8s_name = cp.k8s_uid = "";
		cp.eni_id = e->id;
		if (ru->dst.addr.family == AF_INET6)
			cp.ip6 = ru->dst.addr;
		else
			cp.ip = ru->dst.addr;
		cp.since = (int64_t)time(NULL);
		pod_restore(b, &cp);
		log_warnx("reconcile: %s on %s is routed to a pod no "
		    "checkpoint records; kept as %s until a CNI GC gives it "
		    "back", ip, e->id, cp.container_id);
		n++;
	}
	b->engine.npods_recovered += (uint32_t)n;
	if (n > 0)
		pods_bind_restored(b);
}

static void
recon_rules(struct reconcile_run *r)
{
	struct broker *b = r->b;
	const struct enid_config *cfg = &b->cfg;
	struct pod *p;
	size_t i, j;

	if (b->engine.rebuild_from_kernel) {
		recon_recover_pods(r);
		/* An attached ENI waits for its subnet's describe (the
		 * first run again, then), or the cloud lists it attaching or
		 * detaching (it may carry pods all the same: enid sets an
		 * ENI up once its link is there): the rules of addresses it
		 * may hold are no pod's only once it is adopted or gone.
		 * Removed now, the running pods would lose their routing,
		 * and their addresses would look free. */
		if (r->deferred)
			return;
		if (b->engine.nstart_skipped == 0) {
			b->engine.rebuild_from_kernel = false;
			/* Rebuilt: with ipv4, has any IPv6 pod come back? */
			eni6_held_check(b);
		} else
			log_info("reconcile: the rules of addresses no pod "
			    "holds are kept while %u ENI%s attaching or "
			    "detaching at the start %s not adopted or gone",
			    b->engine.nstart_skipped,
			    b->engine.nstart_skipped == 1 ? "" : "s",
			    b->engine.nstart_skipped == 1 ? "is" : "are");
	}
	/* Rules of no pod go (a few per run). */
	for (i = 0; i < r->nrules && r->nfixes < RECON_MAX_FIXES &&
	    !b->engine.rebuild_from_kernel; i++) {
		const struct msg_netd_rule *ru = &r->rules[i];
		const struct ip_addr *at;
		bool dup = false;

		if (ru->priority == cfg->routing.rule_priority_to &&
		    host_prefix(&ru->dst))
			at = &ru->dst.addr;
		else if (ru->priority == cfg->routing.rule_priority_from &&
		    host_prefix(&ru->src))
			at = &ru->src.addr;
		else
			continue;
		p = pod_by_ip(b, at);
		if (p != NULL && (p->state != POD_READY ||
		    ru->priority == cfg->routing.rule_priority_to ||
		    (p->eni != NULL && ru->table == p->eni->table)))
			continue;
		for (j = 0; j < r->nfixes; j++)
			if (ip_addr_eq(&r->fix_ips[j], at))
				dup = true;
		if (dup || p != NULL || rules_changing(r, at))
			continue;
		r->fix_ips[r->nfixes++] = *at;
	}
	for (i = 0; i < r->nfixes; i++) {
		struct msg_netd_pod_rule req;
		char ip[IP_ADDR_STR_LEN];

		ip_addr_format(&r->fix_ips[i], ip);
		drift(r, "rules for %s belong to no pod; removing them", ip);
		memset(&req, 0, sizeof(req));
		req.addr = r->fix_ips[i];
		r->fixes_out++;
		broker_request(b, &r->fixes[i], &b->netd, MSG_NETD_DEL_POD, &req,
		    sizeof(req), ENGINE_NETD_DEADLINE_MS, fix_answer, r);
	}
	/* A pod with an address gets its rules back: those of each of its
	 * addresses (its IPv6 one's too, broker_ipv6_held), at once. */
	TAILQ_FOREACH(p, &b->engine.pods, all) {
		const struct ip_addr *addrs[2] = { &p->ip, &p->ip6 };
		size_t k;

		if (p->state != POD_READY || p->lost || p->eni == NULL ||
		    p->eni->state != ENI_READY)
			continue;
		for (k = 0; k < 2; k++) {
			const struct ip_addr *at = addrs[k];
			bool to = false, from = false;
			char ip[IP_ADDR_STR_LEN];

			if (at->family == AF_UNSPEC ||
			    (at->family == AF_INET6 && !broker_ipv6_held(b)) ||
			    rules_changing(r, at))
				continue;
			for (i = 0; i < r->nrules; i++) {
				const struct msg_netd_rule *ru = &r->rules[i];

				if (ru->priority ==
				    cfg->routing.rule_priority_to &&
				    ip_addr_eq(&ru->dst.addr, at) &&
				    host_prefix(&ru->dst))
					to = true;
				if (ru->priority ==
				    cfg->routing.rule_priority_from &&
				    ip_addr_eq(&ru->src.addr, at) &&
				    host_prefix(&ru->src) &&
				    ru->table == p->eni->table)
					from = true;
			}
			if (to && (p->eni->table == 0 || from))
				continue;
			ip_addr_format(at, ip);
			drift(r, "pod %s/%s at %s is missing its %s rule; "
			    "restoring it", p->container_id, p->ifname, ip,
			    !to ? "to" : "from");
			(void)pod_rules_restore(p);
			break;
		}
	}
}

/* ---- step 3b: pods' host routes ---- */

static int
route_cmp(const void *a, const void *b)
{
	return ip_addr_cmp(&((const struct msg_netd_route *)a)->addr,
	    &((const struct msg_netd_route *)b)->addr);
}

static int
link_cmp(const void *a, const void *b)
{
	return strcmp(((const struct msg_netd_link *)a)->name,
	    ((const struct msg_netd_link *)b)->name);
}

static void	routes_send(struct reconcile_run *r);

static void
route_answer(struct broker *b, void *arg, const struct msg *m, bool final)
{
	struct reconcile_run *r = arg;
	struct msg_result res;

	(void)b;
	(void)final;
	r->routes_out--;
	if (m == NULL)
		log_warnx("reconcile: restoring a pod's host route: enid-netd "
		    "did not answer in time");
	else {
		memcpy(&res, m->u.bytes, sizeof(res));
		if (res.status == ST_NOT_FOUND)
			log_info("reconcile: a pod's host route was not "
			    "restored: %s (its pod is going)", res.message);
		else if (res.status != ST_OK)
			log_warnx("reconcile: restoring a pod's host route: "
			    "%s: %s", msg_status_name(res.status),
			    res.message);
	}
	routes_send(r);
}

/* As many restores out as the window takes; the run goes on with the
 * last answer. */
static void
routes_send(struct reconcile_run *r)
{
	size_t k;

	for (k = 0; k < RECON_ROUTES_INFLIGHT &&
	    r->route_next < r->nroute_fixes; k++) {
		if (r->route_reqs[k].active)
			continue;
		r->routes_out++;
		broker_request(r->b, &r->route_reqs[k], &r->b->netd,
		    MSG_NETD_ADD_POD_ROUTE, &r->route_fixes[r->route_next++],
		    sizeof(struct msg_netd_pod_route), ENGINE_NETD_DEADLINE_MS,
		    route_answer, r);
	}
	if (r->routes_out == 0 && r->route_next == r->nroute_fixes)
		recon_advance(r);
}

/* p's host route to at (an address of its, if of a family), judged. */
static void
recon_pod_route(struct reconcile_run *r, const struct pod *p,
    const struct ip_addr *at, size_t n)
{
	struct recon_question *qr = &r->q[ASK_ROUTES], *ql = &r->q[ASK_LINKS];
	struct msg_netd_route *routes = qr->entries, key;
	struct msg_netd_link *links = ql->entries, lkey;
	const struct msg_netd_route *found;
	char ip[IP_ADDR_STR_LEN];

	if (at->family == AF_UNSPEC || r->nroute_fixes == n)
		return;
	ip_addr_format(at, ip);
	memset(&key, 0, sizeof(key));
	key.addr = *at;
	found = qr->n > 0 ? bsearch(&key, routes, qr->n,
	    sizeof(*routes), route_cmp) : NULL;
	if (found != NULL) {
		/* One of perhaps several to the address: any on the
		 * pod's veth will do. */
		const struct msg_netd_route *q = found;

		while (q > routes && ip_addr_eq(&(q - 1)->addr,
		    &key.addr))
			q--;
		for (; q < routes + qr->n && ip_addr_eq(&q->addr,
		    &key.addr); q++)
			if (strcmp(q->dev, p->host_veth) == 0)
				break;
		if (q < routes + qr->n && ip_addr_eq(&q->addr,
		    &key.addr))
			return;
		log_warnx("reconcile: pod %s/%s at %s is routed through "
		    "%s, not its host veth %s; left as it is (netd "
		    "replaces no route)", p->container_id, p->ifname,
		    ip, found->dev[0] ? found->dev : "another link",
		    p->host_veth);
		return;
	}
	memset(&lkey, 0, sizeof(lkey));
	msg_strlcpy(lkey.name, p->host_veth, sizeof(lkey.name));
	if (ql->n == 0 || bsearch(&lkey, links, ql->n, sizeof(*links),
	    link_cmp) == NULL) {
		log_debug("reconcile: pod %s/%s at %s: its host veth %s "
		    "is gone; its DEL is expected", p->container_id,
		    p->ifname, ip, p->host_veth);
		return;
	}
	drift(r, "pod %s/%s at %s is missing its host route (dev %s); "
	    "restoring it", p->container_id, p->ifname, ip,
	    p->host_veth);
	r->route_fixes[r->nroute_fixes].addr = key.addr;
	msg_strlcpy(r->route_fixes[r->nroute_fixes].dev, p->host_veth,
	    sizeof(r->route_fixes[0].dev));
	r->nroute_fixes++;
}

/*
 * Each ready pod enid-cni wired (it named its host veth) must have its
 * host route "ADDR/32 dev VETH scope link" in the main table, and with
 * ip_family dual "ADDR/128 dev VETH" for its IPv6 address.  Missing,
 * while the veth is there: drift, and netd is asked to put it back (netd
 * judges by its own rule for the address and the veth's kind and peer).
 * Missing with the veth gone: the pod is being deleted, not drift.  Through
 * another device: reported and left, since netd never replaces a route.
 */
static void
recon_routes(struct reconcile_run *r)
{
	struct broker *b = r->b;
	struct recon_question *qr = &r->q[ASK_ROUTES], *ql = &r->q[ASK_LINKS];
	struct msg_netd_route *routes = qr->entries;
	struct msg_netd_link *links = ql->entries;
	struct pod *p;
	size_t n = 0;

	if (qr->n > 1)
		qsort(routes, qr->n, sizeof(*routes), route_cmp);
	if (ql->n > 1)
		qsort(links, ql->n, sizeof(*links), link_cmp);
	/* Two a pod at most: its IPv4 address's, its IPv6 one's. */
	TAILQ_FOREACH(p, &b->engine.pods, all)
		if (p->host_veth[0] != '\0')
			n += 2;
	if (n > 0 && (r->route_fixes = calloc(n, sizeof(*r->route_fixes))) ==
	    NULL) {
		log_warnx("reconcile: out of memory for %zu host routes; not "
		    "compared this time", n);
		return;
	}
	TAILQ_FOREACH(p, &b->engine.pods, all) {
		if (p->host_veth[0] == '\0' || p->state != POD_READY ||
		    p->lost || p->eni == NULL || p->eni->state != ENI_READY ||
		    p->answered_ms + RECON_ROUTE_GRACE_MS > r->routes_asked)
			continue;
		recon_pod_route(r, p, &p->ip, n);
		if (broker_ipv6_held(b))
			recon_pod_route(r, p, &p->ip6, n);
	}
}

/* ---- step 3a: the ENIs' links and tables ---- */

static void
table_fix_answer(struct broker *b, void *arg, const struct msg *m, bool final)
{
	struct recon_table_fix *f = arg;
	struct reconcile_run *r = f->r;
	struct msg_result res;

	(void)final;
	if (m == NULL)
		log_warnx("reconcile: %s: enid-netd did not answer the check "
		    "of its table %u in time", f->eni_id, f->table);
	else {
		memcpy(&res, m->u.bytes, sizeof(res));
		if (res.status == ST_OK && res.changed > 0)
			drift(r, "%s: its link or table %u lacked %u of what "
			    "enid set up; restored", f->eni_id, f->table,
			    res.changed);
		else if (res.status != ST_OK)
			log_warnx("reconcile: %s: checking its table %u: %s: "
			    "%s", f->eni_id, f->table,
			    msg_status_name(res.status), res.message);
	}
	if (--r->fixes_out == 0 && b->engine.recon_restores == 0)
		recon_advance(r);
}

/*
 * Every ready secondary ENI's link and table, as eni_configure set them
 * up, asked of netd again: it plans against the kernel, so it changes
 * nothing that is in place.  Not one whose own step (a removal's
 * teardown) is on its way: that goes first, and this after it would set
 * the table up again.
 */
static void
recon_tables(struct reconcile_run *r)
{
	struct broker *b = r->b;
	uint32_t i;

	for (i = 0; i < POOL_MAX_ENIS; i++) {
		struct eni *e = &b->engine.enis[i];
		struct recon_table_fix *f;
		struct msg_netd_setup_eni req;
		const struct subnet *s;

		if (!e->used || e->primary || e->table == 0 ||
		    (e->state != ENI_READY && e->state != ENI_DRAINING) ||
		    e->op.active || e->subnet < 0 ||
		    !b->engine.subnets[e->subnet].known ||
		    r->ntable_fixes == POOL_MAX_ENIS)
			continue;
		s = &b->engine.subnets[e->subnet];
		f = &r->table_fixes[r->ntable_fixes++];
		f->r = r;
		msg_strlcpy(f->eni_id, e->id, sizeof(f->eni_id));
		f->table = e->table;
		eni_setup_request(e, s, &req);
		r->fixes_out++;
		broker_request(b, &f->req, &b->netd, MSG_NETD_SETUP_ENI, &req,
		    sizeof(req), ENGINE_NETD_DEADLINE_MS, table_fix_answer, f);
	}
}

/* ---- step 4: the leak collector ---- */

/* Only ours, by every tag, only unattached, and not in the pool. */
static bool
leak_candidate(struct broker *b, const struct msg_cloud_eni *ce)
{
	const char *creator = tag_value(ce, TAG_CREATOR);
	const char *cluster = tag_value(ce, TAG_CLUSTER);

	return ce->status == ENI_ST_AVAILABLE && ce->instance_id[0] == '\0' &&
	    creator != NULL && strcmp(creator, TAG_CREATOR_VALUE) == 0 &&
	    tag_value(ce, TAG_INSTANCE) != NULL && cluster != NULL &&
	    strcmp(cluster, b->cfg.cluster_name) == 0 &&
	    eni_find(b, ce->eni_id) == NULL;
}

/* splitmix64: which leaks a run looks at when there are more than it
 * holds; not a secret. */
static uint64_t
leak_rng(void)
{
	static uint64_t state;
	uint64_t z;

	if (state == 0)
		state = now_ms() ^ ((uint64_t)getpid() << 32);
	z = (state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void
recon_leaks(struct reconcile_run *r)
{
	struct broker *b = r->b;
	int64_t now = (int64_t)time(NULL);
	size_t i, j;

	r->nleaks = 0;
	memset(&r->check, 0, sizeof(r->check));
	r->check.deadline_ms = ENGINE_CLOUD_DEADLINE_MS;
	for (i = 0; i < r->nenis; i++) {
		const struct msg_cloud_eni *ce = &r->enis[i];
		const char *inst = tag_value(ce, TAG_INSTANCE);
		const char *created = tag_value(ce, TAG_CREATED_AT);
		char *end;
		long long at;
		bool seen = false;

		if (!leak_candidate(b, ce))
			continue;
		if (created == NULL) {
			log_info("leak collector: %s has no %s tag; its age is "
			    "unknown, left alone", ce->eni_id, TAG_CREATED_AT);
			continue;
		}
		errno = 0;
		at = strtoll(created, &end, 10);
		if (errno || *end != '\0' || end == created || at > now) {
			log_warnx("leak collector: %s: %s \"%.32s\" is not a "
			    "time in the past; left alone", ce->eni_id,
			    TAG_CREATED_AT, created);
			continue;
		}
		if (now - at < (int64_t)b->cfg.leak_gc.grace_s)
			continue;
		if (r->nleaks == RECON_MAX_LEAKS)
			break;
		r->leaks[r->nleaks++] = *ce;
		if (strcmp(inst, b->instance.instance_id) == 0)
			continue;
		for (j = 0; j < r->check.nids; j++)
			if (strcmp(r->check.ids[j], inst) == 0)
				seen = true;
		if (!seen && r->check.nids < MSG_MAX_INSTANCE_IDS)
			msg_strlcpy(r->check.ids[r->check.nids++], inst,
			    sizeof(r->check.ids[0]));
	}
}

static void
leak_delete(struct reconcile_run *r, const struct msg_cloud_eni *ce,
    const char *whose)
{
	struct broker *b = r->b;

	log_warnx("leak collector: %s (%s, tagged for %s) is available and "
	    "older than %u s; deleting it", ce->eni_id, ce->subnet_id, whose,
	    b->cfg.leak_gc.grace_s);
	b->engine.stats.leaks_deleted++;
	remove_foreign_slot(b, ce, "leaked");
}

static void
recon_leaks_apply(struct reconcile_run *r, const struct msg_cloud_instances
    *ans)
{
	struct broker *b = r->b;
	size_t i, j;

	for (i = 0; i < r->nleaks; i++) {
		const char *inst = tag_value(&r->leaks[i], TAG_INSTANCE);

		if (strcmp(inst, b->instance.instance_id) == 0) {
			leak_delete(r, &r->leaks[i], "this node");
			continue;
		}
		if (ans == NULL)
			continue;
		for (j = 0; j < r->check.nids && j < ans->nids; j++)
			if (strcmp(r->check.ids[j], inst) == 0 &&
			    !ans->exists[j])
				leak_delete(r, &r->leaks[i], inst);
	}
}

/* ---- the questions ---- */

/* Room for one more entry of q (at most max of size bytes), or NULL: the
 * answer is then too long, or memory ran out, and is not used. */
static void *
question_slot(struct recon_question *q, size_t max, size_t size)
{
	size_t cap;
	void *p;

	if (q->overflow)
		return NULL;
	if (q->n == max) {
		q->overflow = true;
		return NULL;
	}
	if (q->n == q->cap) {
		cap = q->cap == 0 ? 8 : q->cap * 2;
		if (cap > max)
			cap = max;
		if ((p = reallocarray(q->entries, cap, size)) == NULL) {
			snprintf(q->failure, sizeof(q->failure), "out of "
			    "memory for %zu answers", cap);
			q->overflow = true;
			return NULL;
		}
		q->entries = p;
		q->cap = cap;
	}
	return (char *)q->entries + q->n * size;
}

static void
question_answer(struct broker *b, void *arg, const struct msg *m, bool final)
{
	struct recon_question *q = arg;
	struct reconcile_run *r = q->r;
	struct msg_cloud_done done;
	struct msg_result res;

	(void)final;
	if (m == NULL) {
		snprintf(q->failure, sizeof(q->failure), "no answer in time");
		goto answered;
	}
	switch (m->hdr.type) {
	case MSG_CLOUD_ENI: {
		struct msg_cloud_eni *ce, in;
		size_t k;

		memcpy(&in, m->u.bytes, sizeof(in));
		/* An id the checkpoint would refuse never enters the pool:
		 * it would stop the next start.  enid-cloudd checks them
		 * too; this is the broker not trusting it. */
		if (!ckpt_eni_id_ok(in.eni_id)) {
			log_security("reconcile: enid-cloudd described an ENI "
			    "whose id is not \"eni-\" and hex digits; "
			    "ignored");
			return;
		}
		/*
		 * The cluster's leaks may be many more than a run holds (and
		 * deletes): it keeps a uniform sample of the candidates
		 * (reservoir sampling), so that each is looked at in some run
		 * and none can keep the others out.
		 */
		if (q->which == ASK_LEAKS) {
			if (!leak_candidate(b, &in))
				return;
			q->seen++;
			if (q->n == RECON_MAX_ENIS) {
				k = (size_t)(leak_rng() % q->seen);
				if (k < q->n)
					memcpy((struct msg_cloud_eni *)
					    q->entries + k, &in, sizeof(in));
				return;
			}
		}
		if ((ce = question_slot(q, RECON_MAX_ENIS, sizeof(*ce))) == NULL)
			return;
		*ce = in;
		q->n++;
		return;
	}
	case MSG_NETD_RULE: {
		struct msg_netd_rule *ru;
		const struct msg_netd_rule *in = (const void *)m->u.bytes;

		/* IPv6 rules are judged while pods may hold IPv6
		 * (broker_ipv6_held). */
		if (in->src.addr.family != AF_INET &&
		    !(in->src.addr.family == AF_INET6 && broker_ipv6_held(b)))
			return;
		if ((ru = question_slot(q, RECON_MAX_RULES, sizeof(*ru))) ==
		    NULL)
			return;
		memcpy(ru, m->u.bytes, sizeof(*ru));
		q->n++;
		return;
	}
	case MSG_NETD_ROUTE: {
		struct msg_netd_route *ro;
		const struct msg_netd_route *in = (const void *)m->u.bytes;

		/* The same for IPv6 pods' host routes. */
		if (in->addr.family != AF_INET &&
		    !(in->addr.family == AF_INET6 && broker_ipv6_held(b)))
			return;
		if ((ro = question_slot(q, RECON_MAX_ROUTES, sizeof(*ro))) ==
		    NULL)
			return;
		memcpy(ro, m->u.bytes, sizeof(*ro));
		q->n++;
		return;
	}
	case MSG_NETD_LINK: {
		struct msg_netd_link *li;

		if ((li = question_slot(q, RECON_MAX_LINKS, sizeof(*li))) ==
		    NULL)
			return;
		memcpy(li, m->u.bytes, sizeof(*li));
		q->n++;
		return;
	}
	case MSG_NETD_RESULT:
		memcpy(&res, m->u.bytes, sizeof(res));
		snprintf(q->failure, sizeof(q->failure), "enid-netd's %s "
		    "dump: %s: %s", q->which == ASK_RULES ? "rule" :
		    q->which == ASK_ROUTES ? "host route" : "link",
		    msg_status_name(res.status), res.message);
		break;
	case MSG_NETD_END:
		break;
	default:	/* CLOUD_DONE */
		memcpy(&done, m->u.bytes, sizeof(done));
		if (done.st.outcome != CO_OK)
			snprintf(q->failure, sizeof(q->failure),
			    "describe: %s%s%s%s%s",
			    cloud_outcome_name(done.st.outcome),
			    done.st.code[0] ? ": " : "", done.st.code,
			    done.st.message[0] ? ": " : "", done.st.message);
		break;
	}
	if (q->failure[0] == '\0' && q->overflow)
		snprintf(q->failure, sizeof(q->failure), "more entries than "
		    "the pool can hold; this answer is not used");
answered:
	q->answered = true;
	recon_advance(r);
}

static void
ask_enis(struct reconcile_run *r, enum recon_ask which)
{
	struct broker *b = r->b;
	struct msg_cloud_describe_enis req;

	memset(&req, 0, sizeof(req));
	req.deadline_ms = ENGINE_CLOUD_DEADLINE_MS;
	if (which == ASK_ATTACHED) {
		req.filter = ENIS_BY_INSTANCE;
		msg_strlcpy(req.instance_id, b->instance.instance_id,
		    sizeof(req.instance_id));
	} else if (which == ASK_OURS) {
		req.filter = ENIS_BY_TAGS;
		req.ntags = 1;
		msg_strlcpy(req.tags[0].key, TAG_INSTANCE,
		    sizeof(req.tags[0].key));
		msg_strlcpy(req.tags[0].value, b->instance.instance_id,
		    sizeof(req.tags[0].value));
	} else {
		req.filter = ENIS_BY_TAGS;
		req.ntags = 2;
		req.status = ENI_ST_AVAILABLE;
		msg_strlcpy(req.tags[0].key, TAG_CREATOR,
		    sizeof(req.tags[0].key));
		msg_strlcpy(req.tags[0].value, TAG_CREATOR_VALUE,
		    sizeof(req.tags[0].value));
		msg_strlcpy(req.tags[1].key, TAG_CLUSTER,
		    sizeof(req.tags[1].key));
		msg_strlcpy(req.tags[1].value, b->cfg.cluster_name,
		    sizeof(req.tags[1].value));
	}
	broker_request(b, &r->q[which].req, &b->cloudd,
	    MSG_CLOUD_DESCRIBE_ENIS, &req, sizeof(req), req.deadline_ms,
	    question_answer, &r->q[which]);
}

/* Every question of the run at once.  The pool is noted as the attached
 * ENIs are asked for: their answer is judged against it. */
static void
recon_ask_all(struct reconcile_run *r)
{
	struct broker *b = r->b;
	struct msg_netd_dump dump;
	int i;

	for (i = 0; i < ASK_COUNT; i++) {
		r->q[i].r = r;
		r->q[i].which = (enum recon_ask)i;
	}
	recon_remember(r);
	r->q[ASK_ATTACHED].asked = true;
	ask_enis(r, ASK_ATTACHED);
	r->q[ASK_OURS].asked = true;
	ask_enis(r, ASK_OURS);
	memset(&dump, 0, sizeof(dump));
	r->q[ASK_RULES].asked = true;
	broker_request(b, &r->q[ASK_RULES].req, &b->netd, MSG_NETD_DUMP_RULES,
	    &dump, sizeof(dump), ENGINE_NETD_DEADLINE_MS, question_answer,
	    &r->q[ASK_RULES]);
	r->rules_id = r->q[ASK_RULES].req.id;
	/* Answered after the rule dump (netd answers in order); compared
	 * once the rules the run restores are in. */
	r->q[ASK_ROUTES].asked = true;
	broker_request(b, &r->q[ASK_ROUTES].req, &b->netd,
	    MSG_NETD_DUMP_ROUTES, &dump, sizeof(dump), ENGINE_NETD_DEADLINE_MS,
	    question_answer, &r->q[ASK_ROUTES]);
	r->q[ASK_LINKS].asked = true;
	broker_request(b, &r->q[ASK_LINKS].req, &b->netd, MSG_NETD_DUMP_LINKS,
	    &dump, sizeof(dump), ENGINE_NETD_DEADLINE_MS, question_answer,
	    &r->q[ASK_LINKS]);
	r->routes_asked = now_ms();
	if (b->cfg.leak_gc.enabled) {
		r->q[ASK_LEAKS].asked = true;
		ask_enis(r, ASK_LEAKS);
	}
}

/* ---- the steps ---- */

static void
instances_answer(struct broker *b, void *arg, const struct msg *m,
    bool final)
{
	struct reconcile_run *r = arg;
	struct msg_cloud_instances ans;

	(void)b;
	(void)final;
	if (m == NULL) {
		recon_finish(r, "checking instances: no answer in time");
		return;
	}
	memcpy(&ans, m->u.bytes, sizeof(ans));
	if (ans.st.outcome != CO_OK || ans.nids != r->check.nids) {
		log_warnx("leak collector: checking instances failed; only "
		    "this node's leaks are deleted this time");
		recon_leaks_apply(r, NULL);
	} else
		recon_leaks_apply(r, &ans);
	r->step = RS_DONE;
	recon_advance(r);
}

/*
 * Whether the answer to a step's question is in (for the first run's
 * attached ENIs, also the subnets described), made the one the step
 * reads.  A failed answer ends the run: r is gone when this says so.
 */
enum ready { NOT_YET, READY, RUN_ENDED };

static enum ready
recon_ready(struct reconcile_run *r, enum recon_ask which)
{
	struct recon_question *q = &r->q[which];

	if (!q->answered)
		return NOT_YET;
	if (r->first && which == ASK_ATTACHED &&
	    !r->b->engine.subnets_described)
		return NOT_YET;
	if (q->failure[0] != '\0') {
		char why[sizeof(q->failure)];

		/* Copied: recon_finish() frees the run, q with it. */
		memcpy(why, q->failure, sizeof(why));
		recon_finish(r, why);
		return RUN_ENDED;
	}
	if (which == ASK_RULES) {
		r->rules = q->entries;
		r->nrules = q->n;
	} else if (which == ASK_ROUTES || which == ASK_LINKS) {
		/* recon_routes reads them from the questions */
	} else {
		r->enis = q->entries;
		r->nenis = q->n;
	}
	return READY;
}

/* Take the steps whose answers are in, in order. */
static void
recon_advance(struct reconcile_run *r)
{
	struct broker *b = r->b;

	for (;;) {
		switch (r->step) {
		case RS_ATTACHED:
			if (recon_ready(r, ASK_ATTACHED) != READY)
				return;
			recon_attached(r);
			r->step = RS_OURS;
			break;
		case RS_OURS:
			if (recon_ready(r, ASK_OURS) != READY)
				return;
			recon_ours(r);
			r->step = RS_RULES;
			break;
		case RS_RULES:
			if (recon_ready(r, ASK_RULES) != READY)
				return;
			recon_rules(r);
			recon_tables(r);
			r->step = RS_ROUTES;
			r->rules_done = true;
			break;
		case RS_ROUTES:
			/* After the rule repairs: netd's rule for an address
			 * is what lets it restore the address's route. */
			if (r->fixes_out > 0 || b->engine.recon_restores > 0)
				return;	/* fix_answer, reconcile_restored */
			if (!r->routes_done) {
				if (recon_ready(r, ASK_ROUTES) != READY ||
				    recon_ready(r, ASK_LINKS) != READY)
					return;
				recon_routes(r);
				r->routes_done = true;
				routes_send(r);		/* may come back here */
				return;
			}
			if (r->routes_out > 0 ||
			    r->route_next < r->nroute_fixes)
				return;	/* route_answer */
			r->step = RS_LEAKS;
			break;
		case RS_LEAKS:
			/* Not before the repairs are in, whichever answer
			 * (a repair's, the leak question's) came last. */
			if (r->fixes_out > 0 || b->engine.recon_restores > 0)
				return;	/* fix_answer, reconcile_restored */
			if (!r->q[ASK_LEAKS].asked) {
				r->step = RS_DONE;
				break;
			}
			if (recon_ready(r, ASK_LEAKS) != READY)
				return;
			recon_leaks(r);
			if (r->check.nids > 0) {
				r->step = RS_INSTANCES;
				broker_request(b, &r->req, &b->cloudd,
				    MSG_CLOUD_CHECK_INSTANCES, &r->check,
				    sizeof(r->check), r->check.deadline_ms,
				    instances_answer, r);
				return;
			}
			recon_leaks_apply(r, NULL);
			r->step = RS_DONE;
			break;
		case RS_INSTANCES:
			return;		/* instances_answer goes on */
		case RS_DONE:
			recon_finish(r, NULL);
			return;
		}
	}
}

/* ---- runs ---- */

static void
recon_timer_cb(struct loop *l, struct loop_timer *t)
{
	(void)l;
	reconcile_now(t->arg, "periodic");
}

/* The first n waiters hear how the run went; the rest move up. */
static void
recon_reply_waiters(struct broker *b, uint32_t n, const char *failure,
    uint32_t drifts)
{
	struct engine *en = &b->engine;
	struct json_object *o;
	uint32_t i;

	if (n > en->nrecon_waiters)
		n = en->nrecon_waiters;
	for (i = 0; i < n; i++) {
		if (failure != NULL) {
			jref_error(&en->recon_waiters[i], "cloud-error",
			    "reconciliation failed: %s", failure);
			continue;
		}
		o = json_object_new_object();
		json_object_object_add(o, "ok", json_object_new_boolean(1));
		json_object_object_add(o, "drifts_fixed",
		    json_object_new_int((int32_t)drifts));
		jref_reply(&en->recon_waiters[i], o);
	}
	memmove(&en->recon_waiters[0], &en->recon_waiters[n],
	    (en->nrecon_waiters - n) * sizeof(en->recon_waiters[0]));
	en->nrecon_waiters -= n;
}

static void
recon_finish(struct reconcile_run *r, const char *failure)
{
	struct broker *b = r->b;
	struct engine *en = &b->engine;
	bool first = r->first, again = en->recon_again;
	bool deferred = r->deferred;
	uint32_t nwaiters = r->nwaiters;
	uint32_t drifts = r->drifts;
	uint32_t rebuilt_enis = r->rebuilt_enis, rebuilt_addrs = r->rebuilt_addrs;
	size_t i;

	broker_request_cancel(b, &r->req);
	for (i = 0; i < ASK_COUNT; i++) {
		broker_request_cancel(b, &r->q[i].req);
		free(r->q[i].entries);
	}
	for (i = 0; i < r->nfixes; i++)
		broker_request_cancel(b, &r->fixes[i]);
	for (i = 0; i < r->ntable_fixes; i++)
		broker_request_cancel(b, &r->table_fixes[i].req);
	for (i = 0; i < RECON_ROUTES_INFLIGHT; i++)
		broker_request_cancel(b, &r->route_reqs[i]);
	free(r->route_fixes);
	en->recon = NULL;
	en->recon_again = false;
	free(r);
	en->stats.reconciles++;
	if (failure != NULL) {
		log_warnx("reconcile: %s; the run is discarded, nothing was "
		    "changed by its partial answer; again in %d s", failure,
		    RECON_RETRY_MS / 1000);
		recon_reply_waiters(b, nwaiters, failure, 0);
		loop_timer_after(&b->loop, &en->recon_timer, RECON_RETRY_MS);
		return;
	}
	broker_trim_soon(b);
	if (first)
		log_info("reconcile: the pool rebuilt at start from the cloud: "
		    "%u ENI%s taken in, %u address%s learned; %u pod%s "
		    "held", rebuilt_enis,
		    rebuilt_enis == 1 ? "" : "s", rebuilt_addrs,
		    rebuilt_addrs == 1 ? "" : "es", en->npods,
		    en->npods == 1 ? "" : "s");
	log_info("reconcile: done, %u drift%s fixed", drifts,
	    drifts == 1 ? "" : "s");
	recon_reply_waiters(b, nwaiters, NULL, drifts);
	if (first && en->phase == PHASE_STARTING && deferred) {
		/* ENIs of subnets the pool did not know are attached: the
		 * pool runs (and judges restored pods) only once they are
		 * adopted.  The first run again, after the describe. */
		log_info("reconcile: waiting for the subnets of attached ENIs "
		    "to be described before the pool runs");
		en->started_recon = !en->subnets_req.active;
		if (en->started_recon)
			reconcile_now(b, "start, with the subnets described");
		return;
	}
	if (first && en->phase == PHASE_STARTING) {
		en->phase = PHASE_RUNNING;
		/* Say what happened: pods rebuilt from the kernel are not
		 * restored, and the runtime's DELs do not name them. */
		if (en->checkpoint_lost)
			log_warnx("pool: running without the checkpoint (it "
			    "was unusable and moved aside): %u pods rebuilt "
			    "from the kernel's rules as enid-recovered-*, "
			    "held until a CNI GC releases them",
			    en->npods_recovered);
		else if (en->checkpoint_none && en->npods_recovered > 0)
			log_warnx("pool: running with no checkpoint of this "
			    "node's: %u pods rebuilt from the kernel's rules "
			    "as enid-recovered-*, held until a CNI GC releases "
			    "them", en->npods_recovered);
		else if (en->checkpoint_none)
			log_info("pool: running, with no checkpoint and no "
			    "pod's rules in the kernel: no pods");
		else
			log_info("pool: running, %u pods restored from the "
			    "checkpoint", en->npods);
	}
	pods_bind_restored(b);
	store_mark(b->store);
	engine_kick(b);
	if (again)
		reconcile_now(b, "asked for during the last run");
	else
		loop_timer_after(&b->loop, &en->recon_timer,
		    (uint64_t)b->cfg.reconcile_interval_s * 1000);
}

void
reconcile_now(struct broker *b, const char *why)
{
	struct engine *en = &b->engine;
	struct reconcile_run *r;

	if (en->phase == PHASE_WAITING || b->shutting_down)
		return;
	if (en->recon != NULL) {
		en->recon_again = true;
		return;
	}
	/* The first run starts once the subnets are described (their
	 * answer starts it): before, no ENI could be adopted, and the
	 * restored pods on them would look lost.  Whoever asked is
	 * answered by that run. */
	if (en->phase == PHASE_STARTING && !en->started_recon)
		return;
	loop_timer_cancel(&b->loop, &en->recon_timer);
	if ((r = calloc(1, sizeof(*r))) == NULL) {
		log_errorx("reconcile: out of memory; again in %d s",
		    RECON_RETRY_MS / 1000);
		loop_timer_after(&b->loop, &en->recon_timer, RECON_RETRY_MS);
		return;
	}
	r->b = b;
	r->first = en->phase == PHASE_STARTING;
	r->nwaiters = en->nrecon_waiters;
	en->recon_asked = now_ms();
	msg_strlcpy(r->why, why, sizeof(r->why));
	en->recon = r;
	log_debug("reconcile: starting (%s)", why);
	if (en->on_reconcile != NULL)
		en->on_reconcile(b);
	if (!r->first)
		subnets_describe(b);	/* free counts, for subnet choice */
	r->step = RS_ATTACHED;
	recon_ask_all(r);
}

/* ---- subnets ---- */

/*
 * A subnet's IPv6 block, as the cloud describes it: kept when it is a
 * /64 of one of the VPC's IPv6 blocks with no host bits, associated; any
 * other is no block (and a block outside the VPC is said as a lie).
 */
static void
subnet_learn_ipv6(struct broker *b, struct subnet *s,
    const struct msg_cloud_subnet *cs)
{
	char cidr[IP_PREFIX_STR_LEN];
	uint32_t i;
	bool in_vpc = false;

	s->ipv6_native = cs->ipv6_native != 0;
	s->ipv6_state = cs->ipv6_state < IPV6_ST_MAX ? cs->ipv6_state :
	    IPV6_ST_NONE;
	memset(&s->cidr6, 0, sizeof(s->cidr6));
	if (cs->cidr6.addr.family != AF_INET6 ||
	    cs->ipv6_state != IPV6_ST_ASSOCIATED)
		return;
	for (i = 0; i < b->nvpc6 && i < MSG_MAX_CIDRS6; i++)
		if (ip_prefix_contains(&b->vpc6[i], &cs->cidr6.addr) &&
		    cs->cidr6.len >= b->vpc6[i].len)
			in_vpc = true;
	ip_prefix_format(&cs->cidr6, cidr);
	if (!in_vpc || cs->cidr6.len != 64 ||
	    !ip_prefix_is_network(&cs->cidr6)) {
		log_security("subnets: %s's IPv6 block is described as %s, "
		    "not a /64 of the VPC's IPv6 blocks; taken as none",
		    cs->subnet_id, cidr);
		return;
	}
	s->cidr6 = cs->cidr6;
}

/*
 * ip_family dual or ipv6, at the first whole describe: every subnet pods
 * may take addresses in must give them what they need, or enid does not
 * start (a configuration error named now, not ADDs failing later).  Dual
 * needs both families in the subnet; ipv6 an IPv6 block.  True when all
 * do.
 */
static bool
subnets_ipv6_ok(struct broker *b)
{
	struct engine *en = &b->engine;
	const char *fam = config_family_name(b->cfg.ip_family);
	uint32_t i, wrong = 0;
	struct subnet *s;

	if (!config_family_v6(b->cfg.ip_family))
		return true;
	for (i = 0; i < en->nsubnets; i++) {
		s = &en->subnets[i];
		if (!s->configured || !s->asked)
			continue;
		if (s->cidr6.addr.family != AF_INET6) {
			log_errorx("configuration: subnet %s has no associated "
			    "IPv6 block (%s), and ip_family \"%s\" gives pods "
			    "an IPv6 address from it; associate one (aws ec2 "
			    "associate-subnet-cidr-block --ipv6-cidr-block ...)",
			    s->id, s->ipv6_state == IPV6_ST_NONE ? "none" :
			    cloud_ipv6_state_name(s->ipv6_state), fam);
			wrong++;
		}
		if (b->cfg.ip_family == IP_FAMILY_DUAL && s->ipv6_native) {
			log_errorx("configuration: subnet %s is IPv6-only "
			    "(ipv6Native), and ip_family \"dual\" gives pods "
			    "an IPv4 address too; use \"ipv6\" or a "
			    "dual-stack subnet", s->id);
			wrong++;
		}
	}
	if (wrong == 0)
		return true;
	b->engine.on_stop(b, 1, "subnets that cannot give pods IPv6 "
	    "addresses (above)");
	return false;
}

static void
subnets_answer(struct broker *b, void *arg, const struct msg *m, bool final)
{
	struct engine *en = &b->engine;
	struct msg_cloud_subnet cs;
	struct msg_cloud_done done;
	struct subnet *s;
	char cidr[IP_PREFIX_STR_LEN];
	uint32_t i, net;
	bool in_vpc = false;

	(void)arg;
	(void)final;
	if (m == NULL || m->hdr.type == MSG_CLOUD_DONE) {
		if (m != NULL)
			memcpy(&done, m->u.bytes, sizeof(done));
		for (i = 0; i < en->nsubnets; i++) {
			if (en->subnets[i].asking && m != NULL &&
			    done.st.outcome == CO_OK)
				en->subnets[i].asked = true;
			en->subnets[i].asking = false;
		}
		if (m == NULL || done.st.outcome != CO_OK) {
			log_warnx("subnets: describe failed (%s); again in %d s",
			    m == NULL ? "no answer in time" : done.st.message,
			    RECON_RETRY_MS / 1000);
			loop_timer_after(&b->loop, &en->subnets_timer,
			    RECON_RETRY_MS);
			return;
		}
		for (i = 0; i < en->nsubnets; i++)
			if (en->subnets[i].configured && !en->subnets[i].known)
				log_errorx("subnet %s: the cloud does not "
				    "describe it; not used", en->subnets[i].id);
		if (!en->subnets_described && !subnets_ipv6_ok(b))
			return;
		if (!en->subnets_described) {
			en->subnets_described = true;
			/* The first run's answers waited for this. */
			if (en->recon != NULL && en->recon->first)
				recon_advance(en->recon);
		}
		if (en->phase == PHASE_STARTING && en->recon == NULL &&
		    !en->started_recon) {
			en->started_recon = true;
			reconcile_now(b, "start");
		}
		engine_kick(b);
		return;
	}
	memcpy(&cs, m->u.bytes, sizeof(cs));
	if ((s = subnet_by_id(b, cs.subnet_id)) == NULL) {
		log_security("subnets: the cloud described %s, which was not "
		    "asked for; ignored", cs.subnet_id);
		return;
	}
	subnet_learn_ipv6(b, s, &cs);
	/* An IPv6-only subnet has no IPv4 CIDR (family 0): nothing an
	 * IPv4 pod can take addresses from.  With ip_family ipv6 it is a
	 * subnet like any other, known by its /64 (subnet_learn_ipv6); its
	 * ENIs have no IPv4 address, its pods none either.  (dual refuses
	 * it among the configured ones: subnets_ipv6_ok.) */
	if (cs.cidr.addr.family != AF_INET && b->cfg.ip_family ==
	    IP_FAMILY_IPV6 && s->cidr6.addr.family == AF_INET6) {
		s->known = true;
		memset(&s->cidr, 0, sizeof(s->cidr));
		memset(&s->gateway, 0, sizeof(s->gateway));
		msg_strlcpy(s->az, cs.az, sizeof(s->az));
		s->available = cs.available;
		return;
	}
	if (cs.cidr.addr.family != AF_INET) {
		log_errorx("subnet %s: IPv6-only (no IPv4 CIDR), and "
		    "ip_family \"%s\" gives pods IPv4 addresses; not used",
		    cs.subnet_id, config_family_name(b->cfg.ip_family));
		return;
	}
	for (i = 0; i < b->instance.ncidrs && i < MSG_MAX_CIDRS; i++)
		if (ip_prefix_contains(&b->instance.cidrs[i], &cs.cidr.addr) &&
		    cs.cidr.len >= b->instance.cidrs[i].len)
			in_vpc = true;
	ip_prefix_format(&cs.cidr, cidr);
	if (!in_vpc || cs.cidr.len < 16 || cs.cidr.len > 28) {
		log_security("subnets: %s is described as %s, not a subnet of "
		    "the VPC; not used", cs.subnet_id, cidr);
		return;
	}
	/* Host bits set: the reserved addresses (the router's among them)
	 * would be counted from the wrong place, and let through. */
	if (!ip_prefix_is_network(&cs.cidr)) {
		log_security("subnets: %s is described as %s, which has host "
		    "bits set; not used", cs.subnet_id, cidr);
		return;
	}
	if (s->known && !ip_prefix_eq(&s->cidr, &cs.cidr)) {
		log_security("subnets: %s changed its CIDR; the first one "
		    "stands", s->id);
		return;
	}
	/* The cloud says it has addresses again: no need to wait out the
	 * backoff (a subnet refilled, or addresses released elsewhere). */
	if (s->inhibited_until > now_ms() && cs.available > 0) {
		log_info("subnet %s: the cloud reports %u free addresses; used "
		    "for growth again", s->id, cs.available);
		s->inhibited_until = 0;
	}
	s->known = true;
	s->cidr = cs.cidr;
	/* The VPC router: the address after the network's (IPv4). */
	net = ntohl(ip_addr_in4(&cs.cidr.addr));
	s->gateway = ip_addr_from_in(htonl(net + 1));
	msg_strlcpy(s->az, cs.az, sizeof(s->az));
	s->available = cs.available;
}

void
subnets_describe(struct broker *b)
{
	struct engine *en = &b->engine;
	struct msg_cloud_describe_subnets req;
	uint32_t i;

	if (en->subnets_req.active)
		return;
	memset(&req, 0, sizeof(req));
	req.deadline_ms = ENGINE_CLOUD_DEADLINE_MS;
	for (i = 0; i < en->nsubnets && i < MSG_MAX_SUBNETS; i++) {
		msg_strlcpy(req.ids[req.nids++], en->subnets[i].id,
		    sizeof(req.ids[0]));
		en->subnets[i].asking = true;
	}
	broker_request(b, &en->subnets_req, &b->cloudd,
	    MSG_CLOUD_DESCRIBE_SUBNETS, &req, sizeof(req), req.deadline_ms,
	    subnets_answer, NULL);
}

static void
subnets_timer_cb(struct loop *l, struct loop_timer *t)
{
	(void)l;
	subnets_describe(t->arg);
}

void
reconcile_schedule(struct broker *b)
{
	loop_timer_init(&b->engine.recon_timer, recon_timer_cb, b);
	loop_timer_init(&b->engine.subnets_timer, subnets_timer_cb, b);
}
