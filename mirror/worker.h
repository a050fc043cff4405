/*
 * mirror/worker.h — the per-mirror progress worker (mirror/ internal).
 *
 * Each mirror runs a few threads, so that no kind of request waits behind
 * another and one slow destination broker delays only its own partitions:
 *   main   (worker.c)   source topic listing, background lag rounds (source
 *                       HW, then destination progress through the lanes),
 *                       demands for topics not in the table yet;
 *   isr    (progress.c) destination ISR + leaders (Metadata) and
 *                       min.insync.replicas (DescribeConfigs, asynchronous);
 *   lanes  (lane.c)     one per destination leader: ListOffsets(END) of that
 *                       leader's demanded partitions, back to back while any
 *                       is pending and moving (paced while none moves), and
 *                       of the background round's, each followed by the
 *                       source's (diverged.c);
 *   tail   (tail.c / mm2.c) `tail`: the destination consumer; `mm2`: the
 *                       offset-syncs consumer — long polls, reported as
 *                       records arrive.
 * The table (topics, partitions, lanes) is shared under `tmu`, never held
 * across a blocking librdkafka call; the loop routes a demand straight to its
 * leader's lane under `tmu` (mirror_worker_demand). `mu` guards `stop` and
 * the queue of demands for topics the table does not know yet; the two are
 * never held together. Reports are posted under tmu so that they reach the
 * loop in the order their values were read.
 */
#ifndef SYNCGATE_MIRROR_WORKER_H
#define SYNCGATE_MIRROR_WORKER_H

#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <time.h>

#include "mirror/internal.h"

#define MIRROR_W_TOPICS_MS 5000   /* source topic listing */
#define MIRROR_W_ISR_MS 2000      /* destination ISR + min.insync.replicas */
#define MIRROR_W_CFG_WAIT_MS 500  /* DescribeConfigs answer awaited after the ISR Metadata (else next round) */
#define MIRROR_W_LAG_MS 1000      /* background source HW + progress of partitions with lag */
#define MIRROR_W_SWEEP_MS 2000    /* the background round reads the destination of every partition, lag
				   * zero included, this often: an idle destination partition written to
				   * by someone else is seen ahead of its source within ~2-3 s */
/* No release waits behind the main or isr thread's calls, and a lane's only
 * behind its own leader's: timeouts are as long as a large cluster on a busy
 * machine needs (10,000-partition Metadata or ListOffsets take seconds on a
 * saturated 2-core machine), bounded by how long a stopped worker's reaper
 * (and the gate's free, which waits for it) may wait for a call in flight. */
#define MIRROR_W_RPC_MS 5000      /* timeout of one blocking librdkafka call (Metadata, configs, source HW) */
#define MIRROR_W_LIST_MS 2000     /* ListOffsets(END) of one destination leader's partitions */
#define MIRROR_W_SLOW_RPC_MS 200  /* ListOffsets timeout of a lane whose leader just timed out (a moved
				   * leader's partitions go to their new lane within it) */
#define MIRROR_W_SLOW_MS 10000    /* how long a leader stays suspect after a timeout */
#define MIRROR_W_SYNCS_STALL_MS 3000 /* mm2: destination ahead of the offset-syncs this long → stalled */
#define MIRROR_W_BG_CHUNK 2000    /* background partitions per lane request (beside the demanded) */
#define MIRROR_DIVERGED_ERROR "DESTINATION_AHEAD_OF_SOURCE"
#define MIRROR_W_MAX_LANES 64     /* lanes per mirror; leaders beyond share lane 0 (unknown leader) */
/* `poll`: a lane asks back to back this long after a demanded partition's HW
 * moved or a new record was demanded; then, while nothing moves, it pauses
 * between requests (mirror_lane_pause_ms) */
#define MIRROR_W_POLL_BURST_MS CONF_POLL_BURST_MS

/* One MirrorMaker 2 offset-sync: source record `up` is destination record `down`. */
struct mirror_wsync {
	int64_t up, down;
};
#define MIRROR_W_MM2_SYNCS 24 /* kept per partition: translations reach ~2^23 offsets back */
#define MIRROR_W_MM2_RECENT 4096 /* proved pairs kept per matched partition (64 KiB) */

struct mirror_wdemand {
	char *topic;
	int32_t partition;
	int64_t need, until_ms, source_hw;
};

/* Per (topic, partition); under w->tmu. */
struct mirror_wpart {
	int64_t src_hw;      /* last source HW sample */
	int64_t progress;    /* last progress read */
	int32_t isr, min_isr;
	int64_t need, until_ms; /* demand: prompt progress while progress <= need */
	int64_t src_acked;   /* demand: a source HW the source's acks=all answer vouched for,
			      * the latest (mirror_worker_demand), -1 */
	int64_t mm2_up;      /* mm2: greatest upstream offset in offset-syncs, -1 */
	int64_t mm2_down;    /* mm2: its downstream offset, -1 */
	int64_t mm2_proved_up, mm2_proved_down; /* mm2: the newest pair the record match proved
				   * (mm2_match.c), -1; progress is the greater of the two up + 1 */
	struct mirror_wsync *mm2_syncs; /* mm2: offset-syncs kept for translating commits, oldest
				   * first, spaced wider with age (mirror_mm2_keep); malloc'd */
	uint32_t mm2_nsyncs;
	struct mirror_wsync *mm2_recent; /* mm2: the last MIRROR_W_MM2_RECENT pairs the record match
				   * proved, one per record, a ring (oldest at mm2_recent_at once
				   * full); exact translation of a commit among them; malloc'd */
	uint32_t mm2_nrecent, mm2_recent_at;
	int64_t syncs_behind_since_ms; /* mm2: destination ahead of the offset-syncs since, -1 */
	bool syncs_behind;   /* mm2: reported as stalled on offset-syncs */
	int64_t bg_hw;       /* background: source HW sampled before this partition was queued, -1 */
	int64_t tail_hw;     /* tail: last cached destination HW handed to the lane */
	int64_t tail_check;  /* tail: a destination HW read, waiting on its lane for the source
			      * sample that confirms it (diverged.c), -1 none */
	int32_t leader;      /* destination leader (Metadata), -1 unknown */
	bool failing;        /* last attempt reported an error */
	bool diverged;       /* the destination is ahead of the source (progress.c,
			      * check_diverged): progress is reported as a failure */
	int64_t seen_src_hw; /* the last source HW sampled (not reset by a failed sample) */
	int64_t seen_src_done_us; /* when that sample's request was answered */
	uint64_t confirm_from; /* the first read (w->read_seq) that may confirm (mirror_worker_suspect:
				* a read whose snapshot predates the suspicion may not); ≥ 1 */
	bool confirmed;      /* preserved offsets: a progress read before a later source HW
			      * sample was at most that sample; until then (a new worker or
			      * partition, a source partition gone) progress is not reported */
	bool queued;         /* in a lane's queue */
};

/* mm2: the greatest source offset known on the destination, by an offset-sync
 * or by the record match (mm2_match.c); -1. Progress is it + 1. */
static inline int64_t mirror_wpart_mm2_up(const struct mirror_wpart *wp)
{
	return wp->mm2_up > wp->mm2_proved_up ? wp->mm2_up : wp->mm2_proved_up;
}

/* Per source topic that the mirror desires SYNC (or that was demanded).
 * Entries are only appended (index and strings stable while the worker runs). */
struct mirror_wtopic {
	char *topic;         /* source name */
	char *dst;           /* destination name (topic_name pattern) */
	int32_t npart;       /* source partition count, -1 unknown */
	struct mirror_wpart *parts; /* npart_alloc entries */
	int32_t npart_alloc;
	int32_t min_isr;     /* destination min.insync.replicas, -1 unknown */
	rd_kafka_topic_t *dst_rkt; /* keeps the destination topic "locally known" for metadata */
	bool seen;           /* in the last source listing */
};

/* (topic index, partition) queued on a lane. */
struct mirror_wref {
	uint32_t topic;
	int32_t partition;
};

/* One destination leader's ListOffsets sender (lane.c); under w->tmu. */
struct mirror_lane {
	struct mirror_worker *w;
	int32_t leader;          /* destination broker id, -1: leader unknown */
	pthread_t th;
	pthread_cond_t cv;       /* work queued, or stop */
	struct mirror_wref *q;   /* partitions to ask next */
	size_t nq, capq;
	int64_t slow_until_ms;   /* timed out lately: short timeout until then */
	int64_t retry_ms;        /* after a failed request: not before */
	uint64_t requests;       /* sent (LOG_D on stop) */
	/* demand pacing: back to back for MIRROR_W_POLL_BURST_MS from the last
	 * HW move of a demanded partition or new demanded record (still_since_ms,
	 * -1: no demand answered since the lane was idle), then pauses doubling
	 * up to poll_interval_ms (pause_ms, 0: back to back) */
	int64_t still_since_ms;
	int64_t pause_ms;
	int64_t pace_us;         /* the next request not before (CLOCK_MONOTONIC µs), 0 none */
	struct metric *m_requests[2]; /* syncgate_mirror_progress_requests_total by kind: demand, background */
	struct metric *m_source;         /* syncgate_mirror_source_offsets_requests_total */
};
struct mirror_worker {
	pthread_t th;                    /* main */
	pthread_t isr_th, tail_th, match_th;
	bool isr_started, tail_started, match_started;
	pthread_mutex_t mu;
	pthread_cond_t cv;               /* main: a demand for an unknown topic, or stop */
	bool stop;                       /* under mu */
	struct mirror_wdemand *dq;       /* under mu: demands for topics not in the table */
	size_t ndq, capdq;

	pthread_mutex_t tmu;             /* the table below, lanes, `halt` */
	pthread_cond_t isr_cv;           /* isr thread: stop, or isr_now */
	bool halt;                       /* under tmu: threads other than main end */
	bool isr_now;                    /* under tmu: the topic set changed, refresh ISR now */
	struct mirror_lane *lanes[MIRROR_W_MAX_LANES]; /* under tmu; [0] leader unknown */
	size_t nlanes;

	/* immutable after start */
	char *name;
	uint64_t link_id;
	struct mirror_bridge *bridge;
	enum conf_offsets offsets;
	enum conf_progress progress;
	int poll_ms;
	char *topic_name;
	char *mm2_topic;
	regex_t *re;                     /* sync_topics, this thread's own copy (the conf */
	size_t nre;                      /* it was started with may be replaced by a reload) */
	rd_kafka_conf_t *dst_conf;       /* consumed when the thread creates its handles */
	rd_kafka_conf_t *src_conf;
	rd_kafka_conf_t *mm2_conf;
	rd_kafka_conf_t *match_src_conf, *match_dst_conf; /* mm2: the record match's consumers */

	/* created by main before the other threads start, destroyed after they end */
	rd_kafka_t *dst, *src, *mm2c;
	/* under tmu */
	struct mirror_wtopic *topics;
	size_t ntopics, captopics;
	int32_t mm2_nparts;              /* partitions of the offset-syncs topic, -1 unknown */
	bool reassign;                   /* tail/mm2: topic set changed */
	bool syncs_warned;               /* mm2: the offset.lag.max warning was logged */
	uint64_t read_seq;               /* reads (background rounds, lane requests) whose snapshot
					  * was taken; 0 is never a read's */
	int64_t next_sweep_ms;           /* main: the next background round that reads every partition */
	/* isr thread only */
	int64_t describe_after_ms;       /* DescribeConfigs: next request not before */
	rd_kafka_queue_t *cfgq;          /* DescribeConfigs answers, NULL when none in flight */
	/* main thread only */
	bool list_now;                   /* a demanded topic is unknown: list soon */
};

/* wtopic.c: the worker's topic table (w->tmu held); reports to the loop (bridge) */
void mirror_worker_report(struct mirror_worker *w, const struct mirror_wtopic *t, int32_t p,
			  int64_t progress, int64_t source_hw, int32_t isr, int32_t min_isr,
			  const char *error);
/* One destination progress read, preserved offsets (diverged.c): what the
 * gate may release by. */
struct mirror_wread {
	int64_t progress;     /* destination HW read */
	int64_t source_hw;    /* source HW sampled before the read (lag), -1 */
	int64_t source_after; /* source HW sampled at or after the read (the gate releases by
			       * `progress` only when it is ≥ progress), -1 none */
	int64_t read_us;      /* CLOCK_MONOTONIC µs the destination answered, 0: now */
};
/* Report a read of (t, p) — dropped while the partition is not confirmed,
 * a failure while diverged (as mirror_worker_report). w->tmu held. */
void mirror_worker_report_read(struct mirror_worker *w, const struct mirror_wtopic *t, int32_t p,
			       const struct mirror_wread *rd);
/* Why progress of (t, p) stalls although the destination moves ("" when it
 * no longer does); shown by describe, counted in a metric. */
void mirror_worker_report_stall(struct mirror_worker *w, const struct mirror_wtopic *t, int32_t p,
				const char *stall);
/* The topic entry (created, with its destination rkt, when `create`). Creation
 * needs w->dst: main thread only. */
struct mirror_wtopic *mirror_worker_topic(struct mirror_worker *w, const char *topic, bool create);
struct mirror_wpart *mirror_wtopic_part(struct mirror_wtopic *t, int32_t p);
/* The tail and mm2 threads' loop (tmu NOT held on entry): until w->halt,
 * assign() (tmu not held) when w->reassign was set, poll up to `cap`
 * messages of consumer rk into ms (poll_ms for the first, errors but
 * partition EOF logged at debug as err_event), hand them to apply() with
 * tmu held, then destroy them. */
void mirror_worker_consume(struct mirror_worker *w, rd_kafka_t *rk, int poll_ms, rd_kafka_message_t **ms,
			   size_t cap, const char *err_event, void (*assign)(struct mirror_worker *w),
			   void (*apply)(struct mirror_worker *w, rd_kafka_message_t **ms, size_t n));

/* lane.c: per destination leader ListOffsets(END) senders (w->tmu held). */
/* Queue partition p of topic index ti on its leader's lane (started on first
 * use) unless it is queued already; wakes the lane. */
void mirror_lane_enqueue(struct mirror_worker *w, uint32_t ti, int32_t p);
/* A demand of (ti, p) from the loop: queued as mirror_lane_enqueue; `fresh`
 * (a record past the partition's pending demand, or none pending) puts its
 * lane back to back at once, a pause in progress cut short. */
void mirror_lane_demand(struct mirror_worker *w, uint32_t ti, int32_t p, bool fresh);
/* The pause (ms) before a lane's next request after a demanded answer in
 * which no demanded partition's HW moved: 0 while nothing has moved for less
 * than MIRROR_W_POLL_BURST_MS (`still_ms`), then twice the pause before
 * (`prev_ms`, 1 ms after none), at most `cap_ms` (poll_interval_ms). So a
 * lane whose waits never complete sends at most one request per cap_ms once
 * MIRROR_W_POLL_BURST_MS + 2 × cap_ms have passed. Pure. */
static inline int64_t mirror_lane_pause_ms(int64_t still_ms, int64_t prev_ms, int64_t cap_ms)
{
	if (still_ms < MIRROR_W_POLL_BURST_MS)
		return 0;
	int64_t p = prev_ms > 0 ? prev_ms * 2 : 1;
	return p < cap_ms ? p : cap_ms;
}
/* End every lane thread (w->halt set, tmu NOT held) and free them. */
void mirror_lanes_join(struct mirror_worker *w);

/* diverged.c: preserved offsets — do the destination's offsets name the
 * source's records? (any worker thread, w->tmu held) */
/* One source HW sample of a partition: -1 when the source has no such
 * partition now; when its request was sent and answered (CLOCK_MONOTONIC µs). */
struct mirror_wsample {
	int64_t hw;
	int64_t sent_us, done_us;
};
/* Compare progress `before` (read before s was sent, -1 unknown) with source
 * sample s, of read `seq` (w->read_seq at its snapshot; 0: may not confirm).
 * Marks (t, p) diverged (ERROR mirror_destination_ahead_of_source, failure
 * reported) while the destination is ahead or the source went back, confirmed
 * once `before` ≤ s.hw. True while diverged. */
bool mirror_check_diverged(struct mirror_worker *w, struct mirror_wtopic *t, int32_t p, int64_t before,
			   const struct mirror_wsample *s, uint64_t seq);
/* Whether a source ListOffsets error means the partition does not exist. */
bool mirror_source_gone(rd_kafka_resp_err_t err);
/* CLOCK_MONOTONIC µs. Any thread. */
static inline int64_t mirror_worker_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* progress.c (main thread unless said) */
/* The background round: source HW of every partition, then destination
 * progress of those with lag (lanes); reports (progress, HW) of every one. */
void mirror_poll_background(struct mirror_worker *w);
/* Source topic listing: tracks the topics sync_topics matches, sizes them.
 * False when the source Metadata failed (logged). */
bool mirror_refresh_topics(struct mirror_worker *w);
/* The isr thread's body. */
void *mirror_isr_main(void *arg);

/*
 * The minimum ISR size the destination broker enforces on an acks=all write
 * to a partition: `min_isr` (the topic's min.insync.replicas, -1 unknown)
 * capped by `replicas`, the partition's replication factor (-1 unknown) — the
 * rule since Apache Kafka 3.7 (KAFKA-15583: min(min.insync.replicas,
 * replication factor)). Applied whatever the destination's version: an older
 * broker refuses the mirror's own acks=all writes to such a partition, so the
 * gate then times out (MIRROR_SYNC_REPLICATION_TIMEOUT) instead of failing at
 * once — later, never earlier. -1 when `min_isr` is unknown. Pure.
 */
static inline int32_t mirror_effective_min_isr(int32_t min_isr, int32_t replicas)
{
	if (min_isr < 0)
		return -1;
	return replicas > 0 && replicas < min_isr ? replicas : min_isr;
}

/* tail.c: the `tail` thread's body. */
void *mirror_tail_main(void *arg);

/* mm2.c: the `mm2` offset-syncs thread's body. */
void *mirror_mm2_main(void *arg);
/* Keep sync x (newer than every kept one) in s[0..*n) (capacity
 * MIRROR_W_MM2_SYNCS, oldest first): past capacity, of two neighbours
 * whose distance to the newest falls in the same power-of-two bucket the
 * newer goes (the newest and the oldest stay), so the kept syncs thin out
 * with age and a translation of an offset d behind the newest errs by at
 * most about d. Pure. */
void mirror_mm2_keep(struct mirror_wsync *s, uint32_t *n, struct mirror_wsync x);
/* MirrorMaker 2's translation of committed source offset `committed` (the
 * next record to consume) by the syncs s[0..n): the sync with the greatest
 * upstream ≤ committed gives its downstream, +1 when committed is past it
 * (exact at a sync; else the destination resumes right after the synced
 * record: conservative, records in between are read again, none skipped).
 * -1 when no kept sync is at or below it. Pure. */
int64_t mirror_mm2_translate(const struct mirror_wsync *s, uint32_t n, int64_t committed);
/* Parse one offset-syncs record; 0 on success. Any thread (pure). */
int mirror_mm2_parse(const void *key, size_t klen, const void *val, size_t vlen, char *topic,
		     size_t topic_cap, int32_t *partition, int64_t *upstream, int64_t *downstream);

#endif
