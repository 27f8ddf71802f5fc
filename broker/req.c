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
 * liveness ping (enid.c) is one such request, on a timer.  What the rest
 * of the broker learns from every answer, it learns through the child's
 * observer, which enid.c sets: this file calls nothing above it.
 */
#include <string.h>

#include "enid.h"
#include "log.h"

/* Slack over the child's own deadline, so a child that honours the
 * deadline it was given always answers before we give up on it. */
#define REQ_SLACK_MS	2000

/* What type may answer a request, from MSG_TYPES' answers column; NULL
 * for a type that is no request. */
static const struct msg_answers *
rule_for(enum msg_type request)
{
	const struct msg_type_info *ti = msg_type_info(request);
	const struct msg_answers *a;

	if (ti == NULL)
		return NULL;
	a = &ti->answers;
	if (a->single[0] == MSG_NONE && a->single[1] == MSG_NONE &&
	    a->entry == MSG_NONE && a->end == MSG_NONE)
		return NULL;
	return a;
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
	if (c->observe != NULL)
		c->observe(b, r, NULL, true);
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
	const struct msg_answers *r;
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
	if (m->hdr.type != MSG_NONE && (m->hdr.type == r->single[0] ||
	    m->hdr.type == r->single[1] || m->hdr.type == r->end))
		final = true;
	else if (m->hdr.type != MSG_NONE && m->hdr.type == r->entry)
		final = false;
	else {
		log_warnx("%s: %s is no answer to %s (id %u)", c->name,
		    msg_type_name(m->hdr.type), msg_type_name(q->type), q->id);
		return -1;
	}
	if (final)
		req_finish(b, q);
	if (c->observe != NULL)
		c->observe(b, q, m, final);
	q->done(b, q->arg, m, final);
	return 0;
}
