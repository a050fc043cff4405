/* codec/writer.c: bounded output buffer and primitive encoders. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/codec/oracle/oracle.h"

Test(codec, writer_primitives_roundtrip_through_reader)
{
	struct codec_buf b;
	codec_buf_init(&b, 1 << 16);
	b.flexible = true;
	codec_write_i8(&b, -2);
	codec_write_i16(&b, -300);
	codec_write_i32(&b, 123456789);
	codec_write_i64(&b, -1234567890123LL);
	codec_write_bool(&b, true);
	codec_write_uvarint(&b, UINT32_MAX);
	codec_write_varint(&b, INT32_MIN);
	codec_write_varlong(&b, INT64_MAX);
	codec_write_str(&b, "héllo");
	codec_write_str(&b, NULL);
	codec_write_array_len(&b, 3);
	struct codec_int32s a = {(int32_t[]){1, -1, 7}, 3};
	codec_write_int32s(&b, &a);
	cr_assert(eq(i64, (int64_t)(b.err), (int64_t)(CODEC_OK)));

	struct codec_iov v = {b.data, b.len};
	struct codec_reader r;
	codec_reader_init(&r, &v, 1);
	r.flexible = true;
	cr_assert(eq(i64, (int64_t)(codec_read_i8(&r)), (int64_t)(-2)));
	cr_assert(eq(i64, (int64_t)(codec_read_i16(&r)), (int64_t)(-300)));
	cr_assert(eq(i64, (int64_t)(codec_read_i32(&r)), (int64_t)(123456789)));
	cr_assert(eq(i64, (int64_t)(codec_read_i64(&r)), (int64_t)(-1234567890123LL)));
	cr_assert(codec_read_bool(&r));
	cr_assert(eq(i64, (int64_t)(codec_read_uvarint(&r)), (int64_t)(UINT32_MAX)));
	cr_assert(eq(i64, (int64_t)(codec_read_varint(&r)), (int64_t)(INT32_MIN)));
	cr_assert(eq(i64, (int64_t)(codec_read_varlong(&r)), (int64_t)(INT64_MAX)));
	char *s = codec_read_str(&r, false);
	cr_assert_str_eq(s, "héllo");
	free(s);
	cr_assert_null(codec_read_str(&r, true));
	cr_assert(eq(i64, (int64_t)(codec_read_array_len(&r, false, 0)), (int64_t)(3)));
	struct codec_int32s back;
	codec_read_int32s(&r, &back);
	cr_assert(eq(i64, (int64_t)(back.n), (int64_t)(3)));
	cr_assert(eq(i64, (int64_t)(back.v[1]), (int64_t)(-1)));
	free(back.v);
	cr_assert(eq(i64, (int64_t)(codec_reader_finish(&r)), (int64_t)(CODEC_OK)));
	codec_buf_free(&b);
}

Test(codec, writer_limit_is_sticky)
{
	struct codec_buf b;
	codec_buf_init(&b, 6);
	codec_write_i32(&b, 1);
	codec_write_i32(&b, 2);
	cr_assert(eq(i64, (int64_t)(b.err), (int64_t)(CODEC_ERR_LIMIT)));
	cr_assert(eq(i64, (int64_t)(b.len), (int64_t)(4)));
	codec_write_i8(&b, 1);
	cr_assert(eq(i64, (int64_t)(b.len), (int64_t)(4)), "nothing written after an error");
	codec_buf_free(&b);
}

Test(codec, writer_string_too_long_is_limit)
{
	struct codec_buf b;
	codec_buf_init(&b, 1 << 20);
	char *big = malloc(40000);
	memset(big, 'a', 39999);
	big[39999] = '\0';
	codec_write_str(&b, big);
	cr_assert(eq(i64, (int64_t)(b.err), (int64_t)(CODEC_ERR_LIMIT)));
	free(big);
	codec_buf_free(&b);
}

Test(codec, writer_tags_merge_in_order_and_classic_writes_nothing)
{
	/* unknown: tag 2 and tag 5; known: tag 0 and tag 3 */
	uint8_t raw[] = {0x02, 0x01, 0xaa, 0x05, 0x00};
	struct codec_tags unknown = {raw, sizeof(raw), 2};
	uint8_t d0[] = {0x10}, d3[] = {0x30, 0x31};
	struct codec_tag_out known[] = {{0, d0, 1}, {3, d3, 2}};
	struct codec_buf b;
	codec_buf_init(&b, 1024);
	codec_write_tags(&b, known, 2, &unknown);
	cr_assert(eq(i64, (int64_t)(b.len), (int64_t)(0)), "classic versions have no tag section");
	b.flexible = true;
	codec_write_tags(&b, known, 2, &unknown);
	uint8_t want[] = {0x04, 0x00, 0x01, 0x10, 0x02, 0x01, 0xaa, 0x03, 0x02, 0x30, 0x31, 0x05, 0x00};
	cr_assert(eq(i64, (int64_t)(b.len), (int64_t)(sizeof(want))));
	cr_assert(memcmp(b.data, want, sizeof(want)) == 0);
	codec_buf_free(&b);
}
