"""The three-process skeleton: privileges, sandboxes, and going down
together.  Each test runs enid in a throwaway network namespace."""
import json
import re
import os
import signal
import socket
import subprocess
import time

import pytest

from conftest import SRCDIR, built, proc_status, write_config

CAP_NET_ADMIN = 1 << 12


def wait_ready(enid):
    assert enid.wait_log("all processes ready", 10), enid.text()
    kids = enid.children()
    assert set(kids) == {"enid-netd", "enid-cloudd"}, (kids, enid.text())
    return kids


def test_processes_are_sandboxed(start_enid):
    enid = start_enid()
    kids = wait_ready(enid)
    expect = {enid.pid: ("enid", 0),
              kids["enid-netd"]: ("enid-netd", CAP_NET_ADMIN),
              kids["enid-cloudd"]: ("enid-cloudd", 0)}
    for pid, (name, capeff) in expect.items():
        st = proc_status(pid)
        uids = [int(u) for u in st["Uid"].split()]
        gids = [int(g) for g in st["Gid"].split()]
        assert 0 not in uids, (name, st["Uid"])
        assert 0 not in gids, (name, st["Gid"])
        assert st["NoNewPrivs"] == "1", name
        assert st["Seccomp"] == "2", name
        assert int(st["CapEff"], 16) == capeff, (name, st["CapEff"])
        assert int(st["CapPrm"], 16) == capeff, (name, st["CapPrm"])
        assert int(st["CapInh"], 16) == 0, name
        assert int(st["CapAmb"], 16) == 0, name
        assert int(st["CapBnd"], 16) == capeff, (name, st["CapBnd"])
        assert st["Groups"] == "", (name, st["Groups"])


@pytest.mark.parametrize("victim", ["enid-netd", "enid-cloudd"])
def test_killing_a_child_takes_all_down(start_enid, victim):
    enid = start_enid()
    kids = wait_ready(enid)
    other = kids["enid-cloudd" if victim == "enid-netd" else "enid-netd"]
    t0 = time.monotonic()
    os.kill(kids[victim], signal.SIGKILL)
    rc = enid.proc.wait(timeout=5)
    elapsed = time.monotonic() - t0
    assert rc != 0
    assert elapsed < 1.0, f"took {elapsed:.3f}s"
    # The other child is gone too (reaped by the broker, so no /proc).
    assert not os.path.exists(f"/proc/{other}/status") or \
        proc_status(other)["State"].startswith("Z")
    log = enid.text()
    assert f"{victim} (pid {kids[victim]}) was killed by signal 9" in log, log


@pytest.mark.parametrize("victim", ["enid-netd", "enid-cloudd"])
def test_stopped_child_takes_all_down(start_enid, victim):
    """A stopped child never exits, so only the liveness ping notices it:
    the set goes down within the ping's interval and wait, naming it."""
    enid = start_enid()
    kids = wait_ready(enid)
    t0 = time.monotonic()
    os.kill(kids[victim], signal.SIGSTOP)
    try:
        rc = enid.proc.wait(timeout=15)
    finally:
        # Whatever happened, don't leave a stopped process behind.
        try:
            os.kill(kids[victim], signal.SIGKILL)
        except ProcessLookupError:
            pass
    elapsed = time.monotonic() - t0
    assert rc != 0
    # Ping interval (2 s) + wait (5 s) + the kill grace, with margin.
    assert elapsed < 9.0, f"took {elapsed:.3f}s"
    log = enid.text()
    assert f"{victim} (pid {kids[victim]}) did not answer a liveness " \
        "ping" in log, log


def test_killing_the_broker_takes_children_down(start_enid):
    enid = start_enid()
    kids = wait_ready(enid)
    os.kill(enid.pid, signal.SIGKILL)
    enid.proc.wait(timeout=5)
    end = time.monotonic() + 1.0
    while time.monotonic() < end and any(
            os.path.exists(f"/proc/{p}") for p in kids.values()):
        time.sleep(0.01)
    for name, pid in kids.items():
        # Orphans exit on EOF and are reaped by init.
        assert not os.path.exists(f"/proc/{pid}") or \
            proc_status(pid)["State"].startswith("Z"), name


def test_sigterm_shuts_down_cleanly(start_enid, workdir):
    enid = start_enid()
    kids = wait_ready(enid)
    ctl = workdir / "run" / "ctl.sock"
    assert ctl.exists()
    assert oct(ctl.stat().st_mode & 0o777) == "0o660"
    enid.proc.send_signal(signal.SIGTERM)
    assert enid.proc.wait(timeout=3) == 0
    log = enid.text()
    assert "shutting down" in log
    for name in kids:
        assert f"{name} (pid {kids[name]}) exited with status 0" in log, log
    assert not ctl.exists()


def test_ctl_status_and_bad_requests(start_enid, workdir):
    enid = start_enid()
    kids = wait_ready(enid)
    sock = str(workdir / "run" / "ctl.sock")
    out = subprocess.run([built("ctl/enidctl"), "-j", "-s", sock, "status"],
                         capture_output=True, text=True, timeout=10)
    assert out.returncode == 0, out.stderr
    st = json.loads(out.stdout)
    assert st["ok"] is True
    pids = {p["name"]: p["pid"] for p in st["processes"]}
    assert pids == {"enid": enid.pid, **kids}
    assert all(p["ready"] for p in st["processes"])

    def ask(raw):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect(sock)
        s.sendall(raw)
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        try:
            rest = s.recv(10)   # closed after a bad request
        except ConnectionResetError:
            rest = b""          # closed with our excess bytes unread
        s.close()
        return json.loads(data), rest

    for raw, why in [(b"nonsense\n", "invalid JSON"),
                     (b"[1,2]\n", "request must be a JSON object"),
                     (b'{"op": 5}\n', 'missing string field "op"'),
                     (b'{"op": "explode"}\n', 'unknown op "explode"'),
                     (b'{"op": "log-level", "level": "loud"}\n',
                      'unknown level "loud"'),
                     # a client's string reaches the log tamed
                     (b'{"op": "ex\\nplode\\u001b[2J"}\n',
                      'unknown op "ex?plode?[2J"'),
                     (b'{"op": "show", "what": "x\\r\\nforged"}\n',
                      'unknown "what" "x??forged"'),
                     # and whole: "pool\u0000x" is not "pool"
                     (b'{"op": "show", "what": "pool\\u0000x"}\n',
                      '"what" contains a NUL byte'),
                     (b'{"op": "drain", "eni": "eni-1\\u0000x"}\n',
                      '"eni" contains a NUL byte'),
                     (b"x" * 9000, "request line longer than 8192 bytes")]:
        ans, rest = ask(raw)
        assert ans["ok"] is False and ans["code"] == "bad-request", ans
        assert why in ans["error"], ans
        assert rest == b""
    assert enid.wait_log('bad request: unknown op "ex?plode?[2J"'), \
        enid.text()
    assert "\x1b" not in enid.text() and "\nforged" not in enid.text()
    # Nothing changed: the daemon still answers and is unchanged.
    out = subprocess.run([built("ctl/enidctl"), "-s", sock, "status"],
                         capture_output=True, text=True, timeout=10)
    assert out.returncode == 0 and "enid-netd" in out.stdout
    assert enid.proc.poll() is None


def _nobody(*caps):
    """setpriv argv running a command as nobody, keeping caps if given."""
    argv = ["setpriv", "--reuid", "nobody", "--regid", "nogroup",
            "--clear-groups"]
    if caps:
        c = ",".join("+" + x for x in caps)
        argv += ["--inh-caps", c, "--ambient-caps", c]
    return argv


def test_ctl_refuses_who_is_not_admin(start_enid, workdir):
    """ctl.sock is 0660 root:admin_group, so nobody can't connect; and one
    who can reach it anyway (nobody with CAP_DAC_OVERRIDE) is refused on
    SO_PEERCRED, with a security: line."""
    enid = start_enid()
    wait_ready(enid)
    sock = str(workdir / "run" / "ctl.sock")
    st = os.stat(sock)
    assert st.st_uid == 0 and oct(st.st_mode & 0o777) == "0o660"
    out = subprocess.run(_nobody() + [built("ctl/enidctl"), "-s", sock,
                                       "status"],
                         capture_output=True, text=True, timeout=10)
    assert out.returncode != 0
    assert "Permission denied" in out.stderr, out.stderr
    out = subprocess.run(_nobody("dac_override") + [
        built("ctl/enidctl"), "-s", sock, "status"],
        capture_output=True, text=True, timeout=10)
    assert out.returncode != 0, out.stdout
    assert enid.wait_log("security: ctl: connection from pid"), enid.text()
    assert "neither root nor in the admin group" in enid.text()
    # No admin group is configured, so the socket's group is root's: a
    # peer whose group (primary, or only supplementary) is root's gets
    # past the file mode, but it is not root and there is no admin group
    # to be in, so SO_PEERCRED refuses it too.
    assert st.st_gid == 0
    for who in (["--regid", "root", "--clear-groups"],
                ["--regid", "nogroup", "--groups", "root"]):
        before = enid.text().count("neither root nor in the admin group")
        out = subprocess.run(["setpriv", "--reuid", "nobody"] + who +
                             [built("ctl/enidctl"), "-s", sock, "status"],
                             capture_output=True, text=True, timeout=10)
        assert out.returncode != 0, (who, out.stdout)
        assert "Permission denied" not in out.stderr, out.stderr
        end = time.monotonic() + 10
        while enid.text().count("neither root nor in the admin group") \
                == before and time.monotonic() < end:
            time.sleep(0.02)
        assert enid.text().count("neither root nor in the admin group") \
            > before, (who, enid.text())
    # Root still gets in, and nothing changed.
    out = subprocess.run([built("ctl/enidctl"), "-s", sock, "status"],
                         capture_output=True, text=True, timeout=10)
    assert out.returncode == 0, out.stderr


def test_ctl_socket_symlink_not_followed(start_enid, workdir, enid_user):
    """A symlink planted where ctl.sock goes (the runtime directory is the
    unprivileged user's) is refused, not removed: enid unlinks no path it
    did not make but a dead enid's socket.  Its target is left as it was."""
    run = workdir / "run"
    run.mkdir(mode=0o755)
    target = workdir / "target"
    target.write_text("precious\n")
    os.chmod(target, 0o600)
    os.symlink(target, run / "ctl.sock")
    before = os.stat(target)
    enid = start_enid()
    assert enid.proc.wait(timeout=10) != 0
    assert "ctl.sock is there and is not a socket (a symbolic link)" in \
        enid.text()
    after = os.stat(target)
    assert (after.st_uid, after.st_gid, after.st_mode) == \
        (before.st_uid, before.st_gid, before.st_mode)
    assert target.read_text() == "precious\n"
    assert os.readlink(run / "ctl.sock") == str(target)


def test_runtime_dir_symlink_refused(start_enid, workdir):
    """A runtime directory that is a symlink is refused, not followed."""
    real = workdir / "elsewhere"
    real.mkdir(mode=0o700)
    before = os.stat(real)
    os.symlink(real, workdir / "run")
    enid = start_enid()
    assert enid.proc.wait(timeout=10) != 0
    assert "not a directory we can use" in enid.text()
    after = os.stat(real)
    assert (after.st_uid, after.st_mode) == (before.st_uid, before.st_mode)


def test_check_only_mode(workdir, enid_user):
    good = write_config(workdir, enid_user)
    r = subprocess.run([built("broker/enid"), "-n", "-f", str(good)],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode == 0, r.stderr
    bad = workdir / "bad.conf"
    bad.write_text('{"pool": {"warm_ip_target": "three"}}')
    r = subprocess.run([built("broker/enid"), "-n", "-f", str(bad)],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode == 1
    assert "pool.warm_ip_target: expected an integer, got string" in r.stderr


def test_bad_config_starts_nothing(start_enid, workdir):
    bad = workdir / "bad.conf"
    bad.write_text('{"runtime_dir": "%s", "frobnicate": 1}' % (workdir / "run"))
    enid = start_enid(conf=bad)
    assert enid.proc.wait(timeout=5) == 1
    assert "frobnicate: unknown key" in enid.text()
    assert not (workdir / "run").exists()
    assert "enid-netd" not in enid.text()


FAKE_CHILD = r'''#!/usr/bin/python3
# Answers the broker's HELLO with a HELLO_ACK one byte short.
import socket, struct, sys, time
s = socket.socket(fileno=3)
hdr = s.recv(65536)
typ, flags, length, rid, res = struct.unpack("=HHIII", hdr[:16])
ack_type = typ + 1
s.send(struct.pack("=HHIII", ack_type, 0, 7, rid, 0) + b"\0" * 7)
time.sleep(5)
'''


def test_malformed_message_is_fatal(start_enid, workdir, helper_dir):
    fake = workdir / "fake"
    fake.mkdir()
    (fake / "enid-netd").write_text(FAKE_CHILD)
    (fake / "enid-netd").chmod(0o755)
    os.symlink(os.path.realpath(helper_dir / "enid-cloudd"),
               fake / "enid-cloudd")
    enid = start_enid(helpers=fake)
    t0 = time.monotonic()
    rc = enid.proc.wait(timeout=5)
    assert rc != 0
    log = enid.text()
    assert "enid-netd (pid" in log and "sent a malformed message: " \
        "payload length differs from its type's size" in log, log
    assert time.monotonic() - t0 < 2.0


def test_daemon_mode_with_relative_config(netns, helper_dir, workdir,
                                          enid_user):
    """Without -d, enid detaches and logs to syslog; the helpers still
    find a configuration named relative to where enid was started."""
    write_config(workdir, enid_user)
    r = subprocess.run(["ip", "netns", "exec", netns, built("broker/enid"),
                        "-f", "enid.conf", "-L", str(helper_dir)],
                       cwd=workdir, capture_output=True, text=True,
                       timeout=10)
    assert r.returncode == 0, r.stderr
    sock = str(workdir / "run" / "ctl.sock")
    st = None
    end = time.monotonic() + 10
    while time.monotonic() < end:
        out = subprocess.run([built("ctl/enidctl"), "-j", "-s", sock,
                              "status"], capture_output=True, text=True,
                             timeout=10)
        if out.returncode == 0:
            st = json.loads(out.stdout)
            if all(p["ready"] for p in st["processes"]):
                break
        time.sleep(0.05)
    assert st and all(p["ready"] for p in st["processes"]), st
    pids = [p["pid"] for p in st["processes"]]
    os.kill(pids[0], signal.SIGTERM)
    end = time.monotonic() + 3
    while time.monotonic() < end and os.path.exists(sock):
        time.sleep(0.02)
    assert not os.path.exists(sock)
    for pid in pids:
        while time.monotonic() < end and os.path.exists(f"/proc/{pid}") \
                and not proc_status(pid)["State"].startswith("Z"):
            time.sleep(0.02)
        assert not os.path.exists(f"/proc/{pid}") or \
            proc_status(pid)["State"].startswith("Z"), pid


# What sends a reader outside the repository: the original design lived
# in a file beside it, and a path up out of the tree reaches only what a
# clone does not have.  Spelled in pieces so that this file is no match.
OUTSIDE_POINTERS = ("../" + "shared", "DESIGN" + ".md")


def test_no_file_points_outside_the_repository():
    """Every tracked file reads on its own: none names a file outside the
    repository (doc/design.md is the design).  A tree without git (a
    release tarball) has nothing to list, and is skipped."""
    r = subprocess.run(["git", "-C", SRCDIR, "ls-files", "-z"],
                       capture_output=True, timeout=30)
    if r.returncode != 0:
        pytest.skip("not a git checkout: " + r.stderr.decode(errors="replace"))
    found = []
    for rel in r.stdout.decode().split("\0"):
        if not rel:
            continue
        path = os.path.join(SRCDIR, rel)
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        with open(path, "rb") as f:
            data = f.read()
        if b"\0" in data:
            continue        # binary: a fuzzing seed, say
        for n, line in enumerate(data.decode(errors="replace").splitlines(),
                                 1):
            for pointer in OUTSIDE_POINTERS:
                if pointer in line:
                    found.append(f"{rel}:{n}: {pointer}: {line.strip()}")
    assert not found, "files that point outside the repository:\n" + \
        "\n".join(found)


# Commits from this one on keep the project's habit: a subject of at most
# 72 characters that starts with the area it changes ("netd: ...").  The
# older history is as it was written.
HABIT_SINCE = "aafe7c05e8706ae5087a153cd8844d024929affc"


def test_commit_subjects_keep_the_habit():
    r = subprocess.run(["git", "-C", SRCDIR, "log", "--no-merges",
                        "--format=%h %s", HABIT_SINCE + "..HEAD"],
                       capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        pytest.skip("no git history here: " + r.stderr.strip())
    bad = []
    for line in r.stdout.splitlines():
        sha, _, subject = line.partition(" ")
        if len(subject) > 72:
            bad.append(f"{sha}: {len(subject)} characters: {subject}")
        elif not re.match(r"[a-z0-9][a-z0-9/._-]*(, [a-z0-9/._-]+)*: \S",
                          subject):
            bad.append(f"{sha}: no \"area: \" first: {subject}")
    assert not bad, "commit subjects off the habit:\n" + "\n".join(bad)


def test_snat_exclusion_overlapping_the_vpc_exits_1(workdir, enid_user,
                                                     helper_dir,
                                                     monkeypatch):
    """snat.exclude can be checked against the VPC's CIDRs only once the
    cloud has named them: an exclusion inside the sim's VPC (10.0.0.0/16)
    is then a configuration error, exit 1 with the value and the block
    named, before any SNAT sync and before the pool starts.  enid -n,
    which asks no cloud, passes the same file."""
    from poolenv import PoolEnv
    # In a sanitizer build the leak check at exit needs calls the filter
    # refuses (SIGSYS): this test is about the status, not leaks.
    monkeypatch.setenv("ASAN_OPTIONS", "detect_leaks=0")
    env = PoolEnv(workdir, enid_user, helper_dir,
                  prefix="ef%d" % (os.getpid() % 100000),
                  snat={"exclude": ["192.0.2.0/24", "10.0.128.0/17"]})
    try:
        r = subprocess.run([built("broker/enid"), "-n", "-f", str(env.conf)],
                           capture_output=True, text=True, timeout=10)
        assert r.returncode == 0, r.stderr
        e = env.start(wait=False)
        assert e.proc.wait(timeout=60) == 1, e.text()
        log = e.text()
        assert 'configuration: snat.exclude[1]: "10.0.128.0/17" overlaps ' \
            "the VPC's CIDR 10.0.0.0/16" in log, log
        assert "enid-netd: policy set" in log, log
        assert "snat: sync" not in log and "pool: running" not in log, log
        assert "exiting with status 1" in log, log
    finally:
        env.stop()
