/*
 * tests/codec/test_batch.c — codec/batch.c: CRC-32C (known answers, chaining,
 * against a bitwise reference), the RecordBatch check on batches Kafka's own
 * client code built (the golden Produce requests), and the producer-field
 * rewrite keeping a batch valid.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "tests/codec/golden.h"

/* The definition, one bit at a time: what the fast paths must equal. */
static uint32_t crc_bitwise(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;
	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
	}
	return ~c;
}

Test(codec_batch, crc32c_known_answers_and_chaining)
{
	cr_assert(eq(u32, codec_crc32c(0, "123456789", 9), 0xE3069283u)); /* the CRC-32C check value */
	cr_assert(eq(u32, codec_crc32c(0, "", 0), 0u));
	uint8_t zeros[32] = {0};
	cr_assert(eq(u32, codec_crc32c(0, zeros, sizeof(zeros)), 0x8A9136AAu)); /* RFC 3720 B.4 */
	enum { N = 1 << 20 };
	uint8_t *buf = malloc(N);
	cr_assert_not_null(buf);
	uint32_t x = 12345;
	for (size_t i = 0; i < N; i++)
		buf[i] = (uint8_t)((x = x * 1103515245u + 12345u) >> 16);
	for (size_t n = 0; n < 70; n++) { /* every tail length of the 8-byte steps, odd offsets */
		cr_assert(eq(u32, codec_crc32c(0, buf + 3, n), crc_bitwise(buf + 3, n)), "length %zu", n);
		cr_assert(eq(u32, codec_crc32c_portable(0, buf + 3, n), crc_bitwise(buf + 3, n)), "length %zu", n);
	}
	uint32_t whole = codec_crc32c(0, buf, N);
	cr_assert(eq(u32, whole, crc_bitwise(buf, N)));
	cr_assert(eq(u32, codec_crc32c_portable(0, buf, N), whole), "the table path");
	cr_assert(eq(u32, codec_crc32c_portable(codec_crc32c_portable(0, buf, 5), buf + 5, N - 5), whole));
	cr_assert(eq(u32, codec_crc32c(codec_crc32c(0, buf, 12347), buf + 12347, N - 12347), whole),
		  "continuing a CRC over a split buffer");
	free(buf);
}

/* The first partition's records of a golden Produce request: one batch
 * built by Kafka's MemoryRecords. Copied into *out and, when `copy` is not
 * NULL, once more into *copy (both owned). */
static size_t golden_batch(int16_t v, uint8_t **out, uint8_t **copy)
{
	char name[64];
	snprintf(name, sizeof(name), "produce_req_v%d", v);
	struct golden g;
	golden_load(&g, name, true, CODEC_API_PRODUCE, v);
	struct codec_iov body = golden_body(&g);
	struct codec_produce_request m;
	cr_assert(eq(i64, (int64_t)(codec_produce_request_decode(&body, 1, v, &m)), (int64_t)(CODEC_OK)));
	struct codec_slice s = m.topics[0].partitions[0].records;
	cr_assert(gt(i32, s.len, 0));
	*out = malloc((size_t)s.len);
	cr_assert_not_null(*out);
	memcpy(*out, (const uint8_t *)body.base + s.off, (size_t)s.len);
	if (copy) {
		*copy = malloc((size_t)s.len);
		cr_assert_not_null(*copy);
		memcpy(*copy, *out, (size_t)s.len);
	}
	codec_produce_request_free(&m);
	golden_free(&g);
	return (size_t)s.len;
}

Test(codec_batch, check_accepts_the_batches_kafka_builds)
{
	for (int16_t v = 3; v <= 13; v++) {
		uint8_t *b;
		size_t n = golden_batch(v, &b, NULL);
		cr_assert(eq(i64, (int64_t)(codec_batch_check(b, n)), (int64_t)(CODEC_OK)), "v%d", v);
		cr_assert(eq(u32, codec_crc32c(0, b + CODEC_BATCH_ATTRIBUTES_AT, n - CODEC_BATCH_ATTRIBUTES_AT),
			     (uint32_t)b[17] << 24 | (uint32_t)b[18] << 16 | (uint32_t)b[19] << 8 | b[20]));
		free(b);
	}
}

Test(codec_batch, set_producer_rewrites_the_fields_and_the_crc_only)
{
	uint8_t *b, *orig;
	size_t n = golden_batch(9, &b, &orig);
	cr_assert(eq(i64, (int64_t)(codec_batch_set_producer(b, n, 123456789012LL, 7)), (int64_t)(CODEC_OK)));
	cr_assert(eq(i64, (int64_t)(codec_batch_check(b, n)), (int64_t)(CODEC_OK)), "still a valid batch");
	cr_assert(eq(i64, golden_be64(b + CODEC_BATCH_PRODUCER_ID_AT), 123456789012LL));
	cr_assert(eq(i64, (int64_t)(b[CODEC_BATCH_EPOCH_AT] << 8 | b[CODEC_BATCH_EPOCH_AT + 1]), 7));
	/* everything else as it was: offsets, lengths, magic, attributes..timestamps, sequence, records */
	cr_assert_not(memcmp(b, orig, CODEC_BATCH_CRC_AT));
	cr_assert_not(memcmp(b + CODEC_BATCH_ATTRIBUTES_AT, orig + CODEC_BATCH_ATTRIBUTES_AT,
			     CODEC_BATCH_PRODUCER_ID_AT - CODEC_BATCH_ATTRIBUTES_AT));
	cr_assert_not(memcmp(b + CODEC_BATCH_SEQUENCE_AT, orig + CODEC_BATCH_SEQUENCE_AT, n - CODEC_BATCH_SEQUENCE_AT));
	cr_assert(memcmp(b + CODEC_BATCH_CRC_AT, orig + CODEC_BATCH_CRC_AT, 4) != 0, "a new CRC");
	/* and back: the original bytes exactly */
	int64_t pid = golden_be64(orig + CODEC_BATCH_PRODUCER_ID_AT);
	int16_t epoch = (int16_t)(orig[CODEC_BATCH_EPOCH_AT] << 8 | orig[CODEC_BATCH_EPOCH_AT + 1]);
	cr_assert(eq(i64, (int64_t)(codec_batch_set_producer(b, n, pid, epoch)), (int64_t)(CODEC_OK)));
	cr_assert_not(memcmp(b, orig, n));
	free(orig);
	free(b);
}

Test(codec_batch, bad_batches_are_refused_and_left_unchanged)
{
	uint8_t *b, *copy;
	size_t n = golden_batch(9, &b, &copy);
	cr_assert(eq(i64, (int64_t)(codec_batch_check(b, CODEC_BATCH_HEADER_LEN - 1)), (int64_t)(CODEC_ERR_UNDERFLOW)));
	cr_assert(eq(i64, (int64_t)(codec_batch_check(b, n - 1)), (int64_t)(CODEC_ERR_UNDERFLOW)), "shorter than its batchLength");
	b[n - 1] ^= 0x40; /* a record byte: the CRC no longer matches */
	cr_assert(eq(i64, (int64_t)(codec_batch_set_producer(b, n, 1, 0)), (int64_t)(CODEC_ERR_BAD_MSG)));
	b[n - 1] ^= 0x40;
	cr_assert_not(memcmp(b, copy, n), "unchanged on error");
	b[CODEC_BATCH_MAGIC_AT] = 1;
	cr_assert(eq(i64, (int64_t)(codec_batch_check(b, n)), (int64_t)(CODEC_ERR_BAD_MSG)), "magic 1");
	b[CODEC_BATCH_MAGIC_AT] = 2;
	b[CODEC_BATCH_LENGTH_AT + 3] = 10; /* batchLength below the header */
	b[CODEC_BATCH_LENGTH_AT] = b[CODEC_BATCH_LENGTH_AT + 1] = b[CODEC_BATCH_LENGTH_AT + 2] = 0;
	cr_assert(eq(i64, (int64_t)(codec_batch_check(b, n)), (int64_t)(CODEC_ERR_BAD_MSG)));
	free(copy);
	free(b);
}
