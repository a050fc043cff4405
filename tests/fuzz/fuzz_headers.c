/* Fuzz codec_frame_peek, codec_request_header_decode and codec_response_header_decode. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct codec_iov iov[2];
	struct codec_request_header h;
	size_t len;
	int32_t corr;
	if (size < 2)
		return 0;
	fuzz_input(data, size, 0, 0, iov);
	(void)codec_frame_peek(iov, 2, 1 << 20, &len);
	if (codec_request_header_decode(iov, 2, &h) == CODEC_OK && h.len > size - 2)
		abort();
	if (codec_response_header_decode(iov, 2, (int16_t)(data[0] % 100), (int16_t)(data[0] % 19),
					 &corr, &len) == CODEC_OK && len > size - 2)
		abort();
	return 0;
}
