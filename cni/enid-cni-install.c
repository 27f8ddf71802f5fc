/*
 * enid-cni-install: the DaemonSet's init container.  It puts enid-cni, its
 * enid-ipam name and the conflist into the host's CNI directories, so that
 * the container image needs no shell.
 *
 * All of it is checked before anything is written: both directories must
 * be there and writable, and a file already under one of the three names
 * must be enid's (an enid-cni carrying the plugin's mark, an enid-ipam that
 * links to enid-cni or is one, a conflist that names enid-cni or enid-ipam).
 * Otherwise it exits 1 naming the path, and the host's files are as they
 * were.  Each file is written under a hidden name in its own directory,
 * synced, and renamed over the old one, so a runtime reading the directory
 * sees the old file or the new one, never half of one; the conflist goes
 * last, so it never names a plugin that is not there yet.  Running it again
 * does the same again.
 *
 * Its input is the environment the DaemonSet sets:
 *   ENID_CNI     the plugin to install (the image's)
 *   CONFLIST     the conflist to install (the ConfigMap's)
 *   CNI_BIN_DIR  the host's plugin directory, as mounted
 *   CNI_NET_DIR  the host's configuration directory, as mounted
 *   CNI_VERSION  "auto" (or unset): the conflist as it is; "1.1.0",
 *                "1.0.0" or "0.4.0": cniVersion set to it, cniVersions
 *                left out.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cniconf.h"

#define PROG		"enid-cni-install"
#define PLUGIN_NAME	"enid-cni"
#define IPAM_NAME	"enid-ipam"
#define CONFLIST_NAME	"10-enid.conflist"
#define PLUGIN_TMP	".enid-cni.new"
#define IPAM_TMP	".enid-ipam.new"
#define CONFLIST_TMP	".10-enid.conflist.new"
#define PLUGIN_MAX	(64u << 20)	/* bytes of a plugin read at most */
#define CONFLIST_MAX	(64u << 10)

struct blob {
	char	*data;
	size_t	 len;
};

struct target {
	const char	*envname;	/* the directory's variable */
	const char	*dir;
	int		 dirfd;
};

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2),
    noreturn));

static void
fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "; nothing installed\n");
	exit(1);
}

static const char *
need_env(const char *name)
{
	const char *v = getenv(name);

	if (v == NULL || *v == '\0')
		fail("%s is not set", name);
	return v;
}

/*
 * Read a regular file (not a FIFO that would hang) of at most max bytes;
 * a link is refused if follow is false.  0, or -1 with errno set (EFBIG
 * for a longer one, EINVAL for one that is not regular).  The inputs in
 * the container follow links: the kubelet projects a ConfigMap's items as
 * links into its ..data directory.  The host's files never do.
 */
static int
read_file(int dirfd, const char *path, size_t max, bool follow,
    struct blob *b)
{
	struct stat st;
	size_t off = 0;
	ssize_t n;
	int fd, saved;

	b->data = NULL;
	b->len = 0;
	fd = openat(dirfd, path, O_RDONLY | (follow ? 0 : O_NOFOLLOW) |
	    O_NONBLOCK | O_CLOEXEC);
	if (fd == -1)
		return -1;
	if (fstat(fd, &st) == -1)
		goto fail;
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		goto fail;
	}
	if ((uintmax_t)st.st_size > max) {
		errno = EFBIG;
		goto fail;
	}
	if ((b->data = malloc((size_t)st.st_size + 1)) == NULL)
		goto fail;
	while (off < (size_t)st.st_size) {
		n = read(fd, b->data + off, (size_t)st.st_size - off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			goto fail;
		if (n == 0)
			break;
		off += (size_t)n;
	}
	b->len = off;
	b->data[off] = '\0';
	close(fd);
	return 0;
fail:
	saved = errno;
	free(b->data);
	b->data = NULL;
	close(fd);
	errno = saved;
	return -1;
}

static bool
has_mark(const struct blob *b)
{
	return memmem(b->data, b->len, CNI_PLUGIN_MARK,
	    sizeof(CNI_PLUGIN_MARK) - 1) != NULL;
}

/* A conflist is enid's when one of its plugins is enid-cni, or uses
 * enid-ipam as its IPAM plugin. */
static bool
conflist_is_enids(struct json_object *conf)
{
	struct json_object *plugins, *p, *v, *ipam;
	size_t i;

	if (!json_object_is_type(conf, json_type_object) ||
	    !json_object_object_get_ex(conf, "plugins", &plugins) ||
	    !json_object_is_type(plugins, json_type_array))
		return false;
	for (i = 0; i < json_object_array_length(plugins); i++) {
		p = json_object_array_get_idx(plugins, i);
		if (!json_object_is_type(p, json_type_object))
			continue;
		if (json_object_object_get_ex(p, "type", &v) &&
		    json_object_is_type(v, json_type_string) &&
		    strcmp(json_object_get_string(v), PLUGIN_NAME) == 0)
			return true;
		if (json_object_object_get_ex(p, "ipam", &ipam) &&
		    json_object_object_get_ex(ipam, "type", &v) &&
		    json_object_is_type(v, json_type_string) &&
		    strcmp(json_object_get_string(v), IPAM_NAME) == 0)
			return true;
	}
	return false;
}

static struct json_object *
parse_json(const struct blob *b)
{
	struct json_tokener *tok;
	struct json_object *o;

	if ((tok = json_tokener_new()) == NULL)
		return NULL;
	o = json_tokener_parse_ex(tok, b->data, (int)b->len);
	if (o != NULL && (json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) + strspn(b->data +
	    json_tokener_get_parse_end(tok), " \t\r\n") != b->len)) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	return o;
}

/* The existing file under name in t is absent or enid's; else fail. */
static void
check_existing(const struct target *t, const char *name, bool conflist)
{
	struct json_object *conf;
	struct blob b;
	struct stat st;
	char link[64];
	ssize_t n;

	if (fstatat(t->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1) {
		if (errno == ENOENT)
			return;
		fail("%s/%s: %s", t->dir, name, strerror(errno));
	}
	if (S_ISLNK(st.st_mode)) {
		/* enid-ipam as make install and this program leave it. */
		n = readlinkat(t->dirfd, name, link, sizeof(link) - 1);
		if (strcmp(name, IPAM_NAME) == 0 && n > 0) {
			link[n] = '\0';
			if (strcmp(link, PLUGIN_NAME) == 0)
				return;
		}
		fail("%s/%s is a symbolic link, not enid's; left as it is",
		    t->dir, name);
	}
	/* A device or FIFO is not opened at all: opening one can act. */
	if (!S_ISREG(st.st_mode))
		fail("%s/%s is not enid's (not a regular file); left as it is",
		    t->dir, name);
	if (read_file(t->dirfd, name, conflist ? CONFLIST_MAX : PLUGIN_MAX,
	    false,
	    &b) == -1)
		fail("%s/%s is not enid's (%s); left as it is", t->dir, name,
		    errno == EINVAL ? "not a regular file" :
		    errno == EFBIG ? "too large" : strerror(errno));
	if (conflist) {
		conf = parse_json(&b);
		free(b.data);
		if (conf != NULL && conflist_is_enids(conf)) {
			json_object_put(conf);
			return;
		}
		json_object_put(conf);
		fail("%s/%s is not enid's (no plugin of type " PLUGIN_NAME
		    " or ipam of type " IPAM_NAME "); left as it is", t->dir,
		    name);
	}
	if (has_mark(&b)) {
		free(b.data);
		return;
	}
	free(b.data);
	fail("%s/%s is not enid's (no enid-cni mark in it); left as it is",
	    t->dir, name);
}

/* The conflist to install: the file as it is for "auto", else with its
 * cniVersion set and its cniVersions left out. */
static void
make_conflist(const char *path, const char *version, struct blob *out)
{
	struct json_object *conf, *v;
	const char *s;
	struct blob b;

	if (strcmp(version, "auto") != 0 && strcmp(version, "1.1.0") != 0 &&
	    strcmp(version, "1.0.0") != 0 && strcmp(version, "0.4.0") != 0)
		fail("CNI_VERSION \"%s\" is not auto, 1.1.0, 1.0.0 or 0.4.0",
		    version);
	if (read_file(AT_FDCWD, path, CONFLIST_MAX, true, &b) == -1)
		fail("CONFLIST %s: %s", path, errno == EINVAL ?
		    "not a regular file" : errno == EFBIG ? "too large" :
		    strerror(errno));
	if ((conf = parse_json(&b)) == NULL || !conflist_is_enids(conf))
		fail("CONFLIST %s is not a conflist with an " PLUGIN_NAME
		    " plugin", path);
	if (!json_object_object_get_ex(conf, "cniVersion", &v) ||
	    !json_object_is_type(v, json_type_string))
		fail("CONFLIST %s has no cniVersion string", path);
	if (strcmp(version, "auto") == 0) {
		json_object_put(conf);
		*out = b;
		return;
	}
	free(b.data);
	json_object_object_add(conf, "cniVersion",
	    json_object_new_string(version));
	json_object_object_del(conf, "cniVersions");
	s = json_object_to_json_string_ext(conf, JSON_C_TO_STRING_PRETTY |
	    JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (s == NULL || asprintf(&out->data, "%s\n", s) == -1)
		fail("CONFLIST %s: out of memory", path);
	out->len = strlen(out->data);
	json_object_put(conf);
}

static void
open_dir(struct target *t, const char *envname)
{
	t->envname = envname;
	t->dir = need_env(envname);
	t->dirfd = open(t->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (t->dirfd == -1)
		fail("%s %s: %s", envname, t->dir, strerror(errno));
}

/* A fresh hidden file in t: a leftover of an interrupted run goes first. */
static int
create_tmp(const struct target *t, const char *name)
{
	int fd;

	if (unlinkat(t->dirfd, name, 0) == -1 && errno != ENOENT)
		return -1;
	fd = openat(t->dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0600);
	return fd;
}

static int
write_all(int fd, const struct blob *b, mode_t mode)
{
	size_t off = 0;
	ssize_t n;

	while (off < b->len) {
		n = write(fd, b->data + off, b->len - off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return -1;
		off += (size_t)n;
	}
	if (fchmod(fd, mode) == -1 || fsync(fd) == -1)
		return -1;
	return 0;
}

int
main(void)
{
	struct target bin, net;
	struct blob plugin, conflist;
	const char *cni_path, *version, *failed;
	bool ipam_tmp = false, plugin_in = false;
	int pfd = -1, cfd = -1, saved;

	cni_path = need_env("ENID_CNI");
	version = getenv("CNI_VERSION");
	if (version == NULL || *version == '\0')
		version = "auto";

	/* Everything read and checked first. */
	make_conflist(need_env("CONFLIST"), version, &conflist);
	if (read_file(AT_FDCWD, cni_path, PLUGIN_MAX, true, &plugin) == -1)
		fail("ENID_CNI %s: %s", cni_path, strerror(errno));
	if (!has_mark(&plugin))
		fail("ENID_CNI %s is not enid-cni (no mark in it)", cni_path);
	open_dir(&bin, "CNI_BIN_DIR");
	open_dir(&net, "CNI_NET_DIR");
	check_existing(&bin, PLUGIN_NAME, false);
	check_existing(&bin, IPAM_NAME, false);
	check_existing(&net, CONFLIST_NAME, true);

	/* Then the new files, under hidden names, in both directories:
	 * a read-only or unwritable one fails here, before any rename. */
	failed = bin.dir;
	if ((pfd = create_tmp(&bin, PLUGIN_TMP)) == -1)
		goto undo;
	if ((unlinkat(bin.dirfd, IPAM_TMP, 0) == -1 && errno != ENOENT) ||
	    symlinkat(PLUGIN_NAME, bin.dirfd, IPAM_TMP) == -1)
		goto undo;
	ipam_tmp = true;
	if (write_all(pfd, &plugin, 0755) == -1)
		goto undo;
	failed = net.dir;
	if ((cfd = create_tmp(&net, CONFLIST_TMP)) == -1 ||
	    write_all(cfd, &conflist, 0644) == -1)
		goto undo;

	/* The renames, each atomic in its directory; the conflist last. */
	failed = bin.dir;
	if (renameat(bin.dirfd, PLUGIN_TMP, bin.dirfd, PLUGIN_NAME) == -1)
		goto undo;
	plugin_in = true;
	if (renameat(bin.dirfd, IPAM_TMP, bin.dirfd, IPAM_NAME) == -1)
		goto undo;
	ipam_tmp = false;
	if (fsync(bin.dirfd) == -1)
		goto undo;
	failed = net.dir;
	if (renameat(net.dirfd, CONFLIST_TMP, net.dirfd, CONFLIST_NAME) ==
	    -1 || fsync(net.dirfd) == -1)
		goto undo;
	close(pfd);
	close(cfd);
	printf(PROG ": installed %s/" PLUGIN_NAME ", %s/" IPAM_NAME
	    " and %s/" CONFLIST_NAME " (CNI_VERSION %s)\n", bin.dir, bin.dir,
	    net.dir, version);
	free(plugin.data);
	free(conflist.data);
	return 0;

undo:
	/* Only what this run made goes; what was there stays. */
	saved = errno;
	if (pfd != -1) {
		close(pfd);
		if (!plugin_in)
			(void)unlinkat(bin.dirfd, PLUGIN_TMP, 0);
	}
	if (ipam_tmp)
		(void)unlinkat(bin.dirfd, IPAM_TMP, 0);
	if (cfd != -1) {
		close(cfd);
		(void)unlinkat(net.dirfd, CONFLIST_TMP, 0);
	}
	fprintf(stderr, PROG ": writing in %s: %s; %s\n", failed,
	    strerror(saved), plugin_in ? "the plugin is new, the conflist "
	    "is the old one" : "nothing installed");
	free(plugin.data);
	free(conflist.data);
	return 1;
}
