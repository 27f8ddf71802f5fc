/*
 * EC2 requests and outcomes, pure: form-encoded bodies for the broker's
 * intents (checking every field sent), the checks a field of an answer
 * passes before it may reach the broker, and the mapping of the cloud's
 * error codes to outcome classes (doc/design.md, "enid-cloudd").
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "ec2.h"

#define FORM_MAX	(64 * 1024)

/* ---- field checks ---- */

bool
ec2_id_ok(const char *s, const char *prefix)
{
	size_t n = strlen(prefix), i;

	if (strncmp(s, prefix, n) != 0)
		return false;
	for (i = n; s[i] != '\0'; i++)
		if (!isascii((unsigned char)s[i]) ||
		    !isalnum((unsigned char)s[i]))
			return false;
	return i > n && i - n <= 40 && i < MSG_ID_LEN;
}

bool
ec2_instance_id_ok(const char *s)
{
	size_t i;

	if (strncmp(s, "i-", 2) != 0)
		return false;
	for (i = 2; s[i] != '\0'; i++)
		if (!isdigit((unsigned char)s[i]) &&
		    !(s[i] >= 'a' && s[i] <= 'f'))
			return false;
	return i >= 2 + 8 && i <= 2 + 17;
}

bool
ec2_name_ok(const char *s, size_t max)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if (!(islower((unsigned char)s[i]) ||
		    isdigit((unsigned char)s[i]) || s[i] == '.' || s[i] == '-'))
			return false;
	return i > 0 && i < max;
}

bool
ec2_code_ok(const char *s)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if (!isascii((unsigned char)s[i]) ||
		    !(isalnum((unsigned char)s[i]) || s[i] == '.'))
			return false;
	return i > 0 && i < MSG_CODE_LEN;
}

bool
ec2_request_id_ok(const char *s)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if (!isascii((unsigned char)s[i]) ||
		    !(isalnum((unsigned char)s[i]) || s[i] == '-'))
			return false;
	return i < MSG_ID_LEN;
}

bool
ec2_tag_text_ok(const char *s, size_t max)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return i < max;
}

void
ec2_sanitize(char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			*s = '?';
}

static const char *const eni_status_names[ENI_ST_MAX] = {
	[ENI_ST_UNKNOWN] = "unknown",
	[ENI_ST_AVAILABLE] = "available",
	[ENI_ST_IN_USE] = "in-use",
	[ENI_ST_ATTACHING] = "attaching",
	[ENI_ST_DETACHING] = "detaching",
};

enum cloud_eni_status
ec2_eni_status(const char *s)
{
	int i;

	for (i = 1; i < ENI_ST_MAX; i++)
		if (strcmp(s, eni_status_names[i]) == 0)
			return i;
	/* an attachment's words for the same states */
	if (strcmp(s, "attached") == 0)
		return ENI_ST_IN_USE;
	if (strcmp(s, "detached") == 0)
		return ENI_ST_AVAILABLE;
	return ENI_ST_UNKNOWN;
}

const char *
ec2_eni_status_name(enum cloud_eni_status st)
{
	return (unsigned)st < ENI_ST_MAX ? eni_status_names[st] : "unknown";
}

int
ec2_uint(const char *s, uint32_t max, uint32_t *out)
{
	uint64_t v = 0;
	size_t i;

	for (i = 0; s[i] != '\0'; i++) {
		if (!isdigit((unsigned char)s[i]) || i >= 10)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (i == 0 || v > max)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int
ec2_type_limits(const struct ec2_instance_type *t, uint32_t *max_enis,
    uint32_t *ips_per_eni)
{
	uint32_t enis, ips;

	if (ec2_uint(t->max_enis, EC2_TYPE_MAX_ENIS, &enis) == -1 ||
	    enis == 0 ||
	    ec2_uint(t->ipv4_per_eni, EC2_TYPE_MAX_ENI_ADDRS, &ips) == -1 ||
	    ips == 0)
		return -1;
	*max_enis = enis;
	*ips_per_eni = ips;
	return 0;
}

#define BAD(...)	do { snprintf(err, errlen, __VA_ARGS__); return -1; } \
			while (0)

int
ec2_ip4_parse(const char *s, struct ip_addr *out)
{
	if (ip_addr_parse(s, out, NULL) == -1 || out->family != AF_INET) {
		memset(out, 0, sizeof(*out));
		return -1;
	}
	return 0;
}

bool
ec2_prefix_ok(const struct ip_addr *first)
{
	struct ip_prefix p = msg_prefix_of(first);

	return first->family == AF_INET && ip_prefix_valid(&p) &&
	    ip_prefix_is_network(&p) && !ip_addr_is_unspecified(first);
}

int
ec2_prefix_parse(const char *s, struct ip_addr *out)
{
	struct ip_prefix p;

	if (ip_prefix_parse(s, &p, NULL) == -1 || p.len != MSG_PREFIX_LEN ||
	    !ec2_prefix_ok(&p.addr))
		return -1;
	*out = p.addr;
	return 0;
}

/* ---- IPv6 ---- */

bool
ec2_prefix6_holds_service(const struct ip_prefix *p)
{
	static const char *const services[] = {
		"fd00:ec2::254", "fd00:ec2::253", "fd00:ec2::123",
	};
	struct ip_addr a;
	size_t i;

	for (i = 0; i < sizeof(services) / sizeof(services[0]); i++)
		if (ip_addr_parse(services[i], &a, NULL) == 0 &&
		    ip_prefix_contains(p, &a))
			return true;
	return false;
}

/* Why a is not an IPv6 address a host may hold, or NULL. */
static const char *
ip6_unusable(const struct ip_addr *a)
{
	if (a->family != AF_INET6)
		return "not IPv6";
	if (ip_addr_is_unspecified(a))
		return "unspecified";
	if (ip_addr_is_loopback(a))
		return "loopback";
	if (ip_addr_is_link_local(a))
		return "link-local";
	if (ip_addr_is_multicast(a))
		return "multicast";
	if (ip_addr_is_ipv4_embedded(a))
		return "an IPv4-mapped or NAT64 address";
	if (ip_addr_is_reserved(a))
		return "reserved (::/8, IPv4-compatible among them)";
	if (ip_addr_is_special(a))
		return "special";
	if (ip_addr_ec2_service(a) != NULL)
		return "one of EC2's service addresses";
	return NULL;
}

#define WHY(text)	do { if (why != NULL) *why = (text); goto bad; } while (0)

int
ec2_ip6_parse(const char *s, struct ip_addr *out, const char **why)
{
	const char *w;

	if (ip_addr_parse(s, out, why) == -1)
		goto bad;
	if ((w = ip6_unusable(out)) != NULL)
		WHY(w);
	return 0;
bad:
	memset(out, 0, sizeof(*out));
	return -1;
}

int
ec2_cidr6_parse(const char *s, unsigned minlen, unsigned maxlen,
    struct ip_prefix *out, const char **why)
{
	const char *w;

	if (ip_prefix_parse(s, out, why) == -1)
		goto bad;
	if (out->addr.family != AF_INET6)
		WHY("not IPv6");
	if (out->len < minlen || out->len > maxlen)
		WHY("a prefix of another length");
	if (!ip_prefix_is_network(out))
		WHY("not aligned (host bits set)");
	if ((w = ip6_unusable(&out->addr)) != NULL)
		WHY(w);
	if (ec2_prefix6_holds_service(out))
		WHY("holds one of EC2's service addresses");
	return 0;
bad:
	memset(out, 0, sizeof(*out));
	return -1;
}

int
ec2_prefix6_parse(const char *s, struct ip_addr *out, const char **why)
{
	struct ip_prefix p;

	if (ec2_cidr6_parse(s, MSG_PREFIX6_LEN, MSG_PREFIX6_LEN, &p,
	    why) == -1) {
		memset(out, 0, sizeof(*out));
		return -1;
	}
	*out = p.addr;
	return 0;
}

#undef WHY

enum cloud_ipv6_state
ec2_ipv6_state(const char *s)
{
	unsigned int i;

	for (i = IPV6_ST_ASSOCIATED; i < IPV6_ST_MAX; i++)
		if (strcmp(s, cloud_ipv6_state_name(i)) == 0)
			return i;
	return IPV6_ST_MAX;
}

/* "true", "false" or absent (""): 1, 0, 0; -1 for anything else. */
static int
ec2_bool(const char *s)
{
	if (strcmp(s, "true") == 0)
		return 1;
	if (s[0] == '\0' || strcmp(s, "false") == 0)
		return 0;
	return -1;
}

int
ec2_type_ipv6(const struct ec2_instance_type *t, uint8_t *supported,
    uint32_t *per_eni)
{
	int b;

	if ((b = ec2_bool(t->ipv6_supported)) == -1)
		return -1;
	*per_eni = 0;
	if (t->ipv6_per_eni[0] != '\0' && ec2_uint(t->ipv6_per_eni,
	    EC2_TYPE_MAX_ENI_ADDRS, per_eni) == -1)
		return -1;
	*supported = (uint8_t)b;
	return 0;
}

int
ec2_subnet6_to_msg(const struct ec2_subnet *s, struct msg_cloud_subnet *m,
    char *err, size_t errlen, char *note, size_t notelen)
{
	enum cloud_ipv6_state st, last = IPV6_ST_NONE;
	struct ip_prefix p;
	const char *why;
	uint32_t i;
	int native;

	if (note != NULL && notelen > 0)
		note[0] = '\0';
	memset(&m->cidr6, 0, sizeof(m->cidr6));
	m->ipv6_state = IPV6_ST_NONE;
	if ((native = ec2_bool(s->ipv6_native)) == -1)
		BAD("%.64s: ipv6Native is neither true nor false", s->id);
	m->ipv6_native = (uint8_t)native;
	if (native && s->cidr[0] != '\0')
		BAD("%.64s: IPv6-only (ipv6Native), yet with the IPv4 block "
		    "\"%.32s\"", s->id, s->cidr);
	if (native)
		memset(&m->cidr, 0, sizeof(m->cidr));
	for (i = 0; i < s->ncidrs6; i++) {
		if ((st = ec2_ipv6_state(s->cidr6_states[i])) == IPV6_ST_MAX) {
			if (note != NULL && note[0] == '\0')
				snprintf(note, notelen, "ipv6CidrBlockState "
				    "\"%.32s\" of %.48s is no state enid knows",
				    s->cidr6_states[i], s->cidrs6[i]);
			continue;
		}
		if (st != IPV6_ST_ASSOCIATED) {
			if (m->ipv6_state != IPV6_ST_ASSOCIATED)
				last = st;
			continue;
		}
		if (m->ipv6_state == IPV6_ST_ASSOCIATED) {
			if (note != NULL && note[0] == '\0')
				snprintf(note, notelen, "a second associated "
				    "ipv6CidrBlock %.48s; the first stands",
				    s->cidrs6[i]);
			continue;
		}
		if (ec2_cidr6_parse(s->cidrs6[i], 64, 64, &p, &why) == -1) {
			if (note != NULL && note[0] == '\0')
				snprintf(note, notelen, "ipv6CidrBlock "
				    "\"%.48s\" left out: %s", s->cidrs6[i],
				    why != NULL ? why : "not an IPv6 /64");
			continue;
		}
		m->cidr6 = p;
		m->ipv6_state = IPV6_ST_ASSOCIATED;
	}
	if (m->ipv6_state != IPV6_ST_ASSOCIATED)
		m->ipv6_state = last;
	if (s->cidrs6_dropped > 0 && note != NULL && note[0] == '\0')
		snprintf(note, notelen, "%u IPv6 blocks past the %d read",
		    s->cidrs6_dropped, EC2_MAX_SUBNET_CIDRS6);
	return 0;
}

/* May prefix p (its first address, aligned) join m's: named once, and
 * holding no address of the ENI's own?  The broker takes a message that
 * breaks either for a broken helper's, and stops. */
static bool
eni_prefix_fits(const struct msg_cloud_eni *m, const struct ip_addr *first)
{
	struct ip_prefix p = msg_prefix_of(first);
	uint32_t i;

	if (ip_prefix_contains(&p, &m->primary_ip))
		return false;
	for (i = 0; i < m->naddrs; i++)
		if (ip_prefix_contains(&p, &m->addrs[i]))
			return false;
	for (i = 0; i < m->nprefixes; i++)
		if (ip_addr_eq(&m->prefixes[i], first))
			return false;
	return true;
}

/* Note the first entry left out of a kind. */
static void
left_out(char *dst, size_t size, const char **dstwhy, const char *text,
    const char *why)
{
	if (dst[0] != '\0')
		return;
	snprintf(dst, size, "%s", text[0] != '\0' ? text : "(empty)");
	*dstwhy = why != NULL ? why : "not usable";
}

/* An ENI's IPv6 addresses and /80s into m: the primary one first, none
 * twice, none in a /80 of the ENI's; what is left out is counted. */
static void
eni6_to_msg(const struct ec2_eni *e, struct msg_cloud_eni *m,
    struct ec2_left_out *lo)
{
	struct ip_addr a;
	struct ip_prefix p;
	const char *why;
	uint32_t i, j, pass;

	m->nbad_addrs6 = e->addrs6_dropped;
	/* pass 0: the one marked primary; pass 1: the others, in order */
	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < e->naddrs6; i++) {
			if (e->addr6_primary[i] != (pass == 0))
				continue;
			if (ec2_ip6_parse(e->addrs6[i], &a, &why) == -1) {
				m->nbad_addrs6++;
				left_out(lo->addr6, sizeof(lo->addr6),
				    &lo->addr6_why, e->addrs6[i], why);
				continue;
			}
			for (j = 0; j < m->naddrs6; j++)
				if (ip_addr_eq(&m->addrs6[j], &a))
					break;
			if (j < m->naddrs6) {
				m->nbad_addrs6++;
				left_out(lo->addr6, sizeof(lo->addr6),
				    &lo->addr6_why, e->addrs6[i],
				    "named twice");
				continue;
			}
			m->addrs6[m->naddrs6++] = a;
		}
	m->nbad_prefixes6 = e->prefixes6_dropped;
	for (i = 0; i < e->nprefixes6; i++) {
		if (ec2_prefix6_parse(e->prefixes6[i], &a, &why) == -1) {
			m->nbad_prefixes6++;
			left_out(lo->prefix6, sizeof(lo->prefix6),
			    &lo->prefix6_why, e->prefixes6[i], why);
			continue;
		}
		p = msg_prefix_of(&a);
		why = NULL;
		for (j = 0; j < m->nprefixes6 && why == NULL; j++)
			if (ip_addr_eq(&m->prefixes6[j], &a))
				why = "named twice";
		for (j = 0; j < m->naddrs6 && why == NULL; j++)
			if (ip_prefix_contains(&p, &m->addrs6[j]))
				why = "holds an IPv6 address of the ENI's";
		if (why != NULL) {
			m->nbad_prefixes6++;
			left_out(lo->prefix6, sizeof(lo->prefix6),
			    &lo->prefix6_why, e->prefixes6[i], why);
			continue;
		}
		m->prefixes6[m->nprefixes6++] = a;
	}
	if (m->nbad_addrs6 > MSG_MAX_LEFT_OUT)
		m->nbad_addrs6 = MSG_MAX_LEFT_OUT;
	if (m->nbad_prefixes6 > MSG_MAX_LEFT_OUT)
		m->nbad_prefixes6 = MSG_MAX_LEFT_OUT;
}

int
ec2_eni_to_msg(const struct ec2_eni *e, struct msg_cloud_eni *m, char *err,
    size_t errlen, char *bad, size_t badlen)
{
	struct ec2_left_out lo;
	int rc;

	rc = ec2_eni_to_msg_noting(e, m, err, errlen, &lo);
	if (bad != NULL && badlen > 0)
		snprintf(bad, badlen, "%s", lo.prefix);
	return rc;
}

int
ec2_eni_to_msg_noting(const struct ec2_eni *e, struct msg_cloud_eni *m,
    char *err, size_t errlen, struct ec2_left_out *lo)
{
	uint32_t i, v;
	int native;

	memset(m, 0, sizeof(*m));
	memset(lo, 0, sizeof(*lo));
	if (!ec2_id_ok(e->id, "eni-"))
		BAD("ENI with an invalid id \"%.64s\"", e->id);
	if (!ec2_id_ok(e->subnet_id, "subnet-"))
		BAD("%s: invalid subnet id \"%.64s\"", e->id, e->subnet_id);
	if (mac_parse(e->mac, m->mac) == -1)
		BAD("%s: invalid MAC address \"%.32s\"", e->id, e->mac);
	if ((native = ec2_bool(e->ipv6_native)) == -1)
		BAD("%s: ipv6Native is neither true nor false", e->id);
	m->ipv6_native = (uint8_t)native;
	/* An IPv6-only ENI has no IPv4 address at all: 0.0.0.0 for its
	 * primary, as for none. */
	if (native && (e->private_ip[0] != '\0' || e->naddrs > 0 ||
	    e->nprefixes > 0))
		BAD("%s: IPv6-only (ipv6Native), yet with IPv4 addresses",
		    e->id);
	if (native)
		m->primary_ip = ip_addr_from_in(0);
	else if (ec2_ip4_parse(e->private_ip, &m->primary_ip) == -1)
		BAD("%s: invalid primary address \"%.32s\"", e->id,
		    e->private_ip);
	msg_strlcpy(m->eni_id, e->id, sizeof(m->eni_id));
	msg_strlcpy(m->subnet_id, e->subnet_id, sizeof(m->subnet_id));
	m->status = ec2_eni_status(e->status);
	m->device_index = -1;
	if (e->attached) {
		if (e->attach_instance[0] != '\0' &&
		    !ec2_id_ok(e->attach_instance, "i-"))
			BAD("%s: invalid attached instance id \"%.64s\"",
			    e->id, e->attach_instance);
		if (e->attachment_id[0] != '\0' &&
		    !ec2_id_ok(e->attachment_id, "eni-attach-"))
			BAD("%s: invalid attachment id \"%.64s\"", e->id,
			    e->attachment_id);
		if (e->device_index[0] != '\0') {
			if (ec2_uint(e->device_index, 1024, &v) == -1)
				BAD("%s: invalid device index \"%.16s\"",
				    e->id, e->device_index);
			m->device_index = (int32_t)v;
		}
		msg_strlcpy(m->instance_id, e->attach_instance,
		    sizeof(m->instance_id));
		msg_strlcpy(m->attachment_id, e->attachment_id,
		    sizeof(m->attachment_id));
		m->attach_status = ec2_eni_status(e->attach_status);
		m->delete_on_termination = strcmp(e->dot, "true") == 0;
	}
	for (i = 0; i < e->naddrs; i++) {
		struct ip_addr a;

		if (ec2_ip4_parse(e->addrs[i], &a) == -1)
			BAD("%s: invalid address \"%.32s\"", e->id, e->addrs[i]);
		if (e->addr_primary[i] || ip_addr_eq(&a, &m->primary_ip))
			continue;
		if (m->naddrs == MSG_MAX_ENI_ADDRS)
			BAD("%s: too many addresses", e->id);
		m->addrs[m->naddrs++] = a;
	}
	for (i = 0; i < e->nprefixes; i++) {
		struct ip_addr a;

		if (m->naddrs + m->nprefixes + m->nbad_prefixes ==
		    MSG_MAX_ENI_ADDRS)
			BAD("%s: more addresses and prefixes than an ENI holds",
			    e->id);
		if (ec2_prefix_parse(e->prefixes[i], &a) == -1 ||
		    !eni_prefix_fits(m, &a)) {
			/* The cloud's to answer for; the ENI's other
			 * prefixes and addresses are still good. */
			if (m->nbad_prefixes++ == 0)
				snprintf(lo->prefix, sizeof(lo->prefix),
				    "%.31s", e->prefixes[i]);
			continue;
		}
		m->prefixes[m->nprefixes++] = a;
	}
	for (i = 0; i < e->ntags; i++) {
		if (!ec2_tag_text_ok(e->tags[i].key, MSG_TAG_KEY_LEN) ||
		    !ec2_tag_text_ok(e->tags[i].value, MSG_TAG_VAL_LEN))
			BAD("%s: tag with control characters", e->id);
		msg_strlcpy(m->tags[i].key, e->tags[i].key,
		    sizeof(m->tags[i].key));
		msg_strlcpy(m->tags[i].value, e->tags[i].value,
		    sizeof(m->tags[i].value));
	}
	m->ntags = e->ntags;
	eni6_to_msg(e, m, lo);
	return 0;
}

int
ec2_instances_mark(const struct msg_cloud_check_instances *m,
    const struct ec2_instance_state *list, uint32_t n, uint8_t *exists,
    uint8_t *named, char *err, size_t errlen)
{
	const struct ec2_instance_state *in;
	uint32_t i, j;
	bool asked, gone;

	for (j = 0; j < n; j++) {
		in = &list[j];
		if (in->id[0] == '\0')
			BAD("an instance without an id");
		if (in->state[0] == '\0')
			BAD("%.64s: no instance state", in->id);
		if (!ec2_name_ok(in->state, EC2_STATUS_LEN))
			BAD("%.64s: invalid instance state \"%.32s\"", in->id,
			    in->state);
		/*
		 * A terminated instance is listed for a while after it is
		 * gone; one shutting down is on its way there and its ENIs
		 * are never attached again.  Any other state, even one this
		 * code does not know, is an instance that still exists: its
		 * ENIs are kept, which at worst delays collecting them.
		 */
		gone = strcmp(in->state, "terminated") == 0 ||
		    strcmp(in->state, "shutting-down") == 0;
		asked = false;
		/* An id may be asked for twice: each copy gets the answer. */
		for (i = 0; i < m->nids; i++) {
			if (strcmp(in->id, m->ids[i]) != 0)
				continue;
			if (named[i])
				BAD("%.64s named twice", in->id);
			named[i] = 1;
			exists[i] = !gone;
			asked = true;
		}
		if (!asked)
			BAD("%.64s was not asked for", in->id);
	}
	return 0;
}

/* ---- request bodies ---- */

static void
form_put(struct ec2_form *f, const char *s, bool encode)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s != '\0' && !f->failed; s++) {
		unsigned char c = (unsigned char)*s;
		bool plain = !encode || isalnum(c) || c == '-' || c == '_' ||
		    c == '.' || c == '~';

		if (f->len + 4 > f->cap) {
			size_t cap = f->cap ? f->cap * 2 : 512;
			char *n;

			if (cap > FORM_MAX || (n = realloc(f->buf, cap)) == NULL) {
				f->failed = true;
				return;
			}
			f->buf = n;
			f->cap = cap;
		}
		if (plain && isascii(c)) {
			f->buf[f->len++] = (char)c;
		} else {
			f->buf[f->len++] = '%';
			f->buf[f->len++] = hex[c >> 4];
			f->buf[f->len++] = hex[c & 15];
		}
		f->buf[f->len] = '\0';
	}
}

void
ec2_form_add(struct ec2_form *f, const char *key, const char *value)
{
	if (f->len > 0)
		form_put(f, "&", false);
	form_put(f, key, true);
	form_put(f, "=", false);
	form_put(f, value, true);
}

void
ec2_form_addf(struct ec2_form *f, const char *value, const char *keyfmt, ...)
{
	char key[128];
	va_list ap;
	int n;

	va_start(ap, keyfmt);
	n = vsnprintf(key, sizeof(key), keyfmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(key)) {
		f->failed = true;
		return;
	}
	ec2_form_add(f, key, value);
}

void
ec2_form_init(struct ec2_form *f, enum ec2_action action)
{
	memset(f, 0, sizeof(*f));
	ec2_form_add(f, "Action", ec2_action_name(action));
	ec2_form_add(f, "Version", EC2_API_VERSION);
}

void
ec2_form_free(struct ec2_form *f)
{
	free(f->buf);
	memset(f, 0, sizeof(*f));
}

static int
form_done(struct ec2_form *f, char *err, size_t errlen)
{
	if (f->failed)
		BAD("request body over %d bytes or out of memory", FORM_MAX);
	return 0;
}

static int
check_tag(const struct msg_tag *t, char *err, size_t errlen)
{
	if (t->key[0] == '\0' || !ec2_tag_text_ok(t->key, MSG_TAG_KEY_LEN) ||
	    !ec2_tag_text_ok(t->value, MSG_TAG_VAL_LEN))
		BAD("tag key empty or with control characters");
	if (strncmp(t->key, "aws:", 4) == 0)
		BAD("tag key \"%.64s\" is reserved by the cloud", t->key);
	return 0;
}

int
ec2_req_create_eni(struct ec2_form *f, const struct msg_cloud_create_eni *m,
    char *err, size_t errlen)
{
	char num[16];
	uint32_t i;
	size_t n;

	if (!ec2_id_ok(m->subnet_id, "subnet-"))
		BAD("create-eni: invalid subnet id \"%.64s\"", m->subnet_id);
	if (m->nsgs == 0)
		BAD("create-eni: no security group");
	for (i = 0; i < m->nsgs; i++)
		if (!ec2_id_ok(m->sgs[i], "sg-"))
			BAD("create-eni: invalid security group \"%.64s\"",
			    m->sgs[i]);
	/* An ENI's secondary addresses: as many as enid holds on one, a
	 * type's larger figure notwithstanding (engine_start caps it). */
	if (m->nsecondary > MSG_MAX_ENI_ADDRS)
		BAD("create-eni: %u secondary addresses (at most %u)",
		    m->nsecondary, MSG_MAX_ENI_ADDRS);
	if (m->nprefixes > 49)
		BAD("create-eni: %u prefixes (at most 49)", m->nprefixes);
	if (m->nprefixes > 0 && m->nsecondary > 0)
		BAD("create-eni: both prefixes and secondary addresses (EC2 "
		    "takes one or the other)");
	if (m->nipv6 > 1)
		BAD("create-eni: %u IPv6 addresses (0 or 1)", m->nipv6);
	if (m->nipv6 > 0 && m->nprefixes > 0)
		BAD("create-eni: both prefixes and an IPv6 address (EC2 "
		    "refuses mixing them in a create)");
	n = strlen(m->client_token);
	if (n == 0 || !ec2_tag_text_ok(m->client_token, MSG_TOKEN_LEN))
		BAD("create-eni: client token empty or unprintable");
	for (i = 0; i < n; i++)
		if ((unsigned char)m->client_token[i] > 0x7e)
			BAD("create-eni: client token not ASCII");
	if (!ec2_tag_text_ok(m->description, MSG_ERR_LEN))
		BAD("create-eni: description with control characters");
	for (i = 0; i < m->ntags; i++)
		if (check_tag(&m->tags[i], err, errlen) == -1)
			return -1;

	ec2_form_init(f, EC2_CREATE_ENI);
	ec2_form_add(f, "SubnetId", m->subnet_id);
	for (i = 0; i < m->nsgs; i++)
		ec2_form_addf(f, m->sgs[i], "SecurityGroupId.%u", i + 1);
	if (m->nsecondary > 0) {
		snprintf(num, sizeof(num), "%u", m->nsecondary);
		ec2_form_add(f, "SecondaryPrivateIpAddressCount", num);
	}
	if (m->nprefixes > 0) {
		snprintf(num, sizeof(num), "%u", m->nprefixes);
		ec2_form_add(f, "Ipv4PrefixCount", num);
		f->prefixes = true;
	}
	/* None asked: no Ipv6AddressCount at all, so that the subnet's
	 * own auto-assignment stands, as before IPv6. */
	if (m->nipv6 > 0) {
		snprintf(num, sizeof(num), "%u", m->nipv6);
		ec2_form_add(f, "Ipv6AddressCount", num);
		f->ipv6 = true;
	}
	ec2_form_add(f, "ClientToken", m->client_token);
	if (m->description[0] != '\0')
		ec2_form_add(f, "Description", m->description);
	if (m->ntags > 0) {
		ec2_form_add(f, "TagSpecification.1.ResourceType",
		    "network-interface");
		for (i = 0; i < m->ntags; i++) {
			ec2_form_addf(f, m->tags[i].key,
			    "TagSpecification.1.Tag.%u.Key", i + 1);
			ec2_form_addf(f, m->tags[i].value,
			    "TagSpecification.1.Tag.%u.Value", i + 1);
		}
	}
	return form_done(f, err, errlen);
}

int
ec2_req_attach(struct ec2_form *f, const struct msg_cloud_attach *m,
    const char *instance_id, char *err, size_t errlen)
{
	char num[16];

	if (!ec2_id_ok(m->eni_id, "eni-"))
		BAD("attach: invalid ENI id \"%.64s\"", m->eni_id);
	if (!ec2_id_ok(instance_id, "i-"))
		BAD("attach: this instance's id is not known");
	if (m->device_index == 0 || m->device_index > 100)
		BAD("attach: device index %u out of 1-100", m->device_index);
	snprintf(num, sizeof(num), "%u", m->device_index);
	ec2_form_init(f, EC2_ATTACH_ENI);
	ec2_form_add(f, "NetworkInterfaceId", m->eni_id);
	ec2_form_add(f, "InstanceId", instance_id);
	ec2_form_add(f, "DeviceIndex", num);
	return form_done(f, err, errlen);
}

int
ec2_req_set_dot(struct ec2_form *f, const struct msg_cloud_set_dot *m,
    char *err, size_t errlen)
{
	if (!ec2_id_ok(m->eni_id, "eni-"))
		BAD("set-delete-on-termination: invalid ENI id \"%.64s\"",
		    m->eni_id);
	if (!ec2_id_ok(m->attachment_id, "eni-attach-"))
		BAD("set-delete-on-termination: invalid attachment id "
		    "\"%.64s\"", m->attachment_id);
	ec2_form_init(f, EC2_MODIFY_ENI_ATTR);
	ec2_form_add(f, "NetworkInterfaceId", m->eni_id);
	ec2_form_add(f, "Attachment.AttachmentId", m->attachment_id);
	ec2_form_add(f, "Attachment.DeleteOnTermination",
	    m->value ? "true" : "false");
	return form_done(f, err, errlen);
}

/* The IPv6 addresses of a request the broker sends: usable, none twice. */
static int
check_addrs6_req(const char *what, const struct ip_addr *a, uint32_t n,
    bool prefixes, char *err, size_t errlen)
{
	char text[IP_PREFIX_STR_LEN];
	struct ip_prefix p;
	uint32_t i, j;

	for (i = 0; i < n; i++) {
		p = msg_prefix_of(&a[i]);
		if (a[i].family != AF_INET6 || !ip_addr_valid(&a[i]) ||
		    ip6_unusable(&a[i]) != NULL ||
		    (prefixes && (!ip_prefix_is_network(&p) ||
		    ec2_prefix6_holds_service(&p))))
			BAD("%s: entry %u is not a usable IPv6 %s", what, i + 1,
			    prefixes ? "/80" : "address");
		for (j = 0; j < i; j++)
			if (ip_addr_eq(&a[j], &a[i])) {
				ip_addr_format(&a[i], text);
				BAD("%s: %s is listed twice", what, text);
			}
	}
	return 0;
}

/*
 * The address requests, by family and kind, each with its wire names
 * (REFERENCE.md): IPv4 addresses and /28s go to Assign/Unassign
 * PrivateIpAddresses, IPv6 addresses and /80s to Assign/Unassign
 * Ipv6Addresses.  One builder serves the four.
 */
static const struct addr_req {
	int		 family;
	bool		 prefixes;
	const char	*what[2];	/* unassign, assign: in errors */
	enum ec2_action	 action[2];
	const char	*count_key, *list_fmt;
	uint32_t	 max;		/* in one request */
} addr_reqs[] = {
	{ AF_INET, false, { "unassign-ips", "assign-ips" },
	  { EC2_UNASSIGN_IPS, EC2_ASSIGN_IPS },
	  "SecondaryPrivateIpAddressCount", "PrivateIpAddress.%u",
	  MSG_MAX_ENI_ADDRS },
	{ AF_INET6, false, { "unassign-ipv6", "assign-ipv6" },
	  { EC2_UNASSIGN_IPV6, EC2_ASSIGN_IPV6 },
	  "Ipv6AddressCount", "Ipv6Addresses.%u", MSG_MAX_ENI_ADDRS },
	/* EC2 takes at most 49 prefixes a call */
	{ AF_INET, true, { "unassign-prefixes", "assign-prefixes" },
	  { EC2_UNASSIGN_IPS, EC2_ASSIGN_IPS },
	  "Ipv4PrefixCount", "Ipv4Prefix.%u", 49 },
	{ AF_INET6, true, { "unassign-ipv6-prefixes", "assign-ipv6-prefixes" },
	  { EC2_UNASSIGN_IPV6, EC2_ASSIGN_IPV6 },
	  "Ipv6PrefixCount", "Ipv6Prefix.%u", 49 },
};

/* The IPv4 addresses or /28s of a request the broker sends: usable, and
 * (prefixes) aligned and none twice. */
static int
check_addrs4_req(const char *what, const struct ip_addr *a, uint32_t n,
    bool prefixes, char *err, size_t errlen)
{
	uint32_t i, j, in;

	for (i = 0; i < n; i++) {
		if (prefixes) {
			if (!ec2_prefix_ok(&a[i]))
				BAD("%s: a prefix in the list is not an aligned "
				    "/%d", what, MSG_PREFIX_LEN);
			for (j = 0; j < i; j++)
				if (ip_addr_eq(&a[j], &a[i]))
					BAD("%s: a prefix is listed twice",
					    what);
		} else if (ip_addr_to_in(&a[i], &in) == -1 || in == 0 ||
		    in == 0xffffffffu)
			BAD("%s: invalid address in the list", what);
	}
	return 0;
}

/* A count of new ones (assign, n 0) or those listed, never both; in the
 * list, family's addresses (prefixes: each /28 or /80 by its first). */
static int
req_addrs(struct ec2_form *f, bool assign, bool prefixes, uint32_t family,
    const char *eni_id, uint32_t count, const struct ip_addr *list,
    uint32_t n, char *err, size_t errlen)
{
	const struct addr_req *r = NULL;
	char text[IP_PREFIX_STR_LEN], num[16];
	const char *what;
	uint32_t i;

	for (i = 0; i < sizeof(addr_reqs) / sizeof(addr_reqs[0]); i++)
		if ((uint32_t)addr_reqs[i].family == family &&
		    addr_reqs[i].prefixes == prefixes)
			r = &addr_reqs[i];
	if (r == NULL)
		BAD("%s: address family %u is neither IPv4 nor IPv6",
		    prefixes ? (assign ? "assign-prefixes" :
		    "unassign-prefixes") : (assign ? "assign-ips" :
		    "unassign-ips"), family);
	what = r->what[assign];
	if (!ec2_id_ok(eni_id, "eni-"))
		BAD("%s: invalid ENI id \"%.64s\"", what, eni_id);
	if (!assign && n == 0)
		BAD("%s: no %s given", what, prefixes ? "prefix" : "address");
	if (assign && n == 0 && (count == 0 || count > r->max))
		BAD("%s: count %u out of 1-%u", what, count, r->max);
	if (n > r->max)
		BAD("%s: %u %s (at most %u)", what, n, prefixes ? "prefixes" :
		    "addresses", r->max);
	if (n > 0 && count > 0)
		BAD("%s: both a count and %s", what, prefixes ? "prefixes" :
		    "addresses");
	if ((family == AF_INET6 ? check_addrs6_req(what, list, n, prefixes,
	    err, errlen) : check_addrs4_req(what, list, n, prefixes, err,
	    errlen)) == -1)
		return -1;
	ec2_form_init(f, r->action[assign]);
	f->prefixes = prefixes;
	f->ipv6 = family == AF_INET6;
	ec2_form_add(f, "NetworkInterfaceId", eni_id);
	if (n == 0) {
		snprintf(num, sizeof(num), "%u", count);
		ec2_form_add(f, r->count_key, num);
	}
	for (i = 0; i < n; i++) {
		if (prefixes) {
			struct ip_prefix p = msg_prefix_of(&list[i]);

			ip_prefix_format(&p, text);
		} else
			ip_addr_format(&list[i], text);
		ec2_form_addf(f, text, r->list_fmt, i + 1);
	}
	return form_done(f, err, errlen);
}

int
ec2_req_ips(struct ec2_form *f, bool assign, const struct msg_cloud_ips *m,
    char *err, size_t errlen)
{
	return req_addrs(f, assign, false, m->family, m->eni_id, m->count,
	    m->addrs, m->naddrs, err, errlen);
}

int
ec2_req_prefixes(struct ec2_form *f, bool assign,
    const struct msg_cloud_prefixes *m, char *err, size_t errlen)
{
	return req_addrs(f, assign, true, m->family, m->eni_id, m->count,
	    m->prefixes, m->nprefixes, err, errlen);
}

int
ec2_req_detach(struct ec2_form *f, const struct msg_cloud_detach *m,
    char *err, size_t errlen)
{
	if (m->eni_id[0] != '\0' && !ec2_id_ok(m->eni_id, "eni-"))
		BAD("detach: invalid ENI id \"%.64s\"", m->eni_id);
	if (!ec2_id_ok(m->attachment_id, "eni-attach-"))
		BAD("detach: invalid attachment id \"%.64s\"",
		    m->attachment_id);
	ec2_form_init(f, EC2_DETACH_ENI);
	ec2_form_add(f, "AttachmentId", m->attachment_id);
	return form_done(f, err, errlen);
}

int
ec2_req_delete(struct ec2_form *f, const struct msg_cloud_delete *m,
    char *err, size_t errlen)
{
	if (!ec2_id_ok(m->eni_id, "eni-"))
		BAD("delete: invalid ENI id \"%.64s\"", m->eni_id);
	ec2_form_init(f, EC2_DELETE_ENI);
	ec2_form_add(f, "NetworkInterfaceId", m->eni_id);
	return form_done(f, err, errlen);
}

int
ec2_req_describe_enis(struct ec2_form *f,
    const struct msg_cloud_describe_enis *m, const char *own_instance,
    const char *next_token, char *err, size_t errlen)
{
	const char *iid = "";
	char name[MSG_TAG_KEY_LEN + 8], num[16];
	uint32_t i, nf = 0;

	if (m->filter == ENIS_BY_INSTANCE) {
		iid = m->instance_id[0] != '\0' ? m->instance_id : own_instance;
		if (!ec2_id_ok(iid, "i-"))
			BAD("describe-enis: invalid instance id \"%.64s\"", iid);
	} else {
		if (m->ntags == 0)
			BAD("describe-enis: by tags, but no tag given");
		for (i = 0; i < m->ntags; i++)
			if (check_tag(&m->tags[i], err, errlen) == -1)
				return -1;
	}
	ec2_form_init(f, EC2_DESCRIBE_ENIS);
	if (m->filter == ENIS_BY_INSTANCE) {
		nf++;
		ec2_form_addf(f, "attachment.instance-id", "Filter.%u.Name", nf);
		ec2_form_addf(f, iid, "Filter.%u.Value.1", nf);
	} else {
		for (i = 0; i < m->ntags; i++) {
			nf++;
			if (m->tags[i].value[0] == '\0') {
				ec2_form_addf(f, "tag-key", "Filter.%u.Name",
				    nf);
				ec2_form_addf(f, m->tags[i].key,
				    "Filter.%u.Value.1", nf);
			} else {
				snprintf(name, sizeof(name), "tag:%s",
				    m->tags[i].key);
				ec2_form_addf(f, name, "Filter.%u.Name", nf);
				ec2_form_addf(f, m->tags[i].value,
				    "Filter.%u.Value.1", nf);
			}
		}
	}
	if (m->status != ENI_ST_UNKNOWN) {
		nf++;
		ec2_form_addf(f, "status", "Filter.%u.Name", nf);
		ec2_form_addf(f, ec2_eni_status_name(m->status),
		    "Filter.%u.Value.1", nf);
	}
	snprintf(num, sizeof(num), "%d", EC2_PAGE_SIZE);
	ec2_form_add(f, "MaxResults", num);
	if (next_token != NULL && next_token[0] != '\0')
		ec2_form_add(f, "NextToken", next_token);
	return form_done(f, err, errlen);
}

int
ec2_req_describe_subnets(struct ec2_form *f,
    const struct msg_cloud_describe_subnets *m, const char *vpc_id,
    const char *next_token, char *err, size_t errlen)
{
	char num[16];
	uint32_t i;

	for (i = 0; i < m->nids; i++)
		if (!ec2_id_ok(m->ids[i], "subnet-"))
			BAD("describe-subnets: invalid subnet id \"%.64s\"",
			    m->ids[i]);
	if (m->nids == 0 && !ec2_id_ok(vpc_id, "vpc-"))
		BAD("describe-subnets: this instance's VPC is not known");
	ec2_form_init(f, EC2_DESCRIBE_SUBNETS);
	for (i = 0; i < m->nids; i++)
		ec2_form_addf(f, m->ids[i], "SubnetId.%u", i + 1);
	if (m->nids == 0) {
		ec2_form_add(f, "Filter.1.Name", "vpc-id");
		ec2_form_add(f, "Filter.1.Value.1", vpc_id);
		snprintf(num, sizeof(num), "%d", EC2_PAGE_SIZE);
		ec2_form_add(f, "MaxResults", num);
		if (next_token != NULL && next_token[0] != '\0')
			ec2_form_add(f, "NextToken", next_token);
	}
	return form_done(f, err, errlen);
}

int
ec2_req_check_instances(struct ec2_form *f,
    const struct msg_cloud_check_instances *m, const char *next_token,
    char *err, size_t errlen)
{
	char num[16];
	uint32_t i;

	if (m->nids == 0 || m->nids > MSG_MAX_INSTANCE_IDS)
		BAD("check-instances: %u instance ids (1 to %d)", m->nids,
		    MSG_MAX_INSTANCE_IDS);
	/* The ids may come from ENI tags, which whoever may tag wrote; a
	 * filter value takes wildcards ("i-*" would match every instance). */
	for (i = 0; i < m->nids; i++)
		if (!ec2_instance_id_ok(m->ids[i]))
			BAD("check-instances: id %u, \"%.64s\", is not an "
			    "instance id", i + 1, m->ids[i]);
	/*
	 * A filter, not InstanceId.N: with InstanceId.N one id that never
	 * existed fails the whole call (InvalidInstanceID.NotFound), and
	 * the answer would not say which.  A filter simply leaves it out.
	 */
	ec2_form_init(f, EC2_CHECK_INSTANCES);
	ec2_form_add(f, "Filter.1.Name", "instance-id");
	for (i = 0; i < m->nids; i++)
		ec2_form_addf(f, m->ids[i], "Filter.1.Value.%u", i + 1);
	snprintf(num, sizeof(num), "%d", EC2_CHECK_PAGE_SIZE);
	ec2_form_add(f, "MaxResults", num);
	if (next_token != NULL && next_token[0] != '\0')
		ec2_form_add(f, "NextToken", next_token);
	return form_done(f, err, errlen);
}

/* ---- outcomes ---- */

static bool
in_list(const char *code, const char *const *list)
{
	for (; *list != NULL; list++)
		if (strcmp(code, *list) == 0)
			return true;
	return false;
}

static bool
ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

enum cloud_outcome
ec2_classify(enum ec2_action action, bool prefixes, unsigned http_status,
    const char *code, const char *message, enum ec2_retry *retry)
{
	static const char *const throttles[] = {
		"RequestLimitExceeded", "Throttling", "ThrottlingException",
		"RequestThrottled", "SlowDown", "TooManyRequestsException",
		NULL,
	};
	static const char *const transients[] = {
		"InternalError", "InternalFailure", "Unavailable",
		"ServiceUnavailable", "RequestTimeout", NULL,
	};
	static const char *const limits[] = {
		"AttachmentLimitExceeded", "PrivateIpAddressLimitExceeded",
		"NetworkInterfaceLimitExceeded", NULL,
	};
	/* Credentials the cloud no longer takes: expired, or refused
	 * (role credentials revoked before they expire; IMDS has new
	 * ones). */
	static const char *const expired[] = {
		"RequestExpired", "ExpiredToken", "ExpiredTokenException",
		"AuthFailure", NULL,
	};
	static const char *const in_use[] = {
		"IncorrectState", "InvalidNetworkInterface.InUse",
		"InvalidAttachment.InUse", NULL,
	};

	*retry = EC2_RETRY_NO;
	if (in_list(code, throttles)) {
		*retry = EC2_RETRY_ALWAYS;
		return CO_THROTTLED;
	}
	if (in_list(code, transients) || http_status >= 500) {
		*retry = EC2_RETRY_IDEMPOTENT;
		return CO_TRANSIENT;
	}
	if (in_list(code, limits))
		return CO_LIMIT_EXCEEDED;
	/* No aligned /28 free, though addresses may be: fragmentation.  A
	 * request for prefixes refused for want of room ("There aren't
	 * sufficient free Ipv4 addresses or prefixes": fewer than 16 a
	 * prefix) is no-prefix too: whether single addresses are left is
	 * for the single-address request that follows to find out.  No
	 * free address at all is a full subnet whatever was asked. */
	if (strcmp(code, "InsufficientCidrBlocks") == 0)
		return CO_NO_PREFIX;
	if (strcmp(code, "InsufficientFreeAddressesInSubnet") == 0)
		return CO_SUBNET_FULL;
	if (strcmp(code, "InvalidParameterValue") == 0 &&
	    strcasestr(message, "sufficient free") != NULL)
		return prefixes ? CO_NO_PREFIX : CO_SUBNET_FULL;
	if (ends_with(code, ".NotFound")) {
		/* Deleting what is already gone is what was asked for. */
		if (action == EC2_DELETE_ENI &&
		    strcmp(code, "InvalidNetworkInterfaceID.NotFound") == 0)
			return CO_OK;
		return CO_NOT_FOUND;
	}
	if (in_list(code, in_use) || strcasestr(message, "in use") != NULL)
		return CO_IN_USE;
	if (in_list(code, expired)) {
		*retry = EC2_RETRY_REAUTH;
		return CO_FATAL;
	}
	return CO_FATAL;
}

enum cloud_outcome
ec2_classify_ipv6(enum ec2_action action, bool prefixes, unsigned http_status,
    const char *code, const char *message, enum ec2_retry *retry, bool *known)
{
	/* The codes ec2_classify sorts by name.  Its other tests (any 5xx
	 * transient, "in use" or "sufficient free" in a message) guess
	 * from what EC2 says of IPv4; for IPv6 they are not trusted. */
	static const char *const codes[] = {
		"RequestLimitExceeded", "Throttling", "ThrottlingException",
		"RequestThrottled", "SlowDown", "TooManyRequestsException",
		"InternalError", "InternalFailure", "Unavailable",
		"ServiceUnavailable", "RequestTimeout",
		"AttachmentLimitExceeded", "PrivateIpAddressLimitExceeded",
		"NetworkInterfaceLimitExceeded", "InsufficientCidrBlocks",
		"InsufficientFreeAddressesInSubnet", "IncorrectState",
		"InvalidNetworkInterface.InUse", "InvalidAttachment.InUse",
		"RequestExpired", "ExpiredToken", "ExpiredTokenException",
		"AuthFailure", "UnauthorizedOperation",
		"InvalidParameterValue", "InvalidParameterCombination",
		"MissingParameter", NULL,
	};
	enum cloud_outcome o;

	*known = in_list(code, codes) || ends_with(code, ".NotFound");
	if (!*known) {
		*retry = EC2_RETRY_NO;
		return CO_FATAL;
	}
	o = ec2_classify(action, prefixes, http_status, code, "", retry);
	(void)message;
	return o;
}
