"""enid-cni's own checks: VERSION, and CNI errors on stdout with the
spec's codes for bad environment, configuration and an absent daemon."""
import json
import subprocess

from conftest import built

CONF = {"cniVersion": "1.0.0", "name": "pods", "type": "enid-cni",
        "socket": "/nonexistent/enid-cni-test.sock"}
ENV = {"CNI_COMMAND": "ADD", "CNI_CONTAINERID": "c1", "CNI_IFNAME": "eth0",
       "CNI_NETNS": "/run/netns/none", "CNI_PATH": "/usr/lib/cni",
       "CNI_ARGS": "K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0"}


def run(env, stdin):
    r = subprocess.run([built("cni/enid-cni")], input=stdin, env=env,
                       capture_output=True, text=True, timeout=10)
    return r.returncode, (json.loads(r.stdout) if r.stdout else None)


def test_version():
    rc, out = run({"CNI_COMMAND": "VERSION"}, "")
    assert rc == 0
    assert "1.1.0" in out["supportedVersions"]
    assert "1.0.0" in out["supportedVersions"]


def test_errors_carry_spec_codes():
    cases = [
        ({}, json.dumps(CONF), 4, "CNI_COMMAND is not set"),
        ({**ENV, "CNI_COMMAND": "FLY"}, json.dumps(CONF), 4,
         'unknown CNI_COMMAND "FLY"'),
        ({**ENV, "CNI_CONTAINERID": ""}, json.dumps(CONF), 4,
         "CNI_CONTAINERID is not set"),
        ({**ENV, "CNI_ARGS": "novalue"}, json.dumps(CONF), 4,
         'CNI_ARGS: "novalue" is not KEY=VALUE'),
        (ENV, "{not json", 6, "not valid JSON"),
        (ENV, "[]", 6, "not a JSON object"),
        (ENV, json.dumps({**CONF, "cniVersion": "0.1.0"}), 1,
         'cniVersion "0.1.0" not supported'),
        (ENV, json.dumps({**CONF, "type": "bridge"}), 7,
         'type "bridge" is not enid-cni'),
        (ENV, json.dumps({**CONF, "socket": 5}), 7,
         '"socket" must be a string'),
        (ENV, json.dumps(CONF), 11, "cannot reach enid at "
         "/nonexistent/enid-cni-test.sock"),
    ]
    for env, stdin, code, msg in cases:
        rc, out = run(env, stdin)
        assert rc != 0, (env, stdin)
        assert out["code"] == code, (out, env, stdin)
        assert msg in out["msg"], out
        assert "cniVersion" in out


def test_del_needs_no_netns():
    env = {k: v for k, v in ENV.items() if k != "CNI_NETNS"}
    env["CNI_COMMAND"] = "DEL"
    rc, out = run(env, json.dumps(CONF))
    # Gets as far as the socket: the missing netns is not an error.
    assert out["code"] == 11, out
