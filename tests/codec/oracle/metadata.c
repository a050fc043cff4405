/* Metadata (key 3) response encoder, v0–v13: the round-trip oracle of the decoder. */
#include "tests/codec/oracle/oracle.h"

#define METADATA_MAX 13

static void write_broker(struct codec_buf *w, const void *elem, void *ctx)
{
	const struct codec_metadata_broker *b = elem;
	int16_t version = *(const int16_t *)ctx;
	codec_write_i32(w, b->node_id);
	codec_write_str(w, b->host);
	codec_write_i32(w, b->port);
	if (version >= 1)
		codec_write_str(w, b->rack);
	codec_write_tags(w, NULL, 0, &b->tags);
}

static void write_partition(struct codec_buf *w, const void *elem, void *ctx)
{
	const struct codec_metadata_partition *p = elem;
	int16_t version = *(const int16_t *)ctx;
	codec_write_i16(w, p->error_code);
	codec_write_i32(w, p->partition_index);
	codec_write_i32(w, p->leader_id);
	if (version >= 7)
		codec_write_i32(w, p->leader_epoch);
	codec_write_int32s(w, &p->replica_nodes);
	codec_write_int32s(w, &p->isr_nodes);
	if (version >= 5)
		codec_write_int32s(w, &p->offline_replicas);
	codec_write_tags(w, NULL, 0, &p->tags);
}

static void write_topic(struct codec_buf *w, const void *elem, void *ctx)
{
	const struct codec_metadata_response_topic *t = elem;
	int16_t version = *(const int16_t *)ctx;
	codec_write_i16(w, t->error_code);
	codec_write_str(w, t->name);
	if (version >= 10)
		codec_write_uuid(w, t->topic_id);
	if (version >= 1)
		codec_write_bool(w, t->is_internal);
	codec_write_array(w, t->partitions, t->npartitions, sizeof(*t->partitions),
			  write_partition, ctx);
	if (version >= 8)
		codec_write_i32(w, t->topic_authorized_operations);
	codec_write_tags(w, NULL, 0, &t->tags);
}

enum codec_err codec_metadata_response_encode(const struct codec_metadata_response *m,
					      int16_t version, struct codec_buf *out)
{
	if (version < 0 || version > METADATA_MAX)
		return CODEC_ERR_UNSUPPORTED;
	out->flexible = codec_api_flexible(CODEC_API_METADATA, version);
	if (version >= 3)
		codec_write_i32(out, m->throttle_time_ms);
	codec_write_array(out, m->brokers, m->nbrokers, sizeof(*m->brokers), write_broker, &version);
	if (version >= 2)
		codec_write_str(out, m->cluster_id);
	if (version >= 1)
		codec_write_i32(out, m->controller_id);
	codec_write_array(out, m->topics, m->ntopics, sizeof(*m->topics), write_topic, &version);
	if (version >= 8 && version <= 10)
		codec_write_i32(out, m->cluster_authorized_operations);
	if (version >= 13)
		codec_write_i16(out, m->error_code);
	codec_write_tags(out, NULL, 0, &m->tags);
	return out->err;
}
