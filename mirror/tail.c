/*
 * tail.c — `preserved` + `tail`: the destination handle is a consumer
 * assigned to every partition of the tracked destination topics at their
 * end (long-poll fetches: one returns as soon as new records are readable,
 * i.e. as soon as the high watermark passes them). Each fetch response
 * refreshes librdkafka's cached high watermark
 * (rd_kafka_get_watermark_offsets) before its records are handed out, so
 * the partitions that delivered records are the ones whose HW moved: those
 * go to their lane as records arrive, which asks the source's HW and reports
 * the destination's when it is not above it (diverged.c); nothing else is
 * looked at (lag of the others comes from the background round). Lowest
 * latency, at the cost of destination egress (records fetched and dropped).
 * The tail thread; w->tmu only around the table.
 */
#include <stdlib.h>
#include <string.h>

#include "mirror/worker.h"

#define TAIL_POLL_MS 100  /* consumer poll: how soon a reassignment or stop is seen */
#define TAIL_BATCH 1024   /* records taken per pass */

static void tail_assign(struct mirror_worker *w)
{
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(16);
	pthread_mutex_lock(&w->tmu);
	for (size_t i = 0; i < w->ntopics; i++)
		for (int32_t p = 0; p < w->topics[i].npart; p++)
			rd_kafka_topic_partition_list_add(l, w->topics[i].dst, p)->offset = RD_KAFKA_OFFSET_END;
	pthread_mutex_unlock(&w->tmu);
	rd_kafka_resp_err_t err = rd_kafka_assign(w->dst, l);
	if (err)
		LOG_W("mirror_tail_assign_failed", "mirror=%s reason=\"%s\"", w->name, rd_kafka_err2name(err));
	else
		LOG_D("mirror_tail_assigned", "mirror=%s partitions=%d", w->name, l->cnt);
	rd_kafka_topic_partition_list_destroy(l);
}

/* The cached HW of the partitions that delivered records, to be confirmed
 * against the source's (lane.c) and reported (tmu held). */
static void tail_report(struct mirror_worker *w, rd_kafka_message_t **ms, size_t n)
{
	struct mirror_wtopic *t = NULL;
	for (size_t i = 0; i < n; i++) {
		const char *dst = rd_kafka_topic_name(ms[i]->rkt);
		int32_t p = ms[i]->partition;
		if (i > 0 && ms[i - 1]->rkt == ms[i]->rkt && ms[i - 1]->partition == p)
			continue; /* same partition as the record before */
		if (!t || strcmp(t->dst, dst) != 0) {
			t = NULL;
			for (size_t k = 0; k < w->ntopics && !t; k++)
				if (strcmp(w->topics[k].dst, dst) == 0)
					t = &w->topics[k];
			if (!t)
				continue;
		}
		int64_t lo, hi;
		if (p < 0 || p >= t->npart_alloc || rd_kafka_get_watermark_offsets(w->dst, dst, p, &lo, &hi) || hi < 0)
			continue;
		struct mirror_wpart *wp = &t->parts[p];
		if (hi != wp->tail_hw) {
			/* to its lane: reported once the source's HW, sampled after, is not below it */
			wp->tail_hw = wp->tail_check = hi;
			mirror_lane_enqueue(w, (uint32_t)(t - w->topics), p);
		}
	}
}

void *mirror_tail_main(void *arg)
{
	struct mirror_worker *w = arg;
	rd_kafka_message_t *ms[TAIL_BATCH];
	mirror_worker_consume(w, w->dst, TAIL_POLL_MS, ms, TAIL_BATCH, "mirror_tail_error", tail_assign, tail_report);
	return NULL;
}
