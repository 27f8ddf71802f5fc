/*
 * CNI socket requests (see cnireq.h).  Which keys each op takes:
 *
 *   add    container_id, ifname; netns, k8s_namespace, k8s_name, k8s_uid,
 *          host_veth (enid-cni: the pod's host end, for its host route)
 *   del    container_id, ifname; netns, k8s_*
 *   check  container_id, ifname; netns, k8s_*, ip
 *   gc     valid_attachments: [{container_id, ifname}, ...]
 *   status (nothing)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "addr.h"
#include "cnireq.h"

#define SHOWN_LEN	33
#define CID_RULE	"not a container id (1 to 256 of [A-Za-z0-9_.-], " \
			"not starting with '.' or '-')"
#define IFNAME_RULE	"not an interface name (1 to 15 printable bytes, " \
			"no '/', ':' or space, not \".\" or \"..\")"

enum field {
	F_OP = 0x1,
	F_CID = 0x2,
	F_IFNAME = 0x4,
	F_NETNS = 0x8,
	F_K8S = 0x10,
	F_IP = 0x20,
	F_VALID = 0x40,
	F_VETH = 0x80,
	F_IP6 = 0x100,
};

static const struct {
	const char	*name;
	enum cni_op	 op;
	unsigned	 allowed, required;
} ops[] = {
	{ "add", CNI_OP_ADD, F_OP | F_CID | F_IFNAME | F_NETNS | F_K8S |
	  F_VETH, F_CID | F_IFNAME },
	{ "del", CNI_OP_DEL, F_OP | F_CID | F_IFNAME | F_NETNS | F_K8S,
	  F_CID | F_IFNAME },
	{ "check", CNI_OP_CHECK, F_OP | F_CID | F_IFNAME | F_NETNS | F_K8S |
	  F_IP | F_IP6, F_CID | F_IFNAME },
	{ "gc", CNI_OP_GC, F_OP | F_VALID, F_VALID },
	{ "status", CNI_OP_STATUS, F_OP, 0 },
};

const char *
cni_op_name(enum cni_op op)
{
	size_t i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (ops[i].op == op)
			return ops[i].name;
	return "?";
}

/* A JSON string into a fixed field: no NUL inside, room for its own. */
static int
take_str(struct json_object *v, const char *key, char *dst, size_t size,
    char *err, size_t errlen)
{
	const char *s;
	size_t len;

	if (!json_object_is_type(v, json_type_string)) {
		snprintf(err, errlen, "%s: must be a string", key);
		return -1;
	}
	s = json_object_get_string(v);
	len = (size_t)json_object_get_string_len(v);
	if (strlen(s) != len) {
		snprintf(err, errlen, "%s: contains a NUL byte", key);
		return -1;
	}
	if (len >= size) {
		snprintf(err, errlen, "%s: longer than %zu bytes", key,
		    size - 1);
		return -1;
	}
	memcpy(dst, s, len + 1);
	return 0;
}

/*
 * A client's string as an error may quote it: at most 32 bytes, anything
 * outside printable ASCII shown as '?', so that a key or op name cannot
 * put a newline or an escape sequence into the log line that reports it.
 */
static const char *
shown(const char *s, char buf[SHOWN_LEN])
{
	size_t i;

	for (i = 0; s[i] != '\0' && i < SHOWN_LEN - 1; i++)
		buf[i] = s[i] >= ' ' && s[i] <= '~' ? s[i] : '?';
	buf[i] = '\0';
	return buf;
}

/* Kubernetes names: printable ASCII, nothing that could spoil a log. */
static bool
k8s_ok(const char *s)
{
	for (; *s; s++)
		if (*s <= ' ' || *s > '~')
			return false;
	return true;
}

static int
take_valid(struct json_object *v, struct cni_request *r, char *err,
    size_t errlen)
{
	size_t i, n;
	char key[64], sh[SHOWN_LEN];

	if (!json_object_is_type(v, json_type_array)) {
		snprintf(err, errlen, "valid_attachments: must be an array");
		return -1;
	}
	n = json_object_array_length(v);
	if (n > CNIREQ_MAX_VALID) {
		snprintf(err, errlen, "valid_attachments: more than %d entries",
		    CNIREQ_MAX_VALID);
		return -1;
	}
	if (n > 0 && (r->valid = calloc(n, sizeof(*r->valid))) == NULL) {
		snprintf(err, errlen, "valid_attachments: out of memory");
		return -1;
	}
	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(v, i);
		struct cni_attachment *a = &r->valid[i];
		bool have_cid = false, have_if = false;

		if (!json_object_is_type(e, json_type_object)) {
			snprintf(err, errlen, "valid_attachments[%zu]: must be "
			    "an object", i);
			return -1;
		}
		json_object_object_foreach(e, k, val) {
			if (strcmp(k, "container_id") == 0) {
				snprintf(key, sizeof(key),
				    "valid_attachments[%zu].container_id", i);
				if (take_str(val, key, a->container_id,
				    sizeof(a->container_id), err, errlen) == -1)
					return -1;
				if (!ckpt_container_id_ok(a->container_id)) {
					snprintf(err, errlen, "%s: %s", key,
					    CID_RULE);
					return -1;
				}
				have_cid = true;
			} else if (strcmp(k, "ifname") == 0) {
				snprintf(key, sizeof(key),
				    "valid_attachments[%zu].ifname", i);
				if (take_str(val, key, a->ifname,
				    sizeof(a->ifname), err, errlen) == -1)
					return -1;
				if (!ckpt_ifname_ok(a->ifname)) {
					snprintf(err, errlen, "%s: %s", key,
					    IFNAME_RULE);
					return -1;
				}
				have_if = true;
			} else {
				snprintf(err, errlen, "valid_attachments[%zu]: "
				    "unknown key \"%s\"", i, shown(k, sh));
				return -1;
			}
		}
		if (!have_cid || !have_if) {
			snprintf(err, errlen, "valid_attachments[%zu]: missing "
			    "\"%s\"", i, have_cid ? "ifname" : "container_id");
			return -1;
		}
		r->nvalid = i + 1;
	}
	return 0;
}

int
cni_request_parse(struct json_object *o, struct cni_request *r, char *err,
    size_t errlen)
{
	struct json_object *opv;
	const char *opname;
	unsigned seen = 0, missing;
	size_t i;
	int oi = -1;
	char sh[SHOWN_LEN];

	memset(r, 0, sizeof(*r));
	if (!json_object_is_type(o, json_type_object)) {
		snprintf(err, errlen, "request must be a JSON object");
		return -1;
	}
	if (!json_object_object_get_ex(o, "op", &opv) ||
	    !json_object_is_type(opv, json_type_string)) {
		snprintf(err, errlen, "missing string field \"op\"");
		return -1;
	}
	opname = json_object_get_string(opv);
	/* "status\u0000x" would compare equal to "status" */
	if (strlen(opname) != (size_t)json_object_get_string_len(opv)) {
		snprintf(err, errlen, "op: contains a NUL byte");
		return -1;
	}
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (strcmp(ops[i].name, opname) == 0)
			oi = (int)i;
	if (oi < 0) {
		snprintf(err, errlen, "unknown op \"%s\"", shown(opname, sh));
		return -1;
	}
	r->op = ops[oi].op;
	json_object_object_foreach(o, key, v) {
		unsigned f;

		if (strcmp(key, "op") == 0)
			f = F_OP;
		else if (strcmp(key, "container_id") == 0)
			f = F_CID;
		else if (strcmp(key, "ifname") == 0)
			f = F_IFNAME;
		else if (strcmp(key, "netns") == 0)
			f = F_NETNS;
		else if (strcmp(key, "k8s_namespace") == 0 ||
		    strcmp(key, "k8s_name") == 0 || strcmp(key, "k8s_uid") == 0)
			f = F_K8S;
		else if (strcmp(key, "ip") == 0)
			f = F_IP;
		else if (strcmp(key, "ip6") == 0)
			f = F_IP6;
		else if (strcmp(key, "valid_attachments") == 0)
			f = F_VALID;
		else if (strcmp(key, "host_veth") == 0)
			f = F_VETH;
		else
			f = 0;
		if (f == 0 || !(ops[oi].allowed & f)) {
			snprintf(err, errlen, "%s: unknown key \"%s\"",
			    ops[oi].name, shown(key, sh));
			goto fail;
		}
		seen |= f;
		switch (f) {
		case F_CID:
			if (take_str(v, key, r->container_id,
			    sizeof(r->container_id), err, errlen) == -1)
				goto fail;
			if (!ckpt_container_id_ok(r->container_id)) {
				snprintf(err, errlen, "container_id: %s",
				    CID_RULE);
				goto fail;
			}
			break;
		case F_IFNAME:
			if (take_str(v, key, r->ifname, sizeof(r->ifname), err,
			    errlen) == -1)
				goto fail;
			if (!ckpt_ifname_ok(r->ifname)) {
				snprintf(err, errlen, "ifname: %s", IFNAME_RULE);
				goto fail;
			}
			break;
		case F_NETNS:
			if (take_str(v, key, r->netns, sizeof(r->netns), err,
			    errlen) == -1)
				goto fail;
			break;
		case F_K8S: {
			char *dst = strcmp(key, "k8s_namespace") == 0 ?
			    r->k8s_namespace : strcmp(key, "k8s_name") == 0 ?
			    r->k8s_name : r->k8s_uid;
			size_t size = dst == r->k8s_uid ? sizeof(r->k8s_uid) :
			    sizeof(r->k8s_name);

			if (take_str(v, key, dst, size, err, errlen) == -1)
				goto fail;
			if (!k8s_ok(dst)) {
				snprintf(err, errlen, "%s: only printable ASCII "
				    "without spaces", key);
				goto fail;
			}
			break;
		}
		case F_IP: {
			char ip[IP4_STR_LEN + 1];

			if (take_str(v, key, ip, sizeof(ip), err, errlen) == -1)
				goto fail;
			if (ip_addr_parse(ip, &r->ip, NULL) == -1 ||
			    !ckpt_ip_ok(&r->ip)) {
				snprintf(err, errlen, "ip: not a unicast IPv4 "
				    "address");
				goto fail;
			}
			break;
		}
		case F_IP6: {
			char ip[IP_ADDR_STR_LEN + 1];

			if (take_str(v, key, ip, sizeof(ip), err, errlen) == -1)
				goto fail;
			if (ip_addr_parse(ip, &r->ip6, NULL) == -1 ||
			    !ckpt_ip6_ok(&r->ip6)) {
				snprintf(err, errlen, "ip6: not a unicast IPv6 "
				    "address in RFC 5952 text");
				goto fail;
			}
			break;
		}
		case F_VALID:
			if (take_valid(v, r, err, errlen) == -1)
				goto fail;
			break;
		case F_VETH:
			if (take_str(v, key, r->host_veth, sizeof(r->host_veth),
			    err, errlen) == -1)
				goto fail;
			if (!veth_name_ok(r->host_veth)) {
				snprintf(err, errlen, "host_veth: not a pod veth "
				    "name (1 to %d of a-z 0-9)", VETH_NAME_MAX);
				goto fail;
			}
			break;
		default:
			break;
		}
	}
	if ((missing = ops[oi].required & ~seen) != 0) {
		snprintf(err, errlen, "%s: missing \"%s\"", ops[oi].name,
		    missing & F_CID ? "container_id" : missing & F_IFNAME ?
		    "ifname" : "valid_attachments");
		goto fail;
	}
	return 0;
fail:
	cni_request_free(r);
	return -1;
}

void
cni_request_free(struct cni_request *r)
{
	free(r->valid);
	r->valid = NULL;
	r->nvalid = 0;
}
