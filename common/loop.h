/*
 * The event loop every enid process runs: epoll for descriptors, one
 * timerfd behind a heap of timers with absolute deadlines, and signalfd for
 * signals.  Single-threaded; callbacks must not block.
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
	size_t		 slot;		/* heap index + 1; 0: not armed */
	loop_timer_cb	 cb;
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
	struct loop_timer	**heap;
	size_t			 nheap, heapcap;
	uint64_t		 armed;		/* deadline in the timerfd */
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

int	loop_init(struct loop *l);
void	loop_free(struct loop *l);
int	loop_add_io(struct loop *l, struct loop_io *io, int fd,
	    uint32_t events, loop_io_cb cb, void *arg);
int	loop_mod_io(struct loop *l, struct loop_io *io, uint32_t events);
void	loop_del_io(struct loop *l, struct loop_io *io);

void	loop_timer_init(struct loop_timer *t, loop_timer_cb cb, void *arg);
int	loop_timer_at(struct loop *l, struct loop_timer *t, uint64_t deadline);
int	loop_timer_after(struct loop *l, struct loop_timer *t, uint64_t ms);
void	loop_timer_cancel(struct loop *l, struct loop_timer *t);
static inline bool loop_timer_armed(const struct loop_timer *t)
{
	return t->slot != 0;
}

/* Block signo and deliver it through the loop.  Call before loop_run. */
int	loop_signal(struct loop *l, int signo, loop_signal_cb cb, void *arg);

/* Run until loop_stop(); returns the exit code given to it. */
int	loop_run(struct loop *l);
void	loop_stop(struct loop *l, int exit_code);
/* Run callbacks for at most timeout_ms (for tests and drivers). */
int	loop_run_once(struct loop *l, int timeout_ms);

#endif /* ENID_LOOP_H */
