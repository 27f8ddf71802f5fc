# The chaos soak (root, network namespaces; tests/chaos/README.md).
#   make chaos DURATION=600            the long run (CHAOS_MODE=restart for
#                                      the whole set kill -9'd under load)
#   make check-chaos                   the short runs run-all --full makes:
#                                      90 s of chaos, 30 s of restarts, each
#                                      turning prefix delegation on at a
#                                      third (CHAOS_ARGS="--prefixes off":
#                                      single addresses only)
# Each prints its summary table and fails on any invariant violation.
DURATION = 600
CHAOS_MODE = chaos
CHAOS = cd $(srcdir) && ENID_BUILDDIR=$(abs_builddir) /usr/bin/python3 \
	tests/chaos/chaos.py
EXTRA_DIST += tests/chaos/chaos.py tests/chaos/README.md

.PHONY: chaos check-chaos
chaos: all
	$(CHAOS) --mode $(CHAOS_MODE) --duration $(DURATION) $(CHAOS_ARGS)

# Both run even when the first fails; the target fails if either did.
check-chaos: all
	rc=0; \
	($(CHAOS) --mode chaos --duration 90 $(CHAOS_ARGS)) || rc=1; \
	($(CHAOS) --mode restart --duration 30 $(CHAOS_ARGS)) || rc=1; \
	exit $$rc
