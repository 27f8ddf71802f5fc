# Benchmarks (root, network namespaces): make bench.  Not part of make check
# or the CI suite: they measure, on the machine at hand, against a peer
# measured in the same run.  The load generator is built with everything
# else, so the warnings keep it honest.
noinst_PROGRAMS += tests/bench/bench_broker
tests_bench_bench_broker_SOURCES = tests/bench/bench_broker.c
tests_bench_bench_broker_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
tests_bench_bench_broker_LDADD = $(JSONC_LIBS)
EXTRA_DIST += tests/bench/bench_broker_run tests/bench/bench_memory \
	tests/bench/benchenv.py tests/bench/bench_cni \
	tests/bench/bench_netd_rules tests/bench/bench_warmup \
	tests/bench/bench_rollout tests/bench/bench_all \
	tests/bench/bench_profile tests/bench/bench_idle \
	tests/bench/bench_prefixes tests/bench/bench_snat \
	tests/bench/bench_restart tests/bench/bench_dual

# Every benchmark runs, even after one fails, and one table closes the
# run (tests/bench/bench_all; doc/performance.md).  BENCH_ONLY=warmup,...
# picks some; BENCH_<NAME>_ARGS pass arguments to one.
.PHONY: bench
bench: all
	cd $(srcdir) && ENID_BUILDDIR=$(abs_builddir) \
	BENCH_CNI_ARGS="$(BENCH_CNI_ARGS)" \
	BENCH_BROKER_ARGS="$(BENCH_BROKER_ARGS)" \
	BENCH_MEMORY_ARGS="$(BENCH_MEMORY_ARGS)" \
	BENCH_WARMUP_ARGS="$(BENCH_WARMUP_ARGS)" \
	BENCH_ROLLOUT_ARGS="$(BENCH_ROLLOUT_ARGS)" \
	BENCH_IDLE_ARGS="$(BENCH_IDLE_ARGS)" \
	BENCH_PREFIXES_ARGS="$(BENCH_PREFIXES_ARGS)" \
	BENCH_SNAT_ARGS="$(BENCH_SNAT_ARGS)" \
	BENCH_RESTART_ARGS="$(BENCH_RESTART_ARGS)" \
	BENCH_DUAL_ARGS="$(BENCH_DUAL_ARGS)" \
	BENCH_CNI_DUAL_ARGS="$(BENCH_CNI_DUAL_ARGS)" \
	BENCH_MEMORY_DUAL_ARGS="$(BENCH_MEMORY_DUAL_ARGS)" \
	BENCH_ONLY="$(BENCH_ONLY)" \
	/usr/bin/python3 tests/bench/bench_all

# Where the CPU goes on the broker's ADD path and cloudd's request path
# (perf sampling; tests/bench/bench_profile).  Not in the table: no ratio.
.PHONY: bench-profile
bench-profile: all
	cd $(srcdir) && ENID_BUILDDIR=$(abs_builddir) \
	/usr/bin/python3 tests/bench/bench_profile $(BENCH_PROFILE_ARGS)
