/* codec/api_versions.c: ApiVersions request/response v0–v5 and the v0-layout error reply. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"

CODEC_TEST_OPS(api_versions_req, "api_versions_req", CODEC_API_API_VERSIONS, true,
	       struct codec_api_versions_request, codec_api_versions_request);
CODEC_TEST_OPS(api_versions_resp, "api_versions_resp", CODEC_API_API_VERSIONS, false,
	       struct codec_api_versions_response, codec_api_versions_response);

Test(codec, api_versions_golden_roundtrip_v0_to_v5)
{
	for (int16_t v = 0; v <= CODEC_API_VERSIONS_MAX; v++) {
		check_golden(&api_versions_req, v);
		check_golden(&api_versions_resp, v);
	}
}

Test(codec, api_versions_response_fields_and_feature_tags_kept)
{
	struct golden g;
	golden_load(&g, "api_versions_resp_v3", false, CODEC_API_API_VERSIONS, 3);
	struct codec_iov body = golden_body(&g);
	struct codec_api_versions_response m;
	cr_assert(eq(i64, (int64_t)(codec_api_versions_response_decode(&body, 1, 3, &m)), (int64_t)(CODEC_OK)));
	cr_assert_not(m.v0_layout);
	cr_assert(eq(i64, (int64_t)(m.napi_keys), (int64_t)(4)));
	cr_assert(eq(i64, (int64_t)(m.api_keys[0].api_key), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(m.api_keys[0].max_version), (int64_t)(13)));
	cr_assert(eq(i64, (int64_t)(m.tags.count), (int64_t)(3)), "SupportedFeatures, FinalizedFeaturesEpoch, FinalizedFeatures");
	/* Advertise Produce v14 (v13 on the wire) and re-encode. */
	m.api_keys[0].max_version = CODEC_PRODUCE_V14;
	struct codec_buf out;
	codec_buf_init(&out, 1 << 20);
	cr_assert(eq(i64, (int64_t)(codec_api_versions_response_encode(&m, 3, &out)), (int64_t)(CODEC_OK)));
	cr_assert(eq(i64, (int64_t)(out.len), (int64_t)(body.len)));
	codec_api_versions_response_free(&m);
	struct codec_iov again = {out.data, out.len};
	cr_assert(eq(i64, (int64_t)(codec_api_versions_response_decode(&again, 1, 3, &m)), (int64_t)(CODEC_OK)));
	cr_assert(eq(i64, (int64_t)(m.api_keys[0].max_version), (int64_t)(14)));
	codec_api_versions_response_free(&m);
	codec_buf_free(&out);
	golden_free(&g);
}

Test(codec, api_versions_unsupported_version_reply_uses_v0_layout)
{
	struct golden g;
	/* The broker answers a v4 request it cannot parse in v0 layout, error 35. */
	golden_load(&g, "api_versions_err_resp_v0", false, CODEC_API_API_VERSIONS, 0);
	struct codec_iov body = golden_body(&g);
	for (int16_t v = 0; v <= CODEC_API_VERSIONS_MAX; v++) {
		struct codec_api_versions_response m;
		cr_assert(eq(i64, (int64_t)(codec_api_versions_response_decode(&body, 1, v, &m)), (int64_t)(CODEC_OK)), "v%d", v);
		cr_assert(m.v0_layout);
		cr_assert(eq(i64, (int64_t)(m.error_code), (int64_t)(CODEC_ERROR_UNSUPPORTED_VERSION)));
		cr_assert(eq(i64, (int64_t)(m.napi_keys), (int64_t)(1)));
		cr_assert(eq(i64, (int64_t)(m.api_keys[0].max_version), (int64_t)(4)));
		struct codec_buf out;
		codec_buf_init(&out, 1 << 20);
		cr_assert(eq(i64, (int64_t)(codec_api_versions_response_encode(&m, v, &out)), (int64_t)(CODEC_OK)));
		cr_assert(eq(i64, (int64_t)(out.len), (int64_t)(body.len)));
		cr_assert(memcmp(out.data, body.base, body.len) == 0);
		codec_buf_free(&out);
		codec_api_versions_response_free(&m);
	}
	golden_free(&g);
}

/* v5 (KIP-1242): the client names the cluster and node it means to reach;
 * the client software fields stay where v3/v4 have them. */
Test(codec, api_versions_v5_request_fields)
{
	struct golden g;
	golden_load(&g, "api_versions_req_v5", true, CODEC_API_API_VERSIONS, 5);
	struct codec_iov body = golden_body(&g);
	struct codec_api_versions_request m;
	cr_assert(eq(int, codec_api_versions_request_decode(&body, 1, 5, &m), CODEC_OK));
	cr_assert(eq(str, m.client_software_name, "golden"));
	cr_assert(eq(str, m.client_software_version, "1.0"));
	cr_assert(eq(str, m.cluster_id, "golden-cluster-id"));
	cr_assert(eq(i32, m.node_id, 3));
	codec_api_versions_request_free(&m);
	/* read as v4 it is not whole: the version decides the layout */
	cr_assert(ne(int, codec_api_versions_request_decode(&body, 1, 4, &m), CODEC_OK));
	codec_api_versions_request_free(&m);
	cr_assert(eq(int, codec_api_versions_request_decode(&body, 1, CODEC_API_VERSIONS_MAX + 1, &m),
		     CODEC_ERR_UNSUPPORTED), "a newer version is not guessed at");
	golden_free(&g);
}

/* The v5 response has the v4 layout: Produce v14 is advertised by the same rewrite. */
Test(codec, api_versions_v5_response_rewrite)
{
	struct golden g;
	golden_load(&g, "api_versions_resp_v5", false, CODEC_API_API_VERSIONS, 5);
	struct codec_iov body = golden_body(&g);
	struct codec_api_versions_response m;
	cr_assert(eq(int, codec_api_versions_response_decode(&body, 1, 5, &m), CODEC_OK));
	cr_assert_not(m.v0_layout);
	cr_assert(eq(sz, m.napi_keys, 4));
	cr_assert(eq(i16, m.api_keys[0].api_key, CODEC_API_PRODUCE));
	cr_assert(eq(i16, m.api_keys[0].max_version, 13));
	cr_assert(eq(i16, m.api_keys[3].api_key, CODEC_API_API_VERSIONS));
	cr_assert(eq(i16, m.api_keys[3].max_version, 5), "kafka-clients 4.4.0 serves ApiVersions v5");
	cr_assert(eq(sz, m.tags.count, 3), "SupportedFeatures, FinalizedFeaturesEpoch, FinalizedFeatures kept");
	m.api_keys[0].max_version = CODEC_PRODUCE_V14;
	struct codec_buf out;
	codec_buf_init(&out, 1 << 20);
	cr_assert(eq(int, codec_api_versions_response_encode(&m, 5, &out), CODEC_OK));
	cr_assert(eq(sz, out.len, body.len), "one int16 changed in place");
	codec_api_versions_response_free(&m);
	struct codec_iov again = {out.data, out.len};
	cr_assert(eq(int, codec_api_versions_response_decode(&again, 1, 5, &m), CODEC_OK));
	cr_assert(eq(i16, m.api_keys[0].max_version, CODEC_PRODUCE_V14));
	codec_api_versions_response_free(&m);
	codec_buf_free(&out);
	golden_free(&g);
}

Test(codec, api_versions_captured_frames_roundtrip)
{
	check_golden_in(&api_versions_req, "kcat", 3);
	check_golden_in(&api_versions_resp, "kcat", 3);
	check_golden_in(&api_versions_req, "java", 4);
	check_golden_in(&api_versions_resp, "java", 4);
}
