/*
 * The broker's JSON-lines server (broker/server.c) over real unix sockets
 * and the real event loop, with ops of the test's own: what a client sees
 * when its answer comes later, is larger than the socket takes at once,
 * and meets events the loop gathered before the answer was given.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "enid.h"
#include "testdir.h"

static struct jref held;		/* the "wait" op's, answered later */
static bool have_held;
static char *big;			/* the answer "answer" gives it */
static size_t biglen;

static void
op_wait(struct broker *b, struct jref *r, struct json_object *req)
{
	(void)b;
	(void)req;
	held = *r;
	r->server = NULL;
	have_held = true;
}

static void
op_answer(struct broker *b, struct jref *r, struct json_object *req)
{
	(void)b;
	(void)req;
	jref_reply_ok_text(&held, big, biglen);
	jref_reply_ok_text(r, "{\"ok\":true}", 11);
}

static const struct jop ops[] = {
	{ "wait", op_wait },
	{ "answer", op_answer },
	{ NULL, NULL },
};

static int
client_connect(const char *path)
{
	struct sockaddr_un sun;
	int fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sun, sizeof(sun)),
	    0);
	return fd;
}

static void
send_all(int fd, const char *s)
{
	assert_int_equal(send(fd, s, strlen(s), MSG_NOSIGNAL),
	    (ssize_t)strlen(s));
}

/*
 * A client waiting for a later answer sends more before it comes; in the
 * same loop turn another client's request gives the answer, larger than
 * the socket takes, so most of it is queued.  The first client's input
 * event, gathered before the answer, must not stop the queued rest from
 * being sent: the client gets all of it as it reads.
 */
static void
test_queued_answer_survives_stale_input_event(void **state)
{
	struct broker *b;
	struct jserver *s;
	struct dir d;
	char path[300], err[256], buf[65536];
	size_t got = 0;
	uint64_t end;
	ssize_t n;
	int x, y, i;

	(void)state;
	dir_open(&d, "enid-server");
	snprintf(path, sizeof(path), "%s/test.sock", d.path);
	assert_non_null(b = calloc(1, sizeof(*b)));
	assert_int_equal(loop_init(&b->loop), 0);
	s = jserver_open(path, "test.sock", true, 0, 8, 4096, err,
	    sizeof(err));
	assert_non_null(s);
	assert_int_equal(jserver_start(b, s, ops), 0);

	/* an answer several times what a unix socket buffers */
	biglen = 1024 * 1024;
	assert_non_null(big = malloc(biglen));
	memset(big, 'x', biglen);
	memcpy(big, "{\"ok\":true,\"pad\":\"", 18);
	memcpy(big + biglen - 2, "\"}", 2);

	have_held = false;
	x = client_connect(path);
	send_all(x, "{\"op\":\"wait\"}\n");
	for (i = 0; i < 100 && !have_held; i++)
		loop_run_once(&b->loop, 20);
	assert_true(have_held);
	y = client_connect(path);
	for (i = 0; i < 5; i++)
		loop_run_once(&b->loop, 10);	/* y accepted, idle */

	/* Both ready before the loop looks: y's request first, then x's
	 * next bytes, in one batch of events. */
	send_all(y, "{\"op\":\"answer\"}\n");
	send_all(x, "{");
	loop_run_once(&b->loop, 1000);

	/* x reads; the loop must send the rest of its answer */
	end = now_ms() + 5000;
	while (got < biglen + 1 && now_ms() < end) {
		n = recv(x, buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0)
			got += (size_t)n;
		else if (n == 0)
			break;
		loop_run_once(&b->loop, 5);
	}
	assert_int_equal(got, biglen + 1);

	close(x);
	close(y);
	for (i = 0; i < 5; i++)
		loop_run_once(&b->loop, 5);
	jserver_close(b, s);
	loop_free(&b->loop);
	free(big);
	free(b);
	dir_close(&d);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_queued_answer_survives_stale_input_event),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
