/*
 * waiters.c — the per-(mirror, topic, partition) index of held parts: a
 * binary min-heap of refs ordered by the offset that must become durable, so
 * a progress report releases exactly the refs below it in O(k log n) and an
 * idle partition costs nothing. Each ref remembers its heap position, so a
 * part failed or released elsewhere is removed in O(log n). Also the gate's
 * deadline heap of pending waits (below). Loop thread.
 */
#include <stdlib.h>

#include "mirror/internal.h"

static void heap_set(struct mirror_pstate *ps, uint32_t i, struct mirror_ref *r)
{
	ps->heap[i] = r;
	r->heap_idx = i;
}

static void sift_up(struct mirror_pstate *ps, uint32_t i)
{
	struct mirror_ref *r = ps->heap[i];
	while (i > 0) {
		uint32_t parent = (i - 1) / 2;
		if (ps->heap[parent]->offset <= r->offset)
			break;
		heap_set(ps, i, ps->heap[parent]);
		i = parent;
	}
	heap_set(ps, i, r);
}

static void sift_down(struct mirror_pstate *ps, uint32_t i)
{
	struct mirror_ref *r = ps->heap[i];
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= ps->nheap)
			break;
		if (c + 1 < ps->nheap && ps->heap[c + 1]->offset < ps->heap[c]->offset)
			c++;
		if (r->offset <= ps->heap[c]->offset)
			break;
		heap_set(ps, i, ps->heap[c]);
		i = c;
	}
	heap_set(ps, i, r);
}

int mirror_heap_push(struct mirror_pstate *ps, struct mirror_ref *r)
{
	if (ps->nheap == ps->capheap) {
		uint32_t cap = ps->capheap ? ps->capheap * 2 : 8;
		struct mirror_ref **h = realloc(ps->heap, cap * sizeof(*h));
		if (!h)
			return -1;
		ps->heap = h;
		ps->capheap = cap;
	}
	r->ps = ps;
	ps->heap[ps->nheap] = r;
	r->heap_idx = ps->nheap++;
	sift_up(ps, r->heap_idx);
	return 0;
}

void mirror_heap_remove(struct mirror_pstate *ps, struct mirror_ref *r)
{
	uint32_t i = r->heap_idx;
	if (i == MIRROR_NO_HEAP)
		return;
	r->heap_idx = MIRROR_NO_HEAP;
	ps->nheap--;
	if (i == ps->nheap)
		return;
	struct mirror_ref *last = ps->heap[ps->nheap];
	heap_set(ps, i, last);
	if (i > 0 && ps->heap[(i - 1) / 2]->offset > last->offset)
		sift_up(ps, i);
	else
		sift_down(ps, i);
}

/*
 * The gate's deadline heap: every pending wait, ordered by deadline_ms, so
 * one libevent timer (g->dl_ev, armed for the earliest) serves them all
 * instead of a 128-byte struct event per held response (issue 20). Each
 * wait remembers its position (dl_idx) for an O(log n) removal when it
 * resolves.
 */
static void dl_set(struct mirror_gate *g, uint32_t i, struct mirror_wait *w)
{
	g->dl[i] = w;
	w->dl_idx = i;
}

static void dl_sift_up(struct mirror_gate *g, uint32_t i)
{
	struct mirror_wait *w = g->dl[i];
	while (i > 0) {
		uint32_t parent = (i - 1) / 2;
		if (g->dl[parent]->deadline_ms <= w->deadline_ms)
			break;
		dl_set(g, i, g->dl[parent]);
		i = parent;
	}
	dl_set(g, i, w);
}

static void dl_sift_down(struct mirror_gate *g, uint32_t i)
{
	struct mirror_wait *w = g->dl[i];
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= g->ndl)
			break;
		if (c + 1 < g->ndl && g->dl[c + 1]->deadline_ms < g->dl[c]->deadline_ms)
			c++;
		if (w->deadline_ms <= g->dl[c]->deadline_ms)
			break;
		dl_set(g, i, g->dl[c]);
		i = c;
	}
	dl_set(g, i, w);
}

int mirror_deadline_push(struct mirror_gate *g, struct mirror_wait *w)
{
	if (g->ndl == g->capdl) {
		uint32_t cap = g->capdl ? g->capdl * 2 : 64;
		struct mirror_wait **h = realloc(g->dl, cap * sizeof(*h));
		if (!h)
			return -1;
		g->dl = h;
		g->capdl = cap;
	}
	g->dl[g->ndl] = w;
	w->dl_idx = g->ndl++;
	dl_sift_up(g, w->dl_idx);
	return 0;
}

void mirror_deadline_remove(struct mirror_gate *g, struct mirror_wait *w)
{
	uint32_t i = w->dl_idx;
	if (i == MIRROR_NO_HEAP)
		return;
	w->dl_idx = MIRROR_NO_HEAP;
	g->ndl--;
	if (i == g->ndl)
		return;
	struct mirror_wait *last = g->dl[g->ndl];
	dl_set(g, i, last);
	if (i > 0 && g->dl[(i - 1) / 2]->deadline_ms > last->deadline_ms)
		dl_sift_up(g, i);
	else
		dl_sift_down(g, i);
}
