"""A hostile broker against real enid-netd: netd_drive sends what a
compromised broker (or cloudd lying through it) could send, and netd must
refuse each request with a `security:` line and leave the kernel exactly
as it was: `ip link`, `ip addr`, `ip rule` and `ip route show table all`
are compared as text before and after.  Needs root; about 10 s.

The node: eth0 (the primary, PRIMARY_MAC) and eth1 (a second uplink)
carry the main table's default route as a multipath route; stor0 is a
storage NIC, up with an address and a route of its own; brm0 is a bare
link enslaved to a bridge (which takes its MAC); lo holds an extra address inside the VPC; eni1
is a fresh, bare ENI that netd may take; mvl0 has a macvlan on it with
its own MAC.  Every address named below lies
inside the VPC, so only netd's own findings can refuse it.

    ENID_BUILDDIR=$PWD/build /usr/bin/python3 -m pytest -q \\
        tests/integration/test_netd_hostile.py
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netd_helpers import (CONNMARK_RULE, PRIMARY_IP,  # noqa
                          PRIMARY_MAC, PROTO, Driver, Netns, run)
from netd_helpers import NEEDS_NETD  # noqa

UPLINK_MAC = "02:00:00:00:00:02"
UPLINK_IP = "10.0.4.20"
STOR_MAC = "02:00:00:00:00:33"
STOR_IP = "10.0.32.50"
LO_IP = "10.0.48.7"
BRM_MAC = "02:00:00:00:00:44"
MV_MAC = "02:00:00:00:00:66"       # a link with a macvlan sharing its MAC
ENI1 = "02:00:00:00:00:11"
LATE_MAC = "02:00:00:00:00:55"     # a link configured by someone, later
FAKE_MAC = "02:de:ad:be:ef:01"
ENI3 = "02:00:00:00:00:77"         # bare, given others' routes in turn
SETUP1 = ("setup mac=%s table=101 addr=10.0.16.5/20 gw=10.0.16.1 mtu=9001"
          % ENI1)

pytestmark = NEEDS_NETD


@pytest.fixture
def node():
    with Netns() as ns:
        ns.ip("link", "add", "eth1", "address", UPLINK_MAC, "type", "veth",
              "peer", "name", "eth1p")
        ns.ip("link", "set", "eth1p", "up")
        ns.ip("link", "set", "eth1", "up")
        ns.ip("addr", "add", UPLINK_IP + "/22", "dev", "eth1")
        ns.ip("route", "replace", "default",
              "nexthop", "via", "10.0.0.1", "dev", "eth0",
              "nexthop", "via", "10.0.4.1", "dev", "eth1")
        ns.ip("link", "add", "stor0", "address", STOR_MAC, "type", "veth",
              "peer", "name", "stor0p")
        ns.ip("link", "set", "stor0p", "up")
        ns.ip("link", "set", "stor0", "up")
        ns.ip("addr", "add", STOR_IP + "/24", "dev", "stor0")
        ns.ip("route", "add", "10.0.33.0/24", "via", "10.0.32.1", "dev",
              "stor0")
        ns.ip("addr", "add", LO_IP + "/32", "dev", "lo")
        ns.ip("link", "add", "br0", "type", "bridge")
        ns.ip("link", "add", "brm0", "address", BRM_MAC, "type", "veth",
              "peer", "name", "brm0p")
        ns.ip("link", "set", "brm0", "master", "br0")
        ns.add_eni("mvl0", MV_MAC)
        ns.ip("link", "add", "link", "mvl0", "name", "mv0", "address",
              MV_MAC, "type", "macvlan")
        ns.add_eni("eni1", ENI1)
        yield ns


@pytest.fixture
def make_netd(node, tmp_path):
    started = []

    def make(config=None):
        workdir = tmp_path / str(len(started))
        workdir.mkdir()
        d = Driver(node, str(workdir), config=config)
        started.append(d)
        return d
    try:
        yield make
    finally:
        for d in started:
            d.close()


def security_lines(netd):
    return [l for l in netd.logtext().splitlines() if "security:" in l]


def expect_refused(netd, line, *needles):
    """The request is answered refused and logged as a security event
    naming what it was about."""
    before = len(security_lines(netd))
    r = netd.call(line)
    assert r.get("type") == "RESULT" and r["status"] == "refused", (line, r)
    new = security_lines(netd)[before:]
    assert any(all(n in l for n in needles) for l in new), (line, new)
    return r


@pytest.mark.parametrize("mac", [FAKE_MAC, STOR_MAC, ENI1])
def test_policy_with_another_primary_mac_is_fatal(node, make_netd, mac):
    """The primary MAC comes from the cloud through cloudd and the broker;
    netd holds it against the links it finds the default route on."""
    before = node.kernel_state()
    netd = make_netd()
    assert netd.call("hello")["type"] == "HELLO_ACK"
    netd.send("policy mac=%s cidr=10.0.0.0/16" % mac)
    ev = netd.event("exit", timeout=5)
    assert ev["status"] == 1 and ev["signal"] == 0, ev
    lines = security_lines(netd)
    assert any(mac in l and "eth0 %s" % PRIMARY_MAC in l and
               "eth1 %s" % UPLINK_MAC in l and PRIMARY_IP in l
               for l in lines), netd.logtext()
    assert node.kernel_state() == before


def test_policy_with_either_uplink_is_accepted(node, make_netd):
    """Every next hop of the default route is the node's own link."""
    netd = make_netd().start(mac=UPLINK_MAC)
    expect_refused(netd, "declare mac=%s table=102" % PRIMARY_MAC,
                   PRIMARY_MAC, "node's own")


def test_node_own_links_and_addresses(node, make_netd):
    netd = make_netd().start()
    netd.call("declare mac=%s table=101" % ENI1)
    before = node.kernel_state()
    for line, needle in [
            ("declare mac=%s table=102" % PRIMARY_MAC, PRIMARY_MAC),
            ("declare mac=%s table=102" % UPLINK_MAC, UPLINK_MAC),
            ("find mac=%s deadline=100" % UPLINK_MAC, UPLINK_MAC),
            ("setup mac=%s table=101 addr=10.0.0.10/20 gw=10.0.0.1 mtu=576"
             % PRIMARY_MAC, PRIMARY_MAC),
            ("teardown mac=%s table=101 addr=10.0.0.10/20" % PRIMARY_MAC,
             PRIMARY_MAC),
            ("setup mac=%s table=102 addr=10.0.4.20/22 gw=10.0.4.1 mtu=576"
             % UPLINK_MAC, UPLINK_MAC),
            ("teardown mac=%s table=102 addr=10.0.4.20/22" % UPLINK_MAC,
             UPLINK_MAC),
            # A declared ENI named with the node's own addresses.
            ("setup mac=%s table=101 addr=%s/20 gw=10.0.0.1 mtu=9001"
             % (ENI1, PRIMARY_IP), PRIMARY_IP),
            ("teardown mac=%s table=101 addr=%s/20" % (ENI1, PRIMARY_IP),
             PRIMARY_IP),
            ("setup mac=%s table=101 addr=%s/22 gw=10.0.4.1 mtu=9001"
             % (ENI1, UPLINK_IP), UPLINK_IP),
            # Pod rules for them, in main's band and an ENI's table.
            ("addpod addr=%s table=0" % PRIMARY_IP, PRIMARY_IP),
            ("addpod addr=%s table=101" % PRIMARY_IP, PRIMARY_IP),
            ("delpod addr=%s table=0" % PRIMARY_IP, PRIMARY_IP),
            ("addpod addr=%s table=0" % UPLINK_IP, UPLINK_IP),
            ("delpod addr=%s table=101" % UPLINK_IP, UPLINK_IP)]:
        expect_refused(netd, line, needle)
    assert node.kernel_state() == before


def test_configured_links_and_lo(node, make_netd):
    """A link someone else configured is not an ENI's to take, whether it
    is there at declare time or turns up configured later."""
    netd = make_netd().start()
    before = node.kernel_state()
    expect_refused(netd, "declare mac=%s table=102" % STOR_MAC, STOR_MAC,
                   "did not install", STOR_IP)
    # The bridge took its port's MAC: either is refused.
    expect_refused(netd, "declare mac=%s table=103" % BRM_MAC, BRM_MAC,
                   "bond, bridge or VRF")
    expect_refused(netd, "declare mac=%s table=103" % MV_MAC, MV_MAC,
                   "same MAC")
    for addr in (STOR_IP, LO_IP):
        expect_refused(netd, "addpod addr=%s table=0" % addr, addr,
                       "configured on a link")
        expect_refused(netd, "delpod addr=%s table=0" % addr, addr,
                       "configured on a link")
    # eni1 is bare and may be declared, but never with a taken address.
    assert netd.call("declare mac=%s table=101" % ENI1)["status"] == "ok"
    for addr in (STOR_IP, LO_IP):
        gw = addr.rsplit(".", 1)[0] + ".1"
        expect_refused(netd, "setup mac=%s table=101 addr=%s/24 "
                       "gw=%s mtu=9001" % (ENI1, addr, gw), addr,
                       "configured on a link")
        expect_refused(netd, "addpod addr=%s table=101" % addr, addr)
    assert node.kernel_state() == before

    # Declared while absent (a late link), then someone configures it:
    # found or set up, it is refused.
    assert netd.call("declare mac=%s table=104" % LATE_MAC)["status"] == \
        "ok"
    node.ip("link", "add", "late0", "address", LATE_MAC, "type", "veth",
            "peer", "name", "late0p")
    node.ip("addr", "add", "10.0.64.9/24", "dev", "late0")
    node.ip("link", "set", "late0", "up")
    before = node.kernel_state()
    expect_refused(netd, "find mac=%s deadline=500" % LATE_MAC, LATE_MAC,
                   "did not install", "10.0.64.9")
    expect_refused(netd, "setup mac=%s table=104 addr=10.0.64.10/24 "
                   "gw=10.0.64.1 mtu=1500" % LATE_MAC, LATE_MAC,
                   "did not install")
    expect_refused(netd, "teardown mac=%s table=104 addr=10.0.64.9/24"
                   % LATE_MAC, LATE_MAC, "did not install")
    assert node.kernel_state() == before


def test_links_changed_between_requests_are_seen(node, make_netd):
    """netd reads the node's links once and uses that read again while
    no link event has come since (a restart sets up many ENIs, each
    looked up three times, on a node of hundreds of veths).  Every change
    someone makes between two requests must still be seen by the next:
    a link's MAC changed, a macvlan with its MAC added and deleted, the
    link enslaved to a bridge and freed again."""
    netd = make_netd().start()
    assert netd.call("declare mac=%s table=101" % ENI1)["status"] == "ok"

    node.ip("link", "set", "eni1", "address", "02:00:00:00:00:99")
    r = netd.call(SETUP1)
    assert r["status"] == "not-found", r
    assert netd.call("find mac=%s deadline=100" % ENI1)["status"] == \
        "not-found"
    node.ip("link", "set", "eni1", "address", ENI1)

    node.ip("link", "add", "link", "eni1", "name", "mv1", "address",
            ENI1, "type", "macvlan")
    before = node.kernel_state()
    expect_refused(netd, SETUP1, ENI1, "same MAC")
    assert node.kernel_state() == before
    node.ip("link", "del", "mv1")

    node.ip("link", "set", "eni1", "master", "br0")
    before = node.kernel_state()
    expect_refused(netd, SETUP1, ENI1, "bond, bridge or VRF")
    assert node.kernel_state() == before
    node.ip("link", "set", "eni1", "nomaster")

    # Each change undone, the link is netd's again.
    assert netd.call(SETUP1)["status"] == "ok"
    assert any(r.get("table") == "101"
               for r in node.kernel_state()["route"]), node.kernel_state()


# What someone else put on a bare link, each as netd's reads of that link
# alone (the kernel filters its address dump by the link and its route
# dump by the link as a next hop) must still find it: a route in another
# table, in IPv6, as one next hop of a multipath route, through a next-hop
# object, and an IPv6 address that is not link-local.
ON_ENI3 = [
    (["route", "add", "10.0.99.0/24", "dev", "eni3", "table", "200"],
     "route 10.0.99.0/24 table 200"),
    (["-6", "route", "add", "2001:db8:7::/64", "dev", "eni3", "table",
      "300"], "route 2001:db8:7::/64 table 300"),
    (["route", "add", "10.0.98.0/24", "table", "201", "nexthop", "via",
      "10.0.0.1", "dev", "eth0", "nexthop", "dev", "eni3"],
     "route 10.0.98.0/24 table 201"),
    (["route", "add", "10.0.97.0/24", "nhid", "77", "table", "202"],
     "route 10.0.97.0/24 table 202"),
    (["-6", "addr", "add", "2001:db8:9::5/64", "dev", "eni3",
      "nodad"], "address 2001:db8:9::5/64"),
]


def test_what_a_link_carries_is_read_from_that_link(node, make_netd):
    """netd reads a link's addresses and routes for that link alone; what
    someone else put on it is found all the same, in any table or family,
    while the node's other links carrying their own (eth0, eth1, stor0)
    do not make it look taken.  Each refusal leaves the kernel as it was;
    without them the link is taken."""
    node.add_eni("eni3", ENI3)
    node.ip("link", "set", "eni3", "up")
    node.ip("nexthop", "add", "id", "77", "dev", "eni3")
    netd = make_netd().start()
    for cmd, needle in ON_ENI3:
        node.ip(*cmd)
        before = node.kernel_state()
        expect_refused(netd, "declare mac=%s table=103" % ENI3, ENI3,
                       "did not install", needle)
        assert node.kernel_state() == before
        node.ip(*[("del" if w == "add" else w) for w in cmd])
    node.ip("nexthop", "del", "id", "77")
    assert netd.call("declare mac=%s table=103" % ENI3)["status"] == "ok"
    assert netd.call("setup mac=%s table=103 addr=10.0.16.7/20 "
                     "gw=10.0.16.1 mtu=9001" % ENI3)["status"] == "ok"


def test_foreign_routes_in_the_enis_table_are_seen(node, make_netd):
    """Routes netd did not install in the ENI's own table, through another
    link and of another type: the table's read (the kernel filters it by
    table) counts them, and set-up and teardown leave them."""
    node.ip("route", "add", "10.0.95.0/24", "dev", "eth0", "table", "101")
    node.ip("route", "add", "blackhole", "10.0.96.0/24", "table", "101")
    netd = make_netd().start()
    assert netd.call("declare mac=%s table=101" % ENI1)["status"] == "ok"
    assert netd.call(SETUP1)["status"] == "ok"
    assert netd.call("teardown mac=%s table=101 addr=10.0.16.5/20"
                     % ENI1)["status"] == "ok"
    assert "table 101 holds 2 routes netd did not install" in \
        netd.logtext()
    left = node.ip("route", "show", "table", "101")
    assert "10.0.95.0/24 dev eth0" in left and \
        "blackhole 10.0.96.0/24" in left, left


FOREIGN_RULES = [
    ["prio", "512", "iif", "eth0", "to", "10.0.16.9", "lookup", "main"],
    ["prio", "512", "fwmark", "0x1", "to", "10.0.16.9", "lookup", "main"],
    ["prio", "512", "to", "10.0.16.9", "lookup", "main"],
    ["prio", "512", "to", "10.0.16.0/24", "lookup", "main"],
    ["prio", "1536", "from", "10.0.16.9", "iif", "eth0", "lookup", "101"],
    ["prio", "1536", "from", "10.0.16.9", "fwmark", "0x2/0xff", "lookup",
     "101"],
    ["prio", "1536", "from", "10.0.16.9", "lookup", "101"],
    ["prio", "1536", "from", "10.0.16.9", "lookup", "101", "proto",
     "static"],
    ["prio", "1536", "from", "10.0.16.0/24", "lookup", "101"],
    ["prio", "1536", "from", "10.0.16.9", "to", "10.0.99.0/24", "lookup",
     "101"],
    # Rules with netd's connection mark that are not netd's rule: another
    # table, another mask, another priority, even with netd's tag.
    ["prio", "512", "fwmark", "0x80/0x80", "lookup", "100"],
    ["prio", "512", "fwmark", "0x80/0xff", "lookup", "main", "proto", "233"],
    ["prio", "512", "fwmark", "0x80/0x80", "lookup", "100", "proto", "233"],
    ["prio", "1536", "fwmark", "0x80/0x80", "lookup", "main", "proto",
     "233"],
]


def test_pod_rules_next_to_foreign_rules(node, make_netd):
    """Rules at enid's priorities that netd did not make: with an iif, a
    fwmark, a wider selector, another tag, or none.  netd's pod add and
    delete, and an ENI teardown, leave every one where it was, and netd
    neither dumps nor counts them."""
    for rule in FOREIGN_RULES:
        node.ip("rule", "add", *rule)
    foreign = set(node.ip("rule").splitlines())
    netd = make_netd({"user": "enid", "pool": {"max_pods": 2},
                      "routing": {"table_base": 100,
                                  "rule_priority_to": 512,
                                  "rule_priority_from": 1536}}).start()
    assert netd.call("declare mac=%s table=101" % ENI1)["status"] == "ok"
    assert netd.call(SETUP1)["status"] == "ok"
    before = node.kernel_state()
    dump = netd.call("dumprules")
    assert dump["type"] == "END" and dump["count"] == 0, dump

    for table in (101, 0, 101):
        r = netd.call("addpod addr=10.0.16.9 table=%d" % table)
        assert r["status"] == "ok", r
        mine = [l for l in node.ip("rule").splitlines()
                if "proto %d" % PROTO in l and "fwmark" not in l]
        assert len(mine) == (2 if table else 1), mine
        r = netd.call("addpod addr=10.0.16.9 table=%d" % table)
        assert r["status"] == "ok", r               # idempotent
        assert netd.call("dumprules")["count"] == len(mine)
        r = netd.call("delpod addr=10.0.16.9 table=%d" % table)
        assert r["status"] == "ok", r
        assert node.kernel_state() == before

    # Foreign rules don't count toward the cap of two pods.
    for a in ("10.0.16.9", "10.0.16.10"):
        assert netd.call("addpod addr=%s table=101" % a)["status"] == "ok"
    full = node.kernel_state()
    expect_refused(netd, "addpod addr=10.0.16.11 table=0", "10.0.16.11",
                   "pod limit")
    assert node.kernel_state() == full
    assert netd.call("addpod addr=10.0.16.9 table=0")["status"] == "ok"
    for a in ("10.0.16.9", "10.0.16.10"):
        assert netd.call("delpod addr=%s table=0" % a)["status"] == "ok"
    assert node.kernel_state() == before

    # Teardown takes netd's from-rules to table 101, and only those.
    assert netd.call("addpod addr=10.0.16.12 table=101")["status"] == "ok"
    assert netd.call("teardown mac=%s table=101 addr=10.0.16.5/20"
                     % ENI1)["status"] == "ok"
    rules = node.ip("rule").splitlines()
    assert set(rules) - foreign == {
        CONNMARK_RULE,
        "512:\tfrom all to 10.0.16.12 lookup main proto %d" % PROTO}, rules
    assert foreign <= set(rules)
    assert rules.count(CONNMARK_RULE) == 1


def nft_ruleset(node):
    return run("ip", "netns", "exec", node.name, "nft", "list",
               "ruleset").stdout


def test_snat_to_anything_but_the_primary_address(node, make_netd):
    """NETD_SNAT names the address to translate pods to; a compromised
    broker names another: the second uplink's (it carries the default
    route too), a storage NIC's, lo's, an ENI's own, a pod's, one only
    the broker says is the node's.  Each is refused as a security event
    and counted; the table, the rules and the routes stay as they were."""
    netd = make_netd().start()
    assert netd.call("declare mac=%s table=101" % ENI1)["status"] == "ok"
    assert netd.call(SETUP1)["status"] == "ok"
    assert netd.call("addpod addr=10.0.16.9 table=101")["status"] == "ok"
    assert netd.call("snat to=%s" % PRIMARY_IP)["status"] == "ok"
    before = node.kernel_state()
    ruleset = nft_ruleset(node)
    hostile = (UPLINK_IP, STOR_IP, LO_IP, "10.0.16.5", "10.0.16.9",
               "10.0.0.11", "0.0.0.0")
    for i, to in enumerate(hostile, 1):
        expect_refused(netd, "snat to=%s" % to, "NETD_SNAT", to)
        s = netd.call("dumpsnat")
        assert s["refused"] == i and s["to"] == PRIMARY_IP, (to, s)
        assert s["in_place"] == 1, (to, s)
    assert node.kernel_state() == before
    assert nft_ruleset(node) == ruleset
