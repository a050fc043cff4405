/*
 * conn.h — what the files of a connection pair share (private to proxy/):
 * conn.c (the pair's states and lifetime), conn_frames.c (framing in both
 * directions, refused frames, backpressure) and conn_io.c (the two ends:
 * accept, upstream connect, read/write/event callbacks). Calls go
 * conn_io.c → conn_frames.c → conn.c, never back (what a lower file asks of
 * a pair goes through c->ops). Loop thread.
 */
#ifndef SYNCGATE_PROXY_CONN_H
#define SYNCGATE_PROXY_CONN_H

#include "proxy/datapath.h"

/* Pair counters used outside conn.c (proxy_conn_new() registers them). */
extern struct metric *proxy_conn_m_accepted, *proxy_conn_m_rejected_frames, *proxy_conn_m_connect_fail;
/* syncgate_client_half_closes_total: delivered, client_gone */
extern struct metric *proxy_conn_m_half_closed[2];

/*
 * A new pair in CONNECTING, counted in srv->conns, its bufferevents not
 * created yet; `ops` is what the files that handle its frames may ask of it.
 * NULL when out of memory (nothing to free then).
 */
struct proxy_conn *proxy_conn_new(struct proxy_listener *lst, struct proxy_server *srv,
				  const struct proxy_conn_ops *ops);

/*
 * The one place a pair's state changes (conn.c): logs the transition at
 * debug, keeps `cause` (unless PROXY_CLOSE_NONE) as the pair's close cause,
 * arms the idle check on entry into OPEN and stops it otherwise.
 */
void proxy_conn_set_state(struct proxy_conn *c, enum proxy_conn_state s, enum proxy_close_cause cause);

/* A LINGERING or HALF_CLOSED pair with nothing left to move closes (conn.c). */
void proxy_conn_linger_check(struct proxy_conn *c);

/*
 * The frames waiting in the client input go upstream (`all`: the client
 * closed, read them all, backpressure aside). Returns -1 when the pair is
 * closing, else 0 (conn_frames.c).
 */
int proxy_conn_client_frames(struct proxy_conn *c, bool all);

/*
 * Handle what the upstream input holds: the rest of a streamed response,
 * then frame after frame; a LINGERING or HALF_CLOSED pair with nothing left
 * closes (conn_frames.c).
 */
void proxy_conn_upstream_frames(struct proxy_conn *c);

#endif
