/*
 * enid-cloudd's insides, shared by its files: the HTTP layer (libcurl's
 * multi interface on the common loop), the call engine (signing,
 * credentials, IMDS, rate limits, retries, deadlines) and the intents the
 * broker sends.  Nothing outside cloudd/ includes this.
 */
#ifndef ENID_CLOUDD_H
#define ENID_CLOUDD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include <curl/curl.h>

#include "conf.h"
#include "creds.h"
#include "ec2.h"
#include "loop.h"
#include "msg.h"
#include "peer.h"
#include "ratelimit.h"

#define CLOUDD_IMDS_MAX_BODY	(64 * 1024)
#define CLOUDD_IMDS_TOKEN_TTL_S	21600
/* An IMDS attempt's time limit: cloud.imds_timeout_ms, doubled for each
 * IMDS attempt that timed out so far, up to this (cloudd_imds_timeout). */
#define CLOUDD_IMDS_TIMEOUT_MAX_MS 60000
#define CLOUDD_DEFAULT_DEADLINE_MS 30000
#define CLOUDD_MAX_DEADLINE_MS	600000
#define CLOUDD_MAX_PAGES	100
/* ENIs one describe may list: a listing past it is not a real one (an
 * instance has at most 15 attached; a cluster's leaked, available ENIs are
 * paged through by tag, and 1000 of them must still list) */
#define CLOUDD_MAX_LISTED	1024
#define CLOUDD_MAX_INTENTS	4096

/* ---- HTTP (http.c) ---- */

struct http_req;
typedef void (*http_done_cb)(struct http_req *, void *arg);

enum http_method { HTTP_GET = 0, HTTP_PUT, HTTP_POST };

struct http_req {
	/* set before http_start() */
	char			 url[512];
	enum http_method	 method;
	struct curl_slist	*headers;	/* freed by http_req_release */
	const char		*body;		/* POST; copied by curl */
	size_t			 bodylen;
	uint64_t		 timeout_ms;
	size_t			 max_body;
	const char		*protocols;	/* "https" or "http,https" */
	bool			 no_proxy;
	char			 sigv4[96];	/* "" : unsigned */
	char			 userpwd[2 * CREDS_KEY_LEN + 2];
	http_done_cb		 done;
	void			*arg;
	/* results */
	CURL			*easy;
	CURLcode		 cc;
	long			 status;
	char			*resp;
	size_t			 resplen, respcap;
	bool			 oversize;
	char			 errbuf[CURL_ERROR_SIZE];
};

struct http {
	CURLM			*multi;
	struct loop		*loop;
	struct loop_timer	 timer;
	void			*ca_blob;	/* the CA file, read at start */
	size_t			 ca_len;
	unsigned		 inflight;
	struct loop_timer	 trim;		/* after a large answer */
};

int	http_init(struct http *h, struct loop *l, const char *ca_file,
	    char *err, size_t errlen);
/* Start r; its done callback runs from the loop.  0, or -1 (r->errbuf). */
int	http_start(struct http *h, struct http_req *r);
/* Stop r without its callback. */
void	http_abort(struct http *h, struct http_req *r);
/* Free what r holds (answer, headers, curl handle); r may be reused. */
void	http_req_release(struct http_req *r);

/* ---- the call engine (cloud.c) ---- */

enum call_kind { CALL_EC2 = 0, CALL_IMDS };
enum call_state { CS_NEW = 0, CS_PARKED, CS_QUEUED, CS_INFLIGHT, CS_BACKOFF };
enum rate_class { RC_MUTATING = 0, RC_DESCRIBE, RC_COUNT };

struct cloud_call;
/*
 * A call's end: st says the outcome (ok or why not); for EC2, a is the
 * parsed answer (NULL unless st is ok); for IMDS, body/len the text.
 * The call is freed after the callback returns.
 */
typedef void (*cloud_call_cb)(struct cloud_call *c,
    const struct msg_cloud_status *st, const struct ec2_answer *a,
    const char *body, size_t len, void *arg);

struct cloud_call {
	TAILQ_ENTRY(cloud_call)	 entry;
	struct cloudd		*cd;
	enum call_kind		 kind;
	enum ec2_action		 action;
	char			 imds_path[256];
	struct ec2_form		 form;
	bool			 idempotent;
	uint64_t		 deadline;	/* absolute, ms */
	uint64_t		 created;
	uint64_t		 attempt_start;
	uint64_t		 attempt_start_us;	/* for the histogram */
	unsigned		 attempt;
	bool			 reauthed;
	unsigned		 creds_gen;	/* of the attempt's credentials */
	enum call_state		 state;
	struct http_req		 req;
	struct loop_timer	 backoff_timer;
	struct loop_timer	 deadline_timer;
	struct msg_cloud_status	 last;		/* the last failure */
	bool			 has_last;
	cloud_call_cb		 cb;
	void			*arg;
};
TAILQ_HEAD(call_list, cloud_call);

/* Per action (and one more for IMDS); the EC2 actions' go to the broker's
 * metrics (MSG_CLOUD_STATS). */
struct cloud_counters {
	uint64_t	calls;		/* HTTP attempts */
	uint64_t	throttles;
	uint64_t	retries;
	uint64_t	errors;		/* attempts ending not ok */
	uint64_t	latency_ms_sum;
	uint64_t	latency_ms_max;
	struct msg_hist	latency;	/* attempts that ended */
};

enum boot_step {
	BOOT_IDLE = 0,
	BOOT_TOKEN,
	BOOT_REGION,
	BOOT_ROLE,
	BOOT_CREDS,
};

/* ---- intents (intent.c) ---- */

struct intent {
	TAILQ_ENTRY(intent)	 entry;
	struct cloudd		*cd;
	uint32_t		 id;
	enum msg_type		 type;
	uint64_t		 started;
	uint64_t		 deadline;
	int			 step;
	uint32_t		 sent;		/* stream entries so far */
	unsigned		 pages;
	bool			 refused;	/* failed by cloudd's checks */
	char			 next_token[EC2_TOKEN_LEN];
	union {
		struct msg_cloud_describe_instance	di;
		struct msg_cloud_describe_subnets	ds;
		struct msg_cloud_create_eni		ce;
		struct msg_cloud_attach			at;
		struct msg_cloud_set_dot		sd;
		struct msg_cloud_ips			ip;
		struct msg_cloud_prefixes		px;
		struct msg_cloud_detach			dt;
		struct msg_cloud_delete			de;
		struct msg_cloud_describe_enis		den;
		struct msg_cloud_check_instances	ci;
	}			 req;
	struct msg_cloud_instance *inst;	/* describe-instance, built up */
	/* describe-ENIs: the ids listed so far, from its first page on */
	char			(*listed)[MSG_ID_LEN];
	uint32_t		 nlisted;
	/* describe-instance: its two EC2 calls in flight at once, and how
	 * each failed (DescribeInstances, DescribeInstanceTypes), answered
	 * once both have ended */
	unsigned		 di_pending;
	struct msg_cloud_status	 di_st[2];
	/* check-instances, built up page by page */
	uint8_t			 exists[MSG_MAX_INSTANCE_IDS];
	uint8_t			 named[MSG_MAX_INSTANCE_IDS];
	uint8_t			 mac[6];
};
TAILQ_HEAD(intent_list, intent);


/* ---- the process ---- */

struct cloudd {
	struct loop		 loop;
	struct peer		 peer;		/* the broker */
	struct enid_config	 cfg;

	struct http		 http;

	/* where, and as whom */
	char			 region[64];
	char			 ec2_url[256];
	char			 imds_url[256];
	const char		*ec2_protocols;
	bool			 creds_from_imds;
	bool			 creds_ok;
	bool			 creds_refresh_due;
	struct cloud_creds	 creds;
	unsigned		 creds_gen;	/* counts credentials taken */
	struct loop_timer	 creds_timer;
	char			 role[128];
	char			 imds_token[256];
	uint64_t		 imds_token_renew;	/* ms; 0: none */

	/* what the cloud told us about this instance */
	char			 instance_id[MSG_ID_LEN];
	char			 vpc_id[MSG_ID_LEN];

	/* bootstrap: IMDS token, region, credentials */
	enum boot_step		 boot_step;
	struct http_req		 boot_req;
	struct loop_timer	 boot_timer;
	unsigned		 boot_failures;
	unsigned		 imds_timeouts;	/* IMDS attempts timed out */
	char			 boot_err[MSG_ERR_LEN];

	/* calls */
	struct rl_bucket	 buckets[RC_COUNT];
	struct loop_timer	 bucket_timers[RC_COUNT];
	struct call_list	 queues[RC_COUNT];
	struct call_list	 parked;
	unsigned		 ncalls;
	struct cloud_counters	 counters[EC2_ACTION_COUNT + 1];

	struct intent_list	 intents;
	unsigned		 nintents;
};

#define COUNTERS_IMDS	EC2_ACTION_COUNT

/* cloud.c */
int	cloud_init(struct cloudd *cd, char *err, size_t errlen);
/*
 * Start a call; 0, or -1 (out of memory: cb will not run).  cb may run
 * before these return (a deadline already passed, a request curl refused),
 * and whatever it frees is gone by then: callers must not touch arg after.
 */
int	cloud_ec2(struct cloudd *cd, enum ec2_action action,
	    struct ec2_form *form, uint64_t deadline, bool idempotent,
	    cloud_call_cb cb, void *arg);
int	cloud_imds(struct cloudd *cd, const char *path, uint64_t deadline,
	    cloud_call_cb cb, void *arg);
void	cloud_kick(struct cloudd *cd);
void	cloud_log_counters(const struct cloudd *cd);
/* Answer a MSG_CLOUD_STATS with the EC2 actions' counters. */
void	cloud_send_stats(struct cloudd *cd, uint32_t id);
/* Fill a status; message printf-style. */
void	cloud_status(struct msg_cloud_status *st, enum cloud_outcome outcome,
	    const char *code, const char *fmt, ...)
	    __attribute__((format(printf, 4, 5)));

/* intent.c */
void	intent_start(struct cloudd *cd, const struct msg *m);

/* cloudd.c */
void	cloudd_send(struct cloudd *cd, enum msg_type type, uint32_t id,
	    const void *payload, size_t len);

#endif /* ENID_CLOUDD_H */
