# Benchmarks (root, network namespaces): make bench.  Not part of make check
# or the CI suite: they measure, on the machine at hand, against a peer
# measured in the same run.  The load generator is built with everything
# else, so the warnings keep it honest.
noinst_PROGRAMS += tests/bench/bench_broker
tests_bench_bench_broker_SOURCES = tests/bench/bench_broker.c
tests_bench_bench_broker_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
tests_bench_bench_broker_LDADD = $(JSONC_LIBS)
EXTRA_DIST += tests/bench/bench_broker_run tests/bench/bench_memory \
	tests/bench/benchenv.py

# Both run even when the first fails; the target fails if either did.
.PHONY: bench
bench: all
	cd $(srcdir) || exit 2; rc=0; \
	ENID_BUILDDIR=$(abs_builddir) /usr/bin/python3 \
		tests/bench/bench_broker_run $(BENCH_BROKER_ARGS) || rc=1; \
	ENID_BUILDDIR=$(abs_builddir) /usr/bin/python3 \
		tests/bench/bench_memory $(BENCH_MEMORY_ARGS) || rc=1; \
	exit $$rc
