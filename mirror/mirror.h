/*
 * mirror — registered mirrors (destination clusters), their progress reports
 * gathered through librdkafka, and the sync gate that decides when a held
 * Produce response may be released.
 *
 * KIP mapping (shared/DESIGN.md §2): the KIP's source leader gates its high
 * watermark on sourceISR ∪ registered mirrors' ISR; here the gate holds the
 * broker's success response until every registered, non-released mirror in
 * effective SYNC for the topic reports the partition's last offset durable in
 * its ISR (destination high watermark > offset for `preserved`, MirrorMaker 2
 * offset-syncs "upstream ≥ U" for `mm2`), fails fast with
 * NOT_ENOUGH_REMOTE_REPLICAS_AFTER_APPEND when a mirror's ISR < MinISR, and
 * fails with MIRROR_SYNC_REPLICATION_TIMEOUT at the deadline.
 *
 * Threads: the gate and everything reachable from `struct mirror_gate` belong
 * to the event-loop thread; every function here is loop-thread only unless it
 * says otherwise. librdkafka calls that block run on a mirror worker thread;
 * their results reach the loop through a queue bridged into libevent.
 */
#ifndef SYNCGATE_MIRROR_H
#define SYNCGATE_MIRROR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct conf;

/** How one partition of a held response was resolved. */
enum mirror_outcome {
	MIRROR_PENDING,            /* not resolved yet */
	MIRROR_SATISFIED,          /* every gating mirror has the last offset: keep NONE */
	MIRROR_TIMEOUT,            /* MIRROR_SYNC_REPLICATION_TIMEOUT (KIP "Errors") */
	MIRROR_NOT_ENOUGH_REMOTE,  /* NOT_ENOUGH_REMOTE_REPLICAS_AFTER_APPEND: ISR < MinISR */
	MIRROR_OUTCOME_COUNT
};
const char *mirror_outcome_str(enum mirror_outcome o);

/** One partition of a held Produce response, as the gate sees it. */
struct mirror_wait_part {
	/* in */
	const char *topic;         /* source topic name; borrowed until resolved */
	int32_t partition;
	int64_t last_offset;       /* BaseOffset + offset span − 1: must be durable */
	/* out, set when resolved */
	enum mirror_outcome outcome;
	char message[200];         /* names the mirror and the reason on failure */
};

/** Called once on the loop thread when every part of a wait is resolved. */
typedef void (*mirror_wait_cb)(void *arg, struct mirror_wait_part *parts, size_t nparts);

struct mirror_gate;
struct mirror_wait;

/**
 * Create the gate and start one progress client per configured mirror.
 * `conf` is borrowed until the next mirror_gate_reconfigure() or free.
 * Returns NULL (and logs why) on failure. Loop thread.
 */
struct mirror_gate *mirror_gate_new(struct event_base *base, const struct conf *conf);

/** Stop every client and thread; pending waits are freed without callback. */
void mirror_gate_free(struct mirror_gate *g);

/**
 * Apply a reloaded config: mirrors added or removed, topic lists and timeouts.
 * A removed mirror or a topic no longer desired SYNC completes its waiters
 * at once under the async predicate. Loop thread.
 */
int mirror_gate_reconfigure(struct mirror_gate *g, const struct conf *conf);

/**
 * True when at least one mirror gates `topic` now (effective SYNC, not
 * released). Cheap: called for each topic of each acks=all Produce response.
 */
bool mirror_gate_is_gated(struct mirror_gate *g, const char *topic);

/**
 * Hold `nparts` partitions until each is resolved or `deadline_ms`
 * (monotonic clock, ms; see mirror_now_ms()) passes. `parts` is owned by the
 * caller and must stay valid until the callback or mirror_wait_cancel().
 * If every part resolves at once, fills the outcomes and returns NULL
 * without calling `cb`. Otherwise returns a handle; `cb` runs later, once.
 * Loop thread.
 */
struct mirror_wait *mirror_gate_wait(struct mirror_gate *g, struct mirror_wait_part *parts,
				     size_t nparts, int64_t deadline_ms,
				     mirror_wait_cb cb, void *arg);

/** Forget a wait (its connection closed); `cb` is not called. Loop thread. */
void mirror_wait_cancel(struct mirror_wait *w);

/** Monotonic clock in ms, the gate's time base. Any thread. */
int64_t mirror_now_ms(void);

#endif
