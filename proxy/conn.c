/*
 * Connection pairs: accept, upstream connect, framing in both directions,
 * backpressure, and close. One client connection is paired 1:1 with one
 * upstream broker connection. Loop thread.
 *
 * Connection states (conn_set_state() is the only code that changes one,
 * and logs every transition at debug):
 *   CONNECTING → OPEN                 upstream connected (TLS handshake done)
 *   CONNECTING|OPEN|HALF_CLOSED → DRAINING
 *                                     upstream closed between frames: flush what the
 *                                     client is owed, then close
 *   CONNECTING|OPEN → HALF_CLOSED     plaintext client EOF (it shut its write side) with
 *                                     responses owed: deliver what it sent, keep writing
 *                                     every owed response to it, close once none is owed
 *                                     and all is written (no deadline but the broker's
 *                                     answers and the hold timers, as when OPEN)
 *   CONNECTING|OPEN|HALF_CLOSED → LINGERING
 *                                     client closed (EOF with nothing owed, TLS, an
 *                                     error, a write to it failed): deliver what it
 *                                     sent, read what it is owed and drop it
 *                                     (upstream.close_linger_ms), then close
 *   any → CLOSING                     done or an error (a refused frame, a broker gone
 *                                     mid-response): nothing moves any more; the pair is
 *                                     freed from close_ev, never inside one of its own
 *                                     callbacks (a caller up the stack may still hold it)
 *   OPEN → CLOSING (idle)             limits.client_idle_ms without client traffic while
 *                                     nothing is in flight (proxy_conn_busy() false)
 *
 * Responses: frames up to PROXY_STREAM_MIN, and frames syncgate rewrites,
 * arrive whole (limits.max_frame_bytes) and are handled by response.c;
 * larger frames it does not rewrite stream through (stream.c) with no size
 * cap. Requests arrive whole (limits.max_frame_bytes).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include <event2/bufferevent_ssl.h>
#include <event2/dns.h>
#include <openssl/err.h>

#include "proxy/datapath.h"
#include "proxy/security.h"

/* Buffered bytes past which the reading side is paused (libevent watermarks
 * are only hints: these marks are our own caps on what one pair buffers). A
 * streamed response never has more than this (plus one read) in user space. */
#define FLOW_HIGH (1u << 20)
#define FLOW_LOW  (256u << 10)
/* Response bytes moved through user space after which idle memory is given
 * back to the system (malloc_trim) once the process has nothing queued. */
#define TRIM_AFTER (64u << 20)
/* Requests awaiting their response per connection: past it the client is not
 * read. Held bytes are only known once responses arrive, so without this a
 * client pipelining gated Produce requests could grow what is held without
 * bound (librdkafka allows 1,000,000 in flight when not idempotent). */
#define FIFO_HIGH 1024
/* Most bytes one read or write call moves. */
#define SINGLE_IO_MAX (64u << 10)

static void client_read_cb(struct bufferevent *bev, void *arg);
static void upstream_read_cb(struct bufferevent *bev, void *arg);
static void client_write_cb(struct bufferevent *bev, void *arg);
static void upstream_write_cb(struct bufferevent *bev, void *arg);
static void client_event_cb(struct bufferevent *bev, short what, void *arg);
static void upstream_event_cb(struct bufferevent *bev, short what, void *arg);
static void conn_client_gone(struct proxy_conn *c, enum proxy_close_cause cause);
static void conn_upstream_frames(struct proxy_conn *c);
static void conn_client_frames(struct proxy_conn *c);

/* What the files below ask of a pair (proxy.h, struct proxy_conn_ops). */
static const struct proxy_conn_ops conn_ops = {
	.close = proxy_conn_close,
	.client_gone = conn_client_gone,
	.update_flow = proxy_conn_update_flow,
	.upstream_frames = conn_upstream_frames,
	.client_frames = conn_client_frames,
};

static struct metric *m_conns, *m_accepted, *m_rejected_frames, *m_connect_fail;
static struct metric *m_linger[2]; /* closes after a client left: delivered, expired */
static struct metric *m_idle_closed;
static struct metric *m_half_closed[2]; /* ends of HALF_CLOSED: delivered, client gone */
static struct metric *m_closes[PROXY_CLOSE_CAUSE_COUNT]; /* syncgate_connection_closes_total{cause} */
static struct proxy_log_limit idle_log; /* one client_idle_closed line a second */

static void conn_metrics_init(void)
{
	if (m_conns)
		return;
	m_conns = metric_get(METRIC_GAUGE, "syncgate_client_connections",
			     "Client connections open now.", "", NULL, 0);
	m_accepted = metric_get(METRIC_COUNTER, "syncgate_client_connections_accepted_total",
				"Client connections accepted.", "", NULL, 0);
	m_rejected_frames = metric_get(METRIC_COUNTER, "syncgate_rejected_frames_total",
				       "Frames refused (oversized, malformed, TLS or HTTP on a plaintext port).",
				       "", NULL, 0);
	m_connect_fail = metric_get(METRIC_COUNTER, "syncgate_upstream_connect_failures_total",
				    "Upstream broker connections that failed or timed out.", "", NULL, 0);
	m_linger[0] = metric_get(METRIC_COUNTER, "syncgate_client_close_lingers_total",
				 "Upstream connections kept after their client closed, by outcome: "
				 "everything the client sent delivered and every response owed read "
				 "(delivered), or upstream.close_linger_ms passed first (expired).",
				 "outcome=\"delivered\"", NULL, 0);
	m_linger[1] = metric_get(METRIC_COUNTER, "syncgate_client_close_lingers_total",
				 "Upstream connections kept after their client closed, by outcome: "
				 "everything the client sent delivered and every response owed read "
				 "(delivered), or upstream.close_linger_ms passed first (expired).",
				 "outcome=\"expired\"", NULL, 0);
	m_idle_closed = metric_get(METRIC_COUNTER, "syncgate_client_idle_closes_total",
				   "Client connections closed by limits.client_idle_ms: nothing in flight "
				   "and no client traffic for that long.", "", NULL, 0);
	static const char half_help[] =
		"Client connections kept open for writing after the client shut down its "
		"write side with responses owed, by outcome: every owed response written "
		"(delivered), or a write failed (client_gone: it had closed; then it lingers).";
	m_half_closed[0] = metric_get(METRIC_COUNTER, "syncgate_client_half_closes_total", half_help,
				      "outcome=\"delivered\"", NULL, 0);
	m_half_closed[1] = metric_get(METRIC_COUNTER, "syncgate_client_half_closes_total", half_help,
				      "outcome=\"client_gone\"", NULL, 0);
	for (int k = 0; k < PROXY_CLOSE_CAUSE_COUNT; k++) {
		char labels[80];
		snprintf(labels, sizeof(labels), "cause=\"%s\"", proxy_close_cause_label((enum proxy_close_cause)k));
		m_closes[k] = metric_get(METRIC_COUNTER, "syncgate_connection_closes_total",
					 "Client connection pairs closed, by cause (the last reason the pair "
					 "was given: client_closed, upstream_closed, client_idle, ...; none: "
					 "freed without one).", labels, NULL, 0);
	}
}

/* One more pair closed for `cause`. */
static void count_close(enum proxy_close_cause cause)
{
	if ((unsigned)cause < PROXY_CLOSE_CAUSE_COUNT)
		metric_add(m_closes[cause], 1);
}

/*
 * Kafka frames are written whole: send them at once. With Nagle's algorithm a
 * small response waits for the peer's next segment (its next request), which
 * adds a request interval to every ack.
 */
static void set_nodelay(evutil_socket_t fd)
{
	int one = 1;
	if (fd >= 0)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void conn_set_peer(struct proxy_conn *c, const struct sockaddr *sa)
{
	char host[INET6_ADDRSTRLEN] = "?";
	int port = 0;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;
		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;
		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
	}
	snprintf(c->peer, sizeof(c->peer), "%s:%d", host, port);
}

static const char *const conn_state_names[PROXY_CONN_STATE_COUNT] = {
	[PROXY_CONN_CONNECTING] = "connecting",
	[PROXY_CONN_OPEN] = "open",
	[PROXY_CONN_DRAINING] = "draining",
	[PROXY_CONN_LINGERING] = "lingering",
	[PROXY_CONN_HALF_CLOSED] = "half_closed",
	[PROXY_CONN_CLOSING] = "closing",
};

const char *proxy_conn_state_str(enum proxy_conn_state s)
{
	return s < PROXY_CONN_STATE_COUNT ? conn_state_names[s] : "?";
}

/* The one place a connection's state changes; entry into OPEN arms the idle check. */
static void conn_set_state(struct proxy_conn *c, enum proxy_conn_state s, enum proxy_close_cause cause)
{
	LOG_D("conn_state", "conn=%llu peer=%s from=%s to=%s reason=\"%s\" in_flight=%zu rx=%s",
	      (unsigned long long)c->id, c->peer, proxy_conn_state_str(c->state),
	      proxy_conn_state_str(s), proxy_close_cause_text(cause), c->nfifo,
	      proxy_rx_state_str(c->rx.state));
	c->state = s;
	if (cause != PROXY_CLOSE_NONE)
		c->close_cause = cause;
	if (s == PROXY_CONN_OPEN) {
		c->last_io_ms = mirror_now_ms();
		proxy_conn_idle_arm(c);
	} else if (c->idle_ev) {
		event_del(c->idle_ev); /* the other states end by their own deadlines */
	}
}

bool proxy_conn_busy(const struct proxy_conn *c)
{
	return c->nfifo > 0 || c->rx.state != PROXY_RX_FRAME || c->tx.state != PROXY_RX_FRAME ||
	       c->queued_bytes > 0 || c->held_bytes > 0 || c->client_paused || c->upstream_paused ||
	       !c->client || !c->upstream ||
	       evbuffer_get_length(bufferevent_get_output(c->client)) > 0 ||
	       evbuffer_get_length(bufferevent_get_output(c->upstream)) > 0 ||
	       evbuffer_get_length(bufferevent_get_input(c->upstream)) > 0;
}

int64_t proxy_conn_idle_left(struct proxy_conn *c, int idle_ms, int64_t now_ms)
{
	if (proxy_conn_busy(c)) {
		c->last_io_ms = now_ms;
		return idle_ms;
	}
	int64_t quiet = now_ms - c->last_io_ms;
	return quiet >= idle_ms ? 0 : idle_ms - quiet;
}

static void idle_timer_add(struct proxy_conn *c, int64_t ms)
{
	struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000) };
	evtimer_add(c->idle_ev, &tv);
}

/*
 * The idle check: it runs once per period, not on every read (a read only
 * stamps last_io_ms), and re-arms for what is left. A pair that is busy when
 * it runs is never closed: a held Produce ends in an ack or the gate's error
 * code, never in an idle close.
 */
static void idle_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_conn *c = arg;
	(void)fd;
	(void)what;
	int idle_ms = c->srv->conf->client_idle_ms;
	if (c->state != PROXY_CONN_OPEN || idle_ms <= 0)
		return;
	int64_t now = mirror_now_ms();
	int64_t left = proxy_conn_idle_left(c, idle_ms, now);
	if (left > 0) {
		idle_timer_add(c, left);
		return;
	}
	metric_add(m_idle_closed, 1);
	uint64_t swallowed = 0;
	if (proxy_log_allow(&idle_log, now, &swallowed))
		LOG_I("client_idle_closed", "conn=%llu peer=%s client=\"%s\" idle_ms=%lld "
		      "client_idle_ms=%d closed_since_last_line=%llu", (unsigned long long)c->id,
		      c->peer, c->client_name, (long long)(now - c->last_io_ms), idle_ms,
		      (unsigned long long)swallowed);
	proxy_conn_close(c, PROXY_CLOSE_CLIENT_IDLE);
}

void proxy_conn_idle_arm(struct proxy_conn *c)
{
	if (!c->idle_ev || c->state != PROXY_CONN_OPEN)
		return;
	event_del(c->idle_ev);
	int idle_ms = c->srv->conf->client_idle_ms;
	if (idle_ms <= 0)
		return;
	int64_t left = idle_ms - (mirror_now_ms() - c->last_io_ms);
	idle_timer_add(c, left > 0 ? left : 0);
}

static void connect_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_conn *c = arg;
	(void)fd;
	(void)what;
	metric_add(m_connect_fail, 1);
	LOG_W("upstream_connect_timeout", "conn=%llu upstream=%s:%d timeout_ms=%d",
	      (unsigned long long)c->id, c->lst->upstream_host, c->lst->upstream_port,
	      c->srv->conf->upstream_connect_timeout_ms);
	proxy_conn_close(c, PROXY_CLOSE_UPSTREAM_CONNECT_TIMEOUT);
}

/* LINGERING, HALF_CLOSED: every byte the client sent is written upstream, no
 * response is owed, and a client still there has been written everything. */
static bool linger_done(struct proxy_conn *c)
{
	return c->nfifo == 0 && c->rx.state == PROXY_RX_FRAME &&
	       evbuffer_get_length(bufferevent_get_output(c->upstream)) == 0 &&
	       (!c->client || evbuffer_get_length(bufferevent_get_output(c->client)) == 0);
}

/* A LINGERING or HALF_CLOSED pair with nothing left to move closes. */
static void linger_check(struct proxy_conn *c)
{
	if ((c->state != PROXY_CONN_LINGERING && c->state != PROXY_CONN_HALF_CLOSED) ||
	    !c->upstream || !linger_done(c))
		return;
	if (c->state == PROXY_CONN_LINGERING) {
		event_active(c->close_ev, EV_TIMEOUT, 0); /* counted by deferred_close_cb */
		return;
	}
	metric_add(m_half_closed[0], 1);
	proxy_conn_close(c, PROXY_CLOSE_CLIENT_HALF_CLOSE_DELIVERED);
}

/*
 * close_ev: a deferred close (CLOSING, DRAINING flushed), or the linger
 * deadline / its early end (LINGERING). The only place a pair is freed
 * while the loop runs.
 */
static void deferred_close_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_conn *c = arg;
	(void)fd;
	(void)what;
	if (c->state == PROXY_CONN_LINGERING) {
		bool done = linger_done(c);
		metric_add(m_linger[done ? 0 : 1], 1);
		if (!done)
			LOG_W("linger_expired", "conn=%llu peer=%s upstream_connected=%d "
			      "unsent_bytes=%zu responses_owed=%zu linger_ms=%d",
			      (unsigned long long)c->id, c->peer, c->upstream_up,
			      evbuffer_get_length(bufferevent_get_output(c->upstream)), c->nfifo,
			      c->srv->conf->upstream_close_linger_ms);
	}
	proxy_conn_free(c);
}

/* A new pair in CONNECTING, its bufferevents not created yet. */
static struct proxy_conn *conn_new(struct proxy_listener *lst, struct proxy_server *srv)
{
	conn_metrics_init();
	struct proxy_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->srv = srv;
	c->ops = &conn_ops;
	c->lst = lst;
	c->id = ++srv->next_conn_id;
	c->state = PROXY_CONN_CONNECTING;
	c->rx.pipe[0] = c->rx.pipe[1] = -1;
	c->tx.pipe[0] = c->tx.pipe[1] = -1;
	TAILQ_INIT(&c->fifo);
	c->close_ev = evtimer_new(srv->base, deferred_close_cb, c);
	c->idle_ev = evtimer_new(srv->base, idle_cb, c);
	TAILQ_INSERT_TAIL(&srv->conns, c, link);
	srv->nconns++;
	metric_add(m_conns, 1);
	return c;
}

/* Callbacks, I/O sizes, reading on: the bufferevents exist. */
static void conn_start_io(struct proxy_conn *c)
{
	bufferevent_setcb(c->client, client_read_cb, client_write_cb, client_event_cb, c);
	bufferevent_setcb(c->upstream, upstream_read_cb, upstream_write_cb, upstream_event_cb, c);
	/* libevent moves 16 KiB per read/write call by default: a 1 MiB Fetch
	 * response would take 64 loop passes each way */
	bufferevent_set_max_single_read(c->upstream, SINGLE_IO_MAX);
	bufferevent_set_max_single_write(c->client, SINGLE_IO_MAX);
	bufferevent_set_max_single_read(c->client, SINGLE_IO_MAX);
	bufferevent_set_max_single_write(c->upstream, SINGLE_IO_MAX);
	bufferevent_enable(c->client, EV_READ | EV_WRITE);
	bufferevent_enable(c->upstream, EV_READ | EV_WRITE);
}

void proxy_conn_accept(struct proxy_listener *lst, evutil_socket_t fd,
		       const struct sockaddr *sa, int salen)
{
	struct proxy_server *srv = lst->srv;
	(void)salen;
	if (srv->shutting_down) {
		evutil_closesocket(fd);
		return;
	}
	struct proxy_conn *c = conn_new(lst, srv);
	if (!c) {
		evutil_closesocket(fd);
		return;
	}
	conn_set_peer(c, sa);
	metric_add(m_accepted, 1);

	set_nodelay(fd);
	int opts = BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS;
	if (srv->client_tls) {
		SSL *ssl = SSL_new(srv->client_tls);
		c->client = ssl ? bufferevent_openssl_socket_new(srv->base, fd, ssl,
								 BUFFEREVENT_SSL_ACCEPTING, opts)
				: NULL;
	} else {
		c->client = bufferevent_socket_new(srv->base, fd, opts);
	}
	if (srv->upstream_tls) {
		SSL *ssl = SSL_new(srv->upstream_tls);
		if (ssl && proxy_tls_client_name(ssl, lst->upstream_host,
						 srv->conf->upstream_tls.verify_hostname) == 0)
			c->upstream = bufferevent_openssl_socket_new(srv->base, -1, ssl,
								     BUFFEREVENT_SSL_CONNECTING, opts);
		else
			SSL_free(ssl);
	} else {
		c->upstream = bufferevent_socket_new(srv->base, -1, opts);
	}
	if (!c->client || !c->upstream || !c->close_ev || !c->idle_ev) {
		if (!c->client)
			evutil_closesocket(fd);
		c->close_cause = PROXY_CLOSE_OUT_OF_MEMORY;
		proxy_conn_free(c); /* the listener's callback: nothing else holds `c` */
		return;
	}
	conn_start_io(c);
	c->connect_timer = evtimer_new(srv->base, connect_timeout_cb, c);
	struct timeval tv = { srv->conf->upstream_connect_timeout_ms / 1000,
			      (srv->conf->upstream_connect_timeout_ms % 1000) * 1000 };
	if (c->connect_timer)
		evtimer_add(c->connect_timer, &tv);
	if (bufferevent_socket_connect_hostname(c->upstream, srv->dns, AF_UNSPEC,
						lst->upstream_host, lst->upstream_port) < 0) {
		metric_add(m_connect_fail, 1);
		proxy_conn_close(c, PROXY_CLOSE_UPSTREAM_CONNECT_FAILED);
		return;
	}
	LOG_D("conn_accept", "conn=%llu peer=%s upstream=%s:%d", (unsigned long long)c->id,
	      c->peer, lst->upstream_host, lst->upstream_port);
}

struct proxy_conn *proxy_conn_new_fds(struct proxy_server *srv, evutil_socket_t client_fd,
				      evutil_socket_t upstream_fd)
{
	struct proxy_conn *c = conn_new(NULL, srv);
	if (!c)
		return NULL;
	snprintf(c->peer, sizeof(c->peer), "fd:%d", (int)client_fd);
	int opts = BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS;
	c->client = bufferevent_socket_new(srv->base, client_fd, opts);
	c->upstream = bufferevent_socket_new(srv->base, upstream_fd, opts);
	if (!c->client || !c->upstream || !c->close_ev || !c->idle_ev) {
		proxy_conn_free(c);
		return NULL;
	}
	conn_start_io(c);
	c->upstream_up = true;
	conn_set_state(c, PROXY_CONN_OPEN, PROXY_CLOSE_NONE);
	return c;
}

void proxy_conn_free(struct proxy_conn *c)
{
	struct proxy_server *srv = c->srv;
	LOG_D("conn_close", "conn=%llu peer=%s cause=%s reason=\"%s\" in_flight=%zu",
	      (unsigned long long)c->id, c->peer, proxy_close_cause_label(c->close_cause),
	      proxy_close_cause_text(c->close_cause), c->nfifo);
	count_close(c->close_cause);
	struct proxy_entry *e;
	while ((e = TAILQ_FIRST(&c->fifo)))
		proxy_entry_free(c, e);
	proxy_rx_free(c);
	if (c->connect_timer)
		event_free(c->connect_timer);
	if (c->close_ev)
		event_free(c->close_ev);
	if (c->idle_ev)
		event_free(c->idle_ev);
	if (c->client)
		bufferevent_free(c->client);
	if (c->upstream)
		bufferevent_free(c->upstream);
	TAILQ_REMOVE(&srv->conns, c, link);
	srv->nconns--;
	metric_add(m_conns, -1);
	free(c);
	/* give memory of large bursts back (field report: RSS stayed at 191 MiB
	 * after six consumers had left) */
	if (srv->bytes_since_trim > TRIM_AFTER && srv->queued_bytes == 0) {
		srv->bytes_since_trim = 0;
		malloc_trim(0);
	}
	srv->conn_closed(srv);
}

void proxy_conn_close(struct proxy_conn *c, enum proxy_close_cause cause)
{
	if (c->state == PROXY_CONN_CLOSING)
		return;
	conn_set_state(c, PROXY_CONN_CLOSING, cause);
	if (c->client)
		bufferevent_disable(c->client, EV_READ | EV_WRITE);
	if (c->upstream)
		bufferevent_disable(c->upstream, EV_READ | EV_WRITE);
	struct event *evs[] = { c->rx.ev_read, c->rx.ev_write, c->tx.ev_read, c->tx.ev_write,
				c->rx.ev_bulk };
	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
		if (evs[i])
			event_del(evs[i]);
	if (c->close_ev) {
		event_del(c->close_ev);
		event_active(c->close_ev, EV_TIMEOUT, 0);
	}
}

/*
 * Stop reading, send what is owed to the client, then close. Never frees
 * `c` before returning: callers up the stack may still use it.
 */
void proxy_conn_drain_close(struct proxy_conn *c, enum proxy_close_cause cause)
{
	if (c->state == PROXY_CONN_DRAINING || c->state == PROXY_CONN_CLOSING)
		return;
	if (!c->client) { /* was LINGERING: nobody to send to */
		proxy_conn_close(c, cause);
		return;
	}
	conn_set_state(c, PROXY_CONN_DRAINING, cause);
	struct event *evs[] = { c->tx.ev_read, c->tx.ev_write };
	for (size_t i = 0; i < 2; i++)
		if (evs[i])
			event_del(evs[i]); /* no more client reads */
	bufferevent_disable(c->client, EV_READ);
	if (c->upstream)
		bufferevent_disable(c->upstream, EV_READ);
	if (evbuffer_get_length(bufferevent_get_output(c->client)) == 0)
		event_active(c->close_ev, EV_TIMEOUT, 0);
}

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
	/* HALF_CLOSED: the client is not read any more, only the broker is paced */
	bool pause_client = c->state != PROXY_CONN_HALF_CLOSED &&
			    (up_out > FLOW_HIGH || over_held || c->nfifo >= FIFO_HIGH ||
			     (c->client_paused && up_out > FLOW_LOW));
	if (pause_client != c->client_paused) {
		c->client_paused = pause_client;
		/* SPLICE: our own events read the client, the pipe is the window */
		if (c->tx.state != PROXY_RX_SPLICE) {
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
		if (c->rx.state != PROXY_RX_SPLICE) {
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
	metric_add(m_rejected_frames, 1);
	LOG_W("frame_refused", "conn=%llu peer=%s side=%s size=%d max_frame_bytes=%lld hint=\"%s\"",
	      (unsigned long long)c->id, c->peer, side, size,
	      (long long)c->srv->conf->max_frame_bytes, why ? why : frame_hint(b));
}

/* ---- framing, one loop for both directions --------------------------------
 *
 * Frames read from one side are forwarded to the other: whole (a request or
 * response syncgate reads, up to limits.max_frame_bytes) or, above the
 * direction's streaming size, as they arrive (stream.c, stream_tx.c). A
 * direction says where it reads, when it may, and how it streams. */
struct frame_dir {
	const char *side;                       /* for frame_refused: "client", "upstream" */
	size_t stream_min;                      /* frames above this may stream */
	size_t max_from;                        /* limits.max_frame_bytes applies above this size */
	struct evbuffer *(*input)(struct proxy_conn *c);
	bool (*may_read)(const struct proxy_conn *c, bool all);
	bool (*streaming)(const struct proxy_conn *c); /* a frame is streaming: pump it */
	int (*pump)(struct proxy_conn *c);      /* 1 progress, 0 waits, -1 closing */
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

/* While not paused, or all of them (`all`: the client closed, nothing more will come). */
static bool client_may_read(const struct proxy_conn *c, bool all)
{
	return c->client && (all || !c->client_paused) &&
	       (c->state == PROXY_CONN_OPEN || c->state == PROXY_CONN_CONNECTING || c->state == PROXY_CONN_LINGERING);
}

static bool upstream_may_read(const struct proxy_conn *c, bool all)
{
	(void)all;
	return c->upstream && !c->upstream_paused &&
	       (c->state == PROXY_CONN_OPEN || c->state == PROXY_CONN_CONNECTING ||
		c->state == PROXY_CONN_LINGERING || c->state == PROXY_CONN_HALF_CLOSED);
}

static bool tx_streaming(const struct proxy_conn *c)
{
	return c->tx.state != PROXY_RX_FRAME;
}

static bool rx_streaming(const struct proxy_conn *c)
{
	return c->rx.state != PROXY_RX_FRAME;
}

/* A lingering connection (its client gone) forwards what is left whole. */
static int tx_stream_start(struct proxy_conn *c, struct evbuffer *in, size_t size)
{
	(void)in;
	return c->state == PROXY_CONN_LINGERING ? 2 : proxy_tx_start(c, size);
}

/* Requests, client → broker: a Produce above PROXY_STREAM_MIN_REQUEST streams. */
static const struct frame_dir to_broker = {
	"client", PROXY_STREAM_MIN_REQUEST, 0, client_input, client_may_read, tx_streaming, proxy_tx_pump,
	tx_stream_start, proxy_request_handle, PROXY_CLOSE_CLIENT_FRAME_REFUSED,
	PROXY_CLOSE_CLIENT_FRAME_MALFORMED, PROXY_CLOSE_CLIENT_FRAME_REFUSED, true, NULL,
};

/* Responses, broker → client: above PROXY_STREAM_MIN they stream unless rewritten whole. */
static const struct frame_dir to_client = {
	"upstream", PROXY_STREAM_MIN, PROXY_STREAM_MIN, upstream_input, upstream_may_read, rx_streaming,
	proxy_rx_pump, proxy_response_stream_start, proxy_response_handle, PROXY_CLOSE_UPSTREAM_FRAME_MALFORMED,
	PROXY_CLOSE_UPSTREAM_FRAME_MALFORMED, PROXY_CLOSE_UPSTREAM_FRAME_REFUSED, false,
	"a response syncgate rewrites, above limits.max_frame_bytes",
};

/* Forward the frames waiting from direction `d`'s side. The flow (backpressure)
 * is re-checked after each, unless `all` (the client closed). */
static enum frames_end frames(struct proxy_conn *c, const struct frame_dir *d, bool all)
{
	while (d->may_read(c, all)) {
		struct evbuffer *in = d->input(c);
		if (d->streaming(c)) {
			int rc = d->pump(c);
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
			proxy_conn_close(c, d->negative);
			return FRAMES_CLOSED;
		}
		if ((size_t)size > d->stream_min) {
			int rc = d->stream_start(c, in, (size_t)size);
			if (rc < 0) {
				proxy_conn_close(c, d->malformed);
				return FRAMES_CLOSED;
			}
			if (rc == 0)
				break;
			if (rc == 1)
				continue;
		}
		if ((size_t)size > d->max_from && size > c->srv->conf->max_frame_bytes) {
			frame_refused(c, d->side, size, b, d->refused_hint);
			proxy_conn_close(c, d->refused);
			return FRAMES_CLOSED;
		}
		if (avail < (size_t)size + 4)
			break;
		if (d->handle(c, in, (size_t)size) < 0) {
			if (d->count_malformed)
				metric_add(m_rejected_frames, 1);
			proxy_conn_close(c, d->malformed);
			return FRAMES_CLOSED;
		}
		if (!all)
			proxy_conn_update_flow(c);
	}
	return FRAMES_DONE;
}

/* The client's frames (`all`: it closed). -1 when the connection is closing. */
static int client_frames(struct proxy_conn *c, bool all)
{
	enum frames_end r = frames(c, &to_broker, all);
	return r == FRAMES_CLOSED || c->state == PROXY_CONN_CLOSING ? -1 : 0;
}

/* Handle the frames waiting in the client input (c->ops: after a splice run). */
static void conn_client_frames(struct proxy_conn *c)
{
	if (c->client)
		client_frames(c, false);
}

static void client_read_cb(struct bufferevent *bev, void *arg)
{
	struct proxy_conn *c = arg;
	(void)bev;
	c->last_io_ms = mirror_now_ms();
	client_frames(c, false);
}

/*
 * The client closed or failed (HALF_CLOSED: a write to it failed): half-close
 * (invariant 7, docs/architecture.md).
 * Everything it sent is still delivered upstream — the connect finished
 * first if it is in progress — and the responses it is owed are read and
 * dropped, so the upstream socket closes with FIN after the last byte, not
 * RST over unread data; then the pair is freed. upstream.close_linger_ms
 * bounds the wait. Responses already received (held, ready or streaming) are
 * dropped at once, their gate waits cancelled; the rest of a streamed one is
 * read and dropped. No client reads, so memory is what was already buffered.
 */
static void conn_client_gone(struct proxy_conn *c, enum proxy_close_cause cause)
{
	if (c->state == PROXY_CONN_DRAINING || !c->upstream) {
		proxy_conn_close(c, cause);
		return;
	}
	if (c->state == PROXY_CONN_CLOSING || c->state == PROXY_CONN_LINGERING)
		return;
	if (client_frames(c, true) < 0)
		return;
	if (c->tx.state != PROXY_RX_FRAME) {
		/* a request cut short can only be ended by closing the broker's side too */
		LOG_W("client_closed_mid_request", "conn=%llu peer=%s bytes_left=%zu",
		      (unsigned long long)c->id, c->peer, c->tx.left);
		proxy_conn_close(c, PROXY_CLOSE_CLIENT_MID_REQUEST);
		return;
	}
	if (c->state == PROXY_CONN_HALF_CLOSED)
		metric_add(m_half_closed[1], 1);
	size_t partial = evbuffer_get_length(bufferevent_get_input(c->client));
	proxy_rx_client_gone(c);
	bufferevent_free(c->client);
	c->client = NULL;
	c->client_paused = false;
	struct proxy_entry *e, *next;
	for (e = TAILQ_FIRST(&c->fifo); e; e = next) {
		next = TAILQ_NEXT(e, link);
		if (e->state != PROXY_ENTRY_IN_FLIGHT)
			proxy_entry_free(c, e);
	}
	c->srv->resume_paused(c->srv); /* held bytes may have gone down */
	conn_set_state(c, PROXY_CONN_LINGERING, cause);
	if (c->upstream_paused || c->rx.state == PROXY_RX_STREAM) {
		c->upstream_paused = false;
		bufferevent_enable(c->upstream, EV_READ);
	}
	int ms = c->srv->conf->upstream_close_linger_ms;
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	evtimer_add(c->close_ev, &tv);
	LOG_D("conn_linger", "conn=%llu peer=%s reason=\"%s\" upstream_connected=%d "
	      "unsent_bytes=%zu responses_owed=%zu partial_frame_bytes=%zu",
	      (unsigned long long)c->id, c->peer, proxy_close_cause_text(cause), c->upstream_up,
	      evbuffer_get_length(bufferevent_get_output(c->upstream)), c->nfifo, partial);
	/* the rest of a streamed frame may be waiting in the input already */
	conn_upstream_frames(c);
}

/*
 * A plaintext client's EOF: it may only have shut down its write side
 * (shutdown(SHUT_WR), TCP half-close) and still read, as a client connected
 * to the broker directly would get its responses. Everything it sent is
 * forwarded; when responses are owed the pair goes HALF_CLOSED: no more
 * client reads, every owed response is written in order (held ones end in
 * an ack or the gate's error code, as when OPEN), and linger_check()
 * closes the pair once none is owed and all is written. A full close looks
 * the same until a write to the client fails: then conn_client_gone().
 * Returns false when the EOF is a close as before: TLS (a close_notify ends
 * the session, no half-close), nothing owed, or a request cut short.
 */
static bool client_half_close(struct proxy_conn *c)
{
	if ((c->state != PROXY_CONN_OPEN && c->state != PROXY_CONN_CONNECTING) ||
	    bufferevent_openssl_get_ssl(c->client))
		return false;
	if (client_frames(c, true) < 0)
		return true; /* closing */
	size_t partial = evbuffer_get_length(bufferevent_get_input(c->client));
	if (c->nfifo == 0 || c->tx.state != PROXY_RX_FRAME || partial > 0)
		return false;
	bufferevent_disable(c->client, EV_READ);
	c->client_paused = false; /* nothing more is read: the caps only pace the broker now */
	conn_set_state(c, PROXY_CONN_HALF_CLOSED, PROXY_CLOSE_CLIENT_HALF_CLOSED);
	LOG_D("client_half_closed", "conn=%llu peer=%s upstream_connected=%d unsent_bytes=%zu "
	      "responses_owed=%zu held_bytes=%zu", (unsigned long long)c->id, c->peer,
	      c->upstream_up, evbuffer_get_length(bufferevent_get_output(c->upstream)), c->nfifo,
	      c->held_bytes);
	return true;
}

/*
 * Handle what the upstream input holds: the rest of a streamed response,
 * then frame after frame. A frame above PROXY_STREAM_MIN is streamed when
 * nothing in it is rewritten (no size cap); others wait until whole, up to
 * limits.max_frame_bytes.
 */
static void conn_upstream_frames(struct proxy_conn *c)
{
	if (frames(c, &to_client, false) == FRAMES_DONE)
		linger_check(c);
}

static void upstream_read_cb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	conn_upstream_frames(arg);
}

static void client_write_cb(struct bufferevent *bev, void *arg)
{
	struct proxy_conn *c = arg;
	c->last_io_ms = mirror_now_ms();
	if (c->state == PROXY_CONN_DRAINING &&
	    evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
		proxy_conn_close(c, c->close_cause);
		return;
	}
	if (c->state == PROXY_CONN_CLOSING)
		return;
	proxy_conn_update_flow(c);
	/* a streamed response waits for an empty output before it splices */
	if (c->rx.state == PROXY_RX_STREAM && !c->upstream_paused)
		conn_upstream_frames(c);
	linger_check(c); /* HALF_CLOSED: the last response written */
}

static void upstream_write_cb(struct bufferevent *bev, void *arg)
{
	struct proxy_conn *c = arg;
	(void)bev;
	if (c->state == PROXY_CONN_CLOSING)
		return;
	linger_check(c);
	proxy_conn_update_flow(c);
	/* a streamed request waits for an empty output before it splices */
	if (c->tx.state == PROXY_RX_STREAM && c->client && !c->client_paused)
		client_frames(c, false);
}


/*
 * Log the OpenSSL errors of a failed TLS connection, one line each, with a
 * hint for the usual mistake (plaintext spoken to a TLS port). Entries
 * without an OpenSSL library (libevent's own SSL_get_error() results) add
 * nothing and are skipped.
 */
static void log_tls_errors(struct proxy_conn *c, struct bufferevent *bev, const char *side)
{
	unsigned long err;
	while ((err = bufferevent_get_openssl_error(bev))) {
		if (ERR_GET_LIB(err) == 0)
			continue;
		char buf[256];
		ERR_error_string_n(err, buf, sizeof(buf));
		int reason = ERR_GET_REASON(err);
		const char *hint = reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_HTTP_REQUEST
					   ? (!strcmp(side, "client")
						      ? "the client does not speak TLS to this TLS listener"
						      : "the broker port does not speak TLS")
				   : reason == SSL_R_CERTIFICATE_VERIFY_FAILED
					   ? "check upstream.tls.ca and the broker's name"
					   : "";
		LOG_W("tls_error", "conn=%llu peer=%s side=%s error=\"%s\" hint=\"%s\"",
		      (unsigned long long)c->id, c->peer, side, buf, hint);
	}
}

static void client_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct proxy_conn *c = arg;
	if (c->state == PROXY_CONN_CLOSING)
		return;
	if (what & BEV_EVENT_ERROR)
		log_tls_errors(c, bev, "client");
	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
		return;
	if (what == (BEV_EVENT_EOF | BEV_EVENT_READING) && client_half_close(c))
		return;
	conn_client_gone(c, (what & BEV_EVENT_EOF) ? PROXY_CLOSE_CLIENT_CLOSED : PROXY_CLOSE_CLIENT_ERROR);
}

static void upstream_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct proxy_conn *c = arg;
	if (c->state == PROXY_CONN_CLOSING)
		return;
	if (what & BEV_EVENT_CONNECTED) {
		set_nodelay(bufferevent_getfd(bev));
		if (c->connect_timer)
			evtimer_del(c->connect_timer);
		c->upstream_up = true;
		if (c->state == PROXY_CONN_CONNECTING)
			conn_set_state(c, PROXY_CONN_OPEN, PROXY_CLOSE_NONE);
		return;
	}
	if (what & BEV_EVENT_ERROR) {
		log_tls_errors(c, bev, "upstream");
		if (!c->upstream_up) {
			metric_add(m_connect_fail, 1);
			LOG_W("upstream_connect_failed", "conn=%llu upstream=%s:%d error=\"%s\"",
			      (unsigned long long)c->id, c->lst->upstream_host, c->lst->upstream_port,
			      evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
			if (c->lst->node_id < 0 && c->srv->upstream_connect_failed) /* probe now: pause sooner */
				c->srv->upstream_connect_failed(c->srv->upstream_connect_failed_arg);
		}
	}
	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
		return;
	if (c->state == PROXY_CONN_LINGERING) {
		proxy_conn_close(c, PROXY_CLOSE_UPSTREAM_CLOSED_CLIENT_GONE);
		return;
	}
	if (c->rx.state != PROXY_RX_FRAME || c->tx.state != PROXY_RX_FRAME) {
		/* a frame is half through: it can only be ended by a close */
		LOG_W("upstream_closed_mid_response", "conn=%llu peer=%s bytes_left=%zu",
		      (unsigned long long)c->id, c->peer, c->rx.left);
		proxy_conn_close(c, PROXY_CLOSE_UPSTREAM_MID_RESPONSE);
		return;
	}
	/* Whatever is READY at the head still goes out; held responses are
	 * dropped (never a false ack): the client sees the connection close
	 * and retries. */
	proxy_fifo_flush(c);
	proxy_rx_free(c);
	bufferevent_free(c->upstream);
	c->upstream = NULL;
	proxy_conn_drain_close(c, PROXY_CLOSE_UPSTREAM_CLOSED);
}
