/*
 * Requests and outcomes of enid-cloudd (cloudd/ec2_query.c, creds.c):
 * form bodies and the field checks before sending, the error-code to
 * outcome mapping, and IMDS credential parsing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "creds.h"
#include "ec2.h"

/* An IPv4 address from its host-order number. */
#define IN4(h)	ip_addr_from_in(htonl(h))

static void
test_form_encoding(void **state)
{
	struct ec2_form f;

	(void)state;
	ec2_form_init(&f, EC2_DELETE_ENI);
	ec2_form_add(&f, "Tag.1.Value", "a b&c=d/é~");
	assert_string_equal(f.buf, "Action=DeleteNetworkInterface&Version="
	    "2016-11-15&Tag.1.Value=a%20b%26c%3Dd%2F%C3%A9~");
	ec2_form_free(&f);
}

static void
test_create_eni_body(void **state)
{
	struct msg_cloud_create_eni m;
	struct ec2_form f;
	char err[256];

	(void)state;
	memset(&m, 0, sizeof(m));
	strcpy(m.subnet_id, "subnet-0abc");
	m.nsgs = 2;
	strcpy(m.sgs[0], "sg-1");
	strcpy(m.sgs[1], "sg-2");
	m.nsecondary = 3;
	strcpy(m.client_token, "tok-1");
	m.ntags = 1;
	strcpy(m.tags[0].key, "enid.io/node");
	strcpy(m.tags[0].value, "i-1");
	assert_int_equal(ec2_req_create_eni(&f, &m, err, sizeof(err)), 0);
	assert_string_equal(f.buf, "Action=CreateNetworkInterface&Version="
	    "2016-11-15&SubnetId=subnet-0abc&SecurityGroupId.1=sg-1&"
	    "SecurityGroupId.2=sg-2&SecondaryPrivateIpAddressCount=3&"
	    "ClientToken=tok-1&TagSpecification.1.ResourceType="
	    "network-interface&TagSpecification.1.Tag.1.Key=enid.io%2Fnode&"
	    "TagSpecification.1.Tag.1.Value=i-1");
	ec2_form_free(&f);

	strcpy(m.tags[0].key, "aws:x");
	assert_int_equal(ec2_req_create_eni(&f, &m, err, sizeof(err)), -1);
	strcpy(m.tags[0].key, "k");
	strcpy(m.subnet_id, "subnet-../x");
	assert_int_equal(ec2_req_create_eni(&f, &m, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "invalid subnet id"));
	strcpy(m.subnet_id, "subnet-1");
	m.client_token[0] = '\0';
	assert_int_equal(ec2_req_create_eni(&f, &m, err, sizeof(err)), -1);
}

static void
test_other_bodies(void **state)
{
	struct msg_cloud_describe_enis d;
	struct msg_cloud_ips ip;
	struct msg_cloud_attach at;
	struct msg_cloud_set_dot sd;
	struct ec2_form f;
	char err[256];

	(void)state;
	memset(&d, 0, sizeof(d));
	d.filter = ENIS_BY_TAGS;
	d.ntags = 2;
	strcpy(d.tags[0].key, "enid.io/cluster");
	strcpy(d.tags[0].value, "c1");
	strcpy(d.tags[1].key, "enid.io/node");
	d.status = ENI_ST_AVAILABLE;
	assert_int_equal(ec2_req_describe_enis(&f, &d, "", "tok=", err,
	    sizeof(err)), 0);
	assert_string_equal(f.buf, "Action=DescribeNetworkInterfaces&Version="
	    "2016-11-15&Filter.1.Name=tag%3Aenid.io%2Fcluster&Filter.1.Value.1="
	    "c1&Filter.2.Name=tag-key&Filter.2.Value.1=enid.io%2Fnode&"
	    "Filter.3.Name=status&Filter.3.Value.1=available&MaxResults=100&"
	    "NextToken=tok%3D");
	ec2_form_free(&f);
	d.filter = ENIS_BY_INSTANCE;
	assert_int_equal(ec2_req_describe_enis(&f, &d, "", NULL, err,
	    sizeof(err)), -1);	/* no instance id known */
	assert_int_equal(ec2_req_describe_enis(&f, &d, "i-0f", NULL, err,
	    sizeof(err)), 0);
	assert_non_null(strstr(f.buf, "Filter.1.Name=attachment.instance-id&"
	    "Filter.1.Value.1=i-0f"));
	ec2_form_free(&f);

	memset(&ip, 0, sizeof(ip));
	ip.family = AF_INET;
	strcpy(ip.eni_id, "eni-1");
	assert_int_equal(ec2_req_ips(&f, true, &ip, err, sizeof(err)), -1);
	ip.count = 2;
	assert_int_equal(ec2_req_ips(&f, true, &ip, err, sizeof(err)), 0);
	assert_non_null(strstr(f.buf, "SecondaryPrivateIpAddressCount=2"));
	ec2_form_free(&f);
	ip.naddrs = 1;
	ip.addrs[0] = IN4(0x0a000009);
	/* a count beside the list: which one would be meant? */
	assert_int_equal(ec2_req_ips(&f, false, &ip, err, sizeof(err)), -1);
	assert_string_equal(err, "unassign-ips: both a count and addresses");
	ip.count = 0;
	assert_int_equal(ec2_req_ips(&f, false, &ip, err, sizeof(err)), 0);
	assert_non_null(strstr(f.buf, "PrivateIpAddress.1=10.0.0.9"));
	assert_null(strstr(f.buf, "Count"));
	ec2_form_free(&f);

	memset(&at, 0, sizeof(at));
	strcpy(at.eni_id, "eni-1");
	at.device_index = 0;	/* the primary's slot: never */
	assert_int_equal(ec2_req_attach(&f, &at, "i-1", err, sizeof(err)), -1);
	at.device_index = 1;
	assert_int_equal(ec2_req_attach(&f, &at, "", err, sizeof(err)), -1);
	assert_int_equal(ec2_req_attach(&f, &at, "i-1", err, sizeof(err)), 0);
	ec2_form_free(&f);

	memset(&sd, 0, sizeof(sd));
	strcpy(sd.eni_id, "eni-1");
	strcpy(sd.attachment_id, "eni-1");	/* not an attachment id */
	assert_int_equal(ec2_req_set_dot(&f, &sd, err, sizeof(err)), -1);
	strcpy(sd.attachment_id, "eni-attach-1");
	sd.value = 1;
	assert_int_equal(ec2_req_set_dot(&f, &sd, err, sizeof(err)), 0);
	assert_non_null(strstr(f.buf, "Attachment.DeleteOnTermination=true"));
	ec2_form_free(&f);
}

/* Prefix delegation's requests: by count or by prefix, never both kinds
 * in one create, each prefix an aligned /28 named once. */
static void
test_prefix_bodies(void **state)
{
	struct msg_cloud_create_eni ce;
	struct msg_cloud_prefixes px;
	struct ec2_form f;
	char err[256];

	(void)state;
	memset(&ce, 0, sizeof(ce));
	strcpy(ce.subnet_id, "subnet-0abc");
	ce.nsgs = 1;
	strcpy(ce.sgs[0], "sg-1");
	strcpy(ce.client_token, "tok-1");
	ce.nprefixes = 2;
	assert_int_equal(ec2_req_create_eni(&f, &ce, err, sizeof(err)), 0);
	assert_non_null(strstr(f.buf, "&Ipv4PrefixCount=2&"));
	assert_null(strstr(f.buf, "SecondaryPrivateIpAddressCount"));
	assert_true(f.prefixes);
	ec2_form_free(&f);
	ce.nsecondary = 1;
	assert_int_equal(ec2_req_create_eni(&f, &ce, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "both prefixes and secondary"));
	ce.nsecondary = 0;
	ce.nprefixes = 50;
	assert_int_equal(ec2_req_create_eni(&f, &ce, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "50 prefixes"));
	ce.nprefixes = 0;
	assert_int_equal(ec2_req_create_eni(&f, &ce, err, sizeof(err)), 0);
	assert_false(f.prefixes);
	ec2_form_free(&f);

	memset(&px, 0, sizeof(px));
	px.family = AF_INET;
	strcpy(px.eni_id, "eni-1");
	assert_int_equal(ec2_req_prefixes(&f, true, &px, err, sizeof(err)),
	    -1);	/* neither a count nor a list */
	assert_non_null(strstr(err, "count 0"));
	px.count = 3;
	assert_int_equal(ec2_req_prefixes(&f, true, &px, err, sizeof(err)), 0);
	assert_string_equal(f.buf, "Action=AssignPrivateIpAddresses&Version="
	    "2016-11-15&NetworkInterfaceId=eni-1&Ipv4PrefixCount=3");
	assert_true(f.prefixes);
	ec2_form_free(&f);
	assert_int_equal(ec2_req_prefixes(&f, false, &px, err, sizeof(err)),
	    -1);	/* an unassign names its prefixes */
	assert_non_null(strstr(err, "no prefix given"));

	px.count = 0;
	px.nprefixes = 2;
	px.prefixes[0] = IN4(0x0a000410);	/* 10.0.4.16 */
	px.prefixes[1] = IN4(0x0a000420);	/* 10.0.4.32 */
	assert_int_equal(ec2_req_prefixes(&f, false, &px, err, sizeof(err)),
	    0);
	assert_string_equal(f.buf, "Action=UnassignPrivateIpAddresses&"
	    "Version=2016-11-15&NetworkInterfaceId=eni-1&Ipv4Prefix.1="
	    "10.0.4.16%2F28&Ipv4Prefix.2=10.0.4.32%2F28");
	ec2_form_free(&f);
	assert_int_equal(ec2_req_prefixes(&f, true, &px, err, sizeof(err)), 0);
	assert_null(strstr(f.buf, "Count"));
	ec2_form_free(&f);

	px.prefixes[1] = IN4(0x0a000418);	/* 10.0.4.24: not aligned */
	assert_int_equal(ec2_req_prefixes(&f, false, &px, err, sizeof(err)),
	    -1);
	assert_non_null(strstr(err, "aligned /28"));
	px.prefixes[1] = ip_addr_from_in(0);
	assert_int_equal(ec2_req_prefixes(&f, true, &px, err, sizeof(err)),
	    -1);
	px.prefixes[1] = px.prefixes[0];
	assert_int_equal(ec2_req_prefixes(&f, true, &px, err, sizeof(err)),
	    -1);
	assert_non_null(strstr(err, "twice"));
	px.prefixes[1] = IN4(0x0a000420);
	strcpy(px.eni_id, "eni-../1");
	assert_int_equal(ec2_req_prefixes(&f, true, &px, err, sizeof(err)),
	    -1);
	assert_non_null(strstr(err, "invalid ENI id"));
}

/* "Not sufficient free addresses or prefixes" means no room for the /28s
 * when prefixes were asked for, a full subnet when addresses were;
 * InsufficientCidrBlocks is always the former, no free address at all
 * always the latter. */
static void
test_classify_prefixes(void **state)
{
	static const char full[] = "There aren't sufficient free Ipv4 "
	    "addresses or prefixes";
	enum ec2_retry r;

	(void)state;
	assert_int_equal(ec2_classify(EC2_ASSIGN_IPS, true, 400,
	    "InsufficientCidrBlocks", "The specified subnet does not have "
	    "enough free cidr blocks", &r), CO_NO_PREFIX);
	assert_int_equal(r, EC2_RETRY_NO);
	assert_int_equal(ec2_classify(EC2_CREATE_ENI, false, 400,
	    "InsufficientCidrBlocks", "", &r), CO_NO_PREFIX);
	assert_int_equal(ec2_classify(EC2_ASSIGN_IPS, true, 400,
	    "InvalidParameterValue", full, &r), CO_NO_PREFIX);
	/* no address at all: full, whatever was asked */
	assert_int_equal(ec2_classify(EC2_CREATE_ENI, true, 400,
	    "InsufficientFreeAddressesInSubnet", "", &r), CO_SUBNET_FULL);
	assert_int_equal(ec2_classify(EC2_ASSIGN_IPS, false, 400,
	    "InvalidParameterValue", full, &r), CO_SUBNET_FULL);
	assert_int_equal(ec2_classify(EC2_CREATE_ENI, false, 400,
	    "InsufficientFreeAddressesInSubnet", "", &r), CO_SUBNET_FULL);
	/* the rest is as for addresses */
	assert_int_equal(ec2_classify(EC2_ASSIGN_IPS, true, 400,
	    "PrivateIpAddressLimitExceeded", "", &r), CO_LIMIT_EXCEEDED);
	assert_int_equal(ec2_classify(EC2_ASSIGN_IPS, true, 503,
	    "RequestLimitExceeded", "", &r), CO_THROTTLED);
	assert_int_equal(r, EC2_RETRY_ALWAYS);
	assert_string_equal(cloud_outcome_name(CO_NO_PREFIX), "no-prefix");
}

static void
test_check_instances_body(void **state)
{
	struct msg_cloud_check_instances m;
	struct ec2_form f;
	char err[256];
	uint32_t i;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.nids = 3;
	strcpy(m.ids[0], "i-0123456789abcdef0");
	strcpy(m.ids[1], "i-0a1b2c3d");		/* the old 8-digit form */
	strcpy(m.ids[2], "i-0123456789abcdef0");	/* twice: allowed */
	assert_int_equal(ec2_req_check_instances(&f, &m, NULL, err,
	    sizeof(err)), 0);
	/* A filter with one value per id, never InstanceId.N (one id that
	 * never existed would fail the whole call); bounded pages. */
	assert_string_equal(f.buf, "Action=DescribeInstances&Version="
	    "2016-11-15&Filter.1.Name=instance-id&"
	    "Filter.1.Value.1=i-0123456789abcdef0&Filter.1.Value.2=i-0a1b2c3d&"
	    "Filter.1.Value.3=i-0123456789abcdef0&MaxResults=5");
	ec2_form_free(&f);
	assert_int_equal(ec2_req_check_instances(&f, &m, "eyJ9+/=", err,
	    sizeof(err)), 0);
	assert_non_null(strstr(f.buf, "&MaxResults=5&NextToken=eyJ9%2B%2F%3D"));
	assert_null(strstr(f.buf, "InstanceId"));
	ec2_form_free(&f);

	/* all 32 fit the form */
	m.nids = MSG_MAX_INSTANCE_IDS;
	for (i = 0; i < m.nids; i++)
		snprintf(m.ids[i], sizeof(m.ids[i]), "i-%017x", i);
	assert_int_equal(ec2_req_check_instances(&f, &m, NULL, err,
	    sizeof(err)), 0);
	assert_non_null(strstr(f.buf, "&Filter.1.Value.32=i-0000000000000001f&"));
	ec2_form_free(&f);
}

static void
test_check_instances_refused(void **state)
{
	static const char *const bad[] = {
		"i-*",				/* a filter wildcard */
		"i-0123456?",
		"i-0123456",			/* 7 digits */
		"i-0123456789abcdef01",		/* 18 */
		"i-0123456789ABCDEF0",		/* EC2's are lower case */
		"i-0123456g",
		"x-0123456789abcdef0",
		"i-01234567 ",
		"i-01234567,i-89abcdef",
		"",
	};
	struct msg_cloud_check_instances m;
	struct ec2_form f;
	char err[256];
	size_t i;

	(void)state;
	memset(&m, 0, sizeof(m));
	assert_int_equal(ec2_req_check_instances(&f, &m, NULL, err,
	    sizeof(err)), -1);
	assert_string_equal(err, "check-instances: 0 instance ids (1 to 32)");
	m.nids = MSG_MAX_INSTANCE_IDS + 1;
	assert_int_equal(ec2_req_check_instances(&f, &m, NULL, err,
	    sizeof(err)), -1);
	m.nids = 2;
	strcpy(m.ids[0], "i-0123456789abcdef0");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		strcpy(m.ids[1], bad[i]);
		memset(&f, 0, sizeof(f));
		assert_false(ec2_instance_id_ok(bad[i]));
		assert_int_equal(ec2_req_check_instances(&f, &m, NULL, err,
		    sizeof(err)), -1);
		/* the error names which id, and quotes it */
		assert_non_null(strstr(err, "id 2, \""));
		assert_non_null(strstr(err, bad[i]));
		assert_null(f.buf);	/* nothing built to send */
	}
	assert_true(ec2_instance_id_ok("i-01234567"));
	assert_true(ec2_instance_id_ok("i-0123456789abcdef0"));
}

static void
test_classify(void **state)
{
	static const struct {
		enum ec2_action	act;
		unsigned	http;
		const char	*code, *msg;
		enum cloud_outcome out;
		enum ec2_retry	retry;
	} t[] = {
		{ EC2_MODIFY_ENI_ATTR, 503, "RequestLimitExceeded", "",
		  CO_THROTTLED, EC2_RETRY_ALWAYS },
		{ EC2_ATTACH_ENI, 500, "InternalError", "", CO_TRANSIENT,
		  EC2_RETRY_IDEMPOTENT },
		{ EC2_DESCRIBE_ENIS, 503, "Unavailable", "", CO_TRANSIENT,
		  EC2_RETRY_IDEMPOTENT },
		{ EC2_ATTACH_ENI, 400, "AttachmentLimitExceeded", "",
		  CO_LIMIT_EXCEEDED, EC2_RETRY_NO },
		{ EC2_ASSIGN_IPS, 400, "PrivateIpAddressLimitExceeded", "",
		  CO_LIMIT_EXCEEDED, EC2_RETRY_NO },
		{ EC2_CREATE_ENI, 400, "InsufficientFreeAddressesInSubnet", "",
		  CO_SUBNET_FULL, EC2_RETRY_NO },
		{ EC2_CREATE_ENI, 400, "InvalidParameterValue", "There aren't "
		  "sufficient free Ipv4 addresses or prefixes", CO_SUBNET_FULL,
		  EC2_RETRY_NO },
		{ EC2_DELETE_ENI, 400, "InvalidNetworkInterfaceID.NotFound", "",
		  CO_OK, EC2_RETRY_NO },
		{ EC2_ATTACH_ENI, 400, "InvalidNetworkInterfaceID.NotFound", "",
		  CO_NOT_FOUND, EC2_RETRY_NO },
		{ EC2_DETACH_ENI, 400, "InvalidAttachmentID.NotFound", "",
		  CO_NOT_FOUND, EC2_RETRY_NO },
		{ EC2_DELETE_ENI, 400, "InvalidParameterValue", "Network "
		  "interface 'eni-1' is currently in use.", CO_IN_USE,
		  EC2_RETRY_NO },
		{ EC2_DETACH_ENI, 400, "IncorrectState", "", CO_IN_USE,
		  EC2_RETRY_NO },
		{ EC2_CREATE_ENI, 403, "UnauthorizedOperation", "", CO_FATAL,
		  EC2_RETRY_NO },
		{ EC2_CREATE_ENI, 401, "AuthFailure", "", CO_FATAL,
		  EC2_RETRY_REAUTH },
		{ EC2_CREATE_ENI, 400, "RequestExpired", "", CO_FATAL,
		  EC2_RETRY_REAUTH },
		{ EC2_CREATE_ENI, 400, "InvalidParameterValue", "bad", CO_FATAL,
		  EC2_RETRY_NO },
		{ EC2_CHECK_INSTANCES, 503, "RequestLimitExceeded", "",
		  CO_THROTTLED, EC2_RETRY_ALWAYS },
	};
	enum ec2_retry r;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		assert_int_equal(ec2_classify(t[i].act, false, t[i].http, t[i].code,
		    t[i].msg, &r), t[i].out);
		assert_int_equal(r, t[i].retry);
	}
}

static void
test_checks(void **state)
{
	char s[] = "a\x01" "b\xc3\xa9";

	(void)state;
	assert_true(ec2_id_ok("eni-0a1B", "eni-"));
	assert_false(ec2_id_ok("eni-", "eni-"));
	assert_false(ec2_id_ok("eni-attach-1", "eni-"));
	assert_false(ec2_id_ok("eni-01234567890123456789012345678901234567890",
	    "eni-"));
	assert_true(ec2_name_ok("us-east-1a", 64));
	assert_false(ec2_name_ok("US-east", 64));
	assert_true(ec2_code_ok("InvalidNetworkInterfaceID.NotFound"));
	assert_false(ec2_code_ok("a b"));
	assert_true(ec2_request_id_ok("ea966190-f9aa"));
	assert_false(ec2_request_id_ok("<x>"));
	ec2_sanitize(s);
	assert_string_equal(s, "a?b??");
	assert_int_equal(ec2_eni_status("attaching"), ENI_ST_ATTACHING);
	assert_int_equal(ec2_eni_status("weird"), ENI_ST_UNKNOWN);
	/* the existence check is a describe: the describe bucket, and
	 * the API's own name */
	assert_false(ec2_action_mutating(EC2_CHECK_INSTANCES));
	assert_string_equal(ec2_action_name(EC2_CHECK_INSTANCES),
	    "DescribeInstances");
}

/* A type's limits: any from 1 to the absurd, enid's maxima no bound
 * (the broker caps them); 0, junk and the absurd refused. */
static void
test_type_limits(void **state)
{
	static const struct {
		const char *enis, *ips;
		int rc;
		uint32_t want_enis, want_ips;
	} t[] = {
		{ "4", "10", 0, 4, 10 },
		{ "15", "50", 0, 15, 50 },
		{ "4", "100", 0, 4, 100 },	/* past ENID_MAX_ENI_ADDRS */
		{ "4", "65", 0, 4, 65 },	/* 64 and the primary */
		{ "64", "50", 0, 64, 50 },
		{ "100", "50", 0, 100, 50 },	/* past ENID_MAX_ENIS */
		{ "1024", "1024", 0, 1024, 1024 },
		{ "0", "10", -1, 0, 0 },
		{ "4", "0", -1, 0, 0 },
		{ "1025", "10", -1, 0, 0 },
		{ "4", "1025", -1, 0, 0 },
		{ "4", "4294967295", -1, 0, 0 },
		{ "4", "99999999999", -1, 0, 0 },
		{ "", "10", -1, 0, 0 },
		{ "4", "-1", -1, 0, 0 },
		{ "4", "1e3", -1, 0, 0 },
	};
	struct ec2_instance_type ty;
	uint32_t enis, ips;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		memset(&ty, 0, sizeof(ty));
		snprintf(ty.max_enis, sizeof(ty.max_enis), "%s", t[i].enis);
		snprintf(ty.ipv4_per_eni, sizeof(ty.ipv4_per_eni), "%s",
		    t[i].ips);
		enis = ips = 0;
		assert_int_equal(ec2_type_limits(&ty, &enis, &ips), t[i].rc);
		assert_int_equal(enis, t[i].want_enis);
		assert_int_equal(ips, t[i].want_ips);
	}
}

static void
test_creds(void **state)
{
	struct cloud_creds c;
	char err[256], role[128];
	time_t t;
	const char *doc = "{\n  \"Code\" : \"Success\",\n  \"LastUpdated\" : "
	    "\"2024-05-01T11:00:00Z\",\n  \"Type\" : \"AWS-HMAC\",\n"
	    "  \"AccessKeyId\" : \"ASIAEXAMPLE\",\n  \"SecretAccessKey\" : "
	    "\"wJalr/K7MDENG+bPxRfiCY\",\n  \"Token\" : \"IQoJb3JpZ2luX2Vj==\",\n"
	    "  \"Expiration\" : \"2024-05-01T17:00:00Z\"\n}";

	(void)state;
	assert_int_equal(creds_parse_imds(doc, strlen(doc), &c, err,
	    sizeof(err)), 0);
	assert_string_equal(c.access_key_id, "ASIAEXAMPLE");
	assert_string_equal(c.session_token, "IQoJb3JpZ2luX2Vj==");
	assert_int_equal(c.expiration, 1714582800);
	assert_int_equal(creds_parse_imds("{\"Code\":\"Failed\"}", 17, &c, err,
	    sizeof(err)), -1);
	assert_int_equal(creds_parse_imds("{\"AccessKeyId\":\"a b\"}", 21, &c,
	    err, sizeof(err)), -1);
	assert_int_equal(creds_parse_imds("[1]", 3, &c, err, sizeof(err)), -1);
	assert_int_equal(creds_parse_imds("{} {}", 5, &c, err, sizeof(err)),
	    -1);

	assert_int_equal(iso8601_parse("2024-05-01T17:00:00.123Z", &t), 0);
	assert_int_equal(t, 1714582800);
	assert_int_equal(iso8601_parse("2024-05-01 17:00:00", &t), -1);
	assert_int_equal(iso8601_parse("2024-05-01T17:00:00+02:00", &t), -1);

	/* refresh at 60% of what is left, never sooner than a second */
	assert_int_equal(creds_refresh_in_ms(1000 + 3600, 1000), 2160000);
	assert_int_equal(creds_refresh_in_ms(1000, 1000), 1000);
	assert_int_equal(creds_refresh_in_ms(1001, 1000), 1000);

	assert_int_equal(imds_first_line("enid-role\nother\n", 16, role,
	    sizeof(role)), 0);
	assert_string_equal(role, "enid-role");
	assert_int_equal(imds_first_line("../x", 4, role, sizeof(role)), -1);
	assert_int_equal(imds_first_line("", 0, role, sizeof(role)), -1);
}

/*
 * The other IMDS answers, each taken whole.  A NUL inside an answer used
 * to end what the check saw, so that "tok\0junk" passed as the token
 * "tok" (found by fuzz-imds): the same for the region, a CIDR line, and a
 * credentials document's strings written "\u0000".
 */
/* A literal and its length, NULs included. */
#define LIT(s)	(s), sizeof(s) - 1

static void
test_imds_answers(void **state)
{
	struct ip_prefix cidrs[MSG_MAX_CIDRS];
	struct cloud_creds c;
	char out[256], err[256];
	uint32_t n;
	const char *nul_key = "{\"AccessKeyId\":\"AK\\u0000ID\",\"Secret"
	    "AccessKey\":\"s\",\"Token\":\"t\",\"Expiration\":"
	    "\"2024-05-01T17:00:00Z\"}";
	const char *nul_exp = "{\"AccessKeyId\":\"AKID\",\"Secret"
	    "AccessKey\":\"s\",\"Token\":\"t\",\"Expiration\":"
	    "\"2024-05-01T17:00:00Z\\u0000later\"}";
	const char *nul_code = "{\"Code\":\"Success\\u0000no\",\"AccessKey"
	    "Id\":\"AKID\",\"SecretAccessKey\":\"s\",\"Token\":\"t\","
	    "\"Expiration\":\"2024-05-01T17:00:00Z\"}";

	(void)state;
	assert_int_equal(imds_token(LIT("AQAE0Zjm=="), out, sizeof(out)), 0);
	assert_string_equal(out, "AQAE0Zjm==");
	assert_int_equal(imds_token(LIT(",\0\0"), out, sizeof(out)), -1);
	assert_int_equal(imds_token(LIT("a b"), out, sizeof(out)), -1);
	assert_int_equal(imds_token(NULL, 0, out, sizeof(out)), -1);

	assert_int_equal(imds_region(LIT("us-east-1"), out, 64), 0);
	assert_string_equal(out, "us-east-1");
	assert_int_equal(imds_region(LIT("3\0\2123\n\n"), out, 64), -1);
	assert_int_equal(imds_region(LIT("US-EAST-1"), out, 64), -1);

	assert_int_equal(imds_text(LIT("i-0123\r\n"), out, 64), 0);
	assert_string_equal(out, "i-0123");
	assert_int_equal(imds_text(LIT("i-01\x1b[2J"), out, 64), -1);

	assert_int_equal(imds_cidr_lines(LIT("10.0.0.0/16\n100.64.0.0/10\r\n"
	    "\n"), cidrs, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(cidrs[1].len, 10);
	assert_int_equal(imds_cidr_lines(LIT("10.0.0.0/16\n100.64.0.0/10\0\0"
	    "``\n"), cidrs, &n), -1);
	assert_int_equal(n, 0);
	assert_int_equal(imds_cidr_lines(LIT("10.0.0.0/16\nnot a cidr\n"),
	    cidrs, &n), -1);
	assert_int_equal(n, 0);

	assert_int_equal(creds_parse_imds(nul_key, strlen(nul_key), &c, err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "AccessKeyId"));
	assert_int_equal(creds_parse_imds(nul_exp, strlen(nul_exp), &c, err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "Expiration"));
	assert_int_equal(creds_parse_imds(nul_code, strlen(nul_code), &c, err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "Code"));
	assert_int_equal(c.access_key_id[0], '\0');
}

/* Every byte value, as a value and as a key: RFC 3986's unreserved
 * characters pass, everything else is %XX in upper case ('+' included,
 * which a form decoder would read as a space; ' ' is %20, never '+'). */
static void
test_form_every_byte(void **state)
{
	static const char hex[] = "0123456789ABCDEF";
	struct ec2_form f;
	char value[2], want[64];
	const char *body;
	int c;

	(void)state;
	for (c = 1; c < 256; c++) {
		bool unreserved = (c >= 'A' && c <= 'Z') ||
		    (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.' || c == '~';
		char enc[4];

		if (unreserved)
			snprintf(enc, sizeof(enc), "%c", c);
		else
			snprintf(enc, sizeof(enc), "%%%c%c", hex[c >> 4],
			    hex[c & 15]);
		value[0] = (char)c;
		value[1] = '\0';
		ec2_form_init(&f, EC2_DELETE_ENI);
		ec2_form_add(&f, "V", value);
		ec2_form_add(&f, value, "k");
		assert_false(f.failed);
		body = f.buf + strlen("Action=DeleteNetworkInterface&"
		    "Version=2016-11-15");
		snprintf(want, sizeof(want), "&V=%s&%s=k", enc, enc);
		if (strcmp(body, want) != 0)
			fail_msg("byte 0x%02x: got \"%s\", wanted \"%s\"", c,
			    body, want);
		ec2_form_free(&f);
	}
	ec2_form_init(&f, EC2_DELETE_ENI);
	ec2_form_add(&f, "Description", "a+b c");
	assert_non_null(strstr(f.buf, "&Description=a%2Bb%20c"));
	assert_null(strchr(f.buf, '+'));
	ec2_form_free(&f);
}

/* The body's cap (64 KiB): a byte is appended while there is room for an
 * encoded byte and the NUL, never past the buffer; over it, the body is
 * refused as a whole. */
static void
test_form_cap(void **state)
{
	struct ec2_form f;
	size_t head, n;
	char *v;

	(void)state;
	ec2_form_init(&f, EC2_DELETE_ENI);
	head = f.len + strlen("&k=");
	ec2_form_free(&f);
	v = malloc(65536 + 1);
	assert_non_null(v);
	for (n = 65536 - head - 8; n <= 65536 - head + 2; n++) {
		memset(v, 'x', n);
		v[n] = '\0';
		ec2_form_init(&f, EC2_DELETE_ENI);
		ec2_form_add(&f, "k", v);
		if (head + n <= 65536 - 3) {
			assert_false(f.failed);
			assert_int_equal(f.len, head + n);
			assert_int_equal(strlen(f.buf), head + n);
		} else {
			assert_true(f.failed);
			assert_true(f.len < f.cap);
		}
		ec2_form_free(&f);
	}
	/* encoded: the last %XX may end at the last byte before the NUL */
	n = (65536 - 1 - head) / 3;
	memset(v, ' ', n);
	v[n] = '\0';
	ec2_form_init(&f, EC2_DELETE_ENI);
	ec2_form_add(&f, "k", v);
	assert_false(f.failed);
	assert_int_equal(f.len, head + 3 * n);
	ec2_form_free(&f);
	free(v);
}

/* Field checks at the edges of their sizes and character sets. */
static void
test_check_edges(void **state)
{
	char id[MSG_ID_LEN + 8], code[MSG_CODE_LEN + 1], tag[MSG_TAG_VAL_LEN + 1];
	uint32_t v;
	int c;

	(void)state;
	/* an id: its prefix, then 1..40 letters and digits */
	memset(id, 0, sizeof(id));
	strcpy(id, "eni-");
	memset(id + 4, 'f', 40);
	assert_true(ec2_id_ok(id, "eni-"));
	id[44] = 'f';
	assert_false(ec2_id_ok(id, "eni-"));
	memset(id, 0, sizeof(id));
	strcpy(id, "eni-attach-");
	memset(id + 11, '0', 40);
	assert_true(ec2_id_ok(id, "eni-attach-"));
	assert_true(ec2_id_ok("i-0", "i-"));
	for (c = 1; c < 256; c++) {
		char one[8] = "sg-";

		one[3] = (char)c;
		assert_int_equal(ec2_id_ok(one, "sg-"),
		    (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
		    (c >= 'A' && c <= 'Z'));
	}
	/* names: [a-z0-9.-], shorter than max */
	assert_true(ec2_name_ok("a", 2));
	assert_false(ec2_name_ok("ab", 2));
	assert_false(ec2_name_ok("", 64));
	assert_true(ec2_name_ok("m5.x-1", 64));
	assert_false(ec2_name_ok("m5_x", 64));
	/* codes: up to MSG_CODE_LEN - 1 */
	memset(code, 'A', sizeof(code));
	code[MSG_CODE_LEN - 1] = '\0';
	assert_true(ec2_code_ok(code));
	code[MSG_CODE_LEN - 1] = 'A';
	code[MSG_CODE_LEN] = '\0';
	assert_false(ec2_code_ok(code));
	assert_false(ec2_code_ok(""));
	assert_false(ec2_code_ok("A-B"));
	/* request ids: may be absent, shorter than MSG_ID_LEN */
	assert_true(ec2_request_id_ok(""));
	memset(id, 'a', sizeof(id));
	id[MSG_ID_LEN - 1] = '\0';
	assert_true(ec2_request_id_ok(id));
	id[MSG_ID_LEN - 1] = 'a';
	id[MSG_ID_LEN] = '\0';
	assert_false(ec2_request_id_ok(id));
	/* tag text: no C0 control, no DEL; shorter than max */
	for (c = 1; c < 256; c++) {
		char one[2] = { (char)c, '\0' };

		assert_int_equal(ec2_tag_text_ok(one, 8),
		    c >= 0x20 && c != 0x7f);
	}
	memset(tag, 'v', sizeof(tag));
	tag[MSG_TAG_VAL_LEN - 1] = '\0';
	assert_true(ec2_tag_text_ok(tag, MSG_TAG_VAL_LEN));
	tag[MSG_TAG_VAL_LEN - 1] = 'v';
	tag[MSG_TAG_VAL_LEN] = '\0';
	assert_false(ec2_tag_text_ok(tag, MSG_TAG_VAL_LEN));
	/* decimal: at most 10 digits, at most max */
	assert_int_equal(ec2_uint("4294967295", UINT32_MAX, &v), 0);
	assert_int_equal(v, UINT32_MAX);
	assert_int_equal(ec2_uint("4294967296", UINT32_MAX, &v), -1);
	assert_int_equal(ec2_uint("00000000001", UINT32_MAX, &v), -1);
	assert_int_equal(ec2_uint("0000000001", UINT32_MAX, &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(ec2_uint("1024", 1024, &v), 0);
	assert_int_equal(ec2_uint("1025", 1024, &v), -1);
	assert_int_equal(ec2_uint("0", 0, &v), 0);
	assert_int_equal(ec2_uint("", 10, &v), -1);
	assert_int_equal(ec2_uint("-1", 10, &v), -1);
	assert_int_equal(ec2_uint("1 ", 10, &v), -1);
	/* sanitize: printable ASCII stays, the rest is '?' */
	for (c = 1; c < 256; c++) {
		char one[2] = { (char)c, '\0' };

		ec2_sanitize(one);
		assert_int_equal((unsigned char)one[0],
		    c >= 0x20 && c <= 0x7e ? c : '?');
	}
}

/* Each request's ranges at both edges. */
static void
test_request_edges(void **state)
{
	struct msg_cloud_create_eni m;
	struct msg_cloud_attach at;
	struct msg_cloud_ips ip;
	struct ec2_form f;
	char err[256];
	size_t i;

	(void)state;
	memset(&m, 0, sizeof(m));
	strcpy(m.subnet_id, "subnet-1");
	m.nsgs = 1;
	strcpy(m.sgs[0], "sg-1");
	strcpy(m.client_token, "t");
	/* as many as enid holds on an ENI: past EC2's 49 for a larger
	 * type (enid.conf(5): used up to enid's limits) */
	m.nsecondary = MSG_MAX_ENI_ADDRS;
	assert_int_equal(ec2_req_create_eni(&f, &m, err, sizeof(err)), 0);
	assert_non_null(strstr(f.buf, "&SecondaryPrivateIpAddressCount=64&"));
	ec2_form_free(&f);
	m.nsecondary = MSG_MAX_ENI_ADDRS + 1;
	assert_int_equal(ec2_req_create_eni(&f, &m, err, sizeof(err)), -1);
	assert_string_equal(err, "create-eni: 65 secondary addresses (at most "
	    "64)");
	m.nsecondary = 0;
	assert_int_equal(ec2_req_create_eni(&f, &m, err, sizeof(err)), 0);
	assert_null(strstr(f.buf, "SecondaryPrivateIpAddressCount"));
	ec2_form_free(&f);
	m.nsgs = 0;
	assert_int_equal(ec2_req_create_eni(&f, &m, err, sizeof(err)), -1);
	assert_string_equal(err, "create-eni: no security group");
	m.nsgs = 1;
	/* client token: printable ASCII, up to MSG_TOKEN_LEN - 1 */
	memset(m.client_token, '~', MSG_TOKEN_LEN - 1);
	m.client_token[MSG_TOKEN_LEN - 1] = '\0';
	assert_int_equal(ec2_req_create_eni(&f, &m, err, sizeof(err)), 0);
	ec2_form_free(&f);
	m.client_token[0] = 0x7f;
	assert_int_equal(ec2_req_create_eni(&f, &m, err, sizeof(err)), -1);
	m.client_token[0] = (char)0x80;
	assert_int_equal(ec2_req_create_eni(&f, &m, err, sizeof(err)), -1);
	assert_string_equal(err, "create-eni: client token not ASCII");
	strcpy(m.client_token, "t");
	/* tags: "aws:" is the cloud's, "aws" alone is not */
	m.ntags = 1;
	strcpy(m.tags[0].key, "aws");
	assert_int_equal(ec2_req_create_eni(&f, &m, err, sizeof(err)), 0);
	ec2_form_free(&f);
	strcpy(m.tags[0].key, "aws:x");
	assert_int_equal(ec2_req_create_eni(&f, &m, err, sizeof(err)), -1);
	assert_string_equal(err, "tag key \"aws:x\" is reserved by the cloud");
	strcpy(m.tags[0].key, "k\x1f");
	assert_int_equal(ec2_req_create_eni(&f, &m, err, sizeof(err)), -1);
	m.tags[0].key[0] = '\0';
	assert_int_equal(ec2_req_create_eni(&f, &m, err, sizeof(err)), -1);

	/* attach: device index 1..100 */
	memset(&at, 0, sizeof(at));
	strcpy(at.eni_id, "eni-1");
	for (i = 0; i <= 101; i += (i == 1 ? 99 : 1)) {
		at.device_index = (uint32_t)i;
		if (i >= 1 && i <= 100) {
			assert_int_equal(ec2_req_attach(&f, &at, "i-1", err,
			    sizeof(err)), 0);
			ec2_form_free(&f);
		} else {
			assert_int_equal(ec2_req_attach(&f, &at, "i-1", err,
			    sizeof(err)), -1);
		}
	}

	/* assign by count: 1..MSG_MAX_ENI_ADDRS; addresses: not 0, not
	 * the broadcast */
	memset(&ip, 0, sizeof(ip));
	ip.family = AF_INET;
	strcpy(ip.eni_id, "eni-1");
	ip.count = MSG_MAX_ENI_ADDRS;
	assert_int_equal(ec2_req_ips(&f, true, &ip, err, sizeof(err)), 0);
	assert_non_null(strstr(f.buf, "&SecondaryPrivateIpAddressCount=64"));
	ec2_form_free(&f);
	ip.count = 0;
	assert_int_equal(ec2_req_ips(&f, true, &ip, err, sizeof(err)), -1);
	assert_string_equal(err, "assign-ips: count 0 out of 1-64");
	ip.count = MSG_MAX_ENI_ADDRS + 1;
	assert_int_equal(ec2_req_ips(&f, true, &ip, err, sizeof(err)), -1);
	assert_string_equal(err, "assign-ips: count 65 out of 1-64");
	ip.naddrs = 1;
	ip.count = 0;
	ip.addrs[0] = ip_addr_from_in(0);
	assert_int_equal(ec2_req_ips(&f, true, &ip, err, sizeof(err)), -1);
	assert_string_equal(err, "assign-ips: invalid address in the list");
	ip.addrs[0] = ip_addr_from_in(0xffffffffu);
	assert_int_equal(ec2_req_ips(&f, false, &ip, err, sizeof(err)), -1);
	ip.addrs[0] = IN4(0xfffffffe);
	assert_int_equal(ec2_req_ips(&f, false, &ip, err, sizeof(err)), 0);
	assert_non_null(strstr(f.buf, "PrivateIpAddress.1=255.255.255.254"));
	ec2_form_free(&f);
}

/* The status edge between a client error and a transient one. */
static void
test_classify_edges(void **state)
{
	enum ec2_retry r;

	(void)state;
	assert_int_equal(ec2_classify(EC2_ATTACH_ENI, false, 499, "Odd", "", &r),
	    CO_FATAL);
	assert_int_equal(r, EC2_RETRY_NO);
	assert_int_equal(ec2_classify(EC2_ATTACH_ENI, false, 500, "Odd", "", &r),
	    CO_TRANSIENT);
	assert_int_equal(r, EC2_RETRY_IDEMPOTENT);
	/* ".NotFound" must end the code */
	assert_int_equal(ec2_classify(EC2_ATTACH_ENI, false, 400, "X.NotFoundY", "",
	    &r), CO_FATAL);
	assert_int_equal(ec2_classify(EC2_ATTACH_ENI, false, 400, ".NotFound", "",
	    &r), CO_NOT_FOUND);
}

/* ---- IPv6 (issue 35) ---- */

static struct ip_addr
A6(const char *text)
{
	struct ip_addr a;

	assert_int_equal(ip_addr_parse(text, &a, NULL), 0);
	return a;
}

/* AssignIpv6Addresses and UnassignIpv6Addresses: their wire names, by
 * count or by list; never for a request of family AF_INET, whose body
 * is what it always was; a family of 0, or an address of the other
 * family, refused before anything is sent. */
static void
test_ipv6_bodies(void **state)
{
	struct msg_cloud_ips ip;
	struct msg_cloud_prefixes px;
	struct ec2_form f;
	char err[256];

	(void)state;
	memset(&ip, 0, sizeof(ip));
	strcpy(ip.eni_id, "eni-1");
	ip.count = 2;
	assert_int_equal(ec2_req_ips(&f, true, &ip, err, sizeof(err)), -1);
	assert_string_equal(err, "assign-ips: address family 0 is neither "
	    "IPv4 nor IPv6");
	ip.family = AF_INET;
	assert_int_equal(ec2_req_ips(&f, true, &ip, err, sizeof(err)), 0);
	assert_string_equal(f.buf, "Action=AssignPrivateIpAddresses&Version="
	    "2016-11-15&NetworkInterfaceId=eni-1&"
	    "SecondaryPrivateIpAddressCount=2");
	assert_false(f.ipv6);
	ec2_form_free(&f);
	ip.family = AF_INET6;
	assert_int_equal(ec2_req_ips(&f, true, &ip, err, sizeof(err)), 0);
	assert_string_equal(f.buf, "Action=AssignIpv6Addresses&Version="
	    "2016-11-15&NetworkInterfaceId=eni-1&Ipv6AddressCount=2");
	assert_true(f.ipv6);
	assert_false(f.prefixes);
	ec2_form_free(&f);
	ip.count = 0;
	ip.naddrs = 2;
	ip.addrs[0] = A6("2600:1f14::5");
	ip.addrs[1] = A6("2600:1f14::6");
	assert_int_equal(ec2_req_ips(&f, true, &ip, err, sizeof(err)), 0);
	assert_string_equal(f.buf, "Action=AssignIpv6Addresses&Version="
	    "2016-11-15&NetworkInterfaceId=eni-1&Ipv6Addresses.1=2600%3A1f14%3A"
	    "%3A5&Ipv6Addresses.2=2600%3A1f14%3A%3A6");
	ec2_form_free(&f);
	assert_int_equal(ec2_req_ips(&f, false, &ip, err, sizeof(err)), 0);
	assert_string_equal(f.buf, "Action=UnassignIpv6Addresses&Version="
	    "2016-11-15&NetworkInterfaceId=eni-1&Ipv6Addresses.1=2600%3A1f14%3A"
	    "%3A5&Ipv6Addresses.2=2600%3A1f14%3A%3A6");
	ec2_form_free(&f);
	/* an IPv6 address in an IPv4 request, and the other way round */
	ip.family = AF_INET;
	assert_int_equal(ec2_req_ips(&f, false, &ip, err, sizeof(err)), -1);
	ip.family = AF_INET6;
	ip.addrs[1] = IN4(0x0a000009);
	assert_int_equal(ec2_req_ips(&f, false, &ip, err, sizeof(err)), -1);
	assert_string_equal(err, "unassign-ipv6: entry 2 is not a usable IPv6 "
	    "address");
	ip.addrs[1] = A6("fe80::6");
	assert_int_equal(ec2_req_ips(&f, false, &ip, err, sizeof(err)), -1);
	ip.addrs[1] = ip.addrs[0];
	assert_int_equal(ec2_req_ips(&f, false, &ip, err, sizeof(err)), -1);
	assert_string_equal(err, "unassign-ipv6: 2600:1f14::5 is listed "
	    "twice");
	ip.naddrs = 1;
	ip.count = 1;
	assert_int_equal(ec2_req_ips(&f, true, &ip, err, sizeof(err)), -1);
	assert_string_equal(err, "assign-ipv6: both a count and addresses");

	/* /80 prefixes */
	memset(&px, 0, sizeof(px));
	strcpy(px.eni_id, "eni-1");
	px.count = 1;
	assert_int_equal(ec2_req_prefixes(&f, true, &px, err, sizeof(err)),
	    -1);
	px.family = AF_INET;
	assert_int_equal(ec2_req_prefixes(&f, true, &px, err, sizeof(err)),
	    0);
	assert_null(strstr(f.buf, "Ipv6"));
	ec2_form_free(&f);
	px.family = AF_INET6;
	assert_int_equal(ec2_req_prefixes(&f, true, &px, err, sizeof(err)),
	    0);
	assert_string_equal(f.buf, "Action=AssignIpv6Addresses&Version="
	    "2016-11-15&NetworkInterfaceId=eni-1&Ipv6PrefixCount=1");
	assert_true(f.ipv6 && f.prefixes);
	ec2_form_free(&f);
	px.count = 0;
	px.nprefixes = 1;
	px.prefixes[0] = A6("2600:1f14:0:0:7::");
	assert_int_equal(ec2_req_prefixes(&f, false, &px, err, sizeof(err)),
	    0);
	assert_string_equal(f.buf, "Action=UnassignIpv6Addresses&Version="
	    "2016-11-15&NetworkInterfaceId=eni-1&Ipv6Prefix.1=2600%3A1f14%3A"
	    "0%3A0%3A7%3A%3A%2F80");
	ec2_form_free(&f);
	px.prefixes[0] = A6("2600:1f14::7:0:0:1");	/* not aligned */
	assert_int_equal(ec2_req_prefixes(&f, false, &px, err, sizeof(err)),
	    -1);
	assert_string_equal(err, "unassign-ipv6-prefixes: entry 1 is not a "
	    "usable IPv6 /80");
	px.prefixes[0] = A6("fd00:ec2::");		/* EC2's services */
	assert_int_equal(ec2_req_prefixes(&f, false, &px, err, sizeof(err)),
	    -1);
	px.prefixes[0] = IN4(0x0a000410);
	assert_int_equal(ec2_req_prefixes(&f, false, &px, err, sizeof(err)),
	    -1);
	px.family = AF_INET;
	assert_int_equal(ec2_req_prefixes(&f, false, &px, err, sizeof(err)),
	    0);
	assert_null(strstr(f.buf, "Ipv6"));
	ec2_form_free(&f);
}

/* Create with one IPv6 address; without, the very body of before; never
 * with prefixes. */
static void
test_create_eni_ipv6(void **state)
{
	struct msg_cloud_create_eni m;
	struct ec2_form f;
	char err[256];

	(void)state;
	memset(&m, 0, sizeof(m));
	strcpy(m.subnet_id, "subnet-1");
	m.nsgs = 1;
	strcpy(m.sgs[0], "sg-1");
	strcpy(m.client_token, "t");
	m.nsecondary = 3;
	assert_int_equal(ec2_req_create_eni(&f, &m, err, sizeof(err)), 0);
	assert_string_equal(f.buf, "Action=CreateNetworkInterface&Version="
	    "2016-11-15&SubnetId=subnet-1&SecurityGroupId.1=sg-1&"
	    "SecondaryPrivateIpAddressCount=3&ClientToken=t");
	assert_false(f.ipv6);
	ec2_form_free(&f);
	m.nipv6 = 1;
	assert_int_equal(ec2_req_create_eni(&f, &m, err, sizeof(err)), 0);
	assert_string_equal(f.buf, "Action=CreateNetworkInterface&Version="
	    "2016-11-15&SubnetId=subnet-1&SecurityGroupId.1=sg-1&"
	    "SecondaryPrivateIpAddressCount=3&Ipv6AddressCount=1&"
	    "ClientToken=t");
	assert_true(f.ipv6);
	ec2_form_free(&f);
	m.nipv6 = 2;
	assert_int_equal(ec2_req_create_eni(&f, &m, err, sizeof(err)), -1);
	assert_string_equal(err, "create-eni: 2 IPv6 addresses (0 or 1)");
	m.nipv6 = 1;
	m.nsecondary = 0;
	m.nprefixes = 1;
	assert_int_equal(ec2_req_create_eni(&f, &m, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "both prefixes and an IPv6 address"));
}

/* The rule for IPv6 requests: a code enid does not know is fatal and not
 * retried, whatever the HTTP status; the messages' wording decides
 * nothing; known codes keep their classes. */
static void
test_classify_ipv6(void **state)
{
	enum ec2_retry r;
	bool known;

	(void)state;
	assert_int_equal(ec2_classify_ipv6(EC2_ASSIGN_IPV6, false, 400,
	    "Ipv6AddressLimitExceeded", "too many", &r, &known), CO_FATAL);
	assert_false(known);
	assert_int_equal(r, EC2_RETRY_NO);
	/* the IPv4 rule would take a 5xx for transient */
	assert_int_equal(ec2_classify(EC2_ASSIGN_IPV6, false, 503, "Odd", "",
	    &r), CO_TRANSIENT);
	assert_int_equal(ec2_classify_ipv6(EC2_ASSIGN_IPV6, false, 503, "Odd",
	    "", &r, &known), CO_FATAL);
	assert_false(known);
	assert_int_equal(r, EC2_RETRY_NO);
	assert_int_equal(ec2_classify_ipv6(EC2_UNASSIGN_IPV6, false, 400,
	    "Unknown", "address in use", &r, &known), CO_FATAL);
	assert_false(known);
	/* known ones as ever */
	assert_int_equal(ec2_classify_ipv6(EC2_ASSIGN_IPV6, false, 503,
	    "RequestLimitExceeded", "", &r, &known), CO_THROTTLED);
	assert_true(known);
	assert_int_equal(r, EC2_RETRY_ALWAYS);
	assert_int_equal(ec2_classify_ipv6(EC2_ASSIGN_IPV6, false, 500,
	    "InternalError", "", &r, &known), CO_TRANSIENT);
	assert_int_equal(r, EC2_RETRY_IDEMPOTENT);
	assert_int_equal(ec2_classify_ipv6(EC2_ASSIGN_IPV6, true, 400,
	    "InsufficientCidrBlocks", "", &r, &known), CO_NO_PREFIX);
	assert_int_equal(ec2_classify_ipv6(EC2_ASSIGN_IPV6, false, 400,
	    "PrivateIpAddressLimitExceeded", "", &r, &known),
	    CO_LIMIT_EXCEEDED);
	assert_int_equal(ec2_classify_ipv6(EC2_UNASSIGN_IPV6, false, 400,
	    "InvalidNetworkInterfaceID.NotFound", "", &r, &known),
	    CO_NOT_FOUND);
	assert_true(known);
	/* no guess from a message: known code, fatal */
	assert_int_equal(ec2_classify_ipv6(EC2_ASSIGN_IPV6, false, 400,
	    "InvalidParameterValue", "There aren't sufficient free Ipv6 "
	    "addresses", &r, &known), CO_FATAL);
	assert_true(known);
	assert_int_equal(ec2_classify_ipv6(EC2_ASSIGN_IPV6, false, 400,
	    "AuthFailure", "", &r, &known), CO_FATAL);
	assert_int_equal(r, EC2_RETRY_REAUTH);
}

/* IMDS's IPv6 lines: each checked, a bad one left out and named, never
 * the answer's failure (an IPv4 node must start whatever they say). */
static void
test_imds_ipv6(void **state)
{
	struct ip_prefix c[4];
	struct ip_addr a;
	char bad[160], text[IP_PREFIX_STR_LEN];
	const char *why;
	uint32_t n, nbad;

	(void)state;
	assert_int_equal(imds_cidr6_lines(LIT("2600:1f14:abc:de00::/56\n"
	    "2600:1f15::/56\r\n\n"), 32, 64, c, 4, &n, &nbad, bad,
	    sizeof(bad)), 0);
	assert_int_equal(n, 2);
	assert_int_equal(nbad, 0);
	ip_prefix_format(&c[1], text);
	assert_string_equal(text, "2600:1f15::/56");
	/* a /16, link-local, IPv4, host bits, past max: left out */
	assert_int_equal(imds_cidr6_lines(LIT("2600::/16\nfe80::/64\n"
	    "10.0.0.0/16\n2600:1f14::1/56\n2600:1f16::/56\n2600:1f17::/56\n"
	    "2600:1f18::/56\n"), 32, 64, c, 2, &n, &nbad, bad, sizeof(bad)),
	    0);
	assert_int_equal(n, 2);
	assert_int_equal(nbad, 5);
	assert_string_equal(bad, "\"2600::/16\": a prefix of another length");
	/* none, and not text */
	assert_int_equal(imds_cidr6_lines(NULL, 0, 64, 64, c, 1, &n, &nbad,
	    bad, sizeof(bad)), 0);
	assert_int_equal(n, 0);
	assert_int_equal(imds_cidr6_lines(LIT("2600:1f14::/64\0x\n"), 64, 64,
	    c, 1, &n, &nbad, bad, sizeof(bad)), -1);
	assert_int_equal(n, 0);

	assert_int_equal(imds_ip6_first(LIT("2600:1f14::10\n2600:1f14::11\n"),
	    &a, bad, sizeof(bad), &why), 0);
	assert_true(ip_addr_eq(&a, &(struct ip_addr){ 0 }) == false);
	ip_addr_format(&a, text);
	assert_string_equal(text, "2600:1f14::10");
	assert_int_equal(imds_ip6_first(LIT("fe80::10\n"), &a, bad,
	    sizeof(bad), &why), -1);
	assert_string_equal(bad, "fe80::10");
	assert_string_equal(why, "link-local");
	assert_int_equal(a.family, 0);
	assert_int_equal(imds_ip6_first(LIT("\n"), &a, bad, sizeof(bad),
	    &why), -1);
	assert_null(why);
	assert_int_equal(imds_ip6_first(LIT("::ffff:a00:1"), &a, bad,
	    sizeof(bad), &why), -1);
	assert_int_equal(imds_ip6_first(LIT("2600:1f14::10\x1b[2J"), &a, bad,
	    sizeof(bad), &why), -1);
	assert_string_equal(bad, "2600:1f14::10?[2J");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_form_encoding),
		cmocka_unit_test(test_create_eni_body),
		cmocka_unit_test(test_other_bodies),
		cmocka_unit_test(test_prefix_bodies),
		cmocka_unit_test(test_classify_prefixes),
		cmocka_unit_test(test_check_instances_body),
		cmocka_unit_test(test_check_instances_refused),
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_checks),
		cmocka_unit_test(test_type_limits),
		cmocka_unit_test(test_creds),
		cmocka_unit_test(test_imds_answers),
		cmocka_unit_test(test_form_every_byte),
		cmocka_unit_test(test_form_cap),
		cmocka_unit_test(test_check_edges),
		cmocka_unit_test(test_request_edges),
		cmocka_unit_test(test_classify_edges),
		cmocka_unit_test(test_ipv6_bodies),
		cmocka_unit_test(test_create_eni_ipv6),
		cmocka_unit_test(test_classify_ipv6),
		cmocka_unit_test(test_imds_ipv6),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
