# enid: the broker (unprivileged after start-up; holds the pool).
sbin_PROGRAMS += broker/enid
broker_enid_SOURCES = broker/enid.c broker/enid.h broker/control.c \
	broker/req.c broker/instance.c broker/server.c
broker_enid_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS) $(CAP_CFLAGS)
broker_enid_LDADD = $(COMMON_LIBS)
