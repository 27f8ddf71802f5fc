/*
 * The pool policy (broker/pool.c), without I/O: warm targets singly and
 * combined, max_pods, the instance's limits as the cloud counts them,
 * packing, subnets, blocking reasons, and shrinking with hysteresis; then
 * a randomized simulation (fixed seed) that applies every plan and checks
 * the invariants after each step: no ENI holding or cooling a pod's
 * address is released, the ENI limit is never passed, a shrink is never
 * undone by the next plan, and a plan that is not blocked covers the need.
 * With prefix delegation: growth in /28s and its fallback to single
 * addresses, slots shared by both, what is given back and what frozen;
 * then a model of ENIs, their addresses and a cloud whose subnets
 * fragment and recover, the planner driving it (fixed seeds), checked at
 * every step (px_check_*).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pool.h"
#include "testrng.h"

#define CAP	9	/* 10 addresses per ENI, the primary's own excluded */

static struct pool_params
params(uint32_t warm_ip, uint32_t min_ip, uint32_t warm_eni, uint32_t max_pods)
{
	struct pool_params p;

	memset(&p, 0, sizeof(p));
	p.warm_ip_target = warm_ip;
	p.minimum_ip_target = min_ip;
	p.warm_eni_target = warm_eni;
	p.max_pods = max_pods;
	p.max_enis = 4;
	p.block_size = 1;
	p.shrink_delay_ms = 60000;
	return p;
}

/* A pool with the primary ENI (ready, usable) holding the given counts. */
static struct pool_facts
facts(uint32_t assigned, uint32_t cooling, uint32_t free_)
{
	struct pool_facts f;

	memset(&f, 0, sizeof(f));
	f.attached_enis = 1;
	f.nsubnets = 2;
	f.subnets[0] = (struct pool_subnet_view){ true, 4000, 0, 0 };
	f.subnets[1] = (struct pool_subnet_view){ true, 100, 0, 0 };
	f.nenis = 1;
	f.enis[0] = (struct pool_eni_view){ .state = ENI_READY, .primary = true,
	    .usable = true, .subnet = 0, .capacity = CAP,
	    .assigned = assigned, .cooling = cooling, .free = free_ };
	return f;
}

static uint32_t
add_eni(struct pool_facts *f, enum eni_state st, uint32_t assigned,
    uint32_t cooling, uint32_t free_)
{
	uint32_t i = f->nenis++;

	f->enis[i] = (struct pool_eni_view){ .state = st, .usable = true,
	    .subnet = 0, .capacity = CAP, .assigned = assigned,
	    .cooling = cooling, .free = free_ };
	if (st != ENI_CREATING && st != ENI_DELETING)
		f->attached_enis++;
	return i;
}

static void
expect_action(const struct pool_plan *pl, size_t i, enum pool_act type,
    uint32_t eni, uint32_t count)
{
	assert_true(i < pl->nactions);
	assert_int_equal(pl->actions[i].type, type);
	if (type != ACT_CREATE_ENI)
		assert_int_equal(pl->actions[i].eni, eni);
	assert_int_equal(pl->actions[i].count, count);
}

static void
test_warm_ip_target(void **state)
{
	struct pool_params p = params(5, 0, 0, 0);
	struct pool_facts f = facts(0, 0, 3);
	struct pool_plan pl;

	(void)state;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.need, 5);
	assert_int_equal(pl.have, 3);
	assert_int_equal(pl.nactions, 1);
	expect_action(&pl, 0, ACT_ASSIGN, 0, 2);
	/* Exactly at target: nothing to do, no surplus. */
	f = facts(2, 0, 5);
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 0);
	assert_false(pl.surplus);
	assert_int_equal(pl.blocked, BLOCK_NONE);
}

static void
test_cooling_never_free(void **state)
{
	struct pool_params p = params(5, 0, 0, 0);
	struct pool_facts f = facts(0, 3, 2);
	struct pool_plan pl;

	(void)state;
	/* 3 cooling + 2 free: only 2 are free, so 3 more are needed. */
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.need, 8);
	assert_int_equal(pl.have, 5);
	expect_action(&pl, 0, ACT_ASSIGN, 0, 3);
	/* The addresses an assign brings count once it is under way. */
	f.enis[0].adding = 3;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 0);
}

static void
test_minimum_ip_target(void **state)
{
	struct pool_params p = params(0, 12, 0, 0);
	struct pool_facts f = facts(0, 0, 0);
	struct pool_plan pl;

	(void)state;
	/* 12 addresses: the primary's 9, then a new ENI with 3. */
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.need, 12);
	assert_int_equal(pl.nactions, 2);
	expect_action(&pl, 0, ACT_ASSIGN, 0, 9);
	expect_action(&pl, 1, ACT_CREATE_ENI, 0, 3);
	assert_int_equal(pl.actions[1].subnet, 0);	/* the most free */
	/* Combined with warm_ip_target: the larger need wins. */
	p = params(4, 12, 0, 0);
	f = facts(10, 0, 0);
	add_eni(&f, ENI_READY, 0, 0, 2);
	f.enis[0].assigned = 9;
	f.enis[1].assigned = 1;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.need, 14);		/* 10 held + 4 warm */
	expect_action(&pl, 0, ACT_ASSIGN, 1, 2);
}

static void
test_warm_eni_target(void **state)
{
	struct pool_params p = params(0, 0, 1, 0);
	struct pool_facts f = facts(0, 0, 0);
	struct pool_plan pl;

	(void)state;
	/* An ENI's worth free: the primary filled whole. */
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.need, CAP);
	expect_action(&pl, 0, ACT_ASSIGN, 0, CAP);
	/* 4 pods on it: another ENI's worth is created, whole. */
	f = facts(4, 0, 5);
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 1);
	expect_action(&pl, 0, ACT_CREATE_ENI, 0, CAP);
	/* Two warm ENIs, and ENI mode fills rooms whole. */
	p = params(0, 0, 2, 0);
	f = facts(0, 0, 4);
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.need, 2 * CAP);
	expect_action(&pl, 0, ACT_ASSIGN, 0, CAP - 4);
	expect_action(&pl, 1, ACT_CREATE_ENI, 0, CAP);
	/* warm_ip_target, when set, is what counts. */
	p = params(2, 0, 3, 0);
	f = facts(0, 0, 0);
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.need, 2);
	assert_int_equal(pl.nactions, 1);
	expect_action(&pl, 0, ACT_ASSIGN, 0, 2);
}

static void
test_max_pods(void **state)
{
	struct pool_params p = params(5, 0, 0, 10);
	struct pool_facts f = facts(7, 0, 1);
	struct pool_plan pl;

	(void)state;
	/* 7 of 10 pods: only 3 free are worth having. */
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.need, 10);
	assert_int_equal(pl.nactions, 2);
	expect_action(&pl, 0, ACT_ASSIGN, 0, 1);
	expect_action(&pl, 1, ACT_CREATE_ENI, 0, 1);
	/* minimum_ip_target is capped too. */
	p = params(0, 50, 0, 10);
	f = facts(0, 0, 0);
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.need, 10);
	/* At max_pods, a waiter is told so. */
	p = params(1, 0, 0, 9);
	f = facts(9, 0, 0);
	f.waiters = 1;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.blocked, BLOCK_MAX_PODS);
	assert_int_equal(pl.nactions, 0);
}

static void
test_instance_limits_cloud_count(void **state)
{
	struct pool_params p = params(5, 0, 0, 0);
	struct pool_facts f = facts(CAP, 0, 0);
	struct pool_plan pl;

	(void)state;
	/* Our pool has one ENI, but the cloud counts all 4 attached (say,
	 * a storage NIC and ENIs we lost track of): no ENI is created. */
	f.attached_enis = 4;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.used_slots, 4);
	assert_int_equal(pl.nactions, 0);
	assert_int_equal(pl.blocked, BLOCK_ENI_LIMIT);
	/* With the cloud at 3, exactly one. */
	f.attached_enis = 3;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 1);
	expect_action(&pl, 0, ACT_CREATE_ENI, 0, 5);
	/* An ENI being created counts before the cloud sees it attached. */
	f.attached_enis = 3;
	add_eni(&f, ENI_CREATING, 0, 0, 0);
	f.enis[1].adding = 2;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.used_slots, 4);
	assert_int_equal(pl.nactions, 0);
	assert_int_equal(pl.blocked, BLOCK_NONE);	/* one is on its way */
	/* The configured max_enis only lowers the cloud's limit. */
	p.max_enis = 1;
	f = facts(CAP, 0, 0);
	f.waiters = 1;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.blocked, BLOCK_ENI_LIMIT);
}

static void
test_packing(void **state)
{
	struct pool_facts f = facts(2, 0, 7);

	(void)state;
	add_eni(&f, ENI_READY, 6, 0, 3);
	add_eni(&f, ENI_READY, 8, 1, 0);
	add_eni(&f, ENI_DRAINING, 8, 0, 1);
	/* The fullest ready ENI that has a free address. */
	assert_int_equal(pool_pick_eni(&f), 1);
	f.enis[1].free = 0;
	assert_int_equal(pool_pick_eni(&f), 0);
	f.enis[0].usable = false;
	assert_int_equal(pool_pick_eni(&f), -1);
	/* Growth fills the fullest ENI with room first. */
	{
		struct pool_params p = params(6, 0, 0, 0);
		struct pool_facts g = facts(1, 0, 0);
		struct pool_plan pl;

		add_eni(&g, ENI_READY, 5, 0, 0);
		pool_plan(&p, &g, 1000, &pl);
		expect_action(&pl, 0, ACT_ASSIGN, 1, 4);
		expect_action(&pl, 1, ACT_ASSIGN, 0, 2);
	}
}

static void
test_subnets(void **state)
{
	struct pool_params p = params(0, 20, 0, 0);
	struct pool_facts f = facts(CAP, 0, 0);
	struct pool_plan pl;

	(void)state;
	/* Growth goes to the subnet with the most free addresses... */
	f.subnets[0].available = 5;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 2);
	assert_int_equal(pl.actions[0].subnet, 1);
	/* ...skips an inhibited one, and takes no more than a subnet has
	 * left (5 free: the ENI's own address and 4)... */
	f.subnets[1].inhibited_until = 5000;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 1);
	assert_int_equal(pl.actions[0].subnet, 0);
	assert_int_equal(pl.actions[0].count, 4);
	/* ...and with none left, says the subnets are full. */
	f.subnets[0].inhibited_until = 5000;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 0);
	assert_int_equal(pl.blocked, BLOCK_SUBNET_FULL);
	/* Once the backoff ends, it is tried again. */
	pool_plan(&p, &f, 5000, &pl);
	assert_true(pl.nactions > 0);
	/* An ENI with room in an exhausted subnet: subnet-full too. */
	p = params(3, 0, 0, 0);
	f = facts(1, 0, 0);
	f.subnets[0].inhibited_until = 9000;
	f.subnets[1].configured = false;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.blocked, BLOCK_SUBNET_FULL);
	/* Unconfigured subnets are never grown into. */
	f.subnets[0].inhibited_until = 0;
	f.subnets[0].configured = false;
	f.enis[0].assigned = CAP;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 0);
	assert_int_equal(pl.blocked, BLOCK_SUBNET_FULL);
}

static void
test_backoff_and_waiters(void **state)
{
	struct pool_params p = params(1, 0, 0, 0);
	struct pool_facts f = facts(3, 0, 0);
	struct pool_plan pl;

	(void)state;
	f.growth_backoff_until = 2000;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.blocked, BLOCK_BACKOFF);
	assert_int_equal(pl.nactions, 0);
	/* Waiters count even past warm_ip_target. */
	f.growth_backoff_until = 0;
	f.waiters = 4;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.need, 7);
	expect_action(&pl, 0, ACT_ASSIGN, 0, 4);
}

static void
test_shrink_hysteresis(void **state)
{
	struct pool_params p = params(2, 0, 0, 0);
	struct pool_facts f = facts(1, 0, 3);
	struct pool_plan pl;
	uint32_t e;

	(void)state;
	e = add_eni(&f, ENI_READY, 0, 0, 6);
	/* 9 free, 2 wanted: a surplus, but it must last first. */
	pool_plan(&p, &f, 1000, &pl);
	assert_true(pl.surplus);
	assert_int_equal(pl.nactions, 0);
	f.surplus_since = 1000;
	pool_plan(&p, &f, 1000 + 59999, &pl);
	assert_int_equal(pl.nactions, 0);
	pool_plan(&p, &f, 1000 + 60000, &pl);
	/* The empty ENI goes whole: its 6 are within the surplus of 7. */
	assert_int_equal(pl.nactions, 1);
	expect_action(&pl, 0, ACT_RELEASE_ENI, e, 6);
	/* Applied, the next plan neither grows nor shrinks: no flapping. */
	f.nenis = 1;
	f.attached_enis = 1;
	pool_plan(&p, &f, 1000 + 60000, &pl);
	assert_int_equal(pl.nactions, 1);
	expect_action(&pl, 0, ACT_UNASSIGN, 0, 1);
	f.enis[0].free = 2;
	pool_plan(&p, &f, 1000 + 60000, &pl);
	assert_int_equal(pl.nactions, 0);
	assert_false(pl.surplus);
}

static void
test_shrink_never_releases_pods(void **state)
{
	struct pool_params p = params(0, 0, 1, 0);
	struct pool_facts f = facts(0, 0, CAP);
	struct pool_plan pl;
	uint32_t a, b;

	(void)state;
	a = add_eni(&f, ENI_READY, 1, 0, 8);	/* holds a pod */
	b = add_eni(&f, ENI_READY, 0, 1, 8);	/* cools one */
	f.surplus_since = 1;
	pool_plan(&p, &f, 100000, &pl);
	assert_true(pl.surplus);
	assert_int_equal(pl.nactions, 0);	/* ENI mode: whole ENIs only */
	(void)a;
	(void)b;
	/* IP mode unassigns their free addresses, never a held one. */
	p = params(1, 0, 0, 0);
	pool_plan(&p, &f, 100000, &pl);
	assert_true(pl.nactions > 0);
	{
		size_t i;
		uint32_t total = 0;

		for (i = 0; i < pl.nactions; i++) {
			assert_int_equal(pl.actions[i].type, ACT_UNASSIGN);
			assert_true(pl.actions[i].count <=
			    f.enis[pl.actions[i].eni].free);
			total += pl.actions[i].count;
		}
		/* 25 free, 1 wanted. */
		assert_int_equal(total, 24);
	}
	/* The primary is never released, however empty. */
	p = params(1, 0, 0, 0);
	f = facts(0, 0, 0);
	f.surplus_since = 1;
	add_eni(&f, ENI_READY, 0, 0, 5);
	pool_plan(&p, &f, 100000, &pl);
	assert_int_equal(pl.nactions, 1);
	expect_action(&pl, 0, ACT_UNASSIGN, 1, 4);
}

/*
 * An ENI whose unassigns the cloud refused keeps its addresses until its
 * keep_until: the surplus comes from the others, or waits; and the time
 * it keeps them doubles with each refusal in a row, up to its maximum.
 */
static void
test_refused_eni_keeps_its_addresses(void **state)
{
	struct pool_params p = params(1, 0, 0, 0);
	struct pool_facts f = facts(1, 0, 0);
	struct pool_plan pl;
	uint32_t a, b;

	(void)state;
	a = add_eni(&f, ENI_READY, 1, 0, 4);
	b = add_eni(&f, ENI_READY, 2, 0, 3);
	f.surplus_since = 1;
	f.enis[a].keep_until = 200000;
	pool_plan(&p, &f, 100000, &pl);
	/* 7 free, 1 wanted: only b's 3 go, though a is emptier */
	assert_true(pl.surplus);
	assert_int_equal(pl.nactions, 1);
	expect_action(&pl, 0, ACT_UNASSIGN, b, 3);
	/* with both kept, nothing goes, and the surplus stays */
	f.enis[b].keep_until = 150000;
	pool_plan(&p, &f, 100000, &pl);
	assert_true(pl.surplus);
	assert_int_equal(pl.nactions, 0);
	/* once a's time is up, a gives back first (the emptier) */
	pool_plan(&p, &f, 200000, &pl);
	assert_true(pl.nactions >= 1);
	expect_action(&pl, 0, ACT_UNASSIGN, a, 4);

	assert_int_equal(pool_refused_backoff_ms(1, 10000, 900000), 10000);
	assert_int_equal(pool_refused_backoff_ms(2, 10000, 900000), 20000);
	assert_int_equal(pool_refused_backoff_ms(4, 10000, 900000), 80000);
	assert_int_equal(pool_refused_backoff_ms(7, 10000, 900000), 640000);
	assert_int_equal(pool_refused_backoff_ms(8, 10000, 900000), 900000);
	assert_int_equal(pool_refused_backoff_ms(4000000000u, 10000, 900000),
	    900000);
}

/*
 * When a cooling address comes free (issue 34, item 4): an unconfirmed
 * one whose cooldown is over frees with the reconciliation that confirms
 * it, a moment away, not a confirm retry away; only one that a finished
 * run passed by waits for the retry.
 */
static void
test_cooling_free_at(void **state)
{
	struct pool_confirm c = { .recon_asked = 1000, .recon_running = false,
	    .retry_ms = 5000 };

	(void)state;
	/* Before its end, either kind: at its end. */
	assert_int_equal(pool_cooling_free_at(false, 9000, &c, 8000), 9000);
	assert_int_equal(pool_cooling_free_at(true, 9000, &c, 8000), 9000);
	/* Its end reached, no run asked since: one is asked now. */
	assert_int_equal(pool_cooling_free_at(true, 9000, &c, 9000), 9000);
	assert_int_equal(pool_cooling_free_at(true, 9000, &c, 9500), 9500);
	c.recon_running = true;		/* one older, on its way */
	assert_int_equal(pool_cooling_free_at(true, 9000, &c, 9500), 9500);
	/* A run asked since, on its way: with its answer. */
	c.recon_asked = 9010;
	assert_int_equal(pool_cooling_free_at(true, 9000, &c, 9020), 9020);
	/* That run over, the address passed by: the retry after it. */
	c.recon_running = false;
	assert_int_equal(pool_cooling_free_at(true, 9000, &c, 9100), 14010);
	assert_int_equal(pool_cooling_free_at(true, 9000, &c, 15000), 15000);
}

/*
 * When the plan would act on time alone: a surplus's delay, an ENI kept
 * after refusals, growth's backoff, a subnet's inhibit.  A surplus past
 * its delay that nothing can shrink (ENI mode, every ENI holding a pod)
 * wakes nobody: the idle broker must not plan in a loop.
 */
static void
test_wake(void **state)
{
	struct pool_params p = params(0, 0, 1, 0);
	struct pool_facts f = facts(3, 0, 6);
	struct pool_plan pl;
	uint32_t a;

	(void)state;
	a = add_eni(&f, ENI_READY, 2, 0, 7);
	/* 13 free, 9 wanted: a surplus, first seen now */
	pool_plan(&p, &f, 5000, &pl);
	assert_true(pl.surplus);
	assert_int_equal(pl.nactions, 0);
	assert_int_equal(pl.wake, 5000 + 60000);
	f.surplus_since = 5000;
	pool_plan(&p, &f, 30000, &pl);
	assert_int_equal(pl.wake, 5000 + 60000);
	/* past the delay: ENI mode releases whole ENIs only, and both hold
	 * pods; nothing to do, and nothing to wake for */
	pool_plan(&p, &f, 5000 + 60000, &pl);
	assert_true(pl.surplus);
	assert_int_equal(pl.nactions, 0);
	assert_int_equal(pl.wake, 0);
	pool_plan(&p, &f, 4000000, &pl);
	assert_int_equal(pl.wake, 0);

	/* IP mode: an ENI kept after a refusal wakes the plan at its time */
	p = params(1, 0, 0, 0);
	f.enis[0].free = 0;
	f.enis[a].keep_until = 200000;
	pool_plan(&p, &f, 100000, &pl);
	assert_int_equal(pl.nactions, 0);
	assert_int_equal(pl.wake, 200000);

	/* growth backing off, or its only subnet inhibited */
	f = facts(9, 0, 0);
	f.growth_backoff_until = 7000;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.blocked, BLOCK_BACKOFF);
	assert_int_equal(pl.wake, 7000);
	f.growth_backoff_until = 0;
	f.subnets[0].inhibited_until = 9000;
	f.subnets[1].inhibited_until = 8000;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.wake, 8000);
	/* with no delay, a surplus first seen now goes now: nothing is
	 * left for a timer that would have to fire at once */
	p = params(1, 0, 0, 0);
	p.shrink_delay_ms = 0;
	f = facts(1, 0, 5);
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 1);
	expect_action(&pl, 0, ACT_UNASSIGN, 0, 4);
	assert_int_equal(pl.wake, 0);
	/* nothing wanted and nothing held back: no wake at all */
	f = facts(1, 0, 1);
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 0);
	assert_int_equal(pl.wake, 0);
}

/*
 * A slow cloud: room on an ENI on its way counts as coming, so a deficit
 * that fits there makes no second ENI; and an ENI left holding nothing
 * (after an outage, say) is given back once the surplus has lasted.
 */
static void
test_no_overgrowth_while_slow(void **state)
{
	struct pool_params p = params(5, 0, 0, 0);
	struct pool_facts f = facts(9, 0, 0);
	struct pool_plan pl;
	uint32_t c, e;

	(void)state;
	c = add_eni(&f, ENI_CREATING, 0, 0, 0);
	f.enis[c].adding = 1;
	/* 9 held, 5 warm wanted, 1 coming: 4 short, and 8 of room coming */
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 0);
	assert_int_equal(pl.blocked, BLOCK_NONE);
	/* more short than the coming room: a new ENI for the rest only */
	f.waiters = 12;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 1);
	expect_action(&pl, 0, ACT_CREATE_ENI, 0, 3);
	f.waiters = 0;
	/* once it is ready, the deficit is assigned on it */
	f.enis[c].state = ENI_READY;
	f.enis[c].adding = 0;
	f.enis[c].free = 1;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 1);
	expect_action(&pl, 0, ACT_ASSIGN, c, 4);

	/* an ENI holding nothing goes, once the surplus has lasted */
	f = facts(4, 0, 5);
	e = add_eni(&f, ENI_READY, 0, 0, 0);
	pool_plan(&p, &f, 1000, &pl);
	assert_true(pl.surplus);
	assert_int_equal(pl.nactions, 0);
	assert_int_equal(pl.wake, 1000 + 60000);
	f.surplus_since = 1000;
	pool_plan(&p, &f, 1000 + 60000, &pl);
	assert_int_equal(pl.nactions, 1);
	expect_action(&pl, 0, ACT_RELEASE_ENI, e, 0);
}

/* A burst read over several loop turns: the ENI that is assigning for the
 * first ADDs has room for the rest, which wait for its answer and an
 * assign there, not for a new ENI (three calls and a link). */
static void
test_busy_eni_room_is_coming(void **state)
{
	struct pool_params p = params(0, 0, 1, 110);
	struct pool_facts f = facts(16, 0, 0);
	struct pool_plan pl;

	(void)state;
	p.prefixes = true;
	p.warm_prefix_target = 1;
	p.max_enis = 3;
	f.enis[0].nprefixes = 1;
	f.enis[0].prefix_addrs = 16;
	f.enis[0].prefix[0].used = 16;
	/* 16 held, one /28 on its way, 80 waiting: 4 more fit on it */
	f.enis[0].busy = true;
	f.enis[0].prefixes_adding = 1;
	f.enis[0].adding = 16;
	f.enis[0].prefix_addrs += 16;
	f.waiters = 80;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 0);
	assert_int_equal(pl.blocked, BLOCK_NONE);
	/* answered: the rest on it, in one assign */
	f.enis[0].busy = false;
	f.enis[0].prefixes_adding = 0;
	f.enis[0].adding = 0;
	f.enis[0].nprefixes = 2;
	f.enis[0].free = 16;
	f.enis[0].prefix[1].free = 16;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 1);
	expect_action(&pl, 0, ACT_ASSIGN, 0, 4);
	assert_true(pl.actions[0].prefixes);
	/* more than its room: a new ENI for the rest only */
	f.enis[0].busy = true;
	f.enis[0].free = 0;
	f.enis[0].prefix[1].free = 0;
	f.waiters = 200;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 1);
	assert_int_equal(pl.actions[0].type, ACT_CREATE_ENI);
	assert_true(pl.actions[0].prefixes);
	assert_int_equal(pl.actions[0].count, 6);

	/* single addresses alike */
	p = params(5, 0, 0, 0);
	f = facts(2, 0, 0);
	f.enis[0].busy = true;
	f.enis[0].adding = 2;
	f.waiters = 6;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 0);
	assert_int_equal(pl.blocked, BLOCK_NONE);
}

static void
test_no_shrink_while_growing_or_waiting(void **state)
{
	struct pool_params p = params(1, 0, 0, 0);
	struct pool_facts f = facts(0, 0, 6);
	struct pool_plan pl;

	(void)state;
	f.surplus_since = 1;
	add_eni(&f, ENI_LINKING, 0, 0, 0);
	f.enis[1].adding = 3;
	pool_plan(&p, &f, 100000, &pl);
	assert_int_equal(pl.nactions, 0);
	assert_false(pl.surplus);
}

/* ---- prefixes: the pool's unit a /28 or a single address ---- */

/* Prefix delegation on, warm_ip_target and warm_prefix_target as given. */
static struct pool_params
pparams(uint32_t warm_ip, uint32_t warm_prefix)
{
	struct pool_params p = params(warm_ip, 0, 0, 0);

	p.prefixes = true;
	p.warm_prefix_target = warm_prefix;
	p.freeze_ms = 300000;
	return p;
}

/* Give e a prefix, used of its addresses held by pods and free_ ready. */
static uint32_t
give_prefix(struct pool_eni_view *e, uint32_t used, uint32_t free_)
{
	struct pool_prefix_view *px = &e->prefix[e->nprefixes];

	assert_true(e->nprefixes < POOL_MAX_PREFIXES);
	assert_true(used + free_ <= POOL_PREFIX_ADDRS);
	px->used = used;
	px->assigned = used;
	px->free = free_;
	e->assigned += used;
	e->free += free_;
	e->prefix_addrs += used + free_;
	return e->nprefixes++;
}

static void
expect_blocks(const struct pool_plan *pl, size_t i, enum pool_act type,
    uint32_t eni, uint32_t count, bool prefixes)
{
	expect_action(pl, i, type, eni, count);
	assert_int_equal(pl->actions[i].prefixes, prefixes);
}

/*
 * Growth in prefixes: as many as the deficit's sixteenths rounded up, on
 * the fullest ready ENI as far as its slots and the prefix table go, the
 * rest on new ENIs; the warm target the larger of the two; the need
 * capped at what the pool may hold.
 */
static void
test_prefix_growth(void **state)
{
	struct pool_params p = pparams(0, 1);
	struct pool_facts f = facts(0, 0, 0);
	struct pool_plan pl;

	(void)state;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.need, POOL_PREFIX_ADDRS);
	assert_int_equal(pl.nactions, 1);
	expect_blocks(&pl, 0, ACT_ASSIGN, 0, 1, true);
	assert_false(pl.fallback);
	/* warm: the larger of warm_ip_target and the prefixes' worth */
	p = pparams(5, 1);
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.need, 16);
	p = pparams(20, 1);
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.need, 20);
	expect_blocks(&pl, 0, ACT_ASSIGN, 0, 2, true);
	/* warm_eni_target means nothing with prefixes */
	p = pparams(0, 0);
	p.warm_eni_target = 2;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.need, 0);
	assert_int_equal(pl.nactions, 0);
	/* 40 waiting: 3 prefixes, 48 addresses */
	f.waiters = 40;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 1);
	expect_blocks(&pl, 0, ACT_ASSIGN, 0, 3, true);

	/* 7 slots of 9 taken by single addresses: 2 prefixes there, the
	 * rest (68 addresses, 5 prefixes) on a new ENI */
	f = facts(7, 0, 0);
	f.waiters = 100;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.need, 107);
	assert_int_equal(pl.nactions, 2);
	expect_blocks(&pl, 0, ACT_ASSIGN, 0, 2, true);
	expect_blocks(&pl, 1, ACT_CREATE_ENI, 0, 5, true);
	assert_int_equal(pl.actions[1].subnet, 0);
	assert_int_equal(pl.blocked, BLOCK_NONE);

	/* 29 slots an ENI: no more than POOL_MAX_PREFIXES prefixes on one,
	 * the new ENI's count as many as the deficit needs */
	f = facts(0, 0, 0);
	f.enis[0].capacity = 29;
	f.waiters = 400;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 2);
	expect_blocks(&pl, 0, ACT_ASSIGN, 0, POOL_MAX_PREFIXES, true);
	expect_blocks(&pl, 1, ACT_CREATE_ENI, 0,
	    (400 - POOL_MAX_ENI_ADDRS + 15) / 16, true);

	/* the need never passes what the pool may hold */
	f = facts(0, 0, 0);
	f.waiters = POOL_MAX_HELD + 500;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.need, POOL_MAX_HELD);
}

/*
 * The node's last pod when enid's own tables (maxima.h) bind, not the
 * cloud's limits nor max_pods (issue 34, item 6): the next ADD is told
 * max-pods at once.  Before, with every address enid holds given to
 * pods, the need was capped there and nothing blocked: the ADD waited
 * for its timeout, told the pool was growing.
 */
static void
test_enid_caps(void **state)
{
	struct pool_params p = pparams(1, 1);
	struct pool_facts f;
	struct pool_plan pl;
	uint32_t i, k;

	(void)state;
	/* ENID_MAX_PODS pods, on a type that takes more: 32 ENIs of 16
	 * prefixes each would hold 8192. */
	p.max_enis = POOL_MAX_ENIS;
	p.max_enis_enid = true;
	f = facts(0, 0, 0);
	f.enis[0].capacity = 49;
	for (i = 1; i < 8; i++)
		add_eni(&f, ENI_READY, 0, 0, 0);
	for (i = 0; i < 8; i++) {
		f.enis[i].capacity = 49;
		for (k = 0; k < POOL_MAX_PREFIXES; k++)
			give_prefix(&f.enis[i], POOL_PREFIX_ADDRS, 0);
	}
	f.waiters = 1;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.blocked, BLOCK_MAX_PODS);
	assert_int_equal(pl.nactions, 0);
	assert_string_equal(pool_block_name(pl.blocked), "max-pods");
	/* max_pods 0 or at the same cap: the same. */
	p.max_pods = POOL_MAX_HELD;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.blocked, BLOCK_MAX_PODS);
	p.max_pods = 0;
	/* One pod fewer, its address cooling: only cooling can serve. */
	f.enis[7].assigned--;
	f.enis[7].cooling++;
	f.enis[7].prefix[15].assigned--;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.blocked, BLOCK_ENID_LIMIT);
	assert_int_equal(pl.nactions, 0);
	assert_string_equal(pool_block_name(pl.blocked), "max-pods");
	/* ...unless it is free: no waiter is failed. */
	f.enis[7].cooling--;
	f.enis[7].free++;
	f.waiters = 1;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.blocked, BLOCK_NONE);

	/* One ENI (the instance's limit), its table full at 16 prefixes
	 * while the cloud has 48 slots more: enid's table binds. */
	p = pparams(1, 1);
	p.max_enis = 1;
	f = facts(0, 0, 0);
	f.enis[0].capacity = 63;
	for (k = 0; k < POOL_MAX_PREFIXES; k++)
		give_prefix(&f.enis[0], POOL_PREFIX_ADDRS, 0);
	f.waiters = 1;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.blocked, BLOCK_ENID_LIMIT);
	/* With no slot left in the cloud either, the cloud's limit binds. */
	f.enis[0].capacity = POOL_MAX_PREFIXES;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.blocked, BLOCK_ENI_LIMIT);

	/* Single addresses, every ENI full: at ENID_MAX_ENIS, when the
	 * cloud takes more, that is enid's limit; at the cloud's, its. */
	p = params(1, 0, 0, 0);
	p.max_enis = 2;
	p.max_enis_enid = true;
	f = facts(CAP, 0, 0);
	add_eni(&f, ENI_READY, CAP, 0, 0);
	f.waiters = 1;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.blocked, BLOCK_ENID_LIMIT);
	p.max_enis_enid = false;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.blocked, BLOCK_ENI_LIMIT);
}

/*
 * Ready ENIs without room: a new ENI comes with prefixes, in the subnet
 * with the most free addresses that has room for one of them.
 */
static void
test_prefix_new_eni(void **state)
{
	struct pool_params p = pparams(0, 1);
	struct pool_facts f = facts(0, 0, 0);
	struct pool_plan pl;
	uint32_t k;

	(void)state;
	for (k = 0; k < CAP; k++)
		give_prefix(&f.enis[0], POOL_PREFIX_ADDRS, 0);
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.need, CAP * 16 + 16);
	assert_int_equal(pl.nactions, 1);
	expect_blocks(&pl, 0, ACT_CREATE_ENI, 0, 1, true);
	assert_int_equal(pl.actions[0].subnet, 0);
	/* 10 left in the larger subnet is no room for a prefix: the other */
	f.subnets[0].available = 10;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 1);
	expect_blocks(&pl, 0, ACT_CREATE_ENI, 0, 1, true);
	assert_int_equal(pl.actions[0].subnet, 1);
	/* a subnet with 40 left gives 2 prefixes (and the ENI's own
	 * address), not the 3 the deficit asks */
	f.subnets[0].available = 40;
	f.subnets[1].configured = false;
	f.waiters = 48;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 2);
	expect_blocks(&pl, 0, ACT_CREATE_ENI, 0, 2, true);
	/* its last 6 (7, less the next ENI's own) as single addresses: no
	 * fallback, the subnet never refused a prefix */
	expect_blocks(&pl, 1, ACT_CREATE_ENI, 0, 6, false);
	assert_false(pl.fallback);
}

/*
 * A subnet that refused a /28 lately: growth takes prefixes in another
 * subnet first, on a ready ENI there or a new one, and single addresses in
 * this one only when no prefix is to be had; that fallback is counted, is
 * no growth backoff and no full subnet, and ends with the inhibit.
 */
static void
test_prefix_fallback_order(void **state)
{
	struct pool_params p = pparams(0, 1);
	struct pool_facts f = facts(2, 0, 0);	/* primary in A */
	struct pool_plan pl;
	uint32_t b;

	(void)state;
	b = add_eni(&f, ENI_READY, 1, 0, 0);
	f.enis[b].subnet = 1;			/* in B */
	/* both take prefixes: the fullest ENI, A's */
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.need, 19);
	assert_int_equal(pl.nactions, 1);
	expect_blocks(&pl, 0, ACT_ASSIGN, 0, 1, true);
	/* A refused one: a prefix on B's ENI, though A's is fuller */
	f.subnets[0].prefix_inhibited_until = 50000;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 1);
	expect_blocks(&pl, 0, ACT_ASSIGN, b, 1, true);
	assert_false(pl.fallback);
	assert_int_equal(pl.blocked, BLOCK_NONE);
	assert_int_equal(pl.wake, 50000);
	/* no ready ENI in B: a new one there, though A has more free */
	f.nenis = 1;
	f.attached_enis = 1;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 1);
	expect_blocks(&pl, 0, ACT_CREATE_ENI, 0, 1, true);
	assert_int_equal(pl.actions[0].subnet, 1);
	assert_false(pl.fallback);
	/* B at the ENI limit: single addresses in A, a fallback */
	p.max_enis = 1;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 1);
	expect_blocks(&pl, 0, ACT_ASSIGN, 0, CAP - 2, false);
	assert_true(pl.fallback);
	p.max_enis = 4;

	/* both refused: single addresses on the ready ENI, then a new ENI
	 * with single addresses, in the subnet with the most free */
	f.subnets[1].prefix_inhibited_until = 40000;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 2);
	expect_blocks(&pl, 0, ACT_ASSIGN, 0, CAP - 2, false);
	expect_blocks(&pl, 1, ACT_CREATE_ENI, 0, 16 - (CAP - 2), false);
	assert_int_equal(pl.actions[1].subnet, 0);
	assert_true(pl.fallback);
	assert_int_equal(pl.blocked, BLOCK_NONE);
	assert_int_equal(pl.wake, 40000);
	/* B's inhibit over: a prefix in B again; then A's: A's again */
	pool_plan(&p, &f, 40000, &pl);
	assert_int_equal(pl.nactions, 1);
	expect_blocks(&pl, 0, ACT_CREATE_ENI, 0, 1, true);
	assert_int_equal(pl.actions[0].subnet, 1);
	assert_false(pl.fallback);
	pool_plan(&p, &f, 50000, &pl);
	assert_int_equal(pl.nactions, 1);
	expect_blocks(&pl, 0, ACT_ASSIGN, 0, 1, true);
	assert_false(pl.fallback);
	assert_int_equal(pl.wake, 0);

	/* A refused prefixes, B is out of addresses: single addresses in
	 * A; a refused prefix never makes a subnet full */
	f.subnets[1].prefix_inhibited_until = 0;
	f.subnets[1].inhibited_until = 90000;
	f.enis[0].assigned = CAP;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 2);
	expect_blocks(&pl, 0, ACT_CREATE_ENI, 0, CAP, false);
	expect_blocks(&pl, 1, ACT_CREATE_ENI, 0, 16 - CAP, false);
	assert_int_equal(pl.actions[0].subnet, 0);
	assert_int_equal(pl.actions[1].subnet, 0);
	assert_true(pl.fallback);
	assert_int_equal(pl.blocked, BLOCK_NONE);
	/* and with growth backing off for another reason, it waits */
	f.growth_backoff_until = 2000;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 0);
	assert_int_equal(pl.blocked, BLOCK_BACKOFF);
	assert_false(pl.fallback);
}

/*
 * Prefixes and single addresses share an ENI's slots, whichever way the
 * pool grows; an ENI on its way counts the prefixes its room will hold.
 */
static void
test_prefix_mixed_slots(void **state)
{
	struct pool_params p = pparams(0, 0);
	struct pool_facts f = facts(3, 0, 0);
	struct pool_plan pl;
	uint32_t c, k;

	(void)state;
	give_prefix(&f.enis[0], 16, 0);
	give_prefix(&f.enis[0], 16, 0);
	/* 3 singles and 2 prefixes: 4 slots of 9 left */
	f.waiters = 100;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.need, 135);
	assert_int_equal(pl.nactions, 2);
	expect_blocks(&pl, 0, ACT_ASSIGN, 0, 4, true);
	expect_blocks(&pl, 1, ACT_CREATE_ENI, 0, 3, true);
	/* without prefixes, the same 4 slots take single addresses */
	p.prefixes = false;
	p.warm_ip_target = 10;
	f.waiters = 0;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.need, 45);
	assert_int_equal(pl.nactions, 2);
	expect_blocks(&pl, 0, ACT_ASSIGN, 0, 4, false);
	expect_blocks(&pl, 1, ACT_CREATE_ENI, 0, 6, false);
	/* an ENI created with 2 prefixes, still attaching: its 7 slots
	 * left are 112 addresses coming, enough for 100 more waiting */
	p = pparams(0, 0);
	f = facts(0, 0, 0);
	for (k = 0; k < CAP; k++)
		give_prefix(&f.enis[0], 16, 0);
	c = add_eni(&f, ENI_ATTACHING, 0, 0, 0);
	f.enis[c].prefixes_adding = 2;
	f.enis[c].adding = 32;
	f.enis[c].prefix_addrs = 32;
	f.waiters = 32 + 100;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 0);
	assert_int_equal(pl.blocked, BLOCK_NONE);
	/* 113: one prefix more than that room (the 2 on their way take
	 * their slots), on a new ENI */
	f.waiters = 32 + 113;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 1);
	expect_blocks(&pl, 0, ACT_CREATE_ENI, 0, 1, true);
}

/*
 * Shrinking with prefixes: an empty ENI whole; else free single
 * addresses, the emptiest ENI's first; only then a prefix none of whose
 * addresses is in use, and only for a prefix's worth of surplus.
 */
static void
test_prefix_shrink_order(void **state)
{
	struct pool_params p = pparams(1, 0);
	struct pool_facts f = facts(0, 0, 0);
	struct pool_plan pl;
	uint32_t b, c;

	(void)state;
	give_prefix(&f.enis[0], 10, 6);
	f.enis[0].free += 3;			/* and 3 single ones */
	b = add_eni(&f, ENI_READY, 1, 0, 0);	/* a pod on a single */
	give_prefix(&f.enis[b], 0, 16);
	f.surplus_since = 1;
	/* 11 held, 1 warm: 24 too many */
	pool_plan(&p, &f, 100000, &pl);
	assert_int_equal(pl.need, 12);
	assert_int_equal(pl.nactions, 2);
	expect_blocks(&pl, 0, ACT_UNASSIGN, 0, 3, false);
	expect_action(&pl, 1, ACT_UNASSIGN_PREFIX, b, 16);
	assert_int_equal(pl.actions[1].prefix, 0);
	/* 18 too many: the singles go, and 15 is less than a prefix */
	p.warm_ip_target = 7;
	pool_plan(&p, &f, 100000, &pl);
	assert_int_equal(pl.nactions, 1);
	expect_blocks(&pl, 0, ACT_UNASSIGN, 0, 3, false);
	/* an ENI holding nothing but a free prefix goes whole */
	p.warm_ip_target = 1;
	c = add_eni(&f, ENI_READY, 0, 0, 0);
	give_prefix(&f.enis[c], 0, 16);
	pool_plan(&p, &f, 100000, &pl);
	assert_int_equal(pl.nactions, 1);
	expect_action(&pl, 0, ACT_RELEASE_ENI, c, 16);
}

/*
 * A prefix with an address assigned, cooling or being given back is
 * never given back, however large the surplus; a wholly free prefix
 * beside it is.
 */
static void
test_prefix_in_use_kept(void **state)
{
	struct pool_params p = pparams(1, 0);
	struct pool_facts f;
	struct pool_plan pl;
	struct pool_eni_view *e;
	uint32_t b, k, kind;
	size_t i;

	(void)state;
	for (kind = 0; kind < 3; kind++) {
		f = facts(0, 0, 0);
		b = add_eni(&f, ENI_READY, 0, 0, 0);
		e = &f.enis[b];
		for (k = 0; k < 2; k++) {
			give_prefix(e, 0, 15);
			e->prefix[k].used = 1;
			e->prefix_addrs++;
			if (kind == 0)
				e->assigned++;
			else if (kind == 1)
				e->cooling++;
			else
				e->removing++;
		}
		f.surplus_since = 1;
		pool_plan(&p, &f, 100000, &pl);
		assert_true(pl.surplus);
		/* none wholly free: the emptiest is frozen instead */
		assert_int_equal(pl.nactions, 1);
		assert_int_equal(pl.actions[0].type, ACT_FREEZE_PREFIX);
		/* a wholly free third prefix goes, and only it */
		give_prefix(e, 0, 16);
		pool_plan(&p, &f, 100000, &pl);
		assert_true(pl.nactions >= 1);
		for (i = 0; i < pl.nactions; i++)
			if (pl.actions[i].type == ACT_UNASSIGN_PREFIX) {
				assert_int_equal(pl.actions[i].eni, b);
				assert_int_equal(pl.actions[i].prefix, 2);
			}
		expect_action(&pl, 0, ACT_UNASSIGN_PREFIX, b, 16);
	}
}

/*
 * A surplus of a prefix's worth that no wholly free prefix serves freezes
 * the emptiest prefix, so that it drains; one at a time, the plan waking
 * when the freeze ends; never for less than a prefix's worth.
 */
static void
test_prefix_freeze(void **state)
{
	struct pool_params p = pparams(1, 0);
	struct pool_facts f = facts(0, 0, 0);
	struct pool_plan pl;
	uint32_t b, c;

	(void)state;
	give_prefix(&f.enis[0], 5, 11);
	b = add_eni(&f, ENI_READY, 0, 0, 0);
	give_prefix(&f.enis[b], 9, 7);
	give_prefix(&f.enis[b], 2, 14);		/* the emptiest */
	c = add_eni(&f, ENI_DRAINING, 0, 0, 0);
	give_prefix(&f.enis[c], 1, 0);		/* not ready: not a choice */
	f.surplus_since = 1;
	/* 17 held, 1 warm, 32 free: 31 too many, none wholly free */
	pool_plan(&p, &f, 100000, &pl);
	assert_int_equal(pl.need, 18);
	assert_int_equal(pl.nactions, 1);
	expect_action(&pl, 0, ACT_FREEZE_PREFIX, b, 2);
	assert_int_equal(pl.actions[0].prefix, 1);
	assert_int_equal(pl.wake, 100000 + p.freeze_ms);
	/* one frozen already: none more, and a wake when it thaws */
	f.enis[0].prefix[0].frozen_until = 200000;
	f.enis[0].frozen_free = 11;
	pool_plan(&p, &f, 100000, &pl);
	assert_int_equal(pl.nactions, 0);
	assert_int_equal(pl.wake, 200000);
	pool_plan(&p, &f, 200000, &pl);
	assert_int_equal(pl.nactions, 1);
	expect_action(&pl, 0, ACT_FREEZE_PREFIX, b, 2);
	/* less than a prefix too many: nothing, and no wake */
	p.warm_ip_target = 20;
	pool_plan(&p, &f, 100000, &pl);
	assert_true(pl.surplus);
	assert_int_equal(pl.nactions, 0);
	assert_int_equal(pl.wake, 0);
	/* freezing off */
	p = pparams(1, 0);
	p.freeze_ms = 0;
	f.enis[0].prefix[0].frozen_until = 0;
	pool_plan(&p, &f, 100000, &pl);
	assert_int_equal(pl.nactions, 0);
}

/*
 * The prefix frozen is the one with the fewest pods, its cooling addresses
 * not counted: they leave by themselves, and a prefix most pods just left
 * is the one to drain, not the one with two pods and nothing cooling.
 */
static void
test_prefix_freeze_fewest_pods(void **state)
{
	struct pool_params p = pparams(1, 0);
	struct pool_facts f = facts(0, 0, 0);
	struct pool_plan pl;
	uint32_t k;

	(void)state;
	give_prefix(&f.enis[0], 2, 14);
	/* one pod and twelve cooling: used 13, one pod */
	k = give_prefix(&f.enis[0], 1, 3);
	f.enis[0].prefix[k].used += 12;
	f.enis[0].cooling += 12;
	f.enis[0].prefix_addrs += 12;
	f.surplus_since = 1;
	pool_plan(&p, &f, 100000, &pl);
	assert_int_equal(pl.nactions, 1);
	expect_action(&pl, 0, ACT_FREEZE_PREFIX, 0, 13);
	assert_int_equal(pl.actions[0].prefix, k);
}

/*
 * Prefix delegation turned on where single addresses hold every slot:
 * still short, the pool gives back free singles (as many as the prefixes
 * the deficit needs) so that prefixes take their slots next, rather than
 * stay on singles at the ENI limit.  Not where no prefix would fit.
 */
static void
test_prefix_trade_singles(void **state)
{
	struct pool_params p = pparams(3, 0);
	struct pool_facts f = facts(CAP - 1, 0, 1);
	struct pool_plan pl;
	uint32_t b;

	(void)state;
	p.max_enis = 2;
	b = add_eni(&f, ENI_READY, CAP - 2, 0, 2);
	pool_plan(&p, &f, 1000, &pl);
	/* need 2 x CAP - 3 + 3 = 2 x CAP, have 2 x CAP: no */
	assert_int_equal(pl.nactions, 0);
	p.warm_ip_target = 8;
	pool_plan(&p, &f, 1000, &pl);
	assert_true(pl.need > pl.have);
	assert_int_equal(pl.nactions, 1);
	expect_action(&pl, 0, ACT_UNASSIGN, b, 1);	/* the most free */
	/* given back, the slot takes a prefix */
	f.enis[b].free = 1;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 1);
	expect_blocks(&pl, 0, ACT_ASSIGN, b, 1, true);
	/* a subnet refusing prefixes, or one without a /28's room: none */
	f.enis[b].free = 2;
	f.subnets[0].prefix_inhibited_until = 5000;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 0);
	f.subnets[0].prefix_inhibited_until = 0;
	f.subnets[0].available = 15;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 0);
	/* prefix delegation off: singles stay */
	f.subnets[0].available = 4000;
	p.prefixes = false;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 0);
}

/* A new pod's address is outside a frozen prefix while another will do. */
static void
test_prefix_pick_avoids_frozen(void **state)
{
	struct pool_facts f = facts(0, 0, 0);
	uint32_t b;

	(void)state;
	give_prefix(&f.enis[0], 5, 11);
	f.enis[0].prefix[0].frozen_until = 500000;
	f.enis[0].frozen_free = 11;
	b = add_eni(&f, ENI_READY, 1, 0, 3);
	/* the fullest ENI has only frozen addresses free: the other */
	assert_int_equal(pool_pick_eni(&f), b);
	/* none else: the frozen prefix serves */
	f.enis[b].free = 0;
	assert_int_equal(pool_pick_eni(&f), 0);
	/* a free single beside the frozen prefix: the fullest again */
	f.enis[b].free = 3;
	f.enis[0].free++;
	assert_int_equal(pool_pick_eni(&f), 0);
}

/*
 * Prefix delegation switched off with prefixes held: growth takes single
 * addresses in the slots left, and wholly free prefixes still go back.
 */
static void
test_prefix_mode_off(void **state)
{
	struct pool_params p = params(3, 0, 0, 0);
	struct pool_facts f = facts(0, 0, 0);
	struct pool_plan pl;
	uint32_t b;
	size_t i;

	(void)state;
	give_prefix(&f.enis[0], 16, 0);
	give_prefix(&f.enis[0], 10, 6);
	/* 26 held, 6 free, 3 warm: nothing to grow */
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 0);
	f.waiters = 10;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 1);
	expect_blocks(&pl, 0, ACT_ASSIGN, 0, 4, false);
	/* past the 7 slots left: single addresses on a new ENI too */
	f.waiters = 30;
	pool_plan(&p, &f, 1000, &pl);
	assert_true(pl.nactions >= 2);
	for (i = 0; i < pl.nactions; i++)
		assert_false(pl.actions[i].prefixes);
	expect_blocks(&pl, 0, ACT_ASSIGN, 0, CAP - 2, false);
	f.waiters = 0;
	b = add_eni(&f, ENI_READY, 1, 0, 0);
	give_prefix(&f.enis[b], 0, 16);
	f.surplus_since = 1;
	pool_plan(&p, &f, 100000, &pl);
	assert_int_equal(pl.nactions, 1);
	expect_action(&pl, 0, ACT_UNASSIGN_PREFIX, b, 16);
}

/* Carry a plan's growth out on a view: prefixes and addresses free. */
static void
grow_view(const struct pool_plan *pl, struct pool_facts *f)
{
	size_t i;
	uint32_t k, n;

	for (i = 0; i < pl->nactions; i++) {
		const struct pool_action *a = &pl->actions[i];
		struct pool_eni_view *e = &f->enis[a->eni];

		switch (a->type) {
		case ACT_CREATE_ENI:
			assert_true(f->nenis < POOL_MAX_ENIS);
			n = f->nenis++;
			e = &f->enis[n];
			*e = (struct pool_eni_view){ .state = ENI_READY,
			    .usable = true, .subnet = a->subnet,
			    .capacity = f->enis[0].capacity };
			f->attached_enis++;
			/* FALLTHROUGH */
		case ACT_ASSIGN:
			if (!a->prefixes)
				e->free += a->count;
			for (k = 0; a->prefixes && k < a->count; k++)
				give_prefix(e, 0, POOL_PREFIX_ADDRS);
			break;
		default:
			fail_msg("growth expected, not action %d", a->type);
		}
	}
}

/*
 * No flapping: once a plan's growth is carried out, the next plan neither
 * grows nor shrinks, and holds less than a prefix more than the need;
 * with no shrink delay at all, what it gives back leaves the need.
 */
static void
test_prefix_no_flapping(void **state)
{
	struct pool_params p;
	struct pool_facts f;
	struct pool_plan pl, again;
	uint32_t start, waiters, warm, b, grown = 0;

	(void)state;
	for (start = 0; start < 4; start++)
		for (waiters = 0; waiters < 70; waiters += 3)
			for (warm = 0; warm < 3; warm++) {
				p = pparams(warm * 7, warm);
				f = facts(start, 0, 0);
				if (start >= 1)
					give_prefix(&f.enis[0], 10, 6);
				if (start >= 2) {
					f.enis[0].free += 2;
					f.subnets[0].prefix_inhibited_until =
					    50000;
				}
				if (start == 3) {
					b = add_eni(&f, ENI_READY, 0, 0, 1);
					f.enis[b].subnet = 1;
				}
				f.waiters = waiters;
				pool_plan(&p, &f, 1000, &pl);
				if (pl.need <= pl.have)
					continue;
				grown++;
				grow_view(&pl, &f);
				pool_plan(&p, &f, 1000, &again);
				assert_int_equal(again.nactions, 0);
				assert_true(again.need <= again.have);
				assert_true(again.have - again.need <
				    POOL_PREFIX_ADDRS);
				/* no delay: shrink, if at all, to the need */
				p.shrink_delay_ms = 0;
				pool_plan(&p, &f, 1000, &again);
				assert_true(again.nactions == 0 ||
				    again.actions[0].type == ACT_UNASSIGN);
			}
	assert_true(grown > 100);
}

/*
 * An ENI's addresses, singles and prefixes' together, fit the engine's
 * table of POOL_MAX_ENI_ADDRS: on an ENI with more slots than prefixes,
 * growth asks for no prefix or address the table could not take.
 */
static void
test_prefix_eni_table(void **state)
{
	struct pool_params p = pparams(0, 0);
	struct pool_facts f = facts(13, 0, 0);
	struct pool_plan pl;
	uint32_t k;

	(void)state;
	f.enis[0].capacity = 29;
	f.waiters = 300;
	/* 13 singles and 16 prefixes would be 269 addresses: 15 */
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 2);
	expect_blocks(&pl, 0, ACT_ASSIGN, 0,
	    (POOL_MAX_ENI_ADDRS - 13) / POOL_PREFIX_ADDRS, true);
	expect_blocks(&pl, 1, ACT_CREATE_ENI, 0, 4, true);
	/* a table full of prefixes, 13 slots left: no single address, and
	 * the table, not the cloud, is what binds */
	f = facts(0, 0, 0);
	f.enis[0].capacity = 29;
	for (k = 0; k < POOL_MAX_PREFIXES; k++)
		give_prefix(&f.enis[0], 16, 0);
	f.waiters = 5;
	p.max_enis = 1;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 0);
	assert_int_equal(pl.blocked, BLOCK_ENID_LIMIT);
	/* likewise with prefix delegation off */
	p.prefixes = false;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 0);
	/* 15 prefixes and 2 singles on an ENI of 49 slots: room in the
	 * table for 14 single addresses more, either way */
	for (k = 0; k < 2; k++) {
		p = pparams(1, 0);
		p.prefixes = k == 0;
		p.max_enis = 1;
		f = facts(2, 0, 0);
		f.enis[0].capacity = 49;
		while (f.enis[0].nprefixes < POOL_MAX_PREFIXES - 1)
			give_prefix(&f.enis[0], 16, 0);
		f.waiters = 20;
		pool_plan(&p, &f, 1000, &pl);
		assert_int_equal(pl.nactions, 1);
		expect_blocks(&pl, 0, ACT_ASSIGN, 0, 14, false);
		assert_false(pl.fallback);
	}
}

/*
 * Prefixes on a ready ENI no more than its subnet's free addresses (as
 * last described) hold, as for a new ENI: asked for more, the cloud
 * refuses them all, and growth would fall back to single addresses for
 * a while though some prefixes were to be had.  With too few left for
 * one, single addresses there, not counted a fallback.
 */
static void
test_prefix_subnet_room(void **state)
{
	struct pool_params p = pparams(0, 0);
	struct pool_facts f = facts(0, 0, 0);
	struct pool_plan pl;

	(void)state;
	/* 80 waiting, 40 free in the ENI's subnet: 2 prefixes there, the
	 * rest on a new ENI in the other */
	f.subnets[0].available = 40;
	f.waiters = 80;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 2);
	expect_blocks(&pl, 0, ACT_ASSIGN, 0, 2, true);
	expect_blocks(&pl, 1, ACT_CREATE_ENI, 0, 3, true);
	assert_int_equal(pl.actions[1].subnet, 1);
	/* 10 free, and no other subnet: single addresses */
	f.subnets[0].available = 10;
	f.subnets[1].configured = false;
	f.waiters = 5;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 1);
	expect_blocks(&pl, 0, ACT_ASSIGN, 0, 5, false);
	assert_false(pl.fallback);
	/* none known free: still single addresses, the cloud's answer
	 * (a refusal marks the subnet full) being the truth */
	f.subnets[0].available = 0;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 1);
	expect_blocks(&pl, 0, ACT_ASSIGN, 0, 5, false);
}

/* ---- randomized simulation ---- */

/* Carry a plan out at once, as if every call succeeded. */
static void
apply(const struct pool_plan *pl, struct pool_facts *f)
{
	size_t i;

	for (i = 0; i < pl->nactions; i++) {
		const struct pool_action *a = &pl->actions[i];
		struct pool_eni_view *e = &f->enis[a->eni];

		switch (a->type) {
		case ACT_ASSIGN:
			assert_true(e->assigned + e->cooling + e->free +
			    a->count <= e->capacity);
			e->free += a->count;
			break;
		case ACT_CREATE_ENI:
			assert_true(f->nenis < POOL_MAX_ENIS);
			f->enis[f->nenis++] = (struct pool_eni_view){
			    .state = ENI_READY, .usable = true,
			    .subnet = a->subnet, .capacity = CAP,
			    .free = a->count };
			f->attached_enis++;
			break;
		case ACT_UNASSIGN:
			assert_true(a->count <= e->free);
			e->free -= a->count;
			break;
		case ACT_RELEASE_ENI:
			assert_false(e->primary);
			assert_int_equal(e->assigned, 0);
			assert_int_equal(e->cooling, 0);
			*e = f->enis[--f->nenis];
			f->attached_enis--;
			break;
		case ACT_UNASSIGN_PREFIX:
		case ACT_FREEZE_PREFIX:
			fail_msg("a prefix action without prefix delegation");
			break;
		}
	}
}

static void
sim_run(struct pool_params p, unsigned steps)
{
	struct pool_facts f = facts(0, 0, 0);
	struct pool_plan pl, again;
	uint64_t now = 1000;
	unsigned s;
	uint32_t i, held = 0, total;

	for (s = 0; s < steps; s++) {
		uint32_t ev = rnd(10);

		if (ev < 4) {
			/* a pod arrives, if an address can be had */
			int e = pool_pick_eni(&f);

			if (e >= 0 && (!p.max_pods || held < p.max_pods)) {
				f.enis[e].free--;
				f.enis[e].assigned++;
				held++;
			}
		} else if (ev < 7 && held > 0) {
			/* a pod leaves; its address cools */
			for (i = rnd(f.nenis);; i = (i + 1) % f.nenis)
				if (f.enis[i].assigned > 0)
					break;
			f.enis[i].assigned--;
			f.enis[i].cooling++;
			held--;
		} else if (ev < 9) {
			/* cooling ends somewhere */
			for (i = 0; i < f.nenis; i++)
				if (f.enis[i].cooling > 0 && rnd(2)) {
					f.enis[i].cooling--;
					f.enis[i].free++;
				}
		}
		now += rnd(20000);
		pool_plan(&p, &f, now, &pl);
		if (!pl.surplus)
			f.surplus_since = 0;
		else if (f.surplus_since == 0)
			f.surplus_since = now;
		apply(&pl, &f);
		assert_true(f.attached_enis <= p.max_enis);
		/* A plan that isn't blocked covers the need once applied... */
		pool_plan(&p, &f, now, &again);
		if (pl.blocked == BLOCK_NONE && pl.need > pl.have) {
			total = 0;
			for (i = 0; i < f.nenis; i++)
				total += f.enis[i].assigned +
				    f.enis[i].cooling + f.enis[i].free;
			assert_true(total >= pl.need);
		}
		/* ...and a shrink is never undone by the very next plan. */
		for (i = 0; i < pl.nactions; i++)
			if (pl.actions[i].type == ACT_UNASSIGN ||
			    pl.actions[i].type == ACT_RELEASE_ENI) {
				size_t k;

				for (k = 0; k < again.nactions; k++)
					assert_true(again.actions[k].type ==
					    ACT_UNASSIGN ||
					    again.actions[k].type ==
					    ACT_RELEASE_ENI);
			}
		if (pl.nactions > 0 && pl.actions[0].type != ACT_UNASSIGN &&
		    pl.actions[0].type != ACT_RELEASE_ENI)
			f.surplus_since = 0;
	}
}

static void
test_randomized(void **state)
{
	(void)state;
	rng_state = 0x2545f4914f6cdd1dULL;
	sim_run(params(3, 0, 0, 0), 20000);
	sim_run(params(0, 0, 1, 0), 20000);
	sim_run(params(2, 15, 0, 0), 20000);
	sim_run(params(5, 0, 0, 25), 20000);
	sim_run(params(0, 0, 2, 30), 20000);
}

/* ---- prefixes: a model of ENIs and a cloud, the planner driving ---- */

/*
 * The model holds what the engine holds: each ENI's addresses one by one
 * (free, a pod's, cooling, being given back) and its prefixes; the cloud
 * who owns every address of two /22 subnets.  A fragmented subnet has no
 * aligned /28 free (another node's address in each): the cloud refuses
 * prefixes there, and the model inhibits them for a while as the engine
 * does (subnet_prefix_inhibit).  Plans are carried out at once, or
 * their cloud calls answered at the next step.
 */
#define PX_SUBNETS	2
#define PX_SUBNET_ADDRS	1024
#define PX_FOREIGN	0xffffffffu	/* another node's, while fragmented */
#define PX_OTHER	0xfffffffeu	/* another node's, for good */
#define PX_COOL_MS	30000
#define PX_BACKOFF_MS	120000		/* prefix_backoff_s */
#define PX_ROUNDS	12		/* plans in a row before it is quiet */
#define PX_STEPS	3000		/* a run's */

struct px_addr {
	uint32_t	ip;
	uint32_t	block;		/* its prefix's base; 0: a single */
	enum addr_state	st;
	uint64_t	cool_until;
};

struct px_prefix {
	uint32_t	base;
	uint64_t	frozen_until;
	bool		removing;
};

struct px_eni {
	uint32_t	id;		/* the cloud's owner mark */
	enum eni_state	state;		/* creating, ready or draining */
	bool		primary;
	uint32_t	subnet;
	uint32_t	ip;		/* its own address */
	uint32_t	naddrs;
	struct px_addr	addrs[POOL_MAX_ENI_ADDRS];
	uint32_t	nprefixes;
	struct px_prefix prefixes[POOL_MAX_PREFIXES];
	uint32_t	assigning;	/* blocks asked for, or created with */
	bool		assigning_prefixes;
	bool		unassigning;	/* its removing addresses go next */
};

/* What a run went through: each must have happened somewhere. */
struct px_seen {
	uint32_t	prefix_growth, fallback, refused, prefix_back;
	uint32_t	unassigned, frozen, released, single_fragmented;
	uint32_t	prefixes_again, blocked_waiters, subnet_full, full;
	uint32_t	in_flight;	/* plans made with calls on their way */
	uint32_t	traded;		/* free singles given back for prefixes */
};

struct px_sim {
	struct pool_params p;
	uint64_t	now;
	uint32_t	capacity, pod_cap, pods, waiters, next_id;
	bool		toggle;		/* prefix delegation switched on/off */
	uint64_t	surplus_since;
	uint32_t	owner[PX_SUBNETS][PX_SUBNET_ADDRS];	/* 0: free */
	bool		fragmented[PX_SUBNETS];
	bool		restored;	/* since the last prefix growth */
	uint64_t	inhibited_until[PX_SUBNETS];
	uint64_t	prefix_inhibited_until[PX_SUBNETS];
	uint32_t	nenis;
	struct px_eni	enis[POOL_MAX_ENIS];
	struct px_seen	seen;
};

static uint32_t
px_min(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

static uint32_t
px_ip(uint32_t s, uint32_t off)
{
	return 0x0a000000u | s << 16 | off;
}

static uint32_t *
px_owner(struct px_sim *m, uint32_t ip)
{
	uint32_t s = (ip >> 16) & 0xff, off = ip & 0xffff;

	assert_true(s < PX_SUBNETS && off < PX_SUBNET_ADDRS);
	return &m->owner[s][off];
}

static uint32_t
px_available(const struct px_sim *m, uint32_t s)
{
	uint32_t off, n = 0;

	for (off = 0; off < PX_SUBNET_ADDRS; off++)
		n += m->owner[s][off] == 0;
	return n;
}

/* The cloud gives n single addresses of subnet s to id, all or none. */
static bool
cloud_singles(struct px_sim *m, uint32_t s, uint32_t id, uint32_t n,
    uint32_t *ips)
{
	uint32_t off, k = 0;

	if (px_available(m, s) < n)
		return false;
	for (off = 0; off < PX_SUBNET_ADDRS && k < n; off++)
		if (m->owner[s][off] == 0) {
			m->owner[s][off] = id;
			ips[k++] = px_ip(s, off);
		}
	return true;
}

/* An aligned /28 wholly free of subnet s to id, or 0: none while the
 * subnet is fragmented, even where addresses given back left one. */
static uint32_t
cloud_prefix(struct px_sim *m, uint32_t s, uint32_t id)
{
	uint32_t off, j;

	if (m->fragmented[s])
		return 0;
	for (off = 0; off < PX_SUBNET_ADDRS; off += POOL_PREFIX_ADDRS) {
		for (j = 0; j < POOL_PREFIX_ADDRS; j++)
			if (m->owner[s][off + j] != 0)
				break;
		if (j < POOL_PREFIX_ADDRS)
			continue;
		for (j = 0; j < POOL_PREFIX_ADDRS; j++)
			m->owner[s][off + j] = id;
		return px_ip(s, off);
	}
	return 0;
}

static void
cloud_give_back(struct px_sim *m, uint32_t ip, uint32_t id)
{
	uint32_t *o = px_owner(m, ip);

	assert_int_equal(*o, id);
	*o = 0;
}

/* Another node's address in every /28 left whole: no prefix here. */
static void
px_fragment(struct px_sim *m, uint32_t s)
{
	uint32_t off, j;

	for (off = 0; off < PX_SUBNET_ADDRS; off += POOL_PREFIX_ADDRS) {
		for (j = 0; j < POOL_PREFIX_ADDRS; j++)
			if (m->owner[s][off + j] != 0)
				break;
		if (j == POOL_PREFIX_ADDRS)
			m->owner[s][off + rnd(POOL_PREFIX_ADDRS)] = PX_FOREIGN;
	}
	m->fragmented[s] = true;
}

static void
px_restore(struct px_sim *m, uint32_t s)
{
	uint32_t off;

	for (off = 0; off < PX_SUBNET_ADDRS; off++)
		if (m->owner[s][off] == PX_FOREIGN)
			m->owner[s][off] = 0;
	if (m->fragmented[s])
		m->restored = true;
	m->fragmented[s] = false;
}

static void
px_put_addr(struct px_eni *e, uint32_t ip, uint32_t block)
{
	assert_true(e->naddrs < POOL_MAX_ENI_ADDRS);
	e->addrs[e->naddrs++] = (struct px_addr){ .ip = ip, .block = block,
	    .st = ADDR_FREE };
}

static uint32_t
px_singles(const struct px_eni *e)
{
	uint32_t i, n = 0;

	for (i = 0; i < e->naddrs; i++)
		n += e->addrs[i].block == 0;
	return n;
}

/* Slots e takes, and will once its assign is in. */
static uint32_t
px_slots(const struct px_eni *e)
{
	return px_singles(e) + e->nprefixes + e->assigning;
}

/* Prefixes e could take, as the planner must count them. */
static uint32_t
px_prefix_room(const struct px_sim *m, const struct px_eni *e)
{
	uint32_t slots = px_slots(e), room;

	room = slots < m->capacity ? m->capacity - slots : 0;
	room = px_min(room, POOL_MAX_PREFIXES - e->nprefixes);
	return px_min(room,
	    (POOL_MAX_ENI_ADDRS - e->naddrs) / POOL_PREFIX_ADDRS);
}

static bool
px_busy(const struct px_eni *e)
{
	return e->assigning > 0 || e->unassigning;
}

/* Which of e's prefixes holds ip's block, or -1. */
static int
px_prefix_of(const struct px_eni *e, uint32_t block)
{
	uint32_t k;

	for (k = 0; k < e->nprefixes; k++)
		if (e->prefixes[k].base == block)
			return (int)k;
	return -1;
}

/* The policy's view, as the engine builds it (engine_view). */
static void
px_view(struct px_sim *m, struct pool_facts *f)
{
	uint32_t i, j, s;

	memset(f, 0, sizeof(*f));
	f->waiters = m->waiters;
	f->surplus_since = m->surplus_since;
	f->nsubnets = PX_SUBNETS;
	for (s = 0; s < PX_SUBNETS; s++) {
		f->subnets[s].configured = true;
		f->subnets[s].available = px_available(m, s);
		f->subnets[s].inhibited_until = m->inhibited_until[s];
		f->subnets[s].prefix_inhibited_until =
		    m->prefix_inhibited_until[s];
	}
	f->nenis = m->nenis;
	for (i = 0; i < m->nenis; i++) {
		const struct px_eni *e = &m->enis[i];
		struct pool_eni_view *v = &f->enis[i];

		if (e->state != ENI_CREATING)
			f->attached_enis++;
		v->state = e->state;
		v->primary = e->primary;
		v->usable = true;
		v->busy = e->state != ENI_CREATING && px_busy(e);
		v->subnet = e->subnet;
		v->capacity = m->capacity;
		if (e->assigning_prefixes) {
			v->prefixes_adding = e->assigning;
			v->adding = e->assigning * POOL_PREFIX_ADDRS;
			v->prefix_addrs = v->adding;
		} else
			v->adding = e->assigning;
		v->nprefixes = e->nprefixes;
		for (j = 0; j < e->nprefixes; j++)
			v->prefix[j].frozen_until = e->prefixes[j].frozen_until;
		for (j = 0; j < e->naddrs; j++) {
			const struct px_addr *a = &e->addrs[j];
			int k = a->block ? px_prefix_of(e, a->block) : -1;

			switch (a->st) {
			case ADDR_FREE:
				v->free++;
				break;
			case ADDR_ASSIGNED:
				v->assigned++;
				break;
			case ADDR_COOLING:
				v->cooling++;
				break;
			case ADDR_REMOVING:
				v->removing++;
				break;
			default:
				fail_msg("address state %d", a->st);
			}
			if (a->block == 0)
				continue;
			assert_true(k >= 0);
			v->prefix_addrs++;
			if (a->st != ADDR_FREE)
				v->prefix[k].used++;
			else {
				v->prefix[k].free++;
				if (v->prefix[k].frozen_until > m->now)
					v->frozen_free++;
			}
		}
		for (j = 0; j < e->nprefixes; j++)
			if (e->prefixes[j].removing)
				v->prefix[j].used++;
	}
}

/* The address of e a new pod takes, ranked as eni_pick_addr does. */
static int
px_pick_addr(const struct px_sim *m, const struct px_eni *e)
{
	uint32_t used[POOL_MAX_PREFIXES], rank, best_rank = 0, i, k;
	int best = -1, pk;

	memset(used, 0, sizeof(used));
	for (i = 0; i < e->naddrs; i++)
		if (e->addrs[i].block && e->addrs[i].st != ADDR_FREE)
			used[(uint32_t)px_prefix_of(e, e->addrs[i].block)]++;
	for (i = 0; i < e->naddrs; i++) {
		if (e->addrs[i].st != ADDR_FREE)
			continue;
		if (e->addrs[i].block == 0)
			rank = POOL_PREFIX_ADDRS + 2;
		else {
			pk = px_prefix_of(e, e->addrs[i].block);
			k = (uint32_t)pk;
			rank = e->prefixes[k].frozen_until > m->now ? 0 :
			    used[k] == 0 ? 1 : 2 * POOL_PREFIX_ADDRS + used[k];
		}
		if (best == -1 || rank > best_rank) {
			best = (int)i;
			best_rank = rank;
		}
	}
	return best;
}

static bool
px_frozen_addr(const struct px_sim *m, const struct px_eni *e,
    const struct px_addr *a)
{
	int k = a->block ? px_prefix_of(e, a->block) : -1;

	return k >= 0 && e->prefixes[k].frozen_until > m->now;
}

/* A pod arrives and takes an address, if one is to be had. */
static bool
px_pod_add(struct px_sim *m)
{
	static struct pool_facts f;
	struct px_eni *e;
	uint32_t i, j;
	int pick, a;

	px_view(m, &f);
	if ((pick = pool_pick_eni(&f)) < 0)
		return false;
	e = &m->enis[pick];
	assert_int_equal(e->state, ENI_READY);
	a = px_pick_addr(m, e);
	assert_true(a >= 0);
	/* a frozen prefix's address only when no other is free */
	if (px_frozen_addr(m, e, &e->addrs[a]))
		for (i = 0; i < m->nenis; i++)
			for (j = 0; j < m->enis[i].naddrs; j++)
				assert_false(m->enis[i].state == ENI_READY &&
				    m->enis[i].addrs[j].st == ADDR_FREE &&
				    !px_frozen_addr(m, &m->enis[i],
				    &m->enis[i].addrs[j]));
	e->addrs[a].st = ADDR_ASSIGNED;
	m->pods++;
	if (m->fragmented[0] && m->fragmented[1] && e->addrs[a].block == 0)
		m->seen.single_fragmented++;
	return true;
}

static void
px_pod_del(struct px_sim *m)
{
	uint32_t i, j, n = (uint32_t)rnd(m->pods);

	for (i = 0; i < m->nenis; i++)
		for (j = 0; j < m->enis[i].naddrs; j++) {
			struct px_addr *a = &m->enis[i].addrs[j];

			if (a->st != ADDR_ASSIGNED || n-- > 0)
				continue;
			a->st = ADDR_COOLING;
			a->cool_until = m->now + PX_COOL_MS;
			m->pods--;
			return;
		}
	fail_msg("%u pods, but not found", m->pods);
}

static void
px_serve_waiters(struct px_sim *m)
{
	while (m->waiters > 0 && px_pod_add(m))
		m->waiters--;
}

static void
px_cool(struct px_sim *m)
{
	uint32_t i, j;

	for (i = 0; i < m->nenis; i++)
		for (j = 0; j < m->enis[i].naddrs; j++)
			if (m->enis[i].addrs[j].st == ADDR_COOLING &&
			    m->enis[i].addrs[j].cool_until <= m->now)
				m->enis[i].addrs[j].st = ADDR_FREE;
}

/* Does subnet s refuse prefixes now (it refused a /28 lately)? */
static bool
px_inhibited(const struct px_sim *m, uint32_t s)
{
	return m->prefix_inhibited_until[s] > m->now;
}

/*
 * What a plan's growth must be: prefixes, unless its subnet refused one
 * lately or has none left to give, or the ENI has room for no prefix;
 * single addresses only once every prefix to be had elsewhere is asked
 * for (ready ENIs, then new ones); and a fallback said so.
 */
static void
px_check_growth(struct px_sim *m, const struct pool_facts *f,
    const struct pool_plan *pl)
{
	uint32_t planned[PX_SUBNETS], i, s;
	bool singles = false, fallback = false, asked;
	size_t k;

	memset(planned, 0, sizeof(planned));
	for (k = 0; k < pl->nactions; k++) {
		const struct pool_action *a = &pl->actions[k];
		uint32_t before;

		if (a->type != ACT_ASSIGN && a->type != ACT_CREATE_ENI)
			continue;
		s = a->type == ACT_ASSIGN ? m->enis[a->eni].subnet : a->subnet;
		/* within what the subnet has left (as last known), the
		 * plan's other blocks there counted; but single addresses
		 * on a ready ENI are the cloud's to refuse */
		before = planned[s];
		if (a->type == ACT_CREATE_ENI || a->prefixes)
			planned[s] += (a->type == ACT_CREATE_ENI) +
			    (a->prefixes ? a->count * POOL_PREFIX_ADDRS :
			    a->count);
		assert_true(planned[s] <= f->subnets[s].available);
		if (!m->p.prefixes) {
			assert_false(a->prefixes);
			continue;
		}
		/* never where addresses ran out lately */
		assert_true(m->inhibited_until[s] <= m->now);
		if (a->prefixes) {
			/* nor a prefix where one was refused lately */
			assert_false(px_inhibited(m, s));
			m->seen.prefix_growth++;
			if (m->restored) {
				m->seen.prefixes_again++;
				m->restored = false;
			}
			continue;
		}
		singles = true;
		if (px_inhibited(m, s)) {
			fallback = true;
			continue;
		}
		/* a subnet that takes prefixes: only where none fits */
		if (a->type == ACT_ASSIGN)
			assert_true(px_prefix_room(m, &m->enis[a->eni]) == 0 ||
			    f->subnets[s].available < before +
			    POOL_PREFIX_ADDRS);
		else
			assert_true(f->subnets[s].available <
			    before + POOL_PREFIX_ADDRS + 1);
	}
	assert_int_equal(pl->fallback, fallback);
	if (fallback)
		m->seen.fallback++;
	if (!singles)
		return;
	/* every ready ENI that may take a prefix is asked for some */
	for (i = 0; i < m->nenis; i++) {
		const struct px_eni *e = &m->enis[i];

		if (e->state != ENI_READY || px_busy(e) ||
		    px_inhibited(m, e->subnet) ||
		    m->inhibited_until[e->subnet] > m->now ||
		    px_prefix_room(m, e) == 0 ||
		    f->subnets[e->subnet].available < planned[e->subnet] +
		    POOL_PREFIX_ADDRS)
			continue;
		asked = false;
		for (k = 0; k < pl->nactions; k++)
			asked |= pl->actions[k].type == ACT_ASSIGN &&
			    pl->actions[k].eni == i && pl->actions[k].prefixes;
		assert_true(asked);
	}
	/* and a new ENI with prefixes, while the instance has room */
	if (pl->used_slots < m->p.max_enis)
		for (s = 0; s < PX_SUBNETS; s++)
			if (!px_inhibited(m, s) &&
			    m->inhibited_until[s] <= m->now)
				assert_true(f->subnets[s].available <
				    planned[s] + POOL_PREFIX_ADDRS + 1);
}

/* Start a plan's actions, checking each against the model. */
static void
px_start(struct px_sim *m, const struct pool_plan *pl)
{
	uint32_t j, n, frozen;
	size_t k;

	for (k = 0; k < pl->nactions; k++) {
		const struct pool_action *a = &pl->actions[k];
		struct px_eni *e = &m->enis[a->eni];
		struct px_prefix *px;

		if (a->type != ACT_CREATE_ENI) {
			assert_true(a->eni < m->nenis);
			assert_int_equal(e->state, ENI_READY);
		}
		switch (a->type) {
		case ACT_ASSIGN:
			assert_false(px_busy(e));
			assert_true(a->count > 0);
			assert_true(px_slots(e) + a->count <= m->capacity);
			if (a->prefixes) {
				assert_true(e->nprefixes + a->count <=
				    POOL_MAX_PREFIXES);
				assert_true(e->naddrs + a->count *
				    POOL_PREFIX_ADDRS <= POOL_MAX_ENI_ADDRS);
			} else
				assert_true(e->naddrs + a->count <=
				    POOL_MAX_ENI_ADDRS);
			e->assigning = a->count;
			e->assigning_prefixes = a->prefixes;
			break;
		case ACT_CREATE_ENI:
			assert_true(m->nenis < m->p.max_enis);
			assert_true(a->count > 0 && a->count <= m->capacity);
			e = &m->enis[m->nenis++];
			memset(e, 0, sizeof(*e));
			e->id = ++m->next_id;
			e->state = ENI_CREATING;
			e->subnet = a->subnet;
			assert_true(cloud_singles(m, a->subnet, e->id, 1,
			    &e->ip));
			e->assigning = a->count;
			e->assigning_prefixes = a->prefixes;
			break;
		case ACT_UNASSIGN:
			assert_false(px_busy(e));
			/* no more than its free single addresses */
			n = a->count;
			for (j = 0; j < e->naddrs && n > 0; j++)
				if (e->addrs[j].st == ADDR_FREE &&
				    e->addrs[j].block == 0) {
					e->addrs[j].st = ADDR_REMOVING;
					n--;
				}
			assert_int_equal(n, 0);
			e->unassigning = true;
			m->seen.unassigned++;
			break;
		case ACT_UNASSIGN_PREFIX:
			/* never joined to an assign or singles' unassign */
			assert_true(e->assigning == 0);
			for (j = 0; j < e->naddrs; j++)
				assert_false(e->addrs[j].block == 0 &&
				    e->addrs[j].st == ADDR_REMOVING);
			assert_true(a->prefix < e->nprefixes);
			px = &e->prefixes[a->prefix];
			assert_false(px->removing);
			/* none of its addresses a pod's, cooling, going */
			for (j = 0; j < e->naddrs; j++)
				if (e->addrs[j].block == px->base) {
					assert_int_equal(e->addrs[j].st,
					    ADDR_FREE);
					e->addrs[j].st = ADDR_REMOVING;
				}
			px->removing = true;
			e->unassigning = true;
			m->seen.prefix_back++;
			break;
		case ACT_FREEZE_PREFIX:
			/* a prefix's worth too many, in a prefix in use */
			assert_true(pl->have >= pl->need + POOL_PREFIX_ADDRS);
			assert_true(a->prefix < e->nprefixes);
			for (j = 0, n = 0; j < e->naddrs; j++)
				n += e->addrs[j].block ==
				    e->prefixes[a->prefix].base &&
				    e->addrs[j].st != ADDR_FREE;
			assert_true(n > 0);
			frozen = 0;
			for (j = 0; j < m->nenis; j++) {
				uint32_t q;

				for (q = 0; q < m->enis[j].nprefixes; q++)
					frozen += m->enis[j].prefixes[q].
					    frozen_until > m->now;
			}
			assert_int_equal(frozen, 0);
			e->prefixes[a->prefix].frozen_until = m->now +
			    m->p.freeze_ms;
			m->seen.frozen++;
			break;
		case ACT_RELEASE_ENI:
			assert_false(e->primary);
			assert_false(px_busy(e));
			for (j = 0; j < e->naddrs; j++)
				assert_int_equal(e->addrs[j].st, ADDR_FREE);
			e->state = ENI_DRAINING;
			m->seen.released++;
			break;
		}
	}
}

/* Blocks e asked for arrive, all or none (an assign, or the ENI's own
 * creation): a fragmented subnet refuses prefixes, and is asked for none
 * until the backoff is over; one out of addresses is full for as long. */
static bool
px_assign_answer(struct px_sim *m, struct px_eni *e)
{
	uint32_t n = e->assigning, s = e->subnet, k, j;
	uint32_t ips[POOL_MAX_ADDRS], bases[POOL_MAX_PREFIXES];

	e->assigning = 0;
	if (!e->assigning_prefixes) {
		if (!cloud_singles(m, s, e->id, n, ips)) {
			m->inhibited_until[s] = m->now + PX_BACKOFF_MS;
			m->seen.full++;
			return false;
		}
		for (k = 0; k < n; k++)
			px_put_addr(e, ips[k], 0);
		return true;
	}
	e->assigning_prefixes = false;
	for (k = 0; k < n; k++)
		if ((bases[k] = cloud_prefix(m, s, e->id)) == 0)
			break;
	if (k < n) {
		while (k-- > 0)
			for (j = 0; j < POOL_PREFIX_ADDRS; j++)
				cloud_give_back(m, bases[k] + j, e->id);
		m->prefix_inhibited_until[s] = m->now + PX_BACKOFF_MS;
		m->seen.refused++;
		return false;
	}
	for (k = 0; k < n; k++) {
		e->prefixes[e->nprefixes++] = (struct px_prefix){
		    .base = bases[k] };
		for (j = 0; j < POOL_PREFIX_ADDRS; j++)
			px_put_addr(e, bases[k] + j, bases[k]);
	}
	return true;
}

static void
px_drop_eni(struct px_sim *m, uint32_t i)
{
	struct px_eni *e = &m->enis[i];
	uint32_t j;

	for (j = 0; j < e->naddrs; j++)
		cloud_give_back(m, e->addrs[j].ip, e->id);
	cloud_give_back(m, e->ip, e->id);
	m->enis[i] = m->enis[--m->nenis];
}

/* The cloud's answers to what was started: assigns and creations in (or
 * refused), unassigns done, released ENIs gone. */
static void
px_finish(struct px_sim *m)
{
	uint32_t i, j, k;

	for (i = m->nenis; i-- > 0;) {
		struct px_eni *e = &m->enis[i];

		if (e->assigning > 0 && !px_assign_answer(m, e) &&
		    e->state == ENI_CREATING) {
			px_drop_eni(m, i);
			continue;
		}
		if (e->state == ENI_CREATING)
			e->state = ENI_READY;
		if (e->unassigning) {
			for (k = e->nprefixes; k-- > 0;)
				if (e->prefixes[k].removing)
					e->prefixes[k] =
					    e->prefixes[--e->nprefixes];
			for (j = e->naddrs; j-- > 0;)
				if (e->addrs[j].st == ADDR_REMOVING) {
					cloud_give_back(m, e->addrs[j].ip,
					    e->id);
					e->addrs[j] = e->addrs[--e->naddrs];
				}
			e->unassigning = false;
		}
		if (e->state == ENI_DRAINING)
			px_drop_eni(m, i);
	}
}

/*
 * The model's own invariants: no address held twice (the cloud's owner
 * of each is the one ENI listing it, and it owns no other), no ENI past
 * its slots or its table, each prefix whole, one prefix frozen at most.
 */
static void
px_check_model(struct px_sim *m)
{
	uint32_t i, j, k, s, listed = 0, owned = 0, pods = 0, frozen = 0, n;

	for (i = 0; i < m->nenis; i++) {
		struct px_eni *e = &m->enis[i];

		assert_int_equal(*px_owner(m, e->ip), e->id);
		assert_true(px_slots(e) <= m->capacity);
		assert_true(e->naddrs <= POOL_MAX_ENI_ADDRS);
		for (j = 0; j < e->naddrs; j++) {
			assert_int_equal(*px_owner(m, e->addrs[j].ip), e->id);
			assert_true(e->addrs[j].block == 0 ||
			    px_prefix_of(e, e->addrs[j].block) >= 0);
			pods += e->addrs[j].st == ADDR_ASSIGNED;
		}
		for (k = 0; k < e->nprefixes; k++) {
			for (j = 0, n = 0; j < e->naddrs; j++)
				n += e->addrs[j].block == e->prefixes[k].base;
			assert_int_equal(n, POOL_PREFIX_ADDRS);
			frozen += e->prefixes[k].frozen_until > m->now;
		}
		listed += e->naddrs + 1;
	}
	for (s = 0; s < PX_SUBNETS; s++)
		for (j = 0; j < PX_SUBNET_ADDRS; j++)
			owned += m->owner[s][j] != 0 &&
			    m->owner[s][j] != PX_FOREIGN &&
			    m->owner[s][j] != PX_OTHER;
	assert_int_equal(listed, owned);
	assert_int_equal(pods, m->pods);
	assert_true(frozen <= 1);
}

/* Is a cloud call of the model's on its way? */
static bool
px_in_flight(const struct px_sim *m)
{
	uint32_t i;

	for (i = 0; i < m->nenis; i++)
		if (m->enis[i].state == ENI_CREATING || px_busy(&m->enis[i]))
			return true;
	return false;
}

static bool
px_growth(const struct pool_plan *pl)
{
	return pl->nactions > 0 && (pl->actions[0].type == ACT_ASSIGN ||
	    pl->actions[0].type == ACT_CREATE_ENI);
}

/*
 * The plan right after one was carried out (and nothing refused): after
 * growth, none more, and no shrink (with a shrink delay, nothing at all),
 * the pool holding less than a prefix past the need; after a shrink, no
 * growth, the pool not below the need.  Growth planned while blocks were
 * on their way left to them what their room holds: once they are in,
 * the rest may go there.
 */
static void
px_check_again(struct px_sim *m, bool grew, bool waited)
{
	static struct pool_facts f;
	static struct pool_plan pl;
	/* ENI mode (no prefixes, no address target) fills ENIs whole */
	bool eni_mode = !m->p.prefixes && m->p.warm_ip_target == 0 &&
	    m->p.minimum_ip_target == 0;
	size_t i;

	px_view(m, &f);
	pool_plan(&m->p, &f, m->now, &pl);
	if (px_growth(&pl)) {
		if (grew && waited)
			return;
		/* only single addresses the subnet is not known to have
		 * (the last growth took what it was known to have): the
		 * cloud is asked, and refuses */
		for (i = 0; i < pl.nactions; i++) {
			const struct pool_action *a = &pl.actions[i];

			assert_int_equal(a->type, ACT_ASSIGN);
			assert_false(a->prefixes);
			assert_true(a->count >
			    f.subnets[m->enis[a->eni].subnet].available);
		}
		return;
	}
	/* still short, at the slot limit: free singles traded for
	 * prefixes (plan_grow), the only action a shortfall may bring */
	if (pl.nactions > 0 && pl.need > pl.have) {
		assert_true(m->p.prefixes);
		assert_int_equal(pl.nactions, 1);
		assert_int_equal(pl.actions[0].type, ACT_UNASSIGN);
		return;
	}
	if (grew) {
		assert_true(m->p.shrink_delay_ms == 0 || pl.nactions == 0);
		if (eni_mode)
			return;
		assert_true(pl.have < pl.need + POOL_PREFIX_ADDRS);
		assert_true(pl.need <= pl.have || pl.blocked != BLOCK_NONE);
	} else
		assert_true(pl.need <= pl.have);
}

/* Waiters nothing is on its way for: only if the plan says why, and
 * truly (with slots left, single addresses serve them). */
static void
px_check_waiters(struct px_sim *m, const struct pool_plan *pl)
{
	uint32_t i, room;

	if (m->waiters == 0 || px_in_flight(m))
		return;		/* blocks on their way: the waiters wait */
	assert_int_not_equal(pl->blocked, BLOCK_NONE);
	assert_int_not_equal(pl->blocked, BLOCK_BACKOFF);
	if (pl->blocked == BLOCK_MAX_PODS)
		assert_true(m->pods >= m->p.max_pods);
	if (pl->blocked == BLOCK_SUBNET_FULL)
		m->seen.subnet_full++;
	if (pl->blocked == BLOCK_ENI_LIMIT) {
		assert_true(m->nenis >= m->p.max_enis);
		for (i = 0; i < m->nenis; i++) {
			const struct px_eni *e = &m->enis[i];

			if (m->inhibited_until[e->subnet] > m->now)
				continue;
			room = px_slots(e) < m->capacity ?
			    m->capacity - px_slots(e) : 0;
			room = px_min(room, POOL_MAX_ADDRS - px_singles(e));
			room = px_min(room, POOL_MAX_ENI_ADDRS - e->naddrs);
			assert_int_equal(room, 0);
		}
	}
	/* the engine fails them, telling why */
	m->seen.blocked_waiters += m->waiters;
	m->waiters = 0;
}

/* A quiet plan stays so, nothing changing, until its wake (or ever, with
 * none): whatever time alone changes (an inhibit or a freeze ending, a
 * surplus's delay) wakes it. */
static void
px_check_wake(struct px_sim *m, const struct pool_facts *f,
    const struct pool_plan *pl)
{
	static struct pool_plan later;
	uint64_t t = pl->wake ? pl->wake - 1 : m->now + 100 * PX_BACKOFF_MS;

	assert_true(pl->wake == 0 || pl->wake > m->now);
	pool_plan(&m->p, f, t, &later);
	assert_int_equal(later.nactions, 0);
	assert_int_equal(later.blocked, pl->blocked);
}

static void
px_step(struct px_sim *m, bool rising)
{
	static struct pool_facts f;
	static struct pool_plan pl;
	uint32_t ev = (uint32_t)rnd(100), round, before;
	bool deferred = rnd(4) == 0, grew, waited, traded;

	/* the cloud answers what was asked, or not yet: the plans see
	 * ENIs on their way and busy ones */
	if (rnd(3) != 0)
		px_finish(m);
	if (ev < (rising ? 50u : 15u)) {
		/* it waits behind others, or for an address */
		if (m->pods + m->waiters < m->pod_cap &&
		    (m->waiters > 0 || !px_pod_add(m)))
			m->waiters++;
	} else if (ev < 70) {
		if (m->pods > 0)
			px_pod_del(m);
	} else if (ev < 85)
		m->now += rnd(2 * PX_BACKOFF_MS);
	else if (ev < 90)
		px_fragment(m, (uint32_t)rnd(PX_SUBNETS));
	else if (ev < 97)
		px_restore(m, (uint32_t)rnd(PX_SUBNETS));
	else if (m->toggle)
		m->p.prefixes = !m->p.prefixes;
	m->now += rnd(5000);
	px_cool(m);
	px_serve_waiters(m);
	for (round = 0;; round++) {
		/* plans come to rest: each acts on what the last left */
		assert_true(round < PX_ROUNDS);
		px_view(m, &f);
		pool_plan(&m->p, &f, m->now, &pl);
		m->seen.in_flight += px_in_flight(m);
		if (!pl.surplus)
			m->surplus_since = 0;
		else if (m->surplus_since == 0)
			m->surplus_since = m->now;
		px_check_growth(m, &f, &pl);
		if (pl.nactions == 0)
			break;
		grew = px_growth(&pl);
		waited = px_in_flight(m);
		/* free singles given back while short of addresses: a trade,
		 * their slots for prefixes, which the next plan takes */
		traded = pl.need > pl.have && pl.actions[0].type == ACT_UNASSIGN;
		if (traded) {
			assert_true(m->p.prefixes);
			m->seen.traded++;
		}
		px_start(m, &pl);
		px_check_model(m);
		if (deferred)
			return;
		before = m->seen.refused + m->seen.full;
		px_finish(m);
		px_check_model(m);
		if (m->seen.refused + m->seen.full == before && !traded)
			px_check_again(m, grew, waited);
		px_serve_waiters(m);
	}
	px_check_waiters(m, &pl);
	px_check_wake(m, &f, &pl);
}

static void
px_run(struct pool_params p, uint32_t capacity, uint32_t pod_cap,
    unsigned tide, bool toggle, uint32_t crowd, uint64_t seed,
    struct px_seen *seen)
{
	static struct px_sim m;
	struct px_eni *e;
	unsigned s;
	uint32_t off;

	memset(&m, 0, sizeof(m));
	rng_state = seed;
	m.p = p;
	m.capacity = capacity;
	m.pod_cap = pod_cap;
	m.toggle = toggle;
	m.now = 1000;
	/* crowded subnets: only so many addresses left free, twice as
	 * many in the first */
	for (off = crowd; crowd > 0 && off < PX_SUBNET_ADDRS; off++) {
		m.owner[1][off] = PX_OTHER;
		if (off >= 2 * crowd)
			m.owner[0][off] = PX_OTHER;
	}
	e = &m.enis[m.nenis++];
	e->id = ++m.next_id;
	e->state = ENI_READY;
	e->primary = true;
	assert_true(cloud_singles(&m, 0, e->id, 1, &e->ip));
	for (s = 0; s < PX_STEPS; s++) {
		/* pods come in a tide, so that the pool grows and shrinks */
		px_step(&m, s / tide % 2 == 0);
		px_check_model(&m);
	}
	seen->prefix_growth += m.seen.prefix_growth;
	seen->fallback += m.seen.fallback;
	seen->refused += m.seen.refused;
	seen->prefix_back += m.seen.prefix_back;
	seen->unassigned += m.seen.unassigned;
	seen->frozen += m.seen.frozen;
	seen->released += m.seen.released;
	seen->single_fragmented += m.seen.single_fragmented;
	seen->prefixes_again += m.seen.prefixes_again;
	seen->blocked_waiters += m.seen.blocked_waiters;
	seen->subnet_full += m.seen.subnet_full;
	seen->in_flight += m.seen.in_flight;
	seen->traded += m.seen.traded;
}

static void
test_prefix_property(void **state)
{
	struct px_seen seen;
	struct pool_params p;

	(void)state;
	memset(&seen, 0, sizeof(seen));
	/* 10 addresses an ENI, 4 ENIs, a prefix's worth warm */
	p = pparams(0, 1);
	px_run(p, CAP, 200, 400, false, 0, 0x5eed0001, &seen);
	px_run(p, CAP, 200, 400, false, 0, 0x5eed0002, &seen);
	/* warm_ip_target, no shrink delay, max_pods below the pods */
	p = pparams(5, 0);
	p.max_enis = 3;
	p.shrink_delay_ms = 0;
	p.max_pods = 100;
	p.freeze_ms = 60000;
	px_run(p, CAP, 120, 400, false, 0, 0x5eed0003, &seen);
	/* 30 addresses an ENI: prefixes and singles past the table */
	p = pparams(0, 6);
	p.max_enis = 2;
	px_run(p, 29, 600, 1500, false, 0, 0x5eed0004, &seen);
	px_run(p, 29, 600, 1500, false, 0, 0x5eed0024, &seen);
	/* prefix delegation switched off and on again */
	p = pparams(3, 1);
	px_run(p, CAP, 150, 400, true, 0, 0x5eed0005, &seen);
	px_run(p, CAP, 150, 400, true, 0, 0x5eed0006, &seen);
	/* crowded subnets: prefixes refused for want of a whole /28,
	 * single addresses running out */
	p = pparams(2, 1);
	p.max_enis = 8;
	px_run(p, CAP, 200, 400, false, 24, 0x5eed0007, &seen);
	print_message("prefix growth %u, fallback %u, refused %u, prefixes "
	    "back %u, unassigns %u, frozen %u, released %u, singles while "
	    "fragmented %u, prefixes again %u, waiters failed %u (subnets "
	    "full %u), plans with calls on their way %u, singles traded for "
	    "prefixes %u\n",
	    seen.prefix_growth, seen.fallback, seen.refused,
	    seen.prefix_back, seen.unassigned, seen.frozen, seen.released,
	    seen.single_fragmented, seen.prefixes_again,
	    seen.blocked_waiters, seen.subnet_full, seen.in_flight,
	    seen.traded);
	/* every path was taken */
	assert_true(seen.prefix_growth > 0 && seen.fallback > 0 &&
	    seen.refused > 0 && seen.prefix_back > 0 && seen.unassigned > 0 &&
	    seen.frozen > 0 && seen.released > 0 &&
	    seen.single_fragmented > 0 && seen.prefixes_again > 0 &&
	    seen.blocked_waiters > 0 && seen.subnet_full > 0 &&
	    seen.in_flight > 0);
}

/* ---- ip_family ipv6: the pool in ENIs (plan6) ---- */

static struct pool_params
params6(void)
{
	struct pool_params p = params(5, 3, 1, 0);

	p.ipv6_only = true;
	return p;
}

static void
test_ipv6_only_no_ipv4_growth(void **state)
{
	struct pool_params p = params6();
	struct pool_facts f = facts(0, 0, 0);
	struct pool_plan pl;

	(void)state;
	/* The primary serves with its /80: no address is asked for,
	 * however the IPv4 targets stand, nor an ENI. */
	f.enis[0].has6 = true;
	f.enis[0].assigned = 7;
	f.waiters = 3;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 0);
	assert_int_equal(pl.blocked, BLOCK_NONE);
	assert_int_equal(pl.need, 1);
	assert_int_equal(pl.have, 1);
	/* Its /80 on its way: wait for it, grow nothing. */
	f.enis[0].has6 = false;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 0);
	assert_int_equal(pl.blocked, BLOCK_NONE);
}

static void
test_ipv6_only_creates_one_eni(void **state)
{
	struct pool_params p = params6();
	struct pool_facts f = facts(0, 0, 0);
	struct pool_plan pl;

	(void)state;
	/* The primary's subnet is not one pods use: one ENI, even with no
	 * ADD waiting, in the open subnet with the most (IPv4) room. */
	f.enis[0].usable = false;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 1);
	expect_action(&pl, 0, ACT_CREATE_ENI, 0, 0);
	assert_int_equal(pl.actions[0].subnet, 0);
	f.subnets[0].inhibited_until = 5000;
	pool_plan(&p, &f, 1000, &pl);
	expect_action(&pl, 0, ACT_CREATE_ENI, 0, 0);
	assert_int_equal(pl.actions[0].subnet, 1);
	/* An ipv6Native subnet counts no IPv4 address: still open. */
	f.subnets[1].available = 0;
	pool_plan(&p, &f, 1000, &pl);
	expect_action(&pl, 0, ACT_CREATE_ENI, 0, 0);
	assert_int_equal(pl.actions[0].subnet, 1);
	/* On its way: nothing more. */
	add_eni(&f, ENI_CREATING, 0, 0, 0);
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 0);
	/* No subnet open: blocked, woken when one opens. */
	f.nenis = 1;
	f.subnets[1].configured = false;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 0);
	assert_int_equal(pl.blocked, BLOCK_SUBNET_FULL);
	assert_int_equal(pl.wake, 5000);
	/* No ENI slot left. */
	f.subnets[1].configured = true;
	f.attached_enis = 4;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.blocked, BLOCK_ENI_LIMIT);
	/* Backing off after a failure. */
	f.attached_enis = 1;
	f.growth_backoff_until = 3000;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.blocked, BLOCK_BACKOFF);
	assert_int_equal(pl.wake, 3000);
}

/* A surplus seen at 1000 ms: nothing yet, a wake when shrink_delay (60 s)
 * has passed; then planned again at that time, held since 1000. */
static void
plan_surplus_lasted(const struct pool_params *p, struct pool_facts *f,
    struct pool_plan *pl)
{
	pool_plan(p, f, 1000, pl);
	assert_true(pl->surplus);
	assert_int_equal(pl->nactions, 0);
	assert_int_equal(pl->wake, 61000);
	f->surplus_since = 1000;
	pool_plan(p, f, 61000, pl);
}

static void
test_ipv6_only_max_pods_and_release(void **state)
{
	struct pool_params p = params6();
	struct pool_facts f = facts(0, 0, 0);
	struct pool_plan pl;
	uint32_t i;

	(void)state;
	p.max_pods = 4;
	f.enis[0].has6 = true;
	f.enis[0].assigned = 4;
	f.waiters = 1;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.blocked, BLOCK_MAX_PODS);
	/* Two serve, one of them without pods: surplus, released once it
	 * lasted shrink_delay; never the primary, never one with pods. */
	f.waiters = 0;
	i = add_eni(&f, ENI_READY, 0, 0, 0);
	f.enis[i].has6 = true;
	plan_surplus_lasted(&p, &f, &pl);
	assert_int_equal(pl.nactions, 1);
	expect_action(&pl, 0, ACT_RELEASE_ENI, i, 0);
	f.enis[i].assigned = 1;
	pool_plan(&p, &f, 61000, &pl);
	assert_false(pl.surplus);
	assert_int_equal(pl.nactions, 0);
	/* The primary without pods, the other with: nothing goes. */
	f.enis[0].assigned = 0;
	pool_plan(&p, &f, 61000, &pl);
	assert_int_equal(pl.nactions, 0);
}

static void
test_ipv6_only_gives_back_ipv4(void **state)
{
	struct pool_params p = params6();
	struct pool_facts f = facts(0, 0, 5);
	struct pool_plan pl;
	uint32_t i;

	(void)state;
	/* A node switched to ipv6 with its ENIs: the primary keeps 5 free
	 * IPv4 addresses, a secondary a wholly free /28 and one cooling.
	 * Given back once the surplus lasted, one change an ENI. */
	f.enis[0].has6 = true;
	f.enis[0].assigned = 2;		/* pods, of either family */
	i = add_eni(&f, ENI_READY, 1, 1, 16);
	f.enis[i].has6 = true;
	f.enis[i].nprefixes = 1;
	f.enis[i].prefix_addrs = 16;
	f.enis[i].prefix[0].free = 16;
	plan_surplus_lasted(&p, &f, &pl);
	assert_int_equal(pl.nactions, 2);
	expect_action(&pl, 0, ACT_UNASSIGN, 0, 5);
	expect_action(&pl, 1, ACT_UNASSIGN_PREFIX, i, 16);
	assert_int_equal(pl.actions[1].prefix, 0);
	/* A prefix with an address cooling is not wholly free; an ENI in
	 * an operation, or one refused lately, waits. */
	f.enis[i].prefix[0].free = 15;
	f.enis[i].prefix[0].used = 1;
	f.enis[i].free = 15;
	f.enis[0].busy = true;
	pool_plan(&p, &f, 61000, &pl);
	assert_int_equal(pl.nactions, 0);
	f.enis[0].busy = false;
	f.enis[0].keep_until = 70000;
	pool_plan(&p, &f, 61000, &pl);
	assert_int_equal(pl.nactions, 0);
	/* Nothing given back while an ADD waits. */
	f.enis[0].keep_until = 0;
	f.waiters = 1;
	pool_plan(&p, &f, 61000, &pl);
	assert_int_equal(pl.nactions, 0);
	/* None left: no surplus. */
	f.waiters = 0;
	f.enis[0].free = 0;
	pool_plan(&p, &f, 61000, &pl);
	assert_false(pl.surplus);
	assert_int_equal(pl.nactions, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_warm_ip_target),
		cmocka_unit_test(test_cooling_never_free),
		cmocka_unit_test(test_minimum_ip_target),
		cmocka_unit_test(test_warm_eni_target),
		cmocka_unit_test(test_max_pods),
		cmocka_unit_test(test_instance_limits_cloud_count),
		cmocka_unit_test(test_packing),
		cmocka_unit_test(test_subnets),
		cmocka_unit_test(test_backoff_and_waiters),
		cmocka_unit_test(test_shrink_hysteresis),
		cmocka_unit_test(test_shrink_never_releases_pods),
		cmocka_unit_test(test_refused_eni_keeps_its_addresses),
		cmocka_unit_test(test_no_shrink_while_growing_or_waiting),
		cmocka_unit_test(test_wake),
		cmocka_unit_test(test_cooling_free_at),
		cmocka_unit_test(test_no_overgrowth_while_slow),
		cmocka_unit_test(test_busy_eni_room_is_coming),
		cmocka_unit_test(test_prefix_growth),
		cmocka_unit_test(test_prefix_new_eni),
		cmocka_unit_test(test_enid_caps),
		cmocka_unit_test(test_prefix_fallback_order),
		cmocka_unit_test(test_prefix_mixed_slots),
		cmocka_unit_test(test_prefix_shrink_order),
		cmocka_unit_test(test_prefix_in_use_kept),
		cmocka_unit_test(test_prefix_freeze),
		cmocka_unit_test(test_prefix_freeze_fewest_pods),
		cmocka_unit_test(test_prefix_trade_singles),
		cmocka_unit_test(test_prefix_pick_avoids_frozen),
		cmocka_unit_test(test_prefix_mode_off),
		cmocka_unit_test(test_prefix_no_flapping),
		cmocka_unit_test(test_prefix_eni_table),
		cmocka_unit_test(test_prefix_subnet_room),
		cmocka_unit_test(test_randomized),
		cmocka_unit_test(test_prefix_property),
		cmocka_unit_test(test_ipv6_only_no_ipv4_growth),
		cmocka_unit_test(test_ipv6_only_creates_one_eni),
		cmocka_unit_test(test_ipv6_only_max_pods_and_release),
		cmocka_unit_test(test_ipv6_only_gives_back_ipv4),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
