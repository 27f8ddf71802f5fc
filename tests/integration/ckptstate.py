"""enid's checkpoint as enid reads it back at start: the snapshot
(checkpoint.json) with the records of its generation in the journal
(checkpoint.journal) applied in order, up to the first that is not whole
(broker/journal.h has the format).  The tests, the chaos harness and the
benchmarks compare this with the pool; none of them should read
checkpoint.json alone, which is only as new as the last compaction.

    /usr/bin/python3 tests/integration/ckptstate.py STATE_DIR

prints the effective checkpoint as JSON.  Standard library only.
"""
import ipaddress
import json
import os
import struct
import sys
import zlib

SNAPSHOT = "checkpoint.json"
JOURNAL = "checkpoint.journal"
MAGIC = bytes((0xe5, 0x4e, 0x4a, 0x01))
HEADER = struct.Struct("<4sIQQI")        # magic, length, generation, seq, crc

POD_KEYS = ("container_id", "ifname", "namespace", "name", "uid", "ip",
            "eni", "since")
POD_OPTIONAL = ("host_veth",)     # enid-cni's pods only (version 3)
# Version 4: "ip6" (a dual-stack pod's), and a pod the kernel's IPv6 rules
# recovered has it alone, without "ip".
POD_ADDRS = ("ip", "ip6")
COOLING_KEYS = ("ip", "eni", "until")
DIFF_KEYS = ("written", "pods_removed", "pods_added", "cooling_removed",
             "cooling_added")


class Corrupt(ValueError):
    """A whole record that does not apply: enid would move both files
    aside at its next start."""


def frame(generation, seq, payload):
    """One record's bytes, as enid writes them (for tests that make
    journals of their own)."""
    head = struct.pack("<4sIQQ", MAGIC, len(payload), generation, seq)
    return head + struct.pack("<I", zlib.crc32(payload, zlib.crc32(head))) \
        + payload


def records(buf, generation):
    """The payloads of the whole records of generation, in order, and
    where they end."""
    out, off, seq = [], 0, 0
    while len(buf) - off >= HEADER.size:
        magic, length, gen, n, crc = HEADER.unpack_from(buf, off)
        if magic != MAGIC or length > len(buf) - off - HEADER.size:
            break
        start = off + HEADER.size
        payload = buf[start:start + length]
        if zlib.crc32(payload, zlib.crc32(buf[off:off + 24])) != crc:
            break
        if gen != generation or n != seq:
            break
        out.append(payload)
        off, seq = start + length, seq + 1
    return out, off


def _pod_key(p):
    return (p["container_id"], p["ifname"])


def _ip_key(c):
    return int(ipaddress.IPv4Address(c["ip"]))


def apply(state, payload, index=0):
    """Apply one record's difference to state (a snapshot's dict), as
    strictly as enid does; Corrupt if it does not apply."""
    d = json.loads(payload)
    if not isinstance(d, dict) or sorted(d) != sorted(DIFF_KEYS):
        raise Corrupt("record %d: keys %r" % (index, sorted(d)))
    pods = {_pod_key(p): p for p in state["pods"]}
    cooling = {c["ip"]: c for c in state["cooling"]}
    for k in d["pods_removed"]:
        if pods.pop(_pod_key(k), None) is None:
            raise Corrupt("record %d: removes %r, not there" % (index, k))
    for p in d["pods_added"]:
        if tuple(sorted(k for k in p if k not in POD_OPTIONAL + POD_ADDRS)) \
                != tuple(sorted(k for k in POD_KEYS if k not in POD_ADDRS)) \
                or not any(k in p for k in POD_ADDRS) or _pod_key(p) in pods:
            raise Corrupt("record %d: adds %r" % (index, p))
        pods[_pod_key(p)] = p
    for k in d["cooling_removed"]:
        if cooling.pop(k["ip"], None) is None:
            raise Corrupt("record %d: removes cooling %r" % (index, k))
    for c in d["cooling_added"]:
        if tuple(sorted(c)) != tuple(sorted(COOLING_KEYS)) or \
                c["ip"] in cooling:
            raise Corrupt("record %d: adds cooling %r" % (index, c))
        cooling[c["ip"]] = c
    held = [p[k] for p in pods.values() for k in POD_ADDRS if k in p] + \
        list(cooling)
    if len(held) != len(set(held)):
        raise Corrupt("record %d: an address held twice" % index)
    state["written"] = d["written"]
    state["pods"] = sorted(pods.values(), key=_pod_key)
    state["cooling"] = sorted(cooling.values(), key=_ip_key)


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def read(state_dir):
    """The effective checkpoint in state_dir as a dict shaped like
    checkpoint.json (pods in (container id, ifname) order, cooling
    addresses in address order, "journal_records" added), or None if
    there is no snapshot.  A snapshot replaced while the journal was read
    is read again (a compaction under our feet), a few times at most."""
    state_dir = os.fspath(state_dir)
    for _ in range(20):
        snap = _read(os.path.join(state_dir, SNAPSHOT))
        if snap is None:
            return None
        journal = _read(os.path.join(state_dir, JOURNAL)) or b""
        if _read(os.path.join(state_dir, SNAPSHOT)) == snap:
            break
    else:
        raise RuntimeError("%s kept changing while being read" % SNAPSHOT)
    state = json.loads(snap)
    state.setdefault("generation", 0)
    payloads, _ = records(journal, state["generation"])
    for i, payload in enumerate(payloads):
        apply(state, payload, i)
    state["pods"] = sorted(state["pods"], key=_pod_key)
    state["cooling"] = sorted(state["cooling"], key=_ip_key)
    state["journal_records"] = len(payloads)
    return state


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: ckptstate.py STATE_DIR")
    json.dump(read(sys.argv[1]), sys.stdout, indent=1)
    print()
