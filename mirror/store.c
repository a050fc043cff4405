/*
 * store.c — the gate's per (mirror, topic) and (mirror, topic, partition)
 * state: lookup and creation, lag, and the one walk over every topic of every
 * mirror. The bottom of the gate: it calls nothing above it (no waits, no
 * transitions). Loop thread.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mirror/internal.h"

uint64_t mirror_hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

void mirror_tstate_metrics(struct mirror_tstate *t)
{
	metric_set(t->m_desired, t->ls.desired == MIRROR_SYNC);
	metric_set(t->m_effective, t->ls.effective == MIRROR_SYNC);
}

struct mirror_link *mirror_link_find(struct mirror_gate *g, const char *name)
{
	for (size_t i = 0; i < g->nlinks; i++)
		if (strcmp(g->links[i]->name, name) == 0)
			return g->links[i];
	return NULL;
}

void mirror_each_topic(struct mirror_gate *g, struct mirror_link *only,
		       void (*fn)(struct mirror_tstate *t, void *arg), void *arg)
{
	size_t n = only ? 1 : g->nlinks;
	for (size_t i = 0; i < n; i++) {
		struct mirror_link *l = only ? only : g->links[i];
		for (size_t b = 0; b < l->nbuckets; b++) {
			struct mirror_tstate *t = l->buckets[b];
			while (t) {
				struct mirror_tstate *next = t->next; /* fn may free t */
				fn(t, arg);
				t = next;
			}
		}
	}
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
			size_t k = mirror_hash_str(t->topic) & (nb - 1);
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
		for (struct mirror_tstate *t = l->buckets[mirror_hash_str(topic) & (l->nbuckets - 1)]; t; t = t->next)
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
	t->ls = mirror_lstate_initial(conf_topic_regexes_match(l->re, l->nre, topic) ? MIRROR_SYNC : MIRROR_ASYNC);
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
	t->m_stalled = mirror_metric_mt(METRIC_GAUGE, "syncgate_mirror_stalled_partitions",
					"Partitions whose progress stalls although the destination has the records "
					"(mm2: offset-syncs and the record match behind the destination; see describe's stall_reason)",
					l->name, topic);
	mirror_tstate_metrics(t);
	size_t k = mirror_hash_str(topic) & (l->nbuckets - 1);
	t->next = l->buckets[k];
	l->buckets[k] = t;
	l->ntopics++;
	return t;
}

void mirror_tstate_count_fence(struct mirror_tstate *t, int sign)
{
	struct mirror_gate *g = t->link->gate;
	if (t->ls.fenced)
		g->nfenced += (size_t)sign;
	if (t->ls.fenced || t->fence_seen)
		g->nfence_seen += (size_t)sign;
}

void mirror_tstate_free(struct mirror_tstate *t)
{
	mirror_tstate_count_fence(t, -1);
	if (t->reported) { /* still listed for the end of the bridge batch */
		struct mirror_tstate **pp = &t->link->gate->reported;
		while (*pp && *pp != t)
			pp = &(*pp)->reported_next;
		if (*pp)
			*pp = t->reported_next;
	}
	for (int32_t p = 0; p < t->nparts_alloc; p++) {
		if (t->parts[p])
			free(t->parts[p]->heap);
		free(t->parts[p]);
	}
	free(t->parts);
	free(t->topic);
	free(t);
}

void mirror_pstate_forget_view(struct mirror_pstate *ps)
{
	ps->progress = ps->sampled_hw = -1;
	ps->isr = ps->min_isr = -1;
	ps->demanded = ps->demand_until_ms = -1;
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
	ps->t = t;
	mirror_pstate_forget_view(ps);
	ps->failing_since_ms = -1;
	ps->confirmed = -1;
	ps->appended_max = -1;
	t->parts[partition] = ps;
	return ps;
}

void mirror_pstate_confirm(struct mirror_tstate *t, struct mirror_pstate *ps, int32_t partition, int64_t after)
{
	if (after <= ps->confirmed)
		return;
	ps->confirmed = after;
	if (!ps->m_confirmed) {
		char m[160], tp[300], labels[600];
		mirror_label_escape(m, sizeof(m), t->link->name);
		mirror_label_escape(tp, sizeof(tp), t->topic);
		snprintf(labels, sizeof(labels), "mirror=\"%s\",topic=\"%s\",partition=\"%" PRId32 "\"", m, tp,
			 partition);
		ps->m_confirmed = metric_get(METRIC_GAUGE, "syncgate_mirror_confirmed_offset",
					     "First offset after the last held record this mirror confirmed durable "
					     "(what syncgate-ctl verify --destination-only checks after a disaster)",
					     labels, NULL, 0);
	}
	metric_set(ps->m_confirmed, (double)after);
}

int64_t mirror_pstate_lag(const struct mirror_pstate *ps)
{
	if (!ps || ps->sampled_hw < 0 || ps->progress < 0)
		return -1;
	return ps->sampled_hw > ps->progress ? ps->sampled_hw - ps->progress : 0;
}

int64_t mirror_tstate_lag(const struct mirror_tstate *t, unsigned flags, int64_t *known_sum)
{
	int64_t sum = 0;
	bool known = t->npart > 0;
	if (known_sum)
		*known_sum = 0;
	int32_t n = t->npart > t->nparts_alloc ? t->npart : t->nparts_alloc;
	for (int32_t p = 0; p < n && (known || known_sum); p++) {
		const struct mirror_pstate *ps = p < t->nparts_alloc ? t->parts[p] : NULL;
		int64_t lag = mirror_pstate_lag(ps);
		if (lag >= 0 && known_sum)
			*known_sum += lag;
		if (p >= t->npart)
			continue;
		if (lag < 0 || ((flags & MIRROR_LAG_CURRENT) && ps->failing_since_ms >= 0))
			known = false; /* unknown, or (CURRENT) not current: never "lag zero" */
		else
			sum += lag;
	}
	return known ? sum : -1;
}
