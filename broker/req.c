/*
 * The broker's outstanding requests to its children.  Every request has an
 * id and a deadline on the broker's side; an answer must be of a type its
 * request can produce (anything else is a misbehaving child, fatal), and a
 * multi-part answer ends with its explicit end marker.  A request whose
 * deadline passes is completed with no message; a late answer to it is
 * logged and dropped.
 *
 * Requests are embedded in their owners (struct breq) and their messages
 * go through the channel's queue, so there is no limit to hit and nothing
 * to fail: a child under load reads them as it can (common/peer.h).  The
 * liveness ping is one such request, on a timer.
 */
#include <stdio.h>
#include <string.h>

#include "enid.h"
#include "log.h"

/* Slack over the child's own deadline, so a child that honours the
 * deadline it was given always answers before we give up on it. */
#define REQ_SLACK_MS	2000

struct answer_rule {
	enum msg_type	request;
	enum msg_type	single[2];	/* final answers */
	enum msg_type	entry;		/* stream entries, or MSG_NONE */
	enum msg_type	end;		/* stream end marker, or MSG_NONE */
};

static const struct answer_rule answer_rules[] = {
	{ MSG_PING,		{ MSG_PONG }, MSG_NONE, MSG_NONE },
	{ MSG_NETD_POLICY,	{ MSG_NETD_RESULT }, MSG_NONE, MSG_NONE },
	{ MSG_NETD_DECLARE_ENI,	{ MSG_NETD_RESULT }, MSG_NONE, MSG_NONE },
	{ MSG_NETD_FORGET_ENI,	{ MSG_NETD_RESULT }, MSG_NONE, MSG_NONE },
	{ MSG_NETD_FIND_LINK,	{ MSG_NETD_LINK, MSG_NETD_RESULT }, MSG_NONE,
	  MSG_NONE },
	{ MSG_NETD_SETUP_ENI,	{ MSG_NETD_RESULT }, MSG_NONE, MSG_NONE },
	{ MSG_NETD_TEARDOWN_ENI, { MSG_NETD_RESULT }, MSG_NONE, MSG_NONE },
	{ MSG_NETD_ADD_POD,	{ MSG_NETD_RESULT }, MSG_NONE, MSG_NONE },
	{ MSG_NETD_DEL_POD,	{ MSG_NETD_RESULT }, MSG_NONE, MSG_NONE },
	{ MSG_NETD_DUMP_LINKS,	{ MSG_NETD_RESULT }, MSG_NETD_LINK,
	  MSG_NETD_END },
	{ MSG_NETD_DUMP_RULES,	{ MSG_NETD_RESULT }, MSG_NETD_RULE,
	  MSG_NETD_END },
	{ MSG_NETD_ADD_POD_ROUTE, { MSG_NETD_RESULT }, MSG_NONE, MSG_NONE },
	{ MSG_NETD_DUMP_ROUTES,	{ MSG_NETD_RESULT }, MSG_NETD_ROUTE,
	  MSG_NETD_END },
	{ MSG_CLOUD_DESCRIBE_INSTANCE, { MSG_CLOUD_INSTANCE }, MSG_NONE,
	  MSG_NONE },
	{ MSG_CLOUD_DESCRIBE_SUBNETS, { MSG_NONE }, MSG_CLOUD_SUBNET,
	  MSG_CLOUD_DONE },
	{ MSG_CLOUD_CREATE_ENI,	{ MSG_CLOUD_ENI }, MSG_NONE, MSG_NONE },
	{ MSG_CLOUD_ATTACH,	{ MSG_CLOUD_ATTACHED }, MSG_NONE, MSG_NONE },
	{ MSG_CLOUD_SET_DOT,	{ MSG_CLOUD_DONE }, MSG_NONE, MSG_NONE },
	{ MSG_CLOUD_ASSIGN_IPS,	{ MSG_CLOUD_ASSIGNED }, MSG_NONE, MSG_NONE },
	{ MSG_CLOUD_UNASSIGN_IPS, { MSG_CLOUD_DONE }, MSG_NONE, MSG_NONE },
	{ MSG_CLOUD_DETACH,	{ MSG_CLOUD_DONE }, MSG_NONE, MSG_NONE },
	{ MSG_CLOUD_DELETE,	{ MSG_CLOUD_DONE }, MSG_NONE, MSG_NONE },
	{ MSG_CLOUD_DESCRIBE_ENIS, { MSG_NONE }, MSG_CLOUD_ENI,
	  MSG_CLOUD_DONE },
	{ MSG_CLOUD_CHECK_INSTANCES, { MSG_CLOUD_INSTANCES }, MSG_NONE,
	  MSG_NONE },
	{ MSG_CLOUD_STATS,	{ MSG_CLOUD_STATS_ANSWER }, MSG_NONE,
	  MSG_NONE },
};

static const struct answer_rule *
rule_for(enum msg_type request)
{
	size_t i;

	for (i = 0; i < sizeof(answer_rules) / sizeof(answer_rules[0]); i++)
		if (answer_rules[i].request == request)
			return &answer_rules[i];
	return NULL;
}

static void
req_finish(struct broker *b, struct breq *r)
{
	struct child *c = r->child;

	loop_timer_cancel(&b->loop, &r->timer);
	TAILQ_REMOVE(&c->pending, r, entry);
	c->npending--;
	r->active = false;
}

static void
req_timeout(struct loop *l, struct loop_timer *t)
{
	struct breq *r = t->arg;
	struct child *c = r->child;
	struct broker *b = c->broker;

	(void)l;
	if (c->peer.open)
		log_warnx("%s: %s (id %u) not answered within %u ms", c->name,
		    msg_type_name(r->type), r->id, r->wait_ms);
	req_finish(b, r);
	if (r->type == MSG_NETD_FIND_LINK)
		metrics_link_wait(b, NULL, now_us() - r->sent_us);
	r->done(b, r->arg, NULL, true);
}

void
broker_request(struct broker *b, struct breq *r, struct child *c,
    enum msg_type type, const void *payload, size_t len,
    uint32_t deadline_ms, req_done_cb done, void *arg)
{
	if (rule_for(type) == NULL)
		fatalx("%s: %s is not a request (bug)", c->name,
		    msg_type_name(type));
	if (r->active)
		fatalx("%s: %s (id %u) reused while still waiting (bug)",
		    c->name, msg_type_name(r->type), r->id);
	memset(r, 0, sizeof(*r));
	r->active = true;
	r->id = ++b->next_id;
	r->child = c;
	r->type = type;
	/* The ping's wait is its own; others get slack over the child's
	 * deadline, so a child that honours it answers first. */
	r->wait_ms = type == MSG_PING ? BROKER_PING_WAIT_MS :
	    deadline_ms + REQ_SLACK_MS;
	r->done = done;
	r->arg = arg;
	r->sent_ms = now_ms();
	r->sent_us = now_us();
	TAILQ_INSERT_TAIL(&c->pending, r, entry);
	c->npending++;
	loop_timer_init(&r->timer, req_timeout, r);
	if (c->ready && c->peer.open) {
		peer_send(&c->peer, type, r->id, payload, len);
		loop_timer_after(&b->loop, &r->timer, r->wait_ms);
	} else {
		/* No one to ask: the answer is "none", from the loop, so
		 * callers never see their callback run inside this call. */
		loop_timer_after(&b->loop, &r->timer, 0);
	}
}

void
broker_request_cancel(struct broker *b, struct breq *r)
{
	if (r->active)
		req_finish(b, r);
}

void
broker_fail_requests(struct broker *b, struct child *c)
{
	struct breq *r;

	/* Each callback may issue new requests (which then time out at
	 * once, the child being gone); take them one by one from the head. */
	while ((r = TAILQ_FIRST(&c->pending)) != NULL) {
		req_finish(b, r);
		r->done(b, r->arg, NULL, true);
	}
}

void
broker_notify(struct broker *b, struct child *c, enum msg_type type,
    const void *payload, size_t len)
{
	if (c->ready && c->peer.open)
		peer_send(&c->peer, type, ++b->next_id, payload, len);
}

/*
 * Route an answer to its request.  Returns -1 (the caller treats the child
 * as misbehaving) for an answer of a type its request cannot produce.
 */
int
broker_answer(struct broker *b, struct child *c, const struct msg *m)
{
	const struct answer_rule *r;
	struct breq *q;
	bool final;

	/* Children answer mostly in order: the match is near the head. */
	TAILQ_FOREACH(q, &c->pending, entry)
		if (q->id == m->hdr.id)
			break;
	if (q == NULL) {
		/* Ids only grow: an id we issued but no longer wait for is
		 * a late answer; one we never issued is a lie. */
		if (m->hdr.id == 0 || m->hdr.id > b->next_id)
			return -1;
		log_info("%s: late %s (id %u) dropped", c->name,
		    msg_type_name(m->hdr.type), m->hdr.id);
		return 0;
	}
	r = rule_for(q->type);
	if (m->hdr.type == r->single[0] || m->hdr.type == r->single[1])
		final = true;
	else if (m->hdr.type == r->end)
		final = true;
	else if (m->hdr.type == r->entry)
		final = false;
	else {
		log_warnx("%s: %s is no answer to %s (id %u)", c->name,
		    msg_type_name(m->hdr.type), msg_type_name(q->type), q->id);
		return -1;
	}
	if (final)
		req_finish(b, q);
	if (c == &b->cloudd && m->hdr.type != MSG_CLOUD_STATS_ANSWER)
		engine_cloud_heard(b, m);
	/* The link's wait, as the broker sees it: from the request to the
	 * answer, netd's backoff included. */
	if (final && q->type == MSG_NETD_FIND_LINK)
		metrics_link_wait(b, m, now_us() - q->sent_us);
	q->done(b, q->arg, m, final);
	return 0;
}

/* ---- liveness ---- */

static void	ping_send(struct loop *, struct loop_timer *);

static void
ping_answer(struct broker *b, void *arg, const struct msg *m, bool final)
{
	struct child *c = arg;
	struct msg_ping pong;
	char why[256];

	(void)final;
	if (b->shutting_down)
		return;
	if (m == NULL) {
		snprintf(why, sizeof(why), "%s (pid %d) did not answer a "
		    "liveness ping within %d ms: it is stopped or wedged",
		    c->name, (int)c->pid, BROKER_PING_WAIT_MS);
		broker_shutdown(b, 1, why);
		return;
	}
	memcpy(&pong, m->u.bytes, sizeof(pong));
	if (pong.seq != c->ping_seq) {
		snprintf(why, sizeof(why), "%s (pid %d) answered ping %u with "
		    "%u", c->name, (int)c->pid, c->ping_seq, pong.seq);
		broker_shutdown(b, 1, why);
		return;
	}
	c->pongs++;
	loop_timer_after(&b->loop, &c->ping_timer, BROKER_PING_INTERVAL_MS);
}

static void
ping_send(struct loop *l, struct loop_timer *t)
{
	struct child *c = t->arg;
	struct msg_ping ping;

	(void)l;
	memset(&ping, 0, sizeof(ping));
	ping.seq = ++c->ping_seq;
	broker_request(c->broker, &c->ping_req, c, MSG_PING, &ping,
	    sizeof(ping), BROKER_PING_WAIT_MS, ping_answer, c);
}

void
broker_start_pings(struct broker *b, struct child *c)
{
	loop_timer_init(&c->ping_timer, ping_send, c);
	loop_timer_after(&b->loop, &c->ping_timer, BROKER_PING_INTERVAL_MS);
}
