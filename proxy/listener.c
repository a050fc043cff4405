/*
 * Listening sockets. Sidecar mode: one listener (listen.kafka) whose
 * connections go to upstream.broker. Gateway mode: the same bootstrap
 * listener plus one listener per broker node id at advertise.base_port + id,
 * opened the first time the node appears in a response. While upstream.broker
 * is unreachable (admin.c's probe) the listeners fronting it are closed, so
 * that connects are refused rather than accepted and closed
 * (proxy_listeners_set_upstream). Loop thread.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "proxy/datapath.h"
#include "proxy/security.h"

static void accept_cb(struct evconnlistener *ev, evutil_socket_t fd, struct sockaddr *sa,
		      int salen, void *arg)
{
	struct proxy_listener *l = arg;
	if (!proxy_limits_admit(l->srv, sa)) { /* limits.c: refused before any state exists */
		evutil_closesocket(fd);
		return;
	}
	proxy_conn_accept(l, fd, sa, salen);
}

static void accept_error_cb(struct evconnlistener *ev, void *arg)
{
	int err = EVUTIL_SOCKET_ERROR();
	LOG_W("accept_failed", "error=\"%s\"", evutil_socket_error_to_string(err));
}

/* Bind l at l->host:l->port; NULL (logged) on failure. */
static struct evconnlistener *listener_bind(struct proxy_listener *l)
{
	struct evutil_addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
					 .ai_flags = EVUTIL_AI_PASSIVE | EVUTIL_AI_NUMERICSERV };
	struct evutil_addrinfo *ai = NULL;
	char portstr[16];
	snprintf(portstr, sizeof(portstr), "%d", l->port);
	int rc = evutil_getaddrinfo(l->host, portstr, &hints, &ai);
	if (rc != 0 || !ai) {
		LOG_E("listen_failed", "address=%s:%d error=\"%s\"", l->host, l->port, evutil_gai_strerror(rc));
		return NULL;
	}
	struct evconnlistener *ev = evconnlistener_new_bind(l->srv->base, accept_cb, l,
							    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 1024,
							    ai->ai_addr, (int)ai->ai_addrlen);
	evutil_freeaddrinfo(ai);
	if (!ev) {
		LOG_E("listen_failed", "address=%s:%d error=\"%s\"", l->host, l->port,
		      evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
		return NULL;
	}
	evconnlistener_set_error_cb(ev, accept_error_cb);
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	if (l->port == 0 && getsockname(evconnlistener_get_fd(ev), (struct sockaddr *)&ss, &len) == 0)
		l->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
							 : ((struct sockaddr_in *)&ss)->sin_port);
	return ev; /* port 0: the port it got, kept for a bind after a pause */
}

int proxy_listener_open(struct proxy_server *srv, const char *host, int port, int32_t node_id,
			const char *up_host, int up_port)
{
	struct proxy_listener *l = calloc(1, sizeof(*l));
	if (!l)
		return -1;
	l->srv = srv;
	l->node_id = node_id;
	snprintf(l->host, sizeof(l->host), "%s", host);
	l->port = port;
	snprintf(l->upstream_host, sizeof(l->upstream_host), "%s", up_host);
	l->upstream_port = up_port;
	l->ev = listener_bind(l);
	if (!l->ev) {
		free(l);
		return -1;
	}
	TAILQ_INSERT_TAIL(&srv->listeners, l, link);
	LOG_I("listening", "address=%s:%d node_id=%d upstream=%s:%d tls=%s", host, port, node_id,
	      up_host, up_port, srv->client_tls ? "on" : "off");
	return 0;
}

/*
 * Whether a sidecar that can switch knows which cluster it serves: with
 * switch.* configured, the state log may hold a SWITCH record, so nothing is
 * forwarded before the log was read (a restarted sidecar would otherwise
 * serve the source until it reached the record).
 */
static bool switch_state_known(const struct proxy_server *srv)
{
	return srv->switched || srv->conf->switch_base_port <= 0 || !srv->gate ||
	       mirror_gate_state_ready(srv->gate);
}

void proxy_listeners_set_upstream(struct proxy_server *srv, bool up)
{
	struct proxy_listener *l;
	bool known = switch_state_known(srv);
	TAILQ_FOREACH(l, &srv->listeners, link) {
		if (l->node_id >= 0) /* gateway: fronts another broker than upstream.broker */
			continue;
		if ((!up || !known) && l->ev) {
			/* closed, not disabled: a disabled listening socket still
			 * completes handshakes into its backlog, leaving clients
			 * connected to nothing until they time out */
			evconnlistener_free(l->ev);
			l->ev = NULL;
			LOG_W("listener_paused", "address=%s:%d upstream=%s:%d reason=\"%s\"", l->host, l->port,
			      l->upstream_host, l->upstream_port, !up
			      ? "the upstream broker is unreachable: new connections are refused until it answers again"
			      : "switch.* is configured and the state log is not read yet: new connections are "
				"refused until this sidecar knows whether it serves the source or a destination");
		} else if (known && up && !l->ev && !srv->shutting_down && (l->ev = listener_bind(l))) {
			LOG_I("listener_resumed", "address=%s:%d upstream=%s:%d", l->host, l->port,
			      l->upstream_host, l->upstream_port);
		}
	}
}

void proxy_gateway_learn_broker(struct proxy_server *srv, int32_t node_id, const char *host,
				int32_t port)
{
	struct proxy_listener *l;
	TAILQ_FOREACH(l, &srv->listeners, link) {
		if (l->node_id == node_id) {
			/* a broker may move: new connections follow its advertised address */
			if (strcmp(l->upstream_host, host) || l->upstream_port != port) {
				snprintf(l->upstream_host, sizeof(l->upstream_host), "%s", host);
				l->upstream_port = port;
			}
			return;
		}
	}
	if (srv->shutting_down)
		return;
	proxy_listener_open(srv, srv->conf->listen_kafka.host,
			    (srv->switched ? srv->conf->switch_base_port : srv->conf->advertise_base_port) + node_id,
			    node_id, host, port);
}

void proxy_listeners_switch(struct proxy_server *srv, const char *host, int port)
{
	struct proxy_listener *l, *next;
	for (l = TAILQ_FIRST(&srv->listeners); l; l = next) {
		next = TAILQ_NEXT(l, link);
		if (l->node_id >= 0) { /* gateway mode: fronts a source broker */
			LOG_I("listener_closed", "address=%s:%d node_id=%d reason=\"switched: source brokers are no "
			      "longer served\"", l->host, l->port, l->node_id);
			TAILQ_REMOVE(&srv->listeners, l, link);
			if (l->ev)
				evconnlistener_free(l->ev);
			free(l);
			continue;
		}
		snprintf(l->upstream_host, sizeof(l->upstream_host), "%s", host);
		l->upstream_port = port;
		if (!l->ev && !srv->shutting_down)
			l->ev = listener_bind(l);
		LOG_I("listener_switched", "address=%s:%d upstream=%s:%d listening=%s", l->host, l->port, host, port,
		      l->ev ? "true" : "false");
	}
}
