/*
 * Reading the broker's answer line (see answer.h).  A parser of its own,
 * not json-c's: json-c keeps the last of two equal keys silently and
 * passes invalid UTF-8 on, and an answer from a process the plugin does
 * not trust must be exactly what the broker sends or nothing.
 *
 * The line is one JSON object whose values are strings, integers,
 * booleans or (vpc_cidrs) an array of strings; each key appears once and
 * belongs to the command's answer; each string is valid UTF-8 without
 * NUL; after the object comes only the newline.  Then each field's
 * meaning is checked: each address of the family its field holds (IPv4
 * in dotted quads, IPv6 in RFC 5952's one text), "prefix" 32, CIDRs with
 * no host bits, "subnet6" a /64, lengths within the fixed buffers.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "addr.h"
#include "answer.h"

#define DEPTH_MAX	8	/* nesting skipped over in a wrong value */

enum kind { K_BOOL, K_STR, K_INT, K_CIDRS };

/* Which commands' ok answers carry a field; errors carry only the first
 * three. */
#define F_ADD		(1u << CNI_CMD_ADD)
#define F_CHECK		(1u << CNI_CMD_CHECK)
#define F_GC		(1u << CNI_CMD_GC)
#define F_STATUS	(1u << CNI_CMD_STATUS)
#define F_POD		(F_ADD | F_CHECK)
#define F_ANY		0xffffu

enum field {
	A_OK, A_CODE, A_ERROR,
	A_IP, A_PREFIX, A_ENI, A_ENI_MAC, A_TABLE, A_SUBNET, A_SUBNET_GW,
	A_VPC_CIDRS, A_IP6, A_SUBNET6,
	A_FREE, A_ASSIGNED, A_AVAILABLE, A_REASON, A_LOST, A_LIMITED,
	A_RELEASED,
	A_NFIELDS
};

static const struct {
	const char	*name;
	enum kind	 kind;
	unsigned	 ops;
} fields[A_NFIELDS] = {
	[A_OK] =	{ "ok",			K_BOOL,  F_ANY },
	[A_CODE] =	{ "code",		K_STR,   F_STATUS },
	[A_ERROR] =	{ "error",		K_STR,   0 },
	[A_IP] =	{ "ip",			K_STR,   F_POD },
	[A_PREFIX] =	{ "prefix",		K_INT,   F_POD },
	[A_ENI] =	{ "eni",		K_STR,   F_POD },
	[A_ENI_MAC] =	{ "eni_mac",		K_STR,   F_POD },
	[A_TABLE] =	{ "table",		K_INT,   F_POD },
	[A_SUBNET] =	{ "subnet",		K_STR,   F_POD },
	[A_SUBNET_GW] =	{ "subnet_gateway",	K_STR,   F_POD },
	[A_VPC_CIDRS] =	{ "vpc_cidrs",		K_CIDRS, F_POD },
	[A_IP6] =	{ "ip6",		K_STR,   F_POD },
	[A_SUBNET6] =	{ "subnet6",		K_STR,   F_POD },
	[A_FREE] =	{ "free",		K_INT,   F_STATUS },
	[A_ASSIGNED] =	{ "assigned",		K_INT,   F_STATUS },
	[A_AVAILABLE] =	{ "available",		K_BOOL,  F_STATUS },
	[A_REASON] =	{ "reason",		K_STR,   F_STATUS },
	[A_LOST] =	{ "lost_pods",		K_INT,   F_STATUS },
	[A_LIMITED] =	{ "limited_reason",	K_STR,   F_STATUS },
	[A_RELEASED] =	{ "released",		K_INT,   F_GC },
};

struct parser {
	const char	*p, *end;
	const char	*base;
	struct cni_error *e;
};

static int
refuse(struct parser *ps, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
refuse(struct parser *ps, const char *fmt, ...)
{
	va_list ap;
	int n;

	ps->e->code = CNI_ERR_ANSWER;
	n = snprintf(ps->e->msg, sizeof(ps->e->msg), "enid's answer: ");
	va_start(ap, fmt);
	vsnprintf(ps->e->msg + n, sizeof(ps->e->msg) - (size_t)n, fmt, ap);
	va_end(ap);
	snprintf(ps->e->details, sizeof(ps->e->details), "enid-cni: "
	    "answer refused");
	return -1;
}

/* Raw bytes as printable ASCII for a message: at most 48 of them. */
static void
shown(const char *s, size_t len, char *out, size_t size)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, n = 0;

	for (i = 0; i < len && i < 48 && n + 5 < size; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c >= ' ' && c <= '~' && c != '\\')
			out[n++] = (char)c;
		else {
			out[n++] = '\\';
			out[n++] = 'x';
			out[n++] = hex[c >> 4];
			out[n++] = hex[c & 0xf];
		}
	}
	if (i < len && n + 4 < size) {
		memcpy(out + n, "...", 3);
		n += 3;
	}
	out[n] = '\0';
}

static void
ws(struct parser *ps)
{
	while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' ||
	    *ps->p == '\r' || *ps->p == '\n'))
		ps->p++;
}

static bool
at(struct parser *ps, char c)
{
	ws(ps);
	return ps->p < ps->end && *ps->p == c;
}

/* One UTF-8 sequence at s (of at most left bytes): its length, or 0. */
static size_t
utf8_len(const unsigned char *s, size_t left)
{
	uint32_t cp;
	size_t n, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (n > left)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates and beyond U+10FFFF. */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

static int
hex4(struct parser *ps, uint32_t *v)
{
	int i;

	*v = 0;
	if (ps->end - ps->p < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		char c = ps->p[i];

		*v <<= 4;
		if (c >= '0' && c <= '9')
			*v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			*v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			*v |= (uint32_t)(c - 'A' + 10);
		else
			return -1;
	}
	ps->p += 4;
	return 0;
}

static size_t
put_utf8(uint32_t cp, char *o)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/*
 * A string at ps->p (its opening quote), decoded into out (size bytes,
 * NUL-terminated) when out is not NULL.  what names it in errors.
 */
static int
string(struct parser *ps, const char *what, char *out, size_t size)
{
	const char *start = ps->p;
	size_t n = 0, k;
	char buf[4], raw[200];

	ps->p++;
	for (;;) {
		const char *piece = buf;
		size_t plen;

		if (ps->p >= ps->end)
			return refuse(ps, "%s: the string is not closed", what);
		if (*ps->p == '"') {
			ps->p++;
			break;
		}
		if ((unsigned char)*ps->p < 0x20)
			return refuse(ps, "%s: a control byte 0x%02x in a "
			    "string", what, (unsigned char)*ps->p);
		if (*ps->p == '\\') {
			uint32_t cp, lo;

			if (++ps->p >= ps->end)
				return refuse(ps, "%s: the string is not "
				    "closed", what);
			switch (*ps->p++) {
			case '"': buf[0] = '"'; plen = 1; break;
			case '\\': buf[0] = '\\'; plen = 1; break;
			case '/': buf[0] = '/'; plen = 1; break;
			case 'b': buf[0] = '\b'; plen = 1; break;
			case 'f': buf[0] = '\f'; plen = 1; break;
			case 'n': buf[0] = '\n'; plen = 1; break;
			case 'r': buf[0] = '\r'; plen = 1; break;
			case 't': buf[0] = '\t'; plen = 1; break;
			case 'u':
				if (hex4(ps, &cp) == -1)
					return refuse(ps, "%s: a broken \\u "
					    "escape", what);
				if (cp >= 0xdc00 && cp <= 0xdfff)
					return refuse(ps, "%s: a lone low "
					    "surrogate \\u%04x", what, cp);
				if (cp >= 0xd800 && cp <= 0xdbff) {
					if (ps->end - ps->p < 2 ||
					    ps->p[0] != '\\' || ps->p[1] != 'u')
						return refuse(ps, "%s: a lone "
						    "high surrogate \\u%04x",
						    what, cp);
					ps->p += 2;
					if (hex4(ps, &lo) == -1 ||
					    lo < 0xdc00 || lo > 0xdfff)
						return refuse(ps, "%s: a broken "
						    "surrogate pair", what);
					cp = 0x10000 + ((cp - 0xd800) << 10) +
					    (lo - 0xdc00);
				}
				if (cp == 0)
					return refuse(ps, "%s: a NUL (\\u0000) "
					    "in a string", what);
				plen = put_utf8(cp, buf);
				break;
			default:
				return refuse(ps, "%s: an unknown escape "
				    "\\%c", what, ps->p[-1] >= ' ' &&
				    ps->p[-1] <= '~' ? ps->p[-1] : '?');
			}
		} else {
			if ((plen = utf8_len((const unsigned char *)ps->p,
			    (size_t)(ps->end - ps->p))) == 0)
				return refuse(ps, "%s: not valid UTF-8 at byte "
				    "%zu of the line (0x%02x)", what,
				    (size_t)(ps->p - ps->base),
				    (unsigned char)*ps->p);
			piece = ps->p;
			ps->p += plen;
		}
		if (out == NULL)
			continue;
		if (n + plen >= size) {
			shown(start, (size_t)(ps->end - start), raw,
			    sizeof(raw));
			return refuse(ps, "%s is longer than %zu bytes: %s",
			    what, size - 1, raw);
		}
		for (k = 0; k < plen; k++)
			out[n++] = piece[k];
	}
	if (out != NULL)
		out[n] = '\0';
	return 0;
}

/* Any value, skipped (its text is shown when its type is wrong). */
static int
skip(struct parser *ps, const char *what, int depth)
{
	if (depth > DEPTH_MAX)
		return refuse(ps, "%s is nested deeper than %d", what,
		    DEPTH_MAX);
	ws(ps);
	if (ps->p >= ps->end)
		return refuse(ps, "%s: the line ends inside the object", what);
	if (*ps->p == '"')
		return string(ps, what, NULL, 0);
	if (*ps->p == '{' || *ps->p == '[') {
		char close = *ps->p == '{' ? '}' : ']';
		bool obj = close == '}';

		ps->p++;
		if (at(ps, close)) {
			ps->p++;
			return 0;
		}
		for (;;) {
			if (obj) {
				if (!at(ps, '"'))
					return refuse(ps, "%s: an object "
					    "key is not a string", what);
				if (string(ps, what, NULL, 0) == -1)
					return -1;
				if (!at(ps, ':'))
					return refuse(ps, "%s: ':' expected",
					    what);
				ps->p++;
			}
			if (skip(ps, what, depth + 1) == -1)
				return -1;
			if (at(ps, ',')) {
				ps->p++;
				continue;
			}
			if (at(ps, close)) {
				ps->p++;
				return 0;
			}
			return refuse(ps, "%s: ',' or '%c' expected", what,
			    close);
		}
	}
	/* A bare word or number: letters, digits, sign, point, exponent. */
	{
		const char *s = ps->p;

		while (ps->p < ps->end && ((*ps->p >= 'a' && *ps->p <= 'z') ||
		    (*ps->p >= '0' && *ps->p <= '9') || *ps->p == '-' ||
		    *ps->p == '+' || *ps->p == '.' || *ps->p == 'E'))
			ps->p++;
		if (ps->p == s)
			return refuse(ps, "%s: a value expected, not 0x%02x",
			    what, (unsigned char)*s);
	}
	return 0;
}

static const char *
kind_name(enum kind k)
{
	switch (k) {
	case K_BOOL:	return "true or false";
	case K_STR:	return "a string";
	case K_INT:	return "an integer";
	case K_CIDRS:	return "an array of CIDR strings";
	}
	return "?";
}

/* The value's text, skipped, in a "must be" refusal. */
static int
wrong_type(struct parser *ps, const char *what, enum kind k)
{
	const char *s;
	char raw[200];

	ws(ps);
	s = ps->p;
	if (skip(ps, what, 0) == -1)
		return -1;
	shown(s, (size_t)(ps->p - s), raw, sizeof(raw));
	return refuse(ps, "%s must be %s, not %s", what, kind_name(k), raw);
}

static int
boolean(struct parser *ps, const char *what, bool *v)
{
	ws(ps);
	if (ps->end - ps->p >= 4 && memcmp(ps->p, "true", 4) == 0)
		*v = true, ps->p += 4;
	else if (ps->end - ps->p >= 5 && memcmp(ps->p, "false", 5) == 0)
		*v = false, ps->p += 5;
	else
		return wrong_type(ps, what, K_BOOL);
	if (ps->p < ps->end && *ps->p >= 'a' && *ps->p <= 'z')
		return wrong_type(ps, what, K_BOOL);
	return 0;
}

/* A JSON integer from 0 to 2^32-1 (no sign, fraction or exponent). */
static int
integer(struct parser *ps, const char *what, int64_t *v)
{
	const char *s;
	char raw[200];

	ws(ps);
	s = ps->p;
	*v = 0;
	if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
		return wrong_type(ps, what, K_INT);
	if (*ps->p == '0' && ps->end - ps->p > 1 && ps->p[1] >= '0' &&
	    ps->p[1] <= '9')
		goto bad;
	while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
		*v = *v * 10 + (*ps->p++ - '0');
		if (*v > UINT32_MAX)
			goto bad;
	}
	if (ps->p < ps->end && (*ps->p == '.' || *ps->p == 'e' ||
	    *ps->p == 'E'))
		goto bad;
	return 0;
bad:
	ps->p = s;
	if (skip(ps, what, 0) == -1)
		return -1;
	shown(s, (size_t)(ps->p - s), raw, sizeof(raw));
	return refuse(ps, "%s must be an integer from 0 to %u, not %s", what,
	    UINT32_MAX, raw);
}

/*
 * A string holding an address of family (ip), or a CIDR block with no
 * host bits (cidr; family 0 for either), in the one text common/addr.c
 * takes for it.
 */
static int
addr_str(struct parser *ps, const char *what, int family, struct ip_addr *ip,
    struct ip_prefix *cidr)
{
	char s[IP_PREFIX_STR_LEN + 8], raw[200];
	const char *start, *want;
	struct ip_prefix p;
	struct ip_addr a;

	ws(ps);
	if (!at(ps, '"'))
		return wrong_type(ps, what, K_STR);
	start = ps->p;
	if (string(ps, what, s, sizeof(s)) == -1)
		return -1;
	if (cidr != NULL ? ip_prefix_parse(s, &p, NULL) == 0 &&
	    (family == 0 || p.addr.family == family) &&
	    ip_prefix_is_network(&p) :
	    ip_addr_parse(s, &a, NULL) == 0 && a.family == family) {
		if (cidr != NULL)
			*cidr = p;
		else
			*ip = a;
		return 0;
	}
	if (cidr != NULL)
		want = family == AF_INET ? "a CIDR block a.b.c.d/n with no "
		    "host bits" : family == AF_INET6 ? "an IPv6 CIDR block "
		    "in RFC 5952 text with no host bits" : "a CIDR block "
		    "(a.b.c.d/n, or IPv6 in RFC 5952 text) with no host bits";
	else
		want = family == AF_INET ? "an IPv4 address a.b.c.d" :
		    "an IPv6 address in RFC 5952 text";
	shown(start, (size_t)(ps->p - start), raw, sizeof(raw));
	return refuse(ps, "%s %s is not %s", what, raw, want);
}

/* The VPC's CIDR blocks: its IPv4 ones, then its IPv6 ones, up to each
 * family's cap, an IPv6 one no wider than a /32 nor narrower than a
 * /64. */
static int
cidr_list(struct parser *ps, const char *what, struct cni_answer *a)
{
	size_t n4 = 0, n6 = 0;
	char text[IP_PREFIX_STR_LEN];

	ws(ps);
	if (!at(ps, '['))
		return wrong_type(ps, what, K_CIDRS);
	ps->p++;
	if (at(ps, ']')) {
		ps->p++;
		return 0;
	}
	for (;;) {
		struct ip_prefix *c = &a->cidrs[a->ncidrs];

		if (a->ncidrs == CNI_ANS_CIDRS)
			return refuse(ps, "%s has more than %d entries", what,
			    CNI_ANS_CIDRS);
		if (addr_str(ps, what, 0, NULL, c) == -1)
			return -1;
		ip_prefix_format(c, text);
		if (c->addr.family == AF_INET && n6 > 0)
			return refuse(ps, "%s: the IPv4 block %s comes after "
			    "an IPv6 one", what, text);
		if (c->addr.family == AF_INET && ++n4 > CNI_ANS_CIDRS4)
			return refuse(ps, "%s has more than %d IPv4 blocks",
			    what, CNI_ANS_CIDRS4);
		if (c->addr.family == AF_INET6 && ++n6 > CNI_ANS_CIDRS6)
			return refuse(ps, "%s has more than %d IPv6 blocks",
			    what, CNI_ANS_CIDRS6);
		if (c->addr.family == AF_INET6 &&
		    (c->len < CNI_ANS_CIDR6_MIN || c->len > CNI_ANS_CIDR6_MAX))
			return refuse(ps, "%s: the IPv6 block %s is not a /%d "
			    "to /%d", what, text, CNI_ANS_CIDR6_MIN,
			    CNI_ANS_CIDR6_MAX);
		a->ncidrs++;
		if (at(ps, ',')) {
			ps->p++;
			continue;
		}
		if (at(ps, ']')) {
			ps->p++;
			return 0;
		}
		return refuse(ps, "%s: ',' or ']' expected", what);
	}
}

/* Printable text in a code: a-z, 0-9 and '-', as the broker's are. */
static bool
code_ok(const char *s)
{
	if (*s == '\0')
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
		    *s == '-'))
			return false;
	return true;
}

static int
value(struct parser *ps, enum field f, struct cni_answer *a)
{
	char what[48], s[CNI_ANS_TEXT_LEN];
	int64_t n;

	snprintf(what, sizeof(what), "\"%s\"", fields[f].name);
	ws(ps);
	switch (f) {
	case A_OK:
		return boolean(ps, what, &a->ok);
	case A_AVAILABLE:
		return boolean(ps, what, &a->available);
	case A_CODE:
		if (!at(ps, '"'))
			return wrong_type(ps, what, K_STR);
		if (string(ps, what, a->code, sizeof(a->code)) == -1)
			return -1;
		if (!code_ok(a->code)) {
			shown(a->code, strlen(a->code), s, sizeof(s));
			return refuse(ps, "%s \"%s\" is not a code (a-z, 0-9 "
			    "and -)", what, s);
		}
		return 0;
	case A_ERROR:
	case A_REASON:
	case A_LIMITED:
		if (!at(ps, '"'))
			return wrong_type(ps, what, K_STR);
		return string(ps, what, f == A_ERROR ? a->error : f ==
		    A_REASON ? a->reason : s, CNI_ANS_TEXT_LEN);
	case A_ENI:
		if (!at(ps, '"'))
			return wrong_type(ps, what, K_STR);
		return string(ps, what, a->eni, sizeof(a->eni));
	case A_ENI_MAC:
		if (!at(ps, '"'))
			return wrong_type(ps, what, K_STR);
		if (string(ps, what, s, 32) == -1)
			return -1;
		if (mac_parse(s, a->eni_mac) == -1) {
			char raw[200];

			shown(s, strlen(s), raw, sizeof(raw));
			return refuse(ps, "%s \"%s\" is not a MAC address",
			    what, raw);
		}
		return 0;
	case A_IP:
		return addr_str(ps, what, AF_INET, &a->ip, NULL);
	case A_IP6:
		return addr_str(ps, what, AF_INET6, &a->ip6, NULL);
	case A_SUBNET_GW:
		return addr_str(ps, what, AF_INET, &a->subnet_gateway, NULL);
	case A_SUBNET:
		a->have_subnet = true;
		return addr_str(ps, what, AF_INET, NULL, &a->subnet);
	case A_SUBNET6:
		a->have_subnet6 = true;
		if (addr_str(ps, what, AF_INET6, NULL, &a->subnet6) == -1)
			return -1;
		/* An EC2 subnet's IPv6 block is a /64, nothing else. */
		if (a->subnet6.len != CNI_ANS_SUBNET6_LEN) {
			char text[IP_PREFIX_STR_LEN];

			ip_prefix_format(&a->subnet6, text);
			return refuse(ps, "%s %s is not a /%d", what, text,
			    CNI_ANS_SUBNET6_LEN);
		}
		return 0;
	case A_VPC_CIDRS:
		return cidr_list(ps, what, a);
	case A_PREFIX:
		if (integer(ps, what, &n) == -1)
			return -1;
		/* The pod's address is a /32 whatever the subnet. */
		if (n != 32)
			return refuse(ps, "%s is %lld, not 32", what,
			    (long long)n);
		return 0;
	case A_TABLE:
		if (integer(ps, what, &n) == -1)
			return -1;
		a->table = (uint32_t)n;
		return 0;
	case A_LOST:
		return integer(ps, what, &a->lost_pods);
	case A_RELEASED:
		return integer(ps, what, &a->released);
	case A_FREE:
	case A_ASSIGNED:
		return integer(ps, what, &n);
	case A_NFIELDS:
		break;
	}
	return refuse(ps, "%s: no such field (bug)", what);
}

int
cni_answer_parse(enum cni_cmd cmd, const char *buf, size_t len,
    struct cni_answer *a, struct cni_error *e)
{
	struct parser ps = { buf, buf + len, buf, e };
	bool seen[A_NFIELDS];
	char key[64], raw[200];
	const char *kstart;
	unsigned mask = 1u << cmd;
	size_t i;

	memset(a, 0, sizeof(*a));
	memset(seen, 0, sizeof(seen));
	memset(e, 0, sizeof(*e));
	if (len == 0 || buf[len - 1] != '\n')
		return refuse(&ps, "the line does not end with a newline");
	ps.end--;
	if (memchr(buf, '\0', len) != NULL)
		return refuse(&ps, "a NUL byte at byte %zu of the line",
		    (size_t)((const char *)memchr(buf, '\0', len) - buf));
	if (!at(&ps, '{')) {
		shown(buf, len - 1, raw, sizeof(raw));
		return refuse(&ps, "not a JSON object: %s", raw);
	}
	ps.p++;
	if (!at(&ps, '}'))
		for (;;) {
			enum field f;

			if (!at(&ps, '"'))
				return refuse(&ps, "a key expected at byte "
				    "%zu", (size_t)(ps.p - buf));
			kstart = ps.p;
			if (string(&ps, "a key", key, sizeof(key)) == -1)
				return -1;
			for (f = 0; f < A_NFIELDS; f++)
				if (strcmp(fields[f].name, key) == 0)
					break;
			if (f == A_NFIELDS) {
				shown(kstart, (size_t)(ps.p - kstart), raw,
				    sizeof(raw));
				return refuse(&ps, "unknown field %s", raw);
			}
			if (seen[f])
				return refuse(&ps, "field \"%s\" appears twice",
				    key);
			seen[f] = true;
			if (!at(&ps, ':'))
				return refuse(&ps, "':' expected after \"%s\"",
				    key);
			ps.p++;
			if (value(&ps, f, a) == -1)
				return -1;
			if (at(&ps, ',')) {
				ps.p++;
				continue;
			}
			if (at(&ps, '}'))
				break;
			return refuse(&ps, "',' or '}' expected after \"%s\"",
			    key);
		}
	ps.p++;
	ws(&ps);
	if (ps.p != ps.end) {
		shown(ps.p, (size_t)(ps.end - ps.p), raw, sizeof(raw));
		return refuse(&ps, "text after the object: %s", raw);
	}

	/* The fields together. */
	if (!seen[A_OK])
		return refuse(&ps, "no \"ok\"");
	if (!a->ok) {
		for (i = A_ERROR + 1; i < A_NFIELDS; i++)
			if (seen[i])
				return refuse(&ps, "field \"%s\" in a failed "
				    "answer", fields[i].name);
		if (!seen[A_CODE])
			return refuse(&ps, "a failed answer without \"code\"");
		return 0;
	}
	for (i = 0; i < A_NFIELDS; i++)
		if (seen[i] && i != A_OK && !(fields[i].ops & mask))
			return refuse(&ps, "field \"%s\" in an answer to %s",
			    fields[i].name, cmd == CNI_CMD_ADD ? "ADD" :
			    cmd == CNI_CMD_DEL ? "DEL" : cmd == CNI_CMD_CHECK ?
			    "CHECK" : cmd == CNI_CMD_GC ? "GC" : "STATUS");
	if ((cmd == CNI_CMD_ADD || cmd == CNI_CMD_CHECK) && !seen[A_IP] &&
	    !seen[A_IP6])
		return refuse(&ps, "no \"ip\" (nor \"ip6\")");
	/* Each family's fields come with its address: an IPv6-only pod's
	 * answer has none of IPv4's. */
	for (i = 0; i < A_NFIELDS; i++)
		if (seen[i] && (i == A_PREFIX || i == A_SUBNET ||
		    i == A_SUBNET_GW) && !seen[A_IP])
			return refuse(&ps, "field \"%s\" without \"ip\"",
			    fields[i].name);
	if (seen[A_SUBNET6] && !seen[A_IP6])
		return refuse(&ps, "field \"subnet6\" without \"ip6\"");
	if (cmd == CNI_CMD_STATUS && !seen[A_AVAILABLE])
		return refuse(&ps, "no \"available\"");
	return 0;
}

const char *
cni_addr_special(const struct ip_addr *ip)
{
	struct ip_addr gw;

	if ((ip->family != AF_INET && ip->family != AF_INET6) ||
	    !ip_addr_valid(ip))
		return "neither an IPv4 nor an IPv6 address";
	if (ip->family == AF_INET6) {
		if (ip_addr_is_unspecified(ip))
			return "the unspecified address ::";
		if (ip_addr_is_loopback(ip))
			return "the loopback address ::1";
		/* NAT64's 64:ff9b:: lies in ::/8 too: named first. */
		if (ip_addr_is_ipv4_embedded(ip))
			return "IPv4-embedded (IPv4-mapped ::ffff:0:0/96, or "
			    "NAT64's 64:ff9b::/96 or 64:ff9b:1::/48)";
		if (ip_addr_is_reserved(ip))
			return "in ::/8 (reserved: IPv4-compatible and "
			    "unspecified forms)";
		if (ip_addr_parse(CNI_GATEWAY6, &gw, NULL) == 0 &&
		    ip_addr_eq(ip, &gw))
			return "the pods' own link-local gateway "
			    CNI_GATEWAY6;
		if (ip_addr_is_link_local(ip))
			return "in fe80::/10 (link-local: EC2's router is "
			    "fe80:ec2::1 there)";
		if (ip_addr_is_multicast(ip))
			return "in ff00::/8 (multicast)";
		/* EC2's services on every Nitro ENI */
		return ip_addr_ec2_service(ip);
	}
	if (ip->bytes[0] == 255 && ip->bytes[1] == 255 &&
	    ip->bytes[2] == 255 && ip->bytes[3] == 255)
		return "the broadcast address";
	if (ip_addr_is_reserved(ip))
		return ip->bytes[0] == 0 ? "in 0.0.0.0/8 (this network)" :
		    "in 240.0.0.0/4 (reserved)";
	if (ip_addr_is_loopback(ip))
		return "in 127.0.0.0/8 (loopback)";
	if (ip_addr_parse(CNI_GATEWAY, &gw, NULL) == 0 &&
	    ip_addr_eq(ip, &gw))
		return "the pods' own link-local gateway " CNI_GATEWAY;
	if (ip_addr_is_link_local(ip))
		return "in 169.254.0.0/16 (link-local: the instance "
		    "metadata service and DNS live there)";
	if (ip_addr_is_multicast(ip))
		return "in 224.0.0.0/4 (multicast)";
	return NULL;
}

const char *
cni_addr_outside_vpc(const struct ip_addr *ip, const struct ip_prefix *cidrs,
    size_t n)
{
	size_t i;

	if (ip->family != AF_INET6)
		return NULL;
	for (i = 0; i < n; i++)
		if (ip_prefix_contains(&cidrs[i], ip))
			return NULL;
	/* A VPC may hold a ULA block of its own, then in cidrs. */
	if ((ip->bytes[0] & 0xfe) == 0xfc)
		return "a unique local address (fc00::/7) outside the VPC's "
		    "IPv6 blocks";
	return "outside the VPC's IPv6 blocks";
}
