/*
 * admin.h — the admin HTTP plane (admin.c, admin_api.c, admin_conns.c,
 * admin_tls.c): /metrics, /healthz, /readyz and the /v1 admin API. Used by
 * proxy/cmd/syncgate.c; it reads the data path only through proxy.h.
 */
#ifndef SYNCGATE_PROXY_ADMIN_H
#define SYNCGATE_PROXY_ADMIN_H

#include "proxy/proxy.h"

/* admin.c: /metrics, /healthz, /readyz and the admin API */
struct proxy_admin;
/**
 * Listen on conf->admin_listen and start the upstream readiness probe.
 * `srv` and `gate` are borrowed for the admin's life (the probe follows
 * srv->conf across reloads). Returns NULL and logs why on failure. Loop thread.
 */
struct proxy_admin *proxy_admin_new(struct event_base *base, const struct conf *conf,
				    struct proxy_server *srv, struct mirror_gate *gate);
/** Close the listener, stop the probe and free; NULL is fine. Loop thread. */
void proxy_admin_free(struct proxy_admin *a);
/** Apply a reload: re-read admin.tls files. 0, or -1 (logged, unchanged). */
int proxy_admin_reconfigure(struct proxy_admin *a, const struct conf *conf);
/* admin_api.c: POST /v1/alter and /v1/release (bearer token; see proxy/cmd/syncgate-ctl.c). Loop thread. */
struct evhttp;
void proxy_admin_api_register(struct evhttp *http, const struct conf *conf, struct mirror_gate *gate);

#endif
