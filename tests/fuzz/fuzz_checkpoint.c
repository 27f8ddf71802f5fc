/*
 * libFuzzer target for the broker's checkpoint: the snapshot's parser and
 * the journal's replay.  The input is a snapshot's text, then a NUL, then
 * journal bytes (no NUL: a snapshot alone).
 *
 * Snapshot: whatever parses must pass the rules on its own, format, and
 * parse again to the same struct and the same text; whatever does not
 * parse must leave the struct empty and say why.
 *
 * Journal, replayed onto a snapshot that parsed: the result passes the
 * rules whether replay finished or stopped at a record that did not apply
 * (which it names); replaying only the bytes it used gives the same; and
 * the difference from the snapshot to the result, formatted, parsed and
 * framed as one record, replays to the same result again.  As mutations
 * rarely keep a CRC right, the journal bytes are also taken as one
 * record's payload: a difference that parses applies, or is refused with
 * a reason and the snapshot unchanged.
 *
 * Strings: what parses holds its strings in one block, reserved before
 * parsing; what is applied owns its own (the difference is freed before
 * the result is read, so ASan sees a string still borrowed from it).
 *
 *   make fuzz-checkpoint [FUZZ_SECONDS=N]
 */
#include <errno.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "journal.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool
empty(const struct checkpoint *c)
{
	return c->npods == 0 && c->pods == NULL && c->ncooling == 0 &&
	    c->cooling == NULL && c->arena.blocks == NULL;
}

static void
copy(const struct checkpoint *c, struct checkpoint *d)
{
	if (checkpoint_copy(c, d) != 0)
		__builtin_trap();
}

static void
snapshot_round_trip(const struct checkpoint *c)
{
	struct checkpoint d;
	char err[256], *text, *again;
	size_t len, len2;

	if (checkpoint_check(c, err, sizeof(err)) != 0)
		__builtin_trap();
	if ((text = checkpoint_format(c, &len)) == NULL)
		__builtin_trap();
	if (strlen(text) != len)
		__builtin_trap();
	if (checkpoint_parse(text, len, &d, err, sizeof(err)) != 0)
		__builtin_trap();
	if (ckpt_arena_blocks(&d.arena) > 1)
		__builtin_trap();
	if (!checkpoint_equal(c, &d))
		__builtin_trap();
	if ((again = checkpoint_format(&d, &len2)) == NULL)
		__builtin_trap();
	if (len2 != len || memcmp(text, again, len) != 0)
		__builtin_trap();
	free(again);
	free(text);
	checkpoint_free(&d);
}

/* The difference from base to c as one record of c's generation:
 * replayed onto base, it gives c. */
static void
diff_as_record(const struct checkpoint *base, const struct checkpoint *c)
{
	struct checkpoint again;
	struct journal_replay r;
	struct ckpt_diff d, back;
	char err[512], *rec;
	size_t len;

	if (ckpt_diff_make(base, c, &d) != 0)
		__builtin_trap();
	rec = ckpt_diff_format(&d, JOURNAL_HDR_LEN, &len);
	ckpt_diff_free(&d);
	if (rec == NULL && errno == EFBIG)
		return;		/* larger than a record may be */
	if (rec == NULL)
		__builtin_trap();
	if (ckpt_diff_parse(rec + JOURNAL_HDR_LEN, len, &back, err,
	    sizeof(err)) != 0)
		__builtin_trap();
	ckpt_diff_free(&back);
	journal_frame((uint8_t *)rec, c->generation, 0, len);
	copy(base, &again);
	if (journal_replay(&again, (uint8_t *)rec, JOURNAL_HDR_LEN + len, &r,
	    err, sizeof(err)) != 0)
		__builtin_trap();
	if (r.records != 1 || r.end != JOURNAL_HDR_LEN + len ||
	    !checkpoint_equal(&again, c))
		__builtin_trap();
	checkpoint_free(&again);
	free(rec);
}

static void
payload(const struct checkpoint *base, const uint8_t *buf, size_t len)
{
	struct checkpoint c;
	struct ckpt_diff d;
	char err[512];
	int rc;

	err[0] = '\0';
	rc = ckpt_diff_parse((const char *)buf, len, &d, err, sizeof(err));
	if (rc == -2)
		return;
	if (rc != 0) {
		if (err[0] == '\0' || d.pods_add != NULL || d.pods_del != NULL ||
		    d.cool_add != NULL || d.cool_del != NULL ||
		    d.arena.blocks != NULL)
			__builtin_trap();
		return;
	}
	if (ckpt_arena_blocks(&d.arena) > 1)
		__builtin_trap();
	copy(base, &c);
	err[0] = '\0';
	rc = checkpoint_apply(&c, &d, err, sizeof(err));
	ckpt_diff_free(&d);
	if (rc == -1 && (err[0] == '\0' || !checkpoint_equal(&c, base)))
		__builtin_trap();
	if (rc == 0) {
		snapshot_round_trip(&c);
		diff_as_record(base, &c);
	}
	checkpoint_free(&c);
}

static void
journal(const struct checkpoint *snap, const uint8_t *buf, size_t len)
{
	struct checkpoint base, c, prefix;
	struct journal_replay r, r2;
	char err[512];
	int rc;

	copy(snap, &base);
	checkpoint_sort(&base);
	copy(&base, &c);
	err[0] = '\0';
	rc = journal_replay(&c, buf, len, &r, err, sizeof(err));
	if (rc == -2)
		goto out;		/* out of memory: nothing to hold */
	if ((rc == -1 || rc == CKPT_NEWER) && (err[0] == '\0' ||
	    strnlen(err, sizeof(err)) >= sizeof(err)))
		__builtin_trap();
	if (rc != 0 && rc != -1 && rc != CKPT_NEWER)
		__builtin_trap();
	if (checkpoint_check(&c, err, sizeof(err)) != 0)
		__builtin_trap();
	if (r.end > len)
		__builtin_trap();
	if (rc == 0) {
		if (r.records > 0 && r.max_generation < c.generation)
			__builtin_trap();
		copy(&base, &prefix);
		if (journal_replay(&prefix, buf, r.end, &r2, err,
		    sizeof(err)) != 0 || r2.records != r.records ||
		    !checkpoint_equal(&prefix, &c))
			__builtin_trap();
		checkpoint_free(&prefix);
	}
	snapshot_round_trip(&c);
	diff_as_record(&base, &c);
	payload(&base, buf, len);
out:
	checkpoint_free(&c);
	checkpoint_free(&base);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct checkpoint c;
	const uint8_t *nul;
	size_t snap = size;
	char err[256];
	int64_t version;
	int rc;

	if ((nul = memchr(data, '\0', size)) != NULL)
		snap = (size_t)(nul - data);
	/* data is not NUL-terminated: the parser must not look past size */
	if ((rc = checkpoint_parse((const char *)data, snap, &c, err,
	    sizeof(err))) != 0) {
		if (rc != -1 && rc != CKPT_NEWER)
			__builtin_trap();
		if (err[0] == '\0' || strnlen(err, sizeof(err)) >= sizeof(err))
			__builtin_trap();
		if (!empty(&c))
			__builtin_trap();
		return 0;
	}
	/* The probe as root never refuses what the load accepts. */
	if (checkpoint_peek_version((const char *)data, snap, &version) == 0 &&
	    version > CKPT_VERSION)
		__builtin_trap();
	if (ckpt_arena_blocks(&c.arena) > 1)
		__builtin_trap();
	snapshot_round_trip(&c);
	if (nul != NULL)
		journal(&c, nul + 1, size - snap - 1);
	checkpoint_free(&c);
	return 0;
}
