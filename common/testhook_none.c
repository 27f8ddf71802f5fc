/*
 * A build without sanitizers has no test hooks (see testhook.h and
 * testhook_san.c): nothing is triggered and no variable is passed on.
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
