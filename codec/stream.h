/*
 * codec/stream.h — streaming scans of Fetch responses and Produce requests (codec/stream.c). Part of codec/codec.h (include that); see its
 * opening comment for the conventions (segments, sticky errors, ownership).
 */
#ifndef SYNCGATE_CODEC_STREAM_H
#define SYNCGATE_CODEC_STREAM_H

#include "codec/endpoints.h"

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

#endif
