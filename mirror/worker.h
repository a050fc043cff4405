/*
 * mirror/worker.h — the per-mirror progress worker (mirror/ internal).
 *
 * One thread per mirror owns every librdkafka handle of that mirror and only
 * ever talks to the loop through the bridge (reports) and the demand queue
 * (under `mu`). Everything below "thread only" is touched by that thread
 * alone.
 */
#ifndef SYNCGATE_MIRROR_WORKER_H
#define SYNCGATE_MIRROR_WORKER_H

#include <librdkafka/rdkafka.h>
#include <pthread.h>

#include "mirror/internal.h"

#define MIRROR_W_TOPICS_MS 5000   /* source topic listing */
#define MIRROR_W_ISR_MS 3000      /* destination ISR + min.insync.replicas */
#define MIRROR_W_LAG_MS 1000      /* background source HW + progress, all partitions */
/* One thread serves a mirror, so a blocking call on an unresponsive
 * destination broker delays every partition: timeouts stay short. */
#define MIRROR_W_RPC_MS 2000      /* timeout of one blocking librdkafka call (Metadata, configs) */
#define MIRROR_W_LIST_MS 1000     /* ListOffsets(END) of one destination leader's partitions */
#define MIRROR_W_SLOW_RPC_MS 200  /* ListOffsets timeout for a leader that just timed out */
#define MIRROR_W_SLOW_MS 10000    /* how long a leader stays suspect after a timeout */
#define MIRROR_W_SYNCS_STALL_MS 3000 /* mm2: destination ahead of the offset-syncs this long → stalled */

struct mirror_wdemand {
	char *topic;
	int32_t partition;
	int64_t need, until_ms;
};

/* Per (topic, partition), thread only. */
struct mirror_wpart {
	int64_t src_hw;      /* last source HW sample */
	int64_t progress;    /* last progress sent */
	int32_t isr, min_isr;
	int64_t need, until_ms; /* demand: prompt progress while progress <= need */
	int64_t mm2_up;      /* mm2: greatest upstream offset in offset-syncs, -1 */
	int64_t mm2_down;    /* mm2: its downstream offset, -1 */
	int64_t syncs_behind_since_ms; /* mm2: destination ahead of the offset-syncs since, -1 */
	bool syncs_behind;   /* mm2: reported as stalled on offset-syncs */
	int64_t tail_hw;     /* tail: last cached destination HW reported */
	int32_t leader;      /* destination leader (Metadata), -1 unknown */
	bool failing;        /* last attempt reported an error */
};

/* Per source topic that the mirror desires SYNC (or that was demanded). */
struct mirror_wtopic {
	char *topic;         /* source name */
	char *dst;           /* destination name (topic_name pattern) */
	int32_t npart;       /* source partition count, -1 unknown */
	struct mirror_wpart *parts; /* npart_alloc entries */
	int32_t npart_alloc;
	rd_kafka_topic_t *dst_rkt; /* keeps the destination topic "locally known" for metadata */
	bool seen;           /* in the last source listing */
};

struct mirror_worker {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;                       /* under mu */
	struct mirror_wdemand *dq;       /* under mu: demands not yet taken */
	size_t ndq, capdq;

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

	/* thread only */
	rd_kafka_t *dst, *src, *mm2c;
	struct mirror_wtopic *topics;
	size_t ntopics, captopics;
	int64_t describe_after_ms;       /* DescribeConfigs backoff after a failure */
	int32_t mm2_nparts;              /* partitions of the offset-syncs topic, -1 unknown */
	struct mirror_slow_leader {      /* destination leaders whose ListOffsets timed out */
		int32_t id;
		int64_t until_ms;        /* queried last, with a short timeout, until then */
	} slow[8];
	bool reassign;                   /* tail/mm2: topic set changed */
	bool list_now;                   /* a demanded topic is unknown: list soon */
	bool syncs_warned;               /* mm2: the offset.lag.max warning was logged */
};

/* wtopic.c: the worker's topic table; reports to the loop (bridge) */
void mirror_worker_report(struct mirror_worker *w, const struct mirror_wtopic *t, int32_t p,
			  int64_t progress, int64_t source_hw, int32_t isr, int32_t min_isr,
			  const char *error);
/* Why progress of (t, p) stalls although the destination moves ("" when it
 * no longer does); shown by describe, counted in a metric. */
void mirror_worker_report_stall(struct mirror_worker *w, const struct mirror_wtopic *t, int32_t p,
				const char *stall);
struct mirror_wtopic *mirror_worker_topic(struct mirror_worker *w, const char *topic, bool create);
struct mirror_wpart *mirror_wtopic_part(struct mirror_wtopic *t, int32_t p);

/* progress.c: ListOffsets(END) through offsets_for_times */
void mirror_poll_demanded(struct mirror_worker *w, int64_t now);
void mirror_poll_background(struct mirror_worker *w);
void mirror_refresh_isr(struct mirror_worker *w);
void mirror_refresh_topics(struct mirror_worker *w);

/* tail.c */
void mirror_tail_assign(struct mirror_worker *w);
void mirror_tail_poll(struct mirror_worker *w, int timeout_ms);

/* mm2.c */
void mirror_mm2_assign(struct mirror_worker *w);
void mirror_mm2_poll(struct mirror_worker *w, int timeout_ms);
/* Parse one offset-syncs record; 0 on success. Any thread (pure). */
int mirror_mm2_parse(const void *key, size_t klen, const void *val, size_t vlen, char *topic,
		     size_t topic_cap, int32_t *partition, int64_t *upstream, int64_t *downstream);

#endif
