/* codec/find_coordinator.c: FindCoordinator response v0–v6. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>

#include "golden.h"

CODEC_TEST_OPS(find_coordinator_resp, "find_coordinator_resp", CODEC_API_FIND_COORDINATOR, false,
	       struct codec_find_coordinator_response, codec_find_coordinator_response);

Test(codec, find_coordinator_response_golden_roundtrip_v0_to_v6)
{
	for (int16_t v = 0; v <= 6; v++)
		check_golden(&find_coordinator_resp, v);
}

Test(codec, find_coordinator_response_single_and_batched_forms)
{
	struct golden g;
	struct codec_find_coordinator_response m;
	golden_load(&g, "find_coordinator_resp_v3", false, CODEC_API_FIND_COORDINATOR, 3);
	struct codec_iov body = golden_body(&g);
	cr_assert(eq(i64, (int64_t)(codec_find_coordinator_response_decode(&body, 1, 3, &m)), (int64_t)(CODEC_OK)));
	cr_assert_str_eq(m.host, "broker-2.internal");
	cr_assert(eq(i64, (int64_t)(m.node_id), (int64_t)(2)));
	cr_assert(eq(i64, (int64_t)(m.ncoordinators), (int64_t)(0)));
	codec_find_coordinator_response_free(&m);
	golden_free(&g);

	golden_load(&g, "find_coordinator_resp_v4", false, CODEC_API_FIND_COORDINATOR, 4);
	body = golden_body(&g);
	cr_assert(eq(i64, (int64_t)(codec_find_coordinator_response_decode(&body, 1, 4, &m)), (int64_t)(CODEC_OK)));
	cr_assert_null(m.host);
	cr_assert(eq(i64, (int64_t)(m.ncoordinators), (int64_t)(2)));
	cr_assert_str_eq(m.coordinators[0].key, "group-a");
	cr_assert_str_eq(m.coordinators[1].error_message, "coordinator not available");
	codec_find_coordinator_response_free(&m);
	golden_free(&g);
}

Test(codec, find_coordinator_captured_frames_roundtrip)
{
	check_golden_in(&find_coordinator_resp, "java", 6);
}
