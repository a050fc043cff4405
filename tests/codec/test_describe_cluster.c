/* codec/describe_cluster.c: DescribeCluster response v0–v2. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>

#include "golden.h"

CODEC_TEST_OPS(describe_cluster_resp, "describe_cluster_resp", CODEC_API_DESCRIBE_CLUSTER, false,
	       struct codec_describe_cluster_response, codec_describe_cluster_response);

Test(codec, describe_cluster_response_golden_roundtrip_v0_to_v2)
{
	for (int16_t v = 0; v <= 2; v++)
		check_golden(&describe_cluster_resp, v);
}

Test(codec, describe_cluster_response_fields)
{
	struct golden g;
	struct codec_describe_cluster_response m;
	golden_load(&g, "describe_cluster_resp_v2", false, CODEC_API_DESCRIBE_CLUSTER, 2);
	struct codec_iov body = golden_body(&g);
	cr_assert(eq(i64, (int64_t)(codec_describe_cluster_response_decode(&body, 1, 2, &m)), (int64_t)(CODEC_OK)));
	cr_assert_str_eq(m.cluster_id, "golden-cluster-id");
	cr_assert(eq(i64, (int64_t)(m.nbrokers), (int64_t)(2)));
	cr_assert(m.brokers[1].is_fenced);
	cr_assert_null(m.brokers[1].rack);
	cr_assert(eq(i64, (int64_t)(m.endpoint_type), (int64_t)(1)));
	codec_describe_cluster_response_free(&m);
	golden_free(&g);
}

Test(codec, describe_cluster_captured_frames_roundtrip)
{
	check_golden_in(&describe_cluster_resp, "java", 2);
}
