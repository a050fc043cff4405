/*
 * codec/batch.h — one RecordBatch (magic 2) in place: its CRC-32C and its
 * producer fields. Part of codec/codec.h (include that). Thread-agnostic,
 * no allocation.
 */
#ifndef SYNCGATE_CODEC_BATCH_H
#define SYNCGATE_CODEC_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "codec/reader.h"

/* RecordBatch v2 header (Kafka's DefaultRecordBatch): byte offsets. */
#define CODEC_BATCH_LENGTH_AT 8       /* int32 batchLength: bytes after this field */
#define CODEC_BATCH_MAGIC_AT 16
#define CODEC_BATCH_CRC_AT 17         /* uint32 CRC-32C of everything from attributes on */
#define CODEC_BATCH_ATTRIBUTES_AT 21
#define CODEC_BATCH_PRODUCER_ID_AT 43 /* int64 producerId */
#define CODEC_BATCH_EPOCH_AT 51       /* int16 producerEpoch */
#define CODEC_BATCH_SEQUENCE_AT 53    /* int32 baseSequence */
#define CODEC_BATCH_HEADER_LEN 61     /* up to the record count, included */

/**
 * CRC-32C (Castagnoli, as Kafka's record batches use it) of `n` bytes at
 * `buf`, continuing `crc` (0 to start): codec_crc32c(codec_crc32c(0, a, x),
 * b, y) == the CRC of a then b. Uses the CPU's CRC32 instruction where
 * there is one (x86-64 SSE4.2), a table otherwise.
 */
uint32_t codec_crc32c(uint32_t crc, const void *buf, size_t n);
/** codec_crc32c() by the table alone (what it uses without the instruction):
 * for tests and benchmarks. */
uint32_t codec_crc32c_portable(uint32_t crc, const void *buf, size_t n);

/**
 * Whether `n` bytes at `b` are exactly one RecordBatch of magic 2 whose
 * batchLength matches `n` and whose CRC-32C is right: CODEC_OK,
 * CODEC_ERR_UNDERFLOW (shorter than its header or its batchLength),
 * CODEC_ERR_BAD_MSG (another magic, a length that does not match, or a
 * wrong CRC).
 */
enum codec_err codec_batch_check(const uint8_t *b, size_t n) CODEC_WUR;

/**
 * Rewrite the producer id and epoch of the one RecordBatch (magic 2) at `b`
 * (`n` bytes, checked as codec_batch_check() does first) and recompute its
 * CRC-32C; the base sequence and the records are left as they are. On any
 * error the bytes are unchanged. For a sidecar that must present another
 * cluster's producer id for a client's idempotent batches
 * (docs/switchover.md "Producer state").
 */
enum codec_err codec_batch_set_producer(uint8_t *b, size_t n, int64_t producer_id,
					int16_t producer_epoch) CODEC_WUR;

#endif
