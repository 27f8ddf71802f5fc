"""An ENI's own address set up over a running pod's (issue 35's review):
netd holds a pod's rule "to ADDR lookup main" for it, and a set-up that
puts ADDR on the ENI's link would make it the node's own (the local table
goes before every rule), taking the pod's inbound traffic to the node.
A pod's address is on no link of the node, so netd's check against the
links' addresses cannot see it; netd reads its pod rules too and refuses,
in either family, with the kernel unchanged."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_netd_ipv6 import (ENI6, POD4_A, POD6_A, SETUP, expect_refused,  # noqa
                            make_netd, netd, node, pytestmark)


@pytest.mark.parametrize("family", [4, 6])
def test_eni_address_over_a_pods_is_refused(node, netd, family):
    assert netd.call(SETUP)["status"] == "ok"
    r = netd.call("addpod addr=%s addr6=%s table=101" % (POD4_A, POD6_A))
    assert r["status"] == "ok", r
    if family == 6:
        line = SETUP.replace("addr6=%s" % ENI6, "addr6=%s" % POD6_A)
    else:
        line = SETUP.replace("addr=10.0.16.5/20", "addr=%s/20" % POD4_A)
    expect_refused(node, netd, line, "pod")
