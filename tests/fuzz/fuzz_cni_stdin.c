/*
 * libFuzzer target for enid-cni's invocation parser: the CNI_* variables
 * and the network configuration on stdin, in both roles.  What parses
 * must hold only valid names and make well-formed results in its
 * version's shape; what does not must say why with a known code and leave
 * nothing allocated.
 *
 * Input: one flag byte (bit 0: the IPAM role; bits 1-5: which of the five
 * variables are unset), then CNI_COMMAND, CNI_CONTAINERID, CNI_NETNS,
 * CNI_IFNAME and CNI_ARGS, each ending in a NUL, then stdin.
 *
 *   make fuzz-cni [FUZZ_SECONDS=N]
 */
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "addr.h"
#include "cniconf.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool
known_code(int code)
{
	static const int codes[] = { 1, 2, 3, 4, 5, 6, 7, 11 };
	size_t i;

	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (codes[i] == code)
			return true;
	return false;
}

/* Serialize o and read it back: it must be a JSON object again. */
static void
roundtrip(struct json_object *o)
{
	const char *s = json_object_to_json_string_ext(o,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	struct json_object *back = json_tokener_parse(s);

	if (back == NULL || !json_object_is_type(back, json_type_object))
		__builtin_trap();
	json_object_put(back);
	json_object_put(o);
}

static void
check_ok(const struct cni_conf *c)
{
	struct cni_wired w;
	struct ip_addr gw[CNI_NFAMILIES];
	static const uint8_t prefix[CNI_NFAMILIES] = { 20, 64 };
	char name[CNI_IFNAME_LEN];
	size_t i;

	if (!cni_version_supported(c->version))
		__builtin_trap();
	if (c->cmd == CNI_CMD_VERSION) {
		roundtrip(cni_result_version(c->version));
		return;
	}
	if (c->socket[0] != '/' || strnlen(c->name, CNI_NAME_LEN) == 0)
		__builtin_trap();
	if (c->cmd == CNI_CMD_ADD || c->cmd == CNI_CMD_DEL ||
	    c->cmd == CNI_CMD_CHECK) {
		if (c->container_id[0] == '\0' || c->ifname[0] == '\0' ||
		    strlen(c->ifname) > 15 || strchr(c->ifname, '/') != NULL)
			__builtin_trap();
		if (c->cmd != CNI_CMD_DEL && c->netns[0] != '/')
			__builtin_trap();
		cni_veth_name(c->veth_prefix, c->container_id, c->ifname,
		    name);
		if (!cni_veth_name_ours(c->veth_prefix, name))
			__builtin_trap();
	}
	/* CHECK needs a prevResult naming an address of either family */
	if (c->cmd == CNI_CMD_CHECK && (c->prev == NULL ||
	    (c->prev_ip[CNI_V4].family == 0 &&
	    c->prev_ip[CNI_V6].family == 0)))
		__builtin_trap();
	if (c->cmd == CNI_CMD_GC && !c->have_valid)
		__builtin_trap();
	for (i = 0; i < c->nvalid; i++)
		if (c->valid[i].container_id[0] == '\0' ||
		    c->valid[i].ifname[0] == '\0')
			__builtin_trap();
	memset(&w, 0, sizeof(w));
	memcpy(w.host.name, "enid0123456789a", 16);
	memcpy(w.pod.name, "eth0", 5);
	/* a dual-stack pod's results, both roles */
	if (ip_addr_parse("10.0.0.4", &w.ip[CNI_V4], NULL) != 0 ||
	    ip_addr_parse("2001:db8::1:0:0:4", &w.ip[CNI_V6], NULL) != 0 ||
	    ip_addr_parse("10.0.0.10", &gw[CNI_V4], NULL) != 0 ||
	    ip_addr_parse(CNI_GATEWAY6, &gw[CNI_V6], NULL) != 0)
		__builtin_trap();
	w.host.mtu = w.pod.mtu = 1500;
	roundtrip(cni_result_main(c, &w));
	roundtrip(cni_result_ipam(c, w.ip, prefix, gw));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *vars[5] = { NULL };
	struct cni_env env;
	struct cni_conf c;
	struct cni_error e;
	const char *p, *end;
	char *copy;
	uint8_t flags;
	size_t i;

	if (size < 1)
		return 0;
	flags = data[0];
	/* A private copy, so the parser's reads past the end are caught. */
	if ((copy = malloc(size - 1 > 0 ? size - 1 : 1)) == NULL)
		return 0;
	memcpy(copy, data + 1, size - 1);
	p = copy;
	end = copy + size - 1;
	for (i = 0; i < 5; i++) {
		const char *nul = memchr(p, '\0', (size_t)(end - p));

		if (nul == NULL)
			break;
		vars[i] = flags & (2u << i) ? NULL : p;
		p = nul + 1;
	}
	env.command = vars[0];
	env.containerid = vars[1];
	env.netns = vars[2];
	env.ifname = vars[3];
	env.args = vars[4];
	if (cni_conf_parse(flags & 1 ? CNI_ROLE_IPAM : CNI_ROLE_MAIN, &env, p,
	    (size_t)(end - p), &c, &e) == 0) {
		check_ok(&c);
		cni_conf_free(&c);
	} else {
		if (!known_code(e.code) || e.msg[0] == '\0' ||
		    strnlen(e.msg, sizeof(e.msg)) >= sizeof(e.msg))
			__builtin_trap();
		if (c.version == NULL || !cni_version_supported(c.version) ||
		    c.prev != NULL || c.dns != NULL || c.valid != NULL)
			__builtin_trap();
		roundtrip(cni_result_error(c.version, &e));
	}
	free(copy);
	return 0;
}
