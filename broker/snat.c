/*
 * SNAT and NodePort replies, the broker's side (doc/design.md, "SNAT and
 * NodePort replies").  netd owns the nftables table and decides what is
 * in it from its own parse of the configuration; the broker says when to
 * make it right (NETD_SNAT after the policy, then at every reconcile run)
 * and what it believes the node's primary address is: the cloud's word,
 * which netd checks against the kernel.  It also asks what is installed
 * (NETD_DUMP_SNAT) for enidctl show snat, status and the metrics.
 *
 * A sync netd refuses or fails is logged and counted; the pool goes on
 * (pods still get addresses, only their traffic beyond the VPC is not
 * translated) and the next reconcile tries again.  An exclusion that
 * overlaps the VPC's CIDRs is a configuration error: the broker exits 1
 * naming it, as it would for any other bad value, once the cloud has
 * named the CIDRs.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "addr.h"
#include "enid.h"
#include "log.h"

#define SNAT_SYNC_MS	5000	/* netd reads its table back, writes once */
#define SNAT_DUMP_MS	2000	/* netd reads its table back */

static const char *const sync_result_names[SNAT_RESULT_COUNT] = {
	[SNAT_OK] = "ok",
	[SNAT_REFUSED] = "refused",
	[SNAT_FAILED] = "failed",
	[SNAT_NO_ANSWER] = "no-answer",
};

const char *
snat_result_name(enum snat_result r)
{
	return (unsigned)r < SNAT_RESULT_COUNT ? sync_result_names[r] : "?";
}

/* What SNAT translates to: the node's primary address as the cloud named
 * it, or 0 with SNAT off (netd refuses either one against its own
 * reading of snat.enabled). */
static uint32_t
snat_target(const struct broker *b)
{
	return b->cfg.snat.enabled ? ip_addr_in4(&b->instance.primary_ip) : 0;
}

static void
sync_record(struct broker *b, enum snat_result res, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
sync_record(struct broker *b, enum snat_result res, const char *fmt, ...)
{
	struct snat *s = &b->snat;
	va_list ap;

	s->syncs[res]++;
	s->last_result = res;
	s->last_sync_ms = now_ms();
	va_start(ap, fmt);
	vsnprintf(s->last_message, sizeof(s->last_message), fmt, ap);
	va_end(ap);
}

static void
sync_answer(struct broker *b, void *arg, const struct msg *m, bool final)
{
	struct snat *s = &b->snat;
	char to[IP4_STR_LEN];
	struct msg_result r;

	(void)arg;
	(void)final;
	if (s->sent_to != 0)
		ip4_format(s->sent_to, to);
	else
		snprintf(to, sizeof(to), "0");
	if (m == NULL) {
		sync_record(b, SNAT_NO_ANSWER, "enid-netd did not answer");
		/* Gone, not slow: the broker is going down and says why. */
		if (!b->shutting_down)
			log_warnx("snat: enid-netd did not answer the sync to "
			    "%s in %d ms; again at the next reconcile", to,
			    SNAT_SYNC_MS);
		return;
	}
	memcpy(&r, m->u.bytes, sizeof(r));
	switch (r.status) {
	case ST_OK:
		sync_record(b, SNAT_OK, "%s", r.message);
		if (r.changed > 0)
			log_info("snat: enid-netd made its table right "
			    "(translating to %s, %u change%s): %s",
			    s->sent_to ? to : "nothing, SNAT off", r.changed,
			    r.changed == 1 ? "" : "s", r.message);
		else
			log_debug("snat: enid-netd's table is in place: %s",
			    r.message);
		break;
	case ST_REFUSED:
		sync_record(b, SNAT_REFUSED, "%s", r.message);
		log_warnx("snat: enid-netd refused the sync to %s: %s; pods' "
		    "traffic beyond the VPC is not translated, again at the "
		    "next reconcile", s->sent_to ? to : "0 (SNAT off)",
		    r.message);
		break;
	default:
		sync_record(b, SNAT_FAILED, "%s", r.message);
		log_warnx("snat: enid-netd failed the sync to %s: %s; again at "
		    "the next reconcile", s->sent_to ? to : "0 (SNAT off)",
		    r.message);
		break;
	}
	/* What is installed now, for status and the metrics. */
	snat_refresh(b);
}

void
snat_sync(struct broker *b, const char *why)
{
	struct snat *s = &b->snat;
	struct msg_netd_snat req;

	if (!b->netd_policy_set || b->shutting_down)
		return;
	/* One that is on its way reads the kernel when netd takes it: it
	 * serves this run too. */
	if (s->sync_req.active)
		return;
	memset(&req, 0, sizeof(req));
	req.to = ip_addr_from_in(snat_target(b));
	if (b->cfg.snat.enabled && ip_addr_is_unspecified(&req.to)) {
		/* No IPv4 address on the node (an IPv6-only subnet): IPv4
		 * has nothing to be translated to, and IPv6 never is (EC2
		 * has no NAT66).  Not a failure, and nothing to try again:
		 * said once, the start goes on.  An IPv6-only pod reaches
		 * IPv4 through DNS64 and a NAT gateway, not enid. */
		sync_record(b, SNAT_FAILED, "the node has no IPv4 address: "
		    "nothing to translate to");
		if (!s->no_target_said)
			log_warnx("snat: instance %s has no IPv4 address (its "
			    "primary ENI is in an IPv6-only subnet): SNAT has "
			    "nothing to translate to and is not synced; IPv6 "
			    "is never translated", b->instance.instance_id);
		s->no_target_said = true;
		return;
	}
	s->sent_to = ip_addr_in4(&req.to);
	log_debug("snat: sync (%s)", why);
	broker_request(b, &s->sync_req, &b->netd, MSG_NETD_SNAT, &req,
	    sizeof(req), SNAT_SYNC_MS, sync_answer, NULL);
}

/* A reconcile run starts: the engine's hook (reconcile.c). */
static void
snat_on_reconcile(struct broker *b)
{
	snat_sync(b, "reconcile");
}

bool
snat_start(struct broker *b)
{
	uint32_t n = b->instance.ncidrs < MSG_MAX_CIDRS ?
	    b->instance.ncidrs : MSG_MAX_CIDRS;
	char err[256];

	/* netd refuses every sync for this too; say it once, as the
	 * configuration error it is, rather than at every reconcile. */
	if (config_check_snat_vpc(&b->cfg, b->instance.cidrs, n, err,
	    sizeof(err)) == -1) {
		log_errorx("configuration: %s", err);
		broker_shutdown(b, 1, "snat.exclude does not fit the VPC");
		return false;
	}
	b->engine.on_reconcile = snat_on_reconcile;
	snat_sync(b, "start");
	return true;
}

/* ---- what is installed ---- */

struct json_object *
snat_state_json(const struct msg_netd_snat_state *st)
{
	struct json_object *o = json_object_new_object(), *list;
	char ip[IP_ADDR_STR_LEN], cidr[IP_PREFIX_STR_LEN], text[MSG_ERR_LEN];
	uint32_t i;

	json_object_object_add(o, "enabled",
	    json_object_new_boolean(st->enabled));
	json_object_object_add(o, "random_fully",
	    json_object_new_boolean(st->random_fully));
	json_object_object_add(o, "in_place",
	    json_object_new_boolean(st->in_place));
	ip_addr_format(&st->to, ip);
	json_object_object_add(o, "to", ip_addr_is_unspecified(&st->to) ?
	    NULL : json_object_new_string(ip));
	json_object_object_add(o, "primary_ifindex",
	    json_object_new_int64(st->primary_ifindex));
	json_object_object_add(o, "primary_link",
	    json_object_new_string(st->primary_link));
	json_object_object_add(o, "connmark",
	    json_object_new_int64(st->connmark));
	list = json_object_new_array();
	for (i = 0; i < st->nuntranslated && i < MSG_MAX_SNAT_CIDRS; i++) {
		ip_prefix_format(&st->untranslated[i], cidr);
		json_object_array_add(list, json_object_new_string(cidr));
	}
	json_object_object_add(o, "untranslated", list);
	json_object_object_add(o, "replaced",
	    json_object_new_int64(st->replaced));
	json_object_object_add(o, "refused",
	    json_object_new_int64(st->refused));
	json_object_object_add(o, "translated",
	    json_object_new_int64((int64_t)st->translated));
	json_object_object_add(o, "marked",
	    json_object_new_int64((int64_t)st->marked));
	/* netd's text: msg.c checked it ends within its array; what is
	 * not printable ASCII (a chain's name in it is whoever wrote the
	 * table's) goes out as '?', and json-c escapes the rest. */
	json_object_object_add(o, "message", json_object_new_string(
	    log_tame(st->message, text, sizeof(text))));
	json_object_object_add(o, "differs", st->in_place ? NULL :
	    json_object_new_string(log_tame(st->differs, text,
	    sizeof(text))));
	return o;
}

/* The broker's own side: what it last sent and how that went. */
static struct json_object *
sync_json(const struct broker *b)
{
	const struct snat *s = &b->snat;
	struct json_object *o = json_object_new_object(), *counts;
	char ip[IP4_STR_LEN];
	int i;

	counts = json_object_new_object();
	for (i = 0; i < SNAT_RESULT_COUNT; i++)
		json_object_object_add(counts, sync_result_names[i],
		    json_object_new_int64((int64_t)s->syncs[i]));
	json_object_object_add(o, "counts", counts);
	if (s->last_sync_ms == 0)
		return o;
	ip4_format(s->sent_to, ip);
	json_object_object_add(o, "to", s->sent_to == 0 ? NULL :
	    json_object_new_string(ip));
	json_object_object_add(o, "result",
	    json_object_new_string(snat_result_name(s->last_result)));
	json_object_object_add(o, "message",
	    json_object_new_string(s->last_message));
	json_object_object_add(o, "s_ago", json_object_new_int64(
	    (int64_t)((now_ms() - s->last_sync_ms) / 1000)));
	return o;
}

/*
 * status's snat section, from what the broker holds (status never waits
 * on netd): the configuration's switch, the last sync, and netd's table
 * as the last dump found it (null before any).
 */
struct json_object *
snat_status_json(const struct broker *b)
{
	const struct snat *s = &b->snat;
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "enabled",
	    json_object_new_boolean(b->cfg.snat.enabled));
	json_object_object_add(o, "sync", sync_json(b));
	json_object_object_add(o, "in_place", s->state_known ?
	    json_object_new_boolean(s->state.in_place) : NULL);
	json_object_object_add(o, "translated", s->state_known ?
	    json_object_new_int64((int64_t)s->state.translated) : NULL);
	json_object_object_add(o, "marked", s->state_known ?
	    json_object_new_int64((int64_t)s->state.marked) : NULL);
	if (s->state_known)
		json_object_object_add(o, "state_s_ago", json_object_new_int64(
		    (int64_t)((now_ms() - s->state_at_ms) / 1000)));
	return o;
}

static void
show_answer_all(struct broker *b, const char *code, const char *why)
{
	struct snat *s = &b->snat;
	struct json_object *o;
	uint32_t i;

	for (i = 0; i < s->nwaiting; i++) {
		if (code != NULL) {
			jref_error(&s->waiting[i], code, "%s", why);
			continue;
		}
		o = json_object_new_object();
		json_object_object_add(o, "ok", json_object_new_boolean(1));
		json_object_object_add(o, "snat", snat_state_json(&s->state));
		json_object_object_add(o, "sync", sync_json(b));
		jref_reply(&s->waiting[i], o);
	}
	s->nwaiting = 0;
}

static void
dump_answer(struct broker *b, void *arg, const struct msg *m, bool final)
{
	struct snat *s = &b->snat;
	struct msg_result r;
	char why[MSG_ERR_LEN + 64];

	(void)arg;
	(void)final;
	if (m == NULL) {
		if (!b->shutting_down)
			log_warnx("snat: enid-netd did not say what its table "
			    "holds within %d ms", SNAT_DUMP_MS);
		show_answer_all(b, "timeout", "enid-netd did not say what its "
		    "SNAT table holds in time");
	} else if (m->hdr.type == MSG_NETD_SNAT_STATE) {
		/* msg_recv checked it: strings ended, the count in range. */
		memcpy(&s->state, m->u.bytes, sizeof(s->state));
		s->state_known = true;
		s->state_at_ms = now_ms();
		show_answer_all(b, NULL, NULL);
	} else {
		memcpy(&r, m->u.bytes, sizeof(r));
		snprintf(why, sizeof(why), "enid-netd: %s", r.message);
		log_warnx("snat: enid-netd did not dump its table: %s",
		    r.message);
		show_answer_all(b, "netd-error", why);
	}
	metrics_snat_refreshed(b);
}

bool
snat_refresh(struct broker *b)
{
	struct snat *s = &b->snat;
	struct msg_netd_dump req;

	if (s->dump_req.active)
		return true;	/* its answer serves everyone */
	/* netd takes no request of this kind before its policy. */
	if (!b->netd_policy_set || !b->netd.ready || b->shutting_down)
		return false;
	memset(&req, 0, sizeof(req));
	broker_request(b, &s->dump_req, &b->netd, MSG_NETD_DUMP_SNAT, &req,
	    sizeof(req), SNAT_DUMP_MS, dump_answer, NULL);
	return true;
}

bool
snat_refreshing(const struct broker *b)
{
	return b->snat.dump_req.active;
}

void
snat_show(struct broker *b, struct jref *r)
{
	struct snat *s = &b->snat;

	if (!b->netd_policy_set) {
		jref_error(r, "not-ready", "enid-netd has no policy yet "
		    "(instance %s): it has no SNAT table to show",
		    instance_state_name(b->instance_state));
		return;
	}
	if (s->nwaiting == sizeof(s->waiting) / sizeof(s->waiting[0])) {
		jref_error(r, "busy", "too many show snat requests waiting");
		return;
	}
	s->waiting[s->nwaiting++] = *r;
	r->server = NULL;
	if (!snat_refresh(b))
		show_answer_all(b, "not-ready", "enid-netd cannot be asked "
		    "now");
}
