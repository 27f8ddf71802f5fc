/*
 * The node's IPv6 prerequisites (ip_family dual or ipv6): kernel settings
 * enid needs and cannot make.  They are /proc/sys writes (netlink sets no
 * IPv6 device sysctl), and enid-netd, the one process with a capability,
 * may write no file.  So the broker reads them at its start, before the
 * privilege drop and the filter, and judges them once the cloud has named
 * the primary interface: each one wrong is a line naming the setting and
 * the command that sets it, and enid does not start.
 *
 * The trap this is for: with forwarding on (pods are routed), Linux
 * ignores router advertisements on a link whose accept_ra is not 2, and
 * the node loses its IPv6 default route, learned from the VPC router's
 * advertisements on the primary interface, when the current one expires.
 *
 * The links are read from sysfs (class/net/NAME/address), which shows the
 * network namespace sysfs was mounted for: the node's, under systemd, a
 * hostNetwork pod and `ip netns exec`.
 */
#ifndef ENID_PREREQ_H
#define ENID_PREREQ_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A node's links at start: its ENIs and the pods' veths.  More are not
 * read (the primary interface then may not be found: refused). */
#define PREREQ_MAX_LINKS	1024
#define PREREQ_MAX_LINKS_STR	"1024"
#define PREREQ_LINE_LEN		320
#define PREREQ_MAX_LINES	8

struct prereq_link {
	uint8_t		mac[6];
	char		name[IF_NAMESIZE];
	int		accept_ra;	/* -1: not read */
	int		disable_ipv6;	/* -1: not read */
};

struct prereq {
	bool		ipv6;		/* the kernel has IPv6 (net/ipv6) */
	int		all_forwarding;		/* -1: not read */
	int		all_disable_ipv6;
	int		default_disable_ipv6;
	bool		truncated;	/* more links than were read */
	uint32_t	nlinks;
	struct prereq_link links[PREREQ_MAX_LINKS];
};

/*
 * Read the settings under procsys ("/proc/sys") and the links under
 * classnet ("/sys/class/net").  What cannot be read is left -1 (and
 * judged as wrong, naming it); the read itself never fails.
 */
void	prereq_read(struct prereq *p, const char *procsys,
	    const char *classnet);

/*
 * Pure.  What is wrong for pods of family (enum ip_family, not ipv4)
 * with the primary interface's MAC: up to max lines, each naming a
 * setting, what it is, why it matters, and the command that sets it.
 * Returns how many are wrong (possibly more than max).
 */
size_t	prereq_judge(const struct prereq *p, int family,
	    const uint8_t primary_mac[6], char lines[][PREREQ_LINE_LEN],
	    size_t max);

#endif /* ENID_PREREQ_H */
