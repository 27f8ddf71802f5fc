# enid-cni: the CNI plugin, installed where the runtime looks for plugins.
cnibin_PROGRAMS += cni/enid-cni
cni_enid_cni_SOURCES = cni/enid-cni.c
cni_enid_cni_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
cni_enid_cni_LDADD = $(COMMON_LIBS)
