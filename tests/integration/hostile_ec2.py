#!/usr/bin/python3
"""A hostile EC2 endpoint for enid-cloudd: a proxy in front of the simulated
VPC's EC2 endpoint that passes requests on unchanged (their SigV4
signatures stay valid) and rewrites the answers as a rules file says, so
the rest of the flow stays real.  Run it inside the sim's VPC namespace:

    ip netns exec P-vpc hostile_ec2.py --listen 198.18.0.1:8080 \\
        --upstream 198.18.0.1:80 --dir DIR

DIR/hostile-rules.json ({"rules": [RULE, ...]}) is read again whenever it
changes; DIR/hostile.log gets one JSON line per answer changed.  A RULE
applies to answers to one action ("action": NAME or "*"), at most "count"
times (default: always), in the first matching rule's "mode":

  assign        AssignPrivateIpAddresses: "replace": [IP, ...] the
                addresses named; "add": [IP, ...] more of them
  assign-prefixes
                AssignPrivateIpAddresses of prefixes: "replace": [CIDR...]
                the prefixes named; "add": [CIDR, ...] more of them
  create        CreateNetworkInterface: "mac", "primary_ip", "add": [IP...],
                "add_prefixes": [CIDR, ...], "replace_prefixes": [CIDR...]
  describe      DescribeNetworkInterfaces, per ENI that "match"es
                ({"id": ID} | {"device_index": N} | {"secondary": true}):
                "mac", "add": [IP, ...], "add_prefixes" and
                "replace_prefixes": [CIDR, ...] (any text: a prefix need
                not be one), "rename": true (a new made-up id in every
                answer)
  subnets       DescribeSubnets, per subnet ("match": {"id": ID} or
                every one): "cidr" the CIDR block it is described with
  pages         Describe*: every page ends with a new nextToken; pages
                asked for with one of ours are answered here, as a copy of
                the first, and never end
  huge          the answer padded to "bytes" (an unknown element's text);
                "chunked": true sends it without a Content-Length
  slow          the answer dribbled, "chunk" bytes every "every_ms"
  deep          a body of "levels" nested elements under the real root
  doctype       a DOCTYPE whose entities expand a billion times
  xxe           a DOCTYPE with an external entity (file:///etc/passwd)
  charrefs      the first ENI id written as "n" character references

Only the standard library; nothing here reads the requests' credentials.
"""
import argparse
import http.client
import http.server
import json
import os
import random
import sys
import threading
import time
import urllib.parse
import xml.etree.ElementTree as ET

NS = "http://ec2.amazonaws.com/doc/2016-11-15/"
ET.register_namespace("", NS)
HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding",
       "te", "trailer", "upgrade"}


def q(tag):
    return "{%s}%s" % (NS, tag)


class Rules:
    def __init__(self, d):
        self.path = os.path.join(d, "hostile-rules.json")
        self.logf = open(os.path.join(d, "hostile.log"), "a", buffering=1)
        self.lock = threading.Lock()
        self.mtime = None
        self.rules = []
        self.tokens = {}            # our nextToken -> first page's body

    def note(self, **kw):
        kw["t"] = round(time.time(), 3)
        with self.lock:
            self.logf.write(json.dumps(kw) + "\n")

    def pick(self, action):
        with self.lock:
            try:
                mt = os.stat(self.path).st_mtime_ns
            except FileNotFoundError:
                mt = None
            if mt != self.mtime:
                self.mtime = mt
                self.rules = []
                if mt is not None:
                    with open(self.path) as f:
                        self.rules = json.load(f).get("rules", [])
            for r in self.rules:
                if r.get("action") not in (action, "*"):
                    continue
                if r.get("count", 1) <= 0:
                    continue
                if "count" in r:
                    r["count"] -= 1
                return dict(r)
        return None


def fresh_id():
    return "eni-%017x" % random.getrandbits(68)


def answer_tree(body):
    try:
        return ET.fromstring(body)
    except ET.ParseError:
        return None


def serialize(root):
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + \
        ET.tostring(root, encoding="utf-8")


def set_text(parent, tag, text):
    el = parent.find(q(tag))
    if el is None:
        el = ET.SubElement(parent, q(tag))
    el.text = text


def add_items(addr_set, ips, with_primary):
    for ip in ips:
        it = ET.SubElement(addr_set, q("item"))
        ET.SubElement(it, q("privateIpAddress")).text = ip
        if with_primary:
            ET.SubElement(it, q("primary")).text = "false"


def add_prefix_items(prefix_set, prefixes):
    for p in prefixes:
        it = ET.SubElement(prefix_set, q("item"))
        ET.SubElement(it, q("ipv4Prefix")).text = p


def eni_matches(eni, match):
    if not match:
        return True
    if "id" in match and eni.findtext(q("networkInterfaceId")) != \
            match["id"]:
        return False
    dev = eni.findtext(q("attachment") + "/" + q("deviceIndex"))
    if "device_index" in match and dev != str(match["device_index"]):
        return False
    if match.get("secondary") and dev in (None, "0"):
        return False
    return True


def rewrite(rule, action, body, rules):
    """The answer to send instead of body, and what was changed (or None
    when the rule does not apply to this answer)."""
    mode = rule["mode"]
    if mode in ("huge", "slow", "deep", "doctype", "xxe"):
        return raw_mode(rule, action, body)
    root = answer_tree(body)
    if root is None or not root.tag.endswith(action + "Response"):
        return None                 # an error answer: passed on as it is
    what = {}
    if mode == "assign":
        s = root.find(q("assignedPrivateIpAddressesSet"))
        if s is None:
            return None
        what["was"] = [x.text for x in s.iter(q("privateIpAddress"))]
        if "replace" in rule:
            for it in list(s):
                s.remove(it)
            add_items(s, rule["replace"], False)
        add_items(s, rule.get("add", []), False)
        what["now"] = [x.text for x in s.iter(q("privateIpAddress"))]
    elif mode == "assign-prefixes":
        s = root.find(q("assignedIpv4PrefixSet"))
        if s is None:
            return None
        what["was"] = [x.text for x in s.iter(q("ipv4Prefix"))]
        if "replace" in rule:
            for it in list(s):
                s.remove(it)
            add_prefix_items(s, rule["replace"])
        add_prefix_items(s, rule.get("add", []))
        what["now"] = [x.text for x in s.iter(q("ipv4Prefix"))]
    elif mode == "create":
        eni = root.find(q("networkInterface"))
        if eni is None:
            return None
        what["eni"] = eni.findtext(q("networkInterfaceId"))
        change_eni(eni, rule, what)
    elif mode == "describe":
        s = root.find(q("networkInterfaceSet"))
        if s is None:
            return None
        what["enis"] = []
        for eni in s.findall(q("item")):
            if eni_matches(eni, rule.get("match")):
                w = {"eni": eni.findtext(q("networkInterfaceId"))}
                change_eni(eni, rule, w)
                what["enis"].append(w)
        if not what["enis"]:
            return None
    elif mode == "subnets":
        s = root.find(q("subnetSet"))
        if s is None:
            return None
        what["subnets"] = []
        for sn in s.findall(q("item")):
            sid = sn.findtext(q("subnetId"))
            if rule.get("match", {}).get("id") not in (None, sid):
                continue
            what["subnets"].append({"subnet": sid, "cidr_was": sn.findtext(
                q("cidrBlock")), "cidr": rule["cidr"]})
            set_text(sn, "cidrBlock", rule["cidr"])
        if not what["subnets"]:
            return None
    elif mode == "pages":
        tok = "hostile-%016x" % random.getrandbits(64)
        set_text(root, "nextToken", tok)
        out = serialize(root)
        with rules.lock:
            rules.tokens[tok] = out
        what["token"] = tok
        return out, what
    elif mode == "charrefs":
        el = root.find(".//" + q("networkInterfaceId"))
        if el is None:
            return None
        marker = "@@CHARREFS@@"
        what["eni"] = el.text
        el.text = marker
        out = serialize(root).replace(
            marker.encode(), b"&#101;" * int(rule.get("n", 5000)))
        return out, what
    else:
        raise ValueError("unknown mode %r" % mode)
    return serialize(root), what


def change_eni(eni, rule, what):
    if "mac" in rule:
        what["mac_was"] = eni.findtext(q("macAddress"))
        set_text(eni, "macAddress", rule["mac"])
    if rule.get("rename"):
        new = fresh_id()
        what["id_now"] = new
        set_text(eni, "networkInterfaceId", new)
    if "primary_ip" in rule:
        set_text(eni, "privateIpAddress", rule["primary_ip"])
        s = eni.find(q("privateIpAddressesSet"))
        for it in (s.findall(q("item")) if s is not None else []):
            if it.findtext(q("primary")) == "true":
                set_text(it, "privateIpAddress", rule["primary_ip"])
    if rule.get("add"):
        s = eni.find(q("privateIpAddressesSet"))
        if s is None:
            s = ET.SubElement(eni, q("privateIpAddressesSet"))
        add_items(s, rule["add"], True)
        what["added"] = rule["add"]
    if "replace_prefixes" in rule or rule.get("add_prefixes"):
        s = eni.find(q("ipv4PrefixSet"))
        if s is None:
            s = ET.SubElement(eni, q("ipv4PrefixSet"))
        what["prefixes_were"] = [x.text for x in s.iter(q("ipv4Prefix"))]
        if "replace_prefixes" in rule:
            for it in list(s):
                s.remove(it)
            add_prefix_items(s, rule["replace_prefixes"])
        add_prefix_items(s, rule.get("add_prefixes", []))
        what["prefixes"] = [x.text for x in s.iter(q("ipv4Prefix"))]


def raw_mode(rule, action, body):
    mode = rule["mode"]
    root_tag = action + "Response"
    if mode == "huge":
        n = int(rule.get("bytes", 4 << 20))
        head = body.rsplit(b"</", 1)[0]
        tail = b"</" + body.rsplit(b"</", 1)[1]
        pad = b"<padding>" + b"x" * max(0, n - len(body)) + b"</padding>"
        return head + pad + tail, {"bytes": len(head + pad + tail)}
    if mode == "slow":
        return body, {"bytes": len(body)}
    if mode == "deep":
        n = int(rule.get("levels", 100000))
        out = ('<?xml version="1.0" encoding="UTF-8"?>\n<%s xmlns="%s">'
               % (root_tag, NS)).encode() + b"<a>" * n + b"</a>" * n + \
            ("</%s>" % root_tag).encode()
        return out, {"levels": n}
    if mode == "doctype":
        ents = ['<!ENTITY e0 "lol">'] + [
            '<!ENTITY e%d "%s">' % (i, ("&e%d;" % (i - 1)) * 10)
            for i in range(1, 10)]
        out = ('<?xml version="1.0"?>\n<!DOCTYPE %s [%s]>\n'
               '<%s xmlns="%s"><requestId>&e9;</requestId></%s>'
               % (root_tag, "".join(ents), root_tag, NS, root_tag))
        return out.encode(), {"entities": 10}
    if mode == "xxe":
        out = ('<?xml version="1.0"?>\n<!DOCTYPE %s [<!ENTITY x SYSTEM '
               '"file:///etc/passwd">]>\n<%s xmlns="%s"><requestId>&x;'
               '</requestId></%s>' % (root_tag, root_tag, NS, root_tag))
        return out.encode(), {"entity": "file:///etc/passwd"}
    raise ValueError(mode)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        self.serve()

    def do_POST(self):
        self.serve()

    def serve(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        form = urllib.parse.parse_qs(body.decode("utf-8", "replace"))
        action = (form.get("Action") or ["-"])[0]
        rules = self.server.rules
        token = (form.get("NextToken") or [None])[0]
        with rules.lock:
            cached = rules.tokens.get(token) if token else None
        if cached is not None:
            # A page of ours: answered here, with yet another token.
            root = answer_tree(cached)
            tok = "hostile-%016x" % random.getrandbits(64)
            set_text(root, "nextToken", tok)
            out = serialize(root)
            with rules.lock:
                rules.tokens[tok] = out
            rules.note(action=action, rule="pages", mode="pages",
                       event="page", token=tok)
            return self.reply(200, out)
        status, headers, answer = self.forward(body)
        rule = rules.pick(action)
        if rule is None or status != 200:
            return self.reply(status, answer, headers)
        try:
            got = rewrite(rule, action, answer, rules)
        except Exception as e:          # a bad rule: say so, pass it on
            rules.note(action=action, rule=rule.get("id"),
                       event="rule-error", error=repr(e))
            return self.reply(status, answer, headers)
        if got is None:
            return self.reply(status, answer, headers)
        out, what = got
        rules.note(action=action, rule=rule.get("id"), mode=rule["mode"],
                   event="changed", **what)
        if rule["mode"] == "slow":
            return self.dribble(out, int(rule.get("chunk", 1)),
                                float(rule.get("every_ms", 200)) / 1000)
        return self.reply(200, out, chunked=rule.get("chunked", False))

    def forward(self, body):
        up = self.server.upstream
        c = http.client.HTTPConnection(up[0], up[1], timeout=30)
        c.putrequest(self.command, self.path, skip_host=True,
                     skip_accept_encoding=True)
        for k, v in self.headers.items():
            if k.lower() not in HOP:
                c.putheader(k, v)
        c.endheaders(body)
        r = c.getresponse()
        data = r.read()
        headers = [(k, v) for k, v in r.getheaders()
                   if k.lower() not in HOP and k.lower() != "content-length"]
        c.close()
        return r.status, headers, data

    def reply(self, status, body, headers=(), chunked=False):
        self.send_response(status)
        for k, v in headers:
            if k.lower() not in ("server", "date"):
                self.send_header(k, v)
        if not any(k.lower() == "content-type" for k, _ in headers):
            self.send_header("Content-Type", "text/xml;charset=UTF-8")
        try:
            if chunked:
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                step = 64 * 1024
                for i in range(0, len(body), step):
                    part = body[i:i + step]
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                self.wfile.write(b"0\r\n\r\n")
            else:
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def dribble(self, body, chunk, every):
        """A slowloris answer: the headers at once, the body a few bytes
        at a time; given up when the client hangs up or after 120 s."""
        self.send_response(200)
        self.send_header("Content-Type", "text/xml;charset=UTF-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        end = time.monotonic() + 120
        try:
            for i in range(0, len(body), chunk):
                if time.monotonic() > end:
                    break
                self.wfile.write(body[i:i + chunk])
                self.wfile.flush()
                time.sleep(every)
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        self.rules.note(event="server-error", error=repr(sys.exc_info()[1]))


def hostport(s):
    h, _, p = s.rpartition(":")
    return h, int(p)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--listen", required=True, type=hostport)
    ap.add_argument("--upstream", required=True, type=hostport)
    ap.add_argument("--dir", required=True)
    a = ap.parse_args()
    srv = Server(a.listen, Handler)
    srv.rules = Rules(a.dir)
    srv.upstream = a.upstream
    with open(os.path.join(a.dir, "hostile.ready"), "w") as f:
        f.write(str(os.getpid()))
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
