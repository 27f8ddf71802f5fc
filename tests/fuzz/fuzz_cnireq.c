/*
 * libFuzzer target for the CNI request parser, fed the way cni.sock feeds
 * it.  broker/server.c cuts a connection's bytes into lines at '\n' (a
 * line over CNI_LINE_MAX closes the connection), tokenises each line where
 * it lies in the input buffer, unterminated, with a fresh strict
 * json_tokener (json-c's default depth of 32; the whole line must be one
 * value), refuses what is not an object with a known string "op", and the
 * op calls cni_request_parse.  That step lives in the daemon, next to the
 * event loop, so it is mirrored here, limits included: a change to
 * client_line() or client_take_lines() must be made here too.  A final
 * line without its newline is taken as if the newline followed.
 *
 * What parses must hold only what the checkpoint can record, within its
 * buffers, equal to what the JSON said; what does not must say why in a
 * terminated message and hold nothing allocated (the leak check sees the
 * rest).  The answer must not depend on the size of the error buffer.
 *
 *   make fuzz-cnireq [FUZZ_SECONDS=N]
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "checkpoint.h"
#include "cnireq.h"
#include "enid.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* broker/cni.c's cni_ops, by name. */
static const char *const cni_op_names[] = {
	"add", "del", "check", "gc", "status", NULL
};

#define CHECK(x)	do { if (!(x)) __builtin_trap(); } while (0)

static bool
terminated(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

/* The request's string for key equals field, or the key is absent and
 * field is empty. */
static void
same_string(struct json_object *o, const char *key, const char *field)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v)) {
		CHECK(field[0] == '\0');
		return;
	}
	CHECK(json_object_is_type(v, json_type_string));
	CHECK(strcmp(json_object_get_string(v), field) == 0);
}

static void
k8s_checks(const char *s, size_t size)
{
	CHECK(terminated(s, size));
	CHECK(ckpt_k8s_ok(s));
	CHECK(strchr(s, ' ') == NULL);
}

/* Everything a parsed request promises. */
static void
accepted(struct json_object *o, const struct cni_request *r)
{
	struct json_object *opv, *arr;
	size_t i;

	CHECK(json_object_is_type(o, json_type_object));
	CHECK(json_object_object_get_ex(o, "op", &opv));
	CHECK(strcmp(json_object_get_string(opv), cni_op_name(r->op)) == 0);
	CHECK(strlen(json_object_get_string(opv)) ==
	    (size_t)json_object_get_string_len(opv));

	CHECK(terminated(r->container_id, sizeof(r->container_id)));
	CHECK(terminated(r->ifname, sizeof(r->ifname)));
	CHECK(terminated(r->netns, sizeof(r->netns)));
	k8s_checks(r->k8s_namespace, sizeof(r->k8s_namespace));
	k8s_checks(r->k8s_name, sizeof(r->k8s_name));
	k8s_checks(r->k8s_uid, sizeof(r->k8s_uid));
	same_string(o, "container_id", r->container_id);
	same_string(o, "ifname", r->ifname);
	same_string(o, "netns", r->netns);
	same_string(o, "k8s_namespace", r->k8s_namespace);
	same_string(o, "k8s_name", r->k8s_name);
	same_string(o, "k8s_uid", r->k8s_uid);

	switch (r->op) {
	case CNI_OP_ADD:
	case CNI_OP_DEL:
	case CNI_OP_CHECK:
		CHECK(ckpt_container_id_ok(r->container_id));
		CHECK(ckpt_ifname_ok(r->ifname));
		CHECK(r->ip == 0 || (r->op == CNI_OP_CHECK &&
		    ckpt_ip_ok(r->ip)));
		CHECK(r->ip != 0 || !json_object_object_get_ex(o, "ip", NULL));
		CHECK(r->nvalid == 0 && r->valid == NULL);
		break;
	case CNI_OP_GC:
		CHECK(json_object_object_get_ex(o, "valid_attachments", &arr));
		CHECK(r->nvalid == json_object_array_length(arr));
		CHECK(r->nvalid <= CNIREQ_MAX_VALID);
		CHECK((r->nvalid == 0) == (r->valid == NULL));
		for (i = 0; i < r->nvalid; i++) {
			const struct cni_attachment *a = &r->valid[i];
			struct json_object *e = json_object_array_get_idx(arr,
			    i);

			CHECK(terminated(a->container_id,
			    sizeof(a->container_id)));
			CHECK(terminated(a->ifname, sizeof(a->ifname)));
			CHECK(ckpt_container_id_ok(a->container_id));
			CHECK(ckpt_ifname_ok(a->ifname));
			same_string(e, "container_id", a->container_id);
			same_string(e, "ifname", a->ifname);
		}
		CHECK(r->container_id[0] == '\0' && r->ip == 0);
		break;
	case CNI_OP_STATUS:
		CHECK(r->container_id[0] == '\0' && r->ifname[0] == '\0');
		CHECK(r->nvalid == 0 && r->valid == NULL && r->ip == 0);
		break;
	default:
		CHECK(0);
	}
}

/* What client_line() refuses before an op is called. */
static bool
server_refuses(struct json_object *o)
{
	struct json_object *op;
	const char *name;
	size_t i;

	if (!json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "op", &op) ||
	    !json_object_is_type(op, json_type_string))
		return true;
	name = json_object_get_string(op);
	for (i = 0; cni_op_names[i] != NULL; i++)
		if (strcmp(cni_op_names[i], name) == 0)
			return false;
	return true;
}

/* One line: 0 if served, -1 if the connection would be closed. */
static int
one_line(const char *line, size_t len)
{
	struct json_tokener *tok;
	struct json_object *o;
	struct cni_request r, r2;
	char err[256], small[16];
	size_t smallen;
	int rc, rc2;
	bool refused_first;

	if ((tok = json_tokener_new()) == NULL)
		return -1;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, line, (int)len);
	if (o == NULL || json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != len) {
		json_tokener_free(tok);
		json_object_put(o);
		return -1;
	}
	json_tokener_free(tok);

	/* Every value, not only those the server lets through: the parser
	 * must refuse on its own what the server refuses first. */
	memset(err, 'x', sizeof(err));
	rc = cni_request_parse(o, &r, err, sizeof(err));
	if (rc == 0)
		accepted(o, &r);
	else {
		CHECK(rc == -1);
		CHECK(terminated(err, sizeof(err)) && err[0] != '\0');
		CHECK(r.valid == NULL && r.nvalid == 0);
	}
	if ((refused_first = server_refuses(o)))
		CHECK(rc == -1);

	/* The same answer with a short error buffer, never written past. */
	smallen = 1 + len % (sizeof(small) - 1);
	memset(small, 'x', sizeof(small));
	rc2 = cni_request_parse(o, &r2, small, smallen);
	CHECK(rc2 == rc);
	CHECK(rc2 == 0 || terminated(small, smallen));
	CHECK(smallen == sizeof(small) || small[smallen] == 'x');
	if (rc == 0) {
		CHECK(r2.nvalid == r.nvalid);
		CHECK(strcmp(r2.container_id, r.container_id) == 0);
	}
	cni_request_free(&r2);
	cni_request_free(&r);
	json_object_put(o);
	return refused_first || rc == -1 ? -1 : 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size, *nl;
	char *line;
	size_t len;
	int rc;

	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		len = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);
		if (len > CNI_LINE_MAX)
			return 0;		/* "request line longer than" */
		/* unterminated, as the server has it, in a buffer of just
		 * the line so that ASan sees any read past it */
		if ((line = malloc(len ? len : 1)) == NULL)
			return 0;
		memcpy(line, p, len);
		rc = one_line(line, len);
		free(line);
		if (rc == -1)
			return 0;		/* bad-request: closed */
		p += len + 1;
	}
	return 0;
}
