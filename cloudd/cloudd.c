/*
 * enid-cloudd: the only enid process that talks to the internet.  It holds
 * no capability; it owns the cloud's credentials, request signing, rate
 * limits, retries and timeouts, and answers the broker's intents with an
 * outcome class plus the cloud's own code and message.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "log.h"
#include "loop.h"
#include "msg.h"
#include "proc.h"
#include "sandbox.h"

struct cloudd {
	struct loop		 loop;
	struct msg_chan		 chan;
	struct loop_io		 chan_io;
	struct enid_config	 cfg;
	bool			 hello_done;
};

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
	(void)events;
	for (budget = 0; budget < 64; budget++) {
		switch (msg_recv(&cd->chan, &m, &why)) {
		case MSG_RECV_OK:
			cloudd_dispatch_broker(cd, &m);
			break;
		case MSG_RECV_AGAIN:
			return;
		case MSG_RECV_EOF:
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

static void
cloudd_signal(struct loop *l, int signo, void *arg)
{
	(void)arg;
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

	if (sandbox_drop_privileges(cd.cfg.user, NULL, 0, err, sizeof(err)))
		fatalx("privilege drop: %s", err);
	if (sandbox_load(SANDBOX_CLOUDD, sandbox_debug_requested(), err,
	    sizeof(err)) == -1)
		fatalx("seccomp: %s", err);

	if (loop_add_io(&cd.loop, &cd.chan_io, cd.chan.fd, EPOLLIN,
	    cloudd_chan_cb, &cd) == -1)
		fatal("watching the broker channel");
	log_debug("started as uid %u", (unsigned)getuid());
	return loop_run(&cd.loop);
}
