/*
 * The broker's metrics, in the Prometheus text format: what the broker
 * times itself (the answers on cni.sock, the link waits it asks enid-netd
 * for), what the pool and the engine's counters say now, and what
 * enid-cloudd counts per EC2 action (asked for with MSG_CLOUD_STATS each
 * time, so the numbers are current).
 *
 * One rendering is served two ways: as the answer to the ctl.sock op
 * "metrics" (the text, and the same samples as JSON), and, if
 * metrics_textfile is set, written every METRICS_TEXTFILE_INTERVAL_MS for
 * the node exporter's textfile collector: a temporary file in that
 * directory, renamed over the real one, through a descriptor for the
 * directory opened before the privilege drop.  enid opens no TCP port.
 *
 * Each rendering waits, as for cloudd's counters, for enid-netd's word
 * on its SNAT table (NETD_DUMP_SNAT, read from the kernel each time), so
 * the SNAT metrics are those of the scrape; if netd does not answer in
 * time, the last ones it gave are shown.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "enid.h"
#include "log.h"

#define METRICS_MAX_LABELS	4

struct label {
	const char		*name;
	const char		*value;
};

/* A rendering: the text, and the samples as JSON when someone asked. */
struct mtext {
	char			*buf;
	size_t			 len, cap;
	bool			 failed;	/* out of memory */
	struct json_object	*families;	/* NULL: text only */
	struct json_object	*samples;	/* the current family's */
};

static const char *const link_result_names[LINK_RESULT_COUNT] = {
	[LINK_FOUND] = "found",
	[LINK_NOT_FOUND] = "not-found",
	[LINK_REFUSED] = "refused",
	[LINK_FAILED] = "failed",
	[LINK_NO_ANSWER] = "no-answer",
};

/* ---- recording ---- */

void
metrics_cni_answer(struct broker *b, const struct jref *r, const char *code)
{
	struct metrics *m = &b->metrics;
	struct cni_series *s = NULL;
	uint32_t i;

	if (r->op == NULL)
		return;
	for (i = 0; i < m->ncni; i++)
		if (m->cni[i].op == r->op &&
		    strncmp(m->cni[i].code, code, METRICS_CODE_LEN - 1) == 0) {
			s = &m->cni[i];
			break;
		}
	if (s == NULL) {
		if (m->ncni == METRICS_MAX_CNI_SERIES) {
			if (m->cni_unrecorded++ == 0)
				log_warnx("metrics: more than %d kinds of CNI "
				    "answer; %s %s and later new ones are "
				    "counted only in "
				    "enid_cni_answers_unrecorded_total",
				    METRICS_MAX_CNI_SERIES, r->op, code);
			return;
		}
		s = &m->cni[m->ncni++];
		s->op = r->op;
		msg_strlcpy(s->code, code, sizeof(s->code));
	}
	msg_hist_observe(&s->latency, now_us() - r->t0_us);
}

void
metrics_link_wait(struct broker *b, const struct msg *m, uint64_t us)
{
	enum link_result res = LINK_NO_ANSWER;
	struct msg_result r;

	if (m != NULL && m->hdr.type == MSG_NETD_LINK)
		res = LINK_FOUND;
	else if (m != NULL) {
		memcpy(&r, m->u.bytes, sizeof(r));
		res = r.status == ST_NOT_FOUND ? LINK_NOT_FOUND :
		    r.status == ST_REFUSED ? LINK_REFUSED : LINK_FAILED;
	}
	msg_hist_observe(&b->metrics.link_wait[res], us);
}

/* ---- rendering ---- */

static void
mt_printf(struct mtext *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
mt_printf(struct mtext *t, const char *fmt, ...)
{
	va_list ap;
	size_t need;
	char *p;
	int n;

	if (t->failed)
		return;
	va_start(ap, fmt);
	n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	if (n < 0) {
		t->failed = true;
		return;
	}
	if ((size_t)n >= t->cap - t->len) {
		need = t->len + (size_t)n + 1;
		if (need < t->cap * 2)
			need = t->cap * 2;
		if ((p = realloc(t->buf, need)) == NULL) {
			t->failed = true;
			return;
		}
		t->buf = p;
		t->cap = need;
		va_start(ap, fmt);
		vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
	}
	t->len += (size_t)n;
}

static void
mt_family(struct mtext *t, const char *name, const char *type,
    const char *help)
{
	struct json_object *f;

	mt_printf(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
	if (t->families == NULL)
		return;
	f = json_object_new_object();
	json_object_object_add(f, "name", json_object_new_string(name));
	json_object_object_add(f, "type", json_object_new_string(type));
	json_object_object_add(f, "help", json_object_new_string(help));
	t->samples = json_object_new_array();
	json_object_object_add(f, "samples", t->samples);
	json_object_array_add(t->families, f);
}

/* A label value as the text format quotes it: backslash, double quote
 * and newline escaped. */
static void
mt_label_value(struct mtext *t, const char *v)
{
	for (; *v != '\0'; v++) {
		if (*v == '\\')
			mt_printf(t, "\\\\");
		else if (*v == '"')
			mt_printf(t, "\\\"");
		else if (*v == '\n')
			mt_printf(t, "\\n");
		else
			mt_printf(t, "%c", *v);
	}
}

/* One sample; value is its text, jv the same as JSON (taken). */
static void
mt_sample(struct mtext *t, const char *name, const struct label *l,
    size_t nl, const char *value, struct json_object *jv)
{
	struct json_object *s, *labels;
	size_t i;

	mt_printf(t, "%s", name);
	for (i = 0; i < nl; i++) {
		mt_printf(t, "%s%s=\"", i == 0 ? "{" : ",", l[i].name);
		mt_label_value(t, l[i].value);
		mt_printf(t, "\"");
	}
	mt_printf(t, "%s %s\n", nl > 0 ? "}" : "", value);
	if (t->samples == NULL) {
		json_object_put(jv);
		return;
	}
	s = json_object_new_object();
	labels = json_object_new_object();
	json_object_object_add(s, "name", json_object_new_string(name));
	for (i = 0; i < nl; i++)
		json_object_object_add(labels, l[i].name,
		    json_object_new_string(l[i].value));
	json_object_object_add(s, "labels", labels);
	json_object_object_add(s, "value", jv);
	json_object_array_add(t->samples, s);
}

static void
mt_u64(struct mtext *t, const char *name, const struct label *l, size_t nl,
    uint64_t v)
{
	char text[24];

	snprintf(text, sizeof(text), "%llu", (unsigned long long)v);
	mt_sample(t, name, l, nl, text, json_object_new_int64((int64_t)v));
}

/* Microseconds, shown as seconds without a rounding step. */
static void
mt_seconds(struct mtext *t, const char *name, const struct label *l,
    size_t nl, uint64_t us)
{
	char text[32];

	snprintf(text, sizeof(text), "%llu.%06llu",
	    (unsigned long long)(us / 1000000),
	    (unsigned long long)(us % 1000000));
	mt_sample(t, name, l, nl, text,
	    json_object_new_double((double)us / 1e6));
}

/* A family of one sample without labels. */
static void
mt_single(struct mtext *t, const char *name, const char *type,
    const char *help, uint64_t v)
{
	mt_family(t, name, type, help);
	mt_u64(t, name, NULL, 0, v);
}

/* A histogram's series: cumulative buckets up to +Inf, _sum, _count. */
static void
mt_hist(struct mtext *t, const char *name, const struct label *l, size_t nl,
    const struct msg_hist *h)
{
	struct label ll[METRICS_MAX_LABELS + 1];
	char bucket[128], sum[128], count[128], le[32];
	uint64_t cum = 0;
	size_t i;

	if (nl > METRICS_MAX_LABELS)
		fatalx("metrics: %s: too many labels (bug)", name);
	snprintf(bucket, sizeof(bucket), "%s_bucket", name);
	snprintf(sum, sizeof(sum), "%s_sum", name);
	snprintf(count, sizeof(count), "%s_count", name);
	memcpy(ll, l, nl * sizeof(*l));
	ll[nl].name = "le";
	ll[nl].value = le;
	for (i = 0; i <= MSG_HIST_NBOUNDS; i++) {
		cum += h->counts[i];
		if (i < MSG_HIST_NBOUNDS)
			snprintf(le, sizeof(le), "%g",
			    (double)msg_hist_bounds_us[i] / 1e6);
		else
			snprintf(le, sizeof(le), "+Inf");
		mt_u64(t, bucket, ll, nl + 1, cum);
	}
	mt_seconds(t, sum, l, nl, h->sum_us);
	mt_u64(t, count, l, nl, cum);
}

/*
 * Prefix delegation's gauges: whether it is in effect, the /28 prefixes
 * held and those frozen to drain.  Always there, 0 when it is off, so
 * that a query or an alert needs no other case.
 */
static void
render_prefixes(struct broker *b, struct mtext *t)
{
	static const char *const modes[] = { "on", "off", "unsupported" };
	struct engine *en = &b->engine;
	uint32_t held = 0, frozen = 0, i, k;
	uint64_t now = now_ms();
	const char *mode;
	struct label l;

	for (i = 0; i < POOL_MAX_ENIS; i++) {
		const struct eni *e = &en->enis[i];

		if (!e->used)
			continue;
		held += e->nprefixes;
		for (k = 0; k < e->nprefixes; k++)
			if (e->prefixes[k].frozen_until > now)
				frozen++;
	}
	/* Asked for while the instance is not known yet: not in effect. */
	mode = en->params.prefixes ? "on" : en->prefixes_unsupported ?
	    "unsupported" : "off";
	mt_family(t, "enid_pool_prefix_delegation", "gauge", "1 for the "
	    "mode the pool runs in: on (/28 prefixes), off (single "
	    "addresses), unsupported (pool.prefix_delegation set, but the "
	    "instance cannot hold prefixes: single addresses)");
	l.name = "mode";
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		l.value = modes[i];
		mt_u64(t, "enid_pool_prefix_delegation", &l, 1,
		    strcmp(mode, modes[i]) == 0);
	}
	mt_single(t, "enid_pool_prefixes", "gauge", "Delegated /28 prefixes "
	    "the pool holds (their addresses are in enid_pool_addresses)",
	    held);
	mt_single(t, "enid_pool_prefixes_frozen", "gauge", "Prefixes frozen "
	    "so that they drain: no new pod in them while another address "
	    "will do, until pool.prefix_freeze_s is over", frozen);
}

/*
 * Per family: the pods' addresses of each (a dual-stack pod counts in
 * both), and the /80s pods take their IPv6 addresses from.
 */
static void
render_families(struct broker *b, struct mtext *t)
{
	const struct engine *en = &b->engine;
	const struct pod *p;
	uint64_t n4 = 0, n6 = 0, p6 = 0;
	struct label l = { "family", NULL };
	uint32_t i;

	TAILQ_FOREACH(p, &en->pods, all) {
		n4 += p->ip.family != 0;
		n6 += p->ip6.family != 0;
	}
	mt_family(t, "enid_pod_addresses", "gauge", "Pods' addresses held, "
	    "by family (a dual-stack pod has one of each)");
	l.value = "ipv4";
	mt_u64(t, "enid_pod_addresses", &l, 1, n4);
	l.value = "ipv6";
	mt_u64(t, "enid_pod_addresses", &l, 1, n6);
	for (i = 0; i < POOL_MAX_ENIS; i++)
		p6 += en->enis[i].used &&
		    en->enis[i].prefix6.family == AF_INET6;
	mt_single(t, "enid_pool_ipv6_prefixes", "gauge", "ENIs' /80 prefixes "
	    "the pods' IPv6 addresses come from (one an ENI; none with "
	    "ip_family ipv4)", p6);
}

static void
render_pool(struct broker *b, struct mtext *t)
{
	struct engine *en = &b->engine;
	uint32_t nstate[ENI_STATE_COUNT] = { 0 };
	uint32_t free_, assigned, cooling, other, i;
	struct pool_limits lim;
	struct label l;

	engine_counts(b, &free_, &assigned, &cooling, &other);
	mt_family(t, "enid_pool_addresses", "gauge", "Secondary addresses "
	    "the pool holds, by state: free (ready to hand out), assigned, "
	    "cooling (released, not reused yet), other (on ENIs that are "
	    "not ready, or being added or removed)");
	l.name = "state";
	l.value = "free";
	mt_u64(t, "enid_pool_addresses", &l, 1, free_);
	l.value = "assigned";
	mt_u64(t, "enid_pool_addresses", &l, 1, assigned);
	l.value = "cooling";
	mt_u64(t, "enid_pool_addresses", &l, 1, cooling);
	l.value = "other";
	mt_u64(t, "enid_pool_addresses", &l, 1, other);

	for (i = 0; i < POOL_MAX_ENIS; i++)
		if (en->enis[i].used && en->enis[i].state < ENI_STATE_COUNT)
			nstate[en->enis[i].state]++;
	mt_family(t, "enid_enis", "gauge", "ENIs the pool knows, the "
	    "primary included, by state");
	/* By the word each state is shown as, once each, in the order of
	 * the states (new is not yet in the pool). */
	for (i = ENI_NEW + 1; i < ENI_STATE_COUNT; i++) {
		const char *word = eni_state_shown(i);
		uint32_t n = 0, j;

		for (j = ENI_NEW + 1; j < i; j++)
			if (strcmp(eni_state_shown(j), word) == 0)
				break;
		if (j < i)
			continue;	/* counted with the first */
		for (j = i; j < ENI_STATE_COUNT; j++)
			if (strcmp(eni_state_shown(j), word) == 0)
				n += nstate[j];
		l.value = word;
		mt_u64(t, "enid_enis", &l, 1, n);
	}
	mt_single(t, "enid_cloud_attached_enis", "gauge", "ENIs attached to "
	    "this instance as the cloud last listed them",
	    en->cloud_attached);
	mt_single(t, "enid_cloud_unanswered_seconds", "gauge", "Seconds "
	    "since the cloud last answered a call (since the start, if it "
	    "never has): an outage makes it grow",
	    (now_ms() - (en->cloud_answered_at ? en->cloud_answered_at :
	    b->started_ms)) / 1000);
	mt_single(t, "enid_pods", "gauge", "Pod attachments holding an "
	    "address", en->npods);
	render_families(b, t);
	mt_single(t, "enid_adds_waiting", "gauge", "ADDs waiting for the "
	    "pool to grow", en->nwaiters);
	if (pool_limits(b, &lim)) {
		mt_single(t, "enid_pool_max_enis", "gauge", "ENIs the pool "
		    "may attach, the primary included (the instance's limit, "
		    "or pool.max_enis if lower)", lim.max_enis);
		mt_single(t, "enid_pool_max_pods", "gauge", "Addresses the "
		    "pool may hand to pods (the ENIs' capacity, in /28 "
		    "prefixes with prefix delegation, or pool.max_pods if "
		    "lower)", lim.max_pods);
	}
	render_prefixes(b, t);
}

static void
render_cni(struct broker *b, struct mtext *t)
{
	struct metrics *m = &b->metrics;
	struct label l[2];
	uint32_t i;

	mt_family(t, "enid_cni_request_duration_seconds", "histogram",
	    "Time from a request on cni.sock to its answer (checkpoint write "
	    "included), by op and answer code (\"ok\" or the error's code)");
	l[0].name = "op";
	l[1].name = "code";
	for (i = 0; i < m->ncni; i++) {
		l[0].value = m->cni[i].op;
		l[1].value = m->cni[i].code;
		mt_hist(t, "enid_cni_request_duration_seconds", l, 2,
		    &m->cni[i].latency);
	}
	mt_single(t, "enid_cni_answers_unrecorded_total", "counter",
	    "Answers on cni.sock of a kind that found no series left",
	    m->cni_unrecorded);
}

static void
render_netd(struct broker *b, struct mtext *t)
{
	struct label l;
	int i;

	mt_family(t, "enid_netd_link_wait_seconds", "histogram", "Time from "
	    "the broker asking enid-netd for an ENI's link to the answer "
	    "(netd's retries included), by result");
	l.name = "result";
	for (i = 0; i < LINK_RESULT_COUNT; i++) {
		l.value = link_result_names[i];
		mt_hist(t, "enid_netd_link_wait_seconds", &l, 1,
		    &b->metrics.link_wait[i]);
	}
}

/* cloudd's entries, one per action name (it sends DescribeInstances
 * twice: the instance's own description and the leak collector's
 * existence check). */
static uint32_t
cloud_merged(const struct msg_cloud_stats_answer *a,
    struct msg_cloud_action_stats *out)
{
	uint32_t i, j, n = 0;

	for (i = 0; i < a->nactions && i < MSG_STATS_ACTIONS; i++) {
		const struct msg_cloud_action_stats *s = &a->actions[i];

		for (j = 0; j < n; j++)
			if (strcmp(out[j].action, s->action) == 0)
				break;
		if (j == n)
			memset(&out[n++], 0, sizeof(*out));
		msg_strlcpy(out[j].action, s->action, sizeof(out[j].action));
		out[j].calls += s->calls;
		out[j].errors += s->errors;
		out[j].throttles += s->throttles;
		out[j].retries += s->retries;
		msg_hist_add(&out[j].latency, &s->latency);
	}
	return n;
}

static void
render_cloud(struct broker *b, struct mtext *t)
{
	static struct msg_cloud_action_stats acts[MSG_STATS_ACTIONS];
	static const struct {
		const char *name, *help;
		size_t off;
	} counters[] = {
		{ "enid_cloud_requests_total", "EC2 API requests sent (each "
		  "attempt), by action",
		  offsetof(struct msg_cloud_action_stats, calls) },
		{ "enid_cloud_errors_total", "EC2 API requests that ended "
		  "other than ok (throttled included), by action",
		  offsetof(struct msg_cloud_action_stats, errors) },
		{ "enid_cloud_throttles_total", "EC2 API requests the cloud "
		  "throttled, by action",
		  offsetof(struct msg_cloud_action_stats, throttles) },
		{ "enid_cloud_retries_total", "EC2 API requests sent again "
		  "after an error, by action",
		  offsetof(struct msg_cloud_action_stats, retries) },
	};
	struct label l;
	uint32_t n, i, k;

	if (!b->metrics.cloud_known)
		return;		/* cloudd never answered: no numbers */
	n = cloud_merged(&b->metrics.cloud, acts);
	l.name = "action";
	for (k = 0; k < sizeof(counters) / sizeof(counters[0]); k++) {
		mt_family(t, counters[k].name, "counter", counters[k].help);
		for (i = 0; i < n; i++) {
			uint64_t v;

			memcpy(&v, (const char *)&acts[i] + counters[k].off,
			    sizeof(v));
			l.value = acts[i].action;
			mt_u64(t, counters[k].name, &l, 1, v);
		}
	}
	mt_family(t, "enid_cloud_request_duration_seconds", "histogram",
	    "Time an EC2 API request took (each attempt), by action");
	for (i = 0; i < n; i++) {
		l.value = acts[i].action;
		mt_hist(t, "enid_cloud_request_duration_seconds", &l, 1,
		    &acts[i].latency);
	}
}

static void
render_engine(struct broker *b, struct mtext *t)
{
	const struct engine_stats *s = &b->engine.stats;
	struct store_stats saves;
	struct label l;

	mt_single(t, "enid_quarantines_total", "counter", "ENIs quarantined "
	    "(set-up failed or the cloud disagreed; never used, removed)",
	    s->quarantines);
	mt_single(t, "enid_reconcile_drifts_fixed_total", "counter",
	    "Differences between the pool and the cloud or the kernel that "
	    "reconciliation corrected", s->drifts_fixed);
	mt_single(t, "enid_leaked_enis_deleted_total", "counter", "Leaked "
	    "ENIs (available, tagged by enid, past leak_gc.grace_s) deleted",
	    s->leaks_deleted);
	mt_single(t, "enid_reconciles_total", "counter", "Reconciliation "
	    "runs finished, failed ones included", s->reconciles);
	mt_single(t, "enid_enis_created_total", "counter", "ENIs created",
	    s->enis_created);
	mt_single(t, "enid_enis_deleted_total", "counter", "ENIs deleted "
	    "by the pool (leaks not included)", s->enis_deleted);
	mt_family(t, "enid_prefix_fallbacks_total", "counter", "Prefix "
	    "delegation's fallbacks, by reason: no-prefix (a subnet had no "
	    "free aligned /28: InsufficientCidrBlocks; it is asked for single "
	    "addresses for pool.prefix_backoff_s), singles (growth plans "
	    "that took single addresses where prefixes were wanted)");
	l.name = "reason";
	l.value = "no-prefix";
	mt_u64(t, "enid_prefix_fallbacks_total", &l, 1, s->pfx_no_prefix);
	l.value = "singles";
	mt_u64(t, "enid_prefix_fallbacks_total", &l, 1, s->pfx_singles);
	mt_single(t, "enid_prefixes_refused_total", "counter", "Prefixes the "
	    "cloud named that enid's checks refused (not aligned, outside "
	    "the subnet, or another ENI's): never used", s->pfx_refused);
	mt_single(t, "enid_prefix_freezes_total", "counter", "Prefixes "
	    "frozen so that they drain (a prefix's worth of surplus and no "
	    "prefix wholly free to give back)", s->pfx_frozen);
	store_stats(b->store, &saves);
	mt_single(t, "enid_checkpoint_writes_total", "counter", "Checkpoint "
	    "writes, each made durable (journal records and snapshots)",
	    saves.writes);
	mt_single(t, "enid_checkpoint_compactions_total", "counter",
	    "Checkpoint snapshots written whole (journal full, or a start)",
	    saves.compactions);
	mt_single(t, "enid_checkpoint_failures_total", "counter",
	    "Checkpoint writes that failed", saves.failures);
}

/*
 * SNAT and NodePort replies (snat.c): the switch from the configuration,
 * the rest from netd's last reading of its table (read on this scrape,
 * unless netd did not answer: then the one before; 0 before any).  The
 * connection counts are the nftables rules' counters: a nat chain sees
 * a connection's first packet only, so packets are connections.
 */
static void
render_snat(struct broker *b, struct mtext *t)
{
	const struct snat *s = &b->snat;
	const struct msg_netd_snat_state *st = &s->state;
	bool known = s->state_known;
	struct label l;
	int i;

	mt_single(t, "enid_snat_enabled", "gauge", "1 if snat.enabled: pods' "
	    "traffic beyond the VPC leaves the primary link translated to "
	    "the node's primary address", b->cfg.snat.enabled);
	mt_single(t, "enid_snat_in_place", "gauge", "1 if enid-netd read its "
	    "nftables table back as its configuration wants it (SNAT, or "
	    "only the NodePort marks with SNAT off) and found its "
	    "connection-mark rule; 0 if not, or not known yet",
	    known && st->in_place);
	mt_single(t, "enid_snat_translated_connections_total", "counter",
	    "Connections of pods translated to the node's primary address "
	    "(the snat rules' counters)", known ? st->translated : 0);
	mt_single(t, "enid_connmark_marked_connections_total", "counter",
	    "Connections that arrived on the primary link for the node "
	    "(NodePort, host network) and were marked so that their replies "
	    "leave by it", known ? st->marked : 0);
	mt_single(t, "enid_snat_table_replaced_total", "counter", "Times "
	    "enid-netd wrote its nftables table whole (absent at start, or "
	    "found to differ)", known ? st->replaced : 0);
	mt_single(t, "enid_snat_refused_total", "counter", "SNAT syncs "
	    "enid-netd refused (a target that is not the node's primary "
	    "address, or SNAT switched against its configuration)",
	    known ? st->refused : 0);
	mt_single(t, "enid_pod_ipv6_source_check_in_place", "gauge", "1 if "
	    "enid-netd read its table ip6 enid (a pod's veth may send IPv6 "
	    "only from that pod's addresses) back as it writes it; 0 if not, "
	    "or not known yet", known && st->src6_in_place);
	mt_single(t, "enid_pod_ipv6_source_dropped_total", "counter", "IPv6 "
	    "packets from a pod's veth with a source that is not that pod's, "
	    "dropped", known ? st->src6_dropped : 0);
	mt_single(t, "enid_pod_ipv6_source_check_replaced_total", "counter",
	    "Times enid-netd wrote its table ip6 enid whole (absent, or "
	    "found to differ)", known ? st->src6_replaced : 0);
	mt_family(t, "enid_snat_syncs_total", "counter", "SNAT syncs the "
	    "broker asked enid-netd for (after its policy, and at each "
	    "reconcile run), by result");
	l.name = "result";
	for (i = 0; i < SNAT_RESULT_COUNT; i++) {
		l.value = snat_result_name((enum snat_result)i);
		mt_u64(t, "enid_snat_syncs_total", &l, 1, s->syncs[i]);
	}
}

static void
render(struct broker *b, struct mtext *t)
{
	struct label l = { "version", VERSION };

	mt_family(t, "enid_build_info", "gauge", "The running enid's "
	    "version, as a label; the value is always 1");
	mt_u64(t, "enid_build_info", &l, 1, 1);
	mt_single(t, "enid_start_time_seconds", "gauge", "When the running "
	    "enid started, in seconds since the epoch",
	    (uint64_t)b->engine.started_wall);
	render_pool(b, t);
	render_cni(b, t);
	render_netd(b, t);
	render_cloud(b, t);
	render_engine(b, t);
	render_snat(b, t);
}

/* ---- the textfile ---- */

static void
textfile_failed(struct broker *b, const char *what, int err)
{
	struct metrics *m = &b->metrics;

	unlinkat(m->textfile_dirfd, m->textfile_tmp, 0);
	if (m->textfile_errno == err)
		return;		/* said already */
	m->textfile_errno = err;
	log_warnx("metrics: %s %s: %s; trying again every %g s", what,
	    b->cfg.metrics_textfile, strerror(err),
	    METRICS_TEXTFILE_INTERVAL_MS / 1000.0);
}

/* The new text under a temporary name, then renamed over the old: the
 * collector reads one whole rendering or the one before. */
static void
textfile_write(struct broker *b, const char *text, size_t len)
{
	struct metrics *m = &b->metrics;
	size_t off = 0;
	ssize_t n;
	int fd;

	if (unlinkat(m->textfile_dirfd, m->textfile_tmp, 0) == -1 &&
	    errno != ENOENT) {
		textfile_failed(b, "removing the temporary file beside", errno);
		return;
	}
	fd = openat(m->textfile_dirfd, m->textfile_tmp, O_WRONLY | O_CREAT |
	    O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd == -1) {
		textfile_failed(b, "creating a temporary file beside", errno);
		return;
	}
	/* The collector runs as another user: readable whatever our umask. */
	if (fchmod(fd, 0644) == -1) {
		textfile_failed(b, "setting the mode of the file beside",
		    errno);
		close(fd);
		return;
	}
	while (off < len) {
		n = write(fd, text + off, len - off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			textfile_failed(b, "writing the file beside",
			    n == 0 ? EIO : errno);
			close(fd);
			return;
		}
		off += (size_t)n;
	}
	if (close(fd) == -1) {
		textfile_failed(b, "writing the file beside", errno);
		return;
	}
	if (renameat(m->textfile_dirfd, m->textfile_tmp, m->textfile_dirfd,
	    m->textfile_name) == -1) {
		textfile_failed(b, "renaming the temporary file to", errno);
		return;
	}
	if (m->textfile_errno != 0)
		log_info("metrics: %s written again", b->cfg.metrics_textfile);
	m->textfile_errno = 0;
}

/* ---- publishing ---- */

static void
publish(struct broker *b)
{
	struct metrics *m = &b->metrics;
	struct mtext t;
	struct json_object *o;
	uint32_t i;

	memset(&t, 0, sizeof(t));
	if (m->nwaiting > 0)
		t.families = json_object_new_array();
	render(b, &t);
	if (t.failed) {
		for (i = 0; i < m->nwaiting; i++)
			jref_error(&m->waiting[i], "internal", "out of memory "
			    "rendering the metrics");
		m->nwaiting = 0;
		m->textfile_due = false;
		json_object_put(t.families);
		free(t.buf);
		log_warnx("metrics: out of memory rendering them");
		return;
	}
	for (i = 0; i < m->nwaiting; i++) {
		o = json_object_new_object();
		json_object_object_add(o, "ok", json_object_new_boolean(1));
		json_object_object_add(o, "text",
		    json_object_new_string_len(t.buf, (int)t.len));
		json_object_object_add(o, "metrics",
		    json_object_get(t.families));
		jref_reply(&m->waiting[i], o);
	}
	m->nwaiting = 0;
	if (m->textfile_due && m->textfile_dirfd != -1)
		textfile_write(b, t.buf, t.len);
	m->textfile_due = false;
	json_object_put(t.families);
	free(t.buf);
}

/* Publish once nothing a rendering waits for is on its way. */
static void
publish_when_in(struct broker *b)
{
	struct metrics *m = &b->metrics;

	if (!m->gathering || m->stats_req.active || snat_refreshing(b))
		return;
	m->gathering = false;
	publish(b);
}

static void
stats_answer(struct broker *b, void *arg, const struct msg *msg, bool final)
{
	(void)arg;
	(void)final;
	/* msg_recv checked it: names, counts, and that the counters agree. */
	if (msg != NULL) {
		memcpy(&b->metrics.cloud, msg->u.bytes,
		    sizeof(b->metrics.cloud));
		b->metrics.cloud_known = true;
	} else
		log_debug("metrics: enid-cloudd's counters did not come; "
		    "the last ones are shown");
	publish_when_in(b);
}

/*
 * Ask cloudd for its counters and netd for its SNAT table, at once;
 * whoever waits is answered when both are in (or their deadlines passed).
 */
static void
stats_fetch(struct broker *b)
{
	struct metrics *m = &b->metrics;
	struct msg_cloud_stats req;

	m->gathering = true;
	if (!m->stats_req.active && b->cloudd.ready && !b->shutting_down) {
		memset(&req, 0, sizeof(req));
		broker_request(b, &m->stats_req, &b->cloudd, MSG_CLOUD_STATS,
		    &req, sizeof(req), METRICS_STATS_WAIT_MS, stats_answer,
		    NULL);
	}
	(void)snat_refresh(b);
	publish_when_in(b);
}

void
metrics_snat_refreshed(struct broker *b)
{
	publish_when_in(b);
}

void
metrics_request(struct broker *b, struct jref *r)
{
	struct metrics *m = &b->metrics;

	/* One request per client at a time: the ctl clients' number. */
	if (m->nwaiting == sizeof(m->waiting) / sizeof(m->waiting[0])) {
		jref_error(r, "busy", "too many metrics requests waiting");
		return;
	}
	m->waiting[m->nwaiting++] = *r;
	r->server = NULL;
	stats_fetch(b);
}

static void
textfile_timer_cb(struct loop *l, struct loop_timer *t)
{
	struct broker *b = t->arg;

	b->metrics.textfile_due = true;
	loop_timer_after(l, t, METRICS_TEXTFILE_INTERVAL_MS);
	stats_fetch(b);
}

void
metrics_init(struct broker *b)
{
	b->metrics.textfile_dirfd = -1;
	loop_timer_init(&b->metrics.textfile_timer, textfile_timer_cb, b);
}

int
metrics_open_textfile(struct broker *b, char *err, size_t errlen)
{
	struct metrics *m = &b->metrics;
	const char *path = b->cfg.metrics_textfile, *slash;
	char dir[CONF_PATH_LEN];
	int fd;

	if (path[0] == '\0')
		return 0;
	/* The configuration checked it: absolute, a name ending ".prom". */
	slash = strrchr(path, '/');
	snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 :
	    (int)(slash - path), path);
	snprintf(m->textfile_name, sizeof(m->textfile_name), "%s", slash + 1);
	snprintf(m->textfile_tmp, sizeof(m->textfile_tmp), ".%s.tmp",
	    slash + 1);
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "metrics_textfile: directory %s: %s", dir,
		    strerror(errno));
		return -1;
	}
	m->textfile_dirfd = fd;
	return 0;
}

void
metrics_start(struct broker *b)
{
	if (b->metrics.textfile_dirfd != -1)
		loop_timer_after(&b->loop, &b->metrics.textfile_timer, 0);
}
