/*
 * The broker's unix stream sockets (ctl.sock and cni.sock): one JSON object
 * per line each way, one request at a time per connection.  Set up as
 * OpenBSD dhcpleased's control.c does: the socket is created under a umask
 * and, for its group, an effective gid chosen before bind(), so nothing is
 * ever chowned or chmodded by path in a directory the unprivileged user
 * owns; each peer's credentials (SO_PEERCRED, SO_PEERGROUPS) are checked
 * at accept; accepting pauses while descriptors or client slots run out.
 * Started without root, enid can take no other gid: ctl.sock is then the
 * user's, mode 0600, and the admin group is let in by an ACL entry, set by
 * path in the runtime directory, which is the user's own and which nobody
 * else can change.  A path is unlinked only if it holds a socket an enid
 * that is gone left (at start, under the runtime directory's lock) or the
 * one this enid made (at exit).
 *
 * A line over the socket's limit, invalid JSON (strictly: json-c's
 * leniencies are refused), or a request that is not an object with a
 * string "op" gets "bad-request" and the connection is closed; nothing in
 * the daemon changes.  An op may answer later (an ADD waiting for the
 * pool): it keeps a jref, which goes stale if the client leaves.
 *
 * What a client can make the daemon hold is bounded: its input buffer
 * grows to the line limit only while a long line arrives and is given back
 * after; no further request is read while an answer waits to be sent, so
 * a client that never reads fills its own socket, not our memory; and a
 * client has JSERVER_IDLE_MS, whenever it is not waiting on us, to send
 * its next request and read its answer, so that idle connections cannot
 * hold every slot.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <linux/posix_acl.h>
#include <linux/posix_acl_xattr.h>

#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "enid.h"
#include "log.h"
#include "sandbox.h"

#define JSERVER_RETRY_ACCEPT_MS	1000	/* after EMFILE */
#define JSERVER_MAX_GROUPS	64
#define JSERVER_ACCEPT_BUDGET	64	/* connections taken per wakeup */
#define JSERVER_IN_KEEP		4096	/* input buffer kept between lines */
#define JSERVER_BIG		(64 * 1024) /* answers: trim the heap after */
/* A connection's first input buffer: a CNI request fits, and the
 * allocator serves this size from its per-thread cache. */
#define JSERVER_IN_FIRST	1024

struct jclient {
	struct jserver		*server;
	struct loop_io		 io;
	bool			 used;
	uint32_t		 gen;
	pid_t			 pid;
	uid_t			 uid;
	bool			 busy;		/* a request is being answered */
	bool			 taking;	/* in client_take_lines */
	size_t			 inlen, insize;
	char			*in;		/* up to the line limit + 1 */
	size_t			 outlen, outoff;
	char			*out;
	bool			 big;		/* an answer of JSERVER_BIG bytes */
	bool			 closing;	/* close once out is flushed */
	struct loop_timer	 idle_timer;	/* armed while not busy */
};

struct jserver {
	struct broker		*broker;
	const char		*what;		/* "ctl", "cni": for logs */
	int			 fd;
	char			 path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	gid_t			 group;		/* admitted besides root */
	bool			 root_only;
	dev_t			 dev;		/* the socket bind() made */
	ino_t			 ino;
	const struct jop	*ops;
	struct loop_io		 io;
	bool			 accepting;
	struct loop_timer	 retry_timer;
	size_t			 maxclients, nclients;
	size_t			 linemax;	/* a request line, without '\n' */
	struct jclient		*clients;
	struct json_tokener	*tok;		/* reset for each line */
	uint64_t		 refused, bad_requests;
	jobserve_fn		 observe;
};

/*
 * Let group read and write the socket at path, besides its owner, by a
 * POSIX access ACL (owner rw, owning group nothing, group rw, mask rw,
 * others nothing), which the owner may set without belonging to group.
 * The kernel turns the mask into the mode's group bits: 0660.
 */
static int
grant_group(const char *path, gid_t group, char *err, size_t errlen)
{
	struct {
		struct posix_acl_xattr_header	h;
		struct posix_acl_xattr_entry	e[5];
	} acl;
	const struct { uint16_t tag, perm; uint32_t id; } want[5] = {
		{ ACL_USER_OBJ, ACL_READ | ACL_WRITE, ACL_UNDEFINED_ID },
		{ ACL_GROUP_OBJ, 0, ACL_UNDEFINED_ID },
		{ ACL_GROUP, ACL_READ | ACL_WRITE, group },
		{ ACL_MASK, ACL_READ | ACL_WRITE, ACL_UNDEFINED_ID },
		{ ACL_OTHER, 0, ACL_UNDEFINED_ID },
	};
	size_t i;

	memset(&acl, 0, sizeof(acl));
	acl.h.a_version = htole32(POSIX_ACL_XATTR_VERSION);
	for (i = 0; i < 5; i++) {
		acl.e[i].e_tag = htole16(want[i].tag);
		acl.e[i].e_perm = htole16(want[i].perm);
		acl.e[i].e_id = htole32(want[i].id);
	}
	/* lsetxattr: a symlink put in its place would not be followed. */
	if (lsetxattr(path, "system.posix_acl_access", &acl, sizeof(acl),
	    0) == -1) {
		snprintf(err, errlen, "%s: letting admin_group (gid %u) in by "
		    "an ACL: %s; started without root, enid needs POSIX ACLs "
		    "on the runtime directory's file system for that (or an "
		    "empty admin_group)", path, (unsigned)group,
		    strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Make way for the socket at path, removing only one left by an enid
 * that is gone: the caller holds the runtime directory's lock (so no
 * enid that takes it is running), and nothing answers on the socket (so
 * no older enid, which took no lock, is either).  Anything else there,
 * a symbolic link or a file included, is refused and left alone.
 */
static int
clear_stale(const char *path, const struct sockaddr_un *sun, char *err,
    size_t errlen)
{
	struct stat st;
	int fd, rc;

	if (lstat(path, &st) == -1) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "%s is there and is not a socket (%s); "
		    "not removing it (remove it by hand)", path,
		    S_ISLNK(st.st_mode) ? "a symbolic link" :
		    S_ISDIR(st.st_mode) ? "a directory" : "a file");
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		snprintf(err, errlen, "%s: socket: %s", path, strerror(errno));
		return -1;
	}
	rc = connect(fd, (const struct sockaddr *)sun, sizeof(*sun));
	close(fd);
	if (rc == 0 || errno == EAGAIN || errno == EINPROGRESS) {
		snprintf(err, errlen, "%s: another process is listening on it "
		    "(an enid that takes no lock?); not replacing it", path);
		return -1;
	}
	if (errno != ECONNREFUSED) {
		snprintf(err, errlen, "%s: cannot tell whether anything "
		    "listens on it (%s); not replacing it", path,
		    strerror(errno));
		return -1;
	}
	log_info("%s: removing the socket an earlier enid left", path);
	if (unlink(path) == -1 && errno != ENOENT) {
		snprintf(err, errlen, "%s: unlink: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

struct jserver *
jserver_open(const char *path, const char *what, bool root_only,
    gid_t group, size_t maxclients, size_t linemax, char *err, size_t errlen)
{
	struct jserver *s;
	struct sockaddr_un sun;
	mode_t mask;
	gid_t egid = getegid();
	bool as_root = !sandbox_started_unprivileged();
	struct stat st;
	int rc;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		snprintf(err, errlen, "%s: socket path too long", path);
		return NULL;
	}
	strcpy(sun.sun_path, path);
	if ((s = calloc(1, sizeof(*s))) == NULL ||
	    (s->clients = calloc(maxclients, sizeof(*s->clients))) == NULL ||
	    (s->tok = json_tokener_new()) == NULL) {
		if (s != NULL)
			free(s->clients);
		free(s);
		snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	json_tokener_set_flags(s->tok, JSON_TOKENER_STRICT);
	strcpy(s->path, path);
	s->what = what;
	s->root_only = root_only;
	s->group = root_only ? 0 : group;
	s->maxclients = maxclients;
	s->linemax = linemax;
	s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->fd == -1) {
		snprintf(err, errlen, "%s: socket: %s", path, strerror(errno));
		goto fail;
	}
	if (clear_stale(path, &sun, err, errlen) == -1)
		goto fail_fd;
	/*
	 * The node bind() creates gets its mode from the umask and its group
	 * from our effective gid (we are root here): 0660 root:group for
	 * ctl.sock, 0600 root:root for cni.sock.  bind() never follows a
	 * symlink; if one appears in between, bind fails with EADDRINUSE.
	 * Without root: 0600, owned by the user (root, who runs enid-cni and
	 * enidctl, needs no permission bit), and the group comes by ACL.
	 */
	mask = umask(root_only || !as_root ? 0177 : 0117);
	if (as_root && setegid(s->group) == -1) {
		snprintf(err, errlen, "%s: setegid(%u): %s", path,
		    (unsigned)s->group, strerror(errno));
		umask(mask);
		goto fail_fd;
	}
	rc = bind(s->fd, (struct sockaddr *)&sun, sizeof(sun));
	if (rc == -1)
		snprintf(err, errlen, "%s: bind: %s", path, strerror(errno));
	if (as_root && setegid(egid) == -1)
		fatal("%s: restoring the effective gid", path);
	umask(mask);
	if (rc == -1)
		goto fail_fd;
	if (!as_root && s->group != 0 &&
	    grant_group(path, s->group, err, errlen) == -1)
		goto fail_unlink;
	if (listen(s->fd, 128) == -1) {
		snprintf(err, errlen, "%s: listen: %s", path, strerror(errno));
		goto fail_unlink;
	}
	/* What bind() made: only that is removed at exit. */
	if (lstat(path, &st) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto fail_unlink;
	}
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	return s;

fail_unlink:
	unlink(path);
fail_fd:
	close(s->fd);
fail:
	json_tokener_free(s->tok);
	free(s->clients);
	free(s);
	return NULL;
}

static void	jserver_accept_cb(struct loop *, struct loop_io *, uint32_t);

static void
jserver_set_accepting(struct jserver *s, bool on)
{
	if (s->accepting == on)
		return;
	s->accepting = on;
	if (loop_mod_io(&s->broker->loop, &s->io, on ? EPOLLIN : 0) == -1)
		fatal("%s socket: epoll", s->what);
}

static void
jserver_retry_cb(struct loop *l, struct loop_timer *t)
{
	struct jserver *s = t->arg;

	(void)l;
	if (s->nclients < s->maxclients)
		jserver_set_accepting(s, true);
}

static void
client_close(struct jclient *c)
{
	struct jserver *s = c->server;

	/* An accepted socket is never duplicated, and the broker forks
	 * nothing once its children run (they start before the sockets
	 * open, enid.c): nothing else holds it. */
	loop_close_io(&s->broker->loop, &c->io);
	loop_timer_cancel(&s->broker->loop, &c->idle_timer);
	free(c->out);
	c->out = NULL;
	free(c->in);
	c->in = NULL;
	if (c->big || c->insize > JSERVER_BIG)
		broker_trim_soon(s->broker);
	c->big = false;
	c->insize = 0;
	c->used = false;
	c->busy = false;
	c->taking = false;
	c->closing = false;
	c->inlen = c->outlen = c->outoff = 0;
	c->gen++;		/* any jref to it is stale now */
	s->nclients--;
	/* A slot is free: accept again if we had stopped for want of one. */
	if (!s->accepting && !loop_timer_armed(&s->retry_timer))
		jserver_set_accepting(s, true);
}

/*
 * What to watch: room for pending output, and nothing else until it is
 * sent; while a request is answered, only a hang-up both ways or an
 * error, which epoll reports whatever the mask (CLIENT_EV_BUSY); otherwise
 * the next request or a hang-up.  A client that is answered leaves
 * EPOLLIN on (fewer epoll_ctl calls: a client sends nothing while it
 * waits for its answer): client_cb takes it off only if input, or the end
 * of its input, does come, since while busy it would not be read and
 * would wake the loop again and again.
 */
#define CLIENT_EV_READ		(EPOLLIN | EPOLLRDHUP)
#define CLIENT_EV_BUSY		0

static void
client_watch(struct jclient *c)
{
	uint32_t ev;

	if (c->outoff < c->outlen)
		ev = EPOLLOUT;
	else if (c->busy)
		ev = c->io.events == CLIENT_EV_READ ? CLIENT_EV_READ :
		    CLIENT_EV_BUSY;
	else
		ev = CLIENT_EV_READ;
	loop_mod_io(&c->server->broker->loop, &c->io, ev);
}

static void
client_idle_cb(struct loop *l, struct loop_timer *t)
{
	struct jclient *c = t->arg;

	(void)l;
	log_info("%s: client pid %d uid %u: no request or no reading for "
	    "%d ms; closing", c->server->what, (int)c->pid, (unsigned)c->uid,
	    JSERVER_IDLE_MS);
	client_close(c);
}

static void
client_flush(struct jclient *c)
{
	ssize_t n;

	while (c->outoff < c->outlen) {
		n = send(c->io.fd, c->out + c->outoff, c->outlen - c->outoff,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n == -1) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			client_close(c);
			return;
		}
		c->outoff += (size_t)n;
	}
	if (c->outoff == c->outlen) {
		c->outoff = c->outlen = 0;
		if (c->closing) {
			client_close(c);
			return;
		}
	}
	client_watch(c);
}

static void	client_take_lines(struct jclient *c);

/*
 * Send an answer line: text (len bytes, no newline) and its newline.  With
 * nothing queued before it, straight from text in one sendmsg; what the
 * socket does not take is queued and sent as it drains.
 */
static void
client_reply_text(struct jclient *c, const char *text, size_t len)
{
	struct iovec iov[2];
	struct msghdr mh;
	size_t sent = 0;
	ssize_t n;
	char *p;

	c->busy = false;
	if (len >= JSERVER_BIG)
		c->big = true;
	loop_timer_after(&c->server->broker->loop, &c->idle_timer,
	    JSERVER_IDLE_MS);
	if (c->outlen + len + 1 > JSERVER_OUT_MAX) {
		log_warnx("%s: client pid %d: answer of %zu bytes dropped; "
		    "closing", c->server->what, (int)c->pid, len);
		client_close(c);
		return;
	}
	if (c->outlen == 0) {
		memset(&mh, 0, sizeof(mh));
		iov[0].iov_base = (char *)text;
		iov[0].iov_len = len;
		iov[1].iov_base = "\n";
		iov[1].iov_len = 1;
		mh.msg_iov = iov;
		mh.msg_iovlen = 2;
		n = sendmsg(c->io.fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n == -1 && errno != EAGAIN && errno != EINTR) {
			client_close(c);
			return;
		}
		sent = n > 0 ? (size_t)n : 0;
	}
	if (sent < len + 1) {
		size_t rest = len + 1 - sent;

		if ((p = realloc(c->out, c->outlen + rest)) == NULL) {
			log_warnx("%s: client pid %d: answer of %zu bytes "
			    "dropped; closing", c->server->what, (int)c->pid,
			    len);
			client_close(c);
			return;
		}
		c->out = p;
		if (sent < len) {
			memcpy(c->out + c->outlen, text + sent, len - sent);
			c->outlen += len - sent;
		}
		c->out[c->outlen++] = '\n';
	}
	client_flush(c);
	/* An answer given later: take the next request, if one came with
	 * this one (an answer given at once returns to the taking loop). */
	if (c->used && !c->closing && !c->taking)
		client_take_lines(c);
}

static void
client_reply(struct jclient *c, struct json_object *o)
{
	const char *str = json_object_to_json_string_ext(o,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);

	client_reply_text(c, str, strlen(str));
	json_object_put(o);
}

/* What the observer is told of an answer: "ok", or its error's code. */
static const char *
answer_code(struct json_object *o)
{
	struct json_object *v;

	if (json_object_object_get_ex(o, "ok", &v) &&
	    json_object_get_boolean(v))
		return "ok";
	if (json_object_object_get_ex(o, "code", &v) &&
	    json_object_is_type(v, json_type_string))
		return json_object_get_string(v);
	return "unknown";
}

static struct jclient *
jref_client(const struct jref *r)
{
	struct jclient *c;

	if (r->server == NULL || r->slot >= r->server->maxclients)
		return NULL;
	c = &r->server->clients[r->slot];
	if (!c->used || c->gen != r->gen || !c->busy)
		return NULL;
	return c;
}

bool
jref_alive(const struct jref *r)
{
	return jref_client(r) != NULL;
}

void
jref_reply(struct jref *r, struct json_object *o)
{
	struct jclient *c = jref_client(r);

	if (r->server != NULL && r->server->observe != NULL)
		r->server->observe(r->server->broker, r, answer_code(o));
	r->server = NULL;
	if (c == NULL) {
		json_object_put(o);	/* the client left; nobody to tell */
		return;
	}
	client_reply(c, o);
}

void
jref_reply_ok_text(struct jref *r, const char *text, size_t len)
{
	struct jclient *c = jref_client(r);

	if (r->server != NULL && r->server->observe != NULL)
		r->server->observe(r->server->broker, r, "ok");
	r->server = NULL;
	if (c != NULL)
		client_reply_text(c, text, len);
}

struct json_object *
jerror_new(const char *code, const char *fmt, ...)
{
	struct json_object *o = json_object_new_object();
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_object_object_add(o, "ok", json_object_new_boolean(0));
	json_object_object_add(o, "code", json_object_new_string(code));
	json_object_object_add(o, "error", json_object_new_string(msg));
	return o;
}

void
jref_error(struct jref *r, const char *code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	jref_reply(r, jerror_new(code, "%s", msg));
}

void
jref_bad(struct jref *r, const char *fmt, ...)
{
	struct jclient *c = jref_client(r);
	struct json_object *o;
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	o = jerror_new("bad-request", "%s", msg);
	if (r->server != NULL && r->server->observe != NULL)
		r->server->observe(r->server->broker, r, "bad-request");
	r->server = NULL;
	if (c == NULL) {
		json_object_put(o);
		return;
	}
	c->server->bad_requests++;
	log_info("%s: client pid %d uid %u: bad request: %s", c->server->what,
	    (int)c->pid, (unsigned)c->uid, msg);
	c->closing = true;
	client_reply(c, o);
}

/* A request we cannot take: answer bad-request, close after the answer. */
static void
client_bad(struct jclient *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
client_bad(struct jclient *c, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->server->bad_requests++;
	log_info("%s: client pid %d uid %u: bad request: %s", c->server->what,
	    (int)c->pid, (unsigned)c->uid, msg);
	c->closing = true;
	client_reply(c, jerror_new("bad-request", "%s", msg));
}

static void
client_line(struct jclient *c, const char *line, size_t len)
{
	struct json_tokener *tok = c->server->tok;
	struct json_object *req, *op;
	const struct jop *o;
	const char *name;
	struct jref ref;
	char shown[65];

	/* The server's one tokener: a line is parsed whole before its op
	 * runs, so an op answering another client, whose next line is then
	 * taken, cannot find it in use. */
	json_tokener_reset(tok);
	req = json_tokener_parse_ex(tok, line, (int)len);
	if (req == NULL || json_tokener_get_error(tok) != json_tokener_success
	    || json_tokener_get_parse_end(tok) != len) {
		json_object_put(req);
		client_bad(c, "invalid JSON");
		return;
	}
	if (!json_object_is_type(req, json_type_object)) {
		json_object_put(req);
		client_bad(c, "request must be a JSON object");
		return;
	}
	if (!json_object_object_get_ex(req, "op", &op) ||
	    !json_object_is_type(op, json_type_string)) {
		json_object_put(req);
		client_bad(c, "missing string field \"op\"");
		return;
	}
	name = json_object_get_string(op);
	for (o = c->server->ops; o->name != NULL; o++)
		if (strcmp(o->name, name) == 0)
			break;
	if (o->name == NULL) {
		client_bad(c, "unknown op \"%s\"",
		    log_tame(name, shown, sizeof(shown)));
		json_object_put(req);
		return;
	}
	/* While it is answered, read nothing more but watch for the client
	 * hanging up, so a waiting op can see it left. */
	c->busy = true;
	loop_timer_cancel(&c->server->broker->loop, &c->idle_timer);
	client_watch(c);
	ref.server = c->server;
	ref.slot = (uint32_t)(c - c->server->clients);
	ref.gen = c->gen;
	ref.pid = c->pid;
	ref.uid = c->uid;
	ref.op = o->name;
	ref.t0_us = now_us();
	o->fn(c->server->broker, &ref, req);
	json_object_put(req);
}

/* Take complete lines, one at a time, while no request is being answered
 * and no answer waits to be sent.  Each is tokenised where it lies (the
 * op gets the object, not the text); the rest is moved down once. */
static void
client_take_lines(struct jclient *c)
{
	struct jserver *s = c->server;
	uint32_t gen = c->gen;
	size_t off = 0;
	char *nl;

	if (c->inlen == 0)
		return;
	c->taking = true;
	while (c->used && c->gen == gen && !c->busy && !c->closing &&
	    c->outlen == 0 &&
	    (nl = memchr(c->in + off, '\n', c->inlen - off)) != NULL) {
		size_t linelen = (size_t)(nl - (c->in + off));

		off += linelen + 1;
		client_line(c, nl - linelen, linelen);
	}
	if (!c->used || c->gen != gen)
		return;			/* closed while answering */
	c->taking = false;
	memmove(c->in, c->in + off, c->inlen - off);
	c->inlen -= off;
	if (c->inlen == 0 && c->insize > JSERVER_IN_KEEP) {
		free(c->in);		/* a long line's room, given back */
		c->in = NULL;
		c->insize = 0;
	}
	if (!c->closing && c->inlen > s->linemax &&
	    memchr(c->in, '\n', c->inlen) == NULL)
		client_bad(c, "request line longer than %zu bytes",
		    s->linemax);
}

/* Room for more input: double, up to the line limit and its newline. */
static int
client_grow(struct jclient *c)
{
	size_t size = c->insize ? c->insize * 2 : JSERVER_IN_FIRST;
	char *p;

	if (size > c->server->linemax + 1)
		size = c->server->linemax + 1;
	if (size <= c->insize || (p = realloc(c->in, size)) == NULL)
		return -1;
	c->in = p;
	c->insize = size;
	return 0;
}

static void
client_cb(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct jclient *c = io->arg;
	ssize_t n;

	if (events & EPOLLOUT) {
		client_flush(c);
		/* All sent: the next request, if one came meanwhile. */
		if (c->used && c->outlen == 0 && !c->busy && !c->closing)
			client_take_lines(c);
		return;
	}
	if (c->busy || c->outlen > 0) {
		if (events & (EPOLLHUP | EPOLLERR))
			client_close(c);	/* its jref goes stale */
		else if (c->busy && (events & (EPOLLIN | EPOLLRDHUP)))
			/* Input, or the end of its input (a client that
			 * shut down its writing side waits for the answer
			 * all the same), before its answer: read later.  Not
			 * once answered: an input event gathered before the
			 * answer was given must not take the place of
			 * EPOLLOUT, or what the answer left queued is never
			 * sent. */
			loop_mod_io(l, &c->io, CLIENT_EV_BUSY);
		return;
	}
	if (c->closing)
		return;
	if (events & (EPOLLHUP | EPOLLERR)) {
		/* Hung up both ways (or reset): nothing it still sends can
		 * be answered, so none of it is read, let alone run.  The
		 * usual end of a client, after its answer, without the
		 * recv that would only have said so. */
		client_close(c);
		return;
	}
	if (c->inlen == c->insize && client_grow(c) == -1) {
		log_warnx("%s: client pid %d: input buffer of %zu bytes "
		    "cannot grow; closing", c->server->what, (int)c->pid,
		    c->insize);
		client_close(c);
		return;
	}
	n = recv(io->fd, c->in + c->inlen, c->insize - c->inlen,
	    MSG_DONTWAIT);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		/* Gone.  A request still being answered has its jref go
		 * stale: its answer is dropped, its work goes on. */
		client_close(c);
		return;
	}
	c->inlen += (size_t)n;
	client_take_lines(c);
}

/* Root, or (for ctl.sock) a member of the admin group. */
static bool
peer_admitted(const struct jserver *s, int fd, const struct ucred *cred)
{
	gid_t groups[JSERVER_MAX_GROUPS];
	socklen_t len = sizeof(groups);
	size_t i, n;

	if (cred->uid == 0)
		return true;
	if (s->root_only || s->group == 0)
		return false;
	if (cred->gid == s->group)
		return true;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == -1)
		return false;
	n = len / sizeof(gid_t);
	for (i = 0; i < n; i++)
		if (groups[i] == s->group)
			return true;
	return false;
}

/* Accept one connection; false when there is nothing more to accept now
 * (none waiting, no slot, or out of descriptors). */
static bool
jserver_accept_one(struct loop *l, struct jserver *s)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct jclient *c = NULL;
	size_t i;
	int fd;

	if (s->nclients == s->maxclients) {
		/* No slot: leave connections in the backlog until one is
		 * freed (client_close resumes accepting). */
		jserver_set_accepting(s, false);
		return false;
	}
	fd = accept4(s->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd == -1) {
		if (errno == EMFILE || errno == ENFILE) {
			log_warnx("%s: accept: %s; pausing for %d ms", s->what,
			    strerror(errno), JSERVER_RETRY_ACCEPT_MS);
			jserver_set_accepting(s, false);
			loop_timer_after(l, &s->retry_timer,
			    JSERVER_RETRY_ACCEPT_MS);
		}
		return false;
	}
	memset(&cred, 0, sizeof(cred));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1) {
		log_warn("%s: SO_PEERCRED", s->what);
		close(fd);
		return true;
	}
	if (!peer_admitted(s, fd, &cred)) {
		s->refused++;
		log_security("%s: connection from pid %d uid %u gid %u refused: "
		    "%s", s->what, (int)cred.pid, (unsigned)cred.uid,
		    (unsigned)cred.gid, s->root_only ? "only root may connect" :
		    "neither root nor in the admin group");
		close(fd);
		return true;
	}
	for (i = 0; i < s->maxclients; i++)
		if (!s->clients[i].used) {
			c = &s->clients[i];
			break;
		}
	c->used = true;
	c->server = s;
	c->pid = cred.pid;
	c->uid = cred.uid;
	c->inlen = c->insize = c->outlen = c->outoff = 0;
	if (loop_add_io(l, &c->io, fd, CLIENT_EV_READ, client_cb, c) == -1) {
		log_warn("%s: watching a client", s->what);
		close(fd);
		c->used = false;
		return false;
	}
	loop_timer_init(&c->idle_timer, client_idle_cb, c);
	loop_timer_after(l, &c->idle_timer, JSERVER_IDLE_MS);
	s->nclients++;
	/* A client writes its request right after connecting: take it now,
	 * not a loop turn later.  (Read here, a request is run even if its
	 * client has hung up since it sent it: finding out would cost every
	 * client another call.) */
	client_cb(l, &c->io, EPOLLIN);
	return true;
}

/*
 * Take every waiting connection (up to a bound), not one per wakeup:
 * clients that connect together are then read, answered by netd, and
 * checkpointed together, one write for all of them.  One accept per loop
 * turn would let the backlog feed one request into each turn, and each
 * would pay for a checkpoint write of its own.
 */
static void
jserver_accept_cb(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct jserver *s = io->arg;
	int n;

	(void)events;
	for (n = 0; n < JSERVER_ACCEPT_BUDGET; n++)
		if (!jserver_accept_one(l, s))
			break;
}

int
jserver_start(struct broker *b, struct jserver *s, const struct jop *ops)
{
	s->broker = b;
	s->ops = ops;
	s->accepting = true;
	loop_timer_init(&s->retry_timer, jserver_retry_cb, s);
	return loop_add_io(&b->loop, &s->io, s->fd, EPOLLIN, jserver_accept_cb,
	    s);
}

void
jserver_close(struct broker *b, struct jserver *s)
{
	struct stat st;
	size_t i;

	if (s == NULL)
		return;
	for (i = 0; i < s->maxclients; i++)
		if (s->clients[i].used)
			client_close(&s->clients[i]);
	loop_timer_cancel(&b->loop, &s->retry_timer);
	loop_del_io(&b->loop, &s->io);
	close(s->fd);
	/* Only the socket this enid made: never one that replaced it. */
	if (lstat(s->path, &st) == 0 && st.st_dev == s->dev &&
	    st.st_ino == s->ino)
		unlink(s->path);
	json_tokener_free(s->tok);
	free(s->clients);
	free(s);
}

void
jserver_counters(const struct jserver *s, size_t *clients, uint64_t *refused,
    uint64_t *bad)
{
	*clients = s->nclients;
	*refused = s->refused;
	*bad = s->bad_requests;
}

void
jserver_observe(struct jserver *s, jobserve_fn fn)
{
	s->observe = fn;
}
