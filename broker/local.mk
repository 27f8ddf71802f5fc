# enid: the broker (unprivileged after start-up; holds the pool).  Its
# pure logic (pool policy, checkpoint text, request parsing) is a library
# of its own so the unit tests and fuzzers reach it without I/O.
noinst_LIBRARIES += broker/libbrokerlogic.a
broker_libbrokerlogic_a_SOURCES = broker/pool.c broker/pool.h
broker_libbrokerlogic_a_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)

sbin_PROGRAMS += broker/enid
broker_enid_SOURCES = broker/enid.c broker/enid.h broker/control.c \
	broker/req.c broker/instance.c broker/server.c
broker_enid_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS) $(CAP_CFLAGS)
broker_enid_LDADD = broker/libbrokerlogic.a $(COMMON_LIBS)
