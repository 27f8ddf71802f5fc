"""enid started without root, as systemd's User= and AmbientCapabilities=
start it (contrib/enid.service): already the configured user, CAP_NET_ADMIN
as an ambient capability, the runtime and state directories made for that
user by the service manager.  Reproduced with setpriv(1) inside a node of
the simulated VPC; no bounding set or no_new_privs from the launcher, so
that what the processes end up holding is enid's own doing.

The root start (the DaemonSet's, and every other test's) is
test_foundation.py's and test_contrib.py's.
"""
import grp
import os
import pwd
import re
import shutil
import signal
import stat
import struct
import subprocess

import pytest

from conftest import built, proc_status, write_config
from poolenv import PoolEnv

CAP_NET_ADMIN = 1 << 12
ADMIN_GROUP = "adm"     # Debian's; the example configuration's too


# Connects to the socket named, asks for status, and exits 0 if the
# connection is closed on it without an answer.
CLOSED_ON_US = """
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
try:
    s.sendall(b'{"op": "status"}\\n')
    answer = s.recv(100)
except (ConnectionResetError, BrokenPipeError):
    # closed on us before or after the request went out
    answer = b""
sys.exit(0 if answer == b"" else 1)
"""


def setpriv(user, group, caps=("net_admin",), groups=None):
    """setpriv argv that runs a command as user:group with caps inheritable
    and ambient (nothing else: no bounding set, no no_new_privs); with the
    user's own groups (initgroups, as systemd does), or those given."""
    argv = ["setpriv", "--reuid", user, "--regid", group]
    argv += ["--init-groups"] if groups is None else \
        ["--groups", ",".join(groups)] if groups else ["--clear-groups"]
    if caps:
        c = ",".join("+" + x for x in caps)
        argv += ["--inh-caps", c, "--ambient-caps", c]
    return argv + ["--"]


def as_service_manager(workdir, user, conf):
    """What systemd does before it starts the unit: RuntimeDirectory= and
    StateDirectory= for User= with the unit's modes, and the configuration
    readable by the user though root's (root:user 0640)."""
    pw = pwd.getpwnam(user)
    for name, mode in (("run", 0o755), ("state", 0o700)):
        d = workdir / name
        d.mkdir(mode=mode, exist_ok=True)
        os.chown(d, pw.pw_uid, pw.pw_gid)
        os.chmod(d, mode)
    os.chown(conf, 0, pw.pw_gid)
    os.chmod(conf, 0o640)


def children(pid):
    out = {}
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        for p in f.read().split():
            with open(f"/proc/{p}/comm") as c:
                out[c.read().strip()] = int(p)
    return out


def acl_groups(path):
    """The named-group entries (gid: perm) of path's access ACL."""
    try:
        raw = os.getxattr(path, "system.posix_acl_access",
                          follow_symlinks=False)
    except OSError:
        return {}
    (version,) = struct.unpack_from("<I", raw)
    assert version == 2, raw
    out = {}
    for off in range(4, len(raw), 8):
        tag, perm, ident = struct.unpack_from("<HHI", raw, off)
        if tag == 0x08:     # ACL_GROUP
            out[ident] = perm
    return out


def enidctl(sock, *wrap):
    return subprocess.run([*wrap, built("ctl/enidctl"), "-s", str(sock),
                           "status"], capture_output=True, text=True,
                          timeout=30)


@pytest.fixture
def env(workdir, enid_user, helper_dir):
    prefix = "eu%d" % (os.getpid() % 100000)
    e = PoolEnv(workdir, enid_user, helper_dir,
                sim_args=("--ip-limit", "4", "--eni-limit", "4"),
                prefix=prefix, admin_group=ADMIN_GROUP,
                pool={"add_timeout_s": 10, "ip_cooldown_s": 0,
                      "link_timeout_s": 10})
    try:
        yield e
    finally:
        e.stop()


def test_start_without_root(env, workdir, enid_user):
    pw = pwd.getpwnam(enid_user)
    gid_name = grp.getgrgid(pw.pw_gid).gr_name
    as_service_manager(workdir, enid_user, env.conf)
    e = env.start(wrap=setpriv(enid_user, gid_name), timeout=60)
    assert "(without root)" in e.text(), e.text()
    kids = children(e.pid)
    assert set(kids) == {"enid-netd", "enid-cloudd"}, kids

    # Each process: the user's ids, its own capability only, nothing
    # inheritable or ambient, no_new_privs, a seccomp filter, and no
    # supplementary group but the user's own.
    expect = {"enid": (e.pid, 0), "enid-netd": (kids["enid-netd"],
                                               CAP_NET_ADMIN),
              "enid-cloudd": (kids["enid-cloudd"], 0)}
    for name, (pid, caps) in expect.items():
        st = proc_status(pid)
        assert [int(u) for u in st["Uid"].split()] == [pw.pw_uid] * 4, \
            (name, st["Uid"])
        assert [int(g) for g in st["Gid"].split()] == [pw.pw_gid] * 4, \
            (name, st["Gid"])
        assert set(st["Groups"].split()) <= {str(pw.pw_gid)}, \
            (name, st["Groups"])
        assert int(st["CapEff"], 16) == caps, (name, st["CapEff"])
        assert int(st["CapPrm"], 16) == caps, (name, st["CapPrm"])
        assert int(st["CapInh"], 16) == 0, (name, st["CapInh"])
        assert int(st["CapAmb"], 16) == 0, (name, st["CapAmb"])
        assert st["NoNewPrivs"] == "1", name
        assert st["Seccomp"] == "2", name
        # Non-dumpable: its files in /proc are root's, so no other process
        # of the user can read its memory or trace it.
        assert os.stat(f"/proc/{pid}/mem").st_uid == 0, name

    # The directories were the service manager's to make; enid kept them.
    for d, mode in ((workdir / "run", 0o755), (workdir / "state", 0o700)):
        st = os.stat(d)
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (pw.pw_uid, mode)
    # The sockets are the user's: cni.sock 0600 (root connects by
    # CAP_DAC_OVERRIDE), ctl.sock 0660 by an ACL entry for admin_group.
    cni = os.stat(env.cni_sock)
    assert (cni.st_uid, stat.S_IMODE(cni.st_mode)) == (pw.pw_uid, 0o600)
    assert acl_groups(env.cni_sock) == {}
    ctl = os.stat(env.ctl_sock)
    assert (ctl.st_uid, stat.S_IMODE(ctl.st_mode)) == (pw.pw_uid, 0o660)
    adm = grp.getgrnam(ADMIN_GROUP).gr_gid
    assert acl_groups(env.ctl_sock) == {adm: 0o6}

    # Pods get addresses that work: cloudd's calls, netd's table and rules,
    # the checkpoint in the state directory.
    for i in range(2):
        env.add_and_ping("unpriv%d" % i)
    assert len(env.checkpoint()["pods"]) == 2
    d, _ = env.delete("unpriv0")
    assert d["ok"], d
    env.unwire("unpriv0")

    # ctl.sock: root; a member of admin_group, whom the ACL lets reach it
    # and SO_PEERGROUPS admits; not someone else, whom the ACL stops; and
    # not someone else who passes the ACL by CAP_DAC_OVERRIDE: SO_PEERCRED.
    r = enidctl(env.ctl_sock)
    assert r.returncode == 0 and "enid-netd" in r.stdout, r.stdout + r.stderr
    r = enidctl(env.ctl_sock, *setpriv("nobody", "nogroup", caps=(),
                                       groups=[ADMIN_GROUP]))
    assert r.returncode == 0, r.stdout + r.stderr
    r = enidctl(env.ctl_sock, *setpriv("nobody", "nogroup", caps=(),
                                       groups=[]))
    assert r.returncode != 0 and "Permission denied" in r.stderr, r.stderr
    r = enidctl(env.ctl_sock, *setpriv("nobody", "nogroup",
                                       caps=("dac_override",), groups=[]))
    assert r.returncode != 0, r.stdout
    assert e.wait_log("neither root nor in the admin group"), e.text()
    # cni.sock: root only, whatever the file's owner.
    a, _ = env.add("unpriv-nobody")
    assert a["ok"], a
    r = subprocess.run(setpriv("nobody", "nogroup", caps=("dac_override",),
                               groups=[]) +
                       ["/usr/bin/python3", "-c", CLOSED_ON_US,
                        str(env.cni_sock)], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    assert e.wait_log("cni: connection from pid"), e.text()
    assert "only root may connect" in e.text()

    os.kill(e.pid, signal.SIGTERM)
    assert e.proc.wait(30) == 0, e.text()


# ---- what a start without root refuses, naming the cause -------------------

@pytest.fixture
def unpriv(netns, workdir, enid_user, helper_dir):
    """Start enid without root in a throwaway namespace; (rc, log)."""
    pw = pwd.getpwnam(enid_user)
    group = grp.getgrgid(pw.pw_gid).gr_name

    def start(conf=None, user=enid_user, grp_name=group, caps=("net_admin",),
              groups=None, prepare=True):
        conf = conf or write_config(workdir, enid_user)
        if prepare:
            as_service_manager(workdir, enid_user, conf)
        log = workdir / "unpriv.log"
        with open(log, "w") as f:
            p = subprocess.Popen(
                ["ip", "netns", "exec", netns,
                 *setpriv(user, grp_name, caps=caps, groups=groups),
                 built("broker/enid"), "-d", "-f", str(conf), "-L",
                 str(helper_dir)], stdout=f, stderr=subprocess.STDOUT)
            try:
                rc = p.wait(30)
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait(10)
        return rc, log.read_text()

    return start


def test_refused_without_cap_net_admin(unpriv):
    rc, text = unpriv(caps=())
    assert rc == 1, text
    assert re.search(r'started without root, enid must run as user "enid" '
                     r'with CAP_NET_ADMIN .*: CAP_NET_ADMIN is not a '
                     r'permitted capability', text), text
    # Refused before any helper was started.
    assert "started as pid" not in text, text


def test_refused_as_another_user(unpriv, workdir, enid_user):
    conf = write_config(workdir, enid_user)
    as_service_manager(workdir, enid_user, conf)
    os.chmod(conf, 0o644)   # so that the configuration is not the refusal
    rc, text = unpriv(conf=conf, prepare=False, user="nobody",
                      grp_name="nogroup", groups=[])
    nobody = pwd.getpwnam("nobody").pw_uid
    assert rc == 1, text
    assert f"running as uid {nobody}" in text, text


def test_refused_with_supplementary_groups(unpriv):
    rc, text = unpriv(groups=[ADMIN_GROUP])
    adm = grp.getgrnam(ADMIN_GROUP).gr_gid
    assert rc == 1, text
    assert f"holds supplementary group {adm}, which only root can drop" \
        in text, text


@pytest.mark.parametrize("mode", [0o700, 0o755])
def test_refused_state_dir_not_the_users(unpriv, workdir, enid_user, mode):
    """Root's state directory, whether enid could open it or not."""
    conf = write_config(workdir, enid_user)
    as_service_manager(workdir, enid_user, conf)
    os.chown(workdir / "state", 0, 0)
    os.chmod(workdir / "state", mode)
    rc, text = unpriv(conf=conf, prepare=False)
    uid = pwd.getpwnam(enid_user).pw_uid
    assert rc == 1, text
    assert f"state is owned by uid 0, not by uid {uid}, and started " \
        "without root enid cannot take it over" in text, text
    st = os.stat(workdir / "state")
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, mode)


def test_refused_runtime_dir_missing(unpriv, workdir, enid_user):
    conf = write_config(workdir, enid_user)
    as_service_manager(workdir, enid_user, conf)
    shutil.rmtree(workdir / "run")
    rc, text = unpriv(conf=conf, prepare=False)
    assert rc == 1, text
    assert re.search(r"mkdir \S+/run as uid \d+ \(started without root, "
                     r"the service manager must create it.*\): Permission "
                     r"denied", text), text


def test_refused_config_unreadable(unpriv, workdir, enid_user):
    conf = write_config(workdir, enid_user)
    as_service_manager(workdir, enid_user, conf)
    os.chmod(conf, 0o600)
    rc, text = unpriv(conf=conf, prepare=False)
    assert rc == 1, text
    assert "Permission denied" in text and str(conf) in text, text
