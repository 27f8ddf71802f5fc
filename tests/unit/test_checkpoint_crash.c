/*
 * A checkpoint survives its writer's death at any moment.  A child writes
 * generation after generation (each a different, complete checkpoint) and
 * reports each one checkpoint_write() returned for; the parent waits for
 * the first report, SIGKILLs it after a random delay (fixed seed), then
 * loads.  What it loads must be
 * exactly the last reported generation or the one after it (written, but
 * killed before it could report), never anything torn, never the temp
 * file, and never anything moved aside.
 *
 * The same for the store (snapshot and journal, broker/journal.c): the
 * child loads what is there and saves state after state, most as journal
 * records, a snapshot whenever its small journal is full; the state the
 * parent loads after the kill is the last one reported or the next.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "checkpoint.h"
#include "journal.h"
#include "testckpt.h"
#include "testdir.h"

#define ROUNDS		200
#define MAX_DELAY_US	25000	/* kills land within this after the fork */
#define GENS_PER_CHILD	100000	/* a bound: the child is killed long before */

/* Generation g: its size varies (up to ~250 KB) so kills land in writes of
 * every length, and every field says which generation it is. */
static void
generation(int64_t g, struct checkpoint *c)
{
	size_t i;

	memset(c, 0, sizeof(*c));
	snprintf(c->instance_id, sizeof(c->instance_id), "i-0123456789abcdef0");
	c->written = g;
	c->npods = (size_t)((g * 389) % 1000);
	c->ncooling = (size_t)(g % 13);
	c->pods = calloc(c->npods + 1, sizeof(*c->pods));
	c->cooling = calloc(c->ncooling + 1, sizeof(*c->cooling));
	assert_non_null(c->pods);
	assert_non_null(c->cooling);
	for (i = 0; i < c->npods; i++) {
		struct ckpt_pod *p = &c->pods[i];

		p->container_id = cdup(c, "%016llx%048zx", (long long)g, i);
		p->ifname = cdup(c, "eth%zu", i % 3);
		p->k8s_namespace = cdup(c, "ns-%zu", i % 7);
		p->k8s_name = cdup(c, "pod-%lld-%zu", (long long)g, i);
		p->k8s_uid = cdup(c, "%zu", i);
		p->ip = ip_addr_from_in(htonl(0x0a010000u + (uint32_t)i));
		p->eni_id = cdup(c, "eni-%zx", i / 29);
		p->since = g;
	}
	for (i = 0; i < c->ncooling; i++) {
		c->cooling[i].ip =
		    ip_addr_from_in(htonl(0x0a020000u + (uint32_t)i));
		c->cooling[i].eni_id = cdup(c, "eni-%zx", i);
		c->cooling[i].until = g + 30;
	}
}

static int
write_generation(int dirfd, int64_t g, char *err, size_t errlen)
{
	struct checkpoint c;
	char *text;
	size_t len;
	int rc;

	generation(g, &c);
	text = checkpoint_format(&c, &len);
	checkpoint_free(&c);
	if (text == NULL) {
		snprintf(err, errlen, "format: %s", strerror(errno));
		return -1;
	}
	rc = checkpoint_write(dirfd, CKPT_FILE, text, len, err, errlen);
	free(text);
	return rc;
}

static void
writer(int dirfd, int64_t first, int report)
{
	char err[512];
	int64_t g;

	for (g = first; g < first + GENS_PER_CHILD; g++) {
		if (write_generation(dirfd, g, err, sizeof(err)) != 0) {
			fprintf(stderr, "writer: %s\n", err);
			_exit(2);
		}
		if (write(report, &g, sizeof(g)) != sizeof(g))
			_exit(3);
	}
	_exit(0);
}

static bool
has_corrupt(const char *path)
{
	struct dirent *e;
	bool found = false;
	DIR *d;

	d = opendir(path);
	assert_non_null(d);
	while ((e = readdir(d)) != NULL)
		if (strstr(e->d_name, ".corrupt-") != NULL)
			found = true;
	closedir(d);
	return found;
}

/*
 * One round: a child runs run(dirfd, first, report), reporting each
 * generation it made durable; once it has reported the first, it is
 * killed at a moment drawn from *seed (xorshift64: the delays repeat from
 * run to run).  The last generation it reported.
 */
static int64_t
kill_round(int dirfd, int64_t first, void (*run)(int, int64_t, int),
    uint64_t *seed, int round)
{
	struct timespec ts;
	struct pollfd pfd;
	int64_t acked, g;
	int pipefd[2], status;
	pid_t pid;
	ssize_t n;

	assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(pipefd[0]);
		run(dirfd, first, pipefd[1]);
	}
	close(pipefd[1]);
	/* One generation first, so every round moves the files on however
	 * slow the disk; then the kill comes at a random moment of the
	 * writes after it. */
	pfd = (struct pollfd){ .fd = pipefd[0], .events = POLLIN };
	if (poll(&pfd, 1, 20000) != 1)
		fail_msg("round %d: nothing saved in 20 s", round);
	assert_int_equal(read(pipefd[0], &g, sizeof(g)), sizeof(g));
	assert_int_equal(g, first);
	acked = g;
	*seed ^= *seed << 13;
	*seed ^= *seed >> 7;
	*seed ^= *seed << 17;
	ts.tv_sec = 0;
	ts.tv_nsec = (long)(*seed % MAX_DELAY_US) * 1000;
	nanosleep(&ts, NULL);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFSIGNALED(status))
		fail_msg("round %d: the writer ended by itself (status %d)",
		    round, status);
	while ((n = read(pipefd[0], &g, sizeof(g))) == sizeof(g))
		acked = g;
	assert_int_equal(n, 0);
	close(pipefd[0]);
	return acked;
}

static void
test_kill_at_random_moments(void **state)
{
	struct checkpoint c, want;
	struct stat st;
	struct dir d;
	char err[512];
	int64_t last = 0, acked;
	int round, dirfd;
	int torn_temp = 0, newer = 0;
	uint64_t seed = 0x5eed0008c4a5ULL;

	(void)state;
	dir_open(&d, "enid-crash");
	dirfd = d.fd;
	assert_int_equal(write_generation(dirfd, 0, err, sizeof(err)), 0);

	for (round = 0; round < ROUNDS; round++) {
		acked = kill_round(dirfd, last + 1, writer, &seed, round);
		if (fstatat(dirfd, ".checkpoint.json.tmp", &st,
		    AT_SYMLINK_NOFOLLOW) == 0)
			torn_temp++;
		if (checkpoint_load(dirfd, CKPT_FILE, &c, err,
		    sizeof(err)) != 0)
			fail_msg("round %d: load after the kill: %s", round,
			    err);
		if (c.written != acked && c.written != acked + 1)
			fail_msg("round %d: loaded generation %lld, last "
			    "acknowledged %lld", round, (long long)c.written,
			    (long long)acked);
		newer += c.written == acked + 1;
		generation(c.written, &want);
		assert_true(checkpoint_equal(&c, &want));
		last = c.written;
		checkpoint_free(&want);
		checkpoint_free(&c);
		assert_false(has_corrupt(d.path));
	}
	print_message("%d kills: last generation %lld; %d left a temp file, "
	    "%d came after the rename but before the report\n", ROUNDS,
	    (long long)last, torn_temp, newer);
	assert_true(last >= ROUNDS);
	dir_close(&d);
}

/*
 * State s of the store's writer: pods s to s+39 (container "p<k>", at
 * 10.3.x.y from k), the five before them cooling; each state one pod and
 * one cooling address on from the last, so a record is small.
 */
#define STORE_JOURNAL	(16 * 1024)	/* a snapshot every ~20 records */

static void
store_state(int64_t s, struct checkpoint *c)
{
	int64_t k;

	memset(c, 0, sizeof(*c));
	snprintf(c->instance_id, sizeof(c->instance_id), "i-0123456789abcdef0");
	c->written = s;
	c->pods = calloc(40, sizeof(*c->pods));
	c->cooling = calloc(5, sizeof(*c->cooling));
	assert_non_null(c->pods);
	assert_non_null(c->cooling);
	for (k = s; k < s + 40; k++) {
		struct ckpt_pod *p = &c->pods[c->npods++];

		p->container_id = cdup(c, "p%lld", (long long)k);
		p->ifname = "eth0";		/* borrowed: a literal */
		p->k8s_namespace = p->k8s_uid = "";
		p->k8s_name = cdup(c, "pod-%lld", (long long)k);
		p->ip = ip_addr_from_in(htonl(0x0a030000u +
		    (uint32_t)(k % 60000)));
		p->eni_id = cdup(c, "eni-%llx", (long long)(k / 10));
		p->since = k;
	}
	for (k = s - 5; k < s; k++) {
		struct ckpt_cooling *q;

		if (k < 0)
			continue;
		q = &c->cooling[c->ncooling++];
		q->ip = ip_addr_from_in(htonl(0x0a030000u +
		    (uint32_t)(k % 60000)));
		q->eni_id = cdup(c, "eni-%llx", (long long)(k / 10));
		q->until = k + 30;
	}
}

static void
store_writer(int dirfd, int64_t first, int report)
{
	struct ckpt_store s;
	struct checkpoint c;
	enum ckpt_saved saved;
	char note[512], warn[512], err[1024];
	int64_t g;

	if (ckpt_store_load(&s, dirfd, STORE_JOURNAL, &c, note, sizeof(note),
	    err, sizeof(err)) < 0) {
		fprintf(stderr, "store writer: load: %s\n", err);
		_exit(2);
	}
	checkpoint_free(&c);
	for (g = first; g < first + GENS_PER_CHILD; g++) {
		store_state(g, &c);
		if (ckpt_store_save(&s, dirfd, &c, &saved, warn, sizeof(warn),
		    err, sizeof(err)) != 0) {
			fprintf(stderr, "store writer: %s\n", err);
			_exit(2);
		}
		if (write(report, &g, sizeof(g)) != sizeof(g))
			_exit(3);
	}
	_exit(0);
}

static void
test_store_kill_at_random_moments(void **state)
{
	struct ckpt_store s;
	struct checkpoint c, want;
	struct dir d;
	char err[1024], note[512];
	int64_t last = 0, acked, records = 0;
	int round, dirfd, newer = 0;
	uint64_t seed = 0x5eed00090001ULL;

	(void)state;
	dir_open(&d, "enid-crash");
	dirfd = d.fd;

	for (round = 0; round < ROUNDS; round++) {
		acked = kill_round(dirfd, last + 1, store_writer, &seed,
		    round);

		if (ckpt_store_load(&s, dirfd, STORE_JOURNAL, &c, note,
		    sizeof(note), err, sizeof(err)) != 0)
			fail_msg("round %d: load after the kill: %s", round,
			    err);
		ckpt_store_close(&s);
		if (c.written != acked && c.written != acked + 1)
			fail_msg("round %d: loaded state %lld, last "
			    "acknowledged %lld (%s)", round,
			    (long long)c.written, (long long)acked, note);
		newer += c.written == acked + 1;
		records += strstr(note, " 0 journal records") == NULL;
		store_state(c.written, &want);
		checkpoint_sort(&want);
		want.generation = c.generation;
		assert_true(checkpoint_equal(&c, &want));
		last = c.written;
		checkpoint_free(&want);
		checkpoint_free(&c);
		assert_false(has_corrupt(d.path));
	}
	print_message("%d kills: last state %lld; %lld loads replayed "
	    "records, %d found a state saved but not reported\n", ROUNDS,
	    (long long)last, (long long)records, newer);
	assert_true(last >= ROUNDS);
	assert_true(records > 0);
	dir_close(&d);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kill_at_random_moments),
		cmocka_unit_test(test_store_kill_at_random_moments),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
