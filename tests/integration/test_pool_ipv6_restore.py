"""A restart's IPv6 pods judged against the pool (issue 35): a pod's IPv6
address read back from the checkpoint is a pod's only if it lies in its
own ENI's /80, as an IPv4 pod's address is one only if its ENI still has
it.  One outside (another ENI's /80, a /80 the ENI no longer has, the
ENI's own address) would be given rules and answered to CHECK while the
cloud routes it elsewhere or nowhere, and might be handed out again by
the ENI whose /80 it is."""
import ipaddress
import json
import os

from test_pool_ipv6 import (add_dual, held, make_env, pool,  # noqa: F401
                            prefixes80, ready80, rules_for,
                            wait_for)
import ckptstate
from test_pool_hostile import pool_addrs


def rewrite(env, change):
    """The effective checkpoint, changed, written as the snapshot alone
    (its journal folded in), enid stopped."""
    ck = env.checkpoint()
    ck.pop("journal_records", None)
    change(ck)
    (env.state_dir / ckptstate.SNAPSHOT).write_text(json.dumps(ck))
    journal = env.state_dir / ckptstate.JOURNAL
    if journal.exists():
        os.unlink(journal)


def test_restored_ip6_outside_its_enis_80_is_lost(make_env):
    env = make_env(ip_family="dual", pool=pool(warm_ip_target=5),
                   reconcile_interval_s=3600)
    env.start()
    p80 = ready80(env, 2)
    assert len(p80) == 2, p80
    answers, pods = add_dual(env, ["o0", "o1", "o2", "o3"])
    eni = answers["o0"]["eni"]
    other = [k for k in p80 if k != eni][0]
    mine = p80[eni]
    # Three lies, each of a running pod's IPv6 address: in the other
    # ENI's /80, in the subnet's /64 but in no /80 of the pool, and the
    # ENI's own /80's network address moved one /80 up.
    # o0's far into the other ENI's /80, past where its clock-driven
    # order has come (as test_ipv6_rule_refused_fails_the_add_whole).
    lies = {"o0": str(p80[other][0xabcd00000000]),
            "o1": str(ipaddress.ip_network(
                "%s/80" % (mine.network_address + (1 << 48)))[7]),
            "o2": str(mine.network_address + (2 << 48) + 9)}
    assert all(ipaddress.ip_address(v) not in mine for v in lies.values())
    env.enid.stop()

    def lie(ck):
        for p in ck["pods"]:
            if p["container_id"] in lies:
                p["ip6"] = lies[p["container_id"]]
    rewrite(env, lie)
    e = env.start()
    assert e.wait_log("reconcile: done", 30), e.text()
    env.reconcile()
    text = e.text()
    byid = {p["container_id"]: p for p in env.show("pods")}
    for cid, addr in lies.items():
        # No rule for the lie, the pod lost with the cause named.
        assert rules_for(env, addr) == [], (cid, addr)
        assert byid[cid]["state"] == "lost", byid[cid]
        assert "IPv6 address %s is not of %s's /80" % (addr, eni) in text, \
            text
    # The honest pod is as it was.
    assert byid["o3"]["state"] != "lost", byid["o3"]
    assert len(rules_for(env, pods["o3"]["ip6"])) >= 1
    # A lost pod keeps its address until its DEL: the ENI whose /80
    # holds it hands out none up to it.
    assert held(env)["o0"]["ip6"] == lies["o0"]
    on_other = []
    for i in range(3):
        a, _ = env.add("n%d" % i)
        assert a["ok"], a
        if a["eni"] == other:
            on_other.append(a["ip6"])
            break
    assert on_other, "no new pod on %s" % other
    assert all(ipaddress.ip_address(x) > ipaddress.ip_address(lies["o0"])
               for x in on_other), (on_other, lies["o0"])


def test_pods_of_a_80_the_cloud_took_back_are_lost(make_env):
    """The cloud no longer delegates an ENI's /80 (taken back behind
    enid's back): its pods' IPv6 addresses are routed nowhere, as an IPv4
    pod's is once the cloud no longer assigns it, and so they are lost,
    with the cause named; the ENI gets a /80 again for new pods."""
    env = make_env(ip_family="dual", pool=pool(warm_ip_target=2),
                   reconcile_interval_s=3600)
    env.start()
    p80 = ready80(env)
    answers, pods = add_dual(env, ["t0", "t1"])
    eni = answers["t0"]["eni"]
    assert answers["t1"]["eni"] == eni, answers
    old = p80[eni]
    env.ec2().unassign_ipv6_addresses(NetworkInterfaceId=eni,
                                      Ipv6Prefixes=[str(old)])
    env.reconcile()
    byid = {p["container_id"]: p for p in env.show("pods")}
    for cid in ("t0", "t1"):
        assert byid[cid]["state"] == "lost", byid[cid]
        assert "/80" in byid[cid]["lost_why"], byid[cid]
    # The ENI asks for a /80 again (the sim may give the same one back):
    # a new pod's IPv6 address is none the lost pods still hold.
    got = wait_for(lambda: env.enid.text().count(
        "%s: /80 " % eni) >= 2)
    assert got, env.enid.text()[-6000:]
    a, _ = env.add("t2")
    assert a["ok"], a
    lost6 = {ipaddress.ip_address(pods[c]["ip6"]) for c in ("t0", "t1")}
    assert ipaddress.ip_address(a["ip6"]) not in lost6, (a, lost6)
    if a["eni"] == eni:
        assert ipaddress.ip_address(a["ip6"]) in prefixes80(env)[eni], a
        assert ipaddress.ip_address(a["ip6"]) > max(lost6), (a, lost6)
    # Their IPv4 addresses went with them: no new pod has one.
    assert a["ip"] not in {pods[c]["ip"] for c in ("t0", "t1")}, a
    # A lost pod's DEL takes its rules, of both families.
    ans, _ = env.delete("t0")
    assert ans == {"ok": True}, ans
    assert rules_for(env, pods["t0"]["ip"]) == [] and \
        rules_for(env, pods["t0"]["ip6"]) == []
    # Held out of the pool while its pod lives; once deleted, back in it
    # (by the next reconciliation at the latest): nothing is leaked.
    assert pods["t1"]["ip"] not in pool_addrs(env), pool_addrs(env)
    env.reconcile()
    assert pool_addrs(env).get(pods["t0"]["ip"], (None,))[0] == eni, \
        pool_addrs(env)


def test_a_second_80_listed_first_keeps_the_pods_80(make_env):
    """An ENI with a second /80 (one assigned by hand while enid was
    down), listed before the one its pods are in: at the restart the pods'
    /80 stays the ENI's, and the pods theirs; none is lost."""
    env = make_env(ip_family="dual", pool=pool(warm_ip_target=2),
                   reconcile_interval_s=3600)
    env.start()
    p80 = ready80(env)
    answers, pods = add_dual(env, ["s0", "s1"])
    eni = answers["s0"]["eni"]
    mine = str(p80[eni])
    env.enid.stop()
    ec2 = env.ec2()
    # The cloud lists /80s in the order assigned: the hand-made one first.
    extra = ec2.assign_ipv6_addresses(NetworkInterfaceId=eni,
                                      Ipv6PrefixCount=1)
    extra = extra["AssignedIpv6Prefixes"]
    for gone in ([mine], extra):
        ec2.unassign_ipv6_addresses(NetworkInterfaceId=eni,
                                    Ipv6Prefixes=gone)
    for back in (extra, [mine]):
        ec2.assign_ipv6_addresses(NetworkInterfaceId=eni, Ipv6Prefixes=back)
    listed = [e for e in env.state()["enis"] if e["id"] == eni][0]
    assert listed["ipv6_prefixes"][1] == mine, listed
    e = env.start()
    assert e.wait_log("reconcile: done", 30), e.text()
    env.reconcile()
    byid = {p["container_id"]: p for p in env.show("pods")}
    for cid in ("s0", "s1"):
        assert byid[cid]["state"] == "ready", byid[cid]
        assert byid[cid]["ip6"] == pods[cid]["ip6"], byid[cid]
        assert len(rules_for(env, pods[cid]["ip6"])) >= 1, cid
    a, _ = env.add("s2")
    assert a["ok"], a
    if a["eni"] == eni:
        assert ipaddress.ip_address(a["ip6"]) in \
            ipaddress.ip_network(mine), (a, mine)
