/*
 * Logging for all enid processes, named after err(3): the *_warn forms
 * append strerror(errno), the *x forms don't; fatal/fatalx log and exit 1.
 * To stderr in the foreground (-d), to syslog otherwise.  One line per
 * event, starting with the subsystem and naming the object it is about.
 */
#ifndef ENID_LOG_H
#define ENID_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

enum log_level {
	LOG_LVL_ERROR = 0,
	LOG_LVL_WARN,
	LOG_LVL_INFO,
	LOG_LVL_DEBUG,
};

#define LOG_PRINTF(a, b)	__attribute__((format(printf, a, b)))

void	log_init(const char *procname, bool to_stderr, enum log_level level);
void	log_set_level(enum log_level level);
enum log_level log_get_level(void);
bool	log_uses_syslog(void);
int	log_level_parse(const char *name);	/* -1 if unknown */
const char *log_level_name(enum log_level level);
/* A client's string as a log line may quote it: into buf, at most size - 1
 * bytes, anything outside printable ASCII as '?', so that it cannot end
 * the line or carry an escape sequence.  Returns buf. */
const char *log_tame(const char *s, char *buf, size_t size);

/*
 * log_hold(true): from the calling thread on (one thread at most), info
 * and debug lines to stderr are held, up to 4 KiB, and written together
 * by log_flush (the loop calls it before it waits, at exit too): a
 * write(2) per loop turn rather than per line.  Warnings and errors are
 * never held; each writes what is held before it, but a line another
 * thread writes goes ahead of what this one holds.  A crash may lose one
 * loop turn's info lines.  log_hold(false) writes them and stops.  No
 * effect with syslog.
 */
void	log_hold(bool on);
void	log_flush(void);

/* An error the process survives: "error: ..." (log_error adds errno). */
void	log_error(const char *fmt, ...) LOG_PRINTF(1, 2);
void	log_errorx(const char *fmt, ...) LOG_PRINTF(1, 2);
void	log_warn(const char *fmt, ...) LOG_PRINTF(1, 2);
void	log_warnx(const char *fmt, ...) LOG_PRINTF(1, 2);
void	log_info(const char *fmt, ...) LOG_PRINTF(1, 2);
void	log_debug(const char *fmt, ...) LOG_PRINTF(1, 2);
/* Security events: always logged, at warning level, tagged "security:". */
void	log_security(const char *fmt, ...) LOG_PRINTF(1, 2);
void	fatal(const char *fmt, ...) LOG_PRINTF(1, 2) __attribute__((noreturn));
void	fatalx(const char *fmt, ...) LOG_PRINTF(1, 2) __attribute__((noreturn));

#endif /* ENID_LOG_H */
