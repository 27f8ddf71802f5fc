"""enid-netd's routing for SNAT (issue 22) against a real kernel, each test
in a fresh network namespace with netd_drive playing the broker:

- a secondary ENI's table with SNAT on (the VPC's CIDRs and snat.exclude
  through the ENI, the rest to the primary link's gateway) and off (all
  through the ENI), checked also by asking the kernel where a pod's packets
  go (`ip route get ... iif`);
- netd's connection-mark rule "fwmark 0x80/0x80 lookup main" at the "to
  POD" priority: there from the policy on, exactly once across a kill -9
  and restart, through pod churn and ENI teardown, replaced when
  routing.connmark changes, and beside foreign fwmark rules it never
  touches.

Needs root; a few seconds.

    ENID_BUILDDIR=$PWD/build /usr/bin/python3 -m pytest -q \\
        tests/integration/test_netd_egress.py
"""
import copy
import os
import signal
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netd_helpers import (CONFIG, CONNMARK_RULE, GATEWAY,  # noqa
                          PROTO, VPC, Driver, Netns, eni_table)
from netd_helpers import NEEDS_NETD  # noqa

ENI1 = "02:00:00:00:00:11"
SETUP1 = ("setup mac=%s table=101 addr=10.0.16.5/20 gw=10.0.16.1 mtu=9001"
          % ENI1)
TEARDOWN1 = "teardown mac=%s table=101 addr=10.0.16.5/20" % ENI1
EXCLUDED = "198.18.0.0/24"
POD = "10.0.16.9"               # a pod on eni1 (table 101)
PRIMARY_POD = "10.0.1.7"        # a pod on the primary ENI (no table)
FOREIGN_MARK_RULE = "512:\tfrom all fwmark 0x80/0x80 lookup 100"

pytestmark = NEEDS_NETD


def config(**snat):
    c = copy.deepcopy(CONFIG)
    if snat:
        c["snat"] = snat
    return c


@pytest.fixture
def ns():
    with Netns() as n:
        n.add_eni("eni1", ENI1)
        yield n


@pytest.fixture
def drivers(ns, tmp_path):
    """Start netd_drive (and netd) as often as a test needs; all closed."""
    started = []

    def make(cfg=None):
        wd = tmp_path / str(len(started))
        wd.mkdir()
        d = Driver(ns, str(wd), config=cfg)
        started.append(d)
        return d
    try:
        yield make
    finally:
        for d in started:
            d.close()


def ok(r):
    assert r.get("status") == "ok", r
    return r


def table_lines(ns, table):
    return [l.strip() for l in
            ns.ip("route", "show", "table", str(table)).splitlines()]


def rule_lines(ns):
    return [l.strip() for l in ns.ip("rule").splitlines()]


def marked_rules(ns):
    """netd's rules with a fwmark, as `ip rule` prints them."""
    return [l for l in rule_lines(ns) if "fwmark" in l and
            "proto %d" % PROTO in l]


def kill9(netd):
    os.kill(netd.pid, signal.SIGKILL)
    ev = netd.event("exit", timeout=5)
    assert ev["signal"] == signal.SIGKILL, ev
    netd.close()


def pod_veth(ns, name, addr):
    """A pod's host veth with its host route as enid-cni makes it, and a
    node that forwards, so `ip route get ... iif` answers as for a pod's
    packet."""
    ns.ip("link", "add", name, "type", "veth", "peer", "name", name + "p")
    ns.ip("link", "set", name + "p", "up")
    ns.ip("link", "set", name, "up")
    ns.ip("route", "add", addr + "/32", "dev", name, "scope", "link")
    ns.sysctl("net.ipv4.ip_forward", "1")
    for dev in ("all", "default", name):
        ns.sysctl("net.ipv4.conf.%s.rp_filter" % dev, "0")


def route_of(ns, dst, src, iif, mark=None):
    """(device, gateway) the kernel picks for a pod's packet."""
    args = ["route", "get", dst, "from", src, "iif", iif]
    if mark is not None:
        args += ["mark", mark]
    r = ns.ipj(*args)[0]
    return r.get("dev"), r.get("gateway")


def test_eni_table_snat_on_with_exclusion(ns, drivers):
    """SNAT on: the VPC and the excluded CIDR leave by the ENI, the rest
    by the primary link's gateway; a marked reply by the main table.  A
    setup asked again counts nothing changed."""
    netd = drivers(config(exclude=[EXCLUDED])).start()
    ok(netd.call("declare mac=%s table=101" % ENI1))
    r = ok(netd.call(SETUP1))
    assert r["changed"] == 5, r                 # the address, four routes
    assert table_lines(ns, 101) == eni_table(
        "10.0.16.1", "eni1", untranslated=(VPC, EXCLUDED))
    before = ns.state()
    assert ok(netd.call(SETUP1))["changed"] == 0
    assert ns.state() == before

    ok(netd.call("addpod addr=%s table=101" % POD))
    ok(netd.call("addpod addr=%s table=0" % PRIMARY_POD))
    pod_veth(ns, "pod0", POD)
    pod_veth(ns, "pod1", PRIMARY_POD)
    # Beyond the VPC: to the primary's gateway, where it is translated.
    assert route_of(ns, "1.1.1.1", POD, "pod0") == ("eth0", GATEWAY)
    # The VPC (outside the primary's /20) and the exclusion: the ENI.
    assert route_of(ns, "10.0.200.5", POD, "pod0") == ("eni1", "10.0.16.1")
    assert route_of(ns, "198.18.0.10", POD, "pod0") == ("eni1",
                                                         "10.0.16.1")
    # A reply to a connection that came in on the primary: main table.
    assert route_of(ns, "10.0.200.5", POD, "pod0", "0x80") == ("eth0",
                                                                 GATEWAY)
    assert route_of(ns, "10.0.200.5", POD, "pod0", "0x4080") == (
        "eth0", GATEWAY)                        # other bits kept
    assert route_of(ns, "10.0.200.5", POD, "pod0", "0x4000") == (
        "eni1", "10.0.16.1")
    # A pod on the primary ENI: the main table, primary link.
    assert route_of(ns, "1.1.1.1", PRIMARY_POD, "pod1") == ("eth0",
                                                             GATEWAY)

    ok(netd.call(TEARDOWN1))
    assert "proto %d" % PROTO not in ns.ip("route", "show", "table", "all")
    assert marked_rules(ns) == [CONNMARK_RULE]


def test_eni_table_snat_off(ns, drivers):
    """snat.enabled false: the table as before SNAT, everything a pod on
    the ENI sends leaves by the ENI; the connection-mark rule is there all
    the same (NodePort replies need it whatever SNAT does)."""
    netd = drivers(config(enabled=False)).start()
    ok(netd.call("declare mac=%s table=101" % ENI1))
    assert ok(netd.call(SETUP1))["changed"] == 3
    assert table_lines(ns, 101) == eni_table("10.0.16.1", "eni1",
                                             snat=False)
    assert ok(netd.call(SETUP1))["changed"] == 0
    ok(netd.call("addpod addr=%s table=101" % POD))
    pod_veth(ns, "pod0", POD)
    assert route_of(ns, "1.1.1.1", POD, "pod0") == ("eni1", "10.0.16.1")
    assert route_of(ns, "10.0.200.5", POD, "pod0") == ("eni1", "10.0.16.1")
    assert marked_rules(ns) == [CONNMARK_RULE]


def test_snat_on_without_primary_gateway_fails_cleanly(ns, drivers):
    """No gateway on the primary link: SNAT on has nowhere to send the
    pods' traffic, so the setup fails naming why and changes nothing; once
    the gateway is back (netd follows the default route) it works."""
    ns.ip("route", "replace", "default", "dev", "eth0")
    netd = drivers().start()
    ok(netd.call("declare mac=%s table=101" % ENI1))
    before = ns.state()
    r = netd.call(SETUP1)
    assert r["status"] == "failed", r
    assert "no IPv4 default gateway" in r["message"], r
    assert "02:00:00:00:00:01" in r["message"], r
    assert ns.state() == before
    assert "no IPv4 default gateway" in netd.logtext()

    ns.ip("route", "replace", "default", "via", GATEWAY, "dev", "eth0")
    ok(netd.call(SETUP1))
    assert table_lines(ns, 101) == eni_table("10.0.16.1", "eni1")


def test_connmark_rule_once_through_churn_and_kill(ns, drivers):
    """Present from the policy on, exactly once: pods added and deleted,
    the ENI set up and torn down, netd killed with -9 and started again
    (which finds it and adds nothing)."""
    first = drivers().start()
    assert marked_rules(ns) == [CONNMARK_RULE]
    assert "connmark: rule fwmark 0x80/0x80" in first.logtext()
    ok(first.call("declare mac=%s table=101" % ENI1))
    ok(first.call(SETUP1))
    for addr, table in ((POD, 101), (PRIMARY_POD, 0), ("10.0.16.10", 101)):
        ok(first.call("addpod addr=%s table=%d" % (addr, table)))
    ok(first.call("delpod addr=%s table=101" % POD))
    assert first.call("dumprules")["count"] == 3     # pods' rules only
    kill9(first)
    assert marked_rules(ns) == [CONNMARK_RULE]

    second = drivers().start()
    assert marked_rules(ns) == [CONNMARK_RULE]
    assert "connmark: rule" not in second.logtext()  # nothing to do
    ok(second.call("declare mac=%s table=101" % ENI1))
    ok(second.call("delpod addr=10.0.16.10 table=101"))
    ok(second.call("delpod addr=%s table=0" % PRIMARY_POD))
    ok(second.call(TEARDOWN1))
    assert [l for l in rule_lines(ns) if "proto %d" % PROTO in l] == \
        [CONNMARK_RULE]
    assert second.call("dumprules")["count"] == 0


def test_foreign_fwmark_rule_untouched(ns, drivers):
    """Someone else's rule for the same mark at the same priority (no
    tag): netd adds its own beside it, never counts, dumps or removes it,
    through pods, teardown and a kill -9 and restart."""
    ns.ip("rule", "add", "fwmark", "0x80/0x80", "lookup", "100", "pref",
          "512")
    first = drivers().start()
    assert rule_lines(ns).count(FOREIGN_MARK_RULE) == 1
    assert marked_rules(ns) == [CONNMARK_RULE]
    ok(first.call("declare mac=%s table=101" % ENI1))
    ok(first.call(SETUP1))
    ok(first.call("addpod addr=%s table=101" % POD))
    assert first.call("dumprules")["count"] == 2
    ok(first.call("delpod addr=%s table=101" % POD))
    ok(first.call(TEARDOWN1))
    kill9(first)
    second = drivers().start()
    ok(second.call("declare mac=%s table=101" % ENI1))
    ok(second.call(SETUP1))
    ok(second.call(TEARDOWN1))
    assert rule_lines(ns).count(FOREIGN_MARK_RULE) == 1
    assert marked_rules(ns) == [CONNMARK_RULE]


def test_connmark_setting_changed(ns, drivers):
    """routing.connmark changed between two runs: the restarted netd puts
    its rule for the new bit in and takes its rule for the old one away,
    and leaves an untagged rule for the old bit alone."""
    cfg = copy.deepcopy(CONFIG)
    cfg["routing"]["connmark"] = 0x100
    first = drivers(cfg).start()
    old = "512:\tfrom all fwmark 0x100/0x100 lookup main proto %d" % PROTO
    assert marked_rules(ns) == [old]
    first.close()
    ns.ip("rule", "add", "fwmark", "0x100/0x100", "lookup", "main", "pref",
          "512")
    drivers().start()
    assert marked_rules(ns) == [CONNMARK_RULE]
    assert "512:\tfrom all fwmark 0x100/0x100 lookup main" in rule_lines(ns)


def test_tagged_rule_with_fwmark_survives_pod_delete(ns, drivers):
    """A rule carrying netd's tag but a fwmark netd never sets on a pod's
    rule is someone else's (the design's "In the kernel"): a pod delete,
    whose kernel match takes any fwmark, must not take it in place of
    netd's own."""
    d = drivers().start()
    ns.ip("rule", "add", "to", PRIMARY_POD, "fwmark", "0x4/0x4", "lookup",
          "main", "pref", "512", "proto", str(PROTO))
    foreign = [l for l in rule_lines(ns) if "fwmark 0x4/0x4" in l]
    assert len(foreign) == 1
    ok(d.call("addpod addr=%s table=0" % PRIMARY_POD))
    r = d.call("delpod addr=%s table=0" % PRIMARY_POD)
    assert [l for l in rule_lines(ns) if "fwmark 0x4/0x4" in l] == foreign, r
    # refused as a failure, nothing changed: netd's rule is still there
    assert r["status"] == "failed" and "in the way" in r["message"], r
    assert "512:\tfrom all to %s lookup main proto %d" % (PRIMARY_POD, PROTO) \
        in rule_lines(ns)
    # once it is gone, the delete goes through
    ns.ip("rule", "del", "to", PRIMARY_POD, "fwmark", "0x4/0x4", "lookup",
          "main", "pref", "512", "proto", str(PROTO))
    ok(d.call("delpod addr=%s table=0" % PRIMARY_POD))
    assert not [l for l in rule_lines(ns) if PRIMARY_POD in l]
