"""The real data plane: a router namespace and one namespace per node.

The model says what should exist (an attached ENI whose link delay has
passed has a veth; each of its addresses has a /32 route toward it, each
of its delegated prefixes a /28 route); one worker thread makes the
kernel match, ENI by ENI, in request order.  The worker only ever runs
`ip -n <sim namespace> ...`.
"""
import collections
import ipaddress
import threading
import time

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
        netns.ip_batch(ns, ["link set lo up"] +
                       ["addr add %s dev lo" % a for a in VPC_LOCAL] +
                       ["addr add %s/32 dev lo" % s.gateway
                        for s in self.sim.subnet_list] +
                       [c.format(out=out) for c in outside.router_cmds()] +
                       [c.format(peer=peer) for c in peered.router_cmds()])
        netns.ip_batch(out, outside.outside_cmds())
        netns.ip_batch(peer, peered.peer_cmds([self.sim.vpc_cidr]))
        # Forwarding, with no route anywhere but back to the gateway: what
        # the outside host cannot reach gets "network unreachable", as
        # from the internet, rather than silence (a resolver in a node
        # then fails at once, as it did when the router had no default).
        netns.sysctl(out, ("net.ipv4.ip_forward", 1))

    def create_gateway(self, mappings):
        """The internet gateway's translation and filter, once the nodes'
        primary addresses are known: [(private, public), ...]."""
        outside.nft(self.vpc_ns, ["-f", "-"], stdin=outside.ruleset(mappings))

    def create_node(self, i, eni, prefixlen):
        # Three execs a node (batches), so a fleet of them starts quickly.
        ns = self.node_ns(i)
        netns.add_netns(ns)
        self.made_ns.append(ns)
        vpc_if = self._vpc_ifname()
        netns.ip_batch(self.vpc_ns, [
            "link add %s type veth peer name eth0 address %s netns %s"
            % (vpc_if, eni.mac, ns),
            "link set %s up" % vpc_if] +
            self._deliver_cmds(vpc_if, eni.addresses[0], eni.mac, primary=True))
        netns.ip_batch(ns, [
            "link set lo up",
            "addr add %s/%d dev eth0" % (eni.addresses[0], prefixlen),
            "link set eth0 up",
            "route add default via %s dev eth0" % eni.subnet.gateway])
        self.links[eni.id] = {"vpc_if": vpc_if, "node_if": "eth0", "netns": ns,
                              "routes": {eni.addresses[0]}, "created": time.time()}


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
        route = dest if "/" in dest else dest + "/32"
        return ["route replace %s dev %s" % (route, vpc_if)] + [
            "neigh replace %s lladdr %s dev %s nud permanent" % (a, mac, vpc_if)
            for a in _hosts(dest)]

    @staticmethod
    def _withdraw_cmds(vpc_if, dest):
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
                    "routes": set(eni.addresses) | set(eni.prefixes)}

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
                     "link set %s up" % vpc_if]
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
