/*
 * Client-side rate limiting for enid-cloudd, as plain arithmetic over an
 * injected clock (milliseconds): a token bucket per action class whose
 * refill rate is cut multiplicatively when the cloud throttles and grows
 * back additively (AIMD), and exponential backoff with full jitter.
 */
#ifndef ENID_RATELIMIT_H
#define ENID_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

#define RL_DECREASE		0.5	/* rate *= this on a throttle */
#define RL_MIN_FRACTION		0.25	/* never below base * this */
#define RL_RECOVER_PER_S	0.1	/* + base * this per second */

struct rl_bucket {
	double		capacity;	/* tokens */
	double		tokens;
	double		base_rate;	/* configured tokens per second */
	double		rate;		/* current (AIMD) tokens per second */
	uint64_t	last_ms;	/* of the last refill */
};

void	 rl_init(struct rl_bucket *b, uint32_t capacity, uint32_t refill_per_s,
	    uint64_t now);
/* Refill up to now (and recover the rate); then take a token if one is
 * there.  True if taken. */
bool	 rl_take(struct rl_bucket *b, uint64_t now);
/* Milliseconds from now until a token will be there (0: now). */
uint64_t rl_wait_ms(struct rl_bucket *b, uint64_t now);
/* The cloud throttled a call of this class: cut the rate. */
void	 rl_throttled(struct rl_bucket *b, uint64_t now);

/*
 * Full-jitter backoff: a delay uniform in [0, min(cap, base * 2^attempt)],
 * drawn from rnd (any 32-bit random value).  attempt counts from 0.
 */
uint64_t backoff_ms(unsigned attempt, uint64_t base, uint64_t cap,
	    uint32_t rnd);

/*
 * The ceiling itself, min(cap, base * 2^attempt): the delay without
 * jitter (base == cap makes it fixed, as SDK defaults retry).
 */
uint64_t backoff_ceiling_ms(unsigned attempt, uint64_t base, uint64_t cap);

#endif /* ENID_RATELIMIT_H */
