"""The seccomp filters on the real daemons, where the unit tests
(tests/unit/test_sandbox.c, which load each filter in a fork and try the
forbidden calls one by one) cannot reach: glibc's resolver doing DNS under
cloudd's filter, syslog connected before the filters go on, the broker
killing a child that does not exit, and, in a sanitizer build, a finding in
a sandboxed process printing its whole report.
"""
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import time

import pytest

from conftest import BUILDDIR, built, proc_status, write_config

PY = "/usr/bin/python3"


def sanitizer_build():
    """True if BUILDDIR was configured with --enable-sanitizers."""
    try:
        with open(os.path.join(BUILDDIR, "Makefile")) as f:
            return any(l.startswith("SAN_CFLAGS = -fsanitize") for l in f)
    except FileNotFoundError:
        return False


def wait_ready(enid):
    assert enid.wait_log("all processes ready", 15), enid.text()
    kids = enid.children()
    assert set(kids) == {"enid-netd", "enid-cloudd"}, (kids, enid.text())
    return kids


def wait_until(cond, timeout, step=0.02):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(step)
    return cond()


def gone(pid):
    try:
        return proc_status(pid)["State"].startswith("Z")
    except FileNotFoundError:
        return True


# ------------------------------------------------------------ the resolver

DNS_SERVER = r'''
import socket, struct, sys
# A name server for the test: A queries get the addresses on the command
# line, anything else an empty answer.  One line per query on stdout.
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 53))
print("ready", flush=True)
while True:
    q, peer = s.recvfrom(512)
    i = 12
    while q[i]:
        i += q[i] + 1
    qtype = struct.unpack("!H", q[i + 1:i + 3])[0]
    answers = sys.argv[1:] if qtype == 1 else []
    out = struct.pack("!HHHHHH", struct.unpack("!H", q[:2])[0], 0x8180, 1,
                      len(answers), 0, 0) + q[12:i + 5]
    for a in answers:
        out += b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + \
            socket.inet_aton(a)
    s.sendto(out, peer)
    print("query type %d" % qtype, flush=True)
'''

EC2_SERVER = r'''
import http.server, sys
# Any call: EC2's answer for a subnet that does not exist.
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = (b'<?xml version="1.0"?><Response><Errors><Error><Code>'
                b'InvalidSubnetID.NotFound</Code><Message>no such subnet'
                b'</Message></Error></Errors><RequestID>req-dns</RequestID>'
                b'</Response>')
        self.send_response(400)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        print("request for", self.headers.get("Host"), flush=True)
print("ready", flush=True)
http.server.HTTPServer(("0.0.0.0", int(sys.argv[1])), H).serve_forever()
'''


def start_server(ns, workdir, name, source, *args):
    path = workdir / name
    path.write_text(source)
    log = open(workdir / (name + ".log"), "w")
    p = subprocess.Popen(["ip", "netns", "exec", ns, PY, str(path),
                          *map(str, args)], stdout=log,
                         stderr=subprocess.STDOUT)
    assert wait_until(lambda: "ready" in (workdir / (name + ".log"))
                      .read_text(), 10), name
    return p, workdir / (name + ".log")


def test_resolver_under_cloudd_filter(netns, workdir, enid_user):
    """A host name resolved by DNS inside cloudd's filter: libcurl's
    resolver thread, glibc's UDP queries (IP_RECVERR, FIONREAD), two
    answers to sort, nscd refused with EACCES; then the call itself."""
    host, port = "ec2.enid.test", 18443
    etc = pathlib.Path("/etc/netns") / netns
    etc.mkdir(parents=True, exist_ok=True)
    (etc / "resolv.conf").write_text(
        "nameserver 127.0.0.1\noptions timeout:2 attempts:2\n")
    (etc / "hosts").write_text("127.0.0.1 localhost\n")
    servers = []
    try:
        servers.append(start_server(netns, workdir, "dns.py", DNS_SERVER,
                                    "127.0.0.1", "127.0.0.2"))
        servers.append(start_server(netns, workdir, "ec2.py", EC2_SERVER,
                                    port))
        conf = workdir / "cloudd.conf"
        conf.write_text(json.dumps({
            "user": enid_user, "cluster_name": "it",
            "cloud": {"ec2_endpoint": "http://%s:%d/" % (host, port),
                      "allow_http": True, "region": "us-east-1",
                      "access_key_id": "AKIDENIDTEST",
                      "secret_access_key": "enid-test-secret",
                      "timeout_ms": 8000}}))
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("AWS_")}
        env["ENID_SECCOMP_DEBUG"] = "1"
        env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
        intent = {"id": 1, "op": "describe-subnets", "ids": ["subnet-1"],
                  "deadline_ms": 15000}
        out = subprocess.run(
            ["ip", "netns", "exec", netns,
             built("tests/integration/cloudd_drive"), "-c",
             built("cloudd/enid-cloudd"), "-f", str(conf), "-v", "-v",
             "-w", "20"], input=json.dumps(intent) + "\n",
            capture_output=True, text=True, env=env, timeout=60)
        lines = [json.loads(l) for l in out.stdout.splitlines()]
        answers = [l for l in lines if l.get("id") == 1]
        assert answers, (out.stdout, out.stderr)
        a = answers[0]
        # The name resolved and the call reached the server.
        assert a["outcome"] == "not-found", (a, out.stderr)
        assert a["request_id"] == "req-dns", a
        assert lines[-1] == {"event": "exit", "status": 0}, out.stderr
        assert "seccomp: refused" not in out.stderr, out.stderr
        dns = servers[0][1].read_text()
        # The warm-up before the filter and the call's own lookup after.
        assert dns.count("query type 1") >= 2, dns
        assert "request for %s:%d" % (host, port) in \
            servers[1][1].read_text()
    finally:
        for p, _ in servers:
            p.terminate()
            p.wait(10)
        shutil.rmtree(etc, ignore_errors=True)
        try:
            os.rmdir("/etc/netns")      # only if we left it empty
        except OSError:
            pass


EMPTY_REGION_IMDS = r'''
import http.server, sys
# IMDSv2 whose region answer is empty: 200 with no body at all.
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def reply(self, body, status=200):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_PUT(self):
        self.reply(b"token" if self.path == "/latest/api/token" else b"",
                   200 if self.path == "/latest/api/token" else 404)
    def do_GET(self):
        if self.path == "/latest/meta-data/placement/region":
            print("region asked", flush=True)
            return self.reply(b"")
        self.reply(b"", 404)
print("ready", flush=True)
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
'''


def test_empty_imds_region_answer(netns, workdir, enid_user):
    """An empty region from IMDS is refused by name, and read without
    touching its (absent) buffer: in a sanitizer build, copying from it
    was a UBSan finding (memcpy from NULL)."""
    port = 18480
    server, slog = start_server(netns, workdir, "imds.py", EMPTY_REGION_IMDS,
                                port)
    try:
        conf = workdir / "cloudd.conf"
        conf.write_text(json.dumps({
            "user": enid_user, "cluster_name": "it",
            "cloud": {"imds_endpoint": "http://127.0.0.1:%d" % port,
                      "access_key_id": "AKIDENIDTEST",
                      "secret_access_key": "enid-test-secret",
                      "timeout_ms": 2000}}))
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("AWS_")}
        env["ENID_SECCOMP_DEBUG"] = "1"
        env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
        intent = {"id": 1, "op": "describe-subnets", "ids": ["subnet-1"],
                  "deadline_ms": 3000}
        out = subprocess.run(
            ["ip", "netns", "exec", netns,
             built("tests/integration/cloudd_drive"), "-c",
             built("cloudd/enid-cloudd"), "-f", str(conf), "-v", "-v",
             "-w", "10"], input=json.dumps(intent) + "\n",
            capture_output=True, text=True, env=env, timeout=60)
        assert "region asked" in slog.read_text()
        assert "IMDS region: empty answer" in out.stderr, out.stderr
        assert "runtime error" not in out.stderr, out.stderr
        lines = [json.loads(l) for l in out.stdout.splitlines()]
        assert [l["outcome"] for l in lines if l.get("id") == 1] != ["ok"]
        assert lines[-1] == {"event": "exit", "status": 0}, out.stderr
    finally:
        server.terminate()
        server.wait(10)


# ------------------------------------------------------------ signals

def test_broker_kills_a_stopped_child(start_enid):
    """A stopped child never reads the EOF on its channel: the broker's
    filter lets it end it with SIGKILL (its own children only)."""
    enid = start_enid()
    kids = wait_ready(enid)
    netd = kids["enid-netd"]
    os.kill(netd, signal.SIGSTOP)
    try:
        enid.proc.send_signal(signal.SIGTERM)
        rc = enid.proc.wait(timeout=10)
    finally:
        if not gone(netd):
            os.kill(netd, signal.SIGKILL)
    log = enid.text()
    assert rc == 0, log
    assert "enid-netd (pid %d) did not exit; killing it" % netd in log, log
    assert "SIGSYS" not in log and "seccomp" not in log, log
    assert wait_until(lambda: gone(netd), 5), proc_status(netd)


# ------------------------------------------------------------ syslog

SYSLOG_SERVER = r'''
import os, signal, socket, sys
# A stand-in syslogd on PATH: every datagram appended to LOG.  SIGUSR1
# restarts it the way a real one does: a new socket in place of the old,
# which leaves every connected client with a dead connection.
path, log = sys.argv[1], sys.argv[2]
def bind():
    if os.path.exists(path):
        os.unlink(path)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    os.chmod(path, 0o666)
    return s
restart = [False]
signal.signal(signal.SIGUSR1, lambda *a: restart.__setitem__(0, True))
s = bind()
s.settimeout(0.1)
with open(log, "a") as out:
    out.write("syslogd up\n"); out.flush()
    while True:
        if restart[0]:
            s.close(); s = bind(); s.settimeout(0.1); restart[0] = False
            out.write("syslogd restarted\n"); out.flush()
        try:
            out.write(s.recv(4096).decode(errors="replace") + "\n")
            out.flush()
        except socket.timeout:
            pass
'''

# In a mount namespace of its own: a scratch /dev holding only null and the
# stand-in syslogd's socket, so the machine's /dev/log is never touched.
SYSLOG_SETUP = r'''
set -e
mount --make-rprivate /
mount -t tmpfs -o mode=0755 enid-test-dev "$DEV"
touch "$DEV/null"
mount --bind /dev/null "$DEV/null"
mount --rbind "$DEV" /dev
"$PY" "$SERVER" /dev/log "$LOG" &
echo $! > "$WORK/syslogd.pid"
i=0
while [ ! -S /dev/log ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
ip netns exec "$NS" "$ENID" -f "$CONF" -L "$HELPERS"
wait
'''


def find_broker(conf):
    """The daemonized broker started with conf: its pid, or None."""
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"/enid") and \
                str(conf).encode() in argv:
            return int(p)
    return None


def test_syslog_connected_before_the_filters(netns, helper_dir, workdir,
                                             enid_user):
    """In daemon mode every process logs to syslog over a socket connected
    before its filter goes on.  When syslogd restarts, glibc's reconnect
    asks for a new unix socket, which every filter refuses with EACCES: the
    lines are dropped and the processes live on."""
    conf = write_config(workdir, enid_user)
    log = workdir / "syslog.txt"
    dev = workdir / "dev"
    dev.mkdir()
    server = workdir / "syslogd.py"
    server.write_text(SYSLOG_SERVER)
    env = dict(os.environ, DEV=str(dev), PY=PY, SERVER=str(server),
               LOG=str(log), WORK=str(workdir), NS=netns,
               ENID=built("broker/enid"), CONF=str(conf),
               HELPERS=str(helper_dir))
    env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
    env.pop("ENID_SECCOMP_DEBUG", None)     # the real filters: kill
    shell = subprocess.Popen(["unshare", "--mount", "sh", "-c",
                              SYSLOG_SETUP], env=env)
    broker = None

    def text():
        return log.read_text() if log.exists() else ""
    try:
        # Lines each process logs after its filter is on.
        want = [r"enid\[\d+\]: started as uid",
                r"enid-netd\[\d+\]: started as uid",
                r"enid-cloudd\[\d+\]: started as uid",
                r"enid\[\d+\]: all processes ready"]
        assert wait_until(lambda: all(re.search(w, text()) for w in want),
                          15), text()
        # daemon() has forked by now: this is the broker itself.
        broker = find_broker(conf)
        assert broker is not None
        kids = {}
        with open("/proc/%d/task/%d/children" % (broker, broker)) as f:
            for p in f.read().split():
                with open("/proc/%s/comm" % p) as c:
                    kids[c.read().strip()] = int(p)
        assert set(kids) == {"enid-netd", "enid-cloudd"}, kids

        pid = int((workdir / "syslogd.pid").read_text())
        os.kill(pid, signal.SIGUSR1)
        assert wait_until(lambda: "syslogd restarted" in text(), 5)
        before = text()
        # cloudd keeps logging (IMDS is unreachable here, it retries), and
        # the broker logs a client's request: every such line now meets a
        # dead connection and a refused reconnect.
        subprocess.run([built("ctl/enidctl"), "-s",
                        str(workdir / "run" / "ctl.sock"), "log-level",
                        "debug"], capture_output=True, timeout=10)
        time.sleep(2.0)
        for name, p in [("enid", broker), *kids.items()]:
            st = proc_status(p)
            assert not st["State"].startswith("Z"), (name, st["State"])
            assert st["Seccomp"] == "2", name
        after = text()[len(before):]
        assert re.search(r"enid(-netd|-cloudd)?\[", after) is None, after
    finally:
        if broker is not None and not gone(broker):
            os.kill(broker, signal.SIGTERM)
            wait_until(lambda: gone(broker), 5)
        try:
            os.kill(int((workdir / "syslogd.pid").read_text()),
                    signal.SIGTERM)
        except (FileNotFoundError, ProcessLookupError, ValueError):
            pass
        shell.wait(10)


# ------------------------------------------------------------ sanitizers

@pytest.mark.skipif(not sanitizer_build(),
                    reason="the test hooks exist in sanitizer builds only")
@pytest.mark.parametrize("proc", ["enid", "enid-netd", "enid-cloudd"])
@pytest.mark.parametrize("kind", ["UBSAN", "ASAN"])
def test_sanitizer_report_from_the_sandbox(start_enid, proc, kind):
    """A finding inside a sandboxed process prints its whole report under
    the real (killing) filter, not "killed by SIGSYS" half-way."""
    env = dict(os.environ)
    env.pop("ENID_SECCOMP_DEBUG", None)
    env["ASAN_OPTIONS"] = "detect_leaks=0"
    env["ENID_TEST_" + kind] = proc
    enid = start_enid(env=env)
    rc = enid.proc.wait(timeout=20)
    log = enid.text()
    assert rc != 0, log
    assert "test hook: ENID_TEST_%s" % kind in log, log
    if kind == "UBSAN":
        assert re.search(r"testhook_san\.c:\d+:\d+: runtime error: signed "
                         r"integer overflow", log), log
    else:
        assert "ERROR: AddressSanitizer: heap-buffer-overflow" in log, log
        # symbolized, so the stack was read under the filter
        assert re.search(r"#0 0x[0-9a-f]+ in testhook_sandboxed "
                         r"\S*testhook_san\.c:\d+", log), log
        assert "SUMMARY: AddressSanitizer" in log, log
    assert "SIGSYS" not in log, log
    assert "UBSan let" not in log and "ASan let" not in log, log


@pytest.mark.skipif(sanitizer_build(),
                    reason="a sanitizer build has the test hooks")
def test_no_test_hooks_in_release_build(start_enid):
    """A release build compiles no hook and passes no hook variable."""
    for rel in ("broker/enid", "netd/enid-netd", "cloudd/enid-cloudd"):
        with open(built(rel), "rb") as f:
            assert b"ENID_TEST_" not in f.read(), rel
    env = dict(os.environ, ENID_TEST_UBSAN="enid-netd",
               ENID_TEST_ASAN="enid-cloudd")
    enid = start_enid(env=env)
    wait_ready(enid)
    assert "test hook" not in enid.text()
