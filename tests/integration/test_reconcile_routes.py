"""Reconciliation puts back pods' host routes (issue 27 item 7): pods
wired by the real enid-cni in a node of tests/vpcsim lose their host
/32 routes (`ip route del POD-IP dev VETH` on the node), and `enidctl
reconcile` reports each as drift and answers only once every route is
back, made by enid-netd as the plugin made it; the pods reach the VPC host
again.  A route moved to another device is reported and left; an
enid-ipam pod's host route (ptp's) is not enid's and is left missing;
pods restored from the checkpoint after a restart keep their host veth.

    ENID_BUILDDIR=$PWD/build /usr/bin/python3 -m pytest -q \\
        tests/integration/test_reconcile_routes.py
"""
import concurrent.futures
import os
import subprocess
import time

import pytest

from poolenv import PoolEnv
from test_cni_e2e import (Pods, add, delete, host_end, ip,  # noqa
                          mod_dir, path_of, ping, run_plugin, check, _seq)

# enid-cni adds the host route after the ADD's answer: a run does not
# judge a pod answered less than this before it (RECON_ROUTE_GRACE_MS).
GRACE_S = 5.5


def make_env(d, enid_user, tag, sim_args, **pool):
    prefix = "%s%d%d" % (tag, os.getpid() % 10000, next(_seq))
    base = {"add_timeout_s": 30, "ip_cooldown_s": 0, "link_timeout_s": 10}
    base.update(pool)
    wd = d / tag
    wd.mkdir()
    os.chmod(wd, 0o755)
    # No periodic run: each repair here is the enidctl reconcile's.
    e = PoolEnv(wd, enid_user, d / "helpers", prefix=prefix,
                sim_args=sim_args, pool=base, reconcile_interval_s=3600)
    e.start()
    e.podns = Pods("rr")
    return e


@pytest.fixture
def env(mod_dir, enid_user):
    e = make_env(mod_dir, enid_user, "rr%d" % next(_seq),
                 ("--ip-limit", "10", "--eni-limit", "8"), warm_ip_target=4)
    try:
        yield e
    finally:
        e.podns.cleanup()
        e.stop()


def add_pods(env, n, name):
    cids = [name % i for i in range(n)]
    nss = {cid: env.podns.new() for cid in cids}
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        outs = dict(zip(cids, ex.map(lambda c: add(env, c, nss[c]), cids)))
    pods = {}
    for cid, o in outs.items():
        assert o.ok, (cid, o)
        pods[cid] = (nss[cid], o.out, o.out["ips"][0]["address"][:-3],
                     host_end(o.out))
    return pods


def host_route(env, addr):
    """The node's main-table route to addr, as ip(8) prints it."""
    return ip("-n", env.ns, "route", "show", "exact", addr + "/32").stdout


def pings(env, pods):
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        return dict(zip(pods, ex.map(
            lambda c: ping(pods[c][0], env.ep["vpc_host"]), pods)))


def test_reconcile_restores_deleted_host_routes(env):
    pods = add_pods(env, 24, "hr%02d")
    assert all(pings(env, pods).values())
    made = {cid: host_route(env, p[2]) for cid, p in pods.items()}
    for cid, text in made.items():
        assert text.startswith(pods[cid][2] + " dev " + pods[cid][3]), text
    time.sleep(GRACE_S)
    gone = sorted(pods)[::3]                        # 8 of 24
    for cid in gone:
        ip("-n", env.ns, "route", "del", pods[cid][2], "dev", pods[cid][3])
        assert host_route(env, pods[cid][2]) == ""
    assert not any(pings(env, {c: pods[c] for c in gone[:2]}).values())

    a = env.reconcile()
    # at the answer, not after: every route is back, as the plugin made it
    now = {cid: host_route(env, p[2]) for cid, p in pods.items()}
    assert now == made, [c for c in pods if now[c] != made[c]]
    assert a["drifts_fixed"] == len(gone), a
    log = env.enid.text()
    for cid in gone:
        assert "pod %s/eth0 at %s is missing its host route" % (
            cid, pods[cid][2]) in log, cid
    assert all(pings(env, pods).values())
    # the plugin still knows the route for its own: CHECK, then DEL
    cid = gone[0]
    assert check(env, cid, pods[cid][0], pods[cid][1]).ok
    o = delete(env, cid, pods[cid][0], prev=pods[cid][1])
    assert o.ok, o
    assert host_route(env, pods[cid][2]) == ""
    # and nothing left to fix
    assert env.reconcile()["drifts_fixed"] == 0


def table_routes(env, table):
    return ip("-n", env.ns, "route", "show", "table", str(table)).stdout


def test_reconcile_restores_a_flushed_eni_table(env):
    """An operator's "ip route flush table N" empties a secondary ENI's
    table: its pods' replies have no way out.  enidctl reconcile sets it
    up again through netd, counts it as drift, and answers with it back;
    a run with nothing missing counts nothing."""
    pods = add_pods(env, 14, "tf%02d")      # past the primary's 9
    enis = [e for e in env.show("enis") if not e["primary"]
            and e["state"] == "ready"]
    assert enis, env.show("enis")
    tables = {e["id"]: e["table"] for e in enis}
    before = {eid: table_routes(env, t) for eid, t in tables.items()}
    assert all(before.values()), before
    time.sleep(GRACE_S)
    a = env.reconcile()
    assert a["drifts_fixed"] == 0, (a, [l for l in env.enid.text(
        ).splitlines() if "warning: reconcile" in l])
    victim = sorted(tables)[0]
    ip("-n", env.ns, "route", "flush", "table", str(tables[victim]))
    assert table_routes(env, tables[victim]) == ""
    a = env.reconcile()
    assert {eid: table_routes(env, t) for eid, t in tables.items()} == \
        before
    assert a["drifts_fixed"] == 1, a
    assert "%s: its link or table %d lacked" % (
        victim, tables[victim]) in env.enid.text()
    assert all(pings(env, pods).values())
    assert env.reconcile()["drifts_fixed"] == 0


def test_route_on_another_device_is_reported_and_left(env):
    pods = add_pods(env, 3, "mv%d")
    time.sleep(GRACE_S)
    a, b = sorted(pods)[:2]
    addr, veth_a, veth_b = pods[a][2], pods[a][3], pods[b][3]
    ip("-n", env.ns, "route", "del", addr, "dev", veth_a)
    ip("-n", env.ns, "route", "add", addr + "/32", "dev", veth_b, "scope",
       "link")
    moved = host_route(env, addr)
    out = env.reconcile()
    assert out["drifts_fixed"] == 0, out
    assert host_route(env, addr) == moved
    assert "pod %s/eth0 at %s is routed through %s, not its host veth %s" % (
        a, addr, veth_b, veth_a) in env.enid.text()
    ip("-n", env.ns, "route", "del", addr, "dev", veth_b)


def test_ipv6_rules_and_routes_are_left_alone(env):
    """netd dumps its IPv6 pods' rules and /128 host routes too (issue
    35); an IPv4 broker holds no IPv6 pod, and must neither count them
    as drift nor remove them: they are left as they are."""
    pods = add_pods(env, 1, "v6%d")
    time.sleep(GRACE_S)
    (cid,) = pods
    veth = pods[cid][3]
    pod6 = "2600:1f14:abc:110::a"
    # As netd makes them: tagged, at enid's priorities, and the plugin's
    # route on the pod's veth.
    ip("-n", env.ns, "-6", "rule", "add", "to", pod6 + "/128", "lookup",
       "main", "pref", "512", "proto", "233")
    ip("-n", env.ns, "-6", "rule", "add", "from", pod6 + "/128", "lookup",
       "101", "pref", "1536", "proto", "233")
    ip("-n", env.ns, "-6", "route", "add", pod6 + "/128", "dev", veth)
    rules = ip("-n", env.ns, "-6", "rule").stdout
    route = ip("-n", env.ns, "-6", "route", "show", pod6).stdout
    assert pod6 in rules and pod6 in route
    out = env.reconcile()
    assert out["drifts_fixed"] == 0, out
    assert ip("-n", env.ns, "-6", "rule").stdout == rules
    assert ip("-n", env.ns, "-6", "route", "show", pod6).stdout == route
    assert pod6 not in env.enid.text()


def test_enid_ipam_pods_host_route_is_not_enids(env):
    """Under ptp the host route is ptp's: enid-ipam names no veth, and
    reconciliation neither counts nor restores its route, while an
    enid-cni pod's beside it comes back."""
    conf = {"cniVersion": "1.0.0", "name": "ptpnet", "type": "ptp",
            "mtu": 1500, "ipam": {"type": "enid-ipam",
                                  "socket": str(env.cni_sock)}}
    pod_ns = env.podns.new()
    o = run_plugin(env.ns, "ADD", conf, cid="ptp0", netns=path_of(pod_ns),
                   binary="/usr/lib/cni/ptp")
    assert o.ok, o
    addr = o.out["ips"][0]["address"].split("/")[0]
    pods = add_pods(env, 1, "cni%d")
    cni_addr, cni_veth = pods["cni0"][2], pods["cni0"][3]
    made = host_route(env, cni_addr)
    time.sleep(GRACE_S)
    ip("-n", env.ns, "route", "del", addr + "/32")
    ip("-n", env.ns, "route", "del", cni_addr, "dev", cni_veth)
    assert host_route(env, addr) == ""
    assert env.reconcile()["drifts_fixed"] == 1
    assert host_route(env, addr) == ""
    assert host_route(env, cni_addr) == made
    held = {p["container_id"]: p for p in env.checkpoint()["pods"]}
    assert "host_veth" not in held["ptp0"], held["ptp0"]
    assert held["cni0"]["host_veth"] == cni_veth, held["cni0"]
    o = run_plugin(env.ns, "DEL", dict(conf, prevResult=o.out), cid="ptp0",
                   netns=path_of(pod_ns), binary="/usr/lib/cni/ptp")
    assert o.ok, o


def test_restored_pods_keep_their_host_veth(env):
    """The host veth is in the checkpoint: after a restart, a deleted
    route of a restored pod is put back too."""
    pods = add_pods(env, 4, "rs%d")
    ck = env.checkpoint()
    assert sorted(p["host_veth"] for p in ck["pods"]) == \
        sorted(p[3] for p in pods.values()), ck
    env.kill9()
    env.start()
    cid = sorted(pods)[1]
    addr, veth = pods[cid][2], pods[cid][3]
    made = host_route(env, addr)
    ip("-n", env.ns, "route", "del", addr, "dev", veth)
    a = env.reconcile()
    assert a["drifts_fixed"] == 1, a
    assert host_route(env, addr) == made
    assert ping(pods[cid][0], env.ep["vpc_host"])


@pytest.mark.long_wait
def test_reconcile_restores_many_host_routes(env):
    """The issue's shape at the size one node of the sim holds: 60 pods,
    50 routes gone."""
    pods = add_pods(env, 60, "mn%02d")
    made = {cid: host_route(env, p[2]) for cid, p in pods.items()}
    time.sleep(GRACE_S)
    gone = sorted(pods)[:50]
    subprocess.run(["ip", "-n", env.ns, "-batch", "-"], check=True,
                   text=True, input="".join(
                       "route del %s dev %s\n" % (pods[c][2], pods[c][3])
                       for c in gone))
    a = env.reconcile()
    now = {cid: host_route(env, p[2]) for cid, p in pods.items()}
    assert now == made, [c for c in pods if now[c] != made[c]]
    assert a["drifts_fixed"] == 50, a
    assert all(pings(env, pods).values())
