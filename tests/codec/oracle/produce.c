/* Produce (key 0) request encoder: the round-trip oracle of the decoder. */
#include "tests/codec/oracle/oracle.h"

struct request_src {
	int16_t version;
	const struct codec_iov *iov;
	int niov;
};

static void write_partition_req(struct codec_buf *b, const void *elem, void *ctx)
{
	const struct codec_produce_partition_req *p = elem;
	const struct request_src *src = ctx;
	codec_write_i32(b, p->index);
	codec_write_slice(b, src->iov, src->niov, p->records, true);
	codec_write_tags(b, NULL, 0, &p->tags);
}

static void write_topic_req(struct codec_buf *b, const void *elem, void *ctx)
{
	const struct codec_produce_topic_req *t = elem;
	const struct request_src *src = ctx;
	if (src->version >= 13)
		codec_write_uuid(b, t->topic_id); /* TopicId replaces Name */
	else
		codec_write_str(b, t->name);
	codec_write_array(b, t->partitions, t->npartitions, sizeof(*t->partitions),
			  write_partition_req, ctx);
	codec_write_tags(b, NULL, 0, &t->tags);
}

enum codec_err codec_produce_request_encode(const struct codec_produce_request *m, int16_t version,
					    const struct codec_iov *src, int nsrc,
					    struct codec_buf *out)
{
	if (version < 3 || version > CODEC_PRODUCE_V14)
		return CODEC_ERR_UNSUPPORTED;
	struct request_src ctx = {version, src, nsrc};
	out->flexible = codec_api_flexible(CODEC_API_PRODUCE, version);
	codec_write_str(out, m->transactional_id);
	codec_write_i16(out, m->acks);
	codec_write_i32(out, m->timeout_ms);
	codec_write_array(out, m->topics, m->ntopics, sizeof(*m->topics), write_topic_req, &ctx);
	codec_write_tags(out, NULL, 0, &m->tags);
	return out->err;
}
