# enidctl: the admin command.
sbin_PROGRAMS += ctl/enidctl
ctl_enidctl_SOURCES = ctl/enidctl.c
ctl_enidctl_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
ctl_enidctl_LDADD = $(COMMON_LIBS)
