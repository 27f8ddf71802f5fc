/*
 * The checkpoint journal's writer: one thread that writes and syncs the
 * record the loop formatted (ckpt_record_write), so that the loop goes on
 * accepting, parsing and talking to netd for the 0.15 to 0.6 ms a record's
 * fdatasync takes, instead of blocking every client behind the disk.
 *
 * The thread touches nothing but the struct ckpt_write it is handed, and
 * the loop touches that only before handing it over and after the thread
 * said it is done (a byte on a pipe, which wakes the loop): one record at
 * a time, so the journal's order is the loop's.  Its pipe is made before
 * the broker's seccomp filter goes on (writer_prepare), the thread after
 * (writer_start), so that it inherits the filter, which allows clone for
 * threads only.  Should it not start, records are written on the loop, as
 * before.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "enid.h"
#include "log.h"

#define WRITER_STACK	(64 * 1024)	/* ckpt_record_write needs little */

struct writer {
	struct broker		*b;
	bool			 running;
	pthread_t		 thread;
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;
	struct ckpt_write	*job;		/* handed over, not yet done */
	int			 done[2];	/* the thread -> the loop */
	struct loop_io		 io;
};

static struct writer writer = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.cv = PTHREAD_COND_INITIALIZER,
	.done = { -1, -1 },
};

static void *
writer_main(void *arg)
{
	struct writer *w = arg;
	struct ckpt_write *job;
	char c = 1;

	for (;;) {
		pthread_mutex_lock(&w->mu);
		while (w->job == NULL)
			pthread_cond_wait(&w->cv, &w->mu);
		job = w->job;
		pthread_mutex_unlock(&w->mu);

		ckpt_record_write(job);

		pthread_mutex_lock(&w->mu);
		w->job = NULL;
		pthread_mutex_unlock(&w->mu);
		/* Cannot fail but for a signal: the pipe holds at most one
		 * byte, one record being in flight at a time. */
		while (write(w->done[1], &c, 1) == -1 && errno == EINTR)
			;
	}
	return NULL;
}

static void
writer_done_cb(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct writer *w = io->arg;
	char buf[16];
	bool idle;

	(void)l;
	(void)events;
	/* One read empties it: a byte per record, one record at a time (a
	 * byte left over would only wake the loop once more). */
	if (read(w->done[0], buf, sizeof(buf)) == -1 && errno != EAGAIN &&
	    errno != EINTR)
		log_warn("checkpoint writer: reading its pipe");
	pthread_mutex_lock(&w->mu);
	idle = w->job == NULL;
	pthread_mutex_unlock(&w->mu);
	if (idle)
		checkpoint_written(w->b);
}

void
writer_prepare(void)
{
	struct writer *w = &writer;

	if (pipe2(w->done, O_NONBLOCK | O_CLOEXEC) == -1) {
		log_warn("checkpoint writer: pipe; records are written on the "
		    "loop");
		w->done[0] = w->done[1] = -1;
	}
}

int
writer_start(struct broker *b)
{
	struct writer *w = &writer;
	pthread_attr_t attr;
	int rc;

	w->b = b;
	if (w->done[0] == -1)
		return -1;
	if (loop_add_io(&b->loop, &w->io, w->done[0], EPOLLIN, writer_done_cb,
	    w) == -1) {
		log_warn("checkpoint writer: watching its pipe; records are "
		    "written on the loop");
		goto fail;
	}
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, WRITER_STACK);
	rc = pthread_create(&w->thread, &attr, writer_main, w);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		loop_del_io(&b->loop, &w->io);
		log_warnx("checkpoint writer: no thread: %s; records are "
		    "written on the loop", strerror(rc));
		goto fail;
	}
	w->running = true;
	return 0;
fail:
	close(w->done[0]);
	close(w->done[1]);
	w->done[0] = w->done[1] = -1;
	return -1;
}

bool
writer_submit(struct ckpt_write *job)
{
	struct writer *w = &writer;

	if (!w->running)
		return false;
	pthread_mutex_lock(&w->mu);
	w->job = job;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	return true;
}
