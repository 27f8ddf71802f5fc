/*
 * The lifecycles' tables (broker/lifecycle.c): every pair of ENI states,
 * allowed or refused, against the machine as doc/design.md lists it, and
 * that list against the one in broker/eni.c's opening comment, so the
 * drawing cannot drift from the code; which states an ENI may enter the
 * pool in, the primary apart; the word each state is shown as; every pair
 * of address states likewise.
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

typedef const char *(*name_fn)(int);

static const char *
eni_name_of(int s)
{
	return eni_state_name((enum eni_state)s);
}

static const char *
addr_name_of(int s)
{
	return addr_state_name((enum addr_state)s);
}

static int
state_by_name(name_fn name, int n, const char *s)
{
	int i;

	for (i = 0; i < n; i++)
		if (strcmp(name(i), s) == 0)
			return i;
	return -1;
}

/*
 * The list that follows the first line holding marker in path: lines
 * "STATE -> STATE ..." (a comment's " * " prefix allowed), one per state,
 * ending at the first other line after them.  allowed[from] is a bit per
 * state it may move to.
 */
static void
read_listing(const char *path, const char *marker, name_fn name, int n,
    uint32_t *allowed)
{
	bool seen[32] = { false }, in = false, listing = false;
	char line[512];
	FILE *f;
	int s, lines = 0;

	memset(allowed, 0, (size_t)n * sizeof(allowed[0]));
	f = fopen(path, "r");
	if (f == NULL)
		fail_msg("%s: cannot be read", path);
	while (fgets(line, sizeof(line), f) != NULL) {
		char *p = line, *arrow, *tok, *save = NULL;
		char from[32];
		size_t len;

		if (!in) {
			in = strstr(line, marker) != NULL;
			continue;
		}
		while (*p == ' ' || *p == '\t' || *p == '*')
			p++;
		arrow = strstr(p, " -> ");
		if (arrow == NULL || !islower((unsigned char)*p) ||
		    strstr(arrow + 4, "->") != NULL) {
			if (listing)
				break;		/* the list is over */
			continue;		/* not begun yet */
		}
		listing = true;
		len = strcspn(p, " ");
		if (len >= sizeof(from) || p + len > arrow ||
		    strspn(p + len, " ") != (size_t)(arrow - p - len) + 1)
			fail_msg("%s: not \"STATE -> ...\": %s", path, line);
		memcpy(from, p, len);
		from[len] = '\0';
		if ((s = state_by_name(name, n, from)) < 0)
			fail_msg("%s: \"%s\" is not a state", path, from);
		if (seen[s])
			fail_msg("%s: %s listed twice", path, from);
		seen[s] = true;
		lines++;
		for (tok = strtok_r(arrow + 4, " \t\n", &save); tok != NULL;
		    tok = strtok_r(NULL, " \t\n", &save)) {
			int to = state_by_name(name, n, tok);

			if (to < 0)
				fail_msg("%s: %s -> \"%s\" is not a state",
				    path, from, tok);
			allowed[s] |= 1u << to;
		}
	}
	fclose(f);
	if (!in)
		fail_msg("%s: no line with \"%s\"", path, marker);
	for (s = 0; s < n; s++)
		if (!seen[s])
			fail_msg("%s: no line for %s", path, name(s));
	assert_int_equal(lines, n);
}

#define DESIGN		TOP_SRCDIR "/doc/design.md"
#define ENI_LIST	"The transitions, from each state"
#define ADDR_LIST	"The address transitions, from each state"

/* Every pair, allowed and refused, as the design lists them: staying is
 * allowed in every state but new, which nothing enters. */
static void
test_every_pair(void **state)
{
	uint32_t doc[ENI_STATE_COUNT];
	int from, to, allowed = 0, refused = 0;

	(void)state;
	read_listing(DESIGN, ENI_LIST, eni_name_of, ENI_STATE_COUNT, doc);
	for (from = 0; from < ENI_STATE_COUNT; from++)
		for (to = 0; to < ENI_STATE_COUNT; to++) {
			bool want = (from == to && to != ENI_NEW) ||
			    (doc[from] & (1u << to));

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
	/* The machine as drawn: 31 moves, the other 125 refused. */
	assert_int_equal(allowed, 31);
	assert_int_equal(refused, ENI_STATE_COUNT * (ENI_STATE_COUNT - 1) -
	    31);
	assert_false(eni_transition_ok(ENI_NEW, ENI_NEW));
}

static void
test_comment_matches_design(void **state)
{
	uint32_t doc[ENI_STATE_COUNT], code[ENI_STATE_COUNT];
	int s;

	(void)state;
	read_listing(DESIGN, ENI_LIST, eni_name_of, ENI_STATE_COUNT, doc);
	read_listing(TOP_SRCDIR "/broker/eni.c", ENI_LIST, eni_name_of,
	    ENI_STATE_COUNT, code);
	for (s = 0; s < ENI_STATE_COUNT; s++)
		if (doc[s] != code[s])
			fail_msg("%s: eni.c's comment and doc/design.md differ",
			    eni_state_name((enum eni_state)s));
}

/* Some refusals by name: what must never happen. */
static void
test_refused(void **state)
{
	int s;

	(void)state;
	/* Addresses of an ENI being removed never return to the pool. */
	assert_false(eni_transition_ok(ENI_DRAINING, ENI_READY));
	assert_false(eni_transition_ok(ENI_TEARING_DOWN, ENI_DRAINING));
	assert_false(eni_transition_ok(ENI_QUARANTINED, ENI_READY));
	assert_false(eni_transition_ok(ENI_QUARANTINED, ENI_DRAINING));
	/* Nothing is deleted that was not taken out of service first. */
	assert_false(eni_transition_ok(ENI_READY, ENI_DELETING));
	assert_false(eni_transition_ok(ENI_READY, ENI_DETACHING));
	assert_false(eni_transition_ok(ENI_CREATING, ENI_DELETING));
	/* ...nor detached before netd has torn down what it set up. */
	assert_false(eni_transition_ok(ENI_DRAINING, ENI_DETACHING));
	assert_false(eni_transition_ok(ENI_SETTING_UP, ENI_WAITING));
	/* Nor deleted before the cloud showed it available. */
	assert_false(eni_transition_ok(ENI_TEARING_DOWN, ENI_DELETING));
	/* No step of set-up is skipped. */
	assert_false(eni_transition_ok(ENI_CREATING, ENI_READY));
	assert_false(eni_transition_ok(ENI_ATTACHING, ENI_READY));
	assert_false(eni_transition_ok(ENI_CREATING, ENI_DECLARING));
	assert_false(eni_transition_ok(ENI_DECLARING, ENI_SETTING_UP));
	assert_false(eni_transition_ok(ENI_LINKING, ENI_READY));
	/* Nothing goes back to new. */
	for (s = 0; s < ENI_STATE_COUNT; s++)
		assert_false(eni_transition_ok((enum eni_state)s, ENI_NEW));
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
		    st == ENI_WAITING);
	}
	assert_false(eni_birth_ok(ENI_STATE_COUNT, false));
	assert_false(eni_birth_ok((enum eni_state)-1, true));
}

/*
 * The words enidctl show enis and the metrics give the states: the eight
 * they have always shown, each by at least one state, the finer steps
 * by the word of the state they refine; and the groups the broker asks
 * of, by those words.
 */
static void
test_shown(void **state)
{
	static const char *const words[] = { "creating", "attaching",
	    "configuring", "ready", "draining", "detaching", "deleting",
	    "quarantined" };
	size_t w;
	int s;

	(void)state;
	for (w = 0; w < sizeof(words) / sizeof(words[0]); w++) {
		for (s = ENI_NEW + 1; s < ENI_STATE_COUNT; s++)
			if (strcmp(eni_state_shown((enum eni_state)s),
			    words[w]) == 0)
				break;
		if (s == ENI_STATE_COUNT)
			fail_msg("no state shows as %s", words[w]);
	}
	for (s = ENI_NEW + 1; s < ENI_STATE_COUNT; s++) {
		enum eni_state st = (enum eni_state)s;
		const char *shown = eni_state_shown(st);

		for (w = 0; w < sizeof(words) / sizeof(words[0]); w++)
			if (strcmp(shown, words[w]) == 0)
				break;
		if (w == sizeof(words) / sizeof(words[0]))
			fail_msg("%s shows as %s, not a word enid shows",
			    eni_state_name(st), shown);
		/* A state shows as its own name, but for the refinements. */
		if (st == ENI_DECLARING || st == ENI_LINKING ||
		    st == ENI_SETTING_UP)
			assert_string_equal(shown, "configuring");
		else if (st == ENI_TEARING_DOWN)
			assert_string_equal(shown, "draining");
		else if (st == ENI_WAITING)
			assert_string_equal(shown, "detaching");
		else
			assert_string_equal(shown, eni_state_name(st));
		assert_int_equal(eni_state_configuring(st),
		    strcmp(shown, "configuring") == 0);
		assert_int_equal(eni_state_draining(st),
		    strcmp(shown, "draining") == 0);
		assert_int_equal(eni_state_arriving(st),
		    st == ENI_CREATING || st == ENI_ATTACHING ||
		    eni_state_configuring(st));
	}
	assert_string_equal(eni_state_shown(ENI_NEW), "new");
	assert_false(eni_state_arriving(ENI_NEW));
	assert_string_equal(eni_state_shown(ENI_STATE_COUNT), "?");
	assert_string_equal(eni_state_name(ENI_STATE_COUNT), "?");
	assert_false(eni_state_configuring(ENI_STATE_COUNT));
	assert_false(eni_state_draining(ENI_STATE_COUNT));
}

/* Every pair of address states, as the design lists them. */
static void
test_address_pairs(void **state)
{
	uint32_t doc[ADDR_STATE_COUNT];
	int from, to, allowed = 0;

	(void)state;
	read_listing(DESIGN, ADDR_LIST, addr_name_of, ADDR_STATE_COUNT, doc);
	for (from = 0; from < ADDR_STATE_COUNT; from++)
		for (to = 0; to < ADDR_STATE_COUNT; to++) {
			bool want = from == to || (doc[from] & (1u << to));

			if (addr_transition_ok((enum addr_state)from,
			    (enum addr_state)to) != want)
				fail_msg("%s -> %s: the table says %s, the "
				    "design %s", addr_name_of(from),
				    addr_name_of(to), want ? "no" : "yes",
				    want ? "yes" : "no");
			if (from != to && want)
				allowed++;
		}
	assert_int_equal(allowed, 16);
	/* What must never happen, by name. */
	assert_false(addr_transition_ok(ADDR_UNCONFIRMED, ADDR_ASSIGNED));
	assert_false(addr_transition_ok(ADDR_UNCONFIRMED, ADDR_FREE));
	assert_false(addr_transition_ok(ADDR_REMOVING, ADDR_ASSIGNED));
	assert_false(addr_transition_ok(ADDR_PENDING, ADDR_ASSIGNED));
	assert_false(addr_transition_ok(ADDR_ASSIGNED, ADDR_REMOVING));
	assert_false(addr_transition_ok(ADDR_STATE_COUNT, ADDR_FREE));
	assert_string_equal(addr_state_name(ADDR_UNCONFIRMED), "unconfirmed");
	assert_string_equal(addr_state_name(ADDR_STATE_COUNT), "?");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_pair),
		cmocka_unit_test(test_comment_matches_design),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_births),
		cmocka_unit_test(test_shown),
		cmocka_unit_test(test_address_pairs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
