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
#include "peer.h"
#include "proc.h"
#include "sandbox.h"
#include "testhook.h"

/* Answers go out in order through the channel's queue (common/peer.c). */
void
cloudd_send(struct cloudd *cd, enum msg_type type, uint32_t id,
    const void *payload, size_t len)
{
	peer_send(&cd->peer, type, id, payload, len);
}

/* A checked message from the broker (msg_recv enforced the handshake). */
static void
cloudd_dispatch_broker(struct peer *p, const struct msg *m, void *arg)
{
	struct cloudd *cd = arg;

	if (peer_child_common(p, m))
		return;
	switch (m->hdr.type) {
	case MSG_CLOUD_DESCRIBE_INSTANCE:
	case MSG_CLOUD_DESCRIBE_SUBNETS:
	case MSG_CLOUD_CREATE_ENI:
	case MSG_CLOUD_ATTACH:
	case MSG_CLOUD_SET_DOT:
	case MSG_CLOUD_ASSIGN_IPS:
	case MSG_CLOUD_UNASSIGN_IPS:
	case MSG_CLOUD_ASSIGN_PREFIXES:
	case MSG_CLOUD_UNASSIGN_PREFIXES:
	case MSG_CLOUD_DETACH:
	case MSG_CLOUD_DELETE:
	case MSG_CLOUD_DESCRIBE_ENIS:
	case MSG_CLOUD_CHECK_INSTANCES:
		intent_start(cd, m);
		break;
	case MSG_CLOUD_STATS:
		cloud_send_stats(cd, m->hdr.id);
		break;
	default:
		fatalx("broker: %s not handled by this cloudd",
		    msg_type_name(m->hdr.type));
	}
}

static void
cloudd_broker_gone(struct peer *p, enum msg_recv_result r, const char *why,
    void *arg)
{
	(void)p;
	if (r == MSG_RECV_EOF) {
		cloud_log_counters(arg);
		log_info("broker closed the channel; exiting");
		exit(0);
	}
	if (r == MSG_RECV_BAD)
		fatalx("broker sent a malformed message (%s); the peer is "
		    "untrusted, exiting", why);
	fatalx("broker channel: %s", why);
}

/* Read another intent only while there is room for it. */
static bool
cloudd_can_take(void *arg)
{
	struct cloudd *cd = arg;

	return cd->nintents < CLOUDD_MAX_INTENTS;
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
	struct msg_chan chan;
	char err[512];

	child_parse_args(argc, argv, "enid-cloudd", &opts);
	log_init("enid-cloudd", opts.foreground, LOG_LVL_INFO);
	/* Started by a broker that runs without root, we are its user from
	 * exec on: no other process of that user may read us. */
	if (sandbox_undumpable() == -1)
		fatal("PR_SET_DUMPABLE");
	if (config_load(opts.config_path, &cd.cfg, err, sizeof(err)) == -1)
		fatalx("%s", err);
	log_set_level(child_log_level(&cd.cfg, opts.verbose));
	child_chan_open(&chan, PEER_CLOUDD);	/* checks MSG_CHILD_FD */

	if (loop_init(&cd.loop) == -1)
		fatal("event loop");
	if (loop_signal(&cd.loop, SIGTERM, cloudd_signal, &cd) == -1 ||
	    loop_signal(&cd.loop, SIGINT, cloudd_signal, &cd) == -1)
		fatal("signals");
	signal(SIGPIPE, SIG_IGN);
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
	log_debug("gave back %zu KiB of start-up pages",
	    proc_shed_start_pages() / 1024);

	if (peer_open(&cd.peer, &cd.loop, MSG_CHILD_FD, PEER_CLOUDD,
	    PEER_BROKER, "enid", cloudd_dispatch_broker, cloudd_broker_gone,
	    cloudd_can_take, &cd) == -1)
		fatal("watching the broker channel");
	log_debug("started as uid %u", (unsigned)getuid());
	cloud_kick(&cd);
	return loop_run(&cd.loop);
}
