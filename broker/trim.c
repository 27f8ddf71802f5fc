/*
 * Giving the heap's free pages back to the system.  glibc keeps what is
 * freed in the heap, and raises its own thresholds after a large free:
 * without this the room a save's whole checkpoint, a reconciliation's
 * dumps or a large answer took stays resident for good (doc/performance.md
 * has the figure).  Once a second at most while pods come and go; each
 * trim takes microseconds.
 */
#include <malloc.h>

#include "enid.h"

#define TRIM_DELAY_MS	1000

static void
trim_now(struct loop *l, struct loop_timer *t)
{
	(void)l;
	(void)t;
	malloc_trim(0);
}

void
broker_trim_soon(struct broker *b)
{
	if (loop_timer_armed(&b->trim))
		return;
	loop_timer_init(&b->trim, trim_now, b);
	loop_timer_after(&b->loop, &b->trim, TRIM_DELAY_MS);
}
