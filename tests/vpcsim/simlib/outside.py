"""The world beyond the VPC: an internet gateway in the router namespace
and one outside host in a namespace of its own.

EC2's internet gateway translates 1:1 between a private address that has
a public IPv4 address associated and that public address, and drops what
comes from a private address with none.  Here every node's primary
address (its primary ENI's) has one, node i's being PUBLIC_BASE + i; no
other address has.  The gateway is nftables in the router namespace
(`nft -f`, one atomic batch at start): a map each way for the
translation, a filter that admits only mapped sources toward the outside
and counts, by source address, what it admits and what it drops.  The
rest of the router stays stateless, as the VPC fabric is: only traffic
to or from the gateway's link is connection-tracked.

The outside host (OUTSIDE_HOST, TEST-NET-3, never a real host) answers
ping, and a "whoami" service on SERVICE_PORT (TCP and UDP) tells a
client the address and port it saw, then echoes; the VPC host runs the
same service, so that a test can tell translated traffic from
untranslated on either side of the gateway.

With --ipv6 dual the outside host also has OUTSIDE_HOST6 (with the same
ping and whoami service), reached from the VPC untranslated: pods hold
global addresses of the VPC's /56, EC2 has no NAT66, and the gateway's
nftables table (family ip) does not see IPv6 at all.  The outside host
routes back to the VPC's /56 only.
"""
import ipaddress
import json
import os
import selectors
import socket
import subprocess
import threading
import time

from . import ipv6 as v6
from . import netns

OUTSIDE_HOST = "203.0.113.10"      # TEST-NET-3 (RFC 5737)
PUBLIC_CIDR = "198.51.100.0/24"    # TEST-NET-2: the nodes' public addresses
PUBLIC_BASE = 10                   # node i is 198.51.100.(10 + i)
SERVICE_PORT = 7
IGW_IF = "igw0"                    # the router's end of the link
OUT_IF = "eth0"                    # the outside host's end
IGW_MAC = "02:00:c6:33:64:01"
OUT_MAC = "02:00:cb:00:71:0a"
# Next hops with a permanent neighbour entry each and no address on the
# link: nothing on it answers ARP, and nothing in the VPC can reach an
# address of the gateway itself.  The router's next hop is the outside
# host; the outside host's next hop toward the public addresses is a
# label in their range that no node gets.
OUT_NEXT_HOP = OUTSIDE_HOST
IGW_NEXT_HOP = "198.51.100.1"
TABLE = "igw"
MAX_CONN_THREADS = 256
IDLE_S = 10.0
MAX_ECHO = 1 << 20


def public_ip(index):
    net = ipaddress.IPv4Network(PUBLIC_CIDR)
    if not 0 <= index < net.num_addresses - PUBLIC_BASE - 1:
        raise ValueError("no public address for node %d" % index)
    return str(net.network_address + PUBLIC_BASE + index)


def router_cmds():
    """`ip -batch` lines for the router's side of the gateway's link; the
    veth's peer goes straight into the outside namespace (`{out}`)."""
    return ["link add %s address %s type veth peer name %s address %s netns {out}"
            % (IGW_IF, IGW_MAC, OUT_IF, OUT_MAC),
            "link set %s up" % IGW_IF,
            "neigh replace %s lladdr %s dev %s nud permanent"
            % (OUT_NEXT_HOP, OUT_MAC, IGW_IF),
            # The VPC's route table: everything that is not routed in the
            # VPC goes to the internet gateway.
            "route add default via %s dev %s onlink" % (OUT_NEXT_HOP, IGW_IF)]


def router_cmds6():
    """The VPC route table's IPv6 default: the internet gateway, next hop
    a link-local label with a permanent neighbour entry."""
    return ["neigh replace %s lladdr %s dev %s nud permanent"
            % (v6.OUT_NEXT_HOP6, OUT_MAC, IGW_IF),
            "route add ::/0 via %s dev %s" % (v6.OUT_NEXT_HOP6, IGW_IF)]


def outside_cmds6():
    return ["addr add %s/128 dev lo nodad" % v6.OUTSIDE_HOST6,
            "neigh replace %s lladdr %s dev %s nud permanent"
            % (v6.IGW_NEXT_HOP6, IGW_MAC, OUT_IF),
            "route add %s via %s dev %s" % (v6.VPC_CIDR6, v6.IGW_NEXT_HOP6, OUT_IF)]


def outside_cmds():
    # No route to any private address: the internet has none.
    return ["link set lo up",
            "addr add %s/32 dev lo" % OUTSIDE_HOST,
            "link set %s up" % OUT_IF,
            "neigh replace %s lladdr %s dev %s nud permanent"
            % (IGW_NEXT_HOP, IGW_MAC, OUT_IF),
            "route add %s via %s dev %s onlink" % (PUBLIC_CIDR, IGW_NEXT_HOP, OUT_IF)]


def ruleset(mappings):
    """The gateway's nftables table, from [(private, public), ...]."""
    def elements(items):
        return "elements = { %s };" % ", ".join(items) if items else ""

    to_pub = elements(["%s : %s" % (a, b) for a, b in mappings])
    to_priv = elements(["%s : %s" % (b, a) for a, b in mappings])
    mapped = elements([a for a, _ in mappings])
    body = """table ip %(t)s {
	map to_public { type ipv4_addr : ipv4_addr; %(to_pub)s }
	map to_private { type ipv4_addr : ipv4_addr; %(to_priv)s }
	set mapped { type ipv4_addr; %(mapped)s }
	set admitted { type ipv4_addr; size 65536; flags dynamic; counter; }
	set dropped { type ipv4_addr; size 65536; flags dynamic; counter; }
	counter dropped_inbound { }
	chain stateless_in {
		type filter hook prerouting priority raw; policy accept;
		iifname != "%(igw)s" fib daddr oifname != "%(igw)s" notrack
	}
	chain stateless_out {
		type filter hook output priority raw; policy accept;
		oifname != "%(igw)s" notrack
	}
	chain nat_in {
		type nat hook prerouting priority dstnat; policy accept;
		iifname "%(igw)s" dnat to ip daddr map @to_private
	}
	chain gateway {
		type filter hook forward priority filter; policy accept;
		iifname "%(igw)s" ip daddr @mapped accept
		iifname "%(igw)s" counter name dropped_inbound drop
		oifname "%(igw)s" ip saddr @mapped update @admitted { ip saddr } accept
		oifname "%(igw)s" update @dropped { ip saddr } drop
	}
	chain local_in {
		type filter hook input priority filter; policy accept;
		iifname "%(igw)s" counter name dropped_inbound drop
	}
	chain local_out {
		type filter hook output priority filter; policy accept;
		oifname "%(igw)s" drop
	}
	chain nat_out {
		type nat hook postrouting priority srcnat; policy accept;
		oifname "%(igw)s" snat to ip saddr map @to_public
	}
}
""" % {"t": TABLE, "igw": IGW_IF, "to_pub": to_pub, "to_priv": to_priv,
       "mapped": mapped}
    return body


NFT = next((p for p in ("/usr/sbin/nft", "/sbin/nft") if os.path.exists(p)),
           "/usr/sbin/nft")


def nft(ns, args, stdin=None):
    """Run nft inside a namespace (through nsenter, which is cheaper than
    `ip netns exec`: that one also remounts /sys)."""
    cmd = ["nsenter", "--net=/run/netns/" + ns, NFT] + list(args)
    try:
        p = subprocess.run(cmd, input=stdin, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True,
                           timeout=netns.CMD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise netns.NetnsError("timed out: %s" % " ".join(cmd))
    if p.returncode != 0:
        raise netns.NetnsError("%s: %s" % (" ".join(cmd), p.stderr.strip()))
    return p.stdout


def nft_present():
    return os.path.exists(NFT)


def read_counters(vpc_ns):
    """{"admitted": {src: {packets, bytes}}, "dropped": {...},
    "dropped_inbound": {packets, bytes}} from the gateway's table."""
    out = json.loads(nft(vpc_ns, ["-j", "list", "table", "ip", TABLE]))
    res = {"admitted": {}, "dropped": {}, "dropped_inbound": {"packets": 0, "bytes": 0}}
    for obj in out.get("nftables", []):
        if "set" in obj and obj["set"]["name"] in ("admitted", "dropped"):
            into = res[obj["set"]["name"]]
            # An element with a counter is {"elem": {"val", "counter"}}.
            for e in obj["set"].get("elem", []):
                e = e.get("elem", e) if isinstance(e, dict) else {"val": e}
                c = e.get("counter") or {}
                into[str(e["val"])] = {"packets": c.get("packets", 0),
                                       "bytes": c.get("bytes", 0)}
        elif "counter" in obj and obj["counter"].get("name") == "dropped_inbound":
            res["dropped_inbound"] = {"packets": obj["counter"].get("packets", 0),
                                      "bytes": obj["counter"].get("bytes", 0)}
    return res


class Whoami:
    """TCP and UDP services that answer "ADDR PORT\\n" (the peer as seen
    here), then echo.  One selector thread for every listening socket,
    one thread per TCP connection (at most MAX_CONN_THREADS; beyond, the
    connection gets its line and is closed), and a pipe that stops it at
    once."""

    def __init__(self, log):
        self.log = log
        self.sel = selectors.DefaultSelector()
        self.rfd, self.wfd = os.pipe()
        self.sel.register(self.rfd, selectors.EVENT_READ, None)
        self.lock = threading.Lock()
        self.seen = {}                     # name -> {"tcp": {addr: n}, "udp": ...}
        self.slots = threading.BoundedSemaphore(MAX_CONN_THREADS)
        self.thread = None
        self.socks = []

    def listen(self, name, ns, addr, port):
        """Serve on addr (IPv4 or IPv6) in ns; what a name's services see
        is counted together (an IPv6 address beside the IPv4 ones)."""
        fam = socket.AF_INET6 if ":" in addr else socket.AF_INET

        def make():
            t = socket.socket(fam, socket.SOCK_STREAM)
            u = socket.socket(fam, socket.SOCK_DGRAM)
            try:
                t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                t.bind((addr, port))
                t.listen(512)
                u.bind((addr, port))
            except OSError:
                t.close()
                u.close()
                raise
            return t, u
        t, u = netns.socket_in_netns(ns, make)
        for s, kind in ((t, "tcp"), (u, "udp")):
            s.setblocking(False)
            self.socks.append(s)
            self.sel.register(s, selectors.EVENT_READ, (name, kind))
        with self.lock:
            self.seen.setdefault(name, {"tcp": {}, "udp": {}})

    def start(self):
        self.thread = threading.Thread(target=self._run, name="whoami", daemon=True)
        self.thread.start()

    def stop(self):
        os.write(self.wfd, b"x")
        if self.thread:
            self.thread.join(5)
        for s in self.socks:
            s.close()
        self.sel.close()
        os.close(self.rfd)
        os.close(self.wfd)

    def snapshot(self, name):
        with self.lock:
            s = self.seen.get(name, {"tcp": {}, "udp": {}})
            return {"tcp": dict(s["tcp"]), "udp": dict(s["udp"])}

    def _count(self, name, kind, addr):
        with self.lock:
            d = self.seen[name][kind]
            d[addr] = d.get(addr, 0) + 1

    def _run(self):
        while True:
            for key, _ in self.sel.select():
                if key.data is None:
                    return
                name, kind = key.data
                try:
                    if kind == "tcp":
                        self._accept(key.fileobj, name)
                    else:
                        self._datagram(key.fileobj, name)
                except OSError as e:
                    self.log("whoami %s/%s: %s" % (name, kind, e))

    def _datagram(self, s, name):
        for _ in range(64):
            try:
                data, peer = s.recvfrom(65535)
            except BlockingIOError:
                return
            self._count(name, "udp", peer[0])
            try:
                s.sendto(("%s %d\n" % peer[:2]).encode() + data[:1400], peer)
            except OSError:
                pass

    def _accept(self, s, name):
        for _ in range(64):
            try:
                c, peer = s.accept()
            except BlockingIOError:
                return
            self._count(name, "tcp", peer[0])
            line = ("%s %d\n" % peer[:2]).encode()
            if not self.slots.acquire(blocking=False):
                try:
                    c.setblocking(False)
                    c.send(line)
                except OSError:
                    pass
                c.close()
                continue
            threading.Thread(target=self._serve, args=(c, line), daemon=True).start()

    def _serve(self, c, line):
        try:
            c.setblocking(True)
            c.settimeout(IDLE_S)
            c.sendall(line)
            total = 0
            while total < MAX_ECHO:
                data = c.recv(65536)
                if not data:
                    break
                c.sendall(data)
                total += len(data)
        except OSError:
            pass
        finally:
            c.close()
            self.slots.release()


def connect(ns, src, dst, port, timeout_s, send=None, limit=65536):
    """Open a TCP connection from `src` in namespace `ns`, send `send`,
    read until the peer closes, `limit` bytes or the deadline.  Always
    returns a dict; "ok" says whether the connection was made."""
    t0 = time.monotonic()
    deadline = t0 + timeout_s
    v6 = ":" in dst
    res = {"ok": False, "from": src,
           "to": ("[%s]:%d" if v6 else "%s:%d") % (dst, port)}

    def make():
        return socket.socket(socket.AF_INET6 if v6 else socket.AF_INET,
                             socket.SOCK_STREAM)
    s = netns.socket_in_netns(ns, make)
    try:
        s.bind((src, 0))
        s.settimeout(timeout_s)
        try:
            s.connect((dst, port))
        except OSError as e:
            res["error"] = "connect: %s" % (e.strerror or str(e) or type(e).__name__)
            return res
        res["ok"] = True
        res["local"] = ("[%s]:%d" if v6 else "%s:%d") % s.getsockname()[:2]
        got = bytearray()
        eof = False
        try:
            if send:
                s.settimeout(max(0.001, deadline - time.monotonic()))
                s.sendall(send.encode())
            while len(got) < limit:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                s.settimeout(left)
                data = s.recv(min(65536, limit - len(got)))
                if not data:
                    eof = True
                    break
                got += data
        except socket.timeout:
            pass
        except OSError as e:
            res["error"] = "after connect: %s" % (e.strerror or str(e))
        res["peer_reply"] = got.decode("utf-8", "replace")
        res["eof"] = eof
        return res
    finally:
        s.close()
        res["elapsed_ms"] = round((time.monotonic() - t0) * 1000, 1)
