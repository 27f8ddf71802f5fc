/*
 * Token buckets with AIMD refill, and full-jitter backoff (ratelimit.h).
 * Pure: the clock and the random numbers come from the caller.
 */
#include <string.h>

#include "ratelimit.h"

void
rl_init(struct rl_bucket *b, uint32_t capacity, uint32_t refill_per_s,
    uint64_t now)
{
	memset(b, 0, sizeof(*b));
	b->capacity = capacity > 0 ? capacity : 1;
	b->tokens = b->capacity;
	b->base_rate = refill_per_s > 0 ? refill_per_s : 1;
	b->rate = b->base_rate;
	b->last_ms = now;
}

static void
rl_refill(struct rl_bucket *b, uint64_t now)
{
	double dt;

	if (now <= b->last_ms)
		return;
	dt = (double)(now - b->last_ms) / 1000.0;
	b->last_ms = now;
	/* Tokens accrue at the rate in force during the interval; the
	 * additive recovery applies from now on. */
	b->tokens += dt * b->rate;
	if (b->tokens > b->capacity)
		b->tokens = b->capacity;
	b->rate += dt * b->base_rate * RL_RECOVER_PER_S;
	if (b->rate > b->base_rate)
		b->rate = b->base_rate;
}

bool
rl_take(struct rl_bucket *b, uint64_t now)
{
	rl_refill(b, now);
	if (b->tokens < 1.0)
		return false;
	b->tokens -= 1.0;
	return true;
}

uint64_t
rl_wait_ms(struct rl_bucket *b, uint64_t now)
{
	double need;

	rl_refill(b, now);
	if (b->tokens >= 1.0)
		return 0;
	need = (1.0 - b->tokens) / b->rate * 1000.0;
	return (uint64_t)need + 1;
}

void
rl_throttled(struct rl_bucket *b, uint64_t now)
{
	double floor = b->base_rate * RL_MIN_FRACTION;

	rl_refill(b, now);
	b->rate *= RL_DECREASE;
	if (b->rate < floor)
		b->rate = floor;
}

uint64_t
backoff_ceiling_ms(unsigned attempt, uint64_t base, uint64_t cap)
{
	uint64_t ceiling = base;

	while (attempt-- > 0 && ceiling < cap && ceiling <= UINT32_MAX)
		ceiling *= 2;
	return ceiling > cap ? cap : ceiling;
}

uint64_t
backoff_ms(unsigned attempt, uint64_t base, uint64_t cap, uint32_t rnd)
{
	uint64_t ceiling = backoff_ceiling_ms(attempt, base, cap);

	/* rnd has 32 bits: past them the draw is rnd itself, and ceiling + 1
	 * can't wrap to 0 below. */
	if (ceiling >= UINT32_MAX)
		return rnd;
	return (uint64_t)rnd % (ceiling + 1);
}
