/*
 * netd's nftables tables as plain data: "ip enid" (SNAT and the
 * connection marks) and "ip6 enid" (the IPv6 source check of pods' host
 * veths, IPv6 having no rp_filter).  For ip enid: the table netd wants
 * from its configuration and the broker's checked `to`, the table it read
 * back (nft.c fills the same form), the comparison of the two naming the
 * first difference, the rules' expressions as netd writes and parses them,
 * and the trust checks of a NETD_SNAT request.  No I/O: the unit tests
 * reach all of it without root.
 *
 * A rule is a short list of typed statements (struct snat_stmt); each kind
 * has exactly one expression encoding (snat_rule_exprs), the one nft(8)
 * itself uses, and snat_rule_parse() takes an expression list back to
 * statements, refusing anything else: what netd cannot parse is foreign.
 */
#ifndef ENID_NETD_SNAT_H
#define ENID_NETD_SNAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "msg.h"

#define SNAT_TABLE		"enid"
#define SNAT_CHAIN_LEN		32
#define SNAT_MAX_CHAINS		3
/* ip saddr return, VPC + exclusion returns, one snat per VPC CIDR, and
 * the two mark rules. */
#define SNAT_MAX_RULES		(1 + MSG_MAX_SNAT_CIDRS + MSG_MAX_CIDRS + 2)
#define SNAT_MAX_STMTS		6
#define SNAT_MAX_EXPRS		16
#define SNAT_WHY_LEN		192

#define SNAT_CHAIN_MARK_IN	"mark-in"
#define SNAT_CHAIN_MARK_OUT	"mark-out"
#define SNAT_CHAIN_SNAT_OUT	"snat-out"
#define SNAT_CHAIN_POD_SRC	"pod-src"	/* ip6 enid's one chain */

/* nf_tables' families (NFPROTO_*): a table is of one. */
#define SNAT_FAMILY_IP		2
#define SNAT_FAMILY_IP6		10

/* Hooks and chain types as nf_tables numbers them. */
#define SNAT_HOOK_PREROUTING	0
#define SNAT_HOOK_POSTROUTING	4
#define SNAT_PRIO_MANGLE	(-150)
#define SNAT_PRIO_AFTER_DNAT	(-90)	/* dstnat (-100) + 10 */
#define SNAT_PRIO_SRCNAT	100
/* Raw, before conntrack: a spoofed packet makes no connection. */
#define SNAT_PRIO_RAW		(-300)

enum snat_stmt_kind {
	SNAT_IIF = 1,		/* meta iif == value */
	SNAT_IIF_NOT,		/* meta iif != value */
	SNAT_OIF,		/* meta oif == value */
	SNAT_CT_STATE_NEW,	/* ct state new */
	SNAT_FIB_DADDR_LOCAL,	/* fib daddr type local */
	SNAT_CT_REPLY,		/* ct direction reply */
	SNAT_CT_MARK_HAS,	/* ct mark & value == value */
	SNAT_SADDR,		/* ip saddr value/prefix */
	SNAT_DADDR,		/* ip daddr value/prefix */
	SNAT_CT_MARK_OR,	/* ct mark set ct mark | value */
	SNAT_META_MARK_OR,	/* meta mark set meta mark | value */
	SNAT_COUNTER,		/* counter (packets, bytes: read back) */
	SNAT_RETURN,		/* return */
	SNAT_SNAT_TO,		/* snat to value [fully-random] */
	SNAT_IIFNAME_PREFIX,	/* iifname "name*" */
	SNAT_SADDR6_NOT_LL,	/* ip6 saddr != fe80::/10 */
	SNAT_FIB_SADDR_IIF_MISSING,	/* fib saddr . iif oif missing */
	SNAT_DROP,		/* drop */
};

struct snat_stmt {
	uint8_t		kind;		/* enum snat_stmt_kind */
	uint8_t		prefix;		/* SADDR, DADDR */
	bool		fully_random;	/* SNAT_TO */
	uint32_t	value;		/* ifindex, mark, or address (network
					 * order) */
	char		name[16];	/* IIFNAME_PREFIX: the prefix */
	uint64_t	packets, bytes;	/* COUNTER: not compared */
};

struct snat_rule {
	uint32_t	chain;		/* index in the table's chains */
	uint32_t	nstmts;
	struct snat_stmt stmts[SNAT_MAX_STMTS];
};

struct snat_chain {
	char		name[SNAT_CHAIN_LEN];
	bool		nat;		/* type nat, else filter */
	uint32_t	hook;
	int32_t		prio;
	bool		accept;		/* policy accept */
};

struct snat_table {
	uint8_t		family;		/* SNAT_FAMILY_IP, _IP6 */
	bool		present;
	/* Read back: something netd does not write or cannot parse (what[]
	 * names the first); such a table is replaced whole. */
	bool		foreign;
	char		what[SNAT_WHY_LEN];
	uint32_t	nchains;
	struct snat_chain chains[SNAT_MAX_CHAINS];
	uint32_t	nrules;
	struct snat_rule rules[SNAT_MAX_RULES];
};

/* What the desired table is built from (all checked before). */
struct snat_params {
	bool		enabled;	/* snat.enabled; to != 0 iff set */
	bool		random_fully;
	uint32_t	to;		/* network order */
	uint32_t	primary_ifindex;
	uint32_t	connmark;	/* one bit */
	uint32_t	nvpc;
	struct ip_prefix vpc[MSG_MAX_CIDRS];	/* IPv4 */
	uint32_t	nexclude;
	struct ip_prefix exclude[CONF_MAX_SNAT_EXCLUDE];	/* IPv4 */
};

void	snat_desired(const struct snat_params *p, struct snat_table *out);

/*
 * Table ip6 enid, the IPv6 source check of pods' host veths:
 *   chain pod-src (filter, prerouting, raw priority -300, policy accept)
 *     iifname "PREFIX*" ip6 saddr != fe80::/10
 *         fib saddr . iif oif missing counter drop
 * A packet that arrives on a pod's veth (PREFIX: routing.pod_veth_prefix)
 * leaves only if the kernel's route back to its source goes out of that
 * same veth: with each pod's /128 host route in main (and netd's "to POD
 * lookup main" rule before any from-rule), the routes are the list of
 * each veth's own sources.  Another pod's address, or one of no pod, is
 * dropped and counted; link-local sources (neighbour discovery) pass.
 * Other links, the primary's and the ENIs' (where asymmetric routing is
 * normal), are not looked at.
 */
void	snat_src6_desired(const char *veth_prefix, struct snat_table *out);
/* "ip" or "ip6", for messages. */
const char *snat_family_name(uint8_t family);
/* Counter packets of ip6 enid's drop rule: spoofed packets dropped. */
uint64_t snat_src6_dropped(const struct snat_table *t);

/*
 * Whether have (read back) is want (counters aside).  True if equal;
 * else false with why naming the first difference.
 */
bool	snat_table_equal(const struct snat_table *have,
	    const struct snat_table *want, char *why, size_t whylen);

/* The index of a chain by name, or -1. */
int	snat_chain_find(const struct snat_table *t, const char *name);

/* Counter packets: of the snat rules (translated connections) and of
 * mark-in's rule (marked connections). */
uint64_t snat_translated(const struct snat_table *t);
uint64_t snat_marked(const struct snat_table *t);

/* A rule as nft would print it, for logs. */
void	snat_rule_format(const struct snat_table *t,
	    const struct snat_rule *r, char *buf, size_t len);

/* ---- expressions: the wire form of a rule ---- */

enum snat_expr_kind {
	SX_META_LOAD = 1,	/* key -> reg */
	SX_META_SET,		/* key <- reg */
	SX_CT_LOAD,		/* key (dir unset) -> reg */
	SX_CT_SET,
	SX_PAYLOAD,		/* base, offset, len -> reg */
	SX_FIB,			/* flags, result -> reg */
	SX_BITWISE,		/* reg = (reg & mask) ^ xor, len */
	SX_CMP,			/* op, data, len */
	SX_IMM_DATA,		/* data, len -> reg */
	SX_IMM_VERDICT,		/* verdict code -> verdict register */
	SX_NAT,			/* type, family, reg_addr_min, flags */
	SX_COUNTER,
};

struct snat_expr {
	uint8_t		kind;		/* enum snat_expr_kind */
	uint32_t	key;		/* meta/ct key, fib result, nat type,
					 * cmp op, payload base */
	uint32_t	sreg, dreg;
	uint32_t	offset;		/* payload */
	uint32_t	len;		/* payload, bitwise, cmp, immediate */
	uint32_t	flags;		/* fib, nat */
	uint32_t	family;		/* nat */
	int32_t		verdict;
	uint8_t		data[16];	/* cmp, immediate; bitwise: mask */
	uint8_t		xor[16];	/* bitwise */
	uint64_t	packets, bytes;	/* counter */
};

/* A rule's expressions; returns how many (<= SNAT_MAX_EXPRS). */
size_t	snat_rule_exprs(const struct snat_rule *r, struct snat_expr *out);
/*
 * Expressions read back into statements; 0, or -1 with why naming what
 * netd does not write (the rule is then foreign).
 */
int	snat_rule_parse(const struct snat_expr *e, size_t n,
	    struct snat_rule *out, char *why, size_t whylen);

/* ---- trust: a NETD_SNAT request ---- */

/*
 * The checks after the policy (checks 2 to 4 of the design): to against
 * snat.enabled, to an address of the primary link (addrs: its IPv4
 * addresses as netd read them), the exclusions against the VPC.  NULL, or
 * why it is refused (detail names the value).
 */
/*
 * The answers to one batch written: begin (seq first - 1), nmsgs messages
 * each asking for an ack (first .. first + nmsgs - 1), end (first +
 * nmsgs).  The kernel answers begin and end only to refuse them.
 */
struct snat_batch {
	uint32_t	first;
	uint32_t	nmsgs;
	uint32_t	portid;		/* ours; 0 in an answer is the kernel's */
	uint32_t	acks;		/* of the nmsgs, answered */
	int		error;		/* the first refusal: negative errno */
	uint32_t	error_seq;	/* the refused message */
};

/* One netlink message of the answers: 1 if it answers the batch (b
 * updated), 0 if not (another request's), -1 if it is an error message
 * too short to hold one. */
int	snat_batch_answer(struct snat_batch *b, const void *msg, size_t len);

/*
 * A sync's target (0.0.0.0: SNAT off) and the VPC's CIDRs against netd's
 * configuration and the node's primary link's addresses: NULL, or why
 * not, with detail naming the address or CIDR.
 */
const char *snat_check_request(const struct enid_config *cfg,
	    const struct ip_prefix *vpc, uint32_t nvpc,
	    const struct ip_addr *to,
	    const uint32_t *addrs, size_t naddrs, char *detail,
	    size_t detaillen);

#endif /* ENID_NETD_SNAT_H */
