# Integration tests (pytest, root, network namespaces): make check-integration.
EXTRA_DIST += tests/integration/conftest.py tests/integration/test_foundation.py \
	tests/integration/test_cni_plugin.py tests/integration/test_broker_cloud.py \
	tests/integration/test_cloudd.py tests/integration/test_enidctl.py \
	tests/integration/test_broker_hygiene.py tests/integration/test_sandbox.py \
	tests/integration/podwire.py tests/integration/poolenv.py \
	tests/integration/ckptstate.py \
	tests/integration/test_pool.py tests/integration/test_cni_socket.py \
	tests/integration/test_flood.py \
	tests/integration/test_pool_hostile.py tests/integration/mitm_helper.py \
	tests/integration/test_contrib.py tests/integration/test_unprivileged.py \
	tests/integration/test_cni_e2e.py tests/integration/test_snat.py \
	tests/integration/test_hostile_cloud.py tests/integration/hostile_ec2.py \
	tests/integration/test_chaos_regressions.py \
	tests/integration/simec2.py tests/integration/netd_helpers.py \
	tests/integration/test_metrics.py tests/integration/test_netd.py \
	tests/integration/test_netd_hostile.py tests/integration/test_netd_ipv6.py \
	tests/integration/test_netd_eni_over_pod.py \
	tests/integration/test_netd_rule_view.py \
	tests/integration/test_netd_addr_view.py \
	tests/integration/test_idle.py tests/integration/procstat.py \
	tests/integration/test_pool_field.py tests/integration/test_ipv6_start.py \
	tests/integration/test_pool_ipv6.py \
	tests/integration/test_pool_ipv6_only.py \
	tests/integration/test_pool_ipv6_restore.py \
	tests/integration/test_pool_operate.py \
	tests/integration/test_reconcile_routes.py \
	tests/integration/test_one_per_node.py \
	tests/integration/test_checkpoint_version.py \
	tests/integration/test_cni_hostile.py tests/integration/fake_cnisock.py \
	tests/integration/test_image.py tests/integration/test_manifest.py \
	tests/integration/test_layers.py tests/integration/test_prefixes.py \
	tests/integration/test_prefix_burst.py \
	tests/integration/test_clone_location.py \
	tests/integration/test_node_setup.py \
	tests/integration/test_dual_e2e.py \
	tests/integration/test_cri.py tests/integration/cri.py
