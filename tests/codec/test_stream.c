/*
 * Unit tests of codec/stream.c: the streaming Fetch response
 * scan reaches the top-level tags at the offset the whole-body scan gives,
 * for every version's golden frame, however the body arrives (every split
 * point; one byte at a time); every truncated body stops with UNDERFLOW;
 * and codec_tags_rewrite_endpoints_fixed keeps the tail's length.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"

/* Walk `body` handing the scan at most `chunk` new bytes past its position
 * at a time (growing on UNDERFLOW). Returns the tail offset or SIZE_MAX. */
static size_t walk(const uint8_t *body, size_t len, int16_t v, size_t chunk)
{
	struct codec_fetch_stream fs;
	codec_fetch_stream_init(&fs, v);
	size_t pos = 0, avail = chunk;
	while (fs.stage != CODEC_STREAM_TAIL) {
		size_t have = pos + avail < len ? avail : len - pos;
		struct codec_iov one = { body + pos, have };
		size_t used, records;
		enum codec_err err = codec_fetch_stream_next(&fs, &one, 1, &used, &records);
		if (err == CODEC_ERR_UNDERFLOW && pos + have < len) {
			avail += chunk;
			continue;
		}
		if (err != CODEC_OK || used + records > len - pos)
			return SIZE_MAX;
		cr_assert(le(i64, (int64_t)(used), (int64_t)(have)));
		pos += used + records;
		avail = chunk;
	}
	return pos;
}

Test(codec_stream, fetch_tail_offset_matches_the_scan_for_every_version_and_chunk)
{
	for (int16_t v = 4; v <= 18; v++) {
		struct golden g;
		golden_load_v(&g, "fetch_resp", false, CODEC_API_FETCH, v);
		struct codec_iov body = golden_body(&g);
		struct codec_fetch_response_scan s;
		cr_assert(eq(i64, (int64_t)(codec_fetch_response_scan(&body, 1, v, &s)), (int64_t)(CODEC_OK)));
		for (size_t chunk = 1; chunk <= body.len; chunk++)
			cr_assert(eq(i64, (int64_t)(walk(body.base, body.len, v, chunk)), (int64_t)(s.tags_off)),
				     "v%d chunk %zu", v, chunk);
		codec_fetch_response_scan_free(&s);
		golden_free(&g);
	}
}

Test(codec_stream, truncated_bodies_never_reach_the_tail)
{
	for (int16_t v = 4; v <= 18; v++) {
		struct golden g;
		golden_load_v(&g, "fetch_resp", false, CODEC_API_FETCH, v);
		struct codec_iov body = golden_body(&g);
		struct codec_fetch_response_scan s;
		cr_assert(eq(i64, (int64_t)(codec_fetch_response_scan(&body, 1, v, &s)), (int64_t)(CODEC_OK)));
		/* a prefix that ends before the tail cannot be walked to it */
		for (size_t n = 0; n < s.tags_off; n++)
			cr_assert(eq(i64, (int64_t)(walk(body.base, n, v, 4)), (int64_t)(SIZE_MAX)), "v%d prefix %zu", v, n);
		codec_fetch_response_scan_free(&s);
		golden_free(&g);
	}
}

Test(codec_stream, unsupported_version_is_an_error)
{
	struct codec_fetch_stream fs;
	codec_fetch_stream_init(&fs, 3);
	struct codec_iov one = { (const uint8_t *)"\0\0\0\0", 4 };
	size_t used, records;
	cr_assert(ne(i64, (int64_t)(codec_fetch_stream_next(&fs, &one, 1, &used, &records)), (int64_t)(CODEC_OK)));
}

static const char *new_host;

static int fn(void *ctx, int32_t node_id, const char *host, int32_t port, const char **out_host,
	      int32_t *out_port)
{
	(void)ctx;
	(void)node_id;
	(void)host;
	(void)port;
	*out_host = new_host;
	*out_port = 19092;
	return 0;
}

/* A tag section: NodeEndpoints with one endpoint named `host`, then a tag 5 of 2 bytes. */
static size_t tail(uint8_t *p, const char *host)
{
	size_t n = 0, h = strlen(host);
	p[n++] = 2;                              /* two fields */
	p[n++] = 0;                              /* tag 0 */
	p[n++] = (uint8_t)(1 + 4 + 1 + h + 4 + 1 + 1);
	p[n++] = 2;                              /* one endpoint */
	memcpy(p + n, "\0\0\0\1", 4);            /* NodeId 1 */
	n += 4;
	p[n++] = (uint8_t)(h + 1);
	memcpy(p + n, host, h);
	n += h;
	memcpy(p + n, "\0\0\x23\x84", 4);        /* Port 9092 */
	n += 4;
	p[n++] = 0;                              /* Rack null */
	p[n++] = 0;                              /* tags */
	p[n++] = 5;                              /* tag 5 */
	p[n++] = 2;
	p[n++] = 0xaa;
	p[n++] = 0xbb;
	return n;
}

Test(codec_stream, tail_rewrite_keeps_the_length_and_other_tags)
{
	static const char *const hosts[] = { "a", "ab", "abc", "broker-1.internal.example",
					     "a-very-long-advertised-host-name.example.com" };
	for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		for (size_t j = 0; j < sizeof(hosts) / sizeof(hosts[0]); j++) {
			uint8_t in[128], out[128];
			size_t n = tail(in, hosts[i]);
			new_host = hosts[j];
			struct codec_iov iov = { in, n };
			bool changed;
			cr_assert(eq(i64, (int64_t)(codec_tags_rewrite_endpoints_fixed(&iov, 1, n, fn, NULL, out, &changed)), (int64_t)(CODEC_OK)), "%s → %s", hosts[i], hosts[j]);
			cr_assert(changed);
			cr_assert(strstr(hosts[j], hosts[i]) || !memmem(out, n, hosts[i], strlen(hosts[i])),
				  "the old host is gone: %s → %s",
				  hosts[i], hosts[j]);
			/* still a valid tag section of n bytes, tag 5 kept */
			struct codec_iov o = { out, n };
			struct codec_reader r;
			codec_reader_init(&r, &o, 1);
			r.flexible = true;
			codec_read_tags(&r, NULL, NULL, NULL);
			cr_assert(eq(i64, (int64_t)(codec_reader_finish(&r)), (int64_t)(CODEC_OK)), "%s → %s", hosts[i], hosts[j]);
			cr_assert(memmem(out, n, "\x05\x02\xaa\xbb", 4) != NULL, "tag 5 kept");
			/* in place when as long, or shorter by room for a filler field (3
			 * bytes at least); otherwise NodeEndpoints goes out empty */
			size_t a = strlen(hosts[i]), b = strlen(hosts[j]);
			bool fits = a == b || b + 3 <= a;
			cr_assert(eq(i64, (int64_t)(memmem(out, n, hosts[j], strlen(hosts[j])) != NULL), (int64_t)(fits)),
				     "%s → %s: %s", hosts[i], hosts[j],
				     fits ? "rewritten in place" : "sent empty");
		}
	}
}

Test(codec_stream, tags_grow_by_any_size_from_three_keeps_the_fields)
{
	/* a partition's tags: none, or DivergingEpoch (tag 0) and tag 2 */
	static const uint8_t none[] = { 0 };
	static const uint8_t some[] = { 2, 0, 3, 0xd1, 0xd2, 0xd3, 2, 1, 0xee };
	const struct { const uint8_t *p; size_t n; } in[] = { { none, 1 }, { some, sizeof(some) } };
	static uint8_t out[70000];
	for (size_t t = 0; t < 2; t++) {
		struct codec_iov iov = { (uint8_t *)in[t].p, in[t].n };
		for (size_t grow = 0; grow < 66000; grow += grow < 20000 ? 1 : 997) {
			enum codec_err err = codec_tags_grow(&iov, 1, in[t].n, grow, out);
			if (grow == 1 || grow == 2) {
				cr_assert(eq(i64, (int64_t)(err), (int64_t)(CODEC_ERR_LIMIT)), "grow %zu", grow);
				continue;
			}
			cr_assert(eq(i64, (int64_t)(err), (int64_t)(CODEC_OK)), "grow %zu", grow);
			/* a valid section of exactly n + grow bytes: the fields, then fillers */
			struct codec_iov o = { out, in[t].n + grow };
			struct codec_reader r;
			codec_reader_init(&r, &o, 1);
			r.flexible = true;
			uint32_t count = codec_read_uvarint(&r);
			uint32_t kept = in[t].p[0], prev = 0;
			cr_assert(le(i64, (int64_t)(count), (int64_t)(kept + 2)));
			for (uint32_t i = 0; i < count; i++) {
				uint32_t tag = codec_read_uvarint(&r);
				uint32_t size = codec_read_uvarint(&r);
				cr_assert(i == 0 || tag > prev, "increasing tags, grow %zu", grow);
				cr_assert(eq(i64, (int64_t)(tag >= CODEC_TAG_FILLER - 1), (int64_t)(i >= kept)), "grow %zu field %u", grow, i);
				codec_read_skip(&r, size);
				prev = tag;
			}
			cr_assert(eq(i64, (int64_t)(codec_reader_finish(&r)), (int64_t)(CODEC_OK)), "grow %zu", grow);
			if (kept)
				cr_assert_not(memcmp(out + 1, some + 1, sizeof(some) - 1), "fields kept byte for byte");
		}
	}
}

Test(codec_stream, batch_peek_reads_what_a_client_reads)
{
	uint8_t h[CODEC_BATCH_PEEK] = { 0 };
	/* baseOffset 300, batchLength 1249, magic 2, lastOffsetDelta 9, recordsCount 10 */
	h[6] = 0x01; h[7] = 0x2c;
	h[10] = 0x04; h[11] = 0xe1;
	h[16] = 2;
	h[26] = 9;
	h[60] = 10;
	struct codec_batch_head b;
	codec_batch_peek(h, sizeof(h), 5000, &b);
	cr_assert(eq(i64, (int64_t)(b.base), (int64_t)(300)));
	cr_assert(eq(i64, (int64_t)(b.last), (int64_t)(309)));
	cr_assert(eq(i64, (int64_t)(b.total), (int64_t)(1261)));
	cr_assert_not(b.partial);
	cr_assert(eq(i64, (int64_t)(b.records), (int64_t)(10)));
	cr_assert(codec_batch_kept(&b, 310));
	cr_assert_not(codec_batch_kept(&b, 309), "a batch reaching the limit is left out whole");
	cr_assert_not(codec_batch_kept(&b, -1), "unknown progress keeps nothing");
	/* the broker's trailing batch cut short: the rest of the record set */
	codec_batch_peek(h, sizeof(h), 700, &b);
	cr_assert(b.partial);
	cr_assert(eq(i64, (int64_t)(b.total), (int64_t)(700)));
	/* fewer bytes than a baseOffset: unreadable, never kept */
	codec_batch_peek(h, 5, 5, &b);
	cr_assert(eq(i64, (int64_t)(b.base), (int64_t)(-1)));
	cr_assert_not(codec_batch_kept(&b, 1000));
}

/* ---- Produce requests ------------------------------------------------------ */

struct seen {
	int16_t acks;
	int32_t timeout_ms;
	size_t nparts;
	int32_t index[64];
	int64_t span[64];
	char topic[64][32];
};

/* Walk a Produce request body in chunks as a proxy would; false on error. */
static bool walk_produce(const uint8_t *body, size_t len, int16_t v, size_t chunk, struct seen *out)
{
	struct codec_produce_stream ps;
	codec_produce_stream_init(&ps, v);
	memset(out, 0, sizeof(*out));
	size_t pos = 0, avail = chunk;
	char topic[32] = "";
	while (ps.stage != CODEC_STREAM_TAIL) {
		size_t have = pos + avail < len ? avail : len - pos;
		struct codec_iov one = { body + pos, have };
		size_t used, records;
		enum codec_err err = codec_produce_stream_next(&ps, &one, 1, &used, &records);
		if (err == CODEC_ERR_UNDERFLOW && pos + have < len) {
			avail += chunk;
			continue;
		}
		if (err != CODEC_OK || used + records > len - pos)
			return false;
		if (ps.unit == CODEC_STREAM_HEAD) {
			out->acks = ps.acks;
			out->timeout_ms = ps.timeout_ms;
		} else if (ps.unit == CODEC_STREAM_TOPIC && v < 13) {
			size_t n = (size_t)ps.topic.len < sizeof(topic) - 1 ? (size_t)ps.topic.len : sizeof(topic) - 1;
			memcpy(topic, body + pos + ps.topic.off, n);
			topic[n] = 0;
		} else if (ps.unit == CODEC_STREAM_PARTITION) {
			out->index[out->nparts] = ps.partition;
			strcpy(out->topic[out->nparts], topic);
			out->nparts++;
		}
		if (out->nparts)
			out->span[out->nparts - 1] = ps.offset_span;
		pos += used + records;
		avail = chunk;
	}
	return true;
}

Test(codec_stream, produce_scan_matches_the_decoder_for_every_version_and_chunk)
{
	for (int16_t v = 3; v <= 13; v++) {
		struct golden g;
		golden_load_v(&g, "produce_req", true, CODEC_API_PRODUCE, v);
		struct codec_iov body = golden_body(&g);
		struct codec_produce_request req;
		cr_assert(eq(i64, (int64_t)(codec_produce_request_decode(&body, 1, v, &req)), (int64_t)(CODEC_OK)));
		for (size_t chunk = 1; chunk <= body.len; chunk++) {
			struct seen s;
			cr_assert(walk_produce(body.base, body.len, v, chunk, &s), "v%d chunk %zu", v, chunk);
			cr_assert(eq(i64, (int64_t)(s.acks), (int64_t)(req.acks)));
			cr_assert(eq(i64, (int64_t)(s.timeout_ms), (int64_t)(req.timeout_ms)));
			size_t i = 0;
			for (size_t t = 0; t < req.ntopics; t++)
				for (size_t p = 0; p < req.topics[t].npartitions; p++, i++) {
					cr_assert(eq(i64, (int64_t)(s.index[i]), (int64_t)(req.topics[t].partitions[p].index)));
					cr_assert(eq(i64, (int64_t)(s.span[i]), (int64_t)(req.topics[t].partitions[p].offset_span)),
						     "v%d chunk %zu partition %zu", v, chunk, i);
					if (v < 13)
						cr_assert_str_eq(s.topic[i], req.topics[t].name);
				}
			cr_assert(eq(i64, (int64_t)(s.nparts), (int64_t)(i)));
		}
		codec_produce_request_free(&req);
		golden_free(&g);
	}
}

Test(codec_stream, produce_truncated_bodies_fail)
{
	for (int16_t v = 3; v <= 13; v++) {
		struct golden g;
		golden_load_v(&g, "produce_req", true, CODEC_API_PRODUCE, v);
		struct codec_iov body = golden_body(&g);
		for (size_t n = 0; n + 1 < body.len; n++) {
			struct seen s;
			struct codec_iov cut = { body.base, n };
			struct codec_produce_request req;
			bool dec = codec_produce_request_decode(&cut, 1, v, &req) == CODEC_OK;
			codec_produce_request_free(&req);
			/* a prefix the decoder rejects never walks to the tail with the same results */
			if (!dec && walk_produce(body.base, n, v, 3, &s)) {
				/* only a prefix ending exactly before the top-level tags can */
				cr_assert(v >= 9, "v%d prefix %zu walked", v, n);
			}
		}
		golden_free(&g);
	}
}
