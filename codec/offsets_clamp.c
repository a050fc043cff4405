/*
 * ListOffsets (key 2, v1–v11) and OffsetForLeaderEpoch (key 23, v2–v4)
 * responses clamped to the mirrored high watermark (KIP unified
 * sourceHW), so consumer lag, seekToEnd and truncation checks agree with the
 * clamped Fetch. In-place edits of fixed-width fields only: every other byte
 * (tagged fields included) stays as the broker wrote it.
 */
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"

#define LIST_OFFSETS_MIN 1
#define LIST_OFFSETS_MAX 11
#define OFLE_MIN 2
#define OFLE_MAX 4

/* ListOffsets query timestamps (spec ListOffsetsRequest). */
#define TS_LATEST (-1)
#define TS_EARLIEST (-2)
#define TS_MAX_TIMESTAMP (-3)
#define TS_EARLIEST_LOCAL (-4)
#define TS_LATEST_TIERED (-5)

static void be(uint8_t *p, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

static void edit_int(struct codec_reader *r, struct codec_edits *e, size_t off, int64_t v, size_t n)
{
	uint8_t b[8];
	be(b, (uint64_t)v, n);
	if (codec_edits_add(e, off, n, b, n) != 0)
		codec_reader_fail(r, CODEC_ERR_NOMEM);
}

/* The request's Timestamp for (topic, partition); LATEST when not asked. */
static int64_t query_of(const struct codec_list_offsets_request *req, const char *topic, int32_t partition)
{
	for (size_t t = 0; req && topic && t < req->ntopics; t++) {
		if (!req->topics[t].name || strcmp(req->topics[t].name, topic) != 0)
			continue;
		for (size_t p = 0; p < req->topics[t].npartitions; p++)
			if (req->topics[t].partitions[p].partition_index == partition)
				return req->topics[t].partitions[p].timestamp;
	}
	return TS_LATEST;
}

enum codec_err codec_list_offsets_response_clamp(const struct codec_iov *iov, int niov,
						 int16_t version,
						 const struct codec_list_offsets_request *req,
						 codec_clamp_fn fn, void *fn_ctx,
						 struct codec_offsets_clamp *out)
{
	struct codec_reader r;
	if (!codec_decode_start(&r, iov, niov, CODEC_API_LIST_OFFSETS, version,
				LIST_OFFSETS_MIN, LIST_OFFSETS_MAX, out, sizeof(*out)))
		return CODEC_ERR_UNSUPPORTED;
	if (version >= 2)
		codec_read_i32(&r); /* ThrottleTimeMs */
	int32_t nt = codec_read_array_len(&r, false, 3);
	for (int32_t t = 0; t < nt && !r.err; t++) {
		char *Name = codec_read_str(&r, false);
		int32_t np = codec_read_array_len(&r, false, 22);
		for (int32_t i = 0; i < np && !r.err; i++) {
			int32_t PartitionIndex = codec_read_i32(&r);
			size_t err_off = r.off;
			int16_t ErrorCode = codec_read_i16(&r);
			size_t ts_off = r.off;
			codec_read_i64(&r); /* Timestamp */
			size_t off_off = r.off;
			int64_t Offset = codec_read_i64(&r);
			size_t epoch_off = r.off;
			if (version >= 4)
				codec_read_i32(&r); /* LeaderEpoch */
			codec_read_tags(&r, NULL, NULL, NULL);
			int64_t mhw;
			if (r.err || ErrorCode != CODEC_ERROR_NONE || Offset < 0 ||
			    fn(fn_ctx, Name, NULL, PartitionIndex, &mhw) <= 0)
				continue;
			int64_t q = query_of(req, Name, PartitionIndex);
			bool end_query = q == TS_LATEST || q == TS_EARLIEST || q == TS_EARLIEST_LOCAL ||
					 q == TS_LATEST_TIERED;
			if (mhw < 0) {
				edit_int(&r, &out->edits, err_off, version >= 5 ? CODEC_ERROR_OFFSET_NOT_AVAILABLE
									: CODEC_ERROR_LEADER_NOT_AVAILABLE, 2);
				edit_int(&r, &out->edits, ts_off, -1, 8);
				edit_int(&r, &out->edits, off_off, -1, 8);
				out->clamped++;
			} else if (end_query && Offset > mhw) {
				edit_int(&r, &out->edits, off_off, mhw, 8);
				out->clamped++;
			} else if (!end_query && Offset >= mhw) {
				/* the record it names is not mirrored yet: none visible */
				edit_int(&r, &out->edits, ts_off, -1, 8);
				edit_int(&r, &out->edits, off_off, -1, 8);
				if (version >= 4)
					edit_int(&r, &out->edits, epoch_off, -1, 4);
				out->clamped++;
			}
		}
		codec_read_tags(&r, NULL, NULL, NULL);
		free(Name);
	}
	codec_read_tags(&r, NULL, NULL, NULL);
	return codec_reader_finish(&r);
}

int32_t codec_offset_for_leader_epoch_replica_id(const struct codec_iov *iov, int niov, int16_t version)
{
	if (version < 3)
		return -1;
	struct codec_reader r;
	codec_reader_init(&r, iov, niov);
	int32_t id = codec_read_i32(&r);
	return r.err ? -1 : id;
}

enum codec_err codec_offset_for_leader_epoch_response_clamp(const struct codec_iov *iov, int niov,
							    int16_t version, codec_clamp_fn fn,
							    void *fn_ctx,
							    struct codec_offsets_clamp *out)
{
	struct codec_reader r;
	if (!codec_decode_start(&r, iov, niov, CODEC_API_OFFSET_FOR_LEADER_EPOCH, version,
				OFLE_MIN, OFLE_MAX, out, sizeof(*out)))
		return CODEC_ERR_UNSUPPORTED;
	codec_read_i32(&r); /* ThrottleTimeMs (v2+) */
	int32_t nt = codec_read_array_len(&r, false, 3);
	for (int32_t t = 0; t < nt && !r.err; t++) {
		char *Topic = codec_read_str(&r, false);
		int32_t np = codec_read_array_len(&r, false, 18);
		for (int32_t i = 0; i < np && !r.err; i++) {
			size_t err_off = r.off;
			int16_t ErrorCode = codec_read_i16(&r);
			int32_t Partition = codec_read_i32(&r);
			codec_read_i32(&r); /* LeaderEpoch (v1+) */
			size_t end_off = r.off;
			int64_t EndOffset = codec_read_i64(&r);
			codec_read_tags(&r, NULL, NULL, NULL);
			int64_t mhw;
			if (r.err || ErrorCode != CODEC_ERROR_NONE || EndOffset < 0 ||
			    fn(fn_ctx, Topic, NULL, Partition, &mhw) <= 0)
				continue;
			if (mhw < 0) {
				edit_int(&r, &out->edits, err_off, CODEC_ERROR_OFFSET_NOT_AVAILABLE, 2);
				edit_int(&r, &out->edits, end_off, -1, 8);
				out->clamped++;
			} else if (EndOffset > mhw) {
				edit_int(&r, &out->edits, end_off, mhw, 8);
				out->clamped++;
			}
		}
		codec_read_tags(&r, NULL, NULL, NULL);
		free(Topic);
	}
	codec_read_tags(&r, NULL, NULL, NULL);
	return codec_reader_finish(&r);
}
