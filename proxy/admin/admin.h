/*
 * admin.h — the admin HTTP plane, libsgadmin (proxy/admin/: admin.c,
 * admin_api.c, admin_conns.c, admin_tls.c): /metrics, /healthz, /readyz and
 * the /v1 admin API, over HTTP or HTTPS. Used by proxy/cmd/syncgate.c; it
 * reads the data path only through proxy.h (and tls.h, security.h).
 */
#ifndef SYNCGATE_PROXY_ADMIN_H
#define SYNCGATE_PROXY_ADMIN_H

#include "proxy/proxy.h"

struct evhttp;
struct event_base;
struct bufferevent;

/* admin.c: /metrics, /healthz, /readyz and the admin API */
struct proxy_admin;
/**
 * Listen on conf->admin_listen and start the upstream readiness probe.
 * `base` is the loop `srv` runs on; `srv` and `gate` are borrowed for the
 * admin's life (the probe follows proxy_server_conf(srv) across reloads).
 * Returns NULL and logs why on failure. Loop thread.
 */
struct proxy_admin *proxy_admin_new(struct event_base *base, const struct conf *conf,
				    struct proxy_server *srv, struct mirror_gate *gate);
/** Close the listener, stop the probe and free; NULL is fine. Loop thread. */
void proxy_admin_free(struct proxy_admin *a);
/** Apply a reload: re-read admin.tls files. 0, or -1 (logged, unchanged). */
int proxy_admin_reconfigure(struct proxy_admin *a, const struct conf *conf);
struct admin_conns;
struct evhttp_connection;
/* admin_api.c: the mutating endpoints (bearer token; see proxy/cmd/syncgate-ctl.c); their calls'
 * close callbacks go through `conns` (admin_conns.c). Loop thread. */
void proxy_admin_api_register(struct evhttp *http, const struct conf *conf, struct mirror_gate *gate,
			      struct admin_conns *conns);

/* ---- admin_tls.c ---- */

struct admin_transport;

/**
 * The admin listener's transport: HTTPS when admin.tls is set (server
 * certificate, optional client CA for mTLS); plain HTTP otherwise. Returns
 * NULL (logged) when the TLS files cannot be loaded. Free it after
 * evhttp_free(http).
 */
struct admin_transport *proxy_admin_transport_new(struct event_base *base, struct evhttp *http,
						  const struct conf *conf);
/**
 * A new admin connection's bufferevent (no fd yet: evhttp sets it), TLS
 * accepting or plain, BEV_OPT_CLOSE_ON_FREE; NULL on ENOMEM (evhttp then
 * makes a plain one itself). For admin_conns.c's evhttp_set_bevcb.
 */
struct bufferevent *proxy_admin_transport_bev(struct admin_transport *t, struct event_base *base);

/**
 * Apply a reloaded conf: re-read admin.tls certificate, key and client CA
 * (new connections use them; open ones keep theirs).
 * 0, or -1 (logged) when the files cannot be loaded — then nothing changes.
 */
int proxy_admin_transport_reconfigure(struct admin_transport *t, const struct conf *conf);

/** Free; NULL is fine. Call after evhttp_free() of its http. */
void proxy_admin_transport_free(struct admin_transport *t);

/* ---- admin_conns.c ---- */

struct admin_conns;
struct evhttp_connection;
struct evhttp_bound_socket;

/**
 * The cap on concurrent admin connections (admin.max_connections): installs
 * `http`'s connection factory (evhttp_set_bevcb, making each connection's
 * bufferevent through `transport`) and counts the connections; at the cap
 * the listener given to proxy_admin_conns_bound is disabled (new
 * connections wait in the listen backlog), below it enabled. Logs
 * `admin_connections_at_cap`; metrics syncgate_admin_connections,
 * syncgate_admin_connection_cap_reached_total. NULL on ENOMEM. Loop thread.
 */
struct admin_conns *proxy_admin_conns_new(struct event_base *base, struct evhttp *http,
					  struct admin_transport *transport, const struct conf *conf);
/** The listener evhttp accepts on (NULL: forget it — before evhttp_free). */
void proxy_admin_conns_bound(struct admin_conns *cs, struct evhttp_bound_socket *bound);
/** admin.max_connections is live. */
void proxy_admin_conns_reconfigure(struct admin_conns *cs, const struct conf *conf);
/** After evhttp_free; NULL is fine. */
void proxy_admin_conns_free(struct admin_conns *cs);
/**
 * Have `fn(evcon, arg)` called when evhttp closes `evcon` (NULL `fn`: no
 * longer), without taking the connection's one close callback from the
 * count (evhttp_connection_set_closecb would replace it). A connection the
 * count does not know gets evhttp_connection_set_closecb. Loop thread.
 */
void proxy_admin_conns_on_close(struct admin_conns *cs, struct evhttp_connection *evcon,
				void (*fn)(struct evhttp_connection *evcon, void *arg), void *arg);

/** Whether `host` (an admin.listen host) is a loopback address or "localhost". */
bool proxy_host_is_loopback(const char *host);

#endif
