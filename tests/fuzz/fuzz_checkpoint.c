/*
 * libFuzzer target for the broker's checkpoint parser.  Whatever parses
 * must pass the rules on its own, format, and parse again to the same
 * struct and the same text; whatever does not parse must leave the struct
 * empty and say why.
 *
 *   make fuzz-checkpoint [FUZZ_SECONDS=N]
 */
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool
empty(const struct checkpoint *c)
{
	return c->npods == 0 && c->pods == NULL && c->ncooling == 0 &&
	    c->cooling == NULL;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct checkpoint c, d;
	char err[256], *text, *again;
	size_t len, len2;

	/* data is not NUL-terminated: the parser must not look past size */
	if (checkpoint_parse((const char *)data, size, &c, err,
	    sizeof(err)) == -1) {
		if (err[0] == '\0' || strnlen(err, sizeof(err)) >= sizeof(err))
			__builtin_trap();
		if (!empty(&c))
			__builtin_trap();
		return 0;
	}
	if (checkpoint_check(&c, err, sizeof(err)) != 0)
		__builtin_trap();
	if ((text = checkpoint_format(&c, &len)) == NULL)
		__builtin_trap();
	if (strlen(text) != len)
		__builtin_trap();
	if (checkpoint_parse(text, len, &d, err, sizeof(err)) != 0)
		__builtin_trap();
	if (!checkpoint_equal(&c, &d))
		__builtin_trap();
	if ((again = checkpoint_format(&d, &len2)) == NULL)
		__builtin_trap();
	if (len2 != len || memcmp(text, again, len) != 0)
		__builtin_trap();
	free(again);
	free(text);
	checkpoint_free(&d);
	checkpoint_free(&c);
	return 0;
}
