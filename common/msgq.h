/*
 * One outbound queue per channel, used the same way by all three
 * processes (after OpenBSD's msgbuf).  A message goes straight to the
 * socket when nothing is waiting; otherwise it joins the queue, and the
 * queue is written when the socket has room, as many messages per
 * sendmmsg(2) as it holds.  Sending never fails for a well-formed message:
 * a full socket only queues.
 *
 * The queue is bounded by back-pressure: past its soft limit it reports
 * itself busy, and its owner stops taking on new work (a child stops
 * reading requests; the broker stops reading its clients) until the
 * drained callback says it has room again.  Work already taken on is
 * always queued, so nothing is lost or failed.  The hard limit, far above
 * the soft one, can only be reached if an owner ignores back-pressure, and
 * is fatal.
 */
#ifndef ENID_MSGQ_H
#define ENID_MSGQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loop.h"
#include "msg.h"

#define MSGQ_SOFT_BYTES		(256 * 1024)
#define MSGQ_HARD_BYTES		(64 * 1024 * 1024)

struct msgq_item;
struct msgq;

typedef void (*msgq_drained_cb)(struct msgq *, void *arg);

struct msgq {
	struct loop		*loop;
	struct msg_chan		*chan;
	struct loop_io		*io;		/* the channel's, owned outside */
	bool			 reading;	/* the owner wants EPOLLIN */
	struct msgq_item	*head, **tail;
	size_t			 count, bytes;
	size_t			 soft, hard;
	bool			 was_busy;
	msgq_drained_cb		 drained;
	void			*arg;
	/* counters, for status and tests */
	uint64_t		 sent, queued_total;
	size_t			 max_bytes;
};

/* io must already be registered with the loop for chan's fd (EPOLLIN). */
void	msgq_init(struct msgq *q, struct loop *l, struct msg_chan *chan,
	    struct loop_io *io, msgq_drained_cb drained, void *arg);
void	msgq_free(struct msgq *q);

/*
 * Send or queue one message.  Returns 0, or -1 with errno: EINVAL for a
 * message this end may not send (a bug), or the socket's error (EPIPE,
 * ECONNRESET...) when the peer is gone; callers treat -1 as fatal.
 */
int	msgq_send(struct msgq *q, enum msg_type type, uint32_t id,
	    const void *payload, size_t len);

/* Call from the channel's io callback when EPOLLOUT is reported.  Returns
 * 0, or -1 with errno if the socket failed. */
int	msgq_flush(struct msgq *q);

/* At or past the soft limit: take on no new work. */
bool	msgq_busy(const struct msgq *q);

/* Stop or resume watching the channel for input (back-pressure). */
void	msgq_set_reading(struct msgq *q, bool reading);

#endif /* ENID_MSGQ_H */
