/*
 * stream_request.c — Produce requests streamed to the broker as they arrive
 * (client → broker, c->from_client), their batch headers judged on the way
 * for the hold: the request direction's start and its pieces of the pump
 * (stream_pump.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include "proxy/datapath.h"
#include "proxy/security.h"
#include "proxy/stream.h"

int proxy_stream_request_start(struct proxy_conn *c, size_t len)
{
	struct evbuffer *in = bufferevent_get_input(c->client);
	if (c->sasl_raw || !c->upstream)
		return 2;
	size_t avail = evbuffer_get_length(in) - 4;
	/* ApiKey and ApiVersion first: anything but Produce v3–v14 is decided at
	 * once (a 300 MB prefix or a TLS ClientHello is refused without waiting) */
	if (avail < 4)
		return 0;
	uint8_t kv[8];
	evbuffer_copyout(in, kv, 8);
	int16_t key = (int16_t)(kv[4] << 8 | kv[5]), version = (int16_t)(kv[6] << 8 | kv[7]);
	if (key != CODEC_API_PRODUCE || version < 3 || version > CODEC_PRODUCE_V14)
		return 2;
	size_t peek = len < 512 ? len : 512;
	if (avail < peek)
		return 0;
	struct codec_iov iov[PROXY_MAX_IOV];
	struct codec_request_header h;
	int niov = proxy_buf_iov(in, 4, peek, iov, PROXY_MAX_IOV);
	enum codec_err err = niov < 0 ? CODEC_ERR_NOMEM : codec_request_header_decode(iov, niov, &h);
	if (err == CODEC_ERR_UNDERFLOW && peek < len)
		return 2; /* a header above 512 bytes: rare, buffer whole */
	if (err != CODEC_OK)
		return 2; /* request.c logs it */
	if (h.api_key != CODEC_API_PRODUCE)
		return 2;
	int16_t wire = h.api_version == CODEC_PRODUCE_V14 ? 13 : h.api_version;
	/* v13 names TopicIds syncgate may have to learn before the request goes
	 * upstream (request.c): buffered whole when anything is gated */
	if (wire < 3 || wire > 13 || (wire >= 13 && c->srv->conf->nmirrors > 0))
		return 2;
	/* a failover fence refuses a Produce before any byte goes upstream
	 * (fence.c, on the whole request): while one stands, read it whole */
	if (c->srv->gate && mirror_gate_any_fenced(c->srv->gate))
		return 2;
	/* switched: its batches' producer ids are rewritten in place (pidmap.c)
	 * before any byte goes upstream, so it is read whole (max_frame_bytes) */
	if (c->srv->switched)
		return 2;
	proxy_st_stream_metrics_init();
	metric_add(proxy_st_m_streamed, 1);
	proxy_request_count(c, len, true);
	if (h.api_version == CODEC_PRODUCE_V14) {
		unsigned char *p = evbuffer_pullup(in, 8); /* v14 is v13 on the wire */
		if (!p)
			return -1;
		p[6] = 0;
		p[7] = 13;
	}
	struct proxy_stream_dir *rq = &c->from_client;
	rq->req = calloc(1, sizeof(*rq->req));
	if (!rq->req)
		return -1;
	rq->e = NULL;
	rq->left = rq->frame = len + 4;
	rq->opaque = 4 + h.len; /* size prefix and request header as they are */
	rq->scan = true;
	rq->client_version = h.api_version;
	rq->correlation_id = h.correlation_id;
	codec_produce_stream_init(&rq->ps, wire);
	proxy_st_dir_set_state(c, rq, PROXY_DIR_STREAM);
	return 1;
}

/* Record what a Produce unit said (before its bytes move on). */
static int request_note_unit(struct proxy_conn *c, struct proxy_stream_dir *rq, const struct codec_iov *iov,
			     int niov)
{
	const struct codec_produce_stream *ps = &rq->ps;
	struct codec_produce_request *req = rq->req;
	switch (ps->unit) {
	case CODEC_STREAM_HEAD:
		req->acks = ps->acks;
		req->timeout_ms = ps->timeout_ms;
		if (ps->acks == 0) {
			proxy_request_count_acks0();
			return 0; /* no response will come: no FIFO slot */
		}
		rq->e = proxy_entry_new(c, PROXY_ENTRY_KAFKA);
		if (!rq->e)
			return -1;
		rq->e->correlation_id = rq->correlation_id;
		rq->e->api_key = CODEC_API_PRODUCE;
		rq->e->client_version = rq->client_version;
		rq->e->api_version = ps->version;
		return 0;
	case CODEC_STREAM_TOPIC: {
		struct codec_produce_topic_req *t = realloc(req->topics, (req->ntopics + 1) * sizeof(*t));
		if (!t)
			return -1;
		req->topics = t;
		t = &req->topics[req->ntopics++];
		memset(t, 0, sizeof(*t));
		memcpy(t->topic_id, ps->topic_id, 16);
		if (ps->version < 13) {
			struct codec_reader r;
			codec_reader_init(&r, iov, niov);
			codec_reader_seek(&r, ps->topic.off);
			t->name = malloc((size_t)ps->topic.len + 1);
			if (!t->name)
				return -1;
			codec_read_raw(&r, t->name, (size_t)ps->topic.len);
			t->name[ps->topic.len] = '\0';
			if (r.err)
				return -1;
		}
		return 0;
	}
	case CODEC_STREAM_PARTITION: {
		if (!req->ntopics)
			return -1;
		struct codec_produce_topic_req *t = &req->topics[req->ntopics - 1];
		struct codec_produce_partition_req *p =
			realloc(t->partitions, (t->npartitions + 1) * sizeof(*p));
		if (!p)
			return -1;
		t->partitions = p;
		p = &t->partitions[t->npartitions++];
		memset(p, 0, sizeof(*p));
		p->index = ps->partition;
		return 0;
	}
	case CODEC_STREAM_BATCH: {
		struct codec_produce_topic_req *t = &req->topics[req->ntopics - 1];
		struct codec_produce_partition_req *p = &t->partitions[t->npartitions - 1];
		p->offset_span = ps->offset_span;
		p->nbatches = ps->nbatches;
		return 0;
	}
	default:
		return 0;
	}
}

/* The request is through: its entry keeps the summary the response needs. */
int proxy_st_request_finish(struct proxy_conn *c)
{
	struct proxy_stream_dir *rq = &c->from_client;
	int rc = 1;
	if (rq->e) {
		rq->e->produce = proxy_produce_sum_new(rq->req);
		if (!rq->e->produce)
			rc = -1;
	}
	codec_produce_request_free(rq->req);
	free(rq->req);
	rq->req = NULL;
	rq->e = NULL;
	proxy_st_dir_set_state(c, rq, PROXY_DIR_FRAME);
	if (rc < 0) {
		c->ops->close(c, PROXY_CLOSE_OUT_OF_MEMORY);
		return rc;
	}
	c->srv->conn_progress(c->srv, c); /* shutdown waits for whole requests */
	return c->state == PROXY_CONN_CLOSING ? -1 : rc;
}

static int request_bad(struct proxy_conn *c, enum codec_err err)
{
	uint64_t swallowed = 0;
	if (proxy_log_allow(&proxy_malformed_log, mirror_now_ms(), &swallowed))
		LOG_W("request_malformed", "conn=%llu peer=%s api=Produce streamed=1 where=%s error=%s "
		      "offset=%zu suppressed=%llu", (unsigned long long)c->id, c->peer,
		      codec_stream_stage_str(c->from_client.ps.stage), codec_err_str(err),
		      c->from_client.frame - c->from_client.left + codec_err_offset(), (unsigned long long)swallowed);
	c->ops->close(c, PROXY_CLOSE_CLIENT_FRAME_MALFORMED);
	return -1;
}

/* `n` bytes of an opaque run go on upstream as they are. */
void proxy_st_request_copy(struct proxy_conn *c, struct evbuffer *in, size_t n)
{
	evbuffer_remove_buffer(in, bufferevent_get_output(c->upstream), n);
}

/*
 * The request's structure after an opaque run (`avail` bytes in `in`): the
 * next Produce unit walked (codec_produce_stream_next), noted for the hold
 * and forwarded; the top-level tags opaque. 1 go on, 0 wait for bytes, -1
 * closing.
 */
int proxy_st_request_unit(struct proxy_conn *c, struct evbuffer *in, size_t avail)
{
	struct proxy_stream_dir *rq = &c->from_client;
	if (rq->ps.stage == CODEC_STREAM_TAIL) {
		rq->opaque = rq->left; /* top-level tags: not ours to read */
		return 1;
	}
	size_t look = avail < rq->left ? avail : rq->left;
	struct codec_iov iov[PROXY_MAX_IOV];
	int niov = proxy_buf_iov(in, 0, look, iov, PROXY_MAX_IOV);
	size_t used = 0, records = 0;
	enum codec_err err = niov < 0 ? CODEC_ERR_NOMEM
				      : codec_produce_stream_next(&rq->ps, iov, niov, &used, &records);
	if (err == CODEC_ERR_UNDERFLOW) {
		if (look == rq->left || look > (size_t)c->srv->conf->max_frame_bytes)
			return request_bad(c, look == rq->left ? err : CODEC_ERR_LIMIT);
		return 0;
	}
	if (err != CODEC_OK || used + records > rq->left)
		return request_bad(c, err != CODEC_OK ? err : CODEC_ERR_BAD_MSG);
	if (request_note_unit(c, rq, iov, niov) < 0) {
		c->ops->close(c, PROXY_CLOSE_OUT_OF_MEMORY);
		return -1;
	}
	evbuffer_remove_buffer(in, bufferevent_get_output(c->upstream), used);
	rq->left -= used;
	rq->opaque = records;
	return 1;
}
