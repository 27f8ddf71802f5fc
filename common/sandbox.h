/*
 * Privilege drop and seccomp for the three enid processes.  Each process's
 * allow list is data (sandbox_policy.c), grouped by purpose; anything not
 * listed kills the process (SIGSYS), or in debug mode traps and reports the
 * system call's name before exiting.
 */
#ifndef ENID_SANDBOX_H
#define ENID_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/capability.h>

enum sandbox_proc {
	SANDBOX_BROKER = 0,
	SANDBOX_NETD,
	SANDBOX_CLOUDD,
	SANDBOX_PROC_COUNT
};

/*
 * Become user (and its primary group, no supplementary groups), keeping
 * only the capabilities in keep (effective and permitted; nothing
 * inheritable or ambient; the bounding set emptied), then no_new_privs and
 * non-dumpable.  Returns 0, or -1 with err set; callers treat -1 as fatal.
 */
int	sandbox_drop_privileges(const char *user, const cap_value_t *keep,
	    size_t nkeep, char *err, size_t errlen);

/* Same, for an already-resolved uid/gid. */
int	sandbox_drop_to(uid_t uid, gid_t gid, const cap_value_t *keep,
	    size_t nkeep, char *err, size_t errlen);

/*
 * Load proc's seccomp filter; debug traps instead of killing and reports
 * the call on stderr.  Returns 0, or -1 with err set.
 */
int	sandbox_load(enum sandbox_proc proc, bool debug, char *err,
	    size_t errlen);

const char *sandbox_proc_name(enum sandbox_proc proc);

/* True if ENID_SECCOMP_DEBUG=1 is in the environment. */
bool	sandbox_debug_requested(void);

/* ---- policy tables (sandbox_policy.c) ---- */

enum sb_arg_op {
	SB_ANY = 0,		/* no argument filter */
	SB_EQ,			/* arg == value */
	SB_MASKED_EQ,		/* (arg & mask) == value */
};

struct sb_rule {
	const char	*syscall;	/* by name, resolved by libseccomp */
	enum sb_arg_op	 op;
	unsigned int	 arg;		/* argument index for op */
	unsigned long	 mask;
	unsigned long	 value;
	int		 errno_ret;	/* != 0: deny with this errno instead */
	unsigned int	 arg2;		/* a second condition, ANDed: */
	bool		 has_arg2;	/* (arg2 == value2) */
	unsigned long	 value2;
};

struct sb_policy {
	const struct sb_rule	*rules;
	size_t			 nrules;
};

const struct sb_policy *sandbox_policy(enum sandbox_proc proc);
/* Calls every process needs (memory, the loop, logging, exit). */
const struct sb_policy *sandbox_policy_common(void);
/* Calls the sanitizers' runtimes need, when built with them. */
const struct sb_policy *sandbox_policy_sanitizer(void);
/* Calls syslog(3) needs to reconnect, when logging there. */
const struct sb_policy *sandbox_policy_syslog(void);

#endif /* ENID_SANDBOX_H */
