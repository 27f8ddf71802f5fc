/*
 * The CNI request parser (broker/cnireq.c), over requests built with
 * json-c: each op takes its required and allowed fields; every way a
 * request can be wrong is refused one spoiled field at a time with the
 * message naming the field; strings are taken at their field's size - 1
 * and refused at its size; the largest request fits the socket's line
 * limit; and a refused request leaves nothing allocated (ASan's leak check
 * in the sanitizer build holds us to it).
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
#include "checkpoint.h"
#include "cnireq.h"
#include "enid.h"
#include "testrng.h"

#define CID	"0123456789abcdef"
#define NOPS	5

static const char *const op_names[NOPS] = {
	"add", "del", "check", "gc", "status"
};

/* Every key any op takes: which ops allow it. */
static const struct {
	const char	*key;
	bool		 in[NOPS];	/* add del check gc status */
} keys[] = {
	{ "container_id",	{ 1, 1, 1, 0, 0 } },
	{ "ifname",		{ 1, 1, 1, 0, 0 } },
	{ "netns",		{ 1, 1, 1, 0, 0 } },
	{ "k8s_namespace",	{ 1, 1, 1, 0, 0 } },
	{ "k8s_name",		{ 1, 1, 1, 0, 0 } },
	{ "k8s_uid",		{ 1, 1, 1, 0, 0 } },
	{ "ip",			{ 0, 0, 1, 0, 0 } },
	{ "valid_attachments",	{ 0, 0, 0, 1, 0 } },
	{ "host_veth",		{ 1, 0, 0, 0, 0 } },
};
#define NKEYS	(sizeof(keys) / sizeof(keys[0]))

/* ---- building requests ---- */

static struct json_object *
attachment(const char *cid, const char *ifname)
{
	struct json_object *a = json_object_new_object();

	json_object_object_add(a, "container_id", json_object_new_string(cid));
	json_object_object_add(a, "ifname", json_object_new_string(ifname));
	return a;
}

/* The smallest request op takes. */
static struct json_object *
request(const char *op)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "op", json_object_new_string(op));
	if (strcmp(op, "gc") == 0)
		json_object_object_add(o, "valid_attachments",
		    json_object_new_array());
	else if (strcmp(op, "status") != 0) {
		json_object_object_add(o, "container_id",
		    json_object_new_string(CID));
		json_object_object_add(o, "ifname",
		    json_object_new_string("eth0"));
	}
	return o;
}

static void
set(struct json_object *o, const char *key, struct json_object *v)
{
	json_object_object_add(o, key, v);
}

static void
set_str(struct json_object *o, const char *key, const char *s)
{
	json_object_object_add(o, key, json_object_new_string(s));
}

/* A string of len bytes, all ch. */
static char *
repeat(char ch, size_t len)
{
	char *s = malloc(len + 1);

	assert_non_null(s);
	memset(s, ch, len);
	s[len] = '\0';
	return s;
}

/* ---- parsing them ---- */

static char err[256];

/* Parse o (and drop it): 0 with *r filled, or -1 with err set, in which
 * case *r must hold nothing allocated. */
static int
parse(struct json_object *o, struct cni_request *r)
{
	int rc;

	memset(err, 0, sizeof(err));
	rc = cni_request_parse(o, r, err, sizeof(err));
	json_object_put(o);
	if (rc == -1) {
		assert_true(err[0] != '\0');
		assert_null(r->valid);
		assert_int_equal(r->nvalid, 0);
	} else {
		assert_int_equal(rc, 0);
		assert_true(r->nvalid <= CNIREQ_MAX_VALID);
		assert_true(r->nvalid == 0 || r->valid != NULL);
	}
	return rc;
}

static void
accepted(struct json_object *o, struct cni_request *r)
{
	if (parse(o, r) != 0)
		fail_msg("refused: %s", err);
}

/* Refused with exactly this message. */
static void
refused(struct json_object *o, const char *expect)
{
	struct cni_request r;

	if (parse(o, &r) != -1)
		fail_msg("accepted, expected \"%s\"", expect);
	assert_string_equal(err, expect);
}

/* The same from JSON text, for the shapes that are awkward to build. */
static struct json_object *
text(const char *s)
{
	struct json_object *o = json_tokener_parse(s);

	assert_non_null(o);
	return o;
}

/* ---- each op ---- */

static void
test_each_op_smallest(void **state)
{
	struct cni_request r;
	size_t i;

	(void)state;
	for (i = 0; i < NOPS; i++) {
		accepted(request(op_names[i]), &r);
		assert_int_equal(r.op, (enum cni_op)i);
		assert_string_equal(cni_op_name(r.op), op_names[i]);
		if (i < 3) {
			assert_string_equal(r.container_id, CID);
			assert_string_equal(r.ifname, "eth0");
		} else
			assert_string_equal(r.container_id, "");
		assert_string_equal(r.netns, "");
		assert_int_equal(r.ip.family, AF_UNSPEC);
		assert_int_equal(r.nvalid, 0);
		assert_null(r.valid);
		cni_request_free(&r);
	}
	assert_string_equal(cni_op_name((enum cni_op)99), "?");
}

static void
test_each_op_every_field(void **state)
{
	struct cni_request r;
	struct json_object *o, *arr;
	size_t i;

	(void)state;
	for (i = 0; i < 3; i++) {
		o = request(op_names[i]);
		set_str(o, "netns", "/var/run/netns/cni-1234");
		set_str(o, "k8s_namespace", "kube-system");
		set_str(o, "k8s_name", "coredns-5d78c9869d-abcde");
		set_str(o, "k8s_uid", "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0");
		if (i == CNI_OP_CHECK)
			set_str(o, "ip", "10.0.1.5");
		accepted(o, &r);
		assert_int_equal(r.op, (enum cni_op)i);
		assert_string_equal(r.netns, "/var/run/netns/cni-1234");
		assert_string_equal(r.k8s_namespace, "kube-system");
		assert_string_equal(r.k8s_name, "coredns-5d78c9869d-abcde");
		assert_string_equal(r.k8s_uid,
		    "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0");
		assert_int_equal(ip_addr_in4(&r.ip), i == CNI_OP_CHECK ?
		    htonl(0x0a000105) : 0);
		cni_request_free(&r);
	}

	o = request("gc");
	arr = json_object_new_array();
	json_object_array_add(arr, attachment("a", "eth0"));
	json_object_array_add(arr, attachment(CID, "net1"));
	set(o, "valid_attachments", arr);
	accepted(o, &r);
	assert_int_equal(r.op, CNI_OP_GC);
	assert_int_equal(r.nvalid, 2);
	assert_string_equal(r.valid[0].container_id, "a");
	assert_string_equal(r.valid[0].ifname, "eth0");
	assert_string_equal(r.valid[1].container_id, CID);
	assert_string_equal(r.valid[1].ifname, "net1");
	cni_request_free(&r);
	assert_null(r.valid);
	assert_int_equal(r.nvalid, 0);
	cni_request_free(&r);		/* twice is harmless */

	/* enid-cni names the pod's host end; enid-ipam does not */
	o = request("add");
	accepted(o, &r);
	assert_string_equal(r.host_veth, "");
	cni_request_free(&r);
	o = request("add");
	set_str(o, "host_veth", "enid1a2b3c4d5e6");
	accepted(o, &r);
	assert_string_equal(r.host_veth, "enid1a2b3c4d5e6");
	cni_request_free(&r);
	o = request("add");
	set_str(o, "host_veth", "eth0:1");
	refused(o, "host_veth: not a pod veth name (1 to 15 of a-z 0-9)");
	o = request("add");
	set_str(o, "host_veth", "");
	refused(o, "host_veth: not a pod veth name (1 to 15 of a-z 0-9)");
	o = request("add");
	set_str(o, "host_veth", "Enid1");
	refused(o, "host_veth: not a pod veth name (1 to 15 of a-z 0-9)");
	o = request("add");
	set(o, "host_veth", json_object_new_int(3));
	refused(o, "host_veth: must be a string");
	o = request("add");
	set_str(o, "host_veth", "enid1a2b3c4d5e6f");
	refused(o, "host_veth: longer than 15 bytes");

	/* empty k8s strings say "unknown", as the checkpoint has them */
	o = request("add");
	set_str(o, "k8s_namespace", "");
	set_str(o, "k8s_name", "");
	set_str(o, "k8s_uid", "");
	set_str(o, "netns", "");
	accepted(o, &r);
	cni_request_free(&r);
}

/* ---- refusals, one spoiled field at a time ---- */

static void
test_not_a_request(void **state)
{
	struct json_object *o;

	(void)state;
	refused(json_object_new_array(), "request must be a JSON object");
	refused(json_object_new_string("add"), "request must be a JSON object");
	refused(json_object_new_int(1), "request must be a JSON object");
	refused(NULL, "request must be a JSON object");
	refused(json_object_new_object(), "missing string field \"op\"");
	o = request("add");
	set(o, "op", json_object_new_int(1));
	refused(o, "missing string field \"op\"");
	o = request("add");
	set(o, "op", NULL);
	refused(o, "missing string field \"op\"");
	refused(request("ADD"), "unknown op \"ADD\"");
	refused(request(""), "unknown op \"\"");
	refused(request("add "), "unknown op \"add \"");
	refused(request("version"), "unknown op \"version\"");
}

static void
test_unknown_keys(void **state)
{
	char expect[128];
	struct json_object *o;
	size_t i, k;

	(void)state;
	for (i = 0; i < NOPS; i++) {
		for (k = 0; k < NKEYS; k++) {
			if (keys[k].in[i])
				continue;
			o = request(op_names[i]);
			set_str(o, keys[k].key, "x");
			snprintf(expect, sizeof(expect), "%s: unknown key "
			    "\"%s\"", op_names[i], keys[k].key);
			refused(o, expect);
		}
		o = request(op_names[i]);
		set_str(o, "containerID", CID);
		snprintf(expect, sizeof(expect), "%s: unknown key "
		    "\"containerID\"", op_names[i]);
		refused(o, expect);
		/* a key is matched whole, not by prefix */
		o = request(op_names[i]);
		set(o, "op_", json_object_new_int(0));
		snprintf(expect, sizeof(expect), "%s: unknown key \"op_\"",
		    op_names[i]);
		refused(o, expect);
	}
}

static void
test_missing_fields(void **state)
{
	char expect[128];
	struct json_object *o;
	size_t i;

	(void)state;
	for (i = 0; i < 3; i++) {
		o = request(op_names[i]);
		json_object_object_del(o, "container_id");
		snprintf(expect, sizeof(expect), "%s: missing "
		    "\"container_id\"", op_names[i]);
		refused(o, expect);
		o = request(op_names[i]);
		json_object_object_del(o, "ifname");
		snprintf(expect, sizeof(expect), "%s: missing \"ifname\"",
		    op_names[i]);
		refused(o, expect);
		o = request(op_names[i]);
		json_object_object_del(o, "ifname");
		json_object_object_del(o, "container_id");
		snprintf(expect, sizeof(expect), "%s: missing "
		    "\"container_id\"", op_names[i]);
		refused(o, expect);
	}
	o = request("gc");
	json_object_object_del(o, "valid_attachments");
	refused(o, "gc: missing \"valid_attachments\"");
}

/* Each string field, given each other JSON type. */
static void
test_wrong_types(void **state)
{
	static const char *const fields[] = {
		"container_id", "ifname", "netns", "k8s_namespace",
		"k8s_name", "k8s_uid", "ip",
	};
	char expect[128];
	struct json_object *o, *v;
	size_t f, t;

	(void)state;
	for (f = 0; f < sizeof(fields) / sizeof(fields[0]); f++)
		for (t = 0; t < 6; t++) {
			switch (t) {
			case 0: v = NULL; break;
			case 1: v = json_object_new_int(5); break;
			case 2: v = json_object_new_double(1.5); break;
			case 3: v = json_object_new_boolean(1); break;
			case 4: v = json_object_new_array(); break;
			default: v = json_object_new_object(); break;
			}
			o = request("check");
			set(o, fields[f], v);
			snprintf(expect, sizeof(expect), "%s: must be a string",
			    fields[f]);
			refused(o, expect);
		}
	for (t = 0; t < 4; t++) {
		switch (t) {
		case 0: v = NULL; break;
		case 1: v = json_object_new_object(); break;
		case 2: v = json_object_new_string("[]"); break;
		default: v = json_object_new_int(0); break;
		}
		o = request("gc");
		set(o, "valid_attachments", v);
		refused(o, "valid_attachments: must be an array");
	}
}

/* A string field at its buffer's size - 1 is taken; at its size, refused
 * with the limit in the message. */
static void
test_string_lengths(void **state)
{
	static const struct {
		const char	*key;
		size_t		 size;
		char		 fill;
	} f[] = {
		{ "container_id", CKPT_CID_LEN, 'c' },
		{ "ifname", CKPT_IFNAME_LEN, 'i' },
		{ "netns", CNIREQ_NETNS_LEN, '/' },
		{ "k8s_namespace", CKPT_K8S_LEN, 'n' },
		{ "k8s_name", CKPT_K8S_LEN, 'm' },
		{ "k8s_uid", CKPT_UID_LEN, 'u' },
	};
	struct cni_request r;
	char expect[128], *s;
	struct json_object *o;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		s = repeat(f[i].fill, f[i].size - 1);
		o = request("add");
		set_str(o, f[i].key, s);
		accepted(o, &r);
		if (strcmp(f[i].key, "container_id") == 0)
			assert_string_equal(r.container_id, s);
		else if (strcmp(f[i].key, "ifname") == 0)
			assert_string_equal(r.ifname, s);
		else if (strcmp(f[i].key, "netns") == 0)
			assert_string_equal(r.netns, s);
		else if (strcmp(f[i].key, "k8s_namespace") == 0)
			assert_string_equal(r.k8s_namespace, s);
		else if (strcmp(f[i].key, "k8s_name") == 0)
			assert_string_equal(r.k8s_name, s);
		else
			assert_string_equal(r.k8s_uid, s);
		cni_request_free(&r);
		free(s);

		s = repeat(f[i].fill, f[i].size);
		o = request("add");
		set_str(o, f[i].key, s);
		snprintf(expect, sizeof(expect), "%s: longer than %zu bytes",
		    f[i].key, f[i].size - 1);
		refused(o, expect);
		free(s);
	}

	/* ip: the longest dotted quad is taken; one byte past the buffer
	 * is a length error, not a parse error */
	o = request("check");
	set_str(o, "ip", "223.255.255.254");
	accepted(o, &r);
	assert_int_equal(ip_addr_in4(&r.ip), htonl(0xdffffffe));
	o = request("check");
	set_str(o, "ip", "10.0.0.1         ");
	snprintf(expect, sizeof(expect), "ip: longer than %d bytes",
	    IP4_STR_LEN);
	refused(o, expect);

	/* the same limits inside valid_attachments */
	s = repeat('c', CKPT_CID_LEN - 1);
	o = request("gc");
	set(o, "valid_attachments", json_object_new_array());
	json_object_array_add(json_object_object_get(o, "valid_attachments"),
	    attachment(s, "eth012345678901"));
	accepted(o, &r);
	assert_string_equal(r.valid[0].container_id, s);
	assert_string_equal(r.valid[0].ifname, "eth012345678901");
	cni_request_free(&r);
	free(s);
	s = repeat('c', CKPT_CID_LEN);
	o = request("gc");
	set(o, "valid_attachments", json_object_new_array());
	json_object_array_add(json_object_object_get(o, "valid_attachments"),
	    attachment(s, "eth0"));
	snprintf(expect, sizeof(expect), "valid_attachments[0].container_id: "
	    "longer than %d bytes", CKPT_CID_LEN - 1);
	refused(o, expect);
	free(s);
	o = request("gc");
	set(o, "valid_attachments", json_object_new_array());
	json_object_array_add(json_object_object_get(o, "valid_attachments"),
	    attachment("a", "eth0123456789012"));
	snprintf(expect, sizeof(expect), "valid_attachments[0].ifname: "
	    "longer than %d bytes", CKPT_IFNAME_LEN - 1);
	refused(o, expect);
}

#define CID_RULE	"not a container id (1 to 256 of [A-Za-z0-9_.-], " \
			"not starting with '.' or '-')"
#define IFNAME_RULE	"not an interface name (1 to 15 printable bytes, " \
			"no '/', ':' or space, not \".\" or \"..\")"

static void
test_malformed_strings(void **state)
{
	static const char *const good_cids[] = {
		"a", "0", "A.b-c_d", "a-", "a.", "_x", "a..b",
	};
	static const char *const bad_cids[] = {
		"", ".a", "-a", "..", "a/b", "a b", "a:b", "a\\b", "a\"b",
		"a\x01", "a\x7f", "\xc3\xa4", "a\n",
	};
	static const char *const good_ifs[] = {
		"eth0", "...", "a.", "-x", "~!@#$%^&*()", "e\"\\",
	};
	static const char *const bad_ifs[] = {
		"", ".", "..", "a/b", "a:b", "a b", " ", "a\t", "\x7f",
		"\xc3\xa9", "a\x01",
	};
	/* the CNI socket is narrower than the checkpoint: no space */
	static const char *const good_k8s[] = {
		"default", "a.b-c_d", "{}[]!~",
	};
	static const char *const bad_k8s[] = {
		"a b", " ", "a\t", "a\n", "\x7f", "\xc3\xa9", "\x1b[31m",
	};
	static const char *const k8s_keys[] = {
		"k8s_namespace", "k8s_name", "k8s_uid",
	};
	struct cni_request r;
	struct json_object *o;
	char expect[256];
	size_t i, k;

	(void)state;
	for (i = 0; i < sizeof(good_cids) / sizeof(good_cids[0]); i++) {
		assert_true(ckpt_container_id_ok(good_cids[i]));
		o = request("del");
		set_str(o, "container_id", good_cids[i]);
		accepted(o, &r);
		assert_string_equal(r.container_id, good_cids[i]);
	}
	for (i = 0; i < sizeof(bad_cids) / sizeof(bad_cids[0]); i++) {
		assert_false(ckpt_container_id_ok(bad_cids[i]));
		o = request("del");
		set_str(o, "container_id", bad_cids[i]);
		refused(o, "container_id: " CID_RULE);
		o = request("gc");
		set(o, "valid_attachments", json_object_new_array());
		json_object_array_add(json_object_object_get(o,
		    "valid_attachments"), attachment("ok", "eth0"));
		json_object_array_add(json_object_object_get(o,
		    "valid_attachments"), attachment(bad_cids[i], "eth0"));
		refused(o, "valid_attachments[1].container_id: " CID_RULE);
	}
	for (i = 0; i < sizeof(good_ifs) / sizeof(good_ifs[0]); i++) {
		assert_true(ckpt_ifname_ok(good_ifs[i]));
		o = request("check");
		set_str(o, "ifname", good_ifs[i]);
		accepted(o, &r);
		assert_string_equal(r.ifname, good_ifs[i]);
	}
	for (i = 0; i < sizeof(bad_ifs) / sizeof(bad_ifs[0]); i++) {
		assert_false(ckpt_ifname_ok(bad_ifs[i]));
		o = request("check");
		set_str(o, "ifname", bad_ifs[i]);
		refused(o, "ifname: " IFNAME_RULE);
		o = request("gc");
		set(o, "valid_attachments", json_object_new_array());
		json_object_array_add(json_object_object_get(o,
		    "valid_attachments"), attachment("ok", bad_ifs[i]));
		refused(o, "valid_attachments[0].ifname: " IFNAME_RULE);
	}
	for (k = 0; k < 3; k++) {
		for (i = 0; i < sizeof(good_k8s) / sizeof(good_k8s[0]); i++) {
			o = request("add");
			set_str(o, k8s_keys[k], good_k8s[i]);
			accepted(o, &r);
			assert_true(ckpt_k8s_ok(r.k8s_namespace) &&
			    ckpt_k8s_ok(r.k8s_name) && ckpt_k8s_ok(r.k8s_uid));
		}
		for (i = 0; i < sizeof(bad_k8s) / sizeof(bad_k8s[0]); i++) {
			o = request("add");
			set_str(o, k8s_keys[k], bad_k8s[i]);
			snprintf(expect, sizeof(expect), "%s: only printable "
			    "ASCII without spaces", k8s_keys[k]);
			refused(o, expect);
		}
	}
}

/*
 * Random strings, each one of the field's own characters with now and then
 * one byte spoiled (any byte but NUL, often a near miss): accepted exactly
 * when the checkpoint's rule (and the length) allows, so that whatever the
 * socket takes the checkpoint can record.
 */
static void
test_rules_agree_with_checkpoint(void **state)
{
	static const char near[] = "/: \t\"\\.-~\x7f\x80\xff";
	static const char word[] = "abcXYZ019_.-";
	struct cni_request r;
	struct json_object *o;
	char s[CKPT_CID_LEN + 8];
	size_t n, len, i, taken = 0;
	bool ok;

	(void)state;
	rng_state = 8;
	for (n = 0; n < 20000; n++) {
		len = rnd(8) == 0 ? rnd(sizeof(s) - 1) : rnd(20);
		for (i = 0; i < len; i++)
			s[i] = word[rnd(sizeof(word) - 1)];
		s[len] = '\0';
		if (len > 0 && rnd(2) == 0)
			s[rnd(len)] = rnd(2) ? near[rnd(sizeof(near) - 1)] :
			    (char)(1 + rnd(255));
		o = request("add");
		switch (n % 3) {
		case 0:
			set_str(o, "container_id", s);
			ok = ckpt_container_id_ok(s);
			break;
		case 1:
			set_str(o, "ifname", s);
			ok = ckpt_ifname_ok(s);
			break;
		default:
			set_str(o, "k8s_name", s);
			ok = ckpt_k8s_ok(s) && strchr(s, ' ') == NULL;
			break;
		}
		if (ok) {
			accepted(o, &r);
			taken++;
			assert_true(ckpt_container_id_ok(r.container_id));
			assert_true(ckpt_ifname_ok(r.ifname));
			assert_true(ckpt_k8s_ok(r.k8s_name));
		} else
			assert_int_equal(parse(o, &r), -1);
	}
	/* both sides were exercised */
	assert_true(taken > 4000 && taken < 16000);
}

static void
test_ip(void **state)
{
	static const struct {
		const char	*s;
		uint32_t	 host;	/* 0: refused */
	} t[] = {
		{ "10.0.1.5", 0x0a000105 },
		{ "1.0.0.0", 0x01000000 },
		{ "223.255.255.255", 0xdfffffff },
		{ "100.64.0.1", 0x64400001 },
		{ "0.0.0.0", 0 },
		{ "0.1.2.3", 0 },
		{ "127.0.0.1", 0 },
		{ "127.255.255.254", 0 },
		{ "224.0.0.1", 0 },
		{ "239.255.255.255", 0 },
		{ "240.0.0.1", 0 },
		{ "255.255.255.255", 0 },
		{ "", 0 },
		{ "10.0.1", 0 },
		{ "10.0.1.5.6", 0 },
		{ "10.0.1.256", 0 },
		{ " 10.0.1.5", 0 },
		{ "10.0.1.5 ", 0 },
		{ "10.0.1.5/32", 0 },
		{ "0x0a.0.1.5", 0 },
		{ "::1", 0 },
		{ "::ffff:10.0.1.5", 0 },
		{ "ten", 0 },
	};
	struct cni_request r;
	struct json_object *o;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		o = request("check");
		set_str(o, "ip", t[i].s);
		if (t[i].host != 0) {
			accepted(o, &r);
			assert_int_equal(ip_addr_in4(&r.ip), htonl(t[i].host));
		} else
			refused(o, "ip: not a unicast IPv4 address");
	}
}

/* CHECK's "ip6": a unicast IPv6 address in RFC 5952 text, nothing else;
 * only CHECK takes it. */
static void
test_check_ip6(void **state)
{
	static const struct { const char *s; bool ok; } t[] = {
		{ "2001:db8:a0b:1200:1::5", true },
		{ "fd12:3456::1", true },
		{ "2001:DB8::5", false },
		{ "2001:db8:0:0::5", false },
		{ "fe80::1", false },
		{ "ff02::1", false },
		{ "::1", false },
		{ "::", false },
		{ "::ffff:10.0.1.5", false },
		{ "64:ff9b::a00:105", false },
		{ "10.0.1.5", false },
		{ "2001:db8::5/128", false },
		{ "[2001:db8::5]", false },
		{ "", false },
	};
	struct cni_request r;
	struct json_object *o;
	char want[IP_ADDR_STR_LEN];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		o = request("check");
		set_str(o, "ip6", t[i].s);
		if (t[i].ok) {
			accepted(o, &r);
			ip_addr_format(&r.ip6, want);
			assert_string_equal(want, t[i].s);
		} else
			refused(o, "ip6: not a unicast IPv6 address in RFC 5952 "
			    "text");
	}
	o = request("add");
	set_str(o, "ip6", "2001:db8::5");
	refused(o, "add: unknown key \"ip6\"");
}

static void
test_valid_attachments(void **state)
{
	struct cni_request r;
	struct json_object *o, *arr, *e;
	char cid[32], expect[128];
	size_t i;

	(void)state;
	/* entries that are not {container_id, ifname} */
	for (i = 0; i < 5; i++) {
		o = request("gc");
		arr = json_object_new_array();
		json_object_array_add(arr, attachment("a", "eth0"));
		switch (i) {
		case 0: e = NULL; break;
		case 1: e = json_object_new_string("a/eth0"); break;
		case 2: e = json_object_new_int(1); break;
		case 3: e = json_object_new_array(); break;
		default: e = json_tokener_parse("[\"a\",\"eth0\"]"); break;
		}
		json_object_array_add(arr, e);
		set(o, "valid_attachments", arr);
		refused(o, "valid_attachments[1]: must be an object");
	}
	refused(text("{\"op\":\"gc\",\"valid_attachments\":[{}]}"),
	    "valid_attachments[0]: missing \"container_id\"");
	refused(text("{\"op\":\"gc\",\"valid_attachments\":["
	    "{\"container_id\":\"a\"}]}"),
	    "valid_attachments[0]: missing \"ifname\"");
	refused(text("{\"op\":\"gc\",\"valid_attachments\":["
	    "{\"ifname\":\"eth0\"}]}"),
	    "valid_attachments[0]: missing \"container_id\"");
	refused(text("{\"op\":\"gc\",\"valid_attachments\":["
	    "{\"container_id\":\"a\",\"ifname\":\"eth0\",\"netns\":\"x\"}]}"),
	    "valid_attachments[0]: unknown key \"netns\"");
	refused(text("{\"op\":\"gc\",\"valid_attachments\":["
	    "{\"container_id\":1,\"ifname\":\"eth0\"}]}"),
	    "valid_attachments[0].container_id: must be a string");
	refused(text("{\"op\":\"gc\",\"valid_attachments\":["
	    "{\"container_id\":\"a\",\"ifname\":null}]}"),
	    "valid_attachments[0].ifname: must be a string");

	/* the cap: taken at CNIREQ_MAX_VALID, refused one past it */
	o = request("gc");
	arr = json_object_new_array();
	for (i = 0; i < CNIREQ_MAX_VALID; i++) {
		snprintf(cid, sizeof(cid), "c%zu", i);
		json_object_array_add(arr, attachment(cid, "eth0"));
	}
	set(o, "valid_attachments", arr);
	json_object_get(arr);
	accepted(o, &r);
	assert_int_equal(r.nvalid, CNIREQ_MAX_VALID);
	assert_string_equal(r.valid[CNIREQ_MAX_VALID - 1].container_id,
	    "c4095");
	cni_request_free(&r);
	json_object_array_add(arr, attachment("one-more", "eth0"));
	o = request("gc");
	set(o, "valid_attachments", arr);
	snprintf(expect, sizeof(expect), "valid_attachments: more than %d "
	    "entries", CNIREQ_MAX_VALID);
	refused(o, expect);

	/*
	 * Duplicates are taken: the list is the set of attachments to keep,
	 * and naming one twice keeps it all the same (the runtime builds it
	 * from its own records and is not asked to deduplicate).
	 */
	o = request("gc");
	arr = json_object_new_array();
	json_object_array_add(arr, attachment("a", "eth0"));
	json_object_array_add(arr, attachment("a", "eth0"));
	set(o, "valid_attachments", arr);
	accepted(o, &r);
	assert_int_equal(r.nvalid, 2);
	cni_request_free(&r);
}

/*
 * The largest request the parser takes fits the CNI socket's line limit
 * (broker/enid.h) in the usual encodings: CNIREQ_MAX_VALID attachments,
 * each with a 256-byte container id and an ifname of 15 quote marks, so
 * that every byte is escaped.
 */
static void
test_largest_request_fits_a_line(void **state)
{
	static const int flags[] = {
		JSON_C_TO_STRING_PLAIN, JSON_C_TO_STRING_SPACED,
		JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE,
	};
	struct cni_request r;
	struct json_object *o, *arr, *again;
	struct json_tokener *tok;
	const char *text;
	char *cid, *ifname, num[16];
	size_t i, len;

	(void)state;
	cid = repeat('c', CKPT_CID_LEN - 1);
	ifname = repeat('"', CKPT_IFNAME_LEN - 1);
	o = request("gc");
	arr = json_object_new_array();
	for (i = 0; i < CNIREQ_MAX_VALID; i++) {
		snprintf(num, sizeof(num), "%zu", i);
		memcpy(cid, num, strlen(num));	/* distinct, as a runtime's */
		json_object_array_add(arr, attachment(cid, ifname));
	}
	set(o, "valid_attachments", arr);
	for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		text = json_object_to_json_string_ext(o, flags[i]);
		len = strlen(text);
		assert_true(len <= CNI_LINE_MAX);
		/* and the socket's strict tokeniser takes it back whole */
		tok = json_tokener_new();
		assert_non_null(tok);
		json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
		again = json_tokener_parse_ex(tok, text, (int)len);
		assert_non_null(again);
		assert_int_equal(json_tokener_get_parse_end(tok), len);
		json_tokener_free(tok);
		accepted(again, &r);
		assert_int_equal(r.nvalid, CNIREQ_MAX_VALID);
		assert_string_equal(r.valid[7].ifname, ifname);
		cni_request_free(&r);
	}
	json_object_put(o);
	free(cid);
	free(ifname);
}

/* A failure after the attachments were taken frees them (the leak check
 * of the sanitizer build catches it if not). */
static void
test_failure_after_attachments_frees(void **state)
{
	struct json_object *o, *arr;
	char cid[32];
	size_t i;

	(void)state;
	/* a key after valid_attachments (json-c keeps key order) */
	o = json_object_new_object();
	set_str(o, "op", "gc");
	arr = json_object_new_array();
	for (i = 0; i < 100; i++) {
		snprintf(cid, sizeof(cid), "k%zu", i);
		json_object_array_add(arr, attachment(cid, "eth0"));
	}
	set(o, "valid_attachments", arr);
	set_str(o, "container_id", "a");
	refused(o, "gc: unknown key \"container_id\"");

	/* a bad entry after good ones */
	o = request("gc");
	arr = json_object_new_array();
	for (i = 0; i < 100; i++) {
		snprintf(cid, sizeof(cid), "k%zu", i);
		json_object_array_add(arr, attachment(cid, "eth0"));
	}
	json_object_array_add(arr, attachment("k", "a/b"));
	set(o, "valid_attachments", arr);
	refused(o, "valid_attachments[100].ifname: " IFNAME_RULE);
}

/* "\u0000" inside a string: refused, never cut short at the NUL. */
static void
test_embedded_nul(void **state)
{
	static const char *const fields[] = {
		"container_id", "ifname", "netns", "k8s_namespace",
		"k8s_name", "k8s_uid", "ip",
	};
	struct json_object *o;
	char expect[128];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		o = request("check");
		/* what would pass if only the part before the NUL counted */
		set(o, fields[i], json_object_new_string_len(
		    strcmp(fields[i], "ip") == 0 ? "10.0.1.5\0x" : "eth0\0x",
		    strcmp(fields[i], "ip") == 0 ? 10 : 6));
		snprintf(expect, sizeof(expect), "%s: contains a NUL byte",
		    fields[i]);
		refused(o, expect);
	}
	o = request("add");
	set(o, "op", json_object_new_string_len("add\0x", 5));
	refused(o, "op: contains a NUL byte");
	o = request("status");
	set(o, "op", json_object_new_string_len("status\0", 7));
	refused(o, "op: contains a NUL byte");
	refused(text("{\"op\":\"gc\",\"valid_attachments\":["
	    "{\"container_id\":\"a\\u0000b\",\"ifname\":\"eth0\"}]}"),
	    "valid_attachments[0].container_id: contains a NUL byte");
	refused(text("{\"op\":\"gc\",\"valid_attachments\":["
	    "{\"container_id\":\"a\",\"ifname\":\"e\\u0000\"}]}"),
	    "valid_attachments[0].ifname: contains a NUL byte");
}

/* A client's key or op name quoted in an error cannot spoil the log line
 * that reports it, nor make the message long. */
static void
test_quoted_names_are_tame(void **state)
{
	struct json_object *o;

	(void)state;
	o = request("add");
	set_str(o, "x\n2024 enid: fake\x1b[0m", "1");
	refused(o, "add: unknown key \"x?2024 enid: fake?[0m\"");
	refused(request("\xff\xfe\r\n"), "unknown op \"????\"");
	refused(request("abcdefghijklmnopqrstuvwxyz0123456789"),
	    "unknown op \"abcdefghijklmnopqrstuvwxyz012345\"");
	refused(text("{\"op\":\"gc\",\"valid_attachments\":["
	    "{\"container_id\":\"a\",\"ifname\":\"e\",\"\\t\\u0007\":1}]}"),
	    "valid_attachments[0]: unknown key \"??\"");
}

/* err is always terminated within errlen, however small. */
static void
test_small_err_buffer(void **state)
{
	struct cni_request r;
	char small[8];
	struct json_object *o;

	(void)state;
	memset(small, 'x', sizeof(small));
	o = request("add");
	set_str(o, "ifname", "a/b");
	assert_int_equal(cni_request_parse(o, &r, small, sizeof(small)), -1);
	json_object_put(o);
	assert_string_equal(small, "ifname:");
	memset(small, 'x', sizeof(small));
	o = request("nope");
	assert_int_equal(cni_request_parse(o, &r, small, 1), -1);
	json_object_put(o);
	assert_int_equal(small[0], '\0');
	assert_int_equal(small[1], 'x');
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_op_smallest),
		cmocka_unit_test(test_each_op_every_field),
		cmocka_unit_test(test_not_a_request),
		cmocka_unit_test(test_unknown_keys),
		cmocka_unit_test(test_missing_fields),
		cmocka_unit_test(test_wrong_types),
		cmocka_unit_test(test_string_lengths),
		cmocka_unit_test(test_malformed_strings),
		cmocka_unit_test(test_rules_agree_with_checkpoint),
		cmocka_unit_test(test_ip),
		cmocka_unit_test(test_check_ip6),
		cmocka_unit_test(test_valid_attachments),
		cmocka_unit_test(test_largest_request_fits_a_line),
		cmocka_unit_test(test_failure_after_attachments_frees),
		cmocka_unit_test(test_embedded_nul),
		cmocka_unit_test(test_quoted_names_are_tame),
		cmocka_unit_test(test_small_err_buffer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
