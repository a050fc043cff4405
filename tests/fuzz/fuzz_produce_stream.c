/*
 * Fuzz codec_produce_stream_next as a proxy drives it: the body
 * arrives in pieces, units are consumed, record runs skipped. Whenever
 * codec_produce_request_decode accepts the body, the stream reaches its tail
 * with the same acks, timeout, partitions and offset spans.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct codec_iov iov[2];
	if (size < 2)
		return 0;
	int16_t v = fuzz_input(data, size, 3, 13, iov);
	const uint8_t *body = data + 2;
	size_t len = size - 2, pos = 0, avail = data[1] % 7 + 1, nparts = 0;
	int64_t spans[64];
	int32_t index[64];
	int16_t acks = 0;
	int32_t timeout = 0;
	struct codec_produce_stream ps;
	codec_produce_stream_init(&ps, v);
	while (ps.stage != CODEC_STREAM_TAIL) {
		size_t have = pos + avail < len ? avail : len - pos;
		struct codec_iov one = { body + pos, have };
		size_t used, records;
		enum codec_err err = codec_produce_stream_next(&ps, &one, 1, &used, &records);
		if (err == CODEC_ERR_UNDERFLOW && pos + have < len) {
			avail += 1 + avail / 2;
			continue;
		}
		if (err != CODEC_OK || used > have || used + records > len - pos)
			break;
		if (ps.unit == CODEC_STREAM_HEAD) {
			acks = ps.acks;
			timeout = ps.timeout_ms;
		} else if (ps.unit == CODEC_STREAM_PARTITION && nparts < 64) {
			index[nparts++] = ps.partition;
			spans[nparts - 1] = 0;
		} else if (ps.unit == CODEC_STREAM_BATCH && nparts && nparts <= 64) {
			spans[nparts - 1] = ps.offset_span;
		}
		pos += used + records;
		avail = 3;
	}
	struct codec_produce_request req;
	if (codec_produce_request_decode(iov, 2, v, &req) == CODEC_OK) {
		if (ps.stage != CODEC_STREAM_TAIL || acks != req.acks || timeout != req.timeout_ms)
			abort();
		size_t i = 0;
		for (size_t t = 0; t < req.ntopics; t++)
			for (size_t p = 0; p < req.topics[t].npartitions; p++, i++)
				if (i < 64 && (index[i] != req.topics[t].partitions[p].index ||
					       spans[i] != req.topics[t].partitions[p].offset_span))
					abort();
		if (i != nparts && i < 64)
			abort();
	}
	codec_produce_request_free(&req);
	return 0;
}
