/*
 * Fuzz codec_fetch_response_clamp (issue 14): the edits stay inside the body,
 * in order; applied, they give a Fetch response that scans again, whose
 * clamped partitions' HighWatermark is at most the mirrored HW. The mirrored
 * HW comes from the input (byte 1's low bits pick -1, 0, small, huge).
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
	if (codec_fetch_response_clamp(iov, 2, v, fn, NULL, &fc) == CODEC_OK && fc.edits.n) {
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
		free(out);
	}
	codec_fetch_clamp_free(&fc);
	return 0;
}
