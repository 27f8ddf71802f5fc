"""The pool's IPv6 (ip_family dual) against the simulated VPC: every ENI
that serves pods gets one /80 for its pods' IPv6 addresses, and each
secondary ENI its own IPv6 address besides; the /80 goes back with its
ENI."""
import ipaddress
import itertools
import json
import os
import subprocess
import time

import pytest

from poolenv import PoolEnv
from test_ipv6_start import set_up_node

_seq = itertools.count()
DUAL = ("--ipv6", "dual", "--ip-limit", "4", "--eni-limit", "3")


@pytest.fixture
def make_env(workdir, enid_user, helper_dir):
    envs = []

    def make(sim_args=DUAL, **conf):
        prefix = "p6%d%d" % (os.getpid() % 10000, next(_seq))
        env = PoolEnv(workdir, enid_user, helper_dir, sim_args=sim_args,
                      prefix=prefix, **conf)
        envs.append(env)
        # node-setup with ip_family ipv4 changes nothing (and says so).
        if conf.get("ip_family", "ipv4") != "ipv4":
            set_up_node(env)
        return env

    yield make
    for env in envs:
        env.stop()


def wait_for(what, timeout=20):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = what()
        if got:
            return got
        time.sleep(0.05)
    return what()


def node_enis(env):
    iid = env.node["instance_id"]
    return {e["id"]: e for e in env.state()["enis"]
            if (e.get("attachment") or {}).get("instance_id") == iid}


def test_each_eni_gets_its_own_address_and_a_80(make_env):
    env = make_env(ip_family="dual", pool={"warm_ip_target": 5})
    env.start()
    primary = env.node["primary_eni"]

    def ready():
        enis = node_enis(env)
        if len(enis) != 2 or not all(e["ipv6_prefixes"]
                                     for e in enis.values()):
            return None
        return enis
    enis = wait_for(ready)
    assert enis, node_enis(env)
    for eid, e in enis.items():
        assert len(e["ipv6_prefixes"]) == 1, e
        assert e["ipv6_prefixes"][0].endswith("/80"), e
        # The primary keeps the node's one address; a secondary has its
        # own, asked for when it was created.
        assert len(e["ipv6_addresses"]) == 1, e
        if eid == primary:
            assert e["ipv6_addresses"] == [env.node["primary_ipv6"]]
    log = env.enid.text()
    assert "pods' IPv6 addresses come from" in log, log
    # Nothing is asked twice: one /80 each, however many runs.
    env.reconcile()
    assert {k: e["ipv6_prefixes"] for k, e in node_enis(env).items()} == \
        {k: e["ipv6_prefixes"] for k, e in enis.items()}


# ---- dual-stack pods (issue 35) ----

def pool(**kw):
    base = {"warm_ip_target": 1, "warm_eni_target": 0, "ip_cooldown_s": 0,
            "add_timeout_s": 30}
    base.update(kw)
    return base


def rules(env, family):
    """enid-netd's pods' rules of a family (its protocol tag, 233)."""
    out = subprocess.run(["ip", family, "-n", env.ns, "-j", "rule"],
                         capture_output=True, text=True, check=True).stdout
    return [r for r in json.loads(out or "[]")
            if str(r.get("protocol")) == "233" and "fwmark" not in r]


def rules_for(env, addr):
    fam = "-6" if ":" in addr else "-4"
    return sorted((r["priority"], r.get("src", "all"), r.get("dst", "all"),
                   str(r.get("table"))) for r in rules(env, fam)
                  if addr in (r.get("src"), r.get("dst")))


def prefixes80(env):
    """Each of the node's ENIs' /80."""
    return {k: ipaddress.ip_network(e["ipv6_prefixes"][0])
            for k, e in node_enis(env).items() if e["ipv6_prefixes"]}


def ready80(env, n=1):
    return wait_for(lambda: len(prefixes80(env)) >= n and prefixes80(env))


def held(env):
    """The checkpoint's pods by container id."""
    return {p["container_id"]: p for p in env.checkpoint()["pods"]}


def add_dual(env, cids):
    """ADDs in turn: each answered ok; the pods as the checkpoint keeps
    them (the answer is sent after their save)."""
    answers = {}
    for cid in cids:
        a, _ = env.add(cid)
        assert a["ok"], (cid, a)
        answers[cid] = a
    pods = held(env)
    for cid, a in answers.items():
        assert pods[cid]["ip"] == a["ip"] and \
            pods[cid]["ip6"] == a["ip6"], (pods[cid], a)
    return answers, pods


def check_rules(env, pod, eni_primary):
    """A "to" rule for each address, and a "from" rule each on a secondary
    ENI."""
    for addr in (pod["ip"], pod["ip6"]):
        got = rules_for(env, addr)
        assert len(got) == (1 if eni_primary else 2), (addr, got)
        assert any(r[2] == addr and r[3] == "main" for r in got), got
        if not eni_primary:
            assert any(r[1] == addr and r[3] != "main" for r in got), got


def test_dual_pods_take_their_enis_80_in_order(make_env):
    env = make_env(ip_family="dual", pool=pool(warm_ip_target=2))
    env.start()
    assert ready80(env)
    primary = env.node["primary_eni"]
    # The primary holds three pods (four addresses, its own among them):
    # six ADDs fill it and go on to a secondary ENI.
    answers, pods = add_dual(env, ["d%d" % i for i in range(6)])
    enis = {a["eni"] for a in answers.values()}
    assert primary in enis and len(enis) == 2, answers
    p80 = prefixes80(env)
    last = {}
    for cid in sorted(answers):
        a, p = answers[cid], pods[cid]
        ip6 = ipaddress.ip_address(p["ip6"])
        assert ip6 in p80[a["eni"]], (p, p80)
        assert ip6 > last.get(a["eni"], ip6 - 1), (cid, p, last)
        last[a["eni"]] = ip6
        check_rules(env, p, a["eni"] == primary)
    # DEL: both families' rules go, and the IPv6 address is never handed
    # out again (ip_cooldown_s 0: its IPv4 one may be).
    gone = pods["d5"]
    ans, _ = env.delete("d5")
    assert ans == {"ok": True}, ans
    assert rules_for(env, gone["ip"]) == [] and \
        rules_for(env, gone["ip6"]) == [], rules(env, "-6")
    (a,), after = add_dual(env, ["d6"])[0].values(), held(env)
    assert a["eni"] == answers["d5"]["eni"], a
    assert ipaddress.ip_address(after["d6"]["ip6"]) > \
        ipaddress.ip_address(gone["ip6"]), (after["d6"], gone)
    assert after["d6"]["ip6"] not in {p["ip6"] for p in pods.values()}
    check_rules(env, after["d6"], a["eni"] == primary)


def test_an_add_waits_for_its_enis_80(make_env):
    """Free IPv4 addresses on an ENI without its /80 yet: the ADD waits
    for the /80 (its assign slowed in the cloud), and the pool does not
    grow another ENI for it."""
    env = make_env(ip_family="dual", pool=pool())
    env.faults([{"action": "AssignIpv6Addresses", "latency_ms": 3000}])
    env.start()
    t0 = time.monotonic()
    a, _ = env.add("w0", timeout=30)
    assert a["ok"], a
    assert time.monotonic() - t0 > 1.0, "the ADD did not wait for the /80"
    assert "ip6" in held(env)["w0"]
    assert list(node_enis(env)) == [env.node["primary_eni"]], node_enis(env)


def test_kill9_keeps_every_pods_ip6_and_rules(make_env):
    env = make_env(ip_family="dual", pool=pool(warm_ip_target=2))
    env.start()
    assert ready80(env)
    primary = env.node["primary_eni"]
    answers, pods = add_dual(env, ["k%d" % i for i in range(5)])
    before = {cid: (rules_for(env, p["ip"]), rules_for(env, p["ip6"]))
              for cid, p in pods.items()}
    env.kill9()
    env.start()
    env.reconcile()
    after = held(env)
    for cid, p in pods.items():
        assert after[cid]["ip6"] == p["ip6"] and after[cid]["ip"] == p["ip"]
        assert (rules_for(env, p["ip"]), rules_for(env, p["ip6"])) == \
            before[cid], cid
    text = env.enid.text()
    assert "belong to no pod" not in text and "missing its" not in text, \
        text
    # The ENIs' next IPv6 addresses are past every restored pod's.
    (a,), more = add_dual(env, ["k5"])[0].values(), held(env)
    same = [ipaddress.ip_address(p["ip6"]) for cid, p in pods.items()
            if answers[cid]["eni"] == a["eni"]]
    assert all(ipaddress.ip_address(more["k5"]["ip6"]) > x for x in same)
    check_rules(env, more["k5"], a["eni"] == primary)


def test_reconcile_repairs_ipv6_rules_and_removes_strays(make_env):
    env = make_env(ip_family="dual", pool=pool(warm_ip_target=2),
                   reconcile_interval_s=3600)
    env.start()
    assert ready80(env)
    primary = env.node["primary_eni"]
    answers, pods = add_dual(env, ["r%d" % i for i in range(5)])
    on_secondary = [c for c in answers if answers[c]["eni"] != primary]
    assert on_secondary, answers
    victim, other = pods["r0"], pods[on_secondary[0]]
    to_rule = [r for r in rules_for(env, victim["ip6"]) if r[2] ==
               victim["ip6"]][0]
    from_rule = [r for r in rules_for(env, other["ip6"]) if r[1] ==
                 other["ip6"]][0]
    prio_to, prio_from = to_rule[0], from_rule[0]
    # A tagged rule of an address of the /80 no pod holds.
    stray = str(prefixes80(env)[primary][7])
    ns = ["ip", "-6", "-n", env.ns, "rule"]
    subprocess.run(ns + ["del", "priority", str(prio_to), "to",
                         victim["ip6"] + "/128"], check=True)
    subprocess.run(ns + ["del", "priority", str(prio_from), "from",
                         other["ip6"] + "/128"], check=True)
    subprocess.run(ns + ["add", "priority", str(prio_to), "to",
                         stray + "/128", "lookup", "main", "protocol", "233"],
                   check=True)
    env.reconcile()
    check_rules(env, victim, answers["r0"]["eni"] == primary)
    check_rules(env, other, False)
    assert rules_for(env, stray) == [], rules(env, "-6")
    text = env.enid.text()
    assert "pod r0/eth0 at %s is missing its to rule" % victim["ip6"] in \
        text, text
    assert "at %s is missing its from rule" % other["ip6"] in text, text
    assert "rules for %s belong to no pod" % stray in text, text
    # The IPv4 rules were never touched.
    assert "rules for 10." not in text, text


def test_ipv6_rule_refused_fails_the_add_whole(make_env):
    """No checkpoint: the kernel's IPv6 rules rebuild the pods, each
    address a record of its own, and each ENI's next IPv6 address comes
    after them.  Put so (far into its /80), the next is known: held by the
    node's lo, netd refuses the IPv6 rule, and the ADD fails whole: no
    pod, no IPv4 address's rules left once a reconcile has run."""
    env = make_env(ip_family="dual", pool=pool(warm_ip_target=5))
    env.start()
    p80 = ready80(env, 2)
    assert len(p80) == 2, p80
    primary = env.node["primary_eni"]
    answers, pods = add_dual(env, ["f0"])
    prio_to = [r for r in rules_for(env, pods["f0"]["ip6"])
               if r[3] == "main"][0][0]
    far = {k: n[0xabcd00000000] for k, n in p80.items()}
    env.kill9()
    aside = env.workdir / "aside"
    aside.mkdir()
    for name in os.listdir(env.state_dir):
        os.rename(env.state_dir / name, aside / name)
    for addr in far.values():
        subprocess.run(["ip", "-6", "-n", env.ns, "rule", "add", "priority",
                        str(prio_to), "to", "%s/128" % addr, "lookup",
                        "main", "protocol", "233"], check=True)
    e = env.start()
    assert e.wait_log("reconcile: done", 30), e.text()
    env.reconcile()
    got = held(env)
    f0 = pods["f0"]
    want = {"enid-recovered-" + f0["ip"]: ("ip", f0["ip"]),
            "enid-recovered-" + f0["ip6"].replace(":", "-"):
                ("ip6", f0["ip6"])}
    for addr in far.values():
        want["enid-recovered-" + str(addr).replace(":", "-")] = \
            ("ip6", str(addr))
    assert {c: (k, p[k]) for c, p in got.items() for k in ("ip", "ip6")
            if k in p} == want, got
    assert all(not ("ip" in p and "ip6" in p) for p in got.values()), got
    assert "belong to no pod" not in e.text(), e.text()
    # Each ENI's next IPv6 address: the one after its far one.
    nxt = [str(addr + 1) for addr in far.values()]
    for addr in nxt:
        subprocess.run(["ip", "-6", "-n", env.ns, "addr", "add",
                        addr + "/128", "dev", "lo", "nodad"], check=True)
    v4_before = rules(env, "-4")
    a, _ = env.add("f1")
    assert not a["ok"] and a["code"] == "netd", a
    assert "IPv6" in a["error"], a
    # The failed ADD's pod goes with the next save (its answer does not
    # wait for that one).
    env.wait(lambda: "f1" not in held(env), 10, "f1 gone from the record")
    env.reconcile()
    assert rules(env, "-4") == v4_before, (rules(env, "-4"), v4_before)
    assert all(rules_for(env, addr) == [] for addr in nxt)
    for addr in nxt:
        subprocess.run(["ip", "-6", "-n", env.ns, "addr", "del",
                        addr + "/128", "dev", "lo"], check=True)
    # Never handed out again: the next ADD has the one after.
    (a,), now = add_dual(env, ["f2"])[0].values(), held(env)
    assert now["f2"]["ip6"] not in nxt, now["f2"]
    assert ipaddress.ip_address(now["f2"]["ip6"]) > far[a["eni"]] + 1
    check_rules(env, now["f2"], a["eni"] == primary)


def test_ip_family_ipv4_gives_pods_no_ipv6(make_env):
    env = make_env(pool=pool(warm_ip_target=2), reconcile_interval_s=3600)
    env.start()
    answers, _ = {}, None
    for i in range(4):
        a, _ = env.add("v%d" % i)
        assert a["ok"], a
        answers["v%d" % i] = a
    pods = held(env)
    assert all("ip6" not in p for p in pods.values()), pods
    assert rules(env, "-6") == []
    assert all(not e["ipv6_prefixes"] for e in node_enis(env).values())
    # A tagged IPv6 rule is no pod's of this broker, and no drift either.
    subprocess.run(["ip", "-6", "-n", env.ns, "rule", "add", "priority",
                    "100", "to", "2600:1f18::7/128", "lookup", "main",
                    "protocol", "233"], check=True)
    env.reconcile()
    assert len(rules(env, "-6")) == 1
    assert "belong to no pod" not in env.enid.text()


def test_reconcile_restores_a_pods_ipv6_host_route(make_env):
    """enid-cni's pod: its /128 host route deleted, a reconcile puts it
    back (netd makes it as the plugin did), and counts it as drift."""
    from test_cni_e2e import Pods, add, host_end, ip
    env = make_env(ip_family="dual", pool=pool(warm_ip_target=2),
                   reconcile_interval_s=3600)
    env.start()
    assert ready80(env)
    podns = Pods("h6")
    try:
        o = add(env, "h6", podns.new())
        assert o.ok, o
        addr6 = [i["address"].split("/")[0] for i in o.out["ips"]
                 if ":" in i["address"]]
        assert addr6 == [held(env)["h6"]["ip6"]], (o.out, held(env))
        addr6, veth = addr6[0], host_end(o.out)

        def route():
            return ip("-n", env.ns, "-6", "route", "show", "exact",
                      addr6 + "/128").stdout
        made = route()
        assert made.startswith(addr6 + " dev " + veth), made
        # enid-cni adds the route after the ADD's answer: a run does not
        # judge a pod answered less than 5 s before it.
        time.sleep(5.5)
        assert env.reconcile()["drifts_fixed"] == 0
        ip("-n", env.ns, "-6", "route", "del", addr6 + "/128", "dev", veth)
        assert route() == ""
        a = env.reconcile()
        assert a["drifts_fixed"] == 1, a
        assert route() == made
        assert "pod h6/eth0 at %s is missing its host route" % addr6 in \
            env.enid.text()
    finally:
        podns.cleanup()
