/*
 * enid-cni: the CNI plugin (CNI spec 1.1).  Executed as root by the
 * container runtime with the network configuration on stdin and the
 * command in CNI_COMMAND.  It validates both, answers VERSION itself, and
 * sends every other command as one JSON line to the broker's CNI socket,
 * printing the broker's answer as the CNI result or error.  Errors go to
 * stdout as {"cniVersion","code","msg","details"} with a non-zero exit, as
 * libcni reads them there.
 *
 * Pod wiring (veth, addresses and routes in the pod's namespace) and the
 * broker's side of the CNI socket arrive with the pool engine.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "conf.h"

#define CNI_STDIN_MAX		(64 * 1024)
#define CNI_ANSWER_MAX		(64 * 1024)
#define CNI_TIMEOUT_MS		30000	/* the broker's add_timeout is less */

/* CNI error codes (SPEC.md, "Error"). */
#define CNI_ERR_INCOMPATIBLE	1
#define CNI_ERR_INVALID_ENV	4
#define CNI_ERR_IO		5
#define CNI_ERR_DECODE		6
#define CNI_ERR_INVALID_CONFIG	7
#define CNI_ERR_TRY_AGAIN	11
#define CNI_ERR_NOT_AVAILABLE	50

static const char *const supported_versions[] = {
	"0.4.0", "1.0.0", "1.1.0", NULL,
};

static const char *cni_version = "1.1.0";	/* echoed in answers */
/* The process context: held here so an error exit can release it
 * (cni_version points into conf). */
static struct {
	struct json_object	*conf, *req, *ans;
} cni;

static void cni_fail(int code, const char *details, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

static void
cni_fail(int code, const char *details, const char *fmt, ...)
{
	struct json_object *o = json_object_new_object();
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_object_object_add(o, "cniVersion",
	    json_object_new_string(cni_version));
	json_object_object_add(o, "code", json_object_new_int(code));
	json_object_object_add(o, "msg", json_object_new_string(msg));
	if (details != NULL)
		json_object_object_add(o, "details",
		    json_object_new_string(details));
	printf("%s\n", json_object_to_json_string_ext(o,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	json_object_put(cni.ans);
	json_object_put(cni.req);
	json_object_put(cni.conf);
	/* Flushed here: libcni reads the error from stdout, and a sanitizer
	 * report at exit must not be able to swallow it. */
	fflush(stdout);
	exit(1);
}

static bool
version_supported(const char *v)
{
	const char *const *p;

	for (p = supported_versions; *p; p++)
		if (strcmp(*p, v) == 0)
			return true;
	return false;
}

static void
cmd_version(void)
{
	struct json_object *o = json_object_new_object();
	struct json_object *a = json_object_new_array();
	const char *const *p;

	for (p = supported_versions; *p; p++)
		json_object_array_add(a, json_object_new_string(*p));
	json_object_object_add(o, "cniVersion",
	    json_object_new_string(cni_version));
	json_object_object_add(o, "supportedVersions", a);
	printf("%s\n", json_object_to_json_string_ext(o,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

static struct json_object *
read_config(void)
{
	static char buf[CNI_STDIN_MAX + 1];
	struct json_tokener *tok;
	struct json_object *parsed;
	enum json_tokener_error jerr;
	size_t len = 0;
	ssize_t n;

	while ((n = read(STDIN_FILENO, buf + len, sizeof(buf) - len)) > 0) {
		len += (size_t)n;
		if (len > CNI_STDIN_MAX)
			cni_fail(CNI_ERR_DECODE, NULL, "network configuration "
			    "larger than %d bytes", CNI_STDIN_MAX);
	}
	if (n == -1)
		cni_fail(CNI_ERR_IO, strerror(errno), "reading the network "
		    "configuration from stdin");
	tok = json_tokener_new();
	parsed = json_tokener_parse_ex(tok, buf, (int)len);
	jerr = json_tokener_get_error(tok);
	json_tokener_free(tok);
	if (parsed == NULL || jerr != json_tokener_success) {
		json_object_put(parsed);
		cni_fail(CNI_ERR_DECODE, NULL, "network configuration is not "
		    "valid JSON");
	}
	if (!json_object_is_type(parsed, json_type_object)) {
		json_object_put(parsed);
		cni_fail(CNI_ERR_DECODE, NULL, "network configuration is not "
		    "a JSON object");
	}
	return parsed;
}

static const char *
conf_string(struct json_object *conf, const char *key, bool required)
{
	struct json_object *v;

	if (!json_object_object_get_ex(conf, key, &v)) {
		if (required)
			cni_fail(CNI_ERR_INVALID_CONFIG, NULL, "network "
			    "configuration: missing \"%s\"", key);
		return NULL;
	}
	if (!json_object_is_type(v, json_type_string))
		cni_fail(CNI_ERR_INVALID_CONFIG, NULL, "network configuration: "
		    "\"%s\" must be a string", key);
	return json_object_get_string(v);
}

static const char *
env(const char *name, bool required)
{
	const char *v = getenv(name);

	if ((v == NULL || *v == '\0') && required)
		cni_fail(CNI_ERR_INVALID_ENV, NULL, "%s is not set", name);
	return v;
}

/* CNI_ARGS "K=V;K=V": copy the pod identity keys into req. */
static void
add_cni_args(struct json_object *req)
{
	const char *args = getenv("CNI_ARGS");
	char *copy, *save = NULL, *kv;

	if (args == NULL || *args == '\0')
		return;
	if (strlen(args) > 4096)
		cni_fail(CNI_ERR_INVALID_ENV, NULL, "CNI_ARGS longer than "
		    "4096 bytes");
	copy = strdup(args);
	for (kv = strtok_r(copy, ";", &save); kv != NULL;
	    kv = strtok_r(NULL, ";", &save)) {
		char *eq = strchr(kv, '=');

		if (eq == NULL) {
			char bad[64];

			snprintf(bad, sizeof(bad), "%s", kv);
			free(copy);
			cni_fail(CNI_ERR_INVALID_ENV, NULL, "CNI_ARGS: \"%s\" "
			    "is not KEY=VALUE", bad);
		}
		*eq = '\0';
		if (strcmp(kv, "K8S_POD_NAMESPACE") == 0)
			json_object_object_add(req, "pod_namespace",
			    json_object_new_string(eq + 1));
		else if (strcmp(kv, "K8S_POD_NAME") == 0)
			json_object_object_add(req, "pod_name",
			    json_object_new_string(eq + 1));
	}
	free(copy);
}

/* One request line out, one answer line back, within the time limit. */
static struct json_object *
broker_call(const char *path, struct json_object *req)
{
	static char buf[CNI_ANSWER_MAX + 1];
	struct sockaddr_un sun;
	struct pollfd pfd;
	const char *line;
	struct json_object *ans;
	size_t len = 0;
	ssize_t n;
	int fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path))
		cni_fail(CNI_ERR_INVALID_CONFIG, NULL, "socket path \"%s\" too "
		    "long", path);
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1 || connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1)
		cni_fail(CNI_ERR_TRY_AGAIN, strerror(errno), "cannot reach "
		    "enid at %s; is it running?", path);
	line = json_object_to_json_string_ext(req,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (dprintf(fd, "%s\n", line) < 0)
		cni_fail(CNI_ERR_IO, strerror(errno), "writing to %s", path);
	pfd.fd = fd;
	pfd.events = POLLIN;
	for (;;) {
		if (poll(&pfd, 1, CNI_TIMEOUT_MS) != 1)
			cni_fail(CNI_ERR_TRY_AGAIN, NULL, "enid did not answer "
			    "within %d ms", CNI_TIMEOUT_MS);
		n = read(fd, buf + len, CNI_ANSWER_MAX - len);
		if (n <= 0)
			cni_fail(CNI_ERR_IO, NULL, "enid closed the connection "
			    "without a complete answer");
		len += (size_t)n;
		if (memchr(buf, '\n', len) != NULL)
			break;
		if (len == CNI_ANSWER_MAX)
			cni_fail(CNI_ERR_IO, NULL, "answer from enid longer "
			    "than %d bytes", CNI_ANSWER_MAX);
	}
	close(fd);
	buf[len] = '\0';
	ans = json_tokener_parse(buf);
	if (ans == NULL || !json_object_is_type(ans, json_type_object))
		cni_fail(CNI_ERR_DECODE, NULL, "malformed answer from enid");
	return ans;
}

int
main(void)
{
	const char *cmd, *socket_path, *type;
	struct json_object *ok, *v;

	cmd = env("CNI_COMMAND", true);
	if (strcmp(cmd, "VERSION") == 0) {
		cmd_version();
		return 0;
	}
	if (strcmp(cmd, "ADD") != 0 && strcmp(cmd, "DEL") != 0 &&
	    strcmp(cmd, "CHECK") != 0 && strcmp(cmd, "GC") != 0 &&
	    strcmp(cmd, "STATUS") != 0)
		cni_fail(CNI_ERR_INVALID_ENV, NULL, "unknown CNI_COMMAND "
		    "\"%.32s\"", cmd);

	cni.conf = read_config();
	cni_version = conf_string(cni.conf, "cniVersion", true);
	if (!version_supported(cni_version)) {
		const char *asked = cni_version;

		cni_version = "1.1.0";
		cni_fail(CNI_ERR_INCOMPATIBLE, NULL, "cniVersion \"%.16s\" not "
		    "supported (0.4.0, 1.0.0, 1.1.0)", asked);
	}
	type = conf_string(cni.conf, "type", true);
	if (strcmp(type, "enid-cni") != 0 && strcmp(type, "enid-ipam") != 0)
		cni_fail(CNI_ERR_INVALID_CONFIG, NULL, "type \"%.32s\" is not "
		    "enid-cni", type);
	socket_path = conf_string(cni.conf, "socket", false);
	if (socket_path == NULL)
		socket_path = ENID_RUNTIME_DIR "/cni.sock";

	cni.req = json_object_new_object();
	json_object_object_add(cni.req, "op", json_object_new_string(cmd));
	if (strcmp(cmd, "ADD") == 0 || strcmp(cmd, "DEL") == 0 ||
	    strcmp(cmd, "CHECK") == 0) {
		json_object_object_add(cni.req, "container_id",
		    json_object_new_string(env("CNI_CONTAINERID", true)));
		json_object_object_add(cni.req, "ifname",
		    json_object_new_string(env("CNI_IFNAME", true)));
		/* DEL does not require the namespace (it may be gone). */
		if (env("CNI_NETNS", strcmp(cmd, "DEL") != 0) != NULL)
			json_object_object_add(cni.req, "netns",
			    json_object_new_string(getenv("CNI_NETNS")));
		add_cni_args(cni.req);
	}
	cni.ans = broker_call(socket_path, cni.req);
	if (!json_object_object_get_ex(cni.ans, "ok", &ok) ||
	    !json_object_is_type(ok, json_type_boolean))
		cni_fail(CNI_ERR_DECODE, NULL, "malformed answer from enid: no "
		    "\"ok\"");
	if (!json_object_get_boolean(ok)) {
		const char *code = "unknown", *err = "no reason given";

		if (json_object_object_get_ex(cni.ans, "code", &v) &&
		    json_object_is_type(v, json_type_string))
			code = json_object_get_string(v);
		if (json_object_object_get_ex(cni.ans, "error", &v) &&
		    json_object_is_type(v, json_type_string))
			err = json_object_get_string(v);
		cni_fail(strcmp(cmd, "STATUS") == 0 ? CNI_ERR_NOT_AVAILABLE :
		    strcmp(code, "throttled") == 0 ||
		    strcmp(code, "timeout") == 0 ? CNI_ERR_TRY_AGAIN : 100,
		    code, "%s", err);
	}
	if (json_object_object_get_ex(cni.ans, "result", &v)) {
		json_object_object_add(v, "cniVersion",
		    json_object_new_string(cni_version));
		printf("%s\n", json_object_to_json_string_ext(v,
		    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	}
	json_object_put(cni.ans);
	json_object_put(cni.req);
	json_object_put(cni.conf);
	return 0;
}
