/*
 * libFuzzer target for what enid-cloudd reads from IMDS (cloudd/creds.c):
 * the role credentials document (JSON) and its Expiration, the role
 * listing, the session token, the region, the one-line instance id, MAC
 * and VPC id, the VPC's CIDR blocks and the IPv6 lines (the VPC's and
 * the subnet's IPv6 blocks, the interface's IPv6 addresses).  The first
 * input byte picks the answer (the seeds write it as 'M' + its number,
 * which is its number modulo A_COUNT); the rest is its body, handed over
 * as cloudd/http.c hands one: exactly the body's bytes and a NUL after
 * them, or NULL when empty.
 *
 * Invariants, beyond "does not crash":
 * - what is accepted is exactly what the body says: each credential is
 *   the document's string byte for byte (read again here with json-c),
 *   a token, region or id is the body itself (less a trailing line
 *   break), a MAC formats back to the body's text, CIDR blocks format
 *   back to the body's lines, an Expiration formats and parses back to
 *   the same second;
 * - the credentials put back into a document parse again to the same;
 * - each line of a CIDR answer, read as an address or a prefix of either
 *   family (common/addr.h), is accepted only in its one canonical text;
 * - whatever satisfies an answer's rules, stated here apart from the
 *   parser, is accepted, and nothing else is;
 * - a refused document leaves the credentials all zero and says why in a
 *   terminated message, the same refusal whatever the error buffer's
 *   size; refused CIDR lines leave no block counted.
 * - the IPv6 lines (vpc-ipv6-cidr-blocks, ipv6s): a line is taken or
 *   counted, never both and never lost; what is taken is an IPv6 value a
 *   host may use (no special address, none of EC2's services, a network
 *   of the lengths asked for) in the body's own text; nothing is written
 *   past the count asked for.
 *
 *   make fuzz-imds [FUZZ_SECONDS=N]
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "addr.h"
#include "creds.h"
#include "ec2.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)	do { if (!(x)) __builtin_trap(); } while (0)

/* cloudd's fields (cloudd.h) that each answer lands in. */
#define ROLE_LEN	128
#define TOKEN_LEN	256
#define REGION_LEN	64

enum answer {
	A_CREDS,
	A_ROLE,
	A_TOKEN,
	A_REGION,
	A_INSTANCE_ID,
	A_MAC,
	A_VPC_ID,
	A_CIDRS,
	A_EXPIRATION,
	/* IPv6 */
	A_CIDRS6,		/* vpc- and subnet-ipv6-cidr-blocks */
	A_IPV6S,		/* ipv6s */
	A_COUNT
};

static bool
all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n-- > 0)
		if (*b++ != 0)
			return false;
	return true;
}

static bool
terminated(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

/* An Expiration, written as IMDS writes one, reads back the same. */
static void
time_round_trips(time_t t)
{
	struct tm tm;
	char text[64];
	time_t again;

	CHECK(gmtime_r(&t, &tm) != NULL);
	CHECK(strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm) > 0);
	CHECK(iso8601_parse(text, &again) == 0);
	CHECK(again == t);
}

/* The document's string for key, as json-c reads it (with its length),
 * must be the field, byte for byte. */
static void
same_as_document(struct json_object *doc, const char *key, const char *field)
{
	struct json_object *v;

	CHECK(json_object_object_get_ex(doc, key, &v));
	CHECK(json_object_is_type(v, json_type_string));
	CHECK((size_t)json_object_get_string_len(v) == strlen(field));
	CHECK(memcmp(json_object_get_string(v), field, strlen(field)) == 0);
}

static void
creds_accepted(const char *body, size_t len, const struct cloud_creds *c)
{
	struct json_tokener *tok;
	struct json_object *doc, *v, *back;
	struct cloud_creds again;
	const char *text;
	char err[256];
	struct tm tm;
	char when[64];

	CHECK(terminated(c->access_key_id, sizeof(c->access_key_id)));
	CHECK(terminated(c->secret_access_key, sizeof(c->secret_access_key)));
	CHECK(terminated(c->session_token, sizeof(c->session_token)));
	CHECK(creds_text_ok(c->access_key_id, sizeof(c->access_key_id)));
	CHECK(creds_text_ok(c->secret_access_key,
	    sizeof(c->secret_access_key)));
	CHECK(creds_text_ok(c->session_token, sizeof(c->session_token)));

	CHECK((tok = json_tokener_new()) != NULL);
	doc = json_tokener_parse_ex(tok, body, (int)len);
	CHECK(doc != NULL && json_object_is_type(doc, json_type_object));
	json_tokener_free(tok);
	same_as_document(doc, "AccessKeyId", c->access_key_id);
	same_as_document(doc, "SecretAccessKey", c->secret_access_key);
	same_as_document(doc, "Token", c->session_token);
	if (json_object_object_get_ex(doc, "Code", &v))
		CHECK(!json_object_is_type(v, json_type_string) ||
		    (json_object_get_string_len(v) == 7 &&
		    memcmp(json_object_get_string(v), "Success", 7) == 0));
	json_object_put(doc);
	time_round_trips(c->expiration);

	/* Written back as IMDS would, it reads the same. */
	CHECK(gmtime_r(&c->expiration, &tm) != NULL);
	CHECK(strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm) > 0);
	back = json_object_new_object();
	json_object_object_add(back, "Code", json_object_new_string("Success"));
	json_object_object_add(back, "AccessKeyId",
	    json_object_new_string(c->access_key_id));
	json_object_object_add(back, "SecretAccessKey",
	    json_object_new_string(c->secret_access_key));
	json_object_object_add(back, "Token",
	    json_object_new_string(c->session_token));
	json_object_object_add(back, "Expiration",
	    json_object_new_string(when));
	text = json_object_to_json_string_ext(back, JSON_C_TO_STRING_PLAIN);
	CHECK(creds_parse_imds(text, strlen(text), &again, err,
	    sizeof(err)) == 0);
	CHECK(memcmp(&again, c, sizeof(again)) == 0);
	json_object_put(back);
	explicit_bzero(&again, sizeof(again));
}

static void
fuzz_creds(const char *body, size_t len)
{
	struct cloud_creds c, c2;
	char err[256], small[24];
	size_t smallen;
	int rc, rc2;

	memset(err, 'x', sizeof(err));
	rc = creds_parse_imds(body, len, &c, err, sizeof(err));
	if (rc == 0)
		creds_accepted(body, len, &c);
	else {
		CHECK(rc == -1);
		CHECK(all_zero(&c, sizeof(c)));
		CHECK(terminated(err, sizeof(err)) && err[0] != '\0');
	}
	/* The same answer with a short error buffer, never written past. */
	smallen = 1 + len % (sizeof(small) - 1);
	memset(small, 'x', sizeof(small));
	rc2 = creds_parse_imds(body, len, &c2, small, smallen);
	CHECK(rc2 == rc);
	CHECK(rc == 0 || terminated(small, smallen));
	CHECK(smallen == sizeof(small) || small[smallen] == 'x');
	CHECK(memcmp(&c, &c2, sizeof(c)) == 0);
}

/* The rules, stated apart from creds.c. */
static bool
role_char(unsigned char ch)
{
	return isascii(ch) && (isalnum(ch) || (ch != '\0' &&
	    strchr("+=,.@_-", ch) != NULL));
}

static bool
token_char(unsigned char ch)
{
	return ch > 0x20 && ch < 0x7f && ch != ':';
}

static bool
region_char(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
	    ch == '.' || ch == '-';
}

static bool
all_of(const char *s, size_t n, bool (*ok)(unsigned char))
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!ok((unsigned char)s[i]))
			return false;
	return true;
}

static void
fuzz_role(const char *body, size_t len)
{
	char out[ROLE_LEN];
	size_t n = 0;
	bool valid;
	int rc;

	while (n < len && body[n] != '\n' && body[n] != '\r')
		n++;
	valid = n > 0 && n < ROLE_LEN && all_of(body, n, role_char);
	rc = imds_first_line(body, len, out, sizeof(out));
	CHECK(rc == 0 || rc == -1);
	CHECK((rc == 0) == valid);
	if (rc == 0)
		CHECK(strlen(out) == n && memcmp(out, body, n) == 0);
}

static void
fuzz_token(const char *body, size_t len)
{
	char out[TOKEN_LEN];
	bool valid = len > 0 && len < TOKEN_LEN && all_of(body, len,
	    token_char);
	int rc;

	rc = imds_token(body, len, out, sizeof(out));
	CHECK(rc == 0 || rc == -1);
	CHECK((rc == 0) == valid);
	if (rc == 0)
		CHECK(strlen(out) == len && memcmp(out, body, len) == 0);
}

static void
fuzz_region(const char *body, size_t len)
{
	char out[REGION_LEN];
	bool valid = len > 0 && len < REGION_LEN && all_of(body, len,
	    region_char);
	int rc;

	rc = imds_region(body, len, out, sizeof(out));
	CHECK(rc == 0 || rc == -1);
	CHECK((rc == 0) == valid);
	if (rc == 0)
		CHECK(strlen(out) == len && memcmp(out, body, len) == 0);
}

/* A one-line answer: the body less its trailing line breaks. */
static int
fuzz_text(const char *body, size_t len, char *out, size_t size)
{
	size_t n = len, i;
	bool valid;
	int rc;

	while (n > 0 && (body[n - 1] == '\n' || body[n - 1] == '\r'))
		n--;
	valid = n > 0 && n < size;
	for (i = 0; valid && i < n; i++)
		if ((unsigned char)body[i] < 0x20 || body[i] == 0x7f)
			valid = false;
	rc = imds_text(body, len, out, size);
	CHECK(rc == 0 || rc == -1);
	CHECK((rc == 0) == valid);
	if (rc == 0)
		CHECK(strlen(out) == n && memcmp(out, body, n) == 0);
	return rc;
}

static void
fuzz_id(const char *body, size_t len, const char *prefix)
{
	char text[MSG_ID_LEN];

	if (fuzz_text(body, len, text, sizeof(text)) == 0 &&
	    ec2_id_ok(text, prefix)) {
		CHECK(strncmp(text, prefix, strlen(prefix)) == 0);
		CHECK(strlen(text) > strlen(prefix));
	}
}

static void
fuzz_mac(const char *body, size_t len)
{
	char text[MSG_ID_LEN], again[MAC_STR_LEN];
	uint8_t mac[6];
	size_t i;

	if (fuzz_text(body, len, text, sizeof(text)) == -1 ||
	    mac_parse(text, mac) == -1)
		return;
	mac_format(mac, again);
	CHECK(strlen(text) == strlen(again));
	for (i = 0; text[i] != '\0'; i++)
		CHECK(tolower((unsigned char)text[i]) == again[i]);
}

/*
 * One line as an address or a prefix of either family (the one type,
 * common/addr.h), as IMDS's and EC2's answers carry them: what is
 * accepted is valid and formats back to the very text (one text per
 * value), is what inet_pton(3) reads it as, and a refusal says why and
 * leaves nothing that looks set.
 */
static void
address_text(const char *line)
{
	char text[IP_PREFIX_STR_LEN];
	unsigned char raw[16];
	struct ip_prefix p;
	struct ip_addr a;
	const char *why;

	why = NULL;
	if (ip_addr_parse(line, &a, &why) == 0) {
		CHECK(ip_addr_valid(&a));
		ip_addr_format(&a, text);
		CHECK(strcmp(text, line) == 0);
		CHECK(inet_pton(a.family, line, raw) == 1);
		CHECK(memcmp(raw, a.bytes, ip_family_bits(a.family) / 8) == 0);
		CHECK(ip_prefix_parse(line, &p, NULL) == -1);
	} else {
		CHECK(why != NULL && !ip_addr_valid(&a));
		/* what inet_pton reads as IPv4 is accepted */
		CHECK(inet_pton(AF_INET, line, raw) != 1);
	}
	why = NULL;
	if (ip_prefix_parse(line, &p, &why) == 0) {
		CHECK(ip_prefix_valid(&p));
		ip_prefix_format(&p, text);
		CHECK(strcmp(text, line) == 0);
		CHECK(ip_prefix_contains(&p, &p.addr));
	} else
		CHECK(why != NULL && !ip_prefix_valid(&p));
}

static void
fuzz_cidrs(const char *body, size_t len)
{
	struct ip_prefix cidrs[MSG_MAX_CIDRS];
	char *lines, *w, text[IP_PREFIX_STR_LEN], line[64];
	size_t i, j, start;
	uint32_t n, k;

	for (i = 0; body != NULL && i < len; i = j + 1) {
		for (j = i; j < len && body[j] != '\n'; j++)
			;
		if (j - i < sizeof(line) && memchr(body + i, '\0', j - i) ==
		    NULL) {
			memcpy(line, body + i, j - i);
			line[j - i] = '\0';
			address_text(line);
		}
	}

	if (imds_cidr_lines(body, len, cidrs, &n) == -1) {
		CHECK(n == 0);
		return;
	}
	CHECK(n >= 1 && n <= MSG_MAX_CIDRS);

	/* The body's lines, less CRs at their ends and blank lines, are
	 * the blocks' one text each, in order. */
	CHECK((lines = malloc(len + 2)) != NULL);	/* and a last \n */
	w = lines;
	for (i = 0; i < len; i = j + 1) {
		for (j = i; j < len && body[j] != '\n'; j++)
			;
		start = i;
		i = j;
		while (i > start && body[i - 1] == '\r')
			i--;
		if (i == start)
			continue;
		memcpy(w, body + start, i - start);
		w += i - start;
		*w++ = '\n';
	}
	*w = '\0';
	w = lines;
	for (k = 0; k < n; k++) {
		CHECK(ip_prefix_valid(&cidrs[k]) &&
		    cidrs[k].addr.family == AF_INET);
		ip_prefix_format(&cidrs[k], text);
		CHECK(strncmp(w, text, strlen(text)) == 0);
		w += strlen(text);
		CHECK(*w++ == '\n');
	}
	CHECK(*w == '\0');
	free(lines);
}

/* The body's non-blank lines (CRs at their ends dropped), or -1 when
 * imds_cidr6_lines would refuse the body as no text. */
static int
count_lines(const char *body, size_t len, char lines[][64], size_t max)
{
	size_t i, j, n = 0, end;

	for (i = 0; i < len; i = j + 1) {
		for (j = i; j < len && body[j] != '\n'; j++)
			if (body[j] == '\0' || j - i + 1 >= 64)
				return -1;
		end = j;
		while (end > i && body[end - 1] == '\r')
			end--;
		if (end == i)
			continue;
		if (n < max) {
			memcpy(lines[n], body + i, end - i);
			lines[n][end - i] = '\0';
		}
		n++;
	}
	return (int)n;
}

static void
fuzz_cidrs6(const char *body, size_t len, unsigned minlen, unsigned maxlen)
{
	static char lines[64][64];
	struct ip_prefix out[4 + 1];
	char bad[96], text[IP_PREFIX_STR_LEN];
	uint32_t n, nbad, k;
	int nlines, rc;
	size_t l;

	memset(&out[4], 0xa5, sizeof(out[4]));
	nlines = count_lines(body, len, lines, 64);
	rc = imds_cidr6_lines(body, len, minlen, maxlen, out, 4, &n, &nbad,
	    bad, sizeof(bad));
	CHECK(rc == (nlines == -1 ? -1 : 0));
	CHECK(out[4].len == 0xa5);		/* never past max */
	if (rc == -1) {
		CHECK(n == 0);
		return;
	}
	CHECK(n <= 4 && n + nbad == (uint32_t)nlines);
	CHECK((nbad > 0) == (bad[0] != '\0'));
	CHECK(terminated(bad, sizeof(bad)));
	for (k = 0; k < n; k++) {
		CHECK(ip_prefix_valid(&out[k]) &&
		    out[k].addr.family == AF_INET6);
		CHECK(out[k].len >= minlen && out[k].len <= maxlen);
		CHECK(ip_prefix_is_network(&out[k]));
		CHECK(!ip_addr_is_special(&out[k].addr));
		CHECK(!ec2_prefix6_holds_service(&out[k]));
		ip_prefix_format(&out[k], text);
		/* one of the body's lines, in its very text */
		for (l = 0; l < (size_t)nlines && l < 64; l++)
			if (strcmp(lines[l], text) == 0)
				break;
		CHECK(l < (size_t)nlines || nlines > 64);
	}
}

/* The first non-blank line, as imds_ip6_first reads it: 1 with line,
 * 0 for none, -1 when a line up to it has a NUL or is too long. */
static int
first_line(const char *body, size_t len, char line[64])
{
	size_t i, j, end;

	for (i = 0; i < len; i = j + 1) {
		for (j = i; j < len && body[j] != '\n'; j++)
			if (body[j] == '\0' || j - i + 1 >= 64)
				return -1;
		end = j;
		while (end > i && body[end - 1] == '\r')
			end--;
		if (end == i)
			continue;
		memcpy(line, body + i, end - i);
		line[end - i] = '\0';
		return 1;
	}
	return 0;
}

static void
fuzz_ipv6s(const char *body, size_t len)
{
	struct ip_addr a;
	char bad[64], text[IP_ADDR_STR_LEN], line[64];
	const char *why;
	int first, rc;

	first = first_line(body, len, line);
	rc = imds_ip6_first(body, len, &a, bad, sizeof(bad), &why);
	CHECK(rc == 0 || rc == -1);
	CHECK(terminated(bad, sizeof(bad)));
	if (rc == -1) {
		CHECK(all_zero(&a, sizeof(a)));
		/* no line is no address, and no reason */
		CHECK((why == NULL) == (first == 0));
		return;
	}
	CHECK(first == 1);
	CHECK(ip_addr_valid(&a) && a.family == AF_INET6);
	CHECK(!ip_addr_is_special(&a) && ip_addr_ec2_service(&a) == NULL);
	ip_addr_format(&a, text);
	CHECK(strcmp(text, line) == 0);
}

static void
fuzz_expiration(const char *body, size_t len)
{
	time_t t;

	if (memchr(body, '\0', len) != NULL)
		return;			/* a JSON string's own NUL ends it */
	if (iso8601_parse(body, &t) == 0)
		time_round_trips(t);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *body = NULL;
	size_t len;

	if (size == 0)
		return 0;
	len = size - 1;
	/* As http.c keeps an answer: the bytes and a NUL, or no buffer. */
	if (len > 0) {
		CHECK((body = malloc(len + 1)) != NULL);
		memcpy(body, data + 1, len);
		body[len] = '\0';
	}
	switch (data[0] % A_COUNT) {
	case A_CREDS:
		fuzz_creds(body, len);
		break;
	case A_ROLE:
		fuzz_role(body, len);
		break;
	case A_TOKEN:
		fuzz_token(body, len);
		break;
	case A_REGION:
		fuzz_region(body, len);
		break;
	case A_INSTANCE_ID:
		fuzz_id(body, len, "i-");
		break;
	case A_MAC:
		fuzz_mac(body, len);
		break;
	case A_VPC_ID:
		fuzz_id(body, len, "vpc-");
		break;
	case A_CIDRS:
		fuzz_cidrs(body, len);
		break;
	case A_EXPIRATION:
		if (body != NULL)
			fuzz_expiration(body, len);
		break;
	case A_CIDRS6:
		fuzz_cidrs6(body, len, 32, 64);
		fuzz_cidrs6(body, len, 64, 64);
		break;
	case A_IPV6S:
		fuzz_ipv6s(body, len);
		break;
	}
	free(body);
	return 0;
}
