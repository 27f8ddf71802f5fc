"""containerd's CRI with the shipped conflist and a dual-stack enid (issue
35), and an IPv6-only one beside it: what a kubelet would see of a pod's
addresses.

containerd (Debian's, 1.6) runs in a node of the simulated VPC with
`--ipv6 dual`, with its own root, state and CNI directories; its CNI
directories are filled by enid-cni-install from contrib/10-enid.conflist,
as the DaemonSet's init container fills the host's, with only the socket
pointed at this test's enid.  The sandbox image is a pause program built
here and imported (nothing is pulled).  The CRI calls are the kubelet's:
RunPodSandbox, PodSandboxStatus, StopPodSandbox, RemovePodSandbox (cri.py).
"""
import ipaddress
import json
import os
import pathlib
import subprocess
import uuid

import pytest

import cri
from conftest import SRCDIR, built, module_dir
from test_dual_e2e import make_env, node_has
from test_pool_ipv6 import ready80

grpc = pytest.importorskip("grpc", reason="python3-grpcio is not "
                               "installed (tests/deps.sh)")

CONFLIST = os.path.join(SRCDIR, "contrib", "10-enid.conflist")


@pytest.fixture(scope="module")
def mod_dir(enid_user):
    with module_dir("enid-cri-") as d:
        yield d


def install_cni(env, bin_dir, conf_dir, work):
    """enid-cni-install as the init container runs it, from the shipped
    conflist with only its socket changed to this enid's."""
    conf = json.loads(pathlib.Path(CONFLIST).read_text())
    (plugin,) = conf["plugins"]
    plugin["socket"] = str(env.cni_sock)
    conflist = work / "10-enid.conflist"
    conflist.write_text(json.dumps(conf))
    r = subprocess.run([built("cni/enid-cni-install")], env={
        "ENID_CNI": built("cni/enid-cni"), "CONFLIST": str(conflist),
        "CNI_BIN_DIR": str(bin_dir), "CNI_NET_DIR": str(conf_dir),
        "CNI_VERSION": "auto", "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    # containerd's CNI library sets up every sandbox's loopback with the
    # reference plugin, from the same directory.
    os.symlink("/usr/lib/cni/loopback", bin_dir / "loopback")


@pytest.fixture(scope="module", params=["dual", "ipv6"])
def node(request, mod_dir, enid_user):
    """enid with the family asked for in a node of a dual-stack VPC, and
    containerd beside it, its CNI directories as enid-cni-install fills
    them and its pause image imported."""
    why = cri.have_containerd()
    if why:
        pytest.skip(why)
    family = request.param
    e = make_env(mod_dir, enid_user, "cr" + family[-1], family)
    c = None
    try:
        e.start()
        assert ready80(e), e.enid.text()
        work = mod_dir / ("containerd-" + family)
        work.mkdir()
        bin_dir, conf_dir, _ = cri.sandbox_dirs(work)
        install_cni(e, bin_dir, conf_dir, work)
        image = cri.build_pause_image(work)
        c = cri.Containerd(e.ns, work, bin_dir, conf_dir)
        c.wait_ready()
        r = c.ctr("images", "import", "--snapshotter", "native",
                  str(image))
        assert r.returncode == 0, r.stdout + r.stderr
        yield family, e, c
    finally:
        # containerd first: its sandboxes' DELs go to this enid.
        if c is not None:
            c.stop()
        e.podns.cleanup()
        e.stop()


def held(env):
    return {p["container_id"]: p for p in env.show("pods")}


def sandbox_netns(containerd, sid):
    """The sandbox's network namespace, from the verbose status's info
    (containerd's own: the runtime spec it gave runc)."""
    info = containerd.call("PodSandboxStatus",
                           cri.message((1, sid), (2, True)),
                           cri.pod_sandbox_info)
    spec = json.loads(info["info"])["runtimeSpec"]
    (path,) = [n["path"] for n in spec["linux"]["namespaces"]
               if n["type"] == "network"]
    return path


def eth0(netns):
    """eth0's global addresses in a namespace given by path."""
    out = subprocess.run(["nsenter", "--net=" + netns, "ip", "-j", "addr",
                          "show", "dev", "eth0", "scope", "global"],
                         check=True, capture_output=True, text=True).stdout
    # ip's JSON keeps an empty object for each address the filter left
    # out.
    return sorted(a["local"] for link in json.loads(out)
                  for a in link["addr_info"] if "local" in a)


def test_sandbox_status_names_the_pods_addresses(node):
    """RunPodSandbox gets enid's pod.  Dual: PodSandboxStatus names its
    IPv4 address as the pod's IP and its IPv6 address as the additional
    one (what the kubelet puts in the pod's status.podIPs; containerd 1.6
    puts the result's IPv4 address first, whatever its order);
    IPv6-only: the IPv6 address and nothing more.  The
    addresses `enidctl show pods` gives, on the sandbox's eth0.
    StopPodSandbox (CNI DEL) releases them: enid holds no pod and the node
    keeps no rule, route or neighbour naming one; RemovePodSandbox forgets
    the sandbox."""
    family, env, containerd = node
    logs = containerd.d / "logs" / "p1"
    logs.mkdir()
    config = cri.sandbox_config("p1", str(uuid.uuid4()), "default",
                                str(logs))
    try:
        sid = containerd.call("RunPodSandbox",
                              cri.run_pod_sandbox_request(config),
                              cri.run_pod_sandbox_response, timeout=120)
    except grpc.RpcError as e:
        raise AssertionError("%r\n%s" % (e, containerd.text()[-4000:]))
    st = containerd.call("PodSandboxStatus", cri.sandbox_id_request(sid),
                         cri.pod_sandbox_status_response)
    pod = held(env)[sid]
    # containerd's CNI_ARGS reached enid: the pod is known by its name.
    assert (pod["namespace"], pod["name"]) == ("default", "p1"), pod
    assert st["id"] == sid and st["state"] == "READY", st
    assert ipaddress.ip_address(pod["ip6"]).version == 6
    if family == "dual":
        assert ipaddress.ip_address(pod["ip"]).version == 4
        mine = [pod["ip"], pod["ip6"]]
    else:
        assert not pod.get("ip"), pod
        mine = [pod["ip6"]]
    assert [st["ip"]] + st["additional_ips"] == mine, (st, pod)
    netns = sandbox_netns(containerd, sid)
    assert eth0(netns) == sorted(mine)

    containerd.call("StopPodSandbox", cri.sandbox_id_request(sid))
    assert sid not in held(env)
    assert not [line for a in mine for line in node_has(env, a)]
    st = containerd.call("PodSandboxStatus", cri.sandbox_id_request(sid),
                         cri.pod_sandbox_status_response)
    assert st["state"] == "NOTREADY", st
    # Stopped again, as the kubelet may: nothing to release, no error.
    containerd.call("StopPodSandbox", cri.sandbox_id_request(sid))
    containerd.call("RemovePodSandbox", cri.sandbox_id_request(sid))
    with pytest.raises(grpc.RpcError) as err:
        containerd.call("PodSandboxStatus", cri.sandbox_id_request(sid),
                        cri.pod_sandbox_status_response)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    assert not os.path.exists(netns)
    assert containerd.call("ListPodSandbox", b"",
                           cri.list_pod_sandbox_response) == []
