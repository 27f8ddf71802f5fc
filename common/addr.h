/*
 * Address helpers: MACs, addresses and prefixes of either family, to and
 * from text, compared and classified.  Pure.
 */
#ifndef ENID_ADDR_H
#define ENID_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>	/* AF_INET, AF_INET6 */

#define MAC_STR_LEN	18	/* "02:5a:96:2b:9b:a2" + NUL */
/* "aa:bb:cc:dd:ee:ff" (case-insensitive) -> 6 bytes.  0 or -1. */
int	mac_parse(const char *s, uint8_t mac[6]);
void	mac_format(const uint8_t mac[6], char buf[MAC_STR_LEN]);
bool	mac_is_zero(const uint8_t mac[6]);

/*
 * One address type for both families, as bgpd's bgpd_addr is: a family
 * beside 16 bytes.  Fixed size and made of bytes only, so it has no hole
 * and no alignment of its own and goes into a message or a record as it
 * is.  One canonical form, so that memcmp(3) tells equal addresses:
 *   family	AF_INET or AF_INET6 (AF_UNSPEC, 0, only in a value never set)
 *   pad	zero
 *   bytes	IPv4: the address in bytes[0..3] (network order), the rest
 *		zero; IPv6: all 16, never an IPv4-mapped address
 *		(::ffff:0:0/96), whose canonical form is the IPv4 one.
 * ip_addr_valid() checks exactly this; everything below makes only
 * canonical values.
 */
struct ip_addr {
	uint8_t		family;
	uint8_t		pad[3];
	uint8_t		bytes[16];
};

/*
 * A prefix: an address and a length (0..32, 0..128).  The address may
 * have host bits set (an ENI's address with its subnet's length);
 * ip_prefix_is_network() tells a network's.
 */
struct ip_prefix {
	struct ip_addr	addr;
	uint8_t		len;
	uint8_t		pad[3];
};

_Static_assert(sizeof(struct ip_addr) == 20, "struct ip_addr has holes");
_Static_assert(sizeof(struct ip_prefix) == 24, "struct ip_prefix has holes");

/* The longest texts and their NUL: "ffff:...:ffff" is 39, "/128" 4 more. */
#define IP_ADDR_STR_LEN		40
#define IP_PREFIX_STR_LEN	44

/* 32 or 128 bits; 0 for a family that is neither. */
unsigned int	ip_family_bits(int family);
/* "IPv4", "IPv6", or "an unknown family". */
const char	*ip_family_name(int family);

/* Canonical, as above: NULL, or why not. */
const char	*ip_addr_check(const struct ip_addr *a);
bool		 ip_addr_valid(const struct ip_addr *a);

/*
 * Text to address, one text per value: IPv4 as four decimal octets
 * without leading zeros (inet_pton(3)'s form); IPv6 in RFC 5952's form
 * only (lower case, no leading zeros, the longest run of two or more
 * zero groups compressed, the first of equal runs), without an embedded
 * dotted quad, zone id or brackets.  Nothing before or after.  0, or -1
 * with *why (if why is not NULL) saying what is wrong.
 */
int		 ip_addr_parse(const char *s, struct ip_addr *a,
		    const char **why);
/* RFC 5952 for IPv6, dotted decimal for IPv4; "invalid" if not valid. */
void		 ip_addr_format(const struct ip_addr *a,
		    char buf[IP_ADDR_STR_LEN]);

/* Family first (IPv4 before IPv6), then the bytes: a total order. */
int		 ip_addr_cmp(const struct ip_addr *a, const struct ip_addr *b);
bool		 ip_addr_eq(const struct ip_addr *a, const struct ip_addr *b);

/*
 * The edges where a 32-bit IPv4 address (network order) is still held:
 * the broker's pool, the kernel's and the cloud's IPv4-only fields.
 * ip_addr_to_in() is 0 and *in untouched unless a is IPv4.
 */
struct ip_addr	 ip_addr_from_in(uint32_t in);
int		 ip_addr_to_in(const struct ip_addr *a, uint32_t *in);
/* a's IPv4 address, or 0 (0.0.0.0) if a is not IPv4: for a holder of 32
 * bits that takes 0.0.0.0 for none, or refuses it. */
uint32_t	 ip_addr_in4(const struct ip_addr *a);
/* The same for n of them, into out[n]. */
void		 ip_addrs_in4(const struct ip_addr *a, size_t n,
		    uint32_t *out);
/* From the kernel's or a socket's bytes (4 or 16 of them by family):
 * 0, or -1 for another family, a length that does not match it or an
 * IPv4-mapped IPv6 address. */
int		 ip_addr_from_bytes(struct ip_addr *a, int family,
		    const void *bytes, size_t len);

/*
 * What an address is, for policy: each for either family.
 *   unspecified	0.0.0.0, ::
 *   loopback		127/8, ::1
 *   link-local		169.254/16, fe80::/10
 *   multicast		224/4, ff00::/8
 *   reserved		IPv4's "this network" 0/8 and 240/4 (broadcast
 *			among them); IPv6's ::/8 (unspecified, loopback
 *			and the deprecated IPv4-compatible forms)
 *   IPv4-embedded	IPv6 only: an address that stands for an IPv4
 *			one elsewhere, IPv4-mapped ::ffff:0:0/96 (never
 *			canonical, but bytes may say it) and NAT64's
 *			64:ff9b::/96 (RFC 6052) and 64:ff9b:1::/48
 *			(RFC 8215): a host holding one would take
 *			traffic meant for a translator
 * ip_addr_is_special() is any of them: what a host's own unicast
 * address (a pod's, an ENI's) must never be.
 */
bool		 ip_addr_is_unspecified(const struct ip_addr *a);
bool		 ip_addr_is_loopback(const struct ip_addr *a);
bool		 ip_addr_is_link_local(const struct ip_addr *a);
bool		 ip_addr_is_multicast(const struct ip_addr *a);
bool		 ip_addr_is_reserved(const struct ip_addr *a);
bool		 ip_addr_is_ipv4_embedded(const struct ip_addr *a);
bool		 ip_addr_is_special(const struct ip_addr *a);
/* One of EC2's IPv6 service addresses on Nitro (REFERENCE.md): IMDS
 * fd00:ec2::254, DNS fd00:ec2::253, NTP fd00:ec2::123, never an ENI's
 * or a pod's.  Its name, or NULL for any other address. */
const char	*ip_addr_ec2_service(const struct ip_addr *a);

/* Canonical address and a length within its family's bits. */
const char	*ip_prefix_check(const struct ip_prefix *p);
bool		 ip_prefix_valid(const struct ip_prefix *p);
/* "ADDR/LEN": the address as ip_addr_parse() takes it, the length in
 * decimal without a leading zero.  Host bits may be set. */
int		 ip_prefix_parse(const char *s, struct ip_prefix *p,
		    const char **why);
void		 ip_prefix_format(const struct ip_prefix *p,
		    char buf[IP_PREFIX_STR_LEN]);
/* a with every bit past len cleared (len past the family's bits: a). */
struct ip_addr	 ip_addr_masked(const struct ip_addr *a, unsigned int len);
/* No host bit set. */
bool		 ip_prefix_is_network(const struct ip_prefix *p);
/* The network p lies in: its address masked. */
struct ip_prefix ip_prefix_network(const struct ip_prefix *p);
/* a is of p's family and its first p->len bits are p's. */
bool		 ip_prefix_contains(const struct ip_prefix *p,
		    const struct ip_addr *a);
/* One holds the other (same family; the shorter's bits agree). */
bool		 ip_prefix_overlaps(const struct ip_prefix *a,
		    const struct ip_prefix *b);
bool		 ip_prefix_eq(const struct ip_prefix *a,
		    const struct ip_prefix *b);

/*
 * Where the broker's pool still holds an IPv4 address as 32 bits
 * (network order): text to and from, through the functions above.
 */
#define IP4_STR_LEN	16
#define CIDR4_STR_LEN	19
int	ip4_parse(const char *s, uint32_t *addr);
void	ip4_format(uint32_t addr, char buf[IP4_STR_LEN]);
int	cidr4_parse(const char *s, uint32_t *addr, uint8_t *prefix);
void	cidr4_format(uint32_t addr, uint8_t prefix, char buf[CIDR4_STR_LEN]);
/* Network-order mask for a prefix length 0..32. */
uint32_t prefix_mask(uint8_t prefix);
bool	cidr4_contains(uint32_t net, uint8_t prefix, uint32_t addr);

/*
 * The host end of a pod's veth pair as enid-cni names it (a conflist's
 * veth_prefix of a-z 0-9, then hex digits): 1 to 15 (IFNAMSIZ - 1) bytes
 * of a-z and 0-9, nothing else.  Checked by the broker, which takes it
 * from the plugin's ADD, and again by netd, which takes it from the
 * broker.
 */
#define VETH_NAME_MAX	15
bool	veth_name_ok(const char *s);

#endif /* ENID_ADDR_H */
