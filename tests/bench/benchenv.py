"""What enid's benchmarks share: a node of the simulated VPC with enid
running in it (the steps of tests/integration/poolenv.py, but each one
undone on the way out, also after a failure or a SIGTERM), its control
socket, and the daemons' pids.

Everything runs as root and touches only what it creates: a scratch
directory, and the sim's namespaces under a prefix of this run's own.
Every wait is bounded.
"""
import json
import os
import pathlib
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import ckptstate                                         # noqa: E402
import podwire                                           # noqa: E402
from conftest import BUILDDIR, VPCSIM, Enid, Sim, write_config  # noqa: E402

ENID_USER = "enid"


SETUP_ERROR = 2      # the benchmarks' exit status when they cannot run


def refuse(prog, why):
    print("%s: %s" % (prog, why), file=sys.stderr)
    sys.exit(SETUP_ERROR)


def need_root(prog):
    if os.geteuid() != 0:
        refuse(prog, "needs root (network namespaces, cni.sock)")


def need_built(prog, *rels):
    for rel in ("broker/enid", "netd/enid-netd", "cloudd/enid-cloudd") + rels:
        path = os.path.join(BUILDDIR, rel)
        if not os.access(path, os.X_OK):
            refuse(prog, "%s is not built (set ENID_BUILDDIR to the build "
                   "tree)" % path)
    try:
        pwd.getpwnam(ENID_USER)
    except KeyError:
        refuse(prog, "no user %r for the daemons to drop to; run "
               "sh tests/deps.sh" % ENID_USER)


REQUIRED_TOOLS = {"/usr/sbin/ip": "iproute2", "/usr/bin/python3": "python3"}


def need_tools(prog, tools=None):
    """Each tool (path: Debian package) must be installed."""
    for path, pkg in dict(REQUIRED_TOOLS, **(tools or {})).items():
        if not os.access(path, os.X_OK):
            refuse(prog, "%s is missing: install the Debian package %s "
                   "(sh tests/deps.sh)" % (path, pkg))


def _cmdline(pid):
    with open("/proc/%s/cmdline" % pid, "rb") as f:
        return f.read().split(b"\0")


def _forked_sim(pid, argv):
    """True if pid, whose command line argv is a vpcsim --fork-server's,
    is a sim that server forked (it keeps the server's command line), not
    the server itself: its parent is the server, or (the server gone) it
    runs threads, which the server never does."""
    try:
        with open("/proc/%s/status" % pid) as f:
            status = dict(line.split(":", 1) for line in f if ":" in line)
        return int(status["Threads"]) > 1 or \
            _cmdline(int(status["PPid"])) == argv
    except (OSError, KeyError, ValueError):
        return False


def running_sims():
    """[(pid, prefix)] of every vpcsim running on the machine."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            argv = _cmdline(d)
        except OSError:
            continue
        if not any(a.endswith(b"vpcsim/vpcsim") for a in argv[:3]) or \
                b"--cleanup" in argv:
            continue
        if b"--fork-server" in argv:
            # The integration tests' fork server (tests/integration/
            # conftest.py) is no sim; a sim it forked is, but its prefix
            # is not on its command line.
            if _forked_sim(d, argv):
                out.append((int(d), "?"))
            continue
        prefix = "enid"
        for i, a in enumerate(argv[:-1]):
            if a == b"--prefix":
                prefix = argv[i + 1].decode(errors="replace")
        out.append((int(d), prefix))
    return out


def need_quiet_machine(prog):
    """No other simulated VPC running: its threads and its enids would
    share the two cores with what is measured, and the figure would
    mean nothing."""
    sims = running_sims()
    if not sims:
        return
    which = ", ".join("pid %d, prefix %s" % s for s in sims)
    if os.environ.get("ENID_BENCH_BUSY_OK") == "1":
        # For trying a benchmark out on a shared machine, not for figures.
        print("%s: WARNING: another vpcsim is running (%s); ENID_BENCH_"
              "BUSY_OK=1, so going on: these figures share the CPUs"
              % (prog, which), file=sys.stderr)
        return
    refuse(prog, "another vpcsim is running (%s); a measurement beside it "
           "means nothing: wait until it ends (or set ENID_BENCH_BUSY_OK=1 "
           "to try the benchmark anyway)" % which)


def need_free_namespaces(prog, prefix):
    """Our own namespace names must not exist yet."""
    left = [n for n in os.listdir("/run/netns")
            if n.startswith(prefix + "-")] if os.path.isdir("/run/netns") \
        else []
    if left:
        refuse(prog, "namespaces %s exist already (left by a crashed "
               "run?): remove them with tests/vpcsim/vpcsim --cleanup "
               "--prefix %s" % (" ".join(sorted(left)[:4]), prefix))


def preflight(prog, prefix=None, tools=None, quiet=True):
    """Every precondition a benchmark has, each refused by name."""
    need_root(prog)
    need_tools(prog, tools)
    need_built(prog)
    if quiet:
        need_quiet_machine(prog)
    if prefix:
        need_free_namespaces(prog, prefix)


def record(prog, rows):
    """Add this benchmark's rows to the combined table (tests/bench/
    bench_all): to the JSON-lines file ENID_BENCH_RESULTS names, if any.
    A row: name, measured, compared (what it was set against, measured in
    the same run), ratio, target (text), ok (True, False, or None when the
    row has no target)."""
    path = os.environ.get("ENID_BENCH_RESULTS")
    if not path:
        return
    with open(path, "a") as f:
        for r in rows:
            f.write(json.dumps(dict(r, bench=prog)) + "\n")


def exit_on_signals():
    """SIGTERM and SIGHUP unwind like ^C does, so every cleanup runs."""
    def handler(signo, _frame):
        print("stopped by signal %d; cleaning up" % signo, file=sys.stderr)
        raise SystemExit(128 + signo)
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, handler)


def smaps_rollup(pid):
    """{field: kB} from /proc/PID/smaps_rollup (Pss, Pss_Anon, ...)."""
    out = {}
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[2] == "kB":
                out[parts[0].rstrip(":")] = int(parts[1])
    return out


def fs_type(path):
    r = subprocess.run(["stat", "-f", "-c", "%T", str(path)],
                       capture_output=True, text=True, check=False)
    return r.stdout.strip() or "?"


def node_setup(ns, conf):
    """What the DaemonSet's init container does before enid starts on a
    node with IPv6 pods (enidctl(8) node-setup: the node's IPv6
    sysctls), with enid's own configuration."""
    ctl = os.path.join(BUILDDIR, "ctl/enidctl")
    if not os.access(ctl, os.X_OK):
        raise RuntimeError("%s is not built" % ctl)
    r = subprocess.run(["ip", "netns", "exec", ns, ctl, "-f", str(conf),
                        "node-setup"], capture_output=True, text=True,
                       timeout=30, check=False)
    if r.returncode != 0:
        raise RuntimeError("enidctl node-setup in %s: %s" % (
            ns, (r.stdout + r.stderr).strip()))


class Node:
    """The sim (one node, the given limits) and enid in node 0; with an
    ip_family other than ipv4 in the configuration, the node set up for
    IPv6 first (node_setup; the sim needs --ipv6 dual for it).

        with Node("bench", ["--eni-limit", "8"], pool={...}) as n:
            n.wait_pool(lambda p: p["free"] >= 64, 120, "a warm pool")
    """

    def __init__(self, name, sim_args, keep=None, **conf):
        self.name = name
        self.sim_args = list(sim_args)
        self.keep = keep
        self.prefix = "%s%d" % (name, os.getpid() % 100000)
        cloud = {"ec2_endpoint": "http://198.18.0.1/", "allow_http": True}
        cloud.update(conf.pop("cloud", {}))
        conf.setdefault("cluster_name", "bench")
        conf.setdefault("log_level", "info")
        self.conf_extra = dict(conf, cloud=cloud)
        self.workdir = None
        self.sim = None
        self.enid = None

    def __enter__(self):
        try:
            self._start()
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise
        return self

    def _start(self):
        self.workdir = pathlib.Path(tempfile.mkdtemp(prefix="enid-%s-"
                                                     % self.name))
        # The unprivileged daemons traverse it (mkdtemp makes it 0700).
        os.chmod(self.workdir, 0o755)
        helpers = self.workdir / "helpers"
        helpers.mkdir()
        for rel in ("netd/enid-netd", "cloudd/enid-cloudd"):
            os.symlink(os.path.join(BUILDDIR, rel),
                       helpers / os.path.basename(rel))
        self.sim = Sim(self.workdir, nodes=1, prefix=self.prefix,
                       args=self.sim_args)
        self.ep = self.sim.ep
        self.ns = self.ep["nodes"][0]["netns"]
        self.conf = write_config(self.workdir, ENID_USER, **self.conf_extra)
        self.cni_sock = self.workdir / "run" / "cni.sock"
        self.ctl_sock = self.workdir / "run" / "ctl.sock"
        self.state_dir = self.workdir / "state"
        podwire.prepare_node(self.ns)
        if self.conf_extra.get("ip_family", "ipv4") != "ipv4":
            node_setup(self.ns, self.conf)
        self.enid = Enid(self.ns, self.conf, helpers,
                         self.workdir / "enid.log")
        if not self.enid.wait_log("pool: running", 60):
            raise RuntimeError("enid did not start its pool in 60 s; its "
                               "log ends:\n" + self.enid.text()[-2000:])

    def __exit__(self, *exc):
        if self.enid is not None:
            self.enid.stop()
        if self.sim is not None:
            self.sim.stop()
        # The sim removes its namespaces on SIGTERM; if it could not
        # (killed, or it failed half-way), its --cleanup does.
        left = subprocess.run(["ip", "netns", "list"], capture_output=True,
                              text=True, check=False).stdout
        if any(l.startswith(self.prefix + "-") for l in left.splitlines()):
            subprocess.run(["/usr/bin/python3", VPCSIM, "--cleanup",
                            "--prefix", self.prefix], check=False,
                           timeout=60, capture_output=True)
        if self.workdir is not None:
            if self.keep:
                dst = os.path.join(self.keep, self.workdir.name)
                shutil.copytree(self.workdir, dst, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("*.sock",
                                                              "helpers"))
                print("logs kept in %s" % dst, file=sys.stderr)
            shutil.rmtree(self.workdir, ignore_errors=True)
        return False

    # ---- enid ----

    def ctl(self, req):
        a, _ = podwire.cni(self.ctl_sock, req, timeout=10)
        if not a.get("ok"):
            raise RuntimeError("enidctl %s: %r" % (req.get("op"), a))
        return a

    def pool(self):
        return self.ctl({"op": "show", "what": "pool"})["pool"]

    def checkpoint(self):
        """The snapshot with its journal applied (ckptstate.py)."""
        ck = ckptstate.read(self.state_dir)
        if ck is None:
            raise FileNotFoundError(self.state_dir / ckptstate.SNAPSHOT)
        return ck

    def pids(self):
        """{name: pid} of enid and its two helpers, from enidctl status,
        each checked against /proc (the name is the process's comm)."""
        out = {}
        for p in self.ctl({"op": "status"})["processes"]:
            with open("/proc/%d/comm" % p["pid"]) as f:
                comm = f.read().strip()
            if comm != p["name"][:15]:
                raise RuntimeError("pid %d is %r, not %r" % (
                    p["pid"], comm, p["name"]))
            out[p["name"]] = p["pid"]
        return out

    def pod_rules(self, family="-4"):
        """enid-netd's pods' rules of a family ("-4" or "-6") in the node
        (its protocol tag, 233): all but its connection-mark rule,
        "fwmark M/M lookup main" at rule_priority_to, which is no pod's
        (the integration tests skip it the same way)."""
        r = subprocess.run(["ip", family, "-n", self.ns, "-j", "rule"],
                           capture_output=True, text=True, check=True)
        return [x for x in json.loads(r.stdout or "[]")
                if str(x.get("protocol")) == "233" and "fwmark" not in x]

    def cloud_calls(self):
        """The sim's per-action call counts."""
        st = self.sim.control("GET", "/state")
        return dict(st.get("calls") or {})

    def wait_pool(self, cond, timeout, what, step=0.2):
        end = time.monotonic() + timeout
        last = None
        while time.monotonic() < end:
            if self.enid.proc.poll() is not None:
                raise RuntimeError("enid exited while waiting for %s; its "
                                   "log ends:\n%s" % (
                                       what, self.enid.text()[-2000:]))
            last = self.pool()
            if cond(last):
                return last
            time.sleep(step)
        raise RuntimeError("no %s after %d s (pool: %r)" % (what, timeout,
                                                           last))
