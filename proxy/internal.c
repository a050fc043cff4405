/*
 * syncgate's own requests on a client's upstream connection (INTERNAL FIFO
 * entries, correlation id -1, responses consumed, never sent to the client):
 * the Metadata request that learns TopicIds (request.c), and the keepalive
 * ApiVersions request sent while responses are held, so the broker's
 * `connections.max.idle.ms` does not close a connection that is idle only
 * because syncgate holds its responses (invariant 7, docs/architecture.md).
 * Loop thread.
 */
#include <stdlib.h>

#include "proxy/datapath.h"

static struct metric *m_keepalives;

bool proxy_internal_in_flight(const struct proxy_conn *c, int16_t api_key)
{
	const struct proxy_entry *e;
	TAILQ_FOREACH(e, &c->fifo, link)
		if (e->kind == PROXY_ENTRY_INTERNAL && e->api_key == api_key &&
		    e->state == PROXY_ENTRY_IN_FLIGHT)
			return true;
	return false;
}

int proxy_internal_send(struct proxy_conn *c, const uint8_t *frame, size_t len,
			int16_t api_key, int16_t version)
{
	struct proxy_entry *e = proxy_entry_new(c, PROXY_ENTRY_INTERNAL);
	if (!e)
		return -1;
	e->api_key = api_key;
	e->api_version = e->client_version = version;
	e->correlation_id = -1; /* as in every internal frame; never reaches a client */
	return evbuffer_add(bufferevent_get_output(c->upstream), frame, len);
}

/* Whether the connection carries held responses and may take a request now. */
static bool keepalive_wanted(const struct proxy_conn *c)
{
	/* never in the middle of a request streaming upstream (stream.c); a
	 * half-closed client still waits for what is held */
	return (c->state == PROXY_CONN_OPEN || c->state == PROXY_CONN_HALF_CLOSED) &&
	       c->held_bytes > 0 && !c->sasl_raw &&
	       c->from_client.state == PROXY_DIR_FRAME &&
	       !proxy_internal_in_flight(c, CODEC_API_API_VERSIONS);
}

static void keepalive_arm(struct proxy_server *srv)
{
	int ms = srv->conf->upstream_keepalive_ms;
	if (ms <= 0)
		ms = 1000; /* off: look again later, a reload may turn it on */
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	evtimer_add(srv->keepalive_ev, &tv);
}

static void keepalive_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_server *srv = arg;
	/* size, header v1 (key 18, version 0, correlation id -1, client id
	 * "syncgate"), empty body */
	static const uint8_t frame[] = { 0, 0, 0, 18, 0, 18, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 8,
					 's', 'y', 'n', 'c', 'g', 'a', 't', 'e' };
	if (srv->conf->upstream_keepalive_ms > 0) {
		struct proxy_conn *c;
		TAILQ_FOREACH(c, &srv->conns, link) {
			if (!keepalive_wanted(c))
				continue;
			if (proxy_internal_send(c, frame, sizeof(frame), CODEC_API_API_VERSIONS, 0) < 0) {
				LOG_W("keepalive_failed", "conn=%llu reason=\"out of memory\"",
				      (unsigned long long)c->id);
				continue;
			}
			metric_add(m_keepalives, 1);
			LOG_D("keepalive", "conn=%llu held_bytes=%zu", (unsigned long long)c->id,
			      c->held_bytes);
		}
	}
	keepalive_arm(srv);
}

int proxy_keepalive_start(struct proxy_server *srv)
{
	if (!m_keepalives)
		m_keepalives = metric_get(METRIC_COUNTER, "syncgate_upstream_keepalives_total",
					  "Internal ApiVersions requests sent upstream on connections "
					  "holding Produce responses (upstream.keepalive_ms).", "", NULL, 0);
	srv->keepalive_ev = evtimer_new(srv->base, keepalive_cb, srv);
	if (!srv->keepalive_ev)
		return -1;
	keepalive_arm(srv);
	return 0;
}
