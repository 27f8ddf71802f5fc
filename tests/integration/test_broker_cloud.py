"""The broker learns its instance from the cloud through enid-cloudd, and
fixes enid-netd's policy from it; runs enid inside a simulated node."""
import json
import subprocess
import time

from conftest import built, sim_config


def status(workdir):
    out = subprocess.run([built("ctl/enidctl"), "-j", "-s",
                          str(workdir / "run" / "ctl.sock"), "status"],
                         capture_output=True, text=True, timeout=10)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def wait_instance(enid, workdir, state="known", timeout=20):
    end = time.monotonic() + timeout
    st = None
    while time.monotonic() < end:
        if (workdir / "run" / "ctl.sock").exists():
            st = status(workdir)
            if st["instance"]["state"] == state:
                return st
        assert enid.proc.poll() is None, enid.text()
        time.sleep(0.1)
    raise AssertionError(f"instance not {state}: {st}\n{enid.text()}")


def test_instance_known_and_netd_policy_set(sim, start_enid, workdir,
                                            enid_user):
    node = sim.ep["nodes"][0]
    enid = start_enid(conf=sim_config(workdir, enid_user), ns=node["netns"])
    st = wait_instance(enid, workdir)
    inst = st["instance"]
    assert inst["id"] == node["instance_id"]
    assert inst["primary_mac"] == node["primary_mac"]
    assert inst["primary_eni"] == node["primary_eni"]
    assert inst["vpc_cidrs"] == [sim.ep["vpc_cidr"]]
    assert inst["max_enis"] == sim.ep["limits"]["enis"]
    assert inst["ips_per_eni"] == sim.ep["limits"]["ips_per_eni"]
    assert enid.wait_log("enid-netd: policy set", 5), enid.text()
    # netd logged the policy it now judges by.
    assert f"primary MAC {node['primary_mac']}, VPC {sim.ep['vpc_cidr']}" \
        in enid.text()


def test_cloud_failure_is_retried_not_fatal(sim, start_enid, workdir,
                                            enid_user):
    node = sim.ep["nodes"][0]
    sim.control("POST", "/faults", [{"action": "DescribeInstances",
                                     "code": "UnauthorizedOperation",
                                     "count": 1}])
    try:
        enid = start_enid(conf=sim_config(workdir, enid_user),
                          ns=node["netns"])
        assert enid.wait_log("instance: describe-instance: fatal: "
                             "UnauthorizedOperation", 20), enid.text()
        st = status(workdir)
        assert st["instance"]["state"] in ("retrying", "asking", "known")
        # The fault was for one call: the retry succeeds.
        st = wait_instance(enid, workdir, timeout=20)
        assert st["instance"]["id"] == node["instance_id"]
    finally:
        sim.control("DELETE", "/faults")
