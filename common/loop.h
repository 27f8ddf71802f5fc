/*
 * The event loop every enid process runs: epoll for descriptors, one
 * timerfd behind a heap of timers with absolute deadlines, and signalfd for
 * signals.  Single-threaded; callbacks must not block.
 *
 * Timers and deferred calls are embedded in their owners and linked in
 * place (an intrusive pairing heap, an intrusive list), so arming one never
 * allocates and cannot fail.
 */
#ifndef ENID_LOOP_H
#define ENID_LOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>

struct loop;
struct loop_io;
struct loop_timer;

typedef void (*loop_io_cb)(struct loop *, struct loop_io *, uint32_t events);
typedef void (*loop_timer_cb)(struct loop *, struct loop_timer *);
typedef void (*loop_signal_cb)(struct loop *, int signo, void *arg);

/* A watched descriptor; owned and placed by the caller (often embedded). */
struct loop_io {
	int		 fd;
	uint32_t	 events;
	loop_io_cb	 cb;
	void		*arg;
};

/* A timer; owned by the caller.  deadline is CLOCK_MONOTONIC in ms. */
struct loop_timer {
	uint64_t	 deadline;
	uint64_t	 seq;		/* arming order: equal deadlines FIFO */
	bool		 armed;
	/* pairing-heap links: first child, next sibling, and the parent
	 * (for a first child) or previous sibling */
	struct loop_timer *child, *next, *prev;
	loop_timer_cb	 cb;
	void		*arg;
};

/* A call to make once the current batch of events is handled, before the
 * loop sleeps again (e.g. one checkpoint write for many requests). */
struct loop_defer;
typedef void (*loop_defer_cb)(struct loop *, struct loop_defer *);
struct loop_defer {
	bool		 queued;
	struct loop_defer *next;
	loop_defer_cb	 cb;
	void		*arg;
};

#define LOOP_MAX_EVENTS		64
#define LOOP_MAX_SIGNALS	8

struct loop {
	int			 epfd;
	int			 timerfd;
	int			 sigfd;
	bool			 stopping;
	int			 exit_code;
	uint64_t		 now;		/* ms, updated each turn */
	struct loop_timer	*root;		/* the timer heap */
	size_t			 ntimers;
	uint64_t		 timer_seq;
	struct loop_defer	*defer_head, **defer_tail;
	uint64_t		 armed;		/* the timerfd's deadline, 0: none;
					   never after the root's */
	struct epoll_event	 evs[LOOP_MAX_EVENTS];
	int			 nevs, cur;
	struct {
		int		 signo;
		loop_signal_cb	 cb;
		void		*arg;
	}			 sigs[LOOP_MAX_SIGNALS];
	int			 nsigs;
	struct loop_io		 timer_io, sig_io;
};

uint64_t now_ms(void);			/* CLOCK_MONOTONIC, ms */
uint64_t now_us(void);			/* the same clock, us: latencies */

int	loop_init(struct loop *l);
void	loop_free(struct loop *l);
int	loop_add_io(struct loop *l, struct loop_io *io, int fd,
	    uint32_t events, loop_io_cb cb, void *arg);
int	loop_mod_io(struct loop *l, struct loop_io *io, uint32_t events);
void	loop_del_io(struct loop *l, struct loop_io *io);
/* Stop watching io and close its descriptor, with no epoll_ctl: only for
 * a descriptor that nothing else shares (no dup, and no process forked
 * while it was open), whose close takes it out of the epoll set. */
void	loop_close_io(struct loop *l, struct loop_io *io);

void	loop_timer_init(struct loop_timer *t, loop_timer_cb cb, void *arg);
/* (Re-)arm t; never fails.  A deadline of 0 means "as soon as possible". */
void	loop_timer_at(struct loop *l, struct loop_timer *t, uint64_t deadline);
void	loop_timer_after(struct loop *l, struct loop_timer *t, uint64_t ms);
void	loop_timer_cancel(struct loop *l, struct loop_timer *t);
static inline bool loop_timer_armed(const struct loop_timer *t)
{
	return t->armed;
}

void	loop_defer_init(struct loop_defer *d, loop_defer_cb cb, void *arg);
/* Queue d (once; queuing it again before it runs is a no-op). */
void	loop_defer(struct loop *l, struct loop_defer *d);
void	loop_defer_cancel(struct loop *l, struct loop_defer *d);

/* Block signo and deliver it through the loop.  Call before loop_run. */
int	loop_signal(struct loop *l, int signo, loop_signal_cb cb, void *arg);

/* Run until loop_stop(); returns the exit code given to it. */
int	loop_run(struct loop *l);
void	loop_stop(struct loop *l, int exit_code);
/* Run callbacks for at most timeout_ms (for tests and drivers). */
int	loop_run_once(struct loop *l, int timeout_ms);

#endif /* ENID_LOOP_H */
