/*
 * tests/mirror/test_gate.c — the sync gate as a state machine, without Kafka:
 * progress reports are injected through the same bridge the workers use
 * (mirror_gate_inject_report) and the libevent loop is driven by hand.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"
#include "mirror/mirror.h"

/* ------------------------------------------------------------------------ */
/* Fixture                                                                  */
/* ------------------------------------------------------------------------ */

static char *east_topics[] = {"orders.*", "payments"};
static char *west_topics[] = {"orders.*"};
static char *none_topics[] = {"nothing-matches-this"};

static struct conf_mirror mirrors[2];
static struct conf cfg;
static struct event_base *base;
static struct mirror_gate *g;

struct cbrec {
	int calls;
	size_t nparts;
	struct mirror_wait_part *parts;
	int64_t at_ms;
};

static void on_done(void *arg, struct mirror_wait_part *parts, size_t nparts)
{
	struct cbrec *r = arg;
	r->calls++;
	r->parts = parts;
	r->nparts = nparts;
	r->at_ms = mirror_now_ms();
}

static void mirror_init(struct conf_mirror *m, const char *name, char **topics, size_t n)
{
	memset(m, 0, sizeof(*m));
	m->name = (char *)name;
	m->bootstrap = (char *)"127.0.0.1:1";
	m->topic_name = (char *)"{topic}";
	m->offsets = CONF_OFFSETS_PRESERVED;
	m->progress = CONF_PROGRESS_POLL;
	m->poll_interval_ms = 5;
	m->sync_topics = topics;
	m->nsync_topics = n;
	m->sync_topic_demote_timeout_ms = 30000;
}

static void teardown(void);

/* Criterion runs the suite's .init and then a test's own .init: the last
 * setup wins, the earlier gate is freed first. */
static void setup_n(size_t nmirrors)
{
	teardown();
	memset(&cfg, 0, sizeof(cfg));
	mirror_init(&mirrors[0], "dr-east", east_topics, 2);
	mirror_init(&mirrors[1], "dr-west", west_topics, 1);
	cfg.mirrors = mirrors;
	cfg.nmirrors = nmirrors;
	cfg.gate_max_hold_ms = 30000;
	base = event_base_new();
	cr_assert_not_null(base);
	g = mirror_gate_new_ex(base, &cfg, MIRROR_GATE_NO_WORKERS);
	cr_assert_not_null(g);
}

static void setup1(void) { setup_n(1); }
static void setup2(void) { setup_n(2); }

static void teardown(void)
{
	mirror_gate_free(g);
	g = NULL;
	if (base)
		event_base_free(base);
	base = NULL;
}

/* Run the loop until nothing is immediately ready. */
static void pump(void)
{
	for (int i = 0; i < 4; i++)
		event_base_loop(base, EVLOOP_NONBLOCK);
}

static void report(const char *mirror, const char *topic, int32_t partition, int32_t npart,
		   int64_t progress, int64_t source_hw, int32_t isr, int32_t min_isr, const char *err)
{
	struct mirror_report r = {
		.mirror = mirror, .topic = topic, .partition = partition, .npartitions = npart,
		.progress = progress, .source_hw = source_hw, .source_hw_after = progress, /* confirmed */
		.isr = isr, .min_isr = min_isr, .error = err,
	};
	cr_assert(eq(i64, (int64_t)(mirror_gate_inject_report(g, &r)), (int64_t)(0)));
	pump();
}

static void progress(const char *mirror, const char *topic, int32_t partition, int64_t p)
{
	report(mirror, topic, partition, -1, p, -1, -1, -1, NULL);
}

/* Bring (mirror, topic) to effective SYNC: lag zero on each partition. */
static void promote(const char *mirror, const char *topic, int32_t npart, int64_t at)
{
	for (int32_t p = 0; p < npart; p++)
		report(mirror, topic, p, npart, at, at, 3, 2, NULL);
	struct mirror_topic_info ti;
	cr_assert(eq(i64, (int64_t)(mirror_gate_topic_info(g, mirror, topic, &ti)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(ti.effective), (int64_t)(MIRROR_SYNC)), "%s/%s not promoted", mirror, topic);
}

static struct mirror_wait_part part(const char *topic, int32_t partition, int64_t last)
{
	struct mirror_wait_part p;
	memset(&p, 0, sizeof(p));
	p.topic = topic;
	p.partition = partition;
	p.last_offset = last;
	p.outcome = MIRROR_PENDING;
	return p;
}

/* Loop (blocking) until the callback ran or `ms` passed. */
static void run_until(struct cbrec *r, int ms)
{
	int64_t end = mirror_now_ms() + ms;
	while (!r->calls && mirror_now_ms() < end) {
		struct timeval tv = {0, 5000};
		event_base_loopexit(base, &tv);
		event_base_dispatch(base);
	}
}

/* ------------------------------------------------------------------------ */
/* Tests                                                                    */
/* ------------------------------------------------------------------------ */

TestSuite(mirror, .init = setup1, .fini = teardown, .timeout = 20);

Test(mirror, satisfied_when_progress_passes_last_offset)
{
	promote("dr-east", "orders", 1, 10);
	cr_assert(mirror_gate_is_gated(g, "orders"));
	struct mirror_wait_part p[1] = {part("orders", 0, 15)};
	struct cbrec r = {0};
	struct mirror_wait *w = mirror_gate_wait(g, p, 1, mirror_now_ms() + 5000, on_done, &r);
	cr_assert_not_null(w);
	progress("dr-east", "orders", 0, 15); /* 15 is not yet durable: first offset not durable */
	cr_assert(eq(i64, (int64_t)(r.calls), (int64_t)(0)));
	progress("dr-east", "orders", 0, 16);
	cr_assert(eq(i64, (int64_t)(r.calls), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(p[0].outcome), (int64_t)(MIRROR_SATISFIED)));
	cr_assert_str_empty(mirror_wait_part_message(&p[0]));
	cr_assert(eq(i64, (int64_t)(r.parts), (int64_t)(p)));
	cr_assert(eq(i64, (int64_t)(r.nparts), (int64_t)(1)));
}

Test(mirror, all_resolved_at_once_returns_null_without_callback)
{
	promote("dr-east", "orders", 1, 100);
	struct mirror_wait_part p[2] = {part("orders", 0, 50), part("unmirrored", 0, 7)};
	struct cbrec r = {0};
	cr_assert_null(mirror_gate_wait(g, p, 2, mirror_now_ms() + 5000, on_done, &r));
	cr_assert(eq(i64, (int64_t)(p[0].outcome), (int64_t)(MIRROR_SATISFIED)));
	cr_assert(eq(i64, (int64_t)(p[1].outcome), (int64_t)(MIRROR_SATISFIED)));
	pump();
	cr_assert(eq(i64, (int64_t)(r.calls), (int64_t)(0)));
}

Test(mirror, partial_p0_satisfied_p1_timeout_names_mirror_and_lag)
{
	promote("dr-east", "orders", 2, 10);
	struct mirror_wait_part p[2] = {part("orders", 0, 20), part("orders", 1, 30)};
	struct cbrec r = {0};
	cr_assert_not_null(mirror_gate_wait(g, p, 2, mirror_now_ms() + 60, on_done, &r));
	progress("dr-east", "orders", 0, 21);
	progress("dr-east", "orders", 1, 25);
	cr_assert(eq(i64, (int64_t)(r.calls), (int64_t)(0)));
	run_until(&r, 2000);
	cr_assert(eq(i64, (int64_t)(r.calls), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(p[0].outcome), (int64_t)(MIRROR_SATISFIED)));
	cr_assert(eq(i64, (int64_t)(p[1].outcome), (int64_t)(MIRROR_TIMEOUT)));
	/* offsets 25..30 are missing: lag 6 */
	cr_assert_str_eq(mirror_wait_part_message(&p[1]), "mirror dr-east: not replicated within 60 ms (lag 6)");
	mirror_wait_parts_clear(p, 2);
}

Test(mirror, isr_below_min_isr_fails_waiting_part_at_once)
{
	promote("dr-east", "orders", 2, 10);
	struct mirror_wait_part p[2] = {part("orders", 0, 20), part("orders", 1, 5)};
	struct cbrec r = {0};
	cr_assert_not_null(mirror_gate_wait(g, p, 2, mirror_now_ms() + 30000, on_done, &r));
	cr_assert(eq(i64, (int64_t)(p[1].outcome), (int64_t)(MIRROR_SATISFIED))); /* 5 < progress 10 */
	report("dr-east", "orders", 0, -1, -1, -1, 1, 2, NULL);
	cr_assert(eq(i64, (int64_t)(r.calls), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(p[0].outcome), (int64_t)(MIRROR_NOT_ENOUGH_REMOTE)));
	cr_assert_str_eq(mirror_wait_part_message(&p[0]), "mirror dr-east: ISR 1 < min.insync.replicas 2");
	cr_assert(eq(i64, (int64_t)(p[1].outcome), (int64_t)(MIRROR_SATISFIED)), "satisfied parts stay satisfied");

	/* A new wait while under MinISR fails at once; durable offsets still succeed. */
	struct mirror_wait_part q[2] = {part("orders", 0, 30), part("orders", 0, 3)};
	cr_assert_null(mirror_gate_wait(g, q, 2, mirror_now_ms() + 30000, on_done, &r));
	cr_assert(eq(i64, (int64_t)(q[0].outcome), (int64_t)(MIRROR_NOT_ENOUGH_REMOTE)));
	cr_assert(eq(i64, (int64_t)(q[1].outcome), (int64_t)(MIRROR_SATISFIED)));

	/* ISR back: waits again. */
	report("dr-east", "orders", 0, -1, -1, -1, 2, 2, NULL);
	struct mirror_wait_part s[1] = {part("orders", 0, 30)};
	struct cbrec r2 = {0};
	cr_assert_not_null(mirror_gate_wait(g, s, 1, mirror_now_ms() + 30000, on_done, &r2));
	progress("dr-east", "orders", 0, 31);
	cr_assert(eq(i64, (int64_t)(r2.calls), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(s[0].outcome), (int64_t)(MIRROR_SATISFIED)));
	mirror_wait_parts_clear(p, 2);
	mirror_wait_parts_clear(q, 2);
}

Test(mirror, every_gating_mirror_must_confirm, .init = setup2)
{
	promote("dr-east", "orders.eu", 1, 0);
	promote("dr-west", "orders.eu", 1, 0);
	struct mirror_wait_part p[1] = {part("orders.eu", 0, 9)};
	struct cbrec r = {0};
	int64_t t0 = mirror_now_ms();
	cr_assert_not_null(mirror_gate_wait(g, p, 1, t0 + 5000, on_done, &r));
	progress("dr-east", "orders.eu", 0, 10);
	cr_assert(eq(i64, (int64_t)(r.calls), (int64_t)(0)), "the faster mirror alone must not release");
	struct timeval tv = {0, 30000};
	event_base_loopexit(base, &tv);
	event_base_dispatch(base); /* the slower mirror confirms ~30 ms later */
	progress("dr-west", "orders.eu", 0, 10);
	cr_assert(eq(i64, (int64_t)(r.calls), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(p[0].outcome), (int64_t)(MIRROR_SATISFIED)));
	cr_assert(ge(i64, (int64_t)(r.at_ms - t0), (int64_t)(30)), "latency follows the slower mirror");
}

Test(mirror, timeout_names_the_slowest_mirror, .init = setup2)
{
	promote("dr-east", "orders.eu", 1, 0);
	promote("dr-west", "orders.eu", 1, 0);
	struct mirror_wait_part p[1] = {part("orders.eu", 0, 99)};
	struct cbrec r = {0};
	cr_assert_not_null(mirror_gate_wait(g, p, 1, mirror_now_ms() + 40, on_done, &r));
	progress("dr-east", "orders.eu", 0, 90);
	progress("dr-west", "orders.eu", 0, 50);
	run_until(&r, 2000);
	cr_assert(eq(i64, (int64_t)(p[0].outcome), (int64_t)(MIRROR_TIMEOUT)));
	cr_assert_str_eq(mirror_wait_part_message(&p[0]), "mirror dr-west: not replicated within 40 ms (lag 50)");
	mirror_wait_parts_clear(p, 1);
}

/* A part failed while its wait is being registered (deadline already past,
 * or ISR < MinISR) leaves none of its refs in a partition heap: with two
 * gating mirrors the second one's ref used to stay behind after the wait
 * was freed (a later report then touched freed memory; ASan run). */
Test(mirror, part_failed_at_registration_leaves_no_ref_of_any_mirror, .init = setup2)
{
	promote("dr-east", "orders.eu", 1, 0);
	promote("dr-west", "orders.eu", 1, 0);
	struct mirror_wait_part p[1] = {part("orders.eu", 0, 9)};
	struct cbrec r = {0};
	cr_assert_null(mirror_gate_wait(g, p, 1, mirror_now_ms() - 1, on_done, &r));
	cr_assert(eq(i64, (int64_t)(p[0].outcome), (int64_t)(MIRROR_TIMEOUT)));
	progress("dr-east", "orders.eu", 0, 10);
	progress("dr-west", "orders.eu", 0, 10);
	cr_assert(eq(i64, (int64_t)(r.calls), (int64_t)(0)));
	mirror_wait_parts_clear(p, 1);

	report("dr-west", "orders.eu", 0, -1, -1, -1, 1, 2, NULL); /* dr-west under MinISR */
	struct mirror_wait_part q[1] = {part("orders.eu", 0, 20)};
	cr_assert_null(mirror_gate_wait(g, q, 1, mirror_now_ms() + 30000, on_done, &r));
	cr_assert(eq(i64, (int64_t)(q[0].outcome), (int64_t)(MIRROR_NOT_ENOUGH_REMOTE)));
	progress("dr-east", "orders.eu", 0, 21);
	report("dr-west", "orders.eu", 0, -1, 21, -1, 2, 2, NULL);
	cr_assert(eq(i64, (int64_t)(r.calls), (int64_t)(0)));
	mirror_wait_parts_clear(q, 1);
}

Test(mirror, async_mirror_never_gates, .init = setup2)
{
	/* dr-west desires orders.* SYNC but is still ASYNC (lag 5). */
	promote("dr-east", "orders.eu", 1, 0);
	report("dr-west", "orders.eu", 0, 1, 0, 5, 3, 2, NULL);
	struct mirror_topic_info ti;
	cr_assert(eq(i64, (int64_t)(mirror_gate_topic_info(g, "dr-west", "orders.eu", &ti)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(ti.desired), (int64_t)(MIRROR_SYNC)));
	cr_assert(eq(i64, (int64_t)(ti.effective), (int64_t)(MIRROR_ASYNC)));
	cr_assert(eq(i64, (int64_t)(ti.lag), (int64_t)(5)));
	struct mirror_wait_part p[1] = {part("orders.eu", 0, 3)};
	struct cbrec r = {0};
	cr_assert_not_null(mirror_gate_wait(g, p, 1, mirror_now_ms() + 5000, on_done, &r));
	progress("dr-east", "orders.eu", 0, 4);
	cr_assert(eq(i64, (int64_t)(r.calls), (int64_t)(1)), "only the SYNC mirror gates");
	cr_assert(eq(i64, (int64_t)(p[0].outcome), (int64_t)(MIRROR_SATISFIED)));

	/* payments: SYNC for dr-east only; dr-west does not desire it. */
	promote("dr-east", "payments", 1, 0);
	cr_assert(eq(i64, (int64_t)(mirror_gate_topic_info(g, "dr-west", "payments", &ti)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(ti.desired), (int64_t)(MIRROR_ASYNC)));
	/* A topic no mirror wants is never gated. */
	cr_assert_not(mirror_gate_is_gated(g, "logs"));
}

Test(mirror, promotion_only_at_lag_zero_on_every_partition)
{
	struct mirror_topic_info ti;
	cr_assert_not(mirror_gate_is_gated(g, "orders"), "starts ASYNC");
	cr_assert(eq(i64, (int64_t)(mirror_gate_topic_info(g, "dr-east", "orders", &ti)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(ti.desired), (int64_t)(MIRROR_SYNC)));
	cr_assert(eq(i64, (int64_t)(ti.effective), (int64_t)(MIRROR_ASYNC)));

	report("dr-east", "orders", 0, 2, 10, 20, 3, 2, NULL); /* lag 10 */
	report("dr-east", "orders", 1, 2, 7, 7, 3, 2, NULL);   /* lag 0 */
	cr_assert_not(mirror_gate_is_gated(g, "orders"), "deferred, not rejected");
	/* progress-only report passing the old source HW sample: lag zero now */
	progress("dr-east", "orders", 0, 20);
	cr_assert(mirror_gate_is_gated(g, "orders"));
	cr_assert(eq(i64, (int64_t)(mirror_gate_topic_info(g, "dr-east", "orders", &ti)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(ti.effective), (int64_t)(MIRROR_SYNC)));
	cr_assert(eq(i64, (int64_t)(ti.lag), (int64_t)(0)));
}

Test(mirror, promotion_waits_for_every_partition)
{
	report("dr-east", "payments", 0, 3, 5, 5, 3, 2, NULL);
	report("dr-east", "payments", 1, 3, 5, 5, 3, 2, NULL);
	cr_assert_not(mirror_gate_is_gated(g, "payments"), "partition 2 unknown");
	report("dr-east", "payments", 2, 3, 0, 0, 3, 2, NULL);
	cr_assert(mirror_gate_is_gated(g, "payments"));
}

Test(mirror, waiters_released_in_offset_order)
{
	promote("dr-east", "orders", 1, 0);
	enum { N = 64 };
	struct mirror_wait_part p[N][1];
	struct cbrec r[N];
	memset(r, 0, sizeof(r));
	for (int i = 0; i < N; i++) {
		p[i][0] = part("orders", 0, (i * 37) % N); /* shuffled offsets */
		cr_assert_not_null(mirror_gate_wait(g, p[i], 1, mirror_now_ms() + 5000, on_done, &r[i]));
	}
	progress("dr-east", "orders", 0, N / 2);
	for (int i = 0; i < N; i++)
		cr_assert(eq(i64, (int64_t)(r[i].calls), (int64_t)(p[i][0].last_offset < N / 2 ? 1 : 0)), "offset %lld",
			     (long long)p[i][0].last_offset);
	struct mirror_partition_info pi;
	cr_assert(eq(i64, (int64_t)(mirror_gate_partition_info(g, "dr-east", "orders", 0, &pi)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(pi.held), (int64_t)(N / 2)));
	progress("dr-east", "orders", 0, N);
	for (int i = 0; i < N; i++)
		cr_assert(eq(i64, (int64_t)(r[i].calls), (int64_t)(1)));
}

Test(mirror, reconfigure_removing_a_mirror_releases_its_waiters_at_once, .init = setup2)
{
	promote("dr-east", "orders.eu", 1, 0);
	promote("dr-west", "orders.eu", 1, 0);
	struct mirror_wait_part p[1] = {part("orders.eu", 0, 9)};
	struct cbrec r = {0};
	cr_assert_not_null(mirror_gate_wait(g, p, 1, mirror_now_ms() + 30000, on_done, &r));
	progress("dr-east", "orders.eu", 0, 10);
	cr_assert(eq(i64, (int64_t)(r.calls), (int64_t)(0)));
	/* dr-west removed (conf with dr-east only) */
	static struct conf cfg2;
	cfg2 = cfg;
	cfg2.nmirrors = 1;
	cr_assert(eq(i64, (int64_t)(mirror_gate_reconfigure(g, &cfg2)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(r.calls), (int64_t)(0)), "never called back from inside a gate call");
	pump();
	cr_assert(eq(i64, (int64_t)(r.calls), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(p[0].outcome), (int64_t)(MIRROR_SATISFIED)));
	struct mirror_topic_info ti;
	cr_assert(eq(i64, (int64_t)(mirror_gate_topic_info(g, "dr-west", "orders.eu", &ti)), (int64_t)(-1)));
}

Test(mirror, reconfigure_demoting_a_topic_satisfies_under_async_predicate)
{
	promote("dr-east", "payments", 1, 0);
	struct mirror_wait_part p[1] = {part("payments", 0, 9)};
	struct cbrec r = {0};
	cr_assert_not_null(mirror_gate_wait(g, p, 1, mirror_now_ms() + 30000, on_done, &r));
	static struct conf cfg2;
	static struct conf_mirror m2;
	m2 = mirrors[0];
	m2.sync_topics = none_topics;
	m2.nsync_topics = 1;
	cfg2 = cfg;
	cfg2.mirrors = &m2;
	cr_assert(eq(i64, (int64_t)(mirror_gate_reconfigure(g, &cfg2)), (int64_t)(0)));
	pump();
	cr_assert(eq(i64, (int64_t)(r.calls), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(p[0].outcome), (int64_t)(MIRROR_SATISFIED)));
	cr_assert_not(mirror_gate_is_gated(g, "payments"));
	struct mirror_topic_info ti;
	cr_assert(eq(i64, (int64_t)(mirror_gate_topic_info(g, "dr-east", "payments", &ti)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(ti.desired), (int64_t)(MIRROR_ASYNC)));
	cr_assert(eq(i64, (int64_t)(ti.effective), (int64_t)(MIRROR_ASYNC)));
	/* Desired SYNC again: starts ASYNC, promoted at lag zero. */
	cr_assert(eq(i64, (int64_t)(mirror_gate_reconfigure(g, &cfg)), (int64_t)(0)));
	cr_assert_not(mirror_gate_is_gated(g, "payments"));
	report("dr-east", "payments", 0, 1, 0, 0, 3, 2, NULL);
	cr_assert(mirror_gate_is_gated(g, "payments"));
}

Test(mirror, cancel_means_no_callback)
{
	promote("dr-east", "orders", 1, 0);
	struct mirror_wait_part p[1] = {part("orders", 0, 9)};
	struct cbrec r = {0};
	struct mirror_wait *w = mirror_gate_wait(g, p, 1, mirror_now_ms() + 20, on_done, &r);
	cr_assert_not_null(w);
	mirror_wait_cancel(w);
	progress("dr-east", "orders", 0, 100);
	run_until(&r, 100);
	cr_assert(eq(i64, (int64_t)(r.calls), (int64_t)(0)));
	struct mirror_partition_info pi;
	cr_assert(eq(i64, (int64_t)(mirror_gate_partition_info(g, "dr-east", "orders", 0, &pi)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(pi.held), (int64_t)(0)));
}

Test(mirror, cancel_of_a_resolved_but_not_yet_called_back_wait)
{
	promote("dr-east", "payments", 1, 0);
	struct mirror_wait_part p[1] = {part("payments", 0, 9)};
	struct cbrec r = {0};
	struct mirror_wait *w = mirror_gate_wait(g, p, 1, mirror_now_ms() + 30000, on_done, &r);
	static struct conf cfg0;
	cfg0 = cfg;
	cfg0.nmirrors = 0;
	cr_assert(eq(i64, (int64_t)(mirror_gate_reconfigure(g, &cfg0)), (int64_t)(0))); /* resolves, callback deferred */
	mirror_wait_cancel(w);
	pump();
	cr_assert(eq(i64, (int64_t)(r.calls), (int64_t)(0)));
}

Test(mirror, parts_resolved_by_the_caller_are_left_alone)
{
	promote("dr-east", "orders", 1, 0);
	struct mirror_wait_part p[2] = {part("orders", 0, 9), part("orders", 0, 1)};
	p[1].outcome = MIRROR_TIMEOUT;
	mirror_wait_part_set_message(&p[1], "caller's");
	struct cbrec r = {0};
	cr_assert_not_null(mirror_gate_wait(g, p, 2, mirror_now_ms() + 30000, on_done, &r));
	progress("dr-east", "orders", 0, 10);
	cr_assert(eq(i64, (int64_t)(r.calls), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(p[0].outcome), (int64_t)(MIRROR_SATISFIED)));
	cr_assert(eq(i64, (int64_t)(p[1].outcome), (int64_t)(MIRROR_TIMEOUT)));
	cr_assert_str_eq(mirror_wait_part_message(&p[1]), "caller's");
	mirror_wait_parts_clear(p, 2);

	struct mirror_wait_part q[1] = {part("orders", 0, 100)};
	q[0].outcome = MIRROR_NOT_ENOUGH_REMOTE;
	cr_assert_null(mirror_gate_wait(g, q, 1, mirror_now_ms() + 30000, on_done, &r));
	cr_assert(eq(i64, (int64_t)(q[0].outcome), (int64_t)(MIRROR_NOT_ENOUGH_REMOTE)));
}

Test(mirror, past_deadline_times_out_at_once)
{
	promote("dr-east", "orders", 1, 0);
	struct mirror_wait_part p[1] = {part("orders", 0, 9)};
	struct cbrec r = {0};
	int64_t now = mirror_now_ms();
	cr_assert_null(mirror_gate_wait(g, p, 1, now - 1, on_done, &r));
	cr_assert(eq(i64, (int64_t)(p[0].outcome), (int64_t)(MIRROR_TIMEOUT)));
	cr_assert(eq(i64, (int64_t)(r.calls), (int64_t)(0)));
	cr_assert_str_eq(mirror_wait_part_message(&p[0]), "mirror dr-east: not replicated within 0 ms (lag 10)");
	mirror_wait_parts_clear(p, 1);
}

Test(mirror, partition_failures_are_tracked_and_cleared)
{
	report("dr-east", "orders", 3, 4, -1, -1, -1, -1, "UNKNOWN_TOPIC_OR_PART");
	struct mirror_topic_info ti;
	struct mirror_partition_info pi;
	cr_assert(eq(i64, (int64_t)(mirror_gate_topic_info(g, "dr-east", "orders", &ti)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(ti.failing_partitions), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(mirror_gate_partition_info(g, "dr-east", "orders", 3, &pi)), (int64_t)(0)));
	cr_assert_str_eq(pi.reason, "UNKNOWN_TOPIC_OR_PART");
	cr_assert(ge(i64, (int64_t)(pi.failing_since_ms), (int64_t)(0)));
	progress("dr-east", "orders", 3, 5);
	cr_assert(eq(i64, (int64_t)(mirror_gate_topic_info(g, "dr-east", "orders", &ti)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(ti.failing_partitions), (int64_t)(0)));
}

Test(mirror, reports_of_unknown_mirrors_are_dropped)
{
	report("dr-nowhere", "orders", 0, 1, 5, 5, 3, 2, NULL);
	struct mirror_topic_info ti;
	cr_assert(eq(i64, (int64_t)(mirror_gate_topic_info(g, "dr-nowhere", "orders", &ti)), (int64_t)(-1)));
}

Test(mirror, describe_json_lists_types_and_partitions)
{
	promote("dr-east", "orders", 1, 4);
	char *s = mirror_gate_describe_json(g, NULL, NULL);
	cr_assert_not_null(s);
	cr_assert_not_null(strstr(s, "\"name\":\"dr-east\""), "%s", s);
	cr_assert_not_null(strstr(s, "\"topic\":\"orders\""), "%s", s);
	cr_assert_not_null(strstr(s, "\"effective\":\"SYNC\""), "%s", s);
	cr_assert_not_null(strstr(s, "\"progress\":4"), "%s", s);
	free(s);
	s = mirror_gate_describe_json(g, "dr-east", "nope");
	cr_assert_not_null(strstr(s, "\"topics\":[]"), "%s", s);
	free(s);
}

Test(mirror, outcome_and_type_names)
{
	cr_assert_str_eq(mirror_outcome_str(MIRROR_TIMEOUT), "timeout");
	cr_assert_str_eq(mirror_type_str(MIRROR_SYNC), "SYNC");
	cr_assert_str_eq(mirror_type_str(MIRROR_ASYNC), "ASYNC");
}

/* Injection from another thread goes through the same bridge. */
#include <pthread.h>
static void *inject_thread(void *arg)
{
	(void)arg;
	struct mirror_report r = {.mirror = "dr-east", .topic = "orders", .partition = 0,
				  .npartitions = -1, .progress = 1000, .source_hw = -1, .source_hw_after = 1000,
				  .isr = -1, .min_isr = -1};
	mirror_gate_inject_report(g, &r);
	return NULL;
}

Test(mirror, reports_from_another_thread_wake_the_loop)
{
	promote("dr-east", "orders", 1, 0);
	struct mirror_wait_part p[1] = {part("orders", 0, 500)};
	struct cbrec r = {0};
	cr_assert_not_null(mirror_gate_wait(g, p, 1, mirror_now_ms() + 5000, on_done, &r));
	pthread_t th;
	pthread_create(&th, NULL, inject_thread, NULL);
	run_until(&r, 3000);
	pthread_join(th, NULL);
	cr_assert(eq(i64, (int64_t)(r.calls), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(p[0].outcome), (int64_t)(MIRROR_SATISFIED)));
}

Test(mirror, sync_topics_are_anchored_regexes)
{
	struct mirror_topic_info ti;
	const struct { const char *topic; enum mirror_type want; } cases[] = {
		{"orders", MIRROR_SYNC}, {"orders.eu", MIRROR_SYNC}, {"ordersX", MIRROR_SYNC},
		{"xorders", MIRROR_ASYNC}, {"payments", MIRROR_SYNC}, {"payments2", MIRROR_ASYNC},
		{"old-payments", MIRROR_ASYNC},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert(eq(i64, (int64_t)(mirror_gate_topic_info(g, "dr-east", cases[i].topic, &ti)), (int64_t)(0)));
		cr_assert(eq(i64, (int64_t)(ti.desired), (int64_t)(cases[i].want)), "%s", cases[i].topic);
	}
}

/* A record appended after a source HW sample, at an offset below it: the
 * source partition went back (recreated or truncated), and the destination's
 * progress names other records — never released by it. A sample taken after
 * the request arrived proves nothing (the HW may include the record). */
Test(mirror, source_gone_back_is_not_released_by_old_progress)
{
	promote("dr-east", "orders", 1, 20);
	struct mirror_wait_part p[1] = {part("orders", 0, 3)};
	struct cbrec r = {0};
	struct mirror_wait *w = mirror_gate_wait_since(g, p, 1, mirror_now_ms() + 1, mirror_now_ms() + 5000,
						      on_done, &r);
	cr_assert_not_null(w, "held, not satisfied by the destination's old offsets");
	progress("dr-east", "orders", 0, 30); /* read before the source was seen gone back */
	cr_assert(eq(i64, (int64_t)(r.calls), (int64_t)(0)), "a progress read before the suspicion does not release");
	struct mirror_partition_info pi;
	cr_assert(eq(i64, (int64_t)(mirror_gate_partition_info(g, "dr-east", "orders", 0, &pi)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(pi.progress), (int64_t)(-1)), "the old progress is forgotten");
	mirror_wait_cancel(w);

	/* control: the sample may postdate the append — same offsets, satisfied */
	promote("dr-east", "payments", 1, 20);
	struct mirror_wait_part q[1] = {part("payments", 0, 3)};
	cr_assert_null(mirror_gate_wait_since(g, q, 1, 0, mirror_now_ms() + 5000, on_done, &r));
	cr_assert(eq(i64, (int64_t)(q[0].outcome), (int64_t)(MIRROR_SATISFIED)));
}

static void count_fire(void *arg)
{
	(*(int *)arg)++;
}

/* Held-fetch watches are indexed by partition: a report fires only the
 * watches of its own partition whose offset the mirrored HW passed. */
Test(mirror, hw_watches_fire_per_partition)
{
	promote("dr-east", "orders", 12, 10);
	int fired[4] = {0};
	struct mirror_hw_watch *ws[4];
	for (int32_t p = 0; p < 4; p++)
		cr_assert_not_null(ws[p] = mirror_gate_hw_watch(g, "orders", p, 12, mirror_now_ms() + 5000,
								count_fire, &fired[p]));
	int many = 0;
	for (int i = 0; i < 2000; i++) /* others on partitions 4..11, far ahead */
		cr_assert_not_null(mirror_gate_hw_watch(g, "orders", 4 + i % 8, 1000, mirror_now_ms() + 5000,
							count_fire, &many));
	progress("dr-east", "orders", 1, 12);
	cr_assert(eq(i64, (int64_t)(fired[1]), (int64_t)(0)), "12 is not past 12");
	progress("dr-east", "orders", 1, 13);
	cr_assert(eq(i64, (int64_t)(fired[1]), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(fired[0] + fired[2] + fired[3]), (int64_t)(0)), "other partitions' watches stay armed");
	mirror_hw_watch_cancel(ws[2]);
	progress("dr-east", "orders", 2, 20);
	cr_assert(eq(i64, (int64_t)(fired[2]), (int64_t)(0)), "a cancelled watch never fires");
	progress("dr-east", "orders", 3, 20);
	cr_assert(eq(i64, (int64_t)(fired[3]), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(many), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(fired[0]), (int64_t)(0)));
}

/* The same when the gate's source sample is older than the records: a record
 * answered at or below one registered before its request arrived. */
Test(mirror, record_at_or_below_an_earlier_one_is_not_released_by_old_progress)
{
	promote("dr-east", "orders", 1, 0);
	struct cbrec r = {0};
	struct mirror_wait_part a[1] = {part("orders", 0, 19)};
	cr_assert_not_null(mirror_gate_wait_since(g, a, 1, mirror_now_ms(), mirror_now_ms() + 5000, on_done, &r));
	progress("dr-east", "orders", 0, 20);
	cr_assert(eq(i64, (int64_t)(r.calls), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(a[0].outcome), (int64_t)(MIRROR_SATISFIED)));
	/* a later request (arrived after that registration) answered with offset 0 */
	struct mirror_wait_part b[1] = {part("orders", 0, 0)};
	struct cbrec rb = {0};
	struct mirror_wait *w = mirror_gate_wait_since(g, b, 1, mirror_now_ms() + 1, mirror_now_ms() + 5000,
						      on_done, &rb);
	cr_assert_not_null(w, "held: the destination's offset 0 is not this record");
	cr_assert(eq(i64, (int64_t)(rb.calls), (int64_t)(0)));
	mirror_wait_cancel(w);
}

/* Offsets preserved: a destination HW is progress only with a source HW
 * sampled at or after it that is not below it. A report whose source sample
 * is below the destination (records written straight to the destination,
 * or a source gone back) releases nothing and is not the partition's
 * progress; with the source caught up, the same destination HW releases. */
Test(mirror, progress_above_the_source_sampled_after_it_never_releases)
{
	promote("dr-east", "orders", 1, 64);
	struct mirror_wait_part p[1] = {part("orders", 0, 64)};
	struct cbrec r = {0};
	cr_assert_not_null(mirror_gate_wait(g, p, 1, mirror_now_ms() + 5000, on_done, &r));
	/* 8 foreign records: the destination at 72 (+1 mirrored), the source at 65 */
	struct mirror_report rep = {.mirror = "dr-east", .topic = "orders", .partition = 0, .npartitions = 1,
				    .progress = 73, .source_hw = -1, .source_hw_after = 65, .isr = -1,
				    .min_isr = -1};
	cr_assert(eq(i64, (int64_t)(mirror_gate_inject_report(g, &rep)), (int64_t)(0)));
	pump();
	cr_assert(eq(i64, (int64_t)(r.calls), (int64_t)(0)), "never released by a destination above the source");
	struct mirror_partition_info pi;
	cr_assert(eq(i64, (int64_t)(mirror_gate_partition_info(g, "dr-east", "orders", 0, &pi)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(pi.progress), (int64_t)(64)), "not the partition's progress either (consumers, promotion)");
	rep.source_hw_after = -1; /* no source sample after it at all */
	cr_assert(eq(i64, (int64_t)(mirror_gate_inject_report(g, &rep)), (int64_t)(0)));
	pump();
	cr_assert(eq(i64, (int64_t)(r.calls), (int64_t)(0)), "nor without a source sample after it");
	rep.source_hw_after = 73;
	cr_assert(eq(i64, (int64_t)(mirror_gate_inject_report(g, &rep)), (int64_t)(0)));
	pump();
	cr_assert(eq(i64, (int64_t)(r.calls), (int64_t)(1)), "released once a source sample after it is at least it");
	cr_assert(eq(i64, (int64_t)(p[0].outcome), (int64_t)(MIRROR_SATISFIED)));
}
