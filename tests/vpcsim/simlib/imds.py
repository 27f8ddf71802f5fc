"""IMDSv2 front end.  One listener at 169.254.169.254:80 in the router
namespace serves every node; a request's source address (any private
address assigned to an attached ENI of an instance) says which node asks.
Tokens are bound to the node that asked for them."""
import json
import secrets
import time

from . import httpbase
from .model import iso8601_s, OWNER_ID

TOKEN_HEADER = "X-aws-ec2-metadata-token"
TTL_HEADER = "X-aws-ec2-metadata-token-ttl-seconds"


class ImdsHandler(httpbase.Handler):
    def do_PUT(self):
        self._guard(self._put)

    def do_GET(self):
        self._guard(self._get)

    def do_POST(self):
        self._guard(lambda: self.send(405, "Method Not Allowed\n", "text/plain"))

    def _guard(self, fn):
        try:
            try:
                self.read_body()
            except httpbase.BodyError as e:
                return self.send(e.status, str(e) + "\n", "text/plain")
            if self.headers.get("X-Forwarded-For"):
                return self.send(403, "Forbidden\n", "text/plain")
            sim = self.server.sim
            with sim.lock:
                latency, fault = sim.fault_for("IMDS")
            if latency:
                time.sleep(latency)
            if fault is not None:
                # An IMDS fault is an HTTP status (default 500), not an EC2 code.
                status = fault.explicit_status or 500
                if fault.code.isdigit() and 400 <= int(fault.code) <= 599:
                    status = int(fault.code)
                return self.send(status, "%s\n" % fault.code, "text/plain")
            fn()
        except Exception as e:
            self.server.log("imds: internal error: %r" % e)
            self.send(500, "Internal Server Error\n", "text/plain")

    def _instance(self):
        sim = self.server.sim
        with sim.lock:
            return sim.instance_by_addr(self.client_address[0])

    def _put(self):
        if self.path.split("?")[0] != "/latest/api/token":
            return self.send(404, "Not Found\n", "text/plain")
        ttl = self.headers.get(TTL_HEADER)
        try:
            ttl = int(ttl)
        except (TypeError, ValueError):
            return self.send(400, "Bad Request\n", "text/plain")
        if not 1 <= ttl <= 21600:
            return self.send(400, "Bad Request\n", "text/plain")
        inst = self._instance()
        if inst is None:
            return self.send(403, "Forbidden: unknown source address\n", "text/plain")
        token = secrets.token_urlsafe(42)
        sim = self.server.sim
        with sim.lock:
            now = time.time()
            for t in [t for t, (_, exp) in sim.imds_tokens.items() if exp < now]:
                del sim.imds_tokens[t]
            sim.imds_tokens[token] = (inst.id, now + ttl)
        self.send(200, token, "text/plain", [(TTL_HEADER, str(ttl))])

    def _get(self):
        sim = self.server.sim
        inst = self._instance()
        token = self.headers.get(TOKEN_HEADER)
        with sim.lock:
            entry = sim.imds_tokens.get(token) if token else None
            valid = entry is not None and inst is not None and \
                entry[0] == inst.id and entry[1] > time.time()
        if not valid:
            return self.send(401, "Unauthorized\n", "text/plain")
        path = self.path.split("?")[0]
        with sim.lock:
            tree = self._tree(sim, inst)
        node = tree
        rel = path[len("/latest/"):] if path.startswith("/latest/") else None
        if path in ("/latest", "/latest/"):
            rel = ""
        if rel is None:
            return self.send(404, "Not Found\n", "text/plain")
        for part in [p for p in rel.split("/") if p]:
            if not isinstance(node, dict) or part not in node:
                return self.send(404, "Not Found\n", "text/plain")
            node = node[part]
        if isinstance(node, dict):
            body = "\n".join(k + "/" if isinstance(v, dict) else k
                             for k, v in node.items())
            ctype = "text/plain"
        elif isinstance(node, list):
            body = "\n".join(node)
            ctype = "text/plain"
        else:
            body = str(node)
            ctype = "application/json" if body.startswith("{") else "text/plain"
        self.send(200, body, ctype)

    def _tree(self, sim, inst):
        enis = [e for e in sim.instance_enis(inst.id)
                if e.attachment["status"] in ("attached", "detaching")]
        primary = enis[0] if enis else None
        macs = {}
        for e in enis:
            s = e.subnet
            macs[e.mac] = {
                "device-number": str(e.attachment["device_index"]),
                "interface-id": e.id,
                "local-hostname": "ip-%s.%s.compute.internal" % (
                    e.addresses[0].replace(".", "-"), sim.region),
                "local-ipv4s": list(e.addresses),
                "mac": e.mac,
                "owner-id": OWNER_ID,
                "security-group-ids": list(e.groups),
                "security-groups": [sim.groups.get(g, g) for g in e.groups],
                "subnet-id": s.id,
                "subnet-ipv4-cidr-block": str(s.net),
                "vpc-id": sim.vpc_id,
                "vpc-ipv4-cidr-block": sim.vpc_cidr,
                "vpc-ipv4-cidr-blocks": [sim.vpc_cidr],
            }
            if e.prefixes:
                # Listed only while the ENI holds one: without, a GET of
                # it is 404, as on EC2.
                macs[e.mac]["ipv4-prefix"] = list(e.prefixes)
                macs[e.mac] = dict(sorted(macs[e.mac].items()))
        akid, cred = sim.issue_cred(inst)
        cred_doc = json.dumps({
            "Code": "Success", "LastUpdated": iso8601_s(cred["issued"]),
            "Type": "AWS-HMAC", "AccessKeyId": akid,
            "SecretAccessKey": cred["secret"], "Token": cred["token"],
            "Expiration": iso8601_s(cred["expires"])}, indent=2)
        ip = primary.addresses[0] if primary else ""
        ident = json.dumps({
            "accountId": OWNER_ID, "architecture": "x86_64",
            "availabilityZone": sim.az, "imageId": "ami-0e1d5171000000000",
            "instanceId": inst.id, "instanceType": inst.type,
            "pendingTime": iso8601_s(inst.launch), "privateIp": ip,
            "region": sim.region, "version": "2017-09-30"}, indent=2)
        host = "ip-%s.%s.compute.internal" % (ip.replace(".", "-"), sim.region)
        return {
            "meta-data": {
                "ami-id": "ami-0e1d5171000000000",
                "hostname": host,
                "iam": {
                    "info": json.dumps({
                        "Code": "Success", "LastUpdated": iso8601_s(cred["issued"]),
                        "InstanceProfileArn": "arn:aws:iam::%s:instance-profile/%s"
                        % (OWNER_ID, sim.role),
                        "InstanceProfileId": "AIPAENIDSIM0000000001"}, indent=2),
                    "security-credentials": {sim.role: cred_doc},
                },
                "instance-id": inst.id,
                "instance-type": inst.type,
                "local-hostname": host,
                "local-ipv4": ip,
                "mac": primary.mac if primary else "",
                "network": {"interfaces": {"macs": macs}},
                "placement": {"availability-zone": sim.az,
                              "availability-zone-id": "use1-az1",
                              "region": sim.region},
                "services": {"domain": "amazonaws.com", "partition": "aws"},
            },
            "dynamic": {"instance-identity": {"document": ident}},
        }
