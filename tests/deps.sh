#!/bin/sh
# Install what enid needs to build, test and demo, from Debian's packages.
# Run as root on Debian 12.  Safe to run again.
set -eu
# systemd (for systemd-analyze), strace and python3-yaml check contrib/:
# tests/integration/test_contrib.py.  e2fsprogs (chattr) makes a journal write
# fail: test_pool.py.  python3-kubernetes (its models are the API's
# schema) checks the DaemonSet's fields: test_manifest.py.  podman and
# mmdebstrap build the container image (make image: contrib/local.mk) and
# run the DaemonSet's containers (test_image.py), with runc: crun refuses
# a host with a hybrid cgroup hierarchy, as some CI machines have.
# Rootful only, so no uidmap, fuse-overlayfs or slirp4netns; podman builds
# without buildah.  python3-pytest-xdist runs the integration tests a few
# at a time (tests/run-all): most of their time is spent waiting.
# nftables (nft) is the simulated VPC's internet gateway (tests/vpcsim).
# containerd and python3-grpcio: containerd's CRI runs the shipped conflist
# against a dual-stack enid (test_cri.py); its pause image is built with
# build-essential's static libc.
# libnftnl and libmnl: netd writes its own nftables table over netlink.
# gdb: test_netd_addr_view.py holds netd at one instruction to time a race.
PKGS="build-essential autoconf automake libtool pkg-config
 libnl-3-dev libnl-route-3-dev libcurl4-openssl-dev libjson-c-dev
 libseccomp-dev libcap-dev libexpat1-dev libcmocka-dev
 libnftnl-dev libmnl-dev
 python3 python3-pytest python3-pytest-xdist python3-boto3 python3-jsonschema iproute2 iputils-ping procps curl openssl nftables
 containernetworking-plugins mandoc clang libclang-rt-14-dev git
 systemd strace gdb python3-yaml e2fsprogs python3-kubernetes
 podman runc mmdebstrap containerd python3-grpcio"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "deps: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
# The unprivileged user the daemons drop to.
id enid >/dev/null 2>&1 ||
	useradd --system --no-create-home --shell /usr/sbin/nologin enid
