/*
 * bench_broker: a load generator for enid's cni.sock.
 *
 *	bench_broker [-j] [-c CONNS] [-n PAIRS] [-w WARMUP] [-t SECONDS]
 *	    [-T OP_SECONDS] SOCKET
 *
 * Keeps CONNS requests in flight (default 32), each on its own connection
 * as the CNI plugin makes them: one request line, one answer line, close.
 * A pair is an ADD of a fresh container id followed, once answered, by its
 * DEL.  WARMUP pairs (default 200) run first and are not counted; then
 * PAIRS pairs (default 4000) are measured, or as many as start within
 * SECONDS (default 20).  One thread and epoll, so the generator takes as
 * little of the machine's CPU from enid and enid-netd as it can.
 *
 * Printed: pairs/s, operations/s, and p50/p99/max latency of ADD and DEL
 * (from connect to the answer's newline); with -j, one JSON object
 * instead.  Every answer is checked: an ADD must be ok with an address no
 * other container holds at that moment, a DEL must be ok.  Any failure is
 * counted and named, and makes the exit status 1; an operation that takes
 * longer than OP_SECONDS (default 10) ends the run with status 2.  Needs
 * root (cni.sock admits uid 0 only).  tests/bench/bench_broker_run starts
 * the simulated VPC and enid for it and compares with netd's own ceiling.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#define BB_MAX_CONNS		256	/* cni.sock serves 256 clients */
#define BB_MAX_PAIRS		1000000
#define BB_ANSWER_MAX		4096	/* an ADD answer is ~300 bytes */
#define BB_REQUEST_MAX		512
#define BB_CONNECT_RETRY_MS	1	/* backlog full: try again soon */
#define BB_MAX_ERRORS_SHOWN	5

enum op { OP_IDLE = 0, OP_ADD, OP_DEL };

struct slot {
	enum op		 op;
	int		 fd;		/* -1: not connected (yet) */
	uint64_t	 pair;
	uint64_t	 started_ns;	/* first connect attempt */
	uint64_t	 retry_ns;	/* connect again at; 0: not waiting */
	char		 req[BB_REQUEST_MAX];
	size_t		 reqlen, reqoff;
	char		 ans[BB_ANSWER_MAX];
	size_t		 anslen;
	uint32_t	 ip;		/* held from ADD answer to DEL answer */
};

struct lat {
	uint32_t	*us;
	size_t		 n, cap;
};

struct run {
	const char	*sock;
	unsigned	 conns;
	uint64_t	 op_timeout_ns;
	uint32_t	 tag;		/* container ids of this run */
	int		 epfd;
	struct slot	 slots[BB_MAX_CONNS];
	uint64_t	 next_pair;	/* ids keep counting across phases */
	uint64_t	 phase_end_pair;
	uint64_t	 phase_deadline_ns;
	bool		 counting;
	struct lat	 add, del;
	uint64_t	 pairs_done;
	uint64_t	 errors, connect_retries;
	unsigned	 errors_shown;
};

static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void
usage(void)
{
	fprintf(stderr, "usage: bench_broker [-j] [-c CONNS] [-n PAIRS] "
	    "[-w WARMUP] [-t SECONDS] [-T OP_SECONDS] SOCKET\n");
	exit(64);
}

static unsigned long
number(const char *flag, const char *s, unsigned long lo, unsigned long hi)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || v < lo ||
	    v > hi) {
		fprintf(stderr, "bench_broker: %s %s: not a number from %lu "
		    "to %lu\n", flag, s, lo, hi);
		exit(64);
	}
	return v;
}

static void
fail_op(struct run *r, struct slot *s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
fail_op(struct run *r, struct slot *s, const char *fmt, ...)
{
	va_list ap;

	r->errors++;
	if (r->errors_shown++ >= BB_MAX_ERRORS_SHOWN)
		return;
	fprintf(stderr, "bench_broker: %s of pair %" PRIu64 ": ",
	    s->op == OP_ADD ? "ADD" : "DEL", s->pair);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void
lat_add(struct lat *l, uint64_t ns)
{
	uint64_t us = ns / 1000;

	if (l->n == l->cap)
		return;		/* sized for the phase: cannot happen */
	l->us[l->n++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile, in ms; the array is sorted. */
static double
pct_ms(const struct lat *l, double p)
{
	size_t k;

	if (l->n == 0)
		return 0;
	k = (size_t)(p / 100.0 * (double)l->n + 0.999999);
	if (k < 1)
		k = 1;
	if (k > l->n)
		k = l->n;
	return l->us[k - 1] / 1000.0;
}

static void
slot_close(struct slot *s)
{
	if (s->fd != -1) {
		/* Its only descriptor: closing it takes it out of the
		 * epoll set too (a client pays for no extra call). */
		close(s->fd);
		s->fd = -1;
	}
}

/* Connect and send what is in s->req; a full backlog is tried again. */
static void
slot_connect(struct run *r, struct slot *s)
{
	struct sockaddr_un sa;
	struct epoll_event ev;
	ssize_t n;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, r->sock, strlen(r->sock) + 1);
	s->retry_ns = 0;
	if ((s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) == -1) {
		perror("bench_broker: socket");
		exit(2);
	}
	if (connect(s->fd, (struct sockaddr *)&sa, sizeof(sa)) == -1) {
		if (errno != EAGAIN) {
			fprintf(stderr, "bench_broker: connect %s: %s\n",
			    r->sock, strerror(errno));
			exit(2);
		}
		close(s->fd);
		s->fd = -1;
		s->retry_ns = mono_ns() + BB_CONNECT_RETRY_MS * 1000000u;
		r->connect_retries++;
		return;
	}
	s->reqoff = s->anslen = 0;
	n = send(s->fd, s->req, s->reqlen, MSG_NOSIGNAL);
	if (n > 0)
		s->reqoff = (size_t)n;
	else if (n == -1 && errno != EAGAIN) {
		fprintf(stderr, "bench_broker: send: %s\n", strerror(errno));
		exit(2);
	}
	memset(&ev, 0, sizeof(ev));
	ev.events = s->reqoff < s->reqlen ? EPOLLOUT : EPOLLIN;
	ev.data.ptr = s;
	if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, s->fd, &ev) == -1) {
		perror("bench_broker: epoll_ctl");
		exit(2);
	}
}

static void
slot_start(struct run *r, struct slot *s, enum op op)
{
	char cid[65];

	/* 64 hex digits, as a container runtime's ids are. */
	snprintf(cid, sizeof(cid), "%08" PRIx32 "%056" PRIx64, r->tag,
	    s->pair);
	s->reqlen = (size_t)snprintf(s->req, sizeof(s->req),
	    "{\"op\":\"%s\",\"container_id\":\"%s\",\"ifname\":\"eth0\","
	    "\"netns\":\"/var/run/netns/cni-%s\",\"k8s_namespace\":\"bench\","
	    "\"k8s_name\":\"pod-%" PRIu64 "\",\"k8s_uid\":\"%.8s-0000-4000-"
	    "8000-%.12s\"}\n", op == OP_ADD ? "add" : "del", cid, cid + 48,
	    s->pair, cid + 56, cid + 52);
	s->op = op;
	s->started_ns = mono_ns();
	slot_connect(r, s);
}

/* Start the next pair on s, or leave it idle when the phase is done. */
static void
slot_next(struct run *r, struct slot *s)
{
	if (r->next_pair >= r->phase_end_pair ||
	    mono_ns() >= r->phase_deadline_ns) {
		s->op = OP_IDLE;
		return;
	}
	s->pair = r->next_pair++;
	slot_start(r, s, OP_ADD);
}

static bool
ip_held_elsewhere(const struct run *r, const struct slot *s, uint32_t ip)
{
	unsigned i;

	for (i = 0; i < r->conns; i++)
		if (&r->slots[i] != s && r->slots[i].ip == ip)
			return true;
	return false;
}

/* After an ADD (answered or failed) its DEL; after a DEL the next pair.
 * A failed ADD is deleted too, so nothing is left behind. */
static void
slot_advance(struct run *r, struct slot *s)
{
	if (s->op == OP_ADD) {
		slot_start(r, s, OP_DEL);
		return;
	}
	s->ip = 0;
	if (r->counting)
		r->pairs_done++;
	slot_next(r, s);
}

/* A whole answer line arrived: check it, record it, go on. */
static void
slot_answered(struct run *r, struct slot *s)
{
	uint64_t took = mono_ns() - s->started_ns;
	struct json_object *o, *v;
	const char *code = "?", *why = "?";
	struct in_addr in;

	slot_close(s);
	s->ans[s->anslen] = '\0';
	if ((o = json_tokener_parse(s->ans)) == NULL ||
	    !json_object_is_type(o, json_type_object)) {
		fail_op(r, s, "the answer is not a JSON object: %.200s",
		    s->ans);
		json_object_put(o);
		goto next;
	}
	if (!json_object_object_get_ex(o, "ok", &v) ||
	    !json_object_is_type(v, json_type_boolean) ||
	    !json_object_get_boolean(v)) {
		if (json_object_object_get_ex(o, "code", &v))
			code = json_object_get_string(v);
		if (json_object_object_get_ex(o, "error", &v))
			why = json_object_get_string(v);
		fail_op(r, s, "%s: %s", code, why);
		json_object_put(o);
		goto next;
	}
	if (s->op == OP_ADD) {
		if (!json_object_object_get_ex(o, "ip", &v) ||
		    !json_object_is_type(v, json_type_string) ||
		    inet_pton(AF_INET, json_object_get_string(v), &in) != 1) {
			fail_op(r, s, "no address in the answer: %.200s",
			    s->ans);
			json_object_put(o);
			goto next;
		}
		if (ip_held_elsewhere(r, s, in.s_addr)) {
			fail_op(r, s, "%s is held by another container",
			    json_object_get_string(v));
			json_object_put(o);
			goto next;
		}
		s->ip = in.s_addr;
	}
	json_object_put(o);
	if (r->counting)
		lat_add(s->op == OP_ADD ? &r->add : &r->del, took);
next:
	slot_advance(r, s);
}

static void
slot_io(struct run *r, struct slot *s, uint32_t events)
{
	struct epoll_event ev;
	ssize_t n;
	char *nl;

	if (s->reqoff < s->reqlen) {
		n = send(s->fd, s->req + s->reqoff, s->reqlen - s->reqoff,
		    MSG_NOSIGNAL);
		if (n == -1 && errno == EAGAIN)
			return;
		if (n <= 0) {
			fail_op(r, s, "send: %s", n == 0 ? "nothing sent" :
			    strerror(errno));
			slot_close(s);
			slot_advance(r, s);
			return;
		}
		s->reqoff += (size_t)n;
		if (s->reqoff < s->reqlen)
			return;
		memset(&ev, 0, sizeof(ev));
		ev.events = EPOLLIN;
		ev.data.ptr = s;
		epoll_ctl(r->epfd, EPOLL_CTL_MOD, s->fd, &ev);
		return;
	}
	if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) == 0)
		return;
	n = recv(s->fd, s->ans + s->anslen, BB_ANSWER_MAX - 1 - s->anslen, 0);
	if (n == -1 && errno == EAGAIN)
		return;
	if (n <= 0) {
		/* Closed before a whole line: the check names it. */
		s->ans[s->anslen] = '\0';
		fail_op(r, s, "connection closed after %zu bytes of answer%s",
		    s->anslen, n == -1 ? " (recv failed)" : "");
		slot_close(s);
		slot_advance(r, s);
		return;
	}
	s->anslen += (size_t)n;
	if ((nl = memchr(s->ans, '\n', s->anslen)) != NULL) {
		s->anslen = (size_t)(nl - s->ans);
		slot_answered(r, s);
	} else if (s->anslen == BB_ANSWER_MAX - 1) {
		fprintf(stderr, "bench_broker: an answer longer than %d bytes\n",
		    BB_ANSWER_MAX - 1);
		exit(2);
	}
}

/* Run pairs [next_pair, next_pair + pairs) with every slot busy, until
 * they are done or max_s has passed (then the ones in flight finish). */
static void
run_phase(struct run *r, uint64_t pairs, double max_s, bool counting)
{
	struct epoll_event evs[64];
	uint64_t now, wake;
	unsigned i, busy;
	int n, k, timeout;

	r->counting = counting;
	r->phase_end_pair = r->next_pair + pairs;
	r->phase_deadline_ns = mono_ns() + (uint64_t)(max_s * 1e9);
	for (i = 0; i < r->conns; i++)
		slot_next(r, &r->slots[i]);
	for (;;) {
		now = mono_ns();
		busy = 0;
		wake = now + 1000000000u;
		for (i = 0; i < r->conns; i++) {
			struct slot *s = &r->slots[i];

			if (s->op == OP_IDLE)
				continue;
			busy++;
			if (now - s->started_ns > r->op_timeout_ns) {
				fprintf(stderr, "bench_broker: %s of pair %"
				    PRIu64 " not answered in %" PRIu64 " s\n",
				    s->op == OP_ADD ? "ADD" : "DEL", s->pair,
				    r->op_timeout_ns / 1000000000u);
				exit(2);
			}
			if (s->retry_ns != 0) {
				if (s->retry_ns <= now)
					slot_connect(r, s);
				if (s->retry_ns != 0 && s->retry_ns < wake)
					wake = s->retry_ns;
			}
		}
		if (busy == 0)
			return;
		timeout = (int)((wake - now + 999999) / 1000000);
		n = epoll_wait(r->epfd, evs, 64, timeout);
		if (n == -1 && errno != EINTR) {
			perror("bench_broker: epoll_wait");
			exit(2);
		}
		for (k = 0; k < n; k++)
			slot_io(r, evs[k].data.ptr, evs[k].events);
	}
}

static void
lat_json(const char *name, const struct lat *l, bool last)
{
	printf("\"%s\":{\"n\":%zu,\"p50_ms\":%.3f,\"p99_ms\":%.3f,"
	    "\"max_ms\":%.3f}%s", name, l->n, pct_ms(l, 50), pct_ms(l, 99),
	    pct_ms(l, 100), last ? "" : ",");
}

int
main(int argc, char *argv[])
{
	static struct run r;
	unsigned long pairs = 4000, warmup = 200;
	double max_s = 20, took;
	uint64_t t0;
	bool json = false;
	unsigned i;
	int ch;

	r.conns = 32;
	r.op_timeout_ns = 10 * 1000000000ull;
	while ((ch = getopt(argc, argv, "c:jn:t:T:w:")) != -1) {
		switch (ch) {
		case 'c':
			r.conns = (unsigned)number("-c", optarg, 1,
			    BB_MAX_CONNS);
			break;
		case 'j':
			json = true;
			break;
		case 'n':
			pairs = number("-n", optarg, 1, BB_MAX_PAIRS);
			break;
		case 't':
			max_s = (double)number("-t", optarg, 1, 3600);
			break;
		case 'T':
			r.op_timeout_ns = number("-T", optarg, 1, 600) *
			    1000000000ull;
			break;
		case 'w':
			warmup = number("-w", optarg, 0, BB_MAX_PAIRS);
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 1)
		usage();
	r.sock = argv[optind];
	if (strlen(r.sock) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		fprintf(stderr, "bench_broker: %s: path too long for a unix "
		    "socket\n", r.sock);
		return 64;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "bench_broker: needs root (cni.sock admits "
		    "uid 0 only)\n");
		return 64;
	}
	signal(SIGPIPE, SIG_IGN);
	if ((r.epfd = epoll_create1(EPOLL_CLOEXEC)) == -1) {
		perror("bench_broker: epoll_create1");
		return 2;
	}
	r.tag = (uint32_t)getpid() ^ (uint32_t)mono_ns();
	for (i = 0; i < r.conns; i++)
		r.slots[i].fd = -1;
	r.add.cap = r.del.cap = pairs;
	if ((r.add.us = calloc(pairs, sizeof(uint32_t))) == NULL ||
	    (r.del.us = calloc(pairs, sizeof(uint32_t))) == NULL) {
		fprintf(stderr, "bench_broker: out of memory\n");
		return 2;
	}

	if (warmup > 0)
		run_phase(&r, warmup, max_s, false);
	t0 = mono_ns();
	run_phase(&r, pairs, max_s, true);
	took = (double)(mono_ns() - t0) / 1e9;
	qsort(r.add.us, r.add.n, sizeof(uint32_t), cmp_u32);
	qsort(r.del.us, r.del.n, sizeof(uint32_t), cmp_u32);

	if (json) {
		printf("{\"conns\":%u,\"pairs\":%" PRIu64 ",\"seconds\":%.4f,"
		    "\"pairs_per_s\":%.1f,\"ops_per_s\":%.1f,\"errors\":%"
		    PRIu64 ",\"connect_retries\":%" PRIu64 ",", r.conns,
		    r.pairs_done, took, r.pairs_done / took,
		    2 * r.pairs_done / took, r.errors, r.connect_retries);
		lat_json("add", &r.add, false);
		lat_json("del", &r.del, true);
		printf("}\n");
	} else {
		printf("%u connections: %" PRIu64 " pairs (ADD+DEL) in %.2f s "
		    "= %.1f pairs/s, %.1f ops/s\n", r.conns, r.pairs_done, took,
		    r.pairs_done / took, 2 * r.pairs_done / took);
		printf("ADD: p50 %.2f ms  p99 %.2f ms  max %.2f ms  (%zu)\n",
		    pct_ms(&r.add, 50), pct_ms(&r.add, 99),
		    pct_ms(&r.add, 100), r.add.n);
		printf("DEL: p50 %.2f ms  p99 %.2f ms  max %.2f ms  (%zu)\n",
		    pct_ms(&r.del, 50), pct_ms(&r.del, 99),
		    pct_ms(&r.del, 100), r.del.n);
		if (r.errors > 0 || r.connect_retries > 0)
			printf("errors %" PRIu64 ", connects retried %" PRIu64
			    "\n", r.errors, r.connect_retries);
	}
	free(r.add.us);
	free(r.del.us);
	close(r.epfd);
	return r.errors > 0 ? 1 : 0;
}
