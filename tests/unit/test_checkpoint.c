/*
 * The checkpoint (broker/checkpoint.c): random valid checkpoints survive
 * format and parse unchanged; every rule is refused one spoiled field at a
 * time with a message naming the field; every cap is taken at its limit
 * and refused one past it; the file is written atomically and a bad one is
 * moved aside with a message naming the file and the cause.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "addr.h"
#include "checkpoint.h"
#include "testckpt.h"
#include "testdir.h"
#include "testrng.h"

static void
rnd_text(char *dst, size_t len, const char *alphabet)
{
	size_t n = strlen(alphabet), i;

	for (i = 0; i < len; i++)
		dst[i] = alphabet[rnd(n)];
	dst[len] = '\0';
}

/* Short mostly, now and then at the field's limit. */
static size_t
rnd_len(size_t min, size_t max)
{
	switch (rnd(8)) {
	case 0:
		return max;
	case 1:
		return min;
	case 2:
		return min + rnd(max - min + 1);
	default:
		return min + rnd((max - min < 12 ? max - min : 12) + 1);
	}
}

/* s in c's arena. */
static const char *
sdup(struct checkpoint *c, const char *s)
{
	const char *p = checkpoint_strdup(c, s);

	assert_non_null(p);
	return p;
}

/* buf (size bytes) as the longest string it holds, every byte ch. */
static void
fill(char *buf, size_t size, char ch)
{
	memset(buf, ch, size - 1);
	buf[size - 1] = '\0';
}

#define ALNUM	"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
#define HEX	"0123456789abcdefABCDEF"

static char printable[96];	/* ' '..'~' */
static char ifchars[96];	/* printable without ' ', '/', ':' */

static void
init_alphabets(void)
{
	size_t i, n = 0;

	for (i = 0; i < 95; i++)
		printable[i] = (char)(' ' + i);
	printable[95] = '\0';
	for (i = 0; i < 95; i++)
		if (printable[i] != ' ' && printable[i] != '/' &&
		    printable[i] != ':')
			ifchars[n++] = printable[i];
	ifchars[n] = '\0';
}

static void
rnd_cid(char *dst)
{
	size_t len = rnd_len(1, CKPT_CID_LEN - 1);

	rnd_text(dst, len, ALNUM "_.-");
	dst[0] = ALNUM[rnd(sizeof(ALNUM) - 1)];
}

static void
rnd_ifname(char *dst)
{
	do
		rnd_text(dst, rnd_len(1, CKPT_IFNAME_LEN - 1), ifchars);
	while (strcmp(dst, ".") == 0 || strcmp(dst, "..") == 0);
}

static void
rnd_hex_id(char *dst, const char *prefix)
{
	size_t n = strlen(prefix);

	memcpy(dst, prefix, n);
	rnd_text(dst + n, rnd_len(1, CKPT_ENI_LEN - 1 - n), HEX);
}

static int64_t
rnd_time(void)
{
	switch (rnd(4)) {
	case 0:
		return 0;
	case 1:
		return CKPT_MAX_TIME;
	default:
		return (int64_t)(rng() % (uint64_t)(CKPT_MAX_TIME + 1));
	}
}

static uint32_t
rnd_ip(void)
{
	uint32_t a;

	do
		a = (uint32_t)rng();
	while ((a >> 24) == 0 || (a >> 24) == 127 || (a >> 24) >= 224);
	return htonl(a);
}

static bool
ip_taken(const struct checkpoint *c, const struct ip_addr *ip, size_t npods,
    size_t ncool)
{
	size_t i;

	for (i = 0; i < npods; i++)
		if (ip_addr_eq(&c->pods[i].ip, ip))
			return true;
	for (i = 0; i < ncool; i++)
		if (ip_addr_eq(&c->cooling[i].ip, ip))
			return true;
	return false;
}

/* pods[i]'s (container id, ifname) already at an earlier index? */
static bool
attachment_taken(const struct checkpoint *c, size_t i)
{
	size_t j;

	for (j = 0; j < i; j++)
		if (strcmp(c->pods[j].container_id,
		    c->pods[i].container_id) == 0 &&
		    strcmp(c->pods[j].ifname, c->pods[i].ifname) == 0)
			return true;
	return false;
}

static void
random_checkpoint(struct checkpoint *c)
{
	size_t i;

	memset(c, 0, sizeof(*c));
	rnd_hex_id(c->instance_id, "i-");
	c->written = rnd_time();
	c->npods = rnd(4) == 0 ? 0 : rnd(rnd(10) == 0 ? 300 : 20);
	c->ncooling = rnd(3) == 0 ? 0 : rnd(10);
	c->pods = calloc(c->npods + 1, sizeof(*c->pods));
	c->cooling = calloc(c->ncooling + 1, sizeof(*c->cooling));
	assert_non_null(c->pods);
	assert_non_null(c->cooling);
	for (i = 0; i < c->npods; i++) {
		struct ckpt_pod *p = &c->pods[i];
		char buf[CKPT_CID_LEN];

		/* a shared container id now and then: several interfaces */
		if (i > 0 && rnd(5) == 0)
			p->container_id = c->pods[i - 1].container_id;
		else {
			rnd_cid(buf);
			p->container_id = sdup(c, buf);
		}
		/* the ifnames tried and refused stay in the arena: unused
		 * strings there are harmless */
		do {
			rnd_ifname(buf);
			p->ifname = sdup(c, buf);
		} while (attachment_taken(c, i));
		rnd_text(buf, rnd_len(0, CKPT_K8S_LEN - 1), printable);
		p->k8s_namespace = sdup(c, buf);
		rnd_text(buf, rnd_len(0, CKPT_K8S_LEN - 1), printable);
		p->k8s_name = sdup(c, buf);
		rnd_text(buf, rnd_len(0, CKPT_UID_LEN - 1), printable);
		p->k8s_uid = sdup(c, buf);
		do
			p->ip = ip_addr_from_in(rnd_ip());
		while (ip_taken(c, &p->ip, i, 0));
		rnd_hex_id(buf, "eni-");
		p->eni_id = sdup(c, buf);
		p->since = rnd_time();
		/* enid-cni's pods name their host end; enid-ipam's don't */
		if (rnd(2) == 0) {
			rnd_text(buf, rnd_len(1, VETH_NAME_MAX),
			    "abcdefghijklmnopqrstuvwxyz0123456789");
			p->host_veth = sdup(c, buf);
		}
	}
	for (i = 0; i < c->ncooling; i++) {
		struct ckpt_cooling *k = &c->cooling[i];
		char buf[CKPT_ENI_LEN];

		do
			k->ip = ip_addr_from_in(rnd_ip());
		while (ip_taken(c, &k->ip, c->npods, i));
		rnd_hex_id(buf, "eni-");
		k->eni_id = sdup(c, buf);
		k->until = rnd_time();
	}
	switch (rnd(4)) {
	case 0:
		c->generation = 0;
		break;
	case 1:
		c->generation = CKPT_MAX_GENERATION;
		break;
	default:
		c->generation = (int64_t)(rng() %
		    (uint64_t)(CKPT_MAX_GENERATION + 1));
	}
}

/* Format, parse, compare; and the text is a fixed point. */
static void
round_trip(const struct checkpoint *c)
{
	struct checkpoint back;
	char err[1024], *text, *again;
	size_t len, len2;

	text = checkpoint_format(c, &len);
	if (text == NULL)
		fail_msg("format refused: %s", check_err(c));
	assert_int_equal(strlen(text), len);
	if (checkpoint_parse(text, len, &back, err, sizeof(err)) != 0)
		fail_msg("parse of formatted text: %s", err);
	assert_true(checkpoint_equal(c, &back));
	again = checkpoint_format(&back, &len2);
	assert_non_null(again);
	assert_int_equal(len, len2);
	assert_memory_equal(text, again, len);
	free(again);
	free(text);
	checkpoint_free(&back);
}

static void
test_round_trip_random(void **state)
{
	struct checkpoint c;
	int i;

	(void)state;
	rng_state = 0x5eed0008;
	for (i = 0; i < 2000; i++) {
		random_checkpoint(&c);
		round_trip(&c);
		checkpoint_free(&c);
	}
}

static void
test_round_trip_empty_and_equal(void **state)
{
	struct checkpoint c, d;
	char uid[CKPT_UID_LEN + 1];
	const char *was;
	size_t i;

	(void)state;
	memset(&c, 0, sizeof(c));
	snprintf(c.instance_id, sizeof(c.instance_id), "i-0123456789abcdef0");
	round_trip(&c);

	/* equal notices each field: d is a deep copy of c */
	rng_state = 42;
	random_checkpoint(&c);
	while (c.npods == 0 || c.ncooling == 0) {
		checkpoint_free(&c);
		random_checkpoint(&c);
	}
	assert_int_equal(checkpoint_copy(&c, &d), 0);
	/* the copy owns its strings: none is c's */
	assert_int_equal(ckpt_arena_blocks(&d.arena), 1);
	for (i = 0; i < c.npods; i++) {
		assert_ptr_not_equal(d.pods[i].container_id,
		    c.pods[i].container_id);
		assert_ptr_not_equal(d.pods[i].eni_id, c.pods[i].eni_id);
	}
	assert_ptr_not_equal(d.cooling[0].eni_id, c.cooling[0].eni_id);
	assert_true(checkpoint_equal(&c, &d));
	d.written ^= 1;
	assert_false(checkpoint_equal(&c, &d));
	d.written ^= 1;
	was = d.pods[c.npods - 1].k8s_uid;
	snprintf(uid, sizeof(uid), "%s", was[0] == '\0' ? "x" : was);
	if (was[0] != '\0')
		uid[0] ^= 1;
	d.pods[c.npods - 1].k8s_uid = uid;
	assert_false(checkpoint_equal(&c, &d));
	d.pods[c.npods - 1].k8s_uid = was;
	d.pods[0].ip.bytes[3] ^= 1;
	assert_false(checkpoint_equal(&c, &d));
	d.pods[0].ip.bytes[3] ^= 1;
	assert_true(checkpoint_equal(&c, &d));
	/* the host end: one with none differs from one with a name */
	was = d.pods[0].host_veth;
	d.pods[0].host_veth = was == NULL ? "enid0" : NULL;
	assert_false(checkpoint_equal(&c, &d));
	d.pods[0].host_veth = was;
	assert_true(checkpoint_equal(&c, &d));
	d.cooling[0].until++;
	assert_false(checkpoint_equal(&c, &d));
	d.cooling[0].until--;
	d.ncooling--;
	assert_false(checkpoint_equal(&c, &d));
	checkpoint_free(&d);
	checkpoint_free(&c);
}

/* Each field at its longest and every count at its cap, the strings made of
 * the bytes JSON must escape: the largest checkpoint there can be still
 * fits CKPT_MAX_BYTES and comes back whole. */
static void
test_largest_checkpoint(void **state)
{
	struct checkpoint c;
	size_t i, len;
	char *text, cid[CKPT_CID_LEN], ifname[CKPT_IFNAME_LEN];
	char ns[CKPT_K8S_LEN], name[CKPT_K8S_LEN], uid[CKPT_UID_LEN];
	char eni[CKPT_ENI_LEN], ceni[CKPT_ENI_LEN];

	(void)state;
	memset(&c, 0, sizeof(c));
	memset(c.instance_id, 'f', sizeof(c.instance_id) - 1);
	memcpy(c.instance_id, "i-", 2);
	c.written = CKPT_MAX_TIME;
	c.npods = CKPT_MAX_PODS;
	c.ncooling = CKPT_MAX_COOLING;
	c.pods = calloc(c.npods, sizeof(*c.pods));
	c.cooling = calloc(c.ncooling, sizeof(*c.cooling));
	assert_non_null(c.pods);
	assert_non_null(c.cooling);
	fill(cid, sizeof(cid), 'c');
	fill(ifname, sizeof(ifname), '"');
	fill(ns, sizeof(ns), '\\');
	fill(name, sizeof(name), '"');
	fill(uid, sizeof(uid), '\\');
	fill(eni, sizeof(eni), 'F');
	memcpy(eni, "eni-", 4);
	fill(ceni, sizeof(ceni), 'f');
	memcpy(ceni, "eni-", 4);
	for (i = 0; i < c.npods; i++) {
		struct ckpt_pod *p = &c.pods[i];

		snprintf(cid, sizeof(cid), "%05zu", i);
		cid[5] = 'c';
		assert_int_equal(strlen(cid), CKPT_CID_LEN - 1);
		p->container_id = sdup(&c, cid);
		/* each string its own copy, as parse makes them */
		p->ifname = sdup(&c, ifname);
		p->k8s_namespace = sdup(&c, ns);
		p->k8s_name = sdup(&c, name);
		p->k8s_uid = sdup(&c, uid);
		/* 223.x */
		p->ip = ip_addr_from_in(htonl(0xdf000000u + (uint32_t)i));
		p->eni_id = sdup(&c, eni);
		p->since = CKPT_MAX_TIME;
	}
	for (i = 0; i < c.ncooling; i++) {
		struct ckpt_cooling *k = &c.cooling[i];

		k->ip = ip_addr_from_in(htonl(0xdf100000u + (uint32_t)i));
		k->eni_id = sdup(&c, ceni);
		k->until = CKPT_MAX_TIME;
	}
	/* several megabytes of strings: many blocks */
	assert_true(ckpt_arena_blocks(&c.arena) > 10);
	text = checkpoint_format(&c, &len);
	assert_non_null(text);
	print_message("largest checkpoint: %zu bytes (limit %d)\n", len,
	    CKPT_MAX_BYTES);
	assert_true(len <= CKPT_MAX_BYTES);
	free(text);
	round_trip(&c);
	checkpoint_free(&c);
}

/* ---- one spoiled field at a time ---- */

struct kv {
	const char	*key;
	const char	*raw;	/* JSON text of the value */
};

static const struct kv top_base[] = {
	{ "version", "1" },
	{ "instance_id", "\"i-0123456789abcdef0\"" },
	{ "written", "1700000000" },
	{ "pods", NULL },	/* filled in by build() */
	{ "cooling", NULL },
};

static const struct kv pod_first[] = {
	{ "container_id", "\"base\"" },
	{ "ifname", "\"eth0\"" },
	{ "namespace", "\"kube-system\"" },
	{ "name", "\"coredns-1\"" },
	{ "uid", "\"0b6f\"" },
	{ "ip", "\"10.0.1.4\"" },
	{ "eni", "\"eni-0a1b2c3d\"" },
	{ "since", "1699999999" },
};

static const struct kv pod_base[] = {
	{ "container_id", "\"c0ffee\"" },
	{ "ifname", "\"eth0\"" },
	{ "namespace", "\"default\"" },
	{ "name", "\"web-1\"" },
	{ "uid", "\"6f1c-22\"" },
	{ "ip", "\"10.0.1.5\"" },
	{ "eni", "\"eni-0a1b2c3d\"" },
	{ "since", "1700000000" },
};

static const struct kv cool_first[] = {
	{ "ip", "\"10.0.1.8\"" },
	{ "eni", "\"eni-0a1b2c3d\"" },
	{ "until", "1700000030" },
};

static const struct kv cool_base[] = {
	{ "ip", "\"10.0.1.9\"" },
	{ "eni", "\"eni-0a1b2c3d\"" },
	{ "until", "1700000031" },
};

#define N(t)	(sizeof(t) / sizeof(t[0]))

enum where { TOP, POD, COOL };

#define DROP	((const char *)1)	/* remove the key */

struct spoil {
	enum where	 where;
	const char	*key;
	const char	*raw;		/* DROP, or the value's JSON text */
};

static char *
append(char *p, const char *s)
{
	size_t n = strlen(s);

	memcpy(p, s, n + 1);
	return p + n;
}

/* An object of tab's keys, with one of them spoiled (sp may be NULL). */
static char *
object(char *p, const struct kv *tab, size_t n, const struct spoil *sp,
    const char *inner_pods, const char *inner_cooling)
{
	bool first = true, found = false;
	size_t i;

	p = append(p, "{");
	for (i = 0; i < n; i++) {
		const char *raw = tab[i].raw;

		if (strcmp(tab[i].key, "pods") == 0)
			raw = inner_pods;
		else if (strcmp(tab[i].key, "cooling") == 0)
			raw = inner_cooling;
		if (sp != NULL && strcmp(sp->key, tab[i].key) == 0) {
			found = true;
			if (sp->raw == DROP)
				continue;
			raw = sp->raw;
		}
		p = append(p, first ? "\"" : ", \"");
		p = append(p, tab[i].key);
		p = append(p, "\": ");
		p = append(p, raw);
		first = false;
	}
	if (sp != NULL && !found && sp->raw != DROP) {
		p = append(p, first ? "\"" : ", \"");
		p = append(p, sp->key);
		p = append(p, "\": ");
		p = append(p, sp->raw);
	}
	return append(p, "}");
}

/* A checkpoint with one valid pod and cooling address and, after them,
 * the one that sp spoils (or the top level spoiled). */
static char *
build(const struct spoil *sp)
{
	static char pods[1 << 16], cooling[1 << 12], text[1 << 17];
	char *p;

	p = append(pods, "[");
	p = object(p, pod_first, N(pod_first), NULL, NULL, NULL);
	p = append(p, ", ");
	p = object(p, pod_base, N(pod_base),
	    sp != NULL && sp->where == POD ? sp : NULL, NULL, NULL);
	append(p, "]");
	p = append(cooling, "[");
	p = object(p, cool_first, N(cool_first), NULL, NULL, NULL);
	p = append(p, ", ");
	p = object(p, cool_base, N(cool_base),
	    sp != NULL && sp->where == COOL ? sp : NULL, NULL, NULL);
	append(p, "]");
	object(text, top_base, N(top_base),
	    sp != NULL && sp->where == TOP ? sp : NULL, pods, cooling);
	return text;
}

static const char *
parse_err(const char *text, size_t len)
{
	static char err[1024];
	struct checkpoint c;

	memset(err, 0, sizeof(err));
	if (checkpoint_parse(text, len, &c, err, sizeof(err)) == 0) {
		checkpoint_free(&c);
		return NULL;
	}
	/* refused: nothing left behind */
	assert_int_equal(c.npods, 0);
	assert_null(c.pods);
	assert_int_equal(c.ncooling, 0);
	assert_null(c.cooling);
	return err;
}

struct bad {
	struct spoil	 sp;
	const char	*expect;	/* the whole message; NULL: accepted */
};

#define CID_RULE "not a container id (1 to 256 of [A-Za-z0-9_.-], not " \
	"starting with '.' or '-')"
#define IF_RULE "not an interface name (1 to 15 printable bytes, no '/', " \
	"':' or space, not \".\" or \"..\")"
#define ENI_RULE "not an ENI id (\"eni-\" and hex digits)"
#define I_RULE "not an instance id (\"i-\" and hex digits)"
#define NOT_IP "not an IPv4 address"
#define TIME_RANGE "out of range 0..253402300799"

static const struct bad bad_cases[] = {
	/* the base itself, and what the rules allow */
	{ { TOP, "none", DROP }, NULL },
	{ { POD, "container_id", "\"base\"" }, "pods[1]: container base "
	  "interface eth0 is already at pods[0]" },
	{ { POD, "ifname", "\"eth1\"" }, NULL },
	/* a pod's host end: optional, and only a name enid-cni makes */
	{ { POD, "host_veth", "\"enid1a2b3c4d5e6\"" }, NULL },
	{ { POD, "host_veth", "\"a\"" }, NULL },
	{ { POD, "host_veth", "\"eth0:1\"" },
	  "pods[1].host_veth: not a pod veth name (1 to 15 of a-z 0-9)" },
	{ { POD, "host_veth", "\"\"" },
	  "pods[1].host_veth: not a pod veth name (1 to 15 of a-z 0-9)" },
	{ { POD, "host_veth", "\"enid1a2b3c4d5e6f\"" },
	  "pods[1].host_veth: longer than 15 bytes" },
	{ { POD, "host_veth", "7" },
	  "pods[1].host_veth: expected a string, got int" },
	{ { POD, "container_id", "\"A_b.c-9\"" }, NULL },
	{ { POD, "ifname", "\"...\"" }, NULL },
	{ { POD, "ifname", "\"e\\\"\\\\~\"" }, NULL },
	{ { POD, "namespace", "\"\"" }, NULL },
	{ { POD, "uid", "\"a b\\\"c\"" }, NULL },
	{ { POD, "eni", "\"eni-ABCdef0\"" }, NULL },
	{ { POD, "since", "0" }, NULL },
	{ { POD, "since", "253402300799" }, NULL },
	{ { POD, "ip", "\"223.255.255.254\"" }, NULL },
	{ { POD, "ip", "\"1.0.0.0\"" }, NULL },

	/* version; version 1 has no generation, version 2 one */
	{ { TOP, "version", DROP }, "missing key \"version\"" },
	{ { TOP, "version", "5" },
	  "version: format version 5, newer than the 4 this enid reads (a "
	  "newer enid wrote it)" },
	{ { TOP, "version", "-1" },
	  "version: unsupported version -1 (this enid reads 1 to 4)" },
	{ { TOP, "version", "0" },
	  "version: unsupported version 0 (this enid reads 1 to 4)" },
	{ { TOP, "generation", "7" }, "generation: unknown key" },
	{ { TOP, "version", "2" }, "missing key \"generation\"" },
	{ { TOP, "version", "\"1\"" },
	  "version: expected an integer, got string" },
	{ { TOP, "version", "1.0" },
	  "version: expected an integer, got double" },

	/* unknown and missing keys, at each level */
	{ { TOP, "checksum", "0" }, "checksum: unknown key" },
	{ { POD, "mac", "\"02:00:00:00:00:01\"" }, "pods[1].mac: unknown key" },
	{ { COOL, "since", "1" }, "cooling[1].since: unknown key" },
	{ { POD, "a\\nb\\u00e9", "1" }, "pods[1].a?b??: unknown key" },
	{ { TOP, "0123456789012345678901234567890123456789x", "1" },
	  "0123456789012345678901234567890123456789...: unknown key" },
	{ { TOP, "instance_id", DROP }, "missing key \"instance_id\"" },
	{ { TOP, "written", DROP }, "missing key \"written\"" },
	{ { TOP, "pods", DROP }, "missing key \"pods\"" },
	{ { TOP, "cooling", DROP }, "missing key \"cooling\"" },
	{ { POD, "container_id", DROP }, "pods[1]: missing key "
	  "\"container_id\"" },
	{ { POD, "ifname", DROP }, "pods[1]: missing key \"ifname\"" },
	{ { POD, "namespace", DROP }, "pods[1]: missing key \"namespace\"" },
	{ { POD, "name", DROP }, "pods[1]: missing key \"name\"" },
	{ { POD, "uid", DROP }, "pods[1]: missing key \"uid\"" },
	{ { POD, "ip", DROP }, "pods[1]: missing key \"ip\"" },
	{ { POD, "eni", DROP }, "pods[1]: missing key \"eni\"" },
	{ { POD, "since", DROP }, "pods[1]: missing key \"since\"" },
	{ { COOL, "ip", DROP }, "cooling[1]: missing key \"ip\"" },
	{ { COOL, "eni", DROP }, "cooling[1]: missing key \"eni\"" },
	{ { COOL, "until", DROP }, "cooling[1]: missing key \"until\"" },

	/* wrong types */
	{ { TOP, "instance_id", "7" },
	  "instance_id: expected a string, got int" },
	{ { TOP, "written", "\"1700000000\"" },
	  "written: expected an integer, got string" },
	{ { TOP, "pods", "{}" }, "pods: expected an array, got object" },
	{ { TOP, "cooling", "null" }, "cooling: expected an array, got null" },
	{ { POD, "container_id", "[]" },
	  "pods[1].container_id: expected a string, got array" },
	{ { POD, "ifname", "true" },
	  "pods[1].ifname: expected a string, got boolean" },
	{ { POD, "namespace", "null" },
	  "pods[1].namespace: expected a string, got null" },
	{ { POD, "name", "1" }, "pods[1].name: expected a string, got int" },
	{ { POD, "uid", "{}" }, "pods[1].uid: expected a string, got object" },
	{ { POD, "ip", "167772421" }, "pods[1].ip: expected a string, got int" },
	{ { POD, "eni", "false" },
	  "pods[1].eni: expected a string, got boolean" },
	{ { POD, "since", "1.5" },
	  "pods[1].since: expected an integer, got double" },
	{ { COOL, "ip", "[10]" }, "cooling[1].ip: expected a string, got array" },
	{ { COOL, "eni", "1" }, "cooling[1].eni: expected a string, got int" },
	{ { COOL, "until", "\"soon\"" },
	  "cooling[1].until: expected an integer, got string" },

	/* addresses */
	{ { POD, "ip", "\"10.0.1\"" }, "pods[1].ip: " NOT_IP },
	{ { POD, "ip", "\"10.0.1.256\"" }, "pods[1].ip: " NOT_IP },
	{ { POD, "ip", "\"\"" }, "pods[1].ip: " NOT_IP },
	{ { POD, "ip", "\"10.0.1.5 \"" }, "pods[1].ip: " NOT_IP },
	{ { POD, "ip", "\"010.0.1.5\"" }, "pods[1].ip: " NOT_IP },
	{ { POD, "ip", "\"10.0.1.5/32\"" }, "pods[1].ip: " NOT_IP },
	{ { POD, "ip", "\"::1\"" }, "pods[1].ip: " NOT_IP },
	{ { POD, "ip", "\"10.0.1.5\\u0000\"" }, "pods[1].ip: " NOT_IP },
	{ { POD, "ip", "\"1111111111111111111111\"" }, "pods[1].ip: " NOT_IP },
	{ { POD, "ip", "\"0.0.0.0\"" },
	  "pods[1].ip: 0.0.0.0 is not a unicast host address" },
	{ { POD, "ip", "\"127.0.0.1\"" },
	  "pods[1].ip: 127.0.0.1 is not a unicast host address" },
	{ { POD, "ip", "\"224.0.0.1\"" },
	  "pods[1].ip: 224.0.0.1 is not a unicast host address" },
	{ { POD, "ip", "\"255.255.255.255\"" },
	  "pods[1].ip: 255.255.255.255 is not a unicast host address" },
	{ { COOL, "ip", "\"10.0.1\"" }, "cooling[1].ip: " NOT_IP },
	{ { COOL, "ip", "\"0.1.2.3\"" },
	  "cooling[1].ip: 0.1.2.3 is not a unicast host address" },

	/* the same address twice, and the same attachment twice */
	{ { POD, "ip", "\"10.0.1.4\"" },
	  "pods[1].ip: 10.0.1.4 is also held by pods[0]" },
	{ { COOL, "ip", "\"10.0.1.4\"" },
	  "cooling[1].ip: 10.0.1.4 is held by pods[0]" },
	{ { COOL, "ip", "\"10.0.1.5\"" },
	  "cooling[1].ip: 10.0.1.5 is held by pods[1]" },
	{ { COOL, "ip", "\"10.0.1.8\"" },
	  "cooling[1].ip: 10.0.1.8 is also at cooling[0]" },
	{ { POD, "ip", "\"10.0.1.8\"" },
	  "cooling[0].ip: 10.0.1.8 is held by pods[1]" },

	/* container ids */
	{ { POD, "container_id", "\"\"" }, "pods[1].container_id: " CID_RULE },
	{ { POD, "container_id", "\"-abc\"" },
	  "pods[1].container_id: " CID_RULE },
	{ { POD, "container_id", "\".abc\"" },
	  "pods[1].container_id: " CID_RULE },
	{ { POD, "container_id", "\"a/b\"" },
	  "pods[1].container_id: " CID_RULE },
	{ { POD, "container_id", "\"a b\"" },
	  "pods[1].container_id: " CID_RULE },
	{ { POD, "container_id", "\"a:b\"" },
	  "pods[1].container_id: " CID_RULE },
	{ { POD, "container_id", "\"caf\\u00e9\"" },
	  "pods[1].container_id: " CID_RULE },
	{ { POD, "container_id", "\"a\\u0000b\"" },
	  "pods[1].container_id: holds a NUL byte" },

	/* interface names */
	{ { POD, "ifname", "\"\"" }, "pods[1].ifname: " IF_RULE },
	{ { POD, "ifname", "\".\"" }, "pods[1].ifname: " IF_RULE },
	{ { POD, "ifname", "\"..\"" }, "pods[1].ifname: " IF_RULE },
	{ { POD, "ifname", "\"a/b\"" }, "pods[1].ifname: " IF_RULE },
	{ { POD, "ifname", "\"a:b\"" }, "pods[1].ifname: " IF_RULE },
	{ { POD, "ifname", "\"a b\"" }, "pods[1].ifname: " IF_RULE },
	{ { POD, "ifname", "\"a\\tb\"" }, "pods[1].ifname: " IF_RULE },
	{ { POD, "ifname", "\"a\\u007fb\"" }, "pods[1].ifname: " IF_RULE },
	{ { POD, "ifname", "\"\\u00e9\"" }, "pods[1].ifname: " IF_RULE },

	/* ENI and instance ids */
	{ { POD, "eni", "\"eni-\"" }, "pods[1].eni: " ENI_RULE },
	{ { POD, "eni", "\"eni-xyz\"" }, "pods[1].eni: " ENI_RULE },
	{ { POD, "eni", "\"eni-12g\"" }, "pods[1].eni: " ENI_RULE },
	{ { POD, "eni", "\"ENI-12\"" }, "pods[1].eni: " ENI_RULE },
	{ { POD, "eni", "\"eni-12 \"" }, "pods[1].eni: " ENI_RULE },
	{ { POD, "eni", "\"i-12\"" }, "pods[1].eni: " ENI_RULE },
	{ { COOL, "eni", "\"subnet-12\"" }, "cooling[1].eni: " ENI_RULE },
	{ { TOP, "instance_id", "\"i-\"" }, "instance_id: " I_RULE },
	{ { TOP, "instance_id", "\"i-xyz\"" }, "instance_id: " I_RULE },
	{ { TOP, "instance_id", "\"eni-12\"" }, "instance_id: " I_RULE },
	{ { TOP, "instance_id", "\"\"" }, "instance_id: " I_RULE },

	/* pod identity: printable ASCII only */
	{ { POD, "namespace", "\"a\\nb\"" },
	  "pods[1].namespace: holds a byte that is not printable ASCII" },
	{ { POD, "name", "\"caf\\u00e9\"" },
	  "pods[1].name: holds a byte that is not printable ASCII" },
	{ { POD, "uid", "\"\\u001b[31m\"" },
	  "pods[1].uid: holds a byte that is not printable ASCII" },

	/* times */
	{ { TOP, "written", "-1" }, "written: " TIME_RANGE },
	{ { TOP, "written", "253402300800" }, "written: " TIME_RANGE },
	{ { POD, "since", "-1" }, "pods[1].since: " TIME_RANGE },
	{ { POD, "since", "253402300800" }, "pods[1].since: " TIME_RANGE },
	{ { POD, "since", "99999999999999999999999" },
	  "pods[1].since: " TIME_RANGE },
	{ { POD, "since", "-99999999999999999999999" },
	  "pods[1].since: " TIME_RANGE },
	{ { COOL, "until", "-1" }, "cooling[1].until: " TIME_RANGE },
	{ { COOL, "until", "253402300800" }, "cooling[1].until: " TIME_RANGE },

	/* records that are not objects */
	{ { TOP, "pods", "[1]" }, "pods[0]: expected an object, got int" },
	{ { TOP, "cooling", "[[]]" },
	  "cooling[0]: expected an object, got array" },
};

static void
test_bad_fields_name_field_and_reason(void **state)
{
	const char *text, *err;
	size_t i;

	(void)state;
	for (i = 0; i < N(bad_cases); i++) {
		text = build(&bad_cases[i].sp);
		err = parse_err(text, strlen(text));
		if (bad_cases[i].expect == NULL && err != NULL)
			fail_msg("case %zu (%s): refused: %s\n%s", i,
			    bad_cases[i].sp.key, err, text);
		if (bad_cases[i].expect != NULL && err == NULL)
			fail_msg("case %zu (%s): accepted\n%s", i,
			    bad_cases[i].sp.key, text);
		if (err != NULL && strcmp(err, bad_cases[i].expect) != 0)
			fail_msg("case %zu: got \"%s\", expected \"%s\"", i,
			    err, bad_cases[i].expect);
	}
}

struct bad_text {
	const char	*text;
	const char	*expect;
};

static const struct bad_text bad_texts[] = {
	{ "", "invalid JSON: unexpected end of input (truncated?)" },
	{ "   \n", "invalid JSON: unexpected end of input (truncated?)" },
	{ "{\"version\": 1, \"instance_id\": \"i-1\", \"wri",
	  "invalid JSON: unexpected end of input (truncated?)" },
	{ "hello", "invalid JSON at offset 0: unexpected character" },
	{ "[]", "expected an object, got array" },
	{ "\"x\"", "expected an object, got string" },
	{ "{\"version\": 1,}", "invalid JSON at offset 14: unexpected character" },
	{ "{\"version\": 1 /* c */}", "invalid JSON at offset 14: object "
	  "value separator ',' expected" },
	{ "{\"version\": 01}", "invalid JSON at offset 14: number expected" },
	{ "{\"version\": 1, \"instance_id\": \"i-1\", \"written\": 1, "
	  "\"pods\": [], \"cooling\": []} x",
	  "trailing data after the JSON object at offset 78" },
	{ "{\"version\": 1, \"instance_id\": \"i-1\", \"written\": 1, "
	  "\"pods\": [], \"cooling\": []}{}",
	  "trailing data after the JSON object at offset 77" },
	{ "{\"version\": 1, \"instance_id\": \"i-1\", \"written\": 1, "
	  "\"pods\": [], \"cooling\": []}\n\t \r\n", NULL },
	{ "{\"version\": 1, \"instance_id\": \"i-1\xff\"}",
	  "invalid JSON at offset 34: invalid utf-8 string" },
	{ "{\"version\": 1, \"a\": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
	  "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
	  "invalid JSON at offset 51: nesting too deep" },
};

static void
test_bad_texts(void **state)
{
	const char *err;
	size_t i;

	(void)state;
	for (i = 0; i < N(bad_texts); i++) {
		err = parse_err(bad_texts[i].text, strlen(bad_texts[i].text));
		if (bad_texts[i].expect == NULL) {
			if (err != NULL)
				fail_msg("text %zu refused: %s", i, err);
			continue;
		}
		if (err == NULL)
			fail_msg("text %zu accepted", i);
		if (strcmp(err, bad_texts[i].expect) != 0)
			fail_msg("text %zu: got \"%s\", expected \"%s\"", i,
			    err, bad_texts[i].expect);
	}
}

/* A NUL anywhere, even after a complete object: json-c would stop there. */
static void
test_nul_bytes(void **state)
{
	const char *base = build(NULL);
	size_t len = strlen(base);
	char *text = malloc(len + 2), expect[64];

	(void)state;
	assert_non_null(text);
	memcpy(text, base, len + 1);
	assert_null(parse_err(text, len));
	snprintf(expect, sizeof(expect), "NUL byte at offset %zu", len);
	assert_string_equal(parse_err(text, len + 1), expect);
	text[10] = '\0';
	assert_string_equal(parse_err(text, len), "NUL byte at offset 10");
	free(text);
}

static void
test_size_cap(void **state)
{
	char *text = malloc((size_t)CKPT_MAX_BYTES + 1);

	(void)state;
	assert_non_null(text);
	memset(text, ' ', (size_t)CKPT_MAX_BYTES + 1);
	memcpy(text, "{}", 2);
	assert_string_equal(parse_err(text, (size_t)CKPT_MAX_BYTES + 1),
	    "larger than 8388608 bytes");
	/* at the cap: read, and refused for what it says */
	assert_string_equal(parse_err(text, CKPT_MAX_BYTES),
	    "missing key \"version\"");
	free(text);
}

/* Every string field at size-1 (taken) and size (refused). */
static void
test_string_caps(void **state)
{
	static const struct {
		enum where	 where;
		const char	*key;
		const char	*prefix;
		char		 fill;
		size_t		 size;
	} caps[] = {
		{ POD, "container_id", "", 'a', CKPT_CID_LEN },
		{ POD, "ifname", "", 'e', CKPT_IFNAME_LEN },
		{ POD, "namespace", "", 'n', CKPT_K8S_LEN },
		{ POD, "name", "", 'n', CKPT_K8S_LEN },
		{ POD, "uid", "", 'u', CKPT_UID_LEN },
		{ POD, "eni", "eni-", 'f', CKPT_ENI_LEN },
		{ COOL, "eni", "eni-", 'f', CKPT_ENI_LEN },
		{ TOP, "instance_id", "i-", 'f', CKPT_ENI_LEN },
	};
	char raw[512], expect[128];
	struct spoil sp;
	const char *err;
	size_t i, len, n;

	(void)state;
	for (i = 0; i < N(caps); i++) {
		for (len = caps[i].size - 1; len <= caps[i].size; len++) {
			n = strlen(caps[i].prefix);
			raw[0] = '"';
			memcpy(raw + 1, caps[i].prefix, n);
			memset(raw + 1 + n, caps[i].fill, len - n);
			memcpy(raw + 1 + len, "\"", 2);
			sp = (struct spoil){ caps[i].where, caps[i].key, raw };
			err = parse_err(build(&sp), strlen(build(&sp)));
			if (len == caps[i].size - 1) {
				if (err != NULL)
					fail_msg("%s at %zu bytes: %s",
					    caps[i].key, len, err);
				continue;
			}
			snprintf(expect, sizeof(expect), "%s%s: longer than "
			    "%zu bytes", caps[i].where == POD ? "pods[1]." :
			    caps[i].where == COOL ? "cooling[1]." : "",
			    caps[i].key, caps[i].size - 1);
			if (err == NULL)
				fail_msg("%s at %zu bytes: accepted",
				    caps[i].key, len);
			assert_string_equal(err, expect);
		}
	}
}

/* n pods (or cooling addresses), all valid and distinct. */
static char *
many(size_t npods, size_t ncooling)
{
	size_t cap = 256 + (npods + ncooling) * 256, i;
	char *text = malloc(cap), *p;

	assert_non_null(text);
	p = text + sprintf(text, "{\"version\": 1, \"instance_id\": \"i-1\", "
	    "\"written\": 1, \"pods\": [");
	for (i = 0; i < npods; i++)
		p += sprintf(p, "%s{\"container_id\": \"c%zu\", \"ifname\": "
		    "\"eth0\", \"namespace\": \"\", \"name\": \"\", \"uid\": "
		    "\"\", \"ip\": \"10.1.%zu.%zu\", \"eni\": \"eni-1\", "
		    "\"since\": 1}", i ? ", " : "", i, i / 256, i % 256);
	p += sprintf(p, "], \"cooling\": [");
	for (i = 0; i < ncooling; i++)
		p += sprintf(p, "%s{\"ip\": \"10.2.%zu.%zu\", \"eni\": "
		    "\"eni-1\", \"until\": 1}", i ? ", " : "", i / 256,
		    i % 256);
	sprintf(p, "]}");
	return text;
}

static void
test_count_caps(void **state)
{
	struct checkpoint c;
	char err[256];
	char *text;

	(void)state;
	text = many(CKPT_MAX_PODS, CKPT_MAX_COOLING);
	assert_int_equal(checkpoint_parse(text, strlen(text), &c, err,
	    sizeof(err)), 0);
	assert_int_equal(c.npods, CKPT_MAX_PODS);
	assert_int_equal(c.ncooling, CKPT_MAX_COOLING);
	/* the strings in one block, reserved before parsing */
	assert_int_equal(ckpt_arena_blocks(&c.arena), 1);
	round_trip(&c);
	checkpoint_free(&c);
	free(text);

	text = many(CKPT_MAX_PODS + 1, 0);
	assert_string_equal(parse_err(text, strlen(text)),
	    "pods: more than 4096 entries");
	free(text);
	text = many(0, CKPT_MAX_COOLING + 1);
	assert_string_equal(parse_err(text, strlen(text)),
	    "cooling: more than 4096 entries");
	free(text);
}

/* The byte a test string holds at i: from its seed, never NUL. */
static char
pattern(size_t seed, size_t i)
{
	return (char)('!' + (seed * 31 + i * 7) % 90);
}

/* Strings across many blocks, one larger than any block, all intact
 * after every later allocation (blocks never move); and checkpoint_own
 * gathers a checkpoint's strings into one block and frees the rest. */
static void
test_arena_many_blocks(void **state)
{
	enum { N = 5000 };
	struct ckpt_arena a = { NULL, 0, 0 };
	struct checkpoint c, d;
	static char *got[N + 1];
	static size_t len[N + 1];
	char buf[300 * 1024];
	size_t i, k, big = N / 2;

	(void)state;
	rng_state = 99;
	for (i = 0; i <= N; i++) {
		len[i] = i == big ? sizeof(buf) - 1 : rnd(CKPT_CID_LEN);
		for (k = 0; k < len[i]; k++)
			buf[k] = pattern(i, k);
		buf[len[i]] = '\0';
		got[i] = ckpt_arena_strdup(&a, buf);
		assert_non_null(got[i]);
	}
	print_message("arena: %d strings in %zu blocks\n", N + 1,
	    ckpt_arena_blocks(&a));
	assert_true(ckpt_arena_blocks(&a) > 10);
	for (i = 0; i <= N; i++) {
		assert_int_equal(strlen(got[i]), len[i]);
		for (k = 0; k < len[i]; k++)
			if (got[i][k] != pattern(i, k))
				fail_msg("string %zu byte %zu changed", i, k);
	}
	/* distinct, none overlapping the one before */
	for (i = 1; i <= N; i++)
		assert_true(got[i] >= got[i - 1] + len[i - 1] + 1 ||
		    got[i] + len[i] + 1 <= got[i - 1]);
	ckpt_arena_free(&a);
	assert_int_equal(ckpt_arena_blocks(&a), 0);
	ckpt_arena_free(&a);
	/* usable again after it is freed */
	assert_string_equal(ckpt_arena_strdup(&a, "again"), "again");
	ckpt_arena_free(&a);

	/* own: one block, the same content, old blocks gone (ASan would
	 * see a read of them) */
	random_checkpoint(&c);
	while (c.npods < 100) {
		checkpoint_free(&c);
		random_checkpoint(&c);
	}
	assert_true(ckpt_arena_blocks(&c.arena) > 1);
	assert_int_equal(checkpoint_copy(&c, &d), 0);
	assert_int_equal(checkpoint_own(&c), 0);
	assert_int_equal(ckpt_arena_blocks(&c.arena), 1);
	assert_true(checkpoint_equal(&c, &d));
	round_trip(&c);
	/* again: a checkpoint that owns its strings already */
	assert_int_equal(checkpoint_own(&c), 0);
	assert_int_equal(ckpt_arena_blocks(&c.arena), 1);
	assert_true(checkpoint_equal(&c, &d));
	checkpoint_free(&c);
	checkpoint_free(&d);

	/* nothing to own: no block */
	memset(&c, 0, sizeof(c));
	assert_int_equal(checkpoint_own(&c), 0);
	assert_int_equal(ckpt_arena_blocks(&c.arena), 0);
	assert_int_equal(checkpoint_copy(&c, &d), 0);
	assert_null(d.pods);
	checkpoint_free(&d);
}

/* The rules hold for structs too: format never writes what parse would
 * refuse. */
static void
test_check_structs(void **state)
{
	struct checkpoint c;
	struct ckpt_pod pods[2];
	struct ckpt_cooling cool[1];
	char err[256], longname[CKPT_K8S_LEN + 1];

	(void)state;
	memset(&c, 0, sizeof(c));
	memset(pods, 0, sizeof(pods));
	memset(cool, 0, sizeof(cool));
	snprintf(c.instance_id, sizeof(c.instance_id), "i-1");
	c.pods = pods;
	c.npods = 2;
	c.cooling = cool;
	c.ncooling = 1;
	/* strings the checkpoint borrows */
	pods[0].container_id = "c0";
	pods[1].container_id = "c1";
	for (int i = 0; i < 2; i++) {
		pods[i].ifname = "eth0";
		pods[i].k8s_namespace = pods[i].k8s_name = "";
		pods[i].k8s_uid = "";
		pods[i].eni_id = "eni-1";
		pods[i].ip = ip_addr_from_in(htonl(0x0a000001u + (uint32_t)i));
	}
	cool[0].eni_id = "eni-1";
	cool[0].ip = ip_addr_from_in(htonl(0x0a000009u));
	assert_null(check_err(&c));

	/* one byte past the limit, and at it */
	fill(longname, sizeof(longname), 'x');
	pods[1].k8s_name = longname;
	assert_string_equal(check_err(&c),
	    "pods[1].name: not terminated within 254 bytes");
	errno = 0;
	assert_null(checkpoint_format(&c, NULL));
	assert_int_equal(errno, EINVAL);
	longname[CKPT_K8S_LEN - 1] = '\0';
	assert_null(check_err(&c));
	pods[1].k8s_name = "";

	/* a string not given at all */
	pods[0].k8s_uid = NULL;
	assert_string_equal(check_err(&c), "pods[0].uid: not given");
	pods[0].k8s_uid = "";
	cool[0].eni_id = NULL;
	assert_string_equal(check_err(&c), "cooling[0].eni: not given");
	cool[0].eni_id = "eni-1";

	memset(c.instance_id, 'f', sizeof(c.instance_id));
	memcpy(c.instance_id, "i-", 2);
	assert_string_equal(check_err(&c),
	    "instance_id: not terminated within 64 bytes");
	snprintf(c.instance_id, sizeof(c.instance_id), "i-1");

	c.npods = CKPT_MAX_PODS + 1;
	assert_string_equal(check_err(&c), "pods: 4097 entries, more than the "
	    "4096 a checkpoint holds (ENID_MAX_RECORDED_PODS)");
	c.npods = 2;
	c.cooling = NULL;
	assert_string_equal(check_err(&c), "entries counted but not given");
	c.cooling = cool;
	cool[0].until = -5;
	assert_string_equal(check_err(&c), "cooling[0].until: " TIME_RANGE);
	cool[0].until = 0;
	pods[0].ip = ip_addr_from_in(0);
	assert_string_equal(check_err(&c),
	    "pods[0].ip: 0.0.0.0 is not a unicast host address");
	pods[0].ip = pods[1].ip;
	assert_string_equal(check_err(&c),
	    "pods[1].ip: 10.0.0.2 is also held by pods[0]");

	/* a short error buffer is still a terminated string */
	assert_int_equal(checkpoint_check(&c, err, 8), -1);
	assert_int_equal(strlen(err), 7);
	pods[0].ip = ip_addr_from_in(htonl(0x0a000001u));

	c.generation = -1;
	assert_string_equal(check_err(&c),
	    "generation: out of range 0..4611686018427387904");
	c.generation = CKPT_MAX_GENERATION + 1;
	assert_string_equal(check_err(&c),
	    "generation: out of range 0..4611686018427387904");
	c.generation = CKPT_MAX_GENERATION;
	assert_null(check_err(&c));
}

/* Version 2 carries its generation; version 1, without one, loads as
 * generation 0; what is written is version 2. */
static void
test_generation(void **state)
{
	static const struct {
		const char	*top;
		const char	*expect;	/* NULL: accepted */
		int64_t		 generation;
	} cases[] = {
		{ "\"version\": 1", NULL, 0 },
		{ "\"version\": 2, \"generation\": 0", NULL, 0 },
		{ "\"version\": 2, \"generation\": 17", NULL, 17 },
		{ "\"generation\": 4611686018427387904, \"version\": 2", NULL,
		  CKPT_MAX_GENERATION },
		{ "\"version\": 2, \"generation\": 4611686018427387905",
		  "generation: out of range 0..4611686018427387904", 0 },
		{ "\"version\": 2, \"generation\": -1",
		  "generation: out of range 0..4611686018427387904", 0 },
		{ "\"version\": 2, \"generation\": \"3\"",
		  "generation: expected an integer, got string", 0 },
		{ "\"version\": 2", "missing key \"generation\"", 0 },
		{ "\"version\": 1, \"generation\": 0",
		  "generation: unknown key", 0 },
	};
	struct checkpoint c;
	char text[512], err[512], *out;
	size_t i, len;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(text, sizeof(text), "{%s, \"instance_id\": \"i-1\", "
		    "\"written\": 5, \"pods\": [], \"cooling\": []}",
		    cases[i].top);
		if (cases[i].expect != NULL) {
			assert_int_equal(checkpoint_parse(text, strlen(text), &c,
			    err, sizeof(err)), -1);
			assert_string_equal(err, cases[i].expect);
			continue;
		}
		if (checkpoint_parse(text, strlen(text), &c, err,
		    sizeof(err)) != 0)
			fail_msg("%s: %s", text, err);
		assert_int_equal(c.generation, cases[i].generation);
		out = checkpoint_format(&c, &len);
		assert_non_null(out);
		snprintf(text, sizeof(text), "{\"version\": 3, \"generation\": "
		    "%lld, ", (long long)cases[i].generation);
		assert_memory_equal(out, text, strlen(text));
		free(out);
		checkpoint_free(&c);
	}
}

static void
test_helpers(void **state)
{
	char cid[CKPT_CID_LEN + 1];

	(void)state;
	memset(cid, 'a', CKPT_CID_LEN);
	cid[CKPT_CID_LEN - 1] = '\0';
	assert_true(ckpt_container_id_ok(cid));
	cid[CKPT_CID_LEN - 1] = 'a';
	cid[CKPT_CID_LEN] = '\0';
	assert_false(ckpt_container_id_ok(cid));
	assert_true(ckpt_container_id_ok("0"));
	assert_true(ckpt_container_id_ok("_x"));
	assert_true(ckpt_ifname_ok("eth0"));
	assert_true(ckpt_ifname_ok("123456789012345"));
	assert_false(ckpt_ifname_ok("1234567890123456"));
	assert_false(ckpt_ifname_ok("a\x80"));
	assert_true(ckpt_eni_id_ok("eni-0"));
	assert_false(ckpt_eni_id_ok("eni-0-1"));
	assert_true(ckpt_instance_id_ok("i-0123456789abcdef0"));
	assert_false(ckpt_instance_id_ok("i-0123456789abcdefg"));
	assert_true(ckpt_k8s_ok(""));
	assert_true(ckpt_k8s_ok("kube system~"));
	assert_false(ckpt_k8s_ok("a\x7f"));
	assert_false(ckpt_k8s_ok("\xc3\xa9"));
}

/* ---- the file ---- */

static char *
slurp(const struct dir *d, const char *name, size_t *len)
{
	static char buf[1 << 16];
	ssize_t n;
	int fd;

	fd = openat(d->fd, name, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	assert_true(n >= 0);
	close(fd);
	buf[n] = '\0';
	if (len != NULL)
		*len = (size_t)n;
	return buf;
}

static void
put_file(const struct dir *d, const char *name, const char *text)
{
	int fd;

	fd = openat(d->fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static const char *const TMPNAME = ".checkpoint.json.tmp";

static void
test_write_and_load(void **state)
{
	struct checkpoint c, back;
	struct dir d;
	struct stat st;
	char err[512], *text;
	size_t len;

	(void)state;
	dir_open(&d, "enid-ckpt");
	assert_int_equal(checkpoint_load(d.fd, CKPT_FILE, &back, err,
	    sizeof(err)), 1);

	rng_state = 7;
	random_checkpoint(&c);
	text = checkpoint_format(&c, &len);
	assert_non_null(text);
	if (checkpoint_write(d.fd, CKPT_FILE, text, len, err,
	    sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_false(exists(&d, TMPNAME));
	assert_int_equal(fstatat(d.fd, CKPT_FILE, &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_size, (off_t)len);
	assert_int_equal(checkpoint_load(d.fd, CKPT_FILE, &back, err,
	    sizeof(err)), 0);
	assert_true(checkpoint_equal(&c, &back));
	checkpoint_free(&back);
	free(text);
	checkpoint_free(&c);

	/* a second write replaces the first */
	assert_int_equal(checkpoint_write(d.fd, CKPT_FILE, "second", 6, err,
	    sizeof(err)), 0);
	assert_string_equal(slurp(&d, CKPT_FILE, NULL), "second");
	assert_false(exists(&d, TMPNAME));

	/* only plain names */
	assert_int_equal(checkpoint_write(d.fd, "a/b", "x", 1, err,
	    sizeof(err)), -1);
	assert_string_equal(err, "\"a/b\": not a file name");
	assert_int_equal(checkpoint_write(d.fd, "", "x", 1, err,
	    sizeof(err)), -1);
	dir_close(&d);
}

/* What a crash can leave where the temp file goes does not get in the way,
 * and a link there is replaced, never followed. */
static void
test_write_over_stale_temp(void **state)
{
	struct dir d;
	struct stat st;
	char err[512], target[300];

	(void)state;
	dir_open(&d, "enid-ckpt");
	put_file(&d, TMPNAME, "half a checkp");
	assert_int_equal(checkpoint_write(d.fd, CKPT_FILE, "one", 3, err,
	    sizeof(err)), 0);
	assert_string_equal(slurp(&d, CKPT_FILE, NULL), "one");
	assert_false(exists(&d, TMPNAME));

	put_file(&d, "victim", "untouched");
	snprintf(target, sizeof(target), "%s/victim", d.path);
	assert_int_equal(symlinkat(target, d.fd, TMPNAME), 0);
	assert_int_equal(checkpoint_write(d.fd, CKPT_FILE, "two", 3, err,
	    sizeof(err)), 0);
	assert_string_equal(slurp(&d, "victim", NULL), "untouched");
	assert_string_equal(slurp(&d, CKPT_FILE, NULL), "two");
	assert_int_equal(fstatat(d.fd, CKPT_FILE, &st, AT_SYMLINK_NOFOLLOW),
	    0);
	assert_true(S_ISREG(st.st_mode));
	assert_false(exists(&d, TMPNAME));
	dir_close(&d);
}

/* Failures at each step leave the old checkpoint and no temp file. */
static void
test_write_failures_keep_old(void **state)
{
	struct dir d;
	struct rlimit old, small;
	char err[512], big[8192];

	(void)state;
	dir_open(&d, "enid-ckpt");
	assert_int_equal(checkpoint_write(d.fd, CKPT_FILE, "old", 3, err,
	    sizeof(err)), 0);

	/* the temp name taken by a directory: creating fails */
	assert_int_equal(mkdirat(d.fd, TMPNAME, 0700), 0);
	assert_int_equal(checkpoint_write(d.fd, CKPT_FILE, "new", 3, err,
	    sizeof(err)), -1);
	assert_string_equal(err, "checkpoint.json: creating "
	    ".checkpoint.json.tmp: File exists");
	assert_string_equal(slurp(&d, CKPT_FILE, NULL), "old");
	assert_int_equal(unlinkat(d.fd, TMPNAME, AT_REMOVEDIR), 0);

	/* a disk that fills up mid-write (a file size limit gives the same
	 * short write, then EFBIG) */
	memset(big, 'x', sizeof(big));
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	small = old;
	small.rlim_cur = 4096;
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
	assert_int_equal(checkpoint_write(d.fd, CKPT_FILE, big, sizeof(big),
	    err, sizeof(err)), -1);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	assert_string_equal(err, "checkpoint.json: writing "
	    ".checkpoint.json.tmp: File too large; the old checkpoint is kept");
	assert_string_equal(slurp(&d, CKPT_FILE, NULL), "old");
	assert_false(exists(&d, TMPNAME));

	/* the rename fails: a directory where the checkpoint goes */
	assert_int_equal(mkdirat(d.fd, "other", 0700), 0);
	assert_int_equal(checkpoint_write(d.fd, "other", "new", 3, err,
	    sizeof(err)), -1);
	assert_string_equal(err, "other: renaming .other.tmp: Is a directory; "
	    "the old checkpoint is kept");
	assert_false(exists(&d, ".other.tmp"));

	/* a directory descriptor that cannot be written through */
	assert_int_equal(checkpoint_write(-1, CKPT_FILE, "new", 3, err,
	    sizeof(err)), -1);
	assert_string_equal(err, "checkpoint.json: removing a stale "
	    ".checkpoint.json.tmp: Bad file descriptor");
	assert_string_equal(slurp(&d, CKPT_FILE, NULL), "old");
	dir_close(&d);
}

/* The seconds of the clock ckpt_move_aside names files by.  Not time(3):
 * glibc's reads the kernel's coarse clock, which may still show the last
 * second for a few milliseconds after CLOCK_REALTIME has moved on. */
static time_t
realtime_s(void)
{
	struct timespec ts;

	assert_int_equal(clock_gettime(CLOCK_REALTIME, &ts), 0);
	return ts.tv_sec;
}

/* Load a bad file: -1, moved aside to CKPT_FILE.corrupt-<now>, and err
 * is "checkpoint.json: <cause>; moved aside to <that name>". */
static void
expect_moved_aside(struct dir *d, const char *cause)
{
	struct checkpoint c;
	char err[1024], expect[1024], aside[128];
	time_t t0, t1, t;
	bool found = false;

	t0 = realtime_s();
	assert_int_equal(checkpoint_load(d->fd, CKPT_FILE, &c, err,
	    sizeof(err)), -1);
	t1 = realtime_s();
	assert_int_equal(c.npods, 0);
	assert_null(c.pods);
	assert_false(exists(d, CKPT_FILE));
	for (t = t0; t <= t1 && !found; t++) {
		snprintf(aside, sizeof(aside), "%s.corrupt-%lld", CKPT_FILE,
		    (long long)t);
		found = exists(d, aside);
	}
	if (!found)
		fail_msg("not moved aside: %s", err);
	snprintf(expect, sizeof(expect), "%s: %s; moved aside to %s",
	    CKPT_FILE, cause, aside);
	assert_string_equal(err, expect);
	assert_int_equal(unlinkat(d->fd, aside, 0) == 0 ||
	    unlinkat(d->fd, aside, AT_REMOVEDIR) == 0, 1);
}

static void
test_load_bad_files(void **state)
{
	struct checkpoint c;
	struct dir d;
	struct stat st;
	char err[1024], target[300], *text, aside[128];
	size_t len;
	int fd;
	time_t now;

	(void)state;
	dir_open(&d, "enid-ckpt");

	/* truncated: half of a good one */
	text = many(3, 2);
	len = strlen(text);
	text[len / 2] = '\0';
	put_file(&d, CKPT_FILE, text);
	free(text);
	expect_moved_aside(&d, "invalid JSON: unexpected end of input "
	    "(truncated?)");

	put_file(&d, CKPT_FILE, "");
	expect_moved_aside(&d, "invalid JSON: unexpected end of input "
	    "(truncated?)");

	put_file(&d, CKPT_FILE, "\x7f" "ELF\x02\x01garbage");
	expect_moved_aside(&d, "invalid JSON at offset 0: unexpected "
	    "character");

	/* a valid JSON object that breaks a rule: the field is named */
	put_file(&d, CKPT_FILE, build(&(struct spoil){ POD, "ip",
	    "\"10.0.1.4\"" }));
	expect_moved_aside(&d, "pods[1].ip: 10.0.1.4 is also held by "
	    "pods[0]");

	/* a symbolic link, even to a good checkpoint: the link goes aside,
	 * what it points to stays */
	text = many(1, 1);
	put_file(&d, "elsewhere", text);
	free(text);
	snprintf(target, sizeof(target), "%s/elsewhere", d.path);
	assert_int_equal(symlinkat(target, d.fd, CKPT_FILE), 0);
	expect_moved_aside(&d, "a symbolic link, not followed");
	assert_true(exists(&d, "elsewhere"));

	assert_int_equal(mkdirat(d.fd, CKPT_FILE, 0700), 0);
	expect_moved_aside(&d, "a directory, not a regular file");

	/* a FIFO must not block the start */
	assert_int_equal(mkfifoat(d.fd, CKPT_FILE, 0600), 0);
	expect_moved_aside(&d, "not a regular file");

	fd = openat(d.fd, CKPT_FILE, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)CKPT_MAX_BYTES + 1), 0);
	close(fd);
	expect_moved_aside(&d, "8388609 bytes, larger than 8388608");

	/* at the limit it is read (and here refused for its content) */
	fd = openat(d.fd, CKPT_FILE, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)CKPT_MAX_BYTES), 0);
	close(fd);
	expect_moved_aside(&d, "NUL byte at offset 0");

	/* an earlier corrupt file of the same second is never replaced */
	now = realtime_s();
	for (time_t t = now - 1; t <= now + 3; t++) {
		snprintf(aside, sizeof(aside), "%s.corrupt-%lld", CKPT_FILE,
		    (long long)t);
		put_file(&d, aside, "earlier");
	}
	put_file(&d, CKPT_FILE, "{");
	assert_int_equal(checkpoint_load(d.fd, CKPT_FILE, &c, err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, ".2"));
	snprintf(aside, sizeof(aside), "%s", strstr(err, "moved aside to ") +
	    strlen("moved aside to "));
	assert_string_equal(slurp(&d, aside, NULL), "{");
	for (time_t t = now - 1; t <= now + 3; t++) {
		snprintf(aside, sizeof(aside), "%s.corrupt-%lld", CKPT_FILE,
		    (long long)t);
		assert_string_equal(slurp(&d, aside, NULL), "earlier");
	}

	/* good after all that */
	text = many(2, 2);
	put_file(&d, CKPT_FILE, text);
	free(text);
	assert_int_equal(checkpoint_load(d.fd, CKPT_FILE, &c, err,
	    sizeof(err)), 0);
	assert_int_equal(c.npods, 2);
	checkpoint_free(&c);
	assert_int_equal(fstatat(d.fd, CKPT_FILE, &st, 0), 0);
	dir_close(&d);
}

/* How many names d holds. */
static int
entries(const struct dir *d)
{
	struct dirent *e;
	DIR *dir;
	int n = 0;

	dir = opendir(d->path);
	assert_non_null(dir);
	while ((e = readdir(dir)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			n++;
	closedir(dir);
	return n;
}

/*
 * A newer format is no damage: parse says CKPT_NEWER (only for a version
 * above ours), and the load leaves the file where it is, byte for byte,
 * nothing moved aside.
 */
static void
test_newer_version_left_in_place(void **state)
{
	static const struct { const char *version; int rc; } cases[] = {
		{ "5", CKPT_NEWER }, { "6", CKPT_NEWER },
		{ "9223372036854775807", CKPT_NEWER },
		{ "0", -1 }, { "-3", -1 }, { "\"3\"", -1 }, { "3.0", -1 },
	};
	struct checkpoint c;
	struct dir d;
	char err[1024], *text, *back;
	const char *t;
	size_t i, len;

	(void)state;
	for (i = 0; i < N(cases); i++) {
		t = build(&(struct spoil){ TOP, "version", cases[i].version });
		if (checkpoint_parse(t, strlen(t), &c, err, sizeof(err)) !=
		    cases[i].rc)
			fail_msg("version %s: not %d: %s", cases[i].version,
			    cases[i].rc, err);
	}

	dir_open(&d, "enid-ckpt");
	text = strdup(build(&(struct spoil){ TOP, "version", "5" }));
	assert_non_null(text);
	put_file(&d, CKPT_FILE, text);
	assert_int_equal(checkpoint_load(d.fd, CKPT_FILE, &c, err,
	    sizeof(err)), CKPT_NEWER);
	assert_string_equal(err, "checkpoint.json: version: format version "
	    "5, newer than the 4 this enid reads (a newer enid wrote it); "
	    "left in place");
	assert_int_equal(c.npods, 0);
	back = slurp(&d, CKPT_FILE, &len);
	assert_int_equal(len, strlen(text));
	assert_memory_equal(back, text, len);
	assert_int_equal(entries(&d), 1);	/* nothing moved aside */
	free(text);
	dir_close(&d);
}

/* A checkpoint of one version and the pods given (JSON objects). */
static const char *
v_text(int version, const char *pods)
{
	static char text[4096];

	snprintf(text, sizeof(text), "{\"version\": %d, \"generation\": 3, "
	    "\"instance_id\": \"i-1\", \"written\": 1700000000, \"pods\": "
	    "[%s], \"cooling\": []}", version, pods);
	return text;
}

#define POD6(extra) "{\"container_id\": \"c1\", \"ifname\": \"eth0\", "	\
	"\"namespace\": \"ns\", \"name\": \"p\", \"uid\": \"u\", " extra	\
	"\"eni\": \"eni-1\", \"since\": 1700000000}"
#define POD6B(extra) "{\"container_id\": \"c2\", \"ifname\": \"eth0\", "	\
	"\"namespace\": \"ns\", \"name\": \"q\", \"uid\": \"v\", " extra	\
	"\"eni\": \"eni-1\", \"since\": 1700000000}"

/*
 * IPv6 pods (version 4): a dual-stack pod and an IPv6-only one read and
 * written back as they were, in version 4; an IPv6 address held twice,
 * one that is special or not in its one text, and IPv6 in an older
 * version are refused, naming the field.
 */
static void
test_ipv6_pods(void **state)
{
	static const struct { int version; const char *pods, *expect; }
	    bad[] = {
		{ 3, POD6("\"ip\": \"10.0.0.5\", \"ip6\": \"2001:db8::5\", "),
		  "pods[0]: \"ip6\" in a version 3 checkpoint (IPv6 came "
		  "with 4)" },
		{ 3, POD6(""), "pods[0]: missing key \"ip\"" },
		{ 4, POD6(""), "pods[0].ip: neither \"ip\" nor \"ip6\" given" },
		{ 4, POD6("\"ip6\": \"fe80::5\", "), "pods[0].ip6: fe80::5 is "
		  "not a global or unique local IPv6 unicast address" },
		{ 4, POD6("\"ip6\": \"ff02::1\", "), "pods[0].ip6: ff02::1 is "
		  "not a global or unique local IPv6 unicast address" },
		{ 4, POD6("\"ip6\": \"::ffff:10.0.0.5\", "),
		  "pods[0].ip6: not an IPv6 address in RFC 5952's one text "
		  "(IPv6 address with a dotted quad (write it in hex))" },
		{ 4, POD6("\"ip6\": \"10.0.0.5\", "),
		  "pods[0].ip6: not an IPv6 address" },
		{ 4, POD6("\"ip\": \"2001:db8::5\", "),
		  "pods[0].ip: not an IPv4 address" },
		{ 4, POD6("\"ip6\": \"2001:DB8::5\", "), "pods[0].ip6: not an IPv6 address in RFC 5952's one text (IPv6 "
		  "address not in RFC 5952 form (lower case, no leading zeros, "
		  "the longest run of zero groups as ::))" },
		{ 4, POD6("\"ip6\": \"2001:db8:0:0::5\", "), "pods[0].ip6: not an IPv6 address in RFC 5952's one text (IPv6 "
		  "address not in RFC 5952 form (lower case, no leading zeros, "
		  "the longest run of zero groups as ::))" },
		{ 4, POD6("\"ip6\": \"2001:db8::5\", ") ", "
		  POD6B("\"ip6\": \"2001:db8::5\", "),
		  "pods[1].ip6: 2001:db8::5 is also held by pods[0]" },
	};
	struct checkpoint c;
	char err[512], *out;
	const char *t;
	size_t i, len;
	int64_t v;

	(void)state;
	for (i = 0; i < N(bad); i++) {
		t = v_text(bad[i].version, bad[i].pods);
		if (checkpoint_parse(t, strlen(t), &c, err, sizeof(err)) == 0)
			fail_msg("case %zu: accepted:\n%s", i, t);
		if (strcmp(err, bad[i].expect) != 0)
			fail_msg("case %zu: got \"%s\", expected \"%s\"", i,
			    err, bad[i].expect);
	}

	/* Read, written, read back: the same, as version 4. */
	t = v_text(4, POD6("\"ip\": \"10.0.0.5\", \"ip6\": "
	    "\"2001:db8:0:1:0:1:0:5\", ") ", " POD6B("\"ip6\": "
	    "\"2001:db8::6\", "));
	if (checkpoint_parse(t, strlen(t), &c, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_true(c.ipv6);
	assert_int_equal(c.npods, 2);
	assert_int_equal(c.pods[0].ip.family, AF_INET);
	assert_int_equal(c.pods[0].ip6.family, AF_INET6);
	assert_int_equal(c.pods[1].ip.family, 0);
	out = checkpoint_format(&c, &len);
	assert_non_null(out);
	assert_int_equal(checkpoint_peek_version(out, len, &v), 0);
	assert_int_equal(v, 4);
	assert_non_null(strstr(out, "\"ip\": \"10.0.0.5\", \"ip6\": "
	    "\"2001:db8:0:1:0:1:0:5\""));
	assert_non_null(strstr(out, "\"uid\": \"v\", \"ip6\": "
	    "\"2001:db8::6\""));
	{
		struct checkpoint back;

		assert_int_equal(checkpoint_parse(out, len, &back, err,
		    sizeof(err)), 0);
		assert_true(checkpoint_equal(&c, &back));
		checkpoint_free(&back);
	}
	free(out);
	/* With no IPv6 left but the flag, still 4; without either, 3. */
	c.npods = 0;
	out = checkpoint_format(&c, &len);
	assert_int_equal(checkpoint_peek_version(out, len, &v), 0);
	assert_int_equal(v, 4);
	free(out);
	c.ipv6 = false;
	out = checkpoint_format(&c, &len);
	assert_int_equal(checkpoint_peek_version(out, len, &v), 0);
	assert_int_equal(v, 3);
	free(out);
	c.npods = 2;
	checkpoint_free(&c);
}

/* The version read by hand, as root reads it before the drop: only in
 * the shape enid writes, agreeing with the parser there. */
static void
test_peek_version(void **state)
{
	static const struct { const char *text; int rc; int64_t v; } cases[] = {
		{ "{\"version\": 2, \"generation\": 1", 0, 2 },
		{ "{\"version\":3}", 0, 3 },
		{ " \n{ \"version\" :\t17 ,", 0, 17 },
		{ "{\"version\": 999999999999999999,", 0, 999999999999999999 },
		{ "{\"version\": 9999999999999999999,", -1, 0 },
		{ "{\"version\": 3.5,", -1, 0 },
		{ "{\"version\": 3e2,", -1, 0 },
		{ "{\"version\": -3,", -1, 0 },
		{ "{\"version\": \"3\",", -1, 0 },
		{ "{\"version\": 3", -1, 0 },
		{ "{\"generation\": 1, \"version\": 3}", -1, 0 },
		{ "[\"version\", 3]", -1, 0 },
		{ "{\"versions\": 3}", -1, 0 },
		{ "", -1, 0 },
		{ "{", -1, 0 },
	};
	struct checkpoint c;
	char err[512], *text;
	int64_t v;
	size_t i, len;

	(void)state;
	for (i = 0; i < N(cases); i++) {
		v = -1;
		if (checkpoint_peek_version(cases[i].text,
		    strlen(cases[i].text), &v) != cases[i].rc)
			fail_msg("case %zu: not %d", i, cases[i].rc);
		if (cases[i].rc == 0 && v != cases[i].v)
			fail_msg("case %zu: %lld", i, (long long)v);
	}
	/* what enid writes, it reads back */
	text = many(2, 1);
	assert_int_equal(checkpoint_parse(text, strlen(text), &c, err,
	    sizeof(err)), 0);
	free(text);
	text = checkpoint_format(&c, &len);
	assert_non_null(text);
	assert_int_equal(checkpoint_peek_version(text, len, &v), 0);
	/* IPv4 pods only: the version an enid that knows no IPv6 reads */
	assert_int_equal(v, CKPT_VERSION_IPV4);
	free(text);
	c.ipv6 = true;
	text = checkpoint_format(&c, &len);
	assert_non_null(text);
	assert_int_equal(checkpoint_peek_version(text, len, &v), 0);
	assert_int_equal(v, CKPT_VERSION);
	free(text);
	checkpoint_free(&c);
}

/* A checkpoint this process may not read is no corrupt one: left in place
 * (-2).  As root, a child that has given up root tries. */
static void
test_load_unreadable_stays(void **state)
{
	struct checkpoint c;
	struct dir d;
	char err[512], *text;
	pid_t pid;
	int status, rc;

	(void)state;
	dir_open(&d, "enid-ckpt");
	text = many(1, 0);
	put_file(&d, CKPT_FILE, text);
	free(text);
	assert_int_equal(fchmodat(d.fd, CKPT_FILE, 0, 0), 0);
	assert_int_equal(fchmod(d.fd, 0755), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (geteuid() == 0 && (setgid(65534) == -1 ||
		    setuid(65534) == -1))
			_exit(10);
		rc = checkpoint_load(d.fd, CKPT_FILE, &c, err, sizeof(err));
		if (rc != -2)
			_exit(11);
		if (strcmp(err, "checkpoint.json: Permission denied; left in "
		    "place") != 0)
			_exit(12);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_true(exists(&d, CKPT_FILE));
	dir_close(&d);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_random),
		cmocka_unit_test(test_round_trip_empty_and_equal),
		cmocka_unit_test(test_largest_checkpoint),
		cmocka_unit_test(test_bad_fields_name_field_and_reason),
		cmocka_unit_test(test_bad_texts),
		cmocka_unit_test(test_nul_bytes),
		cmocka_unit_test(test_size_cap),
		cmocka_unit_test(test_string_caps),
		cmocka_unit_test(test_count_caps),
		cmocka_unit_test(test_arena_many_blocks),
		cmocka_unit_test(test_check_structs),
		cmocka_unit_test(test_generation),
		cmocka_unit_test(test_helpers),
		cmocka_unit_test(test_write_and_load),
		cmocka_unit_test(test_write_over_stale_temp),
		cmocka_unit_test(test_write_failures_keep_old),
		cmocka_unit_test(test_load_bad_files),
		cmocka_unit_test(test_load_unreadable_stays),
		cmocka_unit_test(test_newer_version_left_in_place),
		cmocka_unit_test(test_peek_version),
		cmocka_unit_test(test_ipv6_pods),
	};

	init_alphabets();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
