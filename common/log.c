/*
 * Logging: see log.h.  The process name and level are the only state, set
 * once at start (and the level by the operator later); beside them, for
 * stderr, the process id and the last second's time of day, kept so that
 * a line costs one formatting and one write(2) (the broker logs a line
 * per pod added and released, on its hot path), and the lines held for
 * log_flush (log_hold).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#define LOG_MSG_MAX	1024	/* a message, its tag and errno's text */
#define LOG_PREFIX_MAX	128	/* time, process name and pid, level */
#define LOG_HOLD_MAX	4096	/* PIPE_BUF: one write(2) the peers' lines
				 * cannot split */
_Static_assert(LOG_MSG_MAX + LOG_PREFIX_MAX <= LOG_HOLD_MAX,
    "a line fits in the held lines' buffer");

static const char *log_procname = "enid";
static bool log_to_stderr = true;
static enum log_level log_level = LOG_LVL_INFO;
static pid_t log_pid;			/* 0: before log_init */
static time_t log_when_sec = -1;	/* log_when holds this second */
static char log_when[16];		/* "HH:MM:SS" */
/* The one thread that holds its info and debug lines, and what it holds. */
static __thread bool log_held;
static char log_hold_buf[LOG_HOLD_MAX];
static size_t log_hold_len;

static const char *const level_names[] = {
	[LOG_LVL_ERROR] = "error",
	[LOG_LVL_WARN] = "warning",
	[LOG_LVL_INFO] = "info",
	[LOG_LVL_DEBUG] = "debug",
};

/* A forked child logs under its own pid (proc_spawn's, before exec), and
 * holds nothing: what the parent held is the parent's to write. */
static void
log_forked(void)
{
	log_pid = getpid();
	log_held = false;
	log_hold_len = 0;
}

void
log_init(const char *procname, bool to_stderr, enum log_level level)
{
	static bool atfork_set;

	if (!atfork_set && pthread_atfork(NULL, NULL, log_forked) == 0)
		atfork_set = true;
	log_pid = getpid();
	log_procname = procname;
	log_to_stderr = to_stderr;
	/* strftime reads the zone file on first use: before the sandbox. */
	tzset();
	log_level = level;
	if (!to_stderr)
		/* LOG_NDELAY: connect now, before the sandbox forbids it. */
		openlog(procname, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void
log_set_level(enum log_level level)
{
	log_level = level;
}

bool
log_uses_syslog(void)
{
	return !log_to_stderr;
}

enum log_level
log_get_level(void)
{
	return log_level;
}

int
log_level_parse(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
		if (strcmp(name, level_names[i]) == 0)
			return (int)i;
	if (strcmp(name, "warn") == 0)
		return LOG_LVL_WARN;
	return -1;
}

const char *
log_level_name(enum log_level level)
{
	return (unsigned)level <= LOG_LVL_DEBUG ? level_names[level] : "?";
}

static void
log_write(const char *buf, size_t len)
{
	/* A log that cannot be written has nowhere to say so. */
	ssize_t w = write(STDERR_FILENO, buf, len);

	(void)w;
}

void
log_flush(void)
{
	/* Only the holding thread touches what is held (another thread's
	 * fatal() runs the atexit call too). */
	if (!log_held || log_hold_len == 0)
		return;
	log_write(log_hold_buf, log_hold_len);
	log_hold_len = 0;
}

void
log_hold(bool on)
{
	static bool atexit_set;

	if (!on) {
		log_flush();
		log_held = false;
		return;
	}
	if (!log_to_stderr)
		return;
	if (!atexit_set && atexit(log_flush) == 0)
		atexit_set = true;
	log_held = true;
}

const char *
log_tame(const char *s, char *buf, size_t size)
{
	size_t i;

	if (size == 0)
		return buf;
	for (i = 0; s[i] != '\0' && i < size - 1; i++)
		buf[i] = s[i] >= ' ' && s[i] <= '~' ? s[i] : '?';
	buf[i] = '\0';
	return buf;
}

/* "HH:MM:SS.mmm proc[pid]: " and the level for stderr, into buf. */
static size_t
stderr_prefix(char *buf, size_t size, enum log_level level)
{
	struct timespec ts;
	struct tm tm;
	int n;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (ts.tv_sec != log_when_sec) {
		gmtime_r(&ts.tv_sec, &tm);
		strftime(log_when, sizeof(log_when), "%H:%M:%S", &tm);
		log_when_sec = ts.tv_sec;
	}
	n = snprintf(buf, size, "%s.%03ld %s[%d]: %s%s", log_when,
	    ts.tv_nsec / 1000000, log_procname,
	    (int)(log_pid != 0 ? log_pid : getpid()),
	    level <= LOG_LVL_WARN ? level_names[level] : "",
	    level <= LOG_LVL_WARN ? ": " : "");
	return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}

static void
vlog(enum log_level level, int saved_errno, const char *tag,
    const char *fmt, va_list ap)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	char line[LOG_MSG_MAX + LOG_PREFIX_MAX];
	char *msg;
	size_t off = 0, end;
	int n;

	if (level > log_level)
		return;
	if (log_to_stderr)
		off = stderr_prefix(line, LOG_PREFIX_MAX, level);
	/* The message, after its tag, is formatted once, in place after the
	 * prefix; tag, message and errno's text are cut at LOG_MSG_MAX - 1
	 * bytes. */
	msg = line + off;
	n = snprintf(msg, LOG_MSG_MAX, "%s", tag ? tag : "");
	end = n < 0 ? 0 : (size_t)n;
	if (end < LOG_MSG_MAX) {
		n = vsnprintf(msg + end, LOG_MSG_MAX - end, fmt, ap);
		if (n >= 0)
			end += (size_t)n;
	}
	if (end < LOG_MSG_MAX && saved_errno != 0) {
		n = snprintf(msg + end, LOG_MSG_MAX - end, ": %s",
		    strerror(saved_errno));
		if (n >= 0)
			end += (size_t)n;
	}
	if (end >= LOG_MSG_MAX)
		end = LOG_MSG_MAX - 1;		/* cut */

	if (log_to_stderr) {
		/* Whole lines per write, so the three processes' lines don't
		 * interleave within one. */
		size_t len = off + end + 1;

		msg[end] = '\n';
		if (log_held && level >= LOG_LVL_INFO) {
			if (log_hold_len + len > sizeof(log_hold_buf))
				log_flush();
			memcpy(log_hold_buf + log_hold_len, line, len);
			log_hold_len += len;
			return;
		}
		/* A warning or an error goes out now, after what is held. */
		if (log_held)
			log_flush();
		log_write(line, len);
	} else
		syslog(prio[level], "%s", msg);
}

#define LOG_FN(fn, level, with_errno, tag)				\
void									\
fn(const char *fmt, ...)						\
{									\
	int saved_errno = errno;					\
	va_list ap;							\
									\
	va_start(ap, fmt);						\
	vlog(level, with_errno ? saved_errno : 0, tag, fmt, ap);	\
	va_end(ap);							\
	errno = saved_errno;						\
}

LOG_FN(log_error, LOG_LVL_ERROR, 1, NULL)
LOG_FN(log_errorx, LOG_LVL_ERROR, 0, NULL)
LOG_FN(log_warn, LOG_LVL_WARN, 1, NULL)
LOG_FN(log_warnx, LOG_LVL_WARN, 0, NULL)
LOG_FN(log_info, LOG_LVL_INFO, 0, NULL)
LOG_FN(log_debug, LOG_LVL_DEBUG, 0, NULL)

void
log_security(const char *fmt, ...)
{
	enum log_level saved = log_level;
	va_list ap;

	/* Security events are never filtered out by the level. */
	if (log_level < LOG_LVL_WARN)
		log_level = LOG_LVL_WARN;
	va_start(ap, fmt);
	vlog(LOG_LVL_WARN, 0, "security: ", fmt, ap);
	va_end(ap);
	log_level = saved;
}

void
fatal(const char *fmt, ...)
{
	int saved_errno = errno;
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_LVL_ERROR, saved_errno, "fatal: ", fmt, ap);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_LVL_ERROR, 0, "fatal: ", fmt, ap);
	va_end(ap);
	exit(1);
}
