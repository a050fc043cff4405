/*
 * codec/endpoints.h — broker addresses in responses (Metadata, FindCoordinator, DescribeCluster, NodeEndpoints) and their rewrite; whole-message decodes of Metadata and ApiVersions requests. Part of codec/codec.h (include that); see its
 * opening comment for the conventions (segments, sticky errors, ownership).
 */
#ifndef SYNCGATE_CODEC_ENDPOINTS_H
#define SYNCGATE_CODEC_ENDPOINTS_H

#include "codec/api.h"

/* ------------------------------------------------------------------------ */
/* Broker endpoints: Metadata, FindCoordinator, DescribeCluster, NodeEndpoints */
/* ------------------------------------------------------------------------ */

/**
 * Maps a broker's advertised address to the syncgate address that fronts the
 * same node id. Return 0 and set *out_host (borrowed until the codec call
 * returns) and *out_port; return -1 to leave the address as is.
 */
typedef int (*codec_endpoint_fn)(void *ctx, int32_t node_id, const char *host,
				 int32_t port, const char **out_host, int32_t *out_port);

/** A rewrite of a frame body: replace `del` bytes at `off` with `ins`. */
struct codec_splice {
	bool changed;            /* false: forward the body unchanged */
	size_t off;
	size_t del;
	struct codec_buf ins;    /* owned; codec_buf_free() it */
};

/** True when responses of this api key/version can carry broker addresses (codec_api.endpoints_from). */
bool codec_response_has_endpoints(int16_t api_key, int16_t api_version);

/**
 * Rewrite every broker address in a response body (after the response
 * header) of Metadata, FindCoordinator (v0–3 single form and v4+
 * Coordinators[]), DescribeCluster, Produce v10+ and Fetch v16+ NodeEndpoints
 * (and ShareFetch/ShareAcknowledge NodeEndpoints). Node ids are kept. Bytes
 * outside the rewritten part are left in place (for Fetch and Produce only
 * the top-level tagged-field section is replaced, records are not touched).
 * `out` is initialised by the call; free out->ins when done (it is already
 * freed on error). Versions outside the decoded range (codec_api.decode_max)
 * give CODEC_ERR_UNSUPPORTED: such a response cannot be forwarded safely.
 * Metadata, FindCoordinator, DescribeCluster and ShareFetch/ShareAcknowledge
 * are read only up to their last endpoint; Produce and Fetch are read whole.
 * An endpoint the callback maps to the same host and port is not changed.
 */
enum codec_err codec_response_rewrite_endpoints(int16_t api_key, int16_t api_version,
						const struct codec_iov *iov, int niov,
						codec_endpoint_fn fn, void *ctx,
						struct codec_splice *out) CODEC_WUR;

/**
 * The top-level tagged fields of a Fetch v16+ / Produce v10+ response, given
 * alone (`len` bytes: the end of the body), rewritten to exactly `len` bytes
 * in `out`: NodeEndpoints (tag 0) with the addresses `fn` gives, followed by
 * an unknown filler tag (CODEC_TAG_FILLER, skipped by every client) when it
 * came out shorter; when it would come out longer, NodeEndpoints is sent
 * empty and padded (a client then asks Metadata, which is rewritten). For a
 * streamed response whose size prefix is already on its way. *changed is
 * false when nothing needed rewriting (`out` untouched).
 */
enum codec_err codec_tags_rewrite_endpoints_fixed(const struct codec_iov *iov, int niov, size_t len,
						  codec_endpoint_fn fn, void *ctx, uint8_t *out,
						  bool *changed) CODEC_WUR;
/**
 * A tagged-field section (count, fields; `len` bytes from the start of
 * `iov`) rewritten `grow` bytes longer into `out` (len + grow bytes): the
 * same fields, then one or two unknown filler fields (CODEC_TAG_FILLER - 1,
 * CODEC_TAG_FILLER; zeros) that every client skips. For a streamed response
 * that left bytes out after its size prefix went (the consumer clamp).
 * CODEC_ERR_LIMIT when `grow` is 1 or 2 (no filler field is that small);
 * CODEC_ERR_UNSUPPORTED when a field already uses a filler tag.
 */
enum codec_err codec_tags_grow(const struct codec_iov *iov, int niov, size_t len, size_t grow,
			       uint8_t *out) CODEC_WUR;
/** The tag of filler fields (the largest 2-byte uvarint: above any tag Kafka defines; the
 * second of two filler fields; the first is CODEC_TAG_FILLER - 1). */
#define CODEC_TAG_FILLER 16383

/* (the streaming scans follow) */

/* ------------------------------------------------------------------------ */
/* Full decode of ApiVersions requests and Metadata responses              */
/* ------------------------------------------------------------------------ */

/** ApiVersions request (spec ApiVersionsRequest v0–v5; fields v3+, v5+). */
struct codec_api_versions_request {
	char *client_software_name;
	char *client_software_version;
	char *cluster_id;   /* v5+ (KIP-1242): the cluster the client means to reach; NULL: unknown */
	int32_t node_id;    /* v5+: the node it means to reach; -1 unknown (and below v5) */
	struct codec_tags tags;
};
/** Decode/free an ApiVersions request body (v0–v2 are empty); versions above
 * CODEC_API_VERSIONS_MAX: CODEC_ERR_UNSUPPORTED. */
enum codec_err codec_api_versions_request_decode(const struct codec_iov *iov, int niov, int16_t version,
						 struct codec_api_versions_request *out) CODEC_WUR;
void codec_api_versions_request_free(struct codec_api_versions_request *m);

struct codec_metadata_broker {
	int32_t node_id;
	char *host;
	int32_t port;
	char *rack;                    /* v1+; nullable */
	struct codec_tags tags;
};

struct codec_metadata_partition {
	int16_t error_code;
	int32_t partition_index;
	int32_t leader_id;
	int32_t leader_epoch;          /* v7+ */
	struct codec_int32s replica_nodes;
	struct codec_int32s isr_nodes;
	struct codec_int32s offline_replicas;  /* v5+ */
	struct codec_tags tags;
};

struct codec_metadata_response_topic {
	int16_t error_code;
	char *name;                    /* nullable in v12+ */
	uint8_t topic_id[16];          /* v10+ */
	bool is_internal;              /* v1+ */
	struct codec_metadata_partition *partitions;
	size_t npartitions;
	int32_t topic_authorized_operations;  /* v8+ */
	struct codec_tags tags;
};

/** Metadata response (spec MetadataResponse v0–v13). */
struct codec_metadata_response {
	int32_t throttle_time_ms;      /* v3+ */
	struct codec_metadata_broker *brokers;
	size_t nbrokers;
	char *cluster_id;              /* v2+; nullable */
	int32_t controller_id;         /* v1+ */
	struct codec_metadata_response_topic *topics;
	size_t ntopics;
	int32_t cluster_authorized_operations;  /* v8–v10 */
	int16_t error_code;            /* v13+ */
	struct codec_tags tags;
};
/** Decode/free a Metadata response body (v0–v13). */
enum codec_err codec_metadata_response_decode(const struct codec_iov *iov, int niov, int16_t version,
					      struct codec_metadata_response *out) CODEC_WUR;
void codec_metadata_response_free(struct codec_metadata_response *m);

#endif
