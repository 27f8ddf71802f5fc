/*
 * The seccomp allow lists, as data: one list of calls every process needs
 * and one per process, each a table of rules with the arguments pinned
 * where they matter, plus the setsockopt options, fcntl commands and ioctl
 * requests the process uses (chrony's sys_linux.c keeps the same tables).
 * The sanitizer runtimes' additions live in sandbox_san.c.  Anything absent
 * kills the process.  What a rule cannot say (a pid known only at run
 * time: signals to the process itself, the broker's two children) is added
 * by sandbox_load().
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stddef.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <linux/netlink.h>

#include "sandbox.h"

#define ARG_EQ(i, v) \
	{ .arg = i, .cmp = SB_EQ, .value = (unsigned long)(v) }
#define ARG_MASKED(i, m, v) \
	{ .arg = i, .cmp = SB_MASKED_EQ, .mask = (unsigned long)(m), \
	  .value = (unsigned long)(v) }
#define ALLOW(name)		{ .syscall = name }
#define ALLOW_IF(name, a)	{ .syscall = name, .nargs = 1, .args = { a } }
#define ALLOW_IF2(name, a, b) \
	{ .syscall = name, .nargs = 2, .args = { a, b } }
#define REFUSE_IF(name, e, a) \
	{ .syscall = name, .errno_ret = e, .nargs = 1, .args = { a } }
#define REFUSE(name, e)		{ .syscall = name, .errno_ret = e }
#define NELEM(tab)		(sizeof(tab) / sizeof(tab[0]))

/* Flags that make an open write or create anything. */
#define OPEN_WRITE_FLAGS	(O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND | \
				 __O_TMPFILE)

/* Every flag that makes a new namespace.  (CLONE_NEWTIME shares its bit
 * with the exit signal in clone(), so only clone3 could ask for it, and
 * clone3 is never allowed.) */
#define CLONE_NAMESPACE_FLAGS	(CLONE_NEWNS | CLONE_NEWCGROUP | \
				 CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | \
				 CLONE_NEWPID | CLONE_NEWNET)
/* A thread shares memory and signal handlers and joins the thread group;
 * without all three, clone makes a process, which no enid process starts
 * after its filter is on. */
#define CLONE_THREAD_FLAGS	(CLONE_VM | CLONE_SIGHAND | CLONE_THREAD)

static const struct sb_rule common_rules[] = {
	/* Memory, never executable: everything the processes run is mapped
	 * before the filter (the resolver's modules by a lookup, see
	 * sandbox_warm_resolver), so a PROT_EXEC mapping can only be code
	 * that was not there at start. */
	ALLOW_IF("mmap", ARG_MASKED(2, PROT_EXEC, 0)),
	ALLOW_IF("mprotect", ARG_MASKED(2, PROT_EXEC, 0)),
	ALLOW("brk"), ALLOW("munmap"), ALLOW("mremap"), ALLOW("madvise"),
	/* the event loop: epoll, timerfd, signalfd */
	ALLOW("epoll_wait"), ALLOW("epoll_pwait"), ALLOW("epoll_ctl"),
	ALLOW("timerfd_settime"), ALLOW("timerfd_gettime"),
	ALLOW("rt_sigprocmask"), ALLOW("rt_sigreturn"),
	ALLOW("restart_syscall"),
	/* descriptors we already hold: the socketpair, stderr, syslog's */
	ALLOW("read"), ALLOW("write"), ALLOW("readv"), ALLOW("writev"),
	ALLOW("close"), ALLOW("fstat"), ALLOW("newfstatat"), ALLOW("lseek"),
	ALLOW("sendmsg"), ALLOW("recvmsg"), ALLOW("sendto"), ALLOW("recvfrom"),
	/* the same, several messages a call: a queue written out (msgq.c),
	 * glibc's resolver's parallel queries (cloudd) */
	ALLOW("sendmmsg"),
	/* time, identity, randomness */
	ALLOW("clock_gettime"), ALLOW("gettimeofday"), ALLOW("getpid"),
	ALLOW("gettid"), ALLOW("getrandom"), ALLOW("futex"),
	ALLOW("getuid"), ALLOW("geteuid"), ALLOW("getgid"), ALLOW("getegid"),
	/* Leaving: exit, and abort(), which resets SIGABRT's action and
	 * raises it with tgkill on our own pid (sandbox_load pins it). */
	ALLOW("exit"), ALLOW("exit_group"), ALLOW("rt_sigaction"),
	/* Syslog is connected before the filter (log_init, LOG_NDELAY).
	 * When syslogd goes away, glibc opens a new unix socket to reconnect;
	 * refused, its lines are dropped and the process carries on.  A new
	 * unix socket could otherwise reach any daemon listening on the node
	 * (nscd, containerd, D-Bus): the resolver, refused too, copes without
	 * nscd. */
	REFUSE_IF("socket", EACCES, ARG_EQ(0, AF_UNIX)),
};

static const struct sb_rule broker_rules[] = {
	/* clients on the unix sockets created before the drop; their
	 * credentials (SO_PEERCRED) */
	ALLOW("accept4"), ALLOW("getsockopt"), ALLOW("shutdown"),
	/* its children's messages, several a call (msg_recv_batch) */
	ALLOW("recvmmsg"),
	/* the checkpoint in the state directory: temp file, fsync, rename */
	ALLOW("openat"), ALLOW("fsync"), ALLOW("fdatasync"),
	ALLOW("ftruncate"), ALLOW("rename"), ALLOW("renameat"),
	ALLOW("renameat2"), ALLOW("unlink"), ALLOW("unlinkat"),
	/* and its journal: a record written in place, then fdatasync */
	ALLOW("pwrite64"),
	/* metrics_textfile, the same way; made readable for the node
	 * exporter whatever the umask (a file of our own: no capability) */
	ALLOW("fchmod"),
	/* the children: reaped here; signalled only by pid (sandbox_load) */
	ALLOW("wait4"), ALLOW("waitid"),
	/* glibc's qsort asks for the memory size (sysconf(_SC_PHYS_PAGES),
	 * i.e. sysinfo) the first time it sorts more than 1 KiB: the
	 * checkpoint's uniqueness check does, from about 64 pods */
	ALLOW("sysinfo"),
	/* the journal's writer thread (writer.c), started once the filter
	 * is on: a thread only, never a new process or namespace; clone3
	 * (whose flags sit in memory seccomp cannot read) is refused so
	 * glibc falls back to clone */
	ALLOW_IF("clone", ARG_MASKED(0, CLONE_THREAD_FLAGS |
	    CLONE_NAMESPACE_FLAGS, CLONE_THREAD_FLAGS)),
	REFUSE("clone3", ENOSYS),
	ALLOW("set_robust_list"), ALLOW("rseq"),
	/* (and what the sanitizers' thread start asks, as in cloudd's) */
	ALLOW("sched_getaffinity"), ALLOW("sched_yield"),
};

static const struct sb_rule netd_rules[] = {
	/* Netlink only.  The rtnetlink sockets (requests, netd's own dumps,
	 * link events, rule events), the one NETLINK_NETFILTER socket for
	 * netd's own table ip enid (nft.c) and the socketpair are open
	 * before the drop; libnl and libmnl then only send and receive on
	 * them (common list).  A new
	 * socket may only be another NETLINK_ROUTE one, which gives nothing
	 * the open ones don't; a new netfilter, XFRM (IPsec) or generic
	 * netlink socket would reach what CAP_NET_ADMIN allows beyond
	 * links, addresses, routes, rules and the one socket netd holds for
	 * its table. */
	ALLOW_IF2("socket", ARG_EQ(0, AF_NETLINK), ARG_EQ(2, NETLINK_ROUTE)),
	/* several datagrams a call on those sockets: the acks of rule
	 * changes sent at once, rule notifications (kernel.c) */
	ALLOW("recvmmsg"),
};

static const struct sb_rule cloudd_rules[] = {
	/* inet sockets for the cloud's endpoints and DNS */
	ALLOW_IF("socket", ARG_EQ(0, AF_INET)),
	ALLOW_IF("socket", ARG_EQ(0, AF_INET6)),
	/* getaddrinfo's look at the node's addresses (AI_ADDRCONFIG, the
	 * RFC 6724 sort) over NETLINK_ROUTE; changing anything there needs a
	 * capability cloudd does not have */
	ALLOW_IF2("socket", ARG_EQ(0, AF_NETLINK), ARG_EQ(2, NETLINK_ROUTE)),
	/* libcurl's threaded resolver wakes the loop through a socketpair:
	 * an anonymous pair, connected to nothing else */
	ALLOW_IF("socketpair", ARG_EQ(0, AF_UNIX)),
	ALLOW("connect"), ALLOW("bind"), ALLOW("getsockname"),
	ALLOW("getpeername"), ALLOW("getsockopt"),
	ALLOW("recvmmsg"), ALLOW("shutdown"),
	ALLOW("poll"), ALLOW("ppoll"), ALLOW("pipe2"),
	ALLOW("uname"), ALLOW("pread64"), ALLOW("statx"),
	ALLOW("stat"), ALLOW("sysinfo"),
	/* resolver config, CA bundle: read-only opens, never writes */
	ALLOW_IF("openat", ARG_MASKED(2, OPEN_WRITE_FLAGS, O_RDONLY)),
	ALLOW_IF("open", ARG_MASKED(1, OPEN_WRITE_FLAGS, O_RDONLY)),
	/* libcurl's threaded resolver: threads only, never a new process or
	 * namespace; clone3 (whose flags sit in memory seccomp cannot read)
	 * is refused so glibc falls back to clone */
	ALLOW_IF("clone", ARG_MASKED(0, CLONE_THREAD_FLAGS |
	    CLONE_NAMESPACE_FLAGS, CLONE_THREAD_FLAGS)),
	REFUSE("clone3", ENOSYS),
	ALLOW("set_robust_list"), ALLOW("rseq"), ALLOW("sched_getaffinity"),
	ALLOW("sched_yield"),
};

static const struct sb_sockopt cloudd_sockopts[] = {
	/* libcurl, on every connection: keepalive (CURLOPT_TCP_KEEPALIVE,
	 * with its idle time and interval; the probe count from libcurl
	 * 8.9 on) and TCP_NODELAY, its default */
	{ SOL_SOCKET, SO_KEEPALIVE },
	{ IPPROTO_TCP, TCP_KEEPIDLE },
	{ IPPROTO_TCP, TCP_KEEPINTVL },
	{ IPPROTO_TCP, TCP_KEEPCNT },
	{ IPPROTO_TCP, TCP_NODELAY },
	/* glibc's resolver, on its UDP socket to each name server: ICMP
	 * errors reported as socket errors */
	{ IPPROTO_IP, IP_RECVERR },
	{ IPPROTO_IPV6, IPV6_RECVERR },
};

/* libcurl makes its sockets non-blocking with fcntl. */
static const int cloudd_fcntls[] = { F_GETFL, F_SETFL };

/* glibc's resolver sizes each UDP answer before reading it. */
static const unsigned long cloudd_ioctls[] = { FIONREAD };

/*
 * The broker and netd use no setsockopt, fcntl or ioctl after the drop:
 * their descriptors are set up (non-blocking, close-on-exec, netlink
 * buffer sizes and groups) before it.
 */
static const struct sb_policy policies[SANDBOX_PROC_COUNT] = {
	[SANDBOX_BROKER] = { broker_rules, NELEM(broker_rules),
	    NULL, 0, NULL, 0, NULL, 0 },
	[SANDBOX_NETD] = { netd_rules, NELEM(netd_rules),
	    NULL, 0, NULL, 0, NULL, 0 },
	[SANDBOX_CLOUDD] = { cloudd_rules, NELEM(cloudd_rules),
	    cloudd_sockopts, NELEM(cloudd_sockopts),
	    cloudd_fcntls, NELEM(cloudd_fcntls),
	    cloudd_ioctls, NELEM(cloudd_ioctls) },
};

static const struct sb_policy common_policy = {
	common_rules, NELEM(common_rules), NULL, 0, NULL, 0, NULL, 0
};

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
