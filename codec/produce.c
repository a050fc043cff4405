/*
 * Produce (key 0): request v3–v13 with RecordBatch v2 headers, response
 * v3–v13 with KIP-951 CurrentLeader/NodeEndpoints. "v14" is v13 on the wire.
 */
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"

#define PRODUCE_MIN 3
#define PRODUCE_TOPIC_IDS 13          /* TopicId replaces Name */
#define PRODUCE_RECORD_ERRORS 8       /* RecordErrors, ErrorMessage */
#define PRODUCE_LEADER_TAGS 10        /* CurrentLeader, NodeEndpoints */
#define BATCH_HEADER 61               /* RecordBatch v2 header bytes */
#define BATCH_AFTER_LENGTH 49         /* header bytes after batchLength */

static bool produce_version_ok(int16_t version)
{
	return version >= PRODUCE_MIN && version <= CODEC_PRODUCE_V14;
}

/* ---- request ------------------------------------------------------------ */

/* Read the rest of a RecordBatch v2 header after baseOffset, batchLength, epoch, magic. */
static void batch_header_rest(struct codec_reader *r, struct codec_record_batch *b)
{
	codec_read_skip(r, 4); /* crc */
	b->attributes = codec_read_i16(r);
	b->last_offset_delta = codec_read_i32(r);
	b->base_timestamp = codec_read_i64(r);
	b->max_timestamp = codec_read_i64(r);
	b->producer_id = codec_read_i64(r);
	b->producer_epoch = codec_read_i16(r);
	b->base_sequence = codec_read_i32(r);
	b->records_count = codec_read_i32(r);
}

/*
 * Walk the batches of a records blob (see codec.h for the rules). Reads only
 * the 61-byte headers; `r` is positioned just after the blob.
 */
static void walk_batches(struct codec_reader *r, struct codec_slice records,
			 struct codec_produce_partition_req *p)
{
	if (records.len <= 0)
		return;
	struct codec_reader sub = *r;
	codec_reader_seek(&sub, records.off);
	sub.len = records.off + (size_t)records.len;
	while (!sub.err && codec_reader_remaining(&sub) > 0) {
		struct codec_record_batch b = {0};
		b.base_offset = codec_read_i64(&sub);
		b.batch_length = codec_read_i32(&sub);
		size_t body = sub.off;
		b.partition_leader_epoch = codec_read_i32(&sub);
		b.magic = codec_read_i8(&sub);
		if (sub.err)
			break;
		if (b.batch_length < 5 || (size_t)b.batch_length > sub.len - body) {
			codec_reader_fail(&sub, CODEC_ERR_BAD_MSG);
			break;
		}
		if (b.magic != 2) {
			/* Legacy message set: not ours to count; the broker rejects it. */
			p->nbatches = 0;
			p->offset_span = 0;
			memset(&p->last_batch, 0, sizeof(p->last_batch));
			return;
		}
		if (b.batch_length < BATCH_AFTER_LENGTH) {
			codec_reader_fail(&sub, CODEC_ERR_BAD_MSG);
			break;
		}
		batch_header_rest(&sub, &b);
		codec_read_skip(&sub, (size_t)b.batch_length - BATCH_AFTER_LENGTH);
		if (b.last_offset_delta < 0) {
			codec_reader_fail(&sub, CODEC_ERR_BAD_MSG);
			break;
		}
		p->nbatches++;
		p->offset_span += (int64_t)b.last_offset_delta + 1;
		p->last_batch = b;
	}
	if (sub.err) /* the blob's bytes were all present: a partial batch is malformed */
		codec_reader_join(r, &sub);
}

static void read_partition_req(struct codec_reader *r, void *elem, void *ctx)
{
	struct codec_produce_partition_req *p = elem;
	p->index = codec_read_i32(r);
	p->records = codec_read_slice(r, true, true);
	walk_batches(r, p->records, p);
	codec_read_tags(r, &p->tags, NULL, NULL);
}

/* Name (v3–v12) or TopicId (v13+). */
static void read_topic_key(struct codec_reader *r, int16_t version, char **name, uint8_t id[16])
{
	if (version >= PRODUCE_TOPIC_IDS)
		codec_read_uuid(r, id);
	else
		*name = codec_read_str(r, false);
}

static void write_topic_key(struct codec_buf *b, int16_t version, const char *name,
			    const uint8_t id[16])
{
	if (version >= PRODUCE_TOPIC_IDS)
		codec_write_uuid(b, id);
	else
		codec_write_str(b, name);
}

static void read_topic_req(struct codec_reader *r, void *elem, void *ctx)
{
	struct codec_produce_topic_req *t = elem;
	read_topic_key(r, *(const int16_t *)ctx, &t->name, t->topic_id);
	t->partitions = codec_read_array(r, sizeof(*t->partitions), 5, &t->npartitions,
					 read_partition_req, NULL);
	codec_read_tags(r, &t->tags, NULL, NULL);
}

enum codec_err codec_produce_request_decode(const struct codec_iov *iov, int niov,
					    int16_t version,
					    struct codec_produce_request *out)
{
	struct codec_reader r;
	if (!codec_decode_start(&r, iov, niov, CODEC_API_PRODUCE, version,
				PRODUCE_MIN, CODEC_PRODUCE_V14, out, sizeof(*out)))
		return CODEC_ERR_UNSUPPORTED;
	out->transactional_id = codec_read_str(&r, true);
	out->acks = codec_read_i16(&r);
	out->timeout_ms = codec_read_i32(&r);
	out->topics = codec_read_array(&r, sizeof(*out->topics), 3, &out->ntopics,
				       read_topic_req, &version);
	codec_read_tags(&r, &out->tags, NULL, NULL);
	return codec_reader_finish(&r);
}

static void partition_req_free(void *elem)
{
	codec_tags_free(&((struct codec_produce_partition_req *)elem)->tags);
}

static void topic_req_free(void *elem)
{
	struct codec_produce_topic_req *t = elem;
	free(t->name);
	codec_array_free(t->partitions, t->npartitions, sizeof(*t->partitions), partition_req_free);
	codec_tags_free(&t->tags);
}

void codec_produce_request_free(struct codec_produce_request *m)
{
	free(m->transactional_id);
	codec_array_free(m->topics, m->ntopics, sizeof(*m->topics), topic_req_free);
	codec_tags_free(&m->tags);
	memset(m, 0, sizeof(*m));
}

/* ---- response ----------------------------------------------------------- */

/* CurrentLeader (partition tag 0): LeaderId, LeaderEpoch, empty tag section. */
#define CURRENT_LEADER_LEN 9

static bool partition_resp_tag(void *ctx, struct codec_reader *r, uint32_t tag, uint32_t size)
{
	struct codec_produce_partition_resp *p = ctx;
	if (tag != 0 || size != CURRENT_LEADER_LEN)
		return false;
	int32_t LeaderId = codec_read_i32(r);
	int32_t LeaderEpoch = codec_read_i32(r);
	/* A CurrentLeader with tags of its own is kept verbatim instead. */
	if (codec_read_uvarint(r) != 0 || r->err)
		return false;
	p->has_current_leader = true;
	p->current_leader_id = LeaderId;
	p->current_leader_epoch = LeaderEpoch;
	return true;
}

static void read_partition_resp(struct codec_reader *r, void *elem, void *ctx)
{
	struct codec_produce_partition_resp *p = elem;
	int16_t version = *(const int16_t *)ctx;
	p->index = codec_read_i32(r);
	p->error_code = codec_read_i16(r);
	p->base_offset = codec_read_i64(r);
	p->log_append_time_ms = codec_read_i64(r);
	p->log_start_offset = version >= 5 ? codec_read_i64(r) : -1;
	if (version >= PRODUCE_RECORD_ERRORS) {
		size_t start = r->off;
		int32_t n = codec_read_array_len(r, false, 5);
		for (int32_t i = 0; i < n && !r->err; i++) {
			codec_read_i32(r);              /* BatchIndex */
			codec_read_slice(r, false, true); /* BatchIndexErrorMessage */
			codec_read_tags(r, NULL, NULL, NULL);
		}
		size_t end = r->off;
		if (!r->err && (p->record_errors_raw = malloc(end - start)) == NULL)
			codec_reader_fail(r, CODEC_ERR_NOMEM);
		if (!r->err) {
			p->record_errors_len = end - start;
			codec_reader_seek(r, start);
			codec_read_raw(r, p->record_errors_raw, end - start);
		}
		p->error_message = codec_read_str(r, true);
	}
	codec_read_tags(r, &p->tags, version >= PRODUCE_LEADER_TAGS ? partition_resp_tag : NULL, p);
}

static void read_topic_resp(struct codec_reader *r, void *elem, void *ctx)
{
	struct codec_produce_topic_resp *t = elem;
	read_topic_key(r, *(const int16_t *)ctx, &t->name, t->topic_id);
	t->partitions = codec_read_array(r, sizeof(*t->partitions), 14, &t->npartitions,
					 read_partition_resp, ctx);
	codec_read_tags(r, &t->tags, NULL, NULL);
}

static void read_node_endpoint(struct codec_reader *r, void *elem, void *ctx)
{
	struct codec_node_endpoint *e = elem;
	e->node_id = codec_read_i32(r);
	e->host = codec_read_str(r, false);
	e->port = codec_read_i32(r);
	e->rack = codec_read_str(r, true);
	codec_read_tags(r, &e->tags, NULL, NULL);
}

static bool response_tag(void *ctx, struct codec_reader *r, uint32_t tag, uint32_t size)
{
	struct codec_produce_response *m = ctx;
	if (tag != 0)
		return false;
	m->node_endpoints = codec_read_array(r, sizeof(*m->node_endpoints), 11,
					     &m->nnode_endpoints, read_node_endpoint, NULL);
	m->has_node_endpoints = true;
	return true;
}

enum codec_err codec_produce_response_decode(const struct codec_iov *iov, int niov,
					     int16_t version,
					     struct codec_produce_response *out)
{
	struct codec_reader r;
	if (!codec_decode_start(&r, iov, niov, CODEC_API_PRODUCE, version,
				PRODUCE_MIN, CODEC_PRODUCE_V14, out, sizeof(*out)))
		return CODEC_ERR_UNSUPPORTED;
	out->topics = codec_read_array(&r, sizeof(*out->topics), 3, &out->ntopics,
				       read_topic_resp, &version);
	out->throttle_time_ms = codec_read_i32(&r);
	out->tags_off = r.off;
	codec_read_tags(&r, &out->tags, version >= PRODUCE_LEADER_TAGS ? response_tag : NULL, out);
	return codec_reader_finish(&r);
}

static void write_partition_resp(struct codec_buf *b, const void *elem, void *ctx)
{
	const struct codec_produce_partition_resp *p = elem;
	int16_t version = *(const int16_t *)ctx;
	codec_write_i32(b, p->index);
	codec_write_i16(b, p->error_code);
	codec_write_i64(b, p->base_offset);
	codec_write_i64(b, p->log_append_time_ms);
	if (version >= 5)
		codec_write_i64(b, p->log_start_offset);
	if (version >= PRODUCE_RECORD_ERRORS) {
		if (p->record_errors_raw)
			codec_write_raw(b, p->record_errors_raw, p->record_errors_len);
		else
			codec_write_array_len(b, 0);
		codec_write_str(b, p->error_message);
	}
	uint8_t leader[CURRENT_LEADER_LEN];
	for (int i = 0; i < 4; i++) {
		leader[i] = (uint8_t)((uint32_t)p->current_leader_id >> (24 - 8 * i));
		leader[4 + i] = (uint8_t)((uint32_t)p->current_leader_epoch >> (24 - 8 * i));
	}
	leader[8] = 0; /* empty tag section */
	struct codec_tag_out known = {0, leader, sizeof(leader)};
	bool has = p->has_current_leader && version >= PRODUCE_LEADER_TAGS;
	codec_write_tags(b, &known, has ? 1 : 0, &p->tags);
}

static void write_topic_resp(struct codec_buf *b, const void *elem, void *ctx)
{
	const struct codec_produce_topic_resp *t = elem;
	write_topic_key(b, *(const int16_t *)ctx, t->name, t->topic_id);
	codec_write_array(b, t->partitions, t->npartitions, sizeof(*t->partitions),
			  write_partition_resp, ctx);
	codec_write_tags(b, NULL, 0, &t->tags);
}

static void write_node_endpoint(struct codec_buf *b, const void *elem, void *ctx)
{
	const struct codec_node_endpoint *e = elem;
	codec_write_i32(b, e->node_id);
	codec_write_str(b, e->host);
	codec_write_i32(b, e->port);
	codec_write_str(b, e->rack);
	codec_write_tags(b, NULL, 0, &e->tags);
}

enum codec_err codec_produce_response_encode(const struct codec_produce_response *m,
					     int16_t version, struct codec_buf *out)
{
	if (!produce_version_ok(version))
		return CODEC_ERR_UNSUPPORTED;
	out->flexible = codec_api_flexible(CODEC_API_PRODUCE, version);
	codec_write_array(out, m->topics, m->ntopics, sizeof(*m->topics), write_topic_resp, &version);
	codec_write_i32(out, m->throttle_time_ms);
	struct codec_buf eb;
	codec_buf_init(&eb, out->limit);
	eb.flexible = true;
	size_t nknown = 0;
	if (m->has_node_endpoints && version >= PRODUCE_LEADER_TAGS) {
		codec_write_array(&eb, m->node_endpoints, m->nnode_endpoints,
				  sizeof(*m->node_endpoints), write_node_endpoint, NULL);
		nknown = 1;
	}
	struct codec_tag_out known = {0, eb.data, eb.len};
	if (eb.err && !out->err)
		out->err = eb.err;
	codec_write_tags(out, &known, nknown, &m->tags);
	codec_buf_free(&eb);
	return out->err;
}

static void partition_resp_free(void *elem)
{
	struct codec_produce_partition_resp *p = elem;
	free(p->record_errors_raw);
	free(p->error_message);
	codec_tags_free(&p->tags);
}

static void topic_resp_free(void *elem)
{
	struct codec_produce_topic_resp *t = elem;
	free(t->name);
	codec_array_free(t->partitions, t->npartitions, sizeof(*t->partitions), partition_resp_free);
	codec_tags_free(&t->tags);
}

static void node_endpoint_free(void *elem)
{
	struct codec_node_endpoint *e = elem;
	free(e->host);
	free(e->rack);
	codec_tags_free(&e->tags);
}

void codec_produce_response_free(struct codec_produce_response *m)
{
	codec_array_free(m->topics, m->ntopics, sizeof(*m->topics), topic_resp_free);
	codec_array_free(m->node_endpoints, m->nnode_endpoints, sizeof(*m->node_endpoints),
			 node_endpoint_free);
	codec_tags_free(&m->tags);
	memset(m, 0, sizeof(*m));
}

int codec_produce_partition_fail(struct codec_produce_partition_resp *p, int16_t error_code,
				 const char *message)
{
	char *copy = NULL;
	if (message && (copy = strdup(message)) == NULL)
		return -1;
	free(p->error_message);
	p->error_message = copy;
	p->error_code = error_code;
	p->base_offset = -1;
	p->log_append_time_ms = -1;
	p->log_start_offset = -1;
	return 0;
}
