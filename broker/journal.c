/*
 * The checkpoint's journal (see journal.h): records framed and checked,
 * replayed onto the snapshot; and the store, which decides for each save
 * between one record and a new snapshot and keeps the two files in step.
 *
 * Replay is pure (bytes in, checkpoint out) for the unit tests and the
 * fuzzer; the store's file work is thin around it and around
 * checkpoint.c's atomic write.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal.h"

/* The last byte is the format's version (JOURNAL_VERSION). */
static const uint8_t journal_magic[4] = { 0xe5, 0x4e, 0x4a,
    JOURNAL_VERSION };

/* ---- CRC-32, reflected, polynomial 0x04c11db7 ---- */

static uint32_t crc_table[256];
static bool crc_ready;

static void
crc_init(void)
{
	uint32_t c;
	int i, k;

	for (i = 0; i < 256; i++) {
		c = (uint32_t)i;
		for (k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
	crc_ready = true;
}

uint32_t
journal_crc32(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	if (!crc_ready)
		crc_init();
	crc = ~crc;
	while (len-- > 0)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

/* ---- framing ---- */

static void
put_le(uint8_t *p, uint64_t v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t
get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	int i;

	for (i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

void
journal_frame(uint8_t *rec, int64_t generation, uint64_t seq, size_t len)
{
	uint32_t crc;

	memcpy(rec, journal_magic, sizeof(journal_magic));
	put_le(rec + 4, (uint64_t)len, 4);
	put_le(rec + 8, (uint64_t)generation, 8);
	put_le(rec + 16, seq, 8);
	crc = journal_crc32(0, rec, 24);
	crc = journal_crc32(crc, rec + JOURNAL_HDR_LEN, len);
	put_le(rec + 24, crc, 4);
}

struct frame {
	size_t		 len;		/* of the payload */
	uint64_t	 generation;
	uint64_t	 seq;
};

enum whole {
	WHOLE,
	W_END,			/* nothing left */
	W_ZEROES,		/* a header's worth of zero bytes */
	W_SHORT,		/* less than a header left */
	W_MAGIC,		/* no record starts here */
	W_LENGTH,		/* one runs past the end */
	W_CRC,			/* one with a bad CRC */
	W_NEWER,		/* one of a newer format than ours */
};

/* Is there a whole record at off (<= len) in buf? */
static enum whole
whole_at(const uint8_t *buf, size_t len, size_t off, struct frame *f)
{
	static const uint8_t zeroes[JOURNAL_HDR_LEN];
	const uint8_t *p = buf + off;
	uint32_t crc;

	if (off == len)
		return W_END;
	if (len - off < JOURNAL_HDR_LEN)
		return W_SHORT;
	if (memcmp(p, journal_magic, 3) != 0 || p[3] < JOURNAL_VERSION)
		return memcmp(p, zeroes, sizeof(zeroes)) == 0 ? W_ZEROES :
		    W_MAGIC;
	f->len = (size_t)get_le(p + 4, 4);
	if (f->len > len - off - JOURNAL_HDR_LEN)
		return W_LENGTH;
	crc = journal_crc32(0, p, 24);
	crc = journal_crc32(crc, p + JOURNAL_HDR_LEN, f->len);
	if (crc != (uint32_t)get_le(p + 24, 4))
		return W_CRC;
	/* Whole, so no flipped bit or torn write: a newer enid's. */
	if (p[3] > JOURNAL_VERSION)
		return W_NEWER;
	f->generation = get_le(p + 8, 8);
	f->seq = get_le(p + 16, 8);
	return WHOLE;
}

static void
say_stop(struct journal_replay *r, enum whole w, size_t off, size_t left,
    const struct frame *f, int64_t generation, uint64_t seq)
{
	char *s = r->stop;
	size_t n = sizeof(r->stop);

	switch (w) {
	case WHOLE:
		if (f->generation != (uint64_t)generation)
			snprintf(s, n, "a record of generation %llu at offset "
			    "%zu (stale)", (unsigned long long)f->generation,
			    off);
		else
			snprintf(s, n, "record %llu at offset %zu where %llu "
			    "was next (stale)", (unsigned long long)f->seq,
			    off, (unsigned long long)seq);
		break;
	case W_END:
		snprintf(s, n, "the end of the file at offset %zu", off);
		break;
	case W_ZEROES:
		snprintf(s, n, "unwritten space at offset %zu", off);
		break;
	case W_SHORT:
		snprintf(s, n, "%zu bytes at offset %zu, too few for a record",
		    left, off);
		break;
	case W_MAGIC:
		snprintf(s, n, "no record at offset %zu", off);
		break;
	case W_LENGTH:
		snprintf(s, n, "a record at offset %zu running past the end "
		    "(torn)", off);
		break;
	case W_CRC:
		snprintf(s, n, "a record at offset %zu with a bad CRC (torn)",
		    off);
		break;
	case W_NEWER:
		snprintf(s, n, "a record at offset %zu of a newer format",
		    off);
		break;
	}
}

int64_t
journal_max_generation(const uint8_t *buf, size_t len, size_t *at)
{
	const uint8_t *p;
	struct frame f;
	int64_t max = -1, g;
	size_t off = 0;

	while (off + JOURNAL_HDR_LEN <= len &&
	    (p = memchr(buf + off, journal_magic[0],
	    len - off - JOURNAL_HDR_LEN + 1)) != NULL) {
		off = (size_t)(p - buf);
		if (whole_at(buf, len, off, &f) == WHOLE) {
			g = f.generation > (uint64_t)CKPT_MAX_GENERATION ?
			    CKPT_MAX_GENERATION + 1 : (int64_t)f.generation;
			if (g > max) {
				max = g;
				*at = off;
			}
		}
		off++;
	}
	return max;
}

int
journal_replay(struct checkpoint *c, const uint8_t *buf, size_t len,
    struct journal_replay *r, char *err, size_t errlen)
{
	struct ckpt_diff d;
	struct frame f;
	enum whole w;
	char cause[512];
	size_t off = 0;
	uint64_t seq = 0;
	int rc;

	memset(r, 0, sizeof(*r));
	r->max_generation = -1;
	checkpoint_sort(c);
	for (;;) {
		w = whole_at(buf, len, off, &f);
		if (w == W_NEWER) {
			snprintf(err, errlen, "the record at offset %zu is of "
			    "format version %u, newer than the %u this enid "
			    "reads (a newer enid wrote it)", off,
			    (unsigned)buf[off + 3], (unsigned)JOURNAL_VERSION);
			r->end = off;
			return CKPT_NEWER;
		}
		if (w != WHOLE || f.generation != (uint64_t)c->generation ||
		    f.seq != seq) {
			say_stop(r, w, off, len - off, &f, c->generation, seq);
			break;
		}
		rc = ckpt_diff_parse((const char *)buf + off + JOURNAL_HDR_LEN,
		    f.len, &d, cause, sizeof(cause));
		if (rc == 0) {
			rc = checkpoint_apply(c, &d, cause, sizeof(cause));
			ckpt_diff_free(&d);
		}
		if (rc != 0) {
			snprintf(err, errlen, "record %llu at offset %zu: %s",
			    (unsigned long long)seq, off, cause);
			r->end = off;
			return rc == -2 ? -2 : -1;
		}
		off += JOURNAL_HDR_LEN + f.len;
		seq++;
		r->records++;
	}
	r->end = off;
	r->max_generation = journal_max_generation(buf, len, &r->newer_at);
	return 0;
}

/* ---- the store ---- */

/*
 * A journal whose records are not to be replayed goes out of the way; if
 * it cannot, it is made again (zeroes) before the next snapshot is
 * written, so that none of its records can pass for one of that
 * snapshot's generation.
 */
static void
journal_aside(struct ckpt_store *s, int dirfd, char *note, size_t notelen)
{
	if (ckpt_move_aside(dirfd, CKPT_JOURNAL_FILE, note, notelen) == -1)
		s->renew = true;
}

/* Both files out of the way after a corrupt journal; err names the cause
 * and where each went. */
static void
both_aside(struct ckpt_store *s, int dirfd, const char *cause, char *err,
    size_t errlen)
{
	char jnote[300], snote[300];

	journal_aside(s, dirfd, jnote, sizeof(jnote));
	ckpt_move_aside(dirfd, CKPT_FILE, snote, sizeof(snote));
	snprintf(err, errlen, "%s: %s; %s, and %s: %s", CKPT_JOURNAL_FILE,
	    cause, jnote, CKPT_FILE, snote);
}

/* What an operator can do about a newer format, after err's cause. */
static void
newer_advice(char *err, size_t errlen)
{
	size_t n = strlen(err);

	snprintf(err + n, errlen - n, "; nothing was changed.  Run the newer "
	    "enid that wrote it, or, to give up what it records, move %s and "
	    "%s out of the state directory by hand: the next start rebuilds "
	    "the pods from the kernel's rules, and running pods keep their "
	    "addresses, held as enid-recovered-ADDRESS until a CNI GC "
	    "releases them", CKPT_FILE, CKPT_JOURNAL_FILE);
}

int64_t
ckpt_store_version(int dirfd)
{
	char cause[512], local[512], *text;
	int64_t version;
	size_t len;

	if (ckpt_read_file(dirfd, CKPT_FILE, CKPT_MAX_BYTES, &text, &len,
	    cause, sizeof(cause), local, sizeof(local)) != 0)
		return 0;
	if (checkpoint_peek_version(text, len, &version) != 0)
		version = 0;
	free(text);
	return version;
}

int
journal_newer_first(const uint8_t *buf, size_t len, unsigned *version)
{
	struct frame f;

	if (whole_at(buf, len, 0, &f) != W_NEWER)
		return 0;
	*version = buf[3];
	return 1;
}

/*
 * As root, before the privilege drop, on files the unprivileged broker
 * writes: so no JSON parser here, only the snapshot's leading version
 * and the journal's first record's header and CRC.  What these miss (a
 * newer file of another shape) the sandboxed load refuses in turn.
 */
int
ckpt_store_probe(int dirfd, char *err, size_t errlen)
{
	char cause[512], local[512], *text;
	int64_t version;
	unsigned jversion;
	size_t len;
	int newer;

	/* Anything but a newer format is the load's to find and say. */
	if (ckpt_read_file(dirfd, CKPT_FILE, CKPT_MAX_BYTES, &text, &len,
	    cause, sizeof(cause), local, sizeof(local)) != 0)
		return 0;
	newer = checkpoint_peek_version(text, len, &version) == 0 &&
	    version > CKPT_VERSION;
	free(text);
	if (newer) {
		snprintf(err, errlen, "%s: version: format version %lld, newer "
		    "than the %d this enid reads (a newer enid wrote it); left "
		    "in place", CKPT_FILE, (long long)version, CKPT_VERSION);
		newer_advice(err, errlen);
		return CKPT_NEWER;
	}
	if (ckpt_read_file(dirfd, CKPT_JOURNAL_FILE, CKPT_JOURNAL_MAX, &text,
	    &len, cause, sizeof(cause), local, sizeof(local)) != 0)
		return 0;
	newer = journal_newer_first((uint8_t *)text, len, &jversion);
	free(text);
	if (!newer)
		return 0;
	snprintf(err, errlen, "%s: the record at offset 0 is of format "
	    "version %u, newer than the %u this enid reads (a newer enid "
	    "wrote it); left in place", CKPT_JOURNAL_FILE, jversion,
	    (unsigned)JOURNAL_VERSION);
	newer_advice(err, errlen);
	return CKPT_NEWER;
}

int
ckpt_store_load(struct ckpt_store *s, int dirfd, size_t journal_size,
    struct checkpoint *c, char *note, size_t notelen, char *err,
    size_t errlen)
{
	struct journal_replay r;
	char cause[600], aside[300], *buf = NULL;
	size_t len = 0, at;
	int rc, jrc;

	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->size = journal_size;
	s->compact = true;
	note[0] = '\0';

	rc = checkpoint_load(dirfd, CKPT_FILE, c, err, errlen);
	if (rc == -2)
		return -2;
	if (rc == CKPT_NEWER) {
		newer_advice(err, errlen);
		return CKPT_NEWER;
	}
	jrc = ckpt_read_file(dirfd, CKPT_JOURNAL_FILE, CKPT_JOURNAL_MAX, &buf,
	    &len, cause, sizeof(cause), err, errlen);
	if (jrc == -2) {
		checkpoint_free(c);
		return -2;
	}
	if (rc == -1) {
		/* the snapshot is gone aside: its journal goes with it */
		if (jrc != 1) {
			size_t n = strlen(err);

			journal_aside(s, dirfd, aside, sizeof(aside));
			snprintf(err + n, errlen - n, "; %s: %s",
			    CKPT_JOURNAL_FILE, aside);
		}
		free(buf);
		s->loaded = true;
		return -1;
	}
	if (rc == 1) {
		/*
		 * A journal without its snapshot: its records apply to
		 * nothing.  Out of the way if it holds any, so none can pass
		 * for one of the snapshot written next.
		 */
		if (jrc == -1 || (jrc == 0 && journal_max_generation(
		    (uint8_t *)buf, len, &at) >= 0)) {
			journal_aside(s, dirfd, aside, sizeof(aside));
			snprintf(note, notelen, "%s without %s: ignored; %s",
			    CKPT_JOURNAL_FILE, CKPT_FILE, aside);
		}
		free(buf);
		s->loaded = true;
		return 1;
	}

	if (jrc == -1) {
		both_aside(s, dirfd, cause, err, errlen);
		checkpoint_free(c);
		s->loaded = true;
		return -1;
	}
	if (jrc == 1) {
		checkpoint_sort(c);
		snprintf(note, notelen, "no %s", CKPT_JOURNAL_FILE);
	} else {
		rc = journal_replay(c, (uint8_t *)buf, len, &r, cause,
		    sizeof(cause));
		free(buf);
		if (rc == -2 || rc == CKPT_NEWER) {
			snprintf(err, errlen, "%s: %s; left in place",
			    CKPT_JOURNAL_FILE, cause);
			if (rc == CKPT_NEWER)
				newer_advice(err, errlen);
			checkpoint_free(c);
			return rc;
		}
		if (rc == 0 && r.max_generation > c->generation) {
			snprintf(cause, sizeof(cause), "a record of generation "
			    "%lld at offset %zu is newer than %s's %lld (the "
			    "snapshot was replaced or lost)",
			    (long long)r.max_generation, r.newer_at,
			    CKPT_FILE, (long long)c->generation);
			rc = -1;
		}
		if (rc == -1) {
			both_aside(s, dirfd, cause, err, errlen);
			checkpoint_free(c);
			s->loaded = true;
			return -1;
		}
		snprintf(note, notelen, "generation %lld, %zu journal record%s "
		    "replayed, then %s", (long long)c->generation, r.records,
		    r.records == 1 ? "" : "s", r.stop);
	}
	s->generation = c->generation;
	s->loaded = true;
	return 0;
}

/* A new journal of zeroes in place of the one there (atomically). */
static int
journal_renew(struct ckpt_store *s, int dirfd, char *err, size_t errlen)
{
	char *zeroes;
	int rc;

	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	if ((zeroes = calloc(1, s->size)) == NULL) {
		snprintf(err, errlen, "%s: out of memory", CKPT_JOURNAL_FILE);
		return -1;
	}
	rc = checkpoint_write(dirfd, CKPT_JOURNAL_FILE, zeroes, s->size, err,
	    errlen);
	free(zeroes);
	if (rc == 0)
		s->renew = false;
	return rc;
}

/* The journal open and whole, made (or made again) if it is not. */
static int
journal_ready(struct ckpt_store *s, int dirfd, char *err, size_t errlen)
{
	struct stat st;
	int fd, tries;

	if (s->fd >= 0)
		return 0;
	for (tries = 0; tries < 2; tries++) {
		fd = openat(dirfd, CKPT_JOURNAL_FILE, O_RDWR | O_CLOEXEC |
		    O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
		if (fd == -1 && errno != ENOENT && errno != ELOOP) {
			snprintf(err, errlen, "%s: opening: %s",
			    CKPT_JOURNAL_FILE, strerror(errno));
			return -1;
		}
		/* ours only if whole: a sparse or short one would need
		 * metadata written with each record */
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    st.st_size == (off_t)s->size &&
		    (uintmax_t)st.st_blocks * 512 >= (uintmax_t)s->size) {
			s->fd = fd;
			s->off = 0;
			s->seq = 0;
			return 0;
		}
		if (fd >= 0)
			close(fd);
		if (tries > 0 || journal_renew(s, dirfd, err, errlen) == -1)
			break;
	}
	if (tries == 0)
		return -1;
	snprintf(err, errlen, "%s: not a whole file of %zu bytes after it "
	    "was made", CKPT_JOURNAL_FILE, s->size);
	return -1;
}

void
ckpt_record_write(struct ckpt_write *w)
{
	size_t done = 0;
	ssize_t n;
	int rc;

	w->error = 0;
	while (done < w->len) {
		n = pwrite(w->fd, w->rec + done, w->len - done,
		    (off_t)(w->off + done));
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			w->error = n == 0 ? EIO : errno;
			w->synced = false;
			return;
		}
		done += (size_t)n;
	}
	while ((rc = fdatasync(w->fd)) == -1 && errno == EINTR)
		;
	if (rc == -1) {
		w->error = errno;
		w->synced = true;	/* written; the sync failed */
	}
}

/* next owns its strings (checkpoint_own, before it was written). */
static void
keep_durable(struct ckpt_store *s, struct checkpoint *next)
{
	checkpoint_free(&s->durable);
	s->durable = *next;
	memset(next, 0, sizeof(*next));
}

/*
 * One record of what changed since the files' state, framed in *w for
 * ckpt_record_write: 1 ready (next moved into w), 2 nothing changed, 0 it
 * does not fit, -1 failed (err).
 */
static int
record_prepare(struct ckpt_store *s, struct checkpoint *next,
    struct ckpt_write *w, char *err, size_t errlen)
{
	struct ckpt_diff d;
	uint8_t *rec;
	size_t len;

	if (ckpt_diff_make(&s->durable, next, &d) == -1) {
		snprintf(err, errlen, "%s: out of memory", CKPT_JOURNAL_FILE);
		return -1;
	}
	if (ckpt_diff_empty(&d)) {
		ckpt_diff_free(&d);
		return 2;
	}
	rec = (uint8_t *)ckpt_diff_format(&d, JOURNAL_HDR_LEN, &len);
	ckpt_diff_free(&d);
	if (rec == NULL) {
		if (errno == EFBIG)
			return 0;
		snprintf(err, errlen, "%s: formatting a record: %s",
		    CKPT_JOURNAL_FILE, strerror(errno));
		return -1;
	}
	if (s->size - s->off < JOURNAL_HDR_LEN ||
	    len > s->size - s->off - JOURNAL_HDR_LEN) {
		free(rec);
		return 0;
	}
	/* next is kept once written: its strings its own first, so that
	 * nothing can fail after the write (and the pods it borrowed them
	 * from may change meanwhile) */
	if (checkpoint_own(next) == -1) {
		free(rec);
		snprintf(err, errlen, "%s: out of memory", CKPT_JOURNAL_FILE);
		return -1;
	}
	journal_frame(rec, s->generation, s->seq, len);
	memset(w, 0, sizeof(*w));
	w->fd = s->fd;
	w->rec = rec;
	w->len = JOURNAL_HDR_LEN + len;
	w->off = s->off;
	w->next = *next;
	memset(next, 0, sizeof(*next));
	s->writing = true;
	return 1;
}

int
ckpt_store_finish(struct ckpt_store *s, struct ckpt_write *w, char *err,
    size_t errlen)
{
	s->writing = false;
	free(w->rec);
	w->rec = NULL;
	if (w->error != 0) {
		snprintf(err, errlen, "%s: %s the record at offset %zu: %s",
		    CKPT_JOURNAL_FILE, w->synced ? "syncing" : "writing",
		    w->off, strerror(w->error));
		checkpoint_free(&w->next);
		/* what the file holds now is unknown: a snapshot next, and
		 * the journal opened (and checked) again */
		close(s->fd);
		s->fd = -1;
		s->compact = true;
		return -1;
	}
	s->off += w->len;
	s->seq++;
	keep_durable(s, &w->next);
	return 0;
}

static int
save_snapshot(struct ckpt_store *s, int dirfd, struct checkpoint *next,
    char *warn, size_t warnlen, char *err, size_t errlen)
{
	char cause[512];
	char *text;
	size_t len;

	if (s->generation >= CKPT_MAX_GENERATION) {
		snprintf(err, errlen, "%s: no generation after %lld",
		    CKPT_FILE, (long long)s->generation);
		return -1;
	}
	/* taken even if the write fails: a generation is never reused */
	next->generation = ++s->generation;
	s->compact = true;
	if (s->renew && journal_renew(s, dirfd, err, errlen) == -1)
		return -1;
	if ((text = checkpoint_format(next, &len)) == NULL) {
		if (errno == EINVAL && checkpoint_check(next, cause,
		    sizeof(cause)) == -1)
			snprintf(err, errlen, "%s: refused by its own rules: %s",
			    CKPT_FILE, cause);
		else
			snprintf(err, errlen, "%s: formatting: %s", CKPT_FILE,
			    strerror(errno));
		return -1;
	}
	/* as in record_prepare: kept once written */
	if (checkpoint_own(next) == -1) {
		free(text);
		snprintf(err, errlen, "%s: out of memory", CKPT_FILE);
		return -1;
	}
	if (checkpoint_write(dirfd, CKPT_FILE, text, len, err, errlen) == -1) {
		free(text);
		return -1;
	}
	free(text);
	/* every record in the journal is stale now */
	s->off = 0;
	s->seq = 0;
	s->compact = false;
	if (journal_ready(s, dirfd, warn, warnlen) == -1) {
		size_t n = strlen(warn);

		snprintf(warn + n, warnlen - n, "; the checkpoint is saved "
		    "whole each time until it can be used");
		s->compact = true;
	}
	return 0;
}

int
ckpt_store_prepare(struct ckpt_store *s, int dirfd, struct checkpoint *next,
    struct ckpt_write *w, enum ckpt_saved *saved, char *warn, size_t warnlen,
    char *err, size_t errlen)
{
	char cause[512];
	int rc;

	*saved = CKPT_SAVED_NOTHING;
	warn[0] = '\0';
	if (!s->loaded || s->writing) {
		snprintf(err, errlen, s->writing ? "a record is being written "
		    "(bug)" : "the checkpoint was not read back yet");
		checkpoint_free(next);
		return -1;
	}
	checkpoint_sort(next);
	next->generation = s->generation;
	if (!s->compact && s->fd >= 0 &&
	    strcmp(s->durable.instance_id, next->instance_id) == 0) {
		ckpt_cooling_settle(&s->durable, next);
		/* nothing goes on disk that would not load again */
		if (checkpoint_check(next, cause, sizeof(cause)) == -1) {
			snprintf(err, errlen, "%s: refused by its own rules: %s",
			    CKPT_FILE, cause);
			checkpoint_free(next);
			return -1;
		}
		rc = record_prepare(s, next, w, err, errlen);
		if (rc == -1) {
			checkpoint_free(next);
			return -1;
		}
		if (rc == 2) {
			checkpoint_free(next);
			return 0;
		}
		if (rc == 1) {
			*saved = CKPT_SAVED_RECORD;
			return 0;
		}
	}
	if (save_snapshot(s, dirfd, next, warn, warnlen, err, errlen) == -1) {
		checkpoint_free(next);
		return -1;
	}
	keep_durable(s, next);
	*saved = CKPT_SAVED_SNAPSHOT;
	return 0;
}

int
ckpt_store_save(struct ckpt_store *s, int dirfd, struct checkpoint *next,
    enum ckpt_saved *saved, char *warn, size_t warnlen, char *err,
    size_t errlen)
{
	struct ckpt_write w;

	if (ckpt_store_prepare(s, dirfd, next, &w, saved, warn, warnlen, err,
	    errlen) == -1)
		return -1;
	if (*saved != CKPT_SAVED_RECORD)
		return 0;
	ckpt_record_write(&w);
	return ckpt_store_finish(s, &w, err, errlen);
}

void
ckpt_store_close(struct ckpt_store *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	checkpoint_free(&s->durable);
	s->loaded = false;
}
