"""Bad input: clean EC2-style errors, never a traceback, and the server
keeps serving."""
import socket
import urllib.parse

V = "Version=2016-11-15"


def raw(agent, body, sign="static", **kw):
    return agent.req(dict({"op": "raw", "sign": sign, "body": body}, **kw))


def code_of(out):
    b = out["body"]
    assert b.startswith("<?xml") and "<Response><Errors><Error>" in b, b
    assert "<RequestID>" in b and "Traceback" not in b
    return b.split("<Code>")[1].split("</Code>")[0], \
        b.split("<Message>")[1].split("</Message>")[0]


def test_ec2_bad_requests(sim, agent):
    out = raw(agent, "Action=NoSuchThing&" + V)
    assert out["status"] == 400 and code_of(out)[0] == "InvalidAction"
    out = raw(agent, V)
    code, msg = code_of(out)
    assert (out["status"], code) == (400, "MissingParameter") and "Action" in msg
    out = raw(agent, "Action=CreateNetworkInterface&" + V)
    code, msg = code_of(out)
    assert code == "MissingParameter" and "SubnetId" in msg
    eni = sim.node(0)["primary_eni"]
    out = raw(agent, "Action=AttachNetworkInterface&NetworkInterfaceId=%s&InstanceId=%s&"
              % (eni, sim.node(0)["instance_id"]) + V)
    code, msg = code_of(out)
    assert code == "MissingParameter" and "DeviceIndex" in msg
    out = raw(agent, "Action=DescribeSubnets&Bogus=1&" + V)
    assert code_of(out)[0] == "UnknownParameter"
    out = raw(agent, "Action=AssignPrivateIpAddresses&NetworkInterfaceId=%s&"
              "SecondaryPrivateIpAddressCount=many&" % eni + V)
    assert code_of(out)[0] == "InvalidParameterValue"
    # garbage bodies, signed and unsigned
    for body in ("\x00\xff\xfe garbage %%% &&==", "=" * 5000, "%zz&Action",
                 "a=" + "b" * 100000):
        out = raw(agent, body)
        assert 400 <= out["status"] < 500, (body[:20], out["status"])
        code_of(out)
        out = raw(agent, body, sign=None)
        assert out["status"] == 401 and code_of(out)[0] == "AuthFailure"
    too_many = "&".join("A%d=1" % i for i in range(6000))
    assert 400 <= raw(agent, too_many)["status"] < 500
    # a GET with the query string works too (EC2 accepts both)
    out = raw(agent, "", method="GET", path="/?Action=DescribeInstanceTypes&" + V)
    assert out["status"] == 200


def test_ec2_bad_http(sim, agent):
    for data in ("GARBAGE\r\n\r\n", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: "
                 "99999999\r\n\r\n", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: "
                 "nope\r\n\r\n", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"):
        out = agent.req({"op": "socket", "data": data, "shut": True})
        assert "Traceback" not in out["reply"]
        if out["reply"]:
            assert out["reply"].startswith("HTTP/1."), out
    # still serving
    assert "InstanceTypes" in agent.ok("DescribeInstanceTypes")
    out = agent.req({"op": "keepalive", "n": 2})
    assert out["statuses"] == [200, 200]


def test_imds_bad_requests(sim, agent):
    out = agent.req({"op": "imds", "method": "PUT", "path": "/latest/api/token",
                     "headers": {"X-aws-ec2-metadata-token-ttl-seconds": "0"}})
    assert out["status"] == 400
    out = agent.req({"op": "imds", "method": "PUT", "path": "/latest/api/token",
                     "headers": {"X-aws-ec2-metadata-token-ttl-seconds": "abc"}})
    assert out["status"] == 400
    out = agent.req({"op": "socket", "host": "169.254.169.254", "data": "BLAH\r\n\r\n",
                     "shut": True})
    assert "Traceback" not in out["reply"]
    out = agent.req({"op": "imds", "method": "PUT", "path": "/latest/api/token",
                     "headers": {"X-aws-ec2-metadata-token-ttl-seconds": "10"}})
    assert out["status"] == 200


def test_control_bad_requests(sim):
    cases = [("POST", "/faults", b"not json"),
             ("POST", "/faults", b'[{"action": 5}]'),
             ("POST", "/faults", b'[{"action": "X", "code": "Y"}]'),
             ("POST", "/faults", b'[{"action": "X", "latency_ms": [5, 1]}]'),
             ("POST", "/faults", b'{"action": "X", "code": "Y", "probability": 7}'),
             ("POST", "/links", b"{}"),
             ("POST", "/links", b'{"delay_ms": -1}'),
             ("POST", "/links", b'{"never": true, "next": "x"}'),
             ("POST", "/credentials", b'{"expire_s": "x"}'),
             ("POST", "/rate", b'{"scale": 0}'),
             ("POST", "/subnets/" + sim.ep["subnets"][0]["id"], b'{"free": -3}'),
             ("POST", "/subnets/" + sim.ep["subnets"][0]["id"], b"[1,2]"),
             ("POST", "/faults", b"\xff\xfe\x00")]
    for method, path, raw in cases:
        st, out = sim.control(method, path, raw=raw)
        assert st == 400 and "error" in out, (path, raw, st, out)
    assert sim.control("GET", "/nope")[0] == 404
    assert sim.control("POST", "/links", {"eni": "eni-nope", "delay_ms": 1})[0] == 404
    port = int(urllib.parse.urlparse(sim.ep["control"]).port)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"\x00\x01garbage\r\n\r\n")
        s.shutdown(socket.SHUT_WR)
        reply = s.recv(4096)
        assert b"Traceback" not in reply
    assert sim.state()["faults"] == []
