/*
 * The JSON-lines socket's framing for the request parsers' fuzz targets
 * (fuzz_lines.h says what it mirrors).
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_lines.h"

bool
fuzz_terminated(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

bool
fuzz_server_refuses(struct json_object *o, const char *const *ops)
{
	struct json_object *op;
	const char *name;
	size_t i;

	if (!json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "op", &op) ||
	    !json_object_is_type(op, json_type_string))
		return true;
	name = json_object_get_string(op);
	for (i = 0; ops[i] != NULL; i++)
		if (strcmp(ops[i], name) == 0)
			return false;
	return true;
}

/* One line: the value, or -1 (not one whole JSON value: closed). */
static int
one_line(const char *line, size_t len, fuzz_line_fn one)
{
	struct json_tokener *tok;
	struct json_object *o;
	int rc;

	if ((tok = json_tokener_new()) == NULL)
		return -1;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, line, (int)len);
	if (o == NULL || json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != len) {
		json_tokener_free(tok);
		json_object_put(o);
		return -1;
	}
	json_tokener_free(tok);
	rc = one(o, len);
	json_object_put(o);
	return rc;
}

void
fuzz_lines(const uint8_t *data, size_t size, size_t maxline,
    fuzz_line_fn one)
{
	const char *p = (const char *)data, *end = p + size, *nl;
	char *line;
	size_t len;
	int rc;

	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		len = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);
		if (len > maxline)
			return;			/* "request line longer than" */
		/* unterminated, as the server has it, in a buffer of just
		 * the line so that ASan sees any read past it */
		if ((line = malloc(len ? len : 1)) == NULL)
			return;
		memcpy(line, p, len);
		rc = one_line(line, len, one);
		free(line);
		if (rc == -1)
			return;			/* bad-request: closed */
		p += len + 1;
	}
}
