/* ListOffsets (key 2) request decode, v1–v11 (the consumer clamp reads it). */
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"

#define LIST_OFFSETS_MIN 1
#define LIST_OFFSETS_MAX 11

/* ---- request ------------------------------------------------------------ */

static void read_partition_req(struct codec_reader *r, void *elem, void *ctx)
{
	struct codec_list_offsets_partition_req *p = elem;
	int16_t version = *(const int16_t *)ctx;
	p->partition_index = codec_read_i32(r);
	p->current_leader_epoch = version >= 4 ? codec_read_i32(r) : -1;
	p->timestamp = codec_read_i64(r);
	codec_read_tags(r, &p->tags, NULL, NULL);
}

static void read_topic_req(struct codec_reader *r, void *elem, void *ctx)
{
	struct codec_list_offsets_topic_req *t = elem;
	t->name = codec_read_str(r, false);
	t->partitions = codec_read_array(r, sizeof(*t->partitions), 12, &t->npartitions,
					 read_partition_req, ctx);
	codec_read_tags(r, &t->tags, NULL, NULL);
}

enum codec_err codec_list_offsets_request_decode(const struct codec_iov *iov, int niov, int16_t version,
						 struct codec_list_offsets_request *out)
{
	struct codec_reader r;
	if (!codec_decode_start(&r, iov, niov, CODEC_API_LIST_OFFSETS, version,
				LIST_OFFSETS_MIN, LIST_OFFSETS_MAX, out, sizeof(*out)))
		return CODEC_ERR_UNSUPPORTED;
	out->replica_id = codec_read_i32(&r);
	if (version >= 2)
		out->isolation_level = codec_read_i8(&r);
	out->topics = codec_read_array(&r, sizeof(*out->topics), 3, &out->ntopics,
				       read_topic_req, &version);
	if (version >= 10)
		out->timeout_ms = codec_read_i32(&r);
	codec_read_tags(&r, &out->tags, NULL, NULL);
	return codec_reader_finish(&r);
}

static void partition_req_free(void *elem)
{
	codec_tags_free(&((struct codec_list_offsets_partition_req *)elem)->tags);
}

static void topic_req_free(void *elem)
{
	struct codec_list_offsets_topic_req *t = elem;
	free(t->name);
	codec_array_free(t->partitions, t->npartitions, sizeof(*t->partitions), partition_req_free);
	codec_tags_free(&t->tags);
}

void codec_list_offsets_request_free(struct codec_list_offsets_request *m)
{
	codec_array_free(m->topics, m->ntopics, sizeof(*m->topics), topic_req_free);
	codec_tags_free(&m->tags);
	memset(m, 0, sizeof(*m));
}
