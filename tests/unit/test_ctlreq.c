/*
 * The admin socket's request parser (broker/ctlreq.c), over requests built
 * with json-c: each op and each value it takes; every refusal with the
 * message the ops gave before the parser was theirs; keys an op does not
 * read are ignored, as enidctl has always relied on.  And the two things
 * fuzz-ctlreq found: a string with a NUL in it passed as its first part,
 * and a refused value was quoted raw into a message the broker logs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "ctlreq.h"
#include "log.h"

static char err[256];

/* Parse the JSON text (and drop the object): 0 with *r filled, or -1 with
 * err set.  r->eni must not be used after: it pointed into the object. */
static int
parse_text(const char *text, size_t len, struct ctl_request *r)
{
	struct json_tokener *tok;
	struct json_object *o;
	int rc;

	assert_non_null(tok = json_tokener_new());
	o = json_tokener_parse_ex(tok, text, (int)len);
	assert_int_equal(json_tokener_get_error(tok), json_tokener_success);
	json_tokener_free(tok);
	memset(err, 0, sizeof(err));
	rc = ctl_request_parse(o, r, err, sizeof(err));
	if (rc == -1)
		assert_true(err[0] != '\0');
	json_object_put(o);
	return rc;
}

#define PARSE(text, r)	parse_text((text), sizeof(text) - 1, (r))

static void
test_each_op(void **state)
{
	struct ctl_request r;

	(void)state;
	assert_int_equal(PARSE("{\"op\":\"status\"}", &r), 0);
	assert_int_equal(r.op, CTL_OP_STATUS);
	assert_int_equal(r.level, -1);
	assert_int_equal(PARSE("{\"op\":\"reconcile\"}", &r), 0);
	assert_int_equal(r.op, CTL_OP_RECONCILE);
	assert_int_equal(PARSE("{\"op\":\"metrics\"}", &r), 0);
	assert_int_equal(r.op, CTL_OP_METRICS);
	assert_int_equal(PARSE("{\"op\":\"show\",\"what\":\"limits\"}", &r),
	    0);
	assert_int_equal(r.op, CTL_OP_SHOW);
	assert_int_equal(r.what, CTL_SHOW_LIMITS);
	assert_int_equal(PARSE("{\"op\":\"show\",\"what\":\"snat\"}", &r), 0);
	assert_int_equal(r.what, CTL_SHOW_SNAT);
	assert_int_equal(PARSE("{\"op\":\"show\",\"what\":\"SNAT\"}", &r),
	    -1);
	assert_int_equal(PARSE("{\"op\":\"log-level\",\"level\":\"warn\"}",
	    &r), 0);
	assert_int_equal(r.op, CTL_OP_LOG_LEVEL);
	assert_int_equal(r.level, LOG_LVL_WARN);
	assert_int_equal(PARSE("{\"op\":\"log-level\",\"level\":\"debug\"}",
	    &r), 0);
	assert_int_equal(r.level, LOG_LVL_DEBUG);
	/* keys an op does not read are ignored */
	assert_int_equal(PARSE("{\"op\":\"status\",\"what\":[1],\"x\":null}",
	    &r), 0);
	assert_string_equal(r.eni, "");
}

static void
test_every_show(void **state)
{
	struct ctl_request r;
	struct json_object *o;
	unsigned w;

	(void)state;
	for (w = 0; w < CTL_SHOW_COUNT; w++) {
		o = json_object_new_object();
		json_object_object_add(o, "op", json_object_new_string("show"));
		json_object_object_add(o, "what",
		    json_object_new_string(ctl_show_name(w)));
		assert_int_equal(ctl_request_parse(o, &r, err, sizeof(err)), 0);
		assert_int_equal(r.what, w);
		json_object_put(o);
	}
	assert_string_equal(ctl_show_name(CTL_SHOW_COUNT), "?");
	assert_string_equal(ctl_op_name(CTL_OP_LOG_LEVEL), "log-level");
}

static void
test_drain_keeps_the_string(void **state)
{
	struct json_object *o;
	struct ctl_request r;

	(void)state;
	assert_non_null(o = json_tokener_parse(
	    "{\"op\":\"drain\",\"eni\":\"eni-0a1b2c\"}"));
	assert_int_equal(ctl_request_parse(o, &r, err, sizeof(err)), 0);
	assert_int_equal(r.op, CTL_OP_DRAIN);
	assert_string_equal(r.eni, "eni-0a1b2c");
	json_object_put(o);
}

/* The messages the ops gave when each read its own fields. */
static void
test_refusals(void **state)
{
	struct ctl_request r;
	static const struct {
		const char	*text;
		const char	*err;
	} cases[] = {
		{ "[\"op\",\"status\"]", "request must be a JSON object" },
		{ "{\"what\":\"pool\"}", "missing string field \"op\"" },
		{ "{\"op\":7}", "missing string field \"op\"" },
		{ "{\"op\":\"start\"}", "unknown op \"start\"" },
		{ "{\"op\":\"show\"}", "\"what\" must be a string" },
		{ "{\"op\":\"show\",\"what\":null}",
		  "\"what\" must be a string" },
		{ "{\"op\":\"show\",\"what\":\"all\"}",
		  "unknown \"what\" \"all\" (pool, enis, pods, subnets, "
		  "config, limits, snat)" },
		{ "{\"op\":\"drain\"}", "\"eni\" must be a string" },
		{ "{\"op\":\"drain\",\"eni\":[\"eni-1\"]}",
		  "\"eni\" must be a string" },
		{ "{\"op\":\"log-level\",\"level\":3}",
		  "\"level\" must be a string" },
		{ "{\"op\":\"log-level\",\"level\":\"loud\"}", "unknown level "
		  "\"loud\" (error, warning, info, debug)" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(parse_text(cases[i].text,
		    strlen(cases[i].text), &r), -1);
		assert_string_equal(err, cases[i].err);
		assert_string_equal(r.eni, "");
	}
}

/* fuzz-ctlreq: {"op":"show","what":"enis\u0000"} was "show enis", and a
 * drain of "eni-1\u0000x" drained eni-1. */
static void
test_embedded_nul(void **state)
{
	struct ctl_request r;

	(void)state;
	assert_int_equal(PARSE("{\"op\":\"show\",\"what\":\"enis\\u0000\"}",
	    &r), -1);
	assert_string_equal(err, "\"what\" contains a NUL byte");
	assert_int_equal(PARSE("{\"op\":\"drain\",\"eni\":\"eni-1\\u0000x\"}",
	    &r), -1);
	assert_string_equal(err, "\"eni\" contains a NUL byte");
	assert_string_equal(r.eni, "");
	assert_int_equal(PARSE("{\"op\":\"log-level\",\"level\":"
	    "\"info\\u0000\"}", &r), -1);
	assert_string_equal(err, "\"level\" contains a NUL byte");
	assert_int_equal(PARSE("{\"op\":\"status\\u0000x\"}", &r), -1);
	assert_string_equal(err, "\"op\" contains a NUL byte");
}

/* fuzz-ctlreq: {"op":"metri'cs\321"} put the byte \321 into the message,
 * and a "what" with a newline could forge a line of the broker's log. */
static void
test_quoted_values_are_tame(void **state)
{
	struct ctl_request r;

	(void)state;
	assert_int_equal(PARSE("{\"op\":\"metri'cs\321\"}", &r), -1);
	assert_string_equal(err, "unknown op \"metri'cs?\"");
	assert_int_equal(PARSE("{\"op\":\"show\",\"what\":\"x\\nenid: error: "
	    "forged\"}", &r), -1);
	assert_string_equal(err, "unknown \"what\" \"x?enid: error: forged\" "
	    "(pool, enis, pods, subnets, config, limits, snat)");
	/* at most 32 bytes of it */
	assert_int_equal(PARSE("{\"op\":\"log-level\",\"level\":\"\\u001b[31m"
	    "0123456789012345678901234567890123456789\"}", &r), -1);
	assert_string_equal(err, "unknown level \"?[31m012345678901234567890123"
	    "456\" (error, warning, info, debug)");
}

static void
test_small_err_buffer(void **state)
{
	struct json_object *o;
	struct ctl_request r;
	char small[8];

	(void)state;
	assert_non_null(o = json_tokener_parse("{\"op\":\"nope\"}"));
	memset(small, 'x', sizeof(small));
	assert_int_equal(ctl_request_parse(o, &r, small, 4), -1);
	assert_string_equal(small, "unk");
	assert_int_equal(small[4], 'x');
	json_object_put(o);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_op),
		cmocka_unit_test(test_every_show),
		cmocka_unit_test(test_drain_keeps_the_string),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_embedded_nul),
		cmocka_unit_test(test_quoted_values_are_tame),
		cmocka_unit_test(test_small_err_buffer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
