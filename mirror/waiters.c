/*
 * waiters.c — the two indexed min-heaps of the gate. Loop thread.
 *
 *  - Per (mirror, topic, partition): the held parts (struct mirror_ref),
 *    ordered by the offset that must become durable, so a progress report
 *    releases exactly the refs below it in O(k log n) and an idle partition
 *    costs nothing.
 *  - Per gate: every pending wait (struct mirror_wait) ordered by
 *    deadline_ms, so one libevent timer (g->dl_ev, armed for the earliest)
 *    serves them all instead of a 128-byte struct event per held response.
 *
 * Each element remembers its position (heap_idx / dl_idx), so one failed or
 * released elsewhere leaves its heap in O(log n). Both heaps are one
 * definition, INDEXED_HEAP below, instantiated per element type (no
 * indirect call on the release path).
 */
#include <stdlib.h>

#include "mirror/internal.h"

/*
 * INDEXED_HEAP(name, T, KEY, IDX) defines, for a heap stored as `T **v`
 * with `uint32_t n` elements, where KEY(x) is an element's int64 key and
 * x->IDX its position field:
 *   name_sift_up(v, i), name_sift_down(v, n, i),
 *   name_push(&v, &n, &cap, mincap, x)  (0, or -1 on ENOMEM: unchanged),
 *   name_remove(v, &n, x)               (no-op when x->IDX is MIRROR_NO_HEAP).
 */
#define INDEXED_HEAP(name, T, KEY, IDX)                                                              \
	static void name##_set(T **v, uint32_t i, T *x)                                              \
	{                                                                                            \
		v[i] = x;                                                                            \
		x->IDX = i;                                                                          \
	}                                                                                            \
	static void name##_sift_up(T **v, uint32_t i)                                                \
	{                                                                                            \
		T *x = v[i];                                                                         \
		while (i > 0) {                                                                      \
			uint32_t parent = (i - 1) / 2;                                               \
			if (KEY(v[parent]) <= KEY(x))                                                \
				break;                                                               \
			name##_set(v, i, v[parent]);                                                 \
			i = parent;                                                                  \
		}                                                                                    \
		name##_set(v, i, x);                                                                 \
	}                                                                                            \
	static void name##_sift_down(T **v, uint32_t n, uint32_t i)                                  \
	{                                                                                            \
		T *x = v[i];                                                                         \
		for (;;) {                                                                           \
			uint32_t c = 2 * i + 1;                                                      \
			if (c >= n)                                                                  \
				break;                                                               \
			if (c + 1 < n && KEY(v[c + 1]) < KEY(v[c]))                                  \
				c++;                                                                 \
			if (KEY(x) <= KEY(v[c]))                                                     \
				break;                                                               \
			name##_set(v, i, v[c]);                                                      \
			i = c;                                                                       \
		}                                                                                    \
		name##_set(v, i, x);                                                                 \
	}                                                                                            \
	static int name##_push(T ***v, uint32_t *n, uint32_t *cap, uint32_t mincap, T *x)            \
	{                                                                                            \
		if (*n == *cap) {                                                                    \
			uint32_t c = *cap ? *cap * 2 : mincap;                                       \
			T **h = realloc(*v, c * sizeof(*h));                                         \
			if (!h)                                                                      \
				return -1;                                                           \
			*v = h;                                                                      \
			*cap = c;                                                                    \
		}                                                                                    \
		(*v)[*n] = x;                                                                        \
		x->IDX = (*n)++;                                                                     \
		name##_sift_up(*v, x->IDX);                                                          \
		return 0;                                                                            \
	}                                                                                            \
	static void name##_remove(T **v, uint32_t *n, T *x)                                          \
	{                                                                                            \
		uint32_t i = x->IDX;                                                                 \
		if (i == MIRROR_NO_HEAP)                                                             \
			return;                                                                      \
		x->IDX = MIRROR_NO_HEAP;                                                             \
		(*n)--;                                                                              \
		if (i == *n)                                                                         \
			return;                                                                      \
		T *last = v[*n];                                                                     \
		name##_set(v, i, last);                                                              \
		if (i > 0 && KEY(v[(i - 1) / 2]) > KEY(last))                                        \
			name##_sift_up(v, i);                                                        \
		else                                                                                 \
			name##_sift_down(v, *n, i);                                                  \
	}

#define REF_KEY(r) ((r)->offset)
#define WAIT_KEY(w) ((w)->deadline_ms)
INDEXED_HEAP(refs, struct mirror_ref, REF_KEY, heap_idx)
INDEXED_HEAP(deadlines, struct mirror_wait, WAIT_KEY, dl_idx)

int mirror_heap_push(struct mirror_pstate *ps, struct mirror_ref *r)
{
	if (refs_push(&ps->heap, &ps->nheap, &ps->capheap, 8, r) != 0)
		return -1;
	r->ps = ps;
	return 0;
}

void mirror_heap_remove(struct mirror_pstate *ps, struct mirror_ref *r)
{
	refs_remove(ps->heap, &ps->nheap, r);
}

int mirror_deadline_push(struct mirror_gate *g, struct mirror_wait *w)
{
	return deadlines_push(&g->dl, &g->ndl, &g->capdl, 64, w);
}

void mirror_deadline_remove(struct mirror_gate *g, struct mirror_wait *w)
{
	deadlines_remove(g->dl, &g->ndl, w);
}
