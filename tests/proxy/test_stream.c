/*
 * Unit tests of proxy/stream*.c and the upstream side of proxy/conn_frames.c: large
 * responses are forwarded as they arrive — split at every byte
 * boundary, pipelined behind held entries, the Fetch v16+ tail rewritten to
 * the same length, a client that stops reading (backpressure reaches the
 * broker, memory stays bounded), either side closing mid-stream. The client
 * and the broker are the test's ends of two socketpairs (plaintext, so the
 * record bytes go through splice(2) when nothing is buffered).
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pair.h"

#define BROKER_HOST "broker-internal.example"
#define ADVERTISED "127.0.0.1"

static const char *yaml =
	"mode: sidecar\n"
	"listen:\n  kafka: 127.0.0.1:19092\n"
	"upstream:\n  broker: 127.0.0.1:9092\n"
	"advertise:\n  template: \"" ADVERTISED ":19092\"\n"
	"mirrors: []\n"
	"limits:\n  max_frame_bytes: 100000\n";

static void fixture_init(struct fixture *f)
{
	pair_init(f, yaml);
}

static void fixture_fini(struct fixture *f)
{
	pair_fini(f);
}

/* ---- frames ---------------------------------------------------------------- */

/*
 * A Fetch v16 response frame (size prefix included): one topic, `nparts`
 * partitions of `records` pattern bytes each, NodeEndpoints naming `host`
 * (none when NULL).
 */
static struct codec_buf fetch16(int32_t correlation_id, int nparts, size_t records, const char *host)
{
	struct codec_buf b = PAIR_BUF;
	codec_write_i32(&b, 0); /* size, patched below */
	codec_write_i32(&b, correlation_id);
	codec_write_i8(&b, 0);  /* header tags */
	codec_write_i32(&b, 0); /* ThrottleTimeMs */
	codec_write_i16(&b, 0); /* ErrorCode */
	codec_write_i32(&b, 7); /* SessionId */
	codec_write_uvarint(&b, 2); /* one topic */
	uint8_t id[16];
	memset(id, 0xab, sizeof(id));
	codec_write_raw(&b, id, 16);
	codec_write_uvarint(&b, (uint32_t)nparts + 1);
	for (int p = 0; p < nparts; p++) {
		codec_write_i32(&b, p);
		codec_write_i16(&b, 0);
		codec_write_i64(&b, 1000); /* HighWatermark */
		codec_write_i64(&b, 1000); /* LastStableOffset */
		codec_write_i64(&b, 0);    /* LogStartOffset */
		codec_write_i8(&b, 0);     /* AbortedTransactions: null */
		codec_write_i32(&b, -1);   /* PreferredReadReplica */
		codec_write_uvarint(&b, (uint32_t)records + 1);
		for (size_t i = 0; i < records; i++)
			codec_write_i8(&b, (uint8_t)(i * 7 + (size_t)p));
		codec_write_i8(&b, 0); /* partition tags */
	}
	codec_write_i8(&b, 0); /* topic tags */
	if (host) {
		struct codec_buf ne = PAIR_FLEX_BUF;
		codec_write_uvarint(&ne, 2); /* one endpoint */
		codec_write_i32(&ne, 1);
		codec_write_str(&ne, host);
		codec_write_i32(&ne, 9092);
		codec_write_i8(&ne, 0); /* Rack null */
		codec_write_i8(&ne, 0); /* tags */
		codec_write_uvarint(&b, 1); /* one tagged field */
		codec_write_uvarint(&b, 0); /* NodeEndpoints */
		codec_write_uvarint(&b, (uint32_t)ne.len);
		codec_write_raw(&b, ne.data, ne.len);
		codec_buf_free(&ne);
	} else {
		codec_write_i8(&b, 0);
	}
	pair_frame_seal(&b);
	return b;
}

/* An IN_FLIGHT Fetch v16 entry, as if the client had sent the request. */
static struct proxy_entry *fetch_entry(struct fixture *f, int32_t correlation_id)
{
	struct proxy_entry *e = proxy_entry_new(f->c, PROXY_ENTRY_KAFKA);
	e->api_key = CODEC_API_FETCH;
	e->api_version = e->client_version = 16;
	e->correlation_id = correlation_id;
	return e;
}

/* ---- I/O helpers ----------------------------------------------------------- */

static void loop_once(struct fixture *f)
{
	event_base_loop(f->base, EVLOOP_NONBLOCK);
}

/* Write what the test's end `fd` takes now; returns bytes written. */
static size_t end_write(int fd, const uint8_t *p, size_t n)
{
	ssize_t w = write(fd, p, n);
	return w > 0 ? (size_t)w : 0;
}

/* Read what the test's end `fd` got into `out` (appending); returns bytes read. */
static size_t end_read(int fd, struct codec_buf *out)
{
	uint8_t tmp[65536];
	size_t total = 0;
	for (;;) {
		ssize_t r = read(fd, tmp, sizeof(tmp));
		if (r <= 0)
			break;
		codec_write_raw(out, tmp, (size_t)r);
		total += (size_t)r;
	}
	return total;
}

static size_t broker_write(struct fixture *f, const uint8_t *p, size_t n) { return end_write(f->up, p, n); }
static size_t client_write(struct fixture *f, const uint8_t *p, size_t n) { return end_write(f->cl, p, n); }
static size_t client_read(struct fixture *f, struct codec_buf *out) { return end_read(f->cl, out); }
static size_t broker_read(struct fixture *f, struct codec_buf *out) { return end_read(f->up, out); }

/*
 * Write `frame` from *off up to `end` at one end (the client's when
 * `from_client`, else the broker's), pumping the loop; collect what the other
 * end gets into `out`.
 */
static void pass_upto(struct fixture *f, bool from_client, const struct codec_buf *frame, size_t *off, size_t end,
		      struct codec_buf *out)
{
	int wfd = from_client ? f->cl : f->up, rfd = from_client ? f->up : f->cl;
	while (*off < end) {
		*off += end_write(wfd, frame->data + *off, end - *off);
		loop_once(f);
		end_read(rfd, out);
	}
}

/* pass_upto() the whole of `frame` in pieces ending at `cuts`, then pump
 * until the other end has as many bytes as `frame` (or gives up). */
static void pass(struct fixture *f, bool from_client, const struct codec_buf *frame, const size_t *cuts, int ncuts,
		 struct codec_buf *out)
{
	int rfd = from_client ? f->up : f->cl;
	size_t off = 0;
	for (int i = 0; i <= ncuts; i++) {
		pass_upto(f, from_client, frame, &off, i < ncuts ? cuts[i] : frame->len, out);
		loop_once(f);
		end_read(rfd, out);
	}
	for (int i = 0; i < 200 && out->len < frame->len; i++) {
		loop_once(f);
		end_read(rfd, out);
		usleep(100);
	}
}

/* Feed `frame` to the broker side in pieces ending at `cuts`; collect the client side. */
static void feed(struct fixture *f, const struct codec_buf *frame, const size_t *cuts, int ncuts, struct codec_buf *out)
{
	pass(f, false, frame, cuts, ncuts, out);
}

/* Send `frame` from the client in pieces ending at `cuts`; collect what the broker gets. */
static void send_request(struct fixture *f, const struct codec_buf *frame, const size_t *cuts, int ncuts,
			 struct codec_buf *out)
{
	pass(f, true, frame, cuts, ncuts, out);
}

/*
 * Write `frame` (above max_frame_bytes) at one end while the other end does
 * not read: the writer is stopped before half of it is in, with the bytes
 * buffered in user space bounded; then the other end reads and gets `frame`
 * whole and unchanged.
 */
static void check_reader_pauses_writer(struct fixture *f, bool from_client, const struct codec_buf *frame)
{
	int wfd = from_client ? f->cl : f->up, rfd = from_client ? f->up : f->cl;
	size_t off = 0, peak = 0;
	for (int i = 0; i < 3000; i++) {
		off += end_write(wfd, frame->data + off, frame->len - off);
		loop_once(f);
		struct bufferevent *in = from_client ? f->c->client : f->c->upstream;
		struct bufferevent *out = from_client ? f->c->upstream : f->c->client;
		size_t user = evbuffer_get_length(bufferevent_get_input(in)) +
			      evbuffer_get_length(bufferevent_get_output(out));
		if (user > peak)
			peak = user;
	}
	cr_assert(lt(i64, (int64_t)(off), (int64_t)(frame->len / 2)), "the %s was stopped (%zu of %zu written)",
		  from_client ? "client" : "broker", off, frame->len);
	cr_assert(le(i64, (int64_t)(peak), (int64_t)((1u << 20) + (128u << 10))), "user-space bytes bounded: %zu", peak);
	/* the other end reads again: everything arrives */
	struct codec_buf got = PAIR_BUF;
	for (int i = 0; i < 200000 && got.len < frame->len; i++) {
		off += end_write(wfd, frame->data + off, frame->len - off);
		loop_once(f);
		end_read(rfd, &got);
	}
	cr_assert(eq(i64, (int64_t)(got.len), (int64_t)(frame->len)));
	cr_assert_not(memcmp(got.data, frame->data, frame->len));
	codec_buf_free(&got);
}

static bool contains(const struct codec_buf *b, const char *s)
{
	return memmem(b->data, b->len, s, strlen(s)) != NULL;
}

/* ---- tests ----------------------------------------------------------------- */

Test(proxy_stream, passthrough_fetch_streams_byte_for_byte_at_every_split)
{
	/* Fetch v16 without NodeEndpoints: the client gets exactly the broker's bytes */
	struct codec_buf frame = fetch16(42, 2, 40000, NULL);
	cr_assert(gt(i64, (int64_t)(frame.len), (int64_t)(PROXY_STREAM_MIN)));
	size_t step = 1;
	for (size_t cut = 1; cut < frame.len; cut += step) {
		/* every boundary in the structure, a sample inside the records */
		step = cut < 200 || cut > frame.len - 200 || (cut > 40100 && cut < 40300) ? 1 : 997;
		struct fixture f;
		fixture_init(&f);
		fetch_entry(&f, 42);
		struct codec_buf out = PAIR_BUF;
		feed(&f, &frame, &cut, 1, &out);
		cr_assert(eq(i64, (int64_t)(out.len), (int64_t)(frame.len)), "cut at %zu: got %zu of %zu bytes", cut, out.len, frame.len);
		cr_assert_not(memcmp(out.data, frame.data, frame.len), "cut at %zu: bytes differ", cut);
		cr_assert(eq(i64, (int64_t)(f.c->nfifo), (int64_t)(0)));
		cr_assert(eq(i64, (int64_t)(f.c->from_upstream.state), (int64_t)(PROXY_DIR_FRAME)));
		codec_buf_free(&out);
		fixture_fini(&f);
	}
	codec_buf_free(&frame);
}

Test(proxy_stream, one_byte_at_a_time)
{
	struct codec_buf frame = fetch16(5, 3, 30000, BROKER_HOST);
	struct fixture f;
	fixture_init(&f);
	fetch_entry(&f, 5);
	size_t *cuts = malloc(frame.len * sizeof(*cuts));
	int n = 0;
	for (size_t i = 1; i < frame.len; i += (i < 300 || i > frame.len - 300) ? 1 : 509)
		cuts[n++] = i;
	struct codec_buf out = PAIR_BUF;
	feed(&f, &frame, cuts, n, &out);
	cr_assert(eq(i64, (int64_t)(out.len), (int64_t)(frame.len)));
	cr_assert_not(contains(&out, BROKER_HOST), "no broker address reaches the client");
	cr_assert(contains(&out, ADVERTISED));
	free(cuts);
	codec_buf_free(&out);
	codec_buf_free(&frame);
	fixture_fini(&f);
}

Test(proxy_stream, tail_endpoints_rewritten_to_the_same_length)
{
	/* the size prefix went out first: the tail keeps its length (filler tag) */
	struct codec_buf frame = fetch16(9, 1, 100000, BROKER_HOST);
	struct fixture f;
	fixture_init(&f);
	fetch_entry(&f, 9);
	struct codec_buf out = PAIR_BUF;
	feed(&f, &frame, NULL, 0, &out);
	cr_assert(eq(i64, (int64_t)(out.len), (int64_t)(frame.len)));
	cr_assert_not(contains(&out, BROKER_HOST));
	cr_assert(contains(&out, ADVERTISED));
	/* everything before the tail is byte for byte */
	size_t tail = frame.len - (1 + 1 + 1 + 1 + 4 + 1 + strlen(BROKER_HOST) + 4 + 1 + 1);
	cr_assert_not(memcmp(out.data, frame.data, tail));
	codec_buf_free(&out);
	codec_buf_free(&frame);
	fixture_fini(&f);
}

Test(proxy_stream, longer_advertised_address_sends_empty_endpoints)
{
	/* "b" → "127.0.0.1" does not fit: NodeEndpoints goes out empty, padded */
	struct codec_buf frame = fetch16(9, 1, 100000, "b");
	struct fixture f;
	fixture_init(&f);
	fetch_entry(&f, 9);
	struct codec_buf out = PAIR_BUF;
	feed(&f, &frame, NULL, 0, &out);
	cr_assert(eq(i64, (int64_t)(out.len), (int64_t)(frame.len)));
	size_t body_end = frame.len;
	/* tail: count 2, tag 0 size 1 empty array, then the filler */
	size_t tail_len = 1 + 1 + 1 + (1 + 4 + 2 + 4 + 1 + 1);
	const uint8_t *t = out.data + body_end - tail_len;
	cr_assert(eq(i64, (int64_t)(t[0]), (int64_t)(2)));
	cr_assert(eq(i64, (int64_t)(t[1]), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(t[2]), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(t[3]), (int64_t)(1)));
	codec_buf_free(&out);
	codec_buf_free(&frame);
	fixture_fini(&f);
}

Test(proxy_stream, small_frame_rewrite_changes_a_length)
{
	/* below PROXY_STREAM_MIN the frame is buffered whole and the rewrite may change its size */
	struct codec_buf frame = fetch16(3, 1, 1000, "b");
	struct fixture f;
	fixture_init(&f);
	fetch_entry(&f, 3);
	struct codec_buf out = PAIR_BUF;
	feed(&f, &frame, NULL, 0, &out);
	for (int i = 0; i < 50; i++) {
		loop_once(&f);
		client_read(&f, &out);
	}
	cr_assert(eq(i64, (int64_t)(out.len), (int64_t)(frame.len + strlen(ADVERTISED) - 1)), "the host grew by %zu bytes",
		     strlen(ADVERTISED) - 1);
	uint32_t size = (uint32_t)out.data[0] << 24 | (uint32_t)out.data[1] << 16 | (uint32_t)out.data[2] << 8 | out.data[3];
	cr_assert(eq(i64, (int64_t)(size), (int64_t)(out.len - 4)), "the size prefix follows the rewrite");
	cr_assert(contains(&out, ADVERTISED));
	codec_buf_free(&out);
	codec_buf_free(&frame);
	fixture_fini(&f);
}

Test(proxy_stream, pipelined_behind_a_held_entry_in_order_and_bounded)
{
	struct fixture f;
	fixture_init(&f);
	struct proxy_entry *held = proxy_entry_new(f.c, PROXY_ENTRY_KAFKA);
	held->api_key = CODEC_API_PRODUCE;
	held->correlation_id = 1;
	proxy_entry_set_state(f.c, held, PROXY_ENTRY_HELD);
	fetch_entry(&f, 2);
	fetch_entry(&f, 3);
	struct codec_buf a = fetch16(2, 4, 1000000, NULL);   /* 4 MB: more than the window */
	struct codec_buf b = fetch16(3, 1, 200000, BROKER_HOST);
	struct codec_buf both = PAIR_BUF;
	codec_write_raw(&both, a.data, a.len);
	codec_write_raw(&both, b.data, b.len);
	size_t off = 0, peak = 0;
	struct codec_buf out = PAIR_BUF;
	for (int i = 0; i < 2000; i++) {
		off += broker_write(&f, both.data + off, both.len - off);
		loop_once(&f);
		size_t user = f.c->queued_bytes +
			      evbuffer_get_length(bufferevent_get_input(f.c->upstream)) +
			      evbuffer_get_length(bufferevent_get_output(f.c->client));
		if (user > peak)
			peak = user;
	}
	cr_assert(eq(i64, (int64_t)(client_read(&f, &out)), (int64_t)(0)), "nothing overtakes the held head");
	cr_assert(f.c->upstream_paused, "the broker is not read past the window");
	cr_assert(lt(i64, (int64_t)(off), (int64_t)(both.len)), "backpressure reached the broker");
	cr_assert(le(i64, (int64_t)(peak), (int64_t)((1u << 20) + (128u << 10))), "user-space bytes bounded: %zu", peak);
	/* release the head: everything follows, in order */
	held->out = evbuffer_new();
	evbuffer_add(held->out, "HELD", 4);
	proxy_entry_set_state(f.c, held, PROXY_ENTRY_READY);
	proxy_fifo_flush(f.c);
	for (int i = 0; i < 100000 && out.len < 4 + both.len; i++) {
		off += broker_write(&f, both.data + off, both.len - off);
		loop_once(&f);
		client_read(&f, &out);
	}
	cr_assert(eq(i64, (int64_t)(out.len), (int64_t)(4 + both.len)));
	cr_assert_not(memcmp(out.data, "HELD", 4));
	cr_assert_not(memcmp(out.data + 4, a.data, a.len), "the first streamed response whole and in order");
	cr_assert_not(contains(&out, BROKER_HOST));
	cr_assert(eq(i64, (int64_t)(f.c->nfifo), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(f.c->queued_bytes), (int64_t)(0)));
	codec_buf_free(&a);
	codec_buf_free(&b);
	codec_buf_free(&both);
	codec_buf_free(&out);
	fixture_fini(&f);
}

Test(proxy_stream, client_that_stops_reading_pauses_the_broker)
{
	struct fixture f;
	fixture_init(&f);
	fetch_entry(&f, 7);
	struct codec_buf frame = fetch16(7, 1, 30000000, NULL); /* 30 MB, above max_frame_bytes */
	check_reader_pauses_writer(&f, false, &frame);
	codec_buf_free(&frame);
	fixture_fini(&f);
}

Test(proxy_stream, broker_closes_mid_stream_closes_the_client)
{
	struct fixture f;
	fixture_init(&f);
	fetch_entry(&f, 7);
	struct codec_buf frame = fetch16(7, 1, 3000000, NULL);
	size_t off = 0;
	struct codec_buf out = PAIR_BUF;
	pass_upto(&f, false, &frame, &off, frame.len / 2, &out);
	close(f.up);
	f.up = -1;
	for (int i = 0; i < 200 && f.srv.nconns > 0; i++) {
		loop_once(&f);
		client_read(&f, &out);
	}
	cr_assert(eq(i64, (int64_t)(f.srv.nconns), (int64_t)(0)), "the pair is freed");
	client_read(&f, &out);
	cr_assert(eq(i64, (int64_t)(out.len), (int64_t)(off)), "every byte read was delivered (%zu of %zu)", out.len, off);
	cr_assert(eq(i64, (int64_t)(read(f.cl, out.data, 1)), (int64_t)(0)), "then the client sees the close");
	codec_buf_free(&out);
	codec_buf_free(&frame);
	fixture_fini(&f);
}

Test(proxy_stream, client_closes_mid_stream_rest_is_read_and_dropped)
{
	struct fixture f;
	fixture_init(&f);
	fetch_entry(&f, 7);
	struct codec_buf frame = fetch16(7, 1, 3000000, NULL);
	size_t off = 0;
	struct codec_buf out = PAIR_BUF;
	pass_upto(&f, false, &frame, &off, frame.len / 3, &out);
	close(f.cl);
	f.cl = -1;
	for (int i = 0; i < 20000 && off < frame.len; i++) {
		off += broker_write(&f, frame.data + off, frame.len - off);
		loop_once(&f);
	}
	cr_assert(eq(i64, (int64_t)(off), (int64_t)(frame.len)), "the broker's response is read to its end (no RST)");
	for (int i = 0; i < 200 && f.srv.nconns > 0; i++)
		loop_once(&f);
	cr_assert(eq(i64, (int64_t)(f.srv.nconns), (int64_t)(0)), "then the pair is freed (linger done)");
	uint8_t x;
	cr_assert(eq(i64, (int64_t)(read(f.up, &x, 1)), (int64_t)(0)), "the broker sees a clean close");
	codec_buf_free(&out);
	codec_buf_free(&frame);
	fixture_fini(&f);
}

/* ---- requests: Produce streamed upstream ------------------------------------ */

/* A Produce v9 request frame: one topic "t", `nbatches` batches of
 * `payload` bytes (lastOffsetDelta 4 each) in partition 3. */
static struct codec_buf produce9(int32_t correlation_id, int16_t version, int16_t acks, int nbatches,
				 size_t payload)
{
	struct codec_buf b = PAIR_FLEX_BUF;
	codec_write_i32(&b, 0);
	codec_write_i16(&b, 0);       /* Produce */
	codec_write_i16(&b, version);
	codec_write_i32(&b, correlation_id);
	codec_write_i16(&b, 4);
	codec_write_raw(&b, "test", 4); /* client id */
	codec_write_i8(&b, 0);        /* header tags */
	codec_write_i8(&b, 0);        /* TransactionalId null */
	codec_write_i16(&b, acks);
	codec_write_i32(&b, 30000);
	codec_write_uvarint(&b, 2);       /* one topic */
	if (version >= 13) {
		uint8_t id[16];
		memset(id, 0x5a, sizeof(id));
		codec_write_raw(&b, id, 16); /* TopicId */
	} else {
		codec_write_str(&b, "t");
	}
	codec_write_uvarint(&b, 2);       /* one partition */
	codec_write_i32(&b, 3);
	size_t batch = 61 + payload;
	codec_write_uvarint(&b, (uint32_t)(batch * (size_t)nbatches) + 1);
	for (int i = 0; i < nbatches; i++) {
		codec_write_i64(&b, 0);
		codec_write_i32(&b, (int32_t)(49 + payload));
		codec_write_i32(&b, 0);
		codec_write_i8(&b, 2);    /* magic */
		codec_write_i32(&b, 0);   /* crc (not checked by syncgate) */
		codec_write_i16(&b, 0);
		codec_write_i32(&b, 4);   /* lastOffsetDelta */
		codec_write_i64(&b, 0);
		codec_write_i64(&b, 0);
		codec_write_i64(&b, -1);
		codec_write_i16(&b, -1);
		codec_write_i32(&b, -1);
		codec_write_i32(&b, 5);
		for (size_t j = 0; j < payload; j++)
			codec_write_i8(&b, (uint8_t)(j + (size_t)i));
	}
	codec_write_i8(&b, 0); /* partition tags */
	codec_write_i8(&b, 0); /* topic tags */
	codec_write_i8(&b, 0); /* request tags */
	pair_frame_seal(&b);
	return b;
}

Test(proxy_stream, produce_request_streams_at_every_split_and_keeps_what_the_gate_needs)
{
	struct codec_buf frame = produce9(77, 9, -1, 3, 400000);
	cr_assert(gt(i64, (int64_t)(frame.len), (int64_t)(PROXY_STREAM_MIN_REQUEST)));
	size_t step = 1;
	for (size_t cut = 1; cut < frame.len; cut += step) {
		/* every boundary in the structure and around each batch header */
		size_t in_batch = cut > 60 ? (cut - 60) % 400061 : 0;
		step = cut < 300 || in_batch < 100 || in_batch > 399950 || cut > frame.len - 100 ? 1 : 7919;
		struct fixture f;
		fixture_init(&f);
		struct codec_buf out = PAIR_BUF;
		send_request(&f, &frame, &cut, 1, &out);
		cr_assert(eq(i64, (int64_t)(out.len), (int64_t)(frame.len)), "cut at %zu: %zu of %zu bytes", cut, out.len, frame.len);
		cr_assert_not(memcmp(out.data, frame.data, frame.len), "cut at %zu: byte for byte", cut);
		cr_assert(eq(i64, (int64_t)(f.c->nfifo), (int64_t)(1)));
		struct proxy_entry *e = TAILQ_FIRST(&f.c->fifo);
		cr_assert(eq(i64, (int64_t)(e->correlation_id), (int64_t)(77)));
		cr_assert_not_null(e->produce, "cut at %zu: the request summary is kept", cut);
		cr_assert(eq(i64, (int64_t)(e->produce->acks), (int64_t)(-1)));
		cr_assert(eq(i64, (int64_t)(e->produce->nparts), (int64_t)(1)));
		cr_assert(eq(i64, (int64_t)(e->produce->parts[0].partition), (int64_t)(3)));
		cr_assert(eq(i64, (int64_t)(e->produce->parts[0].offset_span), (int64_t)(15)), "3 batches of 5 records");
		cr_assert_str_eq(proxy_produce_sum_topics(e->produce)[0].name, "t");
		cr_assert(eq(i64, (int64_t)(f.c->from_client.state), (int64_t)(PROXY_DIR_FRAME)));
		codec_buf_free(&out);
		fixture_fini(&f);
	}
	codec_buf_free(&frame);
}

Test(proxy_stream, produce_acks0_takes_no_slot_and_v14_goes_up_as_v13)
{
	struct fixture f;
	fixture_init(&f);
	struct codec_buf a = produce9(1, 9, 0, 2, 600000);
	struct codec_buf b = produce9(2, 14, 1, 2, 600000);
	struct codec_buf both = PAIR_BUF, out = PAIR_BUF;
	codec_write_raw(&both, a.data, a.len);
	codec_write_raw(&both, b.data, b.len);
	send_request(&f, &both, NULL, 0, &out);
	cr_assert(eq(i64, (int64_t)(out.len), (int64_t)(both.len)));
	cr_assert_not(memcmp(out.data, a.data, a.len));
	cr_assert(eq(i64, (int64_t)(out.data[a.len + 7]), (int64_t)(13)), "v14 is v13 on the wire");
	cr_assert_not(memcmp(out.data + a.len + 8, b.data + 8, b.len - 8));
	cr_assert(eq(i64, (int64_t)(f.c->nfifo), (int64_t)(1)), "acks=0 has no response");
	struct proxy_entry *e = TAILQ_FIRST(&f.c->fifo);
	cr_assert(eq(i64, (int64_t)(e->client_version), (int64_t)(14)));
	cr_assert(eq(i64, (int64_t)(e->api_version), (int64_t)(13)));
	codec_buf_free(&a);
	codec_buf_free(&b);
	codec_buf_free(&both);
	codec_buf_free(&out);
	fixture_fini(&f);
}

Test(proxy_stream, broker_that_stops_reading_pauses_the_client)
{
	struct fixture f;
	fixture_init(&f);
	struct codec_buf frame = produce9(5, 9, -1, 10, 2000000); /* 20 MB, above max_frame_bytes */
	check_reader_pauses_writer(&f, true, &frame);
	cr_assert(eq(i64, (int64_t)(TAILQ_FIRST(&f.c->fifo)->produce->parts[0].offset_span), (int64_t)(50)));
	codec_buf_free(&frame);
	fixture_fini(&f);
}

Test(proxy_stream, client_closes_mid_request_closes_the_pair)
{
	struct fixture f;
	fixture_init(&f);
	struct codec_buf frame = produce9(5, 9, -1, 4, 1000000);
	size_t off = 0;
	struct codec_buf out = PAIR_BUF;
	pass_upto(&f, true, &frame, &off, frame.len / 2, &out);
	close(f.cl);
	f.cl = -1;
	for (int i = 0; i < 500 && f.srv.nconns > 0; i++) {
		loop_once(&f);
		broker_read(&f, &out);
	}
	cr_assert(eq(i64, (int64_t)(f.srv.nconns), (int64_t)(0)), "a request cut short closes both sides");
	broker_read(&f, &out);
	cr_assert(eq(i64, (int64_t)(out.len), (int64_t)(off)), "every byte read went upstream (%zu of %zu)", out.len, off);
	uint8_t x;
	cr_assert(eq(i64, (int64_t)(read(f.up, &x, 1)), (int64_t)(0)));
	codec_buf_free(&out);
	codec_buf_free(&frame);
	fixture_fini(&f);
}

/* A malformed batch header in a streamed Produce closes the pair, and the
 * log line says where in the frame decoding failed (offset=). */
Test(proxy_stream, malformed_streamed_produce_logs_its_offset)
{
	struct fixture f;
	fixture_init(&f);
	int lp[2];
	cr_assert(eq(i64, (int64_t)(pipe(lp)), (int64_t)(0)));
	fcntl(lp[0], F_SETFL, O_NONBLOCK);
	conf_log_set_fd(lp[1]);
	const int nbatches = 3;
	const size_t payload = 400000, batch = 61 + payload;
	struct codec_buf frame = produce9(9, 9, -1, nbatches, payload);
	size_t second = frame.len - 3 - batch * (size_t)(nbatches - 1);
	memset(frame.data + second + 23, 0xff, 4); /* lastOffsetDelta -1 */
	struct codec_buf out = PAIR_BUF;
	size_t off = 0;
	for (int i = 0; i < 20000 && off < frame.len && f.srv.nconns > 0; i++) {
		off += client_write(&f, frame.data + off, frame.len - off);
		loop_once(&f);
		broker_read(&f, &out);
	}
	for (int i = 0; i < 200 && f.srv.nconns > 0; i++)
		loop_once(&f);
	conf_log_set_fd(2);
	cr_assert(eq(i64, (int64_t)(f.srv.nconns), (int64_t)(0)), "a malformed request closes the pair");
	cr_assert(lt(i64, (int64_t)(out.len), (int64_t)(second + 61)), "the bad batch header never went upstream");
	char log[8192];
	ssize_t n = read(lp[0], log, sizeof(log) - 1);
	cr_assert(gt(i64, (int64_t)(n), (int64_t)(0)));
	log[n] = '\0';
	char want[64];
	snprintf(want, sizeof(want), "where=batch error=malformed message offset=%zu", second + 61);
	cr_assert(strstr(log, "request_malformed") && strstr(log, want), "want \"%s\" in:\n%s", want, log);
	close(lp[0]);
	close(lp[1]);
	codec_buf_free(&out);
	codec_buf_free(&frame);
	fixture_fini(&f);
}

/* ---- the consumer clamp as the frame streams --------------------- */

static const char *clamp_yaml = PAIR_GATED_YAML
	"advertise:\n  template: \"" ADVERTISED ":19092\"\n"
	"limits:\n  max_frame_bytes: 100000\n";

#define MHW 300       /* the mirrored high watermark of both partitions */
#define BROKER_HW 600
#define STEP 10       /* records per batch */
#define PAYLOAD 1200  /* bytes per batch after its 61-byte header */

/* A RecordBatch v2 header (61 bytes) of `count` records and `payload` pattern bytes. */
static void put_batch_n(struct codec_buf *b, int64_t base, int32_t count, size_t payload)
{
	codec_write_i64(b, base);
	codec_write_i32(b, (int32_t)(49 + payload)); /* batchLength */
	codec_write_i32(b, 5);              /* partitionLeaderEpoch */
	codec_write_i8(b, 2);               /* magic */
	codec_write_i32(b, 0x12345678);     /* crc */
	codec_write_i16(b, 0);              /* attributes */
	codec_write_i32(b, count - 1);      /* lastOffsetDelta */
	codec_write_i64(b, 1000);
	codec_write_i64(b, 2000);
	codec_write_i64(b, -1);
	codec_write_i16(b, 0);
	codec_write_i32(b, 0);
	codec_write_i32(b, count);          /* recordsCount */
	for (size_t i = 0; i < payload; i++)
		codec_write_i8(b, (uint8_t)(base + (int64_t)i));
}

/* A batch of STEP records and PAYLOAD bytes. */
static void put_batch(struct codec_buf *b, int64_t base)
{
	put_batch_n(b, base, STEP, PAYLOAD);
}

/*
 * The start of a Fetch v12 response (size placeholder, header, ThrottleTimeMs
 * 0, ErrorCode NONE, SessionId 7) with one topic, "orders", up to its
 * partitions.
 */
static struct codec_buf fetch12_head(int32_t correlation_id)
{
	struct codec_buf b = PAIR_FLEX_BUF;
	codec_write_i32(&b, 0);
	codec_write_i32(&b, correlation_id);
	codec_write_i8(&b, 0);
	codec_write_i32(&b, 0);
	codec_write_i16(&b, 0);
	codec_write_i32(&b, 7);
	codec_write_uvarint(&b, 2);
	codec_write_str(&b, "orders");
	return b;
}

/*
 * A Fetch v12 response: topic "orders", partition 0 with batches from offset
 * 0 (cut in the middle), partition 1 with batches from MHW (cut whole; a
 * DivergingEpoch tag to keep), both up to BROKER_HW.
 */
static struct codec_buf fetch12_clamped(int32_t correlation_id, size_t *p0_records_at)
{
	struct codec_buf b = fetch12_head(correlation_id);
	codec_write_uvarint(&b, 3);
	for (int p = 0; p < 2; p++) {
		codec_write_i32(&b, p);
		codec_write_i16(&b, 0);
		codec_write_i64(&b, BROKER_HW);
		codec_write_i64(&b, BROKER_HW);
		codec_write_i64(&b, 0);
		codec_write_i8(&b, 0);     /* AbortedTransactions: null */
		codec_write_i32(&b, -1);
		struct codec_buf r = PAIR_BUF;
		for (int64_t base = p ? MHW : 0; base < BROKER_HW; base += STEP)
			put_batch(&r, base);
		codec_write_uvarint(&b, (uint32_t)r.len + 1);
		if (p == 0)
			*p0_records_at = b.len;
		codec_write_raw(&b, r.data, r.len);
		codec_buf_free(&r);
		if (p == 1) {    /* tag 0 DivergingEpoch {Epoch 3, EndOffset 9, tags} */
			codec_write_i8(&b, 1);
			codec_write_i8(&b, 0);
			codec_write_i8(&b, 13);
			codec_write_i32(&b, 3);
			codec_write_i64(&b, 9);
			codec_write_i8(&b, 0);
		} else {
			codec_write_i8(&b, 0);
		}
	}
	codec_write_i8(&b, 0); /* topic tags */
	codec_write_i8(&b, 0); /* top-level tags */
	pair_frame_seal(&b);
	return b;
}

/* A consumer's Fetch v12 request for orders[0..1] from the client's side. */
static void client_fetch12(struct fixture *f, int32_t correlation_id)
{
	struct codec_buf b = PAIR_FLEX_BUF;
	codec_write_i32(&b, 0);
	codec_write_i16(&b, CODEC_API_FETCH);
	codec_write_i16(&b, 12);
	codec_write_i32(&b, correlation_id);
	codec_write_i16(&b, 4);
	codec_write_raw(&b, "test", 4);
	codec_write_i8(&b, 0);             /* header tags */
	codec_write_i32(&b, -1);           /* ReplicaId */
	codec_write_i32(&b, 500);          /* MaxWaitMs */
	codec_write_i32(&b, 1);            /* MinBytes */
	codec_write_i32(&b, 50 << 20);     /* MaxBytes */
	codec_write_i8(&b, 0);             /* IsolationLevel */
	codec_write_i32(&b, 0);            /* SessionId */
	codec_write_i32(&b, -1);           /* SessionEpoch */
	codec_write_uvarint(&b, 2);
	codec_write_str(&b, "orders");
	codec_write_uvarint(&b, 3);
	for (int p = 0; p < 2; p++) {
		codec_write_i32(&b, p);
		codec_write_i32(&b, -1);   /* CurrentLeaderEpoch */
		codec_write_i64(&b, 0);    /* FetchOffset */
		codec_write_i32(&b, -1);   /* LastFetchedEpoch */
		codec_write_i64(&b, -1);   /* LogStartOffset */
		codec_write_i32(&b, 1 << 20);
		codec_write_i8(&b, 0);
	}
	codec_write_i8(&b, 0);             /* topic tags */
	codec_write_uvarint(&b, 1);            /* ForgottenTopicsData */
	codec_write_uvarint(&b, 1);            /* RackId "" */
	codec_write_i8(&b, 0);
	pair_frame_seal(&b);
	/* the request reaches the broker's end; the test's broker drops it */
	cr_assert(eq(i64, (int64_t)(pair_request_to_broker(f, &b)), (int64_t)(b.len)));
	codec_buf_free(&b);
}

/* The pair, with a gate (freed by pair_fini) where orders[0..1] are SYNC on
 * mirror dr with progress `mhw`. */
static void clamp_fixture_at(struct fixture *f, int64_t mhw_want)
{
	pair_init(f, clamp_yaml);
	pair_gate_progress(f, 2, mhw_want);
}

static void clamp_fixture(struct fixture *f)
{
	clamp_fixture_at(f, MHW);
}

/* Walk the client's copy: both partitions clamped, every whole batch below MHW. */
static void check_clamped(const struct codec_buf *in, const struct codec_buf *out, size_t p0_records_at)
{
	cr_assert(eq(i64, (int64_t)(out->len), (int64_t)(in->len)), "the size prefix went first: the length stays");
	cr_assert_not(memcmp(out->data, in->data, 4 + 4 + 1));
	struct codec_fetch_stream fs;
	codec_fetch_stream_init(&fs, 12);
	size_t pos = 9;
	int part = -1;
	while (fs.stage != CODEC_STREAM_TAIL) {
		struct codec_iov one = { out->data + pos, out->len - pos };
		size_t used = 0, records = 0;
		enum codec_stream_stage st = fs.stage;
		cr_assert(eq(i64, (int64_t)(codec_fetch_stream_next(&fs, &one, 1, &used, &records)), (int64_t)(CODEC_OK)),
			     "stage %s at %zu", codec_stream_stage_str(st), pos);
		if (st == CODEC_STREAM_PART_END && part == 1) {
			/* the DivergingEpoch tag kept, then filler fields */
			struct codec_reader r;
			codec_reader_init(&r, &one, 1);
			r.flexible = true;
			uint32_t n = codec_read_uvarint(&r);
			cr_assert(ge(i64, (int64_t)(n), (int64_t)(2)));
			cr_assert(eq(i64, (int64_t)(codec_read_uvarint(&r)), (int64_t)(0)));
			cr_assert(eq(i64, (int64_t)(codec_read_uvarint(&r)), (int64_t)(13)));
			codec_read_skip(&r, 13);
			for (uint32_t i = 1; i < n; i++) {
				cr_assert(ge(i64, (int64_t)(codec_read_uvarint(&r)), (int64_t)(CODEC_TAG_FILLER - 1)));
				codec_read_skip(&r, codec_read_uvarint(&r));
			}
			cr_assert(eq(i64, (int64_t)(r.err), (int64_t)(CODEC_OK)));
		}
		pos += used;
		if (st != CODEC_STREAM_PARTITION)
			continue;
		part = fs.part.partition;
		cr_assert(eq(i64, (int64_t)(fs.part.high_watermark), (int64_t)(MHW)));
		cr_assert(eq(i64, (int64_t)(fs.part.last_stable_offset), (int64_t)(MHW)));
		/* every whole batch a client can read is below MHW */
		size_t at = 0, whole = 0;
		while (at < records) {
			struct codec_batch_head b;
			size_t left = records - at;
			codec_batch_peek(out->data + pos + at, left < CODEC_BATCH_PEEK ? left : CODEC_BATCH_PEEK,
					 left, &b);
			if (!b.partial) {
				cr_assert(lt(i64, (int64_t)(b.last), (int64_t)(MHW)), "partition %d: batch %lld..%lld reaches a client", part,
					     (long long)b.base, (long long)b.last);
				whole++;
			}
			at += b.total;
		}
		if (part == 0) {
			cr_assert(eq(i64, (int64_t)(whole), (int64_t)(MHW / STEP)));
			cr_assert_not(memcmp(out->data + pos, in->data + p0_records_at, whole * (61 + PAYLOAD)),
				  "kept batches pass byte for byte");
		} else {
			cr_assert(eq(i64, (int64_t)(records), (int64_t)(0)), "partition 1: nothing kept, an empty record set");
		}
		pos += records;
	}
	cr_assert(eq(i64, (int64_t)(part), (int64_t)(1)));
}

Test(proxy_stream, consumer_clamp_cuts_a_streamed_fetch_at_every_split)
{
	size_t p0_at = 0;
	struct codec_buf frame = fetch12_clamped(11, &p0_at);
	cr_assert(gt(i64, (int64_t)(frame.len), (int64_t)(PROXY_STREAM_MIN)));
	cr_assert(gt(i64, (int64_t)(frame.len), (int64_t)(100000)), "above limits.max_frame_bytes: only streaming can carry it");
	size_t p0_cut = p0_at + (MHW / STEP) * (61 + PAYLOAD);
	size_t p1_unit = p0_at + (BROKER_HW / STEP) * (61 + PAYLOAD) + 1; /* after p0's tags */
	int runs = 0;
	for (size_t cut = 1; cut < frame.len; cut++) {
		/* every byte around the structure, the masked batch and the first batch
		 * of the partition cut whole; a sample elsewhere */
		bool near = cut < 120 || (cut + 80 > p0_cut && cut < p0_cut + 80) ||
			    (cut + 80 > p1_unit && cut < p1_unit + 120) || cut > frame.len - 40;
		if (!near && cut % 1499)
			continue;
		struct fixture f;
		clamp_fixture(&f);
		client_fetch12(&f, 11);
		cr_assert(eq(i64, (int64_t)(f.c->nfifo), (int64_t)(1)));
		struct codec_buf out = PAIR_BUF;
		feed(&f, &frame, &cut, 1, &out);
		check_clamped(&frame, &out, p0_at);
		cr_assert(eq(i64, (int64_t)(f.c->nfifo), (int64_t)(0)));
		cr_assert(f.c->clamp_lagging, "records were left out: the next response is buffered");
		codec_buf_free(&out);
		pair_fini(&f);
		runs++;
	}
	cr_assert(gt(i64, (int64_t)(runs), (int64_t)(300)));
	codec_buf_free(&frame);
}

Test(proxy_stream, consumer_clamp_after_a_cut_buffers_and_holds_the_next_fetch)
{
	size_t p0_at = 0;
	struct codec_buf frame = fetch12_clamped(12, &p0_at);
	struct fixture f;
	clamp_fixture(&f);
	client_fetch12(&f, 12);
	struct codec_buf out = PAIR_BUF;
	feed(&f, &frame, NULL, 0, &out);
	check_clamped(&frame, &out, p0_at);
	cr_assert(f.c->clamp_lagging);
	/* the next request is not streamed: its MaxBytes is lowered to fit
	 * limits.max_frame_bytes, so the broker's answer can be held */
	client_fetch12(&f, 13);
	struct proxy_entry *e = TAILQ_FIRST(&f.c->fifo);
	cr_assert(e && e->clamp);
	cr_assert_not(proxy_clamp_streams(e));
	codec_buf_free(&out);
	pair_fini(&f);
	codec_buf_free(&frame);
}

/*
 * A Fetch v12 response, topic "orders" partition 0 only: HighWatermark `hw`,
 * LastStableOffset `lso`, `n` batches of 10 records from offset 10 on, of
 * `payload` bytes each (n * payload above 64 KiB: the frame streams).
 */
static struct codec_buf fetch12_batches(int32_t correlation_id, int64_t hw, int64_t lso, int n, size_t payload,
					size_t *records_at)
{
	struct codec_buf b = fetch12_head(correlation_id);
	codec_write_uvarint(&b, 2);
	codec_write_i32(&b, 0);
	codec_write_i16(&b, 0);
	codec_write_i64(&b, hw);
	codec_write_i64(&b, lso);
	codec_write_i64(&b, 0);
	codec_write_i8(&b, 0);     /* AbortedTransactions: null */
	codec_write_i32(&b, -1);
	struct codec_buf r = PAIR_BUF;
	for (int i = 0; i < n; i++)
		put_batch_n(&r, 10 + 10 * i, 10, payload);
	cr_assert(ge(i64, (int64_t)(r.len + 1), (int64_t)(1u << 14)));
	cr_assert(lt(i64, (int64_t)(r.len + 1), (int64_t)(1u << 21)));
	codec_write_uvarint(&b, (uint32_t)r.len + 1); /* 3 bytes */
	*records_at = b.len;
	codec_write_raw(&b, r.data, r.len);
	codec_buf_free(&r);
	codec_write_i8(&b, 0); /* partition tags */
	codec_write_i8(&b, 0); /* topic tags */
	codec_write_i8(&b, 0); /* top-level tags */
	pair_frame_seal(&b);
	return b;
}

/* Batches 10–19 and 20–29 of BIG bytes each — Kafka takes HW and LSO before
 * it reads the log, so a response may carry batches at or past its own
 * HighWatermark. */
#define BIG 150000
static struct codec_buf fetch12_past_own_hw(int32_t correlation_id, int64_t hw, int64_t lso, size_t *records_at)
{
	return fetch12_batches(correlation_id, hw, lso, 2, BIG, records_at);
}

/* Whole batches a client can read in the client's copy of a fetch12_past_own_hw
 * frame (its records at `records_at`): their count, each checked below `mhw`. */
static size_t readable_batches(const struct codec_buf *out, size_t records_at, int64_t mhw)
{
	struct codec_iov len = { out->data + records_at - 3, 3 };
	struct codec_reader r;
	codec_reader_init(&r, &len, 1);
	size_t records = codec_read_uvarint(&r) - 1;
	cr_assert(eq(i64, (int64_t)(r.err), (int64_t)(CODEC_OK)));
	cr_assert(eq(i64, (int64_t)(records), (int64_t)(2 * (61 + BIG))), "the records length stays (the frame's size went first)");
	size_t at = 0, whole = 0;
	while (at < records) {
		struct codec_batch_head b;
		size_t left = records - at;
		codec_batch_peek(out->data + records_at + at, left < CODEC_BATCH_PEEK ? left : CODEC_BATCH_PEEK,
				 left, &b);
		if (!b.partial) {
			cr_assert(lt(i64, (int64_t)(b.last), (int64_t)(mhw)), "batch %lld..%lld reaches a client", (long long)b.base,
				     (long long)b.last);
			whole++;
		}
		at += b.total;
	}
	return whole;
}

static double spliced_bytes(void)
{
	return metric_value(metric_get(METRIC_COUNTER, "syncgate_spliced_bytes_total", "", "", NULL, 0));
}

Test(proxy_stream, consumer_clamp_judges_batches_past_the_response_own_high_watermark)
{
	/* HighWatermark 20 = mirrored HW 20; LSO 20 (read_uncommitted) or 15
	 * (read_committed: the read went to a later LSO): batch 20–29 is left out */
	const int64_t lsos[2] = { 20, 15 };
	for (int i = 0; i < 2; i++) {
		size_t at = 0;
		struct codec_buf frame = fetch12_past_own_hw(21, 20, lsos[i], &at);
		cr_assert(gt(i64, (int64_t)(frame.len), (int64_t)(PROXY_STREAM_MIN)));
		struct fixture f;
		clamp_fixture_at(&f, 20);
		client_fetch12(&f, 21);
		struct codec_buf out = PAIR_BUF;
		feed(&f, &frame, NULL, 0, &out);
		cr_assert(eq(i64, (int64_t)(out.len), (int64_t)(frame.len)), "the size prefix went first: the length stays");
		cr_assert(eq(i64, (int64_t)(readable_batches(&out, at, 20)), (int64_t)(1)), "LSO %lld: only batch 10–19 is readable",
			     (long long)lsos[i]);
		cr_assert_not(memcmp(out.data + at, frame.data + at, 61 + BIG), "the kept batch passes byte for byte");
		cr_assert(f.c->clamp_lagging, "records were left out: the next response is buffered");
		double d = metric_value(metric_get(METRIC_GAUGE, "syncgate_consumer_clamp_distance_offsets", "",
						   "topic=\"orders\"", NULL, 0));
		cr_assert(eq(i64, (int64_t)(d), (int64_t)(10)), "the broker read up to 30, whatever HighWatermark 20 says");
		codec_buf_free(&out);
		pair_fini(&f);
		codec_buf_free(&frame);
	}
}

Test(proxy_stream, consumer_clamp_every_batch_mirrored_streams_byte_for_byte)
{
	/* mirrored HW 30: both batches are mirrored; judged by their headers,
	 * moved unchanged (in the kernel: the sockets are plaintext) */
	size_t at = 0;
	struct codec_buf frame = fetch12_past_own_hw(22, 20, 15, &at);
	struct fixture f;
	clamp_fixture_at(&f, 30);
	client_fetch12(&f, 22);
	double spliced = spliced_bytes();
	struct codec_buf out = PAIR_BUF;
	feed(&f, &frame, NULL, 0, &out);
	cr_assert(eq(i64, (int64_t)(out.len), (int64_t)(frame.len)));
	cr_assert_not(memcmp(out.data, frame.data, frame.len), "nothing past the mirrored HW: byte for byte");
	cr_assert_not(f.c->clamp_lagging);
	cr_assert(gt(i64, (int64_t)(spliced_bytes()), (int64_t)(spliced)), "kept batches still move by splice(2)");
	codec_buf_free(&out);
	pair_fini(&f);
	codec_buf_free(&frame);
}

Test(proxy_stream, consumer_clamp_small_kept_batches_still_move_by_splice)
{
	/* 40 batches of 4 KiB, each below the splice threshold on its own: the
	 * next header is judged in the socket's buffer (recv MSG_PEEK), so the
	 * kept batches go on in the kernel rather than through user space */
	size_t at = 0;
	struct codec_buf frame = fetch12_batches(23, 410, 410, 40, 4096, &at);
	struct fixture f;
	clamp_fixture_at(&f, 410);
	client_fetch12(&f, 23);
	double spliced = spliced_bytes();
	struct codec_buf out = PAIR_BUF;
	feed(&f, &frame, NULL, 0, &out);
	cr_assert(eq(i64, (int64_t)(out.len), (int64_t)(frame.len)));
	cr_assert_not(memcmp(out.data, frame.data, frame.len), "nothing past the mirrored HW: byte for byte");
	cr_assert_not(f.c->clamp_lagging);
	double records = 40.0 * (61 + 4096);
	cr_assert(gt(i64, (int64_t)(spliced_bytes() - spliced), (int64_t)(records / 2)), "spliced %.0f of %.0f record bytes",
		     spliced_bytes() - spliced, records);
	codec_buf_free(&out);
	pair_fini(&f);
	codec_buf_free(&frame);
}
