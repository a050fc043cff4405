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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mirror/internal.h"
#include "mirror/wait.h"

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
 * Invariant 1, "only the current state releases" (docs/architecture.md,
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
bool mirror_tstate_gating(const struct mirror_tstate *t)
{
	const struct mirror_gate *g = t->link->gate;
	if (!g->state_ready || g->replaying)
		return true;
	return t->ls.effective == MIRROR_SYNC && !t->ls.released;
}

/* Fixed text for a failed part whose message could not be allocated. */
static char part_oom_message[] = "syncgate: out of memory";

void mirror_wait_part_set_message(struct mirror_wait_part *p, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (p->message != part_oom_message)
		free(p->message);
	p->message = n >= 0 ? strdup(buf) : NULL;
	if (!p->message)
		p->message = part_oom_message;
}

const char *mirror_wait_part_message(const struct mirror_wait_part *p)
{
	return p->message ? p->message : "";
}

void mirror_wait_parts_clear(struct mirror_wait_part *parts, size_t n)
{
	for (size_t i = 0; parts && i < n; i++) {
		if (parts[i].message != part_oom_message)
			free(parts[i].message);
		parts[i].message = NULL;
	}
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
	mirror_deadline_remove(g, w);
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
	struct mirror_wait_part *p = &w->parts[i];
	p->outcome = o;
	if (o == MIRROR_SATISFIED)
		mirror_wait_parts_clear(p, 1);
	metric_add(w->g->m_outcome[o], 1);
	if (--w->npending == 0 && !w->g->in_wait)
		wait_complete(w);
}

static void ref_detach(struct mirror_ref *r)
{
	if (r->heap_idx == MIRROR_NO_HEAP)
		return;
	mirror_heap_remove(r->ps, r);
	r->ps->t->held--;
}

/* The refs of part i of w, in order: those of its registration, then the
 * joined ones. Start with r = NULL. */
struct mirror_ref *mirror_part_ref_next(struct mirror_wait *w, uint32_t i, struct mirror_ref *r)
{
	struct mirror_ref *refs = wait_refs(w);
	const uint32_t *rs = wait_ref_start(w);
	struct mirror_jref *j;
	if (!r) {
		if (rs[i] < rs[i + 1])
			return &refs[rs[i]];
		j = w->joined;
	} else if (r >= refs && r < refs + w->nrefs) {
		if (r + 1 < refs + rs[i + 1])
			return r + 1;
		j = w->joined; /* registration refs done: the joined ones */
	} else {
		j = ((struct mirror_jref *)r)->next; /* r is a jref's first member */
	}
	while (j && j->r.part != i)
		j = j->next;
	return j ? &j->r : NULL;
}

/* Fail part i of w: remove all its refs from their heaps. */
void mirror_part_fail(struct mirror_wait *w, uint32_t i, enum mirror_outcome o)
{
	for (struct mirror_ref *r = mirror_part_ref_next(w, i, NULL); r; r = mirror_part_ref_next(w, i, r))
		ref_detach(r);
	part_resolved(w, i, o);
}

/* Mirror r->ps->t no longer holds part r->part back (satisfied, or released
 * under the async predicate when `observe` is false). */
void mirror_ref_done(struct mirror_ref *r, bool observe, int64_t now)
{
	struct mirror_wait *w = r->w;
	struct mirror_pstate *ps = r->ps;
	ref_detach(r);
	if (observe) {
		metric_observe(ps->t->link->m_latency,
			       (double)(now - (w->deadline_ms - w->hold_ms)) / 1000.0);
		mirror_pstate_confirm(ps->t, ps, w->parts[r->part].partition, r->offset + 1);
	}
	if (--wait_remaining(w)[r->part] == 0 && w->parts[r->part].outcome == MIRROR_PENDING)
		part_resolved(w, r->part, MIRROR_SATISFIED);
}

void mirror_part_isr_message(struct mirror_wait_part *p, const struct mirror_link *l,
			     const struct mirror_pstate *ps)
{
	mirror_wait_part_set_message(p, "mirror %s: ISR %" PRId32 " < min.insync.replicas %" PRId32,
				     l->name, ps->isr, ps->min_isr);
}

bool mirror_isr_short(const struct mirror_pstate *ps)
{
	return ps->isr >= 0 && ps->min_isr >= 0 && ps->isr < ps->min_isr;
}

static void wait_free(struct mirror_wait *w)
{
	while (w->joined) {
		struct mirror_jref *j = w->joined;
		w->joined = j->next;
		free(j);
	}
	free(w);
}

static void timeout_part(struct mirror_wait *w, uint32_t i)
{
	struct mirror_ref *slow = NULL;
	int64_t slow_lag = -2; /* -1: unknown progress, the slowest of all */
	for (struct mirror_ref *r = mirror_part_ref_next(w, i, NULL); r; r = mirror_part_ref_next(w, i, r)) {
		if (r->heap_idx == MIRROR_NO_HEAP)
			continue;
		int64_t lag = r->ps->progress < 0 ? -1 : r->offset + 1 - r->ps->progress;
		if (!slow || (slow_lag != -1 && (lag == -1 || lag > slow_lag))) {
			slow = r;
			slow_lag = lag;
		}
	}
	struct mirror_wait_part *p = &w->parts[i];
	long long ms = (long long)w->hold_ms;
	const char *name = slow ? slow->ps->t->link->name : "?";
	if (slow && slow_lag >= 0)
		mirror_wait_part_set_message(p, "mirror %s: not replicated within %lld ms (lag %" PRId64 ")",
					     name, ms, slow_lag);
	else
		mirror_wait_part_set_message(p, "mirror %s: not replicated within %lld ms (lag unknown)",
					     name, ms);
	LOG_D("mirror_wait_timeout", "mirror=%s topic=%s partition=%" PRId32 " offset=%" PRId64 " lag=%" PRId64,
	      name, p->topic, p->partition, p->last_offset, slow_lag);
	mirror_part_fail(w, i, MIRROR_TIMEOUT);
}

/* Arm g->dl_ev for the earliest deadline unless it is armed for one as early.
 * A timer left armed for a wait resolved since just fires for nothing. */
static void deadline_arm(struct mirror_gate *g)
{
	if (!g->ndl || g->dl[0]->deadline_ms >= g->dl_armed_ms)
		return;
	int64_t d = g->dl[0]->deadline_ms - mirror_now_ms();
	if (d < 1)
		d = 1; /* due now: from the loop, not from inside a gate call */
	struct timeval tv = {(time_t)(d / 1000), (suseconds_t)((d % 1000) * 1000)};
	event_add(g->dl_ev, &tv);
	g->dl_armed_ms = g->dl[0]->deadline_ms;
}

/* The earliest deadline came: time out every wait whose deadline passed. */
static void deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct mirror_gate *g = arg;
	g->dl_armed_ms = INT64_MAX;
	int64_t now = mirror_now_ms();
	while (g->ndl && g->dl[0]->deadline_ms <= now) {
		struct mirror_wait *w = g->dl[0];
		/* the last part timed out completes w, which leaves the heap */
		for (uint32_t i = 0; i < w->nparts && w->npending; i++)
			if (w->parts[i].outcome == MIRROR_PENDING)
				timeout_part(w, i);
		if (w->dl_idx != MIRROR_NO_HEAP) {
			/* npending disagrees with the parts: never expected. End it
			 * anyway (fail closed: a part not SATISFIED is an error code,
			 * never an ack) rather than loop here for ever. */
			LOG_E("mirror_wait_inconsistent", "npending=%" PRIu32 " nparts=%" PRIu32,
			      w->npending, w->nparts);
			for (uint32_t i = 0; i < w->nparts; i++)
				if (w->parts[i].outcome == MIRROR_PENDING)
					w->parts[i].outcome = MIRROR_TIMEOUT;
			w->npending = 0;
			wait_complete(w);
		}
	}
	mirror_gate_flush_done(g);
	deadline_arm(g);
}

void mirror_gate_flush_done(struct mirror_gate *g)
{
	struct mirror_wait *w;
	while ((w = g->done) != NULL) {
		list_remove(g, w);
		if (w->cb) /* NULL: cancelled after it resolved */
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
	g->dl_armed_ms = INT64_MAX;
	g->done_ev = event_new(g->base, -1, 0, done_cb, g);
	g->dl_ev = event_new(g->base, -1, 0, deadline_cb, g);
	return g->done_ev && g->dl_ev ? 0 : -1;
}

void mirror_waits_free(struct mirror_gate *g)
{
	struct mirror_wait *w;
	while ((w = g->done) != NULL) {
		list_remove(g, w);
		wait_free(w);
	}
	if (g->done_ev)
		event_free(g->done_ev);
	if (g->dl_ev)
		event_free(g->dl_ev);
	free(g->dl);
	g->done_ev = g->dl_ev = NULL;
	g->dl = NULL;
	g->ndl = g->capdl = 0;
}

void mirror_gate_schedule_done(struct mirror_gate *g)
{
	if (g->done)
		event_active(g->done_ev, EV_TIMEOUT, 0);
}

/* Fail closed: every pending part of `parts` times out (no memory to hold). */
static void parts_fail_oom(struct mirror_wait_part *parts, size_t nparts)
{
	for (size_t i = 0; i < nparts; i++) {
		if (parts[i].outcome != MIRROR_PENDING)
			continue;
		parts[i].outcome = MIRROR_TIMEOUT;
		mirror_wait_part_set_message(&parts[i], "syncgate: out of memory");
	}
}

/* A record below a source HW sampled, or at or below a record appended,
 * before its request arrived (mirror_gate_wait_since): the source partition went back (recreated,
 * truncated) — or an idempotent producer's retry was answered with its
 * batch's original offset. Either way the progress is not trusted until a
 * fresh source sample confirms it (the worker says which: a partition that
 * went back fails with DESTINATION_AHEAD_OF_SOURCE, a retry costs a round). */
static void source_went_back(struct mirror_link *l, struct mirror_pstate *ps, const struct mirror_wait_part *p)
{
	LOG_W("mirror_source_went_back", "mirror=%s topic=%s partition=%d last_offset=%lld source_hw_before=%lld "
	      "appended_before=%lld destination_hw=%lld reason=\"a record answered below a source HW sampled, "
	      "or at or below a record appended, before its request arrived: the source partition was "
	      "recreated or truncated, or this is an idempotent retry of a batch written earlier\" "
	      "action=\"held; the destination's progress is confirmed against a fresh source sample before "
	      "any release\"", l->name, p->topic, (int)p->partition, (long long)p->last_offset,
	      (long long)ps->sampled_hw, (long long)ps->appended_max, (long long)ps->progress);
	ps->progress = ps->sampled_hw = -1;
	if (l->worker) /* its reports from now on: only after a source sample confirms */
		mirror_worker_suspect(l->worker, p->topic, p->partition);
	/* taken after the worker's flag is set: a report built before it is older */
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ps->suspect_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

struct mirror_wait *mirror_gate_wait(struct mirror_gate *g, struct mirror_wait_part *parts,
				     size_t nparts, int64_t deadline_ms,
				     mirror_wait_cb cb, void *arg)
{
	return mirror_gate_wait_since(g, parts, nparts, -1, deadline_ms, cb, arg);
}

/* The refs a wait needs: one per (pending part, gating mirror); sets
 * *npending and clears the pending parts' messages. */
static size_t wait_count_refs(struct mirror_gate *g, struct mirror_wait_part *parts, size_t nparts,
			      size_t *npending)
{
	size_t nrefs = 0;
	*npending = 0;
	for (size_t i = 0; i < nparts; i++) {
		if (parts[i].outcome != MIRROR_PENDING)
			continue; /* resolved by the caller: left as it is */
		(*npending)++;
		parts[i].message = NULL;
		for (size_t m = 0; m < g->nlinks; m++) {
			struct mirror_tstate *t = mirror_tstate_get(g->links[m], parts[i].topic, true);
			if (t && mirror_tstate_gating(t))
				nrefs++;
		}
	}
	return nrefs;
}

/* A wait with room for `nrefs` refs, on the deadline heap and the gate's
 * list of waits (held). NULL when out of memory: every pending part then
 * failed closed (never a false ack). */
static struct mirror_wait *wait_new(struct mirror_gate *g, struct mirror_wait_part *parts, size_t nparts,
				    size_t nrefs, size_t npending, int64_t now, int64_t deadline_ms,
				    mirror_wait_cb cb, void *arg)
{
	size_t sz = sizeof(struct mirror_wait) + wait_arrays_size(nparts) + nrefs * sizeof(struct mirror_ref);
	struct mirror_wait *w = nparts < UINT32_MAX / 2 ? calloc(1, sz) : NULL;
	if (w) {
		w->g = g;
		w->parts = parts;
		w->nparts = (uint32_t)nparts;
		w->deadline_ms = deadline_ms;
		w->hold_ms = deadline_ms <= now ? 0 : deadline_ms - now > UINT32_MAX ? UINT32_MAX
			   : (uint32_t)(deadline_ms - now);
		if (mirror_deadline_push(g, w) != 0) {
			free(w);
			w = NULL;
		}
	}
	if (!w) {
		parts_fail_oom(parts, nparts);
		return NULL;
	}
	w->cb = cb;
	w->arg = arg;
	w->npending = (uint32_t)npending;
	w->pprev = &g->waits;
	w->next = g->waits;
	if (g->waits)
		g->waits->pprev = &w->next;
	g->waits = w;
	g->held++;
	return w;
}

/* With preserved offsets, a part of a request that arrived at `since_ms`
 * (-1: not known) was appended at or past the source's end then: below a
 * sample taken before then, or at or below a record appended before then,
 * only if the partition went back (or an idempotent retry got its first
 * offset). Records the part as the latest appended. */
static void check_went_back(struct mirror_link *l, struct mirror_pstate *ps, const struct mirror_wait_part *p,
			    int64_t since_ms, int64_t now)
{
	if (since_ms < 0 || !l->cm || l->cm->offsets != CONF_OFFSETS_PRESERVED)
		return;
	if ((ps->sampled_hw > p->last_offset && ps->sampled_ms < since_ms) ||
	    (ps->appended_max >= p->last_offset && ps->appended_ms < since_ms)) {
		source_went_back(l, ps, p);
		ps->appended_max = -1;
	}
	if (p->last_offset > ps->appended_max) {
		ps->appended_max = p->last_offset;
		ps->appended_ms = now;
	}
}

/* Hold part `i` of `w` on mirror `l`'s partition `ps` with ref `*k` (which
 * is used up either way) and demand its progress from the worker until the
 * wait's deadline. -1: no room on the partition's heap (not held). */
static int hold_on(struct mirror_wait *w, uint32_t i, const struct mirror_wait_part *p, struct mirror_link *l,
		   struct mirror_tstate *t, struct mirror_pstate *ps, size_t *k)
{
	struct mirror_ref *r = &wait_refs(w)[(*k)++];
	r->w = w;
	r->ps = ps;
	r->offset = p->last_offset;
	r->part = i;
	r->heap_idx = MIRROR_NO_HEAP;
	if (mirror_heap_push(ps, r) != 0)
		return -1;
	t->held++;
	wait_remaining(w)[i]++;
	int64_t deadline_ms = w->deadline_ms;
	if (l->worker && (p->last_offset > ps->demanded || deadline_ms > ps->demand_until_ms)) {
		if (p->last_offset > ps->demanded)
			ps->demanded = p->last_offset;
		if (deadline_ms > ps->demand_until_ms)
			ps->demand_until_ms = deadline_ms;
		mirror_worker_demand(l->worker, p->topic, p->partition, ps->demanded, ps->demand_until_ms,
				     p->committed ? p->last_offset + 1 : -1);
	}
	return 0;
}

/* Register pending part `i` (`p`) of `w` with every gating mirror from ref
 * `*k` on, then resolve it at once where it can be: NOT_ENOUGH_REMOTE when
 * a mirror's ISR is short, TIMEOUT when out of memory or past the deadline,
 * SATISFIED when every mirror has it already. */
static void wait_part(struct mirror_wait *w, uint32_t i, struct mirror_wait_part *p, int64_t since_ms,
		      int64_t now, size_t *k)
{
	struct mirror_gate *g = w->g;
	uint32_t *ref_start = wait_ref_start(w);
	ref_start[i] = (uint32_t)*k;
	if (p->outcome != MIRROR_PENDING) {
		ref_start[i + 1] = (uint32_t)*k;
		return;
	}
	const char *fail_msg_link = NULL;
	struct mirror_pstate *fail_ps = NULL;
	for (size_t m = 0; m < g->nlinks; m++) {
		struct mirror_link *l = g->links[m];
		struct mirror_tstate *t = mirror_tstate_get(l, p->topic, false);
		if (!t || !mirror_tstate_gating(t))
			continue;
		struct mirror_pstate *ps = mirror_pstate_get(t, p->partition, true);
		if (!ps) {
			fail_msg_link = l->name;
			continue;
		}
		check_went_back(l, ps, p, since_ms, now);
		if (ps->progress > p->last_offset) {
			metric_observe(l->m_latency, 0);
			mirror_pstate_confirm(t, ps, p->partition, p->last_offset + 1);
			continue;
		}
		if (mirror_isr_short(ps) && !fail_ps) {
			fail_ps = ps;
			mirror_part_isr_message(p, l, ps);
		}
		if (hold_on(w, i, p, l, t, ps, k) != 0)
			fail_msg_link = l->name;
	}
	ref_start[i + 1] = (uint32_t)*k;
	w->nrefs = (uint32_t)*k; /* mirror_part_ref_next() reads it */
	if (fail_ps) {
		mirror_part_fail(w, i, MIRROR_NOT_ENOUGH_REMOTE);
	} else if (fail_msg_link) {
		mirror_wait_part_set_message(p, "mirror %s: out of memory", fail_msg_link);
		mirror_part_fail(w, i, MIRROR_TIMEOUT);
	} else if (wait_remaining(w)[i] == 0) {
		part_resolved(w, i, MIRROR_SATISFIED);
	} else if (w->deadline_ms <= now) {
		timeout_part(w, i);
	}
}

struct mirror_wait *mirror_gate_wait_since(struct mirror_gate *g, struct mirror_wait_part *parts,
					   size_t nparts, int64_t since_ms, int64_t deadline_ms,
					   mirror_wait_cb cb, void *arg)
{
	int64_t now = mirror_now_ms();
	size_t npending, nrefs = wait_count_refs(g, parts, nparts, &npending);
	struct mirror_wait *w = wait_new(g, parts, nparts, nrefs, npending, now, deadline_ms, cb, arg);
	if (!w)
		return NULL;
	g->in_wait = true;
	size_t k = 0;
	for (uint32_t i = 0; i < nparts; i++)
		wait_part(w, i, &parts[i], since_ms, now, &k);
	g->in_wait = false;

	if (w->npending == 0) {
		mirror_deadline_remove(g, w);
		list_remove(g, w);
		g->held--;
		wait_free(w);
		return NULL;
	}
	deadline_arm(g);
	return w;
}

void mirror_wait_cancel(struct mirror_wait *w)
{
	if (!w)
		return;
	struct mirror_gate *g = w->g;
	if (w->done) {
		/* in g->done, maybe while that list is being flushed: freed there */
		w->cb = NULL;
		w->parts = NULL;
		return;
	}
	for (uint32_t i = 0; i < w->nparts; i++)
		for (struct mirror_ref *r = mirror_part_ref_next(w, i, NULL); r; r = mirror_part_ref_next(w, i, r))
			ref_detach(r);
	mirror_deadline_remove(g, w);
	g->held--;
	list_remove(g, w);
	wait_free(w);
}
