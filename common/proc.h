/*
 * What enid-netd and enid-cloudd share as exec'd children of enid: their
 * command line, the check of their socketpair end on MSG_CHILD_FD, and the
 * version handshake.
 */
#ifndef ENID_PROC_H
#define ENID_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "conf.h"
#include "loop.h"
#include "msg.h"

struct child_opts {
	const char	*config_path;
	bool		 foreground;	/* -d: log to stderr */
	int		 verbose;	/* -v count: raise the log level */
};

/*
 * The parent's side: fork and exec path with argv and envp, the child's
 * end of a new SOCK_SEQPACKET socketpair on MSG_CHILD_FD (open across the
 * exec, even if it was created there), stdin from /dev/null, stdout onto
 * stderr (children only log), and every descriptor above MSG_CHILD_FD
 * closed (by close_range, or one by one on kernels without it).  A step
 * that fails in the child is logged with its reason and the child exits
 * 127.  Returns the pid and stores our end, non-blocking and close-on-exec,
 * in *fd; or -1 with errno set.
 */
pid_t	proc_spawn(const char *path, char *const argv[], char *const envp[],
	    int *fd);

/* Parse "NAME [-d] [-v] -f CONFIG"; exits 1 with usage on error. */
void	child_parse_args(int argc, char *argv[], const char *name,
	    struct child_opts *opts);

/* Make sure MSG_CHILD_FD is a SOCK_SEQPACKET unix socket, non-blocking;
 * fatal otherwise.  Fills chan. */
void	child_chan_open(struct msg_chan *chan, enum msg_peer self);

/*
 * Answer a HELLO: fatal (peer untrusted) on a version mismatch.  Returns
 * after sending HELLO_ACK.
 */
void	child_handshake(const struct msg_chan *chan, const struct msg *m);

/* The log level a child starts with: the config's, raised by -v. */
int	child_log_level(const struct enid_config *cfg, int verbose);

/*
 * Give back the resident pages of every loaded object's read-only segments
 * (code, read-only data, symbol tables): the dynamic linker, constructors
 * and start-up touched many that a daemon never runs again.  They stay in
 * the page cache and fault back in, from there, when next used.  Writable
 * segments (relocated data) are untouched.  Returns the bytes given back.
 */
size_t	proc_shed_start_pages(void);

#endif /* ENID_PROC_H */
