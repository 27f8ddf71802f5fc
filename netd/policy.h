/*
 * netd's policy: what the broker may ask of it.  Fixed at start (table range
 * and rule priorities from netd's own read of the configuration; VPC CIDRs
 * and the primary MAC from the one NETD_POLICY message), plus the ENIs the
 * broker has declared (MAC -> table).  Every check is a pure function that
 * returns NULL when the request is acceptable, or a static reason.
 */
#ifndef ENID_NETD_POLICY_H
#define ENID_NETD_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "conf.h"
#include "msg.h"

#define NETD_MAX_ENIS		CONF_TABLE_SPAN	/* one table each */
/* EC2 VPC CIDR blocks are /16 to /28. */
#define NETD_MIN_VPC_PREFIX	16
#define NETD_MAX_VPC_PREFIX	28
#define NETD_MTU_MIN		576
#define NETD_MTU_MAX		9216
#define NETD_MAX_DEADLINE_MS	(10 * 60 * 1000)

/* Reserved tables: unspec, default, main, local. */
#define NETD_TABLE_UNSPEC	0
#define NETD_TABLE_DEFAULT	253
#define NETD_TABLE_MAIN		254
#define NETD_TABLE_LOCAL	255

struct netd_eni {
	uint8_t		mac[6];
	uint32_t	table;
};

struct netd_policy {
	uint32_t	table_lo;	/* allowed tables: [table_lo, table_hi) */
	uint32_t	table_hi;
	uint32_t	prio_to;	/* "to POD lookup main" */
	uint32_t	prio_from;	/* "from POD lookup T" */

	bool		vpc_set;	/* NETD_POLICY received */
	uint8_t		primary_mac[6];
	uint32_t	ncidrs;
	struct msg_cidr	cidrs[MSG_MAX_CIDRS];

	uint32_t	nenis;
	struct netd_eni	enis[NETD_MAX_ENIS];
};

void		 policy_init(struct netd_policy *p,
		    const struct enid_config *cfg);
/* Take the broker's NETD_POLICY; NULL, or why it is unusable. */
const char	*policy_set_vpc(struct netd_policy *p,
		    const struct msg_netd_policy *m);

bool		 policy_table_allowed(const struct netd_policy *p,
		    uint32_t table);
bool		 policy_in_vpc(const struct netd_policy *p, uint32_t addr);
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
 * The address a pod or an ENI setup names (with its table) is configured on
 * a link with this MAC, other than the ENI's own: refused if that is the
 * primary interface, or a declared ENI bound to another table, since rules
 * or an address there would steer the node's own traffic.
 */
const char	*policy_check_addr_holder(const struct netd_policy *p,
		    const uint8_t holder_mac[6], uint32_t table);

/* Apply a checked declare/forget.  Both are idempotent. */
void		 policy_declare(struct netd_policy *p,
		    const struct msg_netd_eni *m);
void		 policy_forget(struct netd_policy *p,
		    const struct msg_netd_eni *m);

#endif /* ENID_NETD_POLICY_H */
