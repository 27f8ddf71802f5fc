/*
 * proc_shed_start_pages (proc.c): the read-only pages of every loaded
 * object leave the resident set, and what the program wrote or the
 * dynamic linker relocated is still there after; code and constants fault
 * back in when used.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "log.h"
#include "proc.h"

/* written at run time (.data, .bss) */
static int	written = 5;
static char	scratch[3 * 4096];
/* relocated by the dynamic linker: pointers in a read-only table (RELRO)
 * and a pointer into the C library */
static const char *const names[] = { "netd", "cloudd", "broker" };
static size_t	(*const lenf)(const char *) = strlen;

/* kB of Rss in /proc/self/smaps_rollup */
static long
rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f;

	f = fopen("/proc/self/smaps_rollup", "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "Rss: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static void
test_shed_keeps_what_was_written(void **state)
{
	size_t shed;

	(void)state;
	written = 42;
	memset(scratch, 0x5a, sizeof(scratch));
	shed = proc_shed_start_pages();
	assert_true(shed > 0);
	assert_int_equal(written, 42);
	assert_int_equal(scratch[0], 0x5a);
	assert_int_equal(scratch[sizeof(scratch) - 1], 0x5a);
	assert_string_equal(names[0], "netd");
	assert_string_equal(names[2], "broker");
	assert_int_equal(lenf(names[1]), 6);
	/* twice is as good as once */
	assert_true(proc_shed_start_pages() > 0);
	assert_int_equal(written, 42);
	assert_string_equal(names[1], "cloudd");
}

static void
test_shed_gives_pages_back(void **state)
{
	long before, after;
	size_t shed;

	(void)state;
	before = rss_kb();
	shed = proc_shed_start_pages();
	after = rss_kb();
	print_message("Rss %ld kB -> %ld kB; %zu kB of read-only segments\n",
	    before, after, shed / 1024);
	assert_true(before > 0 && after > 0);
	/* the C library's code alone is hundreds of kB; reading the file
	 * again brings back only what that takes */
	assert_true(after + 128 < before);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shed_keeps_what_was_written),
		cmocka_unit_test(test_shed_gives_pages_back),
	};

	log_init("test_proc", true, LOG_LVL_WARN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
