/*
 * Addresses from text for the unit tests: each must parse, or the test
 * fails there.  Include after cmocka.h and addr.h.
 */
#ifndef ENID_TESTADDR_H
#define ENID_TESTADDR_H

/* A dotted quad, network order, as the pool holds it. */
static inline uint32_t
ip(const char *s)
{
	uint32_t a = 0;

	assert_int_equal(ip4_parse(s, &a), 0);
	return a;
}

/* The same, as a message carries it. */
static inline struct ip_addr
ipa(const char *s)
{
	struct ip_addr a;

	assert_int_equal(ip_addr_parse(s, &a, NULL), 0);
	return a;
}

/* And by pointer, for a call: one of a few that take turns. */
static inline const struct ip_addr *
ipp(const char *s)
{
	static struct ip_addr a[4];
	static unsigned int next;

	a[next % 4] = ipa(s);
	return &a[next++ % 4];
}

static const struct ip_addr NO_ADDR;		/* never set: none */

#endif /* ENID_TESTADDR_H */
