/*
 * A request on the CNI socket, parsed and checked whole before the pool
 * sees it (pure: a JSON object in, a struct out).  One JSON object per
 * line; "op" picks the operation; unknown keys, wrong types, missing
 * fields, over-long strings and malformed ids are refused with a message
 * naming the field.
 */
#ifndef ENID_CNIREQ_H
#define ENID_CNIREQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "checkpoint.h"

#define CNIREQ_NETNS_LEN	4096
#define CNIREQ_MAX_VALID	CKPT_MAX_PODS

enum cni_op {
	CNI_OP_ADD = 0,
	CNI_OP_DEL,
	CNI_OP_CHECK,
	CNI_OP_GC,
	CNI_OP_STATUS,
};

struct cni_attachment {
	char		container_id[CKPT_CID_LEN];
	char		ifname[CKPT_IFNAME_LEN];
};

struct cni_request {
	enum cni_op	op;
	char		container_id[CKPT_CID_LEN];
	char		ifname[CKPT_IFNAME_LEN];
	char		netns[CNIREQ_NETNS_LEN];
	char		k8s_namespace[CKPT_K8S_LEN];
	char		k8s_name[CKPT_K8S_LEN];
	char		k8s_uid[CKPT_UID_LEN];
	/* add: enid-cni's host end of the pod's veth pair ("" from
	 * enid-ipam), whose host route reconciliation restores */
	char		host_veth[CKPT_IFNAME_LEN];
	/* check: the addresses expected, IPv4 and IPv6; none (AF_UNSPEC,
	 * zero) if not given */
	struct ip_addr	ip;
	struct ip_addr	ip6;
	size_t		nvalid;		/* gc: the attachments to keep */
	struct cni_attachment *valid;	/* malloc'd; cni_request_free */
};

struct json_object;

/* 0, or -1 with err naming the field and the problem. */
int	cni_request_parse(struct json_object *o, struct cni_request *r,
	    char *err, size_t errlen);
void	cni_request_free(struct cni_request *r);
const char *cni_op_name(enum cni_op op);

#endif /* ENID_CNIREQ_H */
