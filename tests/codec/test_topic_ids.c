/*
 * Unit tests of codec/topic_ids.c: the TopicIds a Fetch request names (v13+,
 * distinct; none before v13; truncated input is an error), and the Metadata
 * v12 request by TopicId (decoded back field by field).
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <string.h>

#include "codec/codec.h"

/* A Fetch request body: v12 names topics, v13+ ids; topic t gets `parts` partitions. */
static size_t fetch_body(uint8_t *out, int16_t version, uint8_t (*ids)[16], size_t n, int parts)
{
	struct codec_buf b;
	codec_buf_init(&b, 1 << 16);
	b.flexible = true;
	if (version < 15)
		codec_write_i32(&b, -1);   /* ReplicaId */
	codec_write_i32(&b, 500);
	codec_write_i32(&b, 1);
	codec_write_i32(&b, 1 << 20);
	codec_write_i8(&b, 0);
	codec_write_i32(&b, 0);
	codec_write_i32(&b, -1);
	codec_write_array_len(&b, (int32_t)n);
	for (size_t t = 0; t < n; t++) {
		if (version >= 13)
			codec_write_uuid(&b, ids[t]);
		else
			codec_write_str(&b, "orders");
		codec_write_array_len(&b, parts);
		for (int p = 0; p < parts; p++) {
			codec_write_i32(&b, p);
			codec_write_i32(&b, -1);
			codec_write_i64(&b, 0);
			codec_write_i32(&b, -1);
			codec_write_i64(&b, -1);
			codec_write_i32(&b, 1 << 20);
			codec_write_tags(&b, NULL, 0, NULL);
		}
		codec_write_tags(&b, NULL, 0, NULL);
	}
	codec_write_array_len(&b, 0); /* ForgottenTopicsData */
	codec_write_str(&b, "");      /* RackId */
	codec_write_tags(&b, NULL, 0, NULL);
	cr_assert(eq(i64, (int64_t)(b.err), (int64_t)(CODEC_OK)));
	memcpy(out, b.data, b.len);
	size_t len = b.len;
	codec_buf_free(&b);
	return len;
}

Test(topic_ids, fetch_request_ids_distinct_v13_to_v18)
{
	uint8_t ids[3][16], body[4096];
	for (int i = 0; i < 3; i++)
		memset(ids[i], 0x10 + i, 16);
	memcpy(ids[2], ids[0], 16); /* the same topic twice */
	for (int16_t v = 13; v <= 18; v++) {
		size_t len = fetch_body(body, v, ids, 3, 2);
		struct codec_iov iov = { body, len };
		uint8_t (*got)[16] = NULL;
		size_t n = 9;
		cr_assert(eq(i64, (int64_t)(codec_fetch_request_topic_ids(&iov, 1, v, &got, &n)), (int64_t)(CODEC_OK)), "v%d", v);
		cr_assert(eq(i64, (int64_t)(n), (int64_t)(2)), "v%d: distinct ids", v);
		cr_assert_not(memcmp(got[0], ids[0], 16));
		cr_assert_not(memcmp(got[1], ids[1], 16));
		free(got);
		/* cut anywhere inside the topics: an error, nothing returned */
		iov.len = len - 12;
		cr_assert(ne(i64, (int64_t)(codec_fetch_request_topic_ids(&iov, 1, v, &got, &n)), (int64_t)(CODEC_OK)));
		cr_assert_null(got);
		cr_assert(eq(i64, (int64_t)(n), (int64_t)(0)));
	}
}

Test(topic_ids, fetch_request_before_v13_names_no_id)
{
	uint8_t body[4096];
	size_t len = fetch_body(body, 12, NULL, 1, 1);
	struct codec_iov iov = { body, len };
	uint8_t (*got)[16] = NULL;
	size_t n = 5;
	cr_assert(eq(i64, (int64_t)(codec_fetch_request_topic_ids(&iov, 1, 12, &got, &n)), (int64_t)(CODEC_OK)));
	cr_assert(eq(i64, (int64_t)(n), (int64_t)(0)));
	cr_assert_null(got);
	cr_assert(eq(i64, (int64_t)(codec_fetch_request_topic_ids(&iov, 1, 19, &got, &n)), (int64_t)(CODEC_ERR_UNSUPPORTED)));
}

Test(topic_ids, metadata_request_by_ids_v12)
{
	uint8_t ids[2][16];
	memset(ids[0], 0xab, 16);
	memset(ids[1], 0xcd, 16);
	struct codec_buf b;
	codec_buf_init(&b, 4096);
	cr_assert(eq(i64, (int64_t)(codec_metadata_request_by_ids((const uint8_t (*)[16])ids, 2, -1, "syncgate", &b)), (int64_t)(0)));
	struct codec_iov iov = { b.data + 4, b.len - 4 };
	struct codec_reader r;
	codec_reader_init(&r, &iov, 1);
	struct codec_request_header h;
	cr_assert(eq(i64, (int64_t)(codec_request_header_decode(&iov, 1, &h)), (int64_t)(CODEC_OK)));
	cr_assert(eq(i64, (int64_t)(h.api_key), (int64_t)(CODEC_API_METADATA)));
	cr_assert(eq(i64, (int64_t)(h.api_version), (int64_t)(12)));
	cr_assert(eq(i64, (int64_t)(h.correlation_id), (int64_t)(-1)));
	cr_assert(eq(i64, (int64_t)(h.client_id.len), (int64_t)(8)));
	codec_reader_seek(&r, h.len);
	r.flexible = true;
	cr_assert(eq(i64, (int64_t)(codec_read_array_len(&r, false, 17)), (int64_t)(2)));
	for (int i = 0; i < 2; i++) {
		uint8_t id[16];
		codec_read_uuid(&r, id);
		cr_assert_not(memcmp(id, ids[i], 16));
		cr_assert_null(codec_read_str(&r, true), "Name null");
		codec_read_tags(&r, NULL, NULL, NULL);
	}
	cr_assert(eq(i64, (int64_t)(codec_read_bool(&r)), (int64_t)(false)), "no auto-creation");
	cr_assert(eq(i64, (int64_t)(codec_read_bool(&r)), (int64_t)(false)));
	codec_read_tags(&r, NULL, NULL, NULL);
	cr_assert(eq(i64, (int64_t)(codec_reader_finish(&r)), (int64_t)(CODEC_OK)));
	uint32_t size = (uint32_t)b.data[0] << 24 | (uint32_t)b.data[1] << 16 | (uint32_t)b.data[2] << 8 | b.data[3];
	cr_assert(eq(i64, (int64_t)(size), (int64_t)(b.len - 4)));
	codec_buf_free(&b);
	codec_buf_init(&b, 4096);
	cr_assert(eq(i64, (int64_t)(codec_metadata_request_by_ids(NULL, 0, -1, "syncgate", &b)), (int64_t)(-1)), "nothing to ask");
	codec_buf_free(&b);
}
