/* ApiVersions (key 18) request encoder: the round-trip oracle of the decoder. */
#include "tests/codec/oracle/oracle.h"

#define API_VERSIONS_MAX CODEC_API_VERSIONS_MAX

enum codec_err codec_api_versions_request_encode(const struct codec_api_versions_request *m,
						 int16_t version, struct codec_buf *out)
{
	if (version < 0 || version > API_VERSIONS_MAX)
		return CODEC_ERR_UNSUPPORTED;
	out->flexible = codec_api_flexible(CODEC_API_API_VERSIONS, version);
	if (version >= 3) {
		codec_write_str(out, m->client_software_name ? m->client_software_name : "");
		codec_write_str(out, m->client_software_version ? m->client_software_version : "");
	}
	if (version >= 5) {
		codec_write_str(out, m->cluster_id);
		codec_write_i32(out, m->node_id);
	}
	codec_write_tags(out, NULL, 0, &m->tags);
	return out->err;
}
