/*
 * Rate-limit arithmetic of enid-cloudd (cloudd/ratelimit.c) with an
 * injected clock: bucket burst and refill, AIMD, full-jitter backoff.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ratelimit.h"

static void
test_bucket_burst_then_refill(void **state)
{
	struct rl_bucket b;
	uint64_t t = 1000;
	int i, taken;

	(void)state;
	rl_init(&b, 10, 5, t);
	for (i = 0; i < 10; i++)
		assert_true(rl_take(&b, t));
	assert_false(rl_take(&b, t));
	/* 5 per second: one token every 200 ms */
	assert_int_equal(rl_wait_ms(&b, t), 201);
	assert_false(rl_take(&b, t + 199));
	assert_true(rl_take(&b, t + 200));
	assert_false(rl_take(&b, t + 200));
	/* over 10 s at most capacity + 10 * rate can be taken */
	rl_init(&b, 10, 5, 0);
	for (taken = 0, t = 0; t <= 10000; t += 10)
		while (rl_take(&b, t))
			taken++;
	assert_int_equal(taken, 10 + 50);
}

static void
test_bucket_never_over_capacity(void **state)
{
	struct rl_bucket b;
	int i;

	(void)state;
	rl_init(&b, 3, 100, 0);
	/* an hour idle refills to capacity, not beyond */
	for (i = 0; i < 3; i++)
		assert_true(rl_take(&b, 3600000));
	assert_false(rl_take(&b, 3600000));
}

static void
test_aimd(void **state)
{
	struct rl_bucket b;
	uint64_t t = 0;

	(void)state;
	rl_init(&b, 10, 8, t);
	rl_throttled(&b, t);
	assert_true(b.rate == 4.0);		/* halved */
	rl_throttled(&b, t);
	assert_true(b.rate == 2.0);
	rl_throttled(&b, t);
	assert_true(b.rate == 2.0);		/* floor: base / 4 */
	/* additive recovery: base / 10 per second */
	(void)rl_take(&b, 1000);
	assert_true(b.rate > 2.79 && b.rate < 2.81);
	(void)rl_take(&b, 100000);
	assert_true(b.rate == 8.0);		/* capped at the base */
	/* a throttled bucket refills more slowly */
	rl_init(&b, 1, 10, 0);
	assert_true(rl_take(&b, 0));
	rl_throttled(&b, 0);
	assert_int_equal(rl_wait_ms(&b, 0), 201);
}

static void
test_backoff(void **state)
{
	unsigned a;

	(void)state;
	/* without jitter: the ceiling itself; base == cap is fixed */
	assert_int_equal(backoff_ceiling_ms(0, 100, 5000), 100);
	assert_int_equal(backoff_ceiling_ms(3, 100, 5000), 800);
	assert_int_equal(backoff_ceiling_ms(9, 100, 5000), 5000);
	assert_int_equal(backoff_ceiling_ms(0, 1000, 1000), 1000);
	assert_int_equal(backoff_ceiling_ms(7, 1000, 1000), 1000);
	assert_int_equal(backoff_ceiling_ms(200, 100, 5000), 5000);
	assert_int_equal(backoff_ms(0, 100, 5000, 0), 0);
	assert_int_equal(backoff_ms(0, 100, 5000, 100), 100);
	assert_int_equal(backoff_ms(0, 100, 5000, 101), 0);
	assert_int_equal(backoff_ms(3, 100, 5000, 800), 800);
	assert_int_equal(backoff_ms(3, 100, 5000, 801), 0);
	/* capped, whatever the attempt */
	for (a = 0; a < 100; a++) {
		assert_true(backoff_ms(a, 100, 5000, 0xffffffffu) <= 5000);
		assert_true(backoff_ms(a, 100, 5000, 4999) <= 5000);
	}
	assert_int_equal(backoff_ms(60, 100, 5000, 5000), 5000);
	/* full jitter: uniform, so a spread of draws covers the range */
	assert_int_equal(backoff_ms(2, 100, 5000, 399), 399);
	assert_int_equal(backoff_ms(2, 100, 5000, 400), 400);
}

/* After a throttle, tokens accrue at the cut rate, not the base rate. */
static void
test_refill_at_cut_rate(void **state)
{
	struct rl_bucket b;
	int i;

	(void)state;
	rl_init(&b, 1, 10, 0);
	assert_true(rl_take(&b, 0));
	rl_throttled(&b, 0);			/* 10/s -> 5/s */
	/* 199 ms at 5/s is 0.995 of a token; at 10/s it would be 1.99 */
	assert_false(rl_take(&b, 199));
	assert_true(b.tokens > 0.994 && b.tokens < 0.996);
	assert_true(rl_take(&b, 200));

	/* over a second right after a throttle: 5 tokens, plus what the
	 * additive recovery (1/s per second here) adds, well under 10 */
	rl_init(&b, 20, 10, 0);
	for (i = 0; i < 20; i++)
		assert_true(rl_take(&b, 0));
	rl_throttled(&b, 0);
	for (i = 0; rl_take(&b, 1000); i++)
		;
	assert_int_equal(i, 5);
}

/* Refill edges: a clock that goes back adds nothing, and idle time is
 * counted from the last refill, not from the last take. */
static void
test_refill_edges(void **state)
{
	struct rl_bucket b;
	int i;

	(void)state;
	rl_init(&b, 2, 10, 1000);
	assert_true(rl_take(&b, 1000));
	assert_true(rl_take(&b, 1000));
	assert_false(rl_take(&b, 500));		/* the past refills nothing */
	assert_int_equal(b.last_ms, 1000);
	assert_false(rl_take(&b, 1099));
	assert_true(rl_take(&b, 1100));
	assert_false(rl_take(&b, 1100));
	/* exactly to capacity, then no further */
	rl_init(&b, 3, 10, 0);
	for (i = 0; i < 3; i++)
		assert_true(rl_take(&b, 0));
	assert_int_equal(rl_wait_ms(&b, 0), 101);
	assert_int_equal(rl_wait_ms(&b, 300), 0);
	assert_true(b.tokens == 3.0);
	assert_int_equal(rl_wait_ms(&b, 10000), 0);
	assert_true(b.tokens == 3.0);
	/* zero sizes are taken as one */
	rl_init(&b, 0, 0, 0);
	assert_true(b.capacity == 1.0 && b.base_rate == 1.0);
	assert_true(rl_take(&b, 0));
	assert_false(rl_take(&b, 999));
	assert_true(rl_take(&b, 1000));
	/* the largest configured sizes */
	rl_init(&b, 10000, 10000, 0);
	for (i = 0; i < 10000; i++)
		assert_true(rl_take(&b, 0));
	assert_false(rl_take(&b, 0));
	assert_int_equal(rl_wait_ms(&b, 0), 1);
	assert_true(rl_take(&b, 1));
}

/* The rate between the floor and the base, at both edges. */
static void
test_rate_edges(void **state)
{
	struct rl_bucket b;
	int i;

	(void)state;
	rl_init(&b, 10, 4, 0);
	for (i = 0; i < 10; i++)
		rl_throttled(&b, 0);
	assert_true(b.rate == 1.0);		/* 4 * 0.25 */
	rl_throttled(&b, 0);
	assert_true(b.rate == 1.0);
	/* recovery: base * 0.1 per second, so 3/0.4 = 7.5 s back to 4 */
	(void)rl_take(&b, 7000);
	assert_true(b.rate > 3.79 && b.rate < 3.81);
	(void)rl_take(&b, 7500);
	assert_true(b.rate == 4.0);
	(void)rl_take(&b, 9000);
	assert_true(b.rate == 4.0);
}

/* A fixed-seed walk: whatever the sequence, the bucket stays within its
 * bounds, rl_wait_ms() is exact to the millisecond, and no interval gives
 * more than the burst plus the base rate. */
static void
test_random_walk(void **state)
{
	struct rl_bucket b, probe;
	uint64_t t, w, start;
	unsigned seed = 13;
	int run, step, taken;

	(void)state;
	for (run = 0; run < 200; run++) {
		uint32_t cap = 1 + rand_r(&seed) % 50;
		uint32_t rate = 1 + rand_r(&seed) % 50;

		t = start = (uint64_t)(rand_r(&seed) % 100000);
		rl_init(&b, cap, rate, t);
		taken = 0;
		for (step = 0; step < 500; step++) {
			switch (rand_r(&seed) % 4) {
			case 0:
				t += rand_r(&seed) % 300;
				break;
			case 1:
				if (rand_r(&seed) % 10 == 0)
					rl_throttled(&b, t);
				break;
			default:
				w = rl_wait_ms(&b, t);
				probe = b;
				if (w == 0) {
					assert_true(rl_take(&b, t));
					taken++;
					break;
				}
				assert_false(rl_take(&probe, t));
				probe = b;
				assert_true(rl_take(&probe, t + w));
				if (w >= 3) {
					probe = b;
					assert_false(rl_take(&probe, t + w - 2));
				}
			}
			assert_true(b.tokens >= 0.0 && b.tokens <= b.capacity);
			assert_true(b.rate >= b.base_rate * RL_MIN_FRACTION);
			assert_true(b.rate <= b.base_rate);
		}
		assert_true(taken <= (double)cap +
		    (double)(t - start) / 1000.0 * rate + 1e-9);
	}
}

static void
test_backoff_edges(void **state)
{
	(void)state;
	/* the ceiling doubles until it meets the cap exactly */
	assert_int_equal(backoff_ms(3, 100, 800, 800), 800);
	assert_int_equal(backoff_ms(3, 100, 800, 801), 0);
	assert_int_equal(backoff_ms(4, 100, 800, 800), 800);
	assert_int_equal(backoff_ms(2, 100, 800, 400), 400);
	assert_int_equal(backoff_ms(2, 100, 800, 401), 0);
	/* a cap below the base wins */
	assert_int_equal(backoff_ms(0, 100, 50, 50), 50);
	assert_int_equal(backoff_ms(0, 100, 50, 51), 0);
	assert_int_equal(backoff_ms(0, 0, 5000, 12345), 0);
	/* huge caps and attempts: no overflow, the draw itself */
	assert_int_equal(backoff_ms(200, 100, UINT64_MAX, 0xffffffffu),
	    0xffffffffu);
	assert_int_equal(backoff_ms(200, UINT64_MAX, UINT64_MAX, 7), 7);
	assert_int_equal(backoff_ms(31, 2, UINT64_MAX, 0xfffffffeu),
	    0xfffffffeu);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bucket_burst_then_refill),
		cmocka_unit_test(test_bucket_never_over_capacity),
		cmocka_unit_test(test_aimd),
		cmocka_unit_test(test_backoff),
		cmocka_unit_test(test_refill_at_cut_rate),
		cmocka_unit_test(test_refill_edges),
		cmocka_unit_test(test_rate_edges),
		cmocka_unit_test(test_random_walk),
		cmocka_unit_test(test_backoff_edges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
