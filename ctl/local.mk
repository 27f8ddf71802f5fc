# enidctl: the admin command.  node-setup's route parsing is pure
# (nodesetup_uplink()), for tests/unit/test_nodesetup.
sbin_PROGRAMS += ctl/enidctl
ctl_enidctl_SOURCES = ctl/enidctl.c ctl/nodesetup.c ctl/nodesetup.h
ctl_enidctl_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS) $(CAP_CFLAGS)
ctl_enidctl_LDADD = $(COMMON_LIBS)
