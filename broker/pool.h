/*
 * The pool's policy, as one pure function of (pool, policy, cloud facts,
 * now) returning actions (doc/design.md, "The pool engine").  The
 * broker's engine (eni.c) builds the view, calls pool_plan(), and carries
 * the actions out through enid-cloudd and enid-netd; nothing here does
 * I/O, so the unit tests reach every decision.
 *
 * The pool's unit is a block: a single /32 address, or a /28 prefix of
 * POOL_PREFIX_ADDRS addresses (EC2 prefix delegation).  An ENI's room is
 * counted in slots, shared by both: each single address takes one, each
 * prefix one.  Counts of addresses (assigned, free, ...) are of every
 * address, a prefix's included.  Cooling addresses never count as free.
 */
#ifndef ENID_POOL_H
#define ENID_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "maxima.h"
#include "msg.h"

#define POOL_MAX_ENIS		ENID_MAX_ENIS	/* maxima.h */
#define POOL_MAX_ADDRS		MSG_MAX_ENI_ADDRS	/* singles */
#define POOL_PREFIX_ADDRS	ENID_PREFIX_ADDRS	/* a /28's */
/* Prefixes on one ENI the pool uses: 16 of them, 256 addresses, more
 * than any pod count a kubelet is held to needs of one ENI. */
#define POOL_MAX_PREFIXES	ENID_MAX_ENI_PREFIXES
/* Addresses on one ENI, singles and prefixes' together. */
#define POOL_MAX_ENI_ADDRS	(POOL_MAX_PREFIXES * POOL_PREFIX_ADDRS)
_Static_assert(POOL_MAX_ENI_ADDRS >= POOL_MAX_ADDRS,
    "an ENI's table must hold its singles");
#define POOL_MAX_SUBNETS	CONF_MAX_SUBNETS
#define POOL_MAX_ACTIONS	(3 * POOL_MAX_ENIS)
/* Addresses the pool holds at most, all ENIs together: the pods one enid
 * serves (prefixes round it up by less than one). */
#define POOL_MAX_HELD		ENID_MAX_PODS

/*
 * An ENI's lifecycle, one machine (lifecycle.c holds its table, eni.c
 * performs it).  enidctl show enis and the metrics give each state one of
 * eight words, several states sharing one (eni_state_shown): netd's three
 * set-up steps show as "configuring", tearing-down as "draining", waiting
 * as "detaching".
 */
enum eni_state {
	ENI_NEW = 0,		/* made (eni_new), not in the pool yet */
	ENI_CREATING,		/* CreateNetworkInterface sent */
	ENI_ATTACHING,		/* AttachNetworkInterface sent, or found
				 * attached (adopted): set up next */
	ENI_DECLARING,		/* netd told of its MAC and table */
	ENI_LINKING,		/* netd waits for its link */
	ENI_SETTING_UP,		/* netd sets up its table and routes */
	ENI_READY,		/* its addresses are in the pool */
	ENI_DRAINING,		/* no new pods; removed once none is left */
	ENI_TEARING_DOWN,	/* removal begun: netd tears its table down
				 * and forgets it */
	ENI_DETACHING,		/* detach sent; waiting until available */
	ENI_WAITING,		/* not attached as enid knows: looked at
				 * again until the cloud shows it available */
	ENI_DELETING,		/* available: delete sent */
	ENI_QUARANTINED,	/* set-up failed or inconsistent: never used,
				 * removed by the detach/delete path */
	ENI_STATE_COUNT
};

const char	*eni_state_name(enum eni_state s);
/* The word shown for s: creating, attaching, configuring, ready,
 * draining, detaching, deleting or quarantined ("new" for new). */
const char	*eni_state_shown(enum eni_state s);
/* On its way into the pool: creating, attaching, or being set up. */
bool		 eni_state_arriving(enum eni_state s);
/* Shown as configuring: declaring, linking, setting-up. */
bool		 eni_state_configuring(enum eni_state s);
/* Shown as draining: draining, tearing-down. */
bool		 eni_state_draining(enum eni_state s);

/* An address of an ENI, in the pool's lifecycle (lifecycle.c). */
enum addr_state {
	ADDR_PENDING = 0,	/* its ENI is not ready: not in the pool */
	ADDR_FREE,		/* ready to hand out */
	ADDR_ASSIGNED,		/* a pod's */
	ADDR_COOLING,		/* released: to no pod before cool_until */
	ADDR_REMOVING,		/* being given back (held, then unassigned) */
	ADDR_UNCONFIRMED,	/* given back with an unknown or refused
				 * outcome, or restored as cooling: used
				 * again only once the cloud is seen to
				 * have it after cool_until */
	ADDR_STATE_COUNT
};

const char	*addr_state_name(enum addr_state s);
bool		 addr_transition_ok(enum addr_state from, enum addr_state to);
/* The ENI lifecycle's table (lifecycle.c): may an ENI in from move to to
 * (staying is allowed but in new, which nothing enters), and may one
 * enter the pool (leave new) in st? */
bool		 eni_transition_ok(enum eni_state from, enum eni_state to);
bool		 eni_birth_ok(enum eni_state st, bool primary);

/* What the policy sees of one prefix of an ENI. */
struct pool_prefix_view {
	uint32_t	free;		/* its addresses ready to hand out */
	uint32_t	used;		/* assigned, cooling, being given
					 * back, or not yet in the pool */
	uint32_t	assigned;	/* of those, held by pods */
	uint64_t	frozen_until;	/* ms: no new pods before */
};

/* What the policy sees of one ENI. */
struct pool_eni_view {
	enum eni_state	state;
	bool		primary;	/* device 0: never released */
	bool		usable;		/* pods may take its addresses */
	bool		busy;		/* an address operation is in flight */
	uint32_t	subnet;		/* index into pool_facts.subnets */
	uint32_t	capacity;	/* addresses it may hold for pods */
	uint32_t	assigned;	/* held by pods */
	uint32_t	cooling;	/* released, not reusable yet */
	uint32_t	free;		/* ready to hand out */
	uint32_t	adding;		/* on their way in (assign in flight,
					 * or coming with the ENI itself) */
	uint32_t	removing;	/* unassign in flight */
	uint64_t	keep_until;	/* ms (monotonic): give back none of
					 * its addresses before (refused) */
	/* Its prefixes: those it holds (prefix[0..nprefixes)), then
	 * prefixes_adding more on their way.  prefix_addrs: of the address
	 * counts above, how many are its prefixes' (an assign of prefixes
	 * in flight counts POOL_PREFIX_ADDRS each in adding); the rest are
	 * single addresses, a slot each. */
	uint32_t	nprefixes;
	uint32_t	prefixes_adding;
	uint32_t	prefix_addrs;
	uint32_t	frozen_free;	/* free, in frozen prefixes */
	/* ip_family ipv6: its /80 is delegated (pods may take from it);
	 * assigned then counts the pods on it, whatever their families. */
	bool		has6;
	struct pool_prefix_view prefix[POOL_MAX_PREFIXES];
};

struct pool_subnet_view {
	bool		configured;	/* growth may use it */
	uint32_t	available;	/* free addresses, as last known */
	uint64_t	inhibited_until; /* ms (monotonic); 0: usable */
	/* Prefixes refused here lately (no aligned /28 free): growth
	 * takes single addresses in it until then, prefixes elsewhere. */
	uint64_t	prefix_inhibited_until;
};

struct pool_params {
	uint32_t	warm_ip_target;
	uint32_t	minimum_ip_target;
	uint32_t	warm_eni_target;
	uint32_t	max_pods;	/* 0: no cap but capacity */
	uint32_t	max_enis;	/* the effective limit, primary included */
	/* max_enis is enid's ENID_MAX_ENIS, the cloud's being more */
	bool		max_enis_enid;
	uint32_t	block_size;	/* a single's addresses: 1 */
	uint64_t	shrink_delay_ms; /* surplus must last this long */
	/* Prefix delegation: on, and the instance can hold prefixes. */
	bool		prefixes;
	uint32_t	warm_prefix_target;	/* free prefixes' worth */
	uint64_t	freeze_ms;	/* a frozen prefix stays so this long */
	/* ip_family ipv6: pods take IPv6 addresses only, from their ENI's
	 * /80; the pool is driven by ENIs, not IPv4 addresses (plan6). */
	bool		ipv6_only;
};

struct pool_facts {
	uint32_t	attached_enis;	/* the cloud's count, all attached */
	uint32_t	waiters;	/* ADDs waiting for an address */
	uint64_t	growth_backoff_until;	/* ms; 0: none */
	uint64_t	surplus_since;	/* ms; 0: no surplus seen */
	uint32_t	nsubnets;
	struct pool_subnet_view subnets[POOL_MAX_SUBNETS];
	uint32_t	nenis;
	struct pool_eni_view enis[POOL_MAX_ENIS];
};

enum pool_act {
	ACT_ASSIGN = 0,		/* add count blocks to ENI eni */
	ACT_CREATE_ENI,		/* a new ENI in subnet, with count blocks */
	ACT_UNASSIGN,		/* give back count free single addresses */
	ACT_RELEASE_ENI,	/* drain, detach and delete eni */
	ACT_UNASSIGN_PREFIX,	/* give back eni's wholly free prefix */
	ACT_FREEZE_PREFIX,	/* no new pods in eni's prefix, for a while */
};

struct pool_action {
	enum pool_act	type;
	uint32_t	eni;
	uint32_t	subnet;
	uint32_t	count;
	bool		prefixes;	/* assign, create: count is prefixes */
	uint32_t	prefix;		/* unassign-, freeze-prefix: which */
};

/* Why growth can't cover the need: what waiters are told. */
enum pool_block {
	BLOCK_NONE = 0,
	BLOCK_MAX_PODS,		/* max_pods (ENID_MAX_PODS) addresses held */
	BLOCK_ENI_LIMIT,	/* no room on any ENI, and no ENI slot left */
	BLOCK_SUBNET_FULL,	/* no configured subnet has addresses */
	BLOCK_BACKOFF,		/* growth failed lately and is backing off */
	BLOCK_ENID_LIMIT,	/* enid's own tables (maxima.h) hold no more,
				 * the cloud's limits being more */
};

const char	*pool_block_name(enum pool_block b);

struct pool_plan {
	uint32_t	need;		/* addresses the pool should hold */
	uint32_t	have;		/* held, cooling, free, on their way */
	uint32_t	used_slots;	/* ENI attachment slots counted used */
	enum pool_block	blocked;
	bool		surplus;	/* more free than needed right now */
	/* When this plan, with nothing else changing, would first differ
	 * (a surplus's delay over, an ENI's keep_until, a subnet's inhibit
	 * or growth's backoff ending): ms after now, or 0 for never.  Events
	 * (a pod, a cloud answer) plan again by themselves. */
	uint64_t	wake;
	/* Growth that took single addresses where prefixes were wanted,
	 * their subnet refusing prefixes lately (a fallback, counted). */
	bool		fallback;
	size_t		nactions;
	struct pool_action actions[POOL_MAX_ACTIONS];
};

void	pool_plan(const struct pool_params *p, const struct pool_facts *f,
	    uint64_t now, struct pool_plan *out);

/*
 * The ENI a new pod's address comes from: the fullest ready, usable ENI
 * that has a free address outside a frozen prefix (packing pods so others
 * can be released), or failing that the fullest with any free address.
 * Returns its index, or -1 if none has one.
 */
int	pool_pick_eni(const struct pool_facts *f);

/*
 * How long an ENI keeps its addresses after its nth refused unassign in a
 * row (n >= 1): base ms, doubling each time, up to max ms.
 */
uint64_t	pool_refused_backoff_ms(uint32_t n, uint64_t base, uint64_t max);

/*
 * When an address that cools comes free, as far as can be told at now
 * (ms): a cooling one at its cool_until; an unconfirmed one (an unassign
 * may have taken it) once a reconciliation asked at or after cool_until
 * has found it on its ENI.  The latest run was asked at recon_asked and
 * is still on its way if recon_running; retry_ms is how long after a run
 * that passed the address by (its ENI's addresses were changing) the
 * next is asked.
 */
struct pool_confirm {
	uint64_t	recon_asked;	/* ms */
	bool		recon_running;
	uint64_t	retry_ms;
};

uint64_t	pool_cooling_free_at(bool unconfirmed, uint64_t cool_until,
		    const struct pool_confirm *c, uint64_t now);

/* The params from the configuration and the instance's limits. */
void	pool_params_from(struct pool_params *p, const struct enid_config *cfg,
	    uint32_t cloud_max_enis);

#endif /* ENID_POOL_H */
