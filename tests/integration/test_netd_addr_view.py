"""enid-netd's address view (issue 35): netd keeps every link's addresses
from one dump and the address notifications its event socket brings,
instead of a dump per pod request.  These tests add and remove addresses
behind netd's back between its requests (on a pod's veth, on a link of
the node's that is no ENI, on lo, in both families; a link removed with
its addresses; IPv4 peer addresses that differ in their peer alone) and
check that netd's refusals follow the kernel and not what netd read
last; and that when netd's event socket overruns (netd stopped while
thousands of addresses come and go), it dumps again and still decides
right.  Needs root; a few seconds.

    ENID_BUILDDIR=$PWD/build /usr/bin/python3 -m pytest -q \\
        tests/integration/test_netd_addr_view.py
"""
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netd_helpers import Driver, eni_node, run  # noqa
from netd_helpers import NEEDS_NETD  # noqa

ENI1 = "02:00:00:00:00:11"
VPC6 = "2600:1f14:abc:100::/56"
POD4, POD4_B = "10.0.16.9", "10.0.16.20"
POD6 = "2600:1f14:abc:110::a"
DUAL = "addr=%s addr6=%s table=101" % (POD4, POD6)
HELD = "configured on a link"
CHURN = 3000            # addresses added and removed while netd sleeps

pytestmark = NEEDS_NETD


@pytest.fixture
def node():
    with eni_node(ENI1) as ns:
        # A pod's veth (its peer would be in the pod) and a link of the
        # node's that is neither a default-route link nor an ENI.
        ns.ip("link", "add", "veth0a1b2c3", "type", "veth", "peer", "name",
              "vpeer0")
        ns.ip("link", "add", "stor0", "type", "veth", "peer", "name",
              "stor0p")
        for dev in ("veth0a1b2c3", "vpeer0", "stor0", "stor0p"):
            ns.ip("link", "set", dev, "up")
        yield ns


@pytest.fixture
def netd(node, tmp_path):
    with Driver(node, str(tmp_path)) as d:
        yield d.start(cidrs=("10.0.0.0/16", VPC6)).declare(ENI1)


def churn(path, tail=""):
    """An ip -batch file of CHURN IPv4 addresses added and removed on
    stor0, then tail: its path."""
    with open(path, "w") as f:
        for i in range(CHURN):
            a = "10.0.%d.%d/32" % (200 + i // 250, 1 + i % 250)
            f.write("addr add %s dev stor0\naddr del %s dev stor0\n" %
                    (a, a))
        f.write(tail)
    return str(path)


def ok(netd, line):
    r = netd.call(line)
    assert r["status"] == "ok", (line, r)


def held(netd, line, where=None):
    r = netd.call(line)
    assert r["status"] == "refused" and HELD in r["message"], (line, r)
    if where is not None:
        assert where in r["message"], (line, r)
    return r


def test_view_follows_addresses_behind_netds_back(node, netd):
    """An address put on a link after netd last looked makes the pod's
    request refused; taken off, the same request passes; both families,
    on a veth, another link of the node's and lo."""
    ok(netd, "addpod " + DUAL)              # the view is kept from here
    ok(netd, "delpod " + DUAL)
    cases = [("-4", POD4 + "/32", "veth0a1b2c3"),
             ("-6", POD6 + "/128", "veth0a1b2c3"),
             ("-4", POD4 + "/20", "stor0"),
             ("-6", POD6 + "/64", "stor0"),
             ("-4", POD4 + "/32", "lo"),
             ("-6", POD6 + "/128", "lo")]
    for fam, addr, dev in cases:
        node.addr_add_announced(fam, addr, dev)
        r = held(netd, "addpod " + DUAL, dev)
        assert ("IPv6" if fam == "-6" else "IPv4") in r["message"], r
        held(netd, "addpod addr=%s table=0" % (POD4 if fam == "-4"
                                                else POD6))
        node.ip(fam, "addr", "del", addr, "dev", dev)
        ok(netd, "addpod " + DUAL)
        ok(netd, "delpod " + DUAL)


def test_link_removed_with_its_addresses(node, netd):
    """A link deleted with addresses on it takes them along: netd, which
    refused the address while the link held it, accepts it after."""
    ok(netd, "addpod addr=%s table=0" % POD4_B)
    node.ip("addr", "add", POD4 + "/32", "dev", "veth0a1b2c3")
    node.addr_add_announced("-6", POD6 + "/128", "vpeer0")
    held(netd, "addpod " + DUAL)
    node.ip("link", "del", "veth0a1b2c3")      # its peer goes with it
    ok(netd, "addpod " + DUAL)
    ok(netd, "delpod " + DUAL)


def test_peer_addresses_that_differ_in_the_peer(node, netd):
    """Two IPv4 point-to-point addresses with one local address and two
    peers are two addresses to the kernel and one to the view: one of
    them removed, the other still holds the address."""
    ok(netd, "addpod addr=%s table=0" % POD4)
    ok(netd, "delpod addr=%s table=0" % POD4)
    for peer in ("10.0.99.1", "10.0.99.2"):
        node.ip("addr", "add", POD4_B, "peer", peer, "dev", "stor0")
    held(netd, "addpod addr=%s table=0" % POD4_B, "stor0")
    node.ip("addr", "del", POD4_B, "peer", "10.0.99.1", "dev", "stor0")
    held(netd, "addpod addr=%s table=0" % POD4_B, "stor0")
    node.ip("addr", "del", POD4_B, "peer", "10.0.99.2", "dev", "stor0")
    ok(netd, "addpod addr=%s table=0" % POD4_B)


def test_lost_notifications_dump_again(node, netd, tmp_path):
    """Thousands of address changes while netd cannot read overrun its
    event socket: netd says so, dumps again, and its refusals follow the
    kernel, also for the changes made before and after the loss."""
    ok(netd, "addpod " + DUAL)
    ok(netd, "delpod " + DUAL)
    batch = churn(tmp_path / "churn",
                  "addr add %s/128 dev veth0a1b2c3 nodad\n" % POD6)
    os.kill(netd.pid, signal.SIGSTOP)
    try:
        run("ip", "-n", node.name, "-batch", batch, timeout=120)
    finally:
        os.kill(netd.pid, signal.SIGCONT)
    held(netd, "addpod " + DUAL, "veth0a1b2c3")
    assert "the kernel dropped some" in netd.logtext()
    node.ip("-6", "addr", "del", POD6 + "/128", "dev", "veth0a1b2c3")
    node.ip("addr", "add", POD4 + "/32", "dev", "stor0")
    held(netd, "addpod " + DUAL, "stor0")
    node.ip("addr", "del", POD4 + "/32", "dev", "stor0")
    ok(netd, "addpod " + DUAL)
    assert not [l for l in node.ip("-4", "addr").splitlines()
                if "10.0.2" in l]


@pytest.mark.parametrize("plain_first,peer_addr", [
    (True, "10.0.99.1/24"), (False, "10.0.99.1/24"), (False, "0.0.0.0/24")])
def test_plain_address_beside_a_peer_one(node, netd, plain_first,
                                         peer_addr):
    """An IPv4 address without a peer and a point-to-point one with the
    same local address and length (the peer in another subnet, or none:
    0.0.0.0, which the kernel announces without IFA_ADDRESS) are two
    addresses to the kernel: the plain one removed, the other still
    holds the address, whichever came first."""
    ok(netd, "addpod addr=%s table=0" % POD4_B)
    ok(netd, "delpod addr=%s table=0" % POD4_B)
    plain = ("addr", "add", POD4_B + "/24", "dev", "stor0")
    peer = ("addr", "add", POD4_B, "peer", peer_addr, "dev", "stor0")
    for a in ((plain, peer) if plain_first else (peer, plain)):
        node.ip(*a)
    held(netd, "addpod addr=%s table=0" % POD4_B, "stor0")
    node.ip("addr", "del", POD4_B + "/24", "dev", "stor0")
    assert POD4_B in node.ip("-4", "addr", "show", "dev", "stor0")
    held(netd, "addpod addr=%s table=0" % POD4_B, "stor0")
    node.ip("addr", "del", POD4_B, "peer", peer_addr, "dev", "stor0")
    ok(netd, "addpod addr=%s table=0" % POD4_B)


@pytest.mark.parametrize("how", ["nomaster", "bridge deleted"])
def test_bridge_port_keeps_its_addresses(node, netd, how):
    """A link taken out of a bridge (or whose bridge is deleted) keeps its
    addresses, though the bridge announces the port's removal as an
    RTM_DELLINK of the bridge's family: the link is still there, and so
    are its addresses."""
    ok(netd, "addpod " + DUAL)
    ok(netd, "delpod " + DUAL)
    node.ip("link", "add", "br9", "type", "bridge")
    node.ip("addr", "add", POD4 + "/32", "dev", "stor0")
    node.addr_add_announced("-6", POD6 + "/128", "stor0")
    node.ip("link", "set", "stor0", "master", "br9")
    held(netd, "addpod " + DUAL, "stor0")
    if how == "nomaster":
        node.ip("link", "set", "stor0", "nomaster")
    else:
        node.ip("link", "del", "br9")
    assert POD4 in node.ip("-4", "addr", "show", "dev", "stor0")
    held(netd, "addpod " + DUAL, "stor0")
    held(netd, "addpod addr=%s table=0" % POD4, "stor0")
    held(netd, "addpod addr=%s table=0" % POD6, "stor0")


@pytest.mark.skipif(shutil.which("gdb") is None, reason="needs gdb")
def test_loss_seen_by_a_peek_is_a_loss(node, netd, tmp_path):
    """The event socket overruns after netd has read it for a request and
    before it looks whether anything is unread (netd held there under
    gdb).  The look is then what reports the loss, and the socket stays
    full, dropping notifications, until netd reads it empty: the view
    dumped then is no more current than one after a loss read, and an
    address added meanwhile must still be seen."""
    ok(netd, "addpod addr=%s table=0" % POD4)
    ok(netd, "delpod addr=%s table=0" % POD4)
    flood = churn(tmp_path / "flood")
    ready, script = str(tmp_path / "ready"), str(tmp_path / "gdb")
    with open(script, "w") as f:
        f.write("set pagination off\n"
                "break kernel_each_addr\n"
                "shell touch %s\n"
                "continue\n"
                # Held after the request's read of the socket, before
                # its look: the socket overruns.
                "shell ip -n %s -batch %s\n"
                # The look, the dump; then an address whose notification
                # the still-full socket drops.
                "finish\n"
                "shell ip -n %s addr add %s/32 dev stor0\n"
                "delete\n"
                "detach\n" % (ready, node.name, flood, node.name, POD4_B))
    gdb = subprocess.Popen(["gdb", "-q", "-batch", "-p", str(netd.pid),
                            "-x", script], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
    try:
        end = time.monotonic() + 60
        while not os.path.exists(ready) and time.monotonic() < end:
            time.sleep(0.05)
        assert os.path.exists(ready), gdb.stdout.read() if gdb.poll() \
            is not None else "gdb did not attach"
        r = netd.call("addpod addr=%s table=0" % POD4, timeout=120)
        assert r["status"] == "ok", r
        out = gdb.communicate(timeout=60)[0].decode(errors="replace")
    finally:
        if gdb.poll() is None:
            gdb.kill()
            gdb.wait()
    assert "Breakpoint 1" in out, out
    assert POD4_B in node.ip("-4", "addr", "show", "dev", "stor0")
    # netd reads its socket empty from its loop: then the request has
    # nothing unread to make it dump.
    end = time.monotonic() + 30
    while not netlink_drained(node) and time.monotonic() < end:
        time.sleep(0.1)
    assert netlink_drained(node), run("ip", "netns", "exec", node.name,
                                      "cat", "/proc/net/netlink").stdout
    held(netd, "addpod addr=%s table=0" % POD4_B, "stor0")
    assert "the kernel dropped some" in netd.logtext()


def netlink_drained(node):
    """Whether every rtnetlink socket of the namespace that listens to
    IPv4 address notifications (netd's event socket) has nothing queued
    (/proc/net/netlink's Groups and Rmem)."""
    out = run("ip", "netns", "exec", node.name, "cat",
              "/proc/net/netlink").stdout
    out = out.decode() if isinstance(out, bytes) else out
    for line in out.splitlines()[1:]:
        f = line.split()
        if f[1] == "0" and int(f[3], 16) & 0x10 and int(f[4]) != 0:
            return False
    return True


def test_link_moved_to_another_namespace_and_back(node, netd):
    """A link moved out of the node's namespace takes its addresses with
    it (the kernel flushes them); moved back and given the address
    again, it holds it again."""
    ok(netd, "addpod " + DUAL)
    ok(netd, "delpod " + DUAL)
    node.ip("addr", "add", POD4 + "/32", "dev", "stor0")
    node.addr_add_announced("-6", POD6 + "/128", "stor0")
    held(netd, "addpod " + DUAL, "stor0")
    other = node.name + "-mv"
    run("ip", "netns", "add", other)
    try:
        node.ip("link", "set", "stor0", "netns", other)
        ok(netd, "addpod " + DUAL)
        ok(netd, "delpod " + DUAL)
        run("ip", "-n", other, "link", "set", "stor0", "netns", node.name)
        node.ip("link", "set", "stor0", "up")
        node.ip("addr", "add", POD4 + "/32", "dev", "stor0")
        held(netd, "addpod addr=%s table=0" % POD4, "stor0")
    finally:
        run("ip", "netns", "del", other, check=False)
