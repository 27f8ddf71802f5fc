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
#define CNI_ANS_CIDRS		8		/* MSG_MAX_CIDRS */

struct cni_answer {
	bool		ok;
	char		code[CNI_ANS_CODE_LEN];	/* "" when absent */
	char		error[CNI_ANS_TEXT_LEN];

	/* ADD and CHECK.  Addresses are IPv4 (all the broker hands out
	 * yet); one never set (family 0) is absent. */
	struct ip_addr	ip;
	char		eni[CNI_ANS_ENI_LEN];
	uint8_t		eni_mac[6];
	uint32_t	table;
	bool		have_subnet;
	struct ip_prefix subnet;		/* a network: no host bits */
	struct ip_addr	subnet_gateway;
	size_t		ncidrs;
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
 * Why ip is never a pod's address, whoever says so: not IPv4 (for now),
 * or a special range (0/8, 127/8, 169.254/16 with the plugin's own
 * gateway, 224/4, 240/4, the broadcast address).  NULL when it is none
 * of them.
 */
const char *cni_addr_special(const struct ip_addr *ip);

#endif /* ENID_ANSWER_H */
