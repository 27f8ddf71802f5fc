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
 * non-dumpable.  A process started without root (see
 * sandbox_started_unprivileged) changes no id: it must already be that
 * user (sandbox_check_unprivileged) and only sheds every capability but
 * keep; its bounding set stays as the service manager left it.  Returns 0,
 * or -1 with err set; callers treat -1 as fatal.
 */
int	sandbox_drop_privileges(const char *user, const cap_value_t *keep,
	    size_t nkeep, char *err, size_t errlen);

/* Same, for an already-resolved uid/gid. */
int	sandbox_drop_to(uid_t uid, gid_t gid, const cap_value_t *keep,
	    size_t nkeep, char *err, size_t errlen);

/*
 * True if the process was started without root (effective uid not 0): as
 * systemd's User= and AmbientCapabilities= start it, already the
 * unprivileged user, holding at most what it is to keep.
 */
bool	sandbox_started_unprivileged(void);

/*
 * For a start without root: the real, effective and saved uid and gid are
 * uid and gid, no supplementary group but gid is held (without
 * CAP_SETGID none could be dropped, and the helpers would inherit them),
 * and every capability in need is permitted.  Returns 0, or -1 with err
 * naming what is wrong.
 */
int	sandbox_check_unprivileged(uid_t uid, gid_t gid,
	    const cap_value_t *need, size_t nneed, char *err, size_t errlen);

/*
 * Make exactly caps the ambient set (raising them in the inheritable set
 * first, which needs them permitted), so that the next program exec'd
 * starts with them effective and permitted.  Started without root, this is
 * how enid-netd gets CAP_NET_ADMIN.  Returns 0, or -1 with err set.
 */
int	sandbox_pass_caps(const cap_value_t *caps, size_t ncaps, char *err,
	    size_t errlen);

/*
 * Make the process non-dumpable now, not only at the drop: started
 * without root, a helper is the broker's user from its exec on, and while
 * dumpable any process of that user could ptrace it or read its memory
 * through /proc (enid-cloudd's credentials).  Returns 0, or -1 with errno
 * set.
 */
int	sandbox_undumpable(void);

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
