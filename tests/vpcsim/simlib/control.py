"""Control API (JSON over HTTP on 127.0.0.1 in the root namespace):
state, fault injection, link delays, subnet capacity, credentials, rates,
and the world beyond the internet gateway."""
import ipaddress
import json
import time
import urllib.parse

from . import httpbase, outside, peered
from . import ipv6 as v6

VALID_CODE = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._")


class BadRequest(Exception):
    pass


def _num(v, what, lo=0, hi=None):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise BadRequest("%s must be a number" % what)
    if v < lo or (hi is not None and v > hi):
        raise BadRequest("%s out of range [%s, %s]" % (what, lo, hi))
    return v


def _int(v, what, lo=0, hi=None):
    if isinstance(v, bool) or not isinstance(v, int):
        raise BadRequest("%s must be an integer" % what)
    return _num(v, what, lo, hi)


def parse_fault(r):
    if not isinstance(r, dict):
        raise BadRequest("a fault rule must be an object")
    allowed = {"action", "code", "count", "probability", "latency_ms", "message",
               "status", "ignore_filter", "with_filter", "with_param", "after"}
    unknown = set(r) - allowed
    if unknown:
        raise BadRequest("unknown key(s) in fault rule: %s" % ", ".join(sorted(unknown)))
    action = r.get("action")
    if not isinstance(action, str) or not action or len(action) > 64:
        raise BadRequest("fault rule needs \"action\" (an EC2 action name or \"*\")")
    rule = {"action": action}
    if "ignore_filter" in r:
        # A cloud that lists more than it was asked for: the filter named
        # is left out of every call of the action while the rule stands.
        name = r["ignore_filter"]
        if not isinstance(name, str) or not name or len(name) > 128:
            raise BadRequest("ignore_filter must be a filter name")
        if set(r) - {"action", "ignore_filter"}:
            raise BadRequest("an ignore_filter rule takes only \"action\"")
        rule["ignore_filter"] = name
        return rule
    if "latency_ms" in r:
        lat = r["latency_ms"]
        if isinstance(lat, (int, float)) and not isinstance(lat, bool):
            lat = [lat, lat]
        if not isinstance(lat, list) or len(lat) != 2:
            raise BadRequest("latency_ms must be a number or [LO, HI]")
        lo = _num(lat[0], "latency_ms[0]", 0, 600000)
        hi = _num(lat[1], "latency_ms[1]", lo, 600000)
        rule["latency_ms"] = [lo, hi]
        if "code" in r or "probability" in r:
            raise BadRequest("a latency rule takes no code or probability")
    else:
        code = r.get("code")
        if not isinstance(code, str) or not code or len(code) > 64 or \
                set(code) - VALID_CODE:
            raise BadRequest("fault rule needs \"code\" (an EC2 error code)")
        rule["code"] = code
        if "probability" in r:
            rule["probability"] = _num(r["probability"], "probability", 0, 1)
        elif "count" not in r:
            raise BadRequest("an error rule needs \"count\" or \"probability\"")
        if "message" in r:
            if not isinstance(r["message"], str) or len(r["message"]) > 1000:
                raise BadRequest("message must be a string")
            rule["message"] = r["message"]
        if "status" in r:
            rule["status"] = _int(r["status"], "status", 400, 599)
    if "count" in r:
        rule["count"] = _int(r["count"], "count", 1, 10 ** 9)
    if "with_filter" in r:
        # Only calls that carry this filter: one question of several
        # concurrent ones, told apart by what it asks.
        name = r["with_filter"]
        if not isinstance(name, str) or not name or len(name) > 128:
            raise BadRequest("with_filter must be a filter name")
        rule["with_filter"] = name
    if "with_param" in r:
        # Only calls that carry this parameter (a name's start: the
        # prefix calls of an action that also takes single addresses).
        name = r["with_param"]
        if not isinstance(name, str) or not name or len(name) > 128:
            raise BadRequest("with_param must be a parameter name")
        rule["with_param"] = name
    if "after" in r:
        # The action is done, and then the answer is late or an error:
        # a call whose outcome the client cannot know.
        if not isinstance(r["after"], bool):
            raise BadRequest("after must be true or false")
        if r["after"] and action == "IMDS":
            raise BadRequest("an IMDS request has no action to do first")
        if r["after"]:
            rule["after"] = True
    return rule


class ControlHandler(httpbase.Handler):
    def do_GET(self):
        self._guard()

    def do_POST(self):
        self._guard()

    def do_DELETE(self):
        self._guard()

    def do_PUT(self):
        self._guard()

    def _guard(self):
        try:
            try:
                body = self.read_body()
            except httpbase.BodyError as e:
                return self._json(e.status, {"error": str(e)})
            data = None
            if body.strip():
                try:
                    data = json.loads(body)
                except (ValueError, UnicodeDecodeError) as e:
                    raise BadRequest("body is not valid JSON: %s" % e)
            status, out = self._route(data)
            self._json(status, out)
        except BadRequest as e:
            self._json(400, {"error": str(e)})
        except Exception as e:
            self.server.log("control: internal error: %r" % e)
            self._json(500, {"error": "internal error: %r" % e})

    def _json(self, status, obj):
        self.send(status, json.dumps(obj, indent=1, sort_keys=True) + "\n",
                  "application/json")

    def _route(self, data):
        sim = self.server.sim
        path = self.path.split("?")[0].rstrip("/") or "/"
        m = self.command
        if path == "/state" and m == "GET":
            with sim.lock:
                return 200, sim.state()
        if path in ("/", "/health") and m == "GET":
            return 200, {"ok": True}
        if path == "/endpoints" and m == "GET":
            return 200, self.server.extra.get("endpoints", {})
        if path == "/faults":
            if m == "GET":
                with sim.lock:
                    return 200, {"faults": sim.faults}
            if m == "DELETE":
                with sim.lock:
                    sim.faults = []
                return 200, {"faults": []}
            if m == "POST":
                rules = data if isinstance(data, list) else [data]
                if isinstance(data, dict) and "rules" in data:
                    rules = data["rules"]
                if not isinstance(rules, list) or len(rules) > 1000:
                    raise BadRequest("expected a list of fault rules")
                parsed = [parse_fault(r) for r in rules]
                with sim.lock:
                    sim.faults.extend(parsed)
                    return 200, {"faults": sim.faults}
        if path == "/outside" and m == "GET":
            return self._outside()
        if path == "/outside/connect" and m == "POST":
            return self._connect(data)
        if path == "/prefixes/log" and m == "GET":
            q = urllib.parse.parse_qs(self.path.partition("?")[2])
            try:
                since = int(q.get("since", ["0"])[0])
            except ValueError:
                raise BadRequest("since must be a sequence number")
            with sim.lock:
                return 200, {"events": sim.prefix_events(since),
                             "last": sim.prefix_seq}
        if path == "/links" and m == "POST":
            return self._links(sim, data)
        if path.startswith("/subnets/") and m == "POST":
            return self._subnet(sim, path[len("/subnets/"):], data)
        if path == "/imds" and m == "POST":
            if not isinstance(data, dict) or set(data) != {"lag_ms"}:
                raise BadRequest("expected {\"lag_ms\": MS}")
            lag = _num(data["lag_ms"], "lag_ms", 0, 3.6e6)
            with sim.lock:
                sim.imds_lag_ms = float(lag)
            return 200, {"lag_ms": lag}
        if path == "/allocation" and m == "POST":
            if not isinstance(data, dict) or set(data) != {"mode"} or \
                    data["mode"] not in ("lowest", "scattered"):
                raise BadRequest("expected {\"mode\": \"lowest\"|\"scattered\"}")
            with sim.lock:
                sim.set_allocation(data["mode"])
            return 200, {"mode": data["mode"]}
        if path == "/credentials" and m == "POST":
            return self._creds(sim, data)
        if path == "/rate" and m == "POST":
            if not isinstance(data, dict) or set(data) != {"scale"}:
                raise BadRequest("expected {\"scale\": X}")
            scale = _num(data["scale"], "scale", 0.0001, 1e6)
            with sim.lock:
                sim.set_rate_scale(scale)
            return 200, {"scale": scale}
        if path == "/delays" and m == "POST":
            if not isinstance(data, dict) or not data or \
                    set(data) - {"attach_ms", "detach_ms"}:
                raise BadRequest("expected {\"attach_ms\": MS, \"detach_ms\": MS}")
            with sim.lock:
                if "attach_ms" in data:
                    sim.attach_delay_ms = _num(data["attach_ms"], "attach_ms", 0, 3.6e6)
                if "detach_ms" in data:
                    sim.detach_delay_ms = _num(data["detach_ms"], "detach_ms", 0, 3.6e6)
                return 200, {"attach_ms": sim.attach_delay_ms,
                             "detach_ms": sim.detach_delay_ms}
        return 404, {"error": "no such endpoint: %s %s" % (m, path[:200])}

    def _outside(self):
        o = self.server.extra["outside"]
        out = {"host": outside.OUTSIDE_HOST, "port": outside.SERVICE_PORT,
               "netns": o["out_ns"], "public_cidr": outside.PUBLIC_CIDR,
               "mappings": [{"node": i, "private": a, "public": b}
                            for i, (a, b) in enumerate(o["nodes"])],
               "seen": o["whoami"].snapshot("outside"),
               "vpc_host_seen": o["whoami"].snapshot("vpc_host"),
               "peered_seen": o["whoami"].snapshot("peered")}
        out.update(outside.read_counters(o["vpc_ns"]))
        return 200, out

    def _connect(self, data):
        """{"node": I, "port": P[, "timeout_ms": T][, "send": TEXT]
        [, "via": "internet"|"vpc"|"peered"]}: a TCP client outside the
        node.  Through the internet gateway from the outside host to the
        node's public address, or from the VPC host or the peered host to
        its primary address.  With --ipv6 dual, {"to": IPV6, ...} instead
        of "node" connects to any address of the VPC's /56 (a pod's),
        untranslated, from the outside host's or the VPC host's IPv6
        address."""
        keys = {"node", "port", "timeout_ms", "send", "via", "to"}
        if not isinstance(data, dict):
            raise BadRequest("expected {\"node\": I, \"port\": P}")
        if set(data) - keys:
            raise BadRequest("unknown key(s): %s" % ", ".join(sorted(set(data) - keys)))
        if "to" in data:
            return self._connect6(data)
        for k in ("node", "port"):
            if k not in data:
                raise BadRequest("missing \"%s\"" % k)
        o = self.server.extra["outside"]
        i = _int(data["node"], "node", 0, len(o["nodes"]) - 1)
        port = _int(data["port"], "port", 1, 65535)
        timeout = _num(data.get("timeout_ms", 3000), "timeout_ms", 1, 60000)
        send = data.get("send")
        if send is not None and (not isinstance(send, str) or len(send) > 65536):
            raise BadRequest("send must be a string of at most 65536 characters")
        via = data.get("via", "internet")
        if via not in ("internet", "vpc", "peered"):
            raise BadRequest("via must be \"internet\", \"vpc\" or \"peered\"")
        private, public = o["nodes"][i]
        if private is None:
            raise BadRequest("node %d has no IPv4 address (IPv6-only subnet)" % i)
        if via == "internet":
            r = outside.connect(o["out_ns"], outside.OUTSIDE_HOST, public, port,
                                timeout / 1000.0, send)
        elif via == "vpc":
            r = outside.connect(o["vpc_ns"], self.server.extra["endpoints"]["vpc_host"],
                                private, port, timeout / 1000.0, send)
        else:
            r = outside.connect(o["peer_ns"], peered.PEERED_HOST,
                                private, port, timeout / 1000.0, send)
        r["via"] = via
        return 200, r

    def _connect6(self, data):
        sim = self.server.sim
        if "node" in data:
            raise BadRequest("give \"node\" or \"to\", not both")
        if not sim.ipv6:
            raise BadRequest("\"to\" needs --ipv6 dual")
        to = v6.canon(data["to"]) if isinstance(data["to"], str) else None
        if to is None or ipaddress.IPv6Address(to) not in \
                ipaddress.IPv6Network(sim.vpc_cidr6):
            raise BadRequest("\"to\" must be an IPv6 address of %s" % sim.vpc_cidr6)
        if "port" not in data:
            raise BadRequest("missing \"port\"")
        port = _int(data["port"], "port", 1, 65535)
        timeout = _num(data.get("timeout_ms", 3000), "timeout_ms", 1, 60000)
        send = data.get("send")
        if send is not None and (not isinstance(send, str) or len(send) > 65536):
            raise BadRequest("send must be a string of at most 65536 characters")
        via = data.get("via", "internet")
        if via not in ("internet", "vpc"):
            raise BadRequest("with \"to\", via must be \"internet\" or \"vpc\"")
        o = self.server.extra["outside"]
        if via == "internet":
            r = outside.connect(o["out_ns"], v6.OUTSIDE_HOST6, to, port,
                                timeout / 1000.0, send)
        else:
            r = outside.connect(o["vpc_ns"], v6.VPC_HOST6, to, port,
                                timeout / 1000.0, send)
        r["via"] = via
        return 200, r

    def _subnet(self, sim, sid, data):
        """{"free": N} and/or {"fragment": true, "keep_prefixes": K} or
        {"fragment": false}; with --ipv6 dual also {"ipv6_state": STATE},
        {"ipv6_cidr": false|true} and {"ipv6_auto_assign": BOOL}."""
        if isinstance(data, dict) and set(data) & {"ipv6_state", "ipv6_cidr",
                                                    "ipv6_auto_assign"}:
            return self._subnet6(sim, sid, data)
        keys = {"free", "fragment", "keep_prefixes"}
        if not isinstance(data, dict) or not data or set(data) - keys:
            raise BadRequest("expected {\"free\": N} or {\"fragment\": true|false}"
                             " (with \"keep_prefixes\": K)")
        if "fragment" in data and not isinstance(data["fragment"], bool):
            raise BadRequest("fragment must be true or false")
        if "keep_prefixes" in data and data.get("fragment") is not True:
            raise BadRequest("keep_prefixes goes with \"fragment\": true")
        free = _int(data["free"], "free", 0, 1 << 20) if "free" in data else None
        keep = _int(data.get("keep_prefixes", 0), "keep_prefixes", 0, 1 << 20)
        with sim.lock:
            s = sim.subnets.get(sid)
            if s is None:
                return 404, {"error": "no subnet %s" % sid}
            if data.get("fragment") is False:
                s.unfragment()
            elif data.get("fragment"):
                s.fragment(keep)
            if free is not None:
                s.cap = min(s.total, len(s.in_use) + free)
            return 200, {"id": s.id, "free": s.free(),
                         "free_prefixes": len(s.free_blocks()),
                         "fragmented": len(s.blockers)}

    def _subnet6(self, sim, sid, data):
        """A subnet's IPv6 association: its state (only "associated" can
        be used), gone (false: the subnet is IPv6-less; refused while an
        ENI holds an IPv6 address or prefix of it) or back (true: its /64
        again, associated), and whether an ENI created in it gets an IPv6
        address unasked."""
        keys = {"ipv6_state", "ipv6_cidr", "ipv6_auto_assign"}
        if set(data) - keys:
            raise BadRequest("IPv6 keys go alone: %s" % ", ".join(sorted(keys)))
        if "ipv6_state" in data and data["ipv6_state"] not in v6.STATES:
            raise BadRequest("ipv6_state must be one of %s" % ", ".join(v6.STATES))
        for k in ("ipv6_cidr", "ipv6_auto_assign"):
            if k in data and not isinstance(data[k], bool):
                raise BadRequest("%s must be true or false" % k)
        with sim.lock:
            s = sim.subnets.get(sid)
            if s is None:
                return 404, {"error": "no subnet %s" % sid}
            if not sim.ipv6:
                raise BadRequest("the sim runs without --ipv6 dual")
            if data.get("ipv6_cidr") is False and s.v6 is not None:
                if s.v6.in_use() or s.v6.blocks:
                    return 409, {"error": "subnet %s: %d IPv6 addresses and %d "
                                 "prefixes are in use" % (sid, s.v6.in_use(),
                                                          len(s.v6.blocks))}
                s.removed_v6 = s.v6
                s.v6 = None
            elif data.get("ipv6_cidr") is True and s.v6 is None:
                s.v6 = getattr(s, "removed_v6", None)
                s.v6.state = "associated"
            if "ipv6_state" in data:
                if s.v6 is None:
                    raise BadRequest("subnet %s has no IPv6 CIDR" % sid)
                s.v6.state = data["ipv6_state"]
            if "ipv6_auto_assign" in data:
                s.auto_ipv6 = data["ipv6_auto_assign"]
            return 200, {"id": s.id,
                         "ipv6_cidr": str(s.v6.net) if s.v6 else None,
                         "ipv6_state": s.v6.state if s.v6 else None,
                         "ipv6_auto_assign": s.auto_ipv6}

    def _links(self, sim, data):
        if not isinstance(data, dict):
            raise BadRequest("expected an object")
        if set(data) - {"delay_ms", "never", "next", "eni"}:
            raise BadRequest("unknown key(s): %s" % ", ".join(
                sorted(set(data) - {"delay_ms", "never", "next", "eni"})))
        if ("delay_ms" in data) == bool(data.get("never")):
            raise BadRequest("give exactly one of \"delay_ms\" or \"never\": true")
        delay = "never" if data.get("never") else \
            _num(data["delay_ms"], "delay_ms", 0, 3.6e6)
        if "next" in data and "eni" in data:
            raise BadRequest("give at most one of \"next\" and \"eni\"")
        with sim.lock:
            if "eni" in data:
                eni = sim.enis.get(data["eni"]) if isinstance(data["eni"], str) else None
                if eni is None:
                    return 404, {"error": "no ENI %r" % (data["eni"],)}
                eni.link_override = delay
                # A link still pending appears after the new delay, from now.
                if eni.attachment and not eni.link_ready:
                    eni.attachment["link_delay"] = delay
                    sim._schedule_link(eni, delay)
                return 200, {"eni": eni.id, "delay_ms": delay}
            if "next" in data:
                n = _int(data["next"], "next", 1, 10000)
                sim.link_next.extend([delay] * n)
                return 200, {"next": list(sim.link_next)}
            sim.link_delay = delay
            return 200, {"delay_ms": delay}

    def _creds(self, sim, data):
        if not isinstance(data, dict) or not data or \
                set(data) - {"expire_s", "revoke", "static"}:
            raise BadRequest("expected {\"expire_s\": S} or {\"revoke\": true}")
        with sim.lock:
            now = time.time()
            if "expire_s" in data:
                s = _num(data["expire_s"], "expire_s", 0, 10 ** 7)
                sim.cred_lifetime = float(s) if s > 0 else 1.0
                # Credentials already handed out expire no later than now + S.
                for c in sim.creds.values():
                    if c["node"] and c["expires"] > now + s:
                        c["expires"] = now + s
                        c["lifetime"] = sim.cred_lifetime
            if data.get("revoke"):
                for c in sim.creds.values():
                    if c["node"] or data.get("static"):
                        c["revoked"] = True
            return 200, {"expire_s": sim.cred_lifetime,
                         "revoked": sum(1 for c in sim.creds.values() if c["revoked"])}
