/*
 * mirrored_hw.c — the mirrored high watermark (KIP "High Watermark
 * Advancement", the unified sourceHW; invariant 1b, docs/architecture.md).
 *
 * For a (topic, partition), the mirrored high watermark is the minimum, over
 * the mirrors that gate the topic now (tstate_gating(): effective SYNC and
 * not released — and every mirror while the state log is still being read,
 * fail closed) and whose `consumers` setting is `clamp`, of their progress
 * (`preserved`: destination high watermark; `mm2`: offset-syncs progress).
 * The proxy clamps consumers' Fetch, ListOffsets and OffsetForLeaderEpoch
 * answers to it (never above the broker's own HW: the proxy takes the min).
 *
 * Watches: a held Fetch response asks to be told when the mirrored HW of a
 * partition passes an offset. Progress reports (gate.c apply_report) and
 * mirror type changes (tstate_settle) call mirror_hw_progressed(); fired
 * watches run their callback from a deferred event, never inside the report
 * that moved the HW. Armed watches are indexed by (topic, partition), so a
 * report costs only its own partition's watches; there are at most as many
 * as held Fetch partitions, bounded by the proxy's held-bytes caps.
 *
 * Loop thread only.
 */
#include <stdlib.h>
#include <string.h>

#include "mirror/internal.h"

struct mirror_hw_watch {
	struct mirror_hw *hw;
	char *topic;
	int32_t partition;
	int64_t above;              /* fire when the mirrored HW > above */
	mirror_hw_cb cb;
	void *arg;
	bool fired;                 /* on the fired list, callback not run yet */
	struct mirror_hw_watch *next, **pprev;
};

#define HW_BUCKETS 1024 /* armed watches by (topic, partition); a power of two */

struct mirror_hw {
	struct mirror_gate *g;
	struct event *fire_ev;      /* runs fired callbacks outside report handling */
	struct mirror_hw_watch *armed[HW_BUCKETS];
	struct mirror_hw_watch *fired;   /* fired, callback pending */
	size_t nwatches, narmed;
};

static size_t bucket(const char *topic, int32_t partition)
{
	return (size_t)((mirror_hash_str(topic) ^ (uint64_t)(uint32_t)partition * 0x9e3779b97f4a7c15ull) &
			(HW_BUCKETS - 1));
}

static void list_unlink(struct mirror_hw_watch *w)
{
	*w->pprev = w->next;
	if (w->next)
		w->next->pprev = w->pprev;
	w->next = NULL;
	w->pprev = NULL;
}

static void list_push(struct mirror_hw_watch **head, struct mirror_hw_watch *w)
{
	w->next = *head;
	if (*head)
		(*head)->pprev = &w->next;
	*head = w;
	w->pprev = head;
}

static void fire_cb(evutil_socket_t fd, short what, void *arg)
{
	struct mirror_hw *hw = arg;
	struct mirror_hw_watch *w;
	(void)fd;
	(void)what;
	/* one at a time: a callback may cancel other watches (fired or not) */
	while ((w = hw->fired) != NULL) {
		list_unlink(w);
		hw->nwatches--;
		mirror_hw_cb cb = w->cb;
		void *cbarg = w->arg;
		free(w->topic);
		free(w);
		cb(cbarg);
	}
}

static struct mirror_hw *hw_get(struct mirror_gate *g)
{
	if (g->hw)
		return g->hw;
	struct mirror_hw *hw = calloc(1, sizeof(*hw));
	if (!hw)
		return NULL;
	hw->g = g;
	hw->fire_ev = event_new(g->base, -1, 0, fire_cb, hw);
	if (!hw->fire_ev) {
		free(hw);
		return NULL;
	}
	g->hw = hw;
	return hw;
}

/* Whether this mirror's progress limits consumers of `t` now. */
static bool link_clamps(const struct mirror_tstate *t)
{
	const struct mirror_gate *g = t->link->gate;
	if (t->link->cm && t->link->cm->consumers == CONF_CONSUMERS_PASS)
		return false;
	if (!g->state_ready || g->replaying)
		return true; /* fail closed, as the gate does */
	return t->ls.effective == MIRROR_SYNC && !t->ls.released;
}

int mirror_gate_mirrored_hw(struct mirror_gate *g, const char *topic, int32_t partition,
			    int64_t *out)
{
	bool gated = false;
	int64_t min = INT64_MAX;
	*out = -1;
	for (size_t i = 0; i < g->nlinks; i++) {
		struct mirror_tstate *t = mirror_tstate_get(g->links[i], topic, true);
		if (!t) {
			/* no memory to know: fail closed */
			gated = true;
			min = -1;
			continue;
		}
		if (!link_clamps(t))
			continue;
		gated = true;
		struct mirror_pstate *ps = mirror_pstate_get(t, partition, false);
		int64_t p = ps ? ps->progress : -1;
		if (p < min)
			min = p;
	}
	if (!gated)
		return 0;
	*out = min < 0 ? -1 : min;
	return 1;
}

struct clamped_all_ctx {
	bool (*known)(void *arg, const char *topic);
	void *arg;
	bool all;
};

static void clamped_all_one(struct mirror_tstate *t, void *arg)
{
	struct clamped_all_ctx *x = arg;
	if (x->all && link_clamps(t) && !x->known(x->arg, t->topic))
		x->all = false;
}

bool mirror_gate_clamped_topics_all(struct mirror_gate *g, bool (*known)(void *arg, const char *topic),
				    void *arg)
{
	bool any_clamp = false;
	for (size_t i = 0; i < g->nlinks; i++)
		if (!g->links[i]->cm || g->links[i]->cm->consumers != CONF_CONSUMERS_PASS)
			any_clamp = true;
	if (!any_clamp)
		return true; /* no mirror clamps consumers: no topic is clamped */
	if (!g->state_ready || g->replaying)
		return false; /* every topic is clamped, also those never named */
	struct clamped_all_ctx x = { known, arg, true };
	mirror_each_topic(g, NULL, clamped_all_one, &x);
	return x.all;
}

struct mirror_hw_watch *mirror_gate_hw_watch(struct mirror_gate *g, const char *topic,
					     int32_t partition, int64_t above, int64_t until_ms,
					     mirror_hw_cb cb, void *arg)
{
	struct mirror_hw *hw = hw_get(g);
	if (!hw)
		return NULL;
	struct mirror_hw_watch *w = calloc(1, sizeof(*w));
	if (!w || !(w->topic = strdup(topic))) {
		free(w);
		return NULL;
	}
	w->hw = hw;
	w->partition = partition;
	w->above = above;
	w->cb = cb;
	w->arg = arg;
	list_push(&hw->armed[bucket(topic, partition)], w);
	hw->nwatches++;
	hw->narmed++;
	/* ask the gating mirrors for prompt progress, as a held Produce does */
	for (size_t i = 0; i < g->nlinks; i++) {
		struct mirror_link *l = g->links[i];
		struct mirror_tstate *t = mirror_tstate_get(l, topic, false);
		if (!t || !l->worker || !link_clamps(t))
			continue;
		struct mirror_pstate *ps = mirror_pstate_get(t, partition, true);
		if (!ps)
			continue;
		if (above > ps->demanded || until_ms > ps->demand_until_ms) {
			if (above > ps->demanded)
				ps->demanded = above;
			if (until_ms > ps->demand_until_ms)
				ps->demand_until_ms = until_ms;
			mirror_worker_demand(l->worker, topic, partition, ps->demanded, ps->demand_until_ms, -1);
		}
	}
	/* already past (a report raced the caller's clamp): fire soon */
	int64_t now_hw;
	if (mirror_gate_mirrored_hw(g, topic, partition, &now_hw) == 0 || now_hw > above)
		mirror_hw_progressed(g, topic, partition);
	return w;
}

void mirror_hw_watch_cancel(struct mirror_hw_watch *w)
{
	if (!w)
		return;
	list_unlink(w);
	w->hw->nwatches--;
	if (!w->fired)
		w->hw->narmed--;
	free(w->topic);
	free(w);
}

/* Fire the armed watches of bucket k on (topic, partition; -1: any) whose
 * mirrored HW passed their offset. */
static void progressed_bucket(struct mirror_hw *hw, size_t k, const char *topic, int32_t partition)
{
	struct mirror_hw_watch *w = hw->armed[k], *next;
	for (; w; w = next) {
		next = w->next;
		if (strcmp(w->topic, topic) != 0 || (partition >= 0 && w->partition != partition))
			continue;
		int64_t m;
		if (mirror_gate_mirrored_hw(hw->g, topic, w->partition, &m) == 1 && m <= w->above)
			continue;
		list_unlink(w);
		w->fired = true;
		hw->narmed--;
		list_push(&hw->fired, w);
	}
}

void mirror_hw_progressed(struct mirror_gate *g, const char *topic, int32_t partition)
{
	struct mirror_hw *hw = g->hw;
	if (!hw || !hw->narmed)
		return;
	if (partition >= 0)
		progressed_bucket(hw, bucket(topic, partition), topic, partition);
	else /* a mirror type change: every partition of the topic */
		for (size_t k = 0; k < HW_BUCKETS && hw->narmed; k++)
			progressed_bucket(hw, k, topic, -1);
	if (hw->fired)
		event_active(hw->fire_ev, EV_TIMEOUT, 0);
}

void mirror_hw_free(struct mirror_gate *g)
{
	struct mirror_hw *hw = g->hw;
	if (!hw)
		return;
	for (size_t k = 0; k < HW_BUCKETS; k++)
		while (hw->armed[k])
			mirror_hw_watch_cancel(hw->armed[k]);
	while (hw->fired)
		mirror_hw_watch_cancel(hw->fired);
	event_free(hw->fire_ev);
	free(hw);
	g->hw = NULL;
}

void mirror_gate_topic_recreated(struct mirror_gate *g, const char *topic)
{
	for (size_t i = 0; i < g->nlinks; i++) {
		struct mirror_link *l = g->links[i];
		struct mirror_tstate *t = mirror_tstate_get(l, topic, false);
		if (!t)
			continue;
		LOG_W("mirror_source_topic_recreated", "mirror=%s topic=%s reason=\"the source broker has a new "
		      "TopicId for this name: its progress is measured again before any record counts as mirrored\"",
		      l->name, topic);
		for (int32_t p = 0; p < t->nparts_alloc; p++) {
			if (!t->parts[p])
				continue;
			mirror_pstate_forget_view(t->parts[p]);
			if (l->worker)
				mirror_worker_suspect(l->worker, topic, p);
		}
	}
}
