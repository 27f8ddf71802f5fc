/*
 * The broker's durable record of assignments (DESIGN.md, Durability): which
 * container (id, ifname) holds which address on which ENI, and which
 * released addresses are still cooling.  ENIs themselves are not recorded:
 * on start they are rebuilt from the cloud's own list.
 *
 * Parsing and formatting are pure (text in, struct out; struct in, text
 * out) so unit tests and the fuzzer reach them without files.  Writing is
 * atomic: a temporary file in the state directory, fsync, rename over the
 * checkpoint, fsync of the directory.  A checkpoint that does not parse
 * whole is moved aside, never half-used.
 */
#ifndef ENID_CHECKPOINT_H
#define ENID_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CKPT_FILE		"checkpoint.json"
#define CKPT_VERSION		1
#define CKPT_MAX_BYTES		(8 * 1024 * 1024)
#define CKPT_MAX_PODS		4096
#define CKPT_MAX_COOLING	4096

/* Field sizes, each including the NUL. */
#define CKPT_CID_LEN		257	/* CNI container id: up to 256 */
#define CKPT_IFNAME_LEN		16	/* IFNAMSIZ */
#define CKPT_K8S_LEN		254	/* DNS-1123 names: up to 253 */
#define CKPT_UID_LEN		65
#define CKPT_ENI_LEN		64

/* Times are unix seconds in 0..CKPT_MAX_TIME (9999-12-31T23:59:59Z). */
#define CKPT_MAX_TIME		INT64_C(253402300799)

struct ckpt_pod {
	char		container_id[CKPT_CID_LEN];
	char		ifname[CKPT_IFNAME_LEN];
	char		k8s_namespace[CKPT_K8S_LEN];	/* "" if unknown */
	char		k8s_name[CKPT_K8S_LEN];
	char		k8s_uid[CKPT_UID_LEN];
	uint32_t	ip;		/* network byte order */
	char		eni_id[CKPT_ENI_LEN];
	int64_t		since;		/* unix seconds, when assigned */
};

struct ckpt_cooling {
	uint32_t	ip;		/* network byte order */
	char		eni_id[CKPT_ENI_LEN];
	int64_t		until;		/* unix seconds: reusable from then */
};

struct checkpoint {
	char		 instance_id[CKPT_ENI_LEN];
	int64_t		 written;	/* unix seconds */
	size_t		 npods;
	struct ckpt_pod	*pods;
	size_t		 ncooling;
	struct ckpt_cooling *cooling;
};

/* Pure.  0, or -1 with err naming the first problem ("pods[3].ip: ...");
 * on -1 *c is empty.  Everything checkpoint_check() refuses is refused. */
int	checkpoint_parse(const char *text, size_t len, struct checkpoint *c,
	    char *err, size_t errlen);
/* Pure.  A malloc'd NUL-terminated text (caller frees), or NULL: out of
 * memory, or c fails checkpoint_check() (so nothing is ever written that
 * would not load again). */
char	*checkpoint_format(const struct checkpoint *c, size_t *len);
void	checkpoint_free(struct checkpoint *c);

/*
 * Pure.  The rules a checkpoint obeys beyond its JSON shape: every string
 * terminated within its field and well-formed (the *_ok helpers below),
 * addresses unicast, times in range, counts within the caps, no
 * (container id, ifname) twice, no address held by two pods or both held
 * and cooling or cooling twice.  0, or -1 with err naming the field.
 */
int	checkpoint_check(const struct checkpoint *c, char *err, size_t errlen);
/* Field by field, in order. */
bool	checkpoint_equal(const struct checkpoint *a,
	    const struct checkpoint *b);

/* True for a syntactically acceptable CNI container id: 1 to 256 of
 * [A-Za-z0-9_.-], not starting with '.' or '-'. */
bool	ckpt_container_id_ok(const char *s);
/* True for a usable interface name: 1 to 15 bytes of printable ASCII, no
 * '/', ':' or space, not "." or "..".  (The kernel also takes control
 * characters and non-ASCII bytes; enid refuses them, as they would reach
 * logs and JSON unescaped.) */
bool	ckpt_ifname_ok(const char *s);
/* A pod's address (network order): unicast, not 0/8 or loopback. */
bool	ckpt_ip_ok(uint32_t ip);
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
 * caller should not start without it.  *c is empty unless 0.
 */
int	checkpoint_load(int dirfd, const char *name, struct checkpoint *c,
	    char *err, size_t errlen);

#endif /* ENID_CHECKPOINT_H */
