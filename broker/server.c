/*
 * The broker's unix stream sockets (ctl.sock and cni.sock): one JSON object
 * per line each way, one request at a time per connection.  Set up as
 * OpenBSD dhcpleased's control.c does: the socket is created under a umask
 * and, for its group, an effective gid chosen before bind(), so nothing is
 * ever chowned or chmodded by path in a directory the unprivileged user
 * owns; each peer's credentials (SO_PEERCRED, SO_PEERGROUPS) are checked
 * at accept; accepting pauses while descriptors or client slots run out.
 *
 * A line over the limit, invalid JSON, or a request that is not an object
 * with a string "op" gets "bad-request" and the connection is closed;
 * nothing in the daemon changes.  An op may answer later (an ADD waiting
 * for the pool): it keeps a jref, which goes stale if the client leaves.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "enid.h"
#include "log.h"

#define JSERVER_RETRY_ACCEPT_MS	1000	/* after EMFILE */
#define JSERVER_MAX_GROUPS	64

struct jclient {
	struct jserver		*server;
	struct loop_io		 io;
	bool			 used;
	uint32_t		 gen;
	pid_t			 pid;
	uid_t			 uid;
	bool			 busy;		/* a request is being answered */
	bool			 taking;	/* in client_take_lines */
	size_t			 inlen;
	char			 in[JSERVER_LINE_MAX + 1];
	size_t			 outlen, outoff;
	char			*out;
	bool			 closing;	/* close once out is flushed */
};

struct jserver {
	struct broker		*broker;
	const char		*what;		/* "ctl", "cni": for logs */
	int			 fd;
	char			 path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	gid_t			 group;		/* admitted besides root */
	bool			 root_only;
	const struct jop	*ops;
	struct loop_io		 io;
	bool			 accepting;
	struct loop_timer	 retry_timer;
	size_t			 maxclients, nclients;
	struct jclient		*clients;
	uint64_t		 refused, bad_requests;
	jobserve_fn		 observe;
};

struct jserver *
jserver_open(const char *path, const char *what, bool root_only,
    gid_t group, size_t maxclients, char *err, size_t errlen)
{
	struct jserver *s;
	struct sockaddr_un sun;
	mode_t mask;
	gid_t egid = getegid();
	int rc;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		snprintf(err, errlen, "%s: socket path too long", path);
		return NULL;
	}
	strcpy(sun.sun_path, path);
	if ((s = calloc(1, sizeof(*s))) == NULL ||
	    (s->clients = calloc(maxclients, sizeof(*s->clients))) == NULL) {
		free(s);
		snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	strcpy(s->path, path);
	s->what = what;
	s->root_only = root_only;
	s->group = root_only ? 0 : group;
	s->maxclients = maxclients;
	s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->fd == -1) {
		snprintf(err, errlen, "%s: socket: %s", path, strerror(errno));
		goto fail;
	}
	/* unlink() removes a planted symlink itself, never its target. */
	if (unlink(path) == -1 && errno != ENOENT) {
		snprintf(err, errlen, "%s: unlink: %s", path, strerror(errno));
		goto fail_fd;
	}
	/*
	 * The node bind() creates gets its mode from the umask and its group
	 * from our effective gid (we are root here): 0660 root:group for
	 * ctl.sock, 0600 root:root for cni.sock.  bind() never follows a
	 * symlink; if one appears in between, bind fails with EADDRINUSE.
	 */
	mask = umask(root_only ? 0177 : 0117);
	if (setegid(s->group) == -1) {
		snprintf(err, errlen, "%s: setegid(%u): %s", path,
		    (unsigned)s->group, strerror(errno));
		umask(mask);
		goto fail_fd;
	}
	rc = bind(s->fd, (struct sockaddr *)&sun, sizeof(sun));
	if (rc == -1)
		snprintf(err, errlen, "%s: bind: %s", path, strerror(errno));
	if (setegid(egid) == -1)
		fatal("%s: restoring the effective gid", path);
	umask(mask);
	if (rc == -1)
		goto fail_fd;
	if (listen(s->fd, 128) == -1) {
		snprintf(err, errlen, "%s: listen: %s", path, strerror(errno));
		goto fail_unlink;
	}
	return s;

fail_unlink:
	unlink(path);
fail_fd:
	close(s->fd);
fail:
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

	loop_del_io(&s->broker->loop, &c->io);
	close(c->io.fd);
	free(c->out);
	c->out = NULL;
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

/* What to watch: room for pending output; while a request is answered,
 * only a hang-up; otherwise the next request. */
static void
client_watch(struct jclient *c)
{
	uint32_t ev = c->busy ? EPOLLRDHUP : EPOLLIN;

	if (c->outoff < c->outlen)
		ev |= EPOLLOUT;
	loop_mod_io(&c->server->broker->loop, &c->io, ev);
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

static void
client_reply(struct jclient *c, struct json_object *o)
{
	const char *str = json_object_to_json_string_ext(o,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	size_t len = strlen(str);
	char *p;

	c->busy = false;
	if (c->outlen + len + 1 > JSERVER_OUT_MAX ||
	    (p = realloc(c->out, c->outlen + len + 1)) == NULL) {
		log_warnx("%s: client pid %d: answer of %zu bytes dropped; "
		    "closing", c->server->what, (int)c->pid, len);
		json_object_put(o);
		client_close(c);
		return;
	}
	c->out = p;
	memcpy(c->out + c->outlen, str, len);
	c->out[c->outlen + len] = '\n';
	c->outlen += len + 1;
	json_object_put(o);
	client_flush(c);
	/* An answer given later: take the next request, if one came with
	 * this one (an answer given at once returns to the taking loop). */
	if (c->used && !c->closing && !c->taking)
		client_take_lines(c);
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
		r->server->observe(r->server->broker, r, o);
	r->server = NULL;
	if (c == NULL) {
		json_object_put(o);	/* the client left; nobody to tell */
		return;
	}
	client_reply(c, o);
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
		r->server->observe(r->server->broker, r, o);
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
	struct json_tokener *tok;
	struct json_object *req, *op;
	const struct jop *o;
	const char *name;
	struct jref ref;

	if ((tok = json_tokener_new()) == NULL) {
		client_bad(c, "out of memory");
		return;
	}
	req = json_tokener_parse_ex(tok, line, (int)len);
	if (req == NULL || json_tokener_get_error(tok) != json_tokener_success
	    || json_tokener_get_parse_end(tok) != len) {
		json_tokener_free(tok);
		json_object_put(req);
		client_bad(c, "invalid JSON");
		return;
	}
	json_tokener_free(tok);
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
		client_bad(c, "unknown op \"%.64s\"", name);
		json_object_put(req);
		return;
	}
	/* While it is answered, read nothing more but watch for the client
	 * hanging up, so a waiting op can see it left. */
	c->busy = true;
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

/* Take complete lines, one at a time, while no request is being
 * answered. */
static void
client_take_lines(struct jclient *c)
{
	static char line[JSERVER_LINE_MAX + 1];
	uint32_t gen = c->gen;
	char *nl;

	c->taking = true;
	while (c->used && c->gen == gen && !c->busy && !c->closing &&
	    (nl = memchr(c->in, '\n', c->inlen)) != NULL) {
		size_t linelen = (size_t)(nl - c->in);

		/* Out of the buffer before it is handled. */
		memcpy(line, c->in, linelen);
		line[linelen] = '\0';
		memmove(c->in, nl + 1, c->inlen - linelen - 1);
		c->inlen -= linelen + 1;
		client_line(c, line, linelen);
	}
	if (!c->used || c->gen != gen)
		return;			/* closed while answering */
	c->taking = false;
	if (!c->closing && c->inlen > JSERVER_LINE_MAX)
		client_bad(c, "request line longer than %d bytes",
		    JSERVER_LINE_MAX);
}

static void
client_cb(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct jclient *c = io->arg;
	ssize_t n;

	(void)l;
	if (events & EPOLLOUT) {
		client_flush(c);
		if (!c->used || !(events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP)))
			return;
	}
	if (c->busy) {
		if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
			client_close(c);	/* its jref goes stale */
		return;
	}
	if (c->closing)
		return;
	n = recv(io->fd, c->in + c->inlen, JSERVER_LINE_MAX + 1 - c->inlen,
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

static void
jserver_accept_cb(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct jserver *s = io->arg;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct jclient *c = NULL;
	size_t i;
	int fd;

	(void)events;
	if (s->nclients == s->maxclients) {
		/* No slot: leave connections in the backlog until one is
		 * freed (client_close resumes accepting). */
		jserver_set_accepting(s, false);
		return;
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
		return;
	}
	memset(&cred, 0, sizeof(cred));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1) {
		log_warn("%s: SO_PEERCRED", s->what);
		close(fd);
		return;
	}
	if (!peer_admitted(s, fd, &cred)) {
		s->refused++;
		log_security("%s: connection from pid %d uid %u gid %u refused: "
		    "%s", s->what, (int)cred.pid, (unsigned)cred.uid,
		    (unsigned)cred.gid, s->root_only ? "only root may connect" :
		    "neither root nor in the admin group");
		close(fd);
		return;
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
	c->inlen = c->outlen = c->outoff = 0;
	if (loop_add_io(l, &c->io, fd, EPOLLIN, client_cb, c) == -1) {
		log_warn("%s: watching a client", s->what);
		close(fd);
		c->used = false;
		return;
	}
	s->nclients++;
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
	size_t i;

	if (s == NULL)
		return;
	for (i = 0; i < s->maxclients; i++)
		if (s->clients[i].used)
			client_close(&s->clients[i]);
	loop_timer_cancel(&b->loop, &s->retry_timer);
	loop_del_io(&b->loop, &s->io);
	close(s->fd);
	unlink(s->path);
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
