# Manual pages (mdoc).
dist_man_MANS += man/enid.8 man/enid.conf.5 man/enidctl.8 man/enid-cni.8
