/* codec/fetch_clamp.c and codec/offsets_clamp.c: the clamp to the mirrored
 * high watermark, every Fetch version 4–18. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"

/* ---- building Fetch responses ------------------------------------------- */

/* A RecordBatch v2 of `count` records (offsets base..base+count-1) with
 * `payload` bytes of opaque record data; `attributes` as given (compression,
 * transactional bits: the clamp must not care). */
static void write_batch(struct codec_buf *b, int64_t base, int32_t count, int16_t attributes,
			size_t payload)
{
	codec_write_i64(b, base);                         /* baseOffset */
	codec_write_i32(b, (int32_t)(49 + payload));      /* batchLength */
	codec_write_i32(b, 0);                            /* partitionLeaderEpoch */
	codec_write_i8(b, 2);                             /* magic */
	codec_write_i32(b, 0x12345678);                   /* crc (not checked) */
	codec_write_i16(b, attributes);
	codec_write_i32(b, count - 1);                    /* lastOffsetDelta */
	codec_write_i64(b, 1000);                         /* baseTimestamp */
	codec_write_i64(b, 2000);                         /* maxTimestamp */
	codec_write_i64(b, (attributes & 0x10) ? 77 : -1); /* producerId */
	codec_write_i16(b, 0);                            /* producerEpoch */
	codec_write_i32(b, 0);                            /* baseSequence */
	codec_write_i32(b, count);                        /* recordsCount */
	for (size_t i = 0; i < payload; i++)
		codec_write_i8(b, (int8_t)(0xA0 + (base + (int64_t)i) % 16)); /* "records" */
}

struct batch_spec {
	int64_t base;
	int32_t count;
	int16_t attributes;
	size_t payload;
};

/* Records blob of `n` batches. */
static void records_blob(struct codec_buf *blob, const struct batch_spec *s, size_t n)
{
	codec_buf_init(blob, 1 << 24);
	for (size_t i = 0; i < n; i++)
		write_batch(blob, s[i].base, s[i].count, s[i].attributes, s[i].payload);
}

/*
 * A Fetch response body, version v: one topic "orders" (id 0x01…), partition
 * 0 with HW `hw`, LSO `lso`, one aborted transaction, the batches; partition
 * 1 with a NOT_LEADER error; v12+ a DivergingEpoch tag on partition 0, v16+
 * a NodeEndpoints tag at the top.
 */
static void fetch_body(struct codec_buf *b, int16_t v, int64_t hw, int64_t lso,
		       const struct codec_buf *blob)
{
	codec_buf_init(b, 1 << 24);
	b->flexible = v >= 12;
	codec_write_i32(b, 0);                 /* ThrottleTimeMs */
	if (v >= 7) {
		codec_write_i16(b, 0);         /* ErrorCode */
		codec_write_i32(b, 42);        /* SessionId */
	}
	codec_write_array_len(b, 1);
	if (v >= 13) {
		uint8_t id[16] = {0x01};
		codec_write_uuid(b, id);
	} else {
		codec_write_str(b, "orders");
	}
	codec_write_array_len(b, 2);
	/* partition 0 */
	codec_write_i32(b, 0);
	codec_write_i16(b, 0);
	codec_write_i64(b, hw);
	codec_write_i64(b, lso);
	if (v >= 5)
		codec_write_i64(b, 3);         /* LogStartOffset */
	codec_write_array_len(b, 1);           /* AbortedTransactions */
	codec_write_i64(b, 77);
	codec_write_i64(b, 10);
	if (b->flexible)
		codec_write_uvarint(b, 0);
	if (v >= 11)
		codec_write_i32(b, -1);        /* PreferredReadReplica */
	if (b->flexible)
		codec_write_uvarint(b, (uint32_t)blob->len + 1);
	else
		codec_write_i32(b, (int32_t)blob->len);
	codec_write_raw(b, blob->data, blob->len);
	if (b->flexible) {                     /* tag 0 DivergingEpoch {Epoch 3, EndOffset 9, tags} */
		codec_write_uvarint(b, 1);
		codec_write_uvarint(b, 0);
		codec_write_uvarint(b, 13);
		codec_write_i32(b, 3);
		codec_write_i64(b, 9);
		codec_write_uvarint(b, 0);
	}
	/* partition 1: an error, no records */
	codec_write_i32(b, 1);
	codec_write_i16(b, CODEC_ERROR_NOT_LEADER_OR_FOLLOWER);
	codec_write_i64(b, -1);
	codec_write_i64(b, -1);
	if (v >= 5)
		codec_write_i64(b, -1);
	codec_write_array_len(b, -1);
	if (v >= 11)
		codec_write_i32(b, -1);
	if (b->flexible) {
		codec_write_uvarint(b, 1);     /* empty records */
		codec_write_uvarint(b, 0);
	} else {
		codec_write_i32(b, 0);
	}
	if (b->flexible)
		codec_write_uvarint(b, 0);     /* topic tags */
	if (b->flexible) {
		if (v >= 16) {                 /* tag 0 NodeEndpoints: one node */
			struct codec_buf ne;
			codec_buf_init(&ne, 1024);
			ne.flexible = true;
			codec_write_array_len(&ne, 1);
			codec_write_i32(&ne, 1);
			codec_write_str(&ne, "broker-1");
			codec_write_i32(&ne, 9092);
			codec_write_str(&ne, NULL);
			codec_write_uvarint(&ne, 0);
			codec_write_uvarint(b, 1);
			codec_write_uvarint(b, 0);
			codec_write_uvarint(b, (uint32_t)ne.len);
			codec_write_raw(b, ne.data, ne.len);
			codec_buf_free(&ne);
		} else {
			codec_write_uvarint(b, 0);
		}
	}
	cr_assert(eq(i64, (int64_t)(b->err), (int64_t)(CODEC_OK)));
}

/* Apply edits to a contiguous body. */
static uint8_t *apply_edits(const uint8_t *body, size_t len, const struct codec_edits *e, size_t *out_len)
{
	size_t n = (size_t)((int64_t)len + e->delta);
	uint8_t *o = malloc(n + 1);
	size_t pos = 0, w = 0;
	for (size_t i = 0; i < e->n; i++) {
		memcpy(o + w, body + pos, e->v[i].off - pos);
		w += e->v[i].off - pos;
		memcpy(o + w, e->v[i].ins, e->v[i].ins_len);
		w += e->v[i].ins_len;
		pos = e->v[i].off + e->v[i].del;
	}
	memcpy(o + w, body + pos, len - pos);
	w += len - pos;
	cr_assert(eq(i64, (int64_t)(w), (int64_t)(n)));
	*out_len = n;
	return o;
}

struct hw_ctx {
	int64_t mhw;
	int gated;
	int calls;
};

static int hw_fn(void *ctx, const char *topic, const uint8_t *topic_id, int32_t partition,
		 int64_t *mhw)
{
	struct hw_ctx *h = ctx;
	h->calls++;
	cr_assert(topic ? strcmp(topic, "orders") == 0 : topic_id && topic_id[0] == 0x01);
	cr_assert(eq(i64, (int64_t)(partition), (int64_t)(0))); /* the error partition is never asked */
	*mhw = h->mhw;
	return h->gated;
}

/* Where partition 0's records are in a (clamped) body, via a reader walk. */
static struct codec_slice p0_records(const uint8_t *body, size_t len, int16_t v, int64_t *hw, int64_t *lso)
{
	struct codec_iov iov = {body, len};
	struct codec_fetch_response_scan s;
	cr_assert(eq(i64, (int64_t)(codec_fetch_response_scan(&iov, 1, v, &s)), (int64_t)(CODEC_OK)), "clamped body must decode (v%d)", v);
	*hw = s.partitions[0].high_watermark;
	*lso = s.partitions[0].last_stable_offset;
	/* records follow: LogStartOffset, aborted (1 entry), PreferredReadReplica */
	struct codec_reader r;
	codec_reader_init(&r, &iov, 1);
	r.flexible = v >= 12;
	codec_reader_seek(&r, s.partitions[0].last_stable_offset_off + 8);
	if (v >= 5)
		codec_read_i64(&r);
	int32_t na = codec_read_array_len(&r, true, 16);
	for (int32_t i = 0; i < na; i++) {
		codec_read_i64(&r);
		codec_read_i64(&r);
		codec_read_tags(&r, NULL, NULL, NULL);
	}
	if (v >= 11)
		codec_read_i32(&r);
	struct codec_slice rec = codec_read_slice(&r, true, true);
	cr_assert(eq(i64, (int64_t)(r.err), (int64_t)(CODEC_OK)));
	codec_fetch_response_scan_free(&s);
	return rec;
}

/* The standard record set: 3 batches, offsets 10–14, 15–19, 20–29; the
 * second compressed (attributes gzip), the third transactional. ~200 bytes
 * per batch so that flexible lengths cross the 1-/2-byte uvarint boundary. */
static const struct batch_spec BATCHES[] = {
	{10, 5, 0x0000, 60},
	{15, 5, 0x0001, 60},
	{20, 10, 0x0010, 60},
};
#define BATCH_SIZE (61 + 60)

/* Clamp at `mhw`; expect `kept` whole batches and HW/LSO min'ed. */
static void check_clamp(int16_t v, int64_t mhw, size_t kept)
{
	struct codec_buf blob, body;
	records_blob(&blob, BATCHES, 3);
	fetch_body(&body, v, 30, 25, &blob);
	struct codec_iov iov[3] = {{body.data, 7}, {body.data + 7, 50}, {body.data + 57, body.len - 57}};
	struct hw_ctx h = {mhw, 1, 0};
	struct codec_fetch_clamp fc;
	cr_assert(eq(i64, (int64_t)(codec_fetch_response_clamp(iov, 3, v, hw_fn, &h, &fc)), (int64_t)(CODEC_OK)), "v%d", v);
	cr_assert(eq(i64, (int64_t)(h.calls), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(fc.nparts), (int64_t)(1)));
	size_t len;
	uint8_t *out = apply_edits(body.data, body.len, &fc.edits, &len);
	int64_t hw, lso;
	struct codec_slice rec = p0_records(out, len, v, &hw, &lso);
	int64_t limit = mhw >= 0 ? mhw : (v >= 5 ? 3 : 0);
	cr_assert(eq(i64, (int64_t)(hw), (int64_t)(limit < 30 ? limit : 30)), "v%d mhw %lld: hw %lld", v, (long long)mhw, (long long)hw);
	cr_assert(eq(i64, (int64_t)(lso), (int64_t)(limit < 25 ? limit : 25)));
	cr_assert(eq(i64, (int64_t)((size_t)rec.len), (int64_t)(kept * BATCH_SIZE)), "v%d mhw %lld: kept %d", v, (long long)mhw, rec.len);
	/* kept batches are the broker's bytes, unchanged */
	cr_assert(memcmp(out + rec.off, blob.data, (size_t)rec.len) == 0);
	cr_assert(eq(i64, (int64_t)(fc.batches_kept), (int64_t)(kept)));
	cr_assert(eq(i64, (int64_t)(fc.batches_dropped), (int64_t)(3 - kept)));
	cr_assert(eq(i64, (int64_t)(fc.record_bytes_left), (int64_t)(kept * BATCH_SIZE)));
	cr_assert(eq(i64, (int64_t)(fc.bytes_dropped), (int64_t)((int64_t)((3 - kept) * BATCH_SIZE))));
	int64_t want_records = 0;
	for (size_t i = kept; i < 3; i++)
		want_records += BATCHES[i].count;
	cr_assert(eq(i64, (int64_t)(fc.records_dropped), (int64_t)(want_records)));
	cr_assert(eq(i64, (int64_t)(fc.parts[0].wait_above), (int64_t)(kept < 3 ? BATCHES[kept].base + BATCHES[kept].count - 1 : -1)));
	/* everything after the records (DivergingEpoch, the error partition,
	 * NodeEndpoints) is byte for byte the broker's */
	int64_t ohw, olso;
	struct codec_slice orig = p0_records(body.data, body.len, v, &ohw, &olso);
	size_t tail = body.len - (orig.off + (size_t)orig.len);
	cr_assert(eq(i64, (int64_t)(len - (rec.off + (size_t)rec.len)), (int64_t)(tail)));
	cr_assert(memcmp(out + len - tail, body.data + body.len - tail, tail) == 0);
	/* before the records only HW and LSO changed (and the length prefix may shrink) */
	cr_assert(le(i64, (int64_t)(rec.off), (int64_t)(orig.off)));
	cr_assert(ge(i64, (int64_t)(rec.off + 1), (int64_t)(orig.off)));
	free(out);
	codec_fetch_clamp_free(&fc);
	codec_buf_free(&blob);
	codec_buf_free(&body);
}

Test(codec, fetch_clamp_at_batch_boundary_every_version)
{
	for (int16_t v = 4; v <= 18; v++) {
		check_clamp(v, 20, 2);  /* batches ending 14 and 19 kept, 20–29 left out */
		check_clamp(v, 15, 1);
	}
}

Test(codec, fetch_clamp_mid_batch_leaves_the_whole_batch_out)
{
	for (int16_t v = 4; v <= 18; v++) {
		check_clamp(v, 17, 1);  /* 15–19 not all mirrored: left out whole */
		check_clamp(v, 29, 2);  /* the last offset 29 is not below 29 */
	}
}

Test(codec, fetch_clamp_all_batches_dropped_and_unknown_progress)
{
	for (int16_t v = 4; v <= 18; v++) {
		check_clamp(v, 10, 0);
		check_clamp(v, 0, 0);
		check_clamp(v, -1, 0);  /* unknown: log start offset, nothing */
	}
}

Test(codec, fetch_clamp_no_change_when_mirrored_or_not_gated)
{
	for (int16_t v = 4; v <= 18; v++) {
		struct codec_buf blob, body;
		records_blob(&blob, BATCHES, 3);
		fetch_body(&body, v, 30, 25, &blob);
		struct codec_iov iov = {body.data, body.len};
		struct hw_ctx h = {30, 1, 0};
		struct codec_fetch_clamp fc;
		cr_assert(eq(i64, (int64_t)(codec_fetch_response_clamp(&iov, 1, v, hw_fn, &h, &fc)), (int64_t)(CODEC_OK)));
		cr_assert(eq(i64, (int64_t)(fc.edits.n), (int64_t)(0)));  /* mirrored HW = broker HW: byte for byte */
		cr_assert(eq(i64, (int64_t)(fc.record_bytes_left), (int64_t)(blob.len)));
		codec_fetch_clamp_free(&fc);
		h = (struct hw_ctx){-1, 0, 0};
		cr_assert(eq(i64, (int64_t)(codec_fetch_response_clamp(&iov, 1, v, hw_fn, &h, &fc)), (int64_t)(CODEC_OK)));
		cr_assert(eq(i64, (int64_t)(fc.edits.n), (int64_t)(0)));  /* not gated */
		codec_fetch_clamp_free(&fc);
		codec_buf_free(&blob);
		codec_buf_free(&body);
	}
}

/*
 * Kafka takes a Fetch response's HighWatermark and LastStableOffset before it
 * reads the log, and the read goes up to the HW (LSO) of its own moment: a
 * response may carry batches at or past its own HighWatermark. Two batches,
 * 10–19 and 20–29, under `hw`/`lso`, clamped at `mhw`: returns the clamped
 * body's partition 0 records length, with its HW and LSO.
 */
static size_t clamp_past_own_hw(int16_t v, int64_t hw, int64_t lso, int64_t mhw, int64_t *out_hw,
				int64_t *out_lso, struct codec_fetch_clamp *fc)
{
	static const struct batch_spec two[] = {{10, 10, 0x0000, 60}, {20, 10, 0x0010, 60}};
	struct codec_buf blob, body;
	records_blob(&blob, two, 2);
	fetch_body(&body, v, hw, lso, &blob);
	struct codec_iov iov = {body.data, body.len};
	struct hw_ctx h = {mhw, 1, 0};
	cr_assert(eq(i64, (int64_t)(codec_fetch_response_clamp(&iov, 1, v, hw_fn, &h, fc)), (int64_t)(CODEC_OK)), "v%d", v);
	size_t len;
	uint8_t *out = apply_edits(body.data, body.len, &fc->edits, &len);
	struct codec_slice rec = p0_records(out, len, v, out_hw, out_lso);
	/* what is kept is the broker's bytes, from the start */
	cr_assert(memcmp(out + rec.off, blob.data, (size_t)rec.len) == 0);
	free(out);
	codec_buf_free(&blob);
	codec_buf_free(&body);
	return (size_t)rec.len;
}

Test(codec, fetch_clamp_judges_batches_past_the_response_own_high_watermark)
{
	for (int16_t v = 4; v <= 18; v++) {
		/* HighWatermark 20 = mirrored HW 20, yet batch 20–29 came along */
		struct codec_fetch_clamp fc;
		int64_t hw, lso;
		size_t kept = clamp_past_own_hw(v, 20, 20, 20, &hw, &lso, &fc);
		cr_assert(eq(i64, (int64_t)(kept), (int64_t)(BATCH_SIZE)), "v%d: batch 20–29 is past the mirrored HW: left out", v);
		cr_assert(eq(i64, (int64_t)(hw), (int64_t)(20)));
		cr_assert(eq(i64, (int64_t)(lso), (int64_t)(20)));
		cr_assert(eq(i64, (int64_t)(fc.nparts), (int64_t)(1)));
		cr_assert(eq(i64, (int64_t)(fc.parts[0].batches_kept), (int64_t)(1)));
		cr_assert(eq(i64, (int64_t)(fc.parts[0].batches_dropped), (int64_t)(1)));
		cr_assert(eq(i64, (int64_t)(fc.records_dropped), (int64_t)(10)));
		cr_assert(eq(i64, (int64_t)(fc.bytes_dropped), (int64_t)((int64_t)BATCH_SIZE)));
		cr_assert(eq(i64, (int64_t)(fc.record_bytes_left), (int64_t)(BATCH_SIZE)));
		cr_assert(eq(i64, (int64_t)(fc.parts[0].wait_above), (int64_t)(29)), "held until the mirrored HW passes 29");
		cr_assert(eq(i64, (int64_t)(fc.parts[0].records_end), (int64_t)(30)), "the broker had read up to 30");
		codec_fetch_clamp_free(&fc);
		/* nothing at all mirrored past 15 while the response says 10: left out too */
		kept = clamp_past_own_hw(v, 10, 10, 15, &hw, &lso, &fc);
		cr_assert(eq(i64, (int64_t)(kept), (int64_t)(0)), "v%d", v);
		cr_assert(eq(i64, (int64_t)(fc.record_bytes_left), (int64_t)(0)));
		codec_fetch_clamp_free(&fc);
	}
}

Test(codec, fetch_clamp_judges_batches_past_the_response_own_last_stable_offset)
{
	for (int16_t v = 4; v <= 18; v++) {
		/* read_committed: LastStableOffset 15 below both batches' ends, HW 20 =
		 * mirrored HW; the read went to a later LSO of 30 */
		struct codec_fetch_clamp fc;
		int64_t hw, lso;
		size_t kept = clamp_past_own_hw(v, 20, 15, 20, &hw, &lso, &fc);
		cr_assert(eq(i64, (int64_t)(kept), (int64_t)(BATCH_SIZE)), "v%d: batch 20–29 is past the mirrored HW: left out", v);
		cr_assert(eq(i64, (int64_t)(hw), (int64_t)(20)));
		cr_assert(eq(i64, (int64_t)(lso), (int64_t)(15)), "the broker's LSO below the mirrored HW stays");
		cr_assert(eq(i64, (int64_t)(fc.parts[0].batches_dropped), (int64_t)(1)));
		codec_fetch_clamp_free(&fc);
		/* mirrored up to 30: both batches are mirrored, the response byte for byte */
		kept = clamp_past_own_hw(v, 20, 15, 30, &hw, &lso, &fc);
		cr_assert(eq(i64, (int64_t)(kept), (int64_t)(2 * BATCH_SIZE)));
		cr_assert(eq(i64, (int64_t)(fc.edits.n), (int64_t)(0)), "v%d: every batch below the mirrored HW: no edit", v);
		cr_assert(eq(i64, (int64_t)(fc.record_bytes_left), (int64_t)(2 * BATCH_SIZE)));
		codec_fetch_clamp_free(&fc);
	}
}

Test(codec, fetch_clamp_flexible_length_shrinks_its_varint)
{
	/* 3 batches of 121 bytes: 363 → 2-byte uvarint; 1 kept: 121+1 = 122 → 1 byte */
	struct codec_buf blob, body;
	records_blob(&blob, BATCHES, 3);
	fetch_body(&body, 12, 30, 25, &blob);
	struct codec_iov iov = {body.data, body.len};
	struct hw_ctx h = {15, 1, 0};
	struct codec_fetch_clamp fc;
	cr_assert(eq(i64, (int64_t)(codec_fetch_response_clamp(&iov, 1, 12, hw_fn, &h, &fc)), (int64_t)(CODEC_OK)));
	cr_assert(eq(i64, (int64_t)(fc.edits.delta), (int64_t)(-(int64_t)(2 * BATCH_SIZE) - 1)));
	codec_fetch_clamp_free(&fc);
	codec_buf_free(&blob);
	codec_buf_free(&body);
}

Test(codec, fetch_clamp_trailing_partial_batch)
{
	/* the broker cut the last batch (max bytes): judged by its header */
	for (int16_t v = 4; v <= 18; v++) {
		struct codec_buf blob, body;
		records_blob(&blob, BATCHES, 3);
		blob.len -= 30;
		fetch_body(&body, v, 30, 25, &blob);
		struct codec_iov iov = {body.data, body.len};
		struct hw_ctx h = {30, 1, 0};
		struct codec_fetch_clamp fc;
		h.mhw = 29; /* last offset of the cut batch is 29: left out */
		cr_assert(eq(i64, (int64_t)(codec_fetch_response_clamp(&iov, 1, v, hw_fn, &h, &fc)), (int64_t)(CODEC_OK)));
		cr_assert(eq(i64, (int64_t)(fc.parts[0].kept_len), (int64_t)(2 * BATCH_SIZE)));
		cr_assert(eq(i64, (int64_t)(fc.parts[0].batches_dropped), (int64_t)(0))); /* a cut batch is not counted */
		codec_fetch_clamp_free(&fc);
		codec_buf_free(&blob);
		codec_buf_free(&body);
	}
}

Test(codec, fetch_clamp_every_truncated_prefix_fails_cleanly)
{
	for (int16_t v = 4; v <= 18; v++) {
		struct codec_buf blob, body;
		records_blob(&blob, BATCHES, 3);
		fetch_body(&body, v, 30, 25, &blob);
		for (size_t n = 0; n < body.len; n++) {
			struct codec_iov iov = {body.data, n};
			struct hw_ctx h = {15, 1, 0};
			struct codec_fetch_clamp fc;
			cr_assert(ne(i64, (int64_t)(codec_fetch_response_clamp(&iov, 1, v, hw_fn, &h, &fc)), (int64_t)(CODEC_OK)),
				      "v%d prefix %zu", v, n);
			codec_fetch_clamp_free(&fc);
		}
		codec_buf_free(&blob);
		codec_buf_free(&body);
	}
}

static int golden_fn(void *ctx, const char *topic, const uint8_t *topic_id, int32_t partition,
		     int64_t *mhw)
{
	*mhw = *(int64_t *)ctx;
	return 1;
}

Test(codec, fetch_clamp_golden_frames_stay_decodable)
{
	/* frames written by Kafka's own serializers; captured Java/kcat frames */
	for (int16_t v = 4; v <= 18; v++) {
		struct golden g;
		golden_load_v(&g, "fetch_resp", false, CODEC_API_FETCH, v);
		struct codec_iov body = golden_body(&g);
		for (int64_t m = -1; m < 6000; m = m < 10 ? m + 1 : m * 3) {
			struct codec_fetch_clamp fc;
			cr_assert(eq(i64, (int64_t)(codec_fetch_response_clamp(&body, 1, v, golden_fn, &m, &fc)), (int64_t)(CODEC_OK)));
			size_t len;
			uint8_t *out = apply_edits(body.base, body.len, &fc.edits, &len);
			struct codec_iov o = {out, len};
			struct codec_fetch_response_scan s;
			cr_assert(eq(i64, (int64_t)(codec_fetch_response_scan(&o, 1, v, &s)), (int64_t)(CODEC_OK)), "v%d m %lld", v, (long long)m);
			for (size_t i = 0; m >= 0 && i < s.npartitions; i++)
				if (s.partitions[i].error_code == 0)
					cr_assert(le(i64, (int64_t)(s.partitions[i].high_watermark), (int64_t)(m)));
			codec_fetch_response_scan_free(&s);
			free(out);
			codec_fetch_clamp_free(&fc);
		}
		golden_free(&g);
	}
}

/* ---- request ------------------------------------------------------------ */

Test(codec, fetch_request_info_replica_id_and_max_wait)
{
	for (int16_t v = 4; v <= 18; v++) {
		struct codec_buf b;
		codec_buf_init(&b, 4096);
		b.flexible = v >= 12;
		if (v < 15)
			codec_write_i32(&b, 3);   /* ReplicaId: a follower */
		codec_write_i32(&b, 500);          /* MaxWaitMs */
		codec_write_i32(&b, 1);
		codec_write_i32(&b, 1 << 20);
		codec_write_i8(&b, 1);
		if (v >= 7) {
			codec_write_i32(&b, 0);
			codec_write_i32(&b, -1);
		}
		codec_write_array_len(&b, 1);
		if (v >= 13) {
			uint8_t id[16] = {1};
			codec_write_uuid(&b, id);
		} else {
			codec_write_str(&b, "orders");
		}
		codec_write_array_len(&b, 1);
		codec_write_i32(&b, 0);
		if (v >= 9)
			codec_write_i32(&b, -1);
		codec_write_i64(&b, 10);
		if (v >= 12)
			codec_write_i32(&b, -1);
		if (v >= 5)
			codec_write_i64(&b, -1);
		codec_write_i32(&b, 1 << 20);
		if (b.flexible)
			codec_write_uvarint(&b, 0);
		if (b.flexible)
			codec_write_uvarint(&b, 0);
		if (v >= 7)
			codec_write_array_len(&b, 0);
		if (v >= 11)
			codec_write_str(&b, "");
		if (b.flexible) {
			if (v >= 15) { /* tag 1 ReplicaState {ReplicaId 3, ReplicaEpoch 7} */
				codec_write_uvarint(&b, 1);
				codec_write_uvarint(&b, 1);
				codec_write_uvarint(&b, 13);
				codec_write_i32(&b, 3);
				codec_write_i64(&b, 7);
				codec_write_uvarint(&b, 0);
			} else {
				codec_write_uvarint(&b, 0);
			}
		}
		struct codec_iov iov = {b.data, b.len};
		struct codec_fetch_request_info fi;
		cr_assert(eq(i64, (int64_t)(codec_fetch_request_info(&iov, 1, v, &fi)), (int64_t)(CODEC_OK)), "v%d", v);
		cr_assert(eq(i64, (int64_t)(fi.replica_id), (int64_t)(3)));
		cr_assert(eq(i64, (int64_t)(fi.max_wait_ms), (int64_t)(500)));
		cr_assert(eq(i64, (int64_t)(fi.isolation_level), (int64_t)(1)));
		cr_assert(eq(i64, (int64_t)(fi.npartitions), (int64_t)(1)));
		for (size_t n = 0; n < b.len; n++) {
			iov.len = n;
			cr_assert(ne(i64, (int64_t)(codec_fetch_request_info(&iov, 1, v, &fi)), (int64_t)(CODEC_OK)));
		}
		codec_buf_free(&b);
	}
}

/* ---- ListOffsets and OffsetForLeaderEpoch -------------------------------- */

static int lo_fn(void *ctx, const char *topic, const uint8_t *topic_id, int32_t partition,
		 int64_t *mhw)
{
	*mhw = *(int64_t *)ctx;
	return strcmp(topic, "orders") == 0;
}

/* One topic "orders", partitions 0..n-1 answering (timestamp, offset). */
static void lo_body(struct codec_buf *b, int16_t v, const int64_t (*ans)[2], int n)
{
	codec_buf_init(b, 4096);
	b->flexible = v >= 6;
	if (v >= 2)
		codec_write_i32(b, 0);
	codec_write_array_len(b, 1);
	codec_write_str(b, "orders");
	codec_write_array_len(b, n);
	for (int i = 0; i < n; i++) {
		codec_write_i32(b, i);
		codec_write_i16(b, 0);
		codec_write_i64(b, ans[i][0]);
		codec_write_i64(b, ans[i][1]);
		if (v >= 4)
			codec_write_i32(b, 5);
		if (b->flexible)
			codec_write_uvarint(b, 0);
	}
	if (b->flexible) {
		codec_write_uvarint(b, 0);
		codec_write_uvarint(b, 0);
	}
}

Test(codec, list_offsets_clamp_latest_and_by_timestamp)
{
	/* queries: p0 latest, p1 by timestamp, p2 max-timestamp, p3 earliest, p4 by timestamp below */
	int64_t queries[5] = {-1, 1234, -3, -2, 1};
	int64_t ans[5][2] = {{-1, 100}, {1234, 80}, {9999, 95}, {-1, 0}, {1, 10}};
	for (int16_t v = 1; v <= 11; v++) {
		struct codec_list_offsets_request req = {0};
		struct codec_list_offsets_topic_req t = {0};
		struct codec_list_offsets_partition_req p[5];
		for (int i = 0; i < 5; i++)
			p[i] = (struct codec_list_offsets_partition_req){.partition_index = i, .timestamp = queries[i]};
		t.name = "orders";
		t.partitions = p;
		t.npartitions = 5;
		req.topics = &t;
		req.ntopics = 1;
		struct codec_buf b;
		lo_body(&b, v, ans, 5);
		struct codec_iov iov = {b.data, b.len};
		int64_t mhw = 50;
		struct codec_offsets_clamp oc;
		cr_assert(eq(i64, (int64_t)(codec_list_offsets_response_clamp(&iov, 1, v, &req, lo_fn, &mhw, &oc)), (int64_t)(CODEC_OK)));
		cr_assert(eq(i64, (int64_t)(oc.clamped), (int64_t)(3)));
		size_t len;
		uint8_t *out = apply_edits(b.data, b.len, &oc.edits, &len);
		struct codec_iov o = {out, len};
		struct codec_list_offsets_response r;
		cr_assert(eq(i64, (int64_t)(codec_list_offsets_response_decode(&o, 1, v, &r)), (int64_t)(CODEC_OK)));
		struct codec_list_offsets_partition_resp *rp = r.topics[0].partitions;
		cr_assert(eq(i64, (int64_t)(rp[0].offset), (int64_t)(50)));                         /* latest → mirrored HW */
		cr_assert(eq(i64, (int64_t)(rp[1].offset), (int64_t)(50 > 80 ? 80 : -1)));          /* record not mirrored: none */
		cr_assert(eq(i64, (int64_t)(rp[1].timestamp), (int64_t)(-1)));
		cr_assert(eq(i64, (int64_t)(rp[2].offset), (int64_t)(-1)));
		cr_assert(eq(i64, (int64_t)(rp[3].offset), (int64_t)(0)));                          /* below: unchanged */
		cr_assert(eq(i64, (int64_t)(rp[4].offset), (int64_t)(10)));
		if (v >= 4) {
			cr_assert(eq(i64, (int64_t)(rp[0].leader_epoch), (int64_t)(5)));
			cr_assert(eq(i64, (int64_t)(rp[1].leader_epoch), (int64_t)(-1)));
		}
		codec_list_offsets_response_free(&r);
		/* unknown mirrored HW: a retriable error */
		mhw = -1;
		codec_edits_free(&oc.edits);
		cr_assert(eq(i64, (int64_t)(codec_list_offsets_response_clamp(&iov, 1, v, &req, lo_fn, &mhw, &oc)), (int64_t)(CODEC_OK)));
		free(out);
		out = apply_edits(b.data, b.len, &oc.edits, &len);
		o = (struct codec_iov){out, len};
		cr_assert(eq(i64, (int64_t)(codec_list_offsets_response_decode(&o, 1, v, &r)), (int64_t)(CODEC_OK)));
		cr_assert(eq(i64, (int64_t)(r.topics[0].partitions[0].error_code), (int64_t)(v >= 5 ? CODEC_ERROR_OFFSET_NOT_AVAILABLE : CODEC_ERROR_LEADER_NOT_AVAILABLE)));
		codec_list_offsets_response_free(&r);
		free(out);
		codec_edits_free(&oc.edits);
		for (size_t n = 0; n < b.len; n++) {
			iov.len = n;
			cr_assert(ne(i64, (int64_t)(codec_list_offsets_response_clamp(&iov, 1, v, &req, lo_fn, &mhw, &oc)), (int64_t)(CODEC_OK)));
			codec_edits_free(&oc.edits);
		}
		codec_buf_free(&b);
	}
}

Test(codec, offset_for_leader_epoch_clamp_end_offset)
{
	for (int16_t v = 2; v <= 4; v++) {
		struct codec_buf b;
		codec_buf_init(&b, 4096);
		b.flexible = v >= 4;
		codec_write_i32(&b, 0);
		codec_write_array_len(&b, 1);
		codec_write_str(&b, "orders");
		codec_write_array_len(&b, 2);
		for (int i = 0; i < 2; i++) {
			codec_write_i16(&b, 0);
			codec_write_i32(&b, i);
			codec_write_i32(&b, 4);
			codec_write_i64(&b, i == 0 ? 100 : 20);
			if (b.flexible)
				codec_write_uvarint(&b, 0);
		}
		if (b.flexible) {
			codec_write_uvarint(&b, 0);
			codec_write_uvarint(&b, 0);
		}
		struct codec_iov iov = {b.data, b.len};
		int64_t mhw = 50;
		struct codec_offsets_clamp oc;
		cr_assert(eq(i64, (int64_t)(codec_offset_for_leader_epoch_response_clamp(&iov, 1, v, lo_fn, &mhw, &oc)), (int64_t)(CODEC_OK)));
		cr_assert(eq(i64, (int64_t)(oc.clamped), (int64_t)(1)));
		cr_assert(eq(i64, (int64_t)(oc.edits.n), (int64_t)(1)));
		size_t len;
		uint8_t *out = apply_edits(b.data, b.len, &oc.edits, &len);
		cr_assert(eq(i64, (int64_t)(len), (int64_t)(b.len)));
		uint8_t want[8] = {0, 0, 0, 0, 0, 0, 0, 50};
		cr_assert(memcmp(out + oc.edits.v[0].off, want, 8) == 0);
		free(out);
		codec_edits_free(&oc.edits);
		for (size_t n = 0; n < b.len; n++) {
			iov.len = n;
			cr_assert(ne(i64, (int64_t)(codec_offset_for_leader_epoch_response_clamp(&iov, 1, v, lo_fn, &mhw, &oc)), (int64_t)(CODEC_OK)));
			codec_edits_free(&oc.edits);
		}
		codec_buf_free(&b);
	}
}
