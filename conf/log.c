/* log.c — leveled key=value log lines, one write(2) per line. */
#include "conf/conf.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static _Atomic int log_level = LOG_INFO;
static _Atomic int log_fd = 2;
/* write(2) of a line larger than PIPE_BUF may be split by the kernel; the
 * mutex keeps whole lines together across threads anyway. */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

static const char *const level_names[LOG_LEVEL_COUNT] = { "error", "warn", "info", "debug" };
static const char *const level_upper[LOG_LEVEL_COUNT] = { "ERROR", "WARN", "INFO", "DEBUG" };

void conf_log_set_level(enum log_level lvl)
{
	if ((int)lvl >= 0 && lvl < LOG_LEVEL_COUNT)
		atomic_store_explicit(&log_level, (int)lvl, memory_order_relaxed);
}

enum log_level conf_log_get_level(void)
{
	return (enum log_level)atomic_load_explicit(&log_level, memory_order_relaxed);
}

int conf_log_level_parse(const char *s)
{
	for (int i = 0; s && i < LOG_LEVEL_COUNT; i++)
		if (strcmp(s, level_names[i]) == 0)
			return i;
	return -1;
}

const char *conf_log_level_str(enum log_level lvl)
{
	return ((int)lvl >= 0 && lvl < LOG_LEVEL_COUNT) ? level_names[lvl] : "?";
}

void conf_log_set_fd(int fd)
{
	atomic_store(&log_fd, fd);
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return; /* nowhere to report a failing log */
		}
		p += w;
		n -= (size_t)w;
	}
}

/* Replace control characters (a caller's value with a newline) so one event
 * stays one line. */
static void one_line(char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 && s[i] != '\t')
			s[i] = ' ';
}

void conf_log(enum log_level lvl, const char *event, const char *fmt, ...)
{
	if ((int)lvl < 0 || lvl >= LOG_LEVEL_COUNT || (int)lvl > atomic_load_explicit(&log_level, memory_order_relaxed))
		return;

	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);

	char stackbuf[2048];
	char *buf = stackbuf;
	int head = snprintf(buf, sizeof(stackbuf), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s",
			    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			    tm.tm_sec, ts.tv_nsec / 1000000L, level_upper[lvl], event ? event : "-");
	if (head < 0 || (size_t)head >= sizeof(stackbuf) - 2)
		head = (int)sizeof(stackbuf) - 2; /* absurd event name: truncate */

	va_list ap;
	va_start(ap, fmt);
	va_list ap2;
	va_copy(ap2, ap);
	int body = (fmt && *fmt) ? vsnprintf(NULL, 0, fmt, ap) : 0;
	va_end(ap);
	if (body < 0)
		body = 0;
	size_t need = (size_t)head + 1 + (size_t)body + 2;
	if (need > sizeof(stackbuf)) {
		char *big = malloc(need);
		if (big) {
			memcpy(big, stackbuf, (size_t)head);
			buf = big;
		} else {
			body = (int)(sizeof(stackbuf) - (size_t)head - 3); /* truncate */
			need = sizeof(stackbuf);
		}
	}
	size_t len = (size_t)head;
	if (body > 0 && fmt) {
		buf[len++] = ' ';
		vsnprintf(buf + len, (size_t)body + 1, fmt, ap2);
		one_line(buf + len, (size_t)body);
		len += (size_t)body;
	}
	va_end(ap2);
	buf[len++] = '\n';

	pthread_mutex_lock(&log_mu);
	write_all(atomic_load(&log_fd), buf, len);
	pthread_mutex_unlock(&log_mu);
	if (buf != stackbuf)
		free(buf);
}
