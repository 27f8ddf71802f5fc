"""vpcsim --fork-server (simlib/forkserver.py), as the integration tests
use it: a sim it forks behaves as one started fresh, and the server keeps
no zombie and goes at EOF."""
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import PY, VPCSIM, PREFIX, netns_list


class Server:
    def __init__(self):
        self.proc = subprocess.Popen([PY, VPCSIM, "--fork-server"],
                                     stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE)

    def ask(self, req):
        self.proc.stdin.write(json.dumps(req).encode() + b"\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def start(self, argv, log, **extra):
        """The pid of a new sim, and a pidfd on it."""
        a = self.ask(dict(argv=argv, log=log, **extra))
        assert "pid" in a, a
        return a["pid"], os.pidfd_open(a["pid"])

    def returncode(self, pid, pidfd, timeout=30):
        assert select.select([pidfd], [], [], timeout)[0], "still running"
        os.close(pidfd)
        deadline = time.monotonic() + 5
        while True:
            a = self.ask({"wait": pid})
            if "returncode" in a or time.monotonic() > deadline:
                return a.get("returncode")
            time.sleep(0.01)

    def close(self):
        self.proc.stdin.close()
        rc = self.proc.wait(10)
        self.proc.stdout.close()
        return rc


@pytest.fixture
def server():
    s = Server()
    yield s
    if s.proc.poll() is None:
        s.close()


@pytest.fixture
def scratch():
    d = tempfile.mkdtemp(prefix="vpcsim-fork-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def links(pid):
    d = "/proc/%d/fd" % pid
    out = {}
    for fd in os.listdir(d):
        try:
            out[int(fd)] = os.readlink(os.path.join(d, fd))
        except FileNotFoundError:
            pass
    return out


def test_forked_sim_runs_as_a_fresh_one(server, scratch):
    prefix = PREFIX + "f"
    state = os.path.join(scratch, "state")
    log = os.path.join(scratch, "sim.log")
    with open(log, "w") as f:
        f.write("left from before\n")
    pid, pidfd = server.start(["--nodes", "1", "--state", state, "--prefix",
                               prefix], log, cwd=scratch, env=dict(os.environ))
    try:
        fds = links(pid)
        assert fds[0] == "/dev/null" and fds[1] == fds[2] == log
        # Nothing of the server's but the process: not its request pipes.
        mine = set(links(server.proc.pid).values())
        assert not mine & {v for fd, v in fds.items() if fd > 2}
        assert os.readlink("/proc/%d/cwd" % pid) == scratch
        # The test's process group, as a Popen'd sim's.
        assert os.getpgid(pid) == os.getpgid(0)
        deadline = time.monotonic() + 20
        while not os.path.exists(os.path.join(state, "endpoints.json")):
            assert time.monotonic() < deadline, open(log).read()
            time.sleep(0.05)
        with open(os.path.join(state, "endpoints.json")) as f:
            assert json.load(f)["pid"] == pid
        assert server.ask({"wait": pid}) == {
            "error": "pid %d is running" % pid}
    finally:
        signal.pidfd_send_signal(pidfd, signal.SIGTERM)
    assert server.returncode(pid, pidfd) == 0
    text = open(log).read()
    assert text.startswith("vpcsim: ready: 1 node(s)")
    assert text.endswith("vpcsim: stopped, namespaces removed\n")
    assert not [n for n in netns_list() if n.startswith(prefix + "-")]
    # Collected once.
    assert "error" in server.ask({"wait": pid})


@pytest.mark.parametrize("argv", [["--bogus"], ["--help"],
                                  ["--nodes", "0", "--state", "/nonexistent"]])
def test_output_and_status_as_a_fresh_one(server, scratch, argv):
    log = os.path.join(scratch, "out.log")
    pid, pidfd = server.start(argv, log)
    rc = server.returncode(pid, pidfd)
    fresh = subprocess.run([PY, VPCSIM, *argv], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=30)
    assert rc == fresh.returncode
    assert open(log, "rb").read() == fresh.stdout


def test_own_session(server, scratch):
    # --cleanup of a prefix nobody uses: runs a moment, exits 0.
    pid, pidfd = server.start(["--cleanup", "--prefix", PREFIX + "none"],
                              os.path.join(scratch, "log"), setsid=True)
    try:
        assert os.getsid(pid) == pid
    except ProcessLookupError:
        pass                        # done already
    assert server.returncode(pid, pidfd) == 0


def test_bad_requests_are_answered(server, scratch):
    a = server.ask({"argv": ["--help"], "log": os.path.join(scratch, "l"),
                    "cwd": "/nonexistent"})
    assert "/nonexistent" in a["error"]
    for req in ([1], {"argv": "--help", "log": "x"}, {"argv": []},
                {"wait": 1}):
        assert "error" in server.ask(req), req
    server.proc.stdin.write(b"not json\n")
    server.proc.stdin.flush()
    assert "error" in json.loads(server.proc.stdout.readline())


def test_children_reaped_at_the_next_request(server, scratch):
    pids = [server.start(["--bogus"], os.path.join(scratch, "l%d" % i))
            for i in range(3)]
    for pid, pidfd in pids:
        assert select.select([pidfd], [], [], 30)[0]
        os.close(pidfd)
    # Exited, not reaped between requests (the client may not hold its
    # pidfd yet), but at the next one, any one.
    assert "error" in server.ask({"wait": 1})
    for pid, _ in pids:
        assert not os.path.exists("/proc/%d" % pid)
        assert server.ask({"wait": pid}) == {"pid": pid, "returncode": 2}
    assert server.close() == 0
