/*
 * tests/mirror/test_gate_switch.c — the switch in the gate (mirror/switch.c),
 * without Kafka (MIRROR_GATE_NO_WORKERS: this gate's records apply at once;
 * other writers' are injected as the state log delivers them): the switch
 * is refused until the mirror's failover is on record, the dry run changes
 * nothing, the record applies once and calls the data path's hook, and a
 * SWITCH read from the log switches a sidecar that never asked.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <event2/event.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"
#include "mirror/mirror.h"

static char *sync_topics[] = {"orders"};
static struct conf_mirror mirs[2];
static struct conf cfg;
static struct event_base *base;
static struct mirror_gate *g;
static int hook_calls;
static char hook_mirror[64];

static void on_switch(void *arg, const struct conf_mirror *cm)
{
	hook_calls++;
	snprintf(hook_mirror, sizeof(hook_mirror), "%s", cm->name);
}

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
	memset(mirs, 0, sizeof(mirs));
	for (int i = 0; i < 2; i++) {
		mirs[i].name = (char *)(i ? "dr2" : "dr");
		mirs[i].bootstrap = (char *)(i ? "127.0.0.1:2" : "127.0.0.1:1");
		mirs[i].topic_name = (char *)"{topic}";
		mirs[i].sync_topics = sync_topics;
		mirs[i].nsync_topics = i ? 0 : 1;
		mirs[i].sync_topic_demote_timeout_ms = 300;
	}
	cfg.mirrors = mirs;
	cfg.nmirrors = 2;
	cfg.gate_max_hold_ms = 30000;
	cfg.switch_base_port = 29000;
	cfg.switch_host = (char *)"127.0.0.1";
	cfg.listen_kafka.host = (char *)"127.0.0.1";
	cfg.listen_kafka.port = 9092;
	base = event_base_new();
	g = mirror_gate_new_ex(base, &cfg, MIRROR_GATE_NO_WORKERS);
	cr_assert_not_null(g);
	hook_calls = 0;
	hook_mirror[0] = '\0';
	mirror_gate_on_switch(g, on_switch, NULL);
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

struct answer {
	int calls, status;
	json_t *doc;
};

static void on_answer(void *arg, int status, const char *body)
{
	struct answer *a = arg;
	json_error_t e;
	a->calls++;
	a->status = status;
	a->doc = json_loads(body, 0, &e);
}

static void await(struct answer *a)
{
	int64_t end = mirror_now_ms() + 8000;
	while (!a->calls && mirror_now_ms() < end)
		run_ms(20);
	cr_assert(eq(i64, (int64_t)a->calls, (int64_t)1), "no answer");
	cr_assert_not_null(a->doc);
}

static const char *jstr(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

/* The topic SYNC on dr: a confirmed report of its one partition at lag 0. */
static void promote(void)
{
	struct mirror_report r = {.mirror = "dr", .topic = "orders", .partition = 0, .npartitions = 1,
				  .progress = 10, .source_hw = 10, .source_hw_after = 10, .isr = 3, .min_isr = 2};
	cr_assert(eq(i64, (int64_t)mirror_gate_inject_report(g, &r), (int64_t)0));
	pump();
	cr_assert(mirror_gate_is_gated(g, "orders"));
}

static void op(struct mirror_op *(*fn)(struct mirror_gate *, const char *, const char *, mirror_op_cb, void *))
{
	struct answer a = {0};
	cr_assert_not_null(fn(g, "dr", NULL, on_answer, &a));
	await(&a);
	cr_assert(eq(i64, (int64_t)a.status, (int64_t)200));
	json_decref(a.doc);
}

static struct mirror_op *fence_on(struct mirror_gate *gg, const char *m, const char *re, mirror_op_cb cb, void *arg)
{
	return mirror_gate_fence(gg, m, re, true, cb, arg);
}

static struct answer do_switch(bool dry_run)
{
	struct answer a = {0};
	cr_assert_not_null(mirror_gate_switch(g, "dr", dry_run, on_answer, &a));
	await(&a);
	return a;
}

TestSuite(gate_switch, .init = setup, .fini = teardown, .timeout = 30);

Test(gate_switch, refused_until_the_failover_is_on_record_then_applied_once)
{
	promote();
	struct answer a = do_switch(false);
	cr_assert(eq(i64, (int64_t)a.status, (int64_t)409));
	cr_assert(strstr(jstr(a.doc, "error"), "still gated") != NULL, "%s", jstr(a.doc, "error"));
	json_decref(a.doc);
	op(fence_on); /* fenced, not released: its failover did not verify */
	a = do_switch(false);
	cr_assert(eq(i64, (int64_t)a.status, (int64_t)409));
	cr_assert(strstr(jstr(a.doc, "error"), "not released") != NULL, "%s", jstr(a.doc, "error"));
	json_decref(a.doc);
	cr_assert(eq(i64, (int64_t)hook_calls, (int64_t)0));
	/* --release-sync cannot stand in for a verified failover */
	struct answer r = {0};
	cr_assert_not_null(mirror_gate_release(g, "dr", NULL, on_answer, &r));
	await(&r);
	cr_assert(eq(i64, (int64_t)r.status, (int64_t)409));
	cr_assert(strstr(jstr(r.doc, "error"), "only a failover that verified zero RPO releases it") != NULL, "%s",
		  jstr(r.doc, "error"));
	json_decref(r.doc);
	a = do_switch(false);
	cr_assert(eq(i64, (int64_t)a.status, (int64_t)409), "still not released");
	json_decref(a.doc);
	op(mirror_gate_release_verified); /* the failover's step 5 */
	a = do_switch(true);
	cr_assert(eq(i64, (int64_t)a.status, (int64_t)200));
	bool would = json_is_true(json_object_get(a.doc, "would_switch"));
	cr_assert(would, "the dry run would switch now");
	cr_assert_str_eq(jstr(a.doc, "serving"), "source");
	json_decref(a.doc);
	cr_assert(eq(i64, (int64_t)hook_calls, (int64_t)0), "a dry run changes nothing");
	cr_assert_null(mirror_gate_serving(g));
	a = do_switch(false);
	cr_assert(eq(i64, (int64_t)a.status, (int64_t)200));
	cr_assert_str_eq(jstr(a.doc, "serving"), "dr");
	cr_assert_str_eq(jstr(json_array_get(json_object_get(a.doc, "topics"), 0), "result"), "SWITCHED");
	json_decref(a.doc);
	cr_assert(eq(i64, (int64_t)hook_calls, (int64_t)1));
	cr_assert_str_eq(hook_mirror, "dr");
	cr_assert_str_eq(mirror_gate_serving(g), "dr");
	a = do_switch(false);
	cr_assert(eq(i64, (int64_t)a.status, (int64_t)200));
	cr_assert_str_eq(jstr(json_array_get(json_object_get(a.doc, "topics"), 0), "result"), "UNCHANGED");
	json_decref(a.doc);
	cr_assert(eq(i64, (int64_t)hook_calls, (int64_t)1), "applied once");
}

Test(gate_switch, refused_without_switch_config_or_a_failed_over_topic)
{
	struct answer a = do_switch(false);
	cr_assert(eq(i64, (int64_t)a.status, (int64_t)409));
	cr_assert(strstr(jstr(a.doc, "error"), "no failed-over topic") != NULL, "%s", jstr(a.doc, "error"));
	json_decref(a.doc);
	cfg.switch_base_port = 0;
	a = do_switch(false);
	cr_assert(eq(i64, (int64_t)a.status, (int64_t)409));
	cr_assert(strstr(jstr(a.doc, "error"), "switch.base_port") != NULL, "%s", jstr(a.doc, "error"));
	json_decref(a.doc);
	struct answer u = {0};
	cr_assert_not_null(mirror_gate_switch(g, "nope", false, on_answer, &u));
	await(&u);
	cr_assert(eq(i64, (int64_t)u.status, (int64_t)404));
	json_decref(u.doc);
	cr_assert(eq(i64, (int64_t)hook_calls, (int64_t)0));
}

/* Another sidecar's SWITCH, read from the log, switches this one; a later
 * one of another mirror is ignored; a hook registered afterwards hears of
 * the switch at once. */
Test(gate_switch, a_switch_record_from_the_log_applies_and_one_switch_per_process)
{
	const char *rec = "{\"v\":1,\"mirror\":\"dr\",\"topic\":\"*\",\"op\":\"SWITCH\",\"origin\":\"00000000000000aa\",\"seq\":7}";
	const char *other = "{\"v\":1,\"mirror\":\"dr2\",\"topic\":\"*\",\"op\":\"SWITCH\",\"origin\":\"00000000000000aa\",\"seq\":8}";
	cr_assert(eq(i64, (int64_t)mirror_gate_inject_record(g, rec, 3), (int64_t)0));
	cr_assert(eq(i64, (int64_t)mirror_gate_inject_record(g, other, 4), (int64_t)0));
	run_ms(50);
	cr_assert(eq(i64, (int64_t)hook_calls, (int64_t)1));
	cr_assert_str_eq(hook_mirror, "dr");
	cr_assert_str_eq(mirror_gate_serving(g), "dr");
	mirror_gate_on_switch(g, on_switch, NULL); /* registered after it applied */
	cr_assert(eq(i64, (int64_t)hook_calls, (int64_t)2));
	cr_assert_str_eq(hook_mirror, "dr");
	char *d = mirror_gate_describe_json(g, NULL, NULL);
	cr_assert(strstr(d, "\"serving\":\"dr\"") != NULL, "%s", d);
	free(d);
}
