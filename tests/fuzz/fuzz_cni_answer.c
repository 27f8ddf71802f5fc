/*
 * libFuzzer target for enid-cni's reading of the broker's answer on
 * cni.sock (cni/answer.c), the one input the root plugin takes from a
 * process it does not trust.  What parses must be one of the shapes the
 * broker sends, with every string terminated inside its buffer; what does
 * not must be refused with code 123 and a message of printable ASCII (it
 * reaches the runtime's logs), whatever bytes came.
 *
 * Input: one byte choosing the command (ADD, DEL, CHECK, GC, STATUS),
 * then the line as it came off the socket.
 *
 *   make fuzz-cni-answer [FUZZ_SECONDS=N]
 */
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "answer.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
terminated(const char *s, size_t size)
{
	if (strnlen(s, size) >= size)
		__builtin_trap();
}

static void
check_ok(enum cni_cmd cmd, const struct cni_answer *a)
{
	size_t i;

	terminated(a->code, sizeof(a->code));
	terminated(a->error, sizeof(a->error));
	terminated(a->eni, sizeof(a->eni));
	terminated(a->reason, sizeof(a->reason));
	if (!a->ok) {
		/* A failure carries its code, and nothing of a success. */
		if (a->code[0] == '\0' || a->ip.family != 0 ||
		    a->ip6.family != 0 || a->ncidrs != 0)
			__builtin_trap();
		for (i = 0; a->code[i] != '\0'; i++)
			if (!((a->code[i] >= 'a' && a->code[i] <= 'z') ||
			    (a->code[i] >= '0' && a->code[i] <= '9') ||
			    a->code[i] == '-'))
				__builtin_trap();
		return;
	}
	if (a->ncidrs > CNI_ANS_CIDRS)
		__builtin_trap();
	/* Addresses and blocks: canonical, each of its field's family,
	 * blocks with no host bits (IPv4 ones before IPv6 ones, those /32
	 * to /64, a subnet6 /64); one absent is never set. */
	for (i = 0; i < a->ncidrs; i++)
		if (!ip_prefix_valid(&a->cidrs[i]) ||
		    !ip_prefix_is_network(&a->cidrs[i]) ||
		    (a->cidrs[i].addr.family == AF_INET && i > 0 &&
		    a->cidrs[i - 1].addr.family != AF_INET) ||
		    (a->cidrs[i].addr.family == AF_INET6 &&
		    (a->cidrs[i].len < 32 || a->cidrs[i].len > 64)))
			__builtin_trap();
	if (a->have_subnet6 && (!ip_prefix_valid(&a->subnet6) ||
	    a->subnet6.addr.family != AF_INET6 || a->subnet6.len != 64 ||
	    !ip_prefix_is_network(&a->subnet6) || a->ip6.family == 0))
		__builtin_trap();
	if (a->ip6.family != 0 && (a->ip6.family != AF_INET6 ||
	    !ip_addr_valid(&a->ip6)))
		__builtin_trap();
	if ((cmd == CNI_CMD_ADD || cmd == CNI_CMD_CHECK) &&
	    a->ip.family == 0 && a->ip6.family == 0)
		__builtin_trap();
	if (a->have_subnet && a->ip.family == 0)
		__builtin_trap();
	if (a->have_subnet && (!ip_prefix_valid(&a->subnet) ||
	    a->subnet.addr.family != AF_INET ||
	    !ip_prefix_is_network(&a->subnet)))
		__builtin_trap();
	if (a->ip.family != 0 && (a->ip.family != AF_INET ||
	    !ip_addr_valid(&a->ip)))
		__builtin_trap();
	if (cmd != CNI_CMD_ADD && cmd != CNI_CMD_CHECK &&
	    (a->ip.family != 0 || a->ip6.family != 0 || a->ncidrs != 0 ||
	    a->have_subnet || a->have_subnet6))
		__builtin_trap();
	if (cmd != CNI_CMD_STATUS && (a->available || a->reason[0] != '\0'))
		__builtin_trap();
	if (a->lost_pods < 0 || a->released < 0)
		__builtin_trap();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum cni_cmd cmds[] = { CNI_CMD_ADD, CNI_CMD_DEL,
	    CNI_CMD_CHECK, CNI_CMD_GC, CNI_CMD_STATUS };
	struct cni_answer a;
	struct cni_error e;
	enum cni_cmd cmd;
	char *copy;
	size_t i;

	if (size < 1)
		return 0;
	cmd = cmds[data[0] % 5];
	/* A private copy, so the parser's reads past the end are caught. */
	if ((copy = malloc(size - 1 > 0 ? size - 1 : 1)) == NULL)
		return 0;
	memcpy(copy, data + 1, size - 1);
	if (cni_answer_parse(cmd, copy, size - 1, &a, &e) == 0)
		check_ok(cmd, &a);
	else {
		if (e.code != CNI_ERR_ANSWER || e.msg[0] == '\0')
			__builtin_trap();
		terminated(e.msg, sizeof(e.msg));
		for (i = 0; e.msg[i] != '\0'; i++)
			if (e.msg[i] < ' ' || e.msg[i] > '~')
				__builtin_trap();
	}
	free(copy);
	return 0;
}
