/*
 * Configuration errors: each bad input is refused with a message naming
 * the key and the reason; good input lands in the struct.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "conf.h"
#include "log.h"

static struct enid_config cfg;

static const char *
parse_err(const char *text)
{
	static char err[1024];

	err[0] = '\0';
	if (config_parse(text, strlen(text), &cfg, err, sizeof(err)) == 0)
		return NULL;
	return err;
}

struct bad {
	const char	*text;
	const char	*expect;	/* the whole message */
};

static const struct bad bad_cases[] = {
	{ "", "invalid JSON: unexpected end of input" },
	{ "{", "invalid JSON: unexpected end of input" },
	{ "[]", "expected an object, got array" },
	{ "{} {}", "trailing data after the JSON object at offset 3" },
	{ "{\"usr\": \"x\"}", "usr: unknown key" },
	{ "{\"user\": 5}", "user: expected a string, got int" },
	{ "{\"user\": \"\"}", "user: must not be empty" },
	{ "{\"log_level\": \"loud\"}",
	  "log_level: unknown level \"loud\" (error, warning, info, debug)" },
	{ "{\"runtime_dir\": \"run/enid\"}",
	  "runtime_dir: must be an absolute path" },
	{ "{\"pool\": {\"warm_ip_target\": \"3\"}}",
	  "pool.warm_ip_target: expected an integer, got string" },
	{ "{\"pool\": {\"warm_ip_target\": -1}}",
	  "pool.warm_ip_target: -1 out of range 0..1000" },
	{ "{\"pool\": {\"add_timeout_s\": 0}}",
	  "pool.add_timeout_s: 0 out of range 1..600" },
	{ "{\"pool\": {\"max_enis\": 99999999999999999999}}",
	  "pool.max_enis: integer too large (range 0..64)" },
	{ "{\"pool\": {\"max_enis\": 2.5}}",
	  "pool.max_enis: expected an integer, got double" },
	{ "{\"pool\": {\"warm\": 1}}", "pool.warm: unknown key" },
	{ "{\"pool\": 3}", "pool: expected an object, got int" },
	{ "{\"cloud\": {\"allow_http\": \"yes\"}}",
	  "cloud.allow_http: expected true or false, got string" },
	{ "{\"cloud\": {\"provider\": \"gce\"}}",
	  "cloud.provider: unsupported provider \"gce\" (only \"ec2\")" },
	{ "{\"cloud\": {\"rate\": {\"mutating\": {\"capacity\": 0}}}}",
	  "cloud.rate.mutating.capacity: 0 out of range 1..10000" },
	{ "{\"cloud\": {\"rate\": {\"fast\": {}}}}",
	  "cloud.rate.fast: unknown key" },
	{ "{\"cloud\": {\"access_key_id\": \"AKID\"}}",
	  "cloud.access_key_id: access_key_id and secret_access_key must be "
	  "given together" },
	{ "{\"cloud\": {\"ca_file\": \"certs.pem\"}}",
	  "cloud.ca_file: must be an absolute path" },
	{ "{\"subnets\": {}}", "subnets: expected an array, got object" },
	{ "{\"subnets\": [{}]}", "subnets[0]: missing key \"id\"" },
	{ "{\"subnets\": [{\"id\": \"subnet-1\"}, {\"id\": \"net-2\"}]}",
	  "subnets[1].id: \"net-2\" is not a subnet id" },
	{ "{\"subnets\": [{\"id\": \"subnet-1\", \"sgs\": []}]}",
	  "subnets[0].sgs: unknown key" },
	{ "{\"subnets\": [{\"id\": \"subnet-1\", \"security_groups\": "
	  "[\"sg-1\", 7]}]}",
	  "subnets[0].security_groups[1]: expected a string, got int" },
	{ "{\"subnets\": [{\"id\": \"subnet-1\", \"security_groups\": "
	  "[\"group\"]}]}",
	  "subnets[0].security_groups[0]: \"group\" is not a security group id" },
	{ "{\"routing\": {\"table_base\": 250}}",
	  "routing.table_base: 250 out of range 1..188" },
	{ "{\"routing\": {\"rule_priority_to\": 2000, "
	  "\"rule_priority_from\": 1000}}",
	  "routing.rule_priority_to: must be below rule_priority_from (1000), "
	  "so that traffic to pods is matched first" },
	{ "{\"leak_gc\": {\"enabled\": 1}}",
	  "leak_gc.enabled: expected true or false, got int" },
	{ "{\"reconcile_interval_s\": 1}",
	  "reconcile_interval_s: 1 out of range 5..86400" },
	{ "{\"cluster_name\": \"a\\u0000b\"}",
	  "cluster_name: string contains a NUL byte" },
};

static void
test_bad_configs_name_key_and_reason(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const char *err = parse_err(bad_cases[i].text);

		if (err == NULL)
			fail_msg("accepted: %s", bad_cases[i].text);
		if (strcmp(err, bad_cases[i].expect) != 0)
			fail_msg("for %s\n  got:    %s\n  wanted: %s",
			    bad_cases[i].text, err, bad_cases[i].expect);
	}
}

static void
test_too_long_string(void **state)
{
	char text[600];
	const char *err;

	(void)state;
	snprintf(text, sizeof(text), "{\"user\": \"%0300d\"}", 0);
	err = parse_err(text);
	assert_non_null(err);
	assert_string_equal(err, "user: string longer than 255 bytes");
}

static void
test_defaults(void **state)
{
	(void)state;
	assert_null(parse_err("{}"));
	assert_string_equal(cfg.user, "enid");
	assert_string_equal(cfg.runtime_dir, "/run/enid");
	assert_string_equal(cfg.state_dir, "/var/lib/enid");
	assert_string_equal(cfg.cloud.imds_endpoint, "http://169.254.169.254");
	assert_false(cfg.cloud.allow_http);
	assert_int_equal(cfg.pool.ip_cooldown_s, 30);
	assert_int_equal(cfg.pool.add_timeout_s, 10);
	assert_int_equal(cfg.routing.table_base, 100);
	assert_true(cfg.routing.rule_priority_to <
	    cfg.routing.rule_priority_from);
	assert_int_equal(cfg.log_level, LOG_LVL_INFO);
	assert_true(cfg.leak_gc.enabled);
}

static void
test_full_config(void **state)
{
	const char *text =
	    "{\n"
	    "  \"user\": \"nobody\", \"admin_group\": \"adm\",\n"
	    "  \"runtime_dir\": \"/tmp/r\", \"state_dir\": \"/tmp/s\",\n"
	    "  \"log_level\": \"debug\", \"cluster_name\": \"prod\",\n"
	    "  \"cloud\": {\"provider\": \"ec2\", \"region\": \"eu-west-1\",\n"
	    "    \"ec2_endpoint\": \"http://198.18.0.1/\", \"allow_http\": true,\n"
	    "    \"rate\": {\"mutating\": {\"capacity\": 5, \"refill_per_s\": 1},\n"
	    "             \"describe\": {\"capacity\": 9, \"refill_per_s\": 3}}},\n"
	    "  \"pool\": {\"warm_ip_target\": 3, \"minimum_ip_target\": 5,\n"
	    "    \"warm_eni_target\": 0, \"max_pods\": 29, \"max_enis\": 3,\n"
	    "    \"ip_cooldown_s\": 0, \"add_timeout_s\": 4},\n"
	    "  \"subnets\": [{\"id\": \"subnet-a\", \"security_groups\": "
	    "[\"sg-1\", \"sg-2\"]}, {\"id\": \"subnet-b\"}],\n"
	    "  \"routing\": {\"table_base\": 10, \"rule_priority_to\": 100,\n"
	    "    \"rule_priority_from\": 200},\n"
	    "  \"reconcile_interval_s\": 30,\n"
	    "  \"leak_gc\": {\"enabled\": false, \"grace_s\": 60}\n"
	    "}\n";

	(void)state;
	assert_null(parse_err(text));
	assert_string_equal(cfg.user, "nobody");
	assert_string_equal(cfg.admin_group, "adm");
	assert_int_equal(cfg.log_level, LOG_LVL_DEBUG);
	assert_string_equal(cfg.cloud.region, "eu-west-1");
	assert_true(cfg.cloud.allow_http);
	assert_int_equal(cfg.cloud.rate_mutating.capacity, 5);
	assert_int_equal(cfg.cloud.rate_describe.refill_per_s, 3);
	assert_int_equal(cfg.pool.max_pods, 29);
	assert_int_equal(cfg.nsubnets, 2);
	assert_string_equal(cfg.subnets[0].sgs[1], "sg-2");
	assert_int_equal(cfg.subnets[1].nsgs, 0);
	assert_int_equal(cfg.routing.table_base, 10);
	assert_false(cfg.leak_gc.enabled);
	assert_int_equal(cfg.leak_gc.grace_s, 60);
}

static void
test_load_file_errors(void **state)
{
	char path[] = "/tmp/enid-test-conf-XXXXXX";
	char err[1024];
	int fd;

	(void)state;
	assert_int_equal(config_load("/nonexistent/enid.conf", &cfg, err,
	    sizeof(err)), -1);
	assert_string_equal(err, "/nonexistent/enid.conf: No such file or "
	    "directory");
	assert_int_equal(config_load("/tmp", &cfg, err, sizeof(err)), -1);
	assert_string_equal(err, "/tmp: not a regular file");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{\"pool\": {\"max_pods\": true}}", 28), 28);
	close(fd);
	assert_int_equal(config_load(path, &cfg, err, sizeof(err)), -1);
	assert_non_null(strstr(err, ": pool.max_pods: expected an integer, "
	    "got boolean"));
	assert_true(strncmp(err, path, strlen(path)) == 0);
	unlink(path);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_configs_name_key_and_reason),
		cmocka_unit_test(test_too_long_string),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_full_config),
		cmocka_unit_test(test_load_file_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
