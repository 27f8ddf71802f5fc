/*
 * The checkpoint's journal, and the snapshot and the journal together as
 * the broker's durable store (checkpoint.h has the design).
 *
 * A record, little-endian, at the offset where the one before it ends:
 *
 *    0  magic       e5 4e 4a, then the format's version, 01 (never in
 *                   JSON text, so never found inside a payload)
 *    4  length      u32: of the payload
 *    8  generation  u64: the snapshot's that the record applies to
 *   16  sequence    u64: 0, 1, 2 ... within the generation
 *   24  crc         u32: CRC-32 (IEEE 802.3, zlib's) of bytes 0..23 and
 *                   of the payload
 *   28  payload     a struct ckpt_diff (ckpt_diff_format)
 *
 * The file is made whole before any record goes in (zeroes written, fsync,
 * renamed into place, the directory fsync'd), so a record overwrites
 * blocks that are already allocated and one fdatasync makes it durable
 * without a metadata update.  Replay starts at offset 0 and takes each
 * record that is whole (magic, a length within the file, the CRC), of the
 * snapshot's generation and next in sequence; the first that is not ends
 * it.  A torn tail is thus a write that was never acknowledged, and what
 * lies beyond (zeroes, older generations' records) is ignored.  A whole
 * record whose content does not apply means the files are corrupt.
 *
 * A whole record (length and CRC as above) whose magic names a newer
 * version is a newer enid's journal, which this one refuses (CKPT_NEWER)
 * where replay reaches it, never skips: so a later format must keep the
 * magic, the length at 4 and the CRC at 24 (of bytes 0..23 and the
 * payload), whatever else it changes.  With a bad CRC it is only torn.
 *
 * A new snapshot takes a generation greater than any found in the journal
 * (ckpt_store_load scans for them), so no record written before it can
 * ever pass for one of its own, even one an operator's copying left.
 */
#ifndef ENID_JOURNAL_H
#define ENID_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "checkpoint.h"

#define CKPT_JOURNAL_FILE	"checkpoint.journal"
#define JOURNAL_VERSION		1	/* the magic's last byte */
/* A few thousand records between snapshots at the usual few hundred bytes
 * each; written whole once (a few milliseconds) when made. */
#define CKPT_JOURNAL_SIZE	(1024 * 1024)
/* The largest journal file read: one from another build may differ. */
#define CKPT_JOURNAL_MAX	(64 * 1024 * 1024)
#define JOURNAL_HDR_LEN		28

/* Pure.  CRC-32 as zlib's crc32(): crc of the bytes so far (0 first). */
uint32_t journal_crc32(uint32_t crc, const void *buf, size_t len);

/* Pure.  Fill the JOURNAL_HDR_LEN bytes at rec, which the payload of len
 * bytes follows. */
void	journal_frame(uint8_t *rec, int64_t generation, uint64_t seq,
	    size_t len);

/* What a replay found. */
struct journal_replay {
	size_t		 records;	/* applied */
	size_t		 end;		/* offset after the last applied */
	int64_t		 max_generation; /* of any whole record; -1: none
					    (or replay failed) */
	size_t		 newer_at;	/* offset of one with the greatest */
	char		 stop[160];	/* why replay stopped, for the log */
};

/*
 * Pure.  Apply the records of c's generation in buf (len bytes of
 * journal) to c, in order, as described above; c is sorted first.  Also
 * finds the greatest generation of any whole record anywhere in buf.
 * 0; or -1: a whole record of the generation, next in sequence, did not
 * apply: err names it ("record 3 at offset 812: pods_added[0].ip: ...")
 * and c holds the records before it; or -2: out of memory (err says so);
 * or CKPT_NEWER: where replay would go on there is a record of a newer
 * format (err names its offset and both versions), c holds those before.
 */
int	journal_replay(struct checkpoint *c, const uint8_t *buf, size_t len,
	    struct journal_replay *r, char *err, size_t errlen);

/* Pure.  The greatest generation of a whole record anywhere in buf
 * (capped at CKPT_MAX_GENERATION + 1) and its offset in *at; -1 if none. */
int64_t	journal_max_generation(const uint8_t *buf, size_t len, size_t *at);

/* The broker's store: the snapshot and the journal. */
struct ckpt_store {
	bool			 loaded;	/* ckpt_store_load ran */
	int			 fd;		/* the journal, or -1 */
	size_t			 size;		/* the journal's, wanted */
	size_t			 off;		/* the next record goes here */
	uint64_t		 seq;		/* and has this number */
	int64_t			 generation;	/* the last snapshot's */
	bool			 compact;	/* the next save: a snapshot */
	bool			 writing;	/* between prepare and finish */
	bool			 renew;		/* a journal not to be trusted */
	/* sorted, owning its strings: what the files hold */
	struct checkpoint	 durable;
};

/*
 * Read the snapshot (CKPT_FILE) and replay the journal (CKPT_JOURNAL_FILE)
 * in dirfd into *c (sorted), and make s ready to save, journal_size its
 * journal's size from now on.  Like checkpoint_load: 1, there is no
 * snapshot (a journal alone is ignored: note says so); 0, *c holds the
 * record; -1, unusable: the snapshot, or the journal (not a regular file,
 * too large, a whole record that does not apply, a record of a generation
 * newer than the snapshot's), and both files were moved aside, err naming
 * the file and the cause; -2, a local reason (permissions, I/O, memory):
 * both left in place, err says why, and s is not ready; CKPT_NEWER, the
 * snapshot or the journal is of a newer format than this enid's: both
 * left in place, err names the file, both versions and what an operator
 * can do, and s is not ready.  note (possibly empty) says how many
 * records were replayed and why replay stopped.
 */
int	ckpt_store_load(struct ckpt_store *s, int dirfd, size_t journal_size,
	    struct checkpoint *c, char *note, size_t notelen, char *err,
	    size_t errlen);

/*
 * Read-only, and parsing no JSON (it runs as root, on files the
 * unprivileged broker writes): is the snapshot's leading "version"
 * (checkpoint_peek_version), or the journal's first record, of a newer
 * format than this enid's?  CKPT_NEWER, err as ckpt_store_load's; else
 * 0, whatever else is wrong with the files (the load, sandboxed, finds
 * it and says so, a newer format of another shape included).  Run at
 * start before anything is touched.
 */
int	ckpt_store_probe(int dirfd, char *err, size_t errlen);
/* As root, like ckpt_store_probe: the snapshot's leading "version", or 0
 * if there is none to read.  It speaks for the journal's records too:
 * the first save after a load is a snapshot, of CKPT_VERSION whenever
 * pods may have IPv6 (ip_family dual or ipv6, or such a pod held). */
int64_t	ckpt_store_version(int dirfd);

/* Pure.  1 and *version if buf starts with a whole record of a newer
 * format than JOURNAL_VERSION; else 0. */
int	journal_newer_first(const uint8_t *buf, size_t len,
	    unsigned *version);

enum ckpt_saved {
	CKPT_SAVED_NOTHING,		/* the files hold next already */
	CKPT_SAVED_RECORD,		/* one journal record */
	CKPT_SAVED_SNAPSHOT,		/* a new snapshot (compaction) */
};

/*
 * Make next durable (it is sorted, and taken: freed or kept; its strings
 * may be borrowed, as what is kept gets its own copy of them first).
 * Nothing if the files hold it already (its "written" aside); else one
 * journal record if it fits; else, or after a failure or at the first
 * save after a load, a snapshot of the next generation, the journal then
 * starting again at offset 0 (made or re-made first if it is missing or
 * not whole).  0 and *saved: next is durable; a problem with the journal
 * after the snapshot was written is in warn (the next save writes a
 * snapshot again).  -1: err says why; nothing may be acknowledged on it,
 * and the next save writes a snapshot.
 */
int	ckpt_store_save(struct ckpt_store *s, int dirfd, struct checkpoint *next,
	    enum ckpt_saved *saved, char *warn, size_t warnlen, char *err,
	    size_t errlen);

/*
 * The same in three steps, so that the record's write and sync can run
 * while the broker's loop goes on (another thread): ckpt_store_prepare
 * does what ckpt_store_save does up to the write, and when a record is
 * due (*saved CKPT_SAVED_RECORD) fills *w instead of writing it, next
 * taken into it; a snapshot, or nothing, is done at once as by
 * ckpt_store_save.  ckpt_record_write writes and syncs w's record and
 * touches nothing but *w.  ckpt_store_finish then makes w's state the
 * files' (0), or, when the write or sync failed, says so in err and has
 * the next save write a snapshot (-1); nothing may be acknowledged on it.
 * Between prepare and finish no other save may run.
 */
struct ckpt_write {
	int			 fd;
	uint8_t			*rec;		/* header and payload */
	size_t			 len;
	size_t			 off;		/* where it goes */
	struct checkpoint	 next;		/* the state it makes durable */
	int			 error;		/* errno; 0: on disk */
	bool			 synced;	/* with error: the sync failed */
};

int	ckpt_store_prepare(struct ckpt_store *s, int dirfd,
	    struct checkpoint *next, struct ckpt_write *w,
	    enum ckpt_saved *saved, char *warn, size_t warnlen, char *err,
	    size_t errlen);
void	ckpt_record_write(struct ckpt_write *w);
int	ckpt_store_finish(struct ckpt_store *s, struct ckpt_write *w,
	    char *err, size_t errlen);

void	ckpt_store_close(struct ckpt_store *s);

#endif /* ENID_JOURNAL_H */
