/*
 * One end of an internal channel, the same in all three processes: the
 * socket, its watch in the loop, its outbound queue (msgq.h), and a receive
 * loop that checks every message (msg_recv) and applies back-pressure.
 *
 * A child (netd, cloudd) stops reading requests while its answers back up
 * or while it has as much work in hand as it takes (can_take), and reads
 * again when peer_resume() says so: the broker's requests then wait in the
 * socket and in the broker's own queue, and none is failed or lost.  The
 * broker always reads its children: answers are what frees its work.
 */
#ifndef ENID_PEER_H
#define ENID_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loop.h"
#include "msg.h"
#include "msgq.h"

#define PEER_RECV_BUDGET	64	/* messages per wakeup */

struct peer;

/* A checked message.  The handler may close the peer. */
typedef void (*peer_msg_cb)(struct peer *, const struct msg *, void *arg);
/* The channel ended: EOF, a socket error, or a malformed message (why
 * says which).  The peer is already closed. */
typedef void (*peer_gone_cb)(struct peer *, enum msg_recv_result,
    const char *why, void *arg);
/* False while the owner has as much work as it takes. */
typedef bool (*peer_can_take_cb)(void *arg);

struct peer {
	struct loop		*loop;
	struct msg_chan		 chan;
	struct loop_io		 io;
	struct msgq		 q;
	bool			 open;
	bool			 pause_when_busy;	/* children: yes */
	bool			 paused;
	peer_msg_cb		 on_msg;
	peer_gone_cb		 on_gone;
	peer_can_take_cb	 can_take;
	void			*arg;
	uint64_t		 received;
};

/* Watch fd (non-blocking) as the channel from self to other.  0, or -1
 * with errno set. */
int	peer_open(struct peer *p, struct loop *l, int fd, enum msg_peer self,
	    enum msg_peer other, const char *other_name, peer_msg_cb on_msg,
	    peer_gone_cb on_gone, peer_can_take_cb can_take, void *arg);
void	peer_close(struct peer *p);

/*
 * Send or queue a message.  A message this end may not send is a bug and
 * fatal; a dead socket closes the peer and reports it through on_gone
 * (from the loop, not from inside this call).
 */
void	peer_send(struct peer *p, enum msg_type type, uint32_t id,
	    const void *payload, size_t len);

/* The owner can take work again: read if reading was paused. */
void	peer_resume(struct peer *p);

/* True while the outbound queue is past its soft limit. */
static inline bool peer_busy(const struct peer *p)
{
	return msgq_busy(&p->q);
}

/*
 * For netd and cloudd: handle what every child answers the same way
 * (HELLO, LOG_LEVEL, PING).  True if m was one of those.
 */
bool	peer_child_common(struct peer *p, const struct msg *m);

#endif /* ENID_PEER_H */
