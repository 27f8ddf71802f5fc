#!/usr/bin/python3
"""Test helper run INSIDE a node namespace: drives boto3/botocore (an
independent EC2 client) against the simulator and answers as JSON lines.

Each stdin line is a request {"op": ...}; each stdout line the answer.
Only the tests start this; it talks to 198.18.0.1 and 169.254.169.254,
which exist only inside the simulator's namespaces.
"""
import datetime
import http.client
import json
import os
import sys
import traceback

for k in list(os.environ):
    if k.startswith("AWS_"):
        del os.environ[k]
os.environ["AWS_CONFIG_FILE"] = "/dev/null"
os.environ["AWS_SHARED_CREDENTIALS_FILE"] = "/dev/null"

import boto3                                              # noqa: E402
import botocore.session                                   # noqa: E402
from botocore.auth import SigV4Auth                       # noqa: E402
from botocore.awsrequest import AWSRequest                # noqa: E402
from botocore.config import Config                        # noqa: E402
from botocore.credentials import (Credentials, CredentialResolver,  # noqa: E402
                                  InstanceMetadataProvider)
from botocore.exceptions import ClientError               # noqa: E402
from botocore.utils import InstanceMetadataFetcher        # noqa: E402

EC2_HOST = "198.18.0.1"
IMDS = "http://169.254.169.254/"


class Agent:
    def __init__(self):
        self.clients = {}
        self.creds = {}
        self.region = None

    def op_setup(self, r):
        global EC2_HOST, IMDS
        self.region = r["region"]
        # A node in the IPv6-only subnet reaches EC2 and IMDS over IPv6
        # only: setup may name other endpoints.
        EC2_HOST = r.get("ec2_host", EC2_HOST)
        IMDS = r.get("imds", IMDS)
        self.static = Credentials(r["static"]["access_key_id"],
                                  r["static"]["secret_access_key"])
        cfg = Config(retries={"mode": "standard", "total_max_attempts": 1},
                     connect_timeout=5, read_timeout=20)
        # Client 1: credentials from IMDS through botocore's own provider.
        bs = botocore.session.Session()
        fetcher = InstanceMetadataFetcher(timeout=2, num_attempts=2,
                                          base_url=IMDS.rstrip("/"))
        provider = InstanceMetadataProvider(iam_role_fetcher=fetcher)
        bs.register_component("credential_provider", CredentialResolver([provider]))
        sess = boto3.Session(botocore_session=bs, region_name=self.region)
        self.clients["imds"] = sess.client("ec2", endpoint_url="http://%s/" % EC2_HOST,
                                           config=cfg)
        self.creds["imds"] = bs.get_credentials()
        # Client 2: the static key pair the simulator publishes.
        self.clients["static"] = boto3.client(
            "ec2", endpoint_url="http://%s/" % EC2_HOST, region_name=self.region,
            aws_access_key_id=self.static.access_key,
            aws_secret_access_key=self.static.secret_key, config=cfg)
        self.creds["static"] = self.static
        # Client 3: right key id, wrong secret.
        self.clients["badsecret"] = boto3.client(
            "ec2", endpoint_url="http://%s/" % EC2_HOST, region_name=self.region,
            aws_access_key_id=self.static.access_key,
            aws_secret_access_key=("y" if self.static.secret_key[0] == "x" else "x")
            + self.static.secret_key[1:], config=cfg)
        # Client 4: signs for another region.
        self.clients["badregion"] = boto3.client(
            "ec2", endpoint_url="http://%s/" % EC2_HOST, region_name="eu-north-9",
            aws_access_key_id=self.static.access_key,
            aws_secret_access_key=self.static.secret_key, config=cfg)
        fc = self.creds["imds"].get_frozen_credentials()
        return {"access_key": fc.access_key, "has_token": bool(fc.token)}

    def op_call(self, r):
        client = self.clients[r.get("client", "imds")]
        method = getattr(client, _snake(r["operation"]))
        try:
            out = method(**r.get("params", {}))
        except ClientError as e:
            err = e.response.get("Error", {})
            return {"error": {"code": err.get("Code"), "message": err.get("Message"),
                              "status": e.response.get("ResponseMetadata", {})
                              .get("HTTPStatusCode")}}
        out.pop("ResponseMetadata", None)
        return {"result": out}

    def op_paginate(self, r):
        client = self.clients[r.get("client", "imds")]
        pages = []
        for page in client.get_paginator(_snake(r["operation"])).paginate(
                **r.get("params", {})):
            page.pop("ResponseMetadata", None)
            pages.append(page)
        return {"pages": pages}

    def op_fetcher(self, r):
        """botocore's IMDS fetcher, as the SDK's credential chain uses it."""
        f = InstanceMetadataFetcher(timeout=2, num_attempts=2,
                                    base_url=IMDS.rstrip("/"))
        creds = f.retrieve_iam_role_credentials()
        return {"creds": creds}

    def op_provider(self, r):
        p = InstanceMetadataProvider(iam_role_fetcher=InstanceMetadataFetcher(
            timeout=2, num_attempts=2, base_url=IMDS.rstrip("/")))
        c = p.load()
        fc = c.get_frozen_credentials()
        return {"method": c.method, "access_key": fc.access_key,
                "secret_key": fc.secret_key, "token": fc.token,
                "expiry": str(getattr(c, "_expiry_time", None))}

    def op_refresh_imds_client(self, r):
        """Forget the IMDS client's cached credentials (as after a revoke)."""
        self.op_setup({"region": self.region, "static": {
            "access_key_id": self.static.access_key,
            "secret_access_key": self.static.secret_key}})
        return {}

    def _signed(self, r, body):
        who = r.get("sign")
        headers = {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}
        headers.update(r.get("headers", {}))
        req = AWSRequest(method=r.get("method", "POST"),
                         url="http://%s%s" % (EC2_HOST, r.get("path", "/")),
                         data=body, headers=headers)
        if isinstance(who, dict):
            SigV4Auth(Credentials(who["access_key"], who["secret_key"],
                                  who.get("token")), "ec2",
                      r.get("region", self.region)).add_auth(req)
        elif who:
            creds = self.creds[who]
            if hasattr(creds, "get_frozen_credentials"):
                creds = creds.get_frozen_credentials()
            SigV4Auth(creds, "ec2", r.get("region", self.region)).add_auth(req)
        h = dict(req.headers.items())
        tamper = r.get("tamper")
        if tamper == "signature":
            auth = h["Authorization"]
            sig = auth[-64:]
            h["Authorization"] = auth[:-64] + ("0" if sig[0] != "0" else "1") + sig[1:]
        elif tamper == "drop_token":
            h.pop("X-Amz-Security-Token", None)
        elif tamper == "date":
            h["X-Amz-Date"] = "20200101T000000Z"
        elif tamper == "garble_auth":
            h["Authorization"] = "AWS4-HMAC-SHA256 nonsense"
        return h

    def op_raw(self, r):
        """Send one hand-made request; body may be signed then altered."""
        body = r.get("body", "")
        body = body.encode("latin-1") if isinstance(body, str) else body
        h = self._signed(r, body)
        if r.get("tamper") == "body":
            body = body + b"&Extra=1"
            h["Content-Length"] = str(len(body))
        conn = http.client.HTTPConnection(r.get("host", EC2_HOST), r.get("port", 80),
                                          timeout=20)
        try:
            conn.request(r.get("method", "POST"), r.get("path", "/"), body=body,
                         headers=h)
            resp = conn.getresponse()
            data = resp.read().decode("utf-8", "replace")
            return {"status": resp.status, "body": data,
                    "headers": dict(resp.getheaders())}
        finally:
            conn.close()

    def op_keepalive(self, r):
        """n signed requests on one TCP connection: the server must keep it open."""
        conn = http.client.HTTPConnection(EC2_HOST, 80, timeout=20)
        statuses = []
        socks = set()
        try:
            for _ in range(r.get("n", 3)):
                body = b"Action=DescribeInstanceTypes&Version=2016-11-15"
                h = self._signed({"sign": "static"}, body)
                conn.request("POST", "/", body=body, headers=h)
                resp = conn.getresponse()
                resp.read()
                statuses.append(resp.status)
                socks.add(id(conn.sock))
        finally:
            conn.close()
        return {"statuses": statuses, "connections": len(socks)}

    def op_socket(self, r):
        """Raw bytes to a TCP port; returns what came back (bounded)."""
        import socket
        s = socket.create_connection((r.get("host", EC2_HOST), r.get("port", 80)),
                                     timeout=5)
        try:
            s.sendall(r["data"].encode("latin-1"))
            if r.get("shut"):
                s.shutdown(socket.SHUT_WR)
            data = b""
            try:
                while len(data) < 65536:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                    if b"\r\n\r\n" in data and not r.get("read_all"):
                        break
            except socket.timeout:
                pass
            return {"reply": data.decode("latin-1")}
        finally:
            s.close()

    def op_imds(self, r):
        """A plain HTTP request to IMDS."""
        conn = http.client.HTTPConnection(r.get("host", "169.254.169.254"), 80,
                                          timeout=5)
        try:
            conn.request(r.get("method", "GET"), r["path"], body=r.get("body"),
                         headers=r.get("headers", {}))
            resp = conn.getresponse()
            return {"status": resp.status,
                    "body": resp.read().decode("utf-8", "replace")}
        finally:
            conn.close()


def _snake(name):
    from botocore import xform_name
    return xform_name(name)


def main():
    agent = Agent()
    for line in sys.stdin:
        try:
            r = json.loads(line)
            out = getattr(agent, "op_" + r["op"])(r)
        except Exception as e:
            out = {"exception": "%s: %s" % (type(e).__name__, e),
                   "trace": traceback.format_exc()}
        sys.stdout.write(json.dumps(out, default=_jsonable) + "\n")
        sys.stdout.flush()


def _jsonable(o):
    if isinstance(o, (datetime.datetime, datetime.date)):
        return o.isoformat()
    if isinstance(o, bytes):
        return o.decode("utf-8", "replace")
    return str(o)


if __name__ == "__main__":
    main()
