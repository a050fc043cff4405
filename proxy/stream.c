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
 * client socket with splice(2) and never enter user space (PROXY_RX_SPLICE).
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
 * rx states (proxy_rx_set_state() changes them):
 *   FRAME → STREAM → (SPLICE → STREAM)* → FRAME
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

static const char *const rx_state_names[PROXY_RX_STATE_COUNT] = {
	[PROXY_RX_FRAME] = "frame",
	[PROXY_RX_STREAM] = "stream",
	[PROXY_RX_SPLICE] = "splice",
};

const char *proxy_rx_state_str(enum proxy_rx_state s)
{
	return s < PROXY_RX_STATE_COUNT ? rx_state_names[s] : "?";
}

/* The one place a direction's state changes. */
void proxy_st_st_set_state(struct proxy_conn *c, struct proxy_rx *st, enum proxy_rx_state s)
{
	LOG_D("stream_state", "conn=%llu dir=%s from=%s to=%s left=%zu opaque=%zu in_pipe=%zu",
	      (unsigned long long)c->id, st == &c->rx ? "response" : "request",
	      proxy_rx_state_str(st->state), proxy_rx_state_str(s), st->left, st->opaque, st->in_pipe);
	st->state = s;
}

static void rx_set_state(struct proxy_conn *c, enum proxy_rx_state s)
{
	proxy_st_st_set_state(c, &c->rx, s);
}

void proxy_rx_start(struct proxy_conn *c, struct proxy_entry *e, size_t len, size_t hdr_len,
		    bool scan)
{
	struct proxy_rx *rx = &c->rx;
	proxy_st_stream_metrics_init();
	metric_add(proxy_st_m_streamed, 1);
	rx->e = c->client ? e : NULL;
	rx->left = rx->frame = len + 4;
	rx->scan = scan;
	/* size prefix and response header pass as they are; then the body */
	rx->opaque = scan ? 4 + hdr_len : len + 4;
	rx->tail_rewrite = scan && codec_response_has_endpoints(CODEC_API_FETCH, e->api_version);
	rx->clamp = scan && proxy_clamp_streams(e);
	rx->cl_changed = false;
	rx->cl_left = rx->cl_skip = rx->cl_owed = 0;
	rx->cl_drop = false;
	rx->cl_part = false;
	rx->cl_records = rx->cl_bytes = 0;
	if (scan)
		codec_fetch_stream_init(&rx->fs, e->api_version);
	if (rx->e)
		proxy_entry_set_state(c, e, PROXY_ENTRY_STREAMING);
	else
		proxy_entry_free(c, e); /* LINGERING: nobody reads it */
	rx_set_state(c, PROXY_RX_STREAM);
}

/* Where the next bytes of the frame go: the client (head), the entry's `out`, or nowhere. */
struct evbuffer *proxy_st_rx_dest(struct proxy_conn *c, bool *queue)
{
	struct proxy_entry *e = c->rx.e;
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
void proxy_st_rx_move(struct proxy_conn *c, struct evbuffer *in, size_t n)
{
	bool queue;
	struct evbuffer *dst = proxy_st_rx_dest(c, &queue);
	if (!dst) {
		evbuffer_drain(in, n);
		return;
	}
	evbuffer_remove_buffer(in, dst, n);
	if (queue)
		proxy_entry_queue(c, c->rx.e, n);
	c->srv->bytes_since_trim += n;
}


/* The frame is through: the entry is READY (and flushed when at the head). */
static int rx_finish(struct proxy_conn *c)
{
	struct proxy_entry *e = c->rx.e;
	proxy_st_bulk_stop(c);
	if (c->rx.clamp)
		proxy_clamp_stream_done(c, c->rx.cl_changed, c->rx.cl_records, c->rx.cl_bytes);
	c->rx.e = NULL;
	rx_set_state(c, PROXY_RX_FRAME);
	if (e) {
		proxy_entry_set_state(c, e, PROXY_ENTRY_READY);
		proxy_fifo_flush(c);
	}
	return 1;
}

int proxy_st_rx_bad(struct proxy_conn *c, const char *what, enum codec_err err)
{
	LOG_W("response_malformed", "conn=%llu peer=%s api=Fetch streamed=1 where=%s error=%s offset=%zu",
	      (unsigned long long)c->id, c->peer, what, codec_err_str(err),
	      c->rx.frame - c->rx.left + codec_err_offset());
	c->ops->close(c, PROXY_CLOSE_UPSTREAM_FRAME_MALFORMED);
	return -1;
}

/* `n` bytes of the frame (drained from `in`) go on as the `m` bytes `p`. */
void proxy_st_rx_emit(struct proxy_conn *c, struct evbuffer *in, size_t n, const uint8_t *p, size_t m)
{
	evbuffer_drain(in, n);
	bool queue;
	struct evbuffer *dst = proxy_st_rx_dest(c, &queue);
	if (!dst || !m)
		return;
	evbuffer_add(dst, p, m);
	if (queue)
		proxy_entry_queue(c, c->rx.e, m);
}

/* Fetch v16+: the top-level tags, all of them here; rewritten to the same length. */
static int rx_tail(struct proxy_conn *c, struct evbuffer *in)
{
	struct proxy_rx *rx = &c->rx;
	size_t n = rx->left;
	if (!rx->e) {
		evbuffer_drain(in, n);
		rx->left = 0;
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
		return proxy_st_rx_bad(c, "tail", err);
	}
	if (changed) {
		metric_add(proxy_st_m_tail_rewritten, 1);
		proxy_st_rx_emit(c, in, n, buf, n);
	} else {
		proxy_st_rx_move(c, in, n);
	}
	free(buf);
	rx->left = 0;
	return 0;
}

/* ---- the pump --------------------------------------------------------------- */

int proxy_rx_pump(struct proxy_conn *c)
{
	struct proxy_rx *rx = &c->rx;
	if (rx->state == PROXY_RX_SPLICE) {
		int rc = proxy_st_splice_pump(c, rx);
		if (rc != 1)
			return rc;
	}
	if (rx->state != PROXY_RX_STREAM || !c->upstream)
		return 1;
	struct evbuffer *in = bufferevent_get_input(c->upstream);
	for (;;) {
		if (c->state == PROXY_CONN_CLOSING)
			return -1;
		if (rx->left == 0)
			return rx_finish(c);
		size_t avail = evbuffer_get_length(in);
		if (rx->opaque > 0) {
			if (avail == 0) {
				if (proxy_st_splice_possible(c, rx) && proxy_st_splice_setup(c, rx) == 0) {
					rx->wait_drain = false;
					int rc = proxy_st_splice_begin(c, rx);
					if (rc != 1)
						return rc;
					continue;
				}
				proxy_st_splice_wait_end(c, rx);
				if (!proxy_st_splice_wait_drain(c, rx))
					proxy_st_bulk_start(c); /* no splice (TLS, or queued): copy in bulk */
				return 0;
			}
			/* copying: move record bytes in runs of COALESCE at least (or
			 * the rest of the run), not a few KiB per wake-up — each move is
			 * a write (a TLS record) and two epoll_ctl on the client side;
			 * but in a clamped partition's kept batches what is here goes at
			 * once, so that the batches after it are spliced (proxy_st_cl_peek_kept) */
			if (avail < COALESCE && avail < rx->opaque && !proxy_st_st_paused(c, rx) &&
			    !(rx->clamp && proxy_st_splice_run_len(c, rx) >= SPLICE_MIN && !c->srv->client_tls &&
			      !c->srv->upstream_tls))
				return 0;
			size_t n = avail < rx->opaque ? avail : rx->opaque;
			proxy_st_rx_move(c, in, n);
			rx->opaque -= n;
			rx->left -= n;
			continue;
		}
		proxy_st_bulk_stop(c); /* the run is over: structure follows, the bufferevent reads it */
		if (!rx->scan) {
			rx->opaque = rx->left;
			continue;
		}
		if (rx->cl_left > 0) {
			if (avail == 0 && proxy_st_cl_peek_kept(c))
				continue; /* a kept batch: an opaque run, spliced when it can be */
			if (proxy_st_cl_records(c, in) == 0)
				return 0;
			continue;
		}
		if (rx->fs.stage == CODEC_STREAM_TAIL && !rx->tail_rewrite) {
			rx->opaque = rx->left;
			continue;
		}
		if (rx->fs.stage == CODEC_STREAM_TAIL) {
			if (avail < rx->left) {
				if (rx->left > (size_t)c->srv->conf->max_frame_bytes)
					return proxy_st_rx_bad(c, "tail", CODEC_ERR_LIMIT);
				return 0;
			}
			if (rx_tail(c, in) < 0)
				return -1;
			continue;
		}
		size_t look = avail < rx->left ? avail : rx->left;
		struct codec_iov iov[PROXY_MAX_IOV];
		int niov = proxy_buf_iov(in, 0, look, iov, PROXY_MAX_IOV);
		size_t used = 0, records = 0;
		struct codec_fetch_stream saved = rx->fs;
		enum codec_err err = niov < 0 ? CODEC_ERR_NOMEM
					      : codec_fetch_stream_next(&rx->fs, iov, niov, &used, &records);
		if (err == CODEC_ERR_UNDERFLOW) {
			if (look == rx->left)
				return proxy_st_rx_bad(c, codec_stream_stage_str(rx->fs.stage), err);
			if (look > (size_t)c->srv->conf->max_frame_bytes)
				return proxy_st_rx_bad(c, codec_stream_stage_str(rx->fs.stage), CODEC_ERR_LIMIT);
			return 0;
		}
		if (err != CODEC_OK || used + records > rx->left)
			return proxy_st_rx_bad(c, codec_stream_stage_str(rx->fs.stage),
				      err != CODEC_OK ? err : CODEC_ERR_BAD_MSG);
		if (rx->clamp && saved.stage == CODEC_STREAM_PARTITION) {
			int rc = proxy_st_cl_partition(c, in, &saved, used, records);
			if (rc <= 0)
				return rc;
			continue;
		}
		if (rx->clamp && saved.stage == CODEC_STREAM_PART_END && rx->cl_part) {
			const uint8_t *id;
			const char *topic = proxy_st_cl_topic(rx, &id);
			proxy_clamp_stream_partition_end(c, topic, id, rx->cl_hw, rx->cl_end, rx->cl_keep_below);
			rx->cl_part = false;
		}
		if (rx->clamp && saved.stage == CODEC_STREAM_PART_END && rx->cl_owed > 0) {
			if (proxy_st_cl_part_end(c, in, used) < 0)
				return -1;
			continue;
		}
		if (rx->clamp && saved.stage == CODEC_STREAM_TOPIC)
			proxy_st_cl_topic_unit(rx, in);
		proxy_st_rx_move(c, in, used);
		rx->left -= used;
		rx->opaque = records;
	}
}

void proxy_rx_client_gone(struct proxy_conn *c)
{
	struct proxy_rx *rx = &c->rx;
	if (rx->state == PROXY_RX_SPLICE) {
		proxy_st_splice_stop(c, rx);
		proxy_st_pipe_discard(rx);
	}
	/* the client's descriptor is about to close: no event may watch it */
	if (rx->ev_write) {
		event_free(rx->ev_write);
		rx->ev_write = NULL;
	}
	if (c->tx.ev_read) {
		event_free(c->tx.ev_read);
		c->tx.ev_read = NULL;
	}
}

void proxy_rx_free(struct proxy_conn *c)
{
	if (c->rx.ev_bulk)
		event_free(c->rx.ev_bulk);
	c->rx.ev_bulk = NULL;
	c->rx.bulk = false;
	proxy_st_st_events_free(&c->rx);
	proxy_st_st_events_free(&c->tx);
	proxy_st_pipe_discard(&c->rx);
	proxy_st_pipe_discard(&c->tx);
	if (c->tx.req) {
		codec_produce_request_free(c->tx.req);
		free(c->tx.req);
		c->tx.req = NULL;
	}
}
