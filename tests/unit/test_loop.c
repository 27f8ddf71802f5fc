/*
 * The event loop's timers (real timerfd, real clock): order, cancel,
 * re-arm, many timers, callbacks that arm or cancel others, and signals;
 * and the log lines a loop turn holds (log_hold), written before it waits.
 */
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"
#include "loop.h"

#define NT 200

struct rec {
	int		 order[NT + 8];
	uint64_t	 at[NT + 8];
	int		 n;
	struct loop_timer *cancel_me;
	struct loop_timer *rearm_me;
	int		 rearms;
};

static struct rec rec;

static void
record(struct loop *l, struct loop_timer *t)
{
	(void)l;
	rec.at[rec.n] = now_ms();
	rec.order[rec.n++] = (int)(intptr_t)t->arg;
}

static void
run_for(struct loop *l, uint64_t ms)
{
	uint64_t end = now_ms() + ms;

	while (now_ms() < end)
		loop_run_once(l, (int)(end - now_ms()) + 1);
}

static void
test_timers_fire_in_deadline_order(void **state)
{
	struct loop l;
	struct loop_timer t[5];
	const int delays[5] = { 40, 10, 30, 20, 50 };
	uint64_t start;
	int i;

	(void)state;
	memset(&rec, 0, sizeof(rec));
	assert_int_equal(loop_init(&l), 0);
	start = now_ms();
	for (i = 0; i < 5; i++) {
		loop_timer_init(&t[i], record, (void *)(intptr_t)delays[i]);
		loop_timer_at(&l, &t[i], start + delays[i]);
		assert_true(loop_timer_armed(&t[i]));
	}
	run_for(&l, 120);
	assert_int_equal(rec.n, 5);
	for (i = 0; i < 5; i++) {
		assert_int_equal(rec.order[i], (i + 1) * 10);
		/* Never early; late by at most a scheduling hiccup. */
		assert_true(rec.at[i] >= start + (uint64_t)(i + 1) * 10);
		assert_true(rec.at[i] <= start + (uint64_t)(i + 1) * 10 + 50);
		assert_false(loop_timer_armed(&t[i]));
	}
	loop_free(&l);
}

/* A fresh record and loop, and three timers that record 1, 2 and 3. */
static void
three_timers(struct loop *l, struct loop_timer *a, struct loop_timer *b,
    struct loop_timer *c)
{
	memset(&rec, 0, sizeof(rec));
	assert_int_equal(loop_init(l), 0);
	loop_timer_init(a, record, (void *)1);
	loop_timer_init(b, record, (void *)2);
	loop_timer_init(c, record, (void *)3);
}

static void
test_cancel_and_rearm(void **state)
{
	struct loop l;
	struct loop_timer a, b, c;
	uint64_t start;

	(void)state;
	three_timers(&l, &a, &b, &c);
	start = now_ms();
	loop_timer_at(&l, &a, start + 10);
	loop_timer_at(&l, &b, start + 20);
	loop_timer_at(&l, &c, start + 30);
	loop_timer_cancel(&l, &a);		/* the earliest: heap root */
	loop_timer_cancel(&l, &a);		/* twice is harmless */
	loop_timer_at(&l, &c, start + 5);	/* moved earlier */
	loop_timer_after(&l, &b, 40);		/* moved later */
	run_for(&l, 80);
	assert_int_equal(rec.n, 2);
	assert_int_equal(rec.order[0], 3);
	assert_int_equal(rec.order[1], 2);
	assert_true(rec.at[1] >= start + 40);
	loop_free(&l);
}

/*
 * A root that goes (cancelled, or moved later) leaves the timerfd at its
 * deadline rather than reprogramming it: the early wakeup runs nothing,
 * programs the timerfd for the new root, and that timer still fires on
 * time, once.  A root that comes earlier reprograms it at once.
 */
static void
test_root_gone_leaves_timerfd_early(void **state)
{
	struct loop l;
	struct loop_timer a, b, c;
	uint64_t start;
	int turns;

	(void)state;
	three_timers(&l, &a, &b, &c);
	start = now_ms();
	loop_timer_at(&l, &a, start + 20);
	assert_int_equal(l.armed, start + 20);
	loop_timer_cancel(&l, &a);
	loop_timer_at(&l, &b, start + 60);
	assert_int_equal(l.armed, start + 20);	/* left early */
	/* The early wakeup: nothing due, the timerfd now at b's deadline. */
	for (turns = 0; l.armed == start + 20 && turns < 100; turns++)
		loop_run_once(&l, 100);
	assert_int_equal(rec.n, 0);
	assert_int_equal(l.armed, start + 60);
	assert_true(now_ms() >= start + 20);
	/* Earlier than what the timerfd holds: programmed at once. */
	loop_timer_at(&l, &c, start + 40);
	assert_int_equal(l.armed, start + 40);
	for (turns = 0; rec.n < 2 && turns < 100; turns++)
		loop_run_once(&l, 100);
	assert_int_equal(rec.n, 2);
	assert_int_equal(rec.order[0], 3);
	assert_int_equal(rec.order[1], 2);
	assert_true(rec.at[0] >= start + 40);
	assert_true(rec.at[1] >= start + 60);
	/* Every timer gone: one early wakeup, then the timerfd is idle. */
	loop_timer_at(&l, &a, now_ms() + 10);
	loop_timer_cancel(&l, &a);
	run_for(&l, 30);
	assert_int_equal(rec.n, 2);
	assert_int_equal(l.armed, 0);
	loop_free(&l);
}

static void
canceller(struct loop *l, struct loop_timer *t)
{
	record(l, t);
	loop_timer_cancel(l, rec.cancel_me);
}

static void
rearmer(struct loop *l, struct loop_timer *t)
{
	record(l, t);
	if (++rec.rearms < 3)
		loop_timer_after(l, t, 5);
}

static void
test_callbacks_arm_and_cancel(void **state)
{
	struct loop l;
	struct loop_timer a, b, r;
	uint64_t start;

	(void)state;
	memset(&rec, 0, sizeof(rec));
	assert_int_equal(loop_init(&l), 0);
	loop_timer_init(&a, canceller, (void *)1);
	loop_timer_init(&b, record, (void *)2);
	loop_timer_init(&r, rearmer, (void *)9);
	rec.cancel_me = &b;
	start = now_ms();
	/* Same deadline: a runs first or second, but if first it cancels b;
	 * give a the earlier one to be deterministic. */
	loop_timer_at(&l, &a, start + 10);
	loop_timer_at(&l, &b, start + 11);
	loop_timer_at(&l, &r, start + 1);
	run_for(&l, 60);
	assert_int_equal(rec.n, 4);	/* r three times, a once, never b */
	assert_int_equal(rec.rearms, 3);
	for (int i = 0; i < rec.n; i++)
		assert_int_not_equal(rec.order[i], 2);
	loop_free(&l);
}

static void
test_many_timers(void **state)
{
	static struct loop_timer t[NT];
	struct loop l;
	uint64_t start;
	int i;

	(void)state;
	memset(&rec, 0, sizeof(rec));
	assert_int_equal(loop_init(&l), 0);
	start = now_ms();
	/* A scrambled order, and every third one cancelled. */
	for (i = 0; i < NT; i++) {
		int d = (i * 37) % NT;

		loop_timer_init(&t[i], record, (void *)(intptr_t)d);
		loop_timer_at(&l, &t[i], start + 5 + (uint64_t)d / 4);
	}
	for (i = 0; i < NT; i += 3)
		loop_timer_cancel(&l, &t[i]);
	run_for(&l, 5 + NT / 4 + 40);
	assert_int_equal(rec.n, NT - (NT + 2) / 3);
	for (i = 1; i < rec.n; i++)
		assert_true(rec.order[i - 1] / 4 <= rec.order[i] / 4);
	loop_free(&l);
}

static int got_signal;

static void
on_signal(struct loop *l, int signo, void *arg)
{
	(void)arg;
	got_signal = signo;
	loop_stop(l, 7);
}

static void
test_signal_stops_loop(void **state)
{
	struct loop l;

	(void)state;
	assert_int_equal(loop_init(&l), 0);
	assert_int_equal(loop_signal(&l, SIGUSR1, on_signal, NULL), 0);
	raise(SIGUSR1);
	assert_int_equal(loop_run(&l), 7);
	assert_int_equal(got_signal, SIGUSR1);
	loop_free(&l);
}

/*
 * Randomized, fixed seed: arm, re-arm and cancel timers in the heap without
 * running them, and check after every step that the root is the earliest
 * armed timer (ties: armed first) and the count is right; then drain it in
 * order.  No step may allocate, so none can fail.
 */
#define RT 300

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint32_t
rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 11);
}

static void
noop_timer(struct loop *l, struct loop_timer *t)
{
	(void)l;
	(void)t;
}

static struct loop_timer *
reference_min(struct loop_timer *t, size_t n)
{
	struct loop_timer *best = NULL;
	size_t i;

	for (i = 0; i < n; i++) {
		if (!t[i].armed)
			continue;
		if (best == NULL || t[i].deadline < best->deadline ||
		    (t[i].deadline == best->deadline && t[i].seq < best->seq))
			best = &t[i];
	}
	return best;
}

static void
test_heap_randomized(void **state)
{
	static struct loop_timer t[RT];
	struct loop l;
	uint64_t base, prev_deadline, prev_seq;
	size_t i, armed = 0, step;

	(void)state;
	assert_int_equal(loop_init(&l), 0);
	base = now_ms() + 3600 * 1000;	/* never due during the test */
	for (i = 0; i < RT; i++)
		loop_timer_init(&t[i], noop_timer, NULL);
	for (step = 0; step < 200000; step++) {
		struct loop_timer *x = &t[rng() % RT];
		uint32_t op = rng() % 10;

		if (op < 6) {
			if (!x->armed)
				armed++;
			/* Few distinct deadlines, so ties are common. */
			loop_timer_at(&l, x, base + rng() % 64);
		} else if (op < 9) {
			if (x->armed)
				armed--;
			loop_timer_cancel(&l, x);
		} else if (l.root != NULL) {
			/* Remove the root, as firing does. */
			loop_timer_cancel(&l, l.root);
			armed--;
		}
		assert_int_equal(l.ntimers, armed);
		assert_ptr_equal(l.root, reference_min(t, RT));
	}
	prev_deadline = 0;
	prev_seq = 0;
	while (l.root != NULL) {
		struct loop_timer *r = l.root;

		assert_true(r->deadline > prev_deadline ||
		    (r->deadline == prev_deadline && r->seq > prev_seq));
		prev_deadline = r->deadline;
		prev_seq = r->seq;
		loop_timer_cancel(&l, r);
		assert_false(r->armed);
		armed--;
	}
	assert_int_equal(armed, 0);
	assert_int_equal(l.ntimers, 0);
	loop_free(&l);
}

struct defer_rec {
	struct loop_defer	 d[3];
	int			 order[8];
	int			 n;
};

static void
defer_cb(struct loop *l, struct loop_defer *d)
{
	struct defer_rec *r = d->arg;
	int idx = (int)(d - r->d);

	r->order[r->n++] = idx;
	/* The first one queues the third from inside a deferred call. */
	if (idx == 0)
		loop_defer(l, &r->d[2]);
}

static void
test_defer(void **state)
{
	static struct defer_rec r;
	struct loop l;
	int i;

	(void)state;
	memset(&r, 0, sizeof(r));
	assert_int_equal(loop_init(&l), 0);
	for (i = 0; i < 3; i++)
		loop_defer_init(&r.d[i], defer_cb, &r);
	loop_defer(&l, &r.d[0]);
	loop_defer(&l, &r.d[1]);
	loop_defer(&l, &r.d[0]);	/* already queued: no second run */
	loop_defer(&l, &r.d[2]);
	loop_defer_cancel(&l, &r.d[2]);	/* cancelled before it ran */
	loop_run_once(&l, 0);
	assert_int_equal(r.n, 3);
	assert_int_equal(r.order[0], 0);
	assert_int_equal(r.order[1], 1);
	assert_int_equal(r.order[2], 2);
	for (i = 0; i < 3; i++)
		assert_false(r.d[i].queued);
	loop_free(&l);
}

struct io_pair {
	struct loop_io	 io[2];
	int		 fds[2][2];
	int		 calls;
};

static void
io_cb_removes_other(struct loop *l, struct loop_io *io, uint32_t ev)
{
	struct io_pair *p = io->arg;

	(void)ev;
	p->calls++;
	/* Whichever runs first removes the other: its pending event must be
	 * dropped from this batch. */
	loop_del_io(l, io == &p->io[0] ? &p->io[1] : &p->io[0]);
	loop_del_io(l, io);
}

static void
test_io_removed_mid_batch(void **state)
{
	struct loop l;
	struct io_pair p;
	int i;

	(void)state;
	memset(&p, 0, sizeof(p));
	assert_int_equal(loop_init(&l), 0);
	for (i = 0; i < 2; i++) {
		assert_int_equal(pipe(p.fds[i]), 0);
		assert_int_equal(loop_add_io(&l, &p.io[i], p.fds[i][0], EPOLLIN,
		    io_cb_removes_other, &p), 0);
		assert_int_equal(write(p.fds[i][1], "x", 1), 1);
	}
	loop_run_once(&l, 100);
	assert_int_equal(p.calls, 1);
	for (i = 0; i < 2; i++) {
		close(p.fds[i][0]);
		close(p.fds[i][1]);
	}
	loop_free(&l);
}

/* What the pipe standing in for stderr holds now, appended to buf. */
static size_t
drain(int fd, char *buf, size_t len, size_t size)
{
	ssize_t n;

	while (len < size - 1 &&
	    (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	return len;
}

static void *
flush_elsewhere(void *arg)
{
	(void)arg;
	log_flush();
	return NULL;
}

/*
 * Info lines are held until the loop is about to wait; a warning goes out
 * at once, after what was held; more than the buffer holds goes out in
 * whole lines, in order; a forked child writes none of its parent's, nor
 * does another thread's flush.
 */
static void
test_held_log_lines(void **state)
{
	static char buf[64 * 1024];
	struct loop l;
	char *p, *nl;
	size_t len = 0;
	int fds[2], saved, i, next, status;
	pthread_t other;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe2(fds, O_NONBLOCK), 0);
	fcntl(fds[0], F_SETPIPE_SZ, 1024 * 1024);
	saved = dup(STDERR_FILENO);
	assert_int_equal(dup2(fds[1], STDERR_FILENO), STDERR_FILENO);
	log_init("test_loop", true, LOG_LVL_INFO);
	assert_int_equal(loop_init(&l), 0);
	log_hold(true);

	log_info("one");
	log_info("two");
	assert_int_equal(drain(fds[0], buf, 0, sizeof(buf)), 0);
	log_warnx("three");
	len = drain(fds[0], buf, 0, sizeof(buf));
	assert_non_null(strstr(buf, "one\n"));
	assert_true(strstr(buf, "one\n") < strstr(buf, "two\n"));
	assert_true(strstr(buf, "two\n") < strstr(buf, "warning: three\n"));

	/* A child forked while lines are held writes only its own. */
	log_info("held across fork");
	if ((pid = fork()) == 0) {
		log_warnx("child");
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	len = drain(fds[0], buf, 0, sizeof(buf));
	assert_non_null(strstr(buf, "warning: child\n"));
	assert_null(strstr(buf, "held across fork"));
	loop_run_once(&l, 0);
	len = drain(fds[0], buf, 0, sizeof(buf));
	assert_non_null(strstr(buf, "held across fork\n"));
	assert_int_equal(strstr(buf, "held across fork\n") - buf +
	    strlen("held across fork\n"), len);

	/* 300 lines of some 60 bytes: several writes, each of whole lines,
	 * the last at the turn's end. */
	for (i = 0; i < 300; i++)
		log_info("line %03d of a few that fill the held buffer", i);
	len = drain(fds[0], buf, 0, sizeof(buf));
	assert_true(len > 0);
	assert_int_equal(buf[len - 1], '\n');
	loop_run_once(&l, 0);
	len = drain(fds[0], buf, len, sizeof(buf));
	for (p = buf, next = 0; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
		char want[64];

		snprintf(want, sizeof(want), "line %03d of a few", next);
		assert_non_null(strstr(p, want));
		assert_true(strstr(p, want) < nl);
		next++;
	}
	assert_int_equal(next, 300);

	/* Another thread's flush (its fatal() runs the atexit call) leaves
	 * what this one holds alone; log_hold(false) writes it and stops. */
	log_info("held by the loop's thread");
	assert_int_equal(pthread_create(&other, NULL, flush_elsewhere, NULL),
	    0);
	assert_int_equal(pthread_join(other, NULL), 0);
	assert_int_equal(drain(fds[0], buf, 0, sizeof(buf)), 0);
	log_hold(false);
	len = drain(fds[0], buf, 0, sizeof(buf));
	assert_non_null(strstr(buf, "held by the loop's thread\n"));
	log_info("not held");
	len = drain(fds[0], buf, 0, sizeof(buf));
	assert_non_null(strstr(buf, "not held\n"));

	dup2(saved, STDERR_FILENO);
	close(saved);
	close(fds[0]);
	close(fds[1]);
	loop_free(&l);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timers_fire_in_deadline_order),
		cmocka_unit_test(test_cancel_and_rearm),
		cmocka_unit_test(test_root_gone_leaves_timerfd_early),
		cmocka_unit_test(test_callbacks_arm_and_cancel),
		cmocka_unit_test(test_many_timers),
		cmocka_unit_test(test_heap_randomized),
		cmocka_unit_test(test_defer),
		cmocka_unit_test(test_signal_stops_loop),
		cmocka_unit_test(test_io_removed_mid_batch),
		cmocka_unit_test(test_held_log_lines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
