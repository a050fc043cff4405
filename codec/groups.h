/*
 * codec/groups.h — consumer-group messages syncgate reads: OffsetCommit
 * (key 8), whose answer a synchronous group commit holds until the mirrors'
 * destinations store the same commit (proxy/commit_hold.c), and
 * TxnOffsetCommit (key 28), whose offsets a held EndTxn(commit) stores there
 * (proxy/txn_offsets.c). Pure.
 */
#ifndef SYNCGATE_CODEC_GROUPS_H
#define SYNCGATE_CODEC_GROUPS_H

#include "codec/reader.h"

#define CODEC_OFFSET_COMMIT_MIN 2       /* the lowest version Kafka 4.x serves */
#define CODEC_OFFSET_COMMIT_MAX 10
#define CODEC_OFFSET_COMMIT_TOPIC_IDS 10 /* topics named by TopicId from v10 */

/** One partition of an OffsetCommit request (spec OffsetCommitRequestPartition). */
struct codec_offset_commit_partition {
	int32_t index;
	int64_t offset;          /* CommittedOffset: the next offset the group consumes */
	int32_t leader_epoch;    /* CommittedLeaderEpoch (v6+), -1 before */
	char *metadata;          /* CommittedMetadata, NULL when null */
};
/** One topic of an OffsetCommit request: Name (v2–v9) or TopicId (v10+). */
struct codec_offset_commit_topic {
	char *name;              /* NULL from v10 */
	uint8_t topic_id[16];    /* zero before v10 */
	struct codec_offset_commit_partition *partitions;
	size_t npartitions;
};
/** OffsetCommit request v2–v10 (spec OffsetCommitRequest). Strings owned. */
struct codec_offset_commit_request {
	char *group_id;
	int32_t generation;      /* GenerationIdOrMemberEpoch */
	char *member_id;
	char *group_instance_id; /* v7+, NULL when null */
	struct codec_offset_commit_topic *topics;
	size_t ntopics;
};
/** Decode `version` (v2–v10; else CODEC_ERR_UNSUPPORTED). Free with _free, also on error. */
enum codec_err codec_offset_commit_request_decode(const struct codec_iov *iov, int niov, int16_t version,
						  struct codec_offset_commit_request *out) CODEC_WUR;
void codec_offset_commit_request_free(struct codec_offset_commit_request *m);

/** One partition of an OffsetCommit response, and where its ErrorCode lies. */
struct codec_offset_commit_presp {
	int32_t index;
	int16_t error_code;
	size_t error_at;         /* byte offset of ErrorCode (int16, big endian) in the body */
};
struct codec_offset_commit_tresp {
	char *name;              /* NULL from v10 */
	uint8_t topic_id[16];
	struct codec_offset_commit_presp *partitions;
	size_t npartitions;
};
/** OffsetCommit response v2–v10 (spec OffsetCommitResponse). */
struct codec_offset_commit_response {
	int32_t throttle_time_ms; /* v3+ */
	struct codec_offset_commit_tresp *topics;
	size_t ntopics;
};
/**
 * Decode `version` (v2–v10). Each partition's `error_at` is where a new
 * error code may be written in place (codec_put_i16_at): ErrorCode is fixed
 * width, so the frame keeps its length and every other byte.
 */
enum codec_err codec_offset_commit_response_decode(const struct codec_iov *iov, int niov, int16_t version,
						   struct codec_offset_commit_response *out) CODEC_WUR;
void codec_offset_commit_response_free(struct codec_offset_commit_response *m);
#define CODEC_TXN_OFFSET_COMMIT_MAX 6       /* TxnOffsetCommit versions read: v0–v6 */
#define CODEC_TXN_OFFSET_COMMIT_TOPIC_IDS 6 /* topics named by TopicId from v6 (KIP-1319) */

/** TxnOffsetCommit request v0–v6 (key 28, spec TxnOffsetCommitRequest): a
 * transaction's consumer-group offsets, sent to the group coordinator.
 * Topics by Name (v0–v5, `topic_id` zero) or TopicId (v6+, `name` NULL);
 * CommittedLeaderEpoch from v2. Strings owned. */
struct codec_txn_offset_commit_request {
	char *transactional_id;
	char *group_id;
	int64_t producer_id;
	int16_t producer_epoch;
	int32_t generation;      /* v3+, -1 before */
	char *member_id;         /* v3+, NULL before */
	char *group_instance_id; /* v3+, NULL when null */
	struct codec_offset_commit_topic *topics;
	size_t ntopics;
};
/** Decode `version` (v0–v6; else CODEC_ERR_UNSUPPORTED). Free with _free, also on error. */
enum codec_err codec_txn_offset_commit_request_decode(const struct codec_iov *iov, int niov, int16_t version,
						      struct codec_txn_offset_commit_request *out) CODEC_WUR;
void codec_txn_offset_commit_request_free(struct codec_txn_offset_commit_request *m);
/**
 * Encode a TxnOffsetCommit response body, v0–v6, answering every partition
 * of `req` (decoded at the same version) with `error_code`; topics by Name,
 * by TopicId from v6. ThrottleTimeMs 0 (codec/txn_requests.c).
 */
enum codec_err codec_txn_offset_commit_response_encode(const struct codec_txn_offset_commit_request *req,
						       int16_t error_code, int16_t version,
						       struct codec_buf *out) CODEC_WUR;

/** Write big-endian `v` at byte offset `at` of the contiguous body `body` (`len` bytes); -1 out of range. */
int codec_put_i16_at(uint8_t *body, size_t len, size_t at, int16_t v);

#endif
