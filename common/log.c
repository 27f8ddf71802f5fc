/*
 * Logging: see log.h.  The process name and level are the only state, set
 * once at start (and the level by the operator later).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static const char *log_procname = "enid";
static bool log_to_stderr = true;
static enum log_level log_level = LOG_LVL_INFO;

static const char *const level_names[] = {
	[LOG_LVL_ERROR] = "error",
	[LOG_LVL_WARN] = "warning",
	[LOG_LVL_INFO] = "info",
	[LOG_LVL_DEBUG] = "debug",
};

void
log_init(const char *procname, bool to_stderr, enum log_level level)
{
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

static void
vlog(enum log_level level, int saved_errno, const char *tag,
    const char *fmt, va_list ap)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	char msg[1024];
	int n;

	if (level > log_level)
		return;
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (n >= 0 && saved_errno != 0 && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - n, ": %s", strerror(saved_errno));

	if (log_to_stderr) {
		struct timespec ts;
		struct tm tm;
		char when[32];

		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
		/* One write per line so the three processes don't interleave. */
		dprintf(STDERR_FILENO, "%s.%03ld %s[%d]: %s%s%s%s\n", when,
		    ts.tv_nsec / 1000000, log_procname, (int)getpid(),
		    level <= LOG_LVL_WARN ? level_names[level] : "",
		    level <= LOG_LVL_WARN ? ": " : "", tag ? tag : "", msg);
	} else
		syslog(prio[level], "%s%s", tag ? tag : "", msg);
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
