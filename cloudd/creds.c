/*
 * Parsing of IMDS role credentials, times and the other IMDS answers
 * (creds.h).  Pure.  A body is as http.c hands it over: len bytes with a
 * NUL after them, or NULL when empty.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "addr.h"
#include "creds.h"
#include "ec2.h"

#define BAD(...)	do { snprintf(err, errlen, __VA_ARGS__); goto out; } \
			while (0)

bool
creds_text_ok(const char *s, size_t max)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] > 0x7e ||
		    s[i] == ':')
			return false;
	return i > 0 && i < max;
}

int
iso8601_parse(const char *s, time_t *out)
{
	struct tm tm;
	const char *end;

	memset(&tm, 0, sizeof(tm));
	end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (end == NULL)
		return -1;
	if (*end == '.') {
		end++;
		if (!isdigit((unsigned char)*end))
			return -1;
		while (isdigit((unsigned char)*end))
			end++;
	}
	if (strcmp(end, "Z") != 0 && strcmp(end, "+00:00") != 0)
		return -1;
	*out = timegm(&tm);
	return *out == (time_t)-1 ? -1 : 0;
}

uint64_t
creds_refresh_in_ms(time_t expiration, time_t now)
{
	uint64_t left;

	if (expiration <= now)
		return CREDS_MIN_REFRESH_MS;
	left = (uint64_t)(expiration - now) * 1000;
	left = left * 6 / 10;
	return left < CREDS_MIN_REFRESH_MS ? CREDS_MIN_REFRESH_MS : left;
}

/* A string member, or NULL if absent, of another type, or holding a NUL
 * ("\u0000"), which would cut it short of what the document says. */
static const char *
get_str(struct json_object *o, const char *key)
{
	struct json_object *v;
	const char *s;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	s = json_object_get_string(v);
	if (strlen(s) != (size_t)json_object_get_string_len(v))
		return NULL;
	return s;
}

int
creds_parse_imds(const char *json, size_t len, struct cloud_creds *c,
    char *err, size_t errlen)
{
	struct json_tokener *tok;
	struct json_object *o = NULL, *v;
	const char *code, *akid, *secret, *token, *exp;
	int rc = -1;

	memset(c, 0, sizeof(*c));
	if (len > 64 * 1024) {
		snprintf(err, errlen, "credentials document over 64 KiB");
		return -1;
	}
	if ((tok = json_tokener_new()) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	o = json_tokener_parse_ex(tok, json, (int)len);
	if (o == NULL || json_tokener_get_error(tok) != json_tokener_success ||
	    (size_t)json_tokener_get_parse_end(tok) != len)
		BAD("credentials document is not one JSON object");
	if (!json_object_is_type(o, json_type_object))
		BAD("credentials document is not a JSON object");
	/* Any string Code but exactly "Success" is a refusal, one with a
	 * NUL in it too. */
	if (json_object_object_get_ex(o, "Code", &v) &&
	    json_object_is_type(v, json_type_string)) {
		code = json_object_get_string(v);
		if (strcmp(code, "Success") != 0 ||
		    json_object_get_string_len(v) != (int)strlen("Success"))
			BAD("credentials document says Code \"%.64s\"", code);
	}
	akid = get_str(o, "AccessKeyId");
	secret = get_str(o, "SecretAccessKey");
	token = get_str(o, "Token");
	exp = get_str(o, "Expiration");
	if (akid == NULL || !creds_text_ok(akid, sizeof(c->access_key_id)))
		BAD("credentials: AccessKeyId missing or invalid");
	if (secret == NULL ||
	    !creds_text_ok(secret, sizeof(c->secret_access_key)))
		BAD("credentials: SecretAccessKey missing or invalid");
	if (token == NULL || !creds_text_ok(token, sizeof(c->session_token)))
		BAD("credentials: Token missing or invalid");
	if (exp == NULL || iso8601_parse(exp, &c->expiration) == -1)
		BAD("credentials: Expiration missing or not ISO 8601");
	snprintf(c->access_key_id, sizeof(c->access_key_id), "%s", akid);
	snprintf(c->secret_access_key, sizeof(c->secret_access_key), "%s",
	    secret);
	snprintf(c->session_token, sizeof(c->session_token), "%s", token);
	rc = 0;
out:
	if (o != NULL)
		json_object_put(o);
	json_tokener_free(tok);
	if (rc == -1)
		memset(c, 0, sizeof(*c));
	return rc;
}

int
imds_first_line(const char *text, size_t len, char *out, size_t size)
{
	size_t i;

	for (i = 0; i < len && text[i] != '\n' && text[i] != '\r'; i++) {
		char ch = text[i];

		if (i + 1 >= size || i >= 127)
			return -1;
		if (!(isascii((unsigned char)ch) &&
		    (isalnum((unsigned char)ch) || strchr("+=,.@_-", ch))) ||
		    ch == '\0')
			return -1;
		out[i] = ch;
	}
	if (i == 0)
		return -1;
	out[i] = '\0';
	return 0;
}

int
imds_token(const char *body, size_t len, char *out, size_t size)
{
	/* creds_text_ok() stops at a NUL: one inside would cut the token
	 * we send back short of the one IMDS gave. */
	if (len == 0 || len >= size || memchr(body, '\0', len) != NULL ||
	    !creds_text_ok(body, size))
		return -1;
	memcpy(out, body, len);
	out[len] = '\0';
	return 0;
}

int
imds_region(const char *body, size_t len, char *out, size_t size)
{
	if (len == 0 || len >= size)
		return -1;
	memcpy(out, body, len);
	out[len] = '\0';
	/* ec2_name_ok() stops at a NUL: the whole answer must pass. */
	if (strlen(out) != len || !ec2_name_ok(out, size)) {
		out[0] = '\0';
		return -1;
	}
	return 0;
}

int
imds_text(const char *body, size_t len, char *out, size_t size)
{
	size_t n = len;

	while (n > 0 && (body[n - 1] == '\n' || body[n - 1] == '\r'))
		n--;
	if (n == 0 || n >= size || memchr(body, '\0', n) != NULL)
		return -1;
	memcpy(out, body, n);
	out[n] = '\0';
	return ec2_tag_text_ok(out, size) ? 0 : -1;
}

int
imds_cidr_lines(const char *body, size_t len,
    struct ip_prefix cidrs[MSG_MAX_CIDRS], uint32_t *ncidrs)
{
	char line[64];
	size_t i = 0, j;

	*ncidrs = 0;
	while (i < len) {
		for (j = 0; i < len && body[i] != '\n'; i++) {
			/* a NUL would end the line for ip_prefix_parse() and
			 * hide what follows it */
			if (j + 1 >= sizeof(line) || body[i] == '\0')
				goto bad;
			line[j++] = body[i];
		}
		i++;
		while (j > 0 && line[j - 1] == '\r')
			j--;
		line[j] = '\0';
		if (j == 0)
			continue;
		if (*ncidrs == MSG_MAX_CIDRS)
			goto bad;
		/* vpc-ipv4-cidr-blocks: IPv4 only */
		if (ip_prefix_parse(line, &cidrs[*ncidrs], NULL) == -1 ||
		    cidrs[*ncidrs].addr.family != AF_INET)
			goto bad;
		(*ncidrs)++;
	}
	if (*ncidrs > 0)
		return 0;
bad:
	*ncidrs = 0;
	return -1;
}

/*
 * The next line of body from *at: into line (size bytes, the CRs at its
 * end dropped), 1; 0 at the end; -1 for a NUL or a line too long.
 */
static int
next_line(const char *body, size_t len, size_t *at, char *line, size_t size)
{
	size_t i = *at, j = 0;

	if (i >= len)
		return 0;
	for (; i < len && body[i] != '\n'; i++) {
		if (j + 1 >= size || body[i] == '\0')
			return -1;
		line[j++] = body[i];
	}
	*at = i + 1;
	while (j > 0 && line[j - 1] == '\r')
		j--;
	line[j] = '\0';
	return 1;
}

int
imds_cidr6_lines(const char *body, size_t len, unsigned minlen,
    unsigned maxlen, struct ip_prefix *out, uint32_t max, uint32_t *n,
    uint32_t *nbad, char *bad, size_t badlen)
{
	char line[64];
	const char *why;
	struct ip_prefix p;
	size_t at = 0;
	int rc;

	*n = *nbad = 0;
	if (badlen > 0)
		bad[0] = '\0';
	while ((rc = next_line(body, len, &at, line, sizeof(line))) == 1) {
		if (line[0] == '\0')
			continue;
		why = "more blocks than enid keeps";
		if (*n < max && ec2_cidr6_parse(line, minlen, maxlen, &p,
		    &why) == 0) {
			out[(*n)++] = p;
			continue;
		}
		if ((*nbad)++ == 0 && badlen > 0) {
			ec2_sanitize(line);
			snprintf(bad, badlen, "\"%s\": %s", line,
			    why != NULL ? why : "not an IPv6 block");
		}
	}
	if (rc == -1) {
		*n = 0;
		return -1;
	}
	return 0;
}

int
imds_ip6_first(const char *body, size_t len, struct ip_addr *out, char *bad,
    size_t badlen, const char **why)
{
	char line[64];
	size_t at = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if (badlen > 0)
		bad[0] = '\0';
	if (why != NULL)
		*why = NULL;
	while ((rc = next_line(body, len, &at, line, sizeof(line))) == 1 &&
	    line[0] == '\0')
		;
	if (rc == -1) {
		if (why != NULL)
			*why = "not a line of text";
		return -1;
	}
	if (rc == 0)
		return -1;
	if (ec2_ip6_parse(line, out, why) == 0)
		return 0;
	ec2_sanitize(line);
	if (badlen > 0)
		snprintf(bad, badlen, "%s", line);
	return -1;
}
