/*
 * The pool policy (see pool.h): from how many addresses pods hold, how
 * many cool, how many are free or on their way, decide whether to grow
 * (assign addresses on ready ENIs, create ENIs) or shrink (unassign free
 * addresses, release empty ENIs), or why growth is blocked.
 *
 * The need: pods' addresses, the cooling ones, and the warm target of free
 * ones (warm_ip_target, or warm_eni_target ENIs' worth), at least
 * minimum_ip_target, never more free than max_pods leaves room for, and
 * always enough for the ADDs waiting.  Growth fills ready ENIs first, the
 * fullest first; then creates ENIs in the configured subnet with the most
 * free addresses, never past the ENI limit as the cloud counts it.
 * Shrinking waits until the surplus has lasted shrink_delay and never takes
 * the pool below the need, so the next plan does not grow it back: no
 * flapping.  An ENI that holds or cools a pod's address is never released.
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
	if (p->max_enis > POOL_MAX_ENIS)
		p->max_enis = POOL_MAX_ENIS;
	p->block_size = 1;
	p->shrink_delay_ms = (uint64_t)cfg->pool.shrink_delay_s * 1000;
}

static uint32_t
eni_holds(const struct pool_eni_view *e)
{
	return e->assigned + e->cooling + e->free + e->adding + e->removing;
}

static uint32_t
eni_room(const struct pool_eni_view *e)
{
	uint32_t held = eni_holds(e);

	return held < e->capacity ? e->capacity - held : 0;
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

/* Wake at t too, if it is still to come. */
static void
wake_at(struct pool_plan *out, uint64_t t, uint64_t now)
{
	if (t > now && (out->wake == 0 || t < out->wake))
		out->wake = t;
}

static void
add_action(struct pool_plan *out, enum pool_act type, uint32_t eni,
    uint32_t subnet, uint32_t count)
{
	struct pool_action *a;

	if (out->nactions == POOL_MAX_ACTIONS)
		return;
	a = &out->actions[out->nactions++];
	a->type = type;
	a->eni = eni;
	a->subnet = subnet;
	a->count = count;
}

/* The configured, uninhibited subnet with the most free addresses, room
 * for an ENI's own primary address and at least one more; or -1. */
static int
pick_subnet(const struct pool_facts *f, const uint32_t *avail, uint64_t now)
{
	int best = -1;
	uint32_t i;

	for (i = 0; i < f->nsubnets; i++) {
		const struct pool_subnet_view *s = &f->subnets[i];

		if (!s->configured || s->inhibited_until > now || avail[i] < 2)
			continue;
		if (best == -1 || avail[i] > avail[best])
			best = (int)i;
	}
	return best;
}

static void
plan_grow(const struct pool_params *p, const struct pool_facts *f,
    uint64_t now, bool eni_mode, uint32_t deficit, uint32_t in_flight,
    struct pool_plan *out)
{
	uint32_t remaining = deficit, slots, order[POOL_MAX_ENIS];
	uint32_t avail[POOL_MAX_SUBNETS], i, j, n = 0;
	bool any_subnet = false, room_in_full_subnet = false;
	int s;

	if (f->growth_backoff_until > now) {
		out->blocked = BLOCK_BACKOFF;
		wake_at(out, f->growth_backoff_until, now);
		return;
	}
	/* A subnet out of addresses lately may serve again when its inhibit
	 * ends. */
	for (i = 0; i < f->nsubnets; i++)
		if (f->subnets[i].configured)
			wake_at(out, f->subnets[i].inhibited_until, now);
	/* Ready usable ENIs with room, the fullest first: packing. */
	for (i = 0; i < f->nenis; i++) {
		const struct pool_eni_view *e = &f->enis[i];

		if (e->state != ENI_READY || !e->usable || eni_room(e) == 0)
			continue;
		/* Its subnet ran out lately: no address to be had there. */
		if (e->subnet < f->nsubnets &&
		    f->subnets[e->subnet].inhibited_until > now) {
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
	for (i = 0; i < n && remaining > 0; i++) {
		const struct pool_eni_view *e = &f->enis[order[i]];
		uint32_t room = round_down(eni_room(e), p->block_size);
		uint32_t count = eni_mode ? room :
		    round_up(remaining < room ? remaining : room, p->block_size);

		if (count > room)
			count = room;
		if (count == 0)
			continue;
		add_action(out, ACT_ASSIGN, order[i], 0, count);
		remaining = count >= remaining ? 0 : remaining - count;
	}

	/* Room on ENIs on their way (created, attaching, being set up) is
	 * coming: an assign fills it once they are ready.  A deficit that
	 * fits there waits for them, rather than start another ENI for each
	 * address the pool falls short while the cloud is slow (issue 27). */
	for (i = 0; i < f->nenis && remaining > 0; i++) {
		const struct pool_eni_view *e = &f->enis[i];
		uint32_t room;

		if (!eni_state_arriving(e->state) || !e->usable)
			continue;
		room = eni_room(e);
		remaining = room >= remaining ? 0 : remaining - room;
	}

	/* Then new ENIs, while slots and subnets last. */
	slots = 0;
	for (i = 0; i < f->nenis; i++)
		if (f->enis[i].primary)
			slots = f->enis[i].capacity;
	if (slots == 0)
		slots = f->nenis > 0 ? f->enis[0].capacity : 0;
	for (i = 0; i < f->nsubnets; i++) {
		avail[i] = f->subnets[i].available;
		if (f->subnets[i].configured && f->subnets[i].inhibited_until <=
		    now && avail[i] > 1)
			any_subnet = true;
	}
	while (remaining > 0 && slots > 0 && out->used_slots < p->max_enis) {
		uint32_t count = eni_mode ? slots :
		    round_up(remaining < slots ? remaining : slots,
		    p->block_size);

		if (count > slots)
			count = slots;
		if ((s = pick_subnet(f, avail, now)) == -1)
			break;
		/* What the subnet has left, if that is less. */
		if (count > avail[s] - 1)
			count = round_down(avail[s] - 1, p->block_size);
		if (count == 0)
			break;
		add_action(out, ACT_CREATE_ENI, 0, (uint32_t)s, count);
		avail[s] -= count + 1;
		out->used_slots++;
		remaining = count >= remaining ? 0 : remaining - count;
	}

	/* Nothing under way and nothing more to start: say why. */
	if (remaining > 0 && out->nactions == 0 && in_flight == 0) {
		if (room_in_full_subnet)
			out->blocked = BLOCK_SUBNET_FULL;
		else if (out->used_slots >= p->max_enis || slots == 0)
			out->blocked = BLOCK_ENI_LIMIT;
		else if (!any_subnet || pick_subnet(f, avail, now) == -1)
			out->blocked = BLOCK_SUBNET_FULL;
		else
			out->blocked = BLOCK_ENI_LIMIT;
	}
}

static void
plan_shrink(const struct pool_params *p, const struct pool_facts *f,
    uint64_t now, bool eni_mode, uint32_t excess, struct pool_plan *out)
{
	int release = -1;
	uint32_t i;

	/* One whole ENI first, if one is empty and its addresses are all
	 * surplus: the largest such, to shrink most in one step. */
	for (i = 0; i < f->nenis; i++) {
		const struct pool_eni_view *e = &f->enis[i];

		if (e->primary || e->state != ENI_READY || e->busy ||
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
	/* Then free addresses, from the emptiest ENIs, so they may empty. */
	while (excess >= p->block_size) {
		int best = -1;

		for (i = 0; i < f->nenis; i++) {
			const struct pool_eni_view *e = &f->enis[i];
			size_t k;
			bool taken = false;

			for (k = 0; k < out->nactions; k++)
				if (out->actions[k].eni == i)
					taken = true;
			if (taken || e->state != ENI_READY || e->busy ||
			    e->free < p->block_size)
				continue;
			if (e->keep_until > now) {
				/* Kept after a refusal: look again then. */
				wake_at(out, e->keep_until, now);
				continue;
			}
			if (best == -1 ||
			    e->assigned < f->enis[best].assigned)
				best = (int)i;
		}
		if (best == -1)
			break;
		i = f->enis[best].free < excess ? f->enis[best].free : excess;
		i = round_down(i, p->block_size);
		add_action(out, ACT_UNASSIGN, (uint32_t)best, 0, i);
		excess -= i;
	}
}

void
pool_plan(const struct pool_params *p, const struct pool_facts *f,
    uint64_t now, struct pool_plan *out)
{
	uint32_t assigned = 0, cooling = 0, free_ = 0, adding = 0;
	uint32_t slots_in_pool = 0, starting = 0, in_flight = 0;
	uint32_t slots_per_eni = 0, warm, want_free, cap, minimum, i;
	bool eni_mode = p->warm_ip_target == 0 && p->minimum_ip_target == 0;

	memset(out, 0, sizeof(*out));
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

	cap = p->max_pods ? p->max_pods : UINT32_MAX;
	warm = eni_mode ? p->warm_eni_target * slots_per_eni : p->warm_ip_target;
	want_free = assigned < cap ? cap - assigned : 0;
	if (warm < want_free)
		want_free = warm;
	if (f->waiters > want_free)
		want_free = f->waiters;
	minimum = p->minimum_ip_target < cap ? p->minimum_ip_target : cap;
	out->need = assigned + cooling + want_free;
	if (out->need < minimum)
		out->need = minimum;
	out->have = assigned + cooling + free_ + adding;

	if (f->waiters > 0 && assigned >= cap) {
		out->blocked = BLOCK_MAX_PODS;
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
		uint64_t since;

		if (excess > free_)
			excess = free_;
		out->surplus = excess >= p->block_size;
		/* An ENI that holds no address at all is surplus however the
		 * counts stand: it serves nothing and takes a slot. */
		for (i = 0; i < f->nenis && !out->surplus; i++) {
			const struct pool_eni_view *e = &f->enis[i];

			if (!e->primary && e->state == ENI_READY && !e->busy &&
			    eni_holds(e) == 0)
				out->surplus = true;
		}
		if (!out->surplus)
			return;
		/* A surplus seen first now is held from now. */
		since = f->surplus_since ? f->surplus_since : now;
		if (now < since + p->shrink_delay_ms) {
			wake_at(out, since + p->shrink_delay_ms, now);
			return;
		}
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

int
pool_pick_eni(const struct pool_facts *f)
{
	int best = -1;
	uint32_t i;

	for (i = 0; i < f->nenis; i++) {
		const struct pool_eni_view *e = &f->enis[i];

		if (e->state != ENI_READY || !e->usable || e->free == 0)
			continue;
		if (best == -1 || e->assigned > f->enis[best].assigned)
			best = (int)i;
	}
	return best;
}
