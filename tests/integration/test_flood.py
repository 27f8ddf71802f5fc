"""Hundreds of ADDs at once, each needing enid-netd's rules: more requests
in flight between the broker and netd than their socketpair holds (it
fills after about 170 answers), so the outbound queues must carry them.
Every request is answered, none failed, none dropped; then as many DELs
at once."""
import json
import os
import subprocess
import selectors
import socket
import time

from poolenv import PoolEnv

# Under the CNI socket's 256 client slots: the burst sends every request
# before it reads any answer, so more would wait for a slot forever.
N = int(os.environ.get("FLOOD_N", "250"))


def burst(sock_path, reqs, timeout=60):
    """Open one connection per request, send them all, then collect every
    answer; returns the answers in request order."""
    sel = selectors.DefaultSelector()
    conns = []
    for i, req in enumerate(reqs):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(str(sock_path))
        s.sendall((json.dumps(req) + "\n").encode())
        s.setblocking(False)
        conns.append(s)
        sel.register(s, selectors.EVENT_READ, i)
    bufs = [b""] * len(reqs)
    done = [None] * len(reqs)
    left = len(reqs)
    end = time.monotonic() + timeout
    while left and time.monotonic() < end:
        for key, _ in sel.select(1):
            i = key.data
            chunk = key.fileobj.recv(65536)
            bufs[i] += chunk
            if not chunk or bufs[i].endswith(b"\n"):
                sel.unregister(key.fileobj)
                key.fileobj.close()
                done[i] = json.loads(bufs[i]) if bufs[i] else None
                left -= 1
    for s in conns:
        s.close()
    return done


def to_rules(env):
    """The destinations of the "to pod" rules (priority 512) in the node."""
    out = subprocess.run(["ip", "-n", env.ns, "-j", "rule", "show", "pref",
                          "512"], capture_output=True, text=True,
                         check=True).stdout
    return {r["dst"] for r in json.loads(out or "[]") if "dst" in r}


def test_hundreds_in_flight(workdir, enid_user, helper_dir):
    env = PoolEnv(workdir, enid_user, helper_dir,
                  prefix="ef%d" % (os.getpid() % 10000),
                  sim_args=("--ip-limit", "50", "--eni-limit", "10"),
                  pool={"minimum_ip_target": N, "add_timeout_s": 30,
                        "ip_cooldown_s": 0})
    try:
        env.start()
        env.wait(lambda: env.show("pool")["free"] >= N, 60,
                 "a pool of %d addresses" % N, step=0.5)
        t0 = time.monotonic()
        adds = burst(env.cni_sock, [{"op": "add", "container_id": "fl%d" % i,
                                     "ifname": "eth0"} for i in range(N)])
        t_add = time.monotonic() - t0
        assert all(a is not None for a in adds), "an ADD got no answer"
        bad = [a for a in adds if not a["ok"]]
        assert not bad, bad[:3]
        ips = [a["ip"] for a in adds]
        assert len(set(ips)) == N
        pods = env.show("pods")
        assert len(pods) == N and all(p["state"] == "ready" for p in pods)
        assert len(env.checkpoint()["pods"]) == N
        # the kernel has each pod's rule
        assert to_rules(env) == set(ips)
        t0 = time.monotonic()
        dels = burst(env.cni_sock, [{"op": "del", "container_id": "fl%d" % i,
                                     "ifname": "eth0"} for i in range(N)])
        t_del = time.monotonic() - t0
        assert all(d is not None and d["ok"] for d in dels), \
            [d for d in dels if not d or not d["ok"]][:3]
        assert env.show("pods") == [] and env.checkpoint()["pods"] == []
        assert to_rules(env) == set()
        assert env.enid.proc.poll() is None
        print("flood: %d ADDs in %.2f s, %d DELs in %.2f s"
              % (N, t_add, N, t_del))
    except BaseException:
        if env.enids:
            print(env.enid.text()[-6000:])
        raise
    finally:
        env.stop()
