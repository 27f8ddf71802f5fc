/*
 * Address helpers: MACs and IPv4 addresses/CIDRs to and from text.  Pure.
 */
#ifndef ENID_ADDR_H
#define ENID_ADDR_H

#include <stdbool.h>
#include <stdint.h>

#define MAC_STR_LEN	18	/* "02:5a:96:2b:9b:a2" + NUL */
#define IP4_STR_LEN	16
#define CIDR4_STR_LEN	19

/* "aa:bb:cc:dd:ee:ff" (case-insensitive) -> 6 bytes.  0 or -1. */
int	mac_parse(const char *s, uint8_t mac[6]);
void	mac_format(const uint8_t mac[6], char buf[MAC_STR_LEN]);
bool	mac_is_zero(const uint8_t mac[6]);

/* Dotted quad -> network-order address.  0 or -1. */
int	ip4_parse(const char *s, uint32_t *addr);
void	ip4_format(uint32_t addr, char buf[IP4_STR_LEN]);
/* "a.b.c.d/n" -> address and prefix.  0 or -1. */
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
