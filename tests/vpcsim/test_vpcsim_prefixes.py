"""IPv4 prefix delegation: /28s assigned by count or by name, sharing the
ENI's slots with secondary addresses, refused on a Xen instance and by a
fragmented subnet, listed by IMDS, routed by the VPC to the ENI that holds
them, and answered in the shapes botocore's model describes.

A simulator of its own: single addresses scattered (a seeded draw), and
node 1 a Xen type (m4.large)."""
import ipaddress
import os
import subprocess
import time
import urllib.parse

import pytest

import shapecheck
from conftest import PREFIX, launch, shut_down
from test_vpcsim_dataplane import link_by_mac, ping

SEED = 24
# DescribeInstances' network interfaces carry three elements that
# botocore's InstanceNetworkInterface lacks (DescribeNetworkInterfaces'
# NetworkInterface has them).  They predate prefixes and are left as they
# are here: enid's cloudd reads attachment/instanceId in both answers.
DESCRIBE_INSTANCES_EXTRAS = ("networkInterfaceSet/item/requesterManaged",
                             "networkInterfaceSet/item/attachment/instanceId",
                             "networkInterfaceSet/item/attachment/instanceOwnerId")
POD_TABLE = "1101"


@pytest.fixture(scope="module")
def pd():
    if os.geteuid() != 0:
        pytest.skip("vpcsim tests need root (network namespaces)")
    s = launch(PREFIX + "p", [
        "--nodes", "2", "--node-type", "1:m4.large", "--allocation", "scattered",
        "--seed", str(SEED), "--link-delay-ms", "0", "--attach-delay-ms", "20",
        "--detach-delay-ms", "50"])
    try:
        yield s
    finally:
        shut_down(s)


@pytest.fixture(scope="module")
def ag(pd):
    return pd.agent(0)


@pytest.fixture(autouse=True)
def whole_subnets(pd):
    yield
    for s in pd.ep["subnets"]:
        pd.control("POST", "/subnets/" + s["id"], {"fragment": False})
    pd.control("POST", "/allocation", {"mode": "scattered"})


# ------------------------------------------------------------------ helpers

def is_block(cidr, subnet_cidr):
    """An aligned /28 of the subnet, clear of its reserved addresses."""
    net = ipaddress.IPv4Network(cidr)           # strict: aligned
    sub = ipaddress.IPv4Network(subnet_cidr)
    return net.prefixlen == 28 and net.subnet_of(sub) and \
        net.network_address != sub.network_address and \
        net.broadcast_address != sub.broadcast_address


def used(pd, subnet_id):
    """Every address the sim's ENIs hold in the subnet."""
    out = set()
    for e in pd.state()["enis"]:
        if e["subnet"] == subnet_id:
            out.update(e["addresses"])
            for p in e["prefixes"]:
                out.update(str(a) for a in ipaddress.IPv4Network(p))
    return out


def free_block(pd, subnet):
    """The highest /28 of the subnet that nothing holds."""
    taken = used(pd, subnet["id"])
    net = ipaddress.IPv4Network(subnet["cidr"])
    for b in reversed(list(net.subnets(new_prefix=28))[1:-1]):
        if not {str(a) for a in b} & taken:
            return str(b)
    raise AssertionError("no free /28 in %s" % subnet["cidr"])


def available(ag, subnet_id):
    return ag.ok("DescribeSubnets", SubnetIds=[subnet_id])["Subnets"][0][
        "AvailableIpAddressCount"]


def describe(ag, eid):
    return ag.ok("DescribeNetworkInterfaces",
                 NetworkInterfaceIds=[eid])["NetworkInterfaces"][0]


def prefixes_of(ag, eid):
    return [p["Ipv4Prefix"] for p in describe(ag, eid).get("Ipv4Prefixes", [])]


def create(ag, subnet_id, **kw):
    return ag.ok("CreateNetworkInterface", SubnetId=subnet_id, **kw)[
        "NetworkInterface"]


def delete(ag, eid):
    ag.ok("DeleteNetworkInterface", NetworkInterfaceId=eid)


def raw(ag, action, **params):
    """The answer's XML, as EC2's Query API sends it."""
    body = urllib.parse.urlencode(dict(Action=action, Version="2016-11-15",
                                       **params))
    out = ag.req({"op": "raw", "sign": "static", "body": body})
    assert out["status"] == 200, out
    return out["body"]


def attach(pd, ag, eid, node, dev):
    aid = ag.ok("AttachNetworkInterface", NetworkInterfaceId=eid,
                InstanceId=node["instance_id"], DeviceIndex=dev)["AttachmentId"]
    pd.wait_for(lambda: pd.eni_state(eid)["status"] == "in-use", 5,
                what="attached")
    return aid


def detach(pd, ag, eid, aid):
    ag.ok("DetachNetworkInterface", AttachmentId=aid)
    pd.wait_for(lambda: pd.eni_state(eid)["status"] == "available", 5,
                what="detached")


# ------------------------------------------------------------------ types

def test_hypervisor_per_instance_type(pd, ag):
    got = {t["InstanceType"]: t for t in ag.ok("DescribeInstanceTypes")[
        "InstanceTypes"]}
    assert set(got) == {"m5.xlarge", "m4.large", "m5.metal", "c1.medium"}
    # A previous generation: Xen, and no IPv6 at all.
    old = got["c1.medium"]
    assert (old["Hypervisor"], old["BareMetal"]) == ("xen", False)
    assert old["NetworkInfo"]["Ipv6Supported"] is False
    assert (got["m5.xlarge"]["Hypervisor"], got["m5.xlarge"]["BareMetal"]) == \
        ("nitro", False)
    xen = got["m4.large"]
    assert (xen["Hypervisor"], xen["BareMetal"]) == ("xen", False)
    assert xen["NetworkInfo"]["MaximumNetworkInterfaces"] == 2
    assert xen["NetworkInfo"]["Ipv4AddressesPerInterface"] == 10
    # Bare metal: no hypervisor at all, and prefixes allowed.
    metal = got["m5.metal"]
    assert "Hypervisor" not in metal and metal["BareMetal"] is True
    assert (metal["NetworkInfo"]["MaximumNetworkInterfaces"],
            metal["NetworkInfo"]["Ipv4AddressesPerInterface"]) == (15, 50)
    # DescribeInstances says xen for every instance, Nitro or not, as EC2
    # does: only the type tells them apart.
    r = ag.ok("DescribeInstances")
    insts = {i["InstanceId"]: i for res in r["Reservations"] for i in res["Instances"]}
    assert {i["Hypervisor"] for i in insts.values()} == {"xen"}
    assert insts[pd.node(1)["instance_id"]]["InstanceType"] == "m4.large"
    assert pd.node(1)["instance_type"] == "m4.large"
    assert pd.node(0)["instance_type"] == "m5.xlarge"


# ------------------------------------------------------------------ allocation

def test_single_addresses_scattered_then_lowest(pd, ag):
    subnet = pd.ep["subnets"][1]
    assert pd.state()["allocation"] == "scattered"
    e = create(ag, subnet["id"], SecondaryPrivateIpAddressCount=9)
    try:
        addrs = sorted(int(ipaddress.IPv4Address(p["PrivateIpAddress"]))
                       for p in e["PrivateIpAddresses"])
        # Ten draws from 4091 addresses: not a run, and spread over the
        # subnet, not bunched at its start.
        assert addrs != list(range(addrs[0], addrs[0] + 10)), addrs
        assert addrs[-1] - addrs[0] > 256, addrs
        st, out = pd.control("POST", "/allocation", {"mode": "lowest"})
        assert st == 200 and out == {"mode": "lowest"}
        taken = used(pd, subnet["id"])
        first = int(ipaddress.IPv4Network(subnet["cidr"]).network_address) + 4
        lowest = [str(ipaddress.IPv4Address(n)) for n in range(first, first + 64)
                  if str(ipaddress.IPv4Address(n)) not in taken][:3]
        e2 = create(ag, subnet["id"], SecondaryPrivateIpAddressCount=2)
        assert sorted(p["PrivateIpAddress"] for p in e2["PrivateIpAddresses"]) == \
            sorted(lowest, key=lambda a: int(ipaddress.IPv4Address(a)))
        delete(ag, e2["NetworkInterfaceId"])
        for bad in ({"mode": "random"}, {"mode": "lowest", "x": 1}, {}):
            st, out = pd.control("POST", "/allocation", bad)
            assert st == 400 and "lowest" in out["error"], (bad, out)
    finally:
        delete(ag, e["NetworkInterfaceId"])


# ------------------------------------------------------------------ assign

def test_assign_by_count_and_by_name_then_unassign(pd, ag):
    subnet = pd.ep["subnets"][0]
    e = create(ag, subnet["id"])
    eid = e["NetworkInterfaceId"]
    try:
        assert "Ipv4Prefixes" not in e
        free0 = available(ag, subnet["id"])
        r = ag.ok("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
                  Ipv4PrefixCount=2)
        got = [p["Ipv4Prefix"] for p in r["AssignedIpv4Prefixes"]]
        assert len(got) == 2 and r["AssignedPrivateIpAddresses"] == []
        assert all(is_block(p, subnet["cidr"]) for p in got), got
        assert prefixes_of(ag, eid) == got
        # A prefix's sixteen addresses are the subnet's no more.
        assert available(ag, subnet["id"]) == free0 - 32
        named = free_block(pd, subnet)
        r = ag.ok("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
                  Ipv4Prefixes=[named])
        assert [p["Ipv4Prefix"] for p in r["AssignedIpv4Prefixes"]] == [named]
        assert prefixes_of(ag, eid) == got + [named]
        # Held already, by this ENI or another.
        e2 = create(ag, subnet["id"])
        try:
            for target in (eid, e2["NetworkInterfaceId"]):
                err = ag.err("AssignPrivateIpAddresses", NetworkInterfaceId=target,
                             Ipv4Prefixes=[named])
                assert err["code"] == "InvalidParameterValue", err
                assert named in err["message"]
            # An address of it is not to be had singly either.
            inside = str(ipaddress.IPv4Network(named)[5])
            err = ag.err("AssignPrivateIpAddresses",
                         NetworkInterfaceId=e2["NetworkInterfaceId"],
                         PrivateIpAddresses=[inside])
            assert err["code"] == "InvalidParameterValue", err
        finally:
            delete(ag, e2["NetworkInterfaceId"])
        ag.ok("UnassignPrivateIpAddresses", NetworkInterfaceId=eid,
              Ipv4Prefixes=[got[0]])
        assert prefixes_of(ag, eid) == [got[1], named]
        assert available(ag, subnet["id"]) == free0 - 32
        err = ag.err("UnassignPrivateIpAddresses", NetworkInterfaceId=eid,
                     Ipv4Prefixes=[got[0]])
        assert err["code"] == "InvalidParameterValue" and \
            "not assigned" in err["message"], err
        ag.ok("UnassignPrivateIpAddresses", NetworkInterfaceId=eid,
              Ipv4Prefixes=[got[1], named])
        assert prefixes_of(ag, eid) == []
        assert "Ipv4Prefixes" not in describe(ag, eid)
        assert available(ag, subnet["id"]) == free0
        # The same /28 can be had again once released.
        ag.ok("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
              Ipv4Prefixes=[named])
    finally:
        delete(ag, eid)
    assert available(ag, subnet["id"]) == free0 + 1    # with the ENI's own


def test_create_with_prefixes_and_idempotency(pd, ag):
    subnet = pd.ep["subnets"][0]
    free0 = available(ag, subnet["id"])
    e = create(ag, subnet["id"], Ipv4PrefixCount=3)
    named = free_block(pd, subnet)
    e2 = create(ag, subnet["id"], Ipv4Prefixes=[{"Ipv4Prefix": named}])
    token = "pd-create-1"
    args = dict(SubnetId=subnet["id"], Ipv4PrefixCount=2, ClientToken=token)
    a = ag.ok("CreateNetworkInterface", **args)["NetworkInterface"]
    try:
        got = [p["Ipv4Prefix"] for p in e["Ipv4Prefixes"]]
        assert len(got) == 3 and all(is_block(p, subnet["cidr"]) for p in got)
        assert len(e["PrivateIpAddresses"]) == 1    # the primary, no slot
        assert prefixes_of(ag, e["NetworkInterfaceId"]) == got
        assert [p["Ipv4Prefix"] for p in e2["Ipv4Prefixes"]] == [named]
        # The primary address is not inside the ENI's own prefix.
        assert e2["PrivateIpAddress"] not in \
            {str(x) for x in ipaddress.IPv4Network(named)}
        # A retry with the same token is the same ENI, allocating nothing.
        free1 = available(ag, subnet["id"])
        b = ag.ok("CreateNetworkInterface", **args)["NetworkInterface"]
        assert b["NetworkInterfaceId"] == a["NetworkInterfaceId"]
        assert b["Ipv4Prefixes"] == a["Ipv4Prefixes"] and len(a["Ipv4Prefixes"]) == 2
        assert available(ag, subnet["id"]) == free1
        err = ag.err("CreateNetworkInterface", **dict(args, Ipv4PrefixCount=1))
        assert err["code"] == "IdempotentParameterMismatch", err
        assert free1 == free0 - (1 + 3 * 16) - (1 + 16) - (1 + 2 * 16)
    finally:
        for x in (e, e2, a):
            delete(ag, x["NetworkInterfaceId"])
    assert available(ag, subnet["id"]) == free0


def test_prefixes_and_addresses_share_slots(pd, ag):
    """Ten addresses per ENI: the primary, and nine slots for secondary
    addresses and /28s together."""
    node = pd.node(0)
    e = create(ag, node["subnet_id"], SecondaryPrivateIpAddressCount=4)
    eid = e["NetworkInterfaceId"]
    aid = None
    try:
        ag.ok("AssignPrivateIpAddresses", NetworkInterfaceId=eid, Ipv4PrefixCount=5)
        for kw in ({"Ipv4PrefixCount": 1}, {"SecondaryPrivateIpAddressCount": 1}):
            err = ag.err("AssignPrivateIpAddresses", NetworkInterfaceId=eid, **kw)
            assert err["code"] == "PrivateIpAddressLimitExceeded", (kw, err)
        # Attached, the instance type's limit holds the same.
        aid = attach(pd, ag, eid, node, 1)
        err = ag.err("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
                     Ipv4PrefixCount=1)
        assert err["code"] == "PrivateIpAddressLimitExceeded", err
        spare = e["PrivateIpAddresses"][1]["PrivateIpAddress"]
        ag.ok("UnassignPrivateIpAddresses", NetworkInterfaceId=eid,
              PrivateIpAddresses=[spare])
        ag.ok("AssignPrivateIpAddresses", NetworkInterfaceId=eid, Ipv4PrefixCount=1)
        st = describe(ag, eid)
        assert len(st["PrivateIpAddresses"]) == 4 and len(st["Ipv4Prefixes"]) == 6
        err = ag.err("CreateNetworkInterface", SubnetId=node["subnet_id"],
                     Ipv4PrefixCount=10)
        assert err["code"] == "PrivateIpAddressLimitExceeded", err
    finally:
        if aid:
            detach(pd, ag, eid, aid)
        delete(ag, eid)


def test_misuse(pd, ag):
    subnet = pd.ep["subnets"][0]
    e = create(ag, subnet["id"])
    eid = e["NetworkInterfaceId"]
    block = free_block(pd, subnet)
    try:
        for kw in ({"Ipv4PrefixCount": 1, "SecondaryPrivateIpAddressCount": 1},
                   {"Ipv4PrefixCount": 1, "PrivateIpAddresses": ["10.0.9.9"]},
                   {"Ipv4Prefixes": [block], "SecondaryPrivateIpAddressCount": 1},
                   {"Ipv4PrefixCount": 1, "Ipv4Prefixes": [block]}):
            err = ag.err("AssignPrivateIpAddresses", NetworkInterfaceId=eid, **kw)
            assert err["code"] == "InvalidParameterCombination", (kw, err)
        for kw in ({"Ipv4PrefixCount": 1, "SecondaryPrivateIpAddressCount": 1},
                   {"Ipv4PrefixCount": 1, "Ipv4Prefixes": [{"Ipv4Prefix": block}]}):
            err = ag.err("CreateNetworkInterface", SubnetId=subnet["id"], **kw)
            assert err["code"] == "InvalidParameterCombination", (kw, err)
        base = ipaddress.IPv4Network(block).network_address
        bad = {
            "%s/28" % (base + 1): "aligned",
            "%s/27" % (base - 16 if int(base) % 32 else base): "/28",
            "%s/32" % base: "/28",
            str(base): "/28",
            "10.0.200.0/28": "does not fall within",
            "10.0.0.0/28": "reserved",
            "10.0.15.240/28": "reserved",
            "10.0.0.256/28": "expected a CIDR",
        }
        for cidr, why in bad.items():
            err = ag.err("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
                         Ipv4Prefixes=[cidr])
            assert err["code"] == "InvalidParameterValue", (cidr, err)
            assert why in err["message"] and cidr in err["message"], (cidr, err)
            err = ag.err("CreateNetworkInterface", SubnetId=subnet["id"],
                         Ipv4Prefixes=[{"Ipv4Prefix": cidr}])
            assert err["code"] == "InvalidParameterValue", (cidr, err)
        err = ag.err("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
                     Ipv4Prefixes=[block, block])
        assert err["code"] == "InvalidParameterValue", err
        err = ag.err("UnassignPrivateIpAddresses", NetworkInterfaceId=eid,
                     Ipv4Prefixes=[block], PrivateIpAddresses=["10.0.9.9"])
        assert err["code"] == "InvalidParameterCombination", err
        err = ag.err("UnassignPrivateIpAddresses", NetworkInterfaceId=eid,
                     Ipv4Prefixes=["nonsense"])
        assert err["code"] == "InvalidParameterValue", err
        # Nothing of the above took anything.
        assert "Ipv4Prefixes" not in describe(ag, eid)
    finally:
        delete(ag, eid)


def test_xen_instance_gets_no_prefixes(pd, ag):
    node = pd.node(1)
    e = create(ag, node["subnet_id"])
    eid = e["NetworkInterfaceId"]
    aid = attach(pd, ag, eid, node, 1)
    try:
        err = ag.err("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
                     Ipv4PrefixCount=1)
        assert err["code"] == "UnsupportedOperation", err
        assert "m4.large" in err["message"] and "Nitro" in err["message"]
        ag.ok("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
              SecondaryPrivateIpAddressCount=2)
        detach(pd, ag, eid, aid)
        aid = None
        # An ENI that holds a prefix cannot be attached to it either...
        ag.ok("AssignPrivateIpAddresses", NetworkInterfaceId=eid, Ipv4PrefixCount=1)
        err = ag.err("AttachNetworkInterface", NetworkInterfaceId=eid,
                     InstanceId=node["instance_id"], DeviceIndex=1)
        assert err["code"] == "UnsupportedOperation", err
        # ...but to a Nitro one, yes.
        aid = attach(pd, ag, eid, pd.node(0), 2)
        detach(pd, ag, eid, aid)
        aid = None
    finally:
        if aid:
            detach(pd, ag, eid, aid)
        delete(ag, eid)


# ------------------------------------------------------------------ fragmentation

def test_fragmented_subnet_refuses_prefixes_not_addresses(pd, ag):
    subnet = pd.ep["subnets"][1]
    sid = subnet["id"]
    e = create(ag, sid)
    eid = e["NetworkInterfaceId"]
    try:
        st, out = pd.control("POST", "/subnets/" + sid, {"fragment": True})
        assert st == 200 and out["free_prefixes"] == 0, out
        assert out["fragmented"] > 200 and out["free"] > 3000, out
        assert available(ag, sid) == out["free"]
        err = ag.err("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
                     Ipv4PrefixCount=1)
        assert err["code"] == "InsufficientCidrBlocks", err
        err = ag.err("CreateNetworkInterface", SubnetId=sid, Ipv4PrefixCount=1)
        assert err["code"] == "InsufficientCidrBlocks", err
        # Every /28 holds an address in use now, so a named one overlaps.
        free = [str(b) for b in list(ipaddress.IPv4Network(subnet["cidr"]).subnets(
            new_prefix=28))[1:-1] if not {str(a) for a in b} & used(pd, sid)]
        err = ag.err("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
                     Ipv4Prefixes=[free[0]])
        assert err["code"] == "InvalidParameterValue" and \
            "overlaps" in err["message"], err
        # Single addresses are still to be had.
        r = ag.ok("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
                  SecondaryPrivateIpAddressCount=3)
        assert len(r["AssignedPrivateIpAddresses"]) == 3
        create_ok = create(ag, sid)
        delete(ag, create_ok["NetworkInterfaceId"])
        # Cleared: /28s again.
        st, out = pd.control("POST", "/subnets/" + sid, {"fragment": False})
        assert st == 200 and out["fragmented"] == 0 and out["free_prefixes"] > 200
        ag.ok("AssignPrivateIpAddresses", NetworkInterfaceId=eid, Ipv4PrefixCount=1)
        # Fragmented but for two: two /28s, then none.
        st, out = pd.control("POST", "/subnets/" + sid,
                             {"fragment": True, "keep_prefixes": 2})
        assert st == 200 and out["free_prefixes"] == 2, out
        ag.ok("AssignPrivateIpAddresses", NetworkInterfaceId=eid, Ipv4PrefixCount=2)
        err = ag.err("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
                     Ipv4PrefixCount=1)
        assert err["code"] == "InsufficientCidrBlocks", err
        # A released /28 is whole again.
        one = prefixes_of(ag, eid)[0]
        ag.ok("UnassignPrivateIpAddresses", NetworkInterfaceId=eid,
              Ipv4Prefixes=[one])
        assert pd.state()["subnets"][1]["free_prefixes"] == 1
        r = ag.ok("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
                  Ipv4PrefixCount=1)
        assert [p["Ipv4Prefix"] for p in r["AssignedIpv4Prefixes"]] == [one]
    finally:
        pd.control("POST", "/subnets/" + sid, {"fragment": False})
        delete(ag, eid)


def test_full_subnet_refuses_prefixes(pd, ag):
    """Fewer than sixteen free addresses: EC2's other refusal of a prefix,
    while a single address still fits."""
    sid = pd.ep["subnets"][1]["id"]
    e = create(ag, sid)
    eid = e["NetworkInterfaceId"]
    try:
        st, out = pd.control("POST", "/subnets/" + sid, {"free": 10})
        assert st == 200 and out["free"] == 10
        err = ag.err("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
                     Ipv4PrefixCount=1)
        assert err["code"] == "InvalidParameterValue", err
        assert "sufficient free Ipv4 addresses or prefixes" in err["message"]
        err = ag.err("CreateNetworkInterface", SubnetId=sid, Ipv4PrefixCount=1)
        assert err["code"] == "InvalidParameterValue", err
        ag.ok("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
              SecondaryPrivateIpAddressCount=1)
    finally:
        pd.control("POST", "/subnets/" + sid, {"free": 4000})
        delete(ag, eid)


def test_fragment_control_bad_input(pd):
    sid = pd.ep["subnets"][0]["id"]
    for body in ({"fragment": "yes"}, {"keep_prefixes": 1},
                 {"fragment": False, "keep_prefixes": 1},
                 {"fragment": True, "keep_prefixes": -1}, {"fragment": True, "x": 1},
                 {}):
        st, out = pd.control("POST", "/subnets/" + sid, body)
        assert st == 400 and out["error"], (body, out)
    assert pd.control("POST", "/subnets/subnet-nope", {"fragment": True})[0] == 404
    assert pd.state()["subnets"][0]["fragmented"] == 0


# ------------------------------------------------------------------ IMDS, routes

def imds(ag, path, tok):
    return ag.req({"op": "imds", "path": path,
                   "headers": {"X-aws-ec2-metadata-token": tok}})


@pytest.fixture
def eni_with_prefix(pd, ag):
    """An ENI on node 0 holding one /28, attached, its link up."""
    node = pd.node(0)
    e = create(ag, node["subnet_id"], Ipv4PrefixCount=1)
    eid = e["NetworkInterfaceId"]
    aid = attach(pd, ag, eid, node, 1)
    name, _ = pd.wait_for(lambda: link_by_mac(pd, node["netns"], e["MacAddress"]),
                          5, what="the ENI's link")
    pd.wait_dataplane()
    yield {"id": eid, "mac": e["MacAddress"], "ifname": name,
           "primary": e["PrivateIpAddress"],
           "prefix": e["Ipv4Prefixes"][0]["Ipv4Prefix"]}
    detach(pd, ag, eid, aid)
    delete(ag, eid)


def test_imds_ipv4_prefix(pd, ag, eni_with_prefix):
    e = eni_with_prefix
    tok = ag.req({"op": "imds", "method": "PUT", "path": "/latest/api/token",
                  "headers": {"X-aws-ec2-metadata-token-ttl-seconds": "60"}})["body"]
    base = "/latest/meta-data/network/interfaces/macs/%s/" % e["mac"]
    assert "ipv4-prefix" in imds(ag, base, tok)["body"].split("\n")
    out = imds(ag, base + "ipv4-prefix", tok)
    assert (out["status"], out["body"]) == (200, e["prefix"])
    ag.ok("AssignPrivateIpAddresses", NetworkInterfaceId=e["id"], Ipv4PrefixCount=1)
    out = imds(ag, base + "ipv4-prefix", tok)
    assert out["body"].split("\n") == prefixes_of(ag, e["id"])
    assert len(out["body"].split("\n")) == 2
    # local-ipv4s holds addresses only.
    assert imds(ag, base + "local-ipv4s", tok)["body"] == e["primary"]
    # A MAC without prefixes has no such key.
    prim = "/latest/meta-data/network/interfaces/macs/%s/" % pd.node(0)["primary_mac"]
    assert "ipv4-prefix" not in imds(ag, prim, tok)["body"].split("\n")
    assert imds(ag, prim + "ipv4-prefix", tok)["status"] == 404
    ag.ok("UnassignPrivateIpAddresses", NetworkInterfaceId=e["id"],
          Ipv4Prefixes=prefixes_of(ag, e["id"]))
    assert imds(ag, base + "ipv4-prefix", tok)["status"] == 404


class Pod:
    """A pod-like namespace on a node, wired as a CNI does: its addresses
    /32 on its eth0, a route to them on the node's veth, and a rule that
    sends what they send out through the ENI's link."""

    def __init__(self, pd, node, link, gw, eni_primary, addrs):
        self.pd, self.node_ns, self.addrs = pd, node["netns"], addrs
        self.ns = pd.prefix + "-pod0"
        self.host_if = "vpod0"
        ip = ["ip", "-n", self.node_ns]
        self.x(["ip", "netns", "add", self.ns])
        self.x(ip + ["link", "add", self.host_if, "type", "veth", "peer", "name",
                     "eth0", "netns", self.ns])
        pod = ["ip", "-n", self.ns]
        self.x(pod + ["link", "set", "lo", "up"])
        self.x(pod + ["link", "set", "eth0", "up"])
        for a in addrs:
            self.x(pod + ["addr", "add", a + "/32", "dev", "eth0"])
        self.x(pod + ["route", "add", "169.254.1.1", "dev", "eth0", "scope", "link"])
        self.x(pod + ["route", "add", "default", "via", "169.254.1.1", "dev", "eth0"])
        pd.nsexec(self.node_ns, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        pd.nsexec(self.node_ns, "sysctl", "-qw",
                  "net.ipv4.conf.%s.proxy_arp=1" % self.host_if)
        self.x(ip + ["link", "set", self.host_if, "up"])
        self.x(ip + ["link", "set", link, "up"])
        self.x(ip + ["addr", "replace", eni_primary + "/32", "dev", link])
        self.x(ip + ["route", "replace", gw, "dev", link, "scope", "link",
                     "table", POD_TABLE])
        self.x(ip + ["route", "replace", "default", "via", gw, "dev", link,
                     "table", POD_TABLE])
        for a in addrs:
            self.x(ip + ["route", "add", a + "/32", "dev", self.host_if])
            self.x(ip + ["rule", "add", "from", a, "lookup", POD_TABLE,
                         "pref", POD_TABLE])

    def x(self, argv):
        p = subprocess.run(argv, capture_output=True, text=True, timeout=15)
        assert p.returncode == 0, (argv, p.stderr)

    def ping(self, src, dst):
        return ping(self.pd, self.ns, src, dst)

    def curl(self, *args):
        return self.pd.nsexec(self.ns, "curl", "-s", "-o", "/dev/null", "-w",
                              "%{http_code}", "--max-time", "3", *args,
                              check=False).stdout

    def remove(self):
        for _ in self.addrs:
            subprocess.run(["ip", "-n", self.node_ns, "rule", "del", "pref",
                            POD_TABLE], capture_output=True)
        subprocess.run(["ip", "-n", self.node_ns, "route", "flush", "table",
                        POD_TABLE], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)


def test_vpc_routes_every_address_of_a_prefix(pd, ag, eni_with_prefix):
    e = eni_with_prefix
    node = pd.node(0)
    net = ipaddress.IPv4Network(e["prefix"])
    st = pd.eni_state(e["id"])
    assert e["prefix"] in st["link"]["routes"]
    routes = pd.nsexec(pd.ep["vpc_netns"], "ip", "-4", "route", "show").stdout
    assert "%s dev %s" % (e["prefix"], st["link"]["vpc_ifname"]) in routes
    # Its first and last addresses: every one of the sixteen is usable.
    first, last = str(net[0]), str(net[-1])
    pod = Pod(pd, node, e["ifname"], node["gateway"], e["primary"], [first, last])
    try:
        vpc_host = pd.ep["vpc_host"]
        assert pod.ping(first, vpc_host), "a prefix's first address must get through"
        assert pod.ping(last, vpc_host), "a prefix's last address must get through"
        # IMDS knows the node by a prefix's address, as by its own.
        assert pod.curl("-X", "PUT", "-H", "X-aws-ec2-metadata-token-ttl-seconds: 60",
                        "http://169.254.169.254/latest/api/token") == "200"
        # Released: the router drops what the pod sends (strict rp_filter).
        ag.ok("UnassignPrivateIpAddresses", NetworkInterfaceId=e["id"],
              Ipv4Prefixes=[e["prefix"]])
        pd.wait_dataplane()
        assert pd.eni_state(e["id"])["link"]["routes"] == [e["primary"]]
        assert not pod.ping(first, vpc_host), "a released prefix got through"
        neigh = pd.nsexec(pd.ep["vpc_netns"], "ip", "neigh", "show", "dev",
                          st["link"]["vpc_ifname"]).stdout
        assert first + " " not in neigh and last + " " not in neigh, neigh
        # Back on the ENI, by name: through again.
        ag.ok("AssignPrivateIpAddresses", NetworkInterfaceId=e["id"],
              Ipv4Prefixes=[e["prefix"]])
        pd.wait_dataplane()
        assert pod.ping(last, vpc_host)
    finally:
        pod.remove()


# ------------------------------------------------------------------ the model

def test_answers_match_botocore_model(pd, ag, eni_with_prefix):
    e = eni_with_prefix
    sid = pd.node(0)["subnet_id"]
    answers = [
        ("DescribeInstanceTypes", raw(ag, "DescribeInstanceTypes")),
        ("DescribeNetworkInterfaces", raw(ag, "DescribeNetworkInterfaces",
                                          **{"NetworkInterfaceId.1": e["id"]})),
        ("DescribeInstances", raw(ag, "DescribeInstances",
                                  **{"InstanceId.1": pd.node(0)["instance_id"]})),
        ("AssignPrivateIpAddresses", raw(ag, "AssignPrivateIpAddresses",
                                         NetworkInterfaceId=e["id"],
                                         Ipv4PrefixCount="1")),
        ("CreateNetworkInterface", raw(ag, "CreateNetworkInterface", SubnetId=sid,
                                       Ipv4PrefixCount="2")),
    ]
    made = answers[-1][1].split("<networkInterfaceId>")[1].split("<")[0]
    answers.append(("UnassignPrivateIpAddresses", raw(
        ag, "UnassignPrivateIpAddresses", NetworkInterfaceId=e["id"],
        **{"Ipv4Prefix.1": e["prefix"]})))
    raw(ag, "DeleteNetworkInterface", NetworkInterfaceId=made)
    for op, xml in answers:
        ignore = DESCRIBE_INSTANCES_EXTRAS if op == "DescribeInstances" else ()
        assert shapecheck.problems(op, xml, ignore) == [], (op, xml)
    assert shapecheck.problems("DescribeInstances", answers[2][1]) != [], \
        "DESCRIBE_INSTANCES_EXTRAS is out of date"
    # The new elements are there to be checked.
    assert "<ipv4PrefixSet><item><ipv4Prefix>" in answers[1][1]
    assert "<ipv4PrefixSet><item><ipv4Prefix>" in answers[2][1]
    assert "<assignedIpv4PrefixSet><item><ipv4Prefix>" in answers[3][1]
    assert "<hypervisor>xen</hypervisor>" in answers[0][1]
    assert "<bareMetal>true</bareMetal>" in answers[0][1]


def test_shapecheck_finds_what_the_model_lacks(pd, ag, eni_with_prefix):
    xml = raw(ag, "DescribeNetworkInterfaces",
              **{"NetworkInterfaceId.1": eni_with_prefix["id"]})
    for wrong, what in (
            (xml.replace("<ipv4Prefix>", "<ipv4prefix>").replace(
                "</ipv4Prefix>", "</ipv4prefix>"), "ipv4prefix: not in the model"),
            (xml.replace("<ipv4PrefixSet><item>", "<ipv4PrefixSet><member>").replace(
                "</item></ipv4PrefixSet>", "</member></ipv4PrefixSet>"),
             "must be <item>"),
            (xml.replace("<sourceDestCheck>true<", "<sourceDestCheck>yes<"),
             "not true or false")):
        assert wrong != xml
        found = shapecheck.problems("DescribeNetworkInterfaces", wrong)
        assert any(what in p for p in found), (what, found)
    types = raw(ag, "DescribeInstanceTypes")
    found = shapecheck.problems("DescribeInstanceTypes", types.replace(
        "<hypervisor>xen<", "<hypervisor>kvm<"))
    assert any("'kvm' is not one of" in p for p in found), found


# ------------------------------------------------------------------ the log

def prefix_log(pd, since=0):
    st, out = pd.control("GET", "/prefixes/log?since=%d" % since)
    assert st == 200, out
    return out


def test_prefix_log_records_every_change_of_owner(pd, ag):
    """GET /prefixes/log: each prefix that joins an ENI (create, assign)
    or leaves it (unassign, delete), with both clocks and the caller's
    address; a refused call changes nothing and logs nothing."""
    subnet = pd.ep["subnets"][0]
    node = pd.node(0)
    start = prefix_log(pd)["last"]
    t0, m0 = time.time(), time.monotonic()
    e = create(ag, subnet["id"], Ipv4PrefixCount=2)
    eid = e["NetworkInterfaceId"]
    made = [p["Ipv4Prefix"] for p in e["Ipv4Prefixes"]]
    try:
        more = ag.ok("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
                     Ipv4PrefixCount=1)["AssignedIpv4Prefixes"][0]["Ipv4Prefix"]
        ag.ok("UnassignPrivateIpAddresses", NetworkInterfaceId=eid,
              Ipv4Prefixes=[made[0]])
        err = ag.err("UnassignPrivateIpAddresses", NetworkInterfaceId=eid,
                     Ipv4Prefixes=[made[0]])
        assert err["code"] == "InvalidParameterValue", err
    finally:
        delete(ag, eid)
    t1, m1 = time.time(), time.monotonic()
    out = prefix_log(pd, start)
    got = [(x["op"], x["eni"], x["prefix"]) for x in out["events"]]
    assert got[:4] == [("assign", eid, made[0]), ("assign", eid, made[1]),
                       ("assign", eid, more), ("unassign", eid, made[0])], got
    assert sorted(got[4:]) == sorted([("delete", eid, made[1]),
                                      ("delete", eid, more)]), got
    seqs = [x["seq"] for x in out["events"]]
    assert seqs == list(range(start + 1, start + 7)) and out["last"] == seqs[-1]
    for x in out["events"]:
        # Clocks a test can compare with its own: the machine's.
        assert t0 <= x["t"] <= t1 and m0 <= x["mono"] <= m1, x
        assert x["caller"] == node["primary_ip"], x
        assert x["subnet"] == subnet["id"] and x["instance_id"] is None, x
    # since: only what came after.
    assert [x["seq"] for x in prefix_log(pd, seqs[3])["events"]] == seqs[4:]
    assert prefix_log(pd, out["last"])["events"] == []
    st, err = pd.control("GET", "/prefixes/log?since=x")
    assert st == 400 and "since" in err["error"], err


def test_prefix_log_names_the_instance_of_an_attached_eni(pd, ag):
    node = pd.node(0)
    e = create(ag, node["subnet_id"])
    eid = e["NetworkInterfaceId"]
    aid = attach(pd, ag, eid, node, 1)
    try:
        start = prefix_log(pd)["last"]
        p = ag.ok("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
                  Ipv4PrefixCount=1)["AssignedIpv4Prefixes"][0]["Ipv4Prefix"]
        ag.ok("UnassignPrivateIpAddresses", NetworkInterfaceId=eid,
              Ipv4Prefixes=[p])
        ev = prefix_log(pd, start)["events"]
        assert [(x["op"], x["prefix"], x["instance_id"]) for x in ev] == [
            ("assign", p, node["instance_id"]),
            ("unassign", p, node["instance_id"])], ev
    finally:
        detach(pd, ag, eid, aid)
        delete(ag, eid)
