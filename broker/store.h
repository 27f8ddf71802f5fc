/*
 * The broker's store: what makes the pool's record of assignments durable,
 * and the answers that wait for it (doc/design.md, "The store and its
 * promises").  The layer above marks the state dirty, hands over answers
 * that must not be sent before the state they tell of is on disk, and
 * reads back at start what was saved; how (a snapshot and a journal,
 * journal.h; the writer thread, writer.h) is the store's alone.
 *
 * What is saved is built by the layer above, through the function it
 * gives store_new, from the state of that moment: the store never reads
 * the pool.  Saves are numbered as they start; store_next_save names the
 * one that will hold a change made now, store_saved_by says whether it is
 * on disk.
 */
#ifndef ENID_STORE_H
#define ENID_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "checkpoint.h"

struct broker;
struct jref;
struct json_object;
struct store;

/* Fill *c with what is to be saved now; its strings may be borrowed, as
 * c is freed before anything can change them.  0, or -1: out of memory
 * (nothing saved; the answers waiting fail and the save is retried). */
typedef int	(*store_build_fn)(struct broker *b, struct checkpoint *c);
/* A save is on disk: store_saved_by has moved on. */
typedef void	(*store_saved_fn)(struct broker *b);

struct store_stats {
	uint64_t	 writes;	/* made durable: records, snapshots */
	uint64_t	 compactions;	/* snapshots written whole */
	uint64_t	 failures;
};

/*
 * As root, before anything else is touched: is the record in dirfd of a
 * newer format than this enid's (a downgrade)?  CKPT_NEWER and err names
 * the file, both versions and what an operator can do; else 0.  Reads
 * only, and parses no JSON.  *ipv6: the record is of the version that
 * may hold pods' IPv6 addresses (one an enid with ip_family dual or ipv6
 * wrote, or kept while such a pod was there).
 */
int	store_probe(int dirfd, bool *ipv6, char *err, size_t errlen);

/* The store, with nothing to save to until store_open. */
struct store *store_new(struct broker *b, store_build_fn build,
	    store_saved_fn saved);
/* Before the sandbox: the state directory (dirfd, kept) and what the
 * writer thread will need. */
void	store_open(struct store *st, int dirfd);
/* After the seccomp filter is on (the thread inherits it): the writer
 * thread.  Without it, records are written on the loop. */
void	store_start(struct store *st);
/* The writer thread ended (its record written), the journal closed, and
 * the answers still waiting dropped.  The daemon keeps its store to the
 * end; the unit tests end theirs.  The state directory stays open. */
void	store_free(struct store *st);

/*
 * Read back what was saved into *c (sorted, owning its strings), and be
 * ready to save.  As ckpt_store_load (journal.h): 1, nothing saved yet;
 * 0, *c holds it; -1, it was unusable and moved aside (err says where);
 * -2, a local reason (err), nothing moved; CKPT_NEWER, a newer format.
 * note says what was replayed.  Before it, saving answers at once (no
 * state is recorded before the record is read back).  With no state
 * directory: 1, and note and err empty.
 */
int	store_restore(struct store *st, struct checkpoint *c, char *note,
	    size_t notelen, char *err, size_t errlen);

/* The state changed: save it at the end of this loop turn, with whatever
 * else changes in the turn. */
void	store_mark(struct store *st);
/* The number of the save that holds what changes now. */
uint64_t store_next_save(const struct store *st);
/* Is save n, or a later one, on disk? */
bool	store_saved_by(const struct store *st, uint64_t n);

/*
 * Answers sent only once a save holds what they tell of.  On a failed
 * save each is answered "internal" instead.  A ref already answered (or
 * of a client gone) is ignored; ref is taken.
 *
 * store_reply: answer with the next save (it is marked); answer is taken.
 * store_reply_text: the same with an ok answer formatted as text.
 * store_reply_after_pending: at once, unless a save is marked or being
 * written, which may hold what the answer tells of: then with the next.
 * store_reply_after_save: once save saved_by (store_next_save when the
 * change was made) is on disk: at the end of this turn if it is, else
 * with it if it is being written, else with the next.
 */
void	store_reply(struct store *st, struct jref *ref,
	    struct json_object *answer);
void	store_reply_text(struct store *st, struct jref *ref,
	    const char *text, size_t len);
void	store_reply_after_pending(struct store *st, struct jref *ref,
	    const char *text, size_t len);
void	store_reply_after_save(struct store *st, struct jref *ref,
	    uint64_t saved_by, const char *text, size_t len);

void	store_stats(const struct store *st, struct store_stats *s);

#endif /* ENID_STORE_H */
