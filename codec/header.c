/* The request/response headers (spec RequestHeader v1–v2, ResponseHeader v0–v1). */
#include "codec/codec.h"

enum codec_err codec_request_header_decode(const struct codec_iov *iov, int niov,
					   struct codec_request_header *h)
{
	struct codec_reader r;
	codec_reader_init(&r, iov, niov);
	h->api_key = codec_read_i16(&r);
	h->api_version = codec_read_i16(&r);
	h->correlation_id = codec_read_i32(&r);
	/* ClientId is a classic nullable string even in header v2. */
	h->client_id = codec_read_slice(&r, false, true);
	if (codec_request_header_version(h->api_key, h->api_version) >= 2) {
		r.flexible = true;
		codec_read_tags(&r, NULL, NULL, NULL);
	}
	h->len = r.off;
	return r.err;
}

enum codec_err codec_response_header_decode(const struct codec_iov *iov, int niov,
					    int16_t api_key, int16_t api_version,
					    int32_t *correlation_id, size_t *len)
{
	struct codec_reader r;
	codec_reader_init(&r, iov, niov);
	*correlation_id = codec_read_i32(&r);
	if (codec_response_header_version(api_key, api_version) >= 1) {
		r.flexible = true;
		codec_read_tags(&r, NULL, NULL, NULL);
	}
	*len = r.off;
	return r.err;
}

int codec_iov_skip(const struct codec_iov *in, int nin, size_t skip, struct codec_iov *out, int max_out)
{
	int n = 0;
	for (int i = 0; i < nin; i++) {
		if (skip >= in[i].len) {
			skip -= in[i].len;
			continue;
		}
		if (n == max_out)
			return -1;
		out[n].base = in[i].base + skip;
		out[n].len = in[i].len - skip;
		skip = 0;
		n++;
	}
	return skip ? -1 : n;
}
