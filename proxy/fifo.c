/*
 * The per-connection correlation FIFO: one entry per request that expects a
 * response (acks=0 Produce takes none), in request order. Responses leave
 * only from the head, so a HELD entry holds everything behind it
 * (invariant 2, docs/architecture.md). A STREAMING entry (stream.c) at the
 * head writes to the client as its bytes arrive; behind the head it collects
 * them in `out`, counted with READY entries' `out` as queued bytes (the
 * limits.max_held_bytes* caps and the stream window bound them). Loop thread.
 *
 * Entry states (proxy_entry_set_state() is the only code that changes one):
 *   IN_FLIGHT → STREAMING → READY     a response forwarded as it arrives
 *   IN_FLIGHT → READY                 a response buffered whole (rewritten or small)
 *   IN_FLIGHT → HELD → READY          a gated Produce / clamped Fetch response
 * An entry is freed when flushed (READY at the head) or when its connection
 * closes; there is no error state: a bad response closes the connection.
 *
 * Below every other connection file, it calls none of them: what hold.c or
 * clamp.c attached to an entry is freed through e->release (set by them),
 * and a flush tells the server through srv->resume_paused and
 * srv->conn_progress (registered by conns.c).
 */
#include <stdlib.h>

#include "proxy/datapath.h"

static const char *const entry_state_names[PROXY_ENTRY_STATE_COUNT] = {
	[PROXY_ENTRY_IN_FLIGHT] = "in_flight",
	[PROXY_ENTRY_STREAMING] = "streaming",
	[PROXY_ENTRY_HELD] = "held",
	[PROXY_ENTRY_READY] = "ready",
};

const char *proxy_entry_state_str(enum proxy_entry_state s)
{
	return s < PROXY_ENTRY_STATE_COUNT ? entry_state_names[s] : "?";
}

struct proxy_entry *proxy_entry_new(struct proxy_conn *c, enum proxy_entry_kind kind)
{
	struct proxy_entry *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->kind = kind;
	e->state = PROXY_ENTRY_IN_FLIGHT;
	e->arrival_ms = mirror_now_ms();
	TAILQ_INSERT_TAIL(&c->fifo, e, link);
	c->nfifo++;
	return e;
}

/* Stop counting `e->out` as queued. */
static void entry_unqueue(struct proxy_conn *c, struct proxy_entry *e)
{
	c->queued_bytes -= e->queued;
	c->srv->queued_bytes -= e->queued;
	e->queued = 0;
}

void proxy_entry_queue(struct proxy_conn *c, struct proxy_entry *e, size_t n)
{
	e->queued += n;
	c->queued_bytes += n;
	c->srv->queued_bytes += n;
}

void proxy_entry_set_state(struct proxy_conn *c, struct proxy_entry *e, enum proxy_entry_state s)
{
	LOG_D("entry_state", "conn=%llu api=%s correlation_id=%d from=%s to=%s",
	      (unsigned long long)c->id, codec_api_name(e->api_key), e->correlation_id,
	      proxy_entry_state_str(e->state), proxy_entry_state_str(s));
	if (s == PROXY_ENTRY_READY && e->out) {
		size_t n = evbuffer_get_length(e->out);
		if (n > e->queued)
			proxy_entry_queue(c, e, n - e->queued);
	}
	e->state = s;
}

void proxy_entry_free(struct proxy_conn *c, struct proxy_entry *e)
{
	if (c->from_upstream.e == e)
		c->from_upstream.e = NULL; /* the rest of its frame is dropped as it arrives */
	if (e->release)
		e->release(c, e); /* hold.c or clamp.c state (set by whoever attached it) */
	entry_unqueue(c, e);
	TAILQ_REMOVE(&c->fifo, e, link);
	if (--c->nfifo == 0) /* limits.client_idle_ms counts from the last answer, however it
			      * left (a spliced response never passes the client write callback) */
		c->last_io_ms = mirror_now_ms();
	free(e->produce);
	free(e->sasl_mechanism);
	if (e->out)
		evbuffer_free(e->out);
	free(e);
}

void proxy_fifo_flush(struct proxy_conn *c)
{
	struct proxy_entry *e;
	if (!c->client)
		return;
	bool moved = false;
	while ((e = TAILQ_FIRST(&c->fifo))) {
		if (e->state != PROXY_ENTRY_READY && e->state != PROXY_ENTRY_STREAMING)
			break;
		if (e->out) {
			proxy_write_through(c, true, e->out, evbuffer_get_length(e->out));
			entry_unqueue(c, e);
			moved = true;
		}
		if (e->state == PROXY_ENTRY_STREAMING)
			break; /* the rest of it goes straight to the client (stream.c) */
		proxy_entry_free(c, e);
	}
	if (moved)
		c->srv->resume_paused(c->srv);
	c->srv->conn_progress(c->srv, c);
}

int proxy_fifo_produce_frame(struct proxy_conn *c, const struct codec_request_header *h, int16_t wire_version,
			     const struct codec_produce_response *resp, struct evbuffer *out, size_t *hdr_len)
{
	struct codec_buf body;
	codec_buf_init(&body, (size_t)c->srv->conf->max_frame_bytes);
	if (codec_produce_response_encode(resp, wire_version, &body) != CODEC_OK) {
		codec_buf_free(&body);
		return -1;
	}
	/* response header: CorrelationId, then (v1, flexible) empty tagged fields */
	bool flexible = codec_response_header_version(h->api_key, wire_version) >= 1;
	*hdr_len = flexible ? 5 : 4;
	size_t len = *hdr_len + body.len;
	uint32_t corr = (uint32_t)h->correlation_id;
	uint8_t pre[9] = { (uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8), (uint8_t)len,
			   (uint8_t)(corr >> 24), (uint8_t)(corr >> 16), (uint8_t)(corr >> 8), (uint8_t)corr, 0 };
	int rc = evbuffer_add(out, pre, 4 + *hdr_len) == 0 && evbuffer_add(out, body.data, body.len) == 0 ? 0 : -1;
	codec_buf_free(&body);
	return rc;
}

int proxy_fifo_answer_produce(struct proxy_conn *c, const struct codec_request_header *h, int16_t wire_version,
			      const struct codec_produce_response *resp)
{
	struct proxy_entry *e = proxy_entry_new(c, PROXY_ENTRY_KAFKA);
	size_t hdr_len;
	if (!e || !(e->out = evbuffer_new()) ||
	    proxy_fifo_produce_frame(c, h, wire_version, resp, e->out, &hdr_len) < 0) {
		if (e)
			proxy_entry_free(c, e);
		return -1;
	}
	e->correlation_id = h->correlation_id;
	e->api_key = h->api_key;
	e->client_version = h->api_version;
	e->api_version = wire_version;
	proxy_entry_set_state(c, e, PROXY_ENTRY_READY);
	return 0;
}

int proxy_fifo_refuse_produce(struct proxy_conn *c, const struct codec_request_header *h, int16_t wire_version,
			      const struct codec_produce_request *req, int16_t code,
			      void (*topic_msg)(void *arg, const struct codec_produce_topic_req *t, char *buf, size_t n),
			      void *arg)
{
	struct codec_produce_response resp = { 0 };
	int rc = -1;
	char msg[300];
	resp.topics = calloc(req->ntopics ? req->ntopics : 1, sizeof(*resp.topics));
	if (!resp.topics)
		return -1;
	resp.ntopics = req->ntopics;
	for (size_t t = 0; t < req->ntopics; t++) {
		const struct codec_produce_topic_req *rt = &req->topics[t];
		struct codec_produce_topic_resp *ot = &resp.topics[t];
		if (rt->name && !(ot->name = strdup(rt->name)))
			goto out;
		memcpy(ot->topic_id, rt->topic_id, sizeof(ot->topic_id));
		ot->partitions = calloc(rt->npartitions ? rt->npartitions : 1, sizeof(*ot->partitions));
		if (!ot->partitions)
			goto out;
		ot->npartitions = rt->npartitions;
		topic_msg(arg, rt, msg, sizeof(msg));
		for (size_t p = 0; p < rt->npartitions; p++) {
			ot->partitions[p].index = rt->partitions[p].index;
			if (codec_produce_partition_fail(&ot->partitions[p], code, msg) < 0)
				goto out;
		}
	}
	rc = proxy_fifo_answer_produce(c, h, wire_version, &resp);
out:
	codec_produce_response_free(&resp);
	return rc;
}
