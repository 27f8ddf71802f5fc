"""Fault injection, throttling, subnet exhaustion and credential control."""
import time

import pytest


@pytest.fixture(autouse=True)
def clean_faults(sim):
    sim.control("DELETE", "/faults")
    yield
    sim.control("DELETE", "/faults")
    sim.control("POST", "/rate", {"scale": 1})


def test_fail_next_n(sim, agent):
    subnet = sim.node(0)["subnet_id"]
    before = sim.state()["errors"].get("CreateNetworkInterface", {}).get(
        "InsufficientFreeAddressesInSubnet", 0)
    st, out = sim.control("POST", "/faults", [
        {"action": "CreateNetworkInterface", "code": "InsufficientFreeAddressesInSubnet",
         "count": 2}])
    assert st == 200 and len(out["faults"]) == 1
    for _ in range(2):
        e = agent.err("CreateNetworkInterface", SubnetId=subnet)
        assert e["code"] == "InsufficientFreeAddressesInSubnet"
    eid = agent.ok("CreateNetworkInterface", SubnetId=subnet)["NetworkInterface"][
        "NetworkInterfaceId"]
    agent.ok("DeleteNetworkInterface", NetworkInterfaceId=eid)
    state = sim.state()
    assert state["faults"] == []
    assert state["errors"]["CreateNetworkInterface"][
        "InsufficientFreeAddressesInSubnet"] == before + 2


def test_probability_wildcard_and_status(sim, agent):
    sim.control("POST", "/faults", [{"action": "DescribeSubnets", "code": "InternalError",
                                     "probability": 1.0}])
    for _ in range(2):
        e = agent.err("DescribeSubnets")
        assert (e["code"], e["status"]) == ("InternalError", 500)
    assert "InstanceTypes" in agent.ok("DescribeInstanceTypes")
    sim.control("DELETE", "/faults")
    assert "Subnets" in agent.ok("DescribeSubnets")
    sim.control("POST", "/faults", [{"action": "*", "code": "UnauthorizedOperation",
                                     "count": 1}])
    e = agent.err("DescribeInstanceTypes")
    assert (e["code"], e["status"]) == ("UnauthorizedOperation", 403)
    assert "InstanceTypes" in agent.ok("DescribeInstanceTypes")
    sim.control("POST", "/faults", [{"action": "DescribeInstanceTypes",
                                     "code": "RequestLimitExceeded", "count": 1}])
    e = agent.err("DescribeInstanceTypes")
    assert (e["code"], e["status"]) == ("RequestLimitExceeded", 503)


def test_ignore_filter(sim, agent):
    """A cloud that ignores one filter of a describe, as a buggy or
    hostile endpoint may: the others still apply."""
    subnet = sim.node(0)["subnet_id"]
    made = {}
    for cluster in ("here", "there"):
        made[cluster] = agent.ok(
            "CreateNetworkInterface", SubnetId=subnet,
            TagSpecifications=[{"ResourceType": "network-interface", "Tags": [
                {"Key": "c", "Value": cluster},
                {"Key": "k", "Value": "ignore-filter"}]}])[
            "NetworkInterface"]["NetworkInterfaceId"]

    def listed():
        return {e["NetworkInterfaceId"] for e in agent.ok(
            "DescribeNetworkInterfaces", Filters=[
                {"Name": "tag:c", "Values": ["here"]},
                {"Name": "tag:k", "Values": ["ignore-filter"]}])[
            "NetworkInterfaces"]}
    try:
        assert listed() == {made["here"]}
        st, out = sim.control("POST", "/faults", [
            {"action": "DescribeNetworkInterfaces", "ignore_filter": "tag:c"}])
        assert st == 200, out
        assert listed() == set(made.values())
        assert listed() == set(made.values())      # not used up
        st, out = sim.control("POST", "/faults", [
            {"action": "X", "ignore_filter": "tag:c", "count": 1}])
        assert st == 400 and "only" in out["error"], out
        sim.control("DELETE", "/faults")
        assert listed() == {made["here"]}
    finally:
        for eid in made.values():
            agent.ok("DeleteNetworkInterface", NetworkInterfaceId=eid)


def test_latency(sim, agent):
    sim.control("POST", "/faults", [{"action": "DescribeSubnets",
                                     "latency_ms": [300, 350], "count": 1}])
    t = time.monotonic()
    agent.ok("DescribeSubnets")
    assert time.monotonic() - t >= 0.3
    assert sim.state()["faults"] == []      # the counted rule is used up


def test_with_filter_slows_only_calls_with_that_filter(sim, agent):
    sim.control("POST", "/faults", [{"action": "DescribeNetworkInterfaces",
                                     "latency_ms": 400,
                                     "with_filter": "status"}])
    t = time.monotonic()
    agent.ok("DescribeNetworkInterfaces", Filters=[
        {"Name": "tag:enid.io/cluster", "Values": ["x"]}])
    assert time.monotonic() - t < 0.3
    t = time.monotonic()
    agent.ok("DescribeNetworkInterfaces", Filters=[
        {"Name": "status", "Values": ["available"]}])
    assert time.monotonic() - t >= 0.4
    assert sim.state()["faults"][0]["with_filter"] == "status"


def test_throttling(sim, agent):
    st, _ = sim.control("POST", "/rate", {"scale": 0.04})    # unfiltered: 2, 0.4/s
    assert st == 200
    before = sim.state()["throttles"].get("DescribeInstances", 0)
    codes = []
    for _ in range(6):
        out = agent.call("DescribeInstances")
        codes.append(out["error"]["code"] if "error" in out else "ok")
        if "error" in out:
            assert out["error"]["status"] == 503
    assert codes[0] == "ok" and "RequestLimitExceeded" in codes, codes
    assert sim.state()["throttles"]["DescribeInstances"] >= before + 1
    # per-action buckets are separate: a filtered describe still passes
    assert "Reservations" in agent.ok("DescribeInstances", Filters=[
        {"Name": "instance-id", "Values": [sim.node(0)["instance_id"]]}])
    state = sim.state()
    assert state["buckets"]["unfiltered"]["capacity"] == 2
    assert state["buckets"]["CreateNetworkInterface"]["capacity"] == 4


def test_subnet_exhaustion(sim, agent):
    subnet = sim.ep["subnets"][1]["id"]
    st, out = sim.control("POST", "/subnets/" + subnet, {"free": 0})
    assert st == 200 and out["free"] == 0
    assert agent.ok("DescribeSubnets", SubnetIds=[subnet])["Subnets"][0][
        "AvailableIpAddressCount"] == 0
    e = agent.err("CreateNetworkInterface", SubnetId=subnet)
    assert e["code"] == "InsufficientFreeAddressesInSubnet"
    sim.control("POST", "/subnets/" + subnet, {"free": 3})
    eni = agent.ok("CreateNetworkInterface", SubnetId=subnet)["NetworkInterface"]
    e = agent.err("AssignPrivateIpAddresses", NetworkInterfaceId=eni[
        "NetworkInterfaceId"], SecondaryPrivateIpAddressCount=3)
    assert e["code"] == "InsufficientFreeAddressesInSubnet"
    agent.ok("DeleteNetworkInterface", NetworkInterfaceId=eni["NetworkInterfaceId"])
    sim.control("POST", "/subnets/" + subnet, {"free": 4000})
    assert agent.ok("DescribeSubnets", SubnetIds=[subnet])["Subnets"][0][
        "AvailableIpAddressCount"] >= 4000
    assert sim.control("POST", "/subnets/subnet-nope", {"free": 1})[0] == 404


def test_credentials_expire_and_revoke(sim, agent):
    try:
        _expire_and_revoke(sim, agent)
    finally:
        sim.control("POST", "/credentials", {"expire_s": 900})
        # botocore stretches an expiring IMDS credential by 12-20 minutes
        # ("static stability"), so its client keeps the old one: rebuild it.
        agent.req({"op": "refresh_imds_client"})
    assert "InstanceTypes" in agent.ok("DescribeInstanceTypes")


def _expire_and_revoke(sim, agent):
    body = "Action=DescribeInstanceTypes&Version=2016-11-15"

    def signer(c):
        return {"access_key": c["access_key"], "secret_key": c["secret_key"],
                "token": c["token"]}
    old = agent.req({"op": "fetcher"})["creds"]
    assert agent.req({"op": "raw", "sign": signer(old), "body": body})["status"] == 200
    st, _ = sim.control("POST", "/credentials", {"expire_s": 1})
    assert st == 200
    time.sleep(1.2)
    out = agent.req({"op": "raw", "sign": signer(old), "body": body})
    assert out["status"] == 400 and "<Code>RequestExpired</Code>" in out["body"]
    # IMDS hands out new credentials
    new = agent.req({"op": "fetcher"})["creds"]
    assert new["access_key"] != old["access_key"]
    assert agent.req({"op": "raw", "sign": signer(new), "body": body})["status"] == 200
    sim.control("POST", "/credentials", {"expire_s": 900})
    time.sleep(1.1)
    fresh = agent.req({"op": "fetcher"})["creds"]
    assert agent.req({"op": "raw", "sign": signer(fresh), "body": body})[
        "status"] == 200
    # revoke: AuthFailure with the revoked keys; new keys from IMDS work
    st, _ = sim.control("POST", "/credentials", {"revoke": True})
    assert st == 200
    out = agent.req({"op": "raw", "sign": signer(fresh), "body": body})
    assert out["status"] == 401 and "AuthFailure" in out["body"]
    assert "InstanceTypes" in agent.ok("DescribeInstanceTypes", client="static")
    again = agent.req({"op": "fetcher"})["creds"]
    assert again["access_key"] != fresh["access_key"]
    assert agent.req({"op": "raw", "sign": signer(again), "body": body})[
        "status"] == 200


def test_state_shape(sim, agent):
    agent.ok("DescribeSubnets")
    s = sim.state()
    for k in ("enis", "subnets", "calls", "errors", "throttles", "instances"):
        assert k in s
    assert s["calls"]["DescribeSubnets"] >= 1
    prim = [e for e in s["enis"] if e["id"] == sim.node(0)["primary_eni"]][0]
    for k in ("id", "status", "attachment", "device_index", "addresses", "tags",
              "delete_on_termination", "subnet"):
        assert k in prim, k
    assert prim["device_index"] == 0 and prim["status"] == "in-use"
    assert {x["id"] for x in s["subnets"]} == {x["id"] for x in sim.ep["subnets"]}
    assert all(isinstance(x["free"], int) for x in s["subnets"])


def test_with_param_fails_only_calls_that_carry_it(sim, agent):
    """A rule "with_param": the prefix calls of an action, not its calls
    for single addresses."""
    subnet = sim.node(0)["subnet_id"]
    eid = agent.ok("CreateNetworkInterface", SubnetId=subnet)[
        "NetworkInterface"]["NetworkInterfaceId"]
    try:
        st, out = sim.control("POST", "/faults", [
            {"action": "AssignPrivateIpAddresses", "code": "InternalError",
             "status": 500, "count": 1, "with_param": "Ipv4Prefix"}])
        assert st == 200 and out["faults"][0]["with_param"] == "Ipv4Prefix"
        agent.ok("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
                 SecondaryPrivateIpAddressCount=1)
        e = agent.err("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
                      Ipv4PrefixCount=1)
        assert (e["code"], e["status"]) == ("InternalError", 500)
        assert sim.state()["faults"] == []
        assert sim.eni_state(eid)["prefixes"] == []
        agent.ok("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
                 Ipv4PrefixCount=1)
    finally:
        agent.ok("DeleteNetworkInterface", NetworkInterfaceId=eid)


def test_after_does_the_action_then_fails_its_answer(sim, agent):
    """A rule "after": the change is made, the answer is an error (the
    caller cannot know the outcome); a call the action itself refuses
    keeps its own error and does not use the rule up."""
    subnet = sim.node(0)["subnet_id"]
    eid = agent.ok("CreateNetworkInterface", SubnetId=subnet)[
        "NetworkInterface"]["NetworkInterfaceId"]
    try:
        sim.control("POST", "/faults", [
            {"action": "AssignPrivateIpAddresses", "code": "InternalError",
             "status": 500, "count": 1, "after": True}])
        e = agent.err("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
                      Ipv4PrefixCount=99)
        assert e["code"] == "PrivateIpAddressLimitExceeded", e
        assert len(sim.state()["faults"]) == 1
        e = agent.err("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
                      Ipv4PrefixCount=1)
        assert (e["code"], e["status"]) == ("InternalError", 500)
        assert len(sim.eni_state(eid)["prefixes"]) == 1     # done all the same
        assert sim.state()["faults"] == []
    finally:
        agent.ok("DeleteNetworkInterface", NetworkInterfaceId=eid)


def test_after_latency_answers_late_what_is_done_already(sim, agent):
    import threading
    subnet = sim.node(0)["subnet_id"]
    eid = agent.ok("CreateNetworkInterface", SubnetId=subnet)[
        "NetworkInterface"]["NetworkInterfaceId"]
    try:
        p = agent.ok("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
                     Ipv4PrefixCount=1)["AssignedIpv4Prefixes"][0]["Ipv4Prefix"]
        sim.control("POST", "/faults", [
            {"action": "UnassignPrivateIpAddresses", "latency_ms": 1500,
             "count": 1, "after": True}])
        done = {}

        def call():
            done["out"] = agent.call("UnassignPrivateIpAddresses",
                                     NetworkInterfaceId=eid, Ipv4Prefixes=[p])
            done["t"] = time.monotonic()
        t = threading.Thread(target=call)
        t0 = time.monotonic()
        t.start()
        sim.wait_for(lambda: sim.eni_state(eid)["prefixes"] == [], 1.2,
                     what="the prefix gone before the answer")
        gone = time.monotonic()
        t.join(10)
        assert "result" in done["out"], done
        assert gone < done["t"] and done["t"] - t0 >= 1.5, (t0, gone, done)
    finally:
        agent.ok("DeleteNetworkInterface", NetworkInterfaceId=eid)


def test_after_and_with_param_checked(sim):
    for bad, word in (({"action": "X", "code": "E", "count": 1, "after": 1},
                       "after"),
                      ({"action": "IMDS", "code": "500", "count": 1,
                        "after": True}, "IMDS"),
                      ({"action": "X", "code": "E", "count": 1,
                        "with_param": ""}, "with_param")):
        st, out = sim.control("POST", "/faults", [bad])
        assert st == 400 and word in out["error"], (bad, out)
