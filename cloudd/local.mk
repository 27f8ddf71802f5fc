# enid-cloudd: no capabilities; EC2 and IMDS over libcurl, XML via expat.
#
# The pure parts (XML parsing, request bodies, outcome mapping, rate-limit
# arithmetic, credential parsing) are a library of their own so the unit
# tests and the fuzzer reach them without sockets.
noinst_LIBRARIES += cloudd/libcloudd.a
cloudd_libcloudd_a_SOURCES = cloudd/ec2.h cloudd/ec2_xml.c cloudd/ec2_query.c \
	cloudd/ratelimit.h cloudd/ratelimit.c cloudd/creds.h cloudd/creds.c
cloudd_libcloudd_a_CFLAGS = $(AM_CFLAGS) $(EXPAT_CFLAGS) $(JSONC_CFLAGS)
CLOUDD_LIBS = cloudd/libcloudd.a $(COMMON_LIBS) $(EXPAT_LIBS) $(JSONC_LIBS)

helper_PROGRAMS += cloudd/enid-cloudd
cloudd_enid_cloudd_SOURCES = cloudd/cloudd.c cloudd/cloudd.h cloudd/cloud.c \
	cloudd/http.c cloudd/intent.c
cloudd_enid_cloudd_CFLAGS = $(AM_CFLAGS) $(CURL_CFLAGS) $(EXPAT_CFLAGS) \
	$(JSONC_CFLAGS) $(CAP_CFLAGS)
cloudd_enid_cloudd_LDADD = $(CLOUDD_LIBS) $(CURL_LIBS)

# A stand-in broker for the integration tests: JSON intents in, JSON
# answers out (tests/integration/test_cloudd.py).
noinst_PROGRAMS += tests/integration/cloudd_drive
tests_integration_cloudd_drive_SOURCES = tests/integration/cloudd_drive.c
tests_integration_cloudd_drive_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
tests_integration_cloudd_drive_LDADD = $(COMMON_LIBS)

if HAVE_CMOCKA
check_PROGRAMS += tests/unit/test_cloudd_xml tests/unit/test_cloudd_query \
	tests/unit/test_cloudd_ratelimit
TESTS += tests/unit/test_cloudd_xml tests/unit/test_cloudd_query \
	tests/unit/test_cloudd_ratelimit
tests_unit_test_cloudd_xml_SOURCES = tests/unit/test_cloudd_xml.c
tests_unit_test_cloudd_xml_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) \
	-I$(top_srcdir)/cloudd
tests_unit_test_cloudd_xml_LDADD = $(CLOUDD_LIBS) $(CMOCKA_LIBS)
tests_unit_test_cloudd_query_SOURCES = tests/unit/test_cloudd_query.c
tests_unit_test_cloudd_query_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) \
	-I$(top_srcdir)/cloudd
tests_unit_test_cloudd_query_LDADD = $(CLOUDD_LIBS) $(CMOCKA_LIBS)
tests_unit_test_cloudd_ratelimit_SOURCES = tests/unit/test_cloudd_ratelimit.c
tests_unit_test_cloudd_ratelimit_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) \
	-I$(top_srcdir)/cloudd
tests_unit_test_cloudd_ratelimit_LDADD = $(CLOUDD_LIBS) $(CMOCKA_LIBS)
endif

# libFuzzer over the EC2 answer parser: builds with clang directly and runs
# for FUZZ_SECONDS.  `make fuzz-ec2-xml FUZZ_SECONDS=300` for longer.
CLANG = clang
FUZZ_SECONDS = 30
FUZZ_EC2_SRC = $(srcdir)/tests/fuzz/fuzz_ec2_xml.c $(srcdir)/cloudd/ec2_xml.c \
	$(srcdir)/cloudd/ec2_query.c $(srcdir)/common/addr.c $(srcdir)/common/msg.c
EXTRA_DIST += tests/fuzz/fuzz_ec2_xml.c tests/fuzz/ec2_xml_corpus \
	tests/fuzz/ec2_xml.dict
.PHONY: fuzz-ec2-xml
fuzz-ec2-xml: $(FUZZ_EC2_SRC)
	@mkdir -p tests/fuzz
	$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -include $(top_builddir)/config.h \
		-I$(top_srcdir)/common -I$(top_srcdir)/cloudd $(EXPAT_CFLAGS) \
		-o tests/fuzz/fuzz_ec2_xml $(FUZZ_EC2_SRC) $(EXPAT_LIBS)
	work=$$(mktemp -d) && \
	./tests/fuzz/fuzz_ec2_xml -max_total_time=$(FUZZ_SECONDS) \
		-max_len=65536 -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 $(FUZZ_FLAGS) \
		-dict=$(srcdir)/tests/fuzz/ec2_xml.dict $$work \
		$(srcdir)/tests/fuzz/ec2_xml_corpus; \
	rc=$$?; rm -rf $$work; exit $$rc
CLEANFILES += tests/fuzz/fuzz_ec2_xml
