#!/usr/bin/python3
"""Chaos soak for enid (issue 9): tests/vpcsim, enid in node 0, and pod
churn through enid-cni while faults are injected at random; invariants are
checked all along and once the faults stop.

    chaos.py --duration 600                   # make chaos DURATION=600
    chaos.py --mode restart --duration 60     # the whole set kill -9'd
                                              # every few seconds

The three processes run the way a service manager runs them
(contrib/enid.service: Restart=always, KillMode=mixed): when the broker
exits, whatever is left of the set is killed and the set is started again
after --restart-delay.  Pods are real: enid-cni, run as a runtime runs it
(in the node's namespace, CNI_NETNS a namespace made with `ip netns add`),
wires each one, and each acknowledged pod pings the VPC host.

Invariants (each breach is a violation; the run exits 1 unless there are
none):
  duplicate-address    no address held by two live pods (the harness's
                       pods, and enid's own list)
  add-unreachable      an acknowledged ADD's pod pings the VPC host
                       within 2 s
  held-unreachable     a pod keeps working while it lives (sampled)
  del-latency          enid answers every DEL within 1 s (its histogram);
                       enid-cni's whole DEL within 1 s at p95, 4 s at most
  add-latency          ADD answers within add_timeout_s + 1 s
  hung-plugin          enid-cni never hangs
  unplanned-exit       no enid process exits unless the harness killed one
  crash-report         no sanitizer report or fatal line in enid's logs
  prefix-in-use        no /28 prefix leaves the node's ENI (given back, or
                       deleted with its ENI) while a pod holds one of its
                       addresses, from the ADD's answer to the DEL's
                       sending plus ip_cooldown_s (the sim's log of
                       prefixes against the harness's own pods)
  final-*              once the faults stop and a reconcile interval has
                       passed: the cloud's ENIs and addresses equal the
                       pool's, the checkpoint's pods equal enid's and the
                       harness's, no leaked ENI, no leaked address, every
                       live pod pings
  vacuous              the run checked too little: too few acknowledged
                       ADDs, a kind of fault never injected, ...

Prefix delegation (--prefixes): the run starts with single addresses and
at --prefix-at of its length turns prefix delegation on (the
configuration rewritten, enid restarted with SIGTERM, as a rolling update
does); the chaos deck then also deals fragmented subnets and faults on
the prefix calls (failed, throttled, slow, or done with the answer lost).

A pod whose address (or ENI) the harness itself took away behind enid's
back is a victim, not a violation, until enid could have seen it (one
reconcile interval); victims are deleted as a runtime deletes a failed pod.
Standard library only, plus python3-boto3 for the changes made behind
enid's back.
"""
import argparse
import collections
import concurrent.futures
import ipaddress
import itertools
import json
import math
import os
import pathlib
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
RECON_DONE = re.compile(r"^(\d\d):(\d\d):(\d\d\.\d+) enid\[\d+\]: "
                        r"reconcile: done", re.M)
SRCDIR = os.path.dirname(os.path.dirname(HERE))
VPCSIM = os.path.join(SRCDIR, "tests", "vpcsim", "vpcsim")
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(SRCDIR, "tests", "integration"))
import ckptstate                                         # noqa: E402
import simec2                                            # noqa: E402

PING_WAIT_S = 2         # an acknowledged pod reaches the VPC host within
DEL_BOUND_S = 1.0       # enid answers a DEL within
# enid-cni's whole DEL, the pod's link removal included: the kernel's share
# (a veth's removal waits for the rtnl lock and RCU) is not enid's and, on
# a loaded machine, not bounded by it; enid's own answer is held to
# DEL_BOUND_S by its histogram, the plugin's to these.
DEL_PLUGIN_P95_S = 1.0
DEL_PLUGIN_MAX_S = 4.0
ADD_SLACK_S = 1.0       # an ADD within add_timeout_s + this
CHECK_EVERY_S = 2.0     # the continuous checks
PLUGIN_HANG_S = 45      # enid-cni's own limit is 30 s; past this it hangs
COOLDOWN_S = 2          # ip_cooldown_s: a DEL's address rests this long
SHRINK_DELAY_S = 5      # shrink_delay_s: a surplus lasts, then goes
CLOUD_TIMEOUT_MS = 5000  # cloud.timeout_ms: a later answer is none
NOT_NOW = " (nothing yet)"   # drawn with nothing to act on
PREFIX_ACTIONS = ("AssignPrivateIpAddresses", "UnassignPrivateIpAddresses",
                  "CreateNetworkInterface")
EC2_ACTIONS = ("CreateNetworkInterface", "AttachNetworkInterface",
               "AssignPrivateIpAddresses", "UnassignPrivateIpAddresses",
               "DescribeNetworkInterfaces", "DetachNetworkInterface",
               "DeleteNetworkInterface", "ModifyNetworkInterfaceAttribute",
               "DescribeSubnets", "DescribeInstances")


def log(fmt, *args):
    sys.stderr.write("chaos %8.2f: %s\n" % (time.monotonic() - T0,
                                             fmt % args if args else fmt))
    sys.stderr.flush()


T0 = time.monotonic()


def run(*argv, check=True, timeout=30):
    return subprocess.run(argv, check=check, capture_output=True, text=True,
                          timeout=timeout)


# ---------------------------------------------------------------- the sim

class Sim:
    """tests/vpcsim in the foreground, with its own namespace prefix."""

    def __init__(self, workdir, prefix, args):
        self.dir = workdir / "sim"
        self.logf = open(workdir / "vpcsim.log", "w")
        self.proc = subprocess.Popen(
            ["/usr/bin/python3", VPCSIM, "--nodes", "1", "--state",
             str(self.dir), "--prefix", prefix] + list(args),
            stdout=self.logf, stderr=subprocess.STDOUT)
        path = self.dir / "endpoints.json"
        end = time.monotonic() + 60
        while not path.exists():
            if self.proc.poll() is not None or time.monotonic() > end:
                self.stop()
                raise SystemExit("chaos: vpcsim did not start; see %s"
                                 % self.logf.name)
            time.sleep(0.05)
        self.ep = json.loads(path.read_text())

    def control(self, method, path, body=None, timeout=10):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.ep["control"] + path, data=data,
                                     method=method)
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read() or b"null")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.logf.close()


# ---------------------------------------------------------------- results

class Results:
    """Counters and violations, shared by every thread."""

    def __init__(self):
        self.lock = threading.Lock()
        self.ops = collections.Counter()          # (op, outcome) -> n
        self.lat = collections.defaultdict(list)  # op -> [s]
        self.faults = collections.Counter()
        self.fault_fails = collections.Counter()
        self.injected = collections.Counter()     # f_name -> n
        # (what, why): a kill -9 drawn but not done, and why
        self.kill_skips = collections.Counter()
        self.restarts = collections.Counter()
        self.violations = []
        self.victims = 0
        self.pings = collections.Counter()
        self.events = None
        self.enid_lists = 0         # enid's pod lists checked
        self.del_hist = {}          # life -> (DELs, within DEL_BOUND_S)
        self.reconciles = 0
        self.prefixes = None        # what check_prefixes saw last
        self.probe = None           # what prefix_probe did

    def op(self, op, outcome, dt, cid=None, ip=None):
        with self.lock:
            self.ops[(op, outcome)] += 1
            self.lat[op].append(dt)
            self.event(op=op, outcome=outcome, dt=round(dt, 3), cid=cid,
                       ip=ip)

    def event(self, **kw):
        """One line of the run's history (events.jsonl in the work
        directory), for reading a violation after the fact."""
        if self.events is not None:
            kw["t"] = round(time.monotonic() - T0, 3)
            kw["wall"] = time.strftime("%H:%M:%S", time.localtime()) + \
                ".%03d" % (time.time() * 1000 % 1000)
            self.events.write(json.dumps(kw) + "\n")

    def fault(self, kind):
        with self.lock:
            self.faults[kind] += 1

    def violation(self, kind, fmt, *args):
        msg = fmt % args if args else fmt
        with self.lock:
            self.event(op="violation", kind=kind, what=msg)
            self.violations.append((round(time.monotonic() - T0, 2), kind,
                                    msg))
        log("VIOLATION %s: %s", kind, msg)

    def pct(self, op, q):
        v = sorted(self.lat.get(op, []))
        if not v:
            return 0.0
        return v[min(len(v) - 1, int(math.ceil(q * len(v))) - 1)]


# ---------------------------------------------------------------- enid

class Service:
    """enid run as a service manager runs it: when the broker exits, the
    rest of the set is killed, and the set starts again after a delay."""

    NAMES = ("enid", "enid-netd", "enid-cloudd")

    def __init__(self, h, restart_delay):
        self.h = h
        self.restart_delay = restart_delay
        self.lock = threading.Lock()
        self.proc = None
        self.gen = 0
        self.pids = {}
        self.killed = None          # what the harness killed in this life
        self.spawned = 0.0          # when this life started (monotonic)
        self.running = threading.Event()
        self.stopping = False
        self.logs = []
        self.thread = threading.Thread(target=self._supervise, daemon=True)

    def start(self):
        self.thread.start()

    def _spawn(self):
        path = self.h.workdir / ("enid-%03d.log" % self.gen)
        self.logs.append(path)
        f = open(path, "w")
        env = dict(os.environ)
        # LeakSanitizer's exit-time scan needs ptrace, which the seccomp
        # filters refuse (tests/run-all says the same).
        env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
        p = subprocess.Popen(
            ["ip", "netns", "exec", self.h.ns, self.h.built("broker/enid"),
             "-d", "-f", str(self.h.conf), "-L", str(self.h.helpers)],
            stdout=f, stderr=subprocess.STDOUT, env=env)
        f.close()
        return p, path

    def _children(self, pid):
        out = {}
        try:
            with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
                kids = f.read().split()
        except OSError:
            return out
        for k in kids:
            try:
                with open("/proc/%s/comm" % k) as f:
                    out[f.read().strip()] = int(k)
            except OSError:
                pass
        return out

    def _supervise(self):
        while not self.stopping:
            t_spawn = time.monotonic()
            p, path = self._spawn()
            with self.lock:
                self.proc = p
                self.pids = {"enid": p.pid}
                self.killed = None
                self.spawned = t_spawn
            seen_running = False
            while p.poll() is None and not self.stopping:
                kids = self._children(p.pid)
                with self.lock:
                    for name in self.NAMES[1:]:
                        if name in kids:
                            self.pids[name] = kids[name]
                if not seen_running and "pool: running" in \
                        path.read_text(errors="replace"):
                    seen_running = True
                    self.running.set()
                time.sleep(0.05)
            self.running.clear()
            if self.stopping:
                break
            rc = p.wait()
            with self.lock:
                killed = self.killed
                helpers = [v for k, v in self.pids.items() if k != "enid"]
            self._reap(helpers)
            if killed is None:
                tail = path.read_text(errors="replace")[-1500:]
                self.h.res.violation("unplanned-exit", "enid exited with "
                                     "%s without being killed; log %s "
                                     "ends:\n%s", rc, path.name, tail)
                self.h.res.restarts["exited by itself"] += 1
            elif killed.startswith("SIGTERM") and rc != 0:
                tail = path.read_text(errors="replace")[-1500:]
                self.h.res.violation("unplanned-exit", "enid exited with "
                                     "%s on SIGTERM (%s); log %s ends:\n%s",
                                     rc, killed, path.name, tail)
                self.h.res.restarts[killed] += 1
            else:
                self.h.res.restarts[killed] += 1
            self.gen += 1
            time.sleep(self.restart_delay)

    def _reap(self, pids):
        """KillMode=mixed: what is left of the set after the broker went
        is killed; a helper ends by itself on its socket's EOF."""
        end = time.monotonic() + 3
        for pid in pids:
            while time.monotonic() < end and alive(pid):
                time.sleep(0.02)
            if alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def kill9(self, which):
        """kill -9 of one process of the set ("enid", "enid-netd",
        "enid-cloudd") or of all three ("set"); None when done, else why
        it cannot be done now."""
        with self.lock:
            if self.killed is not None:
                return "this life was already killed (%s)" % \
                    self.killed[len("kill -9 "):]
            if not self.running.is_set():
                return "enid not running yet (starting or restarting)"
            names = self.NAMES if which == "set" else (which,)
            missing = [n for n in names if self.pids.get(n) is None]
            if missing:
                return "no pid for %s yet" % ", ".join(missing)
            pids = [self.pids[n] for n in names]
            self.killed = "kill -9 " + which
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        return None

    def terminate(self, why):
        """SIGTERM to the broker, as a service manager's stop or a
        rolling update sends it; None when sent, else why not now."""
        with self.lock:
            if self.killed is not None:
                return "this life was already stopped (%s)" % self.killed
            if not self.running.is_set():
                return "enid not running yet (starting or restarting)"
            self.killed = "SIGTERM: " + why
            try:
                os.kill(self.pids["enid"], signal.SIGTERM)
            except ProcessLookupError:
                pass
        return None

    def started_after(self, t):
        """Is the running life one started after t (monotonic)?"""
        with self.lock:
            return self.spawned > t and self.running.is_set() and \
                self.killed is None

    def stop(self):
        self.stopping = True
        with self.lock:
            p = self.proc
        if p is not None and p.poll() is None:
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        self.thread.join(15)


def block_of(ip):
    """The /28 that holds ip, as the sim names prefixes."""
    return str(ipaddress.IPv4Network(ip + "/28", strict=False))


def hosts(prefix):
    return [str(a) for a in ipaddress.IPv4Network(prefix)]


def all_addrs(e):
    """An ENI's addresses in the sim's state, its prefixes' included."""
    out = list(e["addresses"])
    for p in e.get("prefixes") or ():
        out.extend(hosts(p))
    return out


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


# ---------------------------------------------------------------- pods

class Pod:
    seq = itertools.count()

    def __init__(self, tag, sod):
        n = next(Pod.seq)
        self.cid = "chaos%06d" % n
        self.ns = "%s-%d" % (tag, n)
        self.ip = None
        self.state = "adding"       # live, deleting, gone
        self.t_add = time.monotonic()
        self.sod_add = sod
        self.checked = False
        self.reported = False
        self.t_ack = None
        self.t_del = None       # the first DEL that may have reached enid
        self.victim = False


class Harness:
    def __init__(self, a):
        self.a = a
        self.res = Results()
        self.rng = random.Random(a.seed)
        self.builddir = a.builddir
        self.workdir = pathlib.Path(tempfile.mkdtemp(prefix="enid-chaos-"))
        os.chmod(self.workdir, 0o755)
        self.res.events = open(self.workdir / "events.jsonl", "w",
                               buffering=1)
        self.tag = "ch%d" % (os.getpid() % 100000)
        self.lock = threading.Lock()
        self.pods = {}              # cid -> Pod, until gone
        self.pending_dels = []      # Pods whose DEL is to be retried
        self.sabotage = []          # (t, sod, addresses) taken behind
        self.sod0 = 0
        self.sod0 = self.sod()
        self.reported = set()
        self.stop_churn = threading.Event()
        self.stop_faults = threading.Event()
        self.undo = []              # (t, description, fn)
        self.rules = []             # fault rules we have posted
        self.rules_lock = threading.Lock()
        self._ec2 = None
        # Prefix delegation: when it was turned on (monotonic), the pods
        # ever acknowledged (each prefix-in-use check looks back), the
        # sim's log of prefixes read so far.
        self.t_prefixes = None
        self.acked = []
        self.plog = []
        self.plog_seq = 0
        self.plog_lock = threading.Lock()

    def built(self, rel):
        p = os.path.join(self.builddir, rel)
        if not os.access(p, os.X_OK):
            raise SystemExit("chaos: %s is not built; run make first" % p)
        return p

    # ---- set-up ----

    def setup(self):
        a = self.a
        sim_args = ["--ip-limit", str(a.ip_limit), "--eni-limit",
                    str(a.eni_limit)]
        self.sim = Sim(self.workdir, self.tag, sim_args)
        self.ep = self.sim.ep
        self.node = self.ep["nodes"][0]
        self.ns = self.node["netns"]
        self.subnets = [s["id"] for s in self.ep["subnets"]]
        for key, val in (("net.ipv4.ip_forward", "1"),
                         ("net.ipv4.conf.all.rp_filter", "2"),
                         ("net.ipv4.conf.default.rp_filter", "2")):
            run("ip", "netns", "exec", self.ns, "sysctl", "-qw",
                "%s=%s" % (key, val))
        self.helpers = self.workdir / "helpers"
        self.helpers.mkdir()
        for rel in ("netd/enid-netd", "cloudd/enid-cloudd"):
            os.symlink(self.built(rel), self.helpers / os.path.basename(rel))
        self.conf = self.workdir / "enid.conf"
        self.write_conf(a.prefixes == "on")
        if a.prefixes == "on":
            self.t_prefixes = time.monotonic()
        self.cni_sock = self.workdir / "run" / "cni.sock"
        self.ctl_sock = self.workdir / "run" / "ctl.sock"
        self.cni_conf = json.dumps({
            "cniVersion": "1.1.0", "name": "chaos", "type": "enid-cni",
            "socket": str(self.cni_sock), "mtu": 1500})
        self.svc = Service(self, a.restart_delay)
        self.svc.start()
        if not self.svc.running.wait(60):
            raise SystemExit("chaos: enid did not start; see %s"
                             % self.svc.logs[-1])
        log("set-up done: sim %s, node %s, workdir %s", self.tag, self.ns,
            self.workdir)

    def write_conf(self, prefixes):
        """enid's configuration, replaced whole (a life reads it once, at
        its start): with prefix delegation or without."""
        a = self.a
        conf = {
            "user": "enid",
            "runtime_dir": str(self.workdir / "run"),
            "state_dir": str(self.workdir / "state"),
            "log_level": a.log_level,
            "cluster_name": "chaos",
            "reconcile_interval_s": a.reconcile_interval,
            "cloud": {"ec2_endpoint": "http://198.18.0.1/",
                      "allow_http": True, "timeout_ms": CLOUD_TIMEOUT_MS},
            "pool": {"warm_ip_target": 3, "warm_eni_target": 0,
                     "ip_cooldown_s": COOLDOWN_S,
                     "add_timeout_s": a.add_timeout,
                     "shrink_delay_s": SHRINK_DELAY_S, "subnet_backoff_s": 5,
                     "link_timeout_s": 8},
            "subnets": [{"id": s} for s in self.subnets],
            "leak_gc": {"enabled": True, "grace_s": a.leak_grace},
            # The VPC host the pods ping lies outside the VPC's CIDR:
            # excluded from SNAT (on by default), a pod on a secondary
            # ENI reaches it through its own ENI, so a ping proves that
            # ENI's path rather than the primary link's.
            "snat": {"exclude": ["198.18.0.0/24"]},
        }
        if prefixes:
            conf["pool"].update({
                "prefix_delegation": True,
                "warm_prefix_target": a.warm_prefix_target,
                "prefix_backoff_s": a.prefix_backoff,
                "prefix_freeze_s": a.prefix_freeze})
        tmp = self.conf.with_suffix(".new")
        tmp.write_text(json.dumps(conf, indent=1))
        os.replace(tmp, self.conf)

    def prefix_switch(self, _=None):
        """--prefixes switch: prefix delegation on at --prefix-at of the
        run, whatever the faults are doing meanwhile."""
        at = self.t_start + self.a.duration * self.a.prefix_at
        if not self.stop_faults.wait(max(0, at - time.monotonic())):
            self.enter_prefixes()

    def enter_prefixes(self):
        """Prefix delegation on, as an operator turns it on: the
        configuration rewritten, then enid stopped (SIGTERM) so that the
        service manager starts it again with it.  A life started since
        reads it already (a kill of the harness's own meanwhile)."""
        self.write_conf(True)
        t = self.t_prefixes = time.monotonic()
        self.res.event(op="prefixes", what="prefix delegation on")
        log("prefix delegation on: configuration rewritten, enid restarts")
        end = t + 60
        while time.monotonic() < end and not self.svc.started_after(t) \
                and not self.stop_faults.is_set():
            self.svc.terminate("prefix delegation turned on")
            time.sleep(0.2)
        if not self.svc.started_after(t) and not self.stop_faults.is_set():
            self.res.violation("harness-error", "enid did not start again "
                               "with prefix delegation within 60 s")

    def teardown(self):
        for p in list(self.pods.values()):
            run("ip", "netns", "del", p.ns, check=False)
        if hasattr(self, "svc"):
            self.svc.stop()
        if hasattr(self, "sim"):
            self.sim.stop()

    # ---- talking to enid ----

    def ctl(self, req, timeout=5):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            s.connect(str(self.ctl_sock))
            s.sendall((json.dumps(req) + "\n").encode())
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        finally:
            s.close()
        return json.loads(data)

    def show(self, what):
        a = self.ctl({"op": "show", "what": what})
        if not a.get("ok"):
            raise OSError("show %s: %r" % (what, a))
        return a[what]

    def plugin(self, command, pod):
        """enid-cni as a runtime runs it: (outcome, answer, seconds)."""
        env = {"CNI_COMMAND": command, "CNI_CONTAINERID": pod.cid,
               "CNI_IFNAME": "eth0", "CNI_NETNS": "/run/netns/" + pod.ns,
               "CNI_PATH": os.path.dirname(self.built("cni/enid-cni")),
               "CNI_ARGS": "IgnoreUnknown=1;K8S_POD_NAMESPACE=chaos;"
               "K8S_POD_NAME=%s;K8S_POD_UID=uid-%s" % (pod.cid, pod.cid),
               "PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/bin"),
               "ASAN_OPTIONS": "detect_leaks=0"}
        t0 = time.monotonic()
        try:
            r = subprocess.run(
                ["nsenter", "--net=/run/netns/" + self.ns,
                 self.built("cni/enid-cni")], input=self.cni_conf, env=env,
                capture_output=True, text=True, timeout=PLUGIN_HANG_S)
        except subprocess.TimeoutExpired:
            dt = time.monotonic() - t0
            self.res.violation("hung-plugin", "%s %s: enid-cni ran past "
                               "%d s", command, pod.cid, PLUGIN_HANG_S)
            return "hung", None, dt
        dt = time.monotonic() - t0
        try:
            out = json.loads(r.stdout) if r.stdout.strip() else None
        except ValueError:
            out = None
        if r.returncode == 0:
            return "ok", out, dt
        return outcome_of(out, r.stderr), out, dt

    # ---- churn ----

    def target(self, now):
        """Live pods wanted now: a slow wave between 0 and --max-pods, so
        the pool grows and shrinks."""
        x = (now - self.t_start) / self.a.wave_s
        top = self.a.max_pods
        if self.t_prefixes is not None and self.a.prefix_max_pods:
            top = self.a.prefix_max_pods
        return top * (0.5 - 0.5 * math.cos(2 * math.pi * x))

    def pick_op(self):
        with self.lock:
            live = [p for p in self.pods.values() if p.state == "live"]
            now = time.monotonic()
            due = [p for p in self.pending_dels if p.retry_at <= now]
            if due:
                p = due[0]
                self.pending_dels.remove(p)
                return "del", p
            want = self.target(now)
            add = len(live) < want
            if self.rng.random() < 0.2:
                add = not add
            if add or not live:
                return "add", None
            ready = [p for p in live if p.checked]
            if not ready:
                return "add", None
            p = self.rng.choice(ready)
            p.state = "deleting"
            return "del", p

    def churn(self):
        """ADD and DEL at a steady rate, in parallel, until told to stop."""
        period = 1.0 / self.a.rate
        inflight = []
        ex = concurrent.futures.ThreadPoolExecutor(self.a.parallel)
        nxt = time.monotonic()
        while not self.stop_churn.is_set():
            inflight = [f for f in inflight if not f.done()]
            if len(inflight) < self.a.parallel:
                op, pod = self.pick_op()
                fn = self.do_add if op == "add" else self.do_del
                inflight.append(ex.submit(self.guard, fn, pod))
            nxt += period
            delay = nxt - time.monotonic()
            if delay > 0:
                self.stop_churn.wait(delay)
            else:
                nxt = time.monotonic()
        for f in inflight:
            f.result()
        ex.shutdown(wait=True)

    def guard(self, fn, arg):
        try:
            fn(arg)
        except Exception as e:          # a harness bug must not go unseen
            import traceback
            self.res.violation("harness-error", "%s", traceback.format_exc())
            raise e

    def do_add(self, pod=None):
        pod = pod or Pod(self.tag, self.sod())
        run("ip", "netns", "add", pod.ns)
        with self.lock:
            self.pods[pod.cid] = pod
        outcome, out, dt = self.plugin("ADD", pod)
        ip = None
        if outcome == "ok":
            try:
                ip = out["ips"][0]["address"].split("/")[0]
            except (KeyError, IndexError, TypeError):
                pass
        self.res.op("add", outcome, dt, pod.cid, ip)
        if dt > self.a.add_timeout + ADD_SLACK_S and outcome != "hung":
            self.res.violation("add-latency", "ADD %s answered (%s) in "
                               "%.2f s, over add_timeout_s + %.0f s",
                               pod.cid, outcome, dt, ADD_SLACK_S)
        if outcome != "ok":
            # As a runtime does: a failed ADD is followed by a DEL.
            pod.state = "deleting"
            self.do_del(pod)
            return
        try:
            ip = out["ips"][0]["address"].split("/")[0]
        except (KeyError, IndexError, TypeError):
            self.res.violation("bad-result", "ADD %s: result %r", pod.cid,
                               out)
            pod.state = "deleting"
            self.do_del(pod)
            return
        with self.lock:
            pod.ip = ip
            pod.t_ack = time.monotonic()
            pod.state = "live"
            self.acked.append(pod)
            others = [p.cid for p in self.pods.values()
                      if p is not pod and p.state == "live" and p.ip == ip]
        if others:
            self.res.violation("duplicate-address", "ADD %s got %s, which "
                               "live pod(s) %s hold", pod.cid, ip, others)
        ok, t = ping(pod.ns, self.ep["vpc_host"], PING_WAIT_S)
        pod.checked = True      # from now on the churn may delete it
        self.res.pings["after-add ok" if ok else "after-add failed"] += 1
        if not ok:
            if self.is_victim(pod):
                self.mark_victim(pod)
            else:
                self.res.violation("add-unreachable", "pod %s at %s did "
                                   "not reach %s within %d s after its ADD"
                                   "; %s", pod.cid, ip, self.ep["vpc_host"],
                                   PING_WAIT_S, self.whereis(ip))

    def do_del(self, pod):
        t0 = time.monotonic()
        outcome, _, dt = self.plugin("DEL", pod)
        if pod.t_del is None and outcome != "enid-down":
            pod.t_del = t0      # enid may have freed its address since
        self.res.op("del", outcome, dt, pod.cid, pod.ip)
        if dt > DEL_PLUGIN_MAX_S and outcome != "hung":
            self.res.violation("del-latency", "DEL %s: enid-cni took %.2f s "
                               "(%s), over %.1f s", pod.cid, dt, outcome,
                               DEL_PLUGIN_MAX_S)
        if outcome != "ok":
            # enid is down or restarting: the runtime tries again.
            with self.lock:
                pod.retry_at = time.monotonic() + 0.5 + self.rng.random()
                self.pending_dels.append(pod)
            return False
        run("ip", "netns", "del", pod.ns, check=False)
        with self.lock:
            pod.state = "gone"
            self.pods.pop(pod.cid, None)
        return True

    def whereis(self, ip):
        """Where the cloud and enid have an address, for a violation's
        report."""
        out = []
        try:
            for e in self.sim.control("GET", "/state")["enis"]:
                if ip in all_addrs(e):
                    out.append("the cloud has it on %s (%s, %s%s)" % (
                        e["id"], e["status"], "primary" if
                        e["addresses"][0] == ip else "secondary" if
                        ip in e["addresses"] else "prefix " + block_of(ip),
                        ", link ready" if e.get("link_ready") else ""))
            for e in self.show("enis"):
                for a in e["addresses"]:
                    if a["ip"] == ip:
                        out.append("enid has it on %s (%s), %s" % (
                            e["id"], e["state"], a["state"]))
        except (OSError, ValueError) as e:
            out.append("(state unavailable: %r)" % e)
        return "; ".join(out) or "nobody has it"

    # ---- victims: what the harness broke itself ----

    def is_victim(self, pod):
        """Was pod's address (or ENI) taken behind enid's back while it
        lived, or before its ADD but too recently for enid to know?  enid
        knows once two reconciliations ended after the change (the first
        may have asked the cloud before it)."""
        with self.lock:
            hits = [sod for t, sod, ips, _ in self.sabotage
                    if pod.ip in ips]
            enis = {eni: sod for t, sod, _, eni in self.sabotage if eni}
        if enis:
            eni = self.eni_of(pod)
            if eni in enis:
                hits.append(enis[eni])
        if not hits:
            return False
        done = self.reconciles_done()
        for sod in hits:
            if sod >= pod.sod_add:
                return True
            if len([d for d in done if sod < d < pod.sod_add]) < 2:
                return True
        return False

    def eni_of(self, pod):
        """The ENI pod's address is on: enid's word, else the cloud's."""
        try:
            for p in self.show("pods"):
                if p["container_id"] == pod.cid and p.get("eni"):
                    return p["eni"]
        except (OSError, ValueError):
            pass
        try:
            for e in self.sim.control("GET", "/state")["enis"]:
                if pod.ip in e["addresses"]:
                    return e["id"]
        except (OSError, ValueError):
            pass
        return None

    def reconciles_done(self):
        """When enid logged "reconcile: done", in seconds of the day."""
        out = []
        for path in list(self.svc.logs):
            try:
                text = open(path, errors="replace").read()
            except OSError:
                continue
            for m in RECON_DONE.finditer(text):
                out.append(self.sod(int(m.group(1)) * 3600 +
                                    int(m.group(2)) * 60 +
                                    float(m.group(3))))
        return out

    def sod(self, secs=None):
        """Seconds of the (local) day, the clock of enid's log lines,
        counted on past midnight from the start of the run."""
        if secs is None:
            now = time.time()
            lt = time.localtime(now)
            secs = lt.tm_hour * 3600 + lt.tm_min * 60 + lt.tm_sec + \
                now % 1
        if secs < self.sod0 - 3600:
            secs += 86400
        return secs

    def mark_victim(self, pod):
        with self.lock:
            if pod.victim or pod.state != "live":
                return
            pod.victim = True
            pod.state = "deleting"
            pod.retry_at = time.monotonic()
            self.pending_dels.append(pod)
        self.res.victims += 1
        self.res.event(op="victim", cid=pod.cid, ip=pod.ip)

    def sabotaged(self, ips, eni=None):
        """ips (or every address of eni, even ones it gets later) are
        taken behind enid's back."""
        now = time.monotonic()
        self.res.event(op="sabotage", ips=sorted(ips), eni=eni)
        with self.lock:
            self.sabotage.append((now, self.sod(), set(ips), eni))
            hit = [p for p in self.pods.values()
                   if p.state == "live" and p.ip in ips]
        for p in hit:
            self.mark_victim(p)

    # ---- continuous checks ----

    def checker(self):
        while not self.stop_churn.wait(CHECK_EVERY_S):
            try:
                self.guard(self.check_once, 3)
            except Exception:
                pass            # a violation already; go on checking

    def enid_dels(self):
        """enid's own DEL answers in this life, from its histogram:
        (how many, how many within DEL_BOUND_S); a life killed loses what
        it answered since the last look."""
        gen = self.svc.gen
        a = self.ctl({"op": "metrics"})
        if not a.get("ok"):
            raise OSError("metrics: %r" % (a,))
        n = within = 0
        for f in a["metrics"]:
            if f["name"] != "enid_cni_request_duration_seconds":
                continue
            for x in f["samples"]:
                lb = x["labels"]
                if lb.get("op") != "del":
                    continue
                if x["name"].endswith("_count"):
                    n += int(x["value"])
                elif x["name"].endswith("_bucket") and \
                        float(lb["le"]) == DEL_BOUND_S:
                    within += int(x["value"])
        if self.svc.gen != gen:
            return
        with self.res.lock:
            self.res.del_hist[gen] = (n, within)
        if within < n and self.first_time("del-hist", gen, n - within):
            self.res.violation("del-latency", "enid answered %d DEL(s) of "
                               "%d in its life %d in over %.1f s (its "
                               "histogram)", n - within, n, gen,
                               DEL_BOUND_S)

    def check_once(self, sample=3):
        with self.lock:
            live = [p for p in self.pods.values() if p.state == "live"]
        by_ip = collections.defaultdict(list)
        for p in live:
            by_ip[p.ip].append(p.cid)
        for ip, cids in by_ip.items():
            if len(cids) > 1 and self.first_time("live", ip, cids):
                self.res.violation("duplicate-address", "%s is held by live "
                                   "pods %s", ip, cids)
        if self.svc.running.is_set():
            try:
                pods = self.show("pods")
            except (OSError, ValueError):
                pods = None
            if pods is not None:
                self.res.enid_lists += 1
                seen = collections.defaultdict(list)
                for p in pods:
                    seen[p["ip"]].append("%s(%s)" % (p["container_id"],
                                                     p["state"]))
                for ip, who in seen.items():
                    if len(who) > 1 and self.first_time("enid", ip, who):
                        self.res.violation("duplicate-address", "enid lists "
                                           "%s for pods %s", ip, who)
            try:
                self.enid_dels()
            except (OSError, ValueError):
                pass            # down or restarting: the next look
        if self.t_prefixes is not None:
            self.res.prefixes = self.check_prefixes()
        now = time.monotonic()
        old = [p for p in live if p.t_ack and now - p.t_ack > 3 and
               not p.victim]
        for p in self.rng.sample(old, min(sample, len(old))):
            ok, _ = ping(p.ns, self.ep["vpc_host"], PING_WAIT_S)
            self.res.pings["held ok" if ok else "held failed"] += 1
            if ok:
                continue
            with self.lock:
                still = p.state == "live"
            if not still:
                continue
            if self.is_victim(p):
                self.mark_victim(p)
            elif not p.reported:
                p.reported = True       # once per pod
                self.res.violation("held-unreachable", "pod %s at %s, "
                                   "acknowledged %.1f s ago, no longer "
                                   "reaches %s", p.cid, p.ip,
                                   now - p.t_ack, self.ep["vpc_host"])

    def first_time(self, *what):
        """A breach seen again at the next check is reported once."""
        key = json.dumps(what, sort_keys=True)
        if key in self.reported:
            return False
        self.reported.add(key)
        return True

    # ---- prefixes: the sim's log against the pods ----

    def prefix_log(self):
        """The sim's log of prefixes (GET /prefixes/log), all of it: what
        came since the last look is added to what was read before."""
        with self.plog_lock:
            out = self.sim.control("GET", "/prefixes/log?since=%d" %
                                   self.plog_seq)
            if out["events"] and out["events"][0]["seq"] != \
                    self.plog_seq + 1:
                self.res.violation("harness-error", "the sim's log of "
                                   "prefixes lost events %d to %d",
                                   self.plog_seq + 1,
                                   out["events"][0]["seq"] - 1)
            self.plog.extend(out["events"])
            self.plog_seq = out["last"]
            return list(self.plog)

    def check_prefixes(self):
        """prefix-in-use.  The sim logs when each prefix left an ENI, and
        who asked; the harness knows when each of its pods held an
        address: from its ADD's answer to its DEL's sending (the first
        that may have reached enid), and ip_cooldown_s after that.  A
        prefix enid gave back (unassigned, or deleted with its ENI)
        within that time had an address assigned, cooling or being
        released; one given back while an ADD was in flight that then
        answered with an address of it, the prefix not delegated again
        between, had the ADD's.  Not judged: an ENI the harness detached,
        and a pod whose address the harness took (its victims).  Returns
        what the check saw, for the summary."""
        events = self.prefix_log()
        me = self.node["primary_ip"]
        grace = 2 * self.a.reconcile_interval + 5
        with self.lock:
            pods = list(self.acked)
            sab = list(self.sabotage)
        by_block = collections.defaultdict(list)
        for p in pods:
            by_block[block_of(p.ip)].append(p)
        assigned = collections.defaultdict(list)
        seen = {"assigned": 0, "given back": 0, "deleted with its ENI": 0,
                "given back after a pod": 0, "closest": None,
                "pods on prefixes": 0, "behind enid's back": 0}
        for ev in events:
            if ev["op"] == "assign":
                assigned[ev["prefix"]].append(ev["mono"])
                seen["assigned"] += ev["caller"] == me
        for blk, ps in by_block.items():
            for p in ps:
                if any(t < p.t_ack for t in assigned.get(blk, ())):
                    seen["pods on prefixes"] += 1
        for ev in events:
            if ev["op"] == "assign":
                continue
            if ev["caller"] != me:
                seen["behind enid's back"] += 1
                continue
            t = ev["mono"]
            seen["given back" if ev["op"] == "unassign" else
                 "deleted with its ENI"] += 1
            if any(eni == ev["eni"] and ts <= t for ts, _, _, eni in sab):
                continue        # detached behind enid's back
            after = False
            for p in by_block.get(ev["prefix"], ()):
                if any(p.ip in ips and p.t_add - grace <= ts <= t
                       for ts, _, ips, _ in sab):
                    continue    # a victim: the harness took its address
                end = p.t_del + COOLDOWN_S if p.t_del is not None \
                    else math.inf
                why = None
                if p.t_ack <= t < end:
                    why = "it held %s: acknowledged %.2f s before%s" % (
                        p.ip, t - p.t_ack, "" if p.t_del is None else
                        ", its DEL sent %.2f s before (ip_cooldown_s %d)"
                        % (t - p.t_del, COOLDOWN_S))
                elif p.t_add <= t < p.t_ack and not any(
                        t < ta < p.t_ack for ta in assigned[ev["prefix"]]):
                    why = "its ADD, sent %.2f s before, was answered " \
                        "%.2f s after with %s" % (t - p.t_add,
                                                  p.t_ack - t, p.ip)
                if p.t_ack <= t:
                    after = True        # a pod had used it: judged
                if end <= t:
                    m = t - end
                    if seen["closest"] is None or m < seen["closest"]:
                        seen["closest"] = m
                if why and self.first_time("prefix-in-use", ev["seq"],
                                           p.cid):
                    self.res.violation(
                        "prefix-in-use", "%s: prefix %s %s at %s (sim "
                        "log #%d) while pod %s used it: %s", ev["eni"],
                        ev["prefix"], "given back" if ev["op"] ==
                        "unassign" else "deleted with its ENI",
                        time.strftime("%H:%M:%S", time.localtime(ev["t"]))
                        + ".%03d" % (ev["t"] * 1000 % 1000), ev["seq"],
                        p.cid, why)
            seen["given back after a pod"] += after
        return seen

    def pods_in_prefixes(self):
        """([(pods, prefix)] fewest first, of the node's prefixes that
        hold live pods; {prefix: [pods]}; every prefix on the node)."""
        iid = self.node["instance_id"]
        held = [p for e in self.sim.control("GET", "/state")["enis"]
                if e.get("instance_id") == iid for p in e.get("prefixes")
                or ()]
        with self.lock:
            live = [p for p in self.pods.values() if p.state == "live"]
        inside = {b: [p for p in live if block_of(p.ip) == b]
                  for b in held}
        used = sorted((len(v), b) for b, v in inside.items() if v)
        return used, inside, held

    def prefix_probe(self):
        """prefix-in-use at its bound, on purpose, once the faults have
        stopped.  The prefix with the fewest pods loses all of them but
        one, and the other prefixes enough pods (one left in each) that
        the pool holds a prefix's worth more than it needs: a surplus no
        wholly free prefix serves, so it freezes that one.  Once that has
        lasted shrink_delay_s, the last pod goes: the prefix may be given
        back no sooner than ip_cooldown_s after its DEL.  A broker that
        counts a cooling address as free gives it back at once; the sim's
        log says when, and check_prefixes judges it.  What happened, for
        the summary.  First, pods are added until two prefixes have some
        (a new pod takes an address of the fullest prefix)."""
        end = time.monotonic() + 30
        added = 0
        while True:
            used, inside, held = self.pods_in_prefixes()
            if len(used) >= 2 or time.monotonic() > end or added >= 40:
                break
            self.do_add()
            added += 1
        if len(used) < 2:
            return "not possible: %d prefixes on the node, %d with pods" % (
                len(held), len(used))
        blk = used[0][1]
        last = inside[blk][-1]
        going = inside[blk][:-1]
        # The need is the pods' addresses and warm_ip_target's 3: at most
        # this many pods in prefixes leave a prefix's worth over, and one
        # more (the last pod's address cools in the need).
        room = 16 * (len(used) - 1) - 4
        others = sorted((b for _, b in used[1:]), key=lambda b: -len(
            inside[b]))
        left = 1 + sum(len(inside[b]) for b in others)
        for b in others:
            for p in inside[b][1:]:
                if left <= room:
                    break
                going.append(p)
                left -= 1
        for p in going:
            p.state = "deleting"
            self.do_del(p)
        time.sleep(SHRINK_DELAY_S + COOLDOWN_S + 1)
        last.state = "deleting"
        self.do_del(last)
        t = last.t_del
        end = time.monotonic() + COOLDOWN_S + SHRINK_DELAY_S + 3
        what = "%s (%d pods added, %d deleted, then its last)" % (
            blk, added, len(going))
        while time.monotonic() < end:
            gone = [e["mono"] for e in self.prefix_log()
                    if e["prefix"] == blk and e["op"] != "assign" and
                    e["mono"] > t]
            if gone:
                return "%s given back %.2f s after its last pod's DEL " \
                    "(ip_cooldown_s %d)" % (what, gone[0] - t, COOLDOWN_S)
            time.sleep(0.2)
        return "%s not given back within %.0f s of its last pod's DEL" % (
            what, COOLDOWN_S + SHRINK_DELAY_S + 3)

    # ---- faults ----

    def ec2(self):
        if self._ec2 is None:
            self._ec2 = simec2.client(self.ep, max_attempts=3,
                                      connect_timeout=5, read_timeout=10)
        return self._ec2

    def node_enis(self):
        iid = self.node["instance_id"]
        return [e for e in self.sim.control("GET", "/state")["enis"]
                if e.get("instance_id") == iid]

    def add_rule(self, rule, hold):
        with self.rules_lock:
            self.sim.control("POST", "/faults", [rule])
            self.rules.append(rule)
        self.later(hold, "rule %s" % rule.get("code", "latency"),
                   lambda: self.drop_rule(rule))

    def drop_rule(self, rule):
        """Take one of our rules out; the sim's list is replaced whole,
        keeping the others (with what is left of their counts)."""
        def same(a, b):
            return {k: v for k, v in a.items() if k != "count"} == \
                {k: v for k, v in b.items() if k != "count"}
        with self.rules_lock:
            if rule in self.rules:
                self.rules.remove(rule)
            cur = self.sim.control("GET", "/faults")["faults"]
            for i, r in enumerate(cur):
                if same(r, rule):
                    del cur[i]
                    break
            else:
                return
            self.sim.control("DELETE", "/faults")
            if cur:
                self.sim.control("POST", "/faults", cur)

    def later(self, delay, what, fn):
        with self.lock:
            self.undo.append((time.monotonic() + delay, what, fn))

    def run_undos(self, force=False):
        now = time.monotonic()
        with self.lock:
            due = [u for u in self.undo if force or u[0] <= now]
            self.undo = [u for u in self.undo if u not in due]
        for _, what, fn in due:
            try:
                fn()
            except Exception as e:
                log("undo %s failed: %r", what, e)

    def f_throttle(self):
        if self.rng.random() < 0.5:
            rule = {"action": "*", "code": "RequestLimitExceeded",
                    "probability": round(self.rng.uniform(0.5, 1.0), 2)}
        else:
            rule = {"action": "*", "code": "RequestLimitExceeded",
                    "count": self.rng.randint(10, 60)}
        self.add_rule(rule, self.rng.uniform(1, 6))
        return "throttling burst"

    def f_5xx(self):
        code, status = self.rng.choice((("InternalError", 500),
                                        ("Unavailable", 503),
                                        ("ServiceUnavailable", 503)))
        rule = {"action": self.rng.choice(("*",) + EC2_ACTIONS),
                "code": code, "status": status,
                "probability": round(self.rng.uniform(0.2, 0.8), 2)}
        self.add_rule(rule, self.rng.uniform(2, 8))
        return "5xx"

    def f_latency(self):
        hi = self.rng.randint(800, 4000)
        rule = {"action": self.rng.choice(("*",) + EC2_ACTIONS),
                "latency_ms": [100, hi]}
        self.add_rule(rule, self.rng.uniform(2, 8))
        return "latency spike"

    def f_link_delay(self):
        self.sim.control("POST", "/links", {
            "delay_ms": self.rng.randint(1000, 15000),
            "next": self.rng.randint(1, 2)})
        return "link delay"

    def f_link_never(self):
        self.sim.control("POST", "/links", {"never": True, "next": 1})
        return "link never appears"

    def f_subnet(self):
        which = self.rng.choice([self.subnets[:1], self.subnets[1:],
                                 self.subnets])
        for s in which:
            self.sim.control("POST", "/subnets/" + s, {"free": 0})

        def recover():
            for s in which:
                self.sim.control("POST", "/subnets/" + s, {"free": 4091})
        self.later(self.rng.uniform(4, 15), "subnet recovery", recover)
        return "subnet exhausted"

    def f_cred_expire(self):
        self.sim.control("POST", "/credentials",
                         {"expire_s": self.rng.randint(1, 6)})
        self.later(self.rng.uniform(4, 12), "credential lifetime",
                   lambda: self.sim.control("POST", "/credentials",
                                            {"expire_s": 900}))
        return "credentials expired"

    def f_cred_revoke(self):
        self.sim.control("POST", "/credentials", {"revoke": True})
        return "credentials revoked"

    def eni_addrs(self, eni_id):
        for e in self.sim.control("GET", "/state")["enis"]:
            if e["id"] == eni_id:
                return all_addrs(e)
        return []

    def f_detach(self):
        enis = [e for e in self.node_enis() if e["device_index"] != 0 and
                e["attachment"] and e["attachment"]["status"] == "attached"]
        if not enis:
            return None
        e = self.rng.choice(enis)
        # Before and after: the pool may grow onto it meanwhile, and the
        # call may take a while under throttling.
        self.sabotaged(all_addrs(e), e["id"])
        try:
            self.ec2().detach_network_interface(
                AttachmentId=e["attachment"]["id"])
        finally:
            self.sabotaged(self.eni_addrs(e["id"]), e["id"])
        return "ENI detached behind enid's back"

    def f_unassign(self):
        enis = [e for e in self.node_enis() if len(e["addresses"]) > 1]
        if not enis:
            return None
        e = self.rng.choice(enis)
        ip = self.rng.choice(e["addresses"][1:])
        self.sabotaged([ip])
        try:
            self.ec2().unassign_private_ip_addresses(
                NetworkInterfaceId=e["id"], PrivateIpAddresses=[ip])
        finally:
            self.sabotaged([ip])
        return "address unassigned behind enid's back"

    # ---- prefix faults (the prefix phase's deck) ----

    def f_fragment(self):
        """One or both subnets fragmented: single addresses free, no whole
        /28 (or only the K highest), for 4 to 15 s."""
        which = self.rng.choice([self.subnets[:1], self.subnets[1:],
                                 self.subnets])
        keep = self.rng.choice((0, 0, 1, 2))
        for s in which:
            self.sim.control("POST", "/subnets/" + s,
                             {"fragment": True, "keep_prefixes": keep})

        def whole():
            for s in which:
                self.sim.control("POST", "/subnets/" + s,
                                 {"fragment": False})
        self.later(self.rng.uniform(4, 15), "subnet whole again", whole)
        return "subnet fragmented"

    def prefix_rule(self, **rule):
        rule.update(action=self.rng.choice(PREFIX_ACTIONS),
                    with_param="Ipv4Prefix")
        return rule

    def f_prefix_fail(self):
        rule = self.prefix_rule(
            probability=round(self.rng.uniform(0.5, 1.0), 2))
        codes = [("InternalError", 500), ("ServiceUnavailable", 503)]
        if rule["action"] != "UnassignPrivateIpAddresses":
            codes.append(("InsufficientCidrBlocks", 400))
        rule["code"], rule["status"] = self.rng.choice(codes)
        self.add_rule(rule, self.rng.uniform(2, 8))
        return "prefix calls failing"

    def f_prefix_throttle(self):
        rule = self.prefix_rule(code="RequestLimitExceeded", status=503)
        if self.rng.random() < 0.5:
            rule["probability"] = round(self.rng.uniform(0.5, 1.0), 2)
        else:
            rule["count"] = self.rng.randint(3, 20)
        self.add_rule(rule, self.rng.uniform(1, 6))
        return "prefix calls throttled"

    def f_prefix_latency(self):
        rule = self.prefix_rule(latency_ms=[100, self.rng.randint(800, 4000)])
        self.add_rule(rule, self.rng.uniform(2, 8))
        return "prefix calls slow"

    def f_prefix_unknown(self):
        """A prefix call done, its answer lost: a 5xx after the change, or
        an answer later than cloudd waits."""
        if self.rng.random() < 0.5:
            rule = self.prefix_rule(after=True,
                                    count=self.rng.randint(1, 2))
            rule["code"], rule["status"] = self.rng.choice(
                (("InternalError", 500), ("ServiceUnavailable", 503)))
        else:
            rule = self.prefix_rule(after=True, count=1, latency_ms=[
                CLOUD_TIMEOUT_MS + 500, CLOUD_TIMEOUT_MS + 3000])
        self.add_rule(rule, self.rng.uniform(6, 15))
        return "prefix call done, answer lost"

    def f_unassign_prefix(self):
        enis = [e for e in self.node_enis() if e.get("prefixes")]
        if not enis:
            return None
        e = self.rng.choice(enis)
        p = self.rng.choice(e["prefixes"])
        self.sabotaged(hosts(p))
        try:
            self.ec2().unassign_private_ip_addresses(
                NetworkInterfaceId=e["id"], Ipv4Prefixes=[p])
        finally:
            self.sabotaged(hosts(p))
        return "prefix unassigned behind enid's back"

    def kill(self, which):
        """kill -9 of which; a kill that cannot be done now is counted with
        its reason (the summary's "kill -9 skipped" lines) and goes back
        into the deck."""
        why = self.svc.kill9(which)
        if why is not None:
            with self.res.lock:
                self.res.kill_skips[(which, why)] += 1
            log("kill -9 %s skipped: %s", which, why)
            return None
        return "kill -9 " + which if which != "set" else \
            "kill -9 of the whole set"

    # One kind per process, each in every deck: a run of the default
    # length kills each of the three (one kind drawing its victim at
    # random left one unkilled in many runs).
    def f_kill_enid(self):
        return self.kill("enid")

    def f_kill_netd(self):
        return self.kill("enid-netd")

    def f_kill_cloudd(self):
        return self.kill("enid-cloudd")

    def f_kill_set(self):
        return self.kill("set")

    CHAOS = (("f_throttle", 3), ("f_5xx", 2), ("f_latency", 2),
             ("f_link_delay", 2), ("f_link_never", 1), ("f_subnet", 1),
             ("f_cred_expire", 1), ("f_cred_revoke", 1), ("f_detach", 1),
             ("f_unassign", 2), ("f_kill_enid", 1), ("f_kill_netd", 1),
             ("f_kill_cloudd", 1))
    PREFIX_CHAOS = (("f_fragment", 2), ("f_prefix_fail", 1),
                    ("f_prefix_throttle", 1), ("f_prefix_latency", 1),
                    ("f_prefix_unknown", 2), ("f_unassign_prefix", 1))
    KILLS = {"f_kill_enid": "enid", "f_kill_netd": "enid-netd",
             "f_kill_cloudd": "enid-cloudd", "f_kill_set": "set"}

    def injector(self):
        """Faults dealt from a shuffled deck that holds each kind as often
        as its weight, so that a short run has every kind (a random draw
        each time would miss a light one in one run of six); a kind that
        cannot be injected now (no secondary ENI to detach, enid down)
        goes back into the deck, to come again soon."""
        if self.a.mode == "restart":
            table, gap = (("f_kill_set", 1),), (self.a.kill_min,
                                                self.a.kill_max)
        else:
            table, gap = self.CHAOS, (1.0, 4.0)
        if self.a.prefixes == "on" and self.a.mode == "chaos":
            table = self.CHAOS + self.PREFIX_CHAOS
        deck = []
        first = True
        while not self.stop_faults.wait(self.rng.uniform(*gap)):
            self.run_undos()
            if self.a.mode == "chaos" and self.t_prefixes is not None and \
                    table is self.CHAOS:
                # The prefix phase began: its kinds first, one in every
                # two draws, so that the phase deals each of them.
                table = self.CHAOS + self.PREFIX_CHAOS
                deck = self.with_prefix_kinds(deck)
            if not deck:
                deck = [n for n, w in table for _ in range(w)]
                self.rng.shuffle(deck)
                if first and table is self.CHAOS and \
                        self.a.prefixes == "switch":
                    deck = self.singles_first(deck)
                first = False
            name = deck.pop()
            try:
                what = getattr(self, name)()
            except Exception as e:
                self.res.fault_fails[name[2:]] += 1
                log("fault %s could not be injected: %r", name, e)
                what = None
            if what:
                self.res.fault(what)
                self.res.injected[name] += 1
                self.res.event(op="fault", what=what)
                log("fault: %s", what)
            else:
                if name not in self.KILLS:      # those say why themselves
                    self.res.fault_fails[name[2:] + NOT_NOW] += 1
                deck.insert(self.rng.randint(max(0, len(deck) - 3),
                                             len(deck)), name)
        self.run_undos(force=True)

    # Kinds that need what the single-address phase has: its ENIs (the
    # prefix phase's prefixes fit on the primary ENI's slots, and a second
    # ENI comes only now and then).  Dealt in its first draws, they come
    # back soon until injected; left to the prefix phase they could come
    # back draw after draw and starve the other kinds.
    SINGLES_FIRST = ("f_detach",)

    def not_now(self, name):
        n = self.res.fault_fails[name[2:] + NOT_NOW]
        return "; drawn %d times with nothing to inject it on" % n if n \
            else ""

    def singles_first(self, deck):
        """deck (drawn from its end) with SINGLES_FIRST among its first
        six draws."""
        for name in self.SINGLES_FIRST:
            deck.remove(name)
            deck.insert(self.rng.randint(max(0, len(deck) - 5), len(deck)),
                        name)
        return deck

    def with_prefix_kinds(self, deck):
        """deck (drawn from its end) with the prefix phase's kinds dealt
        first, every other draw."""
        pk = [n for n, w in self.PREFIX_CHAOS for _ in range(w)]
        self.rng.shuffle(pk)
        rest = list(reversed(deck))
        order = []
        while pk or rest:
            if pk:
                order.append(pk.pop())
            if rest:
                order.append(rest.pop(0))
        return list(reversed(order))

    def vacuous(self):
        """A run whose checks had (almost) nothing to check passes
        nothing: too few acknowledged ADDs or DELs, a kind of fault never
        injected, no reconciliation seen (victims would be judged without
        it), enid's own lists or its DEL answers never looked at."""
        r, a = self.res, self.a
        acks = r.ops[("add", "ok")]
        dels = r.ops[("del", "ok")]
        need = max(10, int(a.duration * a.rate * a.min_ack_share))
        if acks < need:
            r.violation("vacuous", "only %d ADDs acknowledged (at least "
                        "%d wanted for %d s at %.1f/s)", acks, need,
                        a.duration, a.rate)
        if dels < need // 2:
            r.violation("vacuous", "only %d DELs answered ok (at least "
                        "%d wanted)", dels, need // 2)
        table = self.CHAOS if a.mode == "chaos" else (("f_kill_set", 1),)
        for name, _ in table:
            if r.injected[name] == 0:
                skips = sorted((why, n) for (w, why), n in
                               r.kill_skips.items()
                               if w == self.KILLS.get(name))
                r.violation("vacuous", "fault %s was never injected "
                            "(%d attempts failed%s%s)", name[2:],
                            r.fault_fails[name[2:]], "".join(
                                "; skipped %d times: %s" % (n, why)
                                for why, n in skips), self.not_now(name))
        if a.mode == "restart":
            need_kills = max(2, int(a.duration / a.kill_max) - 1)
            if r.injected["f_kill_set"] < need_kills:
                r.violation("vacuous", "the set was killed %d times, fewer "
                            "than %d", r.injected["f_kill_set"], need_kills)
        r.reconciles = len(self.reconciles_done())
        if a.mode == "chaos" and r.reconciles < 2:
            r.violation("vacuous", "%d reconciliations seen in enid's "
                        "logs: victims cannot be judged", r.reconciles)
        if self.a.prefixes != "off":
            self.vacuous_prefixes()
        if r.enid_lists < 3:
            r.violation("vacuous", "enid's pod list was checked %d times"
                        % r.enid_lists)
        checked = sum(n for n, _ in r.del_hist.values())
        if checked < dels // 4:
            r.violation("vacuous", "enid's histogram accounts for %d DELs "
                        "of %d", checked, dels)
        p95 = r.pct("del", 0.95)
        if p95 > DEL_PLUGIN_P95_S:
            r.violation("del-latency", "enid-cni's DEL p95 is %.2f s, over "
                        "%.1f s", p95, DEL_PLUGIN_P95_S)

    def vacuous_prefixes(self):
        """The prefix phase checked too little: it never began, enid never
        ran with prefix delegation, no pod got an address of a prefix, no
        kind of its faults was dealt (chaos mode), or (chaos mode, whose
        wave empties the pool in the phase) enid gave back no prefix once
        a pod had used it, which leaves prefix-in-use nothing to judge."""
        r = self.res
        if self.t_prefixes is None:
            r.violation("vacuous", "the prefix phase never began")
            return
        lives = [p for p in self.svc.logs if "pool: prefix delegation: "
                 in open(p, errors="replace").read()]
        if not lives:
            r.violation("vacuous", "no life of enid logged \"pool: prefix "
                        "delegation\"")
        seen = r.prefixes or {}
        if seen.get("pods on prefixes", 0) < 5:
            r.violation("vacuous", "%d pods got an address of a prefix "
                        "(at least 5 wanted)", seen.get("pods on prefixes",
                                                        0))
        if self.a.mode != "chaos":
            return
        if seen.get("given back after a pod", 0) < 1:
            r.violation("vacuous", "enid gave back no prefix a pod had "
                        "used (%d given back): prefix-in-use judged nothing"
                        % seen.get("given back", 0))
        for name, _ in self.PREFIX_CHAOS:
            if r.injected[name] == 0:
                r.violation("vacuous", "fault %s was never injected (%d "
                            "attempts failed%s)", name[2:],
                            r.fault_fails[name[2:]], self.not_now(name))

    def calm(self):
        """Every fault off: rules, link delays, subnets, credentials."""
        with self.rules_lock:
            self.sim.control("DELETE", "/faults")
            self.rules = []
        self.sim.control("POST", "/links", {"delay_ms": 0})
        for s in self.subnets:
            self.sim.control("POST", "/subnets/" + s, {"fragment": False})
            self.sim.control("POST", "/subnets/" + s, {"free": 4091})
        self.sim.control("POST", "/credentials", {"expire_s": 900})

    # ---- the end ----

    def finish_dels(self, deadline):
        """Every DEL the runtime still owes, and the victims', until
        answered ok."""
        while time.monotonic() < deadline:
            with self.lock:
                todo = list(self.pending_dels)
                self.pending_dels = []
            if not todo:
                return True
            for p in todo:
                if not self.do_del(p):
                    time.sleep(0.3)
        return False

    def settle(self, deadline, quiet=4.0):
        """Until the pool stops changing and every ENI in it is ready."""
        last, since = None, time.monotonic()
        while time.monotonic() < deadline:
            try:
                enis = self.show("enis")
                now = sorted((e["id"], e["state"],
                              tuple(sorted(x["ip"] for x in e["addresses"])))
                             for e in enis)
            except (OSError, ValueError):
                now = None
            if now != last:
                last, since = now, time.monotonic()
            elif now is not None and time.monotonic() - since >= quiet and \
                    all(s == "ready" for _, s, _ in now):
                return True
            time.sleep(0.25)
        return False

    def compare(self):
        """The cloud against the pool, the checkpoint and the harness; a
        list of differences (empty when they agree)."""
        diffs = []
        iid = self.node["instance_id"]
        st = self.sim.control("GET", "/state")
        # A prefix's addresses are the pool's, each of them.
        cloud = {e["id"]: set(all_addrs(e)[1:]) for e in st["enis"]
                 if e.get("instance_id") == iid}
        leaked = [e["id"] for e in st["enis"] if e["status"] == "available"
                  and e["tags"].get("enid.io/instance-id") == iid]
        enis = self.show("enis")
        pool = {e["id"]: {x["ip"] for x in e["addresses"]} for e in enis}
        pool_pods = {}
        for e in enis:
            for x in e["addresses"]:
                if x["state"] == "assigned":
                    pool_pods[x.get("container_id")] = x["ip"]
        if set(cloud) != set(pool):
            diffs.append("ENIs: cloud only %s, pool only %s" % (
                sorted(set(cloud) - set(pool)),
                sorted(set(pool) - set(cloud))))
        for eid in set(cloud) & set(pool):
            if cloud[eid] != pool[eid]:
                diffs.append("%s addresses: cloud only %s, pool only %s" % (
                    eid, sorted(cloud[eid] - pool[eid]),
                    sorted(pool[eid] - cloud[eid])))
        if leaked:
            diffs.append("leaked ENIs (available, tagged for the node): %s"
                         % leaked)
        pods = {p["container_id"]: p["ip"] for p in self.show("pods")}
        lost = [p["container_id"] for p in self.show("pods")
                if p["state"] != "ready"]
        ck = {p["container_id"]: p["ip"]
              for p in ckptstate.read(self.workdir / "state")["pods"]}
        with self.lock:
            mine = {p.cid: p.ip for p in self.pods.values()
                    if p.state == "live"}
        if lost:
            diffs.append("pods not ready: %s" % lost)
        for name, other in (("enid's pods", pods), ("the checkpoint", ck),
                            ("the pool's assigned addresses", pool_pods)):
            if other != mine:
                diffs.append("%s differ from the live pods: %s" % (
                    name, sorted(set(other.items()) ^ set(mine.items()))))
        return diffs

    def final(self):
        log("faults stop")
        self.calm()
        t_calm = time.monotonic()
        if not self.svc.running.wait(60):
            self.res.violation("final-not-running", "enid is not running "
                               "60 s after the faults stopped")
            return
        if not self.finish_dels(time.monotonic() + 60):
            self.res.violation("final-del", "DELs still failing 60 s after "
                               "the faults stopped")
        if not self.settle(time.monotonic() + 120):
            self.res.violation("final-settle", "the pool did not settle "
                               "within 120 s: %r" % (self.show("enis"),))
        # One reconcile interval after the pool settled; then they agree.
        time.sleep(self.a.reconcile_interval + 1)
        end = time.monotonic() + max(30, self.a.leak_grace + 2 *
                                     self.a.reconcile_interval)
        diffs = self.compare()
        while diffs and time.monotonic() < end:
            time.sleep(1)
            diffs = self.compare()
        if not diffs:
            self.res.converged_s = time.monotonic() - t_calm
        for d in diffs:
            self.res.violation("final-mismatch", "%s", d)
        with self.lock:
            live = [p for p in self.pods.values() if p.state == "live"]
        for p in live:
            ok, _ = ping(p.ns, self.ep["vpc_host"], PING_WAIT_S)
            self.res.pings["final ok" if ok else "final failed"] += 1
            if not ok:
                self.res.violation("final-unreachable", "pod %s at %s does "
                                   "not reach the VPC host", p.cid, p.ip)
        self.check_once(sample=0)
        if self.t_prefixes is not None and self.a.mode == "chaos":
            self.res.probe = self.prefix_probe()
            log("prefix probe: %s", self.res.probe)
        # And every pod leaves: the pool and the checkpoint end empty.
        with self.lock:
            live = [p for p in self.pods.values() if p.state == "live"]
        for p in live:
            p.state = "deleting"
            self.do_del(p)
        self.finish_dels(time.monotonic() + 30)
        self.enid_dels()
        if self.t_prefixes is not None:
            # Every pod gone, the pool shrinks: the prefixes they used are
            # given back now, some within the last DELs' cooldown or just
            # after it; judged too.
            self.settle(time.monotonic() + 30, quiet=SHRINK_DELAY_S + 2)
            self.res.prefixes = self.check_prefixes()
        if self.show("pods") or \
                ckptstate.read(self.workdir / "state")["pods"]:
            self.res.violation("final-mismatch", "pods left after every "
                               "DEL: %r" % self.show("pods"))

    def scan_logs(self):
        bad = re.compile(r"AddressSanitizer|runtime error:|LeakSanitizer|"
                         r"error: fatal: ")
        for path in self.svc.logs:
            for line in open(path, errors="replace"):
                if bad.search(line):
                    self.res.violation("crash-report", "%s: %s", path.name,
                                       line.strip()[:300])

    def main(self):
        """The run; SIGINT or SIGTERM ends it early, without the final
        checks, and everything it made is removed either way."""
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        self.res.converged_s = None
        threads = []
        try:
            self.setup()
            self.t_start = time.monotonic()
            threads = [threading.Thread(target=self.churn),
                       threading.Thread(target=self.checker),
                       threading.Thread(target=self.injector)]
            if self.a.prefixes == "switch":
                threads.append(threading.Thread(
                    target=self.guard, args=(self.prefix_switch, None)))
            for t in threads:
                t.start()
            stop.wait(self.a.duration)
            self.stop_faults.set()
            threads[2].join()
            for t in threads[3:]:
                t.join()
            self.stop_churn.set()
            threads[0].join()
            threads[1].join()
            if stop.is_set():
                self.res.violation("interrupted", "the run was stopped "
                                   "before its end; no final checks")
            else:
                try:
                    self.final()
                except Exception:
                    import traceback
                    self.res.violation("harness-error", "the final checks "
                                       "broke off: %s",
                                       traceback.format_exc())
                self.vacuous()
        finally:
            self.stop_faults.set()
            self.stop_churn.set()
            for t in threads:
                t.join()
            if hasattr(self, "svc"):
                self.scan_logs()
            report = self.report()
            self.teardown()
        return report


def outcome_of(out, stderr):
    if isinstance(out, dict):
        det = out.get("details") or ""
        if det.startswith("enid: "):
            return det[6:].split()[0]
        msg = out.get("msg") or ""
        for needle, name in (("cannot reach enid", "enid-down"),
                             ("closed the connection", "connection-closed"),
                             ("did not answer", "no-answer")):
            if needle in msg:
                return name
        return "cni-%s" % out.get("code")
    return "no-output"


def ping(ns, host, wait):
    """Within wait seconds, one echo answered: a probe every half second
    (ping gives up early on an ICMP error, a route still being set up)."""
    t0 = time.monotonic()
    end = t0 + wait
    while True:
        left = end - time.monotonic()
        if left <= 0.05:
            return False, time.monotonic() - t0
        r = subprocess.run(["ip", "netns", "exec", ns, "ping", "-q", "-n",
                            "-c", "1", "-W", "%.2f" % min(0.5, left), host],
                           capture_output=True)
        if r.returncode == 0:
            return True, time.monotonic() - t0
        time.sleep(0.05)


def report_text(h):
    r = h.res
    out = []
    w = out.append
    w("")
    w("enid chaos soak: mode %s, %d s, seed %s, %.1f ops/s, %d in parallel,"
      " prefixes %s" % (h.a.mode, h.a.duration, h.a.seed, h.a.rate,
                        h.a.parallel, h.a.prefixes))
    w("")
    w("%-10s %-24s %8s" % ("operation", "outcome", "count"))
    for (op, oc), n in sorted(r.ops.items()):
        w("%-10s %-24s %8d" % (op, oc, n))
    for op in ("add", "del"):
        if r.lat.get(op):
            w("%-10s latency s: p50 %.3f  p99 %.3f  max %.3f" % (
                op, r.pct(op, 0.5), r.pct(op, 0.99), max(r.lat[op])))
    w("%-10s %s" % ("pings", ", ".join("%s %d" % kv for kv in
                                        sorted(r.pings.items()))))
    w("%-10s %d (pods whose address the harness took away)" % (
        "victims", r.victims))
    w("%-10s %d DELs in its histogram, %d within %.1f s; %d pod lists "
      "checked; %d reconciliations" % (
          "enid", sum(n for n, _ in r.del_hist.values()),
          sum(k for _, k in r.del_hist.values()), DEL_BOUND_S,
          r.enid_lists, r.reconciles))
    if r.prefixes is not None:
        px = r.prefixes
        w("%-10s delegation on at %.0f s; %d pods on prefixes; by enid: %d "
          "assigned, %d given back (%d after a pod used one), %d deleted "
          "with their ENI; %d taken behind its back" % (
              "prefixes", max(0, h.t_prefixes - h.t_start),
              px["pods on prefixes"], px["assigned"], px["given back"],
              px["given back after a pod"], px["deleted with its ENI"],
              px["behind enid's back"]))
        if px["closest"] is not None:
            w("%-10s closest give-back after a pod's cooldown ended: "
              "%.2f s" % ("", px["closest"]))
        if r.probe is not None:
            w("%-10s probe: %s" % ("", r.probe))
    w("")
    w("%-44s %8s" % ("fault injected", "count"))
    for k, n in sorted(r.faults.items()):
        w("%-44s %8d" % (k, n))
    for k, n in sorted(r.fault_fails.items()):
        w("%-44s %8d" % ("(not injected: %s)" % k, n))
    w("")
    w("%-44s %8s" % ("kill -9 of", "count"))
    names = Service.NAMES if h.a.mode == "chaos" else ("set",)
    for name in names:
        w("%-44s %8d" % (name, r.injected[next(
            f for f, n in Harness.KILLS.items() if n == name)]))
        for (which, why), n in sorted(r.kill_skips.items()):
            if which == name:
                w("  %-42s %8d" % ("skipped: " + why, n))
    w("")
    w("%-44s %8s" % ("restart of the set after", "count"))
    for k, n in sorted(r.restarts.items()):
        w("%-44s %8d" % (k, n))
    w("%-44s %8d" % ("total", sum(r.restarts.values())))
    w("")
    if r.converged_s is not None:
        w("cloud, pool and checkpoint agreed %.1f s after the faults stopped"
          % r.converged_s)
    kinds = collections.Counter(k for _, k, _ in r.violations)
    w("invariant violations: %d%s" % (len(r.violations), "" if not kinds
      else " (" + ", ".join("%s %d" % kv for kv in sorted(kinds.items()))
      + ")"))
    for t, k, m in r.violations[:50]:
        w("  %7.2f %s: %s" % (t, k, m.splitlines()[0][:400] if m else ""))
    return "\n".join(out)


Harness.report = lambda self: {
    "mode": self.a.mode, "duration_s": self.a.duration, "seed": self.a.seed,
    "operations": {"%s %s" % k: n for k, n in self.res.ops.items()},
    "latency": {op: {"p50": self.res.pct(op, 0.5),
                     "p99": self.res.pct(op, 0.99),
                     "max": max(self.res.lat[op])}
                for op in self.res.lat if self.res.lat[op]},
    "faults": dict(self.res.faults),
    "restarts": dict(self.res.restarts),
    "kills": {name: {"done": self.res.injected[f], "skipped": {
        why: n for (w, why), n in self.res.kill_skips.items() if w == name}}
        for f, name in Harness.KILLS.items()},
    "victims": self.res.victims,
    "prefixes": self.res.prefixes,
    "prefix_probe": self.res.probe,
    "pings": dict(self.res.pings),
    "converged_s": self.res.converged_s,
    "violations": [{"t": t, "kind": k, "what": m}
                   for t, k, m in self.res.violations],
    "text": report_text(self),
    "workdir": str(self.workdir)}


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", choices=("chaos", "restart"), default="chaos")
    ap.add_argument("--duration", type=float, default=90,
                    help="seconds of churn under faults")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--rate", type=float, default=4.0,
                    help="CNI operations started per second")
    ap.add_argument("--parallel", type=int, default=6,
                    help="CNI operations in flight at most")
    ap.add_argument("--max-pods", type=int, default=16,
                    help="the top of the live-pod wave")
    # A prefix holds 16 addresses: twice that, so that the pool grows to
    # two or three prefixes and gives one back as the wave falls.
    ap.add_argument("--prefix-max-pods", type=int, default=32,
                    help="the top of the wave with prefix delegation on")
    ap.add_argument("--wave-s", type=float, default=40,
                    help="period of the live-pod wave")
    ap.add_argument("--ip-limit", type=int, default=6)
    ap.add_argument("--eni-limit", type=int, default=4)
    ap.add_argument("--add-timeout", type=int, default=5)
    ap.add_argument("--reconcile-interval", type=int, default=5)
    ap.add_argument("--leak-grace", type=int, default=10)
    ap.add_argument("--restart-delay", type=float, default=0.5,
                    help="service manager's delay before a restart")
    ap.add_argument("--kill-min", type=float, default=2.0,
                    help="restart mode: least time between kills")
    ap.add_argument("--kill-max", type=float, default=5.0)
    ap.add_argument("--min-ack-share", type=float, default=0.1,
                    help="acknowledged ADDs wanted, as a share of "
                    "duration x rate (fewer: the run checked too little)")
    ap.add_argument("--prefixes", choices=("off", "on", "switch"),
                    default="switch",
                    help="prefix delegation: never, from the start, or "
                    "turned on at --prefix-at of the run")
    ap.add_argument("--prefix-at", type=float, default=1 / 3,
                    help="switch: when, as a share of --duration")
    # 0: warm_ip_target's 3 free addresses are the warm target, as in
    # the single-address phase.  A prefix's worth warm (1) keeps the
    # pool's 20 single addresses (4 ENIs of 5) needed, so that, turned on
    # with every slot held, it takes no prefix while --max-pods is 16.
    ap.add_argument("--warm-prefix-target", type=int, default=0,
                    help="pool.warm_prefix_target")
    ap.add_argument("--prefix-backoff", type=int, default=5,
                    help="pool.prefix_backoff_s")
    ap.add_argument("--prefix-freeze", type=int, default=10,
                    help="pool.prefix_freeze_s")
    ap.add_argument("--log-level", default="info")
    ap.add_argument("--builddir", default=os.environ.get("ENID_BUILDDIR") or
                    os.path.join(SRCDIR, "build"))
    ap.add_argument("--json", help="write the report here too")
    ap.add_argument("--keep", action="store_true",
                    help="keep the work directory (logs, checkpoint)")
    a = ap.parse_args(argv)
    if a.seed is None:
        a.seed = random.SystemRandom().randrange(1 << 31)
    return a


def main(argv):
    if os.geteuid() != 0:
        raise SystemExit("chaos: run as root (network namespaces)")
    a = parse_args(argv)
    h = Harness(a)
    report = None
    try:
        report = h.main()
    finally:
        if report is not None:
            print(report["text"])
            if a.json:
                with open(a.json, "w") as f:
                    json.dump(report, f, indent=1)
        if a.keep or report is None or report["violations"]:
            log("work directory kept: %s", h.workdir)
        else:
            shutil.rmtree(h.workdir, ignore_errors=True)
    return 1 if report["violations"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
