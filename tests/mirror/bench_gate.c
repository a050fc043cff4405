/*
 * tests/mirror/bench_gate.c — prints what the gate costs on the loop thread:
 * registering a held part and releasing it on a progress report, with N
 * waits held at once on one partition of one mirror; and, with `partitions`,
 * the loop's share at scale: one topic of P partitions gated by M mirrors —
 * the cost of one background round (a report with source HW for every
 * (mirror, partition)), of a held wait released by its reports, and the
 * memory per (mirror, partition) state. No pass/fail.
 *   bench_mirror_gate [N]
 *   bench_mirror_gate partitions P [M]
 */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conf/conf.h"
#include "mirror/mirror.h"

static long calls;
static void on_done(void *arg, struct mirror_wait_part *parts, size_t nparts) { calls++; }

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* Deliver everything queued (the bridge hands over 4,096 messages per loop round). */
static void pump(struct event_base *b)
{
	for (int i = 0; i < 400; i++)
		event_base_loop(b, EVLOOP_NONBLOCK);
}

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "VmRSS:", 6) == 0)
			kib = atol(line + 6);
	if (f)
		fclose(f);
	return kib;
}

/* One topic of `np` partitions gated by `nm` mirrors, progress injected. */
static int bench_partitions(long np, int nm)
{
	static char *topics[] = {"bench"};
	static char names[8][16];
	struct conf_mirror m[8];
	memset(m, 0, sizeof(m));
	for (int i = 0; i < nm; i++) {
		snprintf(names[i], sizeof(names[i]), "dr%d", i);
		m[i] = (struct conf_mirror){.name = names[i], .bootstrap = (char *)"x:1",
					    .topic_name = (char *)"{topic}", .poll_interval_ms = 5,
					    .sync_topics = topics, .nsync_topics = 1};
	}
	struct conf c = {.mirrors = m, .nmirrors = (size_t)nm};
	conf_log_set_level(LOG_WARN);
	struct event_base *b = event_base_new();
	long rss0 = rss_kib();
	struct mirror_gate *g = mirror_gate_new_ex(b, &c, MIRROR_GATE_NO_WORKERS);
	struct mirror_report r = {.topic = "bench", .npartitions = (int32_t)np, .progress = 0, .source_hw = 0,
				  .isr = 3, .min_isr = 2};
	/* a background round per mirror: every partition, with source HW */
	double round_ns = 0;
	for (int round = 0; round < 3; round++) {
		double t0 = now_ns();
		for (int i = 0; i < nm; i++) {
			r.mirror = names[i];
			for (long p = 0; p < np; p++) {
				r.partition = (int32_t)p;
				r.progress = r.source_hw = r.source_hw_after = round;
				mirror_gate_inject_report(g, &r);
			}
		}
		pump(b);
		round_ns = now_ns() - t0;
	}
	if (!mirror_gate_is_gated(g, "bench")) {
		fprintf(stderr, "not promoted\n");
		return 1;
	}
	long rss1 = rss_kib();
	/* held waits, one per partition, each released by one report per mirror */
	long nw = np < 20000 ? np : 20000;
	struct mirror_wait_part *parts = calloc((size_t)nw, sizeof(*parts));
	int64_t deadline = mirror_now_ms() + 600000;
	double t0 = now_ns();
	for (long i = 0; i < nw; i++) {
		parts[i] = (struct mirror_wait_part){.topic = "bench", .partition = (int32_t)(i * 7 % np),
						     .last_offset = 2};
		if (!mirror_gate_wait(g, &parts[i], 1, deadline, on_done, NULL))
			abort();
	}
	double t1 = now_ns();
	r.source_hw = -1;
	r.isr = r.min_isr = -1;
	for (int i = 0; i < nm; i++) {
		r.mirror = names[i];
		for (long i2 = 0; i2 < nw; i2++) {
			r.partition = parts[i2].partition;
			r.progress = r.source_hw_after = 3;
			mirror_gate_inject_report(g, &r);
		}
	}
	pump(b);
	double t2 = now_ns();
	printf("%ld partitions x %d mirrors (%ld pairs)\n", np, nm, np * nm);
	printf("background round (a report with source HW per pair): %.2f ms, %.0f ns/pair\n", round_ns / 1e6,
	       round_ns / (double)(np * nm));
	printf("memory per (mirror, partition): %.0f B (RSS %ld -> %ld KiB)\n",
	       (double)(rss1 - rss0) * 1024 / (double)(np * nm), rss0, rss1);
	printf("held wait: register %.0f ns, release by %d reports %.0f ns (per wait, callbacks included)\n",
	       (t1 - t0) / nw, nm, (t2 - t1) / nw);
	printf("callbacks: %ld of %ld\n", calls, nw);
	mirror_gate_free(g);
	event_base_free(b);
	free(parts);
	return calls == nw ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc > 2 && strcmp(argv[1], "partitions") == 0)
		return bench_partitions(atol(argv[2]), argc > 3 ? atoi(argv[3]) : 2);
	long n = argc > 1 ? atol(argv[1]) : 100000;
	static char *topics[] = {"bench"};
	struct conf_mirror m = {.name = (char *)"dr", .bootstrap = (char *)"x:1", .topic_name = (char *)"{topic}",
				.poll_interval_ms = 5, .sync_topics = topics, .nsync_topics = 1};
	struct conf c = {.mirrors = &m, .nmirrors = 1};
	conf_log_set_level(LOG_WARN);
	struct event_base *b = event_base_new();
	struct mirror_gate *g = mirror_gate_new_ex(b, &c, MIRROR_GATE_NO_WORKERS);
	struct mirror_report r = {.mirror = "dr", .topic = "bench", .partition = 0, .npartitions = 1,
				  .progress = 0, .source_hw = 0, .isr = 3, .min_isr = 2};
	mirror_gate_inject_report(g, &r);
	pump(b);
	if (!mirror_gate_is_gated(g, "bench")) {
		fprintf(stderr, "not promoted\n");
		return 1;
	}
	struct mirror_wait_part *parts = calloc((size_t)n, sizeof(*parts));
	int64_t deadline = mirror_now_ms() + 600000;
	double t0 = now_ns();
	for (long i = 0; i < n; i++) {
		parts[i].topic = "bench";
		parts[i].last_offset = (i * 7919) % n; /* not in order */
		if (!mirror_gate_wait(g, &parts[i], 1, deadline, on_done, NULL))
			abort();
	}
	double t1 = now_ns();
	r.progress = r.source_hw_after = n;
	r.source_hw = -1;
	mirror_gate_inject_report(g, &r);
	pump(b);
	double t2 = now_ns();
	printf("held %ld waits on one partition\n", n);
	printf("register: %.0f ns/wait\n", (t1 - t0) / n);
	printf("release (one report frees all, callbacks included): %.0f ns/wait\n", (t2 - t1) / n);
	printf("callbacks: %ld\n", calls);
	mirror_gate_free(g);
	event_base_free(b);
	free(parts);
	return calls == n ? 0 : 1;
}
