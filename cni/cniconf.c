/*
 * Parsing an enid-cni invocation (see cniconf.h).  The order of the
 * checks decides which error a runtime sees when several things are
 * wrong: the command, then stdin as JSON, then cniVersion (so later
 * errors are answered in the configuration's version), then the
 * environment the command needs, then the configuration's keys.
 *
 * In the main role the configuration is enid-cni's own and every key is
 * checked; an unknown one is refused with code 2, naming it and its value
 * (keys under "cni.dev/" are the runtime's and pass).  In the IPAM role
 * the top level belongs to the main plugin: only the keys the CNI
 * specification defines are read there, and "ipam" is checked whole.
 */
#include <arpa/inet.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "addr.h"
#include "cniconf.h"
#include "conf.h"

#define ENID_CNI_SOCKET		ENID_RUNTIME_DIR "/cni.sock"

const char *const cni_versions[] = { "0.4.0", "1.0.0", "1.1.0", NULL };

static const struct {
	const char	*name;
	enum cni_cmd	 cmd;
} commands[] = {
	{ "ADD", CNI_CMD_ADD },
	{ "DEL", CNI_CMD_DEL },
	{ "CHECK", CNI_CMD_CHECK },
	{ "GC", CNI_CMD_GC },
	{ "STATUS", CNI_CMD_STATUS },
	{ "VERSION", CNI_CMD_VERSION },
};

/*
 * Broker codes and the CNI codes they become.  Conditions that pass by
 * themselves (a pool still growing, a throttled cloud) are the spec's 11,
 * so runtimes retry; an attachment the broker never held is 3; the rest
 * are enid's own, one per cause, so a runtime's log says which.
 */
static const struct {
	const char	*broker;
	int		 cni;
} broker_codes[] = {
	{ "try-again",		CNI_ERR_TRY_AGAIN },
	{ "busy",		CNI_ERR_TRY_AGAIN },
	{ "not-ready",		CNI_ERR_TRY_AGAIN },
	{ "cancelled",		CNI_ERR_TRY_AGAIN },
	{ "timeout",		CNI_ERR_TRY_AGAIN },
	{ "throttled",		CNI_ERR_TRY_AGAIN },
	{ "cloud-unreachable",	CNI_ERR_TRY_AGAIN },
	{ "unknown-container",	CNI_ERR_UNKNOWN_CONTAINER },
	{ "bad-request",	101 },
	{ "subnet-full",	102 },
	{ "eni-limit",		103 },
	{ "max-pods",		104 },
	{ "no-address",		105 },
	{ "address-lost",	106 },
	{ "address-mismatch",	107 },
	{ "eni-unavailable",	108 },
	{ "netd",		109 },
	{ "cloud-error",	110 },
	{ "internal",		111 },
};

int
cni_broker_code(const char *code)
{
	size_t i;

	for (i = 0; i < sizeof(broker_codes) / sizeof(broker_codes[0]); i++)
		if (strcmp(broker_codes[i].broker, code) == 0)
			return broker_codes[i].cni;
	return CNI_ERR_ENID;
}

static int
fail(struct cni_error *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
fail(struct cni_error *e, int code, const char *fmt, ...)
{
	va_list ap;

	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	e->details[0] = '\0';
	return -1;
}

bool
cni_version_supported(const char *v)
{
	const char *const *p;

	for (p = cni_versions; *p; p++)
		if (strcmp(*p, v) == 0)
			return true;
	return false;
}

/* ---- names ---- */

static bool
is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9');
}

/* The spec's container id (and network name): an alphanumeric, then
 * alphanumerics, '_', '.' or '-'. */
static bool
spec_id_ok(const char *s, size_t max)
{
	size_t i;

	if (!is_alnum(s[0]))
		return false;
	for (i = 1; s[i] != '\0'; i++)
		if (i >= max || !(is_alnum(s[i]) || s[i] == '_' ||
		    s[i] == '.' || s[i] == '-'))
			return false;
	return true;
}

/* Linux interface names as the spec allows them, printable ASCII. */
static bool
ifname_ok(const char *s)
{
	size_t i;

	if (s[0] == '\0' || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (i = 0; s[i] != '\0'; i++)
		if (i >= CNI_IFNAME_LEN - 1 || s[i] <= ' ' || s[i] > '~' ||
		    s[i] == '/' || s[i] == ':')
			return false;
	return true;
}

static bool
printable_ok(const char *s)
{
	for (; *s; s++)
		if (*s <= ' ' || *s > '~')
			return false;
	return true;
}

static bool
prefix_ok(const char *s)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= '0' && s[i] <= '9')))
			return false;
	return i >= 1 && i <= CNI_PREFIX_MAX;
}

/* FNV-1a, 64 bits, over the id, a separator no id holds, and the name. */
static uint64_t
attachment_hash(const char *cid, const char *ifname)
{
	uint64_t h = 14695981039346656037ull;

	for (; *cid; cid++)
		h = (h ^ (unsigned char)*cid) * 1099511628211ull;
	h = (h ^ 0xffu) * 1099511628211ull;
	for (; *ifname; ifname++)
		h = (h ^ (unsigned char)*ifname) * 1099511628211ull;
	return h;
}

void
cni_veth_name(const char *prefix, const char *cid, const char *ifname,
    char out[CNI_IFNAME_LEN])
{
	static const char hex[] = "0123456789abcdef";
	uint64_t h = attachment_hash(cid, ifname);
	size_t n = strnlen(prefix, CNI_PREFIX_MAX), i;

	memcpy(out, prefix, n);
	for (i = n; i < CNI_IFNAME_LEN - 1; i++) {
		out[i] = hex[h & 0xf];
		h >>= 4;
	}
	out[CNI_IFNAME_LEN - 1] = '\0';
}

bool
cni_veth_name_ours(const char *prefix, const char *name)
{
	size_t n = strlen(prefix), i;

	if (strncmp(name, prefix, n) != 0 ||
	    strlen(name) != CNI_IFNAME_LEN - 1)
		return false;
	for (i = n; name[i] != '\0'; i++)
		if (!((name[i] >= '0' && name[i] <= '9') ||
		    (name[i] >= 'a' && name[i] <= 'f')))
			return false;
	return true;
}

/* ---- JSON helpers ---- */

/* A JSON string into a fixed buffer: no NUL inside, room for its own. */
static int
take_str(struct json_object *v, const char *what, char *dst, size_t size,
    int code, struct cni_error *e)
{
	const char *s;
	size_t len;

	if (!json_object_is_type(v, json_type_string))
		return fail(e, code, "%s must be a string", what);
	s = json_object_get_string(v);
	len = (size_t)json_object_get_string_len(v);
	if (strlen(s) != len)
		return fail(e, code, "%s contains a NUL byte", what);
	if (len >= size)
		return fail(e, code, "%s is longer than %zu bytes", what,
		    size - 1);
	memcpy(dst, s, len + 1);
	return 0;
}

static bool
is_string_array(struct json_object *v)
{
	size_t i, n;

	if (!json_object_is_type(v, json_type_array))
		return false;
	n = json_object_array_length(v);
	for (i = 0; i < n; i++)
		if (!json_object_is_type(json_object_array_get_idx(v, i),
		    json_type_string))
			return false;
	return true;
}

/* A short rendering of a JSON value for an error message. */
static void
value_text(struct json_object *v, char *buf, size_t size)
{
	const char *s = json_object_to_json_string_ext(v,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);

	snprintf(buf, size, "%.64s%s", s, strlen(s) > 64 ? "..." : "");
}

/* ---- the environment ---- */

static int
env_need(const char *name, const char *v, struct cni_error *e)
{
	if (v == NULL || *v == '\0')
		return fail(e, CNI_ERR_INVALID_ENV, "%s is not set", name);
	return 0;
}

/* CNI_ARGS "K=V;K=V": the pod's identity; other keys are the runtime's
 * business (kubelet passes IgnoreUnknown and more). */
static int
parse_cni_args(const char *args, struct cni_conf *c, struct cni_error *e)
{
	char copy[CNI_ARGS_MAX + 1], *save = NULL, *kv;

	if (args == NULL || *args == '\0')
		return 0;
	if (strlen(args) > CNI_ARGS_MAX)
		return fail(e, CNI_ERR_INVALID_ENV, "CNI_ARGS is longer than "
		    "%d bytes", CNI_ARGS_MAX);
	memcpy(copy, args, strlen(args) + 1);
	for (kv = strtok_r(copy, ";", &save); kv != NULL;
	    kv = strtok_r(NULL, ";", &save)) {
		char *eq = strchr(kv, '=');
		char *dst = NULL;
		size_t size = 0;

		if (eq == NULL || eq == kv)
			return fail(e, CNI_ERR_INVALID_ENV, "CNI_ARGS: "
			    "\"%.48s\" is not KEY=VALUE", kv);
		*eq = '\0';
		if (strcmp(kv, "K8S_POD_NAMESPACE") == 0) {
			dst = c->k8s_namespace;
			size = sizeof(c->k8s_namespace);
		} else if (strcmp(kv, "K8S_POD_NAME") == 0) {
			dst = c->k8s_name;
			size = sizeof(c->k8s_name);
		} else if (strcmp(kv, "K8S_POD_UID") == 0) {
			dst = c->k8s_uid;
			size = sizeof(c->k8s_uid);
		} else
			continue;
		if (strlen(eq + 1) >= size)
			return fail(e, CNI_ERR_INVALID_ENV, "CNI_ARGS: %s is "
			    "longer than %zu bytes", kv, size - 1);
		if (!printable_ok(eq + 1))
			return fail(e, CNI_ERR_INVALID_ENV, "CNI_ARGS: %s must "
			    "be printable ASCII without spaces", kv);
		memcpy(dst, eq + 1, strlen(eq + 1) + 1);
	}
	return 0;
}

static int
parse_env(const struct cni_env *env, struct cni_conf *c, struct cni_error *e)
{
	bool attach = c->cmd == CNI_CMD_ADD || c->cmd == CNI_CMD_DEL ||
	    c->cmd == CNI_CMD_CHECK;
	const char *v;

	if (!attach)
		return 0;
	if (env_need("CNI_CONTAINERID", env->containerid, e) == -1)
		return -1;
	v = env->containerid;
	if (strlen(v) >= CNI_CID_LEN || !spec_id_ok(v, CNI_CID_LEN - 1))
		return fail(e, CNI_ERR_INVALID_ENV, "CNI_CONTAINERID \"%.64s\" "
		    "is not a container id (1 to 256 of A-Z a-z 0-9 _ . -, "
		    "starting with a letter or digit)", v);
	memcpy(c->container_id, v, strlen(v) + 1);
	if (env_need("CNI_IFNAME", env->ifname, e) == -1)
		return -1;
	v = env->ifname;
	if (!ifname_ok(v))
		return fail(e, CNI_ERR_INVALID_ENV, "CNI_IFNAME \"%.32s\" is "
		    "not an interface name (1 to 15 printable bytes, no '/', "
		    "':' or space, not \".\" or \"..\")", v);
	memcpy(c->ifname, v, strlen(v) + 1);
	/* DEL must work when the namespace is already gone, and the IPAM
	 * role never enters it. */
	if (c->cmd != CNI_CMD_DEL &&
	    env_need("CNI_NETNS", env->netns, e) == -1)
		return -1;
	if ((v = env->netns) != NULL && *v != '\0') {
		if (v[0] != '/' || strlen(v) >= CNI_NETNS_LEN)
			return fail(e, CNI_ERR_INVALID_ENV, "CNI_NETNS "
			    "\"%.64s\" is not an absolute path under %d bytes",
			    v, CNI_NETNS_LEN);
		memcpy(c->netns, v, strlen(v) + 1);
	}
	return parse_cni_args(env->args, c, e);
}

/* ---- the configuration's parts ---- */

static int
parse_dns(struct json_object *v, const char *where, struct cni_conf *c,
    struct cni_error *e)
{
	if (!json_object_is_type(v, json_type_object))
		return fail(e, CNI_ERR_INVALID_CONFIG, "%s must be an object",
		    where);
	json_object_object_foreach(v, k, val) {
		if (strcmp(k, "domain") == 0) {
			if (!json_object_is_type(val, json_type_string))
				return fail(e, CNI_ERR_INVALID_CONFIG, "%s.%s "
				    "must be a string", where, k);
		} else if (strcmp(k, "nameservers") == 0 ||
		    strcmp(k, "search") == 0 || strcmp(k, "options") == 0) {
			if (!is_string_array(val))
				return fail(e, CNI_ERR_INVALID_CONFIG, "%s.%s "
				    "must be an array of strings", where, k);
		} else
			return fail(e, CNI_ERR_UNSUPPORTED, "%s: unsupported "
			    "field \"%.32s\"", where, k);
	}
	c->dns = json_object_get(v);
	return 0;
}

static bool
ip_text_ok(const char *s, bool cidr, bool *v6)
{
	char buf[64], *slash;
	unsigned char bin[16];
	uint32_t a;
	uint8_t p;

	*v6 = strchr(s, ':') != NULL;
	if (!*v6)
		return cidr ? cidr4_parse(s, &a, &p) == 0 :
		    ip4_parse(s, &a) == 0;
	if (strlen(s) >= sizeof(buf))
		return false;
	memcpy(buf, s, strlen(s) + 1);
	slash = strchr(buf, '/');
	if (cidr) {
		char *end;
		long n;

		if (slash == NULL)
			return false;
		*slash = '\0';
		n = strtol(slash + 1, &end, 10);
		if (slash[1] == '\0' || *end != '\0' || n < 0 || n > 128)
			return false;
	} else if (slash != NULL)
		return false;
	return inet_pton(AF_INET6, buf, bin) == 1;
}

static int
check_field(struct json_object *o, const char *key, json_type t,
    const char *where, size_t i, struct cni_error *e)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		return 0;
	if (!json_object_is_type(v, t))
		return fail(e, CNI_ERR_INVALID_CONFIG, "prevResult.%s[%zu].%s "
		    "has the wrong type", where, i, key);
	return 0;
}

/*
 * prevResult: the shape of each entry is checked (so a result built from
 * it is well-formed), and the address meant for this attachment is
 * found, one a family: the address of that family whose interface is
 * CNI_IFNAME in CNI_NETNS, else the first of that family.
 */
static int
parse_prev(struct json_object *v, struct cni_conf *c, struct cni_error *e)
{
	struct json_object *ifs = NULL, *ips = NULL, *routes = NULL, *x;
	size_t i, n, nifs = 0;
	int mine = -1;

	if (!json_object_is_type(v, json_type_object))
		return fail(e, CNI_ERR_INVALID_CONFIG, "prevResult must be an "
		    "object");
	if (json_object_object_get_ex(v, "interfaces", &ifs)) {
		if (!json_object_is_type(ifs, json_type_array))
			return fail(e, CNI_ERR_INVALID_CONFIG, "prevResult."
			    "interfaces must be an array");
		nifs = json_object_array_length(ifs);
		for (i = 0; i < nifs; i++) {
			struct json_object *it = json_object_array_get_idx(ifs,
			    i), *name, *sb;

			if (!json_object_is_type(it, json_type_object) ||
			    !json_object_object_get_ex(it, "name", &name) ||
			    !json_object_is_type(name, json_type_string))
				return fail(e, CNI_ERR_INVALID_CONFIG,
				    "prevResult.interfaces[%zu] needs a string "
				    "\"name\"", i);
			if (check_field(it, "mac", json_type_string,
			    "interfaces", i, e) == -1 ||
			    check_field(it, "sandbox", json_type_string,
			    "interfaces", i, e) == -1 ||
			    check_field(it, "mtu", json_type_int, "interfaces",
			    i, e) == -1 ||
			    check_field(it, "socketPath", json_type_string,
			    "interfaces", i, e) == -1 ||
			    check_field(it, "pciID", json_type_string,
			    "interfaces", i, e) == -1)
				return -1;
			if (mine < 0 && strcmp(json_object_get_string(name),
			    c->ifname) == 0 &&
			    json_object_object_get_ex(it, "sandbox", &sb) &&
			    strcmp(json_object_get_string(sb), c->netns) == 0)
				mine = (int)i;
		}
	}
	if (json_object_object_get_ex(v, "ips", &ips)) {
		struct ip_addr first[CNI_NFAMILIES];
		int f;

		memset(first, 0, sizeof(first));

		if (!json_object_is_type(ips, json_type_array))
			return fail(e, CNI_ERR_INVALID_CONFIG, "prevResult.ips "
			    "must be an array");
		n = json_object_array_length(ips);
		for (i = 0; i < n; i++) {
			struct json_object *it = json_object_array_get_idx(ips,
			    i), *a, *idx = NULL;
			bool v6;
			struct ip_prefix p;

			if (!json_object_is_type(it, json_type_object) ||
			    !json_object_object_get_ex(it, "address", &a) ||
			    !json_object_is_type(a, json_type_string) ||
			    !ip_text_ok(json_object_get_string(a), true, &v6))
				return fail(e, CNI_ERR_INVALID_CONFIG,
				    "prevResult.ips[%zu] needs an \"address\" "
				    "in CIDR notation", i);
			if (json_object_object_get_ex(it, "gateway", &x) &&
			    (!json_object_is_type(x, json_type_string) ||
			    !ip_text_ok(json_object_get_string(x), false,
			    &v6)))
				return fail(e, CNI_ERR_INVALID_CONFIG,
				    "prevResult.ips[%zu].gateway is not an IP "
				    "address", i);
			if (json_object_object_get_ex(it, "interface", &idx) &&
			    (!json_object_is_type(idx, json_type_int) ||
			    json_object_get_int64(idx) < 0 ||
			    (uint64_t)json_object_get_int64(idx) >= nifs))
				return fail(e, CNI_ERR_INVALID_CONFIG,
				    "prevResult.ips[%zu].interface is not an "
				    "index into prevResult.interfaces", i);
			if (check_field(it, "version", json_type_string, "ips",
			    i, e) == -1)
				return -1;
			/* One text per address, as the plugin prints it;
			 * another runtime's spelling is carried, not
			 * checked. */
			if (ip_prefix_parse(json_object_get_string(a), &p,
			    NULL) != 0)
				continue;
			f = p.addr.family == AF_INET6 ? CNI_V6 : CNI_V4;
			if (first[f].family == 0)
				first[f] = p.addr;
			if (mine >= 0 && idx != NULL &&
			    json_object_get_int64(idx) == mine &&
			    c->prev_ip[f].family == 0)
				c->prev_ip[f] = p.addr;
		}
		for (f = 0; f < CNI_NFAMILIES; f++)
			if (c->prev_ip[f].family == 0)
				c->prev_ip[f] = first[f];
	}
	if (json_object_object_get_ex(v, "routes", &routes)) {
		static const char *const ints[] = { "mtu", "advmss",
		    "priority", "table", "scope" };

		if (!json_object_is_type(routes, json_type_array))
			return fail(e, CNI_ERR_INVALID_CONFIG, "prevResult."
			    "routes must be an array");
		n = json_object_array_length(routes);
		for (i = 0; i < n; i++) {
			struct json_object *it = json_object_array_get_idx(
			    routes, i), *d;
			bool v6;
			size_t k;

			if (!json_object_is_type(it, json_type_object) ||
			    !json_object_object_get_ex(it, "dst", &d) ||
			    !json_object_is_type(d, json_type_string) ||
			    !ip_text_ok(json_object_get_string(d), true, &v6))
				return fail(e, CNI_ERR_INVALID_CONFIG,
				    "prevResult.routes[%zu] needs a \"dst\" in "
				    "CIDR notation", i);
			if (json_object_object_get_ex(it, "gw", &x) &&
			    (!json_object_is_type(x, json_type_string) ||
			    !ip_text_ok(json_object_get_string(x), false,
			    &v6)))
				return fail(e, CNI_ERR_INVALID_CONFIG,
				    "prevResult.routes[%zu].gw is not an IP "
				    "address", i);
			for (k = 0; k < sizeof(ints) / sizeof(ints[0]); k++)
				if (check_field(it, ints[k], json_type_int,
				    "routes", i, e) == -1)
					return -1;
		}
	}
	if (json_object_object_get_ex(v, "dns", &x)) {
		struct cni_conf scratch;

		memset(&scratch, 0, sizeof(scratch));
		if (parse_dns(x, "prevResult.dns", &scratch, e) == -1)
			return -1;
		json_object_put(scratch.dns);
	}
	c->prev = json_object_get(v);
	return 0;
}

/* "cni.dev/valid-attachments": [{"containerID", "ifname"}, ...]. */
static int
parse_valid(struct json_object *v, const char *key, struct cni_conf *c,
    struct cni_error *e)
{
	size_t i, n;

	if (c->have_valid)
		return 0;	/* both names given: the first one read wins */
	/* libcni passes the runtime's list as it is, and Go marshals an
	 * empty list as null (CRI-O's, for a network without a live pod):
	 * no attachment is valid, as for the reference plugins.  The key
	 * absent is another matter (cni_conf_parse). */
	if (json_object_is_type(v, json_type_null)) {
		c->have_valid = true;
		return 0;
	}
	if (!json_object_is_type(v, json_type_array))
		return fail(e, CNI_ERR_INVALID_CONFIG, "\"%s\" must be an "
		    "array", key);
	n = json_object_array_length(v);
	if (n > CNI_MAX_VALID)
		return fail(e, CNI_ERR_INVALID_CONFIG, "\"%s\" has more than "
		    "%d entries", key, CNI_MAX_VALID);
	if (n > 0 && (c->valid = calloc(n, sizeof(*c->valid))) == NULL)
		return fail(e, CNI_ERR_IO, "out of memory");
	for (i = 0; i < n; i++) {
		struct json_object *it = json_object_array_get_idx(v, i), *x;
		struct cni_attachment *a = &c->valid[i];
		char what[96];

		if (!json_object_is_type(it, json_type_object))
			return fail(e, CNI_ERR_INVALID_CONFIG, "%s[%zu] must "
			    "be an object", key, i);
		snprintf(what, sizeof(what), "%s[%zu].containerID", key, i);
		if (!json_object_object_get_ex(it, "containerID", &x))
			return fail(e, CNI_ERR_INVALID_CONFIG, "%s is missing",
			    what);
		if (take_str(x, what, a->container_id,
		    sizeof(a->container_id), CNI_ERR_INVALID_CONFIG, e) == -1)
			return -1;
		if (!spec_id_ok(a->container_id, CNI_CID_LEN - 1))
			return fail(e, CNI_ERR_INVALID_CONFIG, "%s is not a "
			    "container id", what);
		snprintf(what, sizeof(what), "%s[%zu].ifname", key, i);
		if (!json_object_object_get_ex(it, "ifname", &x))
			return fail(e, CNI_ERR_INVALID_CONFIG, "%s is missing",
			    what);
		if (take_str(x, what, a->ifname, sizeof(a->ifname),
		    CNI_ERR_INVALID_CONFIG, e) == -1)
			return -1;
		if (!ifname_ok(a->ifname))
			return fail(e, CNI_ERR_INVALID_CONFIG, "%s is not an "
			    "interface name", what);
		c->nvalid = i + 1;
	}
	c->have_valid = true;
	return 0;
}

static int
parse_socket(struct json_object *v, const char *what, struct cni_conf *c,
    struct cni_error *e)
{
	if (take_str(v, what, c->socket, sizeof(c->socket),
	    CNI_ERR_INVALID_CONFIG, e) == -1)
		return -1;
	if (c->socket[0] != '/')
		return fail(e, CNI_ERR_INVALID_CONFIG, "%s \"%.64s\" is not an "
		    "absolute path", what, c->socket);
	return 0;
}

/*
 * The user enid runs as, who alone besides root may serve the socket: a
 * name as enid.conf's "user" takes it, or a numeric uid (a node whose
 * /etc/passwd does not know the user the daemon's image runs as).
 */
static int
parse_user(struct json_object *v, const char *what, struct cni_conf *c,
    struct cni_error *e)
{
	const char *s;
	int64_t n;
	size_t i;

	if (json_object_is_type(v, json_type_int)) {
		n = json_object_get_int64(v);
		if (n < 0 || n >= (int64_t)UINT32_MAX)
			return fail(e, CNI_ERR_INVALID_CONFIG, "%s %lld is not "
			    "a uid", what, (long long)n);
		c->uid_is_number = true;
		c->enid_uid = (uint32_t)n;
		snprintf(c->enid_user, sizeof(c->enid_user), "%lld",
		    (long long)n);
		return 0;
	}
	if (take_str(v, what, c->enid_user, sizeof(c->enid_user),
	    CNI_ERR_INVALID_CONFIG, e) == -1)
		return -1;
	s = c->enid_user;
	for (i = 0; s[i] != '\0'; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || s[i] == '_' ||
		    (i > 0 && ((s[i] >= '0' && s[i] <= '9') || s[i] == '-'))))
			return fail(e, CNI_ERR_INVALID_CONFIG, "%s \"%.32s\" is "
			    "not a user name (a-z, _, then also 0-9 and -) or a "
			    "uid", what, s);
	if (i == 0)
		return fail(e, CNI_ERR_INVALID_CONFIG, "%s is empty", what);
	c->uid_is_number = false;
	return 0;
}

/* The "ipam" object in the IPAM role. */
static int
parse_ipam(struct json_object *v, struct cni_conf *c, struct cni_error *e)
{
	struct json_object *t;

	if (!json_object_is_type(v, json_type_object))
		return fail(e, CNI_ERR_INVALID_CONFIG, "\"ipam\" must be an "
		    "object");
	if (!json_object_object_get_ex(v, "type", &t) ||
	    !json_object_is_type(t, json_type_string))
		return fail(e, CNI_ERR_INVALID_CONFIG, "ipam: missing string "
		    "\"type\"");
	if (strcmp(json_object_get_string(t), "enid-ipam") != 0)
		return fail(e, CNI_ERR_INVALID_CONFIG, "ipam: type \"%.32s\" "
		    "is not enid-ipam", json_object_get_string(t));
	json_object_object_foreach(v, k, val) {
		char vt[80];

		if (strcmp(k, "type") == 0)
			continue;
		if (strcmp(k, "socket") == 0) {
			if (parse_socket(val, "ipam.socket", c, e) == -1)
				return -1;
		} else if (strcmp(k, "dns") == 0) {
			if (parse_dns(val, "ipam.dns", c, e) == -1)
				return -1;
		} else if (strcmp(k, "enid_user") == 0) {
			if (parse_user(val, "ipam.enid_user", c, e) == -1)
				return -1;
		} else {
			value_text(val, vt, sizeof(vt));
			return fail(e, CNI_ERR_UNSUPPORTED, "ipam: unsupported "
			    "field \"%.32s\": %s", k, vt);
		}
	}
	return 0;
}

/* A key of the main role's configuration; 0 or -1. */
static int
main_key(const char *k, struct json_object *val, struct cni_conf *c,
    struct cni_error *e)
{
	char vt[80];
	int64_t n;

	if (strcmp(k, "socket") == 0)
		return parse_socket(val, "\"socket\"", c, e);
	if (strcmp(k, "mtu") == 0) {
		n = json_object_get_int64(val);
		if (!json_object_is_type(val, json_type_int) || n < 68 ||
		    n > 65535)
			return fail(e, CNI_ERR_INVALID_CONFIG, "\"mtu\" must "
			    "be an integer from 68 to 65535");
		c->mtu = (uint32_t)n;
		return 0;
	}
	if (strcmp(k, "veth_prefix") == 0) {
		if (take_str(val, "\"veth_prefix\"", c->veth_prefix,
		    sizeof(c->veth_prefix), CNI_ERR_INVALID_CONFIG, e) == -1 ||
		    !prefix_ok(c->veth_prefix))
			return fail(e, CNI_ERR_INVALID_CONFIG, "\"veth_prefix\" "
			    "must be 1 to %d of a-z 0-9", CNI_PREFIX_MAX);
		return 0;
	}
	if (strcmp(k, "dns") == 0)
		return parse_dns(val, "\"dns\"", c, e);
	if (strcmp(k, "enid_user") == 0)
		return parse_user(val, "\"enid_user\"", c, e);
	if (strcmp(k, "ipam") == 0)
		return fail(e, CNI_ERR_INVALID_CONFIG, "enid-cni takes its "
		    "addresses from enid; remove \"ipam\" (or use type "
		    "\"enid-ipam\" under another plugin)");
	value_text(val, vt, sizeof(vt));
	return fail(e, CNI_ERR_UNSUPPORTED, "unsupported field \"%.32s\": %s",
	    k, vt);
}

/* Keys the specification defines for every plugin's configuration. */
static int
spec_key(const char *k, struct json_object *val, struct cni_conf *c,
    struct cni_error *e, bool *known)
{
	*known = true;
	if (strcmp(k, "cniVersion") == 0 || strcmp(k, "type") == 0 ||
	    strcmp(k, "name") == 0)
		return 0;	/* read before */
	if (strcmp(k, "cniVersions") == 0) {
		if (!is_string_array(val))
			return fail(e, CNI_ERR_INVALID_CONFIG, "\"cniVersions\" "
			    "must be an array of strings");
		return 0;
	}
	if (strcmp(k, "prevResult") == 0)
		return parse_prev(val, c, e);
	if (strcmp(k, "runtimeConfig") == 0 || strcmp(k, "args") == 0 ||
	    strcmp(k, "capabilities") == 0) {
		if (!json_object_is_type(val, json_type_object))
			return fail(e, CNI_ERR_INVALID_CONFIG, "\"%s\" must be "
			    "an object", k);
		return 0;
	}
	if (strcmp(k, "disableCheck") == 0 || strcmp(k, "disableGC") == 0) {
		if (!json_object_is_type(val, json_type_boolean))
			return fail(e, CNI_ERR_INVALID_CONFIG, "\"%s\" must be "
			    "true or false", k);
		return 0;
	}
	/* libcni passes the list under both names (the second is the spec's
	 * first spelling). */
	if (strcmp(k, "cni.dev/valid-attachments") == 0 ||
	    strcmp(k, "cni.dev/attachments") == 0)
		return parse_valid(val, k, c, e);
	if (strncmp(k, "cni.dev/", 8) == 0)
		return 0;	/* the runtime's, for other plugins */
	*known = false;
	return 0;
}

static struct json_object *
decode(const char *text, size_t len, struct cni_error *e)
{
	struct json_tokener *tok;
	struct json_object *o;
	size_t end, i;

	if (len > CNI_STDIN_MAX) {
		fail(e, CNI_ERR_DECODE, "network configuration is larger than "
		    "%d bytes", CNI_STDIN_MAX);
		return NULL;
	}
	if (memchr(text, '\0', len) != NULL) {
		fail(e, CNI_ERR_DECODE, "network configuration is not valid "
		    "JSON (it holds a NUL byte)");
		return NULL;
	}
	if ((tok = json_tokener_new()) == NULL) {
		fail(e, CNI_ERR_IO, "out of memory");
		return NULL;
	}
	o = json_tokener_parse_ex(tok, text, (int)len);
	end = json_tokener_get_parse_end(tok);
	if (o == NULL || json_tokener_get_error(tok) != json_tokener_success) {
		fail(e, CNI_ERR_DECODE, "network configuration is not valid "
		    "JSON: %s", json_tokener_error_desc(
		    json_tokener_get_error(tok)));
		json_tokener_free(tok);
		json_object_put(o);
		return NULL;
	}
	json_tokener_free(tok);
	for (i = end; i < len; i++)
		if (text[i] != ' ' && text[i] != '\t' && text[i] != '\n' &&
		    text[i] != '\r') {
			fail(e, CNI_ERR_DECODE, "network configuration is not "
			    "valid JSON: text after the object");
			json_object_put(o);
			return NULL;
		}
	if (!json_object_is_type(o, json_type_object)) {
		fail(e, CNI_ERR_DECODE, "network configuration is not a JSON "
		    "object");
		json_object_put(o);
		return NULL;
	}
	return o;
}

static const char *
known_version(const char *v)
{
	const char *const *p;

	for (p = cni_versions; *p; p++)
		if (strcmp(*p, v) == 0)
			return *p;
	return NULL;
}

int
cni_conf_parse(enum cni_role role, const struct cni_env *env,
    const char *text, size_t len, struct cni_conf *c, struct cni_error *e)
{
	struct json_object *o = NULL, *v;
	const char *s;
	size_t i;

	memset(c, 0, sizeof(*c));
	memset(e, 0, sizeof(*e));
	c->role = role;
	c->version = "1.1.0";
	memcpy(c->veth_prefix, CNI_DEFAULT_PREFIX, sizeof(CNI_DEFAULT_PREFIX));
	memcpy(c->enid_user, CNI_DEFAULT_USER, sizeof(CNI_DEFAULT_USER));

	if (env_need("CNI_COMMAND", env->command, e) == -1)
		return -1;
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(commands[i].name, env->command) == 0)
			break;
	if (i == sizeof(commands) / sizeof(commands[0]))
		return fail(e, CNI_ERR_INVALID_ENV, "unknown CNI_COMMAND "
		    "\"%.32s\"", env->command);
	c->cmd = commands[i].cmd;

	if (c->cmd == CNI_CMD_VERSION) {
		/* The input, if any, only says which version to answer in. */
		struct cni_error ignored;

		if (len > 0 && (o = decode(text, len, &ignored)) != NULL &&
		    json_object_object_get_ex(o, "cniVersion", &v) &&
		    json_object_is_type(v, json_type_string) &&
		    known_version(json_object_get_string(v)) != NULL)
			c->version = known_version(json_object_get_string(v));
		json_object_put(o);
		return 0;
	}

	if ((o = decode(text, len, e)) == NULL)
		return -1;
	if (!json_object_object_get_ex(o, "cniVersion", &v)) {
		fail(e, CNI_ERR_INVALID_CONFIG, "network configuration: "
		    "missing \"cniVersion\"");
		goto bad;
	}
	if (!json_object_is_type(v, json_type_string)) {
		fail(e, CNI_ERR_INVALID_CONFIG, "network configuration: "
		    "\"cniVersion\" must be a string");
		goto bad;
	}
	if ((c->version = known_version(json_object_get_string(v))) == NULL) {
		c->version = "1.1.0";
		fail(e, CNI_ERR_INCOMPATIBLE, "cniVersion \"%.16s\" not "
		    "supported (0.4.0, 1.0.0, 1.1.0)",
		    json_object_get_string(v));
		goto bad;
	}
	if ((c->cmd == CNI_CMD_GC || c->cmd == CNI_CMD_STATUS) &&
	    strcmp(c->version, "1.1.0") != 0) {
		fail(e, CNI_ERR_INCOMPATIBLE, "%s needs cniVersion 1.1.0, "
		    "not %s", c->cmd == CNI_CMD_GC ? "GC" : "STATUS",
		    c->version);
		goto bad;
	}

	if (parse_env(env, c, e) == -1)
		goto bad;

	if (!json_object_object_get_ex(o, "name", &v)) {
		fail(e, CNI_ERR_INVALID_CONFIG, "network configuration: "
		    "missing \"name\"");
		goto bad;
	}
	if (take_str(v, "network configuration: \"name\"", c->name,
	    sizeof(c->name), CNI_ERR_INVALID_CONFIG, e) == -1)
		goto bad;
	if (!spec_id_ok(c->name, CNI_NAME_LEN - 1)) {
		fail(e, CNI_ERR_INVALID_CONFIG, "network configuration: name "
		    "\"%.32s\" is not a network name (A-Z a-z 0-9 _ . -, "
		    "starting with a letter or digit)", c->name);
		goto bad;
	}
	if (!json_object_object_get_ex(o, "type", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		fail(e, CNI_ERR_INVALID_CONFIG, "network configuration: "
		    "missing string \"type\"");
		goto bad;
	}
	s = json_object_get_string(v);
	if (role == CNI_ROLE_MAIN && strcmp(s, "enid-cni") != 0) {
		fail(e, CNI_ERR_INVALID_CONFIG, "type \"%.32s\" is not "
		    "enid-cni", s);
		goto bad;
	}
	if (role == CNI_ROLE_IPAM) {
		if (!json_object_object_get_ex(o, "ipam", &v)) {
			fail(e, CNI_ERR_INVALID_CONFIG, "network configuration: "
			    "missing \"ipam\" (enid-ipam is an IPAM plugin)");
			goto bad;
		}
		if (parse_ipam(v, c, e) == -1)
			goto bad;
	}
	json_object_object_foreach(o, k, val) {
		bool known;

		if (spec_key(k, val, c, e, &known) == -1)
			goto bad;
		if (known)
			continue;
		/* The IPAM role reads nothing else of the main plugin's. */
		if (role == CNI_ROLE_MAIN && main_key(k, val, c, e) == -1)
			goto bad;
	}
	if (c->cmd == CNI_CMD_CHECK && c->prev == NULL) {
		fail(e, CNI_ERR_INVALID_CONFIG, "CHECK needs \"prevResult\", "
		    "the result of the ADD being checked");
		goto bad;
	}
	if (c->cmd == CNI_CMD_CHECK && c->prev_ip[CNI_V4].family == 0 &&
	    c->prev_ip[CNI_V6].family == 0) {
		fail(e, CNI_ERR_INVALID_CONFIG, "prevResult holds no address "
		    "to check");
		goto bad;
	}
	if (c->cmd == CNI_CMD_GC && !c->have_valid) {
		/* Without the list everything would be released. */
		fail(e, CNI_ERR_INVALID_CONFIG, "GC needs "
		    "\"cni.dev/valid-attachments\"");
		goto bad;
	}
	if (c->socket[0] == '\0')
		snprintf(c->socket, sizeof(c->socket), "%s", ENID_CNI_SOCKET);
	json_object_put(o);
	return 0;
bad:
	json_object_put(o);
	/* The version stays: the error is answered in it. */
	s = c->version;
	cni_conf_free(c);
	c->version = s;
	return -1;
}

void
cni_conf_free(struct cni_conf *c)
{
	json_object_put(c->dns);
	json_object_put(c->prev);
	free(c->valid);
	memset(c, 0, sizeof(*c));
}
