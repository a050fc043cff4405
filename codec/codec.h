/*
 * codec — the Kafka wire protocol, as far as syncgate must understand it.
 *
 * Pure functions: no I/O, no libevent, no globals but constant tables.
 * Field names follow the protocol spec (apache/kafka
 * clients/src/main/resources/common/message/<Name>.json).
 *
 * Reading: every decoder reads a frame *body* (the bytes after the 4-byte
 * size prefix) given as an array of segments (`struct codec_iov`), so a frame
 * held in a segmented buffer is decoded without being made contiguous; record
 * data is skipped, never copied. The first error is sticky and remembers its
 * offset; running out of bytes (CODEC_ERR_UNDERFLOW) and bad content
 * (CODEC_ERR_BAD_MSG) are different errors; array counts are checked against
 * limits before anything is allocated.
 *
 * Ownership: a decoded message owns its memory (strings, arrays) and is
 * released with its `_free` function. Encoders append to a `struct codec_buf`,
 * a growable buffer with a hard size limit.
 *
 * Threads: every function is thread-agnostic (no shared mutable state).
 */
/*
 * Message functions, one set per message for all its versions:
 *   codec_<msg>_decode(iov, niov, version, out): decode a whole body (the
 *     bytes after the request/response header). `out` is zeroed first and
 *     belongs to the caller afterwards: call codec_<msg>_free() whatever the
 *     result (what was decoded before an error is released too). Versions
 *     outside the message's range give CODEC_ERR_UNSUPPORTED; bytes left over
 *     give CODEC_ERR_BAD_MSG.
 *   codec_<msg>_encode(m, version, out): append the body to `out` (sets
 *     out->flexible); returns out->err. Unknown tagged fields go back
 *     verbatim, so decode then encode at the same version gives the same
 *     bytes (for the minimal varints Kafka writes, and strings without NUL).
 */
#ifndef SYNCGATE_CODEC_H
#define SYNCGATE_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CODEC_WUR __attribute__((warn_unused_result))

/* ------------------------------------------------------------------------ */
/* Errors, segments, reader, writer                                         */
/* ------------------------------------------------------------------------ */

/** Decoder/encoder outcome. 0 is success. */
enum codec_err {
	CODEC_OK = 0,
	CODEC_ERR_UNDERFLOW,   /* need more bytes (truncated input) */
	CODEC_ERR_BAD_MSG,     /* malformed: negative length, bad varint, tags out of order, trailing bytes */
	CODEC_ERR_LIMIT,       /* a count or size above its limit, or the output buffer's limit */
	CODEC_ERR_UNSUPPORTED, /* api key or version this codec does not decode */
	CODEC_ERR_NOMEM,       /* allocation failed */
	CODEC_ERR__COUNT
};
/** Static description of `e`. */
const char *codec_err_str(enum codec_err e);
/**
 * Where the last decode on this thread failed: the byte offset (from the
 * start of the iov it was given) of its reader's first error, like errno —
 * read it right after a decoder returned an error (not meaningful for
 * CODEC_ERR_UNSUPPORTED or CODEC_ERR_NOMEM). The proxy logs it as offset=.
 * Any thread.
 */
size_t codec_err_offset(void);

/** One contiguous piece of a frame. Borrowed; must outlive the decode call. */
struct codec_iov {
	const uint8_t *base;
	size_t len;
};

/**
 * Bounded reader over segments. Reads return everything asked for or set the
 * sticky error; after an error every read returns zero values.
 */
struct codec_reader {
	const struct codec_iov *iov;
	int niov;
	int seg;          /* current segment */
	size_t seg_off;   /* offset inside the current segment */
	size_t off;       /* absolute offset from the start */
	size_t len;       /* total bytes */
	enum codec_err err;
	size_t err_off;   /* offset of the first error */
	bool flexible;    /* compact strings/arrays and tagged fields (set per message) */
};

/** Start reading `niov` segments (borrowed) at offset 0, classic encoding. */
void codec_reader_init(struct codec_reader *r, const struct codec_iov *iov, int niov);

/** Growable output buffer with a hard limit (curl dynbuf style). */
struct codec_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
	size_t limit;   /* growing past it sets err = CODEC_ERR_LIMIT */
	enum codec_err err;
	bool flexible;  /* encoders set it: compact strings/arrays, tagged fields */
};
/** Empty buffer that may grow to `limit` bytes; codec_buf_free() releases it. */
void codec_buf_init(struct codec_buf *b, size_t limit);
void codec_buf_free(struct codec_buf *b);

/** A byte range inside a frame body: a string or bytes field, not copied. */
struct codec_slice {
	size_t off;   /* absolute offset in the body */
	int32_t len;  /* -1 for null */
};

/** A list of int32 (ReplicaNodes, IsrNodes, OfflineReplicas…). Owned. */
struct codec_int32s {
	int32_t *v;
	size_t n;
};

/** Tagged fields this codec does not know, kept verbatim for re-encoding. */
struct codec_tags {
	uint8_t *raw;   /* the encoded fields (tag, size, data)… without the count */
	size_t len;
	uint32_t count;
};

/*
 * Reader primitives. Each returns the value read, or a zero value once the
 * reader's sticky error is set (check `r->err` after a run of reads).
 * Strings, bytes and arrays use the compact (flexible) encoding when
 * `r->flexible` is set, the classic one otherwise.
 */

/** Most elements any array may declare (CODEC_ERR_LIMIT above it). */
#define CODEC_ARRAY_MAX (1 << 24)

/** Set the sticky error `e` at the current offset unless one is set; returns r->err. */
enum codec_err codec_reader_fail(struct codec_reader *r, enum codec_err e);
/** Bytes left to read. */
size_t codec_reader_remaining(const struct codec_reader *r);
/** Position the reader at absolute body offset `off` (backwards too); UNDERFLOW past the end. */
void codec_reader_seek(struct codec_reader *r, size_t off);

/**
 * A reader bounded to the next `n` bytes of `r` (the parent does not move);
 * CODEC_ERR_UNDERFLOW on `r` when fewer remain. Returns false on error.
 */
bool codec_reader_sub(struct codec_reader *r, size_t n, struct codec_reader *sub);
/**
 * Continue `r` after `sub`, which must have consumed all its bytes: running
 * out inside it, or leaving bytes unread, is CODEC_ERR_BAD_MSG on `r` (its
 * bytes were all there); other errors carry over.
 */
void codec_reader_join(struct codec_reader *r, const struct codec_reader *sub);

/** Big-endian fixed-width integers. */
int8_t codec_read_i8(struct codec_reader *r);
int16_t codec_read_i16(struct codec_reader *r);
int32_t codec_read_i32(struct codec_reader *r);
int64_t codec_read_i64(struct codec_reader *r);
/** Kafka bool: 0 or 1; anything else is CODEC_ERR_BAD_MSG. */
bool codec_read_bool(struct codec_reader *r);
/** Unsigned varint (≤ 5 bytes; longer or above 32 bits: CODEC_ERR_BAD_MSG). */
uint32_t codec_read_uvarint(struct codec_reader *r);
/** Zigzag varint (int32) and varlong (int64, ≤ 10 bytes). */
int32_t codec_read_varint(struct codec_reader *r);
int64_t codec_read_varlong(struct codec_reader *r);
/** 16 raw bytes (Uuid). */
void codec_read_uuid(struct codec_reader *r, uint8_t out[16]);
/** Copy `n` bytes out (all or none). */
void codec_read_raw(struct codec_reader *r, void *dst, size_t n);
/** Skip `n` bytes without copying (UNDERFLOW if fewer remain). */
void codec_read_skip(struct codec_reader *r, size_t n);
/**
 * A string (int16 / compact length) or, with `bytes`, a bytes field (int32 /
 * compact length) as a slice of the body, skipped and not copied. A null
 * value is CODEC_ERR_BAD_MSG unless `nullable`; a length below -1 always is,
 * and so is a string longer than INT16_MAX (compact too, as in Kafka).
 */
struct codec_slice codec_read_slice(struct codec_reader *r, bool bytes, bool nullable);
/**
 * Only the length prefix of such a field (the value is not skipped): -1 for
 * null, else the length; the same errors as codec_read_slice (then 0).
 * For callers that stream the value themselves (codec/stream.c).
 */
int32_t codec_read_length(struct codec_reader *r, bool bytes, bool nullable);
/** A string copied into a new NUL-terminated allocation (NULL for null or error). */
char *codec_read_str(struct codec_reader *r, bool nullable);
/**
 * An array count (int32 / compact), -1 for a null array (BAD_MSG unless
 * `nullable`). Counts whose elements cannot fit in the remaining bytes at
 * `min_elem` bytes each give CODEC_ERR_UNDERFLOW, counts above
 * CODEC_ARRAY_MAX CODEC_ERR_LIMIT — before the caller allocates anything.
 */
int32_t codec_read_array_len(struct codec_reader *r, bool nullable, size_t min_elem);

/**
 * Known-tag handler: read the field's `size` bytes from `r` and return true,
 * or return false to keep the field verbatim as unknown.
 */
typedef bool (*codec_tag_fn)(void *ctx, struct codec_reader *r, uint32_t tag, uint32_t size);
/**
 * Read a tagged-field section; does nothing unless `r->flexible`. Tags must be strictly
 * increasing and a handler must consume exactly the field's size
 * (CODEC_ERR_BAD_MSG otherwise). Unknown fields are appended to `keep`
 * (skipped when `keep` is NULL). `fn` may be NULL.
 */
void codec_read_tags(struct codec_reader *r, struct codec_tags *keep, codec_tag_fn fn, void *ctx);
/** Release preserved tagged fields. */
void codec_tags_free(struct codec_tags *t);

/** Reads one array element into `elem` (zeroed beforehand). */
typedef void (*codec_elem_read_fn)(struct codec_reader *r, void *elem, void *ctx);
/**
 * Read a non-nullable array of `elem_size`-byte elements, each at least
 * `min_wire` bytes on the wire: the count is checked (see
 * codec_read_array_len), then a zeroed array is allocated and filled by `fn`.
 * Returns the array (NULL when empty) and sets *n to its length even when an
 * element fails, so the caller's free function releases what was read.
 */
void *codec_read_array(struct codec_reader *r, size_t elem_size, size_t min_wire, size_t *n,
		       codec_elem_read_fn fn, void *ctx);
/** Read an int32 array (non-nullable). */
void codec_read_int32s(struct codec_reader *r, struct codec_int32s *out);
/** End of a message: bytes left over are CODEC_ERR_BAD_MSG. Returns r->err. */
enum codec_err codec_reader_finish(struct codec_reader *r);
/** Free an array read by codec_read_array, calling `fn` (if any) on each element. */
void codec_array_free(void *v, size_t n, size_t elem_size, void (*fn)(void *elem));

/* Writer primitives: append to `b`; after an error they do nothing. */
void codec_write_raw(struct codec_buf *b, const void *p, size_t n);
/** Big-endian integers, Kafka bool, (zigzag) varints, Uuid. */
void codec_write_i8(struct codec_buf *b, int8_t v);
void codec_write_i16(struct codec_buf *b, int16_t v);
void codec_write_i32(struct codec_buf *b, int32_t v);
void codec_write_i64(struct codec_buf *b, int64_t v);
void codec_write_bool(struct codec_buf *b, bool v);
void codec_write_uvarint(struct codec_buf *b, uint32_t v);
/** Unsigned varint of `v` at `p` (room for 5 bytes); returns its length. For
 * edits in place, outside a codec_buf. */
size_t codec_put_uvarint(uint8_t *p, uint32_t v);
/** Big-endian int64 `v` at `p` (8 bytes), for edits in place. */
void codec_put_be64(uint8_t *p, int64_t v);
void codec_write_varint(struct codec_buf *b, int32_t v);
void codec_write_varlong(struct codec_buf *b, int64_t v);
void codec_write_uuid(struct codec_buf *b, const uint8_t v[16]);
/** A string of `len` bytes (-1: null), compact when `b->flexible`. */
void codec_write_strn(struct codec_buf *b, const char *s, int32_t len);
/** A NUL-terminated string; NULL writes a null string. */
void codec_write_str(struct codec_buf *b, const char *s);
/** An array count (-1: null), compact when `b->flexible`. */
void codec_write_array_len(struct codec_buf *b, int32_t n);
/** Copy `len` bytes at body offset `off` of a segmented body. */
void codec_write_iov(struct codec_buf *b, const struct codec_iov *iov, int niov, size_t off, size_t len);
/** Copy a slice of a segmented body with its length prefix (string, or `bytes`). */
void codec_write_slice(struct codec_buf *b, const struct codec_iov *iov, int niov,
		       struct codec_slice s, bool bytes);

/** Writes one array element. */
typedef void (*codec_elem_write_fn)(struct codec_buf *b, const void *elem, void *ctx);
/** Write an array: count, then `fn` on each of the `n` elements. */
void codec_write_array(struct codec_buf *b, const void *v, size_t n, size_t elem_size,
		       codec_elem_write_fn fn, void *ctx);
/** Write an int32 array. */
void codec_write_int32s(struct codec_buf *b, const struct codec_int32s *a);

/** A known tagged field to encode: its tag and its encoded value. */
struct codec_tag_out {
	uint32_t tag;
	const uint8_t *data;
	size_t len;
};
/**
 * Write a tagged-field section: `known` (sorted by tag) merged in tag order
 * with the preserved `unknown` fields (may be NULL). Does nothing unless
 * `b->flexible`.
 */
void codec_write_tags(struct codec_buf *b, const struct codec_tag_out *known, size_t nknown,
		      const struct codec_tags *unknown);

/* ------------------------------------------------------------------------ */
/* API table and headers                                                    */
/* ------------------------------------------------------------------------ */

/** API keys syncgate refers to by name (protocol spec `apiKey`). */
enum codec_api_key {
	CODEC_API_PRODUCE = 0,
	CODEC_API_FETCH = 1,
	CODEC_API_LIST_OFFSETS = 2,
	CODEC_API_METADATA = 3,
	CODEC_API_FIND_COORDINATOR = 10,
	CODEC_API_OFFSET_FOR_LEADER_EPOCH = 23,
	CODEC_API_SASL_HANDSHAKE = 17,
	CODEC_API_API_VERSIONS = 18,
	CODEC_API_SASL_AUTHENTICATE = 36,
	CODEC_API_DESCRIBE_CLUSTER = 60,
	CODEC_API_SHARE_FETCH = 78,
	CODEC_API_SHARE_ACKNOWLEDGE = 79,
};

/** One row of the API table: every API key Apache Kafka 4.x knows. */
struct codec_api {
	int16_t key;
	const char *name;       /* "Produce", "Metadata", ... */
	int16_t flexible_from;  /* first flexible version; -1 if never */
	int16_t decode_max;     /* highest version syncgate decodes; -1: opaque */
	int16_t min_version;    /* lowest version Apache Kafka 4.3 serves; -1: none */
	int16_t max_version;    /* highest stable version Apache Kafka 4.3 serves; -1: none */
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
#define CODEC_ERROR_NOT_ENOUGH_REPLICAS 19
#define CODEC_ERROR_NOT_ENOUGH_REPLICAS_AFTER_APPEND 20
#define CODEC_ERROR_UNSUPPORTED_VERSION 35
#define CODEC_ERROR_UNKNOWN_TOPIC_ID 100

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
/* Streaming scans (codec/stream.c)                                         */
/* ------------------------------------------------------------------------ */

/** Where a streaming scan is in its message. */
enum codec_stream_stage {
	CODEC_STREAM_HEAD,      /* top-level fields up to the topics count */
	CODEC_STREAM_TOPIC,     /* a topic's name or id and partitions count */
	CODEC_STREAM_PARTITION, /* a partition's fields up to its Records length */
	CODEC_STREAM_BATCH,     /* Produce: a record batch header inside a partition's records */
	CODEC_STREAM_PART_END,  /* after the records: partition (and topic) tags */
	CODEC_STREAM_TAIL,      /* the top-level tagged fields: the rest of the body */
	CODEC_STREAM_BAD,       /* unsupported version */
	CODEC_STREAM_STAGE_COUNT
};
const char *codec_stream_stage_str(enum codec_stream_stage st);

/** What a Fetch response scan saw in its last PARTITION unit (offsets within that unit). */
struct codec_fetch_stream_part {
	int32_t partition;
	int16_t error_code;
	int64_t high_watermark, last_stable_offset;
	int64_t log_start_offset;      /* 0 before v5 */
	size_t hw_off, lso_off;        /* the two int64 fields */
	size_t records_len_off;        /* the Records length prefix: int32, or uvarint(len+1) */
	size_t records_len_len;
	int32_t records_len;           /* -1 null */
};

/** Resumable scan of a Fetch response body (v4–v18) arriving in pieces. */
struct codec_fetch_stream {
	int16_t version;
	bool flexible;
	enum codec_stream_stage stage;
	int32_t topics_left;   /* topics not finished, the current one included */
	int32_t parts_left;    /* partitions of the current topic not finished */
	/* what the last TOPIC unit said: Topic (v4–v12: offset within that unit's
	 * iov, -1 length for null) or TopicId (v13+) */
	struct codec_slice topic;
	uint8_t topic_id[16];
	struct codec_fetch_stream_part part; /* the last PARTITION unit */
};
void codec_fetch_stream_init(struct codec_fetch_stream *s, int16_t version);
/**
 * Parse the next unit from `iov` (body bytes from the scan position on).
 * CODEC_OK: the first *used bytes are structure, then *records bytes of
 * record data follow that the scan does not look at (the next call starts
 * after them). At CODEC_STREAM_TAIL nothing is parsed (*used 0): the rest
 * of the body is the top-level tagged fields. CODEC_ERR_UNDERFLOW: the unit
 * is not whole yet (nothing moved); other errors: malformed.
 */
enum codec_err codec_fetch_stream_next(struct codec_fetch_stream *s, const struct codec_iov *iov,
				       int niov, size_t *used, size_t *records) CODEC_WUR;

/**
 * Resumable scan of a Produce request body (v3–v13) arriving in pieces:
 * what syncgate needs for the gate (acks, timeout, topics, partitions and
 * each partition's offset span from its batch headers) while the record
 * bytes are not looked at. Same rules as codec_produce_request_decode().
 */
struct codec_produce_stream {
	int16_t version;
	bool flexible;
	enum codec_stream_stage stage;   /* the next unit */
	enum codec_stream_stage unit;    /* the unit the last successful call parsed */
	int32_t topics_left, parts_left;
	size_t records_left;             /* BATCH: bytes of the partition's records not walked */
	bool legacy;                     /* the partition holds a legacy message set */
	/* what the units said */
	int16_t acks;                    /* HEAD */
	int32_t timeout_ms;              /* HEAD */
	struct codec_slice topic;        /* TOPIC, v3–v12: Name, offset in that call's iov */
	uint8_t topic_id[16];            /* TOPIC, v13 */
	int32_t partition;               /* PARTITION */
	int64_t offset_span;             /* BATCH…: Σ (lastOffsetDelta + 1) of the current partition */
	int32_t nbatches;
};
void codec_produce_stream_init(struct codec_produce_stream *s, int16_t version);
/** As codec_fetch_stream_next(), for Produce requests; s->unit names the unit parsed. */
enum codec_err codec_produce_stream_next(struct codec_produce_stream *s, const struct codec_iov *iov,
					 int niov, size_t *used, size_t *records) CODEC_WUR;

/** A topic seen in a Metadata response: name and TopicId (v10+). */
struct codec_metadata_topic {
	int16_t error_code;
	char *name;              /* nullable in v12+ */
	uint8_t topic_id[16];    /* zero before v10 */
	int32_t npartitions;
};

/** What syncgate learns from a Metadata response besides addresses. */
struct codec_metadata_topics {
	struct codec_metadata_topic *v;
	size_t n;
};

/** Decode only the topics (names, ids, partition counts) of a Metadata response body. */
enum codec_err codec_metadata_response_topics(const struct codec_iov *iov, int niov,
					      int16_t version,
					      struct codec_metadata_topics *out) CODEC_WUR;
/** Release the topic summary. */
void codec_metadata_topics_free(struct codec_metadata_topics *t);

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
/* Fetch (key 1) and ListOffsets (key 2)                                    */
/* ------------------------------------------------------------------------ */

/** Where one partition's offsets sit in a Fetch response body (for clamping). */
struct codec_fetch_partition_pos {
	size_t topic;                 /* index into the response's topics */
	int32_t partition_index;
	int16_t error_code;
	int64_t high_watermark;
	size_t high_watermark_off;    /* body offset of the int64 */
	int64_t last_stable_offset;
	size_t last_stable_offset_off;
};

/** Scan of a Fetch response (spec FetchResponse v4–v18); records skipped. */
struct codec_fetch_response_scan {
	char **topic_names;           /* v4–v12 (NULL entries in v13+) */
	uint8_t (*topic_ids)[16];     /* v13+ */
	size_t ntopics;
	struct codec_fetch_partition_pos *partitions;
	size_t npartitions;
	size_t tags_off;              /* v12+: offset of the top-level tagged fields */
};

/**
 * Scan a Fetch response body (v4–v18): topics, and per partition its error
 * and where HighWatermark and LastStableOffset sit; records and aborted
 * transactions are skipped. `partitions` lists all topics' partitions in
 * order. Free with codec_fetch_response_scan_free() whatever the result.
 */
enum codec_err codec_fetch_response_scan(const struct codec_iov *iov, int niov, int16_t version,
					 struct codec_fetch_response_scan *out) CODEC_WUR;
/** Release a Fetch scan. */
void codec_fetch_response_scan_free(struct codec_fetch_response_scan *s);

/**
 * The walk of a Fetch response body the scan and the clamp share: starts `r`
 * on iov, reads the header, every topic's name (v4–v12) or id (v13+) into
 * `*names` / `*ids` (allocated `*ntopics` long, NULL entries for the other
 * kind; the caller frees them) and calls `part(r, ctx, topic index)` for
 * each partition, which must read it whole. Stops before the top-level
 * tagged fields. CODEC_ERR_UNSUPPORTED for a version outside v4–v18 (nothing
 * read), else CODEC_OK with any decode error sticky in `r`.
 */
enum codec_err codec_fetch_response_walk(struct codec_reader *r, const struct codec_iov *iov, int niov,
					 int16_t version, char ***names, uint8_t (**ids)[16], size_t *ntopics,
					 void (*part)(struct codec_reader *r, void *ctx, size_t topic), void *ctx);

/* ------------------------------------------------------------------------ */
/* ListOffsets (key 2), spec ListOffsetsRequest/Response v1–v11             */
/* ------------------------------------------------------------------------ */

struct codec_list_offsets_partition_req {
	int32_t partition_index;
	int32_t current_leader_epoch;  /* v4+ */
	int64_t timestamp;
	struct codec_tags tags;
};

struct codec_list_offsets_topic_req {
	char *name;
	struct codec_list_offsets_partition_req *partitions;
	size_t npartitions;
	struct codec_tags tags;
};

struct codec_list_offsets_request {
	int32_t replica_id;
	int8_t isolation_level;        /* v2+ */
	struct codec_list_offsets_topic_req *topics;
	size_t ntopics;
	int32_t timeout_ms;            /* v10+ */
	struct codec_tags tags;
};

/** Decode a ListOffsets request body (v1–v11, after the request header). */
enum codec_err codec_list_offsets_request_decode(const struct codec_iov *iov, int niov, int16_t version,
						 struct codec_list_offsets_request *out) CODEC_WUR;
/** Release a decoded ListOffsets request. */
void codec_list_offsets_request_free(struct codec_list_offsets_request *m);

/* ------------------------------------------------------------------------ */
/* Clamp to the mirrored high watermark (KIP unified sourceHW,     */
/* invariant 1b, docs/architecture.md): codec/fetch_clamp.c, codec/offsets_clamp.c   */
/* ------------------------------------------------------------------------ */

/** One in-place rewrite of a body: replace `del` bytes at `off` with `ins`. */
struct codec_edit {
	size_t off;
	size_t del;
	uint8_t ins[8];
	uint8_t ins_len;
};

/** Edits in increasing, non-overlapping order of `off`. Owned: codec_edits_free(). */
struct codec_edits {
	struct codec_edit *v;
	size_t n, cap;
	int64_t delta;                /* body length change: Σ (ins_len − del) */
};

/** Append an edit (ins_len ≤ 8; `off` after the previous edit's end). 0, or -1 (ENOMEM, order). */
int codec_edits_add(struct codec_edits *e, size_t off, size_t del, const uint8_t *ins,
		    size_t ins_len) CODEC_WUR;
void codec_edits_free(struct codec_edits *e);

/**
 * Asked for each partition (without an error) of a response to clamp: return
 * 0 when its topic is not clamped, 1 when it is, with *mirrored_hw the first
 * offset not on every gating mirror, or -1 when unknown (nothing is known
 * mirrored: clamp everything). `topic` is the name (NULL in Fetch v13+),
 * `topic_id` the TopicId (NULL before Fetch v13). Both borrowed for the call.
 */
typedef int (*codec_clamp_fn)(void *ctx, const char *topic, const uint8_t *topic_id,
			      int32_t partition, int64_t *mirrored_hw);

/** What the clamp needs from a Fetch request (spec FetchRequest v4–v18). */
struct codec_fetch_request_info {
	int32_t replica_id;           /* v4–v14 field, v15+ ReplicaState.ReplicaId (tag 1); -1 consumer */
	int32_t max_wait_ms;
	int32_t max_bytes;            /* MaxBytes */
	size_t max_bytes_off;         /* its body offset (a proxy may lower it in place) */
	int8_t isolation_level;       /* 0 read_uncommitted, 1 read_committed */
	int32_t session_id;           /* v7+ */
	int32_t session_epoch;        /* v7+ */
	size_t npartitions;           /* partitions listed (incremental sessions list fewer) */
};
/** Walk a Fetch request body (after the header), v4–v18. */
enum codec_err codec_fetch_request_info(const struct codec_iov *iov, int niov, int16_t version,
					struct codec_fetch_request_info *out) CODEC_WUR;

/**
 * The distinct TopicIds a Fetch request body (after the header) names in
 * Topics, v13+ (none before v13: topics by name). *ids: malloc'd, *n of
 * them (NULL, 0 when none or on error). v4–v18.
 */
enum codec_err codec_fetch_request_topic_ids(const struct codec_iov *iov, int niov, int16_t version,
					     uint8_t (**ids)[16], size_t *n) CODEC_WUR;
/**
 * A whole Metadata v12 request frame (size prefix, header v2) asking for the
 * `n` topics `ids` by TopicId (Name null; no auto-creation), appended to
 * `out` (initialised by the caller). 0, or -1 (n = 0, or the buffer's limit).
 */
int codec_metadata_request_by_ids(const uint8_t (*ids)[16], size_t n, int32_t correlation_id,
				  const char *client_id, struct codec_buf *out) CODEC_WUR;

/** One clamped (gated) partition of a Fetch response. */
struct codec_fetch_clamp_part {
	size_t topic;                 /* index into the response's topics */
	int32_t partition;
	int64_t broker_hw;            /* HighWatermark as the broker sent it */
	int64_t mirrored_hw;          /* -1 unknown */
	int64_t records_end;          /* one past the last offset of its last batch, -1 no batch:
				       * the broker's HW when it read the log was at least this,
				       * whatever HighWatermark says (taken before the read) */
	int64_t wait_above;           /* last offset of the first batch left out, -1 none:
				       * once the mirrored HW passes it, a new clamp gives records */
	size_t kept_len;              /* record bytes kept (whole batches) */
	size_t batches_kept, batches_dropped;
	int64_t records_dropped, bytes_dropped;
};

/** What a record batch header says (RecordBatch v2; legacy message sets: one entry). */
struct codec_batch_head {
	int64_t base;                 /* baseOffset, -1 when not readable */
	int64_t last;                 /* its last offset (base + lastOffsetDelta) */
	size_t total;                 /* bytes it takes in the record set (the rest when partial) */
	bool partial;                 /* cut short by the broker (KIP-74): no client reads it */
	int32_t records;              /* recordsCount (0 when not readable) */
};
/** Bytes of a batch header codec_batch_peek() looks at. */
#define CODEC_BATCH_PEEK 61
/**
 * Read the header of the batch at the start of `h` (`avail` bytes of it
 * given, at most CODEC_BATCH_PEEK; `left` bytes of the record set remain
 * from it, avail = min(left, CODEC_BATCH_PEEK)). Never fails: an unreadable
 * header gives base -1 (the batch is then never kept).
 */
void codec_batch_peek(const uint8_t *h, size_t avail, size_t left, struct codec_batch_head *out);
/** Whether the clamp keeps batch `b`: its last offset below `keep_below` (≥ 0). */
bool codec_batch_kept(const struct codec_batch_head *b, int64_t keep_below);
/**
 * The clamp's rule for one partition: given what `codec_clamp_fn`
 * said (`gated`, `mirrored_hw`, -1 unknown) and the broker's LogStartOffset,
 * returns whether the partition is clamped — every gated one is; then
 * HighWatermark/LastStableOffset above *limit come down to it (the log start
 * while the mirrored HW is unknown) and a batch is kept only if its last
 * offset is below *keep_below (-1: none is), judged batch by batch whatever
 * the response's HighWatermark and LastStableOffset say: Kafka takes them
 * before it reads the log, and the read goes up to the HW (LSO) of its own
 * moment, so a response may carry batches at or past its own HighWatermark.
 * A gated partition whose batches all lie below the mirrored HW (and whose
 * HW/LSO are not above it) gets no edit.
 */
bool codec_fetch_clamp_limit(int gated, int64_t mirrored_hw, int64_t log_start_offset,
			     int64_t *limit, int64_t *keep_below);

/** Result of a Fetch clamp: edits and figures. Free with codec_fetch_clamp_free(). */
struct codec_fetch_clamp {
	struct codec_edits edits;     /* none: the response stays byte for byte */
	char **topic_names;           /* v4–v12 */
	uint8_t (*topic_ids)[16];     /* v13+ */
	size_t ntopics;
	struct codec_fetch_clamp_part *parts; /* clamped partitions: the callback said 1 */
	size_t nparts;
	size_t batches_kept, batches_dropped;  /* over the clamped partitions */
	size_t record_bytes_left;     /* record bytes in the clamped response, every partition
				       * (those not gated or with an error as they are) */
	int64_t records_dropped, bytes_dropped;
};

/**
 * Clamp a Fetch response body (v4–v18) for a consumer: for every partition
 * without an error that `fn` clamps, HighWatermark and LastStableOffset
 * become at most the mirrored HW (the log start offset while it is unknown),
 * and the record batches whose last offset is ≥ it are left out — whole
 * batches from the first such one on, by editing the Records length prefix
 * (int32; uvarint(len+1) when flexible) and cutting the tail. Every batch of
 * such a partition is judged, even when its HighWatermark is not above the
 * mirrored HW (codec_fetch_clamp_limit). A batch cut short by the broker
 * (the last one) is judged by its header when readable.
 * No record byte is copied. Free `out` whatever the result.
 */
enum codec_err codec_fetch_response_clamp(const struct codec_iov *iov, int niov, int16_t version,
					  codec_clamp_fn fn, void *fn_ctx,
					  struct codec_fetch_clamp *out) CODEC_WUR;
void codec_fetch_clamp_free(struct codec_fetch_clamp *c);

/** Error code given while the mirrored HW is unknown (retriable; Kafka OFFSET_NOT_AVAILABLE). */
#define CODEC_ERROR_OFFSET_NOT_AVAILABLE 78
#define CODEC_ERROR_LEADER_NOT_AVAILABLE 5

/** Figures of a ListOffsets / OffsetForLeaderEpoch clamp. */
struct codec_offsets_clamp {
	struct codec_edits edits;
	size_t clamped;               /* partitions whose answer changed */
};

/**
 * Clamp a ListOffsets response body (v1–v11) to the mirrored HW, given the
 * decoded request (for each partition's query Timestamp): LATEST (-1),
 * EARLIEST (-2), EARLIEST_LOCAL (-4), LATEST_TIERED (-5) answers above it
 * become it; answers that point at a record (MAX_TIMESTAMP -3, by timestamp)
 * at or past it become "none" (Offset -1, Timestamp -1, LeaderEpoch -1).
 * While the mirrored HW is unknown: ErrorCode OFFSET_NOT_AVAILABLE (v5+) or
 * LEADER_NOT_AVAILABLE, Offset and Timestamp -1 — both retriable.
 * In-place edits only. Free out->edits whatever the result.
 */
enum codec_err codec_list_offsets_response_clamp(const struct codec_iov *iov, int niov,
						 int16_t version,
						 const struct codec_list_offsets_request *req,
						 codec_clamp_fn fn, void *fn_ctx,
						 struct codec_offsets_clamp *out) CODEC_WUR;

/** ReplicaId of an OffsetForLeaderEpoch request body (v3+; -1 for v2, which has none). */
int32_t codec_offset_for_leader_epoch_replica_id(const struct codec_iov *iov, int niov, int16_t version);

/**
 * Clamp an OffsetForLeaderEpoch response body (spec OffsetForLeaderEpochResponse
 * v2–v4): EndOffset above the mirrored HW becomes it (the epoch is kept);
 * unknown mirrored HW: ErrorCode OFFSET_NOT_AVAILABLE, EndOffset -1.
 * In-place edits only. Free out->edits whatever the result.
 */
enum codec_err codec_offset_for_leader_epoch_response_clamp(const struct codec_iov *iov, int niov,
							    int16_t version, codec_clamp_fn fn,
							    void *fn_ctx,
							    struct codec_offsets_clamp *out) CODEC_WUR;

/* ------------------------------------------------------------------------ */
/* Full decode of ApiVersions requests and Metadata responses              */
/* ------------------------------------------------------------------------ */

/** ApiVersions request (spec ApiVersionsRequest v0–v4; fields v3+). */
struct codec_api_versions_request {
	char *client_software_name;
	char *client_software_version;
	struct codec_tags tags;
};
/** Decode/free an ApiVersions request body (v0–v2 are empty). */
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

/* ------------------------------------------------------------------------ */
/* Framing                                                                  */
/* ------------------------------------------------------------------------ */

/**
 * The segments of `in` after its first `skip` bytes (e.g. a frame body past
 * its header), written to `out` (at most `max_out`); returns the count, or
 * -1 when `skip` is past the end or `out` is too small. Borrowed like `in`.
 */
int codec_iov_skip(const struct codec_iov *in, int nin, size_t skip, struct codec_iov *out, int max_out);

#endif
