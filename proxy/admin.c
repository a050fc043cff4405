/*
 * The admin HTTP listener (admin.listen, default 127.0.0.1:9464), through
 * libevent's evhttp: GET /metrics (Prometheus text format 0.0.4), GET
 * /healthz (the process is alive and its loop turns), GET /readyz (ready to
 * serve: listening and not shutting down), GET /v1/mirrors[?mirror=M&topic=T]
 * (desired/effective mirror type, lag and progress per partition, JSON).
 * Loop thread.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "proxy/proxy.h"

struct proxy_admin {
	struct evhttp *http;
	struct proxy_server *srv;
	struct mirror_gate *gate;
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

static void readyz_cb(struct evhttp_request *req, void *arg)
{
	struct proxy_admin *a = arg;
	if (a->srv->shutting_down) {
		reply_text(req, 503, "Service Unavailable", "text/plain", "shutting down\n");
		return;
	}
	reply_text(req, 200, "OK", "text/plain", "ready\n");
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
	a->srv = srv;
	a->gate = gate;
	a->http = evhttp_new(base);
	if (!a->http ||
	    evhttp_bind_socket(a->http, conf->admin_listen.host, (uint16_t)conf->admin_listen.port) < 0) {
		LOG_E("admin_listen_failed", "address=%s:%d", conf->admin_listen.host,
		      conf->admin_listen.port);
		proxy_admin_free(a);
		return NULL;
	}
	evhttp_set_allowed_methods(a->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST);
	evhttp_set_cb(a->http, "/metrics", metrics_cb, a);
	evhttp_set_cb(a->http, "/healthz", healthz_cb, a);
	evhttp_set_cb(a->http, "/readyz", readyz_cb, a);
	evhttp_set_cb(a->http, "/v1/mirrors", mirrors_cb, a);
	LOG_I("admin_listening", "address=%s:%d", conf->admin_listen.host, conf->admin_listen.port);
	return a;
}

void proxy_admin_free(struct proxy_admin *a)
{
	if (!a)
		return;
	if (a->http)
		evhttp_free(a->http);
	free(a);
}
