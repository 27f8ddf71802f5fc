/*
 * The store's writer thread (writer.c): one record at a time written and
 * synced off the loop.  Only the store (store.c) uses it, and holds it.
 */
#ifndef ENID_WRITER_H
#define ENID_WRITER_H

#include <pthread.h>
#include <stdbool.h>

#include "journal.h"
#include "loop.h"

/* The record handed over is on disk, or failed (its error says). */
typedef void	(*writer_done_fn)(void *arg);

struct writer {
	struct loop		*loop;
	writer_done_fn		 done_fn;
	void			*done_arg;
	bool			 running;
	bool			 quit;		/* writer_stop */
	pthread_t		 thread;
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;
	struct ckpt_write	*job;		/* handed over, not yet done */
	int			 done[2];	/* the thread -> the loop */
	struct loop_io		 io;
};

/* No pipe, no thread: every record is written on the loop. */
void	writer_init(struct writer *w);
/* Before the sandbox: its pipe. */
void	writer_prepare(struct writer *w);
/* After the filter is on: the thread, which has done called on l's
 * thread when a record is written.  0, or -1: there is none, and records
 * are written on the loop. */
int	writer_start(struct writer *w, struct loop *l, writer_done_fn done,
	    void *arg);
/* Hand job over; false if there is no thread. */
bool	writer_submit(struct writer *w, struct ckpt_write *job);
/* The thread ends once its record, if any, is written (the daemon never
 * ends it: its tests do); the pipe is closed. */
void	writer_stop(struct writer *w);

#endif /* ENID_WRITER_H */
