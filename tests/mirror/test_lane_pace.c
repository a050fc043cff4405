/*
 * tests/mirror/test_lane_pace.c — how often a `poll` lane asks its
 * destination leader while a held response waits (mirror/lane.c): back to
 * back for MIRROR_W_POLL_BURST_MS after the HW moved or a new record was
 * demanded, then pauses doubling up to mirrors[].poll_interval_ms while
 * nothing moves. Against the librdkafka mock clusters (worker_fixture.c).
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdlib.h>
#include <string.h>

#include "tests/mirror/worker_fixture.h"

/* Every ListOffsets the mirror's lanes sent to the destination. */
static double requests(void)
{
	return lane_requests("demand") + lane_requests("background");
}

/* Longest the pauses take to reach `cap_ms` (1 + 2 + 4 + … < 2 × cap),
 * after the burst, with room for the round trips between them. */
static int ramp_ms(int cap_ms)
{
	return MIRROR_W_POLL_BURST_MS + 2 * cap_ms + 200;
}

/* A producer to "orders" on `mc`, connected, so that a record lands on it
 * within a few milliseconds of produce_now (no client start on the way). */
static rd_kafka_t *producer_to(rd_kafka_mock_cluster_t *mc)
{
	char errstr[256];
	rd_kafka_conf_t *c = rd_kafka_conf_new();
	rd_kafka_conf_set(c, "bootstrap.servers", rd_kafka_mock_cluster_bootstraps(mc), NULL, 0);
	rd_kafka_conf_set(c, "linger.ms", "0", NULL, 0);
	rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, c, errstr, sizeof(errstr));
	cr_assert_not_null(p, "%s", errstr);
	const struct rd_kafka_metadata *md;
	cr_assert(eq(i64, (int64_t)(rd_kafka_metadata(p, 1, NULL, &md, 10000)), (int64_t)(0)));
	rd_kafka_metadata_destroy(md);
	return p;
}

static void produce_now(rd_kafka_t *p, int32_t partition, int n)
{
	for (int i = 0; i < n; i++)
		cr_assert(eq(i64, (int64_t)(rd_kafka_producev(p, RD_KAFKA_V_TOPIC("orders"), RD_KAFKA_V_PARTITION(partition),
							      RD_KAFKA_V_VALUE("x", 1), RD_KAFKA_V_END)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(rd_kafka_flush(p, 10000)), (int64_t)(0)));
}

/* Wait on orders-0 up to offset 14 (the source has 10..14, the destination
 * does not): acks=all answered, the source vouches for 15. */
static struct mirror_wait_part stalled_part(void)
{
	return (struct mirror_wait_part){.topic = "orders", .partition = 0, .last_offset = 14, .committed = true};
}

Test(lane_pace, no_pause_in_the_burst_then_doubling_up_to_poll_interval)
{
	for (int64_t still = 0; still < MIRROR_W_POLL_BURST_MS; still++)
		cr_assert(eq(i64, mirror_lane_pause_ms(still, 4, 5), 0), "back to back %lld ms after a move",
			  (long long)still);
	int64_t cap = 100, prev = 0, total = 0;
	int64_t want[] = {1, 2, 4, 8, 16, 32, 64, 100, 100};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		prev = mirror_lane_pause_ms(MIRROR_W_POLL_BURST_MS + total, prev, cap);
		cr_assert(eq(i64, prev, want[i]), "pause %zu", i);
		if (prev < cap)
			total += prev;
	}
	cr_assert(lt(i64, total, 2 * cap), "the cap is reached within 2 × poll_interval_ms of pauses");
	cr_assert(eq(i64, mirror_lane_pause_ms(MIRROR_W_POLL_BURST_MS, 0, 1), 1), "poll_interval_ms 1: 1 ms");
	cr_assert(eq(i64, mirror_lane_pause_ms(MIRROR_W_POLL_BURST_MS, 0, 5), 1));
	cr_assert(eq(i64, mirror_lane_pause_ms(MIRROR_W_POLL_BURST_MS, 4, 5), 5), "capped at poll_interval_ms");
}

/* A CI log showed one destination leader asked ~5,200 times a second for
 * 30 s while a wait was pending and the mirror had stalled. */
Test(lane_pace, stalled_wait_asks_the_leader_at_most_once_per_poll_interval, .timeout = 60)
{
	start(CONF_PROGRESS_POLL); /* poll_interval_ms 5 */
	const int cap = mir.poll_interval_ms;
	promoted();
	run_ms(300);
	produce(mc_src, 0, 5); /* 10..14: the mirror never copies them */
	struct mirror_wait_part p = stalled_part();
	struct outrec o = {0};
	cr_assert_not_null(mirror_gate_wait(g, &p, 1, mirror_now_ms() + 30000, on_out, &o));
	run_ms(ramp_ms(cap));
	double c0 = requests();
	int64_t t0 = mirror_worker_now_us();
	run_ms(1000);
	double n = requests() - c0;
	int64_t d_ms = (mirror_worker_now_us() - t0) / 1000;
	cr_assert(eq(i64, (int64_t)(o.calls), (int64_t)(0)), "still held: the destination lacks 10..14");
	/* requests at least cap_ms apart: no more than d / cap + 1 in d */
	int64_t bound = d_ms / cap + 1;
	cr_log_info("stalled wait: %.0f requests to the leader in %lld ms (%.0f/s), bound %lld", n, (long long)d_ms,
		    n * 1000.0 / (double)d_ms, (long long)bound);
	cr_assert(le(i64, (int64_t)n, bound), "%.0f requests in %lld ms with poll_interval_ms %d", n, (long long)d_ms, cap);
	cr_assert(ge(i64, (int64_t)n, 10), "the pending wait is still polled (%.0f requests)", n);
	mirror_wait_parts_clear(&p, 1);
	stop();
}

/* poll_interval_ms 1 s: a pause anywhere before the release would show as
 * hundreds of milliseconds. */
Test(lane_pace, record_arriving_in_the_burst_is_released_without_a_pause, .timeout = 60)
{
	start_with(CONF_PROGRESS_POLL, 1, 1000);
	promoted();
	run_ms(300);
	rd_kafka_t *pr = producer_to(mc_dst);
	produce(mc_src, 0, 5);
	struct mirror_wait_part p = stalled_part();
	struct outrec o = {0};
	int64_t t_wait = mirror_worker_now_us();
	cr_assert_not_null(mirror_gate_wait(g, &p, 1, mirror_now_ms() + 30000, on_out, &o));
	run_ms(2);
	produce_now(pr, 0, 5); /* the mirror copies 10..14 */
	int64_t t_landed = mirror_worker_now_us(), end = mirror_now_ms() + 10000;
	while (!o.calls && mirror_now_ms() < end)
		run_ms(1);
	int64_t took_us = mirror_worker_now_us() - t_landed;
	cr_assert(eq(i64, (int64_t)(o.calls), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(o.outcome), (int64_t)(MIRROR_SATISFIED)));
	cr_log_info("landed %lld µs after the wait, released %lld µs after landing", (long long)(t_landed - t_wait),
		    (long long)took_us);
	cr_assert(lt(i64, took_us / 1000, mir.poll_interval_ms / 2), "released %lld ms after the records landed",
		  (long long)(took_us / 1000));
	mirror_wait_parts_clear(&p, 1);
	rd_kafka_destroy(pr);
	stop();
}

Test(lane_pace, destination_hw_move_after_a_backoff_puts_the_lane_back_to_back, .timeout = 60)
{
	start_with(CONF_PROGRESS_POLL, 1, 200);
	const int cap = mir.poll_interval_ms;
	promoted();
	run_ms(300);
	produce(mc_src, 0, 5);
	struct mirror_wait_part p = stalled_part();
	struct outrec o = {0};
	cr_assert_not_null(mirror_gate_wait(g, &p, 1, mirror_now_ms() + 30000, on_out, &o));
	run_ms(ramp_ms(cap));
	double c0 = requests();
	int64_t t0 = mirror_worker_now_us();
	run_ms(3 * cap);
	int64_t d_ms = (mirror_worker_now_us() - t0) / 1000;
	cr_assert(le(i64, (int64_t)(requests() - c0), d_ms / cap + 1), "backed off before the move");
	produce(mc_dst, 0, 2); /* the mirror copies 10..11: the HW moves, 12..14 still missing */
	struct mirror_partition_info pi = {0};
	int64_t end = mirror_now_ms() + 10000;
	while (mirror_now_ms() < end && (mirror_gate_partition_info(g, "mock-dr", "orders", 0, &pi) != 0 ||
					 pi.progress != 12))
		run_ms(1);
	cr_assert(eq(i64, pi.progress, 12), "the move is read");
	c0 = requests();
	t0 = mirror_worker_now_us();
	run_ms(300);
	double n = requests() - c0;
	d_ms = (mirror_worker_now_us() - t0) / 1000;
	cr_assert(eq(i64, (int64_t)(o.calls), (int64_t)(0)), "still held: 12..14 missing");
	cr_log_info("after the move: %.0f requests in %lld ms (backed off: at most %lld)", n, (long long)d_ms,
		    (long long)(d_ms / cap + 1));
	cr_assert(gt(i64, (int64_t)n, d_ms / cap + 1), "back to back again, then doubling from 1 ms (%.0f requests)", n);
	mirror_wait_parts_clear(&p, 1);
	stop();
}

/* Right after a paced request, a wait on another partition of the same
 * leader: asked at once, not after the pause (1 s here). */
Test(lane_pace, new_wait_after_a_backoff_is_asked_at_once, .timeout = 60)
{
	start_with(CONF_PROGRESS_POLL, 1, 1000);
	promoted();
	run_ms(300);
	rd_kafka_t *pr = producer_to(mc_dst);
	produce(mc_src, 0, 5);
	produce(mc_src, 1, 1); /* orders-1 offset 3: on the source, not yet on the destination */
	struct mirror_wait_part p = stalled_part();
	struct outrec o = {0};
	cr_assert_not_null(mirror_gate_wait(g, &p, 1, mirror_now_ms() + 30000, on_out, &o));
	run_ms(ramp_ms(mir.poll_interval_ms));
	double c0 = requests();
	int64_t end = mirror_now_ms() + 5000;
	while (requests() == c0 && mirror_now_ms() < end)
		run_ms(1);
	cr_assert(gt(i64, (int64_t)requests(), (int64_t)c0), "a paced request");
	/* the lane now pauses for poll_interval_ms */
	struct mirror_wait_part p1 = {.topic = "orders", .partition = 1, .last_offset = 3, .committed = true};
	struct outrec o1 = {0};
	int64_t t_wait = mirror_worker_now_us();
	cr_assert_not_null(mirror_gate_wait(g, &p1, 1, mirror_now_ms() + 30000, on_out, &o1));
	produce_now(pr, 1, 1);
	end = mirror_now_ms() + 10000;
	while (!o1.calls && mirror_now_ms() < end)
		run_ms(1);
	int64_t took_ms = (mirror_worker_now_us() - t_wait) / 1000;
	cr_assert(eq(i64, (int64_t)(o1.calls), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(o1.outcome), (int64_t)(MIRROR_SATISFIED)));
	cr_assert(eq(i64, (int64_t)(o.calls), (int64_t)(0)), "orders-0 still held");
	cr_log_info("new wait released %lld ms after it came (poll_interval_ms %d)", (long long)took_ms,
		    mir.poll_interval_ms);
	cr_assert(lt(i64, took_ms, mir.poll_interval_ms / 2), "not after the pause (%lld ms)", (long long)took_ms);
	mirror_wait_parts_clear(&p, 1);
	mirror_wait_parts_clear(&p1, 1);
	rd_kafka_destroy(pr);
	stop();
}
