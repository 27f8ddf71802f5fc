/*
 * The pool engine's address book: each ENI's addresses and /28 prefixes,
 * their states and the moves between them (lifecycle.c's address table),
 * the checks a cloud-named address or prefix passes before it is taken,
 * the lookups by address, the pick of a new pod's address, and the
 * cooling times of released ones.  eni.c holds the ENI's own lifecycle
 * and calls in here when the cloud or a pod changes what the ENI holds.
 *
 * Addresses are IPv4 only, in network order, as eni.c's are.
 */
#include <arpa/inet.h>

#include <stdio.h>
#include <string.h>

#include "addr.h"
#include "enid.h"
#include "log.h"

/* The first address of the /28 that holds ip (network order). */
static uint32_t
prefix_base(uint32_t ip)
{
	return htonl(ntohl(ip) & ~(uint32_t)(POOL_PREFIX_ADDRS - 1));
}

int
eni_addr_index(const struct eni *e, uint32_t ip)
{
	uint32_t i;

	for (i = 0; i < e->naddrs; i++)
		if (e->addrs[i].ip == ip)
			return (int)i;
	return -1;
}

int
eni_prefix_index(const struct eni *e, uint32_t base)
{
	uint32_t k;

	for (k = 0; k < e->nprefixes; k++)
		if (e->prefixes[k].base == base)
			return (int)k;
	return -1;
}

/*
 * The address of e a new pod takes: ranked by its block, higher first.  A
 * prefix with pods in it (the fullest first), then single addresses and
 * empty prefixes (which first: below), then a frozen prefix: blocks empty
 * out and can be given back.
 */
int
eni_pick_addr(const struct eni *e, uint64_t now)
{
	uint32_t used[POOL_MAX_PREFIXES], rank[POOL_MAX_PREFIXES];
	uint32_t i, k, r, best_rank = 0;
	int best = -1, pk;

	memset(used, 0, sizeof(used));
	for (i = 0; i < e->naddrs; i++)
		if (e->addrs[i].block != 0 && !addr_usable(&e->addrs[i], now) &&
		    (pk = eni_prefix_index(e, e->addrs[i].block)) >= 0)
			used[pk]++;
	/* An empty prefix: before single addresses with prefix delegation
	 * on (singles, taken in a fallback, then free up and go back), after
	 * them with it off (the prefix empties and goes back). */
	for (k = 0; k < e->nprefixes; k++)
		rank[k] = e->prefixes[k].frozen_until > now ? 0 :
		    used[k] > 0 ? 2 * POOL_PREFIX_ADDRS + used[k] :
		    e->b->engine.params.prefixes ? POOL_PREFIX_ADDRS + 3 : 1;
	for (i = 0; i < e->naddrs; i++) {
		const struct eni_addr *a = &e->addrs[i];

		if (!addr_usable(a, now))
			continue;
		if (a->block == 0)
			r = POOL_PREFIX_ADDRS + 2;
		else if ((pk = eni_prefix_index(e, a->block)) >= 0)
			r = rank[pk];
		else
			r = 0;
		/* Among equals, the one that has rested longest. */
		if (best == -1 || r > best_rank || (r == best_rank &&
		    a->cool_until < e->addrs[best].cool_until)) {
			best = (int)i;
			best_rank = r;
		}
	}
	return best;
}

/* An address's move, as lifecycle.c's table allows; any other is a bug,
 * never acted on. */
void
addr_set(struct eni *e, uint32_t idx, enum addr_state st)
{
	struct eni_addr *a = &e->addrs[idx];
	char ip[IP4_STR_LEN];

	if (addr_transition_ok(a->state, st)) {
		a->state = st;
		return;
	}
	ip4_format(a->ip, ip);
#ifdef ENID_DEBUG
	fatalx("%s: %s: %s -> %s is not a transition of the address "
	    "lifecycle", eni_name(e), ip, addr_state_name(a->state),
	    addr_state_name(st));
#else
	log_errorx("%s: %s: %s -> %s is not a transition of the address "
	    "lifecycle; refused (a bug)", eni_name(e), ip,
	    addr_state_name(a->state), addr_state_name(st));
#endif
}

/*
 * An address the cloud named for e, judged before it is used: inside the
 * ENI's subnet, not one of the subnet's reserved addresses (the network,
 * the router, DNS, the reserved fourth, broadcast), not the ENI's own or
 * the node's, inside the VPC, and on no other ENI.
 */
bool
eni_addr_acceptable(struct broker *b, const struct eni *e, uint32_t ip,
    char *why, size_t whylen)
{
	const struct subnet *s = e->subnet >= 0 ?
	    &b->engine.subnets[e->subnet] : NULL;
	const struct msg_cloud_instance *in = &b->instance;
	const struct ip_addr a = ip_addr_from_in(ip);
	uint32_t h = ntohl(ip), base, last, i;
	bool in_vpc = false;

	if (s == NULL || !s->known) {
		snprintf(why, whylen, "subnet %s is not known", e->subnet_id);
		return false;
	}
	/* An IPv6-only subnet (no IPv4 CIDR, family 0) holds none. */
	if (s->cidr.addr.family != AF_INET) {
		snprintf(why, whylen, "an IPv4 address in IPv6-only subnet %s",
		    s->id);
		return false;
	}
	if (!ip_prefix_contains(&s->cidr, &a)) {
		snprintf(why, whylen, "outside subnet %s", s->id);
		return false;
	}
	base = ntohl(ip_addr_in4(&s->cidr.addr));
	last = s->cidr.len == 0 ? 0xffffffffu :
	    base | (0xffffffffu >> s->cidr.len);
	if (h - base < 4 || h == last) {
		snprintf(why, whylen, "a reserved address of subnet %s", s->id);
		return false;
	}
	if (ip == e->primary_ip || ip == ip_addr_in4(&in->primary_ip)) {
		snprintf(why, whylen, "the primary address of %s",
		    ip == ip_addr_in4(&in->primary_ip) ? "the node" :
		    "the ENI");
		return false;
	}
	for (i = 0; i < in->ncidrs && i < MSG_MAX_CIDRS; i++)
		if (ip_prefix_contains(&in->cidrs[i], &a))
			in_vpc = true;
	if (!in_vpc) {
		snprintf(why, whylen, "outside the VPC");
		return false;
	}
	for (i = 0; i < POOL_MAX_ENIS; i++) {
		const struct eni *o = &b->engine.enis[i];

		if (!o->used || o == e)
			continue;
		if (o->primary_ip == ip || eni_addr_index(o, ip) >= 0) {
			snprintf(why, whylen, "already on %s", eni_name(o));
			return false;
		}
		if (eni_prefix_index(o, prefix_base(ip)) >= 0) {
			snprintf(why, whylen, "inside a prefix of %s",
			    eni_name(o));
			return false;
		}
	}
	return true;
}

/*
 * A prefix the cloud named for e, judged as a whole before its addresses
 * are (each as a single one is): aligned, wholly inside the ENI's
 * subnet, not one e holds already, and overlapping no other ENI's prefix.
 */
static bool
prefix_acceptable(struct broker *b, const struct eni *e, uint32_t base,
    char *why, size_t whylen)
{
	const struct subnet *s = e->subnet >= 0 ?
	    &b->engine.subnets[e->subnet] : NULL;
	uint32_t last = htonl(ntohl(base) | (POOL_PREFIX_ADDRS - 1)), i;
	const struct ip_addr first_a = ip_addr_from_in(base);
	const struct ip_addr last_a = ip_addr_from_in(last);

	if (prefix_base(base) != base) {
		snprintf(why, whylen, "not aligned to a /%d", MSG_PREFIX_LEN);
		return false;
	}
	if (s == NULL || !s->known) {
		snprintf(why, whylen, "subnet %s is not known", e->subnet_id);
		return false;
	}
	if (s->cidr.len > MSG_PREFIX_LEN ||
	    !ip_prefix_contains(&s->cidr, &first_a) ||
	    !ip_prefix_contains(&s->cidr, &last_a)) {
		snprintf(why, whylen, "not inside subnet %s", s->id);
		return false;
	}
	for (i = 0; i < POOL_MAX_ENIS; i++) {
		const struct eni *o = &b->engine.enis[i];

		if (o->used && o != e && eni_prefix_index(o, base) >= 0) {
			snprintf(why, whylen, "a prefix of %s", eni_name(o));
			return false;
		}
	}
	/* EC2 delegates none over an address in use or reserved: a prefix
	 * that covers one is not what the cloud says it is. */
	for (i = 0; i < POOL_PREFIX_ADDRS; i++) {
		uint32_t ip = htonl(ntohl(base) + i);
		uint32_t h = ntohl(ip);
		uint32_t first = ntohl(ip_addr_in4(&s->cidr.addr));
		uint32_t bcast = first | (0xffffffffu >> s->cidr.len);
		uint32_t k;

		if (h - first < 4 || h == bcast) {
			snprintf(why, whylen, "over a reserved address of "
			    "subnet %s", s->id);
			return false;
		}
		if (ip == e->primary_ip ||
		    ip == ip_addr_in4(&b->instance.primary_ip)) {
			snprintf(why, whylen, "over the primary address of "
			    "%s", ip == e->primary_ip ? "the ENI" : "the node");
			return false;
		}
		if (eni_addr_index(e, ip) >= 0 &&
		    e->addrs[eni_addr_index(e, ip)].block == 0) {
			snprintf(why, whylen, "over a single address of the "
			    "ENI's own");
			return false;
		}
		for (k = 0; k < POOL_MAX_ENIS; k++) {
			const struct eni *o = &b->engine.enis[k];

			if (o->used && o != e && (o->primary_ip == ip ||
			    eni_addr_index(o, ip) >= 0)) {
				snprintf(why, whylen, "over an address of %s",
				    eni_name(o));
				return false;
			}
		}
	}
	return true;
}

/*
 * Take one address the cloud names for e, of prefix block (0: a single
 * one), checked: a bad one is logged and never used.  true if taken.
 */
static bool
eni_take_addr(struct eni *e, uint32_t addr, uint32_t block,
    enum addr_state st, const char *what)
{
	char why[128], ip[IP4_STR_LEN];
	const struct ip_addr a = ip_addr_from_in(addr);
	const struct pod *lp;

	ip4_format(addr, ip);
	if (eni_addr_index(e, addr) >= 0) {
		/* A single one named again by an assign's answer (a
		 * prefix's addresses are new with it: prefix_acceptable). */
		if (block == 0)
			log_security("%s: %s: the cloud named %s, which it holds "
			    "already; not a new one", eni_name(e), what, ip);
		return false;
	}
	if (block == 0 && eni_prefix_index(e, prefix_base(addr)) >= 0) {
		log_security("%s: %s: the cloud named %s, inside a prefix of "
		    "the ENI's own; never used as a single address",
		    eni_name(e), what, ip);
		return false;
	}
	if ((lp = pod_keeping_ip(e->b, &a, e)) != NULL) {
		log_warnx("%s: %s: %s is still the address of pod %s/%s, "
		    "%s (%s); not used until it is deleted", eni_name(e), what,
		    ip, lp->container_id, lp->ifname, pod_keeping_why(lp),
		    lp->eni_id);
		return false;
	}
	if (!eni_addr_acceptable(e->b, e, addr, why, sizeof(why))) {
		log_security("%s: %s: the cloud named %s, %s; never used",
		    eni_name(e), what, ip, why);
		return false;
	}
	if (e->naddrs == POOL_MAX_ENI_ADDRS) {
		log_errorx("%s: %s: more than %d addresses; %s not used",
		    eni_name(e), what, POOL_MAX_ENI_ADDRS, ip);
		return false;
	}
	memset(&e->addrs[e->naddrs], 0, sizeof(e->addrs[0]));
	e->addrs[e->naddrs].ip = addr;
	e->addrs[e->naddrs].state = st;
	e->addrs[e->naddrs].block = block;
	e->naddrs++;
	return true;
}

/*
 * Take the prefixes a cloud answer names for e.  Each is judged whole
 * (prefix_acceptable), then each of its addresses as a single one is; a
 * prefix refused is logged, counted and never used, and so is an address
 * refused.  Returns how many prefixes were taken.
 */
uint32_t
eni_take_prefixes(struct eni *e, const uint32_t *prefixes, uint32_t n,
    enum addr_state st, const char *what)
{
	struct broker *b = e->b;
	char why[128], ip[IP4_STR_LEN];
	uint32_t i, j, taken = 0, h;

	for (i = 0; i < n; i++) {
		ip4_format(prefixes[i], ip);
		if (eni_prefix_index(e, prefixes[i]) >= 0) {
			/* Only an assign's answer can: reconciliation takes
			 * only what the ENI lacks, a new ENI has none. */
			log_security("%s: %s: the cloud named prefix %s/%d, "
			    "which it holds already; not a new one",
			    eni_name(e), what, ip, MSG_PREFIX_LEN);
			continue;
		}
		if (!prefix_acceptable(b, e, prefixes[i], why, sizeof(why))) {
			log_security("%s: %s: the cloud named prefix %s/%d, %s; "
			    "never used", eni_name(e), what, ip, MSG_PREFIX_LEN,
			    why);
			b->engine.stats.pfx_refused++;
			continue;
		}
		if (e->nprefixes == POOL_MAX_PREFIXES ||
		    e->naddrs + POOL_PREFIX_ADDRS > POOL_MAX_ENI_ADDRS) {
			log_errorx("%s: %s: more than %d prefixes; %s/%d not "
			    "used", eni_name(e), what, POOL_MAX_PREFIXES, ip,
			    MSG_PREFIX_LEN);
			continue;
		}
		memset(&e->prefixes[e->nprefixes], 0, sizeof(e->prefixes[0]));
		e->prefixes[e->nprefixes++].base = prefixes[i];
		h = ntohl(prefixes[i]);
		for (j = 0; j < POOL_PREFIX_ADDRS; j++)
			(void)eni_take_addr(e, htonl(h + j), prefixes[i], st,
			    what);
		taken++;
	}
	return taken;
}

uint32_t
eni_prefix_retake(struct eni *e, uint32_t base, enum addr_state st)
{
	char why[128], s[IP4_STR_LEN];
	uint32_t h = ntohl(base), j, n = 0, ip;
	struct ip_addr a;

	for (j = 0; j < POOL_PREFIX_ADDRS; j++) {
		ip = htonl(h + j);
		a = ip_addr_from_in(ip);
		/* Quietly: what the checks refuse was logged when the
		 * prefix came, and they refuse it still. */
		if (eni_addr_index(e, ip) >= 0 ||
		    pod_keeping_ip(e->b, &a, e) != NULL ||
		    !eni_addr_acceptable(e->b, e, ip, why, sizeof(why)))
			continue;
		if (eni_take_addr(e, ip, base, st, "reconcile")) {
			ip4_format(ip, s);
			log_info("%s: %s: back in the pool, no pod holding it "
			    "any more", eni_name(e), s);
			n++;
		}
	}
	return n;
}

/* Forget e's prefix k and its addresses; a pod on one is lost. */
void
eni_drop_prefix(struct eni *e, uint32_t k, const char *why)
{
	uint32_t base = e->prefixes[k].base, i;

	for (i = e->naddrs; i-- > 0;)
		if (e->addrs[i].block == base) {
			if (e->addrs[i].pod != NULL)
				pod_lost(e->addrs[i].pod, why);
			e->addrs[i] = e->addrs[--e->naddrs];
		}
	e->prefixes[k] = e->prefixes[--e->nprefixes];
}

/* Take the addresses a cloud answer names for e.  Each is checked; a bad
 * one is logged and never used.  Returns how many were taken. */
uint32_t
eni_take_addrs(struct eni *e, const uint32_t *addrs, uint32_t n,
    enum addr_state st, const char *what)
{
	uint32_t i, taken = 0;

	for (i = 0; i < n; i++)
		if (eni_take_addr(e, addrs[i], 0, st, what))
			taken++;
	return taken;
}

void
eni_drop_addr(struct eni *e, uint32_t idx)
{
	if (e->addrs[idx].pod != NULL)
		pod_lost(e->addrs[idx].pod, "its address was taken back");
	/* The last slot fills the hole: pods point at their ENI, not at
	 * a slot, so none needs telling. */
	e->addrs[idx] = e->addrs[--e->naddrs];
}

/*
 * p's address was taken back by the cloud, but p keeps it configured until
 * the runtime deletes p.  Should the cloud have given it to one of our
 * ENIs again, it leaves the pool until then: handed to another pod, it
 * would be on the node twice (and p's DEL would take that pod's rules).
 * p's own slot, if any, is assigned, so a caller walking that ENI's
 * addresses loses no entry under its feet.
 */
void
engine_withhold_addr(struct broker *b, const struct pod *p)
{
	char ip[IP_ADDR_STR_LEN];
	struct eni *e;
	uint32_t i;
	int idx;

	for (i = 0; i < POOL_MAX_ENIS; i++) {
		e = &b->engine.enis[i];
		if (!e->used ||
		    (idx = eni_addr_index(e, ip_addr_in4(&p->ip))) < 0)
			continue;
		if (e->addrs[idx].state != ADDR_FREE &&
		    e->addrs[idx].state != ADDR_COOLING &&
		    e->addrs[idx].state != ADDR_UNCONFIRMED &&
		    e->addrs[idx].state != ADDR_PENDING)
			continue;
		ip_addr_format(&p->ip, ip);
		log_warnx("%s: %s is still the address of pod %s/%s, whose "
		    "address was taken back; out of the pool until it is "
		    "deleted", eni_name(e), ip, p->container_id, p->ifname);
		e->addrs[idx] = e->addrs[--e->naddrs];
		engine_kick(b);
	}
}

void
engine_release_addr(struct eni *e, int idx, bool cool)
{
	struct eni_addr *a = &e->addrs[idx];

	a->pod = NULL;
	if (cool && e->b->cfg.pool.ip_cooldown_s > 0) {
		addr_set(e, (uint32_t)idx, ADDR_COOLING);
		a->cool_until = now_ms() +
		    (uint64_t)e->b->cfg.pool.ip_cooldown_s * 1000;
	} else
		addr_set(e, (uint32_t)idx, ADDR_FREE);
	engine_kick(e->b);
}

struct eni_addr *
engine_addr(struct broker *b, uint32_t ip)
{
	uint32_t i, j;

	for (i = 0; i < POOL_MAX_ENIS; i++) {
		struct eni *e = &b->engine.enis[i];

		if (!e->used)
			continue;
		for (j = 0; j < e->naddrs; j++)
			if (e->addrs[j].ip == ip)
				return &e->addrs[j];
	}
	return NULL;
}

/* No new pod in e's prefix k for freeze_s, so that it may drain and be
 * given back (pool_plan: a surplus no wholly free prefix serves). */
void
eni_freeze_prefix(struct eni *e, uint32_t k, uint64_t now)
{
	char ip[IP4_STR_LEN];

	ip4_format(e->prefixes[k].base, ip);
	e->prefixes[k].frozen_until = now + e->b->engine.params.freeze_ms;
	e->b->engine.stats.pfx_frozen++;
	log_info("%s: prefix %s/%d frozen for %llu s: the pool holds a prefix "
	    "more than it needs, and this one is the emptiest", e->id, ip,
	    MSG_PREFIX_LEN,
	    (unsigned long long)(e->b->engine.params.freeze_ms / 1000));
}

/*
 * Cooling addresses whose time is up become free; unconfirmed ones (an
 * unassign may have taken them) only once a reconciliation asked since
 * has found them (recon_addresses): one is asked for when none has been.
 */
uint64_t
engine_cool(struct broker *b, uint64_t now)
{
	uint64_t next = 0;
	uint32_t i, j;
	bool confirm = false, soon = false;

	for (i = 0; i < POOL_MAX_ENIS; i++) {
		struct eni *e = &b->engine.enis[i];

		if (!e->used)
			continue;
		for (j = 0; j < e->naddrs; j++) {
			struct eni_addr *a = &e->addrs[j];

			if (a->state != ADDR_COOLING &&
			    a->state != ADDR_UNCONFIRMED)
				continue;
			if (a->cool_until > now) {
				if (next == 0 || a->cool_until < next)
					next = a->cool_until;
			} else if (a->state == ADDR_COOLING)
				addr_set(e, j, ADDR_FREE);
			else if (e->addrs_seen < a->cool_until) {
				/* At once if no run has started since; if
				 * one has but passed e by (its addresses
				 * were changing), once more in a while. */
				confirm = true;
				if (b->engine.recon_asked < a->cool_until)
					soon = true;
			}
		}
	}
	if (confirm && (soon || now >= b->engine.recon_asked +
	    ENGINE_CONFIRM_RETRY_MS))
		reconcile_now(b, "addresses an unassign may have taken are "
		    "checked");
	if (confirm) {
		uint64_t again = b->engine.recon_asked +
		    ENGINE_CONFIRM_RETRY_MS;

		if (again > now && (next == 0 || again < next))
			next = again;
	}
	return next;
}

/*
 * When the cooling addresses on ready ENIs come free, earliest first (an
 * unconfirmed one with the reconciliation that confirms it:
 * pool_cooling_free_at); returns how many.
 */
uint32_t
engine_cooling_frees(struct broker *b, uint64_t now, uint64_t *out,
    uint32_t max)
{
	const struct pool_confirm c = {
		.recon_asked = b->engine.recon_asked,
		.recon_running = b->engine.recon != NULL,
		.retry_ms = ENGINE_CONFIRM_RETRY_MS,
	};
	uint32_t i, j, k, n = 0;

	for (i = 0; i < POOL_MAX_ENIS; i++) {
		const struct eni *e = &b->engine.enis[i];

		if (!e->used || e->state != ENI_READY)
			continue;
		for (j = 0; j < e->naddrs && n < max; j++) {
			const struct eni_addr *a = &e->addrs[j];
			uint64_t t;

			if ((a->state != ADDR_COOLING &&
			    a->state != ADDR_UNCONFIRMED) ||
			    addr_usable(a, now))
				continue;
			t = pool_cooling_free_at(a->state == ADDR_UNCONFIRMED,
			    a->cool_until, &c, now);
			for (k = n++; k > 0 && out[k - 1] > t; k--)
				out[k] = out[k - 1];
			out[k] = t;
		}
	}
	return n;
}

void
engine_counts(struct broker *b, uint32_t *free_, uint32_t *assigned,
    uint32_t *cooling, uint32_t *other)
{
	uint64_t now = now_ms();
	uint32_t i, j;

	*free_ = *assigned = *cooling = *other = 0;
	for (i = 0; i < POOL_MAX_ENIS; i++) {
		const struct eni *e = &b->engine.enis[i];

		if (!e->used)
			continue;
		for (j = 0; j < e->naddrs; j++) {
			const struct eni_addr *a = &e->addrs[j];

			if (a->state == ADDR_ASSIGNED)
				(*assigned)++;
			else if ((a->state == ADDR_COOLING &&
			    !addr_usable(a, now)) ||
			    a->state == ADDR_UNCONFIRMED)
				(*cooling)++;
			else if ((a->state == ADDR_FREE ||
			    a->state == ADDR_COOLING) &&
			    e->state == ENI_READY)
				(*free_)++;
			else
				(*other)++;
		}
	}
}
