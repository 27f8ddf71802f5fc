"""The peered network: 192.0.2.0/24 behind a peering connection is
reached from any address of the VPC as it is (a secondary address too,
which the internet gateway drops), routes back only to the VPC, and its
host's whoami service tells which source it saw."""
import ipaddress
import socket

from simlib import netns
from test_vpcsim_outside import Listener, outside, packets, ping, tcp, udp


def test_endpoints_describe_the_peered_network(sim):
    p = sim.ep["peered"]
    assert p["host"] == "192.0.2.10" and p["port"] == 7
    assert p["cidr"] == "192.0.2.0/24"
    assert p["netns"] == sim.prefix + "-peer" and p["netns"] in netns.list_netns()
    net = ipaddress.IPv4Network(p["cidr"])
    assert ipaddress.IPv4Address(p["host"]) in net
    # Beyond the VPC, apart from the public range and the sim's services.
    for other in (sim.ep["vpc_cidr"], sim.ep["outside"]["public_cidr"], "198.18.0.0/24"):
        assert not net.overlaps(ipaddress.IPv4Network(other)), other
    assert ipaddress.IPv4Address(sim.ep["outside"]["host"]) not in net
    seen = outside(sim)["peered_seen"]
    assert set(seen) == {"tcp", "udp"}
    assert all(ipaddress.IPv4Address(a) in ipaddress.IPv4Network(sim.ep["vpc_cidr"])
               for kind in seen.values() for a in kind), seen


def test_primary_address_reaches_the_peered_host_untranslated(sim):
    node = sim.node(0)
    ns, me = node["netns"], node["primary_ip"]
    host, port = sim.ep["peered"]["host"], sim.ep["peered"]["port"]
    before = outside(sim)
    assert ping(sim, ns, me, host)
    r = tcp(ns, me, host, port, send=b"peer")
    assert not isinstance(r, Exception), r
    line, echo = r
    assert line.split()[0] == me and echo == b"peer", r
    reply = udp(ns, me, host, port, b"dgram")
    assert not isinstance(reply, Exception), reply
    assert reply.split()[0].decode() == me and reply.endswith(b"dgram")
    after = outside(sim)
    assert after["peered_seen"]["tcp"].get(me, 0) == \
        before["peered_seen"]["tcp"].get(me, 0) + 1
    assert after["peered_seen"]["udp"].get(me, 0) == \
        before["peered_seen"]["udp"].get(me, 0) + 1
    # Not through the internet gateway: it neither admitted nor saw it.
    assert packets(after["admitted"], me) == packets(before["admitted"], me)
    assert after["seen"] == before["seen"]
    assert node["public_ip"] not in after["peered_seen"]["tcp"]


def test_secondary_address_reaches_the_peered_host_untranslated(sim, secondary):
    """The address the gateway drops (test_vpcsim_outside) is reached here
    as it is: what a node's snat.exclude relies on."""
    ns = sim.node(0)["netns"]
    host, port = sim.ep["peered"]["host"], sim.ep["peered"]["port"]
    before = outside(sim)
    assert ping(sim, ns, secondary, host)
    line, _ = tcp(ns, secondary, host, port)
    assert line.split()[0] == secondary, line
    after = outside(sim)
    assert after["peered_seen"]["tcp"].get(secondary, 0) == \
        before["peered_seen"]["tcp"].get(secondary, 0) + 1
    assert packets(after["dropped"], secondary) == packets(before["dropped"], secondary)
    # ... while toward the outside host the same address is dropped.
    assert not ping(sim, ns, secondary, sim.ep["outside"]["host"])
    assert packets(outside(sim)["dropped"], secondary) >= \
        packets(after["dropped"], secondary) + 1


def test_peered_network_routes_back_only_to_the_vpc(sim):
    p = sim.ep["peered"]
    # Not the sim's own services, not the internet.
    for dst in (sim.ep["vpc_host"], sim.ep["outside"]["host"],
                sim.node(0)["public_ip"]):
        q = sim.nsexec(p["netns"], "ping", "-n", "-q", "-c", "1", "-W", "1", dst,
                       check=False)
        assert q.returncode != 0, dst
    # Nor can the outside host reach it.
    q = sim.nsexec(sim.ep["outside"]["netns"], "ping", "-n", "-q", "-c", "1",
                   "-W", "1", p["host"], check=False)
    assert q.returncode != 0
    # A node's primary address, yes.
    q = sim.nsexec(p["netns"], "ping", "-n", "-q", "-c", "1", "-W", "1",
                   sim.node(1)["primary_ip"], check=False)
    assert q.returncode == 0, q.stdout + q.stderr


def test_peered_client_connects_to_a_node(sim):
    node = sim.node(1)
    lis = Listener(node["netns"])
    try:
        st, r = sim.control("POST", "/outside/connect",
                            {"node": 1, "port": lis.port, "via": "peered",
                             "send": "hi", "timeout_ms": 3000})
        assert st == 200 and r["ok"] and r["eof"], r
        assert r["via"] == "peered" and r["from"] == sim.ep["peered"]["host"]
        assert r["to"] == "%s:%d" % (node["primary_ip"], lis.port)
        assert r["peer_reply"] == sim.ep["peered"]["host"] + " hi", r
        assert lis.peers == [sim.ep["peered"]["host"]]
    finally:
        lis.close()


def test_peered_whoami_times_out_from_an_unrouted_source(sim):
    """A source the VPC does not route (an address on no ENI) never gets
    there: the router's reverse-path filter drops it first."""
    node = sim.node(0)
    stray = "10.0.15.250"
    sim.nsexec(node["netns"], "ip", "addr", "add", stray + "/32", "dev", "eth0")
    try:
        before = outside(sim)["peered_seen"]["tcp"].get(stray, 0)
        r = tcp(node["netns"], stray, sim.ep["peered"]["host"], sim.ep["peered"]["port"],
                timeout=1.0)
        assert isinstance(r, socket.timeout), r
        assert outside(sim)["peered_seen"]["tcp"].get(stray, 0) == before
    finally:
        sim.nsexec(node["netns"], "ip", "addr", "del", stray + "/32", "dev", "eth0",
                   check=False)
