/*
 * The process sandbox, applied for real in forked children: each process's
 * seccomp filter (sandbox_load, exactly as the daemons load it) kills a
 * forbidden call with SIGSYS or refuses it with its errno, and the calls
 * each process needs still get through to the kernel (so the test can tell
 * a filter that kills everything from a good one).  Also the child start-up
 * in proc_spawn: the socketpair on descriptor 3 and nothing else inherited,
 * with or without close_range.  Runs without root: no_new_privs is enough
 * to load a filter.
 */
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <linux/netlink.h>

#include <cmocka.h>
#include <seccomp.h>

#include "log.h"
#include "msg.h"
#include "proc.h"
#include "sandbox.h"

/* A probe's exit status: 0 if the call succeeded, PROBE_ERR + errno if
 * the kernel (or a refusing rule) said no. */
#define PROBE_ERR	64

enum probe {
	PROBE_SOCKET_INET,
	PROBE_SOCKET_INET6,
	PROBE_SOCKET_NETLINK_ROUTE,
	PROBE_SOCKET_NETLINK_NETFILTER,
	PROBE_SOCKET_NETLINK_XFRM,
	PROBE_SOCKET_NETLINK_GENERIC,
	PROBE_SOCKET_UNIX,
	PROBE_SOCKETPAIR_UNIX,
	PROBE_OPEN_WRITE,
	PROBE_OPEN_CREATE,
	PROBE_OPEN_READ,
	PROBE_EXECVE,
	PROBE_PTRACE,
	PROBE_FORK,
	PROBE_THREAD,
	PROBE_CLONE_THREAD,
	PROBE_CLONE_NAMESPACE,
	PROBE_CLONE3,
	PROBE_MMAP_RW,
	PROBE_MMAP_EXEC,
	PROBE_MPROTECT_EXEC,
	PROBE_KILL_OTHER,
	PROBE_TKILL_OTHER,
	PROBE_TGKILL_OTHER,
	PROBE_RAISE_SELF,
	PROBE_ABORT,
	PROBE_SETSOCKOPT_KEEPALIVE,
	PROBE_SETSOCKOPT_NODELAY,
	PROBE_SETSOCKOPT_RECVERR,
	PROBE_SETSOCKOPT_BROADCAST,
	PROBE_SETSOCKOPT_NETLINK_MEMBERSHIP,
	PROBE_FCNTL_GETFL,
	PROBE_FCNTL_SETFL,
	PROBE_FCNTL_SETOWN,
	PROBE_FCNTL_DUPFD,
	PROBE_IOCTL_FIONREAD,
	PROBE_IOCTL_TIOCSTI,
	PROBE_SYSLOG_RECONNECT,
	PROBE_RESOLVE_LOCALHOST,
	PROBE_QSORT_4K,
	PROBE_PWRITE,
};

static const char *const probe_names[] = {
	[PROBE_SOCKET_INET] = "socket(AF_INET)",
	[PROBE_SOCKET_INET6] = "socket(AF_INET6)",
	[PROBE_SOCKET_NETLINK_ROUTE] = "socket(NETLINK_ROUTE)",
	[PROBE_SOCKET_NETLINK_NETFILTER] = "socket(NETLINK_NETFILTER)",
	[PROBE_SOCKET_NETLINK_XFRM] = "socket(NETLINK_XFRM)",
	[PROBE_SOCKET_NETLINK_GENERIC] = "socket(NETLINK_GENERIC)",
	[PROBE_SOCKET_UNIX] = "socket(AF_UNIX)",
	[PROBE_SOCKETPAIR_UNIX] = "socketpair(AF_UNIX)",
	[PROBE_OPEN_WRITE] = "open(O_WRONLY)",
	[PROBE_OPEN_CREATE] = "open(O_CREAT)",
	[PROBE_OPEN_READ] = "open(O_RDONLY)",
	[PROBE_EXECVE] = "execve",
	[PROBE_PTRACE] = "ptrace",
	[PROBE_FORK] = "fork",
	[PROBE_THREAD] = "pthread_create",
	[PROBE_CLONE_THREAD] = "clone(thread flags)",
	[PROBE_CLONE_NAMESPACE] = "clone(thread flags|CLONE_NEW*)",
	[PROBE_CLONE3] = "clone3",
	[PROBE_MMAP_RW] = "mmap(PROT_READ|PROT_WRITE)",
	[PROBE_MMAP_EXEC] = "mmap(PROT_EXEC)",
	[PROBE_MPROTECT_EXEC] = "mprotect(PROT_EXEC)",
	[PROBE_KILL_OTHER] = "kill(other)",
	[PROBE_TKILL_OTHER] = "tkill(other)",
	[PROBE_TGKILL_OTHER] = "tgkill(other)",
	[PROBE_RAISE_SELF] = "raise(SIGCONT)",
	[PROBE_ABORT] = "abort",
	[PROBE_SETSOCKOPT_KEEPALIVE] = "setsockopt(SO_KEEPALIVE)",
	[PROBE_SETSOCKOPT_NODELAY] = "setsockopt(TCP_NODELAY)",
	[PROBE_SETSOCKOPT_RECVERR] = "setsockopt(IP_RECVERR)",
	[PROBE_SETSOCKOPT_BROADCAST] = "setsockopt(SO_BROADCAST)",
	[PROBE_SETSOCKOPT_NETLINK_MEMBERSHIP] =
	    "setsockopt(NETLINK_ADD_MEMBERSHIP)",
	[PROBE_FCNTL_GETFL] = "fcntl(F_GETFL)",
	[PROBE_FCNTL_SETFL] = "fcntl(F_SETFL)",
	[PROBE_FCNTL_SETOWN] = "fcntl(F_SETOWN)",
	[PROBE_FCNTL_DUPFD] = "fcntl(F_DUPFD)",
	[PROBE_IOCTL_FIONREAD] = "ioctl(FIONREAD)",
	[PROBE_IOCTL_TIOCSTI] = "ioctl(TIOCSTI)",
	[PROBE_SYSLOG_RECONNECT] = "syslog reconnect",
	[PROBE_RESOLVE_LOCALHOST] = "getaddrinfo(localhost)",
	[PROBE_QSORT_4K] = "qsort(4 KiB)",
	[PROBE_PWRITE] = "pwrite",
};

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static int
probe_result(long rc)
{
	return rc >= 0 ? 0 : PROBE_ERR + (errno & 0x7f);
}

static void *
thread_main(void *arg)
{
	return arg;
}

/* The namespace flag PROBE_CLONE_NAMESPACE adds. */
static unsigned long probe_nsflag;

/*
 * A thread clone that the kernel refuses before it makes anything, if the
 * filter lets it through (the legacy clone's CLONE_PIDFD and
 * CLONE_PARENT_SETTID share one pointer: EINVAL), so that a broken filter
 * fails the test instead of starting a stackless thread.  Neither flag is
 * one the filter looks at.
 */
static long
clone_thread_with(unsigned long nsflags)
{
	return syscall(SYS_clone, CLONE_VM | CLONE_SIGHAND | CLONE_THREAD |
	    CLONE_PIDFD | CLONE_PARENT_SETTID | nsflags, NULL, NULL, NULL, 0);
}

/* Run probe p; other is a process that is not us. */
static int
run_probe(enum probe p, pid_t other)
{
	char *argv[] = { "/bin/true", NULL };
	int one = 1, sv[2];
	unsigned char clone3_args[88];
	struct addrinfo hints, *res;
	pthread_t t;
	void *m;
	int n;

	switch (p) {
	case PROBE_SOCKET_INET:
		return probe_result(socket(AF_INET, SOCK_STREAM, 0));
	case PROBE_SOCKET_INET6:
		return probe_result(socket(AF_INET6, SOCK_DGRAM, 0));
	case PROBE_SOCKET_NETLINK_ROUTE:
		return probe_result(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC,
		    NETLINK_ROUTE));
	case PROBE_SOCKET_NETLINK_NETFILTER:
		return probe_result(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC,
		    NETLINK_NETFILTER));
	case PROBE_SOCKET_NETLINK_XFRM:
		return probe_result(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC,
		    NETLINK_XFRM));
	case PROBE_SOCKET_NETLINK_GENERIC:
		return probe_result(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC,
		    NETLINK_GENERIC));
	case PROBE_SOCKET_UNIX:
		return probe_result(socket(AF_UNIX, SOCK_STREAM, 0));
	case PROBE_SOCKETPAIR_UNIX:
		return probe_result(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	case PROBE_OPEN_WRITE:
		return probe_result(open("/dev/null", O_WRONLY));
	case PROBE_OPEN_CREATE:
		return probe_result(open("/tmp/enid-sandbox-probe",
		    O_RDONLY | O_CREAT, 0600));
	case PROBE_OPEN_READ:
		return probe_result(open("/etc/hostname", O_RDONLY));
	case PROBE_EXECVE:
		execve(argv[0], argv, NULL);
		return probe_result(-1);
	case PROBE_PTRACE:
		return probe_result(ptrace(PTRACE_TRACEME, 0, NULL, NULL));
	case PROBE_FORK:
		return probe_result(fork());
	case PROBE_THREAD:
		if ((n = pthread_create(&t, NULL, thread_main, NULL)) != 0) {
			errno = n;
			return probe_result(-1);
		}
		return probe_result(pthread_join(t, NULL) == 0 ? 0 : -1);
	case PROBE_CLONE_THREAD:
		return probe_result(clone_thread_with(0));
	case PROBE_CLONE_NAMESPACE:
		return probe_result(clone_thread_with(probe_nsflag));
	case PROBE_CLONE3:
		/* Zeroed arguments: if it ran, it would fork. */
		memset(clone3_args, 0, sizeof(clone3_args));
		return probe_result(syscall(SYS_clone3, clone3_args,
		    sizeof(clone3_args)));
	case PROBE_MMAP_RW:
		m = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		return probe_result(m == MAP_FAILED ? -1 : 0);
	case PROBE_MMAP_EXEC:
		m = mmap(NULL, 4096, PROT_READ | PROT_EXEC,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		return probe_result(m == MAP_FAILED ? -1 : 0);
	case PROBE_MPROTECT_EXEC:
		m = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return 3;
		return probe_result(mprotect(m, 4096, PROT_READ | PROT_EXEC));
	/* SIGCONT: harmless to the test runner if a broken filter let it
	 * through, and the probe then fails on its exit status. */
	case PROBE_KILL_OTHER:
		return probe_result(kill(other, SIGCONT));
	case PROBE_TKILL_OTHER:
		return probe_result(syscall(SYS_tkill, other, SIGCONT));
	case PROBE_TGKILL_OTHER:
		return probe_result(syscall(SYS_tgkill, other, other, SIGCONT));
	case PROBE_RAISE_SELF:
		return probe_result(raise(SIGCONT));
	case PROBE_ABORT:
		abort();
	/* Options and commands on descriptor -1: what passes the filter
	 * reaches the kernel and gets EBADF. */
	case PROBE_SETSOCKOPT_KEEPALIVE:
		return probe_result(setsockopt(-1, SOL_SOCKET, SO_KEEPALIVE,
		    &one, sizeof(one)));
	case PROBE_SETSOCKOPT_NODELAY:
		return probe_result(setsockopt(-1, IPPROTO_TCP, TCP_NODELAY,
		    &one, sizeof(one)));
	case PROBE_SETSOCKOPT_RECVERR:
		return probe_result(setsockopt(-1, IPPROTO_IP, IP_RECVERR,
		    &one, sizeof(one)));
	case PROBE_SETSOCKOPT_BROADCAST:
		return probe_result(setsockopt(-1, SOL_SOCKET, SO_BROADCAST,
		    &one, sizeof(one)));
	case PROBE_SETSOCKOPT_NETLINK_MEMBERSHIP:
		return probe_result(setsockopt(-1, SOL_NETLINK,
		    NETLINK_ADD_MEMBERSHIP, &one, sizeof(one)));
	case PROBE_FCNTL_GETFL:
		return probe_result(fcntl(-1, F_GETFL));
	case PROBE_FCNTL_SETFL:
		return probe_result(fcntl(-1, F_SETFL, O_NONBLOCK));
	case PROBE_FCNTL_SETOWN:
		/* SIGIO to another process: a signal by another route. */
		return probe_result(fcntl(-1, F_SETOWN, other));
	case PROBE_FCNTL_DUPFD:
		return probe_result(fcntl(-1, F_DUPFD, 100));
	case PROBE_IOCTL_FIONREAD:
		return probe_result(ioctl(-1, FIONREAD, &n));
	case PROBE_IOCTL_TIOCSTI:
		return probe_result(ioctl(-1, TIOCSTI, "x"));
	case PROBE_SYSLOG_RECONNECT:
		/* As after syslogd went away: glibc opens a new socket for
		 * the next line.  Refused, the line is dropped; the process
		 * must live on. */
		closelog();
		syslog(LOG_INFO, "enid test_sandbox: this line is dropped");
		return 0;
	case PROBE_RESOLVE_LOCALHOST:
		/* The resolver under the filter: nscd refused (a unix
		 * socket), the files service answers. */
		memset(&hints, 0, sizeof(hints));
		hints.ai_family = AF_UNSPEC;
		hints.ai_socktype = SOCK_STREAM;
		if ((n = getaddrinfo("localhost", "80", &hints, &res)) != 0)
			return 3;
		freeaddrinfo(res);
		return 0;
	case PROBE_QSORT_4K: {
		/* The first sort of more than 1 KiB in a process: glibc asks
		 * sysinfo how much memory there is (checkpoint_format sorts
		 * the pods and their addresses). */
		static uint32_t v[1024];
		size_t i;

		for (i = 0; i < 1024; i++)
			v[i] = (uint32_t)((i * 2654435761u) >> 7);
		qsort(v, 1024, sizeof(v[0]), cmp_u32);
		for (i = 1; i < 1024; i++)
			if (v[i - 1] > v[i])
				return 5;
		return 0;
	}
	case PROBE_PWRITE:
		return probe_result((int)pwrite(-1, "x", 1, 0));
	}
	return 4;
}

/*
 * Fork; in the child load proc's filter (with children as the broker's
 * signal targets) and try the probe.  Returns the wait status.
 */
static int
sandboxed_with(enum sandbox_proc proc, enum probe p, const pid_t *children,
    size_t nchildren, pid_t other)
{
	char err[256];
	int status;
	pid_t pid;

	if (other == 0)
		other = getpid();	/* the test runner */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
			_exit(10);
		/* As every process does before its filter goes on: read
		 * the time zone once (log_init), and for cloudd load the
		 * resolver. */
		tzset();
		if (proc == SANDBOX_CLOUDD)
			(void)sandbox_warm_resolver("http://localhost/");
		if (sandbox_load(proc, false, children, nchildren, err,
		    sizeof(err)) == -1) {
			fprintf(stderr, "sandbox_load: %s\n", err);
			_exit(11);
		}
		_exit(run_probe(p, other));
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static int
sandboxed(enum sandbox_proc proc, enum probe p)
{
	return sandboxed_with(proc, p, NULL, 0, 0);
}

static void
describe(int st, char *buf, size_t len)
{
	if (WIFSIGNALED(st))
		snprintf(buf, len, "death by signal %d", WTERMSIG(st));
	else if (WEXITSTATUS(st) == 0)
		snprintf(buf, len, "success");
	else if (WEXITSTATUS(st) >= PROBE_ERR)
		snprintf(buf, len, "error %s",
		    strerror(WEXITSTATUS(st) - PROBE_ERR));
	else
		snprintf(buf, len, "exit %d", WEXITSTATUS(st));
}

static void
check_status(int st, enum sandbox_proc proc, enum probe p, bool killed_by,
    int sig, int code, const char *expected)
{
	char got[64];

	if (killed_by ? (WIFSIGNALED(st) && WTERMSIG(st) == sig) :
	    (WIFEXITED(st) && WEXITSTATUS(st) == code))
		return;
	describe(st, got, sizeof(got));
	fail_msg("%s, %s: expected %s, got %s", sandbox_proc_name(proc),
	    probe_names[p], expected, got);
}

/* The filter kills the call. */
static void
expect_killed(enum sandbox_proc proc, enum probe p)
{
	check_status(sandboxed(proc, p), proc, p, true, SIGSYS, 0,
	    "death by SIGSYS");
}

/* The filter lets the call through and it succeeds. */
static void
expect_allowed(enum sandbox_proc proc, enum probe p)
{
	check_status(sandboxed(proc, p), proc, p, false, 0, 0, "success");
}

/* The call fails with e: refused by a rule, or (EBADF on descriptor -1)
 * let through to the kernel. */
static void
expect_errno(enum sandbox_proc proc, enum probe p, int e)
{
	char want[64];

	snprintf(want, sizeof(want), "error %s", strerror(e));
	check_status(sandboxed(proc, p), proc, p, false, 0, PROBE_ERR + e,
	    want);
}

/* ---- what every process is refused ---- */

static void
test_every_filter(void **state)
{
	enum sandbox_proc proc;

	(void)state;
	for (proc = 0; proc < SANDBOX_PROC_COUNT; proc++) {
		expect_killed(proc, PROBE_EXECVE);
		expect_killed(proc, PROBE_PTRACE);
		expect_killed(proc, PROBE_FORK);
		probe_nsflag = CLONE_NEWNET;
		expect_killed(proc, PROBE_CLONE_NAMESPACE);
		expect_killed(proc, PROBE_SOCKET_NETLINK_NETFILTER);
		expect_killed(proc, PROBE_SOCKET_NETLINK_XFRM);
		expect_killed(proc, PROBE_SOCKET_NETLINK_GENERIC);
		/* No new code: nothing executable is mapped after start. */
		expect_killed(proc, PROBE_MMAP_EXEC);
		expect_killed(proc, PROBE_MPROTECT_EXEC);
		expect_allowed(proc, PROBE_MMAP_RW);
		/* Signals: to the process itself only. */
		expect_killed(proc, PROBE_KILL_OTHER);
		expect_killed(proc, PROBE_TKILL_OTHER);
		expect_killed(proc, PROBE_TGKILL_OTHER);
		expect_killed(proc, PROBE_FCNTL_SETOWN);
		expect_allowed(proc, PROBE_RAISE_SELF);
		check_status(sandboxed(proc, PROBE_ABORT), proc, PROBE_ABORT,
		    true, SIGABRT, 0, "death by SIGABRT");
		/* A unix socket is refused, not fatal: syslog's reconnect
		 * and nscd cope. */
		expect_errno(proc, PROBE_SOCKET_UNIX, EACCES);
		expect_allowed(proc, PROBE_SYSLOG_RECONNECT);
		/* Options, commands and requests outside the tables. */
		expect_killed(proc, PROBE_SETSOCKOPT_BROADCAST);
		expect_killed(proc, PROBE_SETSOCKOPT_NETLINK_MEMBERSHIP);
		expect_killed(proc, PROBE_FCNTL_DUPFD);
		expect_killed(proc, PROBE_IOCTL_TIOCSTI);
	}
}

static const unsigned long nsflags[] = { CLONE_NEWNS, CLONE_NEWCGROUP,
    CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET };

/*
 * A process that may start threads and nothing else: clone3 refused with
 * ENOSYS (glibc falls back to clone), thread flags let through (to the
 * kernel's EINVAL, see clone_thread_with), and any namespace flag with
 * them kills.
 */
static void
expect_threads_only(enum sandbox_proc proc)
{
	size_t i;

	expect_errno(proc, PROBE_CLONE3, ENOSYS);
	expect_errno(proc, PROBE_CLONE_THREAD, EINVAL);
	for (i = 0; i < sizeof(nsflags) / sizeof(nsflags[0]); i++) {
		probe_nsflag = nsflags[i];
		expect_killed(proc, PROBE_CLONE_NAMESPACE);
	}
}

static void
test_broker(void **state)
{
	(void)state;
	expect_killed(SANDBOX_BROKER, PROBE_SOCKET_INET);
	expect_killed(SANDBOX_BROKER, PROBE_SOCKET_INET6);
	expect_killed(SANDBOX_BROKER, PROBE_SOCKET_NETLINK_ROUTE);
	expect_killed(SANDBOX_BROKER, PROBE_SOCKETPAIR_UNIX);
	expect_killed(SANDBOX_BROKER, PROBE_SETSOCKOPT_KEEPALIVE);
	expect_killed(SANDBOX_BROKER, PROBE_FCNTL_GETFL);
	expect_killed(SANDBOX_BROKER, PROBE_FCNTL_SETFL);
	expect_killed(SANDBOX_BROKER, PROBE_IOCTL_FIONREAD);
	/* It writes its checkpoint, sorting the pods to check it. */
	expect_allowed(SANDBOX_BROKER, PROBE_OPEN_WRITE);
	expect_allowed(SANDBOX_BROKER, PROBE_QSORT_4K);
	/* and its journal's records (EBADF on descriptor -1), from its
	 * writer thread: a thread through glibc's clone fallback, never a
	 * process or a namespace */
	expect_errno(SANDBOX_BROKER, PROBE_PWRITE, EBADF);
	expect_allowed(SANDBOX_BROKER, PROBE_THREAD);
	expect_threads_only(SANDBOX_BROKER);
}

static void
test_netd(void **state)
{
	(void)state;
	expect_killed(SANDBOX_NETD, PROBE_SOCKET_INET);
	expect_killed(SANDBOX_NETD, PROBE_SOCKET_INET6);
	expect_killed(SANDBOX_NETD, PROBE_SOCKET_NETLINK_NETFILTER);
	expect_killed(SANDBOX_NETD, PROBE_SOCKETPAIR_UNIX);
	expect_killed(SANDBOX_NETD, PROBE_OPEN_WRITE);
	expect_killed(SANDBOX_NETD, PROBE_PWRITE);
	expect_killed(SANDBOX_NETD, PROBE_THREAD);
	expect_killed(SANDBOX_NETD, PROBE_CLONE_THREAD);
	expect_killed(SANDBOX_NETD, PROBE_SETSOCKOPT_KEEPALIVE);
	expect_killed(SANDBOX_NETD, PROBE_FCNTL_GETFL);
	expect_killed(SANDBOX_NETD, PROBE_IOCTL_FIONREAD);
	expect_allowed(SANDBOX_NETD, PROBE_SOCKET_NETLINK_ROUTE);
}

static void
test_cloudd(void **state)
{
	(void)state;
	expect_killed(SANDBOX_CLOUDD, PROBE_OPEN_WRITE);
	expect_killed(SANDBOX_CLOUDD, PROBE_PWRITE);
	expect_killed(SANDBOX_CLOUDD, PROBE_OPEN_CREATE);
	expect_killed(SANDBOX_CLOUDD, PROBE_SOCKET_NETLINK_NETFILTER);
	expect_threads_only(SANDBOX_CLOUDD);
	expect_allowed(SANDBOX_CLOUDD, PROBE_SOCKET_INET);
	expect_allowed(SANDBOX_CLOUDD, PROBE_SOCKET_INET6);
	expect_allowed(SANDBOX_CLOUDD, PROBE_SOCKET_NETLINK_ROUTE);
	expect_allowed(SANDBOX_CLOUDD, PROBE_SOCKETPAIR_UNIX);
	expect_allowed(SANDBOX_CLOUDD, PROBE_OPEN_READ);
	/* libcurl's threaded resolver, through glibc's clone fallback */
	expect_allowed(SANDBOX_CLOUDD, PROBE_THREAD);
	expect_allowed(SANDBOX_CLOUDD, PROBE_RESOLVE_LOCALHOST);
	/* the tables: through to the kernel (EBADF on descriptor -1) */
	expect_errno(SANDBOX_CLOUDD, PROBE_SETSOCKOPT_KEEPALIVE, EBADF);
	expect_errno(SANDBOX_CLOUDD, PROBE_SETSOCKOPT_NODELAY, EBADF);
	expect_errno(SANDBOX_CLOUDD, PROBE_SETSOCKOPT_RECVERR, EBADF);
	expect_errno(SANDBOX_CLOUDD, PROBE_FCNTL_GETFL, EBADF);
	expect_errno(SANDBOX_CLOUDD, PROBE_FCNTL_SETFL, EBADF);
	expect_errno(SANDBOX_CLOUDD, PROBE_IOCTL_FIONREAD, EBADF);
}

/* The broker may end its children, with SIGTERM or SIGKILL, and signal no
 * one else. */
static void
test_broker_signals_its_children_only(void **state)
{
	pid_t kids[2], stranger;
	int st, i;

	(void)state;
	for (i = 0; i < 2; i++) {
		kids[i] = fork();
		assert_true(kids[i] >= 0);
		if (kids[i] == 0) {
			pause();
			_exit(0);
		}
	}
	stranger = fork();
	assert_true(stranger >= 0);
	if (stranger == 0) {
		pause();
		_exit(0);
	}

	/* Another signal to a child: refused. */
	st = sandboxed_with(SANDBOX_BROKER, PROBE_KILL_OTHER, kids, 2,
	    kids[0]);
	check_status(st, SANDBOX_BROKER, PROBE_KILL_OTHER, true, SIGSYS, 0,
	    "death by SIGSYS for SIGCONT to a child");
	/* Any signal to a process that is not a child: refused. */
	st = sandboxed_with(SANDBOX_BROKER, PROBE_KILL_OTHER, kids, 2,
	    stranger);
	check_status(st, SANDBOX_BROKER, PROBE_KILL_OTHER, true, SIGSYS, 0,
	    "death by SIGSYS for a signal to a stranger");

	/* SIGTERM and SIGKILL to the children: through.  From a sandboxed
	 * fork of the test, standing in for the broker. */
	for (i = 0; i < 2; i++) {
		char err[256];
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0) {
			if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 ||
			    sandbox_load(SANDBOX_BROKER, false, kids, 2, err,
			    sizeof(err)) == -1)
				_exit(11);
			_exit(kill(kids[i], i == 0 ? SIGTERM : SIGKILL) == 0 ?
			    0 : 1);
		}
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
		assert_int_equal(waitpid(kids[i], &st, 0), kids[i]);
		assert_true(WIFSIGNALED(st));
		assert_int_equal(WTERMSIG(st), i == 0 ? SIGTERM : SIGKILL);
	}
	kill(stranger, SIGKILL);
	assert_int_equal(waitpid(stranger, &st, 0), stranger);
}

/* A child pid of 0 or less would name a process group: refused. */
static void
test_bad_child_pid_refused(void **state)
{
	char err[256];
	pid_t kids[1] = { 0 };
	int st;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
			_exit(10);
		if (sandbox_load(SANDBOX_BROKER, false, kids, 1, err,
		    sizeof(err)) == 0)
			_exit(1);
		_exit(strstr(err, "child pid 0") != NULL ? 0 : 2);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void
test_debug_mode_reports(void **state)
{
	int pipefd[2], status;
	char buf[256] = { 0 }, err[256];
	ssize_t n;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(pipefd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(pipefd[1], STDERR_FILENO);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 ||
		    sandbox_load(SANDBOX_CLOUDD, true, NULL, 0, err,
		    sizeof(err)) == -1)
			_exit(11);
		_exit(run_probe(PROBE_SETSOCKOPT_BROADCAST, 0));
	}
	close(pipefd[1]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	n = read(pipefd[0], buf, sizeof(buf) - 1);
	close(pipefd[0]);
	assert_true(n > 0);
	assert_non_null(strstr(buf, "refused system call setsockopt"));
#if defined(__x86_64__)
	/* the arguments the rule looked at: fd -1 (an int: the upper half
	 * of the register is clear), SOL_SOCKET, SO_BROADCAST */
	{
		char want[64];

		snprintf(want, sizeof(want), "args 0xffffffff 0x%x 0x%x ",
		    SOL_SOCKET, SO_BROADCAST);
		if (strstr(buf, want) == NULL)
			fail_msg("no \"%s\" in \"%s\"", want, buf);
	}
#endif
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 128 + SIGSYS);
}

/* ---- proc_spawn ---- */

/*
 * In a fork: prepare with setup, spawn /bin/sh -c script with proc_spawn,
 * and exit with the script's status (or 100 + the step that failed).
 * Returns the fork's wait status.
 */
static int
spawn_in_fork(void (*setup)(void), const char *script)
{
	char *argv[] = { "sh", "-c", (char *)script, NULL };
	char *envp[] = { "PATH=/usr/bin:/bin", NULL };
	int st, fd;
	pid_t pid, child;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		log_init("test_sandbox", true, LOG_LVL_INFO);
		if (setup != NULL)
			setup();
		if ((child = proc_spawn("/bin/sh", argv, envp, &fd)) == -1)
			_exit(101);
		if (waitpid(child, &st, 0) != child)
			_exit(102);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 103);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return st;
}

static void
expect_spawn_status(int st, int code, const char *what)
{
	if (!WIFEXITED(st) || WEXITSTATUS(st) != code)
		fail_msg("%s: expected exit %d, got %s %d", what, code,
		    WIFEXITED(st) ? "exit" : "signal",
		    WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

/* A descriptor the spawned program must not inherit. */
static void
leak_fd9(void)
{
	if (dup2(STDERR_FILENO, 9) == -1)
		_exit(104);
}

/* close_range as an old kernel has it: missing. */
static void
no_close_range(void)
{
	scmp_filter_ctx ctx;

	leak_fd9();
	if ((ctx = seccomp_init(SCMP_ACT_ALLOW)) == NULL ||
	    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS),
	    SCMP_SYS(close_range), 0) < 0 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 ||
	    seccomp_load(ctx) < 0)
		_exit(105);
	seccomp_release(ctx);
	/* the fallback really is needed now */
	if (close_range(20, 30, 0) == 0 || errno != ENOSYS)
		_exit(106);
}

/* Lowest descriptors free so that the child's end of the socketpair is
 * created as descriptor 3 itself. */
static void
pair_end_on_3(void)
{
	int fd;

	for (fd = 3; fd < 64; fd++)
		(void)close(fd);
	if (close(STDIN_FILENO) == -1)
		_exit(107);
	/* socketpair now takes 0 and 3: ours on 0, the child's on 3 */
}

#define SCRIPT_FDS \
	"[ -S /proc/self/fd/3 ] || exit 3; [ -e /proc/self/fd/9 ] && exit 9; " \
	"exit 0"

static void
test_spawn_descriptors(void **state)
{
	(void)state;
	expect_spawn_status(spawn_in_fork(leak_fd9, SCRIPT_FDS), 0,
	    "socketpair on 3, descriptor 9 closed");
	expect_spawn_status(spawn_in_fork(no_close_range, SCRIPT_FDS), 0,
	    "without close_range");
	expect_spawn_status(spawn_in_fork(pair_end_on_3, SCRIPT_FDS), 0,
	    "child's end already on 3");
}

/* A child that cannot start says why on stderr and exits 127. */
static void
test_spawn_failure_reported(void **state)
{
	char *argv[] = { "enid-none", NULL };
	char *envp[] = { NULL };
	char buf[512] = { 0 };
	int pipefd[2], st, fd;
	ssize_t n;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(pipefd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(pipefd[1], STDERR_FILENO);
		close(pipefd[0]);
		close(pipefd[1]);
		log_init("test_sandbox", true, LOG_LVL_INFO);
		pid = proc_spawn("/nonexistent/enid-none", argv, envp, &fd);
		if (pid == -1 || waitpid(pid, &st, 0) != pid)
			_exit(101);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 103);
	}
	close(pipefd[1]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	n = read(pipefd[0], buf, sizeof(buf) - 1);
	close(pipefd[0]);
	expect_spawn_status(st, 127, "exec of a missing program");
	assert_true(n > 0);
	if (strstr(buf, "starting /nonexistent/enid-none: exec: No such file")
	    == NULL)
		fail_msg("no reason in \"%s\"", buf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_filter),
		cmocka_unit_test(test_broker),
		cmocka_unit_test(test_netd),
		cmocka_unit_test(test_cloudd),
		cmocka_unit_test(test_broker_signals_its_children_only),
		cmocka_unit_test(test_bad_child_pid_refused),
		cmocka_unit_test(test_debug_mode_reports),
		cmocka_unit_test(test_spawn_descriptors),
		cmocka_unit_test(test_spawn_failure_reported),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
