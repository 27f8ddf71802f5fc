/*
 * libFuzzer target for enid-cloudd's EC2 answer parsing: the first byte
 * picks the action, the rest is the answer.  Whatever parses is also run
 * through the checks that stand between the parser and the broker.
 *
 *   make fuzz-ec2-xml [FUZZ_SECONDS=N]
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ec2.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
		(void)ec2_eni_to_msg(&a.eni, &m, err, sizeof(err));
	switch (act) {
	case EC2_DESCRIBE_ENIS:
		for (i = 0; i < a.nitems; i++)
			(void)ec2_eni_to_msg(&a.list.enis[i], &m, err,
			    sizeof(err));
		break;
	case EC2_DESCRIBE_INSTANCES:
		for (i = 0; i < a.nitems; i++) {
			uint32_t j;

			for (j = 0; j < a.list.instances[i].nenis; j++)
				(void)ec2_eni_to_msg(
				    &a.list.instances[i].enis[j], &m, err,
				    sizeof(err));
		}
		break;
	case EC2_DESCRIBE_INSTANCE_TYPES:
		for (i = 0; i < a.nitems; i++)
			(void)ec2_uint(a.list.types[i].max_enis, 64, &v);
		break;
	default:
		break;
	}
	ec2_answer_free(&a);
	return 0;
}
