/*
 * Unit tests of proxy/pidmap.c (producer ids on a switched sidecar,
 * docs/switchover.md "Producer state"): the bounded map; on a pair whose
 * upstream end plays the broker, an idempotent batch waits for syncgate's
 * own InitProducerId (nothing else goes up until it is answered) and then
 * goes out under the issued id and epoch with a valid CRC and its sequence
 * and records unchanged; retries reuse the id; another epoch asks again; a
 * request pipelined behind waits too and responses keep their order; a
 * failed InitProducerId closes the pair with nothing forwarded; a
 * transactional batch passes only under an id issued to its TransactionalId
 * through this sidecar, else INVALID_PRODUCER_ID_MAPPING; not switched,
 * everything passes byte for byte.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pidmap_frames.h"

static const char *yaml = "mode: sidecar\n"
			  "listen:\n  kafka: 127.0.0.1:19092\n"
			  "upstream:\n  broker: 127.0.0.1:9092\n";

static void client_send(struct fixture *f, const struct codec_buf *b)
{
	cr_assert(eq(i64, (int64_t)write(f->cl, b->data, b->len), (int64_t)b->len));
}

static void broker_send(struct fixture *f, const struct codec_buf *b)
{
	cr_assert(eq(i64, (int64_t)write(f->up, b->data, b->len), (int64_t)b->len));
}


/* The frames in `p` (n bytes): their offsets and ApiKeys (requests) or correlation ids. */
static size_t split(const uint8_t *p, size_t n, size_t *offs, size_t cap)
{
	size_t k = 0, off = 0;
	for (; off + 4 <= n && k < cap; k++) {
		offs[k] = off;
		off += (size_t)be32(p + off) + 4;
	}
	cr_assert(eq(sz, off, n), "whole frames");
	return k;
}

/* A pair with a gate (no mirror: nothing held) whose sidecar is switched. */
static void switched_pair(struct fixture *f)
{
	pair_init(f, yaml);
	f->srv.gate = mirror_gate_new_ex(f->base, f->conf, MIRROR_GATE_NO_WORKERS);
	cr_assert_not_null(f->srv.gate);
	f->srv.switched = true;
}

/* The broker answers the Produce `corr` and the client reads it. */
static void answer_produce(struct fixture *f, int32_t corr)
{
	struct codec_buf r = PAIR_BUF;
	produce_answer(&r, corr);
	broker_send(f, &r);
	uint8_t cl[256];
	size_t n = pair_end_drain(f, f->cl, cl, sizeof(cl));
	cr_assert(eq(sz, n, r.len));
	cr_assert(eq(i32, be32(cl + 4), corr));
	codec_buf_free(&r);
}

/* The batch as the broker got it carries (pid, epoch), a valid CRC, and
 * every other byte as the client sent it. */
static void expect_rewritten(const uint8_t *got, const uint8_t *sent, size_t blen, int64_t pid, int16_t epoch)
{
	cr_assert(eq(int, codec_batch_check(got, blen), CODEC_OK), "the CRC-32C is right");
	cr_assert(eq(i64, be64(got + CODEC_BATCH_PRODUCER_ID_AT), pid));
	cr_assert(eq(i16, be16(got + CODEC_BATCH_EPOCH_AT), epoch));
	cr_assert_not(memcmp(got, sent, CODEC_BATCH_CRC_AT), "offset, length, leader epoch, magic");
	cr_assert_not(memcmp(got + CODEC_BATCH_ATTRIBUTES_AT, sent + CODEC_BATCH_ATTRIBUTES_AT,
			     CODEC_BATCH_PRODUCER_ID_AT - CODEC_BATCH_ATTRIBUTES_AT), "attributes, deltas, timestamps");
	cr_assert_not(memcmp(got + CODEC_BATCH_SEQUENCE_AT, sent + CODEC_BATCH_SEQUENCE_AT,
			     blen - CODEC_BATCH_SEQUENCE_AT), "the base sequence and the records");
}

static double counter(const char *name, const char *labels)
{
	return metric_value(metric_get(METRIC_COUNTER, name, "", labels, NULL, 0));
}

/* ---- the map ------------------------------------------------------------- */

Test(pidmap, bounded_map_evicts_the_oldest_and_keeps_every_other_key)
{
	struct proxy_pidmap *m = proxy_pidmap_new(1000);
	cr_assert_not_null(m);
	int64_t pid;
	int16_t epoch;
	/* 5000 keys through a map of 1000: each lookup agrees with what a FIFO of 1000 keeps */
	for (int64_t k = 0; k < 5000; k++) {
		proxy_pidmap_learn(m, (uint64_t)(k % 2), k * 7919 % 4096, (int16_t)(k % 3), 100000 + k, (int16_t)(k % 5));
		if (k % 97 == 0)
			proxy_pidmap_learn(m, (uint64_t)(k % 2), k * 7919 % 4096, (int16_t)(k % 3), 100000 + k, (int16_t)(k % 5)); /* again: no new key */
		cr_assert(le(sz, proxy_pidmap_size(m), 1000));
	}
	cr_assert(eq(sz, proxy_pidmap_size(m), 1000));
	for (int64_t k = 0; k < 5000; k++) {
		bool kept = k >= 4000;
		/* (pid, epoch) keys repeat every 4096 * 3 steps: none repeats below 5000 */
		cr_assert(eq(int, proxy_pidmap_lookup(m, (uint64_t)(k % 2), k * 7919 % 4096, (int16_t)(k % 3), &pid, &epoch), kept),
			  "key %lld", (long long)k);
		if (kept) {
			cr_assert(eq(i64, pid, 100000 + k));
			cr_assert(eq(i16, epoch, (int16_t)(k % 5)));
		}
	}
	cr_assert_not(proxy_pidmap_lookup(m, 0, 4999 * 7919 % 4096, 9, &pid, &epoch), "another epoch is another key");
	cr_assert_not(proxy_pidmap_lookup(m, 0, 4999 * 7919 % 4096, (int16_t)(4999 % 3), &pid, &epoch),
		      "another client is another key");
	cr_assert(proxy_pidmap_lookup(m, 1, 4999 * 7919 % 4096, (int16_t)(4999 % 3), &pid, &epoch));
	proxy_pidmap_free(m);
}

/* ---- an idempotent producer ---------------------------------------------- */

Test(pidmap, idempotent_batch_waits_for_init_producer_id_then_goes_out_rewritten)
{
	struct fixture f;
	switched_pair(&f);
	double issued0 = counter("syncgate_switch_producer_id_requests_total", "outcome=\"issued\"");
	double remapped0 = counter("syncgate_switch_producer_ids_remapped_total", "");
	double produces0 = counter("syncgate_requests_total", "api=\"Produce\"");
	struct codec_buf p = PAIR_FLEX_BUF, hb = PAIR_BUF, both = PAIR_BUF;
	size_t at = produce_v9(&p, 11, NULL, 7, 0, 0, false, 40);
	heartbeat(&hb, 12);
	codec_write_raw(&both, p.data, p.len);
	codec_write_raw(&both, hb.data, hb.len); /* pipelined behind the Produce */
	client_send(&f, &both);
	uint8_t up[8192];
	size_t offs[8];
	size_t n = pair_end_drain(&f, f.up, up, sizeof(up));
	cr_assert(eq(sz, split(up, n, offs, 8), 1), "only syncgate's InitProducerId goes up");
	cr_assert(eq(i16, be16(up + 4), CODEC_API_INIT_PRODUCER_ID));
	cr_assert(eq(i16, be16(up + 6), 2), "v2 before any ApiVersions answer was seen");
	cr_assert(eq(i32, be32(up + 8), -1), "correlation id -1: never a client's");
	struct codec_iov body = { up + 4 + 19, n - 4 - 19 };
	struct codec_init_producer_id_request rq;
	cr_assert(eq(int, codec_init_producer_id_request_decode(&body, 1, 2, &rq), CODEC_OK));
	cr_assert_null(rq.transactional_id, "an idempotent producer id");
	codec_init_producer_id_request_free(&rq);
	cr_assert(f.c->pid_wait);

	struct codec_buf a = PAIR_BUF;
	init_pid_answer(&a, 2, 0, 5000, 3);
	broker_send(&f, &a);
	n = pair_end_drain(&f, f.up, up, sizeof(up));
	cr_assert(eq(sz, split(up, n, offs, 8), 2), "then the Produce and the request behind it");
	cr_assert(eq(i16, be16(up + 4), CODEC_API_PRODUCE));
	cr_assert(eq(sz, offs[1], p.len), "the Produce keeps its size");
	cr_assert(eq(i16, be16(up + offs[1] + 4), 12), "the Heartbeat after it");
	cr_assert_not(memcmp(up + offs[1], hb.data, hb.len));
	cr_assert_not(memcmp(up, p.data, at), "the request up to its batch is unchanged");
	expect_rewritten(up + at, p.data + at, p.len - at - 3, 5000, 3);
	cr_assert_not(memcmp(up + p.len - 3, p.data + p.len - 3, 3));
	cr_assert_not(f.c->pid_wait);
	cr_assert(eq(sz, proxy_pidmap_size(f.srv.pidmap), 1));
	cr_assert(eq(dbl, counter("syncgate_switch_producer_id_requests_total", "outcome=\"issued\""), issued0 + 1));
	cr_assert(eq(dbl, counter("syncgate_switch_producer_ids_remapped_total", ""), remapped0 + 1));
	cr_assert(eq(dbl, counter("syncgate_requests_total", "api=\"Produce\""), produces0 + 1),
		  "handled twice, counted once");

	/* the broker answers both: the client gets them in order, never the InitProducerId answer */
	struct codec_buf r = PAIR_BUF;
	produce_answer(&r, 11);
	uint8_t hbr[] = { 0, 0, 0, 6, 0, 0, 0, 12, 0, 0 };
	broker_send(&f, &r);
	cr_assert(eq(i64, (int64_t)write(f.up, hbr, sizeof(hbr)), (int64_t)sizeof(hbr)));
	uint8_t cl[512];
	n = pair_end_drain(&f, f.cl, cl, sizeof(cl));
	cr_assert(eq(sz, split(cl, n, offs, 8), 2));
	cr_assert(eq(i32, be32(cl + 4), 11));
	cr_assert(eq(i32, be32(cl + offs[1] + 4), 12));
	codec_buf_free(&p);
	codec_buf_free(&hb);
	codec_buf_free(&both);
	codec_buf_free(&a);
	codec_buf_free(&r);
	pair_fini(&f);
}

Test(pidmap, a_retry_reuses_the_id_and_another_epoch_asks_again)
{
	struct fixture f;
	switched_pair(&f);
	struct codec_buf p = PAIR_FLEX_BUF, a = PAIR_BUF;
	size_t at = produce_v9(&p, 1, NULL, 7, 0, 0, false, 10);
	client_send(&f, &p);
	uint8_t up[8192];
	size_t offs[8];
	size_t n = pair_end_drain(&f, f.up, up, sizeof(up));
	cr_assert(eq(sz, split(up, n, offs, 8), 1));
	init_pid_answer(&a, 2, 0, 5000, 0);
	broker_send(&f, &a);
	n = pair_end_drain(&f, f.up, up, sizeof(up));
	cr_assert(eq(sz, n, p.len));
	answer_produce(&f, 1);

	/* the same batch again (a retry) */
	client_send(&f, &p);
	n = pair_end_drain(&f, f.up, up, sizeof(up));
	cr_assert(eq(sz, split(up, n, offs, 8), 1), "no InitProducerId: the Produce at once");
	cr_assert(eq(i16, be16(up + 4), CODEC_API_PRODUCE));
	expect_rewritten(up + at, p.data + at, p.len - at - 3, 5000, 0);
	answer_produce(&f, 1);

	/* the client bumped its epoch (KIP-360): another key, another id */
	produce_v9(&p, 2, NULL, 7, 1, 0, false, 10);
	client_send(&f, &p);
	n = pair_end_drain(&f, f.up, up, sizeof(up));
	cr_assert(eq(sz, split(up, n, offs, 8), 1));
	cr_assert(eq(i16, be16(up + 4), CODEC_API_INIT_PRODUCER_ID));
	init_pid_answer(&a, 2, 0, 5001, 0);
	broker_send(&f, &a);
	n = pair_end_drain(&f, f.up, up, sizeof(up));
	cr_assert(eq(sz, n, p.len));
	expect_rewritten(up + at, p.data + at, p.len - at - 3, 5001, 0);
	cr_assert(eq(sz, proxy_pidmap_size(f.srv.pidmap), 2));
	codec_buf_free(&p);
	codec_buf_free(&a);
	pair_fini(&f);
}

Test(pidmap, not_switched_everything_passes_byte_for_byte)
{
	struct fixture f;
	switched_pair(&f);
	f.srv.switched = false;
	struct codec_buf p = PAIR_FLEX_BUF, t = PAIR_FLEX_BUF, both = PAIR_BUF;
	produce_v9(&p, 1, NULL, 7, 0, 0, false, 10);
	produce_v9(&t, 2, "tx", 9, 0, 0, true, 10);
	codec_write_raw(&both, p.data, p.len);
	codec_write_raw(&both, t.data, t.len);
	client_send(&f, &both);
	uint8_t up[8192];
	size_t n = pair_end_drain(&f, f.up, up, sizeof(up));
	cr_assert(eq(sz, n, both.len));
	cr_assert_not(memcmp(up, both.data, both.len));
	cr_assert_null(f.srv.pidmap, "nothing allocated");
	codec_buf_free(&p);
	codec_buf_free(&t);
	codec_buf_free(&both);
	pair_fini(&f);
}

Test(pidmap, non_idempotent_batch_passes_unchanged_when_switched)
{
	struct fixture f;
	switched_pair(&f);
	struct codec_buf p = PAIR_FLEX_BUF;
	produce_v9(&p, 1, NULL, -1, -1, -1, false, 10);
	client_send(&f, &p);
	uint8_t up[8192];
	size_t n = pair_end_drain(&f, f.up, up, sizeof(up));
	cr_assert(eq(sz, n, p.len));
	cr_assert_not(memcmp(up, p.data, p.len));
	codec_buf_free(&p);
	pair_fini(&f);
}

Test(pidmap, transactional_batch_of_an_id_not_issued_here_is_refused_and_not_forwarded)
{
	struct fixture f;
	switched_pair(&f);
	double refused0 = counter("syncgate_switch_transactional_refused_total", "");
	struct codec_buf p = PAIR_FLEX_BUF;
	produce_v9(&p, 21, "tx", 9, 0, 0, true, 10);
	client_send(&f, &p);
	uint8_t up[8192], cl[1024];
	cr_assert(eq(sz, pair_end_drain(&f, f.up, up, sizeof(up)), 0), "nothing forwarded");
	size_t n = pair_end_drain(&f, f.cl, cl, sizeof(cl));
	cr_assert(eq(i16, produce_error(cl, n, 21), CODEC_ERROR_INVALID_PRODUCER_ID_MAPPING));
	cr_assert(eq(dbl, counter("syncgate_switch_transactional_refused_total", ""), refused0 + 1));
	codec_buf_free(&p);
	pair_fini(&f);
}

Test(pidmap, transactional_batch_passes_under_the_id_issued_to_its_transactional_id_here)
{
	struct fixture f;
	switched_pair(&f);
	struct codec_buf i = PAIR_FLEX_BUF, a = PAIR_BUF, p = PAIR_FLEX_BUF;
	client_init_pid(&i, 31, "tx");
	client_send(&f, &i);
	uint8_t up[8192], cl[1024];
	size_t n = pair_end_drain(&f, f.up, up, sizeof(up));
	cr_assert(eq(sz, n, i.len));
	cr_assert_not(memcmp(up, i.data, i.len), "the client's own InitProducerId passes unchanged");
	init_pid_answer(&a, 4, 0, 77, 2);
	a.data[4] = 0, a.data[5] = 0, a.data[6] = 0, a.data[7] = 31; /* correlation id 31 */
	broker_send(&f, &a);
	n = pair_end_drain(&f, f.cl, cl, sizeof(cl));
	cr_assert(eq(sz, n, a.len));
	cr_assert_not(memcmp(cl, a.data, a.len), "and its answer too");

	/* a transactional batch of that id and TransactionalId: forwarded byte for byte */
	produce_v9(&p, 32, "tx", 77, 2, 0, true, 10);
	client_send(&f, &p);
	n = pair_end_drain(&f, f.up, up, sizeof(up));
	cr_assert(eq(sz, n, p.len));
	cr_assert_not(memcmp(up, p.data, p.len));
	answer_produce(&f, 32);
	/* a later epoch of it too (KIP-890 transactions bump it at each EndTxn) */
	produce_v9(&p, 33, "tx", 77, 3, 0, true, 10);
	client_send(&f, &p);
	n = pair_end_drain(&f, f.up, up, sizeof(up));
	cr_assert(eq(sz, n, p.len));
	cr_assert_not(memcmp(up, p.data, p.len));
	answer_produce(&f, 33);
	/* the same id under another TransactionalId: not issued to it */
	produce_v9(&p, 34, "other", 77, 2, 0, true, 10);
	client_send(&f, &p);
	cr_assert(eq(sz, pair_end_drain(&f, f.up, up, sizeof(up)), 0));
	n = pair_end_drain(&f, f.cl, cl, sizeof(cl));
	cr_assert(eq(i16, produce_error(cl, n, 34), CODEC_ERROR_INVALID_PRODUCER_ID_MAPPING));
	codec_buf_free(&i);
	codec_buf_free(&a);
	codec_buf_free(&p);
	pair_fini(&f);
}

static bool closed(struct fixture *f)
{
	uint8_t x[256];
	for (int i = 0; i < 100; i++) {
		event_base_loop(f->base, EVLOOP_NONBLOCK);
		ssize_t r = read(f->cl, x, sizeof(x));
		if (r == 0)
			return true;
		if (r > 0)
			return false;
	}
	return false;
}

Test(pidmap, init_producer_id_error_closes_the_pair_and_nothing_is_forwarded)
{
	struct fixture f;
	switched_pair(&f);
	double errors0 = counter("syncgate_switch_producer_id_requests_total", "outcome=\"error\"");
	struct codec_buf p = PAIR_FLEX_BUF, hb = PAIR_BUF, a = PAIR_BUF;
	produce_v9(&p, 41, NULL, 7, 0, 0, false, 10);
	heartbeat(&hb, 42);
	client_send(&f, &p);
	client_send(&f, &hb);
	uint8_t up[8192];
	size_t offs[4];
	size_t n = pair_end_drain(&f, f.up, up, sizeof(up));
	cr_assert(eq(sz, split(up, n, offs, 4), 1));
	cr_assert(eq(i16, be16(up + 4), CODEC_API_INIT_PRODUCER_ID));
	init_pid_answer(&a, 2, CODEC_ERROR_CLUSTER_AUTHORIZATION_FAILED, -1, -1); /* not retriable */
	broker_send(&f, &a);
	cr_assert(closed(&f), "the client sees the connection close (and retries)");
	n = pair_end_drain(&f, f.up, up, sizeof(up));
	cr_assert(eq(sz, n, 0), "neither the Produce nor the request behind it went up");
	cr_assert(eq(dbl, counter("syncgate_switch_producer_id_requests_total", "outcome=\"error\""), errors0 + 1));
	cr_assert(eq(sz, proxy_pidmap_size(f.srv.pidmap), 0));
	codec_buf_free(&p);
	codec_buf_free(&hb);
	codec_buf_free(&a);
	pair_fini(&f);
}

Test(pidmap, the_version_follows_the_brokers_api_versions_answer)
{
	struct fixture f;
	switched_pair(&f);
	/* the client's ApiVersions v0, the broker's answer: InitProducerId 0–4 */
	uint8_t av[] = { 0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 5, 0xff, 0xff };
	cr_assert(eq(i64, (int64_t)write(f.cl, av, sizeof(av)), (int64_t)sizeof(av)));
	uint8_t up[8192], cl[256];
	cr_assert(eq(sz, pair_end_drain(&f, f.up, up, sizeof(up)), sizeof(av)));
	uint8_t ans[] = { 0, 0, 0, 16, 0, 0, 0, 5, 0, 0, 0, 0, 0, 1, 0, 22, 0, 0, 0, 4 };
	cr_assert(eq(i64, (int64_t)write(f.up, ans, sizeof(ans)), (int64_t)sizeof(ans)));
	cr_assert(eq(sz, pair_end_drain(&f, f.cl, cl, sizeof(cl)), sizeof(ans)));
	cr_assert(f.c->init_pid_known);
	cr_assert(eq(i16, proxy_pidmap_version(f.c), 4));
	struct codec_buf p = PAIR_FLEX_BUF, a = PAIR_BUF;
	size_t at = produce_v9(&p, 1, NULL, 7, 0, 0, false, 10);
	client_send(&f, &p);
	size_t n = pair_end_drain(&f, f.up, up, sizeof(up));
	cr_assert(eq(i16, be16(up + 4), CODEC_API_INIT_PRODUCER_ID));
	cr_assert(eq(i16, be16(up + 6), 4));
	cr_assert(eq(sz, n, 4 + 19 + 1 + 4 + 8 + 2 + 1), "v3+: ProducerId and ProducerEpoch -1 asked");
	init_pid_answer(&a, 4, 0, 6000, 0);
	broker_send(&f, &a);
	n = pair_end_drain(&f, f.up, up, sizeof(up));
	cr_assert(eq(sz, n, p.len));
	expect_rewritten(up + at, p.data + at, p.len - at - 3, 6000, 0);
	codec_buf_free(&p);
	codec_buf_free(&a);
	pair_fini(&f);
}

Test(pidmap, a_large_produce_is_read_whole_not_streamed_when_switched)
{
	struct fixture f;
	switched_pair(&f);
	struct codec_buf p = PAIR_FLEX_BUF, a = PAIR_BUF;
	size_t payload = PROXY_STREAM_MIN_REQUEST + 1000;
	size_t at = produce_v9(&p, 1, NULL, 7, 0, 0, false, payload);
	cr_assert(gt(sz, p.len, PROXY_STREAM_MIN_REQUEST));
	size_t off = 0;
	uint8_t *up = malloc(p.len + 4096);
	cr_assert_not_null(up);
	size_t n = 0;
	for (int i = 0; i < 20000 && (off < p.len || n == 0); i++) {
		if (off < p.len) {
			ssize_t w = write(f.cl, p.data + off, p.len - off);
			if (w > 0)
				off += (size_t)w;
		}
		event_base_loop(f.base, EVLOOP_NONBLOCK);
		ssize_t r = read(f.up, up + n, p.len + 4096 - n);
		if (r > 0)
			n += (size_t)r;
	}
	cr_assert(eq(sz, off, p.len));
	n += pair_end_drain(&f, f.up, up + n, p.len + 4096 - n);
	cr_assert(eq(sz, n, 4 + 19 + 1 + 4 + 1), "only the InitProducerId (v2) went up: the Produce was not streamed");
	cr_assert(eq(i16, be16(up + 4), CODEC_API_INIT_PRODUCER_ID));
	init_pid_answer(&a, 2, 0, 7000, 1);
	broker_send(&f, &a);
	n = 0;
	for (int i = 0; i < 20000 && n < p.len; i++) {
		event_base_loop(f.base, EVLOOP_NONBLOCK);
		ssize_t r = read(f.up, up + n, p.len + 4096 - n);
		if (r > 0)
			n += (size_t)r;
	}
	cr_assert(eq(sz, n, p.len));
	expect_rewritten(up + at, p.data + at, p.len - at - 3, 7000, 1);
	free(up);
	codec_buf_free(&p);
	codec_buf_free(&a);
	pair_fini(&f);
}

Test(pidmap, the_same_producer_id_of_two_clients_goes_out_under_two_ids)
{
	/* a source-issued id 7 and an id 7 the destination issued to another
	 * client: never one destination id for both */
	struct fixture f;
	switched_pair(&f);
	struct codec_buf p = PAIR_FLEX_BUF, q = PAIR_FLEX_BUF, a = PAIR_BUF;
	size_t at = produce_v9(&p, 1, NULL, 7, 0, 0, false, 10);
	produce_v9(&q, 2, NULL, 7, 0, 0, false, 10);
	cr_assert_not(memcmp(q.data + 14, "java", 4));
	memcpy(q.data + 14, "jav2", 4); /* ClientId */
	uint8_t up[8192];
	client_send(&f, &p);
	cr_assert(gt(sz, pair_end_drain(&f, f.up, up, sizeof(up)), 0));
	cr_assert(eq(i16, be16(up + 4), CODEC_API_INIT_PRODUCER_ID));
	init_pid_answer(&a, 2, 0, 5000, 0);
	broker_send(&f, &a);
	cr_assert(eq(sz, pair_end_drain(&f, f.up, up, sizeof(up)), p.len));
	expect_rewritten(up + at, p.data + at, p.len - at - 3, 5000, 0);
	answer_produce(&f, 1);
	client_send(&f, &q);
	size_t n = pair_end_drain(&f, f.up, up, sizeof(up));
	size_t offs[4];
	cr_assert(eq(sz, split(up, n, offs, 4), 1));
	cr_assert(eq(i16, be16(up + 4), CODEC_API_INIT_PRODUCER_ID), "another client: its own id");
	init_pid_answer(&a, 2, 0, 5001, 0);
	broker_send(&f, &a);
	cr_assert(eq(sz, pair_end_drain(&f, f.up, up, sizeof(up)), q.len));
	expect_rewritten(up + at, q.data + at, q.len - at - 3, 5001, 0);
	cr_assert(eq(sz, proxy_pidmap_size(f.srv.pidmap), 2));
	codec_buf_free(&p);
	codec_buf_free(&q);
	codec_buf_free(&a);
	pair_fini(&f);
}

Test(pidmap, a_retriable_error_asks_again_after_a_backoff_while_the_produce_waits)
{
	/* a broker that just started answers COORDINATOR_LOAD_IN_PROGRESS (measured) */
	struct fixture f;
	switched_pair(&f);
	double retried0 = counter("syncgate_switch_producer_id_requests_total", "outcome=\"retried\"");
	struct codec_buf p = PAIR_FLEX_BUF, a = PAIR_BUF;
	size_t at = produce_v9(&p, 51, NULL, 7, 0, 0, false, 10);
	client_send(&f, &p);
	uint8_t up[8192];
	size_t n = pair_end_drain(&f, f.up, up, sizeof(up));
	cr_assert(eq(i16, be16(up + 4), CODEC_API_INIT_PRODUCER_ID));
	size_t ask_len = n;
	init_pid_answer(&a, 2, CODEC_ERROR_COORDINATOR_LOAD_IN_PROGRESS, -1, -1);
	broker_send(&f, &a);
	n = 0;
	for (int i = 0; i < 400 && n < ask_len; i++) { /* the backoff: 50 ms */
		usleep(1000);
		n += pair_end_drain(&f, f.up, up + n, sizeof(up) - n);
	}
	cr_assert(eq(sz, n, ask_len), "asked again, and nothing else went up");
	cr_assert(eq(i16, be16(up + 4), CODEC_API_INIT_PRODUCER_ID));
	cr_assert(f.c->pid_wait, "the Produce still waits");
	cr_assert(eq(dbl, counter("syncgate_switch_producer_id_requests_total", "outcome=\"retried\""), retried0 + 1));
	init_pid_answer(&a, 2, 0, 8000, 0);
	broker_send(&f, &a);
	n = pair_end_drain(&f, f.up, up, sizeof(up));
	cr_assert(eq(sz, n, p.len));
	expect_rewritten(up + at, p.data + at, p.len - at - 3, 8000, 0);
	codec_buf_free(&p);
	codec_buf_free(&a);
	pair_fini(&f);
}

Test(pidmap, a_client_that_closes_while_its_produce_waits_still_has_it_delivered_rewritten)
{
	/* invariant 7: what a client sent is delivered; its reads are off while
	 * the Produce waits, so its close is seen after the Produce went */
	struct fixture f;
	switched_pair(&f);
	struct codec_buf p = PAIR_FLEX_BUF, a = PAIR_BUF;
	size_t at = produce_v9(&p, 61, NULL, 7, 0, 0, false, 10);
	client_send(&f, &p);
	uint8_t up[8192];
	pair_end_drain(&f, f.up, up, sizeof(up));
	cr_assert(eq(i16, be16(up + 4), CODEC_API_INIT_PRODUCER_ID));
	close(f.cl);
	f.cl = -1;
	cr_assert(eq(sz, pair_end_drain(&f, f.up, up, sizeof(up)), 0));
	init_pid_answer(&a, 2, 0, 9000, 0);
	broker_send(&f, &a);
	size_t n = pair_end_drain(&f, f.up, up, sizeof(up));
	cr_assert(eq(sz, n, p.len));
	expect_rewritten(up + at, p.data + at, p.len - at - 3, 9000, 0);
	struct codec_buf r = PAIR_BUF;
	produce_answer(&r, 61);
	broker_send(&f, &r); /* read and dropped: nobody is acknowledged */
	for (int i = 0; i < 200 && f.srv.nconns > 0; i++)
		pair_end_drain(&f, f.up, up, sizeof(up));
	cr_assert(eq(sz, f.srv.nconns, 0), "then the pair is freed");
	codec_buf_free(&p);
	codec_buf_free(&a);
	codec_buf_free(&r);
	pair_fini(&f);
}

Test(pidmap, a_new_producer_id_from_an_end_txn_v5_answer_is_issued_to_its_transactional_id)
{
	/* KIP-890: when the epoch runs out, EndTxn v5 answers a new producer id */
	struct fixture f;
	switched_pair(&f);
	struct codec_buf q = PAIR_FLEX_BUF, a = PAIR_BUF, p = PAIR_FLEX_BUF;
	uint8_t up[8192], cl[256];
	/* 77 issued to "tx" through this sidecar (the client's own InitProducerId) */
	client_init_pid(&q, 70, "tx");
	client_send(&f, &q);
	cr_assert(eq(sz, pair_end_drain(&f, f.up, up, sizeof(up)), q.len));
	init_pid_answer(&a, 4, 0, 77, 0);
	a.data[4] = 0, a.data[5] = 0, a.data[6] = 0, a.data[7] = 70; /* correlation id 70 */
	broker_send(&f, &a);
	cr_assert(eq(sz, pair_end_drain(&f, f.cl, cl, sizeof(cl)), a.len));
	client_end_txn(&q, 71, "tx", 77, 32766);
	client_send(&f, &q);
	cr_assert(eq(sz, pair_end_drain(&f, f.up, up, sizeof(up)), q.len), "forwarded unchanged");
	end_txn_answer(&a, 71, 78, 0);
	broker_send(&f, &a);
	cr_assert(eq(sz, pair_end_drain(&f, f.cl, cl, sizeof(cl)), a.len), "answered unchanged");
	produce_v9(&p, 72, "tx", 78, 0, 0, true, 10);
	client_send(&f, &p);
	size_t n = pair_end_drain(&f, f.up, up, sizeof(up));
	cr_assert(eq(sz, n, p.len), "the new id's transactional batch passes");
	cr_assert_not(memcmp(up, p.data, p.len));
	codec_buf_free(&q);
	codec_buf_free(&a);
	codec_buf_free(&p);
	pair_fini(&f);
}
