/*
 * The ENI lifecycle's table (broker/enistate.c): every pair of states,
 * allowed or refused, against the machine as doc/design.md lists it, and
 * that list against the one in broker/eni.c's opening comment, so the
 * drawing cannot drift from the code.  Which states an ENI may enter the
 * pool in, the primary apart.
 */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pool.h"

#ifndef TOP_SRCDIR
#error "TOP_SRCDIR: the source tree, for doc/design.md"
#endif

static int
state_by_name(const char *name)
{
	int s;

	for (s = 0; s < ENI_STATE_COUNT; s++)
		if (strcmp(eni_state_name((enum eni_state)s), name) == 0)
			return s;
	return -1;
}

/*
 * The lines "STATE -> STATE ..." of a file (a comment's " * " prefix
 * allowed), one per state: allowed[from] is a bit per state it may move
 * to.  Each state must have exactly one line.
 */
static void
read_listing(const char *path, uint32_t allowed[ENI_STATE_COUNT])
{
	bool seen[ENI_STATE_COUNT] = { false };
	char line[512];
	FILE *f;
	int s, n = 0;

	memset(allowed, 0, ENI_STATE_COUNT * sizeof(allowed[0]));
	f = fopen(path, "r");
	if (f == NULL)
		fail_msg("%s: cannot be read", path);
	while (fgets(line, sizeof(line), f) != NULL) {
		char *p = line, *arrow, *tok, *save = NULL;
		char from[32];
		size_t len;

		while (*p == ' ' || *p == '\t' || *p == '*')
			p++;
		if ((arrow = strstr(p, " -> ")) == NULL || !islower(*p) ||
		    strstr(arrow + 4, "->") != NULL)
			continue;	/* a path drawn, not a state's list */
		len = strcspn(p, " ");
		if (len >= sizeof(from) || p + len > arrow)
			continue;
		memcpy(from, p, len);
		from[len] = '\0';
		if (strspn(p + len, " ") != (size_t)(arrow - p - len) + 1)
			continue;	/* not "STATE   -> ..." */
		if ((s = state_by_name(from)) < 0)
			fail_msg("%s: \"%s\" is not a state", path, from);
		if (seen[s])
			fail_msg("%s: %s listed twice", path, from);
		seen[s] = true;
		n++;
		for (tok = strtok_r(arrow + 4, " \t\n", &save); tok != NULL;
		    tok = strtok_r(NULL, " \t\n", &save)) {
			int to = state_by_name(tok);

			if (to < 0)
				fail_msg("%s: %s -> \"%s\" is not a state",
				    path, from, tok);
			allowed[s] |= 1u << to;
		}
	}
	fclose(f);
	for (s = 0; s < ENI_STATE_COUNT; s++)
		if (!seen[s])
			fail_msg("%s: no line for %s", path,
			    eni_state_name((enum eni_state)s));
	assert_int_equal(n, ENI_STATE_COUNT);
}

/* Every pair, allowed and refused, as the design lists them. */
static void
test_every_pair(void **state)
{
	uint32_t doc[ENI_STATE_COUNT];
	int from, to, allowed = 0, refused = 0;

	(void)state;
	read_listing(TOP_SRCDIR "/doc/design.md", doc);
	for (from = 0; from < ENI_STATE_COUNT; from++)
		for (to = 0; to < ENI_STATE_COUNT; to++) {
			bool want = from == to || (doc[from] & (1u << to));

			if (eni_transition_ok((enum eni_state)from,
			    (enum eni_state)to) != want)
				fail_msg("%s -> %s: the table says %s, the "
				    "design %s",
				    eni_state_name((enum eni_state)from),
				    eni_state_name((enum eni_state)to),
				    want ? "no" : "yes", want ? "yes" : "no");
			if (from != to)
				want ? allowed++ : refused++;
		}
	/* The machine as drawn: 18 moves, the other 38 refused. */
	assert_int_equal(allowed, 18);
	assert_int_equal(refused, ENI_STATE_COUNT * (ENI_STATE_COUNT - 1) -
	    18);
}

static void
test_comment_matches_design(void **state)
{
	uint32_t doc[ENI_STATE_COUNT], code[ENI_STATE_COUNT];
	int s;

	(void)state;
	read_listing(TOP_SRCDIR "/doc/design.md", doc);
	read_listing(TOP_SRCDIR "/broker/eni.c", code);
	for (s = 0; s < ENI_STATE_COUNT; s++)
		if (doc[s] != code[s])
			fail_msg("%s: eni.c's comment and doc/design.md differ",
			    eni_state_name((enum eni_state)s));
}

/* Some refusals by name: what must never happen. */
static void
test_refused(void **state)
{
	(void)state;
	/* Addresses of an ENI being removed never return to the pool. */
	assert_false(eni_transition_ok(ENI_DRAINING, ENI_READY));
	assert_false(eni_transition_ok(ENI_QUARANTINED, ENI_READY));
	assert_false(eni_transition_ok(ENI_QUARANTINED, ENI_DRAINING));
	/* Nothing is deleted that was not taken out of service first. */
	assert_false(eni_transition_ok(ENI_READY, ENI_DELETING));
	assert_false(eni_transition_ok(ENI_READY, ENI_DETACHING));
	assert_false(eni_transition_ok(ENI_CREATING, ENI_DELETING));
	/* No step of set-up is skipped. */
	assert_false(eni_transition_ok(ENI_CREATING, ENI_READY));
	assert_false(eni_transition_ok(ENI_ATTACHING, ENI_READY));
	assert_false(eni_transition_ok(ENI_CREATING, ENI_CONFIGURING));
	/* Out of range. */
	assert_false(eni_transition_ok(ENI_STATE_COUNT, ENI_READY));
	assert_false(eni_transition_ok(ENI_READY, ENI_STATE_COUNT));
	assert_false(eni_transition_ok((enum eni_state)-1, ENI_READY));
}

static void
test_births(void **state)
{
	int s;

	(void)state;
	for (s = 0; s < ENI_STATE_COUNT; s++) {
		enum eni_state st = (enum eni_state)s;

		assert_int_equal(eni_birth_ok(st, true), st == ENI_READY);
		assert_int_equal(eni_birth_ok(st, false),
		    st == ENI_CREATING || st == ENI_ATTACHING ||
		    st == ENI_DETACHING);
	}
	assert_false(eni_birth_ok(ENI_STATE_COUNT, false));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_pair),
		cmocka_unit_test(test_comment_matches_design),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_births),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
