"""A peered network: 192.0.2.0/24 behind a VPC peering connection, in a
namespace of its own.

A peering connection routes between the two VPCs' private addresses
with no translation, in both directions, for any address of either
VPC: a pod's secondary address reaches it as it is, unlike the
internet gateway's world (simlib/outside.py).  A node that translates
everything beyond its VPC's CIDRs translates this traffic too unless
the peered CIDR is excluded (snat.exclude), which is what a test of an
exclusion needs: the peered host's whoami service (the same as the
outside host's, on the same port) shows which source it saw.

The peered side routes back only the VPC's CIDRs, as a peered VPC's
route table would: it cannot reach the sim's own services (198.18.0.0/24)
nor the internet gateway.
"""

PEERED_CIDR = "192.0.2.0/24"       # TEST-NET-1 (RFC 5737), never a real host
PEERED_HOST = "192.0.2.10"
PCX_IF = "pcx0"                    # the router's end of the peering link
PEER_IF = "eth0"                   # the peered network's end
PCX_MAC = "02:00:c0:00:02:01"
PEER_MAC = "02:00:c0:00:02:0a"
# As on the gateway's link: no address on the link, next hops with a
# permanent neighbour entry each.  The router's next hop is the peered
# host; the peered host's next hop is a label of its own range that no
# host gets.
ROUTER_NEXT_HOP = PEERED_HOST
PEER_NEXT_HOP = "192.0.2.1"


def router_cmds():
    """`ip -batch` lines for the router's side: the link (its peer goes
    straight into the peered namespace, `{peer}`) and the VPC route
    table's entry for the peering connection."""
    return ["link add %s address %s type veth peer name %s address %s netns {peer}"
            % (PCX_IF, PCX_MAC, PEER_IF, PEER_MAC),
            "link set %s up" % PCX_IF,
            "neigh replace %s lladdr %s dev %s nud permanent"
            % (ROUTER_NEXT_HOP, PEER_MAC, PCX_IF),
            "route add %s via %s dev %s onlink" % (PEERED_CIDR, ROUTER_NEXT_HOP, PCX_IF)]


def peer_cmds(vpc_cidrs):
    """The peered side: its host on lo, and a route back to each of the
    VPC's CIDRs (and nothing else)."""
    return ["link set lo up",
            "addr add %s/32 dev lo" % PEERED_HOST,
            "link set %s up" % PEER_IF,
            "neigh replace %s lladdr %s dev %s nud permanent"
            % (PEER_NEXT_HOP, PCX_MAC, PEER_IF)] + [
            "route add %s via %s dev %s onlink" % (c, PEER_NEXT_HOP, PEER_IF)
            for c in vpc_cidrs]
