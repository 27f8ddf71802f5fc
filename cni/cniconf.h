/*
 * One enid-cni invocation: the CNI_* environment and the network
 * configuration on stdin, parsed and checked whole before anything is
 * touched, and the CNI results and errors that answer it.  Pure (strings
 * and JSON in, structs and JSON out): the plugin, its unit tests and its
 * fuzzer share it.
 */
#ifndef ENID_CNICONF_H
#define ENID_CNICONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr.h"

#define CNI_STDIN_MAX		(256 * 1024)
#define CNI_ARGS_MAX		4096
#define CNI_CID_LEN		257	/* container ids: 1 to 256 bytes */
#define CNI_IFNAME_LEN		16	/* IFNAMSIZ */
#define CNI_NETNS_LEN		4096
#define CNI_NAME_LEN		257
#define CNI_K8S_LEN		254	/* DNS-1123 names: up to 253 */
#define CNI_UID_LEN		65
#define CNI_SOCKET_LEN		108	/* sun_path */
#define CNI_USER_LEN		33	/* a user name, or a uid in decimal */
#define CNI_PREFIX_MAX		7	/* leaves 8 hex digits of hash */
#define CNI_MAX_VALID		4096	/* the broker's pod limit */
#define CNI_MSG_LEN		512

#define CNI_DEFAULT_PREFIX	"enid"
#define CNI_DEFAULT_USER	"enid"	/* enid.conf's "user" default */
/* A string every enid-cni carries, so that enid-cni-install knows a file
 * of that name in the host's CNI directory for enid's before replacing it. */
#define CNI_PLUGIN_MARK	"enid-cni: the CNI plugin of enid, IPAM for ENIs"
/* The pod's gateway in the main role: link-local, never a real host, the
 * same in every pod; the pod reaches it through a static neighbour entry
 * for the host end's MAC. */
#define CNI_GATEWAY		"169.254.1.1"
/* The same for IPv6 (as aws-vpc-cni and terway have it): the pod's
 * default route goes via it, onlink, to the host end's MAC. */
#define CNI_GATEWAY6		"fe80::1"

/* CNI error codes (the specification's "Error" section) ... */
#define CNI_ERR_INCOMPATIBLE	1
#define CNI_ERR_UNSUPPORTED	2
#define CNI_ERR_UNKNOWN_CONTAINER 3
#define CNI_ERR_INVALID_ENV	4
#define CNI_ERR_IO		5
#define CNI_ERR_DECODE		6
#define CNI_ERR_INVALID_CONFIG	7
#define CNI_ERR_TRY_AGAIN	11
#define CNI_ERR_NOT_AVAILABLE	50
#define CNI_ERR_LIMITED		51
/* ... and enid's own, from 100 (enid-cni(8) has the table). */
#define CNI_ERR_ENID		100	/* a broker code this plugin does not know */
#define CNI_ERR_WIRING		120	/* netlink: the pod could not be wired */
#define CNI_ERR_ELSEWHERE	121	/* attached in another netns already */
#define CNI_ERR_CHECK		122	/* CHECK found the wiring broken */
/* A broker answer the plugin refuses (the trust model in enid-cni(8)):
 * the address is released again and nothing is left on the node. */
#define CNI_ERR_ANSWER		123	/* malformed: a field or the line */
#define CNI_ERR_ADDR_NEVER	124	/* special, the node's own, a gateway */
#define CNI_ERR_ADDR_ROUTED	125	/* the node routes it to another link */
#define CNI_ERR_UNPROVEN	126	/* enid-netd holds no rule for it */
#define CNI_ERR_PEER		127	/* cni.sock served by another user */

/* A pod has at most one address of each family, kept in this order. */
enum { CNI_V4 = 0, CNI_V6, CNI_NFAMILIES };

enum cni_cmd {
	CNI_CMD_ADD = 0,
	CNI_CMD_DEL,
	CNI_CMD_CHECK,
	CNI_CMD_GC,
	CNI_CMD_STATUS,
	CNI_CMD_VERSION,
};

enum cni_role {
	CNI_ROLE_MAIN = 0,	/* type "enid-cni": wires the pod */
	CNI_ROLE_IPAM,		/* "enid-ipam" under another plugin */
};

/* The CNI_* variables as the process found them; NULL when unset. */
struct cni_env {
	const char	*command;
	const char	*containerid;
	const char	*netns;
	const char	*ifname;
	const char	*args;
};

struct cni_error {
	int		code;
	char		msg[CNI_MSG_LEN];
	char		details[CNI_MSG_LEN];	/* "" when there are none */
};

struct cni_attachment {
	char		container_id[CNI_CID_LEN];
	char		ifname[CNI_IFNAME_LEN];
};

struct json_object;

struct cni_conf {
	enum cni_role	role;
	enum cni_cmd	cmd;
	const char	*version;	/* "0.4.0", "1.0.0" or "1.1.0" */
	char		name[CNI_NAME_LEN];
	char		socket[CNI_SOCKET_LEN];
	/* Who may serve the socket besides root: a name looked up in
	 * /etc/passwd, or a uid (uid_is_number). */
	char		enid_user[CNI_USER_LEN];
	bool		uid_is_number;
	uint32_t	enid_uid;
	char		veth_prefix[CNI_PREFIX_MAX + 1];
	uint32_t	mtu;		/* 0: the kernel's default */

	char		container_id[CNI_CID_LEN];
	char		ifname[CNI_IFNAME_LEN];
	char		netns[CNI_NETNS_LEN];	/* "" when not given */
	char		k8s_namespace[CNI_K8S_LEN];
	char		k8s_name[CNI_K8S_LEN];
	char		k8s_uid[CNI_UID_LEN];

	struct json_object *dns;	/* checked; NULL when not given */
	struct json_object *prev;	/* prevResult, checked; or NULL */
	/* prevResult's addresses for this attachment, one a family
	 * ([CNI_V4], [CNI_V6]); family 0 where it has none. */
	struct ip_addr	prev_ip[CNI_NFAMILIES];
	bool		have_valid;	/* GC: the list was given */
	size_t		nvalid;
	struct cni_attachment *valid;	/* malloc'd */
};

/*
 * 0, or -1 with e set (code and a message naming the variable or key).
 * text need not be NUL-terminated.  The role comes from the name the
 * plugin was executed as.  On -1, e->code 1 still leaves c->version set to
 * what an error may be answered in.
 */
int	cni_conf_parse(enum cni_role role, const struct cni_env *env,
	    const char *text, size_t len, struct cni_conf *c,
	    struct cni_error *e);
void	cni_conf_free(struct cni_conf *c);
bool	cni_version_supported(const char *v);
extern const char *const cni_versions[];	/* NULL-terminated */

/* The host end's name: prefix + hex of a hash of (container id, ifname),
 * 15 bytes in all. */
void	cni_veth_name(const char *prefix, const char *cid, const char *ifname,
	    char out[CNI_IFNAME_LEN]);
/* Whether name has the shape cni_veth_name gives with this prefix. */
bool	cni_veth_name_ours(const char *prefix, const char *name);

/* The CNI error code for a broker error code (enid-cni(8), DIAGNOSTICS). */
int	cni_broker_code(const char *code);

/* ---- results (cniresult.c) ---- */

struct cni_link_info {
	char		name[CNI_IFNAME_LEN];
	uint8_t		mac[6];
	uint32_t	mtu;
};

/* What the main role made: the two ends and the pod's addresses, one a
 * family (family 0: none), each a host prefix in the pod. */
struct cni_wired {
	struct cni_link_info host, pod;
	struct ip_addr	ip[CNI_NFAMILIES];
};

/* An ADD result in c->version's shape, after c->prev's entries. */
struct json_object *cni_result_main(const struct cni_conf *c,
	    const struct cni_wired *w);
/* The IPAM role's result: ips, routes and dns only.  One address a
 * family (family 0: none), each with its prefix length and gateway. */
struct json_object *cni_result_ipam(const struct cni_conf *c,
	    const struct ip_addr ip[CNI_NFAMILIES],
	    const uint8_t prefix[CNI_NFAMILIES],
	    const struct ip_addr gateway[CNI_NFAMILIES]);
struct json_object *cni_result_error(const char *version,
	    const struct cni_error *e);
struct json_object *cni_result_version(const char *version);
/* The longest of the prefixes nets[i]/lens[i] that holds both a and b,
 * else the longest prefix a and b share. */
uint8_t	cni_common_prefix(uint32_t a, uint32_t b, const uint32_t *nets,
	    const uint8_t *lens, size_t n);

#endif /* ENID_CNICONF_H */
