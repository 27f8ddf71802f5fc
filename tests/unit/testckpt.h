/*
 * Building and checking checkpoints in the unit tests: a formatted string
 * copied into a checkpoint's arena, and checkpoint_check's error as a
 * string to compare.  Include after <cmocka.h> and checkpoint.h.
 */
#ifndef ENID_TESTCKPT_H
#define ENID_TESTCKPT_H

#include <stdarg.h>
#include <stdio.h>

static inline const char *
cdup(struct checkpoint *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static inline const char *
cdup(struct checkpoint *c, const char *fmt, ...)
{
	va_list ap;
	char buf[512];
	const char *p;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	p = checkpoint_strdup(c, buf);
	assert_non_null(p);
	return p;
}

/* NULL when c passes checkpoint_check, else its error (static). */
static inline const char *
check_err(const struct checkpoint *c)
{
	static char err[1024];

	if (checkpoint_check(c, err, sizeof(err)) == 0)
		return NULL;
	return err;
}

#endif /* ENID_TESTCKPT_H */
