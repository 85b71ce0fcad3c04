/* log.h - the daemon's log: one line per message on stderr,
 * "2026-11-26T01:02:03.456Z info  message", with secret-looking values
 * redacted (src/util/redact.h rules applied word by word).  Under systemd
 * stderr is the journal; `gpumod serve` without --foreground points it
 * at <log_dir>/gpumod.log. */
#ifndef GPUMOD_LOG_H
#define GPUMOD_LOG_H

typedef enum { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR } log_level;

/* Messages below this level are dropped (default LOG_INFO). */
void log_set_level(log_level lv);

void log_msg(log_level lv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

/* The message as it would be logged, without timestamp and level, with
 * secrets redacted and control characters escaped.  Caller frees. */
char *log_clean(const char *msg);

#endif
