/* FindCoordinator (key 10) response v0–v6: single coordinator (v0–v3) or Coordinators[] (v4+). */
#include <stdlib.h>
#include <string.h>

#include "tests/codec/oracle/oracle.h"

#define FIND_COORDINATOR_MAX 6
#define FIND_COORDINATOR_BATCHED 4   /* Coordinators[] replaces the single form */

static void read_coordinator(struct codec_reader *r, void *elem, void *ctx)
{
	struct codec_coordinator *c = elem;
	c->key = codec_read_str(r, false);
	c->node_id = codec_read_i32(r);
	c->host = codec_read_str(r, false);
	c->port = codec_read_i32(r);
	c->error_code = codec_read_i16(r);
	c->error_message = codec_read_str(r, true);
	codec_read_tags(r, &c->tags, NULL, NULL);
}

static void write_coordinator(struct codec_buf *b, const void *elem, void *ctx)
{
	const struct codec_coordinator *c = elem;
	codec_write_str(b, c->key);
	codec_write_i32(b, c->node_id);
	codec_write_str(b, c->host);
	codec_write_i32(b, c->port);
	codec_write_i16(b, c->error_code);
	codec_write_str(b, c->error_message);
	codec_write_tags(b, NULL, 0, &c->tags);
}

enum codec_err codec_find_coordinator_response_decode(const struct codec_iov *iov, int niov,
						      int16_t version,
						      struct codec_find_coordinator_response *out)
{
	struct codec_reader r;
	memset(out, 0, sizeof(*out));
	if (version < 0 || version > FIND_COORDINATOR_MAX)
		return CODEC_ERR_UNSUPPORTED;
	codec_reader_init(&r, iov, niov);
	r.flexible = codec_api_flexible(CODEC_API_FIND_COORDINATOR, version);
	if (version >= 1)
		out->throttle_time_ms = codec_read_i32(&r);
	if (version < FIND_COORDINATOR_BATCHED) {
		out->error_code = codec_read_i16(&r);
		if (version >= 1)
			out->error_message = codec_read_str(&r, true);
		out->node_id = codec_read_i32(&r);
		out->host = codec_read_str(&r, false);
		out->port = codec_read_i32(&r);
	} else {
		out->coordinators = codec_read_array(&r, sizeof(*out->coordinators), 14,
						     &out->ncoordinators, read_coordinator, NULL);
	}
	codec_read_tags(&r, &out->tags, NULL, NULL);
	return codec_reader_finish(&r);
}

enum codec_err codec_find_coordinator_response_encode(const struct codec_find_coordinator_response *m,
						      int16_t version, struct codec_buf *out)
{
	if (version < 0 || version > FIND_COORDINATOR_MAX)
		return CODEC_ERR_UNSUPPORTED;
	out->flexible = codec_api_flexible(CODEC_API_FIND_COORDINATOR, version);
	if (version >= 1)
		codec_write_i32(out, m->throttle_time_ms);
	if (version < FIND_COORDINATOR_BATCHED) {
		codec_write_i16(out, m->error_code);
		if (version >= 1)
			codec_write_str(out, m->error_message);
		codec_write_i32(out, m->node_id);
		codec_write_str(out, m->host ? m->host : "");
		codec_write_i32(out, m->port);
	} else {
		codec_write_array(out, m->coordinators, m->ncoordinators, sizeof(*m->coordinators),
				  write_coordinator, NULL);
	}
	codec_write_tags(out, NULL, 0, &m->tags);
	return out->err;
}

static void coordinator_free(void *elem)
{
	struct codec_coordinator *c = elem;
	free(c->key);
	free(c->host);
	free(c->error_message);
	codec_tags_free(&c->tags);
}

void codec_find_coordinator_response_free(struct codec_find_coordinator_response *m)
{
	free(m->error_message);
	free(m->host);
	codec_array_free(m->coordinators, m->ncoordinators, sizeof(*m->coordinators), coordinator_free);
	codec_tags_free(&m->tags);
	memset(m, 0, sizeof(*m));
}
