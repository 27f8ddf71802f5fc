/*
 * netd's side of rtnetlink, through libnl-route-3: four sockets opened
 * before the privilege drop (one for requests, one strictly checked for
 * netd's own dumps, which the kernel then filters by link, table or
 * family, one subscribed to link, address and route events, and one to
 * rule events, which keep netd's view of the rules), snapshots into
 * plain structs for the policy and the planner, and the application of a
 * plan.  Errors are negative errno values.
 */
#ifndef ENID_NETD_KERNEL_H
#define ENID_NETD_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "msg.h"
#include "plan.h"
#include "policy.h"

struct nl_sock;
struct nl_cb;
struct kernel_link;

struct kernel {
	struct nl_sock	*req;		/* requests, libnl's caches */
	struct nl_sock	*dump;		/* netd's own dumps, strictly checked */
	struct nl_sock	*ev;		/* link, address, route notifications */
	struct nl_cb	*ev_cb;		/* its callbacks */
	struct nl_cb	*dump_cb;	/* callbacks of netd's own dumps */
	struct nl_sock	*rule_ev;	/* rule notifications, both families */

	/* What netd's own dumps collect before handing it out; kept and
	 * reused, so a dump allocates only when the kernel holds more than
	 * ever before. */
	struct nd_rule	*rules;
	size_t		 nrules, rules_cap;
	/*
	 * rules is the rule view: the lookup rules at priorities rules_prio
	 * as a dump would show them now, kept from one dump and the rule
	 * notifications read since (kernel_each_rule()).  rules_current
	 * false: no view, the next use dumps.
	 */
	bool		 rules_current;
	bool		 rules_doubt;	/* a notification the view cannot take */
	bool		 rules_prio_set;
	uint32_t	 rules_prio[2];
	/* Times rule notifications were lost (the socket overran) and the
	 * view was dumped again: for netd's log. */
	unsigned long	 rules_lost;
	/*
	 * The view's index, kept with it (kernel_pod_rules()): its rules
	 * that name a host address (a full-length from or to) by that
	 * address, in an open-addressed table; how many of its rules each
	 * counted class of rules_class's holds; and the rules of the class
	 * set aside, which every pod request is shown.
	 */
	struct kernel_rule_slot *rix;
	size_t		 rix_cap, rix_used, rix_dead;
	unsigned	(*rules_class)(const struct nd_rule *, void *);
	void		*rules_class_arg;
	uint32_t	 rules_count[2];
	struct nd_rule	*aside;
	size_t		 naside, aside_cap;
	struct nd_ifaddr *addrs;
	size_t		 naddrs, addrs_cap;
	/*
	 * aview is the address view: every address of every link and
	 * family, as a dump would show it now, kept from one dump and the
	 * address notifications the event socket brings (kernel_each_addr()
	 * of every link).  aview_current false: no view, the next use
	 * dumps.
	 */
	struct nd_ifaddr *aview;
	size_t		 naview, aview_cap;
	bool		 aview_current;
	/* An IPv4 peer address seen since the view's dump: an IPv4
	 * removal may be of either of two addresses the view keeps once. */
	bool		 aview_peers;
	/* An overrun seen and the event socket not read empty since; one
	 * seen by a look, not reported yet (events_unread()). */
	bool		 ev_congested, ev_lost;
	struct kernel_link *links;
	size_t		 nlinks, links_cap;
	/* links is the kernel's: filled by a whole dump, and no link event
	 * (or a lost one) read since.  Used again only while the event
	 * socket holds nothing unread (links_dump()). */
	bool		 links_current;
	struct nd_route	*routes;
	size_t		 nroutes, routes_cap;
};

typedef void	(*kernel_link_cb)(const struct msg_netd_link *, void *);
typedef void	(*kernel_rule_cb)(const struct nd_rule *, void *);
typedef void	(*kernel_route_cb)(const struct nd_route *, void *);
typedef void	(*kernel_addr_cb)(const struct nd_ifaddr *, void *);

/* What the event socket reports. */
struct kernel_events {
	kernel_link_cb	 link;		/* a link appeared or changed */
	/* Something the node's own links depend on changed: an address on
	 * link ifindex, or (ifindex 0) a default route of the main table. */
	void		(*node)(uint32_t ifindex, void *);
	void		*arg;
};

/* Open both sockets; 0, or -1 with err set. */
int	kernel_open(struct kernel *k, char *err, size_t errlen);
int	kernel_event_fd(const struct kernel *k);

/*
 * Read pending events, calling the callbacks.  Sets *overrun if the kernel
 * dropped events (then every waiter must re-check, and the node's own
 * links be read again).  Returns 0 or a negative errno.
 */
int	kernel_read_events(struct kernel *k, const struct kernel_events *ev,
	    bool *overrun);

/* Every link, for dumps; the link with this MAC (lowest ifindex if several):
 * 1 found, 0 not, or a negative errno.  With st, the same read fills the
 * half of the found link's state that the other links make (its master,
 * its slaves, others with its MAC); kernel_link_contents() adds the rest. */
int	kernel_each_link(struct kernel *k, kernel_link_cb cb, void *arg);
int	kernel_find_link(struct kernel *k, const uint8_t mac[6],
	    struct msg_netd_link *out, struct nd_link_state *st);
/* The link with this ifindex: 1 found, 0 not, or a negative errno. */
int	kernel_get_link(struct kernel *k, uint32_t ifindex,
	    struct msg_netd_link *out);

/*
 * Every address of family (0: every family) on link ifindex (0: every
 * link, lo included), with its IFA_PROTO tag: 0, or a negative errno.
 * One link's are dumped; every link's come from the address view, which
 * the event socket's notifications keep (kernel_read_events()): the
 * caller reads the socket just before, and a view with notifications
 * still unread, lost, or none yet is dumped again first.
 */
int	kernel_each_addr(struct kernel *k, uint8_t family, uint32_t ifindex,
	    kernel_addr_cb cb, void *arg);
/* Drop the address view: the next use dumps (kernel_rules_forget()'s
 * twin, for the broker's reconciliation). */
void	kernel_addrs_forget(struct kernel *k);

/*
 * Every "lookup" rule of either family at one of the given priorities,
 * netd's or not: each with its protocol and whether it has selectors netd
 * never sets.  Read from the rule view, which is first brought up to date
 * with every rule notification the kernel has queued (a change's
 * notification is queued before its ack, so the view is what a dump
 * would show now); dumped again when there is none yet, it was kept for
 * other priorities, or notifications were lost or could not be applied.
 */
int	kernel_each_rule(struct kernel *k, uint32_t prio_a, uint32_t prio_b,
	    kernel_rule_cb cb, void *arg);
/*
 * The classes of the view's index: a rule the class function puts in
 * KERNEL_RULE_COUNT(i) (i 0 or 1) is counted in counts[i], one in
 * KERNEL_RULE_ASIDE is shown to every kernel_pod_rules().  Set once,
 * before the first use of the view (a rule's class is taken as it comes
 * into the view).
 */
#define KERNEL_RULE_COUNT(i)	(1u << (i))
#define KERNEL_RULE_ASIDE	(1u << 2)
void	kernel_rules_classify(struct kernel *k,
	    unsigned (*cls)(const struct nd_rule *, void *), void *arg);
/*
 * kernel_each_rule() for one pod's addresses (addrs, n of them; one of
 * family 0 is none): the rules at prio_a or prio_b whose from or to is
 * exactly one of the addresses (full length), and every rule set aside,
 * each once, from the view's index instead of a walk of every rule; with
 * counts[] the view's counts of each counted class.
 */
int	kernel_pod_rules(struct kernel *k, uint32_t prio_a, uint32_t prio_b,
	    const struct ip_addr *addrs, size_t n, kernel_rule_cb cb,
	    void *arg, uint32_t counts[2]);
/* Drop the rule view: the next kernel_each_rule() dumps.  For the
 * broker's reconciliation, so that a view gone wrong in a way netd did
 * not see (see kernel.c, rules_sync()) lasts one reconciliation at most. */
void	kernel_rules_forget(struct kernel *k);
/* Every IPv4 route in table, netd's or not, of every type (nd_route's
 * type: unicast, blackhole, unreachable, prohibit...). */
int	kernel_each_route(struct kernel *k, uint32_t table, kernel_route_cb cb,
	    void *arg);

/* One link's addresses and the routes through it, in every table and
 * family, and whether it has a master, is one or shares its MAC, to judge
 * whether netd may take it over: 0, -ENODEV if it is gone, or another
 * negative errno.  kernel_link_contents() reads the addresses and routes
 * alone, for the link st->ifindex whose other half kernel_find_link()
 * filled. */
int	kernel_link_state(struct kernel *k, uint32_t ifindex,
	    struct nd_link_state *out);
int	kernel_link_contents(struct kernel *k, struct nd_link_state *st);

/* The link a pod's host route names, by name: 0 (out->found says
 * whether there is one), or a negative errno. */
int	kernel_pod_link(struct kernel *k, const char *name,
	    struct nd_pod_link *out);
/* Every main-table "ADDR/32 dev DEV scope link" route (unicast, one next
 * hop, no gateway): 0, or a negative errno. */
typedef void	(*kernel_host_route_cb)(const struct msg_netd_route *, void *);
int	kernel_each_host_route(struct kernel *k, kernel_host_route_cb cb,
	    void *arg);

/* The node's own links (every next hop of the main table's default routes,
 * IPv4 and IPv6) with their MACs and IPv4 default gateways, and their IPv4
 * addresses: 0, or a negative errno. */
int	kernel_node_scan(struct kernel *k, struct netd_node *out);

/*
 * Apply a plan in order, stopping at the first failure; adds of what is
 * there and deletes of what is not count as done.  Returns 0, or a
 * negative errno with err naming the failed operation.
 */
int	kernel_apply(struct kernel *k, const struct nd_plan *plan, char *err,
	    size_t errlen);

#endif /* ENID_NETD_KERNEL_H */
