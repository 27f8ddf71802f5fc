/*
 * The message table, validation, and the send/receive pair for the internal
 * protocol (see msg.h).  Validation is pure so the unit tests reach every
 * rejection without sockets.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "msg.h"

/* Per-type checkers: each is declared by the type list, so a type without
 * one fails to link. */
#define MSG_CHECK_DECL(name, type, dirs, flags, ans) \
	static const char *check_##name(const void *payload);
MSG_TYPES(MSG_CHECK_DECL)
#undef MSG_CHECK_DECL

#define ANS(s1, s2, entry, end) \
	{ { MSG_##s1, MSG_##s2 }, MSG_##entry, MSG_##end }
#define MSG_TABLE_ENTRY(name, type, dirs, flags, ans) \
	[MSG_##name] = { #name, sizeof(type), (dirs), (flags), ans, \
	    check_##name },
static const struct msg_type_info msg_table[] = {
	[MSG_NONE] = { "NONE", 0, 0, 0, NO_ANS, NULL },
	MSG_TYPES(MSG_TABLE_ENTRY)
};
#undef MSG_TABLE_ENTRY
#undef ANS

/*
 * Every answer flows back the way its request came: a request the broker
 * sends netd is answered by types netd may send the broker.  Checked at
 * build time from the list, each type's directions as a constant.
 */
#define MSG_DIRS_ENTRY(name, type, dirs, flags, ans)	MSG_DIRS_##name = (dirs),
enum {
	MSG_DIRS_NONE = DIR_B2N | DIR_N2B | DIR_B2C | DIR_C2B,
	MSG_TYPES(MSG_DIRS_ENTRY)
};
#undef MSG_DIRS_ENTRY
#define BACK(d)	((((d) & (DIR_B2N | DIR_B2C)) << 1) | \
	(((d) & (DIR_N2B | DIR_C2B)) >> 1))
#define FLOWS_BACK(a, d)	((MSG_DIRS_##a & BACK(d)) == BACK(d))
#define ANSWERS_FLOW_BACK(d, s1, s2, entry, end) \
	(FLOWS_BACK(s1, d) && FLOWS_BACK(s2, d) && FLOWS_BACK(entry, d) && \
	FLOWS_BACK(end, d))
#define ANSWERS_FLOW_BACK_(...)	ANSWERS_FLOW_BACK(__VA_ARGS__)
#define ANS(s1, s2, entry, end)	s1, s2, entry, end
#define MSG_ANSWER_ASSERT(name, type, dirs, flags, ans) \
	_Static_assert(ANSWERS_FLOW_BACK_((dirs), ans), \
	    #name "'s answers must flow back the way it came");
MSG_TYPES(MSG_ANSWER_ASSERT)
#undef MSG_ANSWER_ASSERT
#undef ANS

_Static_assert(sizeof(msg_table) / sizeof(msg_table[0]) == MSG_TYPE_COUNT,
    "msg_table must have exactly one entry per message type");

/* Every payload must fit the receive buffer. */
#define MSG_SIZE_ASSERT(name, type, dirs, flags, ans) \
	_Static_assert(sizeof(type) <= MSG_MAX_PAYLOAD, #name " too large");
MSG_TYPES(MSG_SIZE_ASSERT)
#undef MSG_SIZE_ASSERT

const struct msg_type_info *
msg_type_info(unsigned int type)
{
	if (type == MSG_NONE || type >= MSG_TYPE_COUNT)
		return NULL;
	return &msg_table[type];
}

const char *
msg_type_name(unsigned int type)
{
	const struct msg_type_info *ti = msg_type_info(type);

	return ti ? ti->name : "UNKNOWN";
}

unsigned int
msg_dir_bit(enum msg_peer from, enum msg_peer to)
{
	if (from == PEER_BROKER && to == PEER_NETD)
		return DIR_B2N;
	if (from == PEER_NETD && to == PEER_BROKER)
		return DIR_N2B;
	if (from == PEER_BROKER && to == PEER_CLOUDD)
		return DIR_B2C;
	if (from == PEER_CLOUDD && to == PEER_BROKER)
		return DIR_C2B;
	return 0;
}

bool
msg_str_ok(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

void
msg_strlcpy(char *dst, const char *src, size_t size)
{
	size_t n;

	if (size == 0)
		return;
	n = strnlen(src, size - 1);
	memcpy(dst, src, n);
	memset(dst + n, 0, size - n);
}

/* From half a millisecond (a CNI answer from the warm pool) to a minute
 * (a link that is slow to appear, a cloud call retried to its end). */
const uint64_t msg_hist_bounds_us[MSG_HIST_NBOUNDS] = {
	500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
	1000000, 2500000, 5000000, 10000000, 30000000, 60000000,
};

void
msg_hist_observe(struct msg_hist *h, uint64_t us)
{
	size_t i;

	for (i = 0; i < MSG_HIST_NBOUNDS; i++)
		if (us <= msg_hist_bounds_us[i])
			break;
	h->counts[i]++;
	h->sum_us += us;
}

uint64_t
msg_hist_count(const struct msg_hist *h)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i <= MSG_HIST_NBOUNDS; i++)
		n += h->counts[i];
	return n;
}

void
msg_hist_add(struct msg_hist *to, const struct msg_hist *h)
{
	size_t i;

	for (i = 0; i <= MSG_HIST_NBOUNDS; i++)
		to->counts[i] += h->counts[i];
	to->sum_us += h->sum_us;
}

static const char *const outcome_names[CO_MAX] = {
	[CO_OK] = "ok",
	[CO_THROTTLED] = "throttled",
	[CO_LIMIT_EXCEEDED] = "limit-exceeded",
	[CO_SUBNET_FULL] = "subnet-full",
	[CO_NOT_FOUND] = "not-found",
	[CO_IN_USE] = "in-use",
	[CO_TRANSIENT] = "transient",
	[CO_FATAL] = "fatal",
	[CO_NO_PREFIX] = "no-prefix",
};

const char *
cloud_outcome_name(unsigned int outcome)
{
	return outcome < CO_MAX ? outcome_names[outcome] : "unknown";
}

static const char *const status_names[ST_MAX] = {
	[ST_OK] = "ok",
	[ST_NOT_FOUND] = "not-found",
	[ST_REFUSED] = "refused",
	[ST_FAILED] = "failed",
};

const char *
msg_status_name(unsigned int status)
{
	return status < ST_MAX ? status_names[status] : "unknown";
}

void
msg_chan_init(struct msg_chan *chan, int fd, enum msg_peer self,
    enum msg_peer peer, const char *peer_name)
{
	memset(chan, 0, sizeof(*chan));
	chan->fd = fd;
	chan->self = self;
	chan->peer = peer;
	chan->peer_name = peer_name;
}

void
msg_chan_permit(struct msg_chan *chan, uint32_t permit)
{
	chan->permits |= permit;
}

static bool
seen_once(const struct msg_chan *chan, unsigned int type)
{
	return (chan->seen_once[type / 64] >> (type % 64)) & 1;
}

/* What the table's flags say about this type on this channel now. */
static const char *
msg_permitted(const struct msg_chan *chan, unsigned int type,
    const struct msg_type_info *ti)
{
	if (!chan->greeted && !(ti->flags & MF_HANDSHAKE))
		return "message before the handshake";
	if ((ti->flags & MF_ONCE) && seen_once(chan, type))
		return "message allowed only once, received again";
	if ((ti->flags & MF_POLICY) && !(chan->permits & MSG_PERMIT_POLICY))
		return "request before the policy was accepted";
	return NULL;
}

const char *
msg_validate(const struct msg_chan *chan, const void *buf, size_t n)
{
	const char *why;
	struct msg_hdr hdr;
	const struct msg_type_info *ti;

	if (n < sizeof(hdr))
		return "shorter than a header";
	memcpy(&hdr, buf, sizeof(hdr));
	ti = msg_type_info(hdr.type);
	if (ti == NULL)
		return "unknown message type";
	if ((ti->dirs & msg_dir_bit(chan->peer, chan->self)) == 0)
		return "message type not allowed in this direction";
	if (hdr.flags != 0 || hdr.reserved != 0)
		return "reserved header bits set";
	if (hdr.len != n - sizeof(hdr))
		return "header length differs from datagram length";
	if (hdr.len != ti->size)
		return "payload length differs from its type's size";
	if ((why = msg_permitted(chan, hdr.type, ti)) != NULL)
		return why;
	return ti->check((const unsigned char *)buf + sizeof(hdr));
}

void
msg_hdr_init(struct msg_hdr *hdr, enum msg_type type, uint32_t id, size_t len)
{
	memset(hdr, 0, sizeof(*hdr));
	hdr->type = type;
	hdr->len = len;
	hdr->id = id;
}

int
msg_send(const struct msg_chan *chan, enum msg_type type, uint32_t id,
    const void *payload, size_t len)
{
	const struct msg_type_info *ti = msg_type_info(type);
	struct msg_hdr hdr;
	struct iovec iov[2];
	struct msghdr mh;
	ssize_t n;

	if (ti == NULL || len != ti->size ||
	    (ti->dirs & msg_dir_bit(chan->self, chan->peer)) == 0) {
		errno = EINVAL;
		return -1;
	}
	msg_hdr_init(&hdr, type, id, len);
	iov[0].iov_base = &hdr;
	iov[0].iov_len = sizeof(hdr);
	iov[1].iov_base = (void *)payload;
	iov[1].iov_len = len;
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = iov;
	mh.msg_iovlen = 2;
	do {
		n = sendmsg(chan->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	} while (n == -1 && errno == EINTR);
	if (n == -1)
		return -1;
	if ((size_t)n != sizeof(hdr) + len) {
		errno = EMSGSIZE;
		return -1;
	}
	return 0;
}

/* Close the descriptors a received datagram carries (no message of this
 * protocol has any); true if it carried some, or its control data was cut. */
static bool
drop_fds(struct msghdr *mh)
{
	struct cmsghdr *cm;
	bool had_fds = false;

	for (cm = CMSG_FIRSTHDR(mh); cm != NULL; cm = CMSG_NXTHDR(mh, cm)) {
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
			size_t i, nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			int fd;

			for (i = 0; i < nfd; i++) {
				memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int),
				    sizeof(int));
				close(fd);
			}
			had_fds = true;
		}
	}
	return had_fds || (mh->msg_flags & MSG_CTRUNC);
}

/* Check a datagram of n bytes received into m (its descriptors already
 * dropped: had_fds), and record it in chan's state if it is acceptable. */
static enum msg_recv_result
recv_check(struct msg_chan *chan, const struct msg *m, size_t n,
    int msg_flags, bool had_fds, const char **why)
{
	const struct msg_type_info *ti;

	if (had_fds) {
		*why = "message carries file descriptors";
		return MSG_RECV_BAD;
	}
	if (msg_flags & MSG_TRUNC) {
		*why = "datagram larger than any message";
		return MSG_RECV_BAD;
	}
	if ((*why = msg_validate(chan, m, n)) != NULL)
		return MSG_RECV_BAD;
	ti = msg_type_info(m->hdr.type);
	if (ti->flags & MF_HANDSHAKE)
		chan->greeted = true;
	if (ti->flags & MF_ONCE)
		chan->seen_once[m->hdr.type / 64] |=
		    (uint64_t)1 << (m->hdr.type % 64);
	return MSG_RECV_OK;
}

enum msg_recv_result
msg_recv(struct msg_chan *chan, struct msg *m, const char **why)
{
	union {
		struct cmsghdr	hdr;
		char		buf[MSG_CMSG_SPACE];
	} cbuf;
	struct iovec iov;
	struct msghdr mh;
	ssize_t n;
	bool had_fds;

	*why = NULL;
	iov.iov_base = m;
	iov.iov_len = sizeof(*m);
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf.buf;
	mh.msg_controllen = sizeof(cbuf.buf);
	do {
		n = recvmsg(chan->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	} while (n == -1 && errno == EINTR);
	if (n == -1)
		return (errno == EAGAIN || errno == EWOULDBLOCK) ?
		    MSG_RECV_AGAIN : MSG_RECV_ERROR;
	/* Descriptors go before anything else, also on an empty datagram,
	 * which reads as the end of the channel. */
	had_fds = drop_fds(&mh);
	if (n == 0)
		return MSG_RECV_EOF;
	return recv_check(chan, m, (size_t)n, mh.msg_flags, had_fds, why);
}

enum msg_recv_result
msg_recv_batch(struct msg_chan *chan, struct msg_batch *b)
{
	size_t i;
	int n;

	b->n = b->next = 0;
	memset(b->mh, 0, sizeof(b->mh));
	for (i = 0; i < MSG_BATCH_MAX; i++) {
		b->iov[i].iov_base = &b->m[i];
		b->iov[i].iov_len = sizeof(b->m[i]);
		b->mh[i].msg_hdr.msg_iov = &b->iov[i];
		b->mh[i].msg_hdr.msg_iovlen = 1;
		b->mh[i].msg_hdr.msg_control = b->cbuf[i].buf;
		b->mh[i].msg_hdr.msg_controllen = sizeof(b->cbuf[i].buf);
	}
	do {
		n = recvmmsg(chan->fd, b->mh, MSG_BATCH_MAX,
		    MSG_DONTWAIT | MSG_CMSG_CLOEXEC, NULL);
	} while (n == -1 && errno == EINTR);
	if (n == -1)
		return (errno == EAGAIN || errno == EWOULDBLOCK) ?
		    MSG_RECV_AGAIN : MSG_RECV_ERROR;
	b->n = (size_t)n;
	/* Every descriptor goes now, also those of messages after one that
	 * ends the channel. */
	for (i = 0; i < b->n; i++)
		b->had_fds[i] = drop_fds(&b->mh[i].msg_hdr);
	return b->n > 0 ? MSG_RECV_OK : MSG_RECV_EOF;
}

enum msg_recv_result
msg_batch_take(struct msg_chan *chan, struct msg_batch *b,
    const struct msg **m, const char **why)
{
	size_t i;

	*why = NULL;
	if (b->next == b->n)
		return MSG_RECV_AGAIN;
	i = b->next++;
	if (b->mh[i].msg_len == 0) {
		b->next = b->n;		/* nothing follows an end */
		return MSG_RECV_EOF;
	}
	*m = &b->m[i];
	return recv_check(chan, &b->m[i], b->mh[i].msg_len,
	    b->mh[i].msg_hdr.msg_flags, b->had_fds[i], why);
}

/* ---- per-type meaning checks ---- */

#define STR_OK(field)	msg_str_ok((field), sizeof(field))

static const char *
check_none(const void *p)
{
	(void)p;
	return NULL;
}

/*
 * An address or CIDR field: canonical (common/addr.h), and IPv4, the
 * only family enid takes until issue 35's later steps.  The reasons name
 * the field, so each field has its own pair (ADDR_WHY, CIDR_WHY).
 */
#define ADDR_WHY(field)	((const char *const[2]){ \
	field " is no valid address (unknown family, or not canonical)", \
	field " is IPv6, which enid does not take yet" })
#define CIDR_WHY(field)	((const char *const[2]){ \
	field " is no valid CIDR (unknown family, not canonical, or a " \
	    "length past its family's bits)", \
	field " is IPv6, which enid does not take yet" })

static const char *
check_addr(const struct ip_addr *a, const char *const why[2])
{
	if (!ip_addr_valid(a))
		return why[0];
	return a->family == AF_INET ? NULL : why[1];
}

static const char *
check_addrs(uint32_t n, const struct ip_addr *a, const char *const why[2])
{
	const char *w;
	uint32_t i;

	for (i = 0; i < n; i++)
		if ((w = check_addr(&a[i], why)) != NULL)
			return w;
	return NULL;
}

static const char *
check_cidr(const struct ip_prefix *p, const char *const why[2])
{
	if (!ip_prefix_valid(p))
		return why[0];
	return p->addr.family == AF_INET ? NULL : why[1];
}

static const char *
check_cidrs(uint32_t n, const struct ip_prefix *c, uint32_t max,
    const char *const why[2])
{
	const char *w;
	uint32_t i;

	if (n > max)
		return "too many CIDRs";
	for (i = 0; i < n; i++)
		if ((w = check_cidr(&c[i], why)) != NULL)
			return w;
	return NULL;
}

/*
 * netd's address fields that take either family (issue 35): canonical,
 * IPv4 or IPv6.  A special IPv6 address (link-local, multicast, ...) is
 * left to netd's policy, which refuses it and says so, as it does an
 * IPv4 one outside the VPC.
 */
static const char *
check_addr46(const struct ip_addr *a, const char *why)
{
	if (!ip_addr_valid(a))
		return why;
	return NULL;
}

/* A rule of either family: both of its prefixes of that family. */
static const char *
check_rule_cidrs(const struct ip_prefix *src, const struct ip_prefix *dst)
{
	if (!ip_prefix_valid(src))
		return CIDR_WHY("rule source")[0];
	if (!ip_prefix_valid(dst))
		return CIDR_WHY("rule destination")[0];
	if (src->addr.family != dst->addr.family)
		return "rule source and destination of different families";
	return NULL;
}

/* An absent address is all zero, no stray byte behind family 0. */
static const char *
check_absent(const struct ip_addr *a, const char *why)
{
	static const struct ip_addr none;

	return memcmp(a, &none, sizeof(none)) == 0 ? NULL : why;
}

/*
 * A new IPv6-only field (an ENI's addr6): absent (the zeroed value of no
 * family), or a canonical IPv6 address that is none of the special ones
 * (common/addr.h): no host's own unicast address is.
 */
static const char *
check_addr6_opt(const struct ip_addr *a, const char *field_none,
    const char *field_special)
{
	if (a->family == 0)
		return check_absent(a, field_none);
	if (!ip_addr_valid(a) || a->family != AF_INET6)
		return field_none;
	return ip_addr_is_special(a) ? field_special : NULL;
}

/* An instance's VPC CIDRs: its IPv4 ones, then its IPv6 ones, each of
 * them up to its cap. */
static const char *
check_vpc_cidrs(uint32_t n, const struct ip_prefix *c)
{
	uint32_t i, n4 = 0, n6 = 0;

	if (n > MSG_MAX_VPC_CIDRS)
		return "too many CIDRs";
	for (i = 0; i < n; i++) {
		if (!ip_prefix_valid(&c[i]))
			return "VPC CIDR is no valid CIDR";
		if (c[i].addr.family == AF_INET) {
			if (n6 > 0)
				return "VPC IPv4 CIDR after an IPv6 one";
			n4++;
		} else {
			n6++;
		}
	}
	if (n4 > MSG_MAX_CIDRS || n6 > MSG_MAX_CIDRS6)
		return "too many CIDRs";
	return NULL;
}

static const char *
check_status(const struct msg_cloud_status *st)
{
	if (st->outcome >= CO_MAX)
		return "unknown cloud outcome";
	if (!STR_OK(st->code) || !STR_OK(st->message) ||
	    !STR_OK(st->request_id))
		return "unterminated string in cloud status";
	return NULL;
}

struct ip_prefix
msg_prefix_of(const struct ip_addr *first)
{
	struct ip_prefix p;

	memset(&p, 0, sizeof(p));
	p.addr = *first;
	p.len = first->family == AF_INET6 ? MSG_PREFIX6_LEN : MSG_PREFIX_LEN;
	return p;
}

static const char *const ipv6_state_names[IPV6_ST_MAX] = {
	[IPV6_ST_NONE] = "none",
	[IPV6_ST_ASSOCIATED] = "associated",
	[IPV6_ST_ASSOCIATING] = "associating",
	[IPV6_ST_DISASSOCIATING] = "disassociating",
	[IPV6_ST_DISASSOCIATED] = "disassociated",
	[IPV6_ST_FAILING] = "failing",
	[IPV6_ST_FAILED] = "failed",
};

const char *
cloud_ipv6_state_name(unsigned int state)
{
	return state < IPV6_ST_MAX ? ipv6_state_names[state] : "unknown";
}

/* An IPv6 field cloudd fills: canonical, IPv6, and an address a host may
 * hold (ip_addr_is_special: no loopback, link-local, multicast, ...). */
static const char *
check_addr6(const struct ip_addr *a, const char *why)
{
	if (!ip_addr_valid(a) || a->family != AF_INET6 ||
	    ip_addr_is_special(a))
		return why;
	return NULL;
}

static bool
addr_none(const struct ip_addr *a)
{
	static const struct ip_addr zero;

	return memcmp(a, &zero, sizeof(zero)) == 0;
}

static bool
prefix_none(const struct ip_prefix *p)
{
	static const struct ip_prefix zero;

	return memcmp(p, &zero, sizeof(zero)) == 0;
}

/* An address of family (AF_INET or AF_INET6) as the cloud calls are
 * asked for and answered: IPv4 by the old fields' rules, IPv6 by
 * check_addr6. */
static const char *
check_addr_of(int family, const struct ip_addr *a, const char *what)
{
	if (!ip_addr_valid(a))
		return what;
	if (a->family != family)
		return "address of another family than the message's";
	return family == AF_INET6 && ip_addr_is_special(a) ? what : NULL;
}

/* n prefixes of family, each the first address of an aligned
 * msg_prefix_of() prefix, none twice, at most max. */
static const char *
check_prefixes(uint32_t n, const struct ip_addr *prefixes, uint32_t max,
    int family)
{
	struct ip_prefix p;
	const char *why;
	uint32_t i, j;

	if (n > max)
		return "too many prefixes";
	for (i = 0; i < n; i++) {
		if ((why = check_addr_of(family, &prefixes[i],
		    "prefix is no valid address, or a special one")) != NULL)
			return why;
		p = msg_prefix_of(&prefixes[i]);
		if (!ip_prefix_is_network(&p) ||
		    ip_addr_is_unspecified(&prefixes[i]))
			return "prefix not aligned";
		for (j = 0; j < i; j++)
			if (ip_addr_eq(&prefixes[j], &prefixes[i]))
				return "prefix twice";
	}
	return NULL;
}

/* The family of a list that must have one (an answer's): its first
 * entry's, AF_INET for an empty list. */
static int
family_of(uint32_t n, const struct ip_addr *a)
{
	return n > 0 ? a[0].family : AF_INET;
}

/* n IPv6 addresses cloudd passes on: usable, none twice. */
static const char *
check_addrs6(uint32_t n, const struct ip_addr *a, uint32_t max,
    const char *field)
{
	uint32_t i, j;

	if (n > max)
		return "too many IPv6 addresses";
	for (i = 0; i < n; i++) {
		if (check_addr6(&a[i], field) != NULL)
			return field;
		for (j = 0; j < i; j++)
			if (ip_addr_eq(&a[j], &a[i]))
				return "IPv6 address twice";
	}
	return NULL;
}

/* A subnet's IPv6 block as cloudd passes it on: an IPv6 /64 network
 * whose address is no special one. */
static bool
cidr6_ok(const struct ip_prefix *p)
{
	return ip_prefix_valid(p) && p->addr.family == AF_INET6 &&
	    p->len == 64 && ip_prefix_is_network(p) &&
	    !ip_addr_is_special(&p->addr);
}

/* Does one of n prefixes hold addr? */
static bool
in_prefixes(const struct ip_addr *addr, uint32_t n,
    const struct ip_addr *prefixes)
{
	struct ip_prefix p;
	uint32_t i;

	for (i = 0; i < n; i++) {
		p = msg_prefix_of(&prefixes[i]);
		if (ip_prefix_contains(&p, addr))
			return true;
	}
	return false;
}

static const char *
check_tags(uint32_t n, const struct msg_tag *t)
{
	uint32_t i;

	if (n > MSG_MAX_TAGS)
		return "too many tags";
	for (i = 0; i < n; i++)
		if (!STR_OK(t[i].key) || !STR_OK(t[i].value))
			return "unterminated tag";
	return NULL;
}

static const char *
check_sgs(uint32_t n, const char (*sgs)[MSG_ID_LEN])
{
	uint32_t i;

	if (n > MSG_MAX_SGS)
		return "too many security groups";
	for (i = 0; i < n; i++)
		if (!msg_str_ok(sgs[i], MSG_ID_LEN))
			return "unterminated security group";
	return NULL;
}

static const char *
check_HELLO(const void *p)
{
	return check_none(p);
}

static const char *
check_HELLO_ACK(const void *p)
{
	return check_none(p);
}

static const char *
check_LOG_LEVEL(const void *p)
{
	const struct msg_loglevel *m = p;

	return (m->level < 0 || m->level > 3) ? "unknown log level" : NULL;
}

static const char *
check_PING(const void *p)
{
	return check_none(p);
}

static const char *
check_PONG(const void *p)
{
	return check_none(p);
}

static const char *
check_NETD_POLICY(const void *p)
{
	const struct msg_netd_policy *m = p;

	return check_vpc_cidrs(m->ncidrs, m->cidrs);
}

static const char *
check_NETD_DECLARE_ENI(const void *p)
{
	return check_none(p);
}

static const char *
check_NETD_FORGET_ENI(const void *p)
{
	return check_none(p);
}

static const char *
check_NETD_FIND_LINK(const void *p)
{
	return check_none(p);
}

/* An ENI's addresses: IPv4 (with its subnet's length) or none, IPv6 or
 * none, not both none. */
static const char *
check_eni_addrs(const struct msg_netd_setup_eni *m)
{
	static const struct ip_prefix none;
	const char *why;

	if (m->addr.addr.family == 0) {
		if (memcmp(&m->addr, &none, sizeof(none)) != 0)
			return "ENI address is no valid CIDR";
	} else if ((why = check_cidr(&m->addr, CIDR_WHY("ENI address"))) !=
	    NULL)
		return why;
	if ((why = check_addr6_opt(&m->addr6, "ENI IPv6 address is no valid "
	    "IPv6 address", "ENI IPv6 address is a special one (link-local, "
	    "multicast, loopback, unspecified or IPv4-embedded)")) != NULL)
		return why;
	if (m->addr.addr.family == 0 && m->addr6.family == 0)
		return "ENI has neither an IPv4 nor an IPv6 address";
	return NULL;
}

static const char *
check_NETD_SETUP_ENI(const void *p)
{
	const struct msg_netd_setup_eni *m = p;
	const char *why;

	if ((why = check_eni_addrs(m)) != NULL)
		return why;
	if (m->addr.addr.family == 0)
		return m->gateway.family == 0 ? check_absent(&m->gateway,
		    "gateway is no valid address") :
		    "gateway without an IPv4 address";
	return check_addr(&m->gateway, ADDR_WHY("gateway"));
}

static const char *
check_NETD_TEARDOWN_ENI(const void *p)
{
	const struct msg_netd_setup_eni *m = p;
	const char *why;

	if ((why = check_eni_addrs(m)) != NULL)
		return why;
	/* The gateway is not used to tear down: absent or IPv4. */
	if (m->gateway.family == 0)
		return check_absent(&m->gateway, "gateway is no valid address");
	return check_addr(&m->gateway, ADDR_WHY("gateway"));
}

static const char *
check_NETD_ADD_POD(const void *p)
{
	const struct msg_netd_pod_rule *m = p;
	const char *why;

	if ((why = check_addr46(&m->addr, "pod address is no valid address "
	    "(unknown family, or not canonical)")) != NULL)
		return why;
	if ((why = check_addr6_opt(&m->addr6, "pod IPv6 address is no valid "
	    "IPv6 address", "pod IPv6 address is a special one (link-local, "
	    "multicast, loopback, unspecified or IPv4-embedded)")) != NULL)
		return why;
	/* The second address is the other family's: a pod has one of
	 * each at most. */
	if (m->addr6.family != 0 && m->addr.family != AF_INET)
		return "pod has two IPv6 addresses";
	return NULL;
}

static const char *
check_NETD_DEL_POD(const void *p)
{
	return check_NETD_ADD_POD(p);
}

static const char *
check_NETD_DUMP_LINKS(const void *p)
{
	return check_none(p);
}

static const char *
check_NETD_DUMP_RULES(const void *p)
{
	return check_none(p);
}

static const char *
check_NETD_LINK(const void *p)
{
	const struct msg_netd_link *m = p;

	return STR_OK(m->name) ? NULL : "unterminated link name";
}

static const char *
check_NETD_RULE(const void *p)
{
	const struct msg_netd_rule *m = p;

	return check_rule_cidrs(&m->src, &m->dst);
}

static const char *
check_NETD_ADD_POD_ROUTE(const void *p)
{
	const struct msg_netd_pod_route *m = p;

	if (!STR_OK(m->dev))
		return "unterminated device name";
	return check_addr46(&m->addr, "pod address is no valid address "
	    "(unknown family, or not canonical)");
}

static const char *
check_NETD_DUMP_ROUTES(const void *p)
{
	return check_none(p);
}

static const char *
check_NETD_ROUTE(const void *p)
{
	const struct msg_netd_route *m = p;

	if (!STR_OK(m->dev))
		return "unterminated device name";
	return check_addr46(&m->addr, "route destination is no valid "
	    "address (unknown family, or not canonical)");
}

static const char *
check_NETD_RESULT(const void *p)
{
	const struct msg_result *m = p;

	if (m->status >= ST_MAX)
		return "unknown result status";
	if (m->changed > MSG_MAX_CHANGED)
		return "more changes than one request makes";
	return STR_OK(m->message) ? NULL : "unterminated result message";
}

static const char *
check_NETD_END(const void *p)
{
	return check_none(p);
}

static const char *
check_CLOUD_DESCRIBE_INSTANCE(const void *p)
{
	return check_none(p);
}

static const char *
check_CLOUD_INSTANCE(const void *p)
{
	const struct msg_cloud_instance *m = p;
	const char *why;

	if ((why = check_status(&m->st)) != NULL)
		return why;
	if (!STR_OK(m->instance_id) || !STR_OK(m->instance_type) ||
	    !STR_OK(m->az) || !STR_OK(m->region) || !STR_OK(m->primary_eni) ||
	    !STR_OK(m->subnet_id) || !STR_OK(m->vpc_id) ||
	    !STR_OK(m->hypervisor))
		return "unterminated string in instance";
	if (m->bare_metal > 1 || m->prefixes_ok > 1)
		return "instance flag not 0 or 1";
	if (m->vcpus > MSG_MAX_VCPUS)
		return "instance vCPUs out of range";
	/* Only Nitro and bare metal hold prefixes (DescribeInstanceTypes). */
	if (m->prefixes_ok != (m->bare_metal ||
	    strcmp(m->hypervisor, "nitro") == 0))
		return "prefixes_ok is not what the hypervisor says";
	if ((why = check_addr(&m->primary_ip,
	    ADDR_WHY("instance primary address"))) != NULL)
		return why;
	if ((why = check_vpc_cidrs(m->ncidrs, m->cidrs)) != NULL)
		return why;
	if (!addr_none(&m->primary_ip6) && check_addr6(&m->primary_ip6,
	    "x") != NULL)
		return "instance primary IPv6 address not a usable IPv6 one";
	if (!prefix_none(&m->subnet_cidr6) && !cidr6_ok(&m->subnet_cidr6))
		return "instance subnet IPv6 CIDR not an IPv6 /64 network";
	if (m->ipv6_supported > 1)
		return "instance flag not 0 or 1";
	return check_sgs(m->nsgs, m->sgs);
}

static const char *
check_CLOUD_DESCRIBE_SUBNETS(const void *p)
{
	const struct msg_cloud_describe_subnets *m = p;
	uint32_t i;

	if (m->nids > MSG_MAX_SUBNETS)
		return "too many subnet ids";
	for (i = 0; i < m->nids; i++)
		if (!STR_OK(m->ids[i]))
			return "unterminated subnet id";
	return NULL;
}

static const char *
check_CLOUD_SUBNET(const void *p)
{
	const struct msg_cloud_subnet *m = p;

	if (!STR_OK(m->subnet_id) || !STR_OK(m->az))
		return "unterminated string in subnet";
	if (m->ipv6_native > 1)
		return "subnet flag not 0 or 1";
	if (m->ipv6_state >= IPV6_ST_MAX)
		return "unknown subnet IPv6 state";
	/* Only an associated block is passed on, and it always is. */
	if (m->ipv6_state == IPV6_ST_ASSOCIATED ? !cidr6_ok(&m->cidr6) :
	    !prefix_none(&m->cidr6))
		return "subnet IPv6 CIDR not an associated IPv6 /64 network";
	/* An IPv6-only subnet has no IPv4 CIDR: none, never 0/0. */
	if (m->ipv6_native)
		return prefix_none(&m->cidr) ? NULL :
		    "IPv6-only subnet with an IPv4 CIDR";
	return check_cidr(&m->cidr, CIDR_WHY("subnet CIDR"));
}

static const char *
check_CLOUD_CREATE_ENI(const void *p)
{
	const struct msg_cloud_create_eni *m = p;
	const char *why;

	if (!STR_OK(m->subnet_id) || !STR_OK(m->client_token) ||
	    !STR_OK(m->description))
		return "unterminated string in create-eni";
	if (m->nsecondary > MSG_MAX_ENI_ADDRS)
		return "too many secondary addresses";
	if (m->nprefixes > MSG_MAX_ENI_PREFIXES)
		return "too many prefixes";
	if (m->nprefixes > 0 && m->nsecondary > 0)
		return "both prefixes and secondary addresses";
	if (m->nipv6 > 1)
		return "more than one IPv6 address to create an ENI with";
	if (m->nipv6 > 0 && m->nprefixes > 0)
		return "both prefixes and IPv6 addresses";
	if ((why = check_sgs(m->nsgs, m->sgs)) != NULL)
		return why;
	return check_tags(m->ntags, m->tags);
}

/* An ENI's IPv6 fields (msg.h, struct msg_cloud_eni). */
static const char *
check_eni6(const struct msg_cloud_eni *m)
{
	const char *why;
	uint32_t i;

	if (m->ipv6_native > 1)
		return "eni flag not 0 or 1";
	if (m->ipv6_native && (m->naddrs > 0 || m->nprefixes > 0 ||
	    !ip_addr_is_unspecified(&m->primary_ip)))
		return "IPv6-only eni with IPv4 addresses";
	if ((why = check_addrs6(m->naddrs6, m->addrs6, MSG_MAX_ENI_ADDRS6,
	    "eni IPv6 address not a usable IPv6 one")) != NULL)
		return why;
	if ((why = check_prefixes(m->nprefixes6, m->prefixes6,
	    MSG_MAX_ENI_PREFIXES6, AF_INET6)) != NULL)
		return why;
	for (i = 0; i < m->naddrs6; i++)
		if (in_prefixes(&m->addrs6[i], m->nprefixes6, m->prefixes6))
			return "an IPv6 address of the eni in one of its "
			    "prefixes";
	if (m->nbad_addrs6 > MSG_MAX_LEFT_OUT ||
	    m->nbad_prefixes6 > MSG_MAX_LEFT_OUT)
		return "too many IPv6 entries left out";
	return NULL;
}

static const char *
check_CLOUD_ENI(const void *p)
{
	const struct msg_cloud_eni *m = p;
	const char *why;
	uint32_t i;

	if ((why = check_status(&m->st)) != NULL)
		return why;
	if (!STR_OK(m->eni_id) || !STR_OK(m->subnet_id) ||
	    !STR_OK(m->instance_id) || !STR_OK(m->attachment_id))
		return "unterminated string in eni";
	if (m->status >= ENI_ST_MAX || m->attach_status >= ENI_ST_MAX)
		return "unknown eni status";
	if (m->naddrs > MSG_MAX_ENI_ADDRS)
		return "too many eni addresses";
	if ((why = check_addr(&m->primary_ip,
	    ADDR_WHY("eni primary address"))) != NULL ||
	    (why = check_addrs(m->naddrs, m->addrs,
	    ADDR_WHY("eni address"))) != NULL)
		return why;
	if ((why = check_prefixes(m->nprefixes, m->prefixes,
	    MSG_MAX_ENI_PREFIXES, AF_INET)) != NULL)
		return why;
	if (m->nbad_prefixes > MSG_MAX_ENI_PREFIXES)
		return "too many refused prefixes";
	/* Addresses and prefixes share the ENI's slots, and no address is
	 * both an address of the ENI's and in one of its prefixes. */
	if (m->naddrs + m->nprefixes + m->nbad_prefixes > MSG_MAX_ENI_ADDRS)
		return "more addresses and prefixes than an ENI holds";
	if (!ip_addr_is_unspecified(&m->primary_ip) &&
	    in_prefixes(&m->primary_ip, m->nprefixes, m->prefixes))
		return "an address of the eni in one of its prefixes";
	for (i = 0; i < m->naddrs; i++)
		if (in_prefixes(&m->addrs[i], m->nprefixes, m->prefixes))
			return "an address of the eni in one of its prefixes";
	if ((why = check_eni6(m)) != NULL)
		return why;
	return check_tags(m->ntags, m->tags);
}

static const char *
check_CLOUD_ATTACH(const void *p)
{
	const struct msg_cloud_attach *m = p;

	return STR_OK(m->eni_id) ? NULL : "unterminated eni id";
}

static const char *
check_CLOUD_ATTACHED(const void *p)
{
	const struct msg_cloud_attached *m = p;
	const char *why;

	if ((why = check_status(&m->st)) != NULL)
		return why;
	return STR_OK(m->attachment_id) ? NULL : "unterminated attachment id";
}

static const char *
check_CLOUD_SET_DOT(const void *p)
{
	const struct msg_cloud_set_dot *m = p;

	if (!STR_OK(m->eni_id) || !STR_OK(m->attachment_id))
		return "unterminated string in set-dot";
	return m->value > 1 ? "delete-on-termination not 0 or 1" : NULL;
}

static const char *
check_ips(const struct msg_cloud_ips *m)
{
	const char *why;
	uint32_t i;

	if (!STR_OK(m->eni_id))
		return "unterminated eni id";
	if (m->naddrs > MSG_MAX_ENI_ADDRS || m->count > MSG_MAX_ENI_ADDRS)
		return "too many addresses";
	if (m->family != AF_INET && m->family != AF_INET6)
		return "address request of no known family";
	for (i = 0; i < m->naddrs; i++)
		if ((why = check_addr_of((int)m->family, &m->addrs[i],
		    "eni address is no valid address, or a special one")) !=
		    NULL)
			return why;
	return NULL;
}

static const char *
check_CLOUD_ASSIGN_IPS(const void *p)
{
	return check_ips(p);
}

static const char *
check_CLOUD_UNASSIGN_IPS(const void *p)
{
	return check_ips(p);
}

static const char *
check_CLOUD_ASSIGNED(const void *p)
{
	const struct msg_cloud_assigned *m = p;
	const char *why;
	uint32_t i;
	int family = family_of(m->naddrs, m->addrs);

	if ((why = check_status(&m->st)) != NULL)
		return why;
	if (m->naddrs > MSG_MAX_ENI_ADDRS)
		return "too many addresses";
	for (i = 0; i < m->naddrs; i++)
		if ((why = check_addr_of(family, &m->addrs[i],
		    "assigned address is no valid address, or a special "
		    "one")) != NULL)
			return why;
	return NULL;
}

static const char *
check_cloud_prefixes(const struct msg_cloud_prefixes *m)
{
	if (!STR_OK(m->eni_id))
		return "unterminated eni id";
	if (m->count > MSG_MAX_ENI_PREFIXES)
		return "too many prefixes";
	if (m->count > 0 && m->nprefixes > 0)
		return "both a prefix count and prefixes";
	if (m->family != AF_INET && m->family != AF_INET6)
		return "prefix request of no known family";
	return check_prefixes(m->nprefixes, m->prefixes,
	    MSG_MAX_ENI_PREFIXES, (int)m->family);
}

static const char *
check_CLOUD_ASSIGN_PREFIXES(const void *p)
{
	return check_cloud_prefixes(p);
}

static const char *
check_CLOUD_UNASSIGN_PREFIXES(const void *p)
{
	const struct msg_cloud_prefixes *m = p;

	if (m->count != 0)
		return "a prefix count to unassign";
	return check_cloud_prefixes(p);
}

static const char *
check_CLOUD_PREFIXES_ASSIGNED(const void *p)
{
	const struct msg_cloud_prefixes_assigned *m = p;
	const char *why;

	if ((why = check_status(&m->st)) != NULL)
		return why;
	return check_prefixes(m->nprefixes, m->prefixes,
	    MSG_MAX_ENI_PREFIXES, family_of(m->nprefixes, m->prefixes));
}

static const char *
check_NETD_SNAT(const void *p)
{
	const struct msg_netd_snat *m = p;

	return check_addr(&m->to, ADDR_WHY("SNAT target"));
}

static const char *
check_NETD_DUMP_SNAT(const void *p)
{
	return check_none(p);
}

static const char *
check_NETD_SNAT_STATE(const void *p)
{
	const struct msg_netd_snat_state *m = p;
	const char *why;

	if (!STR_OK(m->primary_link) || !STR_OK(m->message) ||
	    !STR_OK(m->differs) || !STR_OK(m->src6_differs))
		return "unterminated string in SNAT state";
	if (m->enabled > 1 || m->random_fully > 1 || m->in_place > 1 ||
	    m->src6_in_place > 1)
		return "SNAT state flag not 0 or 1";
	if (m->in_place && m->differs[0] != '\0')
		return "SNAT state in place, yet says what differs";
	if (m->src6_in_place && m->src6_differs[0] != '\0')
		return "IPv6 source check in place, yet says what differs";
	if ((why = check_addr(&m->to, ADDR_WHY("SNAT target"))) != NULL)
		return why;
	if (m->nuntranslated > MSG_MAX_SNAT_CIDRS)
		return "too many untranslated CIDRs";
	return check_cidrs(m->nuntranslated, m->untranslated,
	    MSG_MAX_SNAT_CIDRS, CIDR_WHY("untranslated CIDR"));
}

static const char *
check_CLOUD_DETACH(const void *p)
{
	const struct msg_cloud_detach *m = p;

	if (!STR_OK(m->eni_id) || !STR_OK(m->attachment_id))
		return "unterminated string in detach";
	return NULL;
}

static const char *
check_CLOUD_DELETE(const void *p)
{
	const struct msg_cloud_delete *m = p;

	return STR_OK(m->eni_id) ? NULL : "unterminated eni id";
}

static const char *
check_CLOUD_DESCRIBE_ENIS(const void *p)
{
	const struct msg_cloud_describe_enis *m = p;

	if (m->filter >= ENIS_FILTER_MAX)
		return "unknown eni filter";
	if (m->status >= ENI_ST_MAX)
		return "unknown eni status";
	if (!STR_OK(m->instance_id))
		return "unterminated instance id";
	return check_tags(m->ntags, m->tags);
}

static const char *
check_CLOUD_CHECK_INSTANCES(const void *p)
{
	const struct msg_cloud_check_instances *m = p;
	uint32_t i;

	if (m->nids > MSG_MAX_INSTANCE_IDS)
		return "instance id count out of range";
	for (i = 0; i < m->nids; i++)
		if (!STR_OK(m->ids[i]) || m->ids[i][0] == '\0')
			return "empty or unterminated instance id";
	return NULL;
}

static const char *
check_CLOUD_INSTANCES(const void *p)
{
	const struct msg_cloud_instances *m = p;
	uint32_t i;
	const char *why;

	if ((why = check_status(&m->st)) != NULL)
		return why;
	if (m->nids > MSG_MAX_INSTANCE_IDS)
		return "instance id count out of range";
	for (i = 0; i < MSG_MAX_INSTANCE_IDS; i++)
		if (m->exists[i] > 1 || (i >= m->nids && m->exists[i] != 0))
			return "instance existence flag out of range";
	return NULL;
}

static const char *
check_CLOUD_DONE(const void *p)
{
	const struct msg_cloud_done *m = p;

	return check_status(&m->st);
}

static const char *
check_CLOUD_STATS(const void *p)
{
	return check_none(p);
}

static bool
action_name_ok(const char *s)
{
	size_t i;

	if (!msg_str_ok(s, MSG_ACTION_LEN) || s[0] == '\0')
		return false;
	for (i = 0; s[i] != '\0'; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}

/*
 * What cloudd's counting makes true: an attempt is counted when it
 * starts and observed when it ends, and only an ended one can fail, be
 * throttled, or be retried.
 */
static const char *
check_CLOUD_STATS_ANSWER(const void *p)
{
	static const struct msg_cloud_action_stats zero;
	const struct msg_cloud_stats_answer *m = p;
	const struct msg_cloud_action_stats *a;
	uint32_t i, j;

	if (m->nactions > MSG_STATS_ACTIONS)
		return "too many actions in cloud stats";
	for (i = 0; i < MSG_STATS_ACTIONS; i++) {
		a = &m->actions[i];
		if (i >= m->nactions) {
			if (memcmp(a, &zero, sizeof(zero)) != 0)
				return "cloud stats entry past the count is "
				    "not empty";
			continue;
		}
		if (!action_name_ok(a->action))
			return "cloud stats action name not alphanumeric";
		/* Bounded, so that sums neither wrap nor lose precision
		 * as JSON numbers. */
		if (a->calls > MSG_STATS_COUNT_MAX)
			return "cloud stats counter out of range";
		for (j = 0; j <= MSG_HIST_NBOUNDS; j++)
			if (a->latency.counts[j] > a->calls)
				return "cloud stats counters inconsistent";
		if (msg_hist_count(&a->latency) > a->calls ||
		    a->errors > msg_hist_count(&a->latency) ||
		    a->throttles > a->errors || a->retries > a->errors)
			return "cloud stats counters inconsistent";
	}
	return NULL;
}
