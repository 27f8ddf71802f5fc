"""enid-cni's own checks, without a daemon: VERSION, and CNI errors on
stdout with the spec's codes (naming the variable or key at fault) for a
bad environment, undecodable input, an unsupported version, a bad
configuration, a CNI_NETNS that is not a network namespace, and an absent
daemon.  Nothing here reaches the point of changing the node."""
import json
import os
import subprocess

from conftest import built

CONF = {"cniVersion": "1.0.0", "name": "pods", "type": "enid-cni",
        "socket": "/nonexistent/enid-cni-test.sock"}
ENV = {"CNI_COMMAND": "ADD", "CNI_CONTAINERID": "c1", "CNI_IFNAME": "eth0",
       "CNI_NETNS": "/run/netns/none", "CNI_PATH": "/usr/lib/cni",
       "CNI_ARGS": "K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0"}


def run(env, stdin, binary="cni/enid-cni"):
    r = subprocess.run([built(binary)], input=stdin, env=env,
                       capture_output=True, text=True, timeout=10)
    return r.returncode, (json.loads(r.stdout) if r.stdout else None)


def links():
    r = subprocess.run(["ip", "-j", "link", "show"], capture_output=True,
                       text=True, check=True)
    return sorted(l["ifname"] for l in json.loads(r.stdout))


def test_version():
    rc, out = run({"CNI_COMMAND": "VERSION"}, "")
    assert rc == 0
    assert out["cniVersion"] == "1.1.0"
    assert out["supportedVersions"] == ["0.4.0", "1.0.0", "1.1.0"]
    rc, out = run({"CNI_COMMAND": "VERSION"}, '{"cniVersion": "0.4.0"}')
    assert rc == 0 and out["cniVersion"] == "0.4.0"


def check_cases(cases, binary="cni/enid-cni"):
    before = links()
    for env, stdin, code, msg in cases:
        rc, out = run(env, stdin, binary)
        assert rc == 1, (env, stdin, out)
        assert out["code"] == code, (out, env, stdin)
        assert msg in out["msg"], (msg, out)
        assert set(out) <= {"cniVersion", "code", "msg", "details"}, out
        assert out["cniVersion"] in ("0.4.0", "1.0.0", "1.1.0"), out
    assert links() == before


def test_bad_environment_names_the_variable():
    conf = json.dumps(CONF)
    check_cases([
        ({}, conf, 4, "CNI_COMMAND is not set"),
        ({**ENV, "CNI_COMMAND": "FLY"}, conf, 4, 'unknown CNI_COMMAND "FLY"'),
        ({**ENV, "CNI_CONTAINERID": ""}, conf, 4,
         "CNI_CONTAINERID is not set"),
        ({**ENV, "CNI_CONTAINERID": "../x"}, conf, 4,
         'CNI_CONTAINERID "../x" is not a container id'),
        ({**ENV, "CNI_CONTAINERID": "c" * 257}, conf, 4,
         "is not a container id"),
        ({k: v for k, v in ENV.items() if k != "CNI_IFNAME"}, conf, 4,
         "CNI_IFNAME is not set"),
        ({**ENV, "CNI_IFNAME": "eth0:1"}, conf, 4,
         'CNI_IFNAME "eth0:1" is not an interface name'),
        ({**ENV, "CNI_IFNAME": "a-very-long-ifname"}, conf, 4,
         "is not an interface name"),
        ({k: v for k, v in ENV.items() if k != "CNI_NETNS"}, conf, 4,
         "CNI_NETNS is not set"),
        ({**ENV, "CNI_COMMAND": "CHECK", "CNI_NETNS": ""}, conf, 4,
         "CNI_NETNS is not set"),
        ({**ENV, "CNI_NETNS": "netns/p1"}, conf, 4,
         'CNI_NETNS "netns/p1" is not an absolute path'),
        ({**ENV, "CNI_ARGS": "novalue"}, conf, 4,
         'CNI_ARGS: "novalue" is not KEY=VALUE'),
        ({**ENV, "CNI_ARGS": "K8S_POD_NAME=a\tb"}, conf, 4,
         "CNI_ARGS: K8S_POD_NAME must be printable ASCII"),
        ({**ENV, "CNI_ARGS": "K8S_POD_UID=" + "u" * 65}, conf, 4,
         "CNI_ARGS: K8S_POD_UID is longer than 64 bytes"),
        ({**ENV, "CNI_ARGS": "x" * 5000}, conf, 4,
         "CNI_ARGS is longer than 4096 bytes"),
    ])


def test_undecodable_and_unsupported_input():
    check_cases([
        (ENV, "{not json", 6, "not valid JSON"),
        (ENV, "", 6, "not valid JSON"),
        (ENV, "[]", 6, "not a JSON object"),
        (ENV, json.dumps(CONF) + "{}", 6, "text after the object"),
        (ENV, '{"a": "\\u0000"}', 7, 'missing "cniVersion"'),
        (ENV, "{" + '"x":' * 100000 + "1", 6, "larger than"),
        (ENV, json.dumps({**CONF, "cniVersion": "0.1.0"}), 1,
         'cniVersion "0.1.0" not supported'),
        (ENV, json.dumps({**CONF, "cniVersion": "2.0.0"}), 1,
         "not supported (0.4.0, 1.0.0, 1.1.0)"),
        ({**ENV, "CNI_COMMAND": "STATUS"}, json.dumps(CONF), 1,
         "STATUS needs cniVersion 1.1.0"),
    ])


def test_bad_configuration_names_the_key():
    check_cases([
        (ENV, json.dumps({**CONF, "type": "bridge"}), 7,
         'type "bridge" is not enid-cni'),
        (ENV, json.dumps({k: v for k, v in CONF.items() if k != "name"}),
         7, 'missing "name"'),
        (ENV, json.dumps({**CONF, "socket": 5}), 7,
         '"socket" must be a string'),
        (ENV, json.dumps({**CONF, "mtu": 20}), 7,
         '"mtu" must be an integer from 68 to 65535'),
        (ENV, json.dumps({**CONF, "veth_prefix": "way-too-long"}), 7,
         '"veth_prefix" must be 1 to 7 of a-z 0-9'),
        (ENV, json.dumps({**CONF, "ipam": {"type": "host-local"}}), 7,
         'remove "ipam"'),
        (ENV, json.dumps({**CONF, "colour": "blue"}), 2,
         'unsupported field "colour": "blue"'),
        (ENV, json.dumps({**CONF, "prevResult": {"ips": [{"address": 1}]}}),
         7, "prevResult.ips[0] needs an \"address\""),
        ({**ENV, "CNI_COMMAND": "CHECK"}, json.dumps(CONF), 7,
         'CHECK needs "prevResult"'),
        ({"CNI_COMMAND": "GC"}, json.dumps({**CONF, "cniVersion": "1.1.0"}),
         7, 'GC needs "cni.dev/valid-attachments"'),
    ])
    # The IPAM role reads the main plugin's configuration.
    ptp = {"cniVersion": "1.0.0", "name": "n", "type": "ptp"}
    check_cases([
        (ENV, json.dumps(ptp), 7, 'missing "ipam"'),
        (ENV, json.dumps({**ptp, "ipam": {"type": "host-local"}}), 7,
         'ipam: type "host-local" is not enid-ipam'),
        (ENV, json.dumps({**ptp, "ipam": {"type": "enid-ipam",
                                          "ranges": []}}), 2,
         'ipam: unsupported field "ranges": []'),
    ], binary="cni/enid-ipam")


def test_netns_that_is_not_a_network_namespace(tmp_path):
    plain = tmp_path / "plain"
    plain.write_text("")
    conf = json.dumps(CONF)
    check_cases([
        ({**ENV, "CNI_NETNS": str(plain)}, conf, 4,
         "is not a namespace file"),
        ({**ENV, "CNI_NETNS": "/proc/self/ns/mnt"}, conf, 4,
         "is not a network namespace"),
        ({**ENV, "CNI_NETNS": "/proc/%d/ns/net" % os.getpid()}, conf, 4,
         "is the node's own network namespace"),
        ({**ENV, "CNI_NETNS": "/run/netns/enid-no-such-ns"}, conf, 4,
         "CNI_NETNS /run/netns/enid-no-such-ns: No such file"),
    ])


def test_absent_daemon(netns):
    env = {**ENV, "CNI_NETNS": "/run/netns/" + netns}
    conf = json.dumps(CONF)
    check_cases([
        (env, conf, 11, "cannot reach enid at "
         "/nonexistent/enid-cni-test.sock"),
        ({**env, "CNI_COMMAND": "CHECK"},
         json.dumps({**CONF, "prevResult": {"ips": [
             {"address": "10.0.0.5/32"}]}}), 11, "cannot reach enid"),
        ({"CNI_COMMAND": "STATUS"}, json.dumps({**CONF,
                                                "cniVersion": "1.1.0"}),
         50, "no ADD can be served: cannot reach enid"),
    ])


def test_del_needs_no_netns():
    env = {k: v for k, v in ENV.items() if k != "CNI_NETNS"}
    env["CNI_COMMAND"] = "DEL"
    rc, out = run(env, json.dumps(CONF))
    # Gets as far as the socket: the missing netns is not an error.
    assert out["code"] == 11, out
    assert "cannot reach enid" in out["msg"]
