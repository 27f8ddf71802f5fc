/*
 * The broker's checkpoint (see checkpoint.h): the JSON text and its
 * rules, the differences between two checkpoints (a journal record's
 * payload), and the snapshot's file.
 *
 * Parsing has two layers.  The first maps JSON to the struct through small
 * field tables and refuses only what cannot be stored (wrong types, unknown
 * or missing keys, strings too long for their field, text that is no IPv4
 * address).  The second, checkpoint_check(), holds every rule about the
 * content; format runs it too, so the broker can never write a checkpoint
 * it would refuse to load.
 *
 * Strings live in arenas (checkpoint.h): parsing reserves one block sized
 * by a pass over the JSON first, and checkpoint_own copies a checkpoint's
 * strings into one block of exactly their size, so a checkpoint costs one
 * allocation for its strings and they never move.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "addr.h"
#include "checkpoint.h"

/* A parse that ran out of memory, as opposed to bad text: the loader then
 * leaves the file where it is. */
#define OUT_OF_MEMORY	-2

struct perr {
	char	*buf;
	size_t	 len;
};

static int
fail(struct perr *pe, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
fail(struct perr *pe, const char *path, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (pe->len == 0)
		return -1;
	n = snprintf(pe->buf, pe->len, "%s%s", path, *path ? ": " : "");
	if (n < 0 || (size_t)n >= pe->len)
		return -1;
	va_start(ap, fmt);
	vsnprintf(pe->buf + n, pe->len - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- arenas ---- */

struct ckpt_block {
	struct ckpt_block	*next;
	char			 data[];
};

/* Blocks grow from the first size, doubling up to the largest (or to the
 * size of a reservation or a string that needs more). */
#define ARENA_FIRST	1024
#define ARENA_LARGEST	(64 * 1024)

/* A new block of at least size bytes, now the one allocated from. */
static int
arena_block(struct ckpt_arena *a, size_t size)
{
	struct ckpt_block *b;

	if (size > SIZE_MAX - sizeof(*b) ||
	    (b = malloc(sizeof(*b) + size)) == NULL) {
		errno = ENOMEM;
		return -1;
	}
	b->next = a->blocks;
	a->blocks = b;
	a->size = size;
	a->used = 0;
	return 0;
}

static char *
arena_alloc(struct ckpt_arena *a, size_t n)
{
	size_t size;
	char *p;

	if (a->blocks == NULL || a->size - a->used < n) {
		size = a->blocks == NULL ? ARENA_FIRST : a->size * 2;
		if (size > ARENA_LARGEST)
			size = ARENA_LARGEST;
		if (size < n)
			size = n;
		if (arena_block(a, size) == -1)
			return NULL;
	}
	p = a->blocks->data + a->used;
	a->used += n;
	return p;
}

char *
ckpt_arena_strdup(struct ckpt_arena *a, const char *s)
{
	size_t n = strlen(s) + 1;
	char *p;

	if ((p = arena_alloc(a, n)) != NULL)
		memcpy(p, s, n);
	return p;
}

void
ckpt_arena_free(struct ckpt_arena *a)
{
	struct ckpt_block *b;

	while ((b = a->blocks) != NULL) {
		a->blocks = b->next;
		free(b);
	}
	a->used = a->size = 0;
}

size_t
ckpt_arena_blocks(const struct ckpt_arena *a)
{
	const struct ckpt_block *b;
	size_t n = 0;

	for (b = a->blocks; b != NULL; b = b->next)
		n++;
	return n;
}

const char *
checkpoint_strdup(struct checkpoint *c, const char *s)
{
	return ckpt_arena_strdup(&c->arena, s);
}

/* The strings of a pod and of a cooling address, for walking them. */
#define POD_NSTR	7

static const char **
pod_str(struct ckpt_pod *p, int i)
{
	switch (i) {
	case 0:
		return &p->container_id;
	case 1:
		return &p->ifname;
	case 2:
		return &p->k8s_namespace;
	case 3:
		return &p->k8s_name;
	case 4:
		return &p->k8s_uid;
	case 5:
		return &p->host_veth;
	default:
		return &p->eni_id;
	}
}

static size_t
str_size(const char *s)
{
	return s == NULL ? 0 : strlen(s) + 1;
}

/* *s moved into a, which has the room (NULL stays NULL). */
static void
str_move(struct ckpt_arena *a, const char **s)
{
	size_t n = str_size(*s);
	char *p;

	if (n == 0)
		return;
	p = a->blocks->data + a->used;
	memcpy(p, *s, n);
	a->used += n;
	*s = p;
}

int
checkpoint_own(struct checkpoint *c)
{
	struct ckpt_arena n = { NULL, 0, 0 };
	size_t total = 0, i;
	int k;

	for (i = 0; i < c->npods; i++)
		for (k = 0; k < POD_NSTR; k++)
			total += str_size(*pod_str(&c->pods[i], k));
	for (i = 0; i < c->ncooling; i++)
		total += str_size(c->cooling[i].eni_id);
	if (total > 0 && arena_block(&n, total) == -1)
		return -1;
	for (i = 0; i < c->npods; i++)
		for (k = 0; k < POD_NSTR; k++)
			str_move(&n, pod_str(&c->pods[i], k));
	for (i = 0; i < c->ncooling; i++)
		str_move(&n, &c->cooling[i].eni_id);
	/* every string is in n now: the old ones can go */
	ckpt_arena_free(&c->arena);
	c->arena = n;
	return 0;
}

int
checkpoint_copy(const struct checkpoint *src, struct checkpoint *dst)
{
	memset(dst, 0, sizeof(*dst));
	memcpy(dst->instance_id, src->instance_id, sizeof(dst->instance_id));
	dst->generation = src->generation;
	dst->written = src->written;
	dst->ipv6 = src->ipv6;
	if ((src->npods > 0 && (dst->pods = calloc(src->npods,
	    sizeof(*dst->pods))) == NULL) ||
	    (src->ncooling > 0 && (dst->cooling = calloc(src->ncooling,
	    sizeof(*dst->cooling))) == NULL))
		goto nomem;
	if (src->npods > 0)
		memcpy(dst->pods, src->pods, src->npods * sizeof(*dst->pods));
	if (src->ncooling > 0)
		memcpy(dst->cooling, src->cooling,
		    src->ncooling * sizeof(*dst->cooling));
	dst->npods = src->npods;
	dst->ncooling = src->ncooling;
	/* borrowing src's strings until here */
	if (checkpoint_own(dst) == -1)
		goto nomem;
	return 0;
nomem:
	checkpoint_free(dst);
	errno = ENOMEM;
	return -1;
}

/* ---- the *_ok helpers ---- */

static bool
is_alnum(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    (ch >= '0' && ch <= '9');
}

static bool
is_hex(char ch)
{
	return (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F') ||
	    (ch >= '0' && ch <= '9');
}

bool
ckpt_container_id_ok(const char *s)
{
	size_t i;

	if (s[0] == '\0' || s[0] == '.' || s[0] == '-')
		return false;
	for (i = 0; s[i] != '\0'; i++)
		if (i >= CKPT_CID_LEN - 1 ||
		    !(is_alnum(s[i]) || s[i] == '_' || s[i] == '.' ||
		    s[i] == '-'))
			return false;
	return true;
}

bool
ckpt_ifname_ok(const char *s)
{
	size_t i;

	if (s[0] == '\0' || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (i = 0; s[i] != '\0'; i++)
		if (i >= CKPT_IFNAME_LEN - 1 || s[i] <= ' ' || s[i] > '~' ||
		    s[i] == '/' || s[i] == ':')
			return false;
	return true;
}

static bool
hex_id_ok(const char *s, const char *prefix)
{
	size_t n = strlen(prefix), i;

	if (strncmp(s, prefix, n) != 0)
		return false;
	for (i = n; s[i] != '\0'; i++)
		if (i >= CKPT_ENI_LEN - 1 || !is_hex(s[i]))
			return false;
	return i > n;
}

bool
ckpt_eni_id_ok(const char *s)
{
	return hex_id_ok(s, "eni-");
}

bool
ckpt_instance_id_ok(const char *s)
{
	return hex_id_ok(s, "i-");
}

bool
ckpt_k8s_ok(const char *s)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if (i >= CKPT_K8S_LEN - 1 || s[i] < ' ' || s[i] > '~')
			return false;
	return true;
}

/* ---- the rules (checkpoint_check) ---- */

/* Pods get unicast host addresses: not 0/8, loopback, multicast or
 * class E (which holds the broadcast address); IPv4 alone, which is what
 * the format writes. */
bool
ckpt_ip_ok(const struct ip_addr *ip)
{
	return ip->family == AF_INET && ip_addr_valid(ip) &&
	    !ip_addr_is_reserved(ip) && !ip_addr_is_loopback(ip) &&
	    !ip_addr_is_multicast(ip);
}

bool
ckpt_ip6_ok(const struct ip_addr *ip)
{
	return ip->family == AF_INET6 && ip_addr_valid(ip) &&
	    !ip_addr_is_special(ip);
}

enum str_rule { R_CID, R_IFNAME, R_K8S, R_ENI, R_INSTANCE };

/* size: the string's limit and its NUL (CKPT_CID_LEN...). */
static int
check_str(const char *s, size_t size, enum str_rule rule, const char *path,
    struct perr *pe)
{
	if (s == NULL)
		return fail(pe, path, "not given");
	if (strnlen(s, size) == size)
		return fail(pe, path, "not terminated within %zu bytes", size);
	switch (rule) {
	case R_CID:
		if (!ckpt_container_id_ok(s))
			return fail(pe, path, "not a container id (1 to 256 of "
			    "[A-Za-z0-9_.-], not starting with '.' or '-')");
		break;
	case R_IFNAME:
		if (!ckpt_ifname_ok(s))
			return fail(pe, path, "not an interface name (1 to 15 "
			    "printable bytes, no '/', ':' or space, not \".\" "
			    "or \"..\")");
		break;
	case R_K8S:
		if (!ckpt_k8s_ok(s))
			return fail(pe, path, "holds a byte that is not "
			    "printable ASCII");
		break;
	case R_ENI:
		if (!ckpt_eni_id_ok(s))
			return fail(pe, path, "not an ENI id (\"eni-\" and hex "
			    "digits)");
		break;
	case R_INSTANCE:
		if (!ckpt_instance_id_ok(s))
			return fail(pe, path, "not an instance id (\"i-\" and "
			    "hex digits)");
		break;
	}
	return 0;
}

static int
check_time(int64_t t, const char *path, struct perr *pe)
{
	if (t < 0 || t > CKPT_MAX_TIME)
		return fail(pe, path, "out of range 0..%lld",
		    (long long)CKPT_MAX_TIME);
	return 0;
}

static int
check_ip(const struct ip_addr *ip, const char *path, struct perr *pe)
{
	char text[IP_ADDR_STR_LEN];

	if (!ckpt_ip_ok(ip)) {
		ip_addr_format(ip, text);
		return fail(pe, path, "%s is not a unicast host address", text);
	}
	return 0;
}

static int
check_ip6(const struct ip_addr *ip, const char *path, struct perr *pe)
{
	char text[IP_ADDR_STR_LEN];

	if (!ckpt_ip6_ok(ip)) {
		ip_addr_format(ip, text);
		return fail(pe, path, "%s is not a global or unique local "
		    "IPv6 unicast address", text);
	}
	return 0;
}

/*
 * One pod's fields.  Every checkpoint write checks every pod; naming the
 * fields ("pods[12].ifname") cost more than the checks themselves (the
 * hot-path profile), so a pod is checked silently first and its fields
 * are named only to say what is wrong with one that fails.  AT names
 * field f of record i of list, where the error is asked for (pe->len),
 * in the caller's path[].
 */
#define AT(f)	(pe->len == 0 ? (f) :					\
	    (snprintf(path, sizeof(path), "%s[%zu].%s", list, i, f), path))

static int
check_pod_fields(const struct ckpt_pod *p, const char *list, size_t i,
    struct perr *pe)
{
	char path[64];

	if (check_str(p->container_id, CKPT_CID_LEN, R_CID,
	    AT("container_id"), pe) == -1 ||
	    check_str(p->ifname, CKPT_IFNAME_LEN, R_IFNAME, AT("ifname"),
	    pe) == -1 ||
	    check_str(p->k8s_namespace, CKPT_K8S_LEN, R_K8S,
	    AT("namespace"), pe) == -1 ||
	    check_str(p->k8s_name, CKPT_K8S_LEN, R_K8S, AT("name"),
	    pe) == -1 ||
	    check_str(p->k8s_uid, CKPT_UID_LEN, R_K8S, AT("uid"),
	    pe) == -1 ||
	    (p->ip.family != 0 && check_ip(&p->ip, AT("ip"), pe) == -1) ||
	    (p->ip6.family != 0 && check_ip6(&p->ip6, AT("ip6"), pe) == -1) ||
	    check_str(p->eni_id, CKPT_ENI_LEN, R_ENI, AT("eni"),
	    pe) == -1 ||
	    check_time(p->since, AT("since"), pe) == -1)
		return -1;
	if (p->host_veth != NULL && !veth_name_ok(p->host_veth))
		return fail(pe, AT("host_veth"), "not a pod veth name (1 to %d "
		    "of a-z 0-9)", VETH_NAME_MAX);
	if (p->ip.family == 0 && p->ip6.family == 0)
		return fail(pe, AT("ip"), "neither \"ip\" nor \"ip6\" given");
	return 0;
}

static int
check_pod(const struct ckpt_pod *p, const char *list, size_t i,
    struct perr *pe)
{
	struct perr silent = { NULL, 0 };

	if (check_pod_fields(p, list, i, &silent) == 0)
		return 0;
	return check_pod_fields(p, list, i, pe);
}

static int
check_cooling_fields(const struct ckpt_cooling *k, const char *list,
    size_t i, struct perr *pe)
{
	char path[64];

	if (check_ip(&k->ip, AT("ip"), pe) == -1 ||
	    check_str(k->eni_id, CKPT_ENI_LEN, R_ENI, AT("eni"),
	    pe) == -1 ||
	    check_time(k->until, AT("until"), pe) == -1)
		return -1;
#undef AT
	return 0;
}

static int
check_cooling(const struct ckpt_cooling *k, const char *list, size_t i,
    struct perr *pe)
{
	struct perr silent = { NULL, 0 };

	if (check_cooling_fields(k, list, i, &silent) == 0)
		return 0;
	return check_cooling_fields(k, list, i, pe);
}

static int
cmp_pod_key(const void *a, const void *b)
{
	const struct ckpt_pod *p = *(const struct ckpt_pod *const *)a;
	const struct ckpt_pod *q = *(const struct ckpt_pod *const *)b;
	int d;

	if ((d = strcmp(p->container_id, q->container_id)) != 0 ||
	    (d = strcmp(p->ifname, q->ifname)) != 0)
		return d;
	/* same array: address order is index order */
	return (p > q) - (p < q);
}

/* An address and who holds it, for finding the same address twice. */
struct holder {
	const struct ip_addr *ip;
	int		cooling;	/* 0: pods[], 1: cooling[] */
	size_t		idx;
	const char	*field;		/* "ip" or "ip6" */
};

/* Where in the file: pods[] first, then cooling[]. */
static int
cmp_place(const struct holder *h, const struct holder *k)
{
	if (h->cooling != k->cooling)
		return h->cooling - k->cooling;
	return (h->idx > k->idx) - (h->idx < k->idx);
}

static int
cmp_holder(const void *a, const void *b)
{
	const struct holder *h = a, *k = b;

	int d = ip_addr_cmp(h->ip, k->ip);

	return d != 0 ? d : cmp_place(h, k);
}

/*
 * Sorting finds each duplicate as a neighbour.  Of all duplicates the one
 * reported is the one that comes latest in its pair and earliest in the
 * file, so the message does not depend on the sort.
 */
static int
check_unique(const struct checkpoint *c, struct perr *pe)
{
	const struct ckpt_pod **byname = NULL;
	struct holder *byip = NULL, *dup = NULL, *first = NULL;
	const struct ckpt_pod *dpod = NULL, *dfirst = NULL;
	size_t i, n = 2 * c->npods + c->ncooling, nip = 0;
	char text[IP_ADDR_STR_LEN];

	if (n == 0)
		return 0;
	if (c->npods > 0 &&
	    (byname = calloc(c->npods, sizeof(*byname))) == NULL)
		goto nomem;
	if ((byip = calloc(n, sizeof(*byip))) == NULL)
		goto nomem;

	for (i = 0; i < c->npods; i++)
		byname[i] = &c->pods[i];
	if (c->npods > 0)
		qsort(byname, c->npods, sizeof(*byname), cmp_pod_key);
	for (i = 1; i < c->npods; i++)
		if (strcmp(byname[i]->container_id,
		    byname[i - 1]->container_id) == 0 &&
		    strcmp(byname[i]->ifname, byname[i - 1]->ifname) == 0 &&
		    (dpod == NULL || byname[i] < dpod)) {
			dpod = byname[i];
			dfirst = byname[i - 1];
		}
	if (dpod != NULL) {
		fail(pe, "", "pods[%zu]: container %s interface %s is "
		    "already at pods[%zu]", (size_t)(dpod - c->pods),
		    dpod->container_id, dpod->ifname,
		    (size_t)(dfirst - c->pods));
		goto out;
	}

	/* A pod's two addresses, of two families, never meet. */
	for (i = 0; i < c->npods; i++) {
		if (c->pods[i].ip.family != 0)
			byip[nip++] = (struct holder){ &c->pods[i].ip, 0, i,
			    "ip" };
		if (c->pods[i].ip6.family != 0)
			byip[nip++] = (struct holder){ &c->pods[i].ip6, 0, i,
			    "ip6" };
	}
	for (i = 0; i < c->ncooling; i++)
		byip[nip++] = (struct holder){ &c->cooling[i].ip, 1, i, "ip" };
	qsort(byip, nip, sizeof(*byip), cmp_holder);
	for (i = 1; i < nip; i++)
		if (ip_addr_eq(byip[i].ip, byip[i - 1].ip) &&
		    (dup == NULL || cmp_place(&byip[i], dup) < 0)) {
			dup = &byip[i];
			first = &byip[i - 1];
		}
	if (dup != NULL) {
		ip_addr_format(dup->ip, text);
		if (!dup->cooling)
			fail(pe, "", "pods[%zu].%s: %s is also held by "
			    "pods[%zu]", dup->idx, dup->field, text,
			    first->idx);
		else if (!first->cooling)
			fail(pe, "", "cooling[%zu].ip: %s is held by "
			    "pods[%zu]", dup->idx, text, first->idx);
		else
			fail(pe, "", "cooling[%zu].ip: %s is also at "
			    "cooling[%zu]", dup->idx, text, first->idx);
		goto out;
	}
	free(byname);
	free(byip);
	return 0;

nomem:
	fail(pe, "", "out of memory");
	free(byname);
	free(byip);
	return OUT_OF_MEMORY;
out:
	free(byname);
	free(byip);
	return -1;
}

static int
check_all(const struct checkpoint *c, struct perr *pe)
{
	size_t i;

	if (check_str(c->instance_id, sizeof(c->instance_id), R_INSTANCE,
	    "instance_id", pe) == -1 ||
	    check_time(c->written, "written", pe) == -1)
		return -1;
	if (c->generation < 0 || c->generation > CKPT_MAX_GENERATION)
		return fail(pe, "generation", "out of range 0..%lld",
		    (long long)CKPT_MAX_GENERATION);
	if (c->npods > CKPT_MAX_PODS)
		return fail(pe, "pods", "%zu entries, more than the %d a "
		    "checkpoint holds (ENID_MAX_RECORDED_PODS)", c->npods,
		    CKPT_MAX_PODS);
	if (c->ncooling > CKPT_MAX_COOLING)
		return fail(pe, "cooling", "%zu entries, more than the %d a "
		    "checkpoint holds (ENID_MAX_RECORDED_COOLING)", c->ncooling,
		    CKPT_MAX_COOLING);
	if ((c->npods > 0 && c->pods == NULL) ||
	    (c->ncooling > 0 && c->cooling == NULL))
		return fail(pe, "", "entries counted but not given");
	for (i = 0; i < c->npods; i++)
		if (check_pod(&c->pods[i], "pods", i, pe) == -1)
			return -1;
	for (i = 0; i < c->ncooling; i++)
		if (check_cooling(&c->cooling[i], "cooling", i, pe) == -1)
			return -1;
	return check_unique(c, pe);
}

int
checkpoint_check(const struct checkpoint *c, char *err, size_t errlen)
{
	struct perr pe = { err, errlen };

	return check_all(c, &pe) == 0 ? 0 : -1;
}

/* ---- JSON to struct ---- */

enum ftype { F_STR, F_IP, F_IP6, F_TIME };

struct field {
	const char	*name;
	enum ftype	 type;
	size_t		 off;
	size_t		 size;	/* F_STR: its limit and the NUL */
	bool		 optional;	/* may be missing (then NULL) */
};

/* A string field: a const char * into the arena. */
#define POD_STR(n, f, size)	\
	{ n, F_STR, offsetof(struct ckpt_pod, f), size, false }
static const struct field pod_fields[] = {
	POD_STR("container_id", container_id, CKPT_CID_LEN),
	POD_STR("ifname", ifname, CKPT_IFNAME_LEN),
	POD_STR("namespace", k8s_namespace, CKPT_K8S_LEN),
	POD_STR("name", k8s_name, CKPT_K8S_LEN),
	POD_STR("uid", k8s_uid, CKPT_UID_LEN),
	/* At least one of the two (check_pod_fields); "ip6" and a missing
	 * "ip" only in version 4 (get_top). */
	{ "ip", F_IP, offsetof(struct ckpt_pod, ip), 0, true },
	{ "ip6", F_IP6, offsetof(struct ckpt_pod, ip6), 0, true },
	POD_STR("eni", eni_id, CKPT_ENI_LEN),
	{ "since", F_TIME, offsetof(struct ckpt_pod, since), 0, false },
	{ "host_veth", F_STR, offsetof(struct ckpt_pod, host_veth),
	  CKPT_IFNAME_LEN, true },
};

static const struct field cooling_fields[] = {
	{ "ip", F_IP, offsetof(struct ckpt_cooling, ip), 0, false },
	{ "eni", F_STR, offsetof(struct ckpt_cooling, eni_id), CKPT_ENI_LEN,
	  false },
	{ "until", F_TIME, offsetof(struct ckpt_cooling, until), 0, false },
};



#define NFIELDS(t)	(sizeof(t) / sizeof(t[0]))

/* An unknown key for an error message: cut short, and nothing in it that
 * is not printable ASCII (it goes to the log). */
static void
key_for_path(char *dst, size_t size, const char *prefix, const char *key)
{
	size_t n, i;

	n = (size_t)snprintf(dst, size, "%s%s", prefix, *prefix ? "." : "");
	for (i = 0; key[i] != '\0' && i < 40 && n + 1 < size; i++, n++)
		dst[n] = key[i] >= ' ' && key[i] <= '~' ? key[i] : '?';
	if (key[i] != '\0' && n + 3 < size) {
		memcpy(dst + n, "...", 3);
		n += 3;
	}
	dst[n] = '\0';
}

static const char *
type_name(struct json_object *o)
{
	return json_type_to_name(json_object_get_type(o));
}

/* A string of at most size - 1 bytes, in v; *s is json-c's. */
static int
get_str_in(struct json_object *v, size_t size, const char **s, size_t *len,
    const char *path, struct perr *pe)
{
	if (!json_object_is_type(v, json_type_string))
		return fail(pe, path, "expected a string, got %s",
		    type_name(v));
	*s = json_object_get_string(v);
	*len = (size_t)json_object_get_string_len(v);
	if (strlen(*s) != *len)
		return fail(pe, path, "holds a NUL byte");
	if (*len >= size)
		return fail(pe, path, "longer than %zu bytes", size - 1);
	return 0;
}

/* Into an array of size bytes. */
static int
get_str(struct json_object *v, char *dst, size_t size, const char *path,
    struct perr *pe)
{
	const char *s;
	size_t len;

	if (get_str_in(v, size, &s, &len, path, pe) == -1)
		return -1;
	memcpy(dst, s, len + 1);
	return 0;
}

/* Into the arena. */
static int
get_str_arena(struct json_object *v, struct ckpt_arena *a, const char **dst,
    size_t size, const char *path, struct perr *pe)
{
	const char *s;
	size_t len;
	char *p;

	if (get_str_in(v, size, &s, &len, path, pe) == -1)
		return -1;
	if ((p = arena_alloc(a, len + 1)) == NULL) {
		fail(pe, path, "out of memory");
		return OUT_OF_MEMORY;
	}
	memcpy(p, s, len + 1);
	*dst = p;
	return 0;
}

/*
 * What the string fields (tab's) of the records in the array named key in
 * root can take of an arena, at most: an arena reserved the sum for all
 * arrays before parsing needs no other block.
 */
static size_t
strings_bound(struct json_object *root, const char *key,
    const struct field *tab, size_t ntab)
{
	struct json_object *v, *o;
	size_t i, k, n, len, total = 0;

	if (!json_object_object_get_ex(root, key, &v) ||
	    !json_object_is_type(v, json_type_array))
		return 0;
	n = json_object_array_length(v);
	for (i = 0; i < n; i++) {
		o = json_object_array_get_idx(v, i);
		if (!json_object_is_type(o, json_type_object))
			continue;
		json_object_object_foreach(o, name, val) {
			for (k = 0; k < ntab; k++)
				if (tab[k].type == F_STR &&
				    strcmp(tab[k].name, name) == 0)
					break;
			if (k == ntab ||
			    !json_object_is_type(val, json_type_string))
				continue;
			/* longer than its field is refused, not stored */
			len = (size_t)json_object_get_string_len(val);
			total += (len < tab[k].size ? len : tab[k].size) + 1;
		}
	}
	return total;
}

static int
arena_reserve(struct ckpt_arena *a, size_t total, struct perr *pe)
{
	if (total > 0 && arena_block(a, total) == -1) {
		fail(pe, "", "out of memory");
		return OUT_OF_MEMORY;
	}
	return 0;
}

static int
get_int(struct json_object *v, int64_t *dst, const char *path,
    struct perr *pe)
{
	if (!json_object_is_type(v, json_type_int))
		return fail(pe, path, "expected an integer, got %s",
		    type_name(v));
	/* json-c saturates what int64 cannot hold: then out of range */
	*dst = json_object_get_int64(v);
	return 0;
}

static int
get_field(struct json_object *v, const struct field *f, void *base,
    struct ckpt_arena *a, const char *path, struct perr *pe)
{
	char *p = (char *)base + f->off;
	char text[IP_ADDR_STR_LEN];
	const char *why = NULL;
	int want;

	switch (f->type) {
	case F_STR:
		return get_str_arena(v, a, (const char **)(void *)p, f->size,
		    path, pe);
	case F_IP:
	case F_IP6:
		/* One text for each address, common/addr's (RFC 5952 for
		 * IPv6): the record is compared as text (journal.c). */
		want = f->type == F_IP ? AF_INET : AF_INET6;
		if (!json_object_is_type(v, json_type_string))
			return fail(pe, path, "expected a string, got %s",
			    type_name(v));
		if ((size_t)json_object_get_string_len(v) >= sizeof(text) ||
		    strlen(json_object_get_string(v)) !=
		    (size_t)json_object_get_string_len(v))
			return fail(pe, path, "not an %s address",
			    want == AF_INET ? "IPv4" : "IPv6");
		memcpy(text, json_object_get_string(v),
		    (size_t)json_object_get_string_len(v) + 1);
		if (ip_addr_parse(text, (struct ip_addr *)p, &why) == 0 &&
		    ((struct ip_addr *)p)->family == want)
			return 0;
		if (want == AF_INET6 && why != NULL &&
		    strchr(text, ':') != NULL)
			return fail(pe, path, "not an IPv6 address in RFC "
			    "5952's one text (%s)", why);
		return fail(pe, path, "not an %s address",
		    want == AF_INET ? "IPv4" : "IPv6");
	case F_TIME:
		return get_int(v, (int64_t *)(void *)p, path, pe);
	}
	return fail(pe, path, "internal: unknown field type");
}

/* One object whose keys are exactly the table's. */
static int
get_record(struct json_object *o, const struct field *tab, size_t n,
    void *base, struct ckpt_arena *a, const char *path, struct perr *pe)
{
	unsigned seen = 0;
	char kp[160];
	size_t i;
	int rc;

	if (!json_object_is_type(o, json_type_object))
		return fail(pe, path, "expected an object, got %s",
		    type_name(o));
	json_object_object_foreach(o, key, val) {
		for (i = 0; i < n; i++)
			if (strcmp(tab[i].name, key) == 0)
				break;
		if (i == n) {
			key_for_path(kp, sizeof(kp), path, key);
			return fail(pe, kp, "unknown key");
		}
		snprintf(kp, sizeof(kp), "%s.%s", path, key);
		if ((rc = get_field(val, &tab[i], base, a, kp, pe)) != 0)
			return rc;
		seen |= 1u << i;
	}
	for (i = 0; i < n; i++)
		if (!(seen & (1u << i)) && !tab[i].optional)
			return fail(pe, path, "missing key \"%s\"", tab[i].name);
	return 0;
}

static int
get_array(struct json_object *v, const char *name, size_t max,
    size_t elsize, void **out, size_t *count, const struct field *tab,
    size_t ntab, struct ckpt_arena *a, struct perr *pe)
{
	char path[64];
	size_t i, n;
	char *arr;
	int rc;

	if (!json_object_is_type(v, json_type_array))
		return fail(pe, name, "expected an array, got %s", type_name(v));
	n = json_object_array_length(v);
	if (n > max)
		return fail(pe, name, "more than %zu entries", max);
	if (n == 0)
		return 0;
	if ((arr = calloc(n, elsize)) == NULL) {
		fail(pe, name, "out of memory");
		return OUT_OF_MEMORY;
	}
	*out = arr;
	*count = n;
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s[%zu]", name, i);
		if ((rc = get_record(json_object_array_get_idx(v, i), tab,
		    ntab, arr + i * elsize, a, path, pe)) != 0)
			return rc;
	}
	return 0;
}

/*
 * The version first: a newer file's other keys would only confuse.  A
 * newer version is not damage: a newer enid wrote it (a downgrade), and
 * what it holds must not be lost, so it is told apart (CKPT_NEWER).
 */
static int
get_version(struct json_object *root, int64_t *version, struct perr *pe)
{
	struct json_object *v;

	if (!json_object_object_get_ex(root, "version", &v))
		return fail(pe, "", "missing key \"version\"");
	if (get_int(v, version, "version", pe) == -1)
		return -1;
	if (*version > CKPT_VERSION) {
		fail(pe, "version", "format version %lld, newer than the %d "
		    "this enid reads (a newer enid wrote it)",
		    (long long)*version, CKPT_VERSION);
		return CKPT_NEWER;
	}
	if (*version < 1)
		return fail(pe, "version", "unsupported version %lld (this "
		    "enid reads 1 to %d)", (long long)*version, CKPT_VERSION);
	return 0;
}

static int
get_top(struct json_object *root, struct checkpoint *c, struct perr *pe)
{
	/* "generation" last: version 1 has none (and is generation 0) */
	static const char *const keys[] = {
		"version", "instance_id", "written", "pods", "cooling",
		"generation",
	};
	size_t nkeys = NFIELDS(keys);
	int64_t version;
	unsigned seen = 0;
	char kp[64];
	size_t i;
	int rc;

	if (!json_object_is_type(root, json_type_object))
		return fail(pe, "", "expected an object, got %s",
		    type_name(root));
	if ((rc = get_version(root, &version, pe)) != 0)
		return rc;
	if (version == 1)
		nkeys--;
	if ((rc = arena_reserve(&c->arena,
	    strings_bound(root, "pods", pod_fields, NFIELDS(pod_fields)) +
	    strings_bound(root, "cooling", cooling_fields,
	    NFIELDS(cooling_fields)), pe)) != 0)
		return rc;
	json_object_object_foreach(root, key, val) {
		for (i = 0; i < nkeys; i++)
			if (strcmp(keys[i], key) == 0)
				break;
		switch (i < nkeys ? (int)i : -1) {
		case 0:
			rc = 0;
			break;
		case 1:
			rc = get_str(val, c->instance_id,
			    sizeof(c->instance_id), key, pe);
			break;
		case 2:
			rc = get_int(val, &c->written, key, pe);
			break;
		case 3:
			rc = get_array(val, key, CKPT_MAX_PODS,
			    sizeof(struct ckpt_pod), (void **)&c->pods,
			    &c->npods, pod_fields, NFIELDS(pod_fields),
			    &c->arena, pe);
			break;
		case 4:
			rc = get_array(val, key, CKPT_MAX_COOLING,
			    sizeof(struct ckpt_cooling), (void **)&c->cooling,
			    &c->ncooling, cooling_fields,
			    NFIELDS(cooling_fields), &c->arena, pe);
			break;
		case 5:
			rc = get_int(val, &c->generation, key, pe);
			break;
		default:
			key_for_path(kp, sizeof(kp), "", key);
			return fail(pe, kp, "unknown key");
		}
		if (rc != 0)
			return rc;
		seen |= 1u << i;
	}
	for (i = 0; i < nkeys; i++)
		if (!(seen & (1u << i)))
			return fail(pe, "", "missing key \"%s\"", keys[i]);
	/* Before 4, every pod has an IPv4 address and no other. */
	for (i = 0; i < c->npods && version < 4; i++) {
		snprintf(kp, sizeof(kp), "pods[%zu]", i);
		if (c->pods[i].ip6.family != 0)
			return fail(pe, kp, "\"ip6\" in a version %lld "
			    "checkpoint (IPv6 came with 4)", (long long)version);
		if (c->pods[i].ip.family == 0)
			return fail(pe, kp, "missing key \"ip\"");
	}
	c->ipv6 = version >= 4;
	return 0;
}

/* Text to a JSON object: one object and nothing after it but space. */
static int
parse_json(const char *text, size_t len, struct json_object **out,
    struct perr *pe)
{
	struct json_tokener *tok;
	struct json_object *root;
	enum json_tokener_error jerr;
	const char *nul;
	size_t end;

	*out = NULL;
	if (len > CKPT_MAX_BYTES)
		return fail(pe, "", "larger than %d bytes", CKPT_MAX_BYTES);
	/* json-c would take a NUL for the end of the text */
	if ((nul = memchr(text, '\0', len)) != NULL)
		return fail(pe, "", "NUL byte at offset %zu",
		    (size_t)(nul - text));
	if ((tok = json_tokener_new()) == NULL) {
		fail(pe, "", "out of memory");
		return OUT_OF_MEMORY;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
	    JSON_TOKENER_ALLOW_TRAILING_CHARS | JSON_TOKENER_VALIDATE_UTF8);
	root = json_tokener_parse_ex(tok, text, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (root == NULL || jerr != json_tokener_success) {
		json_object_put(root);
		if (jerr == json_tokener_continue || jerr == json_tokener_success)
			return fail(pe, "", "invalid JSON: unexpected end of "
			    "input (truncated?)");
		return fail(pe, "", "invalid JSON at offset %zu: %s", end,
		    json_tokener_error_desc(jerr));
	}
	/* text need not be terminated: no str* functions past here */
	while (end < len && (text[end] == ' ' || text[end] == '\t' ||
	    text[end] == '\r' || text[end] == '\n'))
		end++;
	if (end < len) {
		json_object_put(root);
		return fail(pe, "", "trailing data after the JSON object at "
		    "offset %zu", end);
	}
	*out = root;
	return 0;
}

static int
parse(const char *text, size_t len, struct checkpoint *c, struct perr *pe)
{
	struct json_object *root;
	int64_t first;
	int rc;

	memset(c, 0, sizeof(*c));
	if ((rc = parse_json(text, len, &root, pe)) != 0)
		return rc;
	rc = get_top(root, c, pe);
	json_object_put(root);
	if (rc == 0)
		rc = check_all(c, pe);
	/* The root's probe reads the first "version"; the parser keeps the
	 * last.  A file whose first says newer and whose last does not is
	 * damaged, not a newer enid's: it must not pass the load and then
	 * stop the next start. */
	if (rc == 0 && checkpoint_peek_version(text, len, &first) == 0 &&
	    first > CKPT_VERSION)
		rc = fail(pe, "version", "given twice, first as %lld (newer) "
		    "and then as one this enid reads", (long long)first);
	if (rc != 0)
		checkpoint_free(c);
	return rc;
}

static size_t
skip_blanks(const char *text, size_t len, size_t i)
{
	while (i < len && (text[i] == ' ' || text[i] == '\t' ||
	    text[i] == '\n' || text[i] == '\r'))
		i++;
	return i;
}

int
checkpoint_peek_version(const char *text, size_t len, int64_t *version)
{
	static const char key[] = "\"version\"";
	size_t i, ndigits = 0;
	int64_t v = 0;

	i = skip_blanks(text, len, 0);
	if (i >= len || text[i] != '{')
		return -1;
	i = skip_blanks(text, len, i + 1);
	if (len - i < sizeof(key) - 1 || memcmp(text + i, key,
	    sizeof(key) - 1) != 0)
		return -1;
	i = skip_blanks(text, len, i + sizeof(key) - 1);
	if (i >= len || text[i] != ':')
		return -1;
	i = skip_blanks(text, len, i + 1);
	while (i < len && text[i] >= '0' && text[i] <= '9') {
		if (++ndigits > 18)
			return -1;
		v = v * 10 + (text[i++] - '0');
	}
	if (ndigits == 0 || i >= len || (text[i] != ',' && text[i] != '}' &&
	    skip_blanks(text, len, i) == i))
		return -1;
	*version = v;
	return 0;
}

int
checkpoint_parse(const char *text, size_t len, struct checkpoint *c,
    char *err, size_t errlen)
{
	struct perr pe = { err, errlen };
	int rc;

	rc = parse(text, len, c, &pe);
	return rc == 0 || rc == CKPT_NEWER ? rc : -1;
}

void
checkpoint_free(struct checkpoint *c)
{
	free(c->pods);
	free(c->cooling);
	ckpt_arena_free(&c->arena);
	memset(c, 0, sizeof(*c));
}

static bool
veth_same(const struct ckpt_pod *p, const struct ckpt_pod *q)
{
	if (p->host_veth == NULL || q->host_veth == NULL)
		return p->host_veth == q->host_veth;
	return strcmp(p->host_veth, q->host_veth) == 0;
}

bool
checkpoint_equal(const struct checkpoint *a, const struct checkpoint *b)
{
	size_t i;

	if (strcmp(a->instance_id, b->instance_id) != 0 ||
	    a->generation != b->generation ||
	    checkpoint_version(a) != checkpoint_version(b) ||
	    a->written != b->written || a->npods != b->npods ||
	    a->ncooling != b->ncooling)
		return false;
	for (i = 0; i < a->npods; i++) {
		const struct ckpt_pod *p = &a->pods[i], *q = &b->pods[i];

		if (strcmp(p->container_id, q->container_id) != 0 ||
		    strcmp(p->ifname, q->ifname) != 0 ||
		    strcmp(p->k8s_namespace, q->k8s_namespace) != 0 ||
		    strcmp(p->k8s_name, q->k8s_name) != 0 ||
		    strcmp(p->k8s_uid, q->k8s_uid) != 0 ||
		    !ip_addr_eq(&p->ip, &q->ip) ||
		    !ip_addr_eq(&p->ip6, &q->ip6) ||
		    strcmp(p->eni_id, q->eni_id) != 0 ||
		    p->since != q->since || !veth_same(p, q))
			return false;
	}
	for (i = 0; i < a->ncooling; i++) {
		const struct ckpt_cooling *k = &a->cooling[i];
		const struct ckpt_cooling *l = &b->cooling[i];

		if (!ip_addr_eq(&k->ip, &l->ip) ||
		    strcmp(k->eni_id, l->eni_id) != 0 ||
		    k->until != l->until)
			return false;
	}
	return true;
}

/* ---- struct to JSON ---- */

struct out {
	char	*buf;
	size_t	 len, cap;
	bool	 failed;
};

static void
put(struct out *o, const char *s, size_t n)
{
	size_t need = o->len + n + 1, cap;
	char *nb;

	if (o->failed)
		return;
	if (need > o->cap) {
		/* the caps keep any valid checkpoint below the limit */
		if (need > (size_t)CKPT_MAX_BYTES + 1) {
			o->failed = true;
			errno = EFBIG;
			return;
		}
		cap = o->cap * 2;
		if (cap > (size_t)CKPT_MAX_BYTES + 1)
			cap = (size_t)CKPT_MAX_BYTES + 1;
		if (cap < need)
			cap = need;
		if ((nb = realloc(o->buf, cap)) == NULL) {
			o->failed = true;
			errno = ENOMEM;
			return;
		}
		o->buf = nb;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	o->buf[o->len] = '\0';
}

static void
put_s(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

/* "key": "value".  Checked strings are printable ASCII, so '"' and '\'
 * are the only bytes JSON needs escaped. */
static void
put_str(struct out *o, const char *key, const char *s)
{
	size_t n;

	put_s(o, "\"");
	put_s(o, key);
	put_s(o, "\": \"");
	while (*s != '\0') {
		n = strcspn(s, "\"\\");
		put(o, s, n);
		s += n;
		if (*s != '\0') {
			put(o, "\\", 1);
			put(o, s, 1);
			s++;
		}
	}
	put_s(o, "\"");
}

static void
put_int(struct out *o, const char *key, int64_t v)
{
	char num[64];

	snprintf(num, sizeof(num), "\"%s\": %lld", key, (long long)v);
	put_s(o, num);
}

static void
put_ip(struct out *o, const char *key, const struct ip_addr *ip)
{
	char text[IP_ADDR_STR_LEN];

	ip_addr_format(ip, text);
	put_str(o, key, text);
}

/* Key order as in the tables above. */
static void
put_pod(struct out *o, const struct ckpt_pod *p)
{
	put_s(o, "{");
	put_str(o, "container_id", p->container_id);
	put_s(o, ", ");
	put_str(o, "ifname", p->ifname);
	put_s(o, ", ");
	put_str(o, "namespace", p->k8s_namespace);
	put_s(o, ", ");
	put_str(o, "name", p->k8s_name);
	put_s(o, ", ");
	put_str(o, "uid", p->k8s_uid);
	put_s(o, ", ");
	if (p->ip.family != 0) {
		put_ip(o, "ip", &p->ip);
		put_s(o, ", ");
	}
	if (p->ip6.family != 0) {
		put_ip(o, "ip6", &p->ip6);
		put_s(o, ", ");
	}
	put_str(o, "eni", p->eni_id);
	put_s(o, ", ");
	put_int(o, "since", p->since);
	if (p->host_veth != NULL) {
		put_s(o, ", ");
		put_str(o, "host_veth", p->host_veth);
	}
	put_s(o, "}");
}

static void
put_cooling(struct out *o, const struct ckpt_cooling *k)
{
	put_s(o, "{");
	put_ip(o, "ip", &k->ip);
	put_s(o, ", ");
	put_str(o, "eni", k->eni_id);
	put_s(o, ", ");
	put_int(o, "until", k->until);
	put_s(o, "}");
}

int
checkpoint_version(const struct checkpoint *c)
{
	size_t i;

	if (c->ipv6)
		return CKPT_VERSION;
	for (i = 0; i < c->npods; i++)
		if (c->pods[i].ip6.family != 0 || c->pods[i].ip.family == 0)
			return CKPT_VERSION;
	return CKPT_VERSION_IPV4;
}

/*
 * One pod or cooling address a line, so an operator can read and diff it.
 */
char *
checkpoint_format(const struct checkpoint *c, size_t *len)
{
	struct perr pe = { NULL, 0 };
	struct out o = { NULL, 0, 0, false };
	size_t i;
	int rc;

	if ((rc = check_all(c, &pe)) != 0) {
		errno = rc == OUT_OF_MEMORY ? ENOMEM : EINVAL;
		return NULL;
	}
	o.cap = 4096 + c->npods * 512 + c->ncooling * 128;
	if ((o.buf = malloc(o.cap)) == NULL)
		return NULL;
	put_s(&o, "{");
	put_int(&o, "version", checkpoint_version(c));
	put_s(&o, ", ");
	put_int(&o, "generation", c->generation);
	put_s(&o, ", ");
	put_str(&o, "instance_id", c->instance_id);
	put_s(&o, ", ");
	put_int(&o, "written", c->written);
	put_s(&o, ",\n\"pods\": [");
	for (i = 0; i < c->npods; i++) {
		put_s(&o, i == 0 ? "\n" : ",\n");
		put_pod(&o, &c->pods[i]);
	}
	put_s(&o, c->npods > 0 ? "\n],\n\"cooling\": [" : "],\n\"cooling\": [");
	for (i = 0; i < c->ncooling; i++) {
		put_s(&o, i == 0 ? "\n" : ",\n");
		put_cooling(&o, &c->cooling[i]);
	}
	put_s(&o, c->ncooling > 0 ? "\n]}\n" : "]}\n");
	if (o.failed || o.len > CKPT_MAX_BYTES) {
		rc = o.failed ? errno : EFBIG;
		free(o.buf);
		errno = rc;
		return NULL;
	}
	if (len != NULL)
		*len = o.len;
	return o.buf;
}

/* ---- differences: a journal record's payload ---- */

static int
cmp_pod(const void *a, const void *b)
{
	const struct ckpt_pod *p = a, *q = b;
	int d;

	if ((d = strcmp(p->container_id, q->container_id)) != 0)
		return d;
	return strcmp(p->ifname, q->ifname);
}

static int
cmp_cooling(const void *a, const void *b)
{
	return ip_addr_cmp(&((const struct ckpt_cooling *)a)->ip,
	    &((const struct ckpt_cooling *)b)->ip);
}

void
checkpoint_sort(struct checkpoint *c)
{
	if (c->npods > 1)
		qsort(c->pods, c->npods, sizeof(*c->pods), cmp_pod);
	if (c->ncooling > 1)
		qsort(c->cooling, c->ncooling, sizeof(*c->cooling),
		    cmp_cooling);
}

static bool
pod_same(const struct ckpt_pod *p, const struct ckpt_pod *q)
{
	return strcmp(p->k8s_namespace, q->k8s_namespace) == 0 &&
	    strcmp(p->k8s_name, q->k8s_name) == 0 &&
	    strcmp(p->k8s_uid, q->k8s_uid) == 0 &&
	    ip_addr_eq(&p->ip, &q->ip) && ip_addr_eq(&p->ip6, &q->ip6) &&
	    strcmp(p->eni_id, q->eni_id) == 0 && p->since == q->since &&
	    veth_same(p, q);
}

static bool
cooling_same(const struct ckpt_cooling *k, const struct ckpt_cooling *l)
{
	return strcmp(k->eni_id, l->eni_id) == 0 && k->until == l->until;
}

static void
diff_del_pod(struct ckpt_diff *d, const struct ckpt_pod *p, bool fill)
{
	if (fill) {
		d->pods_del[d->npods_del].container_id = p->container_id;
		d->pods_del[d->npods_del].ifname = p->ifname;
	}
	d->npods_del++;
}

static void
diff_add_pod(struct ckpt_diff *d, const struct ckpt_pod *p, bool fill)
{
	if (fill)
		d->pods_add[d->npods_add] = *p;
	d->npods_add++;
}

static void
diff_del_cooling(struct ckpt_diff *d, const struct ckpt_cooling *k,
    bool fill)
{
	if (fill)
		d->cool_del[d->ncool_del].ip = k->ip;
	d->ncool_del++;
}

static void
diff_add_cooling(struct ckpt_diff *d, const struct ckpt_cooling *k,
    bool fill)
{
	if (fill)
		d->cool_add[d->ncool_add] = *k;
	d->ncool_add++;
}

/* A merge of the two sorted lists; counting only unless fill (then the
 * arrays are sized by a counting pass). */
static void
diff_walk(const struct checkpoint *from, const struct checkpoint *to,
    struct ckpt_diff *d, bool fill)
{
	size_t i = 0, j = 0;
	int c;

	d->npods_del = d->npods_add = d->ncool_del = d->ncool_add = 0;
	while (i < from->npods || j < to->npods) {
		if (i == from->npods)
			c = 1;
		else if (j == to->npods)
			c = -1;
		else
			c = cmp_pod(&from->pods[i], &to->pods[j]);
		if (c < 0)
			diff_del_pod(d, &from->pods[i++], fill);
		else if (c > 0)
			diff_add_pod(d, &to->pods[j++], fill);
		else {
			if (!pod_same(&from->pods[i], &to->pods[j])) {
				diff_del_pod(d, &from->pods[i], fill);
				diff_add_pod(d, &to->pods[j], fill);
			}
			i++;
			j++;
		}
	}
	i = j = 0;
	while (i < from->ncooling || j < to->ncooling) {
		if (i == from->ncooling)
			c = 1;
		else if (j == to->ncooling)
			c = -1;
		else
			c = cmp_cooling(&from->cooling[i], &to->cooling[j]);
		if (c < 0)
			diff_del_cooling(d, &from->cooling[i++], fill);
		else if (c > 0)
			diff_add_cooling(d, &to->cooling[j++], fill);
		else {
			if (!cooling_same(&from->cooling[i], &to->cooling[j])) {
				diff_del_cooling(d, &from->cooling[i], fill);
				diff_add_cooling(d, &to->cooling[j], fill);
			}
			i++;
			j++;
		}
	}
}

int
ckpt_diff_make(const struct checkpoint *from, const struct checkpoint *to,
    struct ckpt_diff *d)
{
	struct ckpt_diff n;

	memset(d, 0, sizeof(*d));
	diff_walk(from, to, &n, false);
	if ((n.npods_del > 0 && (d->pods_del = calloc(n.npods_del,
	    sizeof(*d->pods_del))) == NULL) ||
	    (n.npods_add > 0 && (d->pods_add = calloc(n.npods_add,
	    sizeof(*d->pods_add))) == NULL) ||
	    (n.ncool_del > 0 && (d->cool_del = calloc(n.ncool_del,
	    sizeof(*d->cool_del))) == NULL) ||
	    (n.ncool_add > 0 && (d->cool_add = calloc(n.ncool_add,
	    sizeof(*d->cool_add))) == NULL)) {
		ckpt_diff_free(d);
		errno = ENOMEM;
		return -1;
	}
	diff_walk(from, to, d, true);
	d->written = to->written;
	return 0;
}

bool
ckpt_diff_empty(const struct ckpt_diff *d)
{
	return d->npods_del == 0 && d->npods_add == 0 &&
	    d->ncool_del == 0 && d->ncool_add == 0;
}

void
ckpt_diff_free(struct ckpt_diff *d)
{
	free(d->pods_del);
	free(d->pods_add);
	free(d->cool_del);
	free(d->cool_add);
	ckpt_arena_free(&d->arena);
	memset(d, 0, sizeof(*d));
}

void
ckpt_cooling_settle(const struct checkpoint *prev, struct checkpoint *next)
{
	size_t i = 0, j = 0;
	int c;

	while (i < prev->ncooling && j < next->ncooling) {
		const struct ckpt_cooling *k = &prev->cooling[i];
		struct ckpt_cooling *l = &next->cooling[j];

		if ((c = cmp_cooling(k, l)) < 0)
			i++;
		else if (c > 0)
			j++;
		else {
			if (strcmp(k->eni_id, l->eni_id) == 0 &&
			    k->until - l->until <= 1 &&
			    l->until - k->until <= 1)
				l->until = k->until;
			i++;
			j++;
		}
	}
}

/* The rules for a difference's own fields; what it does to a checkpoint
 * is checked by applying it. */
static int
check_diff(const struct ckpt_diff *d, struct perr *pe)
{
	char path[64];
	size_t i;

	if (check_time(d->written, "written", pe) == -1)
		return -1;
	if (d->npods_del > CKPT_MAX_PODS)
		return fail(pe, "pods_removed", "more than %d entries",
		    CKPT_MAX_PODS);
	if (d->npods_add > CKPT_MAX_PODS)
		return fail(pe, "pods_added", "more than %d entries",
		    CKPT_MAX_PODS);
	if (d->ncool_del > CKPT_MAX_COOLING)
		return fail(pe, "cooling_removed", "more than %d entries",
		    CKPT_MAX_COOLING);
	if (d->ncool_add > CKPT_MAX_COOLING)
		return fail(pe, "cooling_added", "more than %d entries",
		    CKPT_MAX_COOLING);
	if ((d->npods_del > 0 && d->pods_del == NULL) ||
	    (d->npods_add > 0 && d->pods_add == NULL) ||
	    (d->ncool_del > 0 && d->cool_del == NULL) ||
	    (d->ncool_add > 0 && d->cool_add == NULL))
		return fail(pe, "", "entries counted but not given");
	for (i = 0; i < d->npods_del; i++) {
		const struct ckpt_pod_key *k = &d->pods_del[i];

		snprintf(path, sizeof(path), "pods_removed[%zu].container_id",
		    i);
		if (check_str(k->container_id, CKPT_CID_LEN, R_CID, path,
		    pe) == -1)
			return -1;
		snprintf(path, sizeof(path), "pods_removed[%zu].ifname", i);
		if (check_str(k->ifname, CKPT_IFNAME_LEN, R_IFNAME, path,
		    pe) == -1)
			return -1;
	}
	for (i = 0; i < d->npods_add; i++)
		if (check_pod(&d->pods_add[i], "pods_added", i, pe) == -1)
			return -1;
	for (i = 0; i < d->ncool_del; i++) {
		snprintf(path, sizeof(path), "cooling_removed[%zu].ip", i);
		if (check_ip(&d->cool_del[i].ip, path, pe) == -1)
			return -1;
	}
	for (i = 0; i < d->ncool_add; i++)
		if (check_cooling(&d->cool_add[i], "cooling_added", i,
		    pe) == -1)
			return -1;
	return 0;
}

char *
ckpt_diff_format(const struct ckpt_diff *d, size_t headroom, size_t *len)
{
	struct out o = { NULL, 0, 0, false };
	size_t i;
	int rc;

	if (check_diff(d, &(struct perr){ NULL, 0 }) != 0) {
		errno = EINVAL;
		return NULL;
	}
	o.cap = headroom + 256 + d->npods_del * 300 + d->npods_add * 900 +
	    d->ncool_del * 32 + d->ncool_add * 128;
	if ((o.buf = malloc(o.cap)) == NULL)
		return NULL;
	/* the caller's header goes there */
	memset(o.buf, 0, headroom);
	o.len = headroom;
	put_s(&o, "{");
	put_int(&o, "written", d->written);
	put_s(&o, ", \"pods_removed\": [");
	for (i = 0; i < d->npods_del; i++) {
		put_s(&o, i == 0 ? "{" : ", {");
		put_str(&o, "container_id", d->pods_del[i].container_id);
		put_s(&o, ", ");
		put_str(&o, "ifname", d->pods_del[i].ifname);
		put_s(&o, "}");
	}
	put_s(&o, "], \"pods_added\": [");
	for (i = 0; i < d->npods_add; i++) {
		if (i > 0)
			put_s(&o, ", ");
		put_pod(&o, &d->pods_add[i]);
	}
	put_s(&o, "], \"cooling_removed\": [");
	for (i = 0; i < d->ncool_del; i++) {
		put_s(&o, i == 0 ? "{" : ", {");
		put_ip(&o, "ip", &d->cool_del[i].ip);
		put_s(&o, "}");
	}
	put_s(&o, "], \"cooling_added\": [");
	for (i = 0; i < d->ncool_add; i++) {
		if (i > 0)
			put_s(&o, ", ");
		put_cooling(&o, &d->cool_add[i]);
	}
	put_s(&o, "]}");
	if (o.failed || o.len - headroom > CKPT_MAX_BYTES) {
		rc = o.failed ? errno : EFBIG;
		free(o.buf);
		errno = rc;
		return NULL;
	}
	if (len != NULL)
		*len = o.len - headroom;
	return o.buf;
}

static const struct field pod_key_fields[] = {
	{ "container_id", F_STR, offsetof(struct ckpt_pod_key, container_id),
	  CKPT_CID_LEN, false },
	{ "ifname", F_STR, offsetof(struct ckpt_pod_key, ifname),
	  CKPT_IFNAME_LEN, false },
};

static const struct field cooling_key_fields[] = {
	{ "ip", F_IP, offsetof(struct ckpt_cooling_key, ip), 0, false },
};

static int
get_diff(struct json_object *root, struct ckpt_diff *d, struct perr *pe)
{
	static const char *const keys[] = {
		"written", "pods_removed", "pods_added", "cooling_removed",
		"cooling_added",
	};
	unsigned seen = 0;
	char kp[64];
	size_t i;
	int rc;

	if (!json_object_is_type(root, json_type_object))
		return fail(pe, "", "expected an object, got %s",
		    type_name(root));
	if ((rc = arena_reserve(&d->arena,
	    strings_bound(root, "pods_removed", pod_key_fields,
	    NFIELDS(pod_key_fields)) +
	    strings_bound(root, "pods_added", pod_fields,
	    NFIELDS(pod_fields)) +
	    strings_bound(root, "cooling_added", cooling_fields,
	    NFIELDS(cooling_fields)), pe)) != 0)
		return rc;
	json_object_object_foreach(root, key, val) {
		for (i = 0; i < NFIELDS(keys); i++)
			if (strcmp(keys[i], key) == 0)
				break;
		switch (i) {
		case 0:
			rc = get_int(val, &d->written, key, pe);
			break;
		case 1:
			rc = get_array(val, key, CKPT_MAX_PODS,
			    sizeof(struct ckpt_pod_key), (void **)&d->pods_del,
			    &d->npods_del, pod_key_fields,
			    NFIELDS(pod_key_fields), &d->arena, pe);
			break;
		case 2:
			rc = get_array(val, key, CKPT_MAX_PODS,
			    sizeof(struct ckpt_pod), (void **)&d->pods_add,
			    &d->npods_add, pod_fields, NFIELDS(pod_fields),
			    &d->arena, pe);
			break;
		case 3:
			rc = get_array(val, key, CKPT_MAX_COOLING,
			    sizeof(struct ckpt_cooling_key),
			    (void **)&d->cool_del, &d->ncool_del,
			    cooling_key_fields, NFIELDS(cooling_key_fields),
			    &d->arena, pe);
			break;
		case 4:
			rc = get_array(val, key, CKPT_MAX_COOLING,
			    sizeof(struct ckpt_cooling), (void **)&d->cool_add,
			    &d->ncool_add, cooling_fields,
			    NFIELDS(cooling_fields), &d->arena, pe);
			break;
		default:
			key_for_path(kp, sizeof(kp), "", key);
			return fail(pe, kp, "unknown key");
		}
		if (rc != 0)
			return rc;
		seen |= 1u << i;
	}
	for (i = 0; i < NFIELDS(keys); i++)
		if (!(seen & (1u << i)))
			return fail(pe, "", "missing key \"%s\"", keys[i]);
	return check_diff(d, pe);
}

int
ckpt_diff_parse(const char *text, size_t len, struct ckpt_diff *d,
    char *err, size_t errlen)
{
	struct perr pe = { err, errlen };
	struct json_object *root;
	int rc;

	memset(d, 0, sizeof(*d));
	if ((rc = parse_json(text, len, &root, &pe)) == 0) {
		rc = get_diff(root, d, &pe);
		json_object_put(root);
	}
	if (rc != 0)
		ckpt_diff_free(d);
	return rc == 0 ? 0 : rc == OUT_OF_MEMORY ? -2 : -1;
}

/* Index of the pod (cid, ifname) in c (sorted), or -1. */
static ssize_t
find_pod(const struct checkpoint *c, const char *cid, const char *ifname)
{
	size_t lo = 0, hi = c->npods, mid;
	int d;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if ((d = strcmp(cid, c->pods[mid].container_id)) == 0)
			d = strcmp(ifname, c->pods[mid].ifname);
		if (d == 0)
			return (ssize_t)mid;
		if (d < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -1;
}

static ssize_t
find_cooling(const struct checkpoint *c, const struct ip_addr *ip)
{
	struct ckpt_cooling key = { .ip = *ip };
	size_t lo = 0, hi = c->ncooling, mid;
	int d;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if ((d = cmp_cooling(&key, &c->cooling[mid])) == 0)
			return (ssize_t)mid;
		if (d < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -1;
}

/* Which entries of c the difference removes, each named once and each
 * there; additions not already there (unless removed first). */
static int
apply_marks(const struct checkpoint *c, const struct ckpt_diff *d,
    bool *gone_pod, bool *gone_cool, struct perr *pe)
{
	char text[IP_ADDR_STR_LEN];
	ssize_t k;
	size_t i;

	for (i = 0; i < d->npods_del; i++) {
		const struct ckpt_pod_key *key = &d->pods_del[i];

		k = find_pod(c, key->container_id, key->ifname);
		if (k < 0 || gone_pod[k])
			return fail(pe, "", "pods_removed[%zu]: container %s "
			    "interface %s is not in the checkpoint%s", i,
			    key->container_id, key->ifname,
			    k < 0 ? "" : " (removed twice)");
		gone_pod[k] = true;
	}
	for (i = 0; i < d->npods_add; i++) {
		const struct ckpt_pod *p = &d->pods_add[i];

		k = find_pod(c, p->container_id, p->ifname);
		if (k >= 0 && !gone_pod[k])
			return fail(pe, "", "pods_added[%zu]: container %s "
			    "interface %s is already in the checkpoint", i,
			    p->container_id, p->ifname);
	}
	for (i = 0; i < d->ncool_del; i++) {
		k = find_cooling(c, &d->cool_del[i].ip);
		if (k < 0 || gone_cool[k]) {
			ip_addr_format(&d->cool_del[i].ip, text);
			return fail(pe, "", "cooling_removed[%zu]: %s is not "
			    "cooling in the checkpoint%s", i, text,
			    k < 0 ? "" : " (removed twice)");
		}
		gone_cool[k] = true;
	}
	for (i = 0; i < d->ncool_add; i++) {
		k = find_cooling(c, &d->cool_add[i].ip);
		if (k >= 0 && !gone_cool[k]) {
			ip_addr_format(&d->cool_add[i].ip, text);
			return fail(pe, "", "cooling_added[%zu]: %s is already "
			    "cooling in the checkpoint", i, text);
		}
	}
	return 0;
}

int
checkpoint_apply(struct checkpoint *c, const struct ckpt_diff *d, char *err,
    size_t errlen)
{
	struct perr pe = { err, errlen };
	struct checkpoint n;
	bool *gone_pod = NULL, *gone_cool = NULL;
	size_t i, np, nc;
	int rc = OUT_OF_MEMORY;

	memset(&n, 0, sizeof(n));
	if ((rc = check_diff(d, &pe)) != 0)
		return rc == OUT_OF_MEMORY ? -2 : -1;
	rc = OUT_OF_MEMORY;
	if ((gone_pod = calloc(c->npods + 1, sizeof(*gone_pod))) == NULL ||
	    (gone_cool = calloc(c->ncooling + 1, sizeof(*gone_cool))) == NULL)
		goto out;
	if (apply_marks(c, d, gone_pod, gone_cool, &pe) == -1) {
		rc = -1;
		goto out;
	}
	/* removals name distinct entries that are there: no underflow */
	np = c->npods - d->npods_del + d->npods_add;
	nc = c->ncooling - d->ncool_del + d->ncool_add;
	memcpy(n.instance_id, c->instance_id, sizeof(n.instance_id));
	n.generation = c->generation;
	n.written = d->written;
	n.ipv6 = c->ipv6;
	if ((np > 0 && (n.pods = calloc(np, sizeof(*n.pods))) == NULL) ||
	    (nc > 0 && (n.cooling = calloc(nc, sizeof(*n.cooling))) == NULL))
		goto out;
	for (i = 0; i < c->npods; i++)
		if (!gone_pod[i])
			n.pods[n.npods++] = c->pods[i];
	for (i = 0; i < d->npods_add; i++)
		n.pods[n.npods++] = d->pods_add[i];
	for (i = 0; i < c->ncooling; i++)
		if (!gone_cool[i])
			n.cooling[n.ncooling++] = c->cooling[i];
	for (i = 0; i < d->ncool_add; i++)
		n.cooling[n.ncooling++] = d->cool_add[i];
	checkpoint_sort(&n);
	if ((rc = check_all(&n, &pe)) != 0)
		goto out;
	/* n borrows c's and d's strings until here */
	rc = OUT_OF_MEMORY;
	if (checkpoint_own(&n) == -1)
		goto out;
	rc = 0;
	checkpoint_free(c);
	*c = n;
	memset(&n, 0, sizeof(n));
out:
	if (rc == OUT_OF_MEMORY)
		fail(&pe, "", "out of memory");
	checkpoint_free(&n);
	free(gone_pod);
	free(gone_cool);
	return rc == 0 ? 0 : rc == OUT_OF_MEMORY ? -2 : -1;
}

/* ---- the file ---- */

/* Names are plain file names in the state directory. */
static int
name_ok(const char *name, char *err, size_t errlen)
{
	if (name[0] == '\0' || strchr(name, '/') != NULL ||
	    strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
	    strlen(name) > 200) {
		snprintf(err, errlen, "\"%.64s\": not a file name", name);
		return -1;
	}
	return 0;
}

static int
fsync_retry(int fd)
{
	int rc;

	while ((rc = fsync(fd)) == -1 && errno == EINTR)
		;
	return rc;
}

int
checkpoint_write(int dirfd, const char *name, const char *buf, size_t len,
    char *err, size_t errlen)
{
	char tmp[256];
	const char *step;
	size_t done = 0;
	ssize_t n;
	int fd, saved;

	if (name_ok(name, err, errlen) == -1)
		return -1;
	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);

	/* A temp file left by a crash (or anything else in its place) goes
	 * first, so O_EXCL can refuse whatever is there after that. */
	if (unlinkat(dirfd, tmp, 0) == -1 && errno != ENOENT &&
	    errno != EISDIR) {
		snprintf(err, errlen, "%s: removing a stale %s: %s", name, tmp,
		    strerror(errno));
		return -1;
	}
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0600);
	if (fd == -1) {
		snprintf(err, errlen, "%s: creating %s: %s", name, tmp,
		    strerror(errno));
		return -1;
	}
	step = "writing";
	while (done < len) {
		n = write(fd, buf + done, len - done);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;	/* a regular file never says 0 */
			goto fail;
		}
		done += (size_t)n;
	}
	step = "syncing";
	if (fsync_retry(fd) == -1)
		goto fail;
	step = "closing";
	if (close(fd) == -1) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	step = "renaming";
	if (renameat(dirfd, tmp, dirfd, name) == -1)
		goto fail;
	if (fsync_retry(dirfd) == -1) {
		snprintf(err, errlen, "%s: syncing the directory after the "
		    "rename: %s (the new checkpoint may not survive a crash)",
		    name, strerror(errno));
		return -1;
	}
	return 0;

fail:
	saved = errno;
	if (fd != -1)
		close(fd);
	unlinkat(dirfd, tmp, 0);
	snprintf(err, errlen, "%s: %s %s: %s; the old checkpoint is kept",
	    name, step, tmp, strerror(saved));
	return -1;
}

/*
 * Out of the way, under a name that says when: NAME.corrupt-SECONDS, or
 * with ".2" and on if an earlier one of the same second is there (never
 * over it: it may be what an operator needs to see).
 */
int
ckpt_move_aside(int dirfd, const char *name, char *note, size_t notelen)
{
	struct timespec now;
	char aside[256];
	int i, rc = -1;

	clock_gettime(CLOCK_REALTIME, &now);
	for (i = 1; i <= 9; i++) {
		if (i == 1)
			snprintf(aside, sizeof(aside), "%s.corrupt-%lld", name,
			    (long long)now.tv_sec);
		else
			snprintf(aside, sizeof(aside), "%s.corrupt-%lld.%d",
			    name, (long long)now.tv_sec, i);
		rc = renameat2(dirfd, name, dirfd, aside, RENAME_NOREPLACE);
		if (rc == -1 && errno == EINVAL)
			/* a file system without RENAME_NOREPLACE */
			rc = renameat(dirfd, name, dirfd, aside);
		if (rc == 0 || errno != EEXIST)
			break;
	}
	if (rc == 0)
		snprintf(note, notelen, "moved aside to %s", aside);
	else
		snprintf(note, notelen, "could not move it aside: %s",
		    strerror(errno));
	return rc == 0 ? 0 : -1;
}

static int
unusable(int dirfd, const char *name, const char *cause, char *err,
    size_t errlen)
{
	char note[300];

	ckpt_move_aside(dirfd, name, note, sizeof(note));
	snprintf(err, errlen, "%s: %s; %s", name, cause, note);
	return -1;
}

/* errno values of open and read that say nothing about the file. */
static bool
local_errno(int e)
{
	return e != ELOOP && e != EISDIR && e != ENXIO && e != ENODEV &&
	    e != EOPNOTSUPP && e != EWOULDBLOCK;
}

int
ckpt_read_file(int dirfd, const char *name, size_t max, char **text,
    size_t *len, char *cause, size_t causelen, char *err, size_t errlen)
{
	struct stat st;
	char *buf;
	size_t got = 0, size;
	ssize_t n;
	int fd;

	*text = NULL;
	*len = 0;
	if (name_ok(name, err, errlen) == -1)
		return -2;
	/* O_NONBLOCK: a FIFO in its place must not hang the start */
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
	    O_NONBLOCK | O_NOCTTY);
	if (fd == -1) {
		if (errno == ENOENT)
			return 1;
		if (errno == ELOOP) {
			snprintf(cause, causelen, "a symbolic link, not "
			    "followed");
			return -1;
		}
		if (!local_errno(errno)) {
			snprintf(cause, causelen, "cannot open: %s",
			    strerror(errno));
			return -1;
		}
		snprintf(err, errlen, "%s: %s; left in place", name,
		    strerror(errno));
		return -2;
	}
	if (fstat(fd, &st) == -1) {
		snprintf(err, errlen, "%s: %s; left in place", name,
		    strerror(errno));
		close(fd);
		return -2;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(cause, causelen, "%s", S_ISDIR(st.st_mode) ?
		    "a directory, not a regular file" : "not a regular file");
		return -1;
	}
	if ((uintmax_t)st.st_size > (uintmax_t)max) {
		close(fd);
		snprintf(cause, causelen, "%lld bytes, larger than %zu",
		    (long long)st.st_size, max);
		return -1;
	}
	size = (size_t)st.st_size;
	if ((buf = malloc(size + 1)) == NULL) {
		snprintf(err, errlen, "%s: out of memory; left in place", name);
		close(fd);
		return -2;
	}
	/* One byte more than fstat said, to see a file still growing. */
	while (got <= size) {
		n = read(fd, buf + got, size + 1 - got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			snprintf(err, errlen, "%s: reading: %s; left in place",
			    name, strerror(errno));
			free(buf);
			close(fd);
			return -2;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (got > size) {
		free(buf);
		snprintf(err, errlen, "%s: grew while being read; left in "
		    "place", name);
		return -2;
	}
	buf[got] = '\0';
	*text = buf;
	*len = got;
	return 0;
}

int
checkpoint_load(int dirfd, const char *name, struct checkpoint *c,
    char *err, size_t errlen)
{
	struct perr pe;
	char cause[512];
	char *text;
	size_t len;
	int rc;

	memset(c, 0, sizeof(*c));
	rc = ckpt_read_file(dirfd, name, CKPT_MAX_BYTES, &text, &len, cause,
	    sizeof(cause), err, errlen);
	if (rc == -1)
		return unusable(dirfd, name, cause, err, errlen);
	if (rc != 0)
		return rc;
	pe = (struct perr){ cause, sizeof(cause) };
	rc = parse(text, len, c, &pe);
	free(text);
	if (rc == OUT_OF_MEMORY) {
		snprintf(err, errlen, "%s: %s; left in place", name, cause);
		return -2;
	}
	if (rc == CKPT_NEWER) {
		snprintf(err, errlen, "%s: %s; left in place", name, cause);
		return CKPT_NEWER;
	}
	if (rc != 0)
		return unusable(dirfd, name, cause, err, errlen);
	return 0;
}
