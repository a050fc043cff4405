/*
 * Unit tests of proxy/retried.c (a retry of a batch the source already
 * appended, docs/switchover.md "Producer state") and proxy/pidmap_claim.c on
 * a pair whose upstream end plays the broker: the batch sequences a Produce
 * carries; while the topic is fenced a retry of a remembered batch is
 * answered at the source's offset instead of refused, while a batch not
 * remembered, or one under another epoch, is refused, and so is one a
 * fencing mirror that stopped gating never confirmed; after the switch
 * nothing is answered from memory (the batch is remapped); not fenced, the
 * retry goes to the broker byte for byte; the first PRODUCER_ID claim of a
 * key in the state log is the one kept.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mirror/internal.h"
#include "pidmap_frames.h"

static const char *yaml = "mode: sidecar\n"
			  "listen:\n  kafka: 127.0.0.1:19092\n"
			  "upstream:\n  broker: 127.0.0.1:9092\n";


static const char *yaml_mirror = "mode: sidecar\n"
				 "listen:\n  kafka: 127.0.0.1:19092\n"
				 "upstream:\n  broker: 127.0.0.1:9092\n"
				 "mirrors:\n  - name: dr\n    bootstrap: 127.0.0.1:1\n    sync_topics: [t]\n";

/* A record of mirror dr read from the state log (offset `offset`). */
static void log_record(struct fixture *f, int64_t offset, const char *topic, const struct mirror_record *r)
{
	char *j = mirror_record_to_json("dr", topic, r);
	cr_assert_not_null(j);
	mirror_gate_apply_record(f->srv.gate, j, strlen(j), offset);
	free(j);
}

/* Mirror dr failed topic t over (FENCE and RELEASE in the log); `switched`: and switched to it. */
static void after_failover(struct fixture *f, bool switched)
{
	pair_init(f, yaml_mirror);
	f->srv.gate = mirror_gate_new_ex(f->base, f->conf, MIRROR_GATE_NO_WORKERS);
	cr_assert_not_null(f->srv.gate);
	struct mirror_record fence = { .kind = MIRROR_REC_FENCE, .type = MIRROR_SYNC, .based_on = -1 };
	struct mirror_record release = { .kind = MIRROR_REC_RELEASE, .type = MIRROR_SYNC, .based_on = -1 };
	log_record(f, 0, "t", &fence);
	log_record(f, 1, "t", &release);
	f->srv.switched = switched;
	if (switched)
		snprintf(f->srv.switch_mirror, sizeof(f->srv.switch_mirror), "dr");
}

/* What mirror dr confirmed of "t"[0]: the first offset it does not have. */
static void confirmed(struct fixture *f, int64_t progress)
{
	struct mirror_tstate *t = mirror_tstate_get(f->srv.gate->links[0], "t", true);
	cr_assert_not_null(t);
	struct mirror_pstate *ps = mirror_pstate_get(t, 0, true);
	cr_assert_not_null(ps);
	ps->progress = progress;
}

static void gated_pair(struct fixture *f)
{
	pair_init(f, yaml);
	f->srv.gate = mirror_gate_new_ex(f->base, f->conf, MIRROR_GATE_NO_WORKERS);
	cr_assert_not_null(f->srv.gate);
}

/* What hold.c learns from the broker's answer: batch (pid, epoch, seq..seq) of "t"[0] at `base`. */
static void learn(struct fixture *f, int64_t pid, int16_t epoch, int32_t seq, int64_t base)
{
	struct proxy_produce_part q = { .partition = 0, .offset_span = 1, .producer_id = pid,
					.producer_epoch = epoch, .idempotent = true, .first_seq = seq,
					.last_seq = seq };
	proxy_pidmap_note_appended(f->c, &q, "t", base);
}

static double answered(void)
{
	return metric_value(metric_get(METRIC_COUNTER, "syncgate_produce_retries_answered_total", "", "", NULL, 0));
}

Test(retried, batch_sequences_of_a_request)
{
	struct codec_produce_partition_req p = { .nbatches = 1, .offset_span = 10 };
	p.last_batch = (struct codec_record_batch){ .magic = 2, .producer_id = 7, .base_sequence = 40,
						    .last_offset_delta = 9 };
	int32_t first, last;
	cr_assert(proxy_produce_batch_seqs(&p, &first, &last));
	cr_assert(eq(i32, first, 40));
	cr_assert(eq(i32, last, 49));
	/* three batches of 10: the last one starts at 60, the first at 40 */
	p.nbatches = 3;
	p.offset_span = 30;
	p.last_batch.base_sequence = 60;
	cr_assert(proxy_produce_batch_seqs(&p, &first, &last));
	cr_assert(eq(i32, first, 40));
	cr_assert(eq(i32, last, 69));
	/* the sequence wraps at INT32_MAX as the broker's does */
	p.nbatches = 1;
	p.offset_span = 10;
	p.last_batch.base_sequence = INT32_MAX - 4;
	cr_assert(proxy_produce_batch_seqs(&p, &first, &last));
	cr_assert(eq(i32, first, INT32_MAX - 4));
	cr_assert(eq(i32, last, 4));
	p.last_batch.producer_id = -1;
	cr_assert_not(proxy_produce_batch_seqs(&p, &first, &last), "not idempotent");
	p.last_batch.producer_id = 7;
	p.last_batch.magic = 1;
	cr_assert_not(proxy_produce_batch_seqs(&p, &first, &last), "not a RecordBatch v2");
}

/* Producer 7 sends batch `seq` (epoch `epoch`, request `corr`) of "t"[0]
 * while fenced: nothing reaches the source; the answer's code, *base its offset. */
static int16_t fenced_send(struct fixture *f, int32_t corr, int16_t epoch, int32_t seq, int64_t *base)
{
	struct codec_buf p = PAIR_FLEX_BUF;
	produce_v9(&p, corr, NULL, 7, epoch, seq, false, 10);
	cr_assert(eq(i64, (int64_t)write(f->cl, p.data, p.len), (int64_t)p.len));
	codec_buf_free(&p);
	uint8_t up[8192], cl[1024];
	cr_assert(eq(sz, pair_end_drain(f, f->up, up, sizeof(up)), 0), "nothing reaches the fenced source");
	size_t n = pair_end_drain(f, f->cl, cl, sizeof(cl));
	return produce_answer_of(cl, n, corr, base);
}

Test(retried, fenced_a_retry_of_an_appended_batch_is_answered_at_its_offset_not_refused)
{
	struct fixture f;
	after_failover(&f, false); /* fenced, released (nothing gates it: the answer goes out at once) */
	confirmed(&f, 1235);       /* the failover's drain saw dr have it */
	learn(&f, 7, 0, 0, 1234);
	double before = answered();
	int64_t base;
	cr_assert(eq(i16, fenced_send(&f, 1, 0, 0, &base), CODEC_ERROR_NONE), "acknowledged, not refused");
	cr_assert(eq(i64, base, 1234), "at the offset the source gave");
	cr_assert(eq(dbl, answered(), before + 1));
	/* the next batch (sequence 1) was never appended: the fence refuses it */
	cr_assert(eq(i16, fenced_send(&f, 2, 0, 1, &base), CODEC_ERROR_NOT_ENOUGH_REPLICAS));
	/* nor is another epoch's batch at a remembered sequence a retry */
	cr_assert(eq(i16, fenced_send(&f, 3, 1, 0, &base), CODEC_ERROR_NOT_ENOUGH_REPLICAS));
	pair_fini(&f);
}

Test(retried, fenced_by_a_mirror_that_stopped_gating_without_the_records_the_retry_is_refused)
{
	/* released after a drain that did not finish (or demoted, altered to
	 * async while fenced): dr never confirmed offset 1234, so answering the
	 * retry would acknowledge a record the new primary may lack */
	struct fixture f;
	after_failover(&f, false);
	confirmed(&f, 1234);
	learn(&f, 7, 0, 0, 1234);
	double before = answered();
	int64_t base;
	cr_assert(eq(i16, fenced_send(&f, 1, 0, 0, &base), CODEC_ERROR_NOT_ENOUGH_REPLICAS), "refused, not acked");
	cr_assert(eq(dbl, answered(), before));
	/* once dr is known to have it, the same retry is answered */
	confirmed(&f, 1235);
	cr_assert(eq(i16, fenced_send(&f, 2, 0, 0, &base), CODEC_ERROR_NONE));
	cr_assert(eq(i64, base, 1234));
	pair_fini(&f);
}

Test(retried, switched_a_remembered_batch_is_never_answered_from_memory)
{
	/* after the switch the client's id may be one the destination issued,
	 * equal to the remembered source id: its batch goes on to be remapped */
	struct fixture f;
	after_failover(&f, true);
	learn(&f, 7, 0, 0, 1234);
	double before = answered();
	struct codec_buf p = PAIR_FLEX_BUF;
	produce_v9(&p, 1, NULL, 7, 0, 0, false, 10);
	cr_assert(eq(i64, (int64_t)write(f.cl, p.data, p.len), (int64_t)p.len));
	uint8_t up[8192];
	size_t n = pair_end_drain(&f, f.up, up, sizeof(up));
	cr_assert(ge(sz, n, 6));
	cr_assert(eq(i16, be16(up + 4), CODEC_API_INIT_PRODUCER_ID), "remapped, never acknowledged by syncgate");
	cr_assert(eq(dbl, answered(), before));
	codec_buf_free(&p);
	pair_fini(&f);
}

Test(retried, not_switched_nor_fenced_the_retry_goes_to_the_broker_byte_for_byte)
{
	struct fixture f;
	gated_pair(&f);
	learn(&f, 7, 0, 0, 1234);
	struct codec_buf p = PAIR_FLEX_BUF;
	produce_v9(&p, 1, NULL, 7, 0, 0, false, 10);
	cr_assert(eq(i64, (int64_t)write(f.cl, p.data, p.len), (int64_t)p.len));
	uint8_t up[8192];
	size_t n = pair_end_drain(&f, f.up, up, sizeof(up));
	cr_assert(eq(sz, n, p.len), "the broker answers its own duplicate");
	cr_assert_not(memcmp(up, p.data, p.len));
	codec_buf_free(&p);
	pair_fini(&f);
}

/* ---- one destination id per client producer on every sidecar (pidmap_claim.c) ---- */

static void claim_record(struct fixture *f, int64_t offset, uint64_t client, int64_t pid, int64_t dest)
{
	struct mirror_record r = { .kind = MIRROR_REC_PRODUCER_ID, .type = MIRROR_SYNC, .based_on = -1,
				   .claim = { client, pid, 0, dest, 0 } };
	log_record(f, offset, "*", &r);
}

Test(retried, the_first_claim_of_a_producer_in_the_state_log_is_the_one_every_sidecar_uses)
{
	struct fixture f;
	after_failover(&f, true);
	proxy_pidmap_claims_register(&f.srv);
	/* as a sidecar reads the log: two claims of one key (two sidecars asked at once), then another key */
	claim_record(&f, 2, 77, 5, 1001);
	claim_record(&f, 3, 77, 5, 1002);
	claim_record(&f, 4, 78, 5, 1003);
	int64_t pid;
	int16_t epoch;
	cr_assert(proxy_pidmap_lookup(f.srv.pidmap, 77, 5, 0, &pid, &epoch));
	cr_assert(eq(i64, pid, 1001), "the first claim wins, later ones change nothing");
	cr_assert(proxy_pidmap_lookup(f.srv.pidmap, 78, 5, 0, &pid, &epoch));
	cr_assert(eq(i64, pid, 1003), "another client is another key");
	cr_assert_not(proxy_pidmap_lookup(f.srv.pidmap, 77, 5, 1, &pid, &epoch), "another epoch is another key");
	pair_fini(&f);
}
