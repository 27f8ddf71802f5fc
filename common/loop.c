/*
 * The event loop (see loop.h).  Timers live in an intrusive pairing heap
 * keyed on their deadline; the timerfd is armed for the heap's root, or
 * earlier (loop_rearm).
 * Deferred calls run after each batch of events.  A descriptor removed
 * while its events are pending in the current batch is dropped from the
 * batch, so callbacks may free the objects of other descriptors.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "loop.h"

uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void	loop_timerfd_cb(struct loop *, struct loop_io *, uint32_t);
static void	loop_sigfd_cb(struct loop *, struct loop_io *, uint32_t);

int
loop_init(struct loop *l)
{
	memset(l, 0, sizeof(*l));
	l->sigfd = -1;
	l->defer_tail = &l->defer_head;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd == -1)
		return -1;
	l->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (l->timerfd == -1)
		goto fail_ep;
	if (loop_add_io(l, &l->timer_io, l->timerfd, EPOLLIN, loop_timerfd_cb,
	    NULL) == -1)
		goto fail_tfd;
	l->now = now_ms();
	return 0;

fail_tfd:
	close(l->timerfd);
fail_ep:
	close(l->epfd);
	return -1;
}

void
loop_free(struct loop *l)
{
	if (l->sigfd != -1)
		close(l->sigfd);
	close(l->timerfd);
	close(l->epfd);
	l->root = NULL;
	l->ntimers = 0;
	l->defer_head = NULL;
	l->defer_tail = &l->defer_head;
}

int
loop_add_io(struct loop *l, struct loop_io *io, int fd, uint32_t events,
    loop_io_cb cb, void *arg)
{
	struct epoll_event ev;

	io->fd = fd;
	io->events = events;
	io->cb = cb;
	io->arg = arg;
	memset(&ev, 0, sizeof(ev));
	ev.events = events;
	ev.data.ptr = io;
	return epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev);
}

int
loop_mod_io(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct epoll_event ev;

	if (io->events == events)
		return 0;
	io->events = events;
	memset(&ev, 0, sizeof(ev));
	ev.events = events;
	ev.data.ptr = io;
	return epoll_ctl(l->epfd, EPOLL_CTL_MOD, io->fd, &ev);
}

/* Events of io still pending in the current batch are dropped. */
static void
loop_forget_io(struct loop *l, struct loop_io *io)
{
	int i;

	for (i = l->cur; i < l->nevs; i++)
		if (l->evs[i].data.ptr == io)
			l->evs[i].data.ptr = NULL;
}

void
loop_del_io(struct loop *l, struct loop_io *io)
{
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, io->fd, NULL);
	loop_forget_io(l, io);
}

/*
 * The kernel takes a file out of every epoll set when its last reference
 * goes, so closing a descriptor nothing else refers to is enough: one
 * epoll_ctl fewer for each connection the broker's sockets take.
 */
void
loop_close_io(struct loop *l, struct loop_io *io)
{
	close(io->fd);
	io->fd = -1;
	loop_forget_io(l, io);
}

/* ---- timers ---- */

/*
 * A pairing heap over the timers themselves: each links to its first
 * child, its next sibling, and its parent (when it is a first child) or
 * previous sibling.  Insert and meld are O(1), removal O(log n) amortized,
 * and nothing is allocated.
 */
static bool
timer_before(const struct loop_timer *a, const struct loop_timer *b)
{
	if (a->deadline != b->deadline)
		return a->deadline < b->deadline;
	return a->seq < b->seq;
}

/* Meld two detached heaps (either may be NULL); returns the new root. */
static struct loop_timer *
heap_meld(struct loop_timer *a, struct loop_timer *b)
{
	struct loop_timer *t;

	if (a == NULL)
		return b;
	if (b == NULL)
		return a;
	if (timer_before(b, a)) {
		t = a;
		a = b;
		b = t;
	}
	b->prev = a;
	b->next = a->child;
	if (a->child != NULL)
		a->child->prev = b;
	a->child = b;
	a->next = a->prev = NULL;
	return a;
}

/* Combine a list of sibling heaps into one: pair them left to right, then
 * meld the pairs right to left.  Iterative, so depth is no concern. */
static struct loop_timer *
heap_merge_pairs(struct loop_timer *first)
{
	struct loop_timer *a, *b, *rest, *pairs = NULL, *h;

	while (first != NULL) {
		a = first;
		b = a->next;
		rest = b ? b->next : NULL;
		a->next = a->prev = NULL;
		if (b != NULL)
			b->next = b->prev = NULL;
		h = heap_meld(a, b);
		/* Stack the pair on a list linked through next. */
		h->next = pairs;
		pairs = h;
		first = rest;
	}
	h = NULL;
	while (pairs != NULL) {
		a = pairs;
		pairs = a->next;
		a->next = NULL;
		h = heap_meld(h, a);
	}
	return h;
}

static void
heap_remove(struct loop *l, struct loop_timer *t)
{
	struct loop_timer *sub;

	if (t == l->root)
		l->root = heap_merge_pairs(t->child);
	else {
		/* Unlink t from its parent or its previous sibling. */
		if (t->prev->child == t)
			t->prev->child = t->next;
		else
			t->prev->next = t->next;
		if (t->next != NULL)
			t->next->prev = t->prev;
		sub = heap_merge_pairs(t->child);
		l->root = heap_meld(l->root, sub);
	}
	t->child = t->next = t->prev = NULL;
	t->armed = false;
	l->ntimers--;
}

/*
 * Program the timerfd for the heap's root, but only when that is earlier
 * than what it holds: a root that went (a timer cancelled or moved later,
 * as a client's idle timer is at each of its requests) leaves the timerfd
 * early, and its firing finds nothing due and programs it then.  One
 * early wakeup instead of a timerfd_settime at every cancel: with a timer
 * or two per request, those were a syscall a request.
 */
static void
loop_rearm(struct loop *l)
{
	struct itimerspec its;
	uint64_t when;

	if (l->root == NULL || (l->armed != 0 && l->root->deadline >= l->armed))
		return;
	when = l->root->deadline;
	memset(&its, 0, sizeof(its));
	/* A zero it_value disarms, so a deadline of 0 means "now". */
	its.it_value.tv_sec = (time_t)(when / 1000);
	its.it_value.tv_nsec = (long)(when % 1000) * 1000000;
	if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
		its.it_value.tv_nsec = 1;
	/* Cannot fail for a valid timerfd and an in-range value. */
	timerfd_settime(l->timerfd, TFD_TIMER_ABSTIME, &its, NULL);
	l->armed = when != 0 ? when : 1;
}

void
loop_timer_init(struct loop_timer *t, loop_timer_cb cb, void *arg)
{
	memset(t, 0, sizeof(*t));
	t->cb = cb;
	t->arg = arg;
}

void
loop_timer_at(struct loop *l, struct loop_timer *t, uint64_t deadline)
{
	if (t->armed)
		heap_remove(l, t);
	t->deadline = deadline ? deadline : 1;
	t->seq = ++l->timer_seq;
	t->child = t->next = t->prev = NULL;
	t->armed = true;
	l->root = heap_meld(l->root, t);
	l->ntimers++;
	loop_rearm(l);
}

void
loop_timer_after(struct loop *l, struct loop_timer *t, uint64_t ms)
{
	loop_timer_at(l, t, now_ms() + ms);
}

void
loop_timer_cancel(struct loop *l, struct loop_timer *t)
{
	if (!t->armed)
		return;
	heap_remove(l, t);
	loop_rearm(l);
}

static void
loop_timerfd_cb(struct loop *l, struct loop_io *io, uint32_t events)
{
	uint64_t expirations;
	int budget;

	(void)events;
	if (read(io->fd, &expirations, sizeof(expirations)) == -1 &&
	    errno != EAGAIN)
		return;
	l->armed = 0;
	l->now = now_ms();
	/* Bounded: a callback re-arming itself for "now" can't spin us. */
	for (budget = 1024; budget > 0 && l->root != NULL; budget--) {
		struct loop_timer *t = l->root;

		if (t->deadline > l->now)
			break;
		heap_remove(l, t);
		t->cb(l, t);
		if (l->stopping)
			break;
	}
	loop_rearm(l);
	if (l->root != NULL && l->root->deadline <= l->now && budget == 0) {
		/* Leftover due timers: make the timerfd fire again at once. */
		l->armed = 0;
		loop_rearm(l);
	}
}

/* ---- deferred calls ---- */

void
loop_defer_init(struct loop_defer *d, loop_defer_cb cb, void *arg)
{
	memset(d, 0, sizeof(*d));
	d->cb = cb;
	d->arg = arg;
}

void
loop_defer(struct loop *l, struct loop_defer *d)
{
	if (d->queued)
		return;
	d->queued = true;
	d->next = NULL;
	*l->defer_tail = d;
	l->defer_tail = &d->next;
}

void
loop_defer_cancel(struct loop *l, struct loop_defer *d)
{
	struct loop_defer **pp;

	if (!d->queued)
		return;
	for (pp = &l->defer_head; *pp != NULL; pp = &(*pp)->next)
		if (*pp == d) {
			*pp = d->next;
			if (l->defer_tail == &d->next)
				l->defer_tail = pp;
			break;
		}
	d->queued = false;
	d->next = NULL;
}

/* Run what was deferred, including what those calls defer in turn, up to
 * a bound so a call that keeps re-queuing itself can't starve the loop. */
static void
loop_run_deferred(struct loop *l)
{
	struct loop_defer *d;
	int budget;

	for (budget = 4096; budget > 0 && (d = l->defer_head) != NULL;
	    budget--) {
		l->defer_head = d->next;
		if (l->defer_head == NULL)
			l->defer_tail = &l->defer_head;
		d->queued = false;
		d->next = NULL;
		d->cb(l, d);
		if (l->stopping)
			break;
	}
}

/* ---- signals ---- */

int
loop_signal(struct loop *l, int signo, loop_signal_cb cb, void *arg)
{
	sigset_t set;
	int i, fd;

	if (l->nsigs == LOOP_MAX_SIGNALS) {
		errno = ENOSPC;
		return -1;
	}
	l->sigs[l->nsigs].signo = signo;
	l->sigs[l->nsigs].cb = cb;
	l->sigs[l->nsigs].arg = arg;
	l->nsigs++;

	sigemptyset(&set);
	for (i = 0; i < l->nsigs; i++)
		sigaddset(&set, l->sigs[i].signo);
	if (sigprocmask(SIG_BLOCK, &set, NULL) == -1)
		return -1;
	fd = signalfd(l->sigfd, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd == -1)
		return -1;
	if (l->sigfd == -1) {
		l->sigfd = fd;
		return loop_add_io(l, &l->sig_io, fd, EPOLLIN, loop_sigfd_cb,
		    NULL);
	}
	return 0;
}

static void
loop_sigfd_cb(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct signalfd_siginfo si;
	int i, n;

	(void)events;
	for (n = 0; n < 64; n++) {
		if (read(io->fd, &si, sizeof(si)) != sizeof(si))
			return;
		for (i = 0; i < l->nsigs; i++)
			if ((int)si.ssi_signo == l->sigs[i].signo)
				l->sigs[i].cb(l, l->sigs[i].signo,
				    l->sigs[i].arg);
	}
}

/* ---- running ---- */

int
loop_run_once(struct loop *l, int timeout_ms)
{
	int n;

	/* Deferred work queued outside a callback (at start-up) runs first;
	 * with some queued, don't sleep. */
	loop_run_deferred(l);
	if (l->stopping)
		return 0;
	log_flush();		/* what this turn logged, before sleeping */
	n = epoll_wait(l->epfd, l->evs, LOOP_MAX_EVENTS,
	    l->defer_head != NULL ? 0 : timeout_ms);
	if (n == -1)
		return errno == EINTR ? 0 : -1;
	l->now = now_ms();
	l->nevs = n;
	for (l->cur = 0; l->cur < l->nevs; l->cur++) {
		struct loop_io *io = l->evs[l->cur].data.ptr;

		if (io == NULL)
			continue;	/* removed by an earlier callback */
		io->cb(l, io, l->evs[l->cur].events);
		if (l->stopping)
			break;
	}
	l->nevs = l->cur = 0;
	if (!l->stopping)
		loop_run_deferred(l);
	return n;
}

int
loop_run(struct loop *l)
{
	while (!l->stopping)
		if (loop_run_once(l, -1) == -1)
			return -1;
	return l->exit_code;
}

void
loop_stop(struct loop *l, int exit_code)
{
	l->stopping = true;
	l->exit_code = exit_code;
}
