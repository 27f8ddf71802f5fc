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

/* Pure.  0, or -1 with err naming the first problem ("pods[3].ip: ..."). */
int	checkpoint_parse(const char *text, size_t len, struct checkpoint *c,
	    char *err, size_t errlen);
/* Pure.  A malloc'd NUL-terminated text (caller frees), or NULL. */
char	*checkpoint_format(const struct checkpoint *c, size_t *len);
void	checkpoint_free(struct checkpoint *c);

/* True for a syntactically acceptable CNI container id: 1 to 256 of
 * [A-Za-z0-9_.-], not starting with '.' or '-'. */
bool	ckpt_container_id_ok(const char *s);
/* True for a usable interface name: 1 to 15 bytes, no '/', ':' or
 * whitespace, not "." or "..". */
bool	ckpt_ifname_ok(const char *s);

/*
 * Atomic write of buf as name in the directory dirfd: temp file
 * (O_NOFOLLOW, 0600), write, fsync, rename over name, fsync the directory.
 * 0, or -1 with err set (the old file is then untouched).
 */
int	checkpoint_write(int dirfd, const char *name, const char *buf,
	    size_t len, char *err, size_t errlen);

/*
 * Read and parse name in dirfd.  1: there is none (a first start);
 * 0: *c holds it; -1: unusable (unreadable, too large, corrupt or
 * truncated): it was renamed aside to "name.corrupt-<unix seconds>" and
 * err names the file and the cause; *c is empty.
 */
int	checkpoint_load(int dirfd, const char *name, struct checkpoint *c,
	    char *err, size_t errlen);

#endif /* ENID_CHECKPOINT_H */
