/*
 * tests/mirror/bench_gate.c — prints what the gate costs on the loop thread:
 * registering a held part and releasing it on a progress report, with N
 * waits held at once on one partition of one mirror. No pass/fail.
 *   bench_mirror_gate [N]
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

static void pump(struct event_base *b)
{
	for (int i = 0; i < 4; i++)
		event_base_loop(b, EVLOOP_NONBLOCK);
}

int main(int argc, char **argv)
{
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
	r.progress = n;
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
