/*
 * The two ends of a connection pair: made (a client accepted, its upstream
 * connect and its deadline, the bufferevents set up), and their read, write
 * and event callbacks — the client's EOF or failure (half-close or linger),
 * the upstream connected or gone, TLS errors logged. Loop thread.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>

#include <event2/bufferevent_ssl.h>
#include <event2/dns.h>
#include <openssl/err.h>

#include "proxy/conn.h"
#include "proxy/security.h"
#include "proxy/stream.h"

/* Most bytes one read or write call moves. */
#define SINGLE_IO_MAX (64u << 10)

static void client_read_cb(struct bufferevent *bev, void *arg);
static void upstream_read_cb(struct bufferevent *bev, void *arg);
static void client_write_cb(struct bufferevent *bev, void *arg);
static void upstream_write_cb(struct bufferevent *bev, void *arg);
static void client_event_cb(struct bufferevent *bev, short what, void *arg);
static void upstream_event_cb(struct bufferevent *bev, short what, void *arg);
static void conn_client_gone(struct proxy_conn *c, enum proxy_close_cause cause);
static void conn_client_frames(struct proxy_conn *c);

/* What the files below ask of a pair (proxy.h, struct proxy_conn_ops). */
static const struct proxy_conn_ops conn_ops = {
	.close = proxy_conn_close,
	.client_gone = conn_client_gone,
	.update_flow = proxy_conn_update_flow,
	.upstream_frames = proxy_conn_upstream_frames,
	.client_frames = conn_client_frames,
};

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

static void connect_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_conn *c = arg;
	(void)fd;
	(void)what;
	metric_add(proxy_conn_m_connect_fail, 1);
	LOG_W("upstream_connect_timeout", "conn=%llu upstream=%s:%d timeout_ms=%d",
	      (unsigned long long)c->id, c->lst->upstream_host, c->lst->upstream_port,
	      c->srv->conf->upstream_connect_timeout_ms);
	proxy_conn_close(c, PROXY_CLOSE_UPSTREAM_CONNECT_TIMEOUT);
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
	struct proxy_conn *c = proxy_conn_new(lst, srv, &conn_ops);
	if (!c) {
		evutil_closesocket(fd);
		return;
	}
	conn_set_peer(c, sa);
	metric_add(proxy_conn_m_accepted, 1);

	set_nodelay(fd);
	int opts = BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS;
	if (srv->client_tls) {
		SSL *ssl = SSL_new(srv->client_tls);
		c->client = ssl ? bufferevent_openssl_socket_new(srv->base, fd, ssl,
								 BUFFEREVENT_SSL_ACCEPTING, opts)
				: NULL;
	} else {
		c->client = bufferevent_socket_new(srv->base, fd, opts);
		c->client_plain = true;
	}
	SSL_CTX *up_tls = srv->switched ? srv->switch_tls : srv->upstream_tls;
	if (up_tls) {
		SSL *ssl = SSL_new(up_tls);
		bool verify = srv->switched ? srv->conf->switch_tls.verify_hostname
					    : srv->conf->upstream_tls.verify_hostname;
		if (ssl && proxy_tls_client_name(ssl, lst->upstream_host, verify) == 0)
			c->upstream = bufferevent_openssl_socket_new(srv->base, -1, ssl,
								     BUFFEREVENT_SSL_CONNECTING, opts);
		else
			SSL_free(ssl);
	} else {
		c->upstream = bufferevent_socket_new(srv->base, -1, opts);
		c->upstream_plain = true;
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
		metric_add(proxy_conn_m_connect_fail, 1);
		proxy_conn_close(c, PROXY_CLOSE_UPSTREAM_CONNECT_FAILED);
		return;
	}
	LOG_D("conn_accept", "conn=%llu peer=%s upstream=%s:%d", (unsigned long long)c->id,
	      c->peer, lst->upstream_host, lst->upstream_port);
}

struct proxy_conn *proxy_conn_new_fds(struct proxy_server *srv, evutil_socket_t client_fd,
				      evutil_socket_t upstream_fd)
{
	struct proxy_conn *c = proxy_conn_new(NULL, srv, &conn_ops);
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
	c->client_plain = c->upstream_plain = true;
	conn_start_io(c);
	c->upstream_up = true;
	proxy_conn_set_state(c, PROXY_CONN_OPEN, PROXY_CLOSE_NONE);
	return c;
}

/* Handle the frames waiting in the client input (c->ops: after a splice run). */
static void conn_client_frames(struct proxy_conn *c)
{
	if (c->client)
		proxy_conn_client_frames(c, false);
}

static void client_read_cb(struct bufferevent *bev, void *arg)
{
	struct proxy_conn *c = arg;
	(void)bev;
	c->last_io_ms = mirror_now_ms();
	proxy_conn_client_frames(c, false);
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
	if (proxy_conn_client_frames(c, true) < 0)
		return;
	if (c->from_client.state != PROXY_DIR_FRAME) {
		/* a request cut short can only be ended by closing the broker's side too */
		LOG_W("client_closed_mid_request", "conn=%llu peer=%s bytes_left=%zu",
		      (unsigned long long)c->id, c->peer, c->from_client.left);
		proxy_conn_close(c, PROXY_CLOSE_CLIENT_MID_REQUEST);
		return;
	}
	if (c->state == PROXY_CONN_HALF_CLOSED)
		metric_add(proxy_conn_m_half_closed[1], 1);
	size_t partial = evbuffer_get_length(bufferevent_get_input(c->client));
	proxy_stream_client_gone(c);
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
	proxy_conn_set_state(c, PROXY_CONN_LINGERING, cause);
	if (c->upstream_paused || c->from_upstream.state == PROXY_DIR_STREAM) {
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
	proxy_conn_upstream_frames(c);
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
	if (proxy_conn_client_frames(c, true) < 0)
		return true; /* closing */
	size_t partial = evbuffer_get_length(bufferevent_get_input(c->client));
	if (c->nfifo == 0 || c->from_client.state != PROXY_DIR_FRAME || partial > 0)
		return false;
	bufferevent_disable(c->client, EV_READ);
	c->client_paused = false; /* nothing more is read: the caps only pace the broker now */
	proxy_conn_set_state(c, PROXY_CONN_HALF_CLOSED, PROXY_CLOSE_CLIENT_HALF_CLOSED);
	LOG_D("client_half_closed", "conn=%llu peer=%s upstream_connected=%d unsent_bytes=%zu "
	      "responses_owed=%zu held_bytes=%zu", (unsigned long long)c->id, c->peer,
	      c->upstream_up, evbuffer_get_length(bufferevent_get_output(c->upstream)), c->nfifo,
	      c->held_bytes);
	return true;
}

static void upstream_read_cb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	proxy_conn_upstream_frames(arg);
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
	if (c->from_upstream.state == PROXY_DIR_STREAM && !c->upstream_paused)
		proxy_conn_upstream_frames(c);
	proxy_conn_linger_check(c); /* HALF_CLOSED: the last response written */
}

static void upstream_write_cb(struct bufferevent *bev, void *arg)
{
	struct proxy_conn *c = arg;
	(void)bev;
	if (c->state == PROXY_CONN_CLOSING)
		return;
	proxy_conn_linger_check(c);
	proxy_conn_update_flow(c);
	/* a streamed request waits for an empty output before it splices */
	if (c->from_client.state == PROXY_DIR_STREAM && c->client && !c->client_paused)
		proxy_conn_client_frames(c, false);
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
			proxy_conn_set_state(c, PROXY_CONN_OPEN, PROXY_CLOSE_NONE);
		return;
	}
	if (what & BEV_EVENT_ERROR) {
		log_tls_errors(c, bev, "upstream");
		if (!c->upstream_up) {
			metric_add(proxy_conn_m_connect_fail, 1);
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
	if (c->from_upstream.state != PROXY_DIR_FRAME || c->from_client.state != PROXY_DIR_FRAME) {
		/* a frame is half through: it can only be ended by a close */
		LOG_W("upstream_closed_mid_response", "conn=%llu peer=%s bytes_left=%zu",
		      (unsigned long long)c->id, c->peer, c->from_upstream.left);
		proxy_conn_close(c, PROXY_CLOSE_UPSTREAM_MID_RESPONSE);
		return;
	}
	/* Whatever is READY at the head still goes out; held responses are
	 * dropped (never a false ack): the client sees the connection close
	 * and retries. */
	proxy_fifo_flush(c);
	proxy_stream_free(c);
	bufferevent_free(c->upstream);
	c->upstream = NULL;
	proxy_conn_drain_close(c, PROXY_CLOSE_UPSTREAM_CLOSED);
}
