/*
 * EC2 answers, parsed with expat into the plain structs of ec2.h.
 *
 * The parser keeps the path of open elements below the root
 * ("networkInterfaceSet/item/attachment/attachmentId"), opens a list entry
 * when an <item> it knows starts, and stores an element's text when it
 * ends.  Elements it doesn't know are skipped, so new fields in the cloud's
 * answers are harmless; what it knows must fit its field or the answer is
 * refused.  A DOCTYPE is refused outright (no entity expansion at all).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <expat.h>

#include "ec2.h"

#define PATH_MAX_LEN	512

struct parser {
	XML_Parser		 xp;
	struct ec2_answer	*a;
	char			 root[64];
	bool			 root_seen;
	int			 depth;
	char			 path[PATH_MAX_LEN];
	size_t			 plen[EC2_MAX_DEPTH + 1];
	char			 text[EC2_TEXT_MAX + 1];
	size_t			 tlen;
	bool			 toverflow;
	bool			 failed;
	char			 err[256];
	/* where a tag goes once the list is full */
	struct ec2_tag		 spare_tag;
	struct ec2_tag		*tag;
	/* the IPv6 entry open now was only counted: its text is not kept */
	bool			 in_dropped;
};

static const char *const action_names[EC2_ACTION_COUNT] = {
	[EC2_DESCRIBE_INSTANCES] = "DescribeInstances",
	[EC2_DESCRIBE_INSTANCE_TYPES] = "DescribeInstanceTypes",
	[EC2_DESCRIBE_SUBNETS] = "DescribeSubnets",
	[EC2_DESCRIBE_ENIS] = "DescribeNetworkInterfaces",
	[EC2_CREATE_ENI] = "CreateNetworkInterface",
	[EC2_ATTACH_ENI] = "AttachNetworkInterface",
	[EC2_MODIFY_ENI_ATTR] = "ModifyNetworkInterfaceAttribute",
	[EC2_ASSIGN_IPS] = "AssignPrivateIpAddresses",
	[EC2_UNASSIGN_IPS] = "UnassignPrivateIpAddresses",
	[EC2_DETACH_ENI] = "DetachNetworkInterface",
	[EC2_DELETE_ENI] = "DeleteNetworkInterface",
	[EC2_CHECK_INSTANCES] = "DescribeInstances",
	[EC2_ASSIGN_IPV6] = "AssignIpv6Addresses",
	[EC2_UNASSIGN_IPV6] = "UnassignIpv6Addresses",
};

const char *
ec2_action_name(enum ec2_action action)
{
	return (unsigned)action < EC2_ACTION_COUNT ? action_names[action] : "?";
}

bool
ec2_action_mutating(enum ec2_action action)
{
	switch (action) {
	case EC2_DESCRIBE_INSTANCES:
	case EC2_DESCRIBE_INSTANCE_TYPES:
	case EC2_DESCRIBE_SUBNETS:
	case EC2_DESCRIBE_ENIS:
	case EC2_CHECK_INSTANCES:
		return false;
	default:
		return true;
	}
}

static void
fail(struct parser *p, const char *fmt, const char *what)
{
	if (p->failed)
		return;
	p->failed = true;
	snprintf(p->err, sizeof(p->err), fmt, what);
	XML_StopParser(p->xp, XML_FALSE);
}

static bool
is(const char *path, const char *want)
{
	return strcmp(path, want) == 0;
}

/* If path starts with prefix + "/", the rest; else NULL. */
static const char *
under(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	if (strncmp(path, prefix, n) == 0 && path[n] == '/')
		return path + n + 1;
	return NULL;
}

/* Store the element's text in a field; too long refuses the answer. */
static void
set(struct parser *p, char *dst, size_t size)
{
	if (p->toverflow || p->tlen >= size) {
		fail(p, "value of <%.128s> too long", p->path);
		return;
	}
	memcpy(dst, p->text, p->tlen);
	dst[p->tlen] = '\0';
}

/* Store an entry's text; too long keeps "?" (which no check takes), so
 * that the entry is left out, not the answer refused. */
static void
set_entry(struct parser *p, char *dst, size_t size)
{
	if (p->toverflow || p->tlen >= size) {
		memcpy(dst, "?", 2);
		return;
	}
	memcpy(dst, p->text, p->tlen);
	dst[p->tlen] = '\0';
}

/* One more entry in a list of cap that counts those past it: true if it
 * has a place (*n grew), false if it was only counted; the answer fails
 * once MSG_MAX_LEFT_OUT are counted. */
static bool
entry_add(struct parser *p, uint32_t *n, uint32_t cap, uint32_t *dropped)
{
	if (*n < cap) {
		(*n)++;
		return true;
	}
	if (++*dropped > MSG_MAX_LEFT_OUT - cap)
		fail(p, "too many entries at <%.128s>", p->path);
	return false;
}

/* Store, cutting what doesn't fit (free text: messages). */
static void
set_cut(struct parser *p, char *dst, size_t size)
{
	size_t n = p->tlen < size - 1 ? p->tlen : size - 1;

	memcpy(dst, p->text, n);
	dst[n] = '\0';
}

/* Append a zeroed entry to the answer's list, which holds at most max. */
static void *
list_add(struct parser *p, size_t elem, uint32_t max)
{
	struct ec2_answer *a = p->a;
	unsigned char *base;
	char what[160];

	if (a->nitems >= max) {
		snprintf(what, sizeof(what), "%u entries at <%.128s>",
		    (unsigned)max, p->path);
		fail(p, "more than %s", what);
		return NULL;
	}
	if (a->nitems == a->capitems) {
		uint32_t cap = a->capitems ? a->capitems * 2 : 4;
		void *n;

		if (cap > max)
			cap = max;
		if ((n = reallocarray(a->list.any, cap, elem)) == NULL) {
			fail(p, "out of memory at <%.128s>", p->path);
			return NULL;
		}
		a->list.any = n;
		a->capitems = cap;
	}
	p->tag = NULL;		/* it may point into the old list */
	base = (unsigned char *)a->list.any + (size_t)a->nitems * elem;
	memset(base, 0, elem);
	a->nitems++;
	return base;
}

/* ---- an ENI, wherever it appears ---- */

static bool
has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void
eni_open(struct parser *p, struct ec2_eni *e, const char *rel)
{
	if (is(rel, "attachment")) {
		e->attached = true;
	} else if (is(rel, "privateIpAddressesSet/item")) {
		if (e->naddrs == EC2_MAX_ENI_ADDRS)
			fail(p, "more than 65 addresses at <%.128s>", p->path);
		else
			e->naddrs++;
	} else if (is(rel, "ipv4PrefixSet/item")) {
		if (e->nprefixes == MSG_MAX_ENI_PREFIXES)
			fail(p, "more than 64 prefixes at <%.128s>", p->path);
		else
			e->nprefixes++;
	} else if (is(rel, "ipv6AddressesSet/item")) {
		/* the slot past the last takes text nobody reads */
		p->in_dropped = !entry_add(p, &e->naddrs6, MSG_MAX_ENI_ADDRS6,
		    &e->addrs6_dropped);
	} else if (is(rel, "ipv6PrefixSet/item")) {
		p->in_dropped = !entry_add(p, &e->nprefixes6,
		    MSG_MAX_ENI_PREFIXES6, &e->prefixes6_dropped);
	} else if (is(rel, "groupSet/item")) {
		if (e->ngroups == MSG_MAX_SGS)
			fail(p, "more than 8 security groups at <%.128s>", p->path);
		else
			e->ngroups++;
	} else if (is(rel, "tagSet/item")) {
		if (e->ntags < MSG_MAX_TAGS) {
			p->tag = &e->tags[e->ntags++];
		} else {
			p->tag = &p->spare_tag;
			e->tags_dropped++;
		}
		memset(p->tag, 0, sizeof(*p->tag));
	}
}

/* A tag past the list's end: keep it in place of a foreign one if it is
 * enid's own, so the tags enid relies on are never the ones dropped. */
static void
eni_tag_done(struct parser *p, struct ec2_eni *e)
{
	uint32_t i;

	if (p->tag != &p->spare_tag || !has_prefix(p->spare_tag.key, "enid"))
		return;
	for (i = 0; i < e->ntags; i++)
		if (!has_prefix(e->tags[i].key, "enid")) {
			e->tags[i] = p->spare_tag;
			return;
		}
}

static void
eni_text(struct parser *p, struct ec2_eni *e, const char *rel)
{
	if (is(rel, "networkInterfaceId"))
		set(p, e->id, sizeof(e->id));
	else if (is(rel, "subnetId"))
		set(p, e->subnet_id, sizeof(e->subnet_id));
	else if (is(rel, "vpcId"))
		set(p, e->vpc_id, sizeof(e->vpc_id));
	else if (is(rel, "availabilityZone"))
		set(p, e->az, sizeof(e->az));
	else if (is(rel, "macAddress"))
		set(p, e->mac, sizeof(e->mac));
	else if (is(rel, "privateIpAddress"))
		set(p, e->private_ip, sizeof(e->private_ip));
	else if (is(rel, "status"))
		set(p, e->status, sizeof(e->status));
	else if (is(rel, "attachment/attachmentId"))
		set(p, e->attachment_id, sizeof(e->attachment_id));
	else if (is(rel, "attachment/instanceId"))
		set(p, e->attach_instance, sizeof(e->attach_instance));
	else if (is(rel, "attachment/status"))
		set(p, e->attach_status, sizeof(e->attach_status));
	else if (is(rel, "attachment/deviceIndex"))
		set(p, e->device_index, sizeof(e->device_index));
	else if (is(rel, "attachment/deleteOnTermination"))
		set(p, e->dot, sizeof(e->dot));
	else if (is(rel, "privateIpAddressesSet/item/privateIpAddress") &&
	    e->naddrs > 0)
		set(p, e->addrs[e->naddrs - 1], sizeof(e->addrs[0]));
	else if (is(rel, "privateIpAddressesSet/item/primary") &&
	    e->naddrs > 0)
		e->addr_primary[e->naddrs - 1] = p->tlen == 4 &&
		    memcmp(p->text, "true", 4) == 0;
	else if (is(rel, "ipv4PrefixSet/item/ipv4Prefix") && e->nprefixes > 0)
		set(p, e->prefixes[e->nprefixes - 1], sizeof(e->prefixes[0]));
	else if (is(rel, "ipv6Native"))
		set(p, e->ipv6_native, sizeof(e->ipv6_native));
	else if (is(rel, "ipv6AddressesSet/item/ipv6Address") &&
	    e->naddrs6 > 0 && !p->in_dropped)
		set_entry(p, e->addrs6[e->naddrs6 - 1], sizeof(e->addrs6[0]));
	else if (is(rel, "ipv6AddressesSet/item/isPrimaryIpv6") &&
	    e->naddrs6 > 0 && !p->in_dropped)
		e->addr6_primary[e->naddrs6 - 1] = p->tlen == 4 &&
		    memcmp(p->text, "true", 4) == 0;
	else if (is(rel, "ipv6PrefixSet/item/ipv6Prefix") &&
	    e->nprefixes6 > 0 && !p->in_dropped)
		set_entry(p, e->prefixes6[e->nprefixes6 - 1],
		    sizeof(e->prefixes6[0]));
	else if (is(rel, "groupSet/item/groupId") && e->ngroups > 0)
		set(p, e->groups[e->ngroups - 1], sizeof(e->groups[0]));
	else if (is(rel, "tagSet/item/key") && p->tag != NULL)
		set(p, p->tag->key, sizeof(p->tag->key));
	else if (is(rel, "tagSet/item/value") && p->tag != NULL)
		set(p, p->tag->value, sizeof(p->tag->value));
}

/* ---- per action ---- */

static struct ec2_instance *
cur_instance(struct parser *p)
{
	return p->a->nitems ? &p->a->list.instances[p->a->nitems - 1] : NULL;
}

static void
on_open(struct parser *p, const char *path)
{
	struct ec2_answer *a = p->a;
	struct ec2_instance *in;
	const char *rel;

	if (a->is_error)
		return;
	switch (a->action) {
	case EC2_DESCRIBE_ENIS:
		if (is(path, "networkInterfaceSet/item"))
			(void)list_add(p, sizeof(struct ec2_eni),
			    EC2_MAX_ITEMS);
		else if ((rel = under(path, "networkInterfaceSet/item")) &&
		    a->nitems > 0)
			eni_open(p, &a->list.enis[a->nitems - 1], rel);
		break;
	case EC2_CREATE_ENI:
		if (is(path, "networkInterface"))
			a->has_eni = true;
		else if ((rel = under(path, "networkInterface")))
			eni_open(p, &a->eni, rel);
		break;
	case EC2_DESCRIBE_INSTANCES:
		if (is(path, "reservationSet/item/instancesSet/item"))
			(void)list_add(p, sizeof(struct ec2_instance),
			    EC2_MAX_INSTANCES);
		else if ((rel = under(path,
		    "reservationSet/item/instancesSet/item")) &&
		    (in = cur_instance(p)) != NULL) {
			if (is(rel, "networkInterfaceSet/item")) {
				if (in->nenis == EC2_MAX_INSTANCE_ENIS)
					fail(p, "too many interfaces at <%.128s>",
					    path);
				else
					in->nenis++;
			} else if ((rel = under(rel, "networkInterfaceSet/item"))
			    && in->nenis > 0)
				eni_open(p, &in->enis[in->nenis - 1], rel);
		}
		break;
	case EC2_CHECK_INSTANCES:
		/* One entry per instance, whichever reservation lists it. */
		if (is(path, "reservationSet/item/instancesSet/item"))
			(void)list_add(p, sizeof(struct ec2_instance_state),
			    EC2_MAX_ITEMS);
		break;
	case EC2_DESCRIBE_INSTANCE_TYPES:
		if (is(path, "instanceTypeSet/item"))
			(void)list_add(p, sizeof(struct ec2_instance_type),
			    EC2_MAX_ITEMS);
		break;
	case EC2_DESCRIBE_SUBNETS:
		if (is(path, "subnetSet/item"))
			(void)list_add(p, sizeof(struct ec2_subnet),
			    EC2_MAX_ITEMS);
		else if (is(path, "subnetSet/item/ipv6CidrBlockAssociationSet/"
		    "item") && a->nitems > 0) {
			struct ec2_subnet *s = &a->list.subnets[a->nitems - 1];

			p->in_dropped = !entry_add(p, &s->ncidrs6,
			    EC2_MAX_SUBNET_CIDRS6, &s->cidrs6_dropped);
		}
		break;
	case EC2_ASSIGN_IPV6:
	case EC2_UNASSIGN_IPV6:
		/* Lists of the new (or removed) ones only: more than a
		 * request asks for is no answer to it. */
		if (is(path, "assignedIpv6Addresses/item") ||
		    is(path, "unassignedIpv6Addresses/item")) {
			if (a->naddrs6 == MSG_MAX_ENI_ADDRS)
				fail(p, "more than 64 addresses at <%.128s>",
				    path);
			else
				a->naddrs6++;
		} else if (is(path, "assignedIpv6PrefixSet/item") ||
		    is(path, "unassignedIpv6PrefixSet/item")) {
			if (a->nprefixes6 == MSG_MAX_ENI_PREFIXES)
				fail(p, "more than 64 prefixes at <%.128s>",
				    path);
			else
				a->nprefixes6++;
		}
		break;
	case EC2_ASSIGN_IPS:
		if (is(path, "assignedPrivateIpAddressesSet/item")) {
			if (a->naddrs == MSG_MAX_ENI_ADDRS)
				fail(p, "more than 64 addresses at <%.128s>", path);
			else
				a->naddrs++;
		} else if (is(path, "assignedIpv4PrefixSet/item")) {
			if (a->nprefixes == MSG_MAX_ENI_PREFIXES)
				fail(p, "more than 64 prefixes at <%.128s>", path);
			else
				a->nprefixes++;
		}
		break;
	default:
		break;
	}
}

static void
instance_text(struct parser *p, struct ec2_instance *in, const char *rel)
{
	const char *sub;

	if (is(rel, "instanceId"))
		set(p, in->id, sizeof(in->id));
	else if (is(rel, "instanceType"))
		set(p, in->type, sizeof(in->type));
	else if (is(rel, "placement/availabilityZone"))
		set(p, in->az, sizeof(in->az));
	else if (is(rel, "subnetId"))
		set(p, in->subnet_id, sizeof(in->subnet_id));
	else if (is(rel, "vpcId"))
		set(p, in->vpc_id, sizeof(in->vpc_id));
	else if (is(rel, "privateIpAddress"))
		set(p, in->private_ip, sizeof(in->private_ip));
	else if ((sub = under(rel, "networkInterfaceSet/item")) &&
	    in->nenis > 0) {
		eni_text(p, &in->enis[in->nenis - 1], sub);
		if (is(sub, "tagSet/item"))
			eni_tag_done(p, &in->enis[in->nenis - 1]);
	}
}

static void
error_text(struct parser *p, const char *path)
{
	struct ec2_answer *a = p->a;

	/* EC2's <Response><Errors><Error>, and the <ErrorResponse><Error>
	 * other AWS front ends answer with; the first error wins. */
	if ((is(path, "Errors/Error/Code") || is(path, "Error/Code")) &&
	    a->code[0] == '\0')
		set_cut(p, a->code, sizeof(a->code));
	else if ((is(path, "Errors/Error/Message") ||
	    is(path, "Error/Message")) && a->message[0] == '\0')
		set_cut(p, a->message, sizeof(a->message));
	else if (is(path, "RequestID") || is(path, "RequestId"))
		set_cut(p, a->request_id, sizeof(a->request_id));
}

static void
on_text(struct parser *p, const char *path)
{
	struct ec2_answer *a = p->a;
	const char *rel;
	struct ec2_subnet *s;
	struct ec2_instance_type *t;
	struct ec2_instance_state *ist;

	if (a->is_error) {
		error_text(p, path);
		return;
	}
	if (is(path, "requestId")) {
		set(p, a->request_id, sizeof(a->request_id));
		return;
	}
	if (is(path, "nextToken")) {
		set(p, a->next_token, sizeof(a->next_token));
		return;
	}
	switch (a->action) {
	case EC2_DESCRIBE_ENIS:
		if ((rel = under(path, "networkInterfaceSet/item")) &&
		    a->nitems > 0) {
			eni_text(p, &a->list.enis[a->nitems - 1], rel);
			if (is(rel, "tagSet/item"))
				eni_tag_done(p, &a->list.enis[a->nitems - 1]);
		}
		break;
	case EC2_CREATE_ENI:
		if ((rel = under(path, "networkInterface"))) {
			eni_text(p, &a->eni, rel);
			if (is(rel, "tagSet/item"))
				eni_tag_done(p, &a->eni);
		}
		break;
	case EC2_DESCRIBE_INSTANCES:
		if ((rel = under(path, "reservationSet/item/instancesSet/item"))
		    && a->nitems > 0)
			instance_text(p, cur_instance(p), rel);
		break;
	case EC2_CHECK_INSTANCES:
		if ((rel = under(path, "reservationSet/item/instancesSet/item"))
		    == NULL || a->nitems == 0)
			break;
		ist = &a->list.states[a->nitems - 1];
		if (is(rel, "instanceId"))
			set(p, ist->id, sizeof(ist->id));
		else if (is(rel, "instanceState/name"))
			set(p, ist->state, sizeof(ist->state));
		break;
	case EC2_DESCRIBE_INSTANCE_TYPES:
		if ((rel = under(path, "instanceTypeSet/item")) == NULL ||
		    a->nitems == 0)
			break;
		t = &a->list.types[a->nitems - 1];
		if (is(rel, "instanceType"))
			set(p, t->name, sizeof(t->name));
		else if (is(rel, "networkInfo/maximumNetworkInterfaces"))
			set(p, t->max_enis, sizeof(t->max_enis));
		else if (is(rel, "networkInfo/ipv4AddressesPerInterface"))
			set(p, t->ipv4_per_eni, sizeof(t->ipv4_per_eni));
		else if (is(rel, "hypervisor"))
			set(p, t->hypervisor, sizeof(t->hypervisor));
		else if (is(rel, "bareMetal"))
			set(p, t->bare_metal, sizeof(t->bare_metal));
		else if (is(rel, "vCpuInfo/defaultVCpus"))
			set(p, t->vcpus, sizeof(t->vcpus));
		else if (is(rel, "networkInfo/ipv6Supported"))
			set(p, t->ipv6_supported, sizeof(t->ipv6_supported));
		else if (is(rel, "networkInfo/ipv6AddressesPerInterface"))
			set(p, t->ipv6_per_eni, sizeof(t->ipv6_per_eni));
		break;
	case EC2_DESCRIBE_SUBNETS:
		if ((rel = under(path, "subnetSet/item")) == NULL ||
		    a->nitems == 0)
			break;
		s = &a->list.subnets[a->nitems - 1];
		if (is(rel, "subnetId"))
			set(p, s->id, sizeof(s->id));
		else if (is(rel, "availabilityZone"))
			set(p, s->az, sizeof(s->az));
		else if (is(rel, "vpcId"))
			set(p, s->vpc_id, sizeof(s->vpc_id));
		else if (is(rel, "cidrBlock"))
			set(p, s->cidr, sizeof(s->cidr));
		else if (is(rel, "availableIpAddressCount"))
			set(p, s->available, sizeof(s->available));
		else if (is(rel, "ipv6Native"))
			set(p, s->ipv6_native, sizeof(s->ipv6_native));
		else if (is(rel, "ipv6CidrBlockAssociationSet/item/"
		    "ipv6CidrBlock") && s->ncidrs6 > 0 && !p->in_dropped)
			set_entry(p, s->cidrs6[s->ncidrs6 - 1],
			    sizeof(s->cidrs6[0]));
		else if (is(rel, "ipv6CidrBlockAssociationSet/item/"
		    "ipv6CidrBlockState/state") && s->ncidrs6 > 0 &&
		    !p->in_dropped)
			set_entry(p, s->cidr6_states[s->ncidrs6 - 1],
			    sizeof(s->cidr6_states[0]));
		break;
	case EC2_ASSIGN_IPV6:
	case EC2_UNASSIGN_IPV6:
		if (is(path, "networkInterfaceId"))
			set(p, a->eni_id, sizeof(a->eni_id));
		else if ((is(path, "assignedIpv6Addresses/item") ||
		    is(path, "unassignedIpv6Addresses/item")) &&
		    a->naddrs6 > 0)
			set(p, a->addrs6[a->naddrs6 - 1], sizeof(a->addrs6[0]));
		/* Strings, each its own item (botocore's IpPrefixList): not
		 * the item/ipv6Prefix of an ENI's ipv6PrefixSet. */
		else if ((is(path, "assignedIpv6PrefixSet/item") ||
		    is(path, "unassignedIpv6PrefixSet/item")) &&
		    a->nprefixes6 > 0)
			set(p, a->prefixes6[a->nprefixes6 - 1],
			    sizeof(a->prefixes6[0]));
		break;
	case EC2_ATTACH_ENI:
		if (is(path, "attachmentId"))
			set(p, a->attachment_id, sizeof(a->attachment_id));
		break;
	case EC2_ASSIGN_IPS:
		if (is(path, "assignedPrivateIpAddressesSet/item/"
		    "privateIpAddress") && a->naddrs > 0)
			set(p, a->addrs[a->naddrs - 1], sizeof(a->addrs[0]));
		else if (is(path, "assignedIpv4PrefixSet/item/ipv4Prefix") &&
		    a->nprefixes > 0)
			set(p, a->prefixes[a->nprefixes - 1],
			    sizeof(a->prefixes[0]));
		break;
	default:
		break;
	}
	if (is(path, "return")) {
		a->has_return = true;
		a->return_true = p->tlen == 4 && memcmp(p->text, "true", 4) == 0;
	}
}

/* ---- expat callbacks ---- */

static void XMLCALL
start_element(void *arg, const XML_Char *name, const XML_Char **attrs)
{
	struct parser *p = arg;
	size_t n, len;

	(void)attrs;
	if (p->failed)
		return;
	if (p->depth == EC2_MAX_DEPTH) {
		fail(p, "XML nested deeper than %s levels", "32");
		return;
	}
	p->depth++;
	p->tlen = 0;
	p->toverflow = false;
	if (p->depth == 1) {
		if (strcmp(name, p->root) == 0) {
			p->a->is_error = false;
		} else if (strcmp(name, "Response") == 0 ||
		    strcmp(name, "ErrorResponse") == 0) {
			p->a->is_error = true;
		} else {
			fail(p, "unexpected root element <%.64s>", name);
			return;
		}
		p->root_seen = true;
		p->path[0] = '\0';
		p->plen[1] = 0;
		return;
	}
	len = p->plen[p->depth - 1];
	n = strlen(name);
	if (len + 1 + n >= sizeof(p->path)) {
		fail(p, "XML element path too long at <%.64s>", name);
		return;
	}
	if (len > 0)
		p->path[len++] = '/';
	memcpy(p->path + len, name, n);
	len += n;
	p->path[len] = '\0';
	p->plen[p->depth] = len;
	on_open(p, p->path);
}

static void XMLCALL
end_element(void *arg, const XML_Char *name)
{
	struct parser *p = arg;

	(void)name;
	if (p->failed || p->depth == 0)
		return;
	if (p->depth > 1)
		on_text(p, p->path);
	p->depth--;
	p->path[p->plen[p->depth > 0 ? p->depth : 0]] = '\0';
	if (p->depth <= 1)
		p->path[0] = '\0';
	p->tlen = 0;
	p->toverflow = false;
}

static void XMLCALL
char_data(void *arg, const XML_Char *s, int len)
{
	struct parser *p = arg;
	size_t room;

	if (p->failed || len <= 0)
		return;
	room = EC2_TEXT_MAX - p->tlen;
	if ((size_t)len > room) {
		p->toverflow = true;
		len = (int)room;
	}
	memcpy(p->text + p->tlen, s, (size_t)len);
	p->tlen += (size_t)len;
	p->text[p->tlen] = '\0';
}

static void XMLCALL
doctype(void *arg, const XML_Char *name, const XML_Char *sysid,
    const XML_Char *pubid, int has_internal)
{
	struct parser *p = arg;

	(void)name;
	(void)sysid;
	(void)pubid;
	(void)has_internal;
	fail(p, "%s", "DOCTYPE in an answer (refused)");
}

static void XMLCALL
entity_decl(void *arg, const XML_Char *name, int is_param,
    const XML_Char *value, int value_len, const XML_Char *base,
    const XML_Char *sysid, const XML_Char *pubid, const XML_Char *notation)
{
	struct parser *p = arg;

	(void)name; (void)is_param; (void)value; (void)value_len;
	(void)base; (void)sysid; (void)pubid; (void)notation;
	fail(p, "%s", "entity declaration in an answer (refused)");
}

void
ec2_answer_free(struct ec2_answer *a)
{
	free(a->list.any);
	a->list.any = NULL;
	a->nitems = a->capitems = 0;
}

int
ec2_parse(enum ec2_action action, const char *text, size_t len,
    struct ec2_answer *a, char *err, size_t errlen)
{
	struct parser *p;
	enum XML_Status st;
	int rc = -1;

	memset(a, 0, sizeof(*a));
	a->action = action;
	if ((unsigned)action >= EC2_ACTION_COUNT) {
		snprintf(err, errlen, "unknown action");
		return -1;
	}
	if (len > EC2_MAX_BODY) {
		snprintf(err, errlen, "answer of %zu bytes is over the %d-byte "
		    "cap", len, EC2_MAX_BODY);
		return -1;
	}
	if ((p = calloc(1, sizeof(*p))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	p->a = a;
	snprintf(p->root, sizeof(p->root), "%sResponse",
	    ec2_action_name(action));
	if ((p->xp = XML_ParserCreate("UTF-8")) == NULL) {
		snprintf(err, errlen, "out of memory");
		free(p);
		return -1;
	}
	XML_SetUserData(p->xp, p);
	XML_SetElementHandler(p->xp, start_element, end_element);
	XML_SetCharacterDataHandler(p->xp, char_data);
	XML_SetStartDoctypeDeclHandler(p->xp, doctype);
	XML_SetEntityDeclHandler(p->xp, entity_decl);

	st = XML_Parse(p->xp, text, (int)len, XML_TRUE);
	if (p->failed) {
		snprintf(err, errlen, "%s", p->err);
	} else if (st != XML_STATUS_OK) {
		snprintf(err, errlen, "malformed XML at line %lu: %s",
		    (unsigned long)XML_GetCurrentLineNumber(p->xp),
		    XML_ErrorString(XML_GetErrorCode(p->xp)));
	} else if (!p->root_seen) {
		snprintf(err, errlen, "no XML element in the answer");
	} else if (a->is_error && a->code[0] == '\0') {
		snprintf(err, errlen, "error answer without an error code");
	} else {
		rc = 0;
	}
	XML_ParserFree(p->xp);
	free(p);
	if (rc == -1)
		ec2_answer_free(a);
	return rc;
}
