/*
 * A build without sanitizers: their runtimes add nothing to the seccomp
 * lists (sandbox_san.c is the other side of this switch).
 */
#include <stddef.h>

#include "sandbox.h"

static const struct sb_policy no_policy = { NULL, 0, NULL, 0, NULL, 0,
	NULL, 0 };

const struct sb_policy *
sandbox_policy_sanitizer(void)
{
	return &no_policy;
}
