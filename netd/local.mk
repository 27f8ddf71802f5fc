# enid-netd: CAP_NET_ADMIN only; rtnetlink through libnl-route-3, its
# nftables table through libnftnl and libmnl.  Its pure logic (policy
# checks, planning, the table as data) is a library of its own so the unit
# tests reach it without root.
noinst_LIBRARIES += netd/libnetdlogic.a
netd_libnetdlogic_a_SOURCES = netd/policy.c netd/policy.h \
	netd/plan.c netd/plan.h netd/snat.c netd/snat.h

helper_PROGRAMS += netd/enid-netd
netd_enid_netd_SOURCES = netd/netd.c netd/kernel.c netd/kernel.h \
	netd/nft.c netd/nft.h
netd_enid_netd_CFLAGS = $(AM_CFLAGS) $(LIBNL_CFLAGS) $(NFTNL_CFLAGS) \
	$(MNL_CFLAGS) $(CAP_CFLAGS)
netd_enid_netd_LDADD = netd/libnetdlogic.a $(COMMON_LIBS) $(LIBNL_LIBS) \
	$(NFTNL_LIBS) $(MNL_LIBS)

# The stand-in broker the integration tests and the benchmark drive netd
# with (tests/integration/test_netd.py, tests/bench/bench_netd_rules).
noinst_PROGRAMS += tests/integration/netd_drive
tests_integration_netd_drive_SOURCES = tests/integration/netd_drive.c
tests_integration_netd_drive_LDADD = $(COMMON_LIBS)
EXTRA_DIST += tests/integration/test_netd.py \
	tests/integration/test_netd_hostile.py \
	tests/integration/test_netd_routes.py \
	tests/integration/test_netd_snat.py \
	tests/integration/test_netd_egress.py tests/integration/nft_raw.py \
	tests/integration/netd_helpers.py tests/bench/bench_netd_rules

if HAVE_CMOCKA
check_PROGRAMS += tests/unit/test_netd_policy tests/unit/test_netd_plan \
	tests/unit/test_netd_snat
TESTS += tests/unit/test_netd_policy tests/unit/test_netd_plan \
	tests/unit/test_netd_snat
tests_unit_test_netd_policy_SOURCES = tests/unit/test_netd_policy.c
tests_unit_test_netd_policy_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) \
	-I$(top_srcdir)/netd
tests_unit_test_netd_policy_LDADD = netd/libnetdlogic.a $(COMMON_LIBS) \
	$(CMOCKA_LIBS)
tests_unit_test_netd_plan_SOURCES = tests/unit/test_netd_plan.c
tests_unit_test_netd_plan_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) \
	-I$(top_srcdir)/netd
tests_unit_test_netd_plan_LDADD = netd/libnetdlogic.a $(COMMON_LIBS) \
	$(CMOCKA_LIBS)
tests_unit_test_netd_snat_SOURCES = tests/unit/test_netd_snat.c
tests_unit_test_netd_snat_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) \
	-I$(top_srcdir)/netd
tests_unit_test_netd_snat_LDADD = netd/libnetdlogic.a $(COMMON_LIBS) \
	$(CMOCKA_LIBS)
endif
