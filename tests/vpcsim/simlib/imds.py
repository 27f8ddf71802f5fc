"""IMDSv2 front end.  One listener at 169.254.169.254:80 in the router
namespace serves every node; a request's source address (any private
address assigned to an attached ENI of an instance) says which node asks.
Tokens are bound to the node that asked for them.

With --ipv6 dual a second listener answers at [fd00:ec2::254]:80, as EC2's
IMDS does on Nitro instances: a node is then told by its IPv6 source
address (an IPv6 address of one of its ENIs, or one inside a /80 one
holds), which is how a node in an IPv6-only subnet, with no IPv4 address
at all, is known.  A Xen instance gets 403 there, as an unknown source.

An ENI's addresses and prefixes (local-ipv4s, ipv4-prefix, ipv6s,
ipv6-prefix) lag behind the API by imds_lag_ms (--imds-lag-ms, POST
/imds; 0 by default), as EC2's IMDS does."""
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
            inst = sim.instance_by_addr(self.client_address[0])
            if inst is not None and self.server.extra.get("ipv6") and \
                    not sim.prefix_capable(inst.type):
                return None       # IMDS over IPv6 is a Nitro feature
            return inst

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
            view = sim.imds_view(e)
            macs[e.mac] = {
                "device-number": str(e.attachment["device_index"]),
                "interface-id": e.id,
                # An IPv6-only ENI is named after its instance.
                "local-hostname": "ip-%s.%s.compute.internal" % (
                    e.addresses[0].replace(".", "-"), sim.region)
                if e.addresses else "%s.%s.compute.internal" % (inst.id, sim.region),
                "local-ipv4s": view["ipv4"] or None,
                "mac": e.mac,
                "owner-id": OWNER_ID,
                "security-group-ids": list(e.groups),
                "security-groups": [sim.groups.get(g, g) for g in e.groups],
                "subnet-id": s.id,
                "subnet-ipv4-cidr-block": str(s.net) if s.net else None,
                "vpc-id": sim.vpc_id,
                "vpc-ipv4-cidr-block": sim.vpc_cidr,
                "vpc-ipv4-cidr-blocks": [sim.vpc_cidr],
                # Each listed only while there is one: without, a GET of
                # it is 404, as on EC2.
                "ipv4-prefix": view["ipv4_prefixes"] or None,
            }
            if sim.ipv6:
                macs[e.mac].update({
                    "ipv6s": view["ipv6"] or None,
                    "ipv6-prefix": view["ipv6_prefixes"] or None,
                    "subnet-ipv6-cidr-blocks": [str(s.v6.net)]
                    if s.v6 is not None and s.v6.usable() else None,
                    "vpc-ipv6-cidr-blocks": [sim.vpc_cidr6]})
            macs[e.mac] = dict(sorted((k, v) for k, v in macs[e.mac].items()
                                      if v is not None))
        akid, cred = sim.issue_cred(inst)
        cred_doc = json.dumps({
            "Code": "Success", "LastUpdated": iso8601_s(cred["issued"]),
            "Type": "AWS-HMAC", "AccessKeyId": akid,
            "SecretAccessKey": cred["secret"], "Token": cred["token"],
            "Expiration": iso8601_s(cred["expires"])}, indent=2)
        ip = primary.addresses[0] if primary and primary.addresses else ""
        ident = json.dumps({
            "accountId": OWNER_ID, "architecture": "x86_64",
            "availabilityZone": sim.az, "imageId": "ami-0e1d5171000000000",
            "instanceId": inst.id, "instanceType": inst.type,
            "pendingTime": iso8601_s(inst.launch), "privateIp": ip or None,
            "region": sim.region, "version": "2017-09-30"}, indent=2)
        host = "ip-%s.%s.compute.internal" % (ip.replace(".", "-"), sim.region) \
            if ip else "%s.%s.compute.internal" % (inst.id, sim.region)
        tree = {
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
        md = tree["meta-data"]
        if not ip:
            del md["local-ipv4"]          # an IPv6-only instance has none
        if sim.ipv6 and primary and primary.ipv6_primary:
            md["ipv6"] = primary.ipv6_primary
            tree["meta-data"] = dict(sorted(md.items()))
        return tree
