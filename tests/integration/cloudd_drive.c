/*
 * cloudd_drive: plays the broker for enid-cloudd in the integration tests.
 * Starts enid-cloudd as enid does (socketpair end on fd 3, filtered
 * environment), does the HELLO handshake, then reads one JSON intent per
 * line on stdin and prints one JSON line per answer on stdout, as answers
 * arrive: many intents may be in flight.  At end of input it waits for the
 * outstanding answers (bounded), closes the channel and reaps the child.
 *
 *   cloudd_drive -c /path/enid-cloudd -f enid.conf [-v] [-w wait_s]
 *   {"id": 1, "op": "describe-instance", "deadline_ms": 10000}
 *   {"id": 2, "op": "check-instances", "ids": ["i-0123456789abcdef0"]}
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "addr.h"
#include "loop.h"
#include "msg.h"
#include "proc.h"

#define MAX_PENDING	8192
#define LINE_MAX_LEN	65536

extern char **environ;

struct pending {
	bool			 used;
	uint32_t		 id;
	char			 op[32];
	uint64_t		 t0;
	struct json_object	*entries;
};

static struct pending pending[MAX_PENDING];
static unsigned npending;
static struct msg_chan chan;

static struct pending *
pending_find(uint32_t id)
{
	unsigned i;

	for (i = 0; i < MAX_PENDING; i++)
		if (pending[i].used && pending[i].id == id)
			return &pending[i];
	return NULL;
}

static void
emit(struct json_object *o)
{
	printf("%s\n", json_object_to_json_string_ext(o,
	    JSON_C_TO_STRING_PLAIN));
	fflush(stdout);
	json_object_put(o);
}

static void
emit_error(uint32_t id, const char *why)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "id", json_object_new_int64(id));
	json_object_object_add(o, "outcome", json_object_new_string("driver"));
	json_object_object_add(o, "message", json_object_new_string(why));
	emit(o);
}

/* ---- JSON -> intents ---- */

static const char *
jstr(struct json_object *o, const char *key, const char *dflt)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		return dflt;
	return json_object_get_string(v);
}

static int64_t
jint(struct json_object *o, const char *key, int64_t dflt)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		return dflt;
	return json_object_get_int64(v);
}

static uint32_t
jstrs(struct json_object *o, const char *key, char (*out)[MSG_ID_LEN],
    uint32_t max)
{
	struct json_object *v;
	size_t i, n;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_array))
		return 0;
	n = json_object_array_length(v);
	for (i = 0; i < n && i < max; i++)
		msg_strlcpy(out[i], json_object_get_string(
		    json_object_array_get_idx(v, i)), MSG_ID_LEN);
	return (uint32_t)i;
}

static uint32_t
jaddrs(struct json_object *o, const char *key, struct ip_addr *out,
    uint32_t max)
{
	struct json_object *v;
	size_t i, n;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_array))
		return 0;
	n = json_object_array_length(v);
	for (i = 0; i < n && i < max; i++)
		if (ip_addr_parse(json_object_get_string(
		    json_object_array_get_idx(v, i)), &out[i], NULL) == -1)
			out[i] = ip_addr_from_in(0);	/* refused */
	return (uint32_t)i;
}

static uint32_t
jtags(struct json_object *o, struct msg_tag *tags)
{
	struct json_object *v;
	uint32_t n = 0;

	if (!json_object_object_get_ex(o, "tags", &v) ||
	    !json_object_is_type(v, json_type_object))
		return 0;
	json_object_object_foreach(v, key, val) {
		if (n == MSG_MAX_TAGS)
			break;
		msg_strlcpy(tags[n].key, key, sizeof(tags[n].key));
		msg_strlcpy(tags[n].value, json_object_get_string(val),
		    sizeof(tags[n].value));
		n++;
	}
	return n;
}

static enum cloud_eni_status
status_of(const char *s)
{
	if (s == NULL)
		return ENI_ST_UNKNOWN;
	if (strcmp(s, "available") == 0)
		return ENI_ST_AVAILABLE;
	if (strcmp(s, "in-use") == 0)
		return ENI_ST_IN_USE;
	if (strcmp(s, "attaching") == 0)
		return ENI_ST_ATTACHING;
	if (strcmp(s, "detaching") == 0)
		return ENI_ST_DETACHING;
	return ENI_ST_UNKNOWN;
}

static void
handle_line(const char *line)
{
	static union {
		struct msg_cloud_describe_instance	di;
		struct msg_cloud_describe_subnets	ds;
		struct msg_cloud_create_eni		ce;
		struct msg_cloud_attach			at;
		struct msg_cloud_set_dot		sd;
		struct msg_cloud_ips			ip;
		struct msg_cloud_prefixes		px;
		struct msg_cloud_detach			dt;
		struct msg_cloud_delete			de;
		struct msg_cloud_describe_enis		den;
		struct msg_cloud_check_instances	ci;
	} u;
	struct json_object *o;
	struct pending *p;
	enum msg_type type;
	const char *op;
	uint32_t id, deadline;
	size_t len;
	unsigned i;

	if ((o = json_tokener_parse(line)) == NULL ||
	    !json_object_is_type(o, json_type_object)) {
		emit_error(0, "input line is not a JSON object");
		json_object_put(o);
		return;
	}
	id = (uint32_t)jint(o, "id", 0);
	op = jstr(o, "op", "");
	deadline = (uint32_t)jint(o, "deadline_ms", 10000);
	memset(&u, 0, sizeof(u));
	if (strcmp(op, "describe-instance") == 0) {
		type = MSG_CLOUD_DESCRIBE_INSTANCE;
		u.di.deadline_ms = deadline;
		len = sizeof(u.di);
	} else if (strcmp(op, "describe-subnets") == 0) {
		type = MSG_CLOUD_DESCRIBE_SUBNETS;
		u.ds.deadline_ms = deadline;
		u.ds.nids = jstrs(o, "ids", u.ds.ids, MSG_MAX_SUBNETS);
		len = sizeof(u.ds);
	} else if (strcmp(op, "create-eni") == 0) {
		type = MSG_CLOUD_CREATE_ENI;
		u.ce.deadline_ms = deadline;
		msg_strlcpy(u.ce.subnet_id, jstr(o, "subnet", ""),
		    sizeof(u.ce.subnet_id));
		u.ce.nsgs = jstrs(o, "sgs", u.ce.sgs, MSG_MAX_SGS);
		u.ce.nsecondary = (uint32_t)jint(o, "secondary", 0);
		u.ce.nprefixes = (uint32_t)jint(o, "prefixes", 0);
		u.ce.nipv6 = (uint32_t)jint(o, "ipv6", 0);
		msg_strlcpy(u.ce.client_token, jstr(o, "token", ""),
		    sizeof(u.ce.client_token));
		msg_strlcpy(u.ce.description, jstr(o, "description", ""),
		    sizeof(u.ce.description));
		u.ce.ntags = jtags(o, u.ce.tags);
		len = sizeof(u.ce);
	} else if (strcmp(op, "attach") == 0) {
		type = MSG_CLOUD_ATTACH;
		u.at.deadline_ms = deadline;
		msg_strlcpy(u.at.eni_id, jstr(o, "eni", ""),
		    sizeof(u.at.eni_id));
		u.at.device_index = (uint32_t)jint(o, "device_index", 1);
		len = sizeof(u.at);
	} else if (strcmp(op, "set-dot") == 0) {
		type = MSG_CLOUD_SET_DOT;
		u.sd.deadline_ms = deadline;
		msg_strlcpy(u.sd.eni_id, jstr(o, "eni", ""),
		    sizeof(u.sd.eni_id));
		msg_strlcpy(u.sd.attachment_id, jstr(o, "attachment", ""),
		    sizeof(u.sd.attachment_id));
		u.sd.value = (uint8_t)(jint(o, "value", 1) != 0);
		len = sizeof(u.sd);
	} else if (strcmp(op, "assign-ips") == 0 ||
	    strcmp(op, "unassign-ips") == 0) {
		type = op[0] == 'a' ? MSG_CLOUD_ASSIGN_IPS :
		    MSG_CLOUD_UNASSIGN_IPS;
		u.ip.deadline_ms = deadline;
		msg_strlcpy(u.ip.eni_id, jstr(o, "eni", ""),
		    sizeof(u.ip.eni_id));
		u.ip.family = jint(o, "family", 4) == 6 ? AF_INET6 : AF_INET;
		u.ip.count = (uint32_t)jint(o, "count", 0);
		u.ip.naddrs = jaddrs(o, "addrs", u.ip.addrs,
		    MSG_MAX_ENI_ADDRS);
		len = sizeof(u.ip);
	} else if (strcmp(op, "assign-prefixes") == 0 ||
	    strcmp(op, "unassign-prefixes") == 0) {
		/* "prefixes": first addresses of /28s, "10.0.4.16" */
		type = op[0] == 'a' ? MSG_CLOUD_ASSIGN_PREFIXES :
		    MSG_CLOUD_UNASSIGN_PREFIXES;
		u.px.deadline_ms = deadline;
		msg_strlcpy(u.px.eni_id, jstr(o, "eni", ""),
		    sizeof(u.px.eni_id));
		u.px.family = jint(o, "family", 4) == 6 ? AF_INET6 : AF_INET;
		u.px.count = (uint32_t)jint(o, "count", 0);
		u.px.nprefixes = jaddrs(o, "prefixes", u.px.prefixes,
		    MSG_MAX_ENI_PREFIXES);
		len = sizeof(u.px);
	} else if (strcmp(op, "detach") == 0) {
		type = MSG_CLOUD_DETACH;
		u.dt.deadline_ms = deadline;
		msg_strlcpy(u.dt.eni_id, jstr(o, "eni", ""),
		    sizeof(u.dt.eni_id));
		msg_strlcpy(u.dt.attachment_id, jstr(o, "attachment", ""),
		    sizeof(u.dt.attachment_id));
		len = sizeof(u.dt);
	} else if (strcmp(op, "delete") == 0) {
		type = MSG_CLOUD_DELETE;
		u.de.deadline_ms = deadline;
		msg_strlcpy(u.de.eni_id, jstr(o, "eni", ""),
		    sizeof(u.de.eni_id));
		len = sizeof(u.de);
	} else if (strcmp(op, "describe-enis") == 0) {
		type = MSG_CLOUD_DESCRIBE_ENIS;
		u.den.deadline_ms = deadline;
		u.den.ntags = jtags(o, u.den.tags);
		u.den.filter = u.den.ntags ? ENIS_BY_TAGS : ENIS_BY_INSTANCE;
		msg_strlcpy(u.den.instance_id, jstr(o, "instance", ""),
		    sizeof(u.den.instance_id));
		u.den.status = status_of(jstr(o, "status", NULL));
		len = sizeof(u.den);
	} else if (strcmp(op, "check-instances") == 0) {
		type = MSG_CLOUD_CHECK_INSTANCES;
		u.ci.deadline_ms = deadline;
		u.ci.nids = jstrs(o, "ids", u.ci.ids, MSG_MAX_INSTANCE_IDS);
		len = sizeof(u.ci);
	} else {
		emit_error(id, "unknown op");
		json_object_put(o);
		return;
	}
	if (pending_find(id) != NULL || npending == MAX_PENDING) {
		emit_error(id, "id in use, or too many pending");
		json_object_put(o);
		return;
	}
	for (i = 0; i < MAX_PENDING && pending[i].used; i++)
		;
	p = &pending[i];
	memset(p, 0, sizeof(*p));
	p->used = true;
	p->id = id;
	snprintf(p->op, sizeof(p->op), "%s", op);
	p->t0 = now_ms();
	npending++;
	json_object_put(o);
	/* Blocking on a full socket is fine in a test driver. */
	for (;;) {
		if (msg_send(&chan, type, id, &u, len) == 0)
			break;
		if (errno != EAGAIN) {
			perror("cloudd_drive: send");
			exit(1);
		}
		usleep(1000);
	}
}

/* ---- answers -> JSON ---- */

static void
add_str(struct json_object *o, const char *k, const char *v)
{
	json_object_object_add(o, k, json_object_new_string(v));
}

static void
add_ip(struct json_object *o, const char *k, const struct ip_addr *a)
{
	char buf[IP_ADDR_STR_LEN];

	ip_addr_format(a, buf);
	add_str(o, k, buf);
}

static void
add_mac(struct json_object *o, const char *k, const uint8_t *mac)
{
	char buf[MAC_STR_LEN];

	mac_format(mac, buf);
	add_str(o, k, buf);
}

static void
add_status(struct json_object *o, const struct msg_cloud_status *st)
{
	add_str(o, "outcome", cloud_outcome_name(st->outcome));
	add_str(o, "code", st->code);
	add_str(o, "message", st->message);
	add_str(o, "request_id", st->request_id);
	json_object_object_add(o, "http_status",
	    json_object_new_int64(st->http_status));
}

static const char *const eni_status[] = {
	"unknown", "available", "in-use", "attaching", "detaching",
};

/* ["10.0.4.16/28", ...] */
static struct json_object *
prefixes_json(const struct ip_addr *prefixes, uint32_t n)
{
	struct json_object *a = json_object_new_array();
	char buf[IP_PREFIX_STR_LEN];
	struct ip_prefix p;
	uint32_t i;

	for (i = 0; i < n; i++) {
		memset(&p, 0, sizeof(p));
		p = msg_prefix_of(&prefixes[i]);
		ip_prefix_format(&p, buf);
		json_object_array_add(a, json_object_new_string(buf));
	}
	return a;
}

static struct json_object *
eni_json(const struct msg_cloud_eni *m)
{
	struct json_object *o = json_object_new_object(), *a, *t;
	uint32_t i;

	add_str(o, "eni_id", m->eni_id);
	add_str(o, "subnet_id", m->subnet_id);
	add_str(o, "instance_id", m->instance_id);
	add_str(o, "attachment_id", m->attachment_id);
	add_mac(o, "mac", m->mac);
	add_str(o, "status", eni_status[m->status]);
	add_str(o, "attach_status", eni_status[m->attach_status]);
	json_object_object_add(o, "device_index",
	    json_object_new_int(m->device_index));
	json_object_object_add(o, "dot",
	    json_object_new_boolean(m->delete_on_termination));
	add_ip(o, "primary_ip", &m->primary_ip);
	a = json_object_new_array();
	for (i = 0; i < m->naddrs; i++) {
		char buf[IP_ADDR_STR_LEN];

		ip_addr_format(&m->addrs[i], buf);
		json_object_array_add(a, json_object_new_string(buf));
	}
	json_object_object_add(o, "addrs", a);
	json_object_object_add(o, "prefixes", prefixes_json(m->prefixes,
	    m->nprefixes));
	json_object_object_add(o, "bad_prefixes",
	    json_object_new_int64(m->nbad_prefixes));
	json_object_object_add(o, "ipv6_native",
	    json_object_new_boolean(m->ipv6_native));
	a = json_object_new_array();
	for (i = 0; i < m->naddrs6; i++) {
		char buf[IP_ADDR_STR_LEN];

		ip_addr_format(&m->addrs6[i], buf);
		json_object_array_add(a, json_object_new_string(buf));
	}
	json_object_object_add(o, "addrs6", a);
	json_object_object_add(o, "bad_addrs6",
	    json_object_new_int64(m->nbad_addrs6));
	json_object_object_add(o, "prefixes6", prefixes_json(m->prefixes6,
	    m->nprefixes6));
	json_object_object_add(o, "bad_prefixes6",
	    json_object_new_int64(m->nbad_prefixes6));
	t = json_object_new_object();
	for (i = 0; i < m->ntags; i++)
		add_str(t, m->tags[i].key, m->tags[i].value);
	json_object_object_add(o, "tags", t);
	return o;
}

static void
handle_answer(const struct msg *m)
{
	struct pending *p = pending_find(m->hdr.id);
	struct json_object *o, *e;
	uint32_t i;

	if (p == NULL) {
		emit_error(m->hdr.id, "answer to no pending intent");
		return;
	}
	switch (m->hdr.type) {
	case MSG_CLOUD_SUBNET: {
		const struct msg_cloud_subnet *s = (const void *)m->u.bytes;
		char buf[IP_PREFIX_STR_LEN];

		e = json_object_new_object();
		add_str(e, "subnet_id", s->subnet_id);
		add_str(e, "az", s->az);
		ip_prefix_format(&s->cidr, buf);
		add_str(e, "cidr", buf);
		json_object_object_add(e, "available",
		    json_object_new_int64(s->available));
		/* IPv6: "" when none (family 0 prints "invalid") */
		if (s->cidr.addr.family == 0)
			add_str(e, "cidr", "");
		if (s->cidr6.addr.family != 0)
			ip_prefix_format(&s->cidr6, buf);
		else
			buf[0] = '\0';
		add_str(e, "cidr6", buf);
		add_str(e, "ipv6_state", cloud_ipv6_state_name(s->ipv6_state));
		json_object_object_add(e, "ipv6_native",
		    json_object_new_boolean(s->ipv6_native));
		if (p->entries == NULL)
			p->entries = json_object_new_array();
		json_object_array_add(p->entries, e);
		return;
	}
	case MSG_CLOUD_ENI:
		if (strcmp(p->op, "describe-enis") == 0) {
			if (p->entries == NULL)
				p->entries = json_object_new_array();
			json_object_array_add(p->entries, eni_json(
			    (const void *)m->u.bytes));
			return;
		}
		break;
	default:
		break;
	}

	o = json_object_new_object();
	json_object_object_add(o, "id", json_object_new_int64(p->id));
	add_str(o, "op", p->op);
	json_object_object_add(o, "latency_ms",
	    json_object_new_int64((int64_t)(now_ms() - p->t0)));
	switch (m->hdr.type) {
	case MSG_CLOUD_INSTANCE: {
		const struct msg_cloud_instance *in = (const void *)m->u.bytes;
		struct json_object *a;

		add_status(o, &in->st);
		add_str(o, "instance_id", in->instance_id);
		add_str(o, "instance_type", in->instance_type);
		add_str(o, "az", in->az);
		add_str(o, "region", in->region);
		add_str(o, "primary_eni", in->primary_eni);
		add_mac(o, "primary_mac", in->primary_mac);
		add_ip(o, "primary_ip", &in->primary_ip);
		add_str(o, "subnet_id", in->subnet_id);
		add_str(o, "vpc_id", in->vpc_id);
		a = json_object_new_array();
		for (i = 0; i < in->ncidrs; i++) {
			char buf[IP_PREFIX_STR_LEN];

			ip_prefix_format(&in->cidrs[i], buf);
			json_object_array_add(a, json_object_new_string(buf));
		}
		json_object_object_add(o, "cidrs", a);
		a = json_object_new_array();
		for (i = 0; i < in->nsgs; i++)
			json_object_array_add(a,
			    json_object_new_string(in->sgs[i]));
		json_object_object_add(o, "sgs", a);
		json_object_object_add(o, "max_enis",
		    json_object_new_int64(in->max_enis));
		json_object_object_add(o, "ips_per_eni",
		    json_object_new_int64(in->ips_per_eni));
		add_str(o, "hypervisor", in->hypervisor);
		json_object_object_add(o, "bare_metal",
		    json_object_new_boolean(in->bare_metal));
		json_object_object_add(o, "prefixes_ok",
		    json_object_new_boolean(in->prefixes_ok));
		if (in->primary_ip6.family != 0)
			add_ip(o, "primary_ip6", &in->primary_ip6);
		else
			add_str(o, "primary_ip6", "");
		{
			char buf[IP_PREFIX_STR_LEN] = "";

			if (in->subnet_cidr6.addr.family != 0)
				ip_prefix_format(&in->subnet_cidr6, buf);
			add_str(o, "subnet_cidr6", buf);
		}
		json_object_object_add(o, "ipv6_supported",
		    json_object_new_boolean(in->ipv6_supported));
		json_object_object_add(o, "ipv6_per_eni",
		    json_object_new_int64(in->ipv6_per_eni));
		break;
	}
	case MSG_CLOUD_ENI: {
		const struct msg_cloud_eni *en = (const void *)m->u.bytes;

		add_status(o, &en->st);
		json_object_object_add(o, "eni", eni_json(en));
		break;
	}
	case MSG_CLOUD_ATTACHED: {
		const struct msg_cloud_attached *at = (const void *)m->u.bytes;

		add_status(o, &at->st);
		add_str(o, "attachment_id", at->attachment_id);
		break;
	}
	case MSG_CLOUD_ASSIGNED: {
		const struct msg_cloud_assigned *as = (const void *)m->u.bytes;
		struct json_object *a = json_object_new_array();

		add_status(o, &as->st);
		for (i = 0; i < as->naddrs; i++) {
			char buf[IP_ADDR_STR_LEN];

			ip_addr_format(&as->addrs[i], buf);
			json_object_array_add(a, json_object_new_string(buf));
		}
		json_object_object_add(o, "addrs", a);
		break;
	}
	case MSG_CLOUD_PREFIXES_ASSIGNED: {
		const struct msg_cloud_prefixes_assigned *pa =
		    (const void *)m->u.bytes;

		add_status(o, &pa->st);
		json_object_object_add(o, "prefixes",
		    prefixes_json(pa->prefixes, pa->nprefixes));
		break;
	}
	case MSG_CLOUD_INSTANCES: {
		const struct msg_cloud_instances *ci = (const void *)m->u.bytes;
		struct json_object *a = json_object_new_array();

		add_status(o, &ci->st);
		for (i = 0; i < ci->nids; i++)
			json_object_array_add(a,
			    json_object_new_int(ci->exists[i]));
		json_object_object_add(o, "exists", a);
		break;
	}
	case MSG_CLOUD_DONE: {
		const struct msg_cloud_done *d = (const void *)m->u.bytes;

		add_status(o, &d->st);
		json_object_object_add(o, "count",
		    json_object_new_int64(d->count));
		if (p->entries == NULL && strncmp(p->op, "describe-", 9) == 0)
			p->entries = json_object_new_array();
		if (p->entries != NULL) {
			json_object_object_add(o, "entries", p->entries);
			p->entries = NULL;
		}
		break;
	}
	default:
		add_str(o, "outcome", "driver");
		add_str(o, "message", msg_type_name(m->hdr.type));
		break;
	}
	emit(o);
	json_object_put(p->entries);
	p->used = false;
	npending--;
}

/* ---- the child ---- */

static bool
env_passes(const char *var)
{
	static const char *const pass[] = {
		"AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=",
		"AWS_SESSION_TOKEN=", "AWS_REGION=", "AWS_DEFAULT_REGION=",
		"ENID_SECCOMP_DEBUG=", "ASAN_OPTIONS=", "UBSAN_OPTIONS=",
		"LSAN_OPTIONS=", "TZ=", NULL,
	};
	const char *const *p;

	for (p = pass; *p; p++)
		if (strncmp(var, *p, strlen(*p)) == 0)
			return true;
	return false;
}

static pid_t
spawn(const char *path, const char *config, int verbose)
{
	char *argv[8], *envp[32];
	char **e;
	int n = 0, i;
	pid_t pid;

	argv[n++] = "enid-cloudd";
	argv[n++] = "-f";
	argv[n++] = (char *)config;
	argv[n++] = "-d";
	for (i = 0; i < verbose && i < 2; i++)
		argv[n++] = "-v";
	argv[n] = NULL;
	for (n = 0, e = environ; *e && n < 31; e++)
		if (env_passes(*e))
			envp[n++] = *e;
	envp[n] = NULL;
	if ((pid = proc_spawn(path, argv, envp, &chan.fd)) == -1) {
		fprintf(stderr, "cloudd_drive: starting %s: %s\n", path,
		    strerror(errno));
		exit(1);
	}
	chan.self = PEER_BROKER;
	chan.peer = PEER_CLOUDD;
	chan.peer_name = "enid-cloudd";
	return pid;
}

static int
reap(pid_t pid, int wait_s)
{
	struct json_object *o;
	int status = 0, i;

	for (i = 0; i < wait_s * 100; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			goto done;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
done:
	o = json_object_new_object();
	add_str(o, "event", "exit");
	json_object_object_add(o, "status", json_object_new_int(
	    WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)));
	emit(o);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

int
main(int argc, char *argv[])
{
	const char *cloudd = NULL, *config = NULL;
	static struct msg m;
	static char line[LINE_MAX_LEN];
	struct msg_hello hello = { .version = MSG_PROTO_VERSION };
	struct json_object *o;
	struct pollfd pfd[2];
	size_t linelen = 0;
	bool in_eof = false, got_ack = false;
	uint64_t end = 0, start;
	int ch, verbose = 0, wait_s = 60;
	const char *why;
	pid_t pid;

	while ((ch = getopt(argc, argv, "c:f:vw:")) != -1) {
		switch (ch) {
		case 'c': cloudd = optarg; break;
		case 'f': config = optarg; break;
		case 'v': verbose++; break;
		case 'w': wait_s = atoi(optarg); break;
		default: goto usage;
		}
	}
	if (cloudd == NULL || config == NULL)
		goto usage;
	signal(SIGPIPE, SIG_IGN);
	pid = spawn(cloudd, config, verbose);
	if (msg_send(&chan, MSG_HELLO, 0, &hello, sizeof(hello)) == -1) {
		perror("cloudd_drive: HELLO");
		return 1;
	}
	start = now_ms();
	pfd[0].fd = chan.fd;
	pfd[0].events = POLLIN;
	pfd[1].fd = STDIN_FILENO;
	pfd[1].events = POLLIN;
	for (;;) {
		int timeout = 1000;

		if (in_eof && (npending == 0 || now_ms() > end))
			break;
		if (!got_ack && now_ms() - start > 10000) {
			fprintf(stderr, "cloudd_drive: no HELLO_ACK in 10 s\n");
			break;
		}
		pfd[1].fd = (in_eof || !got_ack) ? -1 : STDIN_FILENO;
		if (poll(pfd, 2, timeout) == -1 && errno != EINTR)
			break;
		if (pfd[0].revents) {
			enum msg_recv_result r;
			int budget;

			for (budget = 0; budget < 256; budget++) {
				r = msg_recv(&chan, &m, &why);
				if (r == MSG_RECV_AGAIN)
					break;
				if (r != MSG_RECV_OK) {
					fprintf(stderr, "cloudd_drive: channel: "
					    "%s\n", r == MSG_RECV_BAD ? why :
					    r == MSG_RECV_EOF ? "closed" :
					    strerror(errno));
					in_eof = true;
					npending = 0;
					goto out;
				}
				if (m.hdr.type == MSG_HELLO_ACK) {
					got_ack = true;
					o = json_object_new_object();
					add_str(o, "event", "ready");
					json_object_object_add(o, "pid",
					    json_object_new_int(pid));
					emit(o);
					continue;
				}
				handle_answer(&m);
			}
		}
		if (pfd[1].fd != -1 && pfd[1].revents) {
			ssize_t n = read(STDIN_FILENO, line + linelen,
			    sizeof(line) - 1 - linelen);
			char *nl;

			if (n <= 0) {
				in_eof = true;
				end = now_ms() + (uint64_t)wait_s * 1000;
				continue;
			}
			linelen += (size_t)n;
			line[linelen] = '\0';
			while ((nl = strchr(line, '\n')) != NULL) {
				*nl = '\0';
				if (nl != line)
					handle_line(line);
				linelen -= (size_t)(nl + 1 - line);
				memmove(line, nl + 1, linelen + 1);
			}
			if (linelen == sizeof(line) - 1) {
				emit_error(0, "input line too long");
				linelen = 0;
			}
		}
	}
out:
	close(chan.fd);
	return reap(pid, 10);
usage:
	fprintf(stderr, "usage: cloudd_drive -c enid-cloudd -f config [-v] "
	    "[-w wait_s]\n");
	return 2;
}
