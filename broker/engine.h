/*
 * The broker's pool engine, shared by its files: ENIs (eni.c) and their
 * addresses (eniaddr.c), the pods and the ADDs waiting for an address
 * (pods.c), reconciliation and the leak collector (reconcile.c).  The policy itself
 * is pool.c, pure; this is the state it is computed from and the
 * machinery that carries its actions out.  The engine sits above the
 * store (store.h), which saves what it builds (engine_record), and below
 * the sockets' handlers (cni.c, control.c), which call into it and which
 * it never calls (doc/design.md, "The broker's layers").
 *
 * Included by enid.h, after the request and socket types it uses: a
 * file of the broker includes enid.h.
 */
#ifndef ENID_ENGINE_H
#define ENID_ENGINE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "checkpoint.h"
#include "pool.h"
#include "store.h"
#include "testhook.h"

#define ENGINE_CLOUD_DEADLINE_MS 30000	/* one cloud intent */
/* A growth call (create, attach, assign) gives up this long before an ADD
 * that waits for it would: add_timeout less a tenth, at least this much
 * (engine_growth_deadline_ms). */
#define ENGINE_ADD_MARGIN_MS	500
#define ENGINE_NETD_DEADLINE_MS	5000	/* one netd request */
#define ENGINE_POLL_MIN_MS	500	/* waiting for detach: first poll */
#define ENGINE_POLL_MAX_MS	8000
#define ENGINE_REMOVE_MAX_TRIES	60	/* then left to the leak collector */
#define ENGINE_GROW_BACKOFF_MIN_MS 1000	/* after a failed growth step */
#define ENGINE_GROW_BACKOFF_MAX_MS 60000
/* A burst of ADDs is read over several loop turns, and an ENI takes one
 * address operation at a time: growth waits until no ADD came for
 * GATHER_MS, GATHER_MAX_MS at most, so that one call asks for the whole
 * burst rather than a first call for its first ADDs and a second, after
 * it, for the rest.  A cloud call takes tens to hundreds of ms. */
#define ENGINE_GATHER_MS	5
#define ENGINE_GATHER_MAX_MS	20
#define ENGINE_MAX_NETD_INFLIGHT 512	/* pod rule requests at once */
/* Of those, the ones no runtime waits for (a restored pod's rules made
 * sure of, a reconcile's repair): few at once, so that an ADD or a DEL
 * never queues in netd behind hundreds of them. */
#define ENGINE_MAX_NETD_BG	4
/*
 * The long waits after an unassign.  testhook_ms() leaves each as written
 * in a release build; only a sanitizer build run by the integration tests
 * with ENID_TEST_TIME_SCALE divides them, so that the tests wait seconds
 * for what takes a minute (common/testhook.h).
 *
 * The cloud may apply an unassign this long after it was sent (cloudd
 * gives up at the deadline, a request already with EC2 may still land):
 * until then its addresses go to no pod (eni_unassign). */
#define ENGINE_UNASSIGN_HOLD_MS	testhook_ms(ENGINE_CLOUD_DEADLINE_MS + 30000)
/* Of the hold, lost to slow saves. */
#define ENGINE_UNASSIGN_SLACK_MS testhook_ms(20000)
/* A run that skipped them: again. */
#define ENGINE_CONFIRM_RETRY_MS	testhook_ms(5000)
/* A refused one's addresses rest. */
#define ENGINE_UNASSIGN_REFUSED_MS testhook_ms(10000)
/* After refused unassigns in a row, an ENI keeps its addresses this long,
 * doubling from ENGINE_UNASSIGN_REFUSED_MS (a cloud that refuses for good,
 * an IAM deny, is asked ever less often). */
#define ENGINE_UNASSIGN_KEEP_MAX_MS testhook_ms(15 * 60 * 1000)

/* Tags every ENI gets at creation (CreateNetworkInterface's own
 * TagSpecifications, so none is ever untagged). */
#define TAG_CREATOR		"enid.io/created-by"
#define TAG_CREATOR_VALUE	"enid"
#define TAG_INSTANCE		"enid.io/instance-id"
#define TAG_CLUSTER		"enid.io/cluster"
#define TAG_CREATED_AT		"enid.io/created-at"	/* unix seconds */

struct pod;

/*
 * What a describe found of an ENI being removed, gathered over its
 * answer's entries and read once the answer is whole: the cloud's word,
 * which decides removal's next state (eni.c, remove_next).
 */
enum eni_seen {
	SEEN_NOTHING = 0,	/* not listed: gone (or, before any look,
				 * not known: look) */
	SEEN_ATTACHED,		/* detach it */
	SEEN_DETACHING,		/* look again later */
	SEEN_AVAILABLE,		/* delete it */
};

struct eni_addr {
	uint32_t		 ip;		/* network order */
	enum addr_state		 state;
	/* ms, monotonic: cooling, removing and unconfirmed addresses go
	 * to no pod before */
	uint64_t		 cool_until;
	struct pod		*pod;
	/* The id of the last netd request that changed its pod rules (a
	 * pod's ADD_POD or DEL_POD): a rule dump asked before it may not
	 * show that change yet (reconcile). */
	uint32_t		 rules_req;
	/* The prefix it is an address of (its first address, network
	 * order), or 0: a single address. */
	uint32_t		 block;
};

/* A /28 prefix delegated to an ENI.  Its addresses are the ENI's
 * (addrs, block naming it), each in the pool's lifecycle as a single
 * address is; one the checks refuse is not among them. */
struct eni_prefix {
	uint32_t		 base;		/* network order */
	uint64_t		 frozen_until;	/* ms: no new pods before */
	bool			 removing;	/* being given back */
};

/* Can a be handed to a pod at now? */
static inline bool
addr_usable(const struct eni_addr *a, uint64_t now)
{
	return a->state == ADDR_FREE || (a->state == ADDR_COOLING &&
	    a->cool_until <= now);
}

struct eni {
	struct broker		*b;
	bool			 used;
	char			 id[MSG_ID_LEN];	/* "" while creating */
	char			 subnet_id[MSG_ID_LEN];
	int			 subnet;	/* index in engine.subnets */
	char			 attachment_id[MSG_ID_LEN];
	char			 client_token[MSG_TOKEN_LEN];
	int64_t			 created_at;	/* its tag: a retried create
						 * must be the same request */
	uint8_t			 mac[6];
	bool			 primary;	/* device 0: the node's own */
	bool			 ours;		/* tagged by enid for us */
	/* its enid.io/instance-id tag when that names another instance (a
	 * leak being collected): removal looks it up by that tag */
	char			 tag_instance[MSG_ID_LEN];
	int			 device_index;	/* -1 until attached */
	uint32_t		 table;		/* 0: the primary */
	uint32_t		 primary_ip;
	/* Its lifecycle (eni.c's opening comment): changed only by
	 * eni_set_state.  state_since: when it came to show as it does
	 * (eni_state_shown), so a step of set-up or removal that shows as
	 * the one before it does not restart enidctl's count. */
	enum eni_state		 state;
	uint64_t		 state_since;
	/* Its attachment's DeleteOnTermination is not set yet: a fact of
	 * the cloud, in any state, that reconciliation retries. */
	bool			 dot_pending;
	uint32_t		 link_mtu;
	uint32_t		 naddrs;
	struct eni_addr		 addrs[POOL_MAX_ENI_ADDRS];
	uint32_t		 nprefixes;
	struct eni_prefix	 prefixes[POOL_MAX_PREFIXES];
	uint32_t		 assigning;	/* blocks asked for: */
	bool			 assigning_prefixes; /* prefixes, or singles */
	/* An unassign waits for the save that keeps its addresses out of
	 * use, however enid restarts (eni_unassign): this one. */
	uint64_t		 unassign_by;
	uint32_t		 unassign_refused; /* in a row */
	uint64_t		 keep_until;	/* ms: give back none before */
	uint64_t		 addrs_seen;	/* ms: the last run that judged
						 * its addresses asked then */
	/* An assign's answer was not all taken (a block refused, named
	 * again, not the number asked for): the cloud may hold more on it
	 * than the pool does.  No address change on it until a
	 * reconciliation that started since has judged its addresses. */
	bool			 recheck;
	uint32_t		 remove_tries;
	uint32_t		 poll_ms;	/* removal's and creation's
						 * backoff */
	enum eni_seen		 seen;		/* by the describe in flight */
	/* one step of its lifecycle, one address change, one DOT call */
	struct breq		 op;
	struct breq		 addr_op;
	struct breq		 dot_op;
	struct loop_timer	 timer;
	char			 cause[MSG_ERR_LEN];	/* of the last change */
	char			 removal[MSG_ERR_LEN];	/* why it is leaving */
	/*
	 * IPv6 (ip_family dual or ipv6: eni6.c).  addr6: its own IPv6
	 * address, family 0 while it has none (the primary's: the node's).
	 * prefix6: the /80 its pods' IPv6 addresses come from, by its
	 * first address, family 0 until delegated.  next6: the index in it
	 * of the next pod's address, only ever raised.  retry6: after a
	 * failed assign, when to ask again and the backoff.
	 */
	struct ip_addr		 addr6;
	struct ip_addr		 prefix6;
	uint64_t		 next6;
	uint64_t		 retry6_at;
	uint32_t		 retry6_ms;
};

enum pod_state {
	POD_ADDING = 0,		/* address taken; netd rules in flight */
	POD_READY,
	POD_DELETING,		/* netd rules being removed */
};

struct pod {
	LIST_ENTRY(pod)		 hash;
	TAILQ_ENTRY(pod)	 all;
	struct broker		*b;
	/* The names, in the same allocation as the pod (pod_new): sized
	 * to fit, not to their maxima, so 500 pods take 0.3 MiB, not 0.7. */
	const char		*container_id;
	const char		*ifname;
	const char		*k8s_namespace;	/* "" if unknown */
	const char		*k8s_name;
	const char		*k8s_uid;
	struct ip_addr		 ip;
	/* Its IPv6 address, from its ENI's /80 (eni6.c); family 0: none
	 * (ip_family ipv4, or a pod from before dual was set). */
	struct ip_addr		 ip6;
	char			 eni_id[CKPT_ENI_LEN];
	struct eni		*eni;		/* NULL: its ENI vanished */
	enum pod_state		 state;
	int64_t			 since;		/* unix seconds */
	bool			 restored;	/* from the checkpoint */
	bool			 lost;		/* ENI or address vanished */
	char			*lost_why;	/* malloc'd, once lost */
	/*
	 * Its netd request: a dual-stack pod's rules, both families', are
	 * one (msg.h), in one slot (pods.c, pod_netd_send).  keep4: a lost
	 * pod's IPv4 address is another pod's now, whose rules stay; its
	 * DEL removes its IPv6 rules only.
	 */
	struct breq		 req;
	bool			 keep4;
	/* The id of the last netd request that changed its IPv6 rules: as
	 * an address's rules_req, for a reconcile's rule dump. */
	uint32_t		 rules6_req;
	bool			 netd_waiting;	/* queued for a netd slot */
	bool			 netd_bg;	/* in netd_bg_queue */
	TAILQ_ENTRY(pod)	 netd_q;
	struct jref		 add_ref;	/* the ADD to answer, if any */
	struct jref		 del_ref;	/* the DEL to answer, if any */
	bool			 del_wanted;	/* DEL arrived while adding */
	struct gc_run		*gc;		/* a GC waiting for it */
	uint64_t		 saved_by;	/* the save that first holds it */
	bool			 recon_restore;	/* its rules, for a reconcile */
	/* enid-cni's host end of its veth pair, from its ADD: "" for
	 * enid-ipam's pods and those of an older checkpoint, whose host
	 * route reconciliation leaves alone */
	char			 host_veth[CKPT_IFNAME_LEN];
	uint64_t		 answered_ms;	/* an ADD last answered ok */
};

/* An ADD waiting for the pool to grow, at most add_timeout. */
struct waiter {
	TAILQ_ENTRY(waiter)	 entry;
	struct broker		*b;
	struct jref		 ref;
	char			 container_id[CKPT_CID_LEN];
	char			 ifname[CKPT_IFNAME_LEN];
	char			 k8s_namespace[CKPT_K8S_LEN];
	char			 k8s_name[CKPT_K8S_LEN];
	char			 k8s_uid[CKPT_UID_LEN];
	char			 host_veth[CKPT_IFNAME_LEN];
	uint64_t		 since;
	struct loop_timer	 timer;
};

/* A GC op: answered once every pod it released is gone for good. */
struct gc_run {
	struct jref		 ref;
	uint32_t		 outstanding;
	uint32_t		 released;
};

struct subnet {
	char			 id[MSG_ID_LEN];
	char			 az[MSG_ID_LEN];
	struct ip_prefix	 cidr;		/* no host bits */
	struct ip_addr		 gateway;	/* the network's + 1 */
	bool			 known;		/* described by the cloud */
	bool			 asking;	/* in the describe in flight */
	bool			 asked;		/* in one that was answered */
	bool			 configured;	/* growth may use it */
	uint32_t		 available;
	uint64_t		 inhibited_until;
	uint64_t		 prefix_inhibited_until; /* refused a /28 */
	uint32_t		 nsgs;
	char			 sgs[MSG_MAX_SGS][MSG_ID_LEN];
	/* IPv6, as the last describe said: its /64 when associated (and
	 * inside the VPC's IPv6 blocks), else family 0; the block's state
	 * (enum cloud_ipv6_state); IPv6-only (no IPv4 CIDR). */
	struct ip_prefix	 cidr6;
	uint32_t		 ipv6_state;
	bool			 ipv6_native;
};

enum engine_phase {
	PHASE_WAITING = 0,	/* for the instance and netd's policy */
	PHASE_STARTING,		/* first subnets describe and reconcile */
	PHASE_RUNNING,
};

/* Counters for status and metrics. */
struct engine_stats {
	uint64_t		 adds_ok, adds_failed, dels, quarantines;
	uint64_t		 enis_created, enis_deleted, leaks_deleted;
	uint64_t		 drifts_fixed, reconciles;
	/* prefix delegation: growth that fell back, by reason */
	uint64_t		 pfx_no_prefix;	/* a subnet refused a /28 */
	uint64_t		 pfx_singles;	/* singles taken instead */
	uint64_t		 pfx_refused;	/* a prefix the checks refused */
	uint64_t		 pfx_frozen;	/* prefixes frozen to drain */
};

struct reconcile_run;

struct engine {
	enum engine_phase	 phase;
	struct pool_params	 params;
	/* prefix delegation configured, and the instance cannot hold
	 * prefixes: single addresses (said once, at start) */
	bool			 prefixes_unsupported;
	/* the instance type's, the primary included, capped at
	 * ENID_MAX_ENI_ADDRS and one */
	uint32_t		 ips_per_eni;
	uint32_t		 cloud_attached;	/* as the cloud counts */
	struct eni		 enis[POOL_MAX_ENIS];
	uint32_t		 nsubnets;
	struct subnet		 subnets[POOL_MAX_SUBNETS];
	struct breq		 subnets_req;
	uint32_t		 subnets_seen;
	bool			 subnets_described;	/* once, ever */

	/* pods */
	LIST_HEAD(, pod)	 pod_hash[256];
	TAILQ_HEAD(, pod)	 pods;
	uint32_t		 npods;
	TAILQ_HEAD(pod_queue, pod) netd_queue;	/* for a slot: ADD, DEL */
	struct pod_queue	 netd_bg_queue;	/* ...making sure of rules */
	uint32_t		 netd_inflight;
	/* The id of the last request that removed a pod's IPv6 rules: the
	 * pod is gone, and a rule dump asked before it may still show them
	 * (reconcile, rules_changing). */
	uint32_t		 rules6_del_req;
	TAILQ_HEAD(, waiter)	 waiters;
	uint32_t		 nwaiters;

	/* the cloud's view of the instance's attachments: the last
	 * describe's, kept current by enid's own attaches and removals
	 * (cloud_view_attached, cloud_view_gone) until the next one */
	uint32_t		 ncloud_atts;
	struct cloud_att {
		char		 id[MSG_ID_LEN];
		uint32_t	 dev;
	}			 cloud_atts[POOL_MAX_ENIS + 1];

	/* planning */
	struct loop_defer	 kick;
	/* the next ENI declare or set-up for netd, one at a time (eni.c) */
	struct loop_defer	 setup_turn;
	struct loop_timer	 plan_timer;
	uint64_t		 surplus_since;
	bool			 surplus_held;	/* said it can't shrink */
	uint64_t		 grow_backoff_until;
	uint32_t		 grow_backoff_ms;
	uint64_t		 last_add_ms;	/* an ADD came (cni.c) */
	uint64_t		 gather_since;	/* growth held since, or 0 */
	enum pool_block		 blocked;
	char			 last_failure[MSG_ERR_LEN];
	char			 last_failure_code[32];
	uint64_t		 last_failure_at;
	uint64_t		 growth_ok_at;	/* ms: growth last succeeded */
	/* the cloud as cloudd's answers tell it (broker_answer): when it
	 * last answered (any outcome but transient: it was reached and
	 * decided), when a call last failed to reach it, and why */
	uint64_t		 cloud_answered_at;	/* ms; 0: never */
	uint64_t		 cloud_failed_at;	/* ms; 0: never */
	char			 cloud_failure[MSG_ERR_LEN + 96];

	/* what the store gave back at start: its cooling addresses, until
	 * their ENIs are set up (pods_bind_restored) */
	struct checkpoint	 restored;
	/* No usable checkpoint of this node's: the pods are rebuilt from
	 * the kernel's rules by the first run (recon_recover_pods), and by
	 * each next one while an ENI the start found attaching or
	 * detaching (start_skipped) is neither adopted nor gone. */
	bool			 rebuild_from_kernel;
	bool			 checkpoint_lost; /* unusable, moved aside */
	bool			 checkpoint_none; /* none, or another's */
	uint32_t		 npods_recovered; /* from the kernel's rules */
	int64_t			 started_wall;	/* unix s, engine_init */

	/* reconciliation */
	struct reconcile_run	*recon;
	uint32_t		 recon_restores;	/* pods' rules on their way */
	/* ENIs the start's reconcile found attaching to this node, to be
	 * taken in later: that is still the start's rebuilding, not drift */
	uint32_t		 nstart_skipped;
	char			 start_skipped[POOL_MAX_ENIS][MSG_ID_LEN];
	bool			 recon_again;
	uint64_t		 recon_asked;	/* ms: the latest run's start */
	bool			 started_recon;
	struct loop_timer	 recon_timer;
	struct loop_timer	 subnets_timer;
	struct jref		 recon_waiters[8];
	uint32_t		 nrecon_waiters;
	/* Told as each run starts, by a handler that registered it (the
	 * SNAT sync, snat.c): the engine calls no handler by name. */
	void			(*on_reconcile)(struct broker *b);
	/* Stops enid with an exit code (enid.c registers broker_shutdown):
	 * a configuration the engine finds it cannot serve. */
	void			(*on_stop)(struct broker *b, int code,
				    const char *why);
	struct engine_stats	 stats;
};

/* eni.c */
void	engine_init(struct broker *b);
void	engine_start(struct broker *b);		/* instance known, policy set */
void	engine_kick(struct broker *b);		/* re-plan after this turn */
uint32_t	engine_growth_deadline_ms(const struct broker *b);
/* What a cloudd answer says of the cloud: reached, or not (status). */
void	engine_cloud_heard(struct broker *b, const struct msg *m);
struct eni *eni_find(struct broker *b, const char *id);
struct eni *eni_new(struct broker *b);
/* The lifecycle (eni.c's opening comment): e moves to st, or enters the
 * pool in st from new, and st's entry action runs (again, if e was in st
 * already); a transition not in its table is refused, fatally in a debug
 * build. */
void	eni_set_state(struct eni *e, enum eni_state st, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));

void	eni_configure(struct eni *e);		/* netd set-up, then ready */
/* An ENI's declare or set-up waits for netd, or is with it: pods' rules
 * that no runtime waits for are held back meanwhile. */
bool	engine_setup_waiting(struct broker *b);
void	eni_setup_request(const struct eni *e, const struct subnet *s,
	    struct msg_netd_setup_eni *req);
void	eni_remove(struct eni *e, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
void	eni_free(struct eni *e);
/* The store's saved function: unassigns that waited for a save go. */
void	eni_unassigns_saved(struct broker *b);
bool	eni_addrs_changing(const struct eni *e);
void	eni_set_dot(struct eni *e);
/* The cloud's view of the instance's attachments, as enid changes it:
 * id attached as device dev; id seen available, or gone. */
void	cloud_view_attached(struct broker *b, const char *id, uint32_t dev);
void	cloud_view_gone(struct broker *b, const char *id);
struct subnet *subnet_by_id(struct broker *b, const char *id);
void	engine_fail_growth(struct broker *b, const char *code,
	    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
uint32_t eni_table(struct broker *b, int device_index);
/* e's id, or "(new ENI)" while it is being created: for logs. */
const char *eni_name(const struct eni *e);

/* eniaddr.c: an ENI's addresses and prefixes */
/* The address lifecycle: e's address idx moves to st, as lifecycle.c's
 * table allows (any other move is a bug, refused). */
void	addr_set(struct eni *e, uint32_t idx, enum addr_state st);
/* The pool's entry for address ip (network order), or NULL. */
struct eni_addr *engine_addr(struct broker *b, uint32_t ip);
int	eni_addr_index(const struct eni *e, uint32_t ip);
/* e's prefix with first address base, or -1. */
int	eni_prefix_index(const struct eni *e, uint32_t base);
/* The address of e a new pod takes at now: of the fullest prefix not
 * frozen, then single ones and empty prefixes' (empty prefixes first with
 * prefix delegation on), then frozen ones; the one rested longest among
 * equals.  -1 if none is free. */
int	eni_pick_addr(const struct eni *e, uint64_t now);
/* Take the single addresses, or the prefixes, a cloud answer names for
 * e, each checked (a refused one is logged and never used): how many
 * were taken. */
uint32_t eni_take_addrs(struct eni *e, const uint32_t *addrs, uint32_t n,
	    enum addr_state st, const char *what);
uint32_t eni_take_prefixes(struct eni *e, const uint32_t *prefixes,
	    uint32_t n, enum addr_state st, const char *what);
/* Take back, as st, the addresses of e's prefix base that are not in
 * the pool and that a lost pod no longer holds: how many. */
uint32_t eni_prefix_retake(struct eni *e, uint32_t base, enum addr_state st);
/* Forget e's address idx, or its prefix k and the prefix's addresses
 * (their pods are lost). */
void	eni_drop_addr(struct eni *e, uint32_t idx);
void	eni_drop_prefix(struct eni *e, uint32_t k, const char *why);
/* No new pod in e's prefix k for the policy's freeze time from now. */
void	eni_freeze_prefix(struct eni *e, uint32_t k, uint64_t now);
bool	eni_addr_acceptable(struct broker *b, const struct eni *e, uint32_t ip,
	    char *why, size_t whylen);

/* eni6.c: an ENI's IPv6.  Learn its own address and /80 from a cloud
 * entry (how: "created", "reconcile"...), checked; forget those the
 * entry no longer lists. */
void	eni6_learn(struct eni *e, const struct msg_cloud_eni *ce,
	    const char *how);
/* Ask for what ready ENIs lack (their own address, their /80); returns
 * when to look again (ms, monotonic; 0: an event will tell). */
uint64_t eni6_plan(struct broker *b, uint64_t now);
/* The next pod address of e's /80, in order; family 0 if it has none. */
struct ip_addr eni6_next(struct eni *e);
/* With ip_family ipv4: once no pod holds an IPv6 address, stop keeping
 * the pods' IPv6 (broker_ipv6_held). */
void	eni6_held_check(struct broker *b);

/* Can a be e's pod's IPv6 address (a restored pod's)?  Not if e's /80
 * is known and a lies outside it, or a lies in another ENI's /80; why
 * says which. */
bool	eni6_pod_addr_ok(const struct eni *e, const struct ip_addr *a,
	    char *why, size_t whylen);
void	engine_withhold_addr(struct broker *b, const struct pod *p);
void	engine_release_addr(struct eni *e, int idx, bool cool);
/* Cooling addresses whose time is up come free, and unconfirmed ones a
 * reconciliation has seen: when the next one is due (ms, 0: none). */
uint64_t engine_cool(struct broker *b, uint64_t now);
/* When the cooling addresses on ready ENIs come free, earliest first,
 * into out[max]: how many. */
uint32_t engine_cooling_frees(struct broker *b, uint64_t now, uint64_t *out,
	    uint32_t max);
void	engine_counts(struct broker *b, uint32_t *free_, uint32_t *assigned,
	    uint32_t *cooling, uint32_t *other);

/* pods.c */
void	pods_init(struct broker *b);
struct pod *pod_find(struct broker *b, const char *cid, const char *ifname);
/* The store's build function: the pods and the cooling addresses. */
int	engine_record(struct broker *b, struct checkpoint *c);
/* Take a free address of e for a new pod, ask netd for its rules and
 * have it saved; ref (taken) is answered once both are done. */
void	pod_take(struct broker *b, struct jref *ref, const char *cid,
	    const char *ifname, const char *ns, const char *name,
	    const char *uid, const char *veth, struct eni *e);
/* The ENI a new pod takes its address from now, or NULL. */
struct eni *pods_pick_eni(struct broker *b);
/* Pods at max_pods, or at what the checkpoint records; and the answer
 * that says so. */
bool	pods_at_max(const struct broker *b);
void	refuse_max_pods(const struct broker *b, struct jref *ref);
/*
 * A pod's ADD answer, formatted into buf (POD_ANSWER_MAX bytes): its
 * length.  The bound holds every field at its longest, the ENI id escaped
 * at six bytes a byte.
 */
#define POD_ANSWER_MAX	(256 + 6 * MSG_ID_LEN + \
			    MSG_MAX_CIDRS * (CIDR4_STR_LEN + 3) + \
			    2 * IP_ADDR_STR_LEN + IP_PREFIX_STR_LEN + \
			    MSG_MAX_CIDRS6 * (IP_PREFIX_STR_LEN + 3))
size_t	pod_answer(struct broker *b, const struct pod *p, char *buf,
	    size_t size);
/* A repeated ADD of a ready pod: the same answer, but no sooner than the
 * save that may hold the pod (store_reply_after_pending). */
void	pod_answer_again(struct broker *b, struct jref *ref, struct pod *p);
/* Ask netd for p's rules now, or queue it for a slot. */
void	pod_netd_send(struct pod *p);
/* p out of the queue of those only made sure of (a runtime now waits for
 * it): true if it was there (it is then in no queue); a reconcile that
 * counted on it goes on unless send. */
bool	pod_netd_unqueue_bg(struct pod *p, bool send);
/* Remove p's rules, then the pod. */
void	pod_del_start(struct pod *p);
/* One pod a GC released is gone: the GC is answered with the last. */
void	gc_release_done(struct broker *b, struct gc_run *gc);
/* An ADD waits for an address, at most add_timeout (ref taken). */
struct cni_request;
void	waiter_add(struct broker *b, struct jref *ref,
	    const struct cni_request *r);
/* Free w and hand back its request, to be answered after. */
struct jref waiter_take(struct broker *b, struct waiter *w);
void	pods_serve_waiters(struct broker *b);
void	pods_netd_run(struct broker *b);	/* send what waits for netd */
/* Answer code to the waiting ADDs whose add_timeout ends by before (ms,
 * monotonic; UINT64_MAX: all of them). */
void	waiters_fail(struct broker *b, uint64_t before, const char *code,
	    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Those a cooling address won't serve in time (frees: when the pool's
 * cooling addresses come free, earliest first); all, if nfrees is 0. */
void	waiters_fail_but_cooling(struct broker *b, const uint64_t *frees,
	    uint32_t nfrees, const char *code, const char *fmt, ...)
	    __attribute__((format(printf, 5, 6)));
void	pod_lost(struct pod *p, const char *why);
/* A reconcile's restore of p's rules: false if none could start. */
bool	pod_rules_restore(struct pod *p);
/* A pod other than except, lost or not, whose address (IPv4 or IPv6) is
 * ip, or NULL. */
struct pod *pod_with_ip(struct broker *b, const struct ip_addr *ip,
	    bool lost, const struct pod *except);
/* Does p hold ip, as its IPv4 or its IPv6 address? */
bool	pod_has_ip(const struct pod *p, const struct ip_addr *ip);
/* p's address for a log line: its IPv4 one, else its IPv6 one. */
const struct ip_addr *pod_main_ip(const struct pod *p);
/* A pod that keeps ip from ENI e though no ENI holds it (lost, or
 * restored on another ENI and not bound yet), or NULL; and why. */
struct pod *pod_keeping_ip(struct broker *b, const struct ip_addr *ip,
	    const struct eni *e);
const char *pod_keeping_why(const struct pod *p);
void	pod_restore(struct broker *b, const struct ckpt_pod *cp);
void	pods_bind_restored(struct broker *b);
/* e goes: the pods it holds in no address slot (IPv6 only, recovered
 * from the kernel's rules) are lost. */
void	pods_eni_leaving(struct eni *e, const char *why);
/* e's /80 (prefix6) is the cloud's no longer: the pods with an IPv6
 * address in it are lost, their IPv4 addresses out of the pool. */
void	pods_prefix6_gone(struct eni *e, const struct ip_addr *prefix6,
	    const char *why);
void	pod_rules_ensure(struct pod *p);

/* reconcile.c */
void	reconcile_now(struct broker *b, const char *why);
/* A pod's rules a run restored are in, or the pod is gone. */
void	reconcile_restored(struct broker *b);
void	reconcile_schedule(struct broker *b);
void	subnets_describe(struct broker *b);

#endif /* ENID_ENGINE_H */
