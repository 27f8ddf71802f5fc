"""A node of the simulated VPC with enid running in it: the fixture the
pool engine's integration tests share.

It starts tests/vpcsim with its own namespace prefix, writes a config for
enid in node 0, starts enid there, and offers: CNI requests over the real
cni.sock, pods wired with iproute2 (podwire.py), the sim's control API,
EC2 calls behind enid's back (boto3 on the sim's loopback endpoint), enid's
control socket, and its checkpoint.
"""
import os
import signal
import time

import ckptstate
import podwire
import simec2
from conftest import Enid, Sim, write_config

# The sim's own services inside the VPC: EC2 and the VPC host.
VPC_SERVICES = "198.18.0.0/24"


class PoolEnv:
    def __init__(self, workdir, enid_user, helper_dir, nodes=1, sim_args=(),
                 prefix=None, **conf):
        self.workdir = workdir
        self.enid_user = enid_user
        self.helper_dir = helper_dir
        self.sim = Sim(workdir, nodes=nodes, prefix=prefix, args=sim_args)
        self.ep = self.sim.ep
        self.node = self.ep["nodes"][0]
        self.ns = self.node["netns"]
        cloud = {"ec2_endpoint": "http://198.18.0.1/", "allow_http": True}
        cloud.update(conf.pop("cloud", {}))
        # SNAT is on by default, and the sim's VPC host (198.18.0.10),
        # which the tests ping from pods to prove an ENI's path works,
        # lies outside the VPC's CIDR 10.0.0.0/16: translated, a pod on a
        # secondary ENI would reach it through the primary link as the
        # node's address and prove nothing about its own ENI.  Excluded,
        # it is reached through the pod's ENI with the pod's address.
        snat = {"exclude": [VPC_SERVICES]}
        snat.update(conf.pop("snat", {}))
        conf["snat"] = snat
        conf.setdefault("cluster_name", "it")
        conf.setdefault("reconcile_interval_s", 5)
        self.conf_extra = dict(conf, cloud=cloud)
        self.conf = write_config(workdir, enid_user, **self.conf_extra)
        self.cni_sock = workdir / "run" / "cni.sock"
        self.ctl_sock = workdir / "run" / "ctl.sock"
        self.state_dir = workdir / "state"
        self.enids = []
        self.pods = {}
        self._ec2 = None
        podwire.prepare_node(self.ns)

    # ---- enid ----

    def start(self, wait=True, timeout=30, wrap=()):
        e = Enid(self.ns, self.conf, self.helper_dir,
                 self.workdir / ("enid-%d.log" % len(self.enids)), wrap=wrap)
        self.enids.append(e)
        if wait:
            assert e.wait_log("pool: running", timeout), e.text()
        return e

    @property
    def enid(self):
        return self.enids[-1]

    def kill9(self):
        """kill -9 of the broker; its helpers exit on EOF."""
        e = self.enid
        kids = e.children()
        os.kill(e.pid, signal.SIGKILL)
        e.proc.wait(5)
        end = time.monotonic() + 5
        while time.monotonic() < end and any(
                os.path.exists("/proc/%d" % p) for p in kids.values()):
            time.sleep(0.02)

    def ctl(self, req):
        a, _ = podwire.cni(self.ctl_sock, req)
        return a

    def show(self, what):
        a = self.ctl({"op": "show", "what": what})
        assert a["ok"], a
        return a[what]

    def reconcile(self):
        a = self.ctl({"op": "reconcile"})
        assert a["ok"], a
        return a

    def checkpoint(self):
        """The checkpoint as enid would read it back: the snapshot and its
        journal (ckptstate.py)."""
        ck = ckptstate.read(self.state_dir)
        if ck is None:
            raise FileNotFoundError(self.state_dir / ckptstate.SNAPSHOT)
        return ck

    # ---- CNI ----

    def add(self, cid, timeout=30, **kw):
        return podwire.add(self.cni_sock, cid, timeout=timeout, **kw)

    def delete(self, cid, timeout=30):
        return podwire.delete(self.cni_sock, cid, timeout=timeout)

    def wire(self, cid, ip):
        p = podwire.Pod(self.ns, ip, prefix="pp")
        self.pods[cid] = p
        return p

    def unwire(self, cid):
        p = self.pods.pop(cid, None)
        if p:
            p.remove()

    def add_and_ping(self, cid):
        a, t = self.add(cid)
        assert a["ok"], a
        p = self.wire(cid, a["ip"])
        assert p.ping(self.ep["vpc_host"], wait=2), (cid, a)
        return a

    # ---- the cloud ----

    def state(self):
        return self.sim.control("GET", "/state")

    def faults(self, rules):
        return self.sim.control("POST", "/faults", rules)

    def clear_faults(self):
        return self.sim.control("DELETE", "/faults")

    def links(self, body):
        return self.sim.control("POST", "/links", body)

    def subnet_free(self, sid, n):
        return self.sim.control("POST", "/subnets/" + sid, {"free": n})

    def ec2(self):
        """An independent EC2 client (boto3) for changes behind enid's
        back, on the sim's loopback endpoint."""
        if self._ec2 is None:
            self._ec2 = simec2.client(self.ep, max_attempts=10)
        return self._ec2

    def node_enis(self, state=None):
        """The sim's ENIs attached to (or tagged for) node 0."""
        st = state or self.state()
        iid = self.node["instance_id"]
        out = []
        for e in st["enis"]:
            tags = e.get("tags") or {}
            if isinstance(tags, list):
                tags = {t["key"]: t["value"] for t in tags}
            if e.get("instance_id") == iid or \
                    tags.get("enid.io/instance-id") == iid:
                out.append(dict(e, tags=tags))
        return out

    def wait(self, cond, timeout, what, step=0.1):
        end = time.monotonic() + timeout
        last = None
        while time.monotonic() < end:
            last = cond()
            if last:
                return last
            time.sleep(step)
        raise AssertionError("timed out waiting for %s (last: %r)"
                             % (what, last))

    def wait_dataplane(self, timeout=10):
        self.wait(lambda: self.state()["dataplane"]["pending"] == 0,
                  timeout, "the sim's data plane")

    def stop(self):
        for cid in list(self.pods):
            self.unwire(cid)
        for e in self.enids:
            e.stop()
        self.sim.stop()
