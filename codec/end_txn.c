/*
 * EndTxn (key 26), v0–v5: read on a switched sidecar because from v5
 * (KIP-890 transactions) the answer may carry a new producer id for the
 * TransactionalId (its epoch ran out), which the sidecar must know was issued
 * by its broker (docs/switchover.md "Producer state").
 */
#include <stdlib.h>

#include "codec/codec.h"

#define END_TXN_MIN 0
#define END_TXN_MAX 5
#define END_TXN_NEW_PRODUCER 5 /* ProducerId, ProducerEpoch in the response from v5 */

enum codec_err codec_end_txn_request_decode(const struct codec_iov *iov, int niov, int16_t version,
					    struct codec_end_txn_request *out)
{
	struct codec_reader r;
	if (!codec_decode_start(&r, iov, niov, CODEC_API_END_TXN, version, END_TXN_MIN, END_TXN_MAX, out,
				sizeof(*out)))
		return CODEC_ERR_UNSUPPORTED;
	out->transactional_id = codec_read_str(&r, false);
	out->producer_id = codec_read_i64(&r);
	out->producer_epoch = codec_read_i16(&r);
	out->committed = codec_read_bool(&r);
	codec_read_tags(&r, &out->tags, NULL, NULL);
	return codec_reader_finish(&r);
}

enum codec_err codec_end_txn_request_encode(const struct codec_end_txn_request *m, int16_t version,
					    struct codec_buf *out)
{
	if (version < END_TXN_MIN || version > END_TXN_MAX)
		return out->err = CODEC_ERR_UNSUPPORTED;
	out->flexible = codec_api_flexible(CODEC_API_END_TXN, version);
	codec_write_str(out, m->transactional_id);
	codec_write_i64(out, m->producer_id);
	codec_write_i16(out, m->producer_epoch);
	codec_write_bool(out, m->committed);
	codec_write_tags(out, NULL, 0, &m->tags);
	return out->err;
}

void codec_end_txn_request_free(struct codec_end_txn_request *m)
{
	free(m->transactional_id);
	m->transactional_id = NULL;
	codec_tags_free(&m->tags);
}

enum codec_err codec_end_txn_response_decode(const struct codec_iov *iov, int niov, int16_t version,
					     struct codec_end_txn_response *out)
{
	struct codec_reader r;
	if (!codec_decode_start(&r, iov, niov, CODEC_API_END_TXN, version, END_TXN_MIN, END_TXN_MAX, out,
				sizeof(*out)))
		return CODEC_ERR_UNSUPPORTED;
	out->producer_id = -1;
	out->producer_epoch = -1;
	out->throttle_time_ms = codec_read_i32(&r);
	out->error_code = codec_read_i16(&r);
	if (version >= END_TXN_NEW_PRODUCER) {
		out->producer_id = codec_read_i64(&r);
		out->producer_epoch = codec_read_i16(&r);
	}
	codec_read_tags(&r, &out->tags, NULL, NULL);
	return codec_reader_finish(&r);
}

enum codec_err codec_end_txn_response_encode(const struct codec_end_txn_response *m, int16_t version,
					     struct codec_buf *out)
{
	if (version < END_TXN_MIN || version > END_TXN_MAX)
		return out->err = CODEC_ERR_UNSUPPORTED;
	out->flexible = codec_api_flexible(CODEC_API_END_TXN, version);
	codec_write_i32(out, m->throttle_time_ms);
	codec_write_i16(out, m->error_code);
	if (version >= END_TXN_NEW_PRODUCER) {
		codec_write_i64(out, m->producer_id);
		codec_write_i16(out, m->producer_epoch);
	}
	codec_write_tags(out, NULL, 0, &m->tags);
	return out->err;
}

void codec_end_txn_response_free(struct codec_end_txn_response *m)
{
	codec_tags_free(&m->tags);
}
