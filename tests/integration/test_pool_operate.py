"""The pool as an operator meets it (issue 27): a slow or unreachable
cloud, the status that shows it, reconciliation that repairs pods'
routes and is not fooled by enid's own work in flight.  Each test here
failed on the tree before its fix.
"""
import os
import threading
import time

import pytest

from test_pool import pool_conf
from test_pool_field import settled


@pytest.fixture
def make_env(workdir, enid_user, helper_dir):
    from poolenv import PoolEnv
    envs = []

    def make(sim_args=(), **conf):
        env = PoolEnv(workdir, enid_user, helper_dir, sim_args=sim_args,
                      prefix="eo%d%d" % (os.getpid() % 10000, len(envs)),
                      **conf)
        envs.append(env)
        return env

    yield make
    for env in envs:
        env.stop()


def adds_spaced(env, names, gap, timeout=40):
    """ADD each of names gap seconds apart, each in its own thread, as a
    runtime starting pods does; {name: answer}."""
    out = {}

    def one(cid):
        out[cid] = env.add(cid, timeout=timeout)[0]

    ts = []
    for cid in names:
        t = threading.Thread(target=one, args=(cid,))
        t.start()
        ts.append(t)
        time.sleep(gap)
    for t in ts:
        t.join(timeout + 10)
    return out


def secondary_enis(env):
    primary = env.node["primary_eni"]
    return [e for e in env.show("enis") if e["id"] != primary]


# ---- item 2: no over-growth while the cloud is slow ----

def test_slow_create_makes_one_eni_not_one_per_add(make_env):
    env = make_env(pool=pool_conf(warm_ip_target=5, add_timeout_s=20))
    env.start()
    settled(env, 5)
    env.faults([{"action": "CreateNetworkInterface",
                 "latency_ms": [4000, 4000]}])
    out = adds_spaced(env, ["s%d" % i for i in range(6)], 1.0)
    assert all(a["ok"] for a in out.values()), out
    settled(env, 5)
    # 6 pods and 5 warm: the primary's 9 and one more ENI.
    assert len(secondary_enis(env)) == 1, env.show("enis")
    assert env.state()["calls"]["CreateNetworkInterface"] == 1


def test_after_an_outage_the_pool_converges(make_env):
    env = make_env(sim_args=("--eni-limit", "4"),
                   pool=pool_conf(warm_ip_target=3, add_timeout_s=4,
                                  shrink_delay_s=3))
    env.start()
    settled(env, 3)
    env.faults([{"action": "*", "code": "Unavailable", "status": 503,
                 "probability": 1.0}])
    out = adds_spaced(env, ["o%d" % i for i in range(10)], 1.2,
                      timeout=20)
    env.clear_faults()
    for cid, a in sorted(out.items()):
        if not a["ok"]:
            a2 = env.wait(lambda: (lambda r: r if r["ok"] else None)(
                env.add(cid, timeout=30)[0]), 60, "%s after the outage"
                % cid)
            out[cid] = a2
    # 10 pods and 3 warm: the primary's 9 and one ENI; what the outage
    # queued beyond that is given back within the shrink delay.

    def converged():
        enis = secondary_enis(env)
        pool = env.show("pool")
        return (len(enis) == 1 and pool["other"] == 0 and
                all(e["state"] == "ready" for e in enis)) or None
    env.wait(converged, 60, "one secondary ENI (%r)" % (
        [(e["id"], e["state"]) for e in env.show("enis")],))
    assert env.show("pool")["assigned"] == 10
