/*
 * enid-cloudd: the only enid process that talks to the internet.  It holds
 * no capability; it owns the cloud's credentials, request signing, rate
 * limits, retries and timeouts, and answers the broker's intents with an
 * outcome class plus the cloud's own code and message.
 *
 * This file: start-up (config, CA bundle, credentials, privilege drop,
 * seccomp) and the broker's channel; cloud.c runs the calls, intent.c
 * turns intents into calls and answers.
 */
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cloudd.h"
#include "log.h"
#include "proc.h"
#include "sandbox.h"
#include "testhook.h"

static void	cloudd_chan_cb(struct loop *, struct loop_io *, uint32_t);

/* Answers go out in order; when the socket is full they wait here and the
 * channel is watched for room. */
void
cloudd_send(struct cloudd *cd, enum msg_type type, uint32_t id,
    const void *payload, size_t len)
{
	struct outmsg *om;

	if (STAILQ_EMPTY(&cd->outq)) {
		if (msg_send(&cd->chan, type, id, payload, len) == 0)
			return;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			fatal("broker channel: sending %s", msg_type_name(type));
	}
	if (cd->noutq >= CLOUDD_MAX_OUTQ)
		fatalx("broker channel: %u answers unread; the broker is "
		    "stuck", cd->noutq);
	if ((om = malloc(sizeof(*om) + len)) == NULL)
		fatal("broker channel: queueing an answer");
	om->type = type;
	om->id = id;
	om->len = len;
	memcpy(om->payload, payload, len);
	STAILQ_INSERT_TAIL(&cd->outq, om, entry);
	if (cd->noutq++ == 0 &&
	    loop_mod_io(&cd->loop, &cd->chan_io, EPOLLIN | EPOLLOUT) == -1)
		fatal("broker channel: watching for room");
}

static void
cloudd_flush(struct cloudd *cd)
{
	struct outmsg *om;

	while ((om = STAILQ_FIRST(&cd->outq)) != NULL) {
		if (msg_send(&cd->chan, om->type, om->id, om->payload,
		    om->len) == -1) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			fatal("broker channel: sending %s",
			    msg_type_name(om->type));
		}
		STAILQ_REMOVE_HEAD(&cd->outq, entry);
		cd->noutq--;
		free(om);
	}
	if (loop_mod_io(&cd->loop, &cd->chan_io, EPOLLIN) == -1)
		fatal("broker channel");
}

static void
cloudd_dispatch_broker(struct cloudd *cd, const struct msg *m)
{
	if (!cd->hello_done && m->hdr.type != MSG_HELLO)
		fatalx("broker: %s before HELLO", msg_type_name(m->hdr.type));
	switch (m->hdr.type) {
	case MSG_HELLO:
		if (cd->hello_done)
			fatalx("broker: second HELLO");
		child_handshake(&cd->chan, m);
		cd->hello_done = true;
		log_debug("broker: handshake done");
		break;
	case MSG_LOG_LEVEL: {
		struct msg_loglevel ll;

		memcpy(&ll, m->u.bytes, sizeof(ll));
		log_set_level(ll.level);
		break;
	}
	case MSG_CLOUD_DESCRIBE_INSTANCE:
	case MSG_CLOUD_DESCRIBE_SUBNETS:
	case MSG_CLOUD_CREATE_ENI:
	case MSG_CLOUD_ATTACH:
	case MSG_CLOUD_SET_DOT:
	case MSG_CLOUD_ASSIGN_IPS:
	case MSG_CLOUD_UNASSIGN_IPS:
	case MSG_CLOUD_DETACH:
	case MSG_CLOUD_DELETE:
	case MSG_CLOUD_DESCRIBE_ENIS:
		intent_start(cd, m);
		break;
	default:
		fatalx("broker: %s not handled by this cloudd",
		    msg_type_name(m->hdr.type));
	}
}

static void
cloudd_chan_cb(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct cloudd *cd = io->arg;
	static struct msg m;
	const char *why;
	int budget;

	(void)l;
	if (events & EPOLLOUT)
		cloudd_flush(cd);
	if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) == 0)
		return;
	for (budget = 0; budget < 64; budget++) {
		switch (msg_recv(&cd->chan, &m, &why)) {
		case MSG_RECV_OK:
			cloudd_dispatch_broker(cd, &m);
			break;
		case MSG_RECV_AGAIN:
			return;
		case MSG_RECV_EOF:
			cloud_log_counters(cd);
			log_info("broker closed the channel; exiting");
			exit(0);
		case MSG_RECV_ERROR:
			fatal("broker channel");
		case MSG_RECV_BAD:
			fatalx("broker sent a malformed message (%s); "
			    "the peer is untrusted, exiting", why);
		}
	}
}

/* Where the EC2 endpoint is still unknown, the name the resolver is warmed
 * with. */
#define CLOUDD_WARM_URL	"https://ec2.amazonaws.com/"

static void
cloudd_warm_resolver(const char *url)
{
	uint64_t t0 = now_ms();
	int rc;

	rc = sandbox_warm_resolver(url);
	log_debug("resolver warmed by %s in %llu ms%s%s", url,
	    (unsigned long long)(now_ms() - t0), rc ? ": " : "",
	    rc ? gai_strerror(rc) : "");
}

static void
cloudd_signal(struct loop *l, int signo, void *arg)
{
	cloud_log_counters(arg);
	log_info("signal %d: exiting", signo);
	loop_stop(l, 0);
}

int
main(int argc, char *argv[])
{
	static struct cloudd cd;
	struct child_opts opts;
	char err[512];

	child_parse_args(argc, argv, "enid-cloudd", &opts);
	log_init("enid-cloudd", opts.foreground, LOG_LVL_INFO);
	if (config_load(opts.config_path, &cd.cfg, err, sizeof(err)) == -1)
		fatalx("%s", err);
	log_set_level(child_log_level(&cd.cfg, opts.verbose));
	if (geteuid() != 0)
		fatalx("must be started as root by enid");
	child_chan_open(&cd.chan, PEER_CLOUDD);

	if (loop_init(&cd.loop) == -1)
		fatal("event loop");
	if (loop_signal(&cd.loop, SIGTERM, cloudd_signal, &cd) == -1 ||
	    loop_signal(&cd.loop, SIGINT, cloudd_signal, &cd) == -1)
		fatal("signals");
	signal(SIGPIPE, SIG_IGN);
	STAILQ_INIT(&cd.outq);
	TAILQ_INIT(&cd.intents);

	/* Everything that reads files happens before the drop: the CA
	 * bundle (kept in memory), credentials from config or environment. */
	if (http_init(&cd.http, &cd.loop, cd.cfg.cloud.ca_file, err,
	    sizeof(err)) == -1)
		fatalx("%s", err);
	if (cloud_init(&cd, err, sizeof(err)) == -1)
		fatalx("%s", err);

	if (sandbox_drop_privileges(cd.cfg.user, NULL, 0, err, sizeof(err)))
		fatalx("privilege drop: %s", err);
	/* The filter refuses executable mappings: have the resolver load its
	 * modules now, by the lookups cloudd will make (the regional EC2 host
	 * is known only once IMDS names the region; the global one walks the
	 * same resolver chain). */
	cloudd_warm_resolver(cd.ec2_url[0] ? cd.ec2_url : CLOUDD_WARM_URL);
	cloudd_warm_resolver(cd.imds_url);
	if (sandbox_load(SANDBOX_CLOUDD, sandbox_debug_requested(), NULL, 0,
	    err, sizeof(err)) == -1)
		fatalx("seccomp: %s", err);
	testhook_sandboxed("enid-cloudd");

	if (loop_add_io(&cd.loop, &cd.chan_io, cd.chan.fd, EPOLLIN,
	    cloudd_chan_cb, &cd) == -1)
		fatal("watching the broker channel");
	log_debug("started as uid %u", (unsigned)getuid());
	cloud_kick(&cd);
	return loop_run(&cd.loop);
}
