/*
 * Address helpers (see addr.h).  Parsers are strict: one text per value
 * (no leading zeros, IPv6 only in RFC 5952's form), no trailing text.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
mac_parse(const char *s, uint8_t mac[6])
{
	int i;

	if (strlen(s) != 17)
		return -1;
	for (i = 0; i < 6; i++) {
		int hi = hexval(s[i * 3]), lo = hexval(s[i * 3 + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		if (i < 5 && s[i * 3 + 2] != ':')
			return -1;
		mac[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

void
mac_format(const uint8_t mac[6], char buf[MAC_STR_LEN])
{
	static const char hex[] = "0123456789abcdef";
	int i;

	/* By hand: the broker formats one per ADD answer. */
	for (i = 0; i < 6; i++) {
		buf[3 * i] = hex[mac[i] >> 4];
		buf[3 * i + 1] = hex[mac[i] & 0xf];
		buf[3 * i + 2] = i < 5 ? ':' : '\0';
	}
}

bool
mac_is_zero(const uint8_t mac[6])
{
	static const uint8_t zero[6];

	return memcmp(mac, zero, 6) == 0;
}

unsigned int
ip_family_bits(int family)
{
	return family == AF_INET ? 32 : family == AF_INET6 ? 128 : 0;
}

const char *
ip_family_name(int family)
{
	return family == AF_INET ? "IPv4" : family == AF_INET6 ? "IPv6" :
	    "an unknown family";
}

static bool
all_zero(const uint8_t *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i] != 0)
			return false;
	return true;
}

/* ::ffff:0:0/96 */
static bool
v4_mapped(const uint8_t b[16])
{
	return all_zero(b, 10) && b[10] == 0xff && b[11] == 0xff;
}

const char *
ip_addr_check(const struct ip_addr *a)
{
	if (a->family != AF_INET && a->family != AF_INET6)
		return "address of an unknown family";
	if (!all_zero(a->pad, sizeof(a->pad)))
		return "address padding not zero";
	if (a->family == AF_INET && !all_zero(a->bytes + 4, 12))
		return "IPv4 address with bytes past its fourth";
	if (a->family == AF_INET6 && v4_mapped(a->bytes))
		return "IPv4-mapped IPv6 address (its form is the IPv4 one)";
	return NULL;
}

bool
ip_addr_valid(const struct ip_addr *a)
{
	return ip_addr_check(a) == NULL;
}

/* RFC 5952 section 4: the longest run of two or more zero groups becomes
 * "::", the first of equal runs; hex in lower case without leading
 * zeros; no dotted quad at the end (which inet_ntop(3) may write). */
static void
format6(const uint8_t b[16], char buf[IP_ADDR_STR_LEN])
{
	static const char hex[] = "0123456789abcdef";
	int best = -1, bestlen = 1, run = 0, i, shift;
	size_t n = 0;

	for (i = 0; i < 8; i++) {
		if (b[2 * i] == 0 && b[2 * i + 1] == 0) {
			if (++run > bestlen) {
				bestlen = run;
				best = i - run + 1;
			}
		} else
			run = 0;
	}
	for (i = 0; i < 8; i++) {
		unsigned int g = (unsigned int)b[2 * i] << 8 | b[2 * i + 1];
		bool started = false;

		if (i == best) {
			buf[n++] = ':';
			if (i == 0)
				buf[n++] = ':';
			i += bestlen - 1;
			continue;
		}
		for (shift = 12; shift >= 0; shift -= 4) {
			unsigned int d = g >> shift & 0xf;

			if (d != 0 || started || shift == 0) {
				buf[n++] = hex[d];
				started = true;
			}
		}
		if (i < 7)
			buf[n++] = ':';
	}
	buf[n] = '\0';
}

/* buf: IP4_STR_LEN bytes at least. */
static void
format4(const uint8_t b[4], char *buf)
{
	size_t n = 0;
	int i;

	/* By hand, as inet_ntop prints it: the broker formats several per
	 * ADD (its answer, its log line). */
	for (i = 0; i < 4; i++) {
		if (b[i] >= 100)
			buf[n++] = (char)('0' + b[i] / 100);
		if (b[i] >= 10)
			buf[n++] = (char)('0' + b[i] / 10 % 10);
		buf[n++] = (char)('0' + b[i] % 10);
		buf[n++] = i < 3 ? '.' : '\0';
	}
}

void
ip_addr_format(const struct ip_addr *a, char buf[IP_ADDR_STR_LEN])
{
	if (!ip_addr_valid(a))
		memcpy(buf, "invalid", sizeof("invalid"));
	else if (a->family == AF_INET)
		format4(a->bytes, buf);
	else
		format6(a->bytes, buf);
}

int
ip_addr_parse(const char *s, struct ip_addr *a, const char **why)
{
	char canon[IP_ADDR_STR_LEN];
	const char *dummy;

	if (why == NULL)
		why = &dummy;
	memset(a, 0, sizeof(*a));
	if (*s == '\0') {
		*why = "empty address";
		return -1;
	}
	if (strchr(s, '%') != NULL) {
		*why = "address with a zone id";
		return -1;
	}
	if (strchr(s, ':') == NULL) {
		/* inet_pton takes only four decimal octets, each without a
		 * leading zero: one text per value already. */
		if (inet_pton(AF_INET, s, a->bytes) != 1) {
			*why = "not an IPv4 address (four decimal octets "
			    "0-255 without leading zeros)";
			return -1;
		}
		a->family = AF_INET;
		return 0;
	}
	if (strchr(s, '.') != NULL) {
		*why = "IPv6 address with a dotted quad (write it in hex)";
		return -1;
	}
	if (strlen(s) >= IP_ADDR_STR_LEN ||
	    inet_pton(AF_INET6, s, a->bytes) != 1) {
		*why = "not an IPv6 address";
		memset(a, 0, sizeof(*a));
		return -1;
	}
	if (v4_mapped(a->bytes)) {
		*why = "IPv4-mapped IPv6 address (write the IPv4 address)";
		memset(a, 0, sizeof(*a));
		return -1;
	}
	format6(a->bytes, canon);
	if (strcmp(canon, s) != 0) {
		*why = "IPv6 address not in RFC 5952 form (lower case, no "
		    "leading zeros, the longest run of zero groups as ::)";
		memset(a, 0, sizeof(*a));
		return -1;
	}
	a->family = AF_INET6;
	return 0;
}

int
ip_addr_cmp(const struct ip_addr *a, const struct ip_addr *b)
{
	if (a->family != b->family)
		return a->family < b->family ? -1 : 1;
	return memcmp(a->bytes, b->bytes, sizeof(a->bytes));
}

bool
ip_addr_eq(const struct ip_addr *a, const struct ip_addr *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

struct ip_addr
ip_addr_from_in(uint32_t in)
{
	struct ip_addr a;

	memset(&a, 0, sizeof(a));
	a.family = AF_INET;
	memcpy(a.bytes, &in, 4);
	return a;
}

int
ip_addr_to_in(const struct ip_addr *a, uint32_t *in)
{
	if (a->family != AF_INET)
		return -1;
	memcpy(in, a->bytes, 4);
	return 0;
}

uint32_t
ip_addr_in4(const struct ip_addr *a)
{
	uint32_t in;

	return ip_addr_to_in(a, &in) == 0 ? in : 0;
}

void
ip_addrs_in4(const struct ip_addr *a, size_t n, uint32_t *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		out[i] = ip_addr_in4(&a[i]);
}

int
ip_addr_from_bytes(struct ip_addr *a, int family, const void *bytes,
    size_t len)
{
	unsigned int bits = ip_family_bits(family);

	memset(a, 0, sizeof(*a));
	if (bits == 0 || len != bits / 8)
		return -1;
	if (family == AF_INET6 && v4_mapped(bytes))
		return -1;
	a->family = (uint8_t)family;
	memcpy(a->bytes, bytes, len);
	return 0;
}

bool
ip_addr_is_unspecified(const struct ip_addr *a)
{
	return (a->family == AF_INET || a->family == AF_INET6) &&
	    all_zero(a->bytes, 16);
}

bool
ip_addr_is_loopback(const struct ip_addr *a)
{
	if (a->family == AF_INET)
		return a->bytes[0] == 127;
	return a->family == AF_INET6 && all_zero(a->bytes, 15) &&
	    a->bytes[15] == 1;
}

bool
ip_addr_is_link_local(const struct ip_addr *a)
{
	if (a->family == AF_INET)
		return a->bytes[0] == 169 && a->bytes[1] == 254;
	return a->family == AF_INET6 && a->bytes[0] == 0xfe &&
	    (a->bytes[1] & 0xc0) == 0x80;
}

bool
ip_addr_is_multicast(const struct ip_addr *a)
{
	if (a->family == AF_INET)
		return (a->bytes[0] & 0xf0) == 0xe0;
	return a->family == AF_INET6 && a->bytes[0] == 0xff;
}

bool
ip_addr_is_reserved(const struct ip_addr *a)
{
	if (a->family == AF_INET)
		return a->bytes[0] == 0 || (a->bytes[0] & 0xf0) == 0xf0;
	return a->family == AF_INET6 && a->bytes[0] == 0;
}

bool
ip_addr_is_ipv4_embedded(const struct ip_addr *a)
{
	static const uint8_t nat64[12] = { 0x00, 0x64, 0xff, 0x9b };
	static const uint8_t nat64_local[6] = { 0x00, 0x64, 0xff, 0x9b,
	    0x00, 0x01 };

	if (a->family != AF_INET6)
		return false;
	return v4_mapped(a->bytes) || memcmp(a->bytes, nat64, 12) == 0 ||
	    memcmp(a->bytes, nat64_local, 6) == 0;
}

bool
ip_addr_is_special(const struct ip_addr *a)
{
	return ip_addr_is_unspecified(a) || ip_addr_is_loopback(a) ||
	    ip_addr_is_link_local(a) || ip_addr_is_multicast(a) ||
	    ip_addr_is_reserved(a) || ip_addr_is_ipv4_embedded(a);
}

const char *
ip_addr_ec2_service(const struct ip_addr *a)
{
	/* fd00:ec2::254, ::253 and ::123: only the last two bytes differ */
	static const uint8_t base[14] = { 0xfd, 0x00, 0x0e, 0xc2 };
	uint16_t last;

	if (a->family != AF_INET6 || memcmp(a->bytes, base, 14) != 0)
		return NULL;
	last = (uint16_t)(a->bytes[14] << 8 | a->bytes[15]);
	switch (last) {
	case 0x254:
		return "EC2's instance metadata service";
	case 0x253:
		return "EC2's DNS server";
	case 0x123:
		return "EC2's time service";
	}
	return NULL;
}

const char *
ip_prefix_check(const struct ip_prefix *p)
{
	const char *why;

	if ((why = ip_addr_check(&p->addr)) != NULL)
		return why;
	if (!all_zero(p->pad, sizeof(p->pad)))
		return "prefix padding not zero";
	if (p->len > ip_family_bits(p->addr.family))
		return p->addr.family == AF_INET ? "IPv4 prefix longer than 32" :
		    "IPv6 prefix longer than 128";
	return NULL;
}

bool
ip_prefix_valid(const struct ip_prefix *p)
{
	return ip_prefix_check(p) == NULL;
}

int
ip_prefix_parse(const char *s, struct ip_prefix *p, const char **why)
{
	char buf[IP_ADDR_STR_LEN];
	const char *slash = strchr(s, '/'), *dummy, *d;
	unsigned int n = 0;

	if (why == NULL)
		why = &dummy;
	memset(p, 0, sizeof(*p));
	if (slash == NULL) {
		*why = "prefix without a length (ADDR/LEN)";
		return -1;
	}
	if ((size_t)(slash - s) >= sizeof(buf)) {
		*why = "prefix address too long";
		return -1;
	}
	memcpy(buf, s, (size_t)(slash - s));
	buf[slash - s] = '\0';
	if (ip_addr_parse(buf, &p->addr, why) == -1)
		return -1;
	/* digits only, no leading zero ("/08"), at most three: one text
	 * per value, as for the address */
	for (d = slash + 1; *d >= '0' && *d <= '9' && d - slash <= 3; d++)
		n = n * 10 + (unsigned int)(*d - '0');
	if (d == slash + 1 || *d != '\0' || (slash[1] == '0' && d - slash > 2)) {
		*why = "prefix length not a decimal number without leading "
		    "zeros";
		memset(p, 0, sizeof(*p));
		return -1;
	}
	if (n > ip_family_bits(p->addr.family)) {
		*why = p->addr.family == AF_INET ? "IPv4 prefix longer than 32" :
		    "IPv6 prefix longer than 128";
		memset(p, 0, sizeof(*p));
		return -1;
	}
	p->len = (uint8_t)n;
	return 0;
}

/* buf: IP_PREFIX_STR_LEN bytes, or CIDR4_STR_LEN for a valid IPv4 p. */
static void
prefix_format(const struct ip_prefix *p, char *buf)
{
	size_t n;

	if (!ip_prefix_valid(p)) {
		memcpy(buf, "invalid", sizeof("invalid"));
		return;
	}
	if (p->addr.family == AF_INET)
		format4(p->addr.bytes, buf);
	else
		format6(p->addr.bytes, buf);
	n = strlen(buf);
	buf[n++] = '/';
	if (p->len >= 100)
		buf[n++] = (char)('0' + p->len / 100);
	if (p->len >= 10)
		buf[n++] = (char)('0' + p->len / 10 % 10);
	buf[n++] = (char)('0' + p->len % 10);
	buf[n] = '\0';
}

void
ip_prefix_format(const struct ip_prefix *p, char buf[IP_PREFIX_STR_LEN])
{
	prefix_format(p, buf);
}

struct ip_addr
ip_addr_masked(const struct ip_addr *a, unsigned int len)
{
	struct ip_addr m = *a;
	unsigned int bytes = ip_family_bits(a->family) / 8, i;

	for (i = 0; i < bytes; i++) {
		if (len >= 8 * (i + 1))
			continue;
		m.bytes[i] &= len <= 8 * i ? 0 :
		    (uint8_t)(0xff00u >> (len - 8 * i));
	}
	return m;
}

bool
ip_prefix_is_network(const struct ip_prefix *p)
{
	struct ip_addr m = ip_addr_masked(&p->addr, p->len);

	return ip_addr_eq(&m, &p->addr);
}

struct ip_prefix
ip_prefix_network(const struct ip_prefix *p)
{
	struct ip_prefix n = *p;

	n.addr = ip_addr_masked(&p->addr, p->len);
	return n;
}

/* The first len bits of a and b agree. */
static bool
same_bits(const uint8_t *a, const uint8_t *b, unsigned int len)
{
	unsigned int whole = len / 8, rest = len % 8;

	if (memcmp(a, b, whole) != 0)
		return false;
	if (rest == 0)
		return true;
	return ((a[whole] ^ b[whole]) & (uint8_t)(0xff00u >> rest)) == 0;
}

bool
ip_prefix_contains(const struct ip_prefix *p, const struct ip_addr *a)
{
	if (a->family != p->addr.family ||
	    p->len > ip_family_bits(p->addr.family))
		return false;
	return same_bits(p->addr.bytes, a->bytes, p->len);
}

bool
ip_prefix_overlaps(const struct ip_prefix *a, const struct ip_prefix *b)
{
	unsigned int len = a->len < b->len ? a->len : b->len;

	if (a->addr.family != b->addr.family ||
	    len > ip_family_bits(a->addr.family))
		return false;
	return same_bits(a->addr.bytes, b->addr.bytes, len);
}

bool
ip_prefix_eq(const struct ip_prefix *a, const struct ip_prefix *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

/* ---- the 32-bit edge, through the functions above ---- */

int
ip4_parse(const char *s, uint32_t *addr)
{
	struct ip_addr a;

	if (ip_addr_parse(s, &a, NULL) == -1)
		return -1;
	return ip_addr_to_in(&a, addr);
}

void
ip4_format(uint32_t addr, char buf[IP4_STR_LEN])
{
	struct ip_addr a = ip_addr_from_in(addr);

	format4(a.bytes, buf);
}

int
cidr4_parse(const char *s, uint32_t *addr, uint8_t *prefix)
{
	struct ip_prefix p;

	if (ip_prefix_parse(s, &p, NULL) == -1 ||
	    ip_addr_to_in(&p.addr, addr) == -1)
		return -1;
	*prefix = p.len;
	return 0;
}

void
cidr4_format(uint32_t addr, uint8_t prefix, char buf[CIDR4_STR_LEN])
{
	struct ip_prefix p;

	memset(&p, 0, sizeof(p));
	p.addr = ip_addr_from_in(addr);
	p.len = prefix > 32 ? 32 : prefix;
	prefix_format(&p, buf);
}

uint32_t
prefix_mask(uint8_t prefix)
{
	if (prefix == 0)
		return 0;
	if (prefix >= 32)
		return 0xffffffffu;
	return htonl(0xffffffffu << (32 - prefix));
}

bool
cidr4_contains(uint32_t net, uint8_t prefix, uint32_t addr)
{
	struct ip_prefix p;
	struct ip_addr a = ip_addr_from_in(addr);

	memset(&p, 0, sizeof(p));
	p.addr = ip_addr_from_in(net);
	p.len = prefix > 32 ? 32 : prefix;
	return ip_prefix_contains(&p, &a);
}

bool
veth_name_ok(const char *s)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if (i >= VETH_NAME_MAX ||
		    !((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')))
			return false;
	return i > 0;
}
