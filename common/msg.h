/*
 * The internal message protocol between enid (the broker), enid-netd and
 * enid-cloudd.  One message is one SOCK_SEQPACKET datagram: a fixed header
 * followed by a fixed-layout payload whose size is fixed by its type.
 *
 * Every type is declared once, in MSG_TYPES below: that single list makes
 * the enum, the table of (name, payload size, allowed directions, flags)
 * and the per-type checker declarations, so the table has exactly one entry
 * per type by construction (msg.c also asserts the count at build time).
 *
 * A receiver (msg_recv) rejects, before any field is read, a message whose
 * type is unknown, whose direction is not allowed, whose length is not its
 * type's size, or that carries file descriptors; then what the flags say
 * is not permitted now (a second "once" message, anything before the
 * handshake, a policy-gated request before the policy), as OpenSSH's
 * monitor does with MON_ONCE and MON_PERMIT; then the type's checker
 * rejects unterminated strings, counts over their array and unknown enum
 * values.  Between internal peers a rejected message is fatal.
 *
 * Every address is a struct ip_addr and every CIDR a struct ip_prefix
 * (common/addr.h), whatever its family; the checkers refuse one that is
 * not canonical, and one of the wrong family, naming the field.  The
 * fields that existed before issue 35 are IPv4 only, and where such an
 * address may be absent, absent is IPv4's unspecified address, 0.0.0.0
 * (a CIDR's: 0/0).  The IPv6 fields cloudd fills (named ...6, or
 * carried beside a family) are IPv6 only and never special
 * (ip_addr_is_special); absent is the all-zero value, family 0.
 */
#ifndef ENID_MSG_H
#define ENID_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "addr.h"
#include "maxima.h"

/* 2: prefixes (EC2 prefix delegation), 3: an instance's vCPUs, 4: netd's
 * SNAT table, 5: what differs in it, 6: struct ip_addr for every address,
 * 7: the cloud's IPv6 (ENIs', subnets', the VPC's; asking by family),
 * 8: netd's IPv6 (the VPC's IPv6 CIDRs, an ENI's IPv6 address, pods'
 * rules and host routes of either family) */
#define MSG_PROTO_VERSION	9
#define MSG_MAX_PAYLOAD		16384	/* no payload struct may exceed this */
#define MSG_CHILD_FD		3	/* a child's end of its socketpair */
/*
 * enid-netd's tag on what it adds to the kernel (netd/policy.h's
 * NETD_PROTO), here because enid-cni reads it too: a pod's policy rule
 * with this tag is the plugin's proof that netd accepted the address
 * (enid-cni(8), "Trust"); only a holder of CAP_NET_ADMIN can make one.
 */
#define ENID_RULE_PROTO		233

/* Bounded strings and arrays; every char[] must hold a NUL. */
#define MSG_NAME_LEN		16	/* IFNAMSIZ */
#define MSG_ID_LEN		64	/* eni-..., subnet-..., attach-..., i-... */
#define MSG_ERR_LEN		256
#define MSG_CODE_LEN		64
#define MSG_TOKEN_LEN		64	/* ClientToken */
#define MSG_TAG_KEY_LEN		128
#define MSG_TAG_VAL_LEN		256
#define MSG_MAX_TAGS		8
#define MSG_MAX_CIDRS		8	/* IPv4 CIDRs of a VPC */
#define MSG_MAX_CIDRS6		8	/* IPv6 CIDRs of a VPC (EC2's most: 5) */
/* An instance's VPC CIDRs, both families in one array: IPv4 first. */
#define MSG_MAX_VPC_CIDRS	(MSG_MAX_CIDRS + MSG_MAX_CIDRS6)
/* The destinations SNAT leaves alone: the VPC's CIDRs and snat.exclude. */
#define MSG_MAX_SNAT_CIDRS	(MSG_MAX_CIDRS + ENID_MAX_SNAT_EXCLUDE)
#define MSG_MAX_SGS		8
#define MSG_MAX_SUBNETS		16
#define MSG_MAX_ENI_ADDRS	ENID_MAX_ENI_ADDRS	/* maxima.h: secondary */
#define MSG_MAX_INSTANCE_IDS	32	/* per existence check */
/* An ENI's prefixes share its slots with its secondary addresses. */
#define MSG_MAX_ENI_PREFIXES	MSG_MAX_ENI_ADDRS
#define MSG_PREFIX_LEN		28	/* EC2 delegates IPv4 /28 prefixes */
#define MSG_PREFIX6_LEN		80	/* and IPv6 /80 prefixes */
#define MSG_MAX_ENI_ADDRS6	ENID_MAX_ENI_ADDRS6	/* maxima.h */
#define MSG_MAX_ENI_PREFIXES6	ENID_MAX_ENI_PREFIXES6
/* An ENI's IPv6 entries cloudd left out, counted: at most these. */
#define MSG_MAX_LEFT_OUT	1024
#define MSG_HYPERVISOR_LEN	16
#define MSG_MAX_VCPUS		4096	/* EC2's most: 896 (u7in-32tb) */

/* Who is at each end of a channel. */
enum msg_peer {
	PEER_BROKER = 0,
	PEER_NETD,
	PEER_CLOUDD,
};

/* Allowed directions, a bit per (sender -> receiver). */
#define DIR_B2N		0x1u	/* broker -> netd */
#define DIR_N2B		0x2u	/* netd -> broker */
#define DIR_B2C		0x4u	/* broker -> cloudd */
#define DIR_C2B		0x8u	/* cloudd -> broker */

/*
 * Flags per type, enforced by msg_recv in one place:
 * MF_HANDSHAKE	the handshake itself (HELLO, HELLO_ACK): the only types
 *		allowed before it, and its arrival completes it;
 * MF_ONCE	at most once per channel, ever;
 * MF_POLICY	only after the receiver granted MSG_PERMIT_POLICY (netd,
 *		once it has accepted NETD_POLICY).
 */
#define MF_HANDSHAKE		0x1u
#define MF_ONCE			0x2u
#define MF_POLICY		0x4u

#define MSG_PERMIT_POLICY	0x1u

struct msg_hdr {
	uint16_t	type;
	uint16_t	flags;		/* must be 0 for now */
	uint32_t	len;		/* payload bytes after the header */
	uint32_t	id;		/* request id; answers echo it */
	uint32_t	reserved;	/* must be 0 */
};

/* ---- shared ---- */

struct msg_hello {		/* broker -> child: first message */
	uint32_t	version;
};

struct msg_hello_ack {		/* child -> broker: answer to hello */
	uint32_t	version;
	uint32_t	pid;
};

struct msg_loglevel {		/* broker -> child */
	int32_t		level;		/* enum log_level */
};

struct msg_ping {		/* broker -> child: liveness; answered by PONG */
	uint32_t	seq;
};

/* ---- netd ---- */

/*
 * The facts netd needs from the cloud to judge requests; sent once, right
 * after the version handshake, and never again (a second one is fatal).
 * The table range and rule priorities are not here: netd reads them from the
 * root-owned configuration itself, so a broker can't widen them.
 */
struct msg_netd_policy {
	uint8_t		primary_mac[6];
	uint8_t		pad[2];
	/* The VPC's blocks: its IPv4 ones (1 to MSG_MAX_CIDRS), then its
	 * IPv6 ones (0 to MSG_MAX_CIDRS6), as msg_end's cidrs; family
	 * tells.  Without an IPv6 block netd takes no IPv6 address. */
	uint32_t	ncidrs;
	struct ip_prefix cidrs[MSG_MAX_VPC_CIDRS];
};

/* Declare (or forget) a MAC as a secondary ENI bound to a table. */
struct msg_netd_eni {
	uint8_t		mac[6];
	uint8_t		pad[2];
	uint32_t	table;
};

struct msg_netd_find_link {
	uint8_t		mac[6];
	uint8_t		pad[2];
	uint32_t	deadline_ms;	/* relative: give up after this long */
};

struct msg_netd_link {		/* answer to find-link; also a dump entry */
	uint8_t		mac[6];
	uint8_t		up;
	uint8_t		pad;
	uint32_t	ifindex;
	uint32_t	mtu;
	char		name[MSG_NAME_LEN];
};

/*
 * An ENI has an IPv4 address, an IPv6 one or both (an ENI in an IPv6-only
 * subnet has no IPv4 address); at least one.  Absent is the zeroed value
 * of no family (family 0).
 */
struct msg_netd_setup_eni {
	uint8_t		mac[6];
	uint8_t		pad[2];
	uint32_t	table;
	/* The ENI's primary IPv4 address with its subnet's length; family
	 * 0: none (an IPv6-only ENI), gateway then family 0 too. */
	struct ip_prefix addr;
	/* addr's subnet's gateway; teardown: unused, 0.0.0.0 or family 0 */
	struct ip_addr	gateway;
	uint32_t	mtu;
	/* The ENI's own IPv6 address (EC2's primary IPv6 one, not one of a
	 * /80 prefix); family 0: none.  Set up as ADDR/128 on the ENI's
	 * link (no DAD, no prefix route), with "default via fe80:ec2::1
	 * dev ENI" in the ENI's table: the VPC router answers at that
	 * link-local address on every ENI.  Teardown: the same value
	 * (netd removes its IPv6 address and routes whatever it says). */
	struct ip_addr	addr6;
};

/*
 * A pod's rules: "to ADDR lookup main" at the to-priority and, with a
 * table, "from ADDR lookup TABLE" at the from-priority, in the address's
 * own family's rule table (an IPv6 address: AF_INET6 rules, ADDR/128).
 * A dual-stack pod is one request: its IPv4 address in addr, its IPv6
 * one in addr6, both families' rules checked, then changed, together
 * (a refusal changes neither).  A pod with one address, of either
 * family, has it in addr and addr6 of no family.
 */
struct msg_netd_pod_rule {
	struct ip_addr	addr;		/* the pod's: IPv4 or IPv6 */
	uint32_t	table;		/* 0: pod on the primary ENI (no from-rule) */
	struct ip_addr	addr6;		/* a dual pod's IPv6 one; family 0: none */
};

/* A rule dump entry, IPv4 and IPv6 rules alike: src and dst are of the
 * rule's family, "all" being that family's 0.0.0.0/0 or ::/0, so a
 * receiver tells an IPv6 rule by src.addr.family == AF_INET6. */
struct msg_netd_rule {
	uint32_t	priority;
	uint32_t	table;
	struct ip_prefix src;		/* 0.0.0.0/0 (::/0) if none */
	struct ip_prefix dst;		/* 0.0.0.0/0 (::/0) if none */
};

/*
 * A pod's host route, as enid-cni installs it: "ADDR/32 dev DEV scope
 * link" in the main table, or for an IPv6 address "ADDR/128 dev DEV"
 * (IPv6 routes have no scope).  The request to put one back (netd checks the
 * address and the device against the kernel, policy_check_pod_route);
 * and a dump entry, one per such route in the main table.
 */
struct msg_netd_pod_route {
	struct ip_addr	addr;		/* the pod's */
	char		dev[MSG_NAME_LEN];	/* the pod's host veth */
};

struct msg_netd_route {		/* a host-route dump entry */
	struct ip_addr	addr;		/* a /32 or a /128 route */
	uint32_t	ifindex;
	char		dev[MSG_NAME_LEN];	/* "" if the link has no name */
};

/*
 * Make netd's nftables table and its connection-mark rule what netd's own
 * configuration says (snat.*, routing.connmark), translating pods' traffic
 * beyond the VPC to `to`: the node's primary address as the cloud reports
 * it, which netd accepts only if it is an address of the node's primary
 * link as netd itself finds it.  0.0.0.0 when SNAT is off.  Sent after the
 * policy and again at every reconcile: netd reads its table back each
 * time and replaces it whole if it differs.
 */
struct msg_netd_snat {
	struct ip_addr	to;		/* 0.0.0.0: SNAT off */
};

/* netd's table as it read it back (answer to NETD_DUMP_SNAT). */
struct msg_netd_snat_state {
	uint8_t		enabled;	/* snat.enabled in netd's configuration */
	uint8_t		random_fully;
	uint8_t		in_place;	/* read back as netd would write it */
	/* Table ip6 enid, the IPv6 source check of pods' veths, read back
	 * as netd writes it (version 8; it holds no target, so SNAT off
	 * or on, it is the same). */
	uint8_t		src6_in_place;
	struct ip_addr	to;		/* the target; 0.0.0.0: none */
	uint32_t	primary_ifindex;	/* 0: not known yet */
	char		primary_link[MSG_NAME_LEN];
	uint32_t	connmark;
	uint32_t	nuntranslated;
	struct ip_prefix untranslated[MSG_MAX_SNAT_CIDRS];
	uint32_t	replaced;	/* times netd wrote its table whole */
	uint32_t	refused;	/* SNAT requests refused */
	uint64_t	translated;	/* connections translated (counters) */
	uint64_t	marked;		/* connections marked on arrival */
	char		message[MSG_ERR_LEN];	/* the last sync's outcome */
	/* Not in place: what differs from what netd writes (the table
	 * absent, what in it is not netd's, a rule, the target, the
	 * connection-mark rule missing); "" when in place (msg.c). */
	char		differs[MSG_ERR_LEN];
	/* ip6 enid: times netd wrote it whole, IPv6 packets it dropped
	 * (from a pod's veth with a source that is not that pod's), and
	 * what differs, "" when src6_in_place (msg.c). */
	uint32_t	src6_replaced;
	uint32_t	pad;
	uint64_t	src6_dropped;
	char		src6_differs[MSG_ERR_LEN];
};

struct msg_netd_dump {		/* request: no fields */
	uint32_t	unused;
};

enum msg_status {
	ST_OK = 0,
	ST_NOT_FOUND,		/* link never appeared before the deadline */
	ST_REFUSED,		/* out of policy */
	ST_FAILED,		/* the kernel said no */
	ST_MAX
};

/* The most kernel objects one netd request changes (netd/plan.h's
 * PLAN_MAX_OPS): more in an answer is a lie. */
#define MSG_MAX_CHANGED		128

struct msg_result {		/* generic answer from netd */
	uint32_t	status;		/* enum msg_status */
	int32_t		error;		/* errno, or 0 */
	uint32_t	changed;	/* kernel objects it added or removed */
	char		message[MSG_ERR_LEN];
};

struct msg_end {		/* end of a multi-part answer */
	uint32_t	count;
};

/* ---- cloudd ---- */

enum cloud_outcome {
	CO_OK = 0,
	CO_THROTTLED,
	CO_LIMIT_EXCEEDED,
	CO_SUBNET_FULL,
	CO_NOT_FOUND,
	CO_IN_USE,
	CO_TRANSIENT,
	CO_FATAL,
	/* No free aligned /28 in the subnet (InsufficientCidrBlocks, or a
	 * request for prefixes refused for want of room), while single
	 * addresses may still be free: a fragmented subnet. */
	CO_NO_PREFIX,
	CO_MAX
};

/* Every cloudd answer starts with this. */
struct msg_cloud_status {
	uint32_t	outcome;	/* enum cloud_outcome */
	uint32_t	http_status;
	char		code[MSG_CODE_LEN];	/* the cloud's error code */
	char		message[MSG_ERR_LEN];
	char		request_id[MSG_ID_LEN];
};

struct msg_tag {
	char		key[MSG_TAG_KEY_LEN];
	char		value[MSG_TAG_VAL_LEN];
};

struct msg_cloud_describe_instance {
	uint32_t	deadline_ms;
};

struct msg_cloud_instance {
	struct msg_cloud_status st;
	char		instance_id[MSG_ID_LEN];
	char		instance_type[MSG_ID_LEN];
	char		az[MSG_ID_LEN];
	char		region[MSG_ID_LEN];
	char		primary_eni[MSG_ID_LEN];
	uint8_t		primary_mac[6];
	uint8_t		pad[2];
	struct ip_addr	primary_ip;
	char		subnet_id[MSG_ID_LEN];
	char		vpc_id[MSG_ID_LEN];
	/* The VPC's CIDRs from IMDS: its IPv4 ones (1 to MSG_MAX_CIDRS),
	 * then its IPv6 ones (0 to MSG_MAX_CIDRS6); family tells. */
	uint32_t	ncidrs;
	struct ip_prefix cidrs[MSG_MAX_VPC_CIDRS];
	uint32_t	nsgs;
	char		sgs[MSG_MAX_SGS][MSG_ID_LEN];
	uint32_t	max_enis;
	uint32_t	ips_per_eni;
	/* DescribeInstanceTypes: the type's hypervisor ("nitro", "xen", ""
	 * for bare metal) and whether it is bare metal.  Only these tell
	 * whether it can hold prefixes: DescribeInstances says "xen" for
	 * every instance. */
	char		hypervisor[MSG_HYPERVISOR_LEN];
	uint8_t		bare_metal;
	uint8_t		prefixes_ok;	/* nitro or bare metal */
	uint8_t		pad2[2];
	uint32_t	vcpus;		/* its default vCPUs; 0: not told */
	/* IPv6.  From IMDS: the primary ENI's first IPv6 address (ipv6s)
	 * and its subnet's IPv6 block (subnet-ipv6-cidr-blocks), family 0
	 * when it has none.  From DescribeInstanceTypes: whether the type
	 * takes IPv6, and how many IPv6 addresses an ENI of it holds (0:
	 * not told). */
	struct ip_addr	primary_ip6;
	struct ip_prefix subnet_cidr6;
	uint8_t		ipv6_supported;	/* 0 or 1 */
	uint8_t		pad3[3];
	uint32_t	ipv6_per_eni;
};

struct msg_cloud_describe_subnets {
	uint32_t	deadline_ms;
	uint32_t	nids;		/* 0: the subnets of the instance's VPC */
	char		ids[MSG_MAX_SUBNETS][MSG_ID_LEN];
};

/* A subnet's IPv6 block, as DescribeSubnets says of it. */
enum cloud_ipv6_state {
	IPV6_ST_NONE = 0,	/* no IPv6 block at all */
	IPV6_ST_ASSOCIATED,	/* the only usable state */
	IPV6_ST_ASSOCIATING,
	IPV6_ST_DISASSOCIATING,
	IPV6_ST_DISASSOCIATED,
	IPV6_ST_FAILING,
	IPV6_ST_FAILED,
	IPV6_ST_MAX
};

struct msg_cloud_subnet {	/* a describe-subnets entry */
	char		subnet_id[MSG_ID_LEN];
	char		az[MSG_ID_LEN];
	/* Its IPv4 CIDR; family 0 (all zero) in an IPv6-only subnet
	 * (ipv6_native), and only there. */
	struct ip_prefix cidr;
	uint32_t	available;	/* free IPv4 addresses */
	/* Its IPv6 /64 when ipv6_state is associated; else family 0.
	 * ipv6_state: the associated block's, or the state of the last
	 * block listed when none is associated (enum cloud_ipv6_state). */
	struct ip_prefix cidr6;
	uint32_t	ipv6_state;
	uint8_t		ipv6_native;	/* IPv6 only: no IPv4 CIDR */
	uint8_t		pad[3];
};

struct msg_cloud_create_eni {
	uint32_t	deadline_ms;
	char		subnet_id[MSG_ID_LEN];
	uint32_t	nsgs;
	char		sgs[MSG_MAX_SGS][MSG_ID_LEN];
	uint32_t	nsecondary;
	uint32_t	nprefixes;	/* /28 prefixes; never with nsecondary */
	/* IPv6 addresses to create it with, 0 or 1 (Ipv6AddressCount);
	 * never with nprefixes.  0 asks nothing of IPv6: the request is
	 * what it was before IPv6. */
	uint32_t	nipv6;
	char		client_token[MSG_TOKEN_LEN];
	char		description[MSG_ERR_LEN];
	uint32_t	ntags;
	struct msg_tag	tags[MSG_MAX_TAGS];
};

enum cloud_eni_status {
	ENI_ST_UNKNOWN = 0,
	ENI_ST_AVAILABLE,
	ENI_ST_IN_USE,
	ENI_ST_ATTACHING,
	ENI_ST_DETACHING,
	ENI_ST_MAX
};

/* An ENI as the cloud describes it: the answer to create-eni, and one entry
 * of describe-enis. */
struct msg_cloud_eni {
	struct msg_cloud_status st;
	char		eni_id[MSG_ID_LEN];
	char		subnet_id[MSG_ID_LEN];
	char		instance_id[MSG_ID_LEN];	/* attached to, or "" */
	char		attachment_id[MSG_ID_LEN];
	uint8_t		mac[6];
	uint8_t		delete_on_termination;
	uint8_t		pad;
	uint32_t	status;		/* enum cloud_eni_status */
	uint32_t	attach_status;	/* enum cloud_eni_status (attaching...) */
	int32_t		device_index;	/* -1 if not attached */
	struct ip_addr	primary_ip;	/* 0.0.0.0 if none */
	uint32_t	naddrs;		/* secondary addresses */
	struct ip_addr	addrs[MSG_MAX_ENI_ADDRS];
	/* Delegated prefixes: each the first address of an aligned
	 * /MSG_PREFIX_LEN.  cloudd passes on only those of that length and
	 * aligned; nbad_prefixes counts the others, which still take
	 * slots. */
	uint32_t	nprefixes;
	struct ip_addr	prefixes[MSG_MAX_ENI_PREFIXES];
	uint32_t	nbad_prefixes;
	uint32_t	ntags;
	struct msg_tag	tags[MSG_MAX_TAGS];
	/*
	 * IPv6.  An ipv6_native ENI is in an IPv6-only subnet: it has no
	 * IPv4 address (primary_ip 0.0.0.0, no addrs, no prefixes).
	 * addrs6: its IPv6 addresses, the one the cloud marks primary
	 * (isPrimaryIpv6) first if any, then in the answer's order;
	 * nbad_addrs6 counts those left out (not a usable IPv6 address,
	 * named twice, or past MSG_MAX_ENI_ADDRS6).  prefixes6: its /80s,
	 * each by its first address, aligned; nbad_prefixes6 counts those
	 * left out (not an aligned usable /80, named twice, over one of
	 * addrs6, or past MSG_MAX_ENI_PREFIXES6): they still take slots.
	 */
	uint8_t		ipv6_native;	/* 0 or 1 */
	uint8_t		pad2[3];
	uint32_t	naddrs6;
	struct ip_addr	addrs6[MSG_MAX_ENI_ADDRS6];
	uint32_t	nbad_addrs6;
	uint32_t	nprefixes6;
	struct ip_addr	prefixes6[MSG_MAX_ENI_PREFIXES6];
	uint32_t	nbad_prefixes6;
};

struct msg_cloud_attach {
	uint32_t	deadline_ms;
	char		eni_id[MSG_ID_LEN];
	uint32_t	device_index;
};

struct msg_cloud_attached {
	struct msg_cloud_status st;
	char		attachment_id[MSG_ID_LEN];
};

struct msg_cloud_set_dot {	/* set DeleteOnTermination */
	uint32_t	deadline_ms;
	char		eni_id[MSG_ID_LEN];
	char		attachment_id[MSG_ID_LEN];
	uint8_t		value;
	uint8_t		pad[3];
};

/*
 * assign-ips and unassign-ips, of one family: AF_INET (secondary private
 * addresses) or AF_INET6 (IPv6 addresses); 0 or another is malformed,
 * and so is an address in addrs of the other family.
 */
struct msg_cloud_ips {
	uint32_t	deadline_ms;
	char		eni_id[MSG_ID_LEN];
	uint32_t	family;		/* AF_INET or AF_INET6 */
	uint32_t	count;		/* assign: how many, when naddrs is 0 */
	uint32_t	naddrs;
	struct ip_addr	addrs[MSG_MAX_ENI_ADDRS];
};

struct msg_cloud_assigned {	/* of the family asked for */
	struct msg_cloud_status st;
	uint32_t	naddrs;
	struct ip_addr	addrs[MSG_MAX_ENI_ADDRS];
};

/*
 * assign-prefixes and unassign-prefixes of one family: IPv4 /28s
 * (AF_INET) or IPv6 /80s (AF_INET6), each given by its first address
 * (msg_prefix_of).  Assign: count of them when nprefixes is 0, else
 * those.  Unassign: those.  (EC2 takes prefixes and addresses in
 * separate calls.)
 */
struct msg_cloud_prefixes {
	uint32_t	deadline_ms;
	char		eni_id[MSG_ID_LEN];
	uint32_t	family;		/* AF_INET or AF_INET6 */
	uint32_t	count;
	uint32_t	nprefixes;
	struct ip_addr	prefixes[MSG_MAX_ENI_PREFIXES];
};

struct msg_cloud_prefixes_assigned {	/* of the family asked for */
	struct msg_cloud_status st;
	uint32_t	nprefixes;
	struct ip_addr	prefixes[MSG_MAX_ENI_PREFIXES];
};

struct msg_cloud_detach {
	uint32_t	deadline_ms;
	char		eni_id[MSG_ID_LEN];
	char		attachment_id[MSG_ID_LEN];
};

struct msg_cloud_delete {
	uint32_t	deadline_ms;
	char		eni_id[MSG_ID_LEN];
};

enum cloud_eni_filter {
	ENIS_BY_INSTANCE = 0,	/* attached to instance_id */
	ENIS_BY_TAGS,		/* tags (key=value, or key only if value ""), status */
	ENIS_FILTER_MAX
};

struct msg_cloud_describe_enis {
	uint32_t	deadline_ms;
	uint32_t	filter;		/* enum cloud_eni_filter */
	char		instance_id[MSG_ID_LEN];
	uint32_t	status;		/* enum cloud_eni_status, 0: any */
	uint32_t	ntags;
	struct msg_tag	tags[MSG_MAX_TAGS];
};

/* Which of these instances still exist (not terminated or gone): for the
 * leak collector, which deletes ENIs tagged for vanished instances. */
struct msg_cloud_check_instances {
	uint32_t	deadline_ms;
	uint32_t	nids;
	char		ids[MSG_MAX_INSTANCE_IDS][MSG_ID_LEN];
};

struct msg_cloud_instances {
	struct msg_cloud_status st;
	uint32_t	nids;		/* as asked, in the same order */
	uint8_t		exists[MSG_MAX_INSTANCE_IDS];	/* 0 or 1 */
};

/* Answer with no data but an outcome; ends describe-* streams too. */
struct msg_cloud_done {
	struct msg_cloud_status st;
	uint32_t	count;		/* entries sent before this, for streams */
};

/* ---- statistics, for the broker's metrics ---- */

/*
 * A latency histogram as it crosses a channel: a count per bucket (not
 * cumulative) for each upper bound of msg_hist_bounds_us, one more for
 * everything above the last, and the sum of what was observed.  The
 * bounds are part of the protocol, so that both ends label buckets alike.
 */
#define MSG_HIST_NBOUNDS	16

struct msg_hist {
	uint64_t	counts[MSG_HIST_NBOUNDS + 1];
	uint64_t	sum_us;
};

#define MSG_STATS_ACTIONS	16
#define MSG_STATS_COUNT_MAX	(1ULL << 53)	/* exact as a double */
#define MSG_ACTION_LEN		48

struct msg_cloud_stats {	/* broker -> cloudd: send your counters */
	uint32_t	unused;
};

/* One EC2 action's counters since cloudd started. */
struct msg_cloud_action_stats {
	char		action[MSG_ACTION_LEN];	/* "AttachNetworkInterface" */
	uint64_t	calls;		/* HTTP attempts started */
	uint64_t	errors;		/* attempts that ended other than ok */
	uint64_t	throttles;	/* of those, throttled by the cloud */
	uint64_t	retries;	/* attempts made again after an error */
	struct msg_hist	latency;	/* of the attempts that ended */
};

/* Entries past nactions are all zero.  Two entries may name the same
 * action (cloudd asks DescribeInstances for two purposes). */
struct msg_cloud_stats_answer {
	uint32_t	nactions;
	uint32_t	pad;
	struct msg_cloud_action_stats actions[MSG_STATS_ACTIONS];
};

/*
 * The one list of message types: X(NAME, payload struct, directions,
 * flags, answers).  Answers echo the request's id.  The answers column
 * says what a request may be answered with, as ANS(final, final, entry,
 * end): up to two single final answers, or stream entries followed by an
 * explicit end marker (NETD_END, CLOUD_DONE), NONE where there is none;
 * NO_ANS for a type that is no request (an answer, or a notice such as
 * LOG_LEVEL).  The build checks that every answer flows back the way its
 * request came (msg.c); the broker matches answers by it (broker/req.c).
 */
#define NO_ANS		ANS(NONE, NONE, NONE, NONE)
#define MSG_TYPES(X)							\
	X(HELLO,		struct msg_hello, \
	    DIR_B2N | DIR_B2C, MF_HANDSHAKE | MF_ONCE, NO_ANS) \
	X(HELLO_ACK,		struct msg_hello_ack, \
	    DIR_N2B | DIR_C2B, MF_HANDSHAKE | MF_ONCE, NO_ANS) \
	X(LOG_LEVEL,		struct msg_loglevel, DIR_B2N | DIR_B2C, 0, \
	    NO_ANS) \
	X(PING,			struct msg_ping, DIR_B2N | DIR_B2C, 0, \
	    ANS(PONG, NONE, NONE, NONE)) \
	X(PONG,			struct msg_ping, DIR_N2B | DIR_C2B, 0, NO_ANS) \
	X(NETD_POLICY,		struct msg_netd_policy, DIR_B2N, MF_ONCE, \
	    ANS(NETD_RESULT, NONE, NONE, NONE)) \
	X(NETD_DECLARE_ENI,	struct msg_netd_eni, DIR_B2N, MF_POLICY, \
	    ANS(NETD_RESULT, NONE, NONE, NONE)) \
	X(NETD_FORGET_ENI,	struct msg_netd_eni, DIR_B2N, MF_POLICY, \
	    ANS(NETD_RESULT, NONE, NONE, NONE)) \
	X(NETD_FIND_LINK,	struct msg_netd_find_link, DIR_B2N, MF_POLICY, \
	    ANS(NETD_LINK, NETD_RESULT, NONE, NONE)) \
	X(NETD_SETUP_ENI,	struct msg_netd_setup_eni, DIR_B2N, MF_POLICY, \
	    ANS(NETD_RESULT, NONE, NONE, NONE)) \
	X(NETD_TEARDOWN_ENI,	struct msg_netd_setup_eni, DIR_B2N, MF_POLICY, \
	    ANS(NETD_RESULT, NONE, NONE, NONE)) \
	X(NETD_ADD_POD,		struct msg_netd_pod_rule, DIR_B2N, MF_POLICY, \
	    ANS(NETD_RESULT, NONE, NONE, NONE)) \
	X(NETD_DEL_POD,		struct msg_netd_pod_rule, DIR_B2N, MF_POLICY, \
	    ANS(NETD_RESULT, NONE, NONE, NONE)) \
	X(NETD_DUMP_LINKS,	struct msg_netd_dump, DIR_B2N, MF_POLICY, \
	    ANS(NETD_RESULT, NONE, NETD_LINK, NETD_END)) \
	X(NETD_DUMP_RULES,	struct msg_netd_dump, DIR_B2N, MF_POLICY, \
	    ANS(NETD_RESULT, NONE, NETD_RULE, NETD_END)) \
	X(NETD_LINK,		struct msg_netd_link, DIR_N2B, 0, NO_ANS) \
	X(NETD_RULE,		struct msg_netd_rule, DIR_N2B, 0, NO_ANS) \
	X(NETD_RESULT,		struct msg_result, DIR_N2B, 0, NO_ANS) \
	X(NETD_END,		struct msg_end, DIR_N2B, 0, NO_ANS) \
	X(CLOUD_DESCRIBE_INSTANCE, struct msg_cloud_describe_instance, \
	    DIR_B2C, 0, ANS(CLOUD_INSTANCE, NONE, NONE, NONE)) \
	X(CLOUD_INSTANCE,	struct msg_cloud_instance, DIR_C2B, 0, NO_ANS) \
	X(CLOUD_DESCRIBE_SUBNETS, struct msg_cloud_describe_subnets, \
	    DIR_B2C, 0, ANS(NONE, NONE, CLOUD_SUBNET, CLOUD_DONE)) \
	X(CLOUD_SUBNET,		struct msg_cloud_subnet, DIR_C2B, 0, NO_ANS) \
	X(CLOUD_CREATE_ENI,	struct msg_cloud_create_eni, DIR_B2C, 0, \
	    ANS(CLOUD_ENI, NONE, NONE, NONE)) \
	X(CLOUD_ENI,		struct msg_cloud_eni, DIR_C2B, 0, NO_ANS) \
	X(CLOUD_ATTACH,		struct msg_cloud_attach, DIR_B2C, 0, \
	    ANS(CLOUD_ATTACHED, NONE, NONE, NONE)) \
	X(CLOUD_ATTACHED,	struct msg_cloud_attached, DIR_C2B, 0, NO_ANS) \
	X(CLOUD_SET_DOT,	struct msg_cloud_set_dot, DIR_B2C, 0, \
	    ANS(CLOUD_DONE, NONE, NONE, NONE)) \
	X(CLOUD_ASSIGN_IPS,	struct msg_cloud_ips, DIR_B2C, 0, \
	    ANS(CLOUD_ASSIGNED, NONE, NONE, NONE)) \
	X(CLOUD_ASSIGNED,	struct msg_cloud_assigned, DIR_C2B, 0, NO_ANS) \
	X(CLOUD_UNASSIGN_IPS,	struct msg_cloud_ips, DIR_B2C, 0, \
	    ANS(CLOUD_DONE, NONE, NONE, NONE)) \
	X(CLOUD_DETACH,		struct msg_cloud_detach, DIR_B2C, 0, \
	    ANS(CLOUD_DONE, NONE, NONE, NONE)) \
	X(CLOUD_DELETE,		struct msg_cloud_delete, DIR_B2C, 0, \
	    ANS(CLOUD_DONE, NONE, NONE, NONE)) \
	X(CLOUD_DESCRIBE_ENIS,	struct msg_cloud_describe_enis, DIR_B2C, 0, \
	    ANS(NONE, NONE, CLOUD_ENI, CLOUD_DONE)) \
	X(CLOUD_CHECK_INSTANCES, struct msg_cloud_check_instances, \
	    DIR_B2C, 0, ANS(CLOUD_INSTANCES, NONE, NONE, NONE)) \
	X(CLOUD_INSTANCES,	struct msg_cloud_instances, DIR_C2B, 0, NO_ANS) \
	X(CLOUD_DONE,		struct msg_cloud_done, DIR_C2B, 0, NO_ANS) \
	X(CLOUD_STATS,		struct msg_cloud_stats, DIR_B2C, 0, \
	    ANS(CLOUD_STATS_ANSWER, NONE, NONE, NONE)) \
	X(CLOUD_STATS_ANSWER,	struct msg_cloud_stats_answer, DIR_C2B, 0, \
	    NO_ANS) \
	X(NETD_ADD_POD_ROUTE,	struct msg_netd_pod_route, DIR_B2N, MF_POLICY, \
	    ANS(NETD_RESULT, NONE, NONE, NONE)) \
	X(NETD_DUMP_ROUTES,	struct msg_netd_dump, DIR_B2N, MF_POLICY, \
	    ANS(NETD_RESULT, NONE, NETD_ROUTE, NETD_END)) \
	X(NETD_ROUTE,		struct msg_netd_route, DIR_N2B, 0, NO_ANS) \
	X(CLOUD_ASSIGN_PREFIXES, struct msg_cloud_prefixes, DIR_B2C, 0, \
	    ANS(CLOUD_PREFIXES_ASSIGNED, NONE, NONE, NONE)) \
	X(CLOUD_PREFIXES_ASSIGNED, struct msg_cloud_prefixes_assigned, \
	    DIR_C2B, 0, NO_ANS) \
	X(CLOUD_UNASSIGN_PREFIXES, struct msg_cloud_prefixes, DIR_B2C, 0, \
	    ANS(CLOUD_DONE, NONE, NONE, NONE)) \
	X(NETD_SNAT,		struct msg_netd_snat, DIR_B2N, MF_POLICY, \
	    ANS(NETD_RESULT, NONE, NONE, NONE)) \
	X(NETD_DUMP_SNAT,	struct msg_netd_dump, DIR_B2N, MF_POLICY, \
	    ANS(NETD_SNAT_STATE, NETD_RESULT, NONE, NONE)) \
	X(NETD_SNAT_STATE,	struct msg_netd_snat_state, DIR_N2B, 0, NO_ANS)

#define MSG_ENUM_ENTRY(name, type, dirs, flags, ans)	MSG_##name,
enum msg_type {
	MSG_NONE = 0,		/* never valid on the wire */
	MSG_TYPES(MSG_ENUM_ENTRY)
	MSG_TYPE_COUNT
};
#undef MSG_ENUM_ENTRY

/* A whole message as received: header, then room for any payload. */
struct msg {
	struct msg_hdr	hdr;
	union {
		unsigned char	bytes[MSG_MAX_PAYLOAD];
		uint64_t	align;
	} u;
};

/* One end of a channel, with what the receive side has permitted so far. */
struct msg_chan {
	int		fd;
	enum msg_peer	self;
	enum msg_peer	peer;
	const char	*peer_name;	/* for logs: "enid-netd" */
	bool		greeted;	/* the handshake message arrived */
	uint32_t	permits;	/* MSG_PERMIT_* granted by the owner */
	uint64_t	seen_once[(MSG_TYPE_COUNT + 63) / 64];
};

/* What a request may be answered with (MSG_TYPES' answers column). */
struct msg_answers {
	enum msg_type	single[2];	/* final answers, or MSG_NONE */
	enum msg_type	entry;		/* stream entries, or MSG_NONE */
	enum msg_type	end;		/* stream end marker, or MSG_NONE */
};

struct msg_type_info {
	const char	*name;
	size_t		size;
	unsigned int	dirs;
	unsigned int	flags;		/* MF_* */
	struct msg_answers answers;	/* all MSG_NONE: not a request */
	/* Meaning checks after the size check; NULL message means valid. */
	const char	*(*check)(const void *payload);
};

const struct msg_type_info *msg_type_info(unsigned int type);
const char	*msg_type_name(unsigned int type);
unsigned int	 msg_dir_bit(enum msg_peer from, enum msg_peer to);

void		 msg_chan_init(struct msg_chan *chan, int fd,
		    enum msg_peer self, enum msg_peer peer,
		    const char *peer_name);
/* Grant a permit (MSG_PERMIT_*) on chan's receive side. */
void		 msg_chan_permit(struct msg_chan *chan, uint32_t permit);

/*
 * Validate a received datagram of n bytes (header included) arriving on
 * chan, in chan's current state.  Returns NULL if it is acceptable, or a
 * static description of the first problem found.  Reads no payload field
 * before the size check.  Pure: msg_recv records what arrived.
 */
const char	*msg_validate(const struct msg_chan *chan, const void *buf,
		    size_t n);

/* A message's header: type, payload length, request id; the rest 0. */
void		 msg_hdr_init(struct msg_hdr *hdr, enum msg_type type,
		    uint32_t id, size_t len);

/* Send one message; payload must be exactly the type's size.  Returns 0, or
 * -1 with errno set (EAGAIN if the socket is full). */
int		 msg_send(const struct msg_chan *chan, enum msg_type type,
		    uint32_t id, const void *payload, size_t len);

enum msg_recv_result {
	MSG_RECV_OK = 0,
	MSG_RECV_AGAIN,		/* nothing to read now */
	MSG_RECV_EOF,		/* the peer closed */
	MSG_RECV_ERROR,		/* read failed: errno */
	MSG_RECV_BAD,		/* malformed: *why says how */
};

/* Receive and validate one message into m; on MSG_RECV_OK the channel's
 * state records it (handshake done, once-only types seen). */
enum msg_recv_result msg_recv(struct msg_chan *chan, struct msg *m,
		    const char **why);

/*
 * Messages read together, one recvmmsg(2) for up to MSG_BATCH_MAX of
 * them, then checked one at a time, in order, exactly as msg_recv checks
 * one.  For a receiver that never stops reading (the broker): whatever a
 * batch holds past a point where reading should stop would have to be
 * handled anyway.
 */
#define MSG_BATCH_MAX	8
#define MSG_CMSG_SPACE	CMSG_SPACE(sizeof(int) * 8)

struct msg_batch {
	size_t		n, next;	/* read, and taken so far */
	struct msg	m[MSG_BATCH_MAX];
	struct mmsghdr	mh[MSG_BATCH_MAX];
	struct iovec	iov[MSG_BATCH_MAX];
	bool		had_fds[MSG_BATCH_MAX];
	union {
		struct cmsghdr	hdr;
		char		buf[MSG_CMSG_SPACE];
	} cbuf[MSG_BATCH_MAX];
};

/* Read what waits, up to MSG_BATCH_MAX messages: MSG_RECV_OK (b->n > 0),
 * AGAIN, EOF or ERROR.  Descriptors any of them carry are closed here. */
enum msg_recv_result msg_recv_batch(struct msg_chan *chan,
		    struct msg_batch *b);
/* The next message of the batch, checked (msg_recv's results), or
 * MSG_RECV_AGAIN when all are taken.  *m points into b. */
enum msg_recv_result msg_batch_take(struct msg_chan *chan,
		    struct msg_batch *b, const struct msg **m,
		    const char **why);

/* True if s holds a NUL within size bytes. */
bool		 msg_str_ok(const char *s, size_t size);

/* Copy a C string into a fixed field, truncating; always NUL-terminates. */
void		 msg_strlcpy(char *dst, const char *src, size_t size);

/* The histogram buckets' upper bounds, in microseconds. */
extern const uint64_t msg_hist_bounds_us[MSG_HIST_NBOUNDS];
void		 msg_hist_observe(struct msg_hist *h, uint64_t us);
uint64_t	 msg_hist_count(const struct msg_hist *h);
void		 msg_hist_add(struct msg_hist *to, const struct msg_hist *h);

const char	*cloud_outcome_name(unsigned int outcome);
const char	*msg_status_name(unsigned int status);
/* The delegated prefix whose first address is first: /MSG_PREFIX_LEN
 * for IPv4, /MSG_PREFIX6_LEN for IPv6. */
struct ip_prefix msg_prefix_of(const struct ip_addr *first);
const char	*cloud_ipv6_state_name(unsigned int state);

#endif /* ENID_MSG_H */
