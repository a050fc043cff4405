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
 * detects the sparse case instead (progress.c, mm2_check_syncs) and says so.
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
