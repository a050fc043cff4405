/*
 * security.h — abuse bounds and the admin plane's transport:
 * accept-time caps on client connections (limits.c), HTTPS/mTLS on the
 * admin listener (admin_tls.c), and rate-limited
 * logging for both. Loop thread, except where a function says otherwise.
 */
#ifndef SYNCGATE_PROXY_SECURITY_H
#define SYNCGATE_PROXY_SECURITY_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/util.h>

struct proxy_server;
struct conf;
struct evhttp;
struct event_base;

/* ---- limits.c ---- */

/** A token bucket of `rate` tokens per second holding at most `rate`. */
struct proxy_rate {
	double tokens;
	int64_t last_ms;   /* 0: never used (starts full) */
};

/**
 * Take one token at `now_ms` (monotonic); true when there was one. `rate`
 * ≤ 0 means no limit (always true). Pure; any thread (one bucket per thread).
 */
bool proxy_rate_take(struct proxy_rate *r, int rate, int64_t now_ms);

/** At most one log line per `interval_ms` (0: one second) per site; counts
 * what it swallowed. Zero-initialised static storage is a ready limiter. */
struct proxy_log_limit {
	int64_t last_ms;
	uint64_t suppressed; /* lines not written since the last one */
	int64_t interval_ms; /* 0: 1000 */
};

/**
 * Whether a line may be written now; when true, *suppressed (if not NULL)
 * gets how many were swallowed before it. Any thread (one limiter per thread).
 */
bool proxy_log_allow(struct proxy_log_limit *l, int64_t now_ms, uint64_t *suppressed);

/** The request_malformed lines (client input: one a second, loop thread). */
extern struct proxy_log_limit proxy_malformed_log;

/**
 * Accept-time admission of a client connection on a Kafka listener:
 * limits.max_connections (against srv->nconns) and
 * limits.max_connection_rate. Returns true to accept; false when refused —
 * logged (rate-limited `connection_refused`) and counted
 * (`syncgate_connections_refused_total{reason}`); the caller closes `fd`.
 * Never touches connections already open.
 */
bool proxy_limits_admit(struct proxy_server *srv, const struct sockaddr *sa);

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

/** Whether `host` (an admin.listen host) is a loopback address or "localhost". */
bool proxy_host_is_loopback(const char *host);

#endif
