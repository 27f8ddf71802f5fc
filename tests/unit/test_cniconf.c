/*
 * enid-cni's pure part: parsing the CNI_* environment and the network
 * configuration (every error with its code and the name it must carry),
 * the host end's name, the broker code table, and results in each
 * version's shape.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "addr.h"
#include "cniconf.h"

static const struct cni_env ENV_ADD = {
	.command = "ADD", .containerid = "c0ffee-1", .netns = "/run/netns/p1",
	.ifname = "eth0",
	.args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;"
	    "K8S_POD_UID=4d6f-11;K8S_POD_INFRA_CONTAINER_ID=c0ffee-1",
};

static const char *CONF =
    "{\"cniVersion\":\"1.1.0\",\"name\":\"pods\",\"type\":\"enid-cni\","
    "\"socket\":\"/run/x/cni.sock\",\"mtu\":9001,\"veth_prefix\":\"pod\","
    "\"dns\":{\"nameservers\":[\"10.0.0.2\"],\"search\":[\"svc\"]},"
    "\"runtimeConfig\":{\"portMappings\":[]},\"args\":{\"cni\":{}},"
    "\"capabilities\":{},\"cni.dev/extra\":1}";

static int
parse(enum cni_role role, const struct cni_env *env, const char *text,
    struct cni_conf *c, struct cni_error *e)
{
	return cni_conf_parse(role, env, text, strlen(text), c, e);
}

static void
test_main_ok(void **state)
{
	struct cni_conf c;
	struct cni_error e;

	(void)state;
	assert_int_equal(parse(CNI_ROLE_MAIN, &ENV_ADD, CONF, &c, &e), 0);
	assert_int_equal(c.cmd, CNI_CMD_ADD);
	assert_string_equal(c.version, "1.1.0");
	assert_string_equal(c.name, "pods");
	assert_string_equal(c.socket, "/run/x/cni.sock");
	assert_int_equal(c.mtu, 9001);
	assert_string_equal(c.veth_prefix, "pod");
	assert_string_equal(c.container_id, "c0ffee-1");
	assert_string_equal(c.ifname, "eth0");
	assert_string_equal(c.netns, "/run/netns/p1");
	assert_string_equal(c.k8s_namespace, "default");
	assert_string_equal(c.k8s_name, "web-0");
	assert_string_equal(c.k8s_uid, "4d6f-11");
	assert_non_null(c.dns);
	assert_null(c.prev);
	cni_conf_free(&c);

	/* enid_user: a name, or a uid */
	assert_int_equal(parse(CNI_ROLE_MAIN, &ENV_ADD, "{\"cniVersion\":"
	    "\"1.0.0\",\"name\":\"n\",\"type\":\"enid-cni\","
	    "\"enid_user\":\"_enid-2\"}", &c, &e), 0);
	assert_string_equal(c.enid_user, "_enid-2");
	assert_false(c.uid_is_number);
	cni_conf_free(&c);
	assert_int_equal(parse(CNI_ROLE_MAIN, &ENV_ADD, "{\"cniVersion\":"
	    "\"1.0.0\",\"name\":\"n\",\"type\":\"enid-cni\","
	    "\"enid_user\":999}", &c, &e), 0);
	assert_true(c.uid_is_number);
	assert_int_equal(c.enid_uid, 999);
	cni_conf_free(&c);

	/* defaults */
	assert_int_equal(parse(CNI_ROLE_MAIN, &ENV_ADD, "{\"cniVersion\":"
	    "\"0.4.0\",\"name\":\"n\",\"type\":\"enid-cni\"}", &c, &e), 0);
	assert_string_equal(c.enid_user, "enid");
	assert_false(c.uid_is_number);
	assert_string_equal(c.socket, "/run/enid/cni.sock");
	assert_string_equal(c.veth_prefix, "enid");
	assert_int_equal(c.mtu, 0);
	cni_conf_free(&c);
}

struct bad {
	const char	*cmd, *cid, *netns, *ifname, *args;
	const char	*text;
	int		 code;
	const char	*needle;
};

#define V "\"cniVersion\":\"1.1.0\",\"name\":\"n\","
#define M V "\"type\":\"enid-cni\""

static const struct bad bad_main[] = {
	{ NULL, 0, 0, 0, 0, "{" M "}", 4, "CNI_COMMAND is not set" },
	{ "FLY", 0, 0, 0, 0, "{" M "}", 4, "unknown CNI_COMMAND \"FLY\"" },
	{ "ADD", "", 0, 0, 0, "{" M "}", 4, "CNI_CONTAINERID is not set" },
	{ "ADD", "-x", 0, 0, 0, "{" M "}", 4, "CNI_CONTAINERID \"-x\"" },
	{ "ADD", "a/b", 0, 0, 0, "{" M "}", 4, "not a container id" },
	{ "ADD", "c", "/n", NULL, 0, "{" M "}", 4, "CNI_IFNAME is not set" },
	{ "ADD", "c", "/n", "eth0/1", 0, "{" M "}", 4, "CNI_IFNAME" },
	{ "ADD", "c", "/n", "sixteen-chars-xx", 0, "{" M "}", 4,
	  "not an interface name" },
	{ "ADD", "c", "/n", "..", 0, "{" M "}", 4, "CNI_IFNAME" },
	{ "ADD", "c", NULL, "e", 0, "{" M "}", 4, "CNI_NETNS is not set" },
	{ "CHECK", "c", "", "e", 0, "{" M "}", 4, "CNI_NETNS is not set" },
	{ "ADD", "c", "rel/ns", "e", 0, "{" M "}", 4,
	  "CNI_NETNS \"rel/ns\" is not an absolute path" },
	{ "ADD", "c", "/n", "e", "novalue", "{" M "}", 4,
	  "CNI_ARGS: \"novalue\" is not KEY=VALUE" },
	{ "ADD", "c", "/n", "e", "=v", "{" M "}", 4, "is not KEY=VALUE" },
	{ "ADD", "c", "/n", "e", "K8S_POD_NAME=a b", "{" M "}", 4,
	  "CNI_ARGS: K8S_POD_NAME must be printable" },
	{ "ADD", "c", "/n", "e", 0, "{not json", 6, "not valid JSON" },
	{ "ADD", "c", "/n", "e", 0, "[]", 6, "not a JSON object" },
	{ "ADD", "c", "/n", "e", 0, "{" M "} x", 6, "text after the object" },
	{ "ADD", "c", "/n", "e", 0, "", 6, "not valid JSON" },
	{ "ADD", "c", "/n", "e", 0, "{\"cniVersion\":\"0.3.1\"}", 1,
	  "cniVersion \"0.3.1\" not supported" },
	{ "ADD", "c", "/n", "e", 0, "{\"cniVersion\":1}", 7,
	  "\"cniVersion\" must be a string" },
	{ "ADD", "c", "/n", "e", 0, "{\"name\":\"n\"}", 7,
	  "missing \"cniVersion\"" },
	{ "GC", 0, 0, 0, 0, "{\"cniVersion\":\"1.0.0\",\"name\":\"n\","
	  "\"type\":\"enid-cni\"}", 1, "GC needs cniVersion 1.1.0" },
	{ "ADD", "c", "/n", "e", 0, "{" V "\"type\":\"bridge\"}", 7,
	  "type \"bridge\" is not enid-cni" },
	{ "ADD", "c", "/n", "e", 0, "{\"cniVersion\":\"1.1.0\","
	  "\"type\":\"enid-cni\"}", 7, "missing \"name\"" },
	{ "ADD", "c", "/n", "e", 0, "{\"cniVersion\":\"1.1.0\",\"name\":"
	  "\"-n\",\"type\":\"enid-cni\"}", 7, "not a network name" },
	{ "ADD", "c", "/n", "e", 0, "{" M ",\"socket\":5}", 7,
	  "\"socket\" must be a string" },
	{ "ADD", "c", "/n", "e", 0, "{" M ",\"socket\":\"x.sock\"}", 7,
	  "not an absolute path" },
	{ "ADD", "c", "/n", "e", 0, "{" M ",\"mtu\":67}", 7, "\"mtu\"" },
	{ "ADD", "c", "/n", "e", 0, "{" M ",\"mtu\":\"1500\"}", 7, "\"mtu\"" },
	{ "ADD", "c", "/n", "e", 0, "{" M ",\"veth_prefix\":\"toolong1\"}", 7,
	  "\"veth_prefix\" must be 1 to 7" },
	{ "ADD", "c", "/n", "e", 0, "{" M ",\"veth_prefix\":\"A\"}", 7,
	  "veth_prefix" },
	{ "ADD", "c", "/n", "e", 0, "{" M ",\"enid_user\":\"Enid\"}", 7,
	  "\"enid_user\" \"Enid\" is not a user name" },
	{ "ADD", "c", "/n", "e", 0, "{" M ",\"enid_user\":\"\"}", 7,
	  "\"enid_user\" is empty" },
	{ "ADD", "c", "/n", "e", 0, "{" M ",\"enid_user\":-1}", 7,
	  "\"enid_user\" -1 is not a uid" },
	{ "ADD", "c", "/n", "e", 0, "{" M ",\"enid_user\":4294967295}", 7,
	  "is not a uid" },
	{ "ADD", "c", "/n", "e", 0, "{" M ",\"enid_user\":true}", 7,
	  "\"enid_user\" must be a string" },
	{ "ADD", "c", "/n", "e", 0, "{" M ",\"ipam\":{\"type\":\"host-local\"}}",
	  7, "remove \"ipam\"" },
	{ "ADD", "c", "/n", "e", 0, "{" M ",\"vethprefix\":\"x\"}", 2,
	  "unsupported field \"vethprefix\": \"x\"" },
	{ "ADD", "c", "/n", "e", 0, "{" M ",\"dns\":[]}", 7,
	  "\"dns\" must be an object" },
	{ "ADD", "c", "/n", "e", 0, "{" M ",\"dns\":{\"nameservers\":[1]}}", 7,
	  "nameservers must be an array of strings" },
	{ "ADD", "c", "/n", "e", 0, "{" M ",\"runtimeConfig\":1}", 7,
	  "\"runtimeConfig\" must be an object" },
	{ "ADD", "c", "/n", "e", 0, "{" M ",\"prevResult\":[]}", 7,
	  "prevResult must be an object" },
	{ "ADD", "c", "/n", "e", 0, "{" M ",\"prevResult\":{\"ips\":[{"
	  "\"address\":\"10.0.0.1\"}]}}", 7, "prevResult.ips[0] needs" },
	{ "ADD", "c", "/n", "e", 0, "{" M ",\"prevResult\":{\"ips\":[{"
	  "\"address\":\"10.0.0.1/32\",\"interface\":0}]}}", 7,
	  "prevResult.ips[0].interface is not an index" },
	{ "ADD", "c", "/n", "e", 0, "{" M ",\"prevResult\":{\"routes\":[{"
	  "\"dst\":\"0.0.0.0/0\",\"gw\":\"x\"}]}}", 7,
	  "prevResult.routes[0].gw" },
	{ "CHECK", "c", "/n", "e", 0, "{" M "}", 7, "CHECK needs "
	  "\"prevResult\"" },
	{ "CHECK", "c", "/n", "e", 0, "{" M ",\"prevResult\":{\"ips\":[]}}",
	  7, "prevResult holds no address" },
	{ "GC", 0, 0, 0, 0, "{" M "}", 7, "GC needs "
	  "\"cni.dev/valid-attachments\"" },
	{ "GC", 0, 0, 0, 0, "{" M ",\"cni.dev/valid-attachments\":{}}", 7,
	  "must be an array" },
	{ "GC", 0, 0, 0, 0, "{" M ",\"cni.dev/valid-attachments\":\"\"}", 7,
	  "must be an array" },
	{ "GC", 0, 0, 0, 0, "{" M ",\"cni.dev/valid-attachments\":[{"
	  "\"containerID\":\"a\"}]}", 7, "[0].ifname is missing" },
	{ "GC", 0, 0, 0, 0, "{" M ",\"cni.dev/valid-attachments\":[{"
	  "\"containerID\":\"../a\",\"ifname\":\"e\"}]}", 7,
	  "not a container id" },
};

static void
test_main_errors(void **state)
{
	struct cni_conf c;
	struct cni_error e;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad_main) / sizeof(bad_main[0]); i++) {
		const struct bad *b = &bad_main[i];
		struct cni_env env = { b->cmd, b->cid, b->netns, b->ifname,
		    b->args };

		if (parse(CNI_ROLE_MAIN, &env, b->text, &c, &e) != -1 ||
		    e.code != b->code || strstr(e.msg, b->needle) == NULL) {
			print_error("case %zu: code %d msg \"%s\"; wanted %d "
			    "\"%s\"\n", i, e.code, e.msg, b->code, b->needle);
			fail();
		}
		assert_non_null(c.version);
		assert_null(c.prev);
		assert_null(c.valid);
	}
}

static void
test_ipam_role(void **state)
{
	static const struct cni_env env = { "ADD", "c1", "/run/netns/p", "eth0",
	    NULL };
	struct cni_conf c;
	struct cni_error e;

	(void)state;
	/* ptp's own keys are ptp's business. */
	assert_int_equal(parse(CNI_ROLE_IPAM, &env, "{" V "\"type\":\"ptp\","
	    "\"ipMasq\":true,\"mtu\":\"any\",\"ipam\":{\"type\":\"enid-ipam\","
	    "\"socket\":\"/s.sock\"}}", &c, &e), 0);
	assert_int_equal(c.role, CNI_ROLE_IPAM);
	assert_string_equal(c.socket, "/s.sock");
	cni_conf_free(&c);
	assert_int_equal(parse(CNI_ROLE_IPAM, &env, "{" V "\"type\":\"ptp\"}",
	    &c, &e), -1);
	assert_int_equal(e.code, 7);
	assert_non_null(strstr(e.msg, "missing \"ipam\""));
	assert_int_equal(parse(CNI_ROLE_IPAM, &env, "{" V "\"type\":\"ptp\","
	    "\"ipam\":{\"type\":\"host-local\"}}", &c, &e), -1);
	assert_int_equal(e.code, 7);
	assert_non_null(strstr(e.msg, "not enid-ipam"));
	assert_int_equal(parse(CNI_ROLE_IPAM, &env, "{" V "\"type\":\"ptp\","
	    "\"ipam\":{\"type\":\"enid-ipam\",\"range\":1}}", &c, &e), -1);
	assert_int_equal(e.code, 2);
	assert_non_null(strstr(e.msg, "\"range\": 1"));
}

static void
test_prev_result(void **state)
{
	static const struct cni_env env = { "CHECK", "c1", "/run/netns/p",
	    "eth0", NULL };
	struct cni_conf c;
	struct cni_error e;
	struct ip_addr want;

	(void)state;
	/* The address of eth0 in this sandbox, not the first one listed. */
	assert_int_equal(parse(CNI_ROLE_MAIN, &env, "{" M ",\"prevResult\":{"
	    "\"cniVersion\":\"1.1.0\",\"interfaces\":[{\"name\":\"enid1\"},"
	    "{\"name\":\"eth0\",\"sandbox\":\"/run/netns/other\"},"
	    "{\"name\":\"eth0\",\"sandbox\":\"/run/netns/p\",\"mtu\":1500}],"
	    "\"ips\":[{\"address\":\"fd00::2/128\",\"interface\":2},"
	    "{\"address\":\"10.0.0.9/32\",\"interface\":1},"
	    "{\"address\":\"10.0.0.7/32\",\"interface\":2,\"gateway\":"
	    "\"169.254.1.1\"}],\"routes\":[{\"dst\":\"0.0.0.0/0\",\"gw\":"
	    "\"169.254.1.1\",\"table\":254}],\"dns\":{}}}", &c, &e), 0);
	assert_int_equal(ip_addr_parse("10.0.0.7", &want, NULL), 0);
	assert_true(ip_addr_eq(&c.prev_ip[CNI_V4], &want));
	/* The IPv6 one of eth0 here too, whatever comes first. */
	assert_int_equal(ip_addr_parse("fd00::2", &want, NULL), 0);
	assert_true(ip_addr_eq(&c.prev_ip[CNI_V6], &want));
	cni_conf_free(&c);
	/* No interface matches: the first IPv4 address; no IPv6 one. */
	assert_int_equal(parse(CNI_ROLE_MAIN, &env, "{" M ",\"prevResult\":{"
	    "\"ips\":[{\"address\":\"10.0.0.9/20\"},{\"address\":"
	    "\"10.0.0.7/32\"}]}}", &c, &e), 0);
	assert_int_equal(ip_addr_parse("10.0.0.9", &want, NULL), 0);
	assert_true(ip_addr_eq(&c.prev_ip[CNI_V4], &want));
	assert_int_equal(c.prev_ip[CNI_V6].family, 0);
	cni_conf_free(&c);
	/* A dual-stack pod's result, as this plugin prints it. */
	assert_int_equal(parse(CNI_ROLE_MAIN, &env, "{" M ",\"prevResult\":{"
	    "\"interfaces\":[{\"name\":\"enid1\"},{\"name\":\"eth0\","
	    "\"sandbox\":\"/run/netns/p\"}],\"ips\":[{\"address\":"
	    "\"10.0.0.7/32\",\"gateway\":\"169.254.1.1\",\"interface\":1},"
	    "{\"address\":\"2600:1f14::5/128\",\"gateway\":\"fe80::1\","
	    "\"interface\":1}],\"routes\":[{\"dst\":\"0.0.0.0/0\",\"gw\":"
	    "\"169.254.1.1\"},{\"dst\":\"::/0\",\"gw\":\"fe80::1\"}]}}", &c,
	    &e), 0);
	assert_int_equal(ip_addr_parse("2600:1f14::5", &want, NULL), 0);
	assert_true(ip_addr_eq(&c.prev_ip[CNI_V6], &want));
	assert_int_equal(c.prev_ip[CNI_V4].family, AF_INET);
	cni_conf_free(&c);
	/* An IPv6-only pod's is something to check. */
	assert_int_equal(parse(CNI_ROLE_MAIN, &env, "{" M ",\"prevResult\":{"
	    "\"ips\":[{\"address\":\"2600:1f14::5/128\"}]}}", &c, &e), 0);
	assert_int_equal(c.prev_ip[CNI_V4].family, 0);
	assert_int_equal(c.prev_ip[CNI_V6].family, AF_INET6);
	cni_conf_free(&c);
}

static void
test_gc_and_status(void **state)
{
	static const struct cni_env gc = { "GC", NULL, NULL, NULL, NULL };
	static const struct cni_env st = { "STATUS", NULL, NULL, NULL, NULL };
	struct cni_conf c;
	struct cni_error e;

	(void)state;
	assert_int_equal(parse(CNI_ROLE_MAIN, &gc, "{" M ","
	    "\"cni.dev/valid-attachments\":[{\"containerID\":\"a\",\"ifname\":"
	    "\"eth0\"},{\"containerID\":\"b\",\"ifname\":\"net1\"}],"
	    "\"cni.dev/attachments\":[{\"containerID\":\"a\",\"ifname\":"
	    "\"eth0\"},{\"containerID\":\"b\",\"ifname\":\"net1\"}]}", &c, &e),
	    0);
	assert_true(c.have_valid);
	assert_int_equal(c.nvalid, 2);
	assert_string_equal(c.valid[1].container_id, "b");
	assert_string_equal(c.valid[1].ifname, "net1");
	cni_conf_free(&c);
	/* An empty list is a list: release everything. */
	assert_int_equal(parse(CNI_ROLE_MAIN, &gc, "{" M ","
	    "\"cni.dev/valid-attachments\":[]}", &c, &e), 0);
	assert_true(c.have_valid);
	assert_int_equal(c.nvalid, 0);
	cni_conf_free(&c);
	/* null is how libcni passes an empty list: the same. */
	assert_int_equal(parse(CNI_ROLE_MAIN, &gc, "{" M ","
	    "\"cni.dev/valid-attachments\":null}", &c, &e), 0);
	assert_true(c.have_valid);
	assert_int_equal(c.nvalid, 0);
	assert_null(c.valid);
	cni_conf_free(&c);
	assert_int_equal(parse(CNI_ROLE_MAIN, &gc, "{" M ","
	    "\"cni.dev/attachments\":null}", &c, &e), 0);
	assert_true(c.have_valid);
	assert_int_equal(c.nvalid, 0);
	cni_conf_free(&c);
	assert_int_equal(parse(CNI_ROLE_MAIN, &st, "{" M "}", &c, &e), 0);
	assert_int_equal(c.cmd, CNI_CMD_STATUS);
	cni_conf_free(&c);
}

static void
test_version(void **state)
{
	static const struct cni_env env = { "VERSION", NULL, NULL, NULL, NULL };
	struct cni_conf c;
	struct cni_error e;
	struct json_object *o;

	(void)state;
	assert_int_equal(parse(CNI_ROLE_MAIN, &env, "", &c, &e), 0);
	assert_string_equal(c.version, "1.1.0");
	assert_int_equal(parse(CNI_ROLE_MAIN, &env, "{\"cniVersion\":"
	    "\"0.4.0\"}", &c, &e), 0);
	assert_string_equal(c.version, "0.4.0");
	assert_int_equal(parse(CNI_ROLE_MAIN, &env, "garbage", &c, &e), 0);
	assert_string_equal(c.version, "1.1.0");
	o = cni_result_version("1.0.0");
	assert_string_equal(json_object_to_json_string_ext(o,
	    JSON_C_TO_STRING_PLAIN), "{\"cniVersion\":\"1.0.0\","
	    "\"supportedVersions\":[\"0.4.0\",\"1.0.0\",\"1.1.0\"]}");
	json_object_put(o);
}

static void
test_veth_name(void **state)
{
	char a[CNI_IFNAME_LEN], b[CNI_IFNAME_LEN], d[CNI_IFNAME_LEN];

	(void)state;
	cni_veth_name("enid", "c0ffee", "eth0", a);
	cni_veth_name("enid", "c0ffee", "eth0", b);
	cni_veth_name("enid", "c0ffee", "net1", d);
	assert_int_equal(strlen(a), 15);
	assert_memory_equal(a, "enid", 4);
	assert_string_equal(a, b);
	assert_string_not_equal(a, d);
	assert_true(cni_veth_name_ours("enid", a));
	assert_false(cni_veth_name_ours("pod", a));
	assert_false(cni_veth_name_ours("enid", "enid0"));
	assert_false(cni_veth_name_ours("enid", "enid0123456789g"));
	/* The id and the name are kept apart: no shifting between them. */
	cni_veth_name("enid", "ab", "c", a);
	cni_veth_name("enid", "a", "bc", b);
	assert_string_not_equal(a, b);
	cni_veth_name("abcdefg", "x", "eth0", a);
	assert_int_equal(strlen(a), 15);
	assert_true(cni_veth_name_ours("abcdefg", a));
}

static void
test_broker_codes(void **state)
{
	(void)state;
	assert_int_equal(cni_broker_code("throttled"), 11);
	assert_int_equal(cni_broker_code("timeout"), 11);
	assert_int_equal(cni_broker_code("unknown-container"), 3);
	assert_int_equal(cni_broker_code("subnet-full"), 102);
	assert_int_equal(cni_broker_code("eni-limit"), 103);
	assert_int_equal(cni_broker_code("max-pods"), 104);
	assert_int_equal(cni_broker_code("no-address"), 105);
	assert_int_equal(cni_broker_code("address-lost"), 106);
	assert_int_equal(cni_broker_code("address-mismatch"), 107);
	assert_int_equal(cni_broker_code("eni-unavailable"), 108);
	assert_int_equal(cni_broker_code("netd"), 109);
	assert_int_equal(cni_broker_code("cloud-error"), 110);
	assert_int_equal(cni_broker_code("internal"), 111);
	assert_int_equal(cni_broker_code("bad-request"), 101);
	assert_int_equal(cni_broker_code("no-such-code"), 100);
}

static struct json_object *
at(struct json_object *o, const char *path)
{
	char buf[128], *save = NULL, *p;

	snprintf(buf, sizeof(buf), "%s", path);
	for (p = strtok_r(buf, ".", &save); p && o;
	    p = strtok_r(NULL, ".", &save)) {
		if (*p >= '0' && *p <= '9')
			o = json_object_array_get_idx(o, (size_t)atoi(p));
		else if (!json_object_object_get_ex(o, p, &o))
			o = NULL;
	}
	return o;
}

static void
test_results(void **state)
{
	static const struct cni_env env = { "ADD", "c1", "/run/netns/p",
	    "eth0", NULL };
	struct cni_wired w = {
		.host = { "enid0123456789a", { 2, 0, 0, 0, 0, 1 }, 9001 },
		.pod = { "eth0", { 2, 0, 0, 0, 0, 2 }, 9001 },
	};
	struct cni_conf c;
	struct cni_error e;
	struct json_object *r;

	(void)state;
	assert_int_equal(ip_addr_parse("10.0.3.4", &w.ip[CNI_V4], NULL), 0);
	assert_int_equal(parse(CNI_ROLE_MAIN, &env, "{\"cniVersion\":"
	    "\"0.4.0\",\"name\":\"n\",\"type\":\"enid-cni\"}", &c, &e), 0);
	r = cni_result_main(&c, &w);
	assert_string_equal(json_object_get_string(at(r, "ips.0.version")),
	    "4");
	assert_string_equal(json_object_get_string(at(r, "ips.0.address")),
	    "10.0.3.4/32");
	assert_int_equal(json_object_get_int(at(r, "ips.0.interface")), 1);
	assert_null(at(r, "interfaces.0.mtu"));
	assert_string_equal(json_object_get_string(at(r,
	    "interfaces.1.sandbox")), "/run/netns/p");
	assert_null(at(r, "interfaces.0.sandbox"));
	assert_string_equal(json_object_get_string(at(r,
	    "interfaces.1.mac")), "02:00:00:00:00:02");
	assert_string_equal(json_object_get_string(at(r, "routes.0.gw")),
	    "169.254.1.1");
	assert_non_null(at(r, "dns"));
	json_object_put(r);
	cni_conf_free(&c);

	/* 1.1.0 after a previous plugin: its entries first, indexes moved. */
	assert_int_equal(parse(CNI_ROLE_MAIN, &env, "{" M ",\"prevResult\":{"
	    "\"interfaces\":[{\"name\":\"x\",\"mtu\":1400}],\"ips\":[{"
	    "\"version\":\"4\",\"address\":\"192.0.2.1/24\",\"interface\":0}],"
	    "\"dns\":{\"domain\":\"d\"}}}", &c, &e), 0);
	r = cni_result_main(&c, &w);
	assert_string_equal(json_object_get_string(at(r, "cniVersion")),
	    "1.1.0");
	assert_int_equal(json_object_get_int(at(r, "interfaces.0.mtu")), 1400);
	assert_int_equal(json_object_get_int(at(r, "interfaces.2.mtu")), 9001);
	assert_null(at(r, "ips.0.version"));
	assert_int_equal(json_object_get_int(at(r, "ips.1.interface")), 2);
	assert_string_equal(json_object_get_string(at(r, "dns.domain")), "d");
	json_object_put(r);

	{
		uint8_t pfx[CNI_NFAMILIES] = { 20, 64 };
		struct ip_addr gw[CNI_NFAMILIES];

		memset(gw, 0, sizeof(gw));
		gw[CNI_V4] = ip_addr_from_in(htonl(0x0a00000a));
		r = cni_result_ipam(&c, w.ip, pfx, gw);
		assert_null(at(r, "interfaces"));
		assert_null(at(r, "ips.0.interface"));
		assert_string_equal(json_object_get_string(at(r,
		    "ips.0.address")), "10.0.3.4/20");
		assert_string_equal(json_object_get_string(at(r,
		    "ips.0.gateway")), "10.0.0.10");
		assert_null(at(r, "ips.1"));
		json_object_put(r);

		/* Dual-stack: both, each with its gateway and route. */
		assert_int_equal(ip_addr_parse("2600:1f14::5", &w.ip[CNI_V6],
		    NULL), 0);
		assert_int_equal(ip_addr_parse("fe80::1", &gw[CNI_V6], NULL),
		    0);
		r = cni_result_ipam(&c, w.ip, pfx, gw);
		assert_string_equal(json_object_get_string(at(r,
		    "ips.1.address")), "2600:1f14::5/64");
		assert_string_equal(json_object_get_string(at(r,
		    "ips.1.gateway")), "fe80::1");
		assert_string_equal(json_object_get_string(at(r,
		    "routes.1.dst")), "::/0");
		json_object_put(r);
	}
	/* The main role's: both on the pod's interface, /32 and /128. */
	r = cni_result_main(&c, &w);
	assert_string_equal(json_object_get_string(at(r, "ips.2.address")),
	    "2600:1f14::5/128");
	assert_int_equal(json_object_get_int(at(r, "ips.1.interface")), 2);
	assert_int_equal(json_object_get_int(at(r, "ips.2.interface")), 2);
	assert_string_equal(json_object_get_string(at(r, "ips.2.gateway")),
	    "fe80::1");
	assert_string_equal(json_object_get_string(at(r, "routes.0.dst")),
	    "0.0.0.0/0");
	assert_string_equal(json_object_get_string(at(r, "routes.1.dst")),
	    "::/0");
	assert_string_equal(json_object_get_string(at(r, "routes.1.gw")),
	    "fe80::1");
	json_object_put(r);
	cni_conf_free(&c);
	/* 0.4.0 names each ip's version. */
	assert_int_equal(parse(CNI_ROLE_MAIN, &env, "{\"cniVersion\":"
	    "\"0.4.0\",\"name\":\"n\",\"type\":\"enid-cni\"}", &c, &e), 0);
	r = cni_result_main(&c, &w);
	assert_string_equal(json_object_get_string(at(r, "ips.1.version")),
	    "6");
	assert_int_equal(json_object_get_int(at(r, "ips.1.interface")), 1);
	json_object_put(r);
	cni_conf_free(&c);
}

static void
test_common_prefix(void **state)
{
	uint32_t a, b, nets[2];
	uint8_t lens[2];

	(void)state;
	assert_int_equal(ip4_parse("10.0.3.4", &a), 0);
	assert_int_equal(ip4_parse("10.0.0.10", &b), 0);
	assert_int_equal(cidr4_parse("10.0.0.0/16", &nets[0], &lens[0]), 0);
	assert_int_equal(cidr4_parse("10.0.0.0/20", &nets[1], &lens[1]), 0);
	assert_int_equal(cni_common_prefix(a, b, nets, lens, 2), 20);
	assert_int_equal(cni_common_prefix(a, b, nets, lens, 1), 16);
	assert_int_equal(cni_common_prefix(a, b, NULL, NULL, 0), 22);
	assert_int_equal(ip4_parse("10.0.17.4", &a), 0);
	assert_int_equal(cni_common_prefix(a, b, nets, lens, 2), 16);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_main_ok),
		cmocka_unit_test(test_main_errors),
		cmocka_unit_test(test_ipam_role),
		cmocka_unit_test(test_prev_result),
		cmocka_unit_test(test_gc_and_status),
		cmocka_unit_test(test_version),
		cmocka_unit_test(test_veth_name),
		cmocka_unit_test(test_broker_codes),
		cmocka_unit_test(test_results),
		cmocka_unit_test(test_common_prefix),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
