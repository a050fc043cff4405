/*
 * tests/codec/test_txn.c — codec/txn.c, syncgate's own requests about a
 * transaction (the commit gate, proxy/txn_hold.c): the DescribeTransactions
 * v0 and ListOffsets v6 request frames byte for byte as kafka-clients
 * encodes them (golden frames from tests/codec/GenGolden.java), and their
 * responses read field by field; every truncated response fails cleanly.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"

/* The golden frame `name`'s bytes equal `b`'s. */
static void assert_frame(const char *name, const struct codec_buf *b)
{
	uint8_t *want;
	char path[512];
	snprintf(path, sizeof(path), "%s/%s.hex", GOLDEN_DIR, name);
	size_t n = golden_read_hex(path, &want);
	cr_assert(eq(sz, b->len, n), "%s: %zu bytes, kafka-clients encodes %zu", name, b->len, n);
	cr_assert(eq(int, memcmp(b->data, want, n), 0), "%s differs from kafka-clients' frame", name);
	free(want);
}

Test(codec_txn, describe_transactions_request_is_kafkas_frame)
{
	struct codec_buf b;
	codec_buf_init(&b, 256);
	cr_assert(eq(int, codec_describe_transactions_request("golden-txn", 42, "golden-client", &b), 0));
	assert_frame("describe_transactions_req_v0", &b);
	codec_buf_free(&b);
	codec_buf_init(&b, 256);
	cr_assert(eq(int, codec_describe_transactions_request(NULL, 42, "golden-client", &b), -1));
	codec_buf_free(&b);
	codec_buf_init(&b, 8); /* a buffer too small: an error, not a short frame */
	cr_assert(eq(int, codec_describe_transactions_request("golden-txn", 42, "golden-client", &b), -1));
	codec_buf_free(&b);
}

Test(codec_txn, describe_transactions_response_names_state_producer_and_partitions)
{
	struct golden g;
	golden_load(&g, "describe_transactions_resp_v0", false, CODEC_API_DESCRIBE_TRANSACTIONS, 0);
	struct codec_iov body = golden_body(&g);
	struct codec_describe_transactions_response r;
	cr_assert(eq(int, codec_describe_transactions_response_decode(&body, 1, &r), CODEC_OK));
	cr_assert(eq(i32, r.throttle_time_ms, 5));
	cr_assert(eq(sz, r.nstates, 1));
	const struct codec_txn_state *s = &r.states[0];
	cr_assert(eq(i16, s->error_code, 0));
	cr_assert_str_eq(s->transactional_id, "golden-txn");
	cr_assert_str_eq(s->state, "PrepareCommit");
	cr_assert(eq(i32, s->timeout_ms, 60000));
	cr_assert(eq(i64, s->start_time_ms, 1700000000000LL));
	cr_assert(eq(i64, s->producer_id, 4242));
	cr_assert(eq(i16, s->producer_epoch, 7));
	cr_assert(eq(sz, s->ntopics, 2));
	cr_assert_str_eq(s->topics[0].name, "orders");
	cr_assert(eq(sz, s->topics[0].partitions.n, 2));
	cr_assert(eq(i32, s->topics[0].partitions.v[0], 0));
	cr_assert(eq(i32, s->topics[0].partitions.v[1], 3));
	cr_assert_str_eq(s->topics[1].name, "payments");
	cr_assert(eq(sz, s->topics[1].partitions.n, 1));
	cr_assert(eq(i32, s->topics[1].partitions.v[0], 1));
	codec_describe_transactions_response_free(&r);
	/* every truncated body fails, and what was read is freed */
	for (size_t n = 0; n < body.len; n++) {
		struct codec_iov cut = { body.base, n };
		cr_assert(ne(int, codec_describe_transactions_response_decode(&cut, 1, &r), CODEC_OK), "prefix %zu", n);
		codec_describe_transactions_response_free(&r);
	}
	golden_free(&g);
}

Test(codec_txn, list_offsets_latest_request_is_kafkas_frame)
{
	const struct codec_txn_partition parts[] = { { "orders", 0 }, { "orders", 3 }, { "payments", 1 } };
	struct codec_buf b;
	codec_buf_init(&b, 512);
	cr_assert(eq(int, codec_list_offsets_latest_request(parts, 3, 0, 48, "golden-client", &b), 0));
	assert_frame("txn_list_offsets_req_v6", &b);
	codec_buf_free(&b);
	codec_buf_init(&b, 512);
	cr_assert(eq(int, codec_list_offsets_latest_request(parts, 0, 0, 48, "golden-client", &b), -1));
	codec_buf_free(&b);
}

struct seen {
	char topic[16][16];
	int32_t partition[16];
	int16_t error[16];
	int64_t offset[16];
	int n;
};

static void collect(void *arg, const char *topic, int32_t partition, int16_t error, int64_t offset)
{
	struct seen *s = arg;
	if (s->n >= 16)
		return;
	snprintf(s->topic[s->n], sizeof(s->topic[0]), "%s", topic);
	s->partition[s->n] = partition;
	s->error[s->n] = error;
	s->offset[s->n++] = offset;
}

Test(codec_txn, list_offsets_response_partition_by_partition)
{
	struct golden g;
	golden_load(&g, "txn_list_offsets_resp_v6", false, CODEC_API_LIST_OFFSETS, 6);
	struct codec_iov body = golden_body(&g);
	struct seen s = { 0 };
	cr_assert(eq(int, codec_list_offsets_response_each(&body, 1, collect, &s), CODEC_OK));
	cr_assert(eq(int, s.n, 3));
	cr_assert_str_eq(s.topic[0], "orders");
	cr_assert(eq(i32, s.partition[0], 0));
	cr_assert(eq(i16, s.error[0], 0));
	cr_assert(eq(i64, s.offset[0], 5000));
	cr_assert(eq(i32, s.partition[1], 3));
	cr_assert(eq(i16, s.error[1], CODEC_ERROR_NOT_LEADER_OR_FOLLOWER));
	cr_assert_str_eq(s.topic[2], "payments");
	cr_assert(eq(i32, s.partition[2], 1));
	cr_assert(eq(i64, s.offset[2], 17));
	for (size_t n = 0; n < body.len; n++) {
		struct codec_iov cut = { body.base, n };
		struct seen t = { 0 };
		cr_assert(ne(int, codec_list_offsets_response_each(&cut, 1, collect, &t), CODEC_OK), "prefix %zu", n);
	}
	golden_free(&g);
}
