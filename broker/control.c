/*
 * The admin socket (ctl.sock, mode 0660, root and admin_group): one JSON
 * object per line each way.  A line over CTL_LINE_MAX, invalid JSON, a
 * missing or mistyped field gets "bad-request" and the connection is
 * closed; nothing in the daemon changes.
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

#include "addr.h"
#include "enid.h"
#include "log.h"

#define CTL_LINE_MAX	4096
#define CTL_MAX_CLIENTS	32
#define CTL_OUT_MAX	65536

struct ctl_client {
	struct ctl_server	*server;
	struct loop_io		 io;
	bool			 used;
	pid_t			 pid;
	uid_t			 uid;
	size_t			 inlen;
	char			 in[CTL_LINE_MAX + 1];
	size_t			 outlen, outoff;
	char			*out;
	bool			 closing;	/* close once out is flushed */
};

struct ctl_server {
	struct broker		*broker;
	int			 fd;
	char			 path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct loop_io		 io;
	struct ctl_client	 clients[CTL_MAX_CLIENTS];
};

struct ctl_server *
ctl_open(const char *path, gid_t group, char *err, size_t errlen)
{
	struct ctl_server *cs;
	struct sockaddr_un sun;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		snprintf(err, errlen, "%s: socket path too long", path);
		return NULL;
	}
	strcpy(sun.sun_path, path);
	if ((cs = calloc(1, sizeof(*cs))) == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	strcpy(cs->path, path);
	cs->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (cs->fd == -1) {
		snprintf(err, errlen, "%s: socket: %s", path, strerror(errno));
		goto fail;
	}
	if (unlink(path) == -1 && errno != ENOENT) {
		snprintf(err, errlen, "%s: unlink: %s", path, strerror(errno));
		goto fail_fd;
	}
	if (bind(cs->fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		snprintf(err, errlen, "%s: bind: %s", path, strerror(errno));
		goto fail_fd;
	}
	if (chown(path, 0, group) == -1 || chmod(path, 0660) == -1) {
		snprintf(err, errlen, "%s: owner and mode: %s", path,
		    strerror(errno));
		goto fail_unlink;
	}
	if (listen(cs->fd, 64) == -1) {
		snprintf(err, errlen, "%s: listen: %s", path, strerror(errno));
		goto fail_unlink;
	}
	return cs;

fail_unlink:
	unlink(path);
fail_fd:
	close(cs->fd);
fail:
	free(cs);
	return NULL;
}

static void
client_close(struct ctl_client *c)
{
	struct broker *b = c->server->broker;

	loop_del_io(&b->loop, &c->io);
	close(c->io.fd);
	free(c->out);
	memset(c, 0, sizeof(*c));
}

static void
client_flush(struct ctl_client *c)
{
	struct broker *b = c->server->broker;
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
		loop_mod_io(&b->loop, &c->io, EPOLLIN);
	} else
		loop_mod_io(&b->loop, &c->io, EPOLLOUT);
}

/* Queue one answer line; takes the object's reference. */
static void
client_reply(struct ctl_client *c, struct json_object *o)
{
	const char *s = json_object_to_json_string_ext(o,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	size_t len = strlen(s);
	char *p;

	if (c->outlen + len + 1 > CTL_OUT_MAX) {
		json_object_put(o);
		client_close(c);
		return;
	}
	p = realloc(c->out, c->outlen + len + 1);
	if (p == NULL) {
		json_object_put(o);
		client_close(c);
		return;
	}
	c->out = p;
	memcpy(c->out + c->outlen, s, len);
	c->out[c->outlen + len] = '\n';
	c->outlen += len + 1;
	json_object_put(o);
	client_flush(c);
}

static void
client_error(struct ctl_client *c, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
client_error(struct ctl_client *c, const char *code, const char *fmt, ...)
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
	if (strcmp(code, "bad-request") == 0) {
		log_info("ctl: client pid %d uid %u: bad request: %s",
		    (int)c->pid, (unsigned)c->uid, msg);
		c->closing = true;
	}
	client_reply(c, o);
}

static struct json_object *
process_json(const struct child *ch)
{
	struct json_object *p = json_object_new_object();

	json_object_object_add(p, "name", json_object_new_string(ch->name));
	json_object_object_add(p, "pid", json_object_new_int(ch->pid));
	json_object_object_add(p, "ready", json_object_new_boolean(ch->ready));
	return p;
}

static struct json_object *
instance_json(const struct broker *b)
{
	const struct msg_cloud_instance *in = &b->instance;
	struct json_object *o = json_object_new_object();
	struct json_object *cidrs;
	char mac[MAC_STR_LEN], cidr[CIDR4_STR_LEN];
	uint32_t i;

	json_object_object_add(o, "state",
	    json_object_new_string(instance_state_name(b->instance_state)));
	if (b->instance_state != INSTANCE_KNOWN) {
		if (b->instance_error[0] != '\0')
			json_object_object_add(o, "error",
			    json_object_new_string(b->instance_error));
		return o;
	}
	mac_format(in->primary_mac, mac);
	json_object_object_add(o, "id", json_object_new_string(in->instance_id));
	json_object_object_add(o, "type",
	    json_object_new_string(in->instance_type));
	json_object_object_add(o, "az", json_object_new_string(in->az));
	json_object_object_add(o, "primary_eni",
	    json_object_new_string(in->primary_eni));
	json_object_object_add(o, "primary_mac", json_object_new_string(mac));
	json_object_object_add(o, "subnet", json_object_new_string(in->subnet_id));
	cidrs = json_object_new_array();
	for (i = 0; i < in->ncidrs && i < MSG_MAX_CIDRS; i++) {
		cidr4_format(in->cidrs[i].addr, in->cidrs[i].prefix, cidr);
		json_object_array_add(cidrs, json_object_new_string(cidr));
	}
	json_object_object_add(o, "vpc_cidrs", cidrs);
	json_object_object_add(o, "max_enis", json_object_new_int(in->max_enis));
	json_object_object_add(o, "ips_per_eni",
	    json_object_new_int(in->ips_per_eni));
	return o;
}

static void
op_status(struct ctl_client *c)
{
	struct broker *b = c->server->broker;
	struct json_object *o = json_object_new_object();
	struct json_object *procs = json_object_new_array();
	struct json_object *self = json_object_new_object();

	json_object_object_add(self, "name", json_object_new_string("enid"));
	json_object_object_add(self, "pid", json_object_new_int(getpid()));
	json_object_object_add(self, "ready", json_object_new_boolean(
	    b->netd.ready && b->cloudd.ready));
	json_object_array_add(procs, self);
	json_object_array_add(procs, process_json(&b->netd));
	json_object_array_add(procs, process_json(&b->cloudd));
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "version", json_object_new_string(VERSION));
	json_object_object_add(o, "uptime_s",
	    json_object_new_int64((int64_t)((now_ms() - b->started_ms) / 1000)));
	json_object_object_add(o, "log_level",
	    json_object_new_string(log_level_name(log_get_level())));
	json_object_object_add(o, "processes", procs);
	json_object_object_add(o, "instance", instance_json(b));
	client_reply(c, o);
}

static void
op_log_level(struct ctl_client *c, struct json_object *req)
{
	struct broker *b = c->server->broker;
	struct json_object *v, *o;
	struct msg_loglevel ll;
	int level;

	if (!json_object_object_get_ex(req, "level", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		client_error(c, "bad-request", "\"level\" must be a string");
		return;
	}
	level = log_level_parse(json_object_get_string(v));
	if (level < 0) {
		client_error(c, "bad-request", "unknown level \"%s\" (error, "
		    "warning, info, debug)", json_object_get_string(v));
		return;
	}
	log_set_level(level);
	memset(&ll, 0, sizeof(ll));
	ll.level = level;
	if (b->netd.pid > 0)
		msg_send(&b->netd.chan, MSG_LOG_LEVEL, ++b->next_id, &ll,
		    sizeof(ll));
	if (b->cloudd.pid > 0)
		msg_send(&b->cloudd.chan, MSG_LOG_LEVEL, ++b->next_id, &ll,
		    sizeof(ll));
	log_info("ctl: log level set to %s by pid %d uid %u",
	    log_level_name(level), (int)c->pid, (unsigned)c->uid);
	o = json_object_new_object();
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "log_level",
	    json_object_new_string(log_level_name(level)));
	client_reply(c, o);
}

static void
client_line(struct ctl_client *c, const char *line, size_t len)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *req, *op;
	const char *name;

	req = json_tokener_parse_ex(tok, line, (int)len);
	if (req == NULL || json_tokener_get_error(tok) != json_tokener_success
	    || json_tokener_get_parse_end(tok) != len) {
		json_tokener_free(tok);
		json_object_put(req);
		client_error(c, "bad-request", "invalid JSON");
		return;
	}
	json_tokener_free(tok);
	if (!json_object_is_type(req, json_type_object)) {
		json_object_put(req);
		client_error(c, "bad-request", "request must be a JSON object");
		return;
	}
	if (!json_object_object_get_ex(req, "op", &op) ||
	    !json_object_is_type(op, json_type_string)) {
		json_object_put(req);
		client_error(c, "bad-request", "missing string field \"op\"");
		return;
	}
	name = json_object_get_string(op);
	if (strcmp(name, "status") == 0)
		op_status(c);
	else if (strcmp(name, "log-level") == 0)
		op_log_level(c, req);
	else
		client_error(c, "bad-request", "unknown op \"%.64s\"", name);
	json_object_put(req);
}

static void
client_cb(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct ctl_client *c = io->arg;
	ssize_t n;
	char *nl;

	(void)l;
	if (events & EPOLLOUT) {
		client_flush(c);
		return;
	}
	if (c->closing)
		return;
	n = recv(io->fd, c->in + c->inlen, CTL_LINE_MAX + 1 - c->inlen,
	    MSG_DONTWAIT);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		client_close(c);
		return;
	}
	c->inlen += (size_t)n;
	/* One request at a time; the answer is written before the next. */
	while (!c->closing && (nl = memchr(c->in, '\n', c->inlen)) != NULL) {
		size_t linelen = (size_t)(nl - c->in);

		client_line(c, c->in, linelen);
		if (!c->used)
			return;		/* closed while answering */
		memmove(c->in, nl + 1, c->inlen - linelen - 1);
		c->inlen -= linelen + 1;
	}
	if (!c->closing && c->inlen > CTL_LINE_MAX)
		client_error(c, "bad-request", "request line longer than %d "
		    "bytes", CTL_LINE_MAX);
}

static void
ctl_accept_cb(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct ctl_server *cs = io->arg;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int fd, i;

	(void)events;
	fd = accept4(cs->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd == -1)
		return;
	for (i = 0; i < CTL_MAX_CLIENTS; i++)
		if (!cs->clients[i].used)
			break;
	if (i == CTL_MAX_CLIENTS) {
		log_warnx("ctl: %d clients connected; refusing another",
		    CTL_MAX_CLIENTS);
		close(fd);
		return;
	}
	memset(&cred, 0, sizeof(cred));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1) {
		close(fd);
		return;
	}
	cs->clients[i].used = true;
	cs->clients[i].server = cs;
	cs->clients[i].pid = cred.pid;
	cs->clients[i].uid = cred.uid;
	if (loop_add_io(l, &cs->clients[i].io, fd, EPOLLIN, client_cb,
	    &cs->clients[i]) == -1) {
		close(fd);
		memset(&cs->clients[i], 0, sizeof(cs->clients[i]));
	}
}

int
ctl_start(struct broker *b, struct ctl_server *cs)
{
	cs->broker = b;
	return loop_add_io(&b->loop, &cs->io, cs->fd, EPOLLIN, ctl_accept_cb,
	    cs);
}

void
ctl_close(struct broker *b, struct ctl_server *cs)
{
	int i;

	if (cs == NULL)
		return;
	for (i = 0; i < CTL_MAX_CLIENTS; i++)
		if (cs->clients[i].used)
			client_close(&cs->clients[i]);
	loop_del_io(&b->loop, &cs->io);
	close(cs->fd);
	unlink(cs->path);
	free(cs);
}
