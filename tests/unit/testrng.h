/*
 * A fixed-seed generator for the unit tests' random cases (splitmix64):
 * small, and the same sequence on every libc, so that a failing case
 * fails again.  Each test file seeds rng_state itself.
 */
#ifndef ENID_TESTRNG_H
#define ENID_TESTRNG_H

#include <stddef.h>
#include <stdint.h>

static uint64_t rng_state;

static inline uint64_t
rng(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* 0..n-1 */
static inline size_t
rnd(size_t n)
{
	return (size_t)(rng() % n);
}

#endif /* ENID_TESTRNG_H */
