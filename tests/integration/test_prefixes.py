"""Prefix delegation end to end (issue 24): enid in a node of tests/vpcsim
with prefix_delegation on, CNI requests on the real cni.sock, pods wired
with iproute2 that must ping the VPC host, the sim's state as the cloud's
truth.  Fragmentation is the sim's control (POST /subnets/<id>
{"fragment": true}): single addresses free, no aligned /28.
"""
import itertools
import os
import time

import pytest

from poolenv import PoolEnv

_seq = itertools.count()
# An m5.large: 3 ENIs of 10 addresses, Nitro.
M5_LARGE = ("--instance-type", "m5.large", "--eni-limit", "3", "--ip-limit", "10")


@pytest.fixture
def make_env(workdir, enid_user, helper_dir):
    envs = []

    def make(sim_args=M5_LARGE, **conf):
        prefix = "pd%d%d" % (os.getpid() % 10000, next(_seq))
        env = PoolEnv(workdir, enid_user, helper_dir, sim_args=sim_args,
                      prefix=prefix, **conf)
        envs.append(env)
        return env

    yield make
    for env in envs:
        env.stop()


def pool_conf(**pool):
    base = {"add_timeout_s": 10, "ip_cooldown_s": 0, "link_timeout_s": 10,
            "prefix_delegation": True}
    base.update(pool)
    return base


def node_prefixes(env, st=None):
    """{eni id: set of prefixes} of the ENIs attached to node 0."""
    iid = env.node["instance_id"]
    return {e["id"]: set(e.get("prefixes") or [])
            for e in (st or env.state())["enis"]
            if e.get("instance_id") == iid}


def test_pods_take_addresses_of_prefixes(make_env):
    env = make_env(pool=pool_conf(warm_prefix_target=1))
    env.start()
    ips = []
    for i in range(3):
        a = env.add_and_ping("c%d" % i)
        ips.append(a["ip"])
    pf = node_prefixes(env)
    held = set().union(*pf.values())
    assert held, pf
    import ipaddress
    nets = [ipaddress.ip_network(p) for p in held]
    for ip in ips:
        assert any(ipaddress.ip_address(ip) in n for n in nets), (ip, held)
    print(env.show("enis"))
