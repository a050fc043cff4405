/*
 * proxy — the transparent Kafka-protocol sidecar (libsgproxy): libevent loop,
 * listeners, client/upstream connection pairs, framing, the per-connection
 * correlation FIFO with held entries, response rewriting (broker addresses,
 * ApiVersions, Produce error codes), the hold of gated Produce responses, the
 * consumer clamp, TLS, SASL v0 passthrough, backpressure.
 *
 * This is its public face: the server's lifecycle and what the admin plane
 * (proxy/admin/, libsgadmin) and the programs (proxy/cmd/) read of it — they
 * include this (and proxy/tls.h, proxy/security.h), never proxy/datapath.h,
 * the data path's own declarations. Loop thread, all of it.
 */
#ifndef SYNCGATE_PROXY_H
#define SYNCGATE_PROXY_H

#include <stdbool.h>
#include <stddef.h>

struct conf;
struct event_base;
struct evdns_base;
struct mirror_gate;
struct proxy_server;

/**
 * Create the proxy: TLS contexts, the listener (sidecar) or the bootstrap
 * listener (gateway). `conf` and `gate` are borrowed for the server's life.
 * Returns NULL and logs why on failure. Loop thread.
 */
struct proxy_server *proxy_server_new(struct event_base *base, const struct conf *conf,
				      struct mirror_gate *gate);

/** Close every connection and listener and free the server. Loop thread. */
void proxy_server_free(struct proxy_server *srv);

/**
 * Graceful stop: stop accepting, let in-flight requests finish within
 * `grace_ms`, then close everything and break the loop. Loop thread.
 */
void proxy_server_shutdown(struct proxy_server *srv, int grace_ms);

/** Apply a reloaded config (limits, timeouts, TLS files). Loop thread. */
int proxy_server_reconfigure(struct proxy_server *srv, const struct conf *conf);

/*
 * What the admin plane (proxy/admin/) and the programs read of the server;
 * they never read struct proxy_server itself. Loop thread, all of them.
 */
/**
 * The configuration the server runs with: proxy_server_new's, then the last
 * one proxy_server_reconfigure applied. Borrowed (its caller owns it): read it
 * again after a reload instead of keeping it.
 */
const struct conf *proxy_server_conf(const struct proxy_server *srv);
/** The server's resolver for upstream host names (on the server's loop); owned by the server. */
struct evdns_base *proxy_server_dns(const struct proxy_server *srv);
/** Whether proxy_server_shutdown was called (listeners stopped, connections draining). */
bool proxy_server_shutting_down(const struct proxy_server *srv);
/**
 * Whether the server has a Kafka listener (the sidecar's, or the gateway's
 * bootstrap listener and node listeners); one paused by
 * proxy_listeners_set_upstream still counts.
 */
bool proxy_server_has_listener(const struct proxy_server *srv);
/** Client connection pairs accepted and not yet freed. */
size_t proxy_server_nconns(const struct proxy_server *srv);
/**
 * Where listen.kafka's connections go: upstream.broker, or after the switch
 * the destination's bootstrap server (proxy/switch.c). Host borrowed until
 * the next switch or reconfiguration; port in *port. The admin plane probes it.
 */
const char *proxy_server_upstream(const struct proxy_server *srv, int *port);
/**
 * Have `fn(arg)` called each time a client's connect to upstream.broker
 * fails (connections of node id -1 listeners; the admin plane probes it at
 * once), replacing an earlier registration. `arg` is borrowed until
 * proxy_server_off_upstream_connect_failed or proxy_server_free.
 */
void proxy_server_on_upstream_connect_failed(struct proxy_server *srv, void (*fn)(void *arg),
					     void *arg);
/** Drop the registration made with `arg`; nothing when another one replaced it. */
void proxy_server_off_upstream_connect_failed(struct proxy_server *srv, void *arg);

/* listener.c */
/**
 * Whether upstream.broker answers (the admin plane's probe, proxy/admin/admin.c,
 * after every probe): while it does not, every listener whose connections go
 * to it (node_id -1) is closed, so a client's connect is refused and it moves
 * on to another broker at once, instead of a connection accepted and closed
 * (which librdkafka reports as a security.protocol mismatch); when it answers
 * again they are bound again (a failed bind is retried at the next call).
 * Connections already open are not touched. Logged as listener_paused /
 * listener_resumed. Loop thread.
 */
void proxy_listeners_set_upstream(struct proxy_server *srv, bool up);

#endif
