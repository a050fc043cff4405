/*
 * tests/mirror/test_gate_lifecycle.c — the lifecycle inside the gate
 * (mirror/gate.c apply path, mirror/ops.c admin calls), without Kafka: no
 * state log (MIRROR_GATE_NO_WORKERS), so this gate is the decider and its
 * records apply at once; other writers' records are injected through the
 * bridge (mirror_gate_inject_record), as the state log delivers them.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <event2/event.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"
#include "mirror/mirror.h"

static char *sync_topics[] = {"orders.*"};
static struct conf_mirror mir;
static struct conf cfg;
static struct event_base *base;
static struct mirror_gate *g;

static void teardown(void)
{
	mirror_gate_free(g);
	g = NULL;
	if (base)
		event_base_free(base);
	base = NULL;
}

static void setup(void)
{
	teardown();
	memset(&cfg, 0, sizeof(cfg));
	memset(&mir, 0, sizeof(mir));
	mir.name = (char *)"dr";
	mir.bootstrap = (char *)"127.0.0.1:1";
	mir.topic_name = (char *)"{topic}";
	mir.sync_topics = sync_topics;
	mir.nsync_topics = 1;
	mir.sync_topic_demote_timeout_ms = 300;
	cfg.mirrors = &mir;
	cfg.nmirrors = 1;
	cfg.gate_max_hold_ms = 30000;
	base = event_base_new();
	g = mirror_gate_new_ex(base, &cfg, MIRROR_GATE_NO_WORKERS);
	cr_assert_not_null(g);
}

static void pump(void)
{
	for (int i = 0; i < 4; i++)
		event_base_loop(base, EVLOOP_NONBLOCK);
}

static void run_ms(int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
}

static void report(const char *topic, int32_t p, int32_t npart, int64_t progress, int64_t hw, const char *err)
{
	struct mirror_report r = {.mirror = "dr", .topic = topic, .partition = p, .npartitions = npart,
				  .progress = progress, .source_hw = hw, .source_hw_after = progress, .isr = err ? -1 : 3,
				  .min_isr = err ? -1 : 2, .error = err};
	cr_assert(eq(i64, (int64_t)(mirror_gate_inject_report(g, &r)), (int64_t)(0)));
	pump();
}

static struct mirror_topic_info info(const char *topic)
{
	struct mirror_topic_info ti;
	cr_assert(eq(i64, (int64_t)(mirror_gate_topic_info(g, "dr", topic, &ti)), (int64_t)(0)));
	return ti;
}

struct answer {
	int calls, status;
	char body[2048];
};

static void on_answer(void *arg, int status, const char *body)
{
	struct answer *a = arg;
	a->calls++;
	a->status = status;
	snprintf(a->body, sizeof(a->body), "%s", body);
}

/* Run the loop until answered (or 8 s). */
static void await(struct answer *a)
{
	int64_t end = mirror_now_ms() + 8000;
	while (!a->calls && mirror_now_ms() < end)
		run_ms(20);
	cr_assert(eq(i64, (int64_t)(a->calls), (int64_t)(1)), "no answer");
}

/* result of the only topic in an answer */
static const char *result0(struct answer *a, char *msg, size_t cap)
{
	static char res[64];
	json_error_t e;
	json_t *j = json_loads(a->body, 0, &e);
	cr_assert_not_null(j, "%s", a->body);
	json_t *t = json_array_get(json_object_get(j, "topics"), 0);
	cr_assert_not_null(t, "%s", a->body);
	snprintf(res, sizeof(res), "%s", json_string_value(json_object_get(t, "result")));
	if (msg)
		snprintf(msg, cap, "%s", json_string_value(json_object_get(t, "message")));
	json_decref(j);
	return res;
}

struct cbrec {
	int calls;
	enum mirror_outcome o;
};

static void on_done(void *arg, struct mirror_wait_part *parts, size_t n)
{
	struct cbrec *r = arg;
	r->calls++;
	r->o = parts[0].outcome;
	mirror_wait_parts_clear(parts, n); /* the parts own their messages; not checked here */
}

static void promote2(const char *topic)
{
	report(topic, 0, 2, 10, 10, NULL);
	report(topic, 1, 2, 10, 10, NULL);
	cr_assert(eq(i64, (int64_t)(info(topic).effective), (int64_t)(MIRROR_SYNC)));
}

TestSuite(gate_lifecycle, .init = setup, .fini = teardown, .timeout = 30);

Test(gate_lifecycle, alter_async_demotes_and_completes_held_waiters)
{
	promote2("orders");
	struct mirror_wait_part p = {.topic = "orders", .partition = 0, .last_offset = 50, .outcome = MIRROR_PENDING};
	struct cbrec cr = {0};
	cr_assert_not_null(mirror_gate_wait(g, &p, 1, mirror_now_ms() + 20000, on_done, &cr));
	struct answer a = {0};
	cr_assert_not_null(mirror_gate_alter(g, "dr", "orders", MIRROR_ASYNC, false, on_answer, &a));
	cr_assert(eq(i64, (int64_t)(a.calls), (int64_t)(0)), "never answered inside the call");
	await(&a);
	cr_assert(eq(i64, (int64_t)(a.status), (int64_t)(200)));
	cr_assert_str_eq(result0(&a, NULL, 0), "DEMOTED");
	pump();
	cr_assert(eq(i64, (int64_t)(cr.calls), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(cr.o), (int64_t)(MIRROR_SATISFIED)), "async predicate");
	struct mirror_topic_info ti = info("orders");
	cr_assert(eq(i64, (int64_t)(ti.desired), (int64_t)(MIRROR_ASYNC)));
	cr_assert(eq(i64, (int64_t)(ti.effective), (int64_t)(MIRROR_ASYNC)));
	/* lag zero again: desired ASYNC, no promotion */
	report("orders", 0, 2, 11, 11, NULL);
	cr_assert(eq(i64, (int64_t)(info("orders").effective), (int64_t)(MIRROR_ASYNC)));
	/* and a second --alter --async is UNCHANGED */
	struct answer b = {0};
	mirror_gate_alter(g, "dr", "orders", MIRROR_ASYNC, false, on_answer, &b);
	await(&b);
	cr_assert_str_eq(result0(&b, NULL, 0), "UNCHANGED");
}

Test(gate_lifecycle, alter_sync_pending_lag_then_auto_promotion)
{
	report("audit", 0, 1, 5, 9, NULL); /* not in sync_topics; lag 4 */
	cr_assert(eq(i64, (int64_t)(info("audit").desired), (int64_t)(MIRROR_ASYNC)));
	struct answer a = {0};
	mirror_gate_alter(g, "dr", "audit", MIRROR_SYNC, true, on_answer, &a);
	await(&a);
	char msg[300];
	cr_assert_str_eq(result0(&a, msg, sizeof(msg)), "PENDING_LAG");
	cr_assert_not_null(strstr(msg, "lag 4"), "%s", msg);
	cr_assert_not_null(strstr(msg, "added"), "%s", msg);
	cr_assert(eq(i64, (int64_t)(info("audit").desired), (int64_t)(MIRROR_SYNC)));
	cr_assert(eq(i64, (int64_t)(info("audit").effective), (int64_t)(MIRROR_ASYNC)));
	report("audit", 0, 1, 9, 9, NULL);
	cr_assert(eq(i64, (int64_t)(info("audit").effective), (int64_t)(MIRROR_SYNC)), "promoted when lag drained");
}

Test(gate_lifecycle, alter_sync_at_lag_zero_is_promoted)
{
	report("audit", 0, 1, 9, 9, NULL);
	struct answer a = {0};
	mirror_gate_alter(g, "dr", "audit", MIRROR_SYNC, false, on_answer, &a);
	await(&a);
	cr_assert_str_eq(result0(&a, NULL, 0), "PROMOTED");
	cr_assert(mirror_gate_is_gated(g, "audit"));
}

Test(gate_lifecycle, alter_sync_of_a_read_committed_mm2_mirror_warns_and_proceeds)
{
	mir.offsets = CONF_OFFSETS_MM2;
	mir.mm2_isolation_level = CONF_ISOLATION_READ_COMMITTED;
	report("audit", 0, 1, 9, 9, NULL);
	struct answer a = {0};
	mirror_gate_alter(g, "dr", "audit", MIRROR_SYNC, false, on_answer, &a);
	await(&a);
	char msg[1400];
	cr_assert_str_eq(result0(&a, msg, sizeof(msg)), "PROMOTED", "a warning, not a refusal");
	cr_assert(strstr(msg, "(warning: ") && strstr(msg, "read_committed") && strstr(msg, "COMMIT"), "%s", msg);
	cr_assert_not_null(strstr(a.body, "\"warning\""), "%s", a.body);
	/* read_uncommitted (MM2's default): no warning */
	mir.mm2_isolation_level = CONF_ISOLATION_READ_UNCOMMITTED;
	report("audit2", 0, 1, 9, 9, NULL);
	struct answer b = {0};
	mirror_gate_alter(g, "dr", "audit2", MIRROR_SYNC, false, on_answer, &b);
	await(&b);
	cr_assert_str_eq(result0(&b, msg, sizeof(msg)), "PROMOTED");
	cr_assert_null(strstr(b.body, "warning"), "%s", b.body);
}

Test(gate_lifecycle, alter_sync_of_an_mm2_mirror_names_an_unexempt_mirror_reader)
{
	mirror_gate_note_unexempt_reader(g, "source->dest|MirrorSourceConnector-0|replication-consumer");
	report("audit", 0, 1, 9, 9, NULL);
	struct answer a = {0};
	mirror_gate_alter(g, "dr", "audit", MIRROR_SYNC, false, on_answer, &a); /* preserved: not MM2 */
	await(&a);
	cr_assert_null(strstr(a.body, "warning"), "%s", a.body);
	mir.offsets = CONF_OFFSETS_MM2;
	report("audit2", 0, 1, 9, 9, NULL);
	struct answer b = {0};
	mirror_gate_alter(g, "dr", "audit2", MIRROR_SYNC, false, on_answer, &b);
	await(&b);
	char msg[1400];
	cr_assert_str_eq(result0(&b, msg, sizeof(msg)), "PROMOTED", "a warning, not a refusal");
	cr_assert(strstr(msg, "MirrorSourceConnector-0|replication-consumer") && strstr(msg, "exempt_client_ids"),
		  "%s", msg);
}

Test(gate_lifecycle, release_then_automatic_recovery_clears_marker)
{
	promote2("orders");
	struct mirror_wait_part p = {.topic = "orders", .partition = 1, .last_offset = 99, .outcome = MIRROR_PENDING};
	struct cbrec cr = {0};
	cr_assert_not_null(mirror_gate_wait(g, &p, 1, mirror_now_ms() + 20000, on_done, &cr));
	struct answer a = {0};
	mirror_gate_release(g, "dr", NULL, on_answer, &a);
	await(&a);
	cr_assert_str_eq(result0(&a, NULL, 0), "RELEASED");
	pump();
	cr_assert(eq(i64, (int64_t)(cr.calls), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(cr.o), (int64_t)(MIRROR_SATISFIED)));
	struct mirror_topic_info ti = info("orders");
	cr_assert(ti.released);
	cr_assert(ti.recovery_pending);
	cr_assert(eq(i64, (int64_t)(ti.desired), (int64_t)(MIRROR_SYNC)));
	cr_assert(eq(i64, (int64_t)(ti.effective), (int64_t)(MIRROR_ASYNC)));
	/* old samples (lag zero before the release) do not re-promote */
	run_ms(300);
	cr_assert(eq(i64, (int64_t)(info("orders").effective), (int64_t)(MIRROR_ASYNC)));
	/* the destination is back and caught up: recovery promotion */
	report("orders", 0, 2, 12, 12, NULL);
	cr_assert(eq(i64, (int64_t)(info("orders").effective), (int64_t)(MIRROR_ASYNC)), "partition 1 not fresh yet");
	report("orders", 1, 2, 12, 12, NULL);
	ti = info("orders");
	cr_assert(eq(i64, (int64_t)(ti.effective), (int64_t)(MIRROR_SYNC)));
	cr_assert_not(ti.released);
	cr_assert_not(ti.recovery_pending);
}

Test(gate_lifecycle, release_with_regex_and_no_match)
{
	promote2("orders");
	promote2("orders-eu");
	struct answer a = {0};
	mirror_gate_release(g, "dr", "orders-.*", on_answer, &a);
	await(&a);
	cr_assert_str_eq(result0(&a, NULL, 0), "RELEASED");
	cr_assert(info("orders-eu").released);
	cr_assert_not(info("orders").released);
	cr_assert(mirror_gate_is_gated(g, "orders"));
	struct answer b = {0};
	mirror_gate_release(g, "dr", "nothing.*", on_answer, &b);
	await(&b);
	cr_assert(eq(i64, (int64_t)(b.status), (int64_t)(200)));
	cr_assert_not_null(strstr(b.body, "\"warning\""), "%s", b.body);
	struct answer c = {0};
	mirror_gate_release(g, "dr", "([", on_answer, &c);
	await(&c);
	cr_assert(eq(i64, (int64_t)(c.status), (int64_t)(400)));
}

Test(gate_lifecycle, stale_promotion_after_release_is_rejected_then_backs_off)
{
	promote2("orders");
	struct answer a = {0};
	mirror_gate_release(g, "dr", "orders", on_answer, &a);
	await(&a);
	/* a promotion decided before the release lands after it */
	cr_assert(eq(i64, (int64_t)(mirror_gate_inject_record(g, "{\"mirror\":\"dr\",\"topic\":\"orders\",\"op\":\"REGISTER\","
						   "\"recovery\":false}", -1)), (int64_t)(0)));
	pump();
	struct mirror_topic_info ti = info("orders");
	cr_assert(eq(i64, (int64_t)(ti.effective), (int64_t)(MIRROR_ASYNC)), "not silently re-established");
	cr_assert(ti.released);
	cr_assert(ti.recovery_pending);
	cr_assert(eq(i64, (int64_t)(ti.retry_attempt), (int64_t)(1)));
	/* lag zero at once: RetryAttempt 1 → 500 ms backoff before the recovery */
	report("orders", 0, 2, 20, 20, NULL);
	report("orders", 1, 2, 20, 20, NULL);
	cr_assert(eq(i64, (int64_t)(info("orders").effective), (int64_t)(MIRROR_ASYNC)), "backing off");
	run_ms(800);
	ti = info("orders");
	cr_assert(eq(i64, (int64_t)(ti.effective), (int64_t)(MIRROR_SYNC)), "recovery promotion after the backoff");
	cr_assert_not(ti.released);
	cr_assert(eq(i64, (int64_t)(ti.retry_attempt), (int64_t)(0)));
}

Test(gate_lifecycle, demote_when_every_partition_fails_for_the_timeout)
{
	promote2("orders");
	report("orders", 0, 2, -1, -1, "UNKNOWN_TOPIC_OR_PART");
	run_ms(600);
	cr_assert(eq(i64, (int64_t)(info("orders").effective), (int64_t)(MIRROR_SYNC)), "one failing partition never demotes");
	report("orders", 1, 2, -1, -1, "UNKNOWN_TOPIC_OR_PART");
	run_ms(150);
	cr_assert(eq(i64, (int64_t)(info("orders").effective), (int64_t)(MIRROR_SYNC)), "not for the whole timeout yet");
	run_ms(600);
	struct mirror_topic_info ti = info("orders");
	cr_assert(eq(i64, (int64_t)(ti.effective), (int64_t)(MIRROR_ASYNC)));
	cr_assert(ti.recovery_pending);
	cr_assert(eq(i64, (int64_t)(ti.desired), (int64_t)(MIRROR_SYNC)));
	/* healthy again, lag zero: recovers */
	report("orders", 0, 2, 30, 30, NULL);
	report("orders", 1, 2, 30, 30, NULL);
	cr_assert(eq(i64, (int64_t)(info("orders").effective), (int64_t)(MIRROR_SYNC)));
	cr_assert_not(info("orders").recovery_pending);
}

Test(gate_lifecycle, log_intent_survives_config_reload)
{
	promote2("orders");
	struct answer a = {0};
	mirror_gate_alter(g, "dr", "orders", MIRROR_ASYNC, false, on_answer, &a);
	await(&a);
	cr_assert(eq(i64, (int64_t)(mirror_gate_reconfigure(g, &cfg)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(info("orders").desired), (int64_t)(MIRROR_ASYNC)), "an ALTER in the log beats sync_topics");
}

Test(gate_lifecycle, records_of_other_writers_apply_in_order)
{
	promote2("orders");
	mirror_gate_inject_record(g, "{\"mirror\":\"dr\",\"topic\":\"orders\",\"op\":\"ALTER\",\"type\":\"ASYNC\"}", -1);
	mirror_gate_inject_record(g, "{\"mirror\":\"dr\",\"topic\":\"orders\",\"op\":\"ALTER\",\"type\":\"SYNC\"}", -1);
	mirror_gate_inject_record(g, "not json", -1);
	mirror_gate_inject_record(g, "{\"mirror\":\"unknown\",\"topic\":\"orders\",\"op\":\"RELEASE\"}", -1);
	pump();
	struct mirror_topic_info ti = info("orders");
	/* ASYNC then SYNC: demoted, then (lag still zero) promoted again */
	cr_assert(eq(i64, (int64_t)(ti.desired), (int64_t)(MIRROR_SYNC)));
	cr_assert(eq(i64, (int64_t)(ti.effective), (int64_t)(MIRROR_SYNC)));
	char *js = mirror_gate_describe_json(g, "dr", "orders");
	cr_assert_not_null(strstr(js, "\"generation\":4"), "%s", js); /* REGISTER, ALTER, ALTER, REGISTER */
	free(js);
}

Test(gate_lifecycle, admin_errors)
{
	struct answer a = {0}, b = {0};
	mirror_gate_alter(g, "nope", "orders", MIRROR_SYNC, false, on_answer, &a);
	mirror_gate_alter(g, "dr", "bad topic!", MIRROR_SYNC, false, on_answer, &b);
	cr_assert(eq(i64, (int64_t)(a.calls + b.calls), (int64_t)(0)));
	await(&a);
	await(&b);
	cr_assert(eq(i64, (int64_t)(a.status), (int64_t)(404)));
	cr_assert(eq(i64, (int64_t)(b.status), (int64_t)(400)));
	cr_assert_not_null(strstr(a.body, "\"error\""));
	/* a cancelled call is never answered */
	struct answer c = {0};
	struct mirror_op *op = mirror_gate_alter(g, "dr", "orders", MIRROR_ASYNC, false, on_answer, &c);
	mirror_op_cancel(op);
	run_ms(200);
	cr_assert(eq(i64, (int64_t)(c.calls), (int64_t)(0)));
	cr_assert(mirror_gate_state_ready(g));
	cr_assert(mirror_gate_is_decider(g));
}

/* Invariant 1 at restart: until the state log is read, every topic holds
 * acks (the log may say any topic is effective SYNC, even one the config
 * does not name: operators promote with syncgate-ctl); once read, topics
 * that do not gate release their waiters. */
Test(gate_lifecycle, holds_until_the_state_log_is_read)
{
	mirror_gate_free(g);
	g = mirror_gate_new_ex(base, &cfg, MIRROR_GATE_NO_WORKERS | MIRROR_GATE_STATE_PENDING);
	cr_assert_not_null(g);
	cr_assert_not(mirror_gate_state_ready(g));
	cr_assert(mirror_gate_is_gated(g, "orders"), "config desires SYNC: fail closed");
	cr_assert(mirror_gate_is_gated(g, "audit"), "not in the config: fail closed too");
	struct mirror_wait_part p = {.topic = "orders", .partition = 0, .last_offset = 5, .outcome = MIRROR_PENDING};
	struct cbrec cr = {0};
	cr_assert_not_null(mirror_gate_wait(g, &p, 1, mirror_now_ms() + 20000, on_done, &cr));
	report("orders", 0, 1, 3, 3, NULL); /* lag zero, but no promotion before the log is read */
	cr_assert(eq(i64, (int64_t)(cr.calls), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(info("orders").effective), (int64_t)(MIRROR_ASYNC)));
	/* the log says: operator demoted it — still held until the log is read */
	mirror_gate_inject_record(g, "{\"mirror\":\"dr\",\"topic\":\"orders\",\"op\":\"ALTER\",\"type\":\"ASYNC\"}", -1);
	pump();
	cr_assert(eq(i64, (int64_t)(cr.calls), (int64_t)(0)), "held while the rest of the log is unread");
	/* a topic the config does not name: held until caught up as well */
	struct mirror_wait_part q = {.topic = "audit", .partition = 0, .last_offset = 9, .outcome = MIRROR_PENDING};
	struct cbrec cq = {0};
	cr_assert_not_null(mirror_gate_wait(g, &q, 1, mirror_now_ms() + 20000, on_done, &cq));
	pump();
	cr_assert(eq(i64, (int64_t)(cq.calls), (int64_t)(0)), "held while the log is read");
	mirror_gate_inject_record(g, NULL, -1);
	pump();
	cr_assert(mirror_gate_state_ready(g));
	cr_assert(eq(i64, (int64_t)(cr.calls), (int64_t)(1)), "released under the async predicate");
	cr_assert(eq(i64, (int64_t)(cr.o), (int64_t)(MIRROR_SATISFIED)));
	cr_assert(eq(i64, (int64_t)(cq.calls), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(cq.o), (int64_t)(MIRROR_SATISFIED)));
	cr_assert_not(mirror_gate_is_gated(g, "audit"));
	report("orders-eu", 0, 1, 10, 10, NULL);
	cr_assert(eq(i64, (int64_t)(info("orders-eu").effective), (int64_t)(MIRROR_SYNC)), "promotions resume once ready");
}

Test(gate_lifecycle, records_of_a_mirror_added_by_reload_are_applied_then)
{
	mirror_gate_inject_record(g, "{\"mirror\":\"dr2\",\"topic\":\"orders\",\"op\":\"ALTER\",\"type\":\"ASYNC\"}", -1);
	pump();
	static struct conf_mirror two[2];
	static struct conf c2;
	two[0] = mir;
	two[1] = mir;
	two[1].name = (char *)"dr2";
	c2 = cfg;
	c2.mirrors = two;
	c2.nmirrors = 2;
	cr_assert(eq(i64, (int64_t)(mirror_gate_reconfigure(g, &c2)), (int64_t)(0)));
	struct mirror_topic_info ti;
	cr_assert(eq(i64, (int64_t)(mirror_gate_topic_info(g, "dr2", "orders", &ti)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(ti.desired), (int64_t)(MIRROR_ASYNC)), "the log's ALTER, not sync_topics");
	cr_assert(eq(i64, (int64_t)(mirror_gate_topic_info(g, "dr", "orders", &ti)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(ti.desired), (int64_t)(MIRROR_SYNC)));
}

/* ------------------------------------------------------------------------ */
/* Invariant 1 across restarts (scenario S13): only the current   */
/* state releases waiters; a record folded from history never does.         */
/* ------------------------------------------------------------------------ */

#define REC(op, extra) "{\"mirror\":\"dr\",\"topic\":\"orders\",\"op\":\"" op "\"" extra "}"

/* A gate that is still reading its state log, with one wait on orders[0]
 * registered after the log's first record made the topic effective SYNC. */
static struct cbrec restarting_with_wait(struct mirror_wait_part *p)
{
	mirror_gate_free(g);
	g = mirror_gate_new_ex(base, &cfg, MIRROR_GATE_NO_WORKERS | MIRROR_GATE_STATE_PENDING);
	cr_assert_not_null(g);
	mirror_gate_inject_record(g, REC("REGISTER", ",\"recovery\":false"), 0);
	pump();
	cr_assert(eq(i64, (int64_t)(info("orders").effective), (int64_t)(MIRROR_SYNC)));
	*p = (struct mirror_wait_part){.topic = "orders", .partition = 0, .last_offset = 5,
				       .outcome = MIRROR_PENDING};
	return (struct cbrec){0};
}

/* Replays `n` records at offsets 1.., then "caught up"; the wait must still
 * be held at every step when the log's end state gates. */
static void replay_then_catch_up(struct cbrec *cr, const char **recs, int n)
{
	for (int i = 0; i < n; i++) {
		mirror_gate_inject_record(g, recs[i], i + 1);
		pump();
		cr_assert(eq(i64, (int64_t)(cr->calls), (int64_t)(0)), "record %d of the history released a live waiter: %s", i + 1, recs[i]);
	}
	mirror_gate_inject_record(g, NULL, -1);
	pump();
	cr_assert(mirror_gate_state_ready(g));
}

Test(gate_lifecycle, restart_history_with_alter_async_never_releases)
{
	struct mirror_wait_part p;
	struct cbrec cr = restarting_with_wait(&p);
	cr_assert_not_null(mirror_gate_wait(g, &p, 1, mirror_now_ms() + 20000, on_done, &cr));
	const char *hist[] = {REC("ALTER", ",\"type\":\"ASYNC\""), REC("ALTER", ",\"type\":\"SYNC\""),
			      REC("REGISTER", ",\"recovery\":false")};
	replay_then_catch_up(&cr, hist, 3);
	cr_assert(eq(i64, (int64_t)(info("orders").effective), (int64_t)(MIRROR_SYNC)));
	cr_assert(eq(i64, (int64_t)(cr.calls), (int64_t)(0)), "the log's end state gates: still held");
	report("orders", 0, 1, 5, 5, NULL); /* destination at 5: offset 5 not durable yet */
	cr_assert(eq(i64, (int64_t)(cr.calls), (int64_t)(0)));
	report("orders", 0, 1, 6, 6, NULL);
	cr_assert(eq(i64, (int64_t)(cr.calls), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(cr.o), (int64_t)(MIRROR_SATISFIED)));
}

Test(gate_lifecycle, restart_history_with_release_never_releases)
{
	struct mirror_wait_part p;
	struct cbrec cr = restarting_with_wait(&p);
	cr_assert_not_null(mirror_gate_wait(g, &p, 1, mirror_now_ms() + 20000, on_done, &cr));
	const char *hist[] = {REC("RELEASE", ""), REC("REGISTER", ",\"recovery\":true")};
	replay_then_catch_up(&cr, hist, 2);
	struct mirror_topic_info ti = info("orders");
	cr_assert(eq(i64, (int64_t)(ti.effective), (int64_t)(MIRROR_SYNC)));
	cr_assert_not(ti.released);
	cr_assert(eq(i64, (int64_t)(cr.calls), (int64_t)(0)), "recovered by the log's end: still held");
}

Test(gate_lifecycle, restart_history_with_demote_never_releases)
{
	struct mirror_wait_part p;
	struct cbrec cr = restarting_with_wait(&p);
	cr_assert_not_null(mirror_gate_wait(g, &p, 1, mirror_now_ms() + 20000, on_done, &cr));
	const char *hist[] = {REC("DEMOTE", ""), REC("REGISTER", ",\"recovery\":true")};
	replay_then_catch_up(&cr, hist, 2);
	cr_assert(eq(i64, (int64_t)(info("orders").effective), (int64_t)(MIRROR_SYNC)));
	cr_assert(eq(i64, (int64_t)(cr.calls), (int64_t)(0)), "re-promoted by the log's end: still held");
}

Test(gate_lifecycle, restart_history_ending_async_releases_only_when_caught_up)
{
	struct mirror_wait_part p;
	struct cbrec cr = restarting_with_wait(&p);
	cr_assert_not_null(mirror_gate_wait(g, &p, 1, mirror_now_ms() + 20000, on_done, &cr));
	const char *hist[] = {REC("ALTER", ",\"type\":\"ASYNC\"")};
	replay_then_catch_up(&cr, hist, 1);
	cr_assert(eq(i64, (int64_t)(cr.calls), (int64_t)(1)), "the end state is ASYNC: released once caught up");
	cr_assert(eq(i64, (int64_t)(cr.o), (int64_t)(MIRROR_SATISFIED)));
}

Test(gate_lifecycle, a_record_delivered_again_is_not_applied_twice)
{
	struct mirror_wait_part p;
	struct cbrec cr = restarting_with_wait(&p);
	const char *hist[] = {REC("ALTER", ",\"type\":\"ASYNC\""), REC("ALTER", ",\"type\":\"SYNC\""),
			      REC("REGISTER", ",\"recovery\":false")};
	replay_then_catch_up(&cr, hist, 3);
	cr_assert_not_null(mirror_gate_wait(g, &p, 1, mirror_now_ms() + 20000, on_done, &cr));
	/* the state log consumer rewinds: offsets 1.. arrive again, live */
	mirror_gate_inject_record(g, hist[0], 1);
	pump();
	cr_assert(eq(i64, (int64_t)(cr.calls), (int64_t)(0)), "a re-read ALTER ASYNC is history, not a demotion");
	cr_assert(eq(i64, (int64_t)(info("orders").effective), (int64_t)(MIRROR_SYNC)));
	/* a genuinely new record still applies */
	mirror_gate_inject_record(g, hist[0], 4);
	pump();
	cr_assert(eq(i64, (int64_t)(cr.calls), (int64_t)(1)), "a new ALTER ASYNC demotes and releases");
	cr_assert(eq(i64, (int64_t)(info("orders").effective), (int64_t)(MIRROR_ASYNC)));
}

Test(gate_lifecycle, reload_adding_a_mirror_with_a_demotion_in_its_history_gates_by_its_end_state)
{
	const char *dr2[] = {
		"{\"mirror\":\"dr2\",\"topic\":\"orders\",\"op\":\"REGISTER\",\"recovery\":false}",
		"{\"mirror\":\"dr2\",\"topic\":\"orders\",\"op\":\"ALTER\",\"type\":\"ASYNC\"}",
		"{\"mirror\":\"dr2\",\"topic\":\"orders\",\"op\":\"ALTER\",\"type\":\"SYNC\"}",
		"{\"mirror\":\"dr2\",\"topic\":\"orders\",\"op\":\"REGISTER\",\"recovery\":false}",
	};
	for (int i = 0; i < 4; i++)
		mirror_gate_inject_record(g, dr2[i], i);
	pump();
	/* a wait on "dr" (effective SYNC) is held across the reload */
	promote2("orders");
	struct mirror_wait_part p = {.topic = "orders", .partition = 0, .last_offset = 15, .outcome = MIRROR_PENDING};
	struct cbrec cr = {0};
	cr_assert_not_null(mirror_gate_wait(g, &p, 1, mirror_now_ms() + 20000, on_done, &cr));
	static struct conf_mirror two[2];
	static struct conf c2;
	two[0] = mir;
	two[1] = mir;
	two[1].name = (char *)"dr2";
	c2 = cfg;
	c2.mirrors = two;
	c2.nmirrors = 2;
	cr_assert(eq(i64, (int64_t)(mirror_gate_reconfigure(g, &c2)), (int64_t)(0)));
	pump();
	cr_assert(eq(i64, (int64_t)(cr.calls), (int64_t)(0)), "replaying dr2's history released a live waiter");
	struct mirror_topic_info ti;
	cr_assert(eq(i64, (int64_t)(mirror_gate_topic_info(g, "dr2", "orders", &ti)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(ti.effective), (int64_t)(MIRROR_SYNC)), "dr2's end state");
	/* a new produce waits for both */
	struct mirror_wait_part q = {.topic = "orders", .partition = 1, .last_offset = 15, .outcome = MIRROR_PENDING};
	struct cbrec cq = {0};
	cr_assert_not_null(mirror_gate_wait(g, &q, 1, mirror_now_ms() + 20000, on_done, &cq));
	report("orders", 1, 2, 16, 16, NULL); /* "dr" only */
	cr_assert(eq(i64, (int64_t)(cq.calls), (int64_t)(0)), "dr2 has not reported: held");
	struct mirror_report r2 = {.mirror = "dr2", .topic = "orders", .partition = 1, .npartitions = 2,
				   .progress = 16, .source_hw = 16, .source_hw_after = 16, .isr = 3, .min_isr = 2};
	cr_assert(eq(i64, (int64_t)(mirror_gate_inject_report(g, &r2)), (int64_t)(0)));
	pump();
	cr_assert(eq(i64, (int64_t)(cq.calls), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(cq.o), (int64_t)(MIRROR_SATISFIED)));
	/* the response held before the reload waits for dr2 as well */
	report("orders", 0, 2, 16, 16, NULL); /* "dr" has offset 15 */
	cr_assert(eq(i64, (int64_t)(cr.calls), (int64_t)(0)), "acknowledged without the mirror the reload added");
	r2.partition = 0;
	cr_assert(eq(i64, (int64_t)(mirror_gate_inject_report(g, &r2)), (int64_t)(0)));
	pump();
	cr_assert(eq(i64, (int64_t)(cr.calls), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(cr.o), (int64_t)(MIRROR_SATISFIED)));
}

/* KIP: once a mirror is registered the source HW no longer passes records it
 * lacks — a response already held when a second mirror is promoted waits for
 * that mirror too. */
Test(gate_lifecycle, a_promoted_mirror_joins_the_responses_already_held)
{
	static struct conf_mirror two[2];
	static struct conf c2;
	two[0] = mir;
	two[1] = mir;
	two[1].name = (char *)"dr2";
	c2 = cfg;
	c2.mirrors = two;
	c2.nmirrors = 2;
	cr_assert(eq(i64, (int64_t)(mirror_gate_reconfigure(g, &c2)), (int64_t)(0)));
	promote2("orders"); /* "dr" only */
	struct mirror_topic_info ti;
	cr_assert(eq(i64, (int64_t)(mirror_gate_topic_info(g, "dr2", "orders", &ti)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(ti.effective), (int64_t)(MIRROR_ASYNC)));
	struct mirror_wait_part p = {.topic = "orders", .partition = 0, .last_offset = 12, .outcome = MIRROR_PENDING};
	struct cbrec cr = {0};
	cr_assert_not_null(mirror_gate_wait(g, &p, 1, mirror_now_ms() + 20000, on_done, &cr));
	/* dr2 at lag zero (sampled before offset 12 was appended): promoted */
	struct mirror_report r2 = {.mirror = "dr2", .topic = "orders", .partition = 0, .npartitions = 2,
				   .progress = 10, .source_hw = 10, .source_hw_after = 10, .isr = 3, .min_isr = 2};
	cr_assert(eq(i64, (int64_t)(mirror_gate_inject_report(g, &r2)), (int64_t)(0)));
	r2.partition = 1;
	cr_assert(eq(i64, (int64_t)(mirror_gate_inject_report(g, &r2)), (int64_t)(0)));
	pump();
	cr_assert(eq(i64, (int64_t)(mirror_gate_topic_info(g, "dr2", "orders", &ti)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(ti.effective), (int64_t)(MIRROR_SYNC)));
	report("orders", 0, 2, 13, 13, NULL); /* "dr" has offset 12 */
	cr_assert(eq(i64, (int64_t)(cr.calls), (int64_t)(0)), "acknowledged without the mirror promoted while it was held");
	r2.partition = 0;
	r2.progress = r2.source_hw = r2.source_hw_after = 13;
	cr_assert(eq(i64, (int64_t)(mirror_gate_inject_report(g, &r2)), (int64_t)(0)));
	pump();
	cr_assert(eq(i64, (int64_t)(cr.calls), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(cr.o), (int64_t)(MIRROR_SATISFIED)));
}

/* ------------------------------------------------------------------------ */
/* Failover fence: FENCE/UNFENCE in the apply path                */
/* ------------------------------------------------------------------------ */

static void fence(bool on, const char *want)
{
	struct answer a = {0};
	cr_assert_not_null(mirror_gate_fence(g, "dr", "orders", on, on_answer, &a));
	await(&a);
	cr_assert(eq(i64, (int64_t)(a.status), (int64_t)(200)), "%s", a.body);
	cr_assert_str_eq(result0(&a, NULL, 0), want);
}

/* Fence, drain, release as a failover does: the fence refuses (fenced_by)
 * but keeps gating, so a held ack confirmed by the drain is an ack; one the
 * destination never confirmed FAILS at the release, never an ack; no
 * recovery promotion while fenced; unfence lifts both. */
Test(gate_lifecycle, fence_then_release_fails_unconfirmed_waiters_and_blocks_recovery)
{
	promote2("orders");
	cr_assert_null(mirror_gate_fenced_by(g, "orders"));
	struct mirror_wait_part p1 = {.topic = "orders", .partition = 0, .last_offset = 11, .outcome = MIRROR_PENDING};
	struct mirror_wait_part p2 = {.topic = "orders", .partition = 1, .last_offset = 50, .outcome = MIRROR_PENDING};
	struct cbrec c1 = {0}, c2 = {0};
	cr_assert_not_null(mirror_gate_wait(g, &p1, 1, mirror_now_ms() + 20000, on_done, &c1));
	cr_assert_not_null(mirror_gate_wait(g, &p2, 1, mirror_now_ms() + 20000, on_done, &c2));
	fence(true, "FENCED");
	cr_assert_str_eq(mirror_gate_fenced_by(g, "orders"), "dr");
	cr_assert_null(mirror_gate_fenced_by(g, "payments"));
	cr_assert(mirror_gate_is_gated(g, "orders"), "fenced topics keep gating until released");
	pump();
	cr_assert(eq(i64, (int64_t)(c1.calls + c2.calls), (int64_t)(0)), "the fence releases nobody");
	report("orders", 0, 2, 12, 12, NULL); /* drained: offset 11 is on the destination */
	cr_assert(eq(i64, (int64_t)(c1.calls), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(c1.o), (int64_t)(MIRROR_SATISFIED)));
	struct answer a = {0};
	mirror_gate_release_verified(g, "dr", NULL, on_answer, &a); /* failover's step 5 */
	await(&a);
	cr_assert_str_eq(result0(&a, NULL, 0), "RELEASED");
	pump();
	cr_assert(eq(i64, (int64_t)(c2.calls), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(c2.o), (int64_t)(MIRROR_TIMEOUT)), "released while fenced: an unconfirmed record is never acked");
	cr_assert_str_eq(mirror_gate_fenced_by(g, "orders"), "dr", "the fence outlives the release");
	/* fresh samples at lag zero: no recovery promotion while fenced */
	report("orders", 0, 2, 60, 60, NULL);
	report("orders", 1, 2, 60, 60, NULL);
	run_ms(300);
	cr_assert(eq(i64, (int64_t)(info("orders").effective), (int64_t)(MIRROR_ASYNC)));
	cr_assert(info("orders").released);
	fence(true, "UNCHANGED");
	fence(false, "UNFENCED");
	cr_assert_null(mirror_gate_fenced_by(g, "orders"));
	report("orders", 0, 2, 61, 61, NULL);
	report("orders", 1, 2, 61, 61, NULL);
	cr_assert(eq(i64, (int64_t)(info("orders").effective), (int64_t)(MIRROR_SYNC)), "unfenced: the KIP's recovery applies again");
	struct answer none = {0}; /* unfence selects fenced topics only */
	mirror_gate_fence(g, "dr", NULL, false, on_answer, &none);
	await(&none);
	cr_assert(strstr(none.body, "\"topics\":[]") && strstr(none.body, "no fenced topic"), "%s", none.body);
}

/* Replay at restart: a FENCE in the history refuses Produce while the log is
 * read (fail closed, even if a later UNFENCE was folded already), and as of
 * the log's end the end state decides. */
Test(gate_lifecycle, restart_history_with_fence_refuses_until_caught_up)
{
	mirror_gate_free(g);
	g = mirror_gate_new_ex(base, &cfg, MIRROR_GATE_NO_WORKERS | MIRROR_GATE_STATE_PENDING);
	cr_assert_not_null(g);
	cr_assert_null(mirror_gate_fenced_by(g, "orders"));
	cr_assert_not(mirror_gate_any_fenced(g));
	mirror_gate_inject_record(g, REC("FENCE", ""), 0);
	pump();
	cr_assert_str_eq(mirror_gate_fenced_by(g, "orders"), "dr");
	cr_assert(mirror_gate_any_fenced(g));
	mirror_gate_inject_record(g, REC("UNFENCE", ""), 1);
	pump();
	cr_assert_str_eq(mirror_gate_fenced_by(g, "orders"), "dr", "history: a fence seen stays until the end");
	cr_assert(mirror_gate_any_fenced(g), "history: a fence seen counts until the end");
	mirror_gate_inject_record(g, NULL, -1);
	pump();
	cr_assert_null(mirror_gate_fenced_by(g, "orders"), "the log's end: unfenced");
	cr_assert_not(mirror_gate_any_fenced(g), "the log's end: nothing fenced");

	/* a history ending fenced stays fenced */
	mirror_gate_free(g);
	g = mirror_gate_new_ex(base, &cfg, MIRROR_GATE_NO_WORKERS | MIRROR_GATE_STATE_PENDING);
	const char *hist[] = {REC("REGISTER", ""), REC("FENCE", ""), REC("RELEASE", ""),
			      REC("REGISTER", ",\"recovery\":true")};
	for (int i = 0; i < 4; i++)
		mirror_gate_inject_record(g, hist[i], i);
	mirror_gate_inject_record(g, NULL, -1);
	pump();
	cr_assert_str_eq(mirror_gate_fenced_by(g, "orders"), "dr");
	cr_assert(mirror_gate_any_fenced(g));
	struct mirror_topic_info ti = info("orders");
	cr_assert(eq(i64, (int64_t)(ti.effective), (int64_t)(MIRROR_ASYNC)), "the recovery REGISTER after the fence was rejected");
	cr_assert(ti.released);
}

/* mirror_gate_any_fenced (asked per streamed Produce) keeps counts where the
 * fence changes: each topic counts once, an unfence or the topic's mirror
 * leaving on reload takes it out. */
Test(gate_lifecycle, any_fenced_counts_fenced_topics)
{
	promote2("orders");
	promote2("orders.eu");
	struct answer a = {0};
	cr_assert_not(mirror_gate_any_fenced(g));
	mirror_gate_fence(g, "dr", "orders.*", true, on_answer, &a);
	await(&a);
	cr_assert(mirror_gate_any_fenced(g));
	fence(false, "UNFENCED"); /* orders, but not orders.eu */
	cr_assert(mirror_gate_any_fenced(g), "orders.eu is still fenced");
	memset(&a, 0, sizeof(a));
	mirror_gate_fence(g, "dr", NULL, false, on_answer, &a);
	await(&a);
	cr_assert_not(mirror_gate_any_fenced(g));
	cr_assert_null(mirror_gate_fenced_by(g, "orders.eu"));
	fence(true, "FENCED");
	fence(true, "UNCHANGED");
	cr_assert(mirror_gate_any_fenced(g));
	static struct conf_mirror other;
	static struct conf c2;
	other = mir;
	other.name = (char *)"dr3";
	c2 = cfg;
	c2.mirrors = &other;
	cr_assert(eq(i64, (int64_t)(mirror_gate_reconfigure(g, &c2)), (int64_t)(0)));
	pump();
	cr_assert_not(mirror_gate_any_fenced(g), "the fenced mirror left with the reload");
}

/* A produce accepted while the log was still read (held: every topic gates
 * then) on a topic whose history ends fenced and released fails at catch-up:
 * the end state's release never acks what the destination did not confirm. */
Test(gate_lifecycle, restart_history_fenced_and_released_fails_waiters_held_meanwhile)
{
	struct mirror_wait_part p;
	struct cbrec cr = restarting_with_wait(&p);
	cr_assert_not_null(mirror_gate_wait(g, &p, 1, mirror_now_ms() + 20000, on_done, &cr));
	const char *hist[] = {REC("FENCE", ""), REC("RELEASE", "")};
	replay_then_catch_up(&cr, hist, 2);
	cr_assert(eq(i64, (int64_t)(cr.calls), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(cr.o), (int64_t)(MIRROR_TIMEOUT)), "fenced and released: failed, not acknowledged");
}
