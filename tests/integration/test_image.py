"""contrib/daemonset.yaml as written, run with podman in a node of the
simulated VPC, from images that `make image` builds from this tree.

Each container is started from what the manifest says, read here, not
copied: its command, args and environment, its securityContext (user,
capabilities dropped and added, no new privileges, read-only root, not
privileged), the pod's seccomp profile (RuntimeDefault: podman's default),
its memory limit, and its volumes (hostPath: directories of the test that
stand for the host's; configMap: the ConfigMap's items, read-only).  A key
the translation does not know fails the test, so the manifest cannot gain
a setting that was never run.  hostNetwork is the node's namespace.

Not from the manifest, because this machine needs them: runc (crun refuses
this VM's hybrid cgroup hierarchy), and rlimits at most this machine's own
hard limits (podman's default raises them, and root here lacks
CAP_SYS_RESOURCE); the kubelet's own choices (CPU shares from requests,
probe timing, restarts) are not emulated.  The configuration is the
ConfigMap's with only the EC2 endpoint and plain http for the sim.
"""
import json
import os
import pathlib
import resource
import shutil
import subprocess
import tarfile
import tempfile
import threading
import time

import pytest

import podwire
from conftest import BUILDDIR, SRCDIR, Sim, libcni_version

try:
    import yaml
except ImportError:
    yaml = None

pytestmark = pytest.mark.full

DAEMONSET = os.path.join(SRCDIR, "contrib", "daemonset.yaml")
ENID_UID = 65532        # contrib/image-base's, checked below

CONTAINER_KEYS = {"name", "image", "command", "args", "env",
                  "securityContext", "volumeMounts", "resources",
                  "livenessProbe"}
SECURITY_KEYS = {"runAsUser", "privileged", "allowPrivilegeEscalation",
                 "readOnlyRootFilesystem", "capabilities"}


def manifest():
    if yaml is None:
        pytest.skip("python3-yaml is not installed (tests/deps.sh)")
    with open(DAEMONSET) as f:
        docs = {d["kind"]: d for d in yaml.safe_load_all(f) if d}
    return docs["ConfigMap"], docs["DaemonSet"]


def mem_flag(quantity):
    for suffix, unit in (("Mi", "m"), ("Gi", "g"), ("Ki", "k")):
        if quantity.endswith(suffix):
            return quantity[:-len(suffix)] + unit
    raise AssertionError("memory limit %r: no translation" % quantity)


class Podman:
    """podman with its storage, run state and temporary files under the
    test's directory, so nothing outlives the test."""

    def __init__(self, d):
        self.d = d
        self.base = ["podman", "--root", str(d / "storage"),
                     "--runroot", str(d / "runroot"),
                     "--tmpdir", str(d / "tmp"),
                     "--cgroup-manager", "cgroupfs",
                     "--events-backend", "none", "--runtime", "runc"]
        (d / "tmp").mkdir(parents=True, exist_ok=True)
        nofile = min(resource.getrlimit(resource.RLIMIT_NOFILE)[1], 65536)
        nproc = min(resource.getrlimit(resource.RLIMIT_NPROC)[1], 4096)
        self.ulimits = ["--ulimit", "nofile=%d:%d" % (nofile, nofile),
                        "--ulimit", "nproc=%d:%d" % (nproc, nproc)]

    def __call__(self, *argv, check=True, timeout=120, **kw):
        r = subprocess.run(self.base + list(argv), capture_output=True,
                           text=True, timeout=timeout, **kw)
        if check:
            assert r.returncode == 0, (argv, r.stdout, r.stderr)
        return r

    def cleanup(self):
        self("rm", "-af", "-t", "5", check=False)
        self("rmi", "-af", check=False)
        # Not "system reset": it would remove the machine's podman
        # networks too, which are not the test's.  The directory goes
        # with the test's.


class Host:
    """The node: the sim's namespace, and the host directories the
    manifest's hostPath volumes name, under the test's directory."""

    def __init__(self, d, cm, ds):
        self.d = d
        self.cm = cm
        self.ds = ds
        self.pod = ds["spec"]["template"]["spec"]
        self.volumes = {v["name"]: v for v in self.pod["volumes"]}
        self.root = d / "host"
        for v in self.volumes.values():
            if "hostPath" in v and not self.kernel(v["hostPath"]["path"]):
                assert v["hostPath"]["type"] == "DirectoryOrCreate", v
                self.path(v["hostPath"]["path"]).mkdir(parents=True,
                                                       exist_ok=True)

    @staticmethod
    def kernel(p):
        """The kernel's own directories are the host's themselves: the
        node's network settings under /proc/sys/net are those of the
        namespace of whoever opens them, the sim node's here."""
        return p == "/proc/sys/net"

    def path(self, p):
        if self.kernel(p):
            return pathlib.Path(p)
        return self.root / p.lstrip("/")

    def configmap_dir(self, vol, overrides):
        """The configMap volume's items, as the kubelet projects them."""
        # The kubelet's atomic writer: the files in a timestamped
        # directory, "..data" a link to it, and each item a link through
        # "..data" (so an installer that refuses links fails here as on a
        # node).
        d = self.d / ("configmap-" + vol["name"])
        d.mkdir(exist_ok=True)
        assert vol["configMap"]["name"] == self.cm["metadata"]["name"]
        stamp = "..2026_01_01_00_00_00.%d" % len(list(d.iterdir()))
        (d / stamp).mkdir()
        for item in vol["configMap"]["items"]:
            text = overrides.get(item["key"], self.cm["data"][item["key"]])
            (d / stamp / item["path"]).write_text(text)
        tmp = d / "..data_tmp"
        os.symlink(stamp, tmp)
        os.replace(tmp, d / "..data")
        for item in vol["configMap"]["items"]:
            link = d / item["path"]
            if not link.is_symlink():
                os.symlink(os.path.join("..data", item["path"]), link)
        return d

    def run_args(self, c, podman, ns, image, name, overrides):
        assert set(c) <= CONTAINER_KEYS, set(c) - CONTAINER_KEYS
        sc = c["securityContext"]
        assert set(sc) <= SECURITY_KEYS, set(sc) - SECURITY_KEYS
        assert self.pod["hostNetwork"] is True
        a = ["run", "--name", name, "--network", "ns:/run/netns/" + ns]
        a += podman.ulimits
        assert self.pod["securityContext"]["seccompProfile"]["type"] == \
            "RuntimeDefault"
        a += ["--user", str(sc["runAsUser"])]
        assert sc["privileged"] is False
        caps = sc["capabilities"]
        assert set(caps) <= {"drop", "add"}, caps
        for cap in caps.get("drop", []):
            a += ["--cap-drop", cap]
        for cap in caps.get("add", []):
            a += ["--cap-add", cap]
        if sc["allowPrivilegeEscalation"] is False:
            a += ["--security-opt", "no-new-privileges"]
        if sc["readOnlyRootFilesystem"]:
            # Kubernetes adds no tmpfs of its own to a read-only root.
            a += ["--read-only", "--read-only-tmpfs=false"]
        for e in c.get("env", []):
            assert set(e) == {"name", "value"}, e
            a += ["--env", "%s=%s" % (e["name"], e["value"])]
        for m in c["volumeMounts"]:
            assert set(m) <= {"name", "mountPath", "readOnly"}, m
            vol = self.volumes[m["name"]]
            if "hostPath" in vol:
                src, ro = self.path(vol["hostPath"]["path"]), \
                    m.get("readOnly", False)
            else:
                assert set(vol) == {"name", "configMap"}, vol
                src, ro = self.configmap_dir(vol, overrides), True
            a += ["--volume", "%s:%s%s" % (src, m["mountPath"],
                                           ":ro" if ro else "")]
        limit = c["resources"].get("limits", {}).get("memory")
        if limit:
            a += ["--memory", mem_flag(limit)]
        a += ["--entrypoint", json.dumps(c["command"]), image]
        return a + c.get("args", [])


@pytest.fixture(scope="module")
def deploy():
    """Two images built by `make image` (two builds of this tree), the
    sim with one node, and the host's directories."""
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (tests/deps.sh installs it)")
    cm, ds = manifest()
    d = pathlib.Path(tempfile.mkdtemp(prefix="enid-image-"))
    os.chmod(d, 0o755)
    podman = Podman(d / "podman")
    sim = None
    try:
        for tag in ("a", "b"):
            t0 = time.monotonic()
            r = subprocess.run(
                ["make", "-s", "-C", BUILDDIR, "image",
                 "PODMAN=" + " ".join(podman.base),
                 "IMAGE=localhost/enid-it:" + tag, "ENID_BUILD=it-" + tag],
                capture_output=True, text=True, timeout=1200)
            assert r.returncode == 0, r.stdout + r.stderr
            print("make image (%s): %.1f s" % (tag, time.monotonic() - t0))
        ids = {tag: podman("image", "inspect", "--format", "{{.Id}}",
                           "localhost/enid-it:" + tag).stdout.strip()
               for tag in ("a", "b")}
        assert ids["a"] != ids["b"], ids
        sim = Sim(d, nodes=1, prefix="enidimg%d" % (os.getpid() % 10000))
        ns = sim.ep["nodes"][0]["netns"]
        podwire.prepare_node(ns)
        env = Deploy(d, podman, Host(d, cm, ds), sim, ns)
        yield env
    finally:
        try:
            if sim is not None:
                env.cleanup_pods()
        finally:
            podman.cleanup()
            if sim is not None:
                sim.stop()
            shutil.rmtree(d, ignore_errors=True)


class Deploy:
    def __init__(self, d, podman, host, sim, ns):
        self.d = d
        self.podman = podman
        self.host = host
        self.sim = sim
        self.ns = ns
        self.pod_ns = []
        self.cids = []
        conf = json.loads(host.cm["data"]["enid.conf"])
        conf["cloud"].update(ec2_endpoint="http://198.18.0.1/",
                             allow_http=True)
        conf["cluster_name"] = "it"
        conf["log_level"] = "debug"
        self.overrides = {"enid.conf": json.dumps(conf, indent=2)}
        self.seq = 0

    def container(self, which):
        """"init": the plugin's installer; "node-setup"; else enid."""
        if which in ("init", "node-setup"):
            name = "install-cni" if which == "init" else which
            (c,) = [c for c in self.host.pod["initContainers"]
                    if c["name"] == name]
        else:
            (c,) = self.host.pod["containers"]
        return c

    def run(self, which, tag, detach=False, check=True):
        self.seq += 1
        name = "enid-it-%s-%s-%d" % (which, tag, self.seq)
        a = self.host.run_args(self.container(which), self.podman, self.ns,
                               "localhost/enid-it:" + tag, name,
                               self.overrides)
        if detach:
            a.insert(1, "--detach")
        r = self.podman(*a, check=False)
        if check:
            assert r.returncode == 0, (a, r.stdout, r.stderr)
        return name, r

    def check_settings(self, which, name):
        """What podman made of the manifest's securityContext."""
        sc = self.container(which)["securityContext"]
        got = json.loads(self.podman("inspect", name).stdout)[0]
        want = sorted("CAP_" + c for c in sc["capabilities"].get("add", []))
        assert sorted(got["EffectiveCaps"] or []) == want, got["EffectiveCaps"]
        assert got["HostConfig"]["ReadonlyRootfs"] is \
            sc["readOnlyRootFilesystem"]
        assert ("no-new-privileges" in got["HostConfig"]["SecurityOpt"]) is \
            (sc["allowPrivilegeEscalation"] is False)
        assert got["HostConfig"]["Privileged"] is False
        assert got["Config"]["User"] == str(sc["runAsUser"])

    def logs(self, name):
        r = self.podman("logs", name, check=False)
        return r.stdout + r.stderr

    def wait_running(self, name, timeout=60):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if "pool: running" in self.logs(name):
                return
            st = self.podman("inspect", "--format", "{{.State.Running}}",
                             name).stdout.strip()
            assert st == "true", self.logs(name)
            time.sleep(0.2)
        raise AssertionError("enid did not start:\n" + self.logs(name))

    def probe(self, name):
        """The liveness probe's command, run in the container as the
        kubelet runs it."""
        (c,) = self.host.pod["containers"]
        cmd = c["livenessProbe"]["exec"]["command"]
        return self.podman("exec", name, *cmd, check=False)

    # ---- pods, through the plugin the init container installed ----

    def plugin_conf(self):
        conflist = json.loads(
            (self.host.path("/etc/cni/net.d") / "10-enid.conflist")
            .read_text())
        (plugin,) = conflist["plugins"]
        conf = dict(plugin, name=conflist["name"],
                    cniVersion=libcni_version(conflist, "1.0.0"))
        # The host's /run/enid is the test's directory.
        assert conf["socket"] == "/run/enid/cni.sock"
        conf["socket"] = str(self.host.path("/run/enid") / "cni.sock")
        return conf

    def plugin(self, command, cid, pod_ns=None):
        env = {"CNI_COMMAND": command, "CNI_CONTAINERID": cid,
               "CNI_IFNAME": "eth0",
               "CNI_PATH": str(self.host.path("/opt/cni/bin")),
               "CNI_ARGS": "K8S_POD_NAMESPACE=default;K8S_POD_NAME=" + cid,
               "PATH": "/usr/bin:/bin"}
        if pod_ns:
            env["CNI_NETNS"] = "/run/netns/" + pod_ns
        exe = self.host.path("/opt/cni/bin") / "enid-cni"
        return subprocess.run(["nsenter", "--net=/run/netns/" + self.ns,
                               str(exe)], input=json.dumps(self.plugin_conf()),
                              env=env, capture_output=True, text=True,
                              timeout=60)

    def add_pod(self):
        n = len(self.cids)
        cid = "img%d-%d" % (os.getpid() % 10000, n)
        pod_ns = "enidimgp%d-%d" % (os.getpid() % 10000, n)
        subprocess.run(["ip", "netns", "add", pod_ns], check=True)
        self.pod_ns.append(pod_ns)
        r = self.plugin("ADD", cid, pod_ns)
        assert r.returncode == 0, (r.stdout, r.stderr)
        self.cids.append(cid)
        return cid, pod_ns, json.loads(r.stdout)

    def ping(self, pod_ns):
        r = subprocess.run(["ip", "netns", "exec", pod_ns, "ping", "-c", "1",
                            "-W", "2", "-q", self.sim.ep["vpc_host"]],
                           capture_output=True, text=True)
        return r.returncode == 0

    def cleanup_pods(self):
        for cid, pod_ns in zip(self.cids, self.pod_ns):
            self.plugin("DEL", cid, pod_ns)
        for pod_ns in self.pod_ns:
            subprocess.run(["ip", "netns", "del", pod_ns], check=False)
        self.cids, self.pod_ns = [], []


def image_file(rel):
    with open(os.path.join(BUILDDIR, "contrib", "image", "enid", rel),
              "rb") as f:
        return f.read()


def host_files(deploy):
    b, n = deploy.host.path("/opt/cni/bin"), deploy.host.path("/etc/cni/net.d")
    return {str(p.relative_to(deploy.host.root)):
            (os.readlink(p) if p.is_symlink() else p.read_bytes())
            for d in (b, n) for p in sorted(d.iterdir())}


def test_image_holds_what_it_should(deploy):
    """The image's files: enid's programs, the libraries they load, the CA
    bundle, passwd, group, nsswitch.conf; no shell."""
    p = deploy.podman
    cid = p("create", "localhost/enid-it:a").stdout.strip()
    tar = deploy.d / "image.tar"
    try:
        p("export", "-o", str(tar), cid)
    finally:
        p("rm", cid)
    with tarfile.open(tar) as t:
        names = {m.name.lstrip("./") for m in t.getmembers()
                 if not m.isdir()}
        passwd = t.extractfile("etc/passwd").read().decode()
    tar.unlink()
    # The user enid drops to is the one the ConfigMap's conflist names.
    users = {f[0]: f for f in (line.split(":")
                               for line in passwd.splitlines())}
    assert sorted(users) == ["enid", "root"]
    conflist = json.loads(deploy.host.cm["data"]["10-enid.conflist"])
    assert int(users["enid"][2]) == conflist["plugins"][0]["enid_user"] == \
        ENID_UID
    assert json.loads(deploy.host.cm["data"]["enid.conf"])["user"] == "enid"
    assert not {"bin/sh", "usr/bin/sh", "bin/dash"} & names
    progs = {"usr/sbin/enid", "usr/sbin/enidctl",
             "usr/libexec/enid/enid-netd", "usr/libexec/enid/enid-cloudd",
             "usr/libexec/enid/enid-cni-install", "opt/cni/bin/enid-cni",
             "opt/cni/bin/enid-ipam"}
    etc = {"etc/passwd", "etc/group", "etc/nsswitch.conf",
           "etc/ssl/certs/ca-certificates.crt"}
    assert progs | etc <= names, (progs | etc) - names
    others = names - progs - etc
    # Everything else is a shared library or the loader, and the
    # runtime's own files (mount points, /etc/hosts ... it adds).
    for n in others:
        assert ".so" in n or n in {"etc/hosts", "etc/resolv.conf",
                                   "etc/hostname", "run/.containerenv"}, n
    conf = p("image", "inspect", "--format", "{{.Config.User}}",
             "localhost/enid-it:a").stdout.strip()
    assert conf == "%d:%d" % (ENID_UID, ENID_UID)


def test_node_setup_container_sets_up_the_node(deploy):
    """The node-setup init container as written: root with no capability,
    not privileged, through the host's /proc/sys/net (its own /proc/sys
    is read-only).  With the ConfigMap's ip_family (ipv4) it changes
    nothing; with dual it sets the sim node's default-route link."""
    ns = deploy.ns
    keys = ("net.ipv6.conf.all.forwarding",)

    def read(key):
        def get():
            with open("/proc/sys/" + key.replace(".", "/")) as f:
                return f.read().strip()
        return podwire.in_netns(ns, get)

    (route,) = json.loads(podwire.run("ip", "-n", ns, "-j", "route",
                                      "show", "default").stdout)
    up = route["dev"]
    keys += ("net.ipv6.conf.%s.accept_ra" % up,)
    before = {k: read(k) for k in keys}
    name, r = deploy.run("node-setup", "a")
    deploy.check_settings("node-setup", name)
    assert "ip_family ipv4" in r.stdout and "nothing changed" in r.stdout, \
        r.stdout + r.stderr
    assert {k: read(k) for k in keys} == before
    saved = deploy.overrides
    conf = json.loads(saved["enid.conf"])
    conf["ip_family"] = "dual"
    deploy.overrides = dict(saved, **{"enid.conf": json.dumps(conf)})
    try:
        name, r = deploy.run("node-setup", "a")
        assert "uplink %s: " % up in r.stdout, r.stdout + r.stderr
        assert read(keys[0]) == "1" and read(keys[1]) == "2"
    finally:
        deploy.overrides = saved
        podwire.sysctl(ns, *before.items())


def test_init_container_installs_atomically_and_again(deploy):
    plugin = image_file("opt/cni/bin/enid-cni")
    conflist = json.loads(deploy.host.cm["data"]["10-enid.conflist"])
    bindir = deploy.host.path("/opt/cni/bin")
    netdir = deploy.host.path("/etc/cni/net.d")
    # An older enid-cni is there: enid's (its mark), other bytes.
    old = plugin + b"\0an older build"

    def put_old():
        # By a rename too, so the reader sees only the installer's writes.
        (bindir / ".old").write_bytes(old)
        os.rename(bindir / ".old", bindir / "enid-cni")
    put_old()
    seen, bad = set(), []
    stop = threading.Event()

    def reader():
        # What a runtime reading the directories mid-install sees.
        while not stop.is_set():
            try:
                data = (bindir / "enid-cni").read_bytes()
                if data not in (old, plugin):
                    bad.append(("enid-cni", len(data)))
                seen.add(data == plugin)
                text = (netdir / "10-enid.conflist").read_text()
                if json.loads(text) != conflist:
                    bad.append(("conflist", text))
            except FileNotFoundError:
                pass
            except ValueError as e:
                bad.append(("conflist", str(e)))
    t = threading.Thread(target=reader)
    t.start()
    try:
        for _ in range(3):
            name, r = deploy.run("init", "a")
            assert "installed" in r.stdout, r.stdout + r.stderr
            deploy.check_settings("init", name)
            deploy.podman("rm", name)
            put_old()
        name, r = deploy.run("init", "a")
        deploy.podman("rm", name)
    finally:
        stop.set()
        t.join()
    assert not bad, bad[:3]
    assert seen == {False, True}
    files = host_files(deploy)
    assert sorted(files) == ["etc/cni/net.d/10-enid.conflist",
                             "opt/cni/bin/enid-cni", "opt/cni/bin/enid-ipam"]
    assert files["opt/cni/bin/enid-cni"] == plugin
    assert files["opt/cni/bin/enid-ipam"] == "enid-cni"
    assert json.loads(files["etc/cni/net.d/10-enid.conflist"]) == conflist
    assert os.stat(bindir / "enid-cni").st_mode & 0o777 == 0o755
    assert os.stat(netdir / "10-enid.conflist").st_mode & 0o777 == 0o644


@pytest.mark.parametrize("case", ["foreign-plugin", "foreign-conflist",
                                  "read-only"])
def test_init_container_refuses_bad_host_dirs(deploy, case):
    bindir = deploy.host.path("/opt/cni/bin")
    netdir = deploy.host.path("/etc/cni/net.d")
    for d in (bindir, netdir):
        for p in d.iterdir():
            p.unlink()
    mounted = None
    if case == "foreign-plugin":
        (bindir / "enid-cni").write_text("#!/bin/sh\nexec other-plugin\n")
        where = "/host/opt/cni/bin/enid-cni"
    elif case == "foreign-conflist":
        (netdir / "10-enid.conflist").write_text(json.dumps(
            {"cniVersion": "1.0.0", "name": "other",
             "plugins": [{"type": "bridge"}]}))
        where = "/host/etc/cni/net.d/10-enid.conflist"
    else:
        # The host's directory on a read-only mount; the manifest's own
        # mount of it is as written.
        (netdir / "keep").write_text("x")
        subprocess.run(["mount", "--bind", str(netdir), str(netdir)],
                       check=True)
        mounted = netdir
        subprocess.run(["mount", "-o", "remount,bind,ro", str(netdir)],
                       check=True)
        where = "/host/etc/cni/net.d"
    try:
        before = host_files(deploy)
        name, r = deploy.run("init", "a", check=False)
        deploy.podman("rm", name)
        assert r.returncode != 0, r.stdout
        assert where in r.stderr, r.stderr
        assert host_files(deploy) == before
    finally:
        if mounted:
            subprocess.run(["umount", str(mounted)], check=True)
    for d in (bindir, netdir):
        for p in d.iterdir():
            p.unlink()


def test_daemonset_serves_pods_and_survives_an_upgrade(deploy):
    t0 = time.monotonic()
    name, r = deploy.run("init", "a")
    deploy.podman("rm", name)
    enid_a, _ = deploy.run("main", "a", detach=True)
    deploy.wait_running(enid_a)
    deploy.check_settings("main", enid_a)
    pid = deploy.podman("inspect", "--format", "{{.State.Pid}}",
                        enid_a).stdout.strip()
    with open("/proc/%s/status" % pid) as f:
        assert "NoNewPrivs:\t1" in f.read()
    r = deploy.probe(enid_a)
    assert r.returncode == 0, (r.stdout, r.stderr)
    pods = [deploy.add_pod() for _ in range(3)]
    for cid, pod_ns, res in pods:
        assert deploy.ping(pod_ns), (cid, res)
    print("first start and three pods: %.1f s" % (time.monotonic() - t0))

    # The second image replaces the first as the DaemonSet's rolling
    # update does (maxSurge 0): the old pod goes, the new one's init
    # container and then enid start; pods keep their addresses.
    (c,) = deploy.host.pod["containers"]
    grace = deploy.host.pod["terminationGracePeriodSeconds"]
    t1 = time.monotonic()
    deploy.podman("stop", "-t", str(grace), enid_a, timeout=grace + 30)
    assert "Exited (0)" in deploy.podman(
        "ps", "-a", "--filter", "name=" + enid_a,
        "--format", "{{.Status}}").stdout
    deploy.podman("rm", enid_a)
    for cid, pod_ns, _ in pods:
        assert deploy.ping(pod_ns), ("without enid", cid)
    name, r = deploy.run("init", "b")
    deploy.podman("rm", name)
    enid_b, _ = deploy.run("main", "b", detach=True)
    deploy.wait_running(enid_b)
    print("upgrade: %.1f s" % (time.monotonic() - t1))
    assert deploy.podman("inspect", "--format", "{{.ImageName}}",
                         enid_b).stdout.strip() == "localhost/enid-it:b"
    r = deploy.probe(enid_b)
    assert r.returncode == 0, (r.stdout, r.stderr)
    for cid, pod_ns, _ in pods:
        assert deploy.ping(pod_ns), ("after the upgrade", cid)
    r = deploy.podman("exec", enid_b, "/usr/sbin/enidctl", "-j", "show",
                      "pods")
    listed = {p["container_id"]: p["ip"] for p in json.loads(r.stdout)["pods"]}
    for cid, _, res in pods:
        assert listed.get(cid) == res["ips"][0]["address"].split("/")[0], \
            (cid, listed)
    cid, pod_ns, res = deploy.add_pod()
    assert deploy.ping(pod_ns), (cid, res)
    deploy.cleanup_pods()
    r = deploy.podman("exec", enid_b, "/usr/sbin/enidctl", "-j", "show",
                      "pods")
    assert json.loads(r.stdout)["pods"] == [], r.stdout
    deploy.podman("stop", "-t", str(grace), enid_b, timeout=grace + 30)
