/*
 * splice.c — record bytes moved socket → pipe → socket with splice(2),
 * either direction, and the bulk-read copying path when splice cannot run.
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

/* ---- splice (either direction) ---------------------------------------------- */

static void splice_from_upstream_cb(evutil_socket_t fd, short what, void *arg);
static void splice_from_client_cb(evutil_socket_t fd, short what, void *arg);

/* The bufferevent a direction reads from, and the one it writes to. */
static struct bufferevent *st_src(struct proxy_conn *c, struct proxy_stream_dir *st)
{
	return st == &c->from_upstream ? c->upstream : c->client;
}

static struct bufferevent *st_dst(struct proxy_conn *c, struct proxy_stream_dir *st)
{
	return st == &c->from_upstream ? c->client : c->upstream;
}

bool proxy_st_dir_paused(struct proxy_conn *c, struct proxy_stream_dir *st)
{
	return st == &c->from_upstream ? c->upstream_paused : c->client_paused;
}

/* Opaque bytes that may move in the kernel from here: the run, and in a
 * clamped partition its record bytes after it (kept batches go on spliced,
 * judged in the socket's buffer: proxy_st_cl_peek_kept). */
size_t proxy_st_splice_run_len(struct proxy_conn *c, const struct proxy_stream_dir *st)
{
	return st->opaque + (st == &c->from_upstream && st->clamp && !st->cl_drop ? st->cl_left : 0);
}

/*
 * The destination still has bytes to write (what was copied before): stop
 * reading the source until they are written, then splice the rest — else a
 * steady sender keeps the source's input non-empty and every byte is copied.
 */
bool proxy_st_splice_wait_drain(struct proxy_conn *c, struct proxy_stream_dir *st)
{
	if (c->srv->client_tls || c->srv->upstream_tls || !c->client || !c->upstream ||
	    !c->upstream_up || proxy_st_splice_run_len(c, st) < 4 * SPLICE_MIN || c->state == PROXY_CONN_CLOSING)
		return false;
	if (st == &c->from_upstream && (!st->e || st->e != TAILQ_FIRST(&c->fifo) || st->e->out))
		return false;
	if (evbuffer_get_length(bufferevent_get_input(st_src(c, st))) != 0)
		return false;
	bufferevent_disable(st_src(c, st), EV_READ);
	st->wait_drain = true;
	return true;
}

/* Reads back on after a wait for the destination (unless paused meanwhile). */
void proxy_st_splice_wait_end(struct proxy_conn *c, struct proxy_stream_dir *st)
{
	if (!st->wait_drain)
		return;
	st->wait_drain = false;
	struct bufferevent *src = st_src(c, st);
	if (src && !proxy_st_dir_paused(c, st) && c->state != PROXY_CONN_CLOSING && st->state != PROXY_DIR_SPLICE)
		bufferevent_enable(src, EV_READ);
}

/* Whether the opaque bytes still to come can move in the kernel now: both
 * sides plaintext and connected, nothing buffered in user space on either
 * side (so nothing is reordered), and enough bytes to be worth it. */
bool proxy_st_splice_possible(struct proxy_conn *c, struct proxy_stream_dir *st)
{
	if (c->srv->client_tls || c->srv->upstream_tls || !c->client || !c->upstream ||
	    !c->upstream_up || proxy_st_splice_run_len(c, st) < SPLICE_MIN || c->state == PROXY_CONN_CLOSING)
		return false;
	if (st == &c->from_upstream && (!st->e || st->e != TAILQ_FIRST(&c->fifo) || st->e->out))
		return false;
	return evbuffer_get_length(bufferevent_get_output(st_dst(c, st))) == 0 &&
	       evbuffer_get_length(bufferevent_get_input(st_src(c, st))) == 0;
}

int proxy_st_splice_setup(struct proxy_conn *c, struct proxy_stream_dir *st)
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
	event_callback_fn cb = st == &c->from_upstream ? splice_from_upstream_cb : splice_from_client_cb;
	if (!st->ev_read)
		st->ev_read = event_new(base, bufferevent_getfd(st_src(c, st)), EV_READ | EV_PERSIST,
					cb, c);
	if (!st->ev_write)
		st->ev_write = event_new(base, bufferevent_getfd(st_dst(c, st)), EV_WRITE | EV_PERSIST,
					 cb, c);
	return st->ev_read && st->ev_write ? 0 : -1;
}

/* Leave SPLICE: our events off, the source bufferevent reads again. */
void proxy_st_splice_stop(struct proxy_conn *c, struct proxy_stream_dir *st)
{
	if (st->ev_read)
		event_del(st->ev_read);
	if (st->ev_write)
		event_del(st->ev_write);
	proxy_st_dir_set_state(c, st, PROXY_DIR_STREAM);
	struct bufferevent *src = st_src(c, st);
	if (src && !proxy_st_dir_paused(c, st) && c->state != PROXY_CONN_CLOSING)
		bufferevent_enable(src, EV_READ);
}

/* Drop whatever the pipe holds (its reader went away). */
void proxy_st_pipe_discard(struct proxy_stream_dir *st)
{
	if (st->pipe[0] >= 0) {
		close(st->pipe[0]);
		close(st->pipe[1]);
	}
	st->pipe[0] = st->pipe[1] = -1;
	st->in_pipe = 0;
}

void proxy_st_dir_events_free(struct proxy_stream_dir *st)
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
int proxy_st_splice_pump(struct proxy_conn *c, struct proxy_stream_dir *st)
{
	bool from_upstream = st == &c->from_upstream;
	int src = bufferevent_getfd(st_src(c, st)), dst = bufferevent_getfd(st_dst(c, st));
	for (;;) {
		/* at a kept batch's end: the next one judged in the kernel's buffer */
		bool progress = from_upstream && st->opaque == 0 && proxy_st_cl_peek_kept(c);
		if (st->opaque > 0 && st->in_pipe < st->pipe_cap) {
			size_t want = st->opaque < st->pipe_cap - st->in_pipe ? st->opaque
									     : st->pipe_cap - st->in_pipe;
			ssize_t n = splice(src, NULL, st->pipe[1], NULL, want,
					   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0) {
				st->in_pipe += (size_t)n;
				st->opaque -= (size_t)n;
				st->left -= (size_t)n;
				metric_add(proxy_st_m_spliced, (double)n);
				progress = true;
			} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
				LOG_W(from_upstream ? "upstream_closed_mid_response" : "client_closed_mid_request",
				      "conn=%llu peer=%s bytes_left=%zu error=\"%s\"", (unsigned long long)c->id,
				      c->peer, st->left, n == 0 ? "end of stream" : strerror(errno));
				c->ops->close(c, from_upstream ? PROXY_CLOSE_UPSTREAM_MID_RESPONSE
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
				if (!from_upstream) {
					/* the broker went away with a request half sent */
					LOG_W("upstream_closed_mid_request", "conn=%llu peer=%s error=\"%s\"",
					      (unsigned long long)c->id, c->peer, strerror(errno));
					c->ops->close(c, PROXY_CLOSE_UPSTREAM_MID_REQUEST);
					return -1;
				}
				/* the client went away: the rest is read and dropped */
				proxy_st_splice_stop(c, st);
				proxy_st_pipe_discard(st);
				c->ops->client_gone(c, PROXY_CLOSE_CLIENT_ERROR);
				return -1;
			}
		}
		if (!progress)
			break;
	}
	if (st->opaque == 0 && st->in_pipe == 0) {
		proxy_st_splice_stop(c, st);
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

/* Enter SPLICE for `st` and run it; as proxy_st_splice_pump(). */
int proxy_st_splice_begin(struct proxy_conn *c, struct proxy_stream_dir *st)
{
	bufferevent_disable(st_src(c, st), EV_READ);
	proxy_st_dir_set_state(c, st, PROXY_DIR_SPLICE);
	return proxy_st_splice_pump(c, st);
}

static void splice_run(struct proxy_conn *c, struct proxy_stream_dir *st)
{
	if (c->state == PROXY_CONN_CLOSING || st->state != PROXY_DIR_SPLICE)
		return;
	if (proxy_st_splice_pump(c, st) == 1) {
		/* the opaque run is over: go on with the frame and what follows it */
		if (st == &c->from_upstream)
			c->ops->upstream_frames(c);
		else
			c->ops->client_frames(c);
	}
}

static void splice_from_upstream_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_conn *c = arg;
	(void)fd;
	(void)what;
	splice_run(c, &c->from_upstream);
}

static void splice_from_client_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_conn *c = arg;
	(void)fd;
	(void)what;
	splice_run(c, &c->from_client);
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

void proxy_st_bulk_stop(struct proxy_conn *c)
{
	struct proxy_stream_dir *resp = &c->from_upstream;
	if (!resp->bulk)
		return;
	resp->bulk = false;
	event_del(resp->ev_bulk);
	if (c->upstream && !c->upstream_paused && c->state != PROXY_CONN_CLOSING &&
	    resp->state != PROXY_DIR_SPLICE)
		bufferevent_enable(c->upstream, EV_READ);
}

static void bulk_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_conn *c = arg;
	struct proxy_stream_dir *resp = &c->from_upstream;
	(void)what;
	if (c->state == PROXY_CONN_CLOSING || !resp->bulk)
		return;
	if (c->upstream_paused || resp->state != PROXY_DIR_STREAM || resp->opaque == 0) {
		proxy_st_bulk_stop(c);
		return;
	}
	struct evbuffer *in = bufferevent_get_input(c->upstream);
	size_t want = resp->opaque < BULK_READ ? resp->opaque : BULK_READ;
	struct evbuffer_iovec v[2];
	/* a socket bufferevent freezes its input's end; libevent's own reads
	 * unfreeze it around the read the same way */
	evbuffer_unfreeze(in, 0);
	int nv = evbuffer_reserve_space(in, (ev_ssize_t)want, v, 2);
	if (nv <= 0) {
		evbuffer_freeze(in, 0);
		proxy_st_bulk_stop(c); /* the bufferevent reads instead */
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
		      (unsigned long long)c->id, c->peer, resp->left,
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
void proxy_st_bulk_start(struct proxy_conn *c)
{
	struct proxy_stream_dir *resp = &c->from_upstream;
	if (resp->bulk || c->srv->upstream_tls || !c->upstream || !c->upstream_up ||
	    c->upstream_paused || resp->opaque < 4 * COALESCE || c->state == PROXY_CONN_CLOSING)
		return;
	if (!resp->ev_bulk)
		resp->ev_bulk = event_new(c->srv->base, bufferevent_getfd(c->upstream),
					EV_READ | EV_PERSIST, bulk_cb, c);
	if (!resp->ev_bulk)
		return;
	bufferevent_disable(c->upstream, EV_READ);
	resp->bulk = true;
	event_add(resp->ev_bulk, NULL);
}
