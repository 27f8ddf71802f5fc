# enid-cloudd: no capabilities; EC2 and IMDS over libcurl, XML via expat.
helper_PROGRAMS += cloudd/enid-cloudd
cloudd_enid_cloudd_SOURCES = cloudd/cloudd.c
cloudd_enid_cloudd_CFLAGS = $(AM_CFLAGS) $(CURL_CFLAGS) $(EXPAT_CFLAGS) \
	$(JSONC_CFLAGS) $(CAP_CFLAGS)
cloudd_enid_cloudd_LDADD = $(COMMON_LIBS) $(CURL_LIBS) $(EXPAT_LIBS)
