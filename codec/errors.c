/* Produce error down-mapping for old clients; codec error names. */
#include "codec/codec.h"

int16_t codec_produce_error_downmap(int16_t code, int16_t produce_version,
				    const struct codec_sync_codes *codes)
{
	if (produce_version >= CODEC_PRODUCE_V14 || code == CODEC_ERROR_NONE)
		return code;
	if (code == codes->mirror_sync_replication_timeout ||
	    code == codes->not_enough_remote_replicas_after_append)
		return CODEC_ERROR_NOT_ENOUGH_REPLICAS_AFTER_APPEND;
	return code;
}

const char *codec_err_str(enum codec_err e)
{
	static const char *const names[CODEC_ERR__COUNT] = {
		[CODEC_OK] = "ok",
		[CODEC_ERR_UNDERFLOW] = "underflow (need more bytes)",
		[CODEC_ERR_BAD_MSG] = "malformed message",
		[CODEC_ERR_LIMIT] = "size or count above limit",
		[CODEC_ERR_UNSUPPORTED] = "unsupported api key or version",
		[CODEC_ERR_NOMEM] = "out of memory",
	};
	return (unsigned)e < CODEC_ERR__COUNT ? names[e] : "unknown codec error";
}
