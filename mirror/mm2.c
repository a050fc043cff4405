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
 * the bound before the record is there, i.e. a false ack. Instead, the
 * match thread proves records between syncs by their content (mm2_match.c),
 * and what neither covers is detected (progress.c, mm2_check_syncs) and
 * reported.
 * The mm2 thread (mirror_mm2_main); w->tmu around the table.
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

static unsigned bucket(int64_t distance)
{
	unsigned b = 0;
	for (uint64_t d = (uint64_t)(distance > 0 ? distance : 0) + 1; d > 1; d >>= 1)
		b++;
	return b;
}

void mirror_mm2_keep(struct mirror_wsync *s, uint32_t *n, struct mirror_wsync x)
{
	if (*n > 0 && x.up <= s[*n - 1].up)
		return; /* not newer (a sync read again): kept already */
	if (*n == MIRROR_W_MM2_SYNCS) {
		uint32_t drop = 0; /* the oldest, when every kept sync has a bucket of its own */
		for (uint32_t j = *n - 2; j >= 1; j--)
			if (bucket(x.up - s[j].up) == bucket(x.up - s[j - 1].up)) {
				drop = j;
				break;
			}
		memmove(&s[drop], &s[drop + 1], (*n - drop - 1) * sizeof(*s));
		(*n)--;
	}
	s[(*n)++] = x;
}

int64_t mirror_mm2_translate(const struct mirror_wsync *s, uint32_t n, int64_t committed)
{
	for (uint32_t i = n; i-- > 0;)
		if (s[i].up <= committed)
			return s[i].down + (committed == s[i].up ? 0 : 1);
	return -1;
}

#define MM2_POLL_MS 100  /* consumer poll: how soon a reassignment or stop is seen */
#define MM2_BATCH 256    /* syncs applied per hold of tmu (catching up from the beginning
			  * must not keep the loop's demands waiting) */

static void mm2_assign(struct mirror_worker *w)
{
	pthread_mutex_lock(&w->tmu);
	int32_t n = w->mm2_nparts > 0 ? w->mm2_nparts : 1;
	pthread_mutex_unlock(&w->tmu);
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(n);
	for (int32_t p = 0; p < n; p++)
		rd_kafka_topic_partition_list_add(l, w->mm2_topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
	rd_kafka_resp_err_t err = rd_kafka_assign(w->mm2c, l);
	if (err)
		LOG_W("mirror_mm2_assign_failed", "mirror=%s topic=%s reason=\"%s\"", w->name, w->mm2_topic,
		      rd_kafka_err2name(err));
	rd_kafka_topic_partition_list_destroy(l);
}

/* One offset-sync record: progress of its partition when it is newer (tmu held). */
static void mm2_apply(struct mirror_worker *w, const rd_kafka_message_t *m)
{
	char topic[256];
	int32_t part;
	int64_t up, down;
	if (mirror_mm2_parse(m->key, m->key_len, m->payload, m->len, topic, sizeof(topic), &part, &up,
			     &down) != 0) {
		LOG_D("mm2_offset_sync_malformed", "mirror=%s offset=%lld", w->name, (long long)m->offset);
		return;
	}
	struct mirror_wtopic *t = mirror_worker_topic(w, topic, false);
	if (!t || part < 0 || part >= t->npart_alloc)
		return;
	struct mirror_wpart *wp = &t->parts[part];
	if (!wp->mm2_syncs)
		wp->mm2_syncs = calloc(MIRROR_W_MM2_SYNCS, sizeof(*wp->mm2_syncs));
	if (wp->mm2_syncs) /* for commits (mirror_worker_mm2_translate) */
		mirror_mm2_keep(wp->mm2_syncs, &wp->mm2_nsyncs, (struct mirror_wsync){up, down});
	if (up > wp->mm2_up) {
		wp->mm2_up = up;
		wp->mm2_down = down;
		if (up > wp->mm2_proved_up) { /* else the record match proved more already */
			wp->progress = up + 1;
			mirror_worker_report(w, t, part, up + 1, -1, -1, -1, NULL);
		}
	}
}

static void mm2_apply_all(struct mirror_worker *w, rd_kafka_message_t **ms, size_t n)
{
	for (size_t i = 0; i < n; i++)
		mm2_apply(w, ms[i]);
}

/*
 * The offset-syncs tail: a long-polling consumer (librdkafka's fetch waits
 * at the broker until a sync is written, then returns at once), each sync
 * reported as it arrives — no other request of the worker runs on this
 * thread, so a new sync releases its waiters within a fetch round trip.
 */
void *mirror_mm2_main(void *arg)
{
	struct mirror_worker *w = arg;
	rd_kafka_message_t *ms[MM2_BATCH];
	mirror_worker_consume(w, w->mm2c, MM2_POLL_MS, ms, MM2_BATCH, "mm2_offset_syncs_error", mm2_assign,
			      mm2_apply_all);
	return NULL;
}
