/*
 * Address helpers (see addr.h).  Parsers are strict: no leading zeros
 * games, no trailing text.
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

int
ip4_parse(const char *s, uint32_t *addr)
{
	struct in_addr in;

	/* inet_pton accepts only the four-part dotted decimal form. */
	if (inet_pton(AF_INET, s, &in) != 1)
		return -1;
	*addr = in.s_addr;
	return 0;
}

void
ip4_format(uint32_t addr, char buf[IP4_STR_LEN])
{
	const uint8_t *b = (const uint8_t *)&addr;	/* network order */
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

int
cidr4_parse(const char *s, uint32_t *addr, uint8_t *prefix)
{
	char buf[CIDR4_STR_LEN + 1];
	const char *slash = strchr(s, '/');
	char *end;
	long n;

	if (slash == NULL || (size_t)(slash - s) >= IP4_STR_LEN ||
	    strlen(slash + 1) == 0 || strlen(slash + 1) > 2)
		return -1;
	memcpy(buf, s, (size_t)(slash - s));
	buf[slash - s] = '\0';
	if (ip4_parse(buf, addr) == -1)
		return -1;
	/* digits only, and no leading zero ("/08"), as inet_pton wants of
	 * each octet: one text per value */
	if (slash[1] < '0' || slash[1] > '9' ||
	    (slash[1] == '0' && slash[2] != '\0'))
		return -1;
	n = strtol(slash + 1, &end, 10);
	if (*end != '\0' || n < 0 || n > 32)
		return -1;
	*prefix = (uint8_t)n;
	return 0;
}

void
cidr4_format(uint32_t addr, uint8_t prefix, char buf[CIDR4_STR_LEN])
{
	char ip[IP4_STR_LEN];
	size_t n;

	ip4_format(addr, ip);
	n = strlen(ip);
	memcpy(buf, ip, n);
	buf[n++] = '/';
	if (prefix >= 10)
		buf[n++] = (char)('0' + prefix / 10 % 10);
	buf[n++] = (char)('0' + prefix % 10);
	buf[n] = '\0';
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
	uint32_t m = prefix_mask(prefix);

	return (net & m) == (addr & m);
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
