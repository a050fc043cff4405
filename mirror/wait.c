/*
 * wait.c — held waits (KIP "High Watermark Advancement", "Errors"): which
 * mirrors gate a part of a held Produce response, and how each part is
 * resolved — SATISFIED when every gating mirror reported progress past its
 * last offset, NOT_ENOUGH_REMOTE at once when one of them has ISR <
 * min.insync.replicas, TIMEOUT at the deadline naming the slowest mirror.
 * A mirror that stops gating satisfies its refs at once (the async
 * predicate) — only through mirror_tstate_settle(), as of the current state.
 * Callbacks run from the gate's own libevent callbacks, never from inside a
 * gate call. Loop thread.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mirror/internal.h"

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
 * Once folded, mirror_tstate_settle() releases the waiters of topics that
 * turn out not to gate. A record delivered again (the state log consumer re-reads or
 * rewinds) is skipped by its log offset in mirror_gate_apply_record(). */
static bool tstate_gating(const struct mirror_tstate *t)
{
	const struct mirror_gate *g = t->link->gate;
	if (!g->state_ready || g->replaying)
		return true;
	return t->ls.effective == MIRROR_SYNC && !t->ls.released;
}

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

/* The refs of part i of w, in order: those of its registration, then the
 * joined ones. Start with r = NULL. */
static struct mirror_ref *part_ref_next(struct mirror_wait *w, uint32_t i, struct mirror_ref *r)
{
	if (!r && w->ref_start[i] < w->ref_start[i + 1])
		return &w->refs[w->ref_start[i]];
	if (r && r >= w->refs && r < w->refs + w->nrefs) {
		if (r + 1 < &w->refs[w->ref_start[i + 1]])
			return r + 1;
		r = NULL; /* registration refs done: the joined ones */
	} else if (r) {
		r = r->next;
		goto joined;
	}
	r = w->joined;
joined:
	while (r && r->part != i)
		r = r->next;
	return r;
}

/* Fail part i of w: remove all its refs from their heaps. */
void mirror_part_fail(struct mirror_wait *w, uint32_t i, enum mirror_outcome o)
{
	for (struct mirror_ref *r = part_ref_next(w, i, NULL); r; r = part_ref_next(w, i, r))
		ref_detach(r);
	part_resolved(w, i, o);
}

/* Mirror r->link no longer holds part r->part back (satisfied, or released
 * under the async predicate when `observe` is false). */
void mirror_ref_done(struct mirror_ref *r, bool observe, int64_t now)
{
	struct mirror_wait *w = r->w;
	struct mirror_pstate *ps = r->ps;
	ref_detach(r);
	if (observe) {
		metric_observe(r->t->link->m_latency, (double)(now - w->start_ms) / 1000.0);
		mirror_pstate_confirm(r->t, ps, w->parts[r->part].partition, r->offset + 1);
	}
	if (--w->remaining[r->part] == 0 && w->parts[r->part].outcome == MIRROR_PENDING)
		part_resolved(w, r->part, MIRROR_SATISFIED);
}

void mirror_isr_message(char *buf, size_t cap, const struct mirror_link *l, const struct mirror_pstate *ps)
{
	snprintf(buf, cap, "mirror %s: ISR %" PRId32 " < min.insync.replicas %" PRId32,
		 l->name, ps->isr, ps->min_isr);
}

bool mirror_isr_short(const struct mirror_pstate *ps)
{
	return ps->isr >= 0 && ps->min_isr >= 0 && ps->isr < ps->min_isr;
}

static void wait_free(struct mirror_wait *w)
{
	while (w->joined) {
		struct mirror_ref *r = w->joined;
		w->joined = r->next;
		free(r);
	}
	free(w);
}

static void timeout_part(struct mirror_wait *w, uint32_t i)
{
	struct mirror_ref *slow = NULL;
	int64_t slow_lag = -2; /* -1: unknown progress, the slowest of all */
	for (struct mirror_ref *r = part_ref_next(w, i, NULL); r; r = part_ref_next(w, i, r)) {
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
	mirror_part_fail(w, i, MIRROR_TIMEOUT);
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

int mirror_waits_init(struct mirror_gate *g)
{
	g->done_tail = &g->done;
	g->done_ev = event_new(g->base, -1, 0, done_cb, g);
	return g->done_ev ? 0 : -1;
}

void mirror_gate_schedule_done(struct mirror_gate *g)
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
				mirror_pstate_confirm(t, ps, p->partition, p->last_offset + 1);
				continue;
			}
			if (mirror_isr_short(ps) && !fail_ps) {
				fail_ps = ps;
				mirror_isr_message(p->message, sizeof(p->message), l, ps);
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
			mirror_part_fail(w, i, MIRROR_NOT_ENOUGH_REMOTE);
		} else if (fail_msg_link) {
			snprintf(p->message, sizeof(p->message), "mirror %s: out of memory", fail_msg_link);
			mirror_part_fail(w, i, MIRROR_TIMEOUT);
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
			for (struct mirror_ref *r = part_ref_next(w, i, NULL); r; r = part_ref_next(w, i, r))
				ref_detach(r);
		if (w->timer_added)
			event_del(&w->timer);
		g->held--;
	}
	list_remove(g, w);
	wait_free(w);
}

/* Release every ref of (mirror, topic) under the async predicate. */
void mirror_tstate_release_waiters(struct mirror_tstate *t)
{
	for (int32_t p = 0; p < t->nparts_alloc; p++) {
		struct mirror_pstate *ps = t->parts[p];
		while (ps && ps->nheap)
			mirror_ref_done(ps->heap[0], false, 0);
	}
}

/* Whether part i of w already waits (or waited) on (mirror, topic) t. */
static bool part_has_ref(struct mirror_wait *w, uint32_t i, const struct mirror_tstate *t)
{
	for (struct mirror_ref *r = part_ref_next(w, i, NULL); r; r = part_ref_next(w, i, r))
		if (r->t == t)
			return true;
	return false;
}

/* (mirror, topic) t began to gate: every part of a held wait on its topic
 * that does not wait for t yet now does (unless t already has its last
 * offset) — as the KIP's source leader, once a mirror is registered, no
 * longer advances the HW past records that mirror lacks, held acks
 * included. Without it a response held before a promotion, or before a
 * reload added the mirror, would be acknowledged without that mirror. */
static void tstate_join_waiters(struct mirror_tstate *t)
{
	struct mirror_gate *g = t->link->gate;
	int64_t now = mirror_now_ms();
	struct mirror_wait *next;
	for (struct mirror_wait *w = g->waits; w; w = next) {
		next = w->next; /* a part failed below may complete w (moved to g->done) */
		for (uint32_t i = 0; i < w->nparts; i++) {
			struct mirror_wait_part *p = &w->parts[i];
			if (p->outcome != MIRROR_PENDING || strcmp(p->topic, t->topic) != 0 || part_has_ref(w, i, t))
				continue;
			struct mirror_pstate *ps = mirror_pstate_get(t, p->partition, true);
			if (ps && ps->progress > p->last_offset)
				continue;
			struct mirror_ref *r = ps ? calloc(1, sizeof(*r)) : NULL;
			if (!r) { /* fail closed */
				snprintf(p->message, sizeof(p->message), "mirror %s: out of memory", t->link->name);
				mirror_part_fail(w, i, MIRROR_TIMEOUT);
				continue;
			}
			*r = (struct mirror_ref){.w = w, .t = t, .offset = p->last_offset, .part = i,
						 .heap_idx = MIRROR_NO_HEAP, .next = w->joined};
			w->joined = r;
			if (mirror_heap_push(ps, r) != 0) {
				snprintf(p->message, sizeof(p->message), "mirror %s: out of memory", t->link->name);
				mirror_part_fail(w, i, MIRROR_TIMEOUT);
				continue;
			}
			t->held++;
			w->remaining[i]++;
			LOG_D("mirror_wait_joined", "mirror=%s topic=%s partition=%" PRId32 " offset=%" PRId64
			      " held_ms=%" PRId64, t->link->name, t->topic, p->partition, p->last_offset,
			      now - w->start_ms);
			struct mirror_link *l = t->link;
			if (l->worker && (p->last_offset > ps->demanded || w->deadline_ms > ps->demand_until_ms)) {
				if (p->last_offset > ps->demanded)
					ps->demanded = p->last_offset;
				if (w->deadline_ms > ps->demand_until_ms)
					ps->demand_until_ms = w->deadline_ms;
				mirror_worker_demand(l->worker, p->topic, p->partition, ps->demanded,
						     ps->demand_until_ms);
			}
			if (mirror_isr_short(ps)) {
				mirror_isr_message(p->message, sizeof(p->message), l, ps);
				mirror_part_fail(w, i, MIRROR_NOT_ENOUGH_REMOTE);
			}
		}
	}
}

bool mirror_tstate_fenced(const struct mirror_tstate *t)
{
	const struct mirror_gate *g = t->link->gate;
	if (!g->state_ready || g->replaying)
		return t->ls.fenced || t->fence_seen; /* history: a fence seen stays */
	return t->ls.fenced;
}

/* A fenced topic that stops gating (the failover's release) fails its
 * waiters: a record not confirmed by then is not acknowledged. */
static void tstate_fail_waiters(struct mirror_tstate *t)
{
	for (int32_t p = 0; p < t->nparts_alloc; p++) {
		struct mirror_pstate *ps = t->parts[p];
		while (ps && ps->nheap) {
			struct mirror_ref *r = ps->heap[0];
			struct mirror_wait_part *wp = &r->w->parts[r->part];
			snprintf(wp->message, sizeof(wp->message),
				 "mirror %s: topic fenced for failover; record not confirmed on the destination",
				 t->link->name);
			mirror_part_fail(r->w, r->part, MIRROR_TIMEOUT);
		}
	}
}

/* The only place that changes who waits because of the mirror type, as of
 * the current state (tstate_gating): a (mirror, topic) that does not gate
 * releases its waiters (or, fenced for a failover, fails them: a record not
 * confirmed by then is never acknowledged); one that began to gate joins
 * the waits held. */
void mirror_tstate_settle(struct mirror_tstate *t)
{
	bool gating = tstate_gating(t);
	if (!gating) {
		if (mirror_tstate_fenced(t))
			tstate_fail_waiters(t);
		else
			mirror_tstate_release_waiters(t);
	} else if (!t->gating_joined) {
		tstate_join_waiters(t);
	}
	t->gating_joined = gating;
	mirror_hw_progressed(t->link->gate, t->topic, -1); /* held Fetch responses (issue 14) */
}

static void settle_one(struct mirror_tstate *t, void *arg)
{
	mirror_tstate_settle(t);
}

void mirror_settle_all(struct mirror_gate *g, struct mirror_link *l)
{
	mirror_each_topic(g, l, settle_one, NULL);
}

const char *mirror_gate_fenced_by(struct mirror_gate *g, const char *topic)
{
	for (size_t i = 0; i < g->nlinks; i++) {
		struct mirror_tstate *t = mirror_tstate_get(g->links[i], topic, false);
		if (t && mirror_tstate_fenced(t))
			return g->links[i]->name;
	}
	return NULL;
}

/* mirror_tstate_fenced over every topic, from the counts kept where the
 * fence changes (transitions.c apply_one, store.c free). */
bool mirror_gate_any_fenced(struct mirror_gate *g)
{
	if (!g->state_ready || g->replaying)
		return g->nfence_seen > 0;
	return g->nfenced > 0;
}

void mirror_gate_note_unexempt_reader(struct mirror_gate *g, const char *client_id)
{
	if (g && client_id)
		snprintf(g->unexempt_reader, sizeof(g->unexempt_reader), "%s", client_id);
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

