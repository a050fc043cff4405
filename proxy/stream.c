/*
 * Responses forwarded as they arrive (docs/architecture.md
 * invariant 5): a frame above PROXY_STREAM_MIN that syncgate does not
 * rewrite — or rewrites only in its tail tags (Fetch v16+ NodeEndpoints) —
 * is not buffered whole. Its size prefix and header go to the client at
 * once; a Fetch v16+ body is walked unit by unit (codec_fetch_stream_next:
 * partition headers, never records) to find the tail; everything else is
 * opaque and moves as it comes. Memory per connection is a fixed window
 * (the bufferevent read size plus the client output high mark), not the
 * frame size, so no frame size cap applies to a streamed response.
 *
 * Zero copy: when both sides are plaintext, the entry is the FIFO head, and
 * nothing is buffered in user space on either side (the client output is
 * empty, so order is kept), opaque bytes move upstream socket → pipe →
 * client socket with splice(2) and never enter user space (PROXY_DIR_SPLICE).
 * The upstream bufferevent does not read meanwhile; our own events on the
 * two descriptors drive the pipe. With TLS on either side the bytes are
 * decrypted/encrypted in user space anyway and the evbuffer path is used.
 *
 * The tail tags of a streamed Fetch v16+ response are rewritten to the same
 * length (codec_tags_rewrite_endpoints_fixed): the frame's size prefix,
 * which precedes them, is already on its way. A consumer's Fetch v12+ is
 * clamped as it passes, keeping its length (below, "the consumer clamp").
 * Rewrites that change a length (other endpoints, ApiVersions, held Produce
 * responses, older or held clamped Fetch responses) need the frame whole
 * and stay on the buffered path (response.c).
 *
 * Direction states, either direction (proxy_st_dir_set_state() changes them):
 *   FRAME → STREAM → (SPLICE → STREAM)* → FRAME
 * The loop that moves a streamed frame is stream_pump.c; this file holds the
 * response direction's pieces of it.
 * Loop thread.
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

struct metric *proxy_st_m_streamed, *proxy_st_m_spliced, *proxy_st_m_tail_rewritten;

void proxy_st_stream_metrics_init(void)
{
	if (proxy_st_m_streamed)
		return;
	proxy_st_m_streamed = metric_get(METRIC_COUNTER, "syncgate_responses_streamed_total",
				"Responses forwarded as they arrived instead of buffered whole.", "",
				NULL, 0);
	proxy_st_m_spliced = metric_get(METRIC_COUNTER, "syncgate_spliced_bytes_total",
			       "Response bytes moved socket to socket in the kernel (splice), never "
			       "copied into syncgate.", "", NULL, 0);
	proxy_st_m_tail_rewritten = metric_get(METRIC_COUNTER, "syncgate_stream_tail_rewrites_total",
				      "Streamed Fetch responses whose NodeEndpoints were rewritten "
				      "to the same length.", "", NULL, 0);
}

static const char *const dir_state_names[PROXY_DIR_STATE_COUNT] = {
	[PROXY_DIR_FRAME] = "frame",
	[PROXY_DIR_STREAM] = "stream",
	[PROXY_DIR_SPLICE] = "splice",
};

const char *proxy_dir_state_str(enum proxy_dir_state s)
{
	return s < PROXY_DIR_STATE_COUNT ? dir_state_names[s] : "?";
}

/* The one place a direction's state changes. */
void proxy_st_dir_set_state(struct proxy_conn *c, struct proxy_stream_dir *st, enum proxy_dir_state s)
{
	LOG_D("stream_state", "conn=%llu dir=%s from=%s to=%s left=%zu opaque=%zu in_pipe=%zu",
	      (unsigned long long)c->id, st == &c->from_upstream ? "response" : "request",
	      proxy_dir_state_str(st->state), proxy_dir_state_str(s), st->left, st->opaque, st->in_pipe);
	st->state = s;
}

static void response_set_state(struct proxy_conn *c, enum proxy_dir_state s)
{
	proxy_st_dir_set_state(c, &c->from_upstream, s);
}

void proxy_stream_response_start(struct proxy_conn *c, struct proxy_entry *e, size_t len,
				 size_t hdr_len, bool scan)
{
	struct proxy_stream_dir *resp = &c->from_upstream;
	proxy_st_stream_metrics_init();
	metric_add(proxy_st_m_streamed, 1);
	resp->e = c->client ? e : NULL;
	resp->left = resp->frame = len + 4;
	resp->scan = scan;
	/* size prefix and response header pass as they are; then the body */
	resp->opaque = scan ? 4 + hdr_len : len + 4;
	resp->tail_rewrite = scan && codec_response_has_endpoints(CODEC_API_FETCH, e->api_version);
	resp->clamp = scan && proxy_clamp_streams(e);
	resp->cl_changed = false;
	resp->cl_left = resp->cl_skip = resp->cl_owed = 0;
	resp->cl_drop = false;
	resp->cl_part = false;
	resp->cl_records = resp->cl_bytes = 0;
	if (scan)
		codec_fetch_stream_init(&resp->fs, e->api_version);
	if (resp->e)
		proxy_entry_set_state(c, e, PROXY_ENTRY_STREAMING);
	else
		proxy_entry_free(c, e); /* LINGERING: nobody reads it */
	response_set_state(c, PROXY_DIR_STREAM);
}

/* Where the next bytes of the frame go: the client (head), the entry's `out`, or nowhere. */
struct evbuffer *proxy_st_response_dest(struct proxy_conn *c, bool *queue)
{
	struct proxy_entry *e = c->from_upstream.e;
	*queue = false;
	if (!e || !c->client)
		return NULL;
	if (e == TAILQ_FIRST(&c->fifo)) {
		if (e->out && evbuffer_get_length(e->out))
			proxy_fifo_flush(c); /* what was queued goes first */
		return bufferevent_get_output(c->client);
	}
	if (!e->out)
		e->out = evbuffer_new();
	*queue = true;
	return e->out;
}

/* Move `n` bytes from the head of `in` to where the frame goes. */
void proxy_st_response_move(struct proxy_conn *c, struct evbuffer *in, size_t n)
{
	bool queue;
	struct evbuffer *dst = proxy_st_response_dest(c, &queue);
	if (!dst) {
		evbuffer_drain(in, n);
		return;
	}
	evbuffer_remove_buffer(in, dst, n);
	if (queue)
		proxy_entry_queue(c, c->from_upstream.e, n);
	c->srv->bytes_since_trim += n;
}


/* The frame is through: the entry is READY (and flushed when at the head). */
int proxy_st_response_finish(struct proxy_conn *c)
{
	struct proxy_stream_dir *resp = &c->from_upstream;
	struct proxy_entry *e = resp->e;
	proxy_st_bulk_stop(c);
	if (resp->clamp)
		proxy_clamp_stream_done(c, resp->cl_changed, resp->cl_records, resp->cl_bytes);
	resp->e = NULL;
	response_set_state(c, PROXY_DIR_FRAME);
	if (e) {
		proxy_entry_set_state(c, e, PROXY_ENTRY_READY);
		proxy_fifo_flush(c);
	}
	return 1;
}

int proxy_st_response_bad(struct proxy_conn *c, const char *what, enum codec_err err)
{
	LOG_W("response_malformed", "conn=%llu peer=%s api=Fetch streamed=1 where=%s error=%s offset=%zu",
	      (unsigned long long)c->id, c->peer, what, codec_err_str(err),
	      c->from_upstream.frame - c->from_upstream.left + codec_err_offset());
	c->ops->close(c, PROXY_CLOSE_UPSTREAM_FRAME_MALFORMED);
	return -1;
}

/* `n` bytes of the frame (drained from `in`) go on as the `m` bytes `p`. */
void proxy_st_response_emit(struct proxy_conn *c, struct evbuffer *in, size_t n, const uint8_t *p, size_t m)
{
	evbuffer_drain(in, n);
	bool queue;
	struct evbuffer *dst = proxy_st_response_dest(c, &queue);
	if (!dst || !m)
		return;
	evbuffer_add(dst, p, m);
	if (queue)
		proxy_entry_queue(c, c->from_upstream.e, m);
}

/* Fetch v16+: the top-level tags, all of them here; rewritten to the same length. */
static int response_tail(struct proxy_conn *c, struct evbuffer *in)
{
	struct proxy_stream_dir *resp = &c->from_upstream;
	size_t n = resp->left;
	if (!resp->e) {
		evbuffer_drain(in, n);
		resp->left = 0;
		return 0;
	}
	struct codec_iov iov[PROXY_MAX_IOV];
	int niov = proxy_buf_iov(in, 0, n, iov, PROXY_MAX_IOV);
	uint8_t *buf = malloc(n ? n : 1);
	bool changed = false;
	enum codec_err err = niov < 0 || !buf ? CODEC_ERR_NOMEM
		: codec_tags_rewrite_endpoints_fixed(iov, niov, n, proxy_advertise_endpoint, c->srv,
						     buf, &changed);
	if (err != CODEC_OK) {
		free(buf);
		/* never forward an address we could not rewrite */
		return proxy_st_response_bad(c, "tail", err);
	}
	if (changed) {
		metric_add(proxy_st_m_tail_rewritten, 1);
		proxy_st_response_emit(c, in, n, buf, n);
	} else {
		proxy_st_response_move(c, in, n);
	}
	free(buf);
	resp->left = 0;
	return 0;
}

/* ---- the response direction's pieces of the pump (stream_pump.c) ---------- */

/*
 * Copying an opaque run: wait for COALESCE bytes at least (or the rest of
 * the run), not a few KiB per wake-up — each move is a write (a TLS record)
 * and two epoll_ctl on the client side; but in a clamped partition's kept
 * batches what is here goes at once, so that the batches after it are
 * spliced (proxy_st_cl_peek_kept).
 */
bool proxy_st_response_copy_later(struct proxy_conn *c, size_t avail)
{
	struct proxy_stream_dir *resp = &c->from_upstream;
	return avail < COALESCE && avail < resp->opaque && !proxy_st_dir_paused(c, resp) &&
	       !(resp->clamp && proxy_st_splice_run_len(c, resp) >= SPLICE_MIN && !c->srv->client_tls &&
		 !c->srv->upstream_tls);
}

/* A Fetch unit the consumer clamp judges (`saved`: the scan before it, `used`
 * bytes, `records` record bytes after it). 1 go on, 0 wait, -1 closing;
 * 2 when the unit is the caller's to move. */
static int response_clamp_unit(struct proxy_conn *c, struct evbuffer *in,
			       const struct codec_fetch_stream *saved, size_t used, size_t records)
{
	struct proxy_stream_dir *resp = &c->from_upstream;
	if (saved->stage == CODEC_STREAM_PARTITION)
		return proxy_st_cl_partition(c, in, saved, used, records);
	if (saved->stage == CODEC_STREAM_PART_END && resp->cl_part) {
		const uint8_t *id;
		const char *topic = proxy_st_cl_topic(resp, &id);
		proxy_clamp_stream_partition_end(c, topic, id, resp->cl_hw, resp->cl_end, resp->cl_keep_below);
		resp->cl_part = false;
	}
	if (saved->stage == CODEC_STREAM_PART_END && resp->cl_owed > 0)
		return proxy_st_cl_part_end(c, in, used) < 0 ? -1 : 1;
	if (saved->stage == CODEC_STREAM_TOPIC)
		proxy_st_cl_topic_unit(resp, in);
	return 2;
}

/*
 * The response's structure after an opaque run (`avail` bytes in `in`): the
 * rest opaque when it is not scanned, else the next Fetch unit walked
 * (codec_fetch_stream_next), judged by the consumer clamp, or the tail tags
 * rewritten. 1 go on, 0 wait for bytes, -1 closing.
 */
int proxy_st_response_unit(struct proxy_conn *c, struct evbuffer *in, size_t avail)
{
	struct proxy_stream_dir *resp = &c->from_upstream;
	proxy_st_bulk_stop(c); /* the run is over: structure follows, the bufferevent reads it */
	if (!resp->scan) {
		resp->opaque = resp->left;
		return 1;
	}
	if (resp->cl_left > 0) {
		if (avail == 0 && proxy_st_cl_peek_kept(c))
			return 1; /* a kept batch: an opaque run, spliced when it can be */
		return proxy_st_cl_records(c, in) == 0 ? 0 : 1;
	}
	if (resp->fs.stage == CODEC_STREAM_TAIL && !resp->tail_rewrite) {
		resp->opaque = resp->left;
		return 1;
	}
	if (resp->fs.stage == CODEC_STREAM_TAIL) {
		if (avail < resp->left)
			return resp->left > (size_t)c->srv->conf->max_frame_bytes
				       ? proxy_st_response_bad(c, "tail", CODEC_ERR_LIMIT) : 0;
		return response_tail(c, in) < 0 ? -1 : 1;
	}
	size_t look = avail < resp->left ? avail : resp->left;
	struct codec_iov iov[PROXY_MAX_IOV];
	int niov = proxy_buf_iov(in, 0, look, iov, PROXY_MAX_IOV);
	size_t used = 0, records = 0;
	struct codec_fetch_stream saved = resp->fs;
	enum codec_err err = niov < 0 ? CODEC_ERR_NOMEM
				      : codec_fetch_stream_next(&resp->fs, iov, niov, &used, &records);
	if (err == CODEC_ERR_UNDERFLOW) {
		if (look == resp->left)
			return proxy_st_response_bad(c, codec_stream_stage_str(resp->fs.stage), err);
		if (look > (size_t)c->srv->conf->max_frame_bytes)
			return proxy_st_response_bad(c, codec_stream_stage_str(resp->fs.stage), CODEC_ERR_LIMIT);
		return 0;
	}
	if (err != CODEC_OK || used + records > resp->left)
		return proxy_st_response_bad(c, codec_stream_stage_str(resp->fs.stage),
					     err != CODEC_OK ? err : CODEC_ERR_BAD_MSG);
	if (resp->clamp) {
		int rc = response_clamp_unit(c, in, &saved, used, records);
		if (rc != 2)
			return rc;
	}
	proxy_st_response_move(c, in, used);
	resp->left -= used;
	resp->opaque = records;
	return 1;
}

void proxy_stream_client_gone(struct proxy_conn *c)
{
	struct proxy_stream_dir *resp = &c->from_upstream;
	if (resp->state == PROXY_DIR_SPLICE) {
		proxy_st_splice_stop(c, resp);
		proxy_st_pipe_discard(resp);
	}
	/* the client's descriptor is about to close: no event may watch it */
	if (resp->ev_write) {
		event_free(resp->ev_write);
		resp->ev_write = NULL;
	}
	if (c->from_client.ev_read) {
		event_free(c->from_client.ev_read);
		c->from_client.ev_read = NULL;
	}
}

void proxy_stream_free(struct proxy_conn *c)
{
	if (c->from_upstream.ev_bulk)
		event_free(c->from_upstream.ev_bulk);
	c->from_upstream.ev_bulk = NULL;
	c->from_upstream.bulk = false;
	proxy_st_dir_events_free(&c->from_upstream);
	proxy_st_dir_events_free(&c->from_client);
	proxy_st_pipe_discard(&c->from_upstream);
	proxy_st_pipe_discard(&c->from_client);
	if (c->from_client.req) {
		codec_produce_request_free(c->from_client.req);
		free(c->from_client.req);
		c->from_client.req = NULL;
	}
}
