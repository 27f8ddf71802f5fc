/*
 * A build without sanitizers has no test hooks (see testhook.h and
 * testhook_san.c): nothing is triggered, no variable is passed on and
 * every timer is as long as written.
 */
#include "testhook.h"

void
testhook_sandboxed(const char *procname)
{
	(void)procname;
}

bool
testhook_env_passes(const char *var)
{
	(void)var;
	return false;
}

int
testhook_ms(int ms)
{
	return ms;
}

int
testhook_rule_fail(void)
{
	return 0;
}
