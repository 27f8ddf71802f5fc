/*
 * Rate-limit arithmetic of enid-cloudd (cloudd/ratelimit.c) with an
 * injected clock: bucket burst and refill, AIMD, full-jitter backoff.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bucket_burst_then_refill),
		cmocka_unit_test(test_bucket_never_over_capacity),
		cmocka_unit_test(test_aimd),
		cmocka_unit_test(test_backoff),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
