/*
 * Building checkpoints in the unit tests: a formatted string copied into
 * a checkpoint's arena.  Include after <cmocka.h> and checkpoint.h.
 */
#ifndef ENID_TESTCKPT_H
#define ENID_TESTCKPT_H

#include <stdarg.h>
#include <stdio.h>

static const char *
cdup(struct checkpoint *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static const char *
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

#endif /* ENID_TESTCKPT_H */
