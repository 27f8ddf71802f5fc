"""enid-netd's nftables table (ip enid) against a real kernel: each test in
a fresh network namespace, netd_drive playing the broker, nft(8) reading
what netd wrote (netd itself never runs nft).  Needs root.

    ENID_BUILDDIR=$PWD/build /usr/bin/python3 -m pytest -q \
        tests/integration/test_netd_snat.py
"""
import json
import os
import secrets
import signal
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netd_helpers import (CONFIG, PRIMARY_IP, VPC,  # noqa
                          Driver, Netns, run)
from netd_helpers import NEEDS_NETD  # noqa

VPC2 = "10.1.0.0/20"
EXCLUDE = "192.168.0.0/16"

pytestmark = NEEDS_NETD


def config(enabled=True, exclude=(EXCLUDE,), random_fully=True):
    c = json.loads(json.dumps(CONFIG))
    c["snat"] = {"enabled": enabled, "random_fully": random_fully,
                 "exclude": list(exclude)}
    return c


@pytest.fixture
def ns():
    with Netns() as n:
        yield n


@pytest.fixture
def make_netd(ns, tmp_path):
    made = []

    def make(cfg=None, start=True):
        d = Driver(ns, str(tmp_path / str(len(made))), config=cfg or config())
        made.append(d)
        return d.start(cidrs=(VPC, VPC2)) if start else d

    for i in range(4):
        os.makedirs(str(tmp_path / str(i)), exist_ok=True)
    yield make
    for d in made:
        d.close()


def nft(ns, *args, check=True, stdin=None, timeout=10):
    argv = ["ip", "netns", "exec", ns.name, "nft"] + list(args)
    if stdin is None:
        return run(*argv, check=check, timeout=timeout).stdout
    import subprocess
    return subprocess.run(argv, input=stdin, check=check, timeout=timeout,
                          capture_output=True, text=True).stdout


def nft_raw(ns, kind, table, chain):
    """Add a rule nft(8) cannot write (nft_raw.py): the kernel's error,
    "0" if added."""
    return run("ip", "netns", "exec", ns.name, sys.executable,
               os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            "nft_raw.py"), kind, table, chain).stdout.strip()


def nft_load(ns, text):
    nft(ns, "-f", "-", stdin=text)


def table_json(ns, family, name):
    """(chains, rules) of a table as nft -j lists them, normalised: no
    handles, no table name, counters zeroed."""
    out = json.loads(nft(ns, "-j", "list", "table", family, name))
    chains, rules = [], []
    for obj in out["nftables"]:
        if "chain" in obj:
            c = obj["chain"]
            chains.append((c["name"], c.get("type"), c.get("hook"),
                           c.get("prio"), c.get("policy")))
        elif "rule" in obj:
            exprs = json.loads(json.dumps(obj["rule"]["expr"]))
            for e in exprs:
                if "counter" in e:
                    e["counter"] = {"packets": 0, "bytes": 0}
            rules.append((obj["rule"]["chain"], json.dumps(exprs,
                                                           sort_keys=True)))
    return chains, rules


def tables(ns):
    """Every table but ip6 enid, netd's IPv6 source check, which it
    writes from the policy on whatever SNAT does (test_netd_ipv6.py)."""
    out = json.loads(nft(ns, "-j", "list", "tables"))
    return sorted((o["table"]["family"], o["table"]["name"])
                  for o in out["nftables"] if "table" in o and
                  (o["table"]["family"], o["table"]["name"]) !=
                  ("ip6", "enid"))


def expected_text(name, snat=True, exclude=(EXCLUDE,), random_fully=True):
    """The table as the design specifies it, in nft's own syntax."""
    mark = """
table ip %s {
  chain mark-in { type filter hook prerouting priority -150; policy accept;
    iif "eth0" ct state new fib daddr type local ct mark set ct mark | 0x80 counter
  }
  chain mark-out { type filter hook prerouting priority -90; policy accept;
    iif != "eth0" ct direction reply ct mark & 0x80 == 0x80 meta mark set meta mark | 0x80 counter
  }
""" % name
    if not snat:
        return mark + "}\n"
    fr = " fully-random" if random_fully else ""
    rules = ["ip saddr %s return" % PRIMARY_IP]
    rules += ["ip daddr %s return" % c for c in (VPC, VPC2) + tuple(exclude)]
    rules += ['oif "eth0" ip saddr %s counter snat to %s%s'
              % (c, PRIMARY_IP, fr) for c in (VPC, VPC2)]
    return mark + """  chain snat-out { type nat hook postrouting priority 100; policy accept;
    %s
  }
}
""" % "\n    ".join(rules)


def expected(ns, **kw):
    """Load the specified table under another name and list it: what
    netd's table must list as."""
    name = "expect" + secrets.token_hex(3)
    nft_load(ns, expected_text(name, **kw))
    try:
        return table_json(ns, "ip", name)
    finally:
        nft(ns, "delete", "table", "ip", name)


def ok(r):
    assert r.get("status") == "ok", r
    return r


def refused(r):
    assert r.get("type") == "RESULT" and r["status"] == "refused", r
    return r


def state(d):
    s = d.call("dumpsnat")
    assert s["type"] == "SNAT_STATE", s
    return s


def test_table_as_specified_and_second_sync_changes_nothing(ns, make_netd):
    d = make_netd()
    assert tables(ns) == []
    assert ok(d.call("snat to=%s" % PRIMARY_IP))["changed"] == 1
    assert table_json(ns, "ip", "enid") == expected(ns)
    listed = nft(ns, "list", "table", "ip", "enid")
    assert ok(d.call("snat to=%s" % PRIMARY_IP))["changed"] == 0
    assert nft(ns, "list", "table", "ip", "enid") == listed
    s = state(d)
    assert s["in_place"] == 1 and s["enabled"] == 1
    assert s["random_fully"] == 1 and s["to"] == PRIMARY_IP
    assert s["replaced"] == 1 and s["refused"] == 0
    assert s["primary_link"] == "eth0" and s["connmark"] == 0x80
    assert s["untranslated"] == [VPC, VPC2, EXCLUDE]
    assert "table ip enid absent; writing it" in d.logtext()


def test_not_random_fully(ns, make_netd):
    d = make_netd(config(random_fully=False))
    ok(d.call("snat to=%s" % PRIMARY_IP))
    assert table_json(ns, "ip", "enid") == expected(ns, random_fully=False)
    assert state(d)["random_fully"] == 0


def test_snat_off_has_mark_chains_only(ns, make_netd):
    d = make_netd(config(enabled=False))
    assert ok(d.call("snat to=0.0.0.0"))["changed"] == 1
    assert table_json(ns, "ip", "enid") == expected(ns, snat=False)
    s = state(d)
    assert s["enabled"] == 0 and s["to"] == "0.0.0.0" and s["in_place"] == 1
    # the broker cannot turn it on
    before = nft(ns, "list", "table", "ip", "enid")
    refused(d.call("snat to=%s" % PRIMARY_IP))
    assert nft(ns, "list", "table", "ip", "enid") == before
    assert state(d)["refused"] == 1


def test_changed_table_is_repaired(ns, make_netd):
    d = make_netd()
    ok(d.call("snat to=%s" % PRIMARY_IP))
    want = table_json(ns, "ip", "enid")
    # someone flushes a chain, then someone moves mark-out before DNAT
    nft(ns, "flush", "chain", "ip", "enid", "snat-out")
    r = ok(d.call("snat to=%s" % PRIMARY_IP))
    assert r["changed"] == 1 and table_json(ns, "ip", "enid") == want
    assert "differs (chain snat-out: rule 1 missing" in d.logtext()
    assert state(d)["replaced"] == 2


def test_foreign_enid_table_replaced_whole(ns, make_netd):
    nft_load(ns, """
table ip enid {
  set blocked { type ipv4_addr; elements = { 10.9.9.9 } }
  chain mark-in { type filter hook prerouting priority -150; policy accept;
    ip saddr @blocked drop
  }
  chain extra { counter; }
}
""")
    d = make_netd()
    assert ok(d.call("snat to=%s" % PRIMARY_IP))["changed"] == 1
    assert table_json(ns, "ip", "enid") == expected(ns)
    assert "blocked" not in nft(ns, "list", "ruleset")
    log = d.logtext()
    assert "table ip enid holds what netd does not write" in log
    assert "replacing it whole" in log
    assert state(d)["replaced"] == 1


def test_huge_foreign_enid_table_replaced_at_once(ns, make_netd):
    """Table ip enid with half a million rules (someone with
    CAP_NET_ADMIN made it): netd reads it only up to its first foreign
    rule and replaces it in one sync, rather than spending its 5 s bound
    on a dump the kernel serves in quadratic time and then failing every
    sync with the dump still busy."""
    nft(ns, "-f", "-", timeout=120, stdin="table ip enid {\n"
        " chain mark-in { type filter hook prerouting priority -150;"
        " policy accept;\n" + " counter\n" * 500000 + " }\n}\n")
    d = make_netd()
    r = ok(d.call("snat to=%s" % PRIMARY_IP, timeout=30))
    assert r["changed"] == 1
    assert "replacing it whole" in d.logtext()
    # the rest of the cut-off dump is read past: the next requests work
    assert ok(d.call("snat to=%s" % PRIMARY_IP))["changed"] == 0
    s = state(d)
    assert s["in_place"] == 1 and s["replaced"] == 1, s
    assert table_json(ns, "ip", "enid") == expected(ns)


def test_foreign_chains_cut_short_then_next_request_prompt(ns, make_netd):
    """Chains past the first foreign one are not read; the rest of that
    dump is read past before the next request without waiting on it."""
    nft_load(ns, "table ip enid {" + "".join(
        " chain x%d { counter; };" % i for i in range(4)) + " }")
    d = make_netd()
    assert ok(d.call("snat to=%s" % PRIMARY_IP))["changed"] == 1
    t0 = time.monotonic()
    assert ok(d.call("snat to=%s" % PRIMARY_IP))["changed"] == 0
    s = state(d)
    assert time.monotonic() - t0 < 1.5, "a drain waited on a dump's end"
    assert s["in_place"] == 1, s


def test_foreign_table_reports_nothing_of_its_own(ns, make_netd):
    """SNAT state of a table holding what netd does not write names that
    and reports no target or counters from it: they are not netd's."""
    d = make_netd()
    ok(d.call("snat to=%s" % PRIMARY_IP))
    nft(ns, "add", "set", "ip", "enid", "s", "{", "type", "ipv4_addr", ";",
        "}")
    s = state(d)
    assert s["in_place"] == 0 and s["to"] == "0.0.0.0", s
    assert s["translated"] == 0 and s["marked"] == 0, s
    assert "holds what netd does not write" in s["message"], s
    assert "the next sync replaces it" in s["message"], s
    assert ok(d.call("snat to=%s" % PRIMARY_IP))["changed"] == 1
    s = state(d)
    assert s["in_place"] == 1 and s["to"] == PRIMARY_IP, s


@pytest.mark.parametrize("foreign", [
    # a set only: no rule or chain shows it, the table's object count does
    "table ip enid { set s { type ipv4_addr; }; }",
    # a drop policy
    "table ip enid { chain mark-in { type filter hook prerouting "
    "priority -150; policy drop; }; }",
    # a dormant table
    "table ip enid { flags dormant; }",
])
def test_foreign_content_kinds(ns, make_netd, foreign):
    nft_load(ns, foreign)
    d = make_netd()
    assert ok(d.call("snat to=%s" % PRIMARY_IP))["changed"] == 1
    assert table_json(ns, "ip", "enid") == expected(ns)
    assert "replacing it whole" in d.logtext()
    assert "flags dormant" not in nft(ns, "list", "table", "ip", "enid")


OTHERS = """
table ip filter {
  chain INPUT { type filter hook input priority 0; policy accept;
    ip saddr 10.0.0.0/8 counter accept
  }
  chain KUBE-SERVICES { ip daddr 10.96.0.10 tcp dport 53 counter; }
  chain POSTROUTING { type nat hook postrouting priority 100;
    oif "eth0" masquerade
  }
}
table inet other {
  chain c { type filter hook forward priority 0; ct state established accept; }
}
table inet enid {
  chain c { type filter hook forward priority 0; counter; }
}
"""


def others(ns):
    return {t: nft(ns, "list", "table", *t)
            for t in (("ip", "filter"), ("inet", "other"), ("inet", "enid"))}


def test_other_tables_untouched(ns, make_netd):
    nft_load(ns, OTHERS)
    before = others(ns)
    d = make_netd()
    assert others(ns) == before
    ok(d.call("snat to=%s" % PRIMARY_IP))
    nft(ns, "flush", "chain", "ip", "enid", "mark-in")
    ok(d.call("snat to=%s" % PRIMARY_IP))
    ok(d.call("snat to=%s" % PRIMARY_IP))
    refused(d.call("snat to=10.0.0.99"))
    assert others(ns) == before
    d.close()
    assert others(ns) == before
    assert tables(ns) == [("inet", "enid"), ("inet", "other"),
                          ("ip", "enid"), ("ip", "filter")]


def test_kill9_then_new_netd_converges(ns, make_netd):
    d = make_netd()
    ok(d.call("snat to=%s" % PRIMARY_IP))
    want = table_json(ns, "ip", "enid")
    os.kill(d.pid, signal.SIGKILL)
    d.event("exit")
    # the table outlives netd; a new one finds it in place
    assert table_json(ns, "ip", "enid") == want
    d2 = make_netd()
    assert ok(d2.call("snat to=%s" % PRIMARY_IP))["changed"] == 0
    assert state(d2)["replaced"] == 0 and state(d2)["in_place"] == 1
    # killed again with its table half gone: repaired, nothing doubled
    nft(ns, "delete", "chain", "ip", "enid", "mark-out")
    os.kill(d2.pid, signal.SIGKILL)
    d2.event("exit")
    d3 = make_netd()
    assert ok(d3.call("snat to=%s" % PRIMARY_IP))["changed"] == 1
    assert table_json(ns, "ip", "enid") == want
    assert tables(ns) == [("ip", "enid")]


def test_missing_connmark_rule_is_not_in_place(ns, make_netd):
    """The marks are for netd's rule "fwmark M/M lookup main": without it
    NodePort replies of pods on secondary ENIs leave by their ENI, so a
    state that says "in place" must mean the rule is there too, and the
    message names what is missing until the next sync puts it back."""
    d = make_netd()
    ok(d.call("snat to=%s" % PRIMARY_IP))
    assert state(d)["in_place"] == 1
    ns.ip("rule", "del", "fwmark", "0x80/0x80", "lookup", "main", "pref",
          "512")
    s = state(d)
    assert s["in_place"] == 0, s
    assert "connection-mark rule" in s["message"] and \
        "0x80/0x80" in s["message"], s
    assert s["to"] == PRIMARY_IP and s["marked"] == 0, s
    r = ok(d.call("snat to=%s" % PRIMARY_IP))
    assert r["changed"] == 1, r                 # the rule, not the table
    s = state(d)
    assert s["in_place"] == 1 and "put back" in s["message"], s


def test_hostile_targets_refused(ns, make_netd):
    ns.ip("link", "add", "other0", "type", "veth", "peer", "name", "other0p")
    ns.ip("addr", "add", "10.0.50.5/32", "dev", "other0")
    d = make_netd()
    ok(d.call("snat to=%s" % PRIMARY_IP))
    before = nft(ns, "list", "ruleset")
    hostile = ["0.0.0.0",           # SNAT on: a target is required
               "10.0.0.11",         # in the VPC, not the node's
               "10.0.50.5",         # the node's, but not the primary link's
               "203.0.113.7",       # outside the VPC
               "127.0.0.1", "224.0.0.1", "255.255.255.255"]
    for i, to in enumerate(hostile, 1):
        r = refused(d.call("snat to=%s" % to))
        assert state(d)["refused"] == i, to
        assert nft(ns, "list", "ruleset") == before, to
    assert "not an address of the node's primary link" in r["message"] or \
        "unicast" in r["message"]
    log = d.logtext()
    assert log.count("security: broker: NETD_SNAT") == len(hostile)
    s = state(d)
    assert s["to"] == PRIMARY_IP and s["in_place"] == 1


def test_hostile_target_with_snat_off(ns, make_netd):
    d = make_netd(config(enabled=False))
    r = refused(d.call("snat to=%s" % PRIMARY_IP))
    assert "snat.enabled" in r["message"]
    assert tables(ns) == []
    assert state(d)["refused"] == 1


def test_exclusion_overlapping_vpc_refused(ns, make_netd):
    d = make_netd(config(exclude=("10.1.8.0/21",)))
    r = refused(d.call("snat to=%s" % PRIMARY_IP))
    assert "overlaps" in r["message"] and "10.1.8.0/21" in r["message"]
    assert tables(ns) == []
    assert state(d)["refused"] == 1


def test_snat_before_policy_is_fatal(ns, make_netd):
    d = make_netd(start=False)
    assert d.call("hello")["type"] == "HELLO_ACK"
    d.send("snat to=%s" % PRIMARY_IP)
    ev = d.event("exit")
    assert ev["status"] != 0
    assert "request before the policy was accepted" in d.logtext()
    assert tables(ns) == []


@pytest.fixture
def outside(ns):
    """eth0's peer moved to a namespace of its own that plays the VPC
    router (10.0.0.1, the default gateway) and holds an 'outside'
    address, 203.0.113.5, that answers only on-link sources."""
    name = "enid-t-out-" + secrets.token_hex(3)
    run("ip", "netns", "add", name)
    try:
        ns.ip("link", "set", "eth0p", "netns", name)
        for cmd in (("link", "set", "lo", "up"),
                    ("addr", "add", "203.0.113.5/32", "dev", "lo"),
                    ("link", "set", "eth0p", "up"),
                    ("addr", "add", "10.0.0.1/20", "dev", "eth0p")):
            run("ip", "-n", name, *cmd)
        ns.ip("route", "replace", "default", "via", "10.0.0.1", "dev", "eth0")
        yield name
    finally:
        run("ip", "netns", "del", name, check=False)


def ping(netns, addr):
    return run("ip", "netns", "exec", netns, "ping", "-c", "1", "-W", "2",
               addr, check=False, timeout=10).returncode == 0


def test_counters_translated_and_marked(ns, make_netd, outside):
    """A pod (10.0.40.7, beyond the outside host's on-link /20) reaches
    203.0.113.5 only translated to the node's address; a connection that
    arrives on eth0 for the node is marked."""
    pod = "enid-t-pod-" + secrets.token_hex(3)
    run("ip", "netns", "add", pod)
    try:
        ns.sysctl("net.ipv4.ip_forward", "1")
        ns.ip("link", "add", "podh", "type", "veth", "peer", "name", "podc")
        ns.ip("link", "set", "podc", "netns", pod)
        ns.ip("link", "set", "podh", "up")
        ns.ip("route", "add", "10.0.40.7/32", "dev", "podh")
        for cmd in (("link", "set", "lo", "up"),
                    ("addr", "add", "10.0.40.7/32", "dev", "podc"),
                    ("link", "set", "podc", "up"),
                    ("route", "add", "169.254.1.1", "dev", "podc"),
                    ("route", "add", "default", "via", "169.254.1.1", "dev",
                     "podc", "onlink")):
            run("ip", "-n", pod, *cmd)
        ns.sysctl("net.ipv4.conf.podh.proxy_arp", "1")
        # without the table, the outside host cannot answer the pod
        assert not ping(pod, "203.0.113.5")
        d = make_netd()
        ok(d.call("snat to=%s" % PRIMARY_IP))
        s = state(d)
        assert s["translated"] == 0 and s["marked"] == 0
        assert ping(pod, "203.0.113.5")
        s = state(d)
        assert s["translated"] == 1, s
        # the node's own traffic is not counted
        assert ping(ns.name, "203.0.113.5")
        assert state(d)["translated"] == 1
        # arriving on the primary link for the node: marked
        assert ping(outside, PRIMARY_IP)
        s = state(d)
        assert s["marked"] == 1 and s["in_place"] == 1, s
    finally:
        run("ip", "netns", "del", pod, check=False)


def test_enid_table_libnftnl_cannot_parse_is_replaced(ns, make_netd):
    """A rule in table ip enid with an expression the kernel has and
    libnftnl does not (inner, kernel 6.2; libnftnl 1.2.5) is foreign: the
    table is replaced, not left in place with every sync failing."""
    nft_load(ns, "table ip enid { chain mark-in { type filter hook "
             "prerouting priority -150; policy accept; }; }")
    rc = nft_raw(ns, "inner", "enid", "mark-in")
    if rc != "0":
        pytest.skip("no inner expression in this kernel (%s)" % rc)
    d = make_netd()
    assert ok(d.call("snat to=%s" % PRIMARY_IP))["changed"] == 1
    assert table_json(ns, "ip", "enid") == expected(ns)
    assert "replacing it whole" in d.logtext()
    assert state(d)["in_place"] == 1


def test_state_says_what_differs(ns, make_netd):
    """A table not in place says what differs, not the last sync's "table
    written": the table deleted, a chain of someone else's, the target
    changed, the connection-mark rule gone; nothing once a sync puts it
    right."""
    d = make_netd()
    s = state(d)
    assert s["in_place"] == 0 and s["differs"] == "no SNAT request yet", s
    ok(d.call("snat to=%s" % PRIMARY_IP))
    s = state(d)
    assert s["in_place"] == 1 and s["differs"] == "", s

    nft(ns, "delete", "table", "ip", "enid")
    s = state(d)
    assert s["in_place"] == 0, s
    assert s["differs"] == "table ip enid absent", s
    assert s["message"] == "table written", s   # the sync's, as it was
    ok(d.call("snat to=%s" % PRIMARY_IP))
    assert state(d)["differs"] == ""

    nft(ns, "add", "chain", "ip", "enid", "intruder")
    s = state(d)
    assert s["in_place"] == 0, s
    assert s["differs"] == "chain intruder is a regular chain", s
    ok(d.call("snat to=%s" % PRIMARY_IP))
    assert state(d)["differs"] == ""

    # The same table, translating to another address.
    other = "10.0.0.99"
    nft(ns, "delete", "table", "ip", "enid")
    nft_load(ns, expected_text("enid").replace("snat to %s" % PRIMARY_IP,
                                               "snat to %s" % other))
    s = state(d)
    assert s["in_place"] == 0 and s["to"] == other, s
    assert "snat to %s" % other in s["differs"], s
    assert "not \"" in s["differs"] and PRIMARY_IP in s["differs"], s

    # Both: the table and the connection-mark rule.
    ns.ip("rule", "del", "fwmark", "0x80/0x80", "lookup", "main", "pref",
          "512")
    s = state(d)
    assert "snat to %s" % other in s["differs"], s
    assert s["differs"].endswith("; connection-mark rule fwmark 0x80/0x80 "
                                 "lookup main at priority 512 missing"), s
    assert ok(d.call("snat to=%s" % PRIMARY_IP))["changed"] == 2
    s = state(d)
    assert s["in_place"] == 1 and s["differs"] == "", s
    assert s["to"] == PRIMARY_IP, s
