"""enidctl, first against a fake daemon: a unix socket in a temporary
directory that reads the request line and answers with exactly the bytes a
test gives.  enidctl must refuse anything but one JSON object on one line
with nothing after it, must never print a daemon string raw (control
characters, C1 controls and invalid UTF-8 reach the terminal escaped), and
exits 2 on usage errors without asking the daemon.

Then against enid itself in a node of the simulated VPC (PoolEnv): every
command in both formats, its exit codes, the table layout, a drain of an
unknown ENI, secrets never shown, and a user who is not an admin refused.
"""
import itertools
import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import tempfile
import threading

import pytest

from conftest import built

POOL = {"phase": "running", "free": 2, "assigned": 3, "cooling": 0,
        "other": 0, "enis": 2, "cloud_attached": 2, "pods": 3,
        "waiting": 0, "blocked": "none"}

STATUS = {
    "ok": True, "version": "0.1.0", "uptime_s": 5, "log_level": "info",
    "processes": [{"name": "enid", "pid": 10, "ready": True},
                  {"name": "enid-netd", "pid": 11, "ready": True},
                  {"name": "enid-cloudd", "pid": 12, "ready": False}],
    "instance": {"state": "unknown"},
    "pool": POOL,
}


class FakeDaemon:
    """Accepts one connection at a time, reads one request line, sends the
    answer bytes in a single send, then waits for the client to go (or,
    with linger off, closes at once)."""

    def __init__(self, directory):
        self.path = os.path.join(directory, "ctl.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(4)
        self.sock.settimeout(10)
        self.answer = b""
        self.linger = True
        self.requests = []
        self.thread = None

    def serve_once(self, answer):
        self.answer = answer
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        conn, _ = self.sock.accept()
        conn.settimeout(10)
        with conn:
            req = b""
            while not req.endswith(b"\n") and len(req) < 4096:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                req += chunk
            self.requests.append(req)
            conn.sendall(self.answer)
            if not self.linger:
                return
            try:
                while conn.recv(4096):     # until enidctl closes
                    pass
            except OSError:
                pass

    def close(self):
        self.sock.close()


@pytest.fixture
def daemon():
    d = tempfile.mkdtemp(prefix="enidctl-t-")
    fake = FakeDaemon(d)
    try:
        yield fake
    finally:
        fake.close()
        os.unlink(fake.path)
        os.rmdir(d)


# enidctl has no sandbox: in a sanitizer build LeakSanitizer can check
# it (the suite turns it off for the daemons, whose filters refuse what it
# needs).  Its exit-time scan costs three times the run itself, so it
# checks the runs that cover each way enidctl allocates and frees
# (leaks=True), not every run:
#   test_command_both_formats   every command, as text (its printer, its
#                               table, the memory stream) and as JSON
#   test_daemon_error_exits_1   the daemon's error, escaped and released
#   test_strict_answer          each malformed-answer exit, once per kind
#                               (after the answer and its JSON exist)
#   test_command_answers_checked  each printer's malformed-answer exit,
#                               the first case of each command
#   test_unterminated_answer    read_answer's exit, its buffer allocated
#   test_not_running_is_one_line_naming_the_socket  the exits before an
#                               answer, the request built
#   test_error_strings_escaped, test_status_strings_escaped: escaping, the
#                               first hostile string (strings replaced)
# Usage errors exit before enidctl allocates anything.  A leak makes
# LeakSanitizer's exit status (23), which each of those tests refuses.
CTL_ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
LEAK_ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=1")


def firsts(cases, key):
    """The first of cases for each key(case): the ones leak-checked."""
    seen = {}
    for c in cases:
        seen.setdefault(key(c), c)
    return list(seen.values())


def enidctl(daemon, answer, *args, leaks=False):
    daemon.serve_once(answer)
    r = subprocess.run([built("ctl/enidctl"), "-s", daemon.path, *args],
                       capture_output=True, timeout=15,
                       env=LEAK_ENV if leaks else CTL_ENV)
    daemon.thread.join(10)
    return r


def line(obj):
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def assert_no_raw_controls(data):
    """No C0 control but newline, no DEL, no C1 control, and valid UTF-8."""
    text = data.decode("utf-8")          # raises on invalid UTF-8
    for ch in text:
        code = ord(ch)
        assert ch == "\n" or not (code < 0x20 or 0x7f <= code <= 0x9f), \
            f"raw U+{code:04X} in {data!r}"


def test_good_answer(daemon):
    r = enidctl(daemon, line(STATUS), "status")
    assert r.returncode == 0, r.stderr
    assert daemon.requests == [b'{"op":"status"}\n']
    out = r.stdout.decode()
    assert "enid 0.1.0, up 5 s, log level info" in out
    assert "enid-cloudd" in out and "starting" in out


STRICT = [
    (line(STATUS) + b"garbage", "data after the answer line"),
    (line(STATUS) + b"\n", "data after the answer line"),
    (line(STATUS) + line(STATUS), "data after the answer line"),
    (line(STATUS)[:-1] + b" \n", "blanks around the JSON object"),
    (line(STATUS)[:-1] + b"\r\n", "blanks around the JSON object"),
    (b" " + line(STATUS), "blanks around the JSON object"),
    (line(STATUS)[:-1] + b"{}\n", "more than one JSON value"),
    (line(STATUS)[:-1] + b"x\n", "more than one JSON value"),
    (line(STATUS)[:-1] + b"\x00tail\n", "NUL byte in the answer line"),
    (b"[1]\n", "not a JSON object"),
    (b"{\"ok\": tru\n", "not JSON"),
    (b"\n", "not JSON"),
    (line({"ok": "yes"}), '"ok" missing or not a boolean'),
    (line({"ok": False, "code": "x"}), '"error" missing or not a string'),
]
STRICT_LEAKS = firsts(STRICT, lambda c: c[1])


@pytest.mark.parametrize("answer, why", STRICT)
def test_strict_answer(daemon, answer, why):
    for args in (("status",), ("-j", "status")):
        r = enidctl(daemon, answer, *args,
                    leaks=(answer, why) in STRICT_LEAKS)
        assert r.returncode == 1, (answer, args, r.stdout)
        assert r.stdout == b"", (answer, args, r.stdout)
        assert f"malformed answer: {why}".encode() in r.stderr, \
            (answer, args, r.stderr)


def test_unterminated_answer(daemon):
    daemon.linger = False           # close right after the bytes
    r = enidctl(daemon, line(STATUS)[:-1], "status", leaks=True)
    assert r.returncode == 1
    assert r.stdout == b""
    assert b"connection closed before a complete answer" in r.stderr, \
        r.stderr


# Hostile text in every string enidctl prints.
HOSTILE = [
    ("\x1b[2J\x1b]0;pwned\x07", "\\x1b[2J\\x1b]0;pwned\\x07"),   # ESC, BEL
    ("a\nb\rc\td", "a\\x0ab\\x0dc\\x09d"),
    ("del\x7f", "del\\x7f"),
    ("c1\u009b31m", "c1\\xc2\\x9b31m"),                           # CSI as C1
    ("back\\slash", "back\\\\slash"),
    ("caf\u00e9 \u65e5\u672c", "caf\u00e9 \u65e5\u672c"),         # printable
]


@pytest.mark.parametrize("evil, shown", HOSTILE)
def test_error_strings_escaped(daemon, evil, shown):
    r = enidctl(daemon, line({"ok": False, "code": "c-" + evil,
                              "error": "e-" + evil}), "status",
                leaks=evil == HOSTILE[0][0])
    assert r.returncode == 1
    assert_no_raw_controls(r.stderr)
    assert r.stderr.decode() == f"enidctl: c-{shown}: e-{shown}\n"


@pytest.mark.parametrize("evil, shown", HOSTILE)
def test_status_strings_escaped(daemon, evil, shown):
    ans = json.loads(json.dumps(STATUS))
    ans["version"] = evil
    ans["processes"][1]["name"] = evil
    ans["instance"] = {"state": "failed", "error": evil}
    r = enidctl(daemon, line(ans), "status", leaks=evil == HOSTILE[0][0])
    assert r.returncode == 0, r.stderr
    assert_no_raw_controls(r.stdout)
    out = r.stdout.decode()
    assert f"enid {shown}, up 5 s" in out
    assert f"instance     failed ({shown})" in out
    assert out.count(shown) == 3


def test_log_level_escaped(daemon):
    r = enidctl(daemon, line({"ok": True, "log_level": "\x1b[5mdebug"}),
                "log-level", "debug")
    assert r.returncode == 0
    assert r.stdout == b"log level: \\x1b[5mdebug\n"


def raw_string_answer(raw):
    """An answer whose version string holds the given bytes unescaped
    (invalid UTF-8 can't be written with json.dumps)."""
    return line({**STATUS, "version": "@@"}).replace(b"@@", raw)


@pytest.mark.parametrize("raw, shown", [
    (b"\xff\xfe", "\\xff\\xfe"),
    (b"\xc0\xaf", "\\xc0\\xaf"),                  # overlong '/'
    (b"\xed\xa0\x80", "\\xed\\xa0\\x80"),         # a surrogate
    (b"\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"),  # past U+10FFFF
    (b"\xe6\x97", "\\xe6\\x97"),                  # cut short
    (b"\xc2\x9b", "\\xc2\\x9b"),                  # C1 CSI, raw
    (b"\xe2\x82\xac", "\u20ac"),                  # a euro sign passes
    (b"\xf0\x9f\x98\x80", "\U0001F600"),          # four bytes pass
])
def test_invalid_utf8_escaped(daemon, raw, shown):
    r = enidctl(daemon, raw_string_answer(raw), "status")
    assert r.returncode == 0, r.stderr
    assert_no_raw_controls(r.stdout)
    assert f"enid {shown}, up" in r.stdout.decode()


@pytest.mark.parametrize("raw, value", [
    (b"\\u001b[31m", "\x1b[31m"),
    (b"\x7f", "\x7f"),
    (b"\xc2\x9b", "\u009b"),
    (b"\\u009b", "\u009b"),
    (b"\xff", "\ufffd"),
    (b"\xed\xa0\x80", "\ufffd\ufffd\ufffd"),
    (b"\xc3\xa9", "\u00e9"),
])
def test_json_output_escaped(daemon, raw, value):
    """-j prints JSON with no raw control: the same value, except bytes
    that are not UTF-8, which JSON can't carry (U+FFFD)."""
    r = enidctl(daemon, raw_string_answer(raw), "-j", "status")
    assert r.returncode == 0, r.stderr
    assert_no_raw_controls(r.stdout)
    assert json.loads(r.stdout)["version"] == value


# ---- usage errors: exit 2, and the daemon is never asked ----

def run_ctl(path, *args, timeout=30, prefix=(), leaks=False):
    return subprocess.run([*prefix, built("ctl/enidctl"), "-s", str(path),
                           *args], capture_output=True, timeout=timeout,
                          env=LEAK_ENV if leaks else CTL_ENV)


USAGE = [
    (), ("frobnicate",), ("show",), ("show", "bogus"), ("show", "pool", "x"),
    ("status", "x"), ("drain",), ("drain", "eni-1", "eni-2"), ("drain", ""),
    ("drain", "eni-\x1b[2J"), ("drain", "eni-" + "0" * 60),
    ("log-level",), ("log-level", "loud"), ("log-level", "debug", "x"),
    ("reconcile", "now"), ("metrics", "x"), ("-x", "status"), ("-s",),
]


@pytest.mark.parametrize("args", USAGE)
def test_usage_errors_exit_2(daemon, args):
    r = run_ctl(daemon.path, *args)
    assert r.returncode == 2, (args, r.stdout, r.stderr)
    assert r.stdout == b""
    assert b"usage: enidctl [-j] [-s socket] command [argument]" in r.stderr
    for cmd in (b"show limits", b"drain ENI", b"metrics", b"reconcile"):
        assert cmd in r.stderr
    daemon.sock.settimeout(0.2)
    with pytest.raises(socket.timeout):
        daemon.sock.accept()


def test_not_running_is_one_line_naming_the_socket():
    d = tempfile.mkdtemp(prefix="enidctl-t-")
    try:
        path = os.path.join(d, "ctl.sock")
        for args in (("status",), ("-j", "metrics"), ("show", "enis")):
            r = run_ctl(path, *args, leaks=True)
            assert r.returncode == 1, r
            assert r.stdout == b""
            lines = r.stderr.decode().splitlines()
            assert len(lines) == 1 and path in lines[0], lines
            assert "No such file" in lines[0] and "is enid running" in \
                lines[0]
        # A socket nobody listens on any more (enid died).
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path)
        s.close()
        r = run_ctl(path, "status", leaks=True)
        lines = r.stderr.decode().splitlines()
        assert r.returncode == 1 and r.stdout == b""
        assert len(lines) == 1 and path in lines[0] and \
            "Connection refused" in lines[0], lines
    finally:
        shutil.rmtree(d)


def test_daemon_error_exits_1(daemon):
    err = {"ok": False, "code": "unknown-eni",
           "error": "no ENI \"eni-0feedface\" in the pool"}
    for args in (("drain", "eni-0feedface"),
                 ("-j", "drain", "eni-0feedface")):
        r = enidctl(daemon, line(err), *args, leaks=True)
        assert r.returncode == 1
        assert r.stdout == b""
        assert r.stderr == b'enidctl: unknown-eni: no ENI "eni-0feedface" ' \
            b'in the pool\n'
        assert daemon.requests[-1] == \
            b'{"op":"drain","eni":"eni-0feedface"}\n'


# ---- each command against canned answers ----

ENI_A = {"id": "eni-0a1b2c3d4e5f67890", "state": "ready", "cause":
         "link found", "since_s": 30, "primary": True,
         "subnet": "subnet-0a1b2c3d4e5f67890", "mac": "02:00:00:00:00:01",
         "device_index": 0, "table": 0,
         "delete_on_termination_pending": False,
         "addresses": [{"ip": "10.0.0.5", "state": "assigned",
                        "container_id": "c" * 64},
                       {"ip": "10.0.0.6", "state": "free"},
                       {"ip": "10.0.0.7", "state": "cooling"}]}
ENI_B = {**ENI_A, "id": "eni-0fedcba9876543210", "state": "quarantined",
         "cause": "link 02:00:00:00:00:02 not found after 7 tries",
         "primary": False, "device_index": 1, "table": 101,
         "addresses": []}
ENI_NEW = {**ENI_A, "id": "", "state": "creating", "cause": "", "subnet": "",
           "device_index": -1, "addresses": []}
POD = {"container_id": "a" * 64, "ifname": "eth0", "namespace": "default",
       "name": "web-0", "ip": "10.0.0.5", "eni": ENI_A["id"],
       "state": "ready", "since": 1700000000}
SUBNET = {"id": "subnet-0a1b2c3d4e5f67890", "configured": True,
          "known": True, "cidr": "10.0.0.0/20", "az": "us-east-1a",
          "available": 4090, "inhibited_s": 0}
LIMITS = {"instance_type": "m5.large", "cloud_max_enis": 3,
          "cloud_ips_per_eni": 10, "config_max_enis": 0,
          "config_max_pods": 20, "max_enis": 3, "pod_ips_per_eni": 9,
          "primary_for_pods": True, "pod_enis": 3, "pod_capacity": 27,
          "max_pods": 20, "warm_ip_target": 0, "minimum_ip_target": 0,
          "warm_eni_target": 1}
# Prefix delegation's fields (an older enid sends none: shown above).
PFX = {"cidr": "10.0.0.16/28", "assigned": 3, "free": 13, "cooling": 0,
       "other": 0, "frozen": False, "frozen_s": 0, "removing": False}
ENI_PD = {**ENI_A, "prefixes": [
    PFX, dict(PFX, cidr="10.0.0.32/28", assigned=1, free=14, cooling=1,
              frozen=True, frozen_s=280),
    dict(PFX, cidr="10.0.0.48/28", assigned=0, free=0, other=16,
         frozen=True, frozen_s=12, removing=True)]}
POOL_PD = dict(POOL, prefix_delegation="on", prefixes=3, prefixes_frozen=2,
               prefixes_removing=1, prefix_inhibited=[
                   {"subnet": "subnet-0a1b2c3d4e5f67890",
                    "inhibited_s": 95},
                   {"subnet": "subnet-1", "inhibited_s": 86400}])
LIMITS_PD = dict(LIMITS, config_max_pods=0, max_pods=432,
                 prefix_delegation="on", prefixes_ok=True,
                 hypervisor="nitro", bare_metal=False,
                 max_pods_with_prefixes=432, prefix_capacity=432,
                 kubelet_max_pods=110,
                 kubelet_max_pods_why="m5.large has fewer than 30 vCPUs",
                 warm_prefix_target=1)
CONFIG = {"config_path": "/etc/enid/enid.conf", "static_credentials": True,
          "config": {"user": "enid", "admin_group": "",
                     "cloud": {"region": "us-east-1",
                               "rate": {"mutating": {"capacity": 10}}},
                     "subnets": [{"id": "subnet-0a1b2c3d4e5f67890",
                                  "security_groups": ["sg-1", "sg-2"]}],
                     "leak_gc": {"enabled": True}}}
METRICS_TEXT = ("# HELP enid_pods Pod attachments holding an address\n"
                "# TYPE enid_pods gauge\nenid_pods 3\n")
METRICS = {"text": METRICS_TEXT, "metrics": [
    {"name": "enid_pods", "type": "gauge",
     "help": "Pod attachments holding an address",
     "samples": [{"name": "enid_pods", "labels": {}, "value": 3}]}]}

SNAT_STATE = {"enabled": True, "random_fully": True, "in_place": True,
              "to": "10.0.0.10", "primary_ifindex": 2,
              "primary_link": "eth0", "connmark": 128,
              "untranslated": ["10.0.0.0/16", "192.0.2.0/24"],
              "replaced": 1, "refused": 0, "translated": 42, "marked": 7,
              "message": "table enid in place", "differs": None}
SNAT_SYNC = {"counts": {"ok": 3, "refused": 1, "failed": 0,
                        "no-answer": 0},
             "to": "10.0.0.10", "result": "ok", "message": "in place",
             "s_ago": 4}
STATUS_SNAT = {"enabled": True, "sync": SNAT_SYNC, "in_place": True,
               "translated": 42, "marked": 7, "state_s_ago": 4}

CANNED = [
    (("show", "pool"), {"op": "show", "what": "pool"},
     {"pool": dict(POOL, blocked="subnet-full", last_failure="subnet full",
                   last_failure_code="subnet-full")},
     ["pool         running, 2 ENIs (2 attached in the cloud), 3 pods, 0 "
      "waiting", "addresses    2 free, 3 assigned, 0 cooling, 0 other",
      "growth       blocked: subnet-full", "last failure (subnet-full)",
      "    subnet full"]),
    (("show", "enis"), {"op": "show", "what": "enis"},
     {"enis": [ENI_A, ENI_B, ENI_NEW]},
     ["ENI                   STATE       DEV FREE USED COOL SUBNET",
      "eni-0a1b2c3d4e5f67890 ready         0    1    1    1 "
      "subnet-0a1b2c3d4e5f67890",
      "eni-0fedcba9876543210 quarantined   1    0    0    0 "
      "subnet-0a1b2c3d4e5f67890",
      "-                     creating      -    0    0    0 -",
      "eni-0fedcba9876543210, quarantined for 30 s:",
      "    link 02:00:00:00:00:02 not found after 7 tries"]),
    (("show", "pods"), {"op": "show", "what": "pods"},
     {"pods": [POD, dict(POD, container_id="b" * 64, namespace="",
                         name="", state="lost", lost_why="ENI gone",
                         ip="10.0.0.16")]},
     ["CONTAINER    IF   IP        ENI                   STATE POD",
      "aaaaaaaaaaaa eth0 10.0.0.5  eni-0a1b2c3d4e5f67890 ready default/web-0",
      "bbbbbbbbbbbb eth0 10.0.0.16 eni-0a1b2c3d4e5f67890 lost  -",
      "bbbbbbbbbbbb, lost:", "    ENI gone"]),
    (("show", "subnets"), {"op": "show", "what": "subnets"},
     {"subnets": [SUBNET, dict(SUBNET, id="subnet-1", known=False,
                               configured=False, available=0,
                               inhibited_s=590)]},
     ["SUBNET                   AZ         CIDR        FREE PODS RESTING",
      "subnet-0a1b2c3d4e5f67890 us-east-1a 10.0.0.0/20 4090 yes  -",
      "subnet-1                 ?          ?              0 no   590s"]),
    (("show", "config"), {"op": "show", "what": "config"}, CONFIG,
     ["from /etc/enid/enid.conf"] + ["%-29s %s" % kv for kv in [
         ("KEY", "VALUE"), ("user", "enid"), ("admin_group", '""'),
         ("cloud.region", "us-east-1"), ("cloud.rate.mutating.capacity", "10"),
         ("subnets[0].id", "subnet-0a1b2c3d4e5f67890"),
         ("subnets[0].security_groups[0]", "sg-1"),
         ("subnets[0].security_groups[1]", "sg-2"),
         ("leak_gc.enabled", "true")]] + [
      "cloud.access_key_id, secret_access_key, session_token: set (never "
      "shown)"]),
    (("show", "limits"), {"op": "show", "what": "limits"},
     {"limits": LIMITS},
     ["instance type      m5.large",
      "ENIs               3 (the instance's limit 3; pool.max_enis not set)",
      "addresses per ENI  10: 9 for pods, one the ENI's own",
      "ENIs for pods      3 (the primary included)",
      "pod addresses      27 (3 ENIs x 9)",
      "max pods           20 (pool.max_pods 20)"]),
    (("show", "pool"), {"op": "show", "what": "pool"}, {"pool": POOL_PD},
     ["addresses    2 free, 3 assigned, 0 cooling, 0 other",
      "prefixes     3 held (/28), 2 frozen, 1 being given back",
      "no prefix    subnet-0a1b2c3d4e5f67890: single addresses there for "
      "95 s",
      "             subnet-1: single addresses there for 86400 s",
      "growth       not blocked"]),
    # IPv6's line: with ip_family dual or ipv6, or IPv6 pods left after a
    # switch to ipv4; none for an ipv4 pool without them (POOL_PD above
    # has no such field, as an older enid's answer).
    (("show", "pool"), {"op": "show", "what": "pool"},
     {"pool": dict(POOL, ip_family="dual", pods_ipv6=3, ipv6_prefixes=2)},
     ["addresses    2 free, 3 assigned, 0 cooling, 0 other",
      "ipv6         3 pods with an IPv6 address, 2 ENIs with a /80 "
      "(ip_family dual)"]),
    (("show", "pool"), {"op": "show", "what": "pool"},
     {"pool": dict(POOL, ip_family="ipv4", pods_ipv6=1, ipv6_prefixes=1)},
     ["ipv6         1 pods with an IPv6 address, 1 ENIs with a /80 "
      "(ip_family ipv4)"]),
    (("show", "pool"), {"op": "show", "what": "pool"},
     {"pool": dict(POOL_PD, prefix_delegation="unsupported", prefixes=0,
                   prefixes_frozen=0, prefixes_removing=0,
                   prefix_inhibited=[])},
     ["prefixes     asked for, but the instance cannot hold them: single "
      "addresses", "growth       not blocked"]),
    (("show", "enis"), {"op": "show", "what": "enis"},
     {"enis": [ENI_PD, ENI_B]},
     ["ENI                   STATE       DEV FREE USED COOL SUBNET",
      "ENI                   PREFIX       FREE USED COOL OTHER NOTE",
      "eni-0a1b2c3d4e5f67890 10.0.0.16/28   13    3    0     0 -",
      "eni-0a1b2c3d4e5f67890 10.0.0.32/28   14    1    1     0 frozen 280s",
      "eni-0a1b2c3d4e5f67890 10.0.0.48/28    0    0    0    16 frozen 12s, "
      "giving back"]),
    (("show", "subnets"), {"op": "show", "what": "subnets"},
     {"subnets": [dict(SUBNET, prefix_inhibited_s=0),
                  dict(SUBNET, id="subnet-1", prefix_inhibited_s=86400)]},
     ["SUBNET                   AZ         CIDR        FREE PODS RESTING",
      "subnet-1: refused a /28; single addresses there for 86400 s"]),
    (("show", "limits"), {"op": "show", "what": "limits"},
     {"limits": LIMITS_PD},
     ["pod addresses      27 (3 ENIs x 9)",
      "prefixes           on: /28s of 16 addresses (hypervisor nitro)",
      "pods in prefixes   432 (3 ENIs x 9 prefixes x 16)",
      "kubelet max pods   110 (m5.large has fewer than 30 vCPUs)",
      "max pods           432 (in prefixes; pool.max_pods not set)",
      "warm targets       warm_ip_target 0, minimum_ip_target 0,",
      "                   warm_prefix_target 1 (warm_eni_target unused)"]),
    (("show", "limits"), {"op": "show", "what": "limits"},
     {"limits": dict(LIMITS_PD, instance_type="m4.large", max_pods=20,
                     config_max_pods=20, prefix_delegation="unsupported",
                     prefixes_ok=False, hypervisor="xen")},
     ["prefixes           asked for, but the instance can't hold them:",
      "                   single addresses (hypervisor xen)",
      "max pods           20 (pool.max_pods 20)",
      "warm targets       warm_ip_target 0, minimum_ip_target 0, "
      "warm_eni_target 1"]),
    (("show", "limits"), {"op": "show", "what": "limits"},
     {"limits": dict(LIMITS_PD, instance_type="m5.metal", max_pods=735,
                     prefix_delegation="off", hypervisor="",
                     bare_metal=True, pod_enis=15, pod_ips_per_eni=49,
                     max_pods_with_prefixes=11760, prefix_capacity=2048,
                     kubelet_max_pods=250, kubelet_max_pods_why="m5.metal "
                     "has 30 vCPUs or more")},
     ["prefixes           off; the instance could hold them (bare metal)",
      "pods in prefixes   11760 (15 ENIs x 49 prefixes x 16);",
      "                   enid holds 2048 of them",
      "kubelet max pods   250 (m5.metal has 30 vCPUs or more)",
      "max pods           735 (pool.max_pods not set)"]),
    (("show", "snat"), {"op": "show", "what": "snat"},
     {"snat": SNAT_STATE, "sync": SNAT_SYNC},
     ["snat         on: to 10.0.0.10 via eth0 (ifindex 2), ports "
      "random-fully",
      "table        in place; written whole 1 time; 0 syncs refused",
      "untranslated 10.0.0.0/16", "             192.0.2.0/24",
      "translated   42 connections",
      "connmark     0x80: 7 connections marked on arrival on the primary "
      "link",
      "last sync    ok, 4 s ago (3 ok, 1 refused, 0 failed, 0 unanswered)",
      "enid-netd:", "    table enid in place"]),
    (("show", "snat"), {"op": "show", "what": "snat"},
     {"snat": dict(SNAT_STATE, enabled=False, random_fully=False, to=None,
                   in_place=False, untranslated=[], replaced=2, refused=1,
                   translated=0, message="", differs="table ip enid absent"),
      "sync": {"counts": {"ok": 0, "refused": 0, "failed": 0,
                          "no-answer": 0}}},
     ["snat         off (a NAT gateway translates); NodePort reply marks "
      "only",
      "table        NOT IN PLACE; written whole 2 times; 1 sync refused",
      "differs:", "    table ip enid absent",
      "untranslated (none)", "last sync    none yet"]),
    (("status",), {"op": "status"},
     {k: v for k, v in dict(STATUS, snat=STATUS_SNAT).items() if k != "ok"},
     ["snat         on, table in place, 42 translated, 7 marked",
      "snat sync    ok, 4 s ago (3 ok, 1 refused, 0 failed, 0 unanswered)"]),
    (("status",), {"op": "status"},
     {k: v for k, v in dict(STATUS, snat=dict(
         STATUS_SNAT, in_place=None, translated=None, marked=None,
         sync=dict(SNAT_SYNC, result="refused",
                   message="10.0.0.99 is not an address of eth0"))).items()
      if k != "ok"},
     ["snat         on, table not read yet",
      "snat sync    refused, 4 s ago (3 ok, 1 refused, 0 failed, 0 "
      "unanswered)", "    10.0.0.99 is not an address of eth0"]),
    (("reconcile",), {"op": "reconcile"}, {"drifts_fixed": 1},
     ["reconciled: 1 drift fixed"]),
    (("drain", "eni-0fedcba9876543210"),
     {"op": "drain", "eni": "eni-0fedcba9876543210"},
     {"eni": "eni-0fedcba9876543210", "state": "draining"},
     ["eni-0fedcba9876543210: draining; released once no pod is left on "
      "it"]),
    (("log-level", "warning"), {"op": "log-level", "level": "warning"},
     {"log_level": "warning"}, ["log level: warning"]),
    (("metrics",), {"op": "metrics"}, METRICS, METRICS_TEXT.splitlines()),
]


@pytest.mark.parametrize("args, sent, answer, shown", CANNED,
                         ids=[" ".join(c[0]) for c in CANNED])
def test_command_both_formats(daemon, args, sent, answer, shown):
    ans = {"ok": True, **answer}
    r = enidctl(daemon, line(ans), *args, leaks=True)
    assert r.returncode == 0, r.stderr
    assert r.stderr == b""
    assert json.loads(daemon.requests[-1]) == sent
    out = r.stdout.decode()
    if args == ("metrics",):
        assert out == METRICS_TEXT        # as it is, for a scraper
    for want in shown:
        assert want in out.splitlines(), (want, out)
    assert all(len(x) <= 80 for x in out.splitlines()), out
    r = enidctl(daemon, line(ans), "-j", *args, leaks=True)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == ans


# Every printed string of each table, hostile (addresses and CIDRs are
# refused outright instead: CHECKED).
EVIL = "\x1b]0;owned\x07\u009b2J"
EVIL_SHOWN = "\\x1b]0;owned\\x07\\xc2\\x9b2J"


@pytest.mark.parametrize("args, answer", [
    (("show", "enis"), {"enis": [dict(ENI_B, id=EVIL, state=EVIL,
                                      subnet=EVIL, cause=EVIL)]}),
    (("show", "pods"), {"pods": [dict(POD, container_id=EVIL, ifname=EVIL,
                                      eni=EVIL, state=EVIL,
                                      namespace=EVIL, name=EVIL)]}),
    (("show", "subnets"), {"subnets": [dict(SUBNET, id=EVIL, az=EVIL)]}),
    (("show", "config"), {**CONFIG, "config_path": EVIL,
                          "config": {EVIL: EVIL, "a": {"b": [EVIL]}}}),
    (("show", "limits"), {"limits": dict(LIMITS, instance_type=EVIL)}),
    (("show", "limits"), {"limits": dict(LIMITS_PD, hypervisor=EVIL)}),
    (("show", "limits"), {"limits": dict(LIMITS_PD,
                                         kubelet_max_pods_why=EVIL)}),
    (("show", "pool"), {"pool": dict(POOL_PD, prefix_inhibited=[
        {"subnet": EVIL, "inhibited_s": 3}])}),
    (("show", "subnets"), {"subnets": [dict(SUBNET, id=EVIL,
                                            prefix_inhibited_s=3)]}),
    (("show", "pool"), {"pool": dict(POOL, phase=EVIL, blocked=EVIL,
                                     last_failure=EVIL,
                                     last_failure_code=EVIL)}),
    (("show", "pool"), {"pool": dict(POOL, ip_family=EVIL, pods_ipv6=1,
                                     ipv6_prefixes=1)}),
    (("show", "snat"), {"snat": dict(SNAT_STATE, primary_link=EVIL,
                                     message=EVIL),
                        "sync": SNAT_SYNC}),
    (("show", "snat"), {"snat": dict(SNAT_STATE, in_place=False,
                                     differs=EVIL),
                        "sync": SNAT_SYNC}),
    (("show", "snat"), {"snat": SNAT_STATE, "sync": dict(SNAT_SYNC,
                                                         result=EVIL)}),
    (("status",), {k: v for k, v in dict(STATUS, snat=dict(
        STATUS_SNAT, sync=dict(SNAT_SYNC, result=EVIL,
                               message=EVIL))).items() if k != "ok"}),
    (("drain", "eni-1"), {"eni": EVIL, "state": EVIL}),
])
def test_table_strings_escaped(daemon, args, answer):
    r = enidctl(daemon, line({"ok": True, **answer}), *args)
    assert r.returncode == 0, r.stderr
    assert_no_raw_controls(r.stdout)
    assert EVIL_SHOWN[:10] in r.stdout.decode()


CHECKED = [
    (("show", "enis"), {"enis": [{k: v for k, v in ENI_A.items()
                                  if k != "state"}]},
     '"state" missing or not a string'),
    (("show", "enis"), {"enis": {}}, '"enis" missing or not a array'),
    (("show", "enis"), {"enis": [5]}, "ENI entry is not an object"),
    (("show", "pods"), {"pods": [dict(POD, ip=None)]},
     '"ip" missing or not a string'),
    # Addresses and CIDRs are checked as the daemon checks what it is
    # sent (common/addr), whichever family.
    (("show", "pods"), {"pods": [dict(POD, ip="10.0.0.256")]},
     '"ip" is not an address'),
    (("show", "pods"), {"pods": [dict(POD, ip="10.0.0.9\x1b[2J")]},
     '"ip" is not an address'),
    (("show", "pods"), {"pods": [dict(POD, ip="2001:DB8::1")]},
     '"ip" is not an address'),
    (("show", "enis"), {"enis": [dict(ENI_A, addresses=[
        {"ip": "fe80::1:2:3:4:5:6:7", "state": "free"}])]},
     '"ip" is not an address'),
    (("show", "enis"), {"enis": [dict(ENI_A, prefixes=[
        dict(PFX, cidr="10.0.0.17/28")])]},
     '"cidr" 10.0.0.17/28 has host bits set'),
    (("show", "subnets"), {"subnets": [dict(SUBNET, cidr="10.0.0.0")]},
     '"cidr" is not a CIDR'),
    (("show", "snat"), {"snat": dict(SNAT_STATE, to="eth0"),
                        "sync": SNAT_SYNC}, '"to" is not an address'),
    (("show", "snat"), {"snat": dict(SNAT_STATE, untranslated=[
        "198.18.0.0/33"]), "sync": SNAT_SYNC},
     '"untranslated" is not a CIDR'),
    (("show", "subnets"), {"subnets": [dict(SUBNET, available=-1)]},
     '"available" is negative'),
    (("show", "limits"), {"limits": {}}, '"instance_type" missing'),
    (("show", "limits"), {"limits": dict(LIMITS_PD, hypervisor=None)},
     '"hypervisor" missing or not a string'),
    (("show", "limits"), {"limits": {k: v for k, v in LIMITS_PD.items()
                                     if k != "kubelet_max_pods"}},
     '"kubelet_max_pods" missing'),
    (("show", "enis"), {"enis": [dict(ENI_A, prefixes={})]},
     '"prefixes" missing or not a array'),
    (("show", "enis"), {"enis": [dict(ENI_A, prefixes=[
        {k: v for k, v in PFX.items() if k != "frozen"}])]},
     '"frozen" missing or not a boolean'),
    (("show", "enis"), {"enis": [dict(ENI_A, prefixes=[
        dict(PFX, other=-1)])]}, '"other" is negative'),
    (("show", "enis"), {"enis": [dict(ENI_A, prefixes=[3])]},
     "prefix entry is not an object"),
    (("show", "pool"), {"pool": dict(POOL_PD, prefixes="3")},
     '"prefixes" missing or not a int'),
    (("show", "pool"), {"pool": dict(POOL, ip_family="dual",
                                     pods_ipv6=-1, ipv6_prefixes=1)},
     '"pods_ipv6" is negative'),
    (("show", "pool"), {"pool": dict(POOL, ip_family="ipv6",
                                     ipv6_prefixes=1)},
     '"pods_ipv6" missing'),
    (("show", "pool"), {"pool": dict(POOL, ip_family=6, pods_ipv6=1,
                                     ipv6_prefixes=1)},
     '"ip_family" missing or not a string'),
    (("show", "pool"), {"pool": dict(POOL_PD, prefix_inhibited=[
        {"subnet": "subnet-1"}])}, '"inhibited_s" missing'),
    (("show", "subnets"), {"subnets": [dict(SUBNET,
                                            prefix_inhibited_s=-5)]},
     '"prefix_inhibited_s" is negative'),
    (("show", "config"), {"config": {}, "config_path": "/x"},
     '"static_credentials" missing or not a boolean'),
    (("show", "snat"), {"snat": SNAT_STATE}, '"sync" missing'),
    (("show", "snat"), {"snat": {k: v for k, v in SNAT_STATE.items()
                                 if k != "in_place"}, "sync": SNAT_SYNC},
     '"in_place" missing or not a boolean'),
    (("show", "snat"), {"snat": dict(SNAT_STATE, to=5), "sync": SNAT_SYNC},
     '"to" missing or not a string'),
    (("show", "snat"), {"snat": {k: v for k, v in SNAT_STATE.items()
                                 if k != "differs"}, "sync": SNAT_SYNC},
     '"differs" missing or not a string'),
    (("show", "snat"), {"snat": dict(SNAT_STATE, differs="chain x"),
                        "sync": SNAT_SYNC},
     '"differs" must be given exactly when the table is not in place'),
    (("show", "snat"), {"snat": dict(SNAT_STATE, in_place=False),
                        "sync": SNAT_SYNC},
     '"differs" must be given exactly when the table is not in place'),
    (("show", "snat"), {"snat": dict(SNAT_STATE, translated=-1),
                        "sync": SNAT_SYNC}, '"translated" is negative'),
    (("show", "snat"), {"snat": dict(SNAT_STATE, untranslated=[16]),
                        "sync": SNAT_SYNC},
     "an untranslated CIDR is not a string"),
    (("show", "snat"), {"snat": dict(SNAT_STATE, connmark="0x80"),
                        "sync": SNAT_SYNC}, '"connmark" missing or not a int'),
    (("show", "snat"), {"snat": SNAT_STATE, "sync": dict(
        SNAT_SYNC, counts={"ok": 1, "refused": 0, "failed": 0})},
     '"no-answer" missing'),
    (("status",), {k: v for k, v in dict(STATUS, snat=dict(
        STATUS_SNAT, in_place="yes")).items() if k != "ok"},
     '"in_place" missing or not a boolean'),
    (("status",), {k: v for k, v in dict(STATUS, snat=dict(
        STATUS_SNAT, sync={})).items() if k != "ok"}, '"counts" missing'),
    (("reconcile",), {"drifts_fixed": "1"},
     '"drifts_fixed" missing or not a int'),
    (("metrics",), {"text": "enid_pods 1\n"}, '"metrics" missing'),
    (("metrics",), {"text": "enid_pods\x1b[2J 1\n", "metrics": []},
     "control character or invalid UTF-8 in the metrics text"),
    (("metrics",), {"text": "enid_pods 1", "metrics": []},
     "the metrics text does not end with a newline"),
]
CHECKED_LEAKS = firsts(CHECKED, lambda c: c[0])


@pytest.mark.parametrize("args, answer, why", CHECKED)
def test_command_answers_checked(daemon, args, answer, why):
    r = enidctl(daemon, line({"ok": True, **answer}), *args,
                leaks=(args, answer, why) in CHECKED_LEAKS)
    assert r.returncode == 1, r.stdout
    assert r.stdout == b""
    assert f"malformed answer: {why}".encode() in r.stderr, r.stderr


# ---- against enid in a node of the simulated VPC ----

_seq = itertools.count()


@pytest.fixture(scope="module")
def live(enid_user):
    """One enid for the module's live tests: a node with small limits
    (4 ENIs of 4 addresses), static credentials in the configuration
    (which show config must never print), three pods."""
    from poolenv import PoolEnv
    wd = pathlib.Path(tempfile.mkdtemp(prefix="enid-ctl-"))
    os.chmod(wd, 0o755)
    helpers = wd / "helpers"
    helpers.mkdir()
    for rel in ("netd/enid-netd", "cloudd/enid-cloudd"):
        os.symlink(built(rel), helpers / os.path.basename(rel))
    env = PoolEnv(wd, enid_user, helpers,
                  prefix="ec%d%d" % (os.getpid() % 10000, next(_seq)),
                  sim_args=("--ip-limit", "4", "--eni-limit", "4"),
                  pool={"add_timeout_s": 10, "ip_cooldown_s": 0},
                  reconcile_interval_s=3600)
    try:
        creds = env.ep["static_credentials"]
        env.conf_extra["cloud"].update(creds)
        from conftest import write_config
        env.conf = write_config(wd, enid_user, **env.conf_extra)
        env.secrets = [creds["access_key_id"], creds["secret_access_key"]]
        env.start()
        for i in range(3):
            a, _ = env.add("%064x" % (0xc0ffee00 + i),
                           k8s_namespace="default", k8s_name="web-%d" % i)
            assert a["ok"], a
        settle(env)
        yield env
    finally:
        env.stop()
        shutil.rmtree(wd, ignore_errors=True)


def settle(env, timeout=30):
    """Wait until the pool stops changing: every ENI ready and the counts
    the same twice, half a second apart, so that two commands in a row
    see the same pool."""
    last = [None]

    def still():
        enis = env.show("enis")
        now = (json.dumps(env.show("pool"), sort_keys=True),
               sorted((e["id"], e["state"], len(e["addresses"]))
                      for e in enis))
        same = now == last[0] and all(e["state"] == "ready" for e in enis)
        last[0] = now
        return same
    env.wait(still, timeout, "a settled pool", step=0.5)


def ctl(env, *args, prefix=()):
    return run_ctl(env.ctl_sock, *args, prefix=prefix)


def column_starts(header):
    return [m.start() for m in re.finditer(r"\S+", header)]


def test_live_every_command_both_formats(live):
    cmds = [("status",), ("show", "pool"), ("show", "enis"),
            ("show", "pods"), ("show", "subnets"), ("show", "config"),
            ("show", "limits"), ("show", "snat"), ("reconcile",),
            ("log-level", "debug"), ("metrics",)]
    for args in cmds:
        t = ctl(live, *args)
        j = ctl(live, "-j", *args)
        assert t.returncode == 0 and j.returncode == 0, (args, t, j)
        assert t.stderr == b"" and j.stderr == b"", (args, t, j)
        assert_no_raw_controls(t.stdout)
        text = t.stdout.decode()
        ans = json.loads(j.stdout)
        assert ans["ok"] is True
        for secret in live.secrets:
            assert secret not in text and secret not in j.stdout.decode()
        if args != ("metrics",):
            long = [x for x in text.splitlines() if len(x) > 80]
            assert not long, (args, long)
        what = args[-1]
        if args == ("status",):
            assert text.startswith("enid %s, up " % ans["version"])
            assert re.search(r"^snat +on, table (in place|not read yet)",
                             text, re.M), text
            for p in ans["processes"]:
                assert re.search(r"^%s +%d ready$" % (p["name"], p["pid"]),
                                 text, re.M), text
        elif what == "pool":
            p = ans["pool"]
            assert ("addresses    %d free, %d assigned, %d cooling, %d "
                    "other" % (p["free"], p["assigned"], p["cooling"],
                               p["other"])) in text.splitlines()
        elif what == "enis":
            lines = text.splitlines()
            starts = column_starts(lines[0])
            assert lines[0].split() == ["ENI", "STATE", "DEV", "FREE",
                                        "USED", "COOL", "SUBNET"]
            for e in ans["enis"]:
                row = [x for x in lines if x.startswith(e["id"] + " ")]
                assert len(row) == 1, (e["id"], text)
                assert row[0][starts[1]:].split()[0] == e["state"]
                assert row[0][starts[6]:] == e["subnet"]
        elif what == "pods":
            lines = text.splitlines()
            assert len(lines) == 1 + len(ans["pods"]) == 4, text
            for p in ans["pods"]:
                assert re.search(r"^%s +eth0 +%s +%s +ready +%s/%s$" % (
                    p["container_id"][:12], re.escape(p["ip"]), p["eni"],
                    p["namespace"], p["name"]), text, re.M), text
        elif what == "subnets":
            for s in ans["subnets"]:
                assert re.search(r"^%s +%s +%s +%d yes" % (
                    s["id"], s["az"], re.escape(s["cidr"]),
                    s["available"]), text, re.M), text
        elif what == "config":
            c = ans["config"]
            assert ans["static_credentials"] is True
            assert "access_key_id" not in c["cloud"]
            assert "secret_access_key" not in c["cloud"]
            assert "set (never shown)" in text
            assert re.search(r"^pool\.add_timeout_s +10$", text, re.M)
            assert re.search(r"^cloud\.ec2_endpoint +http://198\.18\.0\.1/$",
                             text, re.M)
        elif what == "snat":
            sn = ans["snat"]
            assert sn["enabled"] is True and sn["in_place"] is True, sn
            assert sn["to"] == live.node["primary_ip"], sn
            assert ("snat         on: to %s via %s (ifindex %d), ports "
                    "random-fully" % (sn["to"], sn["primary_link"],
                                      sn["primary_ifindex"])
                    ) in text.splitlines(), text
            assert "table        in place; " in text
        elif what == "limits":
            lim = ans["limits"]
            assert (lim["max_enis"], lim["pod_ips_per_eni"],
                    lim["pod_capacity"]) == (4, 3, 12), lim
            assert "pod addresses      12 (4 ENIs x 3)" in text
        elif what == "reconcile":
            assert re.fullmatch(r"reconciled: \d+ drifts? fixed\n", text)
            assert isinstance(ans["drifts_fixed"], int)
        elif what == "debug":
            assert text == "log level: debug\n"
        elif what == "metrics":
            assert text.startswith("# HELP enid_")
            assert "\nenid_pods 3\n" in text
            assert any(f["name"] == "enid_pods" for f in ans["metrics"])


def test_live_snat(live):
    """show snat is netd's table as it reads it back (every field of
    NETD_SNAT_STATE, CIDRs as strings), status says the same in a line,
    show config has the snat keys, and each reconcile is one more sync.
    Needs enid-netd's NETD_SNAT and NETD_DUMP_SNAT (branch nft)."""
    ans = json.loads(ctl(live, "-j", "show", "snat").stdout)
    sn = ans["snat"]
    assert set(sn) == {"enabled", "random_fully", "in_place", "to",
                       "primary_ifindex", "primary_link", "connmark",
                       "untranslated", "replaced", "refused", "translated",
                       "marked", "message", "differs"}, sn
    assert (sn["enabled"], sn["random_fully"], sn["in_place"],
            sn["differs"]) == (True, True, True, None), sn
    assert sn["to"] == live.node["primary_ip"]
    assert sn["primary_ifindex"] > 0 and sn["primary_link"], sn
    assert sn["connmark"] == 0x80
    conf = json.loads(ctl(live, "-j", "show", "config").stdout)["config"]
    # The VPC's CIDRs first, then snat.exclude, as strings.
    vpc = json.loads(ctl(live, "-j", "status").stdout)["instance"][
        "vpc_cidrs"]
    assert sn["untranslated"] == vpc + conf["snat"]["exclude"], sn
    assert sn["replaced"] >= 1 and sn["refused"] == 0, sn
    assert conf["snat"]["enabled"] is True
    assert conf["snat"]["random_fully"] is True
    assert conf["routing"]["connmark"] == 128
    text = ctl(live, "show", "config").stdout.decode()
    assert re.search(r"^snat\.enabled +true$", text, re.M), text
    assert re.search(r"^snat\.random_fully +true$", text, re.M), text
    assert re.search(r"^routing\.connmark +128$", text, re.M), text

    st = json.loads(ctl(live, "-j", "status").stdout)["snat"]
    ok = st["sync"]["counts"]["ok"]
    assert ok >= 1 and st["sync"]["result"] == "ok", st
    assert st["sync"]["to"] == live.node["primary_ip"], st
    assert live.reconcile()["ok"]

    def synced_again():
        s = json.loads(ctl(live, "-j", "status").stdout)["snat"]
        return s["sync"]["counts"]["ok"] >= ok + 1 and s
    st = live.wait(synced_again, 15, "a sync at the reconcile", step=0.2)
    assert st["in_place"] is True, st
    assert st["sync"]["counts"]["refused"] == 0, st
    text = ctl(live, "status").stdout.decode()
    assert re.search(r"^snat +on, table in place, \d+ translated, \d+ "
                     r"marked$", text, re.M), text
    assert re.search(r"^snat sync +ok, \d+ s ago \(\d+ ok, 0 refused, ",
                     text, re.M), text


def test_live_reconcile_waits_for_the_run(live):
    """reconcile answers when a run is done, with what it fixed: an address
    taken away behind enid's back is one drift."""
    free = [(e["id"], a["ip"]) for e in live.show("enis")
            if e["state"] == "ready" for a in e["addresses"]
            if a["state"] == "free"]
    assert free, live.show("enis")
    eni, ip = free[0]
    live.ec2().unassign_private_ip_addresses(NetworkInterfaceId=eni,
                                              PrivateIpAddresses=[ip])
    r = ctl(live, "reconcile")
    assert r.returncode == 0, r.stderr
    n = int(re.fullmatch(rb"reconciled: (\d+) drifts? fixed\n",
                         r.stdout).group(1))
    assert n >= 1, r.stdout
    assert live.enid.wait_log("%s: %s is no longer assigned by the cloud"
                              % (eni, ip)), live.enid.text()


def test_live_refuses_who_is_not_admin(live):
    nobody = ("setpriv", "--reuid", "nobody", "--regid", "nogroup",
              "--clear-groups")
    for args in (("status",), ("-j", "show", "config"), ("metrics",)):
        r = ctl(live, *args, prefix=nobody)
        assert r.returncode == 1, r
        assert r.stdout == b""
        lines = r.stderr.decode().splitlines()
        assert len(lines) == 1 and str(live.ctl_sock) in lines[0] and \
            "Permission denied" in lines[0], lines
    # Past the file mode (CAP_DAC_OVERRIDE), SO_PEERCRED still refuses.
    caps = ("--inh-caps", "+dac_override", "--ambient-caps",
            "+dac_override")
    r = ctl(live, "show", "config", prefix=nobody + caps)
    assert r.returncode == 1 and r.stdout == b"", r
    assert live.enid.wait_log("security: ctl: connection from pid")


def test_live_drain(live):
    r = ctl(live, "drain", "eni-0000000000000dead")
    assert r.returncode == 1 and r.stdout == b""
    assert r.stderr == b'enidctl: unknown-eni: no ENI ' \
        b'"eni-0000000000000dead" in the pool\n'
    r = ctl(live, "-j", "drain", "eni-0000000000000dead")
    assert r.returncode == 1 and b"eni-0000000000000dead" in r.stderr
    r = ctl(live, "drain", live.node["primary_eni"])
    assert r.returncode == 1 and b"refused" in r.stderr, r.stderr
    secondary = [e["id"] for e in live.show("enis")
                 if not e["primary"] and e["state"] == "ready"]
    assert secondary, live.show("enis")
    r = ctl(live, "drain", secondary[0])
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode() == "%s: draining; released once no pod is " \
        "left on it\n" % secondary[0]
    states = {e["id"]: e["state"] for e in live.show("enis")}
    assert states.get(secondary[0], "gone") in \
        ("draining", "detaching", "deleting", "gone"), states


def test_silent_daemon_times_out(daemon):
    """A daemon that reads the request and never answers: exit 1 after
    the command's time limit (5 s for all but reconcile)."""
    import time
    t0 = time.monotonic()
    r = enidctl(daemon, b"", "show", "pool")
    took = time.monotonic() - t0
    assert r.returncode == 1 and r.stdout == b""
    assert r.stderr.decode() == "enidctl: %s: no answer within 5 s\n" % \
        daemon.path
    assert 4.5 < took < 12, took


# ---- prefix delegation, live: a node that holds prefixes, one that can't

PD_M5 = ("--instance-type", "m5.large", "--eni-limit", "3", "--ip-limit", "10")
PD_M4 = ("--instance-type", "m4.large", "--eni-limit", "2", "--ip-limit", "10")


@pytest.fixture
def pd_env(workdir, enid_user, helper_dir):
    from poolenv import PoolEnv
    envs = []

    def make(sim_args, prefix_delegation=True, **pool):
        env = PoolEnv(workdir, enid_user, helper_dir, sim_args=sim_args,
                      prefix="ep%d%d" % (os.getpid() % 10000, next(_seq)),
                      pool={"add_timeout_s": 10, "ip_cooldown_s": 0,
                            "prefix_delegation": prefix_delegation, **pool},
                      reconcile_interval_s=3600)
        envs.append(env)
        return env
    yield make
    for env in envs:
        env.stop()


def ctl_both(env, *args):
    t, j = ctl(env, *args), ctl(env, "-j", *args)
    assert t.returncode == 0 and j.returncode == 0, (args, t, j)
    text = t.stdout.decode()
    assert not [x for x in text.splitlines() if len(x) > 80], text
    return text, json.loads(j.stdout)


def test_live_prefixes_shown(pd_env):
    """An m5.large with prefix delegation: show limits says what prefixes
    allow, show enis lists each prefix with its addresses' use, as the
    sim delegates them, show pool and status count them."""
    env = pd_env(PD_M5, warm_prefix_target=1)
    env.start()
    for i in range(3):
        a, _ = env.add("%064x" % (0xbeef00 + i))
        assert a["ok"], a
    settle(env)

    text, ans = ctl_both(env, "show", "limits")
    lim = ans["limits"]
    assert (lim["prefix_delegation"], lim["prefixes_ok"], lim["hypervisor"],
            lim["bare_metal"]) == ("on", True, "nitro", False), lim
    # EC2's count: 3 ENIs x 9 prefix slots x 16; the kubelet's usual cap
    # for a type under 30 vCPUs; single-address fields as they were.
    assert (lim["max_pods_with_prefixes"], lim["prefix_capacity"],
            lim["max_pods"], lim["kubelet_max_pods"], lim["pod_capacity"],
            lim["pod_ips_per_eni"]) == (432, 432, 432, 110, 27, 9), lim
    for want in ("prefixes           on: /28s of 16 addresses (hypervisor "
                 "nitro)",
                 "pods in prefixes   432 (3 ENIs x 9 prefixes x 16)",
                 "kubelet max pods   110 (m5.large has 4 vCPUs (250 from "
                 "30))",
                 "max pods           432 (in prefixes; pool.max_pods not "
                 "set)"):
        assert want in text.splitlines(), (want, text)

    text, ans = ctl_both(env, "show", "enis")
    sim = {e["id"]: set(e.get("prefixes") or []) for e in env.node_enis()}
    rows = 0
    for e in ans["enis"]:
        assert {p["cidr"] for p in e["prefixes"]} == sim[e["id"]], (e, sim)
        for p in e["prefixes"]:
            mine = [a for a in e["addresses"] if a.get("prefix") == p["cidr"]]
            assert len(mine) == 16, (p, e["addresses"])
            by = {s: sum(a["state"] == s for a in mine)
                  for s in ("free", "assigned", "cooling")}
            assert (p["free"], p["assigned"], p["cooling"], p["other"]) == (
                by["free"], by["assigned"], by["cooling"],
                16 - sum(by.values())), (p, mine)
            assert (p["frozen"], p["frozen_s"], p["removing"]) == \
                (False, 0, False), p
            assert re.search(r"^%s +%s +%d +%d +%d +%d -$" % (
                e["id"], re.escape(p["cidr"]), p["free"], p["assigned"],
                p["cooling"], p["other"]), text, re.M), text
            rows += 1
    held = sum(len(v) for v in sim.values())
    # Three pods and a warm prefix's worth of free addresses: 2 prefixes.
    assert rows == held == 2, (rows, sim)
    assert sum(p["assigned"] for e in ans["enis"]
               for p in e["prefixes"]) == 3

    text, ans = ctl_both(env, "show", "pool")
    p = ans["pool"]
    assert (p["prefix_delegation"], p["prefixes"], p["prefixes_frozen"],
            p["prefixes_removing"], p["prefix_inhibited"]) == \
        ("on", held, 0, 0, []), p
    line_ = "prefixes     %d held (/28), 0 frozen, 0 being given back" % held
    assert line_ in text.splitlines(), text
    assert line_ in ctl_both(env, "status")[0].splitlines()
    _, ans = ctl_both(env, "show", "subnets")
    assert all(s["prefix_inhibited_s"] == 0 for s in ans["subnets"]), ans


def test_live_prefixes_unsupported(pd_env):
    """prefix_delegation on an m4.large (Xen): single addresses, and each
    view says why."""
    env = pd_env(PD_M4)
    env.start()
    assert env.enid.wait_log("cannot hold prefixes; single addresses are "
                             "used", 5), env.enid.text()
    text, ans = ctl_both(env, "show", "limits")
    lim = ans["limits"]
    assert (lim["prefix_delegation"], lim["prefixes_ok"], lim["hypervisor"],
            lim["max_pods"]) == ("unsupported", False, "xen", 18), lim
    assert "                   single addresses (hypervisor xen)" in \
        text.splitlines(), text
    text, ans = ctl_both(env, "show", "pool")
    assert (ans["pool"]["prefix_delegation"], ans["pool"]["prefixes"]) == \
        ("unsupported", 0), ans
    assert "prefixes     asked for, but the instance cannot hold them: " \
        "single addresses" in text.splitlines(), text
    text = ctl(env, "metrics").stdout.decode()
    for mode, v in (("on", 0), ("off", 0), ("unsupported", 1)):
        assert '\nenid_pool_prefix_delegation{mode="%s"} %d\n' % (mode, v) \
            in text, text
    assert "\nenid_pool_prefixes 0\n" in text


def test_live_prefixes_off_on_bare_metal(pd_env):
    """An m5.metal (bare metal: no hypervisor) without prefix delegation:
    show limits says it could hold prefixes, counts what they would serve
    and what enid holds of that, and the kubelet's cap for 30 vCPUs or
    more."""
    env = pd_env(("--instance-type", "m5.metal", "--eni-limit", "15",
                  "--ip-limit", "50"), prefix_delegation=False)
    env.start()
    text, ans = ctl_both(env, "show", "limits")
    lim = ans["limits"]
    assert (lim["prefix_delegation"], lim["prefixes_ok"], lim["hypervisor"],
            lim["bare_metal"]) == ("off", True, "", True), lim
    # 15 x 49 x 16; the pool's tables: 2048 addresses in all.
    assert (lim["max_pods_with_prefixes"], lim["prefix_capacity"],
            lim["max_pods"], lim["pod_capacity"], lim["kubelet_max_pods"]) \
        == (11760, 2048, 735, 735, 250), lim
    for want in ("prefixes           off; the instance could hold them "
                 "(bare metal)",
                 "pods in prefixes   11760 (15 ENIs x 49 prefixes x 16);",
                 "                   enid holds 2048 of them",
                 "kubelet max pods   250 (m5.metal has 96 vCPUs (250 from "
                 "30))",
                 "max pods           735 (pool.max_pods not set)"):
        assert want in text.splitlines(), (want, text)
    text, ans = ctl_both(env, "show", "pool")
    assert (ans["pool"]["prefix_delegation"], ans["pool"]["prefixes"]) == \
        ("off", 0), ans
    assert not [x for x in text.splitlines() if x.startswith("prefixes")]


def test_live_snat_says_what_differs(pd_env):
    """show snat of a table not in place says what differs, in text and
    JSON, each time: the table deleted, a chain of someone else's, the
    target changed; a reconcile puts it back and the reason goes."""
    env = pd_env(("--eni-limit", "2", "--ip-limit", "4"),
                 prefix_delegation=False)
    env.start()
    primary = env.node["primary_ip"]

    def nft(*args, stdin=None):
        return subprocess.run(["ip", "netns", "exec", env.ns, "nft", *args],
                              input=stdin, capture_output=True, text=True,
                              check=True, timeout=15).stdout

    def in_place():
        s = env.show("snat")
        return s["in_place"] and s["differs"] is None

    def put_back():
        env.reconcile()
        env.wait(in_place, 15, "netd's table in place again")
        text, ans = ctl_both(env, "show", "snat")
        assert ans["snat"]["differs"] is None, ans
        assert "differs:" not in text.splitlines(), text

    def differs():
        text, ans = ctl_both(env, "show", "snat")
        lines = text.splitlines()
        assert lines[1].startswith("table        NOT IN PLACE;"), text
        assert lines[2] == "differs:", text
        # the reason, wrapped and indented as enid-netd's message is
        shown = []
        for x in lines[3:]:
            if not x.startswith("    "):
                break
            shown.append(x.strip())
        assert " ".join(shown) == ans["snat"]["differs"], (text, ans)
        assert not ans["snat"]["in_place"], ans
        return ans["snat"]["differs"]

    env.wait(in_place, 15, "netd's table in place")
    nft("delete", "table", "ip", "enid")
    assert differs() == "table ip enid absent"
    put_back()

    nft("add", "chain", "ip", "enid", "intruder")
    assert differs() == "chain intruder is a regular chain"
    put_back()

    other = "10.0.0.250"
    table = nft("list", "table", "ip", "enid")
    assert "snat to %s" % primary in table, table
    nft("delete", "table", "ip", "enid")
    nft("-f", "-", stdin=table.replace("snat to %s" % primary,
                                       "snat to %s" % other))
    why = differs()
    assert "snat to %s" % other in why and primary in why, why
    assert env.show("snat")["to"] == other
    put_back()


def test_live_type_past_maxima(pd_env):
    """An instance type of 4 ENIs x 100 addresses, past enid's 64 a
    ENI: enid starts and uses it up to 64, says so once naming the type,
    the cloud's figure and the cap, show limits gives the capped figure,
    and pods get addresses that work."""
    env = pd_env(("--node-limits", "0:4:100"), prefix_delegation=False)
    env.start()
    itype = env.node["instance_type"]
    assert itype.endswith("-4x100"), env.node
    log = env.enid.text()
    warn = [x for x in log.splitlines() if "leaves the rest unused" in x]
    assert len(warn) == 1, log
    assert ("instance type %s takes 4 ENIs of 100 addresses; enid uses "
            "at most 32 ENIs (ENID_MAX_ENIS) of 64 addresses" % itype) \
        in warn[0], warn
    text, ans = ctl_both(env, "show", "limits")
    lim = ans["limits"]
    assert (lim["instance_type"], lim["cloud_max_enis"], lim["max_enis"],
            lim["cloud_ips_per_eni"], lim["pod_ips_per_eni"],
            lim["pod_capacity"]) == (itype, 4, 4, 100, 64, 256), lim
    for want in ("addresses per ENI  100: 64 for pods (enid's most), one "
                 "the ENI's own",
                 "pod addresses      256 (4 ENIs x 64)"):
        assert want in text.splitlines(), (want, text)
    for i in range(2):
        env.add_and_ping("%064x" % (0xcab00 + i))
    settle(env)
    # Filled to enid's 64 and no further: the primary ENI (a warm ENI's
    # worth of free addresses), and a second ENI made with as many.
    held = sorted(len(e["addresses"]) for e in env.node_enis())
    assert held == [65, 65], held
    # A reconcile reads the ENIs back, each with its 65 addresses.
    r = env.reconcile()
    assert r.get("error") is None and r.get("errors", 0) == 0, r
    assert not [x for x in env.enid.text().splitlines()
                if "unusable answer" in x], env.enid.text()
    env.add_and_ping("%064x" % 0xcab02)
