/*
 * The broker's process context, shared by its files: the children, the
 * client sockets, the configuration.
 */
#ifndef ENID_BROKER_H
#define ENID_BROKER_H

#include <stdbool.h>
#include <sys/queue.h>
#include <sys/types.h>

#include "conf.h"
#include "loop.h"
#include "msg.h"
#include "peer.h"
#include "testhook.h"

#define BROKER_HANDSHAKE_MS	5000	/* a child must answer HELLO by then */
#define BROKER_KILL_GRACE_MS	400	/* SIGTERM, then SIGKILL after this */
#define BROKER_PING_INTERVAL_MS	2000	/* liveness: a PING this often... */
#define BROKER_PING_WAIT_MS	5000	/* ...answered within this, or fatal */
#define CTL_SOCK_NAME		"ctl.sock"
#define CNI_SOCK_NAME		"cni.sock"

struct broker;
struct child;

/*
 * A request's outcome: m is an answer (final says whether more follow), or
 * NULL if the deadline passed first (or the child is gone).
 */
typedef void (*req_done_cb)(struct broker *b, void *arg, const struct msg *m,
    bool final);

/*
 * A request to a child, embedded in whatever owns it (an ENI, a pod, the
 * broker), so that sending one never allocates and never fails: the
 * message joins the channel's queue, and the deadline timer is armed in
 * place.
 */
struct breq {
	TAILQ_ENTRY(breq)	 entry;
	bool			 active;
	uint32_t		 id;
	struct child		*child;
	enum msg_type		 type;
	uint32_t		 wait_ms;	/* broker side: deadline + slack */
	uint64_t		 sent_ms;
	uint64_t		 sent_us;	/* for the metrics */
	struct loop_timer	 timer;
	req_done_cb		 done;
	void			*arg;
};
TAILQ_HEAD(breq_list, breq);

/* Told of each answer to a child's request, and of each request that
 * ended unanswered at its deadline (m NULL), before the request's own
 * callback. */
typedef void (*req_observe_cb)(struct broker *b, const struct breq *r,
    const struct msg *m, bool final);

struct child {
	struct broker		*broker;
	const char		*name;		/* "enid-netd" */
	enum msg_peer		 peer_id;
	pid_t			 pid;		/* 0 once reaped */
	int			 status;	/* wait status once reaped */
	int			 fd;		/* our end, until peer_open */
	struct peer		 peer;
	bool			 ready;		/* handshake answered */
	uint32_t		 hello_id;
	struct breq_list	 pending;	/* in the order sent */
	size_t			 npending;
	req_observe_cb		 observe;	/* or NULL */
	/* liveness */
	struct loop_timer	 ping_timer;
	struct breq		 ping_req;
	uint32_t		 ping_seq;
	uint64_t		 pongs;
};

/* ---- server.c: the JSON-line unix sockets ---- */

#define JSERVER_OUT_MAX		(4 * 1024 * 1024)
#define JSERVER_IDLE_MS		10000	/* for a request, or a read */
#define CTL_MAX_CLIENTS		32
#define CTL_LINE_MAX		8192	/* a request line */
#define CNI_MAX_CLIENTS		256
/*
 * The largest request is a gc naming CNIREQ_MAX_VALID (4096) attachments:
 * about 320 bytes each with a 256-byte container id and an escaped
 * ifname, 1.3 MB in all; room besides for a client's whitespace.  The
 * input buffer grows to it only while such a line arrives.
 */
#define CNI_LINE_MAX		(2 * 1024 * 1024)

struct jserver;
struct json_object;

/* A request being answered, possibly later; stale once its client left. */
struct jref {
	struct jserver		*server;	/* NULL once answered */
	uint32_t		 slot, gen;
	pid_t			 pid;
	uid_t			 uid;
	const char		*op;		/* its op's name */
	uint64_t		 t0_us;		/* when the request came */
};

typedef void (*jop_fn)(struct broker *, struct jref *, struct json_object *);
struct jop {
	const char		*name;
	jop_fn			 fn;
};

/* Told of every answer to an op, once, as it is given (even when its
 * client has left): the metrics' outcomes and latencies.  code is "ok" or
 * the answer's error code. */
typedef void (*jobserve_fn)(struct broker *, const struct jref *,
    const char *code);

enum instance_state {
	INSTANCE_UNKNOWN = 0,
	INSTANCE_ASKING,
	INSTANCE_RETRYING,
	INSTANCE_KNOWN,
};

/* The pool engine's state (engine.h), held in the broker. */
#include "engine.h"
#include "store.h"

/* ---- metrics.c ---- */

#define METRICS_MAX_CNI_SERIES	64	/* (op, code) pairs */
#define METRICS_CODE_LEN	32
#define METRICS_STATS_WAIT_MS	1000	/* cloudd answers at once */
/* As written but in a test of a sanitizer build (common/testhook.h). */
#define METRICS_TEXTFILE_INTERVAL_MS testhook_ms(15000)

/* How a find-link request to enid-netd ended. */
enum link_result {
	LINK_FOUND = 0,
	LINK_NOT_FOUND,		/* netd's deadline passed */
	LINK_REFUSED,
	LINK_FAILED,
	LINK_NO_ANSWER,		/* the broker's deadline passed */
	LINK_RESULT_COUNT
};

struct cni_series {
	const char		*op;		/* a jop's name */
	char			 code[METRICS_CODE_LEN];	/* "ok" or */
	struct msg_hist		 latency;
};

struct metrics {
	struct cni_series	 cni[METRICS_MAX_CNI_SERIES];
	uint32_t		 ncni;
	uint64_t		 cni_unrecorded;	/* no series left */
	struct msg_hist		 link_wait[LINK_RESULT_COUNT];
	struct msg_cloud_stats_answer cloud;	/* as cloudd last sent it */
	bool			 cloud_known;
	struct breq		 stats_req;
	bool			 gathering;	/* a rendering waits */
	struct jref		 waiting[CTL_MAX_CLIENTS];
	uint32_t		 nwaiting;
	/* metrics_textfile: its directory, opened before the drop */
	int			 textfile_dirfd;	/* -1: none */
	char			 textfile_name[256];
	char			 textfile_tmp[264];
	bool			 textfile_due;
	struct loop_timer	 textfile_timer;
	int			 textfile_errno;	/* last one logged */
};

/* What the pool may hold, from the instance's limits and the
 * configuration (enidctl show limits, and the metrics). */
struct pool_limits {
	uint32_t		 cloud_max_enis;
	uint32_t		 cloud_ips_per_eni;
	uint32_t		 conf_max_enis;	/* 0: not set */
	uint32_t		 conf_max_pods;	/* 0: not set */
	uint32_t		 max_enis;	/* in effect, the primary too */
	uint32_t		 pod_ips_per_eni; /* its own one excepted */
	uint32_t		 pod_enis;	/* whose addresses pods get */
	bool			 primary_for_pods;
	uint32_t		 pod_capacity;	/* pod_enis x per ENI */
	uint32_t		 max_pods;	/* in effect */
	bool			 ipv6_only;	/* ip_family ipv6 */
	/* Prefix delegation: EC2's count, pod_enis x pod_ips_per_eni
	 * prefixes of 16 addresses; what the pool may hold of it (its
	 * tables); the pods a kubelet is commonly held to (110 or 250, by
	 * the instance's size: control.c, kubelet_pods_cap) and why. */
	uint32_t		 max_pods_with_prefixes;
	uint32_t		 prefix_capacity;
	uint32_t		 kubelet_max_pods;
	char			 kubelet_why[MSG_ID_LEN + 64];
};

/* ---- snat.c: netd's SNAT table, the broker's side ---- */

/* How a NETD_SNAT sync ended. */
enum snat_result {
	SNAT_OK = 0,
	SNAT_REFUSED,		/* netd's checks said no */
	SNAT_FAILED,		/* the kernel, or nothing to send */
	SNAT_NO_ANSWER,		/* the broker's deadline passed */
	SNAT_RESULT_COUNT
};

struct snat {
	struct breq		 sync_req;
	uint32_t		 sent_to;	/* the last sync's, network order */
	uint64_t		 syncs[SNAT_RESULT_COUNT];
	enum snat_result	 last_result;
	uint64_t		 last_sync_ms;	/* 0: none yet */
	char			 last_message[MSG_ERR_LEN];
	/* The node has no IPv4 address (its primary ENI is in an IPv6-only
	 * subnet): said once, and no sync is sent, ever. */
	bool			 no_target_said;
	/* netd's table as the last NETD_DUMP_SNAT found it */
	struct breq		 dump_req;
	struct msg_netd_snat_state state;
	bool			 state_known;
	uint64_t		 state_at_ms;
	struct jref		 waiting[CTL_MAX_CLIENTS];	/* show snat */
	uint32_t		 nwaiting;
};

struct broker {
	struct loop		 loop;
	struct enid_config	 cfg;
	const char		*config_path;
	struct child		 netd, cloudd;
	struct loop_timer	 handshake_timer;
	struct loop_timer	 kill_timer;
	bool			 shutting_down;
	int			 exit_code;
	uint32_t		 next_id;
	uint64_t		 started_ms;
	struct jserver		*ctl;
	struct jserver		*cni;

	/* instance.c: what the cloud says this node is */
	enum instance_state	 instance_state;
	struct msg_cloud_instance instance;	/* its IPv4 CIDRs only */
	uint32_t		 nvpc6;		/* and the VPC's IPv6 ones */
	struct ip_prefix	 vpc6[MSG_MAX_CIDRS6];
	char			 instance_error[512];
	struct loop_timer	 instance_timer;
	uint32_t		 instance_retry_ms;
	uint32_t		 instance_failures;	/* in a row */
	struct breq		 instance_req;
	struct breq		 policy_req;
	bool			 netd_policy_set;
	/* Pods may hold IPv6 addresses with ip_family ipv4: those of an
	 * earlier dual, which the switch keeps.  Read at start from the
	 * checkpoint's version (store_probe), then from the pods restored;
	 * false once none holds one (eni6_held_check), for good: ipv4
	 * hands out no IPv6 address.  Read through broker_ipv6_held(). */
	bool			 ckpt_ipv6;
	/* The node's IPv6 settings read at start (prereq.h), judged once
	 * the instance is known; NULL with ip_family ipv4. */
	struct prereq		*prereq;

	/* the pool: eni.c, eniaddr.c, pods.c, reconcile.c */
	struct engine		 engine;
	/* the pool's durable record (store.h), made by engine_init */
	struct store		*store;
	struct loop_timer	 trim;		/* broker_trim_soon */

	bool			 static_keys;	/* configured, then wiped */
	struct metrics		 metrics;
	struct snat		 snat;
};

/*
 * Does the broker keep pods' IPv6 working: learn each ENI's own IPv6
 * address and /80 from the cloud, set ENIs up with their address (the
 * table's IPv6 default route with it), judge IPv6 rules and host routes?
 * With ip_family dual or ipv6; with ipv4 while pods of an earlier dual
 * hold IPv6 addresses (ckpt_ipv6), whose replies leave by their ENI.
 * Handing out IPv6 addresses and asking for /80s is dual's and ipv6's
 * alone (config_family_v6()).
 */
static inline bool
broker_ipv6_held(const struct broker *b)
{
	return config_family_v6(b->cfg.ip_family) || b->ckpt_ipv6;
}

/* server.c.  Open as root (before the drop): 0660 root:group, or 0600
 * root:root for root_only; then start once the loop runs. */
struct jserver *jserver_open(const char *path, const char *what,
	    bool root_only, gid_t group, size_t maxclients, size_t linemax,
	    char *err, size_t errlen);
int	jserver_start(struct broker *b, struct jserver *s,
	    const struct jop *ops);
void	jserver_close(struct broker *b, struct jserver *s);
void	jserver_counters(const struct jserver *s, size_t *clients,
	    uint64_t *refused, uint64_t *bad);
void	jserver_observe(struct jserver *s, jobserve_fn fn);
/* Answer r (takes o's reference); a stale r drops it. */
void	jref_reply(struct jref *r, struct json_object *o);
/* Answer r with text, one JSON object with "ok": true and no newline,
 * formatted by the caller (the hot path's answers); text is copied as
 * needed. */
void	jref_reply_ok_text(struct jref *r, const char *text, size_t len);
/* The plainest ok answer, a DEL's (the most frequent after an ADD's). */
#define JREF_OK_TEXT	"{\"ok\":true}"
void	jref_error(struct jref *r, const char *code, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
/* A malformed request: "bad-request", and the connection is closed. */
void	jref_bad(struct jref *r, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
bool	jref_alive(const struct jref *r);
struct json_object *jerror_new(const char *code, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));

/* control.c: the admin socket's operations. */
extern const struct jop ctl_ops[];
/* cni.c: the CNI socket's. */
extern const struct jop cni_ops[];
/* false while the instance is unknown */
bool	pool_limits(struct broker *b, struct pool_limits *l);

/* metrics.c */
void	metrics_init(struct broker *b);
/* As root, before the drop: open metrics_textfile's directory. */
int	metrics_open_textfile(struct broker *b, char *err, size_t errlen);
void	metrics_start(struct broker *b);
/* Answer r with the metrics, once enid-cloudd's counters are in. */
void	metrics_request(struct broker *b, struct jref *r);
void	metrics_cni_answer(struct broker *b, const struct jref *r,
	    const char *code);
/* A find-link request ended: m its answer, NULL if none came. */
void	metrics_link_wait(struct broker *b, const struct msg *m, uint64_t us);
/* netd's SNAT state is in (or did not come): who waits for it is served. */
void	metrics_snat_refreshed(struct broker *b);

/* req.c: requests to the children, each with a deadline.  r must be idle
 * (not active); it stays the caller's and must outlive the request, or be
 * cancelled first. */
void	broker_request(struct broker *b, struct breq *r, struct child *c,
	    enum msg_type type, const void *payload, size_t len,
	    uint32_t deadline_ms, req_done_cb done, void *arg);
/* Forget r: its answer, if one comes, is dropped as late. */
void	broker_request_cancel(struct broker *b, struct breq *r);
int	broker_answer(struct broker *b, struct child *c, const struct msg *m);
/* The child is gone: end each of its requests with no answer. */
void	broker_fail_requests(struct broker *b, struct child *c);
/* Send without expecting an answer (LOG_LEVEL). */
void	broker_notify(struct broker *b, struct child *c, enum msg_type type,
	    const void *payload, size_t len);

/* snat.c.  Once netd took its policy: false if snat.exclude overlaps
 * the VPC (the broker is then shutting down, exit 1); else the first sync
 * is sent, and one at every reconcile run. */
bool	snat_start(struct broker *b);
/* Have netd make its table right now (nothing while one is on its way). */
void	snat_sync(struct broker *b, const char *why);
/* Ask netd what its table holds: false if it cannot be asked now;
 * metrics_snat_refreshed is told when the answer is in. */
bool	snat_refresh(struct broker *b);
bool	snat_refreshing(const struct broker *b);
/* enidctl show snat: r is answered once netd has said. */
void	snat_show(struct broker *b, struct jref *r);
struct json_object *snat_state_json(const struct msg_netd_snat_state *st);
struct json_object *snat_status_json(const struct broker *b);
const char *snat_result_name(enum snat_result r);

/* instance.c */
void	instance_start(struct broker *b);
const char *instance_state_name(enum instance_state s);

/* Stop the daemon: terminate the children, then exit with code. */
void	broker_shutdown(struct broker *b, int code, const char *why);

/* trim.c: give the heap's free pages back to the system a second from
 * now, after large passing allocations (a save, a reconciliation, a large
 * answer). */
void	broker_trim_soon(struct broker *b);

#endif /* ENID_BROKER_H */
