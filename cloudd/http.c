/*
 * HTTP for enid-cloudd: libcurl's multi interface driven from the common
 * loop.  curl tells us which sockets to watch (CURLMOPT_SOCKETFUNCTION) and
 * when to call it back (CURLMOPT_TIMERFUNCTION); the loop does the waiting.
 * Every request is its own easy handle with its own timeout; connections
 * live in the multi handle's cache and are reused across requests.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cloudd.h"
#include "log.h"

#define HTTP_CA_MAX		(8 * 1024 * 1024)
#define HTTP_MAX_HOST_CONNS	32
#define HTTP_USER_AGENT		"enid-cloudd/" PACKAGE_VERSION
#define HTTP_TRIM_AFTER		(64 * 1024)	/* answer bytes */

struct http_sock {
	struct loop_io	 io;
	struct http	*h;
	curl_socket_t	 fd;
};

static void	http_check_done(struct http *h);

static void
http_sock_cb(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct http_sock *s = io->arg;
	struct http *h = s->h;
	int mask = 0, running;

	(void)l;
	if (events & EPOLLIN)
		mask |= CURL_CSELECT_IN;
	if (events & EPOLLOUT)
		mask |= CURL_CSELECT_OUT;
	if (events & (EPOLLERR | EPOLLHUP))
		mask |= CURL_CSELECT_ERR;
	/* s may be freed inside this call (CURL_POLL_REMOVE). */
	curl_multi_socket_action(h->multi, s->fd, mask, &running);
	http_check_done(h);
}

static int
http_socket_fn(CURL *easy, curl_socket_t fd, int what, void *userp,
    void *socketp)
{
	struct http *h = userp;
	struct http_sock *s = socketp;
	uint32_t events = 0;

	(void)easy;
	if (what == CURL_POLL_REMOVE) {
		if (s != NULL) {
			loop_del_io(h->loop, &s->io);
			curl_multi_assign(h->multi, fd, NULL);
			free(s);
		}
		return 0;
	}
	if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
		events |= EPOLLIN;
	if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
		events |= EPOLLOUT;
	if (s == NULL) {
		if ((s = calloc(1, sizeof(*s))) == NULL) {
			log_warnx("http: out of memory watching a socket");
			return -1;
		}
		s->h = h;
		s->fd = fd;
		if (loop_add_io(h->loop, &s->io, fd, events, http_sock_cb,
		    s) == -1) {
			log_warn("http: watching socket %d", fd);
			free(s);
			return -1;
		}
		curl_multi_assign(h->multi, fd, s);
		return 0;
	}
	if (loop_mod_io(h->loop, &s->io, events) == -1) {
		log_warn("http: changing events of socket %d", fd);
		return -1;
	}
	return 0;
}

static void
http_timer_cb(struct loop *l, struct loop_timer *t)
{
	struct http *h = t->arg;
	int running;

	(void)l;
	curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	http_check_done(h);
}

static int
http_timer_fn(CURLM *multi, long timeout_ms, void *userp)
{
	struct http *h = userp;

	(void)multi;
	if (timeout_ms < 0) {
		loop_timer_cancel(h->loop, &h->timer);
		return 0;
	}
	/* 0 means "as soon as possible": from the loop, not from here. */
	loop_timer_after(h->loop, &h->timer, (uint64_t)timeout_ms);
	return 0;
}

/*
 * glibc keeps freed memory in the heap: a describe of hundreds of
 * addresses (its text, its parse, the broker's messages) would stay
 * resident for good.  A second after such an answer, when its consumer
 * has freed it, the free pages go back to the system.
 */
static void
http_trim_cb(struct loop *l, struct loop_timer *t)
{
	(void)l;
	(void)t;
	malloc_trim(0);
}

static void
http_check_done(struct http *h)
{
	struct http_req *r;
	CURLMsg *msg;
	int left, budget;

	for (budget = 0; budget < 4096; budget++) {
		if ((msg = curl_multi_info_read(h->multi, &left)) == NULL)
			return;
		if (msg->msg != CURLMSG_DONE)
			continue;
		r = NULL;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE,
		    (char **)&r);
		if (r == NULL)
			continue;
		r->cc = msg->data.result;
		curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
		curl_multi_remove_handle(h->multi, r->easy);
		if (r->resplen >= HTTP_TRIM_AFTER && !loop_timer_armed(&h->trim))
			loop_timer_after(h->loop, &h->trim, 1000);
		h->inflight--;
		if (r->errbuf[0] == '\0' && r->cc != CURLE_OK)
			snprintf(r->errbuf, sizeof(r->errbuf), "%s",
			    curl_easy_strerror(r->cc));
		r->done(r, r->arg);
	}
}

static size_t
http_write_fn(char *data, size_t size, size_t nmemb, void *userp)
{
	struct http_req *r = userp;
	size_t n = size * nmemb;

	if (n > r->max_body || r->resplen > r->max_body - n) {
		r->oversize = true;
		return 0;	/* curl stops with CURLE_WRITE_ERROR */
	}
	if (r->resplen + n + 1 > r->respcap) {
		size_t cap = r->respcap ? r->respcap : 4096;
		char *p;

		while (cap < r->resplen + n + 1)
			cap *= 2;
		if ((p = realloc(r->resp, cap)) == NULL)
			return 0;
		r->resp = p;
		r->respcap = cap;
	}
	memcpy(r->resp + r->resplen, data, n);
	r->resplen += n;
	r->resp[r->resplen] = '\0';
	return n;
}

/* Read the CA bundle while we may still open anything, so the sandboxed
 * process never needs the file. */
static int
http_load_ca(struct http *h, const char *path, char *err, size_t errlen)
{
	struct stat sb;
	ssize_t n;
	size_t got = 0;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "CA file %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &sb) == -1 || !S_ISREG(sb.st_mode) ||
	    sb.st_size <= 0 || sb.st_size > HTTP_CA_MAX) {
		snprintf(err, errlen, "CA file %s: not a regular file of 1 "
		    "byte to 8 MiB", path);
		close(fd);
		return -1;
	}
	if ((h->ca_blob = malloc((size_t)sb.st_size)) == NULL) {
		snprintf(err, errlen, "CA file %s: out of memory", path);
		close(fd);
		return -1;
	}
	while (got < (size_t)sb.st_size) {
		n = read(fd, (char *)h->ca_blob + got, (size_t)sb.st_size - got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(err, errlen, "CA file %s: short read", path);
			close(fd);
			return -1;
		}
		got += (size_t)n;
	}
	close(fd);
	h->ca_len = got;
	return 0;
}

int
http_init(struct http *h, struct loop *l, const char *ca_file, char *err,
    size_t errlen)
{
	memset(h, 0, sizeof(*h));
	h->loop = l;
	loop_timer_init(&h->timer, http_timer_cb, h);
	loop_timer_init(&h->trim, http_trim_cb, h);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(err, errlen, "curl_global_init failed");
		return -1;
	}
	if (ca_file != NULL && ca_file[0] != '\0' &&
	    http_load_ca(h, ca_file, err, errlen) == -1)
		return -1;
	if ((h->multi = curl_multi_init()) == NULL) {
		snprintf(err, errlen, "curl_multi_init failed");
		return -1;
	}
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, http_socket_fn);
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, http_timer_fn);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
	curl_multi_setopt(h->multi, CURLMOPT_MAX_HOST_CONNECTIONS,
	    (long)HTTP_MAX_HOST_CONNS);
	return 0;
}

#define SETOPT(opt, val) do { \
	if (curl_easy_setopt(e, opt, val) != CURLE_OK) { \
		snprintf(r->errbuf, sizeof(r->errbuf), "curl option %s "  \
		    "refused", #opt); \
		goto fail; \
	} } while (0)

int
http_start(struct http *h, struct http_req *r)
{
	CURL *e;

	r->cc = CURLE_OK;
	r->status = 0;
	r->resplen = 0;
	r->oversize = false;
	r->errbuf[0] = '\0';
	if ((e = curl_easy_init()) == NULL) {
		snprintf(r->errbuf, sizeof(r->errbuf), "curl_easy_init failed");
		return -1;
	}
	r->easy = e;
	SETOPT(CURLOPT_URL, r->url);
	SETOPT(CURLOPT_PROTOCOLS_STR, r->protocols);
	SETOPT(CURLOPT_REDIR_PROTOCOLS_STR, r->protocols);
	SETOPT(CURLOPT_FOLLOWLOCATION, 0L);
	SETOPT(CURLOPT_NOSIGNAL, 1L);
	SETOPT(CURLOPT_TIMEOUT_MS, (long)r->timeout_ms);
	SETOPT(CURLOPT_CONNECTTIMEOUT_MS, (long)(r->timeout_ms < 5000 ?
	    r->timeout_ms : 5000));
	SETOPT(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)r->max_body);
	SETOPT(CURLOPT_WRITEFUNCTION, http_write_fn);
	SETOPT(CURLOPT_WRITEDATA, r);
	SETOPT(CURLOPT_PRIVATE, r);
	SETOPT(CURLOPT_ERRORBUFFER, r->errbuf);
	SETOPT(CURLOPT_USERAGENT, HTTP_USER_AGENT);
	SETOPT(CURLOPT_SSL_VERIFYPEER, 1L);
	SETOPT(CURLOPT_SSL_VERIFYHOST, 2L);
	SETOPT(CURLOPT_TCP_KEEPALIVE, 1L);
	if (h->ca_blob != NULL) {
		struct curl_blob blob = {
			.data = h->ca_blob, .len = h->ca_len,
			.flags = CURL_BLOB_NOCOPY,
		};

		SETOPT(CURLOPT_CAINFO_BLOB, &blob);
	}
	if (r->no_proxy)
		SETOPT(CURLOPT_PROXY, "");
	if (r->headers != NULL)
		SETOPT(CURLOPT_HTTPHEADER, r->headers);
	switch (r->method) {
	case HTTP_GET:
		SETOPT(CURLOPT_HTTPGET, 1L);
		break;
	case HTTP_PUT:
		SETOPT(CURLOPT_CUSTOMREQUEST, "PUT");
		SETOPT(CURLOPT_POSTFIELDSIZE, 0L);
		SETOPT(CURLOPT_COPYPOSTFIELDS, "");
		break;
	case HTTP_POST:
		SETOPT(CURLOPT_POSTFIELDSIZE, (long)r->bodylen);
		SETOPT(CURLOPT_COPYPOSTFIELDS, r->body);
		break;
	}
	if (r->sigv4[0] != '\0') {
		SETOPT(CURLOPT_AWS_SIGV4, r->sigv4);
		SETOPT(CURLOPT_USERPWD, r->userpwd);
	}
	if (curl_multi_add_handle(h->multi, e) != CURLM_OK) {
		snprintf(r->errbuf, sizeof(r->errbuf),
		    "curl_multi_add_handle failed");
		goto fail;
	}
	h->inflight++;
	return 0;
fail:
	curl_easy_cleanup(e);
	r->easy = NULL;
	return -1;
}

void
http_abort(struct http *h, struct http_req *r)
{
	if (r->easy == NULL)
		return;
	curl_multi_remove_handle(h->multi, r->easy);
	h->inflight--;
	curl_easy_cleanup(r->easy);
	r->easy = NULL;
}

void
http_req_release(struct http_req *r)
{
	if (r->easy != NULL) {
		curl_easy_cleanup(r->easy);
		r->easy = NULL;
	}
	curl_slist_free_all(r->headers);
	r->headers = NULL;
	free(r->resp);
	r->resp = NULL;
	r->resplen = r->respcap = 0;
	explicit_bzero(r->userpwd, sizeof(r->userpwd));
}
