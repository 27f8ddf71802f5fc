/*
 * The seccomp allow lists, as data.  One list of calls every process needs,
 * one per process, and one for the sanitizer runtimes (empty unless built
 * with --enable-sanitizers).  Anything absent kills the process.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/netlink.h>

#include "sandbox.h"

#define ALLOW(name)		{ .syscall = name }
#define ALLOW_ARG(name, i, v) \
	{ .syscall = name, .op = SB_EQ, .arg = i, .value = (unsigned long)(v) }
#define ALLOW_MASK(name, i, m, v) \
	{ .syscall = name, .op = SB_MASKED_EQ, .arg = i, \
	  .mask = (unsigned long)(m), .value = (unsigned long)(v) }
#define ALLOW_ARGS(name, i, v, j, w) \
	{ .syscall = name, .op = SB_EQ, .arg = i, .value = (unsigned long)(v), \
	  .arg2 = j, .has_arg2 = true, .value2 = (unsigned long)(w) }
#define DENY(name, e)		{ .syscall = name, .errno_ret = e }
#define POLICY(tab)	{ tab, sizeof(tab) / sizeof(tab[0]) }

/* Flags that make an open write or create anything. */
#define OPEN_WRITE_FLAGS	(O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND | \
				 __O_TMPFILE)

static const struct sb_rule common_rules[] = {
	/* memory */
	ALLOW("brk"), ALLOW("mmap"), ALLOW("munmap"), ALLOW("mremap"),
	ALLOW("madvise"), ALLOW("mprotect"),
	/* the event loop: epoll, timerfd, signalfd */
	ALLOW("epoll_wait"), ALLOW("epoll_pwait"), ALLOW("epoll_ctl"),
	ALLOW("timerfd_settime"), ALLOW("timerfd_gettime"),
	ALLOW("rt_sigprocmask"), ALLOW("rt_sigreturn"),
	ALLOW("restart_syscall"),
	/* descriptors we already hold: the socketpair, stderr */
	ALLOW("read"), ALLOW("write"), ALLOW("readv"), ALLOW("writev"),
	ALLOW("close"), ALLOW("fcntl"), ALLOW("fstat"), ALLOW("newfstatat"),
	ALLOW("lseek"),
	ALLOW("sendmsg"), ALLOW("recvmsg"), ALLOW("sendto"), ALLOW("recvfrom"),
	/* time, identity, randomness */
	ALLOW("clock_gettime"), ALLOW("gettimeofday"), ALLOW("getpid"),
	ALLOW("gettid"), ALLOW("getrandom"), ALLOW("futex"),
	ALLOW("getuid"), ALLOW("geteuid"), ALLOW("getgid"), ALLOW("getegid"),
	/* leaving: exit, and abort()'s raise */
	ALLOW("exit"), ALLOW("exit_group"), ALLOW("tgkill"),
	ALLOW("rt_sigaction"),
};

static const struct sb_rule broker_rules[] = {
	/* clients on the unix sockets created before the drop */
	ALLOW("accept4"), ALLOW("getsockopt"), ALLOW("shutdown"),
	/* the checkpoint in the state directory: temp file, fsync, rename */
	ALLOW("openat"), ALLOW("fsync"), ALLOW("fdatasync"),
	ALLOW("ftruncate"), ALLOW("rename"), ALLOW("renameat"),
	ALLOW("renameat2"), ALLOW("unlink"), ALLOW("unlinkat"),
	/* the children: terminate and reap */
	ALLOW("kill"), ALLOW("wait4"), ALLOW("waitid"),
};

static const struct sb_rule netd_rules[] = {
	/* netlink only.  Both netlink sockets (requests, link events) and
	 * the socketpair are open before the drop and libnl then only sends
	 * and receives on them (common list); a new socket may only be
	 * another netlink one, which gives nothing the open ones don't.
	 * No bind, setsockopt or getsockname after start. */
	ALLOW_ARG("socket", 0, AF_NETLINK), ALLOW("getsockopt"),
};

static const struct sb_rule cloudd_rules[] = {
	/* inet sockets for the cloud's endpoints */
	ALLOW_ARG("socket", 0, AF_INET), ALLOW_ARG("socket", 0, AF_INET6),
	/* the resolver: nscd and syslog over unix, getaddrinfo's address
	 * check over NETLINK_ROUTE (changing routes needs a capability
	 * cloudd does not have) */
	ALLOW_ARG("socket", 0, AF_UNIX),
	ALLOW_ARGS("socket", 0, AF_NETLINK, 2, NETLINK_ROUTE),
	ALLOW("connect"), ALLOW("bind"), ALLOW("getsockname"),
	ALLOW("getpeername"), ALLOW("setsockopt"), ALLOW("getsockopt"),
	ALLOW("sendmmsg"), ALLOW("recvmmsg"), ALLOW("shutdown"),
	ALLOW("poll"), ALLOW("ppoll"), ALLOW("pipe2"), ALLOW("socketpair"),
	ALLOW("uname"), ALLOW("pread64"), ALLOW("statx"),
	ALLOW("stat"), ALLOW("sysinfo"),
	ALLOW_ARG("ioctl", 1, FIONREAD), ALLOW_ARG("ioctl", 1, FIONBIO),
	/* resolver config, CA bundle: read-only opens, never writes */
	ALLOW_MASK("openat", 2, OPEN_WRITE_FLAGS, O_RDONLY),
	ALLOW_MASK("open", 1, OPEN_WRITE_FLAGS, O_RDONLY),
	/* libcurl's threaded resolver: threads only (CLONE_THREAD), and
	 * clone3 refused so glibc falls back to clone */
	ALLOW_MASK("clone", 0, CLONE_THREAD, CLONE_THREAD),
	DENY("clone3", ENOSYS),
	ALLOW("set_robust_list"), ALLOW("rseq"), ALLOW("sched_getaffinity"),
	ALLOW("sched_yield"),
};

/* Only when logging to syslog: glibc reconnects to /dev/log after
 * syslogd restarts. */
static const struct sb_rule syslog_rules[] = {
	ALLOW_ARG("socket", 0, AF_UNIX), ALLOW("connect"),
};

#ifdef ENID_SANITIZERS
/* ASan/UBSan runtimes: reports read /proc/self/maps and use an alternate
 * signal stack; none of this writes files. */
static const struct sb_rule sanitizer_rules[] = {
	ALLOW("sigaltstack"), ALLOW("readlink"), ALLOW("readlinkat"),
	ALLOW_MASK("openat", 2, OPEN_WRITE_FLAGS, O_RDONLY),
	ALLOW("prlimit64"), ALLOW("getrlimit"), ALLOW("sched_yield"),
	ALLOW("uname"), ALLOW("pread64"), ALLOW("sched_getaffinity"),
	ALLOW("clock_getres"), ALLOW("getppid"), ALLOW("prctl"),
	ALLOW("getdents64"),
};
#else
static const struct sb_rule sanitizer_rules[] = {
	ALLOW("exit_group"),	/* a list may not be empty */
};
#endif

static const struct sb_policy policies[SANDBOX_PROC_COUNT] = {
	[SANDBOX_BROKER] = POLICY(broker_rules),
	[SANDBOX_NETD] = POLICY(netd_rules),
	[SANDBOX_CLOUDD] = POLICY(cloudd_rules),
};

static const struct sb_policy common_policy = POLICY(common_rules);
static const struct sb_policy sanitizer_policy = POLICY(sanitizer_rules);
static const struct sb_policy syslog_policy = POLICY(syslog_rules);

const struct sb_policy *
sandbox_policy_syslog(void)
{
	return &syslog_policy;
}

const struct sb_policy *
sandbox_policy(enum sandbox_proc proc)
{
	return &policies[proc];
}

const struct sb_policy *
sandbox_policy_common(void)
{
	return &common_policy;
}

const struct sb_policy *
sandbox_policy_sanitizer(void)
{
	return &sanitizer_policy;
}
