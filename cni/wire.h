/*
 * enid-cni's hands on the kernel: the pod's namespace, the veth pair and
 * the addresses, routes and neighbour entry that wire it (wire.c).  One
 * rtnetlink socket in the node's namespace, where the plugin runs, and one
 * opened inside the pod's, so nothing after wire_open_pod() switches
 * namespaces again.  Every function that fails says, in err, what failed
 * on which object.
 */
#ifndef ENID_WIRE_H
#define ENID_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr.h"
#include "cniconf.h"

struct nl_sock;

struct wire {
	struct nl_sock	*host;		/* the node's namespace */
	struct nl_sock	*pod;		/* CNI_NETNS, or NULL */
	int		 hostns;	/* fd of the node's namespace */
	int		 podns;		/* fd of CNI_NETNS, or -1 */
};

struct wire_link {
	int		ifindex;
	char		name[CNI_IFNAME_LEN];
	uint8_t		mac[6];
	uint32_t	mtu;
	bool		up;
	bool		veth;
	int		peer_ifindex;	/* IFLA_LINK */
	bool		have_nsid;	/* the peer is in another namespace */
	int32_t		nsid;		/* ... known here by this id */
};

#define WIRE_NS_BAD	(-1)	/* not a network namespace, or ours */
#define WIRE_NS_GONE	(-2)	/* the path does not exist */
#define WIRE_NS_FAIL	(-3)	/* a system call failed */

int	wire_open(struct wire *w, char *err, size_t errlen);
/* 0, or one of WIRE_NS_* with err set.  Checks that path is a network
 * namespace other than the node's before anything is created in it. */
int	wire_open_pod(struct wire *w, const char *path, char *err,
	    size_t errlen);
void	wire_close(struct wire *w);

/* 1 found, 0 absent, -1 error. */
int	wire_get_link(struct wire *w, bool in_pod, const char *name,
	    struct wire_link *l, char *err, size_t errlen);
/* 1 if the host link's peer lives in the pod's namespace, 0 if not, -1. */
int	wire_peer_in_pod(struct wire *w, const struct wire_link *host,
	    char *err, size_t errlen);

int	wire_veth_add(struct wire *w, const char *host, const char *ifname,
	    uint32_t mtu, char *err, size_t errlen);
/* 0 when the link is gone (or never was), -1. */
int	wire_link_del(struct wire *w, const char *name, char *err,
	    size_t errlen);
/*
 * The pod's side, then the node's, for each address of ip (one a family;
 * family 0: none): the host routes are never a replace.  1 when a route
 * to an address through another link appeared since wire_vet (no host
 * route is added then), 0, -1.  have_own[f]: main routes ip[f] through
 * the host end already (wire_vet said so).
 */
int	wire_configure(struct wire *w, const struct wire_link *host,
	    const struct wire_link *pod, const struct ip_addr ip[CNI_NFAMILIES],
	    const bool have_own[CNI_NFAMILIES], char *err, size_t errlen);
/* 0 all in place, 1 something is missing (err lists what), -1. */
int	wire_check(struct wire *w, const char *host, const char *ifname,
	    const struct ip_addr ip[CNI_NFAMILIES], char *err, size_t errlen);
/* Deletes the host veths named by prefix that keep() does not keep. */
int	wire_sweep(struct wire *w, const char *prefix,
	    bool (*keep)(const char *name, void *arg), void *arg,
	    unsigned *removed, char *err, size_t errlen);
/*
 * Whether the node may route ip (either family) to a pod, from what its
 * kernel holds (the broker's word is not asked): 0 yes, else -1 with err
 * set and *code one of CNI_ERR_ADDR_NEVER (an address of the node, a
 * gateway of any of its tables, a reserved address of a subnet it is
 * on), CNI_ERR_ADDR_ROUTED (a host route, /32 or /128, to ip in any
 * table, other than own_ifindex's in main; for IPv6 also a route of
 * another kind than unicast in main that holds ip), CNI_ERR_UNPROVEN (no
 * rule "to ip lookup main" tagged by enid-netd, in ip's family's rules)
 * or CNI_ERR_WIRING (netlink failed).  *have_own is set when main already
 * routes ip through own_ifindex (a repeated ADD's; 0: there is none).
 */
int	wire_vet(struct wire *w, const struct ip_addr *ip, int own_ifindex,
	    bool *have_own, int *code, char *err, size_t errlen);
/* The node's source address toward dst (a route lookup); needs no
 * wire_open. */
int	wire_source_toward(const struct ip_addr *dst, struct ip_addr *src,
	    char *err, size_t errlen);

#endif /* ENID_WIRE_H */
