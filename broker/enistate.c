/*
 * The ENI lifecycle's transitions, as data: where each state may go, and
 * which states an ENI may enter the pool in.  broker/eni.c performs the
 * transitions (eni_begin, eni_set_state) and refuses any other; its
 * opening comment draws the machine, and doc/design.md lists it, both
 * checked against this table by tests/unit/test_enistate.c.
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
