/*
 * enidctl node-setup: the node's IPv6 settings that enid checks at start
 * (broker/prereq.c) and cannot make itself, written through /proc/sys by
 * root before enid starts (the DaemonSet's init container, the unit's
 * ExecStartPre).  The uplink it sets accept_ra on is the link of the
 * node's default route, or the one named.
 */
#ifndef ENID_NODESETUP_H
#define ENID_NODESETUP_H

#include <net/if.h>

/*
 * Pure.  The uplink from the texts of /proc/net/route (route4: the main
 * table's IPv4 routes) and /proc/net/ipv6_route (route6: every table's
 * IPv6 routes): the link of the IPv4 default route of least metric, else
 * of the IPv6 one (::/0, not a reject route).  0 with name set, and from
 * set to which file said so; -1 with why set when there is none, or when
 * two links tie for the least metric (the kernel would use either).
 */
int	nodesetup_uplink(const char *route4, const char *route6,
	    char name[IF_NAMESIZE], const char **from, char *why,
	    size_t whylen);

/* Where the kernel's settings are, unless --proc-sys says. */
#define NODESETUP_PROCSYS	"/proc/sys"

/*
 * Set the settings for the configuration at config_path (uplink NULL:
 * found as above) under procsys, a proc file system's sys directory: a
 * container's own /proc/sys is read-only, the host's may be mounted
 * elsewhere.  Returns the exit status: 0 done (or nothing to do), 1
 * failed; each failure is reported on stderr.
 */
int	nodesetup_run(const char *config_path, const char *uplink,
	    const char *procsys);

#endif /* ENID_NODESETUP_H */
