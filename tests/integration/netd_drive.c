/*
 * netd_drive: plays the broker for enid-netd in tests and benchmarks.
 *
 *	netd_drive [-v] NETD_PATH CONFIG
 *
 * Spawns NETD_PATH -d -f CONFIG with its socketpair end on descriptor 3
 * (as enid does), then reads one command per line on stdin:
 *
 *	ID CMD [key=value ...]
 *
 *	hello [version=N]		policy mac=M cidr=C [cidr=C ...]
 *	declare mac=M table=T		forget mac=M table=T
 *	find mac=M deadline=MS		loglevel level=N
 *	setup mac=M table=T addr=A/P gw=G mtu=N [addr6=A6]
 *	teardown mac=M table=T addr=A/P [gw=G] [mtu=N] [addr6=A6]
 *	addpod addr=A table=T		delpod addr=A table=T
 *	dumplinks			dumprules
 *	addroute addr=A dev=NAME	dumproutes
 *	snat to=A			dumpsnat
 *	malformed kind=short|type|dir|check|fds
 *
 * In setup and teardown, addr=none and gw=none send the zeroed value of
 * no family (an IPv6-only ENI, with addr6); addr may be left out when
 * addr6 is given.  Addresses and CIDRs take either family (cidr= IPv6
 * ones after the IPv4 ones, as the broker sends them).
 *
 * Requests are sent at once without waiting for earlier answers.  Every
 * answer is one JSON line on stdout with the request id and its latency
 * (dumps are gathered until NETD_END).  Also printed: {"event":"started",
 * "pid":N} and, when netd goes away, {"event":"exit","status":N,
 * "signal":N}.  End of input closes the channel, which makes netd exit.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "addr.h"
#include "msg.h"
#include "proc.h"

#define DRIVE_MAX_IDS		4096	/* requests in flight, by id % this */
#define DRIVE_LINE_MAX		1024
#define DRIVE_EXIT_WAIT_MS	3000
#define DRIVE_SEND_WAIT_MS	5000

struct pending {
	uint32_t	id;
	double		sent_ms;
	bool		dump;
	unsigned int	entries;
	char		*buf;		/* dump entries as JSON, comma-joined */
	size_t		len, cap;
};

static struct pending	pend[DRIVE_MAX_IDS];
static struct msg_chan	chan;
static pid_t		child = -1;

static double
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void
json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void
report_exit(void)
{
	int status = 0, i;
	pid_t r = 0;

	if (child <= 0)
		return;
	for (i = 0; i < DRIVE_EXIT_WAIT_MS / 10; i++) {
		if ((r = waitpid(child, &status, WNOHANG)) != 0)
			break;
		usleep(10000);
	}
	if (r == 0) {
		kill(child, SIGKILL);
		r = waitpid(child, &status, 0);
	}
	printf("{\"event\":\"exit\",\"status\":%d,\"signal\":%d,"
	    "\"t_ms\":%.3f}\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1,
	    WIFSIGNALED(status) ? WTERMSIG(status) : 0, mono_ms());
	fflush(stdout);
	child = -1;
}

/* ---- commands ---- */

struct args {
	int		 n;
	char		*key[24];
	char		*val[24];
};

static const char *
arg(const struct args *a, const char *key)
{
	int i;

	for (i = 0; i < a->n; i++)
		if (strcmp(a->key[i], key) == 0)
			return a->val[i];
	return NULL;
}

static int
arg_u32(const struct args *a, const char *key, uint32_t *v, bool need)
{
	const char *s = arg(a, key);
	char *end;
	unsigned long x;

	if (s == NULL)
		return need ? -1 : 0;
	errno = 0;
	x = strtoul(s, &end, 0);
	if (errno || *end || end == s || x > 0xffffffffUL)
		return -1;
	*v = (uint32_t)x;
	return 0;
}

static int
arg_mac(const struct args *a, uint8_t mac[6])
{
	const char *s = arg(a, "mac");

	return s ? mac_parse(s, mac) : -1;
}

/* An address of either family (netd is to refuse what it does not
 * take); absent and not needed: 0.0.0.0. */
static int
arg_ip(const struct args *a, const char *key, struct ip_addr *ip, bool need)
{
	const char *s = arg(a, key);

	*ip = ip_addr_from_in(0);
	if (s == NULL)
		return need ? -1 : 0;
	if (strcmp(s, "none") == 0) {
		memset(ip, 0, sizeof(*ip));
		return 0;
	}
	return ip_addr_parse(s, ip, NULL);
}

static void
fail_line(uint32_t id, const char *why)
{
	printf("{\"id\":%u,\"type\":\"DRIVER_ERROR\",\"message\":", id);
	json_str(stdout, why);
	printf("}\n");
	fflush(stdout);
}

static void
track(uint32_t id, bool dump)
{
	struct pending *p = &pend[id % DRIVE_MAX_IDS];

	free(p->buf);
	memset(p, 0, sizeof(*p));
	p->id = id;
	p->dump = dump;
	p->sent_ms = mono_ms();
}

static void	drain(void);

/* Send, waiting (bounded) for room while reading answers, as a broker
 * that never blocks would. */
static void
send_or_report(uint32_t id, enum msg_type type, const void *payload,
    size_t len, bool dump)
{
	struct pollfd pfd;
	double give_up = mono_ms() + DRIVE_SEND_WAIT_MS;
	char why[128];

	track(id, dump);
	while (msg_send(&chan, type, id, payload, len) == -1) {
		if ((errno != EAGAIN && errno != EWOULDBLOCK) ||
		    mono_ms() > give_up) {
			snprintf(why, sizeof(why), "send: %s", strerror(errno));
			fail_line(id, why);
			return;
		}
		pfd.fd = chan.fd;
		pfd.events = POLLIN | POLLOUT;
		if (poll(&pfd, 1, 100) > 0 && (pfd.revents & ~POLLOUT))
			drain();
	}
}

/* Deliberately bad datagrams: netd must treat the sender as hostile. */
static int
send_malformed(uint32_t id, const char *kind)
{
	struct {
		struct msg_hdr	hdr;
		unsigned char	body[sizeof(struct msg_netd_setup_eni) + 8];
	} raw;
	size_t n;

	memset(&raw, 0, sizeof(raw));
	raw.hdr.id = id;
	if (strcmp(kind, "short") == 0) {
		raw.hdr.type = MSG_NETD_ADD_POD;
		raw.hdr.len = sizeof(struct msg_netd_pod_rule) - 1;
	} else if (strcmp(kind, "type") == 0) {
		raw.hdr.type = 999;
		raw.hdr.len = sizeof(struct msg_netd_pod_rule);
	} else if (strcmp(kind, "dir") == 0) {
		raw.hdr.type = MSG_NETD_END;	/* netd -> broker only */
		raw.hdr.len = sizeof(struct msg_end);
	} else if (strcmp(kind, "check") == 0) {
		struct msg_netd_setup_eni s;

		memset(&s, 0, sizeof(s));
		s.addr.addr = ip_addr_from_in(htonl(0x0a000105));
		s.addr.len = 40;		/* over 32 */
		s.gateway = ip_addr_from_in(htonl(0x0a000101));
		raw.hdr.type = MSG_NETD_SETUP_ENI;
		raw.hdr.len = sizeof(s);
		memcpy(raw.body, &s, sizeof(s));
	} else if (strcmp(kind, "fds") == 0) {
		struct msg_netd_dump d;
		union {
			struct cmsghdr	hdr;
			char		buf[CMSG_SPACE(sizeof(int))];
		} cbuf;
		struct iovec iov;
		struct msghdr mh;
		struct cmsghdr *cm;
		int fd = STDIN_FILENO;

		memset(&d, 0, sizeof(d));
		raw.hdr.type = MSG_NETD_DUMP_LINKS;
		raw.hdr.len = sizeof(d);
		iov.iov_base = &raw;
		iov.iov_len = sizeof(raw.hdr) + sizeof(d);
		memset(&mh, 0, sizeof(mh));
		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = sizeof(cbuf.buf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
		track(id, false);
		return sendmsg(chan.fd, &mh, MSG_NOSIGNAL) == -1 ? -1 : 0;
	} else
		return -1;
	n = sizeof(raw.hdr) + raw.hdr.len;
	track(id, false);
	return send(chan.fd, &raw, n, MSG_NOSIGNAL) == -1 ? -1 : 0;
}

static void
command(char *line)
{
	struct args a;
	char *tok, *save = NULL, *cmd, *eq;
	uint32_t id;
	char *end;

	memset(&a, 0, sizeof(a));
	if ((tok = strtok_r(line, " \t\r\n", &save)) == NULL)
		return;
	id = (uint32_t)strtoul(tok, &end, 10);
	if (*end != '\0') {
		fail_line(0, "a line starts with a numeric id");
		return;
	}
	if ((cmd = strtok_r(NULL, " \t\r\n", &save)) == NULL) {
		fail_line(id, "no command");
		return;
	}
	while ((tok = strtok_r(NULL, " \t\r\n", &save)) != NULL &&
	    a.n < 24) {
		if ((eq = strchr(tok, '=')) == NULL) {
			fail_line(id, "arguments are key=value");
			return;
		}
		*eq = '\0';
		a.key[a.n] = tok;
		a.val[a.n++] = eq + 1;
	}

	if (strcmp(cmd, "hello") == 0) {
		struct msg_hello h = { MSG_PROTO_VERSION };

		if (arg_u32(&a, "version", &h.version, false) == -1)
			goto bad;
		send_or_report(id, MSG_HELLO, &h, sizeof(h), false);
	} else if (strcmp(cmd, "policy") == 0) {
		struct msg_netd_policy p;
		int i;

		memset(&p, 0, sizeof(p));
		if (arg_mac(&a, p.primary_mac) == -1)
			goto bad;
		for (i = 0; i < a.n; i++) {
			if (strcmp(a.key[i], "cidr") != 0)
				continue;
			if (p.ncidrs == MSG_MAX_VPC_CIDRS ||
			    ip_prefix_parse(a.val[i], &p.cidrs[p.ncidrs],
			    NULL) == -1)
				goto bad;
			p.ncidrs++;
		}
		send_or_report(id, MSG_NETD_POLICY, &p, sizeof(p), false);
	} else if (strcmp(cmd, "declare") == 0 || strcmp(cmd, "forget") == 0) {
		struct msg_netd_eni e;

		memset(&e, 0, sizeof(e));
		if (arg_mac(&a, e.mac) == -1 ||
		    arg_u32(&a, "table", &e.table, true) == -1)
			goto bad;
		send_or_report(id, cmd[0] == 'd' ? MSG_NETD_DECLARE_ENI :
		    MSG_NETD_FORGET_ENI, &e, sizeof(e), false);
	} else if (strcmp(cmd, "find") == 0) {
		struct msg_netd_find_link f;

		memset(&f, 0, sizeof(f));
		if (arg_mac(&a, f.mac) == -1 ||
		    arg_u32(&a, "deadline", &f.deadline_ms, true) == -1)
			goto bad;
		send_or_report(id, MSG_NETD_FIND_LINK, &f, sizeof(f), false);
	} else if (strcmp(cmd, "setup") == 0 || strcmp(cmd, "teardown") == 0) {
		struct msg_netd_setup_eni s;
		const char *c = arg(&a, "addr");

		memset(&s, 0, sizeof(s));
		if (arg_mac(&a, s.mac) == -1 ||
		    arg_u32(&a, "table", &s.table, true) == -1 ||
		    (c == NULL && arg(&a, "addr6") == NULL) ||
		    (c != NULL && strcmp(c, "none") != 0 &&
		    ip_prefix_parse(c, &s.addr, NULL) == -1) ||
		    arg_ip(&a, "gw", &s.gateway, cmd[0] == 's' &&
		    c != NULL) == -1 ||
		    arg_u32(&a, "mtu", &s.mtu, cmd[0] == 's') == -1)
			goto bad;
		if (c == NULL && arg(&a, "gw") == NULL)
			memset(&s.gateway, 0, sizeof(s.gateway));
		if (arg(&a, "addr6") != NULL &&
		    arg_ip(&a, "addr6", &s.addr6, true) == -1)
			goto bad;
		send_or_report(id, cmd[0] == 's' ? MSG_NETD_SETUP_ENI :
		    MSG_NETD_TEARDOWN_ENI, &s, sizeof(s), false);
	} else if (strcmp(cmd, "addpod") == 0 || strcmp(cmd, "delpod") == 0) {
		struct msg_netd_pod_rule r;

		memset(&r, 0, sizeof(r));
		if (arg_ip(&a, "addr", &r.addr, true) == -1 ||
		    arg_u32(&a, "table", &r.table, true) == -1)
			goto bad;
		if (arg(&a, "addr6") != NULL &&
		    arg_ip(&a, "addr6", &r.addr6, true) == -1)
			goto bad;
		send_or_report(id, cmd[0] == 'a' ? MSG_NETD_ADD_POD :
		    MSG_NETD_DEL_POD, &r, sizeof(r), false);
	} else if (strcmp(cmd, "addroute") == 0) {
		struct msg_netd_pod_route r;
		const char *dev = arg(&a, "dev");

		memset(&r, 0, sizeof(r));
		if (arg_ip(&a, "addr", &r.addr, true) == -1 || dev == NULL)
			goto bad;
		msg_strlcpy(r.dev, dev, sizeof(r.dev));
		send_or_report(id, MSG_NETD_ADD_POD_ROUTE, &r, sizeof(r),
		    false);
	} else if (strcmp(cmd, "dumplinks") == 0 ||
	    strcmp(cmd, "dumprules") == 0 || strcmp(cmd, "dumproutes") == 0) {
		struct msg_netd_dump d = { 0 };

		send_or_report(id, cmd[4] == 'l' ? MSG_NETD_DUMP_LINKS :
		    cmd[5] == 'u' ? MSG_NETD_DUMP_RULES : MSG_NETD_DUMP_ROUTES,
		    &d, sizeof(d), true);
	} else if (strcmp(cmd, "snat") == 0) {
		struct msg_netd_snat sn;

		memset(&sn, 0, sizeof(sn));
		if (arg_ip(&a, "to", &sn.to, true) == -1)
			goto bad;
		send_or_report(id, MSG_NETD_SNAT, &sn, sizeof(sn), false);
	} else if (strcmp(cmd, "dumpsnat") == 0) {
		struct msg_netd_dump d = { 0 };

		send_or_report(id, MSG_NETD_DUMP_SNAT, &d, sizeof(d), false);
	} else if (strcmp(cmd, "loglevel") == 0) {
		struct msg_loglevel ll = { 0 };
		uint32_t v;

		if (arg_u32(&a, "level", &v, true) == -1)
			goto bad;
		ll.level = (int32_t)v;
		send_or_report(id, MSG_LOG_LEVEL, &ll, sizeof(ll), false);
	} else if (strcmp(cmd, "malformed") == 0) {
		const char *k = arg(&a, "kind");

		if (k == NULL || send_malformed(id, k) == -1)
			goto bad;
	} else
		fail_line(id, "unknown command");
	return;
bad:
	fail_line(id, "bad or missing argument");
}

/* ---- answers ---- */

static void
append(struct pending *p, const char *s)
{
	size_t n = strlen(s);

	if (p->len + n + 2 > p->cap) {
		size_t ncap = (p->cap ? p->cap * 2 : 4096) + n;
		char *nb = realloc(p->buf, ncap);

		if (nb == NULL) {
			perror("netd_drive: realloc");
			exit(1);
		}
		p->buf = nb;
		p->cap = ncap;
	}
	if (p->entries++ > 0)
		p->buf[p->len++] = ',';
	memcpy(p->buf + p->len, s, n + 1);
	p->len += n;
}

static void
snat_state(const struct msg *m, double lat)
{
	struct msg_netd_snat_state st;
	char a[IP_PREFIX_STR_LEN];
	uint32_t i;

	memcpy(&st, m->u.bytes, sizeof(st));
	ip_addr_format(&st.to, a);
	printf("{\"id\":%u,\"type\":\"SNAT_STATE\",\"enabled\":%u,"
	    "\"random_fully\":%u,\"in_place\":%u,\"to\":\"%s\","
	    "\"primary_ifindex\":%u,\"primary_link\":", m->hdr.id,
	    st.enabled, st.random_fully, st.in_place, a, st.primary_ifindex);
	json_str(stdout, st.primary_link);
	printf(",\"connmark\":%u,\"untranslated\":[", st.connmark);
	for (i = 0; i < st.nuntranslated && i < MSG_MAX_SNAT_CIDRS; i++) {
		ip_prefix_format(&st.untranslated[i], a);
		printf("%s\"%s\"", i ? "," : "", a);
	}
	printf("],\"replaced\":%u,\"refused\":%u,\"translated\":%llu,"
	    "\"marked\":%llu,\"message\":", st.replaced, st.refused,
	    (unsigned long long)st.translated,
	    (unsigned long long)st.marked);
	json_str(stdout, st.message);
	printf(",\"differs\":");
	json_str(stdout, st.differs);
	printf(",\"src6_in_place\":%u,\"src6_replaced\":%u,"
	    "\"src6_dropped\":%llu,\"src6_differs\":", st.src6_in_place,
	    st.src6_replaced, (unsigned long long)st.src6_dropped);
	json_str(stdout, st.src6_differs);
	printf(",\"latency_ms\":%.3f}\n", lat);
}

static void
answer(const struct msg *m)
{
	struct pending *p = &pend[m->hdr.id % DRIVE_MAX_IDS];
	double now = mono_ms(), lat = p->id == m->hdr.id ? now - p->sent_ms : -1;
	char entry[256], mac[MAC_STR_LEN], a[IP_PREFIX_STR_LEN];
	char b[IP_PREFIX_STR_LEN];

	switch (m->hdr.type) {
	case MSG_NETD_LINK: {
		struct msg_netd_link l;

		memcpy(&l, m->u.bytes, sizeof(l));
		mac_format(l.mac, mac);
		snprintf(entry, sizeof(entry), "{\"ifindex\":%u,\"name\":\"%s\","
		    "\"mac\":\"%s\",\"up\":%u,\"mtu\":%u}", l.ifindex, l.name,
		    mac, l.up, l.mtu);
		if (p->id == m->hdr.id && p->dump) {
			append(p, entry);
			return;
		}
		printf("{\"id\":%u,\"type\":\"LINK\",\"link\":%s,"
		    "\"latency_ms\":%.3f,\"t_ms\":%.3f}\n", m->hdr.id, entry,
		    lat, now);
		break;
	}
	case MSG_NETD_RULE: {
		struct msg_netd_rule r;

		memcpy(&r, m->u.bytes, sizeof(r));
		ip_prefix_format(&r.src, a);
		ip_prefix_format(&r.dst, b);
		snprintf(entry, sizeof(entry), "{\"priority\":%u,\"table\":%u,"
		    "\"src\":\"%s\",\"dst\":\"%s\"}", r.priority, r.table, a, b);
		if (p->id == m->hdr.id && p->dump) {
			append(p, entry);
			return;
		}
		printf("{\"id\":%u,\"type\":\"RULE\",\"rule\":%s}\n", m->hdr.id,
		    entry);
		break;
	}
	case MSG_NETD_ROUTE: {
		struct msg_netd_route r;

		memcpy(&r, m->u.bytes, sizeof(r));
		ip_addr_format(&r.addr, a);
		snprintf(entry, sizeof(entry), "{\"addr\":\"%s\",\"ifindex\":%u,"
		    "\"dev\":\"%s\"}", a, r.ifindex, r.dev);
		if (p->id == m->hdr.id && p->dump) {
			append(p, entry);
			return;
		}
		printf("{\"id\":%u,\"type\":\"ROUTE\",\"route\":%s}\n",
		    m->hdr.id, entry);
		break;
	}
	case MSG_NETD_END: {
		struct msg_end e;

		memcpy(&e, m->u.bytes, sizeof(e));
		printf("{\"id\":%u,\"type\":\"END\",\"count\":%u,\"entries\":"
		    "[%s],\"latency_ms\":%.3f,\"t_ms\":%.3f}\n", m->hdr.id,
		    e.count, p->buf ? p->buf : "", lat, now);
		if (p->id == m->hdr.id) {
			free(p->buf);
			p->buf = NULL;
			p->len = p->cap = 0;
		}
		break;
	}
	case MSG_NETD_RESULT: {
		struct msg_result r;

		memcpy(&r, m->u.bytes, sizeof(r));
		printf("{\"id\":%u,\"type\":\"RESULT\",\"status\":\"%s\","
		    "\"error\":%d,\"changed\":%u,\"message\":", m->hdr.id,
		    msg_status_name(r.status), r.error, r.changed);
		json_str(stdout, r.message);
		printf(",\"latency_ms\":%.3f,\"t_ms\":%.3f}\n", lat, now);
		break;
	}
	case MSG_NETD_SNAT_STATE:
		snat_state(m, lat);
		break;
	case MSG_HELLO_ACK: {
		struct msg_hello_ack h;

		memcpy(&h, m->u.bytes, sizeof(h));
		printf("{\"id\":%u,\"type\":\"HELLO_ACK\",\"version\":%u,"
		    "\"pid\":%u,\"latency_ms\":%.3f}\n", m->hdr.id, h.version,
		    h.pid, lat);
		break;
	}
	default:
		printf("{\"id\":%u,\"type\":\"%s\"}\n", m->hdr.id,
		    msg_type_name(m->hdr.type));
	}
	fflush(stdout);
}

/* Read every answer waiting; netd gone: report and exit. */
static void
drain(void)
{
	static struct msg m;
	const char *why;
	int i;

	for (i = 0; i < 256; i++) {
		enum msg_recv_result r = msg_recv(&chan, &m, &why);

		if (r == MSG_RECV_AGAIN)
			return;
		if (r == MSG_RECV_OK) {
			answer(&m);
			continue;
		}
		if (r == MSG_RECV_BAD) {
			printf("{\"event\":\"bad-answer\",\"why\":");
			json_str(stdout, why);
			printf("}\n");
			fflush(stdout);
			continue;
		}
		report_exit();
		exit(0);
	}
}

static void
spawn(const char *netd, const char *config, bool verbose)
{
	char *argv[6];
	int n = 0;

	argv[n++] = (char *)"enid-netd";
	argv[n++] = (char *)"-d";
	if (verbose)
		argv[n++] = (char *)"-v";
	argv[n++] = (char *)"-f";
	argv[n++] = (char *)config;
	argv[n] = NULL;
	if ((child = proc_spawn(netd, argv, environ, &chan.fd)) == -1) {
		fprintf(stderr, "netd_drive: starting %s: %s\n", netd,
		    strerror(errno));
		exit(1);
	}
	chan.self = PEER_BROKER;
	chan.peer = PEER_NETD;
	chan.peer_name = "enid-netd";
	printf("{\"event\":\"started\",\"pid\":%d,\"t_ms\":%.3f}\n",
	    (int)child, mono_ms());
	fflush(stdout);
}

int
main(int argc, char *argv[])
{
	static char line[DRIVE_LINE_MAX];
	struct pollfd pfd[2];
	bool verbose = false, in_open = true;
	size_t used = 0;

	if (argc > 1 && strcmp(argv[1], "-v") == 0) {
		verbose = true;
		argc--;
		argv++;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: netd_drive [-v] NETD_PATH CONFIG\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	spawn(argv[1], argv[2], verbose);

	for (;;) {
		pfd[0].fd = in_open ? STDIN_FILENO : -1;
		pfd[0].events = POLLIN;
		pfd[1].fd = chan.fd;
		pfd[1].events = POLLIN;
		if (poll(pfd, 2, -1) == -1) {
			if (errno == EINTR)
				continue;
			perror("netd_drive: poll");
			return 1;
		}
		if (pfd[1].revents)
			drain();
		if (in_open && pfd[0].revents) {
			ssize_t n = read(STDIN_FILENO, line + used,
			    sizeof(line) - 1 - used);
			char *nl, *start;

			if (n <= 0) {
				/* End of input: close the channel. */
				in_open = false;
				close(chan.fd);
				report_exit();
				return 0;
			}
			used += (size_t)n;
			line[used] = '\0';
			start = line;
			while ((nl = strchr(start, '\n')) != NULL) {
				*nl = '\0';
				command(start);
				start = nl + 1;
			}
			used = strlen(start);
			memmove(line, start, used + 1);
			if (used == sizeof(line) - 1) {
				fail_line(0, "line too long");
				used = 0;
			}
		}
	}
}
