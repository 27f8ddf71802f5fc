/*
 * enid: the broker.  Starts as root, checks the configuration, locks its
 * state and runtime directories against a second enid (nodelock.h),
 * starts enid-netd and enid-cloudd on socketpairs, opens its sockets and
 * state directory, then drops to the unprivileged user with no
 * capabilities under seccomp.  It alone holds pool state.  If either
 * child dies or sends a malformed message, the whole set goes down
 * (non-zero) and the service manager restarts it; enid never regains
 * privilege to restart a child.
 *
 * It may also be started without root, already as the configured user with
 * CAP_NET_ADMIN permitted (systemd's User= and AmbientCapabilities=): then
 * that capability is passed to enid-netd alone, through the ambient set,
 * and the broker sheds it before it starts enid-cloudd; the service manager
 * has made the runtime and state directories, which must be the user's.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "enid.h"
#include "log.h"
#include "nodelock.h"
#include "prereq.h"
#include "proc.h"
#include "sandbox.h"
#include "testhook.h"

extern char **environ;

static void
usage(void)
{
	fprintf(stderr, "usage: enid [-dnv] [-f config] [-L helper-dir]\n");
	exit(1);
}

/* Variables a child may see; everything else is dropped at exec. */
static bool
env_passes(const char *var, enum msg_peer peer)
{
	static const char *const common[] = {
		"ENID_SECCOMP_DEBUG=", "ASAN_OPTIONS=", "UBSAN_OPTIONS=",
		"LSAN_OPTIONS=", "TZ=", NULL,
	};
	static const char *const cloud[] = {
		"AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=",
		"AWS_SESSION_TOKEN=", "AWS_REGION=", "AWS_DEFAULT_REGION=",
		NULL,
	};
	const char *const *p;

	for (p = common; *p; p++)
		if (strncmp(var, *p, strlen(*p)) == 0)
			return true;
	if (testhook_env_passes(var))	/* sanitizer builds only */
		return true;
	if (peer == PEER_CLOUDD)
		for (p = cloud; *p; p++)
			if (strncmp(var, *p, strlen(*p)) == 0)
				return true;
	return false;
}

static void
child_spawn(struct broker *b, struct child *c, const char *helper_dir,
    bool foreground, int verbose)
{
	char path[4096];
	char *argv[8], *envp[32];
	int fd, i, n;
	char **e;
	pid_t pid;

	if (snprintf(path, sizeof(path), "%s/%s", helper_dir, c->name) >=
	    (int)sizeof(path))
		fatalx("%s: helper path too long", c->name);
	if (path[0] != '/')
		fatalx("%s: helper directory \"%s\" is not absolute", c->name,
		    helper_dir);
	if (access(path, X_OK) == -1)
		fatal("%s: cannot execute %s", c->name, path);

	n = 0;
	argv[n++] = (char *)c->name;
	argv[n++] = "-f";
	argv[n++] = (char *)b->config_path;
	if (foreground)
		argv[n++] = "-d";
	for (i = 0; i < verbose && i < 2; i++)
		argv[n++] = "-v";
	argv[n] = NULL;
	n = 0;
	/*
	 * libcurl's librtmp and libldap pull in GnuTLS, whose constructor
	 * sets up a TLS library cloudd never calls (its TLS is OpenSSL's):
	 * its pages, and p11-kit modules loaded, for nothing.
	 */
	if (c->peer_id == PEER_CLOUDD)
		envp[n++] = "GNUTLS_NO_IMPLICIT_INIT=1";
	for (e = environ; *e && n < 31; e++)
		if (env_passes(*e, c->peer_id))
			envp[n++] = *e;
	envp[n] = NULL;

	if ((pid = proc_spawn(path, argv, envp, &fd)) == -1)
		fatal("%s: starting %s", c->name, path);
	c->pid = pid;
	c->fd = fd;
	TAILQ_INIT(&c->pending);
	log_debug("%s: started as pid %d", c->name, (int)pid);
}

/*
 * A child still starting may be root, which the broker can no longer
 * signal; closing our end of its channel makes it exit on EOF anyway.
 */
static void
child_terminate(struct child *c, int sig)
{
	if (c->pid > 0)
		kill(c->pid, sig);
	if (c->fd > 0)
		shutdown(c->fd, SHUT_RDWR);
}

static void
broker_kill_timer(struct loop *l, struct loop_timer *t)
{
	struct broker *b = t->arg;

	(void)l;
	if (b->netd.pid > 0)
		log_warnx("%s (pid %d) did not exit; killing it", b->netd.name,
		    (int)b->netd.pid);
	if (b->cloudd.pid > 0)
		log_warnx("%s (pid %d) did not exit; killing it",
		    b->cloudd.name, (int)b->cloudd.pid);
	child_terminate(&b->netd, SIGKILL);
	child_terminate(&b->cloudd, SIGKILL);
	loop_stop(&b->loop, b->exit_code);
}

void
broker_shutdown(struct broker *b, int code, const char *why)
{
	if (b->shutting_down) {
		if (code > b->exit_code)
			b->exit_code = code;
		return;
	}
	b->shutting_down = true;
	b->exit_code = code;
	if (code == 0)
		log_info("%s; shutting down", why);
	else
		log_warnx("%s; shutting down", why);
	loop_timer_cancel(&b->loop, &b->handshake_timer);
	loop_timer_cancel(&b->loop, &b->netd.ping_timer);
	loop_timer_cancel(&b->loop, &b->cloudd.ping_timer);
	child_terminate(&b->netd, SIGTERM);
	child_terminate(&b->cloudd, SIGTERM);
	if (b->netd.pid <= 0 && b->cloudd.pid <= 0)
		loop_stop(&b->loop, b->exit_code);
	else
		loop_timer_after(&b->loop, &b->kill_timer,
		    BROKER_KILL_GRACE_MS);
}

/*
 * Liveness: a PING every BROKER_PING_INTERVAL_MS once a child is ready,
 * answered within BROKER_PING_WAIT_MS with its sequence number, or the
 * set goes down (a child stopped or wedged never exits on its own).
 */
static void
ping_answer(struct broker *b, void *arg, const struct msg *m, bool final)
{
	struct child *c = arg;
	struct msg_ping pong;
	char why[256];

	(void)final;
	if (b->shutting_down)
		return;
	if (m == NULL) {
		snprintf(why, sizeof(why), "%s (pid %d) did not answer a "
		    "liveness ping within %d ms: it is stopped or wedged",
		    c->name, (int)c->pid, BROKER_PING_WAIT_MS);
		broker_shutdown(b, 1, why);
		return;
	}
	memcpy(&pong, m->u.bytes, sizeof(pong));
	if (pong.seq != c->ping_seq) {
		snprintf(why, sizeof(why), "%s (pid %d) answered ping %u with "
		    "%u", c->name, (int)c->pid, c->ping_seq, pong.seq);
		broker_shutdown(b, 1, why);
		return;
	}
	c->pongs++;
	loop_timer_after(&b->loop, &c->ping_timer, BROKER_PING_INTERVAL_MS);
}

static void
ping_send(struct loop *l, struct loop_timer *t)
{
	struct child *c = t->arg;
	struct msg_ping ping;

	(void)l;
	memset(&ping, 0, sizeof(ping));
	ping.seq = ++c->ping_seq;
	broker_request(c->broker, &c->ping_req, c, MSG_PING, &ping,
	    sizeof(ping), BROKER_PING_WAIT_MS, ping_answer, c);
}

static void
child_start_pings(struct broker *b, struct child *c)
{
	loop_timer_init(&c->ping_timer, ping_send, c);
	loop_timer_after(&b->loop, &c->ping_timer, BROKER_PING_INTERVAL_MS);
}

/* What every answer of enid-cloudd says of the cloud: reached, or not. */
static void
cloudd_observe(struct broker *b, const struct breq *r, const struct msg *m,
    bool final)
{
	(void)r;
	(void)final;
	if (m != NULL && m->hdr.type != MSG_CLOUD_STATS_ANSWER)
		engine_cloud_heard(b, m);
}

/* The link's wait, as the broker sees it: from the request to the answer
 * (or to the broker's deadline), netd's backoff included. */
static void
netd_observe(struct broker *b, const struct breq *r, const struct msg *m,
    bool final)
{
	if (final && r->type == MSG_NETD_FIND_LINK)
		metrics_link_wait(b, m, now_us() - r->sent_us);
}

static void
broker_dispatch_child(struct peer *p, const struct msg *m, void *arg)
{
	struct child *c = arg;
	struct broker *b = c->broker;
	char reason[256];

	(void)p;
	if (b->shutting_down)
		return;
	switch (m->hdr.type) {
	case MSG_HELLO_ACK: {
		struct msg_hello_ack ack;

		/* msg_recv lets exactly one through, before anything else. */
		memcpy(&ack, m->u.bytes, sizeof(ack));
		if (m->hdr.id != c->hello_id) {
			snprintf(reason, sizeof(reason), "%s (pid %d) answered "
			    "a HELLO we did not send (id %u)", c->name,
			    (int)c->pid, m->hdr.id);
			broker_shutdown(b, 1, reason);
			return;
		}
		if (ack.version != MSG_PROTO_VERSION) {
			log_warnx("%s: speaks protocol %u, we speak %u",
			    c->name, ack.version, MSG_PROTO_VERSION);
			broker_shutdown(b, 1, "protocol version mismatch");
			return;
		}
		c->ready = true;
		log_info("%s (pid %d) ready", c->name, (int)c->pid);
		child_start_pings(b, c);
		if (b->netd.ready && b->cloudd.ready) {
			loop_timer_cancel(&b->loop, &b->handshake_timer);
			log_info("all processes ready in %llu ms",
			    (unsigned long long)(now_ms() - b->started_ms));
			instance_start(b);
		}
		break;
	}
	default:
		if (broker_answer(b, c, m) == -1) {
			snprintf(reason, sizeof(reason), "%s (pid %d) sent an "
			    "unsolicited %s (id %u)", c->name, (int)c->pid,
			    msg_type_name(m->hdr.type), m->hdr.id);
			broker_shutdown(b, 1, reason);
		}
	}
}

/* The channel ended or carried a malformed message: the set goes down.
 * The peer has stopped watching the socket, so a shutdown that waits for
 * the children does not spin on it. */
static void
broker_child_gone(struct peer *p, enum msg_recv_result r, const char *why,
    void *arg)
{
	struct child *c = arg;
	struct broker *b = c->broker;
	char reason[512];

	(void)p;
	if (r == MSG_RECV_BAD)
		snprintf(reason, sizeof(reason), "%s (pid %d) sent a malformed "
		    "message: %s", c->name, (int)c->pid, why);
	else
		snprintf(reason, sizeof(reason), "%s (pid %d) closed its "
		    "channel%s%s", c->name, (int)c->pid,
		    r == MSG_RECV_ERROR ? ": " : "",
		    r == MSG_RECV_ERROR ? why : "");
	if (b->shutting_down)
		log_debug("%s", reason);
	else
		broker_shutdown(b, 1, reason);
	broker_fail_requests(b, c);
}

static void
broker_handshake_timeout(struct loop *l, struct loop_timer *t)
{
	struct broker *b = t->arg;
	char reason[128];

	(void)l;
	snprintf(reason, sizeof(reason), "%s did not answer the handshake "
	    "within %d ms", !b->netd.ready ? b->netd.name : b->cloudd.name,
	    BROKER_HANDSHAKE_MS);
	broker_shutdown(b, 1, reason);
}

static void
child_describe_exit(const struct child *c, char *buf, size_t len)
{
	if (WIFEXITED(c->status))
		snprintf(buf, len, "%s (pid %d) exited with status %d",
		    c->name, (int)c->pid, WEXITSTATUS(c->status));
	else if (WIFSIGNALED(c->status))
		snprintf(buf, len, "%s (pid %d) was killed by signal %d (%s)%s",
		    c->name, (int)c->pid, WTERMSIG(c->status),
		    strsignal(WTERMSIG(c->status)),
		    WTERMSIG(c->status) == SIGSYS ?
		    ": a system call outside its seccomp allow list" : "");
	else
		snprintf(buf, len, "%s (pid %d) stopped", c->name, (int)c->pid);
}

static void
broker_sigchld(struct loop *l, int signo, void *arg)
{
	struct broker *b = arg;
	struct child *kids[2] = { &b->netd, &b->cloudd };
	int status, i, n;
	pid_t pid;
	char reason[256];

	(void)l;
	(void)signo;
	for (n = 0; n < 16; n++) {
		pid = waitpid(-1, &status, WNOHANG);
		if (pid <= 0)
			break;
		for (i = 0; i < 2; i++) {
			struct child *c = kids[i];

			if (c->pid != pid)
				continue;
			c->status = status;
			child_describe_exit(c, reason, sizeof(reason));
			c->pid = 0;
			if (b->shutting_down)
				log_debug("%s", reason);
			else
				broker_shutdown(b, 1, reason);
		}
	}
	if (b->shutting_down && b->netd.pid <= 0 && b->cloudd.pid <= 0) {
		loop_timer_cancel(&b->loop, &b->kill_timer);
		loop_stop(&b->loop, b->exit_code);
	}
}

static void
broker_sigterm(struct loop *l, int signo, void *arg)
{
	struct broker *b = arg;
	char why[64];

	(void)l;
	snprintf(why, sizeof(why), "%s received", strsignal(signo));
	broker_shutdown(b, 0, why);
}

static void
child_hello(struct broker *b, struct child *c)
{
	struct msg_hello hello = { .version = MSG_PROTO_VERSION };

	c->hello_id = ++b->next_id;
	peer_send(&c->peer, MSG_HELLO, c->hello_id, &hello, sizeof(hello));
}

/*
 * The runtime directory belongs to the user, so the broker can remove its
 * sockets at exit; the sockets' own modes say who may connect.  Owner and
 * mode are set through a descriptor opened without following a symlink,
 * never by path.  Started without root, enid cannot give a directory to the
 * user: it must be the user's already (the service manager makes it so),
 * and only its mode is set.
 */
static void __attribute__((noreturn))
dir_not_ours(const char *dir, uid_t owner, uid_t uid)
{
	fatalx("%s is owned by uid %u, not by uid %u, and started without "
	    "root enid cannot take it over; have the service manager create "
	    "it for the user (systemd: User= with RuntimeDirectory= and "
	    "StateDirectory=)", dir, (unsigned)owner, (unsigned)uid);
}

/* The directory, made if missing, opened and checked; nothing in it or
 * about it is changed yet (that waits for its lock: dir_own). */
static int
dir_open(const char *dir, uid_t uid, mode_t mode)
{
	bool as_root = !sandbox_started_unprivileged();
	struct stat st;
	int fd;

	if (mkdir(dir, mode) == -1 && errno != EEXIST) {
		if (as_root)
			fatal("mkdir %s", dir);
		fatal("mkdir %s as uid %u (started without root, the service "
		    "manager must create it: systemd's RuntimeDirectory= and "
		    "StateDirectory=)", dir, (unsigned)uid);
	}
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1) {
		/* Someone else's directory we may not even open: say so. */
		if (!as_root && errno == EACCES && lstat(dir, &st) == 0 &&
		    S_ISDIR(st.st_mode) && st.st_uid != uid)
			dir_not_ours(dir, st.st_uid, uid);
		fatal("%s: not a directory we can use", dir);
	}
	if (fstat(fd, &st) == -1)
		fatal("stat %s", dir);
	if (!S_ISDIR(st.st_mode))
		fatalx("%s exists and is not a directory", dir);
	if (!as_root && st.st_uid != uid)
		dir_not_ours(dir, st.st_uid, uid);
	return fd;
}

static void
dir_own(int fd, const char *dir, uid_t uid, gid_t gid, mode_t mode)
{
	if (!sandbox_started_unprivileged() && fchown(fd, uid, gid) == -1)
		fatal("setting owner and mode of %s", dir);
	if (fchmod(fd, mode) == -1)
		fatal("setting owner and mode of %s", dir);
}

/* The directory's lock, or enid goes no further (nodelock.h). */
static int
dir_lock(int dirfd, const char *dir, const char *name, uid_t uid, gid_t gid)
{
	char err[1024];
	int fd;

	if (nodelock_take(dirfd, dir, name, uid, gid, &fd, err,
	    sizeof(err)) == -1)
		fatalx("%s", err);
	return fd;
}

int
main(int argc, char *argv[])
{
	static struct broker b;
	static const cap_value_t netd_caps[] = { CAP_NET_ADMIN };
	const char *helper_dir = ENID_HELPER_DIR;
	bool check_only = false, foreground = false, unprivileged;
	int ch, verbose = 0, rc;
	struct passwd *pw;
	gid_t admin_gid = 0;
	char err[1024], path[4200], config_abs[PATH_MAX];
	int state_fd, run_fd, state_lock, run_lock;
	pid_t kids[2];

	b.config_path = ENID_CONF_PATH;
	while ((ch = getopt(argc, argv, "df:L:nv")) != -1) {
		switch (ch) {
		case 'd':
			foreground = true;
			break;
		case 'f':
			b.config_path = optarg;
			break;
		case 'L':
			helper_dir = optarg;
			break;
		case 'n':
			check_only = true;
			break;
		case 'v':
			verbose++;
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();

	log_init("enid", true, LOG_LVL_INFO);
	/* Started without root we are our user's from the first line: no
	 * other process of that user may trace us or read our memory. */
	if (sandbox_undumpable() == -1)
		fatal("PR_SET_DUMPABLE");
	if (config_load(b.config_path, &b.cfg, err, sizeof(err)) == -1) {
		log_warnx("configuration: %s", err);
		return 1;
	}
	/* Only enid-cloudd uses them; enidctl show config says whether
	 * there were any. */
	b.static_keys = b.cfg.cloud.access_key_id[0] != '\0';
	config_wipe_secrets(&b.cfg);
	if (check_only) {
		fprintf(stderr, "enid: configuration %s OK\n", b.config_path);
		return 0;
	}
	unprivileged = sandbox_started_unprivileged();
	/* The helpers read it too, after daemon() has moved us to "/". */
	if ((b.config_path = realpath(b.config_path, config_abs)) == NULL)
		fatal("configuration path");

	errno = 0;
	if ((pw = getpwnam(b.cfg.user)) == NULL)
		fatalx("user \"%s\": %s", b.cfg.user,
		    errno ? strerror(errno) : "no such user");
	if (pw->pw_uid == 0)
		fatalx("user \"%s\" is root; enid must run unprivileged",
		    b.cfg.user);
	if (b.cfg.admin_group[0] != '\0') {
		struct group *gr = getgrnam(b.cfg.admin_group);

		if (gr == NULL)
			fatalx("admin_group \"%s\": no such group",
			    b.cfg.admin_group);
		admin_gid = gr->gr_gid;
	}
	/* Without root, nothing can be fixed later: say now what is wrong. */
	if (unprivileged && sandbox_check_unprivileged(pw->pw_uid, pw->pw_gid,
	    netd_caps, 1, err, sizeof(err)) == -1)
		fatalx("started without root, enid must run as user \"%s\" "
		    "with CAP_NET_ADMIN for enid-netd, or start as root: %s",
		    b.cfg.user, err);

	/*
	 * One enid per node: the state and runtime directories are locked
	 * before anything in them, a child or the cloud is touched, and on
	 * stderr still, so that a second enid's refusal reaches whoever
	 * started it.  The locks pass through daemon()'s fork.
	 */
	state_fd = dir_open(b.cfg.state_dir, pw->pw_uid, 0700);
	run_fd = dir_open(b.cfg.runtime_dir, pw->pw_uid, 0755);
	state_lock = dir_lock(state_fd, b.cfg.state_dir, NODELOCK_STATE_FILE,
	    pw->pw_uid, pw->pw_gid);
	run_lock = dir_lock(run_fd, b.cfg.runtime_dir, NODELOCK_RUN_FILE,
	    pw->pw_uid, pw->pw_gid);
	/* A newer enid's checkpoint (a downgrade) stops the start here,
	 * before a helper, the cloud or the pods' rules are touched. */
	if (store_probe(state_fd, &b.ckpt_ipv6, err, sizeof(err)) ==
	    CKPT_NEWER)
		fatalx("checkpoint in %s: %s", b.cfg.state_dir, err);
	/* IPv6 pods: the node's settings, read while files may be opened
	 * by path; judged once the cloud names the primary interface. */
	if (config_family_v6(b.cfg.ip_family)) {
		if ((b.prereq = malloc(sizeof(*b.prereq))) == NULL)
			fatal("IPv6 prerequisites");
		prereq_read(b.prereq, "/proc/sys", "/sys/class/net");
	}

	if (!foreground) {
		if (daemon(0, 0) == -1)
			fatal("daemon");
	}
	if (nodelock_note_pid(state_lock, getpid(), err, sizeof(err)) == -1 ||
	    nodelock_note_pid(run_lock, getpid(), err, sizeof(err)) == -1)
		fatalx("%s", err);
	log_init("enid", foreground, child_log_level(&b.cfg, verbose));
	b.started_ms = now_ms();
	signal(SIGPIPE, SIG_IGN);

	if (loop_init(&b.loop) == -1)
		fatal("event loop");
	/* Signals are routed through the loop before any child exists, so
	 * no exit can be missed. */
	if (loop_signal(&b.loop, SIGCHLD, broker_sigchld, &b) == -1 ||
	    loop_signal(&b.loop, SIGTERM, broker_sigterm, &b) == -1 ||
	    loop_signal(&b.loop, SIGINT, broker_sigterm, &b) == -1)
		fatal("signals");
	loop_timer_init(&b.handshake_timer, broker_handshake_timeout, &b);
	loop_timer_init(&b.kill_timer, broker_kill_timer, &b);

	b.netd = (struct child){ .broker = &b, .name = "enid-netd",
	    .peer_id = PEER_NETD, .observe = netd_observe };
	b.cloudd = (struct child){ .broker = &b, .name = "enid-cloudd",
	    .peer_id = PEER_CLOUDD, .observe = cloudd_observe };
	if (unprivileged && sandbox_pass_caps(netd_caps, 1, err,
	    sizeof(err)) == -1)
		fatalx("passing CAP_NET_ADMIN on to enid-netd: %s", err);
	child_spawn(&b, &b.netd, helper_dir, foreground, verbose);
	/* Without root nothing below needs a capability: the broker sheds
	 * them all now, so that enid-cloudd starts with none. */
	if (unprivileged && sandbox_drop_to(pw->pw_uid, pw->pw_gid, NULL, 0,
	    err, sizeof(err)) == -1)
		fatalx("privilege drop: %s", err);
	child_spawn(&b, &b.cloudd, helper_dir, foreground, verbose);

	engine_init(&b);
	b.engine.on_stop = broker_shutdown;
	metrics_init(&b);
	dir_own(run_fd, b.cfg.runtime_dir, pw->pw_uid, pw->pw_gid, 0755);
	close(run_fd);
	/* The checkpoint is written relative to this descriptor, kept
	 * (store_open, below). */
	dir_own(state_fd, b.cfg.state_dir, pw->pw_uid, pw->pw_gid, 0700);
	snprintf(path, sizeof(path), "%s/%s", b.cfg.runtime_dir, CTL_SOCK_NAME);
	if ((b.ctl = jserver_open(path, "ctl", false, admin_gid,
	    CTL_MAX_CLIENTS, CTL_LINE_MAX, err, sizeof(err))) == NULL)
		fatalx("%s", err);
	snprintf(path, sizeof(path), "%s/%s", b.cfg.runtime_dir, CNI_SOCK_NAME);
	if ((b.cni = jserver_open(path, "cni", true, 0, CNI_MAX_CLIENTS,
	    CNI_LINE_MAX, err, sizeof(err))) == NULL)
		fatalx("%s", err);
	/* The textfile is written through a descriptor for its directory,
	 * as the checkpoint is: no path is opened after the drop. */
	if (metrics_open_textfile(&b, err, sizeof(err)) == -1)
		fatalx("%s", err);

	/* (Started without root, this only checks the earlier drop.) */
	if (sandbox_drop_to(pw->pw_uid, pw->pw_gid, NULL, 0, err,
	    sizeof(err)) == -1)
		fatalx("privilege drop: %s", err);
	/* The children's pids go into the filter: the only processes the
	 * broker may signal besides itself. */
	kids[0] = b.netd.pid;
	kids[1] = b.cloudd.pid;
	store_open(b.store, state_fd);
	if (sandbox_load(SANDBOX_BROKER, sandbox_debug_requested(), kids, 2,
	    err, sizeof(err)) == -1)
		fatalx("seccomp: %s", err);
	testhook_sandboxed("enid");
	log_debug("gave back %zu KiB of start-up pages",
	    proc_shed_start_pages() / 1024);
	/* The store's writer thread, after the filter, which it inherits;
	 * without it, records are written on the loop. */
	store_start(b.store);

	if (peer_open(&b.netd.peer, &b.loop, b.netd.fd, PEER_BROKER,
	    PEER_NETD, b.netd.name, broker_dispatch_child, broker_child_gone,
	    NULL, &b.netd) == -1 ||
	    peer_open(&b.cloudd.peer, &b.loop, b.cloudd.fd, PEER_BROKER,
	    PEER_CLOUDD, b.cloudd.name, broker_dispatch_child,
	    broker_child_gone, NULL, &b.cloudd) == -1)
		fatal("watching the children");
	if (jserver_start(&b, b.ctl, ctl_ops) == -1 ||
	    jserver_start(&b, b.cni, cni_ops) == -1)
		fatal("control and CNI sockets");
	jserver_observe(b.cni, metrics_cni_answer);
	metrics_start(&b);
	child_hello(&b, &b.netd);
	child_hello(&b, &b.cloudd);
	loop_timer_after(&b.loop, &b.handshake_timer, BROKER_HANDSHAKE_MS);
	log_info("started as uid %u%s; enid-netd pid %d, enid-cloudd pid %d",
	    (unsigned)getuid(), unprivileged ? " (without root)" : "",
	    (int)b.netd.pid, (int)b.cloudd.pid);

	/* A line per pod added and released: written once a loop turn. */
	log_hold(true);
	rc = loop_run(&b.loop);
	log_hold(false);	/* the lines of the way out go as they come */
	jserver_close(&b, b.ctl);
	jserver_close(&b, b.cni);
	log_info("exiting with status %d", rc);
	return rc;
}
