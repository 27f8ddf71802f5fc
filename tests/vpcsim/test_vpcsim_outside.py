"""Beyond the VPC: the internet gateway admits only a node's primary
address, which it translates to the node's public address, drops and
counts every other source, and lets an outside client reach a node's
primary address through its public one."""
import ipaddress
import socket
import threading
import time


from simlib import netns


def ping(sim, ns, src, dst):
    p = sim.nsexec(ns, "ping", "-n", "-q", "-c", "1", "-W", "1", "-I", src, dst,
                   check=False)
    return p.returncode == 0


def tcp(ns, src, dst, port, send=b"", timeout=2.0):
    """A TCP exchange from `src` in namespace `ns` with a whoami service:
    (its first line, the echo of `send`), or the OSError that stopped it."""
    s = netns.socket_in_netns(ns, lambda: socket.socket(socket.AF_INET,
                                                        socket.SOCK_STREAM))
    try:
        s.settimeout(timeout)
        s.bind((src, 0))
        try:
            s.connect((dst, port))
            got = b""
            want = None
            for _ in range(100):
                if want is None and b"\n" in got:
                    want = got.index(b"\n") + 1 + len(send)
                    if send:
                        s.sendall(send)
                if want is not None and len(got) >= want:
                    break
                data = s.recv(4096)
                if not data:
                    break
                got += data
            line, _, echo = got.partition(b"\n")
            return line.decode(), echo
        except OSError as e:
            return e
    finally:
        s.close()


def udp(ns, src, dst, port, payload, timeout=2.0):
    s = netns.socket_in_netns(ns, lambda: socket.socket(socket.AF_INET,
                                                        socket.SOCK_DGRAM))
    try:
        s.settimeout(timeout)
        s.bind((src, 0))
        s.sendto(payload, (dst, port))
        try:
            return s.recvfrom(2000)[0]
        except OSError as e:
            return e
    finally:
        s.close()


def outside(sim):
    st, out = sim.control("GET", "/outside")
    assert st == 200, out
    return out


def packets(counters, addr):
    return counters.get(addr, {}).get("packets", 0)


class Listener:
    """A TCP listener inside a node namespace: it answers each connection
    with "PEER_ADDR DATA" (what the client sent, read until it pauses),
    or says nothing when `silent`."""

    def __init__(self, ns, silent=False):
        def make():
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("0.0.0.0", 0))
            s.listen(8)
            return s
        self.sock = netns.socket_in_netns(ns, make)
        self.sock.settimeout(10)
        self.port = self.sock.getsockname()[1]
        self.silent = silent
        self.peers = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while True:
            try:
                c, peer = self.sock.accept()
            except OSError:
                return
            self.peers.append(peer[0])
            with c:
                c.settimeout(0.3)
                data = b""
                try:
                    data = c.recv(100)
                except OSError:
                    pass
                if self.silent:
                    time.sleep(0.8)
                    continue
                c.sendall(("%s %s" % (peer[0], data.decode())).encode())

    def close(self):
        # shutdown() wakes the accept() blocked in the thread; close() alone
        # would not.
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self.thread.join(15)
        assert not self.thread.is_alive()


def test_endpoints_describe_the_outside(sim):
    o = sim.ep["outside"]
    assert o["host"] == "203.0.113.10" and o["port"] == sim.ep["vpc_host_port"] == 7
    assert o["netns"] == sim.prefix + "-out"
    assert o["netns"] in netns.list_netns()
    pub = ipaddress.IPv4Network(o["public_cidr"])
    vpc = ipaddress.IPv4Network(sim.ep["vpc_cidr"])
    assert not pub.overlaps(vpc) and ipaddress.IPv4Address(o["host"]) not in vpc
    publics = [n["public_ip"] for n in sim.ep["nodes"]]
    assert len(set(publics)) == len(publics)
    assert all(ipaddress.IPv4Address(p) in pub for p in publics)
    out = outside(sim)
    assert out["mappings"] == [{"node": n["index"], "private": n["primary_ip"],
                                "public": n["public_ip"]} for n in sim.ep["nodes"]]
    assert out["host"] == o["host"] and out["netns"] == o["netns"]


def test_primary_address_reaches_the_outside_translated(sim):
    node = sim.node(0)
    ns, me, pub = node["netns"], node["primary_ip"], node["public_ip"]
    host, port = sim.ep["outside"]["host"], sim.ep["outside"]["port"]
    before = outside(sim)
    assert ping(sim, ns, me, host)
    r = tcp(ns, me, host, port, send=b"hello")
    assert not isinstance(r, Exception), r
    line, echo = r
    assert line.split()[0] == pub, line             # seen as the public address
    assert echo == b"hello"
    reply = udp(ns, me, host, port, b"dgram")
    assert not isinstance(reply, Exception), reply
    assert reply.split()[0].decode() == pub and reply.endswith(b"dgram")
    after = outside(sim)
    # ping: 1, TCP: at least SYN, ACK, data, FIN; UDP: 1
    assert packets(after["admitted"], me) >= packets(before["admitted"], me) + 6
    assert packets(after["dropped"], me) == 0
    assert after["seen"]["tcp"].get(pub, 0) == before["seen"]["tcp"].get(pub, 0) + 1
    assert after["seen"]["udp"].get(pub, 0) == before["seen"]["udp"].get(pub, 0) + 1
    assert me not in after["seen"]["tcp"]
    # Inside the VPC the same node is seen untranslated.
    line, _ = tcp(ns, me, sim.ep["vpc_host"], sim.ep["vpc_host_port"])
    assert line.split()[0] == me
    assert outside(sim)["vpc_host_seen"]["tcp"].get(me, 0) >= 1


def test_secondary_address_is_dropped_and_counted(sim, secondary):
    node = sim.node(0)
    ns = node["netns"]
    host, port = sim.ep["outside"]["host"], sim.ep["outside"]["port"]
    # The VPC itself routes the address (it is assigned), so what stops it
    # below is the gateway, not the router's reverse-path filter.
    assert ping(sim, ns, secondary, sim.ep["vpc_host"])
    line, _ = tcp(ns, secondary, sim.ep["vpc_host"], sim.ep["vpc_host_port"])
    assert line.split()[0] == secondary
    before = outside(sim)
    assert not ping(sim, ns, secondary, host)
    r = tcp(ns, secondary, host, port, timeout=1.0)
    assert isinstance(r, socket.timeout), r
    assert isinstance(udp(ns, secondary, host, port, b"x", timeout=0.5),
                      socket.timeout)
    after = outside(sim)
    # ping 1, at least two SYNs within the second, UDP 1
    assert packets(after["dropped"], secondary) >= \
        packets(before["dropped"], secondary) + 3, after["dropped"]
    assert packets(after["admitted"], secondary) == 0
    assert after["seen"] == before["seen"]
    # ... while the primary address of the same node still gets out
    assert ping(sim, ns, node["primary_ip"], host)


def test_outside_reaches_only_public_addresses(sim):
    """From the outside, a public address with no node behind it is dropped
    at the gateway and counted; nothing routes to a private address."""
    o = sim.ep["outside"]
    unmapped = str(ipaddress.IPv4Network(o["public_cidr"]).network_address + 250)
    assert unmapped not in [n["public_ip"] for n in sim.ep["nodes"]]
    before = outside(sim)["dropped_inbound"]["packets"]
    p = sim.nsexec(o["netns"], "ping", "-n", "-q", "-c", "1", "-W", "1", unmapped,
                   check=False)
    assert p.returncode != 0
    assert outside(sim)["dropped_inbound"]["packets"] >= before + 1
    p = sim.nsexec(o["netns"], "ping", "-n", "-q", "-c", "1", "-W", "1",
                   sim.node(0)["primary_ip"], check=False)
    assert p.returncode != 0 and "unreachable" in (p.stdout + p.stderr).lower()


def test_outside_client_connects_to_a_node(sim):
    node = sim.node(1)
    lis = Listener(node["netns"])
    try:
        st, r = sim.control("POST", "/outside/connect",
                            {"node": 1, "port": lis.port, "send": "ping",
                             "timeout_ms": 3000})
        assert st == 200 and r["ok"], r
        # Only the destination is translated: the node sees the client.
        assert r["peer_reply"] == sim.ep["outside"]["host"] + " ping", r
        assert r["eof"] and r["via"] == "internet"
        assert r["to"] == "%s:%d" % (node["public_ip"], lis.port)
        st, r = sim.control("POST", "/outside/connect",
                            {"node": 1, "port": lis.port, "via": "vpc"})
        assert st == 200 and r["ok"], r
        assert r["peer_reply"] == sim.ep["vpc_host"] + " ", r
        assert r["to"] == "%s:%d" % (node["primary_ip"], lis.port)
        assert lis.peers == [sim.ep["outside"]["host"], sim.ep["vpc_host"]]
    finally:
        lis.close()
    # Nobody listens any more: refused, quickly.
    st, r = sim.control("POST", "/outside/connect", {"node": 1, "port": lis.port})
    assert st == 200 and not r["ok"] and "refused" in r["error"].lower(), r
    assert r["elapsed_ms"] < 2000


def test_outside_client_waits_no_longer_than_asked(sim):
    lis = Listener(sim.node(0)["netns"], silent=True)
    try:
        t0 = time.monotonic()
        st, r = sim.control("POST", "/outside/connect",
                            {"node": 0, "port": lis.port, "timeout_ms": 400})
        took = time.monotonic() - t0
        assert st == 200 and r["ok"] and not r["eof"] and r["peer_reply"] == "", r
        assert 0.35 <= r["elapsed_ms"] / 1000.0 < 1.0 and took < 2.0, (r, took)
    finally:
        lis.close()


def test_outside_bad_input(sim):
    n = len(sim.ep["nodes"])
    cases = [(b"not json", "JSON"),
             (b"[1]", "expected"),
             (b'{"port": 80}', "node"),
             (b'{"node": 0}', "port"),
             (b'{"node": "0", "port": 80}', "node"),
             (b'{"node": %d, "port": 80}' % n, "node"),
             (b'{"node": -1, "port": 80}', "node"),
             (b'{"node": 0, "port": 0}', "port"),
             (b'{"node": 0, "port": 65536}', "port"),
             (b'{"node": 0, "port": 80.5}', "port"),
             (b'{"node": 0, "port": 80, "timeout_ms": 0}', "timeout_ms"),
             (b'{"node": 0, "port": 80, "timeout_ms": 600000}', "timeout_ms"),
             (b'{"node": 0, "port": 80, "timeout_ms": "1"}', "timeout_ms"),
             (b'{"node": 0, "port": 80, "via": "moon"}', "via"),
             (b'{"node": 0, "port": 80, "send": 5}', "send"),
             (b'{"node": 0, "port": 80, "send": "%s"}' % (b"x" * 70000), "send"),
             (b'{"node": 0, "port": 80, "bogus": 1}', "bogus")]
    for raw, what in cases:
        st, out = sim.control("POST", "/outside/connect", raw=raw)
        assert st == 400 and what in out.get("error", ""), (raw[:60], st, out)
    assert sim.control("GET", "/outside/connect")[0] == 404
    assert sim.control("POST", "/outside", {})[0] == 404
    assert outside(sim)["host"] == sim.ep["outside"]["host"]    # still serving
