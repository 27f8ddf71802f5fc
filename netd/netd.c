/*
 * enid-netd: the only enid process with CAP_NET_ADMIN.  It owns the node's
 * ENI links, their route tables and the pods' policy rules, and trusts
 * nothing the broker sends: every request is checked against the policy
 * fixed at start (table range and rule priorities from the root-owned
 * configuration; VPC CIDRs and the primary MAC from the handshake).
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

struct netd {
	struct loop		 loop;
	struct msg_chan		 chan;
	struct loop_io		 chan_io;
	struct enid_config	 cfg;
	bool			 hello_done;
};

static void
netd_dispatch_broker(struct netd *nd, const struct msg *m)
{
	if (!nd->hello_done && m->hdr.type != MSG_HELLO)
		fatalx("broker: %s before HELLO", msg_type_name(m->hdr.type));
	switch (m->hdr.type) {
	case MSG_HELLO:
		if (nd->hello_done)
			fatalx("broker: second HELLO");
		child_handshake(&nd->chan, m);
		nd->hello_done = true;
		log_debug("broker: handshake done");
		break;
	case MSG_LOG_LEVEL: {
		struct msg_loglevel ll;

		memcpy(&ll, m->u.bytes, sizeof(ll));
		log_set_level(ll.level);
		break;
	}
	default:
		fatalx("broker: %s not handled by this netd",
		    msg_type_name(m->hdr.type));
	}
}

static void
netd_chan_cb(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct netd *nd = io->arg;
	static struct msg m;
	const char *why;
	int budget;

	(void)l;
	(void)events;
	for (budget = 0; budget < 64; budget++) {
		switch (msg_recv(&nd->chan, &m, &why)) {
		case MSG_RECV_OK:
			netd_dispatch_broker(nd, &m);
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
netd_signal(struct loop *l, int signo, void *arg)
{
	(void)arg;
	log_info("signal %d: exiting", signo);
	loop_stop(l, 0);
}

int
main(int argc, char *argv[])
{
	static struct netd nd;
	struct child_opts opts;
	static const cap_value_t keep[] = { CAP_NET_ADMIN };
	char err[512];

	child_parse_args(argc, argv, "enid-netd", &opts);
	log_init("enid-netd", opts.foreground, LOG_LVL_INFO);
	if (config_load(opts.config_path, &nd.cfg, err, sizeof(err)) == -1)
		fatalx("%s", err);
	log_set_level(child_log_level(&nd.cfg, opts.verbose));
	if (geteuid() != 0)
		fatalx("must be started as root by enid");
	child_chan_open(&nd.chan, PEER_NETD);

	if (loop_init(&nd.loop) == -1)
		fatal("event loop");
	if (loop_signal(&nd.loop, SIGTERM, netd_signal, &nd) == -1 ||
	    loop_signal(&nd.loop, SIGINT, netd_signal, &nd) == -1)
		fatal("signals");
	signal(SIGPIPE, SIG_IGN);

	if (sandbox_drop_privileges(nd.cfg.user, keep, 1, err, sizeof(err)))
		fatalx("privilege drop: %s", err);
	if (sandbox_load(SANDBOX_NETD, sandbox_debug_requested(), err,
	    sizeof(err)) == -1)
		fatalx("seccomp: %s", err);

	if (loop_add_io(&nd.loop, &nd.chan_io, nd.chan.fd, EPOLLIN,
	    netd_chan_cb, &nd) == -1)
		fatal("watching the broker channel");
	log_debug("started as uid %u", (unsigned)getuid());
	return loop_run(&nd.loop);
}
