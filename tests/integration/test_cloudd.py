"""enid-cloudd against the simulated VPC, over real HTTP in the node netns.

cloudd_drive plays the broker: JSON intents in, JSON answers out.  Every
driver runs with ENID_SECCOMP_DEBUG=1, so a system call outside cloudd's
allow list ends the run with its name on stderr.
"""
import contextlib
import ipaddress
import json
import os
import signal
import subprocess
import shutil
import tempfile
import threading
import time
import urllib.request

import pytest

from conftest import BUILDDIR as BUILD  # ENID_BUILDDIR, else build/
from conftest import start_vpcsim
CLOUDD = os.path.join(BUILD, "cloudd", "enid-cloudd")
DRIVE = os.path.join(BUILD, "tests", "integration", "cloudd_drive")
# Namespaces of our own, so a demo or another run's sim can't collide.
PREFIX = "enidcd%d" % os.getpid()
NETNS = PREFIX + "-node-0"

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="needs root for network namespaces")


# ------------------------------------------------------------------ fixtures

@contextlib.contextmanager
def run_sim(prefix, *args):
    """A simulated VPC of two nodes in namespaces named for prefix, for the
    block: its endpoints.json, and "dir" its state directory."""
    d = tempfile.mkdtemp(prefix="cloudd-it-")
    proc = start_vpcsim(["--nodes", "2", "--state", d, "--rate-scale", "10",
                         "--prefix", prefix, *args],
                        os.path.join(d, "vpcsim.log"), new_session=True)
    ep = os.path.join(d, "endpoints.json")
    try:
        for _ in range(300):
            if os.path.exists(ep) or proc.poll() is not None:
                break
            time.sleep(0.1)
        if not os.path.exists(ep):
            pytest.fail("vpcsim did not start: see %s/vpcsim.log" % d)
        with open(ep) as f:
            info = json.load(f)
        info["dir"] = d
        yield info
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@pytest.fixture(scope="module")
def sim():
    with run_sim(PREFIX) as info:
        yield info


@contextlib.contextmanager
def node_server(sim, name, source, *args):
    """Run a stand-in server (Python source) inside the node namespace for
    the duration of the block; its first argument is usually the port."""
    path = os.path.join(sim["dir"], name)
    with open(path, "w") as f:
        f.write(source)
    srv = subprocess.Popen(["ip", "netns", "exec", NETNS, "/usr/bin/python3",
                            path, *map(str, args)], start_new_session=True)
    try:
        time.sleep(0.5)
        yield srv
    finally:
        srv.send_signal(signal.SIGTERM)
        srv.wait(10)


def control(sim, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(sim["control"] + path, data=data,
                                 method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read() or b"null")


def write_conf(sim, name, **cloud):
    c = {"ec2_endpoint": sim["ec2"], "allow_http": True, "timeout_ms": 5000,
         "rate": {"mutating": {"capacity": 10, "refill_per_s": 5},
                  "describe": {"capacity": 20, "refill_per_s": 10}}}
    c.update(cloud)
    path = os.path.join(sim["dir"], name)
    with open(path, "w") as f:
        json.dump({"cluster_name": "it", "cloud": c}, f)
    return path


class Drive:
    """One enid-cloudd behind cloudd_drive; answers collected by id."""

    def __init__(self, conf, log, netns=NETNS):
        env = dict(os.environ, ENID_SECCOMP_DEBUG="1")
        # LeakSanitizer's exit-time scan needs calls seccomp refuses.
        env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
        for k in list(env):
            if k.startswith("AWS_"):
                del env[k]
        self.log = log
        self.errf = open(log, "w")
        self.p = subprocess.Popen(
            ["ip", "netns", "exec", netns, DRIVE, "-c", CLOUDD, "-f", conf,
             "-v", "-v", "-w", "90"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errf,
            text=True, bufsize=1, env=env)
        self.cv = threading.Condition()
        self.answers = {}
        self.events = []
        self.next_id = 1
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()
        with self.cv:
            self.cv.wait_for(lambda: self.events, timeout=15)
        assert self.events and self.events[0].get("event") == "ready", \
            self.stderr()

    def _read(self):
        for line in self.p.stdout:
            msg = json.loads(line)
            with self.cv:
                if "event" in msg:
                    self.events.append(msg)
                else:
                    self.answers[msg["id"]] = msg
                self.cv.notify_all()

    def stderr(self):
        if not self.errf.closed:
            self.errf.flush()
        with open(self.log) as f:
            return f.read()[-4000:]

    def send(self, op, **kw):
        with self.cv:
            i = self.next_id
            self.next_id += 1
        kw.update(id=i, op=op)
        self.p.stdin.write(json.dumps(kw) + "\n")
        self.p.stdin.flush()
        return i

    def wait(self, i, timeout=30):
        with self.cv:
            self.cv.wait_for(lambda: i in self.answers, timeout=timeout)
            assert i in self.answers, "no answer to %d in %ss\n%s" % (
                i, timeout, self.stderr())
            return self.answers[i]

    def call(self, op, timeout=30, **kw):
        return self.wait(self.send(op, **kw), timeout)

    def ok(self, op, timeout=30, **kw):
        a = self.call(op, timeout, **kw)
        assert a["outcome"] == "ok", (a, self.stderr())
        return a

    def close(self):
        """End input; cloudd must exit cleanly (never crash)."""
        self.p.stdin.close()
        self.p.wait(120)
        self.t.join(10)
        self.errf.close()
        assert self.events[-1] == {"event": "exit", "status": 0}, \
            (self.events, self.stderr())
        assert "seccomp: refused" not in self.stderr()


@pytest.fixture(scope="module")
def drive(sim):
    d = Drive(write_conf(sim, "main.conf"), os.path.join(sim["dir"],
                                                         "main.log"))
    yield d
    d.close()


def new_eni(sim, drive, device_index):
    """Create and attach an ENI; wait until attached.  Returns (eni, att)."""
    sub = sim["subnets"][0]["id"]
    sg = sim["security_groups"][0]["id"]
    a = drive.ok("create-eni", subnet=sub, sgs=[sg], secondary=1,
                 token="tok-%d-%f" % (device_index, time.time()),
                 tags={"enid.io/cluster": "it", "enid.io/node": "n0"})
    eni = a["eni"]["eni_id"]
    att = drive.ok("attach", eni=eni, device_index=device_index)
    for _ in range(50):
        d = drive.ok("describe-enis")
        mine = [e for e in d["entries"] if e["eni_id"] == eni]
        if mine and mine[0]["attach_status"] == "in-use":
            return eni, att["attachment_id"]
        time.sleep(0.1)
    pytest.fail("%s never attached" % eni)


def sim_eni(sim, eni):
    for e in control(sim, "GET", "/state")["enis"]:
        if e["id"] == eni:
            return e
    return None


# ------------------------------------------------------------------ 1

def test_every_intent(sim, drive):
    node = sim["nodes"][0]
    di = drive.ok("describe-instance")
    assert di["instance_id"] == node["instance_id"]
    assert di["primary_mac"] == node["primary_mac"]
    assert di["primary_ip"] == node["primary_ip"]
    assert di["primary_eni"] == node["primary_eni"]
    assert di["subnet_id"] == node["subnet_id"]
    assert di["vpc_id"] == sim["vpc_id"]
    assert di["cidrs"] == [sim["vpc_cidr"]]
    assert di["region"] == sim["region"]
    assert di["max_enis"] == sim["limits"]["enis"]
    assert di["ips_per_eni"] == sim["limits"]["ips_per_eni"]
    assert di["sgs"] and all(s.startswith("sg-") for s in di["sgs"])

    ds = drive.ok("describe-subnets")
    assert sorted(e["subnet_id"] for e in ds["entries"]) == \
        sorted(s["id"] for s in sim["subnets"])
    assert ds["count"] == len(sim["subnets"])
    one = drive.ok("describe-subnets", ids=[sim["subnets"][1]["id"]])
    assert [e["cidr"] for e in one["entries"]] == [sim["subnets"][1]["cidr"]]

    eni, att = new_eni(sim, drive, 1)
    s = sim_eni(sim, eni)
    assert s["tags"]["enid.io/cluster"] == "it"      # tagged at creation

    drive.ok("set-dot", eni=eni, attachment=att, value=1)
    assert sim_eni(sim, eni)["delete_on_termination"] is True

    got = drive.ok("assign-ips", eni=eni, count=2)
    assert len(got["addrs"]) == 2
    drive.ok("unassign-ips", eni=eni, addrs=got["addrs"])
    back = drive.ok("assign-ips", eni=eni, addrs=got["addrs"])
    assert sorted(back["addrs"]) == sorted(got["addrs"])
    assert set(got["addrs"]) <= set(sim_eni(sim, eni)["addresses"])

    mine = drive.ok("describe-enis")
    ids = [e["eni_id"] for e in mine["entries"]]
    assert eni in ids and node["primary_eni"] in ids
    tagged = drive.ok("describe-enis", tags={"enid.io/cluster": "it"})
    assert eni in [e["eni_id"] for e in tagged["entries"]]

    # Deleting an attached ENI is refused by the cloud: in-use.
    assert drive.call("delete", eni=eni)["outcome"] == "in-use"
    drive.ok("detach", eni=eni, attachment=att)
    for _ in range(100):
        av = drive.ok("describe-enis", tags={"enid.io/node": "n0"},
                      status="available")
        if eni in [e["eni_id"] for e in av["entries"]]:
            break
        time.sleep(0.1)
    else:
        pytest.fail("%s never became available" % eni)
    drive.ok("delete", eni=eni)
    gone = drive.call("delete", eni=eni)       # already gone: still ok
    assert gone["outcome"] == "ok"
    assert gone["code"] == "InvalidNetworkInterfaceID.NotFound"
    assert sim_eni(sim, eni) is None
    # A request cloudd won't send is refused without a call.
    bad = drive.call("attach", eni="eni-../../x", device_index=2)
    assert bad["outcome"] == "fatal" and "invalid ENI id" in bad["message"]


def test_paging(sim):
    """describe-enis pages (100 per page) to completion."""
    conf = write_conf(sim, "paging.conf", rate={
        "mutating": {"capacity": 200, "refill_per_s": 40},
        "describe": {"capacity": 20, "refill_per_s": 10}})
    drive = Drive(conf, os.path.join(sim["dir"], "paging.log"))
    try:
        sub = sim["subnets"][1]["id"]
        sg = sim["security_groups"][0]["id"]
        ids = [drive.send("create-eni", subnet=sub, sgs=[sg],
                          token="page-%d" % i, tags={"enid.io/page": "p"})
               for i in range(120)]
        made = [drive.wait(i)["eni"]["eni_id"] for i in ids]
        assert all(made), drive.stderr()
        d = drive.ok("describe-enis", tags={"enid.io/page": "p"})
        assert sorted(e["eni_id"] for e in d["entries"]) == sorted(made)
        assert d["count"] == 120
        assert "NextToken" not in drive.stderr()   # tokens never logged
        for i in [drive.send("delete", eni=e) for e in made]:
            assert drive.wait(i, 60)["outcome"] == "ok"
    finally:
        drive.close()


# ------------------------------------------------------------------ 2

def test_throttled_set_dot(sim, drive):
    eni, att = new_eni(sim, drive, 2)
    before = control(sim, "GET", "/state")["throttles"].get(
        "ModifyNetworkInterfaceAttribute", 0)
    control(sim, "POST", "/faults", [{
        "action": "ModifyNetworkInterfaceAttribute",
        "code": "RequestLimitExceeded", "count": 5}])
    try:
        t0 = time.monotonic()
        a = drive.call("set-dot", eni=eni, attachment=att, value=1,
                       deadline_ms=10000)
        took = time.monotonic() - t0
    finally:
        control(sim, "DELETE", "/faults")
    assert a["outcome"] == "ok", (a, drive.stderr())
    assert took < 10.5
    st = control(sim, "GET", "/state")
    assert st["throttles"]["ModifyNetworkInterfaceAttribute"] - before == 5
    assert sim_eni(sim, eni)["delete_on_termination"] is True
    log = drive.stderr()
    assert "ModifyNetworkInterfaceAttribute: attempt 5 failed (throttled " \
        "RequestLimitExceeded); retry 6 in" in log
    # cleaned up
    drive.ok("detach", eni=eni, attachment=att)


# ------------------------------------------------------------------ 3

def test_credentials_refresh(sim):
    control(sim, "POST", "/credentials", {"expire_s": 6})
    d = Drive(write_conf(sim, "creds.conf"),
              os.path.join(sim["dir"], "creds.log"))
    try:
        issued0 = control(sim, "GET", "/state")["credentials"]["issued"]
        t_end = time.monotonic() + 16
        n = 0
        while time.monotonic() < t_end:
            a = d.call("describe-subnets",
                       ids=[sim["subnets"][0]["id"]], deadline_ms=5000)
            assert a["outcome"] == "ok", (a, d.stderr())
            n += 1
            time.sleep(0.4)
        issued = control(sim, "GET", "/state")["credentials"]["issued"]
        assert issued - issued0 >= 3, issued - issued0
        assert n > 20
        errs = control(sim, "GET", "/state")["errors"].get(
            "DescribeSubnets", {})
        assert "AuthFailure" not in errs, errs
    finally:
        control(sim, "POST", "/credentials", {"expire_s": 900})
        d.close()


def test_credentials_revoked(sim):
    """Role credentials revoked before they expire (the chaos soak found
    cloudd stuck on AuthFailure until they would have expired): the call
    that is refused fetches new ones from IMDS and goes through; calls
    refused together share that one fetch."""
    d = Drive(write_conf(sim, "revoke.conf"),
              os.path.join(sim["dir"], "revoke.log"))
    sid = sim["subnets"][0]["id"]
    try:
        a = d.call("describe-subnets", ids=[sid], deadline_ms=5000)
        assert a["outcome"] == "ok", (a, d.stderr())
        st0 = control(sim, "GET", "/state")
        control(sim, "POST", "/credentials", {"revoke": True})
        ids = [d.send("describe-subnets", ids=[sid], deadline_ms=8000)
               for _ in range(4)]
        for i in ids:
            a = d.wait(i)
            assert a["outcome"] == "ok", (a, d.stderr())
        st = control(sim, "GET", "/state")
        refused = st["errors"].get("DescribeSubnets", {}).get(
            "AuthFailure", 0) - st0["errors"].get(
            "DescribeSubnets", {}).get("AuthFailure", 0)
        assert refused >= 1, st["errors"]
        issued = st["credentials"]["issued"] - st0["credentials"]["issued"]
        assert issued == 1, (issued, d.stderr())
        assert "AuthFailure; fetching new credentials and retrying" in \
            d.stderr()
        # Refused again with the new credentials: one fetch per call,
        # then the call's answer names the cause.
        fetch = "AuthFailure; fetching new credentials and retrying"
        d.stderr()                      # flushed
        fetches = open(d.log).read().count(fetch)
        control(sim, "POST", "/faults", {"action": "DescribeSubnets",
                                         "code": "AuthFailure",
                                         "status": 401, "count": 2})
        a = d.call("describe-subnets", ids=[sid], deadline_ms=5000)
        assert a["outcome"] == "fatal" and a["code"] == "AuthFailure", a
        d.stderr()
        assert open(d.log).read().count(fetch) == fetches + 1, d.stderr()
    finally:
        control(sim, "DELETE", "/faults")
        d.close()


# ------------------------------------------------------------------ 4

def test_rate_limit_1000(sim):
    cap, refill = 10, 50
    conf = write_conf(sim, "rate.conf", rate={
        "mutating": {"capacity": 10, "refill_per_s": 5},
        "describe": {"capacity": cap, "refill_per_s": refill}})
    d = Drive(conf, os.path.join(sim["dir"], "rate.log"))
    samples = []
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            t0 = time.monotonic()
            c = control(sim, "GET", "/state")["calls"].get(
                "DescribeSubnets", 0)
            samples.append((t0, time.monotonic(), c))
            time.sleep(0.2)

    try:
        base = control(sim, "GET", "/state")["calls"].get("DescribeSubnets", 0)
        th = threading.Thread(target=sample, daemon=True)
        th.start()
        sub = sim["subnets"][0]["id"]
        ids = [d.send("describe-subnets", ids=[sub], deadline_ms=60000)
               for _ in range(1000)]
        outs = [d.wait(i, 90)["outcome"] for i in ids]
        stop.set()
        th.join(5)
        assert outs.count("ok") == 1000, {o: outs.count(o) for o in set(outs)}
        total = control(sim, "GET", "/state")["calls"]["DescribeSubnets"] - base
        assert total == 1000
        # Any window: at most a full bucket plus the refill over it. A count
        # was read some time while its GET was in flight, so the window
        # between two reads is at most from the first GET's start to the
        # second's end. A call is counted when the sim's handler thread
        # runs, which can be later than cloudd sent it (the sim shares two
        # CPUs with everything else); SEND_SLACK allows for that.
        send_slack = 0.25
        worst = 0.0
        for i in range(len(samples)):
            for j in range(i + 1, len(samples)):
                (ti0, _, ci), (_, tj1, cj) = samples[i], samples[j]
                allowed = cap + refill * (tj1 - ti0 + send_slack)
                worst = max(worst, (cj - ci) / allowed)
        assert worst <= 1.0, worst
        first, last = samples[0], samples[-1]
        rate = (last[2] - first[2]) / (last[1] - first[0])
        assert rate <= refill * 1.05, rate
    finally:
        stop.set()
        d.close()


# ------------------------------------------------------------------ 5

def test_slow_action_delays_only_itself(sim, drive):
    control(sim, "POST", "/faults", [{"action": "DescribeInstanceTypes",
                                      "latency_ms": [3000, 3000]}])
    try:
        slow = [drive.send("describe-instance", deadline_ms=10000)
                for _ in range(3)]
        time.sleep(0.2)
        fast = [drive.send("describe-enis", deadline_ms=10000)
                for _ in range(10)]
        fast += [drive.send("describe-subnets", deadline_ms=10000)
                 for _ in range(5)]
        # Held behind a slow call, one would take its 3 s; under load a
        # free one can still take over a second.
        for i in fast:
            a = drive.wait(i)
            assert a["outcome"] == "ok" and a["latency_ms"] < 2000, a
        for i in slow:
            a = drive.wait(i)
            assert a["outcome"] == "ok" and a["latency_ms"] >= 2900, a
    finally:
        control(sim, "DELETE", "/faults")


# ------------------------------------------------------------------ leak GC

def test_check_instances(sim, drive):
    """Which instances still exist, for the leak collector: both nodes do,
    a made-up id doesn't.  One DescribeInstances call with an instance-id
    filter answers for all of them (with InstanceId.N the made-up id would
    fail the whole call); a throttled call is retried; an id that is not
    an instance id is refused without a call, and cloudd keeps serving."""
    real = [n["instance_id"] for n in sim["nodes"]]
    assert len(real) == 2
    made_up = "i-0" + "e" * 16
    assert made_up not in real
    ids = real + [made_up]

    def counts():
        st = control(sim, "GET", "/state")
        return (st["calls"].get("DescribeInstances", 0),
                st["throttles"].get("DescribeInstances", 0),
                st["errors"].get("DescribeInstances", {}))

    calls0, _, errs0 = counts()
    a = drive.ok("check-instances", ids=ids)
    assert a["exists"] == [1, 1, 0], a
    calls1, throttles1, errs1 = counts()
    assert calls1 - calls0 == 1
    assert errs1 == errs0, errs1
    # the order asked, whatever order the cloud lists them in
    a = drive.ok("check-instances", ids=[made_up, real[1], real[0]])
    assert a["exists"] == [0, 1, 1], a

    control(sim, "POST", "/faults", [{
        "action": "DescribeInstances", "code": "RequestLimitExceeded",
        "count": 3}])
    try:
        a = drive.call("check-instances", ids=ids, deadline_ms=10000)
    finally:
        control(sim, "DELETE", "/faults")
    assert a["outcome"] == "ok" and a["exists"] == [1, 1, 0], \
        (a, drive.stderr())
    assert counts()[1] - throttles1 == 3
    assert "DescribeInstances: attempt 3 failed (throttled " \
        "RequestLimitExceeded); retry 4 in" in drive.stderr()

    calls2 = counts()[0]
    for bad_id in ("i-*", "i-0123", "I-0123456789ABCDEF0"):
        bad = drive.call("check-instances", ids=[real[0], bad_id])
        assert bad["outcome"] == "fatal", bad
        assert 'id 2, "%s", is not an instance id' % bad_id in \
            bad["message"], bad
        assert bad["exists"] == [], bad     # a failed check claims nothing
    assert counts()[0] == calls2
    assert drive.ok("check-instances", ids=[real[1]])["exists"] == [1]


CHECK_SERVER = r'''
import http.server, socketserver, sys, urllib.parse
STATES = {"i-0000000a": "running", "i-0000000b": "terminated",
          "i-0000000c": "shutting-down", "i-0000000d": "stopped"}
WRONG, ENDLESS = "i-00000bad", "i-00e11d1e"
def item(i, state):
    return ("<item><instanceId>%s</instanceId><instanceState><code>0"
            "</code><name>%s</name></instanceState></item>" % (i, state))
def answer(n, instances, token):
    # one reservation per instance, as EC2 has it for separate launches
    res = "".join("<item><reservationId>r-%d</reservationId><instancesSet>"
                  "%s</instancesSet></item>" % (k, item(*i))
                  for k, i in enumerate(instances))
    return ("<DescribeInstancesResponse><requestId>p%d</requestId>"
            "<reservationSet>%s</reservationSet>%s"
            "</DescribeInstancesResponse>" % (
                n, res, "<nextToken>%s</nextToken>" % token if token else ""))
def error(code):
    return ("<Response><Errors><Error><Code>%s</Code><Message>refused"
            "</Message></Error></Errors><RequestID>e</RequestID></Response>"
            % code)
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body in one write: no delayed-ACK stall per page
    wbufsize = -1
    def log_message(self, *a):
        pass
    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        p = urllib.parse.parse_qs(self.rfile.read(n).decode())
        asked = [v[0] for k, v in sorted(
            ((k, v) for k, v in p.items() if k.startswith("Filter.1.Value.")),
            key=lambda kv: int(kv[0].split(".")[-1]))]
        page = int(p.get("NextToken", ["0"])[0])
        status = 200
        if (p.get("Action") != ["DescribeInstances"] or
                p.get("Filter.1.Name") != ["instance-id"] or
                p.get("MaxResults") != ["5"] or
                any(k.startswith("InstanceId") for k in p)):
            status, body = 400, error("InvalidParameterCombination")
        elif WRONG in asked:
            body = answer(1, [(i, "running") for i in asked] +
                          [("i-0000ffff", "running")], None)
        elif ENDLESS in asked:
            body = answer(page + 1, [], str(page + 1))
        else:
            # one known instance per page, then an empty last page
            known = [(i, STATES[i]) for i in asked if i in STATES]
            body = answer(page + 1, known[page:page + 1],
                          str(page + 1) if page < len(known) else None)
        body = body.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
S(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
'''


def test_check_instances_pages_and_wrong_answers(sim):
    """A check followed over every page, each state read as it should be;
    an answer naming an instance not asked for, and one that pages without
    end, fail the check (fatal) and claim nothing."""
    port = 18781
    conf = write_conf(sim, "check.conf", ec2_endpoint="http://127.0.0.1:%d/"
                      % port, region="us-east-1", timeout_ms=2000,
                      access_key_id="AKIDEXAMPLE", secret_access_key="secret",
                      rate={"mutating": {"capacity": 10, "refill_per_s": 5},
                            "describe": {"capacity": 1000,
                                         "refill_per_s": 1000}})
    d = None
    with node_server(sim, "check_server.py", CHECK_SERVER, port):
        try:
            d = Drive(conf, os.path.join(sim["dir"], "check.log"))
            a = d.ok("check-instances", ids=[
                "i-0000000a", "i-0000000b", "i-0000000c", "i-0000000d",
                "i-0000000e"])
            # running and stopped exist; terminated, shutting-down and
            # never listed do not
            assert a["exists"] == [1, 0, 0, 1, 0], a
            assert a["request_id"] == "p5", a   # 4 pages of one, 1 empty

            a = d.call("check-instances", ids=["i-0000000a", "i-00000bad"])
            assert a["outcome"] == "fatal", a
            assert "i-0000ffff was not asked for" in a["message"], a
            assert a["exists"] == [], a

            a = d.call("check-instances", ids=["i-00e11d1e"],
                       deadline_ms=60000, timeout=70)
            assert a["outcome"] == "fatal", a
            assert "more than 100 pages" in a["message"], a
            assert a["exists"] == [], a
            assert d.ok("check-instances", ids=["i-0000000a"])["exists"] \
                == [1]
        finally:
            if d is not None:
                d.close()


# ------------------------------------------------------------------ bad input

BAD_SERVER = r'''
import http.server, socketserver, sys, time, urllib.parse
BIG = b"<DescribeNetworkInterfacesResponse><networkInterfaceSet>" + \
    b"<item><description>" + b"x" * (2 << 20) + b"</description></item>"
LAUGHS = (b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">'
          b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>'
          b'<ModifyNetworkInterfaceAttributeResponse><return>&b;</return>'
          b'</ModifyNetworkInterfaceAttributeResponse>')
ANSWERS = {
    "DescribeSubnets": (200, b"<DescribeSubnetsResponse><subnetSet><item>"
                        b"<subnetId>subnet-1</subn"),
    "DescribeNetworkInterfaces": (200, BIG),
    "CreateNetworkInterface": (200, b"<Surprise><networkInterface/>"
                               b"</Surprise>"),
    "AttachNetworkInterface": (200, b"<AttachNetworkInterfaceResponse>"
                               b"<requestId>r-1</requestId><attachmentId>"
                               b"eni-attach-../../x</attachmentId>"
                               b"</AttachNetworkInterfaceResponse>"),
    "AssignPrivateIpAddresses": (500, b"<html><body>oops</body></html>"),
    "ModifyNetworkInterfaceAttribute": (200, LAUGHS),
    "DescribeInstances": (400, b"<Response><Errors><Error><Code>"
                          b"AuthFailure</Code><Message>nope\xc3\xa9"
                              b"</Message></Error></Errors><RequestID>"
                              b"r-2</RequestID></Response>"),
    "UnassignPrivateIpAddresses": (200, b"<UnassignPrivateIpAddressesResponse>"
                                   b"<requestId>r-3</requestId><return>true"
                                   b"</return></UnassignPrivateIpAddresses"
                                   b"Response>"),
}
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        p = urllib.parse.parse_qs(self.rfile.read(n).decode())
        action = p.get("Action", ["?"])[0]
        if action == "DeleteNetworkInterface":
            time.sleep(20)           # a server that stalls
            return
        status, body = ANSWERS.get(action, (404, b""))
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
S(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
'''


def test_bad_answers(sim):
    port = 18777
    conf = write_conf(sim, "bad.conf", ec2_endpoint="http://127.0.0.1:%d/" % port,
                      region="us-east-1", timeout_ms=2000,
                      access_key_id="AKIDEXAMPLE",
                      secret_access_key="secret")
    d = None
    with node_server(sim, "bad_server.py", BAD_SERVER, port):
        try:
            d = Drive(conf, os.path.join(sim["dir"], "bad.log"))
            eni = "eni-0123456789abcdef0"
            stall = d.send("delete", eni=eni, deadline_ms=3000)
            ids = {
                "malformed": d.send("describe-subnets", ids=["subnet-1"]),
                "oversized": d.send("describe-enis"),
                "wrong root": d.send("create-eni", subnet="subnet-1",
                                     sgs=["sg-1"], token="t"),
                "bad field": d.send("attach", eni=eni, device_index=1),
                "html 500": d.send("assign-ips", eni=eni, count=1),
                "doctype": d.send("set-dot", eni=eni,
                                  attachment="eni-attach-1", value=1),
                "auth": d.send("describe-instance"),
            }
            want = {
                "malformed": ("transient", "malformed XML"),
                "oversized": ("transient", "over the 1048576-byte cap"),
                "wrong root": ("transient", "unexpected root element <Surprise>"),
                "bad field": ("fatal", "invalid attachment id"),
                "html 500": ("transient", "HTTP 500 with an unreadable body"),
                "doctype": ("transient", "DOCTYPE in an answer (refused)"),
                "auth": ("fatal", "nope??"),
            }
            for k, i in ids.items():
                a = d.wait(i, 10)
                assert (a["outcome"], want[k][1] in a["message"]) == \
                    (want[k][0], True), (k, a)
                assert a["latency_ms"] < 2500, (k, a)
            assert d.wait(ids["auth"])["code"] == "AuthFailure"
            # cloudd still serves, while the stalled call waits for its end
            a = d.call("unassign-ips", eni=eni, addrs=["10.0.0.9"])
            assert a["outcome"] == "ok" and a["request_id"] == "r-3", a
            s = d.wait(stall, 10)
            assert s["outcome"] == "transient" and s["latency_ms"] >= 2900, s
            assert "deadline" in s["message"] or "no complete answer" in \
                s["message"], s
        finally:
            if d is not None:
                d.close()


# ------------------------------------------------------------------ IPv6

# A stand-in EC2 for the IPv6 calls (issue 35), until the simulated VPC
# has its IPv6 model: good answers, hostile ones, and an error code
# cloudd does not know.  GET / says how often each ENI was asked.
IPV6_SERVER = r"""
import http.server, json, socketserver, sys, urllib.parse
NS = b' xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"'
CALLS = {}
def addrs(tag, texts):
    return (b"<" + tag + b">" + b"".join(b"<item>" + t + b"</item>"
            for t in texts) + b"</" + tag + b">")
def answer(action, p):
    eni = p.get("NetworkInterfaceId", [""])[0]
    CALLS[eni] = CALLS.get(eni, 0) + 1
    root = action.encode() + b"Response"
    if eni == "eni-0e0000000000000e":
        return 503, (b"<Response><Errors><Error><Code>Ipv6Oddity</Code>"
                     b"<Message>something new</Message></Error></Errors>"
                     b"<RequestID>r-odd</RequestID></Response>")
    if action == "AssignIpv6Addresses":
        if eni == "eni-0b0000000000000b":      # link-local: hostile
            body = addrs(b"assignedIpv6Addresses", [b"fe80::1"])
        elif eni == "eni-0c0000000000000c":    # another ENI's answer
            eni = "eni-0d0000000000000d"
            body = addrs(b"assignedIpv6Addresses", [b"2600:1f14::5"])
        elif "Ipv6PrefixCount" in p:
            # As botocore models it: each /80 a string item.
            body = (b"<assignedIpv6PrefixSet><item>2600:1f14:0:0:7::/80"
                    b"</item></assignedIpv6PrefixSet>")
        else:
            n = int(p.get("Ipv6AddressCount", ["0"])[0])
            body = addrs(b"assignedIpv6Addresses",
                         [b"2600:1f14::%x" % (i + 5) for i in range(n)])
    elif action == "UnassignIpv6Addresses":
        body = addrs(b"unassignedIpv6Addresses",
                     [a.encode() for k, v in sorted(p.items())
                      if k.startswith("Ipv6Addresses.") for a in v])
    elif action == "DescribeSubnets":
        return 200, (b"<DescribeSubnetsResponse" + NS + b"><requestId>r-s"
                     b"</requestId><subnetSet><item><subnetId>subnet-4"
                     b"</subnetId><availabilityZone>us-east-1a"
                     b"</availabilityZone><cidrBlock>10.0.0.0/20</cidrBlock>"
                     b"<availableIpAddressCount>9</availableIpAddressCount>"
                     b"<ipv6CidrBlockAssociationSet><item><ipv6CidrBlock>"
                     b"2600:1f14:abc:de00::/64</ipv6CidrBlock>"
                     b"<ipv6CidrBlockState><state>associated</state>"
                     b"</ipv6CidrBlockState></item>"
                     b"</ipv6CidrBlockAssociationSet></item>"
                     b"<item><subnetId>subnet-6</subnetId>"
                     b"<availabilityZone>us-east-1a</availabilityZone>"
                     b"<availableIpAddressCount>0</availableIpAddressCount>"
                     b"<ipv6CidrBlockAssociationSet><item><ipv6CidrBlock>"
                     b"2600:1f14:abc:de01::/64</ipv6CidrBlock>"
                     b"<ipv6CidrBlockState><state>failing</state>"
                     b"</ipv6CidrBlockState></item>"
                     b"</ipv6CidrBlockAssociationSet><ipv6Native>true"
                     b"</ipv6Native></item></subnetSet>"
                     b"</DescribeSubnetsResponse>")
    else:
        return 404, b""
    return 200, (b"<" + root + NS + b"><requestId>r-6</requestId>"
                 b"<networkInterfaceId>" + eni.encode() +
                 b"</networkInterfaceId>" + body + b"</" + root + b">")
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def reply(self, status, body):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        self.reply(200, json.dumps(CALLS).encode())
    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        p = urllib.parse.parse_qs(self.rfile.read(n).decode())
        self.reply(*answer(p.get("Action", ["?"])[0], p))
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
S(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def test_ipv6_canned(sim):
    """IPv6 asked for and answered, end to end through cloudd: addresses
    and a /80 by count, an unassign by list, a subnet's /64 and an
    IPv6-only subnet; a hostile answer (a link-local address, another
    ENI's answer) is refused whole; an unknown error code of an IPv6
    call is fatal and not retried, whatever its HTTP status."""
    port = 18783
    conf = write_conf(sim, "ipv6.conf", ec2_endpoint="http://127.0.0.1:%d/"
                      % port, region="us-east-1", timeout_ms=2000,
                      access_key_id="AKIDEXAMPLE", secret_access_key="secret")
    d = None
    with node_server(sim, "ipv6_server.py", IPV6_SERVER, port):
        try:
            d = Drive(conf, os.path.join(sim["dir"], "ipv6.log"))
            eni = "eni-0a0000000000000a"
            a = d.ok("assign-ips", eni=eni, family=6, count=2)
            assert a["addrs"] == ["2600:1f14::5", "2600:1f14::6"], a
            a = d.ok("assign-prefixes", eni=eni, family=6, count=1)
            assert a["prefixes"] == ["2600:1f14:0:0:7::/80"], a
            d.ok("unassign-ips", eni=eni, family=6, addrs=["2600:1f14::5"])
            a = d.ok("describe-subnets", ids=["subnet-4", "subnet-6"])
            s4, s6 = a["entries"]
            assert (s4["cidr"], s4["cidr6"], s4["ipv6_state"],
                    s4["ipv6_native"]) == ("10.0.0.0/20",
                                           "2600:1f14:abc:de00::/64",
                                           "associated", False), s4
            assert (s6["cidr"], s6["cidr6"], s6["ipv6_state"],
                    s6["ipv6_native"]) == ("", "", "failing", True), s6

            a = d.call("assign-ips", eni="eni-0b0000000000000b", family=6,
                       count=1)
            assert a["outcome"] == "fatal" and "link-local" in \
                a["message"] and a["addrs"] == [], a
            a = d.call("assign-ips", eni="eni-0c0000000000000c", family=6,
                       count=1)
            assert a["outcome"] == "fatal" and "another ENI" in \
                a["message"], a
            a = d.call("assign-ips", eni="eni-0e0000000000000e", family=6,
                       count=1)
            assert (a["outcome"], a["code"]) == ("fatal", "Ipv6Oddity"), a
            assert "code enid does not know" in d.stderr()
            calls = json.loads(subprocess.check_output(
                ["ip", "netns", "exec", NETNS, "/usr/bin/python3", "-c",
                 "import urllib.request as u; print(u.build_opener("
                 "u.ProxyHandler({})).open('http://127.0.0.1:%d/')"
                 ".read().decode())" % port]))
            assert calls["eni-0e0000000000000e"] == 1, calls
            # the IPv4 request is what it always was
            a = d.call("assign-ips", eni=eni, count=1)
            assert a["outcome"] == "fatal" and a["http_status"] == 404, a
        finally:
            if d is not None:
                d.close()


# ------------------------------------------------------------------ TLS, DNS

TLS_SERVER = r'''
import http.server, socketserver, ssl, sys
BODY = (b"<DescribeSubnetsResponse><requestId>r-tls</requestId><subnetSet>"
        b"<item><subnetId>subnet-1</subnetId>"
        b"<availabilityZone>us-east-1a</availabilityZone><cidrBlock>10.0.0.0/20"
        b"</cidrBlock><availableIpAddressCount>9</availableIpAddressCount>"
        b"</item></subnetSet></DescribeSubnetsResponse>")
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[2], sys.argv[3])
s = S(("127.0.0.1", int(sys.argv[1])), H)
s.socket = ctx.wrap_socket(s.socket, server_side=True)
s.serve_forever()
'''


def test_tls_verified_and_names_resolved(sim):
    """An https endpoint named by a host name: the name goes through the
    resolver (threads under seccomp), the certificate is checked against
    ca_file, and without that CA the call is refused."""
    port, host = 18443, "ec2.enid.test"
    d = sim["dir"]
    cert, key = os.path.join(d, "tls.crt"), os.path.join(d, "tls.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048",
                    "-nodes", "-keyout", key, "-out", cert, "-days", "1",
                    "-subj", "/CN=" + host,
                    "-addext", "subjectAltName=DNS:" + host],
                   check=True, capture_output=True, timeout=60)
    os.chmod(cert, 0o644)
    # ip netns exec bind-mounts /etc/netns/NS/hosts over /etc/hosts.
    etc = "/etc/netns/" + NETNS
    os.makedirs(etc, exist_ok=True)
    with open(etc + "/hosts", "w") as f:
        f.write("127.0.0.1 localhost\n127.0.0.1 %s\n" % host)
    url = "https://%s:%d/" % (host, port)
    drives = []
    try:
        with node_server(sim, "tls_server.py", TLS_SERVER, port, cert, key):
            good = Drive(write_conf(sim, "tls.conf", ec2_endpoint=url,
                                    allow_http=False, ca_file=cert,
                                    region="us-east-1"),
                         os.path.join(d, "tls.log"))
            drives.append(good)
            a = good.ok("describe-subnets", ids=["subnet-1"])
            assert [e["subnet_id"] for e in a["entries"]] == ["subnet-1"], a
            bad = Drive(write_conf(sim, "notrust.conf", ec2_endpoint=url,
                                   allow_http=False, region="us-east-1"),
                        os.path.join(d, "notrust.log"))
            drives.append(bad)
            a = bad.call("describe-subnets", ids=["subnet-1"], deadline_ms=3000)
            assert a["outcome"] != "ok", a
            assert "certificate" in a["message"].lower() or \
                "ssl" in a["message"].lower(), a
    finally:
        for dr in drives:
            dr.close()
        shutil.rmtree(etc, ignore_errors=True)
        try:
            os.rmdir("/etc/netns")      # only if we left it empty
        except OSError:
            pass


# ------------------------------------------------------------------ IMDS

EXPIRED_IMDS = r'''
import http.server, json, socketserver, sys
fetches = [0]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def reply(self, body, status=200):
        body = body.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_PUT(self):
        if self.path == "/latest/api/token":
            return self.reply("tok")
        self.reply("", 404)
    def do_GET(self):
        p = self.path
        if p == "/count":
            return self.reply(str(fetches[0]))
        if p == "/latest/meta-data/placement/region":
            return self.reply("us-east-1")
        if p == "/latest/meta-data/iam/security-credentials/":
            return self.reply("role\n")
        if p == "/latest/meta-data/iam/security-credentials/role":
            fetches[0] += 1
            return self.reply(json.dumps({
                "Code": "Success", "AccessKeyId": "ASIAEXPIRED",
                "SecretAccessKey": "secret", "Token": "token",
                "Expiration": "2001-01-01T00:00:00Z"}))
        self.reply("", 404)
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
S(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
'''


def test_expired_role_credentials_backoff(sim):
    """IMDS hands out credentials that are already expired (a skewed
    clock): cloudd must back off, not fetch them again in a tight loop,
    and say why its calls wait."""
    port = 18779
    base = "http://127.0.0.1:%d" % port
    d = None
    with node_server(sim, "expired_imds.py", EXPIRED_IMDS, port):
        try:
            d = Drive(write_conf(sim, "expired.conf", ec2_endpoint=base + "/",
                                 imds_endpoint=base),
                      os.path.join(sim["dir"], "expired.log"))
            a = d.call("describe-subnets", ids=["subnet-1"], deadline_ms=2500)
            assert a["outcome"] == "transient", a
            assert "expired" in a["message"], a
            out = subprocess.run(["ip", "netns", "exec", NETNS, "curl", "-s",
                                  base + "/count"], capture_output=True,
                                 text=True, timeout=10).stdout
            # Backoff from 450 ms: a handful in 2.5 s, not thousands.
            assert 1 <= int(out) <= 20, out
        finally:
            if d is not None:
                d.close()


# ------------------------------------------------------------------ deadlines

PAGED_SERVER = r'''
import http.server, socketserver, sys, time, urllib.parse
ITEM = ("<item><networkInterfaceId>eni-%08x</networkInterfaceId>"
        "<subnetId>subnet-1</subnetId><macAddress>02:00:00:00:%02x:%02x"
        "</macAddress><privateIpAddress>10.0.%d.%d</privateIpAddress>"
        "<status>available</status></item>")
PAGE1 = ("<DescribeNetworkInterfacesResponse><requestId>r-1</requestId>"
         "<networkInterfaceSet>" +
         "".join(ITEM % (i, i >> 8, i & 255, i >> 8, i & 255)
                 for i in range(1000)) +
         "</networkInterfaceSet><nextToken>page2</nextToken>"
         "</DescribeNetworkInterfacesResponse>").encode()
PAGE2 = (b"<DescribeNetworkInterfacesResponse><requestId>r-2</requestId>"
         b"<networkInterfaceSet/></DescribeNetworkInterfacesResponse>")
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        p = urllib.parse.parse_qs(self.rfile.read(n).decode())
        if "NextToken" in p:
            body = PAGE2
        else:
            # the tag filter's value says how long to sit on page 1
            time.sleep(int(p.get("Filter.1.Value.1", ["0"])[0]) / 1000.0)
            body = PAGE1
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
S(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
'''


def test_deadline_between_pages(sim):
    """Page 1 arrives just before the intent's deadline and takes longer
    than what is left to check and pass on: the call for page 2 then ends
    (deadline passed) before cloud_ec2() returns, answering and freeing the
    intent on the way.  cloudd must not touch the intent after that (a
    use-after-free, fatal under the sanitizer build) and keeps serving."""
    port = 18780
    conf = write_conf(sim, "pages.conf", ec2_endpoint="http://127.0.0.1:%d/"
                      % port, region="us-east-1", timeout_ms=5000,
                      access_key_id="AKIDEXAMPLE", secret_access_key="secret",
                      rate={"mutating": {"capacity": 10, "refill_per_s": 5},
                            "describe": {"capacity": 1000,
                                         "refill_per_s": 1000}})
    d = None
    deadline = 400
    hits = 0
    with node_server(sim, "paged_server.py", PAGED_SERVER, port):
        try:
            d = Drive(conf, os.path.join(sim["dir"], "pages.log"))
            for sit in list(range(deadline - 2, deadline - 120, -2)) * 3:
                a = d.call("describe-enis", deadline_ms=deadline,
                           tags={"sleep": str(sit)})
                assert a["outcome"] in ("ok", "transient"), a
                if "deadline passed before attempt" in a["message"]:
                    hits += 1
                    if hits >= 3:
                        break
            assert hits > 0, "page 2 never started after the deadline"
            a = d.call("describe-enis", tags={"sleep": "0"})
            assert a["outcome"] == "ok" and a["count"] == 1000, a["outcome"]
        finally:
            if d is not None:
                d.close()


# ------------------------------------------------------------------ prefixes

PD_PREFIX = "enidcp%d" % os.getpid()


@pytest.fixture(scope="module")
def pd_sim():
    """A sim of its own for prefix delegation: scattered single addresses
    (a subnet fragments as real ones do), node 1 an m4.large (Xen: no
    prefixes)."""
    with run_sim(PD_PREFIX, "--node-type", "1:m4.large",
                 "--allocation", "scattered") as info:
        yield info


@pytest.fixture(scope="module")
def pd_drive(pd_sim):
    d = Drive(write_conf(pd_sim, "pd.conf"),
              os.path.join(pd_sim["dir"], "pd.log"), PD_PREFIX + "-node-0")
    yield d
    d.close()


def aligned_28s_in(prefixes, cidr):
    net = ipaddress.ip_network(cidr)
    for p in prefixes:
        n = ipaddress.ip_network(p)           # strict: refuses host bits
        assert n.prefixlen == 28 and n.subnet_of(net), (p, cidr)
    return True


def pd_eni(sim, drive, device_index, subnet=0, **kw):
    """Create an ENI in subnet (index) with kw (prefixes=N or
    secondary=N), attach it, wait until attached: its describe entry."""
    sub = sim["subnets"][subnet]["id"]
    sg = sim["security_groups"][0]["id"]
    a = drive.ok("create-eni", subnet=sub, sgs=[sg],
                 token="pd-%d-%f" % (device_index, time.time()),
                 tags={"enid.io/cluster": "it"}, **kw)
    eni = a["eni"]["eni_id"]
    drive.ok("attach", eni=eni, device_index=device_index)
    for _ in range(50):
        d = drive.ok("describe-enis")
        mine = [e for e in d["entries"] if e["eni_id"] == eni]
        if mine and mine[0]["attach_status"] == "in-use":
            return mine[0], a["eni"]
        time.sleep(0.1)
    pytest.fail("%s never attached" % eni)


def test_prefix_intents(pd_sim, pd_drive):
    """Create with a prefix, assign by count and by name, unassign, and
    what the broker is told agrees with the cloud each time."""
    di = pd_drive.ok("describe-instance")
    assert (di["hypervisor"], di["bare_metal"], di["prefixes_ok"]) == \
        ("nitro", False, True)

    cidr = pd_sim["subnets"][0]["cidr"]
    listed, created = pd_eni(pd_sim, pd_drive, 1, prefixes=1)
    assert len(created["prefixes"]) == 1 and created["addrs"] == []
    assert listed["prefixes"] == created["prefixes"]
    assert aligned_28s_in(created["prefixes"], cidr)
    eni = listed["eni_id"]

    got = pd_drive.ok("assign-prefixes", eni=eni, count=2)["prefixes"]
    assert len(got) == 2 and aligned_28s_in(got, cidr)
    held = sorted(created["prefixes"] + got)
    assert sorted(sim_eni(pd_sim, eni)["prefixes"]) == held
    d = pd_drive.ok("describe-enis")
    assert sorted([e for e in d["entries"] if e["eni_id"] == eni][0]
                  ["prefixes"]) == held

    # By name: the first address of each /28, as the broker sends them.
    first = got[0].split("/")[0]
    pd_drive.ok("unassign-prefixes", eni=eni, prefixes=[first])
    assert got[0] not in sim_eni(pd_sim, eni)["prefixes"]
    back = pd_drive.ok("assign-prefixes", eni=eni, prefixes=[first])
    assert back["prefixes"] == [got[0]]
    assert sorted(sim_eni(pd_sim, eni)["prefixes"]) == held

    # Prefixes and addresses share the ENI's slots.
    slots = di["ips_per_eni"] - 1
    a = pd_drive.ok("assign-ips", eni=eni, count=slots - len(held))
    assert len(a["addrs"]) == slots - len(held)
    full = pd_drive.call("assign-prefixes", eni=eni, count=1)
    assert (full["outcome"], full["code"]) == \
        ("limit-exceeded", "PrivateIpAddressLimitExceeded"), full
    pd_drive.ok("unassign-ips", eni=eni, addrs=a["addrs"])

    # Refused before the cloud is asked: not a prefix, and no prefix.
    calls = control(pd_sim, "GET", "/state")["calls"]
    bad = pd_drive.call("unassign-prefixes", eni=eni, prefixes=[])
    assert bad["outcome"] == "fatal" and "no prefix" in bad["message"]
    assert control(pd_sim, "GET", "/state")["calls"] == calls


def test_fragmented_subnet_is_no_prefix(pd_sim, pd_drive):
    """No free aligned /28 is "no-prefix", not a full subnet: single
    addresses still come; once the subnet is whole, prefixes come again."""
    listed, _ = pd_eni(pd_sim, pd_drive, 2, subnet=1, secondary=1)
    eni = listed["eni_id"]
    sub = pd_sim["subnets"][1]["id"]
    control(pd_sim, "POST", "/subnets/" + sub, {"fragment": True})
    try:
        a = pd_drive.call("assign-prefixes", eni=eni, count=1)
        assert (a["outcome"], a["code"]) == \
            ("no-prefix", "InsufficientCidrBlocks"), a
        assert a["prefixes"] == []
        c = pd_drive.call("create-eni", subnet=sub,
                          sgs=[pd_sim["security_groups"][0]["id"]],
                          prefixes=1, token="pd-frag-%f" % time.time())
        assert c["outcome"] == "no-prefix", c
        one = pd_drive.ok("assign-ips", eni=eni, count=1)
        assert len(one["addrs"]) == 1
    finally:
        control(pd_sim, "POST", "/subnets/" + sub, {"fragment": False})
    got = pd_drive.ok("assign-prefixes", eni=eni, count=1)["prefixes"]
    assert aligned_28s_in(got, pd_sim["subnets"][1]["cidr"])


def test_xen_instance_says_no_prefixes(pd_sim):
    """Node 1 is an m4.large: DescribeInstances says xen for every
    instance, DescribeInstanceTypes tells this one apart."""
    d = Drive(write_conf(pd_sim, "pd1.conf"),
              os.path.join(pd_sim["dir"], "pd1.log"), PD_PREFIX + "-node-1")
    try:
        di = d.ok("describe-instance")
        assert di["instance_type"] == "m4.large"
        assert (di["hypervisor"], di["bare_metal"], di["prefixes_ok"]) == \
            ("xen", False, False)
        assert (di["max_enis"], di["ips_per_eni"]) == (2, 10)
    finally:
        d.close()


LYING_PREFIXES = r'''
import http.server, socketserver, sys, urllib.parse
ENI = ("<networkInterfaceId>eni-0abc</networkInterfaceId>"
       "<subnetId>subnet-1</subnetId><macAddress>02:00:00:00:0a:bc"
       "</macAddress><privateIpAddress>10.0.0.5</privateIpAddress>"
       "<status>available</status>")
def prefixes(tag, ps):
    return "<%s>%s</%s>" % (tag, "".join(
        "<item><ipv4Prefix>%s</ipv4Prefix></item>" % p for p in ps), tag)
# what each ENI id (assign) or client token (create) is answered with
ASSIGN = {"eni-more": ["10.0.4.16/28", "10.0.4.32/28"],
          "eni-misaligned": ["10.0.4.24/28"],
          "eni-twice": ["10.0.4.16/28", "10.0.4.16/28"],
          "eni-other": ["10.0.4.48/28"],
          "eni-good": ["10.0.4.64/28"]}
CREATE = {"more": ["10.0.4.16/28", "10.0.4.32/28"],
          "forged": ["x&#10;security: forged"],
          "good": ["10.0.4.80/28"]}
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = -1
    def log_message(self, *a):
        pass
    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        p = urllib.parse.parse_qs(self.rfile.read(n).decode())
        act = p["Action"][0]
        if act == "CreateNetworkInterface":
            body = ("<CreateNetworkInterfaceResponse><networkInterface>%s%s"
                    "</networkInterface></CreateNetworkInterfaceResponse>" %
                    (ENI, prefixes("ipv4PrefixSet",
                                   CREATE[p["ClientToken"][0]])))
        else:
            body = ("<AssignPrivateIpAddressesResponse>%s<return>true"
                    "</return></AssignPrivateIpAddressesResponse>" %
                    prefixes("assignedIpv4PrefixSet",
                             ASSIGN[p["NetworkInterfaceId"][0]]))
        body = body.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
S(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
'''


def test_prefix_answers_that_lie(sim):
    """A cloud that answers with more prefixes than asked, a misaligned
    one, one twice, or another than the one named, is refused whole
    (fatal) and nothing of it reaches the broker; a prefix whose text
    would forge a log line is left out, its text made harmless."""
    port = 18782
    conf = write_conf(sim, "lying.conf", ec2_endpoint="http://127.0.0.1:%d/"
                      % port, region="us-east-1", timeout_ms=2000,
                      access_key_id="AKIDEXAMPLE", secret_access_key="secret")
    sg = ["sg-1"]
    d = None
    with node_server(sim, "lying_prefixes.py", LYING_PREFIXES, port):
        try:
            d = Drive(conf, os.path.join(sim["dir"], "lying.log"))
            for eni, kw, why in (
                    ("eni-more", {"count": 1}, "2 prefixes in the answer, "
                     "1 asked for"),
                    ("eni-misaligned", {"count": 1}, "is not an aligned /28"),
                    ("eni-twice", {"count": 2}, "named twice"),
                    ("eni-other", {"prefixes": ["10.0.4.64"]},
                     "not those asked for")):
                a = d.call("assign-prefixes", eni=eni, **kw)
                assert (a["outcome"], a["prefixes"]) == ("fatal", []), a
                assert why in a["message"], (why, a)
            a = d.ok("assign-prefixes", eni="eni-good",
                     prefixes=["10.0.4.64"])
            assert a["prefixes"] == ["10.0.4.64/28"], a

            a = d.call("create-eni", subnet="subnet-1", sgs=sg, prefixes=1,
                       token="more")
            assert a["outcome"] == "fatal", a
            assert "with 2 prefixes, 1 asked for" in a["message"], a
            a = d.call("create-eni", subnet="subnet-1", sgs=sg,
                       token="good")
            assert a["outcome"] == "fatal", a   # a prefix, none asked for
            a = d.ok("create-eni", subnet="subnet-1", sgs=sg, prefixes=1,
                     token="good")
            assert a["eni"]["prefixes"] == ["10.0.4.80/28"], a
            a = d.ok("create-eni", subnet="subnet-1", sgs=sg, prefixes=1,
                     token="forged")
            assert (a["eni"]["prefixes"], a["eni"]["bad_prefixes"]) == \
                ([], 1), a
        finally:
            if d is not None:
                d.close()
    log = d.stderr()
    assert '1 prefix left out, not an aligned /28, named twice or over ' \
        'an address of the ENI\'s ("x?security: forged")' in log, log
    assert "\nsecurity: forged" not in log, log
