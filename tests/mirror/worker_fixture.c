/*
 * tests/mirror/worker_fixture.c — the mock clusters the worker tests run
 * against (worker_fixture.h): one librdkafka mock as the source, one as the
 * destination, a gate with one mirror "mock-dr" on topic "orders" (two
 * partitions), and what the tests share to drive and read it.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdlib.h>
#include <string.h>

#include "tests/mirror/worker_fixture.h"

static rd_kafka_t *mk_src, *mk_dst;
rd_kafka_mock_cluster_t *mc_src, *mc_dst;
struct event_base *base;
struct mirror_gate *g;
struct conf cfg;
struct conf_mirror mir;
static char *sync_topics[] = {"orders"};
static char src_host[64];

static rd_kafka_t *mock_handle_n(rd_kafka_mock_cluster_t **mc, int brokers)
{
	char errstr[256];
	rd_kafka_conf_t *c = rd_kafka_conf_new();
	rd_kafka_conf_set(c, "log_level", "3", NULL, 0);
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, errstr, sizeof(errstr));
	cr_assert_not_null(rk, "%s", errstr);
	*mc = rd_kafka_mock_cluster_new(rk, brokers);
	cr_assert_not_null(*mc);
	cr_assert(eq(i64, (int64_t)(rd_kafka_mock_topic_create(*mc, "orders", 2, 1)), (int64_t)(0)));
	return rk;
}

static rd_kafka_t *mock_handle(rd_kafka_mock_cluster_t **mc)
{
	return mock_handle_n(mc, 1);
}

void produce(rd_kafka_mock_cluster_t *mc, int32_t partition, int n)
{
	char errstr[256];
	rd_kafka_conf_t *c = rd_kafka_conf_new();
	rd_kafka_conf_set(c, "bootstrap.servers", rd_kafka_mock_cluster_bootstraps(mc), NULL, 0);
	rd_kafka_conf_set(c, "linger.ms", "0", NULL, 0);
	rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, c, errstr, sizeof(errstr));
	cr_assert_not_null(p);
	for (int i = 0; i < n; i++)
		cr_assert(eq(i64, (int64_t)(rd_kafka_producev(p, RD_KAFKA_V_TOPIC("orders"), RD_KAFKA_V_PARTITION(partition),
					       RD_KAFKA_V_VALUE("x", 1), RD_KAFKA_V_END)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(rd_kafka_flush(p, 30000)), (int64_t)(0)));
	rd_kafka_destroy(p);
}

void start_with(enum conf_progress mode, int dst_brokers, int poll_interval_ms)
{
	mk_src = mock_handle(&mc_src);
	mk_dst = mock_handle_n(&mc_dst, dst_brokers);
	for (int32_t p = 0; dst_brokers > 1 && p < 2; p++)
		cr_assert(eq(i64, (int64_t)(rd_kafka_mock_partition_set_leader(mc_dst, "orders", p, p + 1)), (int64_t)(0)));
	const char *bs = rd_kafka_mock_cluster_bootstraps(mc_src);
	const char *colon = strrchr(bs, ':');
	snprintf(src_host, sizeof(src_host), "%.*s", (int)(colon - bs), bs);
	memset(&cfg, 0, sizeof(cfg));
	memset(&mir, 0, sizeof(mir));
	cfg.upstream_broker.host = src_host;
	cfg.upstream_broker.port = atoi(colon + 1);
	mir.name = (char *)"mock-dr";
	mir.bootstrap = (char *)rd_kafka_mock_cluster_bootstraps(mc_dst);
	mir.topic_name = (char *)"{topic}";
	mir.offsets = CONF_OFFSETS_PRESERVED;
	mir.progress = mode;
	mir.poll_interval_ms = poll_interval_ms;
	mir.sync_topics = sync_topics;
	mir.nsync_topics = 1;
	cfg.mirrors = &mir;
	cfg.nmirrors = 1;
	base = event_base_new();
	g = mirror_gate_new(base, &cfg);
	cr_assert_not_null(g);
}

void start_ex(enum conf_progress mode, int dst_brokers)
{
	start_with(mode, dst_brokers, 5);
}

void start(enum conf_progress mode)
{
	start_ex(mode, 1);
}

void stop(void)
{
	mirror_gate_free(g);
	event_base_free(base);
	rd_kafka_mock_cluster_destroy(mc_src);
	rd_kafka_mock_cluster_destroy(mc_dst);
	rd_kafka_destroy(mk_src);
	rd_kafka_destroy(mk_dst);
}

void run_ms(int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
}

/* ListOffsets requests the mirror's lanes sent, of `kind`, over every lane. */
double lane_requests(const char *kind)
{
	double n = 0;
	for (int b = -1; b <= 2; b++) {
		char labels[200];
		snprintf(labels, sizeof(labels), "mirror=\"mock-dr\",broker=\"%d\",kind=\"%s\"", b, kind);
		n += metric_value(metric_get(METRIC_COUNTER, "syncgate_mirror_progress_requests_total", "",
					     labels, NULL, 0));
	}
	return n;
}

void on_out(void *arg, struct mirror_wait_part *parts, size_t nparts)
{
	struct outrec *o = arg;
	o->calls++;
	o->outcome = parts[0].outcome;
}

/* Promoted, progress of both partitions known (10 and 3), ISR known. */
void promoted(void)
{
	produce(mc_src, 0, 10);
	produce(mc_dst, 0, 10);
	produce(mc_src, 1, 3);
	produce(mc_dst, 1, 3);
	struct mirror_partition_info p0, p1;
	int64_t end = mirror_now_ms() + 20000;
	while (mirror_now_ms() < end) {
		run_ms(50);
		if (mirror_gate_is_gated(g, "orders") &&
		    mirror_gate_partition_info(g, "mock-dr", "orders", 0, &p0) == 0 && p0.progress == 10 && p0.isr > 0 &&
		    mirror_gate_partition_info(g, "mock-dr", "orders", 1, &p1) == 0 && p1.progress == 3 && p1.isr > 0)
			return;
	}
	cr_fatal("not promoted with progress 10 / 3 and ISR known");
}
