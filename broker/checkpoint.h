/*
 * The broker's durable record of assignments (doc/design.md, the store): which
 * container (id, ifname) holds which address on which ENI, and which
 * released addresses are still cooling.  ENIs themselves are not recorded:
 * on start they are rebuilt from the cloud's own list.
 *
 * The record lives in two files in the state directory:
 *
 *   checkpoint.json     a snapshot: the whole record and its generation,
 *                       written atomically (a temporary file, fsync,
 *                       rename over the snapshot, fsync of the directory);
 *   checkpoint.journal  a fixed-size file of records, each what changed
 *                       since the one before (struct ckpt_diff), framed
 *                       with the snapshot's generation, a sequence number
 *                       and a CRC, written in place with one pwrite and
 *                       one fdatasync (journal.h).
 *
 * The record is the snapshot with the journal's records of its generation
 * applied in order, up to the first record that is not whole.  An answer
 * that the record must hold waits until either write has returned; a
 * record costs a fraction of a snapshot.  When the journal is full
 * (and at every start) a new snapshot with the next generation is written,
 * which makes every record in the journal stale at once.
 *
 * Parsing and formatting are pure (text in, struct out; struct in, text
 * out), and so are the differences between two checkpoints and applying
 * one, so unit tests and the fuzzer reach them without files.  A snapshot
 * that does not parse whole is moved aside, never half-used; one of a
 * newer format is left where it is, and enid does not start (CKPT_NEWER).
 */
#ifndef ENID_CHECKPOINT_H
#define ENID_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr.h"
#include "maxima.h"

#define CKPT_FILE		"checkpoint.json"
/*
 * 4: pods may carry "ip6" (an IPv6 address) and may lack "ip" (an
 * IPv6-only pod); 3: pods may carry "host_veth" (enid-cni's host end,
 * whose route reconciliation restores); 2: with "generation" (a journal
 * beside it); 1, read as generation 0.  All are read; a pod without
 * "host_veth" is one whose host route is not enid's to repair.  A
 * checkpoint is written as 4 only when it may hold IPv6 (struct
 * checkpoint's ipv6); else as 3, which an enid that knows no IPv6 still
 * reads.
 */
#define CKPT_VERSION		4
#define CKPT_VERSION_IPV4	3
/*
 * Returned for a snapshot or journal of a format newer than this enid's:
 * not damage but a newer enid's record (a downgrade), left in place, and
 * enid must not start on it (nor rebuild from the kernel, which would
 * lose what the runtime's DELs need).
 */
#define CKPT_NEWER		(-3)
#define CKPT_MAX_BYTES		(8 * 1024 * 1024)
#define CKPT_MAX_PODS		ENID_MAX_RECORDED_PODS		/* maxima.h */
#define CKPT_MAX_COOLING	ENID_MAX_RECORDED_COOLING

/* The longest each string may be, plus its NUL (also the size of
 * struct pod's arrays, engine.h). */
#define CKPT_CID_LEN		257	/* CNI container id: up to 256 */
#define CKPT_IFNAME_LEN		16	/* IFNAMSIZ */
#define CKPT_K8S_LEN		254	/* DNS-1123 names: up to 253 */
#define CKPT_UID_LEN		65
#define CKPT_ENI_LEN		64

/* Times are unix seconds in 0..CKPT_MAX_TIME (9999-12-31T23:59:59Z). */
#define CKPT_MAX_TIME		INT64_C(253402300799)
/* Generations count snapshots: room for one a nanosecond for a century. */
#define CKPT_MAX_GENERATION	(INT64_C(1) << 62)

/*
 * Strings are pointers, each as long as it is: arrays sized for the
 * maxima made a pod 928 bytes where its strings are typically 180, and a
 * broker keeps one checkpoint whole and builds another at every save.
 *
 * A checkpoint's strings either live in its arena (below), which it owns
 * and checkpoint_free() frees, or are borrowed: they belong to something
 * that outlives every use of the checkpoint.  checkpoint_parse,
 * checkpoint_copy, checkpoint_own and checkpoint_apply give checkpoints
 * that own all their strings; one that is kept past the call that built
 * it must be one of those (the store's record of the files is made so
 * with checkpoint_own).  A difference's entries point into the checkpoints
 * it was made from (ckpt_diff_make) or into its own arena (ckpt_diff_parse).
 */
struct ckpt_block;

/* A bump allocator of blocks that never move, freed all at once. */
struct ckpt_arena {
	struct ckpt_block *blocks;	/* newest first */
	size_t		 used;		/* of the newest block */
	size_t		 size;
};

/* A copy of s (its strlen + 1 bytes) in a, or NULL: out of memory. */
char	*ckpt_arena_strdup(struct ckpt_arena *a, const char *s);
void	ckpt_arena_free(struct ckpt_arena *a);
/* How many blocks a holds (for tests). */
size_t	ckpt_arena_blocks(const struct ckpt_arena *a);

struct ckpt_pod {
	const char	*container_id;
	const char	*ifname;
	const char	*k8s_namespace;	/* "" if unknown */
	const char	*k8s_name;
	const char	*k8s_uid;
	const char	*eni_id;
	const char	*host_veth;	/* NULL: none (enid-ipam, older) */
	/* Its IPv4 and IPv6 addresses: at least one; family 0 for none
	 * (an IPv6-only pod, or one with no IPv6 address). */
	struct ip_addr	 ip;
	struct ip_addr	 ip6;
	int64_t		 since;		/* unix seconds: assigned */
};

/* The ENI id a pointer as well: up to CKPT_MAX_COOLING of these, and
 * one way for every string of a checkpoint to be held. */
struct ckpt_cooling {
	struct ip_addr	 ip;
	const char	*eni_id;
	int64_t		 until;		/* unix seconds: reusable then */
};

struct checkpoint {
	char		 instance_id[CKPT_ENI_LEN];
	int64_t		 generation;	/* the snapshot's; see journal.h */
	/* May hold IPv6 (ip_family dual or ipv6, or read as version 4):
	 * written as version 4, which an older enid refuses rather than
	 * lose a pod's IPv6 address.  A pod with ip6, or without ip, makes
	 * it so whatever this says. */
	bool		 ipv6;
	int64_t		 written;	/* unix seconds */
	size_t		 npods;
	struct ckpt_pod	*pods;
	size_t		 ncooling;
	struct ckpt_cooling *cooling;
	struct ckpt_arena arena;	/* the strings it owns */
};

/* A copy of s in c's arena, or NULL: out of memory. */
const char *checkpoint_strdup(struct checkpoint *c, const char *s);
/* c's strings, borrowed or its own, copied into one new block of its
 * arena exactly their size; the old arena is freed.  0, or -1 out of
 * memory (c unchanged). */
int	checkpoint_own(struct checkpoint *c);
/* A deep copy of src owning its strings.  0, or -1 out of memory (*dst
 * empty). */
int	checkpoint_copy(const struct checkpoint *src,
	    struct checkpoint *dst);

/* Pure.  0, or -1 with err naming the first problem ("pods[3].ip: ..."),
 * or CKPT_NEWER: its "version" is newer than CKPT_VERSION (err names
 * both); unless 0, *c is empty.  Everything checkpoint_check() refuses is
 * refused.  *c owns its strings. */
int	checkpoint_parse(const char *text, size_t len, struct checkpoint *c,
	    char *err, size_t errlen);
/*
 * Pure, and no JSON parser: the "version" a snapshot begins with, as
 * enid writes it ('{', then "version", ':' and up to 18 digits, blanks
 * between, then ',', '}' or a blank).  0 and *version, or -1: not in
 * that shape.  For a look as root before the privilege drop.
 */
int	checkpoint_peek_version(const char *text, size_t len,
	    int64_t *version);
/* Pure.  A malloc'd NUL-terminated text (caller frees), or NULL: out of
 * memory, or c fails checkpoint_check() (so nothing is ever written that
 * would not load again). */
char	*checkpoint_format(const struct checkpoint *c, size_t *len);
/* Pure.  The version c is written as: CKPT_VERSION when it may hold
 * IPv6 (c->ipv6, or a pod with ip6 or without ip), else
 * CKPT_VERSION_IPV4. */
int	checkpoint_version(const struct checkpoint *c);
void	checkpoint_free(struct checkpoint *c);

/*
 * Pure.  The rules a checkpoint obeys beyond its JSON shape: every string
 * given, no longer than its limit above and well-formed (the *_ok
 * helpers below), addresses unicast, times in range, counts within the caps, no
 * (container id, ifname) twice, no address held by two pods or both held
 * and cooling or cooling twice.  0, or -1 with err naming the field.
 */
int	checkpoint_check(const struct checkpoint *c, char *err, size_t errlen);
/* Field by field, in order. */
bool	checkpoint_equal(const struct checkpoint *a,
	    const struct checkpoint *b);

/* Pure.  Pods in (container id, ifname) order, cooling addresses in
 * address order: the order the differences below need. */
void	checkpoint_sort(struct checkpoint *c);

/* What names a pod in a removal, and a cooling address. */
struct ckpt_pod_key {
	const char	*container_id;
	const char	*ifname;
};

struct ckpt_cooling_key {
	struct ip_addr	ip;
};

/*
 * What changed from one checkpoint to the next: the new "written", pods
 * and cooling addresses removed, then those added.  A pod or cooling
 * address with the same key and other fields changed is removed and added
 * again.  Applied, removals must name what is there and additions what is
 * not; the result must pass checkpoint_check().
 *
 * Made (ckpt_diff_make), its strings are the two checkpoints': it must not
 * be used once either is freed or changed.  Parsed, they are in its arena.
 */
struct ckpt_diff {
	int64_t			 written;
	size_t			 npods_del;
	struct ckpt_pod_key	*pods_del;
	size_t			 npods_add;
	struct ckpt_pod		*pods_add;
	size_t			 ncool_del;
	struct ckpt_cooling_key	*cool_del;
	size_t			 ncool_add;
	struct ckpt_cooling	*cool_add;
	struct ckpt_arena	 arena;		/* parsed: its strings */
};

/* Pure.  from and to sorted (checkpoint_sort) and the same instance's.
 * 0, or -1 out of memory (*d empty).  d borrows from and to's strings. */
int	ckpt_diff_make(const struct checkpoint *from,
	    const struct checkpoint *to, struct ckpt_diff *d);
/* Nothing removed or added (written aside). */
bool	ckpt_diff_empty(const struct ckpt_diff *d);
/* Pure.  A malloc'd text of headroom bytes left for the caller (a journal
 * record's header) and then the JSON object, NUL-terminated; *len counts
 * the JSON alone.  NULL: out of memory (errno ENOMEM) or larger than
 * CKPT_MAX_BYTES (EFBIG). */
char	*ckpt_diff_format(const struct ckpt_diff *d, size_t headroom,
	    size_t *len);
/* Pure, as strict as checkpoint_parse: exactly the keys, every field of
 * its type and within its field, the keys well-formed, the counts within
 * the caps.  0, or -1 with err naming the first problem (*d empty), or -2
 * out of memory. */
int	ckpt_diff_parse(const char *text, size_t len, struct ckpt_diff *d,
	    char *err, size_t errlen);
void	ckpt_diff_free(struct ckpt_diff *d);
/*
 * Pure.  Apply d to c (sorted; it stays sorted).  0; or -1 with err
 * naming the entry ("pods_removed[2]: ... is not in the checkpoint") or
 * the rule the result breaks, c unchanged; or -2 out of memory, c
 * unchanged.  c then owns all its strings (none are d's).
 */
int	checkpoint_apply(struct checkpoint *c, const struct ckpt_diff *d,
	    char *err, size_t errlen);
/*
 * Pure.  A cooling address's end is recomputed from the monotonic clock
 * at every build and rounds to the second either way: where next (sorted)
 * has an address cooling on the same ENI as in prev (sorted) and its end
 * differs by a second at most, take prev's, so it is not recorded again.
 */
void	ckpt_cooling_settle(const struct checkpoint *prev,
	    struct checkpoint *next);

/* True for a syntactically acceptable CNI container id: 1 to 256 of
 * [A-Za-z0-9_.-], not starting with '.' or '-'. */
bool	ckpt_container_id_ok(const char *s);
/* True for a usable interface name: 1 to 15 bytes of printable ASCII, no
 * '/', ':' or space, not "." or "..".  (The kernel also takes control
 * characters and non-ASCII bytes; enid refuses them, as they would reach
 * logs and JSON unescaped.) */
bool	ckpt_ifname_ok(const char *s);
/* A pod's address: IPv4 (the format's "ip" fields are dotted quads),
 * not 0/8, loopback, multicast or 240/4. */
bool	ckpt_ip_ok(const struct ip_addr *ip);
/* A pod's IPv6 address ("ip6", RFC 5952 text): not special
 * (ip_addr_is_special: link-local, multicast, loopback, ...). */
bool	ckpt_ip6_ok(const struct ip_addr *ip);
/* "eni-" and 1 or more hex digits, shorter than CKPT_ENI_LEN. */
bool	ckpt_eni_id_ok(const char *s);
/* "i-" and 1 or more hex digits, shorter than CKPT_ENI_LEN. */
bool	ckpt_instance_id_ok(const char *s);
/* Pod namespace, name, uid: printable ASCII (space included), possibly
 * empty.  Kubernetes' own rules are narrower; the CNI socket must refuse
 * what this refuses, or the checkpoint could not record the pod. */
bool	ckpt_k8s_ok(const char *s);

/*
 * Atomic write of buf as name in the directory dirfd (opened O_RDONLY |
 * O_DIRECTORY, not O_PATH: it is fsync'd): temp file ".name.tmp"
 * (O_NOFOLLOW, 0600), write, fsync, rename over name, fsync the directory.
 * 0, or -1 with err set: the temp file is gone and the old file untouched,
 * except when only the last step (the directory's fsync) failed: name may
 * then hold the new text, not known to be durable.  Either way the caller
 * must not acknowledge what this write was to record.
 */
int	checkpoint_write(int dirfd, const char *name, const char *buf,
	    size_t len, char *err, size_t errlen);

/*
 * Read and parse name in dirfd.  1: there is none (a first start);
 * 0: *c holds it; -1: unusable (a symbolic link, not a regular file, too
 * large, corrupt or truncated): it was renamed aside to
 * "name.corrupt-<unix seconds>" (or err says why it could not be) and err
 * names the file and the cause; -2: it could not be read for a reason
 * local to this process or machine (permissions, I/O error, out of
 * descriptors or memory): it was left in place, err says why, and the
 * caller should not start without it; CKPT_NEWER: a newer format (err
 * names both versions), left in place.  *c is empty unless 0.
 */
int	checkpoint_load(int dirfd, const char *name, struct checkpoint *c,
	    char *err, size_t errlen);

/*
 * Read name in dirfd whole, at most max bytes, not following a link nor
 * blocking on a FIFO.  1: there is none; 0: *text (malloc'd, with a NUL
 * after its *len bytes); -1: it is unusable (a link, not a regular file,
 * too large): cause says why, the file is left where it is; -2: a reason
 * local to this process or machine, err names the file and says why.
 */
int	ckpt_read_file(int dirfd, const char *name, size_t max, char **text,
	    size_t *len, char *cause, size_t causelen, char *err,
	    size_t errlen);

/* Rename name in dirfd to "name.corrupt-<unix seconds>" (".2" and on
 * after one of the same second, never over it); note says where to, or
 * why it could not be moved (then -1). */
int	ckpt_move_aside(int dirfd, const char *name, char *note,
	    size_t notelen);

#endif /* ENID_CHECKPOINT_H */
