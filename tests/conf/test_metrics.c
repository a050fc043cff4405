/* tests/conf/test_metrics.c — the registry and its Prometheus text rendering. */
#include "conf/conf.h"

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static size_t count_substr(const char *s, const char *sub)
{
	size_t n = 0;
	for (const char *p = strstr(s, sub); p; p = strstr(p + 1, sub))
		n++;
	return n;
}

Test(conf, metrics_counter_and_gauge)
{
	struct metric *c = metric_get(METRIC_COUNTER, "sg_test_frames_total", "Frames seen.", "", NULL, 0);
	metric_add(c, 1);
	metric_add(c, 2.5);
	metric_add(c, -1); /* ignored: counters only go up */
	cr_expect(eq(dbl, metric_value(c), (double)(3.5)));
	cr_expect(eq(ptr, (void *)(metric_get(METRIC_COUNTER, "sg_test_frames_total", "other help", "", NULL, 0)), (void *)(c)),
		     "same family and labels: same handle");
	struct metric *g = metric_get(METRIC_GAUGE, "sg_test_held_bytes", "Bytes held.", "", NULL, 0);
	metric_set(g, 100);
	metric_add(g, -30);
	cr_expect(eq(dbl, metric_value(g), (double)(70)));
	char *r = metrics_render();
	cr_expect_str_eq(r,
			 "# HELP sg_test_frames_total Frames seen.\n"
			 "# TYPE sg_test_frames_total counter\n"
			 "sg_test_frames_total 3.5\n"
			 "# HELP sg_test_held_bytes Bytes held.\n"
			 "# TYPE sg_test_held_bytes gauge\n"
			 "sg_test_held_bytes 70\n");
	free(r);
}

Test(conf, metrics_histogram_buckets_are_cumulative)
{
	const double b[] = { 1, 5, 10, 2.5e6 };
	struct metric *h = metric_get(METRIC_HISTOGRAM, "sg_test_latency_seconds", "Latency.", "mirror=\"dr-east\"", b, 4);
	metric_observe(h, 0.5);
	metric_observe(h, 5); /* le is inclusive */
	metric_observe(h, 7);
	metric_observe(h, 3e6);
	char *r = metrics_render();
	cr_expect_str_eq(r,
			 "# HELP sg_test_latency_seconds Latency.\n"
			 "# TYPE sg_test_latency_seconds histogram\n"
			 "sg_test_latency_seconds_bucket{mirror=\"dr-east\",le=\"1\"} 1\n"
			 "sg_test_latency_seconds_bucket{mirror=\"dr-east\",le=\"5\"} 2\n"
			 "sg_test_latency_seconds_bucket{mirror=\"dr-east\",le=\"10\"} 3\n"
			 "sg_test_latency_seconds_bucket{mirror=\"dr-east\",le=\"2500000\"} 3\n"
			 "sg_test_latency_seconds_bucket{mirror=\"dr-east\",le=\"+Inf\"} 4\n"
			 "sg_test_latency_seconds_sum{mirror=\"dr-east\"} 3000012.5\n"
			 "sg_test_latency_seconds_count{mirror=\"dr-east\"} 4\n");
	free(r);
}

Test(conf, metrics_histogram_without_labels)
{
	const double b[] = { 0.1 };
	struct metric *h = metric_get(METRIC_HISTOGRAM, "sg_test_h", "", "", b, 1);
	metric_observe(h, 0.1);
	char *r = metrics_render();
	cr_expect_str_eq(r,
			 "# TYPE sg_test_h histogram\n"
			 "sg_test_h_bucket{le=\"0.1\"} 1\n"
			 "sg_test_h_bucket{le=\"+Inf\"} 1\n"
			 "sg_test_h_sum 0.1\n"
			 "sg_test_h_count 1\n");
	free(r);
}

Test(conf, metrics_labels_escaped_and_help_once)
{
	char esc[128], labels[160];
	cr_expect_str_eq(metric_label_escape(esc, sizeof(esc), "a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
	cr_expect_str_eq(metric_label_escape(esc, 4, "abcdef"), "abc", "truncated to fit");
	cr_expect_str_eq(metric_label_escape(esc, 3, "a\"b"), "a", "never half an escape");
	snprintf(labels, sizeof(labels), "topic=\"%s\"", metric_label_escape(esc, sizeof(esc), "we\"ird\\"));
	metric_add(metric_get(METRIC_COUNTER, "sg_test_lbl_total", "Help with \\ and\nnewline.", labels, NULL, 0), 1);
	metric_add(metric_get(METRIC_COUNTER, "sg_test_lbl_total", NULL, "topic=\"plain\"", NULL, 0), 2);
	char *r = metrics_render();
	cr_expect_str_eq(r,
			 "# HELP sg_test_lbl_total Help with \\\\ and\\nnewline.\n"
			 "# TYPE sg_test_lbl_total counter\n"
			 "sg_test_lbl_total{topic=\"we\\\"ird\\\\\"} 1\n"
			 "sg_test_lbl_total{topic=\"plain\"} 2\n");
	free(r);
}

Test(conf, metrics_family_overflow_is_capped)
{
	char labels[64];
	struct metric *first = NULL;
	for (int i = 0; i < 1005; i++) {
		snprintf(labels, sizeof(labels), "partition=\"%d\"", i);
		struct metric *m = metric_get(METRIC_COUNTER, "sg_test_fail_total", "Failures.", labels, NULL, 0);
		if (i == 0)
			first = m;
		metric_add(m, 1);
	}
	/* an existing series still resolves to itself past the cap */
	cr_expect(eq(ptr, (void *)(metric_get(METRIC_COUNTER, "sg_test_fail_total", NULL, "partition=\"0\"", NULL, 0)), (void *)(first)));
	char *r = metrics_render();
	cr_expect(eq(sz, (size_t)(count_substr(r, "\nsg_test_fail_total{")), (size_t)(1001)), "1000 series + the overflow series");
	cr_expect(strstr(r, "sg_test_fail_total{partition=\"999\"} 1\n") != NULL);
	cr_expect(strstr(r, "partition=\"1000\"") == NULL);
	cr_expect(strstr(r, "sg_test_fail_total{overflow=\"true\"} 5\n") != NULL);
	cr_expect(eq(sz, (size_t)(count_substr(r, "# TYPE sg_test_fail_total")), (size_t)(1)));
	free(r);
}

Test(conf, metrics_misuse_goes_to_a_sink)
{
	conf_log_set_level(LOG_ERROR - 1 < 0 ? LOG_ERROR : LOG_ERROR);
	struct metric *c = metric_get(METRIC_COUNTER, "sg_test_x_total", "X.", "", NULL, 0);
	metric_add(c, 1);
	struct metric *clash = metric_get(METRIC_GAUGE, "sg_test_x_total", "X.", "", NULL, 0);
	cr_assert_not_null(clash);
	metric_set(clash, 42);
	struct metric *bad = metric_get(METRIC_COUNTER, "9bad name", "", "", NULL, 0);
	cr_assert_not_null(bad);
	metric_add(bad, 1);
	struct metric *nob = metric_get(METRIC_HISTOGRAM, "sg_test_nobuckets", "", "", NULL, 0);
	metric_observe(nob, 1);
	char *r = metrics_render();
	cr_expect_str_eq(r, "# HELP sg_test_x_total X.\n# TYPE sg_test_x_total counter\nsg_test_x_total 1\n");
	free(r);
}

#define NT 4
#define NADD 100000

static void *adder(void *arg)
{
	struct metric **m = arg;
	for (int i = 0; i < NADD; i++) {
		metric_add(m[0], 1);
		metric_observe(m[1], (double)(i % 10));
	}
	return NULL;
}

Test(conf, metrics_updates_are_atomic)
{
	const double b[] = { 4.5 };
	struct metric *m[2] = {
		metric_get(METRIC_COUNTER, "sg_test_par_total", "", "", NULL, 0),
		metric_get(METRIC_HISTOGRAM, "sg_test_par_h", "", "", b, 1),
	};
	pthread_t th[NT];
	for (int t = 0; t < NT; t++)
		pthread_create(&th[t], NULL, adder, m);
	for (int t = 0; t < NT; t++)
		pthread_join(th[t], NULL);
	cr_expect(eq(dbl, metric_value(m[0]), (double)((double)NT * NADD)));
	char *r = metrics_render();
	cr_expect(strstr(r, "sg_test_par_h_bucket{le=\"4.5\"} 200000\n") != NULL, "%s", r);
	cr_expect(strstr(r, "sg_test_par_h_count 400000\n") != NULL, "%s", r);
	cr_expect(strstr(r, "sg_test_par_h_sum 1800000\n") != NULL, "%s", r);
	free(r);
}

static const char *find_promtool(void)
{
	static char path[512];
	const char *env = getenv("PATH");
	char *dirs = strdup(env ? env : "/usr/bin:/bin");
	const char *found = NULL;
	for (char *save, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		snprintf(path, sizeof(path), "%s/promtool", d);
		if (access(path, X_OK) == 0) {
			found = path;
			break;
		}
	}
	free(dirs);
	return found;
}

Test(conf, metrics_pass_promtool_check)
{
	const char *promtool = find_promtool();
	if (!promtool)
		cr_skip_test("promtool not installed");
	const double b[] = { 0.001, 0.01, 0.1, 1 };
	char esc[64], labels[128];
	metric_add(metric_get(METRIC_COUNTER, "sg_test_frames_total", "Frames by API.", "api_key=\"Produce\"", NULL, 0), 3);
	metric_add(metric_get(METRIC_COUNTER, "sg_test_frames_total", "Frames by API.", "api_key=\"Fetch\"", NULL, 0), 1);
	metric_set(metric_get(METRIC_GAUGE, "sg_test_held_bytes", "Held bytes.", "", NULL, 0), -2.5);
	snprintf(labels, sizeof(labels), "mirror=\"m\",reason=\"%s\"", metric_label_escape(esc, sizeof(esc), "a \"q\"\\\nz"));
	metric_add(metric_get(METRIC_COUNTER, "sg_test_fail_total", "Failures\nby reason.", labels, NULL, 0), 1);
	struct metric *h = metric_get(METRIC_HISTOGRAM, "sg_test_latency_seconds", "Latency.", "mirror=\"m\"", b, 4);
	metric_observe(h, 0.005);
	metric_observe(h, 2);
	for (int i = 0; i < 1002; i++) {
		snprintf(labels, sizeof(labels), "partition=\"%d\"", i);
		metric_add(metric_get(METRIC_COUNTER, "sg_test_cap_total", "Capped.", labels, NULL, 0), 1);
	}
	char *r = metrics_render();
	cr_assert_not_null(r);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "%s check metrics", promtool);
	FILE *p = popen(cmd, "w");
	cr_assert_not_null(p);
	fputs(r, p);
	int st = pclose(p);
	bool passed = WIFEXITED(st) && WEXITSTATUS(st) == 0;
	cr_expect(passed, "promtool check metrics failed (status %d) on:\n%s", st, r);
	free(r);
}

Test(conf, metrics_family_get_labels_each_series_in_order)
{
	static const char *const values[] = { "b\"x", "a" };
	struct metric *out[2];
	metric_family_get(METRIC_COUNTER, "sg_test_family_total", "Family.", "api=\"Fetch\"", "decision", values, 2,
			  out);
	metric_add(out[0], 1);
	metric_add(out[1], 2);
	cr_expect(eq(ptr, (void *)out[1], (void *)metric_get(METRIC_COUNTER, "sg_test_family_total", NULL,
							       "api=\"Fetch\",decision=\"a\"", NULL, 0)));
	struct metric *bare[1];
	metric_family_get(METRIC_GAUGE, "sg_test_bare", "Bare.", NULL, "k", values + 1, 1, bare);
	metric_set(bare[0], 7);
	char *r = metrics_render();
	cr_expect_str_eq(r,
			 "# HELP sg_test_family_total Family.\n"
			 "# TYPE sg_test_family_total counter\n"
			 "sg_test_family_total{api=\"Fetch\",decision=\"b\\\"x\"} 1\n"
			 "sg_test_family_total{api=\"Fetch\",decision=\"a\"} 2\n"
			 "# HELP sg_test_bare Bare.\n"
			 "# TYPE sg_test_bare gauge\n"
			 "sg_test_bare{k=\"a\"} 7\n");
	free(r);
}

static struct metric *defs_a, *defs_b;
static const struct metric_def test_defs[] = {
	{ &defs_a, METRIC_GAUGE, "sg_test_defs_a", "A now." },
	{ &defs_b, METRIC_COUNTER, "sg_test_defs_b_total", "B seen." },
};

Test(conf, metrics_defs_get_registers_once)
{
	METRIC_DEFS_GET(test_defs);
	struct metric *a = defs_a;
	cr_assert(ne(ptr, (void *)a, NULL));
	metric_set(defs_a, 3);
	metric_add(defs_b, 1);
	defs_b = NULL;
	METRIC_DEFS_GET(test_defs); /* defs_a is set: nothing is looked up again */
	cr_expect(eq(ptr, (void *)defs_a, (void *)a));
	cr_expect(eq(ptr, (void *)defs_b, NULL));
	char *r = metrics_render();
	cr_expect_str_eq(r,
			 "# HELP sg_test_defs_a A now.\n"
			 "# TYPE sg_test_defs_a gauge\n"
			 "sg_test_defs_a 3\n"
			 "# HELP sg_test_defs_b_total B seen.\n"
			 "# TYPE sg_test_defs_b_total counter\n"
			 "sg_test_defs_b_total 1\n");
	free(r);
}
