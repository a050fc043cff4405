/*
 * OffsetCommit (key 8), v2–v10, the versions Kafka 4.x serves: the request
 * names the group and the offsets a synchronous group commit copies to the
 * mirrors' destinations; the response's per-partition ErrorCode is where a
 * commit the destinations did not store becomes a retriable error, written
 * in place (codec/groups.h). Pure.
 */
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "codec/groups.h"

#define OC_GROUP_INSTANCE 7  /* GroupInstanceId from v7 */
#define OC_RETENTION_FROM 2  /* RetentionTimeMs v2–v4 */
#define OC_RETENTION_TO 4
#define OC_LEADER_EPOCH 6    /* CommittedLeaderEpoch from v6 */
#define OC_THROTTLE 3        /* ThrottleTimeMs in the response from v3 */

static void read_topic_key(struct codec_reader *r, int16_t version, char **name, uint8_t id[16])
{
	if (version >= CODEC_OFFSET_COMMIT_TOPIC_IDS)
		codec_read_uuid(r, id);
	else
		*name = codec_read_str(r, false);
}

static void read_partition_req(struct codec_reader *r, void *elem, void *ctx)
{
	struct codec_offset_commit_partition *p = elem;
	int16_t version = *(const int16_t *)ctx;
	p->index = codec_read_i32(r);
	p->offset = codec_read_i64(r);
	p->leader_epoch = version >= OC_LEADER_EPOCH ? codec_read_i32(r) : -1;
	p->metadata = codec_read_str(r, true);
	codec_read_tags(r, NULL, NULL, NULL);
}

static void read_topic_req(struct codec_reader *r, void *elem, void *ctx)
{
	struct codec_offset_commit_topic *t = elem;
	read_topic_key(r, *(const int16_t *)ctx, &t->name, t->topic_id);
	t->partitions = codec_read_array(r, sizeof(*t->partitions), 14, &t->npartitions, read_partition_req, ctx);
	codec_read_tags(r, NULL, NULL, NULL);
}

enum codec_err codec_offset_commit_request_decode(const struct codec_iov *iov, int niov, int16_t version,
						  struct codec_offset_commit_request *out)
{
	struct codec_reader r;
	if (!codec_decode_start(&r, iov, niov, CODEC_API_OFFSET_COMMIT, version, CODEC_OFFSET_COMMIT_MIN,
				CODEC_OFFSET_COMMIT_MAX, out, sizeof(*out)))
		return CODEC_ERR_UNSUPPORTED;
	out->group_id = codec_read_str(&r, false);
	out->generation = codec_read_i32(&r);
	out->member_id = codec_read_str(&r, false);
	if (version >= OC_GROUP_INSTANCE)
		out->group_instance_id = codec_read_str(&r, true);
	if (version >= OC_RETENTION_FROM && version <= OC_RETENTION_TO)
		(void)codec_read_i64(&r);
	out->topics = codec_read_array(&r, sizeof(*out->topics), 2, &out->ntopics, read_topic_req, &version);
	codec_read_tags(&r, NULL, NULL, NULL);
	return codec_reader_finish(&r);
}

static void partition_req_free(void *elem)
{
	free(((struct codec_offset_commit_partition *)elem)->metadata);
}

static void topic_req_free(void *elem)
{
	struct codec_offset_commit_topic *t = elem;
	free(t->name);
	codec_array_free(t->partitions, t->npartitions, sizeof(*t->partitions), partition_req_free);
}

void codec_offset_commit_request_free(struct codec_offset_commit_request *m)
{
	free(m->group_id);
	free(m->member_id);
	free(m->group_instance_id);
	codec_array_free(m->topics, m->ntopics, sizeof(*m->topics), topic_req_free);
	memset(m, 0, sizeof(*m));
}

static void read_partition_resp(struct codec_reader *r, void *elem, void *ctx)
{
	struct codec_offset_commit_presp *p = elem;
	(void)ctx;
	p->index = codec_read_i32(r);
	p->error_at = r->off;
	p->error_code = codec_read_i16(r);
	codec_read_tags(r, NULL, NULL, NULL);
}

static void read_topic_resp(struct codec_reader *r, void *elem, void *ctx)
{
	struct codec_offset_commit_tresp *t = elem;
	read_topic_key(r, *(const int16_t *)ctx, &t->name, t->topic_id);
	t->partitions = codec_read_array(r, sizeof(*t->partitions), 6, &t->npartitions, read_partition_resp, ctx);
	codec_read_tags(r, NULL, NULL, NULL);
}

enum codec_err codec_offset_commit_response_decode(const struct codec_iov *iov, int niov, int16_t version,
						   struct codec_offset_commit_response *out)
{
	struct codec_reader r;
	if (!codec_decode_start(&r, iov, niov, CODEC_API_OFFSET_COMMIT, version, CODEC_OFFSET_COMMIT_MIN,
				CODEC_OFFSET_COMMIT_MAX, out, sizeof(*out)))
		return CODEC_ERR_UNSUPPORTED;
	if (version >= OC_THROTTLE)
		out->throttle_time_ms = codec_read_i32(&r);
	out->topics = codec_read_array(&r, sizeof(*out->topics), 2, &out->ntopics, read_topic_resp, &version);
	codec_read_tags(&r, NULL, NULL, NULL);
	return codec_reader_finish(&r);
}

static void topic_resp_free(void *elem)
{
	struct codec_offset_commit_tresp *t = elem;
	free(t->name);
	free(t->partitions);
}

void codec_offset_commit_response_free(struct codec_offset_commit_response *m)
{
	codec_array_free(m->topics, m->ntopics, sizeof(*m->topics), topic_resp_free);
	memset(m, 0, sizeof(*m));
}

#define TOC_LEADER_EPOCH 2  /* TxnOffsetCommit: CommittedLeaderEpoch from v2 */
#define TOC_MEMBER 3        /* GenerationId, MemberId, GroupInstanceId from v3 */

static void read_txn_partition(struct codec_reader *r, void *elem, void *ctx)
{
	struct codec_offset_commit_partition *p = elem;
	int16_t version = *(const int16_t *)ctx;
	p->index = codec_read_i32(r);
	p->offset = codec_read_i64(r);
	p->leader_epoch = version >= TOC_LEADER_EPOCH ? codec_read_i32(r) : -1;
	p->metadata = codec_read_str(r, true);
	codec_read_tags(r, NULL, NULL, NULL);
}

static void read_txn_topic(struct codec_reader *r, void *elem, void *ctx)
{
	struct codec_offset_commit_topic *t = elem;
	if (*(const int16_t *)ctx >= CODEC_TXN_OFFSET_COMMIT_TOPIC_IDS)
		codec_read_uuid(r, t->topic_id);
	else
		t->name = codec_read_str(r, false);
	t->partitions = codec_read_array(r, sizeof(*t->partitions), 14, &t->npartitions, read_txn_partition, ctx);
	codec_read_tags(r, NULL, NULL, NULL);
}

enum codec_err codec_txn_offset_commit_request_decode(const struct codec_iov *iov, int niov, int16_t version,
						      struct codec_txn_offset_commit_request *out)
{
	struct codec_reader r;
	if (!codec_decode_start(&r, iov, niov, CODEC_API_TXN_OFFSET_COMMIT, version, 0, CODEC_TXN_OFFSET_COMMIT_MAX,
				out, sizeof(*out)))
		return CODEC_ERR_UNSUPPORTED;
	out->generation = -1;
	out->transactional_id = codec_read_str(&r, false);
	out->group_id = codec_read_str(&r, false);
	out->producer_id = codec_read_i64(&r);
	out->producer_epoch = codec_read_i16(&r);
	if (version >= TOC_MEMBER) {
		out->generation = codec_read_i32(&r);
		out->member_id = codec_read_str(&r, false);
		out->group_instance_id = codec_read_str(&r, true);
	}
	out->topics = codec_read_array(&r, sizeof(*out->topics), 2, &out->ntopics, read_txn_topic, &version);
	codec_read_tags(&r, NULL, NULL, NULL);
	return codec_reader_finish(&r);
}

void codec_txn_offset_commit_request_free(struct codec_txn_offset_commit_request *m)
{
	free(m->transactional_id);
	free(m->group_id);
	free(m->member_id);
	free(m->group_instance_id);
	codec_array_free(m->topics, m->ntopics, sizeof(*m->topics), topic_req_free);
	memset(m, 0, sizeof(*m));
}

int codec_put_i16_at(uint8_t *body, size_t len, size_t at, int16_t v)
{
	if (!body || at > len || len - at < 2)
		return -1;
	body[at] = (uint8_t)((uint16_t)v >> 8);
	body[at + 1] = (uint8_t)v;
	return 0;
}
