/*
 * Privilege drop and seccomp for the three enid processes.  Each process's
 * allow list is data (sandbox_policy.c), grouped by purpose, with the
 * arguments pinned where they matter; anything not listed kills the process
 * (SIGSYS), or in debug mode traps and reports the system call's name
 * before exiting.  A few calls that libraries make and cope with failing
 * (a unix socket for syslog's reconnect or nscd) are refused with an errno.
 */
#ifndef ENID_SANDBOX_H
#define ENID_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
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
 * the call on stderr.  The filter embeds the caller's own pid (a signal may
 * only go to the process itself) and, for the broker, the pids in
 * children: the only other processes it may signal, with SIGTERM or
 * SIGKILL, when it takes the set down.  Returns 0, or -1 with err set.
 */
int	sandbox_load(enum sandbox_proc proc, bool debug, const pid_t *children,
	    size_t nchildren, char *err, size_t errlen);

/*
 * Resolve url's host once, before the filter goes on, so that whatever the
 * resolver loads on first use (NSS modules: executable mappings the filter
 * refuses) is in memory.  A numeric host loads nothing and is skipped.
 * Failure to resolve is not an error (the lookup only warms the resolver);
 * returns the getaddrinfo result for the log, 0 when skipped.
 */
int	sandbox_warm_resolver(const char *url);

const char *sandbox_proc_name(enum sandbox_proc proc);

/* True if ENID_SECCOMP_DEBUG=1 is in the environment. */
bool	sandbox_debug_requested(void);

/* ---- policy tables (sandbox_policy.c) ---- */

enum sb_cmp {
	SB_EQ = 1,		/* arg == value */
	SB_MASKED_EQ,		/* (arg & mask) == value */
};

/* One condition on a system call argument. */
struct sb_arg {
	unsigned int	 arg;		/* argument index, 0-5 */
	enum sb_cmp	 cmp;
	unsigned long	 mask;
	unsigned long	 value;
};

#define SB_MAX_ARGS	3

struct sb_rule {
	const char	*syscall;	/* by name, resolved by libseccomp */
	int		 errno_ret;	/* != 0: refuse with this errno */
	unsigned int	 nargs;		/* conditions, all must hold */
	struct sb_arg	 args[SB_MAX_ARGS];
};

/* A setsockopt level and option, as chrony lists them. */
struct sb_sockopt {
	int		 level;
	int		 option;
};

/*
 * One process's list: the rules, then the setsockopt options, fcntl
 * commands and ioctl requests it may use (each table expands to rules on
 * that call's arguments; an empty table leaves the call out).
 */
struct sb_policy {
	const struct sb_rule	*rules;
	size_t			 nrules;
	const struct sb_sockopt	*sockopts;
	size_t			 nsockopts;
	const int		*fcntls;
	size_t			 nfcntls;
	const unsigned long	*ioctls;
	size_t			 nioctls;
};

const struct sb_policy *sandbox_policy(enum sandbox_proc proc);
/* Calls every process needs (memory, the loop, logging, exit). */
const struct sb_policy *sandbox_policy_common(void);
/* Calls the sanitizers' runtimes need, when built with them
 * (sandbox_san.c; sandbox_nosan.c otherwise). */
const struct sb_policy *sandbox_policy_sanitizer(void);

#endif /* ENID_SANDBOX_H */
