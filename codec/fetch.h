/*
 * codec/fetch.h — Fetch (key 1), ListOffsets (key 2), OffsetForLeaderEpoch, and the clamp to the mirrored high watermark. Part of codec/codec.h (include that); see its
 * opening comment for the conventions (segments, sticky errors, ownership).
 */
#ifndef SYNCGATE_CODEC_FETCH_H
#define SYNCGATE_CODEC_FETCH_H

#include "codec/produce.h"

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

#endif
