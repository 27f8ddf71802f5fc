# Manual pages (mdoc).
dist_man_MANS += man/enid.8 man/enid.conf.5 man/enidctl.8 man/enid-cni.8

# `make check` lints every page: mandoc's warnings are errors here.  The
# pages are built into nothing, so this reads them from the source tree.
check-local: check-man
.PHONY: check-man
check-man:
	@command -v mandoc >/dev/null || { echo "check-man: mandoc is not" \
	    "installed (tests/deps.sh installs it)" >&2; exit 1; }
	@for m in $(dist_man_MANS); do \
		mandoc -Tlint -Wwarning $(srcdir)/$$m || exit 1; \
	done; echo "man pages: mandoc -Tlint clean"
