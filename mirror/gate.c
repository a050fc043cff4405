/*
 * gate.c — the sync gate (KIP "High Watermark Advancement", "Errors",
 * "ASYNC→SYNC Promotion"): per (mirror, source topic) desired/effective mirror
 * type, per (mirror, topic, partition) progress, ISR and MinISR, and the held
 * waits of the proxy. Everything here runs on the event-loop thread.
 *
 * A part of a wait is gated by every mirror whose (mirror, topic) is
 * effective SYNC and not released at the time of the wait. It is
 *   SATISFIED            when each of them reported progress > last_offset,
 *   NOT_ENOUGH_REMOTE    at once when one of them (not yet satisfied) has
 *                        ISR < min.insync.replicas,
 *   TIMEOUT              at the deadline, naming the slowest mirror.
 * A mirror that stops gating (removed, demoted) satisfies its refs at once
 * (the async predicate). Callbacks run from the gate's own libevent
 * callbacks, never from inside a gate call.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mirror/internal.h"

/* seconds (Prometheus base unit) */
static const double latency_buckets[] = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5,
					 1, 2, 5, 10, 30, 60};

const char *mirror_outcome_str(enum mirror_outcome o)
{
	static const char *const s[MIRROR_OUTCOME_COUNT] = {
		[MIRROR_PENDING] = "pending",
		[MIRROR_SATISFIED] = "satisfied",
		[MIRROR_TIMEOUT] = "timeout",
		[MIRROR_NOT_ENOUGH_REMOTE] = "not_enough_remote_replicas",
	};
	return (unsigned)o < MIRROR_OUTCOME_COUNT ? s[o] : "?";
}

const char *mirror_type_str(enum mirror_type t)
{
	return t == MIRROR_SYNC ? "SYNC" : t == MIRROR_ASYNC ? "ASYNC" : "?";
}

int64_t mirror_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------------------ */
/* Topic and partition state                                                */
/* ------------------------------------------------------------------------ */

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* Whether (mirror, topic) holds acks now.
 *
 * Invariant 1, "only the current state releases" (DESIGN.md §3,
 * docs/architecture.md): a waiter is released under the async predicate
 * only by the state as of a log position that includes every record up to
 * now — never by an intermediate state folded from history. Two kinds of
 * folding are history, and every topic gates while they run:
 *   - start-up catch-up: until the state log has been read up to the high
 *     watermark it had at boot (the log may say any topic is effective SYNC,
 *     even one made SYNC with syncgate-ctl alone, and a demotion in the
 *     history must not release what the log's end state holds);
 *   - a reload that adds a mirror and replays its kept records.
 * Once folded, tstate_settle() releases the waiters of topics that turn out
 * not to gate. A record delivered again (the state log consumer re-reads or
 * rewinds) is skipped by its log offset in mirror_gate_apply_record(). */
static bool tstate_gating(const struct mirror_tstate *t)
{
	const struct mirror_gate *g = t->link->gate;
	if (!g->state_ready || g->replaying)
		return true;
	return t->ls.effective == MIRROR_SYNC && !t->ls.released;
}

static void tstate_metrics(struct mirror_tstate *t)
{
	metric_set(t->m_desired, t->ls.desired == MIRROR_SYNC);
	metric_set(t->m_effective, t->ls.effective == MIRROR_SYNC);
}

static int link_grow(struct mirror_link *l)
{
	size_t nb = l->nbuckets ? l->nbuckets * 2 : 16;
	struct mirror_tstate **b = calloc(nb, sizeof(*b));
	if (!b)
		return -1;
	for (size_t i = 0; i < l->nbuckets; i++) {
		struct mirror_tstate *t = l->buckets[i];
		while (t) {
			struct mirror_tstate *next = t->next;
			size_t k = hash_str(t->topic) & (nb - 1);
			t->next = b[k];
			b[k] = t;
			t = next;
		}
	}
	free(l->buckets);
	l->buckets = b;
	l->nbuckets = nb;
	return 0;
}

struct mirror_tstate *mirror_tstate_get(struct mirror_link *l, const char *topic, bool create)
{
	if (l->nbuckets) {
		for (struct mirror_tstate *t = l->buckets[hash_str(topic) & (l->nbuckets - 1)]; t; t = t->next)
			if (strcmp(t->topic, topic) == 0)
				return t;
	}
	if (!create)
		return NULL;
	if (l->ntopics >= l->nbuckets && link_grow(l) != 0)
		return NULL;
	struct mirror_tstate *t = calloc(1, sizeof(*t));
	if (!t || !(t->topic = strdup(topic))) {
		free(t);
		return NULL;
	}
	t->link = l;
	/* The config gives the initial desired type; the state log's records
	 * (all readers fold them from this same start) take over from here. */
	t->ls = mirror_lstate_initial(mirror_regex_match(l->re, l->nre, topic) ? MIRROR_SYNC : MIRROR_ASYNC);
	t->npart = -1;
	t->m_desired = mirror_metric_mt(METRIC_GAUGE, "syncgate_mirror_topic_desired_type",
					"KIP DesiredMirrorType per (mirror, topic): 1 SYNC, 0 ASYNC",
					l->name, topic);
	t->m_effective = mirror_metric_mt(METRIC_GAUGE, "syncgate_mirror_topic_effective_type",
					  "KIP EffectiveMirrorType per (mirror, topic): 1 SYNC (gating), 0 ASYNC",
					  l->name, topic);
	t->m_lag = mirror_metric_mt(METRIC_GAUGE, "syncgate_mirror_lag_offsets",
				    "Source high watermark minus destination progress, summed over partitions",
				    l->name, topic);
	t->m_failing = mirror_metric_mt(METRIC_GAUGE, "syncgate_sync_partitions_failing",
					"Partitions whose destination progress currently fails", l->name, topic);
	tstate_metrics(t);
	size_t k = hash_str(topic) & (l->nbuckets - 1);
	t->next = l->buckets[k];
	l->buckets[k] = t;
	l->ntopics++;
	return t;
}

static void pstate_init(struct mirror_pstate *ps)
{
	ps->progress = -1;
	ps->sampled_hw = -1;
	ps->isr = -1;
	ps->min_isr = -1;
	ps->failing_since_ms = -1;
	ps->demanded = -1;
	ps->demand_until_ms = -1;
}

struct mirror_pstate *mirror_pstate_get(struct mirror_tstate *t, int32_t partition, bool create)
{
	if (partition < 0 || partition >= MIRROR_MAX_PARTITIONS)
		return NULL;
	if (partition < t->nparts_alloc && t->parts[partition])
		return t->parts[partition];
	if (!create)
		return NULL;
	if (partition >= t->nparts_alloc) {
		int32_t n = t->nparts_alloc ? t->nparts_alloc : 4;
		while (n <= partition)
			n *= 2;
		struct mirror_pstate **p = realloc(t->parts, (size_t)n * sizeof(*p));
		if (!p)
			return NULL;
		memset(p + t->nparts_alloc, 0, (size_t)(n - t->nparts_alloc) * sizeof(*p));
		t->parts = p;
		t->nparts_alloc = n;
	}
	struct mirror_pstate *ps = calloc(1, sizeof(*ps));
	if (!ps)
		return NULL;
	pstate_init(ps);
	t->parts[partition] = ps;
	return ps;
}

/* ------------------------------------------------------------------------ */
/* Waits                                                                    */
/* ------------------------------------------------------------------------ */

static void list_remove(struct mirror_gate *g, struct mirror_wait *w)
{
	*w->pprev = w->next;
	if (w->next)
		w->next->pprev = w->pprev;
	else if (w->done)
		g->done_tail = w->pprev;
}

/* Every part resolved: move the wait to the done list (callback later). */
static void wait_complete(struct mirror_wait *w)
{
	struct mirror_gate *g = w->g;
	if (w->timer_added) {
		event_del(&w->timer);
		w->timer_added = false;
	}
	list_remove(g, w);
	w->done = true;
	w->next = NULL;
	w->pprev = g->done_tail;
	*g->done_tail = w;
	g->done_tail = &w->next;
	g->held--;
}

static void part_resolved(struct mirror_wait *w, uint32_t i, enum mirror_outcome o)
{
	w->parts[i].outcome = o;
	if (o == MIRROR_SATISFIED)
		w->parts[i].message[0] = '\0';
	metric_add(w->g->m_outcome[o], 1);
	if (--w->npending == 0 && !w->g->in_wait)
		wait_complete(w);
}

static void ref_detach(struct mirror_ref *r)
{
	if (r->heap_idx == MIRROR_NO_HEAP)
		return;
	mirror_heap_remove(r->ps, r);
	r->t->held--;
}

/* Fail part i of w: remove all its refs from their heaps. */
static void part_fail(struct mirror_wait *w, uint32_t i, enum mirror_outcome o)
{
	for (uint32_t k = w->ref_start[i]; k < w->ref_start[i + 1]; k++) {
		struct mirror_ref *r = &w->refs[k];
		ref_detach(r);
	}
	part_resolved(w, i, o);
}

/* Mirror r->link no longer holds part r->part back (satisfied, or released
 * under the async predicate when `observe` is false). */
static void ref_done(struct mirror_ref *r, bool observe, int64_t now)
{
	struct mirror_wait *w = r->w;
	ref_detach(r);
	if (observe)
		metric_observe(r->t->link->m_latency, (double)(now - w->start_ms) / 1000.0);
	if (--w->remaining[r->part] == 0 && w->parts[r->part].outcome == MIRROR_PENDING)
		part_resolved(w, r->part, MIRROR_SATISFIED);
}

static void isr_message(char *buf, size_t cap, const struct mirror_link *l, const struct mirror_pstate *ps)
{
	snprintf(buf, cap, "mirror %s: ISR %" PRId32 " < min.insync.replicas %" PRId32,
		 l->name, ps->isr, ps->min_isr);
}

static bool isr_short(const struct mirror_pstate *ps)
{
	return ps->isr >= 0 && ps->min_isr >= 0 && ps->isr < ps->min_isr;
}

static void wait_free(struct mirror_wait *w)
{
	free(w);
}

static void timeout_part(struct mirror_wait *w, uint32_t i)
{
	struct mirror_ref *slow = NULL;
	int64_t slow_lag = -2; /* -1: unknown progress, the slowest of all */
	for (uint32_t k = w->ref_start[i]; k < w->ref_start[i + 1]; k++) {
		struct mirror_ref *r = &w->refs[k];
		if (r->heap_idx == MIRROR_NO_HEAP)
			continue;
		int64_t lag = r->ps->progress < 0 ? -1 : r->offset + 1 - r->ps->progress;
		if (!slow || (slow_lag != -1 && (lag == -1 || lag > slow_lag))) {
			slow = r;
			slow_lag = lag;
		}
	}
	struct mirror_wait_part *p = &w->parts[i];
	long long ms = (long long)(w->deadline_ms - w->start_ms);
	if (slow && slow_lag >= 0)
		snprintf(p->message, sizeof(p->message),
			 "mirror %s: not replicated within %lld ms (lag %" PRId64 ")", slow->t->link->name, ms,
			 slow_lag);
	else
		snprintf(p->message, sizeof(p->message),
			 "mirror %s: not replicated within %lld ms (lag unknown)",
			 slow ? slow->t->link->name : "?", ms);
	LOG_D("mirror_wait_timeout", "mirror=%s topic=%s partition=%" PRId32 " offset=%" PRId64 " lag=%" PRId64,
	      slow ? slow->t->link->name : "?", p->topic, p->partition, p->last_offset, slow_lag);
	part_fail(w, i, MIRROR_TIMEOUT);
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct mirror_wait *w = arg;
	struct mirror_gate *g = w->g;
	w->timer_added = false;
	for (uint32_t i = 0; i < w->nparts && w->npending; i++)
		if (w->parts[i].outcome == MIRROR_PENDING)
			timeout_part(w, i);
	mirror_gate_flush_done(g);
}

void mirror_gate_flush_done(struct mirror_gate *g)
{
	struct mirror_wait *w;
	while ((w = g->done) != NULL) {
		list_remove(g, w);
		w->cb(w->arg, w->parts, w->nparts);
		wait_free(w);
	}
}

static void done_cb(evutil_socket_t fd, short what, void *arg)
{
	mirror_gate_flush_done(arg);
}

static void schedule_done(struct mirror_gate *g)
{
	if (g->done)
		event_active(g->done_ev, EV_TIMEOUT, 0);
}

struct mirror_wait *mirror_gate_wait(struct mirror_gate *g, struct mirror_wait_part *parts,
				     size_t nparts, int64_t deadline_ms,
				     mirror_wait_cb cb, void *arg)
{
	int64_t now = mirror_now_ms();
	/* Count the refs: one per (part, gating mirror). */
	size_t nrefs = 0, npending = 0;
	for (size_t i = 0; i < nparts; i++) {
		if (parts[i].outcome != MIRROR_PENDING)
			continue; /* resolved by the caller: left as it is */
		npending++;
		parts[i].message[0] = '\0';
		for (size_t m = 0; m < g->nlinks; m++) {
			struct mirror_tstate *t = mirror_tstate_get(g->links[m], parts[i].topic, true);
			if (t && tstate_gating(t))
				nrefs++;
		}
	}
	size_t sz = sizeof(struct mirror_wait) + nrefs * sizeof(struct mirror_ref) +
		    (2 * nparts + 1) * sizeof(uint32_t);
	struct mirror_wait *w = calloc(1, sz);
	if (!w) {
		/* No memory to hold: fail closed (never a false ack). */
		for (size_t i = 0; i < nparts; i++) {
			if (parts[i].outcome != MIRROR_PENDING)
				continue;
			parts[i].outcome = MIRROR_TIMEOUT;
			snprintf(parts[i].message, sizeof(parts[i].message), "syncgate: out of memory");
		}
		return NULL;
	}
	w->g = g;
	w->parts = parts;
	w->nparts = nparts;
	w->cb = cb;
	w->arg = arg;
	w->start_ms = now;
	w->deadline_ms = deadline_ms;
	w->refs = (struct mirror_ref *)(w + 1);
	w->remaining = (uint32_t *)(w->refs + nrefs);
	w->ref_start = w->remaining + nparts;
	w->npending = npending;
	w->pprev = &g->waits;
	w->next = g->waits;
	if (g->waits)
		g->waits->pprev = &w->next;
	g->waits = w;
	g->held++;

	g->in_wait = true;
	size_t k = 0;
	for (uint32_t i = 0; i < nparts; i++) {
		struct mirror_wait_part *p = &parts[i];
		w->ref_start[i] = (uint32_t)k;
		if (p->outcome != MIRROR_PENDING) {
			w->ref_start[i + 1] = (uint32_t)k;
			continue;
		}
		const char *fail_msg_link = NULL;
		struct mirror_pstate *fail_ps = NULL;
		for (size_t m = 0; m < g->nlinks; m++) {
			struct mirror_link *l = g->links[m];
			struct mirror_tstate *t = mirror_tstate_get(l, p->topic, false);
			if (!t || !tstate_gating(t))
				continue;
			struct mirror_pstate *ps = mirror_pstate_get(t, p->partition, true);
			if (!ps) {
				fail_msg_link = l->name;
				continue;
			}
			if (ps->progress > p->last_offset) {
				metric_observe(l->m_latency, 0);
				continue;
			}
			if (isr_short(ps) && !fail_ps) {
				fail_ps = ps;
				isr_message(p->message, sizeof(p->message), l, ps);
			}
			struct mirror_ref *r = &w->refs[k++];
			r->w = w;
			r->t = t;
			r->offset = p->last_offset;
			r->part = i;
			r->heap_idx = MIRROR_NO_HEAP;
			if (mirror_heap_push(ps, r) != 0) {
				fail_msg_link = l->name;
				continue;
			}
			t->held++;
			w->remaining[i]++;
			if (l->worker && (p->last_offset > ps->demanded || deadline_ms > ps->demand_until_ms)) {
				if (p->last_offset > ps->demanded)
					ps->demanded = p->last_offset;
				if (deadline_ms > ps->demand_until_ms)
					ps->demand_until_ms = deadline_ms;
				mirror_worker_demand(l->worker, p->topic, p->partition, ps->demanded,
						     ps->demand_until_ms);
			}
		}
		w->ref_start[i + 1] = (uint32_t)k;
		if (fail_ps) {
			part_fail(w, i, MIRROR_NOT_ENOUGH_REMOTE);
		} else if (fail_msg_link) {
			snprintf(p->message, sizeof(p->message), "mirror %s: out of memory", fail_msg_link);
			part_fail(w, i, MIRROR_TIMEOUT);
		} else if (w->remaining[i] == 0) {
			part_resolved(w, i, MIRROR_SATISFIED);
		} else if (deadline_ms <= now) {
			timeout_part(w, i);
		}
	}
	w->nrefs = k;
	g->in_wait = false;

	if (w->npending == 0) {
		list_remove(g, w);
		g->held--;
		wait_free(w);
		return NULL;
	}
	event_assign(&w->timer, g->base, -1, 0, timer_cb, w);
	struct timeval tv = {(deadline_ms - now) / 1000, ((deadline_ms - now) % 1000) * 1000};
	event_add(&w->timer, &tv);
	w->timer_added = true;
	return w;
}

void mirror_wait_cancel(struct mirror_wait *w)
{
	if (!w)
		return;
	struct mirror_gate *g = w->g;
	if (!w->done) {
		for (uint32_t i = 0; i < w->nparts; i++)
			for (uint32_t k = w->ref_start[i]; k < w->ref_start[i + 1]; k++) {
				ref_detach(&w->refs[k]);
			}
		if (w->timer_added)
			event_del(&w->timer);
		g->held--;
	}
	list_remove(g, w);
	wait_free(w);
}

/* ------------------------------------------------------------------------ */
/* Mirror type changes                                                      */
/* ------------------------------------------------------------------------ */

/* Release every ref of (mirror, topic) under the async predicate. */
static void tstate_release_waiters(struct mirror_tstate *t)
{
	for (int32_t p = 0; p < t->nparts_alloc; p++) {
		struct mirror_pstate *ps = t->parts[p];
		while (ps && ps->nheap)
			ref_done(ps->heap[0], false, 0);
	}
}

/* The only place that releases waiters because of the mirror type: when
 * (mirror, topic) does not gate as of the current state (tstate_gating). */
static void tstate_settle(struct mirror_tstate *t)
{
	if (!tstate_gating(t))
		tstate_release_waiters(t);
}

/* Every (mirror, topic) of link `l`, or of every link when `l` is NULL. */
static void settle_all(struct mirror_gate *g, struct mirror_link *l)
{
	for (size_t i = 0; i < g->nlinks; i++) {
		if (l && g->links[i] != l)
			continue;
		for (size_t b = 0; b < g->links[i]->nbuckets; b++)
			for (struct mirror_tstate *t = g->links[i]->buckets[b]; t; t = t->next)
				tstate_settle(t);
	}
}

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
	tstate_metrics(t);
}

/* Config reload: sync_topics set the desired type only while the state log
 * has no ALTER for (mirror, topic). */
static void tstate_set_desired(struct mirror_tstate *t, enum mirror_type to)
{
	if (t->ls.desired == to || t->ls.desired_logged)
		return;
	t->ls.desired = to;
	t->pending_logged = false;
	if (to == MIRROR_ASYNC)
		tstate_set_effective(t, MIRROR_ASYNC, "desired ASYNC (config)");
	tstate_metrics(t);
	tstate_settle(t);
}

int64_t mirror_tstate_lag(const struct mirror_tstate *t)
{
	if (t->npart <= 0)
		return -1;
	int64_t lag = 0;
	for (int32_t p = 0; p < t->npart; p++) {
		struct mirror_pstate *ps = p < t->nparts_alloc ? t->parts[p] : NULL;
		if (!ps || ps->sampled_hw < 0 || ps->progress < 0 || ps->failing_since_ms >= 0)
			return -1; /* unknown, or not current: never "lag zero" */
		if (ps->sampled_hw > ps->progress)
			lag += ps->sampled_hw - ps->progress;
	}
	return lag;
}

/* KIP ASYNC→SYNC Promotion: lag zero on every partition of the topic, with
 * the source HW sampled before the destination progress. Never rejected,
 * only deferred. The decider (alone) writes REGISTER to the state log; the
 * promotion takes effect when the record is read back (or at once without
 * a state log). RecoveryPromotion = pendingRecoveryPromotion; after a
 * rejection the next attempt waits mirror_lifecycle_backoff_ms(RetryAttempt). */
static void tstate_check_promotion(struct mirror_tstate *t)
{
	struct mirror_gate *g = t->link->gate;
	if (t->ls.desired != MIRROR_SYNC || t->ls.effective == MIRROR_SYNC || t->npart <= 0)
		return;
	int64_t lag = mirror_tstate_lag(t);
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
	int timeout = t->link->cm->sync_topic_demote_timeout_ms > 0 ? t->link->cm->sync_topic_demote_timeout_ms
								       : 30000;
	if (now - latest < timeout)
		return;
	LOG_W("mirror_demote_all_partitions_failing", "mirror=%s topic=%s partitions=%" PRId32
	      " timeout_ms=%d generation=%" PRId64, t->link->name, t->topic, t->npart, timeout, t->ls.generation);
	struct mirror_record r = {.kind = MIRROR_REC_DEMOTE, .type = MIRROR_ASYNC, .based_on = t->ls.generation};
	t->inflight_until_ms = now + 5000;
	mirror_gate_append(g, t, &r);
}

static void tstate_update_lag(struct mirror_tstate *t)
{
	int64_t lag = 0;
	for (int32_t p = 0; p < t->nparts_alloc; p++) {
		struct mirror_pstate *ps = t->parts[p];
		if (ps && ps->sampled_hw >= 0 && ps->progress >= 0 && ps->sampled_hw > ps->progress)
			lag += ps->sampled_hw - ps->progress;
	}
	metric_set(t->m_lag, (double)lag);
}

/* ------------------------------------------------------------------------ */
/* Progress reports                                                         */
/* ------------------------------------------------------------------------ */

static struct mirror_link *link_find_name(struct mirror_gate *g, const char *name)
{
	for (size_t i = 0; i < g->nlinks; i++)
		if (strcmp(g->links[i]->name, name) == 0)
			return g->links[i];
	return NULL;
}

static void count_failure(struct mirror_link *l, const char *topic, int32_t partition, const char *reason)
{
	char m[160], t[300], r[128], labels[700];
	mirror_label_escape(m, sizeof(m), l->name);
	mirror_label_escape(t, sizeof(t), topic);
	mirror_label_escape(r, sizeof(r), reason);
	snprintf(labels, sizeof(labels), "mirror=\"%s\",topic=\"%s\",partition=\"%" PRId32 "\",reason=\"%s\"",
		 m, t, partition, r);
	metric_add(metric_get(METRIC_COUNTER, "syncgate_sync_partition_fetch_failures_total",
			      "Failed destination progress attempts per partition (KIP SyncPartitionFetchFailures)",
			      labels, NULL, 0), 1);
}

static void pstate_isr_metrics(struct mirror_link *l, struct mirror_tstate *t, int32_t partition,
			       struct mirror_pstate *ps)
{
	if (!ps->m_isr) {
		char m[160], tp[300], labels[600];
		mirror_label_escape(m, sizeof(m), l->name);
		mirror_label_escape(tp, sizeof(tp), t->topic);
		snprintf(labels, sizeof(labels), "mirror=\"%s\",topic=\"%s\",partition=\"%" PRId32 "\"", m, tp,
			 partition);
		ps->m_isr = metric_get(METRIC_GAUGE, "syncgate_mirror_destination_isr",
				       "ISR size of the destination partition", labels, NULL, 0);
		ps->m_min_isr = metric_get(METRIC_GAUGE, "syncgate_mirror_destination_min_isr",
					   "min.insync.replicas of the destination partition", labels, NULL, 0);
	}
	metric_set(ps->m_isr, ps->isr);
	metric_set(ps->m_min_isr, ps->min_isr);
}

static void apply_report(struct mirror_gate *g, const struct mirror_msg *m);

void mirror_gate_apply(struct mirror_gate *g, const struct mirror_msg *m)
{
	switch (m->kind) {
	case MIRROR_MSG_REPORT:
		apply_report(g, m);
		break;
	case MIRROR_MSG_STATE_RECORD:
		mirror_gate_apply_record(g, m->data, m->len, m->offset);
		break;
	case MIRROR_MSG_STATE_CAUGHT_UP:
		if (!g->state_ready)
			LOG_I("mirror_state_log_caught_up", "topic=%s", g->conf->state_topic ? g->conf->state_topic : "?");
		g->state_ready = true;
		metric_set(g->m_state_ready, 1);
		settle_all(g, NULL); /* held while the log was read: the end state decides */
		mirror_gate_tick(g);
		break;
	case MIRROR_MSG_DECIDER:
		if (g->decider != (m->offset != 0))
			LOG_I("mirror_decider_changed", "decider=%s", m->offset ? "true" : "false");
		g->decider = m->offset != 0;
		metric_set(g->m_decider, g->decider);
		mirror_gate_tick(g);
		break;
	case MIRROR_MSG_PROBE_DONE:
		mirror_ops_probe_done(g, m->ptr);
		break;
	}
}

static void apply_report(struct mirror_gate *g, const struct mirror_msg *m)
{
	const struct mirror_report *r = &m->r;
	struct mirror_link *l = NULL;
	if (m->link_id) {
		for (size_t i = 0; i < g->nlinks; i++)
			if (g->links[i]->id == m->link_id)
				l = g->links[i];
	} else if (r->mirror) {
		l = link_find_name(g, r->mirror);
	}
	if (!l || !r->topic)
		return; /* stale report of a stopped worker, or unknown mirror */
	struct mirror_tstate *t = mirror_tstate_get(l, r->topic, true);
	if (!t)
		return;
	if (r->npartitions >= 0 && r->npartitions <= MIRROR_MAX_PARTITIONS)
		t->npart = r->npartitions;
	struct mirror_pstate *ps = mirror_pstate_get(t, r->partition, true);
	if (!ps)
		return;
	int64_t now = mirror_now_ms();

	if (r->error) {
		count_failure(l, t->topic, r->partition, r->error);
		if (ps->failing_since_ms < 0) {
			ps->failing_since_ms = now;
			t->nfailing++;
			metric_set(t->m_failing, t->nfailing);
			LOG_W("mirror_partition_failing", "mirror=%s topic=%s partition=%" PRId32 " reason=\"%s\"",
			      l->name, t->topic, r->partition, r->error);
		}
		snprintf(ps->reason, sizeof(ps->reason), "%s", r->error);
	} else if ((r->progress >= 0 || r->isr >= 0) && ps->failing_since_ms >= 0) {
		LOG_I("mirror_partition_recovered", "mirror=%s topic=%s partition=%" PRId32 " failed_for_ms=%" PRId64,
		      l->name, t->topic, r->partition, now - ps->failing_since_ms);
		ps->failing_since_ms = -1;
		ps->reason[0] = '\0';
		t->nfailing--;
		metric_set(t->m_failing, t->nfailing);
	}

	if (r->isr >= 0 || r->min_isr >= 0) {
		bool was_short = isr_short(ps);
		if (r->isr >= 0)
			ps->isr = r->isr;
		if (r->min_isr >= 0)
			ps->min_isr = r->min_isr;
		pstate_isr_metrics(l, t, r->partition, ps);
		if (isr_short(ps) && !was_short)
			LOG_W("mirror_partition_under_min_isr", "mirror=%s topic=%s partition=%" PRId32
			      " isr=%" PRId32 " min_isr=%" PRId32, l->name, t->topic, r->partition, ps->isr, ps->min_isr);
	}
	if (r->progress >= 0) {
		ps->progress = r->progress;
		if (r->source_hw >= 0)
			ps->sampled_hw = r->source_hw;
		struct mirror_ref *top;
		while ((top = mirror_heap_top(ps)) != NULL && top->offset < ps->progress)
			ref_done(top, true, now);
	}
	/* Fast feedback (KIP "Produce-ack precondition" 2): ISR < MinISR fails
	 * every part still waiting for this mirror here. */
	if (isr_short(ps) && ps->nheap) {
		char msg[200];
		isr_message(msg, sizeof(msg), l, ps);
		while (ps->nheap) {
			struct mirror_ref *ref = ps->heap[0];
			struct mirror_wait_part *p = &ref->w->parts[ref->part];
			snprintf(p->message, sizeof(p->message), "%s", msg);
			part_fail(ref->w, ref->part, MIRROR_NOT_ENOUGH_REMOTE);
		}
	}
	if (r->source_hw >= 0)
		tstate_update_lag(t);
	tstate_check_promotion(t);
}

int mirror_gate_inject_report(struct mirror_gate *g, const struct mirror_report *r)
{
	return mirror_bridge_post(g->bridge, 0, r);
}

int mirror_gate_inject_record(struct mirror_gate *g, const char *json, int64_t offset)
{
	if (!json)
		return mirror_bridge_post_msg(g->bridge, MIRROR_MSG_STATE_CAUGHT_UP, -1, NULL, NULL, 0);
	return mirror_bridge_post_msg(g->bridge, MIRROR_MSG_STATE_RECORD, offset, NULL, json, strlen(json));
}

/* ------------------------------------------------------------------------ */
/* State log records (KIP lifecycle; DESIGN.md §7)                          */
/* ------------------------------------------------------------------------ */

struct mirror_link *mirror_link_find(struct mirror_gate *g, const char *name)
{
	return link_find_name(g, name);
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
	t->ls = after;
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
			mirror_worker_demand(l->worker, t->topic, 0, -1, 0);
	}
	tstate_settle(t); /* a no-op while history is folded (tstate_gating) */
	tstate_metrics(t);
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
		      " recovery_pending=%s retry_attempt=%" PRId32 " generation=%" PRId64, l->name, t->topic,
		      mirror_rec_kind_str(r->kind), mirror_type_str(t->ls.desired), mirror_type_str(t->ls.effective),
		      t->ls.released ? "true" : "false", t->ls.recovery_pending ? "true" : "false",
		      t->ls.retry_attempt, t->ls.generation);
	/* decider bookkeeping: our conditional record is no longer in flight */
	if (r->kind == MIRROR_REC_REGISTER || r->kind == MIRROR_REC_DEMOTE) {
		int64_t now = mirror_now_ms();
		t->inflight_until_ms = 0;
		t->next_attempt_ms = now + mirror_lifecycle_backoff_ms(t->ls.retry_attempt);
	}
	mirror_ops_record_applied(g, t, r, &before, &out);
	if (t->ls.desired == MIRROR_SYNC && t->ls.effective != MIRROR_SYNC)
		tstate_check_promotion(t);
}

/* A reload added mirror `name`: apply its records read while it was not
 * configured, in log order, and forget them. */
static void replay_unapplied(struct mirror_gate *g, const char *name)
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
	settle_all(g, mirror_link_find(g, name));
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
	struct mirror_link *l = link_find_name(g, mirror);
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
	struct mirror_tstate *t = mirror_tstate_get(l, topic, true);
	if (!t)
		return;
	apply_one(g, t, &r);
	mirror_ops_state_changed(g);
	schedule_done(g);
}

uint64_t mirror_gate_append(struct mirror_gate *g, struct mirror_tstate *t, struct mirror_record *r)
{
	r->origin = g->origin;
	r->seq = ++g->seq;
	if (!g->log) {
		/* No state log (tests, MIRROR_GATE_NO_WORKERS): this gate is the
		 * only reader; apply in append order at once. */
		apply_one(g, t, r);
		mirror_ops_state_changed(g);
		schedule_done(g);
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

void mirror_gate_tick(struct mirror_gate *g)
{
	int64_t now = mirror_now_ms();
	for (size_t i = 0; i < g->nlinks; i++) {
		struct mirror_link *l = g->links[i];
		for (size_t b = 0; b < l->nbuckets; b++)
			for (struct mirror_tstate *t = l->buckets[b]; t; t = t->next) {
				tstate_check_promotion(t);
				tstate_check_demote(t, now);
			}
	}
	mirror_ops_state_changed(g);
	schedule_done(g);
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct mirror_gate *g = arg;
	mirror_gate_tick(g);
	mirror_gate_flush_done(g);
}

bool mirror_gate_state_ready(struct mirror_gate *g)
{
	return g->state_ready;
}

bool mirror_gate_is_decider(struct mirror_gate *g)
{
	return g->decider;
}

/* ------------------------------------------------------------------------ */
/* Lifecycle of the gate and of its links                                   */
/* ------------------------------------------------------------------------ */

static struct mirror_link *link_new(struct mirror_gate *g, const struct conf_mirror *cm)
{
	struct mirror_link *l = calloc(1, sizeof(*l));
	if (!l || !(l->name = strdup(cm->name))) {
		free(l);
		return NULL;
	}
	l->gate = g;
	l->cm = cm;
	l->id = ++g->next_id;
	if (mirror_regex_compile(cm, &l->re, &l->nre) != 0) {
		free(l->name);
		free(l);
		return NULL;
	}
	char m[160], labels[200];
	mirror_label_escape(m, sizeof(m), cm->name);
	snprintf(labels, sizeof(labels), "mirror=\"%s\"", m);
	l->m_latency = metric_get(METRIC_HISTOGRAM, "syncgate_mirror_sync_replication_latency_seconds",
				  "KIP MirrorSyncReplicationLatencyMs, in seconds: held part registered -> this mirror has it",
				  labels, latency_buckets, sizeof(latency_buckets) / sizeof(latency_buckets[0]));
	return l;
}

static void link_start(struct mirror_gate *g, struct mirror_link *l)
{
	if (g->flags & MIRROR_GATE_NO_WORKERS)
		return;
	l->worker = mirror_worker_start(g->conf, l->cm, l->id, g->bridge);
	if (!l->worker)
		LOG_E("mirror_worker_start_failed", "mirror=%s reason=\"see previous errors; no progress reports\"",
		      l->name);
}

/* Stop gating with this link (async predicate) and free it. */
static void link_free(struct mirror_link *l)
{
	if (l->worker)
		mirror_worker_stop(l->worker);
	for (size_t b = 0; b < l->nbuckets; b++) {
		struct mirror_tstate *t = l->buckets[b];
		while (t) {
			struct mirror_tstate *next = t->next;
			tstate_release_waiters(t);
			metric_set(t->m_effective, 0);
			for (int32_t p = 0; p < t->nparts_alloc; p++) {
				if (t->parts[p])
					free(t->parts[p]->heap);
				free(t->parts[p]);
			}
			free(t->parts);
			free(t->topic);
			free(t);
			t = next;
		}
	}
	free(l->buckets);
	mirror_regex_free(l->re, l->nre);
	free(l->name);
	free(l);
}

struct mirror_gate *mirror_gate_new_ex(struct event_base *base, const struct conf *conf, unsigned flags)
{
	struct mirror_gate *g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->base = base;
	g->conf = conf;
	g->flags = flags;
	g->done_tail = &g->done;
	for (int o = 0; o < MIRROR_OUTCOME_COUNT; o++) {
		char labels[64];
		snprintf(labels, sizeof(labels), "outcome=\"%s\"", mirror_outcome_str((enum mirror_outcome)o));
		g->m_outcome[o] = metric_get(METRIC_COUNTER, "syncgate_gate_partition_outcomes_total",
					     "Held Produce partitions by how the gate resolved them", labels, NULL, 0);
	}
	g->m_decider = metric_get(METRIC_GAUGE, "syncgate_state_decider",
				  "1 when this sidecar takes automatic lifecycle decisions (holds the state partition)",
				  "", NULL, 0);
	g->m_state_ready = metric_get(METRIC_GAUGE, "syncgate_state_log_ready",
				      "1 once the state log was read up to its high watermark at boot", "", NULL, 0);
	{
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		g->origin = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 16) ^
			    (uint64_t)(uintptr_t)g;
	}
	g->bridge = mirror_bridge_new(g);
	g->done_ev = event_new(base, -1, 0, done_cb, g);
	g->tick_ev = event_new(base, -1, EV_PERSIST, tick_cb, g);
	if (!g->bridge || !g->done_ev || !g->tick_ev)
		goto fail;
	{
		struct timeval tv = {0, 250000};
		event_add(g->tick_ev, &tv);
	}
	if ((flags & MIRROR_GATE_NO_WORKERS) || !conf->state_topic) {
		/* No state log (unit tests; a loaded config always names one):
		 * this gate decides and applies its own records at once. */
		g->state_ready = g->decider = true;
		if (flags & MIRROR_GATE_STATE_PENDING)
			g->state_ready = false;
	} else if (!(g->log = mirror_statelog_start(conf, g->bridge))) {
		goto fail;
	}
	metric_set(g->m_decider, g->decider);
	metric_set(g->m_state_ready, g->state_ready);
	if (conf->nmirrors) {
		g->links = calloc(conf->nmirrors, sizeof(*g->links));
		if (!g->links)
			goto fail;
	}
	for (size_t i = 0; i < conf->nmirrors; i++) {
		struct mirror_link *l = link_new(g, &conf->mirrors[i]);
		if (!l)
			goto fail;
		g->links[g->nlinks++] = l;
	}
	for (size_t i = 0; i < g->nlinks; i++)
		link_start(g, g->links[i]);
	return g;
fail:
	LOG_E("mirror_gate_new_failed", "reason=\"out of memory or invalid sync_topics\"");
	mirror_gate_free(g);
	return NULL;
}

struct mirror_gate *mirror_gate_new(struct event_base *base, const struct conf *conf)
{
	return mirror_gate_new_ex(base, conf, 0);
}

void mirror_gate_free(struct mirror_gate *g)
{
	if (!g)
		return;
	mirror_statelog_stop(g->log); /* before the bridge it posts to */
	g->log = NULL;
	mirror_ops_free_all(g);       /* joins probe threads (they post to the bridge) */
	/* Pending waits are freed without callback; detach them first. */
	while (g->waits)
		mirror_wait_cancel(g->waits);
	for (size_t i = 0; i < g->nlinks; i++)
		link_free(g->links[i]);
	while (g->done)
		mirror_wait_cancel(g->done); /* resolved by the releases above */
	free(g->links);
	for (size_t i = 0; i < g->nunapplied; i++)
		free(g->unapplied[i]);
	free(g->unapplied);
	if (g->done_ev)
		event_free(g->done_ev);
	if (g->tick_ev)
		event_free(g->tick_ev);
	mirror_bridge_free(g->bridge);
	free(g);
}

bool mirror_gate_is_gated(struct mirror_gate *g, const char *topic)
{
	for (size_t i = 0; i < g->nlinks; i++) {
		struct mirror_tstate *t = mirror_tstate_get(g->links[i], topic, true);
		if (t && tstate_gating(t))
			return true;
	}
	return false;
}

static bool str_eq(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* Whether the worker of `a` (under conf ca) must restart to serve `b` (cb). */
static bool worker_changed(const struct conf *ca, const struct conf_mirror *a,
			   const struct conf *cb, const struct conf_mirror *b)
{
	if (!str_eq(a->bootstrap, b->bootstrap) || !str_eq(a->topic_name, b->topic_name) ||
	    a->offsets != b->offsets || a->progress != b->progress ||
	    a->poll_interval_ms != b->poll_interval_ms ||
	    !str_eq(a->mm2_offset_syncs_topic, b->mm2_offset_syncs_topic) ||
	    a->nprops != b->nprops || a->nsync_topics != b->nsync_topics)
		return true;
	for (size_t i = 0; i < a->nprops; i++)
		if (!str_eq(a->props[i].name, b->props[i].name) || !str_eq(a->props[i].value, b->props[i].value))
			return true;
	for (size_t i = 0; i < a->nsync_topics; i++)
		if (!str_eq(a->sync_topics[i], b->sync_topics[i]))
			return true;
	const struct conf_tls *ta = &ca->upstream_tls, *tb = &cb->upstream_tls;
	return !str_eq(ca->upstream_broker.host, cb->upstream_broker.host) ||
	       ca->upstream_broker.port != cb->upstream_broker.port || ta->enabled != tb->enabled ||
	       !str_eq(ta->ca, tb->ca) || !str_eq(ta->cert, tb->cert) || !str_eq(ta->key, tb->key) ||
	       ta->verify_hostname != tb->verify_hostname;
}

int mirror_gate_reconfigure(struct mirror_gate *g, const struct conf *conf)
{
	struct mirror_link **links = calloc(conf->nmirrors ? conf->nmirrors : 1, sizeof(*links));
	regex_t **res = calloc(conf->nmirrors ? conf->nmirrors : 1, sizeof(*res));
	size_t *nres = calloc(conf->nmirrors ? conf->nmirrors : 1, sizeof(*nres));
	bool *isnew = calloc(conf->nmirrors ? conf->nmirrors : 1, sizeof(*isnew));
	if (!links || !res || !nres || !isnew)
		goto fail;
	/* Everything that can fail first, so a bad reload changes nothing. */
	for (size_t i = 0; i < conf->nmirrors; i++) {
		const struct conf_mirror *cm = &conf->mirrors[i];
		struct mirror_link *old = link_find_name(g, cm->name);
		if (old) {
			if (mirror_regex_compile(cm, &res[i], &nres[i]) != 0)
				goto fail;
			links[i] = old;
		} else if ((links[i] = link_new(g, cm)) != NULL) {
			isnew[i] = true;
		} else {
			goto fail;
		}
	}
	const struct conf *old_conf = g->conf;
	g->conf = conf;
	/* Removed mirrors: release their waiters at once (async predicate). */
	for (size_t j = 0; j < g->nlinks; j++) {
		bool kept = false;
		for (size_t i = 0; i < conf->nmirrors; i++)
			kept |= links[i] == g->links[j];
		if (!kept) {
			LOG_I("mirror_removed", "mirror=%s reason=\"config reload\"", g->links[j]->name);
			link_free(g->links[j]);
		}
	}
	for (size_t i = 0; i < conf->nmirrors; i++) {
		struct mirror_link *l = links[i];
		const struct conf_mirror *cm = &conf->mirrors[i];
		if (isnew[i]) {
			LOG_I("mirror_added", "mirror=%s reason=\"config reload\"", cm->name);
			continue; /* started below with the new conf */
		}
		bool restart = worker_changed(old_conf, l->cm, conf, cm);
		l->cm = cm;
		mirror_regex_free(l->re, l->nre);
		l->re = res[i];
		l->nre = nres[i];
		res[i] = NULL;
		for (size_t b = 0; b < l->nbuckets; b++)
			for (struct mirror_tstate *t = l->buckets[b]; t; t = t->next) {
				tstate_set_desired(t, mirror_regex_match(l->re, l->nre, t->topic) ? MIRROR_SYNC
												     : MIRROR_ASYNC);
				if (restart)
					for (int32_t p = 0; p < t->nparts_alloc; p++) {
						struct mirror_pstate *ps = t->parts[p];
						if (ps) { /* new destination view: progress unknown again */
							ps->progress = ps->sampled_hw = -1;
							ps->isr = ps->min_isr = -1;
							ps->demanded = ps->demand_until_ms = -1;
						}
					}
			}
		if (restart && l->worker) {
			LOG_I("mirror_worker_restart", "mirror=%s reason=\"connection settings changed\"", l->name);
			mirror_worker_stop(l->worker);
			l->worker = NULL;
		}
		if (restart) {
			l->id = ++g->next_id;
			link_start(g, l);
		}
	}
	free(g->links);
	g->links = links;
	g->nlinks = conf->nmirrors;
	for (size_t i = 0; i < g->nlinks; i++)
		if (isnew[i]) {
			replay_unapplied(g, g->links[i]->name);
			link_start(g, g->links[i]);
		}
	free(isnew);
	free(res);
	free(nres);
	schedule_done(g);
	return 0;
fail:
	if (links && res && nres && isnew)
		for (size_t i = 0; i < conf->nmirrors; i++) {
			if (res[i])
				mirror_regex_free(res[i], nres[i]);
			if (links[i] && isnew[i])
				link_free(links[i]);
		}
	free(isnew);
	free(links);
	free(res);
	free(nres);
	LOG_E("mirror_reconfigure_failed", "reason=\"out of memory or invalid sync_topics; old mirrors kept\"");
	return -1;
}

/* ------------------------------------------------------------------------ */
/* Introspection                                                            */
/* ------------------------------------------------------------------------ */

static void topic_info(struct mirror_link *l, const char *topic, const struct mirror_tstate *t,
		       struct mirror_topic_info *out)
{
	memset(out, 0, sizeof(*out));
	out->desired = t ? t->ls.desired : mirror_regex_match(l->re, l->nre, topic) ? MIRROR_SYNC : MIRROR_ASYNC;
	out->effective = t ? t->ls.effective : MIRROR_ASYNC;
	out->released = t && t->ls.released;
	out->recovery_pending = t && t->ls.recovery_pending;
	out->retry_attempt = t ? t->ls.retry_attempt : 0;
	out->npartitions = t ? t->npart : -1;
	out->lag = -1;
	if (!t)
		return;
	out->failing_partitions = t->nfailing;
	out->held = t->held;
	int64_t lag = 0;
	bool known = t->npart > 0;
	for (int32_t p = 0; p < t->npart && known; p++) {
		struct mirror_pstate *ps = p < t->nparts_alloc ? t->parts[p] : NULL;
		if (!ps || ps->sampled_hw < 0 || ps->progress < 0)
			known = false;
		else if (ps->sampled_hw > ps->progress)
			lag += ps->sampled_hw - ps->progress;
	}
	out->lag = known ? lag : -1;
}

int mirror_gate_topic_info(struct mirror_gate *g, const char *mirror, const char *topic,
			   struct mirror_topic_info *out)
{
	struct mirror_link *l = link_find_name(g, mirror);
	if (!l)
		return -1;
	topic_info(l, topic, mirror_tstate_get(l, topic, false), out);
	return 0;
}

static void partition_info(const struct mirror_pstate *ps, struct mirror_partition_info *out)
{
	memset(out, 0, sizeof(*out));
	out->progress = ps ? ps->progress : -1;
	out->source_hw = ps ? ps->sampled_hw : -1;
	out->isr = ps ? ps->isr : -1;
	out->min_isr = ps ? ps->min_isr : -1;
	out->failing_since_ms = ps ? ps->failing_since_ms : -1;
	if (ps) {
		snprintf(out->reason, sizeof(out->reason), "%s", ps->reason);
		out->held = ps->nheap;
	}
}

int mirror_gate_partition_info(struct mirror_gate *g, const char *mirror, const char *topic,
			       int32_t partition, struct mirror_partition_info *out)
{
	struct mirror_link *l = link_find_name(g, mirror);
	if (!l)
		return -1;
	struct mirror_tstate *t = mirror_tstate_get(l, topic, false);
	partition_info(t ? mirror_pstate_get(t, partition, false) : NULL, out);
	return 0;
}

char *mirror_gate_describe_json(struct mirror_gate *g, const char *mirror, const char *topic)
{
	json_t *root = json_object(), *mirrors = json_array();
	json_object_set_new(root, "mirrors", mirrors);
	json_object_set_new(root, "state_ready", json_boolean(g->state_ready));
	json_object_set_new(root, "decider", json_boolean(g->decider));
	for (size_t i = 0; i < g->nlinks; i++) {
		struct mirror_link *l = g->links[i];
		if (mirror && strcmp(mirror, l->name) != 0)
			continue;
		json_t *jm = json_object(), *topics = json_array();
		json_object_set_new(jm, "name", json_string(l->name));
		json_object_set_new(jm, "offsets", json_string(l->cm->offsets == CONF_OFFSETS_MM2 ? "mm2" : "preserved"));
		json_object_set_new(jm, "progress", json_string(l->cm->progress == CONF_PROGRESS_TAIL ? "tail" : "poll"));
		json_object_set_new(jm, "topics", topics);
		json_array_append_new(mirrors, jm);
		for (size_t b = 0; b < l->nbuckets; b++)
			for (struct mirror_tstate *t = l->buckets[b]; t; t = t->next) {
				if (topic && strcmp(topic, t->topic) != 0)
					continue;
				struct mirror_topic_info ti;
				topic_info(l, t->topic, t, &ti);
				json_t *jt = json_object(), *parts = json_array();
				char *dst = mirror_destination_topic(l->cm->topic_name, t->topic);
				json_object_set_new(jt, "topic", json_string(t->topic));
				json_object_set_new(jt, "destination_topic", dst ? json_string(dst) : json_null());
				free(dst);
				json_object_set_new(jt, "desired", json_string(mirror_type_str(t->ls.desired)));
				json_object_set_new(jt, "effective", json_string(mirror_type_str(t->ls.effective)));
				json_object_set_new(jt, "released", json_boolean(t->ls.released));
				json_object_set_new(jt, "recovery_pending", json_boolean(t->ls.recovery_pending));
				json_object_set_new(jt, "retry_attempt", json_integer(t->ls.retry_attempt));
				json_object_set_new(jt, "generation", json_integer(t->ls.generation));
				if (t->ls.released)
					json_object_set_new(jt, "annotation",
							    json_string("released by source - recovery in flight"));
				json_object_set_new(jt, "lag", ti.lag >= 0 ? json_integer(ti.lag) : json_null());
				json_object_set_new(jt, "failing_partitions", json_integer(t->nfailing));
				json_object_set_new(jt, "partitions", parts);
				for (int32_t p = 0; p < t->nparts_alloc; p++) {
					struct mirror_pstate *ps = t->parts[p];
					if (!ps)
						continue;
					json_t *jp = json_object();
					json_object_set_new(jp, "partition", json_integer(p));
					json_object_set_new(jp, "progress", json_integer(ps->progress));
					json_object_set_new(jp, "source_hw", json_integer(ps->sampled_hw));
					json_object_set_new(jp, "lag", ps->sampled_hw >= 0 && ps->progress >= 0
						? json_integer(ps->sampled_hw > ps->progress ? ps->sampled_hw - ps->progress : 0)
						: json_null());
					json_object_set_new(jp, "isr", json_integer(ps->isr));
					json_object_set_new(jp, "min_isr", json_integer(ps->min_isr));
					json_object_set_new(jp, "failing_reason",
							    ps->failing_since_ms >= 0 ? json_string(ps->reason) : json_null());
					json_object_set_new(jp, "held", json_integer(ps->nheap));
					json_array_append_new(parts, jp);
				}
				json_array_append_new(topics, jt);
			}
	}
	char *s = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	return s;
}
