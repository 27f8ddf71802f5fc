# enid-cni: the CNI plugin, installed where the runtime looks for plugins,
# and again as enid-ipam (a link: the same binary in its IPAM role).
#
# Its pure part (the invocation's parsing, results, error codes) is a
# library of its own so the unit tests and the fuzzer reach it.
noinst_LIBRARIES += cni/libcnilogic.a
cni_libcnilogic_a_SOURCES = cni/cniconf.c cni/cniresult.c cni/cniconf.h \
	cni/answer.c cni/answer.h
cni_libcnilogic_a_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)

cnibin_PROGRAMS += cni/enid-cni
cni_enid_cni_SOURCES = cni/enid-cni.c cni/wire.c cni/wire.h
cni_enid_cni_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS) $(LIBNL_CFLAGS)
# Only addr.c of the common library; CNI_NETLIBS is libnl and json-c,
# archives when configure found them (a shorter start-up), and with
# CNI_LDFLAGS (-static-pie) libc's too.
cni_enid_cni_LDFLAGS = $(AM_LDFLAGS) $(CNI_LDFLAGS)
if STATIC_PIE_CNI
cni_enid_cni_SOURCES += cni/nonss.c
endif
EXTRA_DIST += cni/nonss.c
cni_enid_cni_LDADD = cni/libcnilogic.a common/libenidcommon.a $(CNI_NETLIBS)

# The DaemonSet's init container: installs the plugin and the conflist
# on the host without a shell in the image (contrib/daemonset.yaml).
helper_PROGRAMS += cni/enid-cni-install
cni_enid_cni_install_SOURCES = cni/enid-cni-install.c
cni_enid_cni_install_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
cni_enid_cni_install_LDADD = $(JSONC_LIBS)

# The runtime runs a plugin by its type's name; the role follows it.  The
# CNI directory's programs install with the data (its name holds no
# "exec"), so the directory may not exist yet: the relative link does not
# need its target to.
install-exec-hook: install-enid-ipam
uninstall-hook: uninstall-enid-ipam
.PHONY: install-enid-ipam uninstall-enid-ipam
install-enid-ipam:
	$(MKDIR_P) "$(DESTDIR)$(cnibindir)"
	cd "$(DESTDIR)$(cnibindir)" && rm -f enid-ipam && \
		$(LN_S) enid-cni enid-ipam
uninstall-enid-ipam:
	rm -f "$(DESTDIR)$(cnibindir)/enid-ipam"

# A build-tree enid-ipam beside enid-cni, for the tests and the benchmark.
all-local: cni/enid-ipam
cni/enid-ipam: cni/enid-cni
	rm -f cni/enid-ipam && cd cni && $(LN_S) enid-cni enid-ipam
CLEANFILES += cni/enid-ipam
EXTRA_DIST += tests/bench/bench_cni

if HAVE_CMOCKA
check_PROGRAMS += tests/unit/test_cniconf
TESTS += tests/unit/test_cniconf
tests_unit_test_cniconf_SOURCES = tests/unit/test_cniconf.c
tests_unit_test_cniconf_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/cni
tests_unit_test_cniconf_LDADD = cni/libcnilogic.a $(COMMON_LIBS) \
	$(CMOCKA_LIBS)
check_PROGRAMS += tests/unit/test_cnianswer
TESTS += tests/unit/test_cnianswer
tests_unit_test_cnianswer_SOURCES = tests/unit/test_cnianswer.c
tests_unit_test_cnianswer_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/cni
tests_unit_test_cnianswer_LDADD = cni/libcnilogic.a $(COMMON_LIBS) \
	$(CMOCKA_LIBS)
endif

# libFuzzer over the invocation parser (environment and stdin) and the
# results built from what parses: `make fuzz-cni FUZZ_SECONDS=600`.
FUZZ_CNI_SRC = $(srcdir)/tests/fuzz/fuzz_cni_stdin.c \
	$(srcdir)/cni/cniconf.c $(srcdir)/cni/cniresult.c \
	$(srcdir)/common/addr.c
EXTRA_DIST += tests/fuzz/fuzz_cni_stdin.c tests/fuzz/cni.dict \
	tests/fuzz/corpus/cni
.PHONY: fuzz-cni
fuzz-cni: $(FUZZ_CNI_SRC)
	@mkdir -p tests/fuzz
	$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -include $(top_builddir)/config.h \
		-I$(top_srcdir)/common -I$(top_srcdir)/cni $(JSONC_CFLAGS) \
		-o tests/fuzz/fuzz_cni_stdin $(FUZZ_CNI_SRC) $(JSONC_LIBS)
	work=$$(mktemp -d) && \
	./tests/fuzz/fuzz_cni_stdin -max_total_time=$(FUZZ_SECONDS) \
		-max_len=16384 -timeout=10 -rss_limit_mb=2048 \
		-dict=$(srcdir)/tests/fuzz/cni.dict \
		-print_final_stats=1 $(FUZZ_FLAGS) $$work $(srcdir)/tests/fuzz/corpus/cni; \
	rc=$$?; rm -rf $$work; exit $$rc
CLEANFILES += tests/fuzz/fuzz_cni_stdin
