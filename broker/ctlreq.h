/*
 * A request on the admin socket (ctl.sock), parsed and checked whole
 * before an op acts on it (pure: a JSON object in, a struct out), as
 * cnireq.h is for the CNI socket.  "op" picks the operation; each op reads
 * only its own keys and ignores others, as enidctl has always relied on;
 * a missing or mistyped field, an unknown value, or a string with a NUL
 * in it is refused with a message naming the field.
 *
 *   status, reconcile, metrics   nothing
 *   show       what: pool, enis, pods, subnets, config, limits or snat
 *   drain      eni: the ENI's id
 *   log-level  level: error, warning (warn), info or debug
 */
#ifndef ENID_CTLREQ_H
#define ENID_CTLREQ_H

#include <stddef.h>

enum ctl_op {
	CTL_OP_STATUS = 0,
	CTL_OP_SHOW,
	CTL_OP_RECONCILE,
	CTL_OP_DRAIN,
	CTL_OP_LOG_LEVEL,
	CTL_OP_METRICS,
	CTL_OP_COUNT
};

enum ctl_show {
	CTL_SHOW_POOL = 0,
	CTL_SHOW_ENIS,
	CTL_SHOW_PODS,
	CTL_SHOW_SUBNETS,
	CTL_SHOW_CONFIG,
	CTL_SHOW_LIMITS,
	CTL_SHOW_SNAT,
	CTL_SHOW_COUNT
};

struct ctl_request {
	enum ctl_op	 op;
	enum ctl_show	 what;		/* show */
	const char	*eni;		/* drain: in the request; else "" */
	int		 level;		/* log-level: enum log_level; else -1 */
};

struct json_object;

/* 0, or -1 with err naming the field and the problem.  r->eni points into
 * o and lives as long as it does. */
int	ctl_request_parse(struct json_object *o, struct ctl_request *r,
	    char *err, size_t errlen);
const char *ctl_op_name(enum ctl_op op);
const char *ctl_show_name(enum ctl_show what);

#endif /* ENID_CTLREQ_H */
