"""contrib/daemonset.yaml against what the API server would check for its
kinds, without a server.

The schema is the Kubernetes API's own, as Debian's python3-kubernetes
generates its models from the API's OpenAPI document (client 22.6, API
1.22): every field must be one its kind has, of the type it has, and the
fields the models require must be there.  On top, the server's own
validation (k8s.io/kubernetes pkg/apis/core/validation and apps/validation)
for what this manifest uses: the names (DNS-1123 subdomains and labels,
label keys and values, environment variable and ConfigMap key names),
unique container, volume and mount names, mounts that name volumes, one
source per volume, enumerations, quantities and requests not above
limits, the probe's bounds, the rolling update's, the selector matching
the template's labels, and a pod that restarts Always.

Not checked (see doc/design.md): admission (PodSecurity levels, the
Priority plugin, quotas), defaulting, fields newer than the 1.22 schema
or removed since, whether the image exists, and whatever the kubelet
finds on the node.  Capability names are checked against the kernel's,
which the runtime, not the server, would refuse.
"""
import os
import re

import pytest

from conftest import SRCDIR

try:
    import yaml
except ImportError:
    yaml = None
try:
    import kubernetes.client as k8s
except ImportError:
    k8s = None

DAEMONSET = os.path.join(SRCDIR, "contrib", "daemonset.yaml")
KINDS = {"ConfigMap": ("v1", "V1ConfigMap"),
         "DaemonSet": ("apps/v1", "V1DaemonSet")}

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?"
                           r"(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
CONFIGMAP_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
QUANTITY = re.compile(r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)"
                      r"(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|"
                      r"[eE][+-]?[0-9]+)?$")
CAPABILITIES = {
    "ALL", "AUDIT_CONTROL", "AUDIT_READ", "AUDIT_WRITE", "BLOCK_SUSPEND",
    "BPF", "CHECKPOINT_RESTORE", "CHOWN", "DAC_OVERRIDE",
    "DAC_READ_SEARCH", "FOWNER", "FSETID", "IPC_LOCK", "IPC_OWNER", "KILL",
    "LEASE", "LINUX_IMMUTABLE", "MAC_ADMIN", "MAC_OVERRIDE", "MKNOD",
    "NET_ADMIN", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_RAW", "PERFMON",
    "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYSLOG", "SYS_ADMIN",
    "SYS_BOOT", "SYS_CHROOT", "SYS_MODULE", "SYS_NICE", "SYS_PACCT",
    "SYS_PTRACE", "SYS_RAWIO", "SYS_RESOURCE", "SYS_TIME",
    "SYS_TTY_CONFIG", "WAKE_ALARM"}


def docs():
    if yaml is None or k8s is None:
        pytest.skip("python3-yaml and python3-kubernetes are needed "
                    "(tests/deps.sh installs them)")
    with open(DAEMONSET) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def check_type(value, typ, path, errors):
    """value (parsed YAML) against a type of the generated models."""
    if typ.startswith("list["):
        if not isinstance(value, list):
            errors.append("%s: not a list" % path)
            return
        for i, v in enumerate(value):
            check_type(v, typ[5:-1], "%s[%d]" % (path, i), errors)
    elif typ.startswith("dict("):
        if not isinstance(value, dict):
            errors.append("%s: not an object" % path)
            return
        inner = typ[typ.index(",") + 1:-1].strip()
        for k, v in value.items():
            if not isinstance(k, str):
                errors.append("%s: key %r is not a string" % (path, k))
            check_type(v, inner, "%s.%s" % (path, k), errors)
    elif typ == "str":
        if not isinstance(value, str):
            errors.append("%s: %r is not a string" % (path, value))
    elif typ == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            errors.append("%s: %r is not an integer" % (path, value))
    elif typ == "bool":
        if not isinstance(value, bool):
            errors.append("%s: %r is not a boolean" % (path, value))
    elif typ == "object":
        pass            # IntOrString, Quantity and the like: checked below
    else:
        check_model(value, getattr(k8s, typ), path, errors)


def check_model(value, cls, path, errors):
    if not isinstance(value, dict):
        errors.append("%s: not an object (%s)" % (path, cls.__name__))
        return
    by_json = {j: a for a, j in cls.attribute_map.items()}
    for key, v in value.items():
        if key not in by_json:
            errors.append("%s: unknown field %r of %s" %
                          (path, key, cls.__name__))
            continue
        check_type(v, cls.openapi_types[by_json[key]],
                   "%s.%s" % (path, key), errors)
    # The models' setters refuse a required field that is missing.
    try:
        cls(**{by_json[k]: v for k, v in value.items() if k in by_json})
    except ValueError as e:
        errors.append("%s: %s" % (path, e))


def test_each_object_fits_its_kinds_schema():
    errors = []
    for i, d in enumerate(docs()):
        kind = d.get("kind")
        assert kind in KINDS, kind
        api, model = KINDS[kind]
        assert d.get("apiVersion") == api, (kind, d.get("apiVersion"))
        check_model(d, getattr(k8s, model), "doc%d(%s)" % (i, kind), errors)
    assert not errors, "\n".join(errors)


def check_labels(labels, path, errors):
    for k, v in (labels or {}).items():
        prefix, _, name = k.rpartition("/")
        if prefix and (len(prefix) > 253 or not DNS_SUBDOMAIN.match(prefix)):
            errors.append("%s: label key prefix %r" % (path, k))
        if len(name) > 63 or not QUALIFIED_NAME.match(name):
            errors.append("%s: label key %r" % (path, k))
        if not isinstance(v, str) or len(v) > 63 or not LABEL_VALUE.match(v):
            errors.append("%s: label value %r" % (path, v))


def check_meta(meta, path, errors):
    name = meta.get("name", "")
    if len(name) > 253 or not DNS_SUBDOMAIN.match(name):
        errors.append("%s.name: %r is not a DNS-1123 subdomain" % (path, name))
    ns = meta.get("namespace", "default")
    if len(ns) > 63 or not DNS_LABEL.match(ns):
        errors.append("%s.namespace: %r is not a DNS-1123 label" % (path, ns))
    check_labels(meta.get("labels"), path + ".labels", errors)


def quantity(q, path, errors):
    """A quantity's value in base units, roughly enough to compare."""
    s = str(q)
    if not QUANTITY.match(s):
        errors.append("%s: %r is not a quantity" % (path, q))
        return None
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40,
             "Pi": 2**50, "Ei": 2**60, "n": 1e-9, "u": 1e-6, "m": 1e-3,
             "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
    for suffix, mult in units.items():
        if s.endswith(suffix):
            return float(s[:-len(suffix)]) * mult
    return float(s)


def int_or_percent(v, path, errors):
    if isinstance(v, bool) or not (isinstance(v, int) and v >= 0 or
                                   isinstance(v, str) and
                                   re.match(r"^[0-9]+%$", v)):
        errors.append("%s: %r is not a count or a percentage" % (path, v))
        return None
    return int(str(v).rstrip("%"))


def check_container(c, path, volumes, errors):
    if not DNS_LABEL.match(c.get("name", "")) or len(c["name"]) > 63:
        errors.append("%s.name: %r is not a DNS-1123 label" %
                      (path, c.get("name")))
    if not c.get("image"):
        errors.append("%s.image: required" % path)
    env = [e["name"] for e in c.get("env", [])]
    for n in env:
        if not ENV_NAME.match(n):
            errors.append("%s.env: %r is not a valid name" % (path, n))
    for e in c.get("env", []):
        if "value" in e and "valueFrom" in e:
            errors.append("%s.env %s: value and valueFrom" % (path, e["name"]))
    paths = set()
    for m in c.get("volumeMounts", []):
        if m["name"] not in volumes:
            errors.append("%s.volumeMounts: %r names no volume" %
                          (path, m["name"]))
        if m["mountPath"] in paths:
            errors.append("%s.volumeMounts: %r twice" % (path, m["mountPath"]))
        paths.add(m["mountPath"])
        if ":" in m["mountPath"]:
            errors.append("%s.volumeMounts: %r holds ':'" %
                          (path, m["mountPath"]))
    caps = (c.get("securityContext") or {}).get("capabilities") or {}
    for c_ in caps.get("add", []) + caps.get("drop", []):
        if c_ not in CAPABILITIES:
            errors.append("%s: capability %r is not the kernel's" % (path, c_))
    res = c.get("resources") or {}
    req, lim = res.get("requests") or {}, res.get("limits") or {}
    for kind, values in (("requests", req), ("limits", lim)):
        for r, q in values.items():
            quantity(q, "%s.resources.%s.%s" % (path, kind, r), errors)
    for r in set(req) & set(lim):
        a = quantity(req[r], path, errors)
        b = quantity(lim[r], path, errors)
        if a is not None and b is not None and a > b:
            errors.append("%s.resources: %s request above its limit" %
                          (path, r))
    for probe_name in ("livenessProbe", "readinessProbe", "startupProbe"):
        p = c.get(probe_name)
        if p is None:
            continue
        handlers = [h for h in ("exec", "httpGet", "tcpSocket", "grpc")
                    if h in p]
        if len(handlers) != 1:
            errors.append("%s.%s: %d handlers" % (path, probe_name,
                                                  len(handlers)))
        if "exec" in p and not p["exec"].get("command"):
            errors.append("%s.%s.exec.command: required" % (path, probe_name))
        for f, low in (("initialDelaySeconds", 0), ("periodSeconds", 1),
                       ("timeoutSeconds", 1), ("failureThreshold", 1),
                       ("successThreshold", 1)):
            if f in p and p[f] < low:
                errors.append("%s.%s.%s below %d" % (path, probe_name, f,
                                                     low))
        if probe_name == "livenessProbe" and p.get("successThreshold",
                                                   1) != 1:
            errors.append("%s.livenessProbe.successThreshold must be 1" %
                          path)


def server_rules(cm, ds):
    errors = []
    check_meta(cm["metadata"], "ConfigMap.metadata", errors)
    for k in cm.get("data", {}):
        if len(k) > 253 or not CONFIGMAP_KEY.match(k) or k in (".", ".."):
            errors.append("ConfigMap.data: key %r" % k)
    check_meta(ds["metadata"], "DaemonSet.metadata", errors)

    spec = ds["spec"]
    tmpl = spec["template"]
    check_labels(tmpl["metadata"].get("labels"), "template.labels", errors)
    sel = spec["selector"]
    check_labels(sel.get("matchLabels"), "selector.matchLabels", errors)
    if not sel.get("matchLabels") and not sel.get("matchExpressions"):
        errors.append("selector: empty")
    labels = tmpl["metadata"].get("labels") or {}
    if not sel.get("matchLabels", {}).items() <= labels.items():
        errors.append("selector does not match the template's labels")
    us = spec.get("updateStrategy", {})
    if us.get("type", "RollingUpdate") not in ("RollingUpdate", "OnDelete"):
        errors.append("updateStrategy.type %r" % us.get("type"))
    ru = us.get("rollingUpdate")
    if ru is not None:
        mu = int_or_percent(ru.get("maxUnavailable", 1),
                            "rollingUpdate.maxUnavailable", errors)
        ms = int_or_percent(ru.get("maxSurge", 0), "rollingUpdate.maxSurge",
                            errors)
        if mu == 0 and ms == 0:
            errors.append("rollingUpdate: maxUnavailable and maxSurge "
                          "both 0")

    pod = tmpl["spec"]
    if pod.get("restartPolicy", "Always") != "Always":
        errors.append("a DaemonSet's pod restarts Always")
    if pod.get("dnsPolicy", "ClusterFirst") not in (
            "ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"):
        errors.append("dnsPolicy %r" % pod["dnsPolicy"])
    if "priorityClassName" in pod and \
            not DNS_SUBDOMAIN.match(pod["priorityClassName"]):
        errors.append("priorityClassName %r" % pod["priorityClassName"])
    if pod.get("terminationGracePeriodSeconds", 0) < 0:
        errors.append("terminationGracePeriodSeconds below 0")
    check_labels(pod.get("nodeSelector"), "nodeSelector", errors)
    for t in pod.get("tolerations", []):
        op = t.get("operator", "Equal")
        if op not in ("Exists", "Equal") or (op == "Exists" and
                                             t.get("value")):
            errors.append("toleration %r" % t)
    sp = (pod.get("securityContext") or {}).get("seccompProfile")
    if sp is not None:
        if sp["type"] not in ("RuntimeDefault", "Unconfined", "Localhost"):
            errors.append("seccompProfile.type %r" % sp["type"])
        if (sp["type"] == "Localhost") != ("localhostProfile" in sp):
            errors.append("seccompProfile: localhostProfile with Localhost "
                          "only, and always then")

    volumes = {}
    for v in pod.get("volumes", []):
        n = v["name"]
        if not DNS_LABEL.match(n) or len(n) > 63:
            errors.append("volume %r: not a DNS-1123 label" % n)
        if n in volumes:
            errors.append("volume %r twice" % n)
        volumes[n] = v
        sources = set(v) - {"name"}
        if len(sources) != 1:
            errors.append("volume %r: %d sources" % (n, len(sources)))
        if "hostPath" in v:
            hp = v["hostPath"]
            if hp.get("type", "") not in (
                    "", "DirectoryOrCreate", "Directory", "FileOrCreate",
                    "File", "Socket", "CharDevice", "BlockDevice"):
                errors.append("volume %r: hostPath type %r" %
                              (n, hp["type"]))
            if ".." in hp["path"].split("/") or \
                    not hp["path"].startswith("/"):
                errors.append("volume %r: hostPath %r" % (n, hp["path"]))
        if "configMap" in v:
            if v["configMap"]["name"] != cm["metadata"]["name"]:
                errors.append("volume %r names ConfigMap %r, not this one" %
                              (n, v["configMap"]["name"]))
            for item in v["configMap"].get("items", []):
                # The kubelet, not the server, fails a missing key.
                if item["key"] not in cm["data"]:
                    errors.append("volume %r: key %r not in the ConfigMap"
                                  % (n, item["key"]))
                p = item["path"]
                if p.startswith("/") or ".." in p.split("/"):
                    errors.append("volume %r: item path %r" % (n, p))
    names = set()
    for group in ("initContainers", "containers"):
        if group == "containers" and not pod.get(group):
            errors.append("containers: required")
        for i, c in enumerate(pod.get(group, [])):
            path = "%s[%d]" % (group, i)
            if c.get("name") in names:
                errors.append("%s: name %r twice" % (path, c["name"]))
            names.add(c.get("name"))
            check_container(c, path, volumes, errors)
    for i, c in enumerate(pod.get("initContainers", [])):
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            if probe in c:
                errors.append("initContainers[%d]: no %s allowed" %
                              (i, probe))
    return errors


def test_names_and_rules_the_server_checks():
    objs = {d["kind"]: d for d in docs()}
    errors = server_rules(objs["ConfigMap"], objs["DaemonSet"])
    assert not errors, "\n".join(errors)


def test_the_checks_catch_what_they_should():
    """Each check, fed a manifest spoiled in one place, says so."""
    import copy
    base = {d["kind"]: d for d in docs()}
    ds = base["DaemonSet"]
    spoils = [
        ("unknown field", lambda d: d["spec"].__setitem__("replicas", 1)),
        ("not an integer", lambda d: d["spec"]["template"]["spec"]
         .__setitem__("terminationGracePeriodSeconds", "30")),
        ("must not be `None`", lambda d: d["spec"]["template"]["spec"]
         ["containers"][0].pop("name")),
        ("not a boolean", lambda d: d["spec"]["template"]["spec"]
         .__setitem__("hostNetwork", "true")),
    ]
    for what, spoil in spoils:
        d = copy.deepcopy(ds)
        spoil(d)
        errors = []
        check_model(d, k8s.V1DaemonSet, "ds", errors)
        assert any(what in e for e in errors), (what, errors)

    def pod(d):
        return d["spec"]["template"]["spec"]
    rules = [
        ("does not match", lambda d: d["spec"]["template"]["metadata"]
         ["labels"].__setitem__("app.kubernetes.io/name", "other")),
        ("not a DNS-1123 label", lambda d: pod(d)["containers"][0]
         .__setitem__("name", "Enid_")),
        ("names no volume", lambda d: pod(d)["containers"][0]
         ["volumeMounts"][0].__setitem__("name", "nope")),
        ("request above its limit", lambda d: pod(d)["containers"][0]
         ["resources"]["requests"].__setitem__("memory", "1Gi")),
        ("not a quantity", lambda d: pod(d)["containers"][0]["resources"]
         ["limits"].__setitem__("memory", "128 MB")),
        ("not the kernel's", lambda d: pod(d)["containers"][0]
         ["securityContext"]["capabilities"]["add"].append("CAP_NET_ADMIN")),
        ("twice", lambda d: pod(d)["initContainers"][0]
         .__setitem__("name", "enid")),
        ("restarts Always", lambda d: pod(d)
         .__setitem__("restartPolicy", "Never")),
        ("both 0", lambda d: d["spec"]["updateStrategy"]["rollingUpdate"]
         .__setitem__("maxUnavailable", 0)),
        ("not in the ConfigMap", lambda d: pod(d)["volumes"][0]["configMap"]
         ["items"][0].__setitem__("key", "enid.json")),
        ("is not a valid name", lambda d: pod(d)["initContainers"][-1]
         ["env"][0].__setitem__("name", "1 BAD")),
    ]
    for what, spoil in rules:
        d = copy.deepcopy(ds)
        spoil(d)
        errors = server_rules(base["ConfigMap"], d)
        assert any(what in e for e in errors), (what, errors)
