/*
 * In a static enid-cni (configure's static PIE), glibc's name-service
 * lookups would need NSS modules and the shared libc at run time, which a
 * static binary cannot promise; the linker warns of it.  enid-cni looks up
 * no names, but libnl's archive has objects that name three such functions
 * (for nl_addr_parse and nl_ip_proto2str, which it never calls).  These
 * stand in for them: each answers as a lookup that found nothing, so a
 * call added by mistake fails plainly rather than reading NSS modules
 * from a node's disk into the plugin.
 */
#include <errno.h>
#include <netdb.h>
#include <stddef.h>

int
getaddrinfo(const char *node, const char *service,
    const struct addrinfo *hints, struct addrinfo **res)
{
	(void)node;
	(void)service;
	(void)hints;
	*res = NULL;
	return EAI_FAIL;
}

struct protoent *
getprotobyname(const char *name)
{
	(void)name;
	errno = ENOENT;
	return NULL;
}

struct protoent *
getprotobynumber(int proto)
{
	(void)proto;
	errno = ENOENT;
	return NULL;
}
