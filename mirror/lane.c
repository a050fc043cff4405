/*
 * lane.c — destination progress by ListOffsets(END), one thread ("lane")
 * per destination leader of a mirror. A lane sends one request at a time
 * (rd_kafka_offsets_for_times, which blocks; with all its partitions on one
 * leader it is one ListOffsets) naming the partitions queued on it:
 *   - demanded ones (a held response waits on them): queued by the loop the
 *     moment a wait arrives (mirror_worker_demand), so the request leaves at
 *     once, or right after the one in flight (which may already answer it —
 *     coalescing); queued again after each answer while still pending, so a
 *     held partition is polled back to back, one round trip apart — for
 *     MIRROR_W_POLL_BURST_MS after a demanded partition's HW moved or a new
 *     record was demanded; while nothing moves after that, the lane pauses
 *     between requests, doubling from 1 ms up to poll_interval_ms
 *     (mirror_lane_pause_ms: a stalled mirror's leader is asked at most once
 *     per poll_interval_ms, not thousands of times a second);
 *   - the background round's (progress.c: partitions whose source HW is
 *     ahead of their progress), up to MIRROR_W_BG_CHUNK per request beside
 *     the demanded, reported with the source HW sampled before they were
 *     queued (lag = HW − progress never undercounts).
 *   - the tail's (tail.c): a destination HW already read, to confirm only.
 * Each request is followed by a source ListOffsets of the same partitions
 * (the source's HW sampled after the destination's was read; not of a held
 * partition whose destination did not move: nothing to report; nor of a
 * held partition whose destination HW is at or below the source HW its
 * acks=all answer vouched for, src_acked): a destination HW is reported
 * only when that source HW is not below it (diverged.c). A release whose
 * records were the partition's latest needs no source round trip.
 * A lane whose leader timed out uses a short timeout for a while, and a
 * failed request is retried after poll_interval_ms; either way only that
 * leader's partitions wait. A partition whose leader changed moves to its
 * new leader's lane when its old lane takes it. Idle: no request at all.
 * Lane threads; w->tmu held unless said.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mirror/worker.h"

/* A held response waits on (t, p): prompt progress wanted. `progress: poll`
 * only — with `tail` the tail's fetches are the prompt reads (a ListOffsets
 * on the tail's connection would wait behind its long-polling Fetch). */
static bool demand_pending(const struct mirror_worker *w, const struct mirror_wpart *wp, int64_t now)
{
	return w->progress == CONF_PROGRESS_POLL && wp->until_ms >= now && wp->need >= wp->progress;
}

static void *lane_main(void *arg);

/* The lane of `leader`, started on first use; lane 0 (leader unknown) when
 * the mirror has MIRROR_W_MAX_LANES already. NULL on ENOMEM. */
static struct mirror_lane *lane_for(struct mirror_worker *w, int32_t leader)
{
	for (size_t i = 0; i < w->nlanes; i++)
		if (w->lanes[i]->leader == leader)
			return w->lanes[i];
	if (w->halt) /* stopping: start nothing */
		return w->nlanes ? w->lanes[0] : NULL;
	if (w->nlanes > 0 && (leader < 0 || w->nlanes == MIRROR_W_MAX_LANES))
		return w->lanes[0];
	if (w->nlanes == 0 && leader >= 0 && !lane_for(w, -1))
		return NULL;
	struct mirror_lane *ln = calloc(1, sizeof(*ln));
	if (!ln)
		return w->nlanes ? w->lanes[0] : NULL;
	ln->w = w;
	ln->leader = leader;
	ln->still_since_ms = -1;
	char m[160], prefix[200];
	static const char *const kinds[2] = { "demand", "background" };
	mirror_label_escape(m, sizeof(m), w->name);
	snprintf(prefix, sizeof(prefix), "mirror=\"%s\",broker=\"%" PRId32 "\"", m, leader);
	metric_family_get(METRIC_COUNTER, "syncgate_mirror_progress_requests_total",
			  "ListOffsets requests for destination progress, per destination leader (-1: not "
			  "known yet); kind demand: a held response waited on one of its partitions",
			  prefix, "kind", kinds, 2, ln->m_requests);
	ln->m_source = metric_get(METRIC_COUNTER, "syncgate_mirror_source_offsets_requests_total",
				  "ListOffsets requests to the source confirming destination HWs this lane "
				  "read (none for a release the source's acks=all answer vouches for)",
				  prefix, NULL, 0);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ln->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&ln->th, NULL, lane_main, ln) != 0) {
		pthread_cond_destroy(&ln->cv);
		free(ln);
		return w->nlanes ? w->lanes[0] : NULL;
	}
	w->lanes[w->nlanes++] = ln;
	return ln;
}

void mirror_lane_enqueue(struct mirror_worker *w, uint32_t ti, int32_t p)
{
	struct mirror_wpart *wp = &w->topics[ti].parts[p];
	if (wp->queued)
		return;
	struct mirror_lane *ln = lane_for(w, wp->leader);
	if (!ln)
		return;
	if (ln->nq == ln->capq) {
		size_t cap = ln->capq ? ln->capq * 2 : 64;
		struct mirror_wref *q = realloc(ln->q, cap * sizeof(*q));
		if (!q)
			return;
		ln->q = q;
		ln->capq = cap;
	}
	ln->q[ln->nq++] = (struct mirror_wref){ti, p};
	wp->queued = true;
	pthread_cond_signal(&ln->cv);
}

void mirror_lane_demand(struct mirror_worker *w, uint32_t ti, int32_t p, bool fresh)
{
	struct mirror_lane *ln = fresh ? lane_for(w, w->topics[ti].parts[p].leader) : NULL;
	if (ln) { /* back to back from now: the record may be there already */
		ln->still_since_ms = mirror_now_ms();
		ln->pause_ms = ln->pace_us = 0;
	}
	mirror_lane_enqueue(w, ti, p); /* wakes the lane */
	if (ln)
		pthread_cond_signal(&ln->cv); /* queued already: a pause in progress ends */
}

/* Sleep on the lane's condition until woken or `until_us` (CLOCK_MONOTONIC
 * µs; -1: no limit). */
static void lane_sleep(struct mirror_lane *ln, int64_t until_us)
{
	if (until_us < 0) {
		pthread_cond_wait(&ln->cv, &ln->w->tmu);
		return;
	}
	int64_t d = until_us - mirror_worker_now_us();
	if (d <= 0)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += d / 1000000;
	ts.tv_nsec += (d % 1000000) * 1000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(&ln->cv, &ln->w->tmu, &ts);
}

/* After a request with demanded partitions (tmu held): back to back while a
 * demanded HW moved within MIRROR_W_POLL_BURST_MS, else the next pause. */
static void lane_pace(struct mirror_lane *ln, bool moved)
{
	int64_t now = mirror_now_ms();
	if (moved || ln->still_since_ms < 0) {
		ln->still_since_ms = now;
		ln->pause_ms = 0;
	} else {
		ln->pause_ms = mirror_lane_pause_ms(now - ln->still_since_ms, ln->pause_ms, ln->w->poll_ms);
	}
	ln->pace_us = ln->pause_ms ? mirror_worker_now_us() + ln->pause_ms * 1000 : 0;
}

struct lane_item {
	struct mirror_wref ref;
	const char *src, *dst; /* topic names (stable while the worker runs) */
	int64_t bg_hw;      /* background: source HW sampled before, -1 */
	int64_t dst_hw;     /* the destination HW: read by this request, or the tail's (no request) */
	bool tail;          /* dst_hw from the tail's fetch: it may not confirm */
	bool demanded;      /* a held response waited on it when the request was made */
	bool unchanged;     /* demanded only, and dst_hw is the progress already confirmed:
			     * nothing to report, no source read */
	int64_t acked_hw;   /* a demanded read or the tail's (not the background's): dst_hw
			     * is at or below this source HW the source's acks=all answer
			     * vouched for — no source read, it stands for the sample
			     * after (diverged.c); -1 */
	rd_kafka_resp_err_t dst_err, src_err;
	int64_t src_hw;     /* source HW sampled after dst_hw was read */
};

/* Still the confirmed progress it was when the source read was skipped. */
static bool d_unchanged(const struct mirror_wpart *wp, const struct lane_item *x)
{
	return x->dst_hw == wp->progress && wp->confirmed && !wp->diverged && !wp->failing;
}

/* Apply one answer (tmu held): report what changed, queue what still waits.
 * A destination HW is reported only with the source HW sampled after it,
 * and only when it is not above it (diverged.c). *moved: a demanded
 * partition's destination HW is not the progress read before. */
static bool lane_apply(struct mirror_lane *ln, const struct lane_item *it, size_t n, uint64_t seq,
		       int64_t read_us, const struct mirror_wsample *when, bool *moved)
{
	struct mirror_worker *w = ln->w;
	int64_t now = mirror_now_ms();
	bool failed = false;
	*moved = false;
	for (size_t j = 0; j < n; j++) {
		struct mirror_wtopic *t = &w->topics[it[j].ref.topic];
		int32_t p = it[j].ref.partition;
		struct mirror_wpart *wp = &t->parts[p];
		rd_kafka_resp_err_t perr = it[j].dst_err;
		if (!perr && it[j].dst_hw < 0)
			perr = RD_KAFKA_RESP_ERR__NO_OFFSET;
		if (perr) {
			mirror_worker_report(w, t, p, -1, -1, -1, -1, rd_kafka_err2name(perr));
			wp->failing = failed = true;
		} else if (it[j].unchanged && d_unchanged(wp, &it[j])) {
			/* confirmed before, not moved: nothing to report */
		} else {
			int64_t d = it[j].dst_hw;
			*moved |= it[j].demanded && d != wp->progress;
			bool was_ok = wp->confirmed && !wp->diverged;
			bool gone = mirror_source_gone(it[j].src_err);
			if (it[j].acked_hw < 0 && (it[j].src_err ? !gone : it[j].src_hw < 0)) {
				failed = true; /* no source sample after it: nothing to report, ask again */
			} else {
				struct mirror_wsample smp = {gone ? -1 : it[j].src_hw, when->sent_us, when->done_us};
				if (it[j].acked_hw >= 0) /* vouched for before this read: no "went back" test */
					smp = (struct mirror_wsample){it[j].acked_hw, 0, 0};
				if (mirror_check_diverged(w, t, p, d, &smp, it[j].tail ? 0 : seq)) {
					failed = true; /* reported; asked again after poll_interval_ms */
				} else if (d != wp->progress || wp->failing || it[j].bg_hw >= 0 || it[j].tail || !was_ok) {
					/* background: always reported (the gate may have forgotten its
					 * sample); demanded: when it moved */
					struct mirror_wread rd = {.progress = d, .source_hw = it[j].bg_hw,
								  .source_after = smp.hw, .read_us = read_us};
					mirror_worker_report_read(w, t, p, &rd);
				}
			}
			wp->progress = d;
			wp->failing = false;
		}
		if (demand_pending(w, wp, now))
			mirror_lane_enqueue(w, it[j].ref.topic, p); /* back to back */
	}
	return failed;
}

/* ListOffsets(END) through rk of the items to read — dst: those whose
 * destination HW is not known yet; else (the source) those with one — the
 * answers in dst_hw/dst_err or src_hw/src_err. tmu NOT held. The request's
 * error in *err; false when nothing was asked. */
static bool lane_list(rd_kafka_t *rk, struct lane_item *it, size_t n, bool dst, int timeout,
		      rd_kafka_resp_err_t *err)
{
	*err = RD_KAFKA_RESP_ERR_NO_ERROR;
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)(n ? n : 1));
	size_t *idx = malloc((n ? n : 1) * sizeof(*idx));
	size_t k = 0;
	for (size_t j = 0; l && idx && j < n; j++) {
		if (dst ? it[j].dst_hw >= 0
			: it[j].dst_err || it[j].dst_hw < 0 || it[j].unchanged || it[j].acked_hw >= 0)
			continue; /* dst: known (the tail's); src: no destination HW to confirm, or vouched for */
		rd_kafka_topic_partition_list_add(l, dst ? it[j].dst : it[j].src, it[j].ref.partition)->offset =
			RD_KAFKA_OFFSET_END;
		idx[k++] = j;
	}
	if (!l || !idx) {
		for (size_t j = 0; j < n; j++)
			*(dst ? &it[j].dst_err : &it[j].src_err) = RD_KAFKA_RESP_ERR__NO_OFFSET;
	} else if (k > 0) {
		*err = rd_kafka_offsets_for_times(rk, l, timeout);
		for (size_t m = 0; m < k; m++) {
			struct lane_item *x = &it[idx[m]];
			rd_kafka_resp_err_t e = *err ? *err : l->elems[m].err;
			*(dst ? &x->dst_err : &x->src_err) = e;
			*(dst ? &x->dst_hw : &x->src_hw) = e ? -1 : l->elems[m].offset;
		}
	}
	if (l)
		rd_kafka_topic_partition_list_destroy(l);
	free(idx);
	return k > 0;
}

static void *lane_main(void *arg)
{
	struct mirror_lane *ln = arg;
	struct mirror_worker *w = ln->w;
	struct mirror_wref *work = NULL;
	size_t capwork = 0;
	struct lane_item *it = NULL;
	size_t capit = 0;
	pthread_mutex_lock(&w->tmu);
	while (!w->halt) {
		int64_t now = mirror_now_ms();
		if (ln->nq == 0) {
			lane_sleep(ln, -1);
			continue;
		}
		if (now < ln->retry_ms) {
			lane_sleep(ln, ln->retry_ms * 1000);
			continue;
		}
		if (ln->pace_us && mirror_worker_now_us() < ln->pace_us) {
			lane_sleep(ln, ln->pace_us); /* nothing moved lately: not back to back */
			continue;
		}
		/* take the queue: what is queued from now on goes into the next request */
		struct mirror_wref *q = ln->q;
		size_t nwork = ln->nq, capq = ln->capq;
		ln->q = work;
		ln->capq = capwork;
		ln->nq = 0;
		work = q;
		capwork = capq;
		if (capit < nwork) {
			struct lane_item *a = realloc(it, nwork * sizeof(*a));
			if (!a)
				break;
			it = a;
			capit = nwork;
		}
		size_t n = 0, nbg = 0, ndem = 0;
		for (size_t i = 0; i < nwork; i++) {
			struct mirror_wtopic *t = &w->topics[work[i].topic];
			struct mirror_wpart *wp = &t->parts[work[i].partition];
			wp->queued = false;
			if (lane_for(w, wp->leader) != ln) { /* the leader moved */
				mirror_lane_enqueue(w, work[i].topic, work[i].partition);
				continue;
			}
			bool demanded = demand_pending(w, wp, now);
			if (!demanded && w->progress == CONF_PROGRESS_POLL)
				wp->need = wp->until_ms = -1; /* satisfied or expired */
			if (!demanded && wp->bg_hw < 0 && wp->tail_check < 0)
				continue;
			bool read = demanded || wp->bg_hw >= 0; /* else: the tail's HW, confirmed only */
			if (!demanded && wp->bg_hw >= 0 && nbg >= MIRROR_W_BG_CHUNK) {
				mirror_lane_enqueue(w, work[i].topic, work[i].partition);
				continue;
			}
			nbg += !demanded && read;
			ndem += demanded;
			it[n] = (struct lane_item){.ref = work[i], .src = t->topic, .dst = t->dst, .bg_hw = wp->bg_hw,
						   .dst_hw = read ? -1 : wp->tail_check, .tail = !read, .src_hw = -1,
						   .acked_hw = -1, .demanded = demanded};
			wp->bg_hw = wp->tail_check = -1;
			n++;
		}
		if (n == 0)
			continue;
		uint64_t seq = ++w->read_seq; /* a suspicion from now on: this read may not confirm */
		int timeout = now < ln->slow_until_ms ? MIRROR_W_SLOW_RPC_MS : MIRROR_W_LIST_MS;
		pthread_mutex_unlock(&w->tmu);
		/* the destination first, then the source: the source's HW is sampled
		 * after the destination's was read (diverged.c) */
		rd_kafka_resp_err_t err, serr;
		bool asked = lane_list(w->dst, it, n, true, timeout, &err);
		int64_t read_us = mirror_worker_now_us();
		/* a held partition whose destination did not move needs no source
		 * read: the poll cycle stays one destination round trip; nor one
		 * whose destination HW is at or below what the source's acks=all
		 * answer vouched for (source HWs never go back unless the partition
		 * was recreated or truncated — then its new answers vouch for less
		 * and the read happens): a release stays one round trip */
		pthread_mutex_lock(&w->tmu);
		for (size_t j = 0; j < n; j++) {
			const struct mirror_wpart *wp = &w->topics[it[j].ref.topic].parts[it[j].ref.partition];
			/* a demanded read or the tail's (not the background's); and only
			 * while confirmed: a suspect or diverged partition waits for a
			 * fresh source sample (diverged.c) */
			bool answered = it[j].bg_hw < 0 && !it[j].dst_err && it[j].dst_hw >= 0;
			bool healthy = wp->confirmed && !wp->diverged && !wp->failing;
			it[j].unchanged = answered && !it[j].tail && it[j].dst_hw == wp->progress && healthy;
			if (answered && healthy && !it[j].unchanged && wp->src_acked >= 0 && it[j].dst_hw <= wp->src_acked)
				it[j].acked_hw = wp->src_acked;
		}
		/* the vouched-for reads are reported now, not after the source read
		 * the others of this request need (a slow source would hold a
		 * release it has nothing to do with); the rest stay in it[0..n) */
		bool early_failed = false, early_moved = false;
		size_t nv = 0;
		for (size_t j = 0; j < n; j++)
			nv += it[j].acked_hw >= 0;
		struct lane_item *v = nv > 0 && nv < n ? malloc(nv * sizeof(*v)) : NULL; /* NULL: all after */
		if (v) {
			size_t a = 0, b = 0;
			for (size_t j = 0; j < n; j++) /* split, keeping each side's order */
				if (it[j].acked_hw >= 0)
					v[a++] = it[j];
				else
					it[b++] = it[j];
			struct mirror_wsample none = {.sent_us = read_us, .done_us = read_us};
			early_failed = lane_apply(ln, v, nv, seq, read_us, &none, &early_moved);
			free(v);
			n = b;
		}
		pthread_mutex_unlock(&w->tmu);
		struct mirror_wsample when = {.sent_us = read_us};
		bool asked_source = lane_list(w->src, it, n, false, MIRROR_W_LIST_MS, &serr);
		when.done_us = mirror_worker_now_us();
		pthread_mutex_lock(&w->tmu);
		if (asked_source)
			metric_add(ln->m_source, 1);
		if (serr && serr != RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC)
			LOG_D("mirror_source_offsets_failed", "mirror=%s leader=%d reason=\"%s\"", w->name,
			      (int)ln->leader, rd_kafka_err2name(serr));
		if (asked) {
			ln->requests++;
			metric_add(ln->m_requests[ndem ? 0 : 1], 1);
			LOG_D("mirror_list_offsets", "mirror=%s leader=%d partitions=%zu background=%zu result=%s",
			      w->name, (int)ln->leader, n, nbg, rd_kafka_err2name(err));
		}
		if (err == RD_KAFKA_RESP_ERR__TIMED_OUT)
			ln->slow_until_ms = mirror_now_ms() + MIRROR_W_SLOW_MS;
		bool moved;
		if (lane_apply(ln, it, n, seq, read_us, &when, &moved) || early_failed)
			ln->retry_ms = mirror_now_ms() + w->poll_ms;
		moved |= early_moved;
		if (ndem)
			lane_pace(ln, moved);
		else
			ln->still_since_ms = -1; /* no demand: the next starts back to back */
	}
	pthread_mutex_unlock(&w->tmu);
	free(work);
	free(it);
	return NULL;
}

void mirror_lanes_join(struct mirror_worker *w)
{
	pthread_mutex_lock(&w->tmu);
	size_t n = w->nlanes;
	for (size_t i = 0; i < n; i++)
		pthread_cond_signal(&w->lanes[i]->cv);
	pthread_mutex_unlock(&w->tmu);
	/* every lane ends before any is freed: a lane back from its call still
	 * walks w->lanes (lane_apply -> mirror_lane_enqueue) before it sees halt */
	for (size_t i = 0; i < n; i++)
		pthread_join(w->lanes[i]->th, NULL);
	for (size_t i = 0; i < n; i++) {
		struct mirror_lane *ln = w->lanes[i];
		LOG_D("mirror_lane_stopped", "mirror=%s leader=%d requests=%llu", w->name, (int)ln->leader,
		      (unsigned long long)ln->requests);
		pthread_cond_destroy(&ln->cv);
		free(ln->q);
		free(ln);
	}
	w->nlanes = 0;
}
