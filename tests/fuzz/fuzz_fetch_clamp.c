/*
 * Fuzz codec_fetch_response_clamp: the edits stay inside the body,
 * in order; applied, they give a Fetch response that scans again, in which
 * no gated partition without an error holds a whole batch whose last offset
 * is at or past the mirrored HW, whatever its HighWatermark says (walked
 * with codec_fetch_stream_next, not the clamp's own walk). The mirrored HW
 * comes from the input (byte 1's low bits pick -1, 0, small, huge).
 */
#include "fuzz.h"

static int64_t fuzz_mhw;

static int fn(void *ctx, const char *topic, const uint8_t *topic_id, int32_t partition, int64_t *mhw)
{
	(void)ctx;
	(void)topic;
	(void)topic_id;
	*mhw = fuzz_mhw;
	return partition % 3 != 2; /* some partitions are not gated */
}

/* Every whole batch of gated partitions without an error in the body `p`
 * (`len` bytes, version `v`) is below fuzz_mhw; stops quietly where the
 * body does not walk (the scan decided that already). */
static void only_mirrored_batches(const uint8_t *p, size_t len, int16_t v)
{
	struct codec_fetch_stream fs;
	codec_fetch_stream_init(&fs, v);
	size_t pos = 0;
	while (fs.stage != CODEC_STREAM_TAIL) {
		struct codec_iov one = {(uint8_t *)p + pos, len - pos};
		size_t used, records;
		enum codec_stream_stage st = fs.stage;
		if (codec_fetch_stream_next(&fs, &one, 1, &used, &records) != CODEC_OK ||
		    used + records > len - pos)
			return;
		pos += used;
		bool gated = st == CODEC_STREAM_PARTITION && fs.part.error_code == 0 &&
			     fs.part.partition % 3 != 2;
		for (size_t at = 0; gated && at < records;) {
			struct codec_batch_head b;
			size_t left = records - at;
			codec_batch_peek(p + pos + at, left < CODEC_BATCH_PEEK ? left : CODEC_BATCH_PEEK, left, &b);
			if (!b.partial && (fuzz_mhw < 0 || b.last >= fuzz_mhw))
				abort(); /* a consumer would read a record no mirror has */
			at += b.total;
		}
		pos += records;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct codec_iov iov[2];
	struct codec_fetch_clamp fc;
	if (size < 2)
		return 0;
	int16_t v = fuzz_input(data, size, 4, 18, iov);
	static const int64_t hws[4] = {-1, 0, 7, INT64_MAX / 2};
	fuzz_mhw = hws[data[1] & 3];
	const uint8_t *body = data + 2;
	size_t len = size - 2;
	enum codec_err err = codec_fetch_response_clamp(iov, 2, v, fn, NULL, &fc);
	if (err == CODEC_OK && !fc.edits.n)
		only_mirrored_batches(body, len, v);
	if (err == CODEC_OK && fc.edits.n) {
		size_t end = 0, w = 0;
		uint8_t *out = malloc(len + 8 * fc.edits.n + 1);
		for (size_t i = 0; i < fc.edits.n; i++) {
			const struct codec_edit *e = &fc.edits.v[i];
			if (e->off < end || e->off + e->del > len)
				abort();
			memcpy(out + w, body + end, e->off - end);
			w += e->off - end;
			memcpy(out + w, e->ins, e->ins_len);
			w += e->ins_len;
			end = e->off + e->del;
		}
		memcpy(out + w, body + end, len - end);
		w += len - end;
		if ((int64_t)w != (int64_t)len + fc.edits.delta)
			abort();
		struct codec_iov o = {out, w};
		struct codec_fetch_response_scan s;
		if (codec_fetch_response_scan(&o, 1, v, &s) != CODEC_OK)
			abort();
		codec_fetch_response_scan_free(&s);
		only_mirrored_batches(out, w, v);
		free(out);
	}
	codec_fetch_clamp_free(&fc);
	return 0;
}
