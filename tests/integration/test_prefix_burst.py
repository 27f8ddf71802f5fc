"""A burst of ADDs on a node whose pool holds only its warm /28 (issue 24's
burst, tests/bench/bench_prefixes): every ADD answered, and the burst
served by assigns of prefixes on the ENI that has room for them, not by a
new ENI created because that one was busy with the burst's first assign.
"""
import ipaddress
import json
import os
import selectors
import socket
import time

from poolenv import PoolEnv

M5_LARGE = ("--instance-type", "m5.large", "--eni-limit", "3",
            "--ip-limit", "10")
BURST = 110


def burst_adds(sock, cids, max_s):
    """One connection an ADD, every request written, then every answer
    read; [answer] in the order of cids."""
    conns = []
    sel = selectors.DefaultSelector()
    try:
        for _ in cids:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conns.append(s)
            s.connect(str(sock))
        for s, c in zip(conns, cids):
            s.sendall((json.dumps({"op": "add", "container_id": c,
                                   "ifname": "eth0"}) + "\n").encode())
        for i, s in enumerate(conns):
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ, [i, b""])
        answers = [None] * len(cids)
        left = len(cids)
        end = time.monotonic() + max_s
        while left and time.monotonic() < end:
            for key, _ in sel.select(timeout=0.5):
                d = key.data
                chunk = key.fileobj.recv(65536)
                d[1] += chunk
                if chunk and not d[1].endswith(b"\n"):
                    continue
                sel.unregister(key.fileobj)
                answers[d[0]] = json.loads(d[1]) if d[1] else None
                left -= 1
        assert left == 0, "%d ADDs unanswered in %d s" % (left, max_s)
        return answers
    finally:
        sel.close()
        for s in conns:
            s.close()


def test_burst_waits_for_the_busy_eni(workdir, enid_user, helper_dir):
    env = PoolEnv(workdir, enid_user, helper_dir, sim_args=M5_LARGE,
                  prefix="pb%d" % (os.getpid() % 100000),
                  reconcile_interval_s=3600,
                  pool={"prefix_delegation": True, "max_pods": BURST,
                        "add_timeout_s": 30, "ip_cooldown_s": 0})
    try:
        env.start()
        env.wait(lambda: env.show("pool")["free"] == 16, 30,
                 "the warm /28")
        before = env.state()["calls"]
        # Every call slow, so that the burst's later ADDs come while the
        # assign for its first ones is in flight.
        env.faults([{"action": "*", "latency_ms": [50, 50]}])
        cids = ["%064x" % (0xb0000 + i) for i in range(BURST)]
        answers = burst_adds(env.cni_sock, cids, 60)
        bad = [a for a in answers if not (a and a.get("ok"))]
        assert not bad, bad[:3]
        ips = [a["ip"] for a in answers]
        assert len(set(ips)) == BURST
        st = env.state()
        calls = {k: v - before.get(k, 0) for k, v in st["calls"].items()
                 if v != before.get(k, 0)}
        print("calls during the burst: %r" % calls)
        assert "CreateNetworkInterface" not in calls, calls
        assert "AttachNetworkInterface" not in calls, calls
        assert 1 <= calls.get("AssignPrivateIpAddresses", 0) <= 2, calls
        enis = [e for e in env.node_enis(st)
                if e.get("instance_id") == env.node["instance_id"]]
        assert len(enis) == 1, enis
        nets = [ipaddress.ip_network(p) for p in enis[0]["prefixes"]]
        assert len(nets) == 7, nets
        for ip in ips:
            assert any(ipaddress.ip_address(ip) in n for n in nets), ip
    finally:
        env.stop()
