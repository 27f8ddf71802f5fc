"""The real data plane: a router namespace and one namespace per node.

The model says what should exist (an attached ENI whose link delay has
passed has a veth; each of its addresses has a /32 route toward it, each
of its delegated prefixes a /28 route); one worker thread makes the
kernel match, ENI by ENI, in request order.  The worker only ever runs
`ip -n <sim namespace> ...`.

IPv6 (--ipv6 dual, simlib/ipv6.py): the router answers at fe80:ec2::1 on
every ENI's link (and, by proxy NDP, at the ENI's subnet's ::1), and
delivers an address (/128) or a delegated /80 by a route via the ENI's
link-local address (its MAC's EUI-64), whose one permanent neighbour
entry is all the link needs: no neighbour discovery per address, nor per
pod inside a /80.  IPv6 has no rp_filter; the nftables table `ip6
srccheck` plays it: a packet that comes in over an ENI's link from a
global source the router would not route back over that link is dropped
(and counted by source in the set `spoofed`).
"""
import collections
import ipaddress
import threading
import time

from . import ipv6 as v6
from . import netns, outside, peered

VPC_LOCAL = ["198.18.0.1/32", "198.18.0.10/32", "169.254.169.254/32"]


class Dataplane:
    def __init__(self, sim, prefix, log):
        self.sim = sim
        self.log = log
        self.vpc_ns = prefix + "-vpc"
        self.out_ns = prefix + "-out"
        self.peer_ns = prefix + "-peer"
        self.node_prefix = prefix + "-node-"
        self.made_ns = []
        self.links = {}          # eni id -> {vpc_if, node_if, netns, routes:set}
        self.seq = 0
        self.cv = threading.Condition()
        self.queue = collections.deque()
        self.busy = False
        self.errors = collections.deque(maxlen=20)
        self.stopping = False
        self.thread = None
        self.routes = getattr(sim.cfg, "dataplane", "full") == "full"
        self.ipv6 = sim.ipv6

    # ------------------------------------------------------------ set-up

    def node_ns(self, i):
        return "%s%d" % (self.node_prefix, i)

    def create_router(self):
        """The router and, behind its internet gateway, the outside
        host's namespace (simlib/outside.py), and behind a peering
        connection the peered network's (simlib/peered.py): six execs in
        all, since hundreds of tests each start a sim."""
        ns, out, peer = self.vpc_ns, self.out_ns, self.peer_ns
        for n in (ns, out, peer):
            netns.add_netns(n)
            self.made_ns.append(n)
        # Defaults first, so every veth created later inherits them.
        netns.sysctl(ns, ("net.ipv4.ip_forward", 1),
                     ("net.ipv4.conf.all.rp_filter", 1),
                     ("net.ipv4.conf.default.rp_filter", 1),
                     ("net.ipv4.conf.default.proxy_arp", 1),
                     ("net.ipv4.conf.all.send_redirects", 0),
                     ("net.ipv4.conf.default.send_redirects", 0))
        if self.ipv6:
            # Before any veth exists, so that each inherits them.
            netns.sysctl(ns, ("net.ipv6.conf.all.forwarding", 1),
                         ("net.ipv6.conf.default.forwarding", 1),
                         ("net.ipv6.conf.all.proxy_ndp", 1),
                         ("net.ipv6.conf.default.accept_dad", 0),
                         ("net.ipv6.conf.default.accept_ra", 0))
            netns.sysctl(out, ("net.ipv6.conf.all.forwarding", 1))
        netns.ip_batch(ns, ["link set lo up"] +
                       ["addr add %s dev lo" % a for a in VPC_LOCAL] +
                       ["addr add %s/32 dev lo" % s.gateway
                        for s in self.sim.subnet_list if s.gateway] +
                       [c.format(out=out) for c in outside.router_cmds()] +
                       [c.format(peer=peer) for c in peered.router_cmds()] +
                       (self._router_cmds6() if self.ipv6 else []))
        netns.ip_batch(out, outside.outside_cmds() +
                       (outside.outside_cmds6() if self.ipv6 else []))
        if self.ipv6:
            outside.nft(ns, ["-f", "-"], stdin=SRCCHECK6)
        netns.ip_batch(peer, peered.peer_cmds([self.sim.vpc_cidr]))
        # Forwarding, with no route anywhere but back to the gateway: what
        # the outside host cannot reach gets "network unreachable", as
        # from the internet, rather than silence (a resolver in a node
        # then fails at once, as it did when the router had no default).
        netns.sysctl(out, ("net.ipv4.ip_forward", 1))

    def _router_cmds6(self):
        """The router's IPv6 addresses: the sim's services, IMDS, DNS and
        NTP on EC2's fd00:ec2:: addresses, each subnet's ::1; and the
        route to the internet gateway, which passes IPv6 untranslated."""
        local = [v6.EC2_ADDR6, v6.VPC_HOST6, v6.IMDS_ADDR6, v6.DNS_ADDR6,
                 v6.NTP_ADDR6] + [s.v6.gateway for s in self.sim.subnet_list
                                  if s.v6 is not None]
        return ["addr add %s/128 dev lo nodad" % a for a in local] + \
            outside.router_cmds6()

    def _link_cmds6(self, vpc_if, mac, subnet):
        """An ENI's link, router side: the router's fe80:ec2::1, the
        ENI's link-local next hop (one permanent neighbour entry) and the
        subnet's ::1 answered by proxy."""
        if not self.ipv6:
            return []
        cmds = ["addr add %s/64 dev %s nodad" % (v6.ROUTER_LL, vpc_if),
                "neigh replace %s lladdr %s dev %s nud permanent"
                % (v6.link_local(mac), mac, vpc_if)]
        if subnet.v6 is not None:
            cmds.append("neigh add proxy %s dev %s" % (subnet.v6.gateway, vpc_if))
        return cmds

    def create_gateway(self, mappings):
        """The internet gateway's translation and filter, once the nodes'
        primary addresses are known: [(private, public), ...]."""
        outside.nft(self.vpc_ns, ["-f", "-"], stdin=outside.ruleset(mappings))

    def create_node(self, i, eni, prefixlen):
        # Three execs a node (batches), so a fleet of them starts quickly.
        # With IPv6, eth0 also gets the ENI's IPv6 address (a /128: all
        # else is reached through the router) and a default route via
        # fe80:ec2::1; in an IPv6-only subnet that is all it gets.
        ns = self.node_ns(i)
        netns.add_netns(ns)
        self.made_ns.append(ns)
        vpc_if = self._vpc_ifname()
        own = eni.addresses[:1] + eni.ipv6[:1]
        netns.ip_batch(self.vpc_ns, [
            "link add %s type veth peer name eth0 address %s netns %s"
            % (vpc_if, eni.mac, ns),
            "link set %s up" % vpc_if] +
            self._link_cmds6(vpc_if, eni.mac, eni.subnet) +
            [c for a in own
             for c in self._deliver_cmds(vpc_if, a, eni.mac, primary=True)])
        if self.ipv6:
            # No DAD on eth0, set before it comes up: its link-local
            # address is usable at once, as an EC2 node's primary link,
            # up long before anything runs on it, is.  While it is
            # tentative (a second or two) the kernel sends no neighbour
            # solicitation for the router, and a first packet waits.
            # eth0 alone: an ENI's link is the daemon's to bring up.
            netns.sysctl(ns, ("net.ipv6.conf.eth0.accept_dad", 0))
        cmds = ["link set lo up"]
        if eni.addresses:
            cmds.append("addr add %s/%d dev eth0" % (eni.addresses[0], prefixlen))
        cmds.append("link set eth0 up")
        if eni.addresses:
            cmds.append("route add default via %s dev eth0" % eni.subnet.gateway)
        if eni.ipv6:
            cmds += ["addr add %s/128 dev eth0 nodad" % eni.ipv6[0],
                     "route add ::/0 via %s dev eth0" % v6.ROUTER_LL]
        netns.ip_batch(ns, cmds)
        self.links[eni.id] = {"vpc_if": vpc_if, "node_if": "eth0", "netns": ns,
                              "routes": set(own), "created": time.time()}


    def _deliver_cmds(self, vpc_if, dest, mac, primary=False):
        # As the VPC fabric does: an assigned address, or every address of
        # a delegated prefix ("a.b.c.d/28"), goes to the ENI that holds it,
        # by its MAC, with no ARP (a node answers none for the addresses
        # it routes on to pods).  With --dataplane links, only the node's
        # own address is routed (its daemon reaches EC2 and IMDS through
        # it); attached ENIs get their links and no route (a fleet's
        # rollout, which sends no packet from a pod).
        if not self.routes and not primary:
            return []
        if ":" in dest:
            route = dest if "/" in dest else dest + "/128"
            return ["route replace %s via %s dev %s"
                    % (route, v6.link_local(mac), vpc_if)]
        route = dest if "/" in dest else dest + "/32"
        return ["route replace %s dev %s" % (route, vpc_if)] + [
            "neigh replace %s lladdr %s dev %s nud permanent" % (a, mac, vpc_if)
            for a in _hosts(dest)]

    @staticmethod
    def _withdraw_cmds(vpc_if, dest):
        if ":" in dest:
            route = dest if "/" in dest else dest + "/128"
            return ["route del %s dev %s" % (route, vpc_if)]
        route = dest if "/" in dest else dest + "/32"
        return ["route del %s dev %s" % (route, vpc_if)] + [
            "neigh del %s dev %s" % (a, vpc_if) for a in _hosts(dest)]

    def _vpc_ifname(self):
        self.seq += 1
        return "enir%d" % self.seq

    def start(self):
        self.thread = threading.Thread(target=self._run, name="dataplane", daemon=True)
        self.thread.start()

    def teardown(self):
        with self.cv:
            self.stopping = True
            self.cv.notify_all()
        if self.thread:
            self.thread.join(10)
        for ns in reversed(self.made_ns):
            netns.del_netns(ns)
        self.made_ns = []

    # ------------------------------------------------------------ reconcile

    def request(self, eni_id):
        with self.cv:
            if eni_id not in self.queue:
                self.queue.append(eni_id)
            self.cv.notify_all()

    def snapshot(self):
        with self.cv:
            links = {k: {"vpc_ifname": v["vpc_if"], "node_ifname": v["node_if"],
                         "netns": v["netns"], "routes": sorted(v["routes"]),
                         "created": v["created"]}
                     for k, v in self.links.items()}
            return {"links": links, "pending": len(self.queue) + (1 if self.busy else 0),
                    "errors": list(self.errors)}

    def _run(self):
        while True:
            with self.cv:
                while not self.queue and not self.stopping:
                    self.cv.wait(1.0)
                if self.stopping:
                    return
                eni_id = self.queue.popleft()
                self.busy = True
            try:
                self._reconcile(eni_id)
            except Exception as e:
                msg = "dataplane %s: %s" % (eni_id, e)
                self.log(msg)
                with self.cv:
                    self.errors.append(msg)
            finally:
                with self.cv:
                    self.busy = False
                    self.cv.notify_all()

    def _desired(self, eni_id):
        with self.sim.lock:
            eni = self.sim.enis.get(eni_id)
            if eni is None or not eni.attachment or not eni.link_ready:
                return None
            inst = self.sim.instances[eni.attachment["instance"]]
            return {"mac": eni.mac, "netns": self.node_ns(inst.index),
                    "device_index": eni.attachment["device_index"],
                    "subnet": eni.subnet,
                    "routes": set(eni.addresses) | set(eni.prefixes) |
                    set(eni.ipv6) | set(eni.ipv6_prefixes)}

    def _reconcile(self, eni_id):
        want = self._desired(eni_id)
        have = self.links.get(eni_id)
        if have and (want is None or want["netns"] != have["netns"]):
            # Deleting one end of a veth deletes its peer and its routes.
            netns.ip(self.vpc_ns, "link", "del", have["vpc_if"], check=False)
            with self.cv:
                del self.links[eni_id]
            have = None
        if want is None:
            return
        # One `ip -batch` for the link and its new routes: the link
        # appears with its routes, as a real attachment's does.
        cmds = []
        if have is None:
            vpc_if = self._vpc_ifname()
            node_if = "eth%d" % want["device_index"]
            if netns.link_exists(want["netns"], node_if):
                node_if = "eth%dx%d" % (want["device_index"], self.seq)
            cmds += ["link add %s type veth peer name %s address %s netns %s"
                     % (vpc_if, node_if, want["mac"], want["netns"]),
                     "link set %s up" % vpc_if] + \
                self._link_cmds6(vpc_if, want["mac"], want["subnet"])
            have = {"vpc_if": vpc_if, "node_if": node_if, "netns": want["netns"],
                    "routes": set(), "created": None}
        adding = sorted(want["routes"] - have["routes"]) if self.routes else []
        for addr in adding:
            cmds += self._deliver_cmds(have["vpc_if"], addr, want["mac"])
        try:
            netns.ip_batch(self.vpc_ns, cmds)
        except netns.NetnsError:
            if have["created"] is None:    # no half-made link left behind
                netns.ip(self.vpc_ns, "link", "del", have["vpc_if"], check=False)
            raise
        with self.cv:
            if have["created"] is None:
                have["created"] = time.time()
                self.links[eni_id] = have
            have["routes"].update(adding)
        gone = sorted(have["routes"] - want["routes"])
        cmds = []
        for dest in gone:
            cmds += self._withdraw_cmds(have["vpc_if"], dest)
        netns.ip_batch(self.vpc_ns, cmds, force=True)
        with self.cv:
            have["routes"].difference_update(gone)


def _hosts(dest):
    """The addresses a route's destination covers: one, or a prefix's."""
    if "/" not in dest:
        return [dest]
    return [str(a) for a in ipaddress.IPv4Network(dest)]


# The router's source check for IPv6 (it has no rp_filter): over an
# ENI's link (enirN), a global source must be one the router routes back
# over that same link, i.e. an address or /80 the cloud assigned to that
# ENI.  The unspecified and link-local sources of neighbour discovery
# pass.  What is dropped is counted by source in the set `spoofed`.
SRCCHECK6 = """table ip6 srccheck {
	set spoofed { type ipv6_addr; size 65536; flags dynamic; counter; }
	chain prerouting {
		type filter hook prerouting priority mangle; policy accept;
		iifname "enir*" ip6 saddr != { ::, fe80::/10 } fib saddr . iif oif missing update @spoofed { ip6 saddr } drop
	}
}
"""
