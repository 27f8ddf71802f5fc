"""enid's metrics: the Prometheus text format, checked by a strict parser
written here (it is tested first on text it must refuse), and values that
match the pool, the sim's own counts and the CNI answers after a known
sequence of operations in a node of the simulated VPC (PoolEnv).  Also the
same text written for the node exporter's textfile collector, and the ways
that can go wrong."""
import itertools
import json
import math
import os
import pathlib
import pwd
import re
import shutil
import stat
import subprocess
import time

import pytest

import podwire
from conftest import built, scaled, write_config
from poolenv import PoolEnv

# ---- a strict parser for the Prometheus text format (version 0.0.4) ----

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
NUMBER = re.compile(r"[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\Z")
TYPES = ("counter", "gauge", "histogram", "summary", "untyped")


class FormatError(Exception):
    pass


def _value(s, where):
    if s in ("+Inf", "-Inf", "NaN"):
        return float(s.replace("Inf", "inf"))
    if not NUMBER.match(s):
        raise FormatError("%s: bad value %r" % (where, s))
    return float(s)


def _unescape(s, allowed, where):
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\":
            if i + 1 >= len(s) or s[i + 1] not in allowed:
                raise FormatError("%s: bad escape in %r" % (where, s))
            out.append({"\\": "\\", "n": "\n", '"': '"'}[s[i + 1]])
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def _labels(line, pos, where):
    """Label pairs after '{' at pos; returns (dict, position after '}')."""
    labels = {}
    pos += 1
    while True:
        m = LABEL.match(line, pos)
        if not m:
            raise FormatError("%s: bad label name at %d" % (where, pos))
        name = m.group()
        if name.startswith("__"):
            raise FormatError("%s: reserved label name %s" % (where, name))
        if name in labels:
            raise FormatError("%s: label %s twice" % (where, name))
        pos = m.end()
        if line[pos:pos + 2] != '="':
            raise FormatError("%s: expected =\" after %s" % (where, name))
        pos += 2
        start = pos
        while pos < len(line) and line[pos] != '"':
            pos += 2 if line[pos] == "\\" else 1
        if pos >= len(line):
            raise FormatError("%s: unterminated label value" % where)
        labels[name] = _unescape(line[start:pos], '\\"n', where)
        pos += 1
        if line[pos:pos + 1] == ",":
            pos += 1
            if line[pos:pos + 1] == "}":
                return labels, pos + 1
            continue
        if line[pos:pos + 1] == "}":
            return labels, pos + 1
        raise FormatError("%s: expected , or } at %d" % (where, pos))


def _family_of(sample, families):
    """The declared family a sample name belongs to."""
    if sample in families and families[sample]["type"] != "histogram":
        return sample
    for suffix in ("_bucket", "_sum", "_count"):
        base = sample[:-len(suffix)]
        if sample.endswith(suffix) and base in families and \
                families[base]["type"] in ("histogram", "summary"):
            if suffix == "_bucket" and families[base]["type"] != "histogram":
                break
            return base
    return None


def parse_prometheus(text):
    """Parse and check text; returns {family: {"type", "help", "samples":
    {(sample name, ((label, value), ...)): float}}} in order."""
    if not text.endswith("\n"):
        raise FormatError("text does not end with a newline")
    if "\r" in text or "\0" in text:
        raise FormatError("carriage return or NUL in the text")
    families, closed, current = {}, set(), None
    for n, line in enumerate(text[:-1].split("\n"), 1):
        where = "line %d" % n
        if line.strip() == "":
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) < 2 or parts[1] not in ("HELP", "TYPE"):
                continue                        # a plain comment
            if len(parts) < 3 or not NAME.fullmatch(parts[2]):
                raise FormatError("%s: bad metric name in %s" %
                                  (where, parts[1]))
            name = parts[2]
            if name in closed:
                raise FormatError("%s: %s again after other families" %
                                  (where, name))
            fam = families.setdefault(name, {"type": None, "help": None,
                                             "samples": {}})
            if parts[1] == "HELP":
                if fam["help"] is not None:
                    raise FormatError("%s: second HELP for %s" %
                                      (where, name))
                fam["help"] = _unescape(parts[3] if len(parts) > 3 else "",
                                        "\\n", where)
            else:
                if fam["type"] is not None:
                    raise FormatError("%s: second TYPE for %s" %
                                      (where, name))
                if fam["samples"]:
                    raise FormatError("%s: TYPE for %s after its samples" %
                                      (where, name))
                if len(parts) != 4 or parts[3] not in TYPES:
                    raise FormatError("%s: bad TYPE line" % where)
                fam["type"] = parts[3]
            if current is not None and current != name:
                closed.add(current)
            current = name
            continue
        m = NAME.match(line)
        if not m:
            raise FormatError("%s: bad metric name" % where)
        sname, pos = m.group(), m.end()
        labels = {}
        if line[pos:pos + 1] == "{":
            labels, pos = _labels(line, pos, where)
        rest = line[pos:]
        if not rest[:1] in (" ", "\t"):
            raise FormatError("%s: no blank before the value" % where)
        fields = rest.split()
        if len(fields) not in (1, 2) or (len(fields) == 2 and
                                         not re.fullmatch(r"-?\d+",
                                                          fields[1])):
            raise FormatError("%s: expected a value and maybe a "
                              "timestamp" % where)
        value = _value(fields[0], where)
        fname = _family_of(sname, families)
        if fname is None or families[fname]["type"] is None:
            raise FormatError("%s: %s has no TYPE before it" % (where, sname))
        if fname in closed or (current is not None and current != fname):
            raise FormatError("%s: %s is not next to its family" %
                              (where, sname))
        current = fname
        key = (sname, tuple(sorted(labels.items())))
        samples = families[fname]["samples"]
        if key in samples:
            raise FormatError("%s: duplicate series %r" % (where, key))
        samples[key] = value
    for name, fam in families.items():
        if fam["type"] == "histogram":
            _check_histogram(name, fam["samples"])
        if fam["type"] == "counter":
            for key, v in fam["samples"].items():
                if not v >= 0:
                    raise FormatError("%s: counter %r is %r" % (name, key, v))
    return families


def _check_histogram(name, samples):
    groups = {}
    for (sname, labels), v in samples.items():
        rest = tuple(x for x in labels if x[0] != "le")
        g = groups.setdefault(rest, {"buckets": [], "sum": None,
                                     "count": None})
        if sname == name + "_bucket":
            le = dict(labels).get("le")
            if le is None:
                raise FormatError("%s: bucket without le" % name)
            g["buckets"].append((_value(le, name), v))
        elif sname == name + "_sum":
            g["sum"] = v
        elif sname == name + "_count":
            g["count"] = v
        else:
            raise FormatError("%s: %s in a histogram" % (name, sname))
    for rest, g in groups.items():
        b = g["buckets"]
        if not b or b[-1][0] != math.inf:
            raise FormatError("%s%r: no +Inf bucket last" % (name, rest))
        if any(b[i][0] >= b[i + 1][0] for i in range(len(b) - 1)):
            raise FormatError("%s%r: le not increasing" % (name, rest))
        if any(b[i][1] > b[i + 1][1] for i in range(len(b) - 1)):
            raise FormatError("%s%r: buckets not cumulative" % (name, rest))
        if g["count"] is None or g["sum"] is None:
            raise FormatError("%s%r: _sum or _count missing" % (name, rest))
        if g["count"] != b[-1][1]:
            raise FormatError("%s%r: _count %r is not the +Inf bucket %r" %
                              (name, rest, g["count"], b[-1][1]))


GOOD = """# HELP x_total A \\\\ help\\nline
# TYPE x_total counter
x_total{a="q\\"uo\\\\te\\n",b="2",} 3 1700000000
# TYPE h_seconds histogram
h_seconds_bucket{le="0.5"} 1
h_seconds_bucket{le="+Inf"} 2
h_seconds_sum 0.75
h_seconds_count 2
"""


def test_parser_takes_good_text():
    f = parse_prometheus(GOOD)
    assert f["x_total"]["help"] == "A \\ help\nline"
    assert f["x_total"]["samples"] == {
        ("x_total", (("a", 'q"uo\\te\n'), ("b", "2"))): 3.0}
    assert f["h_seconds"]["samples"][("h_seconds_count", ())] == 2
    # HELP may follow the samples of the family still open.
    assert parse_prometheus("# TYPE a gauge\na 1\n# HELP a x\n")["a"][
        "help"] == "x"


@pytest.mark.parametrize("text, why", [
    ("# TYPE a gauge\na 1", "does not end with a newline"),
    ("a 1\n", "has no TYPE before it"),
    ("a 1\n# TYPE a gauge\n", "has no TYPE before it"),
    ("# TYPE a gauge\n# TYPE a gauge\na 1\n", "second TYPE"),
    ("# TYPE a gauge\na{x=\"1\"} 1\na{x=\"1\"} 2\n", "duplicate series"),
    ("# TYPE a gauge\na{x=\"\\t\"} 1\n", "bad escape"),
    ("# TYPE a gauge\na{x=\"1} 1\n", "unterminated label value"),
    ("# TYPE a gauge\na{x=1} 1\n", "expected =\""),
    ("# TYPE a gauge\na{x=\"1\",x=\"2\"} 1\n", "label x twice"),
    ("# TYPE a gauge\na{__x=\"1\"} 1\n", "reserved label name"),
    ("# TYPE a gauge\na{} 1\n", "bad label name"),
    ("# TYPE a gauge\na one\n", "bad value"),
    ("# TYPE a gauge\na\n", "no blank before the value"),
    ("# TYPE a gauge\na 1 2 3\n", "expected a value"),
    ("# TYPE a gauge\n# TYPE b gauge\nb 1\na 1\n", "not next to its family"),
    ("# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\n# HELP a x\n",
     "again after other families"),
    ("# TYPE 1a gauge\n", "bad metric name"),
    ("# TYPE a widget\na 1\n", "bad TYPE line"),
    ("# TYPE a counter\na -1\n", "counter"),
    ("# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\n"
     "h_sum 1\nh_count 1\n", "buckets not cumulative"),
    ("# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",
     "no +Inf bucket last"),
    ("# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 3\n",
     "is not the +Inf bucket"),
    ("# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_count 2\n",
     "_sum or _count missing"),
    ("# TYPE h histogram\nh_bucket{le=\"2\"} 1\nh_bucket{le=\"1\"} 1\n"
     "h_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n", "le not increasing"),
    ("# TYPE h histogram\nh_bucket 1\nh_sum 1\nh_count 1\n",
     "bucket without le"),
    ("# TYPE a gauge\r\na 1\n", "carriage return"),
])
def test_parser_refuses(text, why):
    with pytest.raises(FormatError, match=re.escape(why)):
        parse_prometheus(text)


# ---- enid's conventions on top of the format ----

UNITS = ("_seconds", "_total", "_info")


def check_conventions(fams):
    for name, f in fams.items():
        assert name.startswith("enid_"), name
        assert f["help"], name
        if f["type"] == "counter":
            assert name.endswith("_total"), name
        if f["type"] == "histogram":
            assert name.endswith("_seconds"), name
        if name.endswith("_seconds") and f["type"] == "histogram":
            for (sname, labels), _ in f["samples"].items():
                if sname.endswith("_bucket"):
                    assert dict(labels)["le"] in HIST_LE, labels


HIST_LE = ("0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05",
           "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30", "60", "+Inf")


def sample(fams, name, **labels):
    """A sample's value; the family is found from the sample's name."""
    key = (name, tuple(sorted(labels.items())))
    for f in fams.values():
        if key in f["samples"]:
            return f["samples"][key]
    raise KeyError(key)


def samples_of(fams, name):
    """{labels dict as a tuple: value} of one sample name."""
    out = {}
    for f in fams.values():
        for (sname, labels), v in f["samples"].items():
            if sname == name:
                out[labels] = v
    return out


# ---- against enid ----

_seq = itertools.count()


@pytest.fixture
def make_env(workdir, enid_user, helper_dir):
    envs = []

    def make(sim_args=("--ip-limit", "4", "--eni-limit", "4"), **conf):
        env = PoolEnv(workdir, enid_user, helper_dir,
                      prefix="em%d%d" % (os.getpid() % 10000, next(_seq)),
                      sim_args=sim_args, **conf)
        envs.append(env)
        return env
    yield make
    keep = os.environ.get("ENID_IT_KEEP")   # a directory for the logs
    for env in envs:
        env.stop()
        if keep:
            shutil.copytree(env.workdir, os.path.join(
                keep, env.workdir.name), dirs_exist_ok=True,
                ignore=shutil.ignore_patterns("*.sock", "helpers"))


def metrics(env):
    """enidctl -j metrics: (the text's families, checked, and the answer's
    JSON samples, which must say the same)."""
    r = subprocess.run([built("ctl/enidctl"), "-j", "-s", str(env.ctl_sock),
                        "metrics"], capture_output=True, timeout=30)
    assert r.returncode == 0, r.stderr
    ans = json.loads(r.stdout)
    fams = parse_prometheus(ans["text"])
    check_conventions(fams)
    from_json = {}
    for f in ans["metrics"]:
        from_json[f["name"]] = {"type": f["type"], "help": f["help"],
                                "samples": {
            (s["name"], tuple(sorted(s["labels"].items()))): s["value"]
            for s in f["samples"]}}
    assert list(from_json) == list(fams)
    for name, f in fams.items():
        j = from_json[name]
        assert (j["type"], j["help"]) == (f["type"], f["help"]), name
        assert list(j["samples"]) == list(f["samples"]), name
        for key, v in f["samples"].items():
            assert math.isclose(j["samples"][key], v, abs_tol=1e-6), key
    return fams


def settle(env, timeout=30):
    """Until every ENI is ready and the pool reads the same twice."""
    last = [None]

    def still():
        enis = env.show("enis")
        now = (json.dumps(env.show("pool"), sort_keys=True),
               sorted((e["id"], e["state"], len(e["addresses"]))
                      for e in enis))
        same = now == last[0] and all(e["state"] == "ready" for e in enis)
        last[0] = now
        return same
    env.wait(still, timeout, "a settled pool", step=0.5)


def cloud_calls(fams):
    return {dict(k)["action"]: v for k, v in
            samples_of(fams, "enid_cloud_requests_total").items() if v}


def test_values_after_a_known_sequence(make_env, workdir, enid_user):
    prom = workdir / "prom"
    prom.mkdir()
    os.chown(prom, pwd.getpwnam(enid_user).pw_uid, 0)
    env = make_env(pool={"add_timeout_s": 10, "ip_cooldown_s": 0,
                         "max_pods": 5},
                   reconcile_interval_s=3600,
                   leak_gc={"enabled": True, "grace_s": 60},
                   metrics_textfile=str(prom / "enid.prom"))
    env.start()

    # Five ADDs, a sixth over max_pods, a malformed one; DELs of two pods
    # and of one enid never heard of (idempotent: ok).
    for i in range(5):
        a, _ = env.add("k%d" % i)
        assert a["ok"], a
    # Refused by the broker as "max-pods" although a warm address is at
    # hand, before netd's own pod limit would refuse it as "netd".
    a, _ = env.add("k5")
    assert not a["ok"] and a["code"] == "max-pods", a
    assert "max_pods (5)" in a["error"], a
    over = a["code"]
    a, _ = podwire.cni(env.cni_sock, {"op": "add", "ifname": "eth0"})
    assert a["code"] == "bad-request", a
    for cid in ("k1", "k2", "nope"):
        a, _ = env.delete(cid)
        assert a["ok"], a
    settle(env)

    fams = metrics(env)
    cni = {(dict(k)["op"], dict(k)["code"]): v for k, v in samples_of(
        fams, "enid_cni_request_duration_seconds_count").items()}
    assert cni == {("add", "ok"): 5, ("add", over): 1,
                   ("add", "bad-request"): 1, ("del", "ok"): 3}, cni
    # The warm pool answers an ADD in well under a second: most are in
    # the first buckets.
    assert sample(fams, "enid_cni_request_duration_seconds_bucket", op="add",
                  code="ok", le="0.25") >= 4

    # The pool, as show says it, and as the cloud says it.
    pool = env.show("pool")
    enis = env.show("enis")
    addrs = {dict(k)["state"]: v for k, v in
             samples_of(fams, "enid_pool_addresses").items()}
    assert addrs == {s: pool[s] for s in ("free", "assigned", "cooling",
                                          "other")}, (addrs, pool)
    assert addrs["assigned"] == 3
    assert sample(fams, "enid_pods") == 3 == len(env.show("pods"))
    by_state = {dict(k)["state"]: v for k, v in
                samples_of(fams, "enid_enis").items()}
    assert sum(by_state.values()) == len(enis)
    assert by_state["ready"] == len(enis) == len(
        [e for e in env.node_enis() if e["status"] == "in-use"])
    assert sample(fams, "enid_adds_waiting") == 0
    assert sample(fams, "enid_pool_max_enis") == 4
    assert sample(fams, "enid_pool_max_pods") == 5

    # Every ENI created was configured once: its link found once.
    created = sample(fams, "enid_enis_created_total")
    assert created == len(enis) - 1
    assert sample(fams, "enid_netd_link_wait_seconds_count",
                  result="found") == created
    assert sample(fams, "enid_netd_link_wait_seconds_count",
                  result="not-found") == 0
    assert sample(fams, "enid_quarantines_total") == 0

    # cloudd's counts are the sim's, action by action (nothing else has
    # called it yet).
    def same_as_sim():
        f = metrics(env)
        return cloud_calls(f) == env.state()["calls"] or None
    env.wait(same_as_sim, 10, "enid's cloud counts equal to the sim's")

    # Two throttles on DescribeNetworkInterfaces: retried inside cloudd,
    # the reconciliation still succeeds.
    env.faults([{"action": "DescribeNetworkInterfaces",
                 "code": "RequestLimitExceeded", "count": 2}])
    before = metrics(env)
    env.reconcile()
    after = metrics(env)
    act = {"action": "DescribeNetworkInterfaces"}
    st = env.state()
    assert sample(after, "enid_cloud_throttles_total", **act) == \
        st["throttles"]["DescribeNetworkInterfaces"] == 2
    assert sample(after, "enid_cloud_retries_total", **act) == 2
    assert sample(after, "enid_cloud_errors_total", **act) == 2
    assert sample(after, "enid_cloud_requests_total", **act) == \
        st["calls"]["DescribeNetworkInterfaces"]
    assert sample(after, "enid_cloud_request_duration_seconds_count",
                  **act) == st["calls"]["DescribeNetworkInterfaces"]
    assert sample(after, "enid_reconciles_total") == \
        sample(before, "enid_reconciles_total") + 1

    # A drift: an address taken away behind enid's back.
    free = [(e["id"], a["ip"]) for e in env.show("enis")
            for a in e["addresses"] if a["state"] == "free"]
    assert free
    env.ec2().unassign_private_ip_addresses(
        NetworkInterfaceId=free[0][0], PrivateIpAddresses=[free[0][1]])
    fixed = env.reconcile()["drifts_fixed"]
    assert fixed >= 1
    assert sample(metrics(env), "enid_reconcile_drifts_fixed_total") == \
        sample(after, "enid_reconcile_drifts_fixed_total") + fixed

    # A leak: an available ENI tagged for this node, older than grace_s.
    leak = env.ec2().create_network_interface(
        SubnetId=env.node["subnet_id"],
        TagSpecifications=[{"ResourceType": "network-interface", "Tags": [
            {"Key": "enid.io/created-by", "Value": "enid"},
            {"Key": "enid.io/instance-id", "Value": env.node["instance_id"]},
            {"Key": "enid.io/cluster", "Value": "it"},
            {"Key": "enid.io/created-at",
             "Value": str(int(time.time()) - 600)}]}]
    )["NetworkInterface"]["NetworkInterfaceId"]
    env.reconcile()
    env.wait(lambda: leak not in {e["id"] for e in env.state()["enis"]},
             30, "the leak collector", step=0.5)
    assert sample(metrics(env), "enid_leaked_enis_deleted_total") == 1

    # The textfile: the same families, for the node exporter.
    path = prom / "enid.prom"
    env.wait(path.exists, 20, "the metrics textfile")
    st = path.stat()
    assert stat.S_IMODE(st.st_mode) == 0o644
    assert st.st_uid == pwd.getpwnam(enid_user).pw_uid
    # The first was written at start, before the instance and cloudd's
    # counters were known; one since has every family enidctl shows.
    names = list(metrics(env))

    def complete():
        f = parse_prometheus(path.read_text())
        check_conventions(f)
        return list(f) == names and f
    ffams = env.wait(complete, 20, "a complete textfile", step=0.5)
    assert os.listdir(prom) == ["enid.prom"]    # no temporary left
    # Rewritten every 15 s (scaled()): a later one counts the DELs since.
    first = sample(ffams, "enid_cni_request_duration_seconds_count",
                   op="del", code="ok")
    for cid in ("k3", "k4"):
        assert env.delete(cid)[0]["ok"]

    def rewritten():
        f = parse_prometheus(path.read_text())
        return sample(f, "enid_cni_request_duration_seconds_count",
                      op="del", code="ok") == first + 2
    env.wait(rewritten, 25, "the textfile rewritten", step=0.5)
    assert os.listdir(prom) == ["enid.prom"]
    check_dashboard(metrics(env))


DASHBOARD = pathlib.Path(__file__).resolve().parents[2] / "contrib" / \
    "grafana-enid.json"


def check_dashboard(fams):
    """contrib/grafana-enid.json queries exactly enid's metrics: each name
    it uses is a sample enid writes, each family enid writes is used, and
    each label it groups or filters by (but the scrape's instance) is one
    those samples carry."""
    dash = json.loads(DASHBOARD.read_text())
    names = {s for f in fams.values() for (s, _) in f["samples"]}
    labels_of = {}
    for f in fams.values():
        for (s, labels) in f["samples"]:
            labels_of.setdefault(s, set()).update(k for k, _ in labels)
    used, ids = set(), set()
    for p in dash["panels"]:
        assert p["id"] not in ids
        ids.add(p["id"])
        g = p["gridPos"]
        assert g["x"] + g["w"] <= 24, p["title"]
        for t in p.get("targets", []):
            expr = t["expr"]
            refs = set(re.findall(r"\benid_[a-z0-9_]+", expr))
            assert refs and refs <= names, (p["title"], refs - names)
            used |= refs
            have = set().union(*(labels_of[r] for r in refs)) | {"instance"}
            for by in re.findall(r"by \(([^)]*)\)", expr):
                for label in by.split(","):
                    assert label.strip() in have | {"le"}, (expr, label)
            for sel in re.findall(r"\{([^}]*)\}", expr):
                for label in re.findall(r"(\w+)\s*!?=~?", sel):
                    assert label in have, (expr, label)
    fam_used = {n for n in fams if any(u == n or u.startswith(n + "_")
                                       for u in used)}
    assert fam_used == set(fams), set(fams) - fam_used


def test_quarantine_and_link_waits(make_env):
    """The fourth pod needs a second ENI, whose link never appears: it is
    quarantined after link_timeout_s, and the wait is in the histogram as
    not-found; the next link comes 1.5 s late and is found, and the pod
    gets its address."""
    env = make_env(sim_args=("--ip-limit", "4", "--eni-limit", "8"),
                   pool={"add_timeout_s": 15, "ip_cooldown_s": 0,
                         "link_timeout_s": 2})
    env.links({"never": True, "next": 1})
    env.links({"delay_ms": 1500, "next": 1})
    env.start()
    for i in range(4):
        a, _ = env.add("q%d" % i, timeout=40)
        assert a["ok"], a

    def quarantined_and_replaced():
        f = metrics(env)
        return (sample(f, "enid_quarantines_total") >= 1 and
                sample(f, "enid_netd_link_wait_seconds_count",
                       result="found") >= 1) and f
    fams = env.wait(quarantined_and_replaced, 60,
                    "a quarantine and a late link found", step=0.5)
    nf = {"result": "not-found"}
    assert sample(fams, "enid_netd_link_wait_seconds_count", **nf) >= 1
    # It waited link_timeout_s (2 s): nothing under a second.
    assert sample(fams, "enid_netd_link_wait_seconds_bucket", le="1",
                  **nf) == 0
    assert sample(fams, "enid_netd_link_wait_seconds_sum", **nf) >= 1.9
    found = {"result": "found"}
    assert sample(fams, "enid_netd_link_wait_seconds_count", **found) - \
        sample(fams, "enid_netd_link_wait_seconds_bucket", le="1",
               **found) >= 1, "the late link took over a second"
    assert sample(fams, "enid_enis", state="quarantined") + \
        sample(fams, "enid_enis", state="detaching") + \
        sample(fams, "enid_enis", state="deleting") + \
        sample(fams, "enid_enis_deleted_total") >= 1


def test_prefix_freeze_and_fallback(make_env):
    """Prefix delegation on an m5.large: a prefix's worth of surplus with
    no prefix wholly free freezes one (a gauge, a counter, show enis);
    then, the subnet fragmented, growth finds no /28 and falls back to
    single addresses there (both reasons counted, the inhibit shown);
    the prefixes held are the sim's."""
    env = make_env(sim_args=("--instance-type", "m5.large", "--eni-limit",
                             "3", "--ip-limit", "10"),
                   pool={"add_timeout_s": 10, "ip_cooldown_s": 0,
                         "prefix_delegation": True, "warm_prefix_target": 0,
                         "warm_ip_target": 1, "shrink_delay_s": 0},
                   reconcile_interval_s=3600)
    env.start()
    # 17 pods fill one prefix and start a second; 15 of the first go:
    # a pod in each, 29 addresses more than needed, none wholly free.
    for i in range(17):
        a, _ = env.add("f%d" % i)
        assert a["ok"], a
    for i in range(15):
        assert env.delete("f%d" % i)[0]["ok"]

    def frozen():
        f = metrics(env)
        return sample(f, "enid_pool_prefixes_frozen") == 1 and f
    fams = env.wait(frozen, 10, "a frozen prefix", step=0.2)
    assert sample(fams, "enid_prefix_freezes_total") == 1
    assert sample(fams, "enid_pool_prefixes") == 2
    assert sample(fams, "enid_pool_prefix_delegation", mode="on") == 1
    pfx = [p for e in env.show("enis") for p in e["prefixes"]]
    assert [p["frozen"] for p in pfx].count(True) == 1, pfx
    ice = [p for p in pfx if p["frozen"]][0]
    # pool.prefix_freeze_s is 300: whole seconds left, rounded up.
    assert 290 <= ice["frozen_s"] <= 300 and ice["assigned"] == 1, ice
    assert env.show("pool")["prefixes_frozen"] == 1
    for r in ("no-prefix", "singles"):
        assert sample(fams, "enid_prefix_fallbacks_total", reason=r) == 0

    # No aligned /28 left: the 33rd address must come singly.
    sid = env.node["subnet_id"]
    env.sim.control("POST", "/subnets/" + sid, {"fragment": True})
    for i in range(17, 47):
        a, _ = env.add("f%d" % i)
        assert a["ok"], a

    def fell_back():
        f = metrics(env)
        return sample(f, "enid_prefix_fallbacks_total",
                      reason="singles") >= 1 and f
    fams = env.wait(fell_back, 10, "a fallback to single addresses",
                    step=0.2)
    assert sample(fams, "enid_prefix_fallbacks_total",
                  reason="no-prefix") >= 1
    assert sample(fams, "enid_prefixes_refused_total") == 0
    inh = env.show("pool")["prefix_inhibited"]
    assert [x["subnet"] for x in inh] == [sid], inh
    # prefix_backoff_s is 120.
    assert 0 < inh[0]["inhibited_s"] <= 120, inh
    sub = [s for s in env.show("subnets") if s["id"] == sid][0]
    assert 0 < sub["prefix_inhibited_s"] <= 120, sub
    singles = [a for e in env.show("enis") for a in e["addresses"]
               if "prefix" not in a]
    assert singles, env.show("enis")
    held = sum(len(e.get("prefixes") or []) for e in env.node_enis())
    assert sample(fams, "enid_pool_prefixes") == held == 2
    check_dashboard(fams)


def test_textfile_directory_missing_stops_start(start_enid, workdir,
                                                enid_user):
    conf = write_config(workdir, enid_user,
                        metrics_textfile=str(workdir / "nodir" / "e.prom"))
    enid = start_enid(conf=conf)
    assert enid.proc.wait(timeout=10) == 1
    assert "metrics_textfile: directory %s: No such file or directory" % (
        workdir / "nodir") in enid.text(), enid.text()


def test_textfile_unwritable_is_logged_not_fatal(make_env, workdir):
    prom = workdir / "ro"
    prom.mkdir(mode=0o755)          # root's: enid's user can't write
    env = make_env(pool={"add_timeout_s": 10},
                   metrics_textfile=str(prom / "enid.prom"))
    env.start()
    assert env.enid.wait_log("metrics: creating a temporary file beside "
                             "%s: Permission denied; trying again every "
                             "%g s" % (prom / "enid.prom", scaled(15)), 10), \
        env.enid.text()
    assert os.listdir(prom) == []
    metrics(env)                    # still served on ctl.sock
    assert env.enid.proc.poll() is None


# ---- SNAT and NodePort replies (issue 22; needs enid-netd's table) ----

SNAT_FAMILIES = ("enid_snat_enabled", "enid_snat_in_place",
                 "enid_snat_translated_connections_total",
                 "enid_connmark_marked_connections_total",
                 "enid_snat_table_replaced_total", "enid_snat_refused_total",
                 "enid_snat_syncs_total")


def snat_show(env):
    """enidctl -j show snat: netd's table as it read it back."""
    r = subprocess.run([built("ctl/enidctl"), "-j", "-s", str(env.ctl_sock),
                        "show", "snat"], capture_output=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def wait_snat_synced(env):
    """The metrics once the first SNAT sync succeeded and the table is in
    place."""
    def synced():
        f = metrics(env)
        return sample(f, "enid_snat_syncs_total", result="ok") >= 1 and \
            sample(f, "enid_snat_in_place") == 1 and f
    return env.wait(synced, 20, "the first SNAT sync", step=0.3)


def test_snat_metrics_after_a_known_sequence(make_env):
    """SNAT on: the table is written once at start and synced at each
    reconcile without being written again; a pod's ping beyond the VPC is
    one translated connection, a connection from the outside to the node's
    public address one marked on arrival; every value agrees with show
    snat, which reads the same counters."""
    env = make_env(pool={"add_timeout_s": 15, "ip_cooldown_s": 0},
                   reconcile_interval_s=3600)
    env.start()
    fams = wait_snat_synced(env)
    for name in SNAT_FAMILIES:
        assert name in fams, name
    assert fams["enid_snat_enabled"]["type"] == "gauge"
    assert fams["enid_snat_in_place"]["type"] == "gauge"
    assert sample(fams, "enid_snat_enabled") == 1
    # An absent table written at start is one whole write; nothing refused.
    assert sample(fams, "enid_snat_table_replaced_total") == 1
    assert sample(fams, "enid_snat_refused_total") == 0
    for res in ("refused", "failed", "no-answer"):
        assert sample(fams, "enid_snat_syncs_total", result=res) == 0, res
    snat = snat_show(env)["snat"]
    assert snat["to"] == env.node["primary_ip"]
    assert snat["in_place"] is True and snat["enabled"] is True

    # A pod on the primary ENI pings the outside host: translated.
    out = env.ep["outside"]["host"]
    translated = sample(fams, "enid_snat_translated_connections_total")
    a, _ = env.add("snat-metrics-0")
    assert a["ok"], a
    pod = env.wire("snat-metrics-0", a["ip"])
    assert pod.ping(out, wait=3), "a pod did not reach %s through SNAT" % out
    fams = env.wait(lambda: (lambda f: sample(
        f, "enid_snat_translated_connections_total") >= translated + 1 and
        f)(metrics(env)), 10, "the ping counted as translated", step=0.3)

    # From the outside, to the node's public address (translated by the
    # gateway to the primary one): marked as it arrives, whether or not
    # anything listens.
    marked = sample(fams, "enid_connmark_marked_connections_total")
    env.sim.control("POST", "/outside/connect",
                    {"node": 0, "port": 7, "timeout_ms": 1000})
    fams = env.wait(lambda: (lambda f: sample(
        f, "enid_connmark_marked_connections_total") >= marked + 1 and
        f)(metrics(env)), 10, "the arrival counted as marked", step=0.3)

    # A reconcile syncs again; the table was right, so it is not written.
    ok = sample(fams, "enid_snat_syncs_total", result="ok")
    env.reconcile()
    fams = env.wait(lambda: (lambda f: sample(
        f, "enid_snat_syncs_total", result="ok") >= ok + 1 and f)(
        metrics(env)), 10, "a sync at the reconcile", step=0.3)
    assert sample(fams, "enid_snat_table_replaced_total") == 1
    assert sample(fams, "enid_snat_in_place") == 1
    # The metrics and show snat read the same counters (each asks netd,
    # so nothing may have moved between: no traffic is made now).
    snat = snat_show(env)["snat"]
    fams = metrics(env)
    assert snat["translated"] == sample(
        fams, "enid_snat_translated_connections_total")
    assert snat["marked"] == sample(
        fams, "enid_connmark_marked_connections_total")
    assert snat["replaced"] == sample(fams, "enid_snat_table_replaced_total")
    assert snat["refused"] == sample(fams, "enid_snat_refused_total") == 0
    check_dashboard(fams)


def test_snat_off_metrics(make_env):
    """SNAT off: enabled 0, the table (the NodePort marks only) still in
    place, the syncs (to 0) accepted, and nothing translated."""
    env = make_env(snat={"enabled": False}, reconcile_interval_s=3600)
    env.start()
    fams = wait_snat_synced(env)
    assert sample(fams, "enid_snat_enabled") == 0
    assert sample(fams, "enid_snat_translated_connections_total") == 0
    assert sample(fams, "enid_snat_refused_total") == 0
    snat = snat_show(env)
    assert snat["snat"]["enabled"] is False and snat["snat"]["to"] is None
    assert snat["sync"]["result"] == "ok" and snat["sync"]["to"] is None
