"""A containerd of a test's own, and the few CRI v1 calls a kubelet makes
for a pod's sandbox, for test_cri.py.

No CRI client is packaged in Debian (no crictl, no api.proto), so the
messages are written here on the protobuf wire by hand: only the fields
the test sets or reads, by the field numbers of the CRI's v1 API
(runtime.v1.RuntimeService).  A field this decoder does not know is
skipped, as protobuf's own decoders do.  They go over python3-grpcio's
generic channel, with these functions as its serializers.

The sandbox needs an image, and a test may not pull: a pause image is
built here from a static C program that sleeps until signalled, as a
docker archive `ctr images import` takes.
"""
import hashlib
import io
import json
import os
import pathlib
import shutil
import signal
import subprocess
import tarfile
import time

SERVICE = "/runtime.v1.RuntimeService/"
PAUSE_IMAGE = "enid.test/pause:1"
NAMESPACE = "k8s.io"    # the CRI's containerd namespace

# ---- the protobuf wire: varints, and length-delimited fields ----

VARINT, LEN = 0, 2


def _varint(n):
    n &= (1 << 64) - 1      # a negative int64 is its two's complement
    out = bytearray()
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, value):
    """One field: an int or bool as a varint, str, bytes or a message
    (bytes already encoded) length-delimited.  None, zero and empty values
    are left out, as proto3 leaves out defaults."""
    if value is None or value in ("", b"") or value is False or \
            (isinstance(value, int) and value == 0):
        return b""
    if isinstance(value, bool) or isinstance(value, int):
        return _varint(num << 3 | VARINT) + _varint(int(value))
    if isinstance(value, str):
        value = value.encode()
    return _varint(num << 3 | LEN) + _varint(len(value)) + value


def message(*fields):
    return b"".join(field(n, v) for n, v in fields)


def _read_varint(buf, i):
    n = shift = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise ValueError("truncated or overlong varint at %d" % i)
        b = buf[i]
        i += 1
        n |= (b & 0x7f) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def decode(buf):
    """{field number: [values]}: varints as ints, length-delimited fields
    as bytes (a nested message is decoded by its reader); fixed 32- and
    64-bit fields skipped."""
    out, i = {}, 0
    while i < len(buf):
        key, i = _read_varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == VARINT:
            v, i = _read_varint(buf, i)
        elif wt == LEN:
            n, i = _read_varint(buf, i)
            if i + n > len(buf):
                raise ValueError("field %d runs past the message" % num)
            v, i = bytes(buf[i:i + n]), i + n
        elif wt == 1:
            v, i = None, i + 8
        elif wt == 5:
            v, i = None, i + 4
        else:
            raise ValueError("wire type %d of field %d" % (wt, num))
        if v is not None:
            out.setdefault(num, []).append(v)
    return out


def _one(d, num, default=b""):
    return d.get(num, [default])[-1]


# ---- the messages ----

def sandbox_config(name, uid, namespace, log_dir, attempt=0):
    """PodSandboxConfig: metadata 1 (PodSandboxMetadata: name 1, uid 2,
    namespace 3, attempt 4), hostname 2, log_directory 3.  No linux (8):
    its namespace options' default, POD, is the pod's own network
    namespace, which is what CNI is run for."""
    meta = message((1, name), (2, uid), (3, namespace), (4, attempt))
    return message((1, meta), (2, name), (3, log_dir))


def run_pod_sandbox_request(config):
    return message((1, config))         # config 1, runtime_handler 2


def sandbox_id_request(sid):
    """StopPodSandboxRequest, RemovePodSandboxRequest, PodSandboxStatus-
    Request: pod_sandbox_id 1."""
    return message((1, sid))


def run_pod_sandbox_response(buf):
    return _one(decode(buf), 1).decode()        # pod_sandbox_id 1


def pod_sandbox_status_response(buf):
    """PodSandboxStatusResponse: status 1, PodSandboxStatus: id 1, state 3
    (SANDBOX_READY 0, SANDBOX_NOTREADY 1), network 5,
    PodSandboxNetworkStatus: ip 1, additional_ips 2 (PodIP: ip 1)."""
    st = decode(_one(decode(buf), 1))
    net = decode(_one(st, 5))
    return {"id": _one(st, 1).decode(),
            "state": "NOTREADY" if _one(st, 3, 0) == 1 else "READY",
            "ip": _one(net, 1).decode(),
            "additional_ips": [_one(decode(p), 1).decode()
                               for p in net.get(2, [])]}


def pod_sandbox_info(buf):
    """A verbose PodSandboxStatusResponse's info (2: map<string, string>,
    each entry a message of key 1 and value 2)."""
    out = {}
    for entry in decode(buf).get(2, []):
        e = decode(entry)
        out[_one(e, 1).decode()] = _one(e, 2).decode()
    return out


def list_pod_sandbox_response(buf):
    """ListPodSandboxResponse: items 1, PodSandbox: id 1."""
    return [_one(decode(p), 1).decode() for p in decode(buf).get(1, [])]


def empty(buf):
    return buf


# ---- the pause image ----

PAUSE_C = r"""
#include <signal.h>
#include <unistd.h>
static void quit(int sig) { (void)sig; _exit(0); }
int main(void)
{
	signal(SIGTERM, quit);
	signal(SIGINT, quit);
	for (;;)
		pause();
}
"""


def _tar_add(tf, name, data, mode=0o644):
    ti = tarfile.TarInfo(name)
    ti.size, ti.mode, ti.mtime = len(data), mode, 0
    tf.addfile(ti, io.BytesIO(data))


# An image's architecture is named as Go names it; containerd imports only
# the host's.
GOARCH = {"x86_64": "amd64", "aarch64": "arm64", "i686": "386",
          "armv7l": "arm", "ppc64le": "ppc64le", "s390x": "s390x"}


def build_pause_image(d):
    """A docker archive of one layer, /pause, a static binary built here:
    the path of the archive."""
    d = pathlib.Path(d)
    src, exe = d / "pause.c", d / "pause"
    src.write_text(PAUSE_C)
    subprocess.run(["cc", "-static", "-Os", "-o", str(exe), str(src)],
                   check=True, capture_output=True, timeout=120)
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as tf:
        _tar_add(tf, "pause", exe.read_bytes(), 0o755)
    layer = layer.getvalue()
    config = json.dumps({
        "architecture": GOARCH.get(os.uname().machine, os.uname().machine),
        "os": "linux",
        "config": {"Entrypoint": ["/pause"], "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [
            "sha256:" + hashlib.sha256(layer).hexdigest()]}}).encode()
    manifest = json.dumps([{"Config": "config.json",
                            "RepoTags": [PAUSE_IMAGE],
                            "Layers": ["layer.tar"]}]).encode()
    archive = d / "pause.tar"
    with tarfile.open(archive, "w") as tf:
        _tar_add(tf, "layer.tar", layer)
        _tar_add(tf, "config.json", config)
        _tar_add(tf, "manifest.json", manifest)
    return archive


# ---- containerd ----

# Only what this test's containerd needs, nothing of the host's: its own
# root, state, sockets and CNI directories; no debug or metrics listener.
# The native snapshotter (plain copies) because the temporary directory
# may itself be an overlay, where overlayfs cannot be mounted; the
# snapshotters that need their own file systems are left out so that
# their refusals do not fill the log.  restrict_oom_score_adj: root here
# may lack CAP_SYS_RESOURCE, which lowering a score needs.  The CRI's
# stream server (exec, attach) is unused, on loopback.
CONFIG = """version = 2
root = "{d}/root"
state = "{d}/state"
plugin_dir = ""
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs",
                    "io.containerd.snapshotter.v1.zfs",
                    "io.containerd.snapshotter.v1.devmapper",
                    "io.containerd.snapshotter.v1.aufs",
                    "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "{d}/containerd.sock"

[ttrpc]
  address = "{d}/containerd.sock.ttrpc"

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "{d}/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{image}"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  disable_apparmor = true
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "native"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{bin_dir}"
    conf_dir = "{conf_dir}"
    max_conf_num = 1
"""


class Containerd:
    """containerd in a node's network namespace, with its own root, state,
    socket and CNI directories under d.  stop() ends its sandboxes as a
    kubelet would, then containerd, then whatever it left."""

    def __init__(self, node_ns, d, bin_dir, conf_dir):
        self.d = pathlib.Path(d)
        self.sock = self.d / "containerd.sock"
        cfg = self.d / "config.toml"
        cfg.write_text(CONFIG.format(d=self.d, image=PAUSE_IMAGE,
                                     bin_dir=bin_dir, conf_dir=conf_dir))
        self.log = open(self.d / "containerd.log", "wb")
        self.proc = subprocess.Popen(
            ["nsenter", "--net=/run/netns/" + node_ns, "containerd",
             "--config", str(cfg), "--log-level", "debug"],
            stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True)
        self.channel = None

    def text(self):
        return (self.d / "containerd.log").read_text(errors="replace")

    def wait_ready(self, timeout=30):
        import grpc     # only here: test_cri.py skips without it
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError("containerd exited: " + self.text())
            if self.sock.exists():
                break
            time.sleep(0.1)
        else:
            raise RuntimeError("no containerd socket: " + self.text())
        self.channel = grpc.insecure_channel("unix://%s" % self.sock)
        grpc.channel_ready_future(self.channel).result(
            timeout=max(1, end - time.monotonic()))

    def ctr(self, *argv, timeout=60):
        return subprocess.run(["ctr", "-a", str(self.sock), "-n", NAMESPACE,
                               *argv], capture_output=True, text=True,
                              timeout=timeout)

    def call(self, method, request, decoder=empty, timeout=60):
        rpc = self.channel.unary_unary(SERVICE + method,
                                       request_serializer=lambda b: b,
                                       response_deserializer=decoder)
        return rpc(request, timeout=timeout)

    def remove_all(self):
        """What a kubelet does to every pod sandbox it ends: stop, then
        remove (the sandboxes a failed test left, before containerd
        stops: a sandbox's shim outlives containerd)."""
        for sid in self.call("ListPodSandbox", b"",
                             list_pod_sandbox_response):
            self.call("StopPodSandbox", message((1, sid)))
            self.call("RemovePodSandbox", message((1, sid)))

    def shims(self):
        """The pids of the runc shims that serve this containerd."""
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                argv = pathlib.Path("/proc", pid, "cmdline").read_bytes()
            except OSError:
                continue
            argv = argv.split(b"\0")
            if argv and argv[0].endswith(b"containerd-shim-runc-v2") and \
                    str(self.sock).encode() in argv:
                found.append(int(pid))
        return found

    def stop(self):
        if self.channel is not None:
            try:
                self.remove_all()
            finally:
                self.channel.close()
                self._stop()
        else:
            self._stop()

    def _stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()
        # What remove_all could not end: shims, by pid, and the mounts
        # under this root they leave.
        for pid in self.shims():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        with open("/proc/self/mounts") as f:
            mounts = [line.split()[1] for line in f]
        for m in reversed(mounts):
            if m.startswith(str(self.d) + "/"):
                subprocess.run(["umount", "-l", m], capture_output=True)


def have_containerd():
    """Why containerd cannot run here, or None.  (python3-grpcio is the
    test's to skip for: it is imported only when containerd is up.)"""
    for exe in ("containerd", "ctr", "runc", "containerd-shim-runc-v2",
                "cc"):
        if shutil.which(exe) is None:
            return "%s is not installed (tests/deps.sh)" % exe
    return None


def sandbox_dirs(base):
    base = pathlib.Path(base)
    for sub in ("bin", "net.d", "logs"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    return base / "bin", base / "net.d", base / "logs"

