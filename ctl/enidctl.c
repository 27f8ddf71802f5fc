/*
 * enidctl: the admin command.  Sends one request line to enid's control
 * socket and checks the answer as strictly as the daemon checks requests:
 * exactly one JSON object on one line and nothing after it, with a boolean
 * "ok", and on failure a string "code" and "error".  Whatever the daemon
 * says reaches the terminal only escaped: no control character, C1
 * control or invalid UTF-8 is printed raw.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "conf.h"

#define CTL_ANSWER_MAX	(1024 * 1024)
#define CTL_TIMEOUT_MS	5000

static void
usage(void)
{
	fprintf(stderr,
	    "usage: enidctl [-j] [-s socket] command [argument]\n"
	    "commands:\n"
	    "  status             show the daemon's processes and state\n"
	    "  log-level LEVEL    set the log level (error, warning, info, "
	    "debug)\n");
	exit(2);
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

static void __attribute__((noreturn))
malformed(const char *why)
{
	fprintf(stderr, "enidctl: malformed answer: %s\n", why);
	exit(1);
}

/*
 * Read the answer line within the time limit; the caller frees it.  The
 * line must be all there is: bytes after its newline, whether they came
 * with it or are already waiting, are refused.
 */
static char *
read_answer(int fd, const char *path, size_t *linelen)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap), *nl, extra;
	struct pollfd pfd = { fd, POLLIN, 0 };
	ssize_t n;

	if (buf == NULL) {
		fprintf(stderr, "enidctl: out of memory\n");
		exit(1);
	}
	for (;;) {
		if (poll(&pfd, 1, CTL_TIMEOUT_MS) != 1) {
			fprintf(stderr, "enidctl: %s: no answer within %d ms\n",
			    path, CTL_TIMEOUT_MS);
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

static void
print_instance(struct json_object *in)
{
	const char *state = json_object_get_string(field(in, "state",
	    json_type_string));
	struct json_object *cidrs, *v;
	size_t i;

	if (strcmp(state, "known") != 0) {
		printf("instance: %s", state);
		if (json_object_object_get_ex(in, "error", &v) &&
		    json_object_is_type(v, json_type_string))
			printf(" (%s)", json_object_get_string(v));
		printf("\n");
		return;
	}
	printf("instance %s (%s in %s), %d ENIs of %d addresses\n",
	    json_object_get_string(field(in, "id", json_type_string)),
	    json_object_get_string(field(in, "type", json_type_string)),
	    json_object_get_string(field(in, "az", json_type_string)),
	    json_object_get_int(field(in, "max_enis", json_type_int)),
	    json_object_get_int(field(in, "ips_per_eni", json_type_int)));
	printf("primary ENI %s (%s) in %s, VPC",
	    json_object_get_string(field(in, "primary_eni", json_type_string)),
	    json_object_get_string(field(in, "primary_mac", json_type_string)),
	    json_object_get_string(field(in, "subnet", json_type_string)));
	cidrs = field(in, "vpc_cidrs", json_type_array);
	for (i = 0; i < json_object_array_length(cidrs); i++) {
		v = json_object_array_get_idx(cidrs, i);
		if (!json_object_is_type(v, json_type_string)) {
			fprintf(stderr, "enidctl: malformed answer: VPC CIDR "
			    "is not a string\n");
			exit(1);
		}
		printf(" %s", json_object_get_string(v));
	}
	printf("\n");
}

static void
print_status(struct json_object *ans)
{
	struct json_object *procs = field(ans, "processes", json_type_array);
	size_t i;

	printf("enid %s, up %lld s, log level %s\n",
	    json_object_get_string(field(ans, "version", json_type_string)),
	    (long long)json_object_get_int64(field(ans, "uptime_s",
	    json_type_int)),
	    json_object_get_string(field(ans, "log_level", json_type_string)));
	print_instance(field(ans, "instance", json_type_object));
	printf("%-14s %8s  %s\n", "PROCESS", "PID", "STATE");
	for (i = 0; i < json_object_array_length(procs); i++) {
		struct json_object *p = json_object_array_get_idx(procs, i);

		if (!json_object_is_type(p, json_type_object)) {
			fprintf(stderr, "enidctl: malformed answer: process "
			    "entry is not an object\n");
			exit(1);
		}
		printf("%-14s %8d  %s\n",
		    json_object_get_string(field(p, "name", json_type_string)),
		    json_object_get_int(field(p, "pid", json_type_int)),
		    json_object_get_boolean(field(p, "ready",
		    json_type_boolean)) ? "ready" : "starting");
	}
}

int
main(int argc, char *argv[])
{
	const char *path = ENID_RUNTIME_DIR "/ctl.sock";
	struct json_object *req, *ans;
	struct json_tokener *tok;
	const char *line, *cmd;
	bool raw = false, ok;
	char *answer;
	int ch, fd;
	size_t len;

	while ((ch = getopt(argc, argv, "js:")) != -1) {
		switch (ch) {
		case 'j':
			raw = true;
			break;
		case 's':
			path = optarg;
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage();
	cmd = argv[0];
	req = json_object_new_object();
	if (strcmp(cmd, "status") == 0 && argc == 1)
		json_object_object_add(req, "op", json_object_new_string("status"));
	else if (strcmp(cmd, "log-level") == 0 && argc == 2) {
		json_object_object_add(req, "op",
		    json_object_new_string("log-level"));
		json_object_object_add(req, "level",
		    json_object_new_string(argv[1]));
	} else
		usage();

	fd = ctl_connect(path);
	line = json_object_to_json_string_ext(req,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	len = strlen(line);
	if (write(fd, line, len) != (ssize_t)len || write(fd, "\n", 1) != 1) {
		fprintf(stderr, "enidctl: %s: write: %s\n", path,
		    strerror(errno));
		return 1;
	}
	answer = read_answer(fd, path, &len);
	close(fd);
	tok = json_tokener_new();
	if (tok == NULL) {
		fprintf(stderr, "enidctl: out of memory\n");
		return 1;
	}
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
	escape_tree(ans);
	if (!ok) {
		fprintf(stderr, "enidctl: %s: %s\n",
		    json_object_get_string(field(ans, "code", json_type_string)),
		    json_object_get_string(field(ans, "error",
		    json_type_string)));
		return 1;
	}
	if (strcmp(cmd, "status") == 0)
		print_status(ans);
	else
		printf("log level: %s\n", json_object_get_string(field(ans,
		    "log_level", json_type_string)));
done:
	json_object_put(ans);
	json_object_put(req);
	free(answer);
	return 0;
}
