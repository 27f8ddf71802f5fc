/*
 * How much one node's enid holds, in one place: the configuration
 * refuses what lies beyond these (naming the cap), and the pool, the
 * internal messages, the checkpoint and enid-netd size themselves from
 * them, so that no limit can be met in one and silently cut in another.
 * A larger node (prefix delegation: 16 addresses a block) is a change
 * here, checked at build time against what depends on it.
 */
#ifndef ENID_MAXIMA_H
#define ENID_MAXIMA_H

/* ENIs on one node, its primary included (EC2's most: 15). */
#define ENID_MAX_ENIS		32
/* Secondary addresses on one ENI, those pods take; its primary address
 * besides (EC2's most: 49, of 50). */
#define ENID_MAX_ENI_ADDRS	64
/* With prefix delegation: /28 prefixes of 16 addresses, up to 16 of them
 * on one ENI (256 addresses, more than a kubelet's pod cap needs). */
#define ENID_PREFIX_ADDRS	16
#define ENID_MAX_ENI_PREFIXES	16
/*
 * IPv6 on one ENI (issue 35).  Addresses: EC2's most is 50 a type, its
 * primary IPv6 address among them; the IPv4 figure's room, so that the
 * largest type fits whole.  /80 prefixes: each holds 2^48 addresses and
 * a node needs one an ENI (EC2 counts each as one of the 50); 16 leaves
 * room for what another tool assigned, and more are counted, not kept.
 */
#define ENID_MAX_ENI_ADDRS6	64
#define ENID_MAX_ENI_PREFIXES6	16
/* Pods holding an address at once, one each (2048); the most
 * pool.max_pods may be. */
#define ENID_MAX_PODS		(ENID_MAX_ENIS * ENID_MAX_ENI_ADDRS)
/*
 * Pods the checkpoint records: those holding an address, and as many
 * again whose address the cloud took back (lost), which are kept until
 * the runtime deletes them.  An ADD past it is refused; a save past it
 * fails (nothing is ever left out of one).
 */
/* CIDRs whose traffic SNAT leaves untranslated beyond the VPC's own. */
#define ENID_MAX_SNAT_EXCLUDE	8

#define ENID_MAX_RECORDED_PODS	4096
/* Released addresses the checkpoint records as cooling: every secondary
 * address of every ENI, and as many again restored from the last start. */
#define ENID_MAX_RECORDED_COOLING 4096

_Static_assert(ENID_MAX_RECORDED_PODS >= 2 * ENID_MAX_PODS,
    "the checkpoint must hold every pod with an address and as many lost");
_Static_assert(ENID_MAX_RECORDED_COOLING >=
    2 * ENID_MAX_ENIS * ENID_MAX_ENI_ADDRS,
    "the checkpoint must hold every address cooling, twice");

#endif /* ENID_MAXIMA_H */
