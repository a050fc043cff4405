/*
 * ApiVersions (key 18) request and response, v0–v5, including the v0-layout
 * error reply. v5 (KIP-1242) adds ClusterId and NodeId to the request (the
 * broker answers REBOOTSTRAP_REQUIRED when they name another cluster or
 * node); its response has the v3/v4 layout.
 */
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"

#define API_VERSIONS_MAX CODEC_API_VERSIONS_MAX

/* ---- request ------------------------------------------------------------ */

enum codec_err codec_api_versions_request_decode(const struct codec_iov *iov, int niov, int16_t version,
						 struct codec_api_versions_request *out)
{
	struct codec_reader r;
	if (!codec_decode_start(&r, iov, niov, CODEC_API_API_VERSIONS, version,
				0, API_VERSIONS_MAX, out, sizeof(*out)))
		return CODEC_ERR_UNSUPPORTED;
	if (version >= 3) {
		out->client_software_name = codec_read_str(&r, false);
		out->client_software_version = codec_read_str(&r, false);
	}
	out->node_id = -1;
	if (version >= 5) {
		out->cluster_id = codec_read_str(&r, true);
		out->node_id = codec_read_i32(&r);
	}
	codec_read_tags(&r, &out->tags, NULL, NULL);
	return codec_reader_finish(&r);
}

void codec_api_versions_request_free(struct codec_api_versions_request *m)
{
	free(m->client_software_name);
	free(m->client_software_version);
	free(m->cluster_id);
	codec_tags_free(&m->tags);
	memset(m, 0, sizeof(*m));
}

/* ---- response ----------------------------------------------------------- */

static void read_api_version(struct codec_reader *r, void *elem, void *ctx)
{
	struct codec_api_version_range *a = elem;
	a->api_key = codec_read_i16(r);
	a->min_version = codec_read_i16(r);
	a->max_version = codec_read_i16(r);
	codec_read_tags(r, &a->tags, NULL, NULL);
}

static void write_api_version(struct codec_buf *b, const void *elem, void *ctx)
{
	const struct codec_api_version_range *a = elem;
	codec_write_i16(b, a->api_key);
	codec_write_i16(b, a->min_version);
	codec_write_i16(b, a->max_version);
	codec_write_tags(b, NULL, 0, &a->tags);
}

enum codec_err codec_api_versions_response_decode(const struct codec_iov *iov, int niov,
						  int16_t version,
						  struct codec_api_versions_response *out)
{
	struct codec_reader r;
	memset(out, 0, sizeof(*out));
	if (version < 0 || version > API_VERSIONS_MAX)
		return CODEC_ERR_UNSUPPORTED;
	codec_reader_init(&r, iov, niov);
	out->error_code = codec_read_i16(&r);
	if (out->error_code == CODEC_ERROR_UNSUPPORTED_VERSION) {
		out->v0_layout = true;
		version = 0;
	}
	r.flexible = codec_api_flexible(CODEC_API_API_VERSIONS, version);
	out->api_keys = codec_read_array(&r, sizeof(*out->api_keys), 6, &out->napi_keys,
					 read_api_version, NULL);
	if (version >= 1)
		out->throttle_time_ms = codec_read_i32(&r);
	codec_read_tags(&r, &out->tags, NULL, NULL);
	return codec_reader_finish(&r);
}

enum codec_err codec_api_versions_response_encode(const struct codec_api_versions_response *m,
						  int16_t version, struct codec_buf *out)
{
	if (version < 0 || version > API_VERSIONS_MAX)
		return CODEC_ERR_UNSUPPORTED;
	if (m->v0_layout)
		version = 0;
	out->flexible = codec_api_flexible(CODEC_API_API_VERSIONS, version);
	codec_write_i16(out, m->error_code);
	codec_write_array(out, m->api_keys, m->napi_keys, sizeof(*m->api_keys), write_api_version, NULL);
	if (version >= 1)
		codec_write_i32(out, m->throttle_time_ms);
	codec_write_tags(out, NULL, 0, &m->tags);
	return out->err;
}

static void api_version_free(void *elem)
{
	codec_tags_free(&((struct codec_api_version_range *)elem)->tags);
}

void codec_api_versions_response_free(struct codec_api_versions_response *m)
{
	codec_array_free(m->api_keys, m->napi_keys, sizeof(*m->api_keys), api_version_free);
	codec_tags_free(&m->tags);
	memset(m, 0, sizeof(*m));
}
