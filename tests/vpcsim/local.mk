# simulated VPC (tests/vpcsim): Python, nothing to build.
# Its own tests need root and network namespaces: make check-vpcsim.
EXTRA_DIST += tests/vpcsim/vpcsim tests/vpcsim/README.md tests/vpcsim/run-tests \
	tests/vpcsim/pytest.ini tests/vpcsim/conftest.py tests/vpcsim/nodeagent.py \
	tests/vpcsim/simlib/__init__.py tests/vpcsim/simlib/netns.py \
	tests/vpcsim/simlib/model.py tests/vpcsim/simlib/dataplane.py \
	tests/vpcsim/simlib/httpbase.py tests/vpcsim/simlib/ec2api.py \
	tests/vpcsim/simlib/imds.py tests/vpcsim/simlib/control.py \
	tests/vpcsim/simlib/outside.py tests/vpcsim/test_vpcsim_outside.py \
	tests/vpcsim/simlib/peered.py tests/vpcsim/test_vpcsim_peered.py \
	tests/vpcsim/simlib/forkserver.py \
	tests/vpcsim/test_vpcsim_ec2.py tests/vpcsim/test_vpcsim_imds.py \
	tests/vpcsim/test_vpcsim_dataplane.py tests/vpcsim/test_vpcsim_faults.py \
	tests/vpcsim/test_vpcsim_badinput.py tests/vpcsim/test_vpcsim_lifecycle.py \
	tests/vpcsim/test_vpcsim_links.py tests/vpcsim/test_vpcsim_prefixes.py \
	tests/vpcsim/shapecheck.py tests/vpcsim/simlib/ipv6.py \
	tests/vpcsim/test_vpcsim_ipv6.py tests/vpcsim/test_vpcsim_forkserver.py

.PHONY: check-vpcsim
check-vpcsim:
	$(srcdir)/tests/vpcsim/run-tests $(PYTEST_ARGS)
