/* tests/proxy/pidmap_frames.c — see pidmap_frames.h. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <string.h>

#include "pidmap_frames.h"

int32_t be32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
}

int64_t be64(const uint8_t *p)
{
	return (int64_t)((uint64_t)(uint32_t)be32(p) << 32 | (uint32_t)be32(p + 4));
}

int16_t be16(const uint8_t *p)
{
	return (int16_t)(p[0] << 8 | p[1]);
}

/* One RecordBatch v2 with one record of `payload` bytes, its CRC-32C right. */
void write_batch(struct codec_buf *b, int64_t pid, int16_t epoch, int32_t seq, bool txn, size_t payload)
{
	struct codec_buf r = PAIR_BUF; /* the record, after its length */
	codec_write_i8(&r, 0);                    /* attributes */
	codec_write_varint(&r, 0);                /* timestampDelta */
	codec_write_varint(&r, 0);                /* offsetDelta */
	codec_write_varint(&r, -1);               /* key null */
	codec_write_varint(&r, (int32_t)payload);
	for (size_t i = 0; i < payload; i++)
		codec_write_i8(&r, (int8_t)('a' + i % 26));
	codec_write_varint(&r, 0);                /* headers */
	size_t start = b->len;
	codec_write_i64(b, 0);                    /* baseOffset */
	codec_write_i32(b, 0);                    /* batchLength, below */
	codec_write_i32(b, -1);                   /* partitionLeaderEpoch */
	codec_write_i8(b, 2);                     /* magic */
	codec_write_i32(b, 0);                    /* crc, below */
	codec_write_i16(b, txn ? 0x10 : 0);       /* attributes */
	codec_write_i32(b, 0);                    /* lastOffsetDelta */
	codec_write_i64(b, 1700000000000);
	codec_write_i64(b, 1700000000000);
	codec_write_i64(b, pid);
	codec_write_i16(b, epoch);
	codec_write_i32(b, seq);
	codec_write_i32(b, 1);                    /* records */
	codec_write_varint(b, (int32_t)r.len);
	codec_write_raw(b, r.data, r.len);
	codec_buf_free(&r);
	uint32_t blen = (uint32_t)(b->len - start - 12);
	for (int i = 0; i < 4; i++)
		b->data[start + CODEC_BATCH_LENGTH_AT + i] = (uint8_t)(blen >> (24 - 8 * i));
	uint32_t crc = codec_crc32c(0, b->data + start + CODEC_BATCH_ATTRIBUTES_AT,
				    b->len - start - CODEC_BATCH_ATTRIBUTES_AT);
	for (int i = 0; i < 4; i++)
		b->data[start + CODEC_BATCH_CRC_AT + i] = (uint8_t)(crc >> (24 - 8 * i));
	cr_assert(eq(int, codec_batch_check(b->data + start, b->len - start), CODEC_OK));
}

/* A Produce v9 request (acks -1): topic "t" partition 0, one batch; returns the
 * batch's offset in the frame (the batch ends 3 bytes before the frame). */
size_t produce_v9(struct codec_buf *b, int32_t corr, const char *txn_id, int64_t pid, int16_t epoch,
			 int32_t seq, bool txn, size_t payload)
{
	b->len = 0;
	codec_write_i32(b, 0);
	codec_write_i16(b, CODEC_API_PRODUCE);
	codec_write_i16(b, 9);
	codec_write_i32(b, corr);
	b->flexible = false;
	codec_write_str(b, "java");
	b->flexible = true;
	codec_write_i8(b, 0);            /* header tags */
	codec_write_str(b, txn_id);      /* TransactionalId (compact) */
	codec_write_i16(b, -1);
	codec_write_i32(b, 30000);
	codec_write_uvarint(b, 2);       /* one topic */
	codec_write_str(b, "t");
	codec_write_uvarint(b, 2);       /* one partition */
	codec_write_i32(b, 0);
	struct codec_buf batch = PAIR_BUF;
	write_batch(&batch, pid, epoch, seq, txn, payload);
	codec_write_uvarint(b, (uint32_t)batch.len + 1);
	size_t at = b->len;
	codec_write_raw(b, batch.data, batch.len);
	codec_buf_free(&batch);
	codec_write_i8(b, 0);
	codec_write_i8(b, 0);
	codec_write_i8(b, 0);
	pair_frame_seal(b);
	return at;
}

/* The broker's Produce v9 answer to `corr`: no topics (syncgate holds nothing here). */
void produce_answer(struct codec_buf *r, int32_t corr)
{
	r->len = 0;
	codec_write_i32(r, 0);
	codec_write_i32(r, corr);
	codec_write_i8(r, 0);
	codec_write_uvarint(r, 1);
	codec_write_i32(r, 0);
	codec_write_i8(r, 0);
	pair_frame_seal(r);
}

/* A Heartbeat v0 request (a frame behind a Produce; syncgate does nothing with it). */
void heartbeat(struct codec_buf *b, int32_t corr)
{
	b->len = 0;
	codec_write_i32(b, 0);
	codec_write_i16(b, 12);
	codec_write_i16(b, 0);
	codec_write_i32(b, corr);
	codec_write_i16(b, -1);
	codec_write_str(b, "g");
	codec_write_i32(b, 1);
	codec_write_str(b, "m");
	pair_frame_seal(b);
}

/* The broker's InitProducerId v`version` answer (correlation id -1). */
void init_pid_answer(struct codec_buf *b, int16_t version, int16_t err, int64_t pid, int16_t epoch)
{
	b->len = 0;
	codec_write_i32(b, 0);
	codec_write_i32(b, -1);
	if (version >= 2)
		codec_write_i8(b, 0);    /* response header v1 tags */
	struct codec_init_producer_id_response r = { .error_code = err, .producer_id = pid, .producer_epoch = epoch };
	cr_assert(eq(int, codec_init_producer_id_response_encode(&r, version, b), CODEC_OK));
	pair_frame_seal(b);
}

/* The client's Produce response (v9) in `cl`: the error code of its one partition. */
int16_t produce_answer_of(const uint8_t *cl, size_t n, int32_t corr, int64_t *base)
{
	cr_assert(ge(sz, n, 9));
	cr_assert(eq(i32, be32(cl + 4), corr));
	struct codec_iov iov = { cl + 9, n - 9 };
	struct codec_produce_response r;
	cr_assert(eq(int, codec_produce_response_decode(&iov, 1, 9, &r), CODEC_OK));
	cr_assert(eq(sz, r.ntopics, 1));
	cr_assert(eq(sz, r.topics[0].npartitions, 1));
	int16_t code = r.topics[0].partitions[0].error_code;
	if (base)
		*base = r.topics[0].partitions[0].base_offset;
	codec_produce_response_free(&r);
	return code;
}

int16_t produce_error(const uint8_t *cl, size_t n, int32_t corr)
{
	return produce_answer_of(cl, n, corr, NULL);
}

/* A client's InitProducerId v4 with TransactionalId `txn`. */
void client_header(struct codec_buf *b, int16_t key, int16_t version, int32_t corr)
{
	b->len = 0;
	codec_write_i32(b, 0);
	codec_write_i16(b, key);
	codec_write_i16(b, version);
	codec_write_i32(b, corr);
	b->flexible = false;
	codec_write_str(b, "java");
	b->flexible = true;
	codec_write_i8(b, 0);
}

void client_init_pid(struct codec_buf *b, int32_t corr, const char *txn)
{
	client_header(b, CODEC_API_INIT_PRODUCER_ID, 4, corr);
	struct codec_init_producer_id_request m = { .transactional_id = (char *)txn, .transaction_timeout_ms = 60000,
						    .producer_id = -1, .producer_epoch = -1 };
	cr_assert(eq(int, codec_init_producer_id_request_encode(&m, 4, b), CODEC_OK));
	pair_frame_seal(b);
}


void client_end_txn(struct codec_buf *b, int32_t corr, const char *txn, int64_t pid, int16_t epoch)
{
	client_end_txn_v(b, corr, 5, txn, pid, epoch, true);
}

void client_end_txn_v(struct codec_buf *b, int32_t corr, int16_t version, const char *txn, int64_t pid,
		      int16_t epoch, bool committed)
{
	client_header(b, CODEC_API_END_TXN, version, corr);
	struct codec_end_txn_request m = { .transactional_id = (char *)txn, .producer_id = pid,
					   .producer_epoch = epoch, .committed = committed };
	cr_assert(eq(int, codec_end_txn_request_encode(&m, version, b), CODEC_OK));
	pair_frame_seal(b);
}

void end_txn_answer(struct codec_buf *b, int32_t corr, int64_t pid, int16_t epoch)
{
	b->len = 0;
	codec_write_i32(b, 0);
	codec_write_i32(b, corr);
	codec_write_i8(b, 0);
	struct codec_end_txn_response r = { .error_code = 0, .producer_id = pid, .producer_epoch = epoch };
	cr_assert(eq(int, codec_end_txn_response_encode(&r, 5, b), CODEC_OK));
	pair_frame_seal(b);
}
