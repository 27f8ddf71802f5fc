"""enid-netd's pod host routes against a hostile broker: NETD_ADD_POD_ROUTE
puts back "ADDR/32 dev VETH scope link" in the main table, as enid-cni
made it, only when the kernel proves it a pod's: netd's own rule for the
address, a veth whose peer is in another namespace, no route to the
address already, and no other pod's route on the veth.  Each refusal is a
`security:` line and leaves `ip link`, `ip addr`, `ip rule` and `ip route
show table all` as they were.  Needs root; a few seconds.

    ENID_BUILDDIR=$PWD/build /usr/bin/python3 -m pytest -q \\
        tests/integration/test_netd_routes.py
"""
import os
import secrets
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netd_helpers import Driver, Netns, run  # noqa
from netd_helpers import NEEDS_NETD  # noqa

ENI1 = "02:00:00:00:00:11"
POD_A, POD_B, POD_C = "10.0.16.9", "10.0.16.10", "10.0.16.11"
VETH_A, VETH_B, VETH_C = "enid0000000000a", "enid0000000000b", \
    "enid0000000000c"

pytestmark = NEEDS_NETD


@pytest.fixture
def node():
    """The node, with three pods' veths whose peers are in a pod
    namespace, a veth pair and a bridge with pod-like names on the node
    alone, and an ENI."""
    pods = "enid-t-pods-" + secrets.token_hex(4)
    run("ip", "netns", "add", pods)
    try:
        with Netns() as ns:
            for i, veth in enumerate((VETH_A, VETH_B, VETH_C)):
                ns.ip("link", "add", veth, "type", "veth", "peer", "name",
                      "eth%d" % i, "netns", pods)
                ns.ip("link", "set", veth, "up")
            ns.ip("link", "add", "enidsamens00001", "type", "veth", "peer",
                  "name", "enidsamens00002")
            ns.ip("link", "add", "enidbridge00001", "type", "bridge")
            ns.add_eni("eni1", ENI1)
            yield ns
    finally:
        run("ip", "netns", "del", pods, check=False)


@pytest.fixture
def netd(node, tmp_path):
    d = Driver(node, str(tmp_path))
    try:
        d.start()
        assert d.call("declare mac=%s table=101" % ENI1)["status"] == "ok"
        for a in (POD_A, POD_B, POD_C):
            assert d.call("addpod addr=%s table=0" % a)["status"] == "ok"
        yield d
    finally:
        d.close()


def security_lines(netd):
    return [l for l in netd.logtext().splitlines() if "security:" in l]


def expect_refused(node, netd, line, *needles):
    before_state = node.kernel_state()
    before = len(security_lines(netd))
    r = netd.call(line)
    assert r.get("type") == "RESULT" and r["status"] == "refused", (line, r)
    new = security_lines(netd)[before:]
    assert any(all(n in l for n in needles) for l in new), (line, new)
    assert node.kernel_state() == before_state, line


def host_routes(node):
    return [l.replace(" linkdown", "").strip()
            for l in node.ip("route").splitlines()
            if "scope link" in l and l.split()[0].startswith("10.0.16.")]


def test_restores_a_pods_route_as_the_plugin_makes_it(node, netd):
    """The route comes back as enid-cni adds it (libnl's default
    protocol, static; scope link; main table), a repeat changes nothing,
    and the dump names it with its device (test_cni_e2e.py compares it
    with the plugin's own)."""
    node.ip("route", "add", POD_B + "/32", "dev", VETH_B, "scope", "link")
    r = netd.call("addroute addr=%s dev=%s" % (POD_A, VETH_A))
    assert r["status"] == "ok", r
    routes = host_routes(node)
    assert "%s dev %s proto static scope link" % (POD_A, VETH_A) in routes, \
        routes
    before = node.kernel_state()
    assert netd.call("addroute addr=%s dev=%s" % (POD_A, VETH_A))[
        "status"] == "ok"
    assert node.kernel_state() == before
    dump = netd.call("dumproutes")
    assert dump["type"] == "END", dump
    got = {(e["addr"], e["dev"]) for e in dump["entries"]}
    assert {(POD_A, VETH_A), (POD_B, VETH_B)} <= got, got


@pytest.mark.parametrize("line,needle", [
    ("addroute addr=10.0.16.99 dev=%s" % VETH_A, "no rule of netd's"),
    ("addroute addr=%s dev=enidbridge00001" % POD_A, "not a veth"),
    ("addroute addr=%s dev=enidsamens00001" % POD_A,
     "not in another network namespace"),
    ("addroute addr=%s dev=eth0" % POD_A, "node's own links"),
    ("addroute addr=%s dev=eni1" % POD_A, "declared ENI's link"),
    ("addroute addr=%s dev=eth0:1" % POD_A, "not a pod veth's"),
    ("addroute addr=192.168.1.9 dev=%s" % VETH_A, "outside the VPC"),
    ("addroute addr=10.0.0.10 dev=%s" % VETH_A, "node's own"),
])
def test_refused_by_what_the_kernel_holds(node, netd, line, needle):
    expect_refused(node, netd, line, needle)


def test_never_replaces_or_moves_a_route(node, netd):
    """The address routed through another veth (or anywhere) stays so."""
    node.ip("route", "add", POD_A + "/32", "dev", VETH_B, "scope", "link")
    expect_refused(node, netd, "addroute addr=%s dev=%s" % (POD_A, VETH_A),
                   POD_A, "routed already")
    node.ip("route", "del", POD_A + "/32")
    node.ip("route", "add", POD_A + "/32", "via", "10.0.0.1", "dev", "eth0")
    expect_refused(node, netd, "addroute addr=%s dev=%s" % (POD_A, VETH_A),
                   POD_A, "routed already")


def test_one_pod_per_veth(node, netd):
    """A veth that carries another pod's route takes no second one."""
    node.ip("route", "add", POD_C + "/32", "dev", VETH_A, "scope", "link")
    expect_refused(node, netd, "addroute addr=%s dev=%s" % (POD_A, VETH_A),
                   POD_A, "carries another pod's host route")


def test_a_device_gone_is_not_found_not_refused(node, netd):
    """A pod's veth gone (its DEL under way) is no security event."""
    before = node.kernel_state()
    n = len(security_lines(netd))
    r = netd.call("addroute addr=%s dev=enidnosuchlink" % POD_A)
    assert r["status"] == "not-found", r
    assert len(security_lines(netd)) == n
    assert node.kernel_state() == before


METRICS = (50, 1024, 4294967295, 0)   # 50 first: the issue's


@pytest.mark.parametrize("kind", ["blackhole", "unreachable", "prohibit"])
def test_never_shadows_a_route_of_another_kind(node, netd, kind):
    """A blackhole, unreachable or prohibit route to the address in main,
    at any metric and not netd's, is a route to it: the request is
    refused as a security event naming it, and the kernel's routes stay
    as they were (no /32 of netd's beside it to shadow it)."""
    for metric in METRICS:
        node.ip("route", "add", kind, POD_A + "/32", "metric", str(metric))
        expect_refused(node, netd, "addroute addr=%s dev=%s" % (POD_A,
                                                                VETH_A),
                       POD_A, "routed already", "%s, metric %d"
                       % (kind, metric))
        assert host_routes(node) == [], host_routes(node)
        node.ip("route", "del", kind, POD_A + "/32", "metric", str(metric))
    # With none left, the route is put back.
    assert netd.call("addroute addr=%s dev=%s" % (POD_A, VETH_A))[
        "status"] == "ok"


def test_never_shadows_a_route_through_another_device(node, netd):
    """The same for an ordinary route to the address through another
    device, at any metric."""
    for metric in METRICS:
        node.ip("route", "add", POD_A + "/32", "dev", VETH_B, "scope",
                "link", "metric", str(metric))
        expect_refused(node, netd, "addroute addr=%s dev=%s" % (POD_A,
                                                                VETH_A),
                       POD_A, "routed already", "ifindex", "metric %d"
                       % metric)
        node.ip("route", "del", POD_A + "/32", "dev", VETH_B, "metric",
                str(metric))
