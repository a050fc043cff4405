/*
 * tests/mirror/test_worker.c — mirror/ progress against the librdkafka mock
 * cluster (2.0.2): one mock as the source, one as the destination. The mock
 * models topics, produce, high watermarks and Metadata; it cannot model ISR
 * shrinking, min.insync.replicas (no DescribeConfigs) or real mirroring, so
 * the test "mirrors" by producing the same records to both sides
 * (worker_fixture.c).
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <event2/event.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"
#include "mirror/mirror.h"
#include "mirror/internal.h"
#include "mirror/worker.h"
#include "tests/mirror/worker_fixture.h"

int mirror_mm2_parse(const void *key, size_t klen, const void *val, size_t vlen, char *topic,
		     size_t topic_cap, int32_t *partition, int64_t *upstream, int64_t *downstream);

struct cbrec {
	int calls;
};
static void on_done(void *arg, struct mirror_wait_part *parts, size_t nparts)
{
	((struct cbrec *)arg)->calls++;
}

static void promoted_then_gated_release(void)
{
	produce(mc_src, 0, 10);
	produce(mc_dst, 0, 10);
	produce(mc_src, 1, 3);
	produce(mc_dst, 1, 3);
	int64_t end = mirror_now_ms() + 20000;
	while (!mirror_gate_is_gated(g, "orders") && mirror_now_ms() < end)
		run_ms(50);
	cr_assert(mirror_gate_is_gated(g, "orders"), "promoted at lag zero");
	struct mirror_partition_info pi;
	/* (a round before the records were produced may promote at 0 = 0; progress
	 * and ISR — its own thread — follow) */
	end = mirror_now_ms() + 10000;
	while (mirror_gate_partition_info(g, "mock-dr", "orders", 0, &pi) == 0 && (pi.isr < 0 || pi.progress < 10) &&
	       mirror_now_ms() < end)
		run_ms(50);
	cr_assert(eq(i64, (int64_t)(pi.progress), (int64_t)(10)), "progress %lld", (long long)pi.progress);
	cr_assert(eq(i64, (int64_t)(pi.isr), (int64_t)(1)), "ISR from destination Metadata");

	/* The source takes 5 more records; the destination does not yet. */
	produce(mc_src, 0, 5);
	struct mirror_wait_part p[1] = {{.topic = "orders", .partition = 0, .last_offset = 14}};
	struct cbrec r = {0};
	struct mirror_wait *w = mirror_gate_wait(g, p, 1, mirror_now_ms() + 15000, on_done, &r);
	cr_assert_not_null(w);
	run_ms(300);
	cr_assert(eq(i64, (int64_t)(r.calls), (int64_t)(0)), "held while the destination lacks offsets 10..14");
	int64_t t0 = mirror_now_ms();
	produce(mc_dst, 0, 5);
	end = mirror_now_ms() + 10000;
	while (!r.calls && mirror_now_ms() < end)
		run_ms(5);
	cr_assert(eq(i64, (int64_t)(r.calls), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(p[0].outcome), (int64_t)(MIRROR_SATISFIED)));
	cr_log_info("release after destination produce: %lld ms", (long long)(mirror_now_ms() - t0));
}

Test(mirror_worker, poll_mode_progress_advances_with_destination_hw, .timeout = 60)
{
	start(CONF_PROGRESS_POLL);
	promoted_then_gated_release();
	stop();
}

Test(mirror_worker, tail_mode_progress_advances_with_destination_hw, .timeout = 60)
{
	start(CONF_PROGRESS_TAIL);
	promoted_then_gated_release();
	stop();
}

/* (The mock auto-creates a missing topic on ListOffsets, so a missing
 * destination *partition* stands in for a missing topic.) */
Test(mirror_worker, missing_destination_partition_is_a_partition_failure, .timeout = 60)
{
	start(CONF_PROGRESS_POLL);
	rd_kafka_mock_topic_create(mc_src, "orders-wide", 3, 1);
	rd_kafka_mock_topic_create(mc_dst, "orders-wide", 1, 1);
	static char *t2[] = {"orders.*"};
	static struct conf_mirror m2;
	static struct conf c2;
	m2 = mir;
	m2.sync_topics = t2;
	c2 = cfg;
	c2.mirrors = &m2;
	cr_assert(eq(i64, (int64_t)(mirror_gate_reconfigure(g, &c2)), (int64_t)(0)));
	struct mirror_topic_info ti = {0};
	int64_t end = mirror_now_ms() + 20000;
	while (mirror_now_ms() < end) {
		run_ms(100);
		if (mirror_gate_topic_info(g, "mock-dr", "orders-wide", &ti) == 0 && ti.failing_partitions == 2)
			break;
	}
	cr_assert(eq(i64, (int64_t)(ti.failing_partitions), (int64_t)(2)));
	struct mirror_partition_info pi;
	cr_assert(eq(i64, (int64_t)(mirror_gate_partition_info(g, "mock-dr", "orders-wide", 2, &pi)), (int64_t)(0)));
	cr_log_info("partition 2 failing: %s", pi.reason);
	cr_assert_str_neq(pi.reason, "");
	cr_assert(eq(i64, (int64_t)(ti.effective), (int64_t)(MIRROR_ASYNC)));
	stop();
}

Test(mirror_worker, mm2_offset_sync_record_format)
{
	/* OffsetSync{orders-3, upstream 1234, downstream 1200} as MM2 writes it */
	const unsigned char key[] = {0, 6, 'o', 'r', 'd', 'e', 'r', 's', 0, 0, 0, 3};
	const unsigned char val[] = {0, 0, 0, 0, 0, 0, 0x04, 0xd2, 0, 0, 0, 0, 0, 0, 0x04, 0xb0};
	char topic[64];
	int32_t part;
	int64_t up, down;
	cr_assert(eq(i64, (int64_t)(mirror_mm2_parse(key, sizeof(key), val, sizeof(val), topic, sizeof(topic), &part, &up, &down)), (int64_t)(0)));
	cr_assert_str_eq(topic, "orders");
	cr_assert(eq(i64, (int64_t)(part), (int64_t)(3)));
	cr_assert(eq(i64, (int64_t)(up), (int64_t)(1234)));
	cr_assert(eq(i64, (int64_t)(down), (int64_t)(1200)));
	cr_assert(ne(i64, (int64_t)(mirror_mm2_parse(key, sizeof(key) - 1, val, sizeof(val), topic, sizeof(topic), &part, &up, &down)), (int64_t)(0)));
	cr_assert(ne(i64, (int64_t)(mirror_mm2_parse(key, sizeof(key), val, 8, topic, sizeof(topic), &part, &up, &down)), (int64_t)(0)));
	cr_assert(ne(i64, (int64_t)(mirror_mm2_parse(key, sizeof(key), val, sizeof(val), topic, 4, &part, &up, &down)), (int64_t)(0)));
}

/* ---- poll scheduling (lane.c): demand-driven, back to back, idle = nothing ---- */

Test(mirror_worker, poll_idle_partitions_cost_one_destination_request_per_sweep, .timeout = 60)
{
	start(CONF_PROGRESS_POLL);
	promoted();
	run_ms(300); /* a lane answer in flight lands */
	double d0 = lane_requests("demand"), b0 = lane_requests("background");
	run_ms(2 * MIRROR_W_SWEEP_MS + 500); /* four background rounds at least, two or three sweeps */
	cr_assert(eq(i64, (int64_t)(lane_requests("demand")), (int64_t)(d0)), "nothing held: no demand poll");
	double sweeps = lane_requests("background") - b0;
	cr_log_info("idle: %.0f background requests in %d ms", sweeps, 2 * MIRROR_W_SWEEP_MS + 500);
	cr_assert(sweeps >= 1 && sweeps <= 3,
		  "source HW = progress on every partition: the destination is asked only by the sweep, one "
		  "request for both partitions every %d ms (%.0f requests)", MIRROR_W_SWEEP_MS, sweeps);
	b0 = lane_requests("background");
	/* a record the destination lacks makes that partition lag: the round asks again */
	produce(mc_src, 1, 1);
	int64_t end = mirror_now_ms() + 10000;
	while (lane_requests("background") == b0 && mirror_now_ms() < end)
		run_ms(50);
	cr_assert(gt(i64, (int64_t)(lane_requests("background")), (int64_t)(b0)), "a lagging partition is asked in the background");
	stop();
}

Test(mirror_worker, poll_demand_back_to_back_while_pending_then_stops, .timeout = 60)
{
	start(CONF_PROGRESS_POLL);
	promoted();
	produce(mc_src, 0, 5); /* offsets 10..14, not on the destination yet */
	enum { N = 50 };
	struct mirror_wait_part p[N];
	struct outrec o[N];
	memset(o, 0, sizeof(o));
	double d0 = lane_requests("demand");
	for (int i = 0; i < N; i++) {
		p[i] = (struct mirror_wait_part){.topic = "orders", .partition = 0, .last_offset = 14};
		cr_assert_not_null(mirror_gate_wait(g, &p[i], 1, mirror_now_ms() + 30000, on_out, &o[i]));
	}
	/* pending: the lane keeps asking, without waiting for the background round */
	int64_t end = mirror_now_ms() + 10000;
	while (lane_requests("demand") < d0 + 5 && mirror_now_ms() < end)
		run_ms(5);
	cr_assert(ge(i64, (int64_t)(lane_requests("demand")), (int64_t)(d0 + 5)), "polled again and again while the wait is pending");
	for (int i = 0; i < N; i++)
		cr_assert(eq(i64, (int64_t)(o[i].calls), (int64_t)(0)), "held: the destination lacks 10..14");
	produce(mc_dst, 0, 5);
	end = mirror_now_ms() + 10000;
	int done = 0;
	while (done < N && mirror_now_ms() < end) {
		run_ms(5);
		done = 0;
		for (int i = 0; i < N; i++)
			done += o[i].calls;
	}
	for (int i = 0; i < N; i++)
		cr_assert(eq(i64, (int64_t)(o[i].outcome), (int64_t)(MIRROR_SATISFIED)));
	run_ms(200); /* the request in flight when the answer came */
	double d1 = lane_requests("demand");
	run_ms(1500);
	cr_assert(eq(i64, (int64_t)(lane_requests("demand")), (int64_t)(d1)), "nothing pending: demand polls stop");
	stop();
}

Test(mirror_worker, poll_demands_of_many_waits_coalesce, .timeout = 60)
{
	start(CONF_PROGRESS_POLL);
	promoted();
	run_ms(300);
	/* the destination has 10..14 already; the gate does not know yet */
	produce(mc_src, 0, 5);
	produce(mc_dst, 0, 5);
	enum { N = 100 };
	struct mirror_wait_part p[N];
	struct outrec o[N];
	memset(o, 0, sizeof(o));
	double d0 = lane_requests("demand");
	for (int i = 0; i < N; i++) {
		p[i] = (struct mirror_wait_part){.topic = "orders", .partition = 0, .last_offset = 10 + i % 5};
		cr_assert_not_null(mirror_gate_wait(g, &p[i], 1, mirror_now_ms() + 30000, on_out, &o[i]));
	}
	int64_t end = mirror_now_ms() + 10000;
	int done = 0;
	while (done < N && mirror_now_ms() < end) {
		run_ms(2);
		done = 0;
		for (int i = 0; i < N; i++)
			done += o[i].calls;
	}
	cr_assert(eq(i64, (int64_t)(done), (int64_t)(N)));
	for (int i = 0; i < N; i++)
		cr_assert(eq(i64, (int64_t)(o[i].outcome), (int64_t)(MIRROR_SATISFIED)));
	double n = lane_requests("demand") - d0;
	cr_log_info("%d waits released after %.0f demand polls", N, n);
	cr_assert(n >= 1 && n < N, "one poll serves every wait of the partition (%.0f polls for %d waits)", n, N);
	stop();
}

Test(mirror_worker, poll_slow_destination_broker_delays_only_its_partitions, .timeout = 90)
{
	start_ex(CONF_PROGRESS_POLL, 2); /* orders-0 led by broker 1, orders-1 by broker 2 */
	promoted();
	rd_kafka_mock_broker_set_rtt(mc_dst, 2, 3000);
	produce(mc_src, 0, 5);
	produce(mc_src, 1, 5);
	/* orders-1: the destination lacks 3..7 and its broker answers in 3 s —
	 * its lane is busy with it; orders-0: the destination gets 10..14 */
	struct mirror_wait_part p0 = {.topic = "orders", .partition = 0, .last_offset = 14};
	struct mirror_wait_part p1 = {.topic = "orders", .partition = 1, .last_offset = 7};
	struct outrec o0 = {0}, o1 = {0};
	cr_assert_not_null(mirror_gate_wait(g, &p1, 1, mirror_now_ms() + 60000, on_out, &o1));
	run_ms(100);
	cr_assert_not_null(mirror_gate_wait(g, &p0, 1, mirror_now_ms() + 60000, on_out, &o0));
	produce(mc_dst, 0, 5);
	int64_t end = mirror_now_ms() + 20000;
	while (!o0.calls && mirror_now_ms() < end)
		run_ms(5);
	cr_assert(eq(i64, (int64_t)(o0.calls), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(o0.outcome), (int64_t)(MIRROR_SATISFIED)), "broker 1's partition released");
	cr_assert(eq(i64, (int64_t)(o1.calls), (int64_t)(0)), "the destination lacks orders-1's records: still held");
	rd_kafka_mock_broker_set_rtt(mc_dst, 2, 0);
	produce(mc_dst, 1, 5);
	end = mirror_now_ms() + 30000;
	while (!o1.calls && mirror_now_ms() < end)
		run_ms(20);
	cr_assert(eq(i64, (int64_t)(o1.outcome), (int64_t)(MIRROR_SATISFIED)), "released once broker 2 answers");
	stop();
}

/* #18: removing a mirror by reload must not stall the event loop while its
 * worker finishes a call in flight (up to MIRROR_W_RPC_MS): the join and the
 * clients' destroy run on a reaper thread. */
Test(mirror_worker, removed_mirror_stops_off_the_loop, .timeout = 90)
{
	start(CONF_PROGRESS_POLL);
	promoted();
	rd_kafka_mock_broker_set_rtt(mc_dst, 1, 3000);
	produce(mc_src, 0, 5);
	/* held: the lane polls the slow destination broker back to back */
	struct mirror_wait_part p0 = {.topic = "orders", .partition = 0, .last_offset = 14};
	struct outrec o = {0};
	cr_assert_not_null(mirror_gate_wait(g, &p0, 1, mirror_now_ms() + 60000, on_out, &o));
	run_ms(300);
	cr_assert(eq(i64, (int64_t)(o.calls), (int64_t)(0)));
	struct conf none = cfg;
	none.mirrors = NULL;
	none.nmirrors = 0;
	cr_assert(eq(i64, (int64_t)(mirror_gate_reconfigure(g, &none)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(mirror_workers_stopping()), (int64_t)(1)),
		     "reload returned while the removed mirror's worker is still in its 3 s call");
	int64_t end = mirror_now_ms() + 30000;
	while ((!o.calls || mirror_workers_stopping() > 0) && mirror_now_ms() < end)
		run_ms(20);
	cr_assert(eq(i64, (int64_t)(o.calls), (int64_t)(1)), "the removed mirror no longer holds the wait");
	cr_assert(eq(i64, (int64_t)(o.outcome), (int64_t)(MIRROR_SATISFIED)), "removal releases (asynchronous predicate)");
	cr_assert(eq(i64, (int64_t)(mirror_workers_stopping()), (int64_t)(0)), "the reaper ended the worker");
	rd_kafka_mock_broker_set_rtt(mc_dst, 1, 0);
	stop();
}

/* A source partition recreated (or truncated) while the destination keeps its
 * records: the destination's HW is above the source's, and its offsets name
 * other records. Releasing by them would be a false ack (found by a new-user
 * trial: delete + recreate the source topic, then acks=all succeeded with the
 * mirror paused). The partition fails closed until the destination is back at
 * or below the source. */
Test(mirror_worker, destination_ahead_of_source_never_releases, .timeout = 90)
{
	start(CONF_PROGRESS_POLL);
	promoted();                 /* orders-0: 10 on both sides */
	produce(mc_dst, 0, 20);     /* the destination at 30 ... */
	produce(mc_src, 0, 1);      /* ... the source at 11: lag, so the destination is read */
	struct mirror_partition_info pi = {0};
	int64_t end = mirror_now_ms() + 20000;
	while (mirror_now_ms() < end) {
		run_ms(50);
		if (mirror_gate_partition_info(g, "mock-dr", "orders", 0, &pi) == 0 && pi.failing_since_ms >= 0)
			break;
	}
	cr_assert(pi.failing_since_ms >= 0, "the partition is failing once the destination is seen ahead");
	cr_assert_str_eq(pi.reason, "DESTINATION_AHEAD_OF_SOURCE");
	/* the source's record at offset 10: the destination's offset 10 is another record */
	struct mirror_wait_part p0 = {.topic = "orders", .partition = 0, .last_offset = 10};
	struct outrec o = {0};
	cr_assert_not_null(mirror_gate_wait(g, &p0, 1, mirror_now_ms() + 4000, on_out, &o));
	end = mirror_now_ms() + 20000;
	while (!o.calls && mirror_now_ms() < end)
		run_ms(20);
	cr_assert(eq(i64, (int64_t)(o.calls), (int64_t)(1)));
	cr_assert(ne(i64, (int64_t)(o.outcome), (int64_t)(MIRROR_SATISFIED)), "never released by a destination that is ahead");
	mirror_wait_parts_clear(&p0, 1); /* its failure message */
	/* the source catches up past the destination: progress counts again */
	produce(mc_src, 0, 25);     /* source 36 > destination 30 */
	produce(mc_dst, 0, 6);      /* destination 36 (a test mirror writing the source's records) */
	struct mirror_wait_part p1 = {.topic = "orders", .partition = 0, .last_offset = 35};
	struct outrec o1 = {0};
	cr_assert_not_null(mirror_gate_wait(g, &p1, 1, mirror_now_ms() + 30000, on_out, &o1));
	end = mirror_now_ms() + 30000;
	while (!o1.calls && mirror_now_ms() < end)
		run_ms(20);
	cr_assert(eq(i64, (int64_t)(o1.calls), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(o1.outcome), (int64_t)(MIRROR_SATISFIED)), "released once the destination is not ahead any more");
	stop();
}

/* The destination broker's rule since Kafka 3.7: an acks=all write needs
 * min(min.insync.replicas, replication factor) in-sync replicas; the worker
 * reports that figure, so an RF-1 topic with min.insync.replicas=2 (what
 * MirrorMaker 2 creates on a cluster defaulting to 2) does not fail the gate. */
Test(worker, effective_min_isr_is_capped_by_the_replication_factor)
{
	cr_assert(eq(i64, (int64_t)(mirror_effective_min_isr(2, 1)), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(mirror_effective_min_isr(2, 3)), (int64_t)(2)));
	cr_assert(eq(i64, (int64_t)(mirror_effective_min_isr(3, 3)), (int64_t)(3)));
	cr_assert(eq(i64, (int64_t)(mirror_effective_min_isr(1, 1)), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(mirror_effective_min_isr(2, -1)), (int64_t)(2)), "replication factor unknown: the config as is");
	cr_assert(eq(i64, (int64_t)(mirror_effective_min_isr(2, 0)), (int64_t)(2)), "no replica listed: the config as is");
	cr_assert(eq(i64, (int64_t)(mirror_effective_min_isr(-1, 3)), (int64_t)(-1)), "min.insync.replicas unknown stays unknown");
}

/* Records written straight to a destination partition (not by the mirror),
 * offsets preserved: the destination's HW is above the source's, and its
 * offsets name other records. A field report: the next produces through
 * syncgate were acknowledged in milliseconds by the destination's HW (the
 * background round noticed only later). No release may use a destination
 * HW that is above the source's sampled after it — on the demanded path
 * too — and the divergence is reported at once. */
static void foreign_records_never_release(enum conf_progress mode)
{
	start(mode);
	promoted();                 /* orders-0: 10 on both sides */
	produce(mc_dst, 0, 8);      /* 8 foreign records: the destination at 18 */
	produce(mc_src, 0, 1);      /* the source's record at offset 10: the destination's is another */
	if (mode == CONF_PROGRESS_TAIL)
		produce(mc_dst, 0, 1); /* the tail sees the destination move (the mirror copies it to 18) */
	int64_t t0 = mirror_now_ms();
	struct mirror_wait_part p0 = {.topic = "orders", .partition = 0, .last_offset = 10};
	struct outrec o = {0};
	cr_assert_not_null(mirror_gate_wait(g, &p0, 1, mirror_now_ms() + 3000, on_out, &o));
	struct mirror_partition_info pi = {0};
	int64_t seen_ms = -1, end = mirror_now_ms() + 10000;
	while (!o.calls && mirror_now_ms() < end) {
		run_ms(5);
		if (seen_ms < 0 && mirror_gate_partition_info(g, "mock-dr", "orders", 0, &pi) == 0 &&
		    strcmp(pi.reason, "DESTINATION_AHEAD_OF_SOURCE") == 0)
			seen_ms = mirror_now_ms() - t0;
	}
	cr_assert(eq(i64, (int64_t)(o.calls), (int64_t)(1)));
	cr_assert(ne(i64, (int64_t)(o.outcome), (int64_t)(MIRROR_SATISFIED)), "false ack: released by a destination HW holding foreign records");
	mirror_wait_parts_clear(&p0, 1);
	cr_log_info("divergence reported %lld ms after the wait", (long long)seen_ms);
	cr_assert(seen_ms >= 0 && seen_ms < 2500, "reported while the wait was held (%lld ms)", (long long)seen_ms);
	stop();
}

Test(mirror_worker, poll_foreign_records_on_the_destination_never_release, .timeout = 60)
{
	foreign_records_never_release(CONF_PROGRESS_POLL);
}

Test(mirror_worker, tail_foreign_records_on_the_destination_never_release, .timeout = 60)
{
	foreign_records_never_release(CONF_PROGRESS_TAIL);
}

/* An idle partition (nothing produced, nothing held) whose destination is
 * written to: seen ahead by the background round's sweep, not only once
 * the source moves. */
Test(mirror_worker, idle_partition_written_to_on_the_destination_is_seen_ahead, .timeout = 60)
{
	start(CONF_PROGRESS_POLL);
	promoted();                 /* orders-1: 3 on both sides */
	run_ms(300);
	produce(mc_dst, 1, 8);
	int64_t t0 = mirror_now_ms(), end = t0 + 20000;
	struct mirror_partition_info pi = {0};
	while (mirror_now_ms() < end) {
		run_ms(20);
		if (mirror_gate_partition_info(g, "mock-dr", "orders", 1, &pi) == 0 && pi.failing_since_ms >= 0)
			break;
	}
	int64_t took = mirror_now_ms() - t0;
	cr_assert_str_eq(pi.reason, "DESTINATION_AHEAD_OF_SOURCE");
	cr_log_info("idle partition seen ahead after %lld ms", (long long)took);
	cr_assert(lt(i64, (int64_t)(took), (int64_t)(MIRROR_W_SWEEP_MS + MIRROR_W_LAG_MS + 2000)), "within a sweep (%lld ms)", (long long)took);
	stop();
}

/* A held partition whose destination HW reaches the end of the records the
 * source answered with acks=all is released without a source read: the
 * answer vouches for that source HW (diverged.c). The source is made slow
 * (1.5 s a request): released by the destination's read alone, well before
 * a source answer could arrive; a wait without that answer (acks=1 under
 * gate.acks1, committed false) still waits for the source read. */
static int64_t release_ms_with_slow_source(bool committed)
{
	start(CONF_PROGRESS_POLL);
	promoted();
	run_ms(300);
	produce(mc_src, 0, 5); /* offsets 10..14 */
	cr_assert(eq(i64, (int64_t)(rd_kafka_mock_broker_set_rtt(mc_src, 1, 1500)), (int64_t)(0)));
	struct mirror_wait_part p = {.topic = "orders", .partition = 0, .last_offset = 14,
				     .committed = committed};
	struct outrec o = {0};
	cr_assert_not_null(mirror_gate_wait(g, &p, 1, mirror_now_ms() + 20000, on_out, &o));
	run_ms(2000); /* requests to the source sent before the RTT took effect are answered */
	cr_assert(eq(i64, (int64_t)(o.calls), (int64_t)(0)), "held: the destination lacks 10..14");
	produce(mc_dst, 0, 5);
	int64_t t0 = mirror_now_ms(), end = t0 + 15000;
	while (!o.calls && mirror_now_ms() < end)
		run_ms(5);
	int64_t took = mirror_now_ms() - t0;
	cr_assert(eq(i64, (int64_t)(o.calls), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(o.outcome), (int64_t)(MIRROR_SATISFIED)));
	mirror_wait_parts_clear(&p, 1);
	rd_kafka_mock_broker_set_rtt(mc_src, 1, 0);
	stop();
	cr_log_info("released %lld ms after the destination had the records (committed=%d, source RTT 1500 ms)",
		    (long long)took, committed);
	return took;
}

Test(mirror_worker, poll_release_vouched_for_by_acks_all_needs_no_source_read, .timeout = 90)
{
	/* below one source round trip: no source read sent after the destination
	 * had the records was waited for (the lane may still be finishing a
	 * background source read it had sent before: up to that round trip) */
	int64_t took = release_ms_with_slow_source(true);
	cr_assert(lt(i64, took, 1500), "released by the destination read alone (%lld ms)", (long long)took);
}

Test(mirror_worker, poll_release_without_an_acks_all_answer_waits_for_the_source_read, .timeout = 90)
{
	int64_t took = release_ms_with_slow_source(false);
	cr_assert(ge(i64, took, 1400), "a destination HW is confirmed by a source read after it (%lld ms)",
		  (long long)took);
}
