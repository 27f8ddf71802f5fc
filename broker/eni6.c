/*
 * An ENI's IPv6 (ip_family dual or ipv6): its own IPv6 address and the one
 * /80 prefix its pods take their IPv6 addresses from (doc/design.md, "IPv6").
 *
 * Each ENI enid creates gets its own address at creation (Ipv6AddressCount
 * 1), or, when it was created with IPv4 prefixes (which EC2 will not mix
 * with it in one call), right after; then one /80.  The primary ENI gets a
 * /80 only: the node's own address, if any, is the instance's.  A /80 is
 * 2^48 addresses, handed out in order and never twice while the ENI lives,
 * so nothing cools: no neighbour or conntrack entry of a deleted pod ever
 * meets a new one.  It goes back to the cloud with its ENI, never alone.
 *
 * What the cloud names is judged as the IPv4 addresses are: inside the
 * subnet's /64 (which is inside the VPC's IPv6 blocks: subnets_answer),
 * not special, not a reserved address of the /64, not another ENI's.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "addr.h"
#include "enid.h"
#include "log.h"

#define ENI6_RETRY_MIN_MS	1000	/* after a failed assign, doubling */
#define ENI6_RETRY_MAX_MS	60000

/* The subnet's /64, or NULL when it has none usable. */
static const struct ip_prefix *
subnet6(const struct broker *b, const struct eni *e)
{
	const struct subnet *s = e->subnet >= 0 ?
	    &b->engine.subnets[e->subnet] : NULL;

	return s != NULL && s->cidr6.addr.family == AF_INET6 ? &s->cidr6 :
	    NULL;
}

/* The 64 low bits of an IPv6 address, as a number. */
static uint64_t
low64(const struct ip_addr *a)
{
	uint64_t v = 0;
	int i;

	for (i = 8; i < 16; i++)
		v = v << 8 | a->bytes[i];
	return v;
}

static void
set_low64(struct ip_addr *a, uint64_t v)
{
	int i;

	for (i = 15; i >= 8; i--) {
		a->bytes[i] = (uint8_t)(v & 0xff);
		v >>= 8;
	}
}

/* Is a inside e's /80 (or, for o, another ENI's)? */
static bool
in_prefix6(const struct eni *o, const struct ip_addr *a)
{
	struct ip_prefix p;

	if (o->prefix6.family != AF_INET6)
		return false;
	p = msg_prefix_of(&o->prefix6);
	return ip_prefix_contains(&p, a);
}

/*
 * An IPv6 address (prefix false) or /80 (by its first address) the cloud
 * named for e: usable by it?  why says what it is if not.
 */
static bool
acceptable6(struct broker *b, const struct eni *e, const struct ip_addr *a,
    bool prefix, char *why, size_t whylen)
{
	const struct ip_prefix *net = subnet6(b, e);
	const struct ip_addr *node6;
	struct ip_prefix p;
	uint64_t lo, last;
	uint32_t i;

	if (a->family != AF_INET6 || ip_addr_is_special(a)) {
		snprintf(why, whylen, "not a usable IPv6 address");
		return false;
	}
	if (net == NULL || !ip_prefix_contains(net, a)) {
		snprintf(why, whylen, "outside its subnet's IPv6 block");
		return false;
	}
	if (prefix) {
		p = msg_prefix_of(a);
		if (!ip_addr_eq(&p.addr, a)) {
			snprintf(why, whylen, "not aligned to a /%d",
			    MSG_PREFIX6_LEN);
			return false;
		}
	}
	/* The node's own, as IMDS names it: never a pod's. */
	node6 = &b->instance.primary_ip6;
	if (node6->family == AF_INET6 && (prefix ?
	    ip_prefix_contains(&p, node6) : (!e->primary &&
	    ip_addr_eq(a, node6)))) {
		snprintf(why, whylen, "the node's own address, or over it");
		return false;
	}
	/* EC2 reserves the /64's first four addresses and its last. */
	lo = low64(a);
	last = prefix ? lo + ((uint64_t)1 << (128 - MSG_PREFIX6_LEN)) - 1 :
	    lo;
	if (lo < 4 || last == UINT64_MAX) {
		snprintf(why, whylen, "a reserved address of its subnet");
		return false;
	}
	for (i = 0; i < POOL_MAX_ENIS; i++) {
		const struct eni *o = &b->engine.enis[i];

		if (!o->used)
			continue;
		if (o != e && (in_prefix6(o, a) ||
		    (o->addr6.family == AF_INET6 && ip_addr_eq(&o->addr6, a)))) {
			snprintf(why, whylen, "already %s's", eni_name(o));
			return false;
		}
		/* A /80 over an ENI's own address, or the other way. */
		if (prefix && o->addr6.family == AF_INET6 &&
		    ip_prefix_contains(&p, &o->addr6)) {
			snprintf(why, whylen, "over %s's own address",
			    eni_name(o));
			return false;
		}
		if (!prefix && o == e && in_prefix6(o, a)) {
			snprintf(why, whylen, "inside its own /%d",
			    MSG_PREFIX6_LEN);
			return false;
		}
	}
	return true;
}

/* The first of list (n) acceptable for e, logging the others; or NULL. */
static const struct ip_addr *
first_acceptable(struct broker *b, const struct eni *e,
    const struct ip_addr *list, uint32_t n, bool prefix, const char *how)
{
	char ip[IP_ADDR_STR_LEN], why[160];
	uint32_t i;

	for (i = 0; i < n; i++) {
		if (acceptable6(b, e, &list[i], prefix, why, sizeof(why)))
			return &list[i];
		ip_addr_format(&list[i], ip);
		log_security("%s: %s IPv6 %s %s%s is %s; never used",
		    eni_name(e), how, prefix ? "prefix" : "address", ip,
		    prefix ? "/80" : "", why);
	}
	return NULL;
}

/*
 * Of the /80s the cloud lists for e, the acceptable one that holds a
 * restored pod of e's, if any: an ENI has one /80 at a time, but one
 * named beside it (by hand, or a cloud that lists two) must not take
 * its place across a restart, and have its pods judged not e's
 * (eni6_pod_addr_ok).
 */
static const struct ip_addr *
restored_pods_prefix(struct broker *b, const struct eni *e,
    const struct ip_addr *list, uint32_t n)
{
	const struct pod *p;
	struct ip_prefix pfx;
	char why[160];
	uint32_t i;

	for (i = 0; i < n; i++) {
		if (list[i].family != AF_INET6)
			continue;
		pfx = msg_prefix_of(&list[i]);
		TAILQ_FOREACH(p, &b->engine.pods, all)
			if (p->restored && p->eni == NULL &&
			    p->ip6.family == AF_INET6 &&
			    strcmp(p->eni_id, e->id) == 0 &&
			    ip_prefix_contains(&pfx, &p->ip6))
				break;
		if (p != NULL && acceptable6(b, e, &list[i], true, why,
		    sizeof(why)))
			return &list[i];
	}
	return NULL;
}

static bool
listed(const struct ip_addr *want, const struct ip_addr *list, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (ip_addr_eq(&list[i], want))
			return true;
	return false;
}

void
eni6_learn(struct eni *e, const struct msg_cloud_eni *ce, const char *how)
{
	struct broker *b = e->b;
	const struct ip_addr *a;
	char ip[IP_ADDR_STR_LEN];
	uint32_t n6 = ce->naddrs6 < MSG_MAX_ENI_ADDRS6 ? ce->naddrs6 :
	    MSG_MAX_ENI_ADDRS6;
	uint32_t np6 = ce->nprefixes6 < MSG_MAX_ENI_PREFIXES6 ?
	    ce->nprefixes6 : MSG_MAX_ENI_PREFIXES6;

	if (!broker_ipv6_held(b))
		return;
	if (e->addr6.family == AF_INET6 && !listed(&e->addr6, ce->addrs6, n6)) {
		ip_addr_format(&e->addr6, ip);
		log_warnx("%s: the cloud no longer lists its IPv6 address %s; "
		    "forgotten", eni_name(e), ip);
		memset(&e->addr6, 0, sizeof(e->addr6));
	}
	if (e->prefix6.family == AF_INET6 &&
	    !listed(&e->prefix6, ce->prefixes6, np6)) {
		char why[IP_ADDR_STR_LEN + 64];

		ip_addr_format(&e->prefix6, ip);
		log_warnx("%s: the cloud no longer delegates its prefix %s/%d; "
		    "forgotten", eni_name(e), ip, MSG_PREFIX6_LEN);
		/* Its pods' IPv6 addresses are routed nowhere now. */
		snprintf(why, sizeof(why), "the cloud no longer delegates "
		    "its /%d %s", MSG_PREFIX6_LEN, ip);
		pods_prefix6_gone(e, &e->prefix6, why);
		memset(&e->prefix6, 0, sizeof(e->prefix6));
	}
	/* The primary ENI's own address is the node's, never a pod's: it
	 * is learnt for no use but to be kept clear of. */
	if (e->addr6.family != AF_INET6 &&
	    (a = first_acceptable(b, e, ce->addrs6, n6, false, how)) != NULL) {
		e->addr6 = *a;
		ip_addr_format(a, ip);
		log_info("%s: its IPv6 address is %s", eni_name(e), ip);
	}
	if (e->prefix6.family != AF_INET6 && ((a = restored_pods_prefix(b, e,
	    ce->prefixes6, np6)) != NULL || (a = first_acceptable(b, e,
	    ce->prefixes6, np6, true, how)) != NULL)) {
		e->prefix6 = *a;
		ip_addr_format(a, ip);
		log_info("%s: pods' IPv6 addresses come from %s/%d",
		    eni_name(e), ip, MSG_PREFIX6_LEN);
		engine_kick(b);
	}
	if (ce->nbad_addrs6 > 0 || ce->nbad_prefixes6 > 0)
		log_security("%s: carries %u IPv6 addresses and %u /%d prefixes "
		    "that are not usable ones; never used", eni_name(e),
		    ce->nbad_addrs6, ce->nbad_prefixes6, MSG_PREFIX6_LEN);
}

/*
 * With ip_family ipv4 after dual: once no pod holds an IPv6 address, none
 * will again (ipv4 hands out none), and the IPv6 kept for them stops
 * (broker_ipv6_held): ENIs are set up without their own IPv6 address,
 * which the next run's table fixes take off their links, with their
 * tables' IPv6 default routes; the cloud's are no longer learnt, and
 * those learnt are forgotten here.  The /80s stay the ENIs' in the cloud
 * and go back with them.  The next snapshot is version 3 again
 * (checkpoint_version()).  Called once a pod with one is gone and after
 * the checkpoint's pods are restored, or rebuilt from the kernel.
 */
void
eni6_held_check(struct broker *b)
{
	const struct pod *p;
	uint32_t i;

	if (!b->ckpt_ipv6 || config_family_v6(b->cfg.ip_family))
		return;
	TAILQ_FOREACH(p, &b->engine.pods, all)
		if (p->ip6.family == AF_INET6)
			return;
	b->ckpt_ipv6 = false;
	for (i = 0; i < POOL_MAX_ENIS; i++) {
		struct eni *e = &b->engine.enis[i];

		memset(&e->addr6, 0, sizeof(e->addr6));
		memset(&e->prefix6, 0, sizeof(e->prefix6));
	}
	log_info("pool: no pod holds an IPv6 address; with ip_family ipv4 "
	    "the ENIs' IPv6 is no longer kept for them");
	reconcile_now(b, "ENIs to set up without their IPv6 address");
}

/*
 * The next pod address of e's /80 (family 0 when it has none).  In order,
 * from a floor that only time raises: the wall clock's milliseconds times
 * 64, so that an enid that starts again without its record (a lost
 * checkpoint, a downgrade) still hands out none it handed out before, as
 * long as the clock has not gone back and no more than 64 pods a
 * millisecond were added (2^48 holds that floor until the year 2109).
 */
struct ip_addr
eni6_next(struct eni *e)
{
	struct ip_addr a;
	struct timespec ts;
	uint64_t floor, max = ((uint64_t)1 << (128 - MSG_PREFIX6_LEN)) - 1;

	memset(&a, 0, sizeof(a));
	if (e->prefix6.family != AF_INET6)
		return a;
	clock_gettime(CLOCK_REALTIME, &ts);
	floor = ((uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec /
	    1000000) << 6;
	if (e->next6 < floor)
		e->next6 = floor;
	if (e->next6 == 0)
		e->next6 = 1;		/* the /80's first address: none's */
	if (e->next6 > max)
		return a;
	a = e->prefix6;
	set_low64(&a, low64(&a) | e->next6);
	e->next6++;
	return a;
}

bool
eni6_pod_addr_ok(const struct eni *e, const struct ip_addr *a, char *why,
    size_t whylen)
{
	char ip[IP_ADDR_STR_LEN];
	uint32_t i;

	ip_addr_format(a, ip);
	if (e->prefix6.family == AF_INET6 && !in_prefix6(e, a)) {
		snprintf(why, whylen, "its IPv6 address %s is not of %s's /%d",
		    ip, eni_name(e), MSG_PREFIX6_LEN);
		return false;
	}
	/* Its /80 not known yet: another's is known not to be e's. */
	for (i = 0; i < POOL_MAX_ENIS; i++) {
		const struct eni *o = &e->b->engine.enis[i];

		if (o->used && o != e && in_prefix6(o, a)) {
			snprintf(why, whylen, "its IPv6 address %s is not of "
			    "%s's /%d but %s's", ip, eni_name(e),
			    MSG_PREFIX6_LEN, eni_name(o));
			return false;
		}
	}
	return true;
}

/* ---- asking the cloud ---- */

static void
retry_later(struct eni *e)
{
	e->retry6_ms = e->retry6_ms == 0 ? ENI6_RETRY_MIN_MS :
	    e->retry6_ms * 2;
	if (e->retry6_ms > ENI6_RETRY_MAX_MS)
		e->retry6_ms = ENI6_RETRY_MAX_MS;
	e->retry6_at = now_ms() + e->retry6_ms;
}

/* An assign's outcome: st NULL when none came in time; what it named. */
static void
assign6_done(struct eni *e, const struct msg_cloud_status *st,
    const struct ip_addr *list, uint32_t n, bool prefix)
{
	struct broker *b = e->b;
	const struct ip_addr *a;
	char text[MSG_ERR_LEN + 96], ip[IP_ADDR_STR_LEN];

	if (st == NULL || st->outcome != CO_OK) {
		if (st == NULL)
			snprintf(text, sizeof(text), "no answer in time");
		else
			snprintf(text, sizeof(text), "%s%s%s", st->code,
			    st->code[0] ? ": " : "", st->message);
		log_warnx("%s: assigning an IPv6 %s: %s", eni_name(e),
		    prefix ? "/80" : "address", text);
		retry_later(e);
		/* It may be assigned all the same: learnt before asking
		 * again, never asked twice. */
		if (st == NULL || st->outcome != CO_THROTTLED) {
			e->recheck = true;
			reconcile_now(b, "an IPv6 assign's outcome is unknown");
		}
		engine_kick(b);
		return;
	}
	a = n == 1 ? first_acceptable(b, e, list, n, prefix, "assigned") :
	    NULL;
	if (a == NULL) {
		log_security("%s: asked for one IPv6 %s, the cloud named %u "
		    "and none is used", eni_name(e), prefix ? "/80" :
		    "address", n);
		e->recheck = true;
		retry_later(e);
		reconcile_now(b, "an IPv6 assign named nothing usable");
		return;
	}
	ip_addr_format(a, ip);
	if (prefix) {
		e->prefix6 = *a;
		log_info("%s: /%d %s/%d assigned; pods' IPv6 addresses come "
		    "from it", eni_name(e), MSG_PREFIX6_LEN, ip,
		    MSG_PREFIX6_LEN);
	} else {
		e->addr6 = *a;
		log_info("%s: its IPv6 address %s assigned", eni_name(e), ip);
		/* Set up on its link by the run's table fixes. */
		reconcile_now(b, "an ENI's own IPv6 address to set up");
	}
	e->retry6_ms = 0;
	e->retry6_at = 0;
	engine_kick(b);
}

static void
addr6_answer(struct broker *b, void *arg, const struct msg *m, bool final)
{
	struct msg_cloud_assigned as;

	(void)b;
	(void)final;
	if (m == NULL) {
		assign6_done(arg, NULL, NULL, 0, false);
		return;
	}
	memcpy(&as, m->u.bytes, sizeof(as));
	assign6_done(arg, &as.st, as.addrs, as.naddrs < MSG_MAX_ENI_ADDRS ?
	    as.naddrs : MSG_MAX_ENI_ADDRS, false);
}

static void
prefix6_answer(struct broker *b, void *arg, const struct msg *m, bool final)
{
	struct msg_cloud_prefixes_assigned as;

	(void)b;
	(void)final;
	if (m == NULL) {
		assign6_done(arg, NULL, NULL, 0, true);
		return;
	}
	memcpy(&as, m->u.bytes, sizeof(as));
	assign6_done(arg, &as.st, as.prefixes, as.nprefixes <
	    MSG_MAX_ENI_PREFIXES ? as.nprefixes : MSG_MAX_ENI_PREFIXES, true);
}

/* Ask for e's own IPv6 address (a secondary ENI without one) or its /80:
 * one at a time, on the ENI's address operation. */
static void
eni6_ask(struct eni *e)
{
	struct broker *b = e->b;
	struct msg_cloud_prefixes pr;
	struct msg_cloud_ips ips;

	if (!e->primary && e->addr6.family != AF_INET6) {
		memset(&ips, 0, sizeof(ips));
		ips.deadline_ms = ENGINE_CLOUD_DEADLINE_MS;
		msg_strlcpy(ips.eni_id, e->id, sizeof(ips.eni_id));
		ips.family = AF_INET6;
		ips.count = 1;
		log_info("%s: assigning its own IPv6 address", e->id);
		broker_request(b, &e->addr_op, &b->cloudd,
		    MSG_CLOUD_ASSIGN_IPS, &ips, sizeof(ips), ips.deadline_ms,
		    addr6_answer, e);
		return;
	}
	memset(&pr, 0, sizeof(pr));
	pr.deadline_ms = ENGINE_CLOUD_DEADLINE_MS;
	msg_strlcpy(pr.eni_id, e->id, sizeof(pr.eni_id));
	pr.family = AF_INET6;
	pr.count = 1;
	log_info("%s: assigning a /%d for its pods' IPv6 addresses", e->id,
	    MSG_PREFIX6_LEN);
	broker_request(b, &e->addr_op, &b->cloudd, MSG_CLOUD_ASSIGN_PREFIXES,
	    &pr, sizeof(pr), pr.deadline_ms, prefix6_answer, e);
}

/* Does e lack what its pods' IPv6 needs, and may it be asked for now?
 * When later, *at says when (0: an event will tell). */
static bool
eni6_wants(const struct eni *e, uint64_t now, uint64_t *at)
{
	*at = 0;
	if (!e->used || e->state != ENI_READY || e->id[0] == '\0')
		return false;
	if (e->prefix6.family == AF_INET6 &&
	    (e->primary || e->addr6.family == AF_INET6))
		return false;
	if (e->addr_op.active || e->recheck)
		return false;
	if (e->retry6_at > now) {
		*at = e->retry6_at;
		return false;
	}
	return true;
}

uint64_t
eni6_plan(struct broker *b, uint64_t now)
{
	uint64_t next = 0, at;
	uint32_t i;

	if (!config_family_v6(b->cfg.ip_family))
		return 0;
	for (i = 0; i < POOL_MAX_ENIS; i++) {
		struct eni *e = &b->engine.enis[i];

		/* Its subnet has no IPv6 block (a configured one would have
		 * been refused at start: an adopted ENI's), or takes no new
		 * pods. */
		if (e->used && (subnet6(b, e) == NULL ||
		    !b->engine.subnets[e->subnet].configured))
			continue;
		if (eni6_wants(e, now, &at))
			eni6_ask(e);
		else if (at != 0 && (next == 0 || at < next))
			next = at;
	}
	return next;
}
