/*
 * Streaming scans: walk a frame body that arrives in pieces, one
 * bounded unit of structure at a time, so a proxy can forward what it has
 * seen before the rest has arrived and move record bytes without looking at
 * them. Each call parses one whole unit from the bytes at the scan position
 * or returns CODEC_ERR_UNDERFLOW without moving; units are small (a header, a
 * topic name, a partition header up to its Records length), record data is
 * never part of one.
 *
 * Fetch responses (v4–v18): the proxy needs only the top-level tagged fields
 * at the end (NodeEndpoints, v16+). Produce requests: see
 * codec_produce_stream_next().
 */
#include <string.h>

#include "codec/codec.h"

#define FETCH_MIN 4
#define FETCH_MAX 18
#define FETCH_TOPIC_IDS 13

void codec_fetch_stream_init(struct codec_fetch_stream *s, int16_t version)
{
	memset(s, 0, sizeof(*s));
	s->version = version;
	s->flexible = codec_api_flexible(CODEC_API_FETCH, version);
	s->stage = version < FETCH_MIN || version > FETCH_MAX ? CODEC_STREAM_BAD : CODEC_STREAM_HEAD;
}

const char *codec_stream_stage_str(enum codec_stream_stage st)
{
	static const char *const names[CODEC_STREAM_STAGE_COUNT] = {
		[CODEC_STREAM_HEAD] = "head", [CODEC_STREAM_TOPIC] = "topic",
		[CODEC_STREAM_PARTITION] = "partition", [CODEC_STREAM_BATCH] = "batch",
		[CODEC_STREAM_PART_END] = "part_end",
		[CODEC_STREAM_TAIL] = "tail", [CODEC_STREAM_BAD] = "bad",
	};
	return st < CODEC_STREAM_STAGE_COUNT ? names[st] : "?";
}

/* After a topic's last partition (or a topic without any): its tags, then the next topic. */
static void fetch_topic_end(struct codec_fetch_stream *s, struct codec_reader *r)
{
	codec_read_tags(r, NULL, NULL, NULL);
	s->stage = --s->topics_left > 0 ? CODEC_STREAM_TOPIC : CODEC_STREAM_TAIL;
}

enum codec_err codec_fetch_stream_next(struct codec_fetch_stream *s, const struct codec_iov *iov,
				       int niov, size_t *used, size_t *records)
{
	struct codec_reader r;
	codec_reader_init(&r, iov, niov);
	r.flexible = s->flexible;
	struct codec_fetch_stream next = *s;
	*used = 0;
	*records = 0;
	switch (s->stage) {
	case CODEC_STREAM_HEAD:
		codec_read_i32(&r); /* ThrottleTimeMs */
		if (s->version >= 7) {
			codec_read_i16(&r); /* ErrorCode */
			codec_read_i32(&r); /* SessionId */
		}
		next.topics_left = codec_read_array_len(&r, false, 0);
		next.stage = next.topics_left > 0 ? CODEC_STREAM_TOPIC : CODEC_STREAM_TAIL;
		break;
	case CODEC_STREAM_TOPIC:
		if (s->version >= FETCH_TOPIC_IDS) {
			codec_read_raw(&r, next.topic_id, 16); /* TopicId */
			next.topic = (struct codec_slice){ 0, -1 };
		} else {
			next.topic = codec_read_slice(&r, false, false); /* Topic */
		}
		next.parts_left = codec_read_array_len(&r, false, 0);
		if (next.parts_left > 0)
			next.stage = CODEC_STREAM_PARTITION;
		else
			fetch_topic_end(&next, &r);
		break;
	case CODEC_STREAM_PARTITION: {
		struct codec_fetch_stream_part *p = &next.part;
		memset(p, 0, sizeof(*p));
		p->partition = codec_read_i32(&r);
		p->error_code = codec_read_i16(&r);
		p->hw_off = r.off;
		p->high_watermark = codec_read_i64(&r);
		p->lso_off = r.off;
		p->last_stable_offset = codec_read_i64(&r);
		if (s->version >= 5)
			p->log_start_offset = codec_read_i64(&r);
		int32_t na = codec_read_array_len(&r, true, 0); /* AbortedTransactions */
		for (int32_t i = 0; i < na && !r.err; i++) {
			codec_read_i64(&r); /* ProducerId */
			codec_read_i64(&r); /* FirstOffset */
			codec_read_tags(&r, NULL, NULL, NULL);
		}
		if (s->version >= 11)
			codec_read_i32(&r); /* PreferredReadReplica */
		/* Records: nullable bytes; only the length is part of the unit */
		p->records_len_off = r.off;
		int32_t n = codec_read_length(&r, true, true);
		p->records_len_len = r.off - p->records_len_off;
		p->records_len = n;
		*records = n > 0 ? (size_t)n : 0;
		next.stage = CODEC_STREAM_PART_END;
		break;
	}
	case CODEC_STREAM_PART_END:
		codec_read_tags(&r, NULL, NULL, NULL); /* the partition's */
		if (--next.parts_left > 0)
			next.stage = CODEC_STREAM_PARTITION;
		else
			fetch_topic_end(&next, &r);
		break;
	case CODEC_STREAM_TAIL:
		return CODEC_OK; /* the caller takes the rest of the body */
	default:
		return CODEC_ERR_BAD_MSG;
	}
	if (r.err) {
		if (r.err != CODEC_ERR_UNDERFLOW)
			*records = 0;
		return r.err;
	}
	*used = r.off;
	*s = next;
	return CODEC_OK;
}

/* ---- Produce requests (v3–v13) ------------------------------------------- */

#define PRODUCE_MIN 3
#define PRODUCE_MAX 13
#define PRODUCE_TOPIC_IDS 13
/* RecordBatch v2: baseOffset(8) batchLength(4) partitionLeaderEpoch(4) magic(1)
 * crc(4) attributes(2) lastOffsetDelta(4) … the 61-byte header. */
#define BATCH_MAGIC_AT 16
#define BATCH_LAST_DELTA_AT 23
#define BATCH_HEADER 61
#define BATCH_AFTER_LENGTH 49

void codec_produce_stream_init(struct codec_produce_stream *s, int16_t version)
{
	memset(s, 0, sizeof(*s));
	s->version = version;
	s->flexible = codec_api_flexible(CODEC_API_PRODUCE, version);
	s->stage = version < PRODUCE_MIN || version > PRODUCE_MAX ? CODEC_STREAM_BAD : CODEC_STREAM_HEAD;
}

static void produce_topic_end(struct codec_produce_stream *s, struct codec_reader *r)
{
	codec_read_tags(r, NULL, NULL, NULL);
	s->stage = --s->topics_left > 0 ? CODEC_STREAM_TOPIC : CODEC_STREAM_TAIL;
}

/* After a partition's records: its tags, then the next partition or topic. */
static void produce_part_end(struct codec_produce_stream *s, struct codec_reader *r)
{
	codec_read_tags(r, NULL, NULL, NULL);
	if (--s->parts_left > 0)
		s->stage = CODEC_STREAM_PARTITION;
	else
		produce_topic_end(s, r);
}

enum codec_err codec_produce_stream_next(struct codec_produce_stream *s, const struct codec_iov *iov,
					 int niov, size_t *used, size_t *records)
{
	struct codec_reader r;
	codec_reader_init(&r, iov, niov);
	r.flexible = s->flexible;
	struct codec_produce_stream next = *s;
	*used = 0;
	*records = 0;
	next.unit = s->stage;
	switch (s->stage) {
	case CODEC_STREAM_HEAD:
		codec_read_slice(&r, false, true); /* TransactionalId */
		next.acks = codec_read_i16(&r);
		next.timeout_ms = codec_read_i32(&r);
		next.topics_left = codec_read_array_len(&r, false, 0);
		next.stage = next.topics_left > 0 ? CODEC_STREAM_TOPIC : CODEC_STREAM_TAIL;
		break;
	case CODEC_STREAM_TOPIC:
		if (s->version >= PRODUCE_TOPIC_IDS)
			codec_read_uuid(&r, next.topic_id);
		else
			next.topic = codec_read_slice(&r, false, false);
		next.parts_left = codec_read_array_len(&r, false, 0);
		if (next.parts_left > 0)
			next.stage = CODEC_STREAM_PARTITION;
		else
			produce_topic_end(&next, &r);
		break;
	case CODEC_STREAM_PARTITION: {
		next.partition = codec_read_i32(&r);
		int32_t n = codec_read_length(&r, true, true);
		next.records_left = n > 0 ? (size_t)n : 0;
		next.offset_span = 0;
		next.nbatches = 0;
		next.stage = next.records_left > 0 ? CODEC_STREAM_BATCH : CODEC_STREAM_PART_END;
		break;
	}
	case CODEC_STREAM_BATCH: {
		/* as codec_produce_request_decode: whole batches; a legacy message set
		 * is not counted (the broker rejects it) */
		size_t avail = codec_reader_remaining(&r);
		if (s->records_left < BATCH_MAGIC_AT + 1)
			return CODEC_ERR_BAD_MSG;
		if (avail < BATCH_MAGIC_AT + 1)
			return CODEC_ERR_UNDERFLOW;
		codec_read_i64(&r); /* baseOffset */
		int32_t batch_length = codec_read_i32(&r);
		codec_read_i32(&r); /* partitionLeaderEpoch */
		int8_t magic = codec_read_i8(&r);
		if (batch_length < 5 || (size_t)batch_length > s->records_left - 12)
			return codec_reader_fail(&r, CODEC_ERR_BAD_MSG);
		if (magic != 2) {
			*used = r.off;
			*records = s->records_left - r.off;
			next.offset_span = 0;
			next.nbatches = 0;
			next.records_left = 0;
			next.legacy = true;
			next.stage = CODEC_STREAM_PART_END;
			*s = next;
			return CODEC_OK;
		}
		if (batch_length < BATCH_AFTER_LENGTH)
			return codec_reader_fail(&r, CODEC_ERR_BAD_MSG);
		if (avail < BATCH_HEADER)
			return CODEC_ERR_UNDERFLOW;
		codec_read_skip(&r, BATCH_LAST_DELTA_AT - r.off);
		int32_t last_delta = codec_read_i32(&r);
		codec_read_skip(&r, BATCH_HEADER - r.off);
		if (last_delta < 0)
			return codec_reader_fail(&r, CODEC_ERR_BAD_MSG);
		if (!next.legacy) {
			next.offset_span += (int64_t)last_delta + 1;
			next.nbatches++;
		}
		*records = (size_t)batch_length + 12 - BATCH_HEADER;
		next.records_left -= (size_t)batch_length + 12;
		if (next.records_left == 0)
			next.stage = CODEC_STREAM_PART_END;
		break;
	}
	case CODEC_STREAM_PART_END:
		next.legacy = false;
		produce_part_end(&next, &r);
		break;
	case CODEC_STREAM_TAIL:
		return CODEC_OK; /* the top-level tags: the caller passes the rest */
	default:
		return CODEC_ERR_BAD_MSG;
	}
	if (r.err) {
		*records = 0;
		return r.err;
	}
	*used = r.off;
	*s = next;
	return CODEC_OK;
}
