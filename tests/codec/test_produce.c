/* codec/produce.c: Produce request (RecordBatch headers) and response. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"

CODEC_TEST_OPS(produce_resp, "produce_resp", CODEC_API_PRODUCE, false,
	       struct codec_produce_response, codec_produce_response);

static enum codec_err req_dec(const struct codec_iov *iov, int niov, int16_t v, void *m)
{
	return codec_produce_request_decode(iov, niov, v, m);
}

static enum codec_err req_enc(const void *m, int16_t v, const struct codec_iov *src, int nsrc,
			      struct codec_buf *o)
{
	return codec_produce_request_encode(m, v, src, nsrc, o);
}

static void req_free(void *m)
{
	codec_produce_request_free(m);
}

static const struct msg_ops produce_req = {"produce_req", CODEC_API_PRODUCE, true,
					   sizeof(struct codec_produce_request), req_dec, req_enc, req_free};

Test(codec, produce_request_golden_roundtrip_v3_to_v13)
{
	for (int16_t v = 3; v <= 13; v++)
		check_golden(&produce_req, v);
}

Test(codec, produce_response_golden_roundtrip_v3_to_v13)
{
	for (int16_t v = 3; v <= 13; v++)
		check_golden(&produce_resp, v);
}

static void decode_req(struct golden *g, int16_t v, struct codec_produce_request *m)
{
	char name[64];
	snprintf(name, sizeof(name), "produce_req_v%d", v);
	golden_load(g, name, true, CODEC_API_PRODUCE, v);
	struct codec_iov body = golden_body(g);
	cr_assert(eq(i64, (int64_t)(codec_produce_request_decode(&body, 1, v, m)), (int64_t)(CODEC_OK)));
}

Test(codec, produce_request_reads_batch_headers_and_offset_span)
{
	for (int16_t v = 3; v <= 13; v++) {
		struct golden g;
		struct codec_produce_request m;
		decode_req(&g, v, &m);
		cr_assert(eq(i64, (int64_t)(m.acks), (int64_t)(-1)));
		cr_assert(eq(i64, (int64_t)(m.timeout_ms), (int64_t)(30000)));
		if (v % 2 == 0)
			cr_assert_str_eq(m.transactional_id, "txn-1");
		else
			cr_assert_null(m.transactional_id);
		cr_assert(eq(i64, (int64_t)(m.ntopics), (int64_t)(2)));
		if (v >= 13) {
			cr_assert_null(m.topics[0].name);
			cr_assert(eq(i64, (int64_t)(m.topics[0].topic_id[0]), (int64_t)(0x01)));
			cr_assert(eq(i64, (int64_t)(m.topics[0].topic_id[15]), (int64_t)(0x21)));
		} else {
			cr_assert_str_eq(m.topics[1].name, "topic-1");
		}
		struct codec_produce_partition_req *p0 = &m.topics[0].partitions[0];
		struct codec_produce_partition_req *p1 = &m.topics[0].partitions[1];
		cr_assert(eq(i64, (int64_t)(p0->nbatches), (int64_t)(1)));
		cr_assert(eq(i64, (int64_t)(p0->offset_span), (int64_t)(1)));
		cr_assert(eq(i64, (int64_t)(p1->index), (int64_t)(1)));
		cr_assert(eq(i64, (int64_t)(p1->nbatches), (int64_t)(2)));
		cr_assert(eq(i64, (int64_t)(p1->offset_span), (int64_t)(3 + 2)));
		cr_assert(eq(i64, (int64_t)(p1->last_batch.magic), (int64_t)(2)));
		cr_assert(eq(i64, (int64_t)(p1->last_batch.producer_id), (int64_t)(4242)));
		cr_assert(eq(i64, (int64_t)(p1->last_batch.producer_epoch), (int64_t)(3)));
		cr_assert(eq(i64, (int64_t)(p1->last_batch.base_sequence), (int64_t)(17)));
		cr_assert(eq(i64, (int64_t)(p1->last_batch.last_offset_delta), (int64_t)(1)));
		cr_assert(eq(i64, (int64_t)(p1->last_batch.records_count), (int64_t)(2)));
		cr_assert(ne(i64, (int64_t)(p1->last_batch.attributes & 0x10), 0), "transactional bit");
		cr_assert(eq(i64, (int64_t)(p1->last_batch.base_timestamp), (int64_t)(1700000000003LL)));
		codec_produce_request_free(&m);
		golden_free(&g);
	}
}

/* Copy of a golden Produce v9 request body with one byte changed at `at` (body offset). */
static enum codec_err decode_patched(size_t (*find)(const uint8_t *b, size_t n), uint8_t value,
				     struct codec_produce_request *m)
{
	struct golden g;
	golden_load(&g, "produce_req_v9", true, CODEC_API_PRODUCE, 9);
	struct codec_iov body = golden_body(&g);
	uint8_t *copy = malloc(body.len);
	memcpy(copy, body.base, body.len);
	size_t at = find(copy, body.len);
	copy[at] = value;
	struct codec_iov v = {copy, body.len};
	enum codec_err e = codec_produce_request_decode(&v, 1, 9, m);
	free(copy);
	golden_free(&g);
	return e;
}

/* Offset of the first batch's magic byte: the first records blob starts after its length. */
static size_t first_magic(const uint8_t *b, size_t n)
{
	/* txn id (null: 1 byte at v9), acks 2, timeout 4, topics 1, name 1+7, partitions 1, index 4, len 1 */
	size_t off = 1 + 2 + 4 + 1 + 8 + 1 + 4 + 1;
	return off + 16;
}

static size_t first_batch_length_lsb(const uint8_t *b, size_t n)
{
	return first_magic(b, n) - 16 + 11;
}

Test(codec, produce_request_legacy_magic_counts_no_batches)
{
	struct codec_produce_request m;
	cr_assert(eq(i64, (int64_t)(decode_patched(first_magic, 1, &m)), (int64_t)(CODEC_OK)));
	cr_assert(eq(i64, (int64_t)(m.topics[0].partitions[0].nbatches), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(m.topics[0].partitions[0].offset_span), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(m.topics[0].partitions[1].nbatches), (int64_t)(2)));
	codec_produce_request_free(&m);
}

Test(codec, produce_request_partial_batch_is_bad_msg)
{
	struct codec_produce_request m;
	/* batchLength one more than the blob holds */
	struct golden g;
	golden_load(&g, "produce_req_v9", true, CODEC_API_PRODUCE, 9);
	uint8_t lsb = golden_body(&g).base[first_batch_length_lsb(NULL, 0)];
	golden_free(&g);
	cr_assert(eq(i64, (int64_t)(decode_patched(first_batch_length_lsb, (uint8_t)(lsb + 1), &m)), (int64_t)(CODEC_ERR_BAD_MSG)));
	codec_produce_request_free(&m);
	cr_assert(eq(i64, (int64_t)(decode_patched(first_batch_length_lsb, 10, &m)), (int64_t)(CODEC_ERR_BAD_MSG)));
	codec_produce_request_free(&m);
}

/* Decode errors keep where they happened (codec_err_offset, logged as
 * offset=): inside a record batch (a nested reader), and trailing bytes. */
Test(codec, produce_request_error_reports_its_offset)
{
	struct codec_produce_request m;
	struct golden g;
	golden_load(&g, "produce_req_v9", true, CODEC_API_PRODUCE, 9);
	uint8_t lsb = golden_body(&g).base[first_batch_length_lsb(NULL, 0)];
	cr_assert(eq(i64, (int64_t)(decode_patched(first_batch_length_lsb, (uint8_t)(lsb + 1), &m)), (int64_t)(CODEC_ERR_BAD_MSG)));
	codec_produce_request_free(&m);
	/* the batch length is checked once the magic byte is read */
	cr_assert(eq(i64, (int64_t)(codec_err_offset()), (int64_t)(first_magic(NULL, 0) + 1)));

	struct codec_iov body = golden_body(&g);
	uint8_t *longer = calloc(1, body.len + 1);
	memcpy(longer, body.base, body.len);
	struct codec_iov v = {longer, body.len + 1};
	cr_assert(eq(i64, (int64_t)(codec_produce_request_decode(&v, 1, 9, &m)), (int64_t)(CODEC_ERR_BAD_MSG)));
	codec_produce_request_free(&m);
	cr_assert(eq(i64, (int64_t)(codec_err_offset()), (int64_t)(body.len)), "trailing bytes: where the message ended");
	cr_assert(eq(i64, (int64_t)(codec_produce_request_decode(&body, 1, 9, &m)), (int64_t)(CODEC_OK)));
	codec_produce_request_free(&m);
	cr_assert(eq(i64, (int64_t)(codec_err_offset()), (int64_t)(0)), "a decode that succeeds leaves no offset");
	for (size_t n = 0; n < body.len; n++) { /* every truncation: an offset inside what was given */
		struct codec_iov t = {body.base, n};
		cr_assert(ne(i64, (int64_t)(codec_produce_request_decode(&t, 1, 9, &m)), (int64_t)(CODEC_OK)));
		codec_produce_request_free(&m);
		cr_assert(le(i64, (int64_t)(codec_err_offset()), (int64_t)(n)), "prefix %zu", n);
	}
	free(longer);
	golden_free(&g);
}

Test(codec, produce_v14_is_v13_on_the_wire)
{
	struct golden g;
	golden_load(&g, "produce_resp_v13", false, CODEC_API_PRODUCE, 13);
	struct codec_iov body = golden_body(&g);
	struct codec_produce_response m;
	cr_assert(eq(i64, (int64_t)(codec_produce_response_decode(&body, 1, CODEC_PRODUCE_V14, &m)), (int64_t)(CODEC_OK)));
	struct codec_buf out;
	codec_buf_init(&out, 1 << 20);
	cr_assert(eq(i64, (int64_t)(codec_produce_response_encode(&m, CODEC_PRODUCE_V14, &out)), (int64_t)(CODEC_OK)));
	cr_assert(eq(i64, (int64_t)(out.len), (int64_t)(body.len)));
	cr_assert(memcmp(out.data, body.base, body.len) == 0);
	codec_buf_free(&out);
	codec_produce_response_free(&m);
	cr_assert(eq(i64, (int64_t)(codec_produce_response_decode(&body, 1, 15, &m)), (int64_t)(CODEC_ERR_UNSUPPORTED)));
	cr_assert(eq(i64, (int64_t)(codec_produce_response_decode(&body, 1, 2, &m)), (int64_t)(CODEC_ERR_UNSUPPORTED)));
	golden_free(&g);
}

Test(codec, produce_response_decodes_kip951_fields)
{
	struct golden g;
	golden_load(&g, "produce_resp_v10", false, CODEC_API_PRODUCE, 10);
	struct codec_iov body = golden_body(&g);
	struct codec_produce_response m;
	cr_assert(eq(i64, (int64_t)(codec_produce_response_decode(&body, 1, 10, &m)), (int64_t)(CODEC_OK)));
	cr_assert(eq(i64, (int64_t)(m.ntopics), (int64_t)(2)));
	cr_assert_str_eq(m.topics[0].name, "topic-0");
	struct codec_produce_partition_resp *bad = &m.topics[0].partitions[1];
	cr_assert(eq(i64, (int64_t)(bad->error_code), (int64_t)(CODEC_ERROR_NOT_LEADER_OR_FOLLOWER)));
	cr_assert_str_eq(bad->error_message, "not the leader");
	cr_assert(bad->has_current_leader);
	cr_assert(eq(i64, (int64_t)(bad->current_leader_id), (int64_t)(2)));
	cr_assert(eq(i64, (int64_t)(bad->current_leader_epoch), (int64_t)(7)));
	cr_assert(eq(i64, (int64_t)(m.topics[0].partitions[0].base_offset), (int64_t)(1000)));
	cr_assert(m.has_node_endpoints);
	cr_assert(eq(i64, (int64_t)(m.nnode_endpoints), (int64_t)(2)));
	cr_assert_str_eq(m.node_endpoints[0].host, "broker-2.internal");
	cr_assert_str_eq(m.node_endpoints[0].rack, "rack-b");
	cr_assert_null(m.node_endpoints[1].rack);
	cr_assert(eq(i64, (int64_t)(m.node_endpoints[1].port), (int64_t)(9093)));
	cr_assert(eq(i64, (int64_t)(m.throttle_time_ms), (int64_t)(5)));
	cr_assert(eq(i64, (int64_t)(m.tags.count), (int64_t)(1)), "unknown top-level tag 9 kept");
	codec_produce_response_free(&m);
	golden_free(&g);
}

Test(codec, produce_partition_fail_patches_and_reencodes)
{
	for (int16_t v = 3; v <= 13; v++) {
		struct golden g;
		golden_load_v(&g, "produce_resp", false, CODEC_API_PRODUCE, v);
		struct codec_iov body = golden_body(&g);
		struct codec_produce_response m;
		cr_assert(eq(i64, (int64_t)(codec_produce_response_decode(&body, 1, v, &m)), (int64_t)(CODEC_OK)));
		cr_assert(eq(i64, (int64_t)(codec_produce_partition_fail(&m.topics[1].partitions[0], 190,
							  "mirror dc2 timed out")), (int64_t)(0)));
		struct codec_buf out;
		codec_buf_init(&out, 1 << 20);
		cr_assert(eq(i64, (int64_t)(codec_produce_response_encode(&m, v, &out)), (int64_t)(CODEC_OK)));
		codec_produce_response_free(&m);
		struct codec_iov again = {out.data, out.len};
		cr_assert(eq(i64, (int64_t)(codec_produce_response_decode(&again, 1, v, &m)), (int64_t)(CODEC_OK)));
		struct codec_produce_partition_resp *p = &m.topics[1].partitions[0];
		cr_assert(eq(i64, (int64_t)(p->error_code), (int64_t)(190)));
		cr_assert(eq(i64, (int64_t)(p->base_offset), (int64_t)(-1)));
		cr_assert(eq(i64, (int64_t)(p->log_append_time_ms), (int64_t)(-1)));
		if (v >= 5)
			cr_assert(eq(i64, (int64_t)(p->log_start_offset), (int64_t)(-1)));
		if (v >= 8)
			cr_assert_str_eq(p->error_message, "mirror dc2 timed out");
		cr_assert(eq(i64, (int64_t)(m.topics[0].partitions[0].base_offset), (int64_t)(1000)), "others untouched");
		codec_produce_response_free(&m);
		codec_buf_free(&out);
		golden_free(&g);
	}
}

Test(codec, produce_partition_fail_null_message_clears_it)
{
	struct codec_produce_partition_resp p = {0};
	cr_assert(eq(i64, (int64_t)(codec_produce_partition_fail(&p, 20, "x")), (int64_t)(0)));
	cr_assert_str_eq(p.error_message, "x");
	cr_assert(eq(i64, (int64_t)(codec_produce_partition_fail(&p, 20, NULL)), (int64_t)(0)));
	cr_assert_null(p.error_message);
}

Test(codec, produce_captured_frames_roundtrip)
{
	check_golden_in(&produce_req, "kcat", 7);
	check_golden_in(&produce_resp, "kcat", 7);
	check_golden_in(&produce_req, "java", 13);
	check_golden_in(&produce_resp, "java", 13);
}
