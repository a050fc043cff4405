/*
 * security.h — abuse bounds: accept-time caps on client connections
 * (limits.c) and rate-limited logging (also used by the admin plane,
 * proxy/admin/). Loop thread, except where a function says otherwise.
 */
#ifndef SYNCGATE_PROXY_SECURITY_H
#define SYNCGATE_PROXY_SECURITY_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/util.h>

struct proxy_server;

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

#endif
