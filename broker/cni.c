/*
 * The CNI socket (cni.sock, 0600, root only): its operations, each parsed
 * (cnireq.c), decided here, and carried out by the pods (pods.c).
 *
 * add    Idempotent per (container id, ifname): a repeat gets the same
 *        address.  The address comes from the fullest ready ENI; enid-netd
 *        installs the pod's rules while the assignment is written to the
 *        checkpoint; once both are done the ADD is answered.  With no
 *        free address the ADD waits, at most add_timeout, and is answered
 *        at once with the specific reason when growth fails.
 * del    Removes the rules, lets the address cool, checkpoints, answers.
 *        The pod stays in the checkpoint until its rules are gone: a
 *        restart in between restores it, and its address goes to no other
 *        pod until the runtime's retried DEL.  An unknown attachment is
 *        fine.  Never waits behind growth.
 * check  Says whether the pod's address and ENI are still in order.
 * gc     Releases every pod not among the valid attachments.
 * status Whether an address can be had now, and why not.
 *
 * Answers that change durable state are held until the store has the
 * change on disk (store.h); ADDs and DELs finishing in one loop turn share
 * one write.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "addr.h"
#include "cnireq.h"
#include "enid.h"
#include "log.h"

/* ---- the ops ---- */

static bool
parse_or_bad(struct jref *ref, struct json_object *req, struct cni_request *r)
{
	char err[256];

	if (cni_request_parse(req, r, err, sizeof(err)) == 0)
		return true;
	jref_bad(ref, "%s", err);
	return false;
}

static void
op_add(struct broker *b, struct jref *ref, struct json_object *req)
{
	struct cni_request r;
	struct pod *p;
	struct eni *e;

	if (!parse_or_bad(ref, req, &r))
		return;
	if ((p = pod_find(b, r.container_id, r.ifname)) != NULL) {
		/* A pod of an older checkpoint learns its host end from
		 * the plugin's repeated ADD. */
		if (p->host_veth[0] == '\0' && r.host_veth[0] != '\0') {
			msg_strlcpy(p->host_veth, r.host_veth,
			    sizeof(p->host_veth));
			store_mark(b->store);
		}
		switch (p->state) {
		case POD_READY:
			if (p->lost)
				jref_error(ref, "address-lost", "this "
				    "attachment's address is gone (%s); delete "
				    "it first", p->lost_why);
			else if (p->req.active || p->netd_waiting) {
				/* Restored, its rules asked for again: the
				 * plugin routes the address only once
				 * netd's rule for it is seen, so the
				 * answer waits for netd (pod_rules_answer).
				 * A retry takes over the answer. */
				if (p->add_ref.server != NULL)
					jref_error(&p->add_ref, "busy",
					    "superseded by a repeated ADD");
				p->add_ref = *ref;
				ref->server = NULL;
				/* A runtime waits now: with the ADDs. */
				if (pod_netd_unqueue_bg(p, true))
					pod_netd_send(p);
			} else
				/* Idempotent: the same address again. */
				pod_answer_again(b, ref, p);
			break;
		case POD_ADDING:
			/* A retry while the first is in flight takes over
			 * the answer; the first was given up on. */
			jref_error(&p->add_ref, "busy", "superseded by a "
			    "repeated ADD");
			p->add_ref = *ref;
			ref->server = NULL;
			break;
		case POD_DELETING:
			jref_error(ref, "busy", "this attachment is being "
			    "deleted; try again");
			break;
		}
		cni_request_free(&r);
		return;
	}
	if (pods_at_max(b)) {
		refuse_max_pods(b, ref);
		cni_request_free(&r);
		return;
	}
	if (b->instance_state != INSTANCE_KNOWN && b->instance_failures > 0) {
		/* Asking the cloud who this node is has failed already: the
		 * reason now, not a "timeout" at add_timeout.  (A first ask,
		 * at start, is waited for as the pool's growth is.) */
		jref_error(ref, "not-ready", "enid does not know its instance "
		    "yet: %s", b->instance_error);
		cni_request_free(&r);
		return;
	}
	b->engine.last_add_ms = now_ms();
	if (b->engine.phase == PHASE_RUNNING && b->engine.nwaiters == 0 &&
	    (e = pods_pick_eni(b)) != NULL)
		pod_take(b, ref, r.container_id, r.ifname, r.k8s_namespace,
		    r.k8s_name, r.k8s_uid, r.host_veth, e);
	else
		waiter_add(b, ref, &r);
	cni_request_free(&r);
}

/*
 * Until the instance is known the checkpoint is not read back, and an
 * attachment it holds looks unknown: a DEL answered ok then would leave
 * its address held for good (the pod comes back from the checkpoint), and
 * a CHECK would call it unknown.  They are told to try again.
 */
static bool
checkpoint_unread(struct broker *b, struct jref *ref)
{
	if (b->engine.phase != PHASE_WAITING)
		return false;
	jref_error(ref, "try-again", "enid is still starting: its checkpoint "
	    "is not read back yet");
	return true;
}

static void
op_del(struct broker *b, struct jref *ref, struct json_object *req)
{
	struct cni_request r;
	struct waiter *w;
	struct pod *p;

	if (!parse_or_bad(ref, req, &r))
		return;
	/* An ADD still waiting for an address is simply dropped. */
	TAILQ_FOREACH(w, &b->engine.waiters, entry)
		if (strcmp(w->container_id, r.container_id) == 0 &&
		    strcmp(w->ifname, r.ifname) == 0) {
			struct jref wref = waiter_take(b, w);

			jref_error(&wref, "cancelled", "deleted while "
			    "waiting for an address");
			break;
		}
	if (checkpoint_unread(b, ref)) {
		cni_request_free(&r);
		return;
	}
	if ((p = pod_find(b, r.container_id, r.ifname)) == NULL) {
		/* Idempotent; but if the pod was removed by a save not on
		 * disk yet (a DEL told its record failed, retried at once),
		 * ok only with that save. */
		store_reply_after_pending(b->store, ref, JREF_OK_TEXT,
		    sizeof(JREF_OK_TEXT) - 1);
		cni_request_free(&r);
		return;
	}
	if (p->del_ref.server != NULL)
		jref_error(&p->del_ref, "busy", "superseded by a repeated DEL");
	p->del_ref = *ref;
	ref->server = NULL;
	/* Not behind a restart's making sure of hundreds of pods. */
	(void)pod_netd_unqueue_bg(p, false);
	if (p->state == POD_READY && !p->req.active && !p->netd_waiting)
		pod_del_start(p);
	else
		p->del_wanted = p->state != POD_DELETING;
	cni_request_free(&r);
}

static void
op_check(struct broker *b, struct jref *ref, struct json_object *req)
{
	struct cni_request r;
	struct pod *p;
	char ip[IP_ADDR_STR_LEN], want[IP_ADDR_STR_LEN];

	if (!parse_or_bad(ref, req, &r))
		return;
	if (checkpoint_unread(b, ref)) {
		cni_request_free(&r);
		return;
	}
	p = pod_find(b, r.container_id, r.ifname);
	if (p == NULL)
		jref_error(ref, "unknown-container", "enid holds no address "
		    "for %s/%s", r.container_id, r.ifname);
	else if (p->lost)
		jref_error(ref, "address-lost", "%s", p->lost_why);
	else if (p->state != POD_READY)
		jref_error(ref, "busy", "this attachment is being changed");
	else if (r.ip.family != AF_UNSPEC && !ip_addr_eq(&r.ip, &p->ip)) {
		ip_addr_format(&p->ip, ip);
		ip_addr_format(&r.ip, want);
		jref_error(ref, "address-mismatch", "enid holds %s for this "
		    "attachment, not %s", p->ip.family ? ip : "no IPv4 "
		    "address", want);
	} else if (r.ip6.family != AF_UNSPEC &&
	    !ip_addr_eq(&r.ip6, &p->ip6)) {
		ip_addr_format(&p->ip6, ip);
		ip_addr_format(&r.ip6, want);
		jref_error(ref, "address-mismatch", "enid holds %s for this "
		    "attachment, not %s", p->ip6.family ? ip : "no IPv6 "
		    "address", want);
	} else if (p->eni == NULL || p->eni->state != ENI_READY)
		jref_error(ref, "eni-unavailable", "its ENI %s is %s",
		    p->eni ? p->eni->id : p->eni_id,
		    p->eni ? eni_state_shown(p->eni->state) : "gone");
	else {
		char text[POD_ANSWER_MAX];

		jref_reply_ok_text(ref, text, pod_answer(b, p, text,
		    sizeof(text)));
	}
	cni_request_free(&r);
}

static void
op_gc(struct broker *b, struct jref *ref, struct json_object *req)
{
	struct cni_request r;
	struct gc_run *gc;
	struct pod *p, *next;
	size_t i;

	if (!parse_or_bad(ref, req, &r))
		return;
	if (b->engine.phase != PHASE_RUNNING) {
		/* Restored pods are not bound yet: nothing is released on a
		 * view that may be partial. */
		jref_error(ref, "try-again", "enid is still starting");
		cni_request_free(&r);
		return;
	}
	if ((gc = calloc(1, sizeof(*gc))) == NULL)
		fatal("gc: out of memory");
	gc->outstanding = 1;	/* held until every release is started */
	for (p = TAILQ_FIRST(&b->engine.pods); p != NULL; p = next) {
		bool valid = false;

		next = TAILQ_NEXT(p, all);
		for (i = 0; i < r.nvalid && !valid; i++)
			valid = strcmp(r.valid[i].container_id,
			    p->container_id) == 0 &&
			    strcmp(r.valid[i].ifname, p->ifname) == 0;
		if (valid || p->state == POD_DELETING || p->gc != NULL)
			continue;
		log_info("gc: pod %s/%s is not among the valid attachments; "
		    "releasing it", p->container_id, p->ifname);
		p->gc = gc;
		gc->outstanding++;
		gc->released++;
		(void)pod_netd_unqueue_bg(p, false);
		if (p->state == POD_READY && !p->req.active &&
		    !p->netd_waiting)
			pod_del_start(p);
		else
			p->del_wanted = true;
	}
	gc->ref = *ref;
	ref->server = NULL;
	gc_release_done(b, gc);
	cni_request_free(&r);
}

static void
op_status(struct broker *b, struct jref *ref, struct json_object *req)
{
	struct engine *en = &b->engine;
	struct json_object *o;
	struct cni_request r;
	uint32_t free_, assigned, cooling, other, lost = 0;
	struct pod *p;

	if (!parse_or_bad(ref, req, &r))
		return;
	engine_counts(b, &free_, &assigned, &cooling, &other);
	TAILQ_FOREACH(p, &en->pods, all)
		if (p->lost)
			lost++;
	o = json_object_new_object();
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "free", json_object_new_int((int32_t)free_));
	json_object_object_add(o, "assigned",
	    json_object_new_int((int32_t)assigned));
	if (en->phase != PHASE_RUNNING) {
		json_object_object_add(o, "available",
		    json_object_new_boolean(0));
		json_object_object_add(o, "code",
		    json_object_new_string("not-ready"));
		json_object_object_add(o, "reason", json_object_new_string(
		    b->instance_state != INSTANCE_KNOWN ? "enid does not know "
		    "its instance yet" : "enid is reconciling with the cloud"));
	} else if (free_ == 0 && en->blocked != BLOCK_NONE) {
		char why[MSG_ERR_LEN + 64];

		json_object_object_add(o, "available",
		    json_object_new_boolean(0));
		json_object_object_add(o, "code", json_object_new_string(
		    en->blocked == BLOCK_BACKOFF ? en->last_failure_code :
		    pool_block_name(en->blocked)));
		snprintf(why, sizeof(why), "no free address and the pool "
		    "cannot grow: %s", en->blocked == BLOCK_BACKOFF ?
		    en->last_failure : pool_block_name(en->blocked));
		json_object_object_add(o, "reason",
		    json_object_new_string(why));
	} else
		json_object_object_add(o, "available",
		    json_object_new_boolean(1));
	json_object_object_add(o, "lost_pods",
	    json_object_new_int((int32_t)lost));
	if (lost > 0)
		json_object_object_add(o, "limited_reason",
		    json_object_new_string("pods whose ENI or address vanished "
		    "have no connectivity"));
	jref_reply(ref, o);
	cni_request_free(&r);
}

const struct jop cni_ops[] = {
	{ "add",	op_add },
	{ "del",	op_del },
	{ "check",	op_check },
	{ "gc",		op_gc },
	{ "status",	op_status },
	{ NULL,		NULL },
};

