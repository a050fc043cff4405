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

#include "proxy/proxy.h"
#include "proxy/security.h"

/* Opaque bytes worth a splice (below it two syscalls cost more than a copy). */
#define SPLICE_MIN (16u << 10)
/* Least bytes of a record run moved at once when copying (a bufferevent
 * read is at most 64 KiB, SINGLE_IO_MAX in conn.c). */
#define COALESCE (32u << 10)
/* Pipe size asked for (fs.pipe-max-size allows 1 MiB by default). */
#define PIPE_SIZE (1u << 20)

static struct metric *m_streamed, *m_spliced, *m_tail_rewritten;

static void stream_metrics_init(void)
{
	if (m_streamed)
		return;
	m_streamed = metric_get(METRIC_COUNTER, "syncgate_responses_streamed_total",
				"Responses forwarded as they arrived instead of buffered whole.", "",
				NULL, 0);
	m_spliced = metric_get(METRIC_COUNTER, "syncgate_spliced_bytes_total",
			       "Response bytes moved socket to socket in the kernel (splice), never "
			       "copied into syncgate.", "", NULL, 0);
	m_tail_rewritten = metric_get(METRIC_COUNTER, "syncgate_stream_tail_rewrites_total",
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
static void st_set_state(struct proxy_conn *c, struct proxy_rx *st, enum proxy_rx_state s)
{
	LOG_D("stream_state", "conn=%llu dir=%s from=%s to=%s left=%zu opaque=%zu in_pipe=%zu",
	      (unsigned long long)c->id, st == &c->rx ? "response" : "request",
	      proxy_rx_state_str(st->state), proxy_rx_state_str(s), st->left, st->opaque, st->in_pipe);
	st->state = s;
}

static void rx_set_state(struct proxy_conn *c, enum proxy_rx_state s)
{
	st_set_state(c, &c->rx, s);
}

void proxy_rx_start(struct proxy_conn *c, struct proxy_entry *e, size_t len, size_t hdr_len,
		    bool scan)
{
	struct proxy_rx *rx = &c->rx;
	stream_metrics_init();
	metric_add(m_streamed, 1);
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
static struct evbuffer *rx_dest(struct proxy_conn *c, bool *queue)
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
static void rx_move(struct proxy_conn *c, struct evbuffer *in, size_t n)
{
	bool queue;
	struct evbuffer *dst = rx_dest(c, &queue);
	if (!dst) {
		evbuffer_drain(in, n);
		return;
	}
	evbuffer_remove_buffer(in, dst, n);
	if (queue)
		proxy_entry_queue(c, c->rx.e, n);
	c->srv->bytes_since_trim += n;
}

static void bulk_stop(struct proxy_conn *c);

/* The frame is through: the entry is READY (and flushed when at the head). */
static int rx_finish(struct proxy_conn *c)
{
	struct proxy_entry *e = c->rx.e;
	bulk_stop(c);
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

static int rx_bad(struct proxy_conn *c, const char *what, enum codec_err err)
{
	LOG_W("response_malformed", "conn=%llu peer=%s api=Fetch streamed=1 where=%s error=%s offset=%zu",
	      (unsigned long long)c->id, c->peer, what, codec_err_str(err),
	      c->rx.frame - c->rx.left + codec_err_offset());
	c->ops->close(c, PROXY_CLOSE_UPSTREAM_FRAME_MALFORMED);
	return -1;
}

/* `n` bytes of the frame (drained from `in`) go on as the `m` bytes `p`. */
static void rx_emit(struct proxy_conn *c, struct evbuffer *in, size_t n, const uint8_t *p, size_t m)
{
	evbuffer_drain(in, n);
	bool queue;
	struct evbuffer *dst = rx_dest(c, &queue);
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
		return rx_bad(c, "tail", err);
	}
	if (changed) {
		metric_add(m_tail_rewritten, 1);
		rx_emit(c, in, n, buf, n);
	} else {
		rx_move(c, in, n);
	}
	free(buf);
	rx->left = 0;
	return 0;
}

/* ---- the consumer clamp, as the frame passes ---------------------
 *
 * A clamped partition (proxy_clamp_stream_partition: every gated one, whatever
 * its HighWatermark says — Kafka takes it before it reads the log, so batches
 * at or past it may come along) gets HighWatermark and LastStableOffset
 * lowered in place when above the mirrored HW, then its records are judged
 * batch by batch from their headers (codec_batch_peek: at most 61 bytes
 * looked at, the rest moves as opaque bytes, spliced when it can — at a batch
 * boundary with nothing in user space the next header is read from the
 * socket with recv(MSG_PEEK), cl_peek_kept, so kept batches go on spliced).
 * The frame's size prefix is already on its way, so what is left out keeps
 * its length:
 *  - the first batch left out: the Records length becomes 0 and the
 *    partition's tagged fields grow by what was cut (codec_tags_grow: a
 *    filler field every client skips) — a consumer never gets a record
 *    set without a whole batch (the Java client fails on one);
 *  - a later batch: it and everything after it in the partition become one
 *    batch cut short — its base offset, a length one byte beyond the
 *    record set, leader epoch and magic as sent, zeros after — which every
 *    client takes for the broker's own partial trailing batch (KIP-74).
 * Either way no record at or past the mirrored HW is readable. */

/* The current topic's name, or NULL and the TopicId (v13+). */
static const char *cl_topic(struct proxy_rx *rx, const uint8_t **id)
{
	*id = rx->fs.version >= 13 ? rx->fs.topic_id : NULL;
	return *id ? NULL : rx->cl_topic;
}

/* A TOPIC unit of `used` bytes at the head of `in`: keep its name (v12). */
static void cl_topic_unit(struct proxy_rx *rx, struct evbuffer *in)
{
	rx->cl_topic[0] = '\0';
	if (rx->fs.version >= 13 || rx->fs.topic.len <= 0)
		return;
	size_t n = (size_t)rx->fs.topic.len < sizeof(rx->cl_topic) - 1 ? (size_t)rx->fs.topic.len
									: sizeof(rx->cl_topic) - 1;
	struct evbuffer_ptr at;
	evbuffer_ptr_set(in, &at, rx->fs.topic.off, EVBUFFER_PTR_SET);
	evbuffer_copyout_from(in, &at, rx->cl_topic, n);
	rx->cl_topic[n] = '\0';
}

/*
 * A PARTITION unit of `used` bytes, `records` record bytes after it, at the
 * head of `in` (`saved`: the scan before it). Returns 1 when handled, 0 to
 * wait for the first batch header (the scan is put back), -1 on error.
 */
static int cl_partition(struct proxy_conn *c, struct evbuffer *in, const struct codec_fetch_stream *saved,
			size_t used, size_t records)
{
	struct proxy_rx *rx = &c->rx;
	const struct codec_fetch_stream_part *p = &rx->fs.part;
	const uint8_t *id;
	const char *topic = cl_topic(rx, &id);
	int64_t limit, keep_below;
	/* the first batch header first, so the partition is judged once */
	size_t peek = records < CODEC_BATCH_PEEK ? records : CODEC_BATCH_PEEK;
	if (evbuffer_get_length(in) < used + peek) {
		rx->fs = *saved;
		return 0;
	}
	if (!proxy_clamp_stream_partition(c, topic, id, p, &limit, &keep_below)) {
		rx_move(c, in, used);
		rx->left -= used;
		rx->opaque = records;
		return 1;
	}
	uint8_t *u = malloc(used + 1);
	if (!u)
		return rx_bad(c, "partition", CODEC_ERR_NOMEM);
	evbuffer_copyout(in, u, used);
	size_t out_len = used;
	uint8_t b[8];
	if (p->high_watermark > limit) {
		codec_put_be64(b, limit);
		memcpy(u + p->hw_off, b, 8);
		rx->cl_changed = true;
	}
	if (p->last_stable_offset > limit) {
		codec_put_be64(b, limit);
		memcpy(u + p->lso_off, b, 8);
		rx->cl_changed = true;
	}
	rx->cl_keep_below = keep_below;
	rx->cl_part = true;
	rx->cl_hw = p->high_watermark;
	rx->cl_end = -1;
	rx->cl_left = records;
	rx->cl_skip = 0;
	rx->cl_drop = false;
	rx->cl_owed = 0;
	if (records >= 12) {
		uint8_t h[CODEC_BATCH_PEEK];
		struct evbuffer_ptr at;
		evbuffer_ptr_set(in, &at, used, EVBUFFER_PTR_SET);
		evbuffer_copyout_from(in, &at, h, peek);
		struct codec_batch_head first;
		codec_batch_peek(h, peek, records, &first);
		if (!codec_batch_kept(&first, keep_below)) {
			/* nothing kept: an empty record set, the rest is filler later */
			u[p->records_len_off] = 1; /* uvarint(0 + 1) */
			out_len = p->records_len_off + 1;
			rx->cl_owed = used - out_len + records;
			rx->cl_drop = true;
			rx->cl_changed = true;
		}
	} else {
		rx->cl_left = 0; /* fewer than 12 bytes hold no batch a client reads */
		rx->opaque = records;
	}
	rx_emit(c, in, used, u, out_len);
	free(u);
	rx->left -= used;
	return 1;
}

/* Bytes of a batch header kept when the rest of a record set is left out:
 * baseOffset, batchLength (rewritten), partitionLeaderEpoch, magic. */
#define MASK_HEAD 17
/* Least batchLength a client accepts from a v2 header (librdkafka: the
 * 61-byte header less baseOffset and batchLength; Java: 14). */
#define MASK_MIN_LENGTH 49

/* Leave out the rest (`left` ≥ MASK_HEAD bytes, `h` its first bytes) of the
 * partition's records: one batch cut short, zeros after its header. */
static void cl_mask(struct proxy_conn *c, const uint8_t *h, size_t left)
{
	bool queue;
	struct evbuffer *dst = rx_dest(c, &queue);
	c->rx.cl_changed = true;
	if (!dst)
		return;
	static const uint8_t zeros[4096];
	uint8_t head[MASK_HEAD];
	memcpy(head, h, MASK_HEAD);
	/* at least one byte beyond the record set: the client waits for more */
	size_t blen = left - 12 + 1 > MASK_MIN_LENGTH ? left - 12 + 1 : MASK_MIN_LENGTH;
	head[8] = (uint8_t)(blen >> 24);
	head[9] = (uint8_t)(blen >> 16);
	head[10] = (uint8_t)(blen >> 8);
	head[11] = (uint8_t)blen;
	evbuffer_add(dst, head, MASK_HEAD);
	for (size_t n = MASK_HEAD; n < left;) {
		size_t k = left - n < sizeof(zeros) ? left - n : sizeof(zeros);
		evbuffer_add(dst, zeros, k);
		n += k;
	}
	if (queue)
		proxy_entry_queue(c, c->rx.e, left);
}

/* Batch `b` of the current partition was seen: one past its last offset. */
static void cl_note_end(struct proxy_rx *rx, const struct codec_batch_head *b)
{
	if (b->base >= 0 && b->last >= b->base && b->last + 1 > rx->cl_end)
		rx->cl_end = b->last + 1;
}

/* The records of a clamped partition: judge the next batch, or drain what is
 * left out. Returns 1 on progress, 0 to wait for bytes. */
static int cl_records(struct proxy_conn *c, struct evbuffer *in)
{
	struct proxy_rx *rx = &c->rx;
	size_t avail = evbuffer_get_length(in);
	if (rx->cl_skip > 0) {
		if (avail == 0)
			return 0;
		size_t n = avail < rx->cl_skip ? avail : rx->cl_skip;
		evbuffer_drain(in, n);
		rx->cl_skip -= n;
		rx->cl_left -= n;
		rx->left -= n;
		rx->cl_bytes += (int64_t)n;
		return 1;
	}
	size_t peek = rx->cl_left < CODEC_BATCH_PEEK ? rx->cl_left : CODEC_BATCH_PEEK;
	if (avail < peek)
		return 0;
	uint8_t h[CODEC_BATCH_PEEK];
	evbuffer_copyout(in, h, peek);
	struct codec_batch_head b;
	codec_batch_peek(h, peek, rx->cl_left, &b);
	cl_note_end(rx, &b);
	if (!rx->cl_drop && codec_batch_kept(&b, rx->cl_keep_below)) {
		rx->opaque = b.total;
		rx->cl_left -= b.total;
		return 1;
	}
	if (!rx->cl_drop && rx->cl_left < MASK_HEAD) {
		/* the broker's own partial trailing batch: no client reads it */
		rx->opaque = rx->cl_left;
		rx->cl_left = 0;
		return 1;
	}
	if (!rx->cl_drop) {
		cl_mask(c, h, rx->cl_left);
		rx->cl_drop = true;
	}
	if (!b.partial)
		rx->cl_records += b.records;
	rx->cl_skip = b.total;
	return 1;
}

/*
 * At a batch boundary of a clamped partition with nothing of the frame in
 * user space (the upstream input empty, or splicing): the next batch header
 * read from the plaintext upstream socket without taking it (recv MSG_PEEK,
 * at most 61 bytes); a kept batch becomes an opaque run, so kept batches go
 * on socket → pipe → client in the kernel, judged by their headers only.
 * False, nothing changed, when the header is not all there yet or the batch
 * is left out: cl_records() judges it once the bufferevent has read it.
 */
static bool cl_peek_kept(struct proxy_conn *c)
{
	struct proxy_rx *rx = &c->rx;
	if (!rx->clamp || rx->cl_left == 0 || rx->cl_drop || rx->cl_skip > 0 || rx->opaque > 0 ||
	    c->srv->upstream_tls || c->srv->client_tls || !c->upstream || !c->upstream_up)
		return false;
	size_t peek = rx->cl_left < CODEC_BATCH_PEEK ? rx->cl_left : CODEC_BATCH_PEEK;
	uint8_t h[CODEC_BATCH_PEEK];
	ssize_t n = recv(bufferevent_getfd(c->upstream), h, peek, MSG_PEEK | MSG_DONTWAIT);
	if (n < 0 || (size_t)n < peek)
		return false;
	struct codec_batch_head b;
	codec_batch_peek(h, peek, rx->cl_left, &b);
	if (!codec_batch_kept(&b, rx->cl_keep_below))
		return false;
	cl_note_end(rx, &b);
	rx->opaque = b.total;
	rx->cl_left -= b.total;
	return true;
}

/* A PART_END unit of `used` bytes at the head of `in` after a partition that
 * left `cl_owed` bytes out: its tagged fields take the filler. */
static int cl_part_end(struct proxy_conn *c, struct evbuffer *in, size_t used)
{
	struct proxy_rx *rx = &c->rx;
	struct codec_iov iov[PROXY_MAX_IOV];
	int niov = proxy_buf_iov(in, 0, used, iov, PROXY_MAX_IOV);
	if (niov < 0)
		return rx_bad(c, "part_end", CODEC_ERR_NOMEM);
	struct codec_reader r;
	codec_reader_init(&r, iov, niov);
	r.flexible = true;
	codec_read_tags(&r, NULL, NULL, NULL); /* the partition's; the topic's may follow */
	size_t sec = r.off, grow = rx->cl_owed;
	uint8_t *out = malloc(sec + grow);
	enum codec_err err = r.err ? r.err : !out ? CODEC_ERR_NOMEM
				      : codec_tags_grow(iov, niov, sec, grow, out);
	if (err != CODEC_OK) {
		free(out);
		return rx_bad(c, "part_end", err);
	}
	rx_emit(c, in, sec, out, sec + grow);
	free(out);
	rx_move(c, in, used - sec);
	rx->left -= used;
	rx->cl_owed = 0;
	return 1;
}

/* ---- splice (either direction) ---------------------------------------------- */

static void splice_rx_cb(evutil_socket_t fd, short what, void *arg);
static void splice_tx_cb(evutil_socket_t fd, short what, void *arg);

/* The bufferevent a direction reads from, and the one it writes to. */
static struct bufferevent *st_src(struct proxy_conn *c, struct proxy_rx *st)
{
	return st == &c->rx ? c->upstream : c->client;
}

static struct bufferevent *st_dst(struct proxy_conn *c, struct proxy_rx *st)
{
	return st == &c->rx ? c->client : c->upstream;
}

static bool st_paused(struct proxy_conn *c, struct proxy_rx *st)
{
	return st == &c->rx ? c->upstream_paused : c->client_paused;
}

/* Opaque bytes that may move in the kernel from here: the run, and in a
 * clamped partition its record bytes after it (kept batches go on spliced,
 * judged in the socket's buffer: cl_peek_kept). */
static size_t splice_run_len(struct proxy_conn *c, const struct proxy_rx *st)
{
	return st->opaque + (st == &c->rx && st->clamp && !st->cl_drop ? st->cl_left : 0);
}

/*
 * The destination still has bytes to write (what was copied before): stop
 * reading the source until they are written, then splice the rest — else a
 * steady sender keeps the source's input non-empty and every byte is copied.
 */
static bool splice_wait_drain(struct proxy_conn *c, struct proxy_rx *st)
{
	if (c->srv->client_tls || c->srv->upstream_tls || !c->client || !c->upstream ||
	    !c->upstream_up || splice_run_len(c, st) < 4 * SPLICE_MIN || c->state == PROXY_CONN_CLOSING)
		return false;
	if (st == &c->rx && (!st->e || st->e != TAILQ_FIRST(&c->fifo) || st->e->out))
		return false;
	if (evbuffer_get_length(bufferevent_get_input(st_src(c, st))) != 0)
		return false;
	bufferevent_disable(st_src(c, st), EV_READ);
	st->wait_drain = true;
	return true;
}

/* Reads back on after a wait for the destination (unless paused meanwhile). */
static void splice_wait_end(struct proxy_conn *c, struct proxy_rx *st)
{
	if (!st->wait_drain)
		return;
	st->wait_drain = false;
	struct bufferevent *src = st_src(c, st);
	if (src && !st_paused(c, st) && c->state != PROXY_CONN_CLOSING && st->state != PROXY_RX_SPLICE)
		bufferevent_enable(src, EV_READ);
}

/* Whether the opaque bytes still to come can move in the kernel now: both
 * sides plaintext and connected, nothing buffered in user space on either
 * side (so nothing is reordered), and enough bytes to be worth it. */
static bool splice_possible(struct proxy_conn *c, struct proxy_rx *st)
{
	if (c->srv->client_tls || c->srv->upstream_tls || !c->client || !c->upstream ||
	    !c->upstream_up || splice_run_len(c, st) < SPLICE_MIN || c->state == PROXY_CONN_CLOSING)
		return false;
	if (st == &c->rx && (!st->e || st->e != TAILQ_FIRST(&c->fifo) || st->e->out))
		return false;
	return evbuffer_get_length(bufferevent_get_output(st_dst(c, st))) == 0 &&
	       evbuffer_get_length(bufferevent_get_input(st_src(c, st))) == 0;
}

static int splice_setup(struct proxy_conn *c, struct proxy_rx *st)
{
	if (st->pipe[0] < 0) {
		if (pipe2(st->pipe, O_NONBLOCK | O_CLOEXEC) < 0) {
			st->pipe[0] = st->pipe[1] = -1;
			return -1;
		}
		fcntl(st->pipe[1], F_SETPIPE_SZ, PIPE_SIZE); /* best effort */
		int sz = fcntl(st->pipe[1], F_GETPIPE_SZ);
		st->pipe_cap = sz > 0 ? (size_t)sz : 65536;
		st->in_pipe = 0;
	}
	struct event_base *base = c->srv->base;
	event_callback_fn cb = st == &c->rx ? splice_rx_cb : splice_tx_cb;
	if (!st->ev_read)
		st->ev_read = event_new(base, bufferevent_getfd(st_src(c, st)), EV_READ | EV_PERSIST,
					cb, c);
	if (!st->ev_write)
		st->ev_write = event_new(base, bufferevent_getfd(st_dst(c, st)), EV_WRITE | EV_PERSIST,
					 cb, c);
	return st->ev_read && st->ev_write ? 0 : -1;
}

/* Leave SPLICE: our events off, the source bufferevent reads again. */
static void splice_stop(struct proxy_conn *c, struct proxy_rx *st)
{
	if (st->ev_read)
		event_del(st->ev_read);
	if (st->ev_write)
		event_del(st->ev_write);
	st_set_state(c, st, PROXY_RX_STREAM);
	struct bufferevent *src = st_src(c, st);
	if (src && !st_paused(c, st) && c->state != PROXY_CONN_CLOSING)
		bufferevent_enable(src, EV_READ);
}

/* Drop whatever the pipe holds (its reader went away). */
static void pipe_discard(struct proxy_rx *st)
{
	if (st->pipe[0] >= 0) {
		close(st->pipe[0]);
		close(st->pipe[1]);
	}
	st->pipe[0] = st->pipe[1] = -1;
	st->in_pipe = 0;
}

static void st_events_free(struct proxy_rx *st)
{
	if (st->ev_read)
		event_free(st->ev_read);
	if (st->ev_write)
		event_free(st->ev_write);
	st->ev_read = st->ev_write = NULL;
}

/*
 * Move opaque bytes source → pipe → destination until one side would
 * block. The pipe may be full before `pipe_cap` bytes (a pipe holds a
 * number of buffers, and a socket's pages may fill them partly), so the
 * source's read event is armed only while the pipe is empty: a full pipe and
 * a readable socket would otherwise wake the loop for nothing.
 */
static int splice_pump(struct proxy_conn *c, struct proxy_rx *st)
{
	bool rx = st == &c->rx;
	int src = bufferevent_getfd(st_src(c, st)), dst = bufferevent_getfd(st_dst(c, st));
	for (;;) {
		/* at a kept batch's end: the next one judged in the kernel's buffer */
		bool progress = rx && st->opaque == 0 && cl_peek_kept(c);
		if (st->opaque > 0 && st->in_pipe < st->pipe_cap) {
			size_t want = st->opaque < st->pipe_cap - st->in_pipe ? st->opaque
									     : st->pipe_cap - st->in_pipe;
			ssize_t n = splice(src, NULL, st->pipe[1], NULL, want,
					   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0) {
				st->in_pipe += (size_t)n;
				st->opaque -= (size_t)n;
				st->left -= (size_t)n;
				metric_add(m_spliced, (double)n);
				progress = true;
			} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
				LOG_W(rx ? "upstream_closed_mid_response" : "client_closed_mid_request",
				      "conn=%llu peer=%s bytes_left=%zu error=\"%s\"", (unsigned long long)c->id,
				      c->peer, st->left, n == 0 ? "end of stream" : strerror(errno));
				c->ops->close(c, rx ? PROXY_CLOSE_UPSTREAM_MID_RESPONSE
						       : PROXY_CLOSE_CLIENT_MID_REQUEST);
				return -1;
			}
		}
		if (st->in_pipe > 0) {
			ssize_t n = splice(st->pipe[0], NULL, dst, NULL, st->in_pipe,
					   SPLICE_F_MOVE | SPLICE_F_NONBLOCK |
					   (st->opaque > 0 ? SPLICE_F_MORE : 0));
			if (n > 0) {
				st->in_pipe -= (size_t)n;
				progress = true;
			} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
				if (!rx) {
					/* the broker went away with a request half sent */
					LOG_W("upstream_closed_mid_request", "conn=%llu peer=%s error=\"%s\"",
					      (unsigned long long)c->id, c->peer, strerror(errno));
					c->ops->close(c, PROXY_CLOSE_UPSTREAM_MID_REQUEST);
					return -1;
				}
				/* the client went away: the rest is read and dropped */
				splice_stop(c, st);
				pipe_discard(st);
				c->ops->client_gone(c, PROXY_CLOSE_CLIENT_ERROR);
				return -1;
			}
		}
		if (!progress)
			break;
	}
	if (st->opaque == 0 && st->in_pipe == 0) {
		splice_stop(c, st);
		return 1;
	}
	if (st->in_pipe == 0 && st->opaque > 0)
		event_add(st->ev_read, NULL);
	else
		event_del(st->ev_read);
	if (st->in_pipe > 0)
		event_add(st->ev_write, NULL);
	else
		event_del(st->ev_write);
	return 0;
}

/* Enter SPLICE for `st` and run it; as splice_pump(). */
static int splice_begin(struct proxy_conn *c, struct proxy_rx *st)
{
	bufferevent_disable(st_src(c, st), EV_READ);
	st_set_state(c, st, PROXY_RX_SPLICE);
	return splice_pump(c, st);
}

static void splice_run(struct proxy_conn *c, struct proxy_rx *st)
{
	if (c->state == PROXY_CONN_CLOSING || st->state != PROXY_RX_SPLICE)
		return;
	if (splice_pump(c, st) == 1) {
		/* the opaque run is over: go on with the frame and what follows it */
		if (st == &c->rx)
			c->ops->upstream_frames(c);
		else
			c->ops->client_frames(c);
	}
}

static void splice_rx_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_conn *c = arg;
	(void)fd;
	(void)what;
	splice_run(c, &c->rx);
}

static void splice_tx_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_conn *c = arg;
	(void)fd;
	(void)what;
	splice_run(c, &c->tx);
}

/* ---- bulk reads (copying path) ---------------------------------------------- */

/*
 * libevent 2.1 reads a socket 4 KiB per call whatever max_single_read says
 * (EVBUFFER_MAX_READ in evbuffer_read), so a copied response costs a readv,
 * an ioctl and an epoll_wait per 4 KiB. While a long record run is copied
 * (the client side is TLS, so no splice), the plaintext upstream is read
 * here instead, BULK_READ at a time, straight into the bufferevent's input.
 */
#define BULK_READ (256u << 10)

static void bulk_stop(struct proxy_conn *c)
{
	struct proxy_rx *rx = &c->rx;
	if (!rx->bulk)
		return;
	rx->bulk = false;
	event_del(rx->ev_bulk);
	if (c->upstream && !c->upstream_paused && c->state != PROXY_CONN_CLOSING &&
	    rx->state != PROXY_RX_SPLICE)
		bufferevent_enable(c->upstream, EV_READ);
}

static void bulk_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_conn *c = arg;
	struct proxy_rx *rx = &c->rx;
	(void)what;
	if (c->state == PROXY_CONN_CLOSING || !rx->bulk)
		return;
	if (c->upstream_paused || rx->state != PROXY_RX_STREAM || rx->opaque == 0) {
		bulk_stop(c);
		return;
	}
	struct evbuffer *in = bufferevent_get_input(c->upstream);
	size_t want = rx->opaque < BULK_READ ? rx->opaque : BULK_READ;
	struct evbuffer_iovec v[2];
	/* a socket bufferevent freezes its input's end; libevent's own reads
	 * unfreeze it around the read the same way */
	evbuffer_unfreeze(in, 0);
	int nv = evbuffer_reserve_space(in, (ev_ssize_t)want, v, 2);
	if (nv <= 0) {
		evbuffer_freeze(in, 0);
		bulk_stop(c); /* the bufferevent reads instead */
		return;
	}
	struct iovec io[2];
	for (int i = 0; i < nv; i++) {
		io[i].iov_base = v[i].iov_base;
		io[i].iov_len = v[i].iov_len;
	}
	size_t cap = 0;
	for (int i = 0; i < nv; i++)
		cap += io[i].iov_len;
	if (cap > want) { /* never read past the run: what follows is the bufferevent's */
		size_t left = want;
		for (int i = 0; i < nv; i++) {
			if (io[i].iov_len > left)
				io[i].iov_len = left;
			left -= io[i].iov_len;
		}
	}
	ssize_t n = readv(fd, io, nv);
	if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
		evbuffer_commit_space(in, v, 0);
		evbuffer_freeze(in, 0);
		return;
	}
	if (n <= 0) {
		evbuffer_commit_space(in, v, 0);
		evbuffer_freeze(in, 0);
		LOG_W("upstream_closed_mid_response", "conn=%llu peer=%s bytes_left=%zu error=\"%s\"",
		      (unsigned long long)c->id, c->peer, rx->left,
		      n == 0 ? "end of stream" : strerror(errno));
		c->ops->close(c, PROXY_CLOSE_UPSTREAM_MID_RESPONSE);
		return;
	}
	size_t got = (size_t)n;
	for (int i = 0; i < nv; i++) {
		size_t k = got < io[i].iov_len ? got : io[i].iov_len;
		v[i].iov_len = k;
		got -= k;
	}
	evbuffer_commit_space(in, v, nv);
	evbuffer_freeze(in, 0);
	c->ops->upstream_frames(c);
}

/* Copying a long run from a plaintext upstream: read it here (see BULK_READ). */
static void bulk_start(struct proxy_conn *c)
{
	struct proxy_rx *rx = &c->rx;
	if (rx->bulk || c->srv->upstream_tls || !c->upstream || !c->upstream_up ||
	    c->upstream_paused || rx->opaque < 4 * COALESCE || c->state == PROXY_CONN_CLOSING)
		return;
	if (!rx->ev_bulk)
		rx->ev_bulk = event_new(c->srv->base, bufferevent_getfd(c->upstream),
					EV_READ | EV_PERSIST, bulk_cb, c);
	if (!rx->ev_bulk)
		return;
	bufferevent_disable(c->upstream, EV_READ);
	rx->bulk = true;
	event_add(rx->ev_bulk, NULL);
}

/* ---- the pump --------------------------------------------------------------- */

int proxy_rx_pump(struct proxy_conn *c)
{
	struct proxy_rx *rx = &c->rx;
	if (rx->state == PROXY_RX_SPLICE) {
		int rc = splice_pump(c, rx);
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
				if (splice_possible(c, rx) && splice_setup(c, rx) == 0) {
					rx->wait_drain = false;
					int rc = splice_begin(c, rx);
					if (rc != 1)
						return rc;
					continue;
				}
				splice_wait_end(c, rx);
				if (!splice_wait_drain(c, rx))
					bulk_start(c); /* no splice (TLS, or queued): copy in bulk */
				return 0;
			}
			/* copying: move record bytes in runs of COALESCE at least (or
			 * the rest of the run), not a few KiB per wake-up — each move is
			 * a write (a TLS record) and two epoll_ctl on the client side;
			 * but in a clamped partition's kept batches what is here goes at
			 * once, so that the batches after it are spliced (cl_peek_kept) */
			if (avail < COALESCE && avail < rx->opaque && !st_paused(c, rx) &&
			    !(rx->clamp && splice_run_len(c, rx) >= SPLICE_MIN && !c->srv->client_tls &&
			      !c->srv->upstream_tls))
				return 0;
			size_t n = avail < rx->opaque ? avail : rx->opaque;
			rx_move(c, in, n);
			rx->opaque -= n;
			rx->left -= n;
			continue;
		}
		bulk_stop(c); /* the run is over: structure follows, the bufferevent reads it */
		if (!rx->scan) {
			rx->opaque = rx->left;
			continue;
		}
		if (rx->cl_left > 0) {
			if (avail == 0 && cl_peek_kept(c))
				continue; /* a kept batch: an opaque run, spliced when it can be */
			if (cl_records(c, in) == 0)
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
					return rx_bad(c, "tail", CODEC_ERR_LIMIT);
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
				return rx_bad(c, codec_stream_stage_str(rx->fs.stage), err);
			if (look > (size_t)c->srv->conf->max_frame_bytes)
				return rx_bad(c, codec_stream_stage_str(rx->fs.stage), CODEC_ERR_LIMIT);
			return 0;
		}
		if (err != CODEC_OK || used + records > rx->left)
			return rx_bad(c, codec_stream_stage_str(rx->fs.stage),
				      err != CODEC_OK ? err : CODEC_ERR_BAD_MSG);
		if (rx->clamp && saved.stage == CODEC_STREAM_PARTITION) {
			int rc = cl_partition(c, in, &saved, used, records);
			if (rc <= 0)
				return rc;
			continue;
		}
		if (rx->clamp && saved.stage == CODEC_STREAM_PART_END && rx->cl_part) {
			const uint8_t *id;
			const char *topic = cl_topic(rx, &id);
			proxy_clamp_stream_partition_end(c, topic, id, rx->cl_hw, rx->cl_end, rx->cl_keep_below);
			rx->cl_part = false;
		}
		if (rx->clamp && saved.stage == CODEC_STREAM_PART_END && rx->cl_owed > 0) {
			if (cl_part_end(c, in, used) < 0)
				return -1;
			continue;
		}
		if (rx->clamp && saved.stage == CODEC_STREAM_TOPIC)
			cl_topic_unit(rx, in);
		rx_move(c, in, used);
		rx->left -= used;
		rx->opaque = records;
	}
}

void proxy_rx_client_gone(struct proxy_conn *c)
{
	struct proxy_rx *rx = &c->rx;
	if (rx->state == PROXY_RX_SPLICE) {
		splice_stop(c, rx);
		pipe_discard(rx);
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
	st_events_free(&c->rx);
	st_events_free(&c->tx);
	pipe_discard(&c->rx);
	pipe_discard(&c->tx);
	if (c->tx.req) {
		codec_produce_request_free(c->tx.req);
		free(c->tx.req);
		c->tx.req = NULL;
	}
}

/* ---- Produce requests (client → broker) ----------------------------------- */

int proxy_tx_start(struct proxy_conn *c, size_t len)
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
	stream_metrics_init();
	metric_add(m_streamed, 1);
	proxy_request_count(c, len, true);
	if (h.api_version == CODEC_PRODUCE_V14) {
		unsigned char *p = evbuffer_pullup(in, 8); /* v14 is v13 on the wire */
		if (!p)
			return -1;
		p[6] = 0;
		p[7] = 13;
	}
	struct proxy_rx *tx = &c->tx;
	tx->req = calloc(1, sizeof(*tx->req));
	if (!tx->req)
		return -1;
	tx->e = NULL;
	tx->left = tx->frame = len + 4;
	tx->opaque = 4 + h.len; /* size prefix and request header as they are */
	tx->scan = true;
	tx->client_version = h.api_version;
	tx->correlation_id = h.correlation_id;
	codec_produce_stream_init(&tx->ps, wire);
	st_set_state(c, tx, PROXY_RX_STREAM);
	return 1;
}

/* Record what a Produce unit said (before its bytes move on). */
static int tx_unit(struct proxy_conn *c, struct proxy_rx *tx, const struct codec_iov *iov, int niov)
{
	const struct codec_produce_stream *ps = &tx->ps;
	struct codec_produce_request *req = tx->req;
	switch (ps->unit) {
	case CODEC_STREAM_HEAD:
		req->acks = ps->acks;
		req->timeout_ms = ps->timeout_ms;
		if (ps->acks == 0) {
			proxy_request_count_acks0();
			return 0; /* no response will come: no FIFO slot */
		}
		tx->e = proxy_entry_new(c, PROXY_ENTRY_KAFKA);
		if (!tx->e)
			return -1;
		tx->e->correlation_id = tx->correlation_id;
		tx->e->api_key = CODEC_API_PRODUCE;
		tx->e->client_version = tx->client_version;
		tx->e->api_version = ps->version;
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
static int tx_finish(struct proxy_conn *c)
{
	struct proxy_rx *tx = &c->tx;
	int rc = 1;
	if (tx->e) {
		tx->e->produce = proxy_produce_sum_new(tx->req);
		if (!tx->e->produce)
			rc = -1;
	}
	codec_produce_request_free(tx->req);
	free(tx->req);
	tx->req = NULL;
	tx->e = NULL;
	st_set_state(c, tx, PROXY_RX_FRAME);
	if (rc < 0) {
		c->ops->close(c, PROXY_CLOSE_OUT_OF_MEMORY);
		return rc;
	}
	c->srv->conn_progress(c->srv, c); /* shutdown waits for whole requests */
	return c->state == PROXY_CONN_CLOSING ? -1 : rc;
}

static int tx_bad(struct proxy_conn *c, enum codec_err err)
{
	uint64_t swallowed = 0;
	if (proxy_log_allow(&proxy_malformed_log, mirror_now_ms(), &swallowed))
		LOG_W("request_malformed", "conn=%llu peer=%s api=Produce streamed=1 where=%s error=%s "
		      "offset=%zu suppressed=%llu", (unsigned long long)c->id, c->peer,
		      codec_stream_stage_str(c->tx.ps.stage), codec_err_str(err),
		      c->tx.frame - c->tx.left + codec_err_offset(), (unsigned long long)swallowed);
	c->ops->close(c, PROXY_CLOSE_CLIENT_FRAME_MALFORMED);
	return -1;
}

int proxy_tx_pump(struct proxy_conn *c)
{
	struct proxy_rx *tx = &c->tx;
	if (tx->state == PROXY_RX_SPLICE) {
		int rc = splice_pump(c, tx);
		if (rc != 1)
			return rc;
	}
	if (tx->state != PROXY_RX_STREAM || !c->client || !c->upstream)
		return 1;
	struct evbuffer *in = bufferevent_get_input(c->client);
	struct evbuffer *out = bufferevent_get_output(c->upstream);
	for (;;) {
		if (c->state == PROXY_CONN_CLOSING)
			return -1;
		if (tx->left == 0)
			return tx_finish(c);
		size_t avail = evbuffer_get_length(in);
		if (tx->opaque > 0) {
			if (avail == 0) {
				if (splice_possible(c, tx) && splice_setup(c, tx) == 0) {
					tx->wait_drain = false;
					int rc = splice_begin(c, tx);
					if (rc != 1)
						return rc;
					continue;
				}
				splice_wait_end(c, tx);
				splice_wait_drain(c, tx);
				return 0;
			}
			size_t n = avail < tx->opaque ? avail : tx->opaque;
			evbuffer_remove_buffer(in, out, n);
			tx->opaque -= n;
			tx->left -= n;
			continue;
		}
		if (tx->ps.stage == CODEC_STREAM_TAIL) {
			tx->opaque = tx->left; /* top-level tags: not ours to read */
			continue;
		}
		size_t look = avail < tx->left ? avail : tx->left;
		struct codec_iov iov[PROXY_MAX_IOV];
		int niov = proxy_buf_iov(in, 0, look, iov, PROXY_MAX_IOV);
		size_t used = 0, records = 0;
		enum codec_err err = niov < 0 ? CODEC_ERR_NOMEM
					      : codec_produce_stream_next(&tx->ps, iov, niov, &used, &records);
		if (err == CODEC_ERR_UNDERFLOW) {
			if (look == tx->left || look > (size_t)c->srv->conf->max_frame_bytes)
				return tx_bad(c, look == tx->left ? err : CODEC_ERR_LIMIT);
			return 0;
		}
		if (err != CODEC_OK || used + records > tx->left)
			return tx_bad(c, err != CODEC_OK ? err : CODEC_ERR_BAD_MSG);
		if (tx_unit(c, tx, iov, niov) < 0) {
			c->ops->close(c, PROXY_CLOSE_OUT_OF_MEMORY);
			return -1;
		}
		evbuffer_remove_buffer(in, out, used);
		tx->left -= used;
		tx->opaque = records;
	}
}
