/*
 * codec benchmark: prints figures, asserts nothing.
 *
 *  1. Produce request v9 (1 topic, 1 partition, records blob of 1 MiB:
 *     one 1 MiB batch, and 16 batches of 64 KiB), body held in 64 KiB
 *     segments like an evbuffer: request header + body decode + free.
 *  2. Metadata response v12 with 3 brokers and 1,000 partitions
 *     (10 topics x 100): endpoint rewrite (splice), and for comparison a
 *     full decode + encode.
 *
 * "bytes copied" counts bytes of the frame copied into codec-owned memory
 * (decoded strings) or into the output (splice / encode).
 *
 *   build/tests/codec/codec-bench [iterations]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/codec/oracle/oracle.h"

#define SEG (64 * 1024)
#define MiB (1024 * 1024)

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* One RecordBatch v2 of `len` bytes in total (header + opaque record bytes). */
static void put_batch(struct codec_buf *b, int64_t base_offset, size_t len, int32_t nrecords)
{
	codec_write_i64(b, base_offset);
	codec_write_i32(b, (int32_t)(len - 12));
	codec_write_i32(b, 0);            /* partitionLeaderEpoch */
	codec_write_i8(b, 2);             /* magic */
	codec_write_i32(b, 0);            /* crc (not checked) */
	codec_write_i16(b, 0);            /* attributes */
	codec_write_i32(b, nrecords - 1); /* lastOffsetDelta */
	codec_write_i64(b, 1700000000000LL);
	codec_write_i64(b, 1700000000000LL);
	codec_write_i64(b, 4242);         /* producerId */
	codec_write_i16(b, 0);
	codec_write_i32(b, 0);
	codec_write_i32(b, nrecords);
	size_t fill = len - 61;
	uint8_t *junk = calloc(1, fill);
	codec_write_raw(b, junk, fill);
	free(junk);
}

/* Full Produce v9 request frame body (header + body), records = nbatches of MiB/nbatches. */
static void build_produce(struct codec_buf *b, int nbatches)
{
	codec_buf_init(b, 4 * MiB);
	codec_write_i16(b, CODEC_API_PRODUCE);
	codec_write_i16(b, 9);
	codec_write_i32(b, 1);
	codec_write_i16(b, 5);
	codec_write_raw(b, "bench", 5);
	b->flexible = true;
	codec_write_uvarint(b, 0);          /* header tags */
	codec_write_str(b, NULL);           /* TransactionalId */
	codec_write_i16(b, -1);
	codec_write_i32(b, 30000);
	codec_write_array_len(b, 1);
	codec_write_str(b, "bench-topic");
	codec_write_array_len(b, 1);
	codec_write_i32(b, 0);
	codec_write_uvarint(b, MiB + 1);    /* compact records length */
	for (int i = 0; i < nbatches; i++)
		put_batch(b, 0, MiB / nbatches, 100);
	codec_write_uvarint(b, 0);
	codec_write_uvarint(b, 0);
	codec_write_uvarint(b, 0);
}

static int split(const struct codec_buf *b, struct codec_iov *iov, int max)
{
	int n = 0;
	for (size_t off = 0; off < b->len && n < max; off += SEG, n++) {
		iov[n].base = b->data + off;
		iov[n].len = b->len - off < SEG ? b->len - off : SEG;
	}
	return n;
}

static void bench_produce(int iters, int nbatches)
{
	struct codec_buf frame;
	build_produce(&frame, nbatches);
	struct codec_iov iov[128], body[128];
	int niov = split(&frame, iov, 128);
	size_t copied = 0;
	double t0 = now_ns();
	for (int i = 0; i < iters; i++) {
		struct codec_request_header h;
		struct codec_produce_request m;
		if (codec_request_header_decode(iov, niov, &h) != CODEC_OK)
			abort();
		int nb = codec_iov_skip(iov, niov, h.len, body, 128);
		if (codec_produce_request_decode(body, nb, h.api_version, &m) != CODEC_OK ||
		    m.topics[0].partitions[0].nbatches != nbatches)
			abort();
		copied = strlen(m.topics[0].name) + (m.transactional_id ? strlen(m.transactional_id) : 0);
		codec_produce_request_free(&m);
	}
	double ns = (now_ns() - t0) / iters;
	printf("produce v9 decode, %zu-byte frame in %d segments, %2d batch(es): %9.0f ns/frame, "
	       "%zu bytes copied (records: 0)\n", frame.len, niov, nbatches, ns, copied);
	codec_buf_free(&frame);
}

/* Metadata v12 body: 3 brokers, 10 topics x 100 partitions, replicas 3. */
static void build_metadata(struct codec_buf *b)
{
	codec_buf_init(b, 4 * MiB);
	b->flexible = true;
	codec_write_i32(b, 0);
	codec_write_array_len(b, 3);
	for (int i = 1; i <= 3; i++) {
		char host[64];
		snprintf(host, sizeof(host), "broker-%d.kafka.svc.cluster.local", i);
		codec_write_i32(b, i);
		codec_write_str(b, host);
		codec_write_i32(b, 9092);
		codec_write_str(b, "rack-a");
		codec_write_uvarint(b, 0);
	}
	codec_write_str(b, "cluster-id");
	codec_write_i32(b, 1);
	codec_write_array_len(b, 10);
	for (int t = 0; t < 10; t++) {
		char name[32];
		snprintf(name, sizeof(name), "topic-%d", t);
		uint8_t id[16] = {(uint8_t)t, 1};
		codec_write_i16(b, 0);
		codec_write_str(b, name);
		codec_write_uuid(b, id);
		codec_write_bool(b, false);
		codec_write_array_len(b, 100);
		for (int p = 0; p < 100; p++) {
			struct codec_int32s r = {(int32_t[]){1, 2, 3}, 3}, none = {NULL, 0};
			codec_write_i16(b, 0);
			codec_write_i32(b, p);
			codec_write_i32(b, 1 + p % 3);
			codec_write_i32(b, 5);
			codec_write_int32s(b, &r);
			codec_write_int32s(b, &r);
			codec_write_int32s(b, &none);
			codec_write_uvarint(b, 0);
		}
		codec_write_i32(b, INT32_MIN);
		codec_write_uvarint(b, 0);
	}
	codec_write_uvarint(b, 0);
}

static int map_fn(void *ctx, int32_t node_id, const char *host, int32_t port, const char **out_host,
		  int32_t *out_port)
{
	static const char *const hosts[] = {"", "sg-1.local", "sg-2.local", "sg-3.local"};
	*out_host = hosts[node_id];
	*out_port = 19092;
	return 0;
}

static void bench_metadata(int iters)
{
	struct codec_buf body;
	build_metadata(&body);
	struct codec_iov iov[64];
	int niov = split(&body, iov, 64);
	size_t copied = 0;
	double t0 = now_ns();
	for (int i = 0; i < iters; i++) {
		struct codec_splice s;
		if (codec_response_rewrite_endpoints(CODEC_API_METADATA, 12, iov, niov, map_fn, NULL, &s) ||
		    !s.changed)
			abort();
		copied = s.ins.len;
		codec_buf_free(&s.ins);
	}
	double ns = (now_ns() - t0) / iters;
	printf("metadata v12 rewrite, %zu-byte body, 1000 partitions:        %9.0f ns/frame, "
	       "%zu bytes copied (splice)\n", body.len, ns, copied);

	t0 = now_ns();
	for (int i = 0; i < iters; i++) {
		struct codec_metadata_response m;
		struct codec_buf out;
		codec_buf_init(&out, 4 * MiB);
		if (codec_metadata_response_decode(iov, niov, 12, &m) ||
		    codec_metadata_response_encode(&m, 12, &out))
			abort();
		copied = out.len;
		codec_metadata_response_free(&m);
		codec_buf_free(&out);
	}
	ns = (now_ns() - t0) / iters;
	printf("metadata v12 full decode+encode (comparison):                %9.0f ns/frame, "
	       "%zu bytes copied (encode)\n", ns, copied);
	codec_buf_free(&body);
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 20000;
	if (iters <= 0)
		iters = 1;
	bench_produce(iters, 1);
	bench_produce(iters, 16);
	bench_metadata(iters / 10 > 0 ? iters / 10 : 1);
	return 0;
}
