/*
 * tests/mirror/test_lifecycle.c — the (mirror, topic) lifecycle state machine
 * (mirror/lifecycle.c): a transition table, every state × every record
 * against the KIP's rules, the release / stale-promotion race in both
 * orders, two readers of one log, backoff, and the record codec.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdlib.h>
#include <string.h>

#include "mirror/lifecycle.h"

#define A MIRROR_ASYNC
#define S MIRROR_SYNC

static struct mirror_lstate st(enum mirror_type d, enum mirror_type e, bool rel, bool rp, int32_t retry)
{
	struct mirror_lstate s = mirror_lstate_initial(d);
	s.effective = e;
	s.released = rel;
	s.recovery_pending = rp;
	s.retry_attempt = retry;
	s.generation = 7;
	return s;
}

static struct mirror_record rec(enum mirror_rec_kind k)
{
	struct mirror_record r = {.kind = k, .type = S, .based_on = -1};
	return r;
}

static struct mirror_record alter(enum mirror_type t) { struct mirror_record r = rec(MIRROR_REC_ALTER); r.type = t; return r; }
static struct mirror_record reg(bool recovery, int64_t based_on)
{
	struct mirror_record r = rec(MIRROR_REC_REGISTER);
	r.recovery = recovery;
	r.based_on = based_on;
	return r;
}
static struct mirror_record demote(int64_t based_on) { struct mirror_record r = rec(MIRROR_REC_DEMOTE); r.based_on = based_on; return r; }

struct row {
	const char *name;
	struct mirror_lstate in;
	struct mirror_record r;
	/* expected */
	enum mirror_type desired, effective;
	bool released, recovery_pending;
	int32_t retry;
	enum mirror_reject reject;
	bool changed;
};

Test(lifecycle, transition_table)
{
	const struct row rows[] = {
		{"alter sync from async: desired only, promotion deferred", st(A, A, 0, 0, 0), alter(S),
		 S, A, 0, 0, 0, MIRROR_REJ_NONE, 1},
		{"alter async demotes at once", st(S, S, 0, 0, 0), alter(A), A, A, 0, 0, 0, MIRROR_REJ_NONE, 1},
		{"alter async cancels a pending promotion", st(S, A, 0, 0, 0), alter(A), A, A, 0, 0, 0,
		 MIRROR_REJ_NONE, 1},
		{"alter async keeps the released marker (source-side)", st(S, A, 1, 1, 2), alter(A), A, A, 1, 1, 2,
		 MIRROR_REJ_NONE, 1},
		{"alter sync on sync: no type change", st(S, S, 0, 0, 0), alter(S), S, S, 0, 0, 0, MIRROR_REJ_NONE, 1},
		{"register at lag zero promotes", st(S, A, 0, 0, 0), reg(0, -1), S, S, 0, 0, 0, MIRROR_REJ_NONE, 1},
		{"register resets RetryAttempt", st(S, A, 0, 1, 3), reg(1, 7), S, S, 0, 0, 0, MIRROR_REJ_NONE, 1},
		{"register without desired sync is rejected", st(A, A, 0, 0, 0), reg(0, -1), A, A, 0, 0, 0,
		 MIRROR_REJ_NOT_DESIRED_SYNC, 0},
		{"stale register on released: fresh promotion required", st(S, A, 1, 0, 0), reg(0, -1), S, A, 1, 1,
		 1, MIRROR_REJ_RELEASED_FRESH_PROMOTION_REQUIRED, 1},
		{"second stale register backs off further", st(S, A, 1, 1, 1), reg(0, 7), S, A, 1, 1, 2,
		 MIRROR_REJ_RELEASED_FRESH_PROMOTION_REQUIRED, 1},
		{"recovery register clears the marker", st(S, A, 1, 1, 1), reg(1, 7), S, S, 0, 0, 0,
		 MIRROR_REJ_NONE, 1},
		{"register based on an older generation is stale", st(S, A, 0, 0, 0), reg(0, 6), S, A, 0, 0, 0,
		 MIRROR_REJ_STALE_GENERATION, 0},
		{"register when already sync: no-op", st(S, S, 0, 0, 0), reg(0, 3), S, S, 0, 0, 0, MIRROR_REJ_NONE, 0},
		{"release of a sync topic", st(S, S, 0, 0, 0), rec(MIRROR_REC_RELEASE), S, A, 1, 1, 0,
		 MIRROR_REJ_NONE, 1},
		{"release of a pending promotion marks it too", st(S, A, 0, 0, 0), rec(MIRROR_REC_RELEASE), S, A, 1,
		 1, 0, MIRROR_REJ_NONE, 1},
		{"release of an async topic: nothing registered", st(A, A, 0, 0, 0), rec(MIRROR_REC_RELEASE), A, A,
		 0, 0, 0, MIRROR_REJ_NONE, 0},
		{"release twice: unchanged", st(S, A, 1, 1, 0), rec(MIRROR_REC_RELEASE), S, A, 1, 1, 0,
		 MIRROR_REJ_NONE, 0},
		{"demote on the current generation", st(S, S, 0, 0, 0), demote(7), S, A, 0, 1, 0,
		 MIRROR_REJ_ALL_PARTITIONS_FAILING, 1},
		{"demote on an older generation is stale", st(S, S, 0, 0, 0), demote(5), S, S, 0, 0, 0,
		 MIRROR_REJ_STALE_GENERATION, 0},
		{"demote of an async topic: no-op", st(S, A, 0, 0, 0), demote(7), S, A, 0, 0, 0, MIRROR_REJ_NONE, 0},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *w = &rows[i];
		struct mirror_lstate s = w->in;
		struct mirror_apply_out out;
		mirror_lifecycle_apply(&s, &w->r, &out);
		cr_expect(eq(i64, (int64_t)(s.desired), (int64_t)(w->desired)), "%s: desired", w->name);
		cr_expect(eq(i64, (int64_t)(s.effective), (int64_t)(w->effective)), "%s: effective", w->name);
		cr_expect(eq(i64, (int64_t)(s.released), (int64_t)(w->released)), "%s: released", w->name);
		cr_expect(eq(i64, (int64_t)(s.recovery_pending), (int64_t)(w->recovery_pending)), "%s: recovery_pending", w->name);
		cr_expect(eq(i64, (int64_t)(s.retry_attempt), (int64_t)(w->retry)), "%s: retry_attempt", w->name);
		cr_expect(eq(i64, (int64_t)(out.reject), (int64_t)(w->reject)), "%s: reject %s", w->name, mirror_reject_str(out.reject));
		cr_expect(eq(i64, (int64_t)(out.changed), (int64_t)(w->changed)), "%s: changed", w->name);
		cr_expect(eq(i64, (int64_t)(s.generation), (int64_t)(w->changed ? 8 : 7)), "%s: generation", w->name);
	}
}

/* Every state × every record: the rules that must hold whatever the state. */
Test(lifecycle, every_state_times_every_record)
{
	struct mirror_record recs[] = {
		alter(A), alter(S), reg(0, -1), reg(1, -1), reg(0, 7), reg(1, 7), reg(1, 6),
		rec(MIRROR_REC_RELEASE), demote(7), demote(6),
	};
	int n = 0;
	for (int d = 0; d < 2; d++)
		for (int e = 0; e < 2; e++)
			for (int rel = 0; rel < 2; rel++)
				for (int rp = 0; rp < 2; rp++)
					for (size_t k = 0; k < sizeof(recs) / sizeof(recs[0]); k++) {
						struct mirror_lstate in = st(d ? S : A, e ? S : A, rel, rp, 1), s = in;
						const struct mirror_record *r = &recs[k];
						struct mirror_apply_out out;
						mirror_lifecycle_apply(&s, r, &out);
						n++;
						cr_expect(eq(i64, (int64_t)(s.generation), (int64_t)(in.generation + (out.changed ? 1 : 0))));
						/* nothing but REGISTER ever makes a topic gate */
						if (r->kind != MIRROR_REC_REGISTER)
							cr_expect_not((s.effective == S && in.effective != S));
						/* a released tuple is only ever cleared by a recovery promotion */
						if (in.released && !s.released)
							cr_expect(r->kind == MIRROR_REC_REGISTER && r->recovery &&
								  s.effective == S);
						/* a promotion needs desired SYNC */
						if (s.effective == S && in.effective != S)
							cr_expect(in.desired == S && (!in.released || r->recovery));
						/* effective SYNC is never left with the marker set */
						cr_expect_not((s.effective == S && s.released && !in.released));
						if (r->kind == MIRROR_REC_ALTER) {
							cr_expect(eq(i64, (int64_t)(s.desired), (int64_t)(r->type)));
							if (r->type == A)
								cr_expect(eq(i64, (int64_t)(s.effective), (int64_t)(A)));
						}
						if (r->kind == MIRROR_REC_RELEASE)
							cr_expect(eq(i64, (int64_t)(s.effective), (int64_t)(A)));
						if (out.reject == MIRROR_REJ_STALE_GENERATION ||
						    out.reject == MIRROR_REJ_NOT_DESIRED_SYNC)
							cr_expect_not(out.changed);
					}
	cr_expect(eq(i64, (int64_t)(n), (int64_t)(160)));
}

static void fold(struct mirror_lstate *s, const struct mirror_record *rs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct mirror_apply_out out;
		mirror_lifecycle_apply(s, &rs[i], &out);
	}
}

/* A promotion decided on generation g (lag zero seen) races an operator's
 * release. Log order decides; every reader agrees. */
Test(lifecycle, release_vs_stale_promotion_both_orders)
{
	struct mirror_lstate base = mirror_lstate_initial(S); /* desired SYNC, ASYNC, gen 0 */
	struct mirror_record promote = reg(false, base.generation);
	struct mirror_record release = rec(MIRROR_REC_RELEASE);

	/* Release first, stale promotion after: rejected, stays released. */
	struct mirror_lstate s1 = base;
	struct mirror_apply_out out;
	mirror_lifecycle_apply(&s1, &release, &out);
	mirror_lifecycle_apply(&s1, &promote, &out);
	cr_assert(eq(i64, (int64_t)(out.reject), (int64_t)(MIRROR_REJ_RELEASED_FRESH_PROMOTION_REQUIRED)));
	cr_assert(out.count_rejected);
	cr_assert(eq(i64, (int64_t)(s1.effective), (int64_t)(A)));
	cr_assert(s1.released);
	cr_assert(s1.recovery_pending);
	cr_assert(eq(i64, (int64_t)(s1.retry_attempt), (int64_t)(1)));

	/* Promotion first, release after: released, matching operator intent. */
	struct mirror_lstate s2 = base;
	mirror_lifecycle_apply(&s2, &promote, &out);
	cr_assert(eq(i64, (int64_t)(s2.effective), (int64_t)(S)));
	mirror_lifecycle_apply(&s2, &release, &out);
	cr_assert(eq(i64, (int64_t)(s2.effective), (int64_t)(A)));
	cr_assert(s2.released);
	cr_assert(s2.recovery_pending);

	/* Both orders end not gating; recovery then needs RecoveryPromotion. */
	struct mirror_record recovery = reg(true, s1.generation);
	mirror_lifecycle_apply(&s1, &recovery, &out);
	cr_assert(eq(i64, (int64_t)(s1.effective), (int64_t)(S)));
	cr_assert_not(s1.released);
	cr_assert_not(s1.recovery_pending);
	cr_assert(eq(i64, (int64_t)(s1.retry_attempt), (int64_t)(0)));
}

Test(lifecycle, two_readers_of_one_log_agree)
{
	const struct mirror_record log[] = {
		alter(S), reg(0, 1), rec(MIRROR_REC_RELEASE), reg(0, 2), reg(1, 3), alter(A), reg(1, 5),
		alter(S), reg(1, 6), demote(7), demote(7), reg(1, 8), rec(MIRROR_REC_RELEASE), reg(1, -1),
	};
	size_t n = sizeof(log) / sizeof(log[0]);
	/* Reader 1 folds everything at once; reader 2 restarts halfway (state
	 * rebuilt from the start of the log) and reads on. */
	struct mirror_lstate r1 = mirror_lstate_initial(A), r2 = mirror_lstate_initial(A);
	fold(&r1, log, n);
	fold(&r2, log, n / 2);
	r2 = mirror_lstate_initial(A);
	fold(&r2, log, n);
	cr_assert(eq(i64, (int64_t)(memcmp(&r1.generation, &r2.generation, sizeof(r1.generation))), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(r1.desired), (int64_t)(r2.desired)));
	cr_assert(eq(i64, (int64_t)(r1.effective), (int64_t)(r2.effective)));
	cr_assert(eq(i64, (int64_t)(r1.released), (int64_t)(r2.released)));
	cr_assert(eq(i64, (int64_t)(r1.recovery_pending), (int64_t)(r2.recovery_pending)));
	cr_assert(eq(i64, (int64_t)(r1.retry_attempt), (int64_t)(r2.retry_attempt)));
	/* and the end state is the one the rules give */
	cr_assert(eq(i64, (int64_t)(r1.effective), (int64_t)(S)));
	cr_assert_not(r1.released);
	/* config desired differs between readers: an ALTER in the log wins */
	struct mirror_lstate r3 = mirror_lstate_initial(S);
	fold(&r3, log, n);
	cr_assert(eq(i64, (int64_t)(r3.desired), (int64_t)(r1.desired)));
	cr_assert(eq(i64, (int64_t)(r3.effective), (int64_t)(r1.effective)));
}

Test(lifecycle, backoff_doubles_and_is_capped)
{
	cr_assert(eq(i64, (int64_t)(mirror_lifecycle_backoff_ms(0)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(mirror_lifecycle_backoff_ms(1)), (int64_t)(500)));
	cr_assert(eq(i64, (int64_t)(mirror_lifecycle_backoff_ms(2)), (int64_t)(1000)));
	cr_assert(eq(i64, (int64_t)(mirror_lifecycle_backoff_ms(3)), (int64_t)(2000)));
	cr_assert(eq(i64, (int64_t)(mirror_lifecycle_backoff_ms(7)), (int64_t)(30000)));
	cr_assert(eq(i64, (int64_t)(mirror_lifecycle_backoff_ms(1000)), (int64_t)(30000)));
	for (int32_t i = 1; i < 40; i++)
		cr_assert(ge(i64, (int64_t)(mirror_lifecycle_backoff_ms(i + 1)), (int64_t)(mirror_lifecycle_backoff_ms(i))));
}

Test(lifecycle, record_json_round_trip)
{
	struct mirror_record r = {.kind = MIRROR_REC_REGISTER, .type = S, .recovery = true, .based_on = 42,
				  .origin = 0xdeadbeef12345678ull, .seq = 9};
	char *j = mirror_record_to_json("dr-east", "orders", &r);
	cr_assert_not_null(j);
	char m[64], t[64];
	struct mirror_record back;
	cr_assert(eq(i64, (int64_t)(mirror_record_from_json(j, strlen(j), m, sizeof(m), t, sizeof(t), &back)), (int64_t)(0)));
	cr_assert_str_eq(m, "dr-east");
	cr_assert_str_eq(t, "orders");
	cr_assert(eq(i64, (int64_t)(back.kind), (int64_t)(r.kind)));
	cr_assert(eq(i64, (int64_t)(back.recovery), (int64_t)(true)));
	cr_assert(eq(i64, (int64_t)(back.based_on), (int64_t)(42)));
	cr_assert(eq(i64, (int64_t)(back.origin), (int64_t)(r.origin)));
	cr_assert(eq(i64, (int64_t)(back.seq), (int64_t)(9)));
	free(j);
	/* a hand-written record (tests, operators): defaults apply */
	const char *min = "{\"mirror\":\"dr\",\"topic\":\"t\",\"op\":\"REGISTER\",\"recovery\":false}";
	cr_assert(eq(i64, (int64_t)(mirror_record_from_json(min, strlen(min), m, sizeof(m), t, sizeof(t), &back)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(back.kind), (int64_t)(MIRROR_REC_REGISTER)));
	cr_assert(eq(i64, (int64_t)(back.based_on), (int64_t)(-1)));
	const char *bad[] = {"", "[]", "{\"mirror\":\"dr\",\"topic\":\"t\",\"op\":\"NOPE\"}",
			     "{\"topic\":\"t\",\"op\":\"ALTER\"}", "{\"mirror\":\"dr\",\"topic\":\"t\",\"op\":\"ALTER\",\"type\":\"X\"}"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect(eq(i64, (int64_t)(mirror_record_from_json(bad[i], strlen(bad[i]), m, sizeof(m), t, sizeof(t), &back)), (int64_t)(-1)),
			     "%s", bad[i]);
}

/* ------------------------------------------------------------------------ */
/* Failover fence: FENCE/UNFENCE records                          */
/* ------------------------------------------------------------------------ */

/* FENCE and UNFENCE only set the fence: in every state, the type, the
 * Released marker, recovery and RetryAttempt are untouched. While fenced,
 * no REGISTER (stale, fresh or recovery) applies: a failed-over topic is
 * never re-promoted on its old source. */
Test(lifecycle, fence_sets_only_the_fence_and_blocks_every_promotion)
{
	struct mirror_record regs[] = {reg(0, -1), reg(1, -1), reg(0, 7), reg(1, 7)};
	int n = 0;
	for (int d = 0; d < 2; d++)
		for (int e = 0; e < 2; e++)
			for (int rel = 0; rel < 2; rel++)
				for (int rp = 0; rp < 2; rp++)
					for (int fenced = 0; fenced < 2; fenced++) {
						struct mirror_lstate in = st(d ? S : A, e ? S : A, rel, rp, 1);
						in.fenced = fenced;
						for (int k = 0; k < 2; k++) {
							struct mirror_lstate s = in;
							struct mirror_apply_out out;
							struct mirror_record r = rec(k ? MIRROR_REC_FENCE : MIRROR_REC_UNFENCE);
							mirror_lifecycle_apply(&s, &r, &out);
							cr_expect(eq(i64, (int64_t)(s.fenced), (int64_t)((bool)k)));
							cr_expect(eq(i64, (int64_t)(out.changed), (int64_t)(fenced != k)));
							cr_expect(eq(i64, (int64_t)(s.generation), (int64_t)(in.generation + (fenced != k))));
							cr_expect(eq(i64, (int64_t)(s.desired), (int64_t)(in.desired)));
							cr_expect(eq(i64, (int64_t)(s.effective), (int64_t)(in.effective)));
							cr_expect(eq(i64, (int64_t)(s.released), (int64_t)(in.released)));
							cr_expect(eq(i64, (int64_t)(s.recovery_pending), (int64_t)(in.recovery_pending)));
							cr_expect(eq(i64, (int64_t)(s.retry_attempt), (int64_t)(in.retry_attempt)));
							cr_expect(eq(i64, (int64_t)(out.reject), (int64_t)(MIRROR_REJ_NONE)));
							n++;
						}
						if (!fenced)
							continue;
						for (size_t k = 0; k < sizeof(regs) / sizeof(regs[0]); k++) {
							struct mirror_lstate s = in;
							struct mirror_apply_out out;
							mirror_lifecycle_apply(&s, &regs[k], &out);
							cr_expect(eq(i64, (int64_t)(out.reject), (int64_t)(MIRROR_REJ_FENCED)));
							cr_expect_not(out.changed);
							cr_expect_not(out.count_rejected);
							cr_expect(eq(i64, (int64_t)(memcmp(&s, &in, sizeof(s))), (int64_t)(0)));
							n++;
						}
					}
	cr_expect(eq(i64, (int64_t)(n), (int64_t)(32 * 2 + 16 * 4)));
}

/* The failover sequence as the log holds it: FENCE, RELEASE; the recovery
 * promotion the decider may write later is rejected until UNFENCE; after
 * UNFENCE the KIP's recovery applies again. A reader restarting from the
 * start of the log reaches the same state. */
Test(lifecycle, failover_sequence_then_unfence)
{
	struct mirror_lstate s = mirror_lstate_initial(S);
	const struct mirror_record pre[] = {reg(0, -1)};
	fold(&s, pre, 1);
	cr_assert(eq(i64, (int64_t)(s.effective), (int64_t)(S)));
	struct mirror_apply_out out;
	struct mirror_record fence = rec(MIRROR_REC_FENCE), release = rec(MIRROR_REC_RELEASE),
			     unfence = rec(MIRROR_REC_UNFENCE), recovery = reg(1, -1);
	mirror_lifecycle_apply(&s, &fence, &out);
	cr_assert(s.fenced);
	cr_assert(eq(i64, (int64_t)(s.effective), (int64_t)(S)), "the fence alone keeps gating (the drain confirms what was sent)");
	mirror_lifecycle_apply(&s, &release, &out);
	cr_assert(s.released && s.fenced && s.effective == A);
	mirror_lifecycle_apply(&s, &recovery, &out);
	cr_assert(eq(i64, (int64_t)(out.reject), (int64_t)(MIRROR_REJ_FENCED)));
	cr_assert(eq(i64, (int64_t)(s.effective), (int64_t)(A)));
	cr_assert(s.released);
	mirror_lifecycle_apply(&s, &unfence, &out);
	cr_assert(s.released && !s.fenced);
	mirror_lifecycle_apply(&s, &recovery, &out);
	cr_assert(eq(i64, (int64_t)(s.effective), (int64_t)(S)));
	cr_assert_not(s.released);

	const struct mirror_record log[] = {reg(0, -1), fence, release, recovery};
	struct mirror_lstate r1 = mirror_lstate_initial(S), r2 = mirror_lstate_initial(S);
	fold(&r1, log, 4);
	fold(&r2, log, 2);
	r2 = mirror_lstate_initial(S);
	fold(&r2, log, 4);
	cr_assert(eq(i64, (int64_t)(memcmp(&r1, &r2, sizeof(r1))), (int64_t)(0)));
	cr_assert(r1.fenced && r1.released && r1.effective == A);
}

Test(lifecycle, fence_record_json_round_trip)
{
	for (int k = 0; k < 2; k++) {
		struct mirror_record r = rec(k ? MIRROR_REC_FENCE : MIRROR_REC_UNFENCE), back;
		char *j = mirror_record_to_json("dr", "orders", &r);
		char m[16], t[16];
		cr_assert(eq(i64, (int64_t)(mirror_record_from_json(j, strlen(j), m, sizeof(m), t, sizeof(t), &back)), (int64_t)(0)));
		cr_assert(eq(i64, (int64_t)(back.kind), (int64_t)(r.kind)));
		cr_assert_str_eq(mirror_rec_kind_str(back.kind), k ? "FENCE" : "UNFENCE");
		free(j);
	}
}

Test(lifecycle, producer_id_claim_record_json_round_trip)
{
	struct mirror_record r = rec(MIRROR_REC_PRODUCER_ID), back;
	r.claim = (struct mirror_producer_claim){ 0xfedcba9876543210ull, 4242, 3, 1001, 0 };
	char *j = mirror_record_to_json("dr", "*", &r);
	cr_assert_not_null(j);
	char m[16], t[16];
	cr_assert(eq(int, mirror_record_from_json(j, strlen(j), m, sizeof(m), t, sizeof(t), &back), 0));
	cr_assert_str_eq(mirror_rec_kind_str(back.kind), "PRODUCER_ID");
	cr_assert_str_eq(t, "*");
	cr_assert(eq(u64, back.claim.client, 0xfedcba9876543210ull), "the full 64-bit client hash");
	cr_assert(eq(i64, back.claim.producer_id, 4242));
	cr_assert(eq(i16, back.claim.epoch, 3));
	cr_assert(eq(i64, back.claim.dest_producer_id, 1001));
	cr_assert(eq(i16, back.claim.dest_epoch, 0));
	free(j);
	/* a claim without its destination id is malformed (skipped by every reader) */
	const char *bad = "{\"v\":1,\"mirror\":\"dr\",\"topic\":\"*\",\"op\":\"PRODUCER_ID\",\"client\":\"01\","
			  "\"producer_id\":1,\"epoch\":0}";
	cr_assert(eq(int, mirror_record_from_json(bad, strlen(bad), m, sizeof(m), t, sizeof(t), &back), -1));
}
