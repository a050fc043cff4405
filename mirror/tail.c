/*
 * tail.c — `preserved` + `tail`: the destination handle is a consumer
 * assigned to every partition of the tracked destination topics at their
 * end (long-poll fetches: one returns as soon as new records are readable).
 * Each fetch response refreshes librdkafka's cached high watermark
 * (rd_kafka_get_watermark_offsets), which is reported as progress as soon as
 * it moves: lowest latency, at the cost of destination egress (the records
 * are fetched and dropped). Worker thread.
 */
#include <stdlib.h>

#include "mirror/worker.h"

void mirror_tail_assign(struct mirror_worker *w)
{
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(16);
	for (size_t i = 0; i < w->ntopics; i++)
		for (int32_t p = 0; p < w->topics[i].npart; p++)
			rd_kafka_topic_partition_list_add(l, w->topics[i].dst, p)->offset = RD_KAFKA_OFFSET_END;
	rd_kafka_resp_err_t err = rd_kafka_assign(w->dst, l);
	if (err)
		LOG_W("mirror_tail_assign_failed", "mirror=%s reason=\"%s\"", w->name, rd_kafka_err2name(err));
	else
		LOG_D("mirror_tail_assigned", "mirror=%s partitions=%d", w->name, l->cnt);
	rd_kafka_topic_partition_list_destroy(l);
}

void mirror_tail_poll(struct mirror_worker *w, int timeout_ms)
{
	for (int i = 0; i < 10000; i++) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(w->dst, i == 0 ? timeout_ms : 0);
		if (!m)
			break;
		if (m->err && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
			LOG_D("mirror_tail_error", "mirror=%s reason=\"%s\"", w->name, rd_kafka_err2name(m->err));
		rd_kafka_message_destroy(m);
	}
	for (size_t i = 0; i < w->ntopics; i++) {
		struct mirror_wtopic *t = &w->topics[i];
		for (int32_t p = 0; p < t->npart && p < t->npart_alloc; p++) {
			int64_t lo, hi;
			if (rd_kafka_get_watermark_offsets(w->dst, t->dst, p, &lo, &hi) || hi < 0)
				continue;
			struct mirror_wpart *wp = &t->parts[p];
			if (hi != wp->tail_hw) {
				wp->tail_hw = hi;
				wp->progress = hi;
				mirror_worker_report(w, t, p, hi, -1, -1, -1, NULL);
			}
		}
	}
}
