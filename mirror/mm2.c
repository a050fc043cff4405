/*
 * mm2.c — offset strategy `mm2`: MirrorMaker 2's offset-syncs topic on the
 * SOURCE cluster (default mm2-offset-syncs.<mirror name>.internal), read from
 * the beginning and then tailed. Record format (apache/kafka
 * connect/mirror/.../OffsetSync.java, KEY_SCHEMA / VALUE_SCHEMA):
 *   key   = topic: int16 length (big endian) + bytes, partition: int32
 *   value = upstreamOffset: int64, offset (downstream): int64
 * MirrorMaker emits a sync after the producer acknowledged the record with
 * upstream offset U on the target (acks=all, idempotent so in order), so
 * "upstream ≥ U is acked": progress = greatest U + 1 per partition.
 *
 * MM2 only emits a sync when the offsets drift by more than offset.lag.max
 * (default 100) — at its defaults the gate cannot release most acks, and
 * offset.lag.max=0 is required. Why syncgate does not gate on the
 * destination HW between sparse syncs (sync (U, D) and destination HW H ⇒
 * source offsets up to U + (H − D − 1) are there?): that needs one
 * destination record per source offset after U, and neither side keeps it —
 * an at-least-once MM2 re-copies records after a task restart (duplicates
 * fill destination offsets), an exactly-once MM2 writes transaction markers
 * on the destination (markers fill offsets), and source offsets skipped by
 * markers or compaction only make the bound looser. Each can make H pass
 * the bound before the record is there, i.e. a false ack. So syncgate
 * detects the sparse case instead (mirror_mm2_check_syncs) and says so.
 * Worker thread.
 */
#include <stdlib.h>
#include <string.h>

#include "mirror/worker.h"

static uint64_t be(const unsigned char *p, int n)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

int mirror_mm2_parse(const void *key, size_t klen, const void *val, size_t vlen, char *topic,
		     size_t topic_cap, int32_t *partition, int64_t *upstream, int64_t *downstream)
{
	const unsigned char *k = key, *v = val;
	if (!k || !v || klen < 2 || vlen < 16)
		return -1;
	int16_t tlen = (int16_t)be(k, 2);
	if (tlen < 0 || (size_t)tlen + 6 != klen || (size_t)tlen >= topic_cap)
		return -1;
	memcpy(topic, k + 2, (size_t)tlen);
	topic[tlen] = '\0';
	*partition = (int32_t)be(k + 2 + tlen, 4);
	*upstream = (int64_t)be(v, 8);
	*downstream = (int64_t)be(v + 8, 8);
	return 0;
}

void mirror_mm2_assign(struct mirror_worker *w)
{
	int32_t n = w->mm2_nparts > 0 ? w->mm2_nparts : 1;
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(n);
	for (int32_t p = 0; p < n; p++)
		rd_kafka_topic_partition_list_add(l, w->mm2_topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
	rd_kafka_resp_err_t err = rd_kafka_assign(w->mm2c, l);
	if (err)
		LOG_W("mirror_mm2_assign_failed", "mirror=%s topic=%s reason=\"%s\"", w->name, w->mm2_topic,
		      rd_kafka_err2name(err));
	rd_kafka_topic_partition_list_destroy(l);
}

void mirror_mm2_poll(struct mirror_worker *w, int timeout_ms)
{
	char topic[256];
	for (int i = 0; i < 100000; i++) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(w->mm2c, i == 0 ? timeout_ms : 0);
		if (!m)
			break;
		int32_t part;
		int64_t up, down;
		if (m->err) {
			if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
				LOG_D("mm2_offset_syncs_error", "mirror=%s reason=\"%s\"", w->name,
				      rd_kafka_err2name(m->err));
		} else if (mirror_mm2_parse(m->key, m->key_len, m->payload, m->len, topic, sizeof(topic), &part,
					    &up, &down) != 0) {
			LOG_D("mm2_offset_sync_malformed", "mirror=%s offset=%lld", w->name, (long long)m->offset);
		} else {
			struct mirror_wtopic *t = mirror_worker_topic(w, topic, false);
			struct mirror_wpart *wp = t ? mirror_wtopic_part(t, part) : NULL;
			if (wp && up > wp->mm2_up) {
				wp->mm2_up = up;
				wp->mm2_down = down;
				wp->progress = up + 1;
				mirror_worker_report(w, t, part, up + 1, -1, -1, -1, NULL);
			}
		}
		rd_kafka_message_destroy(m);
	}
}

void mirror_mm2_check_syncs(struct mirror_worker *w, struct mirror_wtopic **tt, const int32_t *pp, size_t n)
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
	if (k == 0 || mirror_list_end_offsets(w->dst, l, MIRROR_W_LIST_MS) != 0)
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
