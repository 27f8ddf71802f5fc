# enid-netd: CAP_NET_ADMIN only; netlink through libnl-route-3.
helper_PROGRAMS += netd/enid-netd
netd_enid_netd_SOURCES = netd/netd.c
netd_enid_netd_CFLAGS = $(AM_CFLAGS) $(LIBNL_CFLAGS) $(CAP_CFLAGS)
netd_enid_netd_LDADD = $(COMMON_LIBS) $(LIBNL_LIBS)
