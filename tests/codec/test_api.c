/* codec/api.c: the API table and header versions. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/codec/oracle/oracle.h"

Test(codec, api_table_is_dense_and_complete)
{
	for (int16_t k = 0; k <= CODEC_API_KEY_MAX; k++) {
		const struct codec_api *a = codec_api_get(k);
		cr_assert_not_null(a, "key %d", k);
		cr_assert(eq(i64, (int64_t)(a->key), (int64_t)(k)));
		cr_assert_not_null(a->name);
	}
	cr_assert_null(codec_api_get(CODEC_API_KEY_MAX + 1));
	cr_assert_null(codec_api_get(-1));
	cr_assert_str_eq(codec_api_name(1000), "Unknown");
	cr_assert_str_eq(codec_api_name(CODEC_API_SHARE_ACKNOWLEDGE), "ShareAcknowledge");
}

Test(codec, api_table_kafka_44_versions)
{
	const struct codec_api *p = codec_api_get(CODEC_API_PRODUCE);
	cr_assert(eq(i64, (int64_t)(p->min_version), (int64_t)(3)));
	cr_assert(eq(i64, (int64_t)(p->max_version), (int64_t)(13)));
	cr_assert(eq(i64, (int64_t)(p->flexible_from), (int64_t)(9)));
	cr_assert(eq(i64, (int64_t)(p->decode_max), (int64_t)(CODEC_PRODUCE_V14)));
	const struct codec_api *f = codec_api_get(CODEC_API_FETCH);
	cr_assert(eq(i64, (int64_t)(f->min_version), (int64_t)(4)));
	cr_assert(eq(i64, (int64_t)(f->max_version), (int64_t)(18)));
	cr_assert(eq(i64, (int64_t)(codec_api_get(CODEC_API_METADATA)->max_version), (int64_t)(13)));
	cr_assert(eq(i64, (int64_t)(codec_api_get(CODEC_API_LIST_OFFSETS)->min_version), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(codec_api_get(4)->max_version), (int64_t)(-1)), "LeaderAndIsr is gone in 4.x");
	cr_assert(eq(i64, (int64_t)(codec_api_get(CODEC_API_SASL_HANDSHAKE)->flexible_from), (int64_t)(-1)));
	cr_assert(eq(i64, (int64_t)(codec_api_get(CODEC_API_SASL_HANDSHAKE)->decode_max), (int64_t)(1)));
	const struct codec_api *av = codec_api_get(CODEC_API_API_VERSIONS);
	cr_assert(eq(i64, (int64_t)(av->max_version), (int64_t)(5)), "ApiVersions v5 (KIP-1242)");
	cr_assert(eq(i64, (int64_t)(av->decode_max), (int64_t)(5)));
	cr_assert(eq(i64, (int64_t)(codec_api_get(CODEC_API_TXN_OFFSET_COMMIT)->max_version), (int64_t)(6)));
	cr_assert_str_eq(codec_api_name(94), "UnregisterController");
}

/* Every API whose handling depends on reading it decodes every version the
 * newest Kafka serves; above decode_max, proxy/versions.c reports it. */
Test(codec, api_table_rows_syncgate_reads_decode_every_served_version)
{
	int judged = 0;
	for (int16_t k = 0; k <= CODEC_API_KEY_MAX; k++) {
		const struct codec_api *a = codec_api_get(k);
		if (!a->does && a->endpoints_from < 0)
			continue;
		judged++;
		cr_assert(ge(i64, (int64_t)a->decode_max, (int64_t)a->max_version), "%s", a->name);
		cr_assert(le(i64, (int64_t)a->decode_max, (int64_t)a->max_version + 1), "%s: at most Produce's v14",
			  a->name);
	}
	cr_assert(gt(int, judged, 0));
	cr_assert(ge(i64, (int64_t)codec_api_get(CODEC_API_API_VERSIONS)->decode_max, 5), "ApiVersions v5 is read");
}

Test(codec, api_header_versions)
{
	cr_assert(eq(i64, (int64_t)(codec_request_header_version(CODEC_API_PRODUCE, 8)), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(codec_request_header_version(CODEC_API_PRODUCE, 9)), (int64_t)(2)));
	cr_assert(eq(i64, (int64_t)(codec_response_header_version(CODEC_API_PRODUCE, 9)), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(codec_response_header_version(CODEC_API_FETCH, 11)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(codec_request_header_version(CODEC_API_API_VERSIONS, 3)), (int64_t)(2)));
	cr_assert(eq(i64, (int64_t)(codec_response_header_version(CODEC_API_API_VERSIONS, 3)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(codec_request_header_version(CODEC_API_SASL_HANDSHAKE, 1)), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(codec_response_header_version(CODEC_API_SASL_HANDSHAKE, 1)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(codec_request_header_version(CODEC_API_DESCRIBE_CLUSTER, 0)), (int64_t)(2)));
	cr_assert(eq(i64, (int64_t)(codec_request_header_version(500, 3)), (int64_t)(1)), "unknown keys: header v1");
}

/* What is rewritten is a column of the table (codec_api.endpoints_from). */
Test(codec, api_table_names_the_responses_with_broker_addresses)
{
	const int16_t always[] = {CODEC_API_METADATA, CODEC_API_FIND_COORDINATOR, CODEC_API_DESCRIBE_CLUSTER,
				  CODEC_API_SHARE_FETCH, CODEC_API_SHARE_ACKNOWLEDGE};
	for (size_t i = 0; i < sizeof(always) / sizeof(always[0]); i++)
		cr_assert(codec_response_has_endpoints(always[i], 0), "key %d", always[i]);
	cr_assert_not(codec_response_has_endpoints(CODEC_API_PRODUCE, 9));
	cr_assert(codec_response_has_endpoints(CODEC_API_PRODUCE, 10), "Produce v10+: NodeEndpoints (KIP-951)");
	cr_assert_not(codec_response_has_endpoints(CODEC_API_FETCH, 15));
	cr_assert(codec_response_has_endpoints(CODEC_API_FETCH, 16), "Fetch v16+: NodeEndpoints (KIP-951)");
	int n = 0;
	for (int16_t k = 0; k <= CODEC_API_KEY_MAX; k++)
		n += codec_api_get(k)->endpoints_from >= 0;
	cr_assert(eq(i64, (int64_t)(n), (int64_t)(7)), "no other response names brokers");
	cr_assert_not(codec_response_has_endpoints(1000, 0));
}

/* What else syncgate does is a column too (codec_api.does): the proxy's
 * hold, clamp and streaming decisions read nothing else. */
Test(codec, api_table_says_what_syncgate_does_besides_forwarding)
{
	int held = 0, clamped = 0, streamed = 0, read = 0;
	for (int16_t k = 0; k <= CODEC_API_KEY_MAX; k++) {
		unsigned d = codec_api_get(k)->does;
		held += (d & CODEC_DOES_HOLD) != 0;
		clamped += (d & CODEC_DOES_CLAMP) != 0;
		streamed += (d & CODEC_DOES_STREAM) != 0;
		read += (d & CODEC_DOES_READ_RESPONSE) != 0;
	}
	cr_assert(eq(int, held, 1), "only Produce responses are held");
	cr_assert(ne(int, codec_api_get(CODEC_API_PRODUCE)->does & CODEC_DOES_HOLD, 0));
	cr_assert(eq(int, clamped, 3), "the consumer clamp cuts Fetch, ListOffsets, OffsetForLeaderEpoch");
	cr_assert(ne(int, codec_api_get(CODEC_API_FETCH)->does & CODEC_DOES_CLAMP, 0));
	cr_assert(ne(int, codec_api_get(CODEC_API_LIST_OFFSETS)->does & CODEC_DOES_CLAMP, 0));
	cr_assert(ne(int, codec_api_get(CODEC_API_OFFSET_FOR_LEADER_EPOCH)->does & CODEC_DOES_CLAMP, 0));
	cr_assert(eq(int, codec_api_get(CODEC_API_SHARE_FETCH)->does & CODEC_DOES_CLAMP, 0),
		  "ShareFetch is counted, not clamped (README)");
	cr_assert(eq(int, streamed, 1), "only Fetch is rewritten or clamped as it streams");
	cr_assert(ne(int, codec_api_get(CODEC_API_FETCH)->does & CODEC_DOES_STREAM, 0));
	cr_assert(eq(int, read, 7), "Metadata, OffsetCommit, SaslHandshake, ApiVersions, SaslAuthenticate, InitProducerId, "
		  "EndTxn are read");
}

Test(codec, api_decode_start_checks_the_version_zeroes_and_sets_the_encoding)
{
	uint8_t body[1] = { 0 };
	struct codec_iov iov = { body, sizeof(body) };
	struct { int a; char b[8]; } out;
	struct codec_reader r;
	memset(&out, 0x5a, sizeof(out));
	cr_expect_not(codec_decode_start(&r, &iov, 1, CODEC_API_PRODUCE, 2, 3, 13, &out, sizeof(out)), "below min");
	cr_expect(eq(int, out.a, 0), "zeroed even when refused");
	cr_expect_not(codec_decode_start(&r, &iov, 1, CODEC_API_PRODUCE, 14, 3, 13, &out, sizeof(out)), "above max");
	cr_assert(codec_decode_start(&r, &iov, 1, CODEC_API_PRODUCE, 8, 3, 13, &out, sizeof(out)));
	cr_expect_not(r.flexible, "Produce v8 is classic");
	cr_expect(eq(sz, r.off, 0));
	cr_assert(codec_decode_start(&r, &iov, 1, CODEC_API_PRODUCE, 9, 3, 13, &out, sizeof(out)));
	cr_expect(r.flexible, "Produce v9 is flexible");
}
