/*
 * The proxy server: TLS contexts, listeners, the connection list, graceful
 * shutdown and live reconfiguration, and what the admin plane and the
 * programs read of it (proxy_server_conf and the rest). Loop thread.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/dns.h>

#include "proxy/datapath.h"

static int server_tls_load(struct proxy_server *srv, const struct conf *cf)
{
	SSL_CTX *client = NULL, *upstream = NULL, *sw = NULL;
	if (cf->listen_tls.enabled && !(client = proxy_tls_server_ctx(&cf->listen_tls, "listen.tls")))
		return -1;
	if ((cf->upstream_tls.enabled && !(upstream = proxy_tls_client_ctx(&cf->upstream_tls, "upstream.tls"))) ||
	    (cf->switch_tls.enabled && !(sw = proxy_tls_client_ctx(&cf->switch_tls, "switch.tls")))) {
		SSL_CTX_free(client);
		SSL_CTX_free(upstream);
		return -1;
	}
	/* existing connections keep their SSL objects (each holds a reference) */
	SSL_CTX_free(srv->client_tls);
	SSL_CTX_free(srv->upstream_tls);
	SSL_CTX_free(srv->switch_tls);
	srv->client_tls = client;
	srv->upstream_tls = upstream;
	srv->switch_tls = sw;
	return 0;
}

/* This broker recreated `name` (a new TopicId): the gate forgets what it
 * measured of the old topic, so the clamp fails closed until it is measured
 * again (the destination may still hold the old topic's records). */
static void topic_recreated(void *arg, const char *name)
{
	struct proxy_server *srv = arg;
	if (srv->gate)
		mirror_gate_topic_recreated(srv->gate, name);
}

struct proxy_server *proxy_server_new(struct event_base *base, const struct conf *conf,
				      struct mirror_gate *gate)
{
	struct proxy_server *srv = calloc(1, sizeof(*srv));
	if (!srv)
		return NULL;
	srv->base = base;
	srv->conf = conf;
	srv->gate = gate;
	srv->learn_broker = proxy_gateway_learn_broker;
	proxy_server_register_conns(srv);
	TAILQ_INIT(&srv->listeners);
	TAILQ_INIT(&srv->conns);
	srv->topic_ids = proxy_topic_ids_new();
	srv->dns = evdns_base_new(base, EVDNS_BASE_INITIALIZE_NAMESERVERS);
	if (!srv->dns)
		srv->dns = evdns_base_new(base, 0); /* no resolv.conf: IP literals still work */
	if (!srv->topic_ids || !srv->dns || server_tls_load(srv, conf) < 0 ||
	    proxy_keepalive_start(srv) < 0 ||
	    proxy_listener_open(srv, conf->listen_kafka.host, conf->listen_kafka.port, -1,
				conf->upstream_broker.host, conf->upstream_broker.port) < 0) {
		proxy_server_free(srv);
		return NULL;
	}
	proxy_switch_register(srv);
	proxy_pidmap_claims_register(srv);
	proxy_topic_ids_on_recreated(srv->topic_ids, topic_recreated, srv);
	/* switch.* configured: nothing is served before the state log says which cluster */
	if (!srv->switched && conf->switch_base_port > 0 && gate && !mirror_gate_state_ready(gate))
		proxy_listeners_set_upstream(srv, true);
	return srv;
}

void proxy_server_free(struct proxy_server *srv)
{
	if (!srv)
		return;
	struct proxy_conn *c;
	while ((c = TAILQ_FIRST(&srv->conns)))
		proxy_conn_free(c);
	struct proxy_listener *l;
	while ((l = TAILQ_FIRST(&srv->listeners))) {
		TAILQ_REMOVE(&srv->listeners, l, link);
		if (l->ev)
			evconnlistener_free(l->ev);
		free(l);
	}
	if (srv->shutdown_timer)
		event_free(srv->shutdown_timer);
	if (srv->keepalive_ev)
		event_free(srv->keepalive_ev);
	if (srv->dns)
		evdns_base_free(srv->dns, 0);
	SSL_CTX_free(srv->client_tls);
	SSL_CTX_free(srv->upstream_tls);
	SSL_CTX_free(srv->switch_tls);
	if (srv->gate)
		mirror_gate_on_switch(srv->gate, NULL, NULL);
	proxy_topic_ids_free(srv->topic_ids);
	proxy_pidmap_free(srv->pidmap);
	free(srv);
}

static void shutdown_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_server *srv = arg;
	LOG_W("shutdown_grace_expired", "connections=%zu", srv->nconns);
	struct proxy_conn *c;
	TAILQ_FOREACH(c, &srv->conns, link)
		proxy_conn_close(c, PROXY_CLOSE_SHUTDOWN_GRACE_EXPIRED);
	/* the loop breaks when the last one is freed (srv->conn_closed, conns.c) */
}

void proxy_server_shutdown(struct proxy_server *srv, int grace_ms)
{
	if (srv->shutting_down)
		return;
	srv->shutting_down = true;
	LOG_I("shutdown", "connections=%zu grace_ms=%d", srv->nconns, grace_ms);
	struct proxy_listener *l;
	TAILQ_FOREACH(l, &srv->listeners, link)
		if (l->ev)
			evconnlistener_disable(l->ev);
	srv->shutdown_timer = evtimer_new(srv->base, shutdown_deadline_cb, srv);
	struct timeval tv = { grace_ms / 1000, (grace_ms % 1000) * 1000 };
	if (srv->shutdown_timer)
		evtimer_add(srv->shutdown_timer, &tv);
	struct proxy_conn *c, *next;
	for (c = TAILQ_FIRST(&srv->conns); c; c = next) {
		next = TAILQ_NEXT(c, link);
		proxy_server_conn_progress(srv, c);
	}
	if (srv->nconns == 0)
		event_base_loopbreak(srv->base);
}

int proxy_server_reconfigure(struct proxy_server *srv, const struct conf *conf)
{
	if (server_tls_load(srv, conf) < 0)
		return -1;
	bool idle_changed = srv->conf->client_idle_ms != conf->client_idle_ms;
	srv->conf = conf;
	if (idle_changed) { /* limits.client_idle_ms is live: re-arm from each pair's last I/O */
		struct proxy_conn *c;
		TAILQ_FOREACH(c, &srv->conns, link)
			proxy_conn_idle_arm(c);
	}
	srv->conf_gen++;
	proxy_server_resume_paused(srv);
	return 0;
}

const struct conf *proxy_server_conf(const struct proxy_server *srv)
{
	return srv->conf;
}

struct evdns_base *proxy_server_dns(const struct proxy_server *srv)
{
	return srv->dns;
}

bool proxy_server_shutting_down(const struct proxy_server *srv)
{
	return srv->shutting_down;
}

bool proxy_server_has_listener(const struct proxy_server *srv)
{
	return !TAILQ_EMPTY(&srv->listeners);
}

size_t proxy_server_nconns(const struct proxy_server *srv)
{
	return srv->nconns;
}

const char *proxy_server_upstream(const struct proxy_server *srv, int *port)
{
	const struct proxy_listener *l;
	TAILQ_FOREACH(l, &srv->listeners, link)
		if (l->node_id < 0) {
			*port = l->upstream_port;
			return l->upstream_host;
		}
	*port = srv->conf->upstream_broker.port;
	return srv->conf->upstream_broker.host;
}

void proxy_server_on_upstream_connect_failed(struct proxy_server *srv, void (*fn)(void *arg),
					     void *arg)
{
	srv->upstream_connect_failed = fn;
	srv->upstream_connect_failed_arg = arg;
}

void proxy_server_off_upstream_connect_failed(struct proxy_server *srv, void *arg)
{
	if (srv->upstream_connect_failed_arg != arg)
		return;
	srv->upstream_connect_failed = NULL;
	srv->upstream_connect_failed_arg = NULL;
}
