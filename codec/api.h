/*
 * codec/api.h — the API table (what syncgate does per API), request/response headers, Kafka error codes and their down-map, ApiVersions, SASL. Part of codec/codec.h (include that); see its
 * opening comment for the conventions (segments, sticky errors, ownership).
 */
#ifndef SYNCGATE_CODEC_API_H
#define SYNCGATE_CODEC_API_H

#include "codec/reader.h"

/* ------------------------------------------------------------------------ */
/* API table and headers                                                    */
/* ------------------------------------------------------------------------ */

/** API keys syncgate refers to by name (protocol spec `apiKey`). */
enum codec_api_key {
	CODEC_API_PRODUCE = 0,
	CODEC_API_FETCH = 1,
	CODEC_API_LIST_OFFSETS = 2,
	CODEC_API_METADATA = 3,
	CODEC_API_OFFSET_COMMIT = 8,
	CODEC_API_FIND_COORDINATOR = 10,
	CODEC_API_OFFSET_FOR_LEADER_EPOCH = 23,
	CODEC_API_SASL_HANDSHAKE = 17,
	CODEC_API_API_VERSIONS = 18,
	CODEC_API_INIT_PRODUCER_ID = 22,
	CODEC_API_ADD_PARTITIONS_TO_TXN = 24,
	CODEC_API_ADD_OFFSETS_TO_TXN = 25,
	CODEC_API_END_TXN = 26,
	CODEC_API_TXN_OFFSET_COMMIT = 28,
	CODEC_API_SASL_AUTHENTICATE = 36,
	CODEC_API_DESCRIBE_CLUSTER = 60,
	CODEC_API_SHARE_FETCH = 78,
	CODEC_API_SHARE_ACKNOWLEDGE = 79,
};

/** Highest API key Apache Kafka 4.4 defines (the table is dense from 0). */
#define CODEC_API_KEY_MAX 94

/** One row of the API table: every API key Apache Kafka 4.x knows. */
struct codec_api {
	int16_t key;
	const char *name;       /* "Produce", "Metadata", ... */
	int16_t flexible_from;  /* first flexible version; -1 if never */
	int16_t decode_max;     /* highest version syncgate decodes; -1: opaque */
	int16_t min_version;    /* lowest version Apache Kafka 4.4 serves; -1: none */
	int16_t max_version;    /* highest stable version Apache Kafka 4.4 serves; -1: none */
	int16_t endpoints_from; /* first version whose response names brokers (rewritten); -1: never */
	uint8_t does;           /* what syncgate does besides forwarding: CODEC_DOES_* (0: byte for byte) */
};

/* codec_api.does — what syncgate does with an API besides forwarding its
 * frames (and rewriting broker addresses from endpoints_from on). The proxy
 * decides from these columns alone whether a response is read (buffered
 * whole), streamed opaque, or streamed and judged (proxy/response.c
 * response_plan). */
#define CODEC_DOES_READ_REQUEST  0x01 /* the request is decoded (a field of it decides something) */
#define CODEC_DOES_READ_RESPONSE 0x02 /* the response body is read (buffered whole) */
#define CODEC_DOES_HOLD          0x04 /* its response can be held by the gate (acks=all Produce) */
#define CODEC_DOES_CLAMP         0x08 /* the consumer clamp cuts its answer to the mirrored HW */
#define CODEC_DOES_STREAM        0x10 /* a large response is rewritten / clamped as it streams */
#define CODEC_DOES_COUNT         0x20 /* seen and counted, not changed (e.g. ShareFetch: not clamped) */

/** Table row for `api_key`, or NULL for a key Kafka 4.x does not have. */
const struct codec_api *codec_api_get(int16_t api_key);
/** Name of `api_key`, "Unknown" when not in the table. */
const char *codec_api_name(int16_t api_key);
/** True when this key/version uses the flexible encoding (from the table). */
bool codec_api_flexible(int16_t api_key, int16_t api_version);
/**
 * The start of a message decoder: zeroes `out` (`size` bytes); false when
 * `version` is outside [min, max] (the versions that decoder reads: answer
 * CODEC_ERR_UNSUPPORTED), else starts `r` on the `niov` body segments with
 * the encoding the API table gives `api_key` at `version` and returns true.
 */
bool codec_decode_start(struct codec_reader *r, const struct codec_iov *iov, int niov, int16_t api_key,
			int16_t version, int16_t min, int16_t max, void *out, size_t size);
/** Request header version (0, 1 or 2) for a request of this key/version. */
int codec_request_header_version(int16_t api_key, int16_t api_version);
/** Response header version (0 or 1); ApiVersions responses are always 0. */
int codec_response_header_version(int16_t api_key, int16_t api_version);

/** Request header (spec RequestHeader v0–v2). */
struct codec_request_header {
	int16_t api_key;
	int16_t api_version;
	int32_t correlation_id;
	struct codec_slice client_id;   /* v1+; nullable */
	size_t len;                     /* header bytes, including tagged fields */
};

/**
 * Decode a request header from the start of a frame body.
 * An unknown api key still decodes (as header v1) so it can be forwarded.
 */
enum codec_err codec_request_header_decode(const struct codec_iov *iov, int niov,
					   struct codec_request_header *h) CODEC_WUR;

/** Response header length for this request (4 for v0; v1 reads its tags). */
enum codec_err codec_response_header_decode(const struct codec_iov *iov, int niov,
					    int16_t api_key, int16_t api_version,
					    int32_t *correlation_id, size_t *len) CODEC_WUR;

/* ------------------------------------------------------------------------ */
/* Error codes                                                              */
/* ------------------------------------------------------------------------ */

#define CODEC_ERROR_NONE 0
#define CODEC_ERROR_UNKNOWN_SERVER_ERROR (-1)
#define CODEC_ERROR_NOT_LEADER_OR_FOLLOWER 6
#define CODEC_ERROR_REQUEST_TIMED_OUT 7
#define CODEC_ERROR_COORDINATOR_LOAD_IN_PROGRESS 14
#define CODEC_ERROR_COORDINATOR_NOT_AVAILABLE 15
#define CODEC_ERROR_NOT_COORDINATOR 16
#define CODEC_ERROR_CLUSTER_AUTHORIZATION_FAILED 31
#define CODEC_ERROR_NOT_ENOUGH_REPLICAS 19
#define CODEC_ERROR_NOT_ENOUGH_REPLICAS_AFTER_APPEND 20
#define CODEC_ERROR_UNSUPPORTED_VERSION 35
#define CODEC_ERROR_INVALID_PRODUCER_ID_MAPPING 49
#define CODEC_ERROR_UNKNOWN_PRODUCER_ID 59
#define CODEC_ERROR_UNKNOWN_TOPIC_ID 100
#define CODEC_ERROR_TRANSACTION_ABORTABLE 120

/** Default provisional codes (the KIP leaves them TBD; configurable). */
#define CODEC_ERROR_MIRROR_SYNC_REPLICATION_TIMEOUT_DEFAULT 190
#define CODEC_ERROR_NOT_ENOUGH_REMOTE_REPLICAS_AFTER_APPEND_DEFAULT 191

/** Produce v14 introduces the new codes; v14 is v13 on the wire. */
#define CODEC_PRODUCE_V14 14

/** The two provisional sync codes in force (from config). */
struct codec_sync_codes {
	int16_t mirror_sync_replication_timeout;          /* default 190 */
	int16_t not_enough_remote_replicas_after_append;  /* default 191 */
};

/**
 * Down-map a Produce partition error for the negotiated request version:
 * for version < 14 either sync code becomes NOT_ENOUGH_REPLICAS_AFTER_APPEND
 * (20); anything else is returned unchanged. KIP "Producer Client
 * Compatibility".
 */
int16_t codec_produce_error_downmap(int16_t code, int16_t produce_version,
				    const struct codec_sync_codes *codes);

/* ------------------------------------------------------------------------ */
/* ApiVersions (key 18)                                                     */
/* ------------------------------------------------------------------------ */

/** Highest ApiVersions version syncgate decodes and rewrites (Kafka 4.4: v5). */
#define CODEC_API_VERSIONS_MAX 5

struct codec_api_version_range {
	int16_t api_key;
	int16_t min_version;
	int16_t max_version;
	struct codec_tags tags;
};

struct codec_api_versions_response {
	int16_t error_code;
	struct codec_api_version_range *api_keys;
	size_t napi_keys;
	int32_t throttle_time_ms;  /* v1+ */
	struct codec_tags tags;    /* v3+: SupportedFeatures, FinalizedFeatures… kept verbatim */
	bool v0_layout;            /* decoded as v0: UNSUPPORTED_VERSION reply to a newer request */
};

/**
 * Decode an ApiVersions response body (after the v0 response header).
 * A response whose ErrorCode is UNSUPPORTED_VERSION is decoded in the v0
 * layout whatever `version` says (the broker answers an unknown request
 * version that way), and `v0_layout` is set.
 */
enum codec_err codec_api_versions_response_decode(const struct codec_iov *iov, int niov,
						  int16_t version,
						  struct codec_api_versions_response *out) CODEC_WUR;
/** Encode in the same layout it was decoded in (v0 when `v0_layout`). */
enum codec_err codec_api_versions_response_encode(const struct codec_api_versions_response *m,
						  int16_t version, struct codec_buf *out) CODEC_WUR;
/** Release a decoded ApiVersions response. */
void codec_api_versions_response_free(struct codec_api_versions_response *m);

/* ------------------------------------------------------------------------ */
/* SASL (the principal a client authenticates as; syncgate only reads)      */
/* ------------------------------------------------------------------------ */

/**
 * The user name a client's first SASL message names, for the mechanisms
 * whose first message carries it: PLAIN ("authzid NUL authcid NUL passwd":
 * authcid; a non-empty authzid must equal it, as Kafka requires) and
 * SCRAM-SHA-256/512 (client-first "gs2-header,n=user,r=…", `=2C`/`=3D`
 * decoded). `auth`/`len`: the raw token (SaslAuthenticate AuthBytes or a
 * SaslHandshake v0 raw frame). Writes a NUL-terminated name to `out`.
 * Returns 0, or -1 (other mechanism, a later message, malformed, or longer
 * than `cap` − 1). Any thread.
 */
int codec_sasl_username(const char *mechanism, const uint8_t *auth, size_t len, char *out, size_t cap);

/**
 * The AuthBytes of a SaslAuthenticate request body (v0–v2: bytes, compact
 * from v2), copied into `out` (at most `cap` bytes; *n its length). Returns
 * CODEC_OK, or the reader's error (CODEC_ERR_LIMIT when longer than `cap`).
 */
enum codec_err codec_sasl_authenticate_bytes(const struct codec_iov *iov, int niov, int16_t version,
					     uint8_t *out, size_t cap, size_t *n) CODEC_WUR;

#endif
