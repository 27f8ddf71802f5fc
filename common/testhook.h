/*
 * Test hooks that exist only in sanitizer builds (testhook_san.c; the
 * stubs in testhook_none.c otherwise).  They let the integration tests
 * commit a deliberate finding inside a sandboxed process and see its
 * report, which proves that the seccomp lists leave the report path open,
 * and wait seconds, not a minute, for the broker's long timers.
 * A release build compiles none of this: its hooks do nothing, its
 * timers are the ones written, and its broker passes none of the
 * variables on.
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

/*
 * A timer's length: ms itself, except in a sanitizer build run with
 * ENID_TEST_TIME_SCALE=N (an integer from 1 to 100), where it is ms / N.
 * The integration tests' harness sets it so that the broker's minute-long
 * waits (an unassign's hold, a refusal's rest) take seconds while the
 * tests assert the same sequence of events.  It can only shorten a
 * timer, never lengthen one, and a release build ignores the variable
 * (testhook_none.c returns ms), so no environment can stretch or shrink
 * a production node's safety bounds.
 */
int	testhook_ms(int ms);

/*
 * enid-netd's rule changes sent at once (netd/kernel.c, rule_batch): with
 * ENID_TEST_NETD_RULE_FAIL=N (1 to 8), the Nth change of every such run
 * is sent malformed, so that the kernel refuses it and does the others,
 * and the undo of the later ones can be tested.  0: none.
 */
int	testhook_rule_fail(void);

#endif /* ENID_TESTHOOK_H */
