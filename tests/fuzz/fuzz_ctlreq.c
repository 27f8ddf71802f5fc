/*
 * libFuzzer target for the admin socket's request parser (broker/ctlreq.c),
 * fed the way ctl.sock feeds it (fuzz_lines.h), lines of up to
 * CTL_LINE_MAX.
 *
 * Invariants, beyond "does not crash":
 * - what parses is what the JSON says, whole: the op, the "what" of show,
 *   the "eni" of drain (the very string, NUL bytes and all), the "level"
 *   of log-level by its name;
 * - written back as a request, it parses to the same;
 * - what the server refuses first the parser refuses on its own;
 * - a refusal names its cause in a terminated message of printable ASCII
 *   only (the broker logs it), the same refusal whatever the size of the
 *   error buffer, which is never written past.
 *
 *   make fuzz-ctlreq [FUZZ_SECONDS=N]
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "ctlreq.h"
#include "enid.h"
#include "fuzz_lines.h"
#include "log.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* control.c's ctl_ops, by name. */
static const char *const ctl_op_names[] = {
	"status", "show", "reconcile", "drain", "log-level", "metrics", NULL
};

static bool
printable(const char *s)
{
	for (; *s != '\0'; s++)
		if (*s < ' ' || *s > '~')
			return false;
	return true;
}

/* o's member key is a string of exactly the bytes of s. */
static bool
same_string(struct json_object *o, const char *key, const char *s)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) &&
	    json_object_is_type(v, json_type_string) &&
	    (size_t)json_object_get_string_len(v) == strlen(s) &&
	    memcmp(json_object_get_string(v), s, strlen(s)) == 0;
}

/* The request written back from what was parsed. */
static struct json_object *
written_back(const struct ctl_request *r)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "op",
	    json_object_new_string(ctl_op_name(r->op)));
	switch (r->op) {
	case CTL_OP_SHOW:
		json_object_object_add(o, "what",
		    json_object_new_string(ctl_show_name(r->what)));
		break;
	case CTL_OP_DRAIN:
		json_object_object_add(o, "eni",
		    json_object_new_string(r->eni));
		break;
	case CTL_OP_LOG_LEVEL:
		json_object_object_add(o, "level",
		    json_object_new_string(log_level_name(r->level)));
		break;
	default:
		break;
	}
	return o;
}

static void
accepted(struct json_object *o, const struct ctl_request *r)
{
	struct json_object *back;
	struct ctl_request r2;
	char err[256];

	CHECK((unsigned)r->op < CTL_OP_COUNT);
	CHECK(same_string(o, "op", ctl_op_name(r->op)));
	switch (r->op) {
	case CTL_OP_SHOW:
		CHECK((unsigned)r->what < CTL_SHOW_COUNT);
		CHECK(same_string(o, "what", ctl_show_name(r->what)));
		break;
	case CTL_OP_DRAIN:
		CHECK(r->eni != NULL && same_string(o, "eni", r->eni));
		break;
	case CTL_OP_LOG_LEVEL:
		CHECK(r->level >= LOG_LVL_ERROR && r->level <= LOG_LVL_DEBUG);
		CHECK(same_string(o, "level", log_level_name(r->level)) ||
		    (r->level == LOG_LVL_WARN && same_string(o, "level",
		    "warn")));
		break;
	default:
		break;
	}
	if (r->op != CTL_OP_DRAIN)
		CHECK(r->eni != NULL && r->eni[0] == '\0');
	if (r->op != CTL_OP_LOG_LEVEL)
		CHECK(r->level == -1);

	back = written_back(r);
	CHECK(ctl_request_parse(back, &r2, err, sizeof(err)) == 0);
	CHECK(r2.op == r->op && r2.what == r->what && r2.level == r->level);
	CHECK(strcmp(r2.eni, r->eni) == 0);
	json_object_put(back);
}

/* One line's value: 0 if served, -1 if the connection would be closed. */
static int
one_line(struct json_object *o, size_t len)
{
	struct ctl_request r, r2;
	char err[256], small[16];
	size_t smallen;
	int rc, rc2;
	bool refused_first;

	/* Every value, not only those the server lets through. */
	memset(err, 'x', sizeof(err));
	rc = ctl_request_parse(o, &r, err, sizeof(err));
	if (rc == 0)
		accepted(o, &r);
	else {
		CHECK(rc == -1);
		CHECK(fuzz_terminated(err, sizeof(err)) && err[0] != '\0');
		CHECK(printable(err));
	}
	if ((refused_first = fuzz_server_refuses(o, ctl_op_names)))
		CHECK(rc == -1);

	/* The same answer with a short error buffer, never written past. */
	smallen = 1 + len % (sizeof(small) - 1);
	memset(small, 'x', sizeof(small));
	rc2 = ctl_request_parse(o, &r2, small, smallen);
	CHECK(rc2 == rc);
	CHECK(rc2 == 0 || fuzz_terminated(small, smallen));
	CHECK(smallen == sizeof(small) || small[smallen] == 'x');
	if (rc == 0)
		CHECK(r2.op == r.op && r2.what == r.what &&
		    r2.level == r.level && r2.eni == r.eni);
	return refused_first || rc == -1 ? -1 : 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_lines(data, size, CTL_LINE_MAX, one_line);
	return 0;
}
