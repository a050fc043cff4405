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

enum codec_err codec_fetch_response_walk(struct codec_reader *r, const struct codec_iov *iov, int niov,
					 int16_t version, char ***names, uint8_t (**ids)[16], size_t *ntopics,
					 void (*part)(struct codec_reader *r, void *ctx, size_t topic), void *ctx)
{
	codec_reader_init(r, iov, niov);
	if (version < FETCH_MIN || version > FETCH_MAX)
		return CODEC_ERR_UNSUPPORTED;
	r->flexible = codec_api_flexible(CODEC_API_FETCH, version);
	codec_read_i32(r); /* ThrottleTimeMs */
	if (version >= 7) {
		codec_read_i16(r); /* ErrorCode */
		codec_read_i32(r); /* SessionId */
	}
	int32_t n = codec_read_array_len(r, false, 3);
	if (!r->err && n > 0) {
		*ntopics = (size_t)n;
		*names = calloc(*ntopics, sizeof(**names));
		*ids = calloc(*ntopics, sizeof(**ids));
		if (!*names || !*ids)
			codec_reader_fail(r, CODEC_ERR_NOMEM);
	}
	for (size_t t = 0; t < *ntopics && !r->err; t++) {
		if (version >= FETCH_TOPIC_IDS)
			codec_read_uuid(r, (*ids)[t]);
		else
			(*names)[t] = codec_read_str(r, false);
		/* PartitionIndex, ErrorCode, HighWatermark, LastStableOffset, two lengths: ≥ 24 bytes. */
		int32_t np = codec_read_array_len(r, false, 24);
		for (int32_t i = 0; i < np && !r->err; i++)
			part(r, ctx, t);
		codec_read_tags(r, NULL, NULL, NULL);
	}
	return CODEC_OK;
}

static void scan_part(struct codec_reader *r, void *ctx, size_t topic)
{
	struct fetch_scan_ctx *c = ctx;
	c->topic = topic;
	scan_partition(r, c);
}

enum codec_err codec_fetch_response_scan(const struct codec_iov *iov, int niov, int16_t version,
					 struct codec_fetch_response_scan *out)
{
	struct codec_reader r;
	memset(out, 0, sizeof(*out));
	struct fetch_scan_ctx c = {out, version, 0, 0};
	if (codec_fetch_response_walk(&r, iov, niov, version, &out->topic_names, &out->topic_ids, &out->ntopics,
				      scan_part, &c) != CODEC_OK)
		return CODEC_ERR_UNSUPPORTED;
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
