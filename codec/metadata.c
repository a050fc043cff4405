/* Metadata (key 3) response v0–v13: full decode and the topic summary. */
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"

#define METADATA_MAX 13

static void read_broker(struct codec_reader *r, void *elem, void *ctx)
{
	struct codec_metadata_broker *b = elem;
	int16_t version = *(const int16_t *)ctx;
	b->node_id = codec_read_i32(r);
	b->host = codec_read_str(r, false);
	b->port = codec_read_i32(r);
	if (version >= 1)
		b->rack = codec_read_str(r, true);
	codec_read_tags(r, &b->tags, NULL, NULL);
}

static void read_partition(struct codec_reader *r, void *elem, void *ctx)
{
	struct codec_metadata_partition *p = elem;
	int16_t version = *(const int16_t *)ctx;
	p->error_code = codec_read_i16(r);
	p->partition_index = codec_read_i32(r);
	p->leader_id = codec_read_i32(r);
	p->leader_epoch = version >= 7 ? codec_read_i32(r) : -1;
	codec_read_int32s(r, &p->replica_nodes);
	codec_read_int32s(r, &p->isr_nodes);
	if (version >= 5)
		codec_read_int32s(r, &p->offline_replicas);
	codec_read_tags(r, &p->tags, NULL, NULL);
}

static void read_topic(struct codec_reader *r, void *elem, void *ctx)
{
	struct codec_metadata_response_topic *t = elem;
	int16_t version = *(const int16_t *)ctx;
	t->error_code = codec_read_i16(r);
	t->name = codec_read_str(r, version >= 12);
	if (version >= 10)
		codec_read_uuid(r, t->topic_id);
	if (version >= 1)
		t->is_internal = codec_read_bool(r);
	t->partitions = codec_read_array(r, sizeof(*t->partitions), 12, &t->npartitions,
					 read_partition, ctx);
	t->topic_authorized_operations = version >= 8 ? codec_read_i32(r) : INT32_MIN;
	codec_read_tags(r, &t->tags, NULL, NULL);
}

enum codec_err codec_metadata_response_decode(const struct codec_iov *iov, int niov, int16_t version,
					      struct codec_metadata_response *out)
{
	struct codec_reader r;
	if (!codec_decode_start(&r, iov, niov, CODEC_API_METADATA, version,
				0, METADATA_MAX, out, sizeof(*out)))
		return CODEC_ERR_UNSUPPORTED;
	if (version >= 3)
		out->throttle_time_ms = codec_read_i32(&r);
	out->brokers = codec_read_array(&r, sizeof(*out->brokers), 10, &out->nbrokers,
					read_broker, &version);
	if (version >= 2)
		out->cluster_id = codec_read_str(&r, true);
	out->controller_id = version >= 1 ? codec_read_i32(&r) : -1;
	out->topics = codec_read_array(&r, sizeof(*out->topics), 4, &out->ntopics,
				       read_topic, &version);
	out->cluster_authorized_operations = INT32_MIN;
	if (version >= 8 && version <= 10)
		out->cluster_authorized_operations = codec_read_i32(&r);
	if (version >= 13)
		out->error_code = codec_read_i16(&r);
	codec_read_tags(&r, &out->tags, NULL, NULL);
	return codec_reader_finish(&r);
}

static void broker_free(void *elem)
{
	struct codec_metadata_broker *b = elem;
	free(b->host);
	free(b->rack);
	codec_tags_free(&b->tags);
}

static void partition_free(void *elem)
{
	struct codec_metadata_partition *p = elem;
	free(p->replica_nodes.v);
	free(p->isr_nodes.v);
	free(p->offline_replicas.v);
	codec_tags_free(&p->tags);
}

static void topic_free(void *elem)
{
	struct codec_metadata_response_topic *t = elem;
	free(t->name);
	codec_array_free(t->partitions, t->npartitions, sizeof(*t->partitions), partition_free);
	codec_tags_free(&t->tags);
}

void codec_metadata_response_free(struct codec_metadata_response *m)
{
	codec_array_free(m->brokers, m->nbrokers, sizeof(*m->brokers), broker_free);
	free(m->cluster_id);
	codec_array_free(m->topics, m->ntopics, sizeof(*m->topics), topic_free);
	codec_tags_free(&m->tags);
	memset(m, 0, sizeof(*m));
}

enum codec_err codec_metadata_response_topics(const struct codec_iov *iov, int niov,
					      int16_t version,
					      struct codec_metadata_topics *out)
{
	struct codec_metadata_response m;
	memset(out, 0, sizeof(*out));
	enum codec_err e = codec_metadata_response_decode(iov, niov, version, &m);
	if (e == CODEC_OK && m.ntopics > 0) {
		out->v = calloc(m.ntopics, sizeof(*out->v));
		if (!out->v)
			e = CODEC_ERR_NOMEM;
	}
	if (e == CODEC_OK) {
		out->n = m.ntopics;
		for (size_t i = 0; i < m.ntopics; i++) {
			struct codec_metadata_topic *t = &out->v[i];
			t->error_code = m.topics[i].error_code;
			t->name = m.topics[i].name; /* moved */
			m.topics[i].name = NULL;
			memcpy(t->topic_id, m.topics[i].topic_id, 16);
			t->npartitions = (int32_t)m.topics[i].npartitions;
		}
	}
	codec_metadata_response_free(&m);
	return e;
}

void codec_metadata_topics_free(struct codec_metadata_topics *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].name);
	free(t->v);
	memset(t, 0, sizeof(*t));
}
