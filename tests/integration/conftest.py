"""Shared fixtures for enid's integration tests (run as root, real netns).

ENID_BUILDDIR names the build tree (default: the source tree).  Helpers are
exec'd by absolute path from a directory of links to the built binaries,
as an installed enid would exec them from its libexec directory.
"""
import atexit
import codecs
import json
import contextlib
import os
import pathlib
import pwd
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid

import pytest

# LeakSanitizer's exit-time scan stops the world with ptrace, which no
# sandboxed enid process may call: its seccomp filter ends the process
# with SIGSYS.  tests/run-all turns it off; so does a run by hand.
os.environ.setdefault("ASAN_OPTIONS", "detect_leaks=0")

SRCDIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# ENID_BUILDDIR, else build/ or build-san/ (where tests/run-all builds),
# else in-tree.
BUILDDIR = os.environ.get("ENID_BUILDDIR") or next(
    (d for d in (os.path.join(SRCDIR, "build"),
                 os.path.join(SRCDIR, "build-san"), SRCDIR)
     if os.access(os.path.join(d, "broker", "enid"), os.X_OK)), SRCDIR)



def _sanitized():
    """True if BUILDDIR was configured with --enable-sanitizers."""
    try:
        with open(os.path.join(BUILDDIR, "Makefile")) as f:
            return any(line.startswith("SAN_CFLAGS = -fsanitize")
                       for line in f)
    except OSError:
        return False


# The broker's long timers (an unassign's hold, a refused unassign's rest
# and backoff, a skipped confirmation's retry) are divided by
# ENID_TEST_TIME_SCALE in a sanitizer build (common/testhook.h); a release
# build ignores it.  Against a sanitizer build the tests run them 4 times
# shorter unless the environment names another scale (1: as written);
# against a plain one, as written.  Every enid the tests start inherits
# the variable, and a test that waits for one of those timers asks
# scaled() how long it is.
if _sanitized():
    TIME_SCALE = int(os.environ.get("ENID_TEST_TIME_SCALE") or 4)
    os.environ["ENID_TEST_TIME_SCALE"] = str(TIME_SCALE)
else:
    TIME_SCALE = 1
    os.environ.pop("ENID_TEST_TIME_SCALE", None)


def scaled(seconds):
    """How long one of the broker's scaled timers of `seconds` (as
    written in broker/engine.h) runs in this test run."""
    return seconds / TIME_SCALE


def scaled_s(seconds):
    """That length in whole seconds, as the broker's log lines give it
    (testhook_ms divides the milliseconds, the log the seconds)."""
    return int(seconds * 1000) // TIME_SCALE // 1000


def pytest_report_header(config):
    return "enid build: %s (%s); the broker's long timers: %s" % (
        BUILDDIR, "ASan+UBSan" if _sanitized() else "plain",
        "as written" if TIME_SCALE == 1 else
        "%d times shorter" % TIME_SCALE)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "long_wait: takes minutes that no time scale shortens "
        "(hundreds of pods), and not on a sanitizer build; only "
        "'tests/run-all --full' runs it, in its plain pass")
    config.addinivalue_line(
        "markers", "full: builds with tools beyond the rest (podman, "
        "mmdebstrap); only 'tests/run-all --full' runs it, in its plain "
        "pass")


# The files whose tests take longest, longest first (seconds on a quiet
# 2-CPU machine, ASan build, 4 workers).  pytest-xdist's --dist loadfile
# hands files to its workers in collection order: these go first, so
# that no worker starts a two-minute file while the others run out of
# work.  A file not listed keeps its place after them.
LONGEST_FILES = (
    "test_pool.py",                 # 148
    "test_pool_operate.py",         # 110
    "test_pool_hostile.py",         # 103
    "test_pool_field.py",           # 95
    "test_hostile_cloud.py",        # 88
    "test_prefixes.py",             # 64
    "test_cni_socket.py",           # 63
    "test_cloudd.py",               # 62
    "test_chaos_regressions.py",    # 60
    "test_reconcile_routes.py",     # 40
    "test_cni_hostile.py",          # 38
)


def pytest_collection_modifyitems(session, config, items):
    """The longest files first; each file's tests keep their order."""
    rank = {name: i for i, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda it: rank.get(it.path.name, len(LONGEST_FILES)))


# The unprivileged users the tests start things as (the daemons' user,
# nobody) must reach what they run: the helpers the broker execs after
# its drop, the broker a test starts without root, a script a test serves
# as another user.  A clone under a directory only root may enter (/root,
# a `mktemp -d`) is out of their reach; then each such file is copied
# once per test process into a directory of the temporary one that they
# can read, as an installed enid execs its helpers from libexec.
# tests/run-all checks first that the temporary directory is in reach.
_reach = {}
_stage = {"dir": None, "files": {}, "lock": threading.Lock()}


def unprivileged_reaches(path):
    """True if a user with no groups of its own (nobody: 65534) can read
    path: asked of the kernel, as that user, once per directory."""
    key = os.path.dirname(os.path.abspath(path))
    if key not in _reach:
        _reach[key] = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
             "test", "-r", path], check=False).returncode == 0
    return _reach[key]


def _stage_dir():
    if _stage["dir"] is None:
        d = tempfile.mkdtemp(prefix="enid-stage-")
        os.chmod(d, 0o755)
        atexit.register(shutil.rmtree, d, True)
        _stage["dir"] = d
    return _stage["dir"]


def for_unprivileged(path):
    """path itself if an unprivileged user can read it, else a copy one
    can (mode kept) in this test process's stage directory."""
    path = os.path.abspath(path)
    if unprivileged_reaches(path):
        return path
    with _stage["lock"]:
        if path not in _stage["files"]:
            _stage["files"][path] = _stage_copy(path)
    return _stage["files"][path]


def _stage_copy(path):
    dest = os.path.join(_stage_dir(), os.path.relpath(path, "/"))
    os.makedirs(os.path.dirname(dest), mode=0o755, exist_ok=True)
    for d in _parents(os.path.dirname(dest), _stage_dir()):
        os.chmod(d, 0o755)
    # Written by cp, not by this process: a child another thread forks
    # meanwhile would inherit a descriptor open for writing on it, and
    # executing it would fail with ETXTBSY until that child's exec.
    subprocess.run(["cp", "--preserve=mode", path, dest + ".new"],
                   check=True)
    os.rename(dest + ".new", dest)
    if not unprivileged_reaches(dest):
        pytest.exit(f"an unprivileged user cannot read {dest}: "
                    f"make {tempfile.gettempdir()} traversable "
                    "(chmod o+x) or run with TMPDIR=/tmp", 2)
    return dest


def _parents(d, top):
    while d != top and d.startswith(top):
        yield d
        d = os.path.dirname(d)


def built(rel):
    """A built program, where an unprivileged user can run it too."""
    path = os.path.join(BUILDDIR, rel)
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path} is not built; run make first")
    return for_unprivileged(path)


def libcni_version(conflist, newest):
    """The version a runtime's libcni takes from a conflist, as libcni
    does (libcni/conf.go): before 1.2 (newest "1.0.0") cniVersion alone;
    from 1.2 (newest "1.1.0") the newest of cniVersions and cniVersion it
    implements."""
    def key(v):
        return tuple(int(x) for x in v.split("."))
    if key(newest) < key("1.1.0") or "cniVersions" not in conflist:
        return conflist["cniVersion"]
    known = [v for v in conflist["cniVersions"] + [conflist["cniVersion"]]
             if key(v) <= key(newest)]
    return max(known, key=key)


@pytest.fixture(scope="session", autouse=True)
def need_root():
    if os.geteuid() != 0:
        pytest.skip("integration tests need root (network namespaces)")


@pytest.fixture(scope="session")
def enid_user():
    """The unprivileged user the daemons drop to; created if missing."""
    try:
        pwd.getpwnam("enid")
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home",
                        "--shell", "/usr/sbin/nologin", "enid"], check=True)
    return "enid"


@pytest.fixture
def netns():
    """A throwaway network namespace, removed afterwards."""
    name = "enid-t-" + uuid.uuid4().hex[:8]
    subprocess.run(["ip", "netns", "add", name], check=True)
    subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)
    try:
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)


@pytest.fixture
def workdir():
    """A scratch directory the unprivileged daemon user can traverse (the
    pytest tmp_path lives under a root-only 0700 directory)."""
    d = tempfile.mkdtemp(prefix="enid-it-")
    os.chmod(d, 0o755)
    try:
        yield pathlib.Path(d)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def link_helpers(top):
    """top/helpers, holding enid-netd and enid-cloudd by absolute path."""
    d = top / "helpers"
    d.mkdir()
    for rel in ("netd/enid-netd", "cloudd/enid-cloudd"):
        os.symlink(built(rel), d / os.path.basename(rel))
    return d


@pytest.fixture
def helper_dir(workdir):
    """A directory holding enid-netd and enid-cloudd by absolute path."""
    return link_helpers(workdir)


@contextlib.contextmanager
def module_dir(prefix):
    """A module's scratch directory, as workdir's, with its helpers/
    (link_helpers); removed at the end."""
    d = pathlib.Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(d, 0o755)
    link_helpers(d)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def write_config(workdir, user, **extra):
    conf = {
        "user": user,
        "runtime_dir": str(workdir / "run"),
        "state_dir": str(workdir / "state"),
        "log_level": "debug",
    }
    conf.update(extra)
    path = workdir / "enid.conf"
    path.write_text(json.dumps(conf, indent=2))
    return path


class Enid:
    """enid -d running inside a namespace, its log captured to a file;
    wrap is a command that executes it (setpriv for a start without
    root), so that the pid is still enid's."""

    def __init__(self, ns, conf, helpers, logpath, env=None, wrap=()):
        self.logpath = logpath
        self.conf = conf
        self.log = open(logpath, "w")
        # The log only grows: text() reads what is new since its last
        # call (tests poll it every 20 ms).
        self._read = 0
        self._text = ""
        self._decode = codecs.getincrementaldecoder("utf-8")("replace")
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", ns, *wrap, built("broker/enid"), "-d",
             "-f", str(conf), "-L", str(helpers)],
            stdout=self.log, stderr=subprocess.STDOUT,
            env=env if env is not None else os.environ.copy())

    @property
    def pid(self):
        return self.proc.pid

    def text(self):
        with open(self.logpath, "rb") as f:
            f.seek(self._read)
            more = f.read()
        if more:
            self._read += len(more)
            self._text += self._decode.decode(more)
        return self._text

    def wait_log(self, needle, timeout=10.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if needle in self.text():
                return True
            if self.proc.poll() is not None:
                return needle in self.text()
            time.sleep(0.02)
        return False

    def children(self):
        """{comm: pid} of the broker's direct children."""
        out = {}
        path = f"/proc/{self.pid}/task/{self.pid}/children"
        try:
            with open(path) as f:
                pids = f.read().split()
        except FileNotFoundError:
            return out
        for p in pids:
            try:
                with open(f"/proc/{p}/comm") as f:
                    out[f.read().strip()] = int(p)
            except FileNotFoundError:
                pass
        return out

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()


@pytest.fixture
def start_enid(netns, helper_dir, workdir, enid_user):
    """Start enid in a namespace: a throwaway one unless ns is given (a sim
    node's)."""
    started = []

    def start(conf=None, helpers=None, env=None, ns=None):
        conf = conf or write_config(workdir, enid_user)
        e = Enid(ns or netns, conf, helpers or helper_dir,
                 workdir / f"enid-{len(started)}.log", env=env)
        started.append(e)
        return e

    yield start
    for e in started:
        e.stop()


def proc_status(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            fields[k] = v.strip()
    return fields


VPCSIM = os.path.join(SRCDIR, "tests", "vpcsim", "vpcsim")

# A fresh vpcsim spends about 0.15 s of CPU importing its modules before
# it does anything, and a run of the integration tests starts a few
# hundred on two busy cores.  So each test process starts one fork server
# (vpcsim --fork-server, tests/vpcsim/simlib/forkserver.py) the first
# time it needs a sim, and each sim is a fork of it that runs as a fresh
# `python3 vpcsim ARGS` would: same arguments, cwd, environment, process
# group (or a session of its own), log, signals.  ENID_SIM_FORK_SERVER=0
# starts each sim with Popen instead, as before.
#
# A forked sim is the server's child, not the test process's: what stands
# for its Popen (ForkedSim) waits for it and signals it through a pidfd,
# which names that process and never another one that reuses its pid.


def _startup_env(env):
    """The variables a Python interpreter reads as it starts: a sim whose
    environment differs from the server's in one of them could not be a
    fork of the server, and is started with Popen."""
    return {k: v for k, v in env.items()
            if k.startswith(("PYTHON", "LC_")) or k == "LANG"}


class _ForkServer:
    """This test process's vpcsim --fork-server, on a pair of pipes: one
    JSON request a line in, one answer a line out."""

    def __init__(self):
        self.owner = os.getpid()
        self.env = _startup_env(os.environ)
        self.lock = threading.Lock()
        # Its stderr is empty unless it failed; then it is the message.
        self.errors = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            ["/usr/bin/python3", VPCSIM, "--fork-server"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors)

    def _ask(self, req):
        """The answer to req; the caller holds the lock."""
        try:
            self.proc.stdin.write(json.dumps(req).encode() + b"\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except BrokenPipeError:
            line = b""
        if not line:
            self.errors.seek(0)
            raise RuntimeError("the vpcsim fork server is gone (%s): %s" % (
                self.proc.poll(), self.errors.read().decode(errors="replace")))
        return json.loads(line)

    def start(self, argv, log, new_session):
        """A ForkedSim for a new sim: vpcsim argv, its output to log."""
        with self.lock:
            answer = self._ask({"argv": argv, "log": str(log),
                                "cwd": os.getcwd(), "env": dict(os.environ),
                                "setsid": new_session})
            if "error" in answer:
                raise RuntimeError("vpcsim fork server: %s" % answer["error"])
            # Before the next request: the server reaps no child until
            # then, so the pid is still this sim's (running, or a zombie).
            return ForkedSim(self, answer["pid"], argv)

    def returncode(self, pid):
        """The exit status of a sim that has exited (its pidfd said so)."""
        for _ in range(100):
            with self.lock:
                answer = self._ask({"wait": pid})
            if "returncode" in answer:
                return answer["returncode"]
            # Not reaped yet: the pidfd may tell an exit a moment before
            # waitpid() does.
            time.sleep(0.01)
        raise RuntimeError("vpcsim fork server: %s" % answer["error"])

    def close(self):
        """At exit: EOF ends the server."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self.proc.stdout.close()
        self.errors.close()


_fork_server = {"server": None, "lock": threading.Lock()}


def _the_fork_server():
    """This process's fork server, started the first time.  A process
    forked from a test process starts its own: the pipes are not its."""
    with _fork_server["lock"]:
        s = _fork_server["server"]
        if s is None or s.owner != os.getpid() or s.proc.poll() is not None:
            s = _ForkServer()
            atexit.register(s.close)
            _fork_server["server"] = s
        return s


class ForkedSim:
    """Sim.proc for a sim the fork server started: what the tests use of
    a Popen (pid, args, returncode, poll, wait, send_signal, terminate,
    kill), with the same meanings, on a pidfd."""

    def __init__(self, server, pid, args):
        self.server = server
        self.pid = pid
        self.args = args
        self.returncode = None
        self.pidfd = os.pidfd_open(pid)

    def _exited(self, timeout):
        """True once the sim has exited; waits up to timeout seconds (None:
        for ever)."""
        p = select.poll()
        p.register(self.pidfd, select.POLLIN)
        return bool(p.poll(None if timeout is None else int(timeout * 1000)))

    def _collect(self):
        try:
            self.returncode = self.server.returncode(self.pid)
        except RuntimeError:
            # The server died, and the sim was reparented: its status is
            # lost.  It has exited all the same; say so.
            self.returncode = 255
        os.close(self.pidfd)
        self.pidfd = None

    def poll(self):
        if self.returncode is None and self._exited(0):
            self._collect()
        return self.returncode

    def wait(self, timeout=None):
        if self.returncode is None:
            if not self._exited(timeout):
                raise subprocess.TimeoutExpired(self.args, timeout)
            self._collect()
        return self.returncode

    def send_signal(self, sig):
        # As Popen: a sim already waited for is not signalled.
        if self.poll() is None:
            try:
                signal.pidfd_send_signal(self.pidfd, sig)
            except ProcessLookupError:
                pass

    def terminate(self):
        self.send_signal(signal.SIGTERM)

    def kill(self):
        self.send_signal(signal.SIGKILL)

    def __del__(self):
        if getattr(self, "pidfd", None) is not None:
            try:
                os.close(self.pidfd)
            except OSError:
                pass


def start_vpcsim(argv, log, new_session=False):
    """tests/vpcsim/vpcsim with arguments argv, its stdout and stderr to
    the file log (truncated), in the test process's process group (or a
    session of its own): a Popen, or a ForkedSim standing for one."""
    if os.environ.get("ENID_SIM_FORK_SERVER", "1") != "0":
        server = _the_fork_server()
        if server.env == _startup_env(os.environ):
            return server.start(list(argv), log, new_session)
    with open(log, "w") as f:
        return subprocess.Popen(["/usr/bin/python3", VPCSIM, *argv],
                                stdout=f, stderr=subprocess.STDOUT,
                                start_new_session=new_session)


class Sim:
    """tests/vpcsim running in the foreground; stopped with SIGTERM."""

    def __init__(self, workdir, nodes=1, prefix=None, args=()):
        # Namespaces of our own, so a demo or another run can't collide.
        prefix = prefix or "enidit%d" % os.getpid()
        self.dir = workdir / "sim"
        self.logpath = workdir / "vpcsim.log"
        self.proc = start_vpcsim(
            ["--nodes", str(nodes), "--state", str(self.dir),
             "--prefix", prefix, *args], self.logpath)
        path = self.dir / "endpoints.json"
        end = time.monotonic() + 30
        while not path.exists():
            if self.proc.poll() is not None or time.monotonic() > end:
                self.stop()
                pytest.fail("vpcsim did not start: see %s" % self.logpath)
            time.sleep(0.05)
        self.ep = json.loads(path.read_text())

    def control(self, method, path, body=None):
        import urllib.request
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.ep["control"] + path, data=data,
                                     method=method)
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read() or b"null")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


@pytest.fixture(scope="module")
def sim_workdir():
    d = tempfile.mkdtemp(prefix="enid-sim-")
    os.chmod(d, 0o755)
    try:
        yield pathlib.Path(d)
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def sim(sim_workdir):
    s = Sim(sim_workdir)
    try:
        yield s
    finally:
        s.stop()


def sim_config(workdir, user, **extra):
    """A config for enid inside a sim node: the real IMDS default, only
    the EC2 endpoint and plain http overridden."""
    cloud = {"ec2_endpoint": "http://198.18.0.1/", "allow_http": True}
    cloud.update(extra.pop("cloud", {}))
    return write_config(workdir, user, cloud=cloud, **extra)
