/*
 * progress.c — what the worker asks the clusters besides the lanes' polls
 * (lane.c) and the consumers (tail.c, mm2.c):
 *   - source topic listing (Metadata, all topics) matched against sync_topics
 *     (main thread);
 *   - the background round (main thread): source HW of every partition, then
 *     destination progress of the partitions whose HW is ahead of it, through
 *     their leaders' lanes (sampled after the HW, so lag = HW − progress never
 *     undercounts); a partition at lag zero costs the destination nothing
 *     (its last progress, at the HW, is reported with it) but every
 *     MIRROR_W_SWEEP_MS, when all are read (a destination written to by
 *     someone else is seen ahead of its source: diverged.c);
 *   - destination ISR size and leaders (Metadata of the locally known
 *     destination topics, one request) and min.insync.replicas
 *     (DescribeConfigs, one batched request, asynchronous: the effective
 *     value, i.e. the topic override or else the broker default), reported
 *     capped by the partition's replication factor as the broker applies it
 *     (mirror_effective_min_isr) — the isr thread, every MIRROR_W_ISR_MS, so
 *     neither waits behind progress nor progress behind them;
 *   - `mm2`: whether the destination runs ahead of the offset-syncs
 *     (mm2_check_syncs: MirrorMaker 2's offset.lag.max too high).
 * High watermarks come from rd_kafka_offsets_for_times(RD_KAFKA_OFFSET_END)
 * (isolation.level=read_uncommitted: the HW, not the LSO). Destination HW >
 * offset ⇔ every destination ISR replica has it.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mirror/worker.h"

#define BATCH 256 /* partitions handled per hold of tmu (the loop's demands wait for it) */

static const char *errname(rd_kafka_resp_err_t e)
{
	return rd_kafka_err2name(e);
}

bool mirror_refresh_topics(struct mirror_worker *w)
{
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_resp_err_t err = rd_kafka_metadata(w->src, 1, NULL, &md, MIRROR_W_RPC_MS);
	if (err) {
		LOG_W("mirror_source_metadata_failed", "mirror=%s reason=\"%s\"", w->name, errname(err));
		return false;
	}
	mirror_route_learn(md);
	pthread_mutex_lock(&w->tmu);
	for (int i = 0; i < md->topic_cnt; i++) {
		const struct rd_kafka_metadata_topic *mt = &md->topics[i];
		if (w->mm2_topic && strcmp(mt->topic, w->mm2_topic) == 0 && !mt->err) {
			if (mt->partition_cnt != w->mm2_nparts) {
				w->mm2_nparts = mt->partition_cnt;
				w->reassign = true;
			}
			continue;
		}
		if (mt->err)
			continue;
		struct mirror_wtopic *t = mirror_worker_topic(w, mt->topic, false);
		if (!t && conf_topic_regexes_match(w->re, w->nre, mt->topic)) {
			t = mirror_worker_topic(w, mt->topic, true);
			if (t)
				LOG_I("mirror_topic_tracked", "mirror=%s topic=%s destination_topic=%s partitions=%d",
				      w->name, t->topic, t->dst, mt->partition_cnt);
		}
		if (t && t->npart != mt->partition_cnt) {
			t->npart = mt->partition_cnt;
			mirror_wtopic_part(t, t->npart - 1); /* allocate */
			w->reassign = w->isr_now = true;
			pthread_cond_signal(&w->isr_cv);
		}
	}
	if (w->mm2_topic && w->mm2_nparts < 0)
		LOG_W("mirror_mm2_offset_syncs_missing", "mirror=%s topic=%s reason=\"not on the source cluster\"",
		      w->name, w->mm2_topic);
	pthread_mutex_unlock(&w->tmu);
	rd_kafka_metadata_destroy(md);
	return true;
}

/* ---- isr thread ------------------------------------------------------- */

static void configs_give_up(struct mirror_worker *w, const char *why)
{
	LOG_W("mirror_describe_configs_failed", "mirror=%s reason=\"%s; min.insync.replicas unknown, retry in 30 s\"",
	      w->name, why);
	rd_kafka_queue_destroy(w->cfgq);
	w->cfgq = NULL;
	w->describe_after_ms = mirror_now_ms() + 30000;
}

/* The DescribeConfigs answer, if it came: min.insync.replicas per topic. */
static void configs_collect(struct mirror_worker *w, int64_t deadline_ms)
{
	if (!w->cfgq)
		return;
	rd_kafka_event_t *ev = rd_kafka_queue_poll(w->cfgq, MIRROR_W_CFG_WAIT_MS);
	if (!ev) {
		if (mirror_now_ms() > deadline_ms)
			configs_give_up(w, "timed out");
		return;
	}
	const rd_kafka_DescribeConfigs_result_t *r = rd_kafka_event_DescribeConfigs_result(ev);
	if (rd_kafka_event_error(ev) || !r) {
		configs_give_up(w, rd_kafka_event_error_string(ev));
		rd_kafka_event_destroy(ev);
		return;
	}
	size_t cnt;
	const rd_kafka_ConfigResource_t **rs = rd_kafka_DescribeConfigs_result_resources(r, &cnt);
	pthread_mutex_lock(&w->tmu);
	for (size_t k = 0; k < cnt; k++) {
		if (rd_kafka_ConfigResource_error(rs[k]))
			continue;
		const char *name = rd_kafka_ConfigResource_name(rs[k]);
		size_t ne;
		const rd_kafka_ConfigEntry_t **es = rd_kafka_ConfigResource_configs(rs[k], &ne);
		for (size_t e = 0; e < ne; e++) {
			if (strcmp(rd_kafka_ConfigEntry_name(es[e]), "min.insync.replicas") != 0 ||
			    !rd_kafka_ConfigEntry_value(es[e]))
				continue;
			int32_t v = (int32_t)atoi(rd_kafka_ConfigEntry_value(es[e]));
			for (size_t i = 0; i < w->ntopics; i++)
				if (strcmp(w->topics[i].dst, name) == 0)
					w->topics[i].min_isr = v;
		}
	}
	pthread_mutex_unlock(&w->tmu);
	rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(w->cfgq);
	w->cfgq = NULL;
	w->describe_after_ms = 0;
}

/* Send DescribeConfigs of every destination topic; the answer is collected
 * later (configs_collect), so the ISR Metadata never waits for it. */
static void configs_request(struct mirror_worker *w)
{
	if (w->cfgq || mirror_now_ms() < w->describe_after_ms)
		return;
	pthread_mutex_lock(&w->tmu);
	size_t n = w->ntopics;
	rd_kafka_ConfigResource_t **res = calloc(n ? n : 1, sizeof(*res));
	for (size_t i = 0; res && i < n; i++)
		res[i] = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, w->topics[i].dst);
	pthread_mutex_unlock(&w->tmu);
	rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(w->dst, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
	char errstr[256];
	if (res && n && opt) {
		w->cfgq = rd_kafka_queue_new(w->dst);
		rd_kafka_AdminOptions_set_request_timeout(opt, MIRROR_W_RPC_MS, errstr, sizeof(errstr));
		rd_kafka_DescribeConfigs(w->dst, res, n, opt, w->cfgq);
	}
	for (size_t i = 0; res && i < n; i++)
		if (res[i])
			rd_kafka_ConfigResource_destroy(res[i]);
	free(res);
	if (opt)
		rd_kafka_AdminOptions_destroy(opt);
}

/* Destination ISR and leader of every tracked partition, reported when they
 * (or min.insync.replicas) change; a moved leader's demanded partitions go
 * to their new lane. */
static void refresh_isr(struct mirror_worker *w)
{
	int64_t cfg_deadline = mirror_now_ms() + MIRROR_W_RPC_MS + 1000;
	configs_request(w);
	const struct rd_kafka_metadata *md = NULL;
	/* all_topics=0: the locally known topics, i.e. our destination topics. */
	rd_kafka_resp_err_t err = rd_kafka_metadata(w->dst, 0, NULL, &md, MIRROR_W_RPC_MS);
	configs_collect(w, cfg_deadline);
	pthread_mutex_lock(&w->tmu);
	int64_t now = mirror_now_ms();
	for (size_t i = 0; i < w->ntopics; i++) {
		struct mirror_wtopic *t = &w->topics[i];
		const struct rd_kafka_metadata_topic *mt = NULL;
		for (int k = 0; !err && k < md->topic_cnt; k++)
			if (strcmp(md->topics[k].topic, t->dst) == 0)
				mt = &md->topics[k];
		int32_t np = t->npart > 0 ? t->npart : (mt ? mt->partition_cnt : 0);
		if (np > t->npart_alloc)
			np = t->npart_alloc; /* the main thread sizes the table */
		for (int32_t p = 0; p < np; p++) {
			if (p % BATCH == BATCH - 1) { /* let the loop's demands in; the table may grow */
				pthread_mutex_unlock(&w->tmu);
				pthread_mutex_lock(&w->tmu);
				t = &w->topics[i];
			}
			struct mirror_wpart *wp = &t->parts[p];
			const char *why = NULL;
			int32_t isr = -1, replicas = -1;
			if (err)
				why = errname(err);
			else if (!mt)
				why = "UNKNOWN_TOPIC_OR_PART";
			else if (mt->err)
				why = errname(mt->err);
			else {
				const struct rd_kafka_metadata_partition *mp = NULL;
				if (p < mt->partition_cnt && mt->partitions[p].id == p)
					mp = &mt->partitions[p]; /* the usual order */
				for (int k = 0; !mp && k < mt->partition_cnt; k++)
					if (mt->partitions[k].id == p)
						mp = &mt->partitions[k];
				if (!mp)
					why = "DESTINATION_PARTITION_MISSING";
				else if (mp->err && mp->err != RD_KAFKA_RESP_ERR_REPLICA_NOT_AVAILABLE)
					why = errname(mp->err);
				else if (mp->leader < 0)
					why = "LEADER_NOT_AVAILABLE";
				else {
					isr = mp->isr_cnt;
					replicas = mp->replica_cnt;
				}
				int32_t leader = mp ? mp->leader : -1;
				if (leader != wp->leader) {
					wp->leader = leader;
					if (wp->until_ms >= now && wp->need >= wp->progress)
						mirror_lane_enqueue(w, (uint32_t)i, p);
				}
			}
			if (why) {
				mirror_worker_report(w, t, p, -1, -1, -1, -1, why);
				wp->failing = true;
			} else if (isr != wp->isr || mirror_effective_min_isr(t->min_isr, replicas) != wp->min_isr ||
				   wp->failing) {
				wp->isr = isr;
				wp->min_isr = mirror_effective_min_isr(t->min_isr, replicas);
				wp->failing = false;
				mirror_worker_report(w, t, p, -1, -1, isr, wp->min_isr, NULL);
			}
		}
	}
	pthread_mutex_unlock(&w->tmu);
	if (md)
		rd_kafka_metadata_destroy(md);
}

void *mirror_isr_main(void *arg)
{
	struct mirror_worker *w = arg;
	pthread_mutex_lock(&w->tmu);
	while (!w->halt) {
		pthread_mutex_unlock(&w->tmu);
		refresh_isr(w);
		pthread_mutex_lock(&w->tmu);
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += MIRROR_W_ISR_MS / 1000;
		ts.tv_nsec += (MIRROR_W_ISR_MS % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		while (!w->halt && !w->isr_now)
			if (pthread_cond_timedwait(&w->isr_cv, &w->tmu, &ts) != 0)
				break;
		w->isr_now = false;
	}
	pthread_mutex_unlock(&w->tmu);
	if (w->cfgq) /* an answer still in flight is dropped with its queue */
		rd_kafka_queue_destroy(w->cfgq);
	w->cfgq = NULL;
	return NULL;
}

/* ---- main thread: background round -------------------------------------- */

/* mm2: partitions refs[0..n) whose offset-syncs lag their source HW — does
 * the destination already hold the records (MM2 offset.lag.max too high)?
 * A partition where it does, for MIRROR_W_SYNCS_STALL_MS, is reported
 * stalled (mirror_report.stall) and a WARN names offset.lag.max once per
 * worker; see mm2.c for why the gate does not release on this evidence.
 * Main thread, tmu not held. */
static void mm2_check_syncs(struct mirror_worker *w, const struct mirror_wref *refs, size_t n)
{
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)(n ? n : 1));
	size_t *idx = calloc(n ? n : 1, sizeof(*idx));
	size_t k = 0;
	if (!l || !idx)
		goto out;
	pthread_mutex_lock(&w->tmu);
	for (size_t i = 0; i < n; i++) {
		struct mirror_wtopic *t = &w->topics[refs[i].topic];
		struct mirror_wpart *wp = &t->parts[refs[i].partition];
		if (wp->src_hw > mirror_wpart_mm2_up(wp) + 1) {
			rd_kafka_topic_partition_list_add(l, t->dst, refs[i].partition)->offset = RD_KAFKA_OFFSET_END;
			idx[k++] = i;
		} else if (wp->syncs_behind || wp->syncs_behind_since_ms >= 0) {
			wp->syncs_behind_since_ms = -1;
			if (wp->syncs_behind)
				mirror_worker_report_stall(w, t, refs[i].partition, "");
			wp->syncs_behind = false;
		}
	}
	pthread_mutex_unlock(&w->tmu);
	if (k == 0 || rd_kafka_offsets_for_times(w->dst, l, MIRROR_W_LIST_MS) != 0)
		goto out;
	int64_t now = mirror_now_ms();
	pthread_mutex_lock(&w->tmu);
	for (size_t j = 0; j < k; j++) {
		struct mirror_wtopic *t = &w->topics[refs[idx[j]].topic];
		int32_t p = refs[idx[j]].partition;
		struct mirror_wpart *wp = &t->parts[p];
		const rd_kafka_topic_partition_t *e = &l->elems[j];
		if (e->err || e->offset < 0)
			continue;
		/* records past the last sync: on the source, and already on the destination */
		bool proved = wp->mm2_proved_up > wp->mm2_up; /* the record match (mm2_match.c) is ahead */
		int64_t behind = wp->src_hw - ((proved ? wp->mm2_proved_up : wp->mm2_up) + 1);
		int64_t ahead = e->offset - ((proved ? wp->mm2_proved_down : wp->mm2_down) + 1);
		if (behind <= 0 || ahead < behind) {
			wp->syncs_behind_since_ms = -1;
			if (wp->syncs_behind)
				mirror_worker_report_stall(w, t, p, "");
			wp->syncs_behind = false;
			continue;
		}
		if (wp->syncs_behind_since_ms < 0)
			wp->syncs_behind_since_ms = now;
		if (wp->syncs_behind || now - wp->syncs_behind_since_ms < MIRROR_W_SYNCS_STALL_MS)
			continue;
		wp->syncs_behind = true;
		mirror_worker_report_stall(w, t, p, "offset-syncs and the record match behind the destination");
		if (!w->syncs_warned) {
			w->syncs_warned = true;
			LOG_W("mirror_mm2_offset_syncs_behind", "mirror=%s topic=%s partition=%d source_hw=%lld "
			      "synced_upstream=%lld destination_hw=%lld synced_downstream=%lld reason=\"the destination "
			      "holds the records but MirrorMaker 2 emitted no offset-sync for them and matching the "
			      "records could not prove them (mirror_mm2_match_stopped says why: another writer to the "
			      "destination topic, a record MirrorMaker 2 skipped or re-copied, timestamps rewritten by "
			      "a LogAppendTime destination topic): acks and promotion wait for the next offset-sync; "
			      "MirrorMaker 2 needs offset.lag.max=0 and emit.offset-syncs.enabled=true\"",
			      w->name, t->topic, (int)p, (long long)wp->src_hw, (long long)wp->mm2_up,
			      (long long)e->offset, (long long)wp->mm2_down);
		}
	}
	pthread_mutex_unlock(&w->tmu);
out:
	if (l)
		rd_kafka_topic_partition_list_destroy(l);
	free(idx);
}

/* Every tracked partition (tmu held). *refs is malloc'ed; 0 on ENOMEM. */
static size_t all_partitions(struct mirror_worker *w, struct mirror_wref **refs)
{
	size_t n = 0, k = 0;
	for (size_t i = 0; i < w->ntopics; i++)
		n += w->topics[i].npart > 0 ? (size_t)w->topics[i].npart : 0;
	*refs = calloc(n ? n : 1, sizeof(**refs));
	if (!*refs)
		return 0;
	for (size_t i = 0; i < w->ntopics; i++)
		for (int32_t p = 0; p < w->topics[i].npart && p < w->topics[i].npart_alloc; p++)
			(*refs)[k++] = (struct mirror_wref){(uint32_t)i, p};
	return k;
}

/*
 * The source HWs of every partition of `l`, in place (offset, err), at most
 * HW_CHUNK partitions per request: librdkafka 2.0.2 matches each partition of
 * an answer to its request list by a linear search, so one call's cost grows
 * with the square of its size (100,000 partitions in one call never answered
 * within MIRROR_W_RPC_MS on the stand-in bed; 10,000 cost two thirds of the
 * worker's CPU). sent_us / done_us[k]: before and after chunk k's request.
 * Returns the first error of a whole request (each of its partitions carries
 * it), 0 when every request was answered. Worker thread.
 */
#define HW_CHUNK 1000
static rd_kafka_resp_err_t source_hws(struct mirror_worker *w, rd_kafka_topic_partition_list_t *l,
				      int64_t *sent_us, int64_t *done_us)
{
	rd_kafka_resp_err_t first = RD_KAFKA_RESP_ERR_NO_ERROR;
	for (int off = 0, k = 0; off < l->cnt; off += HW_CHUNK, k++) {
		int cnt = l->cnt - off < HW_CHUNK ? l->cnt - off : HW_CHUNK;
		rd_kafka_topic_partition_list_t *c = rd_kafka_topic_partition_list_new(cnt);
		for (int j = 0; j < cnt; j++)
			rd_kafka_topic_partition_list_add(c, l->elems[off + j].topic, l->elems[off + j].partition)
				->offset = RD_KAFKA_OFFSET_END;
		sent_us[k] = mirror_worker_now_us();
		rd_kafka_resp_err_t err = rd_kafka_offsets_for_times(w->src, c, MIRROR_W_RPC_MS);
		done_us[k] = mirror_worker_now_us();
		if (err && !first)
			first = err;
		for (int j = 0; j < cnt; j++) {
			l->elems[off + j].err = err ? err : c->elems[j].err;
			l->elems[off + j].offset = err ? -1 : c->elems[j].offset;
		}
		rd_kafka_topic_partition_list_destroy(c);
	}
	return first;
}

void mirror_poll_background(struct mirror_worker *w)
{
	struct mirror_wref *refs;
	pthread_mutex_lock(&w->tmu);
	size_t n = all_partitions(w, &refs);
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)(n ? n : 1));
	/* progress read before the source HW below: never above it unless the
	 * destination holds other records (diverged.c) */
	int64_t *before = calloc(n ? n : 1, sizeof(*before));
	size_t nchunks = n / HW_CHUNK + 1;
	int64_t *sent_us = calloc(nchunks, sizeof(*sent_us)), *done_us = calloc(nchunks, sizeof(*done_us));
	uint64_t round = ++w->read_seq;
	int64_t now = mirror_now_ms();
	bool sweep = now >= w->next_sweep_ms; /* lag zero too: an idle destination gone ahead is seen */
	if (sweep)
		w->next_sweep_ms = now + MIRROR_W_SWEEP_MS;
	for (size_t i = 0; i < n; i++) {
		rd_kafka_topic_partition_list_add(l, w->topics[refs[i].topic].topic, refs[i].partition)->offset =
			RD_KAFKA_OFFSET_END;
		if (before)
			before[i] = w->topics[refs[i].topic].parts[refs[i].partition].progress;
	}
	pthread_mutex_unlock(&w->tmu);
	if (n == 0 || !before || !sent_us || !done_us)
		goto out;
	/* 1. source HW first ... (the table only grows on this thread: refs stay valid) */
	rd_kafka_resp_err_t err = source_hws(w, l, sent_us, done_us);
	if (err)
		LOG_W("mirror_source_offsets_failed", "mirror=%s reason=\"%s\"", w->name, errname(err));
	/* 2. ... then destination progress, so lag = HW − progress never
	 * undercounts (promotion safety): progress read from now on. */
	pthread_mutex_lock(&w->tmu);
	for (size_t i = 0; i < n; i++) {
		if (i % BATCH == BATCH - 1) {
			pthread_mutex_unlock(&w->tmu);
			pthread_mutex_lock(&w->tmu);
		}
		struct mirror_wtopic *t = &w->topics[refs[i].topic];
		int32_t p = refs[i].partition;
		struct mirror_wpart *wp = &t->parts[p];
		int64_t hw = !l->elems[i].err ? l->elems[i].offset : -1;
		bool gone = mirror_source_gone(l->elems[i].err);
		struct mirror_wsample smp = {gone ? -1 : hw, sent_us[i / HW_CHUNK], done_us[i / HW_CHUNK]};
		if (w->offsets != CONF_OFFSETS_MM2 && (hw >= 0 || gone) &&
		    mirror_check_diverged(w, t, p, before[i], &smp, round)) {
			wp->src_hw = hw;
			if (hw >= 0) {
				wp->bg_hw = hw; /* read progress again: it tells when the divergence ends */
				mirror_lane_enqueue(w, refs[i].topic, p);
			}
			continue;
		}
		wp->src_hw = hw;
		if (hw < 0)
			continue;
		if (w->offsets == CONF_OFFSETS_MM2) {
			int64_t up = mirror_wpart_mm2_up(wp);
			int64_t prog = up >= 0 ? up + 1 : hw == 0 ? 0 : -1;
			if (prog >= 0) {
				wp->progress = prog;
				mirror_worker_report(w, t, p, prog, hw, -1, -1, NULL);
			}
		} else if (sweep || wp->progress < 0 || hw > wp->progress || wp->failing ||
			   wp->progress != before[i]) {
			wp->bg_hw = hw; /* the lane reads progress after this HW, then the source again */
			mirror_lane_enqueue(w, refs[i].topic, p);
		} else {
			/* lag zero: progress read before this HW was already at it (not
			 * above: mirror_check_diverged), no need to ask the destination.
			 * Reported every round all the same: the gate forgets samples (a
			 * release), and lag must come back. */
			struct mirror_wread rd = {.progress = before[i], .source_hw = hw, .source_after = hw};
			mirror_worker_report_read(w, t, p, &rd);
		}
	}
	pthread_mutex_unlock(&w->tmu);
	if (w->offsets == CONF_OFFSETS_MM2)
		mm2_check_syncs(w, refs, n);
out:
	rd_kafka_topic_partition_list_destroy(l);
	free(before);
	free(sent_us);
	free(done_us);
	free(refs);
}
