# enid: the broker (unprivileged after start-up; holds the pool).
#
# Its pure parts (the checkpoint's text and rules, and the file that holds
# it) are a library of their own so the unit tests and the fuzzer reach
# them without the daemon.
noinst_LIBRARIES += broker/libbrokerlogic.a
broker_libbrokerlogic_a_SOURCES = broker/checkpoint.c broker/checkpoint.h
broker_libbrokerlogic_a_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
BROKER_LIBS = broker/libbrokerlogic.a $(COMMON_LIBS)

sbin_PROGRAMS += broker/enid
broker_enid_SOURCES = broker/enid.c broker/enid.h broker/control.c \
	broker/req.c broker/instance.c broker/server.c
broker_enid_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS) $(CAP_CFLAGS)
broker_enid_LDADD = $(BROKER_LIBS)
