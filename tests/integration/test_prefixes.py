"""Prefix delegation end to end (issue 24): enid in a node of tests/vpcsim
with prefix_delegation on, CNI requests on the real cni.sock, pods wired
with iproute2 that must ping the VPC host, the sim's state as the cloud's
truth.  Fragmentation is the sim's control (POST /subnets/<id>
{"fragment": true}): single addresses free, no aligned /28.

Each test starts a sim of its own (an m5.large unless it says: 3 ENIs of
10 addresses, Nitro), with small timers, so the whole file stays short.
"""
import ipaddress
import itertools
import os
import threading
import time

import pytest

from conftest import write_config
from poolenv import PoolEnv
# hostile_ec2.py in front of the sim's EC2 endpoint, as that file uses it
from test_hostile_cloud import CloudEnv, Watch

_seq = itertools.count()
# An m5.large: 3 ENIs of 10 addresses, Nitro.
M5_LARGE = ("--instance-type", "m5.large", "--eni-limit", "3",
            "--ip-limit", "10")


@pytest.fixture
def make_env(workdir, enid_user, helper_dir):
    envs = []

    def make(sim_args=M5_LARGE, both_subnets=False, cls=PoolEnv, **conf):
        prefix = "pd%d%d" % (os.getpid() % 10000, next(_seq))
        env = cls(workdir, enid_user, helper_dir, sim_args=sim_args,
                  prefix=prefix, **conf)
        envs.append(env)
        if both_subnets:
            env.conf_extra["subnets"] = [{"id": s["id"]}
                                         for s in env.ep["subnets"]]
            rewrite(env)
        return env

    yield make
    keep = os.environ.get("ENID_IT_KEEP")   # a directory for the logs
    for env in envs:
        env.stop()
        if keep:
            import shutil
            dst = os.path.join(keep, env.sim.dir.parent.name)
            shutil.copytree(env.workdir, dst, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("*.sock"))


def pool_conf(**pool):
    base = {"add_timeout_s": 10, "ip_cooldown_s": 0, "link_timeout_s": 10,
            "prefix_delegation": True}
    base.update(pool)
    return base


def rewrite(env, **pool):
    """enid's config again, with pool keys changed (for the next start)."""
    env.conf_extra["pool"] = dict(env.conf_extra.get("pool", {}), **pool)
    env.conf = write_config(env.workdir, env.enid_user, **env.conf_extra)


def fragment(env, sid, on=True):
    return env.sim.control("POST", "/subnets/" + sid, {"fragment": on})


def net(p):
    return ipaddress.ip_network(p)


def node_prefixes(env, st=None):
    """{eni id: set of prefixes} of the ENIs attached to node 0."""
    iid = env.node["instance_id"]
    return {e["id"]: set(e.get("prefixes") or [])
            for e in (st or env.state())["enis"]
            if e.get("instance_id") == iid}


def all_node_prefixes(env, st=None):
    return set().union(set(), *node_prefixes(env, st).values())


def node_singles(env, st=None):
    """{eni id: set of secondary single addresses} of node 0's ENIs."""
    iid = env.node["instance_id"]
    return {e["id"]: set(e["addresses"][1:])
            for e in (st or env.state())["enis"]
            if e.get("instance_id") == iid}


def cloud_owner(env, st=None):
    """{address: eni id} of every address the cloud gives node 0's ENIs,
    singles and prefixes' alike."""
    out = {}
    st = st or env.state()
    for eid, ips in node_singles(env, st).items():
        for ip in ips:
            out[ip] = eid
    for eid, pfx in node_prefixes(env, st).items():
        for p in pfx:
            for ip in net(p):
                out[str(ip)] = eid
    return out


def pool_prefixes(env, enis=None):
    """{eni id: set of prefixes} as enid's pool holds them (`show enis`):
    the /28s all 16 of whose addresses are on one ENI.  An ENI of an
    m5.large takes 9 single addresses at most, and the sim never hands
    out a single inside a delegated prefix, so a whole /28 is a prefix."""
    out = {}
    for e in enis or env.show("enis"):
        groups = {}
        for a in e["addresses"]:
            p = ipaddress.ip_network(a["ip"] + "/28", strict=False)
            groups.setdefault(str(p), set()).add(a["ip"])
        out[e["id"]] = {p for p, ips in groups.items() if len(ips) == 16}
    return out


def all_pool_prefixes(env, enis=None):
    return set().union(set(), *pool_prefixes(env, enis).values())


def in_any(ip, prefixes):
    return any(ipaddress.ip_address(ip) in net(p) for p in prefixes)


def check_pods(env, ping=True):
    """No address twice: every pod's address is its own, on the ENI enid
    says, both in enid's pool and in the cloud (as a single address or
    inside a prefix); and every wired pod pings the VPC host."""
    pods = env.show("pods")
    ips = [p["ip"] for p in pods]
    assert len(ips) == len(set(ips)), pods
    owner = cloud_owner(env)
    pool = {}
    for e in env.show("enis"):
        for a in e["addresses"]:
            assert a["ip"] not in pool, ("an address on two ENIs", a)
            pool[a["ip"]] = (e["id"], a.get("container_id"))
    for p in pods:
        if p["state"] == "lost":
            continue
        assert owner.get(p["ip"]) == p["eni"], (p, owner.get(p["ip"]))
        assert pool.get(p["ip"]) == (p["eni"], p["container_id"]), \
            (p, pool.get(p["ip"]))
    if ping:
        for cid, w in list(env.pods.items()):
            assert w.ping(env.ep["vpc_host"], wait=2), (cid, w.ip)
    return {p["container_id"]: p for p in pods}


def no_leaks(env):
    """Every ENI the sim holds for node 0 is attached and in the pool,
    and every prefix the cloud delegates to them is in the pool too."""
    st = env.state()
    enis = env.show("enis")
    mine = {e["id"] for e in enis}
    for e in env.node_enis(st):
        if e["status"] == "available" or e["id"] not in mine:
            return False
    return node_prefixes(env, st) == {
        k: v for k, v in pool_prefixes(env, enis).items()
        if k in node_prefixes(env, st)} or None


def errors(env, code, st=None):
    return sum(c.get(code, 0) for c in (st or env.state())["errors"].values())


def concurrent_adds(env, cids, timeout=30):
    """ADD each of cids at once; {cid: (answer, seconds)}."""
    out = {}

    def run(cid):
        try:
            out[cid] = env.add(cid, timeout=timeout)
        except (OSError, ValueError) as e:     # enid killed mid-request
            out[cid] = ({"ok": False, "code": "connection",
                         "error": str(e)}, 0)
    ts = [threading.Thread(target=run, args=(c,)) for c in cids]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout + 5)
    assert set(out) == set(cids), "a request never returned"
    return out


# ---- growth ----

def test_pods_take_addresses_of_prefixes(make_env):
    env = make_env(pool=pool_conf(warm_prefix_target=1))
    env.start()
    ips = []
    for i in range(3):
        a = env.add_and_ping("c%d" % i)
        ips.append(a["ip"])
    held = all_node_prefixes(env)
    assert held, node_prefixes(env)
    for ip in ips:
        assert in_any(ip, held), (ip, held)
    assert all_pool_prefixes(env) == held
    check_pods(env)


def test_prefix_comes_from_the_subnet_that_has_one(make_env):
    """Subnet A (the node's) is fragmented, B is not, both configured:
    A refuses the /28, and the prefix comes from B, on an ENI there; no
    single address is taken as a fallback, since B serves prefixes."""
    env = make_env(both_subnets=True,
                   pool=pool_conf(warm_prefix_target=1))
    a_id, b_id = (s["id"] for s in env.ep["subnets"])
    b_cidr = net(env.ep["subnets"][1]["cidr"])
    assert fragment(env, a_id)["free_prefixes"] == 0
    env.start()
    env.wait(lambda: all_node_prefixes(env), 15, "a prefix delegated")
    ips = [env.add_and_ping("f%d" % i)["ip"] for i in range(3)]
    st = env.state()
    held = all_node_prefixes(env, st)
    assert held and all(net(p).subnet_of(b_cidr) for p in held), held
    assert all(in_any(ip, held) for ip in ips), (ips, held)
    assert not any(node_singles(env, st).values()), node_singles(env, st)
    sub = {e["id"]: e["subnet"] for e in env.node_enis(st)}
    assert {sub[e] for e, p in node_prefixes(env, st).items() if p} == \
        {b_id}
    assert "subnet %s: no prefix to be had" % a_id in env.enid.text()
    assert "subnet %s: no prefix" % b_id not in env.enid.text()
    check_pods(env)


def test_fragmented_subnets_fall_back_to_singles_then_recover(make_env):
    """Both subnets fragmented: each is asked for a /28 once, refuses,
    and growth takes single addresses instead, in time for every ADD that
    waits meanwhile (the first refusal comes late: the sim holds the
    call).  The inhibit ends by itself: once fragmentation is cleared and
    prefix_backoff_s is over, growth takes prefixes again."""
    backoff = 4
    env = make_env(both_subnets=True,
                   pool=pool_conf(warm_prefix_target=0, warm_ip_target=2,
                                  add_timeout_s=8, prefix_backoff_s=backoff))
    subnets = [s["id"] for s in env.ep["subnets"]]
    for sid in subnets:
        assert fragment(env, sid)["free_prefixes"] == 0
    env.faults([{"action": "AssignPrivateIpAddresses", "latency_ms": 1000,
                 "count": 1}])
    env.start()
    cids = ["s%d" % i for i in range(12)]
    got = concurrent_adds(env, cids)
    slow = {c: a for c, (a, t) in got.items() if not a.get("ok") or t >= 8}
    assert not slow, (slow, env.enid.text()[-3000:])
    refused_at = time.monotonic()
    st = env.state()
    assert not all_node_prefixes(env, st), node_prefixes(env, st)
    # Each subnet refused once, and was not asked again while inhibited.
    assert errors(env, "InsufficientCidrBlocks", st) == 2, st["errors"]
    text = env.enid.text()
    for sid in subnets:
        assert text.count("subnet %s: no prefix to be had" % sid) == 1, sid
    for c in cids[:4]:
        env.wire(c, got[c][0]["ip"])
    check_pods(env)

    for sid in subnets:
        fragment(env, sid, False)
    # The inhibit began before the last ADD was answered.
    time.sleep(max(0, refused_at + backoff + 0.5 - time.monotonic()))
    before = set(check_pods(env, ping=False))
    news = []
    for i in range(6):
        a = env.add_and_ping("r%d" % i)
        news.append(a["ip"])
        if in_any(a["ip"], all_node_prefixes(env)):
            break
    held = all_node_prefixes(env)
    assert held, (news, node_prefixes(env))
    assert in_any(news[-1], held), (news, held)
    assert before <= set(check_pods(env))


def test_instance_that_cannot_hold_prefixes(make_env):
    """An m4.large (Xen) with prefix_delegation on: enid starts, says so
    once, and serves pods with single addresses, never asking for a
    prefix."""
    env = make_env(sim_args=("--node-type", "0:m4.large"),
                   pool=pool_conf(warm_prefix_target=1, warm_ip_target=2))
    env.start()
    for i in range(3):
        env.add_and_ping("x%d" % i)
    env.reconcile()
    st = env.state()
    assert not all_node_prefixes(env, st)
    assert sum(len(s) for s in node_singles(env, st).values()) >= 3
    assert errors(env, "UnsupportedOperation", st) == 0, st["errors"]
    text = env.enid.text()
    assert text.count("cannot hold prefixes") == 1, text
    assert "instance type m4.large" in text
    check_pods(env)


# ---- kill -9 ----

def calls(env, action, st=None):
    return (st or env.state())["calls"].get(action, 0)


def settled(env):
    """The pool as the cloud has it: every ENI and every prefix the cloud
    gives node 0 is in the pool (no_leaks), and every single address
    too, and the pool asks nothing of the cloud."""
    if not no_leaks(env):
        return None
    st = env.state()
    pool = {e["id"]: e for e in env.show("enis")}
    for eid, singles in node_singles(env, st).items():
        held = {a["ip"] for a in pool[eid]["addresses"]}
        pfx = node_prefixes(env, st)[eid]
        if {ip for ip in held if not in_any(ip, pfx)} != singles:
            return None
    return env.show("pool")["waiting"] == 0 or None


def fill(env, tag, n):
    """n pods more (not wired: their addresses are all that matters)."""
    out = {}
    for i in range(n):
        a, _ = env.add("%s%d" % (tag, i))
        assert a["ok"], a
        out["%s%d" % (tag, i)] = a["ip"]
    return out


def test_kill9_while_a_prefix_is_assigned(make_env):
    """kill -9 while the cloud takes its time over an assign of a prefix
    (the sim holds the call): the cloud delegates the prefix after enid
    is gone.  The restart's pool takes it in once a reconciliation sees
    it; nothing is leaked, no pod's address is another's, and the pool
    gives back what it does not need."""
    env = make_env(pool=pool_conf(warm_prefix_target=0, warm_ip_target=1,
                                  shrink_delay_s=0))
    env.start()
    env.add_and_ping("a0")
    acked = fill(env, "a", 15)        # a0 again, and 14 more: one free
    env.wait(lambda: len(all_node_prefixes(env)) == 1 and
             settled(env), 10, "one prefix")
    late_s = 2.5
    env.faults([{"action": "AssignPrivateIpAddresses",
                 "latency_ms": late_s * 1000, "count": 1}])
    n = calls(env, "AssignPrivateIpAddresses")
    # The prefix's last address: the warm target wants one more.
    a = env.add_and_ping("last")
    acked["last"] = a["ip"]
    env.wait(lambda: calls(env, "AssignPrivateIpAddresses") > n, 5,
             "an assign of a prefix sent")
    t_sent = time.monotonic()
    before = all_node_prefixes(env)
    env.kill9()
    env.clear_faults()
    env.start()
    # Served at once, from what the restart knows.
    a = env.add_and_ping("b0")
    acked["b0"] = a["ip"]
    env.wait(lambda: time.monotonic() > t_sent + late_s + 0.2 and
             len(all_node_prefixes(env)) > len(before), late_s + 5,
             "the late assign applied")
    env.reconcile()
    # 17 pods and one warm: two prefixes, the third given back.
    env.wait(lambda: settled(env) and len(all_node_prefixes(env)) == 2, 20,
             "the pool as the cloud has it", step=0.3)
    pods = check_pods(env)
    assert {c: p["ip"] for c, p in pods.items()} == acked
    assert all(p["state"] == "ready" for p in pods.values()), pods
    assert all(in_any(ip, all_node_prefixes(env)) for ip in acked.values())


def test_kill9_while_an_eni_with_a_prefix_is_created(make_env):
    """kill -9 while the cloud takes its time over creating an ENI with a
    prefix: it makes the ENI after enid is gone, tagged for this node and
    attached to nothing.  The restart's pool grows on its own, and the
    orphan is deleted, prefix and all: by the leak collector once it is
    older than grace_s, or at once by the restart's first look if it is
    there already; nothing else leaks."""
    env = make_env(sim_args=("--eni-limit", "3", "--ip-limit", "3"),
                   pool=pool_conf(warm_prefix_target=2),
                   leak_gc={"enabled": True, "grace_s": 1})
    env.start()
    # Two prefixes fill the primary ENI's two slots.
    env.wait(lambda: len(all_node_prefixes(env)) == 2 and settled(env), 10,
             "the primary ENI full")
    late_s = 2.5
    env.faults([{"action": "CreateNetworkInterface",
                 "latency_ms": late_s * 1000, "count": 1}])
    env.add_and_ping("c0")
    env.wait(lambda: calls(env, "CreateNetworkInterface") >= 1, 5,
             "an ENI with a prefix asked for")
    t_sent = time.monotonic()
    env.kill9()
    env.clear_faults()
    env.start()
    env.add_and_ping("c1")

    def orphans():
        return {e["id"] for e in env.node_enis()
                if e["status"] == "available"}
    env.wait(lambda: time.monotonic() > t_sent + late_s + 0.2, late_s + 1,
             "the late ENI made")
    env.reconcile()
    env.wait(lambda: not orphans() and settled(env), 20,
             "the orphan deleted", step=0.3)
    st = env.state()
    assert calls(env, "CreateNetworkInterface", st) == 2
    assert calls(env, "DeleteNetworkInterface", st) == 1
    # "(leaked)", or "(left over from before a restart...)"
    assert "deleted (le" in env.enid.text()
    assert len(env.node_enis(st)) == 2
    assert len(all_node_prefixes(env)) == 3
    pods = check_pods(env)
    assert set(pods) == {"c0", "c1"}


def test_kill9_while_a_prefix_is_given_back(make_env):
    """kill -9 while the cloud takes its time over giving back a wholly
    free prefix (the sim holds the unassign).  The restart's first look
    still finds the prefix; its addresses go to no pod until the cloud is
    seen without it, which a reconciliation does once the unassign lands:
    then the pool drops it.  Pods served meanwhile get other addresses,
    and none is lost."""
    env = make_env(pool=pool_conf(warm_prefix_target=0, warm_ip_target=1,
                                  shrink_delay_s=0))
    env.start()
    env.add_and_ping("g0")
    acked = fill(env, "g", 16)        # g0 again, and 15 more: a prefix full
    env.wait(lambda: len(all_node_prefixes(env)) == 2 and settled(env), 10,
             "two prefixes")
    late_s = 8      # past the restart, also on a busy machine
    env.faults([{"action": "UnassignPrivateIpAddresses",
                 "latency_ms": late_s * 1000, "count": 1}])
    # One pod fewer: the second prefix is wholly free and surplus.
    ans, _ = env.delete("g15")
    assert ans == {"ok": True}, ans
    del acked["g15"]
    env.wait(lambda: calls(env, "UnassignPrivateIpAddresses") >= 1, 5,
             "an unassign of a prefix sent")
    t_sent = time.monotonic()
    going = {p for p in all_node_prefixes(env)
             if "prefix %s is wholly free" % p in env.enid.text()}
    assert len(going) == 1, (going, env.enid.text()[-2000:])
    env.kill9()
    env.clear_faults()
    env.start()
    assert time.monotonic() < t_sent + late_s, "the restart took too long"
    assert going <= all_node_prefixes(env)    # not applied yet
    for i in range(3):
        a = env.add_and_ping("h%d" % i)
        assert not in_any(a["ip"], going), (a, going)
        acked["h%d" % i] = a["ip"]
    env.wait(lambda: not going & all_node_prefixes(env), late_s + 5,
             "the late unassign applied")
    env.reconcile()
    env.wait(lambda: settled(env) and not going & all_pool_prefixes(env),
             15, "the prefix the cloud took back dropped", step=0.3)
    pods = check_pods(env)
    assert {c: p["ip"] for c, p in pods.items()} == acked
    assert all(p["state"] == "ready" for p in pods.values()), pods


# ---- switching modes ----

def test_mode_switched_with_pods_running(make_env):
    """prefix_delegation switched off (SIGTERM, restart) and on again
    (kill -9, restart) under running pods: they keep their addresses and
    keep pinging, no address is any other pod's, and the pool converges
    on the new mode: off, a wholly free prefix is given back and growth
    takes single addresses; on, growth takes prefixes again."""
    env = make_env(pool=pool_conf(warm_prefix_target=1, shrink_delay_s=0))
    env.start()
    for i in range(4):
        env.add_and_ping("m%d" % i)
    env.wait(lambda: len(all_node_prefixes(env)) == 2, 10, "two prefixes")
    ips = {c: p["ip"] for c, p in check_pods(env).items()}
    (p1,) = {p for p in all_node_prefixes(env)
             if all(in_any(ip, [p]) for ip in ips.values())}

    env.enid.stop()
    rewrite(env, prefix_delegation=False, warm_ip_target=2)
    env.start()
    assert {c: p["ip"] for c, p in check_pods(env).items()} == ips
    # Four pods and two warm: the prefix without a pod goes back.
    env.wait(lambda: all_node_prefixes(env) == {p1} and settled(env), 15,
             "the wholly free prefix given back", step=0.3)
    assert "pool: prefix delegation" not in env.enid.text()
    # Growth takes singles: fill the prefix, then one more pod.
    single = None
    for i in range(20):
        a, _ = env.add("n%d" % i)
        assert a["ok"], a
        ips["n%d" % i] = a["ip"]
        if not in_any(a["ip"], [p1]):
            single = ("n%d" % i, a["ip"])
            break
    assert single is not None, ips
    env.wire(*single)
    st = env.state()
    assert all_node_prefixes(env, st) == {p1}, node_prefixes(env, st)
    assert any(single[1] in s for s in node_singles(env, st).values())
    assert {c: p["ip"] for c, p in check_pods(env).items()} == ips

    env.kill9()
    rewrite(env, prefix_delegation=True, warm_ip_target=0)
    env.start()
    assert {c: p["ip"] for c, p in check_pods(env).items()} == ips
    # A prefix's worth free again: a new prefix, not singles.
    env.wait(lambda: len(all_node_prefixes(env)) == 2 and settled(env) and
             env.show("pool")["free"] >= 16, 15, "a new prefix", step=0.3)
    for i in range(2):
        a = env.add_and_ping("o%d" % i)
        ips["o%d" % i] = a["ip"]
    assert {c: p["ip"] for c, p in check_pods(env).items()} == ips


# ---- giving back ----

def by_prefix(ips, prefixes):
    """{prefix: set of the ips in it}."""
    return {p: {ip for ip in ips if in_any(ip, [p])} for p in prefixes}


def test_prefix_given_back_only_when_wholly_free(make_env):
    """Pods over two prefixes, then deleted: a prefix one of whose
    addresses is assigned is never given back (the surplus freezes a
    prefix instead), nor one of whose addresses cools (ip_cooldown_s); it
    goes back once the last cools out, and the other, which still holds
    pods, stays."""
    cool_s = 2
    env = make_env(pool=pool_conf(warm_prefix_target=0, warm_ip_target=1,
                                  shrink_delay_s=0, ip_cooldown_s=cool_s,
                                  prefix_freeze_s=60),
                   reconcile_interval_s=3600)
    env.start()
    ips = fill(env, "s", 18)
    pfx = all_node_prefixes(env)
    assert len(pfx) == 2, pfx
    groups = by_prefix(ips.values(), pfx)
    (p1,) = [p for p, g in groups.items() if len(g) == 16]
    (p2,) = [p for p, g in groups.items() if len(g) == 2]
    in1 = sorted(c for c, ip in ips.items() if in_any(ip, [p1]))
    in2 = sorted(c for c, ip in ips.items() if in_any(ip, [p2]))
    keeper = in1[0]
    env.wire(keeper, ips[keeper])
    env.wire(in2[0], ips[in2[0]])

    def unassigns():
        return calls(env, "UnassignPrivateIpAddresses")
    for c in in1[1:]:
        ans, _ = env.delete(c)
        assert ans == {"ok": True}, ans
    # A surplus of a prefix's worth once they cool, and no prefix wholly
    # free: one is frozen, so that it may drain; nothing is given back.
    env.wait(lambda: " frozen for 60 s" in env.enid.text(), cool_s + 5,
             "a prefix frozen")
    env.wait(lambda: env.show("pool")["cooling"] == 0, 5, "cooled")
    check_pods(env)
    assert all_node_prefixes(env) == {p1, p2} and unassigns() == 0
    # The last pod of p1 goes: p1 cools, and is not given back until the
    # address has cooled out.
    ans, _ = env.delete(keeper)
    t_del = time.monotonic()
    env.unwire(keeper)
    assert ans == {"ok": True}, ans
    while time.monotonic() < t_del + cool_s - 0.5:
        assert all_node_prefixes(env) == {p1, p2}, "given back while cooling"
        assert unassigns() == 0
        time.sleep(0.1)
    env.wait(lambda: all_node_prefixes(env) == {p2}, 10, "p1 given back")
    assert unassigns() == 1
    assert "prefix %s is wholly free and surplus" % p1 in env.enid.text()
    assert "prefix %s is wholly free" % p2 not in env.enid.text()
    env.wait(lambda: settled(env), 5, "the pool as the cloud has it")
    a = env.add_and_ping("new")
    assert in_any(a["ip"], [p2]), (a, p2)
    pods = check_pods(env)
    assert set(pods) == set(in2) | {"new"}


# Not strict: a broker starved through the whole window in which the
# addresses cool out one by one plans once, when none cools, and picks p1.
def test_freeze_picks_the_prefix_with_fewest_pods(make_env):
    """Most pods of the fuller prefix leave at once: once enough of their
    addresses have cooled out for a prefix's worth of surplus, the prefix
    to freeze (to drain) is the one with the fewest pods, p1 (one pod,
    the rest cooling for a moment longer), not p2 (two pods).  Freezing
    p2 sends new pods to p1, which then never drains."""
    cool_s = 2
    env = make_env(pool=pool_conf(warm_prefix_target=0, warm_ip_target=1,
                                  shrink_delay_s=0, ip_cooldown_s=cool_s,
                                  prefix_freeze_s=60),
                   reconcile_interval_s=3600)
    env.start()
    ips = fill(env, "z", 18)
    groups = by_prefix(ips.values(), all_node_prefixes(env))
    (p1,) = [p for p, g in groups.items() if len(g) == 16]
    in1 = sorted(c for c, ip in ips.items() if in_any(ip, [p1]))
    for c in in1[1:]:
        ans, _ = env.delete(c)
        assert ans == {"ok": True}, ans
    env.wait(lambda: " frozen for 60 s" in env.enid.text(), cool_s + 5,
             "a prefix frozen")
    frozen = [x for x in env.enid.text().splitlines() if " frozen " in x]
    assert len(frozen) == 1 and "prefix %s frozen" % p1 in frozen[0], \
        (p1, frozen)


# ---- reconciliation ----

def test_reconcile_prefixes_behind_enids_back(make_env):
    """A prefix unassigned behind enid's back: a reconciliation drops it,
    and its pods are lost.  Prefixes assigned behind its back are taken
    in, but not an address a lost pod still has (the cloud delegated its
    prefix again).  A restart rebuilds the prefixes from the cloud's
    listing alone (the checkpoint holds pods, not prefixes): pods keep
    their addresses, and enid and the cloud agree."""
    env = make_env(pool=pool_conf(warm_prefix_target=1),
                   reconcile_interval_s=3600)
    env.start()
    for c in ("r0", "r1"):
        env.add_and_ping(c)
    env.wait(lambda: len(all_node_prefixes(env)) == 2 and settled(env), 10,
             "two prefixes")
    pods = check_pods(env)
    eni = pods["r0"]["eni"]
    lost = {pods[c]["ip"] for c in ("r0", "r1")}
    (p1,) = {p for p in all_node_prefixes(env) if in_any(pods["r0"]["ip"],
                                                         [p])}
    ec2 = env.ec2()
    ec2.unassign_private_ip_addresses(NetworkInterfaceId=eni,
                                      Ipv4Prefixes=[p1])
    env.reconcile()
    pods = check_pods(env, ping=False)
    assert {c: p["state"] for c, p in pods.items()} == \
        {"r0": "lost", "r1": "lost"}
    assert p1 not in all_pool_prefixes(env)
    assert not lost & {a["ip"] for e in env.show("enis")
                       for a in e["addresses"]}
    assert "prefix %s is no longer delegated by the cloud; dropped" % p1 \
        in env.enid.text()

    # Behind its back: a new prefix, and the lost pods' one again.
    q = "10.0.9.0/28"
    ec2.assign_private_ip_addresses(NetworkInterfaceId=eni,
                                    Ipv4Prefixes=[q])
    ec2.assign_private_ip_addresses(NetworkInterfaceId=eni,
                                    Ipv4Prefixes=[p1])
    env.reconcile()
    text = env.enid.text()
    for p in (q, p1):
        assert "the cloud delegates prefix %s, which the pool did not " \
            "have; added" % p in text
    pool = {a["ip"]: a["state"] for e in env.show("enis")
            for a in e["addresses"]}
    assert all(pool.get(str(ip)) == "free" for ip in net(q)), pool
    assert not lost & set(pool), lost & set(pool)
    assert {str(ip) for ip in net(p1)} - lost <= set(pool)
    for ip in lost:
        assert "%s is still the address of pod" % ip in text
    for i in range(3):
        a = env.add_and_ping("t%d" % i)
        assert a["ip"] not in lost, a
    for c in ("r0", "r1"):
        ans, _ = env.delete(c)
        assert ans == {"ok": True}, ans

    # A restart learns every prefix from the cloud's listing.
    ips = {c: p["ip"] for c, p in check_pods(env).items()}
    env.kill9()
    env.start()
    assert {c: p["ip"] for c, p in check_pods(env).items()} == ips
    env.wait(lambda: settled(env), 5, "the pool as the cloud has it")
    assert all_pool_prefixes(env) == all_node_prefixes(env) >= {p1, q}


def test_lost_pods_address_comes_back_to_its_prefix(make_env):
    """A prefix is unassigned behind enid's back (its pod is lost) and
    then delegated again: its address that the lost pod still has is
    left out while the pod lives.  Once the runtime deletes the pod, a
    reconciliation must take the address back, as it does a single
    address: the prefix is whole in the pool again."""
    env = make_env(pool=pool_conf(warm_prefix_target=1),
                   reconcile_interval_s=3600)
    env.start()
    a, _ = env.add("l0")
    assert a["ok"], a
    # l0's prefix, and one more for the warm target: dropping the first
    # leaves the pool what it needs, so it asks for nothing meanwhile.
    env.wait(lambda: len(all_node_prefixes(env)) == 2 and settled(env), 10,
             "two prefixes")
    (p1,) = {p for p in all_node_prefixes(env) if in_any(a["ip"], [p])}
    ec2 = env.ec2()
    ec2.unassign_private_ip_addresses(NetworkInterfaceId=a["eni"],
                                      Ipv4Prefixes=[p1])
    env.reconcile()
    ec2.assign_private_ip_addresses(NetworkInterfaceId=a["eni"],
                                    Ipv4Prefixes=[p1])
    env.reconcile()
    assert "%s is still the address of pod l0/eth0" % a["ip"] in \
        env.enid.text()
    ans, _ = env.delete("l0")
    assert ans == {"ok": True}, ans
    env.reconcile()
    assert p1 in all_pool_prefixes(env), pool_prefixes(env)


# ---- answers the cloud should never have given ----

def prefix_ips(*prefixes):
    """The addresses of prefixes, or of the network a bad one names."""
    return {str(ip) for p in prefixes
            for ip in ipaddress.ip_network(p, strict=False)}


def test_bad_prefixes_in_the_clouds_answers_are_refused(make_env):
    """The cloud's answers (rewritten by hostile_ec2.py, in front of the
    sim) name prefixes that are not whole /28s (/27, misaligned, a bare
    address), outside the ENI's subnet or the VPC, or another ENI's.
    Each is refused with a line that names it, whether a growth's answer
    or a reconciliation's listing brings it; the pool goes on with the
    valid ones the cloud really delegates, and the pods keep working."""
    env = make_env(cls=CloudEnv, sim_args=("--eni-limit", "3",
                                           "--ip-limit", "3"),
                   pool=pool_conf(warm_prefix_target=3),
                   reconcile_interval_s=3600)
    # At start, two prefixes on the primary ENI (its two slots), and an
    # ENI with one more: the assign's answer names a /27 among its two.
    env.rules({"id": "len", "action": "AssignPrivateIpAddresses",
               "mode": "assign-prefixes",
               "replace": ["10.0.7.0/27", "10.0.7.32/28"]})
    env.start()
    env.wait(lambda: '"10.0.7.0/27" is not an aligned /28' in env.log(),
             10, "the /27 refused")
    env.rules()
    env.wait(lambda: settled(env) and env.show("pool")["free"] >= 48, 10,
             "the prefixes the cloud did delegate taken in")
    # The first pod's growth: its answer (an assign's, or a new ENI's)
    # names a prefix of the other subnet.
    outside = "10.0.16.48/28"
    env.rules({"id": "out", "action": "AssignPrivateIpAddresses",
               "mode": "assign-prefixes", "replace": [outside]},
              {"id": "out", "action": "CreateNetworkInterface",
               "mode": "create", "replace_prefixes": [outside]})
    env.add_and_ping("b0")
    needle = "the cloud named prefix %s, not inside subnet" % outside
    env.wait(lambda: needle in env.log(), 10, "the other subnet's refused")
    env.rules()
    env.reconcile()
    env.wait(lambda: settled(env), 10, "the prefix the cloud did delegate")
    assert not prefix_ips(outside, "10.0.7.0/27", "10.0.7.32/28") & {
        a["ip"] for e in env.show("enis") for a in e["addresses"]}
    held = node_prefixes(env)
    primary = env.node["primary_eni"]
    other = next(e for e, p in held.items() if e != primary and p)
    assert len(held[primary]) == 2, held

    # A reconciliation's listing, one lie at a time: those the broker
    # refuses, then those enid-cloudd leaves out (the broker would take a
    # message with a prefix twice, or over an address of the ENI's own,
    # for a broken helper's, and stop).
    p_primary = sorted(held[primary])[0]
    p_other = sorted(held[other])[0]
    own = next(e for e in env.node_enis() if e["id"] == other)
    own = str(ipaddress.ip_network(own["addresses"][0] + "/28", strict=False))
    named = "the cloud named prefix %s, "
    cases = [
        ("10.0.16.64/28", named + "not inside subnet"),
        ("192.0.2.0/28", named + "not inside subnet"),
        (p_primary, named + "a prefix of " + primary),
        ("10.0.0.200/28", None),
        ("10.0.1.0/27", None),
        ("10.0.1.16", None),
        (p_other, None),
        (own, None),
    ]
    for bad, line in cases:
        w = Watch(env)
        env.rules({"id": bad, "action": "DescribeNetworkInterfaces",
                   "mode": "describe", "match": {"id": other},
                   "add_prefixes": [bad]})
        env.reconcile()
        assert env.changed(bad), bad
        if line is None:
            needle = "carries 1 prefixes that are not aligned"
            line = "left out, not an aligned /28, named twice or over an " \
                "address of the ENI's (\"%s\")"
        else:
            needle = "the cloud named prefix"
        foreign = prefix_ips(bad) if bad not in (p_primary, p_other) \
            else set()
        w.check(bad_addrs=foreign, needle=needle)
        assert line % bad in w.new_log(), (line, w.new_log()[-2000:])
        # The pool as the cloud really has it.
        assert pool_prefixes(env) == node_prefixes(env), bad
        check_pods(env)
    env.rules()
    env.reconcile()
    a = env.add_and_ping("b1")
    assert in_any(a["ip"], all_node_prefixes(env)), a
    assert settled(env)
    check_pods(env)


def test_assign_answer_that_repeats_a_held_prefix(make_env):
    """An assign of two prefixes is answered with one the ENI holds
    already and one more (EC2 delegated two others).  The repeat is
    named, the pool learns at once what the cloud really delegated (a
    reconciliation), not an interval later, and pods get addresses the
    cloud routes."""
    env = make_env(cls=CloudEnv, pool=pool_conf(warm_prefix_target=3),
                   reconcile_interval_s=3600)
    primary = env.node["primary_eni"]
    ec2 = env.ec2()
    (held,) = [x["Ipv4Prefix"] for x in ec2.assign_private_ip_addresses(
        NetworkInterfaceId=primary, Ipv4PrefixCount=1)[
        "AssignedIpv4Prefixes"]]
    made_up = "10.0.15.224/28"
    env.rules({"id": "again", "action": "AssignPrivateIpAddresses",
               "mode": "assign-prefixes", "replace": [held, made_up],
               "count": 1})
    env.start()
    env.wait(lambda: env.changed("again"), 10, "the answer rewritten")
    (ch,) = env.changed("again")
    assert len(ch["was"]) == 2 and held not in ch["was"], ch
    env.wait(lambda: "the cloud named prefix %s, which it holds already"
             % held in env.log(), 10, "the repeat named")
    env.wait(lambda: settled(env), 10, "the pool as the cloud has it")
    assert made_up not in all_node_prefixes(env)
    assert made_up not in all_pool_prefixes(env)
    assert set(ch["was"]) <= all_pool_prefixes(env)
    for i in range(3):
        env.add_and_ping("g%d" % i)
    check_pods(env)


def test_pod_past_enids_own_cap_is_refused_at_once(make_env):
    """Issue 34, item 6: the pod after the last one enid can hold, where
    enid's own tables bind (common/maxima.h), not the cloud's limits nor
    max_pods, is refused at once as max-pods, saying which; it waited
    the whole add_timeout before, or was told eni-limit, as if the
    instance had no room.  Here one ENI (the instance's limit) of 63
    slots: EC2 would delegate 63 prefixes, enid's table of an ENI holds
    16 (ENID_MAX_ENI_PREFIXES), so 256 pods; the planner's other enid
    cap, ENID_MAX_PODS, is the same rule (tests/unit/test_pool.c)."""
    env = make_env(("--eni-limit", "1", "--ip-limit", "64"),
                   pool=pool_conf(warm_prefix_target=1, add_timeout_s=20))
    env.start()
    fill_then_one_over(env, 16 * 16, "cap", "ENID_MAX_ENI_PREFIXES", 60)


def fill_then_one_over(env, n, name, cap, timeout):
    """n pods, enid's most (show limits says so), then one more: refused
    at once as max-pods, naming the cap that binds."""
    from concurrent.futures import ThreadPoolExecutor
    assert env.show("limits")["max_pods"] == n
    t0 = time.monotonic()
    with ThreadPoolExecutor(16) as ex:
        answers = list(ex.map(lambda i: env.add("%s%d" % (name, i),
                                                timeout=timeout)[0],
                              range(n)))
    bad = [a for a in answers if not a["ok"]]
    assert not bad, bad[:3]
    took_all = time.monotonic() - t0
    t0 = time.monotonic()
    a, _ = env.add(name + "-over", timeout=60)
    took = time.monotonic() - t0
    assert not a["ok"] and a["code"] == "max-pods", (a, took)
    assert cap in a["error"], a
    assert took < 5, (took, a)
    print("%d pods in %.1f s; the next refused in %.3f s"
          % (n, took_all, took))


@pytest.mark.long_wait     # 2048 pods: the plain pass only
def test_pod_past_enid_max_pods_is_refused_at_once(make_env):
    """Issue 34, item 6, as found: an m5.metal (15 ENIs of 50) with
    prefixes would take 3840 pods as enid's tables of an ENI count them,
    but enid holds 2048 (ENID_MAX_PODS); the next, with max_pods unset,
    waited its add_timeout and was told the pool was growing."""
    env = make_env(("--node-type", "0:m5.metal"),
                   pool=pool_conf(warm_prefix_target=4, add_timeout_s=20))
    env.start()
    fill_then_one_over(env, 2048, "mp", "ENID_MAX_PODS", 90)
