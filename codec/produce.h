/*
 * codec/produce.h — Produce (key 0) requests and responses, InitProducerId (key 22), EndTxn (key 26). Part of codec/codec.h (include that); see its
 * opening comment for the conventions (segments, sticky errors, ownership).
 */
#ifndef SYNCGATE_CODEC_PRODUCE_H
#define SYNCGATE_CODEC_PRODUCE_H

#include "codec/stream.h"

/* ------------------------------------------------------------------------ */
/* Produce (key 0)                                                          */
/* ------------------------------------------------------------------------ */

/** RecordBatch v2 header (the 61 bytes before the records). */
struct codec_record_batch {
	int64_t base_offset;
	int32_t batch_length;
	int32_t partition_leader_epoch;
	int8_t magic;
	int16_t attributes;      /* bits 0–2 compression, 4 transactional, 5 control */
	int32_t last_offset_delta;
	int64_t base_timestamp;
	int64_t max_timestamp;
	int64_t producer_id;
	int16_t producer_epoch;
	int32_t base_sequence;
	int32_t records_count;
};

/*
 * Records blob walk: batch by batch using batchLength; only each header is
 * read. A batch whose magic is not 2 (legacy message sets, which Produce v3+
 * does not allow and the broker rejects with INVALID_RECORD) stops the walk
 * without an error: nbatches = 0, offset_span = 0, so the frame is still
 * forwarded and the broker's error passes through. A trailing partial batch,
 * or batchLength < 49, is CODEC_ERR_BAD_MSG. Null records: nbatches = 0.
 */
struct codec_produce_partition_req {
	int32_t index;
	struct codec_slice records;   /* the records blob, never copied */
	int32_t nbatches;
	int64_t offset_span;          /* Σ (lastOffsetDelta + 1) over the batches */
	struct codec_record_batch last_batch;
	struct codec_tags tags;       /* v9+ */
};

struct codec_produce_topic_req {
	char *name;                   /* v0–v12; NULL in v13 */
	uint8_t topic_id[16];         /* v13 */
	struct codec_produce_partition_req *partitions;
	size_t npartitions;
	struct codec_tags tags;       /* v9+ */
};

/** Produce request (spec ProduceRequest v3–v13; "v14" = v13 on the wire). */
struct codec_produce_request {
	char *transactional_id;       /* nullable */
	int16_t acks;
	int32_t timeout_ms;
	struct codec_produce_topic_req *topics;
	size_t ntopics;
	struct codec_tags tags;       /* v9+ */
};

/** Decode a Produce request body (after the request header). */
enum codec_err codec_produce_request_decode(const struct codec_iov *iov, int niov,
					    int16_t version,
					    struct codec_produce_request *out) CODEC_WUR;
/** Release a decoded Produce request (records were never copied). */
void codec_produce_request_free(struct codec_produce_request *m);

struct codec_produce_partition_resp {
	int32_t index;
	int16_t error_code;
	int64_t base_offset;
	int64_t log_append_time_ms;   /* v2+ */
	int64_t log_start_offset;     /* v5+ */
	uint8_t *record_errors_raw;   /* v8+: RecordErrors array, verbatim */
	size_t record_errors_len;
	char *error_message;          /* v8+; nullable */
	bool has_current_leader;      /* v10+ tag 0 */
	int32_t current_leader_id;
	int32_t current_leader_epoch;
	struct codec_tags tags;
};

struct codec_produce_topic_resp {
	char *name;                   /* v0–v12 */
	uint8_t topic_id[16];         /* v13 */
	struct codec_produce_partition_resp *partitions;
	size_t npartitions;
	struct codec_tags tags;
};

struct codec_node_endpoint {
	int32_t node_id;
	char *host;
	int32_t port;
	char *rack;                   /* nullable */
	struct codec_tags tags;
};

/** Produce response (spec ProduceResponse v3–v13). */
struct codec_produce_response {
	struct codec_produce_topic_resp *topics;
	size_t ntopics;
	int32_t throttle_time_ms;
	struct codec_node_endpoint *node_endpoints; /* v10+ tag 0 */
	size_t nnode_endpoints;
	bool has_node_endpoints;
	struct codec_tags tags;
	size_t tags_off;              /* decode: body offset of the top-level tagged fields (v9+) */
};

/**
 * Decode a Produce response body, v3–v14. RecordErrors are kept verbatim
 * (in the decoded version's encoding); CurrentLeader and NodeEndpoints are
 * decoded, other tagged fields kept. `tags_off` is set for the splice.
 */
enum codec_err codec_produce_response_decode(const struct codec_iov *iov, int niov,
					     int16_t version,
					     struct codec_produce_response *out) CODEC_WUR;
/** Encode a Produce response (after codec_produce_partition_fail(), typically). */
enum codec_err codec_produce_response_encode(const struct codec_produce_response *m,
					     int16_t version, struct codec_buf *out) CODEC_WUR;
/** Release a decoded Produce response. */
void codec_produce_response_free(struct codec_produce_response *m);

/**
 * Fail one partition: set ErrorCode, BaseOffset = -1, LogAppendTimeMs = -1,
 * LogStartOffset = -1 and ErrorMessage (copied; NULL clears it). The message
 * is only encoded for v8+. Returns -1 on allocation failure.
 */
int codec_produce_partition_fail(struct codec_produce_partition_resp *p, int16_t error_code,
				 const char *message) CODEC_WUR;

/* ------------------------------------------------------------------------ */
/* InitProducerId (key 22), v0–v5; flexible from v2                         */
/* ------------------------------------------------------------------------ */

/** InitProducerId request (spec InitProducerIdRequest v0–v5). */
struct codec_init_producer_id_request {
	char *transactional_id;       /* nullable: NULL for an idempotent-only producer */
	int32_t transaction_timeout_ms;
	int64_t producer_id;          /* v3+; -1 (also below v3) */
	int16_t producer_epoch;       /* v3+; -1 (also below v3) */
	struct codec_tags tags;       /* v2+ */
};

/** Decode an InitProducerId request body (after the request header), v0–v5. */
enum codec_err codec_init_producer_id_request_decode(const struct codec_iov *iov, int niov, int16_t version,
						     struct codec_init_producer_id_request *out) CODEC_WUR;
/** Encode an InitProducerId request body, v0–v5 (ProducerId/Epoch only from v3). */
enum codec_err codec_init_producer_id_request_encode(const struct codec_init_producer_id_request *m,
						     int16_t version, struct codec_buf *out) CODEC_WUR;
/** Release a decoded InitProducerId request. */
void codec_init_producer_id_request_free(struct codec_init_producer_id_request *m);
/**
 * A whole InitProducerId request frame (size prefix, header v1 below v2,
 * v2 from it) asking for a producer id: TransactionalId `transactional_id`
 * (NULL: an idempotent producer's), TransactionTimeoutMs
 * `transaction_timeout_ms`, ProducerId -1 and ProducerEpoch -1 (v3+).
 * Appended to `out` (initialised by the caller). 0, or -1 (a version
 * outside v0–v5, or the buffer's limit).
 */
int codec_init_producer_id_request_frame(int16_t version, int32_t correlation_id, const char *client_id,
					 const char *transactional_id, int32_t transaction_timeout_ms,
					 struct codec_buf *out) CODEC_WUR;

/** InitProducerId response (spec InitProducerIdResponse v0–v5: one layout). */
struct codec_init_producer_id_response {
	int32_t throttle_time_ms;
	int16_t error_code;
	int64_t producer_id;          /* -1 on error */
	int16_t producer_epoch;
	struct codec_tags tags;       /* v2+ */
};

/** Decode an InitProducerId response body (after the response header), v0–v5. */
enum codec_err codec_init_producer_id_response_decode(const struct codec_iov *iov, int niov, int16_t version,
						      struct codec_init_producer_id_response *out) CODEC_WUR;
/** Encode an InitProducerId response body, v0–v5. */
enum codec_err codec_init_producer_id_response_encode(const struct codec_init_producer_id_response *m,
						      int16_t version, struct codec_buf *out) CODEC_WUR;
/** Release a decoded InitProducerId response. */
void codec_init_producer_id_response_free(struct codec_init_producer_id_response *m);

/* ------------------------------------------------------------------------ */
/* EndTxn (key 26), v0–v5; flexible from v3                                 */
/* ------------------------------------------------------------------------ */

/** EndTxn request (spec EndTxnRequest v0–v5). */
struct codec_end_txn_request {
	char *transactional_id;
	int64_t producer_id;
	int16_t producer_epoch;
	bool committed;
	struct codec_tags tags;       /* v3+ */
};
/** Decode an EndTxn request body (after the request header), v0–v5. */
enum codec_err codec_end_txn_request_decode(const struct codec_iov *iov, int niov, int16_t version,
					    struct codec_end_txn_request *out) CODEC_WUR;
/** Encode an EndTxn request body, v0–v5. */
enum codec_err codec_end_txn_request_encode(const struct codec_end_txn_request *m, int16_t version,
					    struct codec_buf *out) CODEC_WUR;
/** Release a decoded EndTxn request. */
void codec_end_txn_request_free(struct codec_end_txn_request *m);

/** EndTxn response (spec EndTxnResponse v0–v5). */
struct codec_end_txn_response {
	int32_t throttle_time_ms;
	int16_t error_code;
	int64_t producer_id;          /* v5+ (KIP-890: a new id when the epoch ran out); -1 below */
	int16_t producer_epoch;       /* v5+; -1 below */
	struct codec_tags tags;       /* v3+ */
};
/** Decode an EndTxn response body (after the response header), v0–v5. */
enum codec_err codec_end_txn_response_decode(const struct codec_iov *iov, int niov, int16_t version,
					     struct codec_end_txn_response *out) CODEC_WUR;
/** Encode an EndTxn response body, v0–v5 (ProducerId/Epoch only from v5). */
enum codec_err codec_end_txn_response_encode(const struct codec_end_txn_response *m, int16_t version,
					     struct codec_buf *out) CODEC_WUR;
/** Release a decoded EndTxn response. */
void codec_end_txn_response_free(struct codec_end_txn_response *m);

/* ------------------------------------------------------------------------ */
/* AddPartitionsToTxn (key 24), v0–v3 (v4+: between brokers); flexible from v3 */
/* ------------------------------------------------------------------------ */

/** One topic of an AddPartitionsToTxn request v0–v3: its name and partition indexes. Owned. */
struct codec_add_partitions_topic {
	char *name;
	int32_t *partitions;
	size_t npartitions;
};
/** AddPartitionsToTxn request v0–v3 (spec AddPartitionsToTxnRequest, the V3AndBelow fields). Owned. */
struct codec_add_partitions_to_txn_request {
	char *transactional_id;
	int64_t producer_id;
	int16_t producer_epoch;
	struct codec_add_partitions_topic *topics;
	size_t ntopics;
};
/** Decode an AddPartitionsToTxn request body, v0–v3 (else CODEC_ERR_UNSUPPORTED). Free with _free, also on error. */
enum codec_err codec_add_partitions_to_txn_request_decode(const struct codec_iov *iov, int niov, int16_t version,
							  struct codec_add_partitions_to_txn_request *out) CODEC_WUR;
/** Encode an AddPartitionsToTxn request body, v0–v3. */
enum codec_err codec_add_partitions_to_txn_request_encode(const struct codec_add_partitions_to_txn_request *m,
							  int16_t version, struct codec_buf *out) CODEC_WUR;
/** Release a decoded AddPartitionsToTxn request. */
void codec_add_partitions_to_txn_request_free(struct codec_add_partitions_to_txn_request *m);
/** Encode an AddPartitionsToTxn response body, v0–v3: every partition of `req` answered `error_code`. */
enum codec_err codec_add_partitions_to_txn_response_encode(const struct codec_add_partitions_to_txn_request *req,
							   int16_t error_code, int16_t version,
							   struct codec_buf *out) CODEC_WUR;

/* ------------------------------------------------------------------------ */
/* AddOffsetsToTxn (key 25), v0–v4; flexible from v3 (codec/txn_requests.c)  */
/* ------------------------------------------------------------------------ */

/** AddOffsetsToTxn request (spec AddOffsetsToTxnRequest v0–v4). Strings owned. */
struct codec_add_offsets_to_txn_request {
	char *transactional_id;
	int64_t producer_id;
	int16_t producer_epoch;
	char *group_id;
};
/** Decode an AddOffsetsToTxn request body (after the request header), v0–v4. Free with _free, also on error. */
enum codec_err codec_add_offsets_to_txn_request_decode(const struct codec_iov *iov, int niov, int16_t version,
						       struct codec_add_offsets_to_txn_request *out) CODEC_WUR;
/** Encode an AddOffsetsToTxn request body, v0–v4 (tests build clients' requests with it). */
enum codec_err codec_add_offsets_to_txn_request_encode(const struct codec_add_offsets_to_txn_request *m,
						       int16_t version, struct codec_buf *out) CODEC_WUR;
/** Release a decoded AddOffsetsToTxn request. */
void codec_add_offsets_to_txn_request_free(struct codec_add_offsets_to_txn_request *m);
/** Encode an AddOffsetsToTxn response body, v0–v4: ThrottleTimeMs 0, `error_code`. */
enum codec_err codec_add_offsets_to_txn_response_encode(int16_t error_code, int16_t version,
							struct codec_buf *out) CODEC_WUR;

#endif
