"""contrib/: the systemd unit, the DaemonSet, the example configuration
and the CNI conflist, checked against what enid's start-up really does.

systemd is not PID 1 on the machines the tests run on, so the unit is never
started by systemd here.  Instead: systemd-analyze verifies it against a
`make install` tree and scores it, and enid is started in a node of the
simulated VPC the way the unit would start it where that can be reproduced
without systemd: as the unit's User=, with the same capability bounding
set, ambient capabilities, no_new_privs and umask (setpriv), in the
runtime and state directories systemd would make for that user, under
strace, whose record is then held against the unit's system call filter,
address families, writable paths, /proc, /dev and W^X settings.  Then the
unit's capability is removed to show it is needed, and so is each of the
capabilities the DaemonSet gives enid's start as root.
"""
import grp
import json
import os
import pathlib
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

import podwire
from conftest import BUILDDIR, SRCDIR, built, libcni_version, sim_config

try:
    import yaml
except ImportError:	# the unit's tests do not need it
    yaml = None

CONTRIB = os.path.join(SRCDIR, "contrib")
UNIT_IN = os.path.join(CONTRIB, "enid.service.in")
DAEMONSET = os.path.join(CONTRIB, "daemonset.yaml")
CONF_EXAMPLE = os.path.join(CONTRIB, "enid.conf.example")
CONFLIST = os.path.join(CONTRIB, "10-enid.conflist")
IMAGE_BASE = os.path.join(CONTRIB, "image-base")

# `systemd-analyze security` items that fail because of what start-up
# needs; each must be explained in a comment of the unit (checked below).
# The score these leave (1.7) is about the floor for a daemon that needs
# CAP_NET_ADMIN on the host's network and cannot list the EC2 endpoint's
# addresses; the issue asks for 2.0 or lower.
RULED_OUT = {
    "PrivateUsers=",
    "PrivateNetwork=",
    "IPAddressDeny=",
    "RootDirectory=/RootImage=",
    "DeviceAllow=",
    "SystemCallFilter=~@privileged",
    "AmbientCapabilities=",
    "CapabilityBoundingSet=~CAP_NET_ADMIN",
    "RestrictAddressFamilies=~AF_UNIX",
    "RestrictAddressFamilies=~AF_NETLINK",
    "RestrictAddressFamilies=~AF_(INET|INET6)",
}
MAX_EXPOSURE = 2.0

# What the unit's capability's absence breaks, as enid logs it.
UNIT_CAP_FAILURE = {
    "CAP_NET_ADMIN": r"enid\[\d+\]: .*started without root, enid must run "
                     r"as user \"enid\" with CAP_NET_ADMIN .*: CAP_NET_ADMIN "
                     r"is not a permitted capability",
}

# The start as root (the DaemonSet's): what each capability's absence
# breaks, at the first start and at a later one (the state directory is
# then the enid user's).
ROOT_CAP_FAILURE = {
    "CAP_SETUID": (r"enid\[\d+\]: .*privilege drop: setresuid",) * 2,
    "CAP_SETGID": (r"enid\[\d+\]: .*privilege drop: setgroups",) * 2,
    "CAP_SETPCAP": (r"privilege drop: dropping capability \d+ from the "
                    r"bounding set",) * 2,
    "CAP_CHOWN": (r"enid\.lock: giving it to uid \d+: Operation not",) * 2,
    "CAP_FOWNER": (r"setting owner and mode of \S+/run: Operation not",) * 2,
    "CAP_DAC_OVERRIDE": (r"ctl\.sock: bind: Permission denied",
                         r"/state: not a directory we can use"),
    # netd asks the kernel for its nftables table before it drops
    # privilege: the first thing CAP_NET_ADMIN is missing for.
    "CAP_NET_ADMIN": (r"enid-netd\[\d+\]: .*nftables: reading table ip "
                      r"enid: Operation not permitted; enid-netd lacks "
                      r"CAP_NET_ADMIN",) * 2,
}

# The devices PrivateDevices= leaves in /dev.
PRIVATE_DEVICES = re.compile(
    r"^/dev/(null|zero|full|random|urandom|tty|ptmx|pts/.*|shm/.*|"
    r"stdin|stdout|stderr|fd/.*)$")

# The configuration keys the example leaves out on purpose: static
# credentials do not belong in an example; the instance role is the default.
SECRET_KEYS = {"access_key_id", "secret_access_key", "session_token"}


# ---- helpers -----------------------------------------------------------

def have(cmd):
    return shutil.which(cmd) is not None


def need(cmd, why):
    if not have(cmd):
        pytest.skip(f"{cmd} is not installed ({why}; tests/deps.sh "
                    "installs it)")


def read(path):
    with open(path) as f:
        return f.read()


def parse_unit(text):
    """{key: [values]} of the [Service] and [Unit] lines, and the text of
    the comments."""
    settings, comments = {}, []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("#"):
            comments.append(s[1:])
        elif "=" in s and not s.startswith("["):
            k, _, v = s.partition("=")
            settings.setdefault(k, []).append(v)
    return settings, "\n".join(comments)


def unit_caps(settings):
    caps = settings["CapabilityBoundingSet"][-1].split()
    assert caps, "CapabilityBoundingSet= is empty"
    return caps


def template_caps():
    return unit_caps(parse_unit(read(UNIT_IN))[0])


def daemonset_caps():
    """The capabilities the DaemonSet adds, read without a YAML parser (the
    tests are parametrized with them)."""
    m = re.search(r"^\s+add: \[([^\]]*)\]", read(DAEMONSET), re.M | re.S)
    assert m, "no capabilities add: list in " + DAEMONSET
    return ["CAP_" + c for c in re.findall(r'"(\w+)"', m.group(1))]


def built_unit():
    path = os.path.join(BUILDDIR, "contrib", "enid.service")
    if not os.path.exists(path):
        pytest.fail(f"{path} is not built; run make first")
    return path


def conf_default(name):
    """A path default compiled into enid, from common/conf.h."""
    m = re.search(r'#define\s+%s\s+"([^"]+)"' % name,
                  read(os.path.join(SRCDIR, "common", "conf.h")))
    assert m, f"{name} not found in common/conf.h"
    return m.group(1)


def sanitizer_build():
    m = re.search(r"^SAN_CFLAGS = (.*)$",
                  read(os.path.join(BUILDDIR, "Makefile")), re.M)
    return bool(m and m.group(1).strip())


_groups = {}


def syscall_group(name):
    """The system calls of a systemd filter group, nested groups expanded,
    as this machine's systemd-analyze lists them."""
    if name not in _groups:
        out = subprocess.run(["systemd-analyze", "syscall-filter", name],
                             capture_output=True, text=True, check=True)
        calls = set()
        for line in out.stdout.splitlines()[1:]:
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            calls |= syscall_group(s) if s.startswith("@") else {s}
        assert calls, f"systemd-analyze lists nothing for {name}"
        _groups[name] = calls
    return _groups[name]


def unit_syscalls(settings):
    """The allow list the unit's SystemCallFilter= lines make: the first
    line sets allow-list mode (with @default implied, as systemd adds it),
    later lines add, and "~" lines remove."""
    lines = settings["SystemCallFilter"]
    assert not lines[0].startswith("~"), "expected an allow list"
    allowed = set(syscall_group("@default"))
    for line in lines:
        deny = line.startswith("~")
        for item in line.lstrip("~").split():
            calls = syscall_group(item) if item.startswith("@") else {item}
            allowed = allowed - calls if deny else allowed | calls
    return allowed


# ---- the systemd unit ----------------------------------------------------

def test_unit_is_built_from_the_template():
    text = read(built_unit())
    assert "@sbindir@" not in text
    settings, _ = parse_unit(text)
    for key in ("ExecStart", "ExecStartPre"):
        argv0 = settings[key][0].split()[0]
        assert os.path.isabs(argv0) and argv0.endswith("/sbin/enid"), argv0
    assert settings["ExecStart"][0].split()[1:] == ["-d"]
    assert settings["ExecStartPre"][0].split()[1:] == ["-n"]
    # Then the node's IPv6 settings, as root ("+": outside User= and the
    # sandbox, whose ProtectKernelTunables= makes /proc/sys read-only),
    # by the enidctl installed beside enid (enidctl(8), node-setup).
    assert len(settings["ExecStartPre"]) == 2, settings["ExecStartPre"]
    setup = settings["ExecStartPre"][1].split()
    enid = settings["ExecStart"][0].split()[0]
    assert setup == ["+" + enid + "ctl", "node-setup"], setup
    assert settings["ProtectKernelTunables"] == ["yes"]


def test_unit_passes_systemd_analyze_verify():
    need("systemd-analyze", "the unit is checked with systemd-analyze")
    need("make", "the unit is verified against a make install tree")
    dest = tempfile.mkdtemp(prefix="enid-destdir-")
    try:
        # Not the jobserver of a make that runs these tests.
        menv = {k: v for k, v in os.environ.items()
                if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
        r = subprocess.run(["make", "-s", "-C", BUILDDIR, "install",
                            "DESTDIR=" + dest], env=menv,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        settings, _ = parse_unit(read(built_unit()))
        sbin_enid = settings["ExecStart"][0].split()[0]
        assert os.access(dest + sbin_enid, os.X_OK), \
            f"make install put no enid at {sbin_enid}"
        # The unit as it would be installed into that tree: the same file,
        # with the DESTDIR in front of the daemon's path.
        udir = os.path.join(dest, "unit")
        os.mkdir(udir)
        unit = os.path.join(udir, "enid.service")
        with open(unit, "w") as f:
            f.write(read(built_unit()).replace(sbin_enid, dest + sbin_enid))
        mans = [os.path.join(d, f) for d, _, fs in os.walk(dest)
                for f in fs if f in ("enid.8", "enid.conf.5")]
        assert len(mans) == 2, f"make install put these pages: {mans}"
        env = dict(os.environ, SYSTEMD_COLORS="0", SYSTEMD_PAGER="")
        argv = ["systemd-analyze", "verify"]
        if have("man"):
            # Documentation= is checked with man(1) against that tree.
            env["MANPATH"] = os.path.dirname(os.path.dirname(mans[0]))
        else:
            argv.append("--man=no")
        r = subprocess.run(argv + [unit], env=env, capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0 and not (r.stdout + r.stderr).strip(), \
            r.stdout + r.stderr
    finally:
        shutil.rmtree(dest, ignore_errors=True)


def security_report(unit):
    r = subprocess.run(["systemd-analyze", "security", "--offline=true",
                        "--no-pager", unit], capture_output=True, text=True,
                       env=dict(os.environ, SYSTEMD_COLORS="0"), timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    m = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", r.stdout)
    assert m, "no overall exposure in:\n" + r.stdout
    failed = {line.split()[1] for line in r.stdout.splitlines()
              if line.startswith("\u2717")}
    return float(m.group(1)), failed, r.stdout


def test_unit_security_exposure():
    need("systemd-analyze", "the unit is scored with systemd-analyze")
    unit = built_unit()
    text = read(unit)
    settings, comments = parse_unit(text)
    score, failed, report = security_report(unit)
    print(report)

    unexplained = failed - RULED_OUT
    assert not unexplained, \
        f"settings start-up does not rule out are missing: {unexplained}"
    for item in failed:
        setting = item.split("=")[0]
        assert setting + "=" in comments, \
            f"{item} fails but no comment in the unit explains {setting}="
    assert score <= MAX_EXPOSURE, report
    m = re.search(r"scores it (\d+\.\d+)", comments)
    assert m and float(m.group(1)) == score, \
        f"the unit's comment says {m and m.group(1)}, systemd says {score}"

    # What the issue asks for by name.
    assert settings["ProtectSystem"] == ["strict"]
    assert settings["ProtectHome"] == ["yes"]
    assert settings["PrivateTmp"] == ["yes"]
    assert settings["ProtectKernelTunables"] == ["yes"]
    assert settings["SystemCallArchitectures"] == ["native"]
    assert settings["NoNewPrivileges"] == ["yes"]
    assert set(settings["RestrictAddressFamilies"][-1].split()) == \
        {"AF_UNIX", "AF_NETLINK", "AF_INET", "AF_INET6"}
    for cap in unit_caps(settings):
        assert re.search(r"\b%s\b" % cap, comments), \
            f"{cap} is kept but not explained"
    # enid's own start without root: as the user enid.conf names by
    # default, with the capability it passes to enid-netd, and nothing
    # else to be had.
    assert settings["User"] == [conf_default("ENID_USER")]
    assert unit_caps(settings) == ["CAP_NET_ADMIN"]
    assert settings["AmbientCapabilities"] == ["CAP_NET_ADMIN"]
    for fam in ("AF_UNIX", "AF_NETLINK", "AF_INET"):
        assert fam in comments, f"{fam} is allowed but not explained"

    # Its directories are enid's defaults, so ProtectSystem=strict leaves
    # exactly those writable.
    assert "/run/" + settings["RuntimeDirectory"][0] == \
        conf_default("ENID_RUNTIME_DIR")
    assert "/var/lib/" + settings["StateDirectory"][0] == \
        conf_default("ENID_STATE_DIR")


# ---- enid started as the unit starts it, in a node of the simulated VPC --

def setpriv_caps(caps):
    return ",".join(["-all"] + ["+" + c[4:].lower() for c in caps])


def unit_start_argv(settings, conf, helpers, trace=None, without=None):
    """enid's command line as the unit starts it: as User= with the user's
    groups, the bounding set, the ambient (and so inheritable)
    capabilities, no_new_privs; without one capability if asked; under
    strace if asked."""
    (user,) = settings["User"]
    group = grp.getgrgid(pwd.getpwnam(user).pw_gid).gr_name
    bound = [c for c in unit_caps(settings) if c != without]
    ambient = [c for c in settings["AmbientCapabilities"][-1].split()
               if c != without]
    argv = ["setpriv", "--reuid", user, "--regid", group, "--init-groups",
            "--bounding-set=" + setpriv_caps(bound),
            "--inh-caps=" + setpriv_caps(ambient)]
    if ambient:
        argv.append("--ambient-caps=" + setpriv_caps(ambient)[5:])
    argv += ["--no-new-privs", built("broker/enid"), "-d", "-f", str(conf),
             "-L", str(helpers)]
    if trace:
        argv = ["strace", "-f", "-qq", "-y", "-s", "4096", "-o", str(trace),
                "--"] + argv
    return argv


def as_unit_prepares(settings, workdir, conf):
    """What systemd does before ExecStart=: RuntimeDirectory= and
    StateDirectory= (here under workdir, as the configuration says) made
    for User= with the unit's modes; and the configuration as the unit's
    header comment has it, root's and readable by the user."""
    pw = pwd.getpwnam(settings["User"][0])
    for d, key in (("run", "RuntimeDirectoryMode"),
                   ("state", "StateDirectoryMode")):
        mode = int(settings[key][0], 8)
        (workdir / d).mkdir(mode=mode, exist_ok=True)
        os.chown(workdir / d, pw.pw_uid, pw.pw_gid)
        os.chmod(workdir / d, mode)
    os.chown(conf, 0, pw.pw_gid)
    os.chmod(conf, 0o640)


def root_start_argv(caps, conf, helpers):
    """enid's command line as the DaemonSet starts it: root, the bounding
    set, no inheritable capabilities, no_new_privs."""
    return ["setpriv", "--bounding-set=" + setpriv_caps(caps),
            "--inh-caps=-all", "--no-new-privs", built("broker/enid"), "-d",
            "-f", str(conf), "-L", str(helpers)]


def start_in_node(ns, argv, log):
    # UMask=0077, as the unit sets it.
    return subprocess.Popen(["ip", "netns", "exec", ns] + argv,
                            stdout=log, stderr=subprocess.STDOUT,
                            preexec_fn=lambda: os.umask(0o077))


def wait_for(logpath, needle, proc, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if needle in read(logpath):
            return True
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    return needle in read(logpath)


def trace_records(path, enid_path):
    """(pid, line) of every traced system call made by enid and its
    helpers: setpriv's own calls, before it executes enid, are dropped."""
    started = False
    out = []
    with open(path) as f:
        for line in f:
            m = re.match(r"(\d+) +(.*)", line)
            if not m:
                continue
            pid, rest = int(m.group(1)), m.group(2)
            if not started:
                if rest.startswith('execve("%s"' % enid_path) and \
                        rest.rstrip().endswith("= 0"):
                    started = True
                continue
            out.append((pid, rest))
    assert started, f"no exec of {enid_path} in {path}"
    return out


def syscall_name(rest):
    m = re.match(r"(?:<\.\.\. )?([a-z_0-9]+)(?:\(| resumed>)", rest)
    return m.group(1) if m else None


FD_PATH = r'(?:AT_FDCWD(?:<([^>]*)>)?|\d+<([^>]*)>)'
WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC")


def written_paths(name, rest, cwd):
    """The paths a call creates, changes or removes (empty for reads)."""
    def join(d1, d2, p):
        base = d1 or d2 or cwd
        return p if p.startswith("/") else os.path.join(base, p)

    if not rest.startswith(name + "("):
        return []	# the rest of a call whose arguments came before
    args = rest[len(name) + 1:]
    if name in ("openat", "openat2"):
        m = re.match(FD_PATH + r', "([^"]*)", ([A-Z_0-9|]+)', args)
        if m and any(f in m.group(4) for f in WRITE_FLAGS):
            return [join(m.group(1), m.group(2), m.group(3))]
        return []
    if name in ("open", "creat"):
        m = re.match(r'"([^"]*)", ([A-Z_0-9|]+)', args)
        if m and (name == "creat" or
                  any(f in m.group(2) for f in WRITE_FLAGS)):
            return [join(None, None, m.group(1))]
        return []
    if name in ("mkdir", "rmdir", "unlink", "chmod", "chown", "lchown",
                "truncate", "mknod", "rename", "link", "symlink"):
        return [join(None, None, p) for p in re.findall(r'"([^"]*)"', args)]
    if name in ("mkdirat", "unlinkat", "fchmodat", "fchownat", "mknodat",
                "renameat", "renameat2", "linkat", "symlinkat",
                "utimensat"):
        return [join(a, b, p) for a, b, p in
                re.findall(FD_PATH + r', "([^"]*)"', args)]
    if name in ("setxattr", "lsetxattr", "removexattr", "lremovexattr"):
        return [join(None, None, p) for p in re.findall(r'"([^"]*)"',
                                                          args)[:1]]
    if name in ("fchmod", "fchown", "ftruncate", "fallocate"):
        m = re.match(r"\d+<([^>]*)>", args)
        return [m.group(1)] if m else ["<unknown fd: %s>" % args[:40]]
    if name == "bind":
        m = re.search(r'sun_path="([^"]*)"', args)
        return [m.group(1)] if m else []
    return []


def read_paths(rest):
    return re.findall(r'"(/(?:proc|dev)(?:/[^"]*)?)"', rest)


def test_unit_bounds_hold_for_a_real_start(sim, workdir, helper_dir,
                                           enid_user):
    need("strace", "enid's system calls are recorded with strace")
    need("setpriv", "the unit's bounding set is applied with setpriv")
    need("systemd-analyze", "the unit's filter groups come from it")
    settings, _ = parse_unit(read(built_unit()))
    ns = sim.ep["nodes"][0]["netns"]
    # admin_group: ctl.sock is then let to it by an ACL entry.
    conf = sim_config(workdir, enid_user, admin_group="adm")
    as_unit_prepares(settings, workdir, conf)
    run_dir, state_dir = workdir / "run", workdir / "state"
    trace = workdir / "strace.out"
    logpath = workdir / "enid.log"
    enid = built("broker/enid")

    with open(logpath, "w") as log:
        proc = start_in_node(ns, unit_start_argv(settings, conf, helper_dir,
                                                 trace), log)
        try:
            assert wait_for(logpath, "pool: running", proc, 90), \
                read(logpath)
            broker = int(re.search(r"enid\[(\d+)\]: started as uid "
                                   r"\d+ \(without root\)",
                                   read(logpath)).group(1))
            # The sockets keep their modes under UMask=0077.
            assert os.stat(run_dir / "cni.sock").st_mode & 0o777 == 0o600
            assert os.stat(run_dir / "ctl.sock").st_mode & 0o777 == 0o660
            # Work that reaches every process: an address for a pod (cloud
            # calls, netd rules, the checkpoint), a release, the admin
            # socket.
            a, _ = podwire.add(run_dir / "cni.sock", "c0ntr1b0000000001")
            assert a["ok"], a
            d, _ = podwire.delete(run_dir / "cni.sock", "c0ntr1b0000000001")
            assert d["ok"], d
            st = subprocess.run([built("ctl/enidctl"), "-s",
                                 str(run_dir / "ctl.sock"), "status"],
                                capture_output=True, text=True, timeout=30)
            assert st.returncode == 0, st.stdout + st.stderr
            rss = {}
            for pid in [broker] + [int(p) for p in read(
                    f"/proc/{broker}/task/{broker}/children").split()]:
                status = read(f"/proc/{pid}/status")
                rss[read(f"/proc/{pid}/comm").strip()] = int(re.search(
                    r"VmRSS:\s+(\d+) kB", status).group(1))
            print("resident kB:", rss)
            os.kill(broker, signal.SIGTERM)
            assert proc.wait(30) == 0, read(logpath)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)

    records = trace_records(trace, enid)
    pids = {pid for pid, _ in records}
    allowed = unit_syscalls(settings)
    families = set(settings["RestrictAddressFamilies"][-1].split())
    writable = (str(run_dir), str(state_dir))
    problems = {}	# one example of each refusal
    used, written = set(), set()

    def refuse(key, rest):
        problems.setdefault(key, rest)

    for pid, rest in records:
        name = syscall_name(rest)
        if name is None:
            continue
        used.add(name)
        if name not in allowed:
            refuse(f"SystemCallFilter= refuses {name}", rest)
        if name == "socket":
            fam = re.match(r"socket\((AF_[A-Z0-9]+)", rest)
            if fam and fam.group(1) not in families:
                refuse(f"RestrictAddressFamilies= refuses {fam.group(1)}",
                       rest)
        for p in written_paths(name, rest, SRCDIR):
            written.add(p)
            if not any(p == w or p.startswith(w + "/") for w in writable):
                refuse(f"ProtectSystem=strict refuses writing {p}", rest)
        for p in read_paths(rest):
            if p.startswith("/proc"):
                first = p.split("/")[2] if p.count("/") >= 2 else ""
                if first not in ("self", "thread-self") and \
                        not (first.isdigit() and int(first) in pids):
                    refuse(f"ProcSubset=pid or ProtectProc= hide {p}", rest)
            elif not PRIVATE_DEVICES.match(p):
                refuse(f"PrivateDevices= hides {p}", rest)
        if name in ("mprotect", "pkey_mprotect") and "PROT_EXEC" in rest or \
                name == "mmap" and "PROT_WRITE" in rest and \
                "PROT_EXEC" in rest:
            refuse(f"MemoryDenyWriteExecute= refuses {name}", rest)
    print(f"{len(records)} calls of {len(used)} kinds by pids "
          f"{sorted(pids)}: {' '.join(sorted(used))}")
    # The record holds start-up and the work after it.
    assert len(pids) >= 3, "the trace does not cover the three processes"
    assert {"capset", "prctl", "seccomp", "bind", "lsetxattr"} <= used, used
    # Started as the user, nothing changes identity or owner.
    assert not used & {"setresuid", "setresgid", "setgroups", "chown",
                       "fchown", "fchownat"}, used
    assert {str(run_dir / "cni.sock"), str(run_dir / "ctl.sock"),
            str(state_dir / "checkpoint.json")} <= written, written
    if sanitizer_build():
        # The sanitizer runtimes make calls of their own; the unit is for
        # release builds, and its verdict on them is what counts.
        problems = {k: v for k, v in problems.items()
                    if not k.startswith("SystemCallFilter=")}
    else:
        limit_kb = 128 * 1024	# the DaemonSet's memory limit
        assert sum(rss.values()) * 2 <= limit_kb, rss
    assert not problems, "\n".join(f"{k}: {v}" for k, v in problems.items())


@pytest.mark.parametrize("cap", template_caps())
def test_unit_capability_is_needed(cap, sim, workdir, helper_dir, enid_user):
    """The unit's start without cap (in neither the bounding nor the
    ambient set) is refused, and says why."""
    need("setpriv", "the unit's bounding set is applied with setpriv")
    settings, _ = parse_unit(read(built_unit()))
    ns = sim.ep["nodes"][0]["netns"]
    conf = sim_config(workdir, enid_user)
    as_unit_prepares(settings, workdir, conf)
    text = start_to_fail(ns, unit_start_argv(settings, conf, helper_dir,
                                             without=cap),
                         workdir / "enid.log")
    expected = UNIT_CAP_FAILURE[cap]
    assert re.search(expected, text), \
        f"without {cap} the log does not match {expected!r}"


def start_to_fail(ns, argv, logpath):
    with open(logpath, "w") as log:
        proc = start_in_node(ns, argv, log)
        try:
            rc = proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    text = read(logpath)
    print(text)	# shown when it fails
    assert rc != 0 and "pool: running" not in text, text
    return text


@pytest.mark.parametrize("start", ["first", "later"])
@pytest.mark.parametrize("cap", daemonset_caps())
def test_root_start_capability_is_needed(cap, start, sim, workdir,
                                         helper_dir, enid_user):
    """The start as root, with the DaemonSet's capabilities but cap."""
    need("setpriv", "the bounding set is applied with setpriv")
    caps = [c for c in daemonset_caps() if c != cap]
    ns = sim.ep["nodes"][0]["netns"]
    conf = sim_config(workdir, enid_user)
    if start == "later":
        # The runtime directory may be new at every start (it is on
        # tmpfs), but the state directory is as the last run left it.
        (workdir / "state").mkdir(mode=0o700)
        shutil.chown(workdir / "state", enid_user, enid_user)
    text = start_to_fail(ns, root_start_argv(caps, conf, helper_dir),
                         workdir / "enid.log")
    expected = ROOT_CAP_FAILURE[cap][start == "later"]
    assert re.search(expected, text), \
        f"without {cap} the log does not match {expected!r}"


# ---- the DaemonSet ---------------------------------------------------------

def daemonset_docs():
    if yaml is None:
        pytest.skip("python3-yaml is not installed (tests/deps.sh installs "
                    "it)")
    with open(DAEMONSET) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    kinds = {d["kind"]: d for d in docs}
    assert set(kinds) == {"ConfigMap", "DaemonSet"}, list(kinds)
    return kinds["ConfigMap"], kinds["DaemonSet"]


def init_container(ds, name):
    (c,) = [c for c in ds["spec"]["template"]["spec"]["initContainers"]
            if c["name"] == name]
    return c


def walk(obj):
    yield obj
    if isinstance(obj, dict):
        for v in obj.values():
            yield from walk(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from walk(v)


def test_daemonset_structure():
    cm, ds = daemonset_docs()
    pod = ds["spec"]["template"]["spec"]
    assert ds["spec"]["selector"]["matchLabels"].items() <= \
        ds["spec"]["template"]["metadata"]["labels"].items()
    assert pod["hostNetwork"] is True
    assert pod["dnsPolicy"] == "Default"
    assert pod["securityContext"]["seccompProfile"]["type"] == \
        "RuntimeDefault"
    for node in walk(ds):
        if isinstance(node, dict):
            assert node.get("privileged") is not True, node
            assert node.get("hostPID") is not True, node

    volumes = {v["name"]: v for v in pod["volumes"]}
    host = {v["hostPath"]["path"]: n for n, v in volumes.items()
            if "hostPath" in v}
    assert set(host) == {"/run/enid", "/var/lib/enid", "/opt/cni/bin",
                         "/etc/cni/net.d", "/proc/sys/net"}, host
    assert volumes["config"]["configMap"]["name"] == cm["metadata"]["name"]

    (enid,) = pod["containers"]
    sc = enid["securityContext"]
    assert sc["privileged"] is False
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["capabilities"]["drop"] == ["ALL"]
    # Exactly what a start as root needs (test_root_start_capability_is_
    # needed), each explained in a comment.
    added = ["CAP_" + c for c in sc["capabilities"]["add"]]
    assert sorted(added) == sorted(daemonset_caps()) == \
        sorted(ROOT_CAP_FAILURE), added
    comments = "\n".join(line.strip() for line in read(DAEMONSET).splitlines()
                         if line.strip().startswith("#"))
    for cap in added:
        assert re.search(r"#\s+(\w+, )*%s\b" % cap[4:], comments), \
            f"{cap} is added but not explained"
    mounts = {m["mountPath"]: m["name"] for m in enid["volumeMounts"]}
    # Same paths inside as on the host: the plugin on the host and enid in
    # the container must meet at one socket.
    for path in ("/run/enid", "/var/lib/enid"):
        assert mounts.get(path) == host[path], mounts
    assert mounts["/etc/enid"] == "config"
    assert enid["command"][0] == "/usr/sbin/enid" and "-d" in enid["command"]
    probe = enid["livenessProbe"]["exec"]["command"]
    assert probe[0].endswith("/enidctl") and probe[1:] == ["status"], probe
    assert enid["resources"]["requests"] and enid["resources"]["limits"]

    # The node set up first, so that a node it cannot set up gets no
    # conflist; then the plugin installed.
    assert [c["name"] for c in pod["initContainers"]] == \
        ["node-setup", "install-cni"]
    setup = init_container(ds, "node-setup")
    assert setup["command"][:2] == ["/usr/sbin/enidctl", "node-setup"]
    ssc = setup["securityContext"]
    # Root, and nothing more: the kernel needs uid 0 alone to write net.*
    # sysctls; the runtime's read-only /proc/sys is gone round by the
    # host's /proc/sys/net, writable, where --proc-sys names it.
    assert ssc["runAsUser"] == 0 and ssc["privileged"] is False
    assert ssc["allowPrivilegeEscalation"] is False
    assert ssc["readOnlyRootFilesystem"] is True
    assert ssc["capabilities"] == {"drop": ["ALL"]}
    smounts = {m["mountPath"]: m for m in setup["volumeMounts"]}
    net = smounts["/host/proc/sys/net"]
    assert net["name"] == host["/proc/sys/net"]
    assert not net.get("readOnly", False)
    assert volumes[net["name"]]["hostPath"]["type"] == "Directory"
    assert setup["command"][2:] == ["--proc-sys", "/host/proc/sys"]
    assert smounts["/etc/enid"]["name"] == "config"
    assert smounts["/etc/enid"]["readOnly"] is True
    # Only the node-setup init container reaches the node's settings.
    for c in pod["containers"] + [init_container(ds, "install-cni")]:
        assert all(m["name"] != net["name"] for m in c["volumeMounts"]), c

    init = init_container(ds, "install-cni")
    isc = init["securityContext"]
    assert isc["capabilities"]["drop"] == ["ALL"]
    assert "add" not in isc["capabilities"]
    assert isc["readOnlyRootFilesystem"] is True
    env = {e["name"]: e["value"] for e in init["env"]}
    imounts = {m["mountPath"]: m["name"] for m in init["volumeMounts"]}
    assert imounts[env["CNI_BIN_DIR"]] == host["/opt/cni/bin"]
    assert imounts[env["CNI_NET_DIR"]] == host["/etc/cni/net.d"]
    assert os.path.dirname(env["CONFLIST"]) in imounts


def test_daemonset_configmap_matches_contrib(tmp_path):
    cm, _ = daemonset_docs()
    assert json.loads(cm["data"]["enid.conf"]) == \
        json.loads(read(CONF_EXAMPLE))
    # The conflist, with enid_user the image's uid (contrib/image-base).
    cml = json.loads(cm["data"]["10-enid.conflist"])
    (plugin,) = cml["plugins"]
    uid = re.search(r"^ENID_UID=(\d+)$", read(IMAGE_BASE), re.M).group(1)
    assert plugin.pop("enid_user") == int(uid)
    assert cml == json.loads(read(CONFLIST))
    conf = tmp_path / "enid.conf"
    conf.write_text(cm["data"]["enid.conf"])
    r = subprocess.run([built("broker/enid"), "-n", "-f", str(conf)],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode == 0, r.stderr


def run_installer(init, env):
    """The init container's command, from the build tree."""
    (cmd,) = init["command"]
    assert "args" not in init
    assert cmd == "/usr/libexec/enid/enid-cni-install"
    return subprocess.run([built("cni/enid-cni-install")], env=env,
                          capture_output=True, text=True, timeout=30)


def installer_env(tmp_path, cm, init):
    bindir, netdir = tmp_path / "bin", tmp_path / "net.d"
    bindir.mkdir()
    netdir.mkdir()
    # As the kubelet projects a ConfigMap item: a link through "..data".
    cmdir = tmp_path / "configmap"
    (cmdir / "..2026_01_01").mkdir(parents=True)
    (cmdir / "..2026_01_01" / "10-enid.conflist").write_text(
        cm["data"]["10-enid.conflist"])
    os.symlink("..2026_01_01", cmdir / "..data")
    conflist = cmdir / "10-enid.conflist"
    os.symlink("..data/10-enid.conflist", conflist)
    env = {"PATH": "/usr/bin:/bin", "ENID_CNI": built("cni/enid-cni"),
           "CONFLIST": str(conflist), "CNI_BIN_DIR": str(bindir),
           "CNI_NET_DIR": str(netdir), "CNI_VERSION": "auto"}
    assert {e["name"]: e["value"] for e in init["env"]}["CNI_VERSION"] == \
        "auto"
    assert set(env) - {"PATH"} == {e["name"] for e in init["env"]}
    return env, bindir, netdir


def tree(*dirs):
    out = {}
    for d in dirs:
        for p in sorted(d.iterdir()):
            out[str(p)] = (os.readlink(p) if p.is_symlink() else
                           p.read_bytes() if p.is_file() else "other")
    return out


def test_daemonset_init_container_installs_the_plugin(tmp_path):
    """The init container's program, with its host directories moved
    under a scratch directory: twice, as a restarted pod would."""
    cm, ds = daemonset_docs()
    init = init_container(ds, "install-cni")
    env, bindir, netdir = installer_env(tmp_path, cm, init)
    want_conflist = json.loads(cm["data"]["10-enid.conflist"])
    for _ in range(2):
        r = run_installer(init, env)
        assert r.returncode == 0, r.stderr
        assert sorted(os.listdir(bindir)) == ["enid-cni", "enid-ipam"]
        assert sorted(os.listdir(netdir)) == ["10-enid.conflist"]
    assert os.stat(bindir / "enid-cni").st_mode & 0o777 == 0o755
    with open(bindir / "enid-cni", "rb") as f, \
            open(built("cni/enid-cni"), "rb") as g:
        assert f.read() == g.read()
    assert os.readlink(bindir / "enid-ipam") == "enid-cni"
    assert os.stat(netdir / "10-enid.conflist").st_mode & 0o777 == 0o644
    assert read(netdir / "10-enid.conflist") == cm["data"]["10-enid.conflist"]

    # CNI_VERSION pins one version: cniVersion rewritten, cniVersions
    # gone, and the plugin takes what the runtime then passes it.
    for version in ("1.1.0", "1.0.0", "0.4.0"):
        r = run_installer(init, dict(env, CNI_VERSION=version))
        assert r.returncode == 0, r.stderr
        assert sorted(os.listdir(netdir)) == ["10-enid.conflist"]
        assert os.stat(netdir / "10-enid.conflist").st_mode & 0o777 == \
            0o644
        got = json.loads(read(netdir / "10-enid.conflist"))
        want = dict(want_conflist, cniVersion=version)
        del want["cniVersions"]
        assert got == want, (version, got)
        assert libcni_version(got, "1.1.0") == version
        assert_plugin_takes(got, version, tmp_path)
    # Unset is "auto".
    r = run_installer(init, {k: v for k, v in env.items()
                             if k != "CNI_VERSION"})
    assert r.returncode == 0, r.stderr
    assert json.loads(read(netdir / "10-enid.conflist")) == want_conflist
    # A version it does not know fails the init container, naming it,
    # and the conflist installed before stays as it was.
    for bad in ("1.2.0", "latest", "1.1.0 "):
        r = run_installer(init, dict(env, CNI_VERSION=bad))
        assert r.returncode != 0
        assert 'CNI_VERSION "%s" is not auto' % bad in r.stderr, r.stderr
        assert sorted(os.listdir(netdir)) == ["10-enid.conflist"]
        assert json.loads(read(netdir / "10-enid.conflist")) == \
            want_conflist


FOREIGN = [
    ("bin", "enid-cni", b"#!/bin/sh\nexec another-plugin\n",
     "enid-cni is not enid's"),
    ("bin", "enid-ipam", b"\x7fELF not ours", "enid-ipam is not enid's"),
    ("bin", "enid-ipam", "host-local", "enid-ipam is a symbolic link"),
    ("bin", "enid-cni", "/usr/lib/cni/ptp", "enid-cni is a symbolic link"),
    ("net", "10-enid.conflist",
     b'{"cniVersion": "1.0.0", "name": "x", "plugins": [{"type": "ptp"}]}',
     "10-enid.conflist is not enid's"),
    ("net", "10-enid.conflist", b"not json", "10-enid.conflist is not"),
    ("net", "10-enid.conflist", None, "not a regular file"),
]


@pytest.mark.parametrize("where,name,content,message", FOREIGN)
def test_daemonset_init_container_leaves_foreign_files(tmp_path, where, name,
                                                       content, message):
    """A file under one of its names that is not enid's: the installer
    fails naming it, and nothing in either directory changes."""
    cm, ds = daemonset_docs()
    init = init_container(ds, "install-cni")
    env, bindir, netdir = installer_env(tmp_path, cm, init)
    path = (bindir if where == "bin" else netdir) / name
    if content is None:
        os.mkfifo(path)
    elif isinstance(content, str):
        os.symlink(content, path)
    else:
        path.write_bytes(content)
    (netdir / "00-other.conflist").write_text("{}")
    before = tree(bindir, netdir)
    r = run_installer(init, env)
    assert r.returncode == 1, r.stdout
    assert str(path) in r.stderr and message in r.stderr, r.stderr
    assert "nothing installed" in r.stderr
    assert tree(bindir, netdir) == before


@pytest.mark.parametrize("missing", ["CNI_BIN_DIR", "CNI_NET_DIR"])
def test_daemonset_init_container_needs_both_directories(tmp_path, missing):
    cm, ds = daemonset_docs()
    init = init_container(ds, "install-cni")
    env, bindir, netdir = installer_env(tmp_path, cm, init)
    gone = pathlib.Path(env[missing])
    gone.rmdir()
    r = run_installer(init, env)
    assert r.returncode == 1
    assert "%s %s: No such file or directory" % (missing, gone) in \
        r.stderr, r.stderr
    assert not gone.exists()
    left = bindir if missing == "CNI_NET_DIR" else netdir
    assert os.listdir(left) == []


def test_daemonset_init_container_writes_nothing_into_an_unwritable_dir(
        workdir, enid_user):
    """Without write access to the net directory (a user other than its
    owner, as a read-only mount would), nothing is written to either."""
    cm, ds = daemonset_docs()
    init = init_container(ds, "install-cni")
    env, bindir, netdir = installer_env(workdir, cm, init)
    pw = pwd.getpwnam(enid_user)
    os.chown(bindir, pw.pw_uid, pw.pw_gid)
    shutil.copy(env["ENID_CNI"], workdir / "enid-cni")
    os.chmod(workdir / "enid-cni", 0o755)
    os.chmod(env["CONFLIST"], 0o644)
    env["ENID_CNI"] = str(workdir / "enid-cni")
    r = subprocess.run(["setpriv", "--reuid", enid_user, "--regid",
                        enid_user, "--clear-groups",
                        built("cni/enid-cni-install")], env=env,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    assert "writing in %s: Permission denied; nothing installed" % netdir \
        in r.stderr, r.stderr
    assert os.listdir(bindir) == [] and os.listdir(netdir) == []


# ---- the example configuration and the conflist ----------------------------

def flat_keys(obj):
    keys = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            keys.add(k)
            keys |= flat_keys(v)
    return keys


def test_conf_example_is_valid():
    r = subprocess.run([built("broker/enid"), "-n", "-f", CONF_EXAMPLE],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode == 0, r.stderr
    assert "OK" in r.stderr


def test_conf_example_sets_every_documented_key():
    documented = set()
    for line in read(os.path.join(SRCDIR, "man", "enid.conf.5")).splitlines():
        if line.startswith(".It Cm "):
            documented |= set(re.findall(r"Cm (\w+)", line))
    assert len(documented) > 20, documented
    example = json.loads(read(CONF_EXAMPLE))
    missing = documented - SECRET_KEYS - flat_keys(example)
    assert not missing, f"enid.conf(5) documents keys the example lacks: " \
        f"{sorted(missing)}"
    assert not SECRET_KEYS & flat_keys(example)
    assert "subnets" in example


def assert_plugin_takes(conflist, version, tmp_path):
    """The plugin's configuration as libcni builds it from the conflist
    (the plugin's object with name and cniVersion put in) passes the
    plugin's checks: with no daemon at the socket, a DEL fails on that
    alone (11), and STATUS answers 50 at 1.1.0 and is refused below it
    (1), where no runtime sends it."""
    plugin = dict(conflist["plugins"][0], cniVersion=version,
                  name=conflist["name"], socket=str(tmp_path / "cni.sock"))
    env = {"CNI_PATH": "/opt/cni", "CNI_CONTAINERID": "c0ffee",
           "CNI_IFNAME": "eth0"}
    # In a namespace of its own: a DEL removes the host end it names.
    r = subprocess.run(["unshare", "--net", built("cni/enid-cni")],
                       input=json.dumps(plugin),
                       env=dict(env, CNI_COMMAND="DEL"),
                       capture_output=True, text=True, timeout=30)
    out = json.loads(r.stdout)
    assert r.returncode != 0 and out["code"] == 11, out
    assert out["cniVersion"] == version, out
    assert "cannot reach enid at %s" % plugin["socket"] in out["msg"], out
    r = subprocess.run([built("cni/enid-cni")], input=json.dumps(plugin),
                       env=dict(env, CNI_COMMAND="STATUS"),
                       capture_output=True, text=True, timeout=30)
    out = json.loads(r.stdout)
    assert r.returncode != 0 and out["cniVersion"] == version, out
    if version == "1.1.0":
        assert out["code"] == 50, out
        assert "cannot reach enid at %s" % plugin["socket"] in out["msg"]
    else:
        assert out["code"] == 1, out
        assert "STATUS needs cniVersion 1.1.0" in out["msg"], out


def test_conflist():
    """Every runtime reads a version it takes results in: libcni before
    1.2 (containerd 1.6, 1.7 with an older libcni) refuses a 1.1.0 result,
    so cniVersion is 1.0.0; cniVersions lets libcni 1.2 and later take
    1.1.0, with GC and STATUS."""
    conf = json.loads(read(CONFLIST))
    assert conf["cniVersion"] == "1.0.0"
    assert conf["cniVersions"] == ["1.0.0", "1.1.0"]
    assert libcni_version(conf, "1.0.0") == "1.0.0"
    assert libcni_version(conf, "1.1.0") == "1.1.0"
    assert conf["name"]
    (plugin,) = conf["plugins"]
    assert plugin["type"] == "enid-cni"
    # The keys enid-cni accepts.
    assert set(plugin) <= {"type", "socket", "mtu", "dns"}, plugin
    assert plugin["socket"] == conf_default("ENID_RUNTIME_DIR") + "/cni.sock"
    assert isinstance(plugin["mtu"], int) and 576 <= plugin["mtu"] <= 9001


def test_conflist_is_accepted_by_the_plugin(tmp_path):
    """What each generation of runtime hands enid-cni from this conflist
    passes the plugin's checks (assert_plugin_takes)."""
    conf = json.loads(read(CONFLIST))
    for newest in ("1.0.0", "1.1.0"):
        assert_plugin_takes(conf, libcni_version(conf, newest), tmp_path)
