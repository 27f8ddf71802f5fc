/*
 * netd's policy: what the broker may ask of it.  Fixed at start (table range,
 * rule priorities and the pod cap from netd's own read of the configuration;
 * VPC CIDRs and the primary MAC from the one NETD_POLICY message), plus the
 * ENIs the broker has declared (MAC -> table) and netd's own view of the
 * node: the links the main table's default routes go through and their
 * addresses, found in the kernel by netd itself, never taken from the
 * broker.  Every check is a pure function that returns NULL when the
 * request is acceptable, or a static reason.
 */
#ifndef ENID_NETD_POLICY_H
#define ENID_NETD_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr.h"
#include "conf.h"
#include "maxima.h"
#include "msg.h"

#define NETD_MAX_ENIS		CONF_TABLE_SPAN	/* one table each */
_Static_assert(NETD_MAX_ENIS >= ENID_MAX_ENIS,
    "netd must take every ENI the pool may hold");
/* EC2 VPC CIDR blocks are /16 to /28. */
#define NETD_MIN_VPC_PREFIX	16
#define NETD_MAX_VPC_PREFIX	28
/* EC2 VPC IPv6 blocks: Amazon's are /56, BYOIP and IPAM pools' /44 to
 * /60; a subnet's is a /64. */
#define NETD_MIN_VPC6_PREFIX	44
#define NETD_MAX_VPC6_PREFIX	60
#define NETD_MTU_MIN		576
#define NETD_MTU_MAX		9216
#define NETD_MTU_MIN6		1280	/* IPv6's least link MTU */
#define NETD_MAX_DEADLINE_MS	(10 * 60 * 1000)

/*
 * netd's tag: the protocol of every route and rule it adds (RTPROT_*,
 * FRA_PROTOCOL) and of every address (IFA_PROTO).  Not a value the kernel
 * or iproute2's rt_protos reserve, so what carries it is netd's, also
 * after a restart, and what lacks it is someone else's.
 */
#define NETD_PROTO		ENID_RULE_PROTO

/*
 * The pod cap when pool.max_pods is not set: the most addresses the pool
 * gives pods on one ENI (its secondary ones, maxima.h) times
 * pool.max_enis, or times NETD_MAX_ENIS when that is not set either (the
 * cloud's own limit is not taken on trust).  Never below what the pool
 * may hand out, so that netd never refuses a pod the pool admitted.
 */
#define NETD_PODS_PER_ENI	ENID_MAX_ENI_ADDRS
/* With pool.prefix_delegation: its prefixes' addresses. */
#define NETD_PODS_PER_ENI_PD	(ENID_MAX_ENI_PREFIXES * ENID_PREFIX_ADDRS)

/* Reserved tables: unspec, default, main, local. */
#define NETD_TABLE_UNSPEC	0
#define NETD_TABLE_DEFAULT	253
#define NETD_TABLE_MAIN		254
#define NETD_TABLE_LOCAL	255

/* Address families, as the kernel numbers them (no socket headers here). */
#define NETD_AF_INET		2
#define NETD_AF_INET6		10
#define NETD_RTPROT_KERNEL	2	/* routes the kernel derives itself */
#define NETD_RTPROT_STATIC	4	/* libnl's default: enid-cni's host routes */
#define NETD_SCOPE_LINK		253	/* RT_SCOPE_LINK */
#define NETD_ROUTE_UNICAST	1	/* RTN_UNICAST */

struct netd_eni {
	uint8_t		mac[6];
	uint32_t	table;
};

/* ---- the node's own links, as netd finds them ---- */

#define NETD_MAX_NODE_LINKS	16
#define NETD_MAX_NODE_ADDRS	64

struct netd_node_link {
	uint32_t	ifindex;
	uint8_t		mac[6];		/* all zero if the link has none */
	char		name[MSG_NAME_LEN];
	/* The IPv4 gateway of the main table's default route through it
	 * (the lowest metric's); never set (family 0): none (yet).  Where
	 * pods' translated traffic leaves (nd_egress). */
	struct ip_addr	gateway;
};

/*
 * Every link a default route of the main table goes through (each next
 * hop, multipath included) and the addresses on those links, IPv4 and
 * IPv6 (a pod or an ENI naming one of them is refused).
 */
struct netd_node {
	uint32_t		nlinks;
	struct netd_node_link	links[NETD_MAX_NODE_LINKS];
	uint32_t		naddrs;
	struct ip_addr		addrs[NETD_MAX_NODE_ADDRS];
	bool			overflow;	/* more than fit */
};

/* ---- one link's addresses and routes, to judge whether it is bare ---- */

#define NETD_MAX_LINK_ADDRS	32
#define NETD_MAX_LINK_ROUTES	64

/* An address as the kernel lists it, of either family; one of another
 * family, or an IPv4-mapped IPv6 one, keeps the kernel's family with its
 * bytes (addr.addr.family, not valid as a struct ip_addr). */
struct nd_ifaddr {
	uint32_t	ifindex;
	struct ip_prefix addr;		/* the address and its length */
	uint8_t		proto;		/* IFA_PROTO; 0 if none */
};

/* A route through a link, in any table and family (its destination as
 * nd_ifaddr's address). */
struct nd_link_route {
	uint32_t	table;
	uint8_t		protocol;
	struct ip_prefix dst;
};

struct nd_link_state {
	uint32_t		ifindex;
	bool			enslaved;	/* has a master: bond, bridge, VRF */
	bool			master;		/* other links are its slaves */
	uint32_t		same_mac;	/* other links with its MAC */
	bool			overflow;	/* more than fit: not judged bare */
	uint32_t		naddrs;
	struct nd_ifaddr	addrs[NETD_MAX_LINK_ADDRS];
	uint32_t		nroutes;
	struct nd_link_route	routes[NETD_MAX_LINK_ROUTES];
};

struct netd_policy {
	uint32_t	table_lo;	/* allowed tables: [table_lo, table_hi) */
	uint32_t	table_hi;
	uint32_t	prio_to;	/* "to POD lookup main" */
	uint32_t	prio_from;	/* "from POD lookup T" */
	uint32_t	connmark;	/* routing.connmark: one bit */
	uint32_t	max_pods;	/* pods with rules at once */

	bool		vpc_set;	/* NETD_POLICY received */
	uint8_t		primary_mac[6];
	uint32_t	ncidrs;
	uint32_t	ncidrs4;	/* the IPv4 ones, first in cidrs */
	/* The VPC's networks: IPv4 first, then IPv6 (as NETD_POLICY). */
	struct ip_prefix cidrs[MSG_MAX_VPC_CIDRS];

	uint32_t	nenis;
	struct netd_eni	enis[NETD_MAX_ENIS];

	/* Only ever grows while netd runs: a link once found to be the
	 * node's own stays protected, also while its default route is
	 * briefly gone (a DHCP renewal, an operator's change). */
	struct netd_node node;
};

void		 policy_init(struct netd_policy *p,
		    const struct enid_config *cfg);
/* The pod cap netd derives from the configuration (see NETD_PODS_PER_ENI). */
uint32_t	 policy_pod_cap(const struct enid_config *cfg);

/*
 * Add what a fresh look at the kernel found to the node's own links and
 * addresses; nothing is ever removed, and a link's gateway is replaced
 * only by another one (a default route briefly gone keeps the last).
 * Returns true if something was new, a changed gateway included.
 * Sets node.overflow if it no longer fits (then every request that would
 * change the kernel is refused).
 */
bool		 policy_node_merge(struct netd_policy *p,
		    const struct netd_node *fresh);
const struct netd_node_link *policy_node_link_by_mac(
		    const struct netd_policy *p, const uint8_t mac[6]);
const struct netd_node_link *policy_node_link_by_ifindex(
		    const struct netd_policy *p, uint32_t ifindex);
bool		 policy_node_has_addr(const struct netd_policy *p,
		    const struct ip_addr *addr);

/*
 * The primary MAC a NETD_POLICY names must be one of the node's own links
 * as netd found them: NULL, or why not (a security event; netd exits).
 */
const char	*policy_check_primary(const struct netd_policy *p,
		    const uint8_t mac[6]);
/*
 * Take the broker's NETD_POLICY; NULL, or why it is unusable (its primary
 * MAC not a node link's among the reasons).
 */
const char	*policy_set_vpc(struct netd_policy *p,
		    const struct msg_netd_policy *m);

bool		 policy_table_allowed(const struct netd_policy *p,
		    uint32_t table);
/* addr lies in one of the VPC's blocks (of its family), and is not
 * 0.0.0.0. */
bool		 policy_in_vpc(const struct netd_policy *p,
		    const struct ip_addr *addr);
/*
 * What no pod or ENI address may be, whatever the VPC's blocks say: a
 * special address of either family (common/addr.h), and for IPv6 also
 * EC2's service addresses (IMDS fd00:ec2::254, DNS fd00:ec2::253, NTP
 * fd00:ec2::123: a pod holding one would take the node's queries) and a
 * ULA (fc00::/7) outside the VPC's blocks.  NULL, or why.
 */
const char	*policy_check_unicast(const struct netd_policy *p,
		    const struct ip_addr *addr);
/* The declared ENI with this MAC, or NULL. */
const struct netd_eni *policy_eni_by_mac(const struct netd_policy *p,
		    const uint8_t mac[6]);
const struct netd_eni *policy_eni_by_table(const struct netd_policy *p,
		    uint32_t table);
/* True for the two priorities enid's rules use, and only those. */
bool		 policy_prio_is_enid(const struct netd_policy *p,
		    uint32_t prio);

/* Request checks: NULL if acceptable, else a static reason. */
const char	*policy_check_declare(const struct netd_policy *p,
		    const struct msg_netd_eni *m);
const char	*policy_check_forget(const struct netd_policy *p,
		    const struct msg_netd_eni *m);
const char	*policy_check_find_link(const struct netd_policy *p,
		    const struct msg_netd_find_link *m);
const char	*policy_check_setup(const struct netd_policy *p,
		    const struct msg_netd_setup_eni *m);
const char	*policy_check_teardown(const struct netd_policy *p,
		    const struct msg_netd_setup_eni *m);
const char	*policy_check_pod(const struct netd_policy *p,
		    const struct msg_netd_pod_rule *m, bool adding);
/*
 * The pod cap: adding a pod that has no rules yet while npods (pods with
 * netd's rules now) already reaches max_pods is refused.
 */
const char	*policy_check_pod_count(const struct netd_policy *p,
		    uint32_t npods, bool pod_has_rules);
/*
 * The link the kernel has for a declared MAC, about to be used: never one
 * of the node's own (by ifindex, whatever its MAC is now).
 */
const char	*policy_check_link(const struct netd_policy *p,
		    uint32_t ifindex, const uint8_t mac[6]);
/*
 * The address a pod (own_ifindex 0) or an ENI setup (own_ifindex: the
 * ENI's link) names is configured on the link holder_ifindex: refused
 * unless that is the ENI's own link, since rules or a second copy of the
 * address would steer traffic that is not the pod's or the ENI's.
 */
const char	*policy_check_addr_holder(uint32_t holder_ifindex,
		    uint32_t own_ifindex);
/*
 * Whether netd may take a link over: it carries no address and no route
 * but netd's own (tagged NETD_PROTO), the IPv6 link-local address the
 * kernel gives every link that is up, and the routes the kernel derives
 * from those (protocol "kernel"); it is nobody's slave or master; and no
 * other link has its MAC (a bridge, VLAN or macvlan built on it would).
 * NULL, or why not, with the first foreign item described in detail.
 */
const char	*policy_check_bare(const struct nd_link_state *s, char *detail,
		    size_t detaillen);

/*
 * A pod's host route (MSG_NETD_ADD_POD_ROUTE): what netd found in the
 * kernel about it, as plain data.
 */
struct nd_pod_link {
	bool		found;		/* a link has the request's name */
	uint32_t	ifindex;
	uint8_t		mac[6];
	bool		is_veth;	/* its kind is "veth" */
	bool		peer_netns;	/* IFLA_LINK_NETNSID: peer elsewhere */
};

/* A main-table route that concerns the request: to the address (of any
 * type: a blackhole is a route to it too), or a /32 or /128 through the
 * link. */
struct nd_host_route {
	struct ip_prefix dst;
	uint8_t		type;		/* RTN_*; NETD_ROUTE_UNICAST 1 */
	uint8_t		scope;
	uint32_t	metric;
	bool		multipath;
	struct ip_addr	gateway;	/* never set (family 0): none */
	uint32_t	ifindex;
};

/*
 * Whether netd may put back the host route "ADDR/32 dev DEV scope link"
 * (main table) that enid-cni made for a pod: the address passes the pod
 * checks and has netd's own "to ADDR/32 lookup main" rule (has_rule: the
 * proof that netd accepted it for a pod, which only CAP_NET_ADMIN can
 * make); DEV exists, is a veth whose peer is in another namespace, and is
 * neither a declared ENI's link nor one of the node's own; no route to
 * the address exists other than exactly this one (a blackhole,
 * unreachable or prohibit route is one, at any metric); and DEV carries no
 * other /32 (one pod per veth).  NULL with *present set when the route is
 * there already, NULL to add it, or why not (detail names the kernel
 * object that made it so).
 */
/* The one reason that is no refusal: the device is gone (its pod is
 * being deleted), answered not-found. */
extern const char policy_no_such_device[];
const char	*policy_check_pod_route(const struct netd_policy *p,
		    const struct msg_netd_pod_route *m, bool has_rule,
		    const struct nd_pod_link *link,
		    const struct nd_host_route *routes, size_t nroutes,
		    bool *present, char *detail, size_t detaillen);

/* Apply a checked declare/forget.  Both are idempotent. */
void		 policy_declare(struct netd_policy *p,
		    const struct msg_netd_eni *m);
void		 policy_forget(struct netd_policy *p,
		    const struct msg_netd_eni *m);

#endif /* ENID_NETD_POLICY_H */
