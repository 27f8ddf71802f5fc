/*
 * The broker's store (store.h): the state directory's snapshot and
 * journal (journal.c, checkpoint.c), the writer thread (writer.c), and the
 * answers that wait for a save.
 *
 * Whatever changes durable state marks the store (store_mark), which
 * defers the save to the end of the loop turn: ADDs and DELs that finish
 * in the same turn share one write.  The save asks the layer above for the
 * whole record (the build function given to store_new), and
 * ckpt_store_prepare compares it with what the files hold: nothing to
 * write; one journal record, handed to the writer thread; or a snapshot,
 * written at once on the loop.  One record is at the writer at a time, so
 * the journal's order is the loop's; what changes meanwhile goes in the
 * next.
 *
 * Answers wait in three lists: those for the next save (wait), those for
 * the record at the writer (writing), those whose save is on disk (done),
 * which are sent at the end of the turn.  When a write fails, the answers
 * waiting for it get "internal" (try again), the next save is a whole
 * snapshot, and it is retried after STORE_RETRY_MS.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <json-c/json.h>

#include "enid.h"
#include "journal.h"
#include "log.h"
#include "store.h"
#include "writer.h"

#define STORE_RETRY_MS	1000

/* An answer held back until the save that makes it true is on disk. */
struct store_reply {
	TAILQ_ENTRY(store_reply) entry;
	struct jref		 ref;
	struct json_object	*answer;	/* or, when NULL, text */
	size_t			 textlen;
	char			 text[];	/* an ok answer, formatted */
};
TAILQ_HEAD(reply_list, store_reply);

struct store {
	struct broker		*b;
	store_build_fn		 build;
	store_saved_fn		 saved;
	int			 dirfd;		/* the state directory */
	struct ckpt_store	 files;		/* snapshot and journal */
	struct ckpt_write	 write;		/* at the writer: files.writing */
	struct writer		 writer;
	bool			 dirty;
	struct loop_defer	 flush;
	struct loop_timer	 retry;
	struct reply_list	 wait;		/* for the next save */
	struct reply_list	 writing;	/* for the record at the writer */
	struct reply_list	 done;		/* on disk: answered as the */
	struct loop_defer	 answer_done;	/* turn ends (answer_done) */
	/* Saves are numbered as they start: save_seq is the last started,
	 * saved_seq the last after which all was on disk. */
	uint64_t		 save_seq, saved_seq;
	struct store_stats	 stats;
};

static void	store_flush(struct loop *, struct loop_defer *);
static void	store_retry(struct loop *, struct loop_timer *);
static void	answer_done(struct loop *, struct loop_defer *);

int
store_probe(int dirfd, bool *ipv6, char *err, size_t errlen)
{
	*ipv6 = ckpt_store_version(dirfd) > CKPT_VERSION_IPV4;
	return ckpt_store_probe(dirfd, err, errlen) == CKPT_NEWER ?
	    CKPT_NEWER : 0;
}

struct store *
store_new(struct broker *b, store_build_fn build, store_saved_fn saved)
{
	struct store *st;

	if ((st = calloc(1, sizeof(*st))) == NULL)
		fatal("store: out of memory");
	st->b = b;
	st->build = build;
	st->saved = saved;
	st->dirfd = -1;
	st->files.fd = -1;
	writer_init(&st->writer);
	TAILQ_INIT(&st->wait);
	TAILQ_INIT(&st->writing);
	TAILQ_INIT(&st->done);
	loop_defer_init(&st->flush, store_flush, st);
	loop_defer_init(&st->answer_done, answer_done, st);
	loop_timer_init(&st->retry, store_retry, st);
	return st;
}

void
store_open(struct store *st, int dirfd)
{
	st->dirfd = dirfd;
	writer_prepare(&st->writer);
}

static void	store_written(void *arg);

void
store_start(struct store *st)
{
	(void)writer_start(&st->writer, &st->b->loop, store_written, st);
}

/* Answers still waiting are dropped, unanswered: their clients see the
 * connection close, as at any exit. */
static void
drop_replies(struct reply_list *list)
{
	struct store_reply *d;

	while ((d = TAILQ_FIRST(list)) != NULL) {
		TAILQ_REMOVE(list, d, entry);
		json_object_put(d->answer);
		free(d);
	}
}

void
store_free(struct store *st)
{
	if (st == NULL)
		return;
	writer_stop(&st->writer);
	if (st->files.writing) {
		char err[512];

		(void)ckpt_store_finish(&st->files, &st->write, err,
		    sizeof(err));
	}
	loop_defer_cancel(&st->b->loop, &st->flush);
	loop_defer_cancel(&st->b->loop, &st->answer_done);
	loop_timer_cancel(&st->b->loop, &st->retry);
	drop_replies(&st->wait);
	drop_replies(&st->writing);
	drop_replies(&st->done);
	ckpt_store_close(&st->files);
	free(st);
}

int
store_restore(struct store *st, struct checkpoint *c, char *note,
    size_t notelen, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	if (st->dirfd < 0) {
		if (notelen > 0)
			note[0] = '\0';
		if (errlen > 0)
			err[0] = '\0';
		return 1;
	}
	return ckpt_store_load(&st->files, st->dirfd, CKPT_JOURNAL_SIZE, c,
	    note, notelen, err, errlen);
}

void
store_mark(struct store *st)
{
	st->dirty = true;
	loop_defer(&st->b->loop, &st->flush);
}

uint64_t
store_next_save(const struct store *st)
{
	return st->save_seq + 1;
}

bool
store_saved_by(const struct store *st, uint64_t n)
{
	return st->saved_seq >= n;
}

void
store_stats(const struct store *st, struct store_stats *s)
{
	*s = st->stats;
}

/* ---- answers that wait ---- */

/* Queue ref's ok answer, already formatted, on list (a save's). */
static void
queue_text(struct reply_list *list, struct jref *ref, const char *text,
    size_t len)
{
	struct store_reply *d;

	if ((d = calloc(1, sizeof(*d) + len)) == NULL)
		fatal("out of memory");
	d->ref = *ref;
	ref->server = NULL;
	memcpy(d->text, text, len);
	d->textlen = len;
	TAILQ_INSERT_TAIL(list, d, entry);
}

void
store_reply(struct store *st, struct jref *ref, struct json_object *answer)
{
	struct store_reply *d;

	if (ref->server == NULL) {
		json_object_put(answer);
		return;
	}
	if ((d = calloc(1, sizeof(*d))) == NULL)
		fatal("out of memory");
	d->ref = *ref;
	ref->server = NULL;
	d->answer = answer;
	TAILQ_INSERT_TAIL(&st->wait, d, entry);
	store_mark(st);
}

void
store_reply_text(struct store *st, struct jref *ref, const char *text,
    size_t len)
{
	if (ref->server == NULL)
		return;
	queue_text(&st->wait, ref, text, len);
	store_mark(st);
}

/* A save that is pending (marked, or at the writer) may be the one that
 * makes the answer true. */
void
store_reply_after_pending(struct store *st, struct jref *ref,
    const char *text, size_t len)
{
	if (st->dirty || st->files.writing)
		store_reply_text(st, ref, text, len);
	else
		jref_reply_ok_text(ref, text, len);
}

/*
 * A failed write leaves saved_seq behind, and the answer waits for the
 * save that writes the state again, whole.
 */
void
store_reply_after_save(struct store *st, struct jref *ref, uint64_t saved_by,
    const char *text, size_t len)
{
	if (ref->server == NULL)
		return;
	if (st->saved_seq >= saved_by) {
		/* Not from in here: the answer may let the client's next
		 * request in, which may change what its caller holds. */
		queue_text(&st->done, ref, text, len);
		loop_defer(&st->b->loop, &st->answer_done);
	} else if (st->files.writing && st->save_seq >= saved_by)
		queue_text(&st->writing, ref, text, len);
	else
		store_reply_text(st, ref, text, len);
}

/*
 * Answer what waited on list for a save: taken aside first, so that an
 * answer that lets its client's next request in (which may queue an
 * answer of its own) answers nothing before its own save.
 */
static void
flush_replies(struct reply_list *list, bool ok, const char *why)
{
	struct reply_list now = TAILQ_HEAD_INITIALIZER(now);
	struct store_reply *d;

	TAILQ_CONCAT(&now, list, entry);
	while ((d = TAILQ_FIRST(&now)) != NULL) {
		TAILQ_REMOVE(&now, d, entry);
		if (ok && d->answer == NULL)
			jref_reply_ok_text(&d->ref, d->text, d->textlen);
		else if (ok)
			jref_reply(&d->ref, d->answer);
		else {
			json_object_put(d->answer);
			jref_error(&d->ref, "internal", "the pool's state could "
			    "not be saved (%s); try again", why);
		}
		free(d);
	}
}

/* The answers whose save was on disk already (store_reply_after_save). */
static void
answer_done(struct loop *l, struct loop_defer *d)
{
	struct store *st = d->arg;

	(void)l;
	flush_replies(&st->done, true, NULL);
}

/* ---- saving ---- */

/* The save last started is on disk: what waited for it on list goes. */
static void
store_saved(struct store *st, struct reply_list *list)
{
	st->saved_seq = st->save_seq;
	flush_replies(list, true, NULL);
	st->saved(st->b);
}

/*
 * Make the state durable, then answer what waited for it: one journal
 * record of what changed since the last save, or a new snapshot when the
 * journal is full (journal.h).
 */
static void
store_flush(struct loop *l, struct loop_defer *d)
{
	struct store *st = d->arg;
	struct checkpoint c;
	enum ckpt_saved saved;
	char err[512], warn[512];

	(void)l;
	/* With a record at the writer, what changed since waits for it
	 * (store_written) and goes in the next. */
	if (!st->dirty || st->files.writing)
		return;
	if (st->dirfd < 0 || !st->files.loaded) {
		/* Nothing is assigned before the record is read back. */
		st->save_seq++;
		store_saved(st, &st->wait);
		return;
	}
	if (st->build(st->b, &c) == -1) {
		st->stats.failures++;
		log_errorx("checkpoint: out of memory; answers held back");
		flush_replies(&st->wait, false, "out of memory");
		loop_timer_after(&st->b->loop, &st->retry, STORE_RETRY_MS);
		return;
	}
	if (ckpt_store_prepare(&st->files, st->dirfd, &c, &st->write, &saved,
	    warn, sizeof(warn), err, sizeof(err)) == -1) {
		st->stats.failures++;
		log_errorx("checkpoint: %s; the answers waiting for it fail, "
		    "and it is retried", err);
		flush_replies(&st->wait, false, err);
		loop_timer_after(&st->b->loop, &st->retry, STORE_RETRY_MS);
		return;
	}
	if (warn[0] != '\0')
		log_warnx("checkpoint: %s", warn);
	st->dirty = false;
	st->save_seq++;
	if (saved == CKPT_SAVED_RECORD) {
		/* The answers waiting now are the ones this record makes
		 * true; those that come meanwhile wait for the next. */
		TAILQ_CONCAT(&st->writing, &st->wait, entry);
		if (!writer_submit(&st->writer, &st->write)) {
			ckpt_record_write(&st->write);
			store_written(st);
		}
		return;
	}
	if (saved != CKPT_SAVED_NOTHING)
		st->stats.writes++;
	if (saved == CKPT_SAVED_SNAPSHOT)
		st->stats.compactions++;
	store_saved(st, &st->wait);
	broker_trim_soon(st->b);
}

/* The writer's record is on disk, or failed: answer what waited for it. */
static void
store_written(void *arg)
{
	struct store *st = arg;
	char err[512];

	if (!st->files.writing)
		return;
	if (ckpt_store_finish(&st->files, &st->write, err, sizeof(err)) ==
	    -1) {
		st->stats.failures++;
		log_errorx("checkpoint: %s; the answers waiting for it fail, "
		    "and it is retried", err);
		flush_replies(&st->writing, false, err);
		/* the state it held is not on disk: saved again, whole */
		st->dirty = true;
		loop_timer_after(&st->b->loop, &st->retry, STORE_RETRY_MS);
		return;
	}
	st->stats.writes++;
	store_saved(st, &st->writing);
	broker_trim_soon(st->b);
	if (st->dirty)
		loop_defer(&st->b->loop, &st->flush);
}

static void
store_retry(struct loop *l, struct loop_timer *t)
{
	(void)l;
	store_mark(t->arg);
}
