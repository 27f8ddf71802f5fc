# contrib: the systemd unit, made from its template with the install paths
# of this build, so that `systemd-analyze verify` finds the daemon where
# make install put it.  Not installed: where units go is the packager's
# choice (see README.md).
noinst_DATA = contrib/enid.service
# Listed one by one: the directory itself would also carry the unit made
# in the build tree into the tarball.
EXTRA_DIST += contrib/enid.service.in contrib/daemonset.yaml \
	contrib/enid.conf.example contrib/10-enid.conflist contrib/demo
CLEANFILES += contrib/enid.service
contrib/enid.service: contrib/enid.service.in Makefile
	$(AM_V_GEN)$(MKDIR_P) contrib && \
	sed -e 's|@sbindir[@]|$(sbindir)|g' $(srcdir)/contrib/enid.service.in \
	    >$@.tmp && mv -f $@.tmp $@

# The container image (contrib/Containerfile), built with podman from this
# tree: `make image [IMAGE=enid:latest] [PODMAN=podman]`, as root.  The
# tree is configured again in contrib/image/build for the image's paths
# (the helpers' directory is compiled in) and installed into
# contrib/image/enid; contrib/image/base gets the libraries those
# programs load from Debian's packages, which mmdebstrap downloads once
# into contrib/image/debian (again when contrib/image-base's list
# changes).  `make image-clean` removes it all, for newer packages too.
IMAGE = enid:latest
PODMAN = podman
ENID_BUILD = $$(date -u +%Y%m%dT%H%M%SZ)
IMAGE_BINARIES = usr/sbin/enid usr/sbin/enidctl usr/libexec/enid/enid-netd \
	usr/libexec/enid/enid-cloudd usr/libexec/enid/enid-cni-install \
	opt/cni/bin/enid-cni
EXTRA_DIST += contrib/Containerfile contrib/image-base
.PHONY: image image-context image-clean
image: image-context
	$(PODMAN) build --quiet --pull=never --label io.enid.build="$(ENID_BUILD)" \
		-f $(srcdir)/contrib/Containerfile -t $(IMAGE) contrib/image
image-context:
	@$(MKDIR_P) contrib/image/build
	test -f contrib/image/build/config.status || \
	    (cd contrib/image/build && $(abs_top_srcdir)/configure -q \
		--prefix=/usr --sysconfdir=/etc --localstatedir=/var \
		--libexecdir=/usr/libexec --with-cni-bin-dir=/opt/cni/bin)
	$(MAKE) -s -C contrib/image/build all
	rm -rf contrib/image/enid
	$(MAKE) -s -C contrib/image/build install \
		DESTDIR=$(abs_builddir)/contrib/image/enid
	rm -rf contrib/image/enid/usr/share
	cd contrib/image/enid && for p in $(IMAGE_BINARIES); do \
	    test -x $$p || { echo "image: $$p is not installed" >&2; exit 1; }; done
	@# The init container copies enid-cni to the host, which need not
	@# have its libraries: it must be the static PIE configure makes
	@# where the archives are (libnl-3-dev, libjson-c-dev, libc6-dev).
	@if readelf -l contrib/image/enid/opt/cni/bin/enid-cni | \
	    grep -q 'program interpreter'; then \
	    echo "image: enid-cni is linked dynamically, and would run on" \
	        "hosts without its libraries; install the archives" >&2; \
	    exit 1; fi
	$(srcdir)/contrib/image-base contrib/image/debian contrib/image/base \
		$(addprefix contrib/image/enid/,$(IMAGE_BINARIES))
image-clean:
	rm -rf contrib/image
clean-local: image-clean
