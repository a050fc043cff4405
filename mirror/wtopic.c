/*
 * wtopic.c — a mirror worker's table of source topics and partitions, and
 * how its progress sources (progress.c, tail.c, mm2.c) report to the loop;
 * the consumer loop of the tail and mm2 threads.
 * Any of the worker's threads, w->tmu held (each worker owns its table).
 */
#include <stdlib.h>
#include <string.h>

#include "mirror/worker.h"

/* Post one report; `rd` NULL: no progress read (an error, ISR, a divergence). */
static void report_post(struct mirror_worker *w, const struct mirror_wtopic *t, int32_t p,
			const struct mirror_wread *rd, int32_t isr, int32_t min_isr, const char *error)
{
	int64_t progress = rd ? rd->progress : -1;
	const struct mirror_wpart *wp = w->offsets != CONF_OFFSETS_MM2 && p >= 0 && p < t->npart_alloc
						? &t->parts[p] : NULL;
	if (wp && wp->diverged && !error) { /* never a progress of a diverged partition */
		progress = -1;
		error = MIRROR_DIVERGED_ERROR;
	} else if (wp && !wp->confirmed && progress >= 0) {
		progress = -1; /* not yet shown to name the source's records */
		if (!error && isr < 0 && min_isr < 0)
			return;
	}
	struct mirror_report r = {
		.mirror = w->name, .topic = t->topic, .partition = p, .npartitions = t->npart,
		.progress = progress, .source_hw = rd ? rd->source_hw : -1,
		.source_hw_after = rd ? rd->source_after : -1, .isr = isr, .min_isr = min_isr, .error = error,
		.diverged = wp && wp->diverged,
		.read_us = rd && rd->read_us > 0 ? rd->read_us : mirror_worker_now_us(),
	};
	if (mirror_bridge_post(w->bridge, w->link_id, &r) != 0)
		LOG_W("mirror_report_dropped", "mirror=%s topic=%s partition=%d reason=\"out of memory\"",
		      w->name, t->topic, (int)p);
}

void mirror_worker_report(struct mirror_worker *w, const struct mirror_wtopic *t, int32_t p,
			  int64_t progress, int64_t source_hw, int32_t isr, int32_t min_isr,
			  const char *error)
{
	/* no source sample after it: the gate takes it for mm2 offsets only */
	struct mirror_wread rd = {.progress = progress, .source_hw = source_hw, .source_after = -1};
	report_post(w, t, p, progress >= 0 || source_hw >= 0 ? &rd : NULL, isr, min_isr, error);
}

void mirror_worker_report_read(struct mirror_worker *w, const struct mirror_wtopic *t, int32_t p,
			       const struct mirror_wread *rd)
{
	report_post(w, t, p, rd, -1, -1, NULL);
}

void mirror_worker_report_stall(struct mirror_worker *w, const struct mirror_wtopic *t, int32_t p,
				const char *stall)
{
	struct mirror_report r = {
		.mirror = w->name, .topic = t->topic, .partition = p, .npartitions = t->npart,
		.progress = -1, .source_hw = -1, .isr = -1, .min_isr = -1, .stall = stall,
	};
	if (mirror_bridge_post(w->bridge, w->link_id, &r) != 0)
		LOG_W("mirror_report_dropped", "mirror=%s topic=%s partition=%d reason=\"out of memory\"",
		      w->name, t->topic, (int)p);
}

struct mirror_wpart *mirror_wtopic_part(struct mirror_wtopic *t, int32_t p)
{
	if (p < 0 || p >= MIRROR_MAX_PARTITIONS)
		return NULL;
	if (p >= t->npart_alloc) {
		int32_t n = t->npart_alloc ? t->npart_alloc : 4;
		while (n <= p)
			n *= 2;
		struct mirror_wpart *a = realloc(t->parts, (size_t)n * sizeof(*a));
		if (!a)
			return NULL;
		for (int32_t i = t->npart_alloc; i < n; i++)
			a[i] = (struct mirror_wpart){.src_hw = -1, .progress = -1, .bg_hw = -1,
						     .isr = -1, .min_isr = -1,
						     .need = -1, .until_ms = -1, .src_acked = -1, .mm2_up = -1, .mm2_down = -1,
						     .mm2_proved_up = -1, .mm2_proved_down = -1,
						     .syncs_behind_since_ms = -1, .tail_hw = -1, .seen_src_hw = -1,
						     .tail_check = -1, .confirm_from = 1, .leader = -1};
		t->parts = a;
		t->npart_alloc = n;
	}
	return &t->parts[p];
}

struct mirror_wtopic *mirror_worker_topic(struct mirror_worker *w, const char *topic, bool create)
{
	for (size_t i = 0; i < w->ntopics; i++)
		if (strcmp(w->topics[i].topic, topic) == 0)
			return &w->topics[i];
	if (!create)
		return NULL;
	if (w->ntopics == w->captopics) {
		size_t cap = w->captopics ? w->captopics * 2 : 8;
		struct mirror_wtopic *a = realloc(w->topics, cap * sizeof(*a));
		if (!a)
			return NULL;
		w->topics = a;
		w->captopics = cap;
	}
	struct mirror_wtopic *t = &w->topics[w->ntopics];
	memset(t, 0, sizeof(*t));
	t->npart = -1;
	t->min_isr = -1;
	t->topic = strdup(topic);
	t->dst = mirror_destination_topic(w->topic_name, topic);
	if (!t->topic || !t->dst) {
		free(t->topic);
		free(t->dst);
		return NULL;
	}
	t->dst_rkt = w->dst ? rd_kafka_topic_new(w->dst, t->dst, NULL) : NULL;
	w->ntopics++;
	w->reassign = true;
	return t;
}

void mirror_worker_consume(struct mirror_worker *w, rd_kafka_t *rk, int poll_ms, rd_kafka_message_t **ms,
			   size_t cap, const char *err_event, void (*assign)(struct mirror_worker *w),
			   void (*apply)(struct mirror_worker *w, rd_kafka_message_t **ms, size_t n))
{
	pthread_mutex_lock(&w->tmu);
	while (!w->halt) {
		bool reassign = w->reassign;
		w->reassign = false;
		pthread_mutex_unlock(&w->tmu);
		if (reassign)
			assign(w);
		size_t n = 0;
		while (n < cap) {
			rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, n == 0 ? poll_ms : 0);
			if (!m)
				break;
			if (m->err) {
				if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
					LOG_D(err_event, "mirror=%s reason=\"%s\"", w->name, rd_kafka_err2name(m->err));
				rd_kafka_message_destroy(m);
				continue;
			}
			ms[n++] = m;
		}
		pthread_mutex_lock(&w->tmu);
		apply(w, ms, n);
		for (size_t i = 0; i < n; i++)
			rd_kafka_message_destroy(ms[i]);
	}
	pthread_mutex_unlock(&w->tmu);
}
