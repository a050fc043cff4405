/*
 * wait.h — what wait.c and settle.c share about a held wait's allocation
 * and its refs. Private to mirror/. Loop thread.
 */
#ifndef SYNCGATE_MIRROR_WAIT_H
#define SYNCGATE_MIRROR_WAIT_H

#include "mirror/internal.h"

/* The trailing arrays of w's allocation (see struct mirror_wait). */
static inline uint32_t *wait_remaining(struct mirror_wait *w)
{
	return (uint32_t *)(w + 1);
}

static inline uint32_t *wait_ref_start(struct mirror_wait *w)
{
	return wait_remaining(w) + w->nparts;
}

static inline size_t wait_arrays_size(size_t nparts)
{
	return ((2 * nparts + 1) * sizeof(uint32_t) + 7) & ~(size_t)7;
}

static inline struct mirror_ref *wait_refs(struct mirror_wait *w)
{
	return (struct mirror_ref *)((char *)(w + 1) + wait_arrays_size(w->nparts));
}

/** Whether (mirror, topic) t gates now: every topic while the state log is
 * read or a reload replays kept records (fail closed), else effective SYNC
 * and not released. */
bool mirror_tstate_gating(const struct mirror_tstate *t);
/** The refs of part i of w, in order: those of its registration, then the
 * joined ones. Start with r = NULL; NULL after the last. */
struct mirror_ref *mirror_part_ref_next(struct mirror_wait *w, uint32_t i, struct mirror_ref *r);

#endif
