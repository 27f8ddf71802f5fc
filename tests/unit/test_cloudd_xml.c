/*
 * The EC2 answer parser (cloudd/ec2_xml.c) and the checks between it and
 * the broker (ec2_eni_to_msg): every answer shape cloudd reads, the error
 * shapes, and what must be refused cleanly (truncated, oversized, garbage,
 * DOCTYPE, too deep, too many entries, fields too long).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ec2.h"

#define NS " xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\""

static const char eni_item[] =
	"<item><networkInterfaceId>eni-0a1b2c3d4e5f60718</networkInterfaceId>"
	"<subnetId>subnet-0123456789abcdef0</subnetId>"
	"<vpcId>vpc-0123456789abcdef0</vpcId>"
	"<availabilityZone>us-east-1a</availabilityZone>"
	"<description>enid</description><ownerId>123</ownerId>"
	"<status>in-use</status><macAddress>02:5a:96:2b:9b:a2</macAddress>"
	"<privateIpAddress>10.0.0.5</privateIpAddress>"
	"<sourceDestCheck>true</sourceDestCheck>"
	"<groupSet><item><groupId>sg-01</groupId><groupName>d</groupName>"
	"</item></groupSet>"
	"<attachment><attachmentId>eni-attach-0abc</attachmentId>"
	"<instanceId>i-0123456789abcdef0</instanceId><deviceIndex>2</deviceIndex>"
	"<status>attached</status><deleteOnTermination>true"
	"</deleteOnTermination></attachment>"
	"<tagSet><item><key>enid.io/node</key><value>i-1</value></item>"
	"<item><key>Name</key><value>x &amp; y</value></item></tagSet>"
	"<privateIpAddressesSet>"
	"<item><privateIpAddress>10.0.0.5</privateIpAddress><primary>true"
	"</primary></item>"
	"<item><privateIpAddress>10.0.0.6</privateIpAddress><primary>false"
	"</primary></item>"
	"<item><privateIpAddress>10.0.0.7</privateIpAddress><primary>false"
	"</primary></item></privateIpAddressesSet>"
	"<ipv6AddressesSet/><interfaceType>interface</interfaceType></item>";

static int
parse(enum ec2_action act, const char *s, struct ec2_answer *a, char *err)
{
	return ec2_parse(act, s, strlen(s), a, err, 256);
}

static char *
describe_enis_doc(int n, const char *token)
{
	size_t cap = 512 + (size_t)n * sizeof(eni_item);
	char *buf = malloc(cap);
	int i;

	assert_non_null(buf);
	snprintf(buf, cap, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	    "<DescribeNetworkInterfacesResponse" NS "><requestId>"
	    "59dbff89-35bd-4eac-99ed-be587EXAMPLE</requestId>"
	    "<networkInterfaceSet>");
	for (i = 0; i < n; i++)
		strcat(buf, eni_item);
	strcat(buf, "</networkInterfaceSet>");
	if (token != NULL) {
		strcat(buf, "<nextToken>");
		strcat(buf, token);
		strcat(buf, "</nextToken>");
	}
	strcat(buf, "</DescribeNetworkInterfacesResponse>");
	return buf;
}

static void
test_describe_enis(void **state)
{
	struct ec2_answer a;
	struct msg_cloud_eni m;
	char err[256];
	char *doc = describe_enis_doc(2, "eyJhZnRlciI6ICJlbmktMSJ9");
	const struct ec2_eni *e;

	(void)state;
	assert_int_equal(parse(EC2_DESCRIBE_ENIS, doc, &a, err), 0);
	assert_false(a.is_error);
	assert_string_equal(a.request_id,
	    "59dbff89-35bd-4eac-99ed-be587EXAMPLE");
	assert_string_equal(a.next_token, "eyJhZnRlciI6ICJlbmktMSJ9");
	assert_int_equal(a.nitems, 2);
	e = &a.list.enis[1];
	assert_string_equal(e->id, "eni-0a1b2c3d4e5f60718");
	assert_string_equal(e->mac, "02:5a:96:2b:9b:a2");
	assert_true(e->attached);
	assert_string_equal(e->attachment_id, "eni-attach-0abc");
	assert_int_equal(e->naddrs, 3);
	assert_true(e->addr_primary[0]);
	assert_int_equal(e->ngroups, 1);
	assert_string_equal(e->groups[0], "sg-01");
	assert_int_equal(e->ntags, 2);
	assert_string_equal(e->tags[1].value, "x & y");

	assert_int_equal(ec2_eni_to_msg(e, &m, err, sizeof(err), NULL, 0), 0);
	assert_string_equal(m.eni_id, "eni-0a1b2c3d4e5f60718");
	assert_string_equal(m.instance_id, "i-0123456789abcdef0");
	assert_int_equal(m.status, ENI_ST_IN_USE);
	assert_int_equal(m.attach_status, ENI_ST_IN_USE);
	assert_int_equal(m.device_index, 2);
	assert_int_equal(m.delete_on_termination, 1);
	assert_int_equal(ip_addr_in4(&m.primary_ip), htonl(0x0a000005));
	assert_int_equal(m.naddrs, 2);		/* the secondaries only */
	assert_int_equal(ip_addr_in4(&m.addrs[1]), htonl(0x0a000007));
	assert_int_equal(m.ntags, 2);
	ec2_answer_free(&a);
	free(doc);
}

/* Prefixes as the cloud lists them on an ENI, assigns them and describes
 * the types that can hold them; those not an aligned /28 are left out and
 * counted, naming the first. */
static void
test_prefixes(void **state)
{
	static const char prefixes[] = "<ipv4PrefixSet>"
	    "<item><ipv4Prefix>10.0.4.16/28</ipv4Prefix></item>"
	    "<item><ipv4Prefix>10.0.4.40/28</ipv4Prefix></item>"
	    "<item><ipv4Prefix>10.0.4.64/27</ipv4Prefix></item>"
	    "<item><ipv4Prefix>10.0.4.48/28</ipv4Prefix></item>"
	    "<item><ipv4Prefix>banana</ipv4Prefix></item>"
	    "</ipv4PrefixSet>";
	struct ec2_answer a;
	struct msg_cloud_eni m;
	char err[256], bad[EC2_CIDR_LEN], *doc;
	struct ip_addr v;
	size_t n;

	(void)state;
	doc = malloc(sizeof(eni_item) + sizeof(prefixes) + 512);
	assert_non_null(doc);
	n = strlen(eni_item) - strlen("</item>");
	snprintf(doc, sizeof(eni_item) + sizeof(prefixes) + 512,
	    "<DescribeNetworkInterfacesResponse" NS "><networkInterfaceSet>"
	    "%.*s%s</item></networkInterfaceSet>"
	    "</DescribeNetworkInterfacesResponse>", (int)n, eni_item,
	    prefixes);
	assert_int_equal(parse(EC2_DESCRIBE_ENIS, doc, &a, err), 0);
	assert_int_equal(a.list.enis[0].nprefixes, 5);
	assert_string_equal(a.list.enis[0].prefixes[1], "10.0.4.40/28");
	assert_int_equal(ec2_eni_to_msg(&a.list.enis[0], &m, err, sizeof(err),
	    bad, sizeof(bad)), 0);
	assert_int_equal(m.nprefixes, 2);
	assert_int_equal(ip_addr_in4(&m.prefixes[0]), htonl(0x0a000410));
	assert_int_equal(ip_addr_in4(&m.prefixes[1]), htonl(0x0a000430));
	assert_int_equal(m.nbad_prefixes, 3);
	assert_string_equal(bad, "10.0.4.40/28");
	assert_int_equal(m.naddrs, 2);		/* addresses as before */
	ec2_answer_free(&a);
	free(doc);

	assert_int_equal(ec2_prefix_parse("10.0.4.16/28", &v), 0);
	assert_int_equal(ip_addr_in4(&v), htonl(0x0a000410));
	assert_int_equal(ec2_prefix_parse("10.0.4.17/28", &v), -1);
	assert_int_equal(ec2_prefix_parse("10.0.4.16/32", &v), -1);
	assert_int_equal(ec2_prefix_parse("0.0.0.0/28", &v), -1);
	assert_int_equal(ec2_prefix_parse("10.0.4.16", &v), -1);
	assert_int_equal(ec2_prefix_parse("", &v), -1);

	assert_int_equal(parse(EC2_ASSIGN_IPS, "<AssignPrivateIpAddresses"
	    "Response" NS "><requestId>r</requestId><networkInterfaceId>eni-1"
	    "</networkInterfaceId><assignedPrivateIpAddressesSet/>"
	    "<assignedIpv4PrefixSet><item><ipv4Prefix>10.0.8.0/28"
	    "</ipv4Prefix></item><item><ipv4Prefix>10.0.8.32/28</ipv4Prefix>"
	    "</item></assignedIpv4PrefixSet><return>true</return>"
	    "</AssignPrivateIpAddressesResponse>", &a, err), 0);
	assert_int_equal(a.naddrs, 0);
	assert_int_equal(a.nprefixes, 2);
	assert_string_equal(a.prefixes[1], "10.0.8.32/28");

	assert_int_equal(parse(EC2_DESCRIBE_INSTANCE_TYPES,
	    "<DescribeInstanceTypesResponse><instanceTypeSet><item>"
	    "<instanceType>m4.large</instanceType><hypervisor>xen</hypervisor>"
	    "<bareMetal>false</bareMetal><vCpuInfo><defaultVCpus>2"
	    "</defaultVCpus></vCpuInfo></item><item><instanceType>"
	    "m5.metal</instanceType><bareMetal>true</bareMetal></item>"
	    "</instanceTypeSet></DescribeInstanceTypesResponse>", &a, err), 0);
	assert_int_equal(a.nitems, 2);
	assert_string_equal(a.list.types[0].vcpus, "2");
	assert_string_equal(a.list.types[1].vcpus, "");
	assert_string_equal(a.list.types[0].hypervisor, "xen");
	assert_string_equal(a.list.types[0].bare_metal, "false");
	assert_string_equal(a.list.types[1].hypervisor, "");
	assert_string_equal(a.list.types[1].bare_metal, "true");
	ec2_answer_free(&a);

	/* a hypervisor too long for its field refuses the answer */
	assert_int_equal(parse(EC2_DESCRIBE_INSTANCE_TYPES,
	    "<DescribeInstanceTypesResponse><instanceTypeSet><item>"
	    "<hypervisor>nitro-nitro-nitro-nitro</hypervisor></item>"
	    "</instanceTypeSet></DescribeInstanceTypesResponse>", &a, err),
	    -1);
}

/* An ENI listing with the prefixes xml (an ipv4PrefixSet's items) after
 * eni_item's: parsed into a, converted into m.  ec2_eni_to_msg's result. */
static int
eni_with_prefixes(const char *xml, struct ec2_answer *a,
    struct msg_cloud_eni *m, char *bad)
{
	char err[256], *doc;
	size_t n = strlen(eni_item) - strlen("</item>"), len;
	int rc;

	len = sizeof(eni_item) + strlen(xml) + 512;
	doc = malloc(len);
	assert_non_null(doc);
	snprintf(doc, len, "<DescribeNetworkInterfacesResponse" NS
	    "><networkInterfaceSet>%.*s<ipv4PrefixSet>%s</ipv4PrefixSet>"
	    "</item></networkInterfaceSet></DescribeNetworkInterfacesResponse>",
	    (int)n, eni_item, xml);
	assert_int_equal(parse(EC2_DESCRIBE_ENIS, doc, a, err), 0);
	free(doc);
	rc = ec2_eni_to_msg(&a->list.enis[0], m, err, sizeof(err), bad,
	    EC2_CIDR_LEN);
	ec2_answer_free(a);
	return rc;
}

/* Prefixes the broker would take for a broken helper's message (and stop)
 * are left out and counted as the misaligned are: one named twice, one
 * over an address of the ENI's own (its primary 10.0.0.5, its secondary
 * 10.0.0.6 and 10.0.0.7); and an ENI with more addresses and prefixes
 * than one holds is refused whole. */
static void
test_prefixes_not_the_enis(void **state)
{
	struct ec2_answer a;
	struct msg_cloud_eni m;
	char bad[EC2_CIDR_LEN], *xml;
	size_t i, len = 64 * 64;

	(void)state;
	assert_int_equal(eni_with_prefixes(
	    "<item><ipv4Prefix>10.0.4.16/28</ipv4Prefix></item>"
	    "<item><ipv4Prefix>10.0.0.0/28</ipv4Prefix></item>"
	    "<item><ipv4Prefix>10.0.4.32/28</ipv4Prefix></item>"
	    "<item><ipv4Prefix>10.0.4.16/28</ipv4Prefix></item>",
	    &a, &m, bad), 0);
	assert_int_equal(m.nprefixes, 2);
	assert_int_equal(ip_addr_in4(&m.prefixes[0]), htonl(0x0a000410));
	assert_int_equal(ip_addr_in4(&m.prefixes[1]), htonl(0x0a000420));
	assert_int_equal(m.nbad_prefixes, 2);
	assert_string_equal(bad, "10.0.0.0/28");
	assert_int_equal(m.naddrs, 2);

	/* two secondary addresses and 62 prefixes: as many as an ENI
	 * holds; one more is more than any ENI holds */
	xml = malloc(len);
	assert_non_null(xml);
	xml[0] = '\0';
	for (i = 0; i < 62; i++)
		snprintf(xml + strlen(xml), len - strlen(xml), "<item>"
		    "<ipv4Prefix>10.0.%zu.%zu/28</ipv4Prefix></item>",
		    8 + i / 16, i % 16 * 16);
	assert_int_equal(eni_with_prefixes(xml, &a, &m, bad), 0);
	assert_int_equal(m.nprefixes, 62);
	snprintf(xml + strlen(xml), len - strlen(xml), "<item><ipv4Prefix>"
	    "10.0.4.16/27</ipv4Prefix></item>");
	assert_int_equal(eni_with_prefixes(xml, &a, &m, bad), -1);
	free(xml);
}

static void
test_eni_checks(void **state)
{
	struct ec2_answer a;
	struct msg_cloud_eni m;
	char err[256], *doc, *p;

	(void)state;
	/* Each broken field refuses the ENI, naming the field. */
	static const struct {
		const char *from, *to, *why;
	} cases[] = {
		{ "02:5a:96:2b:9b:a2", "02:5a:96:2b:9b:zz", "MAC" },
		{ "<privateIpAddress>10.0.0.5</privateIpAddress><primary>true",
		  "<privateIpAddress>10.0.0.500</privateIpAddress><primary>true",
		  "address" },
		{ "eni-0a1b2c3d4e5f60718", "eni-0a1b/../x", "invalid id" },
		{ "subnet-0123456789abcdef0", "subnet-", "subnet" },
		{ "i-0123456789abcdef0", "i-0123 ;", "instance" },
		{ "eni-attach-0abc", "eni-attach-", "attachment" },
		{ "<deviceIndex>2", "<deviceIndex>-2", "device index" },
		{ "<key>Name</key>", "<key>Na&#x9;me</key>", "tag" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		doc = describe_enis_doc(1, NULL);
		p = strstr(doc, cases[i].from);
		assert_non_null(p);
		{
			char *rest = strdup(p + strlen(cases[i].from));
			size_t n = (size_t)(p - doc);
			char *nd = malloc(strlen(doc) + 64);

			memcpy(nd, doc, n);
			strcpy(nd + n, cases[i].to);
			strcat(nd, rest);
			free(rest);
			free(doc);
			doc = nd;
		}
		assert_int_equal(parse(EC2_DESCRIBE_ENIS, doc, &a, err), 0);
		assert_int_equal(ec2_eni_to_msg(&a.list.enis[0], &m, err,
		    sizeof(err), NULL, 0), -1);
		assert_non_null(strstr(err, cases[i].why));
		ec2_answer_free(&a);
		free(doc);
	}
}

static void
test_create_attach_assign_return(void **state)
{
	struct ec2_answer a;
	char err[256], doc[4096];

	(void)state;
	snprintf(doc, sizeof(doc), "<CreateNetworkInterfaceResponse" NS ">"
	    "<requestId>r-1</requestId><networkInterface>%.*s"
	    "</networkInterface><clientToken>t</clientToken>"
	    "</CreateNetworkInterfaceResponse>",
	    (int)(strlen(eni_item) - 13), eni_item + 6);
	assert_int_equal(parse(EC2_CREATE_ENI, doc, &a, err), 0);
	assert_true(a.has_eni);
	assert_string_equal(a.eni.id, "eni-0a1b2c3d4e5f60718");
	assert_int_equal(a.eni.naddrs, 3);
	ec2_answer_free(&a);

	assert_int_equal(parse(EC2_ATTACH_ENI, "<AttachNetworkInterfaceResponse"
	    NS "><requestId>r</requestId><attachmentId>eni-attach-1f"
	    "</attachmentId><networkCardIndex>0</networkCardIndex>"
	    "</AttachNetworkInterfaceResponse>", &a, err), 0);
	assert_string_equal(a.attachment_id, "eni-attach-1f");

	assert_int_equal(parse(EC2_ASSIGN_IPS, "<AssignPrivateIpAddressesResponse"
	    NS "><requestId>r</requestId><networkInterfaceId>eni-1"
	    "</networkInterfaceId><assignedPrivateIpAddressesSet><item>"
	    "<privateIpAddress>10.0.0.8</privateIpAddress></item><item>"
	    "<privateIpAddress>10.0.0.9</privateIpAddress></item>"
	    "</assignedPrivateIpAddressesSet><return>true</return>"
	    "</AssignPrivateIpAddressesResponse>", &a, err), 0);
	assert_int_equal(a.naddrs, 2);
	assert_string_equal(a.addrs[1], "10.0.0.9");

	assert_int_equal(parse(EC2_DELETE_ENI, "<DeleteNetworkInterfaceResponse"
	    "><requestId>r</requestId><return>true</return>"
	    "</DeleteNetworkInterfaceResponse>", &a, err), 0);
	assert_true(a.has_return && a.return_true);
	assert_int_equal(parse(EC2_MODIFY_ENI_ATTR,
	    "<ModifyNetworkInterfaceAttributeResponse><return>false</return>"
	    "</ModifyNetworkInterfaceAttributeResponse>", &a, err), 0);
	assert_true(a.has_return && !a.return_true);
}

static void
test_instances_types_subnets(void **state)
{
	struct ec2_answer a;
	char err[256], doc[8192];

	(void)state;
	snprintf(doc, sizeof(doc), "<DescribeInstancesResponse" NS ">"
	    "<requestId>r</requestId><reservationSet><item>"
	    "<reservationId>r-1</reservationId><groupSet/><instancesSet><item>"
	    "<instanceId>i-0123456789abcdef0</instanceId>"
	    "<instanceState><code>16</code><name>running</name></instanceState>"
	    "<instanceType>m5.xlarge</instanceType><placement>"
	    "<availabilityZone>us-east-1a</availabilityZone></placement>"
	    "<subnetId>subnet-01</subnetId><vpcId>vpc-01</vpcId>"
	    "<privateIpAddress>10.0.0.4</privateIpAddress>"
	    "<groupSet><item><groupId>sg-99</groupId></item></groupSet>"
	    "<networkInterfaceSet>%s</networkInterfaceSet>"
	    "</item></instancesSet></item></reservationSet>"
	    "</DescribeInstancesResponse>", eni_item);
	assert_int_equal(parse(EC2_DESCRIBE_INSTANCES, doc, &a, err), 0);
	assert_int_equal(a.nitems, 1);
	assert_string_equal(a.list.instances[0].type, "m5.xlarge");
	assert_string_equal(a.list.instances[0].az, "us-east-1a");
	assert_int_equal(a.list.instances[0].nenis, 1);
	assert_string_equal(a.list.instances[0].enis[0].device_index, "2");
	assert_string_equal(a.list.instances[0].enis[0].groups[0], "sg-01");
	ec2_answer_free(&a);

	assert_int_equal(parse(EC2_DESCRIBE_INSTANCE_TYPES,
	    "<DescribeInstanceTypesResponse><requestId>r</requestId>"
	    "<instanceTypeSet><item><instanceType>m5.xlarge</instanceType>"
	    "<networkInfo><maximumNetworkInterfaces>4</maximumNetworkInterfaces>"
	    "<networkCards><item><maximumNetworkInterfaces>9"
	    "</maximumNetworkInterfaces></item></networkCards>"
	    "<ipv4AddressesPerInterface>15</ipv4AddressesPerInterface>"
	    "</networkInfo></item></instanceTypeSet>"
	    "</DescribeInstanceTypesResponse>", &a, err), 0);
	assert_int_equal(a.nitems, 1);
	assert_string_equal(a.list.types[0].max_enis, "4");
	assert_string_equal(a.list.types[0].ipv4_per_eni, "15");
	ec2_answer_free(&a);

	assert_int_equal(parse(EC2_DESCRIBE_SUBNETS,
	    "<DescribeSubnetsResponse><requestId>r</requestId><subnetSet>"
	    "<item><subnetId>subnet-1</subnetId><vpcId>vpc-1</vpcId>"
	    "<cidrBlock>10.0.0.0/20</cidrBlock><availableIpAddressCount>4091"
	    "</availableIpAddressCount><availabilityZone>us-east-1b"
	    "</availabilityZone><tagSet/></item><item><subnetId>subnet-2"
	    "</subnetId></item></subnetSet><nextToken>abc</nextToken>"
	    "</DescribeSubnetsResponse>", &a, err), 0);
	assert_int_equal(a.nitems, 2);
	assert_string_equal(a.list.subnets[0].cidr, "10.0.0.0/20");
	assert_string_equal(a.list.subnets[0].available, "4091");
	assert_string_equal(a.list.subnets[0].az, "us-east-1b");
	assert_string_equal(a.next_token, "abc");
	ec2_answer_free(&a);
}

static void
test_errors(void **state)
{
	struct ec2_answer a;
	char err[256];

	(void)state;
	assert_int_equal(parse(EC2_DELETE_ENI, "<?xml version=\"1.0\" "
	    "encoding=\"UTF-8\"?>\n<Response><Errors><Error><Code>"
	    "InvalidNetworkInterfaceID.NotFound</Code><Message>The networkInterface"
	    " ID 'eni-1' does not exist</Message></Error></Errors><RequestID>"
	    "ea966190-f9aa-478e-9ede-example</RequestID></Response>", &a, err), 0);
	assert_true(a.is_error);
	assert_string_equal(a.code, "InvalidNetworkInterfaceID.NotFound");
	assert_string_equal(a.request_id, "ea966190-f9aa-478e-9ede-example");
	assert_non_null(strstr(a.message, "does not exist"));

	/* the other AWS shape */
	assert_int_equal(parse(EC2_ATTACH_ENI, "<ErrorResponse><Error><Code>"
	    "Throttling</Code><Message>slow down</Message></Error><RequestId>"
	    "r-9</RequestId></ErrorResponse>", &a, err), 0);
	assert_true(a.is_error);
	assert_string_equal(a.code, "Throttling");
	assert_string_equal(a.request_id, "r-9");

	/* a long message is cut, not refused */
	{
		char doc[6000], msg[3000];

		memset(msg, 'm', sizeof(msg) - 1);
		msg[sizeof(msg) - 1] = '\0';
		snprintf(doc, sizeof(doc), "<Response><Errors><Error><Code>X"
		    "</Code><Message>%s</Message></Error></Errors></Response>",
		    msg);
		assert_int_equal(parse(EC2_DETACH_ENI, doc, &a, err), 0);
		assert_int_equal(strlen(a.message), MSG_ERR_LEN - 1);
	}
	/* an error answer without a code is not an answer */
	assert_int_equal(parse(EC2_DETACH_ENI, "<Response><Errors/></Response>",
	    &a, err), -1);
}

static void
test_truncated_all_prefixes(void **state)
{
	struct ec2_answer a;
	char err[256];
	char *doc = describe_enis_doc(2, "tok");
	size_t n, len = strlen(doc);

	(void)state;
	for (n = 0; n < len; n++) {
		assert_int_equal(ec2_parse(EC2_DESCRIBE_ENIS, doc, n, &a, err,
		    sizeof(err)), -1);
		assert_null(a.list.any);
	}
	assert_int_equal(ec2_parse(EC2_DESCRIBE_ENIS, doc, len, &a, err,
	    sizeof(err)), 0);
	ec2_answer_free(&a);
	free(doc);
}

static void
test_refused(void **state)
{
	struct ec2_answer a;
	char err[256], *big, *deep;
	size_t i;

	(void)state;
	/* garbage, empty, HTML, wrong root */
	assert_int_equal(parse(EC2_DESCRIBE_ENIS, "", &a, err), -1);
	assert_int_equal(parse(EC2_DESCRIBE_ENIS, "\x01\x02garbage", &a, err),
	    -1);
	assert_non_null(strstr(err, "malformed XML"));
	assert_int_equal(parse(EC2_DESCRIBE_ENIS, "<html><body>502</body>"
	    "</html>", &a, err), -1);
	assert_string_equal(err, "unexpected root element <html>");
	assert_int_equal(parse(EC2_DESCRIBE_ENIS,
	    "<DescribeSubnetsResponse/>", &a, err), -1);
	/* entities: no DOCTYPE at all */
	assert_int_equal(parse(EC2_DELETE_ENI, "<!DOCTYPE r [<!ENTITY a "
	    "\"aaaa\">]><DeleteNetworkInterfaceResponse><return>&a;</return>"
	    "</DeleteNetworkInterfaceResponse>", &a, err), -1);
	assert_non_null(strstr(err, "DOCTYPE"));
	/* over the size cap, whatever it holds */
	big = malloc(EC2_MAX_BODY + 2);
	memset(big, ' ', EC2_MAX_BODY + 1);
	big[EC2_MAX_BODY + 1] = '\0';
	assert_int_equal(ec2_parse(EC2_DESCRIBE_ENIS, big, EC2_MAX_BODY + 1,
	    &a, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "cap"));
	free(big);
	/* nested too deep */
	deep = malloc(64 * 8 + 64);
	strcpy(deep, "<DeleteNetworkInterfaceResponse>");
	for (i = 0; i < 40; i++)
		strcat(deep, "<a>");
	assert_int_equal(parse(EC2_DELETE_ENI, deep, &a, err), -1);
	assert_non_null(strstr(err, "nested deeper"));
	free(deep);
	/* a field over its size */
	assert_int_equal(parse(EC2_ATTACH_ENI, "<AttachNetworkInterfaceResponse>"
	    "<attachmentId>eni-attach-0123456789012345678901234567890123456789"
	    "0123456789012345678901234567890</attachmentId>"
	    "</AttachNetworkInterfaceResponse>", &a, err), -1);
	assert_non_null(strstr(err, "too long"));
	/* too many entries in a page */
	big = malloc(1200 * 16 + 256);
	strcpy(big, "<DescribeSubnetsResponse><subnetSet>");
	for (i = 0; i < 1001; i++)
		strcat(big, "<item/>");
	strcat(big, "</subnetSet></DescribeSubnetsResponse>");
	assert_int_equal(parse(EC2_DESCRIBE_SUBNETS, big, &a, err), -1);
	assert_non_null(strstr(err, "more than 1000"));
	assert_null(a.list.any);
	free(big);
	/* too many addresses on one ENI: more than its primary and
	 * MSG_MAX_ENI_ADDRS */
	big = malloc(70 * 66 + 512);
	strcpy(big, "<DescribeNetworkInterfacesResponse><networkInterfaceSet>"
	    "<item><privateIpAddressesSet>");
	for (i = 0; i < 66; i++)
		strcat(big, "<item><privateIpAddress>10.0.0.1"
		    "</privateIpAddress></item>");
	strcat(big, "</privateIpAddressesSet></item></networkInterfaceSet>"
	    "</DescribeNetworkInterfacesResponse>");
	assert_int_equal(parse(EC2_DESCRIBE_ENIS, big, &a, err), -1);
	assert_non_null(strstr(err, "more than 65 addresses"));
	free(big);
}

/* An instance entry is large (it holds its ENIs): a short answer listing
 * many instances must not make the parser allocate hundreds of MB. */
static void
test_instances_capped(void **state)
{
	struct ec2_answer a;
	char err[256], *big;
	size_t i;

	(void)state;
	big = malloc(1000 * 8 + 256);
	strcpy(big, "<DescribeInstancesResponse><reservationSet><item>"
	    "<instancesSet>");
	for (i = 0; i < 1000; i++)
		strcat(big, "<item/>");
	strcat(big, "</instancesSet></item></reservationSet>"
	    "</DescribeInstancesResponse>");
	assert_int_equal(parse(EC2_DESCRIBE_INSTANCES, big, &a, err), -1);
	assert_non_null(strstr(err, "more than 8 entries"));
	assert_null(a.list.any);
	free(big);
}

/* An instance item as DescribeInstances has it, trimmed: its id, its
 * state, and an interface whose attachment names the instance again. */
#define INSTANCE_ITEM(id, state) \
	"<item><instanceId>" id "</instanceId><imageId>ami-1</imageId>" \
	"<instanceState><code>16</code>" state "</instanceState>" \
	"<stateReason><code>x</code><message>y</message></stateReason>" \
	"<networkInterfaceSet><item><networkInterfaceId>eni-1" \
	"</networkInterfaceId><attachment><attachmentId>eni-attach-1" \
	"</attachmentId><status>attached</status></attachment>" \
	"<ownerId>123</ownerId></item></networkInterfaceSet>" \
	"<tagSet><item><key>instanceId</key><value>i-ffffffff</value></item>" \
	"</tagSet></item>"
#define STATE(s)	"<name>" s "</name>"

static void
test_check_instances_parse(void **state)
{
	struct ec2_answer a;
	char err[256];
	const char *doc = "<DescribeInstancesResponse" NS "><requestId>r-7"
	    "</requestId><reservationSet>"
	    "<item><reservationId>r-1</reservationId><ownerId>1</ownerId>"
	    "<groupSet/><instancesSet>"
	    INSTANCE_ITEM("i-0000000000000000a", STATE("running"))
	    INSTANCE_ITEM("i-0000000000000000b", STATE("shutting-down"))
	    "</instancesSet></item>"
	    "<item><reservationId>r-2</reservationId><instancesSet>"
	    INSTANCE_ITEM("i-0000000c", STATE("terminated"))
	    INSTANCE_ITEM("i-0000000d", "")	/* no state at all */
	    INSTANCE_ITEM("i-0000000e", STATE("stopped"))
	    "</instancesSet></item>"
	    "<item><reservationId>r-3</reservationId><instancesSet/></item>"
	    "</reservationSet><nextToken>tok2</nextToken>"
	    "</DescribeInstancesResponse>";

	(void)state;
	assert_int_equal(parse(EC2_CHECK_INSTANCES, doc, &a, err), 0);
	assert_false(a.is_error);
	assert_string_equal(a.request_id, "r-7");
	assert_string_equal(a.next_token, "tok2");
	/* every instance of every reservation, in order */
	assert_int_equal(a.nitems, 5);
	assert_string_equal(a.list.states[0].id, "i-0000000000000000a");
	assert_string_equal(a.list.states[0].state, "running");
	assert_string_equal(a.list.states[1].id, "i-0000000000000000b");
	assert_string_equal(a.list.states[1].state, "shutting-down");
	assert_string_equal(a.list.states[2].id, "i-0000000c");
	assert_string_equal(a.list.states[2].state, "terminated");
	assert_string_equal(a.list.states[3].id, "i-0000000d");
	assert_string_equal(a.list.states[3].state, "");
	assert_string_equal(a.list.states[4].state, "stopped");
	ec2_answer_free(&a);

	/* no reservation: an empty list, still an answer */
	assert_int_equal(parse(EC2_CHECK_INSTANCES, "<DescribeInstancesResponse>"
	    "<requestId>r</requestId><reservationSet/>"
	    "</DescribeInstancesResponse>", &a, err), 0);
	assert_int_equal(a.nitems, 0);
	assert_string_equal(a.next_token, "");
	ec2_answer_free(&a);

	/* the same root as describe-instance, which a check is */
	assert_int_equal(parse(EC2_CHECK_INSTANCES, "<DescribeSubnetsResponse/>",
	    &a, err), -1);
	assert_string_equal(err, "unexpected root element "
	    "<DescribeSubnetsResponse>");
	/* a state over its field refuses the answer */
	assert_int_equal(parse(EC2_CHECK_INSTANCES, "<DescribeInstancesResponse>"
	    "<reservationSet><item><instancesSet>"
	    INSTANCE_ITEM("i-0000000a", STATE("running-running-running-running-x"))
	    "</instancesSet></item></reservationSet>"
	    "</DescribeInstancesResponse>", &a, err), -1);
	assert_non_null(strstr(err, "instanceState/name> too long"));
	/* the throttle an existence check may meet */
	assert_int_equal(parse(EC2_CHECK_INSTANCES, "<Response><Errors><Error>"
	    "<Code>RequestLimitExceeded</Code><Message>Request limit "
	    "exceeded.</Message></Error></Errors><RequestID>r-9</RequestID>"
	    "</Response>", &a, err), 0);
	assert_true(a.is_error);
	assert_string_equal(a.code, "RequestLimitExceeded");
	assert_int_equal(a.nitems, 0);
}

/* Entries are small, so a page may list many, but not without end. */
static void
test_check_instances_capped(void **state)
{
	struct ec2_answer a;
	char err[256], *big;
	size_t i, n;

	(void)state;
	for (n = EC2_MAX_ITEMS; n <= EC2_MAX_ITEMS + 1; n++) {
		big = malloc(n * 64 + 256);
		assert_non_null(big);
		strcpy(big, "<DescribeInstancesResponse><reservationSet>");
		/* spread over reservations, as the cap is per answer */
		for (i = 0; i < n; i++) {
			if (i % 300 == 0)
				strcat(big, i ? "</instancesSet></item><item>"
				    "<instancesSet>" : "<item><instancesSet>");
			strcat(big, "<item><instanceId>i-1</instanceId></item>");
		}
		strcat(big, "</instancesSet></item></reservationSet>"
		    "</DescribeInstancesResponse>");
		if (n == EC2_MAX_ITEMS) {
			assert_int_equal(parse(EC2_CHECK_INSTANCES, big, &a,
			    err), 0);
			assert_int_equal(a.nitems, EC2_MAX_ITEMS);
			ec2_answer_free(&a);
		} else {
			assert_int_equal(parse(EC2_CHECK_INSTANCES, big, &a,
			    err), -1);
			assert_non_null(strstr(err, "more than 1000 entries"));
			assert_null(a.list.any);
		}
		free(big);
	}
}

static struct ec2_instance_state *
states(size_t n, ...)
{
	static struct ec2_instance_state list[8];
	va_list ap;
	size_t i;

	va_start(ap, n);
	memset(list, 0, sizeof(list));
	for (i = 0; i < n; i++) {
		strcpy(list[i].id, va_arg(ap, const char *));
		strcpy(list[i].state, va_arg(ap, const char *));
	}
	va_end(ap);
	return list;
}

static void
test_check_instances_mark(void **state)
{
	struct msg_cloud_check_instances m;
	uint8_t exists[MSG_MAX_INSTANCE_IDS], named[MSG_MAX_INSTANCE_IDS];
	char err[256];
	static const struct {
		const char	*state;
		uint8_t		 exists;
	} st[] = {
		{ "pending", 1 }, { "running", 1 }, { "stopping", 1 },
		{ "stopped", 1 },
		{ "hibernating", 1 },		/* unknown: kept */
		{ "shutting-down", 0 }, { "terminated", 0 },
	};
	size_t i;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.nids = 5;
	strcpy(m.ids[0], "i-0000000a");
	strcpy(m.ids[1], "i-0000000b");
	strcpy(m.ids[2], "i-0000000c");		/* never named: gone */
	strcpy(m.ids[3], "i-0000000d");
	strcpy(m.ids[4], "i-0000000a");		/* asked twice */
	memset(exists, 0, sizeof(exists));
	memset(named, 0, sizeof(named));
	/* page 1, then page 2: what a page says is kept */
	assert_int_equal(ec2_instances_mark(&m, states(2, "i-0000000a",
	    "running", "i-0000000b", "terminated"), 2, exists, named, err,
	    sizeof(err)), 0);
	assert_int_equal(ec2_instances_mark(&m, states(0), 0, exists, named,
	    err, sizeof(err)), 0);
	assert_int_equal(ec2_instances_mark(&m, states(1, "i-0000000d",
	    "shutting-down"), 1, exists, named, err, sizeof(err)), 0);
	assert_memory_equal(exists, ((uint8_t []){ 1, 0, 0, 0, 1 }), 5);
	assert_memory_equal(named, ((uint8_t []){ 1, 1, 0, 1, 1 }), 5);

	/* each state's meaning */
	m.nids = 1;
	for (i = 0; i < sizeof(st) / sizeof(st[0]); i++) {
		memset(exists, 0, sizeof(exists));
		memset(named, 0, sizeof(named));
		assert_int_equal(ec2_instances_mark(&m, states(1, "i-0000000a",
		    st[i].state), 1, exists, named, err, sizeof(err)), 0);
		assert_int_equal(exists[0], st[i].exists);
		assert_int_equal(named[0], 1);
	}

	/* what the cloud must not answer */
	m.nids = 2;
	memset(named, 0, sizeof(named));
	assert_int_equal(ec2_instances_mark(&m, states(2, "i-0000000a",
	    "running", "i-0000000f", "running"), 2, exists, named, err,
	    sizeof(err)), -1);
	assert_string_equal(err, "i-0000000f was not asked for");
	memset(named, 0, sizeof(named));
	assert_int_equal(ec2_instances_mark(&m, states(2, "i-0000000a",
	    "running", "i-0000000a", "terminated"), 2, exists, named, err,
	    sizeof(err)), -1);
	assert_string_equal(err, "i-0000000a named twice");
	/* named twice across pages as well */
	memset(named, 0, sizeof(named));
	assert_int_equal(ec2_instances_mark(&m, states(1, "i-0000000b",
	    "running"), 1, exists, named, err, sizeof(err)), 0);
	assert_int_equal(ec2_instances_mark(&m, states(1, "i-0000000b",
	    "running"), 1, exists, named, err, sizeof(err)), -1);
	assert_string_equal(err, "i-0000000b named twice");
	memset(named, 0, sizeof(named));
	assert_int_equal(ec2_instances_mark(&m, states(1, "i-0000000a", ""), 1,
	    exists, named, err, sizeof(err)), -1);
	assert_string_equal(err, "i-0000000a: no instance state");
	assert_int_equal(ec2_instances_mark(&m, states(1, "i-0000000a",
	    "Running"), 1, exists, named, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "invalid instance state"));
	assert_int_equal(ec2_instances_mark(&m, states(1, "", "running"), 1,
	    exists, named, err, sizeof(err)), -1);
	assert_string_equal(err, "an instance without an id");
	/* the whole check, from a parsed page, with one instance not
	 * asked for among those that were */
	{
		struct ec2_answer a;

		assert_int_equal(parse(EC2_CHECK_INSTANCES,
		    "<DescribeInstancesResponse><reservationSet><item>"
		    "<instancesSet>"
		    INSTANCE_ITEM("i-0000000a", STATE("running"))
		    "</instancesSet></item><item><instancesSet>"
		    INSTANCE_ITEM("i-0000000b", STATE("stopped"))
		    INSTANCE_ITEM("i-00000099", STATE("running"))
		    "</instancesSet></item></reservationSet>"
		    "</DescribeInstancesResponse>", &a, err), 0);
		memset(named, 0, sizeof(named));
		assert_int_equal(ec2_instances_mark(&m, a.list.states, 2,
		    exists, named, err, sizeof(err)), 0);
		memset(named, 0, sizeof(named));
		assert_int_equal(ec2_instances_mark(&m, a.list.states,
		    a.nitems, exists, named, err, sizeof(err)), -1);
		assert_string_equal(err, "i-00000099 was not asked for");
		ec2_answer_free(&a);
	}
}

static void
test_unknown_elements_skipped(void **state)
{
	struct ec2_answer a;
	char err[256];

	(void)state;
	assert_int_equal(parse(EC2_ATTACH_ENI, "<AttachNetworkInterfaceResponse>"
	    "<futureField><x>1</x><attachmentId>eni-attach-evil</attachmentId>"
	    "</futureField><attachmentId>eni-attach-1</attachmentId>"
	    "</AttachNetworkInterfaceResponse>", &a, err), 0);
	assert_string_equal(a.attachment_id, "eni-attach-1");
}

static void
test_tags_over_limit_keep_enid(void **state)
{
	struct ec2_answer a;
	char err[256], doc[8192];
	int i, n = 0;
	bool found = false;

	(void)state;
	n += snprintf(doc + n, sizeof(doc) - n, "<CreateNetworkInterfaceResponse>"
	    "<networkInterface><tagSet>");
	for (i = 0; i < 10; i++)
		n += snprintf(doc + n, sizeof(doc) - n, "<item><key>user%d"
		    "</key><value>v</value></item>", i);
	n += snprintf(doc + n, sizeof(doc) - n, "<item><key>enid.io/node"
	    "</key><value>i-1</value></item></tagSet></networkInterface>"
	    "</CreateNetworkInterfaceResponse>");
	assert_int_equal(parse(EC2_CREATE_ENI, doc, &a, err), 0);
	assert_int_equal(a.eni.ntags, MSG_MAX_TAGS);
	assert_int_equal(a.eni.tags_dropped, 3);
	for (i = 0; i < MSG_MAX_TAGS; i++)
		found |= strcmp(a.eni.tags[i].key, "enid.io/node") == 0;
	assert_true(found);
}

/* ---- boundaries: every field cap and every count cap ---- */

/* A document: the root, then the elements of path nested, holding text. */
static char *
nested_doc(const char *root, const char *path, const char *text)
{
	size_t cap = strlen(root) * 2 + strlen(path) * 3 + strlen(text) + 64;
	char *doc = malloc(cap), *p = doc;
	const char *seg, *slash;

	assert_non_null(doc);
	p += sprintf(p, "<%s>", root);
	for (seg = path; (slash = strchr(seg, '/')) != NULL; seg = slash + 1)
		p += sprintf(p, "<%.*s>", (int)(slash - seg), seg);
	p += sprintf(p, "<%s>%s</%s>", seg, text, seg);
	for (;;) {
		const char *end = seg - 1;

		if (seg == path)
			break;
		for (seg = end; seg > path && seg[-1] != '/'; seg--)
			;
		p += sprintf(p, "</%.*s>", (int)(end - seg), seg);
	}
	sprintf(p, "</%s>", root);
	return doc;
}

#define GETTER(name, expr) \
	static const char *name(const struct ec2_answer *a) { return (expr); }

GETTER(g_request_id, a->request_id)
GETTER(g_next_token, a->next_token)
GETTER(g_e_id, a->list.enis[0].id)
GETTER(g_e_subnet, a->list.enis[0].subnet_id)
GETTER(g_e_vpc, a->list.enis[0].vpc_id)
GETTER(g_e_az, a->list.enis[0].az)
GETTER(g_e_mac, a->list.enis[0].mac)
GETTER(g_e_ip, a->list.enis[0].private_ip)
GETTER(g_e_status, a->list.enis[0].status)
GETTER(g_e_att_id, a->list.enis[0].attachment_id)
GETTER(g_e_att_inst, a->list.enis[0].attach_instance)
GETTER(g_e_att_status, a->list.enis[0].attach_status)
GETTER(g_e_att_dev, a->list.enis[0].device_index)
GETTER(g_e_att_dot, a->list.enis[0].dot)
GETTER(g_e_addr, a->list.enis[0].addrs[0])
GETTER(g_e_group, a->list.enis[0].groups[0])
GETTER(g_e_tag_key, a->list.enis[0].tags[0].key)
GETTER(g_e_tag_val, a->list.enis[0].tags[0].value)
GETTER(g_c_id, a->eni.id)
GETTER(g_c_mac, a->eni.mac)
GETTER(g_c_tag_val, a->eni.tags[0].value)
GETTER(g_i_id, a->list.instances[0].id)
GETTER(g_i_type, a->list.instances[0].type)
GETTER(g_i_az, a->list.instances[0].az)
GETTER(g_i_subnet, a->list.instances[0].subnet_id)
GETTER(g_i_vpc, a->list.instances[0].vpc_id)
GETTER(g_i_ip, a->list.instances[0].private_ip)
GETTER(g_i_eni_id, a->list.instances[0].enis[0].id)
GETTER(g_i_eni_dev, a->list.instances[0].enis[0].device_index)
GETTER(g_t_name, a->list.types[0].name)
GETTER(g_t_enis, a->list.types[0].max_enis)
GETTER(g_t_ips, a->list.types[0].ipv4_per_eni)
GETTER(g_s_id, a->list.subnets[0].id)
GETTER(g_s_az, a->list.subnets[0].az)
GETTER(g_s_vpc, a->list.subnets[0].vpc_id)
GETTER(g_s_cidr, a->list.subnets[0].cidr)
GETTER(g_s_avail, a->list.subnets[0].available)
GETTER(g_attach_id, a->attachment_id)
GETTER(g_assign_addr, a->addrs[0])

struct xml_field {
	enum ec2_action	 action;
	const char	*path;		/* below the root */
	size_t		 size;		/* of the field, its NUL included */
	const char	*(*get)(const struct ec2_answer *);
};

#define ENI_ITEM	"networkInterfaceSet/item/"
#define INST_ITEM	"reservationSet/item/instancesSet/item/"

static const struct xml_field xml_fields[] = {
	{ EC2_DELETE_ENI, "requestId", MSG_ID_LEN, g_request_id },
	{ EC2_DESCRIBE_ENIS, "nextToken", EC2_TOKEN_LEN, g_next_token },
	{ EC2_DESCRIBE_ENIS, ENI_ITEM "networkInterfaceId", MSG_ID_LEN,
	  g_e_id },
	{ EC2_DESCRIBE_ENIS, ENI_ITEM "subnetId", MSG_ID_LEN, g_e_subnet },
	{ EC2_DESCRIBE_ENIS, ENI_ITEM "vpcId", MSG_ID_LEN, g_e_vpc },
	{ EC2_DESCRIBE_ENIS, ENI_ITEM "availabilityZone", MSG_ID_LEN, g_e_az },
	{ EC2_DESCRIBE_ENIS, ENI_ITEM "macAddress", EC2_MAC_LEN, g_e_mac },
	{ EC2_DESCRIBE_ENIS, ENI_ITEM "privateIpAddress", EC2_IP_LEN, g_e_ip },
	{ EC2_DESCRIBE_ENIS, ENI_ITEM "status", EC2_STATUS_LEN, g_e_status },
	{ EC2_DESCRIBE_ENIS, ENI_ITEM "attachment/attachmentId", MSG_ID_LEN,
	  g_e_att_id },
	{ EC2_DESCRIBE_ENIS, ENI_ITEM "attachment/instanceId", MSG_ID_LEN,
	  g_e_att_inst },
	{ EC2_DESCRIBE_ENIS, ENI_ITEM "attachment/status", EC2_STATUS_LEN,
	  g_e_att_status },
	{ EC2_DESCRIBE_ENIS, ENI_ITEM "attachment/deviceIndex", 16,
	  g_e_att_dev },
	{ EC2_DESCRIBE_ENIS, ENI_ITEM "attachment/deleteOnTermination", 8,
	  g_e_att_dot },
	{ EC2_DESCRIBE_ENIS, ENI_ITEM
	  "privateIpAddressesSet/item/privateIpAddress", EC2_IP_LEN,
	  g_e_addr },
	{ EC2_DESCRIBE_ENIS, ENI_ITEM "groupSet/item/groupId", MSG_ID_LEN,
	  g_e_group },
	{ EC2_DESCRIBE_ENIS, ENI_ITEM "tagSet/item/key", MSG_TAG_KEY_LEN,
	  g_e_tag_key },
	{ EC2_DESCRIBE_ENIS, ENI_ITEM "tagSet/item/value", MSG_TAG_VAL_LEN,
	  g_e_tag_val },
	{ EC2_CREATE_ENI, "networkInterface/networkInterfaceId", MSG_ID_LEN,
	  g_c_id },
	{ EC2_CREATE_ENI, "networkInterface/macAddress", EC2_MAC_LEN,
	  g_c_mac },
	{ EC2_CREATE_ENI, "networkInterface/tagSet/item/value",
	  MSG_TAG_VAL_LEN, g_c_tag_val },
	{ EC2_DESCRIBE_INSTANCES, INST_ITEM "instanceId", MSG_ID_LEN, g_i_id },
	{ EC2_DESCRIBE_INSTANCES, INST_ITEM "instanceType", MSG_ID_LEN,
	  g_i_type },
	{ EC2_DESCRIBE_INSTANCES, INST_ITEM "placement/availabilityZone",
	  MSG_ID_LEN, g_i_az },
	{ EC2_DESCRIBE_INSTANCES, INST_ITEM "subnetId", MSG_ID_LEN,
	  g_i_subnet },
	{ EC2_DESCRIBE_INSTANCES, INST_ITEM "vpcId", MSG_ID_LEN, g_i_vpc },
	{ EC2_DESCRIBE_INSTANCES, INST_ITEM "privateIpAddress", EC2_IP_LEN,
	  g_i_ip },
	{ EC2_DESCRIBE_INSTANCES, INST_ITEM
	  "networkInterfaceSet/item/networkInterfaceId", MSG_ID_LEN,
	  g_i_eni_id },
	{ EC2_DESCRIBE_INSTANCES, INST_ITEM
	  "networkInterfaceSet/item/attachment/deviceIndex", 16,
	  g_i_eni_dev },
	{ EC2_DESCRIBE_INSTANCE_TYPES, "instanceTypeSet/item/instanceType",
	  MSG_ID_LEN, g_t_name },
	{ EC2_DESCRIBE_INSTANCE_TYPES,
	  "instanceTypeSet/item/networkInfo/maximumNetworkInterfaces", 16,
	  g_t_enis },
	{ EC2_DESCRIBE_INSTANCE_TYPES,
	  "instanceTypeSet/item/networkInfo/ipv4AddressesPerInterface", 16,
	  g_t_ips },
	{ EC2_DESCRIBE_SUBNETS, "subnetSet/item/subnetId", MSG_ID_LEN,
	  g_s_id },
	{ EC2_DESCRIBE_SUBNETS, "subnetSet/item/availabilityZone", MSG_ID_LEN,
	  g_s_az },
	{ EC2_DESCRIBE_SUBNETS, "subnetSet/item/vpcId", MSG_ID_LEN, g_s_vpc },
	{ EC2_DESCRIBE_SUBNETS, "subnetSet/item/cidrBlock", EC2_CIDR_LEN,
	  g_s_cidr },
	{ EC2_DESCRIBE_SUBNETS, "subnetSet/item/availableIpAddressCount", 16,
	  g_s_avail },
	{ EC2_ATTACH_ENI, "attachmentId", MSG_ID_LEN, g_attach_id },
	{ EC2_ASSIGN_IPS, "assignedPrivateIpAddressesSet/item/"
	  "privateIpAddress", EC2_IP_LEN, g_assign_addr },
};

static char *
filler(size_t n)
{
	char *v = malloc(n + 1);
	size_t i;

	assert_non_null(v);
	for (i = 0; i < n; i++)
		v[i] = (char)('a' + i % 26);
	v[n] = '\0';
	return v;
}

static void
doc_root(enum ec2_action act, char *root, size_t len)
{
	snprintf(root, len, "%sResponse", ec2_action_name(act));
}

/* Each field: size - 1 bytes are kept whole; size bytes (no room for the
 * NUL) refuse the answer, naming the element. */
static void
test_field_caps(void **state)
{
	struct ec2_answer a;
	char err[256], root[64], want[256];
	size_t i, n;

	(void)state;
	for (i = 0; i < sizeof(xml_fields) / sizeof(xml_fields[0]); i++) {
		const struct xml_field *f = &xml_fields[i];

		doc_root(f->action, root, sizeof(root));
		for (n = f->size - 2; n <= f->size + 1; n++) {
			char *v = filler(n), *doc = nested_doc(root, f->path, v);
			int rc = parse(f->action, doc, &a, err);

			if (n < f->size) {
				if (rc != 0)
					fail_msg("<%s> of %zu bytes refused: %s",
					    f->path, n, err);
				assert_string_equal(f->get(&a), v);
				ec2_answer_free(&a);
			} else {
				if (rc == 0)
					fail_msg("<%s> of %zu bytes (field of "
					    "%zu) accepted", f->path, n,
					    f->size);
				snprintf(want, sizeof(want), "value of <%s> "
				    "too long", f->path);
				assert_string_equal(err, want);
				assert_null(a.list.any);
			}
			free(doc);
			free(v);
		}
	}
}

/* Text longer than the parser keeps at all, and the error shape's free
 * text, which is cut to its field rather than refused. */
static void
test_text_caps(void **state)
{
	struct ec2_answer a;
	char err[256], *v, *doc;

	(void)state;
	v = filler(EC2_TEXT_MAX + 1);
	doc = nested_doc("DescribeNetworkInterfacesResponse",
	    ENI_ITEM "macAddress", v);
	assert_int_equal(parse(EC2_DESCRIBE_ENIS, doc, &a, err), -1);
	assert_non_null(strstr(err, "too long"));
	free(doc);
	/* unknown elements may be longer than that: they are skipped */
	doc = nested_doc("DescribeNetworkInterfacesResponse",
	    ENI_ITEM "description", v);
	assert_int_equal(parse(EC2_DESCRIBE_ENIS, doc, &a, err), 0);
	ec2_answer_free(&a);
	free(doc);
	free(v);

	v = filler(MSG_CODE_LEN - 1);
	doc = nested_doc("Response", "Errors/Error/Code", v);
	assert_int_equal(parse(EC2_DELETE_ENI, doc, &a, err), 0);
	assert_string_equal(a.code, v);
	free(doc);
	free(v);
	v = filler(MSG_CODE_LEN);
	doc = nested_doc("Response", "Errors/Error/Code", v);
	assert_int_equal(parse(EC2_DELETE_ENI, doc, &a, err), 0);
	assert_int_equal(strlen(a.code), MSG_CODE_LEN - 1);
	assert_memory_equal(a.code, v, MSG_CODE_LEN - 1);
	free(doc);
	free(v);
	v = filler(MSG_ID_LEN);
	doc = nested_doc("ErrorResponse", "RequestId", v);
	assert_int_equal(parse(EC2_DELETE_ENI, doc, &a, err), -1);
	assert_string_equal(err, "error answer without an error code");
	free(doc);
	free(v);
}

/* A document with n copies of an element inside a wrapper path. */
static char *
repeated_doc(const char *root, const char *wrap_open, const char *elem,
    int n, const char *wrap_close)
{
	size_t cap = strlen(root) * 2 + strlen(wrap_open) + strlen(wrap_close) +
	    strlen(elem) * (size_t)n + 64;
	char *doc = malloc(cap), *p = doc;
	int i;

	assert_non_null(doc);
	p += sprintf(p, "<%s>%s", root, wrap_open);
	for (i = 0; i < n; i++)
		p += sprintf(p, "%s", elem);
	sprintf(p, "%s</%s>", wrap_close, root);
	return doc;
}

struct count_cap {
	enum ec2_action	 action;
	const char	*wrap_open, *elem, *wrap_close;
	int		 max;
	const char	*err;
	uint32_t	(*count)(const struct ec2_answer *);
};

static uint32_t c_items(const struct ec2_answer *a) { return a->nitems; }
static uint32_t c_eni_addrs(const struct ec2_answer *a)
{ return a->list.enis[0].naddrs; }
static uint32_t c_eni_groups(const struct ec2_answer *a)
{ return a->list.enis[0].ngroups; }
static uint32_t c_create_addrs(const struct ec2_answer *a)
{ return a->eni.naddrs; }
static uint32_t c_inst_enis(const struct ec2_answer *a)
{ return a->list.instances[0].nenis; }
static uint32_t c_inst_eni_addrs(const struct ec2_answer *a)
{ return a->list.instances[0].enis[0].naddrs; }
static uint32_t c_assigned(const struct ec2_answer *a) { return a->naddrs; }

static const struct count_cap count_caps[] = {
	{ EC2_DESCRIBE_ENIS, "<networkInterfaceSet>", "<item/>",
	  "</networkInterfaceSet>", EC2_MAX_ITEMS,
	  "more than 1000 entries at <networkInterfaceSet/item>", c_items },
	{ EC2_DESCRIBE_SUBNETS, "<subnetSet>", "<item/>", "</subnetSet>",
	  EC2_MAX_ITEMS, "more than 1000 entries at <subnetSet/item>",
	  c_items },
	{ EC2_DESCRIBE_INSTANCE_TYPES, "<instanceTypeSet>", "<item/>",
	  "</instanceTypeSet>", EC2_MAX_ITEMS,
	  "more than 1000 entries at <instanceTypeSet/item>", c_items },
	{ EC2_DESCRIBE_INSTANCES, "<reservationSet><item><instancesSet>",
	  "<item/>", "</instancesSet></item></reservationSet>",
	  EC2_MAX_INSTANCES, "more than 8 entries at "
	  "<reservationSet/item/instancesSet/item>", c_items },
	{ EC2_DESCRIBE_INSTANCES, "<reservationSet><item><instancesSet><item>"
	  "<networkInterfaceSet>", "<item/>", "</networkInterfaceSet></item>"
	  "</instancesSet></item></reservationSet>", EC2_MAX_INSTANCE_ENIS,
	  "too many interfaces at <reservationSet/item/instancesSet/item/"
	  "networkInterfaceSet/item>", c_inst_enis },
	{ EC2_DESCRIBE_INSTANCES, "<reservationSet><item><instancesSet><item>"
	  "<networkInterfaceSet><item><privateIpAddressesSet>", "<item/>",
	  "</privateIpAddressesSet></item></networkInterfaceSet></item>"
	  "</instancesSet></item></reservationSet>", EC2_MAX_ENI_ADDRS,
	  "more than 65 addresses at <reservationSet/item/instancesSet/item/"
	  "networkInterfaceSet/item/privateIpAddressesSet/item>",
	  c_inst_eni_addrs },
	{ EC2_DESCRIBE_ENIS, "<networkInterfaceSet><item>"
	  "<privateIpAddressesSet>", "<item/>", "</privateIpAddressesSet>"
	  "</item></networkInterfaceSet>", EC2_MAX_ENI_ADDRS,
	  "more than 65 addresses at <networkInterfaceSet/item/"
	  "privateIpAddressesSet/item>", c_eni_addrs },
	{ EC2_DESCRIBE_ENIS, "<networkInterfaceSet><item><groupSet>",
	  "<item/>", "</groupSet></item></networkInterfaceSet>", MSG_MAX_SGS,
	  "more than 8 security groups at <networkInterfaceSet/item/groupSet/"
	  "item>", c_eni_groups },
	{ EC2_CREATE_ENI, "<networkInterface><privateIpAddressesSet>",
	  "<item/>", "</privateIpAddressesSet></networkInterface>",
	  EC2_MAX_ENI_ADDRS, "more than 65 addresses at <networkInterface/"
	  "privateIpAddressesSet/item>", c_create_addrs },
	{ EC2_ASSIGN_IPS, "<assignedPrivateIpAddressesSet>", "<item/>",
	  "</assignedPrivateIpAddressesSet>", MSG_MAX_ENI_ADDRS,
	  "more than 64 addresses at <assignedPrivateIpAddressesSet/item>",
	  c_assigned },
};

/* Every count cap: max entries are kept, max + 1 refuse the answer. */
static void
test_count_caps(void **state)
{
	struct ec2_answer a;
	char err[256], root[64];
	size_t i;
	int n;

	(void)state;
	for (i = 0; i < sizeof(count_caps) / sizeof(count_caps[0]); i++) {
		const struct count_cap *c = &count_caps[i];

		doc_root(c->action, root, sizeof(root));
		for (n = c->max - 1; n <= c->max + 1; n++) {
			char *doc = repeated_doc(root, c->wrap_open, c->elem, n,
			    c->wrap_close);
			int rc = parse(c->action, doc, &a, err);

			if (n <= c->max) {
				if (rc != 0)
					fail_msg("%d at %s refused: %s", n,
					    c->wrap_open, err);
				assert_int_equal(c->count(&a), n);
				ec2_answer_free(&a);
			} else {
				if (rc == 0)
					fail_msg("%d at %s accepted", n,
					    c->wrap_open);
				assert_string_equal(err, c->err);
				assert_null(a.list.any);
			}
			free(doc);
		}
	}
}

/* Tags over MSG_MAX_TAGS are dropped and counted, at the edge too. */
static void
test_tag_count_edge(void **state)
{
	static const int counts[] = { MSG_MAX_TAGS, MSG_MAX_TAGS + 1 };
	struct ec2_answer a;
	char err[256], *doc;
	size_t i;

	(void)state;
	for (i = 0; i < 2; i++) {
		doc = repeated_doc("CreateNetworkInterfaceResponse",
		    "<networkInterface><tagSet>",
		    "<item><key>k</key><value>v</value></item>", counts[i],
		    "</tagSet></networkInterface>");
		assert_int_equal(parse(EC2_CREATE_ENI, doc, &a, err), 0);
		assert_int_equal(a.eni.ntags, MSG_MAX_TAGS);
		assert_int_equal(a.eni.tags_dropped, counts[i] - MSG_MAX_TAGS);
		free(doc);
	}
}

/* Nesting depth, element path length and body size at their caps. */
static void
test_structure_caps(void **state)
{
	struct ec2_answer a;
	char err[256], *doc, *name, *p;
	size_t n;
	int depth, i;

	(void)state;
	/* the root is level 1: 31 more levels fit, a 33rd does not */
	for (depth = EC2_MAX_DEPTH; depth <= EC2_MAX_DEPTH + 1; depth++) {
		doc = malloc((size_t)depth * 8 + 128);
		p = doc + sprintf(doc, "<DeleteNetworkInterfaceResponse>");
		for (i = 1; i < depth; i++)
			p += sprintf(p, "<a>");
		for (i = 1; i < depth; i++)
			p += sprintf(p, "</a>");
		sprintf(p, "</DeleteNetworkInterfaceResponse>");
		if (depth == EC2_MAX_DEPTH) {
			assert_int_equal(parse(EC2_DELETE_ENI, doc, &a, err),
			    0);
		} else {
			assert_int_equal(parse(EC2_DELETE_ENI, doc, &a, err),
			    -1);
			assert_string_equal(err, "XML nested deeper than 32 "
			    "levels");
		}
		free(doc);
	}
	/* the path below the root ("a/" + name) has 511 bytes and a NUL */
	for (n = 509; n <= 510; n++) {
		name = filler(n);
		doc = malloc(2 * n + 128);
		sprintf(doc, "<DeleteNetworkInterfaceResponse><a><%s/></a>"
		    "</DeleteNetworkInterfaceResponse>", name);
		if (n == 509) {
			assert_int_equal(parse(EC2_DELETE_ENI, doc, &a, err),
			    0);
		} else {
			assert_int_equal(parse(EC2_DELETE_ENI, doc, &a, err),
			    -1);
			assert_non_null(strstr(err, "element path too long"));
		}
		free(doc);
		free(name);
	}
	/* a body of exactly EC2_MAX_BODY bytes is read */
	doc = malloc(EC2_MAX_BODY + 1);
	memset(doc, ' ', EC2_MAX_BODY + 1);
	n = (size_t)sprintf(doc, "<DeleteNetworkInterfaceResponse><return>true"
	    "</return></DeleteNetworkInterfaceResponse>");
	doc[n] = ' ';
	assert_int_equal(ec2_parse(EC2_DELETE_ENI, doc, EC2_MAX_BODY, &a, err,
	    sizeof(err)), 0);
	assert_true(a.return_true);
	assert_int_equal(ec2_parse(EC2_DELETE_ENI, doc, EC2_MAX_BODY + 1, &a,
	    err, sizeof(err)), -1);
	assert_string_equal(err, "answer of 1048577 bytes is over the "
	    "1048576-byte cap");
	free(doc);
}

/* ---- IPv6 (issue 35) ---- */

/* An ENI listing: eni_item with xml in place of its empty
 * ipv6AddressesSet (and with its privateIpAddress fields dropped when
 * v6only), parsed into a (freed by the caller). */
static int
eni6_doc(const char *xml, bool v6only, struct ec2_answer *a, char *err)
{
	const char *cut = strstr(eni_item, "<ipv6AddressesSet/>");
	size_t len = sizeof(eni_item) + strlen(xml) + 512;
	char *doc = malloc(len), *p;
	int rc;

	assert_non_null(doc);
	assert_non_null(cut);
	snprintf(doc, len, "<DescribeNetworkInterfacesResponse" NS
	    "><networkInterfaceSet>%.*s%s</item></networkInterfaceSet>"
	    "</DescribeNetworkInterfacesResponse>", (int)(cut - eni_item),
	    eni_item, xml);
	if (v6only) {
		/* no IPv4 at all: rename the IPv4 elements out of the way */
		while ((p = strstr(doc, "privateIp")) != NULL)
			memcpy(p, "unrelated", 9);
	}
	rc = parse(EC2_DESCRIBE_ENIS, doc, a, err);
	free(doc);
	return rc;
}

/* Each IPv6 field of an ENI, the primary first; each refusal left out,
 * counted and named, never the ENI's failure. */
static void
test_eni_ipv6(void **state)
{
	struct ec2_answer a;
	struct msg_cloud_eni m;
	struct ec2_left_out lo;
	char err[256], text[IP_ADDR_STR_LEN];

	(void)state;
	assert_int_equal(eni6_doc("<ipv6AddressesSet>"
	    "<item><ipv6Address>2600:1f14:abc:de00:1::5</ipv6Address>"
	    "<isPrimaryIpv6>false</isPrimaryIpv6></item>"
	    "<item><ipv6Address>2600:1f14:abc:de00:1::4</ipv6Address>"
	    "<isPrimaryIpv6>true</isPrimaryIpv6></item>"
	    "<item><ipv6Address>2600:1f14:abc:de00:1::6</ipv6Address></item>"
	    "</ipv6AddressesSet><ipv6PrefixSet>"
	    "<item><ipv6Prefix>2600:1f14:abc:de00:7::/80</ipv6Prefix></item>"
	    "</ipv6PrefixSet><ipv6Native>false</ipv6Native>", false, &a,
	    err), 0);
	assert_int_equal(a.list.enis[0].naddrs6, 3);
	assert_true(a.list.enis[0].addr6_primary[1]);
	assert_int_equal(ec2_eni_to_msg_noting(&a.list.enis[0], &m, err,
	    sizeof(err), &lo), 0);
	assert_int_equal(m.ipv6_native, 0);
	assert_int_equal(m.naddrs6, 3);
	ip_addr_format(&m.addrs6[0], text);
	assert_string_equal(text, "2600:1f14:abc:de00:1::4");	/* primary */
	ip_addr_format(&m.addrs6[1], text);
	assert_string_equal(text, "2600:1f14:abc:de00:1::5");
	ip_addr_format(&m.addrs6[2], text);
	assert_string_equal(text, "2600:1f14:abc:de00:1::6");
	assert_int_equal(m.nprefixes6, 1);
	ip_addr_format(&m.prefixes6[0], text);
	assert_string_equal(text, "2600:1f14:abc:de00:7::");
	assert_int_equal(m.nbad_addrs6 + m.nbad_prefixes6, 0);
	assert_int_equal(m.naddrs, 2);		/* IPv4 as before */
	ec2_answer_free(&a);

	/* the refusals: link-local, IPv4-mapped, loopback, multicast, EC2's
	 * DNS, not RFC 5952, named twice, IPv4; a /64, an unaligned /80, a
	 * /80 of multicast, one over an address, one named twice */
	assert_int_equal(eni6_doc("<ipv6AddressesSet>"
	    "<item><ipv6Address>fe80::1</ipv6Address></item>"
	    "<item><ipv6Address>2600:1f14:abc:de00:1::5</ipv6Address></item>"
	    "<item><ipv6Address>::ffff:a00:5</ipv6Address></item>"
	    "<item><ipv6Address>::1</ipv6Address></item>"
	    "<item><ipv6Address>ff02::1</ipv6Address></item>"
	    "<item><ipv6Address>fd00:ec2::253</ipv6Address></item>"
	    "<item><ipv6Address>2600:1F14:abc:de00:1::9</ipv6Address></item>"
	    "<item><ipv6Address>2600:1f14:abc:de00:1::5</ipv6Address></item>"
	    "<item><ipv6Address>10.0.0.9</ipv6Address></item>"
	    "<item><ipv6Address>64:ff9b::a00:9</ipv6Address></item>"
	    "<item/>"
	    "</ipv6AddressesSet><ipv6PrefixSet>"
	    "<item><ipv6Prefix>2600:1f14:abc:de00::/64</ipv6Prefix></item>"
	    "<item><ipv6Prefix>2600:1f14:abc:de00:7::1/80</ipv6Prefix></item>"
	    "<item><ipv6Prefix>2600:1f14:abc:de00:7::/80</ipv6Prefix></item>"
	    "<item><ipv6Prefix>ff00::/80</ipv6Prefix></item>"
	    "<item><ipv6Prefix>2600:1f14:abc:de00:1::/80</ipv6Prefix></item>"
	    "<item><ipv6Prefix>2600:1f14:abc:de00:7::/80</ipv6Prefix></item>"
	    "<item><ipv6Prefix>fd00:ec2::/80</ipv6Prefix></item>"
	    "</ipv6PrefixSet>", false, &a, err), 0);
	assert_int_equal(ec2_eni_to_msg_noting(&a.list.enis[0], &m, err,
	    sizeof(err), &lo), 0);
	assert_int_equal(m.naddrs6, 1);
	assert_int_equal(m.nbad_addrs6, 10);
	assert_string_equal(lo.addr6, "fe80::1");
	assert_string_equal(lo.addr6_why, "link-local");
	assert_int_equal(m.nprefixes6, 1);
	assert_int_equal(m.nbad_prefixes6, 6);
	assert_string_equal(lo.prefix6, "2600:1f14:abc:de00::/64");
	assert_string_equal(lo.prefix6_why, "a prefix of another length");
	assert_int_equal(m.naddrs, 2);		/* the ENI still goes on */
	ec2_answer_free(&a);
	/* each refusal's reason, the same checks one at a time */
	{
		static const struct {
			const char *text, *why;
		} bad[] = {
			{ "fe80::1", "link-local" },
			{ "::1", "loopback" },
			{ "ff02::1", "multicast" },
			{ "::", "unspecified" },
			{ "::a00:1", "reserved (::/8, IPv4-compatible among "
			    "them)" },
			{ "64:ff9b::a00:1", "an IPv4-mapped or NAT64 address" },
			{ "fd00:ec2::254", "one of EC2's service addresses" },
			{ "fd00:ec2::123", "one of EC2's service addresses" },
			{ "10.0.0.1", "not IPv6" },
		};
		struct ip_addr out;
		const char *why;
		size_t i;

		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			why = NULL;
			assert_int_equal(ec2_ip6_parse(bad[i].text, &out,
			    &why), -1);
			assert_string_equal(why, bad[i].why);
			assert_int_equal(out.family, 0);
		}
		assert_int_equal(ec2_ip6_parse("::ffff:a00:1", &out, &why), -1);
		assert_non_null(strstr(why, "IPv4-mapped"));
		assert_int_equal(ec2_ip6_parse("fd00:ec2::255", &out, NULL), 0);
		assert_int_equal(ec2_prefix6_parse("2600:1f14::/80", &out,
		    &why), 0);
		assert_int_equal(ec2_prefix6_parse("2600:1f14::/81", &out,
		    &why), -1);
		assert_string_equal(why, "a prefix of another length");
		assert_int_equal(ec2_prefix6_parse("2600:1f14::1:0:0/80",
		    &out, &why), -1);
		assert_string_equal(why, "not aligned (host bits set)");
		assert_int_equal(ec2_prefix6_parse("fd00:ec2::/80", &out,
		    &why), -1);
		assert_string_equal(why, "holds one of EC2's service "
		    "addresses");
		assert_int_equal(ec2_prefix6_parse("10.0.4.16/28", &out,
		    &why), -1);
		assert_string_equal(why, "not IPv6");
	}
}

/* ipv6Native: no IPv4 address at all (0.0.0.0 for the primary); one
 * that has IPv4 addresses anyway, or says neither true nor false, is
 * refused whole. */
static void
test_eni_ipv6_native(void **state)
{
	struct ec2_answer a;
	struct msg_cloud_eni m;
	char err[256];

	(void)state;
	assert_int_equal(eni6_doc("<ipv6AddressesSet><item><ipv6Address>"
	    "2600:1f14:abc:de00:1::5</ipv6Address><isPrimaryIpv6>true"
	    "</isPrimaryIpv6></item></ipv6AddressesSet>"
	    "<ipv6Native>true</ipv6Native>", true, &a, err), 0);
	assert_int_equal(ec2_eni_to_msg(&a.list.enis[0], &m, err,
	    sizeof(err), NULL, 0), 0);
	assert_int_equal(m.ipv6_native, 1);
	assert_true(ip_addr_is_unspecified(&m.primary_ip));
	assert_int_equal(m.primary_ip.family, AF_INET);
	assert_int_equal(m.naddrs, 0);
	assert_int_equal(m.naddrs6, 1);
	ec2_answer_free(&a);
	assert_int_equal(eni6_doc("<ipv6Native>true</ipv6Native>", false, &a,
	    err), 0);
	assert_int_equal(ec2_eni_to_msg(&a.list.enis[0], &m, err,
	    sizeof(err), NULL, 0), -1);
	assert_non_null(strstr(err, "IPv6-only (ipv6Native), yet with IPv4"));
	ec2_answer_free(&a);
	assert_int_equal(eni6_doc("<ipv6Native>yes</ipv6Native>", false, &a,
	    err), 0);
	assert_int_equal(ec2_eni_to_msg(&a.list.enis[0], &m, err,
	    sizeof(err), NULL, 0), -1);
	ec2_answer_free(&a);
	/* without ipv6Native, no IPv4 address is no ENI */
	assert_int_equal(eni6_doc("", true, &a, err), 0);
	assert_int_equal(ec2_eni_to_msg(&a.list.enis[0], &m, err,
	    sizeof(err), NULL, 0), -1);
	ec2_answer_free(&a);
}

/* Past the caps: counted, never written past; past MSG_MAX_LEFT_OUT
 * the answer is refused. */
static void
test_eni_ipv6_caps(void **state)
{
	struct ec2_answer a;
	struct msg_cloud_eni m;
	char err[256], *xml, *p;
	size_t i, n = MSG_MAX_LEFT_OUT + 8;

	(void)state;
	xml = malloc(n * 80 + 64);
	assert_non_null(xml);
	p = xml + sprintf(xml, "<ipv6AddressesSet>");
	for (i = 0; i < MSG_MAX_ENI_ADDRS6 + 6; i++)
		p += sprintf(p, "<item><ipv6Address>2600:1f14::%zx"
		    "</ipv6Address></item>", i + 1);
	p += sprintf(p, "</ipv6AddressesSet><ipv6PrefixSet>");
	for (i = 0; i < MSG_MAX_ENI_PREFIXES6 + 3; i++)
		p += sprintf(p, "<item><ipv6Prefix>2600:1f15:0:%zx::/80"
		    "</ipv6Prefix></item>", i + 1);
	sprintf(p, "</ipv6PrefixSet>");
	assert_int_equal(eni6_doc(xml, false, &a, err), 0);
	assert_int_equal(a.list.enis[0].naddrs6, MSG_MAX_ENI_ADDRS6);
	assert_int_equal(a.list.enis[0].addrs6_dropped, 6);
	assert_int_equal(ec2_eni_to_msg(&a.list.enis[0], &m, err,
	    sizeof(err), NULL, 0), 0);
	assert_int_equal(m.naddrs6, MSG_MAX_ENI_ADDRS6);
	assert_int_equal(m.nbad_addrs6, 6);
	assert_int_equal(m.nprefixes6, MSG_MAX_ENI_PREFIXES6);
	assert_int_equal(m.nbad_prefixes6, 3);
	ec2_answer_free(&a);

	p = xml + sprintf(xml, "<ipv6AddressesSet>");
	for (i = 0; i < n; i++)
		p += sprintf(p, "<item/>");
	sprintf(p, "</ipv6AddressesSet>");
	assert_int_equal(eni6_doc(xml, false, &a, err), -1);
	assert_non_null(strstr(err, "too many entries"));
	free(xml);
}

/* A subnet's IPv6 block: only an associated /64 is passed on; the state
 * otherwise; an IPv6-only subnet has no IPv4 CIDR. */
static void
test_subnets_ipv6(void **state)
{
	struct ec2_answer a;
	struct msg_cloud_subnet m;
	char err[256], note[160], text[IP_PREFIX_STR_LEN];

	(void)state;
	assert_int_equal(parse(EC2_DESCRIBE_SUBNETS,
	    "<DescribeSubnetsResponse><subnetSet>"
	    "<item><subnetId>subnet-1</subnetId><cidrBlock>10.0.0.0/20"
	    "</cidrBlock><ipv6CidrBlockAssociationSet>"
	    "<item><ipv6CidrBlock>2600:1f14:abc:de01::/64</ipv6CidrBlock>"
	    "<ipv6CidrBlockState><state>disassociated</state>"
	    "</ipv6CidrBlockState></item>"
	    "<item><ipv6CidrBlock>2600:1f14:abc:de00::/64</ipv6CidrBlock>"
	    "<associationId>x</associationId><ipv6CidrBlockState><state>"
	    "associated</state></ipv6CidrBlockState></item>"
	    "</ipv6CidrBlockAssociationSet><ipv6Native>false</ipv6Native>"
	    "</item>"
	    "<item><subnetId>subnet-2</subnetId>"
	    "<ipv6CidrBlockAssociationSet><item><ipv6CidrBlock>"
	    "2600:1f14:abc:de02::/64</ipv6CidrBlock><ipv6CidrBlockState>"
	    "<state>associated</state></ipv6CidrBlockState></item>"
	    "</ipv6CidrBlockAssociationSet><ipv6Native>true</ipv6Native>"
	    "</item>"
	    "<item><subnetId>subnet-3</subnetId><cidrBlock>10.0.16.0/20"
	    "</cidrBlock><ipv6CidrBlockAssociationSet><item><ipv6CidrBlock>"
	    "2600:1f14:abc:de03::/64</ipv6CidrBlock><ipv6CidrBlockState>"
	    "<state>associating</state></ipv6CidrBlockState></item>"
	    "</ipv6CidrBlockAssociationSet></item>"
	    "<item><subnetId>subnet-4</subnetId><cidrBlock>10.0.32.0/20"
	    "</cidrBlock><ipv6CidrBlockAssociationSet><item><ipv6CidrBlock>"
	    "2600:1f14:abc:de00::/56</ipv6CidrBlock><ipv6CidrBlockState>"
	    "<state>associated</state></ipv6CidrBlockState></item>"
	    "<item><ipv6CidrBlock>fe80::/64</ipv6CidrBlock>"
	    "<ipv6CidrBlockState><state>borrowed</state>"
	    "</ipv6CidrBlockState></item>"
	    "</ipv6CidrBlockAssociationSet></item>"
	    "<item><subnetId>subnet-5</subnetId><cidrBlock>10.0.48.0/20"
	    "</cidrBlock><ipv6Native>true</ipv6Native></item>"
	    "</subnetSet></DescribeSubnetsResponse>", &a, err), 0);
	assert_int_equal(a.nitems, 5);
	assert_int_equal(a.list.subnets[0].ncidrs6, 2);

	memset(&m, 0, sizeof(m));
	assert_int_equal(ec2_subnet6_to_msg(&a.list.subnets[0], &m, err,
	    sizeof(err), note, sizeof(note)), 0);
	assert_int_equal(m.ipv6_state, IPV6_ST_ASSOCIATED);
	ip_prefix_format(&m.cidr6, text);
	assert_string_equal(text, "2600:1f14:abc:de00::/64");
	assert_int_equal(m.ipv6_native, 0);
	assert_string_equal(note, "");

	/* IPv6-only: cidr none (all zero), never 0/0 */
	memset(&m, 0xff, sizeof(m));
	assert_int_equal(ec2_subnet6_to_msg(&a.list.subnets[1], &m, err,
	    sizeof(err), note, sizeof(note)), 0);
	assert_int_equal(m.ipv6_native, 1);
	assert_int_equal(m.cidr.addr.family, 0);
	assert_int_equal(m.cidr.len, 0);
	assert_int_equal(m.ipv6_state, IPV6_ST_ASSOCIATED);

	memset(&m, 0, sizeof(m));
	assert_int_equal(ec2_subnet6_to_msg(&a.list.subnets[2], &m, err,
	    sizeof(err), note, sizeof(note)), 0);
	assert_int_equal(m.ipv6_state, IPV6_ST_ASSOCIATING);
	assert_int_equal(m.cidr6.addr.family, 0);

	/* a /56 said associated, a state nobody knows: no usable block */
	assert_int_equal(ec2_subnet6_to_msg(&a.list.subnets[3], &m, err,
	    sizeof(err), note, sizeof(note)), 0);
	assert_int_equal(m.ipv6_state, IPV6_ST_NONE);
	assert_int_equal(m.cidr6.addr.family, 0);
	assert_non_null(strstr(note, "2600:1f14:abc:de00::/56"));
	assert_non_null(strstr(note, "a prefix of another length"));

	/* IPv6-only, yet with an IPv4 block: the entry contradicts itself */
	assert_int_equal(ec2_subnet6_to_msg(&a.list.subnets[4], &m, err,
	    sizeof(err), note, sizeof(note)), -1);
	assert_non_null(strstr(err, "IPv6-only"));
	ec2_answer_free(&a);

	assert_int_equal(ec2_ipv6_state("failed"), IPV6_ST_FAILED);
	assert_int_equal(ec2_ipv6_state("disassociating"),
	    IPV6_ST_DISASSOCIATING);
	assert_int_equal(ec2_ipv6_state("none"), IPV6_ST_MAX);
	assert_int_equal(ec2_ipv6_state(""), IPV6_ST_MAX);
}

static void
test_types_ipv6(void **state)
{
	struct ec2_answer a;
	char err[256];
	uint32_t per;
	uint8_t ok;

	(void)state;
	assert_int_equal(parse(EC2_DESCRIBE_INSTANCE_TYPES,
	    "<DescribeInstanceTypesResponse><instanceTypeSet><item>"
	    "<instanceType>m5.xlarge</instanceType><networkInfo>"
	    "<ipv6AddressesPerInterface>15</ipv6AddressesPerInterface>"
	    "<ipv6Supported>true</ipv6Supported></networkInfo></item>"
	    "<item><instanceType>t1.micro</instanceType><networkInfo>"
	    "<ipv6Supported>false</ipv6Supported></networkInfo></item>"
	    "<item><instanceType>x</instanceType><networkInfo>"
	    "<ipv6Supported>1</ipv6Supported></networkInfo></item>"
	    "<item><instanceType>y</instanceType><networkInfo>"
	    "<ipv6AddressesPerInterface>-1</ipv6AddressesPerInterface>"
	    "</networkInfo></item>"
	    "</instanceTypeSet></DescribeInstanceTypesResponse>", &a, err), 0);
	assert_int_equal(ec2_type_ipv6(&a.list.types[0], &ok, &per), 0);
	assert_int_equal(ok, 1);
	assert_int_equal(per, 15);
	assert_int_equal(ec2_type_ipv6(&a.list.types[1], &ok, &per), 0);
	assert_int_equal(ok, 0);
	assert_int_equal(per, 0);
	assert_int_equal(ec2_type_ipv6(&a.list.types[2], &ok, &per), -1);
	assert_int_equal(ec2_type_ipv6(&a.list.types[3], &ok, &per), -1);
	ec2_answer_free(&a);
}

/* AssignIpv6Addresses and UnassignIpv6Addresses answers: the new (or
 * removed) ones only, as lists of text. */
static void
test_assign_ipv6_answers(void **state)
{
	struct ec2_answer a;
	char err[256];

	(void)state;
	assert_int_equal(parse(EC2_ASSIGN_IPV6,
	    "<AssignIpv6AddressesResponse" NS "><requestId>r</requestId>"
	    "<networkInterfaceId>eni-1</networkInterfaceId>"
	    "<assignedIpv6Addresses><item>2600:1f14::5</item>"
	    "<item>2600:1f14::6</item></assignedIpv6Addresses>"
	    "<assignedIpv6PrefixSet><item>2600:1f14:0:0:7::/80</item>"
	    "</assignedIpv6PrefixSet>"
	    "</AssignIpv6AddressesResponse>", &a, err), 0);
	assert_string_equal(a.eni_id, "eni-1");
	assert_int_equal(a.naddrs6, 2);
	assert_string_equal(a.addrs6[1], "2600:1f14::6");
	assert_int_equal(a.nprefixes6, 1);
	assert_string_equal(a.prefixes6[0], "2600:1f14:0:0:7::/80");
	ec2_answer_free(&a);
	assert_int_equal(parse(EC2_UNASSIGN_IPV6,
	    "<UnassignIpv6AddressesResponse" NS "><requestId>r</requestId>"
	    "<networkInterfaceId>eni-1</networkInterfaceId>"
	    "<unassignedIpv6Addresses><item>2600:1f14::5</item>"
	    "</unassignedIpv6Addresses><unassignedIpv6PrefixSet/>"
	    "</UnassignIpv6AddressesResponse>", &a, err), 0);
	assert_int_equal(a.naddrs6, 1);
	assert_int_equal(a.nprefixes6, 0);
	ec2_answer_free(&a);
	/* the IPv4 action's root is no answer to the IPv6 one */
	assert_int_equal(parse(EC2_ASSIGN_IPV6,
	    "<AssignPrivateIpAddressesResponse/>", &a, err), -1);
	assert_string_equal(ec2_action_name(EC2_ASSIGN_IPV6),
	    "AssignIpv6Addresses");
	assert_true(ec2_action_mutating(EC2_UNASSIGN_IPV6));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_describe_enis),
		cmocka_unit_test(test_prefixes),
		cmocka_unit_test(test_prefixes_not_the_enis),
		cmocka_unit_test(test_eni_checks),
		cmocka_unit_test(test_create_attach_assign_return),
		cmocka_unit_test(test_instances_types_subnets),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_truncated_all_prefixes),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_instances_capped),
		cmocka_unit_test(test_check_instances_parse),
		cmocka_unit_test(test_check_instances_capped),
		cmocka_unit_test(test_check_instances_mark),
		cmocka_unit_test(test_unknown_elements_skipped),
		cmocka_unit_test(test_tags_over_limit_keep_enid),
		cmocka_unit_test(test_eni_ipv6),
		cmocka_unit_test(test_eni_ipv6_native),
		cmocka_unit_test(test_eni_ipv6_caps),
		cmocka_unit_test(test_subnets_ipv6),
		cmocka_unit_test(test_types_ipv6),
		cmocka_unit_test(test_assign_ipv6_answers),
		cmocka_unit_test(test_field_caps),
		cmocka_unit_test(test_text_caps),
		cmocka_unit_test(test_count_caps),
		cmocka_unit_test(test_tag_count_edge),
		cmocka_unit_test(test_structure_caps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
