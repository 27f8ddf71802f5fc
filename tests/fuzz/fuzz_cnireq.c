/*
 * libFuzzer target for the CNI request parser (broker/cnireq.c), fed the
 * way cni.sock feeds it (fuzz_lines.h), lines of up to CNI_LINE_MAX.
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
#include "fuzz_lines.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* broker/cni.c's cni_ops, by name. */
static const char *const cni_op_names[] = {
	"add", "del", "check", "gc", "status", NULL
};

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
	CHECK(fuzz_terminated(s, size));
	CHECK(ckpt_k8s_ok(s));
	CHECK(strchr(s, ' ') == NULL);
}

/* Everything a parsed request promises. */
static void
accepted(struct json_object *o, const struct cni_request *r)
{
	struct json_object *opv, *arr;
	bool has_ip = r->ip.family != AF_UNSPEC;
	size_t i;

	CHECK(json_object_is_type(o, json_type_object));
	CHECK(json_object_object_get_ex(o, "op", &opv));
	CHECK(strcmp(json_object_get_string(opv), cni_op_name(r->op)) == 0);
	CHECK(strlen(json_object_get_string(opv)) ==
	    (size_t)json_object_get_string_len(opv));

	CHECK(fuzz_terminated(r->container_id, sizeof(r->container_id)));
	CHECK(fuzz_terminated(r->ifname, sizeof(r->ifname)));
	CHECK(fuzz_terminated(r->netns, sizeof(r->netns)));
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
		CHECK(!has_ip || (r->op == CNI_OP_CHECK &&
		    ckpt_ip_ok(&r->ip)));
		CHECK(has_ip || !json_object_object_get_ex(o, "ip", NULL));
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

			CHECK(fuzz_terminated(a->container_id,
			    sizeof(a->container_id)));
			CHECK(fuzz_terminated(a->ifname, sizeof(a->ifname)));
			CHECK(ckpt_container_id_ok(a->container_id));
			CHECK(ckpt_ifname_ok(a->ifname));
			same_string(e, "container_id", a->container_id);
			same_string(e, "ifname", a->ifname);
		}
		CHECK(r->container_id[0] == '\0' && !has_ip);
		break;
	case CNI_OP_STATUS:
		CHECK(r->container_id[0] == '\0' && r->ifname[0] == '\0');
		CHECK(r->nvalid == 0 && r->valid == NULL && !has_ip);
		break;
	default:
		CHECK(0);
	}
}

/* One line's value: 0 if served, -1 if the connection would be closed. */
static int
one_line(struct json_object *o, size_t len)
{
	struct cni_request r, r2;
	char err[256], small[16];
	size_t smallen;
	int rc, rc2;
	bool refused_first;

	/* Every value, not only those the server lets through: the parser
	 * must refuse on its own what the server refuses first. */
	memset(err, 'x', sizeof(err));
	rc = cni_request_parse(o, &r, err, sizeof(err));
	if (rc == 0)
		accepted(o, &r);
	else {
		CHECK(rc == -1);
		CHECK(fuzz_terminated(err, sizeof(err)) && err[0] != '\0');
		CHECK(r.valid == NULL && r.nvalid == 0);
	}
	if ((refused_first = fuzz_server_refuses(o, cni_op_names)))
		CHECK(rc == -1);

	/* The same answer with a short error buffer, never written past. */
	smallen = 1 + len % (sizeof(small) - 1);
	memset(small, 'x', sizeof(small));
	rc2 = cni_request_parse(o, &r2, small, smallen);
	CHECK(rc2 == rc);
	CHECK(rc2 == 0 || fuzz_terminated(small, smallen));
	CHECK(smallen == sizeof(small) || small[smallen] == 'x');
	if (rc == 0) {
		CHECK(r2.nvalid == r.nvalid);
		CHECK(strcmp(r2.container_id, r.container_id) == 0);
	}
	cni_request_free(&r2);
	cni_request_free(&r);
	return refused_first || rc == -1 ? -1 : 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_lines(data, size, CNI_LINE_MAX, one_line);
	return 0;
}
