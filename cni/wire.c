/*
 * The pod's wiring through libnl-route-3 (see wire.h).
 *
 * What a pod gets, in the main role:
 *   node:  <prefix><hash> --veth-- CNI_IFNAME  :pod
 *          (the host end's accept_ra 0 before it is up: a pod's router
 *          advertisement never reaches the node's routes)
 *   IPv4
 *   pod:   ADDR/32 on CNI_IFNAME; 169.254.1.1 dev CNI_IFNAME scope link;
 *          default via 169.254.1.1; neighbour 169.254.1.1 lladdr <host
 *          end's MAC> nud permanent
 *   node:  ADDR/32 dev <host end> scope link
 *   IPv6
 *   pod:   disable_ipv6 0 on CNI_IFNAME and lo, accept_dad 0;
 *          ADDR6/128 nodad on CNI_IFNAME; fe80::1 dev CNI_IFNAME;
 *          default via fe80::1; neighbour fe80::1 lladdr <host end's MAC>
 *          nud permanent
 *   node:  disable_ipv6 0 on the host end; ADDR6/128 dev <host end>;
 *          neighbour ADDR6 lladdr <pod's MAC> nud permanent
 * The pod never ARPs nor solicits for its gateway (the entry is
 * permanent), so the host end needs no address and no proxy_arp; the node
 * ARPs for the pod's IPv4 address on the host end, which the pod answers
 * as for any of its own, and has a permanent entry for its IPv6 one.  No
 * address waits on duplicate address detection: an ADD never waits the
 * seconds DAD takes.  The two families take the same code path; the
 * kernel calls differ only by family.
 *
 * Every change is a replace, so running the same wiring twice is harmless.
 * The request libnl has no object for (a namespace id by file descriptor)
 * is built by hand: one reply, then the ack.  The IPAM role's one question
 * (the node's source address toward the gateway) needs no netlink at all.
 */
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/magic.h>
#include <linux/neighbour.h>
#include <linux/net_namespace.h>
#include <linux/nsfs.h>
#include <linux/rtnetlink.h>

#include <netlink/netlink.h>
#include <netlink/msg.h>
#include <netlink/socket.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/neighbour.h>
#include <netlink/route/route.h>
#include <linux/fib_rules.h>

#include "addr.h"
#include "msg.h"
#include "wire.h"

#define WIRE_DUMP_TRIES	4	/* a dump the kernel says was interrupted */

static struct nl_sock *
sock_open(char *err, size_t errlen)
{
	struct nl_sock *sk;
	int rc;

	if ((sk = nl_socket_alloc()) == NULL) {
		snprintf(err, errlen, "netlink: out of memory");
		return NULL;
	}
	if ((rc = nl_connect(sk, NETLINK_ROUTE)) < 0) {
		snprintf(err, errlen, "netlink: connect: %s", nl_geterror(rc));
		nl_socket_free(sk);
		return NULL;
	}
	return sk;
}

int
wire_open(struct wire *w, char *err, size_t errlen)
{
	memset(w, 0, sizeof(*w));
	w->podns = -1;
	if ((w->hostns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) ==
	    -1) {
		snprintf(err, errlen, "opening the node's network namespace: "
		    "%s", strerror(errno));
		return -1;
	}
	if ((w->host = sock_open(err, errlen)) == NULL) {
		close(w->hostns);
		w->hostns = -1;
		return -1;
	}
	return 0;
}

void
wire_close(struct wire *w)
{
	if (w->pod != NULL)
		nl_socket_free(w->pod);
	if (w->host != NULL)
		nl_socket_free(w->host);
	if (w->podns >= 0)
		close(w->podns);
	if (w->hostns >= 0)
		close(w->hostns);
	w->pod = w->host = NULL;
	w->podns = w->hostns = -1;
}

int
wire_open_pod(struct wire *w, const char *path, char *err, size_t errlen)
{
	struct statfs sfs;
	struct stat st, hst;
	int fd, type;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "CNI_NETNS %s: %s", path,
		    strerror(errno));
		return errno == ENOENT ? WIRE_NS_GONE : WIRE_NS_BAD;
	}
	/* A namespace file lives on nsfs; ask it which kind it is. */
	if (fstatfs(fd, &sfs) == -1 || sfs.f_type != NSFS_MAGIC) {
		snprintf(err, errlen, "CNI_NETNS %s is not a namespace file",
		    path);
		close(fd);
		return WIRE_NS_BAD;
	}
	if ((type = ioctl(fd, NS_GET_NSTYPE)) != CLONE_NEWNET) {
		snprintf(err, errlen, "CNI_NETNS %s is not a network namespace",
		    path);
		close(fd);
		return WIRE_NS_BAD;
	}
	if (fstat(fd, &st) == -1 || fstat(w->hostns, &hst) == -1) {
		snprintf(err, errlen, "CNI_NETNS %s: fstat: %s", path,
		    strerror(errno));
		close(fd);
		return WIRE_NS_FAIL;
	}
	if (st.st_dev == hst.st_dev && st.st_ino == hst.st_ino) {
		snprintf(err, errlen, "CNI_NETNS %s is the node's own network "
		    "namespace", path);
		close(fd);
		return WIRE_NS_BAD;
	}
	/* A netlink socket belongs to the namespace it was made in. */
	if (setns(fd, CLONE_NEWNET) == -1) {
		snprintf(err, errlen, "entering CNI_NETNS %s: %s", path,
		    strerror(errno));
		close(fd);
		return WIRE_NS_FAIL;
	}
	w->pod = sock_open(err, errlen);
	if (setns(w->hostns, CLONE_NEWNET) == -1) {
		/* Anything done now would land in the pod: stop here. */
		fprintf(stderr, "enid-cni: cannot return to the node's network "
		    "namespace: %s\n", strerror(errno));
		abort();
	}
	if (w->pod == NULL) {
		close(fd);
		return WIRE_NS_FAIL;
	}
	w->podns = fd;
	return 0;
}

/* ---- requests libnl has no object for ---- */

struct one_reply {
	int		(*parse)(struct nlmsghdr *, void *);
	void		*arg;
	int		 rc;
	bool		 seen;
};

static int
one_valid(struct nl_msg *msg, void *arg)
{
	struct one_reply *r = arg;

	if (!r->seen) {
		r->seen = true;
		r->rc = r->parse(nlmsg_hdr(msg), r->arg);
	}
	return NL_STOP;
}

/* Send m (consumed) and read its one reply, then the ack. */
static int
request_one(struct nl_sock *sk, struct nl_msg *m,
    int (*parse)(struct nlmsghdr *, void *), void *arg)
{
	struct one_reply r = { parse, arg, -NLE_OBJ_NOTFOUND, false };
	struct nl_cb *cb;
	int rc;

	if ((cb = nl_cb_alloc(NL_CB_DEFAULT)) == NULL) {
		nlmsg_free(m);
		return -NLE_NOMEM;
	}
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, one_valid, &r);
	rc = nl_send_auto(sk, m);
	nlmsg_free(m);
	if (rc >= 0)
		rc = nl_recvmsgs(sk, cb);
	if (rc >= 0)
		rc = nl_wait_for_ack(sk);
	nl_cb_put(cb);
	return rc < 0 ? rc : r.rc;
}

static int
parse_nsid(struct nlmsghdr *h, void *arg)
{
	struct nlattr *tb[NETNSA_MAX + 1];

	if (h->nlmsg_type != RTM_NEWNSID ||
	    nlmsg_parse(h, sizeof(struct rtgenmsg), tb, NETNSA_MAX,
	    NULL) < 0 || tb[NETNSA_NSID] == NULL)
		return -NLE_NOATTR;
	*(int32_t *)arg = (int32_t)nla_get_u32(tb[NETNSA_NSID]);
	return 0;
}

int
wire_peer_in_pod(struct wire *w, const struct wire_link *host, char *err,
    size_t errlen)
{
	struct rtgenmsg g = { .rtgen_family = AF_UNSPEC };
	struct nl_msg *m;
	int32_t nsid = NETNSA_NSID_NOT_ASSIGNED;
	int rc;

	if (!host->have_nsid)
		return 0;	/* its peer is in the node's namespace */
	if ((m = nlmsg_alloc_simple(RTM_GETNSID, NLM_F_REQUEST)) == NULL ||
	    nlmsg_append(m, &g, sizeof(g), NLMSG_ALIGNTO) < 0 ||
	    nla_put_u32(m, NETNSA_FD, (uint32_t)w->podns) < 0) {
		nlmsg_free(m);
		snprintf(err, errlen, "netlink: out of memory");
		return -1;
	}
	if ((rc = request_one(w->host, m, parse_nsid, &nsid)) < 0) {
		snprintf(err, errlen, "the id of CNI_NETNS in the node's "
		    "namespace: %s", nl_geterror(rc));
		return -1;
	}
	/* An unassigned id cannot be the one the peer link reported. */
	return nsid != NETNSA_NSID_NOT_ASSIGNED && nsid == host->nsid;
}

/*
 * A UDP socket's connect() does the kernel's output route lookup for dst
 * and takes the source address it picks, as RTM_GETROUTE's RTA_PREFSRC
 * would report it; it sends nothing.  No netlink socket, no namespace
 * file: the IPAM role needs nothing else from the kernel.
 */
int
wire_source_toward(const struct ip_addr *dst, struct ip_addr *src, char *err,
    size_t errlen)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	socklen_t len;
	char ip[IP_ADDR_STR_LEN];
	const char *why = NULL;
	int fd = -1, saved;

	memset(src, 0, sizeof(*src));
	memset(&ss, 0, sizeof(ss));
	if (dst->family == AF_INET6) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(9);	/* any: nothing is sent */
		memcpy(&sin6->sin6_addr, dst->bytes, 16);
		len = sizeof(*sin6);
	} else {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(9);
		memcpy(&sin->sin_addr, dst->bytes, 4);
		len = sizeof(*sin);
	}
	if ((fd = socket(dst->family, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		why = "socket";
	else if (connect(fd, (struct sockaddr *)&ss, len) == -1)
		why = "route lookup";
	else if (getsockname(fd, (struct sockaddr *)&ss, &len) == -1)
		why = "getsockname";
	saved = errno;
	if (fd != -1)
		close(fd);
	if (why == NULL && (dst->family == AF_INET6 ?
	    ip_addr_from_bytes(src, AF_INET6, &sin6->sin6_addr, 16) :
	    ip_addr_from_bytes(src, AF_INET, &sin->sin_addr, 4)) == -1)
		why = "getsockname";
	if (why == NULL && ip_addr_is_unspecified(src)) {
		why = "route lookup";
		saved = EADDRNOTAVAIL;
	}
	if (why != NULL) {
		ip_addr_format(dst, ip);
		snprintf(err, errlen, "the node's source address toward %s: "
		    "%s: %s", ip, why, strerror(saved));
		return -1;
	}
	return 0;
}

/* ---- sysctls ---- */

/*
 * Writes value to /proc/sys/net/<key> of the node's namespace or the
 * pod's: a /proc/sys/net file belongs to the namespace of the process
 * that opens it, so the pod's is opened from inside it, like the pod's
 * netlink socket.  IPv6 device settings have no netlink attribute.  0,
 * 1 when the file does not exist (absent_ok: the kernel has no IPv6),
 * -1 with err set.
 */
static int
sysctl_write(struct wire *w, bool in_pod, const char *key, const char *value,
    bool absent_ok, char *err, size_t errlen)
{
	char path[128];
	size_t len = strlen(value);
	int fd, saved;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/sys/net/%s", key);
	if (in_pod && setns(w->podns, CLONE_NEWNET) == -1) {
		snprintf(err, errlen, "entering the pod's namespace to set %s: "
		    "%s", key, strerror(errno));
		return -1;
	}
	fd = open(path, O_WRONLY | O_CLOEXEC);
	saved = errno;
	if (in_pod && setns(w->hostns, CLONE_NEWNET) == -1) {
		/* Anything done now would land in the pod: stop here. */
		fprintf(stderr, "enid-cni: cannot return to the node's network "
		    "namespace: %s\n", strerror(errno));
		abort();
	}
	if (fd == -1 && saved == ENOENT && absent_ok)
		return 1;
	if (fd == -1) {
		snprintf(err, errlen, "setting %s in the %s namespace: %s", key,
		    in_pod ? "pod's" : "node's", strerror(saved));
		return -1;
	}
	n = write(fd, value, len);
	saved = errno;
	close(fd);
	if (n != (ssize_t)len) {
		snprintf(err, errlen, "setting %s to %s in the %s namespace: %s",
		    key, value, in_pod ? "pod's" : "node's",
		    n == -1 ? strerror(saved) : "a short write");
		return -1;
	}
	return 0;
}

/* ---- links ---- */

static void
link_fill(struct rtnl_link *link, struct wire_link *l)
{
	struct nl_addr *a = rtnl_link_get_addr(link);
	const char *type = rtnl_link_get_type(link);

	memset(l, 0, sizeof(*l));
	l->ifindex = rtnl_link_get_ifindex(link);
	snprintf(l->name, sizeof(l->name), "%s", rtnl_link_get_name(link));
	if (a != NULL && nl_addr_get_len(a) == 6)
		memcpy(l->mac, nl_addr_get_binary_addr(a), 6);
	l->mtu = rtnl_link_get_mtu(link);
	l->up = (rtnl_link_get_flags(link) & IFF_UP) != 0;
	l->veth = type != NULL && strcmp(type, "veth") == 0;
	l->peer_ifindex = rtnl_link_get_link(link);
	l->have_nsid = rtnl_link_get_link_netnsid(link, &l->nsid) == 0;
}

int
wire_get_link(struct wire *w, bool in_pod, const char *name,
    struct wire_link *l, char *err, size_t errlen)
{
	struct rtnl_link *link = NULL;
	int rc;

	rc = rtnl_link_get_kernel(in_pod ? w->pod : w->host, 0, name, &link);
	if (rc == -NLE_OBJ_NOTFOUND || rc == -NLE_NODEV)
		return 0;
	if (rc < 0) {
		snprintf(err, errlen, "looking up %s in the %s namespace: %s",
		    name, in_pod ? "pod's" : "node's", nl_geterror(rc));
		return -1;
	}
	link_fill(link, l);
	rtnl_link_put(link);
	return 1;
}

/* Brings one end of the pair up. */
static int
link_up(struct wire *w, bool in_pod, const char *ifname, char *err,
    size_t errlen)
{
	struct rtnl_link *orig, *change;
	struct wire_link l;
	int rc;

	if ((rc = wire_get_link(w, in_pod, ifname, &l, err, errlen)) != 1) {
		if (rc == 0)
			snprintf(err, errlen, "%s vanished from the %s "
			    "namespace as it was made", ifname, in_pod ?
			    "pod's" : "node's");
		return -1;
	}
	orig = rtnl_link_alloc();
	change = rtnl_link_alloc();
	if (orig == NULL || change == NULL) {
		rtnl_link_put(orig);
		rtnl_link_put(change);
		snprintf(err, errlen, "netlink: out of memory");
		return -1;
	}
	rtnl_link_set_ifindex(orig, l.ifindex);
	rtnl_link_set_flags(change, IFF_UP);
	rc = rtnl_link_change(in_pod ? w->pod : w->host, orig, change, 0);
	rtnl_link_put(change);
	rtnl_link_put(orig);
	if (rc < 0) {
		snprintf(err, errlen, "bringing %s up in the %s: %s", ifname,
		    in_pod ? "pod" : "node", nl_geterror(rc));
		return -1;
	}
	return 0;
}

int
wire_veth_add(struct wire *w, const char *host, const char *ifname,
    uint32_t mtu, char *err, size_t errlen)
{
	struct rtnl_link *link, *peer;
	struct wire_link l;
	int rc;

	if ((link = rtnl_link_veth_alloc()) == NULL) {
		snprintf(err, errlen, "netlink: out of memory");
		return -1;
	}
	peer = rtnl_link_veth_get_peer(link);
	rtnl_link_set_name(link, host);
	rtnl_link_set_name(peer, ifname);
	/*
	 * Both ends come up after the pair is made: the host end once it
	 * takes no router advertisement (below), the pod's after it, as a
	 * veth without its peer refuses to open.
	 */
	if (mtu > 0) {
		rtnl_link_set_mtu(link, mtu);
		rtnl_link_set_mtu(peer, mtu);
	}
	/* Made with its final name right in the pod: no rename, no move. */
	rtnl_link_set_ns_fd(peer, w->podns);
	rtnl_link_put(peer);
	rc = rtnl_link_add(w->host, link, NLM_F_CREATE | NLM_F_EXCL);
	rtnl_link_veth_release(link);
	if (rc == 0) {
		char scratch[128], key[64];

		/*
		 * A pod may send router advertisements, for either family
		 * of address it is given: the node must never take a route
		 * or an address from one.  Before the link is up, so that
		 * not even the first is heard.  A kernel without IPv6 has
		 * nothing to take them with.
		 */
		snprintf(key, sizeof(key), "ipv6/conf/%s/accept_ra", host);
		if (sysctl_write(w, false, key, "0", true, err, errlen) >= 0 &&
		    link_up(w, false, host, err, errlen) == 0 &&
		    link_up(w, true, ifname, err, errlen) == 0)
			return 0;
		/* What it made goes with the failure. */
		(void)wire_link_del(w, host, scratch, sizeof(scratch));
		return -1;
	}
	if (rc == -NLE_EXIST && wire_get_link(w, false, host, &l, err,
	    errlen) == 1)
		snprintf(err, errlen, "creating the veth pair: %s already "
		    "exists in the node's namespace", host);
	else if (rc == -NLE_EXIST)
		snprintf(err, errlen, "creating the veth pair: %s already "
		    "exists in the pod's namespace", ifname);
	else
		snprintf(err, errlen, "creating the veth pair %s/%s: %s", host,
		    ifname, nl_geterror(rc));
	return -1;
}

int
wire_link_del(struct wire *w, const char *name, char *err, size_t errlen)
{
	struct rtnl_link *link;
	int rc;

	if ((link = rtnl_link_alloc()) == NULL) {
		snprintf(err, errlen, "netlink: out of memory");
		return -1;
	}
	rtnl_link_set_name(link, name);
	rc = rtnl_link_delete(w->host, link);
	rtnl_link_put(link);
	if (rc == 0 || rc == -NLE_OBJ_NOTFOUND || rc == -NLE_NODEV)
		return 0;
	snprintf(err, errlen, "deleting %s: %s", name, nl_geterror(rc));
	return -1;
}

/* ---- addresses, routes, neighbours ---- */

/* libnl's form of a, with a prefix length. */
static struct nl_addr *
nla(const struct ip_addr *a, int prefix)
{
	struct nl_addr *n = nl_addr_build(a->family, a->bytes,
	    ip_family_bits(a->family) / 8);

	if (n != NULL)
		nl_addr_set_prefixlen(n, prefix);
	return n;
}

/* The all-zero address of a family: a default route's destination. */
static struct ip_addr
any_of(int family)
{
	struct ip_addr a;

	memset(&a, 0, sizeof(a));
	a.family = (uint8_t)family;
	return a;
}

/* ip as a host prefix (/32, /128).  No IPv6 address waits on duplicate
 * address detection (IFA_F_NODAD): nothing else may hold a pod's. */
static int
addr_add(struct nl_sock *sk, int ifindex, const struct ip_addr *ip)
{
	struct rtnl_addr *a;
	struct nl_addr *local;
	int rc;

	if ((a = rtnl_addr_alloc()) == NULL || (local = nla(ip,
	    (int)ip_family_bits(ip->family))) == NULL) {
		rtnl_addr_put(a);
		return -NLE_NOMEM;
	}
	rtnl_addr_set_ifindex(a, ifindex);
	if (ip->family == AF_INET6)
		rtnl_addr_set_flags(a, IFA_F_NODAD);
	rc = rtnl_addr_set_local(a, local);
	nl_addr_put(local);
	if (rc == 0)
		rc = rtnl_addr_add(sk, a, NLM_F_REPLACE);
	rtnl_addr_put(a);
	return rc;
}

static bool	host_route_is_own(struct wire *, const struct ip_addr *, int);

/* dst/len dev ifindex [via gw]; no gateway (NULL) makes it scope link. */
static int
route_add(struct nl_sock *sk, const struct ip_addr *dst, int len,
    int ifindex, const struct ip_addr *gw, int flags)
{
	struct rtnl_route *r;
	struct rtnl_nexthop *nh;
	struct nl_addr *d = NULL, *g = NULL;
	int rc = -NLE_NOMEM;

	if ((r = rtnl_route_alloc()) == NULL)
		return rc;
	if ((nh = rtnl_route_nh_alloc()) == NULL || (d = nla(dst, len)) ==
	    NULL || (gw != NULL && (g = nla(gw,
	    (int)ip_family_bits(gw->family))) == NULL)) {
		if (nh != NULL)
			rtnl_route_nh_free(nh);
		goto out;
	}
	rtnl_route_set_family(r, dst->family);
	rtnl_route_set_table(r, RT_TABLE_MAIN);
	rtnl_route_set_type(r, RTN_UNICAST);
	rtnl_route_set_scope(r, gw != NULL ? RT_SCOPE_UNIVERSE :
	    RT_SCOPE_LINK);
	if ((rc = rtnl_route_set_dst(r, d)) < 0) {
		rtnl_route_nh_free(nh);
		goto out;
	}
	rtnl_route_nh_set_ifindex(nh, ifindex);
	if (g != NULL)
		rtnl_route_nh_set_gateway(nh, g);
	rtnl_route_add_nexthop(r, nh);
	rc = rtnl_route_add(sk, r, flags);
out:
	nl_addr_put(g);
	nl_addr_put(d);
	rtnl_route_put(r);
	return rc;
}

static int
neigh_add(struct nl_sock *sk, int ifindex, const struct ip_addr *ip,
    const uint8_t mac[6])
{
	struct rtnl_neigh *n;
	struct nl_addr *d, *ll;
	int rc = -NLE_NOMEM;

	if ((n = rtnl_neigh_alloc()) == NULL)
		return rc;
	d = nla(ip, (int)ip_family_bits(ip->family));
	ll = nl_addr_build(AF_LLC, mac, 6);
	if (d != NULL && ll != NULL) {
		rtnl_neigh_set_ifindex(n, ifindex);
		rtnl_neigh_set_family(n, ip->family);
		if ((rc = rtnl_neigh_set_dst(n, d)) == 0) {
			rtnl_neigh_set_lladdr(n, ll);
			rtnl_neigh_set_state(n, NUD_PERMANENT);
			rc = rtnl_neigh_add(sk, n, NLM_F_CREATE |
			    NLM_F_REPLACE);
		}
	}
	nl_addr_put(ll);
	nl_addr_put(d);
	rtnl_neigh_put(n);
	return rc;
}

/* The pods' gateway of ip's family. */
static const char *
gateway_text(int family)
{
	return family == AF_INET6 ? CNI_GATEWAY6 : CNI_GATEWAY;
}

/*
 * IPv6 on the pod's interface and lo, without duplicate address
 * detection: a pod's namespace may have it off (a runtime's default),
 * and the kernel takes no IPv6 address on a link where it is.
 */
static int
pod_ipv6_on(struct wire *w, const char *ifname, char *err, size_t errlen)
{
	char key[64];

	snprintf(key, sizeof(key), "ipv6/conf/%s/accept_dad", ifname);
	if (sysctl_write(w, true, key, "0", false, err, errlen) == -1)
		return -1;
	snprintf(key, sizeof(key), "ipv6/conf/%s/disable_ipv6", ifname);
	if (sysctl_write(w, true, key, "0", false, err, errlen) == -1)
		return -1;
	return sysctl_write(w, true, "ipv6/conf/lo/disable_ipv6", "0", false,
	    err, errlen);
}

/* One address's wiring inside the pod. */
static int
configure_pod(struct wire *w, const struct wire_link *host,
    const struct wire_link *pod, const struct ip_addr *ip, char *err,
    size_t errlen)
{
	const char *gws = gateway_text(ip->family);
	char ips[IP_ADDR_STR_LEN];
	struct ip_addr gw, any = any_of(ip->family);
	int bits = (int)ip_family_bits(ip->family), rc;

	(void)ip_addr_parse(gws, &gw, NULL);
	ip_addr_format(ip, ips);
	if (ip->family == AF_INET6 && pod_ipv6_on(w, pod->name, err,
	    errlen) == -1)
		return -1;
	if ((rc = addr_add(w->pod, pod->ifindex, ip)) < 0) {
		snprintf(err, errlen, "adding %s/%d to %s in the pod: %s", ips,
		    bits, pod->name, nl_geterror(rc));
		return -1;
	}
	/* In the pod's namespace a replace is ours to make. */
	if ((rc = route_add(w->pod, &gw, bits, pod->ifindex, NULL,
	    NLM_F_REPLACE)) < 0) {
		snprintf(err, errlen, "adding the route to %s dev %s in the "
		    "pod: %s", gws, pod->name, nl_geterror(rc));
		return -1;
	}
	if ((rc = route_add(w->pod, &any, 0, pod->ifindex, &gw,
	    NLM_F_REPLACE)) < 0) {
		snprintf(err, errlen, "adding the default route via %s in the "
		    "pod: %s", gws, nl_geterror(rc));
		return -1;
	}
	if ((rc = neigh_add(w->pod, pod->ifindex, &gw, host->mac)) < 0) {
		snprintf(err, errlen, "adding the neighbour entry for %s in "
		    "the pod: %s", gws, nl_geterror(rc));
		return -1;
	}
	return 0;
}

/* One address's wiring on the node: 0, 1 (someone else's route), -1. */
static int
configure_host(struct wire *w, const struct wire_link *host,
    const struct wire_link *pod, const struct ip_addr *ip, bool have_own,
    char *err, size_t errlen)
{
	char ips[IP_ADDR_STR_LEN], key[64];
	int bits = (int)ip_family_bits(ip->family), rc;

	ip_addr_format(ip, ips);
	if (ip->family == AF_INET6) {
		/* The node's IPv6 may be off on new links by default. */
		snprintf(key, sizeof(key), "ipv6/conf/%s/disable_ipv6",
		    host->name);
		if (sysctl_write(w, false, key, "0", false, err, errlen) == -1)
			return -1;
		/* The node never solicits the pod's address either. */
		if ((rc = neigh_add(w->host, host->ifindex, ip,
		    pod->mac)) < 0) {
			snprintf(err, errlen, "adding the neighbour entry for "
			    "%s on %s: %s", ips, host->name, nl_geterror(rc));
			return -1;
		}
	}
	if (have_own)
		return 0;
	/*
	 * On the node, never a replace: a route to ip that appeared since
	 * wire_vet looked is someone else's, and stays as it is.
	 */
	rc = route_add(w->host, ip, bits, host->ifindex, NULL,
	    NLM_F_CREATE | NLM_F_EXCL);
	/* enid-netd may have put this very route back (a reconcile that
	 * found it missing) since wire_vet looked: that one is ours. */
	if (rc == -NLE_EXIST && host_route_is_own(w, ip, host->ifindex))
		return 0;
	if (rc == -NLE_EXIST) {
		snprintf(err, errlen, "the node routes %s already (a route "
		    "appeared after the checks); enid-cni replaces no route "
		    "it did not make", ips);
		return 1;
	}
	if (rc < 0) {
		snprintf(err, errlen, "adding the route to %s dev %s on the "
		    "node: %s", ips, host->name, nl_geterror(rc));
		return -1;
	}
	return 0;
}

int
wire_configure(struct wire *w, const struct wire_link *host,
    const struct wire_link *pod, const struct ip_addr ip[CNI_NFAMILIES],
    const bool have_own[CNI_NFAMILIES], char *err, size_t errlen)
{
	int f, rc;

	/* The pod first, whole: the node routes nothing to it before. */
	for (f = 0; f < CNI_NFAMILIES; f++)
		if (ip[f].family != 0 && configure_pod(w, host, pod, &ip[f],
		    err, errlen) == -1)
			return -1;
	for (f = 0; f < CNI_NFAMILIES; f++)
		if (ip[f].family != 0 && (rc = configure_host(w, host, pod,
		    &ip[f], have_own[f], err, errlen)) != 0)
			return rc;
	return 0;
}

/* ---- what the node holds for an address (wire_vet) ---- */

struct vet {
	struct ip_addr	 ip;
	char		 ips[IP_ADDR_STR_LEN];	/* ip, for messages */
	int		 own;		/* the host end's ifindex, or 0 */
	bool		 have_own;
	bool		 proven;
	bool		 gateway;	/* of the route being looked at */
	int		 code;		/* 0 while nothing refuses ip */
	char		*err;
	size_t		 errlen;
};

static void
vet_refuse(struct vet *v, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
vet_refuse(struct vet *v, int code, const char *fmt, ...)
{
	va_list ap;

	/* The most basic reason (the lowest code) is told; of equal ones,
	 * the first. */
	if (v->code != 0 && v->code <= code)
		return;
	v->code = code;
	va_start(ap, fmt);
	vsnprintf(v->err, v->errlen, fmt, ap);
	va_end(ap);
}

/* A link's name for a refusal's message (only then: no dump of links
 * on the way to an accepted address). */
static void
ifname_of(int ifindex, char *out, size_t size)
{
	char name[IF_NAMESIZE];

	if (ifindex > 0 && if_indextoname((unsigned)ifindex, name) != NULL)
		snprintf(out, size, "%s", name);
	else
		snprintf(out, size, "ifindex %d", ifindex);
}

/* libnl's address is ip: the same family and bytes. */
static bool
nl_is(struct nl_addr *a, const struct ip_addr *ip)
{
	struct ip_addr x;

	return a != NULL && ip_addr_from_bytes(&x, nl_addr_get_family(a),
	    nl_addr_get_binary_addr(a), nl_addr_get_len(a)) == 0 &&
	    ip_addr_eq(&x, ip);
}

/* libnl's prefix a (a route's destination; NULL is the default) holds ip;
 * the prefix is left in held for a message.  Both are ip's family. */
static bool
nl_holds(struct nl_addr *a, const struct ip_addr *ip, struct ip_prefix *held)
{
	memset(held, 0, sizeof(*held));
	held->addr.family = ip->family;
	if (a == NULL)
		return true;
	if (nl_addr_get_len(a) != 0 && ip_addr_from_bytes(&held->addr,
	    nl_addr_get_family(a), nl_addr_get_binary_addr(a),
	    nl_addr_get_len(a)) == -1)
		return false;
	held->len = (uint8_t)nl_addr_get_prefixlen(a);
	return held->addr.family == ip->family &&
	    held->len <= ip_family_bits(ip->family) &&
	    ip_prefix_contains(held, ip);
}

/*
 * Which of a subnet's addresses EC2 keeps, ip's offset in it: the
 * network (0), the router (1), the DNS server (2), the one held back (3)
 * or the broadcast address (-1); -2 when ip is none of them.  The
 * subnet's host part is at least 3 bits (a /29 or wider).
 */
static int
reserved_offset(const struct ip_prefix *net, const struct ip_addr *ip)
{
	unsigned int bits = ip_family_bits(ip->family), i;
	bool all_ones = true, low_zero = true;

	for (i = net->len; i < bits; i++) {
		bool one = (ip->bytes[i / 8] >> (7 - i % 8)) & 1;

		if (!one)
			all_ones = false;
		if (one && i < bits - 2)
			low_zero = false;
	}
	if (all_ones)
		return -1;
	if (low_zero)
		return ip->bytes[bits / 8 - 1] & 3;
	return -2;
}

/*
 * The node's own addresses, and the addresses no one is given in a
 * subnet it is on: in a VPC the network, the router (+1), the DNS
 * server (+2), the one held back (+3) and the broadcast address are
 * never a pod's.
 */
static void
vet_addr(struct nl_object *o, void *arg)
{
	struct rtnl_addr *a = (struct rtnl_addr *)o;
	struct vet *v = arg;
	struct nl_addr *local = rtnl_addr_get_local(a);
	char dev[IFNAMSIZ + 16], net[IP_PREFIX_STR_LEN];
	struct ip_prefix sub;
	int len, h;

	if (local == NULL || rtnl_addr_get_family(a) != v->ip.family ||
	    ip_addr_from_bytes(&sub.addr, v->ip.family,
	    nl_addr_get_binary_addr(local), nl_addr_get_len(local)) == -1 ||
	    ip_addr_is_unspecified(&sub.addr))
		return;
	if (ip_addr_eq(&sub.addr, &v->ip)) {
		ifname_of(rtnl_addr_get_ifindex(a), dev, sizeof(dev));
		vet_refuse(v, CNI_ERR_ADDR_NEVER, "%s is an address of the "
		    "node (on %s)", v->ips, dev);
		return;
	}
	/* A subnet with a host part of 3 bits or more (an IPv4 /29, an
	 * IPv6 /125); EC2's IPv6 subnets are /64s, with the same five. */
	len = (int)nl_addr_get_prefixlen(local);
	if (len < 1 || len > (int)ip_family_bits(v->ip.family) - 3)
		return;
	memset(sub.pad, 0, sizeof(sub.pad));
	sub.len = (uint8_t)len;
	sub = ip_prefix_network(&sub);
	if (!ip_prefix_contains(&sub, &v->ip))
		return;
	if ((h = reserved_offset(&sub, &v->ip)) != -2) {
		ifname_of(rtnl_addr_get_ifindex(a), dev, sizeof(dev));
		ip_prefix_format(&sub, net);
		vet_refuse(v, CNI_ERR_ADDR_NEVER, "%s is a reserved address "
		    "of the node's subnet %s on %s (%s)", v->ips, net, dev,
		    h == 0 ? "its network address" : h == 1 ? "its router" :
		    h == 2 ? "its DNS server" : h == 3 ? "reserved" :
		    "its broadcast address");
	}
}

static void
vet_nexthop(struct rtnl_nexthop *nh, void *arg)
{
	struct vet *v = arg;

	if (nl_is(rtnl_route_nh_get_gateway(nh), &v->ip))
		v->gateway = true;
}

/*
 * Every table: ip must be no one's gateway, and no host route may lead
 * to it already, but the main table's through the host end of this very
 * attachment (an ADD repeated).  For IPv6, neither may a route of
 * another kind than unicast in main (a blackhole, unreachable, prohibit
 * or local one) hold it: on EC2 those would be where the node keeps an
 * ENI's /80 from being routed back out, never a pod's.
 */
static void
vet_route(struct nl_object *o, void *arg)
{
	struct rtnl_route *r = (struct rtnl_route *)o;
	struct vet *v = arg;
	struct nl_addr *dst = rtnl_route_get_dst(r);
	struct rtnl_nexthop *nh;
	char dev[IFNAMSIZ + 16] = "no device", type[32];
	char net[IP_PREFIX_STR_LEN];
	uint32_t table = rtnl_route_get_table(r);
	unsigned int bits = ip_family_bits(v->ip.family);
	struct ip_prefix held;

	if (rtnl_route_get_family(r) != v->ip.family)
		return;
	nh = rtnl_route_get_nnexthops(r) > 0 ? rtnl_route_nexthop_n(r, 0) :
	    NULL;
	v->gateway = false;
	rtnl_route_foreach_nexthop(r, vet_nexthop, v);
	if (v->gateway || (dst != NULL && nl_addr_get_prefixlen(dst) ==
	    bits && nl_is(dst, &v->ip))) {
		if (nh != NULL)
			ifname_of(rtnl_route_nh_get_ifindex(nh), dev,
			    sizeof(dev));
	}
	if (v->gateway) {
		vet_refuse(v, CNI_ERR_ADDR_NEVER, "%s is a gateway of the "
		    "node (table %u, dev %s)", v->ips, table, dev);
		return;
	}
	if (v->ip.family == AF_INET6 && table == RT_TABLE_MAIN &&
	    rtnl_route_get_type(r) != RTN_UNICAST && nl_holds(dst, &v->ip, &held)) {
		nl_rtntype2str(rtnl_route_get_type(r), type, sizeof(type));
		ip_prefix_format(&held, net);
		vet_refuse(v, CNI_ERR_ADDR_ROUTED, "the node routes %s as %s "
		    "(%s in table %u); enid-cni routes no address the node "
		    "keeps another way", v->ips, type, net, table);
		return;
	}
	if (dst == NULL || nl_addr_get_prefixlen(dst) != bits ||
	    !nl_is(dst, &v->ip))
		return;
	if (v->own != 0 && table == RT_TABLE_MAIN &&
	    rtnl_route_get_type(r) == RTN_UNICAST &&
	    rtnl_route_get_nnexthops(r) == 1 &&
	    rtnl_route_nh_get_gateway(nh) == NULL &&
	    rtnl_route_nh_get_ifindex(nh) == v->own) {
		v->have_own = true;
		return;
	}
	nl_rtntype2str(rtnl_route_get_type(r), type, sizeof(type));
	vet_refuse(v, CNI_ERR_ADDR_ROUTED, "the node already routes %s "
	    "(table %u, dev %s, type %s); enid-cni replaces no route it did "
	    "not make for this attachment", v->ips, table, dev, type);
}

/*
 * The proof: "to ip/32 lookup main" (IPv6: "to ip/128 lookup main", in
 * the IPv6 rules) tagged by enid-netd, with no other selector.  netd adds one only for an address its own policy accepts
 * (inside the VPC, none of the node's), and nothing without
 * CAP_NET_ADMIN can add a rule at all.
 */
static int
vet_rule(struct nl_msg *msg, void *arg)
{
	struct nlmsghdr *h = nlmsg_hdr(msg);
	struct vet *v = arg;
	struct fib_rule_hdr *frh;
	struct nlattr *a;
	struct ip_addr dst;
	uint32_t table;
	uint8_t proto = 0;
	bool other = false;
	int rem;

	if (h->nlmsg_type != RTM_NEWRULE || !nlmsg_valid_hdr(h, sizeof(*frh)))
		return NL_OK;
	frh = nlmsg_data(h);
	if (frh->family != v->ip.family || frh->action != FR_ACT_TO_TBL ||
	    frh->dst_len != ip_family_bits(v->ip.family) ||
	    frh->src_len != 0 || frh->tos != 0 ||
	    (frh->flags & FIB_RULE_INVERT))
		return NL_OK;
	table = frh->table;
	memset(&dst, 0, sizeof(dst));
	nla_for_each_attr(a, nlmsg_attrdata(h, sizeof(*frh)),
	    nlmsg_attrlen(h, sizeof(*frh)), rem) {
		switch (nla_type(a)) {
		case FRA_TABLE:
			if (nla_len(a) >= 4)
				table = nla_get_u32(a);
			break;
		case FRA_DST:
			(void)ip_addr_from_bytes(&dst, frh->family,
			    nla_data(a), (size_t)nla_len(a));
			break;
		case FRA_PROTOCOL:
			if (nla_len(a) >= 1)
				proto = nla_get_u8(a);
			break;
		case FRA_IIFNAME:
		case FRA_OIFNAME:
		case FRA_UID_RANGE:
		case FRA_IP_PROTO:
		case FRA_SPORT_RANGE:
		case FRA_DPORT_RANGE:
		case FRA_L3MDEV:
			other = true;
			break;
		case FRA_FWMARK:
			if (nla_len(a) >= 4 && nla_get_u32(a) != 0)
				other = true;
			break;
		default:
			break;
		}
	}
	if (table == RT_TABLE_MAIN && ip_addr_eq(&dst, &v->ip) &&
	    proto == ENID_RULE_PROTO && !other)
		v->proven = true;
	return NL_OK;
}

static int
dump_rules(struct nl_sock *sk, struct vet *v)
{
	struct fib_rule_hdr req;
	struct nl_cb *cb;
	int i, rc = -NLE_DUMP_INTR;

	if ((cb = nl_cb_alloc(NL_CB_DEFAULT)) == NULL)
		return -NLE_NOMEM;
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, vet_rule, v);
	memset(&req, 0, sizeof(req));
	req.family = v->ip.family;
	for (i = 0; i < WIRE_DUMP_TRIES && rc == -NLE_DUMP_INTR; i++) {
		v->proven = false;
		if ((rc = nl_send_simple(sk, RTM_GETRULE, NLM_F_DUMP, &req,
		    sizeof(req))) >= 0)
			rc = nl_recvmsgs(sk, cb);
	}
	nl_cb_put(cb);
	return rc < 0 ? rc : 0;
}

int
wire_vet(struct wire *w, const struct ip_addr *ip, int own_ifindex,
    bool *have_own, int *code, char *err, size_t errlen)
{
	struct nl_cache *addrs = NULL, *routes = NULL;
	struct vet v;
	int rc;

	memset(&v, 0, sizeof(v));
	v.ip = *ip;
	ip_addr_format(ip, v.ips);
	v.own = own_ifindex;
	v.err = err;
	v.errlen = errlen;
	*have_own = false;
	*code = CNI_ERR_WIRING;
	if ((rc = rtnl_addr_alloc_cache(w->host, &addrs)) < 0 ||
	    (rc = rtnl_route_alloc_cache(w->host, ip->family, 0,
	    &routes)) < 0) {
		snprintf(err, errlen, "netlink: reading the node's addresses "
		    "and routes to check %s: %s", v.ips,
		    nl_geterror(rc));
		rc = -1;
		goto out;
	}
	nl_cache_foreach(addrs, vet_addr, &v);
	nl_cache_foreach(routes, vet_route, &v);
	if (v.code != 0) {
		*code = v.code;
		rc = -1;
		goto out;
	}
	if ((rc = dump_rules(w->host, &v)) < 0) {
		snprintf(err, errlen, "netlink: reading the node's rules to "
		    "check %s: %s", v.ips, nl_geterror(rc));
		rc = -1;
		goto out;
	}
	if (!v.proven) {
		*code = CNI_ERR_UNPROVEN;
		snprintf(err, errlen, "enid-netd holds no rule \"to %s/%u "
		    "lookup main\" (protocol %d) on the node: its policy never "
		    "accepted %s, and enid-cni routes no address on enid's "
		    "word alone", v.ips, ip_family_bits(ip->family),
		    ENID_RULE_PROTO, v.ips);
		rc = -1;
		goto out;
	}
	*have_own = v.have_own;
	rc = 0;
out:
	if (routes != NULL)
		nl_cache_free(routes);
	if (addrs != NULL)
		nl_cache_free(addrs);
	return rc;
}

/* ---- CHECK ---- */

static void
missing(char *err, size_t errlen, const char *fmt, const char *a,
    const char *b)
{
	size_t used = strlen(err);
	char item[256];

	snprintf(item, sizeof(item), fmt, a, b);
	snprintf(err + used, errlen - used, "%s%s", used > 0 ? "; " : "",
	    item);
}

/* libnl's a is ip/prefix (for a prefix of 0, any address of its family). */
static bool
addr_is(struct nl_addr *a, const struct ip_addr *ip, int prefix)
{
	return a != NULL && nl_addr_get_family(a) == ip->family &&
	    (int)nl_addr_get_prefixlen(a) == prefix &&
	    (prefix == 0 || nl_is(a, ip));
}

static bool
has_addr(struct nl_cache *c, int ifindex, const struct ip_addr *ip)
{
	struct nl_object *o;

	for (o = nl_cache_get_first(c); o; o = nl_cache_get_next(o)) {
		struct rtnl_addr *a = (struct rtnl_addr *)o;

		if (rtnl_addr_get_ifindex(a) == ifindex &&
		    addr_is(rtnl_addr_get_local(a), ip,
		    (int)ip_family_bits(ip->family)))
			return true;
	}
	return false;
}

/* A main-table route to dst/len through ifindex (via gw, if not NULL). */
static bool
has_route(struct nl_cache *c, const struct ip_addr *dst, int len,
    int ifindex, const struct ip_addr *gw)
{
	struct nl_object *o;

	for (o = nl_cache_get_first(c); o; o = nl_cache_get_next(o)) {
		struct rtnl_route *r = (struct rtnl_route *)o;
		struct rtnl_nexthop *nh;
		struct nl_addr *g;

		if (rtnl_route_get_table(r) != RT_TABLE_MAIN ||
		    rtnl_route_get_nnexthops(r) != 1 ||
		    !addr_is(rtnl_route_get_dst(r), dst, len))
			continue;
		nh = rtnl_route_nexthop_n(r, 0);
		g = rtnl_route_nh_get_gateway(nh);
		if (rtnl_route_nh_get_ifindex(nh) == ifindex &&
		    (gw == NULL ? g == NULL : addr_is(g, gw,
		    (int)ip_family_bits(gw->family))))
			return true;
	}
	return false;
}

static bool
host_route_is_own(struct wire *w, const struct ip_addr *ip, int ifindex)
{
	struct nl_cache *c = NULL;
	bool own;

	if (rtnl_route_alloc_cache(w->host, ip->family, 0, &c) < 0)
		return false;
	own = has_route(c, ip, (int)ip_family_bits(ip->family), ifindex,
	    NULL);
	nl_cache_free(c);
	return own;
}

static bool
has_neigh(struct nl_cache *c, int ifindex, const struct ip_addr *ip,
    const uint8_t mac[6])
{
	struct nl_object *o;

	for (o = nl_cache_get_first(c); o; o = nl_cache_get_next(o)) {
		struct rtnl_neigh *n = (struct rtnl_neigh *)o;
		struct nl_addr *ll = rtnl_neigh_get_lladdr(n);

		if (rtnl_neigh_get_ifindex(n) == ifindex &&
		    addr_is(rtnl_neigh_get_dst(n), ip,
		    (int)ip_family_bits(ip->family)) &&
		    (rtnl_neigh_get_state(n) & NUD_PERMANENT) && ll != NULL &&
		    nl_addr_get_len(ll) == 6 &&
		    memcmp(nl_addr_get_binary_addr(ll), mac, 6) == 0)
			return true;
	}
	return false;
}

/* What one address needs, in the pod and on the node; missing() notes
 * each thing that is not there. */
static void
check_one(const struct ip_addr *ip, const struct wire_link *h, int hr,
    const struct wire_link *p, int pr, const char *host, const char *ifname,
    struct nl_cache *addrs, struct nl_cache *proutes, struct nl_cache *hroutes,
    struct nl_cache *pneigh, struct nl_cache *hneigh, char *err,
    size_t errlen)
{
	const char *gws = gateway_text(ip->family);
	char ips[IP_ADDR_STR_LEN + 8], mac[MAC_STR_LEN];
	struct ip_addr gw, any = any_of(ip->family);
	int bits = (int)ip_family_bits(ip->family);

	(void)ip_addr_parse(gws, &gw, NULL);
	ip_addr_format(ip, ips);
	if (pr == 1) {
		if (!has_addr(addrs, p->ifindex, ip)) {
			size_t n = strlen(ips);

			snprintf(ips + n, sizeof(ips) - n, "/%d", bits);
			missing(err, errlen, "the address %s is missing on %s "
			    "in the pod", ips, ifname);
			ip_addr_format(ip, ips);
		}
		if (!has_route(proutes, &gw, bits, p->ifindex, NULL))
			missing(err, errlen, "the route to the gateway %s dev "
			    "%s is missing in the pod", gws, ifname);
		if (!has_route(proutes, &any, 0, p->ifindex, &gw))
			missing(err, errlen, "the default route via %s dev %s "
			    "is missing in the pod", gws, ifname);
	}
	if (pr == 1 && hr == 1 && !has_neigh(pneigh, p->ifindex, &gw,
	    h->mac)) {
		mac_format(h->mac, mac);
		missing(err, errlen, gw.family == AF_INET6 ?
		    "the permanent neighbour entry " CNI_GATEWAY6 " lladdr %s "
		    "on %s is missing in the pod" :
		    "the permanent neighbour entry " CNI_GATEWAY " lladdr %s "
		    "on %s is missing in the pod", mac, ifname);
	}
	if (hr == 1 && !has_route(hroutes, ip, bits, h->ifindex, NULL))
		missing(err, errlen, "the route to %s dev %s is missing on the "
		    "node", ips, host);
	if (ip->family == AF_INET6 && hr == 1 && pr == 1 &&
	    !has_neigh(hneigh, h->ifindex, ip, p->mac)) {
		mac_format(p->mac, mac);
		snprintf(ips + strlen(ips), sizeof(ips) - strlen(ips),
		    " lladdr %s", mac);
		missing(err, errlen, "the permanent neighbour entry %s on %s "
		    "is missing on the node", ips, host);
	}
}

int
wire_check(struct wire *w, const char *host, const char *ifname,
    const struct ip_addr ip[CNI_NFAMILIES], char *err, size_t errlen)
{
	struct nl_cache *addrs = NULL, *proutes = NULL, *hroutes = NULL;
	struct nl_cache *pneigh = NULL, *hneigh = NULL;
	struct wire_link h, p;
	char scratch[256];
	int rc, hr, pr, in, f;

	if ((hr = wire_get_link(w, false, host, &h, err, errlen)) < 0 ||
	    (pr = wire_get_link(w, true, ifname, &p, err, errlen)) < 0)
		return -1;
	if ((rc = rtnl_addr_alloc_cache(w->pod, &addrs)) < 0 ||
	    (rc = rtnl_route_alloc_cache(w->pod, AF_UNSPEC, 0,
	    &proutes)) < 0 ||
	    (rc = rtnl_route_alloc_cache(w->host, AF_UNSPEC, 0,
	    &hroutes)) < 0 ||
	    (rc = rtnl_neigh_alloc_cache(w->pod, &pneigh)) < 0 ||
	    (rc = rtnl_neigh_alloc_cache(w->host, &hneigh)) < 0) {
		snprintf(err, errlen, "netlink: reading addresses, routes and "
		    "neighbours: %s", nl_geterror(rc));
		rc = -1;
		goto out;
	}
	err[0] = '\0';
	if (hr == 0)
		missing(err, errlen, "the host interface %s is missing", host,
		    NULL);
	else if (!h.up)
		missing(err, errlen, "the host interface %s is down", host,
		    NULL);
	if (pr == 0)
		missing(err, errlen, "the interface %s is missing in the pod's "
		    "namespace", ifname, NULL);
	else if (!p.up)
		missing(err, errlen, "the interface %s is down in the pod's "
		    "namespace", ifname, NULL);
	if (hr == 1 && pr == 1) {
		if ((in = wire_peer_in_pod(w, &h, scratch,
		    sizeof(scratch))) < 0) {
			snprintf(err, errlen, "%s", scratch);
			rc = -1;
			goto out;
		}
		if (!in || h.peer_ifindex != p.ifindex)
			missing(err, errlen, "the host interface %s is not the "
			    "peer of %s in CNI_NETNS", host, ifname);
	}
	for (f = 0; f < CNI_NFAMILIES; f++)
		if (ip[f].family != 0)
			check_one(&ip[f], &h, hr, &p, pr, host, ifname, addrs,
			    proutes, hroutes, pneigh, hneigh, err, errlen);
	rc = err[0] != '\0';
out:
	if (hneigh != NULL)
		nl_cache_free(hneigh);
	if (pneigh != NULL)
		nl_cache_free(pneigh);
	if (hroutes != NULL)
		nl_cache_free(hroutes);
	if (proutes != NULL)
		nl_cache_free(proutes);
	if (addrs != NULL)
		nl_cache_free(addrs);
	return rc;
}

/* ---- GC ---- */

int
wire_sweep(struct wire *w, const char *prefix,
    bool (*keep)(const char *name, void *arg), void *arg, unsigned *removed,
    char *err, size_t errlen)
{
	struct nl_cache *links;
	struct nl_object *o;
	int rc, failed = 0;

	*removed = 0;
	if ((rc = rtnl_link_alloc_cache(w->host, AF_UNSPEC, &links)) < 0) {
		snprintf(err, errlen, "netlink: listing links: %s",
		    nl_geterror(rc));
		return -1;
	}
	for (o = nl_cache_get_first(links); o; o = nl_cache_get_next(o)) {
		struct rtnl_link *l = (struct rtnl_link *)o;
		const char *name = rtnl_link_get_name(l);
		const char *type = rtnl_link_get_type(l);

		if (name == NULL || type == NULL || strcmp(type, "veth") != 0 ||
		    !cni_veth_name_ours(prefix, name) || keep(name, arg))
			continue;
		if (wire_link_del(w, name, err, errlen) == -1)
			failed = -1;	/* err names the last; go on */
		else
			(*removed)++;
	}
	nl_cache_free(links);
	return failed;
}
