"""The pool engine end to end (issue 8's scenarios): enid in a node of
tests/vpcsim, CNI requests on the real cni.sock, pods wired with iproute2
that must ping the VPC host, the sim's state endpoint as the cloud's truth.

The sim runs with small limits (--ip-limit 4: three secondary addresses
per ENI; --eni-limit 4) so growth and exhaustion come after a few pods.
"""
import itertools
import json
import os
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from poolenv import PoolEnv

PRIMARY_LIMITS = ("--ip-limit", "4", "--eni-limit", "4")
_seq = itertools.count()


@pytest.fixture
def make_env(workdir, enid_user, helper_dir):
    envs = []

    def make(sim_args=PRIMARY_LIMITS, nodes=1, **conf):
        prefix = "ep%d%d" % (os.getpid() % 10000, next(_seq))
        env = PoolEnv(workdir, enid_user, helper_dir, nodes=nodes,
                      sim_args=sim_args, prefix=prefix, **conf)
        envs.append(env)
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
    base = {"add_timeout_s": 10, "ip_cooldown_s": 0, "link_timeout_s": 10}
    base.update(pool)
    return base


def attached_ids(env, st=None):
    iid = env.node["instance_id"]
    return {e["id"] for e in (st or env.state())["enis"]
            if e.get("instance_id") == iid}


def pool_matches_cloud(env):
    """enid's ready ENIs and their secondary addresses equal the cloud's
    attached ENIs and theirs (the cloud lists the primary address first)."""
    st = env.state()
    iid = env.node["instance_id"]
    cloud = {e["id"]: set(e["addresses"][1:]) for e in st["enis"]
             if e.get("instance_id") == iid
             and e["attachment"]["status"] == "attached"}
    mine = {e["id"]: {a["ip"] for a in e["addresses"]}
            for e in env.show("enis")
            if e["state"] in ("ready", "draining")}
    return cloud == mine or None


def concurrent(fn, args):
    """Run fn(*a) for each a in threads; [(a, result, finished at)]."""
    out = [None] * len(args)

    def run(i, a):
        try:
            r = fn(*a)
        except (OSError, ValueError) as e:    # enid killed mid-request
            r = ({"ok": False, "code": "connection", "error": str(e)}, 0)
        out[i] = (a, r, time.monotonic())

    ts = [threading.Thread(target=run, args=(i, a))
          for i, a in enumerate(args)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert all(o is not None for o in out), "a request never returned"
    return out


def no_leaks(env):
    """Every ENI the sim holds for this node is attached to it and known
    to the pool, and nothing enid created is left available."""
    st = env.state()
    mine = {e["id"] for e in env.show("enis")}
    for e in env.node_enis(st):
        if e["status"] == "available":
            return False
        if e["id"] not in mine:
            return False
    return True


def errors_of(env, code):
    return sum(c.get(code, 0) for c in env.state()["errors"].values())


# ---- 1. late link ----

def test_late_link_then_never(make_env):
    env = make_env(sim_args=("--ip-limit", "4", "--eni-limit", "8"),
                   pool=pool_conf(link_timeout_s=6, add_timeout_s=8))
    # The first secondary ENI's link comes 3 s after its attach.
    env.links({"delay_ms": 3000, "next": 1})
    env.start()
    primary = env.node["primary_eni"]
    t0 = time.monotonic()
    answers = []
    for i in range(6):
        a, _ = env.add("late%d" % i, timeout=30)
        answers.append(a)
        if a["ok"]:
            p = env.wire("late%d" % i, a["ip"])
            assert p.ping(env.ep["vpc_host"], wait=2), a
        else:
            assert a["code"] in ("no-address", "timeout"), a
    # The first secondary ENI the sim made is the late one: it is ready
    # and holds pods (which pinged above).
    first = [e["id"] for e in env.node_enis() if e["id"] != primary][0]
    enis = {e["id"]: e for e in env.show("enis")}
    assert enis[first]["state"] == "ready", enis[first]
    assert any(a["ok"] and a["eni"] == first for a in answers), answers
    assert "quarantined" not in env.enid.text()
    assert time.monotonic() - t0 < 60
    assert "link" in env.enid.text()

    # From now on links never appear: the next ENI is quarantined and
    # removed; no address of it is ever handed out.
    env.links({"never": True})
    before = set(enis)
    codes = []
    for i in range(6, 40):
        a, _ = env.add("late%d" % i, timeout=30)
        if a["ok"]:
            assert a["eni"] in before, a
            p = env.wire("late%d" % i, a["ip"])
            assert p.ping(env.ep["vpc_host"], wait=2), a
        else:
            codes.append(a["code"])
            assert a["code"] in ("no-address", "timeout"), a
        if codes:
            break
    assert codes, "the pool never needed the ENI whose link never came"
    log = env.enid
    assert log.wait_log("quarantined", 20), log.text()

    def removed():
        st = env.state()
        ids = {e["id"] for e in env.node_enis(st)}
        return ids <= before
    env.wait(removed, 30, "the quarantined ENI's removal from the cloud")
    st = env.state()
    assert errors_of(env, "InvalidNetworkInterface.InUse") == 0, st["errors"]
    # every address handed out is on an ENI that was set up
    for p in env.show("pods"):
        assert p["eni"] in before, p


# ---- 2. subnet exhausted ----

def test_subnet_exhausted_fails_fast_then_recovers(make_env):
    # No warm targets: the pool grows only when an ADD needs it.
    env = make_env(pool=pool_conf(subnet_backoff_s=600, warm_eni_target=0))
    sid = env.node["subnet_id"]
    env.conf_extra["subnets"] = [{"id": sid}]
    env.conf = __import__("conftest").write_config(
        env.workdir, env.enid_user, **env.conf_extra)
    env.start()
    held = []
    for i in range(2):
        a, _ = env.add("held%d" % len(held))
        assert a["ok"], a
        held.append("held%d" % len(held))
    # Take every free address, with pods deleted later, until the pool
    # is still: no ENI on its way, nothing free.
    end = time.monotonic() + 30
    while time.monotonic() < end:
        if env.show("pool")["free"] > 0:
            a, _ = env.add("held%d" % len(held))
            assert a["ok"], a
            held.append("held%d" % len(held))
        elif all(e["state"] == "ready" for e in env.show("enis")):
            break
        else:
            time.sleep(0.1)
    assert env.show("pool")["free"] == 0
    # The subnet runs dry, slowly: growth fails after 2 s.
    env.faults([{"action": "CreateNetworkInterface", "latency_ms": 2000,
                 "count": 1},
                {"action": "AssignPrivateIpAddresses", "latency_ms": 2000,
                 "count": 1}])
    env.subnet_free(sid, 0)
    t0 = time.monotonic()
    waiters = []
    th = threading.Thread(target=lambda: waiters.extend(concurrent(
        env.add, [("wait%d" % i,) for i in range(20)])))
    th.start()
    time.sleep(0.5)
    # DELs, CHECKs and status are answered at once while growth is stuck.
    dels = []
    for cid in held:
        a, t = env.delete(cid)
        assert a["ok"], a
        dels.append(t)
    th.join(60)
    # Under 50 ms as a rule; a loaded 2-core machine can stall any one
    # request (0.28 s seen once), so the median is held to 50 ms and
    # every DEL to 1 s.
    assert sorted(dels)[len(dels) // 2] < 0.05, dels
    assert max(dels) < 1.0, dels
    assert len(waiters) == 20
    codes = {r[1][0].get("code") for r in waiters if not r[1][0]["ok"]}
    failed = [r for r in waiters if not r[1][0]["ok"]]
    # Freed addresses may go to a few waiters (ip_cooldown_s is 0); the
    # rest hear "subnet-full", all within 1 s of each other, well before
    # add_timeout (10 s).
    assert codes == {"subnet-full"}, [r[1][0] for r in waiters]
    assert len(failed) >= 20 - len(held)
    ends = [r[2] - t0 for r in failed]
    assert max(ends) - min(ends) < 1.0, ends
    assert max(ends) < 2.0 + 1.0 + 1.0, ends
    subs = {s["id"]: s for s in env.show("subnets")}
    assert subs[sid]["inhibited_s"] > 0, subs
    assert "subnet-full" in env.enid.text() or \
        "out of addresses" in env.enid.text()
    a, t = env.add("while-inhibited")
    assert not a["ok"] and a["code"] == "subnet-full" and t < 0.5, (a, t)

    # Capacity comes back: a reconcile sees it, and ADDs work again,
    # without a restart.
    env.subnet_free(sid, 100)
    env.clear_faults()

    def added():
        a, _ = env.add("after")
        return a if a["ok"] else None
    a = env.wait(added, 30, "an ADD to succeed after the subnet recovered",
                 step=1)
    assert env.wire("after", a["ip"]).ping(env.ep["vpc_host"], wait=2)


def test_growth_moves_to_the_second_subnet(make_env):
    env = make_env(pool=pool_conf(subnet_backoff_s=600))
    subnets = [s["id"] for s in env.ep["subnets"]]
    first, second = subnets[0], subnets[1]
    # enid picks the subnet with the most free addresses: the first.
    env.subnet_free(first, 200)
    env.subnet_free(second, 100)
    env.conf_extra["subnets"] = [{"id": first}, {"id": second}]
    env.conf = __import__("conftest").write_config(
        env.workdir, env.enid_user, **env.conf_extra)
    env.start()
    env.wait(lambda: env.show("pool")["free"] > 0, 30, "a warm pool")
    # The first runs dry behind enid's back.
    env.subnet_free(first, 0)
    oks = []
    for i in range(12):
        a, _ = env.add("mv%d" % i)
        if not a["ok"]:
            break
        oks.append(a)
        assert env.wire("mv%d" % i, a["ip"]).ping(env.ep["vpc_host"],
                                                   wait=2), a
    st = env.state()
    by_id = {e["id"]: e for e in st["enis"]}
    used = {by_id[a["eni"]]["subnet"] for a in oks}
    assert second in used, (used, oks)
    subs = {s["id"]: s for s in env.show("subnets")}
    assert subs[first]["inhibited_s"] > 0, subs


# ---- 3. throttled cleanup ----

def test_throttled_cleanup_grows_to_limit_without_leaks(make_env):
    env = make_env(pool=pool_conf(add_timeout_s=30))
    env.faults([{"action": "ModifyNetworkInterfaceAttribute",
                 "code": "RequestLimitExceeded", "count": 10},
                {"action": "AttachNetworkInterface", "code": "InternalError",
                 "status": 500, "count": 1}])
    env.start()
    results = []
    for i in range(16):
        a, _ = env.add("thr%d" % i, timeout=60)
        results.append(a)
        if not a["ok"]:
            assert a["code"] in ("eni-limit", "ip-limit"), a
            break
        assert env.wire("thr%d" % i, a["ip"]).ping(env.ep["vpc_host"],
                                                    wait=2), a
    assert not results[-1]["ok"], "never reached the ENI limit"
    limit = env.state()["instances"][0]["limits"]["enis"]

    def settled():
        st = env.state()
        return (len(attached_ids(env, st)) == limit and no_leaks(env) and
                all(e["attachment"]["delete_on_termination"]
                    for e in env.node_enis(st) if e.get("attachment")))
    env.wait(settled, 60, "the pool at the ENI limit, no leaks, DOT set",
             step=0.5)
    st = env.state()
    assert errors_of(env, "AttachmentLimitExceeded") == 0, st["errors"]
    assert st["throttles"].get("ModifyNetworkInterfaceAttribute", 0) >= 10
    pool = env.show("pool")
    assert pool["cloud_attached"] == len(attached_ids(env, st)) == limit
    assert pool["enis"] == limit, pool


# ---- 4. crash ----

def check_consistent(env, acked):
    """No lost or duplicated assignment: the cloud has each acknowledged
    pod's address on an ENI of this node, enid holds it for that pod, no
    address twice, and nothing leaked."""
    st = env.state()
    iid = env.node["instance_id"]
    cloud = {}
    for e in st["enis"]:
        if e.get("instance_id") == iid:
            for ip in e["addresses"]:
                cloud[ip] = e["id"]
    pods = env.show("pods")
    ips = [p["ip"] for p in pods]
    assert len(ips) == len(set(ips)), pods
    held = {(p["container_id"]): p for p in pods}
    ck = env.checkpoint()
    ck_pods = {p["container_id"]: p for p in ck["pods"]}
    for cid, ip in acked.items():
        assert cid in held, (cid, pods)
        assert held[cid]["ip"] == ip, (cid, ip, held[cid])
        assert ip in cloud, (cid, ip)
        assert ck_pods[cid]["ip"] == ip
    # An ENI the pool is growing by is available in the cloud until its
    # attach: a leak is one that stays so.
    env.wait(lambda: no_leaks(env), 40, "no leaked ENI", step=0.5)


def test_kill9_mid_growth_and_mid_add(make_env):
    # room for every pod of the test: 5 x 5 addresses
    env = make_env(sim_args=("--ip-limit", "6", "--eni-limit", "6"),
                   pool=pool_conf(add_timeout_s=20))
    env.start()
    acked = {}
    for i in range(3):
        a, _ = env.add("k%d" % i)
        assert a["ok"], a
        acked["k%d" % i] = a["ip"]
    # Growth is slow to attach; kill -9 while ENIs are being made.
    env.faults([{"action": "AttachNetworkInterface", "latency_ms": 1500,
                 "count": 4}])
    out = []
    th = threading.Thread(target=lambda: out.extend(concurrent(
        env.add, [("g%d" % i,) for i in range(8)])))
    th.start()
    env.wait(lambda: env.state()["calls"].get("CreateNetworkInterface", 0)
             >= 2, 20, "growth under way")
    time.sleep(0.3)
    env.kill9()
    th.join(60)
    for (cid,), (a, _), _ in out:
        if a.get("ok"):
            acked[cid] = a["ip"]
    env.clear_faults()
    env.start()
    env.reconcile()
    env.wait(lambda: no_leaks(env), 40, "no leaked ENI after the restart",
             step=0.5)
    check_consistent(env, acked)

    # Mid-ADD: many ADDs in flight, kill -9 as the first answers come.
    out = []
    th = threading.Thread(target=lambda: out.extend(concurrent(
        env.add, [("m%d" % i,) for i in range(10)])))
    th.start()
    env.wait(lambda: len(env.checkpoint()["pods"]) > len(acked), 20,
             "an ADD in flight")
    env.kill9()
    th.join(60)
    for (cid,), (a, _), _ in out:
        if a.get("ok"):
            acked[cid] = a["ip"]
    env.start()
    env.reconcile()
    env.wait(lambda: no_leaks(env), 40, "no leaked ENI after the restart",
             step=0.5)
    check_consistent(env, acked)
    # A repeated ADD of an acknowledged pod gets the same address; the
    # unacknowledged ones get addresses nobody else holds.
    for cid, ip in acked.items():
        a, _ = env.add(cid)
        assert a["ok"] and a["ip"] == ip, (cid, ip, a)
    for i in range(10):
        cid = "m%d" % i
        if cid in acked:
            continue
        a, _ = env.add(cid)
        if a["ok"]:
            assert a["ip"] not in acked.values(), a
            acked[cid] = a["ip"]
    check_consistent(env, acked)
    for cid, ip in list(acked.items())[:4]:
        assert env.wire(cid, ip).ping(env.ep["vpc_host"], wait=2), cid


def netd_rules(env):
    """enid-netd's rules in the node (its protocol tag, 233)."""
    out = subprocess.run(["ip", "-n", env.ns, "-j", "rule"],
                         capture_output=True, text=True, check=True).stdout
    return [r for r in json.loads(out or "[]")
            if str(r.get("protocol")) == "233"]


def pod_rules(env):
    """netd's pods' rules: all but its connection-mark rule (a fwmark)."""
    return [r for r in netd_rules(env) if "fwmark" not in r]


def test_restart_restores_more_pods_than_netd_takes_at_once(make_env):
    """600 pods, more than the 512 rule requests the broker keeps in
    flight to netd: after a kill -9 and the loss of every pod rule, the
    restart queues the rest and restores them all."""
    env = make_env(sim_args=("--eni-limit", "14", "--ip-limit", "50"),
                   pool=pool_conf(add_timeout_s=60),
                   reconcile_interval_s=3600)
    env.start()

    def add(i):
        for _ in range(20):
            a, _ = env.add("r%03d" % i, timeout=90)
            if a.get("ok") or a.get("code") not in ("timeout", "busy",
                                                    "throttled"):
                return a
        return a
    with ThreadPoolExecutor(16) as ex:
        answers = list(ex.map(add, range(600)))
    bad = [a for a in answers if not a.get("ok")]
    assert not bad, bad[:3]
    primary = {e["id"] for e in env.show("enis") if e["primary"]}
    pods = env.show("pods")
    want = sum(1 if p["eni"] in primary else 2 for p in pods)
    assert len(pods) == 600 and len(pod_rules(env)) == want

    env.kill9()
    batch = "".join("rule del priority %s\n" % r["priority"]
                    for r in netd_rules(env))
    subprocess.run(["ip", "-n", env.ns, "-batch", "-"], input=batch,
                   text=True, check=True)
    assert pod_rules(env) == []
    env.start()
    env.wait(lambda: len(pod_rules(env)) == want, 60,
             "every pod's rules restored", step=0.5)
    assert len(env.show("pods")) == 600
    assert "restoring its rules" not in env.enid.text()


def rules_for(env, ip):
    return [r for r in pod_rules(env) if ip in (r.get("src"), r.get("dst"))]


def test_kill9_mid_del(make_env):
    """kill -9 while netd removes a pod's rules (stopped here): the DEL is
    not answered, and the checkpoint still holds the pod, so the restart
    restores it with its rules, and its address goes to no other pod
    (ip_cooldown_s is 0: it would be free at once) until the runtime's
    retried DEL, which releases it."""
    env = make_env(pool=pool_conf(warm_ip_target=1, warm_eni_target=0))
    env.start()
    a = env.add_and_ping("d0")
    env.add_and_ping("d1")
    ip = a["ip"]
    netd = env.enid.children()["enid-netd"]
    os.kill(netd, signal.SIGSTOP)
    try:
        out = []
        th = threading.Thread(target=lambda: out.append(
            concurrent(env.delete, [("d0", 10)])))
        th.start()
        env.wait(lambda: "d0" in env.enid.text() and any(
            p["container_id"] == "d0" and p["state"] == "deleting"
            for p in env.show("pods")), 5, "the DEL under way")
        time.sleep(0.3)
        assert out == [], "DEL answered before its rules were removed"
        assert "d0" in [p["container_id"] for p in env.checkpoint()["pods"]]
        os.kill(env.enid.pid, signal.SIGKILL)
    finally:
        os.kill(netd, signal.SIGKILL)
    env.enid.proc.wait(5)
    th.join(15)
    (_, (ans, _), _), = out[0]
    assert ans.get("ok") is not True, ans

    env.start()
    env.reconcile()
    pods = {p["container_id"]: p for p in env.show("pods")}
    assert set(pods) == {"d0", "d1"} and pods["d0"]["ip"] == ip, pods
    assert rules_for(env, ip)
    assert env.pods["d0"].ping(env.ep["vpc_host"], wait=2)
    others = [env.add("o%d" % i)[0] for i in range(3)]
    assert all(o["ok"] and o["ip"] != ip for o in others), others
    env.unwire("d0")
    ans, _ = env.delete("d0")
    assert ans == {"ok": True}, ans
    assert not rules_for(env, ip)
    assert "d0" not in [p["container_id"] for p in env.checkpoint()["pods"]]
    assert env.pods["d1"].ping(env.ep["vpc_host"], wait=2)



def test_waiting_adds_past_max_pods_get_max_pods(make_env):
    """8 ADDs at once, max_pods 5, the pool growing for them: 5 get
    addresses, and each of the other 3 is told max-pods, whether the
    planner or the broker's own count refuses it (never netd's refusal,
    "netd")."""
    env = make_env(pool=pool_conf(max_pods=5, warm_eni_target=0,
                                  warm_ip_target=1))
    env.start()
    out = concurrent(env.add, [("mp%d" % i,) for i in range(8)])
    codes = sorted(a.get("code", "ok") for _, (a, _), _ in out)
    assert codes == ["max-pods"] * 3 + ["ok"] * 5, codes
    assert len(env.show("pods")) == 5


def chattr(path, flag):
    subprocess.run(["chattr", flag, os.fspath(path)], check=True)


def test_journal_write_fails_on_the_writer_thread(make_env):
    """The journal file is made immutable under the running broker, so the
    writer thread's pwrite of the next record fails (EPERM; a disk that
    refuses writes fails it with EIO).  The DEL whose answer waited for
    that record is told "internal", naming the cause; the state is saved
    again, whole, soon after; nothing acknowledged is lost, across a kill
    -9 too; ADDs go on; and once the file can be written again, records
    are used again."""
    env = make_env(pool=pool_conf(warm_ip_target=3, warm_eni_target=0),
                   reconcile_interval_s=3600)
    env.start()
    journal = env.state_dir / "checkpoint.journal"
    acked = {}
    for i in range(3):
        a = env.add_and_ping("w%d" % i)
        acked["w%d" % i] = a["ip"]
    env.unwire("w2")
    # the pool settled (no growth or trim left to save)
    last = [None, time.monotonic()]

    def quiet():
        ck = env.checkpoint()
        now = (ck["generation"], ck["journal_records"],
               [(e["id"], e["state"], sorted(x["ip"] for x in e["addresses"]))
                for e in env.show("enis")])
        if now != last[0]:
            last[:] = [now, time.monotonic()]
        return time.monotonic() - last[1] >= 1.0
    env.wait(quiet, 20, "the pool to settle")
    before = env.checkpoint()
    assert before["journal_records"] >= 1, before     # records, not whole
    assert "records are written on the loop" not in env.enid.text()
    chattr(journal, "+i")
    try:
        a, _ = env.delete("w2")
        assert a["ok"] is False and a["code"] == "internal", a
        assert "checkpoint.journal: writing the record at offset" in \
            a["error"] and "Operation not permitted" in a["error"], a
        assert "the answers waiting for it fail, and it is retried" in \
            env.enid.text()
        # saved again, whole: a new snapshot, the journal unusable
        env.wait(lambda: env.checkpoint()["generation"] >
                 before["generation"], 5, "the state saved whole")
        ck = env.checkpoint()
        assert ck["journal_records"] == 0, ck
        assert {p["container_id"]: p["ip"] for p in ck["pods"]} == \
            {"w0": acked["w0"], "w1": acked["w1"]}, ck["pods"]
        # logged just after the snapshot's rename: waited for
        env.wait(lambda: "saved whole each time until it can be used" in
                 env.enid.text(), 5, "the unusable journal logged")
        del acked["w2"]
        a, _ = env.delete("w2")         # the runtime's retry
        assert a["ok"], a
        a, _ = env.add("wmid")
        assert a["ok"], a
        acked["wmid"] = a["ip"]
    finally:
        chattr(journal, "-i")
    for i in range(3):
        a, _ = env.add("wafter%d" % i)
        assert a["ok"], a
        acked["wafter%d" % i] = a["ip"]
    env.wait(lambda: env.checkpoint()["journal_records"] >= 1, 5,
             "records in the journal again")
    assert len(set(acked.values())) == len(acked), acked
    ck = {p["container_id"]: p["ip"] for p in env.checkpoint()["pods"]}
    assert ck == acked, (ck, acked)
    env.kill9()
    env.start()
    held = {p["container_id"]: p["ip"] for p in env.show("pods")}
    assert held == acked, (held, acked)
    for cid in ("w0", "w1"):
        assert env.pods[cid].ping(env.ep["vpc_host"], wait=2), cid


def settle(env, quiet_s=1.0, timeout=20):
    """Wait until neither the checkpoint nor the pool has changed for
    quiet_s: no growth or trim left to save."""
    last = [None, time.monotonic()]

    def quiet():
        ck = env.checkpoint()
        now = (ck["generation"], ck["journal_records"],
               [(e["id"], e["state"], sorted(x["ip"] for x in e["addresses"]))
                for e in env.show("enis")])
        if now != last[0]:
            last[:] = [now, time.monotonic()]
        return time.monotonic() - last[1] >= quiet_s
    env.wait(quiet, timeout, "the pool to settle")


def test_add_answered_only_once_its_own_save_is_on_disk(make_env):
    """An ADD is acknowledged once the save that first holds its pod is on
    disk, not the one before it (which, on an idle broker, always is).
    Made certain by a state directory that takes no write at all (the
    journal and the directory immutable): every save fails, the ADD's
    own included, so it must never be acknowledged; acknowledged, a
    restart would not know it and could hand its address out again.
    Once the disk takes writes again, the runtime's retry gets the same
    address, recorded."""
    env = make_env(pool=pool_conf(warm_ip_target=3, warm_eni_target=0),
                   reconcile_interval_s=3600)
    env.start()
    journal = env.state_dir / "checkpoint.journal"
    a, _ = env.add("s0")
    assert a["ok"], a
    settle(env)
    assert journal.exists()
    chattr(journal, "+i")
    chattr(env.state_dir, "+i")
    try:
        a, _ = env.add("s1", timeout=60)
        assert a["ok"] is False and a["code"] == "internal", a
        assert "s1" not in {p["container_id"] for p in
                            env.checkpoint()["pods"]}
    finally:
        chattr(env.state_dir, "-i")
        chattr(journal, "-i")
    a, _ = env.add("s1")
    assert a["ok"], a
    env.kill9()
    env.start()
    held = {p["container_id"]: p["ip"] for p in env.show("pods")}
    assert held.get("s1") == a["ip"] and set(held) == {"s0", "s1"}, held


# ---- 5. drift ----

def test_drift_is_corrected_by_reconcile(make_env):
    # warm ENIs count the primary: three is the primary and two more
    env = make_env(pool=pool_conf(warm_eni_target=3))
    env.start()
    env.wait(lambda: len([e for e in env.show("enis")
                          if e["state"] == "ready" and not e["primary"]])
             >= 2, 30, "two warm ENIs")
    ec2 = env.ec2()
    enis = [e for e in env.show("enis") if not e["primary"]]
    gone, trimmed = enis[0], enis[1]
    att = ec2.describe_network_interfaces(
        NetworkInterfaceIds=[gone["id"]])["NetworkInterfaces"][0]
    ec2.detach_network_interface(
        AttachmentId=att["Attachment"]["AttachmentId"], Force=True)
    victim = trimmed["addresses"][0]["ip"]
    ec2.unassign_private_ip_addresses(NetworkInterfaceId=trimmed["id"],
                                      PrivateIpAddresses=[victim])
    # A tagged ENI enid did not make, attached behind its back.
    iid = env.node["instance_id"]
    tags = [{"Key": "enid.io/created-by", "Value": "enid"},
            {"Key": "enid.io/instance-id", "Value": iid},
            {"Key": "enid.io/cluster", "Value": "it"},
            {"Key": "enid.io/created-at", "Value": str(int(time.time()))}]
    new = ec2.create_network_interface(
        SubnetId=env.node["subnet_id"], SecondaryPrivateIpAddressCount=2,
        TagSpecifications=[{"ResourceType": "network-interface",
                            "Tags": tags}])["NetworkInterface"]
    used = {e["device_index"] for e in env.node_enis()
            if e.get("device_index") is not None}
    dev = min(set(range(1, 4)) - used)
    ec2.attach_network_interface(NetworkInterfaceId=new["NetworkInterfaceId"],
                                 InstanceId=iid, DeviceIndex=dev)

    env.wait(lambda: pool_matches_cloud(env), 30, "the pool to match the cloud", step=0.5)
    enis = {e["id"]: e for e in env.show("enis")}
    assert new["NetworkInterfaceId"] in enis
    assert gone["id"] not in enis or enis[gone["id"]]["state"] not in (
        "ready", "draining")
    assert victim not in {a["ip"] for a in enis[trimmed["id"]]["addresses"]}
    # the adopted ENI's addresses work for pods
    for i in range(12):
        a, _ = env.add("dr%d" % i)
        assert a["ok"], a
        if a["eni"] == new["NetworkInterfaceId"]:
            assert env.wire("dr%d" % i, a["ip"]).ping(env.ep["vpc_host"],
                                                      wait=2)
            break
    else:
        pytest.fail("no pod landed on the adopted ENI")


# ---- cooldown ----

def test_released_address_cools_for_ip_cooldown_s(make_env):
    """Every other test sets ip_cooldown_s to 0.  A deleted pod's address
    is not handed out again for ip_cooldown_s seconds (stale ARP and
    conntrack entries age out meanwhile), and is free again after: read
    as milliseconds, it would be free at once."""
    cooldown = 8
    env = make_env(pool=pool_conf(ip_cooldown_s=cooldown, warm_ip_target=3))
    env.start()
    a, _ = env.add("cool0")
    assert a["ok"], a
    ip = a["ip"]

    def state_of(addr):
        return next((x["state"] for e in env.show("enis")
                     for x in e["addresses"] if x["ip"] == addr), None)
    t0 = time.monotonic()
    d, _ = env.delete("cool0")
    assert d["ok"], d
    time.sleep(1.0)
    assert state_of(ip) == "cooling", env.show("enis")
    assert env.show("pool")["cooling"] == 1, env.show("pool")
    # Meanwhile ADDs get other addresses.
    for i in range(2):
        b, _ = env.add("cool%d" % (i + 1))
        assert b["ok"] and b["ip"] != ip, (b, ip)
    env.wait(lambda: state_of(ip) == "free", cooldown + 20,
             "the cooled address free again", step=0.2)
    took = time.monotonic() - t0
    assert took >= cooldown, took
    assert env.show("pool")["cooling"] == 0


# ---- removal ----

def test_removal_deletes_only_once_available(make_env):
    """An ENI enid removes is detached, then deleted only once the cloud
    lists it available: never a delete right after the detach request.
    With a detach that takes the sim 3 s, such a delete is refused ("in
    use") and retried, and the ENI goes all the same, so what tells is
    the cloud's record: no delete refused, and the delete came after the
    describe that saw the ENI available, in enid's log too."""
    env = make_env(pool=pool_conf(warm_eni_target=2))
    env.start()
    env.wait(lambda: [e for e in env.show("enis")
                      if e["state"] == "ready" and not e["primary"]],
             30, "a warm secondary ENI")
    victim = next(e["id"] for e in env.show("enis")
                  if e["state"] == "ready" and not e["primary"])
    before = env.state()
    env.sim.control("POST", "/delays", {"detach_ms": 3000})
    try:
        a = env.ctl({"op": "drain", "eni": victim})
        assert a["ok"], a
        env.wait(lambda: any(e["id"] == victim and e["status"] ==
                             "detaching" for e in env.state()["enis"]),
                 20, "the detach under way", step=0.1)
        env.wait(lambda: victim not in {e["id"] for e in
                                        env.state()["enis"]},
                 40, "the drained ENI deleted", step=0.5)
    finally:
        env.sim.control("POST", "/delays", {"detach_ms": 500})
    after = env.state()
    assert after["errors"].get("DeleteNetworkInterface", {}) == \
        before["errors"].get("DeleteNetworkInterface", {}), after["errors"]
    assert after["calls"]["DeleteNetworkInterface"] == \
        before["calls"].get("DeleteNetworkInterface", 0) + 1, after["calls"]
    lines = [l for l in env.enid.text().splitlines() if victim in l]
    steps = [i for i, l in enumerate(lines) if "detach requested" in l] + \
        [i for i, l in enumerate(lines) if "available; deleting" in l]
    assert len(steps) == 2 and steps[0] < steps[1], lines
    assert not [l for l in lines if "delete: " in l], lines


# ---- 6. leak GC ----

def test_leak_gc(make_env):
    env = make_env(nodes=2, pool=pool_conf(),
                   leak_gc={"enabled": True, "grace_s": 60})
    ec2 = env.ec2()
    st = env.state()
    me = env.node["instance_id"]
    other = [i["id"] for i in st["instances"] if i["id"] != me][0]
    old = str(int(time.time()) - 600)
    young = str(int(time.time()))

    def make(label, inst, cluster, created, creator="enid"):
        tags = [{"Key": "Name", "Value": label}]
        if creator:
            tags.append({"Key": "enid.io/created-by", "Value": creator})
        if inst:
            tags.append({"Key": "enid.io/instance-id", "Value": inst})
        if cluster:
            tags.append({"Key": "enid.io/cluster", "Value": cluster})
        if created:
            tags.append({"Key": "enid.io/created-at", "Value": created})
        return ec2.create_network_interface(
            SubnetId=env.node["subnet_id"],
            TagSpecifications=[{"ResourceType": "network-interface",
                                "Tags": tags}]
        )["NetworkInterface"]["NetworkInterfaceId"]

    doomed = {make("mine-old", me, "it", old),
              make("vanished-old", "i-0deadbeef0000001", "it", old)}
    kept = {make("vanished-young", "i-0deadbeef0000003", "it", young),
            make("untagged", None, None, None, creator=None),
            make("other-cluster", "i-0deadbeef0000002", "elsewhere", old),
            make("untagged-cluster", "i-0deadbeef0000004", None, old),
            make("living-instance", other, "it", old)}
    # A cloud that ignores the describe's cluster filter lists the other
    # cluster's ENIs too: the collector's own check of the tag keeps them.
    env.faults([{"action": "DescribeNetworkInterfaces",
                 "ignore_filter": "tag:enid.io/cluster"}])
    env.start()
    # Younger than grace_s and tagged for this node: made after this
    # start, so not left over from an earlier life either.
    time.sleep(1.1)
    kept.add(make("mine-young", me, "it", str(int(time.time()))))
    env.reconcile()

    def collected():
        ids = {e["id"] for e in env.state()["enis"]}
        return not (doomed & ids) and ids
    env.wait(collected, 30, "the leak collector", step=0.5)
    env.reconcile()
    ids = {e["id"] for e in env.state()["enis"]}
    assert kept <= ids, (kept - ids)
    text = env.enid.text()
    assert "leak" in text


def test_leak_gc_more_leaks_than_a_run_holds(make_env):
    """70 leaked ENIs, more than a run holds (64) or deletes (16): every
    run still succeeds, none is kept out by the others, and run by run all
    go.  Before, a run with more than 64 candidates failed whole, every
    time, and the collector never deleted one."""
    env = make_env(pool=pool_conf(), reconcile_interval_s=3600,
                   leak_gc={"enabled": True, "grace_s": 60})
    ec2 = env.ec2()
    old = str(int(time.time()) - 600)
    leaks = set()
    for i in range(70):
        tags = [{"Key": "enid.io/created-by", "Value": "enid"},
                {"Key": "enid.io/instance-id",
                 "Value": "i-0deadbeef00000%02d" % (i % 7)},
                {"Key": "enid.io/cluster", "Value": "it"},
                {"Key": "enid.io/created-at", "Value": old}]
        leaks.add(ec2.create_network_interface(
            SubnetId=env.node["subnet_id"],
            TagSpecifications=[{"ResourceType": "network-interface",
                                "Tags": tags}]
        )["NetworkInterface"]["NetworkInterfaceId"])
    env.start()

    def present():
        return leaks & {e["id"] for e in env.state()["enis"]}

    runs = 0
    left = present()
    while left and runs < 15:
        env.reconcile()         # asserts that the run succeeded
        runs += 1
        # the run's deletions done: no ENI of the pool's on its way out
        env.wait(lambda: not any(
            e["state"] in ("draining", "detaching", "deleting")
            for e in env.ctl({"op": "show", "what": "enis"})["enis"]),
            60, "the run's deletions", step=0.5)
        left = present()
    assert not left, "%d of 70 leaks left after %d runs" % (len(left), runs)
    # the run at start, then at most 16 a run
    assert runs <= 12, runs
    assert "more entries than the pool can hold" not in env.enid.text()


def test_reconcile_questions_fail_one_at_a_time(make_env):
    """A run's questions go out at once (reconcile.c); any one failing ends
    the run with its own error, each in turn, and enid goes on: the next
    run, with the faults gone, succeeds.  The first run at start also
    waits for the subnets describe, and the pool runs after it."""
    env = make_env(log_level="debug", pool=pool_conf(warm_eni_target=1))
    env.start()
    for rule, why in (
            ({"action": "DescribeNetworkInterfaces",
              "code": "UnauthorizedOperation", "count": 1}, "describe"),
            ({"action": "DescribeNetworkInterfaces",
              "code": "UnauthorizedOperation", "count": 3}, "describe")):
        env.faults([rule])
        a = env.ctl({"op": "reconcile"})
        assert not a["ok"] and a["code"] == "cloud-error", a
        assert why in a["error"] and "UnauthorizedOperation" in a["error"], a
        assert env.enid.proc.poll() is None, env.enid.text()[-2000:]
        env.clear_faults()
    env.reconcile()
    assert env.enid.proc.poll() is None
    assert env.show("pool")["phase"] == "running"
