"""Bugs the chaos soak (tests/chaos) found, each as a test of its own.

enid runs in a node of tests/vpcsim as in test_pool.py; each test sets up
the situation the soak ran into, in the few steps that matter.
"""
import itertools
import os
import time

import pytest

from conftest import scaled, scaled_s
from poolenv import PoolEnv

_seq = itertools.count()


@pytest.fixture
def make_env(workdir, enid_user, helper_dir):
    envs = []

    def make(**conf):
        pool = {"add_timeout_s": 10, "ip_cooldown_s": 0, "link_timeout_s": 10}
        pool.update(conf.pop("pool", {}))
        env = PoolEnv(workdir, enid_user, helper_dir,
                      prefix="cr%d-%d" % (os.getpid(), next(_seq)),
                      sim_args=("--ip-limit", "6", "--eni-limit", "4"),
                      pool=pool, **conf)
        envs.append(env)
        return env

    yield make
    for env in envs:
        env.stop()


def test_del_while_the_checkpoint_is_unread_is_not_acknowledged(make_env):
    """enid restarts while the cloud cannot be reached (here: every
    DescribeInstances fails), so the instance is unknown and the
    checkpoint is not read back.  A DEL then must not be answered ok:
    the pod would come back from the checkpoint once enid runs, its
    address held for good.  It is told to try again, and a DEL once enid
    runs releases the pod."""
    env = make_env()
    env.start()
    a = env.add_and_ping("ck0")
    env.add_and_ping("ck1")
    env.kill9()
    env.faults([{"action": "DescribeInstances", "code": "InternalError",
                 "status": 500, "probability": 1.0}])
    e = env.start(wait=False)
    assert e.wait_log("all processes ready", 10), e.text()
    # The broker answers while it waits for the cloud.
    for cid in ("ck0", "nobody"):
        ans, took = env.delete(cid, timeout=5)
        assert ans["ok"] is False and ans["code"] == "try-again", ans
        assert took < 1.0
    env.clear_faults()
    assert e.wait_log("pool: running", 30), e.text()
    assert {p["container_id"] for p in env.show("pods")} == {"ck0", "ck1"}
    env.unwire("ck0")
    ans, _ = env.delete("ck0")
    assert ans == {"ok": True}, ans
    assert [p["container_id"] for p in env.show("pods")] == ["ck1"]
    assert [p["container_id"] for p in env.checkpoint()["pods"]] == ["ck1"]
    # and the address is the pool's again
    states = {x["ip"]: x["state"] for en in env.show("enis")
              for x in en["addresses"]}
    assert states[a["ip"]] in ("free", "cooling"), states
    ans, _ = env.delete("nobody")
    assert ans == {"ok": True}, ans


def test_address_of_a_lost_pod_is_no_other_pods(make_env):
    """A pod's address is unassigned behind enid's back (the pod is lost,
    but keeps the address configured until the runtime deletes it), and
    the cloud then assigns that address to the node again.  It must not
    be handed to another pod while the lost one lives: the node would
    have it twice, and the lost pod's DEL would take the new pod's
    rules.  Once the lost pod is deleted it is the pool's again."""
    env = make_env(reconcile_interval_s=60,
                   pool={"warm_ip_target": 1, "warm_eni_target": 0})
    env.start()
    a = env.add_and_ping("lost")
    ip, eni = a["ip"], a["eni"]
    ec2 = env.ec2()
    ec2.unassign_private_ip_addresses(NetworkInterfaceId=eni,
                                      PrivateIpAddresses=[ip])
    env.reconcile()
    p = next(x for x in env.show("pods") if x["container_id"] == "lost")
    assert p["state"] == "lost", p
    ec2.assign_private_ip_addresses(NetworkInterfaceId=eni,
                                    PrivateIpAddresses=[ip])
    env.reconcile()
    pool = {x["ip"] for e in env.show("enis") for x in e["addresses"]}
    assert ip not in pool, pool
    assert "%s is still the address of pod lost/eth0" % ip in env.enid.text()
    others = {}
    for i in range(3):
        b = env.add_and_ping("new%d" % i)
        others["new%d" % i] = b["ip"]
    assert ip not in others.values(), others
    # After a kill -9 as well: the checkpoint keeps the lost pod, so the
    # restart gives its address to no other pod.  The cloud has it on the
    # pod's ENI again, so the restored pod is whole again.
    assert "lost" in [x["container_id"] for x in env.checkpoint()["pods"]]
    env.kill9()
    env.start()
    for i in range(3, 5):
        b = env.add_and_ping("new%d" % i)
        others["new%d" % i] = b["ip"]
    assert ip not in others.values(), others
    p = next(x for x in env.show("pods") if x["container_id"] == "lost")
    assert p["ip"] == ip and p["state"] == "ready", p
    assert env.pods["lost"].ping(env.ep["vpc_host"], wait=2)
    # The lost pod goes: its DEL leaves every other pod's rules alone,
    # and its address comes back to the pool.
    env.unwire("lost")
    ans, _ = env.delete("lost")
    assert ans == {"ok": True}, ans
    for cid in others:
        assert env.pods[cid].ping(env.ep["vpc_host"], wait=2), cid
    env.reconcile()
    states = {x["ip"]: x["state"] for e in env.show("enis")
              for x in e["addresses"]}
    assert states.get(ip) == "free", states


def shrinking_env(make_env, prefix):
    """enid with five pods (prefix0..4) whose pool gives back surplus at
    once, and no periodic reconciliation due for an hour."""
    env = make_env(reconcile_interval_s=3600,
                   pool={"warm_ip_target": 1, "warm_eni_target": 0,
                         "shrink_delay_s": 0})
    env.start()
    for i in range(5):
        a, _ = env.add("%s%d" % (prefix, i))
        assert a["ok"], a
    return env


def refused_surplus(make_env, prefix, code, status):
    """shrinking_env with the cloud refusing every unassign (code, HTTP
    status), and four of its five pods deleted: a surplus to give back."""
    env = shrinking_env(make_env, prefix)
    env.faults([{"action": "UnassignPrivateIpAddresses",
                 "code": code, "status": status, "probability": 1.0}])
    for i in range(1, 5):
        ans, _ = env.delete("%s%d" % (prefix, i))
        assert ans == {"ok": True}, ans
    return env


def test_unassign_the_cloud_applies_late_hands_out_nothing(make_env):
    """enid gives back surplus addresses, the cloud is slow to do it, and
    enid is killed meanwhile.  The restart's first look at the cloud still
    finds those addresses on the ENI; had they gone to pods, the unassign
    landing a moment later would take the addresses from under them.  The
    addresses wait (as cooling) until the unassign is surely over, and
    then until a reconciliation asked since says whether the cloud still
    has them: with no periodic run due (reconcile_interval_s is an hour),
    enid asks for one itself, which drops them.  No pod is lost.  (The
    hold is a minute; the harness may run it shorter, not below late_s.)"""
    env = shrinking_env(make_env, "u")
    late_s, hold_s = 8, scaled(60)  # hold: ENGINE_UNASSIGN_HOLD_MS
    assert hold_s > late_s + 2, "ENID_TEST_TIME_SCALE too large for this test"
    env.faults([{"action": "UnassignPrivateIpAddresses",
                 "latency_ms": late_s * 1000, "count": 1}])
    for i in range(1, 5):
        ans, _ = env.delete("u%d" % i)
        assert ans == {"ok": True}, ans
    env.wait(lambda: env.state()["calls"].get(
        "UnassignPrivateIpAddresses", 0) >= 1, 10, "an unassign sent")
    t_sent = time.monotonic()
    going = {x["ip"] for e in env.show("enis") for x in e["addresses"]
             if x["state"] == "removing"}
    assert going
    env.kill9()
    env.start()
    took = time.monotonic() - t_sent
    assert took < late_s - 2, "the restart took %.1f s" % took
    states = {x["ip"]: x["state"] for e in env.show("enis")
              for x in e["addresses"]}
    assert {states.get(ip) for ip in going} == {"cooling"}, (going, states)
    # The pods the restart serves before the unassign lands, and after.
    acked = {"u0"}
    for i in range(4):
        a, _ = env.add("v%d" % i)
        assert a["ok"] and a["ip"] not in going, a
        acked.add("v%d" % i)
    env.wait(lambda: time.monotonic() > t_sent + late_s + 0.5,
             late_s + 5, "the unassign applied")
    cloud = {ip for e in env.node_enis() for ip in e["addresses"]}
    assert not going & cloud, (going, cloud)
    env.wait(lambda: not going & {x["ip"] for e in env.show("enis")
                                  for x in e["addresses"]},
             hold_s + 15, "the addresses the unassign took dropped",
             step=0.5)
    assert time.monotonic() > t_sent + hold_s - scaled(5)
    for i in range(2):      # (the cloud may assign those again now)
        a, _ = env.add("w%d" % i)
        assert a["ok"], a
        acked.add("w%d" % i)
    cloud = {ip for e in env.node_enis() for ip in e["addresses"]}
    pods = {p["container_id"]: p for p in env.show("pods")}
    assert set(pods) == acked
    lost = [(c, p["ip"], p.get("lost_why")) for c, p in pods.items()
            if p["state"] != "ready" or p["ip"] not in cloud]
    assert not lost, lost
    for cid, p in pods.items():
        assert env.wire(cid, p["ip"]).ping(env.ep["vpc_host"], wait=2), cid


def test_eni_detaching_behind_enids_back_takes_no_new_pod(make_env):
    """An ENI is detached behind enid's back, and the detach takes its
    time (EC2's do; the sim's here 8 s): the cloud lists it as detaching,
    still on this instance.  A reconciliation that sees that must drop it
    from the pool then, not once the detach is done: a pod given one of
    its addresses meanwhile would not route.  Once available, enid
    deletes it (it is ours), and nothing leaks."""
    env = make_env(reconcile_interval_s=3600,
                   pool={"warm_ip_target": 2, "warm_eni_target": 0})
    env.start()
    for i in range(7):
        a, _ = env.add("p%d" % i)
        assert a["ok"], a
    env.wait(lambda: any(e["state"] == "ready" and not e["primary"]
                         for e in env.show("enis")), 20, "a secondary ENI")
    victim = next(e for e in env.show("enis")
                  if e["state"] == "ready" and not e["primary"])
    att = next(e for e in env.node_enis() if e["id"] == victim["id"])
    env.sim.control("POST", "/delays", {"detach_ms": 8000})
    try:
        env.ec2().detach_network_interface(
            AttachmentId=att["attachment"]["id"])
        assert next(e for e in env.node_enis()
                    if e["id"] == victim["id"])["status"] == "detaching"
        env.reconcile()
        # Out of the pool at once; then it waits for the detach to end.
        env.wait(lambda: {e["id"]: e["state"] for e in env.show("enis")}
                 .get(victim["id"]) == "detaching", 5, "the ENI removed")
        assert "being detached from this instance, not by enid" in \
            env.enid.text()
        lost = {p["container_id"] for p in env.show("pods")
                if p["state"] == "lost"}
        assert lost == {x["container_id"] for x in victim["addresses"]
                        if x.get("container_id")}, lost
        gone = {x["ip"] for x in victim["addresses"]}
        for i in range(4):
            a, _ = env.add("dt%d" % i)
            assert a["ok"], a
            assert a["ip"] not in gone and a["eni"] != victim["id"], a
            assert env.wire("dt%d" % i, a["ip"]).ping(env.ep["vpc_host"],
                                                     wait=2), a
    finally:
        env.sim.control("POST", "/delays", {"detach_ms": 500})
    env.wait(lambda: victim["id"] not in {e["id"] for e in env.state()["enis"]},
             30, "the detached ENI deleted once available", step=0.5)
    assert victim["id"] not in {e["id"] for e in env.show("enis")}


def test_refused_unassigns_back_off(make_env):
    """A cloud that refuses every unassign (an IAM deny) is asked ever
    less often: after each refusal in a row the ENI gives back no address
    for twice as long (10 s, 20 s, ... up to 15 min; scaled() by the
    harness).  Meanwhile its addresses, once the cloud is seen to still
    have them, are free for pods: the surplus is kept, not lost."""
    env = refused_surplus(make_env, "k", "UnauthorizedOperation", 403)
    seen = []
    added = None
    t_end = time.monotonic() + scaled(70) + 10
    while len(seen) < 3 and time.monotonic() < t_end:
        n = env.state()["calls"].get("UnassignPrivateIpAddresses", 0)
        if n > len(seen):
            seen.extend([time.monotonic()] * (n - len(seen)))
        if len(seen) == 2 and added is None and \
                env.show("pool")["free"] >= 3:
            # Between the second and third tries, the addresses rested
            # and were seen on the ENI: free for pods, and a new one
            # gets one without the pool growing.
            grew = {a: env.state()["calls"].get(a, 0) for a in
                    ("AssignPrivateIpAddresses", "CreateNetworkInterface")}
            env.add_and_ping("k9")
            added = {a: env.state()["calls"].get(a, 0) for a in grew}
            assert added == grew, (added, grew)
            assert len(seen) == 2 == env.state()["calls"].get(
                "UnassignPrivateIpAddresses"), seen
        time.sleep(0.2)
    assert len(seen) >= 3, (seen, env.enid.text()[-3000:])
    assert added is not None, "no address free between the tries"
    gap1, gap2 = seen[1] - seen[0], seen[2] - seen[1]
    assert gap1 >= scaled(10) - 0.5, (gap1, gap2)
    assert gap2 >= scaled(20) - 0.5, (gap1, gap2)
    text = env.enid.text()
    assert "gives back no address for %d s (refusal 1 in a row)" % \
        scaled_s(10) in text
    assert "gives back no address for %d s (refusal 2 in a row)" % \
        scaled_s(20) in text


def test_refused_unassign_is_not_asked_again_at_once(make_env):
    """The cloud refuses an unassign, as it does one of addresses it no
    longer assigns (an earlier unassign, landed late, took them).  The
    addresses must not go back into the pool as free: the pool would give
    them back again at once, be refused again, and so on, spending the
    mutating calls growth needs.  They rest (10 s, scaled()), then wait
    for a reconciliation, which enid asks for; here the cloud still has them,
    so they are free again, and the surplus is given back on the next
    try, once the cloud takes it."""
    env = refused_surplus(make_env, "r", "InvalidParameterValue", 400)

    def calls():
        return env.state()["calls"].get("UnassignPrivateIpAddresses", 0)
    env.wait(lambda: calls() >= 1, 10, "an unassign sent")
    env.wait(lambda: "they go to no pod until the cloud is seen to have "
             "them" in env.enid.text(), 5, "the refusal")
    t_refused = time.monotonic()
    time.sleep(scaled(4))
    # One try for each address the surplus had, none again while it rests.
    tried = calls()
    assert tried <= 4, tried
    env.clear_faults()
    env.wait(lambda: len([x for e in env.show("enis")
                          for x in e["addresses"]]) <= 3, 25,
             "the surplus given back on the next try", step=0.3)
    assert time.monotonic() - t_refused > scaled(10) - 1
    assert calls() <= 2 * tried, (calls(), tried)
    assert "addresses an unassign may have taken are checked" in \
        env.enid.text()
    env.add_and_ping("r9")
