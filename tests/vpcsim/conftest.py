"""Fixtures for the vpcsim tests: one simulator for the whole session, plus
boto3 agents running inside node namespaces."""
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import pytest

sys.dont_write_bytecode = True

HERE = os.path.dirname(os.path.abspath(__file__))
VPCSIM = os.path.join(HERE, "vpcsim")
PY = "/usr/bin/python3"
PREFIX = "vst%d" % (os.getpid() % 100000)

# Delays used by the session's simulator (milliseconds).
LINK_DELAY_MS = 700
ATTACH_DELAY_MS = 50
DETACH_DELAY_MS = 150


def netns_list():
    try:
        return sorted(os.listdir("/run/netns"))
    except FileNotFoundError:
        return []


class Sim:
    def __init__(self, proc, state_dir, endpoints, logpath):
        self.proc = proc
        self.state_dir = state_dir
        self.ep = endpoints
        self.logpath = logpath
        self.prefix = PREFIX
        self.agents = {}

    # ---- control API
    def control(self, method, path, body=None, raw=None):
        data = raw if raw is not None else (json.dumps(body).encode()
                                            if body is not None else None)
        req = urllib.request.Request(self.ep["control"] + path, data=data,
                                     method=method)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def state(self):
        st, out = self.control("GET", "/state")
        assert st == 200
        return out

    def eni_state(self, eni_id):
        for e in self.state()["enis"]:
            if e["id"] == eni_id:
                return e
        return None

    def wait_for(self, pred, timeout=10.0, step=0.05, what="condition"):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            v = pred()
            if v:
                return v
            time.sleep(step)
        raise AssertionError("timed out after %.1fs waiting for %s" % (timeout, what))

    def wait_dataplane(self, timeout=10.0):
        self.wait_for(lambda: self.state()["dataplane"]["pending"] == 0, timeout,
                      what="data plane to settle")

    # ---- namespaces
    def node(self, i):
        return self.ep["nodes"][i]

    def nsexec(self, ns, *args, check=True, timeout=15):
        p = subprocess.run(["ip", "netns", "exec", ns] + list(args),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout)
        if check and p.returncode != 0:
            raise AssertionError("%s in %s failed: %s" % (args, ns, p.stderr))
        return p

    def agent(self, i=0):
        if i not in self.agents:
            self.agents[i] = Agent(self.node(i)["netns"], self.ep)
        return self.agents[i]


class Agent:
    """A nodeagent.py process inside a node namespace (JSON lines)."""

    def __init__(self, ns, ep, **endpoints):
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", ns, PY, os.path.join(HERE, "nodeagent.py")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        # endpoints: ec2_host and imds, for a node that has IPv6 only.
        out = self.req(dict({"op": "setup", "region": ep["region"],
                             "static": ep["static_credentials"]}, **endpoints))
        assert out.get("has_token"), out

    def req(self, r, timeout=30):
        self.proc.stdin.write(json.dumps(r) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert ready, "node agent did not answer %r within %ss" % (r.get("op"), timeout)
        line = self.proc.stdout.readline()
        assert line, "node agent exited"
        out = json.loads(line)
        assert "exception" not in out, out.get("trace", out)
        return out

    def call(self, operation, client="imds", **params):
        return self.req({"op": "call", "operation": operation, "client": client,
                         "params": params})

    def ok(self, operation, client="imds", **params):
        out = self.call(operation, client, **params)
        assert "result" in out, "%s failed: %r" % (operation, out)
        return out["result"]

    def err(self, operation, client="imds", **params):
        out = self.call(operation, client, **params)
        assert "error" in out, "%s unexpectedly succeeded: %r" % (operation, out)
        return out["error"]

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(5)
        except Exception:
            self.proc.kill()
            self.proc.wait(5)


def launch(prefix, args):
    """Start a simulator with namespace prefix `prefix` and wait for it."""
    state = tempfile.mkdtemp(prefix="vpcsim-test-")
    logpath = os.path.join(state, "vpcsim.log")
    log = open(logpath, "w")
    proc = subprocess.Popen([VPCSIM, "--state", state, "--prefix", prefix] + args,
                            stdout=log, stderr=subprocess.STDOUT)
    log.close()
    path = os.path.join(state, "endpoints.json")
    deadline = time.monotonic() + 20
    while not os.path.exists(path):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait(5)
            raise AssertionError("vpcsim did not start:\n" + open(logpath).read())
        time.sleep(0.05)
    with open(path) as f:
        ep = json.load(f)
    s = Sim(proc, state, ep, logpath)
    s.prefix = prefix
    return s


def shut_down(s):
    """Stop it and check that it left nothing behind."""
    for a in s.agents.values():
        a.close()
    s.proc.send_signal(signal.SIGTERM)
    try:
        rc = s.proc.wait(20)
    except subprocess.TimeoutExpired:
        s.proc.kill()
        s.proc.wait(5)
        rc = "killed"
    left = [n for n in netns_list() if n.startswith(s.prefix + "-")]
    assert rc == 0, "vpcsim exited %s:\n%s" % (rc, open(s.logpath).read())
    assert not left, "namespaces left behind: %s" % left
    assert not os.path.exists(os.path.join(s.state_dir, "endpoints.json")), \
        "endpoints.json left behind"
    out = open(s.logpath).read()
    assert "Traceback" not in out, out
    shutil.rmtree(s.state_dir, ignore_errors=True)      # kept when something failed


@pytest.fixture(scope="session")
def sim():
    if os.geteuid() != 0:
        pytest.skip("vpcsim tests need root (network namespaces)")
    s = launch(PREFIX, [
        "--nodes", "2", "--rate-scale", "1", "--link-delay-ms", str(LINK_DELAY_MS),
        "--attach-delay-ms", str(ATTACH_DELAY_MS),
        "--detach-delay-ms", str(DETACH_DELAY_MS), "--cred-expire-s", "900"])
    try:
        yield s
    finally:
        shut_down(s)


@pytest.fixture(scope="session")
def agent(sim):
    return sim.agent(0)


@pytest.fixture
def secondary(sim, agent):
    """A secondary address of node 0's primary ENI, assigned by the cloud
    (so the VPC routes it to the node) and on the node's eth0, which has
    no public address mapped to it."""
    node = sim.node(0)
    r = agent.ok("AssignPrivateIpAddresses", NetworkInterfaceId=node["primary_eni"],
                 SecondaryPrivateIpAddressCount=1)
    addr = r["AssignedPrivateIpAddresses"][0]["PrivateIpAddress"]
    sim.wait_dataplane()
    sim.nsexec(node["netns"], "ip", "addr", "add", addr + "/32", "dev", "eth0")
    yield addr
    sim.nsexec(node["netns"], "ip", "addr", "del", addr + "/32", "dev", "eth0",
               check=False)
    agent.ok("UnassignPrivateIpAddresses", NetworkInterfaceId=node["primary_eni"],
             PrivateIpAddresses=[addr])
    sim.wait_dataplane()
