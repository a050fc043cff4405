/*
 * transitions.c — mirror type transitions of (mirror, topic) (KIP
 * "ASYNC→SYNC Promotion", "Source-Side Release", "Recovery"; docs/architecture.md):
 * the state-log apply path (records folded through lifecycle.c's pure rules,
 * then their entry actions), appending records, and the decider's checks
 * (promotion at lag zero, demotion when every partition fails) run by the
 * periodic tick. Waiters are released only through mirror_tstate_settle()
 * (wait.c), as of the current state. Loop thread.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mirror/internal.h"

/* The only place the effective type changes. Waiters are not released
 * here: the caller settles once the state is current (tstate_gating). */
static void tstate_set_effective(struct mirror_tstate *t, enum mirror_type to, const char *why)
{
	if (t->ls.effective == to)
		return;
	LOG_I("mirror_topic_type_changed", "mirror=%s topic=%s from=%s to=%s reason=\"%s\"%s",
	      t->link->name, t->topic, mirror_type_str(t->ls.effective), mirror_type_str(to), why,
	      t->link->gate->state_ready && !t->link->gate->replaying ? "" : " replayed=true");
	t->ls.effective = to;
	t->pending_logged = false;
	mirror_tstate_metrics(t);
	if (to == MIRROR_SYNC && mirror_link_txn_hazard(t->link))
		LOG_W("mirror_mm2_read_committed_sync", "mirror=%s topic=%s reason=\"" MIRROR_TXN_HAZARD_TEXT "\"",
		      t->link->name, t->topic);
}

/* Config reload: sync_topics set the desired type only while the state log
 * has no ALTER for (mirror, topic). */
void mirror_tstate_set_desired(struct mirror_tstate *t, enum mirror_type to)
{
	if (t->ls.desired == to || t->ls.desired_logged)
		return;
	t->ls.desired = to;
	t->pending_logged = false;
	if (to == MIRROR_ASYNC)
		tstate_set_effective(t, MIRROR_ASYNC, "desired ASYNC (config)");
	mirror_tstate_metrics(t);
	mirror_tstate_settle(t);
}

/* KIP ASYNC→SYNC Promotion: lag zero on every partition of the topic, with
 * the source HW sampled before the destination progress. Never rejected,
 * only deferred. The decider (alone) writes REGISTER to the state log; the
 * promotion takes effect when the record is read back (or at once without
 * a state log). RecoveryPromotion = pendingRecoveryPromotion; after a
 * rejection the next attempt waits mirror_lifecycle_backoff_ms(RetryAttempt). */
void mirror_tstate_check_promotion(struct mirror_tstate *t)
{
	struct mirror_gate *g = t->link->gate;
	if (t->ls.desired != MIRROR_SYNC || t->ls.effective == MIRROR_SYNC || t->npart <= 0 || t->ls.fenced)
		return; /* a fenced (failed-over) topic is never re-promoted */
	int64_t lag = mirror_tstate_lag(t, MIRROR_LAG_CURRENT, NULL);
	if (lag == 0) {
		int64_t now = mirror_now_ms();
		if (!g->decider || !g->state_ready || now < t->inflight_until_ms || now < t->next_attempt_ms)
			return;
		struct mirror_record r = {.kind = MIRROR_REC_REGISTER, .type = MIRROR_SYNC,
					  .recovery = t->ls.recovery_pending, .based_on = t->ls.generation};
		LOG_I("mirror_promotion_register", "mirror=%s topic=%s recovery=%s retry_attempt=%" PRId32
		      " generation=%" PRId64, t->link->name, t->topic, r.recovery ? "true" : "false",
		      t->ls.retry_attempt, t->ls.generation);
		t->inflight_until_ms = now + 5000;
		mirror_gate_append(g, t, &r);
		return;
	}
	if (!t->pending_logged) {
		t->pending_logged = true;
		if (lag > 0)
			LOG_I("mirror_promotion_pending", "mirror=%s topic=%s lag=%" PRId64
			      " reason=\"promotion pending lag drain\"", t->link->name, t->topic, lag);
		else
			LOG_I("mirror_promotion_pending", "mirror=%s topic=%s lag=unknown"
			      " reason=\"waiting for progress of every partition\"", t->link->name, t->topic);
	}
}

/* KIP per-partition failures: every partition of an effective-SYNC topic
 * failing continuously for sync_topic_demote_timeout_ms → DEMOTE (decider). */
static void tstate_check_demote(struct mirror_tstate *t, int64_t now)
{
	struct mirror_gate *g = t->link->gate;
	if (t->ls.effective != MIRROR_SYNC || t->ls.released || t->npart <= 0 || t->nfailing < t->npart)
		return;
	if (!g->decider || !g->state_ready || now < t->inflight_until_ms)
		return;
	int64_t latest = -1;
	for (int32_t p = 0; p < t->npart; p++) {
		struct mirror_pstate *ps = p < t->nparts_alloc ? t->parts[p] : NULL;
		if (!ps || ps->failing_since_ms < 0)
			return;
		if (ps->failing_since_ms > latest)
			latest = ps->failing_since_ms;
	}
	int timeout = conf_mirror_demote_timeout_ms(t->link->cm);
	if (now - latest < timeout)
		return;
	LOG_W("mirror_demote_all_partitions_failing", "mirror=%s topic=%s partitions=%" PRId32
	      " timeout_ms=%d generation=%" PRId64, t->link->name, t->topic, t->npart, timeout, t->ls.generation);
	struct mirror_record r = {.kind = MIRROR_REC_DEMOTE, .type = MIRROR_ASYNC, .based_on = t->ls.generation};
	t->inflight_until_ms = now + 5000;
	mirror_gate_append(g, t, &r);
}

/* Tell the admin calls (ops.c, above the gate) that the state may have
 * changed; the gate calls them through the hook it registered. */
static void state_changed(struct mirror_gate *g)
{
	if (g->on_state_changed)
		g->on_state_changed(g);
}

static void count_rejected(struct mirror_link *l, const char *topic, enum mirror_reject why)
{
	char m[160], t[300], labels[600];
	mirror_label_escape(m, sizeof(m), l->name);
	mirror_label_escape(t, sizeof(t), topic);
	snprintf(labels, sizeof(labels), "mirror=\"%s\",topic=\"%s\",reason=\"%s\"", m, t, mirror_reject_str(why));
	metric_add(metric_get(METRIC_COUNTER, "syncgate_sync_registration_rejected_total",
			      "KIP SyncRegistrationRejected{reason}: promotions rejected and topic-wide demotes",
			      labels, NULL, 0), 1);
}

/* Fold one record into (mirror, topic) on the loop thread: the pure rules
 * of lifecycle.c, then the entry actions (waiters released under the async
 * predicate on demotion, metrics, logs, admin calls answered). */
static void apply_one(struct mirror_gate *g, struct mirror_tstate *t, const struct mirror_record *r)
{
	struct mirror_link *l = t->link;
	struct mirror_lstate before = t->ls, after = t->ls;
	struct mirror_apply_out out;
	mirror_lifecycle_apply(&after, r, &out);
	enum mirror_type eff = after.effective;
	after.effective = before.effective;
	mirror_tstate_count_fence(t, -1);
	t->ls = after;
	if (after.fenced)
		t->fence_seen = true;
	mirror_tstate_count_fence(t, 1);
	if (eff != before.effective) {
		char why[160];
		snprintf(why, sizeof(why), "state log %s%s%s", mirror_rec_kind_str(r->kind),
			 r->kind == MIRROR_REC_REGISTER && r->recovery ? " (RecoveryPromotion)" : "",
			 r->kind == MIRROR_REC_ALTER ? (r->type == MIRROR_SYNC ? " SYNC" : " ASYNC") : "");
		tstate_set_effective(t, eff, why);
	}
	if ((r->kind == MIRROR_REC_RELEASE || r->kind == MIRROR_REC_DEMOTE) && out.changed) {
		/* Recovery needs fresh evidence: lag zero from samples taken after
		 * the release/demote (the destination was unreachable or failing;
		 * its old samples must not re-promote at once). */
		for (int32_t p = 0; p < t->nparts_alloc; p++)
			if (t->parts[p])
				t->parts[p]->sampled_hw = -1;
	}
	if (before.desired != after.desired) {
		t->pending_logged = false;
		if (after.desired == MIRROR_SYNC && l->worker) /* make the worker track it */
			mirror_worker_demand(l->worker, t->topic, 0, -1, 0, -1);
	}
	mirror_tstate_settle(t); /* a no-op while history is folded (tstate_gating) */
	mirror_tstate_metrics(t);
	if (out.count_rejected) {
		count_rejected(l, t->topic, out.reject);
		LOG_W("mirror_sync_registration_rejected", "mirror=%s topic=%s reason=%s retry_attempt=%" PRId32
		      " recovery_pending=%s", l->name, t->topic, mirror_reject_str(out.reject), t->ls.retry_attempt,
		      t->ls.recovery_pending ? "true" : "false");
	} else if (out.reject != MIRROR_REJ_NONE) {
		LOG_I("mirror_state_record_rejected", "mirror=%s topic=%s op=%s reason=%s", l->name, t->topic,
		      mirror_rec_kind_str(r->kind), mirror_reject_str(out.reject));
	}
	if (out.changed)
		LOG_I("mirror_state_applied", "mirror=%s topic=%s op=%s desired=%s effective=%s released=%s"
		      " recovery_pending=%s fenced=%s retry_attempt=%" PRId32 " generation=%" PRId64, l->name, t->topic,
		      mirror_rec_kind_str(r->kind), mirror_type_str(t->ls.desired), mirror_type_str(t->ls.effective),
		      t->ls.released ? "true" : "false", t->ls.recovery_pending ? "true" : "false",
		      t->ls.fenced ? "true" : "false", t->ls.retry_attempt, t->ls.generation);
	/* decider bookkeeping: our conditional record is no longer in flight */
	if (r->kind == MIRROR_REC_REGISTER || r->kind == MIRROR_REC_DEMOTE) {
		int64_t now = mirror_now_ms();
		t->inflight_until_ms = 0;
		t->next_attempt_ms = now + mirror_lifecycle_backoff_ms(t->ls.retry_attempt);
	}
	if (g->on_record_applied)
		g->on_record_applied(g, t, r, &before, &out);
	if (t->ls.desired == MIRROR_SYNC && t->ls.effective != MIRROR_SYNC)
		mirror_tstate_check_promotion(t);
}

/* A reload added mirror `name`: apply its records read while it was not
 * configured, in log order, and forget them. */
void mirror_gate_replay_unapplied(struct mirror_gate *g, const char *name)
{
	size_t keep = 0, n = g->nunapplied;
	char **recs = g->unapplied;
	g->unapplied = NULL;
	g->nunapplied = 0;
	g->replaying = true; /* history: no intermediate state releases a waiter */
	for (size_t i = 0; i < n; i++) {
		char m[256], t[512];
		struct mirror_record r;
		if (mirror_record_from_json(recs[i], strlen(recs[i]), m, sizeof(m), t, sizeof(t), &r) == 0 &&
		    strcmp(m, name) == 0) {
			mirror_gate_apply_record(g, recs[i], strlen(recs[i]), -1);
			free(recs[i]);
		} else {
			recs[keep++] = recs[i];
		}
	}
	g->replaying = false;
	mirror_settle_all(g, mirror_link_find(g, name));
	/* records applied above for other (still unknown) mirrors were re-kept */
	for (size_t i = 0; i < g->nunapplied; i++)
		free(g->unapplied[i]);
	free(g->unapplied);
	g->unapplied = recs;
	g->nunapplied = keep;
}

void mirror_gate_apply_record(struct mirror_gate *g, const char *data, size_t len, int64_t offset)
{
	char mirror[256], topic[512];
	struct mirror_record r;
	if (offset >= 0) {
		/* The log is folded once, in order: a record delivered again (the
		 * consumer re-read or rewound after an error) is history. */
		if (offset < g->log_next) {
			LOG_W("mirror_state_record_skipped", "offset=%" PRId64 " next=%" PRId64
			      " reason=\"delivered again; already applied\"", offset, g->log_next);
			return;
		}
		g->log_next = offset + 1;
	}
	if (mirror_record_from_json(data, len, mirror, sizeof(mirror), topic, sizeof(topic), &r) != 0) {
		LOG_W("mirror_state_record_malformed", "offset=%" PRId64 " reason=\"skipped by every reader\"", offset);
		return;
	}
	struct mirror_link *l = mirror_link_find(g, mirror);
	if (!l && r.kind == MIRROR_REC_PRODUCER_ID)
		return; /* a claim matters only where its mirror is served: never kept for a reload */
	if (!l) {
		LOG_D("mirror_state_record_kept", "offset=%" PRId64 " mirror=%s reason=\"mirror not configured; "
		      "applied if a reload adds it\"", offset, mirror);
		char **a = g->nunapplied < MIRROR_MAX_UNAPPLIED
				   ? realloc(g->unapplied, (g->nunapplied + 1) * sizeof(*a)) : NULL;
		char *copy = a ? strndup(data, len) : NULL;
		if (a)
			g->unapplied = a;
		if (copy)
			g->unapplied[g->nunapplied++] = copy;
		else
			LOG_W("mirror_state_record_dropped", "offset=%" PRId64 " mirror=%s reason=\"too many records "
			      "of unconfigured mirrors, or out of memory\"", offset, mirror);
		return;
	}
	if (r.kind == MIRROR_REC_SWITCH) { /* mirror-level (switch.c) */
		mirror_switch_apply(g, l, &r);
		state_changed(g);
		return;
	}
	if (r.kind == MIRROR_REC_PRODUCER_ID) { /* mirror-level, the data path's (producer_claims.c) */
		mirror_producer_claim_apply(g, l, &r);
		return;
	}
	struct mirror_tstate *t = mirror_tstate_get(l, topic, true);
	if (!t)
		return;
	apply_one(g, t, &r);
	state_changed(g);
	mirror_gate_schedule_done(g);
}

uint64_t mirror_gate_append(struct mirror_gate *g, struct mirror_tstate *t, struct mirror_record *r)
{
	r->origin = g->origin;
	r->seq = ++g->seq;
	if (!g->log) {
		/* No state log (tests, MIRROR_GATE_NO_WORKERS): this gate is the
		 * only reader; apply in append order at once. */
		apply_one(g, t, r);
		state_changed(g);
		mirror_gate_schedule_done(g);
		return r->seq;
	}
	char key[800];
	snprintf(key, sizeof(key), "%s/%s", t->link->name, t->topic);
	char *v = mirror_record_to_json(t->link->name, t->topic, r);
	if (!v || mirror_statelog_append(g->log, key, v) != 0)
		LOG_E("mirror_state_append_failed", "mirror=%s topic=%s op=%s", t->link->name, t->topic,
		      mirror_rec_kind_str(r->kind));
	free(v);
	return r->seq;
}

static void tick_one(struct mirror_tstate *t, void *arg)
{
	mirror_tstate_check_promotion(t);
	tstate_check_demote(t, *(const int64_t *)arg);
}

void mirror_gate_tick(struct mirror_gate *g)
{
	int64_t now = mirror_now_ms();
	mirror_each_topic(g, NULL, tick_one, &now);
	state_changed(g);
	mirror_gate_schedule_done(g);
}

