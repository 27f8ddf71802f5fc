"""Dual-stack pods end to end (issue 35): enid-cni run as a runtime runs
it (test_cni_e2e.py) against enid with ip_family dual in a node of the
simulated VPC with `--ipv6 dual`.

- Pods on the primary ENI and on a secondary one reach the VPC host
  (198.18.0.10, 2001:2::10) and the outside host (203.0.113.10 through
  SNAT, as the node's public address; 2001:db8:ff::10 untranslated) over
  both families, and are seen there with their own addresses.  The sim
  drops what an ENI sends from an address that is not its own (rp_filter
  for IPv4, its table ip6 srccheck for IPv6): a pod on a secondary ENI
  that gets its answers proves it leaves by its own ENI.
- The CNI result names both addresses on eth0 and both default routes;
  CHECK passes; DEL leaves no rule, route or neighbour of either family.
- The node's IPv6 source check drops a plugin-wired pod's packet with
  another pod's IPv6 source, and `enidctl metrics` counts it.
- kill -9 of enid: every pod keeps both addresses, its rules and host
  routes, and still reaches the VPC host over both families; no address
  is handed out twice.
- ip_family switched with pods running (a restart with the new
  configuration), in its own node: what the operator sees is in the
  tests' docstrings.
"""
import concurrent.futures
import ipaddress
import itertools
import json
import os
import re
import subprocess

import pytest

import ckptstate
from conftest import built, module_dir, write_config
from poolenv import PoolEnv
from test_cni_e2e import Pods, add, check, delete, host_end, ip, links, \
    path_of, ping
from test_ipv6_start import set_up_node
from test_pool_ipv6 import prefixes80, ready80, rules_for
from test_snat import whoami

_seq = itertools.count()
# Three addresses for pods per ENI, up to three ENIs: six pods need a
# secondary ENI.
SIM_ARGS = ("--ipv6", "dual", "--ip-limit", "4", "--eni-limit", "3")
VPC_HOST4, VPC_HOST6 = "198.18.0.10", "2001:2::10"
OUT_HOST4, OUT_HOST6 = "203.0.113.10", "2001:db8:ff::10"


@pytest.fixture(scope="module")
def mod_dir(enid_user):
    with module_dir("enid-dual-e2e-") as d:
        yield d


def make_env(d, enid_user, tag, ip_family):
    wd = d / tag
    wd.mkdir()
    os.chmod(wd, 0o755)
    e = PoolEnv(wd, enid_user, d / "helpers",
                prefix="%s%d%d" % (tag, os.getpid() % 10000, next(_seq)),
                sim_args=SIM_ARGS, ip_family=ip_family,
                pool={"warm_ip_target": 2, "ip_cooldown_s": 0,
                      "add_timeout_s": 30, "link_timeout_s": 10})
    e.podns = Pods(tag)
    try:
        if ip_family != "ipv4":
            set_up_node(e)
    except BaseException:
        e.stop()
        raise
    return e


@pytest.fixture(scope="module")
def env(mod_dir, enid_user):
    e = make_env(mod_dir, enid_user, "de", "dual")
    try:
        e.start()
        assert ready80(e), e.enid.text()
        yield e
    finally:
        e.podns.cleanup()
        e.stop()


def addrs(result):
    """The result's addresses without their lengths, by family."""
    out = {}
    for i in result["ips"]:
        a = ipaddress.ip_interface(i["address"])
        out[a.version] = str(a.ip)
    return out


def held(env):
    return {p["container_id"]: p for p in env.show("pods")}


def add_pods(env, cids):
    """ADDs in parallel, each in a namespace of its own: {cid: (netns,
    result)}.  Then what a first ping would lose is waited for: the sim
    routes a /80 or an address just assigned to its ENI a moment after
    the cloud's answer (as EC2 does).  Nothing waits for duplicate
    address detection: the sim brings the node's primary link (eth0) up
    without it, as an EC2 node's is long up, and netd gives an ENI's
    link its link-local address without it (doc/design.md, netd's IPv6
    section)."""
    nss = {cid: env.podns.new() for cid in cids}
    with concurrent.futures.ThreadPoolExecutor(len(cids)) as ex:
        outs = dict(zip(cids, ex.map(lambda c: add(env, c, nss[c]), cids)))
    for cid, o in outs.items():
        assert o.ok, (cid, o)
    env.wait_dataplane()
    return {cid: (nss[cid], outs[cid].out) for cid in cids}


def outside(env):
    return env.sim.control("GET", "/outside")


def spoofed(env):
    """The sim's IPv6 source check: {source: packets} it dropped for
    coming in over an ENI that does not hold the source."""
    out = subprocess.run(["ip", "netns", "exec", env.ep["vpc_netns"], "nft",
                          "-j", "list", "set", "ip6", "srccheck", "spoofed"],
                         capture_output=True, text=True, check=True).stdout
    found = {}
    for obj in json.loads(out)["nftables"]:
        for e in obj.get("set", {}).get("elem", []):
            e = e.get("elem", e) if isinstance(e, dict) else {"val": e}
            found[str(e["val"])] = (e.get("counter") or {}).get("packets", 0)
    return found


def node_has(env, addr):
    """Every rule, route and neighbour of the node that names addr, in
    either family."""
    fam = "-6" if ":" in addr else "-4"
    found = []
    for what in (["rule"], ["route", "show", "table", "all"],
                 ["neigh", "show"]):
        out = ip("-n", env.ns, fam, *what).stdout
        found += [line for line in out.splitlines()
                  if re.search(r"(^|\s)%s(/\d+)?(\s|$)" % re.escape(addr),
                               line)]
    return found


def host_routes(env, pod):
    return (ip("-n", env.ns, "-4", "route", "show", "exact",
               pod["ip"] + "/32").stdout,
            ip("-n", env.ns, "-6", "route", "show", "exact",
               pod["ip6"] + "/128").stdout)


def metrics(env):
    """enidctl metrics' samples without labels: {name: value}."""
    r = subprocess.run([built("ctl/enidctl"), "-s", str(env.ctl_sock),
                        "metrics"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, r.stderr
    return {m.group(1): float(m.group(2)) for m in re.finditer(
        r"^([a-z_0-9]+) ([0-9.e+]+)$", r.stdout, re.M)}


PODS = {}       # cid -> (netns, result), shared by the tests below
GONE = []       # the addresses of pods deleted, never handed out again


def test_pods_reach_both_hosts_in_both_families(env):
    PODS.update(add_pods(env, ["dp%d" % i for i in range(6)]))
    pods = held(env)
    enis = {e["id"]: e for e in env.show("enis")}
    p80 = prefixes80(env)
    for cid, (_, res) in PODS.items():
        a = addrs(res)
        assert (a[4], a[6]) == (pods[cid]["ip"], pods[cid]["ip6"]), \
            (res, pods[cid])
        assert ipaddress.ip_address(a[6]) in p80[pods[cid]["eni"]]
    on_primary = next(c for c in PODS if enis[pods[c]["eni"]]["primary"])
    on_secondary = next(c for c in PODS
                        if not enis[pods[c]["eni"]]["primary"])
    public = outside(env)["mappings"][0]["public"]
    before = outside(env)
    for cid in (on_primary, on_secondary):
        pod_ns, p = PODS[cid][0], pods[cid]
        for host in (VPC_HOST4, VPC_HOST6, OUT_HOST4, OUT_HOST6):
            assert ping(pod_ns, host), (cid, host, p)
        # Who the hosts saw: the VPC host each of the pod's addresses
        # (198.18.0.0/24 is excluded from SNAT), the outside host the
        # node's public address over IPv4 and the pod's own over IPv6.
        for host, want in ((VPC_HOST4, p["ip"]), (VPC_HOST6, p["ip6"]),
                           (OUT_HOST4, public), (OUT_HOST6, p["ip6"])):
            assert whoami(pod_ns, host) == want, (cid, host, want)
    after = outside(env)
    for cid in (on_primary, on_secondary):
        p = pods[cid]
        for key, addr in (("vpc_host_seen", p["ip"]),
                          ("vpc_host_seen", p["ip6"]), ("seen", p["ip6"])):
            assert after[key]["tcp"].get(addr, 0) == \
                before[key]["tcp"].get(addr, 0) + 1, (key, addr, after)
    assert after["seen"]["tcp"].get(public, 0) >= \
        before["seen"]["tcp"].get(public, 0) + 2, after
    # Every pod reaches the VPC host over IPv6.
    with concurrent.futures.ThreadPoolExecutor(6) as ex:
        ok = dict(zip(PODS, ex.map(lambda c: ping(PODS[c][0], VPC_HOST6),
                                   PODS)))
    assert all(ok.values()), ok
    assert not set(spoofed(env)) & {p["ip6"] for p in pods.values()}


def test_result_check_and_del(env):
    for cid, (pod_ns, res) in PODS.items():
        eth0 = [i for i, f in enumerate(res["interfaces"])
                if f["name"] == "eth0"]
        assert len(eth0) == 1 and \
            res["interfaces"][eth0[0]]["sandbox"] == path_of(pod_ns), res
        assert sorted(ipaddress.ip_interface(i["address"]).version
                      for i in res["ips"]) == [4, 6], res
        assert all(i["interface"] == eth0[0] for i in res["ips"]), res
        assert sorted(r["dst"] for r in res["routes"]) == \
            ["0.0.0.0/0", "::/0"], res
        o = check(env, cid, pod_ns, res)
        assert o.ok, (cid, o)
    # DEL: nothing of the pod is left on the node, in either family.
    cid = "dp5"
    pod_ns, res = PODS.pop(cid)
    pod = held(env)[cid]
    assert all(node_has(env, a) for a in (pod["ip"], pod["ip6"])), pod
    o = delete(env, cid, pod_ns, prev=res)
    assert o.ok, o
    assert cid not in held(env)
    GONE.append(pod["ip6"])
    assert host_end(res) not in links(env.ns)
    for a in (pod["ip"], pod["ip6"]):
        assert node_has(env, a) == [], (a, node_has(env, a))


def test_ipv6_source_check_drops_another_pods_address(env):
    """A pod that sends with another pod's IPv6 address is dropped on the
    node, before the VPC sees it (the sim's own check counts nothing)."""
    pods = held(env)
    liar, victim = "dp0", "dp1"
    pod_ns = PODS[liar][0]
    stolen = pods[victim]["ip6"]
    env.reconcile()
    m = metrics(env)
    assert m["enid_pod_ipv6_source_check_in_place"] == 1, m
    dropped = m["enid_pod_ipv6_source_dropped_total"]
    ip("-n", pod_ns, "-6", "addr", "add", stolen + "/128", "dev", "eth0",
       "nodad")
    try:
        r = subprocess.run(["ip", "netns", "exec", pod_ns, "ping", "-c",
                            "3", "-i", "0.2", "-W", "1", "-q", "-I",
                            stolen, VPC_HOST6], capture_output=True,
                           timeout=20)
        assert r.returncode != 0, r
    finally:
        ip("-n", pod_ns, "-6", "addr", "del", stolen + "/128", "dev",
           "eth0")
    env.reconcile()
    m = metrics(env)
    assert m["enid_pod_ipv6_source_dropped_total"] >= dropped + 3, m
    assert stolen not in spoofed(env), spoofed(env)
    # Both pods are fine with their own addresses.
    assert ping(pod_ns, VPC_HOST6) and ping(PODS[victim][0], VPC_HOST6)


def test_kill9_keeps_dual_pods_wired(env):
    pods = held(env)
    before = {cid: (rules_for(env, p["ip"]), rules_for(env, p["ip6"]),
                    host_routes(env, p)) for cid, p in pods.items()}
    env.kill9()
    env.start()
    env.reconcile()
    after = held(env)
    assert set(after) == set(pods)
    for cid, p in pods.items():
        q = after[cid]
        assert (q["ip"], q["ip6"], q["eni"]) == \
            (p["ip"], p["ip6"], p["eni"]), (p, q)
        assert (rules_for(env, p["ip"]), rules_for(env, p["ip6"]),
                host_routes(env, p)) == before[cid], cid
    text = env.enid.text()
    assert "belong to no pod" not in text and "missing its" not in text, \
        text
    with concurrent.futures.ThreadPoolExecutor(10) as ex:
        ok = dict(zip(
            [(c, h) for c in PODS for h in (VPC_HOST4, VPC_HOST6)],
            ex.map(lambda ch: ping(PODS[ch[0]][0], ch[1]),
                   [(c, h) for c in PODS for h in (VPC_HOST4, VPC_HOST6)])))
    assert all(ok.values()), ok
    for cid, (pod_ns, res) in PODS.items():
        assert check(env, cid, pod_ns, res).ok, cid
    # New pods after the restart: no address of either family twice.
    PODS.update(add_pods(env, ["dn0", "dn1"]))
    now = held(env)
    for fam in ("ip", "ip6"):
        got = [p[fam] for p in now.values()]
        assert len(set(got)) == len(got), (fam, now)
    assert not set(GONE) & {p["ip6"] for p in now.values()}, (GONE, now)
    for cid in ("dn0", "dn1"):
        assert ping(PODS[cid][0], VPC_HOST6), now[cid]


# ---- ip_family switched with pods running ----

@pytest.fixture(scope="module")
def switch_env(mod_dir, enid_user):
    e = make_env(mod_dir, enid_user, "dm", "ipv4")
    try:
        e.start()
        yield e
    finally:
        e.podns.cleanup()
        e.stop()


def restart_as(env, ip_family):
    """Stop enid, then start it again with only ip_family changed, as an
    operator who edits enid.conf and restarts the unit (whose
    ExecStartPre runs `enidctl node-setup` with it)."""
    env.enid.stop()
    env.conf_extra["ip_family"] = ip_family
    env.conf = write_config(env.workdir, env.enid_user, **env.conf_extra)
    if ip_family != "ipv4":
        set_up_node(env)
    env.start()
    env.reconcile()


def ping_fresh_link(pod_ns, host):
    """A ping that may lose its first packets: d2's ENI was attached while
    enid stopped, and its link comes up with the restart.  The sim's
    router joins fe80:ec2::1's solicited-node group on that link only
    once the kernel has processed the veth's carrier (linkwatch, which
    runs up to a second late), so the node's first neighbour
    solicitations for the router can go unheard (seen: 6 of 7 lost, the
    router counting one).  An echo each 0.5 s until the first answer,
    for at most 4 s."""
    r = subprocess.run(["ip", "netns", "exec", pod_ns, "ping", "-c", "1",
                        "-i", "0.5", "-w", "4", "-q", host],
                       capture_output=True)
    return r.returncode == 0


def show_pods_text(env):
    """`enidctl show pods` as the operator reads it: {container: row}."""
    r = subprocess.run([built("ctl/enidctl"), "-s", str(env.ctl_sock),
                        "show", "pods"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    head = lines[0].split()
    return head, {row.split()[0]: dict(zip(head, row.split()))
                  for row in lines[1:] if row.strip()}


SWITCHED = {}   # cid -> (netns, result), across the two tests below


def test_ipv4_to_dual_keeps_ipv4_pods(switch_env):
    """ipv4 -> dual: the running pods stay, IPv4-only, and keep working
    (CHECK passes with their old result); `enidctl show pods` shows "-"
    in their IP6 column until the runtime recreates them.  New pods get
    an address of each family, on the primary ENI and on a secondary
    one."""
    env = switch_env
    SWITCHED.update(add_pods(env, ["v4a", "v4b"]))
    for cid, (_, res) in SWITCHED.items():
        assert list(addrs(res)) == [4] and \
            [r["dst"] for r in res["routes"]] == ["0.0.0.0/0"], res
    restart_as(env, "dual")
    assert ready80(env, 2), env.enid.text()
    old = held(env)
    assert all("ip6" not in p for p in old.values()), old
    for cid, (pod_ns, res) in SWITCHED.items():
        assert old[cid]["ip"] == addrs(res)[4]
        assert ping(pod_ns, VPC_HOST4), cid
        assert check(env, cid, pod_ns, res).ok, cid
    # The pool packs: the primary ENI's last free address, then a
    # secondary ENI's.
    for cid in ("d1", "d2"):
        SWITCHED.update(add_pods(env, [cid]))
    now = held(env)
    enis = {e["id"]: e["primary"] for e in env.show("enis")}
    assert (enis[now["d1"]["eni"]], enis[now["d2"]["eni"]]) == \
        (True, False), now
    for cid in ("d1", "d2"):
        pod_ns, res = SWITCHED[cid]
        assert now[cid]["ip6"] == addrs(res)[6], (now[cid], res)
        assert ping_fresh_link(pod_ns, VPC_HOST6) and \
            ping(pod_ns, VPC_HOST4), cid
    head, rows = show_pods_text(env)
    assert "IP6" in head, head
    assert rows["v4a"]["IP6"] == "-" and rows["v4b"]["IP6"] == "-", rows
    assert rows["d1"]["IP6"] == now["d1"]["ip6"], rows


def table6(env, eni_id):
    """The IPv6 routes of an ENI's table, as `ip -6 route` says them."""
    t = {e["id"]: e["table"] for e in env.show("enis")}[eni_id]
    return ip("-n", env.ns, "-6", "route", "show", "table",
              str(t)).stdout.strip()


def test_dual_to_ipv4_keeps_dual_pods(switch_env):
    """dual -> ipv4: the running pods stay, the dual-stack ones with their
    IPv6 addresses (`enidctl show pods` still shows them), their IPv6
    rules and host routes, and the checkpoint stays version 4 while one
    is there; new pods get IPv4 only.

    Their IPv6 keeps working on a secondary ENI too: while pods hold IPv6
    addresses, enid with ip_family ipv4 still learns each ENI's own IPv6
    address and /80 from the cloud and sets the ENIs up with their
    address and their table's IPv6 default route, as with dual (on the
    primary ENI a pod goes by the node's own IPv6 default route).  It
    asks for no /80 and hands out no IPv6 address."""
    env = switch_env
    pods = held(env)
    dual = {cid: pods[cid] for cid in ("d1", "d2")}
    kept = {cid: (rules_for(env, p["ip6"]), host_routes(env, p))
            for cid, p in dual.items()}
    assert all(r and h[1] for r, h in kept.values()), kept
    restart_as(env, "ipv4")
    now = held(env)
    assert {c: (p["ip"], p.get("ip6")) for c, p in now.items()} == \
        {c: (p["ip"], p.get("ip6")) for c, p in pods.items()}, now
    for cid, p in dual.items():
        assert (rules_for(env, p["ip6"]), host_routes(env, p)) == \
            kept[cid], cid
    # netd still takes their IPv6 rules (the checkpoint's version tells
    # enid that pods may have IPv6 addresses).
    assert "restoring its IPv6 rules" not in env.enid.text(), \
        env.enid.text()
    snap = json.loads((env.state_dir / ckptstate.SNAPSHOT).read_text())
    assert snap["version"] == 4, snap["version"]
    assert "default via fe80:ec2::1" in table6(env, dual["d2"]["eni"]), \
        table6(env, dual["d2"]["eni"])
    for cid, (pod_ns, res) in SWITCHED.items():
        assert ping(pod_ns, VPC_HOST4), cid
        assert check(env, cid, pod_ns, res).ok, cid
    for cid in ("d1", "d2"):
        for host in (VPC_HOST6, OUT_HOST6):
            assert ping(SWITCHED[cid][0], host), (cid, host, dual[cid])
        assert whoami(SWITCHED[cid][0], VPC_HOST6) == dual[cid]["ip6"]
    assert not set(spoofed(env)) & {p["ip6"] for p in dual.values()}
    head, rows = show_pods_text(env)
    assert rows["d1"]["IP6"] == dual["d1"]["ip6"], rows
    assert rows["d2"]["IP6"] == dual["d2"]["ip6"], rows
    new = add_pods(env, ["v4c"])
    SWITCHED.update(new)
    res = new["v4c"][1]
    assert list(addrs(res)) == [4] and \
        [r["dst"] for r in res["routes"]] == ["0.0.0.0/0"], res
    assert "ip6" not in held(env)["v4c"]
    assert ping(new["v4c"][0], VPC_HOST4)
    # No /80 asked for with ipv4: only the ones of before.
    assert "assigning a /80" not in env.enid.text(), env.enid.text()


def test_dual_to_ipv4_kill9_keeps_and_repairs_ipv6(switch_env):
    """A kill -9 of enid with ip_family ipv4 and dual-stack pods: the
    start learns from the checkpoint that pods hold IPv6 addresses, and a
    dual pod on a secondary ENI still reaches both hosts over IPv6; a
    deleted IPv6 from rule or /128 host route of it is put back by a
    reconcile."""
    env = switch_env
    d2 = held(env)["d2"]
    pod_ns = SWITCHED["d2"][0]
    before = (rules_for(env, d2["ip6"]), host_routes(env, d2))
    env.kill9()
    env.start()
    env.reconcile()
    assert (rules_for(env, d2["ip6"]), host_routes(env, d2)) == before
    assert "default via fe80:ec2::1" in table6(env, d2["eni"])
    for host in (VPC_HOST6, OUT_HOST6):
        assert ping(pod_ns, host), (host, d2)
    # A run does not judge a pod's host route in its first 5 s after its
    # answer, which a restored pod is past.
    frm = [r for r in before[0] if r[1] != "all"]
    assert len(frm) == 1, before
    prio, src, _, table = frm[0]
    ip("-n", env.ns, "-6", "rule", "del", "priority", str(prio), "from",
       src, "table", table)
    ip("-n", env.ns, "-6", "route", "del", d2["ip6"] + "/128", "dev",
       host_end(SWITCHED["d2"][1]))
    assert rules_for(env, d2["ip6"]) != before[0]
    a = env.reconcile()
    assert a["drifts_fixed"] >= 2, a
    assert (rules_for(env, d2["ip6"]), host_routes(env, d2)) == before
    assert ping(pod_ns, VPC_HOST6), d2


def test_dual_to_ipv4_last_dual_pod_gone(switch_env):
    """A DEL of a dual-stack pod removes both families' rules with ipv4
    too.  Once the last one is gone, enid with ipv4 keeps no IPv6: the
    ENIs are set up without their IPv6 address (their tables lose their
    IPv6 default route), and the next snapshot, at the next start, is
    version 3 again."""
    env = switch_env
    pods = held(env)
    dual = {cid: pods[cid] for cid in ("d1", "d2")}
    for cid in ("d1", "d2"):
        pod_ns, res = SWITCHED.pop(cid)
        o = delete(env, cid, pod_ns, prev=res)
        assert o.ok, o
        for a in (dual[cid]["ip"], dual[cid]["ip6"]):
            assert node_has(env, a) == [], (cid, a, node_has(env, a))
    assert "IPv6 rule removal" not in env.enid.text(), env.enid.text()
    assert "no pod holds an IPv6 address" in env.enid.text()
    env.reconcile()
    assert "fe80:ec2::1" not in table6(env, dual["d2"]["eni"])
    assert all("ipv6_address" not in e and "ipv6_prefix" not in e
               for e in env.show("enis")), env.show("enis")
    for cid, (pod_ns, _) in SWITCHED.items():
        assert ping(pod_ns, VPC_HOST4), cid
    restart_as(env, "ipv4")
    snap = json.loads((env.state_dir / ckptstate.SNAPSHOT).read_text())
    assert snap["version"] == 3, snap["version"]
    assert "fe80:ec2::1" not in table6(env, dual["d2"]["eni"])
    for cid, (pod_ns, res) in SWITCHED.items():
        assert ping(pod_ns, VPC_HOST4), cid
        assert check(env, cid, pod_ns, res).ok, cid
