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

#define BROKER_MAX_PENDING	256

/*
 * A request's outcome: m is an answer (final says whether more follow), or
 * NULL if the deadline passed first.
 */
typedef void (*req_done_cb)(struct broker *b, void *arg, const struct msg *m,
    bool final);

struct pending {
	bool			 used;
	uint32_t		 id;
	struct child		*child;
	enum msg_type		 type;
	uint32_t		 deadline_ms;
	uint64_t		 sent_ms;
	struct loop_timer	 timer;
	req_done_cb		 done;
	void			*arg;
};

enum instance_state {
	INSTANCE_UNKNOWN = 0,
	INSTANCE_ASKING,
	INSTANCE_RETRYING,
	INSTANCE_KNOWN,
};

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
	struct pending		 pending[BROKER_MAX_PENDING];

	/* instance.c: what the cloud says this node is */
	enum instance_state	 instance_state;
	struct msg_cloud_instance instance;
	char			 instance_error[512];
	struct loop_timer	 instance_timer;
	uint32_t		 instance_retry_ms;
	bool			 netd_policy_set;
};

/* control.c: the admin socket. */
struct ctl_server *ctl_open(const char *path, gid_t group, char *err,
	    size_t errlen);
int	ctl_start(struct broker *b, struct ctl_server *cs);
void	ctl_close(struct broker *b, struct ctl_server *cs);

/* req.c: requests to the children, each with a deadline. */
int	broker_request(struct broker *b, struct child *c, enum msg_type type,
	    const void *payload, size_t len, uint32_t deadline_ms,
	    req_done_cb done, void *arg);
int	broker_answer(struct broker *b, struct child *c, const struct msg *m);

/* instance.c */
void	instance_start(struct broker *b);
const char *instance_state_name(enum instance_state s);

/* Stop the daemon: terminate the children, then exit with code. */
void	broker_shutdown(struct broker *b, int code, const char *why);

#endif /* ENID_BROKER_H */
