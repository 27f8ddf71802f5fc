/*
 * Child process plumbing shared by enid-netd and enid-cloudd (see proc.h).
 */
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <dirent.h>
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "proc.h"

/* Without close_range or /proc, the most descriptor numbers a child walks
 * to close the inherited ones. */
#define PROC_MAX_FD_WALK	(1 << 20)

/*
 * Close every descriptor from lowfd up.  close_range needs Linux 5.9; on an
 * older kernel (ENOSYS), or where a container's seccomp profile refuses it,
 * walk /proc/self/fd, or without /proc every number below the descriptor
 * limit (bounded: a limit too large to walk is a failure, not a hang).  Runs
 * in a freshly forked child of a single-threaded parent, so opendir's
 * allocation is safe.  Returns 0, or -1 with errno set.
 */
static int
close_from(int lowfd)
{
	struct rlimit rl;
	struct dirent *de;
	DIR *d;
	long fd;
	char *end;

	if (close_range((unsigned int)lowfd, ~0U, 0) == 0)
		return 0;
	if ((d = opendir("/proc/self/fd")) != NULL) {
		while ((de = readdir(d)) != NULL) {
			errno = 0;
			fd = strtol(de->d_name, &end, 10);
			if (errno != 0 || *end != '\0' || end == de->d_name ||
			    fd < lowfd || fd > INT_MAX || fd == dirfd(d))
				continue;
			/* The kernel lists open descriptors by number, so
			 * closing one does not disturb the walk. */
			(void)close((int)fd);
		}
		closedir(d);
		return 0;
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
		return -1;
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > PROC_MAX_FD_WALK) {
		errno = EMFILE;
		return -1;
	}
	for (fd = lowfd; fd < (long)rl.rlim_cur; fd++)
		(void)close((int)fd);	/* EBADF for the numbers not open */
	return 0;
}

/* In the child: say what failed (stderr is still the parent's, or syslog)
 * and end as a failed exec does. */
static void __attribute__((noreturn))
spawn_fail(const char *path, const char *what)
{
	log_warn("starting %s: %s", path, what);
	_exit(127);
}

/*
 * The child's side of proc_spawn: its pair end on MSG_CHILD_FD without
 * close-on-exec, stdin from /dev/null, stdout onto stderr, nothing else
 * open, then exec.
 */
static void __attribute__((noreturn))
spawn_exec(const char *path, char *const argv[], char *const envp[], int end)
{
	int devnull;

	if (end == MSG_CHILD_FD) {
		/* Already in place: dup2 onto itself would leave the
		 * socketpair's close-on-exec set, and exec would close it. */
		if (fcntl(end, F_SETFD, 0) == -1)
			spawn_fail(path, "clearing close-on-exec on the "
			    "socketpair");
	} else if (dup2(end, MSG_CHILD_FD) == -1)	/* clears it on the copy */
		spawn_fail(path, "moving the socketpair to descriptor 3");
	if ((devnull = open("/dev/null", O_RDONLY)) == -1)
		spawn_fail(path, "opening /dev/null");
	if (dup2(devnull, STDIN_FILENO) == -1)
		spawn_fail(path, "stdin from /dev/null");
	if (dup2(STDERR_FILENO, STDOUT_FILENO) == -1)
		spawn_fail(path, "stdout onto stderr");
	if (close_from(MSG_CHILD_FD + 1) == -1)
		spawn_fail(path, "closing inherited descriptors");
	execve(path, argv, envp);
	spawn_fail(path, "exec");
}

pid_t
proc_spawn(const char *path, char *const argv[], char *const envp[], int *fd)
{
	int sv[2], saved;
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
	if (pid == 0)
		spawn_exec(path, argv, envp, sv[1]);
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

struct shed {
	uintptr_t	vdso;		/* the kernel's object: not a file's */
	uintptr_t	pg;		/* the page size */
	size_t		bytes;		/* given back */
};

/* One loaded object's read-only segments (see proc_shed_start_pages). */
static int
shed_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct shed *sh = arg;
	uintptr_t pg = sh->pg;
	ElfW(Half) i;

	(void)size;
	if (sh->vdso != 0 && info->dlpi_addr == sh->vdso)
		return 0;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_DYNAMIC) {
			const ElfW(Dyn) *d = (const ElfW(Dyn) *)
			    (info->dlpi_addr + ph->p_vaddr);

			for (; d->d_tag != DT_NULL; d++)
				if (d->d_tag == DT_TEXTREL ||
				    (d->d_tag == DT_FLAGS &&
				    (d->d_un.d_val & DF_TEXTREL)))
					return 0;
		}
	}
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo, hi;

		if (ph->p_type != PT_LOAD || (ph->p_flags & PF_W))
			continue;
		/* whole pages inside the segment only: a page it shares with
		 * a writable neighbour holds that neighbour's data */
		lo = (info->dlpi_addr + ph->p_vaddr + pg - 1) & ~(pg - 1);
		hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz) & ~(pg - 1);
		if (hi <= lo)
			continue;
		if (madvise((void *)lo, hi - lo, MADV_DONTNEED) == 0)
			sh->bytes += hi - lo;
	}
	return 0;
}

size_t
proc_shed_start_pages(void)
{
	struct shed sh = {
		.vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR),
		.pg = (uintptr_t)sysconf(_SC_PAGESIZE),
	};

	dl_iterate_phdr(shed_object, &sh);
	return sh.bytes;
}
