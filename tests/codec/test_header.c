/* codec/header.c: framing and request/response headers. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"

Test(codec, header_frame_peek)
{
	uint8_t ok[] = {0, 0, 1, 0};
	uint8_t neg[] = {0x80, 0, 0, 0};
	struct codec_iov v = {ok, 4};
	size_t n;
	cr_assert(eq(i64, (int64_t)(codec_frame_peek(&v, 1, 1000, &n)), (int64_t)(CODEC_OK)));
	cr_assert(eq(i64, (int64_t)(n), (int64_t)(256)));
	cr_assert(eq(i64, (int64_t)(codec_frame_peek(&v, 1, 100, &n)), (int64_t)(CODEC_ERR_LIMIT)));
	v.len = 3;
	cr_assert(eq(i64, (int64_t)(codec_frame_peek(&v, 1, 1000, &n)), (int64_t)(CODEC_ERR_UNDERFLOW)));
	v = (struct codec_iov){neg, 4};
	cr_assert(eq(i64, (int64_t)(codec_frame_peek(&v, 1, 1000, &n)), (int64_t)(CODEC_ERR_BAD_MSG)));
}

Test(codec, header_request_v1_and_v2_from_golden)
{
	struct golden g;
	golden_load(&g, "produce_req_v8", true, CODEC_API_PRODUCE, 8);
	struct codec_iov f = {g.data + 4, g.len - 4};
	struct codec_request_header h;
	cr_assert(eq(i64, (int64_t)(codec_request_header_decode(&f, 1, &h)), (int64_t)(CODEC_OK)));
	cr_assert(eq(i64, (int64_t)(h.client_id.len), (int64_t)(13)));
	cr_assert(memcmp(g.data + 4 + h.client_id.off, "golden-client", 13) == 0);
	cr_assert(eq(i64, (int64_t)(h.len), (int64_t)(2 + 2 + 4 + 2 + 13)));
	golden_free(&g);

	golden_load(&g, "produce_req_v9", true, CODEC_API_PRODUCE, 9);
	f = (struct codec_iov){g.data + 4, g.len - 4};
	cr_assert(eq(i64, (int64_t)(codec_request_header_decode(&f, 1, &h)), (int64_t)(CODEC_OK)));
	cr_assert(eq(i64, (int64_t)(h.len), (int64_t)(2 + 2 + 4 + 2 + 13 + 1)), "v2 adds the tag section");
	/* Every truncated header prefix needs more bytes. */
	for (size_t n = 0; n < h.len; n++) {
		struct codec_iov t = {g.data + 4, n};
		cr_assert(eq(i64, (int64_t)(codec_request_header_decode(&t, 1, &h)), (int64_t)(CODEC_ERR_UNDERFLOW)), "prefix %zu", n);
	}
	golden_free(&g);
}

Test(codec, header_response_v0_v1)
{
	uint8_t v1[] = {0, 0, 0, 9, 0x00, 0xaa};
	struct codec_iov v = {v1, sizeof(v1)};
	int32_t corr;
	size_t len;
	cr_assert(eq(i64, (int64_t)(codec_response_header_decode(&v, 1, CODEC_API_METADATA, 12, &corr, &len)), (int64_t)(CODEC_OK)));
	cr_assert(eq(i64, (int64_t)(corr), (int64_t)(9)));
	cr_assert(eq(i64, (int64_t)(len), (int64_t)(5)));
	cr_assert(eq(i64, (int64_t)(codec_response_header_decode(&v, 1, CODEC_API_API_VERSIONS, 4, &corr, &len)), (int64_t)(CODEC_OK)));
	cr_assert(eq(i64, (int64_t)(len), (int64_t)(4)), "ApiVersions responses use header v0");
	cr_assert(eq(i64, (int64_t)(codec_response_header_decode(&v, 1, CODEC_API_METADATA, 8, &corr, &len)), (int64_t)(CODEC_OK)));
	cr_assert(eq(i64, (int64_t)(len), (int64_t)(4)));
}

Test(codec, header_iov_skip)
{
	uint8_t a[4], b[4];
	struct codec_iov in[2] = {{a, 4}, {b, 4}}, out[2];
	cr_assert(eq(i64, (int64_t)(codec_iov_skip(in, 2, 5, out, 2)), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(out[0].base), (int64_t)(b + 1)));
	cr_assert(eq(i64, (int64_t)(out[0].len), (int64_t)(3)));
	cr_assert(eq(i64, (int64_t)(codec_iov_skip(in, 2, 2, out, 2)), (int64_t)(2)));
	cr_assert(eq(i64, (int64_t)(out[0].len), (int64_t)(2)));
	cr_assert(eq(i64, (int64_t)(codec_iov_skip(in, 2, 2, out, 1)), (int64_t)(-1)));
	cr_assert(eq(i64, (int64_t)(codec_iov_skip(in, 2, 9, out, 2)), (int64_t)(-1)));
	cr_assert(eq(i64, (int64_t)(codec_iov_skip(in, 2, 8, out, 2)), (int64_t)(0)));
}
