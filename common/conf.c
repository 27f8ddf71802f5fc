/*
 * Configuration parsing (see config.h).  Keys are described by tables: one
 * row per key with its type, place in struct enid_config and bounds, so the
 * parser is one walk and every error names "parent.key: reason".
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "addr.h"
#include "conf.h"
#include "log.h"
#include "maxima.h"

enum key_type {
	K_STR,		/* char[size] */
	K_SECRET,	/* char[size]; the parser's copy is wiped */
	K_U32,		/* uint32_t in [min, max] */
	K_BOOL,
	K_LEVEL,	/* log level name */
	K_OBJ,		/* nested table */
	K_SUBNETS,
	K_CIDRS,	/* snat.exclude: an array of IPv4 CIDR strings */
	K_MARK,		/* uint32_t with exactly one bit set */
	K_FAMILY,	/* int: enum ip_family, by its name */
};

struct key {
	const char		*name;
	enum key_type		 type;
	size_t			 off;
	size_t			 size;		/* K_STR: field size */
	uint32_t		 min, max;	/* K_U32 */
	const struct key	*sub;		/* K_OBJ */
	const char		*cap;		/* K_U32: max is this cap */
};

#define OFF(f)		offsetof(struct enid_config, f)
#define STR(n, f)	{ n, K_STR, OFF(f), sizeof(((struct enid_config *)0)->f), 0, 0, NULL, NULL }
#define SECRET(n, f)	{ n, K_SECRET, OFF(f), sizeof(((struct enid_config *)0)->f), 0, 0, NULL, NULL }
#define U32(n, f, lo, hi) { n, K_U32, OFF(f), 0, lo, hi, NULL, NULL }
/* hi is one of maxima.h's caps, named (with what it counts) on a refusal */
#define U32CAP(n, f, lo, hi, what) \
	{ n, K_U32, OFF(f), 0, lo, hi, NULL, #hi ", " what }
#define BOOL(n, f)	{ n, K_BOOL, OFF(f), 0, 0, 0, NULL, NULL }
#define OBJ(n, t)	{ n, K_OBJ, 0, 0, 0, 0, t, NULL }
#define END		{ NULL, K_STR, 0, 0, 0, 0, NULL, NULL }

static const struct key rate_mutating_keys[] = {
	U32("capacity", cloud.rate_mutating.capacity, 1, 10000),
	U32("refill_per_s", cloud.rate_mutating.refill_per_s, 1, 10000),
	END
};

static const struct key rate_describe_keys[] = {
	U32("capacity", cloud.rate_describe.capacity, 1, 10000),
	U32("refill_per_s", cloud.rate_describe.refill_per_s, 1, 10000),
	END
};

static const struct key rate_keys[] = {
	BOOL("enabled", cloud.rate_enabled),
	OBJ("mutating", rate_mutating_keys),
	OBJ("describe", rate_describe_keys),
	END
};

static const struct key retry_keys[] = {
	U32("base_ms", cloud.retry.base_ms, 1, 60000),
	U32("cap_ms", cloud.retry.cap_ms, 1, 600000),
	BOOL("jitter", cloud.retry.jitter),
	U32("max_attempts", cloud.retry.max_attempts, 1, 100),
	END
};

static const struct key cloud_keys[] = {
	STR("provider", cloud.provider),
	STR("region", cloud.region),
	STR("ec2_endpoint", cloud.ec2_endpoint),
	STR("imds_endpoint", cloud.imds_endpoint),
	BOOL("allow_http", cloud.allow_http),
	STR("ca_file", cloud.ca_file),
	SECRET("access_key_id", cloud.access_key_id),
	SECRET("secret_access_key", cloud.secret_access_key),
	SECRET("session_token", cloud.session_token),
	U32("timeout_ms", cloud.timeout_ms, 100, 600000),
	U32("imds_timeout_ms", cloud.imds_timeout_ms, 100, 60000),
	OBJ("rate", rate_keys),
	OBJ("retry", retry_keys),
	END
};

static const struct key pool_keys[] = {
	U32("warm_ip_target", pool.warm_ip_target, 0, 1000),
	U32("minimum_ip_target", pool.minimum_ip_target, 0, 1000),
	U32CAP("warm_eni_target", pool.warm_eni_target, 0, ENID_MAX_ENIS,
	    "ENIs on a node"),
	U32CAP("max_pods", pool.max_pods, 0, ENID_MAX_PODS,
	    "pods with an address on a node"),
	U32CAP("max_enis", pool.max_enis, 0, ENID_MAX_ENIS,
	    "ENIs on a node, the primary included"),
	U32("ip_cooldown_s", pool.ip_cooldown_s, 0, 3600),
	U32("add_timeout_s", pool.add_timeout_s, 1, 600),
	U32("shrink_delay_s", pool.shrink_delay_s, 0, 86400),
	U32("subnet_backoff_s", pool.subnet_backoff_s, 1, 86400),
	U32("link_timeout_s", pool.link_timeout_s, 1, 600),
	BOOL("prefix_delegation", pool.prefix_delegation),
	U32("warm_prefix_target", pool.warm_prefix_target, 0, 64),
	U32("prefix_backoff_s", pool.prefix_backoff_s, 1, 86400),
	U32("prefix_freeze_s", pool.prefix_freeze_s, 1, 86400),
	END
};

/* Tables 253-255 are default, main and local; 0 is unspecified. */
static const struct key routing_keys[] = {
	U32("table_base", routing.table_base, 1, 252 - CONF_TABLE_SPAN),
	U32("rule_priority_to", routing.rule_priority_to, 1, 32765),
	U32("rule_priority_from", routing.rule_priority_from, 1, 32765),
	{ "connmark", K_MARK, OFF(routing.connmark), 0, 0, 0, NULL, NULL },
	STR("pod_veth_prefix", routing.pod_veth_prefix),
	END
};

static const struct key leak_gc_keys[] = {
	BOOL("enabled", leak_gc.enabled),
	U32("grace_s", leak_gc.grace_s, 0, 30 * 86400),
	END
};

static const struct key snat_keys[] = {
	BOOL("enabled", snat.enabled),
	{ "exclude", K_CIDRS, 0, 0, 0, 0, NULL, NULL },
	BOOL("random_fully", snat.random_fully),
	END
};

static const struct key top_keys[] = {
	STR("user", user),
	STR("admin_group", admin_group),
	STR("runtime_dir", runtime_dir),
	STR("state_dir", state_dir),
	{ "log_level", K_LEVEL, OFF(log_level), 0, 0, 0, NULL, NULL },
	STR("cluster_name", cluster_name),
	{ "ip_family", K_FAMILY, OFF(ip_family), 0, 0, 0, NULL, NULL },
	OBJ("cloud", cloud_keys),
	OBJ("pool", pool_keys),
	{ "subnets", K_SUBNETS, 0, 0, 0, 0, NULL, NULL },
	OBJ("routing", routing_keys),
	U32("reconcile_interval_s", reconcile_interval_s, 5, 86400),
	OBJ("leak_gc", leak_gc_keys),
	OBJ("snat", snat_keys),
	STR("metrics_textfile", metrics_textfile),
	END
};

static const char *const family_names[] = {
	[IP_FAMILY_IPV4] = "ipv4",
	[IP_FAMILY_DUAL] = "dual",
	[IP_FAMILY_IPV6] = "ipv6",
};

const char *
config_family_name(int f)
{
	if (f < 0 || (size_t)f >= sizeof(family_names) /
	    sizeof(family_names[0]))
		return "?";
	return family_names[f];
}

int
config_family_parse(const char *s)
{
	size_t i;

	for (i = 0; i < sizeof(family_names) / sizeof(family_names[0]); i++)
		if (strcmp(s, family_names[i]) == 0)
			return (int)i;
	return -1;
}

void
config_defaults(struct enid_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->user, sizeof(cfg->user), "%s", ENID_USER);
	snprintf(cfg->runtime_dir, sizeof(cfg->runtime_dir), "%s",
	    ENID_RUNTIME_DIR);
	snprintf(cfg->state_dir, sizeof(cfg->state_dir), "%s", ENID_STATE_DIR);
	cfg->log_level = LOG_LVL_INFO;
	cfg->ip_family = IP_FAMILY_IPV4;
	snprintf(cfg->cluster_name, sizeof(cfg->cluster_name), "kubernetes");
	snprintf(cfg->cloud.provider, sizeof(cfg->cloud.provider), "ec2");
	snprintf(cfg->cloud.imds_endpoint, sizeof(cfg->cloud.imds_endpoint),
	    "%s", ENID_IMDS_ENDPOINT);
	cfg->cloud.timeout_ms = 10000;
	cfg->cloud.imds_timeout_ms = 2000;
	/* Per node, well under EC2's account-wide buckets (50/5, 100/20). */
	cfg->cloud.rate_mutating.capacity = 10;
	cfg->cloud.rate_mutating.refill_per_s = 2;
	cfg->cloud.rate_describe.capacity = 20;
	cfg->cloud.rate_describe.refill_per_s = 4;
	cfg->cloud.rate_enabled = true;
	cfg->cloud.retry.base_ms = 100;
	cfg->cloud.retry.cap_ms = 5000;
	cfg->cloud.retry.jitter = true;
	cfg->cloud.retry.max_attempts = 10;
	cfg->pool.warm_ip_target = 0;
	cfg->pool.minimum_ip_target = 0;
	cfg->pool.warm_eni_target = 1;
	cfg->pool.ip_cooldown_s = 30;
	cfg->pool.add_timeout_s = 10;
	cfg->pool.shrink_delay_s = 60;
	cfg->pool.subnet_backoff_s = 600;
	cfg->pool.link_timeout_s = 30;
	cfg->pool.prefix_delegation = false;
	cfg->pool.warm_prefix_target = 1;
	cfg->pool.prefix_backoff_s = 120;
	/* As the others do: pods on a node in a public subnet reach the
	 * internet; random-fully as aws-vpc-cni's default ("prng"). */
	cfg->snat.enabled = true;
	cfg->snat.random_fully = true;
	cfg->routing.connmark = CONF_CONNMARK_DEFAULT;
	memcpy(cfg->routing.pod_veth_prefix, CONF_VETH_PREFIX_DEFAULT,
	    sizeof(CONF_VETH_PREFIX_DEFAULT));
	cfg->pool.prefix_freeze_s = 300;
	cfg->routing.table_base = 100;
	cfg->routing.rule_priority_to = 512;
	cfg->routing.rule_priority_from = 1536;
	cfg->reconcile_interval_s = 60;
	cfg->leak_gc.enabled = true;
	cfg->leak_gc.grace_s = 3600;
}

struct perr {
	char	*buf;
	size_t	 len;
};

static int
fail(struct perr *pe, const char *path, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(pe->buf, pe->len, "%s%s", path, *path ? ": " : "");
	if (n < 0 || (size_t)n >= pe->len)
		return -1;
	va_start(ap, fmt);
	vsnprintf(pe->buf + n, pe->len - n, fmt, ap);
	va_end(ap);
	return -1;
}

static const char *
type_name(struct json_object *o)
{
	return json_type_to_name(json_object_get_type(o));
}

static int parse_obj(struct json_object *obj, const struct key *tab,
    struct enid_config *cfg, const char *path, struct perr *pe);

static int
parse_str(struct json_object *v, char *dst, size_t size, const char *path,
    struct perr *pe)
{
	const char *s;
	size_t len;

	if (!json_object_is_type(v, json_type_string))
		return fail(pe, path, "expected a string, got %s", type_name(v));
	s = json_object_get_string(v);
	len = (size_t)json_object_get_string_len(v);
	if (strlen(s) != len)
		return fail(pe, path, "string contains a NUL byte");
	if (len >= size)
		return fail(pe, path, "string longer than %zu bytes", size - 1);
	memcpy(dst, s, len + 1);
	return 0;
}

/* A cloud id: the prefix, then letters and digits only ("subnet-0a1b"),
 * so that nothing else reaches a request body or a log line. */
static bool
cloud_id_ok(const char *s, const char *prefix)
{
	size_t n = strlen(prefix), i;

	if (strncmp(s, prefix, n) != 0 || s[n] == '\0')
		return false;
	for (i = n; s[i] != '\0'; i++)
		if (!isascii((unsigned char)s[i]) ||
		    !isalnum((unsigned char)s[i]))
			return false;
	return true;
}

static int
parse_subnets(struct json_object *v, struct enid_config *cfg,
    const char *path, struct perr *pe)
{
	size_t i, j, n;
	char sub[760];

	if (!json_object_is_type(v, json_type_array))
		return fail(pe, path, "expected an array, got %s", type_name(v));
	n = json_object_array_length(v);
	if (n > CONF_MAX_SUBNETS)
		return fail(pe, path, "more than %d subnets", CONF_MAX_SUBNETS);
	cfg->nsubnets = 0;
	for (i = 0; i < n; i++) {
		struct json_object *s = json_object_array_get_idx(v, i);
		struct conf_subnet *cs = &cfg->subnets[i];
		struct json_object *id = NULL, *sgs = NULL;

		memset(cs, 0, sizeof(*cs));
		snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
		if (!json_object_is_type(s, json_type_object))
			return fail(pe, sub, "expected an object, got %s",
			    type_name(s));
		json_object_object_foreach(s, k, val) {
			char kp[1024];

			snprintf(kp, sizeof(kp), "%s.%s", sub, k);
			if (strcmp(k, "id") == 0)
				id = val;
			else if (strcmp(k, "security_groups") == 0)
				sgs = val;
			else
				return fail(pe, kp, "unknown key");
		}
		if (id == NULL)
			return fail(pe, sub, "missing key \"id\"");
		snprintf(sub, sizeof(sub), "%s[%zu].id", path, i);
		if (parse_str(id, cs->id, sizeof(cs->id), sub, pe) == -1)
			return -1;
		if (!cloud_id_ok(cs->id, "subnet-"))
			return fail(pe, sub, "\"%s\" is not a subnet id", cs->id);
		if (sgs == NULL)
			continue;
		snprintf(sub, sizeof(sub), "%s[%zu].security_groups", path, i);
		if (!json_object_is_type(sgs, json_type_array))
			return fail(pe, sub, "expected an array, got %s",
			    type_name(sgs));
		if (json_object_array_length(sgs) > CONF_MAX_SGS)
			return fail(pe, sub, "more than %d security groups",
			    CONF_MAX_SGS);
		for (j = 0; j < json_object_array_length(sgs); j++) {
			char gp[1024];

			snprintf(gp, sizeof(gp), "%s[%zu]", sub, j);
			if (parse_str(json_object_array_get_idx(sgs, j),
			    cs->sgs[j], sizeof(cs->sgs[j]), gp, pe) == -1)
				return -1;
			if (!cloud_id_ok(cs->sgs[j], "sg-"))
				return fail(pe, gp, "\"%s\" is not a security "
				    "group id", cs->sgs[j]);
		}
		cs->nsgs = (uint32_t)j;
		cfg->nsubnets = (uint32_t)i + 1;
	}
	cfg->nsubnets = (uint32_t)n;
	return 0;
}

/* One exclusion: a CIDR with its host bits clear that is not 0.0.0.0/0. */
static int
parse_cidr_str(struct json_object *v, struct ip_prefix *c, const char *path,
    struct perr *pe)
{
	char buf[IP_PREFIX_STR_LEN + 8];
	const char *why;

	if (parse_str(v, buf, sizeof(buf), path, pe) == -1)
		return -1;
	if (ip_prefix_parse(buf, c, &why) == -1)
		return fail(pe, path, "\"%s\" is not an IPv4 CIDR "
		    "(a.b.c.d/len): %s", buf, why);
	if (c->addr.family != AF_INET)
		return fail(pe, path, "\"%s\" is an IPv6 CIDR: SNAT is for "
		    "IPv4 only", buf);
	if (!ip_prefix_is_network(c))
		return fail(pe, path, "\"%s\" has host bits set", buf);
	if (c->len == 0)
		return fail(pe, path, "\"%s\" covers every address: turn "
		    "SNAT off (snat.enabled) instead", buf);
	return 0;
}

static int
parse_cidrs(struct json_object *v, struct enid_config *cfg,
    const char *path, struct perr *pe)
{
	size_t i, j, n;
	char sub[760], a[IP_PREFIX_STR_LEN], b[IP_PREFIX_STR_LEN];

	if (!json_object_is_type(v, json_type_array))
		return fail(pe, path, "expected an array, got %s", type_name(v));
	n = json_object_array_length(v);
	if (n > CONF_MAX_SNAT_EXCLUDE)
		return fail(pe, path, "more than %d CIDRs (ENID_MAX_SNAT_"
		    "EXCLUDE)", CONF_MAX_SNAT_EXCLUDE);
	cfg->snat.nexclude = 0;
	for (i = 0; i < n; i++) {
		struct ip_prefix *c = &cfg->snat.exclude[i];

		snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
		if (parse_cidr_str(json_object_array_get_idx(v, i), c, sub,
		    pe) == -1)
			return -1;
		for (j = 0; j < i; j++) {
			const struct ip_prefix *o = &cfg->snat.exclude[j];

			if (!ip_prefix_overlaps(o, c))
				continue;
			ip_prefix_format(c, a);
			ip_prefix_format(o, b);
			return fail(pe, sub, "\"%s\" overlaps %s[%zu] (%s)", a,
			    path, j, b);
		}
	}
	cfg->snat.nexclude = (uint32_t)n;
	return 0;
}

static int
parse_mark(struct json_object *v, uint32_t *dst, const char *path,
    struct perr *pe)
{
	int64_t x;

	if (!json_object_is_type(v, json_type_int))
		return fail(pe, path, "expected an integer, got %s",
		    type_name(v));
	errno = 0;
	x = json_object_get_int64(v);
	if (errno != 0 || x <= 0 || x > UINT32_MAX ||
	    (x & (x - 1)) != 0)
		return fail(pe, path, "%s is not a mark with exactly one bit "
		    "set (128 is 0x80)", json_object_to_json_string(v));
	*dst = (uint32_t)x;
	return 0;
}

int
config_check_snat_vpc(const struct enid_config *cfg,
    const struct ip_prefix *vpc, size_t nvpc, char *err, size_t errlen)
{
	char a[IP_PREFIX_STR_LEN], b[IP_PREFIX_STR_LEN];
	uint32_t i;
	size_t j;

	for (i = 0; i < cfg->snat.nexclude && i < CONF_MAX_SNAT_EXCLUDE; i++)
		for (j = 0; j < nvpc; j++) {
			const struct ip_prefix *c = &cfg->snat.exclude[i];

			if (!ip_prefix_overlaps(&vpc[j], c))
				continue;
			ip_prefix_format(c, a);
			ip_prefix_format(&vpc[j], b);
			snprintf(err, errlen, "snat.exclude[%u]: \"%s\" "
			    "overlaps the VPC's CIDR %s (the VPC's own CIDRs "
			    "are never translated)", i, a, b);
			return -1;
		}
	return 0;
}

/*
 * json-c keeps its own copy of every string until the tree is freed, and
 * frees it without clearing it.  The copy is plain heap memory that the
 * tree owns, so a secret's is cleared in place once it has been taken.
 */
static void
wipe_json_string(struct json_object *v)
{
	if (json_object_is_type(v, json_type_string))
		explicit_bzero((char *)(uintptr_t)json_object_get_string(v),
		    (size_t)json_object_get_string_len(v));
}

/* A string naming one of a set (a log level, an IP family): its number
 * by parse(), or an error listing the set. */
static int
parse_named(struct json_object *v, int (*parse)(const char *),
    const char *what, const char *set, int *out, const char *path,
    struct perr *pe)
{
	int n;

	if (!json_object_is_type(v, json_type_string))
		return fail(pe, path, "expected a string, got %s",
		    type_name(v));
	/* "debug\u0000x" would be debug to parse() */
	if (strlen(json_object_get_string(v)) !=
	    (size_t)json_object_get_string_len(v))
		return fail(pe, path, "string contains a NUL byte");
	if ((n = parse(json_object_get_string(v))) < 0)
		return fail(pe, path, "unknown %s \"%s\" (%s)", what,
		    json_object_get_string(v), set);
	*out = n;
	return 0;
}

static int
parse_value(struct json_object *v, const struct key *k,
    struct enid_config *cfg, const char *path, struct perr *pe)
{
	char *base = (char *)cfg;
	int64_t n;
	int rc;

	switch (k->type) {
	case K_STR:
		return parse_str(v, base + k->off, k->size, path, pe);
	case K_SECRET:
		rc = parse_str(v, base + k->off, k->size, path, pe);
		wipe_json_string(v);
		return rc;
	case K_U32:
		if (!json_object_is_type(v, json_type_int))
			return fail(pe, path, "expected an integer, got %s",
			    type_name(v));
		errno = 0;
		n = json_object_get_int64(v);
		if (errno != 0 || n >= INT64_MAX || n <= INT64_MIN)
			return fail(pe, path, "integer too large (range %u..%u)",
			    k->min, k->max);
		if (n > (int64_t)k->max && k->cap != NULL)
			return fail(pe, path, "%lld is above %u, the most one "
			    "enid holds (%s)", (long long)n, k->max, k->cap);
		if (n < (int64_t)k->min || n > (int64_t)k->max)
			return fail(pe, path, "%lld out of range %u..%u",
			    (long long)n, k->min, k->max);
		*(uint32_t *)(void *)(base + k->off) = (uint32_t)n;
		return 0;
	case K_BOOL:
		if (!json_object_is_type(v, json_type_boolean))
			return fail(pe, path, "expected true or false, got %s",
			    type_name(v));
		*(bool *)(base + k->off) = json_object_get_boolean(v);
		return 0;
	case K_FAMILY:
		return parse_named(v, config_family_parse, "family",
		    "ipv4, dual, ipv6", (int *)(void *)(base + k->off), path,
		    pe);
	case K_LEVEL:
		return parse_named(v, log_level_parse, "level",
		    "error, warning, info, debug",
		    (int *)(void *)(base + k->off), path, pe);
	case K_OBJ:
		return parse_obj(v, k->sub, cfg, path, pe);
	case K_SUBNETS:
		return parse_subnets(v, cfg, path, pe);
	case K_CIDRS:
		return parse_cidrs(v, cfg, path, pe);
	case K_MARK:
		return parse_mark(v, (uint32_t *)(void *)(base + k->off), path,
		    pe);
	}
	return fail(pe, path, "internal: unknown key type");
}

static int
parse_obj(struct json_object *obj, const struct key *tab,
    struct enid_config *cfg, const char *path, struct perr *pe)
{
	if (!json_object_is_type(obj, json_type_object))
		return fail(pe, path, "expected an object, got %s",
		    type_name(obj));
	json_object_object_foreach(obj, name, val) {
		const struct key *k;
		char kp[700];

		snprintf(kp, sizeof(kp), "%s%s%s", path, *path ? "." : "", name);
		for (k = tab; k->name != NULL; k++)
			if (strcmp(k->name, name) == 0)
				break;
		if (k->name == NULL)
			return fail(pe, kp, "unknown key");
		if (parse_value(val, k, cfg, kp, pe) == -1)
			return -1;
	}
	return 0;
}

/* Absolute, and no ".." component anywhere (the last one included). */
static bool
absolute_path(const char *p)
{
	size_t n = strlen(p);

	return p[0] == '/' && strstr(p, "/../") == NULL &&
	    !(n >= 3 && strcmp(p + n - 3, "/..") == 0);
}

/* The node exporter's textfile collector reads only "*.prom"; the name
 * leaves room for the temporary one beside it (".NAME.tmp"). */
#define TEXTFILE_SUFFIX		".prom"
#define TEXTFILE_NAME_MAX	200

static int
check_textfile(const char *p, struct perr *pe)
{
	const char *name;
	size_t n;

	if (p[0] == '\0')
		return 0;
	if (!absolute_path(p))
		return fail(pe, "metrics_textfile", "must be an absolute path");
	name = strrchr(p, '/') + 1;
	n = strlen(name);
	if (n <= strlen(TEXTFILE_SUFFIX) ||
	    strcmp(name + n - strlen(TEXTFILE_SUFFIX), TEXTFILE_SUFFIX) != 0)
		return fail(pe, "metrics_textfile", "\"%s\" must name a file "
		    "ending in \"%s\" (the node exporter's textfile collector "
		    "reads only those)", p, TEXTFILE_SUFFIX);
	if (n > TEXTFILE_NAME_MAX)
		return fail(pe, "metrics_textfile", "file name longer than %d "
		    "bytes", TEXTFILE_NAME_MAX);
	return 0;
}

/* As enid-cni takes its veth_prefix: the start of a veth's name. */
static bool
veth_prefix_ok(const char *s)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= '0' && s[i] <= '9')))
			return false;
	return i >= 1 && i <= CONF_VETH_PREFIX_MAX;
}

/* Checks that span keys. */
static int
check_config(const struct enid_config *cfg, struct perr *pe)
{
	if (cfg->user[0] == '\0')
		return fail(pe, "user", "must not be empty");
	if (!absolute_path(cfg->runtime_dir))
		return fail(pe, "runtime_dir", "must be an absolute path");
	if (!absolute_path(cfg->state_dir))
		return fail(pe, "state_dir", "must be an absolute path");
	if (strcmp(cfg->cloud.provider, "ec2") != 0)
		return fail(pe, "cloud.provider", "unsupported provider \"%s\" "
		    "(only \"ec2\")", cfg->cloud.provider);
	if (cfg->cloud.ca_file[0] != '\0' && !absolute_path(cfg->cloud.ca_file))
		return fail(pe, "cloud.ca_file", "must be an absolute path");
	if ((cfg->cloud.access_key_id[0] == '\0') !=
	    (cfg->cloud.secret_access_key[0] == '\0'))
		return fail(pe, "cloud.access_key_id", "access_key_id and "
		    "secret_access_key must be given together");
	if (cfg->cloud.session_token[0] != '\0' &&
	    cfg->cloud.access_key_id[0] == '\0')
		return fail(pe, "cloud.session_token", "given without "
		    "access_key_id");
	if (cfg->cloud.retry.cap_ms < cfg->cloud.retry.base_ms)
		return fail(pe, "cloud.retry.cap_ms", "%u is below base_ms (%u)",
		    cfg->cloud.retry.cap_ms, cfg->cloud.retry.base_ms);
	/* Equal priorities would leave the order of "to POD" and "from POD"
	 * rules to the kernel's insertion order. */
	if (cfg->routing.rule_priority_to >= cfg->routing.rule_priority_from)
		return fail(pe, "routing.rule_priority_to", "%u must be below "
		    "routing.rule_priority_from (%u), so that traffic to pods "
		    "is matched first", cfg->routing.rule_priority_to,
		    cfg->routing.rule_priority_from);
	if (!veth_prefix_ok(cfg->routing.pod_veth_prefix))
		return fail(pe, "routing.pod_veth_prefix", "\"%s\" is not 1 to "
		    "%d of a-z 0-9 (enid-cni's veth_prefix)",
		    cfg->routing.pod_veth_prefix, CONF_VETH_PREFIX_MAX);
	if (cfg->pool.minimum_ip_target > 0 && cfg->pool.max_pods > 0 &&
	    cfg->pool.minimum_ip_target > cfg->pool.max_pods)
		return fail(pe, "pool.minimum_ip_target", "above max_pods (%u)",
		    cfg->pool.max_pods);
	/* Prefix delegation here is IPv4's /28s; an IPv6 pod's address
	 * always comes from its ENI's /80, whatever this says. */
	if (cfg->ip_family == IP_FAMILY_IPV6 && cfg->pool.prefix_delegation)
		return fail(pe, "pool.prefix_delegation", "delegates IPv4 /28 "
		    "prefixes, and ip_family \"ipv6\" gives pods no IPv4 "
		    "address (their IPv6 addresses come from /80 prefixes "
		    "anyway)");
	return check_textfile(cfg->metrics_textfile, pe);
}

int
config_parse(const char *text, size_t len, struct enid_config *cfg,
    char *err, size_t errlen)
{
	struct perr pe = { err, errlen };
	struct json_tokener *tok;
	struct json_object *root;
	enum json_tokener_error jerr;
	int rc;

	config_defaults(cfg);
	if (len > ENID_CONF_MAX_BYTES)
		return fail(&pe, "", "larger than %d bytes", ENID_CONF_MAX_BYTES);
	tok = json_tokener_new();
	if (tok == NULL)
		return fail(&pe, "", "out of memory");
	root = json_tokener_parse_ex(tok, text, (int)len);
	jerr = json_tokener_get_error(tok);
	if (root == NULL || jerr != json_tokener_success) {
		if (jerr == json_tokener_continue)
			fail(&pe, "", "invalid JSON: unexpected end of input");
		else
			fail(&pe, "", "invalid JSON at offset %zu: %s",
			    json_tokener_get_parse_end(tok),
			    json_tokener_error_desc(jerr));
		json_object_put(root);
		json_tokener_free(tok);
		return -1;
	}
	if (json_tokener_get_parse_end(tok) < len &&
	    strspn(text + json_tokener_get_parse_end(tok), " \t\r\n") !=
	    len - json_tokener_get_parse_end(tok)) {
		fail(&pe, "", "trailing data after the JSON object at offset "
		    "%zu", json_tokener_get_parse_end(tok));
		json_object_put(root);
		json_tokener_free(tok);
		return -1;
	}
	json_tokener_free(tok);
	rc = parse_obj(root, top_keys, cfg, "", &pe);
	json_object_put(root);
	if (rc == 0)
		rc = check_config(cfg, &pe);
	return rc;
}

int
config_load(const char *path, struct enid_config *cfg, char *err,
    size_t errlen)
{
	struct stat st;
	char *text = NULL;
	size_t got = 0;
	ssize_t n;
	int fd, rc;
	char inner[512];

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		close(fd);
		return -1;
	}
	if (st.st_size > ENID_CONF_MAX_BYTES) {
		snprintf(err, errlen, "%s: larger than %d bytes", path,
		    ENID_CONF_MAX_BYTES);
		close(fd);
		return -1;
	}
	text = malloc((size_t)st.st_size + 1);
	if (text == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		close(fd);
		return -1;
	}
	while (got < (size_t)st.st_size &&
	    (n = read(fd, text + got, (size_t)st.st_size - got)) > 0)
		got += (size_t)n;
	close(fd);
	text[got] = '\0';
	rc = config_parse(text, got, cfg, inner, sizeof(inner));
	/* The file may hold the cloud's secret: no copy outlives the parse. */
	explicit_bzero(text, got);
	free(text);
	if (rc == -1)
		snprintf(err, errlen, "%s: %s", path, inner);
	return rc;
}

void
config_wipe_secrets(struct enid_config *cfg)
{
	explicit_bzero(cfg->cloud.access_key_id,
	    sizeof(cfg->cloud.access_key_id));
	explicit_bzero(cfg->cloud.secret_access_key,
	    sizeof(cfg->cloud.secret_access_key));
	explicit_bzero(cfg->cloud.session_token,
	    sizeof(cfg->cloud.session_token));
}

/* ---- the configuration in effect, as JSON ---- */

static struct json_object *
obj_to_json(const struct enid_config *cfg, const struct key *tab)
{
	const char *base = (const char *)cfg;
	struct json_object *o = json_object_new_object(), *v, *a, *sgs;
	const struct key *k;
	uint32_t i, j;

	for (k = tab; k->name != NULL; k++) {
		switch (k->type) {
		case K_SECRET:
			continue;	/* never shown */
		case K_STR:
			v = json_object_new_string(base + k->off);
			break;
		case K_MARK:
		case K_U32:
			v = json_object_new_int64(
			    *(const uint32_t *)(const void *)(base + k->off));
			break;
		case K_BOOL:
			v = json_object_new_boolean(
			    *(const bool *)(base + k->off));
			break;
		case K_FAMILY:
			v = json_object_new_string(config_family_name(
			    *(const int *)(const void *)(base + k->off)));
			break;
		case K_LEVEL:
			v = json_object_new_string(log_level_name(
			    *(const int *)(const void *)(base + k->off)));
			break;
		case K_OBJ:
			v = obj_to_json(cfg, k->sub);
			break;
		case K_SUBNETS:
			v = json_object_new_array();
			for (i = 0; i < cfg->nsubnets &&
			    i < CONF_MAX_SUBNETS; i++) {
				a = json_object_new_object();
				json_object_object_add(a, "id",
				    json_object_new_string(cfg->subnets[i].id));
				sgs = json_object_new_array();
				for (j = 0; j < cfg->subnets[i].nsgs &&
				    j < CONF_MAX_SGS; j++)
					json_object_array_add(sgs,
					    json_object_new_string(
					    cfg->subnets[i].sgs[j]));
				json_object_object_add(a, "security_groups",
				    sgs);
				json_object_array_add(v, a);
			}
			break;
		case K_CIDRS:
			v = json_object_new_array();
			for (i = 0; i < cfg->snat.nexclude &&
			    i < CONF_MAX_SNAT_EXCLUDE; i++) {
				char c[IP_PREFIX_STR_LEN];

				ip_prefix_format(&cfg->snat.exclude[i], c);
				json_object_array_add(v,
				    json_object_new_string(c));
			}
			break;
		default:
			continue;
		}
		json_object_object_add(o, k->name, v);
	}
	return o;
}

struct json_object *
config_to_json(const struct enid_config *cfg)
{
	return obj_to_json(cfg, top_keys);
}
