/*
 * report.c — destination progress reports (KIP MirrorReplicaInfo, here
 * gathered by the mirror workers): one report updates (mirror, topic,
 * partition) progress, ISR and MinISR and failure state, satisfies the
 * waiters it covers, fails them fast when ISR < MinISR, and may let the
 * decider promote the topic. Loop thread.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "mirror/internal.h"

/* The lag gauge sums the partitions whose lag is known. */
static void tstate_update_lag(struct mirror_tstate *t)
{
	int64_t lag;
	mirror_tstate_lag(t, 0, &lag);
	metric_set(t->m_lag, (double)lag);
}

static void count_failure(struct mirror_link *l, const char *topic, int32_t partition, const char *reason)
{
	char m[160], t[300], r[128], labels[700];
	mirror_label_escape(m, sizeof(m), l->name);
	mirror_label_escape(t, sizeof(t), topic);
	mirror_label_escape(r, sizeof(r), reason);
	snprintf(labels, sizeof(labels), "mirror=\"%s\",topic=\"%s\",partition=\"%" PRId32 "\",reason=\"%s\"",
		 m, t, partition, r);
	metric_add(metric_get(METRIC_COUNTER, "syncgate_sync_partition_fetch_failures_total",
			      "Failed destination progress attempts per partition (KIP SyncPartitionFetchFailures)",
			      labels, NULL, 0), 1);
}

static void pstate_isr_metrics(struct mirror_link *l, struct mirror_tstate *t, int32_t partition,
			       struct mirror_pstate *ps)
{
	if (!ps->m_isr) {
		char m[160], tp[300], labels[600];
		mirror_label_escape(m, sizeof(m), l->name);
		mirror_label_escape(tp, sizeof(tp), t->topic);
		snprintf(labels, sizeof(labels), "mirror=\"%s\",topic=\"%s\",partition=\"%" PRId32 "\"", m, tp,
			 partition);
		ps->m_isr = metric_get(METRIC_GAUGE, "syncgate_mirror_destination_isr",
				       "ISR size of the destination partition", labels, NULL, 0);
		ps->m_min_isr = metric_get(METRIC_GAUGE, "syncgate_mirror_destination_min_isr",
					   "min.insync.replicas of the destination partition", labels, NULL, 0);
	}
	metric_set(ps->m_isr, ps->isr);
	metric_set(ps->m_min_isr, ps->min_isr);
}

void mirror_gate_apply_report(struct mirror_gate *g, const struct mirror_msg *m)
{
	const struct mirror_report *r = &m->r;
	struct mirror_link *l = NULL;
	if (m->link_id) {
		for (size_t i = 0; i < g->nlinks; i++)
			if (g->links[i]->id == m->link_id)
				l = g->links[i];
	} else if (r->mirror) {
		l = mirror_link_find(g, r->mirror);
	}
	if (!l || !r->topic)
		return; /* stale report of a stopped worker, or unknown mirror */
	struct mirror_tstate *t = mirror_tstate_get(l, r->topic, true);
	if (!t)
		return;
	if (r->npartitions >= 0 && r->npartitions <= MIRROR_MAX_PARTITIONS)
		t->npart = r->npartitions;
	struct mirror_pstate *ps = mirror_pstate_get(t, r->partition, true);
	if (!ps)
		return;
	int64_t now = mirror_now_ms();

	if (r->diverged) /* nothing the destination holds proves anything for this partition */
		ps->progress = ps->sampled_hw = -1;
	if (r->error) {
		count_failure(l, t->topic, r->partition, r->error);
		if (ps->failing_since_ms < 0) {
			ps->failing_since_ms = now;
			t->nfailing++;
			metric_set(t->m_failing, t->nfailing);
			LOG_W("mirror_partition_failing", "mirror=%s topic=%s partition=%" PRId32 " reason=\"%s\"",
			      l->name, t->topic, r->partition, r->error);
		}
		snprintf(ps->reason, sizeof(ps->reason), "%s", r->error);
	} else if ((r->progress >= 0 || r->isr >= 0) && ps->failing_since_ms >= 0) {
		LOG_I("mirror_partition_recovered", "mirror=%s topic=%s partition=%" PRId32 " failed_for_ms=%" PRId64,
		      l->name, t->topic, r->partition, now - ps->failing_since_ms);
		ps->failing_since_ms = -1;
		ps->reason[0] = '\0';
		t->nfailing--;
		metric_set(t->m_failing, t->nfailing);
	}

	if (r->stall && strcmp(r->stall, ps->stall) != 0) {
		t->nstalled += (r->stall[0] != '\0') - (ps->stall[0] != '\0');
		metric_set(t->m_stalled, t->nstalled);
		if (r->stall[0])
			LOG_W("mirror_partition_stalled", "mirror=%s topic=%s partition=%" PRId32 " reason=\"%s\"",
			      l->name, t->topic, r->partition, r->stall);
		else
			LOG_I("mirror_partition_unstalled", "mirror=%s topic=%s partition=%" PRId32 " was=\"%s\"",
			      l->name, t->topic, r->partition, ps->stall);
		snprintf(ps->stall, sizeof(ps->stall), "%s", r->stall);
	}
	if (r->isr >= 0 || r->min_isr >= 0) {
		bool was_short = mirror_isr_short(ps);
		if (r->isr >= 0)
			ps->isr = r->isr;
		if (r->min_isr >= 0)
			ps->min_isr = r->min_isr;
		pstate_isr_metrics(l, t, r->partition, ps);
		if (mirror_isr_short(ps) && !was_short)
			LOG_W("mirror_partition_under_min_isr", "mirror=%s topic=%s partition=%" PRId32
			      " isr=%" PRId32 " min_isr=%" PRId32, l->name, t->topic, r->partition, ps->isr, ps->min_isr);
	}
	/* preserved offsets: a destination HW is progress only with a source HW
	 * sampled at or after it that is not below it — else the destination
	 * holds records the source does not (written to it directly, or the
	 * source went back): never a release by them (worker: diverged.c) */
	bool unconfirmed = r->progress >= 0 && l->cm && l->cm->offsets == CONF_OFFSETS_PRESERVED &&
			   r->source_hw_after < r->progress;
	bool stale = unconfirmed || (ps->suspect_us && r->read_us < ps->suspect_us); /* read before the
										       * source went back */
	if (r->progress >= 0 && !stale && ps->suspect_us)
		ps->suspect_us = 0; /* the worker confirmed it against a later source sample */
	if (r->progress >= 0 && !stale) {
		ps->progress = r->progress;
		if (r->source_hw >= 0) {
			ps->sampled_hw = r->source_hw;
			ps->sampled_ms = now;
		}
		struct mirror_ref *top;
		int64_t released = 0;
		while ((top = mirror_heap_top(ps)) != NULL && top->offset < ps->progress) {
			mirror_ref_done(top, true, now);
			released++;
		}
		if (released && r->read_us > 0) {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			double d = ((double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3 - (double)r->read_us) / 1e6;
			for (int64_t i = 0; i < released; i++)
				metric_observe(l->m_release, d);
		}
		mirror_hw_progressed(g, t->topic, r->partition); /* held Fetch responses */
	}
	/* Fast feedback (KIP "Produce-ack precondition" 2): ISR < MinISR fails
	 * every part still waiting for this mirror here. */
	if (mirror_isr_short(ps) && ps->nheap) {
		while (ps->nheap) {
			struct mirror_ref *ref = ps->heap[0];
			mirror_part_isr_message(&ref->w->parts[ref->part], l, ps);
			mirror_part_fail(ref->w, ref->part, MIRROR_NOT_ENOUGH_REMOTE);
		}
	}
	if (!t->reported) {
		t->reported = true;
		t->reported_next = g->reported;
		g->reported = t;
	}
}

void mirror_gate_reports_drained(struct mirror_gate *g)
{
	while (g->reported) {
		struct mirror_tstate *t = g->reported;
		g->reported = t->reported_next;
		t->reported = false;
		tstate_update_lag(t);
		mirror_tstate_check_promotion(t);
	}
}

