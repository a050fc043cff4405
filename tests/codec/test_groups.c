/*
 * tests/codec/test_groups.c — codec/groups.c: OffsetCommit v2–v10 as
 * kafka-clients 4.3.1 encodes them (golden frames, GenGolden.java): the
 * request's group, offsets, leader epochs and metadata (null kept null),
 * topics by name (v2–v9) and by TopicId (v10); the response's error codes
 * and where each lies, so that a new code written in place is what a
 * decoder reads and no other byte changes; versions outside v2–v10 and
 * truncated frames refused. TxnOffsetCommit v0–v6: the transaction, the
 * group and its offsets (leader epochs from v2, the member from v3, topics
 * by TopicId from v6).
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"

static const uint8_t topic_id[16] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
				     0x0f, 0xed, 0xcb, 0xa9, 0x87, 0x65, 0x43, 0x21};

Test(codec_groups, offset_commit_request_v2_to_v10_as_kafka_encodes_it)
{
	for (int16_t v = 2; v <= 10; v++) {
		struct golden g;
		golden_load_v(&g, "offset_commit_req", true, CODEC_API_OFFSET_COMMIT, v);
		struct codec_iov body = golden_body(&g);
		struct codec_offset_commit_request m;
		cr_assert(eq(int, codec_offset_commit_request_decode(&body, 1, v, &m), CODEC_OK), "v%d", v);
		cr_assert_str_eq(m.group_id, "golden-group");
		cr_assert(eq(i32, m.generation, 9));
		cr_assert_str_eq(m.member_id, "member-1");
		if (v >= 7)
			cr_assert_str_eq(m.group_instance_id, "instance-1");
		else
			cr_assert_null(m.group_instance_id);
		cr_assert(eq(sz, m.ntopics, 1));
		const struct codec_offset_commit_topic *t = &m.topics[0];
		if (v >= 10) {
			cr_assert_null(t->name);
			cr_assert(eq(int, memcmp(t->topic_id, topic_id, 16), 0));
		} else {
			cr_assert_str_eq(t->name, "orders");
		}
		cr_assert(eq(sz, t->npartitions, 2));
		cr_assert(eq(i32, t->partitions[0].index, 0));
		cr_assert(eq(i64, t->partitions[0].offset, 1234));
		cr_assert(eq(i32, t->partitions[0].leader_epoch, v >= 6 ? 5 : -1));
		cr_assert_str_eq(t->partitions[0].metadata, "golden-meta");
		cr_assert(eq(i32, t->partitions[1].index, 3));
		cr_assert(eq(i64, t->partitions[1].offset, 77));
		cr_assert_null(t->partitions[1].metadata, "a null CommittedMetadata stays null (v%d)", v);
		codec_offset_commit_request_free(&m);
		/* one byte short: refused, never half read */
		body.len--;
		cr_assert(ne(int, codec_offset_commit_request_decode(&body, 1, v, &m), CODEC_OK), "v%d truncated", v);
		codec_offset_commit_request_free(&m);
		golden_free(&g);
	}
}

Test(codec_groups, offset_commit_response_error_codes_are_rewritten_in_place)
{
	for (int16_t v = 2; v <= 10; v++) {
		struct golden g;
		golden_load_v(&g, "offset_commit_resp", false, CODEC_API_OFFSET_COMMIT, v);
		struct codec_iov body = golden_body(&g);
		struct codec_offset_commit_response m;
		cr_assert(eq(int, codec_offset_commit_response_decode(&body, 1, v, &m), CODEC_OK), "v%d", v);
		cr_assert(eq(i32, m.throttle_time_ms, v >= 3 ? 5 : 0));
		cr_assert(eq(sz, m.ntopics, 1));
		cr_assert(eq(sz, m.topics[0].npartitions, 2));
		if (v >= 10)
			cr_assert(eq(int, memcmp(m.topics[0].topic_id, topic_id, 16), 0));
		else
			cr_assert_str_eq(m.topics[0].name, "orders");
		cr_assert(eq(i16, m.topics[0].partitions[0].error_code, 0));
		cr_assert(eq(i16, m.topics[0].partitions[1].error_code, 25));
		size_t at = m.topics[0].partitions[0].error_at;
		codec_offset_commit_response_free(&m);

		uint8_t *copy = malloc(body.len);
		memcpy(copy, body.base, body.len);
		cr_assert(eq(int, codec_put_i16_at(copy, body.len, at, CODEC_ERROR_COORDINATOR_LOAD_IN_PROGRESS), 0));
		size_t changed = 0;
		for (size_t i = 0; i < body.len; i++)
			changed += copy[i] != body.base[i];
		cr_assert(eq(sz, changed, 1), "only the low byte of one ErrorCode changes (0 -> 14), v%d", v);
		struct codec_iov patched = {copy, body.len};
		cr_assert(eq(int, codec_offset_commit_response_decode(&patched, 1, v, &m), CODEC_OK));
		cr_assert(eq(i16, m.topics[0].partitions[0].error_code, CODEC_ERROR_COORDINATOR_LOAD_IN_PROGRESS));
		cr_assert(eq(i16, m.topics[0].partitions[1].error_code, 25));
		codec_offset_commit_response_free(&m);
		cr_assert(eq(int, codec_put_i16_at(copy, body.len, body.len - 1, 1), -1), "past the end: refused");
		free(copy);
		golden_free(&g);
	}
}

Test(codec_groups, versions_outside_what_kafka_serves_are_refused)
{
	struct golden g;
	golden_load_v(&g, "offset_commit_req", true, CODEC_API_OFFSET_COMMIT, 9);
	struct codec_iov body = golden_body(&g);
	struct codec_offset_commit_request m;
	cr_assert(eq(int, codec_offset_commit_request_decode(&body, 1, 1, &m), CODEC_ERR_UNSUPPORTED));
	codec_offset_commit_request_free(&m);
	cr_assert(eq(int, codec_offset_commit_request_decode(&body, 1, 11, &m), CODEC_ERR_UNSUPPORTED));
	codec_offset_commit_request_free(&m);
	golden_free(&g);
}

Test(codec_groups, txn_offset_commit_request_v0_to_v6_as_kafka_encodes_it)
{
	for (int16_t v = 0; v <= 6; v++) {
		struct golden g;
		golden_load_v(&g, "txn_offset_commit_req", true, CODEC_API_TXN_OFFSET_COMMIT, v);
		struct codec_iov body = golden_body(&g);
		struct codec_txn_offset_commit_request m;
		cr_assert(eq(int, codec_txn_offset_commit_request_decode(&body, 1, v, &m), CODEC_OK), "v%d", v);
		cr_assert_str_eq(m.transactional_id, "golden-txn");
		cr_assert_str_eq(m.group_id, "golden-group");
		cr_assert(eq(i64, m.producer_id, 4242));
		cr_assert(eq(i16, m.producer_epoch, 7));
		cr_assert(eq(i32, m.generation, v >= 3 ? 9 : -1));
		if (v >= 3) {
			cr_assert_str_eq(m.member_id, "member-1");
			cr_assert_str_eq(m.group_instance_id, "instance-1");
		} else {
			cr_assert_null(m.member_id);
			cr_assert_null(m.group_instance_id);
		}
		cr_assert(eq(sz, m.ntopics, 1));
		const struct codec_offset_commit_topic *t = &m.topics[0];
		if (v >= 6) {
			cr_assert_null(t->name);
			cr_assert(eq(int, memcmp(t->topic_id, topic_id, 16), 0));
		} else {
			cr_assert_str_eq(t->name, "orders");
		}
		cr_assert(eq(sz, t->npartitions, 2));
		cr_assert(eq(i32, t->partitions[0].index, 0));
		cr_assert(eq(i64, t->partitions[0].offset, 1234));
		cr_assert(eq(i32, t->partitions[0].leader_epoch, v >= 2 ? 5 : -1));
		cr_assert_str_eq(t->partitions[0].metadata, "golden-meta");
		cr_assert(eq(i32, t->partitions[1].index, 3));
		cr_assert(eq(i64, t->partitions[1].offset, 77));
		cr_assert_null(t->partitions[1].metadata, "a null CommittedMetadata stays null (v%d)", v);
		codec_txn_offset_commit_request_free(&m);
		body.len--;
		cr_assert(ne(int, codec_txn_offset_commit_request_decode(&body, 1, v, &m), CODEC_OK), "v%d truncated", v);
		codec_txn_offset_commit_request_free(&m);
		golden_free(&g);
	}
	struct codec_iov none = { NULL, 0 };
	struct codec_txn_offset_commit_request m;
	cr_assert(eq(int, codec_txn_offset_commit_request_decode(&none, 1, 7, &m), CODEC_ERR_UNSUPPORTED),
		  "a version above v6 is not read");
	codec_txn_offset_commit_request_free(&m);
}
