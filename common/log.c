/*
 * Logging: see log.h.  The process name and level are the only state, set
 * once at start (and the level by the operator later); beside them, for
 * stderr, the process id and the last second's time of day, kept so that
 * a line costs one formatting and one write(2) (the broker logs a line
 * per pod added and released, on its hot path).
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

static const char *log_procname = "enid";
static bool log_to_stderr = true;
static enum log_level log_level = LOG_LVL_INFO;
static pid_t log_pid;			/* 0: before log_init */
static time_t log_when_sec = -1;	/* log_when holds this second */
static char log_when[16];		/* "HH:MM:SS" */

static const char *const level_names[] = {
	[LOG_LVL_ERROR] = "error",
	[LOG_LVL_WARN] = "warning",
	[LOG_LVL_INFO] = "info",
	[LOG_LVL_DEBUG] = "debug",
};

/* A forked child logs under its own pid (proc_spawn's, before exec). */
static void
log_forked(void)
{
	log_pid = getpid();
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
		/* One write per line so the three processes don't
		 * interleave. */
		ssize_t w;

		msg[end] = '\n';
		/* A log that cannot be written has nowhere to say so. */
		w = write(STDERR_FILENO, line, off + end + 1);
		(void)w;
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
