/*
 * The outbound queue and the channel ends built on it (msgq.c, peer.c),
 * over real socketpairs: thousands of messages into a socket nobody reads
 * are queued, not failed, and all arrive in order once it is read; a child
 * whose answers back up stops reading requests and resumes when they
 * drain; a child that has all the work it takes reads nothing more until
 * it says so.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"
#include "loop.h"
#include "msg.h"
#include "msgq.h"
#include "peer.h"

#define NMSG	20000

struct side {
	struct peer	 p;
	uint32_t	 got, next_id;
	bool		 in_order;
	bool		 take;		/* can_take's answer */
	bool		 gone;
	bool		 child;		/* answers PINGs */
};

static void
on_msg(struct peer *p, const struct msg *m, void *arg)
{
	struct side *s = arg;

	if (m->hdr.id != s->next_id)
		s->in_order = false;
	s->next_id++;
	s->got++;
	if (s->child && m->hdr.type == MSG_PING)
		peer_send(p, MSG_PONG, m->hdr.id, m->u.bytes,
		    sizeof(struct msg_ping));
}

static void
on_gone(struct peer *p, enum msg_recv_result r, const char *why, void *arg)
{
	struct side *s = arg;

	(void)p;
	(void)r;
	(void)why;
	s->gone = true;
}

static bool
can_take(void *arg)
{
	return ((struct side *)arg)->take;
}

static void
pair(int sv[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK,
	    0, sv), 0);
}

static void
run_until(struct loop *l, uint32_t *counter, uint32_t want)
{
	uint64_t end = now_ms() + 20000;

	while (*counter < want && now_ms() < end)
		loop_run_once(l, 50);
}

static void
test_queue_never_fails(void **state)
{
	static struct side a, b;
	struct loop l;
	struct msg_ping ping;
	int sv[2];
	uint32_t i;

	(void)state;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	assert_int_equal(loop_init(&l), 0);
	pair(sv);
	assert_int_equal(peer_open(&a.p, &l, sv[0], PEER_BROKER, PEER_NETD,
	    "netd", on_msg, on_gone, NULL, &a), 0);
	/* The receiver takes nothing at first: the socket fills. */
	b.next_id = 1;
	b.in_order = true;
	b.child = false;
	assert_int_equal(peer_open(&b.p, &l, sv[1], PEER_NETD, PEER_BROKER,
	    "enid", on_msg, on_gone, can_take, &b), 0);
	b.p.chan.greeted = true;
	for (i = 1; i <= NMSG; i++) {
		ping.seq = i;
		peer_send(&a.p, MSG_PING, i, &ping, sizeof(ping));
	}
	/* Most went to the queue; none was refused. */
	assert_true(a.p.q.count > 0);
	assert_int_equal(a.p.q.count + a.p.q.sent, NMSG);
	loop_run_once(&l, 10);
	assert_int_equal(b.got, 0);
	b.take = true;
	peer_resume(&b.p);
	run_until(&l, &b.got, NMSG);
	assert_int_equal(b.got, NMSG);
	assert_true(b.in_order);
	assert_int_equal(a.p.q.count, 0);
	assert_int_equal(a.p.q.sent, NMSG);
	assert_false(a.gone || b.gone);
	peer_close(&a.p);
	peer_close(&b.p);
	close(sv[0]);
	close(sv[1]);
	loop_free(&l);
}

/* A child whose answers nobody reads stops reading requests (its queue
 * stays bounded) and answers every one once the broker reads again. */
static void
test_child_back_pressure(void **state)
{
	static struct side b;
	static struct msg m;
	struct msg_chan raw;
	struct loop l;
	struct msg_ping ping;
	const char *why;
	int sv[2];
	uint32_t sent = 0, answered = 0, i;
	uint64_t end;

	(void)state;
	memset(&b, 0, sizeof(b));
	assert_int_equal(loop_init(&l), 0);
	pair(sv);
	msg_chan_init(&raw, sv[0], PEER_BROKER, PEER_NETD, "netd");
	raw.greeted = true;
	b.next_id = 1;
	b.in_order = true;
	b.take = true;
	b.child = true;
	assert_int_equal(peer_open(&b.p, &l, sv[1], PEER_NETD, PEER_BROKER,
	    "enid", on_msg, on_gone, can_take, &b), 0);
	b.p.chan.greeted = true;
	/* Write requests while the socket takes them; never read answers. */
	end = now_ms() + 20000;
	while (sent < NMSG && now_ms() < end) {
		ping.seq = sent + 1;
		if (msg_send(&raw, MSG_PING, sent + 1, &ping,
		    sizeof(ping)) == 0) {
			sent++;
			continue;
		}
		assert_int_equal(errno, EAGAIN);
		loop_run_once(&l, 1);
		if (b.p.paused)
			break;
	}
	/* The child paused with its queue near the soft limit, no more. */
	for (i = 0; i < 10; i++)
		loop_run_once(&l, 1);
	assert_true(b.p.paused);
	assert_true(b.p.q.bytes <= MSGQ_SOFT_BYTES + 64 * 1024);
	assert_true(b.got < NMSG);
	/* Now read answers while sending the rest: all answered, in order. */
	end = now_ms() + 30000;
	while (answered < NMSG && now_ms() < end) {
		while (msg_recv(&raw, &m, &why) == MSG_RECV_OK) {
			assert_int_equal(m.hdr.type, MSG_PONG);
			assert_int_equal(m.hdr.id, answered + 1);
			answered++;
		}
		while (sent < NMSG) {
			ping.seq = sent + 1;
			if (msg_send(&raw, MSG_PING, sent + 1, &ping,
			    sizeof(ping)) == -1)
				break;
			sent++;
		}
		loop_run_once(&l, 1);
	}
	assert_int_equal(answered, NMSG);
	assert_true(b.in_order);
	assert_false(b.p.paused);
	assert_int_equal(b.p.q.count, 0);
	peer_close(&b.p);
	close(sv[0]);
	close(sv[1]);
	loop_free(&l);
}

/*
 * The broker reads its children in batches: at most PEER_RECV_BUDGET
 * messages a wakeup, the rest on the next; every good message before a
 * bad one is delivered, in order, and the bad one ends the channel.
 */
static void
test_broker_reads_in_batches(void **state)
{
	static struct side a;
	struct msg_chan raw;
	struct msg_ping ping;
	struct loop l;
	char junk[8] = { 0 };
	int sv[2];
	uint32_t i, n = PEER_RECV_BUDGET + 10;

	(void)state;
	memset(&a, 0, sizeof(a));
	a.next_id = 1;
	a.in_order = true;
	assert_int_equal(loop_init(&l), 0);
	pair(sv);
	assert_int_equal(peer_open(&a.p, &l, sv[0], PEER_BROKER, PEER_NETD,
	    "netd", on_msg, on_gone, NULL, &a), 0);
	a.p.chan.greeted = true;
	msg_chan_init(&raw, sv[1], PEER_NETD, PEER_BROKER, "enid");
	for (i = 1; i <= n; i++) {
		ping.seq = i;
		assert_int_equal(msg_send(&raw, MSG_PONG, i, &ping,
		    sizeof(ping)), 0);
	}
	assert_int_equal(write(sv[1], junk, sizeof(junk)), sizeof(junk));
	loop_run_once(&l, 100);
	assert_int_equal(a.got, PEER_RECV_BUDGET);
	assert_false(a.gone);
	loop_run_once(&l, 100);
	assert_int_equal(a.got, n);
	assert_true(a.in_order);
	assert_true(a.gone);
	assert_false(a.p.open);
	close(sv[0]);
	close(sv[1]);
	loop_free(&l);
}

/* A bad message closes the channel and reports why; the owner decides. */
static void
test_malformed_reported(void **state)
{
	static struct side b;
	struct loop l;
	int sv[2];
	char junk[8] = { 0 };

	(void)state;
	memset(&b, 0, sizeof(b));
	b.take = true;
	assert_int_equal(loop_init(&l), 0);
	pair(sv);
	assert_int_equal(peer_open(&b.p, &l, sv[1], PEER_NETD, PEER_BROKER,
	    "enid", on_msg, on_gone, can_take, &b), 0);
	assert_int_equal(write(sv[0], junk, sizeof(junk)), sizeof(junk));
	loop_run_once(&l, 100);
	assert_true(b.gone);
	assert_false(b.p.open);
	assert_int_equal(b.got, 0);
	close(sv[0]);
	close(sv[1]);
	loop_free(&l);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_queue_never_fails),
		cmocka_unit_test(test_child_back_pressure),
		cmocka_unit_test(test_malformed_reported),
		cmocka_unit_test(test_broker_reads_in_batches),
	};

	log_init("test_msgq", true, LOG_LVL_WARN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
