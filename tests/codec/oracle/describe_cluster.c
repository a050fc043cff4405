/* DescribeCluster (key 60) response v0–v2 (always flexible). */
#include <stdlib.h>
#include <string.h>

#include "tests/codec/oracle/oracle.h"

#define DESCRIBE_CLUSTER_MAX 2

static void read_broker(struct codec_reader *r, void *elem, void *ctx)
{
	struct codec_describe_cluster_broker *b = elem;
	int16_t version = *(const int16_t *)ctx;
	b->broker_id = codec_read_i32(r);
	b->host = codec_read_str(r, false);
	b->port = codec_read_i32(r);
	b->rack = codec_read_str(r, true);
	if (version >= 2)
		b->is_fenced = codec_read_bool(r);
	codec_read_tags(r, &b->tags, NULL, NULL);
}

static void write_broker(struct codec_buf *w, const void *elem, void *ctx)
{
	const struct codec_describe_cluster_broker *b = elem;
	int16_t version = *(const int16_t *)ctx;
	codec_write_i32(w, b->broker_id);
	codec_write_str(w, b->host);
	codec_write_i32(w, b->port);
	codec_write_str(w, b->rack);
	if (version >= 2)
		codec_write_bool(w, b->is_fenced);
	codec_write_tags(w, NULL, 0, &b->tags);
}

enum codec_err codec_describe_cluster_response_decode(const struct codec_iov *iov, int niov,
						      int16_t version,
						      struct codec_describe_cluster_response *out)
{
	struct codec_reader r;
	memset(out, 0, sizeof(*out));
	if (version < 0 || version > DESCRIBE_CLUSTER_MAX)
		return CODEC_ERR_UNSUPPORTED;
	codec_reader_init(&r, iov, niov);
	r.flexible = codec_api_flexible(CODEC_API_DESCRIBE_CLUSTER, version);
	out->throttle_time_ms = codec_read_i32(&r);
	out->error_code = codec_read_i16(&r);
	out->error_message = codec_read_str(&r, true);
	out->endpoint_type = version >= 1 ? codec_read_i8(&r) : 1;
	out->cluster_id = codec_read_str(&r, false);
	out->controller_id = codec_read_i32(&r);
	out->brokers = codec_read_array(&r, sizeof(*out->brokers), 11, &out->nbrokers,
					read_broker, &version);
	out->cluster_authorized_operations = codec_read_i32(&r);
	codec_read_tags(&r, &out->tags, NULL, NULL);
	return codec_reader_finish(&r);
}

enum codec_err codec_describe_cluster_response_encode(const struct codec_describe_cluster_response *m,
						      int16_t version, struct codec_buf *out)
{
	if (version < 0 || version > DESCRIBE_CLUSTER_MAX)
		return CODEC_ERR_UNSUPPORTED;
	out->flexible = codec_api_flexible(CODEC_API_DESCRIBE_CLUSTER, version);
	codec_write_i32(out, m->throttle_time_ms);
	codec_write_i16(out, m->error_code);
	codec_write_str(out, m->error_message);
	if (version >= 1)
		codec_write_i8(out, m->endpoint_type);
	codec_write_str(out, m->cluster_id ? m->cluster_id : "");
	codec_write_i32(out, m->controller_id);
	codec_write_array(out, m->brokers, m->nbrokers, sizeof(*m->brokers), write_broker, &version);
	codec_write_i32(out, m->cluster_authorized_operations);
	codec_write_tags(out, NULL, 0, &m->tags);
	return out->err;
}

static void broker_free(void *elem)
{
	struct codec_describe_cluster_broker *b = elem;
	free(b->host);
	free(b->rack);
	codec_tags_free(&b->tags);
}

void codec_describe_cluster_response_free(struct codec_describe_cluster_response *m)
{
	free(m->error_message);
	free(m->cluster_id);
	codec_array_free(m->brokers, m->nbrokers, sizeof(*m->brokers), broker_free);
	codec_tags_free(&m->tags);
	memset(m, 0, sizeof(*m));
}
