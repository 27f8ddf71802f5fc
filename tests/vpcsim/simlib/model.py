"""The simulated EC2 account: subnets, instances, ENIs, credentials, rate
buckets, fault rules, and the actions of the EC2 Query API subset.

Everything mutable lives in one Sim object guarded by Sim.lock.  Actions
take the form parameters (a dict of str -> str) and return a nested
structure that ec2api renders as XML: dict = child elements in order,
list = <item> members, bool = true/false, None = omitted.  Failures raise
Ec2Error carrying EC2's code, message and HTTP status.
"""
import base64
import collections
import fnmatch
import heapq
import ipaddress
import json
import random
import re
import secrets
import string
import threading
import time

from . import ipv6 as v6

NAMESPACE = "http://ec2.amazonaws.com/doc/2016-11-15/"
OWNER_ID = "111122223333"

# HTTP status EC2 uses per code; anything else a client did wrong is 400.
STATUS_BY_CODE = {
    "AuthFailure": 401,
    "UnauthorizedOperation": 403,
    "RequestLimitExceeded": 503,
    "InternalError": 500,
    "InternalFailure": 500,
    "Unavailable": 503,
    "ServiceUnavailable": 503,
    "DryRunOperation": 412,
}


class Ec2Error(Exception):
    def __init__(self, code, message, status=None):
        super().__init__("%s: %s" % (code, message))
        self.code = code
        self.message = message
        self.status = status or STATUS_BY_CODE.get(code, 400)
        self.explicit_status = status


def hexid(prefix):
    return prefix + secrets.token_hex(9)[:17]


def iso8601(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + \
        ".%03dZ" % int((t % 1) * 1000)


def iso8601_s(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


# ---------------------------------------------------------------- parameters

def need(params, name):
    v = params.get(name)
    if v is None or v == "":
        raise Ec2Error("MissingParameter",
                       "The request must contain the parameter %s" % name)
    return v


def indexed(params, prefix):
    """Values of prefix.1, prefix.2, ... ordered by index (gaps allowed)."""
    pat = re.compile(re.escape(prefix) + r"\.(\d+)$")
    found = []
    for k, v in params.items():
        m = pat.match(k)
        if m:
            found.append((int(m.group(1)), v))
    return [v for _, v in sorted(found)]


def indexed_groups(params, prefix):
    """{N: {rest: value}} for keys prefix.N.rest."""
    pat = re.compile(re.escape(prefix) + r"\.(\d+)\.(.+)$")
    groups = {}
    for k, v in params.items():
        m = pat.match(k)
        if m:
            groups.setdefault(int(m.group(1)), {})[m.group(2)] = v
    return [groups[i] for i in sorted(groups)]


def as_int(params, name, lo=None, hi=None):
    v = params.get(name)
    if v is None:
        return None
    try:
        n = int(v)
    except ValueError:
        raise Ec2Error("InvalidParameterValue",
                       "Invalid value '%s' for %s" % (v, name))
    if (lo is not None and n < lo) or (hi is not None and n > hi):
        raise Ec2Error("InvalidParameterValue",
                       "Value (%d) for parameter %s is invalid. It must be "
                       "between %s and %s" % (n, name, lo, hi))
    return n


def as_bool(params, name):
    v = params.get(name)
    if v is None:
        return None
    if v.lower() == "true":
        return True
    if v.lower() == "false":
        return False
    raise Ec2Error("InvalidParameterValue",
                   "Invalid value '%s' for %s: expected true or false" % (v, name))


def parse_filters(params):
    filters = []
    for g in indexed_groups(params, "Filter"):
        name = g.get("Name")
        if not name:
            raise Ec2Error("MissingParameter",
                           "The request must contain the parameter Filter.N.Name")
        values = [v for k, v in sorted(
            ((k, v) for k, v in g.items() if re.match(r"Value\.\d+$", k)),
            key=lambda kv: int(kv[0].split(".")[1]))]
        filters.append((name, values))
    return filters


def match_values(actual, values):
    """EC2 filter semantics: any value matches, * and ? are wildcards."""
    actual = [a for a in (actual if isinstance(actual, (list, tuple)) else [actual])
              if a is not None]
    for v in values:
        for a in actual:
            if fnmatch.fnmatchcase(str(a), v):
                return True
    return False


# Parameters each action accepts (regexes).  Anything else is UnknownParameter,
# as EC2 answers; it catches typos in a client early.
COMMON = [r"Action", r"Version", r"DryRun"]
PAGING = [r"MaxResults", r"NextToken"]
FILTER = [r"Filter\.\d+\.Name", r"Filter\.\d+\.Value\.\d+"]
ACCEPTS = {
    "DescribeInstances": [r"InstanceId\.\d+"] + FILTER + PAGING,
    "DescribeInstanceTypes": [r"InstanceType\.\d+"] + FILTER + PAGING,
    "DescribeSubnets": [r"SubnetId\.\d+"] + FILTER + PAGING,
    "DescribeNetworkInterfaces": [r"NetworkInterfaceId\.\d+"] + FILTER + PAGING,
    "DescribeVpcs": [r"VpcId\.\d+"] + FILTER + PAGING,
    "CreateNetworkInterface": [
        r"SubnetId", r"SecurityGroupId\.\d+", r"Description",
        r"SecondaryPrivateIpAddressCount", r"PrivateIpAddress",
        r"PrivateIpAddresses\.\d+\.(PrivateIpAddress|Primary)",
        r"TagSpecification\.\d+\.ResourceType",
        r"TagSpecification\.\d+\.Tag\.\d+\.(Key|Value)",
        r"ClientToken", r"InterfaceType",
        r"Ipv4PrefixCount", r"Ipv4Prefix\.\d+\.Ipv4Prefix",
        r"Ipv6AddressCount", r"Ipv6Addresses\.\d+\.Ipv6Address",
        r"Ipv6PrefixCount", r"Ipv6Prefix\.\d+\.Ipv6Prefix"],
    "AttachNetworkInterface": [r"NetworkInterfaceId", r"InstanceId",
                               r"DeviceIndex", r"NetworkCardIndex"],
    "ModifyNetworkInterfaceAttribute": [
        r"NetworkInterfaceId", r"Attachment\.AttachmentId",
        r"Attachment\.DeleteOnTermination", r"Description\.Value",
        r"SourceDestCheck\.Value", r"SecurityGroupId\.\d+"],
    "AssignPrivateIpAddresses": [r"NetworkInterfaceId", r"PrivateIpAddress\.\d+",
                                 r"SecondaryPrivateIpAddressCount",
                                 r"AllowReassignment", r"Ipv4PrefixCount",
                                 r"Ipv4Prefix\.\d+"],
    "UnassignPrivateIpAddresses": [r"NetworkInterfaceId", r"PrivateIpAddress\.\d+",
                                   r"Ipv4Prefix\.\d+"],
    "AssignIpv6Addresses": [r"NetworkInterfaceId", r"Ipv6AddressCount",
                            r"Ipv6Addresses\.\d+", r"Ipv6PrefixCount",
                            r"Ipv6Prefix\.\d+"],
    "UnassignIpv6Addresses": [r"NetworkInterfaceId", r"Ipv6Addresses\.\d+",
                              r"Ipv6Prefix\.\d+"],
    "DetachNetworkInterface": [r"AttachmentId", r"Force"],
    "DeleteNetworkInterface": [r"NetworkInterfaceId"],
    "CreateTags": [r"ResourceId\.\d+", r"Tag\.\d+\.(Key|Value)"],
    "DeleteTags": [r"ResourceId\.\d+", r"Tag\.\d+\.(Key|Value)"],
}
ACCEPTS_RE = {a: re.compile("^(?:" + "|".join(COMMON + p) + ")$")
              for a, p in ACCEPTS.items()}
MUTATING = {"CreateNetworkInterface", "AttachNetworkInterface",
            "ModifyNetworkInterfaceAttribute", "AssignPrivateIpAddresses",
            "UnassignPrivateIpAddresses", "DetachNetworkInterface",
            "DeleteNetworkInterface", "CreateTags", "DeleteTags",
            "AssignIpv6Addresses", "UnassignIpv6Addresses"}


# ---------------------------------------------------------------- rate limits

# (capacity, refill per second) -- EC2's published defaults.
BUCKET_DEFAULTS = {
    "non-mutating": (100, 20),
    "unfiltered": (50, 10),
    "mutating": (50, 5),
    "CreateNetworkInterface": (100, 5),
    "DeleteNetworkInterface": (100, 5),
    "ModifyNetworkInterfaceAttribute": (100, 5),
    "AssignPrivateIpAddresses": (100, 5),
    "UnassignPrivateIpAddresses": (100, 5),
    "CreateTags": (100, 10),
}


def bucket_for(action, params):
    if action in BUCKET_DEFAULTS:
        return action
    if action.startswith("Describe"):
        narrowed = any(re.match(r"(Filter|InstanceId|NetworkInterfaceId|SubnetId|"
                                r"InstanceType|VpcId)\.\d+", k) for k in params) \
            or "MaxResults" in params
        return "non-mutating" if narrowed else "unfiltered"
    return "mutating" if action in MUTATING else "non-mutating"


class Bucket:
    def __init__(self, capacity, refill):
        self.capacity = float(capacity)
        self.refill = float(refill)
        self.tokens = self.capacity
        self.stamp = time.monotonic()

    def take(self):
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.refill)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


# ---------------------------------------------------------------- scheduler

class Scheduler:
    """One thread running callbacks at deadlines (heap + condition)."""

    def __init__(self, on_error):
        self.cv = threading.Condition()
        self.heap = []
        self.seq = 0
        self.stopping = False
        self.on_error = on_error
        self.thread = threading.Thread(target=self._run, name="sched", daemon=True)
        self.thread.start()

    def after(self, delay_s, fn):
        with self.cv:
            self.seq += 1
            heapq.heappush(self.heap, (time.monotonic() + max(0.0, delay_s),
                                       self.seq, fn))
            self.cv.notify()

    def stop(self):
        with self.cv:
            self.stopping = True
            self.cv.notify()
        self.thread.join(5)

    def _run(self):
        while True:
            with self.cv:
                while not self.stopping:
                    now = time.monotonic()
                    if self.heap and self.heap[0][0] <= now:
                        break
                    wait = (self.heap[0][0] - now) if self.heap else 1.0
                    self.cv.wait(min(wait, 1.0))
                if self.stopping:
                    return
                _, _, fn = heapq.heappop(self.heap)
            try:
                fn()
            except Exception as e:  # keep the scheduler alive
                self.on_error("scheduler: %r" % e)


# ---------------------------------------------------------------- instance types

# What DescribeInstanceTypes says of a type besides its limits.  Prefix
# delegation needs a Nitro instance: hypervisor "nitro", or bare metal
# (which EC2 reports with no hypervisor at all).
NITRO = {"hypervisor": "nitro", "bare_metal": False, "vcpus": 4,
         "memory_mib": 16384, "network": "Up to 10 Gigabit", "ena": "required",
         "ipv6": True}

# Real types the sim knows besides the configured one, with EC2's limits:
# DescribeInstanceTypes lists them, and --node-type gives a node one.
CATALOG = {
    "m4.large": dict(enis=2, ips=10, hypervisor="xen", bare_metal=False, vcpus=2,
                     memory_mib=8192, network="Moderate", ena="unsupported",
                     ipv6=True),
    "m5.metal": dict(enis=15, ips=50, hypervisor=None, bare_metal=True, vcpus=96,
                     memory_mib=393216, network="25 Gigabit", ena="required",
                     ipv6=True),
    # A previous generation that takes no IPv6 at all (ipv6Supported false).
    "c1.medium": dict(enis=2, ips=6, hypervisor="xen", bare_metal=False, vcpus=2,
                      memory_mib=1740, network="Moderate", ena="unsupported",
                      ipv6=False),
}


def traits_of(name):
    t = CATALOG.get(name)
    return {k: t[k] for k in NITRO} if t else dict(NITRO)


# ---------------------------------------------------------------- the model

# A delegated prefix is an aligned /28: sixteen addresses, all usable.
PREFIX_LEN = 28
PREFIX_SIZE = 1 << (32 - PREFIX_LEN)

PREFIX_LOG_MAX = 100000

NO_ROOM_FOR_PREFIXES = "There aren't sufficient free Ipv4 addresses or prefixes"


def prefix_hosts(cidr):
    """The sixteen addresses of a /28, as strings."""
    return [str(a) for a in ipaddress.IPv4Network(cidr)]


def _ip(n):
    return str(ipaddress.IPv4Address(n))


class Subnet:
    def __init__(self, sid, cidr, az, vpc_id, rng, scattered=False):
        self.id = sid
        self.az = az
        self.vpc_id = vpc_id
        # IPv6 (simlib/ipv6.py): the /64's association, or None; an
        # IPv6-only (ipv6Native) subnet has no IPv4 CIDR at all (cidr
        # None): no address, no prefix, nothing free.
        self.v6 = None
        self.ipv6_native = cidr is None
        self.auto_ipv6 = False            # assignIpv6AddressOnCreation
        self.net = ipaddress.IPv4Network(cidr) if cidr else None
        self.gateway = str(self.net.network_address + 1) if cidr else None
        # EC2 reserves the first four addresses and the last one.
        self.first = int(self.net.network_address) + 4 if cidr else 1
        self.last = int(self.net.broadcast_address) - 1 if cidr else 0
        self.total = self.last - self.first + 1
        self.in_use = set()            # every address held, prefixes' too
        self.prefixes = set()          # the /28s ENIs hold
        self.blockers = set()          # addresses the fragment control holds
        self.cap = self.total          # in-use ceiling; POST /subnets sets it
        self.tags = {}
        self.rng = rng
        self.scattered = scattered     # single addresses drawn at random
        # The aligned /28s clear of the reserved addresses: all but the
        # subnet's first (.0-.3) and its last (the broadcast address).
        self.block_bases = list(range(int(self.net.network_address) + PREFIX_SIZE,
                                      int(self.net.broadcast_address) + 1 -
                                      PREFIX_SIZE, PREFIX_SIZE)) if cidr else []

    def v6_or_refuse(self):
        """The IPv6 block, if the subnet has one associated; EC2 answers
        any IPv6 request in a subnet without one InvalidParameterValue."""
        if self.v6 is None or not self.v6.usable():
            raise Ec2Error("InvalidParameterValue", v6.NO_IPV6 % self.id)
        return self.v6

    def v4_or_refuse(self):
        if self.net is None:
            raise Ec2Error("InvalidParameterValue",
                           "Subnet '%s' is IPv6-only: it has no IPv4 addresses"
                           % self.id)

    def free(self):
        return max(0, min(self.cap, self.total) - len(self.in_use))

    def contains(self, addr):
        try:
            n = int(ipaddress.IPv4Address(addr))
        except ValueError:
            return False
        return self.first <= n <= self.last

    def free_blocks(self):
        """Bases (ints) of the aligned /28s with no address in use."""
        return [b for b in self.block_bases
                if not any(_ip(b + i) in self.in_use for i in range(PREFIX_SIZE))]

    def _pick(self, count):
        """count free addresses: the lowest, or (scattered) drawn at random
        from the whole range, so that the subnet fragments as a long-lived
        one does."""
        got = []
        if not self.scattered:
            n = self.first
            while len(got) < count and n <= self.last:
                if _ip(n) not in self.in_use:
                    got.append(_ip(n))
                n += 1
            return got
        seen = set()
        for _ in range(64 * count):
            if len(got) == count:
                break
            a = _ip(self.rng.randint(self.first, self.last))
            if a not in self.in_use and a not in seen:
                seen.add(a)
                got.append(a)
        if len(got) == count:
            return got
        # Nearly full: draw from what is left.
        rest = [_ip(n) for n in range(self.first, self.last + 1)
                if _ip(n) not in self.in_use and _ip(n) not in seen]
        return got + self.rng.sample(rest, count - len(got))

    def allocate(self, count):
        if count > self.free():
            raise Ec2Error("InsufficientFreeAddressesInSubnet",
                           "There are not enough free addresses in subnet '%s' "
                           "to satisfy the requested number of instances." % self.id)
        got = self._pick(count)
        self.in_use.update(got)
        return got

    def take(self, addr):
        if not self.contains(addr):
            raise Ec2Error("InvalidParameterValue",
                           "Address %s does not fall within the subnet's address "
                           "range" % addr)
        if addr in self.in_use:
            raise Ec2Error("InvalidParameterValue",
                           "Address %s is in use." % addr)
        if self.free() < 1:
            raise Ec2Error("InsufficientFreeAddressesInSubnet",
                           "There are not enough free addresses in subnet '%s'."
                           % self.id)
        self.in_use.add(addr)

    def release(self, addrs):
        for a in addrs:
            self.in_use.discard(a)

    # -------------------------------------------------------------- prefixes

    def check_prefix(self, cidr):
        """A /28 a client named, in canonical form, if it is one this
        subnet could delegate: aligned, inside it, clear of the reserved
        addresses.  Whether it is free is claim_prefixes' question."""
        try:
            net = ipaddress.IPv4Network(cidr, strict=False)
        except ValueError:
            raise Ec2Error("InvalidParameterValue",
                           "Invalid IPv4 prefix '%s': expected a CIDR such as "
                           "10.0.0.16/28" % cidr)
        if "/" not in cidr or net.prefixlen != PREFIX_LEN:
            raise Ec2Error("InvalidParameterValue",
                           "Invalid IPv4 prefix '%s': the prefix length must be "
                           "/%d" % (cidr, PREFIX_LEN))
        if str(net.network_address) != cidr.split("/")[0]:
            raise Ec2Error("InvalidParameterValue",
                           "Invalid IPv4 prefix '%s': not aligned to a /%d "
                           "boundary (%s is)" % (cidr, PREFIX_LEN, net))
        if not net.subnet_of(self.net):
            raise Ec2Error("InvalidParameterValue",
                           "The prefix %s does not fall within the CIDR %s of "
                           "subnet '%s'" % (net, self.net, self.id))
        if int(net.network_address) not in self.block_bases:
            raise Ec2Error("InvalidParameterValue",
                           "The prefix %s includes addresses reserved in subnet "
                           "'%s'" % (net, self.id))
        return str(net)

    def claim_prefixes(self, named, count):
        """The /28s named (checked by check_prefix), or count free ones;
        all or none.  EC2's refusals: a named one overlaps an address in
        use; too few free addresses at all; too few whole /28s among them
        (a fragmented subnet)."""
        for p in named:
            if any(a in self.in_use for a in prefix_hosts(p)):
                raise Ec2Error("InvalidParameterValue",
                               "The prefix %s overlaps addresses in use." % p)
        count = len(named) or count
        if count * PREFIX_SIZE > self.free():
            raise Ec2Error("InvalidParameterValue", NO_ROOM_FOR_PREFIXES)
        if named:
            got = list(named)
        else:
            blocks = self.free_blocks()
            if len(blocks) < count:
                raise Ec2Error("InsufficientCidrBlocks",
                               "The specified subnet does not have enough free "
                               "cidr blocks to satisfy the request.")
            chosen = self.rng.sample(blocks, count) if self.scattered \
                else blocks[:count]
            got = ["%s/%d" % (_ip(b), PREFIX_LEN) for b in chosen]
        for p in got:
            self.in_use.update(prefix_hosts(p))
            self.prefixes.add(p)
        return got

    def release_prefixes(self, cidrs):
        for p in cidrs:
            self.prefixes.discard(p)
            self.in_use.difference_update(prefix_hosts(p))

    # -------------------------------------------------------------- fragmentation

    def fragment(self, keep=0):
        """Hold one address in every whole /28 but the highest `keep` (the
        lowest would go first to single addresses allocated lowest-first),
        so that a prefix fails while single addresses are still free.  The
        held addresses count as in use, as the strays that fragment a real
        subnet do."""
        blocks = self.free_blocks()
        for b in blocks[:max(0, len(blocks) - keep)]:
            a = _ip(b + self.rng.randrange(PREFIX_SIZE))
            self.blockers.add(a)
            self.in_use.add(a)

    def unfragment(self):
        self.in_use.difference_update(self.blockers)
        self.blockers.clear()


class Instance:
    def __init__(self, index, iid, itype, subnet, netns):
        self.index = index
        self.id = iid
        self.type = itype
        self.subnet = subnet
        self.netns = netns
        self.launch = time.time()
        self.tags = {}
        self.cred = None      # akid of the credential IMDS currently hands out


class Eni:
    def __init__(self, eid, subnet, mac, addresses, groups, description):
        self.id = eid
        self.subnet = subnet
        self.mac = mac
        self.addresses = addresses        # [primary, secondaries...]; [] if IPv6-only
        self.prefixes = []                # delegated /28s, in assignment order
        self.ipv6 = []                    # IPv6 addresses, in assignment order
        self.ipv6_prefixes = []           # delegated /80s, in assignment order
        self.ipv6_primary = None          # a node's own IPv6 address (launch)
        # IMDS's view of the addresses: [(monotonic time, view)], see
        # Sim.imds_view.
        self.imds_hist = []
        self.groups = groups
        self.description = description
        self.tags = {}
        self.status = "available"
        self.attachment = None            # dict, see attach()
        self.link_ready = False           # data plane: veth should exist
        self.link_override = None         # None | ms | "never"
        self.link_gen = 0
        self.client_token = None
        self.requester_managed = False
        self.source_dest_check = True
        self.created = time.time()


class Sim:
    def __init__(self, cfg, log):
        self.cfg = cfg
        self.log = log
        self.lock = threading.RLock()
        self.region = cfg.region
        self.az = cfg.region + "a"
        self.vpc_id = hexid("vpc-")
        self.vpc_cidr = "10.0.0.0/16"
        self.groups = {hexid("sg-"): "default", hexid("sg-"): "enid-pods"}
        self.default_group = next(iter(self.groups))
        # One generator for every random choice of addresses (scattered
        # allocation, fragmentation), seeded so that a run can be repeated.
        self.rng = random.Random(getattr(cfg, "seed", None))
        scattered = getattr(cfg, "allocation", "lowest") == "scattered"
        self.subnets = {}
        for cidr in ("10.0.0.0/20", "10.0.16.0/20"):
            s = Subnet(hexid("subnet-"), cidr, self.az, self.vpc_id, self.rng,
                       scattered)
            if cfg.subnet_free is not None:
                s.cap = min(s.total, cfg.subnet_free)
            self.subnets[s.id] = s
        self.subnet_list = list(self.subnets.values())
        # IPv6 (--ipv6 dual): the VPC gets a /56, each IPv4 subnet a /64 of
        # it, and a third subnet is IPv6-only (ipv6Native).  Off, nothing
        # of it exists and every answer is as it was without IPv6.
        self.ipv6 = getattr(cfg, "ipv6", "off") == "dual"
        self.vpc_cidr6 = v6.VPC_CIDR6 if self.ipv6 else None
        self.vpc_assoc6 = hexid("vpc-cidr-assoc-")
        self.vpc_assoc4 = hexid("vpc-cidr-assoc-")
        self.native_subnet = None
        if self.ipv6:
            for i, s in enumerate(self.subnet_list):
                s.v6 = v6.Block6(v6.subnet_cidr(i), self.rng)
            s = Subnet(hexid("subnet-"), None, self.az, self.vpc_id, self.rng,
                       scattered)
            s.v6 = v6.Block6(v6.subnet_cidr(len(self.subnet_list)), self.rng)
            # EC2 requires it of an IPv6-only subnet: an ENI there has
            # no other address.
            s.auto_ipv6 = True
            self.subnets[s.id] = s
            self.subnet_list.append(s)
            self.native_subnet = s
        # How long IMDS lags behind the API for an ENI's addresses and
        # prefixes (--imds-lag-ms, POST /imds).
        self.imds_lag_ms = float(getattr(cfg, "imds_lag_ms", 0) or 0)
        # name -> (ENIs, addresses per ENI).  The configured type takes its
        # limits from the flags and the rest of its traits from the catalog.
        self.instance_types = {cfg.instance_type: (cfg.eni_limit, cfg.ip_limit)}
        self.type_traits = {cfg.instance_type: traits_of(cfg.instance_type)}
        # IPv6 addresses per ENI (ipv6AddressesPerInterface): as many as
        # IPv4 addresses, as for most of EC2's types, unless --ipv6-limit.
        self.ipv6_limit_flag = getattr(cfg, "ipv6_limit", None)
        self.ipv6_limits = {cfg.instance_type: self.ipv6_limit_flag or cfg.ip_limit}
        for name, t in CATALOG.items():
            if name not in self.instance_types:
                self.instance_types[name] = (t["enis"], t["ips"])
                self.type_traits[name] = traits_of(name)
                self.ipv6_limits[name] = t["ips"]
        # The types the nodes were given: an unattached ENI may hold as
        # many addresses as the largest of them allows.
        self.fleet_types = {cfg.instance_type}
        self.instances = {}
        self.enis = {}
        self.macs = set()
        self.attachments = {}             # attachment id -> eni id
        self.client_tokens = {}           # token -> (fingerprint, eni id, snapshot)
        # credentials: akid -> dict(secret, token, expires, revoked, node)
        self.static_akid = "AKIA" + "ENIDSIM" + secrets.token_hex(5).upper()[:9]
        self.static_secret = self._rand(40)
        self.creds = {self.static_akid: {"secret": self.static_secret, "token": None,
                                         "expires": None, "revoked": False,
                                         "node": None}}
        self.cred_lifetime = float(cfg.cred_expire_s)
        self.role = "enid-node-role"
        self.imds_tokens = {}             # token -> (instance id, expires)
        # rate limits
        self.rate_scale = cfg.rate_scale
        self.buckets = {}
        self.set_rate_scale(cfg.rate_scale)
        # fault injection & link control
        self.faults = []
        self.link_delay = cfg.link_delay_ms   # ms or "never"
        self.link_next = []                   # overrides for the next attaches
        self.attach_delay_ms = cfg.attach_delay_ms
        self.detach_delay_ms = cfg.detach_delay_ms
        # statistics
        self.calls = {}
        self.errors = {}
        self.throttles = {}
        # Every change of a prefix's owner, for a test that must judge
        # when one left an ENI (GET /prefixes/log): a bounded list, its
        # sequence numbers never reused.
        self.prefix_log = collections.deque(maxlen=PREFIX_LOG_MAX)
        self.prefix_seq = 0
        self.caller = None                # the EC2 request's source address
        self.sched = Scheduler(self.log)
        self.dataplane = None             # set by the owner (Dataplane)

    # -------------------------------------------------------------- helpers

    @staticmethod
    def _rand(n, alphabet=string.ascii_letters + string.digits + "/+"):
        return "".join(secrets.choice(alphabet) for _ in range(n))

    def new_mac(self):
        for _ in range(1000):
            mac = "02:" + ":".join("%02x" % b for b in secrets.token_bytes(5))
            if mac not in self.macs:
                self.macs.add(mac)
                return mac
        raise RuntimeError("no unique MAC found")

    def set_rate_scale(self, scale):
        self.rate_scale = float(scale)
        self.buckets = {name: Bucket(max(1.0, c * self.rate_scale), r * self.rate_scale)
                        for name, (c, r) in BUCKET_DEFAULTS.items()}

    def limits_of(self, inst):
        return self.instance_types[inst.type]

    def add_instance_type(self, name, enis, ips, like):
        """A type of the configured one's traits with limits of its own
        (--node-limits)."""
        self.instance_types[name] = (enis, ips)
        self.type_traits[name] = dict(self.type_traits[like])
        self.ipv6_limits[name] = self.ipv6_limit_flag or ips
        self.fleet_types.add(name)

    def use_instance_type(self, name):
        """A node is given this known type (--node-type)."""
        if name not in self.instance_types:
            raise ValueError("unknown instance type %s (known: %s)"
                             % (name, ", ".join(sorted(self.instance_types))))
        self.fleet_types.add(name)

    def prefix_capable(self, itype):
        t = self.type_traits[itype]
        return t["hypervisor"] == "nitro" or t["bare_metal"]

    def unattached_ip_limit(self):
        return max(self.instance_types[t][1] for t in self.fleet_types)

    def unattached_ipv6_limit(self):
        return max(self.ipv6_limits[t] for t in self.fleet_types)

    def eni_ipv6_limit(self, eni):
        if eni.attachment:
            return self.ipv6_limits[self.instances[eni.attachment["instance"]].type]
        return self.unattached_ipv6_limit()

    def eni_or_404(self, eid):
        eni = self.enis.get(eid)
        if eni is None:
            raise Ec2Error("InvalidNetworkInterfaceID.NotFound",
                           "The networkInterface ID '%s' does not exist" % eid)
        return eni

    def sync(self, eni_id):
        eni = self.enis.get(eni_id)
        if eni is not None:
            self.note_imds(eni)
        if self.dataplane:
            self.dataplane.request(eni_id)

    # -------------------------------------------------------------- IMDS lag

    @staticmethod
    def addr_view(eni):
        return {"ipv4": list(eni.addresses), "ipv4_prefixes": list(eni.prefixes),
                "ipv6": list(eni.ipv6), "ipv6_prefixes": list(eni.ipv6_prefixes)}

    def note_imds(self, eni, born=False):
        """Remember the ENI's addresses as they are now: IMDS shows them
        once imds_lag_ms has passed.  What an ENI was created with is
        there from the start."""
        view = self.addr_view(eni)
        if eni.imds_hist and eni.imds_hist[-1][1] == view:
            return
        eni.imds_hist.append((float("-inf") if born else time.monotonic(), view))

    def imds_view(self, eni):
        """The ENI's addresses as IMDS shows them: the newest state at
        least imds_lag_ms old (older ones are forgotten)."""
        if not eni.imds_hist:
            return self.addr_view(eni)
        cutoff = time.monotonic() - self.imds_lag_ms / 1000.0
        ripe = [i for i, (t, _) in enumerate(eni.imds_hist) if t <= cutoff]
        i = ripe[-1] if ripe else 0
        del eni.imds_hist[:i]
        return eni.imds_hist[0][1]

    def count(self, table, action, key=None):
        if key is None:
            table[action] = table.get(action, 0) + 1
        else:
            per = table.setdefault(action, {})
            per[key] = per.get(key, 0) + 1

    # -------------------------------------------------------------- nodes

    def add_node(self, index, netns, subnet=None, itype=None):
        """Create an instance with its primary ENI attached at device 0.
        In a subnet with IPv6, the ENI also gets an IPv6 address, as an
        instance launched with one (and with it as its primary IPv6); in
        an IPv6-only subnet, that is its only address.  itype: its type
        (None: the configured one); one with ipv6Supported false gets no
        IPv6 address."""
        subnet = subnet or self.subnet_list[0]
        inst = Instance(index, hexid("i-"), itype or self.cfg.instance_type,
                        subnet, netns)
        self.instances[inst.id] = inst
        addr = subnet.allocate(1) if subnet.net else []
        eni = Eni(hexid("eni-"), subnet, self.new_mac(), addr, [self.default_group],
                  "Primary network interface")
        if subnet.v6 is not None and subnet.v6.usable() and \
                self.type_traits[inst.type]["ipv6"]:
            eni.ipv6 = subnet.v6.allocate(1, subnet.scattered)
            eni.ipv6_primary = eni.ipv6[0]
        self.note_imds(eni, born=True)
        self.enis[eni.id] = eni
        att = {"id": hexid("eni-attach-"), "instance": inst.id, "device_index": 0,
               "status": "attached", "delete_on_termination": True,
               "time": time.time()}
        eni.attachment = att
        eni.status = "in-use"
        eni.link_ready = True
        self.attachments[att["id"]] = eni.id
        return inst, eni

    def node_subnet(self, name):
        """The subnet --node-subnet names: "0", "1" or "ipv6-native"
        (None: the first)."""
        if name == "ipv6-native":
            return self.native_subnet
        return self.subnet_list[int(name or 0)]

    def instance_enis(self, iid):
        return sorted((e for e in self.enis.values()
                       if e.attachment and e.attachment["instance"] == iid),
                      key=lambda e: e.attachment["device_index"])

    def instance_by_addr(self, addr):
        if ":" in addr:
            return self._instance_by_addr6(addr)
        try:
            block = "%s/%d" % (_ip(int(ipaddress.IPv4Address(addr)) &
                                   ~(PREFIX_SIZE - 1)), PREFIX_LEN)
        except ValueError:
            return None
        for e in self.enis.values():
            if e.attachment and (addr in e.addresses or block in e.prefixes):
                return self.instances.get(e.attachment["instance"])
        return None

    def _instance_by_addr6(self, addr):
        a = v6.canon(addr)
        if a is None:
            return None
        block = str(ipaddress.IPv6Network((a, v6.PREFIX_LEN6), strict=False))
        for e in self.enis.values():
            if e.attachment and (a in e.ipv6 or block in e.ipv6_prefixes):
                return self.instances.get(e.attachment["instance"])
        return None

    def set_allocation(self, mode):
        """"lowest" or "scattered": how every subnet picks single addresses."""
        for s in self.subnet_list:
            s.scattered = mode == "scattered"

    # -------------------------------------------------------------- credentials

    def issue_cred(self, inst):
        now = time.time()
        cur = self.creds.get(inst.cred) if inst.cred else None
        if cur and not cur["revoked"] and \
                cur["expires"] - now > cur["lifetime"] / 2.0:
            return inst.cred, cur
        akid = "ASIA" + "".join(secrets.choice(string.ascii_uppercase + string.digits)
                                for _ in range(16))
        cred = {"secret": self._rand(40), "token": base64.b64encode(secrets.token_bytes(150)).decode(),
            "expires": now + self.cred_lifetime, "lifetime": self.cred_lifetime,
            "revoked": False, "node": inst.id, "issued": now}
        self.creds[akid] = cred
        inst.cred = akid
        # forget credentials that expired long ago
        for k in [k for k, c in self.creds.items()
                  if c["expires"] is not None and c["expires"] < now - 3600]:
            del self.creds[k]
        return akid, cred

    # -------------------------------------------------------------- faults

    def fault_for(self, action, params=None, after=False):
        """Return (latency_s, error or None) for this call; consumes counts.
        "*" matches every EC2 action; IMDS requests match only "IMDS".
        A rule "with_filter" matches only calls that carry that filter,
        one "with_param" only calls with a parameter named so (or so
        followed by "." or more of the name: "Ipv4Prefix" is also
        Ipv4PrefixCount and Ipv4Prefix.1).  Rules "after" are asked for
        with after=True, once the action is done, and only those."""
        latency = 0.0
        err = None
        keep = []
        names = None
        for rule in self.faults:
            if "with_filter" in rule and names is None:
                try:
                    names = {n for n, _ in parse_filters(params or {})}
                except Ec2Error:
                    names = set()   # the call itself says what is wrong
            matches = rule["action"] == action or \
                (rule["action"] == "*" and action != "IMDS")
            if not matches or "ignore_filter" in rule or \
                    bool(rule.get("after")) != after or \
                    ("with_filter" in rule and
                     rule["with_filter"] not in names) or \
                    ("with_param" in rule and not any(
                        k.startswith(rule["with_param"])
                        for k in (params or {}))):
                keep.append(rule)
                continue
            fired = False
            if "latency_ms" in rule:
                lo, hi = rule["latency_ms"]
                latency = max(latency, random.uniform(lo, hi) / 1000.0)
                fired = True
            elif err is None:
                if "probability" in rule:
                    fired = random.random() < rule["probability"]
                else:
                    fired = True
                if fired:
                    err = Ec2Error(rule["code"], rule.get(
                        "message", "Injected fault (%s)" % rule["code"]),
                        rule.get("status"))
            if fired and "count" in rule:
                rule["count"] -= 1
                if rule["count"] <= 0:
                    continue
            keep.append(rule)
        self.faults = keep
        return latency, err

    def log_prefixes(self, op, eni, prefixes):
        """Prefixes that joined ("assign") or left ("unassign", "delete")
        eni, with both clocks and the caller's address (lock held)."""
        now, mono = time.time(), time.monotonic()
        for p in prefixes:
            self.prefix_seq += 1
            self.prefix_log.append({
                "seq": self.prefix_seq, "t": now, "mono": mono, "op": op,
                "eni": eni.id, "subnet": eni.subnet.id, "prefix": p,
                "instance_id": eni.attachment["instance"]
                if eni.attachment else None,
                "caller": self.caller})

    def prefix_events(self, since=0):
        return [dict(e) for e in self.prefix_log if e["seq"] > since]

    def filters_for(self, action, params):
        """The request's filters, less those an ignore_filter rule for the
        action leaves out."""
        ignored = {r["ignore_filter"] for r in self.faults
                   if "ignore_filter" in r and r["action"] in (action, "*")}
        return [(n, v) for n, v in parse_filters(params) if n not in ignored]

    def check_rate(self, action, params):
        bucket = self.buckets[bucket_for(action, params)]
        if not bucket.take():
            self.count(self.throttles, action)
            raise Ec2Error("RequestLimitExceeded", "Request limit exceeded.")

    # -------------------------------------------------------------- dispatch

    def call(self, action, params):
        """Run one action (lock held by caller).  Returns the result dict."""
        fn = getattr(self, "a_" + action, None)
        if fn is None or action not in ACCEPTS_RE:
            raise Ec2Error("InvalidAction",
                           "The action %s is not valid for this web service." % action)
        acc = ACCEPTS_RE[action]
        for k in params:
            if not acc.match(k):
                raise Ec2Error("UnknownParameter",
                               "The parameter %s is not recognized" % k)
        dry = as_bool(params, "DryRun")
        return fn(params, dry)

    def dry(self, dry):
        if dry:
            raise Ec2Error("DryRunOperation",
                           "Request would have succeeded, but DryRun flag is set.")

    # -------------------------------------------------------------- rendering

    def eni_struct(self, e, for_instance=False):
        att = None
        if e.attachment:
            a = e.attachment
            att = {"attachmentId": a["id"], "instanceId": a["instance"],
                   "instanceOwnerId": OWNER_ID, "deviceIndex": a["device_index"],
                   "status": a["status"], "attachTime": iso8601(a["time"]),
                   "deleteOnTermination": a["delete_on_termination"],
                   "networkCardIndex": 0}
        d = {"networkInterfaceId": e.id, "subnetId": e.subnet.id,
             "vpcId": self.vpc_id}
        if not for_instance:
            d["availabilityZone"] = e.subnet.az
        primary = e.addresses[0] if e.addresses else None
        d.update({
            "description": e.description, "ownerId": OWNER_ID,
            "requesterManaged": e.requester_managed, "status": e.status,
            # An IPv6-only ENI has no private IPv4 address, nor a name
            # made of one.
            "macAddress": e.mac, "privateIpAddress": primary,
            "privateDnsName": "ip-%s.%s.compute.internal" % (
                primary.replace(".", "-"), self.region) if primary else None,
            "sourceDestCheck": e.source_dest_check,
            "groupSet": [{"groupId": g, "groupName": self.groups.get(g, g)}
                         for g in e.groups],
            "attachment": att,
            "tagSet": None if for_instance else
            [{"key": k, "value": v} for k, v in e.tags.items()],
            "privateIpAddressesSet": [
                {"privateIpAddress": a, "privateDnsName": "ip-%s.%s.compute.internal"
                 % (a.replace(".", "-"), self.region), "primary": i == 0}
                for i, a in enumerate(e.addresses)],
            "ipv6AddressesSet": [
                {"ipv6Address": a, "isPrimaryIpv6": a == e.ipv6_primary}
                for a in e.ipv6],
            # Left out when empty: an answer without prefixes is unchanged.
            "ipv4PrefixSet": [{"ipv4Prefix": p} for p in e.prefixes] or None,
            "ipv6PrefixSet": [{"ipv6Prefix": p} for p in e.ipv6_prefixes] or None,
            "interfaceType": "interface",
        })
        if self.ipv6 and not for_instance:
            # Only with --ipv6: an IPv4-only sim answers as before.
            d["ipv6Native"] = e.subnet.ipv6_native
            d["ipv6Address"] = e.ipv6_primary
        return d

    def page(self, items, params, key):
        """Apply MaxResults/NextToken to items sorted by key(item)."""
        max_results = as_int(params, "MaxResults", 5, 1000)
        token = params.get("NextToken")
        items = sorted(items, key=key)
        if token:
            try:
                after = json.loads(base64.urlsafe_b64decode(token.encode()))["after"]
            except Exception:
                raise Ec2Error("InvalidParameterValue",
                               "The token '%s' is invalid." % token)
            items = [i for i in items if key(i) > after]
        next_token = None
        if max_results is not None and len(items) > max_results:
            items = items[:max_results]
            next_token = base64.urlsafe_b64encode(
                json.dumps({"after": key(items[-1])}).encode()).decode()
        return items, next_token

    # -------------------------------------------------------------- describes

    def a_DescribeInstances(self, p, dry):
        ids = indexed(p, "InstanceId")
        if ids and "MaxResults" in p:
            raise Ec2Error("InvalidParameterCombination",
                           "The parameter instancesSet cannot be used with the "
                           "parameter maxResults")
        for i in ids:
            if i not in self.instances:
                raise Ec2Error("InvalidInstanceID.NotFound",
                               "The instance ID '%s' does not exist" % i)
        self.dry(dry)
        insts = [self.instances[i] for i in ids] if ids else list(self.instances.values())
        for name, values in parse_filters(p):
            insts = [i for i in insts if self._inst_filter(i, name, values)]
        insts, nt = self.page(insts, p, lambda i: i.id)
        res = []
        for inst in insts:
            enis = self.instance_enis(inst.id)
            prim = enis[0] if enis else None
            res.append({
                "reservationId": "r-" + inst.id[2:], "ownerId": OWNER_ID,
                "groupSet": [],
                "instancesSet": [{
                    "instanceId": inst.id, "imageId": "ami-0e1d5171000000000",
                    "instanceState": {"code": 16, "name": "running"},
                    "privateDnsName": "ip-%s.%s.compute.internal" % (
                        prim.addresses[0].replace(".", "-"), self.region)
                    if prim and prim.addresses else
                    "%s.%s.compute.internal" % (inst.id, self.region) if prim else "",
                    "amiLaunchIndex": 0, "instanceType": inst.type,
                    "launchTime": iso8601(inst.launch),
                    "placement": {"availabilityZone": self.az, "tenancy": "default"},
                    "monitoring": {"state": "disabled"},
                    "subnetId": inst.subnet.id, "vpcId": self.vpc_id,
                    "privateIpAddress": prim.addresses[0]
                    if prim and prim.addresses else None,
                    "ipv6Address": prim.ipv6_primary if prim else None,
                    "sourceDestCheck": True,
                    "groupSet": [{"groupId": g, "groupName": self.groups[g]}
                                 for g in (prim.groups if prim else [])],
                    "architecture": "x86_64", "rootDeviceType": "ebs",
                    "hypervisor": "xen",
                    "tagSet": [{"key": k, "value": v} for k, v in inst.tags.items()],
                    "networkInterfaceSet": [self.eni_struct(e, True) for e in enis],
                }]})
        return {"reservationSet": res, "nextToken": nt}

    def _inst_filter(self, inst, name, values):
        if name == "instance-id":
            return match_values(inst.id, values)
        if name == "instance-type":
            return match_values(inst.type, values)
        if name == "instance-state-name":
            return match_values("running", values)
        if name == "subnet-id":
            return match_values(inst.subnet.id, values)
        if name == "vpc-id":
            return match_values(self.vpc_id, values)
        if name == "availability-zone":
            return match_values(self.az, values)
        if name == "network-interface.network-interface-id":
            return match_values([e.id for e in self.instance_enis(inst.id)], values)
        if name == "private-ip-address":
            enis = self.instance_enis(inst.id)
            return match_values(enis[0].addresses[0] if enis and enis[0].addresses
                                else None, values)
        if name.startswith("tag:"):
            return match_values(inst.tags.get(name[4:]), values)
        if name == "tag-key":
            return match_values(list(inst.tags), values)
        raise Ec2Error("InvalidParameterValue", "The filter '%s' is invalid" % name)

    def a_DescribeInstanceTypes(self, p, dry):
        want = indexed(p, "InstanceType")
        for t in want:
            if t not in self.instance_types:
                raise Ec2Error("InvalidInstanceType",
                               "The following supplied instance types do not "
                               "exist: [%s]" % t)
        self.dry(dry)
        types = want or list(self.instance_types)
        for name, values in parse_filters(p):
            if name != "instance-type":
                raise Ec2Error("InvalidParameterValue",
                               "The filter '%s' is invalid" % name)
            types = [t for t in types if match_values(t, values)]
        types, nt = self.page(types, p, lambda t: t)
        out = []
        for t in types:
            enis, ips = self.instance_types[t]
            tr = self.type_traits[t]
            out.append({
                "instanceType": t, "currentGeneration": True,
                "freeTierEligible": False, "bareMetal": tr["bare_metal"],
                "hypervisor": tr["hypervisor"],
                "processorInfo": {"supportedArchitectures": ["x86_64"]},
                "vCpuInfo": {"defaultVCpus": tr["vcpus"]},
                "memoryInfo": {"sizeInMiB": tr["memory_mib"]},
                "networkInfo": {
                    "networkPerformance": tr["network"],
                    "maximumNetworkInterfaces": enis,
                    "maximumNetworkCards": 1, "defaultNetworkCardIndex": 0,
                    "networkCards": [{"networkCardIndex": 0,
                                      "networkPerformance": tr["network"],
                                      "maximumNetworkInterfaces": enis}],
                    "ipv4AddressesPerInterface": ips,
                    "ipv6AddressesPerInterface": self.ipv6_limits[t],
                    "ipv6Supported": tr["ipv6"],
                    "enaSupport": tr["ena"], "efaSupported": False,
                    "encryptionInTransitSupported": False,
                },
            })
        return {"instanceTypeSet": out, "nextToken": nt}

    def a_DescribeSubnets(self, p, dry):
        ids = indexed(p, "SubnetId")
        for i in ids:
            if i not in self.subnets:
                raise Ec2Error("InvalidSubnetID.NotFound",
                               "The subnet ID '%s' does not exist" % i)
        self.dry(dry)
        subs = [self.subnets[i] for i in ids] if ids else list(self.subnet_list)
        for name, values in parse_filters(p):
            subs = [s for s in subs if self._subnet_filter(s, name, values)]
        subs, nt = self.page(subs, p, lambda s: s.id)
        return {"subnetSet": [self._subnet_struct(s) for s in subs],
                "nextToken": nt}

    def _subnet_struct(self, s):
        d = {
            "subnetId": s.id, "subnetArn": "arn:aws:ec2:%s:%s:subnet/%s" % (
                self.region, OWNER_ID, s.id),
            "state": "available", "ownerId": OWNER_ID, "vpcId": s.vpc_id,
            "cidrBlock": str(s.net) if s.net else None,
            "ipv6CidrBlockAssociationSet": [{
                "associationId": s.v6.assoc_id, "ipv6CidrBlock": str(s.v6.net),
                "ipv6CidrBlockState": {"state": s.v6.state}}] if s.v6 else [],
            "availableIpAddressCount": s.free(), "availabilityZone": s.az,
            "availabilityZoneId": "use1-az1", "defaultForAz": False,
            "mapPublicIpOnLaunch": False, "assignIpv6AddressOnCreation": s.auto_ipv6,
            "tagSet": [{"key": k, "value": v} for k, v in s.tags.items()],
        }
        if self.ipv6:
            # Only with --ipv6: an IPv4-only sim answers as before.
            d["ipv6Native"] = s.ipv6_native
            d["enableDns64"] = False
        return d

    def _subnet_filter(self, s, name, values):
        if name == "subnet-id":
            return match_values(s.id, values)
        if name == "vpc-id":
            return match_values(s.vpc_id, values)
        if name in ("availability-zone", "availabilityZone"):
            return match_values(s.az, values)
        if name in ("cidr-block", "cidr", "cidrBlock"):
            return match_values(str(s.net) if s.net else None, values)
        if name == "ipv6-cidr-block-association.ipv6-cidr-block":
            return match_values(str(s.v6.net) if s.v6 else None, values)
        if name == "ipv6-cidr-block-association.state":
            return match_values(s.v6.state if s.v6 else None, values)
        if name == "ipv6-native":
            return match_values("true" if s.ipv6_native else "false", values)
        if name == "state":
            return match_values("available", values)
        if name.startswith("tag:"):
            return match_values(s.tags.get(name[4:]), values)
        if name == "tag-key":
            return match_values(list(s.tags), values)
        raise Ec2Error("InvalidParameterValue", "The filter '%s' is invalid" % name)

    def a_DescribeVpcs(self, p, dry):
        ids = indexed(p, "VpcId")
        for i in ids:
            if i != self.vpc_id:
                raise Ec2Error("InvalidVpcID.NotFound",
                               "The vpc ID '%s' does not exist" % i)
        self.dry(dry)
        vpcs = [self.vpc_id]
        for name, values in parse_filters(p):
            if name == "vpc-id":
                keep = match_values(self.vpc_id, values)
            elif name in ("cidr", "cidr-block-association.cidr-block"):
                keep = match_values(self.vpc_cidr, values)
            elif name == "ipv6-cidr-block-association.ipv6-cidr-block":
                keep = match_values(self.vpc_cidr6, values)
            elif name == "state":
                keep = match_values("available", values)
            elif name == "is-default":
                keep = match_values("false", values)
            else:
                raise Ec2Error("InvalidParameterValue",
                               "The filter '%s' is invalid" % name)
            vpcs = vpcs if keep else []
        vpcs, nt = self.page(vpcs, p, lambda v: v)
        return {"vpcSet": [{
            "vpcId": v, "ownerId": OWNER_ID, "state": "available",
            "cidrBlock": self.vpc_cidr, "dhcpOptionsId": "dopt-0e1d5171000000000",
            "instanceTenancy": "default", "isDefault": False,
            "cidrBlockAssociationSet": [{
                "associationId": self.vpc_assoc4, "cidrBlock": self.vpc_cidr,
                "cidrBlockState": {"state": "associated"}}],
            "ipv6CidrBlockAssociationSet": [{
                "associationId": self.vpc_assoc6, "ipv6CidrBlock": self.vpc_cidr6,
                "ipv6CidrBlockState": {"state": "associated"},
                "networkBorderGroup": self.region, "ipv6Pool": "Amazon"}]
            if self.vpc_cidr6 else None,
            "tagSet": [],
        } for v in vpcs], "nextToken": nt}

    def a_DescribeNetworkInterfaces(self, p, dry):
        ids = indexed(p, "NetworkInterfaceId")
        if ids and "MaxResults" in p:
            raise Ec2Error("InvalidParameterCombination",
                           "The parameter NetworkInterfaceIds cannot be used with "
                           "the parameter maxResults")
        for i in ids:
            self.eni_or_404(i)
        self.dry(dry)
        enis = [self.enis[i] for i in ids] if ids else list(self.enis.values())
        for name, values in self.filters_for("DescribeNetworkInterfaces", p):
            enis = [e for e in enis if self._eni_filter(e, name, values)]
        enis, nt = self.page(enis, p, lambda e: e.id)
        return {"networkInterfaceSet": [self.eni_struct(e) for e in enis],
                "nextToken": nt}

    def _eni_filter(self, e, name, values):
        a = e.attachment or {}
        simple = {
            "network-interface-id": e.id, "subnet-id": e.subnet.id,
            "vpc-id": self.vpc_id, "status": e.status,
            "availability-zone": e.subnet.az, "mac-address": e.mac,
            "description": e.description, "owner-id": OWNER_ID,
            "private-ip-address": e.addresses[0] if e.addresses else None,
            "ipv6-addresses.ipv6-address": e.ipv6,
            "addresses.private-ip-address": e.addresses,
            "attachment.instance-id": a.get("instance"),
            "attachment.attachment-id": a.get("id"),
            "attachment.status": a.get("status"),
            "attachment.device-index": str(a["device_index"]) if a else None,
            "attachment.delete-on-termination":
                ("true" if a["delete_on_termination"] else "false") if a else None,
            "group-id": e.groups, "interface-type": "interface",
            "requester-managed": "true" if e.requester_managed else "false",
        }
        if name in simple:
            return match_values(simple[name], values)
        if name.startswith("tag:"):
            return match_values(e.tags.get(name[4:]), values)
        if name == "tag-key":
            return match_values(list(e.tags), values)
        if name == "tag-value":
            return match_values(list(e.tags.values()), values)
        raise Ec2Error("InvalidParameterValue", "The filter '%s' is invalid" % name)

    # -------------------------------------------------------------- create/delete

    def _tags_from_specs(self, p):
        tags = {}
        for spec in indexed_groups(p, "TagSpecification"):
            rt = spec.get("ResourceType")
            if rt != "network-interface":
                raise Ec2Error("InvalidParameterValue",
                               "'%s' is not a valid taggable resource type for this "
                               "operation." % rt)
            tags.update(self._tag_pairs(spec, "Tag"))
        return tags

    @staticmethod
    def _tag_pairs(src, prefix):
        tags = {}
        for g in indexed_groups(src, prefix):
            k = g.get("Key")
            if k is None or k == "":
                raise Ec2Error("InvalidParameterValue", "Tag key must not be empty")
            if len(k) > 128 or len(g.get("Value", "")) > 256 or k.startswith("aws:"):
                raise Ec2Error("InvalidParameterValue", "Tag '%s' is invalid" % k[:140])
            tags[k] = g.get("Value", "")
        if len(tags) > 50:
            raise Ec2Error("TagLimitExceeded", "The maximum number of tags is 50")
        return tags

    def a_CreateNetworkInterface(self, p, dry):
        sid = need(p, "SubnetId")
        subnet = self.subnets.get(sid)
        if subnet is None:
            raise Ec2Error("InvalidSubnetID.NotFound",
                           "The subnet ID '%s' does not exist" % sid)
        groups = indexed(p, "SecurityGroupId") or [self.default_group]
        for g in groups:
            if g not in self.groups:
                raise Ec2Error("InvalidGroup.NotFound",
                               "The security group '%s' does not exist" % g)
        count = as_int(p, "SecondaryPrivateIpAddressCount", 1, 10000) or 0
        if subnet.net is None and any(
                k.startswith(("SecondaryPrivateIp", "PrivateIp", "Ipv4Prefix"))
                for k in p):
            subnet.v4_or_refuse()
        pcount, named = self._prefix_args(
            p, subnet, [v for g in indexed_groups(p, "Ipv4Prefix")
                        for k, v in g.items() if k == "Ipv4Prefix"],
            count or any(re.match(r"PrivateIpAddresses\.\d+\.", k) for k in p))
        nprefixes = len(named) or pcount
        req6 = self._ipv6_args(
            p, subnet, [g["Ipv6Address"] for g in indexed_groups(p, "Ipv6Addresses")
                        if "Ipv6Address" in g],
            [g["Ipv6Prefix"] for g in indexed_groups(p, "Ipv6Prefix")
             if "Ipv6Prefix" in g], auto=True)
        if subnet.net is None and req6 is None:
            raise Ec2Error("InvalidParameterValue",
                           "A network interface in the IPv6-only subnet '%s' needs "
                           "an IPv6 address or prefix" % sid)
        tags = self._tags_from_specs(p)
        token = p.get("ClientToken")
        fingerprint = json.dumps({k: v for k, v in sorted(p.items())
                                  if k not in ("ClientToken", "DryRun")})
        if token:
            if len(token) > 64:
                raise Ec2Error("InvalidParameterValue",
                               "ClientToken is longer than 64 characters")
            prev = self.client_tokens.get(token)
            if prev:
                if prev[0] != fingerprint:
                    raise Ec2Error("IdempotentParameterMismatch",
                                   "The client token you have provided is associated "
                                   "with a resource that is already deleted, or the "
                                   "parameters differ from the original request.")
                self.dry(dry)
                eni = self.enis.get(prev[1])
                return {"networkInterface": self.eni_struct(eni) if eni else prev[2],
                        "clientToken": token}
        ip_limit = self.unattached_ip_limit()
        if count + nprefixes + 1 > ip_limit:
            raise Ec2Error("PrivateIpAddressLimitExceeded",
                           "Number of private addresses will exceed limit.")
        if req6 and self._ipv6_wanted(req6) > self.unattached_ipv6_limit():
            raise Ec2Error("PrivateIpAddressLimitExceeded",
                           "Number of private addresses will exceed limit.")
        primary = p.get("PrivateIpAddress")
        if primary and not subnet.contains(primary):
            raise Ec2Error("InvalidParameterValue",
                           "Address %s does not fall within the subnet's address "
                           "range" % primary)
        if subnet.net is not None and subnet.free() < count + 1:
            raise Ec2Error("InsufficientFreeAddressesInSubnet",
                           "There are not enough free addresses in subnet '%s' to "
                           "satisfy the requested number of addresses." % sid)
        self.dry(dry)
        got6, prefixes6 = self._claim_ipv6(subnet, req6)
        try:
            addrs, prefixes = self._claim_ipv4(subnet, primary, count, nprefixes,
                                               named, pcount)
        except Ec2Error:
            if subnet.v6 is not None:
                subnet.v6.release(got6)
                subnet.v6.release_prefixes(prefixes6)
            raise
        eni = Eni(hexid("eni-"), subnet, self.new_mac(), addrs, groups,
                  p.get("Description", ""))
        eni.prefixes = prefixes
        eni.ipv6 = got6
        eni.ipv6_prefixes = prefixes6
        eni.tags = tags
        eni.client_token = token
        self.note_imds(eni, born=True)
        self.enis[eni.id] = eni
        self.log_prefixes("assign", eni, prefixes + prefixes6)
        snap = self.eni_struct(eni)
        if token:
            self.client_tokens[token] = (fingerprint, eni.id, snap)
        return {"networkInterface": snap, "clientToken": token}

    def _claim_ipv4(self, subnet, primary, count, nprefixes, named, pcount):
        """A new ENI's IPv4 addresses and /28s: ([primary, ...], [/28s]),
        nothing in an IPv6-only subnet."""
        if subnet.net is None:
            return [], []
        prefixes = []
        if primary:
            subnet.take(primary)
            try:
                if nprefixes:
                    prefixes = subnet.claim_prefixes(named, pcount)
            except Ec2Error:
                subnet.release([primary])
                raise
            addrs = [primary] + subnet.allocate(count)
        else:
            # The prefixes first: the primary address must not take the
            # last whole /28.
            if nprefixes:
                if subnet.free() < 1 + nprefixes * PREFIX_SIZE:
                    raise Ec2Error("InvalidParameterValue", NO_ROOM_FOR_PREFIXES)
                prefixes = subnet.claim_prefixes(named, pcount)
            addrs = subnet.allocate(count + 1)
        return addrs, prefixes

    # -------------------------------------------------------------- IPv6

    def _ipv6_args(self, p, subnet, named, named_prefixes, auto=False):
        """(Ipv6AddressCount, [addresses], Ipv6PrefixCount, [/80s]) of a
        request, checked, or None if it asks for no IPv6 at all.  With
        `auto` (CreateNetworkInterface), a subnet that assigns IPv6 on
        creation gives one address unless the request names any IPv6
        (Ipv6AddressCount=0 included)."""
        count = as_int(p, "Ipv6AddressCount", 0, 10000)
        pcount = as_int(p, "Ipv6PrefixCount", 1, 10000)
        if count is not None and named:
            raise Ec2Error("InvalidParameterCombination",
                           "Specify either Ipv6AddressCount or Ipv6Addresses, "
                           "not both")
        if pcount is not None and named_prefixes:
            raise Ec2Error("InvalidParameterCombination",
                           "Specify either Ipv6PrefixCount or Ipv6Prefix, not both")
        addrs = bool(count) or bool(named)
        prefixes = pcount is not None or bool(named_prefixes)
        if addrs and prefixes:
            raise Ec2Error("InvalidParameterCombination",
                           "IPv6 addresses and IPv6 prefixes cannot be specified "
                           "in the same request")
        if auto and count is None and not addrs and not prefixes and \
                subnet.auto_ipv6 and subnet.v6 is not None and subnet.v6.usable():
            count, addrs = 1, True
        if not addrs and not prefixes:
            return None
        block = subnet.v6_or_refuse()
        canon = [block.check_address(a) for a in named]
        if len(set(canon)) != len(canon):
            raise Ec2Error("InvalidParameterValue", "Duplicate address requested")
        pcanon = [block.check_prefix(c) for c in named_prefixes]
        if len(set(pcanon)) != len(pcanon):
            raise Ec2Error("InvalidParameterValue", "Duplicate prefix requested")
        return (count or 0, canon, pcount or 0, pcanon)

    @staticmethod
    def _ipv6_wanted(req):
        count, named, pcount, pnamed = req
        return (len(named) or count) + (len(pnamed) or pcount)

    def _claim_ipv6(self, subnet, req):
        """([addresses], [/80s]) for a checked request (or None)."""
        if req is None:
            return [], []
        count, named, pcount, pnamed = req
        block = subnet.v6
        if named:
            for a in named:
                block.take(a)
            return list(named), []
        if count:
            return block.allocate(count, subnet.scattered), []
        return [], block.claim_prefixes(pnamed, pcount, subnet.scattered)

    def _no_ipv6_prefixes_on(self, inst):
        return Ec2Error("UnsupportedOperation",
                        "IPv6 prefixes are not supported on instance type '%s' "
                        "of instance '%s': it is not a Nitro instance."
                        % (inst.type, inst.id))

    def a_AssignIpv6Addresses(self, p, dry):
        eni = self.eni_or_404(need(p, "NetworkInterfaceId"))
        req = self._ipv6_args(p, eni.subnet, indexed(p, "Ipv6Addresses"),
                              indexed(p, "Ipv6Prefix"))
        if req is None:
            need(p, "Ipv6AddressCount")
            raise Ec2Error("InvalidParameterValue",
                           "Ipv6AddressCount must be at least 1")
        if eni.attachment:
            inst = self.instances[eni.attachment["instance"]]
            # A type with ipv6Supported false takes no IPv6 at all; the
            # code and wording of the refusal are the sim's.
            if not self.type_traits[inst.type]["ipv6"]:
                raise Ec2Error("UnsupportedOperation",
                               "IPv6 is not supported on instance type '%s' "
                               "of instance '%s'." % (inst.type, inst.id))
            if (req[2] or req[3]) and not self.prefix_capable(inst.type):
                raise self._no_ipv6_prefixes_on(inst)
        if len(eni.ipv6) + len(eni.ipv6_prefixes) + self._ipv6_wanted(req) > \
                self.eni_ipv6_limit(eni):
            raise Ec2Error("PrivateIpAddressLimitExceeded",
                           "Number of private addresses will exceed limit.")
        self.dry(dry)
        got, prefixes = self._claim_ipv6(eni.subnet, req)
        eni.ipv6.extend(got)
        eni.ipv6_prefixes.extend(prefixes)
        self.log_prefixes("assign", eni, prefixes)
        self.sync(eni.id)
        # Only what this call added, and only the kind it added.
        return {"assignedIpv6Addresses": got or None,
                "assignedIpv6PrefixSet": prefixes or None,
                "networkInterfaceId": eni.id}

    def a_UnassignIpv6Addresses(self, p, dry):
        eni = self.eni_or_404(need(p, "NetworkInterfaceId"))
        addrs = [v6.canon(a) or a for a in indexed(p, "Ipv6Addresses")]
        prefixes = []
        for c in indexed(p, "Ipv6Prefix"):
            try:
                prefixes.append(str(ipaddress.IPv6Network(c, strict=True)))
            except ValueError:
                raise Ec2Error("InvalidParameterValue",
                               "Invalid IPv6 prefix '%s'" % c)
        if not addrs and not prefixes:
            need(p, "Ipv6Addresses.1")
        for a in addrs:
            if a not in eni.ipv6:
                raise Ec2Error("InvalidParameterValue",
                               "Some of the specified addresses are not assigned "
                               "to interface %s" % eni.id)
            if a == eni.ipv6_primary:
                raise Ec2Error("InvalidParameterValue",
                               "The primary IPv6 address %s cannot be unassigned."
                               % a)
        if any(c not in eni.ipv6_prefixes for c in prefixes):
            raise Ec2Error("InvalidParameterValue",
                           "Some of the specified prefixes are not assigned to "
                           "interface %s" % eni.id)
        self.dry(dry)
        gone = [a for a in eni.ipv6 if a in set(addrs)]
        gone_p = [c for c in eni.ipv6_prefixes if c in set(prefixes)]
        eni.ipv6 = [a for a in eni.ipv6 if a not in set(gone)]
        eni.ipv6_prefixes = [c for c in eni.ipv6_prefixes if c not in set(gone_p)]
        if eni.subnet.v6 is not None:
            eni.subnet.v6.release(gone)
            eni.subnet.v6.release_prefixes(gone_p)
        self.log_prefixes("unassign", eni, gone_p)
        self.sync(eni.id)
        return {"networkInterfaceId": eni.id,
                "unassignedIpv6Addresses": gone or None,
                "unassignedIpv6PrefixSet": gone_p or None}

    def a_DeleteNetworkInterface(self, p, dry):
        eni = self.eni_or_404(need(p, "NetworkInterfaceId"))
        if eni.attachment or eni.status != "available":
            raise Ec2Error("InvalidParameterValue",
                           "Network interface '%s' is currently in use." % eni.id)
        self.dry(dry)
        eni.subnet.release(eni.addresses)
        eni.subnet.release_prefixes(eni.prefixes)
        if eni.subnet.v6 is not None:
            eni.subnet.v6.release(eni.ipv6)
            eni.subnet.v6.release_prefixes(eni.ipv6_prefixes)
        self.log_prefixes("delete", eni, eni.prefixes + eni.ipv6_prefixes)
        self.macs.discard(eni.mac)
        del self.enis[eni.id]
        self.sync(eni.id)
        return {"return": True}

    # -------------------------------------------------------------- attach/detach

    def a_AttachNetworkInterface(self, p, dry):
        eid = need(p, "NetworkInterfaceId")
        iid = need(p, "InstanceId")
        dev = as_int(p, "DeviceIndex", 0, 100)
        if dev is None:
            need(p, "DeviceIndex")
        card = as_int(p, "NetworkCardIndex", 0, 0)
        eni = self.eni_or_404(eid)
        inst = self.instances.get(iid)
        if inst is None:
            raise Ec2Error("InvalidInstanceID.NotFound",
                           "The instance ID '%s' does not exist" % iid)
        if eni.attachment or eni.status != "available":
            raise Ec2Error("InvalidParameterValue" if eni.attachment and
                           eni.attachment["status"] == "attached" else "IncorrectState",
                           "Interface: [%s] in use." % eni.id)
        if eni.subnet.az != self.az:
            raise Ec2Error("InvalidParameterCombination",
                           "The network interface and the instance are in "
                           "different availability zones.")
        max_enis, max_ips = self.limits_of(inst)
        attached = self.instance_enis(iid)
        if len(attached) >= max_enis or dev >= max_enis:
            raise Ec2Error("AttachmentLimitExceeded",
                           "Interface count %d exceeds the limit for %s"
                           % (len(attached) + 1, inst.type))
        if any(e.attachment["device_index"] == dev for e in attached):
            raise Ec2Error("InvalidParameterValue",
                           "Instance '%s' already has an interface attached at "
                           "device index '%d'." % (iid, dev))
        if len(eni.addresses) + len(eni.prefixes) > max_ips:
            raise Ec2Error("PrivateIpAddressLimitExceeded",
                           "Number of private addresses will exceed limit.")
        if eni.prefixes and not self.prefix_capable(inst.type):
            raise self._no_prefixes_on(inst)
        if len(eni.ipv6) + len(eni.ipv6_prefixes) > self.ipv6_limits[inst.type]:
            raise Ec2Error("PrivateIpAddressLimitExceeded",
                           "Number of private addresses will exceed limit.")
        if eni.ipv6_prefixes and not self.prefix_capable(inst.type):
            raise self._no_ipv6_prefixes_on(inst)
        if eni.subnet.ipv6_native and not self.prefix_capable(inst.type):
            # IPv6-only subnets are for Nitro instances only.
            raise Ec2Error("UnsupportedOperation",
                           "Instance type '%s' of instance '%s' is not supported "
                           "in the IPv6-only subnet '%s'."
                           % (inst.type, inst.id, eni.subnet.id))
        self.dry(dry)
        att = {"id": hexid("eni-attach-"), "instance": iid, "device_index": dev,
               "status": "attaching", "delete_on_termination": False,
               "time": time.time()}
        eni.attachment = att
        eni.status = "attaching"
        eni.link_ready = False
        eni.link_gen += 1
        self.attachments[att["id"]] = eni.id
        if eni.link_override is not None:
            delay = eni.link_override
        elif self.link_next:
            delay = self.link_next.pop(0)
        else:
            delay = self.link_delay
        att["link_delay"] = delay
        self._schedule_link(eni, delay)
        aid = att["id"]

        def attached():
            with self.lock:
                if eni.attachment and eni.attachment["id"] == aid and \
                        eni.attachment["status"] == "attaching":
                    eni.attachment["status"] = "attached"
                    eni.status = "in-use"
        self.sched.after(self.attach_delay_ms / 1000.0, attached)
        return {"attachmentId": aid, "networkCardIndex": card or 0}

    def _schedule_link(self, eni, delay):
        """Make the ENI's veth appear after `delay` ms (or never)."""
        eni.link_gen += 1
        if delay == "never" or eni.attachment is None:
            return
        gen = eni.link_gen

        def appear():
            with self.lock:
                if eni.link_gen == gen and eni.attachment and \
                        self.enis.get(eni.id) is eni:
                    eni.link_ready = True
                    eni.attachment["link_time"] = time.time()
                    self.sync(eni.id)
        self.sched.after(float(delay) / 1000.0, appear)

    def a_DetachNetworkInterface(self, p, dry):
        aid = need(p, "AttachmentId")
        as_bool(p, "Force")
        eid = self.attachments.get(aid)
        eni = self.enis.get(eid) if eid else None
        if eni is None or not eni.attachment or eni.attachment["id"] != aid:
            raise Ec2Error("InvalidAttachmentID.NotFound",
                           "The attachment ID '%s' does not exist" % aid)
        if eni.attachment["device_index"] == 0:
            raise Ec2Error("OperationNotPermitted",
                           "The network interface at device index 0 cannot be "
                           "detached.")
        if eni.attachment["status"] == "detaching":
            raise Ec2Error("IncorrectState",
                           "The attachment '%s' is already detaching." % aid)
        self.dry(dry)
        eni.attachment["status"] = "detaching"
        eni.status = "detaching"

        def detached():
            with self.lock:
                if eni.attachment and eni.attachment["id"] == aid:
                    eni.attachment = None
                    eni.status = "available"
                    eni.link_ready = False
                    eni.link_gen += 1
                    self.attachments.pop(aid, None)
                    self.sync(eni.id)
        self.sched.after(self.detach_delay_ms / 1000.0, detached)
        return {"return": True}

    def a_ModifyNetworkInterfaceAttribute(self, p, dry):
        eni = self.eni_or_404(need(p, "NetworkInterfaceId"))
        aid = p.get("Attachment.AttachmentId")
        dot = as_bool(p, "Attachment.DeleteOnTermination")
        sdc = as_bool(p, "SourceDestCheck.Value")
        groups = indexed(p, "SecurityGroupId")
        desc = p.get("Description.Value")
        if aid is None and dot is not None:
            need(p, "Attachment.AttachmentId")
        if aid is not None:
            if dot is None:
                need(p, "Attachment.DeleteOnTermination")
            if not eni.attachment or eni.attachment["id"] != aid:
                raise Ec2Error("InvalidAttachmentID.NotFound",
                               "The attachment ID '%s' does not exist" % aid)
        if aid is None and sdc is None and not groups and desc is None:
            raise Ec2Error("MissingParameter",
                           "The request must contain the parameter "
                           "Attachment.AttachmentId")
        for g in groups:
            if g not in self.groups:
                raise Ec2Error("InvalidGroup.NotFound",
                               "The security group '%s' does not exist" % g)
        self.dry(dry)
        if aid is not None:
            eni.attachment["delete_on_termination"] = dot
        if sdc is not None:
            eni.source_dest_check = sdc
        if groups:
            eni.groups = groups
        if desc is not None:
            eni.description = desc
        return {"return": True}

    # -------------------------------------------------------------- addresses

    def _eni_ip_limit(self, eni):
        if eni.attachment:
            return self.limits_of(self.instances[eni.attachment["instance"]])[1]
        return self.unattached_ip_limit()

    # -------------------------------------------------------------- prefixes

    def _prefix_args(self, p, subnet, named, with_addresses):
        """(Ipv4PrefixCount, [named /28s]) of a request, checked: a count
        or a list, never both, and never with secondary addresses."""
        count = as_int(p, "Ipv4PrefixCount", 1, 10000)
        if count is None and not named:
            return 0, []
        if count is not None and named:
            raise Ec2Error("InvalidParameterCombination",
                           "Specify either Ipv4PrefixCount or Ipv4Prefix, not both")
        if with_addresses:
            raise Ec2Error("InvalidParameterCombination",
                           "IPv4 prefixes and secondary private IPv4 addresses "
                           "cannot be specified in the same request")
        canon = [subnet.check_prefix(c) for c in named]
        if len(set(canon)) != len(canon):
            raise Ec2Error("InvalidParameterValue", "Duplicate prefix requested")
        return count or 0, canon

    def _no_prefixes_on(self, inst):
        # EC2 delegates prefixes to Nitro instances only; the code and
        # wording of its refusal are the sim's.
        return Ec2Error("UnsupportedOperation",
                        "IPv4 prefixes are not supported on instance type '%s' "
                        "of instance '%s': it is not a Nitro instance."
                        % (inst.type, inst.id))

    def _assign_prefixes(self, eni, count, named, dry):
        if eni.attachment:
            inst = self.instances[eni.attachment["instance"]]
            if not self.prefix_capable(inst.type):
                raise self._no_prefixes_on(inst)
        n = len(named) or count
        # Prefixes and secondary addresses share the ENI's slots.
        if len(eni.addresses) + len(eni.prefixes) + n > self._eni_ip_limit(eni):
            raise Ec2Error("PrivateIpAddressLimitExceeded",
                           "Number of private addresses will exceed limit.")
        self.dry(dry)
        got = eni.subnet.claim_prefixes(named, count)
        eni.prefixes.extend(got)
        self.log_prefixes("assign", eni, got)
        self.sync(eni.id)
        return {"networkInterfaceId": eni.id,
                "assignedPrivateIpAddressesSet": [],
                "assignedIpv4PrefixSet": [{"ipv4Prefix": c} for c in got]}

    @staticmethod
    def _canon_prefix(cidr):
        try:
            return str(ipaddress.IPv4Network(cidr, strict=True))
        except ValueError:
            raise Ec2Error("InvalidParameterValue",
                           "Invalid IPv4 prefix '%s'" % cidr)

    # -------------------------------------------------------------- addresses

    def a_AssignPrivateIpAddresses(self, p, dry):
        eni = self.eni_or_404(need(p, "NetworkInterfaceId"))
        eni.subnet.v4_or_refuse()
        explicit = indexed(p, "PrivateIpAddress")
        count = as_int(p, "SecondaryPrivateIpAddressCount", 1, 10000)
        pcount, named = self._prefix_args(p, eni.subnet, indexed(p, "Ipv4Prefix"),
                                          explicit or count is not None)
        if pcount or named:
            if as_bool(p, "AllowReassignment"):
                raise Ec2Error("InvalidParameterValue",
                               "AllowReassignment is not supported by the simulator")
            return self._assign_prefixes(eni, pcount, named, dry)
        if explicit and count is not None:
            raise Ec2Error("InvalidParameterCombination",
                           "Specify either PrivateIpAddress or "
                           "SecondaryPrivateIpAddressCount, not both")
        if not explicit and count is None:
            need(p, "SecondaryPrivateIpAddressCount")
        if as_bool(p, "AllowReassignment"):
            raise Ec2Error("InvalidParameterValue",
                           "AllowReassignment is not supported by the simulator")
        n = len(explicit) if explicit else count
        if len(eni.addresses) + len(eni.prefixes) + n > self._eni_ip_limit(eni):
            raise Ec2Error("PrivateIpAddressLimitExceeded",
                           "Number of private addresses will exceed limit.")
        for a in explicit:
            if a in eni.addresses or a in eni.subnet.in_use:
                raise Ec2Error("InvalidParameterValue",
                               "Address %s is in use." % a)
            if not eni.subnet.contains(a):
                raise Ec2Error("InvalidParameterValue",
                               "Address %s does not fall within the subnet's "
                               "address range" % a)
        if len(set(explicit)) != len(explicit):
            raise Ec2Error("InvalidParameterValue", "Duplicate address requested")
        if eni.subnet.free() < n:
            raise Ec2Error("InsufficientFreeAddressesInSubnet",
                           "There are not enough free addresses in subnet '%s' to "
                           "satisfy the requested number of addresses."
                           % eni.subnet.id)
        self.dry(dry)
        if explicit:
            for a in explicit:
                eni.subnet.take(a)
            got = explicit
        else:
            got = eni.subnet.allocate(n)
        eni.addresses.extend(got)
        self.sync(eni.id)
        return {"networkInterfaceId": eni.id,
                "assignedPrivateIpAddressesSet": [{"privateIpAddress": a}
                                                  for a in got],
                "assignedIpv4PrefixSet": []}

    def a_UnassignPrivateIpAddresses(self, p, dry):
        eni = self.eni_or_404(need(p, "NetworkInterfaceId"))
        addrs = indexed(p, "PrivateIpAddress")
        prefixes = [self._canon_prefix(c) for c in indexed(p, "Ipv4Prefix")]
        if prefixes:
            if addrs:
                raise Ec2Error("InvalidParameterCombination",
                               "IPv4 prefixes and secondary private IPv4 "
                               "addresses cannot be specified in the same request")
            if any(c not in eni.prefixes for c in prefixes):
                raise Ec2Error("InvalidParameterValue",
                               "Some of the specified prefixes are not assigned "
                               "to interface %s" % eni.id)
            self.dry(dry)
            gone = [c for c in eni.prefixes if c in set(prefixes)]
            for c in gone:
                eni.prefixes.remove(c)
            eni.subnet.release_prefixes(gone)
            self.log_prefixes("unassign", eni, gone)
            self.sync(eni.id)
            return {"return": True}
        if not addrs:
            need(p, "PrivateIpAddress.1")
        for a in addrs:
            if eni.addresses and a == eni.addresses[0]:
                raise Ec2Error("InvalidParameterValue",
                               "The primary private IP address %s cannot be "
                               "unassigned." % a)
            if a not in eni.addresses:
                raise Ec2Error("InvalidParameterValue",
                               "Some of the specified addresses are not assigned "
                               "to interface %s" % eni.id)
        self.dry(dry)
        for a in addrs:
            eni.addresses.remove(a)
        eni.subnet.release(addrs)
        self.sync(eni.id)
        return {"return": True}

    # -------------------------------------------------------------- tags

    def _taggable(self, rid):
        if rid.startswith("eni-"):
            return self.eni_or_404(rid).tags
        if rid.startswith("subnet-"):
            if rid not in self.subnets:
                raise Ec2Error("InvalidSubnetID.NotFound",
                               "The subnet ID '%s' does not exist" % rid)
            return self.subnets[rid].tags
        if rid.startswith("i-"):
            if rid not in self.instances:
                raise Ec2Error("InvalidInstanceID.NotFound",
                               "The instance ID '%s' does not exist" % rid)
            return self.instances[rid].tags
        raise Ec2Error("InvalidID", "The ID '%s' is not valid" % rid)

    def a_CreateTags(self, p, dry):
        ids = indexed(p, "ResourceId")
        if not ids:
            need(p, "ResourceId.1")
        tags = self._tag_pairs(p, "Tag")
        if not tags:
            need(p, "Tag.1.Key")
        targets = [self._taggable(r) for r in ids]
        self.dry(dry)
        for t in targets:
            t.update(tags)
            if len(t) > 50:
                raise Ec2Error("TagLimitExceeded", "The maximum number of tags is 50")
        return {"return": True}

    def a_DeleteTags(self, p, dry):
        ids = indexed(p, "ResourceId")
        if not ids:
            need(p, "ResourceId.1")
        groups = indexed_groups(p, "Tag")
        targets = [self._taggable(r) for r in ids]
        self.dry(dry)
        for t in targets:
            if not groups:
                t.clear()
            for g in groups:
                k = g.get("Key")
                if k in t and ("Value" not in g or t[k] == g["Value"]):
                    del t[k]
        return {"return": True}

    # -------------------------------------------------------------- state dump

    def _subnet_state(self, s):
        d = {"id": s.id, "cidr": str(s.net) if s.net else None, "gateway": s.gateway,
             "az": s.az, "free": s.free(), "in_use": len(s.in_use),
             "prefixes": len(s.prefixes), "free_prefixes": len(s.free_blocks()),
             "fragmented": len(s.blockers)}
        if self.ipv6:
            b = s.v6
            d.update({"ipv6_native": s.ipv6_native, "ipv6_auto_assign": s.auto_ipv6,
                      "ipv6_cidr": str(b.net) if b else None,
                      "ipv6_state": b.state if b else None,
                      "ipv6_association_id": b.assoc_id if b else None,
                      "ipv6_in_use": b.in_use() if b else 0,
                      "ipv6_prefixes": len(b.blocks) if b else 0,
                      "ipv6_free_prefixes": b.free_blocks() if b else 0})
        return d

    def state(self):
        dp = self.dataplane.snapshot() if self.dataplane else {}
        enis = []
        for e in sorted(self.enis.values(), key=lambda e: e.created):
            a = e.attachment
            enis.append({
                "id": e.id, "status": e.status, "subnet": e.subnet.id, "mac": e.mac,
                "description": e.description, "addresses": list(e.addresses),
                "prefixes": list(e.prefixes),
                "ipv6_addresses": list(e.ipv6), "ipv6_prefixes": list(e.ipv6_prefixes),
                "primary_ip": e.addresses[0] if e.addresses else None,
                "primary_ipv6": e.ipv6_primary, "groups": list(e.groups),
                "tags": dict(e.tags),
                "instance_id": a["instance"] if a else None,
                "device_index": a["device_index"] if a else None,
                "delete_on_termination": a["delete_on_termination"] if a else None,
                "attachment": {"id": a["id"], "instance_id": a["instance"],
                               "device_index": a["device_index"],
                               "status": a["status"],
                               "delete_on_termination": a["delete_on_termination"],
                               "link_delay_ms": a.get("link_delay")} if a else None,
                "link_ready": e.link_ready,
                "link": dp.get("links", {}).get(e.id),
                "client_token": e.client_token,
            })
        return {
            "region": self.region, "vpc_id": self.vpc_id,
            "instances": [{"id": i.id, "index": i.index, "netns": i.netns,
                           "type": i.type, "subnet": i.subnet.id,
                           "limits": {"enis": self.limits_of(i)[0],
                                      "ips_per_eni": self.limits_of(i)[1]},
                           "enis": [e.id for e in self.instance_enis(i.id)]}
                          for i in self.instances.values()],
            "enis": enis,
            "subnets": [self._subnet_state(s) for s in self.subnet_list],
            "ipv6": {"enabled": self.ipv6, "vpc_cidr": self.vpc_cidr6,
                     "imds_lag_ms": self.imds_lag_ms},
            "allocation": "scattered" if self.subnet_list[0].scattered
            else "lowest",
            "calls": dict(self.calls), "errors": {k: dict(v) for k, v in
                                                  self.errors.items()},
            "throttles": dict(self.throttles),
            "rate_scale": self.rate_scale,
            "buckets": {k: {"tokens": round(b.tokens, 2), "capacity": b.capacity,
                            "refill": b.refill} for k, b in self.buckets.items()},
            "faults": [dict(f) for f in self.faults],
            "links": {"delay_ms": self.link_delay, "next": list(self.link_next)},
            "delays": {"attach_ms": self.attach_delay_ms,
                       "detach_ms": self.detach_delay_ms},
            "credentials": {"expire_s": self.cred_lifetime,
                            "issued": sum(1 for c in self.creds.values()
                                          if c["node"]),
                            "revoked": sum(1 for c in self.creds.values()
                                           if c["revoked"])},
            "dataplane": {"pending": dp.get("pending", 0),
                          "errors": dp.get("errors", [])},
        }
