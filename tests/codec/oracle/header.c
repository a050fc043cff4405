/* Framing: the 4-byte size prefix (test helpers and fuzzers only; the proxy frames in proxy/conn.c). */
#include "tests/codec/oracle/oracle.h"

enum codec_err codec_frame_peek(const struct codec_iov *iov, int niov, size_t max_body,
				size_t *body_len)
{
	struct codec_reader r;
	codec_reader_init(&r, iov, niov);
	int32_t size = codec_read_i32(&r);
	*body_len = 0;
	if (r.err)
		return r.err;
	if (size < 0)
		return CODEC_ERR_BAD_MSG;
	if ((size_t)size > max_body)
		return CODEC_ERR_LIMIT;
	*body_len = (size_t)size;
	return CODEC_OK;
}
