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

import pytest

from test_cni_e2e import Pods, add as cni_add, check as cni_check, \
    delete as cni_delete, ping
from test_ipv6_start import set_up_node
from test_pool_ipv6 import node_enis, prefixes80, wait_for
from conftest import built, write_config
from poolenv import PoolEnv

_seq = itertools.count()
DUAL = ("--ipv6", "dual", "--ip-limit", "4", "--eni-limit", "3")
NATIVE = DUAL + ("--node-subnet", "0:ipv6-native")
# A node without IPv4 asks EC2 and IMDS over IPv6.
CLOUD6 = {"ec2_endpoint": "http://[2001:2::1]/",
          "imds_endpoint": "http://[fd00:ec2::254]"}
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


def ctl_text(env, *args):
    r = subprocess.run([built("ctl/enidctl"), "-s", str(env.ctl_sock),
                        *args], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r
    return r.stdout


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
    assert lim["limits"]["max_pods"] == lim["limits"]["enid_max_pods"], lim
    # enidctl's text: the pod's IPv6 address, the limits in ENIs.
    text = ctl_text(env, "show", "pods")
    assert answers["s0"]["ip6"] in text, text
    # The pool: its IPv6 pods and /80s beside the (IPv4) address counts.
    pool = env.ctl({"op": "show", "what": "pool"})["pool"]
    assert pool["ip_family"] == "ipv6", pool
    assert pool["pods_ipv6"] == len(answers), (pool, answers)
    assert pool["ipv6_prefixes"] == 1, pool
    assert ("ipv6         %d pods with an IPv6 address, 1 ENIs with a /80 "
            "(ip_family ipv6)" % len(answers)) in \
        ctl_text(env, "show", "pool")
    text = ctl_text(env, "show", "limits")
    for want in ("pod addresses      IPv6 only (ip_family ipv6)",
                 "the pool is driven by ENIs, not IPv4 addresses",
                 "max pods           %d (enid's most %d, ENID_MAX_PODS; "
                 "pool.max_pods not set)" % (lim["limits"]["max_pods"],
                                             lim["limits"]["enid_max_pods"]),
                 "warm pool          one ENI of a configured subnet"):
        assert want in text, text
    assert "prefixes " not in text, text
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


def whoami(pod_ns, host, port=7):
    """What the whoami service at host says of a TCP client in pod_ns:
    its first line."""
    code = ("import socket\n"
            "s = socket.create_connection((%r, %d), timeout=3)\n"
            "print(s.recv(200).decode().split('\\n')[0])\n" % (host, port))
    r = subprocess.run(["ip", "netns", "exec", pod_ns, "python3", "-c",
                        code], capture_output=True, text=True, timeout=20)
    return r.stdout.strip() if r.returncode == 0 else r.stderr


def ping6(pod_ns):
    """The VPC host answers the pod: a few tries, a link just made may
    lose the first echo while its neighbours are being resolved."""
    return any(ping(pod_ns, VPC_HOST6) for _ in range(3))


def plugin_pods(env, tag, n):
    """n pods wired by the real enid-cni: each IPv6 address alone,
    reaching the VPC host and seen there with its own address."""
    pods = Pods(tag)
    env.pods_ns = pods
    out = {}
    for i in range(n):
        cid = "%s%d" % (tag, i)
        ns = pods.new()
        r = cni_add(env, cid, ns)
        assert r.ok, r
        addrs = [x["address"] for x in r.out["ips"]]
        assert len(addrs) == 1 and ":" in addrs[0], r.out
        out[cid] = (ns, r.out, addrs[0].split("/")[0])
    # The sim installs an ENI's /80 route a moment after the cloud
    # shows it delegated.
    env.wait_dataplane()
    for cid, (ns, _, a6) in out.items():
        assert ping6(ns), (cid, a6)
        assert a6 in whoami(ns, VPC_HOST6), (cid, a6)
    seen = env.sim.control("GET", "/outside")["vpc_host_seen"]["tcp"]
    assert {a6 for _, _, a6 in out.values()} <= set(seen), seen
    return out


@pytest.fixture
def pods_cleanup():
    made = []
    yield made
    for env in made:
        if getattr(env, "pods_ns", None) is not None:
            env.pods_ns.cleanup()


def test_real_plugin_pod_reaches_the_vpc_host(make_env, pods_cleanup):
    env = make_env()
    pods_cleanup.append(env)
    env.start()
    primary = env.node["primary_eni"]
    assert wait_for(lambda: primary in prefixes80(env)), node_enis(env)
    out = plugin_pods(env, "e6", 3)
    # No IPv4 inside the pods: an IPv6 default route alone.
    for ns, _, _ in out.values():
        r4 = subprocess.run(["ip", "-n", ns, "-4", "addr", "show",
                             "scope", "global"], capture_output=True,
                            text=True, check=True).stdout
        assert r4.strip() == "", r4
    assert ipv4_for_pods(env) == [], node_enis(env)
    ns, res, _ = out["e62"]
    r = cni_check(env, "e62", ns, res)
    assert r.ok, r
    r = cni_delete(env, "e62", ns)
    assert r.ok, r
    assert "e62" not in {p["container_id"] for p in env.show("pods")}


def test_ipv6_native_node_runs_ipv6_only_pods(make_env, pods_cleanup):
    """The node's primary ENI in the ipv6Native subnet: no ENI has an
    IPv4 address at all.  enid starts, serves IPv6-only pods from the
    primary's /80, restarts with them."""
    env = make_env(sim_args=NATIVE, cloud=CLOUD6)
    pods_cleanup.append(env)
    assert env.node["primary_ip"] is None, env.node
    env.start()
    primary = env.node["primary_eni"]
    assert wait_for(lambda: primary in prefixes80(env)), node_enis(env)
    answers = add6(env, ["n%d" % i for i in range(3)])
    assert {a["eni"] for a in answers.values()} == {primary}, answers
    check_pods(env, answers)
    assert list(node_enis(env)) == [primary], node_enis(env)
    out = plugin_pods(env, "n6", 2)
    assert len(out) == 2
    lim = env.ctl({"op": "show", "what": "limits"})
    assert lim["ok"] and lim["limits"]["pods_driven_by"] == "enis", lim
    before = rules(env, "-6")
    env.kill9()
    env.start()
    env.reconcile()
    assert rules(env, "-6") == before
    text = "\n".join(e.text() for e in env.enids)
    assert "belong to no pod" not in text and "missing its" not in text, \
        text
    assert {c: p["ip6"] for c, p in held(env).items()
            if c in answers} == {c: a["ip6"] for c, a in answers.items()}


def test_dual_on_an_ipv6_native_node_is_refused(make_env):
    env = make_env(sim_args=NATIVE, ip_family="dual", cloud=CLOUD6)
    e = env.start(wait=False)
    e.proc.wait(30)
    log = e.text()
    assert e.proc.returncode == 1, log
    assert "pool: running" not in log, log
    assert "is IPv6-only (ipv6Native), and ip_family \"dual\" gives pods " \
        "an IPv4 address too" in log, log


def test_growth_makes_an_eni_in_the_ipv6_native_subnet(make_env,
                                                       pods_cleanup):
    """Pods in the ipv6Native subnet, the node's primary elsewhere: the
    pool creates one ENI there, with its own IPv6 address and no IPv4
    address at all, and its /80 serves every pod; the primary serves
    none."""
    env = make_env()
    pods_cleanup.append(env)
    native = env.ep["ipv6"]["native_subnet_id"]
    env.conf_extra["subnets"] = [{"id": native}]
    env.conf = write_config(env.workdir, env.enid_user, **env.conf_extra)
    env.start()
    primary = env.node["primary_eni"]

    def grown():
        enis = [e for k, e in node_enis(env).items() if k != primary]
        return len(enis) == 1 and enis[0]["ipv6_prefixes"] and enis[0]
    made = wait_for(grown)
    assert made, node_enis(env)
    assert made["subnet"] == native and made["addresses"] == [], made
    assert len(made["ipv6_addresses"]) == 1, made
    assert primary not in prefixes80(env), node_enis(env)
    answers = add6(env, ["g%d" % i for i in range(4)])
    assert {a["eni"] for a in answers.values()} == {made["id"]}, answers
    check_pods(env, answers)
    out = plugin_pods(env, "g6", 2)
    assert len(out) == 2
    assert len(node_enis(env)) == 2, node_enis(env)
    before = rules(env, "-6")
    env.kill9()
    env.start()
    env.reconcile()
    assert rules(env, "-6") == before
    assert len(node_enis(env)) == 2, node_enis(env)
    text = "\n".join(e.text() for e in env.enids)
    assert "quarantin" not in text, text
    # show subnets: the IPv6-only one by its /64, no IPv4 CIDR.
    subs = {x["id"]: x for x in env.show("subnets")}
    assert subs[native]["known"] and "cidr" not in subs[native], subs
    assert subs[native]["cidr6"] == "2001:db8:a0b:1202::/64", subs
    line = [l for l in ctl_text(env, "show", "subnets").splitlines()
            if l.startswith(native)]
    assert line and line[0].split()[2:4] == ["-", "2001:db8:a0b:1202::/64"], \
        line
    # Without its checkpoint: the ENI of the IPv6-only subnet is taken
    # in as it is (no IPv4 address to judge), and the pods come back
    # from the kernel's IPv6 rules, each its own record.
    env.kill9()
    aside = env.workdir / "aside"
    aside.mkdir()
    for name in os.listdir(env.state_dir):
        os.rename(env.state_dir / name, aside / name)
    env.start()
    env.reconcile()
    text = env.enid.text()
    assert "1 ENI taken in" in text, text
    assert "quarantin" not in text and "not adopted" not in text, text
    assert "belong to no pod" not in text, text
    shown = {p["ip6"]: p["container_id"] for p in env.show("pods")}
    for a in answers.values():
        assert shown.get(a["ip6"]) == "enid-recovered-" + \
            a["ip6"].replace(":", "-"), (a, shown)
    assert rules(env, "-6") == before
    more = add6(env, ["g9"])
    assert more["g9"]["eni"] == made["id"], more
    assert ipaddress.ip_address(more["g9"]["ip6"]) > max(
        ipaddress.ip_address(a) for a in shown), (more, shown)
    assert len(node_enis(env)) == 2, node_enis(env)


def test_an_eni_without_pods_goes_once_another_serves(make_env):
    """Two ENIs serve (the subnets configured changed across a restart):
    the one without pods is given back after shrink_delay_s; one with
    pods never is, nor the primary."""
    env = make_env(pool={"ip_cooldown_s": 0, "add_timeout_s": 30,
                         "shrink_delay_s": 1})
    primary = env.node["primary_eni"]
    other = next(s["id"] for s in env.ep["subnets"]
                 if s["id"] != env.node["subnet_id"])
    env.conf_extra["subnets"] = [{"id": other}]
    env.conf = write_config(env.workdir, env.enid_user, **env.conf_extra)
    env.start()
    made = wait_for(lambda: [k for k, e in node_enis(env).items()
                             if k != primary and e["ipv6_prefixes"]])
    assert made and len(made) == 1, node_enis(env)
    # Both subnets: the primary serves too, and takes the next pods (it
    # is the first of those with the most pods: none on either).
    env.kill9()
    env.conf_extra["subnets"] = [{"id": env.node["subnet_id"]},
                                 {"id": other}]
    env.conf = write_config(env.workdir, env.enid_user, **env.conf_extra)
    env.start()
    assert wait_for(lambda: primary in prefixes80(env)), node_enis(env)
    gone = wait_for(lambda: made[0] not in node_enis(env), timeout=30)
    assert gone, node_enis(env)
    text = env.enid.text()
    assert "%s: ready -> draining" % made[0] in text, text
    answers = add6(env, ["r0", "r1"])
    assert {a["eni"] for a in answers.values()} == {primary}, answers
    assert list(node_enis(env)) == [primary], node_enis(env)


def test_ipv4_addresses_go_back_after_a_switch_to_ipv6(make_env):
    """A dual node with a warm pool of IPv4 addresses, switched to ipv6:
    the IPv4 addresses nothing holds go back to the subnet once
    shrink_delay_s has passed; a running dual pod's stays until its DEL,
    then goes too."""
    env = make_env(ip_family="dual",
                   pool={"ip_cooldown_s": 0, "add_timeout_s": 30,
                         "warm_ip_target": 3, "shrink_delay_s": 1})
    env.start()
    assert wait_for(lambda: len(ipv4_for_pods(env)) >= 3), node_enis(env)
    a, _ = env.add("d0")
    assert a["ok"] and a.get("ip") and a.get("ip6"), a
    env.kill9()
    env.conf_extra["ip_family"] = "ipv6"
    env.conf = write_config(env.workdir, env.enid_user, **env.conf_extra)
    env.start()
    assert wait_for(lambda: ipv4_for_pods(env) == [a["ip"]],
                    timeout=30), (ipv4_for_pods(env), a)
    assert held(env)["d0"]["ip"] == a["ip"], held(env)
    d, _ = env.delete("d0")
    assert d["ok"], d
    assert wait_for(lambda: ipv4_for_pods(env) == [], timeout=30), \
        ipv4_for_pods(env)
    # The pool still serves: an IPv6-only pod.
    b = add6(env, ["s0"])
    assert "ip" not in b["s0"], b


def test_max_pods_caps_ipv6_only_pods(make_env):
    env = make_env(pool={"ip_cooldown_s": 0, "add_timeout_s": 30,
                         "max_pods": 3})
    env.start()
    assert wait_for(lambda: env.node["primary_eni"] in prefixes80(env))
    add6(env, ["m0", "m1", "m2"])
    a, _ = env.add("m3")
    assert not a["ok"] and a["code"] == "max-pods", a
    assert "max_pods (3)" in a["error"], a
    lim = env.show("limits")
    assert lim["max_pods"] == 3 and lim["config_max_pods"] == 3, lim
    # One gone, one more fits; the cloud still holds no IPv4 for them.
    ans, _ = env.delete("m0")
    assert ans == {"ok": True}, ans
    add6(env, ["m3"])
    assert ipv4_for_pods(env) == [], node_enis(env)
