/*
 * InitProducerId (key 22), v0–v5: the request a sidecar sends its own broker
 * for a producer id (docs/switchover.md "Producer state"), the client's
 * request read for its TransactionalId, and the response that carries the
 * issued ProducerId and ProducerEpoch.
 */
#include <stdlib.h>

#include "codec/codec.h"

#define IPID_MIN 0
#define IPID_MAX 5
#define IPID_PRODUCER_FIELDS 3 /* ProducerId, ProducerEpoch in the request from v3 */

enum codec_err codec_init_producer_id_request_decode(const struct codec_iov *iov, int niov, int16_t version,
						     struct codec_init_producer_id_request *out)
{
	struct codec_reader r;
	if (!codec_decode_start(&r, iov, niov, CODEC_API_INIT_PRODUCER_ID, version, IPID_MIN, IPID_MAX, out,
				sizeof(*out)))
		return CODEC_ERR_UNSUPPORTED;
	out->producer_id = -1;
	out->producer_epoch = -1;
	out->transactional_id = codec_read_str(&r, true);
	out->transaction_timeout_ms = codec_read_i32(&r);
	if (version >= IPID_PRODUCER_FIELDS) {
		out->producer_id = codec_read_i64(&r);
		out->producer_epoch = codec_read_i16(&r);
	}
	codec_read_tags(&r, &out->tags, NULL, NULL);
	return codec_reader_finish(&r);
}

enum codec_err codec_init_producer_id_request_encode(const struct codec_init_producer_id_request *m,
						     int16_t version, struct codec_buf *out)
{
	if (version < IPID_MIN || version > IPID_MAX)
		return out->err = CODEC_ERR_UNSUPPORTED;
	out->flexible = codec_api_flexible(CODEC_API_INIT_PRODUCER_ID, version);
	codec_write_str(out, m->transactional_id);
	codec_write_i32(out, m->transaction_timeout_ms);
	if (version >= IPID_PRODUCER_FIELDS) {
		codec_write_i64(out, m->producer_id);
		codec_write_i16(out, m->producer_epoch);
	}
	codec_write_tags(out, NULL, 0, &m->tags);
	return out->err;
}

void codec_init_producer_id_request_free(struct codec_init_producer_id_request *m)
{
	free(m->transactional_id);
	m->transactional_id = NULL;
	codec_tags_free(&m->tags);
}

int codec_init_producer_id_request_frame(int16_t version, int32_t correlation_id, const char *client_id,
					 const char *transactional_id, int32_t transaction_timeout_ms,
					 struct codec_buf *out)
{
	if (version < IPID_MIN || version > IPID_MAX)
		return -1;
	size_t start = out->len;
	bool flexible = codec_api_flexible(CODEC_API_INIT_PRODUCER_ID, version);
	/* size prefix, then header v1 (v0–v1) or v2 (flexible): ApiKey,
	 * ApiVersion, CorrelationId, ClientId (always an int16 string), tags */
	codec_write_i32(out, 0);
	codec_write_i16(out, CODEC_API_INIT_PRODUCER_ID);
	codec_write_i16(out, version);
	codec_write_i32(out, correlation_id);
	out->flexible = false;
	codec_write_str(out, client_id);
	out->flexible = flexible;
	codec_write_tags(out, NULL, 0, NULL);
	struct codec_init_producer_id_request m = {
		.transactional_id = (char *)transactional_id, .transaction_timeout_ms = transaction_timeout_ms,
		.producer_id = -1, .producer_epoch = -1,
	};
	if (codec_init_producer_id_request_encode(&m, version, out) != CODEC_OK)
		return -1;
	uint32_t len = (uint32_t)(out->len - start - 4);
	out->data[start] = (uint8_t)(len >> 24);
	out->data[start + 1] = (uint8_t)(len >> 16);
	out->data[start + 2] = (uint8_t)(len >> 8);
	out->data[start + 3] = (uint8_t)len;
	return 0;
}

enum codec_err codec_init_producer_id_response_decode(const struct codec_iov *iov, int niov, int16_t version,
						      struct codec_init_producer_id_response *out)
{
	struct codec_reader r;
	if (!codec_decode_start(&r, iov, niov, CODEC_API_INIT_PRODUCER_ID, version, IPID_MIN, IPID_MAX, out,
				sizeof(*out)))
		return CODEC_ERR_UNSUPPORTED;
	out->throttle_time_ms = codec_read_i32(&r);
	out->error_code = codec_read_i16(&r);
	out->producer_id = codec_read_i64(&r);
	out->producer_epoch = codec_read_i16(&r);
	codec_read_tags(&r, &out->tags, NULL, NULL);
	return codec_reader_finish(&r);
}

enum codec_err codec_init_producer_id_response_encode(const struct codec_init_producer_id_response *m,
						      int16_t version, struct codec_buf *out)
{
	if (version < IPID_MIN || version > IPID_MAX)
		return out->err = CODEC_ERR_UNSUPPORTED;
	out->flexible = codec_api_flexible(CODEC_API_INIT_PRODUCER_ID, version);
	codec_write_i32(out, m->throttle_time_ms);
	codec_write_i16(out, m->error_code);
	codec_write_i64(out, m->producer_id);
	codec_write_i16(out, m->producer_epoch);
	codec_write_tags(out, NULL, 0, &m->tags);
	return out->err;
}

void codec_init_producer_id_response_free(struct codec_init_producer_id_response *m)
{
	codec_tags_free(&m->tags);
}
