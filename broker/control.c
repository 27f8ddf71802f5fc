/*
 * The admin socket's operations (ctl.sock, mode 0660, root and
 * admin_group; the socket itself is server.c).  A missing or mistyped
 * field gets "bad-request" and the connection is closed; nothing in the
 * daemon changes.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "addr.h"
#include "enid.h"
#include "log.h"

static struct json_object *
process_json(const struct child *ch)
{
	struct json_object *p = json_object_new_object();

	json_object_object_add(p, "name", json_object_new_string(ch->name));
	json_object_object_add(p, "pid", json_object_new_int(ch->pid));
	json_object_object_add(p, "ready", json_object_new_boolean(ch->ready));
	return p;
}

static struct json_object *
instance_json(const struct broker *b)
{
	const struct msg_cloud_instance *in = &b->instance;
	struct json_object *o = json_object_new_object();
	struct json_object *cidrs;
	char mac[MAC_STR_LEN], cidr[CIDR4_STR_LEN];
	uint32_t i;

	json_object_object_add(o, "state",
	    json_object_new_string(instance_state_name(b->instance_state)));
	if (b->instance_state != INSTANCE_KNOWN) {
		if (b->instance_error[0] != '\0')
			json_object_object_add(o, "error",
			    json_object_new_string(b->instance_error));
		return o;
	}
	mac_format(in->primary_mac, mac);
	json_object_object_add(o, "id", json_object_new_string(in->instance_id));
	json_object_object_add(o, "type",
	    json_object_new_string(in->instance_type));
	json_object_object_add(o, "az", json_object_new_string(in->az));
	json_object_object_add(o, "primary_eni",
	    json_object_new_string(in->primary_eni));
	json_object_object_add(o, "primary_mac", json_object_new_string(mac));
	json_object_object_add(o, "subnet", json_object_new_string(in->subnet_id));
	cidrs = json_object_new_array();
	for (i = 0; i < in->ncidrs && i < MSG_MAX_CIDRS; i++) {
		cidr4_format(in->cidrs[i].addr, in->cidrs[i].prefix, cidr);
		json_object_array_add(cidrs, json_object_new_string(cidr));
	}
	json_object_object_add(o, "vpc_cidrs", cidrs);
	json_object_object_add(o, "max_enis", json_object_new_int(in->max_enis));
	json_object_object_add(o, "ips_per_eni",
	    json_object_new_int(in->ips_per_eni));
	return o;
}

static void
op_status(struct broker *b, struct jref *r, struct json_object *req)
{
	struct json_object *o = json_object_new_object();
	struct json_object *procs = json_object_new_array();
	struct json_object *self = json_object_new_object();

	json_object_object_add(self, "name", json_object_new_string("enid"));
	json_object_object_add(self, "pid", json_object_new_int(getpid()));
	json_object_object_add(self, "ready", json_object_new_boolean(
	    b->netd.ready && b->cloudd.ready));
	json_object_array_add(procs, self);
	json_object_array_add(procs, process_json(&b->netd));
	json_object_array_add(procs, process_json(&b->cloudd));
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "version", json_object_new_string(VERSION));
	json_object_object_add(o, "uptime_s",
	    json_object_new_int64((int64_t)((now_ms() - b->started_ms) / 1000)));
	json_object_object_add(o, "log_level",
	    json_object_new_string(log_level_name(log_get_level())));
	json_object_object_add(o, "processes", procs);
	json_object_object_add(o, "instance", instance_json(b));
	(void)req;
	jref_reply(r, o);
}

static void
op_log_level(struct broker *b, struct jref *r, struct json_object *req)
{
	struct json_object *v, *o;
	struct msg_loglevel ll;
	int level;

	if (!json_object_object_get_ex(req, "level", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		jref_bad(r, "\"level\" must be a string");
		return;
	}
	level = log_level_parse(json_object_get_string(v));
	if (level < 0) {
		jref_bad(r, "unknown level \"%.32s\" (error, warning, info, "
		    "debug)", json_object_get_string(v));
		return;
	}
	log_set_level(level);
	memset(&ll, 0, sizeof(ll));
	ll.level = level;
	broker_notify(b, &b->netd, MSG_LOG_LEVEL, &ll, sizeof(ll));
	broker_notify(b, &b->cloudd, MSG_LOG_LEVEL, &ll, sizeof(ll));
	log_info("ctl: log level set to %s by pid %d uid %u",
	    log_level_name(level), (int)r->pid, (unsigned)r->uid);
	o = json_object_new_object();
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "log_level",
	    json_object_new_string(log_level_name(level)));
	jref_reply(r, o);
}

const struct jop ctl_ops[] = {
	{ "status",	op_status },
	{ "log-level",	op_log_level },
	{ NULL,		NULL },
};
