/*
 * libFuzzer harness shared by the codec fuzz targets (one target per
 * decoder, fuzz_<decoder>.c). Input: byte 0 picks the version in the
 * decoder's range, byte 1 where the body is cut into two segments, the rest
 * is the body. When a decode succeeds and the message has an encoder, the
 * encoding must decode again and re-encode to the same bytes.
 */
#ifndef SYNCGATE_TESTS_FUZZ_H
#define SYNCGATE_TESTS_FUZZ_H

#include <stdlib.h>
#include <string.h>

#include "tests/codec/oracle/oracle.h"

/* Two segments over data[2..]; returns the version. */
static inline int16_t fuzz_input(const uint8_t *data, size_t size, int16_t vmin, int16_t vmax,
				 struct codec_iov iov[2])
{
	int16_t v = (int16_t)(vmin + data[0] % (vmax - vmin + 1));
	const uint8_t *body = data + 2;
	size_t len = size - 2, cut = len * data[1] / 256;
	iov[0] = (struct codec_iov){body, cut};
	iov[1] = (struct codec_iov){body + cut, len - cut};
	return v;
}

/* Defines LLVMFuzzerTestOneInput for a decode/encode/free triple named fn##_decode/_encode/_free. */
#define FUZZ_MESSAGE(type, fn, vmin, vmax)                                                     \
	int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);                           \
	int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)                            \
	{                                                                                       \
		struct codec_iov iov[2];                                                        \
		type m;                                                                         \
		if (size < 2)                                                                   \
			return 0;                                                               \
		int16_t v = fuzz_input(data, size, vmin, vmax, iov);                            \
		if (fn##_decode(iov, 2, v, &m) == CODEC_OK) {                                   \
			struct codec_buf a, b;                                                  \
			codec_buf_init(&a, 1 << 24);                                            \
			codec_buf_init(&b, 1 << 24);                                            \
			if (fn##_encode(&m, v, &a) != CODEC_OK)                                 \
				abort();                                                        \
			fn##_free(&m);                                                          \
			struct codec_iov again = {a.data, a.len};                               \
			if (fn##_decode(&again, 1, v, &m) != CODEC_OK ||                        \
			    fn##_encode(&m, v, &b) != CODEC_OK || a.len != b.len ||             \
			    (a.len && memcmp(a.data, b.data, a.len) != 0))                      \
				abort();                                                        \
			codec_buf_free(&a);                                                     \
			codec_buf_free(&b);                                                     \
		}                                                                               \
		fn##_free(&m);                                                                  \
		return 0;                                                                       \
	}

#endif
