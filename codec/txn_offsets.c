/*
 * The consumer offsets of a transaction: AddOffsetsToTxn (key 25) v0–v4,
 * its request read and its response written, and the TxnOffsetCommit
 * (key 28) response written for every partition of a decoded request —
 * what a switched sidecar answers itself for a transaction opened on the
 * source (proxy/pidmap_txn.c). Flexible from v3 (both). Pure.
 */
#include <stdlib.h>

#include "codec/codec.h"

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
