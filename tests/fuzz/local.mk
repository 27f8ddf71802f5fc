# libFuzzer targets of the internal message decoder, the ctl request
# parser, cloudd's IMDS answers, the configuration loader and enid-cni's
# reading of the broker's answer, and `make fuzz`, which runs all nine
# (these five and fuzz-ec2-xml, fuzz-cni, fuzz-checkpoint and
# fuzz-cnireq, defined beside their code).  Each is
# built by clang directly, like those, and runs for FUZZ_SECONDS over a
# scratch directory and its seed corpus; FUZZ_FLAGS adds libFuzzer
# options (-runs=N for a fixed count).
FUZZ_CFLAGS = -g -O1 -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=all -include $(top_builddir)/config.h \
	-I$(top_srcdir)/common
FUZZ_RUN = -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
FUZZ_TARGETS = ec2-xml cni cni-answer checkpoint cnireq msg ctlreq imds \
	config

# Each for FUZZ_SECONDS, one after another (a crash stops the run), then
# what each did; the logs stay in tests/fuzz/logs.
.PHONY: fuzz
fuzz:
	@mkdir -p tests/fuzz/logs; \
	for t in $(FUZZ_TARGETS); do \
		log=tests/fuzz/logs/fuzz-$$t.log; \
		echo "fuzz-$$t: $(FUZZ_SECONDS) s"; \
		if ! $(MAKE) $(AM_MAKEFLAGS) fuzz-$$t >$$log 2>&1; then \
			tail -60 $$log; \
			echo "fuzz-$$t: FAILED (whole log: $$log)"; \
			exit 1; \
		fi; \
	done; \
	printf '%-18s %12s %10s %8s\n' target executions exec/s corpus+; \
	for t in $(FUZZ_TARGETS); do \
		log=tests/fuzz/logs/fuzz-$$t.log; \
		awk -v t=fuzz-$$t '/^stat::number_of_executed_units/ { n = $$2 } \
		    /^stat::average_exec_per_sec/ { r = $$2 } \
		    /^stat::new_units_added/ { u = $$2 } \
		    END { printf "%-18s %12d %10d %8d\n", t, n, r, u }' $$log; \
	done

clean-local: clean-fuzz-logs
.PHONY: clean-fuzz-logs
clean-fuzz-logs:
	rm -rf tests/fuzz/logs

# The internal protocol, datagrams through a real socketpair.
FUZZ_MSG_SRC = $(srcdir)/tests/fuzz/fuzz_msg.c $(srcdir)/common/msg.c \
	$(srcdir)/common/addr.c
EXTRA_DIST += tests/fuzz/fuzz_msg.c tests/fuzz/msg.dict tests/fuzz/corpus/msg
.PHONY: fuzz-msg
fuzz-msg: $(FUZZ_MSG_SRC)
	@mkdir -p tests/fuzz
	$(CLANG) $(FUZZ_CFLAGS) -o tests/fuzz/fuzz_msg $(FUZZ_MSG_SRC)
	work=$$(mktemp -d) && \
	./tests/fuzz/fuzz_msg -max_total_time=$(FUZZ_SECONDS) \
		-max_len=40000 $(FUZZ_RUN) $(FUZZ_FLAGS) \
		-dict=$(srcdir)/tests/fuzz/msg.dict \
		$$work $(srcdir)/tests/fuzz/corpus/msg; \
	rc=$$?; rm -rf $$work; exit $$rc
CLEANFILES += tests/fuzz/fuzz_msg

# cloudd's IMDS answers (cloudd/creds.c).
FUZZ_IMDS_SRC = $(srcdir)/tests/fuzz/fuzz_imds.c $(srcdir)/cloudd/creds.c \
	$(srcdir)/cloudd/ec2_query.c $(srcdir)/cloudd/ec2_xml.c \
	$(srcdir)/common/addr.c $(srcdir)/common/msg.c
EXTRA_DIST += tests/fuzz/fuzz_imds.c tests/fuzz/imds.dict \
	tests/fuzz/corpus/imds
.PHONY: fuzz-imds
fuzz-imds: $(FUZZ_IMDS_SRC)
	@mkdir -p tests/fuzz
	$(CLANG) $(FUZZ_CFLAGS) -I$(top_srcdir)/cloudd $(JSONC_CFLAGS) \
		$(EXPAT_CFLAGS) -o tests/fuzz/fuzz_imds $(FUZZ_IMDS_SRC) \
		$(JSONC_LIBS) $(EXPAT_LIBS)
	work=$$(mktemp -d) && \
	./tests/fuzz/fuzz_imds -max_total_time=$(FUZZ_SECONDS) \
		-max_len=8192 $(FUZZ_RUN) $(FUZZ_FLAGS) \
		-dict=$(srcdir)/tests/fuzz/imds.dict \
		$$work $(srcdir)/tests/fuzz/corpus/imds; \
	rc=$$?; rm -rf $$work; exit $$rc
CLEANFILES += tests/fuzz/fuzz_imds

# The admin socket's requests, fed lines as ctl.sock is.
FUZZ_CTLREQ_SRC = $(srcdir)/tests/fuzz/fuzz_ctlreq.c \
	$(srcdir)/tests/fuzz/fuzz_lines.c $(srcdir)/broker/ctlreq.c \
	$(srcdir)/common/log.c
EXTRA_DIST += tests/fuzz/fuzz_ctlreq.c tests/fuzz/ctlreq.dict \
	tests/fuzz/corpus/ctlreq
.PHONY: fuzz-ctlreq
fuzz-ctlreq: $(FUZZ_CTLREQ_SRC) $(srcdir)/tests/fuzz/fuzz_lines.h
	@mkdir -p tests/fuzz
	$(CLANG) $(FUZZ_CFLAGS) -I$(top_srcdir)/broker $(JSONC_CFLAGS) \
		-o tests/fuzz/fuzz_ctlreq $(FUZZ_CTLREQ_SRC) $(JSONC_LIBS)
	work=$$(mktemp -d) && \
	./tests/fuzz/fuzz_ctlreq -max_total_time=$(FUZZ_SECONDS) \
		-max_len=16384 $(FUZZ_RUN) $(FUZZ_FLAGS) \
		-dict=$(srcdir)/tests/fuzz/ctlreq.dict \
		$$work $(srcdir)/tests/fuzz/corpus/ctlreq; \
	rc=$$?; rm -rf $$work; exit $$rc
CLEANFILES += tests/fuzz/fuzz_ctlreq

# The configuration loader, and the configuration as enidctl shows it.
FUZZ_CONFIG_SRC = $(srcdir)/tests/fuzz/fuzz_config.c \
	$(srcdir)/common/conf.c $(srcdir)/common/log.c $(srcdir)/common/addr.c
EXTRA_DIST += tests/fuzz/fuzz_config.c tests/fuzz/config.dict \
	tests/fuzz/corpus/config
.PHONY: fuzz-config
fuzz-config: $(FUZZ_CONFIG_SRC)
	@mkdir -p tests/fuzz
	$(CLANG) $(FUZZ_CFLAGS) $(JSONC_CFLAGS) \
		-o tests/fuzz/fuzz_config $(FUZZ_CONFIG_SRC) $(JSONC_LIBS)
	work=$$(mktemp -d) && \
	./tests/fuzz/fuzz_config -max_total_time=$(FUZZ_SECONDS) \
		-max_len=16384 $(FUZZ_RUN) $(FUZZ_FLAGS) \
		-dict=$(srcdir)/tests/fuzz/config.dict \
		$$work $(srcdir)/tests/fuzz/corpus/config; \
	rc=$$?; rm -rf $$work; exit $$rc
CLEANFILES += tests/fuzz/fuzz_config

# enid-cni's reading of the broker's answer (cni/answer.c): the root
# plugin's one input from a process it does not trust.
FUZZ_CNI_ANSWER_SRC = $(srcdir)/tests/fuzz/fuzz_cni_answer.c \
	$(srcdir)/cni/answer.c $(srcdir)/common/addr.c
EXTRA_DIST += tests/fuzz/fuzz_cni_answer.c tests/fuzz/cnians.dict \
	tests/fuzz/corpus/cnians
.PHONY: fuzz-cni-answer
fuzz-cni-answer: $(FUZZ_CNI_ANSWER_SRC) $(srcdir)/cni/answer.h
	@mkdir -p tests/fuzz
	$(CLANG) $(FUZZ_CFLAGS) -I$(top_srcdir)/cni \
		-o tests/fuzz/fuzz_cni_answer $(FUZZ_CNI_ANSWER_SRC)
	work=$$(mktemp -d) && \
	./tests/fuzz/fuzz_cni_answer -max_total_time=$(FUZZ_SECONDS) \
		-max_len=70000 $(FUZZ_RUN) $(FUZZ_FLAGS) \
		-dict=$(srcdir)/tests/fuzz/cnians.dict \
		$$work $(srcdir)/tests/fuzz/corpus/cnians; \
	rc=$$?; rm -rf $$work; exit $$rc
CLEANFILES += tests/fuzz/fuzz_cni_answer
