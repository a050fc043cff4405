/*
 * Unit tests of request versions on the data path (proxy/versions.c and the
 * ApiVersions rewrite of proxy/response.c), on a pair whose upstream end
 * plays the broker: an ApiVersions v5 request names the client and its
 * answer advertises Produce v14; an ApiVersions newer than syncgate decodes
 * is forwarded, counted, and answered UNSUPPORTED_VERSION naming the
 * versions syncgate knows, whatever the broker said; a Produce above what
 * the gate reads closes the pair with nothing forwarded; a too-new SASL
 * request passes unchanged; EndTxn is advertised no higher than the codec
 * decodes, and one above it closes the pair under gate.transactions
 * commit|both (its commit could not be held) but passes under data.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pair.h"

static const char *yaml = PAIR_GATED_YAML;

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}


/* A request header (size placeholder first) for key/version; the body's encoding follows the table. */
static void request_header(struct codec_buf *b, int16_t key, int16_t version, int32_t corr)
{
	b->flexible = false;
	codec_write_i32(b, 0);
	codec_write_i16(b, key);
	codec_write_i16(b, version);
	codec_write_i32(b, corr);
	codec_write_str(b, "unit");
	if (codec_request_header_version(key, version) >= 2)
		codec_write_uvarint(b, 0);
	b->flexible = codec_api_flexible(key, version);
}

/* ApiVersions request v3+ naming the client (and, v5+, a cluster and node). */
static void api_versions_request(struct codec_buf *b, int16_t version, int32_t corr)
{
	request_header(b, CODEC_API_API_VERSIONS, version, corr);
	codec_write_str(b, "unit-client");
	codec_write_str(b, "9.9");
	if (version >= 5) {
		codec_write_str(b, "cluster-a");
		codec_write_i32(b, 1);
	}
	codec_write_uvarint(b, 0);
	pair_frame_seal(b);
}

/* The broker's ApiVersions answer at `version` (a newer one than the codec
 * writes: in the newest layout it knows): Produce 3–13, ApiVersions 0–`av_max`. */
static void api_versions_answer(struct codec_buf *b, int16_t version, int32_t corr, int16_t av_max)
{
	struct codec_api_version_range keys[] = {
		{CODEC_API_PRODUCE, 3, 13, {0}},
		{CODEC_API_API_VERSIONS, 0, av_max, {0}},
	};
	struct codec_api_versions_response m = {.api_keys = keys, .napi_keys = 2};
	codec_write_i32(b, 0);
	codec_write_i32(b, corr);
	int16_t layout = version < CODEC_API_VERSIONS_MAX ? version : CODEC_API_VERSIONS_MAX;
	cr_assert(eq(int, codec_api_versions_response_encode(&m, layout, b), CODEC_OK));
	pair_frame_seal(b);
}

static void send_to(int fd, const struct codec_buf *b)
{
	cr_assert(eq(i64, (int64_t)write(fd, b->data, b->len), (int64_t)b->len));
}

Test(versions, api_versions_v5_names_the_client_and_advertises_produce_v14)
{
	struct fixture f;
	pair_init(&f, yaml);
	struct codec_buf rq = PAIR_BUF, an = PAIR_BUF;
	api_versions_request(&rq, 5, 7);
	uint8_t up[4096], cl[4096];
	send_to(f.cl, &rq);
	cr_assert(eq(sz, pair_end_drain(&f, f.up, up, sizeof(up)), rq.len), "forwarded");
	cr_assert(memcmp(up, rq.data, rq.len) == 0, "byte for byte");
	cr_assert(f.c->client_named);
	cr_assert(eq(str, f.c->client_name, "unit-client"));
	cr_assert(eq(str, f.c->client_version, "9.9"));
	api_versions_answer(&an, 5, 7, 5);
	send_to(f.up, &an);
	size_t n = pair_end_drain(&f, f.cl, cl, sizeof(cl));
	cr_assert(gt(sz, n, 8));
	struct codec_iov body = {cl + 8, n - 8};
	struct codec_api_versions_response m;
	cr_assert(eq(int, codec_api_versions_response_decode(&body, 1, 5, &m), CODEC_OK));
	cr_assert(eq(sz, m.napi_keys, 2));
	cr_assert(eq(i16, m.api_keys[0].max_version, CODEC_PRODUCE_V14), "Produce v14 advertised");
	cr_assert(eq(i16, m.api_keys[1].max_version, 5), "ApiVersions v5 is understood: kept");
	codec_api_versions_response_free(&m);
	codec_buf_free(&rq);
	codec_buf_free(&an);
	pair_fini(&f);
}

/* A version above what syncgate decodes is answered UNSUPPORTED_VERSION
 * naming ApiVersions 0..CODEC_API_VERSIONS_MAX, so the client retries
 * within it; counted. */
Test(versions, too_new_api_versions_is_answered_unsupported_version)
{
	struct fixture f;
	pair_init(&f, yaml);
	int16_t future = CODEC_API_VERSIONS_MAX + 1;
	struct codec_buf rq = PAIR_BUF, an = PAIR_BUF;
	api_versions_request(&rq, future, 9);
	uint8_t up[4096], cl[4096];
	send_to(f.cl, &rq);
	cr_assert(eq(sz, pair_end_drain(&f, f.up, up, sizeof(up)), rq.len), "forwarded unchanged");
	cr_assert(memcmp(up, rq.data, rq.len) == 0);
	cr_assert_not(f.c->client_named, "nothing read from a version syncgate does not know");
	char *text = metrics_render();
	cr_assert_not_null(strstr(text, "syncgate_unknown_api_version_total{api=\"ApiVersions\"} 1"), "%s", text);
	free(text);
	/* a broker that serves it: its answer (ApiVersions up to `future`) never reaches the client */
	api_versions_answer(&an, future, 9, future);
	send_to(f.up, &an);
	size_t n = pair_end_drain(&f, f.cl, cl, sizeof(cl));
	cr_assert(eq(sz, n, 4 + 4 + 2 + 4 + 6), "v0 layout: error, one ApiVersions entry");
	cr_assert(eq(u32, be16(cl + 8), CODEC_ERROR_UNSUPPORTED_VERSION));
	struct codec_iov body = {cl + 8, n - 8};
	struct codec_api_versions_response m;
	cr_assert(eq(int, codec_api_versions_response_decode(&body, 1, 0, &m), CODEC_OK));
	cr_assert(m.v0_layout);
	cr_assert(eq(sz, m.napi_keys, 1));
	cr_assert(eq(i16, m.api_keys[0].api_key, CODEC_API_API_VERSIONS));
	cr_assert(eq(i16, m.api_keys[0].min_version, 0));
	cr_assert(eq(i16, m.api_keys[0].max_version, CODEC_API_VERSIONS_MAX));
	codec_api_versions_response_free(&m);
	/* the retry within it is read again */
	codec_buf_free(&rq);
	rq = (struct codec_buf)PAIR_BUF;
	api_versions_request(&rq, CODEC_API_VERSIONS_MAX, 10);
	send_to(f.cl, &rq);
	cr_assert(eq(sz, pair_end_drain(&f, f.up, up, sizeof(up)), rq.len));
	cr_assert(f.c->client_named);
	codec_buf_free(&rq);
	codec_buf_free(&an);
	pair_fini(&f);
}

Test(versions, too_new_produce_closes_with_nothing_forwarded)
{
	struct fixture f;
	pair_init(&f, yaml);
	struct codec_buf rq = PAIR_BUF;
	request_header(&rq, CODEC_API_PRODUCE, CODEC_PRODUCE_V14 + 1, 3);
	codec_write_str(&rq, NULL); /* whatever a future Produce holds */
	codec_write_i16(&rq, -1);
	codec_write_i32(&rq, 30000);
	codec_write_uvarint(&rq, 1);
	codec_write_uvarint(&rq, 0);
	pair_frame_seal(&rq);
	send_to(f.cl, &rq);
	uint8_t up[4096];
	cr_assert(eq(sz, pair_end_drain(&f, f.up, up, sizeof(up)), 0), "never forwarded: its ack could not be held");
	for (int i = 0; i < 200 && f.srv.nconns > 0; i++)
		event_base_loop(f.base, EVLOOP_NONBLOCK);
	cr_assert(eq(u64, (uint64_t)f.srv.nconns, 0), "the pair is closed");
	codec_buf_free(&rq);
	pair_fini(&f);
}

Test(versions, too_new_sasl_handshake_passes_unchanged)
{
	struct fixture f;
	pair_init(&f, yaml);
	struct codec_buf rq = PAIR_BUF;
	request_header(&rq, CODEC_API_SASL_HANDSHAKE, 2, 4);
	codec_write_str(&rq, "PLAIN");
	pair_frame_seal(&rq);
	send_to(f.cl, &rq);
	uint8_t up[4096];
	cr_assert(eq(sz, pair_end_drain(&f, f.up, up, sizeof(up)), rq.len));
	cr_assert(memcmp(up, rq.data, rq.len) == 0);
	cr_assert(eq(str, f.c->sasl_mech, ""), "its mechanism is not read");
	codec_buf_free(&rq);
	pair_fini(&f);
}

static const char *commit_yaml = PAIR_GATED_YAML "gate:\n  transactions: commit\n";

/* An EndTxn request one version above what the codec decodes, in the v5
 * layout (a future version's body is unknown). */
static void future_end_txn(struct codec_buf *b, int32_t corr)
{
	int16_t future = (int16_t)(codec_api_get(CODEC_API_END_TXN)->decode_max + 1);
	request_header(b, CODEC_API_END_TXN, future, corr);
	codec_write_str(b, "txn-a");
	codec_write_i64(b, 1000);
	codec_write_i16(b, 0);
	codec_write_i8(b, 1); /* committed */
	codec_write_uvarint(b, 0);
	pair_frame_seal(b);
}

/* The broker advertises EndTxn 0..decode_max+1: the client is told decode_max. */
Test(versions, end_txn_is_advertised_no_higher_than_decoded)
{
	struct fixture f;
	pair_init(&f, commit_yaml);
	int16_t decoded = codec_api_get(CODEC_API_END_TXN)->decode_max;
	struct codec_buf rq = PAIR_BUF, an = PAIR_BUF;
	api_versions_request(&rq, 5, 7);
	uint8_t up[4096], cl[4096];
	send_to(f.cl, &rq);
	cr_assert(eq(sz, pair_end_drain(&f, f.up, up, sizeof(up)), rq.len));
	struct codec_api_version_range keys[] = {
		{CODEC_API_API_VERSIONS, 0, 5, {0}},
		{CODEC_API_END_TXN, 0, (int16_t)(decoded + 1), {0}},
	};
	struct codec_api_versions_response m = {.api_keys = keys, .napi_keys = 2};
	codec_write_i32(&an, 0);
	codec_write_i32(&an, 7);
	cr_assert(eq(int, codec_api_versions_response_encode(&m, 5, &an), CODEC_OK));
	pair_frame_seal(&an);
	send_to(f.up, &an);
	size_t n = pair_end_drain(&f, f.cl, cl, sizeof(cl));
	cr_assert(gt(sz, n, 8));
	struct codec_iov body = {cl + 8, n - 8};
	struct codec_api_versions_response got;
	cr_assert(eq(int, codec_api_versions_response_decode(&body, 1, 5, &got), CODEC_OK));
	cr_assert(eq(sz, got.napi_keys, 2));
	cr_assert(eq(i16, got.api_keys[1].api_key, CODEC_API_END_TXN));
	cr_assert(eq(i16, got.api_keys[1].max_version, decoded), "capped to what the commit gate reads");
	codec_api_versions_response_free(&got);
	codec_buf_free(&rq);
	codec_buf_free(&an);
	pair_fini(&f);
}

Test(versions, too_new_end_txn_closes_when_commits_are_gated)
{
	struct fixture f;
	pair_init(&f, commit_yaml);
	struct codec_buf rq = PAIR_BUF;
	future_end_txn(&rq, 5);
	send_to(f.cl, &rq);
	uint8_t up[4096];
	cr_assert(eq(sz, pair_end_drain(&f, f.up, up, sizeof(up)), 0), "never forwarded: its commit could not be held");
	for (int i = 0; i < 200 && f.srv.nconns > 0; i++)
		event_base_loop(f.base, EVLOOP_NONBLOCK);
	cr_assert(eq(u64, (uint64_t)f.srv.nconns, 0), "the pair is closed");
	char *text = metrics_render();
	cr_assert_not_null(strstr(text, "syncgate_unknown_api_version_total{api=\"EndTxn\"} 1"), "%s", text);
	free(text);
	codec_buf_free(&rq);
	pair_fini(&f);
}

Test(versions, too_new_end_txn_passes_when_only_data_is_gated)
{
	struct fixture f;
	pair_init(&f, yaml);
	struct codec_buf rq = PAIR_BUF;
	future_end_txn(&rq, 6);
	send_to(f.cl, &rq);
	uint8_t up[4096];
	cr_assert(eq(sz, pair_end_drain(&f, f.up, up, sizeof(up)), rq.len), "forwarded: gate.transactions data holds no commit");
	cr_assert(memcmp(up, rq.data, rq.len) == 0);
	cr_assert(eq(u64, (uint64_t)f.srv.nconns, 1));
	char *text = metrics_render();
	cr_assert_not_null(strstr(text, "syncgate_unknown_api_version_total{api=\"EndTxn\"} 1"), "%s", text);
	free(text);
	codec_buf_free(&rq);
	pair_fini(&f);
}
