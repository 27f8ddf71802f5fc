/*
 * The broker's process context, shared by its files: the children, the
 * client sockets, the configuration.
 */
#ifndef ENID_BROKER_H
#define ENID_BROKER_H

#include <stdbool.h>
#include <sys/types.h>

#include "conf.h"
#include "loop.h"
#include "msg.h"

#define BROKER_HANDSHAKE_MS	5000	/* a child must answer HELLO by then */
#define BROKER_KILL_GRACE_MS	400	/* SIGTERM, then SIGKILL after this */
#define CTL_SOCK_NAME		"ctl.sock"
#define CNI_SOCK_NAME		"cni.sock"

struct broker;

struct child {
	struct broker		*broker;
	const char		*name;		/* "enid-netd" */
	enum msg_peer		 peer;
	pid_t			 pid;		/* 0 once reaped */
	int			 status;	/* wait status once reaped */
	struct msg_chan		 chan;
	struct loop_io		 io;
	bool			 ready;		/* handshake answered */
	uint32_t		 hello_id;
};

struct ctl_server;

struct broker {
	struct loop		 loop;
	struct enid_config	 cfg;
	const char		*config_path;
	struct child		 netd, cloudd;
	struct loop_timer	 handshake_timer;
	struct loop_timer	 kill_timer;
	bool			 shutting_down;
	int			 exit_code;
	uint32_t		 next_id;
	uint64_t		 started_ms;
	struct ctl_server	*ctl;
};

/* control.c: the admin socket. */
struct ctl_server *ctl_open(const char *path, gid_t group, char *err,
	    size_t errlen);
int	ctl_start(struct broker *b, struct ctl_server *cs);
void	ctl_close(struct broker *b, struct ctl_server *cs);

/* Stop the daemon: terminate the children, then exit with code. */
void	broker_shutdown(struct broker *b, int code, const char *why);

#endif /* ENID_BROKER_H */
