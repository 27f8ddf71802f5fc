/*
 * The checkpoint's journal (broker/journal.c) and the differences it
 * carries (broker/checkpoint.c): a difference applied gives back what it
 * was made from; replay takes exactly the whole records of the snapshot's
 * generation in sequence, whatever a torn tail, a flipped bit, a stale
 * generation or a skipped number leaves; a whole record that does not
 * apply is corruption, named; and the store on disk saves by record or by
 * snapshot as it should and loads back what it saved, moving corrupt files
 * aside with a message naming the file and the cause.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "checkpoint.h"
#include "journal.h"
#include "testckpt.h"
#include "testdir.h"
#include "testrng.h"

/*
 * States drawn from a small universe, so that two of them share pods and
 * cooling addresses: pod k is container "c<k>" on "eth<k % 3>" at
 * 10.1.0.k, its name one of a few variants (a changed pod); cooling
 * address k is 10.2.0.k on one of two ENIs until one of a few times.
 */
#define UNIVERSE_PODS	96
#define UNIVERSE_COOL	40

struct world {
	int	pod[UNIVERSE_PODS];	/* 0: absent, else the variant */
	int	cool[UNIVERSE_COOL];
};

static void
world_random(struct world *w)
{
	size_t i;

	for (i = 0; i < UNIVERSE_PODS; i++)
		w->pod[i] = rnd(2) ? 0 : 1 + (int)rnd(3);
	for (i = 0; i < UNIVERSE_COOL; i++)
		w->cool[i] = rnd(2) ? 0 : 1 + (int)rnd(4);
}

/* A few changes: pods and addresses come, go, or change. */
static void
world_step(struct world *w)
{
	size_t n = 1 + rnd(6), i;

	while (n-- > 0) {
		if (rnd(3) == 0) {
			i = rnd(UNIVERSE_COOL);
			w->cool[i] = rnd(3) == 0 ? 0 : 1 + (int)rnd(4);
		} else {
			i = rnd(UNIVERSE_PODS);
			w->pod[i] = rnd(3) == 0 ? 0 : 1 + (int)rnd(3);
		}
	}
}

/* The checkpoint of w, in a scrambled order (as the broker builds it). */
static void
world_checkpoint(const struct world *w, int64_t written, struct checkpoint *c)
{
	size_t i, j;

	memset(c, 0, sizeof(*c));
	snprintf(c->instance_id, sizeof(c->instance_id), "i-0123456789abcdef0");
	c->written = written;
	c->pods = calloc(UNIVERSE_PODS, sizeof(*c->pods));
	c->cooling = calloc(UNIVERSE_COOL, sizeof(*c->cooling));
	assert_non_null(c->pods);
	assert_non_null(c->cooling);
	for (j = 0; j < UNIVERSE_PODS; j++) {
		struct ckpt_pod *p;

		i = (j * 37) % UNIVERSE_PODS;
		if (w->pod[i] == 0)
			continue;
		p = &c->pods[c->npods++];
		p->container_id = cdup(c, "c%zu", i);
		p->ifname = cdup(c, "eth%zu", i % 3);
		p->k8s_namespace = cdup(c, "ns");
		p->k8s_name = cdup(c, "pod-%zu \"v%d\"", i, w->pod[i]);
		p->k8s_uid = cdup(c, "u%zu", i);
		p->ip = ip_addr_from_in(htonl(0x0a010000u + (uint32_t)i));
		/* some dual-stack, some IPv6 only (version 4) */
		if (i % 4 == 1 || i % 7 == 3) {
			assert_int_equal(ip_addr_parse("2001:db8:0:1:ab::",
			    &p->ip6, NULL), 0);
			p->ip6.bytes[14] = (uint8_t)(i >> 8);
			p->ip6.bytes[15] = (uint8_t)i;
			c->ipv6 = true;
		}
		if (i % 7 == 3)
			memset(&p->ip, 0, sizeof(p->ip));
		p->eni_id = cdup(c, "eni-%zx", i / 10);
		p->since = 1700000000 + (int64_t)i;
	}
	for (j = 0; j < UNIVERSE_COOL; j++) {
		struct ckpt_cooling *k;

		i = UNIVERSE_COOL - 1 - j;
		if (w->cool[i] == 0)
			continue;
		k = &c->cooling[c->ncooling++];
		k->ip = ip_addr_from_in(htonl(0x0a020000u + (uint32_t)i));
		k->eni_id = cdup(c, "eni-%d", w->cool[i] % 2);
		k->until = 1700000100 + w->cool[i];
	}
}

static void
copy_checkpoint(const struct checkpoint *c, struct checkpoint *d)
{
	assert_int_equal(checkpoint_copy(c, d), 0);
}

/* ---- CRC and framing ---- */

static void
test_crc32(void **state)
{
	const char *s = "123456789";

	(void)state;
	/* the check value of CRC-32/ISO-HDLC, zlib's */
	assert_int_equal(journal_crc32(0, s, 9), 0xcbf43926u);
	assert_int_equal(journal_crc32(0, "", 0), 0);
	assert_int_equal(journal_crc32(journal_crc32(0, s, 4), s + 4, 5),
	    0xcbf43926u);
	assert_int_equal(journal_crc32(0, "a", 1), 0xe8b7be43u);
}

/* ---- differences ---- */

/* diff(a, b) formatted, parsed, applied to a: b. */
static void
diff_round_trip(const struct checkpoint *a, const struct checkpoint *b,
    size_t headroom)
{
	struct checkpoint x;
	struct ckpt_diff d, e;
	char err[1024], *text;
	size_t len;

	assert_int_equal(ckpt_diff_make(a, b, &d), 0);
	text = ckpt_diff_format(&d, headroom, &len);
	assert_non_null(text);
	assert_int_equal(strlen(text + headroom), len);
	if (ckpt_diff_parse(text + headroom, len, &e, err, sizeof(err)) != 0)
		fail_msg("parse of a formatted difference: %s\n%s", err,
		    text + headroom);
	copy_checkpoint(a, &x);
	if (checkpoint_apply(&x, &e, err, sizeof(err)) != 0)
		fail_msg("apply: %s\n%s", err, text + headroom);
	/* x owns its strings: the difference (and its arena) can go */
	ckpt_diff_free(&e);
	free(text);
	x.generation = b->generation;
	assert_true(checkpoint_equal(&x, b));
	ckpt_diff_free(&d);
	checkpoint_free(&x);
}

static void
test_diff_round_trip(void **state)
{
	struct world w;
	struct checkpoint a, b;
	struct ckpt_diff d;
	int i;

	(void)state;
	rng_state = 0x10c4;
	for (i = 0; i < 400; i++) {
		world_random(&w);
		world_checkpoint(&w, 1, &a);
		if (i % 2)
			world_step(&w);
		else
			world_random(&w);
		world_checkpoint(&w, 2 + i, &b);
		checkpoint_sort(&a);
		checkpoint_sort(&b);
		assert_null(check_err(&a));
		assert_null(check_err(&b));
		diff_round_trip(&a, &b, i % 3 == 0 ? JOURNAL_HDR_LEN : 0);
		diff_round_trip(&b, &a, 0);
		/* the same: nothing */
		assert_int_equal(ckpt_diff_make(&a, &a, &d), 0);
		assert_true(ckpt_diff_empty(&d));
		ckpt_diff_free(&d);
		checkpoint_free(&a);
		checkpoint_free(&b);
	}
}

/* A pod whose name changed, a cooling address whose time changed: each
 * removed and added again. */
static void
test_diff_changed_fields(void **state)
{
	struct world w;
	struct checkpoint a, b;
	struct ckpt_diff d;

	(void)state;
	memset(&w, 0, sizeof(w));
	w.pod[5] = 1;
	w.pod[6] = 1;
	w.cool[3] = 1;
	w.cool[4] = 2;
	world_checkpoint(&w, 1, &a);
	w.pod[5] = 2;
	w.cool[3] = 3;
	world_checkpoint(&w, 9, &b);
	checkpoint_sort(&a);
	checkpoint_sort(&b);
	assert_int_equal(ckpt_diff_make(&a, &b, &d), 0);
	assert_int_equal(d.written, 9);
	assert_int_equal(d.npods_del, 1);
	assert_string_equal(d.pods_del[0].container_id, "c5");
	assert_int_equal(d.npods_add, 1);
	assert_string_equal(d.pods_add[0].k8s_name, "pod-5 \"v2\"");
	assert_int_equal(d.ncool_del, 1);
	assert_int_equal(ip_addr_in4(&d.cool_del[0].ip), htonl(0x0a020003u));
	assert_int_equal(d.ncool_add, 1);
	assert_int_equal(d.cool_add[0].until, 1700000103);
	ckpt_diff_free(&d);
	checkpoint_free(&a);
	checkpoint_free(&b);
}

static void
test_cooling_settle(void **state)
{
	struct world w;
	struct checkpoint a, b;

	(void)state;
	memset(&w, 0, sizeof(w));
	w.cool[1] = 2;
	w.cool[2] = 2;
	w.cool[3] = 2;
	w.cool[4] = 2;
	world_checkpoint(&w, 1, &a);
	world_checkpoint(&w, 1, &b);
	checkpoint_sort(&a);
	checkpoint_sort(&b);
	b.cooling[0].until += 1;	/* a second later: settled */
	b.cooling[1].until -= 1;	/* a second earlier: settled */
	b.cooling[2].until += 2;	/* two: a new end */
	b.cooling[3].until += 1;	/* on another ENI: a new address */
	b.cooling[3].eni_id = "eni-7";
	ckpt_cooling_settle(&a, &b);
	assert_int_equal(b.cooling[0].until, a.cooling[0].until);
	assert_int_equal(b.cooling[1].until, a.cooling[1].until);
	assert_int_equal(b.cooling[2].until, a.cooling[2].until + 2);
	assert_int_equal(b.cooling[3].until, a.cooling[3].until + 1);
	checkpoint_free(&a);
	checkpoint_free(&b);
}

static const char *
diff_err(const char *text)
{
	static char err[1024];
	struct ckpt_diff d;

	memset(err, 0, sizeof(err));
	if (ckpt_diff_parse(text, strlen(text), &d, err, sizeof(err)) == 0) {
		ckpt_diff_free(&d);
		return NULL;
	}
	assert_null(d.pods_add);
	assert_null(d.pods_del);
	assert_null(d.cool_add);
	assert_null(d.cool_del);
	assert_null(d.arena.blocks);
	return err;
}

#define POD_JSON "{\"container_id\": \"c1\", \"ifname\": \"eth0\", " \
	"\"namespace\": \"ns\", \"name\": \"n\", \"uid\": \"u\", \"ip\": " \
	"\"10.0.0.1\", \"eni\": \"eni-1\", \"since\": 5}"

static void
test_diff_parse_strict(void **state)
{
	static const struct {
		const char	*text;
		const char	*expect;
	} cases[] = {
		{ "{\"written\": 1, \"pods_removed\": [], \"pods_added\": [], "
		  "\"cooling_removed\": [], \"cooling_added\": []}", NULL },
		{ "{\"written\": 1, \"pods_removed\": [{\"container_id\": "
		  "\"c1\", \"ifname\": \"eth0\"}], \"pods_added\": [" POD_JSON
		  "], \"cooling_removed\": [{\"ip\": \"10.0.0.9\"}], "
		  "\"cooling_added\": [{\"ip\": \"10.0.0.8\", \"eni\": "
		  "\"eni-1\", \"until\": 7}]}", NULL },
		{ "", "invalid JSON: unexpected end of input (truncated?)" },
		{ "[]", "expected an object, got array" },
		{ "{\"written\": 1, \"pods_removed\": [], \"pods_added\": [], "
		  "\"cooling_removed\": []}",
		  "missing key \"cooling_added\"" },
		{ "{\"written\": 1, \"pods_removed\": [], \"pods_added\": [], "
		  "\"cooling_removed\": [], \"cooling_added\": [], \"x\": 1}",
		  "x: unknown key" },
		{ "{\"written\": -1, \"pods_removed\": [], \"pods_added\": [], "
		  "\"cooling_removed\": [], \"cooling_added\": []}",
		  "written: out of range 0..253402300799" },
		{ "{\"written\": 1, \"pods_removed\": [{\"container_id\": "
		  "\"-c\", \"ifname\": \"eth0\"}], \"pods_added\": [], "
		  "\"cooling_removed\": [], \"cooling_added\": []}",
		  "pods_removed[0].container_id: not a container id (1 to 256 "
		  "of [A-Za-z0-9_.-], not starting with '.' or '-')" },
		{ "{\"written\": 1, \"pods_removed\": [{\"container_id\": "
		  "\"c\"}], \"pods_added\": [], "
		  "\"cooling_removed\": [], \"cooling_added\": []}",
		  "pods_removed[0]: missing key \"ifname\"" },
		{ "{\"written\": 1, \"pods_removed\": [{\"container_id\": "
		  "\"c\", \"ifname\": \"a/b\"}], \"pods_added\": [], "
		  "\"cooling_removed\": [], \"cooling_added\": []}",
		  "pods_removed[0].ifname: not an interface name (1 to 15 "
		  "printable bytes, no '/', ':' or space, not \".\" or "
		  "\"..\")" },
		{ "{\"written\": 1, \"pods_removed\": [], \"pods_added\": ["
		  POD_JSON ", {\"container_id\": \"c2\", \"ifname\": \"eth0\", "
		  "\"namespace\": \"ns\", \"name\": \"n\", \"uid\": \"u\", "
		  "\"ip\": \"127.0.0.1\", \"eni\": \"eni-1\", \"since\": 5}], "
		  "\"cooling_removed\": [], \"cooling_added\": []}",
		  "pods_added[1].ip: 127.0.0.1 is not a unicast host address" },
		{ "{\"written\": 1, \"pods_removed\": [], \"pods_added\": [], "
		  "\"cooling_removed\": [{\"ip\": \"10.0.0\"}], "
		  "\"cooling_added\": []}",
		  "cooling_removed[0].ip: not an IPv4 address" },
		{ "{\"written\": 1, \"pods_removed\": [], \"pods_added\": [], "
		  "\"cooling_removed\": [{\"ip\": \"0.0.0.1\"}], "
		  "\"cooling_added\": []}",
		  "cooling_removed[0].ip: 0.0.0.1 is not a unicast host "
		  "address" },
		{ "{\"written\": 1, \"pods_removed\": [], \"pods_added\": [], "
		  "\"cooling_removed\": [], \"cooling_added\": [{\"ip\": "
		  "\"10.0.0.8\", \"eni\": \"nic-1\", \"until\": 7}]}",
		  "cooling_added[0].eni: not an ENI id (\"eni-\" and hex "
		  "digits)" },
		{ "{\"written\": 1, \"pods_removed\": {}, \"pods_added\": [], "
		  "\"cooling_removed\": [], \"cooling_added\": []}",
		  "pods_removed: expected an array, got object" },
	};
	const char *err;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err = diff_err(cases[i].text);
		if (cases[i].expect == NULL && err != NULL)
			fail_msg("case %zu refused: %s", i, err);
		if (cases[i].expect != NULL && err == NULL)
			fail_msg("case %zu accepted", i);
		if (err != NULL)
			assert_string_equal(err, cases[i].expect);
	}
}

/* A difference that does not fit the checkpoint is refused, naming the
 * entry, and the checkpoint is left as it was. */
static void
test_apply_refuses(void **state)
{
	static const struct {
		const char	*text;
		const char	*expect;
	} cases[] = {
		{ "{\"written\": 1, \"pods_removed\": [{\"container_id\": "
		  "\"c1\", \"ifname\": \"eth0\"}], \"pods_added\": [], "
		  "\"cooling_removed\": [], \"cooling_added\": []}",
		  "pods_removed[0]: container c1 interface eth0 is not in the "
		  "checkpoint" },
		{ "{\"written\": 1, \"pods_removed\": [{\"container_id\": "
		  "\"c5\", \"ifname\": \"eth2\"}, {\"container_id\": \"c5\", "
		  "\"ifname\": \"eth2\"}], \"pods_added\": [], "
		  "\"cooling_removed\": [], \"cooling_added\": []}",
		  "pods_removed[1]: container c5 interface eth2 is not in the "
		  "checkpoint (removed twice)" },
		{ "{\"written\": 1, \"pods_removed\": [], \"pods_added\": ["
		  "{\"container_id\": \"c5\", \"ifname\": \"eth2\", "
		  "\"namespace\": \"\", \"name\": \"\", \"uid\": \"\", \"ip\": "
		  "\"10.9.9.9\", \"eni\": \"eni-1\", \"since\": 5}], "
		  "\"cooling_removed\": [], \"cooling_added\": []}",
		  "pods_added[0]: container c5 interface eth2 is already in the "
		  "checkpoint" },
		{ "{\"written\": 1, \"pods_removed\": [], \"pods_added\": ["
		  "{\"container_id\": \"new\", \"ifname\": \"eth0\", "
		  "\"namespace\": \"\", \"name\": \"\", \"uid\": \"\", \"ip\": "
		  "\"10.1.0.5\", \"eni\": \"eni-1\", \"since\": 5}], "
		  "\"cooling_removed\": [], \"cooling_added\": []}",
		  "pods[1].ip: 10.1.0.5 is also held by pods[0]" },
		{ "{\"written\": 1, \"pods_removed\": [], \"pods_added\": [], "
		  "\"cooling_removed\": [{\"ip\": \"10.2.0.4\"}], "
		  "\"cooling_added\": []}",
		  "cooling_removed[0]: 10.2.0.4 is not cooling in the "
		  "checkpoint" },
		{ "{\"written\": 1, \"pods_removed\": [], \"pods_added\": [], "
		  "\"cooling_removed\": [], \"cooling_added\": [{\"ip\": "
		  "\"10.2.0.3\", \"eni\": \"eni-1\", \"until\": 7}]}",
		  "cooling_added[0]: 10.2.0.3 is already cooling in the "
		  "checkpoint" },
		{ "{\"written\": 1, \"pods_removed\": [], \"pods_added\": [], "
		  "\"cooling_removed\": [], \"cooling_added\": [{\"ip\": "
		  "\"10.1.0.5\", \"eni\": \"eni-1\", \"until\": 7}]}",
		  "cooling[0].ip: 10.1.0.5 is held by pods[0]" },
		/* removed and added again in one record: fine */
		{ "{\"written\": 1, \"pods_removed\": [{\"container_id\": "
		  "\"c5\", \"ifname\": \"eth2\"}], \"pods_added\": ["
		  "{\"container_id\": \"c5\", \"ifname\": \"eth2\", "
		  "\"namespace\": \"\", \"name\": \"\", \"uid\": \"\", \"ip\": "
		  "\"10.1.0.5\", \"eni\": \"eni-1\", \"since\": 5}], "
		  "\"cooling_removed\": [], \"cooling_added\": []}", NULL },
	};
	struct world w;
	struct checkpoint c, before;
	struct ckpt_diff d;
	char err[1024];
	size_t i;
	int rc;

	(void)state;
	memset(&w, 0, sizeof(w));
	w.pod[5] = 1;
	w.cool[3] = 1;
	world_checkpoint(&w, 1, &c);
	checkpoint_sort(&c);
	copy_checkpoint(&c, &before);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (ckpt_diff_parse(cases[i].text, strlen(cases[i].text), &d,
		    err, sizeof(err)) != 0)
			fail_msg("case %zu: %s", i, err);
		rc = checkpoint_apply(&c, &d, err, sizeof(err));
		ckpt_diff_free(&d);
		if (cases[i].expect == NULL) {
			if (rc != 0)
				fail_msg("case %zu refused: %s", i, err);
			continue;
		}
		if (rc == 0)
			fail_msg("case %zu applied", i);
		assert_int_equal(rc, -1);
		assert_string_equal(err, cases[i].expect);
		assert_true(checkpoint_equal(&c, &before));
	}
	checkpoint_free(&c);
	checkpoint_free(&before);
}

/* ---- replay ---- */

#define MAX_STATES	40

/* A snapshot, the states after it, and the journal bytes between. */
struct history {
	struct checkpoint	 state[MAX_STATES];	/* [0]: the snapshot */
	size_t			 n;
	uint8_t			*buf;
	size_t			 len, cap;
	size_t			 at[MAX_STATES];	/* record i-1 starts */
};

static void
append_record(struct history *h, int64_t generation, uint64_t seq,
    const char *payload, size_t len)
{
	if (h->len + JOURNAL_HDR_LEN + len > h->cap) {
		h->cap = (h->len + JOURNAL_HDR_LEN + len) * 2;
		h->buf = realloc(h->buf, h->cap);
		assert_non_null(h->buf);
	}
	memcpy(h->buf + h->len + JOURNAL_HDR_LEN, payload, len);
	journal_frame(h->buf + h->len, generation, seq, len);
	h->len += JOURNAL_HDR_LEN + len;
}

static void
history_make(struct history *h, size_t n, int64_t generation, uint64_t seed)
{
	struct world w;
	struct ckpt_diff d;
	char *text;
	size_t i, len;

	memset(h, 0, sizeof(*h));
	rng_state = seed;
	world_random(&w);
	h->n = n;
	for (i = 0; i < n; i++) {
		if (i > 0)
			world_step(&w);
		world_checkpoint(&w, 1000 + (int64_t)i, &h->state[i]);
		checkpoint_sort(&h->state[i]);
		h->state[i].generation = generation;
		if (i == 0)
			continue;
		assert_int_equal(ckpt_diff_make(&h->state[i - 1],
		    &h->state[i], &d), 0);
		text = ckpt_diff_format(&d, 0, &len);
		assert_non_null(text);
		ckpt_diff_free(&d);
		h->at[i - 1] = h->len;
		append_record(h, generation, i - 1, text, len);
		free(text);
	}
	h->at[n - 1] = h->len;
}

static void
history_free(struct history *h)
{
	size_t i;

	for (i = 0; i < h->n; i++)
		checkpoint_free(&h->state[i]);
	free(h->buf);
}

/* Replay buf onto a copy of the snapshot: 0 and the records applied. */
static size_t
replay(const struct history *h, const uint8_t *buf, size_t len,
    struct checkpoint *out, struct journal_replay *r)
{
	char err[1024];

	copy_checkpoint(&h->state[0], out);
	if (journal_replay(out, buf, len, r, err, sizeof(err)) != 0)
		fail_msg("replay: %s", err);
	return r->records;
}

static void
expect_state(const struct history *h, const struct checkpoint *c, size_t i)
{
	if (!checkpoint_equal(c, &h->state[i]))
		fail_msg("replay did not give state %zu", i);
}

static void
test_replay_round_trip(void **state)
{
	struct history h;
	struct checkpoint c;
	struct journal_replay r;
	uint8_t *file;
	char stop[64];
	size_t i;

	(void)state;
	history_make(&h, MAX_STATES, 5, 0xaa);
	/* in a file of zeroes, and with every prefix ending on a record */
	file = calloc(1, h.len + 4096);
	assert_non_null(file);
	memcpy(file, h.buf, h.len);
	assert_int_equal(replay(&h, file, h.len + 4096, &c, &r),
	    MAX_STATES - 1);
	expect_state(&h, &c, MAX_STATES - 1);
	assert_int_equal(r.end, h.len);
	assert_int_equal(r.max_generation, 5);
	snprintf(stop, sizeof(stop), "unwritten space at offset %zu", h.len);
	assert_string_equal(r.stop, stop);
	checkpoint_free(&c);
	for (i = 0; i < MAX_STATES; i++) {
		assert_int_equal(replay(&h, h.buf, h.at[i], &c, &r), i);
		expect_state(&h, &c, i);
		checkpoint_free(&c);
	}
	/* an empty journal: the snapshot */
	assert_int_equal(replay(&h, NULL, 0, &c, &r), 0);
	expect_state(&h, &c, 0);
	assert_int_equal(r.max_generation, -1);
	checkpoint_free(&c);
	free(file);
	history_free(&h);
}

/*
 * The last record torn at every byte, what follows it zeroes, an older
 * generation's bytes, or the end of the file: the state before it.
 */
static void
test_replay_torn_tail(void **state)
{
	struct history h, old;
	struct checkpoint c;
	struct journal_replay r;
	size_t last, cut, tail, n;
	uint8_t *file;

	(void)state;
	history_make(&h, 6, 9, 0xbb);
	history_make(&old, 12, 8, 0xcc);
	n = h.n - 1;
	last = h.at[n - 1];
	file = malloc(old.len + h.len);
	assert_non_null(file);
	for (tail = 0; tail < 3; tail++)
		for (cut = last; cut < h.len; cut++) {
			size_t len = old.len > h.len ? old.len : h.len;

			if (tail == 0)
				memset(file, 0, len);
			else
				memcpy(file, old.buf, old.len);
			memcpy(file, h.buf, cut);
			if (tail == 2)
				len = cut;
			assert_int_equal(replay(&h, file, len, &c, &r), n - 1);
			expect_state(&h, &c, n - 1);
			assert_int_equal(r.end, last);
			checkpoint_free(&c);
		}
	free(file);
	history_free(&old);
	history_free(&h);
}

/* Any one bit flipped in a record: replay stops before it. */
static void
test_replay_flipped_bits(void **state)
{
	struct history h;
	struct checkpoint c;
	struct journal_replay r;
	size_t k = 2, bit, start, end;
	uint8_t *file;

	(void)state;
	history_make(&h, 6, 3, 0xdd);
	start = h.at[k];
	end = h.at[k + 1];
	file = malloc(h.len);
	assert_non_null(file);
	for (bit = start * 8; bit < end * 8; bit++) {
		memcpy(file, h.buf, h.len);
		file[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		assert_int_equal(replay(&h, file, h.len, &c, &r), k);
		expect_state(&h, &c, k);
		checkpoint_free(&c);
	}
	free(file);
	history_free(&h);
}

/* Records of another generation or out of sequence end the replay. */
static void
test_replay_generation_and_sequence(void **state)
{
	struct history h, other;
	struct checkpoint c;
	struct journal_replay r;
	char stop[80];
	size_t i;

	(void)state;
	/* the journal's records are an older generation's */
	history_make(&h, 5, 7, 0xee);
	copy_checkpoint(&h.state[0], &c);
	c.generation = 8;
	assert_int_equal(journal_replay(&c, h.buf, h.len, &r, NULL, 0), 0);
	assert_int_equal(r.records, 0);
	assert_int_equal(r.max_generation, 7);
	assert_string_equal(r.stop, "a record of generation 7 at offset 0 "
	    "(stale)");
	c.generation = h.state[0].generation;
	expect_state(&h, &c, 0);
	checkpoint_free(&c);

	/* a newer one: not applied, but found, with where */
	copy_checkpoint(&h.state[0], &c);
	c.generation = 6;
	assert_int_equal(journal_replay(&c, h.buf, h.len, &r, NULL, 0), 0);
	assert_int_equal(r.records, 0);
	assert_int_equal(r.max_generation, 7);
	assert_int_equal(r.newer_at, 0);
	checkpoint_free(&c);

	/* record 2 numbered 3 */
	other = h;
	other.buf = malloc(h.len);
	assert_non_null(other.buf);
	memcpy(other.buf, h.buf, h.len);
	for (i = 0; i < 2; i++) {
		size_t len = h.at[3] - h.at[2] - JOURNAL_HDR_LEN;

		journal_frame(other.buf + h.at[2], 7, i == 0 ? 3 : 1, len);
		assert_int_equal(replay(&h, other.buf, h.len, &c, &r), 2);
		expect_state(&h, &c, 2);
		checkpoint_free(&c);
	}
	snprintf(stop, sizeof(stop), "record 1 at offset %zu where 2 was "
	    "next (stale)", h.at[2]);
	assert_string_equal(r.stop, stop);
	free(other.buf);
	history_free(&h);
}

/* A whole record, of the generation and next in sequence, whose payload
 * is not a difference or does not apply: corruption, named. */
static void
test_replay_bad_content(void **state)
{
	static const char *const bad[] = {
		"{\"written\": 1}",
		"not json",
		"{\"written\": 1, \"pods_removed\": [{\"container_id\": "
		"\"nobody\", \"ifname\": \"eth0\"}], \"pods_added\": [], "
		"\"cooling_removed\": [], \"cooling_added\": []}",
	};
	static const char *const expect[] = {
		"missing key \"pods_removed\"",
		"invalid JSON at offset 1: null expected",
		"pods_removed[0]: container nobody interface eth0 is not in the "
		"checkpoint",
	};
	struct history h;
	struct checkpoint c;
	struct journal_replay r;
	char err[1024], want[1200];
	size_t i, at;

	(void)state;
	for (i = 0; i < 3; i++) {
		history_make(&h, 4, 2, 0xf0 + i);
		at = h.at[2];
		h.len = at;
		append_record(&h, 2, 2, bad[i], strlen(bad[i]));
		copy_checkpoint(&h.state[0], &c);
		assert_int_equal(journal_replay(&c, h.buf, h.len, &r, err,
		    sizeof(err)), -1);
		snprintf(want, sizeof(want), "record 2 at offset %zu: %s", at,
		    expect[i]);
		assert_string_equal(err, want);
		expect_state(&h, &c, 2);
		checkpoint_free(&c);
		history_free(&h);
	}
}

/* The scan for generations finds whole records at any offset. */
static void
test_max_generation(void **state)
{
	uint8_t buf[512];
	size_t at = 0;

	(void)state;
	memset(buf, 0x5a, sizeof(buf));
	assert_int_equal(journal_max_generation(buf, sizeof(buf), &at), -1);
	memcpy(buf + 101 + JOURNAL_HDR_LEN, "{}", 2);
	journal_frame(buf + 101, 44, 0, 2);
	memcpy(buf + 300 + JOURNAL_HDR_LEN, "{}", 2);
	journal_frame(buf + 300, 43, 9, 2);
	assert_int_equal(journal_max_generation(buf, sizeof(buf), &at), 44);
	assert_int_equal(at, 101);
	/* at the very end, and a generation no snapshot may have */
	memcpy(buf + sizeof(buf) - 2, "{}", 2);
	journal_frame(buf + sizeof(buf) - 2 - JOURNAL_HDR_LEN, -1, 0, 2);
	assert_int_equal(journal_max_generation(buf, sizeof(buf), &at),
	    CKPT_MAX_GENERATION + 1);
	assert_int_equal(at, sizeof(buf) - 2 - JOURNAL_HDR_LEN);
	/* a bad CRC is no record */
	buf[sizeof(buf) - 1] ^= 1;
	assert_int_equal(journal_max_generation(buf, sizeof(buf), &at), 44);
}

/* The record at rec made one of format version v, CRC and all, as a
 * newer enid that kept the header would write it. */
static void
reframe(uint8_t *rec, uint8_t v)
{
	uint32_t len = (uint32_t)rec[4] | (uint32_t)rec[5] << 8 |
	    (uint32_t)rec[6] << 16 | (uint32_t)rec[7] << 24;
	uint32_t crc;
	int i;

	rec[3] = v;
	crc = journal_crc32(0, rec, 24);
	crc = journal_crc32(crc, rec + JOURNAL_HDR_LEN, len);
	for (i = 0; i < 4; i++)
		rec[24 + i] = (uint8_t)(crc >> (8 * i));
}

/*
 * A whole record of a newer format (the magic's last byte above ours)
 * where replay would go on is a newer enid's journal: CKPT_NEWER, named,
 * with the records before it applied.  Not whole (a flipped bit), it is
 * only torn; a lower byte is no record.
 */
static void
test_replay_newer_format(void **state)
{
	struct history h;
	struct checkpoint c;
	struct journal_replay r;
	char err[512], expect[256];
	uint8_t *file;
	size_t k;

	(void)state;
	history_make(&h, 6, 3, 0xab);
	file = malloc(h.len);
	assert_non_null(file);
	for (k = 0; k < 5; k++) {
		memcpy(file, h.buf, h.len);
		file[h.at[k] + 3] = JOURNAL_VERSION + 1;	/* CRC: torn */
		assert_int_equal(replay(&h, file, h.len, &c, &r), k);
		checkpoint_free(&c);
		reframe(file + h.at[k], JOURNAL_VERSION + 1);
		copy_checkpoint(&h.state[0], &c);
		assert_int_equal(journal_replay(&c, file, h.len, &r, err,
		    sizeof(err)), CKPT_NEWER);
		snprintf(expect, sizeof(expect), "the record at offset %zu is "
		    "of format version 2, newer than the 1 this enid reads (a "
		    "newer enid wrote it)", h.at[k]);
		assert_string_equal(err, expect);
		expect_state(&h, &c, k);
		checkpoint_free(&c);

		/* 0 there: not ours, not newer either... */
		reframe(file + h.at[k], 0);
		assert_int_equal(replay(&h, file, h.len, &c, &r), k);
		checkpoint_free(&c);
	}
	/* ...and beyond where replay stops, a newer record is stale */
	memcpy(file, h.buf, h.len);
	reframe(file + h.at[3], JOURNAL_VERSION + 1);
	file[h.at[1] + 8] ^= 1;		/* CRC: replay stops at 1 */
	assert_int_equal(replay(&h, file, h.len, &c, &r), 1);
	checkpoint_free(&c);
	free(file);
	history_free(&h);
}

/* ---- the store on disk ---- */

/* How many names in d start with prefix; they are removed. */
static int
take_aside(const struct dir *d, const char *prefix)
{
	struct dirent *e;
	DIR *dir;
	int n = 0;

	dir = opendir(d->path);
	assert_non_null(dir);
	while ((e = readdir(dir)) != NULL)
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
			assert_true(unlinkat(d->fd, e->d_name, 0) == 0 ||
			    unlinkat(d->fd, e->d_name, AT_REMOVEDIR) == 0);
			n++;
		}
	closedir(dir);
	return n;
}

static void *
file_bytes(const struct dir *d, const char *name, size_t *len)
{
	struct stat st;
	void *buf;
	int fd;

	fd = openat(d->fd, name, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	assert_non_null(buf);
	assert_int_equal(read(fd, buf, (size_t)st.st_size), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

static void
put_bytes(const struct dir *d, const char *name, const void *buf,
    size_t len)
{
	int fd;

	fd = openat(d->fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

static int
load(struct ckpt_store *s, const struct dir *d, size_t size,
    struct checkpoint *c, char *note, char *err)
{
	return ckpt_store_load(s, d->fd, size, c, note, 512, err, 1024);
}

static enum ckpt_saved
save(struct ckpt_store *s, const struct dir *d, const struct world *w,
    int64_t written)
{
	struct checkpoint c;
	enum ckpt_saved saved;
	char warn[512], err[1024];

	world_checkpoint(w, written, &c);
	if (ckpt_store_save(s, d->fd, &c, &saved, warn, sizeof(warn), err,
	    sizeof(err)) != 0)
		fail_msg("save: %s", err);
	if (warn[0] != '\0')
		fail_msg("save: warning %s", warn);
	return saved;
}

/*
 * A first start in a fresh directory: the store loads nothing, and w
 * (random from seed) is saved as the first snapshot.
 */
static void
store_first(struct ckpt_store *s, struct dir *d, struct world *w,
    uint64_t seed)
{
	struct checkpoint c;
	char note[512], err[1024];

	dir_open(d, "enid-journal");
	assert_int_equal(load(s, d, CKPT_JOURNAL_SIZE, &c, note, err), 1);
	rng_state = seed;
	world_random(w);
	assert_int_equal(save(s, d, w, 1), CKPT_SAVED_SNAPSHOT);
}

/*
 * fd (the store's journal descriptor) swapped for a read-only descriptor,
 * so that the next record written through it fails with EBADF.
 */
static void
make_read_only(const struct dir *d, int fd)
{
	int ro;

	ro = openat(d->fd, CKPT_FILE, O_RDONLY | O_CLOEXEC);
	assert_true(ro >= 0);
	assert_true(dup2(ro, fd) == fd);
	close(ro);
}

/* What a fresh load finds must be w (sorted), whatever its generation. */
static void
expect_loaded(const struct dir *d, const struct world *w, int64_t written,
    int64_t generation, const char *note_start)
{
	struct ckpt_store s;
	struct checkpoint c, want;
	char note[512], err[1024];

	if (load(&s, d, CKPT_JOURNAL_SIZE, &c, note, err) != 0)
		fail_msg("load: %s", err);
	world_checkpoint(w, written, &want);
	checkpoint_sort(&want);
	want.generation = generation;
	assert_true(checkpoint_equal(&c, &want));
	if (note_start != NULL &&
	    strncmp(note, note_start, strlen(note_start)) != 0)
		fail_msg("note \"%s\", not \"%s...\"", note, note_start);
	checkpoint_free(&c);
	checkpoint_free(&want);
	ckpt_store_close(&s);
}

static void
test_store_save_and_load(void **state)
{
	struct ckpt_store s;
	struct checkpoint c;
	struct world w;
	struct dir d;
	struct stat st;
	char note[512], err[1024];
	int i;

	(void)state;
	dir_open(&d, "enid-journal");
	/* nothing yet: a first start */
	assert_int_equal(load(&s, &d, CKPT_JOURNAL_SIZE, &c, note, err), 1);
	assert_string_equal(note, "");
	rng_state = 0x51;
	world_random(&w);
	/* the first save is a snapshot, and makes the journal whole */
	assert_int_equal(save(&s, &d, &w, 1), CKPT_SAVED_SNAPSHOT);
	assert_int_equal(fstatat(d.fd, CKPT_JOURNAL_FILE, &st, 0), 0);
	assert_int_equal(st.st_size, CKPT_JOURNAL_SIZE);
	assert_true((size_t)st.st_blocks * 512 >= CKPT_JOURNAL_SIZE);
	assert_int_equal(st.st_mode & 07777, 0600);
	expect_loaded(&d, &w, 1, 1, "generation 1, 0 journal records "
	    "replayed, then unwritten space at offset 0");
	for (i = 2; i <= 10; i++) {
		world_step(&w);
		assert_int_equal(save(&s, &d, &w, i), CKPT_SAVED_RECORD);
	}
	/* the same again, at another time: nothing to write */
	assert_int_equal(save(&s, &d, &w, 11), CKPT_SAVED_NOTHING);
	expect_loaded(&d, &w, 10, 1, "generation 1, 9 journal records "
	    "replayed, then unwritten space at offset ");
	ckpt_store_close(&s);

	/* after a load, a snapshot of the next generation, then records */
	assert_int_equal(load(&s, &d, CKPT_JOURNAL_SIZE, &c, note, err), 0);
	checkpoint_free(&c);
	world_step(&w);
	assert_int_equal(save(&s, &d, &w, 12), CKPT_SAVED_SNAPSHOT);
	expect_loaded(&d, &w, 12, 2, "generation 2, 0 journal records "
	    "replayed, then a record of generation 1 at offset 0 (stale)");
	world_step(&w);
	assert_int_equal(save(&s, &d, &w, 13), CKPT_SAVED_RECORD);
	expect_loaded(&d, &w, 13, 2, "generation 2, 1 journal record "
	    "replayed, then ");
	ckpt_store_close(&s);
	assert_false(exists(&d, ".checkpoint.journal.tmp"));
	assert_false(exists(&d, ".checkpoint.json.tmp"));
	dir_close(&d);
}

/*
 * A newer enid's snapshot or journal (a downgrade): the probe and the load
 * say CKPT_NEWER, name the file, both versions and what to do, and leave
 * both files byte for byte, nothing moved aside.
 */
static void
test_store_newer_left_in_place(void **state)
{
	struct ckpt_store s;
	struct checkpoint c;
	struct world w;
	struct dir d;
	char note[512], err[1024], *snap, *p;
	uint8_t *journal, *snap2, *journal2;
	enum ckpt_saved saved;
	size_t snaplen, jlen, len;
	int i;

	(void)state;
	store_first(&s, &d, &w, 0x77);
	for (i = 2, saved = CKPT_SAVED_NOTHING; saved != CKPT_SAVED_RECORD;
	    i++) {
		assert_true(i < 50);
		world_step(&w);
		saved = save(&s, &d, &w, i);
		assert_int_not_equal(saved, CKPT_SAVED_SNAPSHOT);
	}
	ckpt_store_close(&s);
	assert_int_equal(ckpt_store_probe(d.fd, err, sizeof(err)), 0);

	/* the journal's first record of a newer format */
	journal = file_bytes(&d, CKPT_JOURNAL_FILE, &jlen);
	reframe(journal, JOURNAL_VERSION + 1);
	put_bytes(&d, CKPT_JOURNAL_FILE, journal, jlen);
	snap = file_bytes(&d, CKPT_FILE, &snaplen);
	assert_int_equal(ckpt_store_probe(d.fd, err, sizeof(err)),
	    CKPT_NEWER);
	assert_int_equal(strncmp(err, "checkpoint.journal: the record at "
	    "offset 0 is of format version 2, newer than the 1 this enid "
	    "reads (a newer enid wrote it); left in place; nothing was "
	    "changed.  Run the newer enid that wrote it, or", 160), 0);
	assert_int_equal(load(&s, &d, CKPT_JOURNAL_SIZE, &c, note, err),
	    CKPT_NEWER);
	assert_non_null(strstr(err, "move checkpoint.json and "
	    "checkpoint.journal out of the state directory by hand"));
	assert_int_equal(c.npods, 0);
	snap2 = file_bytes(&d, CKPT_FILE, &len);
	assert_int_equal(len, snaplen);
	assert_memory_equal(snap2, snap, len);
	free(snap2);
	journal2 = file_bytes(&d, CKPT_JOURNAL_FILE, &len);
	assert_int_equal(len, jlen);
	assert_memory_equal(journal2, journal, len);
	free(journal2);
	assert_int_equal(take_aside(&d, "checkpoint.json.corrupt"), 0);
	assert_int_equal(take_aside(&d, "checkpoint.journal.corrupt"), 0);

	/* the snapshot of a newer format: the journal is not even read */
	reframe(journal, JOURNAL_VERSION);
	put_bytes(&d, CKPT_JOURNAL_FILE, journal, jlen);
	p = strstr(snap, "\"version\": ");
	assert_non_null(p);
	p[strlen("\"version\": ")] = '9';
	put_bytes(&d, CKPT_FILE, snap, snaplen);
	assert_int_equal(ckpt_store_probe(d.fd, err, sizeof(err)),
	    CKPT_NEWER);
	assert_int_equal(strncmp(err, "checkpoint.json: version: format "
	    "version 9, newer than the 4 this enid reads", 70), 0);
	assert_int_equal(load(&s, &d, CKPT_JOURNAL_SIZE, &c, note, err),
	    CKPT_NEWER);
	assert_non_null(strstr(err, "Run the newer enid"));
	snap2 = file_bytes(&d, CKPT_FILE, &len);
	assert_memory_equal(snap2, snap, snaplen);
	free(snap2);
	assert_int_equal(take_aside(&d, "checkpoint.json.corrupt"), 0);
	assert_int_equal(take_aside(&d, "checkpoint.journal.corrupt"), 0);

	/* a newer snapshot of another shape: not the probe's to see (it
	 * parses no JSON), the load refuses it all the same */
	free(snap);
	snap = (char *)strdup("{\"generation\": 1, \"version\": 5, "
	    "\"instance_id\": \"i-1\", \"written\": 1, \"pods\": [], "
	    "\"cooling\": []}");
	assert_non_null(snap);
	snaplen = strlen(snap);
	put_bytes(&d, CKPT_FILE, snap, snaplen);
	assert_int_equal(ckpt_store_probe(d.fd, err, sizeof(err)), 0);
	assert_int_equal(load(&s, &d, CKPT_JOURNAL_SIZE, &c, note, err),
	    CKPT_NEWER);
	assert_int_equal(take_aside(&d, "checkpoint.json.corrupt"), 0);

	/* damage is still moved aside; the probe leaves it to the load */
	put_bytes(&d, CKPT_FILE, snap, snaplen / 2);
	assert_int_equal(ckpt_store_probe(d.fd, err, sizeof(err)), 0);
	assert_int_equal(load(&s, &d, CKPT_JOURNAL_SIZE, &c, note, err), -1);
	assert_int_equal(take_aside(&d, "checkpoint.json.corrupt"), 1);
	assert_int_equal(take_aside(&d, "checkpoint.journal.corrupt"), 1);
	free(snap);
	free(journal);
	dir_close(&d);
}

/* The snapshot's version as root reads it before the load: whatever the
 * rest of the file, 0 when there is none to read. */
static void
test_store_version(void **state)
{
	static const char *const snaps[] = {
		"{\"version\": 3, \"generation\": 1}",
		"{\"version\": 4, \"generation\": 1, \"pods\": [",
		"{\"generation\": 1, \"version\": 4}",
		"not json",
	};
	static const int64_t want[] = { 3, 4, 0, 0 };
	struct dir d;
	size_t i;

	(void)state;
	dir_open(&d, "enid-journal");
	assert_int_equal(ckpt_store_version(d.fd), 0);
	for (i = 0; i < sizeof(snaps) / sizeof(snaps[0]); i++) {
		put_bytes(&d, CKPT_FILE, snaps[i], strlen(snaps[i]));
		assert_int_equal(ckpt_store_version(d.fd), want[i]);
	}
	dir_close(&d);
}

/* n pods and ncool cooling addresses, all distinct, of w's instance. */
static void
crowd(struct checkpoint *c, size_t n, size_t ncool, int64_t written)
{
	size_t i;

	memset(c, 0, sizeof(*c));
	snprintf(c->instance_id, sizeof(c->instance_id), "i-0123456789abcdef0");
	c->written = written;
	c->pods = calloc(n + 1, sizeof(*c->pods));
	c->cooling = calloc(ncool + 1, sizeof(*c->cooling));
	assert_non_null(c->pods);
	assert_non_null(c->cooling);
	for (i = 0; i < n; i++) {
		struct ckpt_pod *p = &c->pods[c->npods++];

		p->container_id = cdup(c, "crowd%zu", i);
		p->ifname = "eth0";
		p->k8s_namespace = p->k8s_name = p->k8s_uid = "";
		p->ip = ip_addr_from_in(htonl(0x0a400000u + (uint32_t)i));
		p->eni_id = cdup(c, "eni-%zx", i / 64);
		p->since = 1700000000;
	}
	for (i = 0; i < ncool; i++) {
		struct ckpt_cooling *k = &c->cooling[c->ncooling++];

		k->ip = ip_addr_from_in(htonl(0x0a800000u + (uint32_t)i));
		k->eni_id = "eni-1";
		k->until = 1700000100;
	}
}

/*
 * The limits agree (issue 27): a checkpoint holds exactly
 * ENID_MAX_RECORDED_PODS pods and cooling addresses, saved and read
 * back whole; one more is a save that fails, naming the cap, by record
 * and by snapshot alike, and leaves the files as they were.  Nothing is
 * ever left out to make it fit.
 */
static void
test_store_caps(void **state)
{
	struct ckpt_store s;
	struct checkpoint c, back;
	struct dir d;
	enum ckpt_saved saved;
	char note[512], warn[512], err[1024];
	uint8_t *snap, *journal, *after;
	size_t snaplen, jlen, len;
	int pass;

	(void)state;
	assert_int_equal(CKPT_MAX_PODS, ENID_MAX_RECORDED_PODS);
	assert_int_equal(CKPT_MAX_COOLING, ENID_MAX_RECORDED_COOLING);
	assert_true(CKPT_MAX_PODS >= 2 * ENID_MAX_PODS);
	dir_open(&d, "enid-journal");
	assert_int_equal(load(&s, &d, CKPT_JOURNAL_SIZE, &c, note, err), 1);
	crowd(&c, CKPT_MAX_PODS, CKPT_MAX_COOLING, 1);
	if (ckpt_store_save(&s, d.fd, &c, &saved, warn, sizeof(warn), err,
	    sizeof(err)) != 0)
		fail_msg("at the caps: %s", err);
	assert_int_equal(saved, CKPT_SAVED_SNAPSHOT);
	/* one more pod, then one more cooling address; each as a record,
	 * then as a snapshot (the first save after a load) */
	for (pass = 0; pass < 4; pass++) {
		if (pass % 2 == 1) {
			ckpt_store_close(&s);
			assert_int_equal(load(&s, &d, CKPT_JOURNAL_SIZE, &back,
			    note, err), 0);
			checkpoint_free(&back);
			assert_true(s.compact);
		} else if (s.compact) {
			/* a failed snapshot leaves the next save one too:
			 * a good one first, at the caps */
			crowd(&c, CKPT_MAX_PODS, CKPT_MAX_COOLING, 3);
			assert_int_equal(ckpt_store_save(&s, d.fd, &c, &saved,
			    warn, sizeof(warn), err, sizeof(err)), 0);
			assert_false(s.compact);
		}
		snap = file_bytes(&d, CKPT_FILE, &snaplen);
		journal = file_bytes(&d, CKPT_JOURNAL_FILE, &jlen);
		if (pass < 2)
			crowd(&c, CKPT_MAX_PODS + 1, CKPT_MAX_COOLING, 2);
		else
			crowd(&c, CKPT_MAX_PODS, CKPT_MAX_COOLING + 1, 2);
		assert_int_equal(ckpt_store_save(&s, d.fd, &c, &saved, warn,
		    sizeof(warn), err, sizeof(err)), -1);
		if (pass < 2)
			assert_non_null(strstr(err, "refused by its own rules: "
			    "pods: 4097 entries, more than the 4096 a "
			    "checkpoint holds (ENID_MAX_RECORDED_PODS)"));
		else
			assert_non_null(strstr(err, "refused by its own rules: "
			    "cooling: 4097 entries, more than the 4096 a "
			    "checkpoint holds (ENID_MAX_RECORDED_COOLING)"));
		after = file_bytes(&d, CKPT_FILE, &len);
		assert_int_equal(len, snaplen);
		assert_memory_equal(after, snap, len);
		free(after);
		after = file_bytes(&d, CKPT_JOURNAL_FILE, &len);
		assert_int_equal(len, jlen);
		assert_memory_equal(after, journal, len);
		free(after);
		free(snap);
		free(journal);
	}
	ckpt_store_close(&s);
	/* what is on disk is the whole of the last save that succeeded */
	assert_int_equal(load(&s, &d, CKPT_JOURNAL_SIZE, &back, note, err), 0);
	assert_int_equal(back.npods, CKPT_MAX_PODS);
	assert_int_equal(back.ncooling, CKPT_MAX_COOLING);
	checkpoint_free(&back);
	ckpt_store_close(&s);
	dir_close(&d);
}

/*
 * Save a checkpoint of w whose strings are borrowed (as the broker's
 * are, from its pods), then spoil and free what they were borrowed from:
 * the store's record of the files must hold copies of its own (ASan
 * sees any read of the freed strings).
 */
static void
save_borrowed(struct ckpt_store *s, const struct dir *d,
    const struct world *w, int64_t written, enum ckpt_saved want)
{
	struct checkpoint src, next, expect;
	enum ckpt_saved saved;
	char warn[512], err[1024];
	size_t i;
	int k;

	world_checkpoint(w, written, &src);
	memset(&next, 0, sizeof(next));
	memcpy(next.instance_id, src.instance_id, sizeof(next.instance_id));
	next.written = src.written;
	next.npods = src.npods;
	next.ncooling = src.ncooling;
	next.pods = calloc(src.npods + 1, sizeof(*next.pods));
	next.cooling = calloc(src.ncooling + 1, sizeof(*next.cooling));
	assert_non_null(next.pods);
	assert_non_null(next.cooling);
	memcpy(next.pods, src.pods, src.npods * sizeof(*next.pods));
	memcpy(next.cooling, src.cooling,
	    src.ncooling * sizeof(*next.cooling));
	assert_null(next.arena.blocks);
	if (ckpt_store_save(s, d->fd, &next, &saved, warn, sizeof(warn), err,
	    sizeof(err)) != 0)
		fail_msg("save: %s", err);
	assert_int_equal(saved, want);

	for (i = 0; i < src.npods; i++) {
		const char *f[] = { src.pods[i].container_id,
		    src.pods[i].ifname, src.pods[i].k8s_namespace,
		    src.pods[i].k8s_name, src.pods[i].k8s_uid,
		    src.pods[i].eni_id };

		for (k = 0; k < 6; k++)
			memset((char *)(uintptr_t)f[k], 'Z', strlen(f[k]));
	}
	for (i = 0; i < src.ncooling; i++)
		memset((char *)(uintptr_t)src.cooling[i].eni_id, 'Z',
		    strlen(src.cooling[i].eni_id));
	checkpoint_free(&src);

	world_checkpoint(w, written, &expect);
	checkpoint_sort(&expect);
	expect.generation = s->generation;
	assert_null(check_err(&s->durable));
	assert_true(checkpoint_equal(&s->durable, &expect));
	checkpoint_free(&expect);
}

static void
test_store_keeps_own_strings(void **state)
{
	struct ckpt_store s;
	struct checkpoint c;
	struct world w;
	struct dir d;
	char note[512], err[1024];
	int i;

	(void)state;
	dir_open(&d, "enid-journal");
	assert_int_equal(load(&s, &d, CKPT_JOURNAL_SIZE, &c, note, err), 1);
	rng_state = 0x53;
	world_random(&w);
	save_borrowed(&s, &d, &w, 1, CKPT_SAVED_SNAPSHOT);
	assert_int_equal(ckpt_arena_blocks(&s.durable.arena), 1);
	for (i = 2; i <= 8; i++) {
		world_step(&w);
		/* each record is the difference from the durable copy */
		save_borrowed(&s, &d, &w, i, CKPT_SAVED_RECORD);
		assert_int_equal(ckpt_arena_blocks(&s.durable.arena), 1);
	}
	expect_loaded(&d, &w, 8, 1, "generation 1, 7 journal records");
	ckpt_store_close(&s);
	dir_close(&d);
}

/* A small journal fills: a snapshot, and records again after it. */
static void
test_store_full_journal(void **state)
{
	struct ckpt_store s;
	struct checkpoint c;
	struct world w;
	struct dir d;
	struct stat st;
	char note[512], err[1024];
	int i, snapshots = 0, records = 0, nothing = 0;
	enum ckpt_saved saved;

	(void)state;
	dir_open(&d, "enid-journal");
	assert_int_equal(load(&s, &d, 4096, &c, note, err), 1);
	rng_state = 0x52;
	world_random(&w);
	for (i = 1; i <= 200; i++) {
		saved = save(&s, &d, &w, i);
		snapshots += saved == CKPT_SAVED_SNAPSHOT;
		records += saved == CKPT_SAVED_RECORD;
		nothing += saved == CKPT_SAVED_NOTHING;
		assert_true(s.off <= 4096);
		if (i % 17 == 0)
			expect_loaded(&d, &w, i, s.generation, NULL);
		world_step(&w);
	}
	print_message("200 saves in a 4 KiB journal: %d snapshots, %d "
	    "records, %d with nothing new\n", snapshots, records, nothing);
	assert_int_equal(snapshots + records + nothing, 200);
	assert_true(snapshots >= 5);
	assert_true(records >= 100);
	assert_int_equal(fstatat(d.fd, CKPT_JOURNAL_FILE, &st, 0), 0);
	assert_int_equal(st.st_size, 4096);
	ckpt_store_close(&s);

	/* a journal of another size is made again at the wanted one */
	assert_int_equal(load(&s, &d, CKPT_JOURNAL_SIZE, &c, note, err), 0);
	checkpoint_free(&c);
	assert_int_equal(save(&s, &d, &w, 300), CKPT_SAVED_SNAPSHOT);
	assert_int_equal(fstatat(d.fd, CKPT_JOURNAL_FILE, &st, 0), 0);
	assert_int_equal(st.st_size, CKPT_JOURNAL_SIZE);
	world_step(&w);
	assert_int_equal(save(&s, &d, &w, 301), CKPT_SAVED_RECORD);
	expect_loaded(&d, &w, 301, s.generation, NULL);
	ckpt_store_close(&s);
	dir_close(&d);
}

/* A failed record write: refused, and the next save is a snapshot. */
static void
test_store_write_failure(void **state)
{
	struct ckpt_store s;
	struct checkpoint c;
	struct world w;
	struct dir d;
	enum ckpt_saved saved;
	char err[1024], warn[512];

	(void)state;
	store_first(&s, &d, &w, 0x53);
	world_step(&w);
	assert_int_equal(save(&s, &d, &w, 2), CKPT_SAVED_RECORD);
	make_read_only(&d, s.fd);
	world_step(&w);
	world_checkpoint(&w, 3, &c);
	assert_int_equal(ckpt_store_save(&s, d.fd, &c, &saved, warn,
	    sizeof(warn), err, sizeof(err)), -1);
	assert_non_null(strstr(err, "checkpoint.journal: writing "));
	assert_non_null(strstr(err, ": Bad file descriptor"));
	assert_int_equal(s.fd, -1);
	assert_int_equal(save(&s, &d, &w, 3), CKPT_SAVED_SNAPSHOT);
	world_step(&w);
	assert_int_equal(save(&s, &d, &w, 4), CKPT_SAVED_RECORD);
	expect_loaded(&d, &w, 4, 2, NULL);
	ckpt_store_close(&s);
	dir_close(&d);
}

/*
 * The three steps the broker takes with its writer thread: prepare
 * formats the record and takes next, no other save runs until finish, the
 * files hold the old state until the write, and finish makes the new one
 * the store's; a write that fails has the next save write a snapshot.
 */
static void
test_store_in_steps(void **state)
{
	struct ckpt_store s;
	struct ckpt_write wr;
	struct checkpoint c, other;
	struct world w, before;
	struct dir d;
	enum ckpt_saved saved;
	char err[1024], warn[512];

	(void)state;
	store_first(&s, &d, &w, 0x54);
	before = w;
	world_step(&w);
	world_checkpoint(&w, 2, &c);
	assert_int_equal(ckpt_store_prepare(&s, d.fd, &c, &wr, &saved, warn,
	    sizeof(warn), err, sizeof(err)), 0);
	assert_int_equal(saved, CKPT_SAVED_RECORD);
	assert_null(c.pods);			/* taken into wr */
	assert_true(s.writing);
	/* another save meanwhile is refused, and frees what it was given */
	world_checkpoint(&w, 3, &other);
	assert_int_equal(ckpt_store_prepare(&s, d.fd, &other, &wr, &saved,
	    warn, sizeof(warn), err, sizeof(err)), -1);
	assert_non_null(strstr(err, "being written"));
	/* not written yet: the files hold the state before it */
	expect_loaded(&d, &before, 1, 1, NULL);
	ckpt_record_write(&wr);
	assert_int_equal(wr.error, 0);
	assert_int_equal(ckpt_store_finish(&s, &wr, err, sizeof(err)), 0);
	assert_false(s.writing);
	expect_loaded(&d, &w, 2, 1, "generation 1, 1 journal record ");

	/* a record whose write fails: an error, then a snapshot */
	world_step(&w);
	world_checkpoint(&w, 3, &c);
	assert_int_equal(ckpt_store_prepare(&s, d.fd, &c, &wr, &saved, warn,
	    sizeof(warn), err, sizeof(err)), 0);
	assert_int_equal(saved, CKPT_SAVED_RECORD);
	make_read_only(&d, wr.fd);
	ckpt_record_write(&wr);
	assert_int_equal(wr.error, EBADF);
	assert_int_equal(ckpt_store_finish(&s, &wr, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "checkpoint.journal: writing the record "
	    "at offset "));
	assert_int_equal(s.fd, -1);
	assert_false(s.writing);
	assert_int_equal(save(&s, &d, &w, 3), CKPT_SAVED_SNAPSHOT);
	expect_loaded(&d, &w, 3, 2, NULL);
	ckpt_store_close(&s);
	dir_close(&d);
}

/* Load a pair that must be moved aside: -1, err as expected, both files
 * gone aside (or only the journal when only it was there). */
static void
expect_both_aside(const struct dir *d, const char *err_start)
{
	struct ckpt_store s;
	struct checkpoint c;
	char note[512], err[1024];

	assert_int_equal(load(&s, d, CKPT_JOURNAL_SIZE, &c, note, err), -1);
	assert_int_equal(c.npods, 0);
	assert_null(c.pods);
	if (strncmp(err, err_start, strlen(err_start)) != 0)
		fail_msg("err \"%s\", not \"%s...\"", err, err_start);
	assert_non_null(strstr(err, "moved aside to checkpoint.journal."
	    "corrupt-"));
	assert_non_null(strstr(err, "moved aside to checkpoint.json."
	    "corrupt-"));
	assert_false(exists(d, CKPT_FILE));
	assert_false(exists(d, CKPT_JOURNAL_FILE));
	assert_int_equal(take_aside(d, "checkpoint.json.corrupt-"), 1);
	assert_int_equal(take_aside(d, "checkpoint.journal.corrupt-"), 1);
	/* ready to save: a new pair, loaded back */
	assert_true(s.loaded);
	ckpt_store_close(&s);
}

static void
test_store_bad_pairs(void **state)
{
	struct ckpt_store s;
	struct checkpoint c;
	struct world w;
	struct dir d;
	char note[512], err[1024], *old_snap, *journal;
	size_t old_len, jlen;
	uint8_t rec[JOURNAL_HDR_LEN + 16];

	(void)state;
	dir_open(&d, "enid-journal");
	rng_state = 0x54;
	world_random(&w);

	/* a journal without its snapshot: ignored and moved aside */
	assert_int_equal(load(&s, &d, CKPT_JOURNAL_SIZE, &c, note, err), 1);
	assert_int_equal(save(&s, &d, &w, 1), CKPT_SAVED_SNAPSHOT);
	world_step(&w);
	assert_int_equal(save(&s, &d, &w, 2), CKPT_SAVED_RECORD);
	ckpt_store_close(&s);
	assert_int_equal(unlinkat(d.fd, CKPT_FILE, 0), 0);
	assert_int_equal(load(&s, &d, CKPT_JOURNAL_SIZE, &c, note, err), 1);
	assert_non_null(strstr(note, "checkpoint.journal without "
	    "checkpoint.json: ignored; moved aside to "
	    "checkpoint.journal.corrupt-"));
	assert_false(exists(&d, CKPT_JOURNAL_FILE));
	assert_int_equal(take_aside(&d, "checkpoint.journal.corrupt-"), 1);
	/* a new life from generation 1 */
	assert_int_equal(save(&s, &d, &w, 3), CKPT_SAVED_SNAPSHOT);
	world_step(&w);
	assert_int_equal(save(&s, &d, &w, 4), CKPT_SAVED_RECORD);
	expect_loaded(&d, &w, 4, 1, "generation 1, 1 journal record");
	ckpt_store_close(&s);

	/* a snapshot newer than the journal's records: they are stale */
	old_snap = file_bytes(&d, CKPT_FILE, &old_len);
	journal = file_bytes(&d, CKPT_JOURNAL_FILE, &jlen);
	assert_int_equal(load(&s, &d, CKPT_JOURNAL_SIZE, &c, note, err), 0);
	checkpoint_free(&c);
	world_step(&w);
	assert_int_equal(save(&s, &d, &w, 5), CKPT_SAVED_SNAPSHOT);
	ckpt_store_close(&s);
	put_bytes(&d, CKPT_JOURNAL_FILE, journal, jlen);
	expect_loaded(&d, &w, 5, 2, "generation 2, 0 journal records "
	    "replayed, then a record of generation 1 at offset 0 (stale)");

	/* the journal newer than the snapshot (an old snapshot put back):
	 * acknowledged records may be lost, so both go aside */
	assert_int_equal(load(&s, &d, CKPT_JOURNAL_SIZE, &c, note, err), 0);
	checkpoint_free(&c);
	world_step(&w);
	assert_int_equal(save(&s, &d, &w, 6), CKPT_SAVED_SNAPSHOT);
	world_step(&w);
	assert_int_equal(save(&s, &d, &w, 7), CKPT_SAVED_RECORD);
	ckpt_store_close(&s);
	put_bytes(&d, CKPT_FILE, old_snap, old_len);
	expect_both_aside(&d, "checkpoint.journal: a record of generation 3 "
	    "at offset 0 is newer than checkpoint.json's 1 (the snapshot "
	    "was replaced or lost)");
	free(journal);

	/* a whole record that does not apply */
	assert_int_equal(load(&s, &d, CKPT_JOURNAL_SIZE, &c, note, err), 1);
	assert_int_equal(save(&s, &d, &w, 8), CKPT_SAVED_SNAPSHOT);
	ckpt_store_close(&s);
	memcpy(rec + JOURNAL_HDR_LEN, "{\"written\": 1}", 14);
	journal_frame(rec, 1, 0, 14);
	journal = calloc(1, CKPT_JOURNAL_SIZE);
	assert_non_null(journal);
	memcpy(journal, rec, JOURNAL_HDR_LEN + 14);
	put_bytes(&d, CKPT_JOURNAL_FILE, journal, CKPT_JOURNAL_SIZE);
	expect_both_aside(&d, "checkpoint.journal: record 0 at offset 0: "
	    "missing key \"pods_removed\"; moved aside to ");

	/* a corrupt snapshot takes its journal aside with it */
	put_bytes(&d, CKPT_FILE, "{\"version\": 2", 13);
	put_bytes(&d, CKPT_JOURNAL_FILE, journal, CKPT_JOURNAL_SIZE);
	expect_both_aside(&d, "checkpoint.json: invalid JSON: unexpected end "
	    "of input (truncated?); moved aside to ");

	/* a journal that is no regular file */
	put_bytes(&d, CKPT_FILE, old_snap, old_len);
	assert_int_equal(mkdirat(d.fd, CKPT_JOURNAL_FILE, 0700), 0);
	assert_int_equal(load(&s, &d, CKPT_JOURNAL_SIZE, &c, note, err), -1);
	assert_non_null(strstr(err, "checkpoint.journal: a directory, not a "
	    "regular file; moved aside to checkpoint.journal.corrupt-"));
	assert_int_equal(take_aside(&d, "checkpoint.json.corrupt-"), 1);
	ckpt_store_close(&s);
	free(journal);
	free(old_snap);
	dir_close(&d);
}

/* A journal this process may not read is no corrupt one: both files stay
 * (-2).  As root, a child that has given up root tries. */
static void
test_store_unreadable_stays(void **state)
{
	struct ckpt_store s;
	struct checkpoint c;
	struct world w;
	struct dir d;
	char note[512], err[1024];
	pid_t pid;
	int status, rc;

	(void)state;
	store_first(&s, &d, &w, 0x55);
	ckpt_store_close(&s);
	assert_int_equal(fchmodat(d.fd, CKPT_JOURNAL_FILE, 0, 0), 0);
	assert_int_equal(fchmodat(d.fd, CKPT_FILE, 0644, 0), 0);
	assert_int_equal(fchmod(d.fd, 0755), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (geteuid() == 0 && (setgid(65534) == -1 ||
		    setuid(65534) == -1))
			_exit(10);
		rc = load(&s, &d, CKPT_JOURNAL_SIZE, &c, note, err);
		if (rc != -2)
			_exit(11);
		if (strcmp(err, "checkpoint.journal: Permission denied; left "
		    "in place") != 0)
			_exit(12);
		if (s.loaded || c.pods != NULL)
			_exit(13);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_true(exists(&d, CKPT_FILE));
	assert_true(exists(&d, CKPT_JOURNAL_FILE));
	dir_close(&d);
}

/* A link where the journal goes is refused at load, and never written
 * through: the pair goes aside and the next journal is a file. */
static void
test_store_journal_link(void **state)
{
	struct ckpt_store s;
	struct checkpoint c;
	struct world w;
	struct dir d;
	struct stat st;
	char note[512], err[1024], target[300];
	size_t len;
	char *victim;

	(void)state;
	store_first(&s, &d, &w, 0x56);
	ckpt_store_close(&s);
	put_bytes(&d, "victim", "untouched", 9);
	snprintf(target, sizeof(target), "%s/victim", d.path);
	assert_int_equal(unlinkat(d.fd, CKPT_JOURNAL_FILE, 0), 0);
	assert_int_equal(symlinkat(target, d.fd, CKPT_JOURNAL_FILE), 0);
	expect_both_aside(&d, "checkpoint.journal: a symbolic link, not "
	    "followed; moved aside to ");
	victim = file_bytes(&d, "victim", &len);
	assert_int_equal(len, 9);
	assert_memory_equal(victim, "untouched", 9);
	free(victim);

	/* a link that appears while enid runs is replaced when the journal
	 * is (re)made, never followed */
	assert_int_equal(load(&s, &d, CKPT_JOURNAL_SIZE, &c, note, err), 1);
	assert_int_equal(symlinkat(target, d.fd, CKPT_JOURNAL_FILE), 0);
	assert_int_equal(save(&s, &d, &w, 2), CKPT_SAVED_SNAPSHOT);
	assert_int_equal(fstatat(d.fd, CKPT_JOURNAL_FILE, &st,
	    AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISREG(st.st_mode));
	victim = file_bytes(&d, "victim", &len);
	assert_int_equal(len, 9);
	free(victim);
	world_step(&w);
	assert_int_equal(save(&s, &d, &w, 3), CKPT_SAVED_RECORD);
	expect_loaded(&d, &w, 3, 1, NULL);
	ckpt_store_close(&s);
	dir_close(&d);
}

/* Every name a move aside could take in the next few seconds, taken. */
static void
block_aside(const struct dir *d, const char *name)
{
	char aside[300];
	struct timespec ts;
	time_t t;
	int i;

	/* the clock ckpt_move_aside reads; time(3)'s may lag it */
	clock_gettime(CLOCK_REALTIME, &ts);
	for (t = ts.tv_sec; t <= ts.tv_sec + 3; t++)
		for (i = 1; i <= 9; i++) {
			if (i == 1)
				snprintf(aside, sizeof(aside), "%s.corrupt-%lld",
				    name, (long long)t);
			else
				snprintf(aside, sizeof(aside),
				    "%s.corrupt-%lld.%d", name, (long long)t, i);
			put_bytes(d, aside, "taken", 5);
		}
}

/*
 * A journal without its snapshot that cannot be moved aside: the next
 * snapshot (generation 1, as its records may be) is written only after the
 * journal was made again, so that a crash right after it finds none of
 * them.
 */
static void
test_store_stale_journal_renewed(void **state)
{
	struct ckpt_store s;
	struct checkpoint c;
	struct world w, other;
	struct dir d;
	char note[512], err[1024];

	(void)state;
	dir_open(&d, "enid-journal");
	rng_state = 0x57;
	world_random(&other);
	assert_int_equal(load(&s, &d, CKPT_JOURNAL_SIZE, &c, note, err), 1);
	assert_int_equal(save(&s, &d, &other, 1), CKPT_SAVED_SNAPSHOT);
	world_step(&other);
	assert_int_equal(save(&s, &d, &other, 2), CKPT_SAVED_RECORD);
	ckpt_store_close(&s);
	assert_int_equal(unlinkat(d.fd, CKPT_FILE, 0), 0);

	block_aside(&d, CKPT_JOURNAL_FILE);
	assert_int_equal(load(&s, &d, CKPT_JOURNAL_SIZE, &c, note, err), 1);
	assert_non_null(strstr(note, "could not move it aside"));
	assert_true(exists(&d, CKPT_JOURNAL_FILE));
	/* another life's state, at generation 1 again; "killed" at once */
	world_random(&w);
	assert_int_equal(save(&s, &d, &w, 3), CKPT_SAVED_SNAPSHOT);
	expect_loaded(&d, &w, 3, 1, "generation 1, 0 journal records "
	    "replayed, then unwritten space at offset 0");
	world_step(&w);
	assert_int_equal(save(&s, &d, &w, 4), CKPT_SAVED_RECORD);
	expect_loaded(&d, &w, 4, 1, "generation 1, 1 journal record");
	ckpt_store_close(&s);
	dir_close(&d);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32),
		cmocka_unit_test(test_diff_round_trip),
		cmocka_unit_test(test_diff_changed_fields),
		cmocka_unit_test(test_cooling_settle),
		cmocka_unit_test(test_diff_parse_strict),
		cmocka_unit_test(test_apply_refuses),
		cmocka_unit_test(test_replay_round_trip),
		cmocka_unit_test(test_replay_torn_tail),
		cmocka_unit_test(test_replay_flipped_bits),
		cmocka_unit_test(test_replay_generation_and_sequence),
		cmocka_unit_test(test_replay_bad_content),
		cmocka_unit_test(test_max_generation),
		cmocka_unit_test(test_replay_newer_format),
		cmocka_unit_test(test_store_newer_left_in_place),
		cmocka_unit_test(test_store_version),
		cmocka_unit_test(test_store_caps),
		cmocka_unit_test(test_store_save_and_load),
		cmocka_unit_test(test_store_full_journal),
		cmocka_unit_test(test_store_keeps_own_strings),
		cmocka_unit_test(test_store_write_failure),
		cmocka_unit_test(test_store_in_steps),
		cmocka_unit_test(test_store_bad_pairs),
		cmocka_unit_test(test_store_unreadable_stays),
		cmocka_unit_test(test_store_journal_link),
		cmocka_unit_test(test_store_stale_journal_renewed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
