/*
 * settle.c — the only release by mirror type (invariant 1, "only the
 * current state releases", docs/architecture.md): once the state is current,
 * a (mirror, topic) that stops gating satisfies its waiters, one that begins
 * to gate joins the waits already held on its topic, a fenced one fails
 * them; and the gate's questions by topic (gated, fenced). Loop thread.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "mirror/internal.h"
#include "mirror/wait.h"

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
	for (struct mirror_ref *r = mirror_part_ref_next(w, i, NULL); r; r = mirror_part_ref_next(w, i, r))
		if (r->ps && r->ps->t == t)
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
			struct mirror_jref *j = ps ? calloc(1, sizeof(*j)) : NULL;
			if (!j) { /* fail closed */
				mirror_wait_part_set_message(p, "mirror %s: out of memory", t->link->name);
				mirror_part_fail(w, i, MIRROR_TIMEOUT);
				continue;
			}
			j->r = (struct mirror_ref){.w = w, .ps = ps, .offset = p->last_offset, .part = i,
						   .heap_idx = MIRROR_NO_HEAP};
			j->next = w->joined;
			w->joined = j;
			if (mirror_heap_push(ps, &j->r) != 0) {
				mirror_wait_part_set_message(p, "mirror %s: out of memory", t->link->name);
				mirror_part_fail(w, i, MIRROR_TIMEOUT);
				continue;
			}
			t->held++;
			wait_remaining(w)[i]++;
			LOG_D("mirror_wait_joined", "mirror=%s topic=%s partition=%" PRId32 " offset=%" PRId64
			      " held_ms=%" PRId64, t->link->name, t->topic, p->partition, p->last_offset,
			      now - (w->deadline_ms - w->hold_ms));
			struct mirror_link *l = t->link;
			if (l->worker && (p->last_offset > ps->demanded || w->deadline_ms > ps->demand_until_ms)) {
				if (p->last_offset > ps->demanded)
					ps->demanded = p->last_offset;
				if (w->deadline_ms > ps->demand_until_ms)
					ps->demand_until_ms = w->deadline_ms;
				mirror_worker_demand(l->worker, p->topic, p->partition, ps->demanded,
						     ps->demand_until_ms, p->committed ? p->last_offset + 1 : -1);
			}
			if (mirror_isr_short(ps)) {
				mirror_part_isr_message(p, l, ps);
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
			mirror_wait_part_set_message(wp, "mirror %s: topic fenced for failover; record not "
						     "confirmed on the destination", t->link->name);
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
	bool gating = mirror_tstate_gating(t);
	if (!gating) {
		if (mirror_tstate_fenced(t))
			tstate_fail_waiters(t);
		else
			mirror_tstate_release_waiters(t);
	} else if (!t->gating_joined) {
		tstate_join_waiters(t);
	}
	t->gating_joined = gating;
	mirror_hw_progressed(t->link->gate, t->topic, -1); /* held Fetch responses */
	mirror_commits_topic_settled(t);                    /* held group commits */
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

bool mirror_gate_fenced_mirrored(struct mirror_gate *g, const char *topic, int32_t partition, int64_t end)
{
	bool any = false;
	for (size_t i = 0; i < g->nlinks; i++) {
		struct mirror_tstate *t = mirror_tstate_get(g->links[i], topic, false);
		if (!t || !mirror_tstate_fenced(t))
			continue;
		any = true;
		if (mirror_tstate_gating(t))
			continue; /* the gate holds the answer until this mirror has the records */
		const struct mirror_pstate *ps = mirror_pstate_get(t, partition, false);
		if (!ps || ps->progress < end)
			return false; /* not gating (released, demoted, async) and not known to have them */
	}
	return any;
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
		if (t && mirror_tstate_gating(t))
			return true;
	}
	return false;
}

