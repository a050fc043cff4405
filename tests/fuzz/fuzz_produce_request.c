/* Fuzz codec_produce_request_decode (and re-encode from the same body). */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct codec_iov iov[2];
	struct codec_produce_request m;
	if (size < 2)
		return 0;
	int16_t v = fuzz_input(data, size, 3, CODEC_PRODUCE_V14, iov);
	if (codec_produce_request_decode(iov, 2, v, &m) == CODEC_OK) {
		struct codec_buf a;
		codec_buf_init(&a, 1 << 24);
		if (codec_produce_request_encode(&m, v, iov, 2, &a) != CODEC_OK)
			abort();
		codec_buf_free(&a);
	}
	codec_produce_request_free(&m);
	return 0;
}
