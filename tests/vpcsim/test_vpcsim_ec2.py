"""EC2 fidelity: boto3 (an independent client) inside a node namespace
drives every action and error path; keys boto3 needs must be present,
since it drops unknown elements silently."""
import uuid


def tagspec(**tags):
    return [{"ResourceType": "network-interface",
             "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]


def new_eni(agent, subnet, count=0, **tags):
    r = agent.ok("CreateNetworkInterface", SubnetId=subnet,
                 SecondaryPrivateIpAddressCount=count,
                 TagSpecifications=tagspec(**tags)) if count else \
        agent.ok("CreateNetworkInterface", SubnetId=subnet,
                 TagSpecifications=tagspec(**tags))
    return r["NetworkInterface"]


def test_describe_instances(sim, agent):
    node = sim.node(0)
    r = agent.ok("DescribeInstances", InstanceIds=[node["instance_id"]])
    inst = r["Reservations"][0]["Instances"][0]
    assert inst["InstanceId"] == node["instance_id"]
    assert inst["InstanceType"] == sim.ep["instance_type"]
    assert inst["PrivateIpAddress"] == node["primary_ip"]
    assert inst["Placement"]["AvailabilityZone"] == sim.ep["availability_zone"]
    assert inst["State"]["Name"] == "running"
    eni = inst["NetworkInterfaces"][0]
    for key in ("NetworkInterfaceId", "MacAddress", "PrivateIpAddress", "SubnetId",
                "Attachment", "PrivateIpAddresses", "Groups", "Status"):
        assert key in eni, key
    assert eni["MacAddress"] == node["primary_mac"]
    assert eni["Attachment"]["DeviceIndex"] == 0
    assert eni["Attachment"]["Status"] == "attached"
    # all instances, and a filter
    r = agent.ok("DescribeInstances")
    ids = {i["InstanceId"] for res in r["Reservations"] for i in res["Instances"]}
    assert ids == {n["instance_id"] for n in sim.ep["nodes"]}
    r = agent.ok("DescribeInstances", Filters=[{"Name": "instance-id",
                                                "Values": [node["instance_id"]]}])
    assert len(r["Reservations"]) == 1
    e = agent.err("DescribeInstances", InstanceIds=["i-0123456789abcdef0"])
    assert e["code"] == "InvalidInstanceID.NotFound"


def test_describe_instance_types_and_subnets(sim, agent):
    r = agent.ok("DescribeInstanceTypes", InstanceTypes=[sim.ep["instance_type"]])
    ni = r["InstanceTypes"][0]["NetworkInfo"]
    assert ni["MaximumNetworkInterfaces"] == sim.ep["limits"]["enis"] == 4
    assert ni["Ipv4AddressesPerInterface"] == sim.ep["limits"]["ips_per_eni"] == 10
    assert agent.err("DescribeInstanceTypes",
                     InstanceTypes=["x9.nothing"])["code"] == "InvalidInstanceType"
    r = agent.ok("DescribeSubnets")
    subs = {s["SubnetId"]: s for s in r["Subnets"]}
    assert set(subs) == {s["id"] for s in sim.ep["subnets"]}
    for s in sim.ep["subnets"]:
        got = subs[s["id"]]
        assert got["CidrBlock"] == s["cidr"]
        assert got["AvailabilityZone"] == sim.ep["availability_zone"]
        assert got["VpcId"] == sim.ep["vpc_id"]
        assert isinstance(got["AvailableIpAddressCount"], int)
    assert {s["cidr"] for s in sim.ep["subnets"]} == {"10.0.0.0/20", "10.0.16.0/20"}
    r = agent.ok("DescribeSubnets", SubnetIds=[sim.ep["subnets"][1]["id"]])
    assert [s["SubnetId"] for s in r["Subnets"]] == [sim.ep["subnets"][1]["id"]]
    assert agent.err("DescribeSubnets", SubnetIds=["subnet-00000000000000000"])[
        "code"] == "InvalidSubnetID.NotFound"


def test_create_idempotent_and_tags(sim, agent):
    subnet = sim.ep["subnets"][1]["id"]
    sg = sim.ep["security_groups"][1]["id"]
    token = str(uuid.uuid4())
    args = dict(SubnetId=subnet, Groups=[sg], Description="enid test",
                SecondaryPrivateIpAddressCount=3, ClientToken=token,
                TagSpecifications=tagspec(**{"enid/node": "n0", "cluster": "c1"}))
    free0 = agent.ok("DescribeSubnets", SubnetIds=[subnet])["Subnets"][0][
        "AvailableIpAddressCount"]
    a = agent.ok("CreateNetworkInterface", **args)
    b = agent.ok("CreateNetworkInterface", **args)
    assert a["ClientToken"] == token
    ea, eb = a["NetworkInterface"], b["NetworkInterface"]
    assert ea["NetworkInterfaceId"] == eb["NetworkInterfaceId"]
    for key in ("NetworkInterfaceId", "SubnetId", "VpcId", "AvailabilityZone",
                "Description", "MacAddress", "PrivateIpAddress", "PrivateIpAddresses",
                "Status", "Groups", "TagSet", "SourceDestCheck", "InterfaceType"):
        assert key in ea, key
    assert ea["Status"] == "available"
    assert ea["Description"] == "enid test"
    assert ea["Groups"][0]["GroupId"] == sg
    assert len(ea["PrivateIpAddresses"]) == 4
    assert [p["Primary"] for p in ea["PrivateIpAddresses"]] == [True] + [False] * 3
    assert ea["PrivateIpAddresses"][0]["PrivateIpAddress"] == ea["PrivateIpAddress"]
    assert {t["Key"]: t["Value"] for t in ea["TagSet"]} == {"enid/node": "n0",
                                                           "cluster": "c1"}
    free1 = agent.ok("DescribeSubnets", SubnetIds=[subnet])["Subnets"][0][
        "AvailableIpAddressCount"]
    assert free1 == free0 - 4, "an idempotent retry must not allocate again"
    # same token, different parameters
    args2 = dict(args, Description="other")
    assert agent.err("CreateNetworkInterface", **args2)["code"] == \
        "IdempotentParameterMismatch"
    # CreateTags, then filters on tags
    eid = ea["NetworkInterfaceId"]
    agent.ok("CreateTags", Resources=[eid], Tags=[{"Key": "extra", "Value": "x"}])
    got = agent.ok("DescribeNetworkInterfaces", NetworkInterfaceIds=[eid])[
        "NetworkInterfaces"][0]
    assert {t["Key"] for t in got["TagSet"]} == {"enid/node", "cluster", "extra"}
    r = agent.ok("DescribeNetworkInterfaces",
                 Filters=[{"Name": "tag:extra", "Values": ["x"]}])
    assert [e["NetworkInterfaceId"] for e in r["NetworkInterfaces"]] == [eid]
    r = agent.ok("DescribeNetworkInterfaces",
                 Filters=[{"Name": "tag-key", "Values": ["cluster"]},
                          {"Name": "subnet-id", "Values": [subnet]}])
    assert eid in [e["NetworkInterfaceId"] for e in r["NetworkInterfaces"]]
    assert agent.err("CreateTags", Resources=["eni-00000000000000000"],
                     Tags=[{"Key": "k", "Value": "v"}])["code"] == \
        "InvalidNetworkInterfaceID.NotFound"
    agent.ok("DeleteNetworkInterface", NetworkInterfaceId=eid)
    free2 = agent.ok("DescribeSubnets", SubnetIds=[subnet])["Subnets"][0][
        "AvailableIpAddressCount"]
    assert free2 == free0


def test_full_lifecycle(sim, agent):
    node = sim.node(0)
    subnet = node["subnet_id"]
    eni = new_eni(agent, subnet, 1, lifecycle="yes")
    eid = eni["NetworkInterfaceId"]
    r = agent.ok("AttachNetworkInterface", NetworkInterfaceId=eid,
                 InstanceId=node["instance_id"], DeviceIndex=1)
    aid = r["AttachmentId"]
    assert aid.startswith("eni-attach-")
    assert "NetworkCardIndex" in r
    # attaching -> attached
    st = agent.ok("DescribeNetworkInterfaces", NetworkInterfaceIds=[eid])[
        "NetworkInterfaces"][0]
    assert st["Attachment"]["Status"] in ("attaching", "attached")
    sim.wait_for(lambda: agent.ok("DescribeNetworkInterfaces",
                                  NetworkInterfaceIds=[eid])["NetworkInterfaces"][0][
        "Attachment"]["Status"] == "attached", 5, what="attached")
    st = agent.ok("DescribeNetworkInterfaces", NetworkInterfaceIds=[eid])[
        "NetworkInterfaces"][0]
    assert st["Status"] == "in-use"
    assert st["Attachment"]["InstanceId"] == node["instance_id"]
    assert st["Attachment"]["DeviceIndex"] == 1
    assert st["Attachment"]["DeleteOnTermination"] is False
    # delete while attached: refused as EC2 does
    e = agent.err("DeleteNetworkInterface", NetworkInterfaceId=eid)
    assert e["code"] == "InvalidParameterValue" and "currently in use" in e["message"]
    # DeleteOnTermination
    agent.ok("ModifyNetworkInterfaceAttribute", NetworkInterfaceId=eid,
             Attachment={"AttachmentId": aid, "DeleteOnTermination": True})
    st = agent.ok("DescribeNetworkInterfaces", NetworkInterfaceIds=[eid])[
        "NetworkInterfaces"][0]
    assert st["Attachment"]["DeleteOnTermination"] is True
    e = agent.err("ModifyNetworkInterfaceAttribute", NetworkInterfaceId=eid,
                  Attachment={"AttachmentId": "eni-attach-00000000000000000",
                              "DeleteOnTermination": True})
    assert e["code"] == "InvalidAttachmentID.NotFound"
    # filters: attachment.instance-id, status
    r = agent.ok("DescribeNetworkInterfaces", Filters=[
        {"Name": "attachment.instance-id", "Values": [node["instance_id"]]}])
    ids = {x["NetworkInterfaceId"] for x in r["NetworkInterfaces"]}
    assert ids == {node["primary_eni"], eid} | ids and eid in ids
    assert all(x["Attachment"]["InstanceId"] == node["instance_id"]
               for x in r["NetworkInterfaces"])
    r = agent.ok("DescribeNetworkInterfaces", Filters=[
        {"Name": "status", "Values": ["in-use"]},
        {"Name": "tag:lifecycle", "Values": ["yes"]}])
    assert [x["NetworkInterfaceId"] for x in r["NetworkInterfaces"]] == [eid]
    # addresses: by count, explicit, unassign
    r = agent.ok("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
                 SecondaryPrivateIpAddressCount=2)
    got = [a["PrivateIpAddress"] for a in r["AssignedPrivateIpAddresses"]]
    assert len(got) == 2 and r["NetworkInterfaceId"] == eid
    explicit = "10.0.15.200"
    r = agent.ok("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
                 PrivateIpAddresses=[explicit])
    assert [a["PrivateIpAddress"] for a in r["AssignedPrivateIpAddresses"]] == [explicit]
    e = agent.err("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
                  PrivateIpAddresses=[explicit])
    assert e["code"] == "InvalidParameterValue"
    st = agent.ok("DescribeNetworkInterfaces", NetworkInterfaceIds=[eid])[
        "NetworkInterfaces"][0]
    have = [p["PrivateIpAddress"] for p in st["PrivateIpAddresses"]]
    assert len(have) == 5 and set(got) | {explicit} <= set(have)
    agent.ok("UnassignPrivateIpAddresses", NetworkInterfaceId=eid,
             PrivateIpAddresses=got + [explicit])
    st = agent.ok("DescribeNetworkInterfaces", NetworkInterfaceIds=[eid])[
        "NetworkInterfaces"][0]
    assert len(st["PrivateIpAddresses"]) == 2
    e = agent.err("UnassignPrivateIpAddresses", NetworkInterfaceId=eid,
                  PrivateIpAddresses=[explicit])
    assert e["code"] == "InvalidParameterValue"
    # per-ENI address limit (10)
    e = agent.err("AssignPrivateIpAddresses", NetworkInterfaceId=eid,
                  SecondaryPrivateIpAddressCount=9)
    assert e["code"] == "PrivateIpAddressLimitExceeded"
    # detaching -> available, then delete
    agent.ok("DetachNetworkInterface", AttachmentId=aid)
    st = agent.ok("DescribeNetworkInterfaces", NetworkInterfaceIds=[eid])[
        "NetworkInterfaces"][0]
    assert st["Status"] in ("detaching", "available")
    sim.wait_for(lambda: agent.ok("DescribeNetworkInterfaces",
                                  NetworkInterfaceIds=[eid])["NetworkInterfaces"][0][
        "Status"] == "available", 5, what="available")
    st = agent.ok("DescribeNetworkInterfaces", NetworkInterfaceIds=[eid])[
        "NetworkInterfaces"][0]
    assert "Attachment" not in st
    assert agent.err("DetachNetworkInterface", AttachmentId=aid)["code"] == \
        "InvalidAttachmentID.NotFound"
    agent.ok("DeleteNetworkInterface", NetworkInterfaceId=eid)
    for op, kw in (("DeleteNetworkInterface", {"NetworkInterfaceId": eid}),
                   ("DescribeNetworkInterfaces", {"NetworkInterfaceIds": [eid]}),
                   ("AssignPrivateIpAddresses", {"NetworkInterfaceId": eid,
                                                 "SecondaryPrivateIpAddressCount": 1}),
                   ("AttachNetworkInterface", {"NetworkInterfaceId": eid,
                                               "InstanceId": node["instance_id"],
                                               "DeviceIndex": 1})):
        assert agent.err(op, **kw)["code"] == "InvalidNetworkInterfaceID.NotFound", op


def test_attachment_limits(sim, agent):
    node = sim.node(1)
    subnet = node["subnet_id"]
    enis = [new_eni(agent, subnet, limits="1")["NetworkInterfaceId"] for _ in range(4)]
    e = agent.err("AttachNetworkInterface", NetworkInterfaceId=enis[0],
                  InstanceId=node["instance_id"], DeviceIndex=0)
    assert e["code"] == "InvalidParameterValue"      # device 0 is taken
    atts = []
    for i, eid in enumerate(enis[:3]):
        atts.append(agent.ok("AttachNetworkInterface", NetworkInterfaceId=eid,
                             InstanceId=node["instance_id"],
                             DeviceIndex=i + 1)["AttachmentId"])
    e = agent.err("AttachNetworkInterface", NetworkInterfaceId=enis[3],
                  InstanceId=node["instance_id"], DeviceIndex=4)
    assert e["code"] == "AttachmentLimitExceeded"
    e = agent.err("AttachNetworkInterface", NetworkInterfaceId=enis[0],
                  InstanceId=sim.node(0)["instance_id"], DeviceIndex=3)
    assert e["code"] in ("IncorrectState", "InvalidParameterValue")
    # the primary ENI can't be detached
    prim = agent.ok("DescribeNetworkInterfaces",
                    NetworkInterfaceIds=[node["primary_eni"]])["NetworkInterfaces"][0]
    e = agent.err("DetachNetworkInterface",
                  AttachmentId=prim["Attachment"]["AttachmentId"])
    assert e["code"] == "OperationNotPermitted"
    for aid in atts:
        agent.ok("DetachNetworkInterface", AttachmentId=aid)
    sim.wait_for(lambda: all(
        x["Status"] == "available" for x in agent.ok(
            "DescribeNetworkInterfaces", NetworkInterfaceIds=enis)["NetworkInterfaces"]),
        5, what="all detached")
    for eid in enis:
        agent.ok("DeleteNetworkInterface", NetworkInterfaceId=eid)


def test_paging(sim, agent):
    subnet = sim.ep["subnets"][1]["id"]
    made = [new_eni(agent, subnet, paging="p")["NetworkInterfaceId"] for _ in range(7)]
    flt = [{"Name": "tag:paging", "Values": ["p"]}]
    r = agent.ok("DescribeNetworkInterfaces", Filters=flt, MaxResults=5)
    assert len(r["NetworkInterfaces"]) == 5 and r.get("NextToken")
    r2 = agent.ok("DescribeNetworkInterfaces", Filters=flt, MaxResults=5,
                  NextToken=r["NextToken"])
    assert len(r2["NetworkInterfaces"]) == 2 and not r2.get("NextToken")
    seen = [e["NetworkInterfaceId"] for e in r["NetworkInterfaces"] +
            r2["NetworkInterfaces"]]
    assert sorted(seen) == sorted(made)
    # boto3's own paginator walks the same pages
    out = sim.agent(0).req({"op": "paginate", "operation": "DescribeNetworkInterfaces",
                            "params": {"Filters": flt, "MaxResults": 5}})
    assert [len(p["NetworkInterfaces"]) for p in out["pages"]] == [5, 2]
    # boto3 refuses MaxResults < 5 itself; send it by hand
    out = agent.req({"op": "raw", "sign": "static", "body":
                     "Action=DescribeNetworkInterfaces&Version=2016-11-15&MaxResults=2"})
    assert out["status"] == 400 and "InvalidParameterValue" in out["body"]
    e = agent.err("DescribeNetworkInterfaces", Filters=flt, MaxResults=5,
                  NextToken="not-a-token")
    assert e["code"] == "InvalidParameterValue"
    for eid in made:
        agent.ok("DeleteNetworkInterface", NetworkInterfaceId=eid)


def test_errors(sim, agent):
    subnet = sim.ep["subnets"][0]["id"]
    assert agent.err("CreateNetworkInterface", SubnetId="subnet-00000000000000000")[
        "code"] == "InvalidSubnetID.NotFound"
    e = agent.err("CreateNetworkInterface", SubnetId=subnet,
                  SecondaryPrivateIpAddressCount=20)
    assert e["code"] == "PrivateIpAddressLimitExceeded"
    e = agent.err("CreateNetworkInterface", SubnetId=subnet,
                  Groups=["sg-00000000000000000"])
    assert e["code"] == "InvalidGroup.NotFound"
    e = agent.err("DescribeNetworkInterfaces",
                  Filters=[{"Name": "no-such-filter", "Values": ["x"]}])
    assert e["code"] == "InvalidParameterValue"
    e = agent.err("DescribeInstances", DryRun=True)
    assert e["code"] == "DryRunOperation" and e["status"] == 412


def test_credentials_kinds(sim, agent):
    # static keys, IMDS keys, wrong secret, wrong region scope
    assert "InstanceTypes" in agent.ok("DescribeInstanceTypes", client="static")
    assert "InstanceTypes" in agent.ok("DescribeInstanceTypes", client="imds")
    e = agent.err("DescribeInstanceTypes", client="badsecret")
    assert (e["code"], e["status"]) == ("AuthFailure", 401)
    assert agent.err("DescribeInstanceTypes", client="badregion")["code"] == \
        "AuthFailure"
    for tamper in ("signature", "body", "drop_token", "garble_auth"):
        out = agent.req({"op": "raw", "sign": "imds", "tamper": tamper,
                         "body": "Action=DescribeSubnets&Version=2016-11-15"})
        assert out["status"] == 401, (tamper, out)
        assert "<Code>AuthFailure</Code>" in out["body"], tamper
        assert "<RequestID>" in out["body"]
    out = agent.req({"op": "raw", "sign": "imds", "tamper": "date",
                     "body": "Action=DescribeSubnets&Version=2016-11-15"})
    assert out["status"] in (400, 401) and ("AuthFailure" in out["body"] or
                                            "RequestExpired" in out["body"])
    out = agent.req({"op": "raw", "sign": None,
                     "body": "Action=DescribeSubnets&Version=2016-11-15"})
    assert out["status"] == 401 and "AuthFailure" in out["body"]


def test_keepalive(sim, agent):
    out = agent.req({"op": "keepalive", "n": 4})
    assert out == {"statuses": [200] * 4, "connections": 1}


def test_curl_sigv4(sim):
    """libcurl's SigV4 (what cloudd uses) is accepted, with and without a
    session token and with the Content-Type signed."""
    ns = sim.node(0)["netns"]
    st = sim.ep["static_credentials"]
    base = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5",
            "--aws-sigv4", "aws:amz:%s:ec2" % sim.ep["region"]]
    p = sim.nsexec(ns, *base, "--user", "%s:%s" % (st["access_key_id"],
                                                  st["secret_access_key"]),
                   "-H", "Content-Type: application/x-www-form-urlencoded; charset=utf-8",
                   "-d", "Action=DescribeSubnets&Version=2016-11-15",
                   "http://198.18.0.1/")
    assert p.stdout == "200"
    # a body over 1 KiB: curl sends "Expect: 100-continue" first
    big = "Action=DescribeNetworkInterfaces&Version=2016-11-15&Filter.1.Name=tag:x&" + \
        "&".join("Filter.1.Value.%d=%s" % (i, "v" * 30) for i in range(1, 60))
    assert len(big) > 1024
    p = sim.nsexec(ns, *base, "-v", "--user", "%s:%s" % (st["access_key_id"],
                                                        st["secret_access_key"]),
                   "-H", "Expect: 100-continue", "-d", big, "http://198.18.0.1/")
    assert p.stdout == "200" and "100 Continue" in p.stderr
    tok = sim.nsexec(ns, "curl", "-s", "--max-time", "5", "-X", "PUT", "-H",
                     "X-aws-ec2-metadata-token-ttl-seconds: 60",
                     "http://169.254.169.254/latest/api/token").stdout
    import json
    cred = json.loads(sim.nsexec(
        ns, "curl", "-s", "--max-time", "5", "-H", "X-aws-ec2-metadata-token: " + tok,
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/" +
        sim.ep["iam_role"]).stdout)
    p = sim.nsexec(ns, *base, "--user", "%s:%s" % (cred["AccessKeyId"],
                                                  cred["SecretAccessKey"]),
                   "-H", "X-Amz-Security-Token: " + cred["Token"],
                   "-d", "Action=DescribeInstances&Version=2016-11-15",
                   "http://198.18.0.1/")
    assert p.stdout == "200"


def test_ipv6_off_by_default(sim, agent):
    """Without --ipv6 dual there is no IPv6 anywhere, and the answers are
    those of a sim that never had it."""
    assert "ipv6" not in sim.ep
    assert all("ipv6_cidr" not in s for s in sim.ep["subnets"])
    assert all("primary_ipv6" not in n for n in sim.ep["nodes"])
    vpc = agent.ok("DescribeVpcs")["Vpcs"]
    assert [v["VpcId"] for v in vpc] == [sim.ep["vpc_id"]]
    assert "Ipv6CidrBlockAssociationSet" not in vpc[0]
    for s in agent.ok("DescribeSubnets")["Subnets"]:
        assert s["Ipv6CidrBlockAssociationSet"] == [] and "Ipv6Native" not in s
    node = sim.node(0)
    e = agent.ok("DescribeNetworkInterfaces", NetworkInterfaceIds=[
        node["primary_eni"]])["NetworkInterfaces"][0]
    assert e["Ipv6Addresses"] == [] and "Ipv6Native" not in e
    err = agent.err("AssignIpv6Addresses", NetworkInterfaceId=node["primary_eni"],
                    Ipv6AddressCount=1)
    assert err["code"] == "InvalidParameterValue", err
    st, out = sim.control("POST", "/subnets/" + node["subnet_id"],
                          {"ipv6_state": "associated"})
    assert st == 400, out
    st, out = sim.control("POST", "/outside/connect",
                          {"to": "2001:db8:a0b:1200::4", "port": 7})
    assert st == 400 and "--ipv6" in out["error"], out
