/*
 * The admin HTTP listener (admin.listen, default 127.0.0.1:9464), through
 * libevent's evhttp:
 *   GET /metrics   Prometheus text format 0.0.4
 *   GET /healthz   200 "ok" whenever the loop turns (it answers from the loop)
 *   GET /readyz    200 "ready" only when syncgate listens, is not shutting
 *                  down, its upstream broker is reachable, the state log was
 *                  read and every mirror has sent its first progress report
 *                  or has nothing to report; else 503, one line per missing
 *                  condition
 *   GET /v1/mirrors[?mirror=M&topic=T]  desired/effective mirror type, lag and
 *                  progress per partition, JSON
 * Upstream reachability comes from a probe: a TCP connect to upstream.broker
 * every PROBE_INTERVAL_MS (timeout upstream.connect_timeout_ms), so that it
 * holds with no client connected (and at once after a client's upstream
 * connect failed); the result is also the gauge syncgate_upstream_up, changes
 * are logged, and while it is down the Kafka listener is closed
 * (proxy_listeners_set_upstream: connects refused). Loop thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "conf/conf.h"
#include "mirror/mirror.h"
#include "proxy/admin/admin.h"
#include "proxy/proxy.h"
#include "proxy/security.h"

#define PROBE_INTERVAL_MS 1000

/** What the last upstream probe found. */
enum admin_upstream {
	ADMIN_UPSTREAM_UNKNOWN, /* no probe finished yet */
	ADMIN_UPSTREAM_UP,      /* the last connect succeeded */
	ADMIN_UPSTREAM_DOWN,    /* the last connect failed or timed out */
};

struct proxy_admin {
	struct evhttp *http;
	struct admin_transport *transport; /* admin_tls.c: HTTPS */
	struct admin_conns *conns;     /* admin_conns.c: admin.max_connections */
	struct event_base *base;      /* the loop (the server's) */
	struct proxy_server *srv;
	struct mirror_gate *gate;
	struct event *probe_timer;     /* next upstream probe */
	struct bufferevent *probe;     /* connect in progress, NULL between probes */
	enum admin_upstream upstream;
	char upstream_why[160];        /* DOWN: why the last connect failed */
	char **reported;               /* mirrors that sent a first progress report (latched) */
	size_t nreported;
	struct metric *m_up;
};

static void reply_text(struct evhttp_request *req, int code, const char *reason,
		       const char *ctype, const char *body)
{
	struct evbuffer *b = evbuffer_new();
	if (!b) {
		evhttp_send_error(req, 500, "out of memory");
		return;
	}
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", ctype);
	evbuffer_add(b, body, strlen(body));
	evhttp_send_reply(req, code, reason, b);
	evbuffer_free(b);
}

static void metrics_cb(struct evhttp_request *req, void *arg)
{
	char *text = metrics_render();
	if (!text) {
		evhttp_send_error(req, 500, "out of memory");
		return;
	}
	reply_text(req, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", text);
	free(text);
}

static void healthz_cb(struct evhttp_request *req, void *arg)
{
	reply_text(req, 200, "OK", "text/plain", "ok\n");
}

static void probe_schedule(struct proxy_admin *a, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	evtimer_add(a->probe_timer, &tv);
}

/* Record a probe's result (`why` NULL: reachable) and schedule the next one. */
static void probe_done(struct proxy_admin *a, const char *why)
{
	int up_port;
	const char *up_host = proxy_server_upstream(a->srv, &up_port);
	bufferevent_free(a->probe);
	a->probe = NULL;
	if (!why) {
		if (a->upstream != ADMIN_UPSTREAM_UP)
			LOG_I("upstream_reachable", "upstream=%s:%d", up_host, up_port);
		a->upstream = ADMIN_UPSTREAM_UP;
	} else {
		if (a->upstream != ADMIN_UPSTREAM_DOWN)
			LOG_W("upstream_unreachable", "upstream=%s:%d reason=\"%s\"", up_host, up_port, why);
		a->upstream = ADMIN_UPSTREAM_DOWN;
		snprintf(a->upstream_why, sizeof(a->upstream_why), "%s", why);
	}
	metric_set(a->m_up, a->upstream == ADMIN_UPSTREAM_UP);
	proxy_listeners_set_upstream(a->srv, a->upstream == ADMIN_UPSTREAM_UP);
	probe_schedule(a, PROBE_INTERVAL_MS);
}

/* conn_io.c: a client's connect to upstream.broker failed — probe now rather
 * than at the next interval (the listener is paused sooner). */
static void probe_now(void *arg)
{
	struct proxy_admin *a = arg;
	if (!a->probe && a->upstream != ADMIN_UPSTREAM_DOWN)
		probe_schedule(a, 0);
}

static void probe_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct proxy_admin *a = arg;
	char why[160];
	if (what & BEV_EVENT_CONNECTED) {
		probe_done(a, NULL);
	} else if (what & BEV_EVENT_TIMEOUT) {
		snprintf(why, sizeof(why), "connect timed out after %d ms",
			 proxy_server_conf(a->srv)->upstream_connect_timeout_ms);
		probe_done(a, why);
	} else {
		int dns = bufferevent_socket_get_dns_error(bev);
		snprintf(why, sizeof(why), "%s", dns ? evutil_gai_strerror(dns)
					       : evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
		probe_done(a, why);
	}
}

static void probe_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_admin *a = arg;
	const struct conf *cf = proxy_server_conf(a->srv);
	a->probe = bufferevent_socket_new(a->base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (!a->probe) {
		probe_schedule(a, PROBE_INTERVAL_MS);
		return;
	}
	int ms = cf->upstream_connect_timeout_ms;
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	bufferevent_setcb(a->probe, NULL, NULL, probe_event_cb, a);
	bufferevent_set_timeouts(a->probe, NULL, &tv);
	/* may call probe_event_cb before returning (e.g. a refused loopback connect) */
	int up_port;
	const char *up_host = proxy_server_upstream(a->srv, &up_port);
	if (bufferevent_socket_connect_hostname(a->probe, proxy_server_dns(a->srv), AF_UNSPEC,
						up_host, up_port) < 0 &&
	    a->probe)
		probe_done(a, "cannot start a connect");
}

static bool mirror_reported(const struct proxy_admin *a, const char *name)
{
	for (size_t i = 0; i < a->nreported; i++)
		if (!strcmp(a->reported[i], name))
			return true;
	return false;
}

/*
 * Whether mirror `name` has sent a progress report (any partition with a
 * known progress, ISR or MinISR) or has nothing to report (it gates no topic:
 * mirror_gate_mirror_idle), asked of the gate; latched in a->reported once
 * true, so that a topic added later (syncgate-ctl --add) does not make the
 * sidecar unready — its produces are held until the mirror reports anyway.
 * Sets `why` to the last failure reason seen, if any.
 */
static bool mirror_check_reported(struct proxy_admin *a, const char *name, char *why, size_t n)
{
	if (mirror_reported(a, name))
		return true;
	bool seen = mirror_gate_mirror_reported(a->gate, name, why, n) || mirror_gate_mirror_idle(a->gate, name);
	char *copy = seen ? strdup(name) : NULL;
	char **v = copy ? realloc(a->reported, (a->nreported + 1) * sizeof(*v)) : NULL;
	if (v) {
		v[a->nreported++] = copy;
		a->reported = v;
	} else {
		free(copy);
	}
	return seen;
}

static void readyz_cb(struct evhttp_request *req, void *arg)
{
	struct proxy_admin *a = arg;
	const struct conf *cf = proxy_server_conf(a->srv);
	struct evbuffer *b = evbuffer_new();
	if (!b) {
		evhttp_send_error(req, 500, "out of memory");
		return;
	}
	if (proxy_server_shutting_down(a->srv))
		evbuffer_add_printf(b, "not ready: shutting down\n");
	if (!proxy_server_has_listener(a->srv))
		evbuffer_add_printf(b, "not ready: not listening\n");
	int up_port;
	const char *up_host = proxy_server_upstream(a->srv, &up_port);
	if (a->upstream == ADMIN_UPSTREAM_UNKNOWN)
		evbuffer_add_printf(b, "not ready: upstream %s:%d not checked yet\n", up_host, up_port);
	else if (a->upstream == ADMIN_UPSTREAM_DOWN)
		evbuffer_add_printf(b, "not ready: upstream %s:%d unreachable: %s\n", up_host, up_port,
				    a->upstream_why);
	char auth[300];
	if (mirror_source_auth_failure(auth, sizeof(auth), 30000))
		evbuffer_add_printf(b, "not ready: source clients (source.properties): authentication "
				    "failed: %s\n", auth);
	if (!mirror_gate_state_ready(a->gate))
		evbuffer_add_printf(b, "not ready: state log %s not read up to its end yet\n",
				    cf->state_topic ? cf->state_topic : "");
	for (size_t i = 0; i < cf->nmirrors; i++) {
		char why[64];
		if (mirror_check_reported(a, cf->mirrors[i].name, why, sizeof(why)))
			continue;
		evbuffer_add_printf(b, "not ready: mirror %s: no progress report yet%s%s\n",
				    cf->mirrors[i].name, *why ? "; last failure: " : "", why);
	}
	bool ready = evbuffer_get_length(b) == 0;
	if (ready)
		evbuffer_add_printf(b, "ready\n");
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain");
	evhttp_send_reply(req, ready ? 200 : 503, NULL, b); /* libevent's reason phrase */
	evbuffer_free(b);
}

static void mirrors_cb(struct evhttp_request *req, void *arg)
{
	struct proxy_admin *a = arg;
	struct evkeyvalq q;
	const char *uri = evhttp_request_get_uri(req);
	struct evhttp_uri *u = evhttp_uri_parse(uri);
	const char *query = u ? evhttp_uri_get_query(u) : NULL;
	TAILQ_INIT(&q);
	if (query)
		evhttp_parse_query_str(query, &q);
	char *json = mirror_gate_describe_json(a->gate, evhttp_find_header(&q, "mirror"),
					       evhttp_find_header(&q, "topic"));
	evhttp_clear_headers(&q);
	if (u)
		evhttp_uri_free(u);
	if (!json) {
		evhttp_send_error(req, 500, "out of memory");
		return;
	}
	reply_text(req, 200, "OK", "application/json", json);
	free(json);
}

struct proxy_admin *proxy_admin_new(struct event_base *base, const struct conf *conf,
				    struct proxy_server *srv, struct mirror_gate *gate)
{
	struct proxy_admin *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->base = base;
	a->srv = srv;
	a->gate = gate;
	a->m_up = metric_get(METRIC_GAUGE, "syncgate_upstream_up",
			     "1 when the last probe connect to upstream.broker succeeded, else 0.",
			     "", NULL, 0);
	a->probe_timer = evtimer_new(base, probe_timer_cb, a);
	if (!a->probe_timer) {
		proxy_admin_free(a);
		return NULL;
	}
	probe_schedule(a, 0);
	proxy_server_on_upstream_connect_failed(srv, probe_now, a);
	a->http = evhttp_new(base);
	if (a->http && !(a->transport = proxy_admin_transport_new(base, a->http, conf))) {
		LOG_E("admin_listen_failed", "address=%s:%d reason=\"admin.tls files could not be loaded\"",
		      conf->admin_listen.host, conf->admin_listen.port);
		proxy_admin_free(a);
		return NULL;
	}
	struct evhttp_bound_socket *bound = NULL;
	if (!a->http || !(a->conns = proxy_admin_conns_new(base, a->http, a->transport, conf)) ||
	    !(bound = evhttp_bind_socket_with_handle(a->http, conf->admin_listen.host,
						     (uint16_t)conf->admin_listen.port))) {
		LOG_E("admin_listen_failed", "address=%s:%d", conf->admin_listen.host,
		      conf->admin_listen.port);
		proxy_admin_free(a);
		return NULL;
	}
	proxy_admin_conns_bound(a->conns, bound);
	evhttp_set_allowed_methods(a->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST);
	/* admin requests are small JSON: refuse big ones before buffering them */
	evhttp_set_max_body_size(a->http, 64 * 1024);
	evhttp_set_max_headers_size(a->http, 16 * 1024);
	evhttp_set_timeout(a->http, 30);
	evhttp_set_cb(a->http, "/metrics", metrics_cb, a);
	evhttp_set_cb(a->http, "/healthz", healthz_cb, a);
	evhttp_set_cb(a->http, "/readyz", readyz_cb, a);
	evhttp_set_cb(a->http, "/v1/mirrors", mirrors_cb, a);
	proxy_admin_api_register(a->http, conf, gate, a->conns);
	LOG_I("admin_listening", "address=%s:%d tls=%s", conf->admin_listen.host, conf->admin_listen.port,
	      !conf->admin_tls.enabled ? "off" : conf->admin_tls.client_ca ? "mutual" : "on");
	if (!conf->admin_tls.enabled && !proxy_host_is_loopback(conf->admin_listen.host))
		LOG_W("admin_listen_insecure", "address=%s:%d reason=\"the admin listener is reachable beyond "
		      "loopback over plain HTTP: the bearer token and the state it guards travel in clear; "
		      "set admin.tls (and admin.tls.client_ca) or bind it to 127.0.0.1\"",
		      conf->admin_listen.host, conf->admin_listen.port);
	return a;
}

int proxy_admin_reconfigure(struct proxy_admin *a, const struct conf *conf)
{
	if (proxy_admin_transport_reconfigure(a->transport, conf) < 0)
		return -1;
	proxy_admin_conns_reconfigure(a->conns, conf);
	return 0;
}

void proxy_admin_free(struct proxy_admin *a)
{
	if (!a)
		return;
	if (a->srv)
		proxy_server_off_upstream_connect_failed(a->srv, a);
	if (a->conns)
		proxy_admin_conns_bound(a->conns, NULL); /* evhttp_free frees the listener first */
	if (a->http)
		evhttp_free(a->http);
	proxy_admin_conns_free(a->conns);
	proxy_admin_transport_free(a->transport); /* after the connections evhttp_free closed */
	if (a->probe_timer)
		event_free(a->probe_timer);
	if (a->probe)
		bufferevent_free(a->probe);
	for (size_t i = 0; i < a->nreported; i++)
		free(a->reported[i]);
	free(a->reported);
	free(a);
}
