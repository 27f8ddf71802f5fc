/*
 * enid-cni: the CNI plugin (CNI spec 1.1; configurations at 0.4.0, 1.0.0
 * and 1.1.0 accepted, results in their shape).  Executed as root by the
 * container runtime, in the node's network namespace, with the network
 * configuration on stdin and the command in CNI_COMMAND.
 *
 * Two roles, chosen by the name it is executed as:
 *   enid-cni   takes an address from enid over its CNI socket and wires
 *              the pod itself (wire.c): a veth pair, the /32 in the pod, a
 *              link-local gateway, a host route;
 *   enid-ipam  an IPAM plugin under another (the reference ptp): it only
 *              takes the address and answers with ips, routes and dns.
 * Either way enid has enid-netd install the pod's policy rules before it
 * answers an ADD.
 *
 * Errors go to stdout as {"cniVersion","code","msg","details"} with exit
 * status 1, as libcni reads them there; enid-cni(8) has the codes.  Every
 * error path gives back what the invocation took: the links it made, and
 * enid's assignment (through a DEL of its own).
 *
 * Where the time goes matters (a pod's start waits on it): the request to
 * enid is sent first, and the kernel work that does not need its answer
 * (creating the veth pair on ADD, deleting it on DEL) runs while enid
 * writes its checkpoint.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "addr.h"
#include "answer.h"
#include "cniconf.h"
#include "wire.h"

#define CNI_TIMEOUT_MS		30000	/* enid's add_timeout is less */
#define CNI_ANSWER_REST_MS	2000	/* the line after its first byte */
#define CNI_RELEASE_MS		5000	/* a DEL of our own, on an error path */

/* Kept in the binary for enid-cni-install, which replaces a file of this
 * name in the host's CNI directory only if it carries this. */
__attribute__((used)) static const char plugin_mark[] = CNI_PLUGIN_MARK;

/* A request on enid's CNI socket, sent now and answered later. */
struct call {
	int		 fd;
	int		 code;		/* CNI code when it failed */
	char		 err[CNI_MSG_LEN];
};

/* The process context, held here so an error exit can release it. */
static struct {
	struct cni_conf	 c;
	struct wire	 w;
	bool		 wire_open;
	const char	*version;	/* what errors are answered in */
	struct cni_answer ans;
} cni = { .version = "1.1.0" };

static void
print_json(struct json_object *o)
{
	printf("%s\n", json_object_to_json_string_ext(o,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	/* Flushed here: a sanitizer report at exit must not swallow it. */
	fflush(stdout);
}

static void
cleanup(void)
{
	if (cni.wire_open)
		wire_close(&cni.w);
	cni.wire_open = false;
	cni_conf_free(&cni.c);
}

static void
cni_fail_error(const struct cni_error *e) __attribute__((noreturn));

static void
cni_fail_error(const struct cni_error *e)
{
	struct json_object *o = cni_result_error(cni.version, e);

	print_json(o);
	json_object_put(o);
	cleanup();
	exit(1);
}

static void
cni_fail(int code, const char *details, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

static void
cni_fail(int code, const char *details, const char *fmt, ...)
{
	struct cni_error e;
	va_list ap;

	memset(&e, 0, sizeof(e));
	e.code = code;
	va_start(ap, fmt);
	vsnprintf(e.msg, sizeof(e.msg), fmt, ap);
	va_end(ap);
	if (details != NULL)
		snprintf(e.details, sizeof(e.details), "%s", details);
	cni_fail_error(&e);
}

/* ---- enid's CNI socket ---- */

/*
 * The uid the configuration's enid_user names: a number as it is, a name
 * from /etc/passwd, read here rather than through the name service (a
 * static plugin has none, and the node's own file is root's).  0 or -1.
 */
static int
enid_uid(uint32_t *uid)
{
	const struct cni_conf *c = &cni.c;
	char line[1024], *f[4], *save;
	unsigned long v;
	char *end;
	FILE *fp;
	int i, rc = -1;

	if (c->uid_is_number) {
		*uid = c->enid_uid;
		return 0;
	}
	if ((fp = fopen("/etc/passwd", "re")) == NULL)
		return -1;
	while (rc == -1 && fgets(line, sizeof(line), fp) != NULL) {
		save = line;
		for (i = 0; i < 4; i++)
			f[i] = strsep(&save, ":");
		if (f[3] == NULL || strcmp(f[0], c->enid_user) != 0)
			continue;
		errno = 0;
		v = strtoul(f[2], &end, 10);
		if (errno == 0 && end != f[2] && *end == '\0' &&
		    v < UINT32_MAX) {
			*uid = (uint32_t)v;
			rc = 0;
		}
	}
	fclose(fp);
	return rc;
}

/*
 * The process serving the socket (the credentials it had at listen())
 * must be root or enid's user: the socket's path is only a name, and a
 * process that took it would otherwise be told every pod's identity and
 * answer for it.  Checked before anything is sent.
 */
static int
peer_check(struct call *k, const char *path)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	uint32_t uid;

	if (getsockopt(k->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1 ||
	    len != sizeof(cred)) {
		k->code = CNI_ERR_PEER;
		snprintf(k->err, sizeof(k->err), "the credentials of the "
		    "process serving %s: %s; nothing was sent", path,
		    strerror(errno));
		return -1;
	}
	if (cred.uid == 0)
		return 0;
	if (enid_uid(&uid) == 0 && cred.uid == uid)
		return 0;
	k->code = CNI_ERR_PEER;
	snprintf(k->err, sizeof(k->err), "%s is served by pid %d as uid %u, "
	    "neither root nor enid's user \"%s\"%s; nothing was sent", path,
	    (int)cred.pid, (unsigned)cred.uid, cni.c.enid_user,
	    cni.c.uid_is_number || enid_uid(&uid) == 0 ? "" :
	    " (not in /etc/passwd)");
	return -1;
}

static int
call_send(struct call *k, const char *path, struct json_object *req)
{
	struct sockaddr_un sun;
	struct iovec iov[2];
	struct msghdr mh;
	const char *line;
	size_t len, off = 0;
	ssize_t n;

	memset(k, 0, sizeof(*k));
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	/* Formatted first: enid, woken by the connection, finds the line
	 * right behind it. */
	line = json_object_to_json_string_ext(req,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	len = strlen(line);
	if ((k->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    connect(k->fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		k->code = CNI_ERR_TRY_AGAIN;
		snprintf(k->err, sizeof(k->err), "cannot reach enid at %s: %s; "
		    "is it running?", path, strerror(errno));
		goto fail;
	}
	if (peer_check(k, path) == -1)
		goto fail;
	/*
	 * The line and its newline in one send: sent apart, the first would
	 * wake enid for a line it cannot take yet, and the second wake it
	 * again.
	 */
	while (off <= len) {
		memset(&mh, 0, sizeof(mh));
		iov[0].iov_base = (char *)line + off;
		iov[0].iov_len = off < len ? len - off : 0;
		iov[1].iov_base = "\n";
		iov[1].iov_len = 1;
		mh.msg_iov = off < len ? iov : iov + 1;
		mh.msg_iovlen = off < len ? 2 : 1;
		n = sendmsg(k->fd, &mh, MSG_NOSIGNAL);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			k->code = CNI_ERR_IO;
			snprintf(k->err, sizeof(k->err), "writing to enid at "
			    "%s: %s", path, strerror(errno));
			goto fail;
		}
		off += (size_t)n;
	}
	return 0;
fail:
	if (k->fd >= 0)
		close(k->fd);
	k->fd = -1;
	return -1;
}

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * The answer line to cmd, parsed into a; 0, or -1 with k->code and k->err
 * set.  enid may take up to its add_timeout to start answering, but it
 * writes the line whole: once the first byte is in, the rest must follow
 * within CNI_ANSWER_REST_MS, so an answer dripped byte by byte cannot
 * hold a pod's start for the whole timeout.
 */
static int
call_recv(struct call *k, enum cni_cmd cmd, int timeout_ms,
    struct cni_answer *a)
{
	static char buf[CNI_ANSWER_MAX + 1];
	uint64_t end = now_ms() + (uint64_t)timeout_ms;
	struct cni_error e;
	struct pollfd pfd;
	size_t len = 0;
	ssize_t n;
	char *nl = NULL;
	int rc;

	if (k->fd < 0)
		return -1;
	pfd.fd = k->fd;
	pfd.events = POLLIN;
	while (nl == NULL) {
		uint64_t now = now_ms();

		if (now >= end || (rc = poll(&pfd, 1, (int)(end - now))) == 0) {
			k->code = len == 0 ? CNI_ERR_TRY_AGAIN : CNI_ERR_ANSWER;
			if (len == 0)
				snprintf(k->err, sizeof(k->err), "enid did not "
				    "answer within %d ms", timeout_ms);
			else
				snprintf(k->err, sizeof(k->err), "enid's "
				    "answer: %zu bytes came, and no newline "
				    "within %d ms of the first", len,
				    CNI_ANSWER_REST_MS);
			goto fail;
		}
		if (rc == -1 && errno == EINTR)
			continue;
		if (len == CNI_ANSWER_MAX) {
			k->code = CNI_ERR_ANSWER;
			snprintf(k->err, sizeof(k->err), "enid's answer: the "
			    "line is longer than %d bytes", CNI_ANSWER_MAX);
			goto fail;
		}
		if ((n = read(k->fd, buf + len, CNI_ANSWER_MAX - len)) <= 0) {
			if (n == -1 && errno == EINTR)
				continue;
			/* Nothing at all is what a broker that died or
			 * restarted leaves: the runtime should try again.
			 * Part of a line is an answer, broken. */
			k->code = len == 0 ? CNI_ERR_TRY_AGAIN :
			    CNI_ERR_ANSWER;
			if (len == 0)
				snprintf(k->err, sizeof(k->err), "enid closed "
				    "the connection without answering");
			else
				snprintf(k->err, sizeof(k->err), "enid's "
				    "answer: the connection closed after %zu "
				    "bytes, before the line's newline", len);
			goto fail;
		}
		if (len == 0)
			end = now_ms() + CNI_ANSWER_REST_MS;
		nl = memchr(buf + len, '\n', (size_t)n);
		len += (size_t)n;
	}
	close(k->fd);
	k->fd = -1;
	/* The first line is the answer; anything behind it is refused. */
	if ((size_t)(nl - buf) + 1 != len) {
		k->code = CNI_ERR_ANSWER;
		snprintf(k->err, sizeof(k->err), "enid's answer: %zu bytes "
		    "after the line's newline", len - (size_t)(nl - buf) - 1);
		return -1;
	}
	if (cni_answer_parse(cmd, buf, len, a, &e) == -1) {
		k->code = e.code;
		snprintf(k->err, sizeof(k->err), "%s", e.msg);
		return -1;
	}
	return 0;
fail:
	close(k->fd);
	k->fd = -1;
	return -1;
}

/* A failed answer as a CNI error: the broker's code and reason. */
static void
fail_answer(const struct cni_answer *a, const char *what)
    __attribute__((noreturn));

/*
 * The broker's reason, as text a terminal shows as it is: its control
 * characters (C0, DEL, and C1 in UTF-8) become '?', so that a hostile
 * broker's escape sequences reach no kubelet event or log reader.
 */
static void
printable(const char *in, char *out, size_t size)
{
	size_t i, n = 0;

	for (i = 0; in[i] != '\0' && n + 1 < size; i++) {
		unsigned char c = (unsigned char)in[i];

		if (c == 0xc2 && (unsigned char)in[i + 1] >= 0x80 &&
		    (unsigned char)in[i + 1] <= 0x9f) {
			out[n++] = '?';
			i++;
		} else
			out[n++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	out[n] = '\0';
}

static void
fail_answer(const struct cni_answer *a, const char *what)
{
	char details[128], why[sizeof(a->error)], code[sizeof(a->code)];

	printable(a->code, code, sizeof(code));
	snprintf(details, sizeof(details), "enid: %s", code);
	printable(a->error, why, sizeof(why));
	cni_fail(cni_broker_code(a->code), details, "%s: %s", what,
	    why[0] != '\0' ? why : "enid gave no reason");
}

static struct json_object *
request(const char *op, bool attach)
{
	const struct cni_conf *c = &cni.c;
	struct json_object *r = json_object_new_object();

	json_object_object_add(r, "op", json_object_new_string(op));
	if (!attach)
		return r;
	json_object_object_add(r, "container_id",
	    json_object_new_string(c->container_id));
	json_object_object_add(r, "ifname", json_object_new_string(c->ifname));
	if (c->netns[0] != '\0')
		json_object_object_add(r, "netns",
		    json_object_new_string(c->netns));
	if (c->k8s_namespace[0] != '\0')
		json_object_object_add(r, "k8s_namespace",
		    json_object_new_string(c->k8s_namespace));
	if (c->k8s_name[0] != '\0')
		json_object_object_add(r, "k8s_name",
		    json_object_new_string(c->k8s_name));
	if (c->k8s_uid[0] != '\0')
		json_object_object_add(r, "k8s_uid",
		    json_object_new_string(c->k8s_uid));
	return r;
}

/* Send and wait; a failure to talk to enid ends the invocation. */
static void
call(struct json_object *req, enum cni_cmd cmd, const char *what)
{
	struct call k;

	if (call_send(&k, cni.c.socket, req) == -1) {
		json_object_put(req);
		cni_fail(k.code, NULL, "%s: %s", what, k.err);
	}
	json_object_put(req);
	if (call_recv(&k, cmd, CNI_TIMEOUT_MS, &cni.ans) == -1)
		cni_fail(k.code, NULL, "%s: %s", what, k.err);
}

/* Give back an address this invocation may hold: a DEL of our own. */
static void
release(void)
{
	struct json_object *req = request("del", true);
	struct cni_answer a;
	struct call k;

	if (call_send(&k, cni.c.socket, req) == 0)
		(void)call_recv(&k, CNI_CMD_DEL, CNI_RELEASE_MS, &a);
	json_object_put(req);
}

/*
 * An answer refused (malformed, or for an address this plugin will not
 * route): the address goes back to enid, what this invocation made goes,
 * and the runtime hears why.
 */
static void
refuse(const char *host, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

static void
refuse(const char *host, int code, const char *fmt, ...)
{
	struct cni_error e;
	char derr[256];
	va_list ap;

	if (host != NULL)
		(void)wire_link_del(&cni.w, host, derr, sizeof(derr));
	release();
	memset(&e, 0, sizeof(e));
	e.code = code;
	va_start(ap, fmt);
	vsnprintf(e.msg, sizeof(e.msg), fmt, ap);
	va_end(ap);
	snprintf(e.details, sizeof(e.details), "enid-cni: answer refused; "
	    "the address was released");
	cni_fail_error(&e);
}

/*
 * Whether the answer's addresses may be routed to this pod (enid-cni(8),
 * "Trust"), each of them: never a special address, an IPv6 one inside
 * the VPC's IPv6 blocks, then what the node's kernel holds.  Both are
 * vetted before anything is configured.  own is the host end's ifindex
 * (0 in the IPAM role).  Refuses, or sets have_own[f]: main already
 * routes that address through own.
 */
static void
vet(const struct cni_answer *a, int own, const char *host,
    bool have_own[CNI_NFAMILIES])
{
	const struct ip_addr *ip[CNI_NFAMILIES] = { &a->ip, &a->ip6 };
	static const char *const field[CNI_NFAMILIES] = { "ip", "ip6" };
	char ips[IP_ADDR_STR_LEN], err[512];
	const char *why;
	int code, f;

	for (f = 0; f < CNI_NFAMILIES; f++) {
		have_own[f] = false;
		if (ip[f]->family == 0)
			continue;
		ip_addr_format(ip[f], ips);
		if ((why = cni_addr_special(ip[f])) != NULL ||
		    (why = cni_addr_outside_vpc(ip[f], a->cidrs,
		    a->ncidrs)) != NULL)
			refuse(host, CNI_ERR_ADDR_NEVER, "ADD: enid's answer: "
			    "\"%s\" %s is %s; never a pod's address", field[f],
			    ips, why);
	}
	for (f = 0; f < CNI_NFAMILIES; f++) {
		if (ip[f]->family == 0)
			continue;
		ip_addr_format(ip[f], ips);
		if (wire_vet(&cni.w, ip[f], own, &have_own[f], &code, err,
		    sizeof(err)) == -1)
			refuse(host, code, "ADD: enid's answer: \"%s\" %s: %s",
			    field[f], ips, err);
	}
}

/* ---- the commands ---- */

/* The node's netlink socket and the pod's namespace (the main role). */
static void
open_wire(void)
{
	char err[256];
	int rc;

	if (wire_open(&cni.w, err, sizeof(err)) == -1)
		cni_fail(CNI_ERR_IO, NULL, "%s", err);
	cni.wire_open = true;
	if ((rc = wire_open_pod(&cni.w, cni.c.netns, err, sizeof(err))) != 0)
		cni_fail(rc == WIRE_NS_FAIL ? CNI_ERR_WIRING :
		    CNI_ERR_INVALID_ENV, NULL, "%s", err);
}

static void
cmd_add_main(void)
{
	const struct cni_conf *c = &cni.c;
	struct wire_link h, p;
	struct cni_wired wired;
	struct call k;
	char host[CNI_IFNAME_LEN], err[512] = "";
	bool reuse = false, created = false, veth_failed = false;
	bool have_own[CNI_NFAMILIES];
	struct ip_addr ip[CNI_NFAMILIES];
	int rc;

	open_wire();
	cni_veth_name(c->veth_prefix, c->container_id, c->ifname, host);
	/*
	 * One (container id, ifname) has one host end, by its name.  If it
	 * exists, its peer's namespace says whether this is a repeat for the
	 * same pod (finish the wiring, same address) or another namespace
	 * (refused before enid is asked, so nothing changes).
	 */
	if ((rc = wire_get_link(&cni.w, false, host, &h, err,
	    sizeof(err))) < 0)
		cni_fail(CNI_ERR_WIRING, NULL, "%s", err);
	if (rc == 1) {
		if (!h.veth)
			cni_fail(CNI_ERR_ELSEWHERE, NULL, "the host interface %s "
			    "exists and is not a veth; enid-cni will not use "
			    "it", host);
		if ((rc = wire_peer_in_pod(&cni.w, &h, err,
		    sizeof(err))) < 0)
			cni_fail(CNI_ERR_WIRING, NULL, "%s", err);
		if (rc == 0)
			cni_fail(CNI_ERR_ELSEWHERE, NULL, "container %s "
			    "interface %s is already attached in another "
			    "network namespace (host interface %s); DEL it "
			    "first", c->container_id, c->ifname, host);
		reuse = true;
	}

	{
		struct json_object *req = request("add", true);

		/* The host end's name, so that enid's reconciliation can
		 * have the host route to the pod put back if it goes. */
		json_object_object_add(req, "host_veth",
		    json_object_new_string(host));
		rc = call_send(&k, c->socket, req);
		json_object_put(req);
		if (rc == -1)
			cni_fail(k.code, NULL, "ADD: %s", k.err);
	}
	/*
	 * While enid answers: the pair is named from the runtime's input
	 * alone, holds no address and routes nothing, and goes again with
	 * any refusal below; nothing the answer says reaches the node or the
	 * pod before it has been checked.
	 */
	if (!reuse) {
		if (wire_veth_add(&cni.w, host, c->ifname, c->mtu, err,
		    sizeof(err)) == 0)
			created = true;
		else
			veth_failed = true;
	}
	if (call_recv(&k, CNI_CMD_ADD, CNI_TIMEOUT_MS, &cni.ans) == -1) {
		if (k.code == CNI_ERR_ANSWER)
			refuse(created ? host : NULL, k.code, "ADD: %s", k.err);
		if (created)
			(void)wire_link_del(&cni.w, host, err, sizeof(err));
		release();	/* enid may still finish the ADD */
		cni_fail(k.code, NULL, "ADD: %s", k.err);
	}
	if (!cni.ans.ok) {
		if (created)
			(void)wire_link_del(&cni.w, host, err, sizeof(err));
		fail_answer(&cni.ans, "ADD");
	}
	ip[CNI_V4] = cni.ans.ip;
	ip[CNI_V6] = cni.ans.ip6;
	if (veth_failed) {
		release();
		cni_fail(CNI_ERR_WIRING, NULL, "ADD: %s", err);
	}
	if (wire_get_link(&cni.w, false, host, &h, err, sizeof(err)) != 1 ||
	    wire_get_link(&cni.w, true, c->ifname, &p, err, sizeof(err)) != 1 ||
	    p.peer_ifindex != h.ifindex) {
		if (err[0] == '\0')
			snprintf(err, sizeof(err), "%s in the pod is not the "
			    "peer of %s", c->ifname, host);
		goto undo;
	}
	/*
	 * Only the addresses are taken from the answer; the prefixes (/32,
	 * /128), the gateways and the MTU are the plugin's own.  A refusal
	 * takes the pair this ADD made, and leaves a repeated ADD's as it
	 * was.
	 */
	vet(&cni.ans, h.ifindex, created ? host : NULL, have_own);
	if ((rc = wire_configure(&cni.w, &h, &p, ip, have_own, err,
	    sizeof(err))) == 1)
		refuse(created ? host : NULL, CNI_ERR_ADDR_ROUTED, "ADD: %s",
		    err);
	if (rc == -1)
		goto undo;

	memset(&wired, 0, sizeof(wired));
	memcpy(wired.ip, ip, sizeof(wired.ip));
	memcpy(wired.host.name, h.name, sizeof(h.name));
	memcpy(wired.host.mac, h.mac, 6);
	wired.host.mtu = h.mtu;
	memcpy(wired.pod.name, p.name, sizeof(p.name));
	memcpy(wired.pod.mac, p.mac, 6);
	wired.pod.mtu = p.mtu;
	{
		struct json_object *r = cni_result_main(c, &wired);

		print_json(r);
		json_object_put(r);
	}
	return;
undo:
	{
		char derr[256];

		(void)wire_link_del(&cni.w, host, derr, sizeof(derr));
	}
	release();
	cni_fail(CNI_ERR_WIRING, NULL, "ADD: %s", err);
}

/*
 * The IPAM role's IPv4 gateway must lie inside the prefix it hands out
 * (ptp adds the default route while only the address's own prefix route
 * exists) and becomes a /32 on every host end.  The node's own source
 * address toward the pod's address meets both without giving the node an
 * address it did not have; it is the kernel's, not the answer's.  The
 * prefix, which only shapes routes inside the pod, is the answer's subnet
 * or VPC CIDR that holds both (each checked to be a plain CIDR block of
 * /8 or longer), else the longest the two share.
 *
 * For IPv6 the gateway is the pods' own link-local fe80::1, which ptp
 * (1.1.1, measured) puts on the host end as a /128 and reaches in the pod
 * through its link-local route: a link-local gateway lies on every link,
 * and the node gets no global address it did not have.  The prefix is
 * the answer's subnet6 when it holds the address, else a /128.
 */
static void
cmd_add_ipam(void)
{
	struct json_object *r;
	struct ip_addr a, ip[CNI_NFAMILIES], gw[CNI_NFAMILIES];
	uint32_t ip4 = 0, src, nets[1 + CNI_ANS_CIDRS];
	uint8_t lens[1 + CNI_ANS_CIDRS], prefix[CNI_NFAMILIES] = { 0, 0 };
	size_t n = 0, i;
	bool have_own[CNI_NFAMILIES];
	char err[256], ips[IP_ADDR_STR_LEN];

	if (wire_open(&cni.w, err, sizeof(err)) == -1)
		cni_fail(CNI_ERR_IO, NULL, "%s", err);
	cni.wire_open = true;
	{
		struct json_object *req = request("add", true);
		struct call k;

		if (call_send(&k, cni.c.socket, req) == -1) {
			json_object_put(req);
			cni_fail(k.code, NULL, "ADD: %s", k.err);
		}
		json_object_put(req);
		if (call_recv(&k, CNI_CMD_ADD, CNI_TIMEOUT_MS,
		    &cni.ans) == -1) {
			if (k.code == CNI_ERR_ANSWER)
				refuse(NULL, k.code, "ADD: %s", k.err);
			release();
			cni_fail(k.code, NULL, "ADD: %s", k.err);
		}
	}
	if (!cni.ans.ok)
		fail_answer(&cni.ans, "ADD");
	vet(&cni.ans, 0, NULL, have_own);
	memset(gw, 0, sizeof(gw));
	ip[CNI_V4] = cni.ans.ip;
	ip[CNI_V6] = cni.ans.ip6;
	if (ip[CNI_V4].family != 0) {
		ip4 = ip_addr_in4(&ip[CNI_V4]);
		if (wire_source_toward(&ip[CNI_V4], &a, err,
		    sizeof(err)) == -1) {
			release();
			cni_fail(CNI_ERR_WIRING, NULL, "ADD: %s", err);
		}
		if (cni_addr_special(&a) != NULL || ip_addr_eq(&a,
		    &ip[CNI_V4])) {
			ip_addr_format(&a, ips);
			refuse(NULL, CNI_ERR_WIRING, "ADD: the node's source "
			    "address toward the pod is %s, which no host end "
			    "may carry", ips);
		}
		src = ip_addr_in4(&a);
		gw[CNI_V4] = a;
		if (cni.ans.have_subnet && cni.ans.subnet.len >= 8) {
			nets[n] = ip_addr_in4(&cni.ans.subnet.addr);
			lens[n++] = cni.ans.subnet.len;
		}
		for (i = 0; i < cni.ans.ncidrs; i++)
			if (cni.ans.cidrs[i].addr.family == AF_INET &&
			    cni.ans.cidrs[i].len >= 8) {
				nets[n] = ip_addr_in4(&cni.ans.cidrs[i].addr);
				lens[n++] = cni.ans.cidrs[i].len;
			}
		prefix[CNI_V4] = cni_common_prefix(ip4, src, nets, lens, n);
	}
	if (ip[CNI_V6].family != 0) {
		(void)ip_addr_parse(CNI_GATEWAY6, &gw[CNI_V6], NULL);
		prefix[CNI_V6] = cni.ans.have_subnet6 &&
		    ip_prefix_contains(&cni.ans.subnet6, &ip[CNI_V6]) ?
		    cni.ans.subnet6.len : 128;
	}
	r = cni_result_ipam(&cni.c, ip, prefix, gw);
	print_json(r);
	json_object_put(r);
}

/*
 * The pod's host end goes if it is this attachment's: a veth by the name
 * made from the container id and ifname, whose peer is in CNI_NETNS when
 * the runtime names one that still exists.  Nothing enid answers decides
 * what is deleted.  0 (deleted, or nothing to delete), 1 (left: its peer
 * is elsewhere; err says so), -1.
 */
static int
del_host_end(const char *host, char *err, size_t errlen)
{
	const struct cni_conf *c = &cni.c;
	struct wire_link h;
	int rc;

	if (wire_open(&cni.w, err, errlen) == -1)
		return -1;
	cni.wire_open = true;
	if ((rc = wire_get_link(&cni.w, false, host, &h, err, errlen)) <= 0)
		return rc;
	if (!h.veth)
		return 0;	/* not ours: a link of another kind */
	if (c->netns[0] != '\0' && wire_open_pod(&cni.w, c->netns, err,
	    errlen) == 0) {
		if ((rc = wire_peer_in_pod(&cni.w, &h, err, errlen)) < 0)
			return -1;
		if (rc == 0) {
			snprintf(err, errlen, "the host interface %s is not "
			    "the peer of an interface in CNI_NETNS %.256s; left "
			    "in place", host, c->netns);
			return 1;
		}
	}
	return wire_link_del(&cni.w, host, err, errlen);
}

static void
cmd_del(void)
{
	const struct cni_conf *c = &cni.c;
	char host[CNI_IFNAME_LEN], werr[512] = "";
	int wired = 0;
	struct json_object *req;
	struct call k;
	int sent;

	req = request("del", true);
	sent = call_send(&k, c->socket, req);
	json_object_put(req);
	/* The pod's interface goes whether or not enid answers. */
	if (c->role == CNI_ROLE_MAIN) {
		cni_veth_name(c->veth_prefix, c->container_id, c->ifname, host);
		wired = del_host_end(host, werr, sizeof(werr));
	}
	if (sent == -1 || call_recv(&k, CNI_CMD_DEL, CNI_TIMEOUT_MS,
	    &cni.ans) == -1)
		cni_fail(k.code, NULL, "DEL: %s%s", k.err, c->role ==
		    CNI_ROLE_MAIN && wired == 0 ? " (the pod's interface "
		    "was removed)" : "");
	if (!cni.ans.ok)
		fail_answer(&cni.ans, "DEL");
	if (wired != 0)
		cni_fail(wired == 1 ? CNI_ERR_ELSEWHERE : CNI_ERR_WIRING, NULL,
		    "DEL: %s", werr);
}

static void
cmd_check(void)
{
	const struct cni_conf *c = &cni.c;
	struct json_object *req = request("check", true);
	char ip[IP_ADDR_STR_LEN], host[CNI_IFNAME_LEN], err[1024];
	int rc;

	/* The broker is asked about each address the runtime holds. */
	if (c->prev_ip[CNI_V4].family != 0) {
		ip_addr_format(&c->prev_ip[CNI_V4], ip);
		json_object_object_add(req, "ip", json_object_new_string(ip));
	}
	if (c->prev_ip[CNI_V6].family != 0) {
		ip_addr_format(&c->prev_ip[CNI_V6], ip);
		json_object_object_add(req, "ip6", json_object_new_string(ip));
	}
	call(req, CNI_CMD_CHECK, "CHECK");
	if (!cni.ans.ok)
		fail_answer(&cni.ans, "CHECK");
	/* What is checked is the runtime's prevResult, not the answer. */
	if (c->role == CNI_ROLE_IPAM)
		return;
	if (wire_open(&cni.w, err, sizeof(err)) == -1)
		cni_fail(CNI_ERR_IO, NULL, "%s", err);
	cni.wire_open = true;
	if ((rc = wire_open_pod(&cni.w, c->netns, err, sizeof(err))) != 0)
		cni_fail(rc == WIRE_NS_BAD ? CNI_ERR_INVALID_ENV :
		    CNI_ERR_CHECK, NULL, "CHECK: %s", err);
	cni_veth_name(c->veth_prefix, c->container_id, c->ifname, host);
	if ((rc = wire_check(&cni.w, host, c->ifname, c->prev_ip, err,
	    sizeof(err))) < 0)
		cni_fail(CNI_ERR_WIRING, NULL, "CHECK: %s", err);
	if (rc == 1)
		cni_fail(CNI_ERR_CHECK, NULL, "CHECK: %s", err);
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

struct keep_set {
	char	(*names)[CNI_IFNAME_LEN];
	size_t	n;
};

static bool
keep_name(const char *name, void *arg)
{
	const struct keep_set *k = arg;

	return k->n > 0 && bsearch(name, k->names, k->n, sizeof(*k->names),
	    name_cmp) != NULL;
}

static void
cmd_gc(void)
{
	const struct cni_conf *c = &cni.c;
	struct json_object *req = request("gc", false), *list;
	struct keep_set keep = { NULL, 0 };
	char err[256];
	unsigned removed;
	size_t i;
	int rc;

	list = json_object_new_array();
	for (i = 0; i < c->nvalid; i++) {
		struct json_object *a = json_object_new_object();

		json_object_object_add(a, "container_id",
		    json_object_new_string(c->valid[i].container_id));
		json_object_object_add(a, "ifname",
		    json_object_new_string(c->valid[i].ifname));
		json_object_array_add(list, a);
	}
	json_object_object_add(req, "valid_attachments", list);
	call(req, CNI_CMD_GC, "GC");
	if (!cni.ans.ok)
		fail_answer(&cni.ans, "GC");
	if (c->role == CNI_ROLE_IPAM)
		return;
	/* Then the host ends of whatever is not valid. */
	if (c->nvalid > 0 && (keep.names = calloc(c->nvalid,
	    sizeof(*keep.names))) == NULL)
		cni_fail(CNI_ERR_IO, NULL, "GC: out of memory");
	for (i = 0; i < c->nvalid; i++)
		cni_veth_name(c->veth_prefix, c->valid[i].container_id,
		    c->valid[i].ifname, keep.names[i]);
	keep.n = c->nvalid;
	if (keep.n > 0)
		qsort(keep.names, keep.n, sizeof(*keep.names), name_cmp);
	if (wire_open(&cni.w, err, sizeof(err)) == -1) {
		free(keep.names);
		cni_fail(CNI_ERR_IO, NULL, "GC: %s", err);
	}
	cni.wire_open = true;
	rc = wire_sweep(&cni.w, c->veth_prefix, keep_name, &keep, &removed,
	    err, sizeof(err));
	free(keep.names);
	if (rc == -1)
		cni_fail(CNI_ERR_WIRING, NULL, "GC: %s", err);
}

static void
cmd_status(void)
{
	struct json_object *req = request("status", false);
	const struct cni_answer *a = &cni.ans;
	const char *code, *reason;
	struct call k;
	bool available;

	if (call_send(&k, cni.c.socket, req) == -1 ||
	    call_recv(&k, CNI_CMD_STATUS, CNI_TIMEOUT_MS, &cni.ans) == -1) {
		json_object_put(req);
		if (k.code == CNI_ERR_ANSWER || k.code == CNI_ERR_PEER)
			cni_fail(k.code, NULL, "STATUS: %s", k.err);
		cni_fail(CNI_ERR_NOT_AVAILABLE, "enid: unreachable", "no ADD "
		    "can be served: %s", k.err);
	}
	json_object_put(req);
	if (!a->ok)
		cni_fail(CNI_ERR_NOT_AVAILABLE, NULL, "no ADD can be served: "
		    "enid refused STATUS: %s", a->error[0] ? a->error :
		    "no reason");
	available = a->available;
	code = a->code[0] ? a->code : NULL;
	reason = a->reason[0] ? a->reason : NULL;
	if (a->lost_pods > 0) {
		char details[128];

		snprintf(details, sizeof(details), "enid: %lld lost pods%s%s",
		    (long long)a->lost_pods, available ? "" : "; ",
		    available ? "" : code ? code : "unavailable");
		cni_fail(CNI_ERR_LIMITED, details, "%lld pods have lost their "
		    "address or ENI and may have no connectivity%s%s",
		    (long long)a->lost_pods, available ? "" : "; and no ADD "
		    "can be served: ", available ? "" : reason ? reason :
		    "no reason given");
	}
	if (!available) {
		char details[128];

		snprintf(details, sizeof(details), "enid: %s",
		    code ? code : "unavailable");
		cni_fail(CNI_ERR_NOT_AVAILABLE, details, "no ADD can be served "
		    "now: %s", reason ? reason : "no reason given");
	}
}

static size_t
read_stdin(char *buf, size_t size)
{
	size_t len = 0;
	ssize_t n;

	while (len < size) {
		n = read(STDIN_FILENO, buf + len, size - len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			cni_fail(CNI_ERR_IO, strerror(errno), "reading the "
			    "network configuration from stdin");
		if (n == 0)
			break;
		len += (size_t)n;
	}
	return len;
}

int
main(int argc, char **argv)
{
	static char text[CNI_STDIN_MAX + 1];
	const char *self = argc > 0 ? strrchr(argv[0], '/') : NULL;
	struct cni_env env;
	struct cni_error e;
	enum cni_role role;
	size_t len;

	self = self != NULL ? self + 1 : argc > 0 ? argv[0] : "enid-cni";
	role = strcmp(self, "enid-ipam") == 0 ? CNI_ROLE_IPAM : CNI_ROLE_MAIN;
	env.command = getenv("CNI_COMMAND");
	env.containerid = getenv("CNI_CONTAINERID");
	env.netns = getenv("CNI_NETNS");
	env.ifname = getenv("CNI_IFNAME");
	env.args = getenv("CNI_ARGS");
	/* VERSION may come with nothing on stdin at all. */
	len = env.command != NULL && strcmp(env.command, "VERSION") == 0 &&
	    isatty(STDIN_FILENO) ? 0 : read_stdin(text, sizeof(text));
	if (cni_conf_parse(role, &env, text, len, &cni.c, &e) == -1) {
		cni.version = cni.c.version != NULL ? cni.c.version : "1.1.0";
		cni_fail_error(&e);
	}
	cni.version = cni.c.version;
	switch (cni.c.cmd) {
	case CNI_CMD_VERSION: {
		struct json_object *o = cni_result_version(cni.c.version);

		print_json(o);
		json_object_put(o);
		break;
	}
	case CNI_CMD_ADD:
		if (role == CNI_ROLE_MAIN)
			cmd_add_main();
		else
			cmd_add_ipam();
		break;
	case CNI_CMD_DEL:
		cmd_del();
		break;
	case CNI_CMD_CHECK:
		cmd_check();
		break;
	case CNI_CMD_GC:
		cmd_gc();
		break;
	case CNI_CMD_STATUS:
		cmd_status();
		break;
	}
	cleanup();
	return 0;
}
