"""Test helpers: talk to enid's CNI socket, and wire a pod the way the
plugin does, with iproute2 (a veth pair, the pod's /32, a default route
via a link-local gateway with a static neighbour, a /32 host route), so
the pool engine's tests don't depend on enid-cni."""
import ctypes
import json
import os
import socket
import subprocess
import threading
import time

GATEWAY = "169.254.1.1"


def cni(sock, req, timeout=30):
    """One request line, one answer line; returns (answer, elapsed s)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    t0 = time.monotonic()
    s.connect(str(sock))
    s.sendall((json.dumps(req) + "\n").encode())
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    return json.loads(data), time.monotonic() - t0


def add(sock, cid, ifname="eth0", timeout=30, **k8s):
    req = {"op": "add", "container_id": cid, "ifname": ifname}
    req.update(k8s)
    return cni(sock, req, timeout)


def delete(sock, cid, ifname="eth0", timeout=30):
    return cni(sock, {"op": "del", "container_id": cid, "ifname": ifname},
               timeout)


def run(*argv, check=True):
    return subprocess.run(argv, check=check, capture_output=True, text=True)


# ---- iproute2, one exec for many commands ----
#
# Each `ip` exec costs a few milliseconds of CPU, and the tests make
# thousands; `ip -batch -` runs many commands for about the price of one.

def ip_batch(ns, cmds, opts=(), check=True):
    """Run cmds (each a sequence of arguments, none with white space) in
    namespace ns with one `ip [opts] -n ns -batch -`; it stops at the
    first command that fails."""
    lines = []
    for cmd in cmds:
        assert cmd and not any(not a or any(c.isspace() or c in "\"'#"
                                            for c in a) for a in cmd), cmd
        lines.append(" ".join(cmd) + "\n")
    return subprocess.run(["ip", *opts, "-n", ns, "-batch", "-"],
                          input="".join(lines), check=check,
                          capture_output=True, text=True)


def ip_dumps(ns, *cmds, family=None):
    """The JSON of several dumps (`ip -j [-4] -n ns CMD`), in one exec.
    In JSON mode each command of a batch prints exactly one document on
    one line, an empty dump `[]` (iproute2 6.1), so the output splits by
    lines.  An iproute2 that printed nothing for an empty dump would
    leave fewer lines than commands, and which one was empty unknown:
    then each command runs on its own.  Dump addresses before links:
    after a link dump, a batch's address dumps carry each link's
    "linkmode" too (ip's state left over), unlike `ip -j addr`'s."""
    opts = ["-j"] + (["-%d" % family] if family else [])
    docs = ip_batch(ns, cmds, opts).stdout.splitlines()
    if len(docs) != len(cmds):
        docs = [run("ip", *opts, "-n", ns, *cmd).stdout.strip()
                for cmd in cmds]
    return [json.loads(d) if d.strip() else [] for d in docs]


def kernel_state(ns, family=None):
    """What before/after comparisons compare, in one exec: every link
    (`ip link`), address (`ip addr`), route in every table (`ip route
    show table all`) and rule (`ip rule`), as ip -j prints them (each
    field ip(8) prints as text).  family=4: IPv4 addresses and routes
    only (links are the same either way; `ip rule` is IPv4's anyway)."""
    addr, link, route, rule = ip_dumps(
        ns, ("addr",), ("link",), ("route", "show", "table", "all"),
        ("rule",), family=family)
    return {"link": link, "addr": addr, "route": route, "rule": rule}


class Pod:
    """A pod namespace wired into a node namespace with its address."""
    n = 0

    def __init__(self, node_ns, ip, prefix="p"):
        Pod.n += 1
        self.node = node_ns
        self.ip = ip
        # Namespace names are the host's: this process's own, apart from
        # another run's or another xdist worker's.
        self.ns = "%s%d-%d-%d" % (prefix, os.getpid(), Pod.n,
                                  int(time.time() * 1000) % 100000)
        self.host_if = "vh%d" % Pod.n
        # The host side's MAC, the pod's static neighbour for its gateway,
        # chosen here rather than read back: locally administered, this
        # process's and this pod's (0e: is no test's ENI).
        mac = "0e:%02x:%02x:%02x:%02x:%02x" % (
            (os.getpid() >> 16) & 0xff, (os.getpid() >> 8) & 0xff,
            os.getpid() & 0xff, (Pod.n >> 8) & 0xff, Pod.n & 0xff)
        run("ip", "netns", "add", self.ns)
        # Three execs.  The node's side first, up (the route to the pod
        # needs no carrier yet), so that the pod's eth0 coming up is what
        # brings both ends' carrier: its queue is attached right then,
        # while the end that was up first waits for linkwatch's work,
        # asynchronous, and a ping sent through that end at once could be
        # dropped.
        ip_batch(self.node, (
            ("link", "add", self.host_if, "address", mac, "type", "veth",
             "peer", "name", "eth0", "netns", self.ns),
            ("link", "set", self.host_if, "up"),
            ("route", "add", ip + "/32", "dev", self.host_if)))
        ip_batch(self.ns, (
            ("link", "set", "lo", "up"),
            ("addr", "add", ip + "/32", "dev", "eth0"),
            ("link", "set", "eth0", "up"),
            ("route", "add", GATEWAY, "dev", "eth0", "scope", "link"),
            ("route", "add", "default", "via", GATEWAY, "dev", "eth0"),
            ("neigh", "add", GATEWAY, "lladdr", mac, "dev", "eth0", "nud",
             "permanent")))

    def ping(self, host, count=1, wait=2):
        r = in_netns(self.ns, lambda: run(
            "ping", "-c", str(count), "-W", str(wait), "-q", host,
            check=False))
        return r.returncode == 0

    def remove(self):
        run("ip", "-n", self.node, "link", "del", self.host_if, check=False)
        run("ip", "netns", "del", self.ns, check=False)


# ---- inside a namespace without an exec ----

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def in_netns(ns, fn):
    """fn()'s result, called in a thread of its own that has entered
    network namespace ns (what it opens, and what it runs, are ns's); the
    thread ends with it, so no other thread's namespace changes."""
    out = {}

    def body():
        try:
            fd = os.open("/run/netns/" + ns, os.O_RDONLY)
            try:
                if _libc.setns(fd, CLONE_NEWNET) != 0:
                    e = ctypes.get_errno()
                    raise OSError(e, "setns(%s): %s" % (ns, os.strerror(e)))
            finally:
                os.close(fd)
            out["ok"] = fn()
        except BaseException as e:     # noqa: B902 (re-raised below)
            out["err"] = e
    t = threading.Thread(target=body, name="in-netns-" + ns)
    t.start()
    t.join()
    if "err" in out:
        raise out["err"]
    return out["ok"]


def sysctl(ns, *pairs):
    """`sysctl -qw key=value ...` inside ns, in order, with no exec:
    /proc/sys/net is the namespace of the thread that opens it."""
    def write():
        for key, value in pairs:
            with open("/proc/sys/" + key.replace(".", "/"), "w") as f:
                f.write("%s\n" % value)
    in_netns(ns, write)


def prepare_node(node_ns):
    """What the plugin's host side needs in the node: forwarding, and loose
    reverse-path checks (replies to pods on secondary ENIs arrive there)."""
    sysctl(node_ns, ("net.ipv4.ip_forward", "1"),
           ("net.ipv4.conf.all.rp_filter", "2"),
           ("net.ipv4.conf.default.rp_filter", "2"))
