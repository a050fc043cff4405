/*
 * tests/codec/oracle/oracle.h — codec code only the tests, fuzzers and the
 * bench use (not built into syncgate): encoders that are the
 * round-trip oracles of the decoders, the whole FindCoordinator,
 * DescribeCluster and ListOffsets-response codecs (oracles of the endpoint
 * rewrite and the offsets clamp), the frame peek and the error-name table.
 * Same rules as codec/codec.h; any thread.
 */
#ifndef SG_TESTS_CODEC_ORACLE_H
#define SG_TESTS_CODEC_ORACLE_H

#include "codec/codec.h"

/** Name of a Kafka error code ("NOT_LEADER_OR_FOLLOWER"), "UNKNOWN" if none. */
const char *codec_error_name(int16_t code);
/** True when Kafka marks the code retriable. */
bool codec_error_retriable(int16_t code);

/**
 * Encode a decoded Produce request; records are copied from `src` (the body
 * the request was decoded from) by their slices.
 */
enum codec_err codec_produce_request_encode(const struct codec_produce_request *m, int16_t version,
					    const struct codec_iov *src, int nsrc,
					    struct codec_buf *out) CODEC_WUR;

struct codec_list_offsets_partition_resp {
	int32_t partition_index;
	int16_t error_code;
	int64_t timestamp;
	int64_t offset;
	int32_t leader_epoch;          /* v4+ */
	struct codec_tags tags;
};

struct codec_list_offsets_topic_resp {
	char *name;
	struct codec_list_offsets_partition_resp *partitions;
	size_t npartitions;
	struct codec_tags tags;
};

struct codec_list_offsets_response {
	int32_t throttle_time_ms;      /* v2+ */
	struct codec_list_offsets_topic_resp *topics;
	size_t ntopics;
	struct codec_tags tags;
};

/** Encode a ListOffsets request body. */
enum codec_err codec_list_offsets_request_encode(const struct codec_list_offsets_request *m,
						 int16_t version, struct codec_buf *out) CODEC_WUR;

/** Decode a ListOffsets response body (v1–v11, after the response header). */
enum codec_err codec_list_offsets_response_decode(const struct codec_iov *iov, int niov, int16_t version,
						  struct codec_list_offsets_response *out) CODEC_WUR;
/** Encode a ListOffsets response body. */
enum codec_err codec_list_offsets_response_encode(const struct codec_list_offsets_response *m,
						  int16_t version, struct codec_buf *out) CODEC_WUR;
/** Release a decoded ListOffsets response. */
void codec_list_offsets_response_free(struct codec_list_offsets_response *m);

/** Encode an ApiVersions request body (v0–v2 are empty). */
enum codec_err codec_api_versions_request_encode(const struct codec_api_versions_request *m,
						 int16_t version, struct codec_buf *out) CODEC_WUR;

/** Encode a Metadata response body (v0–v13). */
enum codec_err codec_metadata_response_encode(const struct codec_metadata_response *m,
					      int16_t version, struct codec_buf *out) CODEC_WUR;

struct codec_coordinator {
	char *key;
	int32_t node_id;
	char *host;
	int32_t port;
	int16_t error_code;
	char *error_message;           /* nullable */
	struct codec_tags tags;
};

/** FindCoordinator response (spec FindCoordinatorResponse v0–v6). */
struct codec_find_coordinator_response {
	int32_t throttle_time_ms;      /* v1+ */
	int16_t error_code;            /* v0–v3 */
	char *error_message;           /* v1–v3; nullable */
	int32_t node_id;               /* v0–v3 */
	char *host;                    /* v0–v3 */
	int32_t port;                  /* v0–v3 */
	struct codec_coordinator *coordinators;  /* v4+ */
	size_t ncoordinators;
	struct codec_tags tags;
};
/** Decode/encode/free a FindCoordinator response body (v0–v6). */
enum codec_err codec_find_coordinator_response_decode(const struct codec_iov *iov, int niov,
						      int16_t version,
						      struct codec_find_coordinator_response *out) CODEC_WUR;
enum codec_err codec_find_coordinator_response_encode(const struct codec_find_coordinator_response *m,
						      int16_t version, struct codec_buf *out) CODEC_WUR;
void codec_find_coordinator_response_free(struct codec_find_coordinator_response *m);

struct codec_describe_cluster_broker {
	int32_t broker_id;
	char *host;
	int32_t port;
	char *rack;                    /* nullable */
	bool is_fenced;                /* v2+ */
	struct codec_tags tags;
};

/** DescribeCluster response (spec DescribeClusterResponse v0–v2). */
struct codec_describe_cluster_response {
	int32_t throttle_time_ms;
	int16_t error_code;
	char *error_message;           /* nullable */
	int8_t endpoint_type;          /* v1+ */
	char *cluster_id;
	int32_t controller_id;
	struct codec_describe_cluster_broker *brokers;
	size_t nbrokers;
	int32_t cluster_authorized_operations;
	struct codec_tags tags;
};
/** Decode/encode/free a DescribeCluster response body (v0–v2). */
enum codec_err codec_describe_cluster_response_decode(const struct codec_iov *iov, int niov,
						      int16_t version,
						      struct codec_describe_cluster_response *out) CODEC_WUR;
enum codec_err codec_describe_cluster_response_encode(const struct codec_describe_cluster_response *m,
						      int16_t version, struct codec_buf *out) CODEC_WUR;
void codec_describe_cluster_response_free(struct codec_describe_cluster_response *m);

/**
 * Peek the 4-byte size prefix at the start of `iov`: *body_len is the body
 * size. CODEC_ERR_UNDERFLOW with fewer than 4 bytes, CODEC_ERR_BAD_MSG for a
 * negative size, CODEC_ERR_LIMIT above `max_body`.
 */
enum codec_err codec_frame_peek(const struct codec_iov *iov, int niov, size_t max_body,
				size_t *body_len) CODEC_WUR;

#endif
