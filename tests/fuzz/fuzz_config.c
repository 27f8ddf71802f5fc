/*
 * libFuzzer target for the configuration loader (common/conf.c): the text
 * is handed to config_parse() as config_load() would, but in a buffer of
 * exactly its bytes, without the NUL config_load() adds, as the function
 * says it needs none.
 *
 * Invariants, beyond "does not crash":
 * - what parses passes the rules that span keys, restated here: a user,
 *   absolute directories without "..", the ec2 provider, the rule
 *   priorities in order, subnet and group ids of their form and count,
 *   both static keys or neither, a textfile ending ".prom";
 * - the log level is the one the document names, whole;
 * - config_to_json() of it, parsed again, gives a configuration whose
 *   config_to_json() is the same text, with the secrets empty (they are
 *   never shown), and config_wipe_secrets() leaves none;
 * - a refusal names its cause in a terminated message, the same refusal
 *   whatever the size of the error buffer, which is never written past.
 *
 *   make fuzz-config [FUZZ_SECONDS=N]
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "conf.h"
#include "log.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)	do { if (!(x)) __builtin_trap(); } while (0)
#define TERMINATED(f)	(memchr((f), '\0', sizeof(f)) != NULL)

static bool
all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n-- > 0)
		if (*b++ != 0)
			return false;
	return true;
}

static bool
absolute(const char *p)
{
	size_t n = strlen(p);

	return p[0] == '/' && strstr(p, "/../") == NULL &&
	    !(n >= 3 && strcmp(p + n - 3, "/..") == 0);
}

static bool
id_of(const char *s, const char *prefix)
{
	size_t n = strlen(prefix);

	if (strncmp(s, prefix, n) != 0 || s[n] == '\0')
		return false;
	for (s += n; *s != '\0'; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= '0' && *s <= '9')))
			return false;
	return true;
}

static void
valid(const struct enid_config *c)
{
	const char *name;
	uint32_t i, j;

	CHECK(TERMINATED(c->user) && TERMINATED(c->admin_group));
	CHECK(TERMINATED(c->runtime_dir) && TERMINATED(c->state_dir));
	CHECK(TERMINATED(c->cluster_name) && TERMINATED(c->metrics_textfile));
	CHECK(TERMINATED(c->cloud.provider) && TERMINATED(c->cloud.region));
	CHECK(TERMINATED(c->cloud.ec2_endpoint));
	CHECK(TERMINATED(c->cloud.imds_endpoint));
	CHECK(TERMINATED(c->cloud.ca_file));
	CHECK(TERMINATED(c->cloud.access_key_id));
	CHECK(TERMINATED(c->cloud.secret_access_key));
	CHECK(TERMINATED(c->cloud.session_token));

	CHECK(c->user[0] != '\0');
	CHECK(absolute(c->runtime_dir) && absolute(c->state_dir));
	CHECK(c->cloud.ca_file[0] == '\0' || absolute(c->cloud.ca_file));
	CHECK(strcmp(c->cloud.provider, "ec2") == 0);
	CHECK(c->log_level >= LOG_LVL_ERROR && c->log_level <= LOG_LVL_DEBUG);
	CHECK(c->ip_family >= IP_FAMILY_IPV4 && c->ip_family <= IP_FAMILY_IPV6);
	CHECK(!(c->ip_family == IP_FAMILY_IPV6 && c->pool.prefix_delegation));
	CHECK((c->cloud.access_key_id[0] == '\0') ==
	    (c->cloud.secret_access_key[0] == '\0'));
	CHECK(c->cloud.session_token[0] == '\0' ||
	    c->cloud.access_key_id[0] != '\0');
	CHECK(c->cloud.timeout_ms >= 100 && c->cloud.timeout_ms <= 600000);
	CHECK(c->routing.rule_priority_to < c->routing.rule_priority_from);
	CHECK(c->routing.rule_priority_from <= 32765);
	CHECK(c->routing.table_base >= 1 &&
	    c->routing.table_base + CONF_TABLE_SPAN <= 252);
	CHECK(c->pool.minimum_ip_target == 0 || c->pool.max_pods == 0 ||
	    c->pool.minimum_ip_target <= c->pool.max_pods);
	CHECK(c->pool.add_timeout_s >= 1 && c->pool.link_timeout_s >= 1);
	CHECK(c->reconcile_interval_s >= 5);

	CHECK(c->nsubnets <= CONF_MAX_SUBNETS);
	for (i = 0; i < c->nsubnets; i++) {
		CHECK(TERMINATED(c->subnets[i].id));
		CHECK(id_of(c->subnets[i].id, "subnet-"));
		CHECK(c->subnets[i].nsgs <= CONF_MAX_SGS);
		for (j = 0; j < c->subnets[i].nsgs; j++) {
			CHECK(TERMINATED(c->subnets[i].sgs[j]));
			CHECK(id_of(c->subnets[i].sgs[j], "sg-"));
		}
	}

	if (c->metrics_textfile[0] != '\0') {
		CHECK(absolute(c->metrics_textfile));
		name = strrchr(c->metrics_textfile, '/') + 1;
		CHECK(strlen(name) > 5 &&
		    strcmp(name + strlen(name) - 5, ".prom") == 0);
	}
}

/* The document's log_level, read again with json-c, is the level's name
 * (or "warn") byte for byte. */
static void
same_level(const char *text, size_t len, const struct enid_config *c)
{
	struct json_tokener *tok;
	struct json_object *root, *v;
	const char *name = log_level_name(c->log_level);
	size_t n;

	CHECK((tok = json_tokener_new()) != NULL);
	root = json_tokener_parse_ex(tok, text, (int)len);
	json_tokener_free(tok);
	CHECK(root != NULL);
	if (json_object_object_get_ex(root, "log_level", &v)) {
		CHECK(json_object_is_type(v, json_type_string));
		n = (size_t)json_object_get_string_len(v);
		CHECK((n == strlen(name) &&
		    memcmp(json_object_get_string(v), name, n) == 0) ||
		    (c->log_level == LOG_LVL_WARN && n == 4 &&
		    memcmp(json_object_get_string(v), "warn", 4) == 0));
	} else
		CHECK(c->log_level == LOG_LVL_INFO);
	json_object_put(root);
}

static char *
json_text(const struct enid_config *c)
{
	struct json_object *o;
	char *text;

	CHECK((o = config_to_json(c)) != NULL);
	CHECK((text = strdup(json_object_to_json_string_ext(o,
	    JSON_C_TO_STRING_PLAIN))) != NULL);
	json_object_put(o);
	return text;
}

static void
round_trips(struct enid_config *c)
{
	static struct enid_config again;
	char err[512], *text, *text2;

	text = json_text(c);
	CHECK(config_parse(text, strlen(text), &again, err, sizeof(err)) == 0);
	CHECK(again.cloud.access_key_id[0] == '\0');
	CHECK(again.cloud.secret_access_key[0] == '\0');
	CHECK(again.cloud.session_token[0] == '\0');
	valid(&again);
	text2 = json_text(&again);
	CHECK(strcmp(text, text2) == 0);
	free(text2);
	free(text);

	config_wipe_secrets(c);
	CHECK(all_zero(c->cloud.access_key_id,
	    sizeof(c->cloud.access_key_id)));
	CHECK(all_zero(c->cloud.secret_access_key,
	    sizeof(c->cloud.secret_access_key)));
	CHECK(all_zero(c->cloud.session_token,
	    sizeof(c->cloud.session_token)));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct enid_config cfg, cfg2;
	char *text, err[512], small[24];
	size_t smallen;
	int rc, rc2;

	/* just the bytes: ASan sees any read past them */
	CHECK((text = malloc(size ? size : 1)) != NULL);
	memcpy(text, data, size);

	memset(err, 'x', sizeof(err));
	rc = config_parse(text, size, &cfg, err, sizeof(err));
	if (rc == 0) {
		valid(&cfg);
		same_level(text, size, &cfg);
		round_trips(&cfg);
	} else {
		CHECK(rc == -1);
		CHECK(memchr(err, '\0', sizeof(err)) != NULL && err[0] != '\0');
	}

	/* The same answer with a short error buffer, never written past. */
	smallen = 1 + size % (sizeof(small) - 1);
	memset(small, 'x', sizeof(small));
	rc2 = config_parse(text, size, &cfg2, small, smallen);
	CHECK(rc2 == rc);
	CHECK(rc == 0 || memchr(small, '\0', smallen) != NULL);
	CHECK(smallen == sizeof(small) || small[smallen] == 'x');
	free(text);
	return 0;
}
