/* codec/reader.c: bounded reader over segments; bad-input table. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/codec/oracle/oracle.h"

static void init1(struct codec_reader *r, struct codec_iov *v, const uint8_t *p, size_t n, bool flex)
{
	v->base = p;
	v->len = n;
	codec_reader_init(r, v, 1);
	r->flexible = flex;
}

Test(codec, reader_integers_across_segments)
{
	uint8_t a[] = {0x01, 0x02, 0x03};
	uint8_t b[] = {0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e};
	struct codec_iov v[3] = {{a, 3}, {NULL, 0}, {b, sizeof(b)}};
	struct codec_reader r;
	codec_reader_init(&r, v, 3);
	cr_assert(eq(i64, (int64_t)(r.len), (int64_t)(14)));
	cr_assert(eq(i64, (int64_t)(codec_read_i8(&r)), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(codec_read_i32(&r)), (int64_t)(0x02030405)));
	cr_assert(eq(i64, (int64_t)(codec_read_i64(&r)), (int64_t)(0x060708090a0b0c0dLL)));
	cr_assert(eq(i64, (int64_t)(codec_read_i16(&r)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(r.err), (int64_t)(CODEC_ERR_UNDERFLOW)));
	cr_assert(eq(i64, (int64_t)(r.err_off), (int64_t)(13)), "sticky error remembers its offset");
	cr_assert(eq(i64, (int64_t)(codec_read_i8(&r)), (int64_t)(0)), "reads after an error return zero");
	cr_assert(eq(i64, (int64_t)(r.err_off), (int64_t)(13)));
}

Test(codec, reader_varints_zigzag)
{
	struct {
		uint8_t in[10];
		size_t n;
		int64_t want;
	} cases[] = {{{0x00}, 1, 0}, {{0x01}, 1, -1}, {{0x02}, 1, 1}, {{0x7f}, 1, -64},
		     {{0xfe, 0xff, 0xff, 0xff, 0x0f}, 5, INT32_MAX}, {{0xff, 0xff, 0xff, 0xff, 0x0f}, 5, INT32_MIN}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct codec_iov v;
		struct codec_reader r;
		init1(&r, &v, cases[i].in, cases[i].n, false);
		cr_assert(eq(i64, (int64_t)(codec_read_varint(&r)), (int64_t)(cases[i].want)), "case %zu", i);
		cr_assert(eq(i64, (int64_t)(r.err), (int64_t)(CODEC_OK)));
	}
	uint8_t l[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
	struct codec_iov v;
	struct codec_reader r;
	init1(&r, &v, l, sizeof(l), false);
	cr_assert(eq(i64, (int64_t)(codec_read_varlong(&r)), (int64_t)(INT64_MIN)));
	cr_assert(eq(i64, (int64_t)(r.err), (int64_t)(CODEC_OK)));
}

/* The bad-input table: bytes, what to read, the error expected. */
enum what { UVARINT, VARLONG, STR, NULLABLE_STR, BYTES, ARRAY, TAGS, BOOL };

Test(codec, reader_bad_input_table)
{
	static const struct {
		const char *why;
		uint8_t in[16];
		size_t n;
		bool flex;
		enum what what;
		enum codec_err want;
	} cases[] = {
		{"truncated uvarint", {0x80, 0x80}, 2, true, UVARINT, CODEC_ERR_UNDERFLOW},
		{"overlong uvarint (6 bytes)", {0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 6, true, UVARINT, CODEC_ERR_BAD_MSG},
		{"uvarint above 32 bits", {0xff, 0xff, 0xff, 0xff, 0x1f}, 5, true, UVARINT, CODEC_ERR_BAD_MSG},
		{"overlong varlong (11 bytes)", {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 11, false, VARLONG, CODEC_ERR_BAD_MSG},
		{"varlong above 64 bits", {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, 10, false, VARLONG, CODEC_ERR_BAD_MSG},
		{"negative string length", {0xff, 0xfe}, 2, false, STR, CODEC_ERR_BAD_MSG},
		{"null non-nullable string", {0xff, 0xff}, 2, false, STR, CODEC_ERR_BAD_MSG},
		{"null non-nullable compact string", {0x00}, 1, true, STR, CODEC_ERR_BAD_MSG},
		{"string longer than the input", {0x00, 0x05, 'a', 'b'}, 4, false, STR, CODEC_ERR_UNDERFLOW},
		{"negative bytes length", {0xff, 0xff, 0xff, 0xf0}, 4, false, BYTES, CODEC_ERR_BAD_MSG},
		{"truncated string length", {0x00}, 1, false, NULLABLE_STR, CODEC_ERR_UNDERFLOW},
		{"negative array count", {0xff, 0xff, 0xff, 0xfe}, 4, false, ARRAY, CODEC_ERR_BAD_MSG},
		{"null non-nullable array", {0xff, 0xff, 0xff, 0xff}, 4, false, ARRAY, CODEC_ERR_BAD_MSG},
		{"array count above CODEC_ARRAY_MAX", {0x7f, 0xff, 0xff, 0xff}, 4, false, ARRAY, CODEC_ERR_LIMIT},
		{"array count above remaining bytes", {0x00, 0x00, 0x01, 0x00, 1, 2, 3}, 7, false, ARRAY, CODEC_ERR_UNDERFLOW},
		{"compact array count above remaining", {0x90, 0x01}, 2, true, ARRAY, CODEC_ERR_UNDERFLOW},
		{"tags out of order", {0x02, 0x05, 0x00, 0x03, 0x00}, 5, true, TAGS, CODEC_ERR_BAD_MSG},
		{"duplicate tag", {0x02, 0x01, 0x00, 0x01, 0x00}, 5, true, TAGS, CODEC_ERR_BAD_MSG},
		{"tag size past the end", {0x01, 0x00, 0x05, 0x01}, 4, true, TAGS, CODEC_ERR_UNDERFLOW},
		{"tag count above remaining", {0x7f, 0x00, 0x00}, 3, true, TAGS, CODEC_ERR_UNDERFLOW},
		{"bool not 0 or 1", {0x02}, 1, false, BOOL, CODEC_ERR_BAD_MSG},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct codec_iov v;
		struct codec_reader r;
		struct codec_tags keep = {0};
		init1(&r, &v, cases[i].in, cases[i].n, cases[i].flex);
		switch (cases[i].what) {
		case UVARINT: codec_read_uvarint(&r); break;
		case VARLONG: codec_read_varlong(&r); break;
		case STR: codec_read_slice(&r, false, false); break;
		case NULLABLE_STR: codec_read_slice(&r, false, true); break;
		case BYTES: codec_read_slice(&r, true, true); break;
		case ARRAY: codec_read_array_len(&r, false, 4); break;
		case TAGS: codec_read_tags(&r, &keep, NULL, NULL); break;
		case BOOL: codec_read_bool(&r); break;
		}
		cr_assert(eq(i64, (int64_t)(r.err), (int64_t)(cases[i].want)), "%s: got %s", cases[i].why, codec_err_str(r.err));
		codec_tags_free(&keep);
	}
}

Test(codec, reader_strings_classic_and_compact)
{
	uint8_t c[] = {0x00, 0x03, 'a', 'b', 'c', 0xff, 0xff};
	struct codec_iov v;
	struct codec_reader r;
	init1(&r, &v, c, sizeof(c), false);
	char *s = codec_read_str(&r, false);
	cr_assert_str_eq(s, "abc");
	free(s);
	cr_assert_null(codec_read_str(&r, true));
	cr_assert(eq(i64, (int64_t)(codec_reader_finish(&r)), (int64_t)(CODEC_OK)));

	uint8_t f[] = {0x04, 'x', 'y', 'z', 0x00, 0x01};
	init1(&r, &v, f, sizeof(f), true);
	struct codec_slice sl = codec_read_slice(&r, false, false);
	cr_assert(eq(i64, (int64_t)(sl.off), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(sl.len), (int64_t)(3)));
	sl = codec_read_slice(&r, false, true);
	cr_assert(eq(i64, (int64_t)(sl.len), (int64_t)(-1)));
	sl = codec_read_slice(&r, false, false);
	cr_assert(eq(i64, (int64_t)(sl.len), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(codec_reader_finish(&r)), (int64_t)(CODEC_OK)));
}

static bool tag_one(void *ctx, struct codec_reader *r, uint32_t tag, uint32_t size)
{
	if (tag != 1)
		return false;
	*(int32_t *)ctx = codec_read_i32(r);
	return true;
}

Test(codec, reader_tags_known_and_unknown_preserved)
{
	/* 3 fields: tag 0 (2 bytes), tag 1 (int32 7), tag 40 (1 byte) */
	uint8_t in[] = {0x03, 0x00, 0x02, 0xaa, 0xbb, 0x01, 0x04, 0, 0, 0, 7, 0x28, 0x01, 0xcc};
	struct codec_iov v;
	struct codec_reader r;
	init1(&r, &v, in, sizeof(in), true);
	struct codec_tags keep = {0};
	int32_t one = 0;
	codec_read_tags(&r, &keep, tag_one, &one);
	cr_assert(eq(i64, (int64_t)(codec_reader_finish(&r)), (int64_t)(CODEC_OK)));
	cr_assert(eq(i64, (int64_t)(one), (int64_t)(7)));
	cr_assert(eq(i64, (int64_t)(keep.count), (int64_t)(2)));
	uint8_t want[] = {0x00, 0x02, 0xaa, 0xbb, 0x28, 0x01, 0xcc};
	cr_assert(eq(i64, (int64_t)(keep.len), (int64_t)(sizeof(want))));
	cr_assert(memcmp(keep.raw, want, sizeof(want)) == 0);

	/* Re-encode with the known field merged in order. */
	struct codec_buf b;
	codec_buf_init(&b, 1024);
	b.flexible = true;
	uint8_t seven[] = {0, 0, 0, 7};
	struct codec_tag_out k = {1, seven, 4};
	codec_write_tags(&b, &k, 1, &keep);
	cr_assert(eq(i64, (int64_t)(b.len), (int64_t)(sizeof(in))));
	cr_assert(memcmp(b.data, in, sizeof(in)) == 0);
	codec_buf_free(&b);
	codec_tags_free(&keep);
}

Test(codec, reader_tag_handler_must_consume_exactly_its_field)
{
	uint8_t in[] = {0x01, 0x01, 0x05, 0, 0, 0, 7, 0xee};
	struct codec_iov v;
	struct codec_reader r;
	int32_t one;
	init1(&r, &v, in, sizeof(in), true);
	codec_read_tags(&r, NULL, tag_one, &one);
	cr_assert(eq(i64, (int64_t)(r.err), (int64_t)(CODEC_ERR_BAD_MSG)), "left a byte of the field unread");

	uint8_t in2[] = {0x01, 0x01, 0x02, 0, 0, 0, 7};
	init1(&r, &v, in2, sizeof(in2), true);
	codec_read_tags(&r, NULL, tag_one, &one);
	cr_assert(eq(i64, (int64_t)(r.err), (int64_t)(CODEC_ERR_BAD_MSG)), "read past the field");
}

Test(codec, reader_finish_rejects_trailing_bytes)
{
	uint8_t in[] = {0, 1, 2};
	struct codec_iov v;
	struct codec_reader r;
	init1(&r, &v, in, sizeof(in), false);
	codec_read_i16(&r);
	cr_assert(eq(i64, (int64_t)(codec_reader_finish(&r)), (int64_t)(CODEC_ERR_BAD_MSG)));
	cr_assert(eq(i64, (int64_t)(r.err_off), (int64_t)(2)));
}

Test(codec, reader_seek_and_uuid)
{
	uint8_t in[20];
	for (int i = 0; i < 20; i++)
		in[i] = (uint8_t)i;
	struct codec_iov v[2] = {{in, 7}, {in + 7, 13}};
	struct codec_reader r;
	codec_reader_init(&r, v, 2);
	codec_reader_seek(&r, 3);
	uint8_t id[16];
	codec_read_uuid(&r, id);
	cr_assert(memcmp(id, in + 3, 16) == 0);
	codec_reader_seek(&r, 7);
	cr_assert(eq(i64, (int64_t)(codec_read_i8(&r)), (int64_t)(7)));
	codec_reader_seek(&r, 21);
	cr_assert(eq(i64, (int64_t)(r.err), (int64_t)(CODEC_ERR_UNDERFLOW)));
}

Test(codec, reader_sub_is_bounded_inside_one_segment)
{
	uint8_t in[16] = {0, 0, 0, 1, 0, 0, 0, 2};
	struct codec_iov v;
	struct codec_reader r, sub;
	init1(&r, &v, in, sizeof(in), false);
	cr_assert(codec_reader_sub(&r, 2, &sub));
	codec_read_i32(&sub);
	cr_assert(eq(i64, (int64_t)(sub.err), (int64_t)(CODEC_ERR_UNDERFLOW)), "a sub-reader ends at its bound, not its segment's");
	cr_assert(eq(i64, (int64_t)(codec_reader_remaining(&sub)), (int64_t)(2)));
	codec_reader_join(&r, &sub);
	cr_assert(eq(i64, (int64_t)(r.err), (int64_t)(CODEC_ERR_BAD_MSG)));

	init1(&r, &v, in, sizeof(in), false);
	cr_assert(codec_reader_sub(&r, 4, &sub));
	cr_assert(eq(i64, (int64_t)(codec_read_i32(&sub)), (int64_t)(1)));
	codec_reader_join(&r, &sub);
	cr_assert(eq(i64, (int64_t)(r.err), (int64_t)(CODEC_OK)));
	cr_assert(eq(i64, (int64_t)(r.off), (int64_t)(4)));
	cr_assert(eq(i64, (int64_t)(r.len), (int64_t)(16)));
	cr_assert_not(codec_reader_sub(&r, 13, &sub));
	cr_assert(eq(i64, (int64_t)(r.err), (int64_t)(CODEC_ERR_UNDERFLOW)));
}
