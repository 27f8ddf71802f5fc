"""One enid per node (issue 27, item 1): a second enid on the same state
or runtime directory refuses to start, naming the running one, before it
touches anything; a crashed enid leaves no stale lock; a socket path is
never unlinked unless this enid made it.  Each test runs enid in a
throwaway network namespace (no cloud: the sockets answer regardless)."""
import json
import os
import signal
import socket
import stat
import subprocess
import time

from conftest import built, write_config

REFUSED = "another enid (pid %d) is running on %s"


def wait_ready(enid):
    assert enid.wait_log("all processes ready", 10), enid.text()
    kids = enid.children()
    assert set(kids) == {"enid-netd", "enid-cloudd"}, (kids, enid.text())
    return kids


def status(sock):
    return subprocess.run([built("ctl/enidctl"), "-s", str(sock), "-j",
                           "status"], capture_output=True, text=True,
                          timeout=10)


def inode(path):
    st = os.lstat(path)
    return (st.st_dev, st.st_ino)


def refused(enid, needle):
    rc = enid.proc.wait(timeout=10)
    text = enid.text()
    assert rc != 0, text
    assert needle in text, text
    # Nothing was started or made on the way to the refusal.
    assert "enid-netd" not in text and "enid-cloudd" not in text, text
    assert "socket" not in text, text
    return text


def second_config(workdir, enid_user, name, **dirs):
    conf = json.loads((workdir / "enid.conf").read_text())
    conf.update(dirs)
    path = workdir / name
    path.write_text(json.dumps(conf))
    return path


def test_second_enid_on_the_same_config_refused(start_enid, workdir):
    first = start_enid()
    kids = wait_ready(first)
    run, state = workdir / "run", workdir / "state"
    socks = {n: inode(run / n) for n in ("ctl.sock", "cni.sock")}

    second = start_enid(conf=workdir / "enid.conf")
    refused(second, REFUSED % (first.pid, state))
    # The first is unharmed: alive, same children, its own sockets in
    # place and answering, its lock file as it wrote it.
    assert first.proc.poll() is None
    assert first.children() == kids
    assert {n: inode(run / n) for n in socks} == socks
    r = status(run / "ctl.sock")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["ok"] is True
    lock = "%d\n" % first.pid
    assert (state / "enid.lock").read_text() == lock
    assert (run / "enid.pid").read_text() == lock
    for f in (state / "enid.lock", run / "enid.pid"):
        assert os.stat(f).st_mode & 0o777 == 0o600, f


def test_same_state_other_runtime_refused(start_enid, workdir, enid_user):
    first = start_enid()
    wait_ready(first)
    conf = second_config(workdir, enid_user, "other-run.conf",
                         runtime_dir=str(workdir / "run2"))
    second = start_enid(conf=conf)
    refused(second, REFUSED % (first.pid, workdir / "state"))
    assert not os.path.exists(workdir / "run2" / "ctl.sock")
    assert not os.path.exists(workdir / "run2" / "cni.sock")
    assert status(workdir / "run" / "ctl.sock").returncode == 0


def test_same_runtime_other_state_refused(start_enid, workdir, enid_user):
    """Two configurations sharing a runtime directory would replace each
    other's sockets: the runtime directory has its lock too."""
    first = start_enid()
    wait_ready(first)
    socks = {n: inode(workdir / "run" / n) for n in ("ctl.sock", "cni.sock")}
    conf = second_config(workdir, enid_user, "other-state.conf",
                         state_dir=str(workdir / "state2"))
    second = start_enid(conf=conf)
    refused(second, REFUSED % (first.pid, workdir / "run"))
    assert {n: inode(workdir / "run" / n) for n in socks} == socks
    assert not os.path.exists(workdir / "state2" / "checkpoint.json")
    assert status(workdir / "run" / "ctl.sock").returncode == 0


def test_kill9_leaves_no_stale_lock(start_enid, workdir):
    first = start_enid()
    kids = wait_ready(first)
    os.kill(first.pid, signal.SIGKILL)
    first.proc.wait(5)
    end = time.monotonic() + 5
    while time.monotonic() < end and any(
            os.path.exists("/proc/%d" % p) for p in kids.values()):
        time.sleep(0.02)
    # Its sockets and lock file are left behind; none of them stops the
    # next one, which takes the lock and removes the dead sockets.
    assert stat.S_ISSOCK(os.lstat(workdir / "run" / "ctl.sock").st_mode)
    second = start_enid(conf=workdir / "enid.conf")
    wait_ready(second)
    assert "removing the socket an earlier enid left" in second.text()
    assert (workdir / "state" / "enid.lock").read_text() == \
        "%d\n" % second.pid
    r = status(workdir / "run" / "ctl.sock")
    assert r.returncode == 0, r.stderr


def test_daemonized_enid_named_by_its_own_pid(netns, workdir, enid_user,
                                              helper_dir, start_enid):
    """Without -d the pid written is the daemon's (after the fork), and
    the lock survives the fork."""
    conf = write_config(workdir, enid_user)
    r = subprocess.run(["ip", "netns", "exec", netns, built("broker/enid"),
                        "-f", str(conf), "-L", str(helper_dir)],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode == 0, r.stderr
    lock = workdir / "state" / "enid.lock"
    end = time.monotonic() + 10
    while time.monotonic() < end and not lock.read_text():
        time.sleep(0.02)
    pid = int(lock.read_text())
    try:
        with open("/proc/%d/comm" % pid) as f:
            assert f.read().strip() == "enid"
        end = time.monotonic() + 10
        while time.monotonic() < end and \
                not os.path.exists(workdir / "run" / "ctl.sock"):
            time.sleep(0.02)
        second = start_enid(conf=conf)
        refused(second, REFUSED % (pid, workdir / "state"))
        assert status(workdir / "run" / "ctl.sock").returncode == 0
    finally:
        os.kill(pid, signal.SIGTERM)
        end = time.monotonic() + 10
        while time.monotonic() < end and os.path.exists("/proc/%d" % pid):
            time.sleep(0.02)
    assert not os.path.exists(workdir / "run" / "ctl.sock")


def test_live_socket_of_a_lockless_process_kept(start_enid, workdir):
    """Something listening on ctl.sock that holds no lock (an enid of an
    older version, say) is neither replaced nor removed."""
    run = workdir / "run"
    run.mkdir(mode=0o755)
    other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        other.bind(str(run / "ctl.sock"))
        other.listen(4)
        before = inode(run / "ctl.sock")
        enid = start_enid()
        assert enid.proc.wait(timeout=10) != 0
        text = enid.text()
        assert "another process is listening on it" in text, text
        assert inode(run / "ctl.sock") == before
    finally:
        other.close()


def test_socket_that_replaced_ours_is_not_removed(start_enid, workdir):
    """At exit enid removes its sockets only if they are still the ones
    it made."""
    enid = start_enid()
    wait_ready(enid)
    run = workdir / "run"
    repl = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        repl.bind(str(run / "ctl.sock.new"))
        os.rename(run / "ctl.sock.new", run / "ctl.sock")
        theirs = inode(run / "ctl.sock")
        ours = inode(run / "cni.sock")
        enid.proc.terminate()
        assert enid.proc.wait(timeout=10) == 0, enid.text()
        assert inode(run / "ctl.sock") == theirs
        assert not os.path.exists(run / "cni.sock"), ours
    finally:
        repl.close()


def test_hostile_lock_files_refused(start_enid, workdir):
    """A symbolic link or someone else's file in place of the lock is
    refused and left as it was; its target is never written."""
    state = workdir / "state"
    state.mkdir(mode=0o700)
    target = workdir / "precious"
    target.write_text("precious\n")
    os.symlink(target, state / "enid.lock")
    enid = start_enid()
    assert enid.proc.wait(timeout=10) != 0
    assert "enid.lock is a symbolic link; not following it" in enid.text()
    assert target.read_text() == "precious\n"
    assert os.path.islink(state / "enid.lock")

    os.unlink(state / "enid.lock")
    (state / "enid.lock").write_text("12345\n")
    os.chown(state / "enid.lock", 65534, 65534)	# nobody's
    enid = start_enid()
    assert enid.proc.wait(timeout=10) != 0
    assert "is owned by uid 65534" in enid.text()
    assert (state / "enid.lock").read_text() == "12345\n"

    os.unlink(state / "enid.lock")
    os.link(target, state / "enid.lock")
    enid = start_enid()
    assert enid.proc.wait(timeout=10) != 0
    assert "has 2 links" in enid.text()
    assert target.read_text() == "precious\n"
