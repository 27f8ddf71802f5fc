/*
 * The broker's answer on cni.sock, as enid-cni reads it: one line, parsed
 * strictly and whole before any field is used (answer.c).  The plugin runs
 * as root and the broker does not: nothing in the answer is taken on
 * trust, so a line that is not exactly one of the shapes the broker
 * sends is refused, naming the field and the value at fault.  Pure
 * (bytes in, a struct or an error out): the plugin, its unit tests and
 * its fuzzer share it.
 */
#ifndef ENID_ANSWER_H
#define ENID_ANSWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr.h"
#include "cniconf.h"

#define CNI_ANSWER_MAX		(64 * 1024)	/* the line, newline included */
#define CNI_ANS_CODE_LEN	64
#define CNI_ANS_TEXT_LEN	512
#define CNI_ANS_ENI_LEN		64
#define CNI_ANS_CIDRS4		8		/* MSG_MAX_CIDRS */
#define CNI_ANS_CIDRS6		8		/* MSG_MAX_CIDRS6 */
#define CNI_ANS_CIDRS		(CNI_ANS_CIDRS4 + CNI_ANS_CIDRS6)
/* A VPC's IPv6 block: EC2 gives /44 to /60 (an Amazon one is a /56);
 * nothing wider than a /32 is taken, so that no "::/0" or "2000::/3"
 * vouches for any address at all. */
#define CNI_ANS_CIDR6_MIN	32
#define CNI_ANS_CIDR6_MAX	64
#define CNI_ANS_SUBNET6_LEN	64		/* an EC2 subnet's IPv6 block */

struct cni_answer {
	bool		ok;
	char		code[CNI_ANS_CODE_LEN];	/* "" when absent */
	char		error[CNI_ANS_TEXT_LEN];

	/* ADD and CHECK.  One address a family: ip IPv4, ip6 IPv6, at
	 * least one of them; one never set (family 0) is absent. */
	struct ip_addr	ip;
	struct ip_addr	ip6;
	char		eni[CNI_ANS_ENI_LEN];
	uint8_t		eni_mac[6];
	uint32_t	table;
	bool		have_subnet;
	struct ip_prefix subnet;		/* a network: no host bits */
	struct ip_addr	subnet_gateway;
	bool		have_subnet6;
	struct ip_prefix subnet6;		/* a /64 network */
	size_t		ncidrs;			/* IPv4 ones first */
	struct ip_prefix cidrs[CNI_ANS_CIDRS];	/* networks */

	/* STATUS. */
	bool		available;
	int64_t		lost_pods;
	char		reason[CNI_ANS_TEXT_LEN];

	/* GC. */
	int64_t		released;
};

/*
 * The answer to cmd in buf[0..len), which ends with its newline.  0, or
 * -1 with e set: code CNI_ERR_ANSWER and a message that names the field
 * and its value (printable ASCII, shortened).
 */
int	cni_answer_parse(enum cni_cmd cmd, const char *buf, size_t len,
	    struct cni_answer *a, struct cni_error *e);

/*
 * Why ip is never a pod's address, whoever says so: neither IPv4 nor
 * IPv6, or a special range of its family.  IPv4: 0/8, 127/8, 169.254/16
 * with the plugin's own gateway, 224/4, 240/4, the broadcast address.
 * IPv6: ::/8 (unspecified, loopback, IPv4-compatible), IPv4-mapped and
 * NAT64's prefixes, fe80::/10 with the pods' gateway fe80::1, ff00::/8,
 * and EC2's own services at fd00:ec2::254 (IMDS), ::253 (DNS) and ::123
 * (NTP).  NULL when it is none of them.
 */
const char *cni_addr_special(const struct ip_addr *ip);

/*
 * Why an IPv6 pod address is not the VPC's: outside every IPv6 block of
 * cidrs[0..n) (a unique local address, fc00::/7, named as such).  NULL
 * when a block holds it, and for an IPv4 address (never asked of them).
 */
const char *cni_addr_outside_vpc(const struct ip_addr *ip,
	    const struct ip_prefix *cidrs, size_t n);

#endif /* ENID_ANSWER_H */
