/*
 * nf_tables I/O for netd's table "ip enid" (see nft.h): requests built
 * with libnftnl, sent and answered over libmnl's socket, answers checked
 * message by message (sequence, port, type) and turned into snat.c's data
 * form.  Every read loop is bounded in messages and in time; a malformed
 * answer is an error naming it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nf_tables.h>
#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/table.h>

#include "loop.h"
#include "nft.h"

/* The family nft_open() probes with: the SNAT table's. */
#define NFT_PROBE_FAMILY	NFPROTO_IPV4
_Static_assert(SNAT_FAMILY_IP == NFPROTO_IPV4 &&
    SNAT_FAMILY_IP6 == NFPROTO_IPV6, "snat.h numbers families as nf_tables");
#define NFT_RECV_TIMEOUT_S	2	/* one answer from the kernel */
#define NFT_DEADLINE_MS		5000	/* one whole request or dump */
#define NFT_MAX_RECVS		4096	/* datagrams per request */
#define NFT_REQ_LEN		4096	/* a GET request, with room */

static int
errf(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int
errf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}

/* ---- one request and its answers ---- */

typedef int	(*nft_msg_cb)(const struct nlmsghdr *, void *);

/* A message not for the request at hand: the end of a dump left unread
 * (n->dumping) is noted as it goes by. */
static void
skipped(struct nft *n, const struct nlmsghdr *h)
{
	if (n->dumping && h->nlmsg_seq == n->dump_seq &&
	    (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR))
		n->dumping = false;
}

/* An answer to an earlier request: true, and skipped. */
static bool
stale(struct nft *n, const struct nlmsghdr *h, uint32_t seq)
{
	if (h->nlmsg_seq == seq && (h->nlmsg_pid == 0 ||
	    h->nlmsg_pid == n->portid))
		return false;
	skipped(n, h);
	return true;
}

/*
 * Read to the end of a dump a callback stopped reading (the kernel allows
 * one dump at a time per socket): 0, or -EBUSY once the bounds are spent.
 * A dump of a table netd has since replaced ends at once; one of a huge
 * table it could not replace may take several calls.
 */
static int
nft_drain(struct nft *n, char *err, size_t errlen)
{
	uint64_t start = now_ms();
	unsigned int recvs;
	ssize_t got;
	int len;

	for (recvs = 0; n->dumping && recvs < NFT_MAX_RECVS &&
	    now_ms() - start <= NFT_DEADLINE_MS; recvs++) {
		const struct nlmsghdr *h;

		if ((got = mnl_socket_recvfrom(n->nl, n->buf,
		    sizeof(n->buf))) < 0)
			return errf(err, errlen, -errno, "nftables: reading "
			    "the rest of an earlier dump: %s",
			    strerror(errno));
		len = (int)got;
		for (h = (const struct nlmsghdr *)n->buf;
		    n->dumping && mnl_nlmsg_ok(h, len);
		    h = mnl_nlmsg_next(h, &len))
			skipped(n, h);
	}
	if (n->dumping)
		return errf(err, errlen, -EBUSY, "nftables: an earlier dump "
		    "of table " SNAT_TABLE " still not ended after %u "
		    "datagrams or %d ms (a huge table?)", recvs,
		    NFT_DEADLINE_MS);
	return 0;
}

/*
 * Send one request (seq n->seq) and read its answers up to the ack, the
 * end of the dump, or an error: 0, or a negative errno (the kernel's own
 * for NLMSG_ERROR).  cb sees every other message; it returns 0, a
 * negative errno, or 1 for "enough": the rest of the dump is left unread
 * (n->dumping) and read past before the next request.
 */
static int
nft_request(struct nft *n, struct nlmsghdr *req, const char *what,
    nft_msg_cb cb, void *arg, char *err, size_t errlen)
{
	uint64_t start;
	uint32_t seq = req->nlmsg_seq;
	unsigned int recvs;
	ssize_t got;
	int len, rc;

	if ((rc = nft_drain(n, err, errlen)) < 0)
		return rc;
	start = now_ms();
	if (mnl_socket_sendto(n->nl, req, req->nlmsg_len) < 0)
		return errf(err, errlen, -errno, "%s: sending: %s", what,
		    strerror(errno));
	for (recvs = 0; recvs < NFT_MAX_RECVS; recvs++) {
		const struct nlmsghdr *h;

		if (now_ms() - start > NFT_DEADLINE_MS)
			break;
		got = mnl_socket_recvfrom(n->nl, n->buf, sizeof(n->buf));
		if (got < 0)
			return errf(err, errlen, -errno, "%s: receiving: %s",
			    what, strerror(errno));
		len = (int)got;
		for (h = (const struct nlmsghdr *)n->buf; mnl_nlmsg_ok(h, len);
		    h = mnl_nlmsg_next(h, &len)) {
			if (stale(n, h, seq))
				continue;
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = mnl_nlmsg_get_payload(h);

				if (h->nlmsg_len < mnl_nlmsg_size(sizeof(*e)))
					return errf(err, errlen, -EBADMSG,
					    "%s: a truncated error message",
					    what);
				if (e->error == 0)
					return 0;
				return errf(err, errlen, e->error < 0 ?
				    e->error : -EPROTO, "%s: %s", what,
				    strerror(e->error < 0 ? -e->error : EPROTO));
			}
			if (h->nlmsg_type == NLMSG_NOOP)
				continue;
			if ((rc = cb(h, arg)) < 0)
				return errf(err, errlen, rc, "%s: an answer "
				    "netd cannot read (%s)", what,
				    strerror(-rc));
			if (rc > 0) {
				/* The dump's end may be in this datagram. */
				n->dumping = true;
				n->dump_seq = seq;
				while ((h = mnl_nlmsg_next(h, &len)),
				    n->dumping && mnl_nlmsg_ok(h, len))
					skipped(n, h);
				return 0;
			}
		}
	}
	return errf(err, errlen, -ETIMEDOUT, "%s: no end of the answer after "
	    "%u datagrams or %d ms", what, recvs, NFT_DEADLINE_MS);
}

static bool
msg_is(const struct nlmsghdr *h, int type)
{
	return NFNL_SUBSYS_ID(h->nlmsg_type) == NFNL_SUBSYS_NFTABLES &&
	    NFNL_MSG_TYPE(h->nlmsg_type) == type;
}

/* ---- open ---- */

static int
table_probe_cb(const struct nlmsghdr *h, void *arg)
{
	(void)h;
	(void)arg;
	return 0;
}

static struct nlmsghdr *
table_get(struct nft *n, char *buf, uint8_t family)
{
	struct nftnl_table *t;
	struct nlmsghdr *h;

	h = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETTABLE, family, NLM_F_ACK,
	    ++n->seq);
	if ((t = nftnl_table_alloc()) == NULL)
		return NULL;
	nftnl_table_set_str(t, NFTNL_TABLE_NAME, SNAT_TABLE);
	nftnl_table_nlmsg_build_payload(h, t);
	nftnl_table_free(t);
	return h;
}

int
nft_open(struct nft *n, char *err, size_t errlen)
{
	struct timeval tv = { NFT_RECV_TIMEOUT_S, 0 };
	char req[NFT_REQ_LEN], why[128];
	struct nlmsghdr *h;
	int rc;

	memset(n, 0, sizeof(*n));
	if ((n->nl = mnl_socket_open(NETLINK_NETFILTER)) == NULL)
		return errf(err, errlen, -1, "nftables: NETLINK_NETFILTER "
		    "socket: %s (is nfnetlink in the kernel?)",
		    strerror(errno));
	if (mnl_socket_bind(n->nl, 0, MNL_SOCKET_AUTOPID) < 0 ||
	    setsockopt(mnl_socket_get_fd(n->nl), SOL_SOCKET, SO_RCVTIMEO,
	    &tv, sizeof(tv)) < 0) {
		snprintf(err, errlen, "nftables: netlink socket: %s",
		    strerror(errno));
		goto fail;
	}
	n->portid = mnl_socket_get_portid(n->nl);
	n->seq = (uint32_t)now_ms();
	/* Ask once now: a kernel without nf_tables fails here, at start,
	 * not at the broker's first request. */
	if ((h = table_get(n, req, NFT_PROBE_FAMILY)) == NULL) {
		snprintf(err, errlen, "nftables: out of memory");
		goto fail;
	}
	rc = nft_request(n, h, "nftables: reading table ip " SNAT_TABLE,
	    table_probe_cb, NULL, why, sizeof(why));
	if (rc == -EPERM || rc == -EACCES) {
		snprintf(err, errlen, "%s; enid-netd lacks CAP_NET_ADMIN", why);
		goto fail;
	}
	if (rc < 0 && rc != -ENOENT) {
		snprintf(err, errlen, "%s; nf_tables is unavailable%s", why,
		    rc == -EOPNOTSUPP || rc == -EPROTONOSUPPORT ?
		    " (no nf_tables in this kernel?)" : "");
		goto fail;
	}
	return 0;
fail:
	mnl_socket_close(n->nl);
	n->nl = NULL;
	return -1;
}

/* ---- reading the table back ---- */

static void
foreign(struct snat_table *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
foreign(struct snat_table *t, const char *fmt, ...)
{
	va_list ap;

	if (t->foreign)
		return;			/* the first one is named */
	t->foreign = true;
	va_start(ap, fmt);
	vsnprintf(t->what, sizeof(t->what), fmt, ap);
	va_end(ap);
}

struct read_ctx {
	struct snat_table	*t;
	uint8_t			 family;	/* the table's */
	uint32_t		 use;		/* the table's object count */
	uint32_t		 nchains_seen;	/* chains of table enid */
	uint32_t		 nrules_seen;
};

static int
table_cb(const struct nlmsghdr *h, void *arg)
{
	struct read_ctx *rc = arg;
	struct nftnl_table *t;
	uint32_t flags;

	if (!msg_is(h, NFT_MSG_NEWTABLE))
		return -EBADMSG;
	if ((t = nftnl_table_alloc()) == NULL)
		return -ENOMEM;
	if (nftnl_table_nlmsg_parse(h, t) < 0 ||
	    !nftnl_table_is_set(t, NFTNL_TABLE_NAME) ||
	    strcmp(nftnl_table_get_str(t, NFTNL_TABLE_NAME), SNAT_TABLE) != 0) {
		nftnl_table_free(t);
		return -EBADMSG;
	}
	rc->t->present = true;
	flags = nftnl_table_get_u32(t, NFTNL_TABLE_FLAGS);
	rc->use = nftnl_table_get_u32(t, NFTNL_TABLE_USE);
	/* dormant, or owned by another process's socket */
	if (flags != 0)
		foreign(rc->t, "table flags 0x%x", flags);
	nftnl_table_free(t);
	return 0;
}

/*
 * Whether a chain or rule message is of table ip enid, read from its own
 * attributes (NFTA_CHAIN_TABLE and NFTA_RULE_TABLE are both 1): for one
 * libnftnl cannot parse, as a newer kernel's expression or attribute.
 */
static bool
msg_of_enid(const struct nlmsghdr *h, uint8_t family)
{
	const struct nfgenmsg *g = mnl_nlmsg_get_payload(h);
	const struct nlattr *a;

	if (h->nlmsg_len < mnl_nlmsg_size(sizeof(*g)) ||
	    g->nfgen_family != family)
		return false;
	mnl_attr_for_each(a, h, sizeof(*g))
		if (mnl_attr_get_type(a) == NFTA_CHAIN_TABLE)
			return mnl_attr_validate(a, MNL_TYPE_NUL_STRING) == 0 &&
			    strcmp(mnl_attr_get_str(a), SNAT_TABLE) == 0;
	return false;
}

static int
chain_cb(const struct nlmsghdr *h, void *arg)
{
	struct read_ctx *rc = arg;
	struct snat_chain *c;
	struct nftnl_chain *ch;
	const char *name, *type;

	if (!msg_is(h, NFT_MSG_NEWCHAIN))
		return -EBADMSG;
	if (rc->t->foreign)
		return 1;		/* to be replaced: read no more */
	if ((ch = nftnl_chain_alloc()) == NULL)
		return -ENOMEM;
	if (nftnl_chain_nlmsg_parse(h, ch) < 0 ||
	    !nftnl_chain_is_set(ch, NFTNL_CHAIN_TABLE) ||
	    !nftnl_chain_is_set(ch, NFTNL_CHAIN_NAME)) {
		/* Another table's chain is none of netd's business; one of
		 * enid's that libnftnl cannot read is foreign. */
		nftnl_chain_free(ch);
		if (msg_of_enid(h, rc->family)) {
			rc->nchains_seen++;
			foreign(rc->t, "a chain libnftnl cannot read");
		}
		return 0;
	}
	/* The kernel dumps every table's chains: only enid's are read. */
	if (strcmp(nftnl_chain_get_str(ch, NFTNL_CHAIN_TABLE), SNAT_TABLE) ||
	    nftnl_chain_get_u32(ch, NFTNL_CHAIN_FAMILY) != rc->family) {
		nftnl_chain_free(ch);
		return 0;
	}
	rc->nchains_seen++;
	name = nftnl_chain_get_str(ch, NFTNL_CHAIN_NAME);
	type = nftnl_chain_is_set(ch, NFTNL_CHAIN_TYPE) ?
	    nftnl_chain_get_str(ch, NFTNL_CHAIN_TYPE) : "";
	if (!nftnl_chain_is_set(ch, NFTNL_CHAIN_HOOKNUM))
		foreign(rc->t, "chain %.32s is a regular chain", name);
	else if (strlen(name) >= SNAT_CHAIN_LEN ||
	    rc->t->nchains == SNAT_MAX_CHAINS)
		foreign(rc->t, "chain %.32s is not netd's", name);
	else if (strcmp(type, "filter") != 0 && strcmp(type, "nat") != 0)
		foreign(rc->t, "chain %s of type %.16s", name, type);
	else {
		c = &rc->t->chains[rc->t->nchains++];
		snprintf(c->name, sizeof(c->name), "%s", name);
		c->nat = strcmp(type, "nat") == 0;
		c->hook = nftnl_chain_get_u32(ch, NFTNL_CHAIN_HOOKNUM);
		c->prio = nftnl_chain_get_s32(ch, NFTNL_CHAIN_PRIO);
		c->accept = !nftnl_chain_is_set(ch, NFTNL_CHAIN_POLICY) ||
		    nftnl_chain_get_u32(ch, NFTNL_CHAIN_POLICY) == NF_ACCEPT;
	}
	nftnl_chain_free(ch);
	return 0;
}

/* One expression into snat.c's form; -1 with *name set if it is one
 * netd never writes (by kind, or by an attribute netd never sets). */
static int
expr_read(struct nftnl_expr *e, struct snat_expr *x, const char **name)
{
	const void *d;
	uint32_t len;

	memset(x, 0, sizeof(*x));
	*name = nftnl_expr_get_str(e, NFTNL_EXPR_NAME);
	if (*name == NULL)
		return -1;
#define SET(a)	nftnl_expr_is_set(e, a)
#define U32(a)	nftnl_expr_get_u32(e, a)
	if (strcmp(*name, "meta") == 0) {
		x->kind = SET(NFTNL_EXPR_META_DREG) ? SX_META_LOAD :
		    SX_META_SET;
		x->key = U32(NFTNL_EXPR_META_KEY);
		x->dreg = U32(NFTNL_EXPR_META_DREG);
		x->sreg = U32(NFTNL_EXPR_META_SREG);
	} else if (strcmp(*name, "ct") == 0) {
		if (SET(NFTNL_EXPR_CT_DIR))
			return -1;
		x->kind = SET(NFTNL_EXPR_CT_DREG) ? SX_CT_LOAD : SX_CT_SET;
		x->key = U32(NFTNL_EXPR_CT_KEY);
		x->dreg = U32(NFTNL_EXPR_CT_DREG);
		x->sreg = U32(NFTNL_EXPR_CT_SREG);
	} else if (strcmp(*name, "payload") == 0) {
		if (SET(NFTNL_EXPR_PAYLOAD_SREG) ||
		    SET(NFTNL_EXPR_PAYLOAD_CSUM_TYPE))
			return -1;
		x->kind = SX_PAYLOAD;
		x->key = U32(NFTNL_EXPR_PAYLOAD_BASE);
		x->offset = U32(NFTNL_EXPR_PAYLOAD_OFFSET);
		x->len = U32(NFTNL_EXPR_PAYLOAD_LEN);
		x->dreg = U32(NFTNL_EXPR_PAYLOAD_DREG);
	} else if (strcmp(*name, "fib") == 0) {
		x->kind = SX_FIB;
		x->key = U32(NFTNL_EXPR_FIB_RESULT);
		x->flags = U32(NFTNL_EXPR_FIB_FLAGS);
		x->dreg = U32(NFTNL_EXPR_FIB_DREG);
	} else if (strcmp(*name, "bitwise") == 0) {
		if (SET(NFTNL_EXPR_BITWISE_OP) &&
		    U32(NFTNL_EXPR_BITWISE_OP) != NFT_BITWISE_BOOL)
			return -1;
		x->kind = SX_BITWISE;
		x->sreg = U32(NFTNL_EXPR_BITWISE_SREG);
		x->dreg = U32(NFTNL_EXPR_BITWISE_DREG);
		x->len = U32(NFTNL_EXPR_BITWISE_LEN);
		if (x->len > sizeof(x->data))
			return -1;
		if ((d = nftnl_expr_get(e, NFTNL_EXPR_BITWISE_MASK, &len)) ==
		    NULL || len != x->len)
			return -1;
		memcpy(x->data, d, len);
		if ((d = nftnl_expr_get(e, NFTNL_EXPR_BITWISE_XOR, &len)) ==
		    NULL || len != x->len)
			return -1;
		memcpy(x->xor, d, len);
	} else if (strcmp(*name, "cmp") == 0) {
		x->kind = SX_CMP;
		x->sreg = U32(NFTNL_EXPR_CMP_SREG);
		x->key = U32(NFTNL_EXPR_CMP_OP);
		if ((d = nftnl_expr_get(e, NFTNL_EXPR_CMP_DATA, &len)) ==
		    NULL || len > sizeof(x->data))
			return -1;
		x->len = len;
		memcpy(x->data, d, len);
	} else if (strcmp(*name, "immediate") == 0) {
		x->dreg = U32(NFTNL_EXPR_IMM_DREG);
		if (SET(NFTNL_EXPR_IMM_CHAIN))
			return -1;
		if (SET(NFTNL_EXPR_IMM_VERDICT)) {
			x->kind = SX_IMM_VERDICT;
			x->verdict = (int32_t)U32(NFTNL_EXPR_IMM_VERDICT);
		} else {
			x->kind = SX_IMM_DATA;
			if ((d = nftnl_expr_get(e, NFTNL_EXPR_IMM_DATA,
			    &len)) == NULL || len > sizeof(x->data))
				return -1;
			x->len = len;
			memcpy(x->data, d, len);
		}
	} else if (strcmp(*name, "nat") == 0) {
		/* The kernel reports the range's end as its start when
		 * only the start was given: one address. */
		if ((SET(NFTNL_EXPR_NAT_REG_ADDR_MAX) &&
		    U32(NFTNL_EXPR_NAT_REG_ADDR_MAX) !=
		    U32(NFTNL_EXPR_NAT_REG_ADDR_MIN)) ||
		    SET(NFTNL_EXPR_NAT_REG_PROTO_MIN) ||
		    SET(NFTNL_EXPR_NAT_REG_PROTO_MAX))
			return -1;
		x->kind = SX_NAT;
		x->key = U32(NFTNL_EXPR_NAT_TYPE);
		x->family = U32(NFTNL_EXPR_NAT_FAMILY);
		x->sreg = U32(NFTNL_EXPR_NAT_REG_ADDR_MIN);
		x->flags = U32(NFTNL_EXPR_NAT_FLAGS);
	} else if (strcmp(*name, "counter") == 0) {
		x->kind = SX_COUNTER;
		x->packets = nftnl_expr_get_u64(e, NFTNL_EXPR_CTR_PACKETS);
		x->bytes = nftnl_expr_get_u64(e, NFTNL_EXPR_CTR_BYTES);
	} else
		return -1;
#undef SET
#undef U32
	return 0;
}

/* A rule's expressions, at most SNAT_MAX_EXPRS + 1 of them (one more is
 * already too many); -1 with *name for one netd does not write. */
static int
rule_exprs(struct nftnl_rule *r, struct snat_expr *x, size_t *n,
    const char **name)
{
	struct nftnl_expr_iter *it;
	struct nftnl_expr *e;
	int rc = 0;

	*n = 0;
	*name = NULL;
	if ((it = nftnl_expr_iter_create(r)) == NULL)
		return -2;
	while (rc == 0 && *n <= SNAT_MAX_EXPRS &&
	    (e = nftnl_expr_iter_next(it)) != NULL)
		rc = expr_read(e, &x[(*n)++], name);
	nftnl_expr_iter_destroy(it);
	return rc;
}

static int
rule_cb(const struct nlmsghdr *h, void *arg)
{
	struct read_ctx *rc = arg;
	struct snat_table *t = rc->t;
	struct snat_expr x[SNAT_MAX_EXPRS + 1];
	struct nftnl_rule *r;
	const char *chain, *name;
	char why[SNAT_WHY_LEN / 2];
	size_t n;
	int c, err = 0;

	if (!msg_is(h, NFT_MSG_NEWRULE))
		return -EBADMSG;
	if (t->foreign)
		return 1;		/* to be replaced: read no more */
	if ((r = nftnl_rule_alloc()) == NULL)
		return -ENOMEM;
	if (nftnl_rule_nlmsg_parse(h, r) < 0 ||
	    !nftnl_rule_is_set(r, NFTNL_RULE_TABLE) ||
	    !nftnl_rule_is_set(r, NFTNL_RULE_CHAIN)) {
		/* An expression this libnftnl does not know (the kernel's
		 * may be newer): foreign, so the table is replaced rather
		 * than every read failing. */
		nftnl_rule_free(r);
		if (!msg_of_enid(h, rc->family))
			return -EBADMSG;
		rc->nrules_seen++;
		foreign(t, "a rule libnftnl cannot read (an expression newer "
		    "than it?)");
		return 0;
	}
	if (strcmp(nftnl_rule_get_str(r, NFTNL_RULE_TABLE), SNAT_TABLE) != 0 ||
	    nftnl_rule_get_u32(r, NFTNL_RULE_FAMILY) != rc->family)
		goto done;		/* not asked for; never judged */
	rc->nrules_seen++;
	chain = nftnl_rule_get_str(r, NFTNL_RULE_CHAIN);
	if ((c = snat_chain_find(t, chain)) < 0) {
		foreign(t, "a rule in chain %.32s", chain);
		goto done;
	}
	if (t->nrules == SNAT_MAX_RULES) {
		foreign(t, "more than the %d rules netd writes",
		    SNAT_MAX_RULES);
		goto done;
	}
	switch (rule_exprs(r, x, &n, &name)) {
	case -2:
		err = -ENOMEM;
		goto done;
	case -1:
		foreign(t, "chain %s: expression \"%.24s\"", chain,
		    name ? name : "(unnamed)");
		goto done;
	}
	if (snat_rule_parse(x, n, &t->rules[t->nrules], why,
	    sizeof(why)) == -1) {
		foreign(t, "chain %s: %s", chain, why);
		goto done;
	}
	t->rules[t->nrules++].chain = (uint32_t)c;
done:
	nftnl_rule_free(r);
	return err;
}

static struct nlmsghdr *
dump_req(struct nft *n, char *buf, int type, uint8_t family)
{
	struct nlmsghdr *h;
	struct nftnl_rule *r;

	h = nftnl_nlmsg_build_hdr(buf, (uint16_t)type, family, NLM_F_DUMP,
	    ++n->seq);
	if (type != NFT_MSG_GETRULE)
		return h;
	/* The kernel dumps only the named table's rules. */
	if ((r = nftnl_rule_alloc()) == NULL)
		return NULL;
	nftnl_rule_set_str(r, NFTNL_RULE_TABLE, SNAT_TABLE);
	nftnl_rule_nlmsg_build_payload(h, r);
	nftnl_rule_free(r);
	return h;
}

int
nft_read(struct nft *n, uint8_t family, struct snat_table *out, char *err,
    size_t errlen)
{
	char req[NFT_REQ_LEN], what[64];
	struct read_ctx ctx = { out, family, 0, 0, 0 };
	struct nlmsghdr *h;
	int rc;

	memset(out, 0, sizeof(*out));
	out->family = family;
	if ((h = table_get(n, req, family)) == NULL)
		return errf(err, errlen, -ENOMEM, "nftables: out of memory");
	snprintf(what, sizeof(what), "GETTABLE %s " SNAT_TABLE,
	    snat_family_name(family));
	rc = nft_request(n, h, what, table_cb, &ctx, err, errlen);
	if (rc == -ENOENT)
		return 0;		/* absent */
	if (rc < 0 || out->foreign)
		return rc;
	if ((h = dump_req(n, req, NFT_MSG_GETCHAIN, family)) == NULL)
		return errf(err, errlen, -ENOMEM, "nftables: out of memory");
	if ((rc = nft_request(n, h, "GETCHAIN dump", chain_cb, &ctx, err,
	    errlen)) < 0 || out->foreign)
		return rc;
	if ((h = dump_req(n, req, NFT_MSG_GETRULE, family)) == NULL)
		return errf(err, errlen, -ENOMEM, "nftables: out of memory");
	snprintf(what, sizeof(what), "GETRULE dump of %s " SNAT_TABLE,
	    snat_family_name(family));
	if ((rc = nft_request(n, h, what, rule_cb, &ctx, err, errlen)) < 0 ||
	    out->foreign)
		return rc;
	/* The table counts its chains, sets, maps, stateful objects and
	 * flowtables: anything beyond its chains is not netd's. */
	if (ctx.use > ctx.nchains_seen)
		foreign(out, "%u objects besides its %u chains (sets, maps, "
		    "stateful objects or flowtables)", ctx.use -
		    ctx.nchains_seen, ctx.nchains_seen);
	return 0;
}

/* ---- writing it whole ---- */

static int
expr_add(struct nftnl_rule *r, const struct snat_expr *x)
{
	static const char *const names[] = {
		[SX_META_LOAD] = "meta", [SX_META_SET] = "meta",
		[SX_CT_LOAD] = "ct", [SX_CT_SET] = "ct",
		[SX_PAYLOAD] = "payload", [SX_FIB] = "fib",
		[SX_BITWISE] = "bitwise", [SX_CMP] = "cmp",
		[SX_IMM_DATA] = "immediate", [SX_IMM_VERDICT] = "immediate",
		[SX_NAT] = "nat", [SX_COUNTER] = "counter",
	};
	struct nftnl_expr *e;

	if (x->kind == 0 || x->kind >= sizeof(names) / sizeof(names[0]) ||
	    (e = nftnl_expr_alloc(names[x->kind])) == NULL)
		return -1;
#define U32(a, v)	nftnl_expr_set_u32(e, a, v)
	switch (x->kind) {
	case SX_META_LOAD:
	case SX_META_SET:
		U32(NFTNL_EXPR_META_KEY, x->key);
		U32(x->kind == SX_META_LOAD ? NFTNL_EXPR_META_DREG :
		    NFTNL_EXPR_META_SREG, x->kind == SX_META_LOAD ? x->dreg :
		    x->sreg);
		break;
	case SX_CT_LOAD:
	case SX_CT_SET:
		U32(NFTNL_EXPR_CT_KEY, x->key);
		U32(x->kind == SX_CT_LOAD ? NFTNL_EXPR_CT_DREG :
		    NFTNL_EXPR_CT_SREG, x->kind == SX_CT_LOAD ? x->dreg :
		    x->sreg);
		break;
	case SX_PAYLOAD:
		U32(NFTNL_EXPR_PAYLOAD_BASE, x->key);
		U32(NFTNL_EXPR_PAYLOAD_OFFSET, x->offset);
		U32(NFTNL_EXPR_PAYLOAD_LEN, x->len);
		U32(NFTNL_EXPR_PAYLOAD_DREG, x->dreg);
		break;
	case SX_FIB:
		U32(NFTNL_EXPR_FIB_RESULT, x->key);
		U32(NFTNL_EXPR_FIB_FLAGS, x->flags);
		U32(NFTNL_EXPR_FIB_DREG, x->dreg);
		break;
	case SX_BITWISE:
		U32(NFTNL_EXPR_BITWISE_SREG, x->sreg);
		U32(NFTNL_EXPR_BITWISE_DREG, x->dreg);
		U32(NFTNL_EXPR_BITWISE_LEN, x->len);
		nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, x->data, x->len);
		nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, x->xor, x->len);
		break;
	case SX_CMP:
		U32(NFTNL_EXPR_CMP_SREG, x->sreg);
		U32(NFTNL_EXPR_CMP_OP, x->key);
		nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, x->data, x->len);
		break;
	case SX_IMM_DATA:
		U32(NFTNL_EXPR_IMM_DREG, x->dreg);
		nftnl_expr_set(e, NFTNL_EXPR_IMM_DATA, x->data, x->len);
		break;
	case SX_IMM_VERDICT:
		U32(NFTNL_EXPR_IMM_DREG, x->dreg);
		U32(NFTNL_EXPR_IMM_VERDICT, (uint32_t)x->verdict);
		break;
	case SX_NAT:
		U32(NFTNL_EXPR_NAT_TYPE, x->key);
		U32(NFTNL_EXPR_NAT_FAMILY, x->family);
		U32(NFTNL_EXPR_NAT_REG_ADDR_MIN, x->sreg);
		if (x->flags != 0)
			U32(NFTNL_EXPR_NAT_FLAGS, x->flags);
		break;
	case SX_COUNTER:
		break;
	}
#undef U32
	nftnl_rule_add_expr(r, e);
	return 0;
}

/* What the batch's message at index i is, for an error. */
static void
batch_what(const struct snat_table *t, uint32_t i, char *buf, size_t len)
{
	if (i < 3)
		snprintf(buf, len, "%s table %s %s", i == 1 ? "DELTABLE" :
		    "NEWTABLE", snat_family_name(t->family), SNAT_TABLE);
	else if (i - 3 < t->nchains)
		snprintf(buf, len, "NEWCHAIN %s", t->chains[i - 3].name);
	else if (i - 3 - t->nchains < t->nrules) {
		char r[SNAT_WHY_LEN - 16];

		snat_rule_format(t, &t->rules[i - 3 - t->nchains], r,
		    sizeof(r));
		snprintf(buf, len, "NEWRULE %s", r);
	} else
		snprintf(buf, len, "message %u of the batch", i);
}

/* Append one message to the batch; false if it no longer fits. */
static bool
batch_table(struct mnl_nlmsg_batch *b, int type, uint16_t flags,
    uint32_t seq, uint8_t family)
{
	struct nftnl_table *tb;
	struct nlmsghdr *h;

	if ((tb = nftnl_table_alloc()) == NULL)
		return false;
	nftnl_table_set_str(tb, NFTNL_TABLE_NAME, SNAT_TABLE);
	h = nftnl_nlmsg_build_hdr(mnl_nlmsg_batch_current(b), (uint16_t)type,
	    family, flags | NLM_F_ACK, seq);
	nftnl_table_nlmsg_build_payload(h, tb);
	nftnl_table_free(tb);
	return mnl_nlmsg_batch_next(b);
}

static bool
batch_chain(struct mnl_nlmsg_batch *b, const struct snat_chain *c,
    uint32_t seq, uint8_t family)
{
	struct nftnl_chain *ch;
	struct nlmsghdr *h;

	if ((ch = nftnl_chain_alloc()) == NULL)
		return false;
	nftnl_chain_set_str(ch, NFTNL_CHAIN_TABLE, SNAT_TABLE);
	nftnl_chain_set_str(ch, NFTNL_CHAIN_NAME, c->name);
	nftnl_chain_set_str(ch, NFTNL_CHAIN_TYPE, c->nat ? "nat" : "filter");
	nftnl_chain_set_u32(ch, NFTNL_CHAIN_HOOKNUM, c->hook);
	nftnl_chain_set_s32(ch, NFTNL_CHAIN_PRIO, c->prio);
	nftnl_chain_set_u32(ch, NFTNL_CHAIN_POLICY, NF_ACCEPT);
	h = nftnl_nlmsg_build_hdr(mnl_nlmsg_batch_current(b), NFT_MSG_NEWCHAIN,
	    family, NLM_F_CREATE | NLM_F_ACK, seq);
	nftnl_chain_nlmsg_build_payload(h, ch);
	nftnl_chain_free(ch);
	return mnl_nlmsg_batch_next(b);
}

static bool
batch_rule(struct mnl_nlmsg_batch *b, const struct snat_table *t,
    const struct snat_rule *sr, uint32_t seq)
{
	struct snat_expr x[SNAT_MAX_EXPRS];
	struct nftnl_rule *r;
	struct nlmsghdr *h;
	size_t n, i;

	if ((r = nftnl_rule_alloc()) == NULL)
		return false;
	nftnl_rule_set_u32(r, NFTNL_RULE_FAMILY, t->family);
	nftnl_rule_set_str(r, NFTNL_RULE_TABLE, SNAT_TABLE);
	nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, t->chains[sr->chain].name);
	n = snat_rule_exprs(sr, x);
	for (i = 0; i < n; i++)
		if (expr_add(r, &x[i]) == -1) {
			nftnl_rule_free(r);
			return false;
		}
	h = nftnl_nlmsg_build_hdr(mnl_nlmsg_batch_current(b), NFT_MSG_NEWRULE,
	    t->family, NLM_F_CREATE | NLM_F_APPEND | NLM_F_ACK, seq);
	nftnl_rule_nlmsg_build_payload(h, r);
	nftnl_rule_free(r);
	return mnl_nlmsg_batch_next(b);
}

/*
 * The batch's answers: an ack for each of its nmsgs messages (seq first
 * .. first + nmsgs - 1), or errors; the begin (first - 1) and end (first
 * + nmsgs) messages are answered only if refused, and a refused begin
 * ends the batch unread.  The kernel answers a batch while it is sent,
 * so once an error is in, what else is queued is read without waiting.
 * 0, or the first error (err names its message).
 */
static int
batch_answers(struct nft *n, const struct snat_table *t, uint32_t first,
    uint32_t nmsgs, char *err, size_t errlen)
{
	struct snat_batch b = { first, nmsgs, n->portid, 0, 0, 0 };
	uint64_t start = now_ms();
	uint32_t recvs, i;
	char what[SNAT_WHY_LEN];
	ssize_t got;
	int len;

	for (recvs = 0; b.acks < nmsgs && recvs < NFT_MAX_RECVS &&
	    now_ms() - start <= NFT_DEADLINE_MS; recvs++) {
		const struct nlmsghdr *h;

		got = recv(mnl_socket_get_fd(n->nl), n->buf, sizeof(n->buf),
		    b.error ? MSG_DONTWAIT : 0);
		if (got < 0 && b.error)
			break;
		if (got < 0)
			return errf(err, errlen, -errno, "nftables batch: "
			    "%u of %u messages acknowledged, then: %s", b.acks,
			    nmsgs, strerror(errno));
		len = (int)got;
		for (h = (const struct nlmsghdr *)n->buf; mnl_nlmsg_ok(h, len);
		    h = mnl_nlmsg_next(h, &len))
			switch (snat_batch_answer(&b, h, (size_t)len)) {
			case -1:
				return errf(err, errlen, -EBADMSG, "nftables "
				    "batch: a truncated acknowledgement");
			case 0:
				skipped(n, h);
				break;
			}
	}
	if (b.error != 0) {
		i = b.error_seq - first;
		if (b.error_seq == first - 1)
			snprintf(what, sizeof(what), "the batch's begin "
			    "message");
		else if (i == nmsgs)
			snprintf(what, sizeof(what), "the batch's end message");
		else
			batch_what(t, i, what, sizeof(what));
		return errf(err, errlen, b.error, "nftables batch: %s: %s; "
		    "nothing changed", what, strerror(-b.error));
	}
	if (b.acks < nmsgs)
		return errf(err, errlen, -ETIMEDOUT, "nftables batch: %u of %u "
		    "messages acknowledged", b.acks, nmsgs);
	return 0;
}

int
nft_write(struct nft *n, const struct snat_table *t, char *err,
    size_t errlen)
{
	struct mnl_nlmsg_batch *b;
	uint32_t first, seq, i;
	bool ok;

	if (t->nchains > SNAT_MAX_CHAINS || t->nrules > SNAT_MAX_RULES ||
	    (t->family != NFPROTO_IPV4 && t->family != NFPROTO_IPV6))
		return errf(err, errlen, -E2BIG, "nftables: a table larger "
		    "than netd writes");
	if ((b = mnl_nlmsg_batch_start(n->buf, NFT_BATCH_LIMIT)) == NULL)
		return errf(err, errlen, -ENOMEM, "nftables: out of memory");
	seq = ++n->seq;
	nftnl_batch_begin(mnl_nlmsg_batch_current(b), seq++);
	ok = mnl_nlmsg_batch_next(b);
	first = seq;
	/* Create (a no-op if it is there), delete, create: the table goes
	 * whatever it held, also if it vanished since it was read. */
	ok = ok && batch_table(b, NFT_MSG_NEWTABLE, NLM_F_CREATE, seq++,
	    t->family);
	ok = ok && batch_table(b, NFT_MSG_DELTABLE, 0, seq++, t->family);
	ok = ok && batch_table(b, NFT_MSG_NEWTABLE, NLM_F_CREATE, seq++,
	    t->family);
	for (i = 0; ok && i < t->nchains; i++)
		ok = batch_chain(b, &t->chains[i], seq++, t->family);
	for (i = 0; ok && i < t->nrules; i++)
		ok = t->rules[i].chain < t->nchains &&
		    batch_rule(b, t, &t->rules[i], seq++);
	if (ok) {
		nftnl_batch_end(mnl_nlmsg_batch_current(b), seq);
		ok = mnl_nlmsg_batch_next(b);
	}
	n->seq = seq;
	if (!ok) {
		mnl_nlmsg_batch_stop(b);
		return errf(err, errlen, -E2BIG, "nftables: the batch does "
		    "not fit in %d bytes (or out of memory); nothing sent",
		    NFT_BATCH_LIMIT);
	}
	if (mnl_socket_sendto(n->nl, mnl_nlmsg_batch_head(b),
	    mnl_nlmsg_batch_size(b)) < 0) {
		int e = errno;

		mnl_nlmsg_batch_stop(b);
		return errf(err, errlen, -e, "nftables: sending the batch: %s",
		    strerror(e));
	}
	mnl_nlmsg_batch_stop(b);
	return batch_answers(n, t, first, seq - first, err, errlen);
}
