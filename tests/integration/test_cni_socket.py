"""enid's CNI socket: the operations, bad requests and wrong peers refused
without touching the pool, a flood of requests all answered, and a
corrupt checkpoint moved aside with the pods rebuilt from the cloud and
the kernel."""
import itertools
import json
import os
import socket
import threading
import time

import pytest

import podwire
from poolenv import PoolEnv

_seq = itertools.count()


@pytest.fixture
def env(workdir, enid_user, helper_dir):
    prefix = "es%d%d" % (os.getpid() % 10000, next(_seq))
    e = PoolEnv(workdir, enid_user, helper_dir, prefix=prefix,
                sim_args=("--ip-limit", "6", "--eni-limit", "4"),
                pool={"add_timeout_s": 10, "ip_cooldown_s": 0})
    try:
        e.start()
        yield e
    finally:
        e.stop()


def raw(sock, data, timeout=5):
    """Send bytes; return (answer lines, whether enid closed the
    connection)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(str(sock))
    try:
        s.sendall(data)
    except BrokenPipeError:
        pass
    buf = b""
    closed = False
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            closed = True
            break
        except socket.timeout:
            break
        if not chunk:
            closed = True
            break
        buf += chunk
    s.close()
    return [json.loads(x) for x in buf.splitlines() if x.strip()], closed


def snapshot(env):
    try:
        with open(env.state_dir / "checkpoint.json", "rb") as f:
            ck = f.read()
    except FileNotFoundError:
        ck = None
    return (ck, json.dumps(env.show("pods"), sort_keys=True),
            json.dumps(env.show("pool"), sort_keys=True))


def test_operations(env):
    a, _ = env.add("op1", k8s_namespace="default", k8s_name="web-0",
                   k8s_uid="u-1")
    assert a["ok"], a
    # idempotent per (container id, ifname)
    b, _ = env.add("op1")
    assert b["ok"] and b["ip"] == a["ip"], (a, b)
    c, _ = env.add("op1", ifname="net1")
    assert c["ok"] and c["ip"] != a["ip"], c
    assert env.wire("op1", a["ip"]).ping(env.ep["vpc_host"], wait=2)
    # check: held, and held at the address the runtime names
    r, _ = podwire.cni(env.cni_sock, {"op": "check", "container_id": "op1",
                                      "ifname": "eth0", "ip": a["ip"]})
    assert r["ok"], r
    r, _ = podwire.cni(env.cni_sock, {"op": "check", "container_id": "op1",
                                      "ifname": "eth0", "ip": "10.0.255.1"})
    assert not r["ok"] and r["code"] == "address-mismatch", r
    r, _ = podwire.cni(env.cni_sock, {"op": "check", "container_id": "zz",
                                      "ifname": "eth0"})
    assert not r["ok"] and r["code"] == "unknown-container", r
    # status says whether an address can be had
    r, _ = podwire.cni(env.cni_sock, {"op": "status"})
    assert r["ok"] and r["available"] is True, r
    # del of an unknown attachment is ok; del twice is ok
    r, _ = env.delete("never-added")
    assert r["ok"], r
    r, _ = podwire.delete(env.cni_sock, "op1", ifname="net1")
    assert r["ok"], r
    r, _ = podwire.delete(env.cni_sock, "op1", ifname="net1")
    assert r["ok"], r
    # gc keeps the valid attachments and releases the rest
    for cid in ("g1", "g2", "g3"):
        r, _ = env.add(cid)
        assert r["ok"], r
    r, _ = podwire.cni(env.cni_sock, {
        "op": "gc", "valid_attachments": [
            {"container_id": "op1", "ifname": "eth0"},
            {"container_id": "g2", "ifname": "eth0"}]})
    assert r["ok"], r
    held = {(p["container_id"], p["ifname"]) for p in env.show("pods")}
    assert held == {("op1", "eth0"), ("g2", "eth0")}, held
    ck = {(p["container_id"], p["ifname"]) for p in env.checkpoint()["pods"]}
    assert ck == held
    assert env.pods["op1"].ping(env.ep["vpc_host"], wait=2)


BAD = [
    b"not json\n",
    b"[1, 2]\n",
    b"{}\n",
    b'{"op": 7}\n',
    b'{"op": "explode"}\n',
    b'{"op": "add"}\n',
    b'{"op": "add", "container_id": "a", "ifname": "eth0", "x": 1}\n',
    b'{"op": "add", "container_id": "../etc", "ifname": "eth0"}\n',
    b'{"op": "add", "container_id": "a", "ifname": "eth0/x"}\n',
    b'{"op": "add", "container_id": "a", "ifname": "' + b"i" * 16 + b'"}\n',
    b'{"op": "add", "container_id": "' + b"c" * 300 + b'", "ifname": "e"}\n',
    b'{"op": "add", "container_id": "a", "ifname": "eth0", '
    b'"k8s_name": "a\\u0001b"}\n',
    b'{"op": "add", "container_id": "a", "ifname": 5}\n',
    b'{"op": "check", "container_id": "a", "ifname": "eth0", "ip": "x"}\n',
    b'{"op": "check", "container_id": "a", "ifname": "eth0", '
    b'"ip": "224.0.0.1"}\n',
    b'{"op": "gc", "valid_attachments": {"a": 1}}\n',
    b'{"op": "gc", "valid_attachments": [{"container_id": "a"}]}\n',
    b'{"op": "del", "container_id": "a\\u0000b", "ifname": "eth0"}\n',
    b'{"op": "status", "op": "add"}\n',
    b"\xff\xfe\n",
]


def test_bad_requests_leave_the_pool_alone(env):
    for i in range(3):
        a, _ = env.add("keep%d" % i)
        assert a["ok"], a
    before = snapshot(env)
    for line in BAD:
        answers, closed = raw(env.cni_sock, line)
        assert len(answers) == 1, (line, answers)
        a = answers[0]
        assert a["ok"] is False and a["code"] == "bad-request", (line, a)
        assert a["error"], a
        assert closed, line
    # a request after a bad one on the same connection is not served
    answers, closed = raw(env.cni_sock, BAD[0] +
                          b'{"op": "add", "container_id": "sneak", '
                          b'"ifname": "eth0"}\n')
    assert len(answers) == 1 and closed, answers
    # a line longer than any request, with no newline
    answers, closed = raw(env.cni_sock, b"{" + b" " * (1 << 20))
    assert closed and all(a["code"] == "bad-request" for a in answers)
    assert snapshot(env) == before
    assert env.enid.proc.poll() is None


def test_wrong_peer_is_refused(env, enid_user):
    import pwd
    pw = pwd.getpwnam(enid_user)
    before = snapshot(env)
    st = os.stat(env.cni_sock)
    assert st.st_uid == 0 and (st.st_mode & 0o077) == 0, oct(st.st_mode)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        code = b"?"
        try:
            os.setgroups([])
            os.setgid(pw.pw_gid)
            os.setuid(pw.pw_uid)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(3)
            try:
                s.connect(str(env.cni_sock))
                s.sendall(b'{"op": "add", "container_id": "evil", '
                          b'"ifname": "eth0"}\n')
                data = s.recv(4096)
                code = b"served" if b'"ok": true' in data or \
                    b'"ok":true' in data else b"refused"
            except PermissionError:
                code = b"eacces"
            except OSError:
                code = b"refused"
        finally:
            os.write(w, code)
            os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    got = os.read(r, 16)
    os.close(r)
    assert got in (b"eacces", b"refused"), got
    assert snapshot(env) == before


def test_flood_is_answered(env):
    """Thousands of requests on many connections: every one answered,
    adds and dels together, nothing lost."""
    n_threads, per = 16, 150
    errors = []
    counts = {"ok": 0}
    lock = threading.Lock()

    def worker(t):
        for i in range(per):
            try:
                if i % 3 == 0:
                    req = {"op": "status"}
                elif i % 3 == 1:
                    req = {"op": "add", "container_id": "f%d-%d" % (t, i),
                           "ifname": "eth0"}
                else:
                    req = {"op": "del", "container_id": "f%d-%d" % (t, i - 1),
                           "ifname": "eth0"}
                a, _ = podwire.cni(env.cni_sock, req, timeout=30)
                if req["op"] == "add" and not a["ok"] and \
                        a["code"] not in ("timeout", "eni-limit",
                                          "subnet-full", "max-pods"):
                    raise AssertionError(a)
                with lock:
                    counts["ok"] += 1
            except Exception as e:      # noqa: BLE001 -- reported below
                with lock:
                    errors.append(repr(e))
    t0 = time.monotonic()
    ts = [threading.Thread(target=worker, args=(t,))
          for t in range(n_threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    elapsed = time.monotonic() - t0
    assert not errors, errors[:5]
    assert counts["ok"] == n_threads * per
    # every add was followed by its del: nothing is held
    assert env.show("pods") == []
    assert env.checkpoint()["pods"] == []
    print("flood: %d requests in %.1f s" % (n_threads * per, elapsed))


def test_corrupt_checkpoint_rebuilds_from_cloud_and_kernel(env):
    held = {}
    for i in range(4):
        a = env.add_and_ping("cp%d" % i)
        held["cp%d" % i] = a["ip"]
    env.enid.stop()
    path = env.state_dir / "checkpoint.json"
    text = path.read_bytes()
    path.write_bytes(text[:len(text) // 2])     # truncated
    e = env.start()
    assert e.wait_log("checkpoint", 10)
    log = e.text()
    assert "checkpoint.json" in log and "rebuilding" in log, log
    aside = [p for p in os.listdir(env.state_dir)
             if p.startswith("checkpoint.json.corrupt-")]
    assert aside, os.listdir(env.state_dir)
    # Each pod's address is still held (recovered from its kernel rule),
    # and the pods still reach the VPC.
    env.wait(lambda: len(env.show("pods")) == len(held), 20,
             "the recovered pods")
    pods = {p["ip"]: p for p in env.show("pods")}
    assert set(pods) == set(held.values()), pods
    for cid in held:
        assert env.pods[cid].ping(env.ep["vpc_host"], wait=2), cid
    # new pods never get those addresses
    for i in range(4):
        a, _ = env.add("new%d" % i)
        assert a["ok"] and a["ip"] not in held.values(), a
    # a CNI GC that lists the real pods gives the recovered ones back
    r, _ = podwire.cni(env.cni_sock, {"op": "gc", "valid_attachments": [
        {"container_id": "new%d" % i, "ifname": "eth0"} for i in range(4)]})
    assert r["ok"], r
    left = {p["container_id"] for p in env.show("pods")}
    assert left == {"new%d" % i for i in range(4)}, left
