"""Helpers for enid-netd's integration tests and benchmark: a throwaway
network namespace, and netd_drive (the stand-in broker) running inside it.

Everything here runs as root and touches only namespaces it creates
(named enid-t-netd-*); every wait is bounded.
"""
import contextlib
import json
import os
import queue
import secrets
import select
import socket
import struct
import subprocess
import threading
import time

import pytest

import podwire

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.path.dirname(os.path.dirname(HERE))
# ENID_BUILDDIR, else build/ or build-san/ (where tests/run-all builds),
# else in-tree.
BUILDDIR = os.environ.get("ENID_BUILDDIR") or next(
    (d for d in (os.path.join(SRCDIR, "build"),
                 os.path.join(SRCDIR, "build-san"), SRCDIR)
     if os.access(os.path.join(d, "netd", "enid-netd"), os.X_OK)), SRCDIR)
NETD = os.path.join(BUILDDIR, "netd", "enid-netd")
DRIVE = os.path.join(BUILDDIR, "tests", "integration", "netd_drive")
for _prog in (NETD, DRIVE):
    if not os.access(_prog, os.X_OK):
        raise SystemExit("%s is not built (set ENID_BUILDDIR to the build "
                         "tree)" % _prog)

PRIMARY_MAC = "02:00:00:00:00:01"
PRIMARY_IP = "10.0.0.10"        # eth0's, /20
GATEWAY = "10.0.0.1"            # the main table's default route, via eth0
VPC = "10.0.0.0/16"
PROTO = 233                     # netd's tag (NETD_PROTO in netd/policy.h)
CARRIER_FLAGS = ("NO-CARRIER", "LOWER_UP")   # Netns.state() leaves out
RTMGRP_IPV6_IFADDR = 0x100      # linux/rtnetlink.h
RTM_NEWADDR = 20
CONFIG = {"user": "enid",
          "routing": {"table_base": 100, "rule_priority_to": 512,
                      "rule_priority_from": 1536}}
# netd's connection-mark rule (routing.connmark's default 0x80), as
# `ip rule` prints it.
CONNMARK_RULE = "512:\tfrom all fwmark 0x80/0x80 lookup main proto %d" % PROTO

# What every test of netd needs: root, and netd and its driver built.
NEEDS_NETD = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root"),
    pytest.mark.skipif(not (os.access(NETD, os.X_OK) and
                            os.access(DRIVE, os.X_OK)),
                       reason="enid-netd or netd_drive not built"),
]


def _ip_key(cidr):
    a, _, p = cidr.partition("/")
    return tuple(int(x) for x in a.split(".")), int(p or 32)


def eni_table(gw, dev, snat=True, untranslated=(VPC,), primary_gw=GATEWAY,
              primary="eth0"):
    """`ip route show table T` of an ENI's table as netd makes it, in the
    kernel's order (by address, shorter prefix first).  SNAT off: the
    ENI's gateway and the default through it.  SNAT on (the default
    configuration): the VPC's CIDRs and snat.exclude via the ENI's
    gateway, the rest via the primary link's gateway, onlink."""
    routes = [("%s/32" % gw, "%s dev %s proto %d scope link"
               % (gw, dev, PROTO))]
    if not snat:
        routes.append(("0.0.0.0/0", "default via %s dev %s proto %d"
                       % (gw, dev, PROTO)))
    else:
        routes += [(c, "%s via %s dev %s proto %d" % (c, gw, dev, PROTO))
                   for c in untranslated]
        routes.append(("0.0.0.0/0", "default via %s dev %s proto %d onlink"
                       % (primary_gw, primary, PROTO)))
    return [line for _, line in sorted(routes, key=lambda r: _ip_key(r[0]))]


def run(*argv, check=True, timeout=10):
    return subprocess.run(argv, check=check, timeout=timeout,
                          capture_output=True, text=True)


class Netns:
    """A fresh namespace with lo up and a 'primary interface' as netd must
    find it: eth0, a veth carrying PRIMARY_MAC, up with PRIMARY_IP/20 and
    the main table's default route via GATEWAY.  Removed on exit, also
    after failures."""

    def __init__(self):
        self.name = "enid-t-netd-" + secrets.token_hex(4)

    def addr_add_announced(self, fam, addr, dev):
        """`ip addr add ADDR dev DEV nodad`, returning once the kernel has
        announced the address.  It announces an IPv6 one from its work
        queue, an instant after the add has returned, and netd counts an
        address somebody else adds from its announcement (netd.c,
        netd_addrs_free()): a test waits for it, as a node's own tools
        have long before a pod comes."""
        if fam == "-4":
            self.ip(fam, "addr", "add", addr, "dev", dev)
            return
        sk = podwire.in_netns(self.name, lambda: socket.socket(
            socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE))
        want = socket.inet_pton(socket.AF_INET6, addr.split("/")[0])
        try:
            sk.bind((0, RTMGRP_IPV6_IFADDR))
            self.ip(fam, "addr", "add", addr, "dev", dev, "nodad")
            end = time.monotonic() + 10
            while time.monotonic() < end:
                if not select.select([sk], [], [], 0.5)[0]:
                    continue
                buf = sk.recv(65536)
                while len(buf) >= 16:
                    ln, typ = struct.unpack_from("IH", buf)
                    if ln < 16:
                        break
                    if typ == RTM_NEWADDR and want in buf[16:ln]:
                        return
                    buf = buf[(ln + 3) & ~3:]
            raise AssertionError("no announcement of %s on %s" % (addr, dev))
        finally:
            sk.close()

    def __enter__(self):
        run("ip", "netns", "add", self.name)
        try:
            # No duplicate address detection: an IPv6 link-local address
            # is never "tentative" for a moment, so snapshots compare.
            podwire.sysctl(self.name, ("net.ipv6.conf.all.accept_dad", "0"),
                           ("net.ipv6.conf.default.accept_dad", "0"))
            podwire.ip_batch(self.name, (
                ("link", "set", "lo", "up"),
                ("link", "add", "eth0", "address", PRIMARY_MAC, "type",
                 "veth", "peer", "name", "eth0p"),
                ("link", "set", "eth0p", "up"),
                ("link", "set", "eth0", "up"),
                ("addr", "add", PRIMARY_IP + "/20", "dev", "eth0"),
                ("route", "add", "default", "via", GATEWAY, "dev", "eth0")))
        except Exception:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        run("ip", "netns", "del", self.name, check=False)

    def ip(self, *args, check=True):
        return run("ip", "-n", self.name, *args, check=check).stdout

    def sysctl(self, key, value):
        podwire.sysctl(self.name, (key, value))

    def ipj(self, *args):
        out = self.ip("-j", *args).strip()
        return json.loads(out) if out else []

    def add_eni(self, name, mac):
        podwire.ip_batch(self.name, (
            ("link", "add", name, "address", mac, "type", "veth", "peer",
             "name", name + "p"),
            ("link", "set", name + "p", "up")))

    def state(self):
        """What a refused request must not change (one exec).  A link's
        carrier (NO-CARRIER, LOWER_UP) is the kernel's to report, a
        moment after the link comes up (linkwatch): no request sets it,
        and a snapshot taken in that moment differs from the next."""
        st = podwire.kernel_state(self.name)
        return {"rules": st["rule"], "routes": st["route"],
                "addrs": st["addr"],
                "links": [(l["ifname"], l.get("address"), l.get("mtu"),
                           [f for f in l.get("flags", [])
                            if f not in CARRIER_FLAGS])
                          for l in st["link"]]}

    def kernel_state(self):
        """Everything, for the hostile-broker tests: each field ip(8)
        prints of `ip link`, `ip addr`, `ip rule`, `ip route show table
        all` (podwire.kernel_state)."""
        return podwire.kernel_state(self.name)


class Driver:
    """netd_drive inside a namespace; requests by id, answers as dicts."""

    def __init__(self, ns, tmpdir, verbose=True, config=None):
        self.ns = ns
        self.conf = os.path.join(tmpdir, "enid.conf")
        with open(self.conf, "w") as f:
            json.dump(config or CONFIG, f)
        self.log_path = os.path.join(tmpdir, "netd.log")
        self.log = open(self.log_path, "w")
        argv = ["ip", "netns", "exec", ns.name, DRIVE]
        if verbose:
            argv.append("-v")
        argv += [NETD, self.conf]
        # LeakSanitizer's exit-time scan needs ptrace, which netd's filter
        # rightly refuses; in a sanitizer build leaks are checked by the
        # unit tests, not here.
        env = dict(os.environ)
        env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, env=env,
                                     stdout=subprocess.PIPE,
                                     stderr=self.log, text=True, bufsize=1)
        self.answers = {}
        # Called on the reader thread with each answer as it comes, before
        # wait() can see it (the benchmarks' durable ceiling).
        self.on_answer = None
        self.events = queue.Queue()
        self.cond = threading.Condition()
        self.next_id = 1
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        started = self.event("started")
        self.pid = started["pid"]

    def _read(self):
        for line in self.proc.stdout:
            try:
                obj = json.loads(line)
            except ValueError:
                obj = {"event": "garbage", "line": line}
            if "event" in obj:
                self.events.put(obj)
            else:
                if self.on_answer is not None:
                    self.on_answer(obj)
                with self.cond:
                    self.answers[obj["id"]] = obj
                    self.cond.notify_all()
        self.events.put({"event": "eof"})

    def event(self, name, timeout=5):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no %s event" % name)
            ev = self.events.get(timeout=left)
            if ev["event"] == name:
                return ev

    def send(self, line):
        rid = self.next_id
        self.next_id += 1
        self.proc.stdin.write("%d %s\n" % (rid, line))
        self.proc.stdin.flush()
        return rid

    def wait(self, rid, timeout=5):
        with self.cond:
            if not self.cond.wait_for(lambda: rid in self.answers, timeout):
                raise TimeoutError("no answer to request %d" % rid)
            return self.answers.pop(rid)

    def call(self, line, timeout=5):
        return self.wait(self.send(line), timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def declare(self, mac, table=101):
        """The ENI of mac declared as table's: self, for a chain after
        start()."""
        r = self.call("declare mac=%s table=%d" % (mac, table))
        assert r["status"] == "ok", r
        return self

    def start(self, mac=PRIMARY_MAC, cidrs=(VPC,)):
        assert self.call("hello")["type"] == "HELLO_ACK"
        r = self.call("policy mac=%s %s" % (
            mac, " ".join("cidr=" + c for c in cidrs)))
        assert r["status"] == "ok", r
        return self

    def close(self, timeout=5):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=timeout)
        self.log.close()

    def logtext(self):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path) as f:
            return f.read()


@contextlib.contextmanager
def eni_node(mac):
    """A node's namespace (Netns) with eth0's IPv6 default route through
    fe80::1 and one ENI, eni1, of mac."""
    with Netns() as ns:
        ns.ip("-6", "route", "add", "default", "via", "fe80::1", "dev",
              "eth0")
        ns.add_eni("eni1", mac)
        yield ns
