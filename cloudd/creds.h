/*
 * Cloud credentials and what IMDS says, parsed without I/O: the role
 * credentials document (JSON), its ISO 8601 Expiration, and when to
 * refresh them; and every other IMDS answer cloudd reads (the session
 * token, the region, the role's name, one-line ids and MACs, the VPC's
 * CIDR blocks), each checked whole before it is used.
 */
#ifndef ENID_CREDS_H
#define ENID_CREDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "msg.h"

#define CREDS_KEY_LEN		128
#define CREDS_TOKEN_LEN		4096
#define CREDS_MIN_REFRESH_MS	1000

struct cloud_creds {
	char	access_key_id[CREDS_KEY_LEN];
	char	secret_access_key[CREDS_KEY_LEN];
	char	session_token[CREDS_TOKEN_LEN];	/* "" if none */
	time_t	expiration;			/* 0: does not expire */
};

/* The document at iam/security-credentials/ROLE.  0, or -1 with err. */
int	creds_parse_imds(const char *json, size_t len, struct cloud_creds *c,
	    char *err, size_t errlen);
/* "2024-05-01T12:00:00Z" (fractional seconds allowed).  0 or -1. */
int	iso8601_parse(const char *s, time_t *out);
/* Milliseconds from now until the credentials should be fetched again:
 * 60% of the time left, at least CREDS_MIN_REFRESH_MS. */
uint64_t creds_refresh_in_ms(time_t expiration, time_t now);
/* An access key id or secret: printable ASCII without spaces or ':'. */
bool	creds_text_ok(const char *s, size_t max);
/* The first line of an IMDS listing (a role name), checked: 1..127 of
 * [A-Za-z0-9+=,.@_-].  0, or -1. */
int	imds_first_line(const char *text, size_t len, char *out, size_t size);
/* The answer to PUT api/token: the whole body is the token, printable
 * ASCII without spaces or ':', shorter than size.  0, or -1. */
int	imds_token(const char *body, size_t len, char *out, size_t size);
/* The answer to placement/region: the whole body is the region's name
 * (ec2_name_ok), shorter than size.  0, or -1. */
int	imds_region(const char *body, size_t len, char *out, size_t size);
/* A one-line answer (instance-id, mac, vpc-id) into a fixed string: the
 * trailing line break dropped, no control characters.  0, or -1. */
int	imds_text(const char *body, size_t len, char *out, size_t size);
/* vpc-ipv4-cidr-blocks: one IPv4 CIDR a line, 1 to MSG_MAX_CIDRS of them
 * (blank lines and CRs ignored).  0, or -1 with *ncidrs 0. */
int	imds_cidr_lines(const char *body, size_t len,
	    struct ip_prefix cidrs[MSG_MAX_CIDRS], uint32_t *ncidrs);

/*
 * IPv6 lines of a MAC's metadata.  A 404 (an interface without IPv6) is
 * the caller's to take as none; an answer is checked line by line, and a
 * line that is no usable value is left out, counted and named, never the
 * answer's failure: IPv6 must not stop an IPv4 node.
 *   imds_cidr6_lines	vpc-ipv6-cidr-blocks, subnet-ipv6-cidr-blocks:
 *			blocks of minlen to maxlen bits (ec2_cidr6_parse),
 *			up to max into out (*n); *nbad counts the others,
 *			those past max among them, bad names the first.
 *			0, or -1 for a body that is no lines of text (a
 *			NUL, a line too long for any value) with *n 0.
 *   imds_ip6_first	ipv6s: the first line's address (ec2_ip6_parse),
 *			the interface's primary.  0; or -1 with *out all
 *			zero and bad naming the line ("" for an empty
 *			answer), *why (if not NULL) what is wrong.
 */
int	imds_cidr6_lines(const char *body, size_t len, unsigned minlen,
	    unsigned maxlen, struct ip_prefix *out, uint32_t max, uint32_t *n,
	    uint32_t *nbad, char *bad, size_t badlen);
int	imds_ip6_first(const char *body, size_t len, struct ip_addr *out,
	    char *bad, size_t badlen, const char **why);

#endif /* ENID_CREDS_H */
