/*
 * Fuzz codec_batch_check and codec_batch_set_producer. Input: bytes 0–1 pick
 * the producer id and epoch written, the rest is the batch. A rewrite that
 * succeeds leaves a batch that checks and carries those fields, and changes
 * nothing but them and the CRC; one that fails changes nothing.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	size_t n = size - 2;
	uint8_t *b = malloc(n ? n : 1);
	if (!b)
		return 0;
	memcpy(b, data + 2, n);
	int64_t pid = (int64_t)data[0] * 1000003;
	int16_t epoch = (int16_t)data[1];
	enum codec_err checked = codec_batch_check(b, n);
	enum codec_err err = codec_batch_set_producer(b, n, pid, epoch);
	if (err != checked)
		abort();
	if (err != CODEC_OK) {
		if (memcmp(b, data + 2, n))
			abort();
	} else {
		if (codec_batch_check(b, n) != CODEC_OK)
			abort();
		int64_t got = 0;
		for (int i = 0; i < 8; i++)
			got = (int64_t)((uint64_t)got << 8 | b[CODEC_BATCH_PRODUCER_ID_AT + i]);
		if (got != pid || (int16_t)(b[CODEC_BATCH_EPOCH_AT] << 8 | b[CODEC_BATCH_EPOCH_AT + 1]) != epoch)
			abort();
		if (memcmp(b, data + 2, CODEC_BATCH_CRC_AT) ||
		    memcmp(b + CODEC_BATCH_SEQUENCE_AT, data + 2 + CODEC_BATCH_SEQUENCE_AT, n - CODEC_BATCH_SEQUENCE_AT))
			abort();
	}
	free(b);
	return 0;
}
