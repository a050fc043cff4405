/*
 * mirror/group_commits.h — the gate's synchronous consumer-group commits
 * (mirror/commits.c; docs/operating.md "Consumer groups"). Included by
 * mirror/mirror.h after the gate's types.
 */
#ifndef SYNCGATE_MIRROR_GROUP_COMMITS_H
#define SYNCGATE_MIRROR_GROUP_COMMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mirror_gate;

/* ------------------------------------------------------------------------ */
/* Synchronous consumer-group commits (docs/operating.md "Consumer groups") */
/* ------------------------------------------------------------------------ */

/** How a synchronous group commit ended, worst over its mirrors. */
enum mirror_commit_outcome {
	MIRROR_COMMIT_STORED,       /* every gating mirror's destination stored it (or stopped gating) */
	MIRROR_COMMIT_TIMEOUT,      /* a destination did not confirm by the deadline */
	MIRROR_COMMIT_ACTIVE,       /* a destination group has members: it refuses a commit from outside */
	MIRROR_COMMIT_REFUSED,      /* a destination answered another error */
	MIRROR_COMMIT_OUTCOME_COUNT
};
/** "stored", "timeout", "destination_active", "refused" (metrics labels). */
const char *mirror_commit_outcome_str(enum mirror_commit_outcome o);

/** One partition of a consumer group's OffsetCommit, as the source coordinator accepted it. */
struct mirror_commit_part {
	const char *topic;          /* source topic name (borrowed for the call) */
	int32_t partition;
	int64_t offset;             /* CommittedOffset: the next record the group consumes */
	const char *metadata;       /* CommittedMetadata (copied to the destination); NULL: null */
};

/** Called once on the loop thread when a held commit ends; `detail` names the mirror ("" when stored). */
typedef void (*mirror_commit_cb)(void *arg, enum mirror_commit_outcome outcome, const char *detail);
struct mirror_commit;

/**
 * Whether some mirror lists `group` in its `sync_groups` (so its
 * OffsetCommit requests are read). Cheap; loop thread.
 */
bool mirror_gate_syncs_group(struct mirror_gate *g, const char *group);

/**
 * Make a group commit synchronous: for every mirror whose `sync_groups`
 * match `group` and that gates (effective SYNC, not released) a topic of
 * `parts`, write the same offsets for the same group on its destination
 * (librdkafka AlterConsumerGroupOffsets: accepted only while the
 * destination group has no members). An offset is never written past the
 * mirror's known progress (capped: the consumer clamp already keeps a
 * clamped consumer's commits at or below it); `offsets: mm2` translates it
 * through the offset-syncs (exact at a sync, else conservative: the
 * destination resumes at or before the record). Source leader epochs are
 * not copied (the destination's are its own).
 * Returns 0 when no mirror gates this commit (answer as the broker did),
 * 1 when held: `cb(arg, ...)` follows once, at `deadline_ms` at the latest
 * (mirror_now_ms() base), never from inside this call, and *out is the
 * handle for mirror_commit_cancel; -1 on ENOMEM (fail closed: the caller
 * answers a retriable error). A mirror released, demoted or removed while
 * a commit is held stops holding it at once. Loop thread.
 */
int mirror_gate_commit(struct mirror_gate *g, const char *group, const struct mirror_commit_part *parts,
		       size_t nparts, int64_t deadline_ms, mirror_commit_cb cb, void *arg,
		       struct mirror_commit **out);

/** Called once on the loop thread with the source high watermarks asked for (hw[i] −1: unknown). */
typedef void (*mirror_source_hw_cb)(void *arg, const int64_t *hw, size_t n);
struct mirror_source_hw_req;
/**
 * Ask the source cluster now for the high watermarks of partitions
 * (topics[i], partitions[i]), i < n, each of its leader, with syncgate's own
 * source client (source.properties; one thread and one client per gate,
 * started at the first call). Every value is sampled after the call. NULL on
 * ENOMEM or when the client cannot be made (logged; `cb` is not called).
 * Strings are copied. Loop thread.
 */
struct mirror_source_hw_req *mirror_gate_source_hw(struct mirror_gate *g, const char *const *topics,
						   const int32_t *partitions, size_t n, mirror_source_hw_cb cb,
						   void *arg);
/** Forget a request: `cb` is not called (NULL is fine). Loop thread. */
void mirror_source_hw_cancel(struct mirror_source_hw_req *r);

/** Forget a held commit (its connection closed): `cb` is not called. Loop thread. */
void mirror_commit_cancel(struct mirror_commit *c);

#endif
