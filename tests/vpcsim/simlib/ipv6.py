"""The VPC's IPv6 side: its /56, each subnet's /64 and the allocator of
single addresses and delegated /80s in it, and the addresses the sim
serves over IPv6.

All of it is off unless vpcsim runs with `--ipv6 dual`: an IPv4-only sim
answers exactly as it did before IPv6 existed here.  Every address is
documentation or benchmarking space (RFC 3849, RFC 5180) or EC2's own
fd00:ec2:: service addresses, so nothing leaks to a real network.
"""
import ipaddress
import secrets

from . import model as _model

VPC_CIDR6 = "2001:db8:a0b:1200::/56"    # the VPC's block (RFC 3849 space)
# The sim's services, outside the VPC's /56 as 198.18.0.0/24 is outside
# its IPv4 CIDR: 2001:2::/48 is IPv6's benchmarking range, as
# 198.18.0.0/15 is IPv4's.
EC2_ADDR6 = "2001:2::1"
VPC_HOST6 = "2001:2::10"
# What EC2 serves on a Nitro instance's link: IMDS, DNS and NTP.
IMDS_ADDR6 = "fd00:ec2::254"
DNS_ADDR6 = "fd00:ec2::253"
NTP_ADDR6 = "fd00:ec2::123"
# The VPC router on every ENI's link.
ROUTER_LL = "fe80:ec2::1"
OUTSIDE_HOST6 = "2001:db8:ff::10"      # beyond the internet gateway
# The gateway's link carries no global address, as in IPv4: each end's
# next hop is a link-local label with a permanent neighbour entry.
OUT_NEXT_HOP6 = "fe80::ff:10"          # the router's next hop (the outside host)
IGW_NEXT_HOP6 = "fe80::ff:1"           # the outside host's next hop (the router)

SUBNET_LEN = 64
PREFIX_LEN6 = 80                       # a delegated IPv6 prefix
PER_PREFIX_BITS = 128 - PREFIX_LEN6
BLOCKS = 1 << (PREFIX_LEN6 - SUBNET_LEN)     # /80s in a /64

# Association states (DescribeSubnets, DescribeVpcs): only "associated"
# may be used.
STATES = ("associating", "associated", "disassociating", "disassociated",
          "failing", "failed")

NO_IPV6 = "The subnet '%s' has no associated IPv6 CIDR block"


def subnet_cidr(index):
    """The /64 of the VPC's /56 that the index-th subnet gets."""
    net = ipaddress.IPv6Network(VPC_CIDR6)
    return str(ipaddress.IPv6Network((int(net.network_address) +
                                      (index << (128 - SUBNET_LEN)), SUBNET_LEN)))


def canon(addr):
    """An IPv6 address in canonical (compressed) form, or None."""
    try:
        return str(ipaddress.IPv6Address(addr))
    except ValueError:
        return None


def link_local(mac):
    """The modified EUI-64 link-local address a MAC gives (RFC 4291): the
    router's next hop for everything it delivers over an ENI's link."""
    b = [int(x, 16) for x in mac.split(":")]
    b[0] ^= 0x02
    eui = b[:3] + [0xff, 0xfe] + b[3:]
    return str(ipaddress.IPv6Address(bytes([0xfe, 0x80] + [0] * 6 + eui)))


def prefix_hosts6(cidr):
    net = ipaddress.IPv6Network(cidr)
    return int(net.network_address), int(net.broadcast_address)


class Block6:
    """A subnet's IPv6 CIDR association: its /64 and what is taken in it.

    EC2 reserves the /64's first four addresses and its last; a delegated
    /80 is aligned and clear of them, so the first and the last /80 are
    never delegated.  Single addresses come lowest-first from ::4 (the
    first /80, which no prefix can take) or, scattered, at random from
    the whole /64; a /80 holding a single address cannot be delegated.
    """

    def __init__(self, cidr, rng):
        self.net = ipaddress.IPv6Network(cidr)
        self.assoc_id = "subnet-cidr-assoc-" + secrets.token_hex(9)[:17]
        self.state = "associated"
        self.rng = rng
        self.base = int(self.net.network_address)
        # The VPC router answers at the subnet's ::1 too.
        self.gateway = str(ipaddress.IPv6Address(self.base + 1))
        self.first = self.base + 4
        self.last = int(self.net.broadcast_address) - 1
        self.addrs = set()          # ints: single addresses in use
        self.per_block = {}         # /80 index -> single addresses in it
        self.blocks = set()         # /80 indexes delegated

    def usable(self):
        return self.state == "associated"

    def in_use(self):
        return len(self.addrs)

    def _index(self, n):
        return (n - self.base) >> PER_PREFIX_BITS

    def _free(self, n):
        return n not in self.addrs and self._index(n) not in self.blocks

    def check_address(self, addr):
        """A named address, canonical, if it may be assigned."""
        c = canon(addr)
        if c is None:
            raise _model.Ec2Error("InvalidParameterValue",
                           "Invalid IPv6 address '%s'" % addr)
        n = int(ipaddress.IPv6Address(c))
        if not self.first <= n <= self.last:
            raise _model.Ec2Error("InvalidParameterValue",
                           "Address %s does not fall within the subnet's IPv6 "
                           "address range %s" % (c, self.net))
        if not self._free(n):
            raise _model.Ec2Error("InvalidParameterValue", "Address %s is in use." % c)
        return c

    def check_prefix(self, cidr):
        """A named /80, canonical, if this subnet could delegate it."""
        try:
            net = ipaddress.IPv6Network(cidr, strict=False)
        except ValueError:
            raise _model.Ec2Error("InvalidParameterValue",
                           "Invalid IPv6 prefix '%s': expected a CIDR such as "
                           "%s" % (cidr, ipaddress.IPv6Network(
                               (self.base + (1 << PER_PREFIX_BITS), PREFIX_LEN6))))
        if "/" not in cidr or net.prefixlen != PREFIX_LEN6:
            raise _model.Ec2Error("InvalidParameterValue",
                           "Invalid IPv6 prefix '%s': the prefix length must be "
                           "/%d" % (cidr, PREFIX_LEN6))
        if canon(cidr.split("/")[0]) != str(net.network_address):
            raise _model.Ec2Error("InvalidParameterValue",
                           "Invalid IPv6 prefix '%s': not aligned to a /%d "
                           "boundary (%s is)" % (cidr, PREFIX_LEN6, net))
        if not net.subnet_of(self.net):
            raise _model.Ec2Error("InvalidParameterValue",
                           "The prefix %s does not fall within the IPv6 CIDR %s"
                           % (net, self.net))
        i = self._index(int(net.network_address))
        if i == 0 or i == BLOCKS - 1:
            raise _model.Ec2Error("InvalidParameterValue",
                           "The prefix %s includes reserved addresses" % net)
        return str(net)

    def allocate(self, count, scattered):
        got = []
        if not scattered:
            n = self.first
            while len(got) < count and n <= self.last:
                i = self._index(n)
                if i in self.blocks:          # skip a delegated /80 whole
                    n = self.base + ((i + 1) << PER_PREFIX_BITS)
                    continue
                if n not in self.addrs:
                    got.append(n)
                n += 1
        else:
            while len(got) < count:
                n = self.rng.randint(self.first, self.last)
                if self._free(n) and n not in got:
                    got.append(n)
        for n in got:
            self._take(n)
        return [str(ipaddress.IPv6Address(n)) for n in got]

    def take(self, addr):
        self._take(int(ipaddress.IPv6Address(self.check_address(addr))))

    def _take(self, n):
        self.addrs.add(n)
        i = self._index(n)
        self.per_block[i] = self.per_block.get(i, 0) + 1

    def release(self, addrs):
        for a in addrs:
            n = int(ipaddress.IPv6Address(a))
            if n in self.addrs:
                self.addrs.discard(n)
                i = self._index(n)
                self.per_block[i] -= 1
                if not self.per_block[i]:
                    del self.per_block[i]

    def _whole(self, i):
        return 0 < i < BLOCKS - 1 and i not in self.blocks and \
            i not in self.per_block

    def claim_prefixes(self, named, count, scattered):
        """The /80s named (checked by check_prefix) or `count` whole ones;
        all or none."""
        for p in named:
            if not self._whole(self._index(int(ipaddress.IPv6Network(p)
                                                  .network_address))):
                raise _model.Ec2Error("InvalidParameterValue",
                               "The prefix %s overlaps addresses in use." % p)
        if named:
            idx = [self._index(int(ipaddress.IPv6Network(p).network_address))
                   for p in named]
        elif scattered:
            idx = []
            for _ in range(64 * count + 64):
                if len(idx) == count:
                    break
                i = self.rng.randint(1, BLOCKS - 2)
                if self._whole(i) and i not in idx:
                    idx.append(i)
        else:
            idx = []
            i = 1
            while len(idx) < count and i < BLOCKS - 1:
                if self._whole(i):
                    idx.append(i)
                i += 1
        if len(idx) < (len(named) or count):
            raise _model.Ec2Error("InsufficientCidrBlocks",
                           "The specified subnet does not have enough free "
                           "cidr blocks to satisfy the request.")
        self.blocks.update(idx)
        return [str(ipaddress.IPv6Network((self.base + (i << PER_PREFIX_BITS),
                                           PREFIX_LEN6))) for i in idx]

    def release_prefixes(self, cidrs):
        for p in cidrs:
            self.blocks.discard(self._index(
                int(ipaddress.IPv6Network(p).network_address)))

    def free_blocks(self):
        return BLOCKS - 2 - len(self.blocks) - sum(
            1 for i in self.per_block if 0 < i < BLOCKS - 1)
