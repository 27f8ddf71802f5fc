"""enid-netd's IPv6 (issue 35) against real namespaces, driven through
netd_drive as a hostile broker: pods' rules in the AF_INET6 rule table,
an ENI's own IPv6 address and its table's IPv6 default route, pods' /128
host routes, and every refusal a `security:` line that leaves the kernel
as it was, both families' links, addresses, rules and routes compared.
Needs root; a few seconds.

The node: eth0 (the primary) carries the main table's default routes of
both families and NODE6, the node's own IPv6 address; eni1 is a bare ENI;
three pod veths have their peers in a pod namespace.

    ENID_BUILDDIR=$PWD/build /usr/bin/python3 -m pytest -q \\
        tests/integration/test_netd_ipv6.py
"""
import os
import secrets
import signal
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netd_helpers import PROTO, Driver, Netns, run  # noqa
from netd_helpers import NEEDS_NETD  # noqa
import podwire  # noqa

ENI1 = "02:00:00:00:00:11"
VPC6 = "2600:1f14:abc:100::/56"
ULA_VPC6 = "fd12:3456:789a:100::/56"
NODE6 = "2600:1f14:abc:100::10"         # eth0's own, /64
ENI6 = "2600:1f14:abc:110::5"           # eni1's own
POD6_A, POD6_B, POD6_C = ("2600:1f14:abc:110::a", "2600:1f14:abc:110::b",
                          "2600:1f14:abc:110::c")
POD4_A = "10.0.16.9"
VETH_A, VETH_B, VETH_C = "enid0000000000a", "enid0000000000b", \
    "enid0000000000c"
SETUP = ("setup mac=%s table=101 addr=10.0.16.5/20 gw=10.0.16.1 mtu=9001 "
         "addr6=%s" % (ENI1, ENI6))
SETUP6 = ("setup mac=%s table=101 addr=none gw=none mtu=9001 addr6=%s"
          % (ENI1, ENI6))

# What no pod or ENI may be, whatever the VPC says: the special ones of
# common/addr.h, EC2's service addresses, a ULA outside the VPC.
SPECIAL6 = ["::", "::1", "fe80::5", "fe80:ec2::1", "ff02::1", "ff05::2",
            "::ffff:0:a00:1", "::a00:1", "64:ff9b::a00:1", "64:ff9b:1::5"]
EC2_SERVICE6 = ["fd00:ec2::254", "fd00:ec2::253", "fd00:ec2::123"]

pytestmark = NEEDS_NETD


def state(ns):
    """Both families: `ip link`, `ip addr`, `ip route show table all` and
    `ip rule` (IPv4's by default), then the same of IPv6."""
    st = ns.kernel_state()
    addr6, route6, rule6 = podwire.ip_dumps(
        ns.name, ("addr",), ("route", "show", "table", "all"), ("rule",),
        family=6)
    st.update(addr6=addr6, route6=route6, rule6=rule6)
    return st


@pytest.fixture
def node():
    pods = "enid-t-pods6-" + secrets.token_hex(4)
    run("ip", "netns", "add", pods)
    try:
        with Netns() as ns:
            ns.ip("-6", "addr", "add", NODE6 + "/64", "dev", "eth0",
                  "nodad")
            ns.ip("-6", "route", "add", "default", "via", "fe80::1", "dev",
                  "eth0")
            for i, veth in enumerate((VETH_A, VETH_B, VETH_C)):
                ns.ip("link", "add", veth, "type", "veth", "peer", "name",
                      "eth%d" % i, "netns", pods)
                ns.ip("link", "set", veth, "up")
            ns.add_eni("eni1", ENI1)
            yield ns
    finally:
        run("ip", "netns", "del", pods, check=False)


@pytest.fixture
def make_netd(node, tmp_path):
    started = []

    def make(cidrs=("10.0.0.0/16", VPC6)):
        workdir = tmp_path / str(len(started))
        workdir.mkdir()
        d = Driver(node, str(workdir))
        started.append(d)
        d.start(cidrs=cidrs)
        assert d.call("declare mac=%s table=101" % ENI1)["status"] == "ok"
        return d
    try:
        yield make
    finally:
        for d in started:
            d.close()


@pytest.fixture
def netd(make_netd):
    return make_netd()


def security_lines(netd):
    return [l for l in netd.logtext().splitlines() if "security:" in l]


def expect_refused(node, netd, line, *needles):
    before_state = state(node)
    before = len(security_lines(netd))
    r = netd.call(line)
    assert r.get("type") == "RESULT" and r["status"] == "refused", (line, r)
    new = security_lines(netd)[before:]
    assert any(all(n in l for n in needles) for l in new), (line, new)
    assert state(node) == before_state, line
    return r


def table(node, family, t=101):
    """`ip -4|-6 route show table T`, a table that is not there empty."""
    return node.ip("-%d" % family, "route", "show", "table", str(t),
                   check=False).strip()


def eni1_addrs(node, family):
    links = node.ipj("-%d" % family, "addr", "show", "dev", "eni1")
    return [a["local"] for l in links for a in l.get("addr_info", [])]


def rules6(node):
    return [l.strip() for l in node.ip("-6", "rule").splitlines()
            if l.split(":")[0] in ("512", "1536")]


def rules4(node):
    return [l.strip() for l in node.ip("-4", "rule").splitlines()
            if l.split(":")[0] in ("512", "1536")]


def test_pod_rules_in_the_ipv6_rule_table(node, netd):
    """A pod's IPv6 address gets "to POD/128 lookup main" and, on an ENI,
    "from POD/128 lookup T", tagged, at the IPv4 rules' priorities, in
    the AF_INET6 table alone: the IPv4 rules are what they were."""
    v4 = rules4(node)
    assert netd.call("addpod addr=%s table=0" % POD6_A)["status"] == "ok"
    r = netd.call("addpod addr=%s table=101" % POD6_B)
    assert r["status"] == "ok" and r["changed"] == 2, r
    got = rules6(node)
    assert "512:\tfrom all to %s lookup main proto %d" % (POD6_A, PROTO) \
        in got, got
    assert "512:\tfrom all to %s lookup main proto %d" % (POD6_B, PROTO) \
        in got, got
    assert "1536:\tfrom %s lookup 101 proto %d" % (POD6_B, PROTO) in got, got
    assert len(got) == 3, got
    assert rules4(node) == v4
    # Again: in place, nothing changes.
    before = state(node)
    r = netd.call("addpod addr=%s table=101" % POD6_B)
    assert r["status"] == "ok" and r["changed"] == 0, r
    assert state(node) == before
    # The dump has both, of their family ("all" is ::/0).
    dump = netd.call("dumprules")
    assert dump["type"] == "END", dump
    got = {(e["priority"], e["table"], e["src"], e["dst"])
           for e in dump["entries"]}
    assert {(512, 254, "::/0", POD6_A + "/128"),
            (512, 254, "::/0", POD6_B + "/128"),
            (1536, 101, POD6_B + "/128", "::/0")} <= got, got
    # Moved to the primary ENI: the from-rule goes.
    assert netd.call("addpod addr=%s table=0" % POD6_B)["status"] == "ok"
    assert not any(l.startswith("1536:") for l in rules6(node))
    for a in (POD6_A, POD6_B):
        assert netd.call("delpod addr=%s table=0" % a)["status"] == "ok"
    assert rules6(node) == []


def test_dual_stack_pod_one_rule_set_per_family(node, netd):
    """A dual-stack pod is one request, its IPv4 address and its IPv6
    one: both families' rules, one answer; a request of one address
    takes that family's alone."""
    line = "addpod addr=%s addr6=%s table=101" % (POD4_A, POD6_A)
    r = netd.call(line)
    assert r["status"] == "ok" and r["changed"] == 4, r
    assert len(rules6(node)) == 2 and len(rules4(node)) == 3  # + connmark
    r = netd.call(line)
    assert r["status"] == "ok" and r["changed"] == 0, r
    assert netd.call("delpod addr=%s table=101" % POD6_A)["status"] == "ok"
    assert rules6(node) == []
    got = rules4(node)
    assert "1536:\tfrom %s lookup 101 proto %d" % (POD4_A, PROTO) in got
    # Both again, then both gone in one request.
    assert netd.call(line)["status"] == "ok"
    r = netd.call("delpod addr=%s addr6=%s table=101" % (POD4_A, POD6_A))
    assert r["status"] == "ok" and r["changed"] == 4, r
    assert rules6(node) == [] and len(rules4(node)) == 1


@pytest.mark.parametrize("addr6", EC2_SERVICE6 + [
    "2600:1f14:abd::5", "2001:db8::5", "fd12::5", NODE6])
def test_dual_refusal_changes_neither_family(node, netd, addr6):
    """A dual-stack request whose IPv6 address is refused changes nothing,
    in either family: the IPv4 rules of the same request are not made."""
    for line in ("addpod addr=%s addr6=%s table=101",
                 "addpod addr=%s addr6=%s table=0",
                 "delpod addr=%s addr6=%s table=0"):
        expect_refused(node, netd, line % (POD4_A, addr6), addr6)


def test_dual_refusal_of_the_ipv4_address_changes_neither(node, netd):
    """The other way round: an IPv4 address outside the VPC refuses the
    request before its good IPv6 address gets a rule."""
    expect_refused(node, netd, "addpod addr=10.99.0.5 addr6=%s table=101" %
                   POD6_A, "10.99.0.5")
    assert rules6(node) == []


def test_dual_address_on_a_link_changes_neither(node, netd):
    """One dump of the node's addresses covers both of a dual request's:
    an IPv6 address a link carries refuses the whole request."""
    taken = "2600:1f14:abc:110::78"
    node.ip("-6", "addr", "add", taken + "/128", "dev", "lo")
    expect_refused(node, netd, "addpod addr=%s addr6=%s table=101" %
                   (POD4_A, taken), taken, "configured on a link")
    assert rules6(node) == [] and len(rules4(node)) == 1


def test_a_del_takes_only_its_own_128(node, netd):
    """Deleting one pod's rules leaves its neighbours', also one whose
    address shares all but the last bits, and a rule someone else made
    for the very address (untagged) is left alone."""
    for a in (POD6_A, POD6_B):
        assert netd.call("addpod addr=%s table=101" % a)["status"] == "ok"
    node.ip("-6", "rule", "add", "to", POD6_A + "/128", "lookup", "main",
            "pref", "512")
    node.ip("-6", "rule", "add", "to", POD6_A[:-1] + "/124", "lookup",
            "main", "pref", "512")
    assert netd.call("delpod addr=%s table=0" % POD6_A)["status"] == "ok"
    got = rules6(node)
    assert got == sorted(got, key=got.index)
    assert "512:\tfrom all to %s lookup main" % POD6_A in got, got
    assert "512:\tfrom all to %s/124 lookup main" % POD6_A[:-1] in got, got
    assert "512:\tfrom all to %s lookup main proto %d" % (POD6_B, PROTO) \
        in got, got
    assert "1536:\tfrom %s lookup 101 proto %d" % (POD6_B, PROTO) in got, got
    assert len(got) == 4, got
    # The foreign rules are not in the dump the broker reconciles with.
    dump = netd.call("dumprules")
    assert all(e["dst"] != POD6_A + "/128" for e in dump["entries"]), dump
    assert not any("/124" in e["dst"] for e in dump["entries"]), dump


def test_eni_setup_dual_stack(node, netd):
    """The ENI's IPv6 address goes on as a /128 without DAD and without a
    prefix route (main gets nothing), its table gets "default via
    fe80:ec2::1", a repeat changes nothing, teardown removes both
    families."""
    main6 = node.ip("-6", "route", "show", "table", "main")
    r = netd.call(SETUP)
    assert r["status"] == "ok", r
    addrs = node.ipj("-6", "addr", "show", "dev", "eni1")[0]["addr_info"]
    mine = [a for a in addrs if a["local"] == ENI6]
    assert len(mine) == 1 and mine[0]["prefixlen"] == 128, addrs
    assert not mine[0].get("tentative") and not mine[0].get("dadfailed")
    table6 = table(node, 6)
    assert "default via fe80:ec2::1 dev eni1 proto %d" % PROTO in table6, \
        table6
    table4 = table(node, 4)
    assert "10.0.16.1 dev eni1 proto %d scope link" % PROTO in table4
    # Main: only what the kernel derives for any link that is up.
    assert [l for l in node.ip("-6", "route", "show", "table",
                               "main").splitlines()
            if ENI6 in l or "2600:1f14:abc:110" in l] == [], main6
    before = state(node)
    r = netd.call(SETUP)
    assert r["status"] == "ok" and r["changed"] == 0, r
    assert state(node) == before
    # A pod on it, then teardown: the pod's from-rule goes too.
    assert netd.call("addpod addr=%s table=101" % POD6_A)["status"] == "ok"
    r = netd.call("teardown mac=%s table=101 addr=10.0.16.5/20 addr6=%s"
                  % (ENI1, ENI6))
    assert r["status"] == "ok", r
    assert table(node, 6) == "" and table(node, 4) == ""
    assert ENI6 not in eni1_addrs(node, 6)
    assert not any(l.startswith("1536:") for l in rules6(node))


def test_eni_setup_ipv6_only(node, netd):
    """An ENI of an IPv6-only subnet: no IPv4 address, no IPv4 route, and
    no primary IPv4 gateway needed; setting it up again dual-stack and
    back converges, stale family gone."""
    r = netd.call(SETUP6)
    assert r["status"] == "ok", r
    assert table(node, 4) == "" and eni1_addrs(node, 4) == []
    assert table(node, 6) == \
        "default via fe80:ec2::1 dev eni1 proto %d metric 1024 pref medium" \
        % PROTO
    assert netd.call(SETUP)["status"] == "ok"
    assert "10.0.16.5" in node.ip("-4", "addr", "show", "dev", "eni1")
    r = netd.call(SETUP6)
    assert r["status"] == "ok", r
    assert table(node, 4) == "" and eni1_addrs(node, 4) == []
    r = netd.call("teardown mac=%s table=101 addr=none addr6=%s"
                  % (ENI1, ENI6))
    assert r["status"] == "ok", r
    assert table(node, 6) == "" and eni1_addrs(node, 6) == []


def test_eni_address_checks(node, netd):
    for a, needle in [("2600:1f14:abd::5", "outside the VPC"),
                      (NODE6, "node's own"),
                      ("fd12::5", "unique local"),
                      ("fd00:ec2::254", "EC2's service"),
                      ("fd00:ec2::253", "EC2's service"),
                      ("fd00:ec2::123", "EC2's service")]:
        expect_refused(node, netd, "setup mac=%s table=101 addr=none "
                       "gw=none mtu=9001 addr6=%s" % (ENI1, a), a, needle)
        expect_refused(node, netd, SETUP.replace(ENI6, a), a, needle)
    expect_refused(node, netd, "setup mac=%s table=101 addr=none gw=none "
                   "mtu=1000 addr6=%s" % (ENI1, ENI6), "1280")


@pytest.mark.parametrize("addr", SPECIAL6)
def test_special_eni_addr6_is_malformed(node, make_netd, addr):
    """addr6 is a new field: msg.c holds it to a unicast address, so a
    special one is a malformed message, fatal, and nothing changes."""
    netd = make_netd()
    before = state(node)
    netd.send(SETUP6.replace(ENI6, addr))
    ev = netd.event("exit", timeout=5)
    assert ev["status"] == 1, ev
    assert "special" in netd.logtext()
    assert state(node) == before


@pytest.mark.parametrize("addr6", ["fe80::5", "::1", "ff02::1",
                                   POD6_B, "10.0.16.7"])
def test_bad_pod_addr6_is_malformed(node, make_netd, addr6):
    """A pod's addr6 is held by msg.c to a unicast IPv6 address beside an
    IPv4 one: a special one, a second IPv6 address (addr IPv6 too) or an
    IPv4 one is a malformed message, fatal, and nothing changes."""
    netd = make_netd()
    before = state(node)
    first = POD6_A if addr6 == POD6_B else POD4_A
    netd.send("addpod addr=%s addr6=%s table=101" % (first, addr6))
    ev = netd.event("exit", timeout=5)
    assert ev["status"] == 1, ev
    assert state(node) == before


@pytest.mark.parametrize("addr", SPECIAL6 + EC2_SERVICE6 + [
    "2600:1f14:abd::5", "2001:db8::5", "fd12::5", NODE6])
def test_refused_pod_addresses(node, netd, addr):
    for line in ("addpod addr=%s table=0", "addpod addr=%s table=101",
                 "delpod addr=%s table=0"):
        expect_refused(node, netd, line % addr, addr)


def test_ula_vpc_block_is_the_vpcs(node, make_netd):
    """A ULA inside the VPC's own IPv6 block is the VPC's; one outside it
    is not."""
    netd = make_netd(cidrs=("10.0.0.0/16", ULA_VPC6))
    inside = ULA_VPC6.replace("::/56", "::9")
    assert netd.call("addpod addr=%s table=0" % inside)["status"] == "ok"
    expect_refused(node, netd, "addpod addr=fd12::9 table=0", "fd12::9",
                   "unique local")
    assert netd.call("delpod addr=%s table=0" % inside)["status"] == "ok"


def test_no_ipv6_block_no_ipv6_pod(node, make_netd):
    netd = make_netd(cidrs=("10.0.0.0/16",))
    expect_refused(node, netd, "addpod addr=%s table=0" % POD6_A, POD6_A,
                   "outside the VPC")
    expect_refused(node, netd, SETUP, ENI6, "outside the VPC")


def test_host_routes(node, netd):
    """A pod's /128 on its veth comes back as the plugin makes it; a
    dual-stack pod's veth carries its /32 and its /128; the dump lists
    both families; never over another pod's /128, a route of another
    kind or one through another device."""
    for a in (POD4_A, POD6_A, POD6_B):
        assert netd.call("addpod addr=%s table=0" % a)["status"] == "ok"
    node.ip("route", "add", POD4_A + "/32", "dev", VETH_A, "scope", "link")
    r = netd.call("addroute addr=%s dev=%s" % (POD6_A, VETH_A))
    assert r["status"] == "ok", r
    got = node.ip("-6", "route", "show", POD6_A)
    assert "%s dev %s proto static" % (POD6_A, VETH_A) in got, got
    before = state(node)
    assert netd.call("addroute addr=%s dev=%s" % (POD6_A, VETH_A))[
        "status"] == "ok"
    assert state(node) == before
    dump = netd.call("dumproutes")
    got = {(e["addr"], e["dev"]) for e in dump["entries"]}
    assert {(POD4_A, VETH_A), (POD6_A, VETH_A)} <= got, got
    # Another pod's /128 on the veth already.
    expect_refused(node, netd, "addroute addr=%s dev=%s" % (POD6_B, VETH_A),
                   POD6_B, "another pod's host route", POD6_A)
    # A route through another device, and one of another kind.
    node.ip("-6", "route", "add", POD6_B + "/128", "dev", VETH_C)
    expect_refused(node, netd, "addroute addr=%s dev=%s" % (POD6_B, VETH_B),
                   POD6_B, "routed already")
    node.ip("-6", "route", "del", POD6_B + "/128", "dev", VETH_C)
    node.ip("-6", "route", "add", "blackhole", POD6_B + "/128")
    expect_refused(node, netd, "addroute addr=%s dev=%s" % (POD6_B, VETH_B),
                   POD6_B, "blackhole")
    node.ip("-6", "route", "del", "blackhole", POD6_B + "/128")
    # Without netd's rule for it: no pod's.
    expect_refused(node, netd, "addroute addr=%s dev=%s" % (POD6_C, VETH_C),
                   POD6_C, "no rule of netd's")
    for a in SPECIAL6[:3] + EC2_SERVICE6[:1]:
        expect_refused(node, netd, "addroute addr=%s dev=%s" % (a, VETH_C),
                       a)
    assert netd.call("addroute addr=%s dev=%s" % (POD6_B, VETH_B))[
        "status"] == "ok"


def test_foreign_ipv6_rules_left_alone(node, netd):
    """An IPv6 rule at enid's priorities that is not netd's (untagged) is
    neither counted, dumped nor removed, by a pod's delete or an ENI's
    teardown."""
    node.ip("-6", "rule", "add", "from", POD6_C + "/128", "lookup", "101",
            "pref", "1536")
    assert netd.call(SETUP)["status"] == "ok"
    assert netd.call("addpod addr=%s table=101" % POD6_C)["status"] == "ok"
    assert netd.call("delpod addr=%s table=0" % POD6_C)["status"] == "ok"
    r = netd.call("teardown mac=%s table=101 addr=10.0.16.5/20 addr6=%s"
                  % (ENI1, ENI6))
    assert r["status"] == "ok", r
    assert rules6(node) == ["1536:\tfrom %s lookup 101" % POD6_C]
    dump = netd.call("dumprules")
    assert dump["entries"] == [], dump


# ---- the IPv6 source check (table ip6 enid) ----

class Pod6:
    """A pod namespace on a veth named like enid-cni's (PREFIX + hex),
    with addr/128 (no DAD) and its default route via the host veth's
    link-local address, and the node's /128 host route to it."""

    def __init__(self, node, veth, addr, n):
        self.node, self.veth, self.addr = node, veth, addr
        self.ns = "enid-t-p6-%d-%s" % (n, secrets.token_hex(3))
        run("ip", "netns", "add", self.ns)
        podwire.sysctl(self.ns, ("net.ipv6.conf.all.accept_dad", "0"),
                       ("net.ipv6.conf.default.accept_dad", "0"))
        node.ip("link", "add", veth, "type", "veth", "peer", "name", "eth0",
                "netns", self.ns)
        node.ip("link", "set", veth, "up")
        ll = "fe80::1:%d" % n
        node.ip("-6", "addr", "add", ll + "/64", "dev", veth, "nodad")
        podwire.ip_batch(self.ns, (
            ("link", "set", "lo", "up"),
            ("link", "set", "eth0", "up"),
            ("addr", "add", addr + "/128", "dev", "eth0", "nodad"),
            ("route", "add", "default", "via", ll, "dev", "eth0")))
        node.ip("-6", "route", "add", addr + "/128", "dev", veth)

    def add_addr(self, addr):
        run("ip", "-n", self.ns, "-6", "addr", "add", addr + "/128", "dev",
            "eth0", "nodad")

    def ping(self, dst, src):
        return run("ip", "netns", "exec", self.ns, "ping", "-6", "-c", "1",
                   "-W", "1", "-q", "-I", src, dst, check=False,
                   timeout=10).returncode == 0

    def remove(self):
        run("ip", "netns", "del", self.ns, check=False)


@pytest.fixture
def pods6(node):
    node.sysctl("net.ipv6.conf.all.forwarding", "1")
    made = []
    try:
        for n, (veth, addr) in enumerate((("enid6000000000a", POD6_A),
                                          ("enid6000000000b", POD6_B),
                                          ("enid6000000000c", POD6_C)), 1):
            made.append(Pod6(node, veth, addr, n))
        yield made
    finally:
        for p in made:
            p.remove()


def dump_snat(netd):
    st = netd.call("dumpsnat")
    assert st["type"] == "SNAT_STATE", st
    return st


def test_source_check_in_place_from_the_policy(node, netd):
    """The table is written when the policy is accepted, as nft prints
    it, and reported in place."""
    out = run("ip", "netns", "exec", node.name, "nft", "list", "table",
              "ip6", "enid").stdout
    assert "chain pod-src" in out, out
    assert "type filter hook prerouting priority raw; policy accept;" \
        in out, out
    assert 'iifname "enid*" ip6 saddr != fe80::/10 fib saddr . iif oif ' \
        'missing counter packets 0 bytes 0 drop' in out, out
    st = dump_snat(netd)
    assert st["src6_in_place"] == 1 and st["src6_differs"] == "", st
    assert st["src6_replaced"] == 1, st


def test_pods_send_ipv6_only_from_their_own_addresses(node, netd, pods6):
    """Through the node: a pod's own address passes (and the answer from
    the other pod's own), another pod's address and an address of no pod
    are dropped at the veth and counted; link-local passes."""
    a, b, c = pods6
    assert a.ping(POD6_B, POD6_A), "own address dropped"
    assert dump_snat(netd)["src6_dropped"] == 0
    a.add_addr(POD6_C)
    assert not a.ping(POD6_B, POD6_C), "another pod's address passed"
    st = dump_snat(netd)
    assert st["src6_dropped"] == 1, st
    nobody = "2600:1f14:abc:110::99"
    a.add_addr(nobody)
    assert not a.ping(POD6_B, nobody), "an address of no pod passed"
    assert dump_snat(netd)["src6_dropped"] == 2
    # Link-local (neighbour discovery, the gateway): not looked at.
    assert run("ip", "netns", "exec", a.ns, "ping", "-6", "-c", "1", "-W",
               "1", "-q", "fe80::1:1%eth0", check=False).returncode == 0
    assert a.ping(POD6_B, POD6_A)
    assert dump_snat(netd)["src6_dropped"] == 2


def test_source_check_repaired_at_each_sync(node, netd):
    """Removed, or given a rule netd does not write, it is written whole
    again at the next NETD_SNAT; in place, nothing is written."""
    def nft(*args):
        return run("ip", "netns", "exec", node.name, "nft", *args)

    r = netd.call("snat to=10.0.0.10")
    assert r["status"] == "ok", r
    st = dump_snat(netd)
    assert st["src6_in_place"] == 1 and st["src6_replaced"] == 1, st
    nft("delete", "table", "ip6", "enid")
    st = dump_snat(netd)
    assert st["src6_in_place"] == 0 and "absent" in st["src6_differs"], st
    assert netd.call("snat to=10.0.0.10")["status"] == "ok"
    st = dump_snat(netd)
    assert st["src6_in_place"] == 1 and st["src6_replaced"] == 2, st
    nft("add", "rule", "ip6", "enid", "pod-src", "accept")
    st = dump_snat(netd)
    assert st["src6_in_place"] == 0 and st["src6_differs"], st
    assert netd.call("snat to=10.0.0.10")["status"] == "ok"
    st = dump_snat(netd)
    assert st["src6_in_place"] == 1 and st["src6_replaced"] == 3, st
    assert "replacing it whole" in netd.logtext()
    # ip enid, the SNAT table, is another table, IPv4's, left as it is.
    assert "table ip enid" in nft("list", "tables").stdout


def test_address_configured_on_a_link(node, netd):
    """An IPv6 address inside the VPC that some link of the node carries
    (lo here) is the node's, not a pod's or an ENI's to take."""
    taken = "2600:1f14:abc:110::77"
    node.addr_add_announced("-6", taken + "/128", "lo")
    expect_refused(node, netd, "addpod addr=%s table=0" % taken, taken,
                   "configured on a link")
    expect_refused(node, netd, SETUP6.replace(ENI6, taken), taken,
                   "configured on a link")


def test_eni_address_taken_the_instant_it_is_set_up(node, netd):
    """An ENI's IPv6 address, asked for as a pod's in the request right
    after the ENI's set-up (both sent at once): refused, though the
    kernel announces the address only later, from its work queue (netd
    counts what it adds itself at once, kernel.c's addr_view_added())."""
    for n in range(300):
        ids = [netd.send(SETUP6), netd.send("addpod addr=%s table=0" % ENI6),
               netd.send("addpod addr=%s table=101" % ENI6)]
        r = [netd.wait(rid) for rid in ids]
        assert r[0]["status"] == "ok", r
        for x in r[1:]:
            assert x["status"] == "refused" and \
                "configured on a link" in x["message"], (n, r)
        assert netd.call("teardown mac=%s table=101 addr=none addr6=%s"
                         % (ENI1, ENI6))["status"] == "ok"
    assert not node.ip("-6", "rule").count(ENI6)


def test_restarted_netd_takes_its_ipv6_eni_back(node, make_netd):
    """netd's own IPv6 address and routes on an ENI are its own to a
    restarted netd (tagged): the ENI is declared again, found in place."""
    netd = make_netd()
    assert netd.call(SETUP)["status"] == "ok"
    netd.close()
    again = make_netd()       # declares eni1: bare but for netd's own
    r = again.call(SETUP)
    assert r["status"] == "ok" and r["changed"] == 0, r


ENI1_LL6 = "fe80::ff:fe00:11"           # ENI1's modified EUI-64
OUTSIDE6 = "2001:db8:ff::10"


@pytest.mark.parametrize("up_before", [False, True])
def test_first_packet_through_a_new_eni_is_answered(node, netd, pods6,
                                                    up_before):
    """With DAD on for the ENI's link (as on a real node), a new ENI's
    link has no tentative address after setup: netd turned the kernel's
    link-local generation off before the up and added the EUI-64 one
    without DAD.  Else for a second or more the kernel sends no neighbour
    solicitation for fe80:ec2::1 there (no source address), and a pod's
    first packet out waits or is lost.  A link up before (up_before) has
    the kernel's own tentative address: netd's replaces it.  Teardown
    gives the link back to the kernel's EUI-64 generation."""
    router = "enid-t-r6-" + secrets.token_hex(3)
    run("ip", "netns", "add", router)
    try:
        podwire.sysctl(router, ("net.ipv6.conf.all.accept_dad", "0"),
                       ("net.ipv6.conf.default.accept_dad", "0"))
        node.ip("link", "set", "eni1p", "netns", router)
        # The VPC router: fe80:ec2::1 on the ENI's link; it knows which
        # ENI holds the pod's address (a neighbour entry, as EC2 knows).
        podwire.ip_batch(router, (
            ("link", "set", "lo", "up"),
            ("link", "set", "eni1p", "up"),
            ("addr", "add", "fe80:ec2::1/64", "dev", "eni1p", "nodad"),
            ("addr", "add", OUTSIDE6 + "/128", "dev", "lo"),
            ("route", "add", POD6_A + "/128", "dev", "eni1p"),
            ("neigh", "add", POD6_A, "lladdr", ENI1, "dev", "eni1p",
             "nud", "permanent")))
        node.sysctl("net.ipv6.conf.eni1.accept_dad", "1")
        if up_before:
            node.ip("link", "set", "eni1", "up")
            assert "tentative" in node.ip("-6", "addr", "show", "dev",
                                          "eni1")
        r = netd.call(SETUP6)
        assert r["status"] == "ok", r
        assert node.ip("-6", "addr", "show", "dev", "eni1",
                       "tentative").strip() == ""
        assert ENI1_LL6 in eni1_addrs(node, 6)
        assert "addrgenmode none" in node.ip("-d", "link", "show", "eni1")
        assert netd.call("addpod addr=%s table=101" % POD6_A)["status"] \
            == "ok"
        out = run("ip", "netns", "exec", pods6[0].ns, "ping", "-6", "-c",
                  "1", "-W", "1", "-n", "-I", POD6_A, OUTSIDE6,
                  check=False, timeout=10)
        assert out.returncode == 0, out.stdout
        rtt = float(out.stdout.split("time=")[1].split()[0])
        assert rtt < 200, out.stdout
        # In place: the link-local address and the mode are no drift.
        before = state(node)
        r = netd.call(SETUP6)
        assert r["status"] == "ok" and r["changed"] == 0, r
        assert state(node) == before
        r = netd.call("teardown mac=%s table=101 addr=none addr6=%s"
                      % (ENI1, ENI6))
        assert r["status"] == "ok", r
        assert eni1_addrs(node, 6) == []
        assert "addrgenmode eui64" in node.ip("-d", "link", "show", "eni1")
    finally:
        run("ip", "netns", "del", router, check=False)


def test_dual_family_eni_without_addr6_gets_netds_link_local(node,
                                                             tmp_path):
    """ip_family dual: an ENI set up before its own IPv6 address is known
    (IPv4 alone) gets netd's link-local address already, so the later
    set-up with addr6 finds nothing tentative; teardown sets the mode
    back.  (ipv4, the default: the kernel's own, test_netd.py.)"""
    from netd_helpers import CONFIG
    conf = dict(CONFIG, ip_family="dual")
    d = Driver(node, str(tmp_path), config=conf)
    try:
        d.start(cidrs=("10.0.0.0/16", VPC6))
        assert d.call("declare mac=%s table=101" % ENI1)["status"] == "ok"
        node.sysctl("net.ipv6.conf.eni1.accept_dad", "1")
        v4 = SETUP.replace(" addr6=%s" % ENI6, "")
        r = d.call(v4)
        assert r["status"] == "ok", r
        assert eni1_addrs(node, 6) == [ENI1_LL6]
        assert node.ip("-6", "addr", "show", "dev", "eni1",
                       "tentative").strip() == ""
        r = d.call(SETUP)
        assert r["status"] == "ok" and r["changed"] == 2, r  # addr6, ::/0
        assert sorted(eni1_addrs(node, 6)) == sorted([ENI6, ENI1_LL6])
        r = d.call("teardown mac=%s table=101 addr=10.0.16.5/20" % ENI1)
        assert r["status"] == "ok", r
        assert eni1_addrs(node, 6) == []
        assert "addrgenmode eui64" in node.ip("-d", "link", "show", "eni1")
    finally:
        d.close()


def test_eni_address_taken_after_a_burst_of_notifications(node, netd,
                                                          tmp_path):
    """The ENI's set-up and pod requests for its address at once, as in
    test_eni_address_taken_the_instant_it_is_set_up, but with a burst of
    address changes by somebody else queued on netd's event socket first
    (more than a read takes): the teardown's removal of the address is
    then still unread when the set-up dumps the addresses and adds it
    again, and must not take it out of the view when read later."""
    flood = str(tmp_path / "flood")
    for n in range(160):
        with open(flood, "w") as f:
            for i in range(40 + (n * 7) % 200):
                a = "10.0.%d.%d/32" % (200 + i // 250, 1 + i % 250)
                f.write("addr add %s dev lo\naddr del %s dev lo\n" % (a, a))
        os.kill(netd.pid, signal.SIGSTOP)
        try:
            run("ip", "-n", node.name, "-batch", flood, timeout=60)
            ids = [netd.send("teardown mac=%s table=101 addr=none addr6=%s"
                             % (ENI1, ENI6)),
                   netd.send(SETUP6),
                   netd.send("addpod addr=%s table=0" % ENI6),
                   netd.send("addpod addr=%s table=101" % ENI6),
                   netd.send("addpod addr=%s table=0" % ENI6)]
            time.sleep(0.02)
        finally:
            os.kill(netd.pid, signal.SIGCONT)
        r = [netd.wait(rid) for rid in ids]
        assert r[0]["status"] == "ok" and r[1]["status"] == "ok", (n, r)
        for x in r[2:]:
            assert x["status"] == "refused" and \
                "configured on a link" in x["message"], (n, r)
