/* ListOffsets (key 2) v1–v11: request encoder and the whole response (round-trip oracles). */
#include <stdlib.h>
#include <string.h>

#include "tests/codec/oracle/oracle.h"

#define LIST_OFFSETS_MIN 1
#define LIST_OFFSETS_MAX 11

static bool list_offsets_version_ok(int16_t version)
{
	return version >= LIST_OFFSETS_MIN && version <= LIST_OFFSETS_MAX;
}

static void write_partition_req(struct codec_buf *b, const void *elem, void *ctx)
{
	const struct codec_list_offsets_partition_req *p = elem;
	int16_t version = *(const int16_t *)ctx;
	codec_write_i32(b, p->partition_index);
	if (version >= 4)
		codec_write_i32(b, p->current_leader_epoch);
	codec_write_i64(b, p->timestamp);
	codec_write_tags(b, NULL, 0, &p->tags);
}

static void write_topic_req(struct codec_buf *b, const void *elem, void *ctx)
{
	const struct codec_list_offsets_topic_req *t = elem;
	codec_write_str(b, t->name);
	codec_write_array(b, t->partitions, t->npartitions, sizeof(*t->partitions),
			  write_partition_req, ctx);
	codec_write_tags(b, NULL, 0, &t->tags);
}

enum codec_err codec_list_offsets_request_encode(const struct codec_list_offsets_request *m,
						 int16_t version, struct codec_buf *out)
{
	if (!list_offsets_version_ok(version))
		return CODEC_ERR_UNSUPPORTED;
	out->flexible = codec_api_flexible(CODEC_API_LIST_OFFSETS, version);
	codec_write_i32(out, m->replica_id);
	if (version >= 2)
		codec_write_i8(out, m->isolation_level);
	codec_write_array(out, m->topics, m->ntopics, sizeof(*m->topics), write_topic_req, &version);
	if (version >= 10)
		codec_write_i32(out, m->timeout_ms);
	codec_write_tags(out, NULL, 0, &m->tags);
	return out->err;
}

/* ---- response ----------------------------------------------------------- */

static void read_partition_resp(struct codec_reader *r, void *elem, void *ctx)
{
	struct codec_list_offsets_partition_resp *p = elem;
	int16_t version = *(const int16_t *)ctx;
	p->partition_index = codec_read_i32(r);
	p->error_code = codec_read_i16(r);
	p->timestamp = codec_read_i64(r);
	p->offset = codec_read_i64(r);
	p->leader_epoch = version >= 4 ? codec_read_i32(r) : -1;
	codec_read_tags(r, &p->tags, NULL, NULL);
}

static void write_partition_resp(struct codec_buf *b, const void *elem, void *ctx)
{
	const struct codec_list_offsets_partition_resp *p = elem;
	int16_t version = *(const int16_t *)ctx;
	codec_write_i32(b, p->partition_index);
	codec_write_i16(b, p->error_code);
	codec_write_i64(b, p->timestamp);
	codec_write_i64(b, p->offset);
	if (version >= 4)
		codec_write_i32(b, p->leader_epoch);
	codec_write_tags(b, NULL, 0, &p->tags);
}

static void read_topic_resp(struct codec_reader *r, void *elem, void *ctx)
{
	struct codec_list_offsets_topic_resp *t = elem;
	t->name = codec_read_str(r, false);
	t->partitions = codec_read_array(r, sizeof(*t->partitions), 22, &t->npartitions,
					 read_partition_resp, ctx);
	codec_read_tags(r, &t->tags, NULL, NULL);
}

static void write_topic_resp(struct codec_buf *b, const void *elem, void *ctx)
{
	const struct codec_list_offsets_topic_resp *t = elem;
	codec_write_str(b, t->name);
	codec_write_array(b, t->partitions, t->npartitions, sizeof(*t->partitions),
			  write_partition_resp, ctx);
	codec_write_tags(b, NULL, 0, &t->tags);
}

enum codec_err codec_list_offsets_response_decode(const struct codec_iov *iov, int niov, int16_t version,
						  struct codec_list_offsets_response *out)
{
	struct codec_reader r;
	memset(out, 0, sizeof(*out));
	if (!list_offsets_version_ok(version))
		return CODEC_ERR_UNSUPPORTED;
	codec_reader_init(&r, iov, niov);
	r.flexible = codec_api_flexible(CODEC_API_LIST_OFFSETS, version);
	if (version >= 2)
		out->throttle_time_ms = codec_read_i32(&r);
	out->topics = codec_read_array(&r, sizeof(*out->topics), 3, &out->ntopics,
				       read_topic_resp, &version);
	codec_read_tags(&r, &out->tags, NULL, NULL);
	return codec_reader_finish(&r);
}

enum codec_err codec_list_offsets_response_encode(const struct codec_list_offsets_response *m,
						  int16_t version, struct codec_buf *out)
{
	if (!list_offsets_version_ok(version))
		return CODEC_ERR_UNSUPPORTED;
	out->flexible = codec_api_flexible(CODEC_API_LIST_OFFSETS, version);
	if (version >= 2)
		codec_write_i32(out, m->throttle_time_ms);
	codec_write_array(out, m->topics, m->ntopics, sizeof(*m->topics), write_topic_resp, &version);
	codec_write_tags(out, NULL, 0, &m->tags);
	return out->err;
}

static void partition_resp_free(void *elem)
{
	codec_tags_free(&((struct codec_list_offsets_partition_resp *)elem)->tags);
}

static void topic_resp_free(void *elem)
{
	struct codec_list_offsets_topic_resp *t = elem;
	free(t->name);
	codec_array_free(t->partitions, t->npartitions, sizeof(*t->partitions), partition_resp_free);
	codec_tags_free(&t->tags);
}

void codec_list_offsets_response_free(struct codec_list_offsets_response *m)
{
	codec_array_free(m->topics, m->ntopics, sizeof(*m->topics), topic_resp_free);
	codec_tags_free(&m->tags);
	memset(m, 0, sizeof(*m));
}
