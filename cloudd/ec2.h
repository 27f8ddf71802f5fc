/*
 * The EC2 Query API as enid-cloudd speaks it, in pure functions: request
 * bodies (form encoding), answer parsing (expat, into plain structs), the
 * checks a field passes before it may reach the broker, and the mapping of
 * the cloud's error codes to enid's outcome classes.  No I/O here, so the
 * unit tests and the fuzzer reach all of it.
 */
#ifndef ENID_EC2_H
#define ENID_EC2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "msg.h"

#define EC2_API_VERSION		"2016-11-15"
#define EC2_MAX_BODY		(1024 * 1024)	/* an answer larger is refused */
#define EC2_MAX_DEPTH		32		/* XML nesting */
#define EC2_TEXT_MAX		2048		/* one element's text, kept */
#define EC2_MAX_ITEMS		1000		/* entries in one answer page */
#define EC2_MAX_INSTANCE_ENIS	64	/* the largest instance types allow 64 */
/* An ENI's addresses as an answer lists them: its primary, and as many
 * secondary as enid holds on one (however many more its type takes). */
#define EC2_MAX_ENI_ADDRS	(MSG_MAX_ENI_ADDRS + 1)
_Static_assert(EC2_MAX_ENI_ADDRS == 65, "ec2_xml.c's message names 65");
/* DescribeInstances entries: we ask for one.  An instance struct holds
 * EC2_MAX_INSTANCE_ENIS ENIs (over half a megabyte), so EC2_MAX_ITEMS of
 * them would let a few KB of answer claim half a gigabyte. */
#define EC2_MAX_INSTANCES	8
#define EC2_TOKEN_LEN		2048		/* nextToken */
#define EC2_PAGE_SIZE		100		/* MaxResults we ask for */
/* MaxResults of an existence check: EC2's least.  One large instance,
 * described with all its ENIs and addresses, runs to some 200 KB of XML,
 * and a page must fit EC2_MAX_BODY. */
#define EC2_CHECK_PAGE_SIZE	5
#define EC2_STATUS_LEN		32
#define EC2_MAC_LEN		32		/* raw text, checked later */
#define EC2_IP_LEN		32
#define EC2_CIDR_LEN		32
/* IPv6 texts as received: the longest address is 39 characters, a
 * prefix 43.  A longer one is kept as "?" and left out, not a failed
 * answer (it is an entry's fault, not the answer's). */
#define EC2_IP6_LEN		48
/* A subnet's IPv6 blocks as listed: past associations too (EC2 keeps
 * one associated at most). */
#define EC2_MAX_SUBNET_CIDRS6	8

enum ec2_action {
	EC2_DESCRIBE_INSTANCES = 0,
	EC2_DESCRIBE_INSTANCE_TYPES,
	EC2_DESCRIBE_SUBNETS,
	EC2_DESCRIBE_ENIS,
	EC2_CREATE_ENI,
	EC2_ATTACH_ENI,
	EC2_MODIFY_ENI_ATTR,
	EC2_ASSIGN_IPS,
	EC2_UNASSIGN_IPS,
	EC2_DETACH_ENI,
	EC2_DELETE_ENI,
	/* DescribeInstances again, asked about many instances and read for
	 * their ids and states only (the leak collector's existence check).
	 * Last, so the fuzz corpus's first bytes keep their actions. */
	EC2_CHECK_INSTANCES,
	/* IPv6 addresses and /80 prefixes of an ENI (issue 35). */
	EC2_ASSIGN_IPV6,
	EC2_UNASSIGN_IPV6,
	EC2_ACTION_COUNT
};

const char	*ec2_action_name(enum ec2_action action);
bool		 ec2_action_mutating(enum ec2_action action);

struct ec2_tag {
	char		key[MSG_TAG_KEY_LEN];
	char		value[MSG_TAG_VAL_LEN];
};

/* An ENI as an answer describes it; text as received, checked later. */
struct ec2_eni {
	char		id[MSG_ID_LEN];
	char		subnet_id[MSG_ID_LEN];
	char		vpc_id[MSG_ID_LEN];
	char		az[MSG_ID_LEN];
	char		mac[EC2_MAC_LEN];
	char		private_ip[EC2_IP_LEN];
	char		status[EC2_STATUS_LEN];
	bool		attached;		/* an <attachment> was present */
	char		attachment_id[MSG_ID_LEN];
	char		attach_instance[MSG_ID_LEN];
	char		attach_status[EC2_STATUS_LEN];
	char		device_index[16];
	char		dot[8];			/* deleteOnTermination */
	uint32_t	naddrs;
	char		addrs[EC2_MAX_ENI_ADDRS][EC2_IP_LEN];
	bool		addr_primary[EC2_MAX_ENI_ADDRS];
	uint32_t	nprefixes;		/* ipv4PrefixSet */
	char		prefixes[MSG_MAX_ENI_PREFIXES][EC2_CIDR_LEN];
	uint32_t	ngroups;
	char		groups[MSG_MAX_SGS][MSG_ID_LEN];
	uint32_t	ntags;
	struct ec2_tag	tags[MSG_MAX_TAGS];
	uint32_t	tags_dropped;		/* over MSG_MAX_TAGS */
	/* IPv6: ipv6AddressesSet, ipv6PrefixSet, ipv6Native.  Entries past
	 * the arrays are counted (the answer fails past MSG_MAX_LEFT_OUT). */
	char		ipv6_native[8];
	uint32_t	naddrs6;
	char		addrs6[MSG_MAX_ENI_ADDRS6][EC2_IP6_LEN];
	bool		addr6_primary[MSG_MAX_ENI_ADDRS6];
	uint32_t	addrs6_dropped;
	uint32_t	nprefixes6;
	char		prefixes6[MSG_MAX_ENI_PREFIXES6][EC2_IP6_LEN];
	uint32_t	prefixes6_dropped;
};

struct ec2_instance {
	char		id[MSG_ID_LEN];
	char		type[MSG_ID_LEN];
	char		az[MSG_ID_LEN];
	char		subnet_id[MSG_ID_LEN];
	char		vpc_id[MSG_ID_LEN];
	char		private_ip[EC2_IP_LEN];
	uint32_t	nenis;
	struct ec2_eni	enis[EC2_MAX_INSTANCE_ENIS];
};

/* An instance as an existence check reads it. */
struct ec2_instance_state {
	char		id[MSG_ID_LEN];
	char		state[EC2_STATUS_LEN];	/* instanceState/name */
};

struct ec2_instance_type {
	char		name[MSG_ID_LEN];
	char		max_enis[16];
	char		ipv4_per_eni[16];
	char		hypervisor[MSG_HYPERVISOR_LEN];
	char		bare_metal[8];
	char		vcpus[16];	/* vCpuInfo/defaultVCpus */
	char		ipv6_supported[8];	/* networkInfo/ipv6Supported */
	char		ipv6_per_eni[16];	/* .../ipv6AddressesPerInterface */
};

struct ec2_subnet {
	char		id[MSG_ID_LEN];
	char		az[MSG_ID_LEN];
	char		vpc_id[MSG_ID_LEN];
	char		cidr[EC2_CIDR_LEN];
	char		available[16];
	char		ipv6_native[8];
	/* ipv6CidrBlockAssociationSet: each block and its state */
	uint32_t	ncidrs6;
	char		cidrs6[EC2_MAX_SUBNET_CIDRS6][EC2_IP6_LEN];
	char		cidr6_states[EC2_MAX_SUBNET_CIDRS6][EC2_STATUS_LEN];
	uint32_t	cidrs6_dropped;
};

/* One parsed answer.  Lists are allocated; ec2_answer_free() releases. */
struct ec2_answer {
	enum ec2_action	 action;
	bool		 is_error;	/* the <Response><Errors> shape */
	char		 code[MSG_CODE_LEN];
	char		 message[MSG_ERR_LEN];
	char		 request_id[MSG_ID_LEN];
	char		 next_token[EC2_TOKEN_LEN];

	bool		 has_return;	/* <return> seen, and its value */
	bool		 return_true;
	char		 attachment_id[MSG_ID_LEN];	/* attach */
	uint32_t	 naddrs;			/* assign */
	char		 addrs[MSG_MAX_ENI_ADDRS][EC2_IP_LEN];
	uint32_t	 nprefixes;			/* assign prefixes */
	char		 prefixes[MSG_MAX_ENI_PREFIXES][EC2_CIDR_LEN];
	/* AssignIpv6Addresses' assignedIpv6Addresses and
	 * assignedIpv6PrefixSet; UnassignIpv6Addresses' unassigned ones */
	char		 eni_id[MSG_ID_LEN];		/* networkInterfaceId */
	uint32_t	 naddrs6;
	char		 addrs6[MSG_MAX_ENI_ADDRS][EC2_IP6_LEN];
	uint32_t	 nprefixes6;
	char		 prefixes6[MSG_MAX_ENI_PREFIXES][EC2_IP6_LEN];
	bool		 has_eni;			/* create */
	struct ec2_eni	 eni;

	uint32_t	 nitems;	/* entries in the list below */
	uint32_t	 capitems;
	union {
		struct ec2_eni		*enis;
		struct ec2_subnet	*subnets;
		struct ec2_instance	*instances;
		struct ec2_instance_state *states;	/* check-instances */
		struct ec2_instance_type *types;
		void			*any;
	}		 list;
};

/*
 * Parse an answer to action.  Returns 0 with a filled (success or error
 * shape) answer, or -1 with err saying what is wrong with the text
 * (malformed, truncated, too large, wrong root, too many entries).  On -1
 * the answer holds nothing to free.
 */
int	ec2_parse(enum ec2_action action, const char *text, size_t len,
	    struct ec2_answer *a, char *err, size_t errlen);
void	ec2_answer_free(struct ec2_answer *a);

/* ---- field checks: nothing reaches the broker without one ---- */

/* "eni-0123abcd": prefix, then 1..40 of [0-9a-zA-Z]. */
bool	ec2_id_ok(const char *s, const char *prefix);
/* "i-" and 8 to 17 lower-case hex digits: what EC2 issues, and never a
 * filter wildcard. */
bool	ec2_instance_id_ok(const char *s);
bool	ec2_name_ok(const char *s, size_t max);	/* [a-z0-9.-], AZ, type */
bool	ec2_code_ok(const char *s);		/* [A-Za-z0-9.] */
bool	ec2_request_id_ok(const char *s);	/* [A-Za-z0-9-] */
bool	ec2_tag_text_ok(const char *s, size_t max);	/* no control chars */
/* Replace what is not printable ASCII by '?', in place. */
void	ec2_sanitize(char *s);
/* "in-use" -> ENI_ST_IN_USE; ENI_ST_UNKNOWN for anything else. */
enum cloud_eni_status ec2_eni_status(const char *s);
const char *ec2_eni_status_name(enum cloud_eni_status st);
/* Decimal 0..max.  0 or -1. */
int	ec2_uint(const char *s, uint32_t max, uint32_t *out);

/*
 * An instance type's ENIs and IPv4 addresses per ENI (its primary
 * included) as DescribeInstanceTypes tells them: 0, or -1 when either is
 * not a number from 1 to EC2_TYPE_MAX_ENIS or EC2_TYPE_MAX_ENI_ADDRS.
 * A type above enid's own maxima (common/maxima.h) is not refused: the
 * broker uses it up to them and says so once, naming the type.
 */
#define EC2_TYPE_MAX_ENIS	1024	/* EC2's most: 64 */
#define EC2_TYPE_MAX_ENI_ADDRS	1024	/* EC2's most: 50 */
int	ec2_type_limits(const struct ec2_instance_type *t, uint32_t *max_enis,
	    uint32_t *ips_per_eni);

/*
 * A prefix as the cloud writes it ("10.0.4.16/28") into its first
 * address: 0, or -1 when it does not parse, is not IPv4, is not a
 * /MSG_PREFIX_LEN or is not aligned to one.  ec2_prefix_ok() is the same
 * check of a first address.
 */
int	ec2_prefix_parse(const char *s, struct ip_addr *out);
bool	ec2_prefix_ok(const struct ip_addr *first);
/* An IPv4 address the cloud names (privateIpAddress and the like): 0,
 * or -1 (*out all zero) when it is not one in its canonical text. */
int	ec2_ip4_parse(const char *s, struct ip_addr *out);

/*
 * IPv6 as the cloud names it, each refused unless a host could hold it:
 * canonical RFC 5952 text (ip_addr_parse), IPv6, no special address
 * (ip_addr_is_special) and none of EC2's own services
 * (ip_addr_ec2_service).
 * 0, or -1 with *why (if why is not NULL) saying what is wrong and *out
 * all zero.
 *   ec2_ip6_parse	an address (ipv6Address, ipv6s)
 *   ec2_prefix6_parse	a delegated prefix: exactly /MSG_PREFIX6_LEN,
 *			aligned, into its first address; holding none of
 *			EC2's service addresses
 *   ec2_cidr6_parse	a block from minlen to maxlen bits, a network
 *			(a subnet's /64; a VPC's, /32 to /64)
 */
int	ec2_ip6_parse(const char *s, struct ip_addr *out, const char **why);
int	ec2_prefix6_parse(const char *s, struct ip_addr *out, const char **why);
int	ec2_cidr6_parse(const char *s, unsigned minlen, unsigned maxlen,
	    struct ip_prefix *out, const char **why);
/* Does the prefix hold one of EC2's IPv6 service addresses
 * (ip_addr_ec2_service)? */
bool	ec2_prefix6_holds_service(const struct ip_prefix *p);
/* "associated" -> IPV6_ST_ASSOCIATED, ...; IPV6_ST_MAX for text that
 * names no state ("" and "none" included). */
enum cloud_ipv6_state ec2_ipv6_state(const char *s);

/*
 * Convert a parsed ENI into its message form, checking every field.
 * Returns 0, or -1 with err naming the bad field.  A prefix that is not
 * an aligned /MSG_PREFIX_LEN, is named twice or holds an address of the
 * ENI's own is not passed on but counted (it still takes a slot of the
 * ENI); bad, if not NULL, names the first.
 */
int	ec2_eni_to_msg(const struct ec2_eni *e, struct msg_cloud_eni *m,
	    char *err, size_t errlen, char *bad, size_t badlen);

/*
 * The same, saying what it left out: the first IPv4 prefix, the first
 * IPv6 address and the first IPv6 prefix refused, each with why ("" and
 * NULL when none was).  A refused IPv6 entry never fails the ENI: its
 * IPv4 side (all the broker uses today) still goes on.
 */
struct ec2_left_out {
	char		 prefix[EC2_CIDR_LEN];
	char		 addr6[EC2_IP6_LEN];
	const char	*addr6_why;
	char		 prefix6[EC2_IP6_LEN];
	const char	*prefix6_why;
};
int	ec2_eni_to_msg_noting(const struct ec2_eni *e, struct msg_cloud_eni *m,
	    char *err, size_t errlen, struct ec2_left_out *lo);

/*
 * A subnet's IPv6 side into m (cidr6, ipv6_state, ipv6_native; and cidr
 * left all zero for an IPv6-only one): 0, or -1 with err when the entry
 * contradicts itself (ipv6Native that is neither true nor false, an
 * IPv6-only subnet with an IPv4 block).  A block that is not a usable
 * /64, a state this code does not know, or a second associated block is
 * left out and named in note (noteLen bytes; "" if none): the subnet
 * then has no usable IPv6 block.
 */
int	ec2_subnet6_to_msg(const struct ec2_subnet *s, struct msg_cloud_subnet *m,
	    char *err, size_t errlen, char *note, size_t notelen);

/* The IPv6 side of an instance type: 0, or -1 when ipv6Supported is not
 * true, false or absent, or the count is not a number up to
 * EC2_TYPE_MAX_ENI_ADDRS. */
int	ec2_type_ipv6(const struct ec2_instance_type *t, uint8_t *supported,
	    uint32_t *per_eni);

/*
 * One page of an existence check's answer (the n entries of list) against
 * the ids asked for in m: sets exists[i] for each ids[i] named in a state
 * other than terminated or shutting-down, and named[i] for each named at
 * all; both arrays hold m->nids entries and carry over from page to page.
 * Returns 0, or -1 with err when the page names an instance not asked
 * for, one already named, or one without a valid state: the cloud's
 * answer is then wrong, and nothing in it may be used.
 */
int	ec2_instances_mark(const struct msg_cloud_check_instances *m,
	    const struct ec2_instance_state *list, uint32_t n,
	    uint8_t *exists, uint8_t *named, char *err, size_t errlen);

/* ---- request bodies ---- */

struct ec2_form {
	char	*buf;
	size_t	 len, cap;
	bool	 failed;	/* out of memory or over the cap */
	bool	 prefixes;	/* asks for prefixes (ec2_classify) */
	bool	 ipv6;		/* asks for IPv6 (ec2_classify_ipv6) */
};

void	ec2_form_init(struct ec2_form *f, enum ec2_action action);
void	ec2_form_add(struct ec2_form *f, const char *key, const char *value);
void	ec2_form_addf(struct ec2_form *f, const char *value,
	    const char *keyfmt, ...) __attribute__((format(printf, 3, 4)));
void	ec2_form_free(struct ec2_form *f);

/*
 * Bodies for the broker's intents.  Each checks the fields it sends (ids,
 * addresses, counts) and returns 0, or -1 with err: a request cloudd would
 * not send is answered without calling the cloud.
 */
int	ec2_req_create_eni(struct ec2_form *f,
	    const struct msg_cloud_create_eni *m, char *err, size_t errlen);
int	ec2_req_attach(struct ec2_form *f, const struct msg_cloud_attach *m,
	    const char *instance_id, char *err, size_t errlen);
int	ec2_req_set_dot(struct ec2_form *f, const struct msg_cloud_set_dot *m,
	    char *err, size_t errlen);
int	ec2_req_ips(struct ec2_form *f, bool assign,
	    const struct msg_cloud_ips *m, char *err, size_t errlen);
int	ec2_req_prefixes(struct ec2_form *f, bool assign,
	    const struct msg_cloud_prefixes *m, char *err, size_t errlen);
int	ec2_req_detach(struct ec2_form *f, const struct msg_cloud_detach *m,
	    char *err, size_t errlen);
int	ec2_req_delete(struct ec2_form *f, const struct msg_cloud_delete *m,
	    char *err, size_t errlen);
int	ec2_req_describe_enis(struct ec2_form *f,
	    const struct msg_cloud_describe_enis *m, const char *own_instance,
	    const char *next_token, char *err, size_t errlen);
int	ec2_req_describe_subnets(struct ec2_form *f,
	    const struct msg_cloud_describe_subnets *m, const char *vpc_id,
	    const char *next_token, char *err, size_t errlen);
int	ec2_req_check_instances(struct ec2_form *f,
	    const struct msg_cloud_check_instances *m, const char *next_token,
	    char *err, size_t errlen);

/* ---- outcomes ---- */

enum ec2_retry {
	EC2_RETRY_NO = 0,
	EC2_RETRY_ALWAYS,	/* the call did not run: throttled */
	EC2_RETRY_IDEMPOTENT,	/* it may have run: only if repeating is safe */
	EC2_RETRY_REAUTH,	/* credentials expired or refused: refresh, retry */
};

/*
 * Map an error answer (HTTP status, the cloud's code and message) for
 * action to an outcome class, and say whether a retry may help.
 * prefixes: the request asked for prefixes, so that "no room" means no
 * aligned /28 (CO_NO_PREFIX), not a full subnet.
 */
enum cloud_outcome ec2_classify(enum ec2_action action, bool prefixes,
	    unsigned http_status, const char *code, const char *message,
	    enum ec2_retry *retry);

/*
 * The same for a request that asks for IPv6 (AssignIpv6Addresses,
 * UnassignIpv6Addresses, CreateNetworkInterface with Ipv6AddressCount),
 * with one rule more: only the code decides, from the lists ec2_classify
 * knows, and a code not in them is fatal for the request, whatever the
 * HTTP status or the message says, never transient.  *known says whether
 * the code was one of them, so that the caller logs the others with code
 * and message: EC2 documents few IPv6 codes, and a new one is news.
 */
enum cloud_outcome ec2_classify_ipv6(enum ec2_action action, bool prefixes,
	    unsigned http_status, const char *code, const char *message,
	    enum ec2_retry *retry, bool *known);

#endif /* ENID_EC2_H */
