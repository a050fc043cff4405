/*
 * mm2_match.c — the match thread of an `offsets: mm2` worker
 * (mirror/mm2_match.h; docs/operating.md "MirrorMaker 2"). MirrorMaker 2
 * writes an offset-sync only now and then (offset.lag.max, and its sync
 * emission falls behind during bursts), so progress taken from the syncs
 * alone leaves the tail of a burst held long after the destination has it.
 *
 * For each partition whose progress lags (source HW or a held record past
 * it), this thread reads the source partition from the anchor's source
 * offset + 1 and the destination partition from its destination offset + 1
 * (the anchor: the newest offset-sync, or the newest pair this thread
 * proved), fingerprints every record and matches the two in order
 * (mirror_mm2_match). A matched source record S at destination offset D is
 * reported as progress S + 1, and (S, D) joins the partition's kept syncs
 * (the translation of committed offsets). Sound because:
 *   - the destination consumer is read_committed: it returns only records
 *     below the last stable offset, so below the high watermark (in the
 *     destination's ISR) and of no open or aborted transaction;
 *   - the source consumer reads up to the source HW: only records the
 *     source's ISR has, and every data record in order (control batches
 *     are not records; compaction only leaves fewer);
 *   - a destination record that is neither the next source record nor a
 *     re-copy of a matched one stops the match (another writer, a record
 *     MM2 skipped, a re-copy from before the anchor): nothing is proved
 *     past it until a newer offset-sync gives a new anchor.
 * Memory: 24 bytes per record read and not yet matched, at most MATCH_CAP
 * per side per partition (the partition is paused beyond), MATCH_KEEP
 * matched source records kept for telling re-copies, MATCH_MAX_PARTS
 * partitions at once. Its own two librdkafka consumers; w->tmu only around
 * the table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mirror/mm2_match.h"
#include "mirror/worker.h"

#define MATCH_POLL_MS 20       /* destination poll: how soon a new lag or the halt is seen */
#define MATCH_BATCH 1024       /* messages taken per poll and side */
#define MATCH_MAX_PARTS 64     /* partitions matched at once */
#define MATCH_CAP 16384        /* unmatched records per side before the partition is paused */
#define MATCH_KEEP 4096        /* matched source records kept to tell re-copies */
#define MATCH_IDLE_MS 60000    /* a partition without lag this long is dropped */

struct mpart {
	uint32_t ti;
	int32_t p;
	const char *src_topic, *dst_topic; /* stable while the worker runs */
	int64_t up, down;             /* the anchor */
	struct mirror_mrec *src, *dst;
	size_t ns, nd, caps, capd, si, di;
	int64_t src_next, dst_next;   /* a delivery below: read again (after a seek), dropped */
	enum mirror_match_stop stop;  /* GAP / FOREIGN: stuck until a newer anchor */
	int64_t active_ms;
	bool src_paused, dst_paused;
};

struct mstate {
	struct mirror_worker *w;
	struct metric *m_records[2]; /* syncgate_mirror_mm2_match_records_total: proved, ahead */
	struct metric *m_stops[MIRROR_MATCH_STOP_COUNT]; /* ..._stops_total by reason ([MORE] unused) */
	rd_kafka_t *src, *dst;
	struct mpart *parts;
	size_t n;
	bool reassign;
};

static void part_reset(struct mpart *mp, int64_t up, int64_t down)
{
	mp->up = up;
	mp->down = down;
	mp->ns = mp->nd = mp->si = mp->di = 0;
	mp->src_next = up + 1;
	mp->dst_next = down + 1;
	mp->stop = MIRROR_MATCH_MORE;
	mp->src_paused = mp->dst_paused = false;
}

/* The partitions to match, as of the table now (tmu held). */
static void select_parts(struct mstate *st, int64_t now)
{
	struct mirror_worker *w = st->w;
	for (size_t i = 0; i < st->n; i++) {
		struct mpart *mp = &st->parts[i];
		struct mirror_wpart *wp = &w->topics[mp->ti].parts[mp->p];
		int64_t prog = mirror_wpart_mm2_up(wp) + 1;
		if (wp->src_hw > prog || (wp->need >= prog && wp->until_ms > now))
			mp->active_ms = now;
		if (mp->stop != MIRROR_MATCH_MORE && wp->mm2_up > (wp->mm2_proved_up > mp->up ? wp->mm2_proved_up : mp->up)) {
			/* stuck, and MM2 wrote a sync past where the match stopped: a new anchor */
			part_reset(mp, wp->mm2_up, wp->mm2_down);
			st->reassign = true;
		}
		if (now - mp->active_ms > MATCH_IDLE_MS) {
			free(mp->src);
			free(mp->dst);
			st->parts[i--] = st->parts[--st->n];
			st->reassign = true;
		}
	}
	for (size_t ti = 0; ti < w->ntopics && st->n < MATCH_MAX_PARTS; ti++) {
		struct mirror_wtopic *t = &w->topics[ti];
		for (int32_t p = 0; p < t->npart && p < t->npart_alloc && st->n < MATCH_MAX_PARTS; p++) {
			struct mirror_wpart *wp = &t->parts[p];
			int64_t prog = mirror_wpart_mm2_up(wp) + 1;
			if (wp->mm2_up < 0 || !(wp->src_hw > prog || (wp->need >= prog && wp->until_ms > now)))
				continue; /* no anchor yet, or no lag */
			bool known = false;
			for (size_t i = 0; i < st->n && !known; i++)
				known = st->parts[i].ti == ti && st->parts[i].p == p;
			if (known)
				continue;
			struct mpart *mp = &st->parts[st->n++];
			memset(mp, 0, sizeof(*mp));
			mp->ti = (uint32_t)ti;
			mp->p = p;
			mp->src_topic = t->topic;
			mp->dst_topic = t->dst;
			mp->active_ms = now;
			if (wp->mm2_proved_up > wp->mm2_up)
				part_reset(mp, wp->mm2_proved_up, wp->mm2_proved_down);
			else
				part_reset(mp, wp->mm2_up, wp->mm2_down);
			st->reassign = true;
		}
	}
}

static void assign_side(struct mstate *st, rd_kafka_t *rk, bool src)
{
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)(st->n ? st->n : 1));
	for (size_t i = 0; i < st->n; i++) {
		struct mpart *mp = &st->parts[i];
		rd_kafka_topic_partition_list_add(l, src ? mp->src_topic : mp->dst_topic, mp->p)->offset =
			src ? mp->src_next : mp->dst_next;
	}
	rd_kafka_resp_err_t err = rd_kafka_assign(rk, l);
	if (err)
		LOG_W("mirror_mm2_match_assign_failed", "mirror=%s side=%s reason=\"%s\"", st->w->name,
		      src ? "source" : "destination", rd_kafka_err2name(err));
	rd_kafka_topic_partition_list_destroy(l);
}

static void pause_one(struct mstate *st, struct mpart *mp, bool src, bool pause)
{
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(l, src ? mp->src_topic : mp->dst_topic, mp->p);
	if (pause)
		rd_kafka_pause_partitions(src ? st->src : st->dst, l);
	else
		rd_kafka_resume_partitions(src ? st->src : st->dst, l);
	rd_kafka_topic_partition_list_destroy(l);
	*(src ? &mp->src_paused : &mp->dst_paused) = pause;
}

static int append(struct mirror_mrec **a, size_t *n, size_t *cap, const rd_kafka_message_t *m)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 256;
		struct mirror_mrec *x = realloc(*a, nc * sizeof(*x));
		if (!x)
			return -1;
		*a = x;
		*cap = nc;
	}
	(*a)[*n].offset = m->offset;
	if (mirror_mm2_fingerprint(m, (*a)[*n].fp) != 0)
		return -1;
	(*n)++;
	return 0;
}

/* Messages of one side into their partitions. */
static void take(struct mstate *st, rd_kafka_t *rk, bool src, int first_ms)
{
	for (int k = 0; k < MATCH_BATCH; k++) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, k == 0 ? first_ms : 0);
		if (!m)
			return;
		if (!m->err && m->rkt) {
			const char *topic = rd_kafka_topic_name(m->rkt);
			for (size_t i = 0; i < st->n; i++) {
				struct mpart *mp = &st->parts[i];
				if (mp->p != m->partition || strcmp(src ? mp->src_topic : mp->dst_topic, topic) != 0)
					continue;
				int64_t *next = src ? &mp->src_next : &mp->dst_next;
				if (m->offset < *next || mp->stop != MIRROR_MATCH_MORE)
					break;
				if (src ? append(&mp->src, &mp->ns, &mp->caps, m) : append(&mp->dst, &mp->nd, &mp->capd, m)) {
					mp->stop = MIRROR_MATCH_FOREIGN; /* ENOMEM: stop proving here (fail safe) */
					LOG_W("mirror_mm2_match_stopped", "mirror=%s topic=%s partition=%d reason=\"out of "
					      "memory\"", st->w->name, mp->src_topic, (int)mp->p);
					break;
				}
				*next = m->offset + 1;
				break;
			}
		} else if (m->err && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
			LOG_D("mirror_mm2_match_error", "mirror=%s side=%s reason=\"%s\"", st->w->name,
			      src ? "source" : "destination", rd_kafka_err2name(m->err));
		}
		rd_kafka_message_destroy(m);
	}
}

/* Match one partition; report what it proved (tmu taken here). */
static void match_one(struct mstate *st, struct mpart *mp)
{
	struct mirror_worker *w = st->w;
	size_t si0 = mp->si, *at = NULL;
	if (mp->stop == MIRROR_MATCH_MORE) {
		at = mp->ns > mp->si ? malloc(mp->ns * sizeof(*at)) : NULL; /* NULL: the last pair only */
		mp->stop = mirror_mm2_match(mp->src, mp->ns, mp->dst, mp->nd, &mp->si, &mp->di, MATCH_KEEP, at);
		if (mp->stop != MIRROR_MATCH_MORE) {
			metric_add(st->m_stops[mp->stop], 1);
			LOG_I("mirror_mm2_match_stopped", "mirror=%s topic=%s partition=%d reason=%s destination_offset=%lld "
			      "proved_upstream=%lld detail=\"a destination record is %s; progress waits for the next "
			      "offset-sync\"", w->name, mp->src_topic, (int)mp->p, mirror_match_stop_str(mp->stop),
			      (long long)mp->dst[mp->di].offset,
			      (long long)(mp->si ? mp->src[mp->si - 1].offset : mp->up),
			      mp->stop == MIRROR_MATCH_GAP ? "a later source record (one between is not on the destination)"
							   : "no source record read since the anchor (another writer, or "
							     "a re-copy from before it)");
			if (!mp->src_paused)
				pause_one(st, mp, true, true);
			if (!mp->dst_paused)
				pause_one(st, mp, false, true);
		}
	}
	if (mp->si > si0) {
		int64_t s = mp->src[mp->si - 1].offset, d = mp->dst[mp->di - 1].offset;
		metric_add(st->m_records[0], mp->si - si0);
		pthread_mutex_lock(&w->tmu);
		struct mirror_wtopic *t = &w->topics[mp->ti];
		struct mirror_wpart *wp = &t->parts[mp->p];
		if (s > wp->mm2_proved_up) {
			int64_t before = mirror_wpart_mm2_up(wp);
			bool ahead = s > before;
			wp->mm2_proved_up = s;
			wp->mm2_proved_down = d;
			if (!wp->mm2_syncs)
				wp->mm2_syncs = calloc(MIRROR_W_MM2_SYNCS, sizeof(*wp->mm2_syncs));
			if (wp->mm2_syncs)
				mirror_mm2_keep(wp->mm2_syncs, &wp->mm2_nsyncs, (struct mirror_wsync){s, d});
			if (!wp->mm2_recent)
				wp->mm2_recent = calloc(MIRROR_W_MM2_RECENT, sizeof(*wp->mm2_recent));
			for (size_t k = si0; at && wp->mm2_recent && k < mp->si; k++) { /* every proved record */
				wp->mm2_recent[wp->mm2_recent_at] = (struct mirror_wsync){mp->src[k].offset,
											    mp->dst[at[k]].offset};
				wp->mm2_recent_at = (wp->mm2_recent_at + 1) % MIRROR_W_MM2_RECENT;
				if (wp->mm2_nrecent < MIRROR_W_MM2_RECENT)
					wp->mm2_nrecent++;
			}
			if (ahead) {
				metric_add(st->m_records[1], (uint64_t)(s - before));
				wp->progress = s + 1;
				mirror_worker_report(w, t, mp->p, s + 1, -1, -1, -1, NULL);
			}
		}
		pthread_mutex_unlock(&w->tmu);
	}
	free(at);
	/* forget what is matched (keeping MATCH_KEEP source records for re-copies) */
	if (mp->di > 0) {
		memmove(mp->dst, mp->dst + mp->di, (mp->nd - mp->di) * sizeof(*mp->dst));
		mp->nd -= mp->di;
		mp->di = 0;
	}
	if (mp->si > 2 * MATCH_KEEP) {
		size_t drop = mp->si - MATCH_KEEP;
		memmove(mp->src, mp->src + drop, (mp->ns - drop) * sizeof(*mp->src));
		mp->ns -= drop;
		mp->si -= drop;
	}
	if (mp->stop != MIRROR_MATCH_MORE)
		return;
	/* bounded: a side far ahead of the other waits */
	bool src_full = mp->ns - mp->si > MATCH_CAP, dst_full = mp->nd > MATCH_CAP;
	if (src_full != mp->src_paused && (src_full || mp->ns - mp->si <= MATCH_CAP / 2))
		pause_one(st, mp, true, src_full);
	if (dst_full != mp->dst_paused && (dst_full || mp->nd <= MATCH_CAP / 2))
		pause_one(st, mp, false, dst_full);
}

void *mirror_mm2_match_main(void *arg)
{
	struct mirror_worker *w = arg;
	struct mstate st = { .w = w };
	char errstr[512];
	char m[160], prefix[200];
	static const char *const kinds[2] = { "proved", "ahead" };
	static const char *const reasons[2] = { "gap", "foreign" };
	mirror_label_escape(m, sizeof(m), w->name);
	snprintf(prefix, sizeof(prefix), "mirror=\"%s\"", m);
	metric_family_get(METRIC_COUNTER, "syncgate_mirror_mm2_match_records_total",
			  "offsets mm2: source records proved on the destination by matching records; kind "
			  "ahead: offsets proved past the newest offset-sync (acks released sooner)",
			  prefix, "kind", kinds, 2, st.m_records);
	metric_family_get(METRIC_COUNTER, "syncgate_mirror_mm2_match_stops_total",
			  "offsets mm2: record matches stopped until the next offset-sync; reason gap: a source "
			  "record is not on the destination, foreign: a destination record is no source record",
			  prefix, "reason", reasons, 2, st.m_stops + 1);
	st.parts = calloc(MATCH_MAX_PARTS, sizeof(*st.parts));
	st.src = rd_kafka_new(RD_KAFKA_CONSUMER, w->match_src_conf, errstr, sizeof(errstr));
	if (st.src)
		w->match_src_conf = NULL;
	st.dst = rd_kafka_new(RD_KAFKA_CONSUMER, w->match_dst_conf, errstr, sizeof(errstr));
	if (st.dst)
		w->match_dst_conf = NULL;
	if (!st.parts || !st.src || !st.dst) {
		LOG_E("mirror_client_failed", "mirror=%s side=mm2-match reason=\"%s\"", w->name,
		      st.parts ? errstr : "out of memory");
		goto out; /* progress comes from the offset-syncs alone */
	}
	for (;;) {
		int64_t now = mirror_now_ms();
		pthread_mutex_lock(&w->tmu);
		bool halt = w->halt;
		if (!halt)
			select_parts(&st, now);
		pthread_mutex_unlock(&w->tmu);
		if (halt)
			break;
		if (st.reassign) { /* a new assignment: nothing paused */
			st.reassign = false;
			assign_side(&st, st.src, true);
			assign_side(&st, st.dst, false);
			for (size_t i = 0; i < st.n; i++) {
				struct mpart *mp = &st.parts[i];
				mp->src_paused = mp->dst_paused = false;
				if (mp->stop != MIRROR_MATCH_MORE) { /* stuck: nothing to read until a new anchor */
					pause_one(&st, mp, true, true);
					pause_one(&st, mp, false, true);
				}
			}
		}
		take(&st, st.src, true, 0);
		take(&st, st.dst, false, MATCH_POLL_MS);
		take(&st, st.src, true, 0); /* what reached the source meanwhile */
		for (size_t i = 0; i < st.n; i++)
			match_one(&st, &st.parts[i]);
	}
out:
	for (size_t i = 0; st.parts && i < st.n; i++) {
		free(st.parts[i].src);
		free(st.parts[i].dst);
	}
	free(st.parts);
	if (st.src) {
		rd_kafka_consumer_close(st.src);
		rd_kafka_destroy(st.src);
	}
	if (st.dst) {
		rd_kafka_consumer_close(st.dst);
		rd_kafka_destroy(st.dst);
	}
	return NULL;
}
