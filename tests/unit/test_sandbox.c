/*
 * The seccomp allow lists, applied for real in forked children: each
 * forbidden call kills with SIGSYS, and the calls each process needs still
 * work (so the test can tell a filter that kills everything from a good one).
 * Runs without root: no_new_privs is enough to load a filter.
 */
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/netlink.h>

#include <cmocka.h>

#include "sandbox.h"

enum probe {
	PROBE_SOCKET_INET,
	PROBE_SOCKET_INET6,
	PROBE_SOCKET_NETLINK,
	PROBE_OPEN_WRITE,
	PROBE_OPEN_CREATE,
	PROBE_OPEN_READ,
	PROBE_EXECVE,
	PROBE_PTRACE,
	PROBE_CLONE_PROCESS,
};

static int
run_probe(enum probe p)
{
	char *argv[] = { "/bin/true", NULL };
	int fd;

	switch (p) {
	case PROBE_SOCKET_INET:
		fd = socket(AF_INET, SOCK_STREAM, 0);
		return fd >= 0 ? 0 : 2;
	case PROBE_SOCKET_INET6:
		fd = socket(AF_INET6, SOCK_DGRAM, 0);
		return fd >= 0 ? 0 : 2;
	case PROBE_SOCKET_NETLINK:
		fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
		return fd >= 0 ? 0 : 2;
	case PROBE_OPEN_WRITE:
		fd = open("/dev/null", O_WRONLY);
		return fd >= 0 ? 0 : 2;
	case PROBE_OPEN_CREATE:
		fd = open("/tmp/enid-sandbox-probe", O_RDONLY | O_CREAT, 0600);
		return fd >= 0 ? 0 : 2;
	case PROBE_OPEN_READ:
		fd = open("/etc/hostname", O_RDONLY);
		return fd >= 0 ? 0 : 2;
	case PROBE_EXECVE:
		execve(argv[0], argv, NULL);
		return 3;
	case PROBE_PTRACE:
		return ptrace(PTRACE_TRACEME, 0, NULL, NULL) == 0 ? 0 : 2;
	case PROBE_CLONE_PROCESS:
		return fork() >= 0 ? 0 : 2;
	}
	return 4;
}

/* Fork; in the child load proc's filter and try the probe.  Returns the
 * wait status. */
static int
sandboxed(enum sandbox_proc proc, enum probe p)
{
	char err[256];
	int status;
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
			_exit(10);
		if (sandbox_load(proc, false, err, sizeof(err)) == -1) {
			fprintf(stderr, "sandbox_load: %s\n", err);
			_exit(11);
		}
		_exit(run_probe(p));
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static void
expect_killed(enum sandbox_proc proc, enum probe p)
{
	int st = sandboxed(proc, p);

	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSYS)
		fail_msg("%s, probe %d: expected death by SIGSYS, got %s %d",
		    sandbox_proc_name(proc), (int)p,
		    WIFSIGNALED(st) ? "signal" : "exit",
		    WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

static void
expect_allowed(enum sandbox_proc proc, enum probe p)
{
	int st = sandboxed(proc, p);

	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("%s, probe %d: expected success, got %s %d",
		    sandbox_proc_name(proc), (int)p,
		    WIFSIGNALED(st) ? "signal" : "exit",
		    WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

static void
test_broker(void **state)
{
	(void)state;
	expect_killed(SANDBOX_BROKER, PROBE_SOCKET_INET);
	expect_killed(SANDBOX_BROKER, PROBE_SOCKET_INET6);
	expect_killed(SANDBOX_BROKER, PROBE_SOCKET_NETLINK);
	expect_killed(SANDBOX_BROKER, PROBE_EXECVE);
	expect_killed(SANDBOX_BROKER, PROBE_PTRACE);
	expect_killed(SANDBOX_BROKER, PROBE_CLONE_PROCESS);
	/* It writes its checkpoint. */
	expect_allowed(SANDBOX_BROKER, PROBE_OPEN_WRITE);
}

static void
test_netd(void **state)
{
	(void)state;
	expect_killed(SANDBOX_NETD, PROBE_SOCKET_INET);
	expect_killed(SANDBOX_NETD, PROBE_SOCKET_INET6);
	expect_killed(SANDBOX_NETD, PROBE_OPEN_WRITE);
	expect_killed(SANDBOX_NETD, PROBE_EXECVE);
	expect_killed(SANDBOX_NETD, PROBE_CLONE_PROCESS);
	expect_allowed(SANDBOX_NETD, PROBE_SOCKET_NETLINK);
}

static void
test_cloudd(void **state)
{
	(void)state;
	expect_killed(SANDBOX_CLOUDD, PROBE_OPEN_WRITE);
	expect_killed(SANDBOX_CLOUDD, PROBE_OPEN_CREATE);
	expect_killed(SANDBOX_CLOUDD, PROBE_EXECVE);
	expect_killed(SANDBOX_CLOUDD, PROBE_PTRACE);
	expect_killed(SANDBOX_CLOUDD, PROBE_CLONE_PROCESS);
	expect_allowed(SANDBOX_CLOUDD, PROBE_SOCKET_INET);
	expect_allowed(SANDBOX_CLOUDD, PROBE_SOCKET_INET6);
	expect_allowed(SANDBOX_CLOUDD, PROBE_OPEN_READ);
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
		    sandbox_load(SANDBOX_NETD, true, err, sizeof(err)) == -1)
			_exit(11);
		_exit(run_probe(PROBE_SOCKET_INET));
	}
	close(pipefd[1]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	n = read(pipefd[0], buf, sizeof(buf) - 1);
	close(pipefd[0]);
	assert_true(n > 0);
	assert_non_null(strstr(buf, "refused system call socket"));
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 128 + SIGSYS);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_broker),
		cmocka_unit_test(test_netd),
		cmocka_unit_test(test_cloudd),
		cmocka_unit_test(test_debug_mode_reports),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
