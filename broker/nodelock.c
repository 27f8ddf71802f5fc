/*
 * The lock that keeps a second enid off a node's state and runtime
 * directories (nodelock.h).  The file is opened without following a
 * link or blocking on a FIFO, and checked before anything is written to
 * it: enid opens it as root, in a directory its unprivileged user owns.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nodelock.h"

/* The longest pid text read back: "4194304\n" and room for junk. */
#define NODELOCK_TEXT_MAX	32

pid_t
nodelock_parse_pid(const char *text, size_t len)
{
	long v = 0;
	size_t i;

	if (len > 0 && text[len - 1] == '\n')
		len--;
	if (len == 0 || len > 10)
		return 0;
	for (i = 0; i < len; i++) {
		if (text[i] < '0' || text[i] > '9')
			return 0;
		v = v * 10 + (text[i] - '0');
	}
	if (v <= 0 || v > 0x7fffffffL || text[0] == '0')
		return 0;
	return (pid_t)v;
}

/* Who holds it, from the file, for the refusal. */
static void
say_held(int fd, const char *dir, const char *name, char *err,
    size_t errlen)
{
	char text[NODELOCK_TEXT_MAX];
	ssize_t n;
	pid_t pid = 0;

	n = pread(fd, text, sizeof(text), 0);
	if (n > 0)
		pid = nodelock_parse_pid(text, (size_t)n);
	if (pid > 0)
		snprintf(err, errlen, "another enid (pid %d) is running on "
		    "%s: it holds the lock on %s/%s; not starting a second "
		    "one, which would undo its work (stop it first)",
		    (int)pid, dir, dir, name);
	else
		snprintf(err, errlen, "another enid is running on %s: it "
		    "holds the lock on %s/%s (its pid not written yet: it is "
		    "starting); not starting a second one, which would undo "
		    "its work (stop it first)", dir, dir, name);
}

int
nodelock_take(int dirfd, const char *dir, const char *name, uid_t uid,
    gid_t gid, int *fdp, char *err, size_t errlen)
{
	struct stat st;
	uid_t euid = geteuid();
	int fd;

	*fdp = -1;
	fd = openat(dirfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK |
	    O_NOCTTY | O_CLOEXEC, 0600);
	if (fd == -1) {
		if (errno == ELOOP)
			snprintf(err, errlen, "%s/%s is a symbolic link; not "
			    "following it (remove it by hand)", dir, name);
		else
			snprintf(err, errlen, "%s/%s: opening the lock file: "
			    "%s", dir, name, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1) {
		snprintf(err, errlen, "%s/%s: %s", dir, name, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s/%s is not a regular file; not "
		    "using it as the lock (remove it by hand)", dir, name);
		goto fail;
	}
	/* A second link would make the pid written below land in another
	 * file, one the user could not write itself. */
	if (st.st_nlink != 1) {
		snprintf(err, errlen, "%s/%s has %lu links; not using it as "
		    "the lock (remove it by hand)", dir, name,
		    (unsigned long)st.st_nlink);
		goto fail;
	}
	if (st.st_uid != uid && st.st_uid != euid) {
		snprintf(err, errlen, "%s/%s is owned by uid %u, neither "
		    "enid's user (uid %u) nor uid %u; not using it as the "
		    "lock (remove it by hand)", dir, name,
		    (unsigned)st.st_uid, (unsigned)uid, (unsigned)euid);
		goto fail;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		if (errno == EWOULDBLOCK)
			say_held(fd, dir, name, err, errlen);
		else
			snprintf(err, errlen, "%s/%s: locking: %s", dir, name,
			    strerror(errno));
		goto fail;
	}
	/* Ours from here: the pid of whoever held it before is stale. */
	if (ftruncate(fd, 0) == -1) {
		snprintf(err, errlen, "%s/%s: clearing the old pid: %s", dir,
		    name, strerror(errno));
		goto fail;
	}
	if (euid == 0 && (st.st_uid != uid || st.st_gid != gid) &&
	    fchown(fd, uid, gid) == -1) {
		snprintf(err, errlen, "%s/%s: giving it to uid %u: %s", dir,
		    name, (unsigned)uid, strerror(errno));
		goto fail;
	}
	/* Whoever can open the file can lock it: nobody else may. */
	if ((st.st_mode & 07777) != 0600 && fchmod(fd, 0600) == -1) {
		snprintf(err, errlen, "%s/%s: setting its mode: %s", dir,
		    name, strerror(errno));
		goto fail;
	}
	*fdp = fd;
	return 0;

fail:
	close(fd);	/* releases the lock too, if it was taken */
	return -1;
}

int
nodelock_note_pid(int fd, pid_t pid, char *err, size_t errlen)
{
	char text[NODELOCK_TEXT_MAX];
	int n;

	n = snprintf(text, sizeof(text), "%d\n", (int)pid);
	errno = 0;
	if (ftruncate(fd, 0) == -1 || pwrite(fd, text, (size_t)n, 0) != n) {
		snprintf(err, errlen, "writing pid %d into the lock file: %s",
		    (int)pid, errno ? strerror(errno) : "short write");
		return -1;
	}
	return 0;
}
