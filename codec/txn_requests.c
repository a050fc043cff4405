/*
 * The transaction requests a switched sidecar answers itself for a
 * transaction opened on the source (proxy/pidmap_txn.c): AddPartitionsToTxn
 * (key 24) v0–v3, the client's versions, and AddOffsetsToTxn (key 25)
 * v0–v4, each request read and its response written, and the
 * TxnOffsetCommit (key 28) response written for every partition of a
 * decoded request. Flexible from v3 (all three). Pure.
 */
#include <stdlib.h>

#include "codec/codec.h"

#define ADD_PARTITIONS_MAX 3 /* v4+ batch transactions: between brokers only */
#define ADD_OFFSETS_MIN 0
#define ADD_OFFSETS_MAX 4

enum codec_err codec_add_offsets_to_txn_request_decode(const struct codec_iov *iov, int niov, int16_t version,
						       struct codec_add_offsets_to_txn_request *out)
{
	struct codec_reader r;
	if (!codec_decode_start(&r, iov, niov, CODEC_API_ADD_OFFSETS_TO_TXN, version, ADD_OFFSETS_MIN,
				ADD_OFFSETS_MAX, out, sizeof(*out)))
		return CODEC_ERR_UNSUPPORTED;
	out->transactional_id = codec_read_str(&r, false);
	out->producer_id = codec_read_i64(&r);
	out->producer_epoch = codec_read_i16(&r);
	out->group_id = codec_read_str(&r, false);
	codec_read_tags(&r, NULL, NULL, NULL);
	return codec_reader_finish(&r);
}

enum codec_err codec_add_offsets_to_txn_request_encode(const struct codec_add_offsets_to_txn_request *m,
						       int16_t version, struct codec_buf *out)
{
	if (version < ADD_OFFSETS_MIN || version > ADD_OFFSETS_MAX)
		return out->err = CODEC_ERR_UNSUPPORTED;
	out->flexible = codec_api_flexible(CODEC_API_ADD_OFFSETS_TO_TXN, version);
	codec_write_str(out, m->transactional_id);
	codec_write_i64(out, m->producer_id);
	codec_write_i16(out, m->producer_epoch);
	codec_write_str(out, m->group_id);
	codec_write_tags(out, NULL, 0, NULL);
	return out->err;
}

void codec_add_offsets_to_txn_request_free(struct codec_add_offsets_to_txn_request *m)
{
	free(m->transactional_id);
	free(m->group_id);
	m->transactional_id = m->group_id = NULL;
}

enum codec_err codec_add_offsets_to_txn_response_encode(int16_t error_code, int16_t version, struct codec_buf *out)
{
	if (version < ADD_OFFSETS_MIN || version > ADD_OFFSETS_MAX)
		return out->err = CODEC_ERR_UNSUPPORTED;
	out->flexible = codec_api_flexible(CODEC_API_ADD_OFFSETS_TO_TXN, version);
	codec_write_i32(out, 0); /* ThrottleTimeMs */
	codec_write_i16(out, error_code);
	codec_write_tags(out, NULL, 0, NULL);
	return out->err;
}

struct answer_ctx {
	int16_t version;
	int16_t error_code;
};

static void write_partition(struct codec_buf *b, const void *elem, void *ctx)
{
	const struct codec_offset_commit_partition *p = elem;
	codec_write_i32(b, p->index);
	codec_write_i16(b, ((const struct answer_ctx *)ctx)->error_code);
	codec_write_tags(b, NULL, 0, NULL);
}

static void write_topic(struct codec_buf *b, const void *elem, void *ctx)
{
	const struct codec_offset_commit_topic *t = elem;
	if (((const struct answer_ctx *)ctx)->version >= CODEC_TXN_OFFSET_COMMIT_TOPIC_IDS)
		codec_write_uuid(b, t->topic_id);
	else
		codec_write_str(b, t->name);
	codec_write_array(b, t->partitions, t->npartitions, sizeof(*t->partitions), write_partition, ctx);
	codec_write_tags(b, NULL, 0, NULL);
}

enum codec_err codec_txn_offset_commit_response_encode(const struct codec_txn_offset_commit_request *req,
						       int16_t error_code, int16_t version, struct codec_buf *out)
{
	if (version < 0 || version > CODEC_TXN_OFFSET_COMMIT_MAX)
		return out->err = CODEC_ERR_UNSUPPORTED;
	out->flexible = codec_api_flexible(CODEC_API_TXN_OFFSET_COMMIT, version);
	struct answer_ctx ctx = { version, error_code };
	codec_write_i32(out, 0); /* ThrottleTimeMs */
	codec_write_array(out, req->topics, req->ntopics, sizeof(*req->topics), write_topic, &ctx);
	codec_write_tags(out, NULL, 0, NULL);
	return out->err;
}

static void read_partition_index(struct codec_reader *r, void *elem, void *ctx)
{
	(void)ctx;
	*(int32_t *)elem = codec_read_i32(r);
}

static void read_add_topic(struct codec_reader *r, void *elem, void *ctx)
{
	struct codec_add_partitions_topic *t = elem;
	t->name = codec_read_str(r, false);
	t->partitions = codec_read_array(r, sizeof(*t->partitions), 4, &t->npartitions, read_partition_index, ctx);
	codec_read_tags(r, NULL, NULL, NULL);
}

enum codec_err codec_add_partitions_to_txn_request_decode(const struct codec_iov *iov, int niov, int16_t version,
							  struct codec_add_partitions_to_txn_request *out)
{
	struct codec_reader r;
	if (!codec_decode_start(&r, iov, niov, CODEC_API_ADD_PARTITIONS_TO_TXN, version, 0, ADD_PARTITIONS_MAX, out,
				sizeof(*out)))
		return CODEC_ERR_UNSUPPORTED;
	out->transactional_id = codec_read_str(&r, false);
	out->producer_id = codec_read_i64(&r);
	out->producer_epoch = codec_read_i16(&r);
	out->topics = codec_read_array(&r, sizeof(*out->topics), 2, &out->ntopics, read_add_topic, NULL);
	codec_read_tags(&r, NULL, NULL, NULL);
	return codec_reader_finish(&r);
}

static void write_partition_index(struct codec_buf *b, const void *elem, void *ctx)
{
	(void)ctx;
	codec_write_i32(b, *(const int32_t *)elem);
}

static void write_add_topic(struct codec_buf *b, const void *elem, void *ctx)
{
	const struct codec_add_partitions_topic *t = elem;
	codec_write_str(b, t->name);
	codec_write_array(b, t->partitions, t->npartitions, sizeof(*t->partitions), write_partition_index, ctx);
	codec_write_tags(b, NULL, 0, NULL);
}

enum codec_err codec_add_partitions_to_txn_request_encode(const struct codec_add_partitions_to_txn_request *m,
							  int16_t version, struct codec_buf *out)
{
	if (version < 0 || version > ADD_PARTITIONS_MAX)
		return out->err = CODEC_ERR_UNSUPPORTED;
	out->flexible = codec_api_flexible(CODEC_API_ADD_PARTITIONS_TO_TXN, version);
	codec_write_str(out, m->transactional_id);
	codec_write_i64(out, m->producer_id);
	codec_write_i16(out, m->producer_epoch);
	codec_write_array(out, m->topics, m->ntopics, sizeof(*m->topics), write_add_topic, NULL);
	codec_write_tags(out, NULL, 0, NULL);
	return out->err;
}

static void add_topic_free(void *elem)
{
	struct codec_add_partitions_topic *t = elem;
	free(t->name);
	free(t->partitions);
}

void codec_add_partitions_to_txn_request_free(struct codec_add_partitions_to_txn_request *m)
{
	free(m->transactional_id);
	codec_array_free(m->topics, m->ntopics, sizeof(*m->topics), add_topic_free);
	m->transactional_id = NULL;
	m->topics = NULL;
	m->ntopics = 0;
}

static void write_partition_result(struct codec_buf *b, const void *elem, void *ctx)
{
	codec_write_i32(b, *(const int32_t *)elem);
	codec_write_i16(b, ((const struct answer_ctx *)ctx)->error_code);
	codec_write_tags(b, NULL, 0, NULL);
}

static void write_topic_result(struct codec_buf *b, const void *elem, void *ctx)
{
	const struct codec_add_partitions_topic *t = elem;
	codec_write_str(b, t->name);
	codec_write_array(b, t->partitions, t->npartitions, sizeof(*t->partitions), write_partition_result, ctx);
	codec_write_tags(b, NULL, 0, NULL);
}

enum codec_err codec_add_partitions_to_txn_response_encode(const struct codec_add_partitions_to_txn_request *req,
							   int16_t error_code, int16_t version,
							   struct codec_buf *out)
{
	if (version < 0 || version > ADD_PARTITIONS_MAX)
		return out->err = CODEC_ERR_UNSUPPORTED;
	out->flexible = codec_api_flexible(CODEC_API_ADD_PARTITIONS_TO_TXN, version);
	struct answer_ctx ctx = { version, error_code };
	codec_write_i32(out, 0); /* ThrottleTimeMs */
	codec_write_array(out, req->topics, req->ntopics, sizeof(*req->topics), write_topic_result, &ctx);
	codec_write_tags(out, NULL, 0, NULL);
	return out->err;
}
