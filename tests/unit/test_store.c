/*
 * The broker's store (broker/store.c) through its interface, with the real
 * loop, the writer thread and a client on a real socket: what a save
 * holds reads back as what was built from memory; an answer given to the
 * store reaches its client only once the files hold the state it tells
 * of; saves are numbered, and what waits for one goes with it.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "enid.h"
#include "journal.h"
#include "testckpt.h"
#include "testdir.h"
#include "testrng.h"

/* Pods and cooling addresses drawn from a small universe, so that one
 * state and the next share most of them (as test_journal.c's world). */
#define UNIVERSE_PODS	64
#define UNIVERSE_COOL	24

static struct {
	int	 pod[UNIVERSE_PODS];	/* 0: absent, else the variant */
	int	 cool[UNIVERSE_COOL];
	int64_t	 written;
	int	 builds, saves;
} world;

static void
world_step(void)
{
	size_t n = 1 + rnd(6), i;

	while (n-- > 0) {
		if (rnd(3) == 0) {
			i = rnd(UNIVERSE_COOL);
			world.cool[i] = rnd(3) == 0 ? 0 : 1 + (int)rnd(4);
		} else {
			i = rnd(UNIVERSE_PODS);
			world.pod[i] = rnd(3) == 0 ? 0 : 1 + (int)rnd(3);
		}
	}
	world.written++;
}

/* The store's build function: the world as a checkpoint, in a scrambled
 * order, as the broker builds it. */
static int
world_build(struct broker *b, struct checkpoint *c)
{
	size_t i, j;

	(void)b;
	world.builds++;
	memset(c, 0, sizeof(*c));
	snprintf(c->instance_id, sizeof(c->instance_id), "i-0123456789abcdef0");
	c->written = world.written;
	c->pods = calloc(UNIVERSE_PODS, sizeof(*c->pods));
	c->cooling = calloc(UNIVERSE_COOL, sizeof(*c->cooling));
	assert_non_null(c->pods);
	assert_non_null(c->cooling);
	for (j = 0; j < UNIVERSE_PODS; j++) {
		struct ckpt_pod *p;

		i = (j * 37) % UNIVERSE_PODS;
		if (world.pod[i] == 0)
			continue;
		p = &c->pods[c->npods++];
		p->container_id = cdup(c, "c%zu", i);
		p->ifname = cdup(c, "eth%zu", i % 3);
		p->k8s_namespace = cdup(c, "ns");
		p->k8s_name = cdup(c, "pod-%zu-v%d", i, world.pod[i]);
		p->k8s_uid = cdup(c, "u%zu", i);
		p->ip = ip_addr_from_in(htonl(0x0a010000u + (uint32_t)i));
		p->eni_id = cdup(c, "eni-%zx", i / 10);
		p->since = 1700000000 + (int64_t)i;
	}
	for (j = 0; j < UNIVERSE_COOL; j++) {
		struct ckpt_cooling *k;

		i = UNIVERSE_COOL - 1 - j;
		if (world.cool[i] == 0)
			continue;
		k = &c->cooling[c->ncooling++];
		k->ip = ip_addr_from_in(htonl(0x0a020000u + (uint32_t)i));
		k->eni_id = cdup(c, "eni-%d", world.cool[i] % 2);
		k->until = 1700000100 + world.cool[i];
	}
	return 0;
}

static void
world_saved(struct broker *b)
{
	(void)b;
	world.saves++;
}

/* What the files in d hold must be the world as it is now. */
static void
expect_on_disk(const struct dir *d)
{
	struct ckpt_store files;
	struct checkpoint got, want;
	char note[512], err[1024];

	memset(&files, 0, sizeof(files));
	if (ckpt_store_load(&files, d->fd, CKPT_JOURNAL_SIZE, &got, note,
	    sizeof(note), err, sizeof(err)) != 0)
		fail_msg("load: %s", err);
	assert_int_equal(world_build(NULL, &want), 0);
	assert_int_equal(checkpoint_own(&want), 0);
	checkpoint_sort(&want);
	want.generation = got.generation;
	want.written = got.written;	/* a save of no change keeps it */
	if (!checkpoint_equal(&got, &want))
		fail_msg("the files do not hold what was built (%s)", note);
	checkpoint_free(&got);
	checkpoint_free(&want);
	ckpt_store_close(&files);
}

/* ---- a client and the ops it calls ---- */

static struct store *st;

/* "save": the world changes; the answer waits for the save. */
static void
op_save(struct broker *b, struct jref *r, struct json_object *req)
{
	char text[64];
	int n;

	(void)b;
	(void)req;
	world_step();
	store_mark(st);
	n = snprintf(text, sizeof(text), "{\"ok\":true,\"at\":%lld}",
	    (long long)world.written);
	store_reply_text(st, r, text, (size_t)n);
}

/* "pending": nothing changes; answered at once unless a save is due. */
static void
op_pending(struct broker *b, struct jref *r, struct json_object *req)
{
	(void)b;
	(void)req;
	store_reply_after_pending(st, r, JREF_OK_TEXT,
	    sizeof(JREF_OK_TEXT) - 1);
}

/* "later": the world changes; answered after the save that holds the
 * change, asked for by number. */
static void
op_later(struct broker *b, struct jref *r, struct json_object *req)
{
	uint64_t n = store_next_save(st);

	(void)b;
	(void)req;
	world_step();
	store_mark(st);
	assert_false(store_saved_by(st, n));
	store_reply_after_save(st, r, n, JREF_OK_TEXT,
	    sizeof(JREF_OK_TEXT) - 1);
}

static const struct jop ops[] = {
	{ "save", op_save },
	{ "pending", op_pending },
	{ "later", op_later },
	{ NULL, NULL },
};

struct rig {
	struct dir	 d;
	struct broker	*b;
	struct jserver	*s;
	int		 fd;		/* the client */
};

static void
rig_up(struct rig *g)
{
	struct sockaddr_un sun;
	char path[300], err[256];

	dir_open(&g->d, "enid-store");
	snprintf(path, sizeof(path), "%s/test.sock", g->d.path);
	assert_non_null(g->b = calloc(1, sizeof(*g->b)));
	assert_int_equal(loop_init(&g->b->loop), 0);
	g->s = jserver_open(path, "test.sock", true, 0, 4, 4096, err,
	    sizeof(err));
	assert_non_null(g->s);
	assert_int_equal(jserver_start(g->b, g->s, ops), 0);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	assert_true(strlen(path) < sizeof(sun.sun_path));
	memcpy(sun.sun_path, path, strlen(path) + 1);
	g->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(g->fd >= 0);
	assert_int_equal(connect(g->fd, (struct sockaddr *)&sun, sizeof(sun)),
	    0);
}

static void
rig_down(struct rig *g)
{
	int i;

	close(g->fd);
	for (i = 0; i < 5; i++)
		loop_run_once(&g->b->loop, 5);
	jserver_close(g->b, g->s);
	loop_free(&g->b->loop);
	free(g->b);
	dir_close(&g->d);
}

/* Send op and run the loop until its answer line comes: it, in buf. */
static void
call(struct rig *g, const char *op, char *buf, size_t size)
{
	char line[64];
	size_t got = 0;
	uint64_t end = now_ms() + 5000;
	ssize_t n;
	int len = snprintf(line, sizeof(line), "{\"op\":\"%s\"}\n", op);

	assert_int_equal(send(g->fd, line, (size_t)len, MSG_NOSIGNAL), len);
	while (now_ms() < end) {
		loop_run_once(&g->b->loop, 5);
		n = recv(g->fd, buf + got, size - 1 - got, MSG_DONTWAIT);
		if (n > 0)
			got += (size_t)n;
		if (got > 0 && buf[got - 1] == '\n')
			break;
	}
	buf[got] = '\0';
	if (got == 0 || buf[got - 1] != '\n')
		fail_msg("%s: no answer in 5 s (\"%s\")", op, buf);
}

/*
 * Each answer reaches the client only once the files hold the state it
 * was given in: read back then, they are what the build function makes
 * of memory, record after record and through a restore.
 */
static void
test_answered_once_saved_and_read_back(void **state)
{
	struct rig g;
	struct checkpoint c;
	char buf[256], want[64], note[512], err[1024];
	int i;

	(void)state;
	memset(&world, 0, sizeof(world));
	rng_state = 0x5703;
	rig_up(&g);
	assert_non_null(st = store_new(g.b, world_build, world_saved));
	store_open(st, g.d.fd);
	store_start(st);
	/* a fresh directory: nothing saved yet */
	assert_int_equal(store_restore(st, &c, note, sizeof(note), err,
	    sizeof(err)), 1);
	for (i = 0; i < 40; i++) {
		call(&g, "save", buf, sizeof(buf));
		snprintf(want, sizeof(want), "{\"ok\":true,\"at\":%lld}\n",
		    (long long)world.written);
		assert_string_equal(buf, want);
		expect_on_disk(&g.d);
	}
	assert_int_equal(world.saves, 40);
	assert_int_equal(world.builds, 40 * 2);	/* and expect_on_disk's */

	/* What a restart reads back is the last state answered. */
	store_free(st);
	st = store_new(g.b, world_build, world_saved);
	store_open(st, g.d.fd);
	assert_int_equal(store_restore(st, &c, note, sizeof(note), err,
	    sizeof(err)), 0);
	if (strncmp(note, "generation 1, ", 14) != 0)
		fail_msg("note \"%s\"", note);
	{
		struct checkpoint want_c;

		assert_int_equal(world_build(NULL, &want_c), 0);
		assert_int_equal(checkpoint_own(&want_c), 0);
		checkpoint_sort(&want_c);
		want_c.generation = c.generation;
		want_c.written = c.written;
		assert_true(checkpoint_equal(&c, &want_c));
		checkpoint_free(&want_c);
	}
	checkpoint_free(&c);
	/* and its first save is a snapshot of the next generation */
	call(&g, "save", buf, sizeof(buf));
	expect_on_disk(&g.d);
	store_free(st);
	rig_down(&g);
}

/*
 * Saves are numbered: an answer given for save n waits for it, and one
 * given after it is on disk goes at the end of the turn; with nothing to
 * save an answer that only must not overtake a save goes at once.
 */
static void
test_numbered_saves(void **state)
{
	struct rig g;
	struct checkpoint c;
	char buf[256], note[512], err[1024];
	uint64_t n;
	int saves;

	(void)state;
	memset(&world, 0, sizeof(world));
	rng_state = 0x5704;
	rig_up(&g);
	assert_non_null(st = store_new(g.b, world_build, world_saved));
	store_open(st, g.d.fd);
	/* no writer thread: records are written on the loop */
	assert_int_equal(store_restore(st, &c, note, sizeof(note), err,
	    sizeof(err)), 1);

	n = store_next_save(st);
	assert_false(store_saved_by(st, n));
	call(&g, "later", buf, sizeof(buf));
	assert_string_equal(buf, "{\"ok\":true}\n");
	assert_true(store_saved_by(st, n));
	expect_on_disk(&g.d);

	/* nothing marked: at once, and no save for it */
	saves = world.saves;
	call(&g, "pending", buf, sizeof(buf));
	assert_string_equal(buf, "{\"ok\":true}\n");
	assert_int_equal(world.saves, saves);

	/* a save marked and not yet run: the answer goes with it */
	world_step();
	store_mark(st);
	call(&g, "pending", buf, sizeof(buf));
	assert_string_equal(buf, "{\"ok\":true}\n");
	assert_int_equal(world.saves, saves + 1);
	expect_on_disk(&g.d);
	store_free(st);
	rig_down(&g);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_answered_once_saved_and_read_back),
		cmocka_unit_test(test_numbered_saves),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
