/*
 * A fresh directory for a unit test's files, under $TMPDIR (or /tmp), and
 * removed with what it holds.  Include after <cmocka.h>: the helpers
 * assert.
 */
#ifndef ENID_TESTDIR_H
#define ENID_TESTDIR_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

struct dir {
	char	path[256];
	int	fd;		/* the directory, O_DIRECTORY */
};

/* prefix: the directory's name before its random part ("enid-ckpt"). */
static inline void
dir_open(struct dir *d, const char *prefix)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(d->path, sizeof(d->path), "%s/%s.XXXXXX",
	    tmp != NULL && *tmp != '\0' ? tmp : "/tmp", prefix);
	assert_non_null(mkdtemp(d->path));
	d->fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(d->fd >= 0);
}

static inline void
dir_close(struct dir *d)
{
	char cmd[300];

	close(d->fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->path);
	assert_int_equal(system(cmd), 0);
}

static inline bool
exists(const struct dir *d, const char *name)
{
	struct stat st;

	return fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

#endif /* ENID_TESTDIR_H */
