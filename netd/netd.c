/*
 * enid-netd: the only enid process with CAP_NET_ADMIN.  It owns the node's
 * ENI links, their route tables and the pods' policy rules, and trusts
 * nothing the broker sends: every request is checked whole against the
 * policy fixed at start (table range and rule priorities from the
 * root-owned configuration; VPC CIDRs and the primary MAC from the one
 * NETD_POLICY message) before the kernel is touched.
 *
 * This file holds the entry point, the broker dispatch, the link lookups
 * (link events plus a backoff re-check, under a deadline, on timers) and
 * the answer queue.  Decisions live in policy.c and plan.c; rtnetlink I/O
 * in kernel.c.
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
#include "plan.h"
#include "policy.h"
#include "proc.h"
#include "sandbox.h"
#include "testhook.h"

#define NETD_MAX_LOOKUPS	64	/* find-link requests waiting at once */
#define NETD_MAX_QUEUED		65536	/* answers waiting for the broker */
#define NETD_RECV_BUDGET	64	/* requests per wakeup */
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

/* An answer the broker's socket had no room for yet. */
struct queued {
	uint16_t		 type;
	uint32_t		 id;
	uint32_t		 len;
	union {
		struct msg_netd_link	link;
		struct msg_netd_rule	rule;
		struct msg_result	result;
		struct msg_end		end;
		struct msg_hello_ack	ack;
	}			 u;
};

struct netd {
	struct loop		 loop;
	struct msg_chan		 chan;
	struct loop_io		 chan_io;
	struct loop_io		 event_io;
	struct enid_config	 cfg;
	struct netd_policy	 policy;
	struct kernel		 kernel;
	bool			 hello_done;
	struct lookup		 lookups[NETD_MAX_LOOKUPS];

	struct queued		*queue;		/* ring */
	size_t			 qcap, qhead, qlen;
};

/* ---- answers ---- */

static void
queue_push(struct netd *nd, enum msg_type type, uint32_t id,
    const void *payload, size_t len)
{
	struct queued *q, *nq;
	size_t i, ncap;

	if (len > sizeof(q->u))
		fatalx("answer queue: %s payload too large", msg_type_name(type));
	if (nd->qlen == nd->qcap) {
		if (nd->qcap >= NETD_MAX_QUEUED)
			fatalx("broker: %zu answers unread; the broker is not "
			    "reading, exiting", nd->qlen);
		ncap = nd->qcap ? nd->qcap * 2 : 256;
		if ((nq = calloc(ncap, sizeof(*nq))) == NULL)
			fatal("answer queue");
		for (i = 0; i < nd->qlen; i++)
			nq[i] = nd->queue[(nd->qhead + i) % nd->qcap];
		free(nd->queue);
		nd->queue = nq;
		nd->qcap = ncap;
		nd->qhead = 0;
	}
	q = &nd->queue[(nd->qhead + nd->qlen) % nd->qcap];
	q->type = type;
	q->id = id;
	q->len = len;
	memcpy(&q->u, payload, len);
	/* Stop reading requests until the broker has read the answers. */
	if (nd->qlen++ == 0) {
		log_debug("broker channel full; queueing answers");
		if (loop_mod_io(&nd->loop, &nd->chan_io, EPOLLOUT) == -1)
			fatal("broker channel: watching for room");
	}
}

/* Send what is queued; 0 when the queue is empty. */
static int
queue_flush(struct netd *nd)
{
	struct queued *q;

	while (nd->qlen > 0) {
		q = &nd->queue[nd->qhead];
		if (msg_send(&nd->chan, q->type, q->id, &q->u, q->len) == -1) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return -1;
			fatal("broker channel: send %s", msg_type_name(q->type));
		}
		nd->qhead = (nd->qhead + 1) % nd->qcap;
		nd->qlen--;
	}
	if (loop_mod_io(&nd->loop, &nd->chan_io, EPOLLIN) == -1)
		fatal("broker channel");
	return 0;
}

static void
netd_send(struct netd *nd, enum msg_type type, uint32_t id,
    const void *payload, size_t len)
{
	if (nd->qlen == 0) {
		if (msg_send(&nd->chan, type, id, payload, len) == 0)
			return;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			fatal("broker channel: send %s", msg_type_name(type));
	}
	queue_push(nd, type, id, payload, len);
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

/* An out-of-policy request: a security event, answered, nothing done. */
static void
netd_refuse(struct netd *nd, const struct msg *m, const char *object,
    const char *why)
{
	log_security("broker: %s %s refused: %s", msg_type_name(m->hdr.type),
	    object, why);
	netd_result(nd, m->hdr.id, ST_REFUSED, 0, "%s", why);
}

/* ---- link lookups ---- */

static void
lookup_done(struct netd *nd, struct lookup *lk)
{
	loop_timer_cancel(&nd->loop, &lk->timer);
	lk->in_use = false;
}

static void
lookup_found(struct netd *nd, struct lookup *lk,
    const struct msg_netd_link *l, const char *how)
{
	char mac[MAC_STR_LEN];

	mac_format(lk->mac, mac);
	log_info("link %s: found as %s (ifindex %u) %s after %llu ms, "
	    "attempt %u/%u", mac, l->name, l->ifindex, how,
	    (unsigned long long)(now_ms() - lk->start), lk->attempt,
	    lk->attempts);
	netd_send(nd, MSG_NETD_LINK, lk->id, l, sizeof(*l));
	lookup_done(nd, lk);
}

/* One scheduled check: found, given up at the deadline, or re-armed. */
static void
lookup_check(struct netd *nd, struct lookup *lk)
{
	struct msg_netd_link l;
	char mac[MAC_STR_LEN];
	uint64_t now = now_ms(), next;
	int rc;

	lk->attempt++;
	mac_format(lk->mac, mac);
	rc = kernel_find_link(&nd->kernel, lk->mac, &l);
	if (rc == 1) {
		lookup_found(nd, lk, &l, "by lookup");
		return;
	}
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
	if (loop_timer_at(&nd->loop, &lk->timer, next) == -1)
		fatal("link %s: arming the lookup timer", mac);
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
	lk->nd = nd;
	lk->id = m->hdr.id;
	memcpy(lk->mac, req->mac, 6);
	lk->start = now_ms();
	lk->deadline_ms = req->deadline_ms;
	lk->attempts = plan_lookup_attempts(req->deadline_ms);
	loop_timer_init(&lk->timer, lookup_timer_cb, lk);
	lookup_check(nd, lk);
}

/* A link appeared or changed: answer whoever waits for its MAC. */
static void
netd_link_event(const struct msg_netd_link *l, void *arg)
{
	struct netd *nd = arg;
	size_t i;

	for (i = 0; i < NETD_MAX_LOOKUPS; i++)
		if (nd->lookups[i].in_use &&
		    memcmp(nd->lookups[i].mac, l->mac, 6) == 0)
			lookup_found(nd, &nd->lookups[i], l, "by link event");
}

static void
netd_event_cb(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct netd *nd = io->arg;
	struct msg_netd_link link;
	bool overrun;
	size_t i;
	int rc;

	(void)l;
	(void)events;
	if ((rc = kernel_read_events(&nd->kernel, netd_link_event, nd,
	    &overrun)) < 0)
		log_warnx("link events: %s; the re-check timers stay armed",
		    strerror(-rc));
	if (!overrun)
		return;
	log_warnx("link events: the kernel dropped some; re-checking every "
	    "waiting lookup");
	for (i = 0; i < NETD_MAX_LOOKUPS; i++)
		if (nd->lookups[i].in_use &&
		    kernel_find_link(&nd->kernel, nd->lookups[i].mac,
		    &link) == 1)
			lookup_found(nd, &nd->lookups[i], &link,
			    "after lost events");
}

/* ---- snapshots for the planner ---- */

struct snapshot {
	const struct netd_policy *policy;
	uint32_t		 pod;		/* rules: only this pod's */
	uint32_t		 table;		/* rules: only this table's */
	size_t			 nrules, nroutes;
	bool			 overflow;
	struct nd_rule		 rules[NETD_MAX_SNAPSHOT];
	struct nd_route		 routes[NETD_MAX_SNAPSHOT];
};

static void
snap_pod_rule(const struct nd_rule *r, void *arg)
{
	struct snapshot *s = arg;

	if (!plan_rule_is_pods(s->policy, r, s->pod))
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
	if (s->nrules == NETD_MAX_SNAPSHOT)
		s->overflow = true;
	else
		s->rules[s->nrules++] = *r;
}

static void
snap_route(const struct nd_route *r, void *arg)
{
	struct snapshot *s = arg;

	if (s->nroutes == NETD_MAX_SNAPSHOT)
		s->overflow = true;
	else
		s->routes[s->nroutes++] = *r;
}

/* Apply a plan and answer; what is a description for the logs. */
static void
netd_apply(struct netd *nd, uint32_t id, const struct nd_plan *plan,
    const char *what)
{
	char err[MSG_ERR_LEN];
	int rc;

	if ((rc = kernel_apply(&nd->kernel, plan, err, sizeof(err))) < 0) {
		log_warnx("%s: failed at %s", what, err);
		netd_result(nd, id, ST_FAILED, -rc, "%s", err);
		return;
	}
	log_debug("%s: done (%zu operations)", what, plan->nops);
	netd_result(nd, id, ST_OK, 0, "%s", "ok");
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

/* ---- requests ---- */

struct holder_ctx {
	const struct netd_policy *policy;
	uint32_t		 own_ifindex;	/* the request's link, or 0 */
	uint32_t		 table;		/* the request's table */
	const char		*why;
};

static void
addr_holder(const struct msg_netd_link *l, void *arg)
{
	struct holder_ctx *hc = arg;

	if (hc->why == NULL && l->ifindex != hc->own_ifindex)
		hc->why = policy_check_addr_holder(hc->policy, l->mac,
		    hc->table);
}

/*
 * The half of the policy that needs the kernel: an address inside the VPC
 * may still be the node's own (the primary interface's, or another ENI's),
 * and a pod rule or an ENI setup naming it would steer the node's traffic.
 * False if the request was refused or failed (and answered).
 */
static bool
netd_addr_free(struct netd *nd, const struct msg *m, const char *what,
    uint32_t addr, uint32_t table, uint32_t own_ifindex)
{
	struct holder_ctx hc = { &nd->policy, own_ifindex, table, NULL };
	int rc;

	if ((rc = kernel_each_addr_holder(&nd->kernel, addr, addr_holder,
	    &hc)) < 0) {
		netd_snapshot_failed(nd, m->hdr.id, what, rc, false);
		return false;
	}
	if (hc.why != NULL) {
		netd_refuse(nd, m, what, hc.why);
		return false;
	}
	return true;
}

static void
netd_declare(struct netd *nd, const struct msg *m, bool declare)
{
	struct msg_netd_eni req;
	char mac[MAC_STR_LEN], obj[64];
	const char *why;

	memcpy(&req, m->u.bytes, sizeof(req));
	mac_format(req.mac, mac);
	snprintf(obj, sizeof(obj), "%s table %u", mac, req.table);
	why = declare ? policy_check_declare(&nd->policy, &req) :
	    policy_check_forget(&nd->policy, &req);
	if (why != NULL) {
		netd_refuse(nd, m, obj, why);
		return;
	}
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
	struct msg_netd_setup_eni req;
	struct msg_netd_link link;
	char mac[MAC_STR_LEN], cidr[CIDR4_STR_LEN], gw[IP4_STR_LEN];
	char what[128];
	const char *why;
	int rc, found;

	memcpy(&req, m->u.bytes, sizeof(req));
	mac_format(req.mac, mac);
	cidr4_format(req.addr, req.prefix, cidr);
	ip4_format(req.gateway, gw);
	snprintf(what, sizeof(what), "eni %s %s table %u %s gw %s mtu %u",
	    mac, setup ? "setup" : "teardown", req.table, cidr, gw, req.mtu);
	why = setup ? policy_check_setup(&nd->policy, &req) :
	    policy_check_teardown(&nd->policy, &req);
	if (why != NULL) {
		netd_refuse(nd, m, what, why);
		return;
	}

	found = kernel_find_link(&nd->kernel, req.mac, &link);
	if (found < 0) {
		netd_snapshot_failed(nd, m->hdr.id, what, found, false);
		return;
	}
	if (found == 0 && setup) {
		log_warnx("%s: no link with that MAC; nothing changed", what);
		netd_result(nd, m->hdr.id, ST_NOT_FOUND, ENODEV, "link %s not "
		    "found", mac);
		return;
	}
	if (setup && !netd_addr_free(nd, m, what, req.addr, req.table,
	    link.ifindex))
		return;

	memset(&snap, 0, sizeof(snap));
	snap.policy = &nd->policy;
	snap.table = req.table;
	if ((rc = kernel_each_route(&nd->kernel, req.table, snap_route,
	    &snap)) < 0 || snap.overflow ||
	    (!setup && ((rc = kernel_each_rule(&nd->kernel,
	    nd->policy.prio_from, nd->policy.prio_from, snap_table_rule,
	    &snap)) < 0 || snap.overflow))) {
		netd_snapshot_failed(nd, m->hdr.id, what, rc, snap.overflow);
		return;
	}
	if (setup)
		rc = plan_eni_setup(&req, link.ifindex, snap.routes,
		    snap.nroutes, &plan);
	else
		rc = plan_eni_teardown(&nd->policy, &req,
		    found ? link.ifindex : 0, snap.routes, snap.nroutes,
		    snap.rules, snap.nrules, &plan);
	if (rc == -1) {
		netd_snapshot_failed(nd, m->hdr.id, what, 0, true);
		return;
	}
	netd_apply(nd, m->hdr.id, &plan, what);
}

static void
netd_pod(struct netd *nd, const struct msg *m, bool adding)
{
	static struct snapshot snap;
	static struct nd_plan plan;
	struct msg_netd_pod_rule req;
	char addr[IP4_STR_LEN], what[96];
	const char *why;
	int rc;

	memcpy(&req, m->u.bytes, sizeof(req));
	ip4_format(req.addr, addr);
	snprintf(what, sizeof(what), "pod %s %s rules (table %u)", addr,
	    adding ? "add" : "del", req.table);
	if ((why = policy_check_pod(&nd->policy, &req, adding)) != NULL) {
		netd_refuse(nd, m, what, why);
		return;
	}
	if (adding && !netd_addr_free(nd, m, what, req.addr, req.table, 0))
		return;
	memset(&snap, 0, sizeof(snap));
	snap.policy = &nd->policy;
	snap.pod = req.addr;
	if ((rc = kernel_each_rule(&nd->kernel, nd->policy.prio_to,
	    nd->policy.prio_from, snap_pod_rule, &snap)) < 0 || snap.overflow) {
		netd_snapshot_failed(nd, m->hdr.id, what, rc, snap.overflow);
		return;
	}
	rc = adding ?
	    plan_pod_add(&nd->policy, &req, snap.rules, snap.nrules, &plan) :
	    plan_pod_del(&nd->policy, &req, snap.rules, snap.nrules, &plan);
	if (rc == -1) {
		netd_snapshot_failed(nd, m->hdr.id, what, 0, true);
		return;
	}
	netd_apply(nd, m->hdr.id, &plan, what);
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

static void
dump_rule(const struct nd_rule *r, void *arg)
{
	struct dump_ctx *dc = arg;
	struct msg_netd_rule mr;

	memset(&mr, 0, sizeof(mr));
	mr.priority = r->priority;
	mr.table = r->table;
	mr.src = r->src;
	mr.src_len = r->src_len;
	mr.dst = r->dst;
	mr.dst_len = r->dst_len;
	netd_send(dc->nd, MSG_NETD_RULE, dc->id, &mr, sizeof(mr));
	dc->count++;
}

static void
netd_dump(struct netd *nd, const struct msg *m, bool links)
{
	struct dump_ctx dc = { nd, m->hdr.id, 0 };
	struct msg_end end;
	int rc;

	rc = links ? kernel_each_link(&nd->kernel, dump_link, &dc) :
	    kernel_each_rule(&nd->kernel, nd->policy.prio_to,
	    nd->policy.prio_from, dump_rule, &dc);
	if (rc < 0) {
		/* Entries sent so far stand; the broker sees no END. */
		log_warnx("dump of %s: %s", links ? "links" : "rules",
		    strerror(-rc));
		netd_result(nd, m->hdr.id, ST_FAILED, -rc, "dump: %s",
		    strerror(-rc));
		return;
	}
	memset(&end, 0, sizeof(end));
	end.count = dc.count;
	netd_send(nd, MSG_NETD_END, m->hdr.id, &end, sizeof(end));
}

static void
netd_set_policy(struct netd *nd, const struct msg *m)
{
	struct msg_netd_policy req;
	char mac[MAC_STR_LEN], cidr[CIDR4_STR_LEN], cidrs[256];
	const char *why;
	size_t off = 0;
	uint32_t i;

	/* Fixed at start: a second one is an attempt to widen it. */
	if (nd->policy.vpc_set)
		fatalx("broker: second NETD_POLICY; the policy is fixed at "
		    "start, the peer is untrusted, exiting");
	memcpy(&req, m->u.bytes, sizeof(req));
	if ((why = policy_set_vpc(&nd->policy, &req)) != NULL)
		fatalx("broker: unusable NETD_POLICY (%s); exiting", why);
	cidrs[0] = '\0';
	for (i = 0; i < nd->policy.ncidrs && off < sizeof(cidrs); i++) {
		cidr4_format(nd->policy.cidrs[i].addr,
		    nd->policy.cidrs[i].prefix, cidr);
		off += (size_t)snprintf(cidrs + off, sizeof(cidrs) - off, "%s%s",
		    i ? "," : "", cidr);
	}
	mac_format(nd->policy.primary_mac, mac);
	log_info("policy: primary MAC %s, VPC %s, tables %u-%u, rule "
	    "priorities %u (to) and %u (from)", mac, cidrs,
	    nd->policy.table_lo, nd->policy.table_hi - 1, nd->policy.prio_to,
	    nd->policy.prio_from);
	netd_result(nd, m->hdr.id, ST_OK, 0, "%s", "ok");
}

static void
netd_dispatch_broker(struct netd *nd, const struct msg *m)
{
	if (!nd->hello_done && m->hdr.type != MSG_HELLO)
		fatalx("broker: %s before HELLO", msg_type_name(m->hdr.type));
	switch (m->hdr.type) {
	case MSG_HELLO:
		if (nd->hello_done)
			fatalx("broker: second HELLO");
		child_handshake(&nd->chan, m);
		nd->hello_done = true;
		log_debug("broker: handshake done");
		return;
	case MSG_LOG_LEVEL: {
		struct msg_loglevel ll;

		memcpy(&ll, m->u.bytes, sizeof(ll));
		log_set_level(ll.level);
		return;
	}
	case MSG_NETD_POLICY:
		netd_set_policy(nd, m);
		return;
	}

	/* Everything else needs the policy to be judged against. */
	if (!nd->policy.vpc_set) {
		log_security("broker: %s before NETD_POLICY refused",
		    msg_type_name(m->hdr.type));
		netd_result(nd, m->hdr.id, ST_REFUSED, 0, "no policy yet");
		return;
	}
	switch (m->hdr.type) {
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
		netd_dump(nd, m, true);
		break;
	case MSG_NETD_DUMP_RULES:
		netd_dump(nd, m, false);
		break;
	default:
		fatalx("broker: %s not handled by this netd",
		    msg_type_name(m->hdr.type));
	}
}

static void
netd_chan_cb(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct netd *nd = io->arg;
	static struct msg m;
	const char *why;
	int budget;

	(void)l;
	(void)events;
	if (nd->qlen > 0 && queue_flush(nd) == -1)
		return;		/* still full: requests wait with answers */
	for (budget = 0; budget < NETD_RECV_BUDGET; budget++) {
		switch (msg_recv(&nd->chan, &m, &why)) {
		case MSG_RECV_OK:
			netd_dispatch_broker(nd, &m);
			break;
		case MSG_RECV_AGAIN:
			return;
		case MSG_RECV_EOF:
			log_info("broker closed the channel; exiting");
			exit(0);
		case MSG_RECV_ERROR:
			fatal("broker channel");
		case MSG_RECV_BAD:
			fatalx("broker sent a malformed message (%s); "
			    "the peer is untrusted, exiting", why);
		}
		if (nd->qlen > 0)
			return;	/* read more once the broker made room */
	}
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
	char err[512];

	child_parse_args(argc, argv, "enid-netd", &opts);
	log_init("enid-netd", opts.foreground, LOG_LVL_INFO);
	if (config_load(opts.config_path, &nd.cfg, err, sizeof(err)) == -1)
		fatalx("%s", err);
	log_set_level(child_log_level(&nd.cfg, opts.verbose));
	if (geteuid() != 0)
		fatalx("must be started as root by enid");
	policy_init(&nd.policy, &nd.cfg);
	child_chan_open(&nd.chan, PEER_NETD);

	/* Netlink before the drop: no socket is opened after it. */
	if (kernel_open(&nd.kernel, err, sizeof(err)) == -1)
		fatalx("%s", err);
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

	if (loop_add_io(&nd.loop, &nd.chan_io, nd.chan.fd, EPOLLIN,
	    netd_chan_cb, &nd) == -1 ||
	    loop_add_io(&nd.loop, &nd.event_io, kernel_event_fd(&nd.kernel),
	    EPOLLIN, netd_event_cb, &nd) == -1)
		fatal("watching the broker channel and link events");
	log_debug("started as uid %u; tables %u-%u", (unsigned)getuid(),
	    nd.policy.table_lo, nd.policy.table_hi - 1);
	return loop_run(&nd.loop);
}
