"""The pool's IPv6 (ip_family dual) against the simulated VPC: every ENI
that serves pods gets one /80 for its pods' IPv6 addresses, and each
secondary ENI its own IPv6 address besides; the /80 goes back with its
ENI."""
import itertools
import os
import time

import pytest

from poolenv import PoolEnv
from test_ipv6_start import set_up_node

_seq = itertools.count()
DUAL = ("--ipv6", "dual", "--ip-limit", "4", "--eni-limit", "3")


@pytest.fixture
def make_env(workdir, enid_user, helper_dir):
    envs = []

    def make(sim_args=DUAL, **conf):
        prefix = "p6%d%d" % (os.getpid() % 10000, next(_seq))
        env = PoolEnv(workdir, enid_user, helper_dir, sim_args=sim_args,
                      prefix=prefix, **conf)
        set_up_node(env)
        envs.append(env)
        return env

    yield make
    for env in envs:
        env.stop()


def wait_for(what, timeout=20):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = what()
        if got:
            return got
        time.sleep(0.05)
    return what()


def node_enis(env):
    iid = env.node["instance_id"]
    return {e["id"]: e for e in env.state()["enis"]
            if (e.get("attachment") or {}).get("instance_id") == iid}


def test_each_eni_gets_its_own_address_and_a_80(make_env):
    env = make_env(ip_family="dual", pool={"warm_ip_target": 5})
    env.start()
    primary = env.node["primary_eni"]

    def ready():
        enis = node_enis(env)
        if len(enis) != 2 or not all(e["ipv6_prefixes"]
                                     for e in enis.values()):
            return None
        return enis
    enis = wait_for(ready)
    assert enis, node_enis(env)
    for eid, e in enis.items():
        assert len(e["ipv6_prefixes"]) == 1, e
        assert e["ipv6_prefixes"][0].endswith("/80"), e
        # The primary keeps the node's one address; a secondary has its
        # own, asked for when it was created.
        assert len(e["ipv6_addresses"]) == 1, e
        if eid == primary:
            assert e["ipv6_addresses"] == [env.node["primary_ipv6"]]
    log = env.enid.text()
    assert "pods' IPv6 addresses come from" in log, log
    # Nothing is asked twice: one /80 each, however many runs.
    env.reconcile()
    assert {k: e["ipv6_prefixes"] for k, e in node_enis(env).items()} == \
        {k: e["ipv6_prefixes"] for k, e in enis.items()}
