/*
 * The test hooks of a sanitizer build (see testhook.h): a deliberate UBSan
 * or ASan finding in a sandboxed process, and shorter timers, asked for
 * through the environment.  Compiled only with --enable-sanitizers
 * (testhook_none.c otherwise), so no release binary can be made to
 * misbehave this way.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "testhook.h"

#define TIME_SCALE_MAX	100

static bool
names(const char *var, const char *procname)
{
	const char *v = getenv(var);

	return v != NULL && strcmp(v, procname) == 0;
}

/* ENID_TEST_TIME_SCALE, or 1 if it is unset or not an integer from 1 to
 * TIME_SCALE_MAX; read once (the environment does not change). */
static int
time_scale(bool *bad)
{
	static int scale;
	static bool invalid;
	const char *v;
	char *end;
	long n;

	if (scale == 0) {
		scale = 1;
		if ((v = getenv("ENID_TEST_TIME_SCALE")) != NULL) {
			n = strtol(v, &end, 10);
			if (*v != '\0' && *end == '\0' && n >= 1 &&
			    n <= TIME_SCALE_MAX)
				scale = (int)n;
			else
				invalid = true;
		}
	}
	if (bad != NULL)
		*bad = invalid;
	return scale;
}

int
testhook_ms(int ms)
{
	return ms / time_scale(NULL);
}

void
testhook_sandboxed(const char *procname)
{
	/* volatile: the compiler may neither fold the overflow nor drop the
	 * stray write (to a block freed right after, it would). */
	volatile int big = INT_MAX;
	volatile size_t past = 16;
	char *block;
	bool bad;
	int sum, scale;

	scale = time_scale(&bad);
	if (bad)
		log_warnx("test hook: ENID_TEST_TIME_SCALE is not an integer "
		    "from 1 to %d: timers as written", TIME_SCALE_MAX);
	else if (scale > 1)
		log_info("test hook: ENID_TEST_TIME_SCALE: the broker's long "
		    "timers are %d times shorter", scale);

	if (names("ENID_TEST_UBSAN", procname)) {
		log_warnx("test hook: ENID_TEST_UBSAN: overflowing an int");
		sum = big + 1;
		log_warnx("test hook: UBSan let %d through", sum);
	}
	if (names("ENID_TEST_ASAN", procname)) {
		log_warnx("test hook: ENID_TEST_ASAN: writing past a heap "
		    "block");
		if ((block = malloc(past)) == NULL)
			fatal("test hook: malloc");
		((volatile char *)block)[past] = 1;
		log_warnx("test hook: ASan let a write past %zu bytes "
		    "through", (size_t)past);
		free(block);
	}
}

bool
testhook_env_passes(const char *var)
{
	return strncmp(var, "ENID_TEST_UBSAN=", 16) == 0 ||
	    strncmp(var, "ENID_TEST_ASAN=", 15) == 0;
}

int
testhook_rule_fail(void)
{
	static int n = -1;
	const char *v;

	if (n == -1) {
		v = getenv("ENID_TEST_NETD_RULE_FAIL");
		n = v != NULL && v[0] >= '1' && v[0] <= '8' && v[1] == '\0' ?
		    v[0] - '0' : 0;
	}
	return n;
}
