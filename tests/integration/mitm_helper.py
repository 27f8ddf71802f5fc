#!/usr/bin/python3
"""A compromised enid-cloudd or enid-netd, for the integration tests.

Installed in a helper directory under a helper's name, it is what enid
execs: it starts the real helper behind a socketpair of its own and relays
every message both ways, so the daemons run as usual, except for the
answers a test's rules tell it to change, hold back, drop or add to.  It
plays the peer that lies to the broker within the protocol (well-formed
messages carrying wrong facts), which is what the broker must survive.

Its directory holds:
  mitm.json          {"real": {NAME: PATH}, "msg_h": PATH}
  rules-NAME.json    {"rules": [RULE, ...]}, re-read when it changes
  mitm-NAME.log      one JSON line per rule that fired

A rule binds to the next requests that match it ("request": a type name,
"match": {field: value} on the request's payload, a MAC as "aa:bb:..",
"count": how many requests, default 1) and then applies to every answer to each of them:
  "answer": TYPE        only answers of this type (default: all)
  "set": {FIELD: V}     change fields of the answer (addresses as text of
                        either family, 0 for 0.0.0.0, "aa:bb:.." MACs,
                        lists of addresses for "addrs", "prefixes",
                        "addrs6" and "prefixes6", a prefix by its first
                        address; a rule's "src" and
                        "dst" with "src_len" and "dst_len")
  "drop": true          the answer is not passed on
  "replace": TYPE       the answer becomes one of TYPE, all zero (every
                        address 0.0.0.0) but for what "set" says
  "delay_ms": N         the request's answers are held N ms (in order)
  "where": {FIELD: V}   only answers (stream entries) whose fields match
  "extra": [SET, ...]   before a stream's end marker, one more entry per
                        SET: a copy of the stream's first entry (or of the
                        first matching SET's "from"), changed; "copies": N
                        makes N, numbered by a "%d" (or "%05d"...) in strings
  "end_outcome": N      a stream's end marker's outcome becomes N
Nothing here is a fake of the protocol: the payloads are the real ones,
with the sizes checked against the header before a field is touched.
"""
import ctypes
import json
import os
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(sys.argv[0]))
NAME = os.path.basename(sys.argv[0])
HDR = struct.Struct("=HHIII")

ID_LEN, ERR_LEN, CODE_LEN, NAME_LEN = 64, 256, 64, 16
TAG_KEY, TAG_VAL, MAX_TAGS, MAX_ADDRS = 128, 256, 8, 64
MAX_ADDRS6, MAX_PREFIXES6 = 64, 16     # common/maxima.h


class IpAddr(ctypes.Structure):
    """common/addr.h's struct ip_addr: a family, padding, 16 bytes."""
    _fields_ = [("family", ctypes.c_uint8), ("pad", ctypes.c_uint8 * 3),
                ("bytes", ctypes.c_uint8 * 16)]


class IpPrefix(ctypes.Structure):
    _fields_ = [("addr", IpAddr), ("len", ctypes.c_uint8),
                ("pad", ctypes.c_uint8 * 3)]


class Status(ctypes.Structure):
    _fields_ = [("outcome", ctypes.c_uint32), ("http_status", ctypes.c_uint32),
                ("code", ctypes.c_char * CODE_LEN),
                ("message", ctypes.c_char * ERR_LEN),
                ("request_id", ctypes.c_char * ID_LEN)]


class Tag(ctypes.Structure):
    _fields_ = [("key", ctypes.c_char * TAG_KEY),
                ("value", ctypes.c_char * TAG_VAL)]


class CloudEni(ctypes.Structure):
    _fields_ = [("st", Status), ("eni_id", ctypes.c_char * ID_LEN),
                ("subnet_id", ctypes.c_char * ID_LEN),
                ("instance_id", ctypes.c_char * ID_LEN),
                ("attachment_id", ctypes.c_char * ID_LEN),
                ("mac", ctypes.c_uint8 * 6),
                ("delete_on_termination", ctypes.c_uint8),
                ("pad", ctypes.c_uint8), ("status", ctypes.c_uint32),
                ("attach_status", ctypes.c_uint32),
                ("device_index", ctypes.c_int32),
                ("primary_ip", IpAddr), ("naddrs", ctypes.c_uint32),
                ("addrs", IpAddr * MAX_ADDRS),
                ("nprefixes", ctypes.c_uint32),
                ("prefixes", IpAddr * MAX_ADDRS),
                ("nbad_prefixes", ctypes.c_uint32),
                ("ntags", ctypes.c_uint32), ("tags", Tag * MAX_TAGS),
                ("ipv6_native", ctypes.c_uint8), ("pad2", ctypes.c_uint8 * 3),
                ("naddrs6", ctypes.c_uint32),
                ("addrs6", IpAddr * MAX_ADDRS6),
                ("nbad_addrs6", ctypes.c_uint32),
                ("nprefixes6", ctypes.c_uint32),
                ("prefixes6", IpAddr * MAX_PREFIXES6),
                ("nbad_prefixes6", ctypes.c_uint32)]


class CloudAssigned(ctypes.Structure):
    _fields_ = [("st", Status), ("naddrs", ctypes.c_uint32),
                ("addrs", IpAddr * MAX_ADDRS)]


class CloudPrefixes(ctypes.Structure):
    _fields_ = [("deadline_ms", ctypes.c_uint32),
                ("eni_id", ctypes.c_char * ID_LEN),
                ("family", ctypes.c_uint32), ("count", ctypes.c_uint32),
                ("nprefixes", ctypes.c_uint32),
                ("prefixes", IpAddr * MAX_ADDRS)]


class CloudPrefixesAssigned(ctypes.Structure):
    _fields_ = [("st", Status), ("nprefixes", ctypes.c_uint32),
                ("prefixes", IpAddr * MAX_ADDRS)]


class CloudDone(ctypes.Structure):
    _fields_ = [("st", Status), ("count", ctypes.c_uint32)]


class CloudAttached(ctypes.Structure):
    _fields_ = [("st", Status), ("attachment_id", ctypes.c_char * ID_LEN)]


class DescribeEnis(ctypes.Structure):
    _fields_ = [("deadline_ms", ctypes.c_uint32), ("filter", ctypes.c_uint32),
                ("instance_id", ctypes.c_char * ID_LEN),
                ("status", ctypes.c_uint32), ("ntags", ctypes.c_uint32),
                ("tags", Tag * MAX_TAGS)]


class NetdResult(ctypes.Structure):
    _fields_ = [("status", ctypes.c_uint32), ("error", ctypes.c_int32),
                ("changed", ctypes.c_uint32),
                ("message", ctypes.c_char * ERR_LEN)]


class NetdLink(ctypes.Structure):
    _fields_ = [("mac", ctypes.c_uint8 * 6), ("up", ctypes.c_uint8),
                ("pad", ctypes.c_uint8), ("ifindex", ctypes.c_uint32),
                ("mtu", ctypes.c_uint32), ("name", ctypes.c_char * NAME_LEN)]


class NetdRule(ctypes.Structure):
    _fields_ = [("priority", ctypes.c_uint32), ("table", ctypes.c_uint32),
                ("src", IpPrefix), ("dst", IpPrefix)]


class NetdFindLink(ctypes.Structure):
    _fields_ = [("mac", ctypes.c_uint8 * 6), ("pad", ctypes.c_uint8 * 2),
                ("deadline_ms", ctypes.c_uint32)]


class PodRule(ctypes.Structure):
    _fields_ = [("addr", IpAddr), ("table", ctypes.c_uint32),
                ("addr6", IpAddr)]


class CloudIps(ctypes.Structure):
    _fields_ = [("deadline_ms", ctypes.c_uint32),
                ("eni_id", ctypes.c_char * ID_LEN),
                ("family", ctypes.c_uint32), ("count", ctypes.c_uint32),
                ("naddrs", ctypes.c_uint32),
                ("addrs", IpAddr * MAX_ADDRS)]


STRUCTS = {"CLOUD_ENI": CloudEni, "CLOUD_ASSIGNED": CloudAssigned,
           "CLOUD_DONE": CloudDone, "CLOUD_ATTACHED": CloudAttached,
           "CLOUD_DESCRIBE_ENIS": DescribeEnis, "NETD_RESULT": NetdResult,
           "NETD_LINK": NetdLink, "NETD_RULE": NetdRule,
           "NETD_ADD_POD": PodRule, "NETD_DEL_POD": PodRule,
           "NETD_FIND_LINK": NetdFindLink,
           "CLOUD_ASSIGN_IPS": CloudIps, "CLOUD_UNASSIGN_IPS": CloudIps,
           "CLOUD_ASSIGN_PREFIXES": CloudPrefixes,
           "CLOUD_UNASSIGN_PREFIXES": CloudPrefixes,
           "CLOUD_PREFIXES_ASSIGNED": CloudPrefixesAssigned}
STREAM_END = {"CLOUD_DONE", "NETD_END"}
ENTRY = {"CLOUD_DESCRIBE_ENIS": "CLOUD_ENI", "CLOUD_DESCRIBE_SUBNETS":
         "CLOUD_SUBNET", "NETD_DUMP_RULES": "NETD_RULE",
         "NETD_DUMP_LINKS": "NETD_LINK"}


def ipaddr(v):
    """An IpAddr from text of either family, or 0 for 0.0.0.0."""
    a = IpAddr()
    if v == 0:
        v = "0.0.0.0"
    fam = socket.AF_INET6 if ":" in v else socket.AF_INET
    raw = socket.inet_pton(fam, v)
    a.family = fam
    for i, b in enumerate(raw):
        a.bytes[i] = b
    return a


def ip_str(a):
    if a.family == socket.AF_INET:
        return socket.inet_ntop(socket.AF_INET, bytes(a.bytes[:4]))
    if a.family == socket.AF_INET6:
        return socket.inet_ntop(socket.AF_INET6, bytes(a.bytes))
    return "family %d" % a.family


def blank(cls):
    """A payload of cls that the receiver's checks accept: zeroes, with
    every address IPv4's 0.0.0.0 (a zeroed one has no family)."""
    o = cls()

    def fill(x):
        for name, typ in x._fields_:
            v = getattr(x, name)
            if name.endswith("6"):
                continue    # IPv6 fields: absent is all zero (msg.h)
            if isinstance(v, IpAddr):
                v.family = socket.AF_INET
            elif isinstance(v, ctypes.Structure):
                fill(v)
            elif isinstance(v, ctypes.Array) and len(v) and \
                    isinstance(v[0], IpAddr):
                for e in v:
                    e.family = socket.AF_INET
    fill(o)
    return o


def type_names(msg_h):
    """The message type numbers, from the one list in common/msg.h."""
    text = open(msg_h).read()
    body = text[text.index("#define MSG_TYPES(X)"):]
    body = body[:body.index("#define MSG_ENUM_ENTRY")]
    names = re.findall(r"X\((\w+),", body)
    return {n: i + 1 for i, n in enumerate(names)}, \
        {i + 1: n for i, n in enumerate(names)}


def set_fields(obj, changes):
    for k, v in changes.items():
        if k in ("addrs", "prefixes", "addrs6", "prefixes6"):
            # addresses, or the first addresses of /28 (/80) prefixes
            setattr(obj, "n" + k, len(v))
            for i, a in enumerate(v):
                getattr(obj, k)[i] = ipaddr(a)
        elif k == "mac":
            for i, x in enumerate(v.split(":")):
                obj.mac[i] = int(x, 16)
        elif k in ("src", "dst"):              # a rule's, its address
            getattr(obj, k).addr = ipaddr(v)
        elif k in ("src_len", "dst_len"):
            getattr(obj, k[:3]).len = v
        elif k.endswith("ip") or k == "addr":
            setattr(obj, k, ipaddr(v))
        elif k == "st.outcome":
            obj.st.outcome = v
        elif isinstance(v, str):
            setattr(obj, k, v.encode())
        else:
            setattr(obj, k, v)


def field(obj, k):
    """A payload's field as a rule's "match" names it: a MAC as
    "aa:bb:cc:dd:ee:ff"."""
    v = getattr(obj, k)
    if k == "mac":
        return ":".join("%02x" % x for x in v)
    if isinstance(v, IpAddr):
        return ip_str(v)
    return v


def pick(names, msgs, where):
    """The first of msgs whose fields are as where says, or None."""
    for m in msgs:
        cls = STRUCTS.get(names.get(HDR.unpack_from(m)[0]))
        if cls is None or len(m) - HDR.size != ctypes.sizeof(cls):
            continue
        o = cls.from_buffer_copy(m[HDR.size:])
        if all(field(o, k) == (v.encode() if isinstance(v, str) and
                               not isinstance(field(o, k), str) else v)
               for k, v in where.items()):
            return m
    return None


def describe(tname, payload):
    """A few fields of a payload, for the log."""
    cls = STRUCTS.get(tname)
    if cls is None or len(payload) != ctypes.sizeof(cls):
        return {}
    o = cls.from_buffer_copy(payload)
    out = {}
    for f in ("eni_id", "naddrs", "outcome", "status", "filter", "addr"):
        if hasattr(o, f):
            v = field(o, f)
            out[f] = v.decode() if isinstance(v, bytes) else v
    if hasattr(o, "addrs") and hasattr(o, "naddrs"):
        out["addrs"] = [ip_str(o.addrs[i]) for i in range(min(o.naddrs, 64))]
    if hasattr(o, "st"):
        out["outcome"] = o.st.outcome
    return out


class Mitm:
    def __init__(self):
        with open(os.path.join(HERE, "mitm.json")) as f:
            self.conf = json.load(f)
        self.num, self.name = type_names(self.conf["msg_h"])
        self.rules_path = os.path.join(HERE, "rules-%s.json" % NAME)
        self.rules_mtime = None
        self.rules = []
        self.log = open(os.path.join(HERE, "mitm-%s.log" % NAME), "a",
                        buffering=1)
        self.bound = {}         # request id -> (type name, rule, state)

    def note(self, **kw):
        kw["t"] = round(time.monotonic(), 3)
        self.log.write(json.dumps(kw) + "\n")

    def reload(self):
        try:
            mt = os.stat(self.rules_path).st_mtime_ns
        except FileNotFoundError:
            return
        if mt == self.rules_mtime:
            return
        self.rules_mtime = mt
        with open(self.rules_path) as f:
            self.rules = json.load(f).get("rules", [])
        for r in self.rules:
            r.setdefault("count", 1)
        self.note(event="rules", n=len(self.rules))

    def check_size(self, data):
        """A message of a type this helper lays out must be the size of
        its layout here: a protocol change the layouts above missed ends
        the run with a message naming it, rather than leave every rule on
        that type silently unfired."""
        if len(data) < HDR.size:
            return
        tname = self.name.get(HDR.unpack_from(data)[0])
        cls = STRUCTS.get(tname)
        if cls is not None and len(data) - HDR.size != ctypes.sizeof(cls):
            sys.exit("mitm_helper: %s is %d bytes on the wire, %d in this "
                     "helper's layout: update it to common/msg.h"
                     % (tname, len(data) - HDR.size, ctypes.sizeof(cls)))

    def request(self, tname, rid, payload):
        self.reload()
        for r in self.rules:
            if r["count"] <= 0 or r.get("request") != tname:
                continue
            match = r.get("match") or {}
            if match:
                cls = STRUCTS.get(tname)
                if cls is None or len(payload) != ctypes.sizeof(cls):
                    continue
                o = cls.from_buffer_copy(payload)
                if any(field(o, k) != v for k, v in match.items()):
                    continue
            r["count"] -= 1
            self.bound[rid] = (tname, r, {"entries": [], "t0":
                                          time.monotonic()})
            self.note(event="bound", rule=r.get("id"), request=tname, id=rid)
            return

    def answer(self, data):
        """(messages to pass on for one answer from the real helper, the
        time to hold them until or None)."""
        typ, flags, length, rid, _ = HDR.unpack_from(data)
        tname = self.name.get(typ, "?")
        b = self.bound.get(rid)
        if b is None or tname in ("HELLO_ACK", "PONG"):
            return [data], None
        req, r, state = b
        payload = bytes(data[HDR.size:])
        if ENTRY.get(req) != tname:
            del self.bound[rid]         # the final answer
        out = []
        if tname not in STREAM_END:
            state["entries"].append(bytes(data))
        if tname in STREAM_END and r.get("extra") and state["entries"]:
            n = 0
            for ch in r["extra"]:
                ch = dict(ch)
                src = pick(self.name, state["entries"], ch.pop("from", {}))
                if src is None:
                    continue
                cls = STRUCTS[self.name[HDR.unpack_from(src)[0]]]
                for i in range(ch.pop("copies", 1)):
                    o = cls.from_buffer_copy(src[HDR.size:])
                    set_fields(o, {k: (v % i if isinstance(v, str) and
                                       "%" in v else v)
                                   for k, v in ch.items()})
                    out.append(src[:HDR.size] + bytes(o))
                    n += 1
            self.note(event="extra", rule=r.get("id"), n=n)
        want = r.get("answer")
        applies = (want is None or want == tname) and \
            (not r.get("where") or pick(self.name, [data], r["where"]))
        if applies and r.get("replace"):
            # Another answer type the request allows, all zero but for
            # what "set" says.
            tname = r["replace"]
            payload = bytes(blank(STRUCTS[tname]))
            data = HDR.pack(self.num[tname], 0, len(payload), rid, 0) + \
                payload
            self.note(event="replace", rule=r.get("id"), answer=tname)
        if applies and r.get("drop"):
            self.note(event="drop", rule=r.get("id"), answer=tname,
                      was=describe(tname, payload))
        else:
            if applies and r.get("set"):
                cls = STRUCTS.get(tname)
                if cls is not None and len(payload) == ctypes.sizeof(cls):
                    o = cls.from_buffer_copy(payload)
                    was = describe(tname, payload)
                    set_fields(o, r["set"])
                    payload = bytes(o)
                    self.note(event="set", rule=r.get("id"), answer=tname,
                              was=was, now=describe(tname, payload))
                else:
                    self.note(event="size-mismatch", answer=tname,
                              len=len(payload))
            if tname in STREAM_END and "end_outcome" in r:
                o = CloudDone.from_buffer_copy(payload)
                o.st.outcome = r["end_outcome"]
                o.st.message = b"changed by the test"
                payload = bytes(o)
                self.note(event="end_outcome", rule=r.get("id"))
            out.append(bytes(data[:HDR.size]) + payload)
        if r.get("delay_ms"):
            self.note(event="hold", rule=r.get("id"), answer=tname,
                      ms=r["delay_ms"])
            return out, state["t0"] + r["delay_ms"] / 1000.0
        return out, None

    def run(self):
        """Start the real helper behind a socketpair of ours; returns it,
        our end towards it, and our end towards the broker."""
        bfd = os.dup(3)
        up, down = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        os.close(3)
        os.dup2(down.fileno(), 3, inheritable=True)
        down.close()
        child = subprocess.Popen([self.conf["real"][NAME]] + sys.argv[1:],
                                 pass_fds=(3,), close_fds=True)
        os.close(3)
        return child, up, socket.socket(fileno=bfd)

    def loop(self, child, up, broker):
        out = {up: [], broker: []}
        held = []               # [release at, request id, message]
        signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
        try:
            while True:
                now = time.monotonic()
                while held and held[0][0] <= now:
                    out[broker].append(held.pop(0)[2])
                timeout = held[0][0] - now if held else 1.0
                wr = [s for s in (up, broker) if out[s]]
                r, w, _ = select.select([up, broker], wr, [],
                                        max(0.0, timeout))
                for s in w:
                    while out[s]:
                        try:
                            s.send(out[s][0], socket.MSG_DONTWAIT)
                        except BlockingIOError:
                            break
                        out[s].pop(0)
                for s in r:
                    data = s.recv(65536)
                    if not data:
                        return
                    self.check_size(data)
                    if s is broker:
                        typ, _, _, rid, _ = HDR.unpack_from(data)
                        self.request(self.name.get(typ, "?"), rid,
                                     data[HDR.size:])
                        out[up].append(data)
                        continue
                    rid = HDR.unpack_from(data)[3]
                    msgs, until = self.answer(data)
                    # Behind whatever of its request is held already.
                    after = [h[0] for h in held if h[1] == rid]
                    if after:
                        until = max([until or 0] + after)
                    for m in msgs:
                        if until is None:
                            out[broker].append(m)
                        else:
                            held.append([until, rid, m])
                    held.sort(key=lambda h: h[0])
        finally:
            child.terminate()
            try:
                child.wait(3)
            except subprocess.TimeoutExpired:
                child.kill()


def main():
    m = Mitm()
    child, up, broker = m.run()
    m.loop(child, up, broker)


if __name__ == "__main__":
    main()
