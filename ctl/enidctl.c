/*
 * enidctl: the admin command.  Sends one request line to enid's control
 * socket and checks the answer as strictly as the daemon checks requests:
 * exactly one JSON object on one line and nothing after it, with a boolean
 * "ok", and on failure a string "code" and "error"; each field a command
 * prints must be there with its type.  Whatever the daemon says reaches
 * the terminal only escaped: no control character, C1 control or invalid
 * UTF-8 is printed raw.
 *
 * node-setup alone does not ask the daemon: it sets the node's IPv6
 * settings before enid starts (nodesetup.c).
 *
 * Exit status: 0 done, 1 the daemon is not there, refused, or answered
 * malformed (node-setup: a setting not set), 2 a usage error (enidctl(8)).
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "addr.h"
#include "conf.h"
#include "nodesetup.h"

#define CTL_ANSWER_MAX	(4 * 1024 * 1024)	/* the daemon's own cap */
#define CTL_TIMEOUT_MS	5000
/* A reconciliation is a few cloud calls, each with its own deadline in
 * the daemon; one asked for during a run waits for the next run too. */
#define CTL_RECONCILE_TIMEOUT_MS 120000
#define CTL_ID_MAX	63	/* the daemon's ids are shorter */

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr,
	    "usage: enidctl [-j] [-s socket] command [argument]\n"
	    "       enidctl [-f file] node-setup [--uplink LINK] "
	    "[--proc-sys DIR]\n"
	    "commands:\n"
	    "  status           the processes, the instance and the pool\n"
	    "  show pool        the pool's counts and why it can't grow\n"
	    "  show enis        each ENI: state, device, addresses, subnet\n"
	    "  show pods        each pod attachment: address, ENI, state\n"
	    "  show subnets     the subnets: range, zone, free addresses\n"
	    "  show config      the configuration in effect, without "
	    "secrets\n"
	    "  show limits      the instance's limits and the pool's from "
	    "them\n"
	    "  show snat        enid-netd's SNAT table: target, exclusions, "
	    "counters\n"
	    "  reconcile        reconcile with the cloud now, and wait\n"
	    "  drain ENI        no new pods on ENI; released once empty\n"
	    "  log-level LEVEL  error, warning, info or debug\n"
	    "  metrics          the metrics, in the Prometheus text format\n"
	    "  node-setup       as root, before enid starts: set the node's "
	    "IPv6 settings\n"
	    "                   that the configuration's ip_family needs\n"
	    "-j prints the daemon's answer as JSON; -f names the "
	    "configuration node-setup\n"
	    "reads (default " ENID_CONF_PATH ").\n");
	exit(2);
}

static int64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void __attribute__((noreturn))
nomem(void)
{
	fprintf(stderr, "enidctl: out of memory\n");
	exit(1);
}

static int
ctl_connect(const char *path)
{
	struct sockaddr_un sun;
	int fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		fprintf(stderr, "enidctl: %s: socket path too long\n", path);
		exit(1);
	}
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1 || connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		fprintf(stderr, "enidctl: %s: %s (is enid running?)\n", path,
		    strerror(errno));
		exit(1);
	}
	return fd;
}

static void __attribute__((noreturn, format(printf, 1, 2)))
malformed(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "enidctl: malformed answer: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/*
 * Read the answer line within the time limit; the caller frees it.  The
 * line must be all there is: bytes after its newline, whether they came
 * with it or are already waiting, are refused.
 */
static char *
read_answer(int fd, const char *path, int timeout_ms, const char *late,
    size_t *linelen)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap), *nl, extra;
	struct pollfd pfd = { fd, POLLIN, 0 };
	int64_t deadline = mono_ms() + timeout_ms, left;
	ssize_t n;

	if (buf == NULL) {
		fprintf(stderr, "enidctl: out of memory\n");
		exit(1);
	}
	for (;;) {
		/* One deadline for the whole answer, however it trickles. */
		left = deadline - mono_ms();
		if (left < 0 || poll(&pfd, 1, (int)left) != 1) {
			fprintf(stderr, "enidctl: %s: no answer within %d "
			    "s%s\n", path, timeout_ms / 1000, late);
			exit(1);
		}
		if (len + 1 >= cap) {
			if (cap >= CTL_ANSWER_MAX) {
				fprintf(stderr, "enidctl: %s: answer longer "
				    "than %d bytes\n", path, CTL_ANSWER_MAX);
				exit(1);
			}
			char *bigger = realloc(buf, cap * 2);

			if (bigger == NULL) {
				fprintf(stderr, "enidctl: out of memory\n");
				exit(1);
			}
			buf = bigger;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n <= 0) {
			fprintf(stderr, "enidctl: %s: connection closed "
			    "before a complete answer\n", path);
			exit(1);
		}
		len += (size_t)n;
		buf[len] = '\0';
		if ((nl = memchr(buf, '\n', len)) != NULL)
			break;
	}
	*linelen = (size_t)(nl - buf);
	if (*linelen + 1 != len ||
	    recv(fd, &extra, 1, MSG_DONTWAIT | MSG_PEEK) > 0)
		malformed("data after the answer line");
	if (memchr(buf, '\0', *linelen) != NULL)
		malformed("NUL byte in the answer line");
	*nl = '\0';
	return buf;
}

/*
 * Length of the UTF-8 sequence at s (at most n bytes) if it is valid and
 * encodes a character a terminal only displays: not a C1 control, not a
 * surrogate, not overlong, at most U+10FFFF.  0 otherwise.
 */
static size_t
utf8_printable(const unsigned char *s, size_t n)
{
	size_t len, i;
	uint32_t c, min;

	if (s[0] < 0xc2 || s[0] > 0xf4)
		return 0;	/* ASCII, a continuation byte, or overlong */
	if (s[0] < 0xe0) {
		len = 2;
		c = s[0] & 0x1f;
		min = 0x80;
	} else if (s[0] < 0xf0) {
		len = 3;
		c = s[0] & 0x0f;
		min = 0x800;
	} else {
		len = 4;
		c = s[0] & 0x07;
		min = 0x10000;
	}
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff) ||
	    (c >= 0x80 && c <= 0x9f))
		return 0;
	return len;
}

/*
 * A daemon string as it may reach a terminal: printable ASCII and
 * printable UTF-8 as they are, a backslash doubled, every other byte as
 * \xNN.  The caller frees the result.
 */
static char *
escape_text(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), i = 0, o = 0, k;
	char *out = malloc(n * 4 + 1);

	if (out == NULL) {
		fprintf(stderr, "enidctl: out of memory\n");
		exit(1);
	}
	while (i < n) {
		if (p[i] == '\\') {
			out[o++] = '\\';
			out[o++] = '\\';
			i++;
		} else if (p[i] >= 0x20 && p[i] < 0x7f) {
			out[o++] = (char)p[i++];
		} else if ((k = utf8_printable(p + i, n - i)) > 0) {
			memcpy(out + o, p + i, k);
			o += k;
			i += k;
		} else {
			o += (size_t)snprintf(out + o, 5, "\\x%02x", p[i++]);
		}
	}
	out[o] = '\0';
	return out;
}

/* Replace every string in the answer by its escaped form, so that no
 * daemon text is printed raw, whichever path prints it. */
static void
escape_tree(struct json_object *o)
{
	size_t i;
	char *e;

	switch (json_object_get_type(o)) {
	case json_type_string:
		e = escape_text(json_object_get_string(o));
		if (strcmp(e, json_object_get_string(o)) != 0 &&
		    json_object_set_string(o, e) == 0) {
			fprintf(stderr, "enidctl: out of memory\n");
			exit(1);
		}
		free(e);
		break;
	case json_type_array:
		for (i = 0; i < json_object_array_length(o); i++)
			escape_tree(json_object_array_get_idx(o, i));
		break;
	case json_type_object: {
		json_object_object_foreach(o, key, val) {
			(void)key;
			escape_tree(val);
		}
		break;
	}
	default:
		break;
	}
}

/*
 * Print the answer as JSON that is safe on a terminal.  json-c escapes
 * C0 controls already; DEL and C1 controls become \u escapes, and a byte
 * that is not UTF-8 becomes U+FFFD (JSON text is UTF-8 and can't carry
 * it).  Bytes from 0x7f up occur only inside strings, so the result is
 * the same JSON value otherwise.
 */
static void
print_json(struct json_object *o)
{
	const unsigned char *p = (const unsigned char *)
	    json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
	    JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
	size_t n = strlen((const char *)p), i = 0, k;

	while (i < n) {
		if (p[i] < 0x7f) {
			putchar(p[i++]);
		} else if ((k = utf8_printable(p + i, n - i)) > 0) {
			fwrite(p + i, 1, k, stdout);
			i += k;
		} else if (p[i] == 0xc2 && i + 1 < n && p[i + 1] >= 0x80 &&
		    p[i + 1] <= 0x9f) {
			printf("\\u%04x", p[i + 1]);	/* C1 control */
			i += 2;
		} else {
			printf("\\u%04x", p[i] == 0x7f ? 0x7f : 0xfffd);
			i++;
		}
	}
	putchar('\n');
}

static struct json_object *
field(struct json_object *o, const char *name, enum json_type type)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, name, &v) ||
	    !json_object_is_type(v, type)) {
		fprintf(stderr, "enidctl: malformed answer: \"%s\" missing or "
		    "not a %s\n", name, json_type_to_name(type));
		exit(1);
	}
	return v;
}

/*
 * Where the commands print: a memory stream, copied to stdout only once
 * the whole answer has passed its checks, so that a malformed one prints
 * nothing but the error.
 */
static FILE *out;

static void
putc_out(int c)
{
	fputc(c, out);
}

/* ---- answer fields ---- */

static const char *
str(struct json_object *o, const char *name)
{
	return json_object_get_string(field(o, name, json_type_string));
}

/* An address (either family, as common/addr writes it): refused with the
 * parser's reason otherwise. */
static const char *
addr_str(struct json_object *o, const char *name)
{
	const char *s = str(o, name), *why;
	struct ip_addr a;

	if (ip_addr_parse(s, &a, &why) != 0)
		malformed("\"%s\" is not an address: %s", name, why);
	return s;
}

/* An address field an answer may leave out (an IPv6-only pod has no
 * "ip"): "-" then; else checked as addr_str() does, of family. */
static const char *
addr_or_dash(struct json_object *o, const char *name, int family)
{
	const char *s, *why;
	struct ip_addr a;

	if (!json_object_object_get_ex(o, name, NULL))
		return "-";
	s = str(o, name);
	if (ip_addr_parse(s, &a, &why) != 0)
		malformed("\"%s\" is not an address: %s", name, why);
	if (a.family != family)
		malformed("\"%s\" %s is not an %s address", name, s,
		    family == AF_INET ? "IPv4" : "IPv6");
	return s;
}

/* Does any entry of arr have the field name? */
static bool
any_has(struct json_object *arr, const char *name)
{
	size_t i;

	for (i = 0; i < json_object_array_length(arr); i++)
		if (json_object_object_get_ex(json_object_array_get_idx(arr,
		    i), name, NULL))
			return true;
	return false;
}

/* A CIDR, its host bits clear. */
static const char *
prefix_text(const char *s, const char *name)
{
	const char *why;
	struct ip_prefix p;

	if (ip_prefix_parse(s, &p, &why) != 0)
		malformed("\"%s\" is not a CIDR: %s", name, why);
	if (!ip_prefix_is_network(&p))
		malformed("\"%s\" %s has host bits set", name, s);
	return s;
}

static const char *
prefix_str(struct json_object *o, const char *name)
{
	return prefix_text(str(o, name), name);
}

/* A count: an integer, not negative. */
static long long
count(struct json_object *o, const char *name)
{
	int64_t v = json_object_get_int64(field(o, name, json_type_int));

	if (v < 0) {
		fprintf(stderr, "enidctl: malformed answer: \"%s\" is "
		    "negative\n", name);
		exit(1);
	}
	return (long long)v;
}

static bool
flag(struct json_object *o, const char *name)
{
	return json_object_get_boolean(field(o, name, json_type_boolean));
}

/* A field an older enid does not send: NULL if absent, else checked as
 * field() checks. */
static struct json_object *
optional(struct json_object *o, const char *name, enum json_type type)
{
	if (!json_object_object_get_ex(o, name, NULL))
		return NULL;
	return field(o, name, type);
}

/* A field that is null when there is nothing to say: NULL then, else
 * checked as field() checks. */
static struct json_object *
nullable(struct json_object *o, const char *name, enum json_type type)
{
	struct json_object *v;

	if (json_object_object_get_ex(o, name, &v) &&
	    json_object_is_type(v, json_type_null))
		return NULL;
	return field(o, name, type);
}

/* Entry i of an array of objects. */
static struct json_object *
entry(struct json_object *arr, size_t i, const char *what)
{
	struct json_object *o = json_object_array_get_idx(arr, i);

	if (!json_object_is_type(o, json_type_object)) {
		fprintf(stderr, "enidctl: malformed answer: %s entry is not "
		    "an object\n", what);
		exit(1);
	}
	return o;
}

/* ---- tables ---- */

#define TABLE_MAX_COLS	8

/*
 * Columns as wide as their widest cell, one space apart; a heading that
 * starts with '>' is right-aligned (numbers).  The last column is not
 * padded, so a long value there (a pod's name) does not push the others.
 */
struct table {
	size_t		 ncols, ncells, cap;
	char		*head[TABLE_MAX_COLS];
	bool		 right[TABLE_MAX_COLS];
	char		**cell;
};

static void
table_init(struct table *t, const char *spec)
{
	char *copy = strdup(spec), *tok, *save = NULL;

	if (copy == NULL)
		nomem();
	memset(t, 0, sizeof(*t));
	for (tok = strtok_r(copy, " ", &save); tok != NULL &&
	    t->ncols < TABLE_MAX_COLS; tok = strtok_r(NULL, " ", &save)) {
		t->right[t->ncols] = tok[0] == '>';
		if ((t->head[t->ncols++] = strdup(tok + (tok[0] == '>'))) ==
		    NULL)
			nomem();
	}
	free(copy);
}

static void
table_add(struct table *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
table_add(struct table *t, const char *fmt, ...)
{
	va_list ap;
	char *c;

	if (t->ncells == t->cap) {
		char **more = reallocarray(t->cell, t->cap ? t->cap * 2 : 64,
		    sizeof(*more));

		if (more == NULL)
			nomem();
		t->cell = more;
		t->cap = t->cap ? t->cap * 2 : 64;
	}
	va_start(ap, fmt);
	if (vasprintf(&c, fmt, ap) == -1)
		nomem();
	va_end(ap);
	t->cell[t->ncells++] = c;
}

/* Terminal columns of escaped text: printable ASCII and UTF-8, one a
 * character. */
static size_t
text_width(const char *s)
{
	size_t n = 0;

	for (; *s != '\0'; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			n++;
	return n;
}

static void
table_line(const struct table *t, char *const *cells, const size_t *w)
{
	size_t i, pad;

	for (i = 0; i < t->ncols; i++) {
		pad = w[i] - text_width(cells[i]);
		if (i > 0)
			putc_out(' ');
		if (t->right[i])
			fprintf(out, "%*s%s", (int)pad, "", cells[i]);
		else if (i + 1 < t->ncols)
			fprintf(out, "%s%*s", cells[i], (int)pad, "");
		else
			fputs(cells[i], out);
	}
	putc_out('\n');
}

static void
table_free(struct table *t)
{
	size_t i;

	for (i = 0; i < t->ncells; i++)
		free(t->cell[i]);
	for (i = 0; i < t->ncols; i++)
		free(t->head[i]);
	free(t->cell);
}

static void
table_print(struct table *t)
{
	size_t w[TABLE_MAX_COLS], i;

	for (i = 0; i < t->ncols; i++)
		w[i] = text_width(t->head[i]);
	for (i = 0; i < t->ncells; i++)
		if (text_width(t->cell[i]) > w[i % t->ncols])
			w[i % t->ncols] = text_width(t->cell[i]);
	table_line(t, t->head, w);
	for (i = 0; i + t->ncols <= t->ncells; i += t->ncols)
		table_line(t, t->cell + i, w);
	table_free(t);
}

/* Free text (a cause, an error) under what it is about: indented, in
 * lines that fit 80 columns where the words do. */
static void
print_wrapped(const char *text)
{
	const size_t indent = 4, width = 80;
	size_t col = indent, n;
	const char *w;

	fprintf(out, "%*s", (int)indent, "");
	while (*text != '\0') {
		while (*text == ' ')
			text++;
		if (*text == '\0')
			break;
		w = text;
		while (*text != '\0' && *text != ' ')
			text++;
		n = (size_t)(text - w);
		if (col > indent && col + 1 + n > width) {
			fprintf(out, "\n%*s", (int)indent, "");
			col = indent;
		} else if (col > indent) {
			putc_out(' ');
			col++;
		}
		fwrite(w, 1, n, out);
		col += n;
	}
	putc_out('\n');
}

/* ---- the commands' output ---- */

/* "key         value": the key column of status and show pool. */
#define KV	"%-12s %s"

static void
print_instance(struct json_object *in)
{
	const char *state = str(in, "state");
	struct json_object *cidrs, *v;
	size_t i;

	if (strcmp(state, "known") != 0) {
		fprintf(out, "%-12s %s", "instance", state);
		if (json_object_object_get_ex(in, "error", &v) &&
		    json_object_is_type(v, json_type_string))
			fprintf(out, " (%s)", json_object_get_string(v));
		fprintf(out, "\n");
		return;
	}
	fprintf(out, "%-12s %s, %s in %s\n", "instance", str(in, "id"),
	    str(in, "type"), str(in, "az"));
	fprintf(out, "%-12s %lld ENIs of %lld addresses\n", "limits",
	    count(in, "max_enis"), count(in, "ips_per_eni"));
	fprintf(out, "%-12s %s (%s)\n", "primary ENI", str(in, "primary_eni"),
	    str(in, "primary_mac"));
	fprintf(out, KV "\n", "subnet", str(in, "subnet"));
	fprintf(out, "%-12s", "VPC");
	cidrs = field(in, "vpc_cidrs", json_type_array);
	for (i = 0; i < json_object_array_length(cidrs); i++) {
		v = json_object_array_get_idx(cidrs, i);
		if (!json_object_is_type(v, json_type_string))
			malformed("VPC CIDR is not a string");
		fprintf(out, " %s", json_object_get_string(v));
	}
	fprintf(out, "\n");
}

/* Prefix delegation in the pool's summary, unless it is off and holds
 * no prefix (or the enid is older than it). */
static void
print_pool_prefixes(struct json_object *pool)
{
	struct json_object *inh, *p;
	const char *mode;
	size_t i;

	if (optional(pool, "prefix_delegation", json_type_string) == NULL)
		return;
	mode = str(pool, "prefix_delegation");
	inh = field(pool, "prefix_inhibited", json_type_array);
	if (strcmp(mode, "off") == 0 && count(pool, "prefixes") == 0)
		return;
	if (strcmp(mode, "unsupported") == 0)
		fprintf(out, "%-12s asked for, but the instance cannot hold "
		    "them: single addresses\n", "prefixes");
	else if (strcmp(mode, "pending") == 0)
		fprintf(out, "%-12s asked for; the instance is not known "
		    "yet\n", "prefixes");
	if (strcmp(mode, "on") == 0 || count(pool, "prefixes") > 0)
		fprintf(out, "%-12s %lld held (/28), %lld frozen, %lld being "
		    "given back%s\n", "prefixes", count(pool, "prefixes"),
		    count(pool, "prefixes_frozen"),
		    count(pool, "prefixes_removing"),
		    strcmp(mode, "on") == 0 ? "" : " (delegation off)");
	for (i = 0; i < json_object_array_length(inh); i++) {
		p = entry(inh, i, "prefix inhibit");
		fprintf(out, "%-12s %s: single addresses there for %lld s\n",
		    i == 0 ? "no prefix" : "",
		    str(p, "subnet"), count(p, "inhibited_s"));
	}
}

static void
print_pool_counts(struct json_object *pool)
{
	struct json_object *fam;

	fprintf(out, "%-12s %s, %lld ENIs (%lld attached in the cloud), %lld "
	    "pods, %lld waiting\n", "pool", str(pool, "phase"),
	    count(pool, "enis"), count(pool, "cloud_attached"),
	    count(pool, "pods"), count(pool, "waiting"));
	fprintf(out, "%-12s %lld free, %lld assigned, %lld cooling, %lld "
	    "other\n", "addresses", count(pool, "free"),
	    count(pool, "assigned"), count(pool, "cooling"),
	    count(pool, "other"));
	/* The line above is IPv4's; with IPv6 (or pods left with it after
	 * a switch to ipv4), its pods and /80s.  An older enid says
	 * nothing of it. */
	if ((fam = optional(pool, "ip_family", json_type_string)) != NULL &&
	    (strcmp(json_object_get_string(fam), "ipv4") != 0 ||
	    count(pool, "pods_ipv6") > 0))
		fprintf(out, "%-12s %lld pods with an IPv6 address, %lld ENIs "
		    "with a /80 (ip_family %s)\n", "ipv6",
		    count(pool, "pods_ipv6"), count(pool, "ipv6_prefixes"),
		    json_object_get_string(fam));
	print_pool_prefixes(pool);
}

/* Growth: blocked or not, why, and when it is tried next. */
static void
print_growth(struct json_object *pool)
{
	struct json_object *v;

	if (strcmp(str(pool, "blocked"), "none") == 0)
		fprintf(out, KV, "growth", "not blocked");
	else
		fprintf(out, "%-12s blocked: %s", "growth",
		    str(pool, "blocked"));
	if (json_object_object_get_ex(pool, "next_growth_in_ms", &v))
		fprintf(out, ", tried again in %.1f s",
		    (double)count(pool, "next_growth_in_ms") / 1000);
	fprintf(out, "\n");
	if (json_object_object_get_ex(pool, "last_failure", &v)) {
		fprintf(out, "%-12s (%s", "last failure",
		    str(pool, "last_failure_code"));
		if (json_object_object_get_ex(pool, "last_failure_s_ago", &v))
			fprintf(out, ", %lld s ago",
			    count(pool, "last_failure_s_ago"));
		fprintf(out, ")\n");
		print_wrapped(str(pool, "last_failure"));
	}
}

/* The cloud: when it last answered, and whether it is reached now. */
static void
print_cloud(struct json_object *ans)
{
	struct json_object *c, *v;

	if (!json_object_object_get_ex(ans, "cloud", &c))
		return;		/* an older enid */
	if (!json_object_is_type(c, json_type_object))
		field(ans, "cloud", json_type_object);
	if (flag(c, "reachable"))
		fprintf(out, "%-12s answered %lld s ago\n", "cloud",
		    count(c, "last_answer_s_ago"));
	else if (json_object_object_get_ex(c, "last_answer_s_ago", &v) &&
	    !json_object_is_type(v, json_type_null))
		fprintf(out, "%-12s NOT REACHED: last answered %lld s ago\n",
		    "cloud", count(c, "last_answer_s_ago"));
	else
		fprintf(out, "%-12s NOT REACHED: no answer since the start, "
		    "%lld s ago\n", "cloud", count(c, "unanswered_s"));
	if (!flag(c, "reachable") &&
	    json_object_object_get_ex(c, "last_failure", &v)) {
		fprintf(out, "%-12s (%lld s ago)\n", "last error",
		    count(c, "last_failure_s_ago"));
		print_wrapped(str(c, "last_failure"));
	}
}

/* The broker's last SNAT sync: "ok, 3 s ago", or "none yet". */
static void
print_snat_sync(struct json_object *sync)
{
	struct json_object *counts = field(sync, "counts", json_type_object);

	if (optional(sync, "result", json_type_string) == NULL) {
		fprintf(out, "none yet");
		return;
	}
	fprintf(out, "%s, %lld s ago (%lld ok, %lld refused, %lld failed, "
	    "%lld unanswered)", str(sync, "result"), count(sync, "s_ago"),
	    count(counts, "ok"), count(counts, "refused"),
	    count(counts, "failed"), count(counts, "no-answer"));
}

/* status's snat line: on or off, in place, what it translated. */
static void
print_status_snat(struct json_object *ans)
{
	struct json_object *sn, *in_place, *sync;

	if ((sn = optional(ans, "snat", json_type_object)) == NULL)
		return;		/* an older enid */
	sync = field(sn, "sync", json_type_object);
	in_place = nullable(sn, "in_place", json_type_boolean);
	fprintf(out, "%-12s %s, ", "snat", flag(sn, "enabled") ? "on" : "off");
	if (in_place == NULL)
		fprintf(out, "table not read yet");
	else
		fprintf(out, "table %s, %lld translated, %lld marked",
		    json_object_get_boolean(in_place) ? "in place" :
		    "NOT IN PLACE", (long long)json_object_get_int64(
		    nullable(sn, "translated", json_type_int)),
		    (long long)json_object_get_int64(nullable(sn, "marked",
		    json_type_int)));
	fprintf(out, "\n%-12s ", "snat sync");
	print_snat_sync(sync);
	fprintf(out, "\n");
	if (optional(sync, "result", json_type_string) != NULL &&
	    strcmp(str(sync, "result"), "ok") != 0)
		print_wrapped(str(sync, "message"));
}

static void
print_status(struct json_object *ans, const char *arg)
{
	struct json_object *procs = field(ans, "processes", json_type_array);
	struct json_object *p;
	struct table t;
	size_t i;

	(void)arg;
	fprintf(out, "enid %s, up %lld s, log level %s\n", str(ans, "version"),
	    count(ans, "uptime_s"), str(ans, "log_level"));
	print_instance(field(ans, "instance", json_type_object));
	print_pool_counts(field(ans, "pool", json_type_object));
	print_growth(field(ans, "pool", json_type_object));
	print_cloud(ans);
	print_status_snat(ans);
	table_init(&t, "PROCESS >PID STATE");
	for (i = 0; i < json_object_array_length(procs); i++) {
		p = entry(procs, i, "process");
		table_add(&t, "%s", str(p, "name"));
		table_add(&t, "%lld", count(p, "pid"));
		table_add(&t, "%s", flag(p, "ready") ? "ready" : "starting");
	}
	table_print(&t);
}

static void
print_pool(struct json_object *ans, const char *arg)
{
	struct json_object *pool = field(ans, "pool", json_type_object);

	(void)arg;
	print_pool_counts(pool);
	print_growth(pool);
}

/* Each ENI's /28 prefixes, if any holds one: their addresses by state,
 * and whether a prefix is frozen (draining) or being given back. */
static void
print_prefixes(struct json_object *enis)
{
	struct json_object *e, *pfxs, *p;
	struct table t;
	size_t i, j, n = 0;
	char note[64];

	table_init(&t, "ENI PREFIX >FREE >USED >COOL >OTHER NOTE");
	for (i = 0; i < json_object_array_length(enis); i++) {
		e = entry(enis, i, "ENI");
		if ((pfxs = optional(e, "prefixes", json_type_array)) == NULL)
			continue;
		for (j = 0; j < json_object_array_length(pfxs); j++) {
			p = entry(pfxs, j, "prefix");
			table_add(&t, "%s", str(e, "id")[0] ? str(e, "id") :
			    "-");
			table_add(&t, "%s", prefix_str(p, "cidr"));
			table_add(&t, "%lld", count(p, "free"));
			table_add(&t, "%lld", count(p, "assigned"));
			table_add(&t, "%lld", count(p, "cooling"));
			table_add(&t, "%lld", count(p, "other"));
			note[0] = '\0';
			if (flag(p, "frozen"))
				snprintf(note, sizeof(note), "frozen %llds",
				    count(p, "frozen_s"));
			if (flag(p, "removing"))
				snprintf(note + strlen(note), sizeof(note) -
				    strlen(note), "%sgiving back",
				    note[0] ? ", " : "");
			table_add(&t, "%s", note[0] ? note : "-");
			n++;
		}
	}
	if (n > 0)
		table_print(&t);
	else
		table_free(&t);
}

/* Each ENI's own IPv6 address and the /80 its pods' IPv6 addresses
 * come from, if any ENI has either. */
static void
print_ipv6(struct json_object *enis)
{
	struct json_object *e;
	struct table t;
	size_t i;

	if (!any_has(enis, "ipv6_address") && !any_has(enis, "ipv6_prefix"))
		return;
	table_init(&t, "ENI IPV6 PODS-FROM");
	for (i = 0; i < json_object_array_length(enis); i++) {
		e = entry(enis, i, "ENI");
		table_add(&t, "%s", str(e, "id")[0] ? str(e, "id") : "-");
		table_add(&t, "%s", addr_or_dash(e, "ipv6_address", AF_INET6));
		if (optional(e, "ipv6_prefix", json_type_string) != NULL)
			table_add(&t, "%s", prefix_str(e, "ipv6_prefix"));
		else
			table_add(&t, "-");
	}
	table_print(&t);
}

static void
print_enis(struct json_object *ans, const char *arg)
{
	struct json_object *enis = field(ans, "enis", json_type_array);
	struct json_object *e, *addrs, *a;
	long long nfree, used, cool;
	struct table t;
	const char *st;
	size_t i, j;

	(void)arg;
	table_init(&t, "ENI STATE >DEV >FREE >USED >COOL SUBNET");
	for (i = 0; i < json_object_array_length(enis); i++) {
		e = entry(enis, i, "ENI");
		addrs = field(e, "addresses", json_type_array);
		nfree = used = cool = 0;
		for (j = 0; j < json_object_array_length(addrs); j++) {
			a = entry(addrs, j, "address");
			st = str(a, "state");
			(void)addr_str(a, "ip");
			if (strcmp(st, "free") == 0)
				nfree++;
			else if (strcmp(st, "assigned") == 0)
				used++;
			else if (strcmp(st, "cooling") == 0)
				cool++;
		}
		/* Not yet created, an ENI has no id but its state says so. */
		table_add(&t, "%s", str(e, "id")[0] ? str(e, "id") : "-");
		table_add(&t, "%s", str(e, "state"));
		if (json_object_get_int(field(e, "device_index",
		    json_type_int)) < 0)
			table_add(&t, "-");
		else
			table_add(&t, "%lld", count(e, "device_index"));
		table_add(&t, "%lld", nfree);
		table_add(&t, "%lld", used);
		table_add(&t, "%lld", cool);
		table_add(&t, "%s", str(e, "subnet")[0] ? str(e, "subnet") :
		    "-");
	}
	table_print(&t);
	print_prefixes(enis);
	print_ipv6(enis);
	/* Why an ENI is where it is, when that is not plain "ready". */
	for (i = 0; i < json_object_array_length(enis); i++) {
		e = entry(enis, i, "ENI");
		if (strcmp(str(e, "state"), "ready") == 0 ||
		    str(e, "cause")[0] == '\0')
			continue;
		fprintf(out, "%s, %s for %lld s:\n", str(e, "id")[0] ?
		    str(e, "id") : "(new ENI)", str(e, "state"),
		    count(e, "since_s"));
		print_wrapped(str(e, "cause"));
	}
}

static void
print_pods(struct json_object *ans, const char *arg)
{
	struct json_object *pods = field(ans, "pods", json_type_array), *p;
	const char *ns, *name;
	struct table t;
	size_t i;
	bool v6;

	(void)arg;
	/* An IPv6 column once any pod has an IPv6 address. */
	v6 = any_has(pods, "ip6");
	table_init(&t, v6 ? "CONTAINER IF IP IP6 ENI STATE POD" :
	    "CONTAINER IF IP ENI STATE POD");
	for (i = 0; i < json_object_array_length(pods); i++) {
		p = entry(pods, i, "pod");
		ns = str(p, "namespace");
		name = str(p, "name");
		/* The runtime's ids are 64 hex digits; -j shows them whole. */
		table_add(&t, "%.12s", str(p, "container_id"));
		table_add(&t, "%s", str(p, "ifname"));
		/* Every pod holds an address of one family at least. */
		if (!json_object_object_get_ex(p, "ip", NULL) &&
		    !json_object_object_get_ex(p, "ip6", NULL))
			malformed("a pod without \"ip\" or \"ip6\"");
		table_add(&t, "%s", addr_or_dash(p, "ip", AF_INET));
		if (v6)
			table_add(&t, "%s", addr_or_dash(p, "ip6", AF_INET6));
		table_add(&t, "%s", str(p, "eni"));
		table_add(&t, "%s", str(p, "state"));
		if (ns[0] == '\0' && name[0] == '\0')
			table_add(&t, "-");
		else
			table_add(&t, "%s/%s", ns[0] ? ns : "-",
			    name[0] ? name : "-");
	}
	table_print(&t);
	for (i = 0; i < json_object_array_length(pods); i++) {
		p = entry(pods, i, "pod");
		if (strcmp(str(p, "state"), "lost") != 0)
			continue;
		fprintf(out, "%.12s, lost:\n", str(p, "container_id"));
		print_wrapped(str(p, "lost_why"));
	}
}

static void
print_subnets(struct json_object *ans, const char *arg)
{
	struct json_object *subs = field(ans, "subnets", json_type_array), *s;
	long long rest;
	struct table t;
	size_t i;
	bool v6;

	(void)arg;
	/* An IPv6 column once any subnet has an IPv6 block or state. */
	v6 = any_has(subs, "cidr6") || any_has(subs, "ipv6_state");
	table_init(&t, v6 ? "SUBNET AZ CIDR CIDR6 >FREE PODS RESTING" :
	    "SUBNET AZ CIDR >FREE PODS RESTING");
	for (i = 0; i < json_object_array_length(subs); i++) {
		s = entry(subs, i, "subnet");
		table_add(&t, "%s", str(s, "id"));
		if (flag(s, "known")) {
			table_add(&t, "%s", str(s, "az"));
			/* An IPv6-only subnet has no IPv4 CIDR. */
			if (optional(s, "cidr", json_type_string) != NULL)
				table_add(&t, "%s", prefix_str(s, "cidr"));
			else
				table_add(&t, "-");
		} else {
			table_add(&t, "?");
			table_add(&t, "?");
		}
		if (v6 && optional(s, "cidr6", json_type_string) != NULL)
			table_add(&t, "%s", prefix_str(s, "cidr6"));
		else if (v6)
			/* none associated: its block's state, if any */
			table_add(&t, "%s", optional(s, "ipv6_state",
			    json_type_string) != NULL ? str(s, "ipv6_state") :
			    "-");
		table_add(&t, "%lld", count(s, "available"));
		table_add(&t, "%s", flag(s, "configured") ? "yes" : "no");
		rest = count(s, "inhibited_s");
		if (rest > 0)
			table_add(&t, "%llds", rest);
		else
			table_add(&t, "-");
	}
	table_print(&t);
	/* A subnet that refused a /28 lately, if the enid says. */
	for (i = 0; i < json_object_array_length(subs); i++) {
		s = entry(subs, i, "subnet");
		if (optional(s, "prefix_inhibited_s", json_type_int) == NULL ||
		    (rest = count(s, "prefix_inhibited_s")) == 0)
			continue;
		fprintf(out, "%s: refused a /28; single addresses there for "
		    "%lld s\n", str(s, "id"), rest);
	}
}

/* The configuration as "key value" lines, nested keys joined by dots. */
static void
config_rows(struct table *t, const char *prefix, struct json_object *o)
{
	struct json_object *v;
	char key[512];
	size_t i, n;

	json_object_object_foreach(o, k, val) {
		char *ek = escape_text(k);	/* keys are the daemon's too */

		snprintf(key, sizeof(key), "%s%s%s", prefix, prefix[0] ? "." :
		    "", ek);
		free(ek);
		switch (json_object_get_type(val)) {
		case json_type_object:
			config_rows(t, key, val);
			break;
		case json_type_array:
			n = json_object_array_length(val);
			if (n == 0) {
				table_add(t, "%s", key);
				table_add(t, "(none)");
				break;
			}
			for (i = 0; i < n; i++) {
				char sub[600];

				v = json_object_array_get_idx(val, i);
				snprintf(sub, sizeof(sub), "%s[%zu]", key, i);
				if (json_object_is_type(v, json_type_object)) {
					config_rows(t, sub, v);
					continue;
				}
				table_add(t, "%s", sub);
				table_add(t, "%s", json_object_get_string(v));
			}
			break;
		case json_type_string:
			table_add(t, "%s", key);
			table_add(t, "%s", json_object_get_string(val)[0] ?
			    json_object_get_string(val) : "\"\"");
			break;
		default:
			table_add(t, "%s", key);
			table_add(t, "%s", json_object_get_string(val));
			break;
		}
	}
}

static void
print_config(struct json_object *ans, const char *arg)
{
	struct table t;

	(void)arg;
	fprintf(out, "from %s\n", str(ans, "config_path"));
	table_init(&t, "KEY VALUE");
	config_rows(&t, "", field(ans, "config", json_type_object));
	table_print(&t);
	fprintf(out, "cloud.access_key_id, secret_access_key, "
	    "session_token: %s\n",
	    flag(ans, "static_credentials") ? "set (never shown)" :
	    "not set (credentials from IMDS or the environment)");
}

/*
 * Prefix delegation's part of show limits, if the enid says: whether it
 * is in effect and why not, the pods /28 prefixes would serve, and the
 * kubelet's usual cap.  Returns whether it is in effect.
 */
static bool
print_limits_prefixes(struct json_object *l)
{
	const char *mode, *hv;
	char hyp[64];

	if (optional(l, "prefix_delegation", json_type_string) == NULL)
		return false;
	mode = str(l, "prefix_delegation");
	hv = str(l, "hypervisor");
	if (flag(l, "bare_metal"))
		snprintf(hyp, sizeof(hyp), "bare metal");
	else
		snprintf(hyp, sizeof(hyp), "hypervisor %s", hv[0] ? hv :
		    "not known");
	if (strcmp(mode, "on") == 0)
		fprintf(out, "prefixes           on: /28s of 16 addresses "
		    "(%s)\n", hyp);
	else if (strcmp(mode, "unsupported") == 0)
		fprintf(out, "prefixes           asked for, but the instance "
		    "can't hold them:\n"
		    "                   single addresses (%s)\n", hyp);
	else
		fprintf(out, "prefixes           %s; the instance %s (%s)\n",
		    mode, flag(l, "prefixes_ok") ? "could hold them" :
		    "can't hold them", hyp);
	fprintf(out, "pods in prefixes   %lld (%lld ENIs x %lld prefixes x 16)",
	    count(l, "max_pods_with_prefixes"), count(l, "pod_enis"),
	    count(l, "pod_ips_per_eni"));
	if (count(l, "prefix_capacity") < count(l, "max_pods_with_prefixes"))
		fprintf(out, ";\n                   enid holds %lld of them",
		    count(l, "prefix_capacity"));
	fprintf(out, "\n");
	fprintf(out, "kubelet max pods   %lld (%s)\n",
	    count(l, "kubelet_max_pods"), str(l, "kubelet_max_pods_why"));
	return strcmp(mode, "on") == 0;
}

static void
print_limits(struct json_object *ans, const char *arg)
{
	struct json_object *l = field(ans, "limits", json_type_object);
	struct json_object *f;
	char cfg[64];
	bool on, v6;

	(void)arg;
	fprintf(out, "instance type      %s\n", str(l, "instance_type"));
	if (count(l, "config_max_enis") != 0)
		snprintf(cfg, sizeof(cfg), "pool.max_enis %lld",
		    count(l, "config_max_enis"));
	else
		snprintf(cfg, sizeof(cfg), "pool.max_enis not set");
	fprintf(out, "ENIs               %lld (the instance's limit %lld; "
	    "%s)\n",
	    count(l, "max_enis"), count(l, "cloud_max_enis"), cfg);
	/* A type past enid's maxima is used up to them (the broker's
	 * warning at start says so too). */
	fprintf(out, "addresses per ENI  %lld: %lld for pods%s, one the "
	    "ENI's own\n",
	    count(l, "cloud_ips_per_eni"), count(l, "pod_ips_per_eni"),
	    count(l, "pod_ips_per_eni") < count(l, "cloud_ips_per_eni") - 1 ?
	    " (enid's most)" : "");
	fprintf(out, "ENIs for pods      %lld (the primary %s)\n",
	    count(l, "pod_enis"), flag(l, "primary_for_pods") ? "included" :
	    "not: its subnet is not among those configured");
	/* ip_family ipv6: a pod takes no IPv4 address, and its ENI's /80
	 * does not run out; only the pods enid holds bound them. */
	v6 = (f = optional(l, "pods_driven_by", json_type_string)) != NULL &&
	    strcmp(json_object_get_string(f), "enis") == 0;
	if (v6) {
		fprintf(out, "pod addresses      IPv6 only (ip_family ipv6): "
		    "each pod the next of its\n"
		    "                   ENI's /80; the pool is driven by "
		    "ENIs, not IPv4 addresses\n");
		fprintf(out, "kubelet max pods   %lld (%s)\n",
		    count(l, "kubelet_max_pods"),
		    str(l, "kubelet_max_pods_why"));
		on = false;
	} else {
		fprintf(out, "pod addresses      %lld (%lld ENIs x %lld)\n",
		    count(l, "pod_capacity"), count(l, "pod_enis"),
		    count(l, "pod_ips_per_eni"));
		on = print_limits_prefixes(l);
	}
	if (count(l, "config_max_pods") != 0)
		snprintf(cfg, sizeof(cfg), "pool.max_pods %lld",
		    count(l, "config_max_pods"));
	else
		snprintf(cfg, sizeof(cfg), "pool.max_pods not set");
	if (v6) {
		fprintf(out, "max pods           %lld (enid's most %lld, "
		    "ENID_MAX_PODS; %s)\n", count(l, "max_pods"),
		    count(l, "enid_max_pods"), cfg);
		fprintf(out, "warm pool          one ENI of a configured "
		    "subnet with its /80; the warm\n"
		    "                   targets count IPv4 addresses and are "
		    "unused\n");
		return;
	}
	fprintf(out, "max pods           %lld (%s%s)\n", count(l, "max_pods"),
	    on ? "in prefixes; " : "", cfg);
	if (on)
		fprintf(out, "warm targets       warm_ip_target %lld, "
		    "minimum_ip_target %lld,\n"
		    "                   warm_prefix_target %lld "
		    "(warm_eni_target unused)\n",
		    count(l, "warm_ip_target"), count(l, "minimum_ip_target"),
		    count(l, "warm_prefix_target"));
	else
		fprintf(out, "warm targets       warm_ip_target %lld, "
		    "minimum_ip_target %lld, warm_eni_target %lld\n",
		    count(l, "warm_ip_target"), count(l, "minimum_ip_target"),
		    count(l, "warm_eni_target"));
}

/* enid-netd's SNAT table as it read it back, and the broker's syncs. */
static void
print_snat(struct json_object *ans, const char *arg)
{
	struct json_object *sn = field(ans, "snat", json_type_object);
	struct json_object *list, *v, *to, *differs;
	long long n;
	size_t i;

	(void)arg;
	to = nullable(sn, "to", json_type_string);
	if (to != NULL)
		(void)addr_str(sn, "to");
	if (flag(sn, "enabled"))
		fprintf(out, "%-12s on: to %s via %s (ifindex %lld)%s\n", "snat",
		    to ? json_object_get_string(to) : "(nothing installed)",
		    str(sn, "primary_link")[0] ? str(sn, "primary_link") : "?",
		    count(sn, "primary_ifindex"),
		    flag(sn, "random_fully") ? ", ports random-fully" : "");
	else
		fprintf(out, "%-12s off (a NAT gateway translates); NodePort "
		    "reply marks only\n", "snat");
	n = count(sn, "replaced");
	fprintf(out, "%-12s %s; written whole %lld time%s; %lld sync%s "
	    "refused\n", "table", flag(sn, "in_place") ? "in place" :
	    "NOT IN PLACE", n, n == 1 ? "" : "s", count(sn, "refused"),
	    count(sn, "refused") == 1 ? "" : "s");
	/* Not in place: what differs, as the daemon must say. */
	differs = nullable(sn, "differs", json_type_string);
	if (flag(sn, "in_place") != (differs == NULL))
		malformed("\"differs\" must be given exactly when the table "
		    "is not in place");
	if (differs != NULL) {
		fprintf(out, "differs:\n");
		print_wrapped(str(sn, "differs"));
	}
	list = field(sn, "untranslated", json_type_array);
	for (i = 0; i < json_object_array_length(list); i++) {
		v = json_object_array_get_idx(list, i);
		if (!json_object_is_type(v, json_type_string))
			malformed("an untranslated CIDR is not a string");
		fprintf(out, "%-12s %s\n", i == 0 ? "untranslated" : "",
		    prefix_text(json_object_get_string(v), "untranslated"));
	}
	if (i == 0)
		fprintf(out, "%-12s (none)\n", "untranslated");
	fprintf(out, "%-12s %lld connections\n", "translated",
	    count(sn, "translated"));
	fprintf(out, "%-12s 0x%llx: %lld connections marked on arrival on the "
	    "primary link\n", "connmark",
	    (unsigned long long)count(sn, "connmark"),
	    count(sn, "marked"));
	fprintf(out, "%-12s ", "last sync");
	print_snat_sync(field(ans, "sync", json_type_object));
	fprintf(out, "\n");
	if (str(sn, "message")[0] != '\0') {
		fprintf(out, "enid-netd:\n");
		print_wrapped(str(sn, "message"));
	}
}

static void
print_reconcile(struct json_object *ans, const char *arg)
{
	long long n = count(ans, "drifts_fixed");

	(void)arg;
	fprintf(out, "reconciled: %lld drift%s fixed\n", n, n == 1 ? "" : "s");
}

static void
print_drain(struct json_object *ans, const char *arg)
{
	(void)arg;
	fprintf(out, "%s: %s; released once no pod is left on it\n",
	    str(ans, "eni"), str(ans, "state"));
}

static void
print_log_level(struct json_object *ans, const char *arg)
{
	(void)arg;
	fprintf(out, "log level: %s\n", str(ans, "log_level"));
}

/*
 * The metrics text goes out as it is, for a scraper or a file: so it may
 * hold nothing a terminal acts on.  (The daemon escapes label values.)
 */
static void
print_metrics(struct json_object *ans, const char *arg)
{
	const unsigned char *p;
	size_t n, i = 0, k;

	(void)arg;
	(void)field(ans, "metrics", json_type_array);
	p = (const unsigned char *)str(ans, "text");
	n = strlen((const char *)p);
	if (n == 0 || p[n - 1] != '\n')
		malformed("the metrics text does not end with a newline");
	while (i < n) {
		if (p[i] == '\n' || (p[i] >= 0x20 && p[i] < 0x7f))
			i++;
		else if ((k = utf8_printable(p + i, n - i)) > 0)
			i += k;
		else
			malformed("control character or invalid UTF-8 in the "
			    "metrics text");
	}
	fwrite(p, 1, n, out);
}

/* ---- commands ---- */

struct command {
	const char	*name;
	const char	*what;		/* show's subject */
	const char	*op;
	const char	*arg_key;	/* the request field the argument
					 * goes to, or NULL: none */
	int		 timeout_ms;
	void		(*print)(struct json_object *, const char *);
};

static const struct command commands[] = {
	{ "status", NULL, "status", NULL, CTL_TIMEOUT_MS, print_status },
	{ "show", "pool", "show", NULL, CTL_TIMEOUT_MS, print_pool },
	{ "show", "enis", "show", NULL, CTL_TIMEOUT_MS, print_enis },
	{ "show", "pods", "show", NULL, CTL_TIMEOUT_MS, print_pods },
	{ "show", "subnets", "show", NULL, CTL_TIMEOUT_MS, print_subnets },
	{ "show", "config", "show", NULL, CTL_TIMEOUT_MS, print_config },
	{ "show", "limits", "show", NULL, CTL_TIMEOUT_MS, print_limits },
	{ "show", "snat", "show", NULL, CTL_TIMEOUT_MS, print_snat },
	{ "reconcile", NULL, "reconcile", NULL, CTL_RECONCILE_TIMEOUT_MS,
	  print_reconcile },
	{ "drain", NULL, "drain", "eni", CTL_TIMEOUT_MS, print_drain },
	{ "log-level", NULL, "log-level", "level", CTL_TIMEOUT_MS,
	  print_log_level },
	{ "metrics", NULL, "metrics", NULL, CTL_TIMEOUT_MS, print_metrics },
};

static bool
level_ok(const char *s)
{
	return strcmp(s, "error") == 0 || strcmp(s, "warning") == 0 ||
	    strcmp(s, "info") == 0 || strcmp(s, "debug") == 0;
}

/* A cloud id as an argument: printable ASCII, short. */
static bool
id_ok(const char *s)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > CTL_ID_MAX)
		return false;
	for (i = 0; i < n; i++)
		if (s[i] <= 0x20 || s[i] >= 0x7f)
			return false;
	return true;
}

/* The command argv names, or usage: exit 2. */
static const struct command *
parse_command(int argc, char *argv[], const char **arg)
{
	const struct command *c;
	size_t i;
	int want;

	*arg = NULL;
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		c = &commands[i];
		if (strcmp(c->name, argv[0]) != 0)
			continue;
		if (c->what != NULL) {
			if (argc != 2 || strcmp(c->what, argv[1]) != 0)
				continue;
			return c;
		}
		want = c->arg_key != NULL ? 2 : 1;
		if (argc != want)
			usage();
		if (c->arg_key == NULL)
			return c;
		*arg = argv[1];
		if (strcmp(c->arg_key, "level") == 0 ? !level_ok(*arg) :
		    !id_ok(*arg))
			usage();
		return c;
	}
	usage();
}

int
main(int argc, char *argv[])
{
	const char *path = ENID_RUNTIME_DIR "/ctl.sock";
	const char *config_path = NULL, *uplink = NULL, *procsys = NULL;
	static const struct option longopts[] = {
		{ "uplink", required_argument, NULL, 'u' },
		{ "proc-sys", required_argument, NULL, 'p' },
		{ NULL, 0, NULL, 0 },
	};
	const struct command *cmd;
	struct json_object *req, *ans;
	struct json_tokener *tok;
	const char *line, *arg;
	bool raw = false, ok;
	char *answer, *outbuf = NULL;
	size_t outlen = 0;
	int ch, fd, rc = 0;
	size_t len;

	while ((ch = getopt_long(argc, argv, "f:js:", longopts, NULL)) !=
	    -1) {
		switch (ch) {
		case 'f':
			config_path = optarg;
			break;
		case 'j':
			raw = true;
			break;
		case 's':
			path = optarg;
			break;
		case 'u':
			uplink = optarg;
			break;
		case 'p':
			procsys = optarg;
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage();
	/* The one command that reads the configuration instead of asking
	 * the daemon; -f, --uplink and --proc-sys mean nothing to the
	 * others, -j nothing to it. */
	if (strcmp(argv[0], "node-setup") == 0) {
		if (raw || argc != 1)
			usage();
		return nodesetup_run(config_path ? config_path :
		    ENID_CONF_PATH, uplink, procsys ? procsys :
		    NODESETUP_PROCSYS);
	}
	if (config_path != NULL || uplink != NULL || procsys != NULL)
		usage();
	cmd = parse_command(argc, argv, &arg);
	if ((req = json_object_new_object()) == NULL)
		nomem();
	json_object_object_add(req, "op", json_object_new_string(cmd->op));
	if (cmd->what != NULL)
		json_object_object_add(req, "what",
		    json_object_new_string(cmd->what));
	if (cmd->arg_key != NULL)
		json_object_object_add(req, cmd->arg_key,
		    json_object_new_string(arg));

	fd = ctl_connect(path);
	line = json_object_to_json_string_ext(req,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	len = strlen(line);
	/* A daemon that refuses us closes the connection: EPIPE, not a
	 * signal. */
	if (send(fd, line, len, MSG_NOSIGNAL) != (ssize_t)len ||
	    send(fd, "\n", 1, MSG_NOSIGNAL) != 1) {
		fprintf(stderr, "enidctl: %s: write: %s\n", path,
		    strerror(errno));
		close(fd);
		json_object_put(req);
		return 1;
	}
	answer = read_answer(fd, path, cmd->timeout_ms,
	    cmd->timeout_ms == CTL_RECONCILE_TIMEOUT_MS ?
	    "; the reconciliation goes on in the daemon (see its log)" : "",
	    &len);
	close(fd);
	if ((tok = json_tokener_new()) == NULL)
		nomem();
	ans = json_tokener_parse_ex(tok, answer, (int)len);
	if (ans == NULL || json_tokener_get_error(tok) != json_tokener_success)
		malformed("not JSON");
	if (json_tokener_get_parse_end(tok) != len)
		malformed("more than one JSON value on the answer line");
	json_tokener_free(tok);
	if (!json_object_is_type(ans, json_type_object))
		malformed("not a JSON object");
	/* json-c skips blanks around a value; the daemon writes none. */
	if (answer[0] != '{' || answer[len - 1] != '}')
		malformed("blanks around the JSON object");
	ok = json_object_get_boolean(field(ans, "ok", json_type_boolean));
	if (raw && ok) {
		print_json(ans);
		goto done;
	}
	/* The metrics text is checked whole instead, and printed as is. */
	if (cmd->print != print_metrics || !ok)
		escape_tree(ans);
	if (!ok) {
		fprintf(stderr, "enidctl: %s: %s\n", str(ans, "code"),
		    str(ans, "error"));
		rc = 1;
		goto out;
	}
	if ((out = open_memstream(&outbuf, &outlen)) == NULL)
		nomem();
	cmd->print(ans, arg);
	if (fclose(out) == EOF)
		nomem();
	fwrite(outbuf, 1, outlen, stdout);
	free(outbuf);
done:
	if (fflush(stdout) == EOF || ferror(stdout)) {
		fprintf(stderr, "enidctl: writing the output: %s\n",
		    strerror(errno));
		rc = 1;
	}
out:
	/* Released on every way out, so that LeakSanitizer has nothing to
	 * say of a run that ended in an error. */
	json_object_put(ans);
	json_object_put(req);
	free(answer);
	return rc;
}
