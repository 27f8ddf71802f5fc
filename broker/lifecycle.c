/*
 * The lifecycles of the pool's ENIs and of their addresses, as data:
 * where each state may go, and which states an ENI may enter the pool in.  broker/eni.c performs the
 * transitions (eni_begin, eni_set_state) and refuses any other; its
 * opening comment draws the machine, and doc/design.md lists it, both
 * checked against this table by tests/unit/test_lifecycle.c.
 */
#include "pool.h"

#define TO(s)	(1u << (s))

static const uint32_t eni_machine[ENI_STATE_COUNT] = {
	[ENI_CREATING] = TO(ENI_ATTACHING) | TO(ENI_DRAINING) |
	    TO(ENI_QUARANTINED),
	[ENI_ATTACHING] = TO(ENI_CONFIGURING) | TO(ENI_DRAINING) |
	    TO(ENI_QUARANTINED),
	[ENI_CONFIGURING] = TO(ENI_READY) | TO(ENI_DRAINING) |
	    TO(ENI_QUARANTINED),
	[ENI_READY] = TO(ENI_DRAINING),
	[ENI_DRAINING] = TO(ENI_DETACHING) | TO(ENI_DELETING),
	[ENI_DETACHING] = TO(ENI_DRAINING) | TO(ENI_DELETING),
	[ENI_DELETING] = TO(ENI_DRAINING) | TO(ENI_DETACHING),
	[ENI_QUARANTINED] = TO(ENI_DETACHING) | TO(ENI_DELETING),
};

/*
 * Creating: enid creates it.  Attaching: found attached and tagged for
 * this node, adopted and then set up.  Ready: the primary, and only it.
 * Detaching: found ours and leaked, removed.
 */
static const uint32_t eni_births = TO(ENI_CREATING) | TO(ENI_ATTACHING) |
    TO(ENI_READY) | TO(ENI_DETACHING);

bool
eni_transition_ok(enum eni_state from, enum eni_state to)
{
	if ((unsigned)from >= ENI_STATE_COUNT ||
	    (unsigned)to >= ENI_STATE_COUNT)
		return false;
	return from == to || (eni_machine[from] & TO(to)) != 0;
}

bool
eni_birth_ok(enum eni_state st, bool primary)
{
	if ((unsigned)st >= ENI_STATE_COUNT)
		return false;
	return primary ? st == ENI_READY :
	    st != ENI_READY && (eni_births & TO(st)) != 0;
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
