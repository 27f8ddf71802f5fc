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
#include <stdio.h>
#include <string.h>

#include "creds.h"
#include "ec2.h"

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
	strcpy(ip.eni_id, "eni-1");
	assert_int_equal(ec2_req_ips(&f, true, &ip, err, sizeof(err)), -1);
	ip.count = 2;
	assert_int_equal(ec2_req_ips(&f, true, &ip, err, sizeof(err)), 0);
	assert_non_null(strstr(f.buf, "SecondaryPrivateIpAddressCount=2"));
	ec2_form_free(&f);
	ip.naddrs = 1;
	ip.addrs[0] = htonl(0x0a000009);
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
		  EC2_RETRY_NO },
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
		assert_int_equal(ec2_classify(t[i].act, t[i].http, t[i].code,
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_form_encoding),
		cmocka_unit_test(test_create_eni_body),
		cmocka_unit_test(test_other_bodies),
		cmocka_unit_test(test_check_instances_body),
		cmocka_unit_test(test_check_instances_refused),
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_checks),
		cmocka_unit_test(test_creds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
