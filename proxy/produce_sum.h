/*
 * produce_sum.h — what a Produce request's response needs, kept instead of
 * the decoded request (private to libsgproxy and its unit tests; included
 * by datapath.h): per partition its offset span and its producer's id,
 * epoch and batch sequences. Built by hold.c (proxy_produce_sum_new, also
 * for streamed requests and retried.c's answers); read by hold.c and
 * pidmap.c. Pure data; loop thread.
 */
#ifndef SYNCGATE_PROXY_PRODUCE_SUM_H
#define SYNCGATE_PROXY_PRODUCE_SUM_H

#include <stdbool.h>
#include <stdint.h>

#include "codec/codec.h"

/**
 * What a Produce response needs from its request, kept while the request is
 * in flight (and its response held) instead of the decoded request: one
 * allocation, 40 bytes a partition plus the topic names.
 */
struct proxy_produce_sum {
	int16_t acks;
	int32_t timeout_ms;
	uint32_t ntopics, nparts;
	struct proxy_produce_part {
		uint32_t topic;          /* index into proxy_produce_sum_topics() */
		int32_t partition;
		int64_t offset_span;     /* Σ (lastOffsetDelta + 1) over its batches */
		bool transactional;      /* its last RecordBatch is transactional (attributes bit 4) */
		int64_t producer_id;     /* its last RecordBatch's ProducerId */
		int16_t producer_epoch;  /* its last RecordBatch's ProducerEpoch */
		bool idempotent;         /* RecordBatch v2 batches of one idempotent producer
					  * (ProducerId >= 0, BaseSequence >= 0): seqs below */
		int32_t first_seq, last_seq; /* the sequences its batches carry, first to last */
	} parts[];                   /* then ntopics struct proxy_produce_topic, then the names */
};
struct proxy_produce_topic {
	const char *name;        /* v3–v12, in the summary's allocation; NULL in v13 */
	uint8_t topic_id[16];    /* v13 */
};
/** The topics of a summary (they follow its parts in the same allocation). */
static inline const struct proxy_produce_topic *proxy_produce_sum_topics(const struct proxy_produce_sum *s)
{
	return (const struct proxy_produce_topic *)(s->parts + s->nparts);
}
/** Summarise a decoded Produce request (one allocation; free()). NULL on ENOMEM. */
struct proxy_produce_sum *proxy_produce_sum_new(const struct codec_produce_request *req);
/**
 * Whether partition `p` of a decoded Produce request carries RecordBatch v2
 * batches of an idempotent producer (ProducerId >= 0, BaseSequence >= 0,
 * any number of batches, their sequences contiguous as the broker requires);
 * then `*first`/`*last` are the first and last sequence (wrapping at
 * INT32_MAX like the broker's). Pure.
 */
bool proxy_produce_batch_seqs(const struct codec_produce_partition_req *p, int32_t *first, int32_t *last);

#endif
