/*
 * Child process plumbing shared by enid-netd and enid-cloudd (see proc.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "proc.h"

pid_t
proc_spawn(const char *path, char *const argv[], char *const envp[], int *fd)
{
	int sv[2], devnull, saved;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1)
		return -1;
	pid = fork();
	if (pid == -1) {
		saved = errno;
		close(sv[0]);
		close(sv[1]);
		errno = saved;
		return -1;
	}
	if (pid == 0) {
		/* dup2 clears close-on-exec on the copy it makes. */
		if (dup2(sv[1], MSG_CHILD_FD) == -1)
			_exit(127);
		devnull = open("/dev/null", O_RDONLY);
		if (devnull == -1 || dup2(devnull, STDIN_FILENO) == -1 ||
		    dup2(STDERR_FILENO, STDOUT_FILENO) == -1 ||
		    close_range(MSG_CHILD_FD + 1, ~0U, 0) == -1)
			_exit(127);
		execve(path, argv, envp);
		dprintf(STDERR_FILENO, "exec %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	close(sv[1]);
	if (fcntl(sv[0], F_SETFL, O_NONBLOCK) == -1) {
		saved = errno;
		close(sv[0]);
		errno = saved;
		return -1;
	}
	*fd = sv[0];
	return pid;
}

void
child_parse_args(int argc, char *argv[], const char *name,
    struct child_opts *opts)
{
	int ch;

	memset(opts, 0, sizeof(*opts));
	opts->config_path = ENID_CONF_PATH;
	while ((ch = getopt(argc, argv, "df:v")) != -1) {
		switch (ch) {
		case 'd':
			opts->foreground = true;
			break;
		case 'f':
			opts->config_path = optarg;
			break;
		case 'v':
			opts->verbose++;
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc)
		goto usage;
	return;
usage:
	fprintf(stderr, "usage: %s [-dv] [-f config]\n"
	    "%s is started by enid(8), not by hand.\n", name, name);
	exit(1);
}

void
child_chan_open(struct msg_chan *chan, enum msg_peer self)
{
	int type = 0, flags;
	socklen_t len = sizeof(type);

	if (getsockopt(MSG_CHILD_FD, SOL_SOCKET, SO_TYPE, &type, &len) == -1)
		fatal("descriptor %d is not enid's socketpair", MSG_CHILD_FD);
	if (type != SOCK_SEQPACKET)
		fatalx("descriptor %d is not a SOCK_SEQPACKET socket",
		    MSG_CHILD_FD);
	flags = fcntl(MSG_CHILD_FD, F_GETFL);
	if (flags == -1 ||
	    fcntl(MSG_CHILD_FD, F_SETFL, flags | O_NONBLOCK) == -1 ||
	    fcntl(MSG_CHILD_FD, F_SETFD, FD_CLOEXEC) == -1)
		fatal("fcntl on descriptor %d", MSG_CHILD_FD);
	chan->fd = MSG_CHILD_FD;
	chan->self = self;
	chan->peer = PEER_BROKER;
	chan->peer_name = "enid";
}

void
child_handshake(const struct msg_chan *chan, const struct msg *m)
{
	struct msg_hello hello;
	struct msg_hello_ack ack;

	memcpy(&hello, m->u.bytes, sizeof(hello));
	if (hello.version != MSG_PROTO_VERSION)
		fatalx("handshake: broker speaks protocol %u, we speak %u",
		    hello.version, MSG_PROTO_VERSION);
	memset(&ack, 0, sizeof(ack));
	ack.version = MSG_PROTO_VERSION;
	ack.pid = (uint32_t)getpid();
	if (msg_send(chan, MSG_HELLO_ACK, m->hdr.id, &ack, sizeof(ack)) == -1)
		fatal("handshake: sending HELLO_ACK");
}

int
child_log_level(const struct enid_config *cfg, int verbose)
{
	int level = cfg->log_level + verbose;

	return level > LOG_LVL_DEBUG ? LOG_LVL_DEBUG : level;
}
