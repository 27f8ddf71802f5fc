"""A hostile broker against the real enid-cni, in both roles: a fake
cni.sock, served as the enid user (fake_cnisock.py), answers each ADD as a
compromised broker could, and real enid-netd (through netd_drive) installs
its tagged rules for the addresses a broker could have it accept: any in
the VPC that is none of the node's own.  For every case the plugin must
exit with a CNI error naming the cause (enid's code; the field and the
value in the message), give the address back with a DEL of its own, and
leave the node and the pod as they were: `ip link`, `ip addr`, `ip rule`
and `ip route show table all` of the node, and the pod's links, addresses
and routes, are compared as text before the ADD, right after it, and
after the runtime's DEL.  A plausible answer for an address netd accepted
must still work, so a plugin that refuses everything fails here.

Roles: "main" runs enid-cni as the runtime would; "ipam" runs the
reference ptp with enid-ipam as its IPAM plugin, so an address let
through would be routed by ptp on the node.

The node: eth0 10.0.0.10/20 (default via 10.0.0.1), a secondary ENI set
up by netd (10.0.16.5/20, table 101: the VPC via 10.0.16.1, the rest via
10.0.0.1 dev eth0, as SNAT is on by default), a static
route via 10.0.0.7, a /32 in table 150, and a pod wired by the plugin
itself at 10.0.0.50 that no case may disturb.

    ENID_BUILDDIR=$PWD/build /usr/bin/python3 -m pytest -q \\
        tests/integration/test_cni_hostile.py
"""
import json
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netd_helpers import (PRIMARY_IP, Driver,  # noqa: E402
                          Netns, run)
from netd_helpers import NEEDS_NETD  # noqa: E402
from conftest import built, for_unprivileged  # noqa: E402
import podwire  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = os.path.join(HERE, "fake_cnisock.py")
PTP = "/usr/lib/cni/ptp"
ENI1 = "02:00:00:00:00:11"
POD_A = "10.0.0.50"         # wired first, by a plausible answer
GOOD = "10.0.0.60"          # netd accepted it; a plausible answer works
GOOD_ENI = "10.0.16.60"     # the same, for a pod on the secondary ENI
STATIC_GW = "10.0.0.7"      # the node's static route goes via it
TABLE_ROUTED = "10.0.0.52"  # a /32 in table 150
FORGED = "10.0.0.53"        # a rule without netd's tag
NEVER = "10.0.0.99"         # in the VPC, never accepted by netd

pytestmark = NEEDS_NETD + [
    pytest.mark.skipif(not os.access(PTP, os.X_OK),
                       reason="containernetworking-plugins not installed"),
]


def answer(ip, **over):
    """A plausible ADD answer, as the broker formats it."""
    a = {"ok": True, "ip": ip, "prefix": 32, "eni": "eni-0a97",
         "eni_mac": "02:00:00:00:00:11", "table": 0,
         "subnet": "10.0.0.0/20", "subnet_gateway": "10.0.0.1",
         "vpc_cidrs": ["10.0.0.0/16"]}
    a.update(over)
    return json.dumps(a, separators=(",", ":")) + "\n"


def raw(text):
    return {"answer": text}


# (name, script, CNI code, needles in "msg")
ADDRESS_CASES = [
    ("imds", raw(answer("169.254.169.254")), 124,
     ['"ip" 169.254.169.254', "link-local"]),
    ("loopback", raw(answer("127.0.0.1")), 124, ["127.0.0.1", "loopback"]),
    ("mdns", raw(answer("224.0.0.251")), 124, ["224.0.0.251", "multicast"]),
    ("broadcast", raw(answer("255.255.255.255")), 124,
     ["255.255.255.255", "broadcast"]),
    ("class-e", raw(answer("240.0.0.1")), 124, ["240.0.0.1", "reserved"]),
    ("this-net", raw(answer("0.1.2.3")), 124, ["0.1.2.3", "0.0.0.0/8"]),
    ("pod-gateway", raw(answer("169.254.1.1")), 124,
     ["169.254.1.1", "own link-local gateway"]),
    ("node-address", raw(answer(PRIMARY_IP)), 124,
     [PRIMARY_IP, "address of the node (on eth0)"]),
    ("eni-address", raw(answer("10.0.16.5")), 124,
     ["10.0.16.5", "address of the node (on eni1)"]),
    ("default-gateway", raw(answer("10.0.0.1")), 124,
     ["10.0.0.1", "10.0.0.0/20", "router"]),
    ("eni-gateway", raw(answer("10.0.16.1")), 124, ["10.0.16.1"]),
    ("vpc-dns", raw(answer("10.0.0.2")), 124, ["10.0.0.2", "DNS"]),
    ("subnet-broadcast", raw(answer("10.0.15.255")), 124,
     ["10.0.15.255", "broadcast"]),
    ("static-gateway", raw(answer(STATIC_GW)), 124,
     [STATIC_GW, "gateway of the node (table 254, dev eth0)"]),
    ("other-pod", raw(answer(POD_A)), 125,
     [POD_A, "already routes", "table 254"]),
    ("table-route", raw(answer(TABLE_ROUTED)), 125,
     [TABLE_ROUTED, "table 150"]),
    ("outside-vpc", raw(answer("8.8.8.8")), 126,
     ["8.8.8.8", "holds no rule", "never accepted"]),
    ("never-accepted", raw(answer(NEVER)), 126, [NEVER, "holds no rule"]),
    ("untagged-rule", raw(answer(FORGED)), 126, [FORGED, "holds no rule"]),
]

MALFORMED_CASES = [
    ("ip-number", raw('{"ok":true,"ip":167772220}\n'), 123,
     ['"ip" must be a string, not 167772220']),
    ("ok-string", raw('{"ok":"true","ip":"%s"}\n' % GOOD), 123,
     ['"ok" must be true or false, not "true"']),
    ("prefix-string", raw(answer(GOOD, prefix="32")), 123,
     ['"prefix" must be an integer', '"32"']),
    ("prefix-24", raw(answer(GOOD, prefix=24)), 123,
     ['"prefix" is 24, not 32']),
    ("cidrs-string", raw(answer(GOOD, vpc_cidrs="10.0.0.0/16")), 123,
     ['"vpc_cidrs" must be an array', '"10.0.0.0/16"']),
    ("ip-cidr", raw(answer(GOOD + "/32")), 123,
     ['"ip" "%s/32" is not an IPv4 address' % GOOD]),
    ("ip-object", raw('{"ok":true,"ip":{"addr":"%s"}}\n' % GOOD), 123,
     ['"ip" must be a string, not {']),
    ("table-huge", raw(answer(GOOD, table=2 ** 40)), 123,
     ['"table" must be an integer from 0 to 4294967295', str(2 ** 40)]),
    ("oversize-line", raw(answer(GOOD, eni="e" * 70000)), 123,
     ["longer than 65536 bytes"]),
    ("oversize-field", raw(answer(GOOD, eni="eni-" + "0" * 100)), 123,
     ['"eni" is longer than 63 bytes', "eni-000"]),
    ("oversize-error", raw(json.dumps({"ok": False, "code": "internal",
                                       "error": "x" * 600}) + "\n"), 123,
     ['"error" is longer than 511 bytes']),
    ("slow-drip", {"answer": answer(GOOD), "drip_ms": 40}, 123,
     ["no newline within 2000 ms of the first"]),
    ("closed-early", {"answer": answer(GOOD), "close_after": 30}, 123,
     ["closed after 30 bytes"]),
    # Nothing at all is what a broker that died leaves: try again.
    ("closed-at-once", {"answer": answer(GOOD), "close_after": 0}, 11,
     ["enid closed the connection without answering"]),
    ("extra-field", raw(answer(GOOD, colour="blue")), 123,
     ['unknown field "colour"']),
    ("duplicate-key", raw(answer(GOOD)[:-2] +
                          ',"ip":"169.254.169.254"}\n'), 123,
     ['field "ip" appears twice']),
    ("invalid-utf8", raw(answer(GOOD, eni="ENI").replace(
        "ENI", "eni-\xff\xfe")), 123,
     ["not valid UTF-8", "0xff"]),
    ("two-lines", raw(answer(GOOD) + answer("169.254.169.254")), 123,
     ["bytes after the line's newline"]),
    ("not-json", raw("HTTP/1.1 200 OK\n"), 123,
     ["not a JSON object: HTTP/1.1 200 OK"]),
    ("nul-byte", raw(answer(GOOD)[:10] + "\0" + answer(GOOD)[10:]), 123,
     ["a NUL byte at byte 10"]),
    ("array", raw('[{"ok":true,"ip":"%s"}]\n' % GOOD), 123,
     ["not a JSON object: ["]),
    ("failed-with-ip", raw('{"ok":false,"code":"x","ip":"%s"}\n' % GOOD),
     123, ['field "ip" in a failed answer']),
]

CASES = ADDRESS_CASES + MALFORMED_CASES
ROLES = ["main", "ipam"]


class FakeSock:
    """fake_cnisock.py as user, in a directory it owns."""

    def __init__(self, user):
        self.dir = tempfile.mkdtemp(prefix="enid-cnih-")
        os.chmod(self.dir, 0o755)
        pw = pwd.getpwnam(user) if isinstance(user, str) else \
            pwd.getpwuid(user)
        os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        self.sock = os.path.join(self.dir, "cni.sock")
        self.script = os.path.join(self.dir, "script.json")
        self.log = os.path.join(self.dir, "requests.log")
        self.set(raw(answer(GOOD)))
        self.proc = subprocess.Popen(
            ["setpriv", "--reuid=%d" % pw.pw_uid, "--regid=%d" % pw.pw_gid,
             "--clear-groups", "/usr/bin/python3", for_unprivileged(FAKE),
             self.sock, self.script, self.log], stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready"

    def set(self, script):
        with open(self.script, "w") as f:
            json.dump(script, f)
        os.chmod(self.script, 0o644)

    def requests(self):
        try:
            with open(self.log) as f:
                return [json.loads(l) for l in f]
        except FileNotFoundError:
            return []

    def close(self):
        self.proc.kill()
        self.proc.wait(5)
        shutil.rmtree(self.dir, ignore_errors=True)


# Pod namespaces of this process only: the module's end removes them, and
# not another run's (or another xdist worker's) made at the same time.
POD_PREFIX = "enid-t-cnih%d-" % os.getpid()


class Node:
    def __init__(self, ns, netd):
        self.ns = ns
        self.netd = netd
        self.seq = 0

    def pod(self):
        self.seq += 1
        name = "%s%s-%d" % (POD_PREFIX, secrets.token_hex(3), self.seq)
        run("ip", "netns", "add", name)
        # No duplicate address detection: an IPv6 link-local address is
        # never "tentative" for a moment, so snapshots compare.
        podwire.sysctl(name, ("net.ipv6.conf.all.accept_dad", "0"),
                       ("net.ipv6.conf.default.accept_dad", "0"))
        run("ip", "-n", name, "link", "set", "lo", "up")
        return name

    def state(self):
        return self.ns.kernel_state()


def pod_state(pod):
    return podwire.kernel_state(pod)


def addr_items(state):
    """Each address of a kernel_state(), with its link's name, as text."""
    return {json.dumps([l["ifname"], a], sort_keys=True)
            for l in state["addr"] for a in l.get("addr_info", ())}


def conf_for(role, sock, **extra):
    if role == "main":
        c = {"cniVersion": "1.0.0", "name": "pods", "type": "enid-cni",
             "socket": sock}
        c.update(extra)
        return c, built("cni/enid-cni")
    ipam = {"type": "enid-ipam", "socket": sock}
    ipam.update(extra)
    return ({"cniVersion": "1.0.0", "name": "ptpnet", "type": "ptp",
             "ipam": ipam}, PTP)


def plugin(node, role, command, sock, cid, pod, **extra):
    conf, exe = conf_for(role, sock, **extra)
    env = {"CNI_COMMAND": command, "CNI_CONTAINERID": cid,
           "CNI_IFNAME": "eth0", "CNI_NETNS": "/run/netns/" + pod,
           "CNI_PATH": os.path.dirname(built("cni/enid-ipam")),
           "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    r = subprocess.run(["nsenter", "--net=/run/netns/" + node.ns.name, exe],
                       input=json.dumps(conf), env=env, capture_output=True,
                       text=True, timeout=60)
    out = json.loads(r.stdout) if r.stdout.strip() else None
    return r.returncode, out, r.stderr


@pytest.fixture(scope="module")
def node(enid_user):
    with Netns() as ns:
        ns.sysctl("net.ipv4.ip_forward", "1")
        ns.add_eni("eni1", ENI1)
        work = tempfile.mkdtemp(prefix="enid-cnih-netd-")
        netd = Driver(ns, work)
        try:
            netd.start()
            for line in ("declare mac=%s table=101" % ENI1,
                         "setup mac=%s table=101 addr=10.0.16.5/20 "
                         "gw=10.0.16.1 mtu=1500" % ENI1):
                r = netd.call(line)
                assert r["status"] == "ok", (line, r)
            ns.ip("route", "add", "10.0.40.0/24", "via", STATIC_GW, "dev",
                  "eth0")
            ns.ip("route", "add", TABLE_ROUTED + "/32", "dev", "eth0",
                  "table", "150")
            ns.ip("rule", "add", "prio", "512", "to", FORGED, "lookup",
                  "main", "proto", "static")
            # What a compromised broker could have netd accept: any
            # address in the VPC that is none of the node's own.
            for addr, table in ((POD_A, 0), (GOOD, 0), (GOOD_ENI, 101),
                                (STATIC_GW, 0), (TABLE_ROUTED, 0),
                                ("10.0.0.1", 0), ("10.0.16.1", 101),
                                ("10.0.0.2", 0), ("10.0.15.255", 0)):
                r = netd.call("addpod addr=%s table=%d" % (addr, table))
                assert r["status"] == "ok", (addr, r)
            for addr in ("8.8.8.8", "169.254.169.254", PRIMARY_IP,
                         "10.0.16.5"):
                r = netd.call("addpod addr=%s table=0" % addr)
                assert r["status"] == "refused", (addr, r)
            yield Node(ns, netd)
        finally:
            netd.close()
            shutil.rmtree(work, ignore_errors=True)
            out = run("ip", "netns", "list").stdout
            for line in out.splitlines():
                name = line.split()[0]
                if name.startswith(POD_PREFIX):
                    run("ip", "netns", "del", name, check=False)


@pytest.fixture(scope="module")
def fake(enid_user):
    f = FakeSock(enid_user)
    yield f
    f.close()


@pytest.fixture(scope="module")
def pod_a(node, fake):
    """A pod the plugin wired with a plausible answer; every case leaves
    it exactly as it is."""
    fake.set(raw(answer(POD_A)))
    pod = node.pod()
    rc, out, err = plugin(node, "main", "ADD", fake.sock, "poda", pod)
    assert rc == 0, (out, err)
    return pod


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("name,script,code,needles", CASES,
                         ids=[c[0] for c in CASES])
def test_refused_and_nothing_changes(node, fake, pod_a, role, name, script,
                                     code, needles):
    pod = node.pod()
    cid = "h-%s-%s" % (role, name)
    before, pod_before = node.state(), pod_state(pod)
    a_before = pod_state(pod_a)
    fake.set(script)
    seen = len(fake.requests())
    rc, out, err = plugin(node, role, "ADD", fake.sock, cid, pod)
    assert rc != 0 and out is not None, (rc, out, err)
    assert out["code"] == code, out
    for n in needles:
        assert n in out["msg"], (n, out)
    assert node.state() == before
    assert pod_state(pod) == pod_before
    # The address went back to enid: a DEL of the plugin's own.
    ops = [r["op"] for r in fake.requests()[seen:]]
    assert ops[:2] == ["add", "del"], ops
    rc, out, err = plugin(node, role, "DEL", fake.sock, cid, pod)
    assert rc == 0, (out, err)
    assert node.state() == before
    assert pod_state(pod) == pod_before
    assert pod_state(pod_a) == a_before
    run("ip", "netns", "del", pod)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("ip,extra", [
    (GOOD, {}),
    (GOOD_ENI, {"table": 101, "subnet": "10.0.16.0/20",
                "subnet_gateway": "10.0.16.1"}),
    # Fields that only shape the pod's own routes, or are not used at
    # all, may be wrong without reaching the node.
    (GOOD, {"subnet": "10.0.0.0/8", "subnet_gateway": "169.254.169.254",
            "vpc_cidrs": ["0.0.0.0/1", "128.0.0.0/1"], "eni": "x",
            "table": 7}),
], ids=["primary", "secondary", "odd-fields"])
def test_plausible_answer_works(node, fake, pod_a, role, ip, extra):
    pod = node.pod()
    cid = "ok-%s-%d" % (role, len(extra))
    before = node.state()
    fake.set(raw(answer(ip, **extra)))
    rc, out, err = plugin(node, role, "ADD", fake.sock, cid, pod)
    assert rc == 0, (out, err)
    assert out["ips"][0]["address"].split("/")[0] == ip, out
    routes = [r for r in node.ns.ipj("route", "show", "table", "all")
              if r.get("dst") == ip]
    assert len(routes) == 1 and routes[0]["dev"] != "eth0", routes
    if role == "ipam":
        # ptp's gateway is the node's own address, not the answer's.
        assert out["ips"][0]["gateway"] == PRIMARY_IP, out
    added = addr_items(node.state()) - addr_items(before)
    assert not any("169.254.169.254" in a for a in added), added
    rc, out, err = plugin(node, role, "DEL", fake.sock, cid, pod)
    assert rc == 0, (out, err)
    assert node.state()["route"] == before["route"]
    assert node.state()["link"] == before["link"]
    run("ip", "netns", "del", pod)


def test_repeated_add_keeps_its_own_route(node, fake, pod_a):
    """The same attachment again: its own route is its own, kept."""
    fake.set(raw(answer(POD_A)))
    before = node.state()
    rc, out, err = plugin(node, "main", "ADD", fake.sock, "poda", pod_a)
    assert rc == 0, (out, err)
    assert node.state() == before


@pytest.mark.parametrize("role", ROLES)
def test_del_check_gc_touch_only_their_own(node, fake, pod_a, role):
    """Whatever DEL, CHECK and GC are answered, the plugin deletes only
    the host end named from the runtime's container id and ifname."""
    before = node.state()
    a_before = pod_state(pod_a)
    other = node.pod()
    for script in (raw(answer(POD_A)), raw('{"ok":true,"ip":"%s"}\n' %
                                           POD_A)):
        script["other"] = script["answer"]
        fake.set(script)
        rc, out, err = plugin(node, role, "DEL", fake.sock, "stranger",
                              other)
        assert rc != 0 and out["code"] == 123, out
        conf, exe = conf_for(role, fake.sock)
        conf["cniVersion"] = "1.1.0"
        conf["cni.dev/valid-attachments"] = [
            {"containerID": "poda", "ifname": "eth0"}]
        env = {"CNI_COMMAND": "GC", "CNI_PATH":
               os.path.dirname(built("cni/enid-ipam"))}
        exe = built("cni/enid-cni" if role == "main" else "cni/enid-ipam")
        if role == "ipam":
            conf = {**conf, "type": "ptp"}
        r = subprocess.run(["nsenter", "--net=/run/netns/" + node.ns.name,
                            exe], input=json.dumps(conf), env=env,
                           capture_output=True, text=True, timeout=30)
        assert r.returncode != 0 and json.loads(r.stdout)["code"] == 123
        assert node.state() == before
        assert pod_state(pod_a) == a_before
    fake.set(raw(answer(POD_A)))
    # DEL for pod A's container id but another namespace: its host end
    # stays, since its peer is not in that namespace.
    if role == "main":
        rc, out, err = plugin(node, "main", "DEL", fake.sock, "poda", other)
        assert rc != 0 and out["code"] == 121, out
        assert "left in place" in out["msg"]
        assert node.state() == before
    run("ip", "netns", "del", other)


@pytest.mark.parametrize("role", ROLES)
def test_socket_served_by_another_user_gets_nothing(node, role):
    """A socket served by neither root nor enid's user: refused before
    a byte is sent, so the pod's identity goes nowhere."""
    f = FakeSock(65534)     # nobody
    try:
        pod = node.pod()
        before = node.state()
        rc, out, err = plugin(node, role, "ADD", f.sock, "peer1", pod)
        assert rc != 0 and out["code"] == 127, out
        assert "uid 65534" in out["msg"] and "nothing was sent" in \
            out["msg"], out
        assert '"enid"' in out["msg"], out
        time.sleep(0.1)
        assert all(r["bytes"] == 0 for r in f.requests()), f.requests()
        assert node.state() == before
        # Named by number, that user is enid's.
        f.set(raw(answer(GOOD)))
        rc, out, err = plugin(node, role, "ADD", f.sock, "peer1", pod,
                              enid_user=65534)
        assert rc == 0, (out, err)
        rc, out, err = plugin(node, role, "DEL", f.sock, "peer1", pod,
                              enid_user=65534)
        assert rc == 0, (out, err)
        run("ip", "netns", "del", pod)
    finally:
        f.close()


@pytest.mark.parametrize("role", ROLES)
def test_broker_reason_reaches_the_runtime_printable(node, fake, role):
    """A broker's failed answer whose reason carries terminal
    escapes (ESC, BEL, a C1 CSI): the runtime gets the reason with those
    as '?', never raw, so no kubelet event or log reader runs them."""
    pod = node.pod()
    fake.set(raw(json.dumps({"ok": False, "code": "no-address",
                             "error": "pool \u001b]0;owned\u0007 empty "
                                      "\u009b31m now"}) + "\n"))
    rc, out, err = plugin(node, role, "ADD", fake.sock, "h-esc-" + role, pod)
    assert rc != 0 and out is not None, (rc, out, err)
    text = json.dumps(out, ensure_ascii=False)
    for ch in ("\u001b", "\u0007", "\u009b"):
        assert ch not in text, out
    assert "pool ?]0;owned? empty ?31m now" in out["msg"], out
    run("ip", "netns", "del", pod)


# ---- IPv6 (issue 35) ----
#
# The same hostile broker, answering with "ip6": the node gets an IPv6
# subnet on eth0 and the VPC an IPv6 block; netd's tagged IPv6 rules
# ("to ADDR/128 lookup main", priority 512, protocol 233) are installed
# by the test itself, as netd would for an address its policy accepted.
# Each refusal leaves the node's IPv6 routes, rules and neighbours, as
# well as everything the IPv4 cases compare, as they were.

VPC6 = "2600:1f14:abc:de00::/56"
SUBNET6 = "2600:1f14:abc:de00::/64"
NODE6 = "2600:1f14:abc:de00::10"        # eth0's, /64
GOOD6 = "2600:1f14:abc:de00:8f::60"     # proven; a plausible answer works
GOOD6B = "2600:1f14:abc:de00:8f::61"    # the same, for an IPv6-only pod
OTHER6 = "2600:1f14:abc:de00:8f::50"    # another pod's /128 (dev eni1)
HOLE6 = "2600:1f14:abc:de00:8f:1:0:5"    # in a blackhole route of main
TABLE6 = "2600:1f14:abc:de00:8f::52"    # a /128 in table 150
FORGED6 = "2600:1f14:abc:de00:8f::53"   # a rule without netd's tag
NEVER6 = "2600:1f14:abc:de00:8f::99"    # in the VPC, never proven
RULE_PROTO = 233                        # ENID_RULE_PROTO


def answer6(ip6, ip=None, **over):
    """An ADD answer for an IPv6-only pod, or a dual-stack one (ip)."""
    a = {"ok": True}
    if ip is not None:
        a.update({"ip": ip, "prefix": 32, "subnet": "10.0.0.0/20",
                  "subnet_gateway": "10.0.0.1"})
    a.update({"ip6": ip6, "eni": "eni-0a97", "eni_mac": ENI1, "table": 0,
              "subnet6": SUBNET6, "vpc_cidrs": ["10.0.0.0/16", VPC6]})
    a.update(over)
    return json.dumps(a, separators=(",", ":")) + "\n"


ADDRESS6_CASES = [
    ("unspecified", raw(answer6("::")), 124, ['"ip6" :: ', "unspecified"]),
    ("loopback6", raw(answer6("::1")), 124, ["::1", "loopback"]),
    ("compatible", raw(answer6("::a00:3c")), 124, ["::a00:3c", "::/8"]),
    ("nat64", raw(answer6("64:ff9b::a00:3c")), 124,
     ["64:ff9b::a00:3c", "NAT64"]),
    ("nat64-local", raw(answer6("64:ff9b:1::a00:3c")), 124,
     ["IPv4-embedded"]),
    ("pod-gateway6", raw(answer6("fe80::1")), 124,
     ["fe80::1", "own link-local gateway"]),
    ("link-local6", raw(answer6("fe80::5")), 124, ["fe80::5", "link-local"]),
    ("vpc-router6", raw(answer6("fe80:ec2::1")), 124,
     ["fe80:ec2::1", "link-local"]),
    ("multicast6", raw(answer6("ff02::1")), 124, ["ff02::1", "multicast"]),
    ("imds6", raw(answer6("fd00:ec2::254")), 124,
     ["fd00:ec2::254", "instance metadata"]),
    ("dns6", raw(answer6("fd00:ec2::253")), 124, ["fd00:ec2::253", "DNS"]),
    ("ntp6", raw(answer6("fd00:ec2::123")), 124,
     ["fd00:ec2::123", "time service"]),
    ("ula-outside", raw(answer6("fd12:3456::5")), 124,
     ["fd12:3456::5", "unique local", "outside the VPC"]),
    ("outside-vpc6", raw(answer6("2600:1f14:abc:df00::5")), 124,
     ["2600:1f14:abc:df00::5", "outside the VPC's IPv6 blocks"]),
    ("no-vpc-block", raw(answer6(GOOD6, vpc_cidrs=["10.0.0.0/16"])), 124,
     [GOOD6, "outside the VPC's IPv6 blocks"]),
    ("node-address6", raw(answer6(NODE6)), 124,
     [NODE6, "address of the node (on eth0)"]),
    ("subnet-router6", raw(answer6("2600:1f14:abc:de00::1")), 124,
     ["2600:1f14:abc:de00::1", "its router"]),
    ("subnet-network6", raw(answer6("2600:1f14:abc:de00::")), 124,
     ["its network address"]),
    ("other-pod6", raw(answer6(OTHER6)), 125,
     [OTHER6, "already routes", "table 254", "eni1"]),
    ("blackhole6", raw(answer6(HOLE6)), 125,
     [HOLE6, "as blackhole", "2600:1f14:abc:de00:8f:1::/96"]),
    ("table-route6", raw(answer6(TABLE6)), 125, [TABLE6, "table 150"]),
    ("never-accepted6", raw(answer6(NEVER6)), 126,
     [NEVER6, "holds no rule", "/128"]),
    ("untagged-rule6", raw(answer6(FORGED6)), 126, [FORGED6,
                                                   "holds no rule"]),
    # Dual-stack: one bad family refuses the pod, the good IPv4 too.
    ("dual-bad6", raw(answer6("fd00:ec2::254", ip=GOOD)), 124,
     ['"ip6" fd00:ec2::254']),
    ("dual-unproven6", raw(answer6(NEVER6, ip=GOOD)), 126, [NEVER6]),
    ("dual-bad4", raw(answer6(GOOD6, ip="169.254.169.254")), 124,
     ['"ip" 169.254.169.254']),
]

MALFORMED6_CASES = [
    ("ip6-is-v4", raw(answer6(GOOD)), 123,
     ['"ip6" "%s" is not an IPv6 address' % GOOD]),
    ("ip-is-v6", raw(answer6(GOOD6, ip=GOOD6B)), 123,
     ['"ip" "%s" is not an IPv4 address' % GOOD6B]),
    ("subnet6-is-v4", raw(answer6(GOOD6, subnet6="10.0.0.0/20")), 123,
     ['"subnet6" "10.0.0.0/20" is not an IPv6 CIDR block']),
    ("subnet-is-v6", raw(answer6(GOOD6, ip=GOOD, subnet=SUBNET6)), 123,
     ['"subnet" "%s" is not a CIDR block a.b.c.d/n' % SUBNET6]),
    ("subnet6-80", raw(answer6(GOOD6, subnet6="2600:1f14:abc:de00::/80")),
     123, ['"subnet6" 2600:1f14:abc:de00::/80 is not a /64']),
    ("upper-case", raw(answer6(GOOD6.upper())), 123,
     ['"ip6" "%s" is not an IPv6 address' % GOOD6.upper()]),
    ("uncompressed", raw(answer6("2600:1f14:abc:de00:8f:0:0:60")), 123,
     ['is not an IPv6 address in RFC 5952 text']),
    ("leading-zero", raw(answer6("2600:1f14:0abc:de00:8f::60")), 123,
     ['is not an IPv6 address']),
    ("v4-mapped", raw(answer6("::ffff:10.0.0.60")), 123,
     ['"ip6" "::ffff:10.0.0.60" is not an IPv6 address']),
    ("zone-id", raw(answer6("fe80::5%eth0")), 123, ["is not an IPv6"]),
    ("ip6-cidr", raw(answer6(GOOD6 + "/128")), 123,
     ['"ip6" "%s/128" is not an IPv6 address' % GOOD6]),
    ("ip6-number", raw('{"ok":true,"ip6":42}\n'), 123,
     ['"ip6" must be a string, not 42']),
    ("v6-block-first", raw(answer6(GOOD6, vpc_cidrs=[VPC6, "10.0.0.0/16"])),
     123, ["the IPv4 block 10.0.0.0/16 comes after an IPv6 one"]),
    ("v6-block-wide", raw(answer6(GOOD6, vpc_cidrs=["::/0"])), 123,
     ["the IPv6 block ::/0 is not a /32 to /64"]),
    ("prefix-without-ip", raw(answer6(GOOD6, prefix=32)), 123,
     ['field "prefix" without "ip"']),
    ("subnet6-without-ip6", raw(answer(GOOD, subnet6=SUBNET6)), 123,
     ['field "subnet6" without "ip6"']),
    ("prefix6", raw(answer6(GOOD6, prefix6=128)), 123,
     ['unknown field "prefix6"']),
    ("duplicate-ip6", raw(answer6(GOOD6)[:-2] + ',"ip6":"%s"}\n' % NEVER6),
     123, ['field "ip6" appears twice']),
]

CASES6 = ADDRESS6_CASES + MALFORMED6_CASES


def state6(node):
    """The IPv4 comparison's, and the node's IPv6 routes of every table,
    its IPv6 rules and every neighbour entry (one exec)."""
    route, rule, neigh = podwire.ip_dumps(
        node.ns.name, ("route", "show", "table", "all"), ("rule",),
        ("neigh",), family=6)
    st = node.state()
    st.update({"route6": route, "rule6": rule, "neigh6": neigh})
    return st


def pod_state6(pod):
    st = pod_state(pod)
    st["route6"], st["neigh"] = podwire.ip_dumps(
        pod, ("route", "show", "table", "all"), ("neigh",), family=6)
    return st


@pytest.fixture(scope="module")
def node6(node, pod_a):
    """The node's IPv6: eth0 in the subnet's /64, another pod's /128,
    a blackhole, a /128 in table 150, and the rules netd would hold.
    Ready once no address of the node is tentative: the kernel adds a
    link-local address's routes only after its DAD (pod A's host end's
    too), which would show as a change in a comparison."""
    ns = node.ns
    ns.ip("-6", "addr", "add", NODE6 + "/64", "dev", "eth0", "nodad")
    ns.ip("-6", "route", "add", OTHER6 + "/128", "dev", "eni1")
    ns.ip("-6", "route", "add", "blackhole",
          "2600:1f14:abc:de00:8f:1::/96")
    ns.ip("-6", "route", "add", TABLE6 + "/128", "dev", "eth0", "table",
          "150")
    for addr in (GOOD6, GOOD6B, OTHER6, HOLE6, TABLE6):
        ns.ip("-6", "rule", "add", "prio", "512", "to", addr + "/128",
              "lookup", "main", "proto", str(RULE_PROTO))
    ns.ip("-6", "rule", "add", "prio", "512", "to", FORGED6 + "/128",
          "lookup", "main", "proto", "static")
    for _ in range(100):
        if not ns.ip("-6", "addr", "show", "tentative").strip():
            break
        time.sleep(0.1)
    return node


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("name,script,code,needles", CASES6,
                         ids=[c[0] for c in CASES6])
def test_ipv6_refused_and_nothing_changes(node6, fake, pod_a, role, name,
                                          script, code, needles):
    node = node6
    pod = node.pod()
    cid = "h6-%s-%s" % (role, name)
    before, pod_before = state6(node), pod_state6(pod)
    a_before = pod_state6(pod_a)
    fake.set(script)
    seen = len(fake.requests())
    rc, out, err = plugin(node, role, "ADD", fake.sock, cid, pod)
    assert rc != 0 and out is not None, (rc, out, err)
    assert out["code"] == code, out
    for n in needles:
        assert n in out["msg"], (n, out)
    assert state6(node) == before
    assert pod_state6(pod) == pod_before
    ops = [r["op"] for r in fake.requests()[seen:]]
    assert ops[:2] == ["add", "del"], ops
    rc, out, err = plugin(node, role, "DEL", fake.sock, cid, pod)
    assert rc == 0, (out, err)
    assert state6(node) == before
    assert pod_state6(pod) == pod_before
    assert pod_state6(pod_a) == a_before
    run("ip", "netns", "del", pod)


def check_conf(role, sock, prev):
    conf, exe = conf_for(role, sock)
    conf["prevResult"] = prev
    return conf, exe


@pytest.mark.parametrize("ip4,ip6", [(GOOD, GOOD6), (None, GOOD6B)],
                         ids=["dual-stack", "ipv6-only"])
def test_ipv6_add_check_del(node6, fake, pod_a, ip4, ip6):
    """A plausible answer wires the pod: its addresses on eth0 (the IPv6
    one at once usable: no DAD), the default routes via the link-local
    gateways with permanent neighbour entries, the node's /128 and its
    permanent entry for the pod; the pod reaches the node over IPv6;
    CHECK passes; DEL leaves the node as it was."""
    node = node6
    pod = node.pod()
    cid = "ok6-%s" % ("dual" if ip4 else "v6")
    before = state6(node)
    fake.set(raw(answer6(ip6, ip=ip4)))
    rc, out, err = plugin(node, "main", "ADD", fake.sock, cid, pod)
    assert rc == 0, (out, err)
    want = ([ip4 + "/32"] if ip4 else []) + [ip6 + "/128"]
    assert [i["address"] for i in out["ips"]] == want, out
    assert all(i["interface"] == 1 for i in out["ips"]), out
    assert out["interfaces"][1]["name"] == "eth0", out
    assert out["ips"][-1]["gateway"] == "fe80::1", out
    dsts = [(r["dst"], r["gw"]) for r in out["routes"]]
    assert dsts == ([("0.0.0.0/0", "169.254.1.1")] if ip4 else []) + \
        [("::/0", "fe80::1")], out
    host_mac = out["interfaces"][0]["mac"]
    pod_mac = out["interfaces"][1]["mac"]

    # The pod: both addresses on eth0, the IPv6 one not tentative.
    addrs = {(a["family"], a["local"], a["prefixlen"]): a
             for l in podwire.ip_dumps(pod, ("addr", "show", "dev",
                                             "eth0"))[0]
             for a in l.get("addr_info", ())}
    assert ("inet6", ip6, 128) in addrs, addrs
    a6 = addrs[("inet6", ip6, 128)]
    assert not a6.get("tentative") and not a6.get("dadfailed"), a6
    assert a6.get("nodad"), a6
    assert (("inet", ip4, 32) in addrs) == bool(ip4), addrs
    routes6, neigh = podwire.ip_dumps(pod, ("route",), ("neigh",),
                                      family=6)
    assert {"dst": "default", "gateway": "fe80::1", "dev": "eth0"}.items() \
        <= next(r for r in routes6 if r["dst"] == "default").items(), routes6
    gw = [n for n in neigh if n["dst"] == "fe80::1"]
    assert len(gw) == 1 and gw[0]["lladdr"] == host_mac and \
        "PERMANENT" in gw[0]["state"], neigh
    # The node: its /128 through the host end, its permanent entry.
    host = out["interfaces"][0]["name"]
    r6 = node.ns.ipj("-6", "route", "show", ip6)
    assert [r.get("dev") for r in r6] == [host], r6
    n6 = [n for n in node.ns.ipj("-6", "neigh", "show", "dev", host)
          if n["dst"] == ip6]
    assert len(n6) == 1 and n6[0]["lladdr"] == pod_mac and \
        "PERMANENT" in n6[0]["state"], n6
    accept_ra = run("ip", "netns", "exec", node.ns.name, "cat",
                    "/proc/sys/net/ipv6/conf/%s/accept_ra" % host).stdout
    assert accept_ra.strip() == "0"
    # Over IPv6, the pod reaches the node at once.
    r = run("ip", "netns", "exec", pod, "ping", "-6", "-c", "1", "-W", "2",
            NODE6, check=False)
    assert r.returncode == 0, r.stdout + r.stderr

    # CHECK: what the result says is what the kernel holds.
    fake.set({"answer": answer6(ip6, ip=ip4),
              "other": answer6(ip6, ip=ip4)})
    conf, exe = check_conf("main", fake.sock, out)
    env = {"CNI_COMMAND": "CHECK", "CNI_CONTAINERID": cid,
           "CNI_IFNAME": "eth0", "CNI_NETNS": "/run/netns/" + pod,
           "CNI_PATH": os.path.dirname(built("cni/enid-ipam"))}
    r = subprocess.run(["nsenter", "--net=/run/netns/" + node.ns.name,
                        exe], input=json.dumps(conf), env=env,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, (r.stdout, r.stderr)
    req = [x["request"] for x in fake.requests() if x["op"] == "check"][-1]
    assert req.get("ip6") == ip6 and req.get("ip") == ip4, req
    # ... and a missing neighbour entry is found.
    run("ip", "-n", pod, "-6", "neigh", "del", "fe80::1", "dev", "eth0")
    r = subprocess.run(["nsenter", "--net=/run/netns/" + node.ns.name,
                        exe], input=json.dumps(conf), env=env,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and json.loads(r.stdout)["code"] == 122, \
        r.stdout
    assert "fe80::1 lladdr" in json.loads(r.stdout)["msg"], r.stdout

    fake.set(raw(answer6(ip6, ip=ip4)))
    rc, out, err = plugin(node, "main", "DEL", fake.sock, cid, pod)
    assert rc == 0, (out, err)
    assert state6(node) == before
    rc, out, err = plugin(node, "main", "DEL", fake.sock, cid, pod)
    assert rc == 0, (out, err)
    run("ip", "netns", "del", pod)


def test_ipv6_ipam_under_ptp(node6, fake, pod_a):
    """The IPAM role gives ptp both addresses, the IPv6 one with the
    pods' link-local gateway; ptp wires it and DEL takes it back."""
    node = node6
    pod = node.pod()
    links = {l["ifname"] for l in node.state()["link"]}
    fake.set(raw(answer6(GOOD6, ip=GOOD)))
    rc, out, err = plugin(node, "ipam", "ADD", fake.sock, "ok6-ipam", pod)
    assert rc == 0, (out, err)
    ips = {i["address"]: i["gateway"] for i in out["ips"]}
    assert ips[GOOD6 + "/64"] == "fe80::1", out
    assert ips[GOOD + "/20"] == PRIMARY_IP, out
    r6 = node.ns.ipj("-6", "route", "show", GOOD6)
    assert len(r6) == 1 and r6[0]["dev"] != "eth0", r6
    rc, out, err = plugin(node, "ipam", "DEL", fake.sock, "ok6-ipam", pod)
    assert rc == 0, (out, err)
    # ptp's veth and its routes are gone.  (Not the whole tables: the
    # kernel adds an earlier host end's link-local routes only once its
    # DAD is over, seconds later.)
    assert {l["ifname"] for l in node.state()["link"]} == links
    assert node.ns.ipj("-6", "route", "show", GOOD6) == []
    assert node.ns.ipj("route", "show", GOOD) == []
    run("ip", "netns", "del", pod)
