/*
 * The outbound message queue (see msgq.h).  Items hold the header and
 * payload as they go on the wire; they are allocated only when the socket
 * is full, and freed as soon as they are written.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "log.h"
#include "msgq.h"

#define MSGQ_BATCH	16	/* messages per sendmmsg */

struct msgq_item {
	struct msgq_item	*next;
	enum msg_type		 type;
	uint32_t		 id;
	size_t			 len;
	unsigned char		 payload[];
};

static void
msgq_update_events(struct msgq *q)
{
	uint32_t ev = (q->reading ? EPOLLIN : 0) |
	    (q->head != NULL ? EPOLLOUT : 0);

	/* EPOLL_CTL_MOD on a registered descriptor only fails if the
	 * descriptor was closed under us: a bug worth stopping for. */
	if (loop_mod_io(q->loop, q->io, ev) == -1)
		fatal("%s channel: epoll", q->chan->peer_name);
}

void
msgq_init(struct msgq *q, struct loop *l, struct msg_chan *chan,
    struct loop_io *io, msgq_drained_cb drained, void *arg)
{
	memset(q, 0, sizeof(*q));
	q->loop = l;
	q->chan = chan;
	q->io = io;
	q->reading = true;
	q->tail = &q->head;
	q->soft = MSGQ_SOFT_BYTES;
	q->hard = MSGQ_HARD_BYTES;
	q->drained = drained;
	q->arg = arg;
}

void
msgq_free(struct msgq *q)
{
	struct msgq_item *it;

	while ((it = q->head) != NULL) {
		q->head = it->next;
		free(it);
	}
	q->tail = &q->head;
	q->count = q->bytes = 0;
}

/* Busy from the soft limit until half of it is free again. */
bool
msgq_busy(const struct msgq *q)
{
	return q->was_busy;
}

void
msgq_set_reading(struct msgq *q, bool reading)
{
	if (q->reading == reading)
		return;
	q->reading = reading;
	msgq_update_events(q);
}

static int
msgq_enqueue(struct msgq *q, enum msg_type type, uint32_t id,
    const void *payload, size_t len)
{
	struct msgq_item *it;
	size_t size = sizeof(struct msg_hdr) + len;

	if (q->bytes + size > q->hard)
		fatalx("%s channel: %zu messages (%zu bytes) unsent; the peer "
		    "is not reading", q->chan->peer_name, q->count, q->bytes);
	if ((it = malloc(sizeof(*it) + len)) == NULL)
		fatal("%s channel: queueing %s", q->chan->peer_name,
		    msg_type_name(type));
	it->next = NULL;
	it->type = type;
	it->id = id;
	it->len = len;
	memcpy(it->payload, payload, len);
	*q->tail = it;
	q->tail = &it->next;
	q->count++;
	q->bytes += size;
	q->queued_total++;
	if (q->bytes > q->max_bytes)
		q->max_bytes = q->bytes;
	if (q->bytes >= q->soft)
		q->was_busy = true;
	if (q->count == 1)
		msgq_update_events(q);
	return 0;
}

int
msgq_send(struct msgq *q, enum msg_type type, uint32_t id,
    const void *payload, size_t len)
{
	const struct msg_type_info *ti = msg_type_info(type);

	if (ti == NULL || len != ti->size ||
	    (ti->dirs & msg_dir_bit(q->chan->self, q->chan->peer)) == 0) {
		errno = EINVAL;
		return -1;
	}
	if (q->head == NULL) {
		if (msg_send(q->chan, type, id, payload, len) == 0) {
			q->sent++;
			return 0;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -1;
	}
	return msgq_enqueue(q, type, id, payload, len);
}

/*
 * Write what the socket takes of the queue's head: up to MSGQ_BATCH
 * messages per sendmmsg.  0 when it is all written or the socket is full,
 * or -1 with errno.
 */
static int
msgq_write(struct msgq *q)
{
	struct msg_hdr hdr[MSGQ_BATCH];
	struct iovec iov[MSGQ_BATCH][2];
	struct mmsghdr mm[MSGQ_BATCH];
	struct msgq_item *it;
	int i, k, n;

	while (q->head != NULL) {
		memset(mm, 0, sizeof(mm));
		for (k = 0, it = q->head; it != NULL && k < MSGQ_BATCH;
		    k++, it = it->next) {
			msg_hdr_init(&hdr[k], it->type, it->id, it->len);
			iov[k][0].iov_base = &hdr[k];
			iov[k][0].iov_len = sizeof(hdr[k]);
			iov[k][1].iov_base = it->payload;
			iov[k][1].iov_len = it->len;
			mm[k].msg_hdr.msg_iov = iov[k];
			mm[k].msg_hdr.msg_iovlen = 2;
		}
		do {
			n = sendmmsg(q->chan->fd, mm, (unsigned)k,
			    MSG_NOSIGNAL | MSG_DONTWAIT);
		} while (n == -1 && errno == EINTR);
		if (n == -1)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		for (i = 0; i < n; i++) {
			it = q->head;
			if (mm[i].msg_len != sizeof(struct msg_hdr) + it->len) {
				errno = EMSGSIZE;
				return -1;
			}
			q->head = it->next;
			if (q->head == NULL)
				q->tail = &q->head;
			q->count--;
			q->bytes -= sizeof(struct msg_hdr) + it->len;
			q->sent++;
			free(it);
		}
		if (n < k)
			return 0;	/* the socket is full */
	}
	return 0;
}

int
msgq_flush(struct msgq *q)
{
	if (msgq_write(q) == -1)
		return -1;
	/* Written out, or EPOLLOUT says when there is room for the rest. */
	msgq_update_events(q);
	if (q->was_busy && q->bytes < q->soft / 2) {
		/* Hysteresis: resume only once half the room is back. */
		q->was_busy = false;
		if (q->drained != NULL)
			q->drained(q, q->arg);
	}
	return 0;
}
