"""Rules nft(8) cannot write, added over raw nfnetlink, for netd's tests
of a hostile table ip enid: python3 nft_raw.py KIND TABLE CHAIN prints the
kernel's error for the rule (0: added).  Needs CAP_NET_ADMIN."""
import socket
import struct
import sys

NETLINK_NETFILTER = 12
NFNL_SUBSYS_NFTABLES = 10
NFT_MSG_NEWRULE = 6
NLM_F_REQUEST, NLM_F_ACK, NLM_F_CREATE, NLM_F_APPEND = 1, 4, 0x400, 0x800
NLA_F_NESTED = 0x8000


def attr(t, data):
    n = 4 + len(data)
    return struct.pack("=HH", n, t) + data + b"\0" * ((4 - n % 4) % 4)


def nest(t, *items):
    return attr(t | NLA_F_NESTED, b"".join(items))


def s(x):
    return x.encode() + b"\0"


def be32(v):
    return struct.pack(">I", v)


def msg(mtype, flags, seq, family, body, res_id=0):
    payload = struct.pack("=BBH", family, 0, socket.htons(res_id)) + body
    return struct.pack("=IHHII", 16 + len(payload), mtype, flags, seq, 0) \
        + payload


def expr(name, *data):
    return nest(1, attr(1, s(name)), nest(2, *data))


def add_rule(table, chain, exprs):
    """One NEWRULE in a batch; returns the kernel's error (0 ok)."""
    sk = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    sk.bind((0, 0))
    body = attr(1, s(table)) + attr(2, s(chain)) + nest(4, *exprs)
    b = msg(0x10, NLM_F_REQUEST, 1, 0, b"", NFNL_SUBSYS_NFTABLES)
    b += msg((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWRULE,
             NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_APPEND, 2, 2,
             body)
    b += msg(0x11, NLM_F_REQUEST, 3, 0, b"", NFNL_SUBSYS_NFTABLES)
    sk.send(b)
    data = sk.recv(65536)
    sk.close()
    _, mtype, _, seq, _ = struct.unpack_from("=IHHII", data)
    if mtype == 2:
        return struct.unpack_from("=i", data, 16)[0]
    return 0


def inner_rule():
    """An "inner" expression (kernel 6.2+; unknown to libnftnl < 1.2.5)
    loading the inner meta l4proto, then a counter."""
    inner = expr("inner", attr(1, be32(0)), attr(2, be32(1)),
                 attr(3, be32(1 | 8)), attr(4, be32(8)), nest(5,
                 attr(1, s("meta")), nest(2, attr(2, be32(16)),
                                          attr(1, be32(1)))))
    return [inner, expr("counter")]


KINDS = {"inner": inner_rule}

if __name__ == "__main__":
    print(add_rule(sys.argv[2], sys.argv[3], KINDS[sys.argv[1]]()))
