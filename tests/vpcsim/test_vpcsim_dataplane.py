"""The data plane: links appear after the delay with the ENI's MAC, and a
packet from an address leaves through an ENI only while that address is
assigned to that ENI (strict rp_filter in the router)."""
import time

import pytest

from conftest import LINK_DELAY_MS

TABLE = "1001"


def link_by_mac(sim, ns, mac):
    out = sim.nsexec(ns, "ip", "-o", "link", "show").stdout
    for line in out.splitlines():
        if "link/ether " + mac in line:
            name = line.split(":")[1].strip().split("@")[0]
            return name, line
    return None


def free_device_index(agent, node):
    r = agent.ok("DescribeNetworkInterfaces", Filters=[
        {"Name": "attachment.instance-id", "Values": [node["instance_id"]]}])
    used = {e["Attachment"]["DeviceIndex"] for e in r["NetworkInterfaces"]}
    return min(set(range(1, 4)) - used)


def ping(sim, ns, src, dst, ok=True):
    p = sim.nsexec(ns, "ping", "-n", "-q", "-c", "1", "-W", "1", "-I", src, dst,
                   check=False)
    return p.returncode == 0


def test_vpc_host_answers(sim):
    for node in sim.ep["nodes"]:
        assert ping(sim, node["netns"], node["primary_ip"], sim.ep["vpc_host"])
    # nothing in a node routes to the real network
    p = sim.nsexec(sim.node(0)["netns"], "ping", "-n", "-q", "-c", "1", "-W", "1",
                   "192.0.2.1", check=False)
    assert p.returncode != 0


@pytest.fixture(scope="module")
def eni(sim, agent):
    """A second ENI on node 0 with two secondary addresses, attached."""
    node = sim.node(0)
    e = agent.ok("CreateNetworkInterface", SubnetId=node["subnet_id"],
                 SecondaryPrivateIpAddressCount=2)["NetworkInterface"]
    dev = free_device_index(agent, node)
    t0 = time.monotonic()
    aid = agent.ok("AttachNetworkInterface", NetworkInterfaceId=e["NetworkInterfaceId"],
                   InstanceId=node["instance_id"], DeviceIndex=dev)["AttachmentId"]
    info = {"id": e["NetworkInterfaceId"], "mac": e["MacAddress"], "aid": aid,
            "t0": t0, "dev": dev, "ns": node["netns"],
            "addrs": [p["PrivateIpAddress"] for p in e["PrivateIpAddresses"]]}
    yield info
    agent.ok("DetachNetworkInterface", AttachmentId=aid)
    sim.wait_for(lambda: sim.eni_state(info["id"])["status"] == "available", 5,
                 what="detach")
    sim.wait_dataplane()
    assert link_by_mac(sim, node["netns"], info["mac"]) is None, "link outlived detach"
    assert sim.eni_state(info["id"])["link"] is None
    agent.ok("DeleteNetworkInterface", NetworkInterfaceId=info["id"])


def test_link_appears_after_delay(sim, eni):
    assert link_by_mac(sim, eni["ns"], eni["mac"]) is None, "link appeared early"
    found = sim.wait_for(lambda: link_by_mac(sim, eni["ns"], eni["mac"]), 5,
                         step=0.02, what="ENI link")
    elapsed = time.monotonic() - eni["t0"]
    assert elapsed >= LINK_DELAY_MS / 1000.0 * 0.8, elapsed
    name, line = found
    assert name == "eth%d" % eni["dev"]
    assert "state DOWN" in line
    addrs = sim.nsexec(eni["ns"], "ip", "-4", "-o", "addr", "show", "dev", name).stdout
    assert addrs.strip() == "", "the sim must leave the ENI unconfigured"
    sim.wait_dataplane()
    st = sim.eni_state(eni["id"])
    assert sorted(st["link"]["routes"]) == sorted(eni["addrs"])
    routes = sim.nsexec(sim.ep["vpc_netns"], "ip", "-4", "route", "show").stdout
    for a in eni["addrs"]:
        assert "%s dev %s" % (a, st["link"]["vpc_ifname"]) in routes


def test_imds_lists_attached_eni(sim, agent, eni):
    sim.wait_for(lambda: sim.eni_state(eni["id"])["attachment"]["status"] ==
                 "attached", 5, what="attached")
    tok = agent.req({"op": "imds", "method": "PUT", "path": "/latest/api/token",
                     "headers": {"X-aws-ec2-metadata-token-ttl-seconds": "60"}})["body"]
    h = {"X-aws-ec2-metadata-token": tok}
    base = "/latest/meta-data/network/interfaces/macs/"
    listing = agent.req({"op": "imds", "path": base, "headers": h})["body"]
    assert eni["mac"] + "/" in listing.split("\n")
    dn = agent.req({"op": "imds", "path": base + eni["mac"] + "/device-number",
                    "headers": h})["body"]
    assert dn == str(eni["dev"])
    ips = agent.req({"op": "imds", "path": base + eni["mac"] + "/local-ipv4s",
                     "headers": h})["body"]
    assert ips.split("\n") == eni["addrs"]


def setup_node_side(sim, ns, ifname, gw, addr):
    sim.nsexec(ns, "ip", "link", "set", ifname, "up")
    sim.nsexec(ns, "ip", "addr", "replace", addr + "/32", "dev", ifname)
    sim.nsexec(ns, "ip", "route", "replace", gw, "dev", ifname, "scope", "link",
               "table", TABLE)
    sim.nsexec(ns, "ip", "route", "replace", "default", "via", gw, "dev", ifname,
               "table", TABLE)
    sim.nsexec(ns, "ip", "rule", "add", "from", addr, "lookup", TABLE, "pref", "1001")


def test_ping_only_while_assigned(sim, agent, eni):
    node = sim.node(0)
    ns = eni["ns"]
    name, _ = sim.wait_for(lambda: link_by_mac(sim, ns, eni["mac"]), 5, what="link")
    sim.wait_dataplane()
    primary, secondary = eni["addrs"][0], eni["addrs"][1]
    setup_node_side(sim, ns, name, node["gateway"], primary)
    setup_node_side(sim, ns, name, node["gateway"], secondary)
    vpc_host = sim.ep["vpc_host"]
    assert ping(sim, ns, secondary, vpc_host), "assigned address must get through"
    # unassign: the router no longer accepts it from this ENI
    agent.ok("UnassignPrivateIpAddresses", NetworkInterfaceId=eni["id"],
             PrivateIpAddresses=[secondary])
    sim.wait_dataplane()
    assert not ping(sim, ns, secondary, vpc_host), "unassigned address got through"
    assert ping(sim, ns, primary, vpc_host)
    # assigned to ANOTHER ENI (the node's primary): still dropped on this one
    agent.ok("AssignPrivateIpAddresses", NetworkInterfaceId=node["primary_eni"],
             PrivateIpAddresses=[secondary])
    sim.wait_dataplane()
    assert not ping(sim, ns, secondary, vpc_host), "wrong-ENI address got through"
    agent.ok("UnassignPrivateIpAddresses", NetworkInterfaceId=node["primary_eni"],
             PrivateIpAddresses=[secondary])
    # back on this ENI: works again
    agent.ok("AssignPrivateIpAddresses", NetworkInterfaceId=eni["id"],
             PrivateIpAddresses=[secondary])
    sim.wait_dataplane()
    assert ping(sim, ns, secondary, vpc_host)
    sim.nsexec(ns, "ip", "rule", "del", "pref", "1001", check=False)
    sim.nsexec(ns, "ip", "rule", "del", "pref", "1001", check=False)


def test_link_control(sim, agent):
    """POST /links: never (for the next attach), then release per ENI."""
    node = sim.node(1)
    e = agent.ok("CreateNetworkInterface", SubnetId=node["subnet_id"])[
        "NetworkInterface"]
    eid, mac = e["NetworkInterfaceId"], e["MacAddress"]
    st, out = sim.control("POST", "/links", {"never": True, "next": 1})
    assert st == 200, out
    aid = agent.ok("AttachNetworkInterface", NetworkInterfaceId=eid,
                   InstanceId=node["instance_id"],
                   DeviceIndex=free_device_index(agent, node))["AttachmentId"]
    time.sleep(LINK_DELAY_MS / 1000.0 * 2)
    assert link_by_mac(sim, node["netns"], mac) is None
    assert sim.eni_state(eid)["attachment"]["status"] == "attached"
    st, out = sim.control("POST", "/links", {"eni": eid, "delay_ms": 0})
    assert st == 200, out
    sim.wait_for(lambda: link_by_mac(sim, node["netns"], mac), 5, what="link")
    agent.ok("DetachNetworkInterface", AttachmentId=aid)
    sim.wait_for(lambda: sim.eni_state(eid)["status"] == "available", 5, what="detach")
    sim.wait_dataplane()
    assert link_by_mac(sim, node["netns"], mac) is None
    agent.ok("DeleteNetworkInterface", NetworkInterfaceId=eid)
