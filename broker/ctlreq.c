/*
 * Admin socket requests (see ctlreq.h).  The messages are those the ops
 * gave when each read its own fields; a value the client sent is quoted
 * in one only through log_tame(), at most 32 bytes of it, since the
 * broker logs every bad request.
 */
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "ctlreq.h"
#include "log.h"

#define SHOWN_LEN	33

static const char *const op_names[CTL_OP_COUNT] = {
	[CTL_OP_STATUS] = "status",
	[CTL_OP_SHOW] = "show",
	[CTL_OP_RECONCILE] = "reconcile",
	[CTL_OP_DRAIN] = "drain",
	[CTL_OP_LOG_LEVEL] = "log-level",
	[CTL_OP_METRICS] = "metrics",
};

static const char *const show_names[CTL_SHOW_COUNT] = {
	[CTL_SHOW_POOL] = "pool",
	[CTL_SHOW_ENIS] = "enis",
	[CTL_SHOW_PODS] = "pods",
	[CTL_SHOW_SUBNETS] = "subnets",
	[CTL_SHOW_CONFIG] = "config",
	[CTL_SHOW_LIMITS] = "limits",
	[CTL_SHOW_SNAT] = "snat",
};

const char *
ctl_op_name(enum ctl_op op)
{
	return (unsigned)op < CTL_OP_COUNT ? op_names[op] : "?";
}

const char *
ctl_show_name(enum ctl_show what)
{
	return (unsigned)what < CTL_SHOW_COUNT ? show_names[what] : "?";
}

/* The string member key, whole: *s, or -1 with err set.  A NUL inside
 * ("pool\u0000x") would make it compare equal to its first part. */
static int
take_str(struct json_object *o, const char *key, const char **s, char *err,
    size_t errlen)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string)) {
		snprintf(err, errlen, "\"%s\" must be a string", key);
		return -1;
	}
	*s = json_object_get_string(v);
	if (strlen(*s) != (size_t)json_object_get_string_len(v)) {
		snprintf(err, errlen, "\"%s\" contains a NUL byte", key);
		return -1;
	}
	return 0;
}

int
ctl_request_parse(struct json_object *o, struct ctl_request *r, char *err,
    size_t errlen)
{
	struct json_object *v;
	const char *name, *s;
	char sh[SHOWN_LEN];
	unsigned i;

	memset(r, 0, sizeof(*r));
	r->eni = "";
	r->level = -1;
	if (!json_object_is_type(o, json_type_object)) {
		snprintf(err, errlen, "request must be a JSON object");
		return -1;
	}
	if (!json_object_object_get_ex(o, "op", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		snprintf(err, errlen, "missing string field \"op\"");
		return -1;
	}
	if (take_str(o, "op", &name, err, errlen) == -1)
		return -1;
	for (i = 0; i < CTL_OP_COUNT; i++)
		if (strcmp(op_names[i], name) == 0)
			break;
	if (i == CTL_OP_COUNT) {
		snprintf(err, errlen, "unknown op \"%s\"",
		    log_tame(name, sh, sizeof(sh)));
		return -1;
	}
	r->op = (enum ctl_op)i;

	switch (r->op) {
	case CTL_OP_SHOW:
		if (take_str(o, "what", &s, err, errlen) == -1)
			return -1;
		for (i = 0; i < CTL_SHOW_COUNT; i++)
			if (strcmp(show_names[i], s) == 0)
				break;
		if (i == CTL_SHOW_COUNT) {
			snprintf(err, errlen, "unknown \"what\" \"%s\" (pool, "
			    "enis, pods, subnets, config, limits, snat)",
			    log_tame(s, sh, sizeof(sh)));
			return -1;
		}
		r->what = (enum ctl_show)i;
		break;
	case CTL_OP_DRAIN:
		if (take_str(o, "eni", &r->eni, err, errlen) == -1) {
			r->eni = "";
			return -1;
		}
		break;
	case CTL_OP_LOG_LEVEL:
		if (take_str(o, "level", &s, err, errlen) == -1)
			return -1;
		if ((r->level = log_level_parse(s)) < 0) {
			snprintf(err, errlen, "unknown level \"%s\" (error, "
			    "warning, info, debug)",
			    log_tame(s, sh, sizeof(sh)));
			return -1;
		}
		break;
	default:
		break;
	}
	return 0;
}
