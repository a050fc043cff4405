/*
 * waiters.c — the per-(mirror, topic, partition) index of held parts: a
 * binary min-heap of refs ordered by the offset that must become durable, so
 * a progress report releases exactly the refs below it in O(k log n) and an
 * idle partition costs nothing. Each ref remembers its heap position, so a
 * part failed or released elsewhere is removed in O(log n). Loop thread.
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
