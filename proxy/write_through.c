/*
 * write_through.c — a frame written to the socket at once when nothing waits
 * before it.
 *
 * A frame moved into a bufferevent's output is written only once the next
 * epoll_wait reports the socket writable: libevent adds EPOLLOUT, waits, writes
 * and removes EPOLLOUT — four syscalls and a loop iteration for every frame
 * forwarded (docs/benchmarks.md, "the pass-through hop"). When the output is
 * empty, nothing can be before the frame on that socket, so it is written here
 * with one writev and only what the socket did not take goes to the output,
 * behind which everything else keeps its order.
 *
 * Only where the bufferevent callbacks have nothing to do for a write: the
 * pair OPEN (DRAINING and HALF_CLOSED wait for the output callbacks to close
 * or linger), the direction's frames handled whole (a streamed or spliced
 * frame waits for an empty output, stream.c, splice.c), the side plain TCP
 * (a TLS side's bytes must go through OpenSSL) and, upstream, connected.
 * Loop thread.
 */
#include "proxy/datapath.h"

static bool may_write_through(const struct proxy_conn *c, bool to_client)
{
	if (c->state != PROXY_CONN_OPEN)
		return false;
	if (to_client)
		return c->client && c->client_plain && c->from_upstream.state == PROXY_DIR_FRAME;
	return c->upstream && c->upstream_plain && c->upstream_up && c->from_client.state == PROXY_DIR_FRAME;
}

void proxy_write_through(struct proxy_conn *c, bool to_client, struct evbuffer *src, size_t n)
{
	struct bufferevent *bev = to_client ? c->client : c->upstream;
	struct evbuffer *out = bufferevent_get_output(bev);
	if (n && may_write_through(c, to_client) && evbuffer_get_length(out) == 0) {
		evutil_socket_t fd = bufferevent_getfd(bev);
		/* -1 (EAGAIN, or an error the bufferevent meets on its own write): all to the output */
		int w = fd >= 0 ? evbuffer_write_atmost(src, fd, (ev_ssize_t)n) : -1;
		if (w > 0) {
			n -= (size_t)w;
			if (to_client)
				c->last_io_ms = mirror_now_ms();
		}
	}
	if (n)
		evbuffer_remove_buffer(src, out, n);
}
