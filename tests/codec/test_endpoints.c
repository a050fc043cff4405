/* codec/endpoints.c: broker address rewriting in responses. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"

/* Maps node N to sg-N.local:1900N; counts calls. */
struct map {
	int calls;
	bool refuse;          /* return -1 for every node */
	char host[64];
};

static int map_fn(void *ctx, int32_t node_id, const char *host, int32_t port, const char **out_host,
		  int32_t *out_port)
{
	struct map *m = ctx;
	m->calls++;
	cr_assert(strncmp(host, "broker-", 7) == 0 || strncmp(host, "sg-", 3) == 0 || host[0] == '\0',
		  "host %s", host);
	if (m->refuse)
		return -1;
	snprintf(m->host, sizeof(m->host), "sg-%d.local", node_id);
	*out_host = m->host;
	*out_port = 19000 + node_id;
	return 0;
}

/* Apply a splice to a body; returns the new body. */
static uint8_t *apply(const struct codec_iov *body, const struct codec_splice *s, size_t *len)
{
	*len = body->len - s->del + s->ins.len;
	uint8_t *p = malloc(*len);
	memcpy(p, body->base, s->off);
	memcpy(p + s->off, s->ins.data, s->ins.len);
	memcpy(p + s->off + s->ins.len, body->base + s->off + s->del, body->len - s->off - s->del);
	return p;
}

/* Rewrite golden `name`; returns the rewritten body (caller frees) and its length. */
static uint8_t *rewrite(const char *name, int16_t key, int16_t v, struct map *m, size_t *len,
			struct codec_splice *s, struct golden *g)
{
	golden_load(g, name, false, key, v);
	struct codec_iov body = golden_body(g);
	/* Two segments, cut in the middle. */
	struct codec_iov two[2] = {{body.base, body.len / 2}, {body.base + body.len / 2, body.len - body.len / 2}};
	enum codec_err e = codec_response_rewrite_endpoints(key, v, two, 2, map_fn, m, s);
	cr_assert(eq(i64, (int64_t)(e), (int64_t)(CODEC_OK)), "%s: %s", name, codec_err_str(e));
	return apply(&body, s, len);
}

Test(codec, endpoints_metadata_all_versions)
{
	for (int16_t v = 0; v <= 13; v++) {
		char name[64];
		snprintf(name, sizeof(name), "metadata_resp_v%d", v);
		struct map m = {0};
		struct codec_splice s;
		struct golden g;
		size_t len;
		uint8_t *p = rewrite(name, CODEC_API_METADATA, v, &m, &len, &s, &g);
		cr_assert(s.changed);
		cr_assert(eq(i64, (int64_t)(m.calls), (int64_t)(3)));
		struct codec_iov nb = {p, len};
		struct codec_metadata_response a, b;
		struct codec_iov body = golden_body(&g);
		cr_assert(eq(i64, (int64_t)(codec_metadata_response_decode(&nb, 1, v, &a)), (int64_t)(CODEC_OK)));
		cr_assert(eq(i64, (int64_t)(codec_metadata_response_decode(&body, 1, v, &b)), (int64_t)(CODEC_OK)));
		for (size_t i = 0; i < 3; i++) {
			char want[32];
			snprintf(want, sizeof(want), "sg-%d.local", a.brokers[i].node_id);
			cr_assert_str_eq(a.brokers[i].host, want);
			cr_assert(eq(i64, (int64_t)(a.brokers[i].port), (int64_t)(19000 + a.brokers[i].node_id)));
			cr_assert(eq(i64, (int64_t)(a.brokers[i].node_id), (int64_t)(b.brokers[i].node_id)));
			if (b.brokers[i].rack)
				cr_assert_str_eq(a.brokers[i].rack, b.brokers[i].rack);
		}
		/* Topics untouched: the tail after the splice is the original. */
		cr_assert(eq(i64, (int64_t)(a.ntopics), (int64_t)(b.ntopics)));
		codec_metadata_response_free(&a);
		codec_metadata_response_free(&b);
		codec_buf_free(&s.ins);
		free(p);
		golden_free(&g);
	}
}

Test(codec, endpoints_find_coordinator_single_and_batched)
{
	for (int16_t v = 0; v <= 6; v++) {
		char name[64];
		snprintf(name, sizeof(name), "find_coordinator_resp_v%d", v);
		struct map m = {0};
		struct codec_splice s;
		struct golden g;
		size_t len;
		uint8_t *p = rewrite(name, CODEC_API_FIND_COORDINATOR, v, &m, &len, &s, &g);
		struct codec_iov nb = {p, len};
		struct codec_find_coordinator_response a;
		cr_assert(eq(i64, (int64_t)(codec_find_coordinator_response_decode(&nb, 1, v, &a)), (int64_t)(CODEC_OK)));
		if (v < 4) {
			cr_assert_str_eq(a.host, "sg-2.local");
			cr_assert(eq(i64, (int64_t)(a.port), (int64_t)(19002)));
		} else {
			cr_assert(eq(i64, (int64_t)(m.calls), (int64_t)(2)));
			cr_assert_str_eq(a.coordinators[0].host, "sg-2.local");
			cr_assert_str_eq(a.coordinators[0].key, "group-a");
			cr_assert_str_eq(a.coordinators[1].host, "sg--1.local");
			cr_assert_str_eq(a.coordinators[1].error_message, "coordinator not available");
		}
		codec_find_coordinator_response_free(&a);
		codec_buf_free(&s.ins);
		free(p);
		golden_free(&g);
	}
}

Test(codec, endpoints_describe_cluster)
{
	for (int16_t v = 0; v <= 2; v++) {
		char name[64];
		snprintf(name, sizeof(name), "describe_cluster_resp_v%d", v);
		struct map m = {0};
		struct codec_splice s;
		struct golden g;
		size_t len;
		uint8_t *p = rewrite(name, CODEC_API_DESCRIBE_CLUSTER, v, &m, &len, &s, &g);
		struct codec_iov nb = {p, len};
		struct codec_describe_cluster_response a;
		cr_assert(eq(i64, (int64_t)(codec_describe_cluster_response_decode(&nb, 1, v, &a)), (int64_t)(CODEC_OK)));
		cr_assert_str_eq(a.brokers[0].host, "sg-1.local");
		cr_assert_str_eq(a.brokers[1].host, "sg-2.local");
		cr_assert(eq(i64, (int64_t)(a.brokers[1].port), (int64_t)(19002)));
		cr_assert_str_eq(a.cluster_id, "golden-cluster-id");
		codec_describe_cluster_response_free(&a);
		codec_buf_free(&s.ins);
		free(p);
		golden_free(&g);
	}
}

Test(codec, endpoints_produce_node_endpoints_tag_only)
{
	for (int16_t v = 3; v <= 13; v++) {
		struct golden g;
		golden_load_v(&g, "produce_resp", false, CODEC_API_PRODUCE, v);
		struct codec_iov body = golden_body(&g);
		struct map m = {0};
		struct codec_splice s;
		if (v < 10) {
			cr_assert_not(codec_response_has_endpoints(CODEC_API_PRODUCE, v));
			cr_assert(eq(i64, (int64_t)(codec_response_rewrite_endpoints(CODEC_API_PRODUCE, v, &body, 1, map_fn,
								      &m, &s)), (int64_t)(CODEC_ERR_UNSUPPORTED)));
			golden_free(&g);
			continue;
		}
		cr_assert(codec_response_has_endpoints(CODEC_API_PRODUCE, v));
		cr_assert(eq(i64, (int64_t)(codec_response_rewrite_endpoints(CODEC_API_PRODUCE, v, &body, 1, map_fn, &m,
							      &s)), (int64_t)(CODEC_OK)));
		cr_assert(s.changed);
		struct codec_produce_response orig;
		cr_assert(eq(i64, (int64_t)(codec_produce_response_decode(&body, 1, v, &orig)), (int64_t)(CODEC_OK)));
		cr_assert(ge(i64, (int64_t)(s.off), (int64_t)(orig.tags_off)), "splice stays in the top-level tags");
		size_t len;
		uint8_t *p = apply(&body, &s, &len);
		struct codec_iov nb = {p, len};
		struct codec_produce_response a;
		cr_assert(eq(i64, (int64_t)(codec_produce_response_decode(&nb, 1, v, &a)), (int64_t)(CODEC_OK)));
		cr_assert(eq(i64, (int64_t)(a.nnode_endpoints), (int64_t)(2)));
		cr_assert_str_eq(a.node_endpoints[0].host, "sg-2.local");
		cr_assert(eq(i64, (int64_t)(a.node_endpoints[1].port), (int64_t)(19003)));
		cr_assert_str_eq(a.node_endpoints[0].rack, "rack-b");
		cr_assert(eq(i64, (int64_t)(a.tags.count), (int64_t)(1)), "unknown tag 9 still there");
		codec_produce_response_free(&a);
		codec_produce_response_free(&orig);
		codec_buf_free(&s.ins);
		free(p);
		golden_free(&g);
	}
}

Test(codec, endpoints_fetch_node_endpoints_records_untouched)
{
	for (int16_t v = 16; v <= 18; v++) {
		char name[64];
		snprintf(name, sizeof(name), "fetch_resp_v%d", v);
		struct map m = {0};
		struct codec_splice s;
		struct golden g;
		size_t len;
		uint8_t *p = rewrite(name, CODEC_API_FETCH, v, &m, &len, &s, &g);
		struct codec_iov body = golden_body(&g);
		struct codec_fetch_response_scan a;
		cr_assert(eq(i64, (int64_t)(codec_fetch_response_scan(&body, 1, v, &a)), (int64_t)(CODEC_OK)));
		cr_assert(s.changed);
		cr_assert(ge(i64, (int64_t)(s.off), (int64_t)(a.tags_off)));
		cr_assert(memcmp(p, body.base, a.tags_off) == 0, "everything before the tags is intact");
		codec_fetch_response_scan_free(&a);
		struct codec_iov nb = {p, len};
		cr_assert(eq(i64, (int64_t)(codec_fetch_response_scan(&nb, 1, v, &a)), (int64_t)(CODEC_OK)));
		codec_fetch_response_scan_free(&a);
		/* The new body carries the new address (and not the old one). */
		cr_assert_not_null(memmem(p, len, "sg-3.local", 10));
		cr_assert_null(memmem(p, len, "broker-3.internal", 17));
		codec_buf_free(&s.ins);
		free(p);
		golden_free(&g);
	}
}

Test(codec, endpoints_share_fetch_and_acknowledge)
{
	static const struct {
		const char *name;
		int16_t key;
	} cases[] = {{"share_fetch_resp", CODEC_API_SHARE_FETCH},
		     {"share_acknowledge_resp", CODEC_API_SHARE_ACKNOWLEDGE}};
	for (size_t c = 0; c < 2; c++)
		for (int16_t v = 1; v <= 2; v++) {
			char name[64];
			snprintf(name, sizeof(name), "%s_v%d", cases[c].name, v);
			struct map m = {0};
			struct codec_splice s;
			struct golden g;
			size_t len;
			uint8_t *p = rewrite(name, cases[c].key, v, &m, &len, &s, &g);
			cr_assert(s.changed);
			cr_assert(eq(i64, (int64_t)(m.calls), (int64_t)(1)));
			cr_assert_not_null(memmem(p, len, "sg-2.local", 10));
			cr_assert_null(memmem(p, len, "broker-2", 8));
			/* A second pass over the result finds our own address. */
			struct codec_iov nb = {p, len};
			struct codec_splice s2;
			struct map m2 = {.refuse = true};
			cr_assert(eq(i64, (int64_t)(codec_response_rewrite_endpoints(cases[c].key, v, &nb, 1, map_fn, &m2, &s2)), (int64_t)(CODEC_OK)));
			cr_assert(eq(i64, (int64_t)(m2.calls), (int64_t)(1)));
			cr_assert_not(s2.changed);
			codec_buf_free(&s2.ins);
			codec_buf_free(&s.ins);
			free(p);
			golden_free(&g);
		}
}

Test(codec, endpoints_unchanged_when_callback_refuses)
{
	struct golden g;
	golden_load(&g, "metadata_resp_v12", false, CODEC_API_METADATA, 12);
	struct codec_iov body = golden_body(&g);
	struct map m = {.refuse = true};
	struct codec_splice s;
	cr_assert(eq(i64, (int64_t)(codec_response_rewrite_endpoints(CODEC_API_METADATA, 12, &body, 1, map_fn, &m, &s)), (int64_t)(CODEC_OK)));
	cr_assert_not(s.changed);
	cr_assert(eq(i64, (int64_t)(m.calls), (int64_t)(3)));
	codec_buf_free(&s.ins);
	golden_free(&g);
}

Test(codec, endpoints_unchanged_without_node_endpoints_tag)
{
	/* Produce v10 with no NodeEndpoints tag: no topics, throttle 0, empty tag section. */
	uint8_t body[] = {0x01 /* 0 topics */, 0, 0, 0, 0 /* throttle */, 0 /* no tags */};
	struct codec_iov v = {body, sizeof(body)};
	struct map m = {0};
	struct codec_splice s;
	cr_assert(eq(i64, (int64_t)(codec_response_rewrite_endpoints(CODEC_API_PRODUCE, 10, &v, 1, map_fn, &m, &s)), (int64_t)(CODEC_OK)));
	cr_assert_not(s.changed);
	cr_assert(eq(i64, (int64_t)(m.calls), (int64_t)(0)));
	codec_buf_free(&s.ins);
}

Test(codec, endpoints_truncated_prefixes_fail_cleanly)
{
	static const struct {
		const char *name;
		int16_t key, v;
	} cases[] = {{"metadata_resp_v1", 3, 1}, {"metadata_resp_v12", 3, 12},
		     {"find_coordinator_resp_v2", 10, 2}, {"find_coordinator_resp_v6", 10, 6},
		     {"describe_cluster_resp_v2", 60, 2}, {"produce_resp_v11", 0, 11},
		     {"fetch_resp_v17", 1, 17}, {"share_fetch_resp_v2", 78, 2},
		     {"share_acknowledge_resp_v1", 79, 1}};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct golden g;
		golden_load(&g, cases[c].name, false, cases[c].key, cases[c].v);
		struct codec_iov body = golden_body(&g);
		for (size_t n = 0; n < body.len; n++) {
			uint8_t *p = malloc(n ? n : 1);
			memcpy(p, body.base, n);
			struct codec_iov t = {p, n};
			struct map m = {0};
			struct codec_splice s;
			enum codec_err e = codec_response_rewrite_endpoints(cases[c].key, cases[c].v, &t, 1,
									    map_fn, &m, &s);
			/*
			 * Walkers stop after the last endpoint (Metadata topics are not
			 * read), so a prefix holding them all may rewrite fine; Produce
			 * and Fetch read the whole body first.
			 */
			bool whole = cases[c].key == CODEC_API_PRODUCE || cases[c].key == CODEC_API_FETCH;
			cr_assert(e == CODEC_ERR_UNDERFLOW || e == CODEC_ERR_BAD_MSG || (e == CODEC_OK && !whole),
				  "%s prefix %zu: %s", cases[c].name, n, codec_err_str(e));
			codec_buf_free(&s.ins);
			free(p);
		}
		golden_free(&g);
	}
}

static int to_sg(void *ctx, int32_t node_id, const char *host, int32_t port, const char **out_host,
		 int32_t *out_port)
{
	*out_host = "syncgate.example";
	*out_port = 29092;
	return 0;
}

Test(codec, endpoints_captured_frames)
{
	static const struct {
		const char *name;
		int16_t key, v;
	} cases[] = {{"kcat/metadata_resp_v4", 3, 4}, {"java/metadata_resp_v13", 3, 13},
		     {"java/find_coordinator_resp_v6", 10, 6}, {"java/describe_cluster_resp_v2", 60, 2}};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct golden g;
		golden_load(&g, cases[c].name, false, cases[c].key, cases[c].v);
		struct codec_iov body = golden_body(&g);
		struct codec_splice s;
		cr_assert(eq(i64, (int64_t)(codec_response_rewrite_endpoints(cases[c].key, cases[c].v, &body, 1, to_sg, NULL, &s)), (int64_t)(CODEC_OK)), "%s", cases[c].name);
		cr_assert(s.changed, "%s", cases[c].name);
		size_t len;
		uint8_t *p = apply(&body, &s, &len);
		cr_assert_not_null(memmem(p, len, "syncgate.example", 16));
		cr_assert_null(memmem(p, len, "127.0.0.1", 9), "%s: no broker address left", cases[c].name);
		free(p);
		codec_buf_free(&s.ins);
		golden_free(&g);
	}
}
