"""IPv6 (--ipv6 dual): the VPC's /56 and the subnets' /64s and their
association states, IPv6 addresses and /80 prefixes on ENIs by the wire
names boto3 speaks (and a wrong name refused), the per-ENI limit with a
/80 counting as one, prefixes on Nitro only, the IPv6-only subnet whose
ENIs have no IPv4 address, IMDS's IPv6 paths with their 404s and lag,
IMDS and EC2 over IPv6 for a node with no IPv4 at all, and the data
plane: a pod with an address of its ENI's /80 reaches the VPC host and
the outside host untranslated, the router never resolves a pod's
address, and a source its ENI does not hold is dropped.

A simulator of its own: node 1 a Xen type (m4.large), node 2 in the
IPv6-only subnet, 6 IPv6 addresses per ENI on the configured type."""
import ipaddress
import json
import os
import socket
import subprocess
import threading
import time
import urllib.parse

import pytest

import shapecheck
from conftest import PREFIX, VPCSIM, Agent, launch, shut_down
from simlib import netns
from simlib.ipv6 import link_local
from test_vpcsim_dataplane import link_by_mac, ping
from test_vpcsim_prefixes import DESCRIBE_INSTANCES_EXTRAS

IPV6_LIMIT = 6
# Elements EC2 sends that Debian's botocore (1.29) does not model yet:
# boto3 drops them, so the tests read them in the raw XML.
NEWER_THAN_BOTOCORE = ("ipv6AddressesSet/item/isPrimaryIpv6",
                       "subnetSet/item/enableDns64")
TTL = {"X-aws-ec2-metadata-token-ttl-seconds": "60"}
IMDS6 = "fd00:ec2::254"
POD_TABLE = "1201"


@pytest.fixture(scope="module")
def s6():
    if os.geteuid() != 0:
        pytest.skip("vpcsim tests need root (network namespaces)")
    s = launch(PREFIX + "6", [
        "--nodes", "3", "--ipv6", "dual", "--node-type", "1:m4.large",
        "--node-subnet", "2:ipv6-native", "--ipv6-limit", str(IPV6_LIMIT),
        "--link-delay-ms", "0", "--attach-delay-ms", "20",
        "--detach-delay-ms", "50"])
    try:
        yield s
    finally:
        # The pod's namespace is named like a node's, so that --cleanup
        # removes it too after a crash; a test that made one removed it.
        shut_down(s)


@pytest.fixture(scope="module")
def ag(s6):
    return s6.agent(0)


# ------------------------------------------------------------------ helpers

def subnet(s6, kind):
    """"dual" (the first), "dual2" (the second) or "native"."""
    subs = s6.ep["subnets"]
    return {"dual": subs[0], "dual2": subs[1], "native": subs[2]}[kind]


def create(ag, subnet_id, **kw):
    return ag.ok("CreateNetworkInterface", SubnetId=subnet_id, **kw)[
        "NetworkInterface"]


def delete(ag, eid):
    ag.ok("DeleteNetworkInterface", NetworkInterfaceId=eid)


def describe(ag, eid):
    return ag.ok("DescribeNetworkInterfaces",
                 NetworkInterfaceIds=[eid])["NetworkInterfaces"][0]


def v6addrs(eni):
    return [a["Ipv6Address"] for a in eni.get("Ipv6Addresses", [])]


def v6prefixes(eni):
    return [p["Ipv6Prefix"] for p in eni.get("Ipv6Prefixes", [])]


def raw(ag, action, status=200, **params):
    body = urllib.parse.urlencode(dict(Action=action, Version="2016-11-15",
                                       **params))
    out = ag.req({"op": "raw", "sign": "static", "body": body})
    assert out["status"] == status, out
    return out["body"]


def attach(s6, ag, eid, node, dev):
    aid = ag.ok("AttachNetworkInterface", NetworkInterfaceId=eid,
                InstanceId=node["instance_id"], DeviceIndex=dev)["AttachmentId"]
    s6.wait_for(lambda: s6.eni_state(eid)["status"] == "in-use", 5,
                what="attached")
    return aid


def detach(s6, ag, eid, aid):
    ag.ok("DetachNetworkInterface", AttachmentId=aid)
    s6.wait_for(lambda: s6.eni_state(eid)["status"] == "available", 5,
                what="detached")


def token(agent, host=None):
    r = {"op": "imds", "method": "PUT", "path": "/latest/api/token",
         "headers": TTL}
    if host:
        r["host"] = host
    out = agent.req(r)
    assert out["status"] == 200 and out["body"], out
    return out["body"]


def md(agent, tok, path, host=None):
    r = {"op": "imds", "path": "/latest/meta-data/" + path,
         "headers": {"X-aws-ec2-metadata-token": tok}}
    if host:
        r["host"] = host
    return agent.req(r)


def is_block80(cidr, subnet_cidr):
    net = ipaddress.IPv6Network(cidr)              # strict: aligned
    sub = ipaddress.IPv6Network(subnet_cidr)
    return net.prefixlen == 80 and net.subnet_of(sub) and \
        net.network_address != sub.network_address and \
        net.broadcast_address != sub.broadcast_address


# ------------------------------------------------------------------ describe

def test_vpc_and_subnets(s6, ag):
    ep = s6.ep
    assert ep["ipv6"]["vpc_cidr"] == "2001:db8:a0b:1200::/56"
    vpc = ag.ok("DescribeVpcs")["Vpcs"]
    assert len(vpc) == 1 and vpc[0]["VpcId"] == ep["vpc_id"]
    assoc = vpc[0]["Ipv6CidrBlockAssociationSet"]
    assert [(a["Ipv6CidrBlock"], a["Ipv6CidrBlockState"]["State"])
            for a in assoc] == [(ep["ipv6"]["vpc_cidr"], "associated")]
    assert vpc[0]["CidrBlock"] == ep["vpc_cidr"]
    assert ag.ok("DescribeVpcs", Filters=[{"Name": "vpc-id", "Values": [
        "vpc-nope"]}])["Vpcs"] == []
    subs = {s["SubnetId"]: s for s in ag.ok("DescribeSubnets")["Subnets"]}
    assert len(subs) == 3
    vpc_net = ipaddress.IPv6Network(ep["ipv6"]["vpc_cidr"])
    seen = set()
    for kind in ("dual", "dual2", "native"):
        e = subnet(s6, kind)
        s = subs[e["id"]]
        (a,) = s["Ipv6CidrBlockAssociationSet"]
        net = ipaddress.IPv6Network(a["Ipv6CidrBlock"])
        assert net.prefixlen == 64 and net.subnet_of(vpc_net)
        assert a["Ipv6CidrBlockState"]["State"] == "associated"
        assert a["AssociationId"].startswith("subnet-cidr-assoc-")
        assert str(net) == e["ipv6_cidr"] and net not in seen
        seen.add(net)
        assert s["Ipv6Native"] is (kind == "native") and e["ipv6_native"] is \
            (kind == "native")
        assert s["AssignIpv6AddressOnCreation"] is (kind == "native")
    native = subs[subnet(s6, "native")["id"]]
    assert "CidrBlock" not in native and native["AvailableIpAddressCount"] == 0
    assert subs[subnet(s6, "dual")["id"]]["CidrBlock"] == "10.0.0.0/20"
    got = ag.ok("DescribeSubnets", Filters=[{"Name": "ipv6-native",
                                              "Values": ["true"]}])["Subnets"]
    assert [s["SubnetId"] for s in got] == [subnet(s6, "native")["id"]]


def test_instance_types_and_instances(s6, ag):
    got = {t["InstanceType"]: t["NetworkInfo"] for t in ag.ok(
        "DescribeInstanceTypes")["InstanceTypes"]}
    assert got["m5.xlarge"]["Ipv6AddressesPerInterface"] == IPV6_LIMIT
    assert got["m5.xlarge"]["Ipv4AddressesPerInterface"] == 10
    # m4.large supports IPv6 addresses (not prefixes): as EC2 says.
    assert got["m4.large"]["Ipv6AddressesPerInterface"] == 10
    # c1.medium, a previous generation, takes no IPv6 at all.
    assert [t for t, n in got.items() if not n["Ipv6Supported"]] == \
        ["c1.medium"]
    insts = {i["InstanceId"]: i for r in ag.ok("DescribeInstances")["Reservations"]
             for i in r["Instances"]}
    for node in s6.ep["nodes"]:
        i = insts[node["instance_id"]]
        (ni,) = i["NetworkInterfaces"]
        assert [a["Ipv6Address"] for a in ni["Ipv6Addresses"]] == \
            [node["primary_ipv6"]]
        if node["index"] == 2:
            # The IPv6-only node: no private IPv4 address at all.
            assert node["primary_ip"] is None and "PrivateIpAddress" not in i
            assert ni["PrivateIpAddresses"] == []
            assert ipaddress.IPv6Address(node["primary_ipv6"]) in \
                ipaddress.IPv6Network(subnet(s6, "native")["ipv6_cidr"])
        else:
            assert i["PrivateIpAddress"] == node["primary_ip"]
    # Each node's address is its primary IPv6 (as launched with one).
    xml = raw(ag, "DescribeNetworkInterfaces")
    for node in s6.ep["nodes"]:
        assert "<ipv6Address>%s</ipv6Address><isPrimaryIpv6>true<" % \
            node["primary_ipv6"] in xml
    assert xml.count("<enableDns64>") == 0
    assert raw(ag, "DescribeSubnets").count("<enableDns64>false<") == 3


# ------------------------------------------------------------------ wire names

def test_wire_names_as_boto3_speaks_them(s6, ag):
    sid = subnet(s6, "dual2")["id"]
    e = create(ag, sid, Ipv6AddressCount=1)
    eid = e["NetworkInterfaceId"]
    try:
        (first,) = v6addrs(e)
        net = ipaddress.IPv6Network(subnet(s6, "dual2")["ipv6_cidr"])
        assert ipaddress.IPv6Address(first) in net
        r = ag.ok("AssignIpv6Addresses", NetworkInterfaceId=eid, Ipv6AddressCount=2)
        assert len(r["AssignedIpv6Addresses"]) == 2 and r["NetworkInterfaceId"] == eid
        assert "AssignedIpv6Prefixes" not in r            # only what was added
        named = str(net.network_address + 0x1234)
        r = ag.ok("AssignIpv6Addresses", NetworkInterfaceId=eid, Ipv6Addresses=[named])
        assert r["AssignedIpv6Addresses"] == [named]
        assert v6addrs(describe(ag, eid)) == [first] + \
            [a for a in v6addrs(describe(ag, eid))[1:3]] + [named]
        r = ag.ok("UnassignIpv6Addresses", NetworkInterfaceId=eid,
                  Ipv6Addresses=[named])
        assert r["UnassignedIpv6Addresses"] == [named]
        err = ag.err("UnassignIpv6Addresses", NetworkInterfaceId=eid,
                     Ipv6Addresses=[named])
        assert err["code"] == "InvalidParameterValue", err
        # By hand, the names EC2's Query API takes; and near misses refused
        # as EC2 refuses any parameter it does not know.
        xml = raw(ag, "AssignIpv6Addresses", NetworkInterfaceId=eid,
                  **{"Ipv6Addresses.1": str(net.network_address + 0x99)})
        assert "<assignedIpv6Addresses><item>%s</item>" % (
            net.network_address + 0x99) in xml
        for wrong in ("Ipv6Address.1", "Ipv6Prefixes.1", "Ipv6AddressesCount",
                      "Ipv6Addresses.1.Ipv6Address"):
            body = raw(ag, "AssignIpv6Addresses", 400, NetworkInterfaceId=eid,
                       **{wrong: "1"})
            assert "<Code>UnknownParameter</Code>" in body and wrong in body, body
        for wrong in ("Ipv6Addresses.1", "Ipv6Prefix.1"):
            body = raw(ag, "CreateNetworkInterface", 400, SubnetId=sid,
                       **{wrong: "x"})
            assert "<Code>UnknownParameter</Code>" in body, body
        xml = raw(ag, "CreateNetworkInterface", SubnetId=sid, **{
            "Ipv6Addresses.1.Ipv6Address": str(net.network_address + 0x77)})
        made = xml.split("<networkInterfaceId>")[1].split("<")[0]
        assert v6addrs(describe(ag, made)) == [str(net.network_address + 0x77)]
        delete(ag, made)
    finally:
        delete(ag, eid)


def test_mixing_refused(s6, ag):
    sid = subnet(s6, "dual2")["id"]
    for kw in ({"Ipv6AddressCount": 1, "Ipv6PrefixCount": 1},
               {"Ipv6AddressCount": 1,
                "Ipv6Addresses": [{"Ipv6Address": "2001:db8:a0b:1201::99"}]},
               {"Ipv6Addresses": [{"Ipv6Address": "2001:db8:a0b:1201::99"}],
                "Ipv6Prefixes": [{"Ipv6Prefix": "2001:db8:a0b:1201:9::/80"}]}):
        err = ag.err("CreateNetworkInterface", SubnetId=sid, **kw)
        assert err["code"] == "InvalidParameterCombination", (kw, err)
    e = create(ag, sid)
    eid = e["NetworkInterfaceId"]
    try:
        assert "Ipv6Addresses" not in e or v6addrs(e) == []   # no auto-assign here
        for kw in ({"Ipv6AddressCount": 1, "Ipv6PrefixCount": 1},
                   {"Ipv6PrefixCount": 1,
                    "Ipv6Prefixes": ["2001:db8:a0b:1201:9::/80"]},
                   {"Ipv6Addresses": ["2001:db8:a0b:1201::99"],
                    "Ipv6Prefixes": ["2001:db8:a0b:1201:9::/80"]}):
            err = ag.err("AssignIpv6Addresses", NetworkInterfaceId=eid, **kw)
            assert err["code"] == "InvalidParameterCombination", (kw, err)
        assert ag.err("AssignIpv6Addresses", NetworkInterfaceId=eid)["code"] == \
            "MissingParameter"
        err = ag.err("AssignIpv6Addresses", NetworkInterfaceId=eid,
                     Ipv6AddressCount=0)
        assert err["code"] == "InvalidParameterValue", err
        assert v6addrs(describe(ag, eid)) == []
    finally:
        delete(ag, eid)


# ------------------------------------------------------------------ /80s

def test_prefixes_aligned_and_reused_after_delete(s6, ag):
    sub = subnet(s6, "dual2")
    e = create(ag, sub["id"], Ipv6PrefixCount=3)
    eid = e["NetworkInterfaceId"]
    got = v6prefixes(e)
    assert len(got) == 3 and v6addrs(e) == []
    for p in got:
        assert is_block80(p, sub["ipv6_cidr"]), p
    assert len(set(got)) == 3
    # DescribeNetworkInterfaces and the prefix log agree.
    assert v6prefixes(describe(ag, eid)) == got
    _, log = s6.control("GET", "/prefixes/log")
    assert {ev["prefix"] for ev in log["events"] if ev["eni"] == eid and
            ev["op"] == "assign"} == set(got)
    net = ipaddress.IPv6Network(sub["ipv6_cidr"])
    base = int(net.network_address)
    for bad, what in (("%s/80" % net.network_address, "reserved"),
                      (str(ipaddress.IPv6Network((base + (0xffff << 48), 80))),
                       "reserved"),
                      (str(ipaddress.IPv6Address(base + (5 << 48) + (1 << 32)))
                       + "/80", "aligned"),
                      (str(ipaddress.IPv6Network((base + (5 << 48), 79),
                                                 strict=False)), "/80"),
                      ("2001:db8:a0b:12aa:5::/80", "does not fall"),
                      (got[0], "in use"),
                      ("nonsense", "Invalid IPv6 prefix")):
        err = ag.err("AssignIpv6Addresses", NetworkInterfaceId=eid,
                     Ipv6Prefixes=[bad])
        assert err["code"] == "InvalidParameterValue", (bad, err)
        assert what in err["message"] or what == "in use" and \
            "overlaps" in err["message"], (bad, err)
    # An address inside a delegated /80 cannot be assigned singly.
    inside = str(ipaddress.IPv6Network(got[1]).network_address + 7)
    err = ag.err("AssignIpv6Addresses", NetworkInterfaceId=eid,
                 Ipv6Addresses=[inside])
    assert err["code"] == "InvalidParameterValue", err
    r = ag.ok("UnassignIpv6Addresses", NetworkInterfaceId=eid,
              Ipv6Prefixes=[got[2]])
    assert r["UnassignedIpv6Prefixes"] == [got[2]]
    delete(ag, eid)
    # Freed: each can be named again, and lowest-first takes them back.
    e2 = create(ag, sub["id"], Ipv6Prefixes=[{"Ipv6Prefix": got[1]}])
    assert v6prefixes(e2) == [got[1]]
    e3 = create(ag, sub["id"], Ipv6PrefixCount=1)
    assert v6prefixes(e3) == [got[0]]
    for x in (e2, e3):
        delete(ag, x["NetworkInterfaceId"])
    _, log = s6.control("GET", "/prefixes/log")
    assert {ev["prefix"] for ev in log["events"] if ev["eni"] == eid and
            ev["op"] == "delete"} == set(got[:2])


def test_limit_counts_a_prefix_as_one(s6, ag):
    node = s6.node(0)
    sid = node["subnet_id"]
    e = create(ag, sid, Ipv6AddressCount=IPV6_LIMIT - 2)
    eid = e["NetworkInterfaceId"]
    aid = attach(s6, ag, eid, node, 1)
    try:
        r = ag.ok("AssignIpv6Addresses", NetworkInterfaceId=eid, Ipv6PrefixCount=2)
        assert len(r["AssignedIpv6Prefixes"]) == 2
        for kw in ({"Ipv6AddressCount": 1}, {"Ipv6PrefixCount": 1}):
            err = ag.err("AssignIpv6Addresses", NetworkInterfaceId=eid, **kw)
            assert err["code"] == "PrivateIpAddressLimitExceeded", err
        ag.ok("UnassignIpv6Addresses", NetworkInterfaceId=eid,
              Ipv6Prefixes=r["AssignedIpv6Prefixes"][:1])
        ag.ok("AssignIpv6Addresses", NetworkInterfaceId=eid, Ipv6AddressCount=1)
        # The IPv4 slots are the IPv4 slots: untouched by IPv6.
        ag.ok("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
              SecondaryPrivateIpAddressCount=9)
    finally:
        detach(s6, ag, eid, aid)
        delete(ag, eid)
    # Unattached, an ENI may hold as many as the largest type allows (the
    # m4.large's 10); attaching it to a smaller one is refused.
    e = create(ag, sid, Ipv6AddressCount=IPV6_LIMIT + 1)
    try:
        err = ag.err("AttachNetworkInterface", NetworkInterfaceId=e[
            "NetworkInterfaceId"], InstanceId=node["instance_id"], DeviceIndex=1)
        assert err["code"] == "PrivateIpAddressLimitExceeded", err
    finally:
        delete(ag, e["NetworkInterfaceId"])
    err = ag.err("CreateNetworkInterface", SubnetId=sid, Ipv6AddressCount=11)
    assert err["code"] == "PrivateIpAddressLimitExceeded", err


def test_prefixes_need_nitro(s6, ag):
    xen = s6.node(1)
    assert xen["instance_type"] == "m4.large"
    sid = xen["subnet_id"]
    e = create(ag, sid)
    eid = e["NetworkInterfaceId"]
    aid = attach(s6, ag, eid, xen, 1)
    try:
        err = ag.err("AssignIpv6Addresses", NetworkInterfaceId=eid, Ipv6PrefixCount=1)
        assert err["code"] == "UnsupportedOperation", err
        ag.ok("AssignIpv6Addresses", NetworkInterfaceId=eid, Ipv6AddressCount=2)
    finally:
        detach(s6, ag, eid, aid)
        delete(ag, eid)
    e = create(ag, sid, Ipv6PrefixCount=1)
    try:
        err = ag.err("AttachNetworkInterface", NetworkInterfaceId=e[
            "NetworkInterfaceId"], InstanceId=xen["instance_id"], DeviceIndex=1)
        assert err["code"] == "UnsupportedOperation", err
    finally:
        delete(ag, e["NetworkInterfaceId"])
    # An IPv6-only subnet is for Nitro instances only.
    e = create(ag, subnet(s6, "native")["id"])
    try:
        err = ag.err("AttachNetworkInterface", NetworkInterfaceId=e[
            "NetworkInterfaceId"], InstanceId=xen["instance_id"], DeviceIndex=1)
        assert err["code"] == "UnsupportedOperation", err
    finally:
        delete(ag, e["NetworkInterfaceId"])


# ------------------------------------------------------------------ subnets

def test_native_subnet_enis_have_no_ipv4(s6, ag):
    sid = subnet(s6, "native")["id"]
    e = create(ag, sid)                        # auto-assigned: one IPv6 address
    eid = e["NetworkInterfaceId"]
    try:
        assert "PrivateIpAddress" not in e and e["PrivateIpAddresses"] == []
        assert len(v6addrs(e)) == 1 and e["Ipv6Native"] is True
        d = describe(ag, eid)
        assert "PrivateIpAddress" not in d and "PrivateDnsName" not in d
        err = ag.err("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
                     SecondaryPrivateIpAddressCount=1)
        assert err["code"] == "InvalidParameterValue", err
        ag.ok("AssignIpv6Addresses", NetworkInterfaceId=eid, Ipv6PrefixCount=1)
        st = s6.eni_state(eid)
        assert st["addresses"] == [] and st["primary_ip"] is None
        assert len(st["ipv6_prefixes"]) == 1
    finally:
        delete(ag, eid)
    for kw in ({"SecondaryPrivateIpAddressCount": 1}, {"Ipv4PrefixCount": 1},
               {"PrivateIpAddress": "10.0.0.99"}, {"Ipv6AddressCount": 0}):
        err = ag.err("CreateNetworkInterface", SubnetId=sid, **kw)
        assert err["code"] == "InvalidParameterValue", (kw, err)
    e = create(ag, sid, Ipv6PrefixCount=1)     # a prefix and no address: fine
    assert v6addrs(e) == [] and len(v6prefixes(e)) == 1
    delete(ag, e["NetworkInterfaceId"])


def test_auto_assign_and_count_zero(s6, ag):
    sid = subnet(s6, "dual2")["id"]
    st, out = s6.control("POST", "/subnets/" + sid, {"ipv6_auto_assign": True})
    assert st == 200 and out["ipv6_auto_assign"] is True, out
    try:
        e = create(ag, sid)
        assert len(v6addrs(e)) == 1
        delete(ag, e["NetworkInterfaceId"])
        e = create(ag, sid, Ipv6AddressCount=0)        # overrides the subnet's
        assert v6addrs(e) == []
        delete(ag, e["NetworkInterfaceId"])
        e = create(ag, sid, Ipv6AddressCount=2)
        assert len(v6addrs(e)) == 2
        delete(ag, e["NetworkInterfaceId"])
        assert ag.ok("DescribeSubnets", SubnetIds=[sid])["Subnets"][0][
            "AssignIpv6AddressOnCreation"] is True
    finally:
        s6.control("POST", "/subnets/" + sid, {"ipv6_auto_assign": False})


def test_association_states(s6, ag):
    sid = subnet(s6, "dual2")["id"]
    e = create(ag, sid)
    eid = e["NetworkInterfaceId"]

    def state():
        a = ag.ok("DescribeSubnets", SubnetIds=[sid])["Subnets"][0][
            "Ipv6CidrBlockAssociationSet"]
        return [x["Ipv6CidrBlockState"]["State"] for x in a]
    try:
        for bad in ({"ipv6_state": "gone"}, {"ipv6_cidr": "no"},
                    {"ipv6_state": "associated", "free": 3}):
            st, out = s6.control("POST", "/subnets/" + sid, bad)
            assert st == 400, (bad, out)
        for s in ("associating", "disassociating", "disassociated", "failing",
                  "failed"):
            st, out = s6.control("POST", "/subnets/" + sid, {"ipv6_state": s})
            assert st == 200 and out["ipv6_state"] == s, out
            assert state() == [s]
            err = ag.err("AssignIpv6Addresses", NetworkInterfaceId=eid,
                         Ipv6AddressCount=1)
            assert err["code"] == "InvalidParameterValue", (s, err)
            err = ag.err("CreateNetworkInterface", SubnetId=sid, Ipv6PrefixCount=1)
            assert err["code"] == "InvalidParameterValue", (s, err)
        s6.control("POST", "/subnets/" + sid, {"ipv6_state": "associated"})
        ag.ok("AssignIpv6Addresses", NetworkInterfaceId=eid, Ipv6AddressCount=1)
        # IPv6-less: refused while an address of it is in use.
        st, out = s6.control("POST", "/subnets/" + sid, {"ipv6_cidr": False})
        assert st == 409, out
        (a,) = v6addrs(describe(ag, eid))
        ag.ok("UnassignIpv6Addresses", NetworkInterfaceId=eid, Ipv6Addresses=[a])
        st, out = s6.control("POST", "/subnets/" + sid, {"ipv6_cidr": False})
        assert st == 200 and out["ipv6_cidr"] is None, out
        assert state() == []
        err = ag.err("AssignIpv6Addresses", NetworkInterfaceId=eid,
                     Ipv6AddressCount=1)
        assert err["code"] == "InvalidParameterValue", err
        # IPv4 goes on as before.
        ag.ok("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
              SecondaryPrivateIpAddressCount=1)
    finally:
        s6.control("POST", "/subnets/" + sid, {"ipv6_cidr": True})
        delete(ag, eid)
    assert state() == ["associated"]


# ------------------------------------------------------------------ IMDS

# Long enough that a busy machine still reads the old view between two
# calls; not so long the test drags.
LAG_S = 3


def test_imds_paths_404_and_lag(s6, ag):
    node = s6.node(0)
    base = "network/interfaces/macs/%s/" % node["primary_mac"]
    tok = token(ag)

    def get(path):
        out = md(ag, tok, base + path)
        return out["body"] if out["status"] == 200 else out["status"]
    keys = get("").split("\n")
    for k in ("ipv6s", "subnet-ipv6-cidr-blocks", "vpc-ipv6-cidr-blocks"):
        assert k in keys, (k, keys)
    assert "ipv6-prefix" not in keys and get("ipv6-prefix") == 404
    assert get("ipv6s") == node["primary_ipv6"]
    assert get("subnet-ipv6-cidr-blocks") == subnet(s6, "dual")["ipv6_cidr"]
    assert get("vpc-ipv6-cidr-blocks") == s6.ep["ipv6"]["vpc_cidr"]
    assert md(ag, tok, "ipv6")["body"] == node["primary_ipv6"]
    eid = node["primary_eni"]
    st, out = s6.control("POST", "/imds", {"lag_ms": LAG_S * 1000})
    assert st == 200, out
    try:
        t0 = time.monotonic()
        r = ag.ok("AssignIpv6Addresses", NetworkInterfaceId=eid, Ipv6PrefixCount=1)
        (p,) = r["AssignedIpv6Prefixes"]
        a4 = ag.ok("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
                   SecondaryPrivateIpAddressCount=1)[
            "AssignedPrivateIpAddresses"][0]["PrivateIpAddress"]
        # Still the old view, a 404 for a path that did not exist yet...
        assert get("ipv6-prefix") == 404
        assert a4 not in get("local-ipv4s").split("\n")
        assert time.monotonic() - t0 < LAG_S, "too slow to see the lag"
        # ...until the lag has passed: each change its own lag after it
        # was made (the two assigns may be apart on a busy machine).
        s6.wait_for(lambda: get("ipv6-prefix") == p, 8, what="IMDS ipv6-prefix")
        assert time.monotonic() - t0 >= LAG_S - 0.05
        s6.wait_for(lambda: a4 in get("local-ipv4s").split("\n"), 8,
                    what="IMDS local-ipv4s")
        ag.ok("UnassignIpv6Addresses", NetworkInterfaceId=eid, Ipv6Prefixes=[p])
        ag.ok("UnassignPrivateIpAddresses", NetworkInterfaceId=eid,
              PrivateIpAddresses=[a4])
        assert get("ipv6-prefix") == p
        s6.wait_for(lambda: get("ipv6-prefix") == 404, 8, what="IMDS 404 again")
    finally:
        s6.control("POST", "/imds", {"lag_ms": 0})
    assert s6.state()["ipv6"]["imds_lag_ms"] == 0


def test_imds_and_ec2_over_ipv6_for_ipv6_only_node(s6):
    node = s6.node(2)
    ns = node["netns"]
    # No IPv4 at all in the node: IMDS's IPv4 address is out of reach.
    addrs = s6.nsexec(ns, "ip", "-4", "-o", "addr", "show", "dev", "eth0").stdout
    assert addrs.strip() == ""
    agent = Agent(ns, s6.ep, ec2_host="[%s]" % s6.ep["ipv6"]["ec2"][8:-2],
                  imds="http://[%s]/" % IMDS6)
    try:
        tok = token(agent, IMDS6)
        out = md(agent, tok, "instance-id", IMDS6)
        assert out == {"status": 200, "body": node["instance_id"]}
        assert md(agent, tok, "local-ipv4", IMDS6)["status"] == 404
        assert md(agent, tok, "ipv6", IMDS6)["body"] == node["primary_ipv6"]
        base = "network/interfaces/macs/%s/" % node["primary_mac"]
        keys = md(agent, tok, base, IMDS6)["body"].split("\n")
        assert "local-ipv4s" not in keys and "subnet-ipv4-cidr-block" not in keys
        assert md(agent, tok, base + "ipv6s", IMDS6)["body"] == node["primary_ipv6"]
        assert md(agent, tok, base + "local-hostname", IMDS6)["body"].startswith(
            node["instance_id"] + ".")
        ident = agent.req({"op": "imds", "host": IMDS6,
                           "path": "/latest/dynamic/instance-identity/document",
                           "headers": {"X-aws-ec2-metadata-token": tok}})
        assert json.loads(ident["body"])["privateIp"] is None
        # EC2 over IPv6, signed with IMDS credentials got over IPv6.
        r = agent.ok("DescribeNetworkInterfaces",
                     NetworkInterfaceIds=[node["primary_eni"]])
        assert v6addrs(r["NetworkInterfaces"][0]) == [node["primary_ipv6"]]
    finally:
        agent.close()
    # A dual-stack Nitro node may ask over IPv6 too; a Xen one may not.
    tok = token(s6.agent(0), IMDS6)
    assert md(s6.agent(0), tok, "instance-id", IMDS6)["body"] == \
        s6.node(0)["instance_id"]
    xen = s6.agent(1)
    out = xen.req({"op": "imds", "method": "PUT", "host": IMDS6,
                   "path": "/latest/api/token", "headers": TTL})
    assert out["status"] == 403, out


# ------------------------------------------------------------------ shapes

def test_answers_match_botocore_model(s6, ag):
    sid = subnet(s6, "dual")["id"]
    answers = [(op, raw(ag, op)) for op in ("DescribeVpcs", "DescribeSubnets",
                                            "DescribeInstanceTypes")]
    xml = raw(ag, "CreateNetworkInterface", SubnetId=sid, Ipv6PrefixCount="1")
    answers.append(("CreateNetworkInterface", xml))
    eid = xml.split("<networkInterfaceId>")[1].split("<")[0]
    answers.append(("AssignIpv6Addresses", raw(ag, "AssignIpv6Addresses",
                                               NetworkInterfaceId=eid,
                                               Ipv6PrefixCount="1")))
    answers.append(("DescribeNetworkInterfaces", raw(ag, "DescribeNetworkInterfaces")))
    answers.append(("DescribeInstances", raw(ag, "DescribeInstances")))
    p = answers[-3][1].split("<item>")[1].split("<")[0]
    answers.append(("UnassignIpv6Addresses", raw(ag, "UnassignIpv6Addresses",
                                                 NetworkInterfaceId=eid,
                                                 **{"Ipv6Prefix.1": p})))
    raw(ag, "DeleteNetworkInterface", NetworkInterfaceId=eid)
    for op, x in answers:
        ignore = DESCRIBE_INSTANCES_EXTRAS if op == "DescribeInstances" else ()
        found = shapecheck.problems(op, x, ignore + NEWER_THAN_BOTOCORE)
        assert found == [], (op, found, x)
    joined = "".join(x for _, x in answers)
    for elem in ("<ipv6PrefixSet><item><ipv6Prefix>", "<isPrimaryIpv6>true<",
                 "<ipv6Native>true<", "<ipv6CidrBlockState><state>associated<",
                 "<assignedIpv6PrefixSet><item>", "<unassignedIpv6PrefixSet><item>",
                 "<ipv6AddressesPerInterface>6<"):
        assert elem in joined, elem


# ------------------------------------------------------------------ data plane

def ping6(s6, ns, src, dst):
    p = s6.nsexec(ns, "ping", "-6", "-n", "-q", "-c", "1", "-W", "1", "-I", src,
                  dst, check=False)
    return p.returncode == 0


def whoami6(ns, src, dst, port, kind):
    """The whoami service's first line, as seen from src in ns."""
    typ = socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM
    s = netns.socket_in_netns(ns, lambda: socket.socket(socket.AF_INET6, typ))
    try:
        s.settimeout(2)
        s.bind((src, 0))
        if kind == "tcp":
            s.connect((dst, port))
            data = s.recv(200)
        else:
            s.sendto(b"hi", (dst, port))
            data = s.recvfrom(200)[0]
        return data.decode().split("\n")[0]
    except OSError as e:
        return e
    finally:
        s.close()


def pod_listener(ns, addr):
    """A TCP listener on addr in ns that answers each connection with the
    peer's address; returns (socket, thread)."""
    def make():
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        s.bind((addr, 8080))
        s.listen(4)
        return s
    sock = netns.socket_in_netns(ns, make)

    def run():
        while True:
            try:
                c, peer = sock.accept()
            except OSError:
                return
            with c:
                c.sendall(peer[0].encode())
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return sock, t


def spoofed(s6):
    out = subprocess.run(["ip", "netns", "exec", s6.ep["vpc_netns"], "nft", "-j",
                          "list", "set", "ip6", "srccheck", "spoofed"],
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    found = {}
    for obj in json.loads(out)["nftables"]:
        for e in obj.get("set", {}).get("elem", []):
            e = e.get("elem", e) if isinstance(e, dict) else {"val": e}
            found[str(e["val"])] = (e.get("counter") or {}).get("packets", 0)
    return found


def test_pod_in_a_80_reaches_the_vpc_and_the_outside(s6, ag):
    node = s6.node(0)
    ns = node["netns"]
    pod = node["netns"] + "-pod"             # --cleanup removes it with the node's
    vpc = s6.ep["vpc_netns"]
    e = create(ag, node["subnet_id"], Ipv6PrefixCount=1)
    eid, mac = e["NetworkInterfaceId"], e["MacAddress"]
    (p80,) = v6prefixes(e)
    net = ipaddress.IPv6Network(p80)
    pods = [str(net.network_address + n) for n in (1, 2, 0x5eed)]
    stray = str(ipaddress.IPv6Network(subnet(s6, "dual")["ipv6_cidr"])
                .network_address + (0x7777 << 48) + 1)
    aid = attach(s6, ag, eid, node, 1)
    try:
        name, _ = s6.wait_for(lambda: link_by_mac(s6, ns, mac), 5, what="link")
        s6.wait_dataplane()
        link = s6.eni_state(eid)["link"]
        assert p80 in link["routes"]
        vpc_if = link["vpc_ifname"]
        routes = s6.nsexec(vpc, "ip", "-6", "route", "show", "dev", vpc_if).stdout
        assert "%s via fe80::" % p80 in routes, routes
        # The node: the ENI's link up, a table for the pod's traffic.
        s6.nsexec(ns, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1",
                  "net.ipv6.conf.%s.accept_dad=0" % name)
        s6.nsexec(ns, "ip", "link", "set", name, "up")
        s6.nsexec(ns, "ip", "-6", "route", "replace", "default", "via",
                  "fe80:ec2::1", "dev", name, "table", POD_TABLE)
        # The pod: a namespace with the /80's addresses (and one stray).
        subprocess.run(["ip", "netns", "add", pod], check=True)
        s6.nsexec(ns, "ip", "link", "add", "vpod", "type", "veth", "peer",
                  "name", "eth0", "netns", pod)
        s6.nsexec(pod, "sysctl", "-qw", "net.ipv6.conf.eth0.accept_dad=0")
        s6.nsexec(ns, "sysctl", "-qw", "net.ipv6.conf.vpod.accept_dad=0")
        s6.nsexec(ns, "ip", "addr", "add", "fe80::1/64", "dev", "vpod", "nodad")
        s6.nsexec(ns, "ip", "link", "set", "vpod", "up")
        s6.nsexec(pod, "ip", "link", "set", "lo", "up")
        s6.nsexec(pod, "ip", "link", "set", "eth0", "up")
        for a in pods + [stray]:
            s6.nsexec(pod, "ip", "addr", "add", a + "/128", "dev", "eth0", "nodad")
            s6.nsexec(ns, "ip", "-6", "route", "replace", a + "/128", "dev", "vpod")
            s6.nsexec(ns, "ip", "-6", "rule", "add", "from", a, "lookup", POD_TABLE)
        s6.nsexec(pod, "ip", "-6", "route", "add", "default", "via", "fe80::1",
                  "dev", "eth0")
        vpc_host = s6.ep["ipv6"]["vpc_host"]
        out_host = s6.ep["ipv6"]["outside_host"]
        for a in pods:
            assert ping6(s6, pod, a, vpc_host), a
        assert ping6(s6, pod, pods[0], out_host)
        assert ping6(s6, pod, pods[0], node["primary_ipv6"])
        assert ping6(s6, pod, pods[0], s6.node(2)["primary_ipv6"])  # IPv6-only node
        # Seen by its own address on both sides of the gateway: no NAT66.
        assert whoami6(pod, pods[1], out_host, 7, "tcp").split()[0] == pods[1]
        assert whoami6(pod, pods[2], out_host, 7, "udp").split()[0] == pods[2]
        assert whoami6(pod, pods[0], vpc_host, 7, "tcp").split()[0] == pods[0]
        _, o = s6.control("GET", "/outside")
        assert o["seen"]["tcp"].get(pods[1]) and o["vpc_host_seen"]["tcp"].get(pods[0])
        # And back in: the outside host and the VPC host reach a pod's
        # address, untranslated (POST /outside/connect with "to").
        sock, t = pod_listener(pod, pods[1])
        try:
            for via, src in (("internet", out_host), ("vpc", vpc_host)):
                st, r = s6.control("POST", "/outside/connect", {
                    "to": pods[1], "port": 8080, "via": via})
                assert st == 200 and r["ok"] and r["peer_reply"] == src, r
                assert r["to"] == "[%s]:8080" % pods[1], r
        finally:
            sock.shutdown(socket.SHUT_RDWR)
            sock.close()
            t.join(5)
        for bad in ({"to": "2001:db8:ff::10", "port": 7},
                    {"to": pods[1], "port": 7, "via": "peered"},
                    {"to": pods[1], "node": 0, "port": 7}, {"to": pods[1]}):
            st, r = s6.control("POST", "/outside/connect", bad)
            assert st == 400, (bad, r)
        # The router resolved the ENI once (its link-local address, a
        # permanent entry), never a pod's address.
        neigh = s6.nsexec(vpc, "ip", "-6", "neigh", "show", "dev", vpc_if).stdout
        lines = [ln.split() for ln in neigh.splitlines() if ln.strip()]
        assert [ln[0] for ln in lines if "PERMANENT" in ln] == \
            [link_local(mac)], neigh
        # Whatever else it learnt (the node's own link-local address from
        # its solicitations) is no address of the /80.
        assert not any(ipaddress.IPv6Address(ln[0]) in net for ln in lines), neigh
        # A source the ENI does not hold is dropped by the router, and
        # counted; it is no address of the ENI's /80.
        assert not ping6(s6, pod, stray, vpc_host)
        assert spoofed(s6).get(stray, 0) >= 1
        # Unassigned, the /80 no longer gets through.
        ag.ok("UnassignIpv6Addresses", NetworkInterfaceId=eid, Ipv6Prefixes=[p80])
        s6.wait_dataplane()
        assert not ping6(s6, pod, pods[0], vpc_host)
        assert spoofed(s6).get(pods[0], 0) >= 1
    finally:
        subprocess.run(["ip", "netns", "del", pod], check=False)
        for a in pods + [stray]:
            s6.nsexec(ns, "ip", "-6", "rule", "del", "from", a, "lookup",
                      POD_TABLE, check=False)
        detach(s6, ag, eid, aid)
        delete(ag, eid)
    s6.wait_dataplane()


def test_node_primary_link_without_dad(s6):
    """Each node's eth0 has DAD off and so no tentative address: its
    link-local address (the MAC's EUI-64) is usable from the start, as an
    EC2 node's long-up primary link is, and a first packet to the router
    needs no wait.  An ENI's link keeps the kernel's default."""
    for i in range(3):
        n = s6.node(i)
        ns = n["netns"]
        got = s6.nsexec(ns, "sysctl", "-n",
                        "net.ipv6.conf.eth0.accept_dad").stdout.strip()
        assert got == "0", (i, got)
        shown = json.loads(s6.nsexec(ns, "ip", "-6", "-j", "addr", "show",
                                     "dev", "eth0").stdout)[0]["addr_info"]
        assert not [a for a in shown if a.get("tentative")], (i, shown)
        assert link_local(n["primary_mac"]) in \
            [a["local"] for a in shown], (i, shown)
        default = s6.nsexec(ns, "sysctl", "-n",
                            "net.ipv6.conf.default.accept_dad").stdout.strip()
        assert default != "0", (i, default)


def test_node_to_node_and_outside(s6):
    n0, n2 = s6.node(0), s6.node(2)
    assert ping6(s6, n0["netns"], n0["primary_ipv6"], n2["primary_ipv6"])
    assert ping6(s6, n2["netns"], n2["primary_ipv6"], s6.ep["ipv6"]["outside_host"])
    assert ping6(s6, n2["netns"], n2["primary_ipv6"], n2["ipv6_gateway"] + "%eth0")
    gw = subnet(s6, "native")["ipv6_gateway"]
    assert ping6(s6, n2["netns"], n2["primary_ipv6"], gw)
    # IPv4 goes on as before on the dual-stack node.
    assert ping(s6, n0["netns"], n0["primary_ip"], s6.ep["vpc_host"])


def test_flags_refused():
    for args, what in ((["--node-subnet", "0:ipv6-native"], "needs --ipv6 dual"),
                       (["--ipv6", "dual", "--node-subnet", "0:ipv6-native",
                         "--node-type", "0:m4.large"], "Nitro"),
                       (["--node-subnet", "0:2"], "I:0, I:1 or I:ipv6-native"),
                       (["--ipv6-limit", "0"], "--ipv6-limit"),
                       (["--ipv6", "single"], "invalid choice")):
        p = subprocess.run([VPCSIM, "--nodes", "1", "--state", "/nonexistent"] + args,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=20)
        assert p.returncode == 2 and what in p.stderr, (args, p.stderr)
