/*
 * The call engine of enid-cloudd: every EC2 and IMDS call goes through
 * here.  It holds the credentials (config, AWS_* environment, or IMDS role
 * credentials refreshed before they expire), the IMDSv2 token, the region
 * and endpoints; it signs EC2 calls with SigV4, spaces them with a token
 * bucket per action class, retries throttled and transient failures with
 * full-jitter backoff, and gives up at each call's deadline.
 *
 * A call's life: parked (waiting for the token, region or credentials)
 * -> queued (waiting for its class's bucket) -> in flight -> done, or
 * backoff -> queued again.  Its deadline timer ends it from any state.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "addr.h"
#include "cloudd.h"
#include "log.h"

static void	call_submit(struct cloud_call *c);
static void	call_finish(struct cloud_call *c,
		    const struct msg_cloud_status *st,
		    const struct ec2_answer *a);
static void	boot_run(struct cloudd *cd);

void
cloud_status(struct msg_cloud_status *st, enum cloud_outcome outcome,
    const char *code, const char *fmt, ...)
{
	va_list ap;

	memset(st, 0, sizeof(*st));
	st->outcome = outcome;
	msg_strlcpy(st->code, code, sizeof(st->code));
	va_start(ap, fmt);
	vsnprintf(st->message, sizeof(st->message), fmt, ap);
	va_end(ap);
	ec2_sanitize(st->message);
}

static uint32_t
rand32(void)
{
	uint32_t r;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = (uint32_t)now_ms() * 2654435761u;
	return r;
}

static enum rate_class
class_of(enum ec2_action a)
{
	return ec2_action_mutating(a) ? RC_MUTATING : RC_DESCRIBE;
}

static const char *
call_name(const struct cloud_call *c)
{
	return c->kind == CALL_EC2 ? ec2_action_name(c->action) : c->imds_path;
}

static struct cloud_counters *
counters_of(struct cloudd *cd, const struct cloud_call *c)
{
	return &cd->counters[c->kind == CALL_EC2 ? c->action : COUNTERS_IMDS];
}

/* ---- readiness ---- */

static bool
imds_token_ok(const struct cloudd *cd)
{
	return cd->imds_token[0] != '\0' && now_ms() < cd->imds_token_renew;
}

static bool
creds_fresh(const struct cloudd *cd)
{
	if (!cd->creds_ok)
		return false;
	/* A second of margin: a refresh normally comes long before (at
	 * 60% of the lifetime), this only stops sending dead ones. */
	return cd->creds.expiration == 0 ||
	    time(NULL) + 1 < cd->creds.expiration;
}

static bool
call_ready(const struct cloud_call *c)
{
	const struct cloudd *cd = c->cd;

	if (c->kind == CALL_IMDS)
		return imds_token_ok(cd);
	return cd->ec2_url[0] != '\0' && cd->region[0] != '\0' &&
	    creds_fresh(cd);
}

static void
set_ec2_url(struct cloudd *cd)
{
	if (cd->ec2_url[0] != '\0' || cd->region[0] == '\0')
		return;
	snprintf(cd->ec2_url, sizeof(cd->ec2_url),
	    "https://ec2.%s.amazonaws.com/", cd->region);
	log_info("cloud: region %s, EC2 endpoint %s", cd->region, cd->ec2_url);
}

/* Run every parked call whose prerequisites are now there.  They move to
 * a list of our own first: submitting one may run callbacks that park or
 * unpark others. */
static void
unpark(struct cloudd *cd)
{
	struct call_list ready;
	struct cloud_call *c, *next;

	TAILQ_INIT(&ready);
	for (c = TAILQ_FIRST(&cd->parked); c != NULL; c = next) {
		next = TAILQ_NEXT(c, entry);
		if (!call_ready(c))
			continue;
		TAILQ_REMOVE(&cd->parked, c, entry);
		TAILQ_INSERT_TAIL(&ready, c, entry);
		c->state = CS_NEW;
	}
	while ((c = TAILQ_FIRST(&ready)) != NULL) {
		TAILQ_REMOVE(&ready, c, entry);
		call_submit(c);
	}
}

/* ---- the buckets ---- */

static void	start_attempt(struct cloud_call *c);
static void	park(struct cloud_call *c);

static void
pump(struct cloudd *cd, enum rate_class rc)
{
	struct cloud_call *c;
	uint64_t now;
	int budget;

	for (budget = 0; budget < 1024; budget++) {
		if ((c = TAILQ_FIRST(&cd->queues[rc])) == NULL)
			return;
		if (!call_ready(c)) {
			/* Credentials went stale while it waited. */
			TAILQ_REMOVE(&cd->queues[rc], c, entry);
			park(c);
			continue;
		}
		now = now_ms();
		/* rate.enabled false: no client-side limit at all (for
		 * comparison with SDK defaults, which have none). */
		if (cd->cfg.cloud.rate_enabled &&
		    !rl_take(&cd->buckets[rc], now)) {
			loop_timer_after(&cd->loop, &cd->bucket_timers[rc],
			    rl_wait_ms(&cd->buckets[rc], now));
			return;
		}
		TAILQ_REMOVE(&cd->queues[rc], c, entry);
		c->state = CS_NEW;
		start_attempt(c);
	}
	loop_timer_after(&cd->loop, &cd->bucket_timers[rc], 0);
}

static void
bucket_timer_cb(struct loop *l, struct loop_timer *t)
{
	struct cloudd *cd = t->arg;

	(void)l;
	pump(cd, t == &cd->bucket_timers[RC_MUTATING] ? RC_MUTATING :
	    RC_DESCRIBE);
}

/* ---- one attempt ---- */

static void	attempt_done(struct http_req *r, void *arg);

static int
build_ec2_req(struct cloud_call *c)
{
	struct cloudd *cd = c->cd;
	struct http_req *r = &c->req;
	char hdr[CREDS_TOKEN_LEN + 32];
	struct curl_slist *l;

	snprintf(r->url, sizeof(r->url), "%s", cd->ec2_url);
	r->method = HTTP_POST;
	r->body = c->form.buf;
	r->bodylen = c->form.len;
	r->max_body = EC2_MAX_BODY;
	r->protocols = cd->ec2_protocols;
	/* Set by hand so that SigV4 signs them: curl signs the headers it
	 * is given, not the Content-Type it would add by itself. */
	l = curl_slist_append(NULL, "Content-Type: "
	    "application/x-www-form-urlencoded; charset=utf-8");
	if (l == NULL)
		return -1;
	r->headers = l;
	if (cd->creds.session_token[0] != '\0') {
		snprintf(hdr, sizeof(hdr), "X-Amz-Security-Token: %s",
		    cd->creds.session_token);
		if ((l = curl_slist_append(r->headers, hdr)) == NULL)
			return -1;
		r->headers = l;
	}
	snprintf(r->sigv4, sizeof(r->sigv4), "aws:amz:%s:ec2", cd->region);
	snprintf(r->userpwd, sizeof(r->userpwd), "%s:%s",
	    cd->creds.access_key_id, cd->creds.secret_access_key);
	c->creds_gen = cd->creds_gen;
	return 0;
}

static int
build_imds_req(struct cloud_call *c)
{
	struct cloudd *cd = c->cd;
	struct http_req *r = &c->req;
	char hdr[300];

	if (snprintf(r->url, sizeof(r->url), "%.255s/latest/%.200s",
	    cd->imds_url, c->imds_path) >= (int)sizeof(r->url))
		return -1;
	r->method = HTTP_GET;
	r->max_body = CLOUDD_IMDS_MAX_BODY;
	r->protocols = "http,https";
	r->no_proxy = true;
	snprintf(hdr, sizeof(hdr), "X-aws-ec2-metadata-token: %s",
	    cd->imds_token);
	if ((r->headers = curl_slist_append(NULL, hdr)) == NULL)
		return -1;
	return 0;
}

/*
 * An IMDS attempt's time limit: the configured one, doubled for every IMDS
 * attempt that ran out of time so far, up to a minute.  A metadata service
 * slower than the configured limit is waited for longer each time, not
 * given up on for good (issue 27: at 12 s an answer, a fixed 2 s limit
 * never started enid).
 */
static uint64_t
imds_timeout(const struct cloudd *cd)
{
	uint64_t ms = cd->cfg.cloud.imds_timeout_ms;
	unsigned n;

	for (n = 0; n < cd->imds_timeouts && ms < CLOUDD_IMDS_TIMEOUT_MAX_MS;
	    n++)
		ms *= 2;
	return ms < CLOUDD_IMDS_TIMEOUT_MAX_MS ? ms :
	    CLOUDD_IMDS_TIMEOUT_MAX_MS;
}

static void
start_attempt(struct cloud_call *c)
{
	struct cloudd *cd = c->cd;
	struct msg_cloud_status st;
	uint64_t now = now_ms(), left;
	int rc;

	if (now >= c->deadline) {
		cloud_status(&st, CO_TRANSIENT, "", "%s: deadline passed "
		    "before attempt %u", call_name(c), c->attempt + 1);
		call_finish(c, c->has_last ? &c->last : &st, NULL);
		return;
	}
	left = c->deadline - now;
	http_req_release(&c->req);
	memset(&c->req, 0, sizeof(c->req));
	c->req.timeout_ms = left < cd->cfg.cloud.timeout_ms ? left :
	    cd->cfg.cloud.timeout_ms;
	if (c->kind == CALL_IMDS && c->req.timeout_ms > imds_timeout(cd))
		c->req.timeout_ms = imds_timeout(cd);
	c->req.done = attempt_done;
	c->req.arg = c;
	rc = c->kind == CALL_EC2 ? build_ec2_req(c) : build_imds_req(c);
	if (rc == 0)
		rc = http_start(&cd->http, &c->req);
	if (rc == -1) {
		cloud_status(&st, CO_TRANSIENT, "", "%s: cannot start the "
		    "request: %s", call_name(c), c->req.errbuf[0] ?
		    c->req.errbuf : "out of memory");
		call_finish(c, &st, NULL);
		return;
	}
	c->state = CS_INFLIGHT;
	c->attempt_start = now;
	c->attempt_start_us = now_us();
	counters_of(cd, c)->calls++;
}

static void
backoff_timer_cb(struct loop *l, struct loop_timer *t)
{
	struct cloud_call *c = t->arg;

	(void)l;
	c->state = CS_NEW;
	call_submit(c);
}

static void
deadline_timer_cb(struct loop *l, struct loop_timer *t)
{
	struct cloud_call *c = t->arg;
	struct cloudd *cd = c->cd;
	struct msg_cloud_status st;

	(void)l;
	switch (c->state) {
	case CS_QUEUED:
		cloud_status(&st, CO_THROTTLED, "", "%s: deadline passed "
		    "waiting for the client rate limit (%s calls)",
		    call_name(c), ec2_action_mutating(c->action) ?
		    "mutating" : "describe");
		break;
	case CS_PARKED:
		cloud_status(&st, CO_TRANSIENT, "", "%s: deadline passed "
		    "waiting for %s%s%.150s", call_name(c),
		    c->kind == CALL_IMDS ? "an IMDS token" :
		    "credentials and region", cd->boot_err[0] ? ": " : "",
		    cd->boot_err);
		break;
	case CS_INFLIGHT:
		cloud_status(&st, CO_TRANSIENT, "", "%s: deadline passed "
		    "with attempt %u in flight", call_name(c), c->attempt + 1);
		break;
	default:
		cloud_status(&st, CO_TRANSIENT, "", "%s: deadline passed "
		    "after %u attempts", call_name(c), c->attempt);
		break;
	}
	if (c->has_last && c->state != CS_PARKED) {
		char was[MSG_ERR_LEN];

		/* Say why the earlier attempts failed: that is the cause. */
		snprintf(was, sizeof(was), "%s", c->last.message);
		st = c->last;
		snprintf(st.message, sizeof(st.message), "gave up at the "
		    "deadline after %u attempts; last: %.180s", c->attempt, was);
	}
	call_finish(c, &st, NULL);
}

/* Fill st from a finished attempt; say whether and how to retry. */
static enum ec2_retry
judge_ec2(struct cloud_call *c, struct msg_cloud_status *st,
    struct ec2_answer *a, bool *parsed)
{
	struct http_req *r = &c->req;
	enum ec2_retry retry;
	char err[256];

	*parsed = false;
	if (ec2_parse(c->action, r->resp ? r->resp : "", r->resplen, a, err,
	    sizeof(err)) == -1) {
		if (r->status >= 500) {
			cloud_status(st, CO_TRANSIENT, "", "%s: HTTP %ld with "
			    "an unreadable body (%s)", call_name(c), r->status,
			    err);
			log_errorx("%s", st->message);
			return EC2_RETRY_IDEMPOTENT;
		}
		cloud_status(st, r->status == 200 ? CO_TRANSIENT : CO_FATAL, "",
		    "%s: HTTP %ld, unusable answer: %s", call_name(c),
		    r->status, err);
		log_errorx("%s", st->message);
		return EC2_RETRY_NO;
	}
	*parsed = true;
	if (!a->is_error) {
		if (r->status != 200) {
			cloud_status(st, CO_FATAL, "", "%s: HTTP %ld with a "
			    "success body", call_name(c), r->status);
			log_errorx("%s", st->message);
			return EC2_RETRY_NO;
		}
		cloud_status(st, CO_OK, "", "%s", "");
		if (ec2_request_id_ok(a->request_id))
			msg_strlcpy(st->request_id, a->request_id,
			    sizeof(st->request_id));
		return EC2_RETRY_NO;
	}
	if (!ec2_code_ok(a->code))
		msg_strlcpy(a->code, "Unknown", sizeof(a->code));
	ec2_sanitize(a->message);
	if (c->form.ipv6) {
		bool known;

		st->outcome = ec2_classify_ipv6(c->action, c->form.prefixes,
		    (unsigned)r->status, a->code, a->message, &retry, &known);
		if (!known)
			log_warnx("%s: IPv6 request refused with a code enid "
			    "does not know, HTTP %ld %s: %.200s; taken as "
			    "fatal, not retried", call_name(c), r->status,
			    a->code, a->message);
	} else {
		st->outcome = ec2_classify(c->action, c->form.prefixes,
		    (unsigned)r->status, a->code, a->message, &retry);
	}
	cloud_status(st, st->outcome, a->code, "%s: %s", call_name(c),
	    a->message);
	st->http_status = (uint32_t)r->status;
	if (ec2_request_id_ok(a->request_id))
		msg_strlcpy(st->request_id, a->request_id,
		    sizeof(st->request_id));
	return retry;
}

static enum ec2_retry
judge_transport(struct cloud_call *c, struct msg_cloud_status *st)
{
	struct http_req *r = &c->req;

	/* An answer too large or too slow is the endpoint's doing (or
	 * whoever sits in its place): an error line, whatever comes of the
	 * call. */
	if (r->oversize || r->cc == CURLE_FILESIZE_EXCEEDED) {
		cloud_status(st, CO_TRANSIENT, "", "%s: answer over the "
		    "%zu-byte cap; refused", call_name(c), r->max_body);
		log_errorx("%s", st->message);
		return EC2_RETRY_NO;
	}
	if (r->cc == CURLE_OPERATION_TIMEDOUT) {
		if (c->kind == CALL_IMDS)
			c->cd->imds_timeouts++;
		cloud_status(st, CO_TRANSIENT, "", "%s: no complete answer "
		    "within %llu ms (%s)", call_name(c),
		    (unsigned long long)r->timeout_ms, r->errbuf);
		log_errorx("%s", st->message);
		return EC2_RETRY_IDEMPOTENT;
	}
	cloud_status(st, CO_TRANSIENT, "", "%s: %s", call_name(c), r->errbuf);
	/* Nothing reached the server: any call may be repeated. */
	if (r->cc == CURLE_COULDNT_CONNECT ||
	    r->cc == CURLE_COULDNT_RESOLVE_HOST)
		return EC2_RETRY_ALWAYS;
	if (r->cc == CURLE_SSL_CACERT || r->cc == CURLE_PEER_FAILED_VERIFICATION
	    || r->cc == CURLE_UNSUPPORTED_PROTOCOL || r->cc == CURLE_URL_MALFORMAT) {
		st->outcome = CO_FATAL;
		return EC2_RETRY_NO;
	}
	return EC2_RETRY_IDEMPOTENT;
}

static void
invalidate_creds(struct cloudd *cd)
{
	if (!cd->creds_from_imds)
		return;
	cd->creds_ok = false;
	loop_timer_cancel(&cd->loop, &cd->creds_timer);
}

static void
park(struct cloud_call *c)
{
	c->state = CS_PARKED;
	TAILQ_INSERT_TAIL(&c->cd->parked, c, entry);
	boot_run(c->cd);
}

static void
attempt_done(struct http_req *r, void *arg)
{
	struct cloud_call *c = arg;
	struct cloudd *cd = c->cd;
	struct cloud_counters *cn = counters_of(cd, c);
	struct msg_cloud_status st;
	struct ec2_answer a;
	enum ec2_retry retry;
	uint64_t now = now_ms(), lat, delay;
	bool parsed = false;

	lat = now - c->attempt_start;
	msg_hist_observe(&cn->latency, now_us() - c->attempt_start_us);
	cn->latency_ms_sum += lat;
	if (lat > cn->latency_ms_max)
		cn->latency_ms_max = lat;
	c->attempt++;
	c->state = CS_NEW;
	memset(&a, 0, sizeof(a));

	if (r->cc != CURLE_OK) {
		retry = judge_transport(c, &st);
	} else if (c->kind == CALL_IMDS) {
		if (r->status == 200) {
			cloud_status(&st, CO_OK, "", "%s", "");
			call_finish(c, &st, NULL);
			return;
		}
		if (r->status == 401 && !c->reauthed) {
			/* The token expired or IMDS restarted: a new one. */
			c->reauthed = true;
			cd->imds_token[0] = '\0';
			park(c);
			return;
		}
		cloud_status(&st, r->status == 404 ? CO_NOT_FOUND :
		    CO_TRANSIENT, "", "IMDS %s: HTTP %ld", c->imds_path,
		    r->status);
		retry = r->status >= 500 ? EC2_RETRY_ALWAYS : EC2_RETRY_NO;
	} else {
		retry = judge_ec2(c, &st, &a, &parsed);
	}
	st.http_status = (uint32_t)r->status;
	if (st.outcome == CO_OK) {
		call_finish(c, &st, parsed ? &a : NULL);
		ec2_answer_free(&a);
		return;
	}
	ec2_answer_free(&a);
	cn->errors++;
	c->last = st;
	c->has_last = true;

	if (retry == EC2_RETRY_REAUTH) {
		/* Expired or refused (revoked) role credentials: one more
		 * try per call, with new ones.  Only the credentials this
		 * attempt used are dropped, so calls refused together share
		 * one fetch; a refusal that new credentials don't cure is
		 * the call's answer. */
		if (cd->creds_from_imds && !c->reauthed) {
			c->reauthed = true;
			if (c->creds_gen == cd->creds_gen) {
				log_info("%s: %s; fetching new credentials and "
				    "retrying", call_name(c), st.code);
				invalidate_creds(cd);
			}
			park(c);
			return;
		}
		retry = EC2_RETRY_NO;
	}
	if (st.outcome == CO_THROTTLED && c->kind == CALL_EC2) {
		cn->throttles++;
		rl_throttled(&cd->buckets[class_of(c->action)], now);
	}
	if (retry == EC2_RETRY_NO ||
	    (retry == EC2_RETRY_IDEMPOTENT && !c->idempotent) ||
	    c->attempt >= cd->cfg.cloud.retry.max_attempts) {
		call_finish(c, &st, NULL);
		return;
	}
	delay = cd->cfg.cloud.retry.jitter ?
	    backoff_ms(c->attempt - 1, cd->cfg.cloud.retry.base_ms,
	    cd->cfg.cloud.retry.cap_ms, rand32()) :
	    backoff_ceiling_ms(c->attempt - 1, cd->cfg.cloud.retry.base_ms,
	    cd->cfg.cloud.retry.cap_ms);
	if (now + delay >= c->deadline) {
		log_debug("%s: attempt %u failed (%s %s); no time left for "
		    "another before the deadline", call_name(c), c->attempt,
		    cloud_outcome_name(st.outcome), st.code);
		call_finish(c, &st, NULL);
		return;
	}
	cn->retries++;
	log_debug("%s: attempt %u failed (%s%s%s); retry %u in %llu ms",
	    call_name(c), c->attempt, cloud_outcome_name(st.outcome),
	    st.code[0] ? " " : "", st.code, c->attempt + 1,
	    (unsigned long long)delay);
	c->state = CS_BACKOFF;
	loop_timer_after(&cd->loop, &c->backoff_timer, delay);
}

/* ---- life of a call ---- */

static void
call_submit(struct cloud_call *c)
{
	struct cloudd *cd = c->cd;
	enum rate_class rc;

	if (!call_ready(c)) {
		park(c);
		return;
	}
	if (c->kind == CALL_IMDS) {
		start_attempt(c);
		return;
	}
	rc = class_of(c->action);
	c->state = CS_QUEUED;
	TAILQ_INSERT_TAIL(&cd->queues[rc], c, entry);
	pump(cd, rc);
}

static void
call_finish(struct cloud_call *c, const struct msg_cloud_status *st,
    const struct ec2_answer *a)
{
	struct cloudd *cd = c->cd;
	struct msg_cloud_status copy = *st;

	switch (c->state) {
	case CS_PARKED:
		TAILQ_REMOVE(&cd->parked, c, entry);
		break;
	case CS_QUEUED:
		TAILQ_REMOVE(&cd->queues[class_of(c->action)], c, entry);
		break;
	case CS_INFLIGHT:
		http_abort(&cd->http, &c->req);
		break;
	default:
		break;
	}
	loop_timer_cancel(&cd->loop, &c->backoff_timer);
	loop_timer_cancel(&cd->loop, &c->deadline_timer);
	c->state = CS_NEW;
	if (copy.outcome != CO_OK && c->attempt == 0)
		log_debug("%s: %s before any attempt: %s", call_name(c),
		    cloud_outcome_name(copy.outcome), copy.message);
	else if (copy.outcome != CO_OK)
		log_debug("%s: %s after %u attempt%s: %s", call_name(c),
		    cloud_outcome_name(copy.outcome), c->attempt,
		    c->attempt == 1 ? "" : "s", copy.message);
	c->cb(c, &copy, a, c->req.resp, c->req.resplen, c->arg);
	http_req_release(&c->req);
	ec2_form_free(&c->form);
	cd->ncalls--;
	free(c);
}

static struct cloud_call *
call_new(struct cloudd *cd, uint64_t deadline, cloud_call_cb cb, void *arg)
{
	struct cloud_call *c;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	c->cd = cd;
	c->deadline = deadline;
	c->created = now_ms();
	c->cb = cb;
	c->arg = arg;
	loop_timer_init(&c->backoff_timer, backoff_timer_cb, c);
	loop_timer_init(&c->deadline_timer, deadline_timer_cb, c);
	loop_timer_at(&cd->loop, &c->deadline_timer, deadline);
	cd->ncalls++;
	return c;
}

/* No call pointer is handed back: call_submit() may already have ended
 * and freed the call (see cloudd.h). */
int
cloud_ec2(struct cloudd *cd, enum ec2_action action, struct ec2_form *form,
    uint64_t deadline, bool idempotent, cloud_call_cb cb, void *arg)
{
	struct cloud_call *c;

	if ((c = call_new(cd, deadline, cb, arg)) == NULL) {
		ec2_form_free(form);
		return -1;
	}
	c->kind = CALL_EC2;
	c->action = action;
	c->form = *form;
	memset(form, 0, sizeof(*form));
	c->idempotent = idempotent;
	call_submit(c);
	return 0;
}

int
cloud_imds(struct cloudd *cd, const char *path, uint64_t deadline,
    cloud_call_cb cb, void *arg)
{
	struct cloud_call *c;

	if ((c = call_new(cd, deadline, cb, arg)) == NULL)
		return -1;
	c->kind = CALL_IMDS;
	c->idempotent = true;
	snprintf(c->imds_path, sizeof(c->imds_path), "%s", path);
	call_submit(c);
	return 0;
}

/* ---- bootstrap: IMDS token, region, role credentials ---- */

static bool
parked_imds(const struct cloudd *cd)
{
	const struct cloud_call *c;

	TAILQ_FOREACH(c, &cd->parked, entry)
		if (c->kind == CALL_IMDS)
			return true;
	return false;
}

/* What the bootstrap should fetch next, or BOOT_IDLE. */
static enum boot_step
boot_next(const struct cloudd *cd)
{
	bool need_region = cd->region[0] == '\0';
	bool need_creds = cd->creds_from_imds &&
	    (!creds_fresh(cd) || cd->creds_refresh_due);

	if (!need_region && !need_creds && !parked_imds(cd))
		return BOOT_IDLE;
	if (!imds_token_ok(cd))
		return BOOT_TOKEN;
	if (need_region)
		return BOOT_REGION;
	if (need_creds)
		return cd->role[0] == '\0' ? BOOT_ROLE : BOOT_CREDS;
	return BOOT_IDLE;
}

static void	boot_done(struct http_req *r, void *arg);

static void
boot_fail(struct cloudd *cd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
boot_fail(struct cloudd *cd, const char *fmt, ...)
{
	va_list ap;
	uint64_t delay;

	va_start(ap, fmt);
	vsnprintf(cd->boot_err, sizeof(cd->boot_err), fmt, ap);
	va_end(ap);
	ec2_sanitize(cd->boot_err);
	delay = 200 + backoff_ms(cd->boot_failures, 250, 10000, rand32());
	cd->boot_failures++;
	(cd->boot_failures == 1 || cd->boot_failures % 10 == 0 ?
	    log_warnx : log_debug)("cloud: %s; try %u again in %llu ms",
	    cd->boot_err, cd->boot_failures + 1, (unsigned long long)delay);
	cd->boot_step = BOOT_IDLE;
	loop_timer_after(&cd->loop, &cd->boot_timer, delay);
}

static void
boot_run(struct cloudd *cd)
{
	struct http_req *r = &cd->boot_req;
	enum boot_step step;
	char hdr[300];

	if (cd->boot_step != BOOT_IDLE || loop_timer_armed(&cd->boot_timer))
		return;		/* one at a time; or backing off */
	if ((step = boot_next(cd)) == BOOT_IDLE) {
		unpark(cd);
		return;
	}
	http_req_release(r);
	memset(r, 0, sizeof(*r));
	r->timeout_ms = imds_timeout(cd);
	r->max_body = CLOUDD_IMDS_MAX_BODY;
	r->protocols = "http,https";
	r->no_proxy = true;
	r->done = boot_done;
	r->arg = cd;
	r->method = HTTP_GET;
	switch (step) {
	case BOOT_TOKEN:
		snprintf(r->url, sizeof(r->url), "%s/latest/api/token",
		    cd->imds_url);
		r->method = HTTP_PUT;
		snprintf(hdr, sizeof(hdr), "X-aws-ec2-metadata-token-ttl-"
		    "seconds: %d", CLOUDD_IMDS_TOKEN_TTL_S);
		break;
	case BOOT_REGION:
		snprintf(r->url, sizeof(r->url), "%s/latest/meta-data/"
		    "placement/region", cd->imds_url);
		break;
	case BOOT_ROLE:
		snprintf(r->url, sizeof(r->url), "%s/latest/meta-data/iam/"
		    "security-credentials/", cd->imds_url);
		break;
	case BOOT_CREDS:
		snprintf(r->url, sizeof(r->url), "%s/latest/meta-data/iam/"
		    "security-credentials/%s", cd->imds_url, cd->role);
		break;
	default:
		return;
	}
	if (step != BOOT_TOKEN)
		snprintf(hdr, sizeof(hdr), "X-aws-ec2-metadata-token: %s",
		    cd->imds_token);
	if ((r->headers = curl_slist_append(NULL, hdr)) == NULL ||
	    http_start(&cd->http, r) == -1) {
		boot_fail(cd, "IMDS: cannot start a request: %s", r->errbuf);
		return;
	}
	cd->boot_step = step;
	cd->counters[COUNTERS_IMDS].calls++;
}

static void
boot_timer_cb(struct loop *l, struct loop_timer *t)
{
	(void)l;
	boot_run(t->arg);
}

static void
creds_timer_cb(struct loop *l, struct loop_timer *t)
{
	struct cloudd *cd = t->arg;

	(void)l;
	/* The current credentials stay in use until new ones are in. */
	log_debug("cloud: refreshing the role credentials before they "
	    "expire");
	cd->creds_refresh_due = true;
	boot_run(cd);
}

static void
boot_done(struct http_req *r, void *arg)
{
	struct cloudd *cd = arg;
	enum boot_step step = cd->boot_step;
	struct cloud_creds nc;
	char err[256], text[256];
	time_t now;

	cd->boot_step = BOOT_IDLE;
	if (r->cc == CURLE_OPERATION_TIMEDOUT) {
		cd->imds_timeouts++;
		boot_fail(cd, "IMDS %s: no answer within %llu ms; the next "
		    "attempt waits up to %llu ms", r->url + strlen(cd->imds_url),
		    (unsigned long long)r->timeout_ms,
		    (unsigned long long)imds_timeout(cd));
		return;
	}
	if (r->cc != CURLE_OK) {
		boot_fail(cd, "IMDS %s: %s", r->url + strlen(cd->imds_url),
		    r->errbuf);
		return;
	}
	if (r->status == 401 && step != BOOT_TOKEN) {
		cd->imds_token[0] = '\0';
		boot_fail(cd, "IMDS %s: HTTP 401; fetching a new token",
		    r->url + strlen(cd->imds_url));
		return;
	}
	if (r->status != 200) {
		boot_fail(cd, "IMDS %s: HTTP %ld", r->url + strlen(cd->imds_url),
		    r->status);
		return;
	}
	switch (step) {
	case BOOT_TOKEN:
		if (imds_token(r->resp, r->resplen, cd->imds_token,
		    sizeof(cd->imds_token)) == -1) {
			boot_fail(cd, "IMDS token: unusable answer");
			return;
		}
		cd->imds_token_renew = now_ms() +
		    (uint64_t)CLOUDD_IMDS_TOKEN_TTL_S * 1000 * 8 / 10;
		log_debug("cloud: IMDSv2 token fetched");
		break;
	case BOOT_REGION:
		if (imds_region(r->resp, r->resplen, text,
		    sizeof(cd->region)) == -1) {
			boot_fail(cd, "IMDS region: %s answer",
			    r->resplen == 0 ? "empty" :
			    r->resplen >= sizeof(cd->region) ? "oversized" :
			    "unusable");
			return;
		}
		/* shorter than the region's field: imds_region said so */
		memcpy(cd->region, text, sizeof(cd->region));
		set_ec2_url(cd);
		break;
	case BOOT_ROLE:
		if (imds_first_line(r->resp, r->resplen, cd->role,
		    sizeof(cd->role)) == -1) {
			boot_fail(cd, "IMDS: no usable role name in "
			    "iam/security-credentials/");
			return;
		}
		break;
	case BOOT_CREDS:
		if (creds_parse_imds(r->resp, r->resplen, &nc, err,
		    sizeof(err)) == -1) {
			boot_fail(cd, "IMDS role %s: %s", cd->role, err);
			cd->role[0] = '\0';
			return;
		}
		now = time(NULL);
		if (nc.expiration <= now + 1) {
			/* Taking them would leave creds_fresh() false and
			 * have boot_run() fetch them again at once, forever:
			 * back off instead, and keep what we have. */
			boot_fail(cd, "IMDS role %s: credentials already "
			    "expired (Expiration %lld s from now; clock skew?)",
			    cd->role, (long long)(nc.expiration - now));
			explicit_bzero(&nc, sizeof(nc));
			return;
		}
		if (strcmp(nc.access_key_id, cd->creds.access_key_id) != 0)
			log_info("cloud: role credentials %.8s... from IMDS, "
			    "expire in %lld s", nc.access_key_id,
			    (long long)(nc.expiration - now));
		cd->creds = nc;
		cd->creds_ok = true;
		cd->creds_gen++;
		cd->creds_refresh_due = false;
		explicit_bzero(&nc, sizeof(nc));
		loop_timer_after(&cd->loop, &cd->creds_timer,
		    creds_refresh_in_ms(cd->creds.expiration, now));
		break;
	default:
		break;
	}
	cd->boot_failures = 0;
	cd->boot_err[0] = '\0';
	http_req_release(r);
	unpark(cd);
	boot_run(cd);
}

/* ---- start ---- */

static int
check_url(const char *what, const char *url, bool allow_http, char *err,
    size_t errlen)
{
	if (strncmp(url, "https://", 8) == 0)
		return 0;
	if (strncmp(url, "http://", 7) == 0 && allow_http)
		return 0;
	snprintf(err, errlen, "%s \"%s\": must be https:// (or http:// with "
	    "cloud.allow_http)", what, url);
	return -1;
}

int
cloud_init(struct cloudd *cd, char *err, size_t errlen)
{
	const struct enid_config *cfg = &cd->cfg;
	const char *ak, *sk, *tok, *region;
	uint64_t now = now_ms();
	size_t n;
	int i;

	TAILQ_INIT(&cd->parked);
	for (i = 0; i < RC_COUNT; i++) {
		TAILQ_INIT(&cd->queues[i]);
		loop_timer_init(&cd->bucket_timers[i], bucket_timer_cb, cd);
	}
	rl_init(&cd->buckets[RC_MUTATING], cfg->cloud.rate_mutating.capacity,
	    cfg->cloud.rate_mutating.refill_per_s, now);
	rl_init(&cd->buckets[RC_DESCRIBE], cfg->cloud.rate_describe.capacity,
	    cfg->cloud.rate_describe.refill_per_s, now);
	loop_timer_init(&cd->boot_timer, boot_timer_cb, cd);
	loop_timer_init(&cd->creds_timer, creds_timer_cb, cd);

	/* IMDS is link-local plain HTTP on every EC2 instance. */
	snprintf(cd->imds_url, sizeof(cd->imds_url), "%s",
	    cfg->cloud.imds_endpoint[0] ? cfg->cloud.imds_endpoint :
	    ENID_IMDS_ENDPOINT);
	n = strlen(cd->imds_url);
	while (n > 0 && cd->imds_url[n - 1] == '/')
		cd->imds_url[--n] = '\0';
	if (check_url("cloud.imds_endpoint", cd->imds_url, true, err,
	    errlen) == -1)
		return -1;
	cd->ec2_protocols = cfg->cloud.allow_http ? "http,https" : "https";
	if (cfg->cloud.ec2_endpoint[0] != '\0') {
		if (check_url("cloud.ec2_endpoint", cfg->cloud.ec2_endpoint,
		    cfg->cloud.allow_http, err, errlen) == -1)
			return -1;
		snprintf(cd->ec2_url, sizeof(cd->ec2_url), "%s",
		    cfg->cloud.ec2_endpoint);
	}

	region = cfg->cloud.region[0] ? cfg->cloud.region : getenv("AWS_REGION");
	if (region == NULL || region[0] == '\0')
		region = getenv("AWS_DEFAULT_REGION");
	if (region != NULL && region[0] != '\0') {
		if (!ec2_name_ok(region, sizeof(cd->region))) {
			snprintf(err, errlen, "region \"%.64s\" is not a "
			    "region name", region);
			return -1;
		}
		snprintf(cd->region, sizeof(cd->region), "%.63s", region);
		set_ec2_url(cd);
	}

	if (cfg->cloud.access_key_id[0] != '\0') {
		ak = cfg->cloud.access_key_id;
		sk = cfg->cloud.secret_access_key;
		tok = cfg->cloud.session_token;
	} else {
		ak = getenv("AWS_ACCESS_KEY_ID");
		sk = getenv("AWS_SECRET_ACCESS_KEY");
		tok = getenv("AWS_SESSION_TOKEN");
	}
	if (ak != NULL && ak[0] != '\0') {
		if (!creds_text_ok(ak, CREDS_KEY_LEN) || sk == NULL ||
		    !creds_text_ok(sk, CREDS_KEY_LEN) ||
		    (tok != NULL && tok[0] != '\0' &&
		    !creds_text_ok(tok, CREDS_TOKEN_LEN))) {
			snprintf(err, errlen, "static credentials (%s) are "
			    "incomplete or malformed",
			    cfg->cloud.access_key_id[0] ? "config" :
			    "AWS_* environment");
			return -1;
		}
		snprintf(cd->creds.access_key_id,
		    sizeof(cd->creds.access_key_id), "%.127s", ak);
		snprintf(cd->creds.secret_access_key,
		    sizeof(cd->creds.secret_access_key), "%.127s", sk);
		snprintf(cd->creds.session_token,
		    sizeof(cd->creds.session_token), "%s", tok ? tok : "");
		cd->creds_ok = true;
		log_debug("cloud: static credentials from the %s",
		    cfg->cloud.access_key_id[0] ? "config" : "environment");
	} else {
		cd->creds_from_imds = true;
	}
	return 0;
}

/* Start fetching what is missing (after the sandbox is on). */
void
cloud_kick(struct cloudd *cd)
{
	boot_run(cd);
}

void
cloud_log_counters(const struct cloudd *cd)
{
	const struct cloud_counters *c;
	int i;

	for (i = 0; i <= EC2_ACTION_COUNT; i++) {
		c = &cd->counters[i];
		if (c->calls == 0)
			continue;
		log_debug("counters: %s: %llu calls, %llu throttles, "
		    "%llu retries, %llu errors, latency avg %llu ms max %llu ms",
		    i == COUNTERS_IMDS ? "IMDS" : ec2_action_name(i),
		    (unsigned long long)c->calls,
		    (unsigned long long)c->throttles,
		    (unsigned long long)c->retries,
		    (unsigned long long)c->errors,
		    (unsigned long long)(c->latency_ms_sum / c->calls),
		    (unsigned long long)c->latency_ms_max);
	}
}

void
cloud_send_stats(struct cloudd *cd, uint32_t id)
{
	static struct msg_cloud_stats_answer a;
	struct msg_cloud_action_stats *as;
	const struct cloud_counters *c;
	int i;

	_Static_assert(EC2_ACTION_COUNT <= MSG_STATS_ACTIONS,
	    "every EC2 action must fit a stats answer");
	memset(&a, 0, sizeof(a));
	for (i = 0; i < EC2_ACTION_COUNT; i++) {
		c = &cd->counters[i];
		as = &a.actions[a.nactions++];
		msg_strlcpy(as->action, ec2_action_name(i), sizeof(as->action));
		as->calls = c->calls;
		as->errors = c->errors;
		as->throttles = c->throttles;
		as->retries = c->retries;
		as->latency = c->latency;
	}
	cloudd_send(cd, MSG_CLOUD_STATS_ANSWER, id, &a, sizeof(a));
}
