/*
 * The event loop (see loop.h).  Timers live in a binary min-heap keyed on
 * their deadline; the timerfd is armed for the heap's root.  A descriptor
 * removed while its events are pending in the current batch is dropped from
 * the batch, so callbacks may free the objects of other descriptors.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "loop.h"

uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void	loop_timerfd_cb(struct loop *, struct loop_io *, uint32_t);
static void	loop_sigfd_cb(struct loop *, struct loop_io *, uint32_t);

int
loop_init(struct loop *l)
{
	memset(l, 0, sizeof(*l));
	l->sigfd = -1;
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
	free(l->heap);
	l->heap = NULL;
	l->nheap = l->heapcap = 0;
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

void
loop_del_io(struct loop *l, struct loop_io *io)
{
	int i;

	epoll_ctl(l->epfd, EPOLL_CTL_DEL, io->fd, NULL);
	for (i = l->cur; i < l->nevs; i++)
		if (l->evs[i].data.ptr == io)
			l->evs[i].data.ptr = NULL;
}

/* ---- timers ---- */

static void
heap_set(struct loop *l, size_t i, struct loop_timer *t)
{
	l->heap[i] = t;
	t->slot = i + 1;
}

static void
heap_up(struct loop *l, size_t i)
{
	struct loop_timer *t = l->heap[i];

	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (l->heap[parent]->deadline <= t->deadline)
			break;
		heap_set(l, i, l->heap[parent]);
		i = parent;
	}
	heap_set(l, i, t);
}

static void
heap_down(struct loop *l, size_t i)
{
	struct loop_timer *t = l->heap[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= l->nheap)
			break;
		if (c + 1 < l->nheap &&
		    l->heap[c + 1]->deadline < l->heap[c]->deadline)
			c++;
		if (t->deadline <= l->heap[c]->deadline)
			break;
		heap_set(l, i, l->heap[c]);
		i = c;
	}
	heap_set(l, i, t);
}

static void
heap_remove(struct loop *l, struct loop_timer *t)
{
	size_t i = t->slot - 1;
	struct loop_timer *last = l->heap[--l->nheap];

	t->slot = 0;
	if (last == t)
		return;
	heap_set(l, i, last);
	heap_up(l, i);
	heap_down(l, last->slot - 1);
}

static void
loop_rearm(struct loop *l)
{
	struct itimerspec its;
	uint64_t when;

	when = l->nheap ? l->heap[0]->deadline : 0;
	if (when == l->armed)
		return;
	memset(&its, 0, sizeof(its));
	if (when != 0) {
		/* A zero it_value disarms, so a deadline of 0 means "now". */
		its.it_value.tv_sec = (time_t)(when / 1000);
		its.it_value.tv_nsec = (long)(when % 1000) * 1000000;
		if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
			its.it_value.tv_nsec = 1;
	}
	timerfd_settime(l->timerfd, TFD_TIMER_ABSTIME, &its, NULL);
	l->armed = when;
}

void
loop_timer_init(struct loop_timer *t, loop_timer_cb cb, void *arg)
{
	memset(t, 0, sizeof(*t));
	t->cb = cb;
	t->arg = arg;
}

int
loop_timer_at(struct loop *l, struct loop_timer *t, uint64_t deadline)
{
	if (t->slot != 0)
		heap_remove(l, t);
	if (l->nheap == l->heapcap) {
		size_t cap = l->heapcap ? l->heapcap * 2 : 16;
		struct loop_timer **h = reallocarray(l->heap, cap, sizeof(*h));

		if (h == NULL)
			return -1;
		l->heap = h;
		l->heapcap = cap;
	}
	t->deadline = deadline ? deadline : 1;
	l->heap[l->nheap++] = t;
	heap_up(l, l->nheap - 1);
	loop_rearm(l);
	return 0;
}

int
loop_timer_after(struct loop *l, struct loop_timer *t, uint64_t ms)
{
	return loop_timer_at(l, t, now_ms() + ms);
}

void
loop_timer_cancel(struct loop *l, struct loop_timer *t)
{
	if (t->slot == 0)
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
	for (budget = 1024; budget > 0 && l->nheap > 0; budget--) {
		struct loop_timer *t = l->heap[0];

		if (t->deadline > l->now)
			break;
		heap_remove(l, t);
		t->cb(l, t);
		if (l->stopping)
			break;
	}
	loop_rearm(l);
	if (l->nheap > 0 && l->heap[0]->deadline <= l->now && budget == 0) {
		/* Leftover due timers: make the timerfd fire again at once. */
		l->armed = 0;
		loop_rearm(l);
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

	n = epoll_wait(l->epfd, l->evs, LOOP_MAX_EVENTS, timeout_ms);
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
