/*
 * The node's IPv6 prerequisites, read at start and judged once the
 * primary interface is known (prereq.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addr.h"
#include "conf.h"
#include "prereq.h"

/* The whole of a small file, NUL-terminated, trailing newline gone.
 * -1 if it cannot be read or does not fit. */
static int
read_small(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		return -1;
	n = read(fd, buf, len);
	close(fd);
	if (n <= 0 || (size_t)n >= len)
		return -1;
	buf[n] = '\0';
	if (buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return 0;
}

/* A sysctl's integer, or -1 when it cannot be read or is not one. */
static int
read_int(const char *procsys, const char *key)
{
	char path[PATH_MAX], buf[32], *end;
	long v;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", procsys, key) >=
	    sizeof(path) || read_small(path, buf, sizeof(buf)) == -1)
		return -1;
	errno = 0;
	v = strtol(buf, &end, 10);
	if (errno != 0 || end == buf || *end != '\0' || v < 0 || v > INT_MAX)
		return -1;
	return (int)v;
}

static void
read_link(struct prereq *p, const char *procsys, const char *classnet,
    const char *name)
{
	struct prereq_link *l;
	char path[PATH_MAX], buf[64], key[96];
	size_t len = strlen(name);
	uint8_t mac[6];

	if (len >= IF_NAMESIZE)
		return;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s/address", classnet,
	    name) >= sizeof(path) || read_small(path, buf, sizeof(buf)) == -1 ||
	    mac_parse(buf, mac) == -1 || mac_is_zero(mac))
		return;		/* lo, tunnels: not an ENI */
	if (p->nlinks == PREREQ_MAX_LINKS) {
		p->truncated = true;
		return;
	}
	l = &p->links[p->nlinks++];
	memcpy(l->mac, mac, sizeof(l->mac));
	memcpy(l->name, name, len + 1);
	snprintf(key, sizeof(key), "net/ipv6/conf/%.*s/accept_ra",
	    IF_NAMESIZE - 1, name);
	l->accept_ra = read_int(procsys, key);
	snprintf(key, sizeof(key), "net/ipv6/conf/%.*s/disable_ipv6",
	    IF_NAMESIZE - 1, name);
	l->disable_ipv6 = read_int(procsys, key);
}

void
prereq_read(struct prereq *p, const char *procsys, const char *classnet)
{
	char path[PATH_MAX];
	struct dirent *d;
	DIR *dir;

	memset(p, 0, sizeof(*p));
	snprintf(path, sizeof(path), "%s/net/ipv6", procsys);
	p->ipv6 = access(path, F_OK) == 0;
	p->all_forwarding = read_int(procsys, "net/ipv6/conf/all/forwarding");
	p->all_disable_ipv6 = read_int(procsys,
	    "net/ipv6/conf/all/disable_ipv6");
	p->default_disable_ipv6 = read_int(procsys,
	    "net/ipv6/conf/default/disable_ipv6");
	if ((dir = opendir(classnet)) == NULL)
		return;
	while ((d = readdir(dir)) != NULL)
		if (d->d_name[0] != '.')
			read_link(p, procsys, classnet, d->d_name);
	closedir(dir);
}

/* One line, if there is room; the count goes on regardless. */
static void __attribute__((format(printf, 4, 5)))
say(char lines[][PREREQ_LINE_LEN], size_t max, size_t *n, const char *fmt,
    ...)
{
	va_list ap;

	if (*n < max) {
		va_start(ap, fmt);
		vsnprintf(lines[*n], PREREQ_LINE_LEN, fmt, ap);
		va_end(ap);
	}
	(*n)++;
}

/* "is 1" or "could not be read" */
static const char *
shown(int v, char buf[16])
{
	if (v < 0)
		return "could not be read";
	snprintf(buf, 16, "is %d", v);
	return buf;
}

size_t
prereq_judge(const struct prereq *p, int family, const uint8_t primary_mac[6],
    char lines[][PREREQ_LINE_LEN], size_t max)
{
	const struct prereq_link *up = NULL;
	char mac[MAC_STR_LEN], v[16];
	size_t n = 0;
	uint32_t i;

	if (!p->ipv6) {
		say(lines, max, &n, "this kernel has no IPv6 (booted with "
		    "ipv6.disable=1?), and ip_family \"%s\" needs it: boot "
		    "without ipv6.disable=1", config_family_name(family));
		return n;
	}
	if (p->all_disable_ipv6 != 0)
		say(lines, max, &n, "net.ipv6.conf.all.disable_ipv6 %s: IPv6 "
		    "is off on every link; set it with `sysctl -w "
		    "net.ipv6.conf.all.disable_ipv6=0`",
		    shown(p->all_disable_ipv6, v));
	if (p->default_disable_ipv6 != 0)
		say(lines, max, &n, "net.ipv6.conf.default.disable_ipv6 %s: "
		    "the ENIs attached later would have no IPv6; set it with "
		    "`sysctl -w net.ipv6.conf.default.disable_ipv6=0`",
		    shown(p->default_disable_ipv6, v));
	if (p->all_forwarding != 1)
		say(lines, max, &n, "net.ipv6.conf.all.forwarding %s: the "
		    "node would not route its pods' IPv6 traffic; set it with "
		    "`sysctl -w net.ipv6.conf.all.forwarding=1`",
		    shown(p->all_forwarding, v));
	for (i = 0; i < p->nlinks && i < PREREQ_MAX_LINKS; i++)
		if (memcmp(p->links[i].mac, primary_mac, 6) == 0) {
			up = &p->links[i];
			break;
		}
	mac_format(primary_mac, mac);
	if (up == NULL) {
		say(lines, max, &n, "the primary interface (MAC %s) was not "
		    "among the node's links when enid started%s, so its IPv6 "
		    "settings could not be checked", mac, p->truncated ?
		    " (only the first " PREREQ_MAX_LINKS_STR " were read)" :
		    "");
		return n;
	}
	if (up->disable_ipv6 != 0)
		say(lines, max, &n, "net.ipv6.conf.%s.disable_ipv6 %s: the "
		    "primary interface (%s) has no IPv6; set it with `sysctl "
		    "-w net.ipv6.conf.%s.disable_ipv6=0`", up->name,
		    shown(up->disable_ipv6, v), mac, up->name);
	if (up->accept_ra != 2)
		say(lines, max, &n, "net.ipv6.conf.%s.accept_ra %s: with "
		    "forwarding on, the primary interface (%s) ignores the "
		    "VPC router's advertisements and the node loses its IPv6 "
		    "default route; set it with `sysctl -w "
		    "net.ipv6.conf.%s.accept_ra=2`", up->name,
		    shown(up->accept_ra, v), mac, up->name);
	return n;
}
