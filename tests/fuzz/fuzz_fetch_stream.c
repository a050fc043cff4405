/*
 * Fuzz codec_fetch_stream_next as a proxy drives it: the body
 * arrives in pieces (every UNDERFLOW gets a few more bytes), structure units
 * are consumed, record runs skipped. Whenever codec_fetch_response_scan
 * accepts the body, the stream reaches its tail at the same offset; the tail
 * then goes through codec_tags_rewrite_endpoints_fixed, whose output keeps
 * its length. The streamed consumer clamp's pieces run on the way: every
 * record run walked batch by batch (codec_batch_peek), every partition's
 * tags grown by a filler (codec_tags_grow).
 */
#include "fuzz.h"

static char host[64];

static int endpoint_fn(void *ctx, int32_t node_id, const char *h, int32_t port,
		       const char **out_host, int32_t *out_port)
{
	(void)ctx;
	(void)h;
	(void)port;
	size_t n = (size_t)node_id % (sizeof(host) - 1);
	memset(host, 'h', n);
	host[n] = 0;
	*out_host = host;
	*out_port = 19092;
	return 0;
}

/* `n` bytes at `p` must be exactly one tag section. */
static void tags_walk_or_abort(uint8_t *p, size_t n)
{
	struct codec_iov o = { p, n };
	struct codec_reader r;
	codec_reader_init(&r, &o, 1);
	r.flexible = true;
	codec_read_tags(&r, NULL, NULL, NULL);
	if (codec_reader_finish(&r) != CODEC_OK)
		abort();
}

/* A unit after a partition (its tags first) grown as the streamed clamp
 * grows it: a valid tag section `grow` bytes longer, or a clean refusal. */
static void grow_tags(const uint8_t *p, size_t n, size_t grow)
{
	struct codec_iov in = { (uint8_t *)p, n };
	struct codec_reader r;
	codec_reader_init(&r, &in, 1);
	r.flexible = true;
	codec_read_tags(&r, NULL, NULL, NULL);
	if (r.err)
		return;
	size_t sec = r.off;
	uint8_t *out = malloc(sec + grow);
	if (codec_tags_grow(&in, 1, sec, grow, out) == CODEC_OK)
		tags_walk_or_abort(out, sec + grow);
	free(out);
}

/* Bytes the batch at `p` takes (`left` bytes of the record set remain); never 0. */
static size_t batch_total(const uint8_t *p, size_t left)
{
	struct codec_batch_head b;
	codec_batch_peek(p, left < CODEC_BATCH_PEEK ? left : CODEC_BATCH_PEEK, left, &b);
	if (b.total == 0 || b.total > left)
		abort();
	return b.total;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct codec_iov iov[2];
	if (size < 2)
		return 0;
	int16_t v = fuzz_input(data, size, 4, 18, iov);
	const uint8_t *body = data + 2;
	size_t len = size - 2, pos = 0, avail = data[1] % 7 + 1;
	struct codec_fetch_stream fs;
	codec_fetch_stream_init(&fs, v);
	enum codec_err err = CODEC_OK;
	while (fs.stage != CODEC_STREAM_TAIL) {
		size_t have = pos + avail < len ? avail : len - pos;
		struct codec_iov one = { body + pos, have };
		size_t used, records;
		enum codec_stream_stage st = fs.stage;
		err = codec_fetch_stream_next(&fs, &one, 1, &used, &records);
		if (err == CODEC_ERR_UNDERFLOW && pos + have < len) {
			avail += 1 + avail / 2;
			continue;
		}
		if (err != CODEC_OK)
			break;
		if (used > have || used + records > len - pos)
			break; /* a record run past the end: the proxy refuses it */
		if (fs.flexible && st == CODEC_STREAM_PART_END)
			grow_tags(body + pos, used, (size_t)data[0] * 257);
		for (size_t at = 0; at < records;) /* the streamed clamp's batch walk */
			at += batch_total(body + pos + used + at, records - at);
		pos += used + records;
		avail = 3;
	}
	struct codec_fetch_response_scan s;
	if (codec_fetch_response_scan(iov, 2, v, &s) == CODEC_OK &&
	    (fs.stage != CODEC_STREAM_TAIL || pos != s.tags_off))
		abort();
	codec_fetch_response_scan_free(&s);
	if (fs.stage == CODEC_STREAM_TAIL && pos <= len) {
		struct codec_iov tail = { body + pos, len - pos };
		uint8_t *out = malloc(len - pos + 1);
		bool changed;
		if (codec_tags_rewrite_endpoints_fixed(&tail, 1, len - pos, endpoint_fn, NULL, out,
						       &changed) == CODEC_OK && changed) {
			/* the result is a tag section of the same length that walks cleanly */
			tags_walk_or_abort(out, len - pos);
		}
		free(out);
	}
	return 0;
}
