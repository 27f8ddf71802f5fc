/*
 * enid-netd: the only enid process with CAP_NET_ADMIN.  It owns the node's
 * ENI links, their route tables and the pods' policy rules, and trusts
 * nothing the broker sends: every request is checked whole against the
 * policy fixed at start (table range, rule priorities and pod cap from the
 * root-owned configuration; VPC CIDRs and the primary MAC from the one
 * NETD_POLICY message) and against what netd itself finds in the kernel
 * before the kernel is touched.
 *
 * What netd finds itself: the node's own links (those the main table's
 * default routes go through) and their addresses, read before the
 * privilege drop and again whenever a default route, an address or one of
 * those links changes; a policy naming another primary MAC is fatal, and
 * no request may touch those links or addresses.  A link is taken over
 * only while it carries nothing but what netd installed, known by netd's
 * tag (NETD_PROTO) on its addresses, routes and rules, which also lets a
 * restarted netd recognise its own.
 *
 * This file holds the entry point, the broker dispatch, the link lookups
 * (link events plus a backoff re-check, under a deadline, on timers) and
 * the node's own links, and the NETD_SNAT handler; the broker's channel is
 * common/peer.c.  Decisions live in policy.c, plan.c and snat.c (netd's
 * nftables table as data); rtnetlink I/O in kernel.c, nf_tables I/O (table
 * ip enid only) in nft.c.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addr.h"
#include "conf.h"
#include "kernel.h"
#include "log.h"
#include "loop.h"
#include "msg.h"
#include "nft.h"
#include "peer.h"
#include "plan.h"
#include "policy.h"
#include "proc.h"
#include "sandbox.h"
#include "snat.h"
#include "testhook.h"

#define NETD_MAX_LOOKUPS	64	/* find-link requests waiting at once */
#define NETD_MAX_SNAPSHOT	PLAN_MAX_OPS

struct lookup {
	bool			 in_use;
	uint32_t		 id;
	uint8_t			 mac[6];
	uint64_t		 start;		/* ms, monotonic */
	uint32_t		 deadline_ms;
	uint32_t		 attempt;	/* checks done */
	uint32_t		 attempts;	/* checks the deadline allows */
	struct loop_timer	 timer;
	struct netd		*nd;
};

/* What netd keeps about its nftables table between requests. */
struct netd_snat {
	bool			 synced;	/* a NETD_SNAT was accepted */
	uint32_t		 to;		/* its target (0: SNAT off) */
	uint32_t		 replaced;	/* whole writes of the table */
	uint32_t		 refused;	/* NETD_SNAT requests refused */
	char			 message[MSG_ERR_LEN];	/* last outcome */
};

/* Table ip6 enid, the IPv6 source check of pods' veths. */
struct netd_src6 {
	uint32_t		 replaced;	/* whole writes */
	char			 message[MSG_ERR_LEN];	/* last sync */
};

struct netd {
	struct loop		 loop;
	struct peer		 peer;		/* the broker */
	struct loop_io		 event_io;
	struct enid_config	 cfg;
	struct netd_policy	 policy;
	struct kernel		 kernel;
	struct nft		 nft;		/* table ip enid */
	struct netd_snat	 snat;
	struct netd_src6	 src6;
	struct kernel_events	 events;
	bool			 node_stale;	/* re-read the node's links */
	struct lookup		 lookups[NETD_MAX_LOOKUPS];
	size_t			 nlookups;
};

/* ---- answers ---- */

static void
netd_send(struct netd *nd, enum msg_type type, uint32_t id,
    const void *payload, size_t len)
{
	peer_send(&nd->peer, type, id, payload, len);
}

static void LOG_PRINTF(5, 6)
netd_result(struct netd *nd, uint32_t id, enum msg_status st, int error,
    const char *fmt, ...)
{
	struct msg_result r;
	va_list ap;

	memset(&r, 0, sizeof(r));
	r.status = st;
	r.error = error;
	va_start(ap, fmt);
	vsnprintf(r.message, sizeof(r.message), fmt, ap);
	va_end(ap);
	netd_send(nd, MSG_NETD_RESULT, id, &r, sizeof(r));
}

/* Success, with how many kernel objects changed. */
static void
netd_send_result(struct netd *nd, uint32_t id, uint32_t changed)
{
	struct msg_result r;

	memset(&r, 0, sizeof(r));
	r.status = ST_OK;
	r.changed = changed;
	snprintf(r.message, sizeof(r.message), "ok");
	netd_send(nd, MSG_NETD_RESULT, id, &r, sizeof(r));
}

/* An out-of-policy request: a security event, answered, nothing done.
 * detail (may be NULL or "") names what in the kernel made it so. */
static void
netd_refuse_id(struct netd *nd, uint32_t id, unsigned int type,
    const char *object, const char *why, const char *detail)
{
	bool d = detail != NULL && detail[0] != '\0';

	log_security("broker: %s %s refused: %s%s%s%s", msg_type_name(type),
	    object, why, d ? " (" : "", d ? detail : "", d ? ")" : "");
	netd_result(nd, id, ST_REFUSED, 0, "%s%s%s%s", why, d ? " (" : "",
	    d ? detail : "", d ? ")" : "");
}

static void
netd_refuse(struct netd *nd, const struct msg *m, const char *object,
    const char *why)
{
	netd_refuse_id(nd, m->hdr.id, m->hdr.type, object, why, NULL);
}

/* ---- the node's own links ---- */

static void
node_describe(const struct netd_node *n, char *buf, size_t len)
{
	char mac[MAC_STR_LEN], ip[IP_ADDR_STR_LEN];
	size_t off = 0;
	uint32_t i;

	buf[0] = '\0';
	if (n->nlinks == 0) {
		snprintf(buf, len, "no default route in the main table");
		return;
	}
	for (i = 0; i < n->nlinks && off < len; i++) {
		mac_format(n->links[i].mac, mac);
		ip_addr_format(&n->links[i].gateway, ip);
		off += (size_t)snprintf(buf + off, len - off, "%s%s %s "
		    "(ifindex %u, gateway %s)", i ? ", " : "",
		    n->links[i].name[0] ? n->links[i].name : "?", mac,
		    n->links[i].ifindex, n->links[i].gateway.family ? ip :
		    "none");
	}
	for (i = 0; i < n->naddrs && off < len; i++) {
		ip_addr_format(&n->addrs[i], ip);
		off += (size_t)snprintf(buf + off, len - off, "%s%s",
		    i ? " " : "; addresses ", ip);
	}
	if (n->overflow && off < len)
		snprintf(buf + off, len - off, "; more than netd tracks");
}

/*
 * Read the node's own links again and add what is new.  0, or a negative
 * errno (then the view stays stale and requests that change the kernel are
 * answered failed until a read succeeds).
 */
static int
node_read(struct netd *nd)
{
	struct netd_node fresh;
	char found[512];
	int rc;

	if ((rc = kernel_node_scan(&nd->kernel, &fresh)) < 0) {
		log_warnx("node: reading the default routes and their links: "
		    "%s; requests wait for a good read", strerror(-rc));
		nd->node_stale = true;
		return rc;
	}
	nd->node_stale = false;
	if (policy_node_merge(&nd->policy, &fresh)) {
		node_describe(&nd->policy.node, found, sizeof(found));
		log_info("node: own links %s", found);
	}
	if (nd->policy.node.overflow)
		log_warnx("node: more default-route links or addresses than "
		    "netd tracks; every request that changes the kernel is "
		    "refused");
	return 0;
}

static void	netd_read_events(struct netd *nd);

/*
 * Before judging a request that may change the kernel: take in the events
 * already queued (a default route may have changed an instant ago) and
 * re-read the node's links if they changed.  False if that failed; then
 * the request has been answered.
 */
static bool
node_current(struct netd *nd, uint32_t id, const char *what)
{
	int rc;

	netd_read_events(nd);
	if (!nd->node_stale || (rc = node_read(nd)) == 0)
		return true;
	log_warnx("%s: the node's own links are unknown; nothing changed",
	    what);
	netd_result(nd, id, ST_FAILED, -rc, "reading the node's own links: "
	    "%s", strerror(-rc));
	return false;
}

/*
 * Whether netd may use the link the kernel has for a declared MAC: not one
 * of the node's own, and bare (nothing on it but netd's).  NULL, or why
 * not with detail filled; *rc < 0 if reading its state failed.  With kin,
 * the lookup that found the link filled st's half that the other links
 * make, and only the link's own addresses and routes are read.
 */
static const char *
link_usable(struct netd *nd, const struct msg_netd_link *l,
    struct nd_link_state *st, bool kin, char *detail, size_t dlen, int *rc)
{
	const char *why;

	*rc = 0;
	detail[0] = '\0';
	if ((why = policy_check_link(&nd->policy, l->ifindex, l->mac)) !=
	    NULL) {
		snprintf(detail, dlen, "link %s, ifindex %u", l->name,
		    l->ifindex);
		return why;
	}
	if (kin)
		*rc = kernel_link_contents(&nd->kernel, st);
	else
		*rc = kernel_link_state(&nd->kernel, l->ifindex, st);
	if (*rc < 0)
		return NULL;
	return policy_check_bare(st, detail, dlen);
}

/* ---- link lookups ---- */

static void
lookup_done(struct netd *nd, struct lookup *lk)
{
	loop_timer_cancel(&nd->loop, &lk->timer);
	lk->in_use = false;
	nd->nlookups--;
	peer_resume(&nd->peer);		/* a slot is free again */
}

/* The link turned up; false if it went away again before it could be
 * checked (then the lookup goes on).  kin: the lookup's read filled half
 * of its state (link_usable()); NULL to read it whole. */
static bool
lookup_found(struct netd *nd, struct lookup *lk,
    const struct msg_netd_link *l, struct nd_link_state *kin,
    const char *how)
{
	static struct nd_link_state whole;
	struct nd_link_state *st = kin != NULL ? kin : &whole;
	char mac[MAC_STR_LEN], detail[160];
	const char *why;
	int rc;

	mac_format(lk->mac, mac);
	log_info("link %s: found as %s (ifindex %u) %s after %llu ms, "
	    "attempt %u/%u", mac, l->name, l->ifindex, how,
	    (unsigned long long)(now_ms() - lk->start), lk->attempt,
	    lk->attempts);
	/* Found late: the checks a declare makes of a present link. */
	if (nd->node_stale)
		(void)node_read(nd);
	why = link_usable(nd, l, st, kin != NULL, detail, sizeof(detail),
	    &rc);
	if (rc == -ENODEV) {
		/* Gone again at once: the next check or event decides. */
		log_info("link %s: %s went away while being checked", mac,
		    l->name);
		return false;
	}
	if (rc == 0 && nd->node_stale)
		rc = -EAGAIN;
	if (rc < 0) {
		log_warnx("link %s: reading its or the node's state: %s; "
		    "answering failed", mac, strerror(-rc));
		netd_result(nd, lk->id, ST_FAILED, -rc, "reading the state of "
		    "link %s or the node: %s", l->name, strerror(-rc));
	} else if (why != NULL)
		netd_refuse_id(nd, lk->id, MSG_NETD_FIND_LINK, mac, why,
		    detail);
	else
		netd_send(nd, MSG_NETD_LINK, lk->id, l, sizeof(*l));
	lookup_done(nd, lk);
	return true;
}

/* One scheduled check: found, given up at the deadline, or re-armed. */
static void
lookup_check(struct netd *nd, struct lookup *lk)
{
	static struct nd_link_state kin;
	struct msg_netd_link l;
	char mac[MAC_STR_LEN];
	uint64_t now = now_ms(), next;
	int rc;

	lk->attempt++;
	mac_format(lk->mac, mac);
	rc = kernel_find_link(&nd->kernel, lk->mac, &l, &kin);
	if (rc == 1 && lookup_found(nd, lk, &l, &kin, "by lookup"))
		return;
	if (rc < 0)
		log_warnx("link %s: lookup failed: %s; will retry", mac,
		    strerror(-rc));
	if (now >= lk->start + lk->deadline_ms ||
	    lk->attempt >= lk->attempts) {
		log_warnx("link %s: not found after %u tries in %u ms; "
		    "answering not-found", mac, lk->attempt, lk->deadline_ms);
		netd_result(nd, lk->id, ST_NOT_FOUND, 0, "link %s not found "
		    "after %u tries in %u ms", mac, lk->attempt,
		    lk->deadline_ms);
		lookup_done(nd, lk);
		return;
	}
	next = lk->start + plan_lookup_offset(lk->attempt + 1, lk->deadline_ms);
	log_info("link %s: not there yet, attempt %u/%u; next check in "
	    "%llu ms", mac, lk->attempt, lk->attempts,
	    (unsigned long long)(next > now ? next - now : 0));
	loop_timer_at(&nd->loop, &lk->timer, next);
}

static void
lookup_timer_cb(struct loop *l, struct loop_timer *t)
{
	struct lookup *lk = t->arg;

	(void)l;
	lookup_check(lk->nd, lk);
}

static void
lookup_start(struct netd *nd, const struct msg *m,
    const struct msg_netd_find_link *req)
{
	struct lookup *lk = NULL;
	char mac[MAC_STR_LEN];
	size_t i;

	mac_format(req->mac, mac);
	for (i = 0; i < NETD_MAX_LOOKUPS && lk == NULL; i++)
		if (!nd->lookups[i].in_use)
			lk = &nd->lookups[i];
	if (lk == NULL) {
		log_warnx("link %s: %d lookups already waiting; answering "
		    "failed", mac, NETD_MAX_LOOKUPS);
		netd_result(nd, m->hdr.id, ST_FAILED, EBUSY, "too many link "
		    "lookups waiting");
		return;
	}
	memset(lk, 0, sizeof(*lk));
	lk->in_use = true;
	nd->nlookups++;
	lk->nd = nd;
	lk->id = m->hdr.id;
	memcpy(lk->mac, req->mac, 6);
	lk->start = now_ms();
	lk->deadline_ms = req->deadline_ms;
	lk->attempts = plan_lookup_attempts(req->deadline_ms);
	loop_timer_init(&lk->timer, lookup_timer_cb, lk);
	lookup_check(nd, lk);
}

/* A link appeared or changed: answer whoever waits for its MAC; one of
 * the node's own changed (its MAC, say): read them again. */
static void
netd_link_event(const struct msg_netd_link *l, void *arg)
{
	struct netd *nd = arg;
	size_t i;

	if (policy_node_link_by_ifindex(&nd->policy, l->ifindex) != NULL)
		nd->node_stale = true;
	for (i = 0; i < NETD_MAX_LOOKUPS; i++)
		if (nd->lookups[i].in_use &&
		    memcmp(nd->lookups[i].mac, l->mac, 6) == 0)
			(void)lookup_found(nd, &nd->lookups[i], l, NULL,
			    "by link event");
}

/* A main-table default route (ifindex 0) or an address changed. */
static void
netd_node_event(uint32_t ifindex, void *arg)
{
	struct netd *nd = arg;

	if (ifindex == 0 ||
	    policy_node_link_by_ifindex(&nd->policy, ifindex) != NULL)
		nd->node_stale = true;
}

static void
netd_read_events(struct netd *nd)
{
	struct msg_netd_link link;
	bool overrun;
	size_t i;
	int rc;

	if ((rc = kernel_read_events(&nd->kernel, &nd->events, &overrun)) < 0)
		log_warnx("kernel events: %s; the re-check timers stay armed",
		    strerror(-rc));
	if (!overrun)
		return;
	log_warnx("kernel events: the kernel dropped some; re-reading the "
	    "node's own links and re-checking every waiting lookup");
	nd->node_stale = true;
	for (i = 0; i < NETD_MAX_LOOKUPS; i++)
		if (nd->lookups[i].in_use &&
		    kernel_find_link(&nd->kernel, nd->lookups[i].mac,
		    &link, NULL) == 1)
			(void)lookup_found(nd, &nd->lookups[i], &link, NULL,
			    "after lost events");
}

static void
netd_event_cb(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct netd *nd = io->arg;

	(void)l;
	(void)events;
	netd_read_events(nd);
	if (nd->node_stale)
		(void)node_read(nd);
}

/* ---- snapshots for the planner ---- */

/* kernel_each_rule(), saying so when the rule view was read again whole
 * because the kernel dropped notifications. */
static int
netd_each_rule(struct netd *nd, uint32_t prio_a, uint32_t prio_b,
    kernel_rule_cb cb, void *arg)
{
	unsigned long lost = nd->kernel.rules_lost;
	int rc;

	rc = kernel_each_rule(&nd->kernel, prio_a, prio_b, cb, arg);
	if (nd->kernel.rules_lost != lost)
		log_info("rules: the kernel dropped rule notifications; "
		    "dumped the rules again");
	return rc;
}

/*
 * The classes of the rule view's index: netd's "to POD" rules, each
 * family's counted (the cap), and the rules with netd's tag that are not
 * netd's, which every pod request must see (a delete of netd's could
 * take one).  The policy's priorities and connection mark, which decide
 * the class, are fixed at start.
 */
static unsigned
netd_rule_class(const struct nd_rule *r, void *arg)
{
	const struct netd_policy *p = arg;

	if (!plan_rule_owned(p, r))
		return r->protocol == NETD_PROTO ? KERNEL_RULE_ASIDE : 0;
	if (plan_rule_is_pod_to(p, r))
		return KERNEL_RULE_COUNT(r->dst.addr.family == NETD_AF_INET ?
		    0 : 1);
	return 0;
}

/* kernel_pod_rules(), saying so when the rule view was read again. */
static int
netd_pod_rules(struct netd *nd, const struct ip_addr pods[2],
    kernel_rule_cb cb, void *arg, uint32_t counts[2])
{
	unsigned long lost = nd->kernel.rules_lost;
	int rc;

	rc = kernel_pod_rules(&nd->kernel, nd->policy.prio_to,
	    nd->policy.prio_from, pods, 2, cb, arg, counts);
	if (nd->kernel.rules_lost != lost)
		log_info("rules: the kernel dropped rule notifications; "
		    "dumped the rules again");
	return rc;
}

struct snapshot {
	const struct netd_policy *policy;
	struct ip_addr		 pod;		/* rules: one pod's */
	struct ip_addr		 pod6;		/* its IPv6 one, dual; or none */
	uint32_t		 table;		/* rules: only this table's */
	uint32_t		 npods;		/* pods with netd's rules */
	uint32_t		 npods6;	/* in pod6's family (dual) */
	uint32_t		 nown, nown6;	/* of pod's and pod6's rules */
	uint32_t		 foreign;	/* not netd's: left alone */
	size_t			 nrules, nroutes;
	bool			 overflow;
	struct nd_rule		 rules[NETD_MAX_SNAPSHOT];
	struct nd_route		 routes[NETD_MAX_SNAPSHOT];
	/* Someone else's rules with netd's tag: a delete of netd's, which
	 * the kernel matches on what it names only, could take one. */
	size_t			 ntagged;
	struct nd_rule		 tagged[NETD_MAX_SNAPSHOT];
};

static void
snap_tagged(struct snapshot *s, const struct nd_rule *r)
{
	if (r->protocol != NETD_PROTO)
		return;
	if (s->ntagged == NETD_MAX_SNAPSHOT)
		s->overflow = true;
	else
		s->tagged[s->ntagged++] = *r;
}

static void
snap_pod_rule(const struct nd_rule *r, void *arg)
{
	struct snapshot *s = arg;

	if (!plan_rule_owned(s->policy, r)) {
		s->foreign++;
		snap_tagged(s, r);
		return;
	}
	if (plan_rule_is_pods(s->policy, r, &s->pod))
		s->nown++;
	else if (s->pod6.family != 0 &&
	    plan_rule_is_pods(s->policy, r, &s->pod6))
		s->nown6++;
	else
		return;
	if (s->nrules == NETD_MAX_SNAPSHOT)
		s->overflow = true;
	else
		s->rules[s->nrules++] = *r;
}

static void
snap_table_rule(const struct nd_rule *r, void *arg)
{
	struct snapshot *s = arg;

	if (r->priority != s->policy->prio_from || r->table != s->table)
		return;
	if (!plan_rule_owned(s->policy, r)) {
		snap_tagged(s, r);
		return;
	}
	if (s->nrules == NETD_MAX_SNAPSHOT)
		s->overflow = true;
	else
		s->rules[s->nrules++] = *r;
}

static void
snap_route(const struct nd_route *r, void *arg)
{
	struct snapshot *s = arg;

	/* netd writes unicast routes only: one of another type is not
	 * its own, whatever its protocol says. */
	if (r->protocol != NETD_PROTO || r->type != NETD_ROUTE_UNICAST) {
		s->foreign++;
		return;
	}
	if (s->nroutes == NETD_MAX_SNAPSHOT)
		s->overflow = true;
	else
		s->routes[s->nroutes++] = *r;
}

/* Apply a plan and answer; what is a description for the logs. */
static void
netd_apply(struct netd *nd, uint32_t id, const struct nd_plan *plan,
    size_t changed, const char *what)
{
	char err[MSG_ERR_LEN];
	struct msg_result r;
	int rc;

	if ((rc = kernel_apply(&nd->kernel, plan, err, sizeof(err))) < 0) {
		log_warnx("%s: failed at %s", what, err);
		netd_result(nd, id, ST_FAILED, -rc, "%s", err);
		return;
	}
	/* What it changed: a reconciliation's set-up again counts it. */
	log_debug("%s: done (%zu operations)", what, plan->nops);
	memset(&r, 0, sizeof(r));
	r.status = ST_OK;
	r.changed = (uint32_t)changed;
	snprintf(r.message, sizeof(r.message), "ok");
	netd_send(nd, MSG_NETD_RESULT, id, &r, sizeof(r));
}

static void
netd_snapshot_failed(struct netd *nd, uint32_t id, const char *what, int rc,
    bool overflow)
{
	if (overflow) {
		log_warnx("%s: too many kernel objects to plan with; nothing "
		    "changed", what);
		netd_result(nd, id, ST_FAILED, E2BIG, "too many kernel objects");
	} else {
		log_warnx("%s: reading kernel state: %s; nothing changed", what,
		    strerror(-rc));
		netd_result(nd, id, ST_FAILED, -rc, "reading kernel state: %s",
		    strerror(-rc));
	}
}

/*
 * Whether one of plan's rule deletes could take a rule of someone else's
 * that carries netd's tag (the kernel matches a delete on the attributes
 * it names only, so "to POD" also takes "to POD fwmark X"); if so the
 * request fails and nothing changes.
 */
static bool
netd_rule_del_unsafe(struct netd *nd, uint32_t id, const char *what,
    const struct nd_plan *plan, const struct snapshot *snap)
{
	const struct nd_op *op;
	char a[IP_PREFIX_STR_LEN], b[IP_PREFIX_STR_LEN];

	if ((op = plan_rule_del_unsafe(plan, snap->tagged,
	    snap->ntagged)) == NULL)
		return false;
	ip_prefix_format(&op->u.rule.src, a);
	ip_prefix_format(&op->u.rule.dst, b);
	log_warnx("%s: deleting rule %u from %s to %s table %u could take a "
	    "rule with netd's tag and another selector instead; nothing "
	    "changed", what, op->u.rule.priority, a, b, op->u.rule.table);
	netd_result(nd, id, ST_FAILED, EEXIST, "a rule with netd's tag and "
	    "another selector is in the way of deleting netd's own");
	return true;
}

/* ---- the connection-mark rule ---- */

/* netd's rules with a fwmark at prio_to: its connection-mark rule, now or
 * under an earlier routing.connmark. */
static void
snap_mark_rule(const struct nd_rule *r, void *arg)
{
	struct snapshot *s = arg;

	if (r->protocol != NETD_PROTO || r->fwmask == 0)
		return;
	if (!plan_rule_owned(s->policy, r) &&
	    !plan_rule_is_connmark_shape(s->policy, r))
		snap_tagged(s, r);
	if (s->nrules == NETD_MAX_SNAPSHOT)
		s->overflow = true;
	else
		s->rules[s->nrules++] = *r;
}

/*
 * Make netd's connection-mark rule ("fwmark M/M lookup main" at prio_to)
 * present exactly once, replacing one netd wrote with another mark.  Run
 * when the policy is accepted and at each NETD_SNAT (every reconcile), so
 * a rule someone removed comes back and a restarted netd adds none twice.
 * 0 with *changed the kernel objects it changed, or -1 with err set.
 */
static int
netd_connmark_sync(struct netd *nd, int *changed, char *err, size_t errlen)
{
	static struct snapshot snap;
	static struct nd_plan plan;
	char what[MSG_ERR_LEN];
	int rc;

	*changed = 0;
	memset(&snap, 0, sizeof(snap));
	snap.policy = &nd->policy;
	if ((rc = netd_each_rule(nd, nd->policy.prio_to,
	    nd->policy.prio_to, snap_mark_rule, &snap)) < 0) {
		snprintf(err, errlen, "reading the rules at priority %u: %s",
		    nd->policy.prio_to, strerror(-rc));
		return -1;
	}
	if (snap.overflow || plan_connmark(&nd->policy, snap.rules,
	    snap.nrules, &plan) == -1) {
		snprintf(err, errlen, "more than %d rules of netd's with a "
		    "fwmark at priority %u", NETD_MAX_SNAPSHOT,
		    nd->policy.prio_to);
		return -1;
	}
	if (plan.nops == 0)
		return 0;
	if (plan_rule_del_unsafe(&plan, snap.tagged, snap.ntagged) != NULL) {
		snprintf(err, errlen, "a rule with netd's tag and another "
		    "selector at priority %u could go in place of netd's "
		    "stale one; nothing changed", nd->policy.prio_to);
		return -1;
	}
	if (kernel_apply(&nd->kernel, &plan, what, sizeof(what)) < 0) {
		snprintf(err, errlen, "%s", what);
		return -1;
	}
	*changed = (int)plan.nops;
	log_info("connmark: rule fwmark 0x%x/0x%x lookup main at priority "
	    "%u made right (%zu changes)", nd->policy.connmark,
	    nd->policy.connmark, nd->policy.prio_to, plan.nops);
	return 0;
}

/* ---- requests ---- */

struct holder_ctx {
	const struct ip_addr	*addr;		/* the request's */
	const struct ip_addr	*addr2;		/* its second, or NULL */
	uint32_t		 own_ifindex;	/* the ENI's link, or 0 */
	uint32_t		 holder;	/* a link holding it, or 0 */
	const struct ip_addr	*held;		/* which of the two */
	const char		*why;
};

static void
addr_holder(const struct nd_ifaddr *a, void *arg)
{
	struct holder_ctx *hc = arg;

	if (hc->why != NULL || (!ip_addr_eq(&a->addr.addr, hc->addr) &&
	    (hc->addr2 == NULL || !ip_addr_eq(&a->addr.addr, hc->addr2))))
		return;
	if ((hc->why = policy_check_addr_holder(a->ifindex,
	    hc->own_ifindex)) != NULL) {
		hc->holder = a->ifindex;
		hc->held = ip_addr_eq(&a->addr.addr, hc->addr) ? hc->addr :
		    hc->addr2;
	}
}

/*
 * The half of the policy that needs the kernel: an address inside the VPC
 * may still be configured on a link of the node (the primary interface,
 * another ENI, a storage NIC, lo), and a pod rule or an ENI setup naming it
 * would steer the node's traffic.  False if the request was refused or
 * failed (and answered).
 */
static const char *
family_name(int family)
{
	return family == AF_INET6 ? "IPv6" : "IPv4";
}

static bool
netd_addrs_free(struct netd *nd, const struct msg *m, const char *what,
    const struct ip_addr *addr, const struct ip_addr *addr2,
    uint32_t own_ifindex)
{
	struct holder_ctx hc = { addr, addr2, own_ifindex, 0, NULL, NULL };
	struct msg_netd_link l;
	char detail[128], held[IP_ADDR_STR_LEN];
	int rc;

	/* From the address view: the events queued are read first (and the
	 * node's links again if they changed), so it is the kernel's as of
	 * its last notification.  What netd adds itself is in it at once;
	 * an IPv6 address somebody else adds counts from its notification,
	 * which the kernel sends from its work queue an instant after the
	 * add: the same as an add an instant after this check, which no
	 * check can stop. */
	if (!node_current(nd, m->hdr.id, what))
		return false;
	if ((rc = kernel_each_addr(&nd->kernel, addr2 != NULL ? 0 :
	    addr->family, 0, addr_holder, &hc)) < 0) {
		netd_snapshot_failed(nd, m->hdr.id, what, rc, false);
		return false;
	}
	if (hc.why == NULL)
		return true;
	if (kernel_get_link(&nd->kernel, hc.holder, &l) != 1)
		snprintf(l.name, sizeof(l.name), "?");
	/* Of two addresses, the answer says which. */
	ip_addr_format(hc.held, held);
	snprintf(detail, sizeof(detail), "%s%s%s%son %s, ifindex %u",
	    addr2 == NULL ? "" : family_name(hc.held->family),
	    addr2 == NULL ? "" : " address ", addr2 == NULL ? "" : held,
	    addr2 == NULL ? "" : " ", l.name, hc.holder);
	netd_refuse_id(nd, m->hdr.id, m->hdr.type, what, hc.why, detail);
	return false;
}

static bool
netd_addr_free(struct netd *nd, const struct msg *m, const char *what,
    const struct ip_addr *addr, uint32_t own_ifindex)
{
	return netd_addrs_free(nd, m, what, addr, NULL, own_ifindex);
}

/* The ENI set-up's addresses, and the first pod rule found naming one. */
struct pod_rule_ctx {
	const struct ip_addr	*addr, *addr2;
	uint32_t		 prio_to, prio_from;
	const struct ip_addr	*held;
	uint32_t		 priority;
};

static void
pod_rule_holder(const struct nd_rule *r, void *arg)
{
	struct pod_rule_ctx *pc = arg;
	const struct ip_prefix *p;
	const struct ip_addr *want[2] = { pc->addr, pc->addr2 };
	size_t i;

	if (pc->held != NULL)
		return;
	p = r->priority == pc->prio_to ? &r->dst : &r->src;
	if (p->len != ip_family_bits(p->addr.family))
		return;
	for (i = 0; i < 2; i++)
		if (want[i] != NULL && want[i]->family != 0 &&
		    ip_addr_eq(&p->addr, want[i])) {
			pc->held = want[i];
			pc->priority = r->priority;
			return;
		}
}

/*
 * The other half of an ENI address's check: the address is no pod's.  A
 * pod's address is on no link of the node (the pod holds it in its own
 * namespace), so the links' dump cannot tell; the kernel's pod rules can.
 * Put on the ENI's link, the address would be the node's own (the local
 * table goes before every rule), and the pod's inbound traffic would end
 * at the node.  Any full-length rule at the pods' priorities counts, not
 * only netd's: whoever steers that address, it is not free.  False if
 * the request was refused or failed (and answered).
 */
static bool
netd_addrs_no_pod(struct netd *nd, const struct msg *m, const char *what,
    const struct ip_addr *addr, const struct ip_addr *addr2)
{
	struct pod_rule_ctx pc = { addr, addr2, nd->policy.prio_to,
	    nd->policy.prio_from, NULL, 0 };
	char detail[128], held[IP_ADDR_STR_LEN];
	int rc;

	if ((addr == NULL || addr->family == 0) &&
	    (addr2 == NULL || addr2->family == 0))
		return true;
	if ((rc = netd_each_rule(nd, nd->policy.prio_to,
	    nd->policy.prio_from, pod_rule_holder, &pc)) < 0) {
		netd_snapshot_failed(nd, m->hdr.id, what, rc, false);
		return false;
	}
	if (pc.held == NULL)
		return true;
	ip_addr_format(pc.held, held);
	snprintf(detail, sizeof(detail), "%s address %s, rule priority %u",
	    family_name(pc.held->family), held, pc.priority);
	netd_refuse_id(nd, m->hdr.id, m->hdr.type, what,
	    "the address is a pod's (a pod rule names it)", detail);
	return false;
}

/*
 * The link with the request's MAC, if the kernel has it: usable (not the
 * node's own, bare), or refused.  Returns 1 with *link and *st filled, 0
 * if there is no such link, -1 if the request was refused or failed (and
 * answered).
 */
static int
netd_eni_link(struct netd *nd, const struct msg *m, const char *what,
    const uint8_t mac[6], struct msg_netd_link *link,
    struct nd_link_state *st)
{
	char detail[160];
	const char *why;
	int rc;

	if ((rc = kernel_find_link(&nd->kernel, mac, link, st)) < 0) {
		netd_snapshot_failed(nd, m->hdr.id, what, rc, false);
		return -1;
	}
	if (rc == 0)
		return 0;
	why = link_usable(nd, link, st, true, detail, sizeof(detail), &rc);
	if (rc == -ENODEV)
		return 0;		/* gone since the lookup */
	if (rc < 0) {
		netd_snapshot_failed(nd, m->hdr.id, what, rc, false);
		return -1;
	}
	if (why != NULL) {
		netd_refuse_id(nd, m->hdr.id, m->hdr.type, what, why, detail);
		return -1;
	}
	return 1;
}

static void
netd_declare(struct netd *nd, const struct msg *m, bool declare)
{
	static struct nd_link_state st;
	struct msg_netd_eni req;
	struct msg_netd_link link;
	char mac[MAC_STR_LEN], obj[64];
	const char *why;

	memcpy(&req, m->u.bytes, sizeof(req));
	mac_format(req.mac, mac);
	snprintf(obj, sizeof(obj), "%s table %u", mac, req.table);
	if (declare && !node_current(nd, m->hdr.id, obj))
		return;
	why = declare ? policy_check_declare(&nd->policy, &req) :
	    policy_check_forget(&nd->policy, &req);
	if (why != NULL) {
		netd_refuse(nd, m, obj, why);
		return;
	}
	/* A link there now must be one netd may take over; one that comes
	 * later is checked when it is found or set up. */
	if (declare && netd_eni_link(nd, m, obj, req.mac, &link, &st) < 0)
		return;
	if (declare) {
		policy_declare(&nd->policy, &req);
		log_info("eni %s: declared with table %u", mac, req.table);
	} else {
		size_t i;

		policy_forget(&nd->policy, &req);
		for (i = 0; i < NETD_MAX_LOOKUPS; i++) {
			struct lookup *lk = &nd->lookups[i];

			if (!lk->in_use || memcmp(lk->mac, req.mac, 6) != 0)
				continue;
			netd_result(nd, lk->id, ST_NOT_FOUND, 0, "ENI %s "
			    "forgotten while its link was awaited", mac);
			lookup_done(nd, lk);
		}
		log_info("eni %s: forgotten", mac);
	}
	netd_result(nd, m->hdr.id, ST_OK, 0, "%s", "ok");
}

static void
netd_find_link(struct netd *nd, const struct msg *m)
{
	struct msg_netd_find_link req;
	char mac[MAC_STR_LEN];
	const char *why;

	memcpy(&req, m->u.bytes, sizeof(req));
	mac_format(req.mac, mac);
	if (!node_current(nd, m->hdr.id, mac))
		return;
	if ((why = policy_check_find_link(&nd->policy, &req)) != NULL) {
		netd_refuse(nd, m, mac, why);
		return;
	}
	lookup_start(nd, m, &req);
}

static void
netd_setup_eni(struct netd *nd, const struct msg *m, bool setup)
{
	static struct snapshot snap;
	static struct nd_plan plan;
	static struct nd_link_state st;
	static struct nd_egress eg;
	struct msg_netd_setup_eni req;
	struct msg_netd_link link;
	char mac[MAC_STR_LEN], pmac[MAC_STR_LEN], cidr[IP_PREFIX_STR_LEN];
	char gw[IP_ADDR_STR_LEN], addr6[IP_ADDR_STR_LEN], what[200];
	const char *why;
	int rc, found;

	memcpy(&req, m->u.bytes, sizeof(req));
	mac_format(req.mac, mac);
	/* "none" for an absent address (family 0). */
	if (req.addr.addr.family != 0)
		ip_prefix_format(&req.addr, cidr);
	else
		snprintf(cidr, sizeof(cidr), "none");
	if (req.gateway.family != 0)
		ip_addr_format(&req.gateway, gw);
	else
		snprintf(gw, sizeof(gw), "none");
	if (req.addr6.family != 0)
		ip_addr_format(&req.addr6, addr6);
	else
		snprintf(addr6, sizeof(addr6), "none");
	snprintf(what, sizeof(what), "eni %s %s table %u %s gw %s ipv6 %s "
	    "mtu %u", mac, setup ? "setup" : "teardown", req.table, cidr, gw,
	    addr6, req.mtu);
	if (!node_current(nd, m->hdr.id, what))
		return;
	why = setup ? policy_check_setup(&nd->policy, &req) :
	    policy_check_teardown(&nd->policy, &req);
	if (why != NULL) {
		netd_refuse(nd, m, what, why);
		return;
	}
	/* No half table: without a way out for translated traffic the
	 * setup fails before the kernel is touched.  Only IPv4 traffic is
	 * translated: an IPv6-only ENI needs no primary gateway. */
	if (setup && (why = plan_egress(&nd->policy, &nd->cfg, &eg)) != NULL &&
	    req.addr.addr.family != 0) {
		mac_format(nd->policy.primary_mac, pmac);
		log_warnx("%s: %s (primary MAC %s); nothing changed, answering "
		    "failed", what, why, pmac);
		netd_result(nd, m->hdr.id, ST_FAILED, ENETUNREACH, "%s "
		    "(primary MAC %s)", why, pmac);
		return;
	}

	if ((found = netd_eni_link(nd, m, what, req.mac, &link, &st)) < 0)
		return;
	if (found == 0 && setup) {
		log_warnx("%s: no link with that MAC; nothing changed", what);
		netd_result(nd, m->hdr.id, ST_NOT_FOUND, ENODEV, "link %s not "
		    "found", mac);
		return;
	}
	if (setup && req.addr.addr.family != 0 &&
	    !netd_addr_free(nd, m, what, &req.addr.addr, link.ifindex))
		return;
	if (setup && req.addr6.family != 0 &&
	    !netd_addr_free(nd, m, what, &req.addr6, link.ifindex))
		return;
	if (setup && !netd_addrs_no_pod(nd, m, what, &req.addr.addr,
	    &req.addr6))
		return;

	memset(&snap, 0, sizeof(snap));
	snap.policy = &nd->policy;
	snap.table = req.table;
	if ((rc = kernel_each_route(&nd->kernel, req.table, snap_route,
	    &snap)) < 0 || snap.overflow ||
	    (!setup && ((rc = netd_each_rule(nd,
	    nd->policy.prio_from, nd->policy.prio_from, snap_table_rule,
	    &snap)) < 0 || snap.overflow))) {
		netd_snapshot_failed(nd, m->hdr.id, what, rc, snap.overflow);
		return;
	}
	if (snap.foreign > 0)
		log_warnx("%s: table %u holds %u routes netd did not install; "
		    "left alone", what, req.table, snap.foreign);
	if (setup)
		rc = plan_eni_setup(&req, link.ifindex, &eg, &st, snap.routes,
		    snap.nroutes, &plan);
	else
		rc = plan_eni_teardown(&nd->policy, &req,
		    found ? link.ifindex : 0, found ? &st : NULL, snap.routes,
		    snap.nroutes, snap.rules, snap.nrules, &plan);
	if (rc == -1) {
		netd_snapshot_failed(nd, m->hdr.id, what, 0, true);
		return;
	}
	if (netd_rule_del_unsafe(nd, m->hdr.id, what, &plan, &snap))
		return;
	netd_apply(nd, m->hdr.id, &plan, plan_changes(&plan, found ? &st : NULL),
	    what);
}

/* The cap, for one of a pod's addresses: its own rules there already, a
 * repeated add, count for nothing. */
static bool
netd_pod_count_ok(struct netd *nd, const struct msg *m, const char *what,
    const char *family, uint32_t npods, uint32_t nown)
{
	const char *why;
	char detail[64];

	if ((why = policy_check_pod_count(&nd->policy, npods, nown > 0)) ==
	    NULL)
		return true;
	snprintf(detail, sizeof(detail), "%s%s%u pods, at most %u", family,
	    family[0] != '\0' ? ": " : "", npods, nd->policy.max_pods);
	netd_refuse_id(nd, m->hdr.id, m->hdr.type, what, why, detail);
	return false;
}

/*
 * A pod's rules, a dual-stack pod's both families at once: every check of
 * both addresses, against the policy and then against one read of the
 * kernel (its addresses, its rules), before any change, so that a refusal
 * changes neither family; then one plan, one answer.
 */
static void
netd_pod(struct netd *nd, const struct msg *m, bool adding)
{
	static struct snapshot snap;
	static struct nd_plan plan;
	struct msg_netd_pod_rule req, req6;
	struct ip_addr pods[2];
	uint32_t counts[2];
	char addr[IP_ADDR_STR_LEN], addr6[IP_ADDR_STR_LEN] = "", what[128];
	const char *why;
	bool dual;
	int rc;

	memcpy(&req, m->u.bytes, sizeof(req));
	dual = req.addr6.family != 0;
	ip_addr_format(&req.addr, addr);
	if (dual)
		ip_addr_format(&req.addr6, addr6);
	snprintf(what, sizeof(what), "pod %s%s%s %s rules (table %u)", addr,
	    dual ? " and " : "", addr6, adding ? "add" : "del", req.table);
	if (!node_current(nd, m->hdr.id, what))
		return;
	/* The IPv6 address as a request of its own, for the policy's
	 * checks of one address. */
	memset(&req6, 0, sizeof(req6));
	req6.addr = req.addr6;
	req6.table = req.table;
	if ((why = policy_check_pod(&nd->policy, &req, adding)) != NULL) {
		netd_refuse_id(nd, m->hdr.id, m->hdr.type, what, why,
		    dual ? "its IPv4 address" : NULL);
		return;
	}
	if (dual && (why = policy_check_pod(&nd->policy, &req6, adding)) !=
	    NULL) {
		netd_refuse_id(nd, m->hdr.id, m->hdr.type, what, why,
		    "its IPv6 address");
		return;
	}
	if (!netd_addrs_free(nd, m, what, &req.addr, dual ? &req.addr6 : NULL,
	    0))
		return;
	memset(&snap, 0, sizeof(snap));
	snap.policy = &nd->policy;
	snap.pod = req.addr;
	snap.pod6 = req.addr6;
	/* The pod's own rules and the tagged ones in the way of a delete,
	 * from the rule view's index: a request costs the same with one pod
	 * on the node as with hundreds. */
	pods[0] = req.addr;
	pods[1] = req.addr6;
	if ((rc = netd_pod_rules(nd, pods, snap_pod_rule, &snap, counts)) < 0 ||
	    snap.overflow) {
		netd_snapshot_failed(nd, m->hdr.id, what, rc, snap.overflow);
		return;
	}
	/* The cap counts pods per family: a dual-stack pod has a to-rule
	 * in each, and the index counts them (netd_rule_class()). */
	snap.npods = counts[req.addr.family == NETD_AF_INET ? 0 : 1];
	snap.npods6 = dual ? counts[1] : 0;
	if (adding && (!netd_pod_count_ok(nd, m, what, dual ? "IPv4" : "",
	    snap.npods, snap.nown) || (dual && !netd_pod_count_ok(nd, m, what,
	    "IPv6", snap.npods6, snap.nown6))))
		return;
	rc = adding ?
	    plan_pod_add(&nd->policy, &req, snap.rules, snap.nrules, &plan) :
	    plan_pod_del(&nd->policy, &req, snap.rules, snap.nrules, &plan);
	if (rc == -1) {
		netd_snapshot_failed(nd, m->hdr.id, what, 0, true);
		return;
	}
	if (netd_rule_del_unsafe(nd, m->hdr.id, what, &plan, &snap))
		return;
	netd_apply(nd, m->hdr.id, &plan, plan.nops, what);
}

/* What the kernel holds that a host-route request depends on. */
struct route_snap {
	struct ip_addr		 addr;
	uint32_t		 ifindex;	/* the request's device */
	const struct netd_policy *policy;
	bool			 has_rule;
	bool			 overflow;
	size_t			 nroutes;
	struct nd_host_route	 routes[NETD_MAX_SNAPSHOT];
};

static void
snap_route_rule(const struct nd_rule *r, void *arg)
{
	struct route_snap *s = arg;

	if (plan_rule_is_pod_to(s->policy, r) &&
	    r->table == NETD_TABLE_MAIN && ip_addr_eq(&r->dst.addr, &s->addr))
		s->has_rule = true;
}

static void
snap_host_route(const struct nd_route *r, void *arg)
{
	struct route_snap *s = arg;
	struct nd_host_route *h;

	if (r->dst.len != ip_family_bits(r->dst.addr.family) ||
	    (!ip_addr_eq(&r->dst.addr, &s->addr) &&
	    !(s->ifindex != 0 && r->ifindex == s->ifindex)))
		return;
	if (s->nroutes == NETD_MAX_SNAPSHOT) {
		s->overflow = true;
		return;
	}
	h = &s->routes[s->nroutes++];
	memset(h, 0, sizeof(*h));
	h->dst = r->dst;
	h->type = r->type;
	h->metric = r->metric;
	h->scope = r->scope;
	h->multipath = r->multipath;
	h->gateway = r->gateway;
	h->ifindex = r->ifindex;
}

/*
 * Put back a pod's host route that enid-cni made and someone removed.
 * The broker names the address and the device; netd believes neither:
 * the address must carry netd's own rule for a pod, and the device must
 * be a pod's veth that routes nothing else (policy_check_pod_route).
 */
static void
netd_pod_route(struct netd *nd, const struct msg *m)
{
	static struct route_snap snap;
	static struct nd_plan plan;
	struct msg_netd_pod_route req;
	struct nd_pod_link link;
	char addr[IP_ADDR_STR_LEN], what[96], detail[96];
	const char *why;
	bool present;
	int rc;

	memcpy(&req, m->u.bytes, sizeof(req));
	ip_addr_format(&req.addr, addr);
	snprintf(what, sizeof(what), "pod %s host route dev %s", addr, req.dev);
	if (!node_current(nd, m->hdr.id, what))
		return;
	memset(&snap, 0, sizeof(snap));
	memset(&link, 0, sizeof(link));
	snap.addr = req.addr;
	snap.policy = &nd->policy;
	if (veth_name_ok(req.dev) &&
	    (rc = kernel_pod_link(&nd->kernel, req.dev, &link)) < 0) {
		netd_snapshot_failed(nd, m->hdr.id, what, rc, false);
		return;
	}
	snap.ifindex = link.found ? link.ifindex : 0;
	if ((rc = netd_each_rule(nd, nd->policy.prio_to,
	    nd->policy.prio_to, snap_route_rule, &snap)) < 0 ||
	    (rc = kernel_each_route(&nd->kernel, NETD_TABLE_MAIN,
	    snap_host_route, &snap)) < 0 || snap.overflow) {
		netd_snapshot_failed(nd, m->hdr.id, what, rc, snap.overflow);
		return;
	}
	why = policy_check_pod_route(&nd->policy, &req, snap.has_rule, &link,
	    snap.routes, snap.nroutes, &present, detail, sizeof(detail));
	if (why == policy_no_such_device) {
		log_info("%s: no such device; nothing changed", what);
		netd_result(nd, m->hdr.id, ST_NOT_FOUND, ENODEV, "%s: no "
		    "device %s", addr, req.dev);
		return;
	}
	if (why != NULL) {
		netd_refuse_id(nd, m->hdr.id, m->hdr.type, what, why, detail);
		return;
	}
	/* The address may be configured on a link (the checks above look
	 * at routes and rules only). */
	if (!netd_addr_free(nd, m, what, &req.addr, 0))
		return;
	if (present) {
		log_debug("%s: there already", what);
		netd_result(nd, m->hdr.id, ST_OK, 0, "%s", "ok");
		return;
	}
	plan_pod_route(&req, link.ifindex, &plan);
	log_info("%s: restoring it", what);
	netd_apply(nd, m->hdr.id, &plan, plan.nops, what);
}

struct dump_ctx {
	struct netd	*nd;
	uint32_t	 id;
	uint32_t	 count;
};

static void
dump_link(const struct msg_netd_link *l, void *arg)
{
	struct dump_ctx *dc = arg;

	netd_send(dc->nd, MSG_NETD_LINK, dc->id, l, sizeof(*l));
	dc->count++;
}

/*
 * Only netd's pods' rules: a foreign rule at enid's priorities is not the
 * pool's, and neither is netd's connection-mark rule, which is no pod's
 * (the broker would see "from all lookup main" at prio_to: no pod, but
 * nothing to compare either).
 */
static void
dump_rule(const struct nd_rule *r, void *arg)
{
	struct dump_ctx *dc = arg;
	struct msg_netd_rule mr;

	if (!plan_rule_owned(&dc->nd->policy, r) ||
	    plan_rule_is_connmark(&dc->nd->policy, r))
		return;
	memset(&mr, 0, sizeof(mr));
	mr.priority = r->priority;
	mr.table = r->table;
	mr.src = r->src;
	mr.dst = r->dst;
	netd_send(dc->nd, MSG_NETD_RULE, dc->id, &mr, sizeof(mr));
	dc->count++;
}

static void
dump_host_route(const struct msg_netd_route *r, void *arg)
{
	struct dump_ctx *dc = arg;

	netd_send(dc->nd, MSG_NETD_ROUTE, dc->id, r, sizeof(*r));
	dc->count++;
}

enum dump_what { DUMP_LINKS, DUMP_RULES, DUMP_ROUTES };

static void
netd_dump(struct netd *nd, const struct msg *m, enum dump_what what)
{
	static const char *const names[] = { "links", "rules", "host routes" };
	struct dump_ctx dc = { nd, m->hdr.id, 0 };
	struct msg_end end;
	int rc;

	if (what == DUMP_LINKS)
		rc = kernel_each_link(&nd->kernel, dump_link, &dc);
	else if (what == DUMP_RULES) {
		/* The broker's reconciliation reads what a dump reads now,
		 * not the view (see kernel_rules_forget()). */
		kernel_rules_forget(&nd->kernel);
		kernel_addrs_forget(&nd->kernel);
		rc = netd_each_rule(nd, nd->policy.prio_to,
		    nd->policy.prio_from, dump_rule, &dc);
	} else
		rc = kernel_each_host_route(&nd->kernel, dump_host_route, &dc);
	if (rc < 0) {
		/* Entries sent so far stand; the broker sees no END. */
		log_warnx("dump of %s: %s", names[what], strerror(-rc));
		netd_result(nd, m->hdr.id, ST_FAILED, -rc, "dump: %s",
		    strerror(-rc));
		return;
	}
	memset(&end, 0, sizeof(end));
	end.count = dc.count;
	netd_send(nd, MSG_NETD_END, m->hdr.id, &end, sizeof(end));
}

/* ---- the nftables table (SNAT and the connection marks) ---- */

struct primary_addrs {
	uint32_t	ifindex;
	size_t		n;
	bool		overflow;
	uint32_t	addrs[NETD_MAX_LINK_ADDRS];
};

static void
primary_addr(const struct nd_ifaddr *a, void *arg)
{
	struct primary_addrs *pa = arg;

	if (a->ifindex != pa->ifindex || a->addr.addr.family != AF_INET)
		return;
	if (pa->n == NETD_MAX_LINK_ADDRS)
		pa->overflow = true;
	else
		pa->addrs[pa->n++] = ip_addr_in4(&a->addr.addr);
}

/* The primary link as netd found it: the node link with the policy's
 * primary MAC (checked when the policy came), or NULL. */
static const struct netd_node_link *
snat_primary(const struct netd *nd)
{
	if (!nd->policy.vpc_set)
		return NULL;
	return policy_node_link_by_mac(&nd->policy, nd->policy.primary_mac);
}

/* The desired table's inputs: netd's own configuration, the policy's VPC
 * CIDRs, the primary link netd found, and the checked target. */
static void
snat_params_of(const struct netd *nd, uint32_t to, uint32_t ifindex,
    struct snat_params *p)
{
	memset(p, 0, sizeof(*p));
	p->enabled = nd->cfg.snat.enabled;
	p->random_fully = nd->cfg.snat.random_fully;
	p->to = to;
	p->primary_ifindex = ifindex;
	p->connmark = nd->cfg.routing.connmark;
	p->nvpc = nd->policy.ncidrs4;	/* an ip table: IPv4's */
	memcpy(p->vpc, nd->policy.cidrs, sizeof(p->vpc));
	p->nexclude = nd->cfg.snat.nexclude;
	memcpy(p->exclude, nd->cfg.snat.exclude, sizeof(p->exclude));
}

static void
snat_refuse(struct netd *nd, const struct msg *m, const char *what,
    const char *why, const char *detail)
{
	nd->snat.refused++;
	snprintf(nd->snat.message, sizeof(nd->snat.message), "refused: %.*s",
	    (int)sizeof(nd->snat.message) - 10, why);
	netd_refuse_id(nd, m->hdr.id, m->hdr.type, what, why, detail);
}

static void
snat_fail(struct netd *nd, const struct msg *m, const char *what, int rc,
    const char *err)
{
	log_warnx("%s: %s; the table stays as it was", what, err);
	snprintf(nd->snat.message, sizeof(nd->snat.message), "failed: %.*s",
	    (int)sizeof(nd->snat.message) - 9, err);
	netd_result(nd, m->hdr.id, ST_FAILED, -rc, "%s", err);
}

/*
 * Make table ip6 enid, the IPv6 source check of pods' veths
 * (snat_src6_desired), what netd's configuration says: read it back, and
 * write it whole only if it differs, as the SNAT table.  Run when the
 * policy is accepted and at each NETD_SNAT.  0 with *changed (1 if it
 * was written), or -1 (logged, and kept in src6.message).
 */
static int
netd_src6_sync(struct netd *nd, int *changed)
{
	static struct snat_table have, want;
	char err[MSG_ERR_LEN], diff[SNAT_WHY_LEN];
	int rc;

	*changed = 0;
	snat_src6_desired(nd->cfg.routing.pod_veth_prefix, &want);
	if ((rc = nft_read(&nd->nft, SNAT_FAMILY_IP6, &have, err,
	    sizeof(err))) < 0)
		goto fail;
	if (snat_table_equal(&have, &want, diff, sizeof(diff))) {
		snprintf(nd->src6.message, sizeof(nd->src6.message),
		    "table in place");
		return 0;
	}
	if (have.foreign)
		log_warnx("ipv6 source check: table ip6 %s holds what netd "
		    "does not write (%s); replacing it whole", SNAT_TABLE,
		    diff);
	else if (have.present)
		log_warnx("ipv6 source check: table ip6 %s differs (%s); "
		    "replacing it whole", SNAT_TABLE, diff);
	if ((rc = nft_write(&nd->nft, &want, err, sizeof(err))) < 0)
		goto fail;
	nd->src6.replaced++;
	*changed = 1;
	log_info("ipv6 source check: table ip6 %s written: pods' veths "
	    "(%s*) send IPv6 from their own addresses only", SNAT_TABLE,
	    nd->cfg.routing.pod_veth_prefix);
	snprintf(nd->src6.message, sizeof(nd->src6.message), "table written");
	return 0;
fail:
	log_warnx("ipv6 source check: %s; pods' veths are not checked until "
	    "the next sync", err);
	snprintf(nd->src6.message, sizeof(nd->src6.message), "failed: %.*s",
	    (int)sizeof(nd->src6.message) - 9, err);
	return -1;
}

/*
 * NETD_SNAT: make table ip enid what netd's configuration and the checked
 * target say; read it back and write it whole only if it differs.  The
 * checks run in the design's order (the policy came first: MF_POLICY);
 * a refusal changes nothing in the kernel.
 */
static void
netd_snat(struct netd *nd, const struct msg *m)
{
	static struct snat_table have, want;
	static struct primary_addrs pa;
	const struct netd_node_link *pl;
	struct snat_params params;
	struct msg_netd_snat req;
	char to[IP_ADDR_STR_LEN], what[64], detail[192], err[MSG_ERR_LEN];
	char diff[SNAT_WHY_LEN];
	const char *why;
	uint32_t changed = 0;
	int rc, rules = 0;

	memcpy(&req, m->u.bytes, sizeof(req));
	ip_addr_format(&req.to, to);
	snprintf(what, sizeof(what), "snat to %s", to);
	if (!node_current(nd, m->hdr.id, what))
		return;
	if ((pl = snat_primary(nd)) == NULL) {
		snat_refuse(nd, m, what, "the node's primary link is unknown",
		    NULL);
		return;
	}
	memset(&pa, 0, sizeof(pa));
	pa.ifindex = pl->ifindex;
	if ((rc = kernel_each_addr(&nd->kernel, NETD_AF_INET, 0,
	    primary_addr, &pa)) < 0) {
		snat_fail(nd, m, what, rc, "reading the primary link's "
		    "addresses failed");
		return;
	}
	if ((why = snat_check_request(&nd->cfg, nd->policy.cidrs,
	    nd->policy.ncidrs4, &req.to, pa.addrs, pa.n, detail,
	    sizeof(detail))) != NULL) {
		if (pa.overflow)
			snprintf(detail + strlen(detail), sizeof(detail) -
			    strlen(detail), "; only the first %d addresses of "
			    "%s were read", NETD_MAX_LINK_ADDRS, pl->name);
		snat_refuse(nd, m, what, why, detail);
		return;
	}
	snat_params_of(nd, ip_addr_in4(&req.to), pl->ifindex, &params);
	snat_desired(&params, &want);
	if ((rc = nft_read(&nd->nft, SNAT_FAMILY_IP, &have, err,
	    sizeof(err))) < 0) {
		snat_fail(nd, m, what, rc, err);
		return;
	}
	if (!snat_table_equal(&have, &want, diff, sizeof(diff))) {
		if (have.foreign)
			log_warnx("%s: table ip %s holds what netd does not "
			    "write (%s); replacing it whole", what, SNAT_TABLE,
			    diff);
		else if (have.present)
			log_warnx("%s: table ip %s differs (%s); replacing it "
			    "whole", what, SNAT_TABLE, diff);
		else
			log_info("%s: table ip %s absent; writing it", what,
			    SNAT_TABLE);
		if ((rc = nft_write(&nd->nft, &want, err, sizeof(err))) < 0) {
			snat_fail(nd, m, what, rc, err);
			return;
		}
		nd->snat.replaced++;
		changed = 1;
		log_info("%s: table ip %s written (%u chains, %u rules)",
		    what, SNAT_TABLE, want.nchains, want.nrules);
	}
	nd->snat.synced = true;
	nd->snat.to = ip_addr_in4(&req.to);
	/* The connection-mark rule the table's marks are for: repaired
	 * here too, so each reconcile puts back one that was removed. */
	if (netd_connmark_sync(nd, &rules, err, sizeof(err)) == -1) {
		log_warnx("%s: connection-mark rule: %s", what, err);
		snprintf(nd->snat.message, sizeof(nd->snat.message),
		    "failed: connection-mark rule: %.*s",
		    (int)sizeof(nd->snat.message) - 32, err);
		netd_result(nd, m->hdr.id, ST_FAILED, EIO, "connection-mark "
		    "rule: %s", err);
		return;
	}
	changed += (uint32_t)rules;
	snprintf(nd->snat.message, sizeof(nd->snat.message), "%s%s",
	    changed > (uint32_t)rules ? "table written" : "table in place",
	    rules > 0 ? ", connection-mark rule put back" : "");
	/* The IPv6 source check is repaired at each reconcile too; its
	 * failure is logged and reported (NETD_DUMP_SNAT), not the SNAT
	 * request's: the IPv4 table stands either way. */
	if (netd_src6_sync(nd, &rules) == 0)
		changed += (uint32_t)rules;
	netd_send_result(nd, m->hdr.id, changed);
}

struct connmark_count {
	const struct netd_policy *policy;
	uint32_t		 n;
};

/* Counts netd's connection-mark rule among the rules at prio_to. */
static void
count_connmark_rule(const struct nd_rule *r, void *arg)
{
	struct connmark_count *c = arg;

	if (plan_rule_is_connmark(c->policy, r))
		c->n++;
}

/* The IPv6 source check as the kernel holds it now, into st; a table
 * that cannot be read is reported as not in place, with why. */
static void
netd_src6_state(struct netd *nd, struct msg_netd_snat_state *st)
{
	static struct snat_table have, want;
	char err[MSG_ERR_LEN], diff[SNAT_WHY_LEN];

	st->src6_replaced = nd->src6.replaced;
	snat_src6_desired(nd->cfg.routing.pod_veth_prefix, &want);
	if (nft_read(&nd->nft, SNAT_FAMILY_IP6, &have, err, sizeof(err)) < 0) {
		log_warnx("snat state: %s", err);
		msg_strlcpy(st->src6_differs, err, sizeof(st->src6_differs));
		return;
	}
	st->src6_in_place = snat_table_equal(&have, &want, diff,
	    sizeof(diff));
	if (!st->src6_in_place)
		msg_strlcpy(st->src6_differs, diff, sizeof(st->src6_differs));
	if (!have.foreign)
		st->src6_dropped = snat_src6_dropped(&have);
}

/*
 * NETD_DUMP_SNAT: the table as the kernel holds it now.  In place means
 * the connection-mark rule too: the marks route nothing without it.
 */
static void
netd_dump_snat(struct netd *nd, const struct msg *m)
{
	static struct snat_table have, want;
	static struct msg_netd_snat_state st;
	const struct netd_node_link *pl = snat_primary(nd);
	struct connmark_count rule = { &nd->policy, 0 };
	struct snat_params params;
	char err[MSG_ERR_LEN], diff[SNAT_WHY_LEN];
	uint32_t i, n = 0, to = 0;
	int rc;

	if ((rc = nft_read(&nd->nft, SNAT_FAMILY_IP, &have, err,
	    sizeof(err))) < 0) {
		log_warnx("snat state: %s", err);
		netd_result(nd, m->hdr.id, ST_FAILED, -rc, "%s", err);
		return;
	}
	memset(&st, 0, sizeof(st));
	st.enabled = nd->cfg.snat.enabled;
	st.random_fully = nd->cfg.snat.random_fully;
	st.connmark = nd->cfg.routing.connmark;
	if (pl != NULL) {
		st.primary_ifindex = pl->ifindex;
		msg_strlcpy(st.primary_link, pl->name, sizeof(st.primary_link));
	}
	/* What differs is said, not only that something does: the
	 * first difference snat_table_equal finds (the table absent, what
	 * in it netd does not write, a rule or the target not netd's). */
	if (!nd->snat.synced)
		snprintf(diff, sizeof(diff), "no SNAT request yet");
	else if (pl == NULL)
		snprintf(diff, sizeof(diff), "the primary link is not known");
	else {
		snat_params_of(nd, nd->snat.to, pl->ifindex, &params);
		snat_desired(&params, &want);
		st.in_place = snat_table_equal(&have, &want, diff,
		    sizeof(diff));
	}
	if (!st.in_place)
		msg_strlcpy(st.differs, diff, sizeof(st.differs));
	if ((rc = netd_each_rule(nd, nd->policy.prio_to,
	    nd->policy.prio_to, count_connmark_rule, &rule)) < 0) {
		log_warnx("snat state: reading the rules at priority %u: %s",
		    nd->policy.prio_to, strerror(-rc));
		netd_result(nd, m->hdr.id, ST_FAILED, -rc, "reading the rules "
		    "at priority %u: %s", nd->policy.prio_to, strerror(-rc));
		return;
	}
	if (rule.n == 0) {
		snprintf(st.differs + strlen(st.differs), sizeof(st.differs) -
		    strlen(st.differs), "%sconnection-mark rule fwmark "
		    "0x%x/0x%x lookup main at priority %u missing",
		    st.in_place ? "" : "; ", nd->policy.connmark,
		    nd->policy.connmark, nd->policy.prio_to);
		st.in_place = 0;
	}
	/* The target as installed: the kernel's, not what was asked.  Of a
	 * table holding what netd does not write, nothing is reported: it
	 * was read only up to the first such thing, and is not netd's. */
	for (i = 0; !have.foreign && i < have.nrules && to == 0; i++)
		if (have.rules[i].nstmts > 0 && have.rules[i].stmts[
		    have.rules[i].nstmts - 1].kind == SNAT_SNAT_TO)
			to = have.rules[i].stmts[have.rules[i].nstmts -
			    1].value;
	st.to = ip_addr_from_in(to);
	for (i = 0; i < nd->policy.ncidrs4 && n < MSG_MAX_SNAT_CIDRS; i++)
		st.untranslated[n++] = nd->policy.cidrs[i];
	for (i = 0; i < nd->cfg.snat.nexclude && n < MSG_MAX_SNAT_CIDRS;
	    i++, n++)
		st.untranslated[n] = nd->cfg.snat.exclude[i];
	st.nuntranslated = n;
	st.replaced = nd->snat.replaced;
	st.refused = nd->snat.refused;
	if (have.foreign)
		snprintf(st.message, sizeof(st.message), "table ip %s holds "
		    "what netd does not write (%.*s); the next sync replaces "
		    "it", SNAT_TABLE, (int)sizeof(st.message) - 80, have.what);
	else {
		st.translated = snat_translated(&have);
		st.marked = snat_marked(&have);
		if (rule.n == 0)
			snprintf(st.message, sizeof(st.message),
			    "connection-mark rule fwmark 0x%x/0x%x lookup main "
			    "at priority %u missing: replies to connections "
			    "that came in on the primary link may leave by an "
			    "ENI; the next sync puts it back",
			    nd->policy.connmark, nd->policy.connmark,
			    nd->policy.prio_to);
		else
			msg_strlcpy(st.message, nd->snat.message[0] ?
			    nd->snat.message : "no SNAT request yet",
			    sizeof(st.message));
	}
	netd_src6_state(nd, &st);
	netd_send(nd, MSG_NETD_SNAT_STATE, m->hdr.id, &st, sizeof(st));
}

static void
netd_set_policy(struct netd *nd, const struct msg *m)
{
	struct msg_netd_policy req;
	char mac[MAC_STR_LEN], cidr[IP_PREFIX_STR_LEN];
	char cidrs[MSG_MAX_VPC_CIDRS * IP_PREFIX_STR_LEN];
	char err[MSG_ERR_LEN];
	const char *why;
	size_t off = 0;
	uint32_t i;
	int changed;

	/* Fixed at start: the table lets only one through (MF_ONCE). */
	memcpy(&req, m->u.bytes, sizeof(req));
	/* The broker's primary MAC came from the cloud through cloudd: it
	 * must be a link netd itself finds the default route on. */
	mac_format(req.primary_mac, mac);
	netd_read_events(nd);
	if (node_read(nd) < 0)
		fatalx("broker: NETD_POLICY with primary MAC %s cannot be "
		    "checked: the node's own links are unreadable; exiting",
		    mac);
	if ((why = policy_check_primary(&nd->policy, req.primary_mac)) !=
	    NULL) {
		char found[512];

		node_describe(&nd->policy.node, found, sizeof(found));
		log_security("broker: NETD_POLICY names primary MAC %s: %s; "
		    "netd found %s", mac, why, found);
		fatalx("broker: NETD_POLICY disagrees with the node's own "
		    "links; the peer is untrusted, exiting");
	}
	if ((why = policy_set_vpc(&nd->policy, &req)) != NULL)
		fatalx("broker: unusable NETD_POLICY (%s); exiting", why);
	cidrs[0] = '\0';
	for (i = 0; i < nd->policy.ncidrs && off < sizeof(cidrs); i++) {
		ip_prefix_format(&nd->policy.cidrs[i], cidr);
		off += (size_t)snprintf(cidrs + off, sizeof(cidrs) - off, "%s%s",
		    i ? "," : "", cidr);
	}
	mac_format(nd->policy.primary_mac, mac);
	log_info("policy: primary MAC %s, VPC %s, tables %u-%u, rule "
	    "priorities %u (to) and %u (from), at most %u pods", mac, cidrs,
	    nd->policy.table_lo, nd->policy.table_hi - 1, nd->policy.prio_to,
	    nd->policy.prio_from, nd->policy.max_pods);
	/* The connection-mark rule from the start: NodePort replies of pods
	 * on secondary ENIs need it whatever SNAT does.  A failure is
	 * repaired at the next NETD_SNAT; the policy stands. */
	if (netd_connmark_sync(nd, &changed, err, sizeof(err)) == -1)
		log_warnx("policy: connection-mark rule: %s; replies to "
		    "connections that came in on the primary link may leave "
		    "by an ENI until the next SNAT sync", err);
	/* The IPv6 source check from the start too (logged if it fails;
	 * repaired at the next NETD_SNAT). */
	(void)netd_src6_sync(nd, &changed);
	msg_chan_permit(&nd->peer.chan, MSG_PERMIT_POLICY);
	netd_result(nd, m->hdr.id, ST_OK, 0, "%s", "ok");
}

/*
 * A checked message from the broker.  msg_recv has already enforced the
 * table: the handshake first, NETD_POLICY once, and every other request
 * only after the policy was accepted.
 */
static void
netd_dispatch_broker(struct peer *p, const struct msg *m, void *arg)
{
	struct netd *nd = arg;

	if (peer_child_common(p, m))
		return;
	switch (m->hdr.type) {
	case MSG_NETD_POLICY:
		netd_set_policy(nd, m);
		break;
	case MSG_NETD_DECLARE_ENI:
		netd_declare(nd, m, true);
		break;
	case MSG_NETD_FORGET_ENI:
		netd_declare(nd, m, false);
		break;
	case MSG_NETD_FIND_LINK:
		netd_find_link(nd, m);
		break;
	case MSG_NETD_SETUP_ENI:
		netd_setup_eni(nd, m, true);
		break;
	case MSG_NETD_TEARDOWN_ENI:
		netd_setup_eni(nd, m, false);
		break;
	case MSG_NETD_ADD_POD:
		netd_pod(nd, m, true);
		break;
	case MSG_NETD_DEL_POD:
		netd_pod(nd, m, false);
		break;
	case MSG_NETD_DUMP_LINKS:
		netd_dump(nd, m, DUMP_LINKS);
		break;
	case MSG_NETD_DUMP_RULES:
		netd_dump(nd, m, DUMP_RULES);
		break;
	case MSG_NETD_ADD_POD_ROUTE:
		netd_pod_route(nd, m);
		break;
	case MSG_NETD_DUMP_ROUTES:
		netd_dump(nd, m, DUMP_ROUTES);
		break;
	case MSG_NETD_SNAT:
		netd_snat(nd, m);
		break;
	case MSG_NETD_DUMP_SNAT:
		netd_dump_snat(nd, m);
		break;
	default:
		fatalx("broker: %s not handled by this netd",
		    msg_type_name(m->hdr.type));
	}
}

static void
netd_broker_gone(struct peer *p, enum msg_recv_result r, const char *why,
    void *arg)
{
	(void)p;
	(void)arg;
	if (r == MSG_RECV_EOF) {
		log_info("broker closed the channel; exiting");
		exit(0);
	}
	if (r == MSG_RECV_BAD)
		fatalx("broker sent a malformed message (%s); the peer is "
		    "untrusted, exiting", why);
	fatalx("broker channel: %s", why);
}

/* Read another request only while a lookup slot is free for it. */
static bool
netd_can_take(void *arg)
{
	struct netd *nd = arg;

	return nd->nlookups < NETD_MAX_LOOKUPS;
}

static void
netd_signal(struct loop *l, int signo, void *arg)
{
	(void)arg;
	log_info("signal %d: exiting", signo);
	loop_stop(l, 0);
}

int
main(int argc, char *argv[])
{
	static struct netd nd;
	struct child_opts opts;
	static const cap_value_t keep[] = { CAP_NET_ADMIN };
	struct msg_chan chan;
	char err[512];

	child_parse_args(argc, argv, "enid-netd", &opts);
	log_init("enid-netd", opts.foreground, LOG_LVL_INFO);
	/* Started by a broker that runs without root, we are its user from
	 * exec on: no other process of that user may read us. */
	if (sandbox_undumpable() == -1)
		fatal("PR_SET_DUMPABLE");
	if (config_load(opts.config_path, &nd.cfg, err, sizeof(err)) == -1)
		fatalx("%s", err);
	config_wipe_secrets(&nd.cfg);	/* only enid-cloudd uses them */
	log_set_level(child_log_level(&nd.cfg, opts.verbose));
	policy_init(&nd.policy, &nd.cfg);
	child_chan_open(&chan, PEER_NETD);	/* checks MSG_CHILD_FD */

	/* Netlink before the drop: no socket is opened after it. */
	if (kernel_open(&nd.kernel, err, sizeof(err)) == -1)
		fatalx("%s", err);
	/* And the nftables one for table ip enid: the filter allows no
	 * NETLINK_NETFILTER socket after the drop. */
	if (nft_open(&nd.nft, err, sizeof(err)) == -1)
		fatalx("%s; enid-netd needs nf_tables for its table ip %s, "
		    "exiting", err, SNAT_TABLE);
	/* The rule view's index sorts rules by the policy's priorities and
	 * connection mark, fixed from here on. */
	kernel_rules_classify(&nd.kernel, netd_rule_class, &nd.policy);
	nd.events.link = netd_link_event;
	nd.events.node = netd_node_event;
	nd.events.arg = &nd;
	/* The node's own links, found before the broker can say anything
	 * and before the privilege drop; kept current from the events. */
	if (node_read(&nd) < 0)
		fatalx("node: cannot read the main table's default routes");
	if (nd.policy.node.nlinks == 0)
		log_warnx("node: no default route in the main table yet; a "
		    "policy is refused until one appears");
	if (loop_init(&nd.loop) == -1)
		fatal("event loop");
	if (loop_signal(&nd.loop, SIGTERM, netd_signal, &nd) == -1 ||
	    loop_signal(&nd.loop, SIGINT, netd_signal, &nd) == -1)
		fatal("signals");
	signal(SIGPIPE, SIG_IGN);

	if (sandbox_drop_privileges(nd.cfg.user, keep, 1, err, sizeof(err)))
		fatalx("privilege drop: %s", err);
	if (sandbox_load(SANDBOX_NETD, sandbox_debug_requested(), NULL, 0,
	    err, sizeof(err)) == -1)
		fatalx("seccomp: %s", err);
	testhook_sandboxed("enid-netd");
	log_debug("gave back %zu KiB of start-up pages",
	    proc_shed_start_pages() / 1024);

	if (peer_open(&nd.peer, &nd.loop, MSG_CHILD_FD, PEER_NETD, PEER_BROKER,
	    "enid", netd_dispatch_broker, netd_broker_gone, netd_can_take,
	    &nd) == -1 ||
	    loop_add_io(&nd.loop, &nd.event_io, kernel_event_fd(&nd.kernel),
	    EPOLLIN, netd_event_cb, &nd) == -1)
		fatal("watching the broker channel and link events");
	log_debug("started as uid %u; tables %u-%u", (unsigned)getuid(),
	    nd.policy.table_lo, nd.policy.table_hi - 1);
	return loop_run(&nd.loop);
}
