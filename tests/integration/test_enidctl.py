"""enidctl against a fake daemon: a unix socket in a temporary directory
that reads the request line and answers with exactly the bytes a test
gives.  enidctl must refuse anything but one JSON object on one line with
nothing after it, and must never print a daemon string raw: control
characters, C1 controls and invalid UTF-8 reach the terminal escaped.
No root and no network namespace needed; loopback-free (unix socket)."""
import json
import os
import socket
import subprocess
import tempfile
import threading

import pytest

from conftest import built

STATUS = {
    "ok": True, "version": "0.1.0", "uptime_s": 5, "log_level": "info",
    "processes": [{"name": "enid", "pid": 10, "ready": True},
                  {"name": "enid-netd", "pid": 11, "ready": True},
                  {"name": "enid-cloudd", "pid": 12, "ready": False}],
    "instance": {"state": "unknown"},
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


def enidctl(daemon, answer, *args):
    daemon.serve_once(answer)
    r = subprocess.run([built("ctl/enidctl"), "-s", daemon.path, *args],
                       capture_output=True, timeout=15)
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


@pytest.mark.parametrize("answer, why", [
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
])
def test_strict_answer(daemon, answer, why):
    for args in (("status",), ("-j", "status")):
        r = enidctl(daemon, answer, *args)
        assert r.returncode == 1, (answer, args, r.stdout)
        assert r.stdout == b"", (answer, args, r.stdout)
        assert f"malformed answer: {why}".encode() in r.stderr, \
            (answer, args, r.stderr)


def test_unterminated_answer(daemon):
    daemon.linger = False           # close right after the bytes
    r = enidctl(daemon, line(STATUS)[:-1], "status")
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
                              "error": "e-" + evil}), "status")
    assert r.returncode == 1
    assert_no_raw_controls(r.stderr)
    assert r.stderr.decode() == f"enidctl: c-{shown}: e-{shown}\n"


@pytest.mark.parametrize("evil, shown", HOSTILE)
def test_status_strings_escaped(daemon, evil, shown):
    ans = json.loads(json.dumps(STATUS))
    ans["version"] = evil
    ans["processes"][1]["name"] = evil
    ans["instance"] = {"state": "failed", "error": evil}
    r = enidctl(daemon, line(ans), "status")
    assert r.returncode == 0, r.stderr
    assert_no_raw_controls(r.stdout)
    out = r.stdout.decode()
    assert f"enid {shown}, up 5 s" in out
    assert f"instance: failed ({shown})" in out
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
