/*
 * The pool engine's ENIs: their lifecycle, driven by enid-cloudd's and
 * enid-netd's outcomes, and the planner that turns pool_plan()'s actions
 * into those steps.
 *
 * The set-up path, then the one way out (quarantined: a set-up that
 * failed, from any state before ready):
 *
 *   new -> creating -> attaching -> declaring -> linking -> setting-up
 *       -> ready -> draining -> tearing-down -> detaching -> deleting
 *       -> (freed);  waiting until the cloud shows it available, when
 *       enid knows of no attachment to detach
 *
 * Every transition is one of lifecycle.c's table, which doc/design.md
 * repeats and a unit test holds to it (and to this comment);
 * eni_set_state() performs it, running the new state's entry action
 * (eni_entry[]), and refuses any other.
 * The transitions, from each state:
 *
 *   new          -> creating attaching ready waiting
 *   creating     -> attaching waiting quarantined
 *   attaching    -> declaring waiting quarantined
 *   declaring    -> linking tearing-down quarantined
 *   linking      -> setting-up tearing-down quarantined
 *   setting-up   -> ready tearing-down quarantined
 *   ready        -> draining tearing-down
 *   draining     -> tearing-down
 *   tearing-down -> detaching waiting
 *   detaching    -> deleting
 *   waiting      -> detaching deleting
 *   deleting     -> detaching waiting
 *   quarantined  -> detaching deleting
 *
 * An ENI leaves new (enters the pool) as creating (enid creates it),
 * attaching (found attached and tagged for this node: adopted, then set
 * up), ready (the primary, never anything else) or waiting (found ours
 * and leaked: removed).  It leaves the pool (eni_free) deleted, found
 * gone, or given up on.
 *
 * An ENI's addresses enter the pool only once netd has found its link and
 * set up its table (fail fast); a link that never appears, or a set-up
 * that fails, quarantines the ENI, and it leaves by the one removal path:
 * netd tears down what it set up, then detach, wait until the cloud says
 * it is available, delete.  Nothing ever deletes an attached ENI.  Every
 * address the cloud names is checked against the ENI's subnet before it
 * is used.  What an ENI holds, its addresses and prefixes and their
 * states, is eniaddr.c's.
 */
#include <sys/random.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "addr.h"
#include "enid.h"
#include "log.h"

static void	eni_create_send(struct eni *e);
static void	prefixes_not_removing(struct eni *e);
static void	engine_plan_cb(struct loop *, struct loop_defer *);
static void	engine_timer_cb(struct loop *, struct loop_timer *);
static void	setup_turn(struct broker *);

/* ---- small helpers ---- */

const char *
eni_name(const struct eni *e)
{
	return e->id[0] ? e->id : "(new ENI)";
}

uint32_t
eni_table(struct broker *b, int device_index)
{
	return device_index > 0 ?
	    b->cfg.routing.table_base + (uint32_t)device_index : 0;
}

struct subnet *
subnet_by_id(struct broker *b, const char *id)
{
	uint32_t i;

	for (i = 0; i < b->engine.nsubnets; i++)
		if (strcmp(b->engine.subnets[i].id, id) == 0)
			return &b->engine.subnets[i];
	return NULL;
}

struct eni *
eni_find(struct broker *b, const char *id)
{
	uint32_t i;

	if (id[0] == '\0')
		return NULL;
	for (i = 0; i < POOL_MAX_ENIS; i++)
		if (b->engine.enis[i].used &&
		    strcmp(b->engine.enis[i].id, id) == 0)
			return &b->engine.enis[i];
	return NULL;
}

static void	eni_timer_cb(struct loop *, struct loop_timer *);

struct eni *
eni_new(struct broker *b)
{
	uint32_t i;

	for (i = 0; i < POOL_MAX_ENIS; i++) {
		struct eni *e = &b->engine.enis[i];

		if (e->used)
			continue;
		memset(e, 0, sizeof(*e));
		e->b = b;
		e->used = true;
		e->subnet = -1;
		e->device_index = -1;
		e->state_since = now_ms();
		loop_timer_init(&e->timer, eni_timer_cb, e);
		return e;
	}
	return NULL;
}

void
eni_free(struct eni *e)
{
	struct broker *b = e->b;
	uint32_t i;

	broker_request_cancel(b, &e->op);
	broker_request_cancel(b, &e->addr_op);
	broker_request_cancel(b, &e->dot_op);
	loop_timer_cancel(&b->loop, &e->timer);
	for (i = 0; i < e->naddrs; i++)
		if (e->addrs[i].pod != NULL)
			pod_lost(e->addrs[i].pod, "its ENI is gone");
	pods_eni_leaving(e, "its ENI is gone");
	if (eni_state_configuring(e->state))
		setup_turn(b);
	e->used = false;
	engine_kick(b);
}

/* What netd is asked to set up (or tear down) for e in subnet s (NULL:
 * not known, for a teardown). */
void
eni_setup_request(const struct eni *e, const struct subnet *s,
    struct msg_netd_setup_eni *req)
{
	memset(req, 0, sizeof(*req));
	memcpy(req->mac, e->mac, 6);
	req->table = e->table;
	/* An ENI of an IPv6-only subnet has no IPv4 address (primary_ip
	 * 0): none at all (family 0), nor a gateway; netd then sets up its
	 * IPv6 alone. */
	if (e->primary_ip != 0) {
		req->addr.addr = ip_addr_from_in(e->primary_ip);
		req->addr.len = s != NULL && s->cidr.addr.family == AF_INET ?
		    s->cidr.len : 32;
		/* None (0.0.0.0) while s is not described. */
		req->gateway = s != NULL && s->known &&
		    s->gateway.family == AF_INET ? s->gateway :
		    ip_addr_from_in(0);
	}
	req->mtu = e->link_mtu;
	/* Its own IPv6 address, once it has one (eni6.c): the source of
	 * what the node forwards out of it, with the table's IPv6 default
	 * route via the VPC router.  Reconciliation sends this again each
	 * run, so one learnt after set-up is set up then.  With ipv4 too
	 * while pods of an earlier dual hold IPv6 addresses: those on a
	 * secondary ENI reply by it. */
	if (broker_ipv6_held(e->b))
		req->addr6 = e->addr6;
}

/* ---- the lifecycle: one table, one function that moves ---- */

/* Entry actions, below with their steps: what entering a state does. */
static void	enter_creating(struct eni *, enum eni_state);
static void	enter_netd_step(struct eni *, enum eni_state);
static void	enter_tearing_down(struct eni *, enum eni_state);
static void	enter_detaching(struct eni *, enum eni_state);
static void	enter_deleting(struct eni *, enum eni_state);
static void	enter_quarantined(struct eni *, enum eni_state);

/*
 * What entering each state does, beside the transitions' table
 * (lifecycle.c): the request that state waits for, mostly.  Entered
 * again, a state repeats its step (a delete asked for once more).  An
 * action may move e on at once (quarantined, when there is nothing to
 * tear down).
 */
static void (*const eni_entry[ENI_STATE_COUNT])(struct eni *,
    enum eni_state) = {
	[ENI_CREATING] = enter_creating,
	[ENI_DECLARING] = enter_netd_step,
	[ENI_LINKING] = enter_netd_step,
	[ENI_SETTING_UP] = enter_netd_step,
	[ENI_TEARING_DOWN] = enter_tearing_down,
	[ENI_DETACHING] = enter_detaching,
	[ENI_DELETING] = enter_deleting,
	[ENI_QUARANTINED] = enter_quarantined,
};

/*
 * e moves to st (from new: enters the pool in st), as lifecycle.c's table
 * allows, and st's entry action runs.  Any other transition is a bug,
 * never acted on.
 */
void
eni_set_state(struct eni *e, enum eni_state st, const char *fmt, ...)
{
	enum eni_state from = e->state;
	char cause[MSG_ERR_LEN];
	bool ok;
	va_list ap;

	/* Formatted aside: the cause may quote the old one. */
	va_start(ap, fmt);
	vsnprintf(cause, sizeof(cause), fmt, ap);
	va_end(ap);
	ok = from == ENI_NEW ? eni_birth_ok(st, e->primary) :
	    eni_transition_ok(from, st);
	if (!ok) {
#ifdef ENID_DEBUG
		fatalx("%s: %s -> %s is not a transition of the ENI lifecycle "
		    "(%s)", eni_name(e), eni_state_name(from),
		    eni_state_name(st), cause);
#else
		log_errorx("%s: %s -> %s is not a transition of the ENI "
		    "lifecycle; refused (a bug: %s)", eni_name(e),
		    eni_state_name(from), eni_state_name(st), cause);
		return;
#endif
	}
	if (from == ENI_NEW)
		log_debug("%s: enters the pool %s: %s", eni_name(e),
		    eni_state_name(st), cause);
	else if (from == st)
		log_debug("%s: %s again: %s", eni_name(e), eni_state_name(st),
		    cause);
	else
		log_info("%s: %s -> %s: %s", eni_name(e), eni_state_name(from),
		    eni_state_name(st), cause);
	memcpy(e->cause, cause, sizeof(e->cause));
	e->state = st;
	if (strcmp(eni_state_shown(from), eni_state_shown(st)) != 0)
		e->state_since = now_ms();
	if (eni_entry[st] != NULL)
		eni_entry[st](e, from);
	/* Its request answered or cancelled, or the set-up a re-check
	 * waited for over: the next step's turn. */
	if (eni_state_configuring(from) && from != st)
		setup_turn(e->b);
	if (from != ENI_NEW && from != st)
		engine_kick(e->b);
}

/* The cloud's outcome as the code ADD waiters are told. */
static const char *
outcome_code(const struct msg_cloud_status *st)
{
	switch (st == NULL ? CO_TRANSIENT : st->outcome) {
	case CO_THROTTLED:
		return "throttled";
	case CO_SUBNET_FULL:
		return "subnet-full";
	case CO_LIMIT_EXCEEDED:
		return "eni-limit";
	case CO_TRANSIENT:
		return "cloud-unreachable";
	default:
		return "cloud-error";
	}
}

static void
status_text(const struct msg_cloud_status *st, char *buf, size_t len)
{
	if (st == NULL)
		snprintf(buf, len, "no answer from enid-cloudd in time");
	else
		snprintf(buf, len, "%s%s%s%s%s", cloud_outcome_name(st->outcome),
		    st->code[0] ? ": " : "", st->code,
		    st->message[0] ? ": " : "", st->message);
}

/* ---- growth failures ---- */

void
engine_fail_growth(struct broker *b, const char *code, const char *fmt, ...)
{
	struct engine *en = &b->engine;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(en->last_failure, sizeof(en->last_failure), fmt, ap);
	va_end(ap);
	msg_strlcpy(en->last_failure_code, code, sizeof(en->last_failure_code));
	en->last_failure_at = now_ms();
	/* A subnet out of addresses is inhibited on its own; anything else
	 * backs growth off, doubling up to a minute. */
	if (strcmp(code, "subnet-full") != 0) {
		en->grow_backoff_ms = en->grow_backoff_ms == 0 ?
		    ENGINE_GROW_BACKOFF_MIN_MS : en->grow_backoff_ms * 2;
		if (en->grow_backoff_ms > ENGINE_GROW_BACKOFF_MAX_MS)
			en->grow_backoff_ms = ENGINE_GROW_BACKOFF_MAX_MS;
		en->grow_backoff_until = now_ms() + en->grow_backoff_ms;
		log_warnx("pool: growth failed (%s); retrying in %u ms",
		    en->last_failure, en->grow_backoff_ms);
	} else
		log_warnx("pool: growth failed (%s)", en->last_failure);
	engine_kick(b);
}

static bool
failure_may_pass(const char *code)
{
	return strcmp(code, "throttled") == 0 ||
	    strcmp(code, "cloud-unreachable") == 0 ||
	    strcmp(code, "no-address") == 0 ||
	    strcmp(code, "ip-limit") == 0;	/* a reconcile is on its way */
}

static void
growth_succeeded(struct broker *b)
{
	b->engine.grow_backoff_ms = 0;
	b->engine.grow_backoff_until = 0;
	b->engine.growth_ok_at = now_ms();
}

/*
 * Every cloudd answer starts with its status: an outcome other than
 * transient means the cloud was reached and decided (ok, throttled, a
 * refusal); transient means it was not (unreachable, 5xx, a deadline).
 * For the status and the metrics: an outage shows as a growing time since
 * the cloud last answered.
 */
void
engine_cloud_heard(struct broker *b, const struct msg *m)
{
	struct engine *en = &b->engine;
	struct msg_cloud_status st;

	if (m->hdr.len < sizeof(st))
		return;
	memcpy(&st, m->u.bytes, sizeof(st));
	if (st.outcome != CO_TRANSIENT) {
		en->cloud_answered_at = now_ms();
		return;
	}
	en->cloud_failed_at = now_ms();
	status_text(&st, en->cloud_failure, sizeof(en->cloud_failure));
}

/*
 * How long cloudd may retry a growth call: less than add_timeout, so that
 * an ADD waiting for that growth hears why it failed (throttled, say)
 * before its own deadline, not a bare "timeout" (issue 26).  An ADD that
 * came after the call started waits longer than the call may last.
 */
uint32_t
engine_growth_deadline_ms(const struct broker *b)
{
	uint64_t add = (uint64_t)b->cfg.pool.add_timeout_s * 1000;
	uint64_t margin = add / 10 > ENGINE_ADD_MARGIN_MS ? add / 10 :
	    ENGINE_ADD_MARGIN_MS;
	uint64_t ms = add > 2 * margin ? add - margin : add / 2;

	return (uint32_t)(ms < ENGINE_CLOUD_DEADLINE_MS ? ms :
	    ENGINE_CLOUD_DEADLINE_MS);
}

static void
subnet_inhibit(struct broker *b, int idx, const char *why)
{
	struct subnet *s;

	if (idx < 0 || (uint32_t)idx >= b->engine.nsubnets)
		return;
	s = &b->engine.subnets[idx];
	s->inhibited_until = now_ms() +
	    (uint64_t)b->cfg.pool.subnet_backoff_s * 1000;
	s->available = 0;
	log_warnx("subnet %s: %s; not used for growth for %u s, or until the "
	    "cloud reports free addresses in it", s->id, why,
	    b->cfg.pool.subnet_backoff_s);
}

/* Subnet idx has no free aligned /28 (InsufficientCidrBlocks): growth
 * asks it for none until prefix_backoff_s is over, and plans again now,
 * with prefixes in another subnet or single addresses here. */
static void
subnet_prefix_inhibit(struct broker *b, int idx, const char *why)
{
	struct subnet *s;

	if (idx < 0 || (uint32_t)idx >= b->engine.nsubnets)
		return;
	s = &b->engine.subnets[idx];
	s->prefix_inhibited_until = now_ms() +
	    (uint64_t)b->cfg.pool.prefix_backoff_s * 1000;
	b->engine.stats.pfx_no_prefix++;
	log_warnx("subnet %s: no prefix to be had (%s); asking it for single "
	    "addresses, and other subnets for prefixes, for %u s", s->id, why,
	    b->cfg.pool.prefix_backoff_s);
	engine_kick(b);
}

/* ---- the removal path: teardown, detach, wait until available, delete */

static void remove_answer(struct broker *, void *, const struct msg *, bool);

static void
eni_retry_later(struct eni *e)
{
	e->poll_ms = e->poll_ms == 0 ? ENGINE_POLL_MIN_MS : e->poll_ms * 2;
	if (e->poll_ms > ENGINE_POLL_MAX_MS)
		e->poll_ms = ENGINE_POLL_MAX_MS;
	loop_timer_after(&e->b->loop, &e->timer, e->poll_ms);
}

static void
remove_give_up(struct eni *e)
{
	log_errorx("%s: still not removed after %u steps (%s); left to "
	    "reconciliation and the leak collector", eni_name(e),
	    e->remove_tries, e->removal);
	eni_free(e);
}

/*
 * One step of removal, from the cloud's word: an ENI the cloud shows
 * available is deleted; one attached is detached; one detaching, or
 * whose state is not known, is looked at again after a pause (still
 * detaching, or quarantined, or else waiting).  Never a delete of an ENI
 * not seen available.
 */
static void
remove_next(struct eni *e, enum eni_seen seen)
{
	if (++e->remove_tries > ENGINE_REMOVE_MAX_TRIES) {
		remove_give_up(e);
		return;
	}
	if (e->id[0] == '\0') {
		eni_free(e);		/* it never existed */
		return;
	}
	switch (seen) {
	case SEEN_AVAILABLE:
		eni_set_state(e, ENI_DELETING, "available; deleting (%s)",
		    e->removal);
		return;
	case SEEN_ATTACHED:
		eni_set_state(e, ENI_DETACHING, "detaching (%s)", e->removal);
		return;
	case SEEN_DETACHING:
	case SEEN_NOTHING:
		if (e->state != ENI_DETACHING && e->state != ENI_WAITING &&
		    e->state != ENI_QUARANTINED)
			eni_set_state(e, ENI_WAITING, "waiting until it is "
			    "available (%s)", e->removal);
		eni_retry_later(e);
		return;
	}
}

/* What enid knows without asking: attached, or not known. */
static enum eni_seen
remove_known(const struct eni *e)
{
	return e->attachment_id[0] != '\0' ? SEEN_ATTACHED : SEEN_NOTHING;
}

static void
remove_describe_answer(struct broker *b, void *arg, const struct msg *m,
    bool final)
{
	struct eni *e = arg;
	struct msg_cloud_eni ce;
	struct msg_cloud_done done;

	(void)final;
	if (m == NULL) {
		eni_retry_later(e);
		return;
	}
	if (m->hdr.type == MSG_CLOUD_ENI) {
		memcpy(&ce, m->u.bytes, sizeof(ce));
		if (strcmp(ce.eni_id, e->id) != 0)
			return;
		/* What the cloud says now decides the next step. */
		if (ce.status == ENI_ST_AVAILABLE && ce.instance_id[0] == '\0') {
			e->seen = SEEN_AVAILABLE;
			cloud_view_gone(b, e->id);	/* its slot is free */
		}
		else if (ce.status == ENI_ST_DETACHING ||
		    ce.attach_status == ENI_ST_DETACHING ||
		    ce.attachment_id[0] == '\0')
			e->seen = SEEN_DETACHING;
		else {
			msg_strlcpy(e->attachment_id, ce.attachment_id,
			    sizeof(e->attachment_id));
			e->seen = SEEN_ATTACHED;
		}
		return;
	}
	memcpy(&done, m->u.bytes, sizeof(done));
	if (done.st.outcome != CO_OK) {
		/* A partial list proves nothing: ask again later. */
		eni_retry_later(e);
		return;
	}
	if (e->seen == SEEN_NOTHING) {
		log_info("%s: gone from the cloud", eni_name(e));
		cloud_view_gone(b, e->id);
		b->engine.stats.enis_deleted++;
		eni_free(e);
		return;
	}
	remove_next(e, e->seen);
}

/* Ask the cloud where e stands: the ENIs tagged for its instance (this
 * node's, or a vanished one's for a leak), whatever their status. */
static void
remove_describe(struct eni *e)
{
	struct broker *b = e->b;
	struct msg_cloud_describe_enis req;

	memset(&req, 0, sizeof(req));
	req.deadline_ms = ENGINE_CLOUD_DEADLINE_MS;
	req.filter = ENIS_BY_TAGS;
	req.ntags = 1;
	msg_strlcpy(req.tags[0].key, TAG_INSTANCE, sizeof(req.tags[0].key));
	msg_strlcpy(req.tags[0].value, e->tag_instance[0] ? e->tag_instance :
	    b->instance.instance_id, sizeof(req.tags[0].value));
	e->seen = SEEN_NOTHING;
	broker_request(b, &e->op, &b->cloudd, MSG_CLOUD_DESCRIBE_ENIS, &req,
	    sizeof(req), req.deadline_ms, remove_describe_answer, e);
}

/* Detaching: the detach, with the attachment enid knows of. */
static void
enter_detaching(struct eni *e, enum eni_state from)
{
	struct broker *b = e->b;
	struct msg_cloud_detach req;

	(void)from;
	memset(&req, 0, sizeof(req));
	req.deadline_ms = ENGINE_CLOUD_DEADLINE_MS;
	msg_strlcpy(req.eni_id, e->id, sizeof(req.eni_id));
	msg_strlcpy(req.attachment_id, e->attachment_id,
	    sizeof(req.attachment_id));
	broker_request(b, &e->op, &b->cloudd, MSG_CLOUD_DETACH, &req,
	    sizeof(req), req.deadline_ms, remove_answer, e);
}

/* Deleting: the delete, of an ENI the cloud has just shown available. */
static void
enter_deleting(struct eni *e, enum eni_state from)
{
	struct broker *b = e->b;
	struct msg_cloud_delete req;

	(void)from;
	memset(&req, 0, sizeof(req));
	req.deadline_ms = ENGINE_CLOUD_DEADLINE_MS;
	msg_strlcpy(req.eni_id, e->id, sizeof(req.eni_id));
	broker_request(b, &e->op, &b->cloudd, MSG_CLOUD_DELETE, &req,
	    sizeof(req), req.deadline_ms, remove_answer, e);
}

static void
remove_answer(struct broker *b, void *arg, const struct msg *m, bool final)
{
	struct eni *e = arg;
	struct msg_cloud_done done;
	char text[MSG_ERR_LEN + 96];

	(void)final;
	if (m == NULL) {
		log_warnx("%s: %s: no answer in time; looking again",
		    eni_name(e), eni_state_name(e->state));
		eni_retry_later(e);
		return;
	}
	memcpy(&done, m->u.bytes, sizeof(done));
	status_text(&done.st, text, sizeof(text));
	if (e->state == ENI_DELETING) {
		if (done.st.outcome == CO_OK || done.st.outcome == CO_NOT_FOUND) {
			log_info("%s: deleted (%s)", eni_name(e), e->removal);
			cloud_view_gone(b, e->id);
			b->engine.stats.enis_deleted++;
			eni_free(e);
			return;
		}
		/* In use after all: never forced; look again. */
		log_warnx("%s: delete: %s; looking at its state again",
		    eni_name(e), text);
		eni_retry_later(e);
		return;
	}
	if (done.st.outcome == CO_OK || done.st.outcome == CO_NOT_FOUND)
		log_info("%s: detach requested; waiting until it is available",
		    eni_name(e));
	else
		log_warnx("%s: detach: %s; looking at its state again",
		    eni_name(e), text);
	e->poll_ms = 0;
	eni_retry_later(e);
}

static void
remove_forget_answer(struct broker *b, void *arg, const struct msg *m,
    bool final)
{
	struct eni *e = arg;

	(void)b;
	(void)final;
	(void)m;
	remove_next(e, remove_known(e));
}

static void
remove_teardown_answer(struct broker *b, void *arg, const struct msg *m,
    bool final)
{
	struct eni *e = arg;
	struct msg_netd_eni req;
	struct msg_result r;

	(void)final;
	if (m != NULL && m->hdr.type == MSG_NETD_RESULT) {
		memcpy(&r, m->u.bytes, sizeof(r));
		if (r.status != ST_OK)
			log_warnx("%s: netd teardown: %s: %s", eni_name(e),
			    msg_status_name(r.status), r.message);
	}
	memset(&req, 0, sizeof(req));
	memcpy(req.mac, e->mac, 6);
	req.table = e->table;
	broker_request(b, &e->op, &b->netd, MSG_NETD_FORGET_ENI, &req,
	    sizeof(req), ENGINE_NETD_DEADLINE_MS, remove_forget_answer, e);
}

/* netd tears down e's table and forgets its MAC; then the cloud's part. */
static void
remove_teardown(struct eni *e)
{
	struct broker *b = e->b;
	struct msg_netd_setup_eni req;

	eni_setup_request(e, e->subnet >= 0 ? &b->engine.subnets[e->subnet] :
	    NULL, &req);
	broker_request(b, &e->op, &b->netd, MSG_NETD_TEARDOWN_ENI, &req,
	    sizeof(req), ENGINE_NETD_DEADLINE_MS, remove_teardown_answer, e);
}

static void
enter_tearing_down(struct eni *e, enum eni_state from)
{
	(void)from;
	remove_teardown(e);
}

/* Did netd set e up, or begin to, while it was in st? */
static bool
netd_holds(const struct eni *e, enum eni_state st)
{
	return !mac_is_zero(e->mac) && e->table != 0 &&
	    (eni_state_configuring(st) || st == ENI_READY ||
	    eni_state_draining(st));
}

/* e leaves service: no pod, no address in the pool, nothing in flight. */
static void
eni_leave_service(struct eni *e, const char *cause)
{
	struct broker *b = e->b;
	uint32_t i;

	broker_request_cancel(b, &e->op);
	broker_request_cancel(b, &e->addr_op);
	loop_timer_cancel(&b->loop, &e->timer);
	msg_strlcpy(e->removal, cause, sizeof(e->removal));
	for (i = 0; i < e->naddrs; i++) {
		if (e->addrs[i].pod != NULL)
			pod_lost(e->addrs[i].pod, "its ENI is being removed");
		e->addrs[i].pod = NULL;
		addr_set(e, i, ADDR_PENDING);
	}
	pods_eni_leaving(e, "its ENI is being removed");
	prefixes_not_removing(e);
	e->assigning = 0;
	e->assigning_prefixes = false;
	e->recheck = false;
	e->remove_tries = 0;
	e->poll_ms = 0;
}

/*
 * Take e out of service and out of the cloud.  Never for the primary.
 * An ENI netd was told about is torn down and forgotten first; then what
 * is known of its attachment decides, until the cloud's word does.
 */
void
eni_remove(struct eni *e, const char *fmt, ...)
{
	char cause[MSG_ERR_LEN];
	bool netd;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cause, sizeof(cause), fmt, ap);
	va_end(ap);
	if (e->primary) {
		log_errorx("%s: the primary ENI is never removed (%s)",
		    eni_name(e), cause);
		return;
	}
	netd = netd_holds(e, e->state);
	eni_leave_service(e, cause);
	if (netd)
		eni_set_state(e, ENI_TEARING_DOWN, "%s", cause);
	else
		remove_next(e, remove_known(e));
}

/* Quarantined: counted, and removed as any other, staying quarantined
 * until the cloud is asked to detach or delete it. */
static void
enter_quarantined(struct eni *e, enum eni_state from)
{
	e->b->engine.stats.quarantines++;
	if (netd_holds(e, from))
		remove_teardown(e);
	else
		remove_next(e, remove_known(e));
}

static void
eni_quarantine(struct eni *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
eni_quarantine(struct eni *e, const char *fmt, ...)
{
	char cause[MSG_ERR_LEN], why[MSG_ERR_LEN - sizeof("quarantined: ")];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	/* Growth failed: whoever waits for an address hears it now. */
	engine_fail_growth(e->b, "no-address", "ENI %s quarantined: %s",
	    e->id[0] ? e->id : "(new)", why);
	snprintf(cause, sizeof(cause), "quarantined: %s", why);
	eni_leave_service(e, cause);
	eni_set_state(e, ENI_QUARANTINED, "%s; never used, will detach and "
	    "delete", why);
}

static void
eni_timer_cb(struct loop *l, struct loop_timer *t)
{
	struct eni *e = t->arg;

	(void)l;
	switch (e->state) {
	case ENI_CREATING:
		eni_create_send(e);	/* its outcome was unknown */
		break;
	case ENI_DETACHING:
	case ENI_WAITING:
	case ENI_DELETING:
	case ENI_QUARANTINED:
		remove_describe(e);
		break;
	default:
		break;
	}
}

/* ---- DeleteOnTermination ---- */

static void
dot_answer(struct broker *b, void *arg, const struct msg *m, bool final)
{
	struct eni *e = arg;
	struct msg_cloud_done done;
	char text[MSG_ERR_LEN + 96];

	(void)b;
	(void)final;
	if (m != NULL) {
		memcpy(&done, m->u.bytes, sizeof(done));
		if (done.st.outcome == CO_OK) {
			if (e->dot_pending)
				log_info("%s: DeleteOnTermination set",
				    eni_name(e));
			e->dot_pending = false;
			return;
		}
		status_text(&done.st, text, sizeof(text));
	} else
		status_text(NULL, text, sizeof(text));
	/* Never a reason to give the ENI up: it stays, and reconciliation
	 * tries again. */
	if (!e->dot_pending)
		log_warnx("%s: setting DeleteOnTermination: %s; the ENI stays "
		    "in use and reconciliation retries it", eni_name(e), text);
	e->dot_pending = true;
}

void
eni_set_dot(struct eni *e)
{
	struct broker *b = e->b;
	struct msg_cloud_set_dot req;

	if (e->dot_op.active || e->attachment_id[0] == '\0')
		return;
	memset(&req, 0, sizeof(req));
	req.deadline_ms = ENGINE_CLOUD_DEADLINE_MS;
	msg_strlcpy(req.eni_id, e->id, sizeof(req.eni_id));
	msg_strlcpy(req.attachment_id, e->attachment_id,
	    sizeof(req.attachment_id));
	req.value = 1;
	broker_request(b, &e->dot_op, &b->cloudd, MSG_CLOUD_SET_DOT, &req,
	    sizeof(req), req.deadline_ms, dot_answer, e);
}

/* ---- configuring: netd declare, find link, set up ---- */

/* The set-up step st waits for, as its failures name it. */
static const char *
setup_step_name(enum eni_state st)
{
	switch (st) {
	case ENI_DECLARING:
		return "declare";
	case ENI_LINKING:
		return "link lookup";
	default:
		return "set-up";
	}
}

static void
configure_answer(struct broker *b, void *arg, const struct msg *m, bool final)
{
	struct eni *e = arg;
	struct msg_result r;
	struct msg_netd_link link;
	char mac[MAC_STR_LEN];
	uint32_t i;

	(void)final;
	mac_format(e->mac, mac);
	if (m == NULL) {
		eni_quarantine(e, "enid-netd did not answer its %s in time",
		    setup_step_name(e->state));
		return;
	}
	if (m->hdr.type == MSG_NETD_LINK) {
		memcpy(&link, m->u.bytes, sizeof(link));
		if (memcmp(link.mac, e->mac, 6) != 0) {
			eni_quarantine(e, "enid-netd found a link with MAC "
			    "other than %s", mac);
			return;
		}
		e->link_mtu = link.mtu;
		log_info("%s: link %s is %s (mtu %u) after %llu ms",
		    eni_name(e), mac, link.name, link.mtu,
		    (unsigned long long)(now_ms() - e->state_since));
		eni_set_state(e, ENI_SETTING_UP, "link %s found; setting up "
		    "table %u", mac, e->table);
		return;
	}
	memcpy(&r, m->u.bytes, sizeof(r));
	if (r.status != ST_OK) {
		if (r.status == ST_NOT_FOUND && e->state == ENI_LINKING)
			eni_quarantine(e, "link %s never appeared within %u "
			    "s: %s", mac, b->cfg.pool.link_timeout_s,
			    r.message);
		else
			eni_quarantine(e, "enid-netd %s: %s: %s",
			    setup_step_name(e->state),
			    msg_status_name(r.status), r.message);
		return;
	}
	if (e->state == ENI_DECLARING) {
		eni_set_state(e, ENI_LINKING, "declared to enid-netd; waiting "
		    "for link %s", mac);
		return;
	}
	if (e->state == ENI_LINKING) {
		/* Found is a link, never a bare "ok": without one, no table
		 * was set up and the addresses would not route. */
		log_security("%s: enid-netd answered the lookup of link %s "
		    "with \"ok\" and no link", eni_name(e), mac);
		eni_quarantine(e, "enid-netd answered its link lookup without "
		    "a link");
		return;
	}
	/* Set up: the addresses enter the pool only now. */
	for (i = 0; i < e->naddrs; i++)
		if (e->addrs[i].state == ADDR_PENDING)
			addr_set(e, i, ADDR_FREE);
	growth_succeeded(b);
	eni_set_state(e, ENI_READY, "link found and table %u set up; %u "
	    "addresses in the pool", e->table, e->naddrs);
	pods_bind_restored(b);
}

/*
 * A declare and a set-up go to netd one at a time, of all ENIs (issue 34).
 * netd answers in order, and each of those steps reads the node's links,
 * addresses and routes whole: 10 ms and more on a node of 700 pods.  A
 * restart adopts every attached ENI at once; with all their steps sent
 * together, the one ENI with a free address was ready only after every
 * other's declare and link lookup, and an ADD's rules then queued behind
 * the rest.  So a step waits in its state, no request sent, until the one
 * in flight is answered, and the next is picked then:
 *
 *   - an ENI with an address no restored pod holds (an ADD may wait for
 *     it) first; one whose every address a restored pod holds, whose
 *     set-up only re-checks what the kernel has for those pods, only once
 *     no ENI of the first kind is being set up;
 *   - of those, one being set up before one being declared;
 *   - and none while an ADD waits that a ready ENI can serve: its rules
 *     go first (engine_plan_cb serves it, then turns again).
 *
 * A link lookup neither waits nor holds the others back: netd keeps it
 * aside while the link is awaited, up to link_timeout_s (a re-check waits
 * that long only behind an ENI with free addresses whose link is late).
 * While a declare or a set-up waits, pods' rules that no runtime waits
 * for stay in their queue (engine_setup_waiting, pod_netd_send).  An
 * ENI's addresses still enter the pool only once its own set-up is
 * answered.
 */
static bool
setup_step_paced(enum eni_state st)
{
	return st == ENI_DECLARING || st == ENI_SETTING_UP;
}

/* spare[k]: whether engine.enis[k] has an address that no restored pod
 * waits to bind. */
static void
setup_spare(struct broker *b, bool spare[POOL_MAX_ENIS])
{
	struct engine *en = &b->engine;
	uint32_t held[POOL_MAX_ENIS], k;
	const struct pod *p;

	memset(held, 0, sizeof(held));
	TAILQ_FOREACH(p, &en->pods, all) {
		if (!p->restored || p->eni != NULL || p->lost)
			continue;
		for (k = 0; k < POOL_MAX_ENIS; k++)
			if (en->enis[k].used &&
			    strcmp(en->enis[k].id, p->eni_id) == 0) {
				held[k]++;
				break;
			}
	}
	for (k = 0; k < POOL_MAX_ENIS; k++)
		spare[k] = en->enis[k].naddrs > held[k];
}

static void	setup_send(struct eni *e);

/* Deferred to the end of the loop's turn, so that every ENI a
 * reconciliation adopted at once is there to choose from. */
static void
setup_turn_cb(struct loop *l, struct loop_defer *d)
{
	struct broker *b = d->arg;
	struct engine *en = &b->engine;
	bool spare[POOL_MAX_ENIS], spare_coming = false, waiting = false;
	uint32_t k, rank, best_rank = 0;
	struct eni *e, *best = NULL;

	(void)l;
	for (k = 0; k < POOL_MAX_ENIS; k++) {
		e = &en->enis[k];
		if (!e->used || !setup_step_paced(e->state))
			continue;
		if (e->op.active)
			return;		/* its answer turns again */
		waiting = true;
	}
	if (!waiting) {
		pods_netd_run(b);	/* what was held back for set-ups */
		return;
	}
	if (en->phase == PHASE_RUNNING && en->nwaiters > 0 &&
	    pods_pick_eni(b) != NULL) {
		engine_kick(b);
		return;
	}
	setup_spare(b, spare);
	for (k = 0; k < POOL_MAX_ENIS; k++)
		if (en->enis[k].used && spare[k] &&
		    eni_state_configuring(en->enis[k].state))
			spare_coming = true;
	for (k = 0; k < POOL_MAX_ENIS; k++) {
		e = &en->enis[k];
		if (!e->used || !setup_step_paced(e->state) ||
		    (spare_coming && !spare[k]))
			continue;
		rank = e->state == ENI_SETTING_UP ? 1 : 0;
		if (best == NULL || rank > best_rank) {
			best = e;
			best_rank = rank;
		}
	}
	if (best != NULL)
		setup_send(best);
}

bool
engine_setup_waiting(struct broker *b)
{
	uint32_t k;

	for (k = 0; k < POOL_MAX_ENIS; k++)
		if (b->engine.enis[k].used &&
		    setup_step_paced(b->engine.enis[k].state))
			return true;
	return false;
}

/* Whether a paced step may go now is decided at the end of this turn. */
static void
setup_turn(struct broker *b)
{
	loop_defer(&b->loop, &b->engine.setup_turn);
}

/* Declaring, linking, setting-up: the netd request each waits for; a
 * declare and a set-up in turn (setup_turn_cb). */
static void
enter_netd_step(struct eni *e, enum eni_state from)
{
	(void)from;
	if (setup_step_paced(e->state))
		setup_turn(e->b);
	else
		setup_send(e);
}

static void
setup_send(struct eni *e)
{
	struct broker *b = e->b;

	if (e->state == ENI_DECLARING) {
		struct msg_netd_eni req;

		memset(&req, 0, sizeof(req));
		memcpy(req.mac, e->mac, 6);
		req.table = e->table;
		broker_request(b, &e->op, &b->netd, MSG_NETD_DECLARE_ENI, &req,
		    sizeof(req), ENGINE_NETD_DEADLINE_MS, configure_answer, e);
	} else if (e->state == ENI_LINKING) {
		struct msg_netd_find_link req;

		memset(&req, 0, sizeof(req));
		memcpy(req.mac, e->mac, 6);
		req.deadline_ms = b->cfg.pool.link_timeout_s * 1000;
		broker_request(b, &e->op, &b->netd, MSG_NETD_FIND_LINK, &req,
		    sizeof(req), req.deadline_ms, configure_answer, e);
	} else {
		struct msg_netd_setup_eni req;

		eni_setup_request(e, &b->engine.subnets[e->subnet], &req);
		broker_request(b, &e->op, &b->netd, MSG_NETD_SETUP_ENI, &req,
		    sizeof(req), ENGINE_NETD_DEADLINE_MS, configure_answer, e);
	}
}

/* Have netd set e up (declare, find its link, table and routes); its
 * addresses join the pool when that is done. */
void
eni_configure(struct eni *e)
{
	struct broker *b = e->b;

	if (e->subnet < 0 || !b->engine.subnets[e->subnet].known) {
		eni_quarantine(e, "its subnet %s is not known", e->subnet_id);
		return;
	}
	e->table = eni_table(b, e->device_index);
	if (e->table == 0) {
		eni_quarantine(e, "device index %d is not a secondary's",
		    e->device_index);
		return;
	}
	eni_set_state(e, ENI_DECLARING, "attached as device %d; setting up "
	    "table %u", e->device_index, e->table);
}

/* ---- creating and attaching ---- */

/*
 * The cloud's view of this instance's attachments, between two describes:
 * what enid itself attached, detached and deleted goes in at once, so
 * that neither the ENI count nor the free device indexes wait for the
 * next reconciliation to learn what enid did (issue 26: a quarantined
 * ENI's deletion left "no free device index" for a whole interval).
 */
void
cloud_view_attached(struct broker *b, const char *id, uint32_t dev)
{
	struct engine *en = &b->engine;
	uint32_t i;

	for (i = 0; i < en->ncloud_atts; i++)
		if (strcmp(en->cloud_atts[i].id, id) == 0) {
			en->cloud_atts[i].dev = dev;
			return;
		}
	en->cloud_attached++;
	if (en->ncloud_atts == POOL_MAX_ENIS + 1)
		return;		/* counted; past the most the pool can hold */
	msg_strlcpy(en->cloud_atts[en->ncloud_atts].id, id, MSG_ID_LEN);
	en->cloud_atts[en->ncloud_atts++].dev = dev;
}

void
cloud_view_gone(struct broker *b, const char *id)
{
	struct engine *en = &b->engine;
	uint32_t i;

	for (i = 0; i < en->ncloud_atts; i++)
		if (strcmp(en->cloud_atts[i].id, id) == 0) {
			en->cloud_atts[i] = en->cloud_atts[--en->ncloud_atts];
			if (en->cloud_attached > 0)
				en->cloud_attached--;
			engine_kick(b);
			return;
		}
}

/* The lowest device index free in the pool and in the cloud's view. */
static int
free_device_index(struct broker *b)
{
	bool taken[POOL_MAX_ENIS + 1];
	uint32_t i;

	memset(taken, 0, sizeof(taken));
	taken[0] = true;
	for (i = 0; i < POOL_MAX_ENIS; i++) {
		const struct eni *e = &b->engine.enis[i];

		if (e->used && e->device_index >= 0 &&
		    e->device_index <= POOL_MAX_ENIS)
			taken[e->device_index] = true;
	}
	for (i = 0; i < b->engine.ncloud_atts; i++)
		if (b->engine.cloud_atts[i].dev <= POOL_MAX_ENIS)
			taken[b->engine.cloud_atts[i].dev] = true;
	for (i = 1; i < b->engine.params.max_enis && i <= POOL_MAX_ENIS; i++)
		if (!taken[i])
			return (int)i;
	return -1;
}

static void
attach_answer(struct broker *b, void *arg, const struct msg *m, bool final)
{
	struct eni *e = arg;
	struct msg_cloud_attached at;
	char text[MSG_ERR_LEN + 96];

	(void)final;
	if (m == NULL) {
		engine_fail_growth(b, "cloud-unreachable", "attaching %s: no "
		    "answer in time", e->id);
		eni_remove(e, "attach timed out; its state is unknown");
		return;
	}
	memcpy(&at, m->u.bytes, sizeof(at));
	if (at.st.outcome != CO_OK) {
		status_text(&at.st, text, sizeof(text));
		if (at.st.outcome == CO_LIMIT_EXCEEDED) {
			/* Our count drifted from the cloud's: take the cloud's
			 * now, so this can't repeat. */
			engine_fail_growth(b, "eni-limit", "attaching %s: %s",
			    e->id, text);
			reconcile_now(b, "the cloud refused an attachment");
		} else
			engine_fail_growth(b, outcome_code(&at.st),
			    "attaching %s: %s", e->id, text);
		eni_remove(e, "attach failed: %s", text);
		return;
	}
	msg_strlcpy(e->attachment_id, at.attachment_id,
	    sizeof(e->attachment_id));
	cloud_view_attached(b, e->id, (uint32_t)e->device_index);
	eni_set_dot(e);
	eni_configure(e);
}

static void
eni_attach(struct eni *e)
{
	struct broker *b = e->b;
	struct msg_cloud_attach req;
	int dev = free_device_index(b);

	if (dev < 0) {
		engine_fail_growth(b, "eni-limit", "no free device index for "
		    "%s", e->id);
		eni_remove(e, "no device index free to attach it");
		return;
	}
	e->device_index = dev;
	if (e->nprefixes > 0)
		eni_set_state(e, ENI_ATTACHING, "created in %s with %u "
		    "prefixes (%u addresses); attaching as device %d",
		    e->subnet_id, e->nprefixes, e->naddrs, dev);
	else
		eni_set_state(e, ENI_ATTACHING, "created in %s with %u "
		    "addresses; attaching as device %d", e->subnet_id,
		    e->naddrs, dev);
	memset(&req, 0, sizeof(req));
	req.deadline_ms = engine_growth_deadline_ms(b);
	msg_strlcpy(req.eni_id, e->id, sizeof(req.eni_id));
	req.device_index = (uint32_t)dev;
	broker_request(b, &e->op, &b->cloudd, MSG_CLOUD_ATTACH, &req,
	    sizeof(req), req.deadline_ms, attach_answer, e);
}

/* A created ENI's answer, checked whole before anything of it is used. */
static const char *
created_eni_check(struct broker *b, const struct eni *e,
    const struct msg_cloud_eni *ce)
{
	uint32_t i;

	if (!ckpt_eni_id_ok(ce->eni_id))
		return "an ENI id that is not one";
	if (eni_find(b, ce->eni_id) != NULL)
		return "the id of an ENI already in the pool";
	if (strcmp(ce->subnet_id, e->subnet_id) != 0)
		return "another subnet than the one asked for";
	if (mac_is_zero(ce->mac) ||
	    memcmp(ce->mac, b->instance.primary_mac, 6) == 0)
		return "the node's own MAC, or none";
	for (i = 0; i < POOL_MAX_ENIS; i++)
		if (b->engine.enis[i].used && &b->engine.enis[i] != e &&
		    memcmp(b->engine.enis[i].mac, ce->mac, 6) == 0)
			return "the MAC of another ENI";
	if (ce->naddrs > (e->assigning_prefixes ? 0 : e->assigning))
		return "more addresses than were asked for";
	if (ce->nprefixes > (e->assigning_prefixes ? e->assigning : 0))
		return "more prefixes than were asked for";
	if (ce->instance_id[0] != '\0')
		return "an ENI already attached";
	if (ce->naddrs6 > 1 || ce->nprefixes6 > 0)
		return "more IPv6 addresses than were asked for";
	return NULL;
}

static void
create_answer(struct broker *b, void *arg, const struct msg *m, bool final)
{
	struct eni *e = arg;
	struct msg_cloud_eni ce;
	const struct subnet *s;
	uint32_t list[MSG_MAX_ENI_ADDRS];
	char text[MSG_ERR_LEN + 96], why[128];
	const char *bad;

	(void)final;
	if (m != NULL)
		memcpy(&ce, m->u.bytes, sizeof(ce));
	if (m == NULL || ce.st.outcome == CO_TRANSIENT) {
		/* The cloud may have made it, tagged for us and used by
		 * nobody: the same request with the same ClientToken gets
		 * that ENI, or makes it now.  Given up, it is the leak
		 * collector's. */
		status_text(m ? &ce.st : NULL, text, sizeof(text));
		engine_fail_growth(b, "cloud-unreachable", "creating an ENI in "
		    "%s: %s", e->subnet_id, text);
		if (e->poll_ms >= ENGINE_POLL_MAX_MS) {
			log_warnx("(new ENI): creating with token %s: outcome "
			    "still unknown; given up, an ENI it made is left "
			    "to the leak collector", e->client_token);
			eni_free(e);
			return;
		}
		eni_retry_later(e);
		log_info("(new ENI): creating with token %s: outcome unknown; "
		    "asking again with the same token in %u ms",
		    e->client_token, e->poll_ms);
		return;
	}
	if (ce.st.outcome == CO_NO_PREFIX && e->assigning_prefixes) {
		/* The subnet has no free aligned /28: growth plans again at
		 * once, with prefixes elsewhere or single addresses here.  A
		 * new ENI is a new request, with a new ClientToken. */
		status_text(&ce.st, text, sizeof(text));
		subnet_prefix_inhibit(b, e->subnet, text);
		eni_free(e);
		return;
	}
	if (ce.st.outcome != CO_OK) {
		status_text(&ce.st, text, sizeof(text));
		if (ce.st.outcome == CO_SUBNET_FULL)
			subnet_inhibit(b, e->subnet, "out of addresses");
		engine_fail_growth(b, ce.st.outcome == CO_LIMIT_EXCEEDED ?
		    "ip-limit" : outcome_code(&ce.st), "creating an ENI in %s: "
		    "%s", e->subnet_id, text);
		eni_free(e);
		return;
	}
	b->engine.stats.enis_created++;
	if ((bad = created_eni_check(b, e, &ce)) != NULL) {
		/* Not ours to use.  A new id the cloud may still hold goes by
		 * the removal path; one that names another ENI is left. */
		log_security("%s: CreateNetworkInterface answered with %s; "
		    "quarantined", ce.eni_id[0] ? ce.eni_id : "?", bad);
		if (ckpt_eni_id_ok(ce.eni_id) && eni_find(b, ce.eni_id) == NULL)
			msg_strlcpy(e->id, ce.eni_id, sizeof(e->id));
		eni_quarantine(e, "the cloud's answer to its creation named "
		    "%s", bad);
		return;
	}
	msg_strlcpy(e->id, ce.eni_id, sizeof(e->id));
	memcpy(e->mac, ce.mac, 6);
	e->primary_ip = ip_addr_in4(&ce.primary_ip);
	e->ours = true;
	s = &b->engine.subnets[e->subnet];
	/* An ENI of an IPv6-only subnet has no IPv4 address at all; any
	 * other has its primary one, judged as any address. */
	if (s->known && s->cidr.addr.family != AF_INET) {
		if (e->primary_ip != 0 || ce.naddrs > 0 || ce.nprefixes > 0) {
			log_security("%s: an IPv4 address in IPv6-only subnet "
			    "%s", e->id, s->id);
			eni_quarantine(e, "it has an IPv4 address in an "
			    "IPv6-only subnet");
			return;
		}
	} else if (!eni_addr_acceptable(b, e, e->primary_ip, why,
	    sizeof(why)) &&
	    strstr(why, "primary address of the ENI") == NULL) {
		log_security("%s: its primary address is %s", e->id, why);
		eni_quarantine(e, "its primary address is %s", why);
		return;
	}
	(void)s;
	ip_addrs_in4(ce.addrs, ce.naddrs, list);
	eni_take_addrs(e, list, ce.naddrs, ADDR_PENDING, "created");
	if (e->assigning_prefixes) {
		if (ce.nprefixes < e->assigning)
			log_warnx("%s: created with %u of the %u prefixes asked "
			    "for", e->id, ce.nprefixes, e->assigning);
		/* One refused, or left out by cloudd: what the cloud holds
		 * is learnt now, not at the next interval. */
		ip_addrs_in4(ce.prefixes, ce.nprefixes, list);
		if (eni_take_prefixes(e, list, ce.nprefixes,
		    ADDR_PENDING, "created") < ce.nprefixes ||
		    ce.nbad_prefixes > 0)
			reconcile_now(b, "a created ENI's prefixes were not "
			    "all taken");
	}
	e->assigning = 0;
	e->assigning_prefixes = false;
	eni6_learn(e, &ce, "created with");
	eni_attach(e);
}

/* A ClientToken: 32 hex digits of randomness, so a retried create is the
 * same create and no other. */
static void
client_token(char *buf, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char r[16];
	size_t i;

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		fatal("getrandom");
	for (i = 0; i < sizeof(r) && 2 * i + 2 < len; i++) {
		buf[2 * i] = hex[r[i] >> 4];
		buf[2 * i + 1] = hex[r[i] & 0xf];
	}
	buf[2 * i] = '\0';
}

/* Ask for e's creation: the same request each time for one ENI (again
 * when its outcome was unknown: eni_timer_cb). */
static void
eni_create_send(struct eni *e)
{
	struct broker *b = e->b;
	struct subnet *s = &b->engine.subnets[e->subnet];
	struct msg_cloud_create_eni req;
	uint32_t i, count = e->assigning;
	char created[32];

	memset(&req, 0, sizeof(req));
	req.deadline_ms = engine_growth_deadline_ms(b);
	msg_strlcpy(req.subnet_id, s->id, sizeof(req.subnet_id));
	if (s->nsgs > 0) {
		req.nsgs = s->nsgs;
		memcpy(req.sgs, s->sgs, sizeof(req.sgs));
	} else {
		req.nsgs = b->instance.nsgs;
		memcpy(req.sgs, b->instance.sgs, sizeof(req.sgs));
	}
	if (e->assigning_prefixes)
		req.nprefixes = count;
	else
		req.nsecondary = count;
	/* Its own IPv6 address comes with it, but EC2 takes no IPv6 count
	 * beside IPv4 prefixes: then it is assigned once the ENI is ready
	 * (eni6.c), as its /80 always is. */
	if (config_family_v6(b->cfg.ip_family) && !e->assigning_prefixes &&
	    s->cidr6.addr.family == AF_INET6)
		req.nipv6 = 1;
	msg_strlcpy(req.client_token, e->client_token,
	    sizeof(req.client_token));
	snprintf(req.description, sizeof(req.description),
	    "enid pod addresses for %s", b->instance.instance_id);
	snprintf(created, sizeof(created), "%lld", (long long)e->created_at);
	i = 0;
	msg_strlcpy(req.tags[i].key, TAG_CREATOR, sizeof(req.tags[i].key));
	msg_strlcpy(req.tags[i++].value, TAG_CREATOR_VALUE,
	    sizeof(req.tags[0].value));
	msg_strlcpy(req.tags[i].key, TAG_INSTANCE, sizeof(req.tags[i].key));
	msg_strlcpy(req.tags[i++].value, b->instance.instance_id,
	    sizeof(req.tags[0].value));
	msg_strlcpy(req.tags[i].key, TAG_CLUSTER, sizeof(req.tags[i].key));
	msg_strlcpy(req.tags[i++].value, b->cfg.cluster_name,
	    sizeof(req.tags[0].value));
	msg_strlcpy(req.tags[i].key, TAG_CREATED_AT, sizeof(req.tags[i].key));
	msg_strlcpy(req.tags[i++].value, created, sizeof(req.tags[0].value));
	req.ntags = i;
	broker_request(b, &e->op, &b->cloudd, MSG_CLOUD_CREATE_ENI, &req,
	    sizeof(req), req.deadline_ms, create_answer, e);
}

static void
enter_creating(struct eni *e, enum eni_state from)
{
	(void)from;
	eni_create_send(e);
}

static void
eni_create(struct broker *b, uint32_t subnet_idx, uint32_t count,
    bool prefixes)
{
	struct subnet *s = &b->engine.subnets[subnet_idx];
	struct eni *e;

	if ((e = eni_new(b)) == NULL)
		return;
	msg_strlcpy(e->subnet_id, s->id, sizeof(e->subnet_id));
	e->subnet = (int)subnet_idx;
	e->assigning = count;
	e->assigning_prefixes = prefixes;
	e->created_at = (int64_t)time(NULL);
	client_token(e->client_token, sizeof(e->client_token));
	log_info("(new ENI): creating in %s with %u %s (token %s)",
	    s->id, count, prefixes ? "prefixes" : "addresses",
	    e->client_token);
	eni_set_state(e, ENI_CREATING, "asked for in %s", s->id);
}

/* ---- addresses on a ready ENI ---- */

/*
 * An assign's outcome for e: st NULL if none came in time, else the
 * cloud's status and the n blocks it named (list: addresses, or the
 * prefixes' first addresses).  Shared by single addresses and prefixes.
 */
static void
assign_done(struct broker *b, struct eni *e, const struct msg_cloud_status *st,
    const uint32_t *list, uint32_t n, bool prefixes)
{
	const char *unit = prefixes ? "prefixes" : "addresses";
	char text[MSG_ERR_LEN + 96];
	uint32_t asked = e->assigning, taken;
	bool whole;

	e->assigning = 0;
	e->assigning_prefixes = false;
	if (st == NULL) {
		engine_fail_growth(b, "cloud-unreachable", "assigning %u %s to "
		    "%s: no answer in time", asked, unit, e->id);
		reconcile_now(b, "an assign's outcome is unknown");
		return;
	}
	if (prefixes && st->outcome == CO_NO_PREFIX) {
		/* No aligned /28 free there: not a failure of growth. */
		status_text(st, text, sizeof(text));
		subnet_prefix_inhibit(b, e->subnet, text);
		return;
	}
	if (st->outcome != CO_OK) {
		status_text(st, text, sizeof(text));
		if (st->outcome == CO_SUBNET_FULL)
			subnet_inhibit(b, e->subnet, "out of addresses");
		engine_fail_growth(b, st->outcome == CO_LIMIT_EXCEEDED ?
		    "ip-limit" : outcome_code(st), "assigning %u %s to %s: %s",
		    asked, unit, e->id, text);
		/* The cloud counts more on it than the pool knows of (ones
		 * it named that were never used, say); or prefixes were
		 * refused after the fact (an answer cloudd could not take),
		 * and some may be delegated all the same: learn them now,
		 * not at the next interval, and growth goes elsewhere. */
		if (st->outcome == CO_LIMIT_EXCEEDED || (prefixes &&
		    st->outcome != CO_THROTTLED &&
		    st->outcome != CO_SUBNET_FULL))
			reconcile_now(b, "the cloud may hold more on an ENI "
			    "than the pool does");
		return;
	}
	if (n != asked)
		log_security("%s: asked for %u %s, the cloud named %u; only "
		    "checked ones are used", e->id, asked, unit, n);
	whole = n == asked;
	if (n > asked)
		n = asked;
	if (prefixes)
		taken = eni_take_prefixes(e, list, n, e->state == ENI_READY ?
		    ADDR_FREE : ADDR_PENDING, "assigned");
	else
		taken = eni_take_addrs(e, list, n, e->state == ENI_READY ?
		    ADDR_FREE : ADDR_PENDING, "assigned");
	if (taken == 0 && asked > 0) {
		/* Asking again at once would get the same: back off, and
		 * learn from the cloud what it did assign. */
		engine_fail_growth(b, "no-address", "assigning %u %s to %s: the "
		    "cloud named none that can be used", asked, unit, e->id);
		e->recheck = true;
		reconcile_now(b, "an assign named nothing usable");
		return;
	}
	/* Some refused, named again, or not the number asked for: what
	 * the cloud did assign (and counts in the ENI's slots) is learnt
	 * now, not at the next interval, and nothing else is asked of the
	 * ENI meanwhile (a reconciliation leaves an ENI with an address
	 * change in flight alone). */
	if (taken < n || !whole) {
		e->recheck = true;
		reconcile_now(b, "an assign's answer was not all taken");
	}
	growth_succeeded(b);
	log_info("%s: %u %s assigned", e->id, taken, unit);
	engine_kick(b);
}

static void
assign_answer(struct broker *b, void *arg, const struct msg *m, bool final)
{
	struct msg_cloud_assigned as;
	uint32_t list[MSG_MAX_ENI_ADDRS];

	(void)final;
	if (m == NULL) {
		assign_done(b, arg, NULL, NULL, 0, false);
		return;
	}
	memcpy(&as, m->u.bytes, sizeof(as));
	ip_addrs_in4(as.addrs, as.naddrs, list);
	assign_done(b, arg, &as.st, list, as.naddrs, false);
}

static void
prefix_assign_answer(struct broker *b, void *arg, const struct msg *m,
    bool final)
{
	struct msg_cloud_prefixes_assigned as;
	uint32_t list[MSG_MAX_ENI_PREFIXES];

	(void)final;
	if (m == NULL) {
		assign_done(b, arg, NULL, NULL, 0, true);
		return;
	}
	memcpy(&as, m->u.bytes, sizeof(as));
	ip_addrs_in4(as.prefixes, as.nprefixes, list);
	assign_done(b, arg, &as.st, list, as.nprefixes, true);
}

static void
eni_assign_prefixes(struct eni *e, uint32_t count)
{
	struct broker *b = e->b;
	struct msg_cloud_prefixes req;

	memset(&req, 0, sizeof(req));
	req.deadline_ms = engine_growth_deadline_ms(b);
	msg_strlcpy(req.eni_id, e->id, sizeof(req.eni_id));
	req.family = AF_INET;
	req.count = count;
	e->assigning = count;
	e->assigning_prefixes = true;
	log_info("%s: assigning %u prefixes", e->id, count);
	broker_request(b, &e->addr_op, &b->cloudd, MSG_CLOUD_ASSIGN_PREFIXES,
	    &req, sizeof(req), req.deadline_ms, prefix_assign_answer, e);
}

static void
eni_assign(struct eni *e, uint32_t count)
{
	struct broker *b = e->b;
	struct msg_cloud_ips req;

	memset(&req, 0, sizeof(req));
	req.deadline_ms = engine_growth_deadline_ms(b);
	msg_strlcpy(req.eni_id, e->id, sizeof(req.eni_id));
	req.family = AF_INET;
	req.count = count;
	e->assigning = count;
	log_info("%s: assigning %u addresses", e->id, count);
	broker_request(b, &e->addr_op, &b->cloudd, MSG_CLOUD_ASSIGN_IPS, &req,
	    sizeof(req), req.deadline_ms, assign_answer, e);
}

static void
prefixes_not_removing(struct eni *e)
{
	uint32_t k;

	for (k = 0; k < e->nprefixes; k++)
		e->prefixes[k].removing = false;
}

/* e's addresses being given back go to no pod for ms, and then only once
 * a reconciliation has seen the cloud still has them (engine_cool). */
static void
unassign_rest(struct eni *e, uint64_t ms)
{
	uint64_t until = now_ms() + ms;
	uint32_t i;

	for (i = 0; i < e->naddrs; i++)
		if (e->addrs[i].state == ADDR_REMOVING) {
			addr_set(e, i, ADDR_UNCONFIRMED);
			e->addrs[i].cool_until = until;
		}
	/* A prefix stays the ENI's until a reconciliation finds it gone. */
	prefixes_not_removing(e);
	store_mark(e->b->store);
}

static void
unassign_answer(struct broker *b, void *arg, const struct msg *m, bool final)
{
	struct eni *e = arg;
	struct msg_cloud_done done;
	char text[MSG_ERR_LEN + 96];
	uint32_t i, n = 0;

	(void)final;
	if (m != NULL)
		memcpy(&done, m->u.bytes, sizeof(done));
	if (m == NULL || done.st.outcome == CO_TRANSIENT) {
		/* It may have been done, or may be yet: an address handed
		 * out now might be taken from under its pod.  They cool for
		 * the hold, and reconciliation drops those the cloud no
		 * longer has. */
		status_text(m ? &done.st : NULL, text, sizeof(text));
		log_warnx("%s: unassigning addresses: %s; the outcome is "
		    "unknown: they go to no pod for %u s, and the cloud is "
		    "asked", e->id, text, ENGINE_UNASSIGN_HOLD_MS / 1000);
		unassign_rest(e, ENGINE_UNASSIGN_HOLD_MS);
		reconcile_now(b, "an unassign's outcome is unknown");
		engine_kick(b);
		return;
	}
	if (done.st.outcome == CO_THROTTLED) {
		status_text(&done.st, text, sizeof(text));
		log_warnx("%s: unassigning addresses: %s; they stay in the pool",
		    e->id, text);
		for (i = 0; i < e->naddrs; i++)
			if (e->addrs[i].state == ADDR_REMOVING)
				addr_set(e, i, ADDR_FREE);
		prefixes_not_removing(e);
		store_mark(b->store);
		engine_kick(b);
		return;
	}
	if (done.st.outcome != CO_OK) {
		/* Refused, maybe as not assigned: an earlier unassign may
		 * have taken them.  They rest, and are used again once the
		 * cloud is seen to have them; given back as free, the pool
		 * would ask again at once, and again be refused.  And the
		 * ENI gives back none for a while, longer after each refusal
		 * in a row: a cloud that refuses for good is not asked every
		 * few seconds. */
		uint64_t keep;

		status_text(&done.st, text, sizeof(text));
		e->unassign_refused++;
		keep = pool_refused_backoff_ms(e->unassign_refused,
		    ENGINE_UNASSIGN_REFUSED_MS, ENGINE_UNASSIGN_KEEP_MAX_MS);
		e->keep_until = now_ms() + keep;
		log_warnx("%s: unassigning addresses: %s; they go to no pod "
		    "until the cloud is seen to have them, in %d s at the "
		    "soonest, and the ENI gives back no address for %llu s "
		    "(refusal %u in a row)", e->id, text,
		    ENGINE_UNASSIGN_REFUSED_MS / 1000,
		    (unsigned long long)(keep / 1000), e->unassign_refused);
		unassign_rest(e, ENGINE_UNASSIGN_REFUSED_MS);
		engine_kick(b);
		return;
	}
	e->unassign_refused = 0;
	e->keep_until = 0;
	for (i = e->nprefixes; i-- > 0;)
		if (e->prefixes[i].removing) {
			char ip[IP4_STR_LEN];

			ip4_format(e->prefixes[i].base, ip);
			log_info("%s: prefix %s/%d given back", e->id, ip,
			    MSG_PREFIX_LEN);
			eni_drop_prefix(e, i, "its prefix was given back");
		}
	for (i = e->naddrs; i-- > 0;)
		if (e->addrs[i].state == ADDR_REMOVING) {
			eni_drop_addr(e, i);
			n++;
		}
	if (n > 0)
		log_info("%s: %u surplus addresses given back", e->id, n);
	engine_kick(b);
}

/* e's addresses being given back are held from now; the unassign waits
 * for the save that keeps them so (eni_unassigns_saved). */
static void
eni_unassign_hold(struct eni *e, uint64_t now)
{
	struct broker *b = e->b;
	uint32_t i;

	for (i = 0; i < e->naddrs; i++)
		if (e->addrs[i].state == ADDR_REMOVING)
			e->addrs[i].cool_until = now + ENGINE_UNASSIGN_HOLD_MS;
	e->unassign_by = store_next_save(b->store);
	store_mark(b->store);
}

/*
 * Does e's unassign wait for its save?  Its addresses being given back
 * (removing) are held until the save numbered unassign_by is on disk, and
 * no request is on its way yet: the unassign's answer, or the ENI's
 * leaving service, takes every one of them out of removing, and no
 * assign is asked for while they are there (the pool counts e busy).
 */
static bool
eni_unassign_waiting(const struct eni *e)
{
	uint32_t i;

	if (e->addr_op.active)
		return false;
	for (i = 0; i < e->naddrs; i++)
		if (e->addrs[i].state == ADDR_REMOVING)
			return true;
	for (i = 0; i < e->nprefixes; i++)
		if (e->prefixes[i].removing)
			return true;
	return false;
}

/* Is an address change of e's own on its way (or about to be)? */
bool
eni_addrs_changing(const struct eni *e)
{
	return e->addr_op.active || e->assigning > 0 ||
	    eni_unassign_waiting(e);
}

static void
eni_unassign_send(struct eni *e)
{
	struct broker *b = e->b;
	struct msg_cloud_ips req;
	uint64_t now = now_ms();
	uint32_t i;

	/* The hold on disk runs from when the addresses were taken out of
	 * use: if the saves took long (they fail and are retried), it may
	 * not cover the request any more, and is written again first. */
	for (i = 0; i < e->naddrs; i++)
		if (e->addrs[i].state == ADDR_REMOVING &&
		    e->addrs[i].cool_until < now + ENGINE_UNASSIGN_HOLD_MS -
		    ENGINE_UNASSIGN_SLACK_MS)
			break;
	if (i < e->naddrs) {
		eni_unassign_hold(e, now);
		return;
	}
	for (i = 0; i < e->nprefixes; i++)
		if (e->prefixes[i].removing)
			break;
	if (i < e->nprefixes) {
		struct msg_cloud_prefixes preq;

		memset(&preq, 0, sizeof(preq));
		preq.deadline_ms = ENGINE_CLOUD_DEADLINE_MS;
		msg_strlcpy(preq.eni_id, e->id, sizeof(preq.eni_id));
		preq.family = AF_INET;
		for (i = 0; i < e->nprefixes; i++)
			if (e->prefixes[i].removing)
				preq.prefixes[preq.nprefixes++] =
				    ip_addr_from_in(e->prefixes[i].base);
		log_info("%s: giving back %u surplus prefixes", e->id,
		    preq.nprefixes);
		broker_request(b, &e->addr_op, &b->cloudd,
		    MSG_CLOUD_UNASSIGN_PREFIXES, &preq, sizeof(preq),
		    preq.deadline_ms, unassign_answer, e);
		return;
	}
	memset(&req, 0, sizeof(req));
	req.deadline_ms = ENGINE_CLOUD_DEADLINE_MS;
	msg_strlcpy(req.eni_id, e->id, sizeof(req.eni_id));
	req.family = AF_INET;
	for (i = 0; i < e->naddrs && req.naddrs < MSG_MAX_ENI_ADDRS; i++)
		if (e->addrs[i].state == ADDR_REMOVING)
			req.addrs[req.naddrs++] =
			    ip_addr_from_in(e->addrs[i].ip);
	if (req.naddrs == 0)
		return;
	log_info("%s: giving back %u surplus addresses", e->id, req.naddrs);
	broker_request(b, &e->addr_op, &b->cloudd, MSG_CLOUD_UNASSIGN_IPS,
	    &req, sizeof(req), req.deadline_ms, unassign_answer, e);
}

/*
 * Give back count of e's free addresses.  The cloud may apply the request
 * well after it is sent (EC2 is eventually consistent, and enid may be
 * killed with it in flight); a restart's first look at the cloud may
 * still find the addresses, and a pod given one would lose it when the
 * unassign lands.  So they are taken out of use first, and the request
 * waits for the save that keeps them as cooling until the hold is over
 * (engine_record); eni_unassigns_saved sends it.
 */
static void
eni_unassign(struct eni *e, uint32_t count)
{
	uint32_t i, n = 0;

	if (eni_addrs_changing(e))
		return;		/* one change at a time: the plan is stale */
	for (i = 0; i < e->naddrs && n < count && n < MSG_MAX_ENI_ADDRS; i++)
		if (e->addrs[i].state == ADDR_FREE && e->addrs[i].block == 0) {
			addr_set(e, i, ADDR_REMOVING);
			n++;
		}
	if (n > 0)
		eni_unassign_hold(e, now_ms());
}

/*
 * Give back e's prefix k, by the same path: only if none of its addresses
 * is assigned, cooling, being given back or on its way in -- checked here
 * again, whatever the plan said.  Prefixes join one request; singles and
 * prefixes never do.
 */
static void
eni_unassign_prefix(struct eni *e, uint32_t k)
{
	struct eni_prefix *px = &e->prefixes[k];
	char ip[IP4_STR_LEN];
	uint32_t i;

	ip4_format(px->base, ip);
	if (e->addr_op.active || e->assigning > 0 || px->removing)
		return;
	for (i = 0; i < e->naddrs; i++)
		if (e->addrs[i].state == ADDR_REMOVING &&
		    e->addrs[i].block == 0)
			return;
	for (i = 0; i < e->naddrs; i++)
		if (e->addrs[i].block == px->base &&
		    e->addrs[i].state != ADDR_FREE) {
			log_debug("%s: prefix %s/%d: not given back, an address "
			    "of it is %s", e->id, ip, MSG_PREFIX_LEN,
			    addr_state_name(e->addrs[i].state));
			return;
		}
	for (i = 0; i < e->naddrs; i++)
		if (e->addrs[i].block == px->base)
			addr_set(e, i, ADDR_REMOVING);
	px->removing = true;
	log_info("%s: prefix %s/%d is wholly free and surplus; giving it back",
	    e->id, ip, MSG_PREFIX_LEN);
	eni_unassign_hold(e, now_ms());
}

/* The unassigns whose addresses are on disk as kept out of use go. */
void
eni_unassigns_saved(struct broker *b)
{
	struct engine *en = &b->engine;
	uint32_t i;

	for (i = 0; i < POOL_MAX_ENIS; i++) {
		struct eni *e = &en->enis[i];

		if (!e->used || !eni_unassign_waiting(e) ||
		    !store_saved_by(b->store, e->unassign_by))
			continue;
		if (e->state == ENI_READY || e->state == ENI_DRAINING)
			eni_unassign_send(e);
		engine_kick(b);
	}
}

/* ---- the planner ---- */

void
engine_kick(struct broker *b)
{
	loop_defer(&b->loop, &b->engine.kick);
}

static bool
subnet_usable(struct broker *b, int idx)
{
	return idx >= 0 && (uint32_t)idx < b->engine.nsubnets &&
	    b->engine.subnets[idx].configured;
}

/* The pods bound to e, or whose address is on it and who wait for it to
 * come back (restored ones). */
static uint32_t
eni_pods(struct broker *b, const struct eni *e)
{
	const struct pod *p;
	uint32_t n = 0;

	TAILQ_FOREACH(p, &b->engine.pods, all)
		if (p->eni == e || (p->eni == NULL && !p->lost &&
		    strcmp(p->eni_id, e->id) == 0))
			n++;
	return n;
}

/* The policy's view of the pool; map[i] is the ENI of view entry i. */
static void
engine_view(struct broker *b, struct pool_facts *f, struct eni **map)
{
	struct engine *en = &b->engine;
	uint64_t now = now_ms();
	uint32_t i, j;

	memset(f, 0, sizeof(*f));
	f->attached_enis = en->cloud_attached;
	f->waiters = en->nwaiters;
	f->growth_backoff_until = en->grow_backoff_until;
	f->surplus_since = en->surplus_since;
	f->nsubnets = en->nsubnets;
	for (i = 0; i < en->nsubnets; i++) {
		f->subnets[i].configured = en->subnets[i].configured &&
		    en->subnets[i].known;
		f->subnets[i].available = en->subnets[i].available;
		f->subnets[i].inhibited_until = en->subnets[i].inhibited_until;
		f->subnets[i].prefix_inhibited_until =
		    en->subnets[i].prefix_inhibited_until;
	}
	for (i = 0; i < POOL_MAX_ENIS; i++) {
		struct eni *e = &en->enis[i];
		struct pool_eni_view *v;

		if (!e->used)
			continue;
		map[f->nenis] = e;
		v = &f->enis[f->nenis++];
		v->state = e->state;
		v->primary = e->primary;
		v->usable = subnet_usable(b, e->subnet);
		v->busy = e->addr_op.active || eni_unassign_waiting(e) ||
		    e->recheck;
		v->keep_until = e->keep_until;
		v->subnet = e->subnet >= 0 ? (uint32_t)e->subnet : 0;
		v->capacity = en->ips_per_eni > 1 ? en->ips_per_eni - 1 : 0;
		if (v->capacity > POOL_MAX_ADDRS)
			v->capacity = POOL_MAX_ADDRS;
		if (e->assigning_prefixes) {
			v->prefixes_adding = e->assigning;
			v->adding = e->assigning * POOL_PREFIX_ADDRS;
			v->prefix_addrs = v->adding;
		} else
			v->adding = e->assigning;
		v->nprefixes = e->nprefixes < POOL_MAX_PREFIXES ?
		    e->nprefixes : POOL_MAX_PREFIXES;
		for (j = 0; j < v->nprefixes; j++)
			v->prefix[j].frozen_until = e->prefixes[j].frozen_until;
		for (j = 0; j < e->naddrs; j++) {
			const struct eni_addr *a = &e->addrs[j];
			int k = a->block != 0 ?
			    eni_prefix_index(e, a->block) : -1;
			struct pool_prefix_view *pv = k >= 0 &&
			    (uint32_t)k < v->nprefixes ? &v->prefix[k] : NULL;
			bool usable = false;

			switch (a->state) {
			case ADDR_PENDING:
				v->adding++;
				break;
			case ADDR_FREE:
				v->free++;
				usable = true;
				break;
			case ADDR_ASSIGNED:
				v->assigned++;
				break;
			case ADDR_COOLING:
				if (addr_usable(a, now)) {
					v->free++;
					usable = true;
				} else
					v->cooling++;
				break;
			case ADDR_UNCONFIRMED:
				v->cooling++;
				break;
			case ADDR_REMOVING:
				v->removing++;
				break;
			case ADDR_STATE_COUNT:
				break;
			}
			if (a->block != 0)
				v->prefix_addrs++;
			if (pv == NULL)
				continue;
			if (a->state == ADDR_ASSIGNED)
				pv->assigned++;
			if (!usable)
				pv->used++;
			else {
				pv->free++;
				if (pv->frozen_until > now)
					v->frozen_free++;
			}
		}
		/* A prefix being given back is in use until it is gone. */
		for (j = 0; j < v->nprefixes; j++)
			if (e->prefixes[j].removing)
				v->prefix[j].used++;
		if (en->params.ipv6_only) {
			/* Pods, of either family, not IPv4 addresses. */
			v->has6 = e->prefix6.family == AF_INET6;
			v->assigned = eni_pods(b, e);
		}
	}
}

static void
engine_drains(struct broker *b)
{
	uint32_t i, j;

	for (i = 0; i < POOL_MAX_ENIS; i++) {
		struct eni *e = &b->engine.enis[i];
		bool busy = false;

		if (!e->used || e->state != ENI_DRAINING || e->op.active ||
		    loop_timer_armed(&e->timer) || eni_addrs_changing(e))
			continue;
		for (j = 0; j < e->naddrs; j++)
			if (e->addrs[j].state == ADDR_ASSIGNED ||
			    e->addrs[j].state == ADDR_COOLING ||
			    e->addrs[j].state == ADDR_UNCONFIRMED)
				busy = true;
		/* IPv6-only pods hold no slot of its addresses. */
		if (!busy && eni_pods(b, e) > 0)
			busy = true;
		if (!busy)
			eni_remove(e, "drained: no pod left on it");
	}
}

/*
 * Plan again at `at`, unless the plan timer is due sooner.  A time not
 * after now is never armed: the plan that asks has just run with every
 * deadline up to now behind it, so a timer for the past would only fire
 * at once, find the same, and spin.
 */
static void
arm_next(struct broker *b, uint64_t at, uint64_t now)
{
	struct engine *en = &b->engine;

	if (at <= now)
		return;
	if (!loop_timer_armed(&en->plan_timer) || en->plan_timer.deadline > at)
		loop_timer_at(&b->loop, &en->plan_timer, at);
}

/* Does the plan grow while a burst of ADDs is still being read?  Then
 * its actions wait (ENGINE_GATHER_MS); *until says how long. */
static bool
engine_gathering(struct engine *en, const struct pool_plan *pl,
    uint64_t now, uint64_t *until)
{
	uint64_t quiet, most;
	size_t i;

	for (i = 0; i < pl->nactions; i++)
		if (pl->actions[i].type == ACT_ASSIGN ||
		    pl->actions[i].type == ACT_CREATE_ENI)
			break;
	quiet = en->last_add_ms + ENGINE_GATHER_MS;
	if (i == pl->nactions || en->last_add_ms == 0 || now >= quiet) {
		en->gather_since = 0;
		return false;
	}
	if (en->gather_since == 0)
		en->gather_since = now;
	most = en->gather_since + ENGINE_GATHER_MAX_MS;
	if (now >= most) {
		en->gather_since = 0;
		return false;
	}
	*until = quiet < most ? quiet : most;
	return true;
}

static void
engine_plan_cb(struct loop *l, struct loop_defer *d)
{
	struct broker *b = d->arg;
	struct engine *en = &b->engine;
	static struct pool_facts f;
	static struct pool_plan pl;
	static uint64_t frees[POOL_MAX_ENIS * POOL_MAX_ENI_ADDRS];
	uint32_t nfrees;
	struct eni *map[POOL_MAX_ENIS];
	uint64_t now = now_ms(), next, until;
	uint32_t i;

	(void)l;
	if (en->phase != PHASE_RUNNING || b->shutting_down)
		return;
	next = engine_cool(b, now);
	pods_serve_waiters(b);
	setup_turn(b);		/* what waited for those ADDs' rules */
	engine_drains(b);
	arm_next(b, eni6_plan(b, now), now);
	engine_view(b, &f, map);
	pool_plan(&en->params, &f, now, &pl);

	if (!pl.surplus || pl.nactions > 0)
		en->surplus_held = false;
	if (!pl.surplus)
		en->surplus_since = 0;
	else if (en->surplus_since == 0)
		en->surplus_since = now;
	else if (pl.nactions == 0 && !en->surplus_held &&
	    now >= en->surplus_since + en->params.shrink_delay_ms) {
		/* Once per surplus: no timer, the next change plans again. */
		en->surplus_held = true;
		if (pl.wake != 0)
			log_debug("pool: %u more than needed, none of it can "
			    "be given back now; looking again in %llu ms, or "
			    "when a pod leaves", pl.have - pl.need,
			    (unsigned long long)(pl.wake - now));
		else
			log_debug("pool: %u more than needed, none of it can "
			    "be given back now (every ENI it is on holds a pod "
			    "or is busy); looking again when one leaves",
			    pl.have - pl.need);
	}
	en->blocked = pl.blocked;
	if (pl.blocked != BLOCK_NONE && en->nwaiters > 0) {
		switch (pl.blocked) {
		case BLOCK_BACKOFF:
			/* A failure that may pass (throttled, a 5xx, a link
			 * that never came) fails only the ADDs whose time is
			 * up before growth is tried again; the others wait. */
			waiters_fail(b, failure_may_pass(en->last_failure_code) ?
			    en->grow_backoff_until : UINT64_MAX,
			    en->last_failure_code[0] ? en->last_failure_code :
			    "cloud-error", "the pool cannot grow now: %s",
			    en->last_failure);
			break;
		case BLOCK_MAX_PODS:
			if (en->params.max_pods != 0 &&
			    en->params.max_pods < POOL_MAX_HELD)
				waiters_fail(b, UINT64_MAX, "max-pods",
				    "max_pods (%u) addresses are held by pods",
				    en->params.max_pods);
			else
				waiters_fail(b, UINT64_MAX, "max-pods",
				    "%u addresses are held by pods: the most "
				    "enid holds on a node (ENID_MAX_PODS)",
				    POOL_MAX_HELD);
			break;
		case BLOCK_ENID_LIMIT:
			/* enid's tables, not the cloud: the instance would
			 * take more.  What cools may still come in time. */
			nfrees = engine_cooling_frees(b, now, frees,
			    POOL_MAX_ENIS * POOL_MAX_ENI_ADDRS);
			waiters_fail_but_cooling(b, frees, nfrees, "max-pods",
			    "no free address, and enid holds no more on this "
			    "node, though the instance would take more: at "
			    "most %u ENIs (ENID_MAX_ENIS), %u addresses an ENI "
			    "(ENID_MAX_ENI_PREFIXES of %u) and %u in all "
			    "(ENID_MAX_PODS)", POOL_MAX_ENIS,
			    POOL_MAX_ENI_ADDRS, POOL_PREFIX_ADDRS,
			    POOL_MAX_HELD);
			break;
		case BLOCK_ENI_LIMIT:
			/* What cools may still come in time: those waiters
			 * wait for it (issue 26). */
			nfrees = engine_cooling_frees(b, now, frees,
			    POOL_MAX_ENIS * POOL_MAX_ENI_ADDRS);
			waiters_fail_but_cooling(b, frees, nfrees, "eni-limit",
			    "no free address, and the instance has no room for "
			    "another ENI (%u of %u attached or on their way)",
			    pl.used_slots, en->params.max_enis);
			break;
		case BLOCK_SUBNET_FULL:
			nfrees = engine_cooling_frees(b, now, frees,
			    POOL_MAX_ENIS * POOL_MAX_ENI_ADDRS);
			waiters_fail_but_cooling(b, frees, nfrees,
			    "subnet-full", "no free address, and no configured "
			    "subnet has addresses left");
			break;
		case BLOCK_NONE:
			break;
		}
	}
	if (engine_gathering(en, &pl, now, &until)) {
		arm_next(b, until, now);
		arm_next(b, next, now);
		return;
	}
	if (pl.fallback)
		en->stats.pfx_singles++;
	for (i = 0; i < pl.nactions; i++) {
		const struct pool_action *a = &pl.actions[i];
		struct eni *e = a->type == ACT_CREATE_ENI ? NULL : map[a->eni];

		switch (a->type) {
		case ACT_ASSIGN:
			if (a->prefixes)
				eni_assign_prefixes(e, a->count);
			else
				eni_assign(e, a->count);
			break;
		case ACT_CREATE_ENI:
			eni_create(b, a->subnet, a->count, a->prefixes);
			break;
		case ACT_UNASSIGN:
			eni_unassign(e, a->count);
			break;
		case ACT_UNASSIGN_PREFIX:
			if (a->prefix < e->nprefixes)
				eni_unassign_prefix(e, a->prefix);
			break;
		case ACT_FREEZE_PREFIX:
			if (a->prefix < e->nprefixes)
				eni_freeze_prefix(e, a->prefix, now);
			break;
		case ACT_RELEASE_ENI:
			eni_set_state(e, ENI_DRAINING, "surplus: its %u free "
			    "addresses are more than the pool needs",
			    a->count);
			break;
		}
	}
	/* Only what time alone will change: everything else kicks. */
	arm_next(b, pl.wake, now);
	arm_next(b, next, now);
}

static void
engine_timer_cb(struct loop *l, struct loop_timer *t)
{
	struct broker *b = t->arg;

	(void)l;
	engine_kick(b);
}

void
engine_init(struct broker *b)
{
	struct engine *en = &b->engine;

	en->started_wall = (int64_t)time(NULL);
	b->store = store_new(b, engine_record, eni_unassigns_saved);
	loop_defer_init(&en->kick, engine_plan_cb, b);
	loop_defer_init(&en->setup_turn, setup_turn_cb, b);
	loop_timer_init(&en->plan_timer, engine_timer_cb, b);
	pods_init(b);
	reconcile_schedule(b);
}

static struct subnet *
subnet_add(struct broker *b, const char *id, bool configured)
{
	struct engine *en = &b->engine;
	struct subnet *s;

	if ((s = subnet_by_id(b, id)) != NULL)
		return s;
	if (en->nsubnets == POOL_MAX_SUBNETS)
		return NULL;
	s = &en->subnets[en->nsubnets++];
	memset(s, 0, sizeof(*s));
	msg_strlcpy(s->id, id, sizeof(s->id));
	s->configured = configured;
	return s;
}

/* Pods restored from the checkpoint (the snapshot and its journal), if
 * it is this instance's: true then. */
static bool
engine_restore(struct broker *b)
{
	struct engine *en = &b->engine;
	char err[1024], note[512];
	size_t i;
	int rc;

	rc = store_restore(b->store, &en->restored, note, sizeof(note), err,
	    sizeof(err));
	if (rc == -2)
		fatalx("checkpoint: %s; not starting without it", err);
	if (rc == CKPT_NEWER)	/* main() refuses it first: not seen here */
		fatalx("checkpoint in %s: %s", b->cfg.state_dir, err);
	if (rc == 1) {
		/* None at all: a new node, or files moved aside by hand (a
		 * downgrade's way out).  Pods may be running all the same:
		 * the kernel's rules say which addresses they hold. */
		if (note[0] != '\0')
			log_warnx("checkpoint: %s", note);
		log_info("checkpoint: none; rebuilding the pods from the "
		    "kernel's rules (none on a new node)");
		en->rebuild_from_kernel = true;
		en->checkpoint_none = true;
		return false;
	}
	if (rc == -1) {
		log_errorx("checkpoint: %s; rebuilding the pods from the cloud "
		    "and the kernel", err);
		en->rebuild_from_kernel = true;
		en->checkpoint_lost = true;
		return false;
	}
	if (strcmp(en->restored.instance_id, b->instance.instance_id) != 0) {
		log_warnx("checkpoint: written on %s, this is %s; its %zu pods "
		    "are not this node's and are ignored, and the pods are "
		    "rebuilt from the kernel's rules",
		    en->restored.instance_id, b->instance.instance_id,
		    en->restored.npods);
		checkpoint_free(&en->restored);
		memset(&en->restored, 0, sizeof(en->restored));
		en->rebuild_from_kernel = true;
		en->checkpoint_none = true;
		return false;
	}
	for (i = 0; i < en->restored.npods; i++)
		pod_restore(b, &en->restored.pods[i]);
	/* With ipv4, a version 4 checkpoint without a pod of IPv6 keeps
	 * nothing of it. */
	eni6_held_check(b);
	log_info("checkpoint: %zu pods and %zu cooling addresses restored "
	    "(%s)", en->restored.npods, en->restored.ncooling, note);
	/* The pods are the pool's now; only the cooling addresses are read
	 * again (after each ENI set-up): their strings alone are kept, in
	 * one block (out of memory: all kept, as they were). */
	free(en->restored.pods);
	en->restored.pods = NULL;
	en->restored.npods = 0;
	(void)checkpoint_own(&en->restored);
	return true;
}

/*
 * The instance is known and netd has its policy: learn the subnets, take
 * back the checkpoint, and reconcile; the pool runs once that is done.
 */
void
engine_start(struct broker *b)
{
	struct engine *en = &b->engine;
	struct subnet *s;
	uint32_t i;
	bool restored;

	if (en->phase != PHASE_WAITING)
		return;
	pool_params_from(&en->params, &b->cfg, b->instance.max_enis);
	en->ips_per_eni = b->instance.ips_per_eni <= ENID_MAX_ENI_ADDRS + 1 ?
	    b->instance.ips_per_eni : ENID_MAX_ENI_ADDRS + 1;
	/* Prefix delegation only where the instance can hold prefixes
	 * (DescribeInstanceTypes: Nitro, or bare metal); asked for on one
	 * that cannot, enid says so, once, and uses single addresses. */
	en->params.prefixes = b->cfg.pool.prefix_delegation &&
	    b->instance.prefixes_ok;
	en->prefixes_unsupported = b->cfg.pool.prefix_delegation &&
	    !b->instance.prefixes_ok;
	/* IPv6-only pods: no IPv4 address is asked for them, prefixes or
	 * single (pool.c, plan6); the warm and prefix settings are IPv4's. */
	en->params.ipv6_only = b->cfg.ip_family == IP_FAMILY_IPV6;
	if (en->params.ipv6_only) {
		en->params.prefixes = false;
		en->prefixes_unsupported = false;
		log_info("pool: ip_family ipv6: pods get IPv6 addresses only, "
		    "from their ENI's /%d; the pool is driven by ENIs",
		    MSG_PREFIX6_LEN);
	}
	if (en->prefixes_unsupported)
		log_warnx("pool: prefix_delegation is on, but instance type %s "
		    "(hypervisor \"%s\"%s) cannot hold prefixes; single "
		    "addresses are used", b->instance.instance_type,
		    b->instance.hypervisor, b->instance.bare_metal ?
		    ", bare metal" : "");
	else if (en->params.prefixes)
		log_info("pool: prefix delegation: /%d prefixes of %d "
		    "addresses, warm_prefix_target %u", MSG_PREFIX_LEN,
		    POOL_PREFIX_ADDRS, en->params.warm_prefix_target);
	/* cloudd passes a type past enid's maxima on as the cloud tells
	 * it (only 0 and absurd figures are refused there); it is used up
	 * to them: pool_params_from caps the ENIs, and the addresses an
	 * ENI holds are capped above. */
	if (b->instance.max_enis > ENID_MAX_ENIS ||
	    b->instance.ips_per_eni > ENID_MAX_ENI_ADDRS + 1)
		log_warnx("pool: instance type %s takes %u ENIs of %u "
		    "addresses; enid uses at most %u ENIs (ENID_MAX_ENIS) of "
		    "%u addresses and a primary (ENID_MAX_ENI_ADDRS), and "
		    "leaves the rest unused", b->instance.instance_type,
		    b->instance.max_enis, b->instance.ips_per_eni,
		    ENID_MAX_ENIS, ENID_MAX_ENI_ADDRS);
	for (i = 0; i < b->cfg.nsubnets; i++) {
		s = subnet_add(b, b->cfg.subnets[i].id, true);
		if (s == NULL)
			continue;
		s->nsgs = b->cfg.subnets[i].nsgs;
		memcpy(s->sgs, b->cfg.subnets[i].sgs, sizeof(s->sgs));
	}
	/* The primary's subnet: used for pods only when none is
	 * configured (or it is among those configured). */
	s = subnet_add(b, b->instance.subnet_id, b->cfg.nsubnets == 0);
	if (s != NULL && s->nsgs == 0) {
		s->nsgs = b->instance.nsgs;
		memcpy(s->sgs, b->instance.sgs, sizeof(s->sgs));
	}
	log_info("pool: %u ENIs of %u addresses at most; warm_ip_target %u, "
	    "minimum_ip_target %u, warm_eni_target %u, max_pods %u",
	    en->params.max_enis, en->ips_per_eni,
	    en->params.warm_ip_target, en->params.minimum_ip_target,
	    en->params.warm_eni_target, en->params.max_pods);
	restored = engine_restore(b);
	en->phase = PHASE_STARTING;
	subnets_describe(b);
	/* Asked together: start-up takes one describe round trip, not
	 * two (the run's answers wait for the subnets; reconcile.c). */
	en->started_recon = true;
	reconcile_now(b, "start");
	/*
	 * The first save after a start writes the whole checkpoint (a new
	 * generation, the journal begun again): done now, while the cloud
	 * and netd answer the start's questions, it is not done on the way
	 * of the first ADD (issue 34: the first ADD after a restart of a
	 * 700-pod node waited for it).  What it writes is what was just
	 * read back, this instance's own; never an empty or rebuilt pool,
	 * which a crash before the rebuild is done would leave as the
	 * truth.
	 */
	if (restored)
		store_mark(b->store);
}
