/* tests/conf/test_log.c — log line format, threshold, whole lines across threads. */
#include "conf/conf.h"

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <pthread.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Log into a temp file; returns its fd (also the log fd). */
static int capture(void)
{
	char path[] = "/tmp/sglog-XXXXXX";
	int fd = mkstemp(path);
	cr_assert(ge(i64, (int64_t)(fd), (int64_t)(0)));
	unlink(path);
	conf_log_set_fd(fd);
	return fd;
}

static char *captured(int fd)
{
	off_t n = lseek(fd, 0, SEEK_END);
	char *buf = calloc(1, (size_t)n + 1);
	cr_assert(eq(i64, (int64_t)(pread(fd, buf, (size_t)n, 0)), (int64_t)(n)));
	return buf;
}

static bool matches(const char *re, const char *s)
{
	regex_t r;
	cr_assert(eq(i64, (int64_t)(regcomp(&r, re, REG_EXTENDED | REG_NOSUB)), (int64_t)(0)));
	bool ok = regexec(&r, s, 0, NULL, 0) == 0;
	regfree(&r);
	return ok;
}

#define TS "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z"

Test(conf, log_line_format)
{
	int fd = capture();
	LOG_W("mirror_sync_partition_failed", "mirror=%s topic=%s partition=%d reason=\"%s\"", "dr-east", "orders", 3,
	      "isr below min");
	conf_log(LOG_ERROR, "bare", "%s", "");
	char *out = captured(fd);
	cr_expect(matches("^" TS " WARN mirror_sync_partition_failed mirror=dr-east topic=orders partition=3 "
			  "reason=\"isr below min\"\n" TS " ERROR bare\n$", out),
		  "got: %s", out);
	free(out);
	close(fd);
}

Test(conf, log_threshold)
{
	int fd = capture();
	cr_expect(eq(i64, (int64_t)(conf_log_get_level()), (int64_t)(LOG_INFO)), "default level");
	LOG_D("hidden_debug", "a=1");
	LOG_I("shown_info", "a=2");
	conf_log_set_level(LOG_WARN);
	LOG_I("hidden_info", "a=3");
	LOG_W("shown_warn", "a=4");
	conf_log_set_level(LOG_DEBUG);
	LOG_D("shown_debug", "a=5");
	char *out = captured(fd);
	cr_expect(strstr(out, "hidden") == NULL, "got: %s", out);
	cr_expect(matches(" INFO shown_info a=2\n.* WARN shown_warn a=4\n.* DEBUG shown_debug a=5\n$", out), "got: %s", out);
	free(out);
	close(fd);
}

Test(conf, log_level_names)
{
	cr_expect(eq(i64, (int64_t)(conf_log_level_parse("error")), (int64_t)(LOG_ERROR)));
	cr_expect(eq(i64, (int64_t)(conf_log_level_parse("warn")), (int64_t)(LOG_WARN)));
	cr_expect(eq(i64, (int64_t)(conf_log_level_parse("info")), (int64_t)(LOG_INFO)));
	cr_expect(eq(i64, (int64_t)(conf_log_level_parse("debug")), (int64_t)(LOG_DEBUG)));
	cr_expect(eq(i64, (int64_t)(conf_log_level_parse("INFO")), (int64_t)(-1)));
	cr_expect(eq(i64, (int64_t)(conf_log_level_parse("trace")), (int64_t)(-1)));
	cr_expect(eq(i64, (int64_t)(conf_log_level_parse(NULL)), (int64_t)(-1)));
	for (int l = 0; l < LOG_LEVEL_COUNT; l++)
		cr_expect(eq(i64, (int64_t)(conf_log_level_parse(conf_log_level_str((enum log_level)l))), (int64_t)(l)));
	cr_expect_str_eq(conf_log_level_str(LOG_LEVEL_COUNT), "?");
}

Test(conf, log_value_newlines_stay_on_one_line)
{
	int fd = capture();
	LOG_I("multi", "reason=\"%s\"", "line1\nline2\r\n");
	char *out = captured(fd);
	cr_expect(matches("^" TS " INFO multi reason=\"line1 line2  \"\n$", out), "got: %s", out);
	free(out);
	close(fd);
}

#define NTHREADS 8
#define NLINES 300
#define LONG 5000 /* > PIPE_BUF and > the stack buffer */

static void *writer(void *arg)
{
	char *fill = malloc(LONG + 1);
	memset(fill, 'a' + (int)(intptr_t)arg, LONG);
	fill[LONG] = 0;
	for (int i = 0; i < NLINES; i++)
		LOG_I("burst", "t=%d i=%d fill=%s end=1", (int)(intptr_t)arg, i, fill);
	free(fill);
	return NULL;
}

Test(conf, log_lines_never_interleave)
{
	int fd = capture();
	pthread_t th[NTHREADS];
	for (intptr_t t = 0; t < NTHREADS; t++)
		pthread_create(&th[t], NULL, writer, (void *)t);
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	char *out = captured(fd);
	size_t lines = 0;
	for (char *line = out, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
		*nl = 0;
		int t = -1, i = -1;
		char *fill = strstr(line, "fill=");
		cr_assert(fill && sscanf(strstr(line, "t="), "t=%d i=%d", &t, &i) == 2, "bad line %zu", lines);
		fill += 5;
		for (int k = 0; k < LONG; k++)
			cr_assert(eq(i64, (int64_t)(fill[k]), (int64_t)('a' + t)), "line %zu mixed at %d", lines, k);
		cr_assert_str_eq(fill + LONG, " end=1");
		lines++;
	}
	cr_expect(eq(i64, (int64_t)(lines), (int64_t)(NTHREADS * NLINES)));
	free(out);
	close(fd);
}
