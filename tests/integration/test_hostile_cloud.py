"""enid against a hostile cloud: EC2's wire format, crafted answers.

enid runs in a node of tests/vpcsim as in test_pool.py, but its EC2
endpoint is hostile_ec2.py, a proxy in the sim's VPC namespace that passes
every request to the sim's endpoint unchanged and rewrites the answers:
addresses outside the subnet, duplicated across ENIs or the gateway's;
more addresses than asked for; the node's own MAC; ENI ids that change
between calls; describe pages that never end; gigantic and slow bodies;
deeply nested and entity-laden XML.  Whatever the answer, enid-cloudd and
the broker stay up (the same processes throughout), no pod is handed such
an address, enid-netd is never asked to touch the node's own link, and a
`security:` or `error:` line names the cause.
"""
import itertools
import json
import os
import re
import subprocess
import threading
import time

import pytest

import podwire
from poolenv import PoolEnv

HOSTILE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "hostile_ec2.py")
LIMITS = ("--ip-limit", "6", "--eni-limit", "4")
ENDPOINT = "198.18.0.1:8080"
_seq = itertools.count()


class CloudEnv(PoolEnv):
    """A PoolEnv whose EC2 endpoint is hostile_ec2.py in front of the
    sim's."""

    def __init__(self, workdir, enid_user, helper_dir, **kw):
        cloud = dict({"timeout_ms": 3000}, **kw.pop("cloud", {}),
                     ec2_endpoint="http://%s/" % ENDPOINT)
        super().__init__(workdir, enid_user, helper_dir, cloud=cloud, **kw)
        self.hdir = workdir / "hostile"
        self.hdir.mkdir()
        self.hlog = open(workdir / "hostile.stderr", "w")
        self.proxy = subprocess.Popen(
            ["ip", "netns", "exec", self.ep["vpc_netns"], "/usr/bin/python3",
             HOSTILE, "--listen", ENDPOINT, "--upstream", "198.18.0.1:80",
             "--dir", str(self.hdir)], stdout=self.hlog,
            stderr=subprocess.STDOUT)
        self.wait(lambda: (self.hdir / "hostile.ready").exists() or
                  self.proxy.poll() is not None, 10, "hostile_ec2.py")
        assert self.proxy.poll() is None, open(workdir /
                                               "hostile.stderr").read()

    def rules(self, *rules):
        path = self.hdir / "hostile-rules.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"rules": list(rules)}))
        os.rename(tmp, path)

    def changed(self, rule=None):
        try:
            with open(self.hdir / "hostile.log") as f:
                out = [json.loads(x) for x in f if x.strip()]
        except FileNotFoundError:
            return []
        return [x for x in out if x.get("event") in ("changed", "page") and
                (rule is None or x.get("rule") == rule)]

    def log(self):
        return self.enid.text()

    def stop(self):
        super().stop()
        if self.proxy.poll() is None:
            self.proxy.terminate()
            self.proxy.wait(10)
        self.hlog.close()


@pytest.fixture
def make_env(workdir, enid_user, helper_dir):
    envs = []

    def make(pool=None, **conf):
        p = {"add_timeout_s": 10, "ip_cooldown_s": 0, "link_timeout_s": 10,
             "warm_ip_target": 2, "warm_eni_target": 0}
        p.update(pool or {})
        env = CloudEnv(workdir, enid_user, helper_dir, sim_args=LIMITS,
                       prefix="hc%d%d" % (os.getpid() % 10000, next(_seq)),
                       pool=p, **conf)
        envs.append(env)
        return env

    yield make
    for env in envs:
        env.stop()


# ---- what must hold whatever the cloud says ----

def eni_default(route):
    """netd's default route through the node's link in a set up ENI's
    table, with SNAT on (tagged 233, onlink), and nothing more."""
    return (route.get("dst") == "default" and "gateway" in route and
            route.get("table", "").isdigit() and
            route.get("protocol") == "233" and
            route.get("flags") == ["onlink"] and
            set(route) == {"dst", "gateway", "table", "protocol", "flags"})


def node_link(env):
    """The node's own link as ip(8) prints it: the link itself, its IPv4
    addresses, every IPv4 route through it in every table, and
    the rules (a hostile answer may add pods' rules, never take one)."""
    addr, link, routes, rules = podwire.ip_dumps(
        env.ns, ("addr", "show", "dev", "eth0"),
        ("link", "show", "dev", "eth0"),
        ("route", "show", "table", "all", "dev", "eth0"), ("rule",),
        family=4)
    link = link[0]
    keep = {k: link.get(k) for k in ("ifindex", "mtu", "operstate",
                                     "address", "flags", "master")}
    keep["addr"] = addr
    # Less the default route through it that netd puts in each ENI's
    # table with SNAT on: set up ENIs are expected.
    keep["routes"] = [r for r in routes if not eni_default(r)]
    keep["rules"] = {json.dumps(r, sort_keys=True) for r in rules}
    return keep


def kernel_state(env):
    """The whole node as test_netd_hostile.py compares it: `ip link`,
    `ip addr`, `ip rule`, `ip route show table all` (IPv4: enid has no
    IPv6, and a new link's IPv6 addresses settle on their own time)."""
    return podwire.kernel_state(env.ns, family=4)


class Watch:
    """What a hostile answer must not change: the processes, the node's
    own link; and what it must not cause: an address of the lie in a pod
    or the pool, a request to netd that names the node's link.  whole:
    the answer is to change nothing at all, so the node's whole state is
    compared too (the pool must have settled first)."""

    def __init__(self, env, link=None, whole=False):
        self.env = env
        self.pids = (env.enid.pid, env.enid.children())
        assert set(self.pids[1]) == {"enid-netd", "enid-cloudd"}, self.pids
        self.link = link or node_link(env)
        self.whole = kernel_state(env) if whole else None
        self.mark = 0 if link else len(env.log())

    def new_log(self):
        return self.env.log()[self.mark:]

    def check(self, bad_addrs=(), needle=None, timeout=20, got=(),
              unchanged=False):
        """got: the addresses ADDs were answered with meanwhile.
        unchanged: nothing on the node may differ from when the watch
        began."""
        env = self.env
        if needle is not None:
            rx = re.compile(r"(security|error): .*" + needle)
            try:
                env.wait(lambda: rx.search(self.new_log()), timeout,
                         "a security: or error: line matching %r" % needle)
            except AssertionError as e:
                raise AssertionError("%s; the log since:\n%s" % (
                    e, self.new_log()[-4000:]))
        assert env.enid.proc.poll() is None, env.log()[-3000:]
        assert (env.enid.pid, env.enid.children()) == self.pids, \
            "an enid process was restarted:\n" + env.log()[-3000:]
        log = env.log()
        for fatal in ("error: fatal:", "AddressSanitizer", "runtime error:"):
            assert fatal not in log, log[-3000:]
        # netd refuses, and logs, anything that names the node's link:
        # the broker never asked.
        assert "refused" not in "\n".join(
            x for x in log.splitlines() if "enid-netd[" in x), log[-3000:]
        now = node_link(env)
        assert self.link["rules"] <= now["rules"], \
            self.link["rules"] - now["rules"]
        assert {k: v for k, v in now.items() if k != "rules"} == \
            {k: v for k, v in self.link.items() if k != "rules"}
        if unchanged:
            assert self.whole is not None
            assert kernel_state(env) == self.whole
        bad = set(bad_addrs)
        assert not bad & set(got), (bad & set(got))
        rules = "\n".join(now["rules"])
        assert not [a for a in bad if re.search(
            r"\b%s\b" % re.escape(a), rules)], rules
        held = {p["ip"] for p in env.show("pods")}
        assert not bad & held, (bad & held)
        pool = {a["ip"] for e in env.show("enis") for a in e["addresses"]}
        assert not bad & pool, (bad & pool)
        ck = {p["ip"] for p in env.checkpoint()["pods"]}
        assert not bad & ck, (bad & ck)
        for cid, p in list(env.pods.items()):
            assert p.ping(env.ep["vpc_host"], wait=2), (cid, p.ip)


def recover(env, n=2, tag="after"):
    """With the lies over, pods get working addresses again (once a
    growth that failed on the lie has backed off: as a runtime does, an
    ADD that fails is tried again)."""
    env.rules()
    for i in range(n):
        cid = "%s%d" % (tag, i)
        a = env.wait(lambda: (lambda x: x["ok"] and x)(env.add(cid)[0]),
                     20, "an ADD of %s to succeed" % cid, step=1)
        p = env.wire(cid, a["ip"])
        assert p.ping(env.ep["vpc_host"], wait=2), (cid, a)


def pods_on(env, n, tag):
    out = {}
    for i in range(n):
        a = env.add_and_ping("%s%d" % (tag, i))
        out["%s%d" % (tag, i)] = (a["ip"], a.get("eni"))
    return out


def settle(env, quiet=1.5, timeout=30):
    end = time.monotonic() + timeout
    last, since = None, time.monotonic()
    while time.monotonic() < end:
        now = [(e["id"], e["state"], sorted(a["ip"] for a in e["addresses"]))
               for e in env.show("enis")]
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
        time.sleep(0.1)
    raise AssertionError("the pool did not settle: %r" % (last,))


def grow_and_wait(env, n, tag):
    """ADDs while a rule lies about growth: each is answered (ok or not);
    those that are ok ping."""
    got = []
    for i in range(n):
        a, _ = env.add("%s%d" % (tag, i), timeout=20)
        if a["ok"]:
            p = env.wire("%s%d" % (tag, i), a["ip"])
            assert p.ping(env.ep["vpc_host"], wait=2), a
            got.append(a["ip"])
    return got


# ---- addresses the cloud should never have named ----

SUBNET0_GW = "10.0.0.1"


@pytest.mark.parametrize("case", ["outside-subnet", "outside-vpc",
                                  "gateway", "node-address"])
def test_assign_names_a_foreign_address(make_env, case):
    """AssignPrivateIpAddresses answers with an address outside the
    subnet (inside the VPC, or not even that), the subnet's gateway, or
    the node's own address in place of the ones it assigned."""
    env = make_env()
    env.start()
    w = Watch(env)
    bad = {"outside-subnet": "10.0.200.9", "outside-vpc": "192.0.2.9",
           "gateway": SUBNET0_GW,
           "node-address": env.node["primary_ip"]}[case]
    why = {"outside-subnet": "outside subnet", "outside-vpc":
           "outside subnet", "gateway": "reserved address",
           "node-address": "primary address of the node"}[case]
    env.rules({"id": "lie", "action": "AssignPrivateIpAddresses",
               "mode": "assign", "replace": [bad], "count": 1})
    got = grow_and_wait(env, 4, "p")
    assert env.changed("lie"), "the lie was never told"
    w.check([bad], r"the cloud named %s, [^;]*%s" % (re.escape(bad), why),
            got=got)
    recover(env)
    w.check([bad])


def test_assign_names_another_enis_address(make_env):
    """The answer to AssignPrivateIpAddresses for one ENI names an address
    a pod holds on another ENI."""
    env = make_env(pool={"warm_ip_target": 1})
    env.start()
    held = pods_on(env, 6, "a")         # the primary's five, and more
    enis = {e for _, e in held.values()}
    assert len(enis) == 2, held
    primary_ip = next(ip for ip, e in held.values()
                      if e == env.node["primary_eni"])
    w = Watch(env)
    env.rules({"id": "dup", "action": "AssignPrivateIpAddresses",
               "mode": "assign", "replace": [primary_ip], "count": 1})
    got = grow_and_wait(env, 2, "b")
    assert env.changed("dup")
    assert primary_ip not in got, got
    w.check([], r"the cloud named %s, already on %s" % (
        re.escape(primary_ip), env.node["primary_eni"]))
    pods = {p["container_id"]: p["ip"] for p in env.show("pods")}
    assert pods["a0"] == held["a0"][0]
    assert [ip for ip in pods.values()].count(primary_ip) == 1, pods
    recover(env)
    w.check()


def test_assign_names_more_than_asked_for(make_env):
    """AssignPrivateIpAddresses answers with more addresses than it was
    asked for (the real ones and three made up)."""
    env = make_env()
    env.start()
    w = Watch(env)
    extra = ["10.0.0.200", "10.0.0.201", "10.0.0.202"]
    env.rules({"id": "more", "action": "AssignPrivateIpAddresses",
               "mode": "assign", "add": extra, "count": 1})
    got = grow_and_wait(env, 4, "m")
    assert env.changed("more")
    w.check(extra, r"(\d+ addresses in the answer, \d+ asked for|"
            r"asked for \d+ addresses, the cloud named \d+)", got=got)
    recover(env)
    w.check(extra)


def test_create_and_describe_name_the_nodes_mac(make_env):
    """CreateNetworkInterface, then reconciliation's describe, give a new
    ENI the MAC of the node's own link: netd is never asked to set it up
    (it would refuse and log it), and the node's link is untouched."""
    env = make_env(pool={"warm_ip_target": 8}, reconcile_interval_s=5)
    mac = env.node["primary_mac"]
    env.rules({"id": "create", "action": "CreateNetworkInterface",
               "mode": "create", "mac": mac, "count": 1})
    link = node_link(env)
    env.start()
    w = Watch(env, link)
    w.check([], r"CreateNetworkInterface answered with the node's own MAC")
    settle(env)
    # A secondary ENI that the describe says is the node's link.
    grow_and_wait(env, 6, "x")
    settle(env)
    secondary = [e for e in env.show("enis") if not e["primary"]]
    assert secondary, env.show("enis")
    env.rules({"id": "desc", "action": "DescribeNetworkInterfaces",
               "mode": "describe", "match": {"secondary": True},
               "mac": mac})
    env.reconcile()
    assert env.changed("desc")
    w.check([], r"%s is described with MAC %s \(the node's own link\)" % (
        re.escape(secondary[0]["id"]), re.escape(mac)))
    recover(env)
    w.check()


def test_describe_gives_the_primary_another_mac(make_env):
    """Reconciliation's describe lists the primary ENI (device 0) with a
    MAC that is not the node's, and an address more: the entry is not
    the cloud's view of that ENI, and none of it is used, as for a
    secondary ENI."""
    env = make_env(pool={"warm_ip_target": 1})
    env.start()
    pods_on(env, 2, "q")
    settle(env)
    w = Watch(env)
    fake = "02:aa:bb:cc:dd:ee"
    env.rules({"id": "pmac", "action": "DescribeNetworkInterfaces",
               "mode": "describe", "match": {"device_index": 0},
               "mac": fake, "add": ["10.0.0.250"]})
    env.reconcile()
    assert env.changed("pmac")
    w.check(["10.0.0.250"], r"%s is described with MAC %s, not its own" % (
        re.escape(env.node["primary_eni"]), re.escape(fake)))
    recover(env)
    w.check(["10.0.0.250"])


def test_describe_duplicates_an_address_across_enis(make_env):
    """Reconciliation's describe lists a pod's address (on the primary
    ENI) on a secondary ENI too, and the subnet's gateway and an address
    outside the subnet with it."""
    env = make_env(pool={"warm_ip_target": 1})
    env.start()
    held = pods_on(env, 6, "d")
    settle(env)
    primary_ip = next(ip for ip, e in held.values()
                      if e == env.node["primary_eni"])
    w = Watch(env)
    before = {p["container_id"]: p["ip"] for p in env.show("pods")}
    env.rules({"id": "dup", "action": "DescribeNetworkInterfaces",
               "mode": "describe", "match": {"secondary": True},
               "add": [primary_ip, SUBNET0_GW, "10.0.200.7"]})
    env.reconcile()
    assert env.changed("dup")
    w.check([SUBNET0_GW, "10.0.200.7"], r"carries %s, already on %s" % (
        re.escape(primary_ip), env.node["primary_eni"]))
    log = w.new_log()
    assert re.search(r"security: .*carries %s" % re.escape(SUBNET0_GW), log)
    assert re.search(r"security: .*carries 10\.0\.200\.7", log)
    assert {p["container_id"]: p["ip"] for p in env.show("pods")} == before
    recover(env)
    w.check()


def test_eni_ids_change_between_calls(make_env):
    """Every describe answer gives the secondary ENIs new made-up ids (the
    same MAC, device index and addresses): none is adopted under a made-up
    id, and nothing of the node's own link is touched."""
    env = make_env(pool={"warm_ip_target": 1})
    env.start()
    pods_on(env, 6, "i")
    settle(env)
    w = Watch(env)
    env.rules({"id": "ids", "action": "DescribeNetworkInterfaces",
               "mode": "describe", "match": {"secondary": True},
               "rename": True})
    for _ in range(3):
        env.ctl({"op": "reconcile"})
    made_up = {x["id_now"] for c in env.changed("ids") for x in c["enis"]}
    assert len(made_up) >= 3, env.changed()
    w.check([], r"is not listed, but its MAC is, as (%s)" % "|".join(
        made_up))
    ids = {e["id"] for e in env.show("enis")}
    assert not ids & made_up, ids & made_up
    recover(env, tag="j")
    w.check()


# ---- answers that are no answer ----

def reconcile_refused(env, w, needle):
    """The run is refused; the pool, the pods and the node stay exactly
    as they were."""
    def pool():
        return [[{k: v for k, v in x.items() if k != "since_s"}
                 for x in env.show(what)] for what in ("enis", "pods")]
    before = pool()
    a = env.ctl({"op": "reconcile"})
    assert a["ok"] is False, a
    w.check([], needle, unchanged=True)
    assert pool() == before


def test_describe_pages_that_never_end(make_env):
    env = make_env()
    env.start()
    pods_on(env, 2, "n")
    settle(env)
    w = Watch(env, whole=True)
    env.rules({"id": "pages", "action": "DescribeNetworkInterfaces",
               "mode": "pages"})
    # Each page starts the listing over: its second names an ENI again.
    reconcile_refused(env, w, r"page 2 lists eni-[0-9a-f]+ again")
    assert len(env.changed("pages")) >= 2
    recover(env)
    w.check()


@pytest.mark.parametrize("chunked", [False, True])
def test_gigantic_answer(make_env, chunked):
    # Time for the proxy to send past the 1 MiB cap on a starved machine
    # (under load it sent 320 KiB in the 3 s the other tests allow).
    env = make_env(cloud={"timeout_ms": 15000})
    env.start()
    pods_on(env, 2, "g")
    settle(env)
    w = Watch(env, whole=True)
    env.rules({"id": "huge", "action": "DescribeNetworkInterfaces",
               "mode": "huge", "bytes": 8 << 20, "chunked": chunked})
    reconcile_refused(env, w, r"over the \d+-byte cap")
    recover(env)
    w.check()


def test_slowloris_answer(make_env):
    # Three tries of 3 s each: the reconcile ends in seconds, not at its
    # 30 s deadline.
    env = make_env(cloud={"retry": {"max_attempts": 3}})
    env.start()
    pods_on(env, 2, "s")
    settle(env)
    w = Watch(env)
    env.rules({"id": "slow", "action": "DescribeNetworkInterfaces",
               "mode": "slow", "chunk": 16, "every_ms": 500})
    t0 = time.monotonic()
    out = {}
    th = threading.Thread(target=lambda: out.update(
        a=env.ctl({"op": "reconcile"})))
    th.start()
    try:
        env.wait(lambda: env.changed("slow"), 10, "a slow answer to begin")
        # While the answer dribbles, the pool goes on: an ADD and a DEL
        # are answered at once.
        a, took = env.add("s-during")
        assert a["ok"] and took < 1.0, (a, took)
        d, took = env.delete("s-during")
        assert d["ok"] and took < 1.0, (d, took)
    finally:
        th.join(60)
    assert not th.is_alive() and out["a"]["ok"] is False, out
    w.check([], r"no complete answer within 3000 ms")
    recover(env)
    w.check()
    assert time.monotonic() - t0 < 60


@pytest.mark.parametrize("mode,needle", [
    ("deep", r"nested deeper than \d+ levels"),
    ("doctype", r"DOCTYPE in an answer \(refused\)"),
    ("xxe", r"DOCTYPE in an answer \(refused\)"),
    ("charrefs", r"networkInterfaceId> too long"),
])
def test_hostile_xml(make_env, mode, needle):
    env = make_env()
    env.start()
    pods_on(env, 2, "x")
    settle(env)
    w = Watch(env, whole=True)
    env.rules({"id": mode, "action": "DescribeNetworkInterfaces",
               "mode": mode, "levels": 20000, "n": 5000})
    reconcile_refused(env, w, needle)
    recover(env)
    w.check()


# ---- a subnet described with a CIDR that is no network's ----

def test_subnet_cidr_with_host_bits(make_env):
    """DescribeSubnets gives the node's subnet as 10.0.0.16/20: inside
    the VPC and of a sane size, but with host bits set.  Taken as is, the
    subnet's reserved addresses would be counted from .16, so the real
    network address, gateway and DNS address pass the check, and an assign
    answer naming the gateway puts it in a pod."""
    env = make_env()
    sid = env.node["subnet_id"]
    env.rules({"id": "cidr", "action": "DescribeSubnets", "mode": "subnets",
               "match": {"id": sid}, "cidr": "10.0.0.16/20"},
              {"id": "gw", "action": "AssignPrivateIpAddresses",
               "mode": "assign", "replace": [SUBNET0_GW, "10.0.0.2"]})
    link = node_link(env)
    env.start()
    w = Watch(env, link)
    got = grow_and_wait(env, 4, "c")
    assert env.changed("cidr"), "the lie was never told"
    w.check([SUBNET0_GW, "10.0.0.2"],
            r"%s is described as 10\.0\.0\.16/20, which has host bits" %
            re.escape(sid), got=got)
    recover(env)
    w.check([SUBNET0_GW, "10.0.0.2"])
