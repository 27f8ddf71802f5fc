/*
 * The pool policy (broker/pool.c), without I/O: warm targets singly and
 * combined, max_pods, the instance's limits as the cloud counts them,
 * packing, subnets, blocking reasons, and shrinking with hysteresis; then
 * a randomized simulation (fixed seed) that applies every plan and checks
 * the invariants after each step: no ENI holding or cooling a pod's
 * address is released, the ENI limit is never passed, a shrink is never
 * undone by the next plan, and a plan that is not blocked covers the need.
 * With prefix delegation: growth in /28s and its fallback to single
 * addresses, slots shared by both, what is given back and what frozen.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pool.h"

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
	/* a table full of prefixes, 13 slots left: no single address */
	f = facts(0, 0, 0);
	f.enis[0].capacity = 29;
	for (k = 0; k < POOL_MAX_PREFIXES; k++)
		give_prefix(&f.enis[0], 16, 0);
	f.waiters = 5;
	p.max_enis = 1;
	pool_plan(&p, &f, 1000, &pl);
	assert_int_equal(pl.nactions, 0);
	assert_int_equal(pl.blocked, BLOCK_ENI_LIMIT);
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

static uint64_t rng_state = 0x2545f4914f6cdd1dULL;

static uint32_t
rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return n ? (uint32_t)(rng_state >> 11) % n : 0;
}

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
	sim_run(params(3, 0, 0, 0), 20000);
	sim_run(params(0, 0, 1, 0), 20000);
	sim_run(params(2, 15, 0, 0), 20000);
	sim_run(params(5, 0, 0, 25), 20000);
	sim_run(params(0, 0, 2, 30), 20000);
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
		cmocka_unit_test(test_no_overgrowth_while_slow),
		cmocka_unit_test(test_busy_eni_room_is_coming),
		cmocka_unit_test(test_prefix_growth),
		cmocka_unit_test(test_prefix_new_eni),
		cmocka_unit_test(test_prefix_fallback_order),
		cmocka_unit_test(test_prefix_mixed_slots),
		cmocka_unit_test(test_prefix_shrink_order),
		cmocka_unit_test(test_prefix_in_use_kept),
		cmocka_unit_test(test_prefix_freeze),
		cmocka_unit_test(test_prefix_pick_avoids_frozen),
		cmocka_unit_test(test_prefix_mode_off),
		cmocka_unit_test(test_prefix_no_flapping),
		cmocka_unit_test(test_prefix_eni_table),
		cmocka_unit_test(test_prefix_subnet_room),
		cmocka_unit_test(test_randomized),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
