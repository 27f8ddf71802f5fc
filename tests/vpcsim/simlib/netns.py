"""Network namespace plumbing for vpcsim: `ip` wrappers, setns() and
sysctls.

Every command is bounded by a timeout.  Nothing here touches the root
namespace: links are created with `ip -n NS`, and their peers are placed
straight into another named namespace.
"""
import ctypes
import os
import subprocess

CLONE_NEWNET = 0x40000000
IP = "/usr/sbin/ip" if os.path.exists("/usr/sbin/ip") else "/sbin/ip"
CMD_TIMEOUT_S = 10

_libc = ctypes.CDLL("libc.so.6", use_errno=True)


class NetnsError(Exception):
    pass


def run(args, check=True):
    """Run a command (list), return CompletedProcess; raise NetnsError on failure."""
    try:
        p = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=CMD_TIMEOUT_S, text=True)
    except subprocess.TimeoutExpired:
        raise NetnsError("timed out: %s" % " ".join(args))
    if check and p.returncode != 0:
        raise NetnsError("%s: %s" % (" ".join(args), p.stderr.strip()))
    return p


def ip(ns, *args, check=True):
    cmd = [IP]
    if ns:
        cmd += ["-n", ns]
    return run(cmd + list(args), check=check)


def ip_batch(ns, lines, force=False):
    """Run iproute2 commands, one per line, in one `ip -batch` process.

    A veth and the routes of its ten addresses are one exec rather than
    twenty-odd: the data plane keeps up with a fleet attaching at once.
    Without force the batch stops at the first failing command and this
    raises NetnsError naming it; with force every line is tried.
    """
    if not lines:
        return None
    cmd = [IP] + (["-n", ns] if ns else []) + (["-force"] if force else []) \
        + ["-batch", "-"]
    try:
        p = subprocess.run(cmd, input="\n".join(lines) + "\n",
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=CMD_TIMEOUT_S, text=True)
    except subprocess.TimeoutExpired:
        raise NetnsError("timed out: %s (%d commands)" % (" ".join(cmd),
                                                          len(lines)))
    if not force and p.returncode != 0:
        raise NetnsError("%s: %s" % (" ".join(cmd), p.stderr.strip()))
    return p


def list_netns():
    try:
        return sorted(os.listdir("/run/netns"))
    except FileNotFoundError:
        return []


def netns_exists(name):
    return name in list_netns()


def add_netns(name):
    run([IP, "netns", "add", name])


def del_netns(name):
    run([IP, "netns", "del", name], check=False)


def sysctl(ns, *pairs):
    """Set sysctls inside a namespace, in order: sysctl(ns, (key, value),
    ...).  /proc/sys/net shows the namespace of the thread that opens it,
    so this thread enters `ns` and writes them, with no exec."""
    def write():
        for key, value in pairs:
            with open("/proc/sys/" + key.replace(".", "/"), "w") as f:
                f.write("%s\n" % value)
    try:
        socket_in_netns(ns, write)
    except OSError as e:
        raise NetnsError("sysctl in %s: %s" % (ns, e))


def link_exists(ns, name):
    return ip(ns, "link", "show", "dev", name, check=False).returncode == 0


def _setns(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            e = ctypes.get_errno()
            raise OSError(e, "setns(%s): %s" % (path, os.strerror(e)))
    finally:
        os.close(fd)


def socket_in_netns(ns, factory):
    """Call factory() with this thread inside netns `ns`, then switch back.

    A socket keeps the namespace it was created in, so servers built here
    listen inside `ns` while the rest of the program stays in the root one.
    """
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        _setns("/run/netns/" + ns)
        try:
            return factory()
        finally:
            if _libc.setns(home, CLONE_NEWNET) != 0:
                # Staying in the wrong namespace would be worse than dying.
                os._exit(70)
    finally:
        os.close(home)
