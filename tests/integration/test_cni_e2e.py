"""enid-cni end to end: the plugin binary run the way a container runtime
runs it (in the node's network namespace, CNI_NETNS a pod namespace made
with `ip netns add`), against enid in a node of tests/vpcsim.

Pods added in parallel reach the VPC host, on secondary ENIs too; CHECK,
DEL, GC and STATUS do what the CNI specification says and what the host
shows; the reference ptp plugin works with enid-ipam; every output is
checked against a JSON schema of the specification's result, error and
version shapes for the configuration's cniVersion.
"""
import concurrent.futures
import itertools
import json
import os
import subprocess
import time

import jsonschema
import pytest

from conftest import SRCDIR, built, libcni_version, module_dir
from poolenv import PoolEnv

_seq = itertools.count()
VERSIONS = ("0.4.0", "1.0.0", "1.1.0")

# ---- the specification's shapes, per version ----

# A dual-stack pod's result has an IPv6 address (and its routes) too.
IP_ADDR = r"^((\d{1,3}\.){3}\d{1,3}|[0-9a-f]{0,4}(:[0-9a-f]{0,4}){2,7})$"
IP_CIDR = r"^((\d{1,3}\.){3}\d{1,3}/\d{1,2}|" \
    r"[0-9a-f]{0,4}(:[0-9a-f]{0,4}){2,7}/\d{1,3})$"
MAC = r"^([0-9a-f]{2}:){5}[0-9a-f]{2}$"
IFNAME = r"^[^/: \t\n]{1,15}$"
STRINGS = {"type": "array", "items": {"type": "string"}}


def result_schema(version, ipam=False):
    iface = {"type": "object", "required": ["name"],
             "additionalProperties": False,
             "properties": {"name": {"type": "string", "pattern": IFNAME},
                            "mac": {"type": "string", "pattern": MAC},
                            "sandbox": {"type": "string", "minLength": 1}}}
    ip = {"type": "object", "required": ["address"],
          "additionalProperties": False,
          "properties": {"address": {"type": "string", "pattern": IP_CIDR},
                         "gateway": {"type": "string", "pattern": IP_ADDR}}}
    route = {"type": "object", "required": ["dst"],
             "additionalProperties": False,
             "properties": {"dst": {"type": "string", "pattern": IP_CIDR},
                            "gw": {"type": "string", "pattern": IP_ADDR}}}
    if version == "0.4.0":
        ip["required"].append("version")
        ip["properties"]["version"] = {"enum": ["4", "6"]}
    if version == "1.1.0":
        iface["properties"].update(mtu={"type": "integer", "minimum": 68},
                                   socketPath={"type": "string"},
                                   pciID={"type": "string"})
        for k in ("mtu", "advmss", "priority", "table", "scope"):
            route["properties"][k] = {"type": "integer"}
    if not ipam:
        ip["required"].append("interface")
        ip["properties"]["interface"] = {"type": "integer", "minimum": 0}
    props = {"cniVersion": {"const": version},
             "ips": {"type": "array", "items": ip, "minItems": 1},
             "routes": {"type": "array", "items": route},
             "dns": {"type": "object", "additionalProperties": False,
                     "properties": {"nameservers": STRINGS,
                                    "domain": {"type": "string"},
                                    "search": STRINGS, "options": STRINGS}}}
    required = ["cniVersion", "ips"]
    if not ipam:
        props["interfaces"] = {"type": "array", "items": iface,
                               "minItems": 2}
        required.append("interfaces")
    return {"type": "object", "required": required,
            "additionalProperties": False, "properties": props}


ERROR_SCHEMA = {
    "type": "object", "required": ["cniVersion", "code", "msg"],
    "additionalProperties": False,
    "properties": {"cniVersion": {"enum": list(VERSIONS)},
                   "code": {"type": "integer", "minimum": 1},
                   "msg": {"type": "string", "minLength": 1},
                   "details": {"type": "string"}}}

VERSION_SCHEMA = {
    "type": "object", "required": ["cniVersion", "supportedVersions"],
    "additionalProperties": False,
    "properties": {"cniVersion": {"enum": list(VERSIONS)},
                   "supportedVersions": {"type": "array", "minItems": 1,
                                         "items": {"enum": list(VERSIONS)}}}}


class Out:
    def __init__(self, rc, out, stderr):
        self.rc, self.out, self.stderr = rc, out, stderr

    @property
    def ok(self):
        return self.rc == 0

    def __repr__(self):
        return "Out(rc=%d, out=%r, stderr=%r)" % (self.rc, self.out,
                                                  self.stderr[-500:])


def run_plugin(node_ns, command, conf, cid=None, ifname="eth0", netns=None,
               args=None, binary="cni/enid-cni", extra_env=None,
               timeout=60):
    """The plugin as a runtime runs it, in the node's namespace; its output
    checked against the shape its command and version call for."""
    env = {"CNI_COMMAND": command, "CNI_PATH": "/usr/lib/cni:" +
           os.path.dirname(built("cni/enid-ipam")),
           "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    if cid is not None:
        env["CNI_CONTAINERID"] = cid
        env["CNI_IFNAME"] = ifname
    if netns is not None:
        env["CNI_NETNS"] = netns
    if args is not None:
        env["CNI_ARGS"] = args
    env.update(extra_env or {})
    exe = binary if binary.startswith("/") else built(binary)
    r = subprocess.run(["nsenter", "--net=/run/netns/" + node_ns, exe],
                       input=json.dumps(conf), env=env,
                       capture_output=True, text=True, timeout=timeout)
    out = json.loads(r.stdout) if r.stdout.strip() else None
    version = conf.get("cniVersion", "1.1.0")
    if r.returncode != 0:
        assert out is not None, ("an error must be printed", r)
        jsonschema.validate(out, ERROR_SCHEMA)
    elif command == "VERSION":
        jsonschema.validate(out, VERSION_SCHEMA)
    elif command == "ADD":
        ipam = "ipam" in conf and conf["ipam"]["type"] == "enid-ipam" and \
            os.path.basename(exe) == "enid-ipam"
        jsonschema.validate(out, result_schema(version, ipam=ipam))
    else:
        # DEL, CHECK, GC and STATUS print nothing on success.
        assert out is None, (command, r.stdout)
    return Out(r.returncode, out, r.stderr)


def ip(*argv, check=True):
    return subprocess.run(["ip", *argv], check=check, capture_output=True,
                          text=True)


def links(ns):
    return {l["ifname"]: l for l in
            json.loads(ip("-n", ns, "-j", "link", "show").stdout)}


def ping(pod_ns, host, wait=2):
    r = subprocess.run(["ip", "netns", "exec", pod_ns, "ping", "-c", "1",
                        "-W", str(wait), "-q", host], capture_output=True)
    return r.returncode == 0


class Pods:
    """Pod namespaces made for a test, removed at the end."""

    def __init__(self, tag):
        self.tag = tag
        self.made = []

    def new(self):
        name = "%s%d-%d" % (self.tag, os.getpid() % 10000, next(_seq))
        ip("netns", "add", name)
        self.made.append(name)
        return name

    def cleanup(self):
        for n in self.made:
            ip("netns", "del", n, check=False)


def path_of(pod_ns):
    return "/run/netns/" + pod_ns


@pytest.fixture(scope="module")
def mod_dir(enid_user):
    with module_dir("enid-cni-e2e-") as d:
        yield d


def make_env(d, enid_user, tag, sim_args, **pool):
    prefix = "%s%d%d" % (tag, os.getpid() % 10000, next(_seq))
    base = {"add_timeout_s": 20, "ip_cooldown_s": 0, "link_timeout_s": 10}
    base.update(pool)
    wd = d / tag
    wd.mkdir()
    os.chmod(wd, 0o755)
    e = PoolEnv(wd, enid_user, d / "helpers", prefix=prefix,
                sim_args=sim_args, pool=base)
    e.start()
    return e


@pytest.fixture(scope="module")
def env(mod_dir, enid_user):
    """Five secondary addresses per ENI and room for eight ENIs: thirty
    pods need several."""
    e = make_env(mod_dir, enid_user, "ec",
                 ("--ip-limit", "6", "--eni-limit", "8"),
                 warm_ip_target=4)
    pods = Pods("cp")
    e.podns = pods
    try:
        yield e
    finally:
        pods.cleanup()
        e.stop()


def conf_for(env, version="1.1.0", **extra):
    c = {"cniVersion": version, "name": "pods", "type": "enid-cni",
         "socket": str(env.cni_sock), "mtu": 1500}
    c.update(extra)
    return c


def add(env, cid, pod_ns, version="1.1.0", ifname="eth0", **kw):
    return run_plugin(env.ns, "ADD", conf_for(env, version), cid=cid,
                      ifname=ifname, netns=path_of(pod_ns),
                      args="IgnoreUnknown=1;K8S_POD_NAMESPACE=default;"
                      "K8S_POD_NAME=%s;K8S_POD_UID=uid-%s" % (cid, cid),
                      **kw)


def delete(env, cid, pod_ns=None, ifname="eth0", prev=None):
    c = conf_for(env)
    if prev is not None:
        c["prevResult"] = prev
    return run_plugin(env.ns, "DEL", c, cid=cid, ifname=ifname,
                      netns=path_of(pod_ns) if pod_ns else None)


def check(env, cid, pod_ns, prev, ifname="eth0"):
    return run_plugin(env.ns, "CHECK", conf_for(env, prevResult=prev),
                      cid=cid, ifname=ifname, netns=path_of(pod_ns))


def held(env):
    return {(p["container_id"], p["ifname"]): p for p in env.show("pods")}


def host_end(result):
    return next(i["name"] for i in result["interfaces"] if "sandbox" not in i)


ADDED = {}      # cid -> (pod ns, result), shared by the tests below


def test_parallel_pods_reach_the_vpc_host(env):
    cids = ["par%02d" % i for i in range(30)]
    nss = {cid: env.podns.new() for cid in cids}
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(len(cids)) as ex:
        outs = dict(zip(cids, ex.map(lambda c: add(env, c, nss[c]), cids)))
    took = time.monotonic() - t0
    for cid, o in outs.items():
        assert o.ok, (cid, o)
        ADDED[cid] = (nss[cid], o.out)
    addrs = [o.out["ips"][0]["address"] for o in outs.values()]
    assert len(set(addrs)) == 30, addrs
    assert all(a.endswith("/32") for a in addrs)
    # the broker holds them, on more than one ENI (secondary ones too)
    pods = held(env)
    enis = {e["id"]: e for e in env.show("enis")}
    on = {pods[(cid, "eth0")]["eni"] for cid in cids}
    assert len(on) >= 3, on
    assert any(not enis[e]["primary"] for e in on), on
    for cid in cids:
        assert pods[(cid, "eth0")]["ip"] + "/32" == \
            outs[cid].out["ips"][0]["address"]
        assert pods[(cid, "eth0")]["name"] == cid
    with concurrent.futures.ThreadPoolExecutor(10) as ex:
        pinged = dict(zip(cids, ex.map(
            lambda c: ping(nss[c], env.ep["vpc_host"]), cids)))
    assert all(pinged.values()), [c for c, ok in pinged.items() if not ok]
    # the host side: one veth per pod, named from the attachment
    host = links(env.ns)
    for cid in cids:
        name = host_end(outs[cid].out)
        assert name in host and host[name]["link_type"] == "ether", name
        assert len(name) == 15 and name.startswith("enid")
    print("30 parallel ADDs took %.2f s" % took)


def test_check_passes_then_names_the_missing_route(env):
    cid = "par00"
    pod_ns, res = ADDED[cid]
    o = check(env, cid, pod_ns, res)
    assert o.ok, o
    ip("-n", pod_ns, "route", "del", "default")
    o = check(env, cid, pod_ns, res)
    assert not o.ok and o.out["code"] == 122, o
    assert "default route via 169.254.1.1 dev eth0 is missing" in \
        o.out["msg"], o
    # enid's side is checked too: an address it does not hold for them
    wrong = json.loads(json.dumps(res))
    wrong["ips"][0]["address"] = "10.0.255.250/32"
    o = check(env, "par01", ADDED["par01"][0], wrong)
    assert not o.ok and o.out["code"] == 107, o
    assert "enid: address-mismatch" == o.out["details"], o


def test_del_twice_and_with_the_netns_gone(env):
    for cid in ("par00", "par01"):
        pod_ns, res = ADDED.pop(cid)
        for _ in range(2):
            o = delete(env, cid, pod_ns, prev=res)
            assert o.ok, o
        assert host_end(res) not in links(env.ns)
        assert (cid, "eth0") not in held(env)
    # the pod's namespace is gone before its DEL
    cid = "par02"
    pod_ns, res = ADDED.pop(cid)
    ip("netns", "del", pod_ns)
    o = delete(env, cid, pod_ns)
    assert o.ok, o
    assert (cid, "eth0") not in held(env)
    # no CNI_NETNS at all
    cid = "par03"
    pod_ns, res = ADDED.pop(cid)
    o = delete(env, cid, None)
    assert o.ok, o
    assert host_end(res) not in links(env.ns)
    assert (cid, "eth0") not in held(env)


def test_second_add_in_another_netns_changes_nothing(env):
    cid = "par04"
    pod_ns, res = ADDED[cid]
    other = env.podns.new()
    # The pool's assigned count, not its free one: an address an earlier
    # test's DEL left cooling may come free meanwhile, or the pool grow.
    before = (held(env), sorted(links(env.ns)),
              env.show("pool")["assigned"])
    o = add(env, cid, other)
    assert not o.ok and o.out["code"] == 121, o
    assert "already attached in another network namespace" in o.out["msg"]
    assert (held(env), sorted(links(env.ns)),
            env.show("pool")["assigned"]) == before
    assert "eth0" not in links(other)
    assert ping(pod_ns, env.ep["vpc_host"])
    # the same namespace again is the same attachment
    o = add(env, cid, pod_ns)
    assert o.ok, o
    assert o.out["ips"] == res["ips"] and o.out["interfaces"] == \
        res["interfaces"]


def test_netns_that_is_not_one_is_refused_before_anything(env, tmp_path):
    plain = tmp_path / "not-a-netns"
    plain.write_text("")
    before = (held(env), sorted(links(env.ns)))
    for path, needle in ((str(plain), "is not a namespace file"),
                         ("/proc/self/ns/uts", "is not a network namespace"),
                         ("/run/netns/" + env.ns, "the node's own network"),
                         ("/run/netns/no-such-ns", "No such file")):
        o = run_plugin(env.ns, "ADD", conf_for(env), cid="badns",
                       netns=path)
        assert not o.ok and o.out["code"] == 4, (path, o)
        assert "CNI_NETNS" in o.out["msg"] and needle in o.out["msg"], o
    assert (held(env), sorted(links(env.ns))) == before


def test_results_in_each_version_shape(env):
    for v in VERSIONS:
        pod_ns = env.podns.new()
        cid = "ver" + v.replace(".", "")
        o = add(env, cid, pod_ns, version=v)
        assert o.ok, o
        assert o.out["cniVersion"] == v
        assert ("version" in o.out["ips"][0]) == (v == "0.4.0")
        assert ("mtu" in o.out["interfaces"][1]) == (v == "1.1.0")
        assert o.out["interfaces"][1]["sandbox"] == path_of(pod_ns)
        assert ping(pod_ns, env.ep["vpc_host"])
        c = conf_for(env, v, prevResult=o.out)
        r = run_plugin(env.ns, "CHECK", c, cid=cid, netns=path_of(pod_ns))
        assert r.ok, r
        r = run_plugin(env.ns, "DEL", c, cid=cid, netns=path_of(pod_ns))
        assert r.ok, r
    o = run_plugin(env.ns, "VERSION", {"cniVersion": "1.0.0"})
    assert o.ok and o.out["cniVersion"] == "1.0.0", o


def test_gc_releases_only_the_others(env):
    keep = ["par%02d" % i for i in range(4, 12)]
    gone = [cid for cid in ADDED if cid not in keep]
    assert len(gone) >= 10
    c = conf_for(env)
    c["cni.dev/valid-attachments"] = [{"containerID": cid,
                                       "ifname": "eth0"} for cid in keep]
    o = run_plugin(env.ns, "GC", c)
    assert o.ok, o
    h = held(env)
    host = links(env.ns)
    for cid in keep:
        assert (cid, "eth0") in h
        assert host_end(ADDED[cid][1]) in host
    for cid in gone:
        assert (cid, "eth0") not in h, cid
        assert host_end(ADDED[cid][1]) not in host, cid
    assert not [n for n in host if n.startswith("enid") and n not in
                {host_end(ADDED[c][1]) for c in keep}]
    for cid in keep[:3]:
        assert ping(ADDED[cid][0], env.ep["vpc_host"])
    for cid in gone:
        ADDED.pop(cid)


def test_ptp_with_enid_ipam(env):
    conf = {"cniVersion": "1.0.0", "name": "ptpnet", "type": "ptp",
            "mtu": 1500, "ipam": {"type": "enid-ipam",
                                  "socket": str(env.cni_sock)}}
    fwd = ip("netns", "exec", env.ns, "sysctl", "-n",
             "net.ipv4.ip_forward").stdout.strip()
    made = []
    try:
        for i in range(3):
            pod_ns = env.podns.new()
            cid = "ptp%d" % i
            o = run_plugin(env.ns, "ADD", conf, cid=cid,
                           netns=path_of(pod_ns), binary="/usr/lib/cni/ptp")
            assert o.ok, o
            jsonschema.validate(o.out, result_schema("1.0.0"))
            made.append((cid, pod_ns, o.out))
            addr = o.out["ips"][0]["address"].split("/")[0]
            assert held(env)[(cid, "eth0")]["ip"] == addr
            assert ping(pod_ns, env.ep["vpc_host"]), o.out
        # the IPAM role's own answer, as ptp received it
        o = run_plugin(env.ns, "CHECK", dict(conf, prevResult=made[0][2]),
                       cid=made[0][0], netns=path_of(made[0][1]),
                       binary="cni/enid-ipam")
        assert o.ok, o
        for cid, pod_ns, res in made:
            o = run_plugin(env.ns, "DEL", dict(conf, prevResult=res),
                           cid=cid, netns=path_of(pod_ns),
                           binary="/usr/lib/cni/ptp")
            assert o.ok, o
            assert (cid, "eth0") not in held(env)
    finally:
        ip("netns", "exec", env.ns, "sysctl", "-qw",
           "net.ipv4.ip_forward=" + fwd, check=False)


def test_ipam_result_alone(env):
    conf = {"cniVersion": "1.1.0", "name": "ptpnet", "type": "ptp",
            "ipam": {"type": "enid-ipam", "socket": str(env.cni_sock)}}
    o = run_plugin(env.ns, "ADD", conf, cid="ipam1",
                   netns="/run/netns/none", binary="cni/enid-ipam")
    assert o.ok, o
    assert "interfaces" not in o.out
    node_ip = env.node["primary_ip"]
    assert o.out["ips"][0]["gateway"] == node_ip, o.out
    o = run_plugin(env.ns, "DEL", conf, cid="ipam1", binary="cni/enid-ipam")
    assert o.ok, o
    assert ("ipam1", "eth0") not in held(env)


# ---- STATUS ----

@pytest.fixture
def small_env(mod_dir, enid_user):
    """Three secondary addresses per ENI, up to four ENIs."""
    e = make_env(mod_dir, enid_user, "es%d" % next(_seq),
                 ("--ip-limit", "4", "--eni-limit", "4"),
                 warm_ip_target=1, subnet_backoff_s=2)
    try:
        yield e
    finally:
        e.stop()


def status(env):
    return run_plugin(env.ns, "STATUS", conf_for(env))


def test_status_follows_the_pool(small_env):
    env = small_env
    sid = env.node["subnet_id"]
    o = status(env)
    assert o.ok, o
    # Pods on a secondary ENI first (for the 51 below).
    taken = []
    enis = {}

    def on_secondary():
        a, _ = env.add("take%d" % len(taken))
        assert a["ok"], a
        taken.append("take%d" % len(taken))
        enis.update({e["id"]: e for e in env.show("enis")})
        return not enis[a["eni"]]["primary"]
    env.wait(on_secondary, 30, "a pod on a secondary ENI", step=0)
    # The subnet runs dry, and every free address is taken.
    env.subnet_free(sid, 0)

    def exhausted():
        if env.show("pool")["free"] > 0:
            a, _ = env.add("take%d" % len(taken))
            if a["ok"]:
                taken.append("take%d" % len(taken))
            return None
        o = status(env)
        return o if not o.ok else None
    o = env.wait(exhausted, 40, "STATUS to report the exhausted subnet",
                 step=0.2)
    assert o.out["code"] == 50, o
    assert "no ADD can be served" in o.out["msg"] and \
        "subnet-full" in o.out["details"] + o.out["msg"], o
    # Capacity comes back: STATUS is fine again.
    env.subnet_free(sid, 100)
    for cid in taken[:2]:
        a, _ = env.delete(cid)
        assert a["ok"], a
    env.wait(lambda: status(env).ok, 30, "STATUS to recover", step=0.5)

    # An ENI holding pods vanishes behind enid's back: 51.
    victim = next(p["eni"] for p in env.show("pods")
                  if p["eni"] in enis and not enis[p["eni"]]["primary"])
    ec2 = env.ec2()
    att = ec2.describe_network_interfaces(
        NetworkInterfaceIds=[victim])["NetworkInterfaces"][0]
    ec2.detach_network_interface(
        AttachmentId=att["Attachment"]["AttachmentId"], Force=True)
    env.reconcile()
    o = env.wait(lambda: (lambda s: s if s.rc else None)(status(env)), 30,
                 "STATUS to report the lost pods", step=0.5)
    assert o.out["code"] == 51, o
    assert "lost their address or ENI" in o.out["msg"], o


def test_status_when_enid_is_down(env):
    c = conf_for(env, socket=str(env.workdir / "nothing.sock"))
    o = run_plugin(env.ns, "STATUS", c)
    assert not o.ok and o.out["code"] == 50, o
    assert "cannot reach enid" in o.out["msg"]
    # DEL with enid unreachable: the pod's interface still goes
    cid, pod_ns = "down1", env.podns.new()
    res = add(env, cid, pod_ns)
    assert res.ok, res
    res = res.out
    o = run_plugin(env.ns, "DEL", c, cid=cid, netns=path_of(pod_ns))
    assert not o.ok and o.out["code"] == 11, o
    assert "the pod's interface was removed" in o.out["msg"]
    assert host_end(res) not in links(env.ns)
    o = delete(env, cid, pod_ns)
    assert o.ok, o


# ---- the shipped conflist, as each generation of runtime reads it ----

@pytest.fixture(scope="module")
def rt_env(mod_dir, enid_user):
    e = make_env(mod_dir, enid_user, "rt",
                 ("--ip-limit", "6", "--eni-limit", "2"), warm_ip_target=2)
    e.podns = Pods("rt")
    try:
        yield e
    finally:
        e.podns.cleanup()
        e.stop()


def shipped_plugin_conf(env, newest):
    """contrib/10-enid.conflist's plugin as libcni hands it over: the
    plugin's object with the list's name and the version libcni took."""
    with open(os.path.join(SRCDIR, "contrib", "10-enid.conflist")) as f:
        conflist = json.load(f)
    return dict(conflist["plugins"][0], name=conflist["name"],
                cniVersion=libcni_version(conflist, newest),
                socket=str(env.cni_sock), mtu=1500)


def test_shipped_conflist_under_each_runtime(rt_env):
    """containerd 1.6 and 1.7 (libcni before 1.2) read 1.0.0 and get
    results in it, and, as libcni never sends GC or STATUS below 1.1.0,
    the plugin refuses them there (code 1); containerd 2.x and recent
    CRI-O (libcni 1.2 and later) read 1.1.0 and have both."""
    env = rt_env
    for newest, version in (("1.0.0", "1.0.0"), ("1.1.0", "1.1.0")):
        conf = shipped_plugin_conf(env, newest)
        assert conf["cniVersion"] == version
        cid, pod_ns = "rt" + version.replace(".", ""), env.podns.new()
        o = run_plugin(env.ns, "ADD", conf, cid=cid, netns=path_of(pod_ns))
        assert o.ok, o
        assert o.out["cniVersion"] == version, o
        assert ("mtu" in o.out["interfaces"][1]) == (version == "1.1.0")
        assert ping(pod_ns, env.ep["vpc_host"])
        o = run_plugin(env.ns, "CHECK", dict(conf, prevResult=o.out),
                       cid=cid, netns=path_of(pod_ns))
        assert o.ok, o
        st = run_plugin(env.ns, "STATUS", conf)
        gc = run_plugin(env.ns, "GC", dict(conf, **{
            "cni.dev/valid-attachments": [{"containerID": cid,
                                           "ifname": "eth0"}]}))
        if version == "1.1.0":
            assert st.ok and gc.ok, (st, gc)
        else:
            for o, cmd in ((st, "STATUS"), (gc, "GC")):
                assert o.rc != 0 and o.out["code"] == 1, o
                assert o.out["cniVersion"] == version, o
                assert "%s needs cniVersion 1.1.0, not %s" % (cmd, version) \
                    in o.out["msg"], o
        # Either way the pod is still held and wired.
        assert (cid, "eth0") in held(env)
        assert ping(pod_ns, env.ep["vpc_host"])
        o = run_plugin(env.ns, "DEL", conf, cid=cid, netns=path_of(pod_ns))
        assert o.ok, o
        assert (cid, "eth0") not in held(env)


def test_gc_with_a_null_list_releases_every_attachment(rt_env):
    """libcni passes the runtime's list of valid attachments as it is, and
    an empty one is JSON null (CRI-O's, for a network with no live pod):
    that is the empty list, and everything goes.  The key absent is still
    refused: without it GC would release what the runtime never meant."""
    env = rt_env
    conf = shipped_plugin_conf(env, "1.1.0")
    made = {}
    for i in range(2):
        cid, pod_ns = "null%d" % i, env.podns.new()
        o = run_plugin(env.ns, "ADD", conf, cid=cid, netns=path_of(pod_ns))
        assert o.ok, o
        made[cid] = o.out
    o = run_plugin(env.ns, "GC", conf)
    assert o.rc != 0 and o.out["code"] == 7, o
    assert 'GC needs "cni.dev/valid-attachments"' in o.out["msg"], o
    assert {(c, "eth0") for c in made} <= set(held(env))
    assert all(host_end(r) in links(env.ns) for r in made.values())
    o = run_plugin(env.ns, "GC", dict(conf, **{
        "cni.dev/valid-attachments": None}))
    assert o.ok, o
    assert held(env) == {}, held(env)
    host = links(env.ns)
    assert not [n for n in host if n.startswith("enid")], host
