/*
 * tests/bench/scale_bed.c — syncgate at scale with librdkafka mock clusters
 * standing in for Kafka, so that syncgate, not the brokers, is what is
 * measured. One source mock and 1–3 destination mocks (one broker each),
 * one topic of P partitions on each, the real syncgate binary in front of
 * the source (one mirror per destination, offsets preserved, the topic
 * SYNC), a paced acks=all producer through syncgate and a copier playing the
 * mirror (scale_bed_load.c). Prints figures; fails only when the bed itself
 * cannot run (exit 1) or syncgate stops (exit 2).
 *
 *   scale_bed [--partitions P] [--mirrors M] [--rate MSG_S] [--idle-s S]
 *             [--direct-s S] [--warm-s S] [--load-s S] [--delay-ms MS]
 *             [--linger-ms MS] [--record-bytes B] [--progress poll|tail] [--syncgate PATH]
 *             [--dir DIR] [--max-s S] [--md]
 *
 * --md adds two markdown table rows at the end ("| idle | ..." and
 * "| load | ..."), for tests/bench/scale_bed.sh.
 */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/bench/scale_bed.h"

struct opts {
	int partitions, mirrors, rate, record_bytes, delay_ms, linger_ms, max_s;
	double idle_s, direct_s, warm_s, load_s;
	const char *progress, *syncgate, *dir;
	bool md;
};

static struct sg_proc sg;

static void on_alarm(int sig)
{
	static const char msg[] = "scale_bed: --max-s reached: stopping syncgate and exiting\n";
	if (write(2, msg, sizeof(msg) - 1) < 0) {
		/* nothing to do */
	}
	if (sg.pid > 0)
		kill(sg.pid, SIGKILL);
	_exit(3);
}

static void usage(void)
{
	fprintf(stderr, "usage: scale_bed [--partitions P] [--mirrors 1-3] [--rate MSG_S] [--idle-s S] "
			"[--direct-s S] [--warm-s S] [--load-s S] [--delay-ms MS] [--linger-ms MS] [--record-bytes B] "
			"[--progress poll|tail] [--syncgate PATH] [--dir DIR] [--max-s S] [--md]\n");
	exit(1);
}

static void parse(int argc, char **argv, struct opts *o)
{
	*o = (struct opts){.partitions = 10000, .mirrors = 1, .rate = 5000, .record_bytes = 100, .linger_ms = 5,
			   .max_s = 115, .idle_s = 10, .direct_s = 4, .warm_s = 3, .load_s = 15,
			   .progress = "poll", .syncgate = "build/proxy/syncgate", .dir = "/tmp/sg-scale-bed"};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--md")) {
			o->md = true;
			continue;
		}
		if (!v)
			usage();
		i++;
		if (!strcmp(a, "--partitions"))
			o->partitions = atoi(v);
		else if (!strcmp(a, "--mirrors"))
			o->mirrors = atoi(v);
		else if (!strcmp(a, "--rate"))
			o->rate = atoi(v);
		else if (!strcmp(a, "--idle-s"))
			o->idle_s = atof(v);
		else if (!strcmp(a, "--direct-s"))
			o->direct_s = atof(v);
		else if (!strcmp(a, "--warm-s"))
			o->warm_s = atof(v);
		else if (!strcmp(a, "--load-s"))
			o->load_s = atof(v);
		else if (!strcmp(a, "--delay-ms"))
			o->delay_ms = atoi(v);
		else if (!strcmp(a, "--linger-ms"))
			o->linger_ms = atoi(v);
		else if (!strcmp(a, "--record-bytes"))
			o->record_bytes = atoi(v);
		else if (!strcmp(a, "--progress"))
			o->progress = v;
		else if (!strcmp(a, "--syncgate"))
			o->syncgate = v;
		else if (!strcmp(a, "--dir"))
			o->dir = v;
		else if (!strcmp(a, "--max-s"))
			o->max_s = atoi(v);
		else
			usage();
	}
	if (o->partitions < 1 || o->mirrors < 1 || o->mirrors > BED_MAX_MIRRORS || o->rate < 1 ||
	    o->record_bytes < 1 || (strcmp(o->progress, "poll") && strcmp(o->progress, "tail")))
		usage();
}

static void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	nanosleep(&ts, NULL);
}

static double now_s(void)
{
	return (double)bed_now_ns() / 1e9;
}

/* What is sampled at the start and end of a window. */
struct snap {
	double t, cpu, bed_cpu;
	long rss;
	double demand[BED_MAX_MIRRORS], bg[BED_MAX_MIRRORS], src[BED_MAX_MIRRORS];
	struct sg_hist release, held;
	bool ok;
};

static void take(struct snap *s, int mirrors)
{
	memset(s, 0, sizeof(*s));
	s->t = now_s();
	s->cpu = sg_cpu_s(sg.pid);
	s->bed_cpu = sg_cpu_s(getpid());
	s->rss = sg_rss_kib(sg.pid);
	char *m = sg_http_get(sg.admin_port, "/metrics");
	if (!m)
		return;
	for (int i = 0; i < mirrors; i++) {
		char lb[128];
		snprintf(lb, sizeof(lb), "mirror=\"d%d\",kind=\"demand\"", i + 1);
		s->demand[i] = sg_metric_sum(m, "syncgate_mirror_progress_requests_total", lb);
		snprintf(lb, sizeof(lb), "mirror=\"d%d\",kind=\"background\"", i + 1);
		s->bg[i] = sg_metric_sum(m, "syncgate_mirror_progress_requests_total", lb);
		snprintf(lb, sizeof(lb), "mirror=\"d%d\"", i + 1);
		s->src[i] = sg_metric_sum(m, "syncgate_mirror_source_offsets_requests_total", lb);
	}
	sg_hist_read(m, "syncgate_mirror_release_delay_seconds", &s->release);
	sg_hist_read(m, "syncgate_mirror_sync_replication_latency_seconds", &s->held);
	free(m);
	s->ok = true;
}

/* Per-second figures of a window, per mirror averaged (and the range). */
struct window {
	double secs, cpu_per_s, bed_cpu_per_s;
	double demand, bg, src;          /* requests/s per mirror, mean over mirrors */
	double dmin, dmax;               /* demand+background of the least and most asked mirror */
	double rel_p50, rel_p99, held_p50, held_p99; /* ms, bucket bounds */
};

static double ms_of(double s)
{
	return s < 0 ? -1 : s >= 1e299 ? 1e9 : s * 1000;
}

static void diff(const struct snap *a, const struct snap *b, int mirrors, struct window *w)
{
	memset(w, 0, sizeof(*w));
	w->secs = b->t - a->t;
	w->cpu_per_s = (b->cpu - a->cpu) / w->secs;
	w->bed_cpu_per_s = (b->bed_cpu - a->bed_cpu) / w->secs;
	w->dmin = 1e300;
	for (int i = 0; i < mirrors; i++) {
		double d = (b->demand[i] - a->demand[i]) / w->secs, g = (b->bg[i] - a->bg[i]) / w->secs;
		w->demand += d / mirrors;
		w->bg += g / mirrors;
		w->src += (b->src[i] - a->src[i]) / w->secs / mirrors;
		w->dmin = d + g < w->dmin ? d + g : w->dmin;
		w->dmax = d + g > w->dmax ? d + g : w->dmax;
	}
	w->rel_p50 = ms_of(sg_hist_quantile(&a->release, &b->release, 0.5));
	w->rel_p99 = ms_of(sg_hist_quantile(&a->release, &b->release, 0.99));
	w->held_p50 = ms_of(sg_hist_quantile(&a->held, &b->held, 0.5));
	w->held_p99 = ms_of(sg_hist_quantile(&a->held, &b->held, 0.99));
}

static void loadavg(char *buf, size_t n)
{
	FILE *f = fopen("/proc/loadavg", "r");
	buf[0] = 0;
	if (f) {
		if (fgets(buf, (int)n, f))
			buf[strcspn(buf, " ")] = 0;
		fclose(f);
	}
}

static rd_kafka_t *mock_handle(rd_kafka_mock_cluster_t **mc)
{
	char err[256];
	rd_kafka_conf_t *c = rd_kafka_conf_new();
	rd_kafka_conf_set(c, "log_level", "3", NULL, 0);
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof(err));
	if (!rk || !(*mc = rd_kafka_mock_cluster_new(rk, 1))) {
		fprintf(stderr, "scale_bed: mock cluster: %s\n", rk ? "rd_kafka_mock_cluster_new failed" : err);
		exit(1);
	}
	return rk;
}

int main(int argc, char **argv)
{
	struct opts o;
	parse(argc, argv, &o);
	signal(SIGALRM, on_alarm);
	alarm((unsigned)o.max_s);
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", o.dir);
	if (system(cmd) != 0)
		return 1;
	char la0[32];
	loadavg(la0, sizeof(la0));
	printf("scale_bed: %d partitions x %d mirror(s), progress %s, %d msg/s of %d B, copy delay %d ms, "
	       "producer send round %d ms, load average %s\n", o.partitions, o.mirrors, o.progress, o.rate, o.record_bytes,
	       o.delay_ms, o.linger_ms, la0);
	fflush(stdout);

	rd_kafka_mock_cluster_t *msrc, *mdst[BED_MAX_MIRRORS];
	rd_kafka_t *hsrc = mock_handle(&msrc), *hdst[BED_MAX_MIRRORS];
	for (int i = 0; i < o.mirrors; i++)
		hdst[i] = mock_handle(&mdst[i]);
	rd_kafka_mock_topic_create(msrc, "__syncgate_state", 1, 1);

	struct sg_spec spec = {.binary = o.syncgate, .dir = o.dir, .source = rd_kafka_mock_cluster_bootstraps(msrc),
			       .mirrors = o.mirrors, .progress = o.progress};
	for (int i = 0; i < o.mirrors; i++)
		spec.dst[i] = rd_kafka_mock_cluster_bootstraps(mdst[i]);
	if (sg_start(&spec, &sg, 30000) != 0)
		return 1;
	int rc = 0;
	double t_ready = now_s();
	char *ready = NULL;
	while (!(ready = sg_http_get(sg.admin_port, "/readyz")) && sg_alive(&sg) && now_s() - t_ready < 60)
		sleep_s(0.1);
	free(ready);
	sleep_s(2); /* its threads settled, no topic to gate yet */
	long rss0 = sg_rss_kib(sg.pid);
	printf("  syncgate ready after %.1f s; RSS without the topic %.1f MiB\n", now_s() - t_ready, rss0 / 1024.0);

	/* the topic: destinations first, so that the mirrors find it when the source has it */
	double t_create = now_s();
	for (int i = 0; i < o.mirrors; i++)
		if (rd_kafka_mock_topic_create(mdst[i], BED_TOPIC, o.partitions, 1)) {
			fprintf(stderr, "scale_bed: cannot create %d partitions on a destination mock\n", o.partitions);
			return 1;
		}
	if (rd_kafka_mock_topic_create(msrc, BED_TOPIC, o.partitions, 1)) {
		fprintf(stderr, "scale_bed: cannot create %d partitions on the source mock\n", o.partitions);
		return 1;
	}
	double t_created = now_s();
	int nsync = 0;
	while (sg_alive(&sg) && now_s() - t_created < 90 && (nsync = sg_sync_count(sg.admin_port)) < o.mirrors)
		sleep_s(0.25);
	double sync_after = now_s() - t_created;
	if (nsync < o.mirrors) {
		long rss = sg.pid ? sg_rss_kib(sg.pid) : -1;
		double cpu = sg.pid ? sg_cpu_s(sg.pid) : -1;
		printf("  NOT SYNC: %d of %d mirrors effective SYNC %.0f s after the topic was created%s; syncgate RSS "
		       "%.1f MiB, CPU %.1f s since start (see %s/syncgate.log)\n", nsync, o.mirrors, sync_after,
		       sg.pid ? "" : " (syncgate is gone)", rss / 1024.0, cpu, o.dir);
		if (o.md)
			printf("| idle | %d | %d | not SYNC in %.0f s (%d of %d) | %.1f | %.0f | %.0f | %.2f (avg since start) "
			       "| – | – |\n", o.partitions, o.mirrors, sync_after, nsync, o.mirrors, rss / 1024.0,
			       (double)(rss - rss0) * 1024 / o.partitions,
			       (double)(rss - rss0) * 1024 / o.partitions / o.mirrors, cpu / (now_s() - t_ready));
		fflush(stdout);
		sg_stop(&sg);
		return 2;
	}
	printf("  topic created on the mocks in %.2f s; effective SYNC on every mirror %.1f s after\n",
	       t_created - t_create, sync_after);
	fflush(stdout);

	char via[64];
	snprintf(via, sizeof(via), "127.0.0.1:%d", sg.port);
	struct load_spec ls = {.partitions = o.partitions, .mirrors = o.mirrors, .via = via,
			       .source = spec.source, .rate = o.rate, .record_bytes = o.record_bytes,
			       .delay_ms = o.delay_ms, .linger_ms = o.linger_ms,
			       .max_records = (int64_t)((o.direct_s + o.warm_s + o.load_s) * o.rate) + 16};
	for (int i = 0; i < o.mirrors; i++)
		ls.dst[i] = spec.dst[i];
	double t_md = now_s();
	struct bed_load *l = load_new(&ls);
	if (!l) {
		sg_stop(&sg);
		return 1;
	}
	printf("  clients' metadata (%d partitions, through syncgate and direct) in %.1f s\n", o.partitions,
	       now_s() - t_md);

	/* idle: the topic gated, nothing produced */
	struct snap a, b;
	struct window idle, load;
	sleep_s(2);
	take(&a, o.mirrors);
	sleep_s(o.idle_s);
	take(&b, o.mirrors);
	diff(&a, &b, o.mirrors, &idle);
	long rss_idle = b.rss;
	printf("  idle %.0f s: syncgate CPU %.4f s/s, RSS %.1f MiB (+%.0f B per gated partition, %.0f B per "
	       "(mirror, partition)); requests/s per destination: demand %.1f, background %.1f; source "
	       "confirmations %.1f/s\n", idle.secs, idle.cpu_per_s, rss_idle / 1024.0,
	       (double)(rss_idle - rss0) * 1024 / o.partitions,
	       (double)(rss_idle - rss0) * 1024 / o.partitions / o.mirrors, idle.demand, idle.bg, idle.src);
	fflush(stdout);

	int64_t d0 = 0, d1 = 0, w0, w1, g0, g1;
	struct load_stats dst_st = {0}, st;
	if (o.direct_s > 0) {
		d0 = load_phase(l, true, o.direct_s, &d1);
		load_drain(l, 10000);
		load_stats(l, d0, d1, &dst_st);
		printf("  direct to the source mock, %lld records: ack p50 %.3f ms, p99 %.3f ms\n",
		       (long long)dst_st.records, dst_st.ack_p50, dst_st.ack_p99);
	}
	w0 = load_phase(l, false, o.warm_s, &w1);
	take(&a, o.mirrors);
	g0 = load_phase(l, false, o.load_s, &g1);
	take(&b, o.mirrors);
	diff(&a, &b, o.mirrors, &load);
	bool drained = load_drain(l, 35000);
	load_stats(l, g0, g1, &st);
	struct load_stats wst;
	load_stats(l, w0, w1, &wst);
	struct load_checks ck;
	load_checks(l, &ck);
	bool alive = sg_alive(&sg);
	long rss_after = alive ? sg_rss_kib(sg.pid) : -1;
	double acks_s = st.span_s > 0 ? (double)st.acked / st.span_s : 0;
	char la1[32];
	loadavg(la1, sizeof(la1));

	printf("  load %.0f s through syncgate (after %.0f s warm-up): %lld records, %lld acked (%.0f/s), %lld "
	       "failed%s%s, %lld unanswered%s\n", load.secs, o.warm_s, (long long)st.records, (long long)st.acked,
	       acks_s, (long long)st.failed, st.failed ? " first: " : "",
	       st.failed ? rd_kafka_err2name((rd_kafka_resp_err_t)st.first_err) : "", (long long)st.unanswered,
	       drained ? "" : " (not drained in 35 s)");
	printf("    syncgate CPU %.4f s/s = %.4f s/s per 1,000 acks/s (%.4f above idle); bed process CPU %.3f s/s\n",
	       load.cpu_per_s, acks_s > 0 ? load.cpu_per_s / (acks_s / 1000) : -1,
	       acks_s > 0 ? (load.cpu_per_s - idle.cpu_per_s) / (acks_s / 1000) : -1, load.bed_cpu_per_s);
	printf("    ack p50 %.3f / p99 %.3f / max %.3f ms; copy on every destination p50 %.3f / p99 %.3f ms "
	       "after the send; ack after the copies were sent p50 %.3f / p99 %.3f ms, after the last copy's "
	       "answer p50 %.3f / p99 %.3f / max %.3f ms (%lld records)\n", st.ack_p50, st.ack_p99, st.ack_max,
	       st.copy_p50, st.copy_p99, st.sent_p50, st.sent_p99, st.share_p50, st.share_p99, st.share_max,
	       (long long)st.share_n);
	printf("    syncgate histograms: release delay p50 <= %g / p99 <= %g ms; held -> mirrored p50 <= %g / "
	       "p99 <= %g ms\n", load.rel_p50, load.rel_p99, load.held_p50, load.held_p99);
	printf("    requests/s per destination: demand %.1f, background %.1f (least/most asked %.1f / %.1f); "
	       "source confirmations %.1f/s; RSS after %.1f MiB\n", load.demand, load.bg, load.dmin, load.dmax,
	       load.src, rss_after / 1024.0);
	printf("    checks: acks before every copy was sent %lld (warm-up %lld); source offsets not as expected "
	       "%lld, destination %lld; copies failed %lld; connection errors %lld; load average %s -> %s\n",
	       (long long)st.early, (long long)wst.early, (long long)ck.src_offset_mismatch,
	       (long long)ck.dst_offset_mismatch, (long long)ck.dst_failed, (long long)ck.conn_errors, la0, la1);
	if (!alive) {
		printf("  SYNCGATE STOPPED during the run (see %s/syncgate.log)\n", o.dir);
		rc = 2;
	}
	if (o.md) {
		printf("| idle | %d | %d | %.1f | %.1f | %.0f | %.0f | %.4f | %.1f / %.1f | %.1f |\n", o.partitions,
		       o.mirrors, sync_after, rss_idle / 1024.0, (double)(rss_idle - rss0) * 1024 / o.partitions,
		       (double)(rss_idle - rss0) * 1024 / o.partitions / o.mirrors, idle.cpu_per_s, idle.demand,
		       idle.bg, idle.src);
		printf("| load | %d | %d | %d | %.0f | %.4f | %.4f | %.3f / %.3f | %.3f / %.3f | %.3f / %.3f | "
		       "%.3f / %.3f | %.3f / %.3f | %g / %g | %.1f / %.1f | %.1f | %lld / %lld / %lld | %.2f |\n",
		       o.partitions, o.mirrors, o.rate, acks_s, load.cpu_per_s,
		       acks_s > 0 ? load.cpu_per_s / (acks_s / 1000) : -1, dst_st.ack_p50, dst_st.ack_p99, st.ack_p50,
		       st.ack_p99, st.copy_p50, st.copy_p99, st.sent_p50, st.sent_p99, st.share_p50, st.share_p99, load.rel_p50, load.rel_p99, load.demand, load.bg, load.src,
		       (long long)st.failed, (long long)st.unanswered,
		       (long long)(st.early + ck.src_offset_mismatch + ck.dst_offset_mismatch), load.bed_cpu_per_s);
	}
	fflush(stdout);
	load_free(l);
	sg_stop(&sg);
	for (int i = 0; i < o.mirrors; i++) {
		rd_kafka_mock_cluster_destroy(mdst[i]);
		rd_kafka_destroy(hdst[i]);
	}
	rd_kafka_mock_cluster_destroy(msrc);
	rd_kafka_destroy(hsrc);
	return rc;
}
