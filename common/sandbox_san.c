/*
 * What the ASan and UBSan runtimes need under the seccomp filter, in a
 * build configured with --enable-sanitizers (sandbox_nosan.c otherwise),
 * so that a finding prints its report instead of dying of SIGSYS half-way.
 * Found by running the reports (tests/integration/test_sandbox.py) in
 * trap-and-report mode.  Nothing here writes a file or reaches another
 * process.
 */
#include <fcntl.h>
#include <stddef.h>
#include <sys/ioctl.h>

#include "sandbox.h"

#define ALLOW(name)		{ .syscall = name }
/* An open whose flags (argument i) neither write nor create. */
#define RDONLY(name, i) \
	{ .syscall = name, .nargs = 1, .args = { { .arg = i, \
	  .cmp = SB_MASKED_EQ, .mask = O_ACCMODE | O_CREAT | O_TRUNC | \
	  O_APPEND | __O_TMPFILE, .value = O_RDONLY } } }
#define NELEM(tab)		(sizeof(tab) / sizeof(tab[0]))

static const struct sb_rule sanitizer_rules[] = {
	/* The report's stack: the runtime reads /proc/self/maps and the
	 * binaries it names (read-only opens, readlink of /proc/self/exe). */
	RDONLY("openat", 2), RDONLY("open", 1), ALLOW("readlink"),
	/* ASan gives each new thread (cloudd's resolver) an alternate
	 * signal stack and takes it down at the thread's end, and before
	 * every call that does not return (exit, fatal) it asks whether it
	 * runs on one. */
	ALLOW("sigaltstack"),
};

/* The report asks whether stderr is a terminal (for colour). */
static const unsigned long sanitizer_ioctls[] = { TCGETS };

/* The symbolizer marks the files it opens close-on-exec. */
static const int sanitizer_fcntls[] = { F_SETFD };

static const struct sb_policy sanitizer_policy = {
	sanitizer_rules, NELEM(sanitizer_rules), NULL, 0,
	sanitizer_fcntls, NELEM(sanitizer_fcntls),
	sanitizer_ioctls, NELEM(sanitizer_ioctls)
};

const struct sb_policy *
sandbox_policy_sanitizer(void)
{
	return &sanitizer_policy;
}
