/*
 * Connection pairs: the pair's states and lifetime (new, idle close, linger,
 * drain, close, free). One client connection is paired 1:1 with one
 * upstream broker connection; conn_io.c makes a pair and runs its two ends'
 * callbacks, conn_frames.c moves frames between them (conn.h: what these
 * files share). Loop thread.
 *
 * Connection states (proxy_conn_set_state() is the only code that changes
 * one, and logs every transition at debug):
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
 */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/conn.h"
#include "proxy/security.h"
#include "proxy/stream.h"

/* Response bytes moved through user space after which idle memory is given
 * back to the system (malloc_trim) once the process has nothing queued. */
#define TRIM_AFTER (64u << 20)

static struct metric *m_conns;
static struct metric *m_linger[2]; /* closes after a client left: delivered, expired */
static struct metric *m_idle_closed;
static struct metric *m_closes[PROXY_CLOSE_CAUSE_COUNT]; /* syncgate_connection_closes_total{cause} */
static struct proxy_log_limit idle_log; /* one client_idle_closed line a second */
struct metric *proxy_conn_m_accepted, *proxy_conn_m_rejected_frames, *proxy_conn_m_connect_fail;
struct metric *proxy_conn_m_half_closed[2];

static void conn_metrics_init(void)
{
	if (m_conns)
		return;
	m_conns = metric_get(METRIC_GAUGE, "syncgate_client_connections",
			     "Client connections open now.", "", NULL, 0);
	proxy_conn_m_accepted =
		metric_get(METRIC_COUNTER, "syncgate_client_connections_accepted_total",
			   "Client connections accepted.", "", NULL, 0);
	proxy_conn_m_rejected_frames =
		metric_get(METRIC_COUNTER, "syncgate_rejected_frames_total",
			   "Frames refused (oversized, malformed, TLS or HTTP on a plaintext port).",
			   "", NULL, 0);
	proxy_conn_m_connect_fail =
		metric_get(METRIC_COUNTER, "syncgate_upstream_connect_failures_total",
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
	proxy_conn_m_half_closed[0] = metric_get(METRIC_COUNTER, "syncgate_client_half_closes_total",
						 half_help, "outcome=\"delivered\"", NULL, 0);
	proxy_conn_m_half_closed[1] = metric_get(METRIC_COUNTER, "syncgate_client_half_closes_total",
						 half_help, "outcome=\"client_gone\"", NULL, 0);
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

void proxy_conn_set_state(struct proxy_conn *c, enum proxy_conn_state s, enum proxy_close_cause cause)
{
	LOG_D("conn_state", "conn=%llu peer=%s from=%s to=%s reason=\"%s\" in_flight=%zu rx=%s",
	      (unsigned long long)c->id, c->peer, proxy_conn_state_str(c->state),
	      proxy_conn_state_str(s), proxy_close_cause_text(cause), c->nfifo,
	      proxy_dir_state_str(c->from_upstream.state));
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
	return c->nfifo > 0 || c->from_upstream.state != PROXY_DIR_FRAME || c->from_client.state != PROXY_DIR_FRAME ||
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

/* LINGERING, HALF_CLOSED: every byte the client sent is written upstream, no
 * response is owed, and a client still there has been written everything. */
static bool linger_done(struct proxy_conn *c)
{
	return c->nfifo == 0 && c->from_upstream.state == PROXY_DIR_FRAME &&
	       evbuffer_get_length(bufferevent_get_output(c->upstream)) == 0 &&
	       (!c->client || evbuffer_get_length(bufferevent_get_output(c->client)) == 0);
}

/* A LINGERING or HALF_CLOSED pair with nothing left to move closes. */
void proxy_conn_linger_check(struct proxy_conn *c)
{
	if ((c->state != PROXY_CONN_LINGERING && c->state != PROXY_CONN_HALF_CLOSED) ||
	    !c->upstream || !linger_done(c))
		return;
	if (c->state == PROXY_CONN_LINGERING) {
		event_active(c->close_ev, EV_TIMEOUT, 0); /* counted by deferred_close_cb */
		return;
	}
	metric_add(proxy_conn_m_half_closed[0], 1);
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
struct proxy_conn *proxy_conn_new(struct proxy_listener *lst, struct proxy_server *srv,
				  const struct proxy_conn_ops *ops)
{
	conn_metrics_init();
	struct proxy_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->srv = srv;
	c->ops = ops;
	c->lst = lst;
	c->id = ++srv->next_conn_id;
	c->state = PROXY_CONN_CONNECTING;
	c->from_upstream.pipe[0] = c->from_upstream.pipe[1] = -1;
	c->from_client.pipe[0] = c->from_client.pipe[1] = -1;
	TAILQ_INIT(&c->fifo);
	c->close_ev = evtimer_new(srv->base, deferred_close_cb, c);
	c->idle_ev = evtimer_new(srv->base, idle_cb, c);
	TAILQ_INSERT_TAIL(&srv->conns, c, link);
	srv->nconns++;
	metric_add(m_conns, 1);
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
	proxy_stream_free(c);
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
	proxy_conn_set_state(c, PROXY_CONN_CLOSING, cause);
	if (c->client)
		bufferevent_disable(c->client, EV_READ | EV_WRITE);
	if (c->upstream)
		bufferevent_disable(c->upstream, EV_READ | EV_WRITE);
	struct event *evs[] = { c->from_upstream.ev_read, c->from_upstream.ev_write,
				c->from_client.ev_read, c->from_client.ev_write, c->from_upstream.ev_bulk };
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
	proxy_conn_set_state(c, PROXY_CONN_DRAINING, cause);
	struct event *evs[] = { c->from_client.ev_read, c->from_client.ev_write };
	for (size_t i = 0; i < 2; i++)
		if (evs[i])
			event_del(evs[i]); /* no more client reads */
	bufferevent_disable(c->client, EV_READ);
	if (c->upstream)
		bufferevent_disable(c->upstream, EV_READ);
	if (evbuffer_get_length(bufferevent_get_output(c->client)) == 0)
		event_active(c->close_ev, EV_TIMEOUT, 0);
}

struct proxy_conn *proxy_conn_by_id(struct proxy_server *srv, uint64_t id)
{
	struct proxy_conn *c;
	TAILQ_FOREACH(c, &srv->conns, link)
		if (c->id == id)
			return c;
	return NULL;
}
