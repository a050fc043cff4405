/*
 * codec/txn.h — syncgate's own requests about a transaction (the commit gate,
 * proxy/txn_hold.c): DescribeTransactions (key 65, v0) and a ListOffsets
 * (key 2, v6) of the latest offsets. Part of codec/codec.h (include that).
 */
#ifndef SYNCGATE_CODEC_TXN_H
#define SYNCGATE_CODEC_TXN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec/batch.h"

/** The version of the DescribeTransactions and ListOffsets requests below. */
#define CODEC_DESCRIBE_TRANSACTIONS_VERSION 0
#define CODEC_TXN_LIST_OFFSETS_VERSION 6
#define CODEC_API_DESCRIBE_TRANSACTIONS 65

/** One topic of a transaction: its partitions (DescribeTransactions v0 Topics). */
struct codec_txn_topic {
	char *name;
	struct codec_int32s partitions;
};

/** One TransactionStates element of a DescribeTransactions v0 response. */
struct codec_txn_state {
	int16_t error_code;
	char *transactional_id;
	char *state;                 /* "Ongoing", "PrepareCommit", "CompleteCommit", ... */
	int32_t timeout_ms;
	int64_t start_time_ms;
	int64_t producer_id;
	int16_t producer_epoch;
	struct codec_txn_topic *topics;
	size_t ntopics;
};

/** A DescribeTransactions v0 response. */
struct codec_describe_transactions_response {
	int32_t throttle_time_ms;
	struct codec_txn_state *states;
	size_t nstates;
};

/**
 * A whole DescribeTransactions v0 request frame (size prefix, header v2 with
 * `correlation_id` and `client_id`) asking for one transactional id into
 * `out` (initialised by the caller). 0, or -1 on an encoding error.
 */
int codec_describe_transactions_request(const char *transactional_id, int32_t correlation_id,
					const char *client_id, struct codec_buf *out);

/** Decode a DescribeTransactions v0 response body (after the response header). */
enum codec_err codec_describe_transactions_response_decode(const struct codec_iov *iov, int niov,
							   struct codec_describe_transactions_response *out)
	CODEC_WUR;
/** Release a decoded DescribeTransactions response (what was read, also after an error). */
void codec_describe_transactions_response_free(struct codec_describe_transactions_response *m);

/** One partition asked for by codec_list_offsets_latest_request(). */
struct codec_txn_partition {
	const char *topic;           /* borrowed */
	int32_t partition;
};

/**
 * A whole ListOffsets v6 request frame (ReplicaId -1, Timestamp -1: the
 * latest offset — the high watermark for `isolation_level` 0
 * (read_uncommitted), the last stable offset for 1 (read_committed)) for the
 * `n` partitions of `parts`, partitions of one topic adjacent. 0 or -1.
 */
int codec_list_offsets_latest_request(const struct codec_txn_partition *parts, size_t n, int8_t isolation_level,
				      int32_t correlation_id, const char *client_id, struct codec_buf *out);

/** Called for each partition of a ListOffsets v6 response; `topic` borrowed for the call. */
typedef void (*codec_list_offsets_fn)(void *arg, const char *topic, int32_t partition, int16_t error_code,
				      int64_t offset);
/** Read a ListOffsets v6 response body, calling `fn` per partition. Returns the reader's error. */
enum codec_err codec_list_offsets_response_each(const struct codec_iov *iov, int niov, codec_list_offsets_fn fn,
						void *arg) CODEC_WUR;

#endif
