/*
 * enid's configuration: one JSON file (enid.conf(5) documents every key).
 * Parsing is pure (text in, struct out) so the unit tests reach every error;
 * an error names the key and the reason.  Unknown keys are errors.
 */
#ifndef ENID_CONF_H
#define ENID_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr.h"
#include "maxima.h"

#define ENID_CONF_PATH		"/etc/enid/enid.conf"
#define ENID_RUNTIME_DIR	"/run/enid"
#define ENID_STATE_DIR		"/var/lib/enid"
#define ENID_USER		"enid"
#define ENID_IMDS_ENDPOINT	"http://169.254.169.254"
#define ENID_CONF_MAX_BYTES	(1024 * 1024)

#define CONF_STR_LEN		256
#define CONF_PATH_LEN		4096
#define CONF_MAX_SUBNETS	16
#define CONF_MAX_SGS		8
#define CONF_ID_LEN		64
/* netd's table range is [table_base, table_base + CONF_TABLE_SPAN). */
#define CONF_TABLE_SPAN		64

struct conf_rate {
	uint32_t	capacity;	/* bucket size, calls */
	uint32_t	refill_per_s;	/* tokens per second */
};

#define CONF_MAX_SNAT_EXCLUDE	ENID_MAX_SNAT_EXCLUDE
/* routing.pod_veth_prefix: enid-cni's veth_prefix (CNI_PREFIX_MAX). */
#define CONF_VETH_PREFIX_MAX	7
#define CONF_VETH_PREFIX_DEFAULT "enid"
/* The connection mark's default bit (routing.connmark), as aws-vpc-cni's. */
#define CONF_CONNMARK_DEFAULT	0x80

struct conf_subnet {
	char		id[CONF_ID_LEN];
	uint32_t	nsgs;
	char		sgs[CONF_MAX_SGS][CONF_ID_LEN];
};

struct enid_config {
	char		user[CONF_STR_LEN];
	char		admin_group[CONF_STR_LEN];	/* "" : root only */
	char		runtime_dir[CONF_PATH_LEN];
	char		state_dir[CONF_PATH_LEN];
	int		log_level;			/* enum log_level */
	char		cluster_name[CONF_STR_LEN];
	/* The families pods get an address of (enum ip_family). */
	int		ip_family;

	struct {
		char		provider[CONF_STR_LEN];
		char		region[CONF_STR_LEN];	/* "": from IMDS */
		char		ec2_endpoint[CONF_STR_LEN]; /* "": regional */
		char		imds_endpoint[CONF_STR_LEN];
		bool		allow_http;
		char		ca_file[CONF_PATH_LEN];
		char		access_key_id[CONF_STR_LEN];
		char		secret_access_key[CONF_STR_LEN];
		char		session_token[2048];
		uint32_t	timeout_ms;		/* one HTTP call */
		uint32_t	imds_timeout_ms;	/* an IMDS call's first */
		bool		rate_enabled;	/* false: no client limit */
		struct conf_rate rate_mutating;
		struct conf_rate rate_describe;
		struct {
			uint32_t	base_ms;	/* first retry's ceiling */
			uint32_t	cap_ms;
			bool		jitter;		/* full; else fixed */
			uint32_t	max_attempts;
		}		retry;
	}		cloud;

	struct {
		uint32_t	warm_ip_target;
		uint32_t	minimum_ip_target;
		uint32_t	warm_eni_target;
		uint32_t	max_pods;		/* 0: from the cloud */
		uint32_t	max_enis;		/* 0: from the cloud */
		uint32_t	ip_cooldown_s;
		uint32_t	add_timeout_s;
		uint32_t	shrink_delay_s;	/* surplus lasts, then shrink */
		uint32_t	subnet_backoff_s; /* an exhausted subnet rests */
		uint32_t	link_timeout_s;	/* an ENI's link must appear */
		/* EC2 prefix delegation: /28 prefixes as the pool's unit */
		bool		prefix_delegation;
		uint32_t	warm_prefix_target;	/* free prefixes */
		uint32_t	prefix_backoff_s; /* a subnet refused a /28 */
		uint32_t	prefix_freeze_s; /* a frozen prefix drains */
	}		pool;

	uint32_t	nsubnets;
	struct conf_subnet subnets[CONF_MAX_SUBNETS];

	struct {
		uint32_t	table_base;
		uint32_t	rule_priority_to;
		uint32_t	rule_priority_from;
		/* The one bit of the packet and connection marks netd uses:
		 * a connection that arrived on the primary link keeps its
		 * replies there ("fwmark M/M lookup main"). */
		uint32_t	connmark;
		/* The name prefix of pods' host veths, as the CNI
		 * conflist's veth_prefix (enid-cni's default "enid"):
		 * netd's IPv6 source check holds links so named to their
		 * pods' addresses.  1 to 7 of a-z 0-9. */
		char		pod_veth_prefix[CONF_VETH_PREFIX_MAX + 1];
	}		routing;

	/* Pods' traffic beyond the VPC translated to the node's primary
	 * address on the primary link (netd's nftables table). */
	struct {
		bool		enabled;
		bool		random_fully;
		uint32_t	nexclude;	/* beyond the VPC's CIDRs */
		/* IPv4 networks (host bits clear), none 0/0 */
		struct ip_prefix exclude[CONF_MAX_SNAT_EXCLUDE];
	}		snat;

	uint32_t	reconcile_interval_s;
	struct {
		bool		enabled;
		uint32_t	grace_s;
	}		leak_gc;

	/* "": none; else a path ending ".prom" for the node exporter's
	 * textfile collector */
	char		metrics_textfile[CONF_PATH_LEN];
};

/*
 * ip_family: ipv4 (the default: pods get an IPv4 address, as before enid
 * knew IPv6), dual (one address of each family, both from the same ENI)
 * or ipv6 (an IPv6 address only).
 */
enum ip_family {
	IP_FAMILY_IPV4 = 0,
	IP_FAMILY_DUAL,
	IP_FAMILY_IPV6,
};

/* "ipv4", "dual", "ipv6"; and back: -1 for any other text. */
const char	*config_family_name(int f);
int		 config_family_parse(const char *s);
/* Do pods get an address of this family? */
static inline bool
config_family_v4(int f)
{
	return f != IP_FAMILY_IPV6;
}

static inline bool
config_family_v6(int f)
{
	return f != IP_FAMILY_IPV4;
}

void	config_defaults(struct enid_config *cfg);
/* Parse text (not necessarily NUL-terminated).  0, or -1 with err set. */
int	config_parse(const char *text, size_t len, struct enid_config *cfg,
	    char *err, size_t errlen);
/* Read and parse a file; errors name the file too. */
int	config_load(const char *path, struct enid_config *cfg, char *err,
	    size_t errlen);
/*
 * Forget the static cloud credentials.  The broker and enid-netd never use
 * them and call this right after config_load(); only enid-cloudd keeps
 * them.
 */
void	config_wipe_secrets(struct enid_config *cfg);

/*
 * snat.exclude against the VPC's CIDR blocks (known only from the cloud):
 * 0, or -1 with err naming the exclusion that overlaps one.
 */
int	config_check_snat_vpc(const struct enid_config *cfg,
	    const struct ip_prefix *vpc, size_t nvpc, char *err,
	    size_t errlen);

/*
 * The configuration in effect as a JSON object in the file's own shape
 * (enidctl show config): every key with its value, defaults included,
 * except the secrets, which are never shown.  Parsed back, it gives the
 * same configuration with the secrets empty.
 */
struct json_object;
struct json_object *config_to_json(const struct enid_config *cfg);

#endif /* ENID_CONF_H */
