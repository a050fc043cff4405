/*
 * mirror — registered mirrors (destination clusters), their progress reports
 * gathered through librdkafka, and the sync gate that decides when a held
 * Produce response may be released.
 *
 * KIP mapping (docs/architecture.md): the KIP's source leader gates its high
 * watermark on sourceISR ∪ registered mirrors' ISR; here the gate holds the
 * broker's success response until every registered, non-released mirror in
 * effective SYNC for the topic reports the partition's last offset durable in
 * its ISR (destination high watermark > offset for `preserved`, MirrorMaker 2
 * offset-syncs "upstream ≥ U" for `mm2`), fails fast with
 * NOT_ENOUGH_REMOTE_REPLICAS_AFTER_APPEND when a mirror's ISR < MinISR, and
 * fails with MIRROR_SYNC_REPLICATION_TIMEOUT at the deadline.
 *
 * Lifecycle (KIP desired/effective mirror type, Released, RecoveryPromotion,
 * pendingRecoveryPromotion, RetryAttempt): mirror/lifecycle.h's state machine,
 * fed by the state log on the source cluster (mirror/statelog.c) that every
 * sidecar folds in order; one sidecar at a time (the decider) writes
 * promotions and timeout demotions; operator calls are mirror_gate_alter()
 * and mirror_gate_release() below.
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
#include <time.h>

struct event_base;
struct conf;
struct conf_mirror;

/** How one partition of a held response was resolved. */
enum mirror_outcome {
	MIRROR_PENDING,            /* not resolved yet */
	MIRROR_SATISFIED,          /* every gating mirror has the last offset: keep NONE */
	MIRROR_TIMEOUT,            /* MIRROR_SYNC_REPLICATION_TIMEOUT (KIP "Errors") */
	MIRROR_NOT_ENOUGH_REMOTE,  /* NOT_ENOUGH_REMOTE_REPLICAS_AFTER_APPEND: ISR < MinISR */
	MIRROR_OUTCOME_COUNT
};
const char *mirror_outcome_str(enum mirror_outcome o);

/**
 * One partition of a held Produce response, as the gate sees it. 32 bytes:
 * one per held partition (≤ 512 B per held response), so the
 * failure message is allocated only when a part fails.
 */
struct mirror_wait_part {
	/* in */
	const char *topic;         /* source topic name; borrowed until resolved */
	int64_t last_offset;       /* BaseOffset + offset span − 1: must be durable */
	int32_t partition;
	bool committed;            /* acks=all answered it: the source's HW was at least
				    * last_offset + 1 then (lets a lane skip a source read) */
	/* out, set when resolved */
	enum mirror_outcome outcome;
	char *message;             /* on failure: names the mirror and the reason; owned by the
				    * part (set with mirror_wait_part_set_message(), freed with
				    * mirror_wait_parts_clear()); NULL: none. NULL on entry for a
				    * PENDING part. Read it with mirror_wait_part_message(). */
};

/**
 * Set p's message (printf format), replacing (and freeing) the one it had.
 * On ENOMEM the message becomes a fixed "out of memory" text: a failed part
 * always has one. Any thread that owns `p`.
 */
void mirror_wait_part_set_message(struct mirror_wait_part *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/** p's message, "" when it has none. Borrowed until it is set again or cleared. */
const char *mirror_wait_part_message(const struct mirror_wait_part *p);

/** Free the messages of parts[0..n) (not the array) and set them NULL. */
void mirror_wait_parts_clear(struct mirror_wait_part *parts, size_t n);

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
 * A removed mirror, or a topic no longer desired SYNC (sync_topics decide the
 * desired type only while the state log has no ALTER for the topic),
 * completes its waiters at once under the async predicate. State-log records
 * of a mirror the reload adds are applied then. Loop thread.
 */
int mirror_gate_reconfigure(struct mirror_gate *g, const struct conf *conf);

/**
 * True when at least one mirror gates `topic` now (effective SYNC, not
 * released). Cheap: called for each topic of each acks=all Produce response.
 */
bool mirror_gate_is_gated(struct mirror_gate *g, const char *topic);

/**
 * A client whose id looks like a mirror tool (MirrorMaker 2) fetched through
 * syncgate without an exemption (consumers.exempt_client_ids/_principals):
 * `client_id` (copied) goes into the answer of a later --alter --sync of an
 * `offsets: mm2` mirror, as a compatibility warning. Loop thread.
 */
void mirror_gate_note_unexempt_reader(struct mirror_gate *g, const char *client_id);

/**
 * The name of a mirror whose failover fence refuses Produce to `topic` now
 * (syncgate-ctl failover; lifted by unfence), or NULL. While the state log
 * is still being read, a fence seen in its history counts (fail closed).
 * Borrowed until the next reload. Cheap; loop thread.
 */
const char *mirror_gate_fenced_by(struct mirror_gate *g, const char *topic);

/**
 * Whether a batch the source appended at [.., `end`) of `topic` /
 * `partition` may be answered while fenced (proxy/retried.c): some mirror
 * fences the topic, and each one that does either still gates it (the gate
 * holds the answer until it has the records) or has confirmed progress at
 * or past `end` (a verified failover's release). False for a fenced mirror
 * that stopped gating without having them (demoted, altered to async,
 * released after a drain that did not finish). Cheap; loop thread.
 */
bool mirror_gate_fenced_mirrored(struct mirror_gate *g, const char *topic, int32_t partition, int64_t end);

/** True when any topic is fenced now (a request naming topics not yet read —
 * a streamed Produce — must then be read whole first). While the state log is
 * read, a fence seen in its history counts. O(1); loop thread. */
bool mirror_gate_any_fenced(struct mirror_gate *g);

/**
 * Hold `nparts` partitions until each is resolved or `deadline_ms`
 * (monotonic clock, ms; see mirror_now_ms()) passes. `parts` is owned by the
 * caller and must stay valid until the callback or mirror_wait_cancel().
 * If every part resolves at once, fills the outcomes and returns NULL
 * without calling `cb`. Otherwise returns a handle; `cb` runs later, once.
 * Parts whose `outcome` is not MIRROR_PENDING on entry are already resolved
 * by the caller and are left exactly as they are.
 * Loop thread.
 */
struct mirror_wait *mirror_gate_wait(struct mirror_gate *g, struct mirror_wait_part *parts,
				     size_t nparts, int64_t deadline_ms,
				     mirror_wait_cb cb, void *arg);

/**
 * mirror_gate_wait() for records appended by a request that arrived at
 * `since_ms` (mirror_now_ms()): a part's last offset below a source HW
 * sampled before then, or at or below a held record registered before then,
 * means the source partition went back (deleted and recreated, or
 * truncated: the destination's offsets name other records) or the answer is
 * an idempotent retry's first offset — so that mirror's progress is
 * forgotten (logged) until a fresh source sample confirms it, and the part is
 * held, not released by it. Loop thread.
 */
struct mirror_wait *mirror_gate_wait_since(struct mirror_gate *g, struct mirror_wait_part *parts,
					   size_t nparts, int64_t since_ms, int64_t deadline_ms,
					   mirror_wait_cb cb, void *arg);

/** Forget a wait (its connection closed); `cb` is not called. Loop thread. */
void mirror_wait_cancel(struct mirror_wait *w);

/** Monotonic clock in ms, the gate's time base. Any thread. */
static inline int64_t mirror_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/** Mirror type of a (mirror, topic): KIP DesiredMirrorType / EffectiveMirrorType. */
enum mirror_type {
	MIRROR_ASYNC, /* replicated, never gates acks */
	MIRROR_SYNC,  /* gates acks=all (when effective and not released) */
	MIRROR_TYPE_COUNT
};
const char *mirror_type_str(enum mirror_type t);

/** mirror_gate_new_ex() flags. */
#define MIRROR_GATE_NO_WORKERS 0x1u /* start no librdkafka clients (tests: reports are injected) */
#define MIRROR_GATE_STATE_PENDING 0x2u /* with NO_WORKERS: start as if the state log were still
					* being read, until mirror_gate_inject_record(g, NULL, -1) (tests) */

/**
 * mirror_gate_new() with flags; mirror_gate_new(b, c) == mirror_gate_new_ex(b, c, 0).
 * With MIRROR_GATE_NO_WORKERS no thread or librdkafka client is started and
 * progress only comes from mirror_gate_inject_report(). Loop thread.
 */
struct mirror_gate *mirror_gate_new_ex(struct event_base *base, const struct conf *conf,
				       unsigned flags);

/**
 * One destination progress report for (mirror, source topic, partition), as
 * the mirror workers send them. Any numeric field at -1 means "not in this
 * report, keep the previous value".
 */
struct mirror_report {
	const char *mirror;     /* mirror name (config `mirrors[].name`) */
	const char *topic;      /* SOURCE topic name */
	int32_t partition;
	int32_t npartitions;    /* source partition count, or -1 */
	int64_t progress;       /* first offset NOT yet durable on the destination ISR
				 * (preserved: destination HW; mm2: greatest upstream
				 * offset in offset-syncs + 1), or -1 */
	int64_t source_hw;      /* source high watermark sampled BEFORE `progress`
				 * (lag = source_hw − progress), or -1 */
	int64_t source_hw_after; /* preserved offsets: a source high watermark sampled
				 * AT OR AFTER the destination read of `progress`; the
				 * gate takes `progress` only when this is ≥ it (else
				 * the destination holds records the source does not:
				 * never a release by them). Ignored for mm2. */
	int32_t isr;            /* destination partition ISR size, or -1 */
	int32_t min_isr;        /* destination min.insync.replicas, or -1 */
	const char *error;      /* NULL, or why this partition's progress failed
				 * (e.g. "UNKNOWN_TOPIC_OR_PART"); counted in
				 * syncgate_sync_partition_fetch_failures_total */
	const char *stall;      /* NULL: not in this report; else why progress does
				 * not follow although the destination moves (e.g.
				 * "offset-syncs behind the destination"), "" when it
				 * no longer stalls; syncgate_mirror_stalled_partitions */
	bool diverged;          /* the destination is ahead of the source (a destination
				 * HW read before a source HW sample exceeded it: the
				 * source partition was recreated or truncated, or
				 * records were written straight to the destination): the
				 * gate forgets the partition's progress; with `error` */
	int64_t read_us;        /* CLOCK_MONOTONIC µs at which the worker read `progress`
				 * (the destination answered; 0: unknown):
				 * syncgate_mirror_release_delay_seconds */
};

/**
 * Queue a report as if a mirror worker had sent it (tests and
 * integration tools). Copies everything; applied on the loop thread when the
 * loop next runs (like worker reports, through the same bridge). Unknown
 * mirror names are dropped there. Any thread. Returns 0, or -1 on ENOMEM.
 */
int mirror_gate_inject_report(struct mirror_gate *g, const struct mirror_report *r);

/** What the gate knows about one (mirror, source topic). */
struct mirror_topic_info {
	enum mirror_type desired;   /* last ALTER in the state log, else sync_topics */
	enum mirror_type effective; /* SYNC once promoted at lag zero (REGISTER in the log) */
	bool released;              /* KIP sticky Released marker */
	bool recovery_pending;      /* KIP pendingRecoveryPromotion */
	int32_t retry_attempt;      /* KIP RetryAttempt: rejected promotions in a row */
	int32_t npartitions;        /* source partition count, -1 unknown */
	int64_t lag;                /* Σ partitions (source HW − progress), -1 if any unknown */
	int32_t failing_partitions; /* partitions whose last progress attempt failed */
	int32_t stalled_partitions; /* partitions whose progress stalls (mirror_report.stall) */
	size_t held;                /* parts of held waits gated by this mirror on this topic */
};

/** What the gate knows about one (mirror, source topic, partition). */
struct mirror_partition_info {
	int64_t progress;           /* -1 unknown */
	int64_t source_hw;          /* last source HW sample paired with progress, -1 unknown */
	int32_t isr, min_isr;       /* -1 unknown */
	int64_t failing_since_ms;   /* mirror_now_ms() of the first failure in a row, -1 when healthy */
	char reason[64];            /* last failure reason, "" when healthy */
	char stall[64];             /* why progress stalls, "" when it does not */
	size_t held;                /* held parts waiting on this mirror here */
};

/**
 * Describe (mirror, topic). Returns 0 and fills `out`, or -1 when the mirror
 * is not configured (a topic the gate has not seen yet is reported with
 * unknown figures and its desired type from sync_topics). Loop thread.
 */
int mirror_gate_topic_info(struct mirror_gate *g, const char *mirror, const char *topic,
			   struct mirror_topic_info *out);
int mirror_gate_partition_info(struct mirror_gate *g, const char *mirror, const char *topic,
			       int32_t partition, struct mirror_partition_info *out);

/**
 * Whether `mirror` has sent any progress report (a partition with a known
 * progress, ISR or MinISR). `why` (`n` bytes) gets the failure reason of a
 * failing partition, "" when none. False for an unknown mirror. For /readyz.
 * Loop thread.
 */
bool mirror_gate_mirror_reported(struct mirror_gate *g, const char *mirror, char *why, size_t n);

/**
 * Whether `mirror` has nothing to report: the state log was read up to its
 * end, its worker's last source listing matched no topic (sync_topics match
 * none, none demanded), and none of its topics is desired or effectively
 * SYNC — e.g. a mirror whose topics are to be added later with
 * `syncgate-ctl --add`; or this sidecar serves a destination (the switch:
 * no mirror gates or reports any more). False for an unknown mirror. For
 * /readyz. Loop thread.
 */
bool mirror_gate_mirror_idle(struct mirror_gate *g, const char *mirror);

/**
 * Every known (mirror, topic) as a JSON document (malloc'd, caller frees):
 * {"mirrors":[{"name":..,"offsets":..,"progress":..,"topics":[{"topic":..,
 * "destination_topic":..,"desired":"SYNC","effective":"ASYNC","released":false,
 * "lag":..,"partitions":[{"partition":0,"progress":..,"source_hw":..,"lag":..,
 * "isr":..,"min_isr":..,"failing_reason":..,"held":..}]}]}]}.
 * `mirror`/`topic` filter by exact name when not NULL. NULL on ENOMEM. Loop thread.
 */
char *mirror_gate_describe_json(struct mirror_gate *g, const char *mirror, const char *topic);

/**
 * Destination topic of `source_topic` for mirror pattern `pattern`
 * (config `mirrors[].topic_name`): every "{topic}" is replaced by the source
 * topic name, all other text is literal ("{topic}" → identity,
 * "primary.{topic}" → MirrorMaker 2's DefaultReplicationPolicy naming).
 * malloc'd; NULL on ENOMEM. Any thread.
 */
char *mirror_destination_topic(const char *pattern, const char *source_topic);

/* ------------------------------------------------------------------------ */
/* Lifecycle and the state log (KIP "Registering Sync Replica",              */
/* "Unregistering", "Source-Side Release", "Recovery", "ASYNC→SYNC           */
/* Promotion", "Command-Line Tool")                                         */
/* ------------------------------------------------------------------------ */

/**
 * True once the state log (conf state.topic on the source cluster) was read
 * up to the high watermark it had at boot, so this sidecar's mirror types
 * are the cluster's. Always true without workers (MIRROR_GATE_NO_WORKERS).
 * For /readyz. Loop thread.
 */
bool mirror_gate_state_ready(struct mirror_gate *g);

/**
 * Whether syncgate's own source clients (source.properties) had an
 * authentication or TLS failure in the last `within_ms`; if so its
 * librdkafka reason (never a secret) goes to `why`. For /readyz. Any thread.
 */
bool mirror_source_auth_failure(char *why, size_t n, int64_t within_ms);

/** True while this sidecar holds the state partition in the decider group
 * and so writes promotions (REGISTER) and timeout demotions. Loop thread. */
bool mirror_gate_is_decider(struct mirror_gate *g);

/**
 * Answer of an admin call, on the loop thread, exactly once (never from
 * inside the call that started it; never after mirror_op_cancel()).
 * `status` is an HTTP status; `body` a JSON document, borrowed for the call:
 * 200 {"topics":[{"topic","result","message"}],"warning"?} with result
 * PROMOTED | PENDING_LAG | DEMOTED | RELEASED | FENCED | UNFENCED | UNCHANGED
 * | REJECTED, or
 * 4xx/5xx {"error": "..."}.
 */
typedef void (*mirror_op_cb)(void *arg, int status, const char *body);
struct mirror_op;

/**
 * --add/--alter: append ALTER{type} for (mirror, topic) to the state log and
 * answer once this sidecar has applied it (bounded, 10 s → 504). Before a
 * SYNC request, a compatibility probe of the destination runs on its own
 * thread: reachable but unable to serve the gate (topic missing, partition
 * count differs, mm2 offset-syncs topic missing) → 409 and nothing is
 * written; unreachable → proceeds with a "warning". SYNC answers PROMOTED
 * when effective SYNC follows within 5 s (lag was zero), else PENDING_LAG.
 * Errors: 404 unknown mirror, 400 bad topic, 503 state log not read yet.
 * Returns a handle for mirror_op_cancel(), NULL on ENOMEM. Loop thread.
 */
struct mirror_op *mirror_gate_alter(struct mirror_gate *g, const char *mirror, const char *topic,
				    enum mirror_type type, bool add, mirror_op_cb cb, void *arg);

/**
 * --release-sync: append RELEASE for every topic of `mirror` that is desired
 * or effective SYNC and whose name matches `topics_regex` (anchored POSIX
 * ERE; NULL: all). Destructive: their held acks complete at once under the
 * async predicate; sticky Released marker until a recovery promotion.
 * Answers like mirror_gate_alter(); 400 on a bad regex; 409 when a selected
 * topic is fenced for a failover (fenced and released means its failover
 * verified zero RPO: only mirror_gate_release_verified releases it). Loop
 * thread.
 */
struct mirror_op *mirror_gate_release(struct mirror_gate *g, const char *mirror, const char *topics_regex,
				      mirror_op_cb cb, void *arg);

/** mirror_gate_release() for `failover`'s step 5, once it verified zero RPO: fenced topics too. */
struct mirror_op *mirror_gate_release_verified(struct mirror_gate *g, const char *mirror, const char *topics_regex,
					       mirror_op_cb cb, void *arg);

/**
 * Failover fence (syncgate-ctl failover / unfence): append FENCE (fence
 * true) for every topic of `mirror` that is desired or effective SYNC and
 * matches `topics_regex` (anchored POSIX ERE; NULL: all), or UNFENCE (fence
 * false) for every fenced one that matches. Once applied, every sidecar
 * refuses Produce to a fenced topic (mirror_gate_fenced_by), its held acks
 * fail rather than complete if the mirror stops gating, and it is never
 * promoted. Answers like mirror_gate_release() with results FENCED /
 * UNFENCED / UNCHANGED. Loop thread.
 */
struct mirror_op *mirror_gate_fence(struct mirror_gate *g, const char *mirror, const char *topics_regex,
				    bool fence, mirror_op_cb cb, void *arg);

/**
 * Queue one state-log record value (JSON, see lifecycle.h) as if the state
 * log had delivered it at log offset `offset` (-1: no offset, never skipped
 * as delivered again): tests replay logs through the same bridge and the
 * same apply path. Copies; applied when the loop next runs. `json` NULL
 * injects "state log caught up" instead. Any thread.
 */
int mirror_gate_inject_record(struct mirror_gate *g, const char *json, int64_t offset);

/** Forget an admin call (its HTTP connection closed): no callback. Loop thread. */
void mirror_op_cancel(struct mirror_op *op);

/* ------------------------------------------------------------------------ */
/* Failover and verification — mirror/failover.c                  */
/* ------------------------------------------------------------------------ */

/** A figure for a destination-only verify: partition `partition` of source
 * topic `topic` was confirmed (and so possibly acknowledged) up to `offset`
 * (first offset after the last confirmed record). */
struct mirror_confirmed {
	const char *topic;
	int32_t partition;
	int64_t offset;
};

/** What syncgate-ctl failover / verify asks. Strings are copied. */
struct mirror_failover_req {
	const char *mirror;
	const char *topics_regex;   /* anchored POSIX ERE; NULL: every SYNC topic of the mirror */
	bool failover;              /* fence, drain, verify, move offsets, release; false: verify only */
	bool dry_run;               /* failover: drain and verify without the fence; offsets and release listed */
	bool destination_only;      /* verify without the source: destination HW vs confirmed offsets */
	int timeout_ms;             /* drain (failover) / catch-up (verify) bound; <= 0: default */
	const struct mirror_confirmed *confirmed; /* destination-only: figures from metrics of other sidecars */
	size_t nconfirmed;
};

struct mirror_failover;

/**
 * Run a failover or a verification of `req->mirror` (see docs/operating.md
 * "Failover"). The comparison and the consumer-offset moves run on a job
 * thread with its own clients to the source and the destination; the fence
 * (mirror_gate_fence) and the release (mirror_gate_release) are state-log
 * records as their own calls. Answers once, like mirror_op_cb: 200 with
 * {"mirror","offsets","mode","verified","verdict","fenced","released",
 * "drained","unreachable"?,"partitions":[…],"groups":[…],"steps":[…]}, or
 * 4xx/5xx {"error"}. A failover that does not verify keeps the fence and
 * releases nothing. Returns NULL on ENOMEM. Loop thread.
 */
struct mirror_failover *mirror_gate_failover(struct mirror_gate *g, const struct mirror_failover_req *req,
					     mirror_op_cb cb, void *arg);

/** Forget a failover/verify call (its HTTP connection closed): no callback;
 * its job finishes alone. Loop thread. */
void mirror_failover_cancel(struct mirror_failover *f);

/**
 * The source broker recreated `topic` (a sidecar saw a new TopicId for its
 * name): every mirror forgets the partitions' progress and views (the
 * destination may hold the old topic's records at the same offsets) and
 * re-confirms them with a source read after the destination's, so the
 * clamp and the gate fail closed until then. Loop thread.
 */
void mirror_gate_topic_recreated(struct mirror_gate *g, const char *topic);

/* ------------------------------------------------------------------------ */
/* The switch (docs/switchover.md) — mirror/switch.c                        */
/* ------------------------------------------------------------------------ */

struct mirror_switch;

/**
 * syncgate-ctl switch: after a verified failover of `mirror`, append one
 * SWITCH record (mirror-level, topic "*") to the state log; every sidecar
 * that applies it serves the mirror's destination cluster from then on
 * (mirror_gate_on_switch), and a restarted one replays it. Refused (409)
 * unless every topic the state knows for the mirror is fenced and released
 * — the failover's verify said zero RPO for it, and its fence keeps the
 * source from taking anything new — and this sidecar has `switch.base_port`.
 * `dry_run`: the plan only, nothing written, answered 200 with
 * "would_switch" (and "refused": why not). Answers once, like mirror_op_cb:
 * 200 {"mirror","serving","destination_bootstrap","node_listeners","clients",
 * "dry_run","topics":[{"topic","result","message"}]} (result SWITCHED or
 * REFUSED per topic, or one "*" UNCHANGED when already serving it), 404
 * unknown mirror, 409 refused, 503
 * state log not read, 504 not read back within 10 s. Returns a handle for
 * mirror_switch_cancel(), NULL on ENOMEM. Loop thread.
 */
struct mirror_switch *mirror_gate_switch(struct mirror_gate *g, const char *mirror, bool dry_run,
					 mirror_op_cb cb, void *arg);

/** Forget a switch call (its HTTP connection closed): no callback. Loop thread. */
void mirror_switch_cancel(struct mirror_switch *s);

/**
 * One switched producer's destination id, as a sidecar claims it in the
 * state log (docs/switchover.md "Producer state"): the client (its
 * ClientId-and-host hash, proxy_pidmap_client) and its source-issued
 * producer id and epoch, mapped to the producer id and epoch the
 * destination issued to the claiming sidecar.
 */
struct mirror_producer_claim {
	uint64_t client;
	int64_t producer_id;
	int16_t epoch;
	int64_t dest_producer_id;
	int16_t dest_epoch;
};

/**
 * Append a PRODUCER_ID record of `mirror` (mirror-level, topic "*") with
 * `pc` to the state log. Every sidecar applies the records of a key in log
 * order, and the first claim of a (client, producer id, epoch) is the one
 * every sidecar uses (mirror_gate_on_producer_claim), so a client whose
 * retries move between sidecars keeps one destination id. 0 appended
 * (applied when read back), -1 when there is no state log or it cannot be
 * appended (the caller uses its own id). Loop thread.
 */
int mirror_gate_claim_producer(struct mirror_gate *g, const char *mirror, const struct mirror_producer_claim *pc);

/**
 * Register the data path's hook: `fn(arg, mirror, pc)` runs on the loop
 * thread for every PRODUCER_ID record of a configured mirror applied (also
 * while the log is read at boot, so a restarted sidecar learns every claim).
 * NULL: none.
 */
void mirror_gate_on_producer_claim(struct mirror_gate *g,
				   void (*fn)(void *arg, const char *mirror, const struct mirror_producer_claim *pc),
				   void *arg);

/**
 * Register the data path's hook: `fn(arg, cm)` runs on the loop thread when
 * a SWITCH record of mirror `cm` is applied (once per process; also while
 * the state log is read at boot, before anything is served). NULL: none.
 */
void mirror_gate_on_switch(struct mirror_gate *g, void (*fn)(void *arg, const struct conf_mirror *cm),
			   void *arg);

/** The name of the mirror whose destination this sidecar serves; NULL while
 * it serves the source. Loop thread. */
const char *mirror_gate_serving(const struct mirror_gate *g);

/* ------------------------------------------------------------------------ */
/* Mirrored high watermark (KIP "High Watermark Advancement",     */
/* unified sourceHW; invariant 1b, docs/architecture.md) — mirror/mirrored_hw.c      */
/* ------------------------------------------------------------------------ */

/**
 * The mirrored high watermark of (source topic, partition): the minimum
 * progress (first offset not yet durable on the destination: `preserved`
 * destination HW, `mm2` offset-syncs progress) over the mirrors that gate
 * the topic now — effective SYNC and not released, or every mirror while
 * the state log is not read yet (fail closed, as the gate) — and whose
 * `mirrors[].consumers` is `clamp`. Returns 0 when no such mirror gates the
 * topic (consumers are not clamped; *out = -1), 1 when gated: *out is the
 * mirrored HW, or -1 when a gating mirror's progress is unknown (clamp
 * everything). Not capped by the broker's HW: the caller takes the min.
 * Loop thread.
 */
int mirror_gate_mirrored_hw(struct mirror_gate *g, const char *topic, int32_t partition,
			    int64_t *out);

/**
 * Whether every topic whose consumers are clamped now (what
 * mirror_gate_mirrored_hw() answers 1 for) satisfies `known(arg, topic)`.
 * False while the state log is being read (every topic, named or not, is
 * clamped then); true when no mirror clamps consumers. A topic never looked
 * at is effectively ASYNC, so not clamped. O(topics); loop thread.
 */
bool mirror_gate_clamped_topics_all(struct mirror_gate *g, bool (*known)(void *arg, const char *topic),
				    void *arg);

/** Called once, on the loop thread, when a watch fires. */
typedef void (*mirror_hw_cb)(void *arg);
struct mirror_hw_watch;

/**
 * Call `cb(arg)` once, later on the loop thread (never from inside this
 * call), when the mirrored HW of (topic, partition) passes `above` or the
 * topic stops being gated. Asks the gating mirrors for prompt progress until
 * `until_ms` (mirror_now_ms() time base), as a held Produce does. `topic` is
 * copied. Returns NULL on ENOMEM. Cancel with mirror_hw_watch_cancel()
 * unless it fired. Loop thread.
 */
struct mirror_hw_watch *mirror_gate_hw_watch(struct mirror_gate *g, const char *topic,
					     int32_t partition, int64_t above, int64_t until_ms,
					     mirror_hw_cb cb, void *arg);
/** Forget a watch that has not fired yet (NULL is fine); `cb` is not called. Loop thread. */
void mirror_hw_watch_cancel(struct mirror_hw_watch *w);

#include "mirror/group_commits.h" /* synchronous consumer-group commits */

#endif
