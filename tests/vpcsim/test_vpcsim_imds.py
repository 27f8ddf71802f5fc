"""IMDSv2 as seen from inside each node namespace."""
import datetime
import json

TTL = {"X-aws-ec2-metadata-token-ttl-seconds": "60"}


def token(agent):
    out = agent.req({"op": "imds", "method": "PUT", "path": "/latest/api/token",
                     "headers": TTL})
    assert out["status"] == 200 and out["body"]
    return out["body"]


def get(agent, path, tok):
    hdr = {"X-aws-ec2-metadata-token": tok} if tok else {}
    return agent.req({"op": "imds", "path": path, "headers": hdr})


def test_token_required(sim, agent):
    out = agent.req({"op": "imds", "method": "PUT", "path": "/latest/api/token"})
    assert out["status"] == 400                     # no TTL header
    assert get(agent, "/latest/meta-data/instance-id", None)["status"] == 401
    assert get(agent, "/latest/meta-data/instance-id", "bogus")["status"] == 401
    tok = token(agent)
    assert get(agent, "/latest/meta-data/nope", tok)["status"] == 404


def test_metadata_per_node(sim, agent):
    node = sim.node(0)
    tok = token(agent)

    def md(path):
        out = get(agent, "/latest/meta-data/" + path, tok)
        assert out["status"] == 200, (path, out)
        return out["body"]
    assert md("instance-id") == node["instance_id"]
    assert md("instance-type") == node["instance_type"]
    assert md("placement/availability-zone") == sim.ep["availability_zone"]
    assert md("placement/region") == sim.ep["region"]
    assert md("mac") == node["primary_mac"]
    assert md("local-ipv4") == node["primary_ip"]
    listing = md("network/interfaces/macs/").split("\n")
    assert node["primary_mac"] + "/" in listing
    base = "network/interfaces/macs/%s/" % node["primary_mac"]
    keys = md(base).split("\n")
    for k in ("device-number", "interface-id", "subnet-id", "subnet-ipv4-cidr-block",
              "vpc-ipv4-cidr-blocks", "security-group-ids", "local-ipv4s"):
        assert k in keys, k
    assert md(base + "device-number") == "0"
    assert md(base + "interface-id") == node["primary_eni"]
    assert md(base + "subnet-id") == node["subnet_id"]
    assert md(base + "subnet-ipv4-cidr-block") == "10.0.0.0/20"
    assert md(base + "vpc-ipv4-cidr-blocks") == "10.0.0.0/16"
    assert md(base + "local-ipv4s").split("\n")[0] == node["primary_ip"]
    assert md(base + "security-group-ids") == sim.ep["security_groups"][0]["id"]
    ident = json.loads(get(agent, "/latest/dynamic/instance-identity/document",
                           tok)["body"])
    assert ident["instanceId"] == node["instance_id"]
    assert ident["region"] == sim.ep["region"]
    # the other node is told apart by its source address; tokens don't travel
    other = sim.agent(1)
    tok1 = token(other)
    assert get(other, "/latest/meta-data/instance-id", tok1)["body"] == \
        sim.node(1)["instance_id"]
    assert get(other, "/latest/meta-data/instance-id", tok)["status"] == 401


def test_role_credentials(sim, agent):
    tok = token(agent)
    role = sim.ep["iam_role"]
    assert get(agent, "/latest/meta-data/iam/security-credentials/", tok)[
        "body"] == role
    doc = json.loads(get(agent, "/latest/meta-data/iam/security-credentials/" + role,
                         tok)["body"])
    assert doc["Code"] == "Success"
    for k in ("AccessKeyId", "SecretAccessKey", "Token", "Expiration"):
        assert doc[k], k
    exp = datetime.datetime.strptime(doc["Expiration"], "%Y-%m-%dT%H:%M:%SZ")
    assert exp > datetime.datetime.utcnow()
    # botocore's own IMDS fetcher and provider (as the SDK chain uses them)
    f = agent.req({"op": "fetcher"})["creds"]
    assert f["role_name"] == role
    assert f["access_key"] == doc["AccessKeyId"] and f["token"] == doc["Token"]
    p = agent.req({"op": "provider"})
    assert p["method"] == "iam-role" and p["access_key"] == doc["AccessKeyId"]


def test_imds_faults(sim, agent):
    """IMDS can fail or slow down too: rules with action "IMDS" ("*" means
    EC2 actions only)."""
    sim.control("POST", "/faults", [{"action": "IMDS", "code": "503", "count": 1},
                                    {"action": "*", "code": "InternalError",
                                     "count": 1}])
    out = agent.req({"op": "imds", "method": "PUT", "path": "/latest/api/token",
                     "headers": TTL})
    assert out["status"] == 503
    assert token(agent)
    assert agent.err("DescribeInstanceTypes")["code"] == "InternalError"
    assert sim.state()["faults"] == []
