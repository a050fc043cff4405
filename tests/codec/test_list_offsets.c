/* codec/list_offsets.c: ListOffsets request and response v1–v11. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>

#include "golden.h"

CODEC_TEST_OPS(list_offsets_req, "list_offsets_req", CODEC_API_LIST_OFFSETS, true,
	       struct codec_list_offsets_request, codec_list_offsets_request);
CODEC_TEST_OPS(list_offsets_resp, "list_offsets_resp", CODEC_API_LIST_OFFSETS, false,
	       struct codec_list_offsets_response, codec_list_offsets_response);

Test(codec, list_offsets_golden_roundtrip_v1_to_v11)
{
	for (int16_t v = 1; v <= 11; v++) {
		check_golden(&list_offsets_req, v);
		check_golden(&list_offsets_resp, v);
	}
}

Test(codec, list_offsets_fields)
{
	struct golden g;
	golden_load(&g, "list_offsets_req_v10", true, CODEC_API_LIST_OFFSETS, 10);
	struct codec_iov body = golden_body(&g);
	struct codec_list_offsets_request q;
	cr_assert(eq(i64, (int64_t)(codec_list_offsets_request_decode(&body, 1, 10, &q)), (int64_t)(CODEC_OK)));
	cr_assert(eq(i64, (int64_t)(q.replica_id), (int64_t)(-1)));
	cr_assert(eq(i64, (int64_t)(q.isolation_level), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(q.timeout_ms), (int64_t)(15000)));
	cr_assert(eq(i64, (int64_t)(q.topics[0].npartitions), (int64_t)(2)));
	cr_assert(eq(i64, (int64_t)(q.topics[0].partitions[0].current_leader_epoch), (int64_t)(5)));
	cr_assert(eq(i64, (int64_t)(q.topics[0].partitions[1].timestamp), (int64_t)(-2)));
	codec_list_offsets_request_free(&q);
	golden_free(&g);

	golden_load(&g, "list_offsets_resp_v4", false, CODEC_API_LIST_OFFSETS, 4);
	body = golden_body(&g);
	struct codec_list_offsets_response r;
	cr_assert(eq(i64, (int64_t)(codec_list_offsets_response_decode(&body, 1, 4, &r)), (int64_t)(CODEC_OK)));
	cr_assert_str_eq(r.topics[0].name, "topic-0");
	cr_assert(eq(i64, (int64_t)(r.topics[0].partitions[0].offset), (int64_t)(5000)));
	cr_assert(eq(i64, (int64_t)(r.topics[0].partitions[0].leader_epoch), (int64_t)(5)));
	codec_list_offsets_response_free(&r);
	golden_free(&g);
}

Test(codec, list_offsets_captured_frames_roundtrip)
{
	check_golden_in(&list_offsets_req, "kcat", 2);
	check_golden_in(&list_offsets_resp, "kcat", 2);
	check_golden_in(&list_offsets_req, "java", 11);
	check_golden_in(&list_offsets_resp, "java", 11);
}
