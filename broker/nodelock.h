/*
 * One enid per node: a lock on a file in the state directory and one in
 * the runtime directory, each taken before enid touches anything there
 * (sockets, checkpoint, children, cloud) and held for the life of the
 * broker through a descriptor it never closes.  The lock is flock(2)'s:
 * it belongs to the open file description, so it passes through daemon()'s
 * fork and ends with the last process holding it, however it ends; a
 * crashed enid leaves no stale lock.  The descriptor is close-on-exec, so
 * the helpers never hold it: a helper outliving its broker only waits for
 * EOF on its channel, and keeping a new enid out for it would keep the
 * node without one.
 *
 * The file holds the holder's pid (as the holder sees it: in a container,
 * its own pid namespace), so a refusal can name it.
 */
#ifndef ENID_NODELOCK_H
#define ENID_NODELOCK_H

#include <sys/types.h>

#include <stddef.h>

#define NODELOCK_STATE_FILE	"enid.lock"	/* in the state directory */
#define NODELOCK_RUN_FILE	"enid.pid"	/* in the runtime directory */

/*
 * Take the lock on name in dirfd (dir names the directory in messages),
 * creating the file if it is not there.  The file must be a
 * regular file with one link, owned by user or by the caller's effective
 * uid: a symbolic link, another kind of file, a hard link to something
 * else, or someone else's file is refused, never written.  Once the lock
 * is held the old pid is cleared, the file, if the caller is root, is
 * given to user (uid, gid) so that a start without root can take it too,
 * and its mode made 0600: whoever can open it could lock it.
 * 0 and *fd held (close-on-exec); -1 and err says why: held by another
 * enid (naming its pid when it has written one), or the file's problem.
 */
int	nodelock_take(int dirfd, const char *dir, const char *name,
	    uid_t uid, gid_t gid, int *fd, char *err, size_t errlen);

/* Write pid into the held lock's file.  0, or -1 with err. */
int	nodelock_note_pid(int fd, pid_t pid, char *err, size_t errlen);

/* Pure.  The pid a lock file's text names ("1234\n"), or 0: none, or
 * not a pid. */
pid_t	nodelock_parse_pid(const char *text, size_t len);

#endif /* ENID_NODELOCK_H */
