/*
 * Test hooks that exist only in sanitizer builds (testhook_san.c; the
 * stubs in testhook_none.c otherwise).  They let the integration tests
 * commit a deliberate finding inside a sandboxed process and see its
 * report, which proves that the seccomp lists leave the report path open.
 * A release build compiles none of this: its hooks do nothing and its
 * broker passes none of the variables on.
 */
#ifndef ENID_TESTHOOK_H
#define ENID_TESTHOOK_H

#include <stdbool.h>

/*
 * Called by each process once its filter is on.  If ENID_TEST_UBSAN names
 * procname ("enid", "enid-netd" or "enid-cloudd"), it overflows an int
 * (UBSan); if ENID_TEST_ASAN does, it writes past a heap block (ASan).
 * The build stops at the first finding, so neither returns then.
 */
void	testhook_sandboxed(const char *procname);

/* True if the environment entry var ("NAME=value") is a test hook's, for
 * the broker to pass to its helpers. */
bool	testhook_env_passes(const char *var);

#endif /* ENID_TESTHOOK_H */
