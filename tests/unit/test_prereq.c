/*
 * The node's IPv6 prerequisites (broker/prereq.c): read from a tree laid
 * out as /proc/sys and /sys/class/net are, and judged against the primary
 * interface's MAC: every wrong setting is one line naming it and the
 * command that sets it, and a node set up right gives none.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "conf.h"
#include "prereq.h"
#include "testdir.h"

static const uint8_t primary[6] = { 0x02, 0x8d, 0x29, 0x76, 0x8b, 0x04 };
static const uint8_t other[6] = { 0x02, 0x11, 0x22, 0x33, 0x44, 0x55 };

static struct prereq p;
static char lines[PREREQ_MAX_LINES][PREREQ_LINE_LEN];

static void
put(const struct dir *d, const char *rel, const char *text)
{
	char path[600], cmd[700];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", d->path, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
	assert_int_equal(system(cmd), 0);
	assert_non_null(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
}

/* A node as enid wants it: eth0 the primary interface, eth1 an ENI, lo. */
static void
node(const struct dir *d)
{
	put(d, "proc/net/ipv6/conf/all/forwarding", "1\n");
	put(d, "proc/net/ipv6/conf/all/disable_ipv6", "0\n");
	put(d, "proc/net/ipv6/conf/default/disable_ipv6", "0\n");
	put(d, "proc/net/ipv6/conf/eth0/accept_ra", "2\n");
	put(d, "proc/net/ipv6/conf/eth0/disable_ipv6", "0\n");
	put(d, "proc/net/ipv6/conf/eth1/accept_ra", "1\n");
	put(d, "proc/net/ipv6/conf/eth1/disable_ipv6", "0\n");
	put(d, "net/eth0/address", "02:8d:29:76:8b:04\n");
	put(d, "net/eth1/address", "02:11:22:33:44:55\n");
	put(d, "net/lo/address", "00:00:00:00:00:00\n");
}

static size_t
judge(const struct dir *d, int family)
{
	char procsys[300], classnet[300];

	snprintf(procsys, sizeof(procsys), "%s/proc", d->path);
	snprintf(classnet, sizeof(classnet), "%s/net", d->path);
	prereq_read(&p, procsys, classnet);
	memset(lines, 0, sizeof(lines));
	return prereq_judge(&p, family, primary, lines, PREREQ_MAX_LINES);
}

static void
test_node_set_up_right(void **state)
{
	struct dir d;

	(void)state;
	dir_open(&d, "enid-prereq");
	node(&d);
	assert_int_equal(judge(&d, IP_FAMILY_DUAL), 0);
	assert_int_equal(p.nlinks, 2);		/* lo has no MAC */
	assert_int_equal(judge(&d, IP_FAMILY_IPV6), 0);
	dir_close(&d);
}

/* The outage trap and forwarding, each named with its command. */
static void
test_each_wrong_setting_is_a_line(void **state)
{
	struct dir d;

	(void)state;
	dir_open(&d, "enid-prereq");
	node(&d);
	put(&d, "proc/net/ipv6/conf/all/forwarding", "0\n");
	put(&d, "proc/net/ipv6/conf/eth0/accept_ra", "1\n");
	assert_int_equal(judge(&d, IP_FAMILY_DUAL), 2);
	assert_string_equal(lines[0], "net.ipv6.conf.all.forwarding is 0: "
	    "the node would not route its pods' IPv6 traffic; set it with "
	    "`sysctl -w net.ipv6.conf.all.forwarding=1`");
	assert_string_equal(lines[1], "net.ipv6.conf.eth0.accept_ra is 1: "
	    "with forwarding on, the primary interface (02:8d:29:76:8b:04) "
	    "ignores the VPC router's advertisements and the node loses its "
	    "IPv6 default route; set it with `sysctl -w "
	    "net.ipv6.conf.eth0.accept_ra=2`");

	node(&d);
	put(&d, "proc/net/ipv6/conf/all/disable_ipv6", "1\n");
	put(&d, "proc/net/ipv6/conf/default/disable_ipv6", "1\n");
	put(&d, "proc/net/ipv6/conf/eth0/disable_ipv6", "1\n");
	assert_int_equal(judge(&d, IP_FAMILY_IPV6), 3);
	assert_non_null(strstr(lines[0], "`sysctl -w "
	    "net.ipv6.conf.all.disable_ipv6=0`"));
	assert_non_null(strstr(lines[1], "`sysctl -w "
	    "net.ipv6.conf.default.disable_ipv6=0`"));
	assert_non_null(strstr(lines[2], "`sysctl -w "
	    "net.ipv6.conf.eth0.disable_ipv6=0`"));
	dir_close(&d);
}

/* What cannot be read is wrong too, said as such; text that is not a
 * number is not read. */
static void
test_unreadable_settings_are_named(void **state)
{
	struct dir d;
	char path[600];

	(void)state;
	dir_open(&d, "enid-prereq");
	node(&d);
	put(&d, "proc/net/ipv6/conf/all/forwarding", "1x\n");
	snprintf(path, sizeof(path), "%s/proc/net/ipv6/conf/eth0/accept_ra",
	    d.path);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(judge(&d, IP_FAMILY_DUAL), 2);
	assert_non_null(strstr(lines[0], "net.ipv6.conf.all.forwarding could "
	    "not be read: "));
	assert_non_null(strstr(lines[1], "net.ipv6.conf.eth0.accept_ra could "
	    "not be read: "));
	dir_close(&d);
}

static void
test_kernel_without_ipv6(void **state)
{
	struct dir d;

	(void)state;
	dir_open(&d, "enid-prereq");
	put(&d, "proc/net/ipv4/ip_forward", "1\n");
	put(&d, "net/eth0/address", "02:8d:29:76:8b:04\n");
	assert_int_equal(judge(&d, IP_FAMILY_DUAL), 1);
	assert_string_equal(lines[0], "this kernel has no IPv6 (booted with "
	    "ipv6.disable=1?), and ip_family \"dual\" needs it: boot without "
	    "ipv6.disable=1");
	dir_close(&d);
}

/* The primary interface must be found to be judged: not found is a
 * refusal, never a pass. */
static void
test_primary_interface_not_found(void **state)
{
	struct dir d;
	char path[600];

	(void)state;
	dir_open(&d, "enid-prereq");
	node(&d);
	snprintf(path, sizeof(path), "%s/net/eth0/address", d.path);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(judge(&d, IP_FAMILY_DUAL), 1);
	assert_string_equal(lines[0], "the primary interface (MAC "
	    "02:8d:29:76:8b:04) was not among the node's links when enid "
	    "started, so its IPv6 settings could not be checked");
	/* a link whose address file is not a MAC is not one */
	put(&d, "net/eth0/address", "02:8d:29:76:8b\n");
	assert_int_equal(judge(&d, IP_FAMILY_DUAL), 1);
	/* and another link's settings are never taken for the primary's */
	put(&d, "net/eth0/address", "02:8d:29:76:8b:04\n");
	assert_int_equal(judge(&d, IP_FAMILY_DUAL), 0);
	assert_int_equal(prereq_judge(&p, IP_FAMILY_DUAL, other, lines,
	    PREREQ_MAX_LINES), 1);		/* eth1's accept_ra is 1 */
	dir_close(&d);
}

/* More wrong than lines: all counted, none written past the end. */
static void
test_lines_bounded(void **state)
{
	struct dir d;

	(void)state;
	dir_open(&d, "enid-prereq");
	node(&d);
	put(&d, "proc/net/ipv6/conf/all/forwarding", "0\n");
	put(&d, "proc/net/ipv6/conf/eth0/accept_ra", "0\n");
	judge(&d, IP_FAMILY_DUAL);
	memset(lines, 0, sizeof(lines));
	assert_int_equal(prereq_judge(&p, IP_FAMILY_DUAL, primary, lines, 1),
	    2);
	assert_non_null(strstr(lines[0], "forwarding"));
	assert_string_equal(lines[1], "");
	dir_close(&d);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_node_set_up_right),
		cmocka_unit_test(test_each_wrong_setting_is_a_line),
		cmocka_unit_test(test_unreadable_settings_are_named),
		cmocka_unit_test(test_kernel_without_ipv6),
		cmocka_unit_test(test_primary_interface_not_found),
		cmocka_unit_test(test_lines_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
