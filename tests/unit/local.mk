# cmocka unit tests for common/: no root, no network.
if HAVE_CMOCKA
UNIT_COMMON = tests/unit/test_msg tests/unit/test_loop \
	tests/unit/test_config tests/unit/test_sandbox tests/unit/test_addr \
	tests/unit/test_msgq tests/unit/test_proc
check_PROGRAMS += $(UNIT_COMMON)
TESTS += $(UNIT_COMMON)
UNIT_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(JSONC_CFLAGS) $(CAP_CFLAGS)
UNIT_LDADD = $(COMMON_LIBS) $(CMOCKA_LIBS)

tests_unit_test_msg_SOURCES = tests/unit/test_msg.c
tests_unit_test_msg_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_msg_LDADD = $(UNIT_LDADD)
tests_unit_test_loop_SOURCES = tests/unit/test_loop.c
tests_unit_test_loop_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_loop_LDADD = $(UNIT_LDADD)
tests_unit_test_config_SOURCES = tests/unit/test_config.c
tests_unit_test_config_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_config_LDADD = $(UNIT_LDADD)
tests_unit_test_sandbox_SOURCES = tests/unit/test_sandbox.c
tests_unit_test_sandbox_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_sandbox_LDADD = $(UNIT_LDADD)
tests_unit_test_msgq_SOURCES = tests/unit/test_msgq.c
tests_unit_test_msgq_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_msgq_LDADD = $(UNIT_LDADD)
tests_unit_test_proc_SOURCES = tests/unit/test_proc.c
tests_unit_test_proc_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_proc_LDADD = $(UNIT_LDADD)
tests_unit_test_addr_SOURCES = tests/unit/test_addr.c
tests_unit_test_addr_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_addr_LDADD = $(UNIT_LDADD)
endif

# enidctl node-setup's choice of uplink from the kernel's route texts.
if HAVE_CMOCKA
check_PROGRAMS += tests/unit/test_nodesetup
TESTS += tests/unit/test_nodesetup
tests_unit_test_nodesetup_SOURCES = tests/unit/test_nodesetup.c \
	ctl/nodesetup.c
tests_unit_test_nodesetup_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/ctl
tests_unit_test_nodesetup_LDADD = $(UNIT_LDADD)
endif

# The broker's checkpoint: text, rules, its journal, and the files (no
# root needed; as root a case runs a child that gives it up); the lock
# that keeps a second enid off the node; the CNI and ctl request parsers.
if HAVE_CMOCKA
UNIT_BROKER = tests/unit/test_checkpoint tests/unit/test_checkpoint_crash \
	tests/unit/test_journal tests/unit/test_cnireq tests/unit/test_ctlreq \
	tests/unit/test_nodelock tests/unit/test_prereq
check_PROGRAMS += $(UNIT_BROKER)
TESTS += $(UNIT_BROKER)
tests_unit_test_checkpoint_SOURCES = tests/unit/test_checkpoint.c
tests_unit_test_checkpoint_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/broker
tests_unit_test_checkpoint_LDADD = $(BROKER_LIBS) $(CMOCKA_LIBS)
tests_unit_test_checkpoint_crash_SOURCES = tests/unit/test_checkpoint_crash.c
tests_unit_test_checkpoint_crash_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/broker
tests_unit_test_checkpoint_crash_LDADD = $(BROKER_LIBS) $(CMOCKA_LIBS)
tests_unit_test_journal_SOURCES = tests/unit/test_journal.c
tests_unit_test_journal_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/broker
tests_unit_test_journal_LDADD = $(BROKER_LIBS) $(CMOCKA_LIBS)
tests_unit_test_nodelock_SOURCES = tests/unit/test_nodelock.c
tests_unit_test_nodelock_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/broker
tests_unit_test_nodelock_LDADD = $(BROKER_LIBS) $(CMOCKA_LIBS)
tests_unit_test_prereq_SOURCES = tests/unit/test_prereq.c
tests_unit_test_prereq_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/broker
tests_unit_test_prereq_LDADD = $(BROKER_LIBS) $(CMOCKA_LIBS)
tests_unit_test_cnireq_SOURCES = tests/unit/test_cnireq.c
tests_unit_test_cnireq_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/broker
tests_unit_test_cnireq_LDADD = $(BROKER_LIBS) $(CMOCKA_LIBS)
tests_unit_test_ctlreq_SOURCES = tests/unit/test_ctlreq.c
tests_unit_test_ctlreq_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/broker
tests_unit_test_ctlreq_LDADD = $(BROKER_LIBS) $(CMOCKA_LIBS)
endif

if HAVE_CMOCKA
check_PROGRAMS += tests/unit/test_pool
TESTS += tests/unit/test_pool
tests_unit_test_pool_SOURCES = tests/unit/test_pool.c
tests_unit_test_pool_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/broker
tests_unit_test_pool_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_pool_LDADD = $(BROKER_LIBS) $(CMOCKA_LIBS)
endif

# The ENI lifecycle's table, against doc/design.md and eni.c's comment.
if HAVE_CMOCKA
check_PROGRAMS += tests/unit/test_lifecycle
TESTS += tests/unit/test_lifecycle
tests_unit_test_lifecycle_SOURCES = tests/unit/test_lifecycle.c
tests_unit_test_lifecycle_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/broker \
	-DTOP_SRCDIR='"$(abs_top_srcdir)"'
tests_unit_test_lifecycle_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_lifecycle_LDADD = $(BROKER_LIBS) $(CMOCKA_LIBS)
endif

# The broker's JSON-lines server (broker/server.c) over real unix sockets
# and the real loop, with the test's own ops.
if HAVE_CMOCKA
check_PROGRAMS += tests/unit/test_server
TESTS += tests/unit/test_server
tests_unit_test_server_SOURCES = tests/unit/test_server.c broker/server.c \
	broker/trim.c
tests_unit_test_server_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/broker
tests_unit_test_server_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_server_LDADD = $(BROKER_LIBS) $(CMOCKA_LIBS)
endif

# The broker's store (broker/store.c) through its interface: the real
# loop, its writer thread, and answers to a client on a real socket.
if HAVE_CMOCKA
check_PROGRAMS += tests/unit/test_store
TESTS += tests/unit/test_store
tests_unit_test_store_SOURCES = tests/unit/test_store.c broker/store.c \
	broker/writer.c broker/server.c broker/trim.c
tests_unit_test_store_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/broker
tests_unit_test_store_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_store_LDADD = $(BROKER_LIBS) $(CMOCKA_LIBS)
endif

# A mutation check of the edge tests: one-line changes to the code under
# test, each of which the tests must catch (tests/unit/mutants.py).
# About a minute; not part of make check.
EXTRA_DIST += tests/unit/mutants.py tests/unit/testckpt.h tests/unit/testdir.h \
	tests/unit/testrng.h tests/unit/testaddr.h
.PHONY: mutants
mutants: all
	/usr/bin/python3 $(srcdir)/tests/unit/mutants.py --builddir $(abs_builddir)
