/*
 * Privilege drop and the seccomp loader (see sandbox.h).  The order is the
 * one every step depends on: groups, gid, uid (keeping capabilities through
 * PR_SET_KEEPCAPS), then the capability sets, then no_new_privs, then the
 * filter, last.  A process started without root skips the id changes,
 * after checking that it is already who it should be.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/nameser.h>

#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <netdb.h>
#include <pwd.h>
#include <resolv.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <seccomp.h>

#include "sandbox.h"

/* More supplementary groups than this is refused (as a wrong start) by
 * sandbox_check_unprivileged. */
#define SANDBOX_MAX_GROUPS	64

static const char *const proc_names[SANDBOX_PROC_COUNT] = {
	[SANDBOX_BROKER] = "enid",
	[SANDBOX_NETD] = "enid-netd",
	[SANDBOX_CLOUDD] = "enid-cloudd",
};

const char *
sandbox_proc_name(enum sandbox_proc proc)
{
	return proc < SANDBOX_PROC_COUNT ? proc_names[proc] : "?";
}

bool
sandbox_debug_requested(void)
{
	const char *v = getenv("ENID_SECCOMP_DEBUG");

	return v != NULL && strcmp(v, "1") == 0;
}

int
sandbox_drop_privileges(const char *user, const cap_value_t *keep,
    size_t nkeep, char *err, size_t errlen)
{
	struct passwd *pw;

	errno = 0;
	pw = getpwnam(user);
	if (pw == NULL) {
		snprintf(err, errlen, "user \"%s\": %s", user,
		    errno ? strerror(errno) : "no such user");
		return -1;
	}
	if (pw->pw_uid == 0) {
		snprintf(err, errlen, "user \"%s\" is root; refusing to run "
		    "unprivileged parts as root", user);
		return -1;
	}
	return sandbox_drop_to(pw->pw_uid, pw->pw_gid, keep, nkeep, err,
	    errlen);
}

bool
sandbox_started_unprivileged(void)
{
	return geteuid() != 0;
}

int
sandbox_undumpable(void)
{
	return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

/* "CAP_NET_ADMIN", as systemd's settings spell it, for error messages. */
static void
cap_upper_name(cap_value_t c, char *buf, size_t len)
{
	char *name = cap_to_name(c);
	size_t i;

	snprintf(buf, len, "%s", name ? name : "?");
	cap_free(name);
	for (i = 0; buf[i] != '\0'; i++)
		buf[i] = (char)toupper((unsigned char)buf[i]);
}

int
sandbox_check_unprivileged(uid_t uid, gid_t gid, const cap_value_t *need,
    size_t nneed, char *err, size_t errlen)
{
	uid_t ru, eu, su;
	gid_t rg, eg, sg, groups[SANDBOX_MAX_GROUPS];
	cap_flag_value_t v;
	cap_t caps;
	char name[64];
	size_t i;
	int n;

	if (getresuid(&ru, &eu, &su) == -1 || getresgid(&rg, &eg, &sg) == -1) {
		snprintf(err, errlen, "reading our own ids: %s",
		    strerror(errno));
		return -1;
	}
	if (ru != uid || eu != uid || su != uid) {
		snprintf(err, errlen, "running as uid %u (real %u, saved %u), "
		    "not as uid %u, and only root can change user",
		    (unsigned)eu, (unsigned)ru, (unsigned)su, (unsigned)uid);
		return -1;
	}
	if (rg != gid || eg != gid || sg != gid) {
		snprintf(err, errlen, "running with gid %u (real %u, saved %u), "
		    "not with the user's group %u, and only root can change "
		    "group", (unsigned)eg, (unsigned)rg, (unsigned)sg,
		    (unsigned)gid);
		return -1;
	}
	if ((n = getgroups(SANDBOX_MAX_GROUPS, groups)) == -1) {
		snprintf(err, errlen, "getgroups: %s", errno == EINVAL ?
		    "more supplementary groups than anyone needs" :
		    strerror(errno));
		return -1;
	}
	for (i = 0; i < (size_t)n; i++)
		if (groups[i] != gid) {
			snprintf(err, errlen, "holds supplementary group %u, "
			    "which only root can drop; give the user no group "
			    "but its own", (unsigned)groups[i]);
			return -1;
		}
	if ((caps = cap_get_proc()) == NULL) {
		snprintf(err, errlen, "cap_get_proc: %s", strerror(errno));
		return -1;
	}
	for (i = 0; i < nneed; i++) {
		if (cap_get_flag(caps, need[i], CAP_PERMITTED, &v) == -1 ||
		    v != CAP_SET) {
			cap_upper_name(need[i], name, sizeof(name));
			snprintf(err, errlen, "%s is not a permitted capability; "
			    "give it as an ambient one (systemd: "
			    "AmbientCapabilities=%s)", name, name);
			cap_free(caps);
			return -1;
		}
	}
	cap_free(caps);
	return 0;
}

int
sandbox_pass_caps(const cap_value_t *caps, size_t ncaps, char *err,
    size_t errlen)
{
	cap_t cur;
	char name[64];
	size_t i;

	/* An ambient capability must be both permitted and inheritable. */
	if ((cur = cap_get_proc()) == NULL) {
		snprintf(err, errlen, "cap_get_proc: %s", strerror(errno));
		return -1;
	}
	if (ncaps > 0 && (cap_set_flag(cur, CAP_INHERITABLE, (int)ncaps, caps,
	    CAP_SET) == -1 || cap_set_proc(cur) == -1)) {
		snprintf(err, errlen, "raising the inheritable set: %s",
		    strerror(errno));
		cap_free(cur);
		return -1;
	}
	cap_free(cur);
	if (cap_reset_ambient() == -1) {
		snprintf(err, errlen, "cap_reset_ambient: %s", strerror(errno));
		return -1;
	}
	for (i = 0; i < ncaps; i++)
		if (cap_set_ambient(caps[i], CAP_SET) == -1) {
			cap_upper_name(caps[i], name, sizeof(name));
			snprintf(err, errlen, "making %s ambient: %s", name,
			    strerror(errno));
			return -1;
		}
	return 0;
}

/*
 * Root becomes uid and gid: groups, gid, the bounding set (while dropping
 * from it is still allowed), then uid, keeping the permitted set through
 * PR_SET_KEEPCAPS for what keep lists.
 */
static int
become_user(uid_t uid, gid_t gid, const cap_value_t *keep, size_t nkeep,
    char *err, size_t errlen)
{
	cap_value_t c;
	uid_t ru, eu, su;

	if (setgroups(0, NULL) == -1) {
		snprintf(err, errlen, "setgroups: %s", strerror(errno));
		return -1;
	}
	if (setresgid(gid, gid, gid) == -1) {
		snprintf(err, errlen, "setresgid(%u): %s", (unsigned)gid,
		    strerror(errno));
		return -1;
	}
	/* The bounding set, while still root (dropping from it needs
	 * CAP_SETPCAP): nothing outside keep can come back, even by exec. */
	for (c = 0; c <= CAP_LAST_CAP; c++) {
		size_t i;
		bool kept = false;

		for (i = 0; i < nkeep; i++)
			kept |= keep[i] == c;
		if (!kept && cap_get_bound(c) == 1 && cap_drop_bound(c) == -1) {
			snprintf(err, errlen, "dropping capability %d from the "
			    "bounding set: %s", (int)c, strerror(errno));
			return -1;
		}
	}
	if (nkeep > 0 && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) == -1) {
		snprintf(err, errlen, "PR_SET_KEEPCAPS: %s", strerror(errno));
		return -1;
	}
	if (setresuid(uid, uid, uid) == -1) {
		snprintf(err, errlen, "setresuid(%u): %s", (unsigned)uid,
		    strerror(errno));
		return -1;
	}
	if (getresuid(&ru, &eu, &su) == -1 || ru != uid || eu != uid ||
	    su != uid) {
		snprintf(err, errlen, "uid change did not take");
		return -1;
	}
	return 0;
}

int
sandbox_drop_to(uid_t uid, gid_t gid, const cap_value_t *keep, size_t nkeep,
    char *err, size_t errlen)
{
	cap_t caps = NULL;

	/*
	 * Started without root there is no id to change, and no bounding set
	 * to empty (that needs CAP_SETPCAP): the service manager's bounds it,
	 * and with no_new_privs no exec can add to the permitted set anyway.
	 */
	if (sandbox_started_unprivileged()) {
		if (sandbox_check_unprivileged(uid, gid, keep, nkeep, err,
		    errlen) == -1)
			return -1;
	} else if (become_user(uid, gid, keep, nkeep, err, errlen) == -1)
		return -1;

	/* Effective and permitted: keep; inheritable: nothing, which also
	 * clears the ambient set. */
	caps = cap_init();	/* all clear */
	if (caps == NULL) {
		snprintf(err, errlen, "cap_init: %s", strerror(errno));
		return -1;
	}
	if (nkeep > 0 &&
	    (cap_set_flag(caps, CAP_EFFECTIVE, (int)nkeep, keep, CAP_SET) ||
	    cap_set_flag(caps, CAP_PERMITTED, (int)nkeep, keep, CAP_SET))) {
		snprintf(err, errlen, "cap_set_flag: %s", strerror(errno));
		cap_free(caps);
		return -1;
	}
	if (cap_set_proc(caps) == -1) {
		snprintf(err, errlen, "cap_set_proc: %s", strerror(errno));
		cap_free(caps);
		return -1;
	}
	cap_free(caps);
	if (cap_reset_ambient() == -1 && errno != EINVAL) {
		snprintf(err, errlen, "cap_reset_ambient: %s", strerror(errno));
		return -1;
	}
	if (nkeep > 0 && prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) == -1) {
		snprintf(err, errlen, "PR_SET_KEEPCAPS: %s", strerror(errno));
		return -1;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1) {
		snprintf(err, errlen, "PR_SET_NO_NEW_PRIVS: %s",
		    strerror(errno));
		return -1;
	}
	if (sandbox_undumpable() == -1) {
		snprintf(err, errlen, "PR_SET_DUMPABLE: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Debug mode: say which call was refused and with which arguments (what an
 * argument-filtered rule looked at), then die as the filter would.
 */
static void
sigsys_report(int signo, siginfo_t *si, void *ctx)
{
	char buf[256], args[160] = "";
	char *name;
	int n;

#if defined(__x86_64__)
	const greg_t *r = ((ucontext_t *)ctx)->uc_mcontext.gregs;

	snprintf(args, sizeof(args), " args 0x%llx 0x%llx 0x%llx 0x%llx",
	    (unsigned long long)r[REG_RDI], (unsigned long long)r[REG_RSI],
	    (unsigned long long)r[REG_RDX], (unsigned long long)r[REG_R10]);
#else
	(void)ctx;
#endif
	name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE,
	    si->si_syscall);
	n = snprintf(buf, sizeof(buf), "seccomp: refused system call %s "
	    "(%d)%s\n", name ? name : "?", si->si_syscall, args);
	if (n > 0)
		(void)!write(STDERR_FILENO, buf, (size_t)n);
	_exit(128 + signo);
}

/* Add one rule: nr with up to SB_MAX_ARGS conditions, all of which hold. */
static int
add_rule(scmp_filter_ctx ctx, uint32_t action, const char *syscall,
    unsigned int nargs, const struct sb_arg *args, char *err, size_t errlen)
{
	struct scmp_arg_cmp cmp[SB_MAX_ARGS];
	unsigned int i;
	int nr, rc;

	nr = seccomp_syscall_resolve_name(syscall);
	if (nr == __NR_SCMP_ERROR)
		return 0;	/* not on this architecture: nothing to allow */
	if (nargs > SB_MAX_ARGS) {
		snprintf(err, errlen, "seccomp rule for %s: %u conditions",
		    syscall, nargs);
		return -1;
	}
	for (i = 0; i < nargs; i++) {
		memset(&cmp[i], 0, sizeof(cmp[i]));
		cmp[i].arg = args[i].arg;
		if (args[i].cmp == SB_MASKED_EQ) {
			cmp[i].op = SCMP_CMP_MASKED_EQ;
			cmp[i].datum_a = args[i].mask;
			cmp[i].datum_b = args[i].value;
		} else {
			cmp[i].op = SCMP_CMP_EQ;
			cmp[i].datum_a = args[i].value;
		}
	}
	rc = seccomp_rule_add_array(ctx, action, nr, nargs, cmp);
	if (rc < 0) {
		snprintf(err, errlen, "seccomp rule for %s: %s", syscall,
		    strerror(-rc));
		return -1;
	}
	return 0;
}

/* One policy: its rules, then its option, command and request tables. */
static int
add_policy(scmp_filter_ctx ctx, const struct sb_policy *p, char *err,
    size_t errlen)
{
	static const char *const fcntl_names[] = { "fcntl", "fcntl64" };
	struct sb_arg a[2];
	size_t i, j;

	for (i = 0; i < p->nrules; i++) {
		const struct sb_rule *r = &p->rules[i];

		if (add_rule(ctx, r->errno_ret ? SCMP_ACT_ERRNO(r->errno_ret) :
		    SCMP_ACT_ALLOW, r->syscall, r->nargs, r->args, err,
		    errlen) == -1)
			return -1;
	}
	memset(a, 0, sizeof(a));
	a[0].cmp = a[1].cmp = SB_EQ;
	for (i = 0; i < p->nsockopts; i++) {
		a[0].arg = 1;
		a[0].value = (unsigned long)p->sockopts[i].level;
		a[1].arg = 2;
		a[1].value = (unsigned long)p->sockopts[i].option;
		if (add_rule(ctx, SCMP_ACT_ALLOW, "setsockopt", 2, a, err,
		    errlen) == -1)
			return -1;
	}
	for (i = 0; i < p->nfcntls; i++)
		for (j = 0; j < sizeof(fcntl_names) / sizeof(*fcntl_names);
		    j++) {
			a[0].arg = 1;
			a[0].value = (unsigned long)p->fcntls[i];
			if (add_rule(ctx, SCMP_ACT_ALLOW, fcntl_names[j], 1, a,
			    err, errlen) == -1)
				return -1;
		}
	for (i = 0; i < p->nioctls; i++) {
		a[0].arg = 1;
		a[0].value = p->ioctls[i];
		if (add_rule(ctx, SCMP_ACT_ALLOW, "ioctl", 1, a, err,
		    errlen) == -1)
			return -1;
	}
	return 0;
}

/*
 * The rules that name pids.  A signal goes to the process itself only
 * (abort() raises SIGABRT with tgkill on its own thread group; tkill,
 * which names a bare thread id that could be anyone's, is never needed).
 * The broker may also end its children: SIGTERM, then SIGKILL for one that
 * does not exit, since a stopped or wedged child never sees the EOF on its
 * channel.  Their pids cannot be reused while the broker has not reaped
 * them, and after reaping it no longer signals them.
 */
static int
add_signal_rules(scmp_filter_ctx ctx, const pid_t *children,
    size_t nchildren, char *err, size_t errlen)
{
	static const int child_signals[] = { SIGTERM, SIGKILL };
	struct sb_arg a[2];
	size_t i, j;

	memset(a, 0, sizeof(a));
	a[0].cmp = a[1].cmp = SB_EQ;
	a[0].arg = 0;
	a[0].value = (unsigned long)getpid();
	if (add_rule(ctx, SCMP_ACT_ALLOW, "tgkill", 1, a, err, errlen) == -1)
		return -1;
	for (i = 0; i < nchildren; i++) {
		if (children[i] <= 0) {
			snprintf(err, errlen, "child pid %d cannot be a "
			    "signal target", (int)children[i]);
			return -1;
		}
		for (j = 0; j < 2; j++) {
			a[0].value = (unsigned long)children[i];
			a[1].arg = 1;
			a[1].value = (unsigned long)child_signals[j];
			if (add_rule(ctx, SCMP_ACT_ALLOW, "kill", 2, a, err,
			    errlen) == -1)
				return -1;
		}
	}
	return 0;
}

int
sandbox_load(enum sandbox_proc proc, bool debug, const pid_t *children,
    size_t nchildren, char *err, size_t errlen)
{
	scmp_filter_ctx ctx;
	int rc;

	if (proc >= SANDBOX_PROC_COUNT) {
		snprintf(err, errlen, "unknown sandbox %d", (int)proc);
		return -1;
	}
	if (debug) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = sigsys_report;
		sa.sa_flags = SA_SIGINFO;
		if (sigaction(SIGSYS, &sa, NULL) == -1) {
			snprintf(err, errlen, "sigaction(SIGSYS): %s",
			    strerror(errno));
			return -1;
		}
	}
	ctx = seccomp_init(debug ? SCMP_ACT_TRAP : SCMP_ACT_KILL_PROCESS);
	if (ctx == NULL) {
		snprintf(err, errlen, "seccomp_init failed");
		return -1;
	}
	if (add_policy(ctx, sandbox_policy_common(), err, errlen) == -1 ||
	    add_policy(ctx, sandbox_policy(proc), err, errlen) == -1 ||
	    add_policy(ctx, sandbox_policy_sanitizer(), err, errlen) == -1 ||
	    add_signal_rules(ctx, children, nchildren, err, errlen) == -1) {
		seccomp_release(ctx);
		return -1;
	}
	rc = seccomp_load(ctx);
	seccomp_release(ctx);
	if (rc < 0) {
		snprintf(err, errlen, "seccomp_load: %s", strerror(-rc));
		return -1;
	}
	return 0;
}

int
sandbox_warm_resolver(const char *url)
{
	struct addrinfo hints, *res = NULL;
	char host[256];
	const char *p, *end;
	size_t len;
	int rc;

	/* scheme://[userinfo@]host[:port][/...]; [v6] is numeric anyway */
	if ((p = strstr(url, "://")) == NULL)
		return 0;
	p += 3;
	len = strcspn(p, "/?#");
	if ((end = memchr(p, '@', len)) != NULL) {
		len -= (size_t)(end + 1 - p);
		p = end + 1;
	}
	if (len == 0 || p[0] == '[')
		return 0;
	len = strcspn(p, ":/?#");
	if (len == 0 || len >= sizeof(host))
		return 0;
	memcpy(host, p, len);
	host[len] = '\0';

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST;
	if (getaddrinfo(host, NULL, &hints, &res) == 0) {
		freeaddrinfo(res);
		return 0;	/* numeric: the resolver loads nothing */
	}
	/*
	 * As libcurl asks: any family, stream sockets.  Bounded: a name
	 * server that does not answer costs a second, not the default five
	 * times two attempts times the search list, so that start-up stays
	 * well inside the broker's handshake deadline.  Only this thread's
	 * resolver state changes; libcurl resolves in threads of its own.
	 */
	if (res_init() == 0) {
		_res.retrans = 1;
		_res.retry = 1;
		_res.options &= ~(unsigned long)(RES_DNSRCH | RES_DEFNAMES);
	}
	hints.ai_flags = 0;
	res = NULL;
	rc = getaddrinfo(host, NULL, &hints, &res);
	if (rc == 0)
		freeaddrinfo(res);
	return rc;
}
