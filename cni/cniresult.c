/*
 * The JSON enid-cni prints (see cniconf.h): results in the shape of the
 * configuration's cniVersion, errors, and the VERSION answer.  Pure.
 *
 * The shapes differ little: 0.4.0 puts "version" in each ip; 1.1.0 adds
 * "mtu" (and socketPath, pciID) to interfaces and mtu, advmss, priority,
 * table and scope to routes.  A prevResult's entries, already checked by
 * the parser, are carried over in the same shape, before this plugin's.
 */
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "addr.h"
#include "cniconf.h"

static void
copy_keys(struct json_object *dst, struct json_object *src,
    const char *const *keys)
{
	struct json_object *v;

	for (; *keys != NULL; keys++)
		if (json_object_object_get_ex(src, *keys, &v))
			json_object_object_add(dst, *keys, json_object_get(v));
}

static bool
is_v040(const struct cni_conf *c)
{
	return strcmp(c->version, "0.4.0") == 0;
}

static bool
is_v110(const struct cni_conf *c)
{
	return strcmp(c->version, "1.1.0") == 0;
}

static struct json_object *
str(const char *s)
{
	return json_object_new_string(s);
}

static struct json_object *
prev_list(const struct cni_conf *c, const char *key)
{
	struct json_object *v;

	if (c->prev == NULL || !json_object_object_get_ex(c->prev, key, &v))
		return NULL;
	return v;
}

static void
carry_prev(const struct cni_conf *c, struct json_object *ifs,
    struct json_object *ips, struct json_object *routes)
{
	static const char *const if_keys[] = { "name", "mac", "sandbox",
	    NULL };
	static const char *const if_keys11[] = { "mtu", "socketPath", "pciID",
	    NULL };
	static const char *const ip_keys[] = { "address", "gateway",
	    "interface", NULL };
	static const char *const rt_keys[] = { "dst", "gw", NULL };
	static const char *const rt_keys11[] = { "mtu", "advmss", "priority",
	    "table", "scope", NULL };
	struct json_object *l, *a;
	size_t i, n;

	if ((l = prev_list(c, "interfaces")) != NULL) {
		n = json_object_array_length(l);
		for (i = 0; i < n; i++) {
			struct json_object *o = json_object_new_object();

			copy_keys(o, json_object_array_get_idx(l, i), if_keys);
			if (is_v110(c))
				copy_keys(o, json_object_array_get_idx(l, i),
				    if_keys11);
			json_object_array_add(ifs, o);
		}
	}
	if ((l = prev_list(c, "ips")) != NULL) {
		n = json_object_array_length(l);
		for (i = 0; i < n; i++) {
			struct json_object *o = json_object_new_object();
			struct json_object *it = json_object_array_get_idx(l,
			    i);

			if (is_v040(c) && json_object_object_get_ex(it,
			    "address", &a))
				json_object_object_add(o, "version",
				    str(strchr(json_object_get_string(a),
				    ':') ? "6" : "4"));
			copy_keys(o, it, ip_keys);
			json_object_array_add(ips, o);
		}
	}
	if ((l = prev_list(c, "routes")) != NULL) {
		n = json_object_array_length(l);
		for (i = 0; i < n; i++) {
			struct json_object *o = json_object_new_object();

			copy_keys(o, json_object_array_get_idx(l, i), rt_keys);
			if (is_v110(c))
				copy_keys(o, json_object_array_get_idx(l, i),
				    rt_keys11);
			json_object_array_add(routes, o);
		}
	}
}

static struct json_object *
dns_of(const struct cni_conf *c)
{
	struct json_object *v;

	if (c->dns != NULL)
		return json_object_get(c->dns);
	if (c->prev != NULL && json_object_object_get_ex(c->prev, "dns", &v))
		return json_object_get(v);
	return json_object_new_object();
}

static struct json_object *
interface(const struct cni_conf *c, const struct cni_link_info *l,
    const char *sandbox)
{
	struct json_object *o = json_object_new_object();
	char mac[MAC_STR_LEN];

	mac_format(l->mac, mac);
	json_object_object_add(o, "name", str(l->name));
	json_object_object_add(o, "mac", str(mac));
	if (is_v110(c) && l->mtu > 0)
		json_object_object_add(o, "mtu",
		    json_object_new_int((int32_t)l->mtu));
	if (sandbox != NULL)
		json_object_object_add(o, "sandbox", str(sandbox));
	return o;
}

static struct json_object *
ip_entry(const struct cni_conf *c, const struct ip_addr *ip, uint8_t prefix,
    const struct ip_addr *gw, int ifindex)
{
	struct json_object *o = json_object_new_object();
	struct ip_prefix p;
	char cidr[IP_PREFIX_STR_LEN], gws[IP_ADDR_STR_LEN];

	memset(&p, 0, sizeof(p));
	p.addr = *ip;
	p.len = prefix;
	ip_prefix_format(&p, cidr);
	ip_addr_format(gw, gws);
	if (is_v040(c))
		json_object_object_add(o, "version",
		    str(ip->family == AF_INET6 ? "6" : "4"));
	json_object_object_add(o, "address", str(cidr));
	json_object_object_add(o, "gateway", str(gws));
	if (ifindex >= 0)
		json_object_object_add(o, "interface",
		    json_object_new_int(ifindex));
	return o;
}

static struct json_object *
default_route(const struct ip_addr *gw)
{
	struct json_object *o = json_object_new_object();
	char gws[IP_ADDR_STR_LEN];

	ip_addr_format(gw, gws);
	json_object_object_add(o, "dst", str(gw->family == AF_INET6 ?
	    "::/0" : "0.0.0.0/0"));
	json_object_object_add(o, "gw", str(gws));
	return o;
}

/*
 * Both of a dual-stack pod's addresses name the pod's interface: a
 * runtime (containerd) reports only the addresses on eth0, and its
 * family order is kubelet's to choose, not this list's.
 */
struct json_object *
cni_result_main(const struct cni_conf *c, const struct cni_wired *w)
{
	static const char *const gateway[CNI_NFAMILIES] = {
		[CNI_V4] = CNI_GATEWAY, [CNI_V6] = CNI_GATEWAY6 };
	struct json_object *o = json_object_new_object();
	struct json_object *ifs = json_object_new_array();
	struct json_object *ips = json_object_new_array();
	struct json_object *routes = json_object_new_array();
	struct ip_addr gw;
	int base, f;

	carry_prev(c, ifs, ips, routes);
	base = (int)json_object_array_length(ifs);
	json_object_array_add(ifs, interface(c, &w->host, NULL));
	json_object_array_add(ifs, interface(c, &w->pod, c->netns));
	for (f = 0; f < CNI_NFAMILIES; f++) {
		if (w->ip[f].family == 0)
			continue;
		(void)ip_addr_parse(gateway[f], &gw, NULL);
		json_object_array_add(ips, ip_entry(c, &w->ip[f],
		    (uint8_t)ip_family_bits(w->ip[f].family), &gw, base + 1));
		json_object_array_add(routes, default_route(&gw));
	}
	json_object_object_add(o, "cniVersion", str(c->version));
	json_object_object_add(o, "interfaces", ifs);
	json_object_object_add(o, "ips", ips);
	json_object_object_add(o, "routes", routes);
	json_object_object_add(o, "dns", dns_of(c));
	return o;
}

struct json_object *
cni_result_ipam(const struct cni_conf *c,
    const struct ip_addr ip[CNI_NFAMILIES],
    const uint8_t prefix[CNI_NFAMILIES],
    const struct ip_addr gateway[CNI_NFAMILIES])
{
	struct json_object *o = json_object_new_object();
	struct json_object *ips = json_object_new_array();
	struct json_object *routes = json_object_new_array();
	int f;

	for (f = 0; f < CNI_NFAMILIES; f++) {
		if (ip[f].family == 0)
			continue;
		json_object_array_add(ips, ip_entry(c, &ip[f], prefix[f],
		    &gateway[f], -1));
		json_object_array_add(routes, default_route(&gateway[f]));
	}
	json_object_object_add(o, "cniVersion", str(c->version));
	json_object_object_add(o, "ips", ips);
	json_object_object_add(o, "routes", routes);
	json_object_object_add(o, "dns", c->dns != NULL ?
	    json_object_get(c->dns) : json_object_new_object());
	return o;
}

struct json_object *
cni_result_error(const char *version, const struct cni_error *e)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "cniVersion", str(version));
	json_object_object_add(o, "code", json_object_new_int(e->code));
	json_object_object_add(o, "msg", str(e->msg));
	if (e->details[0] != '\0')
		json_object_object_add(o, "details", str(e->details));
	return o;
}

struct json_object *
cni_result_version(const char *version)
{
	struct json_object *o = json_object_new_object();
	struct json_object *a = json_object_new_array();
	const char *const *p;

	for (p = cni_versions; *p; p++)
		json_object_array_add(a, str(*p));
	json_object_object_add(o, "cniVersion", str(version));
	json_object_object_add(o, "supportedVersions", a);
	return o;
}

uint8_t
cni_common_prefix(uint32_t a, uint32_t b, const uint32_t *nets,
    const uint8_t *lens, size_t n)
{
	uint8_t best = 0, p;
	bool found = false;
	size_t i;

	for (i = 0; i < n; i++)
		if (lens[i] <= 32 && cidr4_contains(nets[i], lens[i], a) &&
		    cidr4_contains(nets[i], lens[i], b) &&
		    (!found || lens[i] > best)) {
			best = lens[i];
			found = true;
		}
	if (found)
		return best;
	for (p = 32; p > 0; p--)
		if ((a & prefix_mask(p)) == (b & prefix_mask(p)))
			return p;
	return 0;
}
