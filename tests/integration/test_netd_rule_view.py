"""enid-netd's rule view (issue 35): netd keeps the rules at its two
priorities from one dump and the kernel's rule notifications, instead of
a dump per request.  These tests change the rules behind netd's back
between its requests (ip rule, and raw netlink for the identical
duplicates ip(8) refuses to make) and check that netd's decisions, the
changes it reports and what the kernel holds after them, follow the
kernel and not what netd did last; and that when the notifications
overrun netd's socket, netd dumps again and still decides right.
Needs root; a few seconds.

    ENID_BUILDDIR=$PWD/build /usr/bin/python3 -m pytest -q \\
        tests/integration/test_netd_rule_view.py
"""
import os
import subprocess
import sys
import threading

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netd_helpers import NETD, PROTO, Driver, eni_node, run  # noqa
from netd_helpers import NEEDS_NETD  # noqa

ENI1 = "02:00:00:00:00:11"
VPC6 = "2600:1f14:abc:100::/56"
POD4_A, POD4_B, POD4_C = "10.0.16.9", "10.0.16.10", "10.0.16.11"
POD6_A = "2600:1f14:abc:110::a"
DUAL_A = "addr=%s addr6=%s table=101" % (POD4_A, POD6_A)
CHURN = 3000            # foreign rules added and removed behind netd's back

pytestmark = NEEDS_NETD

# An RTM_NEWRULE without NLM_F_EXCL, which ip(8) always sets: the kernel
# then adds a rule identical to one it holds.  argv: destination (IPv4),
# priority, table, protocol.
RAW_ADD = r"""
import socket, struct, sys
dst, prio, table, proto = sys.argv[1], *map(int, sys.argv[2:5])
def attr(t, v):
    a = struct.pack("HH", 4 + len(v), t) + v
    return a + b"\0" * (-len(a) % 4)
frh = struct.pack("BBBBBBBBI", socket.AF_INET, 32, 0, 0, 254, 0, 0, 1, 0)
body = frh + attr(1, socket.inet_aton(dst)) + \
    attr(6, struct.pack("I", prio)) + attr(15, struct.pack("I", table)) + \
    attr(21, struct.pack("B", proto))
msg = struct.pack("IHHII", 16 + len(body), 32, 0x1 | 0x4 | 0x400, 1, 0)
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
s.settimeout(5)
s.send(msg + body)
err = struct.unpack("i", s.recv(4096)[16:20])[0]
sys.exit(1 if err else 0)
"""


@pytest.fixture
def node():
    with eni_node(ENI1) as ns:
        yield ns


@pytest.fixture
def netd(node, tmp_path):
    with Driver(node, str(tmp_path)) as d:
        yield d.start(cidrs=("10.0.0.0/16", VPC6)).declare(ENI1)


def rules(node, family, addr):
    """`ip rule` lines of family naming addr (as to or from)."""
    return [l.strip() for l in node.ip(family, "rule").splitlines()
            if " %s " % addr in l + " "]


def raw_add(node, dst, prio=512, table=254, proto=PROTO):
    run("ip", "netns", "exec", node.name, sys.executable, "-c", RAW_ADD,
        dst, str(prio), str(table), str(proto))


def ok(netd, line, changed):
    r = netd.call(line)
    assert r["status"] == "ok" and r["changed"] == changed, (line, r)


def test_view_follows_changes_behind_netds_back(node, netd):
    """Rules removed and added by someone else between netd's requests:
    netd puts back exactly the missing ones, takes a pod rule it never
    made, and refuses a delete while a tagged rule of another shape is
    in the way, as a dump per request would have."""
    ok(netd, "addpod " + DUAL_A, 4)
    node.ip("-6", "rule", "del", "to", POD6_A, "lookup", "main", "pref",
            "512", "proto", str(PROTO))
    node.ip("-4", "rule", "del", "from", POD4_A, "lookup", "101", "pref",
            "1536", "proto", str(PROTO))
    ok(netd, "addpod " + DUAL_A, 2)
    assert len(rules(node, "-4", POD4_A)) == 2
    assert len(rules(node, "-6", POD6_A)) == 2
    ok(netd, "addpod " + DUAL_A, 0)

    # A rule of netd's shape it never made is a pod's rule all the same.
    node.ip("-4", "rule", "add", "to", POD4_B, "lookup", "main", "pref",
            "512", "proto", str(PROTO))
    ok(netd, "delpod addr=%s table=0" % POD4_B, 1)
    assert rules(node, "-4", POD4_B) == []

    # A tagged rule with another selector: a delete could take it.
    node.ip("-4", "rule", "add", "to", POD4_A, "iif", "lo", "lookup",
            "main", "pref", "512", "proto", str(PROTO))
    r = netd.call("delpod " + DUAL_A)
    assert r["status"] == "failed" and "in the way" in r["message"], r
    assert len(rules(node, "-4", POD4_A)) == 3
    node.ip("-4", "rule", "del", "to", POD4_A, "iif", "lo", "lookup",
            "main", "pref", "512", "proto", str(PROTO))
    ok(netd, "delpod " + DUAL_A, 4)
    assert rules(node, "-4", POD4_A) == [] and rules(node, "-6", POD6_A) == []


def test_view_counts_rules_that_read_alike(node, netd):
    """Identical rules (the kernel makes them when not told NLM_F_EXCL)
    and rules that differ only where netd reads "another selector" are
    kept once each: one removed leaves the other in netd's view."""
    ok(netd, "addpod addr=%s table=0" % POD4_A, 1)   # the view is kept
    raw_add(node, POD4_B)
    raw_add(node, POD4_B)
    assert len(rules(node, "-4", POD4_B)) == 2
    ok(netd, "addpod addr=%s table=0" % POD4_A, 0)   # both read
    node.ip("-4", "rule", "del", "to", POD4_B, "lookup", "main", "pref",
            "512", "proto", str(PROTO))
    assert len(rules(node, "-4", POD4_B)) == 1
    ok(netd, "delpod addr=%s table=0" % POD4_B, 1)
    assert rules(node, "-4", POD4_B) == []
    raw_add(node, POD4_B)
    raw_add(node, POD4_B)
    ok(netd, "delpod addr=%s table=0" % POD4_B, 2)
    assert rules(node, "-4", POD4_B) == []

    # Alike to netd, not to the kernel: two tagged rules in the way.
    for dev in ("lo", "eth0"):
        node.ip("-4", "rule", "add", "to", POD4_C, "iif", dev, "lookup",
                "main", "pref", "512", "proto", str(PROTO))
    ok(netd, "addpod addr=%s table=0" % POD4_C, 1)
    for dev in ("lo", "eth0", None):
        r = netd.call("delpod addr=%s table=0" % POD4_C)
        if dev is None:
            assert r["status"] == "ok" and r["changed"] == 1, r
            break
        assert r["status"] == "failed" and "in the way" in r["message"], r
        node.ip("-4", "rule", "del", "to", POD4_C, "iif", dev, "lookup",
                "main", "pref", "512", "proto", str(PROTO))
    assert rules(node, "-4", POD4_C) == []


def churn_batch(path, n):
    """n foreign rules (no tag) at netd's priority added and removed,
    one at a time: 2n notifications, no net change."""
    with open(path, "w") as f:
        for i in range(n):
            dst = "10.0.%d.%d" % (200 + i // 250, 1 + i % 250)
            f.write("rule add to %s lookup main pref 512\n" % dst)
            f.write("rule del to %s lookup main pref 512\n" % dst)


def test_lost_notifications_dump_again(node, netd, tmp_path):
    """Thousands of rule changes behind netd's back overrun its
    notification socket: netd says so, dumps again, and its decisions
    still follow the kernel, also for changes made after the loss."""
    ok(netd, "addpod " + DUAL_A, 4)
    batch = str(tmp_path / "churn")
    churn_batch(batch, CHURN)
    run("ip", "-n", node.name, "-batch", batch, timeout=120)
    node.ip("-6", "rule", "del", "from", POD6_A, "lookup", "101", "pref",
            "1536", "proto", str(PROTO))
    node.ip("-4", "rule", "add", "to", POD4_B, "lookup", "main", "pref",
            "512", "proto", str(PROTO))
    ok(netd, "addpod " + DUAL_A, 1)
    assert "dropped rule notifications" in netd.logtext()
    ok(netd, "delpod addr=%s table=0" % POD4_B, 1)
    ok(netd, "addpod " + DUAL_A, 0)
    assert len(rules(node, "-6", POD6_A)) == 2


def test_requests_during_a_churn(node, netd, tmp_path):
    """netd answering requests while someone churns rules beside it:
    every answer right, the view right after (overruns or not)."""
    batch = str(tmp_path / "churn")
    churn_batch(batch, CHURN)
    churn = threading.Thread(target=lambda: subprocess.run(
        ["ip", "-n", node.name, "-batch", batch], timeout=120,
        capture_output=True))
    churn.start()
    try:
        for _ in range(100):
            ok(netd, "addpod addr=%s table=101" % POD4_C, 2)
            ok(netd, "delpod addr=%s table=101" % POD4_C, 2)
            if not churn.is_alive():
                break
    finally:
        churn.join(timeout=130)
    assert not churn.is_alive()
    node.ip("-4", "rule", "add", "to", POD4_B, "lookup", "main", "pref",
            "512", "proto", str(PROTO))
    ok(netd, "delpod addr=%s table=0" % POD4_B, 1)
    ok(netd, "addpod addr=%s table=101" % POD4_C, 2)
    ok(netd, "addpod addr=%s table=101" % POD4_C, 0)
    assert not [l for l in node.ip("-4", "rule").splitlines()
                if "to 10.0.2" in l]


def sanitizer_build():
    """The rule-failure hook is compiled into sanitizer builds alone."""
    return b"__asan_init" in open(NETD, "rb").read()


@pytest.fixture
def failing_netd(node, tmp_path, monkeypatch):
    """netd with ENID_TEST_NETD_RULE_FAIL=2: the second rule change of
    every run sent at once is refused by the kernel."""
    if not sanitizer_build():
        pytest.skip("the test hook is in sanitizer builds only")
    monkeypatch.setenv("ENID_TEST_NETD_RULE_FAIL", "2")
    with Driver(node, str(tmp_path)) as d:
        yield d.start(cidrs=("10.0.0.0/16", VPC6)).declare(ENI1)


def test_a_failed_change_undoes_the_later_ones(node, failing_netd):
    """A dual-stack pod's 4 rule adds go at once; the kernel refuses the
    second and makes the other three.  netd answers with the second's
    failure and undoes the third and fourth, so the kernel holds what
    stopping at the failure leaves: the first alone."""
    r = failing_netd.call("addpod " + DUAL_A)
    assert r["status"] == "failed", r
    assert "2 undone, 0 left made" in r["message"], r
    assert rules(node, "-4", POD4_A) == [
        "512:\tfrom all to %s lookup main proto %d" % (POD4_A, PROTO)]
    assert rules(node, "-6", POD6_A) == []


def test_an_undo_that_could_take_another_rule_is_left(node, failing_netd):
    """The undo of an add is a delete, which the kernel matches on what it
    names: with a tagged rule of another selector for the same address,
    it could take that one, so the add is left made and the answer says
    so."""
    node.ip("-6", "rule", "add", "to", POD6_A, "iif", "lo", "lookup",
            "main", "pref", "512", "proto", str(PROTO))
    r = failing_netd.call("addpod " + DUAL_A)
    assert r["status"] == "failed", r
    assert "1 undone, 1 left made" in r["message"], r
    got = rules(node, "-6", POD6_A)
    assert "512:\tfrom all to %s iif lo lookup main proto %d" % (
        POD6_A, PROTO) in got, got
    assert "512:\tfrom all to %s lookup main proto %d" % (POD6_A, PROTO) \
        in got, got
    assert len(got) == 2, got


def test_a_failed_delete_puts_the_later_ones_back(node, netd, tmp_path,
                                                  monkeypatch):
    """The deletes of a dual-stack pod's 4 rules go at once; the kernel
    refuses the second: the third and fourth are added back, and the
    pod keeps all but the first."""
    if not sanitizer_build():
        pytest.skip("the test hook is in sanitizer builds only")
    ok(netd, "addpod " + DUAL_A, 4)
    netd.close()
    monkeypatch.setenv("ENID_TEST_NETD_RULE_FAIL", "2")
    (tmp_path / "again").mkdir()
    with Driver(node, str(tmp_path / "again")) as d:
        d.start(cidrs=("10.0.0.0/16", VPC6)).declare(ENI1)
        r = d.call("delpod " + DUAL_A)
        assert r["status"] == "failed" and "2 undone" in r["message"], r
        assert len(rules(node, "-4", POD4_A)) == 1
        assert len(rules(node, "-6", POD6_A)) == 2


def test_cap_counts_follow_the_kernel(node, tmp_path):
    """The cap counts the pods of each family from the view's index,
    kept as rules come and go: "to POD" rules added and removed behind
    netd's back count as the kernel holds them, each family apart, and
    rules that are not netd's (another selector) count for nothing."""
    cfg = {"user": "enid", "pool": {"max_pods": 2},
           "routing": {"table_base": 100, "rule_priority_to": 512,
                       "rule_priority_from": 1536}}
    with Driver(node, str(tmp_path), config=cfg) as d:
        d.start(cidrs=("10.0.0.0/16", VPC6)).declare(ENI1)
        pod6_b, pod6_c = "2600:1f14:abc:110::b", "2600:1f14:abc:110::c"
        dual_c = "addr=%s addr6=%s table=101" % (POD4_C, pod6_c)
        ok(d, "addpod " + DUAL_A, 4)
        # A second IPv6 pod behind netd's back: IPv6 is full, IPv4 not.
        node.ip("-6", "rule", "add", "to", pod6_b, "lookup", "main",
                "pref", "512", "proto", str(PROTO))
        node.ip("-4", "rule", "add", "to", "10.0.16.30", "iif", "lo",
                "lookup", "main", "pref", "512", "proto", str(PROTO))
        r = d.call("addpod " + dual_c)
        assert r["status"] == "refused" and "pod limit" in r["message"] \
            and "IPv6: 2 pods" in r["message"], r
        ok(d, "addpod addr=%s table=0" % POD4_B, 1)
        # Now IPv4 is full too; the IPv6 rule taken away leaves IPv4's.
        node.ip("-6", "rule", "del", "to", pod6_b, "lookup", "main",
                "pref", "512", "proto", str(PROTO))
        r = d.call("addpod " + dual_c)
        assert r["status"] == "refused" and "IPv4: 2 pods" in r["message"], r
        # A pod's own rules there already: a repeated add passes.
        ok(d, "addpod " + DUAL_A, 0)
        node.ip("-4", "rule", "del", "to", POD4_B, "lookup", "main",
                "pref", "512", "proto", str(PROTO))
        ok(d, "addpod " + dual_c, 4)
        assert len(rules(node, "-6", pod6_c)) == 2


def test_index_through_tombstones_and_rehash(node, tmp_path):
    """Hundreds of pods added and deleted through netd leave the index's
    slots dead and make it grow and rehash: the pods' rules are still
    found by address (a repeated add changes nothing, a delete takes
    both), and the cap still counts what the kernel holds."""
    cfg = {"user": "enid", "pool": {"max_pods": 3},
           "routing": {"table_base": 100, "rule_priority_to": 512,
                       "rule_priority_from": 1536}}
    with Driver(node, str(tmp_path), config=cfg) as d:
        d.start(cidrs=("10.0.0.0/16", VPC6)).declare(ENI1)
        keep = ["addr=10.0.17.%d addr6=2600:1f14:abc:111::%x table=101" %
                (i, i) for i in (1, 2)]
        for k in keep:
            ok(d, "addpod " + k, 4)
        for i in range(300):
            pod = "addr=10.0.18.%d addr6=2600:1f14:abc:112::%x table=101" \
                % (1 + i % 250, 1 + i)
            ok(d, "addpod " + pod, 4)
            ok(d, "addpod " + pod, 0)
            ok(d, "delpod " + pod, 4)
        for k in keep:
            ok(d, "addpod " + k, 0)
        ok(d, "addpod addr=10.0.19.1 addr6=2600:1f14:abc:113::1 table=101", 4)
        r = d.call("addpod addr=10.0.19.2 addr6=2600:1f14:abc:113::2 "
                   "table=101")
        assert r["status"] == "refused" and "pod limit" in r["message"], r
        # Behind netd's back, one pod's IPv4 and IPv6 "to" rules go.
        node.ip("-4", "rule", "del", "to", "10.0.17.1", "lookup", "main",
                "pref", "512", "proto", str(PROTO))
        node.ip("-6", "rule", "del", "to", "2600:1f14:abc:111::1", "lookup",
                "main", "pref", "512", "proto", str(PROTO))
        ok(d, "addpod addr=10.0.19.2 addr6=2600:1f14:abc:113::2 table=101",
           4)
        ok(d, "delpod " + keep[1], 4)
        assert rules(node, "-4", "10.0.17.2") == []
        assert rules(node, "-6", "2600:1f14:abc:111::2") == []
