"""ip_family dual or ipv6 on a node, an instance type or subnets that
cannot give pods IPv6: enid refuses to start, each cause on a line of its
own naming it (and, for the node's settings, the command that sets it),
before it changes anything in the kernel or the cloud.  A configuration
error at start, not an ADD that fails later."""
import itertools
import json
import os
import subprocess

import pytest

from conftest import built, write_config
from poolenv import PoolEnv

_seq = itertools.count()
DUAL = ("--ipv6", "dual", "--ip-limit", "4", "--eni-limit", "3")


@pytest.fixture
def make_env(workdir, enid_user, helper_dir):
    envs = []

    def make(sim_args=DUAL, **conf):
        prefix = "e6%d%d" % (os.getpid() % 10000, next(_seq))
        env = PoolEnv(workdir, enid_user, helper_dir, sim_args=sim_args,
                      prefix=prefix, **conf)
        envs.append(env)
        return env

    yield make
    for env in envs:
        env.stop()


def primary_link(env):
    links = json.loads(subprocess.run(
        ["ip", "-n", env.ns, "-j", "link", "show"], check=True,
        capture_output=True, text=True).stdout)
    (name,) = [lk["ifname"] for lk in links
               if lk.get("address") == env.node["primary_mac"]]
    return name


def set_up_node(env):
    """What the DaemonSet's init container and the unit's ExecStartPre do
    (enidctl(8), node-setup), with the same configuration as enid: the
    uplink it finds by the default route must be the link the broker
    finds by the cloud's MAC, or enid would refuse below."""
    r = subprocess.run(["ip", "netns", "exec", env.ns, built("ctl/enidctl"),
                        "-f", str(env.conf), "node-setup"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("uplink %s: " % primary_link(env)), r.stdout
    return r.stdout


def kernel(env):
    return [subprocess.run(["ip", "-n", env.ns, *what], check=True,
                           capture_output=True, text=True).stdout
            for what in (["rule"], ["-6", "rule"], ["route", "show",
                                                      "table", "all"])]


def refused(env, before_policy=True):
    """Start enid and see it exit 1 with no ENI made and no address asked
    for; its log.  The instance's and the node's causes are judged before
    netd is given its policy: the kernel is as it was.  The subnets' are
    judged at their first describe, after the policy (its connection-mark
    rule and SNAT table, which any stop leaves too), before the pool."""
    before, enis = kernel(env), {e["id"]: e for e in env.state()["enis"]}
    e = env.start(wait=False)
    e.proc.wait(30)
    log = e.text()
    assert e.proc.returncode == 1, log
    assert "pool: running" not in log and "reconcile: done" not in log, log
    if before_policy:
        assert "policy set" not in log, log
        assert kernel(env) == before
    assert {e["id"]: e for e in env.state()["enis"]} == enis
    return log


def test_node_settings_named_with_their_commands(make_env):
    env = make_env(ip_family="dual")
    up = primary_link(env)
    log = refused(env)
    assert ("configuration: net.ipv6.conf.all.forwarding is 0: the node "
            "would not route its pods' IPv6 traffic; set it with `sysctl -w "
            "net.ipv6.conf.all.forwarding=1`") in log, log
    assert ("configuration: net.ipv6.conf.%s.accept_ra is 1: with "
            "forwarding on, the primary interface (%s) ignores the VPC "
            "router's advertisements and the node loses its IPv6 default "
            "route; set it with `sysctl -w net.ipv6.conf.%s.accept_ra=2`"
            % (up, env.node["primary_mac"], up)) in log, log
    assert "cannot have IPv6 pods" in log, log

    # Set up as the manual says, the same node starts (ip_family ipv6
    # asks the same of it).
    out = set_up_node(env)
    assert "sysctl net.ipv6.conf.all.forwarding: 0 -> 1\n" in out, out
    assert "sysctl net.ipv6.conf.%s.accept_ra: 1 -> 2\n" % up in out, out
    env.start()
    env.enid.stop()


def test_instance_type_without_ipv6_or_prefixes(make_env):
    env = make_env(sim_args=DUAL + ("--node-type", "0:c1.medium"),
                   ip_family="ipv6")
    set_up_node(env)
    log = refused(env)
    assert ("configuration: instance type c1.medium does not take IPv6 "
            "(ipv6Supported false), and ip_family \"ipv6\" needs it") in log
    assert ("configuration: instance type c1.medium is not built on the "
            "Nitro system, so its ENIs take no /80 prefix") in log, log


def test_subnet_without_an_associated_ipv6_block(make_env):
    env = make_env(ip_family="dual")
    set_up_node(env)
    sid = env.node["subnet_id"]
    env.sim.control("POST", "/subnets/" + sid,
                    {"ipv6_state": "disassociating"})
    log = refused(env, before_policy=False)
    assert ("configuration: subnet %s has no associated IPv6 block "
            "(disassociating), and ip_family \"dual\" gives pods an IPv6 "
            "address from it" % sid) in log, log


def test_ipv4_only_vpc(make_env):
    """A VPC with no IPv6 at all: its subnet has no block."""
    env = make_env(sim_args=("--ip-limit", "4", "--eni-limit", "3"),
                   ip_family="ipv6")
    set_up_node(env)
    log = refused(env, before_policy=False)
    assert ("configuration: subnet %s has no associated IPv6 block (none)"
            % env.node["subnet_id"]) in log, log


def test_dual_in_an_ipv6_only_subnet(make_env):
    env = make_env(ip_family="dual")
    native = env.ep["ipv6"]["native_subnet_id"]
    env.conf_extra["subnets"] = [{"id": native}]
    env.conf = write_config(env.workdir, env.enid_user, **env.conf_extra)
    set_up_node(env)
    log = refused(env, before_policy=False)
    assert ("configuration: subnet %s is IPv6-only (ipv6Native), and "
            "ip_family \"dual\" gives pods an IPv4 address too" % native) in log, \
        log
