/*
 * Framing, one loop for both directions of a pair, and its backpressure.
 * Frames read from one side are forwarded to the other: whole (a request or
 * response syncgate reads, up to limits.max_frame_bytes) or, above the
 * direction's streaming size, as they arrive (proxy_stream_pump(),
 * stream_pump.c). A frame that is no Kafka frame is refused with a clear
 * log line and the pair closes.
 *
 * Responses: frames up to PROXY_STREAM_MIN, and frames syncgate rewrites,
 * arrive whole (limits.max_frame_bytes) and are handled by response.c;
 * larger frames it does not rewrite stream through (stream.c) with no size
 * cap. Requests arrive whole (limits.max_frame_bytes), but for Produce
 * requests above PROXY_STREAM_MIN_REQUEST, which stream (stream_request.c).
 * Loop thread.
 */
#include <string.h>

#include "proxy/conn.h"
#include "proxy/stream.h"

/* Buffered bytes past which the reading side is paused (libevent watermarks
 * are only hints: these marks are our own caps on what one pair buffers). A
 * streamed response never has more than this (plus one read) in user space. */
#define FLOW_HIGH (1u << 20)
#define FLOW_LOW  (256u << 10)
/* Requests awaiting their response per connection: past it the client is not
 * read. Held bytes are only known once responses arrive, so without this a
 * client pipelining gated Produce requests could grow what is held without
 * bound (librdkafka allows 1,000,000 in flight when not idempotent). */
#define FIFO_HIGH 1024

void proxy_conn_update_flow(struct proxy_conn *c)
{
	const struct conf *cf = c->srv->conf;
	if (c->state != PROXY_CONN_OPEN && c->state != PROXY_CONN_CONNECTING &&
	    c->state != PROXY_CONN_HALF_CLOSED)
		return;
	size_t up_out = evbuffer_get_length(bufferevent_get_output(c->upstream));
	/* what the client has not taken yet: its output and responses queued behind the head */
	size_t cl_out = evbuffer_get_length(bufferevent_get_output(c->client)) + c->queued_bytes;
	bool over_held = c->held_bytes + c->queued_bytes > (size_t)cf->max_held_bytes_per_connection ||
			 c->srv->held_bytes + c->srv->queued_bytes > (size_t)cf->max_held_bytes;
	/* HALF_CLOSED: the client is not read any more, only the broker is paced;
	 * pid_wait: a Produce waits unread for syncgate's own InitProducerId (pidmap.c) */
	bool pause_client = c->state != PROXY_CONN_HALF_CLOSED &&
			    (up_out > FLOW_HIGH || over_held || c->nfifo >= FIFO_HIGH || c->pid_wait ||
			     (c->client_paused && up_out > FLOW_LOW));
	if (pause_client != c->client_paused) {
		c->client_paused = pause_client;
		/* SPLICE: our own events read the client, the pipe is the window */
		if (c->from_client.state != PROXY_DIR_SPLICE) {
			if (pause_client)
				bufferevent_disable(c->client, EV_READ);
			else
				bufferevent_enable(c->client, EV_READ);
		}
		LOG_D("backpressure", "conn=%llu side=client paused=%d upstream_out=%zu held=%zu "
		      "queued=%zu in_flight=%zu", (unsigned long long)c->id, pause_client, up_out,
		      c->held_bytes, c->queued_bytes, c->nfifo);
		/* resumed (the release path calls us): a frame may already wait in
		 * the input, and no read event will say so. Only on the transition:
		 * a trigger on every call would spin while a streamed request
		 * waits for the rest of a unit. */
		if (!pause_client && evbuffer_get_length(bufferevent_get_input(c->client)) >= 4)
			bufferevent_trigger(c->client, EV_READ, BEV_OPT_DEFER_CALLBACKS);
	}
	bool pause_up = cl_out > FLOW_HIGH || (c->upstream_paused && cl_out > FLOW_LOW);
	if (pause_up != c->upstream_paused) {
		c->upstream_paused = pause_up;
		LOG_D("backpressure", "conn=%llu side=upstream paused=%d client_out=%zu",
		      (unsigned long long)c->id, pause_up, cl_out);
		/* SPLICE: our own events read upstream, the pipe is the window */
		if (c->from_upstream.state != PROXY_DIR_SPLICE) {
			if (pause_up)
				bufferevent_disable(c->upstream, EV_READ);
			else
				bufferevent_enable(c->upstream, EV_READ);
		}
		/* bytes may already wait in the input: no read event will say so */
		if (!pause_up && evbuffer_get_length(bufferevent_get_input(c->upstream)) > 0)
			bufferevent_trigger(c->upstream, EV_READ, BEV_OPT_DEFER_CALLBACKS);
	}
}

static const char *frame_hint(const uint8_t b[4])
{
	if (b[0] == 0x16 && b[1] == 0x03)
		return "looks like a TLS ClientHello: is the client using TLS on a plaintext port?";
	if (!memcmp(b, "GET ", 4) || !memcmp(b, "POST", 4) || !memcmp(b, "HEAD", 4) ||
	    !memcmp(b, "PUT ", 4))
		return "looks like HTTP: this is a Kafka port";
	return "oversized or corrupt length prefix";
}

/* The body size in a 4-byte prefix; -1 when negative (never a Kafka frame). */
static int32_t frame_size(const uint8_t b[4])
{
	return (int32_t)((uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]);
}

static void frame_refused(struct proxy_conn *c, const char *side, int32_t size, const uint8_t b[4],
			  const char *why)
{
	metric_add(proxy_conn_m_rejected_frames, 1);
	LOG_W("frame_refused", "conn=%llu peer=%s side=%s size=%d max_frame_bytes=%lld hint=\"%s\"",
	      (unsigned long long)c->id, c->peer, side, size,
	      (long long)c->srv->conf->max_frame_bytes, why ? why : frame_hint(b));
}

/* A direction of the loop: where it reads, when it may, and how it streams. */
struct frame_dir {
	const char *side;                       /* for frame_refused: "client", "upstream" */
	size_t stream_min;                      /* frames above this may stream */
	size_t max_from;                        /* limits.max_frame_bytes applies above this size */
	struct evbuffer *(*input)(struct proxy_conn *c);
	bool (*may_read)(const struct proxy_conn *c, bool all);
	bool from_upstream;                     /* the direction proxy_stream_pump() moves */
	int (*stream_start)(struct proxy_conn *c, struct evbuffer *in, size_t size); /* 1, 0, 2 whole, -1 */
	int (*handle)(struct proxy_conn *c, struct evbuffer *in, size_t size);      /* 0, -1 */
	enum proxy_close_cause negative, malformed, refused;
	bool count_malformed;                   /* a frame handle() refuses counts in m_rejected_frames */
	const char *refused_hint;               /* NULL: frame_hint() */
};

enum frames_end {
	FRAMES_DONE,        /* no whole frame left, or reading stopped (paused, state) */
	FRAMES_PUMP_WAITS,  /* a streaming frame waits for bytes, the peer or the kernel */
	FRAMES_CLOSED,      /* the connection is closing */
};

static struct evbuffer *client_input(struct proxy_conn *c)
{
	return bufferevent_get_input(c->client);
}

static struct evbuffer *upstream_input(struct proxy_conn *c)
{
	return bufferevent_get_input(c->upstream);
}

/* While not paused, or all of them (`all`: the client closed, nothing more will come);
 * never while a Produce waits for its producer id (pidmap.c: the frame stays at the head). */
static bool client_may_read(const struct proxy_conn *c, bool all)
{
	return c->client && (all || !c->client_paused) && !c->pid_wait &&
	       (c->state == PROXY_CONN_OPEN || c->state == PROXY_CONN_CONNECTING || c->state == PROXY_CONN_LINGERING);
}

static bool upstream_may_read(const struct proxy_conn *c, bool all)
{
	(void)all;
	return c->upstream && !c->upstream_paused &&
	       (c->state == PROXY_CONN_OPEN || c->state == PROXY_CONN_CONNECTING ||
		c->state == PROXY_CONN_LINGERING || c->state == PROXY_CONN_HALF_CLOSED);
}

/* A lingering connection (its client gone) forwards what is left whole. */
static int request_stream_start(struct proxy_conn *c, struct evbuffer *in, size_t size)
{
	(void)in;
	return c->state == PROXY_CONN_LINGERING ? 2 : proxy_stream_request_start(c, size);
}

/* Requests, client → broker: a Produce above PROXY_STREAM_MIN_REQUEST streams. */
static const struct frame_dir to_broker = {
	"client", PROXY_STREAM_MIN_REQUEST, 0, client_input, client_may_read, false,
	request_stream_start, proxy_request_handle, PROXY_CLOSE_CLIENT_FRAME_REFUSED,
	PROXY_CLOSE_CLIENT_FRAME_MALFORMED, PROXY_CLOSE_CLIENT_FRAME_REFUSED, true, NULL,
};

/* Responses, broker → client: above PROXY_STREAM_MIN they stream unless rewritten whole. */
static const struct frame_dir to_client = {
	"upstream", PROXY_STREAM_MIN, PROXY_STREAM_MIN, upstream_input, upstream_may_read, true,
	proxy_response_stream_start, proxy_response_handle, PROXY_CLOSE_UPSTREAM_FRAME_MALFORMED,
	PROXY_CLOSE_UPSTREAM_FRAME_MALFORMED, PROXY_CLOSE_UPSTREAM_FRAME_REFUSED, false,
	"a response syncgate rewrites, above limits.max_frame_bytes",
};

/* Forward the frames waiting from direction `d`'s side. The flow (backpressure)
 * is re-checked after each, unless `all` (the client closed). */
static enum frames_end frames(struct proxy_conn *c, const struct frame_dir *d, bool all)
{
	while (d->may_read(c, all)) {
		struct evbuffer *in = d->input(c);
		const struct proxy_stream_dir *st = d->from_upstream ? &c->from_upstream : &c->from_client;
		if (st->state != PROXY_DIR_FRAME) { /* a frame is streaming: pump it */
			int rc = proxy_stream_pump(c, d->from_upstream);
			if (rc < 0)
				return FRAMES_CLOSED;
			if (!all)
				proxy_conn_update_flow(c); /* the window: pause the sender past it */
			if (rc == 0)
				return FRAMES_PUMP_WAITS;
			continue;
		}
		size_t avail = evbuffer_get_length(in);
		if (avail < 4)
			break;
		uint8_t b[4];
		evbuffer_copyout(in, b, 4);
		int32_t size = frame_size(b);
		if (size < 0) {
			frame_refused(c, d->side, size, b, NULL);
			c->ops->close(c, d->negative);
			return FRAMES_CLOSED;
		}
		if ((size_t)size > d->stream_min) {
			int rc = d->stream_start(c, in, (size_t)size);
			if (rc < 0) {
				c->ops->close(c, d->malformed);
				return FRAMES_CLOSED;
			}
			if (rc == 0)
				break;
			if (rc == 1)
				continue;
		}
		if ((size_t)size > d->max_from && size > c->srv->conf->max_frame_bytes) {
			frame_refused(c, d->side, size, b, d->refused_hint);
			c->ops->close(c, d->refused);
			return FRAMES_CLOSED;
		}
		if (avail < (size_t)size + 4)
			break;
		if (d->handle(c, in, (size_t)size) < 0) {
			if (d->count_malformed)
				metric_add(proxy_conn_m_rejected_frames, 1);
			c->ops->close(c, d->malformed);
			return FRAMES_CLOSED;
		}
		if (!all)
			proxy_conn_update_flow(c);
	}
	return FRAMES_DONE;
}

/* The client's frames (`all`: it closed). -1 when the connection is closing. */
int proxy_conn_client_frames(struct proxy_conn *c, bool all)
{
	enum frames_end r = frames(c, &to_broker, all);
	return r == FRAMES_CLOSED || c->state == PROXY_CONN_CLOSING ? -1 : 0;
}

/*
 * Handle what the upstream input holds: the rest of a streamed response,
 * then frame after frame. A frame above PROXY_STREAM_MIN is streamed when
 * nothing in it is rewritten (no size cap); others wait until whole, up to
 * limits.max_frame_bytes.
 */
void proxy_conn_upstream_frames(struct proxy_conn *c)
{
	if (frames(c, &to_client, false) == FRAMES_DONE)
		proxy_conn_linger_check(c);
}
