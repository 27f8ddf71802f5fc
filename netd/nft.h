/*
 * netd's side of nf_tables: one NETLINK_NETFILTER socket, opened before
 * the privilege drop and the seccomp filter (which allows no new one),
 * through libmnl and libnftnl.  It reads tables "ip enid" and "ip6
 * enid" back into snat.c's data form and writes each whole in one atomic
 * batch; it never names any other table.  Errors are negative errno
 * values with err naming what failed.
 */
#ifndef ENID_NETD_NFT_H
#define ENID_NETD_NFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "snat.h"

#define NFT_BATCH_LIMIT		(32 * 1024)	/* one batch, at most */

struct mnl_socket;

struct nft {
	struct mnl_socket	*nl;
	uint32_t		 portid;
	uint32_t		 seq;
	bool			 dumping;	/* a dump left unread: */
	uint32_t		 dump_seq;	/* its sequence number */
	/* A batch is built in the first half; libmnl wants room for the
	 * message that overflows the limit.  Answers are read here too. */
	char			 buf[2 * NFT_BATCH_LIMIT];
};

/*
 * Open and bind the socket and ask nf_tables for table "ip enid" once:
 * 0, or -1 with err set (nfnetlink or nf_tables missing among the causes).
 */
int	nft_open(struct nft *n, char *err, size_t errlen);

/* Read table enid of family (SNAT_FAMILY_IP or _IP6) (absent:
 * out->present false; anything netd does not write: out->foreign with
 * out->what naming it, and nothing more is read, so a huge foreign table
 * costs no more than a small one).  0, or a negative errno. */
int	nft_read(struct nft *n, uint8_t family, struct snat_table *out,
	    char *err, size_t errlen);

/*
 * Replace table enid of t->family with t in one batch (create it if absent,
 * delete it, create it with t's chains and rules), every message
 * acknowledged.  0, or a negative errno naming the refused message; the
 * kernel then changed nothing.
 */
int	nft_write(struct nft *n, const struct snat_table *t, char *err,
	    size_t errlen);

#endif /* ENID_NETD_NFT_H */
