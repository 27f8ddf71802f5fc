/*
 * The pool policy (see pool.h): from how many addresses pods hold, how
 * many cool, how many are free or on their way, decide whether to grow
 * (assign addresses on ready ENIs, create ENIs) or shrink (unassign free
 * addresses, release empty ENIs), or why growth is blocked.
 *
 * The need: pods' addresses, the cooling ones, and the warm target of free
 * ones (warm_ip_target, or warm_eni_target ENIs' worth; with prefix
 * delegation the larger of warm_ip_target and warm_prefix_target
 * prefixes' worth, warm_eni_target unused), at least
 * minimum_ip_target, never more free than max_pods (or, without it, the
 * ENID_MAX_PODS enid holds) leaves room for, and always enough for the
 * ADDs waiting.  Growth fills ready ENIs first, the
 * fullest first; then creates ENIs in the configured subnet with the most
 * free addresses, never past the ENI limit as the cloud counts it.
 * Shrinking waits until the surplus has lasted shrink_delay and never takes
 * the pool below the need, so the next plan does not grow it back: no
 * flapping.  An ENI that holds or cools a pod's address is never released.
 *
 * Prefixes (prefix delegation on, the instance able to hold them): growth
 * takes /28 prefixes, and falls back to single addresses only in a subnet
 * that refused prefixes lately (its prefix inhibit, which ends by itself:
 * never sticky); shrinking gives back single addresses first, then only
 * prefixes none of whose addresses is in use, and freezes the emptiest
 * prefix for a while when none is (plan_shrink).  Blocks of both kinds
 * share an ENI's slots.
 *
 * ip_family ipv6 (plan6): no IPv4 address is assigned for pods.  A /80
 * holds more pods than any node runs, so the pool is one usable ENI with
 * its /80 (the primary's, if its subnet is configured): growth creates
 * an ENI only when none is ready or on its way, and an ENI without pods
 * is released once another serves and the surplus lasted shrink_delay.
 */
#include <string.h>

#include "pool.h"

const char *
pool_block_name(enum pool_block b)
{
	switch (b) {
	case BLOCK_NONE:
		return "none";
	case BLOCK_MAX_PODS:
		return "max-pods";
	case BLOCK_ENI_LIMIT:
		return "eni-limit";
	case BLOCK_SUBNET_FULL:
		return "subnet-full";
	case BLOCK_BACKOFF:
		return "backoff";
	case BLOCK_ENID_LIMIT:
		return "max-pods";	/* what waiters are told */
	}
	return "?";
}

void
pool_params_from(struct pool_params *p, const struct enid_config *cfg,
    uint32_t cloud_max_enis)
{
	memset(p, 0, sizeof(*p));
	p->warm_ip_target = cfg->pool.warm_ip_target;
	p->minimum_ip_target = cfg->pool.minimum_ip_target;
	p->warm_eni_target = cfg->pool.warm_eni_target;
	p->max_pods = cfg->pool.max_pods;
	/* The configured limit may only lower the cloud's. */
	p->max_enis = cloud_max_enis;
	if (cfg->pool.max_enis != 0 && cfg->pool.max_enis < p->max_enis)
		p->max_enis = cfg->pool.max_enis;
	if (p->max_enis > POOL_MAX_ENIS) {
		p->max_enis = POOL_MAX_ENIS;
		p->max_enis_enid = true;
	}
	p->block_size = 1;
	p->shrink_delay_ms = (uint64_t)cfg->pool.shrink_delay_s * 1000;
	/* prefixes: the engine sets it once the instance is known to hold
	 * them (a configuration asking on one that can't runs without) */
	p->warm_prefix_target = cfg->pool.warm_prefix_target;
	p->freeze_ms = (uint64_t)cfg->pool.prefix_freeze_s * 1000;
}

static uint32_t
min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

static uint32_t
eni_holds(const struct pool_eni_view *e)
{
	return e->assigned + e->cooling + e->free + e->adding + e->removing;
}

/* Slots e's blocks take: a single address one, a prefix one. */
static uint32_t
eni_slots_used(const struct pool_eni_view *e)
{
	uint32_t held = eni_holds(e);
	uint32_t singles = held > e->prefix_addrs ? held - e->prefix_addrs : 0;

	return singles + e->nprefixes + e->prefixes_adding;
}

/* Slots of e still free, for blocks of either kind. */
static uint32_t
eni_room(const struct pool_eni_view *e)
{
	uint32_t used = eni_slots_used(e);

	return used < e->capacity ? e->capacity - used : 0;
}

/* Addresses of either kind the engine's table of e may still take: an
 * ENI with more slots than prefixes can fill its slots past it. */
static uint32_t
eni_table_room(const struct pool_eni_view *e)
{
	uint32_t held = eni_holds(e);

	return held < POOL_MAX_ENI_ADDRS ? POOL_MAX_ENI_ADDRS - held : 0;
}

/* Prefixes e may still take: its free slots, within the pool's tables. */
static uint32_t
eni_prefix_room(const struct pool_eni_view *e)
{
	uint32_t room = eni_room(e), n = e->nprefixes + e->prefixes_adding;
	uint32_t table = n < POOL_MAX_PREFIXES ? POOL_MAX_PREFIXES - n : 0;
	uint32_t addrs = eni_table_room(e) / POOL_PREFIX_ADDRS;

	return min_u32(room, min_u32(table, addrs));
}

/* Single addresses e may still take, likewise. */
static uint32_t
eni_single_room(const struct pool_eni_view *e)
{
	uint32_t room = eni_room(e), held = eni_holds(e);
	uint32_t singles = held > e->prefix_addrs ? held - e->prefix_addrs : 0;
	uint32_t table = singles < POOL_MAX_ADDRS ? POOL_MAX_ADDRS - singles :
	    0;

	return min_u32(room, min_u32(table, eni_table_room(e)));
}

/* Counts a new ENI toward the attachment limit from CreateNetworkInterface
 * on, and until its detach is done: conservative on purpose, so the pool
 * never asks for an attachment the instance has no slot for. */
static bool
state_uses_slot(enum eni_state s)
{
	return s != ENI_DELETING;
}

static uint32_t
round_up(uint32_t n, uint32_t block)
{
	return block > 1 ? (n + block - 1) / block * block : n;
}

static uint32_t
round_down(uint32_t n, uint32_t block)
{
	return block > 1 ? n / block * block : n;
}

/* Prefixes that hold n addresses. */
static uint32_t
prefixes_for(uint32_t n)
{
	return (n + POOL_PREFIX_ADDRS - 1) / POOL_PREFIX_ADDRS;
}

/* Wake at t too, if it is still to come. */
static void
wake_at(struct pool_plan *out, uint64_t t, uint64_t now)
{
	if (t > now && (out->wake == 0 || t < out->wake))
		out->wake = t;
}

/* A secondary ENI ready and in no operation: one that may be given back
 * once it serves nothing. */
static bool
eni_spare(const struct pool_eni_view *e)
{
	return !e->primary && e->state == ENI_READY && !e->busy;
}

/* Whether the surplus has lasted shrink_delay (one seen first now is held
 * from now); if not, a wake when it will have. */
static bool
surplus_lasted(const struct pool_params *p, const struct pool_facts *f,
    uint64_t now, struct pool_plan *out)
{
	uint64_t since = f->surplus_since ? f->surplus_since : now;

	if (now < since + p->shrink_delay_ms) {
		wake_at(out, since + p->shrink_delay_ms, now);
		return false;
	}
	return true;
}

static struct pool_action *
add_action(struct pool_plan *out, enum pool_act type, uint32_t eni,
    uint32_t subnet, uint32_t count)
{
	static struct pool_action spare;
	struct pool_action *a;

	if (out->nactions == POOL_MAX_ACTIONS) {
		/* Not planned: written to where nobody reads. */
		memset(&spare, 0, sizeof(spare));
		return &spare;
	}
	a = &out->actions[out->nactions++];
	memset(a, 0, sizeof(*a));
	a->type = type;
	a->eni = eni;
	a->subnet = subnet;
	a->count = count;
	return a;
}

/* May growth use subnet i for addresses at all, at now? */
static bool
subnet_open(const struct pool_facts *f, uint32_t i, uint64_t now)
{
	return i < f->nsubnets && f->subnets[i].configured &&
	    f->subnets[i].inhibited_until <= now;
}

/* May growth ask subnet i for prefixes, at now? */
static bool
subnet_prefixes(const struct pool_params *p, const struct pool_facts *f,
    uint32_t i, uint64_t now)
{
	return p->prefixes && subnet_open(f, i, now) &&
	    f->subnets[i].prefix_inhibited_until <= now;
}

/* The open subnet with the most free addresses, room for an ENI's own
 * primary address and at least one block more (prefixes: in one that
 * takes prefixes; else, with prefix delegation on, in one that does not
 * now: single addresses are the fallback); or -1. */
static int
pick_subnet(const struct pool_params *p, const struct pool_facts *f,
    const uint32_t *avail, uint64_t now, bool prefixes)
{
	uint32_t least = prefixes ? POOL_PREFIX_ADDRS + 1 : 2, i;
	int best = -1;

	for (i = 0; i < f->nsubnets; i++) {
		if (!subnet_open(f, i, now) || avail[i] < least)
			continue;
		/* Single addresses, with prefix delegation on, only where
		 * prefixes are refused now, or could not fit. */
		if (p->prefixes && subnet_prefixes(p, f, i, now) != prefixes &&
		    (prefixes || avail[i] > POOL_PREFIX_ADDRS))
			continue;
		if (best == -1 || avail[i] > avail[best])
			best = (int)i;
	}
	return best;
}

/* e's free addresses that are single ones. */
static uint32_t
free_singles(const struct pool_eni_view *e)
{
	uint32_t k, in_prefixes = 0;

	for (k = 0; k < e->nprefixes && k < POOL_MAX_PREFIXES; k++)
		in_prefixes += e->prefix[k].free;
	return e->free > in_prefixes ? e->free - in_prefixes : 0;
}

/* remaining less what n blocks of size hold. */
static uint32_t
covered(uint32_t remaining, uint32_t n, uint32_t size)
{
	uint64_t c = (uint64_t)n * size;

	return c >= remaining ? 0 : remaining - (uint32_t)c;
}

/*
 * Growth, by as many addresses as deficit says.  With prefix delegation,
 * in this order: prefixes on ready ENIs whose subnet takes them, the
 * fullest first; then room on ENIs on their way; then new ENIs with
 * prefixes in a subnet that takes them; only then single addresses, on
 * ENIs (ready, or new) in subnets that refused prefixes lately (the
 * fallback).  Without, single addresses as the first and last steps.
 */
static void
plan_grow(const struct pool_params *p, const struct pool_facts *f,
    uint64_t now, bool eni_mode, uint32_t deficit, uint32_t in_flight,
    struct pool_plan *out)
{
	uint32_t remaining = deficit, slots, order[POOL_MAX_ENIS];
	uint32_t avail[POOL_MAX_SUBNETS], i, j, n = 0;
	bool any_subnet = false, room_in_full_subnet = false;
	bool tables_full = false;
	bool done[POOL_MAX_ENIS];
	int s;

	if (f->growth_backoff_until > now) {
		out->blocked = BLOCK_BACKOFF;
		wake_at(out, f->growth_backoff_until, now);
		return;
	}
	/* A subnet out of addresses lately may serve again when its inhibit
	 * ends; one that refused prefixes, take them again. */
	for (i = 0; i < f->nsubnets; i++)
		if (f->subnets[i].configured) {
			wake_at(out, f->subnets[i].inhibited_until, now);
			if (p->prefixes)
				wake_at(out,
				    f->subnets[i].prefix_inhibited_until, now);
		}
	/* Ready usable ENIs with room, the fullest first: packing. */
	for (i = 0; i < f->nenis; i++) {
		const struct pool_eni_view *e = &f->enis[i];

		if (e->state != ENI_READY || !e->usable || eni_room(e) == 0)
			continue;
		/* Slots the cloud would fill, but enid's table of the ENI
		 * holds no more (POOL_MAX_ENI_ADDRS: maxima.h). */
		if (eni_prefix_room(e) == 0 && eni_single_room(e) == 0)
			tables_full = true;
		/* Its subnet ran out lately: no address to be had there. */
		if (!subnet_open(f, e->subnet, now)) {
			room_in_full_subnet = true;
			continue;
		}
		if (!e->busy)
			order[n++] = i;
	}
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && f->enis[order[j]].assigned >
		    f->enis[order[j - 1]].assigned; j--) {
			uint32_t t = order[j];

			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	memset(done, 0, sizeof(done));
	for (i = 0; i < f->nsubnets; i++) {
		avail[i] = f->subnets[i].available;
		if (subnet_open(f, i, now) && avail[i] > 1)
			any_subnet = true;
	}

	/* Prefixes on ready ENIs whose subnet takes them, no more than its
	 * free addresses hold: asked for more, the cloud refuses them all,
	 * and growth falls back to single addresses for prefix_backoff_s. */
	for (i = 0; i < n && remaining > 0 && p->prefixes; i++) {
		const struct pool_eni_view *e = &f->enis[order[i]];
		uint32_t count = min_u32(prefixes_for(remaining),
		    min_u32(eni_prefix_room(e),
		    avail[e->subnet] / POOL_PREFIX_ADDRS));

		if (!subnet_prefixes(p, f, e->subnet, now) || count == 0)
			continue;
		add_action(out, ACT_ASSIGN, order[i], 0, count)->prefixes =
		    true;
		avail[e->subnet] -= count * POOL_PREFIX_ADDRS;
		done[i] = true;
		remaining = covered(remaining, count, POOL_PREFIX_ADDRS);
	}

	/* Room on ENIs on their way (created, attaching, being set up) is
	 * coming: an assign fills it once they are ready.  A deficit that
	 * fits there waits for them, rather than start another ENI for each
	 * address the pool falls short while the cloud is slow (issue 27).
	 * So is room on a ready ENI busy with an operation: an assign there
	 * once it is answered takes one call, where a new ENI takes three
	 * and its link (a burst of ADDs read over several loop turns). */
	for (i = 0; i < f->nenis && remaining > 0; i++) {
		const struct pool_eni_view *e = &f->enis[i];

		if (!e->usable || (!eni_state_arriving(e->state) &&
		    !(e->state == ENI_READY && e->busy &&
		    subnet_open(f, e->subnet, now))))
			continue;
		if (subnet_prefixes(p, f, e->subnet, now))
			remaining = covered(remaining, eni_prefix_room(e),
			    POOL_PREFIX_ADDRS);
		else
			remaining = covered(remaining, eni_single_room(e), 1);
	}

	/* New ENIs with prefixes, while slots and subnets last. */
	slots = 0;
	for (i = 0; i < f->nenis; i++)
		if (f->enis[i].primary)
			slots = f->enis[i].capacity;
	if (slots == 0)
		slots = f->nenis > 0 ? f->enis[0].capacity : 0;
	while (p->prefixes && remaining > 0 && slots > 0 &&
	    out->used_slots < p->max_enis) {
		uint32_t count = min_u32(prefixes_for(remaining),
		    min_u32(slots, POOL_MAX_PREFIXES));

		if ((s = pick_subnet(p, f, avail, now, true)) == -1)
			break;
		count = min_u32(count, (avail[s] - 1) / POOL_PREFIX_ADDRS);
		if (count == 0)
			break;
		add_action(out, ACT_CREATE_ENI, 0, (uint32_t)s, count)->
		    prefixes = true;
		avail[s] -= count * POOL_PREFIX_ADDRS + 1;
		out->used_slots++;
		remaining = covered(remaining, count, POOL_PREFIX_ADDRS);
	}

	/* Single addresses on ready ENIs: with prefix delegation, only in
	 * subnets that refuse prefixes now, or have too few addresses left
	 * for one.  (Their count is the cloud's to refuse: the subnet's
	 * free count is as last described, and a refusal marks it full.) */
	for (i = 0; i < n && remaining > 0; i++) {
		const struct pool_eni_view *e = &f->enis[order[i]];
		uint32_t room = round_down(eni_single_room(e), p->block_size);
		uint32_t count = eni_mode ? room :
		    round_up(remaining < room ? remaining : room, p->block_size);

		/* Where prefixes may come, they do (a full table of them
		 * leaves its slots to single addresses). */
		if (done[i] || (subnet_prefixes(p, f, e->subnet, now) &&
		    eni_prefix_room(e) > 0 &&
		    avail[e->subnet] >= POOL_PREFIX_ADDRS))
			continue;
		if (count > room)
			count = room;
		if (count == 0)
			continue;
		add_action(out, ACT_ASSIGN, order[i], 0, count);
		if (p->prefixes && !subnet_prefixes(p, f, e->subnet, now))
			out->fallback = true;
		remaining = count >= remaining ? 0 : remaining - count;
	}

	/* Then new ENIs with single addresses, likewise. */
	while (remaining > 0 && slots > 0 && out->used_slots < p->max_enis) {
		uint32_t room = min_u32(slots, POOL_MAX_ADDRS);
		uint32_t count = eni_mode ? room :
		    round_up(remaining < room ? remaining : room,
		    p->block_size);

		if (count > room)
			count = room;
		if ((s = pick_subnet(p, f, avail, now, false)) == -1)
			break;
		/* What the subnet has left, if that is less. */
		if (count > avail[s] - 1)
			count = round_down(avail[s] - 1, p->block_size);
		if (count == 0)
			break;
		add_action(out, ACT_CREATE_ENI, 0, (uint32_t)s, count);
		if (p->prefixes && !subnet_prefixes(p, f, (uint32_t)s, now))
			out->fallback = true;
		avail[s] -= count + 1;
		out->used_slots++;
		remaining = count >= remaining ? 0 : remaining - count;
	}

	/*
	 * Still short, nothing started, and no slot left: with prefix
	 * delegation on, free single addresses on an ENI whose subnet takes
	 * prefixes are given back, as many as the prefixes the deficit
	 * needs, so that prefixes take their slots next (delegation turned
	 * on where singles hold every slot: nothing else trades them, and
	 * the pool would stay on singles at the ENI limit).
	 */
	if (p->prefixes && remaining > 0 && out->nactions == 0) {
		int best = -1;

		for (i = 0; i < f->nenis; i++) {
			const struct pool_eni_view *e = &f->enis[i];

			if (e->state != ENI_READY || !e->usable || e->busy ||
			    e->keep_until > now || eni_room(e) > 0 ||
			    free_singles(e) == 0 ||
			    e->nprefixes + e->prefixes_adding >=
			    POOL_MAX_PREFIXES ||
			    !subnet_prefixes(p, f, e->subnet, now) ||
			    f->subnets[e->subnet].available < POOL_PREFIX_ADDRS ||
			    eni_holds(e) - 1 + POOL_PREFIX_ADDRS >
			    POOL_MAX_ENI_ADDRS)
				continue;	/* no prefix would take the slot */
			if (best == -1 ||
			    free_singles(e) > free_singles(&f->enis[best]))
				best = (int)i;
		}
		if (best != -1) {
			add_action(out, ACT_UNASSIGN, (uint32_t)best, 0,
			    min_u32(free_singles(&f->enis[best]),
			    prefixes_for(remaining)));
			return;
		}
	}

	/* Nothing under way and nothing more to start: say why.  At the
	 * ENI limit, enid's own tables are what bind if the cloud would take
	 * more ENIs, or more blocks on an ENI. */
	if (remaining > 0 && out->nactions == 0 && in_flight == 0) {
		if (room_in_full_subnet)
			out->blocked = BLOCK_SUBNET_FULL;
		else if (out->used_slots >= p->max_enis || slots == 0)
			out->blocked = tables_full || (p->max_enis_enid &&
			    out->used_slots >= p->max_enis) ?
			    BLOCK_ENID_LIMIT : BLOCK_ENI_LIMIT;
		else if (!any_subnet ||
		    (pick_subnet(p, f, avail, now, false) == -1 &&
		    (!p->prefixes || pick_subnet(p, f, avail, now, true) == -1)))
			out->blocked = BLOCK_SUBNET_FULL;
		else
			out->blocked = BLOCK_ENI_LIMIT;
	}
}

/* Has the plan an action on ENI i that another on it must not join (a
 * prefix's unassign joins another prefix's)? */
static bool
eni_taken(const struct pool_plan *out, uint32_t i, enum pool_act type)
{
	size_t k;

	for (k = 0; k < out->nactions; k++)
		if (out->actions[k].eni == i &&
		    (type != ACT_UNASSIGN_PREFIX ||
		    out->actions[k].type != ACT_UNASSIGN_PREFIX))
			return true;
	return false;
}

static bool
prefix_planned(const struct pool_plan *out, uint32_t i, uint32_t k)
{
	size_t a;

	for (a = 0; a < out->nactions; a++)
		if (out->actions[a].eni == i &&
		    out->actions[a].type == ACT_UNASSIGN_PREFIX &&
		    out->actions[a].prefix == k)
			return true;
	return false;
}

/* May e give back blocks now?  (A kept ENI wakes the plan then.) */
static bool
eni_may_shrink(const struct pool_eni_view *e, uint64_t now,
    struct pool_plan *out)
{
	if (e->state != ENI_READY || e->busy)
		return false;
	if (e->keep_until > now) {
		/* Kept after a refusal: look again then. */
		wake_at(out, e->keep_until, now);
		return false;
	}
	return true;
}

/*
 * Shrinking by up to excess addresses: an empty ENI whole; else single
 * addresses, from the emptiest ENIs, so they may empty; else prefixes
 * none of whose addresses is assigned, cooling, being given back or on
 * its way in.  A surplus of a prefix's worth that no wholly free prefix
 * serves freezes the emptiest prefix, so that it drains: no new pod goes
 * there while another address will do, for freeze_ms.
 */
static void
plan_shrink(const struct pool_params *p, const struct pool_facts *f,
    uint64_t now, bool eni_mode, uint32_t excess, struct pool_plan *out)
{
	int release = -1, best;
	uint32_t i, k, bk = 0;
	bool frozen = false;

	/* One whole ENI first, if one is empty and its addresses are all
	 * surplus: the largest such, to shrink most in one step. */
	for (i = 0; i < f->nenis; i++) {
		const struct pool_eni_view *e = &f->enis[i];

		if (!eni_spare(e) ||
		    e->assigned > 0 || e->cooling > 0 || e->adding > 0 ||
		    e->removing > 0 || e->free > excess)
			continue;
		if (release == -1 || e->free > f->enis[release].free)
			release = (int)i;
	}
	if (release != -1) {
		add_action(out, ACT_RELEASE_ENI, (uint32_t)release, 0,
		    f->enis[release].free);
		return;
	}
	if (eni_mode)
		return;		/* ENI mode gives back whole ENIs only */
	/* Then free single addresses, from the emptiest ENIs. */
	while (excess >= p->block_size) {
		best = -1;
		for (i = 0; i < f->nenis; i++) {
			const struct pool_eni_view *e = &f->enis[i];

			if (eni_taken(out, i, ACT_UNASSIGN) ||
			    free_singles(e) < p->block_size ||
			    !eni_may_shrink(e, now, out))
				continue;
			if (best == -1 ||
			    e->assigned < f->enis[best].assigned)
				best = (int)i;
		}
		if (best == -1)
			break;
		i = min_u32(free_singles(&f->enis[best]), excess);
		i = round_down(i, p->block_size);
		add_action(out, ACT_UNASSIGN, (uint32_t)best, 0, i);
		excess -= i;
	}
	/* Then wholly free prefixes, from the emptiest ENIs. */
	while (excess >= POOL_PREFIX_ADDRS) {
		best = -1;
		for (i = 0; i < f->nenis; i++) {
			const struct pool_eni_view *e = &f->enis[i];

			if (eni_taken(out, i, ACT_UNASSIGN_PREFIX) ||
			    !eni_may_shrink(e, now, out))
				continue;
			for (k = 0; k < e->nprefixes && k < POOL_MAX_PREFIXES;
			    k++) {
				if (e->prefix[k].used > 0 ||
				    prefix_planned(out, i, k))
					continue;
				if (best == -1 ||
				    e->assigned < f->enis[best].assigned) {
					best = (int)i;
					bk = k;
				}
			}
		}
		if (best == -1)
			break;
		add_action(out, ACT_UNASSIGN_PREFIX, (uint32_t)best, 0,
		    f->enis[best].prefix[bk].free)->prefix = bk;
		excess -= min_u32(excess, f->enis[best].prefix[bk].free);
	}
	if (excess < POOL_PREFIX_ADDRS)
		return;
	/* A prefix's worth more than needed, but no prefix wholly free:
	 * freeze the emptiest, unless one is frozen already. */
	best = -1;
	for (i = 0; i < f->nenis; i++) {
		const struct pool_eni_view *e = &f->enis[i];

		for (k = 0; k < e->nprefixes && k < POOL_MAX_PREFIXES; k++) {
			if (e->prefix[k].frozen_until > now) {
				frozen = true;
				wake_at(out, e->prefix[k].frozen_until, now);
			}
			if (e->state != ENI_READY || e->prefix[k].used == 0)
				continue;
			/* The fewest pods: cooling addresses leave by
			 * themselves, pods only when deleted. */
			if (best == -1 || e->prefix[k].assigned <
			    f->enis[best].prefix[bk].assigned ||
			    (e->prefix[k].assigned ==
			    f->enis[best].prefix[bk].assigned &&
			    e->prefix[k].used <
			    f->enis[best].prefix[bk].used)) {
				best = (int)i;
				bk = k;
			}
		}
	}
	if (frozen || best == -1 || p->freeze_ms == 0)
		return;
	add_action(out, ACT_FREEZE_PREFIX, (uint32_t)best, 0,
	    f->enis[best].prefix[bk].used)->prefix = bk;
	wake_at(out, now + p->freeze_ms, now);
}

/*
 * ip_family ipv6: the IPv4 addresses ENIs kept from another ip_family (a
 * node switched to ipv6 with its ENIs).  Nothing hands them out now, so
 * once the pool is settled and the surplus has lasted they go back to
 * their subnet: an ENI's free single addresses, else a wholly free /28,
 * one change an ENI at a time.  A pod's IPv4 address (a dual pod from
 * before the switch) stays until its DEL, then cools, then goes too.
 * Whether there were any.
 */
static bool
plan6_ipv4_back(const struct pool_params *p, const struct pool_facts *f,
    uint64_t now, struct pool_plan *out)
{
	uint32_t i, k, n;
	bool any = false, lasted = false;

	for (i = 0; i < f->nenis; i++) {
		const struct pool_eni_view *e = &f->enis[i];

		if (e->state != ENI_READY || e->busy || e->keep_until > now)
			continue;
		for (k = 0; k < e->nprefixes && k < POOL_MAX_PREFIXES; k++)
			if (e->prefix[k].used == 0 && e->prefix[k].free > 0)
				break;
		n = free_singles(e);
		if (n == 0 && k == e->nprefixes)
			continue;
		if (!any) {
			out->surplus = any = true;
			if (!(lasted = surplus_lasted(p, f, now, out)))
				break;
		}
		if (n > 0)
			add_action(out, ACT_UNASSIGN, i, e->subnet, n);
		else
			add_action(out, ACT_UNASSIGN_PREFIX, i, e->subnet,
			    e->prefix[k].free)->prefix = k;
	}
	return any && lasted;
}

/*
 * ip_family ipv6: the pool in ENIs.  need and have count ENIs that serve
 * pods: one is needed, have is how many serve (their surplus is what the
 * engine's log counts).
 */
static void
plan6(const struct pool_params *p, const struct pool_facts *f, uint64_t now,
    struct pool_plan *out)
{
	uint32_t pods = 0, serving = 0, coming = 0, starting = 0, slots = 0;
	uint32_t cap, i, subnet = 0;
	bool open = false;

	for (i = 0; i < f->nenis; i++) {
		const struct pool_eni_view *e = &f->enis[i];

		pods += e->assigned;
		if (e->state == ENI_READY && e->usable && e->has6)
			serving++;
		else if (e->usable && (eni_state_arriving(e->state) ||
		    e->state == ENI_READY))
			coming++;	/* on its way, or its /80 is */
		if (state_uses_slot(e->state))
			slots++;
		if (e->state == ENI_CREATING || e->state == ENI_ATTACHING)
			starting++;
	}
	out->used_slots = slots;
	if (f->attached_enis + starting > out->used_slots)
		out->used_slots = f->attached_enis + starting;
	cap = p->max_pods && p->max_pods < POOL_MAX_HELD ? p->max_pods :
	    POOL_MAX_HELD;
	out->need = 1;
	out->have = serving;
	if (f->waiters > 0 && pods >= cap) {
		out->blocked = BLOCK_MAX_PODS;
		return;
	}
	if (serving == 0 && coming == 0) {
		/* Nothing serves pods: one ENI, whether or not an ADD waits
		 * (creating one takes seconds; the first pod should not). */
		if (f->growth_backoff_until > now) {
			out->blocked = BLOCK_BACKOFF;
			wake_at(out, f->growth_backoff_until, now);
			return;
		}
		if (out->used_slots >= p->max_enis) {
			out->blocked = p->max_enis_enid ? BLOCK_ENID_LIMIT :
			    BLOCK_ENI_LIMIT;
			return;
		}
		/* IPv6 addresses do not run out: any open subnet does; the
		 * one with the most IPv4 addresses, the first among equals
		 * (an ipv6Native one counts none). */
		for (i = 0; i < f->nsubnets; i++) {
			const struct pool_subnet_view *sv = &f->subnets[i];

			if (sv->inhibited_until > now && sv->configured)
				wake_at(out, sv->inhibited_until, now);
			if (!subnet_open(f, i, now) || (open &&
			    f->subnets[i].available <=
			    f->subnets[subnet].available))
				continue;
			subnet = i;
			open = true;
		}
		if (!open) {
			out->blocked = BLOCK_SUBNET_FULL;
			return;
		}
		add_action(out, ACT_CREATE_ENI, 0, subnet, 0);
		return;
	}
	if (coming > 0 || f->waiters > 0 ||
	    plan6_ipv4_back(p, f, now, out) || serving < 2)
		return;
	/* More than one serves: those without pods are surplus. */
	for (i = 0; i < f->nenis && !out->surplus; i++) {
		const struct pool_eni_view *e = &f->enis[i];

		out->surplus = eni_spare(e) && e->assigned == 0;
	}
	if (!out->surplus || !surplus_lasted(p, f, now, out))
		return;
	/* Keep one serving ENI: the primary if it serves, else the one
	 * with the most pods (the first such). */
	for (i = 0; i < f->nenis && serving > 1; i++) {
		const struct pool_eni_view *e = &f->enis[i];

		if (!eni_spare(e) || e->assigned != 0)
			continue;
		if (e->usable && e->has6)
			serving--;
		add_action(out, ACT_RELEASE_ENI, i, e->subnet, 0);
	}
}

void
pool_plan(const struct pool_params *p, const struct pool_facts *f,
    uint64_t now, struct pool_plan *out)
{
	uint32_t assigned = 0, cooling = 0, free_ = 0, adding = 0;
	uint32_t slots_in_pool = 0, starting = 0, in_flight = 0;
	uint32_t slots_per_eni = 0, warm, want_free, cap, minimum, i;
	bool eni_mode = p->warm_ip_target == 0 &&
	    p->minimum_ip_target == 0 && !p->prefixes;

	memset(out, 0, sizeof(*out));
	if (p->ipv6_only) {
		plan6(p, f, now, out);
		return;
	}
	for (i = 0; i < f->nenis; i++) {
		const struct pool_eni_view *e = &f->enis[i];

		assigned += e->assigned;
		cooling += e->cooling;
		if (e->state == ENI_READY && e->usable)
			free_ += e->free;
		if (eni_state_arriving(e->state) ||
		    (e->state == ENI_READY && e->usable)) {
			adding += e->adding;
			in_flight += e->adding;
		}
		if (eni_state_arriving(e->state))
			in_flight++;	/* an ENI on its way, even empty */
		if (state_uses_slot(e->state))
			slots_in_pool++;
		if (e->state == ENI_CREATING || e->state == ENI_ATTACHING)
			starting++;
		if (e->primary)
			slots_per_eni = e->capacity;
	}
	/* The cloud's count is the truth; ours adds what it can't see yet. */
	out->used_slots = slots_in_pool;
	if (f->attached_enis + starting > out->used_slots)
		out->used_slots = f->attached_enis + starting;

	/* Pods with an address: max_pods, within what enid holds. */
	cap = p->max_pods && p->max_pods < POOL_MAX_HELD ? p->max_pods :
	    POOL_MAX_HELD;
	warm = eni_mode ? p->warm_eni_target * slots_per_eni : p->warm_ip_target;
	/* With prefixes, the larger of the two targets: prefixes' worth of
	 * free addresses, or warm_ip_target of them. */
	if (p->prefixes && p->warm_prefix_target * POOL_PREFIX_ADDRS > warm)
		warm = p->warm_prefix_target * POOL_PREFIX_ADDRS;
	want_free = assigned < cap ? cap - assigned : 0;
	if (warm < want_free)
		want_free = warm;
	if (f->waiters > want_free)
		want_free = f->waiters;
	minimum = p->minimum_ip_target < cap ? p->minimum_ip_target : cap;
	out->need = assigned + cooling + want_free;
	if (out->need < minimum)
		out->need = minimum;
	if (out->need > POOL_MAX_HELD)
		out->need = POOL_MAX_HELD;
	out->have = assigned + cooling + free_ + adding;

	if (f->waiters > 0 && assigned >= cap) {
		out->blocked = BLOCK_MAX_PODS;
		return;
	}
	/* All enid holds is held, by pods and cooling addresses, and none
	 * is on its way: only what cools may serve the waiters. */
	if (f->waiters > free_ && adding == 0 &&
	    assigned + cooling >= POOL_MAX_HELD) {
		out->blocked = BLOCK_ENID_LIMIT;
		return;
	}
	if (out->need > out->have) {
		plan_grow(p, f, now, eni_mode, out->need - out->have, in_flight,
		    out);
		return;
	}
	/* Shrink only from a settled pool: nothing growing, nobody waiting,
	 * and the surplus has lasted. */
	if (in_flight > 0 || f->waiters > 0)
		return;
	{
		uint32_t excess = out->have - out->need;

		if (excess > free_)
			excess = free_;
		out->surplus = excess >= p->block_size;
		/* An ENI that holds no address at all is surplus however the
		 * counts stand: it serves nothing and takes a slot. */
		for (i = 0; i < f->nenis && !out->surplus; i++) {
			const struct pool_eni_view *e = &f->enis[i];

			if (eni_spare(e) && eni_holds(e) == 0)
				out->surplus = true;
		}
		if (!out->surplus || !surplus_lasted(p, f, now, out))
			return;
		/* What can't be given back now waits for a pod to leave, an
		 * operation to end or an ENI's keep_until (a wake above), not
		 * for the clock: a lasting surplus costs nothing while idle. */
		plan_shrink(p, f, now, eni_mode, excess, out);
	}
}

uint64_t
pool_refused_backoff_ms(uint32_t n, uint64_t base, uint64_t max)
{
	uint64_t ms = base;

	while (n-- > 1 && ms < max)
		ms *= 2;
	return ms < max ? ms : max;
}

uint64_t
pool_cooling_free_at(bool unconfirmed, uint64_t cool_until,
    const struct pool_confirm *c, uint64_t now)
{
	uint64_t retry;

	/* Cooling, or unconfirmed with its run asked at cool_until: that
	 * run's answer follows in a moment. */
	if (cool_until > now || !unconfirmed)
		return cool_until > now ? cool_until : now;
	/* A run asked since is on its way, or none has been asked since
	 * and one is asked now (engine_cool): it frees with its answer. */
	if (c->recon_asked < cool_until || c->recon_running)
		return now;
	/* The run asked since passed it by: the next, after the retry. */
	retry = c->recon_asked + c->retry_ms;
	return retry > now ? retry : now;
}

int
pool_pick_eni(const struct pool_facts *f)
{
	int best = -1, pass;
	uint32_t i;

	/* Outside frozen prefixes first; in them only if nothing else. */
	for (pass = 0; pass < 2 && best == -1; pass++)
		for (i = 0; i < f->nenis; i++) {
			const struct pool_eni_view *e = &f->enis[i];
			uint32_t avail = pass == 0 && e->free >= e->frozen_free ?
			    e->free - e->frozen_free : e->free;

			if (e->state != ENI_READY || !e->usable || avail == 0)
				continue;
			if (best == -1 || e->assigned > f->enis[best].assigned)
				best = (int)i;
		}
	return best;
}
