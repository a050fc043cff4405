/* Fetch (key 1) response scan, v4–v18: offsets' positions, records skipped. */
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"

#define FETCH_MIN 4
#define FETCH_MAX 18
#define FETCH_TOPIC_IDS 13   /* TopicId replaces Topic */

struct fetch_scan_ctx {
	struct codec_fetch_response_scan *s;
	int16_t version;
	size_t topic;            /* index of the topic being read */
	size_t cap;              /* allocated partitions */
};

static void skip_aborted(struct codec_reader *r)
{
	int32_t n = codec_read_array_len(r, true, 16);
	for (int32_t i = 0; i < n && !r->err; i++) {
		codec_read_i64(r); /* ProducerId */
		codec_read_i64(r); /* FirstOffset */
		codec_read_tags(r, NULL, NULL, NULL);
	}
}

static void scan_partition(struct codec_reader *r, struct fetch_scan_ctx *c)
{
	struct codec_fetch_response_scan *s = c->s;
	if (s->npartitions == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		struct codec_fetch_partition_pos *v = realloc(s->partitions, cap * sizeof(*v));
		if (!v) {
			codec_reader_fail(r, CODEC_ERR_NOMEM);
			return;
		}
		s->partitions = v;
		c->cap = cap;
	}
	struct codec_fetch_partition_pos *p = &s->partitions[s->npartitions];
	memset(p, 0, sizeof(*p));
	p->topic = c->topic;
	p->partition_index = codec_read_i32(r);
	p->error_code = codec_read_i16(r);
	p->high_watermark_off = r->off;
	p->high_watermark = codec_read_i64(r);
	p->last_stable_offset_off = r->off;
	p->last_stable_offset = codec_read_i64(r);
	if (c->version >= 5)
		codec_read_i64(r); /* LogStartOffset */
	skip_aborted(r);
	if (c->version >= 11)
		codec_read_i32(r); /* PreferredReadReplica */
	codec_read_slice(r, true, true); /* Records */
	codec_read_tags(r, NULL, NULL, NULL);
	if (!r->err)
		s->npartitions++;
}

static void scan_topic(struct codec_reader *r, struct fetch_scan_ctx *c)
{
	struct codec_fetch_response_scan *s = c->s;
	if (c->version >= FETCH_TOPIC_IDS)
		codec_read_uuid(r, s->topic_ids[c->topic]);
	else
		s->topic_names[c->topic] = codec_read_str(r, false);
	/* PartitionIndex, ErrorCode, HighWatermark, LastStableOffset, two lengths: ≥ 24 bytes. */
	int32_t n = codec_read_array_len(r, false, 24);
	for (int32_t i = 0; i < n && !r->err; i++)
		scan_partition(r, c);
	codec_read_tags(r, NULL, NULL, NULL);
}

enum codec_err codec_fetch_response_scan(const struct codec_iov *iov, int niov, int16_t version,
					 struct codec_fetch_response_scan *out)
{
	struct codec_reader r;
	memset(out, 0, sizeof(*out));
	if (version < FETCH_MIN || version > FETCH_MAX)
		return CODEC_ERR_UNSUPPORTED;
	codec_reader_init(&r, iov, niov);
	r.flexible = codec_api_flexible(CODEC_API_FETCH, version);
	codec_read_i32(&r); /* ThrottleTimeMs */
	if (version >= 7) {
		codec_read_i16(&r); /* ErrorCode */
		codec_read_i32(&r); /* SessionId */
	}
	int32_t ntopics = codec_read_array_len(&r, false, 3);
	if (!r.err && ntopics > 0) {
		out->ntopics = (size_t)ntopics;
		out->topic_names = calloc(out->ntopics, sizeof(*out->topic_names));
		out->topic_ids = calloc(out->ntopics, sizeof(*out->topic_ids));
		if (!out->topic_names || !out->topic_ids)
			codec_reader_fail(&r, CODEC_ERR_NOMEM);
	}
	struct fetch_scan_ctx c = {out, version, 0, 0};
	for (; c.topic < out->ntopics && !r.err; c.topic++)
		scan_topic(&r, &c);
	out->tags_off = r.off;
	codec_read_tags(&r, NULL, NULL, NULL);
	return codec_reader_finish(&r);
}

void codec_fetch_response_scan_free(struct codec_fetch_response_scan *s)
{
	if (s->topic_names)
		for (size_t i = 0; i < s->ntopics; i++)
			free(s->topic_names[i]);
	free(s->topic_names);
	free(s->topic_ids);
	free(s->partitions);
	memset(s, 0, sizeof(*s));
}
