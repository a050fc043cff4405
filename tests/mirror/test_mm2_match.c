/*
 * tests/mirror/test_mm2_match.c — the in-order record match that proves
 * `offsets: mm2` progress between MirrorMaker 2's offset-syncs
 * (mirror/mm2_fingerprint.c: mirror_mm2_match): each source record proved
 * only by its own copy, in order; re-copies of matched records skipped; a
 * destination record that is no source record (another writer) or a later
 * one (a record skipped) stops the proof where it is.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <string.h>

#include "mirror/mm2_match.h"

/* A record whose fingerprint is derived from `id` (same id: same content). */
static struct mirror_mrec rec(int64_t offset, int id)
{
	struct mirror_mrec r = { .offset = offset };
	memset(r.fp, 0, sizeof(r.fp));
	memcpy(r.fp, &id, sizeof(id));
	return r;
}

/* n source records with ids ids[i] at offsets base + i. */
static void seq(struct mirror_mrec *a, int64_t base, const int *ids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		a[i] = rec(base + (int64_t)i, ids[i]);
}

Test(mm2_match, in_order_copies_prove_each_record_and_wait_for_more)
{
	struct mirror_mrec src[4], dst[3];
	seq(src, 11, (int[]){1, 2, 3, 4}, 4);
	seq(dst, 101, (int[]){1, 2, 3}, 3);
	size_t si = 0, di = 0;
	cr_assert(eq(int, mirror_mm2_match(src, 4, dst, 3, &si, &di, 16, NULL), MIRROR_MATCH_MORE));
	cr_assert(eq(sz, si, 3), "three records proved, the fourth not on the destination yet");
	cr_assert(eq(sz, di, 3));
	cr_assert(eq(i64, src[si - 1].offset, 13));
	cr_assert(eq(i64, dst[di - 1].offset, 103));
	/* continued later from where it stopped */
	struct mirror_mrec dst2[1] = { rec(104, 4) };
	di = 0;
	cr_assert(eq(int, mirror_mm2_match(src, 4, dst2, 1, &si, &di, 16, NULL), MIRROR_MATCH_MORE));
	cr_assert(eq(sz, si, 4));
}

Test(mm2_match, source_offset_gaps_are_not_records)
{
	/* transaction markers and compaction leave offsets without records on the source */
	struct mirror_mrec src[3] = { rec(11, 1), rec(15, 2), rec(16, 3) };
	struct mirror_mrec dst[3] = { rec(101, 1), rec(102, 2), rec(103, 3) };
	size_t si = 0, di = 0;
	cr_assert(eq(int, mirror_mm2_match(src, 3, dst, 3, &si, &di, 16, NULL), MIRROR_MATCH_MORE));
	cr_assert(eq(sz, si, 3));
}

Test(mm2_match, recopies_of_matched_records_are_skipped)
{
	/* a task restart resent 2 and 3 after they were copied once */
	struct mirror_mrec src[4], dst[6];
	seq(src, 11, (int[]){1, 2, 3, 4}, 4);
	seq(dst, 101, (int[]){1, 2, 3, 2, 3, 4}, 6);
	size_t si = 0, di = 0, at[4];
	cr_assert(eq(int, mirror_mm2_match(src, 4, dst, 6, &si, &di, 16, at), MIRROR_MATCH_MORE));
	cr_assert(eq(sz, si, 4));
	cr_assert(eq(sz, at[0], 0));
	cr_assert(eq(sz, at[2], 2), "each source record's own (first) copy");
	cr_assert(eq(sz, at[3], 5));
	cr_assert(eq(i64, dst[di - 1].offset, 106), "4 proved at its own copy, after the re-copies");
}

Test(mm2_match, recopy_older_than_the_window_stops)
{
	struct mirror_mrec src[4], dst[5];
	seq(src, 11, (int[]){1, 2, 3, 4}, 4);
	seq(dst, 101, (int[]){1, 2, 3, 1, 4}, 5);
	size_t si = 0, di = 0;
	cr_assert(eq(int, mirror_mm2_match(src, 4, dst, 5, &si, &di, 2, NULL), MIRROR_MATCH_FOREIGN),
		  "1 lies 3 matched records back, beyond a window of 2: not known as a re-copy");
	cr_assert(eq(sz, si, 3));
}

Test(mm2_match, another_writer_stops_the_proof_before_its_record)
{
	struct mirror_mrec src[3], dst[4];
	seq(src, 11, (int[]){1, 2, 3}, 3);
	seq(dst, 101, (int[]){1, 99, 2, 3}, 4);
	size_t si = 0, di = 0;
	cr_assert(eq(int, mirror_mm2_match(src, 3, dst, 4, &si, &di, 16, NULL), MIRROR_MATCH_FOREIGN));
	cr_assert(eq(sz, si, 1), "only the record before the foreign one is proved");
	cr_assert(eq(sz, di, 1), "stopped at the foreign record");
	/* called again: still stopped there (nothing proved past it) */
	cr_assert(eq(int, mirror_mm2_match(src, 3, dst, 4, &si, &di, 16, NULL), MIRROR_MATCH_FOREIGN));
	cr_assert(eq(sz, si, 1));
}

Test(mm2_match, a_skipped_source_record_stops_the_proof)
{
	/* 2 is not on the destination (e.g. aborted, and MM2 reads read_committed) */
	struct mirror_mrec src[3], dst[2];
	seq(src, 11, (int[]){1, 2, 3}, 3);
	seq(dst, 101, (int[]){1, 3}, 2);
	size_t si = 0, di = 0;
	cr_assert(eq(int, mirror_mm2_match(src, 3, dst, 2, &si, &di, 16, NULL), MIRROR_MATCH_GAP));
	cr_assert(eq(sz, si, 1), "3 is there, 2 is not: neither is proved");
}

Test(mm2_match, equal_content_records_each_need_their_own_copy)
{
	/* the same record produced twice: one copy proves only the first */
	struct mirror_mrec src[2], dst[1];
	seq(src, 11, (int[]){7, 7}, 2);
	seq(dst, 101, (int[]){7}, 1);
	size_t si = 0, di = 0;
	cr_assert(eq(int, mirror_mm2_match(src, 2, dst, 1, &si, &di, 16, NULL), MIRROR_MATCH_MORE));
	cr_assert(eq(sz, si, 1));
}

Test(mm2_match, nothing_on_either_side)
{
	size_t si = 0, di = 0;
	cr_assert(eq(int, mirror_mm2_match(NULL, 0, NULL, 0, &si, &di, 16, NULL), MIRROR_MATCH_MORE));
	cr_assert(eq(sz, si, 0));
	cr_assert(eq(str, (char *)mirror_match_stop_str(MIRROR_MATCH_FOREIGN), "foreign"));
}
