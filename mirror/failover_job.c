/*
 * failover_job.c — the job thread of a failover or verify (see failover.c
 * for the steps): the partition lists, the drain (measure until every
 * partition's progress reaches its target), and the per-partition verdicts
 * (judge: HW comparison, then the last data record on both sides, CRC-32C
 * of key, value and headers). Blocking librdkafka calls, its own clients.
 * Job thread only; it reports back through the bridge.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "codec/codec.h"
#include "mirror/failover.h"
#include "mirror/worker.h"

static uint32_t crc_len(uint32_t crc, const void *p, size_t n)
{
	uint32_t be = p ? (uint32_t)n : 0xffffffffu;
	unsigned char b[4] = {(unsigned char)(be >> 24), (unsigned char)(be >> 16), (unsigned char)(be >> 8),
			      (unsigned char)be};
	crc = codec_crc32c(crc, b, 4);
	return p ? codec_crc32c(crc, p, n) : crc;
}

/* What identifies a record's content across clusters: key, value, headers
 * (length-prefixed; a mirror copies them verbatim, offsets aside). */
static uint32_t record_crc(rd_kafka_message_t *m)
{
	uint32_t crc = crc_len(0, m->key, m->key_len);
	crc = crc_len(crc, m->payload, m->len);
	rd_kafka_headers_t *h = NULL;
	if (rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR && h) {
		const char *name;
		const void *val;
		size_t sz;
		for (size_t i = 0; rd_kafka_header_get_all(h, i, &name, &val, &sz) == RD_KAFKA_RESP_ERR_NO_ERROR; i++) {
			crc = crc_len(crc, name, strlen(name));
			crc = crc_len(crc, val, sz);
		}
	}
	return crc;
}

/* The last data record of partition p in [from, to) (to: exclusive), read
 * with the simple consumer. 1 found (*off, *crc), 0 none, -1 error. Job thread. */
static int read_last(rd_kafka_t *rk, const char *topic, int32_t p, int64_t from, int64_t to, int64_t *off,
		     uint32_t *crc, char *err, size_t errcap)
{
	if (from < 0)
		from = 0;
	if (to <= from)
		return 0;
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
	if (!rkt || rd_kafka_consume_start(rkt, p, from) != 0) {
		snprintf(err, errcap, "cannot read %s[%d]: %s", topic, (int)p, rd_kafka_err2str(rd_kafka_last_error()));
		if (rkt)
			rd_kafka_topic_destroy(rkt);
		return -1;
	}
	int found = 0;
	int64_t deadline = mirror_now_ms() + FO_RPC_MS;
	while (mirror_now_ms() < deadline) {
		rd_kafka_message_t *m = rd_kafka_consume(rkt, p, 500);
		if (!m)
			continue;
		bool end = false;
		if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
			end = true;
		} else if (m->err) {
			snprintf(err, errcap, "reading %s[%d]: %s", topic, (int)p, rd_kafka_message_errstr(m));
			found = -1;
			end = true;
		} else if (m->offset < to) {
			*off = m->offset;
			*crc = record_crc(m);
			found = 1;
			end = m->offset >= to - 1;
		} else {
			end = true;
		}
		rd_kafka_message_destroy(m);
		if (end)
			break;
	}
	rd_kafka_consume_stop(rkt, p);
	rd_kafka_topic_destroy(rkt);
	return found;
}

/* One round: every source HW first, then the destination (progress sampled
 * after the source HW, as the gate does). Job thread. */
static void measure(struct mirror_failover *f, rd_kafka_t *src, rd_kafka_t *dst, rd_kafka_t *dmatch)
{
	for (size_t i = 0; i < f->ntopics; i++) {
		struct fo_topic *t = &f->topics[i];
		for (int32_t k = 0; k < t->npart; k++) {
			int64_t lo, hi;
			struct fo_part *fp = &t->parts[k];
			fp->src_hw = -1;
			if (src && !rd_kafka_query_watermark_offsets(src, t->topic, fp->partition, &lo, &hi, FO_RPC_MS))
				fp->src_hw = hi;
		}
	}
	for (size_t i = 0; i < f->ntopics; i++) {
		struct fo_topic *t = &f->topics[i];
		for (int32_t k = 0; k < t->npart; k++) {
			int64_t lo, hi;
			struct fo_part *fp = &t->parts[k];
			fp->dst_hw = -1;
			rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(dst, t->dst, fp->partition, &lo, &hi,
										 FO_RPC_MS);
			if (!e)
				fp->dst_hw = hi;
			else
				snprintf(fp->detail, sizeof(fp->detail), "destination %s[%d]: %s", t->dst,
					 (int)fp->partition, rd_kafka_err2str(e));
			fp->src_hw_after = -1;
			if (src && f->offsets != CONF_OFFSETS_MM2 &&
			    !rd_kafka_query_watermark_offsets(src, t->topic, fp->partition, &lo, &hi, FO_RPC_MS))
				fp->src_hw_after = hi;
			if (f->offsets == CONF_OFFSETS_MM2) {
				if (src && dmatch && fp->src_hw >= 0 && fp->dst_hw >= 0)
					mirror_failover_mm2_prove(src, dmatch, t, fp); /* past the latest sync */
				const struct fo_sync *s = mirror_failover_mm2_latest(fp);
				fp->progress = s ? s->up + 1 : -1;
			} else {
				fp->progress = fp->dst_hw;
			}
		}
	}
}

/* Every partition's progress reached its target. */
static bool caught_up(struct mirror_failover *f)
{
	for (size_t i = 0; i < f->ntopics; i++)
		for (int32_t k = 0; k < f->topics[i].npart; k++) {
			struct fo_part *fp = &f->topics[i].parts[k];
			if (fp->target < 0 || fp->progress < fp->target)
				return false;
		}
	return true;
}

/* The divergence check of one partition: the last data record below the
 * target on the source, and the record at the same place on the
 * destination (preserved: same offset; mm2: the latest offset-sync's pair). */
static void check_last(struct mirror_failover *f, rd_kafka_t *src, rd_kafka_t *dst, struct fo_topic *t,
		       struct fo_part *fp)
{
	char err[200];
	int64_t so = -1, doff = -1;
	uint32_t sc = 0, dc = 0;
	int64_t want;
	int rc;
	if (f->offsets == CONF_OFFSETS_MM2) {
		const struct fo_sync *s = mirror_failover_mm2_latest(fp);
		if (!s)
			return;
		rc = read_last(src, t->topic, fp->partition, s->up, s->up + 1, &so, &sc, err, sizeof(err));
		want = s->down;
	} else {
		rc = read_last(src, t->topic, fp->partition, fp->target - FO_TAIL_WINDOW, fp->target, &so, &sc, err,
			       sizeof(err));
		want = so;
	}
	if (rc < 0) {
		fp->status = FO_UNKNOWN;
		snprintf(fp->detail, sizeof(fp->detail), "%s", err);
		return;
	}
	if (rc == 0) {
		snprintf(fp->detail, sizeof(fp->detail), "last record not compared: no data record among the last %d "
			 "offsets (transaction markers?)", FO_TAIL_WINDOW);
		return;
	}
	rc = read_last(dst, t->dst, fp->partition, want, want + 1, &doff, &dc, err, sizeof(err));
	fp->last_checked = true;
	fp->last_src_off = so;
	fp->crc_src = sc;
	fp->last_dst_off = rc == 1 ? doff : -1;
	fp->crc_dst = dc;
	if (rc < 0) {
		fp->status = FO_UNKNOWN;
		snprintf(fp->detail, sizeof(fp->detail), "%s", err);
	} else if (rc == 0 || doff != want || dc != sc) {
		fp->status = FO_DIVERGED;
		snprintf(fp->detail, sizeof(fp->detail),
			 "source record %" PRId64 " (crc %08" PRIx32 ") is not at destination offset %" PRId64
			 " (%s): the destination diverged or renumbered", so, sc, want,
			 rc == 0 ? "absent" : doff != want ? "another offset" : "different content");
	}
}

/* Per-partition verdicts after the drain. Job thread. */
static void judge(struct mirror_failover *f, rd_kafka_t *src, rd_kafka_t *dst)
{
	f->verified = true;
	for (size_t i = 0; i < f->ntopics; i++) {
		struct fo_topic *t = &f->topics[i];
		for (int32_t k = 0; k < t->npart; k++) {
			struct fo_part *fp = &t->parts[k];
			fp->status = FO_OK;
			if (f->dest_only) {
				if (f->offsets == CONF_OFFSETS_MM2) {
					fp->status = FO_UNKNOWN;
					snprintf(fp->detail, sizeof(fp->detail), "offsets: mm2 - destination offsets differ "
						 "and the offset-syncs are on the source: not provable without it");
				} else if (fp->dst_hw < 0) {
					fp->status = FO_UNKNOWN;
				} else if (fp->dst_hw < fp->confirmed) {
					fp->status = FO_MISSING;
					snprintf(fp->detail, sizeof(fp->detail), "destination HW %" PRId64 " < confirmed %"
						 PRId64 ": offsets %" PRId64 "..%" PRId64 " were confirmed but are gone",
						 fp->dst_hw, fp->confirmed, fp->dst_hw, fp->confirmed - 1);
				}
			} else if (fp->src_hw < 0 || fp->progress < 0 || fp->dst_hw < 0) {
				fp->status = FO_UNKNOWN;
				if (!fp->detail[0])
					snprintf(fp->detail, sizeof(fp->detail), "%s", fp->src_hw < 0 ? "source HW unknown"
						 : fp->dst_hw < 0 ? "destination HW unknown"
						 : "no offset-sync for this partition yet");
			} else if (fp->src_hw_after >= 0 && fp->dst_hw > fp->src_hw_after) {
				/* the source HW read after the destination's can only be higher
				 * than anything the mirror copied by then */
				fp->status = FO_DIVERGED;
				snprintf(fp->detail, sizeof(fp->detail), "destination HW %" PRId64 " > source HW %" PRId64
					 ": %" PRId64 " record(s) the source never had", fp->dst_hw, fp->src_hw_after,
					 fp->dst_hw - fp->src_hw_after);
			} else if (fp->progress < fp->target) {
				fp->status = FO_MISSING;
				snprintf(fp->detail, sizeof(fp->detail), "offsets %" PRId64 "..%" PRId64 " (%" PRId64
					 " record(s)) not on the destination", fp->progress, fp->target - 1,
					 fp->target - fp->progress);
			} else if (fp->target > 0) {
				fp->detail[0] = '\0';
				check_last(f, src, dst, t, fp);
			}
			if (fp->status != FO_OK)
				f->verified = false;
		}
	}
}
static rd_kafka_t *fo_client(rd_kafka_conf_t **conf, char *err, size_t errcap)
{
	if (!*conf)
		return NULL;
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, *conf, err, errcap);
	if (rk)
		*conf = NULL; /* owned by rk now */
	return rk;
}

/* Partition lists from source metadata (or, destination-only, the
 * confirmed figures already in place). 0, or -1 with f->error set. */
static int resolve_partitions(struct mirror_failover *f, rd_kafka_t *src, rd_kafka_t *dst)
{
	for (size_t i = 0; i < f->ntopics; i++) {
		struct fo_topic *t = &f->topics[i];
		char why[256];
		if (f->dest_only) {
			if (mirror_rk_partitions(dst, t->dst, why, sizeof(why)) == -2) {
				f->unreachable = "destination";
				snprintf(f->error, sizeof(f->error), "destination of mirror %s unreachable: %s", f->mirror, why);
				return -1;
			}
			continue;
		}
		int32_t n = mirror_rk_partitions(src, t->topic, why, sizeof(why));
		if (n == -2) {
			f->unreachable = "source";
			snprintf(f->error, sizeof(f->error), "source cluster unreachable: %s", why);
			return -1;
		}
		if (mirror_rk_partitions(dst, t->dst, why, sizeof(why)) == -2) {
			f->unreachable = "destination";
			snprintf(f->error, sizeof(f->error), "destination of mirror %s unreachable: %s", f->mirror, why);
			return -1;
		}
		n = n < 0 ? 0 : n;
		t->parts = calloc((size_t)(n ? n : 1), sizeof(*t->parts));
		if (!t->parts) {
			snprintf(f->error, sizeof(f->error), "out of memory");
			return -1;
		}
		t->npart = n;
		for (int32_t p = 0; p < n; p++)
			t->parts[p] = (struct fo_part){.partition = p, .src_hw = -1, .dst_hw = -1, .progress = -1,
						       .target = -1, .confirmed = -1, .src_hw_after = -1};
	}
	return 0;
}

void *mirror_failover_job_main(void *arg)
{
	struct mirror_failover *f = arg;
	char err[512];
	rd_kafka_t *src = f->dest_only ? NULL : fo_client(&f->src_conf, err, sizeof(err));
	rd_kafka_t *dst = fo_client(&f->dst_conf, err, sizeof(err));
	rd_kafka_t *mm2 = NULL, *dmatch = NULL;
	int32_t nsyncparts = 0;
	if ((!f->dest_only && !src) || !dst) {
		snprintf(f->error, sizeof(f->error), "cannot create a client: %.200s", err);
		goto out;
	}
	if (resolve_partitions(f, src, dst) != 0)
		goto out;
	if (f->offsets == CONF_OFFSETS_MM2 && !f->dest_only) {
		char why[256];
		mm2 = fo_client(&f->mm2_conf, err, sizeof(err));
		dmatch = fo_client(&f->match_conf, err, sizeof(err)); /* NULL: the offset-syncs alone */
		nsyncparts = mm2 ? mirror_rk_partitions(mm2, f->mm2_topic, why, sizeof(why)) : -1;
		if (nsyncparts <= 0) {
			snprintf(f->error, sizeof(f->error), "offset-syncs topic %s unreadable", f->mm2_topic);
			goto out;
		}
		rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(nsyncparts);
		for (int32_t p = 0; p < nsyncparts; p++)
			rd_kafka_topic_partition_list_add(l, f->mm2_topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
		rd_kafka_assign(mm2, l);
		rd_kafka_topic_partition_list_destroy(l);
	}
	int64_t start = mirror_now_ms(), deadline = start + f->timeout_ms;
	int64_t settle = start + (f->fencing ? FO_FENCE_SETTLE_MS : 0);
	for (bool first = true;; first = false) {
		if (mm2)
			mirror_failover_mm2_read(f, mm2, nsyncparts);
		measure(f, src, dst, dmatch);
		for (size_t i = 0; i < f->ntopics; i++)
			for (int32_t k = 0; k < f->topics[i].npart; k++) {
				struct fo_part *fp = &f->topics[i].parts[k];
				if (f->dest_only)
					fp->target = fp->confirmed;
				else if (first || f->fencing || fp->target < 0)
					fp->target = fp->src_hw; /* fenced: the HW stands still; else the first sample */
			}
		f->drained = caught_up(f);
		int64_t now = mirror_now_ms();
		if (f->dest_only || (f->drained && now >= settle) || now >= deadline || atomic_load(&f->stop))
			break;
		usleep(200000);
	}
	judge(f, src, dst);
	if (f->failover && !atomic_load(&f->stop) && (f->verified || f->dry_run))
		mirror_failover_move_offsets(f, src, dst);
	else if (!f->failover && !f->dest_only && f->nsync_re && !atomic_load(&f->stop))
		mirror_failover_compare_offsets(f, src, dst);
out:
	if (mm2) {
		rd_kafka_consumer_close(mm2);
		rd_kafka_destroy(mm2);
	}
	if (src)
		rd_kafka_destroy(src);
	if (dst)
		rd_kafka_destroy(dst);
	if (dmatch)
		rd_kafka_destroy(dmatch);
	if (mirror_bridge_post_msg(f->bridge, MIRROR_MSG_FAILOVER_DONE, 0, f, NULL, 0) != 0)
		LOG_E("mirror_failover_post_failed", "mirror=%s reason=\"out of memory\"", f->mirror);
	return NULL;
}
