/*
 * netd's side of rtnetlink, through libnl-route-3: two sockets opened
 * before the privilege drop (one for requests and dumps, one subscribed to
 * link events), snapshots into plain structs for the planner, and the
 * application of a plan.  Errors are negative errno values.
 */
#ifndef ENID_NETD_KERNEL_H
#define ENID_NETD_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "msg.h"
#include "plan.h"

struct nl_sock;
struct nl_cb;

struct kernel {
	struct nl_sock	*req;		/* requests and dumps */
	struct nl_sock	*ev;		/* RTNLGRP_LINK notifications */
	struct nl_cb	*ev_cb;		/* its callbacks */
};

typedef void	(*kernel_link_cb)(const struct msg_netd_link *, void *);
typedef void	(*kernel_rule_cb)(const struct nd_rule *, void *);
typedef void	(*kernel_route_cb)(const struct nd_route *, void *);

/* Open both sockets; 0, or -1 with err set. */
int	kernel_open(struct kernel *k, char *err, size_t errlen);
int	kernel_event_fd(const struct kernel *k);

/*
 * Read pending link events, calling cb for each new or changed link.  Sets
 * *overrun if the kernel dropped events (then every waiter must re-check).
 * Returns 0 or a negative errno.
 */
int	kernel_read_events(struct kernel *k, kernel_link_cb cb, void *arg,
	    bool *overrun);

/* Every link, for dumps; the link with this MAC (lowest ifindex if several):
 * 1 found, 0 not, or a negative errno. */
int	kernel_each_link(struct kernel *k, kernel_link_cb cb, void *arg);
int	kernel_find_link(struct kernel *k, const uint8_t mac[6],
	    struct msg_netd_link *out);

/* Every link holding the IPv4 address addr, as for dumps (a link gone
 * meanwhile is skipped): 0, or a negative errno. */
int	kernel_each_addr_holder(struct kernel *k, uint32_t addr,
	    kernel_link_cb cb, void *arg);

/* Every IPv4 "lookup" rule at one of the given priorities. */
int	kernel_each_rule(struct kernel *k, uint32_t prio_a, uint32_t prio_b,
	    kernel_rule_cb cb, void *arg);
/* Every IPv4 unicast route in table. */
int	kernel_each_route(struct kernel *k, uint32_t table, kernel_route_cb cb,
	    void *arg);

/*
 * Apply a plan in order, stopping at the first failure; adds of what is
 * there and deletes of what is not count as done.  Returns 0, or a
 * negative errno with err naming the failed operation.
 */
int	kernel_apply(struct kernel *k, const struct nd_plan *plan, char *err,
	    size_t errlen);

#endif /* ENID_NETD_KERNEL_H */
