/* codec/fetch.c: Fetch response scan v4–v18. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"

static enum codec_err scan_dec(const struct codec_iov *iov, int niov, int16_t v, void *m)
{
	return codec_fetch_response_scan(iov, niov, v, m);
}

static void scan_free(void *m)
{
	codec_fetch_response_scan_free(m);
}

static const struct msg_ops fetch_resp = {"fetch_resp", CODEC_API_FETCH, false,
					  sizeof(struct codec_fetch_response_scan), scan_dec, NULL,
					  scan_free};

Test(codec, fetch_response_golden_scan_and_truncations_v4_to_v18)
{
	for (int16_t v = 4; v <= 18; v++)
		check_golden(&fetch_resp, v);
}

Test(codec, fetch_response_scan_positions_point_at_offsets)
{
	for (int16_t v = 4; v <= 18; v++) {
		struct golden g;
		golden_load_v(&g, "fetch_resp", false, CODEC_API_FETCH, v);
		struct codec_iov body = golden_body(&g);
		struct codec_fetch_response_scan s;
		cr_assert(eq(i64, (int64_t)(codec_fetch_response_scan(&body, 1, v, &s)), (int64_t)(CODEC_OK)));
		cr_assert(eq(i64, (int64_t)(s.ntopics), (int64_t)(2)));
		cr_assert(eq(i64, (int64_t)(s.npartitions), (int64_t)(4)));
		if (v >= 13)
			cr_assert(eq(i64, (int64_t)(s.topic_ids[0][0]), (int64_t)(0x01)));
		else
			cr_assert_str_eq(s.topic_names[1], "topic-1");
		for (size_t i = 0; i < s.npartitions; i++) {
			const struct codec_fetch_partition_pos *p = &s.partitions[i];
			cr_assert(eq(i64, (int64_t)(p->topic), (int64_t)(i / 2)));
			cr_assert(eq(i64, (int64_t)(golden_be64(body.base + p->high_watermark_off)), (int64_t)(p->high_watermark)));
			cr_assert(eq(i64, (int64_t)(golden_be64(body.base + p->last_stable_offset_off)), (int64_t)(p->last_stable_offset)));
		}
		cr_assert(eq(i64, (int64_t)(s.partitions[2].high_watermark), (int64_t)(5001)));
		cr_assert(eq(i64, (int64_t)(s.partitions[2].last_stable_offset), (int64_t)(4991)));
		cr_assert(eq(i64, (int64_t)(s.partitions[3].error_code), (int64_t)(CODEC_ERROR_NOT_LEADER_OR_FOLLOWER)));
		if (v >= 12)
			cr_assert(lt(i64, (int64_t)(s.tags_off), (int64_t)(body.len)));
		else
			cr_assert(eq(i64, (int64_t)(s.tags_off), (int64_t)(body.len)));
		codec_fetch_response_scan_free(&s);
		golden_free(&g);
	}
}

Test(codec, fetch_captured_frames_scan)
{
	check_golden_in(&fetch_resp, "kcat", 11);
	check_golden_in(&fetch_resp, "java", 18);
}
