/*
 * failover.h — the state of one failover or verify (mirror/failover.c),
 * shared by its three files, private to mirror/:
 *   failover.c          loop thread: start, fence and release calls, the answer;
 *   failover_job.c      job thread: partitions, drain (measure), verdicts (judge);
 *   failover_offsets.c  job thread: MirrorMaker 2 offset-syncs and consumer-offset moves.
 * While the job runs (f->th_running) only the job thread touches the job
 * fields below; it reports back through the bridge (MIRROR_MSG_FAILOVER_DONE).
 */
#ifndef SYNCGATE_MIRROR_FAILOVER_H
#define SYNCGATE_MIRROR_FAILOVER_H

#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "mirror/internal.h"


#define FO_FENCE_SETTLE_MS 1000      /* other sidecars apply the fence within this */
#define FO_RPC_MS 5000
#define FO_TAIL_WINDOW 16            /* offsets searched for the last data record */
#define FO_MAX_VERDICT_ITEMS 20      /* partitions named in a verdict line */

enum fo_status { FO_OK, FO_MISSING, FO_DIVERGED, FO_UNKNOWN };

struct fo_sync {
	int64_t up, down;           /* MirrorMaker 2 offset-sync: source offset up is at down */
};

struct fo_part {
	int32_t partition;
	int64_t src_hw, dst_hw;     /* -1 unknown */
	int64_t src_hw_after;       /* source HW re-sampled after dst_hw: dst_hw above it is divergence */
	int64_t progress;           /* first source offset not on the destination, -1 unknown */
	int64_t target;             /* what progress must reach */
	int64_t confirmed;          /* destination-only: first offset after the last confirmed record */
	enum fo_status status;
	char detail[240];
	bool last_checked;          /* the last-record comparison ran */
	int64_t last_src_off, last_dst_off;
	uint32_t crc_src, crc_dst;
	struct fo_sync *syncs;      /* mm2, job thread; in offset-syncs order */
	size_t nsyncs, capsyncs;
};

struct fo_topic {
	char *topic, *dst;
	int32_t npart;
	struct fo_part *parts;
};

struct fo_move {
	char *group, *topic;
	int32_t partition;
	int64_t src_off, dst_off;
	const char *action;         /* moved | would move | verified | skipped | failed; verify: in step | differs */
	char note[160];
};

enum fo_phase { FO_FENCING, FO_JOB, FO_RELEASING, FO_ANSWERED };

struct mirror_failover {
	struct mirror_gate *g;
	struct mirror_bridge *bridge;
	struct mirror_failover *next, **pprev;
	mirror_op_cb cb;            /* NULL once cancelled */
	void *arg;
	char *mirror, *regex;
	bool failover, dry_run, dest_only, fencing;
	int timeout_ms;
	enum conf_offsets offsets;
	regex_t *sync_re;           /* the mirror's sync_groups, compiled for the job thread */
	size_t nsync_re;
	char *mm2_topic;
	rd_kafka_conf_t *src_conf, *dst_conf, *mm2_conf;
	rd_kafka_conf_t *match_conf;  /* mm2: the destination read_committed, for failover_match.c */
	struct fo_topic *topics;
	size_t ntopics;
	enum fo_phase phase;
	struct mirror_op *op;       /* the fence or release call in flight */
	json_t *steps;              /* answers of the fence and release calls */
	bool released;
	/* job */
	pthread_t th;
	bool th_running;
	atomic_bool stop;
	bool drained, verified;
	const char *unreachable;    /* "source" / "destination" */
	char error[600];
	struct fo_move *moves;
	size_t nmoves;
	char groups_note[300];
	/* answer */
	struct event *ev;
	int status;
	char *body;
};
/* The topic `topic` of f, or NULL. Any thread that owns f. */
static inline struct fo_topic *fo_topic_find(struct mirror_failover *f, const char *topic)
{
	for (size_t i = 0; i < f->ntopics; i++)
		if (!strcmp(f->topics[i].topic, topic))
			return &f->topics[i];
	return NULL;
}

/* Partition `partition` of t (NULL t allowed), or NULL. */
static inline struct fo_part *fo_part_find(struct fo_topic *t, int32_t partition)
{
	for (int32_t i = 0; t && i < t->npart; i++)
		if (t->parts[i].partition == partition)
			return &t->parts[i];
	return NULL;
}

/** Job thread: the whole job (partitions, drain, verdicts, offset moves),
 * then MIRROR_MSG_FAILOVER_DONE on f->bridge. `arg` is the mirror_failover. */
void *mirror_failover_job_main(void *arg);

/** Job thread: read f's offset-syncs topic (consumer `c`, assigned to its
 * `nsyncparts` partitions) up to its current end, into each fo_part's syncs. */
void mirror_failover_mm2_read(struct mirror_failover *f, rd_kafka_t *c, int32_t nsyncparts);

/** The latest offset-sync of fp (greatest upstream offset), or NULL. */
const struct fo_sync *mirror_failover_mm2_latest(const struct fo_part *fp);

/** mm2, job thread: prove source records past fp's latest offset-sync by
 * their copies on the destination (`src`: the source client, `dstc`: a
 * read_committed destination client), up to fp's sampled HWs; the last
 * proved pair is added to fp->syncs (failover_match.c). */
void mirror_failover_mm2_prove(rd_kafka_t *src, rd_kafka_t *dstc, const struct fo_topic *t, struct fo_part *fp);

/** Job thread, step 4: copy (dry run: list) the committed offsets of every
 * source consumer group on f's topics to the destination, into f->moves. */
void mirror_failover_move_offsets(struct mirror_failover *f, rd_kafka_t *src, rd_kafka_t *dst);
/* verify: every synchronous group's (sync_groups) committed offsets on the
 * topics compared with the destination's (moves with action "in step" or
 * "differs", nothing written). Job thread. */
void mirror_failover_compare_offsets(struct mirror_failover *f, rd_kafka_t *src, rd_kafka_t *dst);

#endif
