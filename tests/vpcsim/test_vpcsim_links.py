"""--dataplane links: attached ENIs get their links (a daemon can find and
configure them) but the router gets no routes for their addresses, only
for each node's own, so a rollout of many nodes costs the sim one exec
per ENI."""
import json
import os
import signal
import subprocess
import tempfile
import time

from conftest import VPCSIM, Agent, Sim, netns_list
from test_vpcsim_dataplane import link_by_mac

PREFIX = "vsl%d" % (os.getpid() % 100000)


def test_links_without_routes():
    state = tempfile.mkdtemp(prefix="vpcsim-links-")
    log = open(os.path.join(state, "vpcsim.log"), "w")
    proc = subprocess.Popen(
        [VPCSIM, "--nodes", "1", "--state", state, "--prefix", PREFIX,
         "--dataplane", "links", "--attach-delay-ms", "20"],
        stdout=log, stderr=subprocess.STDOUT)
    agent = None
    try:
        path = os.path.join(state, "endpoints.json")
        end = time.monotonic() + 20
        while not os.path.exists(path):
            assert proc.poll() is None and time.monotonic() < end, \
                open(log.name).read()
            time.sleep(0.05)
        with open(path) as f:
            ep = json.load(f)
        sim = Sim(proc, state, ep, log.name)
        node = ep["nodes"][0]
        agent = Agent(node["netns"], ep)
        e = agent.ok("CreateNetworkInterface", SubnetId=node["subnet_id"],
                     SecondaryPrivateIpAddressCount=2)["NetworkInterface"]
        agent.ok("AttachNetworkInterface",
                 NetworkInterfaceId=e["NetworkInterfaceId"],
                 InstanceId=node["instance_id"], DeviceIndex=1)
        name, _ = sim.wait_for(lambda: link_by_mac(sim, node["netns"],
                                                   e["MacAddress"]), 5,
                               what="the ENI's link")
        assert name == "eth1"
        # A delegated prefix is not routed either.
        prefix = agent.ok("AssignPrivateIpAddresses",
                          NetworkInterfaceId=e["NetworkInterfaceId"],
                          Ipv4PrefixCount=1)["AssignedIpv4Prefixes"][0]["Ipv4Prefix"]
        sim.wait_dataplane()
        assert sim.eni_state(e["NetworkInterfaceId"])["link"]["routes"] == []
        routes = sim.nsexec(ep["vpc_netns"], "ip", "-4", "route",
                            "show").stdout
        for p in e["PrivateIpAddresses"]:
            assert p["PrivateIpAddress"] + " " not in routes, routes
        assert prefix.split("/")[0] not in routes, routes
        # The node's own address is routed: its daemon reaches IMDS.
        assert node["primary_ip"] + " dev " in routes, routes
    finally:
        if agent is not None:
            agent.close()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
        log.close()
        assert not [n for n in netns_list() if n.startswith(PREFIX + "-")]
