"""enidctl node-setup in a network namespace of the test's own: with
ip_family dual or ipv6 it sets exactly the settings the broker checks at
start (broker/prereq.c), on the link of the default route or the one
named, each reported on a line of its own, and a second run finds them
set; with ipv4 it changes nothing.  Whatever it refuses (no way to tell
the uplink, a link that is not there, not root) it refuses before it has
written anything.

"Exactly" is checked on every file under net/ipv6/conf and net/ipv4/conf,
read before and after: the only other changes allowed are those the
kernel makes itself when net.ipv6.conf.all.forwarding is written (it
carries the value to "default" and to every link).
"""
import json
import os
import secrets
import threading
import time
import subprocess

import pytest

import podwire
from conftest import built

CONF_DIRS = ("/proc/sys/net/ipv6/conf", "/proc/sys/net/ipv4/conf")


@pytest.fixture
def ns():
    """Two veths, eth0 up with the main table's IPv4 default route and
    eth1 up with none; removed after the test, also after a failure."""
    name = "enid-t-nodesetup-" + secrets.token_hex(4)
    podwire.run("ip", "netns", "add", name)
    try:
        podwire.ip_batch(name, (
            ("link", "set", "lo", "up"),
            ("link", "add", "eth0", "type", "veth", "peer", "name",
             "eth0p"),
            ("link", "add", "eth1", "type", "veth", "peer", "name",
             "eth1p"),
            ("link", "set", "eth0", "up"), ("link", "set", "eth0p", "up"),
            ("link", "set", "eth1", "up"), ("link", "set", "eth1p", "up"),
            ("addr", "add", "10.77.0.2/24", "dev", "eth0"),
            ("route", "add", "default", "via", "10.77.0.1", "dev", "eth0")))
        yield name
    finally:
        podwire.run("ip", "netns", "del", name, check=False)


def write_conf(workdir, family):
    path = workdir / ("enid-%s.conf" % family)
    path.write_text(json.dumps({"user": "enid", "ip_family": family}))
    os.chmod(path, 0o644)
    return str(path)


def node_setup(ns, conf, *args, user=None):
    prefix = ["setpriv", "--reuid", str(user), "--regid", str(user),
              "--clear-groups"] if user is not None else []
    return subprocess.run(["ip", "netns", "exec", ns, *prefix,
                           built("ctl/enidctl"), "-f", conf, "node-setup",
                           *args], capture_output=True, text=True,
                          timeout=30,
                          env=dict(os.environ, ASAN_OPTIONS="detect_leaks=1"))


def settings(ns):
    """Every readable setting of every link and of all and default."""
    def read():
        got = {}
        for top in CONF_DIRS:
            for link in os.listdir(top):
                for key in os.listdir(os.path.join(top, link)):
                    path = os.path.join(top, link, key)
                    try:
                        with open(path) as f:
                            got[path[len("/proc/sys/"):].replace(
                                "/", ".")] = f.read().strip()
                    except OSError:
                        pass        # stable_secret: EIO until set
        return got
    return podwire.in_netns(ns, read)


def changed(before, after):
    return {k: (before.get(k), after.get(k))
            for k in set(before) | set(after) if before.get(k) != after.get(k)}


def forwarding_spread(before, after):
    """What the kernel itself changes when all.forwarding goes to 1."""
    return {k: v for k, v in changed(before, after).items()
            if k.startswith("net.ipv6.conf.") and k.endswith(".forwarding")}


def sysctl_lines(out):
    return [line for line in out.splitlines() if line.startswith("sysctl ")]


def test_dual_sets_exactly_what_enid_checks(ns, workdir):
    # Wrong as a node can be without IPv6 off everywhere (all.disable_ipv6
    # = 1 would be carried to every link): eth1 set like eth0, to see it
    # left alone.
    podwire.sysctl(ns, ("net.ipv6.conf.default.disable_ipv6", "1"),
                   ("net.ipv6.conf.eth0.disable_ipv6", "1"),
                   ("net.ipv6.conf.eth1.disable_ipv6", "1"),
                   ("net.ipv6.conf.eth0.accept_ra", "0"))
    before = settings(ns)
    assert before["net.ipv6.conf.all.forwarding"] == "0"
    r = node_setup(ns, write_conf(workdir, "dual"))
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    assert r.stdout.splitlines()[0] == \
        "uplink eth0: the default route's link (/proc/net/route)"
    assert sysctl_lines(r.stdout) == [
        "sysctl net.ipv6.conf.all.disable_ipv6: already 0",
        "sysctl net.ipv6.conf.default.disable_ipv6: 1 -> 0",
        "sysctl net.ipv6.conf.eth0.disable_ipv6: 1 -> 0",
        "sysctl net.ipv6.conf.eth0.accept_ra: 0 -> 2",
        "sysctl net.ipv6.conf.all.forwarding: 0 -> 1",
    ], r.stdout
    after = settings(ns)
    spread = forwarding_spread(before, after)
    assert spread["net.ipv6.conf.all.forwarding"] == ("0", "1")
    assert all(v == ("0", "1") for v in spread.values()), spread
    assert {k: v for k, v in changed(before, after).items()
            if k not in spread} == {
        "net.ipv6.conf.default.disable_ipv6": ("1", "0"),
        "net.ipv6.conf.eth0.disable_ipv6": ("1", "0"),
        "net.ipv6.conf.eth0.accept_ra": ("0", "2"),
    }
    assert after["net.ipv6.conf.eth1.disable_ipv6"] == "1"
    assert after["net.ipv6.conf.eth1.accept_ra"] == "1"

    # A second run finds everything set and writes nothing.
    r = node_setup(ns, write_conf(workdir, "dual"))
    assert r.returncode == 0, r.stderr
    assert sysctl_lines(r.stdout) == [
        "sysctl net.ipv6.conf.%s: already %s" % kv for kv in (
            ("all.disable_ipv6", "0"), ("default.disable_ipv6", "0"),
            ("eth0.disable_ipv6", "0"), ("eth0.accept_ra", "2"),
            ("all.forwarding", "1"))], r.stdout
    assert settings(ns) == after


def test_ipv6_family_asks_the_same(ns, workdir):
    r = node_setup(ns, write_conf(workdir, "ipv6"))
    assert r.returncode == 0, r.stderr
    assert "sysctl net.ipv6.conf.eth0.accept_ra: 1 -> 2" in r.stdout
    assert "sysctl net.ipv6.conf.all.forwarding: 0 -> 1" in r.stdout


def test_all_disable_ipv6_is_written_before_default(ns, workdir):
    """Writing all.disable_ipv6 sets default's and every link's too: the
    lines say which values the kernel set along with it."""
    podwire.sysctl(ns, ("net.ipv6.conf.all.disable_ipv6", "1"))
    r = node_setup(ns, write_conf(workdir, "dual"))
    assert r.returncode == 0, r.stderr
    lines = sysctl_lines(r.stdout)
    assert lines[0] == "sysctl net.ipv6.conf.all.disable_ipv6: 1 -> 0"
    assert lines[1] == ("sysctl net.ipv6.conf.default.disable_ipv6: 1 -> 0 "
                        "(by the kernel, with net.ipv6.conf.all)"), lines
    after = settings(ns)
    assert after["net.ipv6.conf.eth0.disable_ipv6"] == "0"
    assert after["net.ipv6.conf.eth0.accept_ra"] == "2"


def test_ipv4_changes_nothing(ns, workdir):
    before = settings(ns)
    conf = write_conf(workdir, "ipv4")
    r = node_setup(ns, conf)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ("ip_family ipv4 (%s): pods get no IPv6, so enid "
                        "needs none of the node's IPv6 settings; nothing "
                        "changed\n" % conf)
    assert settings(ns) == before


def test_uplink_named(ns, workdir):
    before = settings(ns)
    r = node_setup(ns, write_conf(workdir, "dual"), "--uplink", "eth1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "uplink eth1: as named"
    assert "sysctl net.ipv6.conf.eth1.accept_ra: 1 -> 2" in r.stdout
    assert "eth0" not in r.stdout
    after = settings(ns)
    assert after["net.ipv6.conf.eth1.accept_ra"] == "2"
    assert after["net.ipv6.conf.eth0.accept_ra"] == \
        before["net.ipv6.conf.eth0.accept_ra"] == "1"


def test_ipv6_default_route_when_there_is_no_ipv4_one(ns, workdir):
    podwire.ip_batch(ns, (
        ("route", "del", "default", "dev", "eth0"),
        ("addr", "add", "fd00:77::2/64", "dev", "eth1", "nodad"),
        ("route", "add", "::/0", "via", "fd00:77::1", "dev", "eth1")))
    r = node_setup(ns, write_conf(workdir, "ipv6"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == \
        "uplink eth1: the default route's link (/proc/net/ipv6_route)"
    assert "sysctl net.ipv6.conf.eth1.accept_ra: 1 -> 2" in r.stdout


@pytest.mark.parametrize("args, why", [
    ((), "enidctl: node-setup: cannot tell the uplink: no default route, "
         "neither IPv4 in the main table (/proc/net/route) nor IPv6 "
         "(/proc/net/ipv6_route); name it with --uplink; nothing changed\n"),
    (("--uplink", "eth9"), "enidctl: node-setup: --uplink eth9: no such "
                           "link in this network namespace; nothing "
                           "changed\n"),
    (("--uplink", "all"), "enidctl: node-setup: --uplink \"all\" is not a "
                          "link name\n"),
    (("--uplink", "../eth0"), "enidctl: node-setup: --uplink \"../eth0\" "
                              "is not a link name\n"),
])
def test_refused_before_anything_is_written(ns, workdir, args, why):
    podwire.ip_batch(ns, (("route", "del", "default", "dev", "eth0"),))
    before = settings(ns)
    r = node_setup(ns, write_conf(workdir, "dual"), *args)
    assert r.returncode == 1, r.stdout
    assert r.stderr == why
    assert sysctl_lines(r.stdout) == []
    assert settings(ns) == before


def test_not_root_refused(ns, workdir):
    before = settings(ns)
    r = node_setup(ns, write_conf(workdir, "dual"), user=65534)
    assert r.returncode == 1, r.stdout
    assert r.stderr == ("enidctl: node-setup: must run as root (or with "
                        "CAP_NET_ADMIN): only they may write the network "
                        "sysctls; nothing changed\n")
    assert r.stdout == ""
    assert settings(ns) == before


def test_bad_configuration_refused(ns, workdir):
    path = workdir / "bad.conf"
    path.write_text('{"user": "enid", "ip_family": "ipv5"}')
    before = settings(ns)
    r = node_setup(ns, str(path))
    assert r.returncode == 1
    assert r.stderr.startswith("enidctl: configuration: "), r.stderr
    assert "ipv5" in r.stderr
    assert settings(ns) == before


def as_in_a_container(ns, conf, *args):
    """node-setup as a container runtime leaves it: /proc/sys read-only
    (runc's readonlyPaths), the host's /proc/sys/net bound writable at
    /mnt/host/proc/sys/net as the DaemonSet's hostPath volume does at
    /host/proc/sys/net.  In a mount namespace of its own, on a tmpfs, gone
    when it exits."""
    script = ("mount -t tmpfs tmpfs /mnt && "
              "mkdir -p /mnt/host/proc/sys/net && "
              "mount --bind /proc/sys/net /mnt/host/proc/sys/net && "
              "mount --bind /proc/sys /proc/sys && "
              "mount -o remount,bind,ro /proc/sys && "
              "exec \"$@\"")
    return subprocess.run(
        ["ip", "netns", "exec", ns, "unshare", "-m",
         "--propagation", "private", "sh", "-c", script, "sh",
         built("ctl/enidctl"), "-f", conf, "node-setup", *args],
        capture_output=True, text=True, timeout=30)


def test_read_only_proc_sys_refused_naming_the_way_out(ns, workdir):
    before = settings(ns)
    r = as_in_a_container(ns, write_conf(workdir, "dual"))
    assert r.returncode == 1, r.stdout
    assert r.stderr == (
        "enidctl: node-setup: /proc/sys/net/ipv6/conf/eth0/accept_ra: "
        "write: Read-only file system (a container's /proc/sys is "
        "read-only: mount the host's /proc/sys/net elsewhere and name it "
        "with --proc-sys, see enidctl(8))\n")
    assert settings(ns) == before


def test_proc_sys_mounted_elsewhere(ns, workdir):
    r = as_in_a_container(ns, write_conf(workdir, "dual"),
                          "--proc-sys", "/mnt/host/proc/sys")
    assert r.returncode == 0, r.stderr
    assert "sysctl net.ipv6.conf.eth0.accept_ra: 1 -> 2" in r.stdout
    assert "sysctl net.ipv6.conf.all.forwarding: 0 -> 1" in r.stdout
    after = settings(ns)
    assert after["net.ipv6.conf.eth0.accept_ra"] == "2"
    assert after["net.ipv6.conf.all.forwarding"] == "1"


def test_proc_sys_must_be_proc(ns, workdir):
    fake = workdir / "sys"
    (fake / "net" / "ipv6" / "conf" / "eth0").mkdir(parents=True)
    (fake / "net" / "ipv6" / "conf" / "eth0" / "accept_ra").write_text("1\n")
    before = settings(ns)
    r = node_setup(ns, write_conf(workdir, "dual"), "--proc-sys", str(fake))
    assert r.returncode == 1
    assert r.stderr == ("enidctl: node-setup: %s/net is not a proc file "
                        "system's; nothing changed\n" % fake)
    assert (fake / "net" / "ipv6" / "conf" / "eth0" /
            "accept_ra").read_text() == "1\n"
    assert settings(ns) == before


@pytest.mark.parametrize("args", [
    ("-j", "node-setup"), ("node-setup", "eth0"),
    ("-f", "/dev/null", "status"), ("--uplink", "eth0", "status"),
    ("--proc-sys", "/proc/sys", "metrics"), ("node-setup", "--uplink"),
])
def test_usage_errors(args):
    r = subprocess.run([built("ctl/enidctl"), *args], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2, (args, r.stdout, r.stderr)
    assert "enidctl [-f file] node-setup [--uplink LINK] [--proc-sys DIR]" \
        in r.stderr


def test_proc_sys_swapped_after_the_check_writes_nothing_else(ns, workdir):
    """--proc-sys in a directory another user may change: its net entry
    swapped between a proc one and a look-alike of plain files while
    node-setup runs.  The settings are written only through the net
    directory checked to be proc's, never into the look-alike (which, a
    symlink away, could be any file root may write)."""
    top = workdir / "procsys"
    top.mkdir()
    decoy = workdir / "decoy" / "net"
    files = {}
    for link in ("all", "default", "eth0"):
        d = decoy / "ipv6" / "conf" / link
        d.mkdir(parents=True)
        for key, value in (("disable_ipv6", "1\n"), ("accept_ra", "1\n"),
                           ("forwarding", "0\n")):
            (d / key).write_text(value)
            files[d / key] = value
    conf = write_conf(workdir, "dual")
    stop = threading.Event()

    def flip():
        targets = ("/proc/sys/net", str(decoy))
        i = 0
        end = time.monotonic() + 60
        while not stop.is_set() and time.monotonic() < end:
            tmp = top / ("net.%d" % (i % 2))
            os.symlink(targets[i % 2], tmp)
            os.replace(tmp, top / "net")
            i += 1
    t = threading.Thread(target=flip)
    t.start()
    try:
        # Before the fix the look-alike was written within the first
        # few runs; 20 keep the fast tier short.
        for _ in range(20):
            node_setup(ns, conf, "--proc-sys", str(top))
            if any(p.read_text() != v for p, v in files.items()):
                break
    finally:
        stop.set()
        t.join()
    assert {str(p): p.read_text() for p in files} == \
        {str(p): v for p, v in files.items()}
