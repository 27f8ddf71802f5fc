/*
 * The test hooks of a sanitizer build (see testhook.h): a deliberate UBSan
 * or ASan finding in a sandboxed process, asked for through the
 * environment.  Compiled only with --enable-sanitizers (testhook_none.c
 * otherwise), so no release binary can be made to misbehave this way.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "testhook.h"

static bool
names(const char *var, const char *procname)
{
	const char *v = getenv(var);

	return v != NULL && strcmp(v, procname) == 0;
}

void
testhook_sandboxed(const char *procname)
{
	/* volatile: the compiler may neither fold the overflow nor drop the
	 * stray write (to a block freed right after, it would). */
	volatile int big = INT_MAX;
	volatile size_t past = 16;
	char *block;
	int sum;

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
