/*
 * mirror/internal.h — shared between the files of mirror/ only.
 *
 * Ownership map (loop thread unless said otherwise):
 *   struct mirror_gate
 *     ├─ links[]: struct mirror_link        one per configured mirror
 *     │    ├─ topic hash: struct mirror_tstate   per (mirror, source topic)
 *     │    │    └─ parts[]: struct mirror_pstate per (mirror, topic, partition)
 *     │    │         └─ heap of struct mirror_ref (waiters, min offset first)
 *     │    └─ worker: struct mirror_worker  (its own thread; see worker.c)
 *     ├─ bridge: struct mirror_bridge       worker/state log → loop queue (pipe)
 *     ├─ log: struct mirror_statelog        state log thread (NULL: local, tests)
 *     ├─ ops: struct mirror_op              admin calls waiting for their records
 *     └─ waits: struct mirror_wait          held responses; refs point into ps heaps
 *
 * Layers (each file calls only files below it; tests/mirror/layers.py checks
 * it, docs/architecture.md draws it):
 *   gate.c → link.c, ops.c, report.c → transitions.c → wait.c → store.c
 *   describe.c → store.c → lifecycle.c, topics.c, metrics.c; wait.c → waiters.c
 *   statelog.c, worker.c → progress.c, tail.c, mm2.c → wtopic.c → bridge.c
 *   worker.c, progress.c → lane.c → wtopic.c
 * Calls upwards go through callbacks the owner registers: the bridge's
 * deliver/drained (gate.c), and the gate's on_record_applied /
 * on_state_changed (ops.c's, set by gate.c).
 */
#ifndef SYNCGATE_MIRROR_INTERNAL_H
#define SYNCGATE_MIRROR_INTERNAL_H

#include <regex.h>
#include <stdbool.h>
#include <stdint.h>
#include <event2/event.h>
#include <event2/event_struct.h>

#include "conf/conf.h"
#include "mirror/lifecycle.h"
#include "mirror/mirror.h"

#define MIRROR_NO_HEAP UINT32_MAX
#define MIRROR_MAX_PARTITIONS 100000 /* reports above are dropped */
#define MIRROR_MAX_UNAPPLIED 100000  /* kept state-log records of unconfigured mirrors */

struct mirror_worker;
struct mirror_bridge;
struct metric;

/* One edge "part `part` of wait `w` waits for mirror `ps`'s progress".
 * 32 bytes: one per held partition and gating mirror. */
struct mirror_ref {
	struct mirror_wait *w;
	struct mirror_pstate *ps;   /* whose heap holds it (while heap_idx != NO_HEAP);
				     * ps->t is the (mirror, topic) it waits on */
	int64_t offset;             /* the part's last_offset */
	uint32_t part;              /* index into w->parts */
	uint32_t heap_idx;          /* position in ps->heap, MIRROR_NO_HEAP when out */
};

/* A ref added after its wait began (a mirror began gating the part's topic
 * while it was held: mirror_tstate_settle), one allocation each. */
struct mirror_jref {
	struct mirror_ref r;        /* first: a joined ref's address is its jref's */
	struct mirror_jref *next;   /* w->joined list */
};

/* Per (mirror, topic, partition). */
struct mirror_pstate {
	struct mirror_tstate *t;    /* owner */
	int64_t progress;           /* first offset not durable on the destination, -1 unknown */
	int64_t sampled_hw;         /* source HW sampled before a progress value, -1 unknown */
	int64_t sampled_ms;         /* mirror_now_ms() when sampled_hw was applied (read before it) */
	int64_t appended_max;       /* highest last offset of a held record (-1 none) and the */
	int64_t appended_ms;        /* mirror_now_ms() it registered: appended before then */
	int64_t suspect_us;         /* CLOCK_MONOTONIC µs the source was seen gone back (wait.c), 0
				     * none: progress read before it is ignored (report.c) */
	int32_t isr, min_isr;       /* destination, -1 unknown */
	int64_t failing_since_ms;   /* -1 when healthy (lifecycle: all-partitions-failing demote) */
	char reason[64];            /* last failure reason */
	char stall[64];             /* why progress stalls although the destination moves, "" */
	struct mirror_ref **heap;   /* waiters, min-heap on offset */
	uint32_t nheap, capheap;
	int64_t demanded;           /* highest offset already asked of the worker */
	int64_t demand_until_ms;    /* and until when */
	int64_t confirmed;          /* first offset after the last held record this mirror confirmed
				     * (progress passed it while it gated), -1 none: what a
				     * destination-only verify checks after a disaster */
	struct metric *m_isr, *m_min_isr; /* created on first ISR report */
	struct metric *m_confirmed; /* created on first confirmation */
};

/* Per (mirror, source topic): KIP MirrorPartitionStateValue + TopicImage bits. */
struct mirror_tstate {
	char *topic;
	struct mirror_link *link;
	struct mirror_lstate ls;    /* desired/effective/released/recovery/RetryAttempt:
				     * changed only by state-log records (lifecycle.c),
				     * effective only through tstate_set_effective() */
	int64_t inflight_until_ms;  /* decider: a REGISTER/DEMOTE of ours is in the log until then */
	int64_t next_attempt_ms;    /* decider: RetryAttempt backoff, no REGISTER before */
	bool pending_logged;        /* "promotion pending lag drain" logged once */
	bool gating_joined;         /* gated at the last settle: held waits were joined */
	bool fence_seen;            /* a FENCE was folded since start: while history is folded
				     * (tstate_gating's condition) the topic counts as fenced */
	int32_t npart;              /* source partition count, -1 unknown */
	struct mirror_pstate **parts; /* by partition; individually allocated (refs point at them) */
	int32_t nparts_alloc;
	int32_t nfailing;
	int32_t nstalled;           /* partitions with a stall reason */
	size_t held;
	struct metric *m_desired, *m_effective, *m_lag, *m_failing, *m_stalled;
	struct mirror_tstate *next; /* hash chain */
	bool reported;              /* in g->reported: lag gauge and promotion to check */
	struct mirror_tstate *reported_next;
};

/* One configured mirror, loop-thread side. */
struct mirror_link {
	struct mirror_gate *gate;   /* owner */
	char *name;
	uint64_t id;                /* unique per worker instance: stale reports are dropped */
	const struct conf_mirror *cm; /* borrowed from g->conf */
	regex_t *re;                /* sync_topics compiled (conf_mirror_sync_topics_compile) */
	size_t nre;
	struct mirror_tstate **buckets;
	size_t nbuckets, ntopics;
	struct mirror_worker *worker; /* NULL with MIRROR_GATE_NO_WORKERS */
	struct mirror_commits *commits; /* destination admin client for group commits (commits.c), NULL
				     * until the first */
	int64_t listed;             /* topics its worker tracked at its last source listing,
				     * -1 before the first (mirror_gate_mirror_idle) */
	struct metric *m_latency;
	struct metric *m_release;   /* progress read by the worker -> a held part released by it */
	struct metric *m_lag_total;
};

/*
 * True when `l` is a MirrorMaker 2 mirror configured as reading the source
 * read_committed (mirrors[].mm2_isolation_level): a SYNC topic of it can never
 * see a transactional producer's commit (the data acks wait for MM2, MM2 waits
 * for the COMMIT). Loop thread.
 */
static inline bool mirror_link_txn_hazard(const struct mirror_link *l)
{
	return l->cm && l->cm->offsets == CONF_OFFSETS_MM2 &&
	       l->cm->mm2_isolation_level == CONF_ISOLATION_READ_COMMITTED;
}

/* The hazard in words, for logs and admin answers. */
#define MIRROR_TXN_HAZARD_TEXT                                                                   \
	"MirrorMaker 2 reads read_committed (mm2_isolation_level): transactional producers' "   \
	"commits on this SYNC topic can time out (their data acks wait for MM2, MM2 waits for " \
	"the COMMIT); run MM2 read_uncommitted or keep transactional topics ASYNC"

/* A held response's wait: 88 bytes, then (one allocation) remaining[nparts]
 * and ref_start[nparts + 1] (uint32_t), then the refs of its registration
 * (8-aligned; wait_refs() in wait.c). Kept small: one per held response. */
struct mirror_wait {
	struct mirror_gate *g;
	struct mirror_wait_part *parts; /* the caller's; not touched once cancelled */
	mirror_wait_cb cb;              /* NULL: cancelled while in g->done */
	void *arg;
	int64_t deadline_ms;
	struct mirror_jref *joined; /* refs of mirrors that began gating a part's topic while
				     * it was held (mirror_tstate_settle), malloc'd each */
	struct mirror_wait *next, **pprev; /* g->waits (pending) or g->done (resolved) */
	uint32_t hold_ms;           /* deadline_ms − start (registration time) */
	uint32_t nparts;
	uint32_t npending;          /* parts not resolved */
	uint32_t nrefs;             /* refs of the registration */
	uint32_t dl_idx;            /* position in g->dl (deadline heap), MIRROR_NO_HEAP when out */
	bool done;                  /* resolved: in g's done list awaiting its callback */
};

struct mirror_gate {
	char unexempt_reader[128];  /* last mirror-tool-looking client id fetching unexempt ("" none) */
	struct event_base *base;
	const struct conf *conf;
	unsigned flags;
	struct mirror_link **links;
	size_t nlinks;
	uint64_t next_id;
	struct mirror_bridge *bridge;
	struct event *done_ev;      /* runs callbacks of waits resolved outside a gate event */
	struct mirror_wait *waits;  /* pending waits */
	struct mirror_wait **dl;    /* pending waits, min-heap on deadline_ms (waiters.c): one
				     * timer for all of them instead of an event per wait */
	uint32_t ndl, capdl;
	struct event *dl_ev;        /* fires at the earliest deadline (armed for dl_armed_ms) */
	int64_t dl_armed_ms;        /* INT64_MAX: not armed */
	struct mirror_wait *done, **done_tail; /* resolved, callbacks not yet run (FIFO) */
	bool in_wait;               /* inside mirror_gate_wait: never call back */
	size_t held;
	struct metric *m_outcome[MIRROR_OUTCOME_COUNT];
	/* lifecycle: the state log and the decider */
	struct mirror_statelog *log; /* NULL: records apply locally at once (no workers) */
	bool state_ready;           /* the state log was read up to its boot HW */
	bool replaying;             /* folding kept records of a mirror a reload added */
	size_t nfenced;             /* topics with ls.fenced (mirror_tstate_count_fence) */
	size_t nfence_seen;         /* topics with ls.fenced or fence_seen: fenced while history is folded */
	int64_t log_next;           /* state log offset after the last record applied */
	bool decider;               /* this sidecar takes automatic decisions */
	uint64_t origin;            /* this instance, in the records it writes */
	uint64_t seq;               /* last record sequence number used */
	struct event *tick_ev;      /* periodic: promotions after backoff, demote timeouts */
	struct mirror_op *ops;      /* admin calls not answered yet */
	struct mirror_probe *probes; /* compat probes running (threads joined at free) */
	struct mirror_source_hw *source_hw; /* source_hw.c: its thread and client, NULL until asked */
	struct metric *m_decider, *m_state_ready;
	char **unapplied;           /* records of mirrors not configured (yet): replayed, in
				     * log order, when a reload adds the mirror */
	size_t nunapplied;
	struct mirror_hw *hw;       /* mirrored HW watches (mirrored_hw.c); NULL until used */
	struct mirror_failover *failovers; /* failover/verify calls running (failover.c) */
	struct mirror_commit *commits; /* synchronous group commits held (commits.c) */
	struct mirror_tstate *reported; /* topics with reports since the bridge last drained
				     * (report.c: their O(partitions) lag is summed once per
				     * drain, not once per report) */
	/* hooks from the apply path to the admin calls above it (ops.c; NULL: none) */
	void (*on_record_applied)(struct mirror_gate *g, struct mirror_tstate *t, const struct mirror_record *r,
				  const struct mirror_lstate *before, const struct mirror_apply_out *out);
	void (*on_state_changed)(struct mirror_gate *g);
	/* the switch (switch.c): the mirror whose destination this sidecar serves
	 * (NULL: the source), the calls waiting for their record, and the data
	 * path's hook (mirror_gate_on_switch) */
	char *switched;             /* malloc'd mirror name (links may be re-created by a reload) */
	struct mirror_switch *switches;
	void (*on_switch)(void *arg, const struct conf_mirror *cm);
	void *on_switch_arg;
	/* PRODUCER_ID records (producer_claims.c): the data path's hook */
	void (*on_claim)(void *arg, const char *mirror, const struct mirror_producer_claim *pc);
	void *on_claim_arg;
};

/* switch.c: apply a SWITCH record of `l` read from the state log (or
 * appended without one). Loop thread. */
void mirror_switch_apply(struct mirror_gate *g, struct mirror_link *l, const struct mirror_record *r);
/* producer_claims.c: a PRODUCER_ID record of `l` read from the log goes to the data path's hook. */
void mirror_producer_claim_apply(struct mirror_gate *g, struct mirror_link *l, const struct mirror_record *r);
/* commits.c: synchronous consumer-group commits. Loop thread. */
/* A mirror's commit client has results queued (MIRROR_MSG_COMMIT_RESULT `id`). */
void mirror_commits_results(struct mirror_gate *g, uint64_t id);
/* (mirror, topic) t may have stopped gating: its held commits no longer wait for it. */
void mirror_commits_topic_settled(struct mirror_tstate *t);
/* Mirror l goes away: its jobs end (no longer held for it), its client is destroyed off the loop. */
void mirror_commits_link_free(struct mirror_link *l);
/* Gate free: every held commit forgotten without callback. */
void mirror_commits_free_all(struct mirror_gate *g);
/* source_hw.c: deliver an answered request (MIRROR_MSG_SOURCE_HW); stop its thread (gate free:
 * before the bridge, which its thread posts to). */
void mirror_source_hw_done(struct mirror_gate *g, void *ptr);
void mirror_source_hw_free(struct mirror_gate *g);
/* switch.c: forget every switch call (gate free). */
void mirror_switch_free_all(struct mirror_gate *g);

/* What a bridge message carries. */
enum mirror_msg_kind {
	MIRROR_MSG_REPORT,          /* r: a destination progress report */
	MIRROR_MSG_STATE_RECORD,    /* data/len: a state-log record value, offset */
	MIRROR_MSG_STATE_CAUGHT_UP, /* the state log was read up to its boot high watermark */
	MIRROR_MSG_DECIDER,         /* offset: 1 this sidecar decides now, 0 it no longer does */
	MIRROR_MSG_PROBE_DONE,      /* ptr: a struct mirror_probe finished (compat probe) */
	MIRROR_MSG_FAILOVER_DONE,   /* ptr: a struct mirror_failover's job thread finished */
	MIRROR_MSG_LISTED,          /* link_id's worker listed the source: offset = topics it tracks */
	MIRROR_MSG_COMMIT_RESULT,   /* offset: a mirror's commit client (commits.c) has results queued */
	MIRROR_MSG_SOURCE_HW,       /* ptr: a source high-watermark request answered (source_hw.c) */
};

/* Message from a worker (or inject) to the loop; strings follow the struct. */
struct mirror_msg {
	struct mirror_msg *next;
	enum mirror_msg_kind kind;
	uint64_t link_id;           /* 0: find the link by r.mirror */
	struct mirror_report r;     /* REPORT: strings point into this allocation */
	int64_t offset;             /* STATE_RECORD: log offset; DECIDER: 1/0 */
	void *ptr;                  /* PROBE_DONE */
	char *data;                 /* STATE_RECORD: value, NUL-terminated, in this allocation */
	size_t len;
};

struct mirror_statelog;
struct mirror_op;
struct mirror_probe;
struct mirror_failover;

/* store.c: (mirror, topic, partition) state; the bottom of the gate. */
struct mirror_link *mirror_link_find(struct mirror_gate *g, const char *name);
/* The (mirror, topic) entry, created (with metrics, desired type from
 * sync_topics) when `create`; NULL when absent or on ENOMEM. */
struct mirror_tstate *mirror_tstate_get(struct mirror_link *l, const char *topic, bool create);
/* Partition `partition` (0 ≤ p < MIRROR_MAX_PARTITIONS) of t; NULL otherwise. */
struct mirror_pstate *mirror_pstate_get(struct mirror_tstate *t, int32_t partition, bool create);
/* Free t and its partitions (their heaps must be empty). */
void mirror_tstate_free(struct mirror_tstate *t);
/* Add t's fence (ls.fenced; ls.fenced or fence_seen) to the gate's fenced
 * topic counts (sign 1), or take it out (sign -1): around every change of
 * either field and when t is freed. */
void mirror_tstate_count_fence(struct mirror_tstate *t, int sign);
/* A new destination view (worker restarted): progress, ISR, demand unknown. */
void mirror_pstate_forget_view(struct mirror_pstate *ps);
void mirror_tstate_metrics(struct mirror_tstate *t);
/* Call fn for every (mirror, topic) of link `only`, or of every link of g
 * when `only` is NULL. fn may free the topic it is given. */
void mirror_each_topic(struct mirror_gate *g, struct mirror_link *only,
		       void (*fn)(struct mirror_tstate *t, void *arg), void *arg);
/* Mirror t confirmed partition `partition` up to `after` (first offset not
 * confirmed) for a held record: ps->confirmed and its metric only grow. */
void mirror_pstate_confirm(struct mirror_tstate *t, struct mirror_pstate *ps, int32_t partition, int64_t after);
/* The one lag: source HW − destination progress, offsets, ≥ 0; -1 unknown. */
int64_t mirror_pstate_lag(const struct mirror_pstate *ps);
#define MIRROR_LAG_CURRENT 0x1u /* a failing partition counts as unknown */
/* Σ over partitions 0..npart-1 of mirror_pstate_lag(); -1 when the count
 * or any partition is unknown (never "lag zero" from missing figures).
 * `known_sum` (may be NULL) gets the sum over the partitions that are known. */
int64_t mirror_tstate_lag(const struct mirror_tstate *t, unsigned flags, int64_t *known_sum);

/* waiters.c: the per-partition min-heap of refs. */
int mirror_heap_push(struct mirror_pstate *ps, struct mirror_ref *r);
void mirror_heap_remove(struct mirror_pstate *ps, struct mirror_ref *r);
static inline struct mirror_ref *mirror_heap_top(const struct mirror_pstate *ps)
{
	return ps->nheap ? ps->heap[0] : NULL;
}
/* waiters.c: the gate's min-heap of pending waits on deadline_ms. */
int mirror_deadline_push(struct mirror_gate *g, struct mirror_wait *w);
void mirror_deadline_remove(struct mirror_gate *g, struct mirror_wait *w);

/* wait.c: held waits and the only release by mirror type. */
int mirror_waits_init(struct mirror_gate *g);
/* Gate free: the resolved waits (without callback), the timers, the heap.
 * Pending waits must have been cancelled. */
void mirror_waits_free(struct mirror_gate *g);
/* Run the callbacks of resolved waits (from a gate libevent callback). */
void mirror_gate_flush_done(struct mirror_gate *g);
/* Resolved waits exist: run their callbacks from the loop soon. */
void mirror_gate_schedule_done(struct mirror_gate *g);
/* Mirror r->t no longer holds r's part back (observe: count the latency). */
void mirror_ref_done(struct mirror_ref *r, bool observe, int64_t now);
/* Fail part i of w with outcome o (its message set by the caller). */
void mirror_part_fail(struct mirror_wait *w, uint32_t i, enum mirror_outcome o);
bool mirror_isr_short(const struct mirror_pstate *ps);
/* Set p's message to "mirror L: ISR i < min.insync.replicas m". */
void mirror_part_isr_message(struct mirror_wait_part *p, const struct mirror_link *l,
			     const struct mirror_pstate *ps);
/* Release every waiter of t under the async predicate (mirror removed). */
void mirror_tstate_release_waiters(struct mirror_tstate *t);
/* Release t's waiters if t does not gate as of the current state (fail
 * them instead when t is fenced: a fence never causes an ack). */
void mirror_tstate_settle(struct mirror_tstate *t);
/* Whether t refuses Produce now: fenced as of the current state, or a FENCE
 * was folded while history is still being folded (fail closed). */
bool mirror_tstate_fenced(const struct mirror_tstate *t);
/* mirror_tstate_settle() for every topic of `l` (NULL: of every link). */
void mirror_settle_all(struct mirror_gate *g, struct mirror_link *l);

/* transitions.c: type transitions, the state-log apply path, the decider. */
void mirror_gate_apply_record(struct mirror_gate *g, const char *data, size_t len, int64_t offset);
/* A reload added mirror `name`: fold its kept records (history), then settle. */
void mirror_gate_replay_unapplied(struct mirror_gate *g, const char *name);
/* Config reload: sync_topics set the desired type (no ALTER in the log). */
void mirror_tstate_set_desired(struct mirror_tstate *t, enum mirror_type to);
/* Decider: write REGISTER when (mirror, topic) is desired SYNC at lag zero. */
void mirror_tstate_check_promotion(struct mirror_tstate *t);
/* Periodic: promotions after backoff, demote timeouts. */
void mirror_gate_tick(struct mirror_gate *g);
/* Write (or, without a state log, apply at once) one record; returns its seq. */
uint64_t mirror_gate_append(struct mirror_gate *g, struct mirror_tstate *t, struct mirror_record *r);

/* report.c: one destination progress report (MIRROR_MSG_REPORT). */
void mirror_gate_apply_report(struct mirror_gate *g, const struct mirror_msg *m);
/* After a batch of reports: the lag gauge and promotion check of each topic
 * reported on, once per topic (a background round reports every partition). */
void mirror_gate_reports_drained(struct mirror_gate *g);

/* link.c: one configured mirror (NULL on ENOMEM or invalid sync_topics). */
struct mirror_link *mirror_link_new(struct mirror_gate *g, const struct conf_mirror *cm);
/* Start its worker (not with MIRROR_GATE_NO_WORKERS). */
void mirror_link_start(struct mirror_gate *g, struct mirror_link *l);
/* Stop gating with l (async predicate), stop its worker, free it. */
void mirror_link_free(struct mirror_link *l);

/* bridge.c: worker/state-log/probe threads → loop. */
/* Loop thread: one message, borrowed for the call. */
typedef void (*mirror_bridge_deliver_cb)(void *arg, const struct mirror_msg *m);
/* Loop thread: after the messages of one wake-up were delivered. */
typedef void (*mirror_bridge_drained_cb)(void *arg);
struct mirror_bridge *mirror_bridge_new(struct event_base *base, mirror_bridge_deliver_cb deliver,
				       mirror_bridge_drained_cb drained, void *arg);
void mirror_bridge_free(struct mirror_bridge *b);
/* Any thread. Copies; returns -1 on ENOMEM. */
int mirror_bridge_post(struct mirror_bridge *b, uint64_t link_id, const struct mirror_report *r);
/* Any thread. A non-report message; copies `data` (len bytes). -1 on ENOMEM. */
/* Any thread: worker `link_id` listed the source and tracks `ntopics` topics
 * (MIRROR_MSG_LISTED). -1 on ENOMEM. */
int mirror_bridge_post_listed(struct mirror_bridge *b, uint64_t link_id, int64_t ntopics);
int mirror_bridge_post_msg(struct mirror_bridge *b, enum mirror_msg_kind kind, int64_t offset, void *ptr,
			   const void *data, size_t len);

/* statelog.c: the state log on the source cluster (see statelog.c). */
struct mirror_statelog *mirror_statelog_start(const struct conf *conf, struct mirror_bridge *b);
/* Stop the thread (leaves the decider group), destroy the clients. Loop thread. */
void mirror_statelog_stop(struct mirror_statelog *s);
/* Append one record (key "mirror/topic"); non-blocking. Loop thread. 0 or -1. */
int mirror_statelog_append(struct mirror_statelog *s, const char *key, const char *value);

/* ops.c: admin calls waiting for their records; compat probes */
void mirror_ops_record_applied(struct mirror_gate *g, struct mirror_tstate *t, const struct mirror_record *r,
			       const struct mirror_lstate *before, const struct mirror_apply_out *out);
void mirror_ops_state_changed(struct mirror_gate *g);
void mirror_ops_probe_done(struct mirror_gate *g, struct mirror_probe *p);
void mirror_ops_free_all(struct mirror_gate *g);
struct rd_kafka_s;
/* Partition count of `topic` through `rk` (blocking metadata call, ≤ 4 s):
 * >= 0, -1 missing (err says why), -2 unreachable. Any thread. */
int32_t mirror_rk_partitions(struct rd_kafka_s *rk, const char *topic, char *err, size_t errcap);
/* Whether a librdkafka error means "cluster unreachable". Any thread. */
bool mirror_rk_unreachable(int e);

/* store.c: FNV-1a of a NUL-terminated string (the topic hash tables). Pure. */
uint64_t mirror_hash_str(const char *s);

/* failover.c: failover/verify calls and their job threads */
void mirror_failover_job_done(struct mirror_gate *g, struct mirror_failover *f);
void mirror_failover_free_all(struct mirror_gate *g);


/* worker.c */
struct mirror_worker *mirror_worker_start(const struct conf *conf, const struct conf_mirror *cm,
					  uint64_t link_id, struct mirror_bridge *b);
/* route.c: how syncgate's own source clients reach a broker (scenario S16) */
struct rd_kafka_conf_s;
struct rd_kafka_metadata;
/** Install the connect/resolve callbacks on a source client config. */
void mirror_route_install(struct rd_kafka_conf_s *c);
/** The conf (borrowed for the process life) routes follow. Any thread. */
void mirror_route_set_conf(const struct conf *conf);
/** Learn advertised "host:port" → node id from source Metadata. Any thread. */
void mirror_route_learn(const struct rd_kafka_metadata *md);

/* librdkafka configs for the source (upstream.broker, upstream.tls) and a
 * mirror's destination; `producer` leaves consumer-only properties out. */
struct rd_kafka_conf_s *mirror_source_conf(const struct conf *conf, const char *who, const char *role,
					   bool producer);
struct rd_kafka_conf_s *mirror_dest_conf(const struct conf_mirror *cm);
/* The `mm2` record match's destination consumer: mirror_dest_conf, read_committed, prefetch ≤ 8 MiB. */
struct rd_kafka_conf_s *mirror_match_dest_conf(const struct conf_mirror *cm);
/* A destination config for admin calls only (no consumer properties of ours;
 * client.id syncgate-<mirror>-<role>). NULL on an invalid property (logged). */
struct rd_kafka_conf_s *mirror_dest_admin_conf(const struct conf_mirror *cm, const char *role);
/* Run fn(arg) on a detached thread counted with the stopping workers, so
 * mirror_workers_wait_stopped() waits for it too (librdkafka's destroy
 * blocks: never on the loop). Inline when no thread can start. Any thread. */
void mirror_reap_detached(void (*fn)(void *arg), void *arg);
/* mm2: the destination offset of committed source offset `offset` of
 * (topic, partition), translated through the offset-syncs this worker read
 * (mm2.c: mirror_mm2_translate), -1 when no sync at or below it is kept.
 * Loop thread; takes the worker's table mutex briefly. */
int64_t mirror_worker_mm2_translate(struct mirror_worker *w, const char *topic, int32_t partition,
				    int64_t offset);
/* srcauth.c: log and keep the source clients' authentication/TLS failures. Any thread. */
void mirror_source_errors_install(struct rd_kafka_conf_s *c);
/* Ask the worker to stop and return at once: a detached reaper thread joins
 * its threads (a blocking call in flight runs to its timeout, ≤ MIRROR_W_RPC_MS)
 * and destroys its clients and `w`. Reports it posts meanwhile carry its old
 * link id and are dropped by the loop. Loop thread. */
void mirror_worker_stop(struct mirror_worker *w);
/* Workers stopped whose threads have not ended yet (whole process). Any thread. */
int mirror_workers_stopping(void);
/* Block until every stopped worker has ended: before freeing what they post
 * to (the bridge). Loop thread, at gate free. */
void mirror_workers_wait_stopped(void);
/* The source partition may have gone back (mirror_gate_wait_since): report no
 * progress of it until a later source HW sample confirms it (progress.c).
 * Loop thread; takes the worker's table mutex briefly. */
void mirror_worker_suspect(struct mirror_worker *w, const char *topic, int32_t partition);
/* Ask for prompt progress of (topic, partition) until offset `need` is durable
 * or `until_ms` (monotonic ms) passes: in `poll` mode a known partition is
 * queued on its destination leader's lane at once (polled now, or right after
 * the request in flight). `source_hw`: a source HW the source's own answer
 * vouches for (the end of an acks=all Produce's records; -1 none) — the
 * partition's latest, replacing the one before (a recreated source starts
 * low again): a destination HW read at or below it needs no source read
 * after it (lane.c, diverged.c). Loop thread; takes the worker's table
 * mutex briefly. */
void mirror_worker_demand(struct mirror_worker *w, const char *topic, int32_t partition,
			  int64_t need, int64_t until_ms, int64_t source_hw);

/* mirrored_hw.c: a partition's progress (partition -1: the topic's type)
 * may have moved — fire the watches it satisfies (deferred). Free at gate free. */
struct mirror_hw;
void mirror_hw_progressed(struct mirror_gate *g, const char *topic, int32_t partition);
void mirror_hw_free(struct mirror_gate *g);

/* metrics.c */
void mirror_label_escape(char *dst, size_t cap, const char *src);
struct metric *mirror_metric_mt(enum metric_type type, const char *name, const char *help,
				const char *mirror, const char *topic);

#endif
