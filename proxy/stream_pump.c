/*
 * stream_pump.c — the one loop that moves a streamed frame, either
 * direction: a response broker → client (c->from_upstream, stream.c) or a
 * Produce request client → broker (c->from_client, stream_request.c).
 *
 * A frame alternates between structure (units the direction parses: Fetch
 * partition headers, Produce batch headers, tail tags) and opaque runs
 * (records, never looked at). An opaque run moves as the bytes come: from
 * the source's input to the destination when they are in user space, or
 * socket → pipe → socket with splice(2) when nothing of the frame is
 * buffered on either side (splice.c). What differs between the directions
 * — where the bytes go, when a copy waits for more, what a unit is, what
 * ends the frame — is a small table of pieces, one per direction.
 * Loop thread.
 */
#include "proxy/datapath.h"
#include "proxy/stream.h"

/* One direction's pieces of the pump. */
struct pump_dir {
	/* The source's input; NULL when there is nothing to pump (a side gone). */
	struct evbuffer *(*input)(struct proxy_conn *c);
	/* The frame is through: 1, or -1 when the connection is closing. */
	int (*finish)(struct proxy_conn *c);
	/* Copying an opaque run, `avail` bytes here: wait for more (NULL: never). */
	bool (*copy_later)(struct proxy_conn *c, size_t avail);
	/* Move `n` opaque bytes from the head of the source's input on. */
	void (*copy)(struct proxy_conn *c, struct evbuffer *in, size_t n);
	/* The input is empty and no splice can run (NULL: nothing to do). */
	void (*copy_waits)(struct proxy_conn *c);
	/* The structure after a run: 1 go on, 0 wait for bytes, -1 closing. */
	int (*unit)(struct proxy_conn *c, struct evbuffer *in, size_t avail);
};

/* A response has its source (the client may be gone: it is dropped). */
static struct evbuffer *response_input(struct proxy_conn *c)
{
	return c->upstream ? bufferevent_get_input(c->upstream) : NULL;
}

/* A request needs both sides. */
static struct evbuffer *request_input(struct proxy_conn *c)
{
	return c->client && c->upstream ? bufferevent_get_input(c->client) : NULL;
}

static const struct pump_dir pump_dirs[2] = {
	/* from the client: a Produce request */
	[false] = { request_input, proxy_st_request_finish, NULL, proxy_st_request_copy, NULL,
		    proxy_st_request_unit },
	/* from upstream: a response; copies coalesce, long runs read in bulk (splice.c) */
	[true] = { response_input, proxy_st_response_finish, proxy_st_response_copy_later,
		   proxy_st_response_move, proxy_st_bulk_start, proxy_st_response_unit },
};

int proxy_stream_pump(struct proxy_conn *c, bool from_upstream)
{
	struct proxy_stream_dir *st = from_upstream ? &c->from_upstream : &c->from_client;
	const struct pump_dir *d = &pump_dirs[from_upstream];
	if (st->state == PROXY_DIR_SPLICE) {
		int rc = proxy_st_splice_pump(c, st);
		if (rc != 1)
			return rc;
	}
	struct evbuffer *in = st->state == PROXY_DIR_STREAM ? d->input(c) : NULL;
	if (!in)
		return 1;
	for (;;) {
		if (c->state == PROXY_CONN_CLOSING)
			return -1;
		if (st->left == 0)
			return d->finish(c);
		size_t avail = evbuffer_get_length(in);
		if (st->opaque == 0) {
			int rc = d->unit(c, in, avail);
			if (rc <= 0)
				return rc;
			continue;
		}
		if (avail == 0) {
			if (proxy_st_splice_possible(c, st) && proxy_st_splice_setup(c, st) == 0) {
				st->wait_drain = false;
				int rc = proxy_st_splice_begin(c, st);
				if (rc != 1)
					return rc;
				continue;
			}
			proxy_st_splice_wait_end(c, st);
			if (!proxy_st_splice_wait_drain(c, st) && d->copy_waits)
				d->copy_waits(c); /* no splice (TLS, or queued): copy in bulk */
			return 0;
		}
		if (d->copy_later && d->copy_later(c, avail))
			return 0;
		size_t n = avail < st->opaque ? avail : st->opaque;
		d->copy(c, in, n);
		st->opaque -= n;
		st->left -= n;
	}
}
