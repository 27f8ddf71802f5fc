# enid: the broker (unprivileged after start-up; holds the pool).
#
# Its pure parts (pool policy, the ENI lifecycle's table, the checkpoint's text and rules, its
# journal, and the files that hold them, the lock that keeps a second enid
# off the node, CNI and ctl request parsing) are
# a library of their own
# so the unit tests and the fuzzers reach them without the daemon.
noinst_LIBRARIES += broker/libbrokerlogic.a
broker_libbrokerlogic_a_SOURCES = broker/pool.c broker/pool.h \
	broker/lifecycle.c \
	broker/cnireq.c broker/cnireq.h broker/ctlreq.c broker/ctlreq.h \
	broker/checkpoint.c broker/checkpoint.h broker/journal.c \
	broker/journal.h broker/nodelock.c broker/nodelock.h \
	broker/prereq.c broker/prereq.h
broker_libbrokerlogic_a_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
BROKER_LIBS = broker/libbrokerlogic.a $(COMMON_LIBS)

sbin_PROGRAMS += broker/enid
broker_enid_SOURCES = broker/enid.c broker/enid.h broker/control.c \
	broker/req.c broker/instance.c broker/server.c broker/engine.h \
	broker/eni.c broker/eniaddr.c broker/eni6.c broker/cni.c broker/pods.c \
	broker/reconcile.c broker/metrics.c broker/snat.c broker/trim.c \
	broker/store.c \
	broker/store.h broker/writer.c broker/writer.h
broker_enid_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS) $(CAP_CFLAGS)
broker_enid_LDADD = $(BROKER_LIBS)

# libFuzzer over the checkpoint parser (and format, then parse again) and
# the journal's replay (tests/fuzz/fuzz_checkpoint.c).
# Builds with clang directly, like fuzz-ec2-xml in cloudd/local.mk whose
# CLANG and FUZZ_SECONDS it shares: `make fuzz-checkpoint FUZZ_SECONDS=300`.
FUZZ_CKPT_SRC = $(srcdir)/tests/fuzz/fuzz_checkpoint.c \
	$(srcdir)/broker/checkpoint.c $(srcdir)/broker/journal.c \
	$(srcdir)/common/addr.c
EXTRA_DIST += tests/fuzz/fuzz_checkpoint.c tests/fuzz/checkpoint.dict \
	tests/fuzz/corpus/checkpoint
.PHONY: fuzz-checkpoint
fuzz-checkpoint: $(FUZZ_CKPT_SRC)
	@mkdir -p tests/fuzz
	$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -include $(top_builddir)/config.h \
		-I$(top_srcdir)/common -I$(top_srcdir)/broker $(JSONC_CFLAGS) \
		-o tests/fuzz/fuzz_checkpoint $(FUZZ_CKPT_SRC) $(JSONC_LIBS)
	work=$$(mktemp -d) && \
	./tests/fuzz/fuzz_checkpoint -max_total_time=$(FUZZ_SECONDS) \
		-max_len=65536 -timeout=10 -rss_limit_mb=2048 \
		-dict=$(srcdir)/tests/fuzz/checkpoint.dict \
		-print_final_stats=1 $(FUZZ_FLAGS) $$work \
		$(srcdir)/tests/fuzz/corpus/checkpoint; \
	rc=$$?; rm -rf $$work; exit $$rc
CLEANFILES += tests/fuzz/fuzz_checkpoint

# libFuzzer over the CNI request parser, fed lines as cni.sock is
# (tests/fuzz/fuzz_cnireq.c): `make fuzz-cnireq FUZZ_SECONDS=300`.
FUZZ_CNIREQ_SRC = $(srcdir)/tests/fuzz/fuzz_cnireq.c \
	$(srcdir)/tests/fuzz/fuzz_lines.c $(srcdir)/broker/cnireq.c $(srcdir)/broker/checkpoint.c \
	$(srcdir)/common/addr.c
EXTRA_DIST += tests/fuzz/fuzz_cnireq.c tests/fuzz/fuzz_lines.c \
	tests/fuzz/fuzz_lines.h tests/fuzz/cnireq.dict \
	tests/fuzz/corpus/cnireq
.PHONY: fuzz-cnireq
fuzz-cnireq: $(FUZZ_CNIREQ_SRC) $(srcdir)/tests/fuzz/fuzz_lines.h
	@mkdir -p tests/fuzz
	$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -include $(top_builddir)/config.h \
		-I$(top_srcdir)/common -I$(top_srcdir)/broker $(JSONC_CFLAGS) \
		-o tests/fuzz/fuzz_cnireq $(FUZZ_CNIREQ_SRC) $(JSONC_LIBS)
	work=$$(mktemp -d) && \
	./tests/fuzz/fuzz_cnireq -max_total_time=$(FUZZ_SECONDS) \
		-max_len=65536 -timeout=10 -rss_limit_mb=2048 \
		-dict=$(srcdir)/tests/fuzz/cnireq.dict \
		-print_final_stats=1 $(FUZZ_FLAGS) $$work \
		$(srcdir)/tests/fuzz/corpus/cnireq; \
	rc=$$?; rm -rf $$work; exit $$rc
CLEANFILES += tests/fuzz/fuzz_cnireq

# `make check` holds the broker's files to their layers (doc/design.md,
# "The broker's layers"): no file refers to one in a layer above its
# own, as the objects' symbols say.
check-local: check-layers
.PHONY: check-layers
check-layers: $(broker_enid_OBJECTS) $(broker_libbrokerlogic_a_OBJECTS)
	@/usr/bin/python3 $(srcdir)/tests/layers --src $(srcdir) .
EXTRA_DIST += tests/layers
