/*
 * The pods: the table of those that hold an address (by container id and
 * interface), each one's life beside its address (its rules asked of
 * enid-netd, a bounded number at a time; added, ready, deleted, lost),
 * the ADDs waiting for the pool to grow, the pods and cooling addresses
 * read back from the store at start, and what of the pool the store keeps
 * (engine_record).
 *
 * An ADD takes its address at once and has the assignment saved while
 * netd installs the pod's rules; it is answered once both are done.  A
 * DEL's pod stays recorded until its rules are gone: a restart in between
 * restores it, and its address goes to no other pod until the runtime's
 * retried DEL.  What the CNI socket asks is parsed and decided in cni.c;
 * the answers that wait for a save wait in the store (store.h).  Pod rule
 * requests to netd are limited in number at a time, so netd's queue (and
 * the liveness ping behind it) stays short.
 */
#include <arpa/inet.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "addr.h"
#include "cnireq.h"
#include "enid.h"
#include "log.h"

static void	pod_rules_answer(struct broker *, void *, const struct msg *,
		    bool);

/* ---- the pod table ---- */

static unsigned
pod_bucket(const char *cid, const char *ifname)
{
	uint32_t h = 2166136261u;

	for (; *cid; cid++)
		h = (h ^ (unsigned char)*cid) * 16777619u;
	h = (h ^ 0xffu) * 16777619u;
	for (; *ifname; ifname++)
		h = (h ^ (unsigned char)*ifname) * 16777619u;
	return h % 256;
}

void
pods_init(struct broker *b)
{
	struct engine *en = &b->engine;
	size_t i;

	for (i = 0; i < 256; i++)
		LIST_INIT(&en->pod_hash[i]);
	TAILQ_INIT(&en->pods);
	TAILQ_INIT(&en->netd_queue);
	TAILQ_INIT(&en->netd_bg_queue);
	TAILQ_INIT(&en->waiters);
}

struct pod *
pod_find(struct broker *b, const char *cid, const char *ifname)
{
	struct pod *p;

	LIST_FOREACH(p, &b->engine.pod_hash[pod_bucket(cid, ifname)], hash)
		if (strcmp(p->container_id, cid) == 0 &&
		    strcmp(p->ifname, ifname) == 0)
			return p;
	return NULL;
}

/* Place s at *at, return where it went, and move *at past it. */
static const char *
pod_put(char **at, const char *s, size_t len)
{
	char *d = *at;

	memcpy(d, s, len);
	d[len] = '\0';
	*at += len + 1;
	return d;
}

static struct pod *
pod_new(struct broker *b, const char *cid, const char *ifname,
    const char *ns, const char *name, const char *uid)
{
	size_t lc = strnlen(cid, CKPT_CID_LEN - 1);
	size_t li = strnlen(ifname, CKPT_IFNAME_LEN - 1);
	size_t ln = strnlen(ns, CKPT_K8S_LEN - 1);
	size_t lm = strnlen(name, CKPT_K8S_LEN - 1);
	size_t lu = strnlen(uid, CKPT_UID_LEN - 1);
	struct pod *p;
	char *at;

	if ((p = calloc(1, sizeof(*p) + lc + li + ln + lm + lu + 5)) == NULL)
		fatal("pod %s: out of memory", cid);
	at = (char *)(p + 1);
	p->container_id = pod_put(&at, cid, lc);
	p->ifname = pod_put(&at, ifname, li);
	p->k8s_namespace = pod_put(&at, ns, ln);
	p->k8s_name = pod_put(&at, name, lm);
	p->k8s_uid = pod_put(&at, uid, lu);
	p->b = b;
	LIST_INSERT_HEAD(&b->engine.pod_hash[pod_bucket(p->container_id,
	    p->ifname)], p, hash);
	TAILQ_INSERT_TAIL(&b->engine.pods, p, all);
	b->engine.npods++;
	return p;
}

/*
 * A pod goes.  Its request may still be out: cancelled, its slot freed
 * once the pod is out of every queue.
 */
static void
pod_free(struct pod *p)
{
	struct broker *b = p->b;
	uint32_t out = p->req.active ? 1 : 0;
	bool had6 = p->ip6.family == AF_INET6;

	if (p->recon_restore) {
		p->recon_restore = false;
		reconcile_restored(b);
	}
	broker_request_cancel(b, &p->req);
	if (p->netd_waiting && p->netd_bg)
		TAILQ_REMOVE(&b->engine.netd_bg_queue, p, netd_q);
	else if (p->netd_waiting)
		TAILQ_REMOVE(&b->engine.netd_queue, p, netd_q);
	LIST_REMOVE(p, hash);
	TAILQ_REMOVE(&b->engine.pods, p, all);
	b->engine.npods--;
	free(p->lost_why);
	free(p);
	if (out > 0) {
		b->engine.netd_inflight -= out;
		pods_netd_run(b);
	}
	if (had6)
		eni6_held_check(b);
}

/* The pod's slot in its ENI's addresses, or -1. */
static int
pod_addr(const struct pod *p)
{
	int i;

	if (p->eni == NULL || !p->eni->used)
		return -1;
	i = eni_addr_index(p->eni, ip_addr_in4(&p->ip));
	if (i < 0 || p->eni->addrs[i].pod != p)
		return -1;
	return i;
}

void
pod_lost(struct pod *p, const char *why)
{
	char ip[IP_ADDR_STR_LEN];

	ip_addr_format(pod_main_ip(p), ip);
	log_warnx("pod %s/%s (%s/%s) at %s: %s; it has no working address "
	    "until it is deleted", p->container_id, p->ifname,
	    p->k8s_namespace[0] ? p->k8s_namespace : "-",
	    p->k8s_name[0] ? p->k8s_name : "-", ip, why);
	p->lost = true;
	free(p->lost_why);
	if ((p->lost_why = strdup(why)) == NULL)
		fatal("pod %s: out of memory", p->container_id);
	p->eni = NULL;
	engine_withhold_addr(p->b, p);
	store_mark(p->b->store);
}

/*
 * A pod other than except whose address is ip: among the lost ones (whose
 * address the cloud took back, but which keep it configured until the
 * runtime deletes them) if lost, else among the others.  NULL if none.
 */
struct pod *
pod_with_ip(struct broker *b, const struct ip_addr *ip, bool lost,
    const struct pod *except)
{
	struct pod *p;

	TAILQ_FOREACH(p, &b->engine.pods, all)
		if (p != except && p->lost == lost && pod_has_ip(p, ip))
			return p;
	return NULL;
}

/* A pod without an IPv4 address (one the kernel's IPv6 rules recovered)
 * has family 0 there, which no address given here has. */
bool
pod_has_ip(const struct pod *p, const struct ip_addr *ip)
{
	return ip->family != AF_UNSPEC && (ip_addr_eq(&p->ip, ip) ||
	    ip_addr_eq(&p->ip6, ip));
}

const struct ip_addr *
pod_main_ip(const struct pod *p)
{
	return p->ip.family != AF_UNSPEC ? &p->ip : &p->ip6;
}

/*
 * A pod that keeps ip from e, though no ENI's table holds it: one whose
 * address the cloud took back (lost: it keeps it configured until the
 * runtime deletes it), or one restored from the checkpoint on another ENI
 * and not bound yet (that ENI is still being set up, and binds it by
 * address then; the cloud may have moved the address while enid was
 * down).  NULL if none.  (A pod bound to another ENI is in that ENI's
 * table: eni_addr_acceptable.)
 */
struct pod *
pod_keeping_ip(struct broker *b, const struct ip_addr *ip,
    const struct eni *e)
{
	struct pod *p;

	TAILQ_FOREACH(p, &b->engine.pods, all)
		if (pod_has_ip(p, ip) && p->eni == NULL &&
		    (p->lost || strcmp(p->eni_id, e->id) != 0))
			return p;
	return NULL;
}

/* Why p keeps its address (pod_keeping_ip), for a log line. */
const char *
pod_keeping_why(const struct pod *p)
{
	return p->lost ? "whose address was taken back" :
	    "restored on an ENI still being set up";
}

/* ---- answers ---- */

/*
 * A pod's answer is formatted as text, not built of json-c objects: it is
 * the hot path's largest answer, and making, printing and freeing a dozen
 * objects for each ADD cost more than the rest of its answer's work.  The
 * text is what json-c printed (plain, '/' unescaped).
 */
struct text {
	char		*buf;
	size_t		 size, len;	/* len >= size: it did not fit */
};

static void	text_add(struct text *t, const char *fmt, ...)
		    __attribute__((format(printf, 2, 3)));

static void
text_add(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->len >= t->size)
		return;
	va_start(ap, fmt);
	n = vsnprintf(t->buf + t->len, t->size - t->len, fmt, ap);
	va_end(ap);
	t->len = n < 0 ? t->size : t->len + (size_t)n;
}

/* s as a JSON string, escaped as json-c escapes it. */
static void
text_add_str(struct text *t, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	char esc[7];
	size_t run;

	text_add(t, "\"");
	while (*s != '\0') {
		for (run = 0; s[run] != '\0' && s[run] != '"' &&
		    s[run] != '\\' && (unsigned char)s[run] >= 0x20; run++)
			;
		if (run > 0) {
			text_add(t, "%.*s", (int)run, s);
			s += run;
			continue;
		}
		if (*s == '\0')
			break;
		esc[0] = '\\';
		esc[2] = '\0';
		switch (*s) {
		case '"':	esc[1] = '"'; break;
		case '\\':	esc[1] = '\\'; break;
		case '\b':	esc[1] = 'b'; break;
		case '\f':	esc[1] = 'f'; break;
		case '\n':	esc[1] = 'n'; break;
		case '\r':	esc[1] = 'r'; break;
		case '\t':	esc[1] = 't'; break;
		default:
			memcpy(esc + 1, "u00", 3);
			esc[4] = hex[(unsigned char)*s >> 4];
			esc[5] = hex[(unsigned char)*s & 0xf];
			esc[6] = '\0';
		}
		text_add(t, "%s", esc);
		s++;
	}
	text_add(t, "\"");
}

size_t
pod_answer(struct broker *b, const struct pod *p, char *buf, size_t size)
{
	struct text t = { buf, size, 0 };
	const struct subnet *s = p->eni && p->eni->subnet >= 0 ?
	    &b->engine.subnets[p->eni->subnet] : NULL;
	char ip[IP_ADDR_STR_LEN], cidr[IP_PREFIX_STR_LEN], mac[MAC_STR_LEN];
	uint32_t i, n;

	/* An IPv6-only pod (ip_family ipv6) has no "ip", "prefix",
	 * "subnet" nor "subnet_gateway": enid-cni wires IPv6 alone. */
	text_add(&t, "{\"ok\":true");
	if (p->ip.family == AF_INET) {
		ip_addr_format(&p->ip, ip);
		text_add(&t, ",\"ip\":\"%s\",\"prefix\":32", ip);
	}
	if (p->eni != NULL) {
		mac_format(p->eni->mac, mac);
		text_add(&t, ",\"eni\":");
		text_add_str(&t, p->eni->id);
		text_add(&t, ",\"eni_mac\":\"%s\",\"table\":%d", mac,
		    (int32_t)p->eni->table);
	}
	if (s != NULL && p->ip.family == AF_INET) {
		ip_prefix_format(&s->cidr, cidr);
		ip_addr_format(&s->gateway, ip);
		text_add(&t, ",\"subnet\":\"%s\",\"subnet_gateway\":\"%s\"",
		    cidr, ip);
	}
	/* Its IPv6 address and its subnet's /64 (enid-cni(8)): the plugin
	 * checks the address lies inside the VPC's IPv6 blocks, which then
	 * follow the IPv4 ones. */
	if (p->ip6.family == AF_INET6) {
		ip_addr_format(&p->ip6, ip);
		text_add(&t, ",\"ip6\":\"%s\"", ip);
		if (s != NULL && s->cidr6.addr.family == AF_INET6) {
			ip_prefix_format(&s->cidr6, cidr);
			text_add(&t, ",\"subnet6\":\"%s\"", cidr);
		}
	}
	/* The VPC's blocks of the pod's families: an IPv6-only pod's
	 * routes take no IPv4 block. */
	text_add(&t, ",\"vpc_cidrs\":[");
	n = 0;
	for (i = 0; p->ip.family == AF_INET && i < b->instance.ncidrs &&
	    i < MSG_MAX_CIDRS; i++) {
		ip_prefix_format(&b->instance.cidrs[i], cidr);
		text_add(&t, "%s\"%s\"", n++ > 0 ? "," : "", cidr);
	}
	for (i = 0; p->ip6.family == AF_INET6 && i < b->nvpc6 &&
	    i < MSG_MAX_CIDRS6; i++) {
		ip_prefix_format(&b->vpc6[i], cidr);
		text_add(&t, "%s\"%s\"", n++ > 0 ? "," : "", cidr);
	}
	text_add(&t, "]}");
	if (t.len >= size)
		fatalx("pod %s/%s: its answer does not fit in %zu bytes (bug)",
		    p->container_id, p->ifname, size);
	return t.len;
}

/*
 * A repeated ADD of a pod already ready gets the same answer, but no
 * sooner than the checkpoint that records the pod is on disk: after a
 * failed write the first ADD was refused, and the retry must not be
 * acknowledged on an assignment a restart would not know.  A save being
 * written may be the one that holds the pod, and may yet fail: the answer
 * waits for it too.
 */
void
pod_answer_again(struct broker *b, struct jref *ref, struct pod *p)
{
	char text[POD_ANSWER_MAX];

	p->answered_ms = now_ms();
	store_reply_after_pending(b->store, ref, text,
	    pod_answer(b, p, text, sizeof(text)));
}

static struct json_object *
ok_answer(void)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "ok", json_object_new_boolean(1));
	return o;
}

/* ---- what the store keeps ---- */

/*
 * When a, as the checkpoint keeps it, ends cooling (seconds of the epoch,
 * rounded up), or 0 if it does not cool: an address cooling now, or one
 * being given back (held until the cloud is surely done: eni_unassign).
 */
static int64_t
addr_cooling_until(const struct eni_addr *a, uint64_t now, time_t wall)
{
	if ((a->state == ADDR_COOLING || a->state == ADDR_REMOVING ||
	    a->state == ADDR_UNCONFIRMED) && a->cool_until > now)
		return (int64_t)wall +
		    (int64_t)((a->cool_until - now + 999) / 1000);
	return 0;
}

/* Does a pod that is not lost, or a lost one before p, have one of p's
 * addresses? */
static bool
lost_pod_shadowed(struct broker *b, const struct pod *p)
{
	const struct pod *q;
	bool before = true;

	TAILQ_FOREACH(q, &b->engine.pods, all) {
		if (q == p) {
			before = false;
			continue;
		}
		if ((pod_has_ip(q, &p->ip) || pod_has_ip(q, &p->ip6)) &&
		    (!q->lost || before))
			return true;
	}
	return false;
}

/*
 * Is cc, restored at start, still to be kept as it was read?  Until its
 * address is in the pool (its ENI set up: pods_bind_restored), no save
 * may drop it: a restart then would hand the address out at once.
 */
static bool
restored_cooling_pending(const struct broker *b, const struct ckpt_cooling *cc,
    time_t wall)
{
	uint32_t i;
	int idx;

	if (cc->until <= wall)
		return false;
	for (i = 0; i < POOL_MAX_ENIS; i++) {
		const struct eni *e = &b->engine.enis[i];

		/* Not set up, or set up and not bound yet (the primary's
		 * addresses are free before pods_bind_restored): a free
		 * address is never kept as cooling otherwise. */
		if (e->used &&
		    (idx = eni_addr_index(e, ip_addr_in4(&cc->ip))) >= 0 &&
		    e->addrs[idx].state != ADDR_PENDING &&
		    e->addrs[idx].state != ADDR_FREE)
			return false;
	}
	return true;
}

/*
 * What the store saves (its build function, store.h): the pods, and the
 * addresses that cool.  The strings are borrowed from the pods and ENIs:
 * c is saved (the store keeps a copy of its own) and freed before anything
 * can change them.
 */
int
engine_record(struct broker *b, struct checkpoint *c)
{
	struct engine *en = &b->engine;
	uint64_t now = now_ms();
	time_t wall = time(NULL);
	struct pod *p;
	size_t n = 0;
	uint32_t i, j;

	memset(c, 0, sizeof(*c));
	msg_strlcpy(c->instance_id, b->instance.instance_id,
	    sizeof(c->instance_id));
	c->written = (int64_t)wall;
	/* Version 4 from the first save of a run that may give pods IPv6:
	 * a journal record with an IPv6 address never follows a snapshot
	 * an older enid would take. */
	c->ipv6 = config_family_v6(b->cfg.ip_family);
	if (en->npods > 0 &&
	    (c->pods = calloc(en->npods, sizeof(*c->pods))) == NULL)
		return -1;
	TAILQ_FOREACH(p, &en->pods, all) {
		struct ckpt_pod *cp;

		/* A lost pod is kept too: the runtime has not deleted it,
		 * and its address must go to no other pod after a restart
		 * either.  Only once, and never beside a pod that has it.
		 * None is left out for a cap: past CKPT_MAX_PODS the store
		 * refuses the save, loudly, and nothing is acknowledged. */
		if (p->lost && lost_pod_shadowed(b, p))
			continue;
		cp = &c->pods[n++];
		cp->container_id = p->container_id;
		cp->ifname = p->ifname;
		cp->k8s_namespace = p->k8s_namespace;
		cp->k8s_name = p->k8s_name;
		cp->k8s_uid = p->k8s_uid;
		cp->host_veth = p->host_veth[0] != '\0' ? p->host_veth : NULL;
		cp->ip = p->ip;
		cp->ip6 = p->ip6;
		cp->eni_id = p->eni ? p->eni->id : p->eni_id;
		cp->since = p->since;
	}
	c->npods = n;
	n = 0;
	for (i = 0; i < POOL_MAX_ENIS; i++) {
		const struct eni *e = &en->enis[i];

		if (!e->used)
			continue;
		for (j = 0; j < e->naddrs; j++)
			if (addr_cooling_until(&e->addrs[j], now, wall) != 0)
				n++;
	}
	for (i = 0; i < en->restored.ncooling; i++)
		if (restored_cooling_pending(b, &en->restored.cooling[i], wall))
			n++;
	if (n > 0 && (c->cooling = calloc(n, sizeof(*c->cooling))) == NULL) {
		checkpoint_free(c);
		return -1;
	}
	for (i = 0; i < POOL_MAX_ENIS && c->ncooling < n; i++) {
		const struct eni *e = &en->enis[i];

		if (!e->used)
			continue;
		for (j = 0; j < e->naddrs && c->ncooling < n; j++) {
			int64_t until = addr_cooling_until(&e->addrs[j], now,
			    wall);
			struct ckpt_cooling *cc;

			if (until == 0)
				continue;
			cc = &c->cooling[c->ncooling++];
			cc->ip = ip_addr_from_in(e->addrs[j].ip);
			cc->eni_id = e->id;
			cc->until = until;
		}
	}
	for (i = 0; i < en->restored.ncooling && c->ncooling < n; i++)
		if (restored_cooling_pending(b, &en->restored.cooling[i],
		    wall))
			c->cooling[c->ncooling++] = en->restored.cooling[i];
	return 0;
}

/* ---- netd requests, a bounded number at a time ---- */

static void	pod_netd_answer(struct broker *, void *, const struct msg *,
		    bool);

/*
 * The addresses of p's rule request, as msg.h orders them: its IPv4 one
 * first, then a dual-stack pod's IPv6 one.  A lost pod whose IPv4 address
 * is another's now (keep4) has its IPv6 one alone.
 */
static uint32_t
pod_round_addrs(const struct pod *p, const struct ip_addr *out[2])
{
	uint32_t n = 0;

	if (p->ip.family == AF_INET && !p->keep4)
		out[n++] = &p->ip;
	if (p->ip6.family == AF_INET6)
		out[n++] = &p->ip6;
	return n;
}

/*
 * Send what waits for a slot.  A queued pod may need no request after all
 * (pod_netd_send): the slot goes on to the next, or it would be lost for
 * good.  What a runtime waits for first; the rest while few are in flight
 * and no ENI's set-up step waits (pod_netd_send).  eni.c calls this too,
 * once the last set-up step is answered.
 */
void
pods_netd_run(struct broker *b)
{
	struct engine *en = &b->engine;
	struct pod *p;

	while ((p = TAILQ_FIRST(&en->netd_queue)) != NULL &&
	    en->netd_inflight < ENGINE_MAX_NETD_INFLIGHT) {
		TAILQ_REMOVE(&en->netd_queue, p, netd_q);
		p->netd_waiting = false;
		pod_netd_send(p);
	}
	while (TAILQ_EMPTY(&en->netd_queue) && !engine_setup_waiting(b) &&
	    (p = TAILQ_FIRST(&en->netd_bg_queue)) != NULL &&
	    en->netd_inflight < ENGINE_MAX_NETD_BG) {
		TAILQ_REMOVE(&en->netd_bg_queue, p, netd_q);
		p->netd_waiting = false;
		pod_netd_send(p);
	}
}

static void
netd_slot_free(struct broker *b)
{
	b->engine.netd_inflight--;
	pods_netd_run(b);
}

/*
 * A pod queued only to have its rules made sure of, that a runtime now
 * waits for (a DEL, a GC, a repeated ADD): out of the background queue.
 * Returns true if it was there; it is then in no queue and sends nothing.
 * A reconcile that counted on its rules being made sure of goes on, unless
 * sending follows (send).
 */
bool
pod_netd_unqueue_bg(struct pod *p, bool send)
{
	struct engine *en = &p->b->engine;

	if (!p->netd_waiting || !p->netd_bg)
		return false;
	TAILQ_REMOVE(&en->netd_bg_queue, p, netd_q);
	p->netd_waiting = false;
	p->netd_bg = false;
	if (p->recon_restore && !send) {
		p->recon_restore = false;
		reconcile_restored(p->b);
	}
	return true;
}

/*
 * Ask netd to add (POD_ADDING) or remove (POD_DELETING) p's rules, or to
 * make sure they are there (POD_READY: a pod restored or corrected by a
 * reconciliation), at most ENGINE_MAX_NETD_INFLIGHT at a time: a restart
 * with thousands of pods queues them here, not in netd.  Making sure
 * (what no runtime waits for) goes only while fewer than
 * ENGINE_MAX_NETD_BG are in flight and no ADD or DEL waits: the first
 * ADD after a restart of a full node waits behind a few of them, not
 * hundreds (issue 27); and while no ENI's declare or set-up waits
 * (engine_setup_waiting): after a restart an ADD waits for the set-up of
 * the ENI with free addresses, which netd would otherwise take only after
 * the restored pods of the ENIs ready already (issue 34).
 *
 * A dual-stack pod's rules, both families', are one request (msg.h): one
 * slot, one round trip, and netd checks both before it changes either.
 */
void
pod_netd_send(struct pod *p)
{
	struct broker *b = p->b;
	struct engine *en = &b->engine;
	struct msg_netd_pod_rule req;
	const struct ip_addr *addrs[2];
	uint32_t i, n = pod_round_addrs(p, addrs);
	uint32_t id;
	bool bg;
	struct eni_addr *a;

	/* No runtime waits for it (a repeated ADD of a restored pod does). */
	bg = p->state == POD_READY && p->add_ref.server == NULL;
	if (en->netd_inflight >= (bg ? ENGINE_MAX_NETD_BG :
	    ENGINE_MAX_NETD_INFLIGHT) ||
	    (bg && (!TAILQ_EMPTY(&en->netd_queue) ||
	    engine_setup_waiting(b)))) {
		if (!p->netd_waiting) {
			TAILQ_INSERT_TAIL(bg ? &en->netd_bg_queue :
			    &en->netd_queue, p, netd_q);
			p->netd_waiting = true;
			p->netd_bg = bg;
		}
		return;
	}
	if (p->state == POD_READY && (p->eni == NULL || p->lost)) {
		/* Its address went while it waited: nothing to make sure
		 * of, and a reconcile that counted on it goes on.  A DEL
		 * that came meanwhile goes ahead. */
		if (p->recon_restore) {
			p->recon_restore = false;
			reconcile_restored(b);
		}
		if (p->add_ref.server != NULL)
			jref_error(&p->add_ref, "address-lost", "this "
			    "attachment's address is gone (%s); delete it "
			    "first", p->lost_why ? p->lost_why : "its ENI is "
			    "gone");
		if (p->del_wanted)
			pod_del_start(p);
		return;
	}
	en->netd_inflight++;
	memset(&req, 0, sizeof(req));
	req.addr = *addrs[0];
	if (n == 2)
		req.addr6 = *addrs[1];
	req.table = p->eni != NULL ? p->eni->table : 0;
	broker_request(b, &p->req, &b->netd, p->state == POD_DELETING ?
	    MSG_NETD_DEL_POD : MSG_NETD_ADD_POD, &req, sizeof(req),
	    ENGINE_NETD_DEADLINE_MS, p->state == POD_READY ?
	    pod_rules_answer : pod_netd_answer, p);
	/* So that a reconcile whose rule dump was asked before this does
	 * not take the change on its way for drift.  An IPv6 address is
	 * the pod's alone (never handed out again), and once the pod is
	 * gone the engine's last removal stands for it. */
	id = p->req.id;
	for (i = 0; i < n; i++) {
		if (addrs[i]->family == AF_INET6) {
			p->rules6_req = id;
			if (p->state == POD_DELETING)
				en->rules6_del_req = id;
		} else if ((a = engine_addr(b, ip_addr_in4(addrs[i]))) !=
		    NULL)
			a->rules_req = id;
	}
}

/* One pod a GC released is gone: the GC is answered with the last. */
void
gc_release_done(struct broker *b, struct gc_run *gc)
{
	struct json_object *o;

	if (gc == NULL || --gc->outstanding > 0)
		return;
	o = ok_answer();
	json_object_object_add(o, "released",
	    json_object_new_int((int32_t)gc->released));
	store_reply(b->store, &gc->ref, o);
	free(gc);
}

static void
pod_add_failed(struct pod *p, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * The ADD fails and the pod goes.  A DEL or GC that came meanwhile is
 * done by that.  The ADD is answered last, once the pod is freed: the
 * answer may re-enter the broker with the client's next request.
 */
static void
pod_add_failed(struct pod *p, const char *code, const char *fmt, ...)
{
	struct broker *b = p->b;
	struct jref add = p->add_ref, del = p->del_ref;
	struct gc_run *gc = p->gc;
	bool del_wanted = p->del_wanted;
	char why[MSG_ERR_LEN + 64];
	int idx = pod_addr(p);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	log_warnx("pod %s/%s: add failed: %s", p->container_id, p->ifname,
	    why);
	b->engine.stats.adds_failed++;
	/* Rules may be half there: the address cools before reuse, and
	 * reconciliation removes what netd left. */
	if (idx >= 0)
		engine_release_addr(p->eni, idx, true);
	pod_free(p);
	store_mark(b->store);
	if (del_wanted)
		store_reply_text(b->store, &del, JREF_OK_TEXT,
		    sizeof(JREF_OK_TEXT) - 1);
	gc_release_done(b, gc);
	jref_error(&add, code, "%s", why);
}

static void
pod_gone(struct pod *p)
{
	struct broker *b = p->b;
	struct gc_run *gc = p->gc;
	int idx = pod_addr(p);

	if (idx >= 0)
		engine_release_addr(p->eni, idx, true);
	b->engine.stats.dels++;
	store_reply_text(b->store, &p->del_ref, JREF_OK_TEXT,
	    sizeof(JREF_OK_TEXT) - 1);
	gc_release_done(b, gc);
	pod_free(p);
	store_mark(b->store);
}

static void
pod_netd_answer(struct broker *b, void *arg, const struct msg *m, bool final)
{
	struct pod *p = arg;
	struct msg_result r;
	char ip[IP_ADDR_STR_LEN], ip6[IP_ADDR_STR_LEN] = "";

	(void)final;
	netd_slot_free(b);
	ip_addr_format(pod_main_ip(p), ip);
	if (m != NULL)
		memcpy(&r, m->u.bytes, sizeof(r));
	if (p->state == POD_ADDING) {
		if (m == NULL) {
			pod_add_failed(p, "netd", "setting up the pod's "
			    "routing rules failed: enid-netd did not answer "
			    "in time");
			return;
		}
		if (r.status != ST_OK) {
			pod_add_failed(p, "netd", "setting up the pod's "
			    "routing rules failed: %s: %s",
			    msg_status_name(r.status), r.message);
			return;
		}
		if (p->lost) {
			/* Its ENI or address went while netd worked: the
			 * address would not route. */
			pod_add_failed(p, "address-lost", "the address %s "
			    "went while the pod's rules were set up (%s); "
			    "try again", ip, p->lost_why);
			return;
		}
		p->state = POD_READY;
		p->answered_ms = now_ms();
		b->engine.stats.adds_ok++;
		if (p->ip.family == AF_INET && p->ip6.family == AF_INET6)
			ip_addr_format(&p->ip6, ip6);
		log_info("pod %s/%s (%s/%s): %s%s%s on %s", p->container_id,
		    p->ifname, p->k8s_namespace[0] ? p->k8s_namespace : "-",
		    p->k8s_name[0] ? p->k8s_name : "-", ip,
		    ip6[0] != '\0' ? " and " : "", ip6,
		    p->eni ? p->eni->id : "?");
		/* Once the save started with the pod (pod_take) is on disk:
		 * becoming ready changes nothing that save keeps, so no save
		 * is asked for. */
		{
			char text[POD_ANSWER_MAX];

			store_reply_after_save(b->store, &p->add_ref,
			    p->saved_by, text, pod_answer(b, p, text,
			    sizeof(text)));
		}
		if (p->del_wanted)
			pod_del_start(p);
		return;
	}
	/* Deleting: rules that stay behind are found and removed by
	 * reconciliation; the pod is gone either way. */
	if (m == NULL)
		log_warnx("pod %s/%s at %s: enid-netd did not answer the rule "
		    "removal; reconciliation removes what is left",
		    p->container_id, p->ifname, ip);
	else if (r.status != ST_OK)
		log_warnx("pod %s/%s at %s: rule removal: %s: %s; "
		    "reconciliation removes what is left", p->container_id,
		    p->ifname, ip, msg_status_name(r.status), r.message);
	else
		log_info("pod %s/%s: %s released", p->container_id, p->ifname,
		    ip);
	pod_gone(p);
}

void
pod_del_start(struct pod *p)
{
	char ip[IP_ADDR_STR_LEN];

	p->state = POD_DELETING;
	p->del_wanted = false;
	/* A lost pod's address may be another pod's by now (a checkpoint
	 * that held it twice): the rules for it are that pod's, and stay.
	 * Its IPv6 address is its own (never handed out twice): those
	 * rules go. */
	if (p->lost && p->ip.family == AF_INET &&
	    pod_with_ip(p->b, &p->ip, false, p) != NULL) {
		ip_addr_format(&p->ip, ip);
		log_info("pod %s/%s: released; %s is another pod's now, whose "
		    "rules stay", p->container_id, p->ifname, ip);
		if (p->ip6.family != AF_INET6) {
			pod_gone(p);
			return;
		}
		p->keep4 = true;
	}
	pod_netd_send(p);
}

/* Make sure p's rules are installed (adopted or restored pods). */
static void
pod_rules_answer(struct broker *b, void *arg, const struct msg *m, bool final)
{
	struct pod *p = arg;
	struct msg_result r;
	bool ok;

	(void)final;
	netd_slot_free(b);
	if (m != NULL)
		memcpy(&r, m->u.bytes, sizeof(r));
	ok = m != NULL && r.status == ST_OK;
	if (m == NULL)
		log_warnx("pod %s/%s: restoring its rules: enid-netd did not "
		    "answer in time", p->container_id, p->ifname);
	else if (r.status != ST_OK)
		log_warnx("pod %s/%s: restoring its rules: %s: %s",
		    p->container_id, p->ifname, msg_status_name(r.status),
		    r.message);
	if (p->recon_restore) {
		p->recon_restore = false;
		reconcile_restored(b);
	}
	/* A repeated ADD that waited for the rules hears how it went. */
	if (p->add_ref.server != NULL) {
		struct jref ref = p->add_ref;

		p->add_ref.server = NULL;
		if (ok && !p->lost)
			pod_answer_again(b, &ref, p);
		else if (p->lost)
			jref_error(&ref, "address-lost", "this attachment's "
			    "address is gone (%s); delete it first",
			    p->lost_why);
		else
			jref_error(&ref, "netd", "restoring the pod's routing "
			    "rules failed: %s", m == NULL ? "enid-netd did not "
			    "answer in time" : r.status != ST_OK ? r.message :
			    "its IPv6 rules were not restored");
	}
	/* A DEL or GC that came meanwhile goes ahead either way. */
	if (p->del_wanted)
		pod_del_start(p);
}

void
pod_rules_ensure(struct pod *p)
{
	if (p->state != POD_READY || p->eni == NULL || p->lost ||
	    p->req.active || p->netd_waiting)
		return;
	pod_netd_send(p);
}

/*
 * As pod_rules_ensure, for a reconcile that answers once the repair is
 * done: counted until its answer (pod_rules_answer), or the pod's end.
 */
bool
pod_rules_restore(struct pod *p)
{
	pod_rules_ensure(p);
	if (p->recon_restore || (!p->req.active && !p->netd_waiting))
		return false;
	p->recon_restore = true;
	p->b->engine.recon_restores++;
	return true;
}

/* ---- taking an address ---- */

void
pod_take(struct broker *b, struct jref *ref, const char *cid,
    const char *ifname, const char *ns, const char *name, const char *uid,
    const char *veth, struct eni *e)
{
	struct pod *p;
	struct ip_addr ip6;
	uint64_t now = now_ms();
	int best;

	/* Dual-stack: an address of each family, or none (pods_pick_eni
	 * took an ENI with its /80; only a /80 used up, in 2109, lacks
	 * one).  IPv6-only: the IPv6 one alone. */
	memset(&ip6, 0, sizeof(ip6));
	if (config_family_v6(b->cfg.ip_family) &&
	    (ip6 = eni6_next(e)).family != AF_INET6) {
		log_warnx("pool: %s has no IPv6 address left for pod %s/%s",
		    e->id, cid, ifname);
		b->engine.stats.adds_failed++;
		jref_error(ref, "no-address", "%s has no IPv6 address left",
		    e->id);
		return;
	}
	p = pod_new(b, cid, ifname, ns, name, uid);
	msg_strlcpy(p->host_veth, veth, sizeof(p->host_veth));
	if (config_family_v4(b->cfg.ip_family)) {
		/* The fullest prefix's, or the single address rested
		 * longest. */
		best = eni_pick_addr(e, now);
		if (best < 0)
			fatalx("pool: %s has no free address after all (bug)",
			    e->id);
		addr_set(e, (uint32_t)best, ADDR_ASSIGNED);
		e->addrs[best].pod = p;
		p->ip = ip_addr_from_in(e->addrs[best].ip);
	}
	p->ip6 = ip6;
	p->eni = e;
	msg_strlcpy(p->eni_id, e->id, sizeof(p->eni_id));
	p->state = POD_ADDING;
	p->since = (int64_t)time(NULL);
	p->add_ref = *ref;
	ref->server = NULL;
	if (log_get_level() >= LOG_LVL_DEBUG) {
		char ip[IP_ADDR_STR_LEN], ip6s[IP_ADDR_STR_LEN] = "";

		if (p->ip.family == AF_INET)
			ip_addr_format(&p->ip, ip);
		else
			ip[0] = '\0';
		if (p->ip6.family == AF_INET6)
			ip_addr_format(&p->ip6, ip6s);
		log_debug("pod %s/%s: %s%s%s taken on %s; its rules asked for",
		    p->container_id, p->ifname, ip, ip[0] && ip6s[0] ?
		    " and " : "", ip6s, e->id);
	}
	pod_netd_send(p);
	/* Recorded now, so the write overlaps netd's work; the answer still
	 * waits for both (pod_netd_answer).  Should enid die before netd
	 * answers, the restart restores the pod (and its rules), and the
	 * runtime's retry of the unanswered ADD gets the same address, or
	 * its DEL releases it.  Every save that starts from here on holds
	 * the pod as the checkpoint keeps it, which nothing changes until it
	 * is ready. */
	p->saved_by = store_next_save(b->store);
	store_mark(b->store);
	engine_kick(b);
}

/* The ENI an IPv6-only pod's address comes from (pods_pick_eni). */
static struct eni *
pick_eni6(struct broker *b)
{
	struct eni *best = NULL;
	uint32_t i, n[POOL_MAX_ENIS];
	struct pod *p;

	memset(n, 0, sizeof(n));
	TAILQ_FOREACH(p, &b->engine.pods, all)
		if (p->eni != NULL)
			n[p->eni - b->engine.enis]++;
	for (i = 0; i < POOL_MAX_ENIS; i++) {
		struct eni *e = &b->engine.enis[i];

		if (!e->used || e->state != ENI_READY || e->subnet < 0 ||
		    !b->engine.subnets[e->subnet].configured ||
		    e->prefix6.family != AF_INET6)
			continue;
		if (best == NULL || n[i] > n[best - b->engine.enis])
			best = e;
	}
	return best;
}

/*
 * The ENI to take from now, or NULL.  Dual-stack, only one with its /80
 * as well: an ADD that finds free IPv4 addresses only on ENIs still
 * waiting for theirs waits (the /80's assign kicks the engine), and the
 * pool does not grow for it, its planning counting IPv4 addresses
 * (every ENI's /80 is asked for by eni6_plan).  IPv6-only: any ready
 * ENI of a configured subnet with its /80, the one with the most pods
 * (a /80 does not fill up: packing lets an empty one be released).
 */
struct eni *
pods_pick_eni(struct broker *b)
{
	struct eni *best = NULL;
	uint64_t now = now_ms();
	uint32_t i, j, nfree, nbest = 0, assigned;
	bool best_thawed = false, thawed;
	bool dual = b->cfg.ip_family == IP_FAMILY_DUAL;
	int k;

	if (b->cfg.ip_family == IP_FAMILY_IPV6)
		return pick_eni6(b);

	for (i = 0; i < POOL_MAX_ENIS; i++) {
		struct eni *e = &b->engine.enis[i];

		if (!e->used || e->state != ENI_READY ||
		    e->subnet < 0 || !b->engine.subnets[e->subnet].configured ||
		    (dual && e->prefix6.family != AF_INET6))
			continue;
		nfree = assigned = 0;
		thawed = false;
		for (j = 0; j < e->naddrs; j++) {
			const struct eni_addr *a = &e->addrs[j];

			if (addr_usable(a, now)) {
				nfree++;
				k = a->block != 0 ?
				    eni_prefix_index(e, a->block) : -1;
				if (k < 0 || e->prefixes[k].frozen_until <= now)
					thawed = true;
			} else if (a->state == ADDR_ASSIGNED)
				assigned++;
		}
		/* Pack: the fullest that still has room, outside frozen
		 * prefixes if any has. */
		if (nfree > 0 && (best == NULL || (thawed && !best_thawed) ||
		    (thawed == best_thawed && assigned > nbest))) {
			best = e;
			nbest = assigned;
			best_thawed = thawed;
		}
	}
	return best;
}

/* ---- waiters ---- */

static void
waiter_free(struct broker *b, struct waiter *w)
{
	loop_timer_cancel(&b->loop, &w->timer);
	TAILQ_REMOVE(&b->engine.waiters, w, entry);
	b->engine.nwaiters--;
	free(w);
}

/*
 * Free w and hand back its request, to be answered after.  An answer may
 * re-enter the broker: the client's next line is taken at once, and a DEL
 * there looks for this very waiter, so w must be gone by then.
 */
struct jref
waiter_take(struct broker *b, struct waiter *w)
{
	struct jref ref = w->ref;

	waiter_free(b, w);
	return ref;
}

static void
waiter_timeout(struct loop *l, struct loop_timer *t)
{
	struct waiter *w = t->arg;
	struct broker *b = w->b;
	struct engine *en = &b->engine;
	struct jref ref;
	const char *code;
	bool present;

	(void)l;
	/* A growth failure names the cause better than "timeout" does
	 * ("throttled", "cloud-unreachable"), but only one of this wait's:
	 * one while it waited, or one still in force when it began (nothing
	 * grew since).  An older one is history, not the cause. */
	present = en->last_failure_code[0] != '\0' &&
	    (en->last_failure_at >= w->since ||
	    en->growth_ok_at < en->last_failure_at);
	code = present ? en->last_failure_code : "timeout";
	b->engine.stats.adds_failed++;
	ref = waiter_take(b, w);
	jref_error(&ref, code, "no address within add_timeout (%u s): "
	    "the pool is %s%s%s", b->cfg.pool.add_timeout_s,
	    en->phase != PHASE_RUNNING ? "still starting" : "growing",
	    present ? "; growth failed: " : "",
	    present ? en->last_failure : "");
	engine_kick(b);
}

void
waiter_add(struct broker *b, struct jref *ref, const struct cni_request *r)
{
	struct waiter *w;

	if ((w = calloc(1, sizeof(*w))) == NULL)
		fatal("waiter: out of memory");
	w->b = b;
	w->ref = *ref;
	ref->server = NULL;
	msg_strlcpy(w->container_id, r->container_id, sizeof(w->container_id));
	msg_strlcpy(w->ifname, r->ifname, sizeof(w->ifname));
	msg_strlcpy(w->k8s_namespace, r->k8s_namespace,
	    sizeof(w->k8s_namespace));
	msg_strlcpy(w->k8s_name, r->k8s_name, sizeof(w->k8s_name));
	msg_strlcpy(w->k8s_uid, r->k8s_uid, sizeof(w->k8s_uid));
	msg_strlcpy(w->host_veth, r->host_veth, sizeof(w->host_veth));
	w->since = now_ms();
	loop_timer_init(&w->timer, waiter_timeout, w);
	loop_timer_after(&b->loop, &w->timer,
	    (uint64_t)b->cfg.pool.add_timeout_s * 1000);
	TAILQ_INSERT_TAIL(&b->engine.waiters, w, entry);
	b->engine.nwaiters++;
	log_debug("pod %s/%s: waiting for an address (%u waiting)",
	    w->container_id, w->ifname, b->engine.nwaiters);
	engine_kick(b);
}

void
waiters_fail(struct broker *b, uint64_t before, const char *code,
    const char *fmt, ...)
{
	struct waiter *w;
	char why[MSG_ERR_LEN + 128];
	uint64_t timeout = (uint64_t)b->cfg.pool.add_timeout_s * 1000;
	uint32_t n = 0;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	/* Oldest first, so the deadlines are in order. */
	while ((w = TAILQ_FIRST(&b->engine.waiters)) != NULL &&
	    w->since + timeout <= before) {
		struct jref ref = waiter_take(b, w);

		b->engine.stats.adds_failed++;
		jref_error(&ref, code, "%s", why);
		n++;
	}
	if (n > 0)
		log_warnx("pool: %u waiting ADDs answered %s: %s", n, code, why);
}

/*
 * The waiting ADDs that growth can't serve, but a cooling address might:
 * frees[] holds the times the pool's cooling addresses come free, the
 * earliest first.  The oldest waiter may have the first, the next the
 * second, and so on; a waiter whose address comes free before its
 * add_timeout ends keeps waiting, any other is answered code now, with
 * what cools and when the first comes free.
 */
void
waiters_fail_but_cooling(struct broker *b, const uint64_t *frees,
    uint32_t nfrees, const char *code, const char *fmt, ...)
{
	struct waiter *w, *next;
	char why[MSG_ERR_LEN + 128];
	uint64_t timeout = (uint64_t)b->cfg.pool.add_timeout_s * 1000;
	uint64_t now = now_ms();
	uint32_t i = 0, n = 0;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	for (w = TAILQ_FIRST(&b->engine.waiters); w != NULL; w = next) {
		struct jref ref;

		next = TAILQ_NEXT(w, entry);
		if (i < nfrees && frees[i] < w->since + timeout) {
			i++;		/* it waits for that one */
			continue;
		}
		ref = waiter_take(b, w);
		b->engine.stats.adds_failed++;
		if (nfrees == 0)
			jref_error(&ref, code, "%s", why);
		else
			jref_error(&ref, code, "%s; %u addresses are cooling "
			    "(ip_cooldown_s), the first free in %.1f s, too "
			    "late for this ADD", why, nfrees,
			    (double)(frees[0] > now ? frees[0] - now : 0) /
			    1000);
		n++;
	}
	if (n > 0)
		log_warnx("pool: %u waiting ADDs answered %s: %s%s", n, code,
		    why, nfrees > 0 ? " (cooling addresses come free too "
		    "late for them)" : "");
}

/*
 * A new pod over max_pods, or over the ENID_MAX_PODS enid holds, is
 * refused as such before a warm address is taken: netd would refuse its
 * rules anyway, but as "netd", which names the wrong cause.  Pods being
 * deleted still count: their addresses are not free yet.
 */
bool
pods_at_max(const struct broker *b)
{
	/* Lost pods count for the checkpoint's cap: it records them. */
	return b->engine.npods >= CKPT_MAX_PODS ||
	    b->engine.npods >= POOL_MAX_HELD ||
	    (b->engine.params.max_pods != 0 &&
	    b->engine.npods >= b->engine.params.max_pods);
}

void
refuse_max_pods(const struct broker *b, struct jref *ref)
{
	if (b->engine.npods >= CKPT_MAX_PODS)
		jref_error(ref, "max-pods", "%u pods are recorded, lost ones "
		    "included: the most the checkpoint holds "
		    "(ENID_MAX_RECORDED_PODS)", b->engine.npods);
	else if (b->engine.params.max_pods == 0 ||
	    b->engine.params.max_pods > b->engine.npods)
		jref_error(ref, "max-pods", "%u pods hold addresses: the most "
		    "enid holds on a node (ENID_MAX_PODS)", b->engine.npods);
	else
		jref_error(ref, "max-pods", "max_pods (%u) pods hold "
		    "addresses", b->engine.params.max_pods);
}

void
pods_serve_waiters(struct broker *b)
{
	struct waiter *w;
	struct pod *p;
	struct eni *e;

	if (b->engine.phase != PHASE_RUNNING)
		return;
	while ((w = TAILQ_FIRST(&b->engine.waiters)) != NULL) {
		struct jref ref;

		if (!jref_alive(&w->ref)) {
			waiter_free(b, w);	/* the runtime gave up */
			continue;
		}
		if ((p = pod_find(b, w->container_id, w->ifname)) != NULL) {
			/* Added meanwhile by a retry: the same answer. */
			ref = waiter_take(b, w);
			if (p->state == POD_READY && !p->lost &&
			    !p->req.active && !p->netd_waiting)
				pod_answer_again(b, &ref, p);
			else
				jref_error(&ref, "busy", "this attachment "
				    "is being changed; try again");
			continue;
		}
		if (pods_at_max(b)) {
			ref = waiter_take(b, w);
			refuse_max_pods(b, &ref);
			continue;
		}
		if ((e = pods_pick_eni(b)) == NULL)
			return;
		pod_take(b, &w->ref, w->container_id, w->ifname,
		    w->k8s_namespace, w->k8s_name, w->k8s_uid, w->host_veth,
		    e);
		waiter_free(b, w);
	}
}

/* ---- restart ---- */

void
pod_restore(struct broker *b, const struct ckpt_pod *cp)
{
	struct pod *p;

	if (pod_find(b, cp->container_id, cp->ifname) != NULL)
		return;
	p = pod_new(b, cp->container_id, cp->ifname, cp->k8s_namespace,
	    cp->k8s_name, cp->k8s_uid);
	msg_strlcpy(p->eni_id, cp->eni_id, sizeof(p->eni_id));
	if (cp->host_veth != NULL)
		msg_strlcpy(p->host_veth, cp->host_veth,
		    sizeof(p->host_veth));
	p->ip = cp->ip;
	p->ip6 = cp->ip6;
	p->since = cp->since;
	p->state = POD_READY;
	p->restored = true;
}

void
pods_eni_leaving(struct eni *e, const char *why)
{
	struct pod *p;

	TAILQ_FOREACH(p, &e->b->engine.pods, all)
		if (p->eni == e && p->ip.family != AF_INET)
			pod_lost(p, why);
}

void
pods_prefix6_gone(struct eni *e, const struct ip_addr *prefix6,
    const char *why)
{
	struct ip_prefix pfx = msg_prefix_of(prefix6);
	struct pod *p;
	int idx;

	TAILQ_FOREACH(p, &e->b->engine.pods, all) {
		if (p->eni != e || p->ip6.family != AF_INET6 ||
		    !ip_prefix_contains(&pfx, &p->ip6))
			continue;
		idx = pod_addr(p);
		pod_lost(p, why);
		/* Its IPv4 address leaves the pool with it, kept from any
		 * other pod until its DEL (pod_keeping_ip), as one the
		 * cloud took back is (eni_drop_addr). */
		if (idx >= 0)
			e->addrs[idx] = e->addrs[--e->naddrs];
	}
}

/*
 * e's next pod IPv6 address comes after ip6, if ip6 is of its /80: a
 * restored pod's, or one the kernel's rules recovered.  eni6_next's clock
 * floor keeps it past them too, unless the clock went back.
 */
static void
eni6_skip_past(struct eni *e, const struct ip_addr *ip6)
{
	struct ip_prefix pfx;
	uint64_t idx = 0;
	int i;

	if (e->prefix6.family != AF_INET6 || ip6->family != AF_INET6)
		return;
	pfx = msg_prefix_of(&e->prefix6);
	if (!ip_prefix_contains(&pfx, ip6))
		return;
	for (i = MSG_PREFIX6_LEN / 8; i < 16; i++)
		idx = idx << 8 | ip6->bytes[i];
	if (e->next6 <= idx)
		e->next6 = idx + 1;
}

/*
 * Restored pods find their addresses once their ENIs are ready again;
 * restored cooling addresses cool on.  Called after every ENI set-up and
 * after each reconciliation: a restored pod whose ENI the cloud no longer
 * has (after a full reconciliation) is lost.
 */
void
pods_bind_restored(struct broker *b)
{
	struct engine *en = &b->engine;
	struct pod *p;
	uint64_t now = now_ms();
	time_t wall = time(NULL);
	size_t i;

	TAILQ_FOREACH(p, &en->pods, all) {
		char why6[IP_ADDR_STR_LEN + 96];
		struct eni *e;
		int idx;

		if (!p->restored || p->eni != NULL || p->lost)
			continue;
		e = eni_find(b, p->eni_id);
		if (e == NULL || (e->state != ENI_READY &&
		    !eni_state_draining(e->state))) {
			if (en->phase == PHASE_RUNNING && (e == NULL ||
			    !eni_state_arriving(e->state)))
				pod_lost(p, "its ENI vanished while enid was "
				    "down");
			continue;
		}
		/* Whichever ENI's /80 holds it hands out none up to it: a
		 * lost pod keeps its address configured until its DEL. */
		for (i = 0; i < POOL_MAX_ENIS; i++)
			if (en->enis[i].used)
				eni6_skip_past(&en->enis[i], &p->ip6);
		/* An IPv6 address outside its ENI's /80 is routed by the
		 * cloud elsewhere or nowhere: no rules for it, as for an
		 * IPv4 address its ENI no longer has. */
		if (p->ip6.family == AF_INET6 &&
		    !eni6_pod_addr_ok(e, &p->ip6, why6, sizeof(why6))) {
			pod_lost(p, why6);
			continue;
		}
		if (p->ip.family != AF_INET) {
			/* IPv6 only (recovered from the kernel's rules): no
			 * slot of the ENI's to take; its /80 is the ENI's
			 * until the ENI goes. */
			p->eni = e;
			p->restored = false;
			log_info("pod %s/%s: restored at %s", p->container_id,
			    p->ifname, e->id);
			pod_rules_ensure(p);
			continue;
		}
		idx = eni_addr_index(e, ip_addr_in4(&p->ip));
		if (idx < 0 || e->addrs[idx].state == ADDR_ASSIGNED) {
			pod_lost(p, idx < 0 ? "the cloud no longer assigns its "
			    "address" : "its address is held twice");
			continue;
		}
		if (!addr_transition_ok(e->addrs[idx].state, ADDR_ASSIGNED)) {
			char why[64];

			snprintf(why, sizeof(why), "its address is %s, not free",
			    addr_state_name(e->addrs[idx].state));
			pod_lost(p, why);
			continue;
		}
		addr_set(e, (uint32_t)idx, ADDR_ASSIGNED);
		e->addrs[idx].pod = p;
		p->eni = e;
		p->restored = false;
		log_info("pod %s/%s: restored at %s", p->container_id,
		    p->ifname, e->id);
		pod_rules_ensure(p);
	}
	for (i = 0; i < en->restored.ncooling; i++) {
		struct ckpt_cooling *cc = &en->restored.cooling[i];
		struct eni *e = eni_find(b, cc->eni_id);
		int idx;

		if (cc->until == 0 || e == NULL ||
		    (idx = eni_addr_index(e, ip_addr_in4(&cc->ip))) < 0 ||
		    e->addrs[idx].state != ADDR_FREE)
			continue;
		/* It may be one an unassign was taking when enid stopped:
		 * the cloud is asked before it is used again, even if its
		 * time ran out while enid started.  Applied once (until 0). */
		addr_set(e, (uint32_t)idx, ADDR_UNCONFIRMED);
		e->addrs[idx].cool_until = now + (cc->until > wall ?
		    (uint64_t)(cc->until - wall) * 1000 : 0);
		cc->until = 0;
	}
	engine_kick(b);
}

