/*
 * tests/codec/test_init_producer_id.c — codec/init_producer_id.c (and
 * codec/end_txn.c, the other message that issues producer ids): the
 * InitProducerId request frame a sidecar sends (byte for byte as the spec
 * lays it out, classic and flexible), the client's request read for its
 * TransactionalId, and the response read for the issued ProducerId and
 * ProducerEpoch (errors and leftovers refused).
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"

CODEC_TEST_OPS(ipid_req, "init_producer_id_req", CODEC_API_INIT_PRODUCER_ID, true,
	       struct codec_init_producer_id_request, codec_init_producer_id_request);
CODEC_TEST_OPS(ipid_resp, "init_producer_id_resp", CODEC_API_INIT_PRODUCER_ID, false,
	       struct codec_init_producer_id_response, codec_init_producer_id_response);

Test(codec_init_producer_id, golden_roundtrip_v0_to_v5_as_kafka_encodes_them)
{
	for (int16_t v = 0; v <= 5; v++) {
		check_golden(&ipid_req, v);
		check_golden(&ipid_resp, v);
	}
	struct golden g;
	golden_load(&g, "init_producer_id_resp_v4", false, CODEC_API_INIT_PRODUCER_ID, 4);
	struct codec_iov body = golden_body(&g);
	struct codec_init_producer_id_response m;
	cr_assert(eq(int, codec_init_producer_id_response_decode(&body, 1, 4, &m), CODEC_OK));
	cr_assert(eq(i32, m.throttle_time_ms, 5));
	cr_assert(eq(i64, m.producer_id, 1000001));
	cr_assert(eq(i16, m.producer_epoch, 3));
	codec_init_producer_id_response_free(&m);
	golden_free(&g);
	golden_load(&g, "init_producer_id_req_v3", true, CODEC_API_INIT_PRODUCER_ID, 3);
	body = golden_body(&g);
	struct codec_init_producer_id_request q;
	cr_assert(eq(int, codec_init_producer_id_request_decode(&body, 1, 3, &q), CODEC_OK));
	cr_assert_str_eq(q.transactional_id, "golden-txn");
	cr_assert(eq(i64, q.producer_id, 4242));
	cr_assert(eq(i16, q.producer_epoch, 7));
	codec_init_producer_id_request_free(&q);
	golden_free(&g);
}

Test(codec_init_producer_id, the_frame_a_sidecar_sends_is_what_the_java_producer_sends)
{
	/* captured from kafka-console-producer (idempotent) and its broker */
	check_golden_in(&ipid_req, "java", 5);
	check_golden_in(&ipid_resp, "java", 5);
	uint8_t *want;
	char path[512];
	snprintf(path, sizeof(path), "%s/java/init_producer_id_req_v5.hex", GOLDEN_DIR);
	size_t n = golden_read_hex(path, &want);
	struct codec_buf b;
	codec_buf_init(&b, 1024);
	cr_assert(eq(int, codec_init_producer_id_request_frame(5, 2, "console-producer", NULL, INT32_MAX, &b), 0));
	cr_assert(eq(sz, b.len, n));
	cr_assert_not(memcmp(b.data, want, n), "byte for byte the Java client's own request");
	codec_buf_free(&b);
	free(want);
}

static void expect_bytes(const struct codec_buf *b, const uint8_t *want, size_t n)
{
	cr_assert(eq(int, b->err, CODEC_OK));
	cr_assert(eq(sz, b->len, n), "length %zu, want %zu", b->len, n);
	for (size_t i = 0; i < n; i++)
		cr_assert(eq(u8, b->data[i], want[i]), "byte %zu", i);
}

Test(codec_init_producer_id, request_frame_v1_classic_null_transactional_id)
{
	static const uint8_t want[] = {
		0, 0, 0, 24,                      /* size */
		0, 22, 0, 1, 0, 0, 0, 7,          /* InitProducerId v1, CorrelationId 7 */
		0, 8, 's', 'y', 'n', 'c', 'g', 'a', 't', 'e', /* ClientId */
		0xff, 0xff,                       /* TransactionalId null (int16 -1) */
		0, 0, 0xea, 0x60,                 /* TransactionTimeoutMs 60000 */
	};
	struct codec_buf b;
	codec_buf_init(&b, 1024);
	cr_assert(eq(int, codec_init_producer_id_request_frame(1, 7, "syncgate", NULL, 60000, &b), 0));
	expect_bytes(&b, want, sizeof(want));
	codec_buf_free(&b);
}

Test(codec_init_producer_id, request_frame_v2_flexible_without_producer_fields)
{
	static const uint8_t want[] = {
		0, 0, 0, 25,
		0, 22, 0, 2, 0xff, 0xff, 0xff, 0xff, /* v2, CorrelationId -1 */
		0, 8, 's', 'y', 'n', 'c', 'g', 'a', 't', 'e', /* ClientId: int16 string in header v2 too */
		0,                                /* header tags */
		0,                                /* TransactionalId null (compact) */
		0, 0, 0xea, 0x60,
		0,                                /* tags */
	};
	struct codec_buf b;
	codec_buf_init(&b, 1024);
	cr_assert(eq(int, codec_init_producer_id_request_frame(2, -1, "syncgate", NULL, 60000, &b), 0));
	expect_bytes(&b, want, sizeof(want));
	codec_buf_free(&b);
}

Test(codec_init_producer_id, request_frame_v5_asks_for_a_new_id)
{
	static const uint8_t want[] = {
		0, 0, 0, 35,
		0, 22, 0, 5, 0xff, 0xff, 0xff, 0xff,
		0, 8, 's', 'y', 'n', 'c', 'g', 'a', 't', 'e',
		0,
		0,
		0, 0, 0xea, 0x60,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, /* ProducerId -1 */
		0xff, 0xff,                       /* ProducerEpoch -1 */
		0,
	};
	struct codec_buf b;
	codec_buf_init(&b, 1024);
	cr_assert(eq(int, codec_init_producer_id_request_frame(5, -1, "syncgate", NULL, 60000, &b), 0));
	expect_bytes(&b, want, sizeof(want));
	/* and the body reads back as what it asks */
	struct codec_iov body = { b.data + 4 + 19, b.len - 4 - 19 };
	struct codec_init_producer_id_request m;
	cr_assert(eq(int, codec_init_producer_id_request_decode(&body, 1, 5, &m), CODEC_OK));
	cr_assert_null(m.transactional_id);
	cr_assert(eq(i32, m.transaction_timeout_ms, 60000));
	cr_assert(eq(i64, m.producer_id, -1));
	cr_assert(eq(i16, m.producer_epoch, -1));
	codec_init_producer_id_request_free(&m);
	codec_buf_free(&b);
}

Test(codec_init_producer_id, request_frame_with_a_transactional_id_reads_back)
{
	struct codec_buf b;
	codec_buf_init(&b, 1024);
	cr_assert(eq(int, codec_init_producer_id_request_frame(5, 3, "syncgate", "orders-tx", 60000, &b), 0));
	uint32_t len = (uint32_t)b.data[0] << 24 | (uint32_t)b.data[1] << 16 | (uint32_t)b.data[2] << 8 | b.data[3];
	cr_assert(eq(u32, len, (uint32_t)b.len - 4));
	struct codec_iov body = { b.data + 4 + 19, b.len - 4 - 19 };
	struct codec_init_producer_id_request m;
	cr_assert(eq(int, codec_init_producer_id_request_decode(&body, 1, 5, &m), CODEC_OK));
	cr_assert_str_eq(m.transactional_id, "orders-tx");
	cr_assert(eq(i32, m.transaction_timeout_ms, 60000));
	cr_assert(eq(i64, m.producer_id, -1));
	cr_assert(eq(i16, m.producer_epoch, -1));
	codec_init_producer_id_request_free(&m);
	codec_buf_free(&b);
}

Test(codec_init_producer_id, request_frame_refuses_versions_outside_v0_v5)
{
	struct codec_buf b;
	codec_buf_init(&b, 1024);
	cr_assert(eq(int, codec_init_producer_id_request_frame(6, -1, "syncgate", NULL, 60000, &b), -1));
	cr_assert(eq(int, codec_init_producer_id_request_frame(-1, -1, "syncgate", NULL, 60000, &b), -1));
	codec_buf_free(&b);
}

Test(codec_init_producer_id, client_request_names_its_transactional_id)
{
	/* v4 body: TransactionalId "tx-1" (compact), timeout, ProducerId 42, epoch 3, tags */
	static const uint8_t v4[] = { 5, 't', 'x', '-', '1', 0, 0, 0x27, 0x10, 0, 0, 0, 0, 0, 0, 0, 42, 0, 3, 0 };
	struct codec_iov iov[2] = { { v4, 7 }, { v4 + 7, sizeof(v4) - 7 } }; /* cut inside the timeout */
	struct codec_init_producer_id_request m;
	cr_assert(eq(int, codec_init_producer_id_request_decode(iov, 2, 4, &m), CODEC_OK));
	cr_assert_str_eq(m.transactional_id, "tx-1");
	cr_assert(eq(i32, m.transaction_timeout_ms, 10000));
	cr_assert(eq(i64, m.producer_id, 42));
	cr_assert(eq(i16, m.producer_epoch, 3));
	struct codec_buf b;
	codec_buf_init(&b, 1024);
	cr_assert(eq(int, codec_init_producer_id_request_encode(&m, 4, &b), CODEC_OK));
	expect_bytes(&b, v4, sizeof(v4));
	codec_buf_free(&b);
	codec_init_producer_id_request_free(&m);
	/* v0: classic string, no producer fields */
	static const uint8_t v0[] = { 0, 2, 't', 'x', 0, 0, 0x27, 0x10 };
	struct codec_iov one = { v0, sizeof(v0) };
	cr_assert(eq(int, codec_init_producer_id_request_decode(&one, 1, 0, &m), CODEC_OK));
	cr_assert_str_eq(m.transactional_id, "tx");
	cr_assert(eq(i64, m.producer_id, -1));
	codec_init_producer_id_request_free(&m);
	cr_assert(eq(int, codec_init_producer_id_request_decode(&one, 1, 6, &m), CODEC_ERR_UNSUPPORTED));
	codec_init_producer_id_request_free(&m);
}

Test(codec_init_producer_id, response_gives_the_issued_id_in_every_version)
{
	/* ThrottleTimeMs 0, ErrorCode 0, ProducerId 1001, ProducerEpoch 0 (+ tags from v2) */
	static const uint8_t body[] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x03, 0xe9, 0, 0, 0 };
	for (int16_t v = 0; v <= 5; v++) {
		size_t n = v >= 2 ? sizeof(body) : sizeof(body) - 1;
		struct codec_iov iov = { body, n };
		struct codec_init_producer_id_response m;
		cr_assert(eq(int, codec_init_producer_id_response_decode(&iov, 1, v, &m), CODEC_OK), "v%d", v);
		cr_assert(eq(i16, m.error_code, 0));
		cr_assert(eq(i64, m.producer_id, 1001), "v%d", v);
		cr_assert(eq(i16, m.producer_epoch, 0));
		struct codec_buf b;
		codec_buf_init(&b, 1024);
		cr_assert(eq(int, codec_init_producer_id_response_encode(&m, v, &b), CODEC_OK));
		expect_bytes(&b, body, n);
		codec_buf_free(&b);
		codec_init_producer_id_response_free(&m);
	}
}

Test(codec_init_producer_id, response_error_truncation_and_leftovers)
{
	/* ErrorCode 15 COORDINATOR_NOT_AVAILABLE, ProducerId -1, epoch -1 */
	static const uint8_t err[] = { 0, 0, 0, 5, 0, 15, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
				       0 };
	struct codec_init_producer_id_response m;
	struct codec_iov iov = { err, sizeof(err) };
	cr_assert(eq(int, codec_init_producer_id_response_decode(&iov, 1, 4, &m), CODEC_OK));
	cr_assert(eq(i32, m.throttle_time_ms, 5));
	cr_assert(eq(i16, m.error_code, 15));
	cr_assert(eq(i64, m.producer_id, -1));
	codec_init_producer_id_response_free(&m);
	struct codec_iov cut = { err, 10 };
	cr_assert(eq(int, codec_init_producer_id_response_decode(&cut, 1, 4, &m), CODEC_ERR_UNDERFLOW));
	codec_init_producer_id_response_free(&m);
	cr_assert(eq(int, codec_init_producer_id_response_decode(&iov, 1, 1, &m), CODEC_ERR_BAD_MSG),
		  "a classic v1 body has no tags: a byte left over");
	codec_init_producer_id_response_free(&m);
	cr_assert(eq(int, codec_init_producer_id_response_decode(&iov, 1, 6, &m), CODEC_ERR_UNSUPPORTED));
	codec_init_producer_id_response_free(&m);
}

CODEC_TEST_OPS(end_txn_req, "end_txn_req", CODEC_API_END_TXN, true, struct codec_end_txn_request,
	       codec_end_txn_request);
CODEC_TEST_OPS(end_txn_resp, "end_txn_resp", CODEC_API_END_TXN, false, struct codec_end_txn_response,
	       codec_end_txn_response);

Test(codec_end_txn, golden_roundtrip_v0_to_v5_and_the_new_producer_id_from_v5)
{
	for (int16_t v = 0; v <= 5; v++) {
		check_golden(&end_txn_req, v);
		check_golden(&end_txn_resp, v);
	}
	struct golden g;
	golden_load(&g, "end_txn_resp_v5", false, CODEC_API_END_TXN, 5);
	struct codec_iov body = golden_body(&g);
	struct codec_end_txn_response m;
	cr_assert(eq(int, codec_end_txn_response_decode(&body, 1, 5, &m), CODEC_OK));
	cr_assert(eq(i16, m.error_code, 0));
	cr_assert(eq(i64, m.producer_id, 1000002));
	cr_assert(eq(i16, m.producer_epoch, 0));
	codec_end_txn_response_free(&m);
	golden_free(&g);
	golden_load(&g, "end_txn_resp_v4", false, CODEC_API_END_TXN, 4);
	body = golden_body(&g);
	cr_assert(eq(int, codec_end_txn_response_decode(&body, 1, 4, &m), CODEC_OK));
	cr_assert(eq(i64, m.producer_id, -1), "none before v5");
	codec_end_txn_response_free(&m);
	golden_free(&g);
	golden_load(&g, "end_txn_req_v3", true, CODEC_API_END_TXN, 3);
	body = golden_body(&g);
	struct codec_end_txn_request q;
	cr_assert(eq(int, codec_end_txn_request_decode(&body, 1, 3, &q), CODEC_OK));
	cr_assert_str_eq(q.transactional_id, "golden-txn");
	cr_assert(eq(i64, q.producer_id, 4242));
	cr_assert(q.committed);
	codec_end_txn_request_free(&q);
	golden_free(&g);
}
