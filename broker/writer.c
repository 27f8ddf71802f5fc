/*
 * The store's writer (store.c): one thread that writes and syncs the
 * journal record the loop formatted (ckpt_record_write), so that the loop
 * goes on accepting, parsing and talking to netd while a record's
 * fdatasync takes its time, instead of blocking every client behind the
 * disk.
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

#include "log.h"
#include "writer.h"

#define WRITER_STACK	(64 * 1024)	/* ckpt_record_write needs little */

static void *
writer_main(void *arg)
{
	struct writer *w = arg;
	struct ckpt_write *job;
	char c = 1;

	for (;;) {
		pthread_mutex_lock(&w->mu);
		while (w->job == NULL && !w->quit)
			pthread_cond_wait(&w->cv, &w->mu);
		job = w->job;
		pthread_mutex_unlock(&w->mu);
		if (job == NULL)
			break;		/* writer_stop */

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
		w->done_fn(w->done_arg);
}

void
writer_init(struct writer *w)
{
	memset(w, 0, sizeof(*w));
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	w->done[0] = w->done[1] = -1;
}

void
writer_prepare(struct writer *w)
{
	if (pipe2(w->done, O_NONBLOCK | O_CLOEXEC) == -1) {
		log_warn("checkpoint writer: pipe; records are written on the "
		    "loop");
		w->done[0] = w->done[1] = -1;
	}
}

int
writer_start(struct writer *w, struct loop *l, writer_done_fn done,
    void *arg)
{
	pthread_attr_t attr;
	int rc;

	w->loop = l;
	w->done_fn = done;
	w->done_arg = arg;
	if (w->done[0] == -1)
		return -1;
	if (loop_add_io(l, &w->io, w->done[0], EPOLLIN, writer_done_cb,
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
		loop_del_io(l, &w->io);
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
writer_submit(struct writer *w, struct ckpt_write *job)
{
	if (!w->running)
		return false;
	pthread_mutex_lock(&w->mu);
	w->job = job;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	return true;
}

void
writer_stop(struct writer *w)
{
	if (w->running) {
		pthread_mutex_lock(&w->mu);
		w->quit = true;
		pthread_cond_signal(&w->cv);
		pthread_mutex_unlock(&w->mu);
		pthread_join(w->thread, NULL);
		loop_del_io(w->loop, &w->io);
		w->running = false;
	}
	if (w->done[0] != -1) {
		close(w->done[0]);
		close(w->done[1]);
		w->done[0] = w->done[1] = -1;
	}
}
