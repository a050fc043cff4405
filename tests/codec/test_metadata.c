/* codec/metadata.c: Metadata response v0–v13. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"

CODEC_TEST_OPS(metadata_resp, "metadata_resp", CODEC_API_METADATA, false,
	       struct codec_metadata_response, codec_metadata_response);

Test(codec, metadata_response_golden_roundtrip_v0_to_v13)
{
	for (int16_t v = 0; v <= 13; v++)
		check_golden(&metadata_resp, v);
}

Test(codec, metadata_response_fields)
{
	for (int16_t v = 0; v <= 13; v++) {
		struct golden g;
		golden_load_v(&g, "metadata_resp", false, CODEC_API_METADATA, v);
		struct codec_iov body = golden_body(&g);
		struct codec_metadata_response m;
		cr_assert(eq(i64, (int64_t)(codec_metadata_response_decode(&body, 1, v, &m)), (int64_t)(CODEC_OK)));
		cr_assert(eq(i64, (int64_t)(m.nbrokers), (int64_t)(3)));
		cr_assert_str_eq(m.brokers[1].host, "broker-2.internal");
		cr_assert(eq(i64, (int64_t)(m.brokers[1].port), (int64_t)(9092)));
		cr_assert(eq(i64, (int64_t)(m.ntopics), (int64_t)(2)));
		struct codec_metadata_partition *p = &m.topics[0].partitions[2];
		cr_assert(eq(i64, (int64_t)(p->partition_index), (int64_t)(2)));
		cr_assert(eq(i64, (int64_t)(p->replica_nodes.n), (int64_t)(3)));
		cr_assert(eq(i64, (int64_t)(p->isr_nodes.n), (int64_t)(2)));
		if (v >= 5)
			cr_assert(eq(i64, (int64_t)(p->offline_replicas.n), (int64_t)(1)));
		cr_assert(eq(i64, (int64_t)(p->leader_epoch), (int64_t)(v >= 7 ? 6 : -1)));
		if (v >= 10)
			cr_assert(eq(i64, (int64_t)(m.topics[0].topic_id[0]), (int64_t)(0x01)));
		codec_metadata_response_free(&m);

		struct codec_metadata_topics t;
		cr_assert(eq(i64, (int64_t)(codec_metadata_response_topics(&body, 1, v, &t)), (int64_t)(CODEC_OK)));
		cr_assert(eq(i64, (int64_t)(t.n), (int64_t)(2)));
		cr_assert_str_eq(t.v[1].name, "topic-1");
		cr_assert(eq(i64, (int64_t)(t.v[1].npartitions), (int64_t)(3)));
		codec_metadata_topics_free(&t);
		golden_free(&g);
	}
}

Test(codec, metadata_response_unsupported_version)
{
	struct codec_metadata_response m;
	struct codec_iov none = {NULL, 0};
	cr_assert(eq(i64, (int64_t)(codec_metadata_response_decode(&none, 1, 14, &m)), (int64_t)(CODEC_ERR_UNSUPPORTED)));
}

Test(codec, metadata_captured_frames_roundtrip)
{
	check_golden_in(&metadata_resp, "kcat", 4);
	check_golden_in(&metadata_resp, "java", 13);
}
