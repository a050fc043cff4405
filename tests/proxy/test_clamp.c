/*
 * Unit tests of proxy/clamp.c on a buffered Fetch (v4): a response that
 * clamping leaves without a record is HELD until the mirrored high
 * watermark passes its first withheld batch, then clamped again with the
 * mirrored HW of that moment. The client and the broker are the test's
 * ends of two socketpairs; progress comes from injected mirror reports.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <string.h>
#include <unistd.h>

#include "pair.h"

static const char *yaml = PAIR_GATED_YAML "advertise:\n  template: \"127.0.0.1:19092\"\n";

#define PAYLOAD 100   /* record bytes per batch after its 61-byte header */
#define BATCH (61 + PAYLOAD)

static void loop_once(struct fixture *f)
{
	event_base_loop(f->base, EVLOOP_NONBLOCK);
}

/* The mirror's progress on orders[0] (the mirrored HW) becomes `progress`. */
static void set_progress(struct fixture *f, int64_t progress)
{
	pair_gate_progress(f, 1, progress);
}

/* The pair with a gate (freed by pair_fini): orders[0] SYNC on mirror dr at `progress`. */
static void fixture_init(struct fixture *f, int64_t progress)
{
	pair_init(f, yaml);
	set_progress(f, progress);
}

/* A consumer's Fetch v4 request for orders[0] from offset 10, MaxWaitMs 10 s. */
static void client_fetch4(struct fixture *f, int32_t correlation_id)
{
	struct codec_buf b;
	codec_buf_init(&b, 4096);
	codec_write_i32(&b, 0);
	codec_write_i16(&b, CODEC_API_FETCH);
	codec_write_i16(&b, 4);
	codec_write_i32(&b, correlation_id);
	codec_write_str(&b, "test");
	codec_write_i32(&b, -1);           /* ReplicaId: a consumer */
	codec_write_i32(&b, 10000);        /* MaxWaitMs */
	codec_write_i32(&b, 1);            /* MinBytes */
	codec_write_i32(&b, 1 << 20);      /* MaxBytes */
	codec_write_i8(&b, 0);             /* IsolationLevel */
	codec_write_array_len(&b, 1);
	codec_write_str(&b, "orders");
	codec_write_array_len(&b, 1);
	codec_write_i32(&b, 0);            /* Partition */
	codec_write_i64(&b, 10);           /* FetchOffset */
	codec_write_i32(&b, 1 << 20);      /* PartitionMaxBytes */
	cr_assert(eq(i64, (int64_t)(b.err), (int64_t)(CODEC_OK)));
	pair_frame_seal(&b);
	cr_assert(eq(i64, (int64_t)(pair_request_to_broker(f, &b)), (int64_t)(b.len)), "the request reaches the broker");
	codec_buf_free(&b);
}

/* A RecordBatch v2 of 10 records from `base`. */
static void write_batch(struct codec_buf *b, int64_t base)
{
	codec_write_i64(b, base);
	codec_write_i32(b, 49 + PAYLOAD);  /* batchLength */
	codec_write_i32(b, 0);             /* partitionLeaderEpoch */
	codec_write_i8(b, 2);              /* magic */
	codec_write_i32(b, 0x12345678);    /* crc */
	codec_write_i16(b, 0);             /* attributes */
	codec_write_i32(b, 9);             /* lastOffsetDelta */
	codec_write_i64(b, 1000);
	codec_write_i64(b, 2000);
	codec_write_i64(b, -1);
	codec_write_i16(b, 0);
	codec_write_i32(b, 0);
	codec_write_i32(b, 10);            /* recordsCount */
	for (int i = 0; i < PAYLOAD; i++)
		codec_write_i8(b, (int8_t)(base + i));
}

/*
 * The broker's Fetch v4 response: orders[0] with HighWatermark `hw`, LSO
 * `hw`, batches 10–19 and 20–29 (Kafka takes HW and LSO before it reads the
 * log: a response may carry batches at or past its own HighWatermark).
 * *records_at: where the records start in the frame.
 */
static void broker_fetch4(struct codec_buf *b, int32_t correlation_id, int64_t hw, size_t *records_at)
{
	codec_buf_init(b, 1 << 20);
	codec_write_i32(b, 0);
	codec_write_i32(b, correlation_id);
	codec_write_i32(b, 0);             /* ThrottleTimeMs */
	codec_write_array_len(b, 1);
	codec_write_str(b, "orders");
	codec_write_array_len(b, 1);
	codec_write_i32(b, 0);
	codec_write_i16(b, 0);
	codec_write_i64(b, hw);            /* HighWatermark */
	codec_write_i64(b, hw);            /* LastStableOffset */
	codec_write_array_len(b, -1);      /* AbortedTransactions */
	codec_write_i32(b, 2 * BATCH);
	*records_at = b->len;
	write_batch(b, 10);
	write_batch(b, 20);
	cr_assert(eq(i64, (int64_t)(b->err), (int64_t)(CODEC_OK)));
	pair_frame_seal(b);
}

/* Read what the client has into `out` (at most `cap` bytes); returns the count. */
static size_t client_read(struct fixture *f, uint8_t *out, size_t cap)
{
	size_t n = 0;
	for (int i = 0; i < 50; i++) {
		loop_once(f);
		ssize_t r = read(f->cl, out + n, cap - n);
		if (r > 0)
			n += (size_t)r;
	}
	return n;
}

/* syncgate_consumer_clamp_distance_offsets of topic orders. */
static double distance(void)
{
	return metric_value(metric_get(METRIC_GAUGE, "syncgate_consumer_clamp_distance_offsets", "",
				       "topic=\"orders\"", NULL, 0));
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

Test(proxy_clamp, held_fetch_reclamped_leaves_out_batches_past_the_mirrored_hw)
{
	struct fixture f;
	fixture_init(&f, 10);
	client_fetch4(&f, 7);
	struct codec_buf frame;
	size_t at;
	broker_fetch4(&frame, 7, 20, &at);
	cr_assert(eq(i64, (int64_t)(write(f.up, frame.data, frame.len)), (int64_t)((ssize_t)frame.len)));
	uint8_t out[4096];
	cr_assert(eq(i64, (int64_t)(client_read(&f, out, sizeof(out))), (int64_t)(0)), "mirrored HW 10: no record left, held");
	struct proxy_entry *e = TAILQ_FIRST(&f.c->fifo);
	cr_assert(e && e->state == PROXY_ENTRY_HELD);
	cr_assert(eq(i64, (int64_t)(distance()), (int64_t)(20)), "the broker read up to 30, whatever HighWatermark 20 says");
	/* the mirrored HW passes 19, the first withheld batch: clamped again at 20
	 * — the response's own HighWatermark, yet batch 20–29 is not mirrored */
	set_progress(&f, 20);
	size_t n = client_read(&f, out, sizeof(out));
	cr_assert(eq(i64, (int64_t)(n), (int64_t)(frame.len - BATCH)), "released with batch 10–19 only (got %zu of %zu bytes)", n,
		     frame.len);
	cr_assert(eq(i64, (int64_t)(be32(out)), (int64_t)((uint32_t)(n - 4))));
	cr_assert(eq(i64, (int64_t)(be32(out + at - 4)), (int64_t)(BATCH)), "the records length is one batch");
	cr_assert_not(memcmp(out + at, frame.data + at, BATCH), "the kept batch is the broker's bytes");
	cr_assert_not(memcmp(out + 4, frame.data + 4, at - 4 - 4), "before the records nothing changed");
	cr_assert(f.c->clamp_lagging);
	cr_assert(eq(i64, (int64_t)(distance()), (int64_t)(10)));
	codec_buf_free(&frame);
	pair_fini(&f);
}

Test(proxy_clamp, fetch_below_the_mirrored_hw_passes_byte_for_byte)
{
	struct fixture f;
	fixture_init(&f, 30);
	client_fetch4(&f, 8);
	struct codec_buf frame;
	size_t at;
	broker_fetch4(&frame, 8, 20, &at);
	cr_assert(eq(i64, (int64_t)(write(f.up, frame.data, frame.len)), (int64_t)((ssize_t)frame.len)));
	uint8_t out[4096];
	size_t n = client_read(&f, out, sizeof(out));
	cr_assert(eq(i64, (int64_t)(n), (int64_t)(frame.len)));
	cr_assert_not(memcmp(out, frame.data, n), "every batch below the mirrored HW: unchanged");
	cr_assert_not(f.c->clamp_lagging);
	codec_buf_free(&frame);
	pair_fini(&f);
}
