/*
 * An internal channel's end (see peer.h): receive loop, back-pressure,
 * and the messages every child answers alike.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "peer.h"

static void	peer_io_cb(struct loop *, struct loop_io *, uint32_t);

static void
peer_drained(struct msgq *q, void *arg)
{
	(void)q;
	peer_resume(arg);
}

int
peer_open(struct peer *p, struct loop *l, int fd, enum msg_peer self,
    enum msg_peer other, const char *other_name, peer_msg_cb on_msg,
    peer_gone_cb on_gone, peer_can_take_cb can_take, void *arg)
{
	memset(p, 0, sizeof(*p));
	p->loop = l;
	msg_chan_init(&p->chan, fd, self, other, other_name);
	p->on_msg = on_msg;
	p->on_gone = on_gone;
	p->can_take = can_take;
	p->arg = arg;
	p->pause_when_busy = self != PEER_BROKER;
	if (loop_add_io(l, &p->io, fd, EPOLLIN, peer_io_cb, p) == -1)
		return -1;
	msgq_init(&p->q, l, &p->chan, &p->io, peer_drained, p);
	p->open = true;
	return 0;
}

void
peer_close(struct peer *p)
{
	if (!p->open)
		return;
	p->open = false;
	loop_del_io(p->loop, &p->io);
	msgq_free(&p->q);
}

static void
peer_fail(struct peer *p, enum msg_recv_result r, const char *why)
{
	peer_close(p);
	p->on_gone(p, r, why, p->arg);
}

void
peer_send(struct peer *p, enum msg_type type, uint32_t id,
    const void *payload, size_t len)
{
	if (!p->open)
		return;		/* the channel is gone; its end was reported */
	if (msgq_send(&p->q, type, id, payload, len) == 0)
		return;
	if (errno == EINVAL)
		fatalx("%s channel: %s may not be sent this way (bug)",
		    p->chan.peer_name, msg_type_name(type));
	/* The peer is gone.  Stop sending; the loop reports the EOF or
	 * error through on_gone once we return to it. */
	log_warn("%s channel: sending %s", p->chan.peer_name,
	    msg_type_name(type));
	msgq_free(&p->q);
	msgq_set_reading(&p->q, true);
}

static bool
peer_should_pause(const struct peer *p)
{
	if (p->pause_when_busy && msgq_busy(&p->q))
		return true;
	return p->can_take != NULL && !p->can_take(p->arg);
}

void
peer_resume(struct peer *p)
{
	if (!p->open || !p->paused || peer_should_pause(p))
		return;
	p->paused = false;
	msgq_set_reading(&p->q, true);
}

/* A message, or the end of the channel, from msg_recv or a batch. */
static bool
peer_take(struct peer *p, enum msg_recv_result r, const struct msg *m,
    const char *why)
{
	switch (r) {
	case MSG_RECV_OK:
		p->received++;
		p->on_msg(p, m, p->arg);
		return true;
	case MSG_RECV_AGAIN:
		return false;
	case MSG_RECV_EOF:
		peer_fail(p, MSG_RECV_EOF, "closed the channel");
		return false;
	case MSG_RECV_ERROR:
		peer_fail(p, MSG_RECV_ERROR, strerror(errno));
		return false;
	case MSG_RECV_BAD:
		peer_fail(p, MSG_RECV_BAD, why);
		return false;
	}
	return false;
}

/* The broker reads its children in batches: it never pauses (peer.h). */
static void
peer_read_batches(struct peer *p)
{
	static struct msg_batch b;
	const struct msg *m = NULL;
	enum msg_recv_result r;
	const char *why = NULL;
	int budget;

	for (budget = 0; budget < PEER_RECV_BUDGET && p->open;
	    budget += MSG_BATCH_MAX) {
		if ((r = msg_recv_batch(&p->chan, &b)) != MSG_RECV_OK) {
			peer_take(p, r, NULL, NULL);
			return;
		}
		while (p->open) {
			r = msg_batch_take(&p->chan, &b, &m, &why);
			if (!peer_take(p, r, m, why))
				break;
		}
		if (b.n < MSG_BATCH_MAX)
			return;		/* it had no more */
	}
}

static void
peer_io_cb(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct peer *p = io->arg;
	static struct msg m;
	enum msg_recv_result r;
	const char *why;
	int budget;

	(void)l;
	if (events & EPOLLOUT) {
		if (msgq_flush(&p->q) == -1) {
			peer_fail(p, MSG_RECV_ERROR, strerror(errno));
			return;
		}
		if (!p->open)
			return;
	}
	if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) == 0)
		return;
	if (!p->pause_when_busy && p->can_take == NULL) {
		peer_read_batches(p);
		return;
	}
	for (budget = 0; budget < PEER_RECV_BUDGET && p->open; budget++) {
		if (peer_should_pause(p)) {
			p->paused = true;
			msgq_set_reading(&p->q, false);
			return;
		}
		r = msg_recv(&p->chan, &m, &why);
		if (!peer_take(p, r, &m, why))
			return;
	}
}

bool
peer_child_common(struct peer *p, const struct msg *m)
{
	switch (m->hdr.type) {
	case MSG_HELLO: {
		struct msg_hello hello;
		struct msg_hello_ack ack;

		memcpy(&hello, m->u.bytes, sizeof(hello));
		if (hello.version != MSG_PROTO_VERSION)
			fatalx("handshake: broker speaks protocol %u, we speak "
			    "%u", hello.version, MSG_PROTO_VERSION);
		memset(&ack, 0, sizeof(ack));
		ack.version = MSG_PROTO_VERSION;
		ack.pid = (uint32_t)getpid();
		peer_send(p, MSG_HELLO_ACK, m->hdr.id, &ack, sizeof(ack));
		log_debug("broker: handshake done");
		return true;
	}
	case MSG_LOG_LEVEL: {
		struct msg_loglevel ll;

		memcpy(&ll, m->u.bytes, sizeof(ll));
		log_set_level(ll.level);
		return true;
	}
	case MSG_PING:
		/* The same payload back: the broker matches the sequence. */
		peer_send(p, MSG_PONG, m->hdr.id, m->u.bytes,
		    sizeof(struct msg_ping));
		return true;
	default:
		return false;
	}
}
