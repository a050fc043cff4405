/*
 * Unit tests of proxy/pidmap_txn.c (the EndTxn of a transaction opened on
 * the source, on a switched sidecar; docs/switchover.md "Transactions"), on
 * a pair whose upstream end plays the broker: a commit is answered
 * TRANSACTION_ABORTABLE with nothing forwarded; an abort v5 waits for
 * syncgate's own InitProducerId for its TransactionalId and is answered
 * with the id and epoch the broker issued — also when that id is the very
 * number the source gave the producer — after which the next transaction's
 * batch passes; a failed ask answers the broker's error; an abort v4 is
 * answered done; its other requests are answered here
 * (AddPartitionsToTxn v2–v3 and AddOffsetsToTxn UNKNOWN_PRODUCER_ID, every
 * partition; TxnOffsetCommit v5 TRANSACTION_ABORTABLE on every partition);
 * v3, a transaction of this cluster, and a sidecar not switched pass byte
 * for byte.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdlib.h>
#include <unistd.h>

#include "pidmap_frames.h"

static const char *yaml = "mode: sidecar\n"
			  "listen:\n  kafka: 127.0.0.1:19092\n"
			  "upstream:\n  broker: 127.0.0.1:9092\n";

static void send_to(int fd, const struct codec_buf *b)
{
	cr_assert(eq(i64, (int64_t)write(fd, b->data, b->len), (int64_t)b->len));
}

static void pair(struct fixture *f, bool switched)
{
	pair_init(f, yaml);
	f->srv.gate = mirror_gate_new_ex(f->base, f->conf, MIRROR_GATE_NO_WORKERS);
	cr_assert_not_null(f->srv.gate);
	f->srv.switched = switched;
}

static double ended(const char *outcome)
{
	char labels[64];
	snprintf(labels, sizeof(labels), "outcome=\"%s\"", outcome);
	return metric_value(
		metric_get(METRIC_COUNTER, "syncgate_switch_source_transaction_answers_total", "", labels, NULL, 0));
}

/* The one EndTxn v`version` answer the client read (`cl`, n bytes), to `corr`. */
static struct codec_end_txn_response end_txn_read(const uint8_t *cl, size_t n, int16_t version, int32_t corr)
{
	cr_assert(eq(sz, n, (size_t)be32(cl) + 4), "one frame");
	cr_assert(eq(i32, be32(cl + 4), corr));
	struct codec_iov iov = { cl + 9, n - 9 }; /* response header v1: a tag byte */
	struct codec_end_txn_response r = { 0 };
	cr_assert(eq(int, codec_end_txn_response_decode(&iov, 1, version, &r), CODEC_OK));
	return r;
}

/* The one frame the broker read (`up`, n bytes): syncgate's InitProducerId v2 for `txn`. */
static void expect_ask(const uint8_t *up, size_t n, const char *txn)
{
	cr_assert(eq(sz, n, (size_t)be32(up) + 4), "one frame, the EndTxn not forwarded");
	cr_assert(eq(i16, be16(up + 4), CODEC_API_INIT_PRODUCER_ID));
	int16_t version = be16(up + 6);
	size_t body = 4 + 2 + 2 + 4 + 2 + (size_t)be16(up + 12) + (version >= 2 ? 1 : 0);
	struct codec_iov iov = { up + body, n - body };
	struct codec_init_producer_id_request m = { 0 };
	cr_assert(eq(int, codec_init_producer_id_request_decode(&iov, 1, version, &m), CODEC_OK));
	cr_assert(eq(str, m.transactional_id ? m.transactional_id : "(null)", (char *)txn));
	cr_assert(gt(i32, m.transaction_timeout_ms, 0));
	codec_init_producer_id_request_free(&m);
}

/* Send `q` on `f`: answered here, nothing forwarded; the answer in `cl` (`cap` bytes), its length. */
static size_t answered_frame(struct fixture *f, const struct codec_buf *q, uint8_t *cl, size_t cap)
{
	send_to(f->cl, q);
	uint8_t up[1024];
	size_t n = pair_end_drain(f, f->cl, cl, cap);
	cr_assert(eq(sz, pair_end_drain(f, f->up, up, sizeof(up)), 0), "nothing forwarded");
	return n;
}

/* EndTxn v`version` (`pid` 9, epoch 1 under "tx") on `f`: answered here, nothing
 * forwarded; the answer's error code. */
static int16_t answered_here(struct fixture *f, int32_t corr, int16_t version, bool committed)
{
	struct codec_buf q = PAIR_FLEX_BUF;
	client_end_txn_v(&q, corr, version, "tx", 9, 1, committed);
	uint8_t cl[256];
	size_t n = answered_frame(f, &q, cl, sizeof(cl));
	codec_buf_free(&q);
	return end_txn_read(cl, n, version, corr).error_code;
}

Test(pidmap_txn, commit_of_a_source_transaction_is_answered_transaction_abortable)
{
	struct fixture f;
	pair(&f, true);
	double refused0 = ended("commit_refused");
	cr_assert(eq(i16, answered_here(&f, 81, 5, true), CODEC_ERROR_TRANSACTION_ABORTABLE));
	cr_assert(eq(dbl, ended("commit_refused"), refused0 + 1));
	pair_fini(&f);
}

/* An abort v5 of (9, 1) under "tx", the broker issuing (`pid`, `epoch`): the client's answer. */
static void abort_v5(struct fixture *f, int64_t pid, int16_t epoch)
{
	struct codec_buf q = PAIR_FLEX_BUF, a = PAIR_BUF;
	client_end_txn_v(&q, 82, 5, "tx", 9, 1, false);
	send_to(f->cl, &q);
	uint8_t up[1024], cl[256];
	size_t n = pair_end_drain(f, f->up, up, sizeof(up));
	expect_ask(up, n, "tx");
	cr_assert(eq(sz, pair_end_drain(f, f->cl, cl, sizeof(cl)), 0), "the abort waits for the ask");
	init_pid_answer(&a, be16(up + 6), 0, pid, epoch);
	send_to(f->up, &a);
	n = pair_end_drain(f, f->cl, cl, sizeof(cl));
	cr_assert(eq(sz, pair_end_drain(f, f->up, up, sizeof(up)), 0), "the abort is not forwarded after it");
	struct codec_end_txn_response r = end_txn_read(cl, n, 5, 82);
	cr_assert(eq(i16, r.error_code, 0));
	cr_assert(eq(i64, r.producer_id, pid));
	cr_assert(eq(i16, r.producer_epoch, epoch));
	codec_buf_free(&q);
	codec_buf_free(&a);
}

/* A transactional batch of (`pid`, `epoch`) under "tx" reaches the broker byte for byte. */
static void batch_passes(struct fixture *f, int64_t pid, int16_t epoch)
{
	struct codec_buf p = PAIR_FLEX_BUF;
	produce_v9(&p, 83, "tx", pid, epoch, 0, true, 10);
	send_to(f->cl, &p);
	uint8_t up[8192];
	size_t n = pair_end_drain(f, f->up, up, sizeof(up));
	cr_assert(eq(sz, n, p.len), "the next transaction's batch passes");
	cr_assert_not(memcmp(up, p.data, p.len));
	codec_buf_free(&p);
}

Test(pidmap_txn, abort_v5_is_answered_with_an_id_the_broker_issued_to_its_transactional_id)
{
	struct fixture f;
	pair(&f, true);
	double answered0 = ended("abort_answered");
	abort_v5(&f, 4000, 0);
	cr_assert(eq(dbl, ended("abort_answered"), answered0 + 1));
	batch_passes(&f, 4000, 0);
	pair_fini(&f);
}

Test(pidmap_txn, abort_v5_is_answered_when_the_issued_id_is_the_number_the_source_gave)
{
	/* both clusters count producer ids from their own start */
	struct fixture f;
	pair(&f, true);
	abort_v5(&f, 9, 0);
	batch_passes(&f, 9, 0);
	pair_fini(&f);
}

Test(pidmap_txn, abort_v5_whose_ask_fails_is_answered_with_the_brokers_error)
{
	struct fixture f;
	pair(&f, true);
	double failed0 = ended("abort_failed");
	struct codec_buf q = PAIR_FLEX_BUF, a = PAIR_BUF, p = PAIR_FLEX_BUF;
	client_end_txn_v(&q, 84, 5, "tx", 9, 1, false);
	send_to(f.cl, &q);
	uint8_t up[8192], cl[256];
	size_t n = pair_end_drain(&f, f.up, up, sizeof(up));
	expect_ask(up, n, "tx");
	init_pid_answer(&a, be16(up + 6), CODEC_ERROR_COORDINATOR_LOAD_IN_PROGRESS, -1, -1);
	send_to(f.up, &a);
	n = pair_end_drain(&f, f.cl, cl, sizeof(cl));
	struct codec_end_txn_response r = end_txn_read(cl, n, 5, 84);
	cr_assert(eq(i16, r.error_code, CODEC_ERROR_COORDINATOR_LOAD_IN_PROGRESS), "retriable: the client asks again");
	cr_assert(eq(dbl, ended("abort_failed"), failed0 + 1));
	/* nothing was issued: the source's id stays refused */
	produce_v9(&p, 85, "tx", 9, 1, 0, true, 10);
	send_to(f.cl, &p);
	cr_assert(eq(sz, pair_end_drain(&f, f.up, up, sizeof(up)), 0));
	n = pair_end_drain(&f, f.cl, cl, sizeof(cl));
	cr_assert(eq(i16, produce_error(cl, n, 85), CODEC_ERROR_INVALID_PRODUCER_ID_MAPPING), "Produce v9: below v11");
	codec_buf_free(&q);
	codec_buf_free(&a);
	codec_buf_free(&p);
	pair_fini(&f);
}

Test(pidmap_txn, abort_v4_is_answered_done)
{
	struct fixture f;
	pair(&f, true);
	cr_assert(eq(i16, answered_here(&f, 86, 4, false), 0));
	pair_fini(&f);
}

/* EndTxn `q` reaches the broker byte for byte, and nothing reaches the client. */
static void forwarded(struct fixture *f, const struct codec_buf *q)
{
	send_to(f->cl, q);
	uint8_t up[1024], cl[256];
	size_t n = pair_end_drain(f, f->up, up, sizeof(up));
	cr_assert(eq(sz, n, q->len));
	cr_assert_not(memcmp(up, q->data, q->len));
	cr_assert(eq(sz, pair_end_drain(f, f->cl, cl, sizeof(cl)), 0));
}

Test(pidmap_txn, v3_and_not_switched_pass_byte_for_byte)
{
	struct fixture f;
	struct codec_buf q = PAIR_FLEX_BUF;
	pair(&f, true);
	client_end_txn_v(&q, 87, 3, "tx", 9, 1, false);
	forwarded(&f, &q);
	pair_fini(&f);
	pair(&f, false);
	client_end_txn_v(&q, 88, 5, "tx", 9, 1, true);
	forwarded(&f, &q);
	client_end_txn_v(&q, 89, 5, "tx", 9, 1, false);
	forwarded(&f, &q);
	pair_fini(&f);
	codec_buf_free(&q);
}

/* A client's AddOffsetsToTxn v`version` (3..4) of (`pid`, epoch 1) under "tx", group "g". */
static void add_offsets(struct codec_buf *b, int32_t corr, int16_t version, int64_t pid)
{
	client_header(b, CODEC_API_ADD_OFFSETS_TO_TXN, version, corr);
	struct codec_add_offsets_to_txn_request m = { .transactional_id = "tx", .producer_id = pid,
						      .producer_epoch = 1, .group_id = "g" };
	cr_assert(eq(int, codec_add_offsets_to_txn_request_encode(&m, version, b), CODEC_OK));
	pair_frame_seal(b);
}

/* A client's TxnOffsetCommit v5 of (`pid`, epoch 1) under "tx", group "g":
 * topic "a" partitions 0 and 1, topic "b" partition 2. */
static void txn_offset_commit(struct codec_buf *b, int32_t corr, int64_t pid)
{
	client_header(b, CODEC_API_TXN_OFFSET_COMMIT, 5, corr);
	codec_write_str(b, "tx");
	codec_write_str(b, "g");
	codec_write_i64(b, pid);
	codec_write_i16(b, 1);
	codec_write_i32(b, 4);      /* GenerationId */
	codec_write_str(b, "m-1");  /* MemberId */
	codec_write_str(b, NULL);   /* GroupInstanceId */
	codec_write_array_len(b, 2);
	const char *names[] = { "a", "b" };
	const int32_t parts[2][2] = { { 0, 1 }, { 2, -1 } };
	for (int t = 0; t < 2; t++) {
		codec_write_str(b, names[t]);
		int np = parts[t][1] < 0 ? 1 : 2;
		codec_write_array_len(b, np);
		for (int k = 0; k < np; k++) {
			codec_write_i32(b, parts[t][k]);
			codec_write_i64(b, 100 + parts[t][k]); /* CommittedOffset */
			codec_write_i32(b, -1);                /* CommittedLeaderEpoch */
			codec_write_str(b, "txn-meta");
			codec_write_i8(b, 0);
		}
		codec_write_i8(b, 0);
	}
	codec_write_i8(b, 0);
	pair_frame_seal(b);
}

/* A client's AddPartitionsToTxn v`version` (0..3) of (`pid`, epoch 1) under "tx":
 * topic "a" partitions 0 and 1, topic "b" partition 2. */
static void add_partitions(struct codec_buf *b, int32_t corr, int16_t version, int64_t pid)
{
	int32_t pa[] = { 0, 1 }, pb[] = { 2 };
	struct codec_add_partitions_topic topics[] = { { "a", pa, 2 }, { "b", pb, 1 } };
	struct codec_add_partitions_to_txn_request m = { .transactional_id = "tx", .producer_id = pid,
							 .producer_epoch = 1, .topics = topics, .ntopics = 2 };
	if (version >= 3) {
		client_header(b, CODEC_API_ADD_PARTITIONS_TO_TXN, version, corr);
	} else { /* request header v1 */
		b->len = 0;
		codec_write_i32(b, 0);
		codec_write_i16(b, CODEC_API_ADD_PARTITIONS_TO_TXN);
		codec_write_i16(b, version);
		codec_write_i32(b, corr);
		b->flexible = false;
		codec_write_str(b, "java");
	}
	cr_assert(eq(int, codec_add_partitions_to_txn_request_encode(&m, version, b), CODEC_OK));
	pair_frame_seal(b);
}

/* The answer in `cl` (n bytes) to `corr`, response header v`hv`, the body's
 * flexibility `flex`: ThrottleTimeMs, then topics "a" (0, 1) and "b" (2),
 * every partition `code`, and nothing after. */
static void expect_every_partition(const uint8_t *cl, size_t n, int32_t corr, int hv, bool flex, int16_t code)
{
	cr_assert(eq(sz, n, (size_t)be32(cl) + 4), "one frame");
	cr_assert(eq(i32, be32(cl + 4), corr));
	struct codec_iov iov = { cl + 8 + (size_t)hv, n - 8 - (size_t)hv };
	struct codec_reader r;
	codec_reader_init(&r, &iov, 1);
	r.flexible = flex;
	cr_assert(eq(i32, codec_read_i32(&r), 0), "ThrottleTimeMs");
	cr_assert(eq(i32, codec_read_array_len(&r, false, 1), 2));
	const char *names[] = { "a", "b" };
	const int32_t want[2][2] = { { 0, 1 }, { 2, -1 } };
	for (int t = 0; t < 2; t++) {
		char *name = codec_read_str(&r, false);
		cr_assert(eq(str, name, (char *)names[t]));
		free(name);
		int np = want[t][1] < 0 ? 1 : 2;
		cr_assert(eq(i32, codec_read_array_len(&r, false, 1), np));
		for (int k = 0; k < np; k++) {
			cr_assert(eq(i32, codec_read_i32(&r), want[t][k]));
			cr_assert(eq(i16, codec_read_i16(&r), code));
			codec_read_tags(&r, NULL, NULL, NULL);
		}
		codec_read_tags(&r, NULL, NULL, NULL);
	}
	codec_read_tags(&r, NULL, NULL, NULL);
	cr_assert(eq(int, codec_reader_finish(&r), CODEC_OK), "every byte read");
}

Test(pidmap_txn, add_partitions_of_a_source_transaction_is_answered_unknown_producer_id_on_every_partition)
{
	struct fixture f;
	pair(&f, true);
	struct codec_buf q = PAIR_FLEX_BUF;
	for (int16_t v = 2; v <= 3; v++) { /* Java 4.3 sends v3 (transaction version 1) */
		double refused0 = ended("refused");
		add_partitions(&q, 97 + v, v, 9);
		uint8_t cl[256];
		size_t n = answered_frame(&f, &q, cl, sizeof(cl));
		expect_every_partition(cl, n, 97 + v, v >= 3 ? 1 : 0, v >= 3, CODEC_ERROR_UNKNOWN_PRODUCER_ID);
		cr_assert(eq(dbl, ended("refused"), refused0 + 1));
	}
	codec_buf_free(&q);
	pair_fini(&f);
}

Test(pidmap_txn, add_offsets_of_a_source_transaction_is_answered_unknown_producer_id)
{
	struct fixture f;
	pair(&f, true);
	double refused0 = ended("refused");
	struct codec_buf q = PAIR_FLEX_BUF;
	add_offsets(&q, 92, 4, 9);
	uint8_t cl[256];
	size_t n = answered_frame(&f, &q, cl, sizeof(cl));
	cr_assert(eq(sz, n, 4 + 4 + 1 + 4 + 2 + 1), "header v1, ThrottleTimeMs, ErrorCode, tags");
	cr_assert(eq(i32, be32(cl + 4), 92));
	cr_assert(eq(i16, be16(cl + 13), CODEC_ERROR_UNKNOWN_PRODUCER_ID), "abortable, and the client bumps its epoch");
	cr_assert(eq(dbl, ended("refused"), refused0 + 1));
	codec_buf_free(&q);
	pair_fini(&f);
}

Test(pidmap_txn, txn_offset_commit_of_a_source_transaction_is_answered_on_every_partition)
{
	struct fixture f;
	pair(&f, true);
	struct codec_buf q = PAIR_FLEX_BUF;
	txn_offset_commit(&q, 94, 9);
	uint8_t cl[256];
	size_t n = answered_frame(&f, &q, cl, sizeof(cl));
	expect_every_partition(cl, n, 94, 1, true, CODEC_ERROR_TRANSACTION_ABORTABLE);
	codec_buf_free(&q);
	pair_fini(&f);
}

Test(pidmap_txn, a_transaction_of_this_cluster_passes)
{
	struct fixture f;
	pair(&f, true);
	struct codec_buf i = PAIR_FLEX_BUF, a = PAIR_BUF, q = PAIR_FLEX_BUF;
	client_init_pid(&i, 90, "tx");
	send_to(f.cl, &i);
	uint8_t up[1024], cl[256];
	cr_assert(eq(sz, pair_end_drain(&f, f.up, up, sizeof(up)), i.len));
	init_pid_answer(&a, 4, 0, 77, 0);
	a.data[4] = 0, a.data[5] = 0, a.data[6] = 0, a.data[7] = 90; /* correlation id 90 */
	send_to(f.up, &a);
	cr_assert(eq(sz, pair_end_drain(&f, f.cl, cl, sizeof(cl)), a.len));
	add_partitions(&q, 98, 3, 77);
	forwarded(&f, &q);
	add_offsets(&q, 95, 4, 77);
	forwarded(&f, &q);
	txn_offset_commit(&q, 96, 77);
	forwarded(&f, &q);
	client_end_txn_v(&q, 91, 5, "tx", 77, 0, true);
	forwarded(&f, &q);
	codec_buf_free(&i);
	codec_buf_free(&a);
	codec_buf_free(&q);
	pair_fini(&f);
}
