/*
 * enidctl node-setup (nodesetup.h): sets, through /proc/sys, exactly the
 * settings the broker refuses to start without when pods get IPv6, and
 * nothing else.  It runs as root, once, before enid: enid-netd may write
 * no file, and the image has no shell and no sysctl(8).
 *
 * Each setting is read first and written only if it differs, so a second
 * run writes nothing: writing net.ipv6.conf.all.* is not a plain store,
 * the kernel carries the value to every link and to "default".  Every
 * value is read before any is written, so a setting that cannot be read
 * stops the run before it has changed anything.
 */
#include <sys/stat.h>
#include <sys/vfs.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/magic.h>
#include <sys/capability.h>

#include "conf.h"
#include "nodesetup.h"

#define NODESETUP_ROUTE4	"/proc/net/route"
#define NODESETUP_ROUTE6	"/proc/net/ipv6_route"
/* Far more than a node's routes need, for the two files read whole. */
#define NODESETUP_ROUTES_MAX	(4 * 1024 * 1024)
#define NODESETUP_NSETTINGS	5
#define NODESETUP_KEY_LEN	(32 + IF_NAMESIZE)

/* <linux/route.h>'s, which clash with <net/if.h> if included. */
#define NODESETUP_RTF_UP	0x0001
#define NODESETUP_RTF_REJECT	0x0200

/* The least-metric default route seen so far, and whether another link
 * ties with it. */
struct best {
	bool		found;
	unsigned long	metric;
	char		name[IF_NAMESIZE];
	char		tie[IF_NAMESIZE];	/* "": none */
};

static void
consider(struct best *b, const char *name, unsigned long metric)
{
	if (strlen(name) >= IF_NAMESIZE || strcmp(name, "lo") == 0)
		return;
	if (!b->found || metric < b->metric) {
		b->found = true;
		b->metric = metric;
		snprintf(b->name, sizeof(b->name), "%s", name);
		b->tie[0] = '\0';
	} else if (metric == b->metric && strcmp(name, b->name) != 0)
		snprintf(b->tie, sizeof(b->tie), "%s", name);
}

/* /proc/net/route: Iface Destination Gateway Flags RefCnt Use Metric Mask
 * ..., the addresses in hex; the heading line does not scan. */
static void
scan4(const char *text, struct best *b)
{
	unsigned int dst, gw, flags, mask;
	unsigned long metric;
	char name[IF_NAMESIZE + 1];
	const char *line;

	for (line = text; line != NULL && *line != '\0';
	    line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (sscanf(line, "%16s %8x %8x %4x %*d %*d %lu %8x", name,
		    &dst, &gw, &flags, &metric, &mask) != 6)
			continue;
		if (dst == 0 && mask == 0 && (flags & NODESETUP_RTF_UP) &&
		    !(flags & NODESETUP_RTF_REJECT))
			consider(b, name, metric);
	}
}

/* /proc/net/ipv6_route: destination, its length, source, its length,
 * next hop, metric, refcount, use, flags, device; all but the device in
 * hex.  The kernel's own "::/0 dev lo" reject route is not a default. */
static void
scan6(const char *text, struct best *b)
{
	char dst[33], name[IF_NAMESIZE + 1];
	unsigned int plen, flags;
	unsigned long metric;
	const char *line;

	for (line = text; line != NULL && *line != '\0';
	    line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (sscanf(line, "%32s %2x %*32s %*2x %*32s %8lx %*8x %*8x "
		    "%8x %16s", dst, &plen, &metric, &flags, name) != 5)
			continue;
		if (strspn(dst, "0") == 32 && plen == 0 &&
		    (flags & NODESETUP_RTF_UP) &&
		    !(flags & NODESETUP_RTF_REJECT))
			consider(b, name, metric);
	}
}

int
nodesetup_uplink(const char *route4, const char *route6,
    char name[IF_NAMESIZE], const char **from, char *why, size_t whylen)
{
	struct best b;

	memset(&b, 0, sizeof(b));
	scan4(route4, &b);
	*from = NODESETUP_ROUTE4;
	if (!b.found) {
		scan6(route6, &b);
		*from = NODESETUP_ROUTE6;
	}
	if (!b.found) {
		snprintf(why, whylen, "no default route, neither IPv4 in the "
		    "main table (%s) nor IPv6 (%s)", NODESETUP_ROUTE4,
		    NODESETUP_ROUTE6);
		return -1;
	}
	if (b.tie[0] != '\0') {
		snprintf(why, whylen, "the default routes of least metric "
		    "(%lu, in %s) go by two links, %s and %s", b.metric, *from,
		    b.name, b.tie);
		return -1;
	}
	memcpy(name, b.name, IF_NAMESIZE);
	return 0;
}

/* ---- the kernel ---- */

/* A whole /proc file, NUL-terminated; the caller frees it.  NULL with
 * errno set if it cannot be read. */
static char *
slurp(const char *path)
{
	size_t len = 0, cap = 8192;
	char *buf = malloc(cap), *bigger;
	ssize_t n;
	int fd, saved;

	if (buf == NULL)
		return NULL;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		goto fail;
	for (;;) {
		if (len + 1 >= cap) {
			if (cap >= NODESETUP_ROUTES_MAX) {
				errno = EFBIG;
				goto fail_fd;
			}
			if ((bigger = realloc(buf, cap * 2)) == NULL)
				goto fail_fd;
			buf = bigger;
			cap *= 2;
		}
		if ((n = read(fd, buf + len, cap - len - 1)) == -1) {
			if (errno == EINTR)
				continue;
			goto fail_fd;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return buf;
fail_fd:
	saved = errno;
	close(fd);
	errno = saved;
fail:
	saved = errno;
	free(buf);
	errno = saved;
	return NULL;
}

struct setting {
	char		key[NODESETUP_KEY_LEN];	/* under /proc/sys */
	const char	*want;
	char		old[32];
};

/* "net/ipv6/conf/eth0/accept_ra" as sysctl(8) names it. */
static void
dotted(const char *key, char *out, size_t len)
{
	size_t i;

	snprintf(out, len, "%s", key);
	for (i = 0; out[i] != '\0'; i++)
		if (out[i] == '/')
			out[i] = '.';
}

/*
 * A setting's file, opened through netfd, the net directory found to be
 * proc's, never by its path from --proc-sys again: that directory may be
 * one another user can change, and a net swapped in after the check
 * (a symlink to look-alike files) would have root write where it points.
 * Inside proc no sysctl is a symlink; O_NOFOLLOW holds the last step to
 * that.
 */
static int
open_setting(int netfd, const char *key, int flags)
{
	static const char net[] = "net/";

	if (strncmp(key, net, sizeof(net) - 1) != 0) {
		errno = EINVAL;
		return -1;
	}
	return openat(netfd, key + sizeof(net) - 1, flags | O_NOFOLLOW |
	    O_CLOEXEC);
}

static int
read_setting(int netfd, const char *key, char *buf, size_t len)
{
	ssize_t n;
	int fd, saved;

	if ((fd = open_setting(netfd, key, O_RDONLY)) == -1)
		return -1;
	n = read(fd, buf, len - 1);
	saved = errno;
	close(fd);
	if (n == -1) {
		errno = saved;
		return -1;
	}
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static int
write_setting(int netfd, const struct setting *s)
{
	char text[16];
	size_t len;
	ssize_t n;
	int fd, saved;

	len = (size_t)snprintf(text, sizeof(text), "%s\n", s->want);
	if ((fd = open_setting(netfd, s->key, O_WRONLY)) == -1)
		return -1;
	n = write(fd, text, len);
	saved = errno;
	if (close(fd) == -1 && n != -1)
		return -1;
	if (n == -1) {
		errno = saved;
		return -1;
	}
	if ((size_t)n != len) {
		errno = EIO;
		return -1;
	}
	return 0;
}

/* Why a write the kernel refused may have been refused. */
static const char *
hint(int err)
{
	switch (err) {
	case EROFS:
		return " (a container's /proc/sys is read-only: mount the "
		    "host's /proc/sys/net elsewhere and name it with "
		    "--proc-sys, see enidctl(8))";
	case EACCES:
	case EPERM:
		return " (the kernel lets only root, or CAP_NET_ADMIN over "
		    "this network namespace, write it)";
	default:
		return "";
	}
}

/* An interface name as a directory under net/ipv6/conf: not a path, and
 * not one of the two entries there that are not links. */
static bool
link_name_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n < IF_NAMESIZE && strchr(s, '/') == NULL &&
	    strcmp(s, ".") != 0 && strcmp(s, "..") != 0 &&
	    strcmp(s, "all") != 0 && strcmp(s, "default") != 0;
}

/* The settings in the order written: IPv6 on first (all before default,
 * as writing all overwrites default), then the uplink's accept_ra before
 * forwarding, so that there is no moment in which the node forwards and
 * its uplink ignores the router. */
static void
plan(struct setting s[NODESETUP_NSETTINGS], const char *uplink)
{
	static const char *const fixed[][2] = {
		{ "net/ipv6/conf/all/disable_ipv6", "0" },
		{ "net/ipv6/conf/default/disable_ipv6", "0" },
	};
	size_t i;

	memset(s, 0, sizeof(*s) * NODESETUP_NSETTINGS);
	for (i = 0; i < 2; i++) {
		snprintf(s[i].key, sizeof(s[i].key), "%s", fixed[i][0]);
		s[i].want = fixed[i][1];
	}
	snprintf(s[2].key, sizeof(s[2].key), "net/ipv6/conf/%s/disable_ipv6",
	    uplink);
	s[2].want = "0";
	snprintf(s[3].key, sizeof(s[3].key), "net/ipv6/conf/%s/accept_ra",
	    uplink);
	s[3].want = "2";
	snprintf(s[4].key, sizeof(s[4].key), "net/ipv6/conf/all/forwarding");
	s[4].want = "1";
}

/* Root, or CAP_NET_ADMIN: what the kernel's net sysctl permission check
 * (net_ctl_permissions) lets write. */
static bool
privileged(void)
{
	cap_flag_value_t v = CAP_CLEAR;
	cap_t caps;

	if (geteuid() == 0)
		return true;
	if ((caps = cap_get_proc()) == NULL)
		return false;
	if (cap_get_flag(caps, CAP_NET_ADMIN, CAP_EFFECTIVE, &v) == -1)
		v = CAP_CLEAR;
	cap_free(caps);
	return v == CAP_SET;
}

/* The uplink: named, or the default route's link.  0, or -1 reported. */
static int
find_uplink(const char *named, char name[IF_NAMESIZE])
{
	char *r4 = NULL, *r6 = NULL, why[160];
	const char *from;
	int rc = -1;

	if (named != NULL) {
		if (!link_name_ok(named)) {
			fprintf(stderr, "enidctl: node-setup: --uplink \"%s\" "
			    "is not a link name\n", named);
			return -1;
		}
		if (if_nametoindex(named) == 0) {
			fprintf(stderr, "enidctl: node-setup: --uplink %s: no "
			    "such link in this network namespace; nothing "
			    "changed\n", named);
			return -1;
		}
		snprintf(name, IF_NAMESIZE, "%s", named);
		printf("uplink %s: as named\n", name);
		return 0;
	}
	if ((r4 = slurp(NODESETUP_ROUTE4)) == NULL) {
		fprintf(stderr, "enidctl: node-setup: %s: %s; nothing "
		    "changed\n", NODESETUP_ROUTE4, strerror(errno));
		goto out;
	}
	/* Absent without IPv6; the check below names that case. */
	if ((r6 = slurp(NODESETUP_ROUTE6)) == NULL && errno != ENOENT) {
		fprintf(stderr, "enidctl: node-setup: %s: %s; nothing "
		    "changed\n", NODESETUP_ROUTE6, strerror(errno));
		goto out;
	}
	if (nodesetup_uplink(r4, r6 ? r6 : "", name, &from, why,
	    sizeof(why)) == -1) {
		fprintf(stderr, "enidctl: node-setup: cannot tell the uplink: "
		    "%s; name it with --uplink; nothing changed\n", why);
		goto out;
	}
	printf("uplink %s: the default route's link (%s)\n", name, from);
	rc = 0;
out:
	free(r4);
	free(r6);
	return rc;
}

int
nodesetup_run(const char *config_path, const char *uplink,
    const char *procsys)
{
	static struct enid_config cfg;
	struct setting s[NODESETUP_NSETTINGS];
	char err[1024], link[IF_NAMESIZE], name[NODESETUP_KEY_LEN], got[32];
	struct statfs fs;
	int procfd, netfd = -1, rc = 1;
	size_t i;

	/* Before anything is read: a run that cannot write must not look
	 * as if it would have. */
	if (!privileged()) {
		fprintf(stderr, "enidctl: node-setup: must run as root (or "
		    "with CAP_NET_ADMIN): only they may write the network "
		    "sysctls; nothing changed\n");
		return 1;
	}
	if (config_load(config_path, &cfg, err, sizeof(err)) == -1) {
		fprintf(stderr, "enidctl: configuration: %s\n", err);
		return 1;
	}
	config_wipe_secrets(&cfg);
	if (!config_family_v6(cfg.ip_family)) {
		printf("ip_family %s (%s): pods get no IPv6, so enid needs "
		    "none of the node's IPv6 settings; nothing changed\n",
		    config_family_name(cfg.ip_family), config_path);
		return 0;
	}
	if ((procfd = open(procsys, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) ==
	    -1) {
		fprintf(stderr, "enidctl: node-setup: %s: %s\n", procsys,
		    strerror(errno));
		return 1;
	}
	/* A mistyped --proc-sys must not find look-alike files to write.
	 * Its net directory is what counts: a container may have the host's
	 * bound there alone. */
	if ((netfd = openat(procfd, "net", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) == -1 || fstatfs(netfd, &fs) == -1 ||
	    fs.f_type != PROC_SUPER_MAGIC) {
		fprintf(stderr, "enidctl: node-setup: %s/net is not a proc "
		    "file system's; nothing changed\n", procsys);
		goto out;
	}
	if (faccessat(netfd, "ipv6", F_OK, AT_SYMLINK_NOFOLLOW) == -1) {
		fprintf(stderr, "enidctl: node-setup: this kernel has no IPv6 "
		    "(booted with ipv6.disable=1?), and ip_family \"%s\" needs "
		    "it; nothing changed\n", config_family_name(cfg.ip_family));
		goto out;
	}
	if (find_uplink(uplink, link) == -1)
		goto out;
	plan(s, link);
	for (i = 0; i < NODESETUP_NSETTINGS; i++)
		if (read_setting(netfd, s[i].key, s[i].old,
		    sizeof(s[i].old)) == -1) {
			fprintf(stderr, "enidctl: node-setup: %s/%s: read: "
			    "%s; nothing changed\n", procsys,
			    s[i].key, strerror(errno));
			goto out;
		}
	for (i = 0; i < NODESETUP_NSETTINGS; i++) {
		dotted(s[i].key, name, sizeof(name));
		/* Read again: an earlier write to all.* may have set it. */
		if (read_setting(netfd, s[i].key, got, sizeof(got)) == 0 &&
		    strcmp(got, s[i].want) == 0) {
			if (strcmp(s[i].old, s[i].want) == 0)
				printf("sysctl %s: already %s\n", name,
				    s[i].want);
			else
				printf("sysctl %s: %s -> %s (by the kernel, "
				    "with net.ipv6.conf.all)\n", name,
				    s[i].old, s[i].want);
			fflush(stdout);
			continue;
		}
		if (write_setting(netfd, &s[i]) == -1) {
			int e = errno;

			fprintf(stderr, "enidctl: node-setup: %s/%s: write: "
			    "%s%s\n", procsys, s[i].key, strerror(e),
			    hint(e));
			goto out;
		}
		/* The kernel may take a write and keep another value. */
		if (read_setting(netfd, s[i].key, got, sizeof(got)) == -1)
			snprintf(got, sizeof(got), "nothing (%s)",
			    strerror(errno));
		if (strcmp(got, s[i].want) != 0) {
			fprintf(stderr, "enidctl: node-setup: %s/%s: wrote %s "
			    "but it reads %s\n", procsys, s[i].key,
			    s[i].want, got);
			goto out;
		}
		printf("sysctl %s: %s -> %s\n", name, s[i].old, s[i].want);
		fflush(stdout);
	}
	rc = 0;
out:
	if (netfd != -1)
		close(netfd);
	close(procfd);
	return rc;
}
