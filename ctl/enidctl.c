/*
 * enidctl: the admin command.  Sends one request line to enid's control
 * socket and checks the answer as strictly as the daemon checks requests:
 * an object with a boolean "ok", and on failure a string "code" and "error".
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <poll.h>
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

/* Read one line within the time limit; the caller frees it. */
static char *
read_answer(int fd, const char *path)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap), *nl;
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
		if ((nl = memchr(buf, '\n', len)) != NULL) {
			*nl = '\0';
			return buf;
		}
	}
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
	const char *line, *cmd;
	bool raw = false;
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
	answer = read_answer(fd, path);
	close(fd);
	ans = json_tokener_parse(answer);
	if (ans == NULL || !json_object_is_type(ans, json_type_object)) {
		fprintf(stderr, "enidctl: malformed answer: not a JSON "
		    "object\n");
		return 1;
	}
	if (!json_object_get_boolean(field(ans, "ok", json_type_boolean))) {
		fprintf(stderr, "enidctl: %s: %s\n",
		    json_object_get_string(field(ans, "code", json_type_string)),
		    json_object_get_string(field(ans, "error",
		    json_type_string)));
		return 1;
	}
	if (raw)
		printf("%s\n", json_object_to_json_string_ext(ans,
		    JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
		    JSON_C_TO_STRING_NOSLASHESCAPE));
	else if (strcmp(cmd, "status") == 0)
		print_status(ans);
	else
		printf("log level: %s\n", json_object_get_string(field(ans,
		    "log_level", json_type_string)));
	json_object_put(ans);
	json_object_put(req);
	free(answer);
	return 0;
}
