/*
 * The lock that keeps a second enid off a node (broker/nodelock.c): taken
 * once, refused to a second taker with the holder's pid, free again once
 * its descriptor is closed (a crash leaves nothing stale), and never
 * taken on, or written through, a file that is not its own.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "nodelock.h"
#include "testdir.h"

#define LOCK	NODELOCK_STATE_FILE

static void
read_text(const struct dir *d, const char *name, char *buf, size_t len)
{
	int fd = openat(d->fd, name, O_RDONLY | O_NOFOLLOW);
	ssize_t n;

	assert_true(fd >= 0);
	n = read(fd, buf, len - 1);
	assert_true(n >= 0);
	buf[n] = '\0';
	close(fd);
}

static void
write_text(const struct dir *d, const char *name, const char *text)
{
	int fd = openat(d->fd, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void
test_parse_pid(void **state)
{
	(void)state;
	assert_int_equal(nodelock_parse_pid("1234\n", 5), 1234);
	assert_int_equal(nodelock_parse_pid("1234", 4), 1234);
	assert_int_equal(nodelock_parse_pid("2147483647", 10), 2147483647);
	assert_int_equal(nodelock_parse_pid("", 0), 0);
	assert_int_equal(nodelock_parse_pid("\n", 1), 0);
	assert_int_equal(nodelock_parse_pid("0\n", 2), 0);
	assert_int_equal(nodelock_parse_pid("012\n", 4), 0);
	assert_int_equal(nodelock_parse_pid("-5\n", 3), 0);
	assert_int_equal(nodelock_parse_pid("12 3\n", 5), 0);
	assert_int_equal(nodelock_parse_pid("12\n\n", 4), 0);
	assert_int_equal(nodelock_parse_pid("2147483648", 10), 0);
	assert_int_equal(nodelock_parse_pid("99999999999", 11), 0);
	assert_int_equal(nodelock_parse_pid("12\0" "3", 4), 0);
}

/* Taken, refused to a second open description with the pid, free again
 * once the first is closed. */
static void
test_take_refuse_release(void **state)
{
	struct dir d;
	char err[512], text[64];
	int fd, fd2;

	(void)state;
	dir_open(&d, "enid-lock");
	assert_int_equal(nodelock_take(d.fd, d.path, LOCK, getuid(), getgid(),
	    &fd, err, sizeof(err)), 0);
	assert_int_equal(nodelock_note_pid(fd, 4321, err, sizeof(err)), 0);
	read_text(&d, LOCK, text, sizeof(text));
	assert_string_equal(text, "4321\n");

	assert_int_equal(nodelock_take(d.fd, d.path, LOCK, getuid(), getgid(),
	    &fd2, err, sizeof(err)), -1);
	assert_int_equal(fd2, -1);
	assert_non_null(strstr(err, "another enid (pid 4321) is running on"));
	assert_non_null(strstr(err, d.path));
	/* the refusal wrote nothing */
	read_text(&d, LOCK, text, sizeof(text));
	assert_string_equal(text, "4321\n");

	/* Held by its description, not its process: no pid written yet. */
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(nodelock_take(d.fd, d.path, LOCK, getuid(), getgid(),
	    &fd2, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "its pid not written yet"));

	close(fd);	/* as a crash would */
	assert_int_equal(nodelock_take(d.fd, d.path, LOCK, getuid(), getgid(),
	    &fd2, err, sizeof(err)), 0);
	close(fd2);
	dir_close(&d);
}

/* A file left by an enid that died: its pid is cleared once the lock is
 * taken; a junk pid is named as none. */
static void
test_stale_and_junk(void **state)
{
	struct dir d;
	char err[512], text[64];
	struct stat st;
	int fd, fd2;

	(void)state;
	dir_open(&d, "enid-lock");
	write_text(&d, LOCK, "999\n");
	assert_int_equal(nodelock_take(d.fd, d.path, LOCK, getuid(), getgid(),
	    &fd, err, sizeof(err)), 0);
	read_text(&d, LOCK, text, sizeof(text));
	assert_string_equal(text, "");
	/* 0644 before: nobody else may open it to lock it */
	assert_int_equal(fstatat(d.fd, LOCK, &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0600);

	assert_int_equal(pwrite(fd, "x9\n", 3, 0), 3);
	assert_int_equal(nodelock_take(d.fd, d.path, LOCK, getuid(), getgid(),
	    &fd2, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "its pid not written yet"));
	close(fd);
	dir_close(&d);
}

static void
expect_refused(const struct dir *d, const char *why)
{
	char err[512];
	int fd;

	assert_int_equal(nodelock_take(d->fd, d->path, LOCK, getuid(),
	    getgid(), &fd, err, sizeof(err)), -1);
	assert_int_equal(fd, -1);
	if (strstr(err, why) == NULL)
		fail_msg("\"%s\" does not say \"%s\"", err, why);
}

/* What is not a lock file of ours is refused and left as it was. */
static void
test_hostile_files(void **state)
{
	struct dir d;
	char text[64];
	struct stat st;

	(void)state;
	dir_open(&d, "enid-lock");
	write_text(&d, "precious", "precious\n");

	assert_int_equal(symlinkat("precious", d.fd, LOCK), 0);
	expect_refused(&d, "is a symbolic link; not following it");
	assert_int_equal(unlinkat(d.fd, LOCK, 0), 0);

	assert_int_equal(linkat(d.fd, "precious", d.fd, LOCK, 0), 0);
	expect_refused(&d, "has 2 links");
	assert_int_equal(unlinkat(d.fd, LOCK, 0), 0);

	assert_int_equal(mkfifoat(d.fd, LOCK, 0600), 0);
	expect_refused(&d, "is not a regular file");
	assert_int_equal(unlinkat(d.fd, LOCK, 0), 0);

	assert_int_equal(mkdirat(d.fd, LOCK, 0700), 0);
	expect_refused(&d, LOCK);
	assert_int_equal(unlinkat(d.fd, LOCK, AT_REMOVEDIR), 0);

	/* Someone else's file (as root: another user's). */
	if (geteuid() == 0) {
		write_text(&d, LOCK, "77\n");
		assert_int_equal(fchownat(d.fd, LOCK, 65534, 65534, 0), 0);
		expect_refused(&d, "is owned by uid 65534");
		read_text(&d, LOCK, text, sizeof(text));
		assert_string_equal(text, "77\n");
		assert_int_equal(unlinkat(d.fd, LOCK, 0), 0);
	}

	read_text(&d, "precious", text, sizeof(text));
	assert_string_equal(text, "precious\n");
	assert_int_equal(fstatat(d.fd, "precious", &st, 0), 0);
	assert_int_equal(st.st_nlink, 1);
	dir_close(&d);
}

/* The descriptor must not reach an exec'd helper. */
static void
test_close_on_exec(void **state)
{
	struct dir d;
	char err[512];
	int fd;

	(void)state;
	dir_open(&d, "enid-lock");
	assert_int_equal(nodelock_take(d.fd, d.path, LOCK, getuid(), getgid(),
	    &fd, err, sizeof(err)), 0);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	dir_close(&d);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_pid),
		cmocka_unit_test(test_take_refuse_release),
		cmocka_unit_test(test_stale_and_junk),
		cmocka_unit_test(test_hostile_files),
		cmocka_unit_test(test_close_on_exec),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
