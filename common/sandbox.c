/*
 * Privilege drop and the seccomp loader (see sandbox.h).  The order is the
 * one every step depends on: groups, gid, uid (keeping capabilities through
 * PR_SET_KEEPCAPS), then the capability sets, then no_new_privs, then the
 * filter, last.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <seccomp.h>

#include "log.h"
#include "sandbox.h"

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

int
sandbox_drop_to(uid_t uid, gid_t gid, const cap_value_t *keep, size_t nkeep,
    char *err, size_t errlen)
{
	cap_t caps = NULL;
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
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1) {
		snprintf(err, errlen, "PR_SET_DUMPABLE: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Debug mode: say which call was refused, then die as the filter would. */
static void
sigsys_report(int signo, siginfo_t *si, void *ctx)
{
	char buf[160];
	char *name;
	int n;

	(void)ctx;
	name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE,
	    si->si_syscall);
	n = snprintf(buf, sizeof(buf), "seccomp: refused system call %s (%d)\n",
	    name ? name : "?", si->si_syscall);
	if (n > 0)
		(void)!write(STDERR_FILENO, buf, (size_t)n);
	_exit(128 + signo);
}

static int
add_rules(scmp_filter_ctx ctx, const struct sb_policy *p, char *err,
    size_t errlen)
{
	size_t i;

	for (i = 0; i < p->nrules; i++) {
		const struct sb_rule *r = &p->rules[i];
		uint32_t action = r->errno_ret ? SCMP_ACT_ERRNO(r->errno_ret) :
		    SCMP_ACT_ALLOW;
		int nr, rc;

		nr = seccomp_syscall_resolve_name(r->syscall);
		if (nr == __NR_SCMP_ERROR) {
			/* Not on this architecture: nothing to allow. */
			continue;
		}
		if (r->has_arg2 && r->op == SB_EQ) {
			rc = seccomp_rule_add(ctx, action, nr, 2,
			    SCMP_CMP(r->arg, SCMP_CMP_EQ, r->value),
			    SCMP_CMP(r->arg2, SCMP_CMP_EQ, r->value2));
			goto added;
		}
		switch (r->op) {
		case SB_ANY:
			rc = seccomp_rule_add(ctx, action, nr, 0);
			break;
		case SB_EQ:
			rc = seccomp_rule_add(ctx, action, nr, 1,
			    SCMP_CMP(r->arg, SCMP_CMP_EQ, r->value));
			break;
		case SB_MASKED_EQ:
			rc = seccomp_rule_add(ctx, action, nr, 1,
			    SCMP_CMP(r->arg, SCMP_CMP_MASKED_EQ, r->mask,
			    r->value));
			break;
		default:
			rc = -EINVAL;
		}
added:
		if (rc < 0) {
			snprintf(err, errlen, "seccomp rule for %s: %s",
			    r->syscall, strerror(-rc));
			return -1;
		}
	}
	return 0;
}

int
sandbox_load(enum sandbox_proc proc, bool debug, char *err, size_t errlen)
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
	if (add_rules(ctx, sandbox_policy_common(), err, errlen) == -1 ||
	    add_rules(ctx, sandbox_policy(proc), err, errlen) == -1 ||
	    add_rules(ctx, sandbox_policy_sanitizer(), err, errlen) == -1 ||
	    (log_uses_syslog() &&
	    add_rules(ctx, sandbox_policy_syslog(), err, errlen) == -1)) {
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
