/*
 * libFuzzer target for enid-cloudd's EC2 answer parsing: the first byte
 * picks the action, the rest is the answer.  Whatever parses is also run
 * through the checks that stand between the parser and the broker.
 *
 *   make fuzz-ec2-xml [FUZZ_SECONDS=N]
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ec2.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * An existence check asked about the first ids the answer names (so that
 * marking gets past "not asked for"), the last one left out when the
 * input's length is odd (so that it fails on one too).  On success, every
 * entry must have been asked for, have a state and be the only one naming
 * its instance; exists only where named.
 */
static void
check_instances(const struct ec2_answer *a, bool leave_last)
{
	static struct msg_cloud_check_instances m;
	uint8_t exists[MSG_MAX_INSTANCE_IDS], named[MSG_MAX_INSTANCE_IDS];
	char err[256];
	uint32_t i, j, k;
	int rc;

	memset(&m, 0, sizeof(m));
	for (i = 0; i < a->nitems && m.nids < MSG_MAX_INSTANCE_IDS; i++)
		if (i + 1 < a->nitems || !leave_last)
			msg_strlcpy(m.ids[m.nids++], a->list.states[i].id,
			    MSG_ID_LEN);
	memset(exists, 0, sizeof(exists));
	memset(named, 0, sizeof(named));
	rc = ec2_instances_mark(&m, a->list.states, a->nitems, exists, named,
	    err, sizeof(err));
	if (rc == -1) {
		if (strlen(err) >= sizeof(err))
			__builtin_trap();
		return;
	}
	for (i = 0; i < m.nids; i++) {
		if (exists[i] > named[i])
			__builtin_trap();
		for (k = 0, j = 0; j < a->nitems; j++)
			k += strcmp(m.ids[i], a->list.states[j].id) == 0;
		if (k > 1)
			__builtin_trap();
	}
	for (j = 0; j < a->nitems; j++) {
		if (a->list.states[j].state[0] == '\0')
			__builtin_trap();
		for (k = 0, i = 0; i < m.nids; i++)
			k += strcmp(m.ids[i], a->list.states[j].id) == 0;
		if (k == 0)
			__builtin_trap();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ec2_answer a;
	struct msg_cloud_eni m;
	enum ec2_action act;
	char err[256];
	uint32_t i, v;

	if (size < 1)
		return 0;
	act = (enum ec2_action)(data[0] % EC2_ACTION_COUNT);
	if (ec2_parse(act, (const char *)data + 1, size - 1, &a, err,
	    sizeof(err)) == -1) {
		/* the error message is always a terminated string */
		if (strlen(err) >= sizeof(err))
			__builtin_trap();
		return 0;
	}
	(void)ec2_code_ok(a.code);
	(void)ec2_request_id_ok(a.request_id);
	ec2_sanitize(a.message);
	if (a.has_eni)
		(void)ec2_eni_to_msg(&a.eni, &m, err, sizeof(err), NULL, 0);
	switch (act) {
	case EC2_DESCRIBE_ENIS:
		for (i = 0; i < a.nitems; i++)
			(void)ec2_eni_to_msg(&a.list.enis[i], &m, err,
			    sizeof(err), NULL, 0);
		break;
	case EC2_DESCRIBE_INSTANCES:
		for (i = 0; i < a.nitems; i++) {
			uint32_t j;

			for (j = 0; j < a.list.instances[i].nenis; j++)
				(void)ec2_eni_to_msg(
				    &a.list.instances[i].enis[j], &m, err,
				    sizeof(err), NULL, 0);
		}
		break;
	case EC2_DESCRIBE_INSTANCE_TYPES:
		for (i = 0; i < a.nitems; i++)
			(void)ec2_uint(a.list.types[i].max_enis, 64, &v);
		break;
	case EC2_CHECK_INSTANCES:
		check_instances(&a, size & 1);
		break;
	default:
		break;
	}
	ec2_answer_free(&a);
	return 0;
}
