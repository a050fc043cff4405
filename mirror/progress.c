/*
 * progress.c — what the worker asks the clusters with ordinary blocking
 * librdkafka calls (worker thread only):
 *   - source topic listing (Metadata, all topics) matched against sync_topics;
 *   - destination ISR size (Metadata of the locally known destination
 *     topics, one request) and min.insync.replicas (DescribeConfigs, one
 *     batched request: the effective value, i.e. the topic override or else
 *     the broker default);
 *   - high watermarks through rd_kafka_offsets_for_times(RD_KAFKA_OFFSET_END),
 *     which librdkafka batches into one ListOffsets per partition leader
 *     (isolation.level=read_uncommitted: the HW, not the LSO). Destination
 *     HW > offset ⇔ every destination ISR replica has it;
 *   - `mm2`: whether the destination runs ahead of the offset-syncs
 *     (mm2_check_syncs: MirrorMaker 2's offset.lag.max too high).
 */
#include <stdlib.h>
#include <string.h>

#include "mirror/worker.h"

static const char *errname(rd_kafka_resp_err_t e)
{
	return rd_kafka_err2name(e);
}

void mirror_refresh_topics(struct mirror_worker *w)
{
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_resp_err_t err = rd_kafka_metadata(w->src, 1, NULL, &md, MIRROR_W_RPC_MS);
	if (err) {
		LOG_W("mirror_source_metadata_failed", "mirror=%s reason=\"%s\"", w->name, errname(err));
		return;
	}
	mirror_route_learn(md);
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
			w->reassign = true;
		}
	}
	if (w->mm2_topic && w->mm2_nparts < 0)
		LOG_W("mirror_mm2_offset_syncs_missing", "mirror=%s topic=%s reason=\"not on the source cluster\"",
		      w->name, w->mm2_topic);
	rd_kafka_metadata_destroy(md);
}

/* min.insync.replicas of every destination topic, -1 when unknown. */
static void describe_min_isr(struct mirror_worker *w, int32_t *min_isr)
{
	size_t n = w->ntopics;
	if (mirror_now_ms() < w->describe_after_ms)
		return; /* keep the last values (the loop keeps them on -1) */
	/* Pessimistic until it succeeds: a failing DescribeConfigs (old or
	 * restricted broker, mock cluster) must not stall demand polls. */
	w->describe_after_ms = mirror_now_ms() + 30000;
	rd_kafka_ConfigResource_t **res = calloc(n, sizeof(*res));
	rd_kafka_queue_t *q = rd_kafka_queue_new(w->dst);
	rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(w->dst, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
	char errstr[256];
	if (!res || !q || !opt)
		goto out;
	rd_kafka_AdminOptions_set_request_timeout(opt, MIRROR_W_RPC_MS, errstr, sizeof(errstr));
	for (size_t i = 0; i < n; i++)
		res[i] = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, w->topics[i].dst);
	rd_kafka_DescribeConfigs(w->dst, res, n, opt, q);
	rd_kafka_event_t *ev = rd_kafka_queue_poll(q, MIRROR_W_RPC_MS + 1000);
	if (!ev) {
		LOG_W("mirror_describe_configs_failed", "mirror=%s reason=\"timed out; min.insync.replicas unknown, retry in 30 s\"",
		      w->name);
		goto out;
	}
	const rd_kafka_DescribeConfigs_result_t *r = rd_kafka_event_DescribeConfigs_result(ev);
	if (rd_kafka_event_error(ev) || !r) {
		LOG_W("mirror_describe_configs_failed", "mirror=%s reason=\"%s; min.insync.replicas unknown, retry in 30 s\"",
		      w->name, rd_kafka_event_error_string(ev));
		rd_kafka_event_destroy(ev);
		goto out;
	}
	size_t cnt;
	const rd_kafka_ConfigResource_t **rs = rd_kafka_DescribeConfigs_result_resources(r, &cnt);
	w->describe_after_ms = 0;
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
			for (size_t i = 0; i < n; i++)
				if (strcmp(w->topics[i].dst, name) == 0)
					min_isr[i] = v;
		}
	}
	rd_kafka_event_destroy(ev);
out:
	if (res) {
		for (size_t i = 0; i < n; i++)
			if (res[i])
				rd_kafka_ConfigResource_destroy(res[i]);
		free(res);
	}
	if (opt)
		rd_kafka_AdminOptions_destroy(opt);
	if (q)
		rd_kafka_queue_destroy(q);
}

void mirror_refresh_isr(struct mirror_worker *w)
{
	if (w->ntopics == 0)
		return;
	int32_t *min_isr = malloc(w->ntopics * sizeof(*min_isr));
	if (!min_isr)
		return;
	for (size_t i = 0; i < w->ntopics; i++)
		min_isr[i] = -1;
	const struct rd_kafka_metadata *md = NULL;
	/* all_topics=0: the locally known topics, i.e. our destination topics. */
	rd_kafka_resp_err_t err = rd_kafka_metadata(w->dst, 0, NULL, &md, MIRROR_W_RPC_MS);
	if (!err)
		describe_min_isr(w, min_isr);
	for (size_t i = 0; i < w->ntopics; i++) {
		struct mirror_wtopic *t = &w->topics[i];
		const struct rd_kafka_metadata_topic *mt = NULL;
		for (int k = 0; !err && k < md->topic_cnt; k++)
			if (strcmp(md->topics[k].topic, t->dst) == 0)
				mt = &md->topics[k];
		int32_t np = t->npart > 0 ? t->npart : (mt ? mt->partition_cnt : 0);
		for (int32_t p = 0; p < np; p++) {
			struct mirror_wpart *wp = mirror_wtopic_part(t, p);
			if (!wp)
				break;
			const char *why = NULL;
			int32_t isr = -1;
			if (err)
				why = errname(err);
			else if (!mt)
				why = "UNKNOWN_TOPIC_OR_PART";
			else if (mt->err)
				why = errname(mt->err);
			else {
				const struct rd_kafka_metadata_partition *mp = NULL;
				for (int k = 0; k < mt->partition_cnt; k++)
					if (mt->partitions[k].id == p)
						mp = &mt->partitions[k];
				if (!mp)
					why = "DESTINATION_PARTITION_MISSING";
				else if (mp->err && mp->err != RD_KAFKA_RESP_ERR_REPLICA_NOT_AVAILABLE)
					why = errname(mp->err);
				else if (mp->leader < 0)
					why = "LEADER_NOT_AVAILABLE";
				else
					isr = mp->isr_cnt;
				wp->leader = mp ? mp->leader : -1;
			}
			if (why) {
				mirror_worker_report(w, t, p, -1, -1, -1, -1, why);
				wp->failing = true;
			} else if (isr != wp->isr || min_isr[i] != wp->min_isr || wp->failing) {
				wp->isr = isr;
				wp->min_isr = min_isr[i];
				wp->failing = false;
				mirror_worker_report(w, t, p, -1, -1, isr, min_isr[i], NULL);
			}
		}
	}
	if (md)
		rd_kafka_metadata_destroy(md);
	free(min_isr);
}

/* One ListOffsets(END) round over `list`; returns the request-level error. */
static rd_kafka_resp_err_t list_end_offsets(rd_kafka_t *rk, rd_kafka_topic_partition_list_t *list,
					    int timeout_ms)
{
	for (int i = 0; i < list->cnt; i++)
		list->elems[i].offset = RD_KAFKA_OFFSET_END;
	return rd_kafka_offsets_for_times(rk, list, timeout_ms);
}

/* The suspect slot of destination leader `id`, or NULL. */
static struct mirror_slow_leader *slow_leader(struct mirror_worker *w, int32_t id, int64_t now)
{
	for (size_t i = 0; i < sizeof(w->slow) / sizeof(w->slow[0]); i++)
		if (w->slow[i].id == id && w->slow[i].until_ms > now)
			return &w->slow[i];
	return NULL;
}

static void slow_leader_mark(struct mirror_worker *w, int32_t id, int64_t now)
{
	size_t n = sizeof(w->slow) / sizeof(w->slow[0]), pick = 0;
	for (size_t i = 0; i < n; i++) {
		if (w->slow[i].id == id || w->slow[i].until_ms <= now) {
			pick = i;
			break;
		}
		if (w->slow[i].until_ms < w->slow[pick].until_ms)
			pick = i;
	}
	w->slow[pick] = (struct mirror_slow_leader){ .id = id, .until_ms = now + MIRROR_W_SLOW_MS };
}

/* ListOffsets(END) of the partitions idx[0..n) (all led by `leader`), reported. */
static void dest_progress_leader(struct mirror_worker *w, struct mirror_wtopic **tt, int32_t *pp,
				 const size_t *idx, size_t n, int32_t leader, bool slow, bool with_hw)
{
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)n);
	for (size_t j = 0; j < n; j++)
		rd_kafka_topic_partition_list_add(l, tt[idx[j]]->dst, pp[idx[j]]);
	rd_kafka_resp_err_t err = list_end_offsets(w->dst, l, slow ? MIRROR_W_SLOW_RPC_MS : MIRROR_W_LIST_MS);
	if (err == RD_KAFKA_RESP_ERR__TIMED_OUT && leader >= 0)
		slow_leader_mark(w, leader, mirror_now_ms());
	LOG_D("mirror_list_offsets", "mirror=%s leader=%d partitions=%zu slow=%d result=%s", w->name,
	      leader, n, slow, errname(err));
	for (size_t j = 0; j < n; j++) {
		size_t i = idx[j];
		struct mirror_wpart *wp = &tt[i]->parts[pp[i]];
		rd_kafka_topic_partition_t *e = &l->elems[j];
		rd_kafka_resp_err_t perr = err ? err : e->err;
		int64_t hw = with_hw ? wp->src_hw : -1;
		if (!perr && e->offset < 0)
			perr = RD_KAFKA_RESP_ERR__NO_OFFSET;
		if (perr) {
			mirror_worker_report(w, tt[i], pp[i], -1, -1, -1, -1, errname(perr));
			wp->failing = true;
			continue;
		}
		wp->progress = e->offset;
		wp->failing = false;
		mirror_worker_report(w, tt[i], pp[i], e->offset, hw, -1, -1, NULL);
	}
	rd_kafka_topic_partition_list_destroy(l);
}

/*
 * Destination progress of the partitions in `tt`/`pp` (parallel arrays): one
 * ListOffsets(END) per destination leader (librdkafka 2.0.2's
 * offsets_for_times returns nothing at all when any leader times out), healthy
 * leaders first, leaders that recently timed out last and with a short
 * timeout — so one frozen destination broker delays only its own partitions.
 */
static void dest_progress(struct mirror_worker *w, struct mirror_wtopic **tt, int32_t *pp, size_t n,
			  bool with_hw)
{
	if (n == 0)
		return;
	size_t *idx = calloc(n, sizeof(*idx));
	bool *done = calloc(n, sizeof(*done));
	if (!idx || !done) {
		free(idx);
		free(done);
		return;
	}
	int64_t now = mirror_now_ms();
	for (int pass = 0; pass < 2; pass++) { /* 0: healthy leaders, 1: suspect ones */
		for (size_t a = 0; a < n; a++) {
			if (done[a])
				continue;
			int32_t leader = tt[a]->parts[pp[a]].leader;
			bool slow = slow_leader(w, leader, now) != NULL;
			if (slow != (pass == 1))
				continue;
			size_t k = 0;
			for (size_t b = a; b < n; b++) {
				if (!done[b] && tt[b]->parts[pp[b]].leader == leader) {
					done[b] = true;
					idx[k++] = b;
				}
			}
			dest_progress_leader(w, tt, pp, idx, k, leader, slow, with_hw);
		}
	}
	free(idx);
	free(done);
}

static size_t all_partitions(struct mirror_worker *w, struct mirror_wtopic ***tt, int32_t **pp)
{
	size_t n = 0, k = 0;
	for (size_t i = 0; i < w->ntopics; i++)
		n += w->topics[i].npart > 0 ? (size_t)w->topics[i].npart : 0;
	*tt = calloc(n ? n : 1, sizeof(**tt));
	*pp = calloc(n ? n : 1, sizeof(**pp));
	if (!*tt || !*pp)
		return 0;
	for (size_t i = 0; i < w->ntopics; i++)
		for (int32_t p = 0; p < w->topics[i].npart; p++)
			if (mirror_wtopic_part(&w->topics[i], p)) {
				(*tt)[k] = &w->topics[i];
				(*pp)[k++] = p;
			}
	return k;
}

/* mm2: partitions tt[i]/pp[i] whose offset-syncs lag their source HW — does
 * the destination already hold the records (MM2 offset.lag.max too high)?
 * A partition where it does, for MIRROR_W_SYNCS_STALL_MS, is reported
 * stalled (mirror_report.stall) and a WARN names offset.lag.max once per
 * worker; see mm2.c for why the gate does not release on this evidence. */
static void mm2_check_syncs(struct mirror_worker *w, struct mirror_wtopic **tt, const int32_t *pp, size_t n)
{
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)(n ? n : 1));
	size_t *idx = calloc(n ? n : 1, sizeof(*idx));
	size_t k = 0;
	int64_t now = mirror_now_ms();
	if (!l || !idx)
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct mirror_wpart *wp = &tt[i]->parts[pp[i]];
		if (wp->src_hw > wp->mm2_up + 1) {
			rd_kafka_topic_partition_list_add(l, tt[i]->dst, pp[i]);
			idx[k++] = i;
		} else if (wp->syncs_behind || wp->syncs_behind_since_ms >= 0) {
			wp->syncs_behind_since_ms = -1;
			if (wp->syncs_behind)
				mirror_worker_report_stall(w, tt[i], pp[i], "");
			wp->syncs_behind = false;
		}
	}
	if (k == 0 || list_end_offsets(w->dst, l, MIRROR_W_LIST_MS) != 0)
		goto out;
	for (size_t j = 0; j < k; j++) {
		struct mirror_wtopic *t = tt[idx[j]];
		struct mirror_wpart *wp = &t->parts[pp[idx[j]]];
		const rd_kafka_topic_partition_t *e = &l->elems[j];
		if (e->err || e->offset < 0)
			continue;
		/* records past the last sync: on the source, and already on the destination */
		int64_t behind = wp->src_hw - (wp->mm2_up + 1);
		int64_t ahead = e->offset - (wp->mm2_down + 1);
		if (behind <= 0 || ahead < behind) {
			wp->syncs_behind_since_ms = -1;
			if (wp->syncs_behind)
				mirror_worker_report_stall(w, t, pp[idx[j]], "");
			wp->syncs_behind = false;
			continue;
		}
		if (wp->syncs_behind_since_ms < 0)
			wp->syncs_behind_since_ms = now;
		if (wp->syncs_behind || now - wp->syncs_behind_since_ms < MIRROR_W_SYNCS_STALL_MS)
			continue;
		wp->syncs_behind = true;
		mirror_worker_report_stall(w, t, pp[idx[j]], "offset-syncs behind the destination");
		if (!w->syncs_warned) {
			w->syncs_warned = true;
			LOG_W("mirror_mm2_offset_syncs_behind", "mirror=%s topic=%s partition=%d source_hw=%lld "
			      "synced_upstream=%lld destination_hw=%lld synced_downstream=%lld reason=\"the destination "
			      "holds the records but MirrorMaker 2 emitted no offset-sync for them: acks and promotion "
			      "stall; set offset.lag.max=0 on the MirrorMaker 2 flow (emit.offset-syncs.enabled=true)\"",
			      w->name, t->topic, (int)pp[idx[j]], (long long)wp->src_hw, (long long)wp->mm2_up,
			      (long long)e->offset, (long long)wp->mm2_down);
		}
	}
out:
	if (l)
		rd_kafka_topic_partition_list_destroy(l);
	free(idx);
}

void mirror_poll_background(struct mirror_worker *w)
{
	struct mirror_wtopic **tt;
	int32_t *pp;
	size_t n = all_partitions(w, &tt, &pp);
	if (n) {
		/* 1. source HW first ... */
		rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)n);
		for (size_t i = 0; i < n; i++)
			rd_kafka_topic_partition_list_add(l, tt[i]->topic, pp[i]);
		rd_kafka_resp_err_t err = list_end_offsets(w->src, l, MIRROR_W_RPC_MS);
		if (err)
			LOG_W("mirror_source_offsets_failed", "mirror=%s reason=\"%s\"", w->name, errname(err));
		for (size_t i = 0; i < n; i++)
			tt[i]->parts[pp[i]].src_hw = !err && !l->elems[i].err ? l->elems[i].offset : -1;
		rd_kafka_topic_partition_list_destroy(l);
		/* 2. ... then destination progress, so lag = HW − progress never
		 * undercounts (promotion safety). */
		if (w->offsets == CONF_OFFSETS_MM2) {
			mirror_mm2_poll(w, 0);
			for (size_t i = 0; i < n; i++) {
				struct mirror_wpart *wp = &tt[i]->parts[pp[i]];
				int64_t prog = wp->mm2_up >= 0 ? wp->mm2_up + 1 : wp->src_hw == 0 ? 0 : -1;
				if (prog >= 0)
					mirror_worker_report(w, tt[i], pp[i], prog, wp->src_hw, -1, -1, NULL);
			}
			mm2_check_syncs(w, tt, pp, n);
		} else {
			dest_progress(w, tt, pp, n, true);
		}
	}
	free(tt);
	free(pp);
}

void mirror_poll_demanded(struct mirror_worker *w, int64_t now)
{
	size_t n = 0;
	for (size_t i = 0; i < w->ntopics; i++)
		n += (size_t)w->topics[i].npart_alloc;
	struct mirror_wtopic **tt = calloc(n ? n : 1, sizeof(*tt));
	int32_t *pp = calloc(n ? n : 1, sizeof(*pp));
	size_t k = 0;
	if (!tt || !pp)
		goto out;
	for (size_t i = 0; i < w->ntopics; i++) {
		struct mirror_wtopic *t = &w->topics[i];
		for (int32_t p = 0; p < t->npart_alloc; p++) {
			struct mirror_wpart *wp = &t->parts[p];
			if (wp->until_ms < 0)
				continue;
			if (wp->until_ms < now || wp->need < wp->progress) {
				wp->until_ms = wp->need = -1; /* expired or satisfied */
				continue;
			}
			tt[k] = t;
			pp[k++] = p;
		}
	}
	dest_progress(w, tt, pp, k, false);
out:
	free(tt);
	free(pp);
}
