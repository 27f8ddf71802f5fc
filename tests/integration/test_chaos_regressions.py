"""Bugs the chaos soak (tests/chaos) found, each as a test of its own.

enid runs in a node of tests/vpcsim as in test_pool.py; each test sets up
the situation the soak ran into, in the few steps that matter.
"""
import itertools
import os
import time

import pytest

from poolenv import PoolEnv

_seq = itertools.count()


@pytest.fixture
def make_env(workdir, enid_user, helper_dir):
    envs = []

    def make(**conf):
        pool = {"add_timeout_s": 10, "ip_cooldown_s": 0, "link_timeout_s": 10}
        pool.update(conf.pop("pool", {}))
        env = PoolEnv(workdir, enid_user, helper_dir,
                      prefix="cr%d%d" % (os.getpid() % 10000, next(_seq)),
                      sim_args=("--ip-limit", "6", "--eni-limit", "4"),
                      pool=pool, **conf)
        envs.append(env)
        return env

    yield make
    for env in envs:
        env.stop()


def test_del_while_the_checkpoint_is_unread_is_not_acknowledged(make_env):
    """enid restarts while the cloud cannot be reached (here: every
    DescribeInstances fails), so the instance is unknown and the
    checkpoint is not read back.  A DEL then must not be answered ok:
    the pod would come back from the checkpoint once enid runs, its
    address held for good.  It is told to try again, and a DEL once enid
    runs releases the pod."""
    env = make_env()
    env.start()
    a = env.add_and_ping("ck0")
    env.add_and_ping("ck1")
    env.kill9()
    env.faults([{"action": "DescribeInstances", "code": "InternalError",
                 "status": 500, "probability": 1.0}])
    e = env.start(wait=False)
    assert e.wait_log("all processes ready", 10), e.text()
    # The broker answers while it waits for the cloud.
    for cid in ("ck0", "nobody"):
        ans, took = env.delete(cid, timeout=5)
        assert ans["ok"] is False and ans["code"] == "try-again", ans
        assert took < 1.0
    env.clear_faults()
    assert e.wait_log("pool: running", 30), e.text()
    assert {p["container_id"] for p in env.show("pods")} == {"ck0", "ck1"}
    env.unwire("ck0")
    ans, _ = env.delete("ck0")
    assert ans == {"ok": True}, ans
    assert [p["container_id"] for p in env.show("pods")] == ["ck1"]
    assert [p["container_id"] for p in env.checkpoint()["pods"]] == ["ck1"]
    # and the address is the pool's again
    states = {x["ip"]: x["state"] for en in env.show("enis")
              for x in en["addresses"]}
    assert states[a["ip"]] in ("free", "cooling"), states
    ans, _ = env.delete("nobody")
    assert ans == {"ok": True}, ans
