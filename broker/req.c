/*
 * The broker's outstanding requests to its children.  Every request has an
 * id and a deadline on the broker's side; an answer must be of a type its
 * request can produce (anything else is a misbehaving child, fatal), and a
 * multi-part answer ends with its explicit end marker.  A request whose
 * deadline passes is completed with no message; a late answer to it is
 * logged and dropped.
 */
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
req_timeout(struct loop *l, struct loop_timer *t)
{
	struct pending *p = t->arg;
	struct broker *b = p->child->broker;

	(void)l;
	log_warnx("%s: %s (id %u) not answered within %u ms", p->child->name,
	    msg_type_name(p->type), p->id, p->deadline_ms + REQ_SLACK_MS);
	p->used = false;
	p->done(b, p->arg, NULL, true);
}

int
broker_request(struct broker *b, struct child *c, enum msg_type type,
    const void *payload, size_t len, uint32_t deadline_ms, req_done_cb done,
    void *arg)
{
	struct pending *p = NULL;
	size_t i;

	if (rule_for(type) == NULL || c->pid <= 0 || !c->ready)
		return -1;
	for (i = 0; i < BROKER_MAX_PENDING; i++)
		if (!b->pending[i].used) {
			p = &b->pending[i];
			break;
		}
	if (p == NULL) {
		log_warnx("%s: %d requests outstanding; refusing %s", c->name,
		    BROKER_MAX_PENDING, msg_type_name(type));
		return -1;
	}
	memset(p, 0, sizeof(*p));
	p->id = ++b->next_id;
	p->child = c;
	p->type = type;
	p->deadline_ms = deadline_ms;
	p->done = done;
	p->arg = arg;
	p->sent_ms = now_ms();
	if (msg_send(&c->chan, type, p->id, payload, len) == -1) {
		log_warn("%s: sending %s", c->name, msg_type_name(type));
		return -1;
	}
	p->used = true;
	loop_timer_init(&p->timer, req_timeout, p);
	loop_timer_after(&b->loop, &p->timer, deadline_ms + REQ_SLACK_MS);
	return 0;
}

/*
 * Route an answer to its request.  Returns -1 (the caller treats the child
 * as misbehaving) for an answer of a type its request cannot produce.
 */
int
broker_answer(struct broker *b, struct child *c, const struct msg *m)
{
	const struct answer_rule *r;
	struct pending *p = NULL;
	bool final;
	size_t i;

	for (i = 0; i < BROKER_MAX_PENDING; i++)
		if (b->pending[i].used && b->pending[i].id == m->hdr.id &&
		    b->pending[i].child == c) {
			p = &b->pending[i];
			break;
		}
	if (p == NULL) {
		/* Ids only grow: an id we issued but no longer wait for is
		 * a late answer; one we never issued is a lie. */
		if (m->hdr.id == 0 || m->hdr.id > b->next_id)
			return -1;
		log_info("%s: late %s (id %u) dropped", c->name,
		    msg_type_name(m->hdr.type), m->hdr.id);
		return 0;
	}
	r = rule_for(p->type);
	if (m->hdr.type == r->single[0] || m->hdr.type == r->single[1])
		final = true;
	else if (m->hdr.type == r->end)
		final = true;
	else if (m->hdr.type == r->entry)
		final = false;
	else {
		log_warnx("%s: %s is no answer to %s (id %u)", c->name,
		    msg_type_name(m->hdr.type), msg_type_name(p->type), p->id);
		return -1;
	}
	if (final) {
		loop_timer_cancel(&b->loop, &p->timer);
		p->used = false;
	}
	p->done(b, p->arg, m, final);
	return 0;
}
