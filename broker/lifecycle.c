/*
 * The lifecycles of the pool's ENIs and of their addresses, as data:
 * where each state may go, which states an ENI may enter the pool in, and
 * the word each ENI state is shown as.  broker/eni.c (eni_set_state)
 * and broker/eniaddr.c (addr_set) perform the transitions and refuse
 * any other; eni.c's opening comment draws the ENI's machine, and
 * doc/design.md lists it, both checked against this table by
 * tests/unit/test_lifecycle.c.
 */
#include "pool.h"

#define TO(s)	(1u << (s))

static const char *const eni_names[ENI_STATE_COUNT] = {
	[ENI_NEW] = "new",
	[ENI_CREATING] = "creating",
	[ENI_ATTACHING] = "attaching",
	[ENI_DECLARING] = "declaring",
	[ENI_LINKING] = "linking",
	[ENI_SETTING_UP] = "setting-up",
	[ENI_READY] = "ready",
	[ENI_DRAINING] = "draining",
	[ENI_TEARING_DOWN] = "tearing-down",
	[ENI_DETACHING] = "detaching",
	[ENI_WAITING] = "waiting",
	[ENI_DELETING] = "deleting",
	[ENI_QUARANTINED] = "quarantined",
};

/*
 * What enidctl show enis, its drain answer and the metrics call each
 * state: the eight words they have always used.  A step the pool's
 * reader need not tell apart shows as the state it refines.
 */
static const char *const eni_words[ENI_STATE_COUNT] = {
	[ENI_NEW] = "new",
	[ENI_CREATING] = "creating",
	[ENI_ATTACHING] = "attaching",
	[ENI_DECLARING] = "configuring",
	[ENI_LINKING] = "configuring",
	[ENI_SETTING_UP] = "configuring",
	[ENI_READY] = "ready",
	[ENI_DRAINING] = "draining",
	[ENI_TEARING_DOWN] = "draining",
	[ENI_DETACHING] = "detaching",
	[ENI_WAITING] = "detaching",
	[ENI_DELETING] = "deleting",
	[ENI_QUARANTINED] = "quarantined",
};

/*
 * The set-up path, then the one way out.  The removal of an ENI netd set
 * up, or began to, starts tearing-down (a quarantined one tears down
 * while quarantined); one netd never knew goes straight to the cloud's
 * part: detaching when it is attached as enid knows, waiting otherwise.
 * Only an ENI the cloud has just shown available is deleted.
 */
static const uint32_t eni_machine[ENI_STATE_COUNT] = {
	[ENI_NEW] = TO(ENI_CREATING) | TO(ENI_ATTACHING) | TO(ENI_READY) |
	    TO(ENI_WAITING),
	[ENI_CREATING] = TO(ENI_ATTACHING) | TO(ENI_WAITING) |
	    TO(ENI_QUARANTINED),
	[ENI_ATTACHING] = TO(ENI_DECLARING) | TO(ENI_WAITING) |
	    TO(ENI_QUARANTINED),
	[ENI_DECLARING] = TO(ENI_LINKING) | TO(ENI_TEARING_DOWN) |
	    TO(ENI_QUARANTINED),
	[ENI_LINKING] = TO(ENI_SETTING_UP) | TO(ENI_TEARING_DOWN) |
	    TO(ENI_QUARANTINED),
	[ENI_SETTING_UP] = TO(ENI_READY) | TO(ENI_TEARING_DOWN) |
	    TO(ENI_QUARANTINED),
	[ENI_READY] = TO(ENI_DRAINING) | TO(ENI_TEARING_DOWN),
	[ENI_DRAINING] = TO(ENI_TEARING_DOWN),
	[ENI_TEARING_DOWN] = TO(ENI_DETACHING) | TO(ENI_WAITING),
	[ENI_DETACHING] = TO(ENI_DELETING),
	[ENI_WAITING] = TO(ENI_DETACHING) | TO(ENI_DELETING),
	[ENI_DELETING] = TO(ENI_DETACHING) | TO(ENI_WAITING),
	[ENI_QUARANTINED] = TO(ENI_DETACHING) | TO(ENI_DELETING),
};

const char *
eni_state_name(enum eni_state s)
{
	return (unsigned)s < ENI_STATE_COUNT ? eni_names[s] : "?";
}

const char *
eni_state_shown(enum eni_state s)
{
	return (unsigned)s < ENI_STATE_COUNT ? eni_words[s] : "?";
}

bool
eni_state_configuring(enum eni_state s)
{
	return s == ENI_DECLARING || s == ENI_LINKING || s == ENI_SETTING_UP;
}

bool
eni_state_draining(enum eni_state s)
{
	return s == ENI_DRAINING || s == ENI_TEARING_DOWN;
}

bool
eni_state_arriving(enum eni_state s)
{
	return s == ENI_CREATING || s == ENI_ATTACHING ||
	    eni_state_configuring(s);
}

bool
eni_transition_ok(enum eni_state from, enum eni_state to)
{
	if ((unsigned)from >= ENI_STATE_COUNT ||
	    (unsigned)to >= ENI_STATE_COUNT || to == ENI_NEW)
		return false;
	return from == to || (eni_machine[from] & TO(to)) != 0;
}

/*
 * Creating: enid creates it.  Attaching: found attached and tagged for
 * this node, adopted and then set up.  Ready: the primary, and only it.
 * Waiting: found ours and leaked, removed.
 */
bool
eni_birth_ok(enum eni_state st, bool primary)
{
	if (st == ENI_NEW || !eni_transition_ok(ENI_NEW, st))
		return false;
	return primary == (st == ENI_READY);
}

/* ---- addresses ---- */

static const char *const addr_names[ADDR_STATE_COUNT] = {
	[ADDR_PENDING] = "pending",
	[ADDR_FREE] = "free",
	[ADDR_ASSIGNED] = "assigned",
	[ADDR_COOLING] = "cooling",
	[ADDR_REMOVING] = "removing",
	[ADDR_UNCONFIRMED] = "unconfirmed",
};

/*
 * Every state goes back to pending when its ENI is taken out of service.
 * Free: to a pod, given back, or kept as cooling by the checkpoint at a
 * restart (unconfirmed).  Assigned: released, cooling or at once free.
 * Cooling: free once its time is over, or to a pod then.  Removing: back
 * to free (the cloud throttled the unassign), or unconfirmed; a
 * successful unassign takes it out of the ENI altogether.  Unconfirmed:
 * cooling once the cloud is seen to still have it after cool_until, or
 * out of the ENI if it does not.
 */
static const uint32_t addr_machine[ADDR_STATE_COUNT] = {
	[ADDR_PENDING] = TO(ADDR_FREE),
	[ADDR_FREE] = TO(ADDR_ASSIGNED) | TO(ADDR_REMOVING) |
	    TO(ADDR_UNCONFIRMED) | TO(ADDR_PENDING),
	[ADDR_ASSIGNED] = TO(ADDR_COOLING) | TO(ADDR_FREE) | TO(ADDR_PENDING),
	[ADDR_COOLING] = TO(ADDR_FREE) | TO(ADDR_ASSIGNED) | TO(ADDR_PENDING),
	[ADDR_REMOVING] = TO(ADDR_FREE) | TO(ADDR_UNCONFIRMED) |
	    TO(ADDR_PENDING),
	[ADDR_UNCONFIRMED] = TO(ADDR_COOLING) | TO(ADDR_PENDING),
};

const char *
addr_state_name(enum addr_state s)
{
	return (unsigned)s < ADDR_STATE_COUNT ? addr_names[s] : "?";
}

bool
addr_transition_ok(enum addr_state from, enum addr_state to)
{
	if ((unsigned)from >= ADDR_STATE_COUNT ||
	    (unsigned)to >= ADDR_STATE_COUNT)
		return false;
	return from == to || (addr_machine[from] & TO(to)) != 0;
}
