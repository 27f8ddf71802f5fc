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
