/*
 * tests/mirror/test_mm2_syncs.c — the offset-syncs an `offsets: mm2` worker
 * keeps to translate synchronous group commits (mirror/mm2.c:
 * mirror_mm2_keep, mirror_mm2_translate): exact at a sync, conservative
 * between syncs (never past the record a committed offset names), bounded
 * to MIRROR_W_MM2_SYNCS per partition, thinning with age so that recent
 * offsets translate closely and old ones still translate.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "mirror/worker.h"

Test(mm2_syncs, translation_is_exact_at_a_sync_and_conservative_between)
{
	struct mirror_wsync s[MIRROR_W_MM2_SYNCS];
	uint32_t n = 0;
	/* source 10 → destination 100, source 20 → 130 (a burst: markers, duplicates in between) */
	mirror_mm2_keep(s, &n, (struct mirror_wsync){10, 100});
	mirror_mm2_keep(s, &n, (struct mirror_wsync){20, 130});
	cr_assert(eq(i64, mirror_mm2_translate(s, n, 9), -1), "no sync at or below: cannot translate");
	cr_assert(eq(i64, mirror_mm2_translate(s, n, 10), 100), "record 10 is next: the destination resumes at its copy");
	cr_assert(eq(i64, mirror_mm2_translate(s, n, 11), 101), "past a sync: right after the synced record");
	cr_assert(eq(i64, mirror_mm2_translate(s, n, 19), 101), "never past the record the commit names");
	cr_assert(eq(i64, mirror_mm2_translate(s, n, 20), 130));
	cr_assert(eq(i64, mirror_mm2_translate(s, n, 21), 131), "caught up: exact (the record after the last sync)");
	/* a sync read again (a consumer restart) is not kept twice */
	mirror_mm2_keep(s, &n, (struct mirror_wsync){20, 130});
	cr_assert(eq(u32, n, 2));
}

Test(mm2_syncs, kept_syncs_are_bounded_and_thin_out_with_age)
{
	struct mirror_wsync s[MIRROR_W_MM2_SYNCS];
	uint32_t n = 0;
	const int64_t last = 100000;
	for (int64_t up = 0; up <= last; up++) /* offset.lag.max=0: one sync per record, destination +5 */
		mirror_mm2_keep(s, &n, (struct mirror_wsync){up, up + 5});
	cr_assert(eq(u32, n, MIRROR_W_MM2_SYNCS));
	for (uint32_t i = 1; i < n; i++)
		cr_assert(lt(i64, s[i - 1].up, s[i].up), "oldest first, strictly increasing");
	cr_assert(eq(i64, s[n - 1].up, last), "the newest is always kept");
	cr_assert(eq(i64, mirror_mm2_translate(s, n, last + 1), last + 6), "a caught-up group translates exactly");
	cr_assert(eq(i64, mirror_mm2_translate(s, n, last), last + 5));
	/* d offsets behind the newest, the translation errs (reads again) by at most about d */
	for (int64_t d = 1; d <= 4096; d *= 2) {
		int64_t committed = last + 1 - d;
		int64_t to = mirror_mm2_translate(s, n, committed);
		cr_assert(ge(i64, to, 0), "translates %lld behind", (long long)d);
		cr_assert(le(i64, to, committed + 5), "never past the record (d=%lld)", (long long)d);
		cr_assert(ge(i64, to, committed + 5 - d - 1), "within about d of exact (d=%lld, to=%lld)", (long long)d,
			  (long long)to);
	}
}
