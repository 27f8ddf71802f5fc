"""A checkpoint of a newer format (issue 27, item 4): after a downgrade,
enid stops before it changes anything, naming both versions and what to
do, and leaves the files byte for byte and the node as they were.  The
formats this enid reads still load, and only a damaged file is moved
aside, with a log line that says so.

Each test runs enid in node 0 of its own simulated VPC (poolenv.py)."""
import json
import os
import struct
import subprocess
import zlib

import pytest

import ckptstate
import podwire
from poolenv import PoolEnv

CKPT_VERSION = 4        # broker/checkpoint.h: the newest enid reads
CKPT_VERSION_IPV4 = 3   # what it writes while no pod may have IPv6
JOURNAL_VERSION = 1     # broker/journal.h: the magic's last byte


@pytest.fixture
def env(workdir, enid_user, helper_dir):
    prefix = "enidcv%d" % os.getpid()
    e = PoolEnv(workdir, enid_user, helper_dir, prefix=prefix,
                pool={"warm_ip_target": 2})
    try:
        yield e
    finally:
        e.stop()


def with_pods(env, n):
    env.start()
    held = {}
    for i in range(n):
        a, _ = env.add("cv%d" % i)
        assert a["ok"], a
        held["cv%d" % i] = a["ip"]
    env.wait_dataplane()
    return held


def node_view(env):
    """What enid could change on the node and in the cloud."""
    # IPv4: the kernel's own IPv6 link-local routes come and go.
    rules, routes, addrs, links, neigh = podwire.ip_dumps(
        env.ns, ("rule", "show"), ("route", "show", "table", "all"),
        ("addr", "show"), ("link", "show"),
        ("neigh", "show", "nud", "permanent"), family=4)
    st = env.state()
    return {
        "rules": rules, "routes": routes, "links": links, "addrs": addrs,
        "neigh": neigh,
        "calls": st["calls"],
        "enis": sorted((e["id"], e["status"], tuple(e["addresses"]))
                       for e in env.node_enis(st)),
    }


def files(env):
    return {p: (env.state_dir / p).read_bytes()
            for p in sorted(os.listdir(env.state_dir))
            if p.startswith("checkpoint")}


def settled(env):
    """The sim done with what the stopped enid started: no ENI of the
    node still attaching or detaching, no link still to appear."""
    env.wait(lambda: all(e["status"] in ("in-use", "available") and
                         (e["attachment"] is None or
                          e["attachment"]["status"] == "attached")
                         for e in env.node_enis()),
             20, "the sim's ENIs to settle")
    env.wait_dataplane(20)


def refused(env, *needles):
    settled(env)
    before_files, before_node = files(env), node_view(env)
    e = env.start(wait=False)
    rc = e.proc.wait(timeout=20)
    text = e.text()
    assert rc != 0, text
    for needle in needles:
        assert needle in text, (needle, text)
    # Stopped before anything: no helper, no socket, no pool.
    assert "enid-netd" not in text and "enid-cloudd" not in text, text
    assert not os.path.exists(env.cni_sock)
    assert files(env) == before_files       # byte for byte, none aside
    assert node_view(env) == before_node
    return text


def test_newer_snapshot_refused(env):
    with_pods(env, 3)
    env.enid.stop()
    path = env.state_dir / ckptstate.SNAPSHOT
    snap = json.loads(path.read_text())
    snap["version"] = CKPT_VERSION + 1
    snap["prefixes"] = []           # what a newer format might add
    path.write_text(json.dumps(snap))
    text = refused(env, "checkpoint.json: version: format version %d, "
                   "newer than the %d this enid reads" % (CKPT_VERSION + 1,
                                                          CKPT_VERSION),
                   "Run the newer enid",
                   "move checkpoint.json and checkpoint.journal out of")
    assert "moved aside" not in text and "corrupt" not in text, text


def test_newer_snapshot_of_another_shape_refused(env):
    """A newer snapshot whose version is not where enid writes it escapes
    the look taken as root (which parses no JSON); the sandboxed load
    refuses it, after the helpers start but before anything changes:
    the files, the node and the cloud (no mutating call) as they were."""
    with_pods(env, 2)
    env.enid.stop()
    path = env.state_dir / ckptstate.SNAPSHOT
    snap = json.loads(path.read_text())
    version = snap.pop("version")
    assert version == CKPT_VERSION_IPV4
    snap["version"] = CKPT_VERSION + 1          # last, not first
    path.write_text(json.dumps(snap))
    settled(env)
    before_files, before_node = files(env), node_view(env)
    e = env.start(wait=False)
    assert e.proc.wait(timeout=30) != 0, e.text()
    text = e.text()
    assert "checkpoint.json: version: format version %d, newer than the " \
        "%d this enid reads" % (CKPT_VERSION + 1, CKPT_VERSION) in text, text
    assert "Run the newer enid" in text, text
    assert files(env) == before_files
    after = node_view(env)
    mutating = {k: v for k, v in after.pop("calls").items()
                if not k.startswith("Describe")}
    assert mutating == {k: v for k, v in before_node.pop("calls").items()
                        if not k.startswith("Describe")}
    assert after == before_node


def test_newer_journal_refused(env):
    with_pods(env, 3)
    env.enid.stop()
    assert env.checkpoint()["journal_records"] >= 1
    path = env.state_dir / ckptstate.JOURNAL
    journal = bytearray(path.read_bytes())
    # The first record as a newer enid that kept the header writes it:
    # its version in the magic, the CRC made again (a bad CRC is torn).
    magic, length, gen, seq, _ = ckptstate.HEADER.unpack_from(journal, 0)
    assert magic == ckptstate.MAGIC
    payload = bytes(journal[28:28 + length])
    head = struct.pack("<4sIQQ", magic[:3] + bytes([JOURNAL_VERSION + 1]),
                       length, gen, seq)
    journal[:28] = head + struct.pack("<I", zlib.crc32(payload,
                                                       zlib.crc32(head)))
    path.write_bytes(bytes(journal))
    refused(env, "checkpoint.journal: the record at offset 0 is of format "
            "version 2, newer than the 1 this enid reads",
            "Run the newer enid")


def test_current_and_first_formats_read(env):
    """The snapshot and journal as this enid writes them are restored;
    so is a version 1 snapshot (no generation, no journal)."""
    held = with_pods(env, 3)
    env.enid.stop()
    e = env.start()
    assert "pool: running, 3 pods restored from the checkpoint" in \
        e.text(), e.text()
    assert {p["container_id"]: p["ip"] for p in env.show("pods")} == held
    e.stop()

    ck = env.checkpoint()
    v1 = {"version": 1, "instance_id": ck["instance_id"],
          "written": ck["written"], "pods": ck["pods"],
          "cooling": ck["cooling"]}
    os.unlink(env.state_dir / ckptstate.JOURNAL)
    (env.state_dir / ckptstate.SNAPSHOT).write_text(json.dumps(v1))
    e = env.start()
    assert "pool: running, 3 pods restored from the checkpoint" in \
        e.text(), e.text()
    assert {p["container_id"]: p["ip"] for p in env.show("pods")} == held
    # and the runtime's DEL releases them
    for cid in held:
        a, _ = env.delete(cid)
        assert a["ok"], a
    assert env.show("pods") == []


def test_version_2_read_and_its_pods_name_no_veth(env):
    """A version 2 snapshot (before pods named their host veth) is
    restored; its pods have no host veth, and the first save after the
    start is a version 3 snapshot, so no journal record with the new key
    ever follows a version 2 snapshot."""
    held = with_pods(env, 2)
    env.enid.stop()
    ck = env.checkpoint()
    v2 = {"version": 2, "generation": ck["generation"],
          "instance_id": ck["instance_id"], "written": ck["written"],
          "pods": [{k: v for k, v in p.items() if k != "host_veth"}
                   for p in ck["pods"]],
          "cooling": ck["cooling"]}
    os.unlink(env.state_dir / ckptstate.JOURNAL)
    (env.state_dir / ckptstate.SNAPSHOT).write_text(json.dumps(v2))
    e = env.start()
    assert "pool: running, 2 pods restored from the checkpoint" in \
        e.text(), e.text()
    assert {p["container_id"]: p["ip"] for p in env.show("pods")} == held
    a, _ = env.add("cv-new")
    assert a["ok"], a
    snap = json.loads((env.state_dir / ckptstate.SNAPSHOT).read_text())
    assert snap["version"] == CKPT_VERSION_IPV4, snap
    assert all("host_veth" not in p for p in snap["pods"]), snap


def test_damaged_snapshot_moved_aside_and_said(env):
    """Only damage moves a file aside, and the log does not then claim
    the pods were restored."""
    with_pods(env, 2)
    env.enid.stop()
    path = env.state_dir / ckptstate.SNAPSHOT
    text = path.read_bytes()
    path.write_bytes(text[:len(text) // 2])     # truncated
    e = env.start()
    log = e.text()
    assert [p for p in os.listdir(env.state_dir)
            if p.startswith("checkpoint.json.corrupt-")], log
    assert "pool: running without the checkpoint (it was unusable and " \
        "moved aside): 2 pods rebuilt from the kernel's rules" in log, log
    assert "restored from the checkpoint" not in log, log


def pod_rules(env, ips):
    """Each address's lines in the node's rule list."""
    text = subprocess.run(["ip", "-4", "-n", env.ns, "rule", "show"],
                          check=True, capture_output=True, text=True).stdout
    return {ip: sorted(line.split(":", 1)[1].strip()
                       for line in text.splitlines()
                       if " %s " % ip in line + " ")
            for ip in ips}


def test_newer_moved_aside_as_told_keeps_running_pods(env):
    """The refusal's way out, taken as it says (issue 34, item 3): with
    the newer files moved out of the state directory, the next start
    has no checkpoint at all, and rebuilds the running pods from the
    kernel's rules as it does after a lost one: they keep their
    addresses and their rules, and no new pod is given one of them."""
    held = with_pods(env, 3)
    env.enid.stop()
    rules = pod_rules(env, held.values())
    assert all(rules.values()), rules
    path = env.state_dir / ckptstate.SNAPSHOT
    snap = json.loads(path.read_text())
    snap["version"] = CKPT_VERSION + 1
    path.write_text(json.dumps(snap))
    refused(env, "Run the newer enid",
            "move checkpoint.json and checkpoint.journal out of",
            "running pods keep their addresses")
    aside = env.workdir / "aside"
    aside.mkdir()
    for name in (ckptstate.SNAPSHOT, ckptstate.JOURNAL):
        if (env.state_dir / name).exists():
            os.rename(env.state_dir / name, aside / name)

    e = env.start()
    pods = {p["ip"]: p["container_id"] for p in env.show("pods")}
    assert pods == {ip: "enid-recovered-" + ip for ip in held.values()}, \
        e.text()
    log = e.text()
    assert "belong to no pod" not in log, log
    assert "pool: running with no checkpoint of this node's: 3 pods " \
        "rebuilt from the kernel's rules" in log, log
    # A run more finds nothing to fix: the pods' rules are theirs.
    assert env.reconcile()["drifts_fixed"] == 0
    assert pod_rules(env, held.values()) == rules
    for i in range(4):
        a, _ = env.add("cv-new%d" % i)
        assert a["ok"] and a["ip"] not in held.values(), a
    assert "belong to no pod" not in e.text(), e.text()


def test_fresh_node_starts_with_no_pods(env):
    """No checkpoint and no pod's rules: a clean start, with no pod."""
    e = env.start()
    log = e.text()
    assert "pool: running, with no checkpoint and no pod's rules in the " \
        "kernel: no pods" in log, log
    assert "enid-recovered" not in log and "reconcile: done, 0 drifts " \
        "fixed" in log, log
    assert env.show("pods") == []
