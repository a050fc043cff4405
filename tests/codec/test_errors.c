/* codec/errors.c: error-code table and the Produce down-map. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/codec/oracle/oracle.h"

Test(codec, errors_names_and_retriable)
{
	cr_assert_str_eq(codec_error_name(-1), "UNKNOWN_SERVER_ERROR");
	cr_assert_str_eq(codec_error_name(0), "NONE");
	cr_assert_str_eq(codec_error_name(6), "NOT_LEADER_OR_FOLLOWER");
	cr_assert_str_eq(codec_error_name(20), "NOT_ENOUGH_REPLICAS_AFTER_APPEND");
	cr_assert_str_eq(codec_error_name(100), "UNKNOWN_TOPIC_ID");
	cr_assert_str_eq(codec_error_name(133), "SHARE_SESSION_LIMIT_REACHED");
	cr_assert_str_eq(codec_error_name(190), "MIRROR_SYNC_REPLICATION_TIMEOUT");
	cr_assert_str_eq(codec_error_name(191), "NOT_ENOUGH_REMOTE_REPLICAS_AFTER_APPEND");
	cr_assert_str_eq(codec_error_name(500), "UNKNOWN");
	cr_assert_str_eq(codec_error_name(-2), "UNKNOWN");
	cr_assert(codec_error_retriable(6));
	cr_assert(codec_error_retriable(19));
	cr_assert(codec_error_retriable(20));
	cr_assert(codec_error_retriable(7));
	cr_assert_not(codec_error_retriable(35));
	cr_assert_not(codec_error_retriable(-1));
	cr_assert(codec_error_retriable(190));
}

Test(codec, errors_produce_downmap)
{
	struct codec_sync_codes c = {190, 191};
	cr_assert(eq(i64, (int64_t)(codec_produce_error_downmap(190, 13, &c)), (int64_t)(20)));
	cr_assert(eq(i64, (int64_t)(codec_produce_error_downmap(191, 3, &c)), (int64_t)(20)));
	cr_assert(eq(i64, (int64_t)(codec_produce_error_downmap(190, 14, &c)), (int64_t)(190)));
	cr_assert(eq(i64, (int64_t)(codec_produce_error_downmap(191, 14, &c)), (int64_t)(191)));
	cr_assert(eq(i64, (int64_t)(codec_produce_error_downmap(6, 9, &c)), (int64_t)(6)));
	cr_assert(eq(i64, (int64_t)(codec_produce_error_downmap(0, 9, &c)), (int64_t)(0)));
	struct codec_sync_codes other = {150, 151};
	cr_assert(eq(i64, (int64_t)(codec_produce_error_downmap(150, 12, &other)), (int64_t)(20)), "configured codes follow config");
	cr_assert(eq(i64, (int64_t)(codec_produce_error_downmap(190, 12, &other)), (int64_t)(190)));
}

Test(codec, errors_codec_err_str)
{
	for (int e = 0; e < CODEC_ERR__COUNT; e++)
		cr_assert_not_null(codec_err_str((enum codec_err)e));
	cr_assert_str_eq(codec_err_str(CODEC_ERR_UNDERFLOW), "underflow (need more bytes)");
}
