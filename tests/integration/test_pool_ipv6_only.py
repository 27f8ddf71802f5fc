"""IPv6-only pods (ip_family ipv6, issue 35) against the simulated VPC:
each pod takes the next address of its ENI's /80 and no IPv4 address;
the cloud assigns no IPv4 address for pods; netd's rules are IPv6 ones
only; the pool is driven by ENIs.  Also on a node whose primary ENI is in
the IPv6-only (ipv6Native) subnet, where no ENI has an IPv4 address."""
import ipaddress
import itertools
import json
import os
import subprocess
import time

import pytest

from test_cni_e2e import Pods, add as cni_add, delete as cni_delete, \
    path_of, ping
from test_ipv6_start import set_up_node
from poolenv import PoolEnv

_seq = itertools.count()
DUAL = ("--ipv6", "dual", "--ip-limit", "4", "--eni-limit", "3")
NATIVE = DUAL + ("--node-subnet", "0:ipv6-native")
VPC_HOST6 = "2001:2::10"


@pytest.fixture
def make_env(workdir, enid_user, helper_dir):
    envs = []

    def make(sim_args=DUAL, **conf):
        prefix = "v6%d%d" % (os.getpid() % 10000, next(_seq))
        conf.setdefault("ip_family", "ipv6")
        conf.setdefault("pool", {"ip_cooldown_s": 0, "add_timeout_s": 30})
        env = PoolEnv(workdir, enid_user, helper_dir, sim_args=sim_args,
                      prefix=prefix, **conf)
        set_up_node(env)
        envs.append(env)
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


def prefixes80(env):
    return {k: ipaddress.ip_network(e["ipv6_prefixes"][0])
            for k, e in node_enis(env).items() if e["ipv6_prefixes"]}


def rules(env, family):
    """enid-netd's pods' rules of a family (its protocol tag, 233)."""
    out = subprocess.run(["ip", family, "-n", env.ns, "-j", "rule"],
                         capture_output=True, text=True, check=True).stdout
    return sorted((r["priority"], r.get("src", "all"), r.get("dst", "all"),
                   str(r.get("table"))) for r in json.loads(out or "[]")
                  if str(r.get("protocol")) == "233" and "fwmark" not in r)


def held(env):
    return {p["container_id"]: p for p in env.checkpoint()["pods"]}


def ipv4_for_pods(env):
    """Every IPv4 address the cloud holds on the node's ENIs beyond each
    ENI's own one, and every IPv4 prefix."""
    out = []
    for e in node_enis(env).values():
        out += [a for a in e["addresses"]
                if a != e.get("primary_ip")]
        out += e.get("prefixes", [])
    return out


def add6(env, cids):
    """ADDs in turn, each answered with an IPv6 address alone."""
    answers = {}
    for cid in cids:
        a, _ = env.add(cid)
        assert a["ok"], (cid, a)
        for k in ("ip", "prefix", "subnet", "subnet_gateway"):
            assert k not in a, (k, a)
        assert "ip6" in a and "subnet6" in a, a
        assert all(":" in c for c in a["vpc_cidrs"]), a
        answers[cid] = a
    return answers


def check_pods(env, answers):
    """In order inside their ENI's /80; the checkpoint holds them without
    an IPv4 address; a to rule each (and a from rule on a secondary ENI),
    in the IPv6 rule table only."""
    p80, pods = prefixes80(env), held(env)
    last = {}
    for cid in answers:
        a, p = answers[cid], pods[cid]
        assert "ip" not in p and p["ip6"] == a["ip6"], (p, a)
        ip6 = ipaddress.ip_address(a["ip6"])
        assert ip6 in p80[a["eni"]], (a, p80)
        assert ip6 > last.get(a["eni"], ip6 - 1), (cid, a, last)
        last[a["eni"]] = ip6
        mine = [r for r in rules(env, "-6") if a["ip6"] in r[1:3]]
        primary = a["eni"] == env.node["primary_eni"]
        assert len(mine) == (1 if primary else 2), mine
    assert rules(env, "-4") == [], rules(env, "-4")


def test_ipv6_only_pods_over_cni_sock(make_env):
    env = make_env()
    env.start()
    primary = env.node["primary_eni"]
    assert wait_for(lambda: primary in prefixes80(env)), node_enis(env)
    answers = add6(env, ["s%d" % i for i in range(6)])
    # One ENI's /80 serves them all: no ENI is made for IPv4, and the
    # cloud holds no IPv4 address for any of them.
    assert {a["eni"] for a in answers.values()} == {primary}, answers
    check_pods(env, answers)
    assert list(node_enis(env)) == [primary], node_enis(env)
    assert ipv4_for_pods(env) == [], node_enis(env)
    log = env.enid.text()
    assert "pool: ip_family ipv6: pods get IPv6 addresses only" in log, log
    # enidctl: the pods' IPv6 address, no IPv4 one; the limits in ENIs.
    shown = {p["container_id"]: p for p in env.show("pods")}
    assert shown["s0"]["ip6"] == answers["s0"]["ip6"], shown["s0"]
    assert "ip" not in shown["s0"], shown["s0"]
    lim = env.ctl({"op": "show", "what": "limits"})
    assert lim["ok"] and lim["limits"]["ip_family"] == "ipv6", lim
    assert lim["limits"]["pods_driven_by"] == "enis", lim
    assert lim["limits"]["max_pods"] > 6, lim
    # DEL: its rule goes; the next pod takes an address past it.
    gone = answers["s5"]["ip6"]
    ans, _ = env.delete("s5")
    assert ans == {"ok": True}, ans
    assert [r for r in rules(env, "-6") if gone in r[1:3]] == []
    more = add6(env, ["s6"])
    assert ipaddress.ip_address(more["s6"]["ip6"]) > \
        ipaddress.ip_address(gone), (more, gone)
    del answers["s5"]
    answers.update(more)
    # kill -9 and a restart keep every pod, its address and its rules.
    before = rules(env, "-6")
    env.kill9()
    env.start()
    env.reconcile()
    after = held(env)
    assert {c: p["ip6"] for c, p in after.items()} == \
        {c: a["ip6"] for c, a in answers.items()}, after
    assert rules(env, "-6") == before
    text = env.enid.text()
    assert "belong to no pod" not in text and "missing its" not in text, \
        text
    again = add6(env, ["s7"])
    assert all(ipaddress.ip_address(again["s7"]["ip6"]) >
               ipaddress.ip_address(a["ip6"]) for a in answers.values())
    assert ipv4_for_pods(env) == [], node_enis(env)
