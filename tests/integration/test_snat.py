"""SNAT and NodePort replies (issue 22), end to end: enid in a node of
the simulated VPC, pods wired on the primary ENI and on a secondary one,
and the sim's outside host (behind an internet gateway that admits only
the node's primary address), its VPC host (198.18.0.10) and its peered
host (192.0.2.10, reached untranslated from any VPC address), each of
which tells who it saw.

- With SNAT on, both pods reach the outside host as the node's public
  address; an excluded CIDR is reached with the pod's own address; with
  SNAT off (enid restarted so) neither pod gets out, and the gateway
  counts their drops.
- A NodePort-like forward (the test's own nft table DNATs the node's
  primary address to a pod on a secondary ENI) completes for a client in
  the VPC whose replies would otherwise take the ENI's route; the pod's
  own connection to a ClusterIP-like address (DNATed to the VPC host)
  is seen with the pod's address and never leaves by the primary link.
- A client in the peered network connecting to a pod's own address: a
  pod on a secondary ENI is reached only when the peered CIDR is in
  snat.exclude (its replies otherwise leave by the primary link); one on
  the primary ENI either way.
- Another process's nftables tables are byte-identical through enid's
  start, pod churn, reconcile and stop.
- kill -9 of netd, then a restart: one "ip enid" table, nothing
  duplicated, the same rules.
"""
import itertools
import json
import os
import signal
import subprocess

import pytest

from conftest import built, write_config
from poolenv import VPC_SERVICES, PoolEnv

SIM_ARGS = ("--ip-limit", "4", "--eni-limit", "3")
PEERED = "192.0.2.0/24"            # the sim's peered network (tests/vpcsim)
NODEPORT = 30007
POD_PORT = 8080
CLUSTER_IP = "10.96.0.10"
_seq = itertools.count()


# ---- the node's nftables and rules --------------------------------------

def nft(ns, *args, stdin=None, check=True):
    p = subprocess.run(["ip", "netns", "exec", ns, "nft", *args], input=stdin,
                       capture_output=True, text=True, timeout=15)
    if check and p.returncode != 0:
        raise AssertionError("nft %s in %s: %s" % (" ".join(args), ns, p.stderr))
    return p


def tables(ns):
    """[(family, name)] of every table in the namespace."""
    out = json.loads(nft(ns, "-j", "list", "tables").stdout)
    return [(o["table"]["family"], o["table"]["name"])
            for o in out["nftables"] if "table" in o]


def enid_chains(ns):
    """{chain name: rule count} of table ip enid, or None if absent."""
    p = nft(ns, "-j", "list", "table", "ip", "enid", check=False)
    if p.returncode != 0:
        return None
    chains = {}
    for o in json.loads(p.stdout)["nftables"]:
        if "chain" in o:
            assert o["chain"]["name"] not in chains, "chain twice: %s" % o
            chains[o["chain"]["name"]] = 0
        elif "rule" in o:
            chains[o["rule"]["chain"]] += 1
    return chains


def enid_rules(ns):
    """Table ip enid as nft lists it without counters' values or handles:
    what netd wrote, comparable across restarts."""
    return nft(ns, "-s", "list", "table", "ip", "enid").stdout


def counter(ns, table, name):
    out = json.loads(nft(ns, "-j", "list", "counter", "ip", table, name).stdout)
    return next(o["counter"]["packets"] for o in out["nftables"] if "counter" in o)


def ip_rules(ns):
    """The node's policy rules, sorted: netd may re-add a pod's rule at
    its start, which moves it among rules of the same priority."""
    out = json.loads(subprocess.run(["ip", "-n", ns, "-j", "rule", "show"],
                                    capture_output=True, text=True, check=True,
                                    timeout=15).stdout)
    return sorted(out, key=lambda r: json.dumps(r, sort_keys=True))


# ---- pods and the sim's services ----------------------------------------

WHOAMI = """
import socket, sys
try:
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])),
                                 timeout=float(sys.argv[3]))
    s.settimeout(float(sys.argv[3]))
    line = s.recv(200).decode()
    print(line.split()[0] if line else "")
except OSError as e:
    print("error: %s" % e)
    sys.exit(1)
"""


def whoami(pod_ns, host, port=7, timeout=2.0):
    """The source address the whoami service at host:port saw for a TCP
    connection from the pod, or None if none was made in `timeout`."""
    p = subprocess.run(["ip", "netns", "exec", pod_ns, "/usr/bin/python3", "-c",
                        WHOAMI, host, str(port), str(timeout)],
                       capture_output=True, text=True, timeout=timeout + 10)
    return p.stdout.strip() if p.returncode == 0 else None


SERVER = """
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1])))
s.listen(8)
print("listening", flush=True)
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    s.settimeout(max(0.1, end - time.monotonic()))
    try:
        c, peer = s.accept()
    except OSError:
        break
    c.sendall(("%s\\n" % peer[0]).encode())
    c.close()
"""


class Server:
    """A TCP server in a pod that answers each connection with the peer's
    address, for at most `life` seconds."""

    def __init__(self, pod_ns, port, life=60):
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", pod_ns, "/usr/bin/python3", "-c", SERVER,
             str(port), str(life)], stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()          # bounded by `life`
        assert line.strip() == "listening", line

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


def outside(env):
    return env.sim.control("GET", "/outside")


def dropped(out, addr):
    return out["dropped"].get(addr, {}).get("packets", 0)


def admitted(out, addr):
    return out["admitted"].get(addr, {}).get("packets", 0)


# ---- the environment ----------------------------------------------------

@pytest.fixture
def make_env(workdir, enid_user, helper_dir):
    envs = []

    def make(exclude=(VPC_SERVICES,), **conf):
        prefix = "sn%d%d" % (os.getpid() % 10000, next(_seq))
        pool = {"add_timeout_s": 15, "ip_cooldown_s": 0, "link_timeout_s": 10,
                "warm_ip_target": 1}
        env = PoolEnv(workdir, enid_user, helper_dir, sim_args=SIM_ARGS,
                      prefix=prefix, pool=pool, snat={"exclude": list(exclude)},
                      **conf)
        envs.append(env)
        return env

    yield make
    for env in envs:
        env.stop()


def restart(env, **snat):
    """Stop enid, rewrite its configuration's snat section, start it."""
    env.enid.stop()
    env.conf_extra["snat"] = dict(env.conf_extra["snat"], **snat)
    write_config(env.workdir, env.enid_user, **env.conf_extra)
    env.start()


def wait_table(env, snat_on, timeout=15):
    """Until netd's table is there, with snat-out iff SNAT is on."""
    def ok():
        c = enid_chains(env.ns)
        return c is not None and {"mark-in", "mark-out"} <= set(c) and \
            ("snat-out" in c) == snat_on
    env.wait(ok, timeout, "table ip enid with%s snat-out" % ("" if snat_on else "out"))


def pods_on_both(env):
    """Pods added and wired until one is on the primary ENI and one on a
    secondary ENI: {"primary": (cid, ip), "secondary": (cid, ip)}."""
    got = {}
    for i in range(12):
        a, _ = env.add("sn%d" % i)
        assert a["ok"], a
        enis = {e["id"]: e for e in env.show("enis")}
        kind = "primary" if enis[a["eni"]]["primary"] else "secondary"
        if kind not in got:
            env.wire("sn%d" % i, a["ip"])
            got[kind] = ("sn%d" % i, a["ip"])
        if len(got) == 2:
            return got
    raise AssertionError("no pod on each kind of ENI after 12 ADDs: %r" % got)


def pod_ns(env, cid):
    return env.pods[cid].ns


# ---- the tests ----------------------------------------------------------

def test_pods_reach_outside_translated_and_not_with_snat_off(make_env):
    env = make_env()
    env.start()
    wait_table(env, snat_on=True)
    pods = pods_on_both(env)
    host = env.ep["outside"]["host"]
    peered = env.ep["peered"]["host"]
    public = env.node["public_ip"]
    primary = env.node["primary_ip"]
    for kind, (cid, ip) in pods.items():
        ns = pod_ns(env, cid)
        # The VPC host is excluded: reached through the pod's own ENI.
        assert whoami(ns, env.ep["vpc_host"]) == ip, kind
        # Beyond the VPC, as the node: the gateway maps it to its public
        # address.
        before = outside(env)
        assert whoami(ns, host) == public, kind
        after = outside(env)
        assert admitted(after, primary) > admitted(before, primary), kind
        assert dropped(after, ip) == dropped(before, ip), kind
        # The peered network is not excluded here: translated too, to
        # the node's primary address (nothing translates it further).
        assert whoami(ns, peered) == primary, kind

    # The peered CIDR excluded: reached with the pod's own address.
    restart(env, exclude=[VPC_SERVICES, PEERED])
    wait_table(env, snat_on=True)
    for kind, (cid, ip) in pods.items():
        ns = pod_ns(env, cid)
        assert whoami(ns, peered) == ip, kind
        assert outside(env)["peered_seen"]["tcp"].get(ip, 0) >= 1, kind
        assert whoami(ns, host) == public, kind

    # SNAT off: the gateway drops both pods' packets, by their source.
    restart(env, enabled=False)
    wait_table(env, snat_on=False)
    for kind, (cid, ip) in pods.items():
        ns = pod_ns(env, cid)
        before = outside(env)
        assert whoami(ns, host, timeout=1.5) is None, kind
        after = outside(env)
        assert dropped(after, ip) > dropped(before, ip), (kind, after["dropped"])
        assert after["seen"] == before["seen"], kind
        # Inside the VPC nothing changed.
        assert whoami(ns, env.ep["vpc_host"]) == ip, kind
        assert whoami(ns, peered) == ip, kind


NODEPORT_TABLE = """table ip t_svc {
	counter cip_primary { }
	counter cip_other { }
	counter np_reply_primary { }
	counter np_reply_other { }
	chain pre {
		type nat hook prerouting priority dstnat; policy accept;
		ip daddr %(node)s tcp dport %(np)d dnat to %(pod)s:%(pp)d
		ip daddr %(cip)s tcp dport 7 dnat to %(vpc_host)s:7
	}
	chain count_fwd {
		type filter hook forward priority filter; policy accept;
		ip saddr %(pod)s ip daddr %(vpc_host)s tcp dport 7 oifname "eth0" counter name cip_primary
		ip saddr %(pod)s ip daddr %(vpc_host)s tcp dport 7 oifname != "eth0" counter name cip_other
		ip saddr %(pod)s tcp sport %(pp)d oifname "eth0" counter name np_reply_primary
		ip saddr %(pod)s tcp sport %(pp)d oifname != "eth0" counter name np_reply_other
	}
}
"""


def test_nodeport_replies_leave_by_the_primary_and_clusterip_does_not(make_env):
    env = make_env(exclude=(VPC_SERVICES, PEERED))
    env.start()
    wait_table(env, snat_on=True)
    pods = pods_on_both(env)
    cid, ip = pods["secondary"]
    ns = pod_ns(env, cid)
    vpc_host = env.ep["vpc_host"]
    nft(env.ns, "-f", "-", stdin=NODEPORT_TABLE % {
        "node": env.node["primary_ip"], "np": NODEPORT, "pod": ip, "pp": POD_PORT,
        "cip": CLUSTER_IP, "vpc_host": vpc_host})
    srv = Server(ns, POD_PORT)
    try:
        # The client is the VPC host: excluded, so without the connection
        # mark the pod's replies would take its ENI's table (a route to
        # 198.18.0.0/24 through the ENI), leave by the ENI with the node's
        # primary address as their source, and die in the VPC's
        # reverse-path filter.
        for via in ("vpc", "peered"):
            r = env.sim.control("POST", "/outside/connect",
                                {"node": 0, "port": NODEPORT, "via": via,
                                 "timeout_ms": 3000})
            assert r["ok"] and r["eof"], (via, r)
            # The pod saw the client itself (only the destination was
            # translated).
            assert r["peer_reply"].strip() == r["from"], (via, r)
        assert counter(env.ns, "t_svc", "np_reply_primary") >= 2
        assert counter(env.ns, "t_svc", "np_reply_other") == 0
        marked = env.show("snat")["marked"]
        assert marked >= 2, marked
    finally:
        srv.stop()
    # The pod's own connection to a ClusterIP-like address: DNATed to the
    # VPC host, it keeps the pod's route (its ENI) and its address; the
    # #3563 trap would send it out of the primary link.
    before = outside(env)["vpc_host_seen"]["tcp"].get(ip, 0)
    assert whoami(ns, CLUSTER_IP) == ip
    assert outside(env)["vpc_host_seen"]["tcp"].get(ip, 0) == before + 1
    assert counter(env.ns, "t_svc", "cip_primary") == 0
    assert counter(env.ns, "t_svc", "cip_other") >= 1
    # ... and so does its connection straight to the VPC host.
    assert whoami(ns, vpc_host) == ip
    assert counter(env.ns, "t_svc", "cip_primary") == 0
    nft(env.ns, "delete", "table", "ip", "t_svc")


CONNECT = """
import socket, sys
try:
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2)
    s.settimeout(2)
    print(s.recv(200).decode().split()[0])
except (OSError, IndexError) as e:
    print("error: %s" % e)
    sys.exit(1)
"""


def connect_from(ns, addr, port):
    """The peer address a pod's server saw for a connection from namespace
    ns, or None if none was made."""
    p = subprocess.run(["ip", "netns", "exec", ns, "/usr/bin/python3", "-c",
                        CONNECT, addr, str(port)],
                       capture_output=True, text=True, timeout=15)
    return p.stdout.strip() if p.returncode == 0 else None


def test_peered_client_reaches_secondary_eni_pod_only_when_excluded(make_env):
    """A client beyond the VPC that reaches pods' own addresses (a peered
    VPC here; on-premises, or a load balancer keeping the client's
    address, alike) connects to a pod.  With SNAT on, a pod on a
    secondary ENI answers by its table's default route, out of the
    primary link with its own address, and the VPC drops that; a pod on
    the primary ENI answers by the main table and is reached.  With the
    client's CIDR in snat.exclude both are: what enid(8) and enid.conf(5)
    say."""
    env = make_env()
    env.start()
    wait_table(env, snat_on=True)
    pods = pods_on_both(env)
    peer_ns = env.ep["peered"]["netns"]
    peer = env.ep["peered"]["host"]

    def seen():
        got = {}
        for kind, (cid, ip) in pods.items():
            srv = Server(pod_ns(env, cid), POD_PORT, life=20)
            try:
                got[kind] = connect_from(peer_ns, ip, POD_PORT)
            finally:
                srv.stop()
        return got

    assert seen() == {"primary": peer, "secondary": None}
    restart(env, exclude=[VPC_SERVICES, PEERED])
    wait_table(env, snat_on=True)
    assert seen() == {"primary": peer, "secondary": peer}


# Tables of other programs: iptables-nft's, kube-proxy's (nftables mode),
# and a table of enid's name in another family, which netd must not
# mistake for its own.
FOREIGN = """table ip filter {
	chain INPUT { type filter hook input priority filter; policy accept; }
	chain FORWARD {
		type filter hook forward priority filter; policy accept;
		meta mark & 0x00004000 == 0x00004000 accept
		jump KUBE-FORWARD
	}
	chain KUBE-FORWARD { ct state invalid drop; }
}
table ip nat {
	chain POSTROUTING {
		type nat hook postrouting priority srcnat; policy accept;
		ip saddr 100.64.0.0/10 oifname "eth0" masquerade
	}
}
table ip kube-proxy {
	set cluster-ips { type ipv4_addr; elements = { 10.96.0.1 }; }
	chain mark-for-masquerade { meta mark set meta mark | 0x00004000; }
	chain services {
		type nat hook prerouting priority dstnat; policy accept;
		ip daddr 10.96.99.1 tcp dport 443 jump mark-for-masquerade
	}
}
table inet enid {
	chain mark-in {
		type filter hook prerouting priority mangle; policy accept;
		ip saddr 100.64.0.1 counter
	}
	chain snat-out { type nat hook postrouting priority srcnat; policy accept; }
}
table ip enid-other {
	chain snat-out { type nat hook postrouting priority srcnat; policy accept; }
}
"""


def foreign_listing(ns):
    """Every table but netd's own, with handles and without counters'
    values: byte for byte what another program would see of its own."""
    others = [t for t in tables(ns) if t not in (("ip", "enid"),
                                                 ("ip6", "enid"))]
    return {t: nft(ns, "-a", "-s", "list", "table", *t).stdout for t in others}


def test_other_tables_untouched_through_start_churn_reconcile_stop(make_env):
    env = make_env()
    nft(env.ns, "-f", "-", stdin=FOREIGN)
    want = foreign_listing(env.ns)
    assert len(want) == 5, want.keys()
    env.start()
    wait_table(env, snat_on=True)
    assert foreign_listing(env.ns) == want, "after start"
    # Pod churn: adds (wired) and deletes, on more than one ENI.
    for i in range(8):
        a, _ = env.add("ch%d" % i)
        assert a["ok"], a
        env.wire("ch%d" % i, a["ip"])
    for i in range(8):
        env.unwire("ch%d" % i)
        a, _ = env.delete("ch%d" % i)
        assert a["ok"], a
    assert foreign_listing(env.ns) == want, "after pod churn"
    r = subprocess.run([built("ctl/enidctl"), "-s", str(env.ctl_sock), "reconcile"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    wait_table(env, snat_on=True)
    assert foreign_listing(env.ns) == want, "after reconcile"
    env.enid.stop()
    assert foreign_listing(env.ns) == want, "after stop"


def test_kill9_of_netd_then_restart_converges(make_env):
    env = make_env()
    env.start()
    wait_table(env, snat_on=True)
    pods = pods_on_both(env)
    rules = enid_rules(env.ns)
    chains = enid_chains(env.ns)
    fwmark = [r for r in ip_rules(env.ns) if "fwmark" in r]
    assert len(fwmark) == 1, fwmark
    all_rules = ip_rules(env.ns)

    netd = env.enid.children()["enid-netd"]
    os.kill(netd, signal.SIGKILL)
    # Without netd the broker exits (the service manager restarts the set).
    env.enid.proc.wait(15)
    assert env.enid.proc.returncode != 0
    # What the killed netd left is still there, as it left it.
    assert enid_rules(env.ns) == rules
    env.start()
    wait_table(env, snat_on=True)
    assert tables(env.ns).count(("ip", "enid")) == 1
    assert enid_chains(env.ns) == chains
    assert enid_rules(env.ns) == rules
    assert ip_rules(env.ns) == all_rules
    snat = env.show("snat")
    assert snat["in_place"] and snat["replaced"] == 0, snat

    # Once more, with a rule of someone else's added to netd's table
    # while it was down: the next start replaces the table whole.
    os.kill(env.enid.children()["enid-netd"], signal.SIGKILL)
    env.enid.proc.wait(15)
    nft(env.ns, "add", "rule", "ip", "enid", "mark-in", "ip", "saddr",
        "100.64.0.1", "counter")
    assert enid_rules(env.ns) != rules
    env.start()
    env.wait(lambda: enid_rules(env.ns) == rules, 15, "netd's table made right")
    assert tables(env.ns).count(("ip", "enid")) == 1
    assert ip_rules(env.ns) == all_rules
    snat = env.show("snat")
    assert snat["in_place"] and snat["replaced"] == 1, snat
    assert "replac" in env.enid.text().lower(), "the replacement is not logged"
    # The pods still get out, translated.
    for kind, (cid, ip) in pods.items():
        assert whoami(pod_ns(env, cid), env.ep["outside"]["host"]) == \
            env.node["public_ip"], kind
