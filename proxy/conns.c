/*
 * conns.c — what a connection's progress means for the server's other
 * connections: a graceful shutdown closes a connection once its FIFO is
 * empty and ends with the last one; held bytes going down resume the
 * connections the global cap paused. It sits above conn*.c (server.c →
 * conns.c → conn.c, conn_frames.c); the connection files below reach it through the
 * callbacks proxy_server_register_conns puts in the server, never by a
 * direct call (docs/architecture.md, no call cycle). Loop thread.
 */
#include "proxy/datapath.h"

void proxy_server_conn_progress(struct proxy_server *srv, struct proxy_conn *c)
{
	if (srv->shutting_down && c->nfifo == 0 && c->client && c->from_client.state == PROXY_DIR_FRAME &&
	    (c->state == PROXY_CONN_OPEN || c->state == PROXY_CONN_CONNECTING))
		proxy_conn_drain_close(c, PROXY_CLOSE_SHUTDOWN);
}

/* A connection was freed: finish a graceful shutdown when it was the last. */
static void conn_closed(struct proxy_server *srv)
{
	if (srv->shutting_down && srv->nconns == 0)
		event_base_loopbreak(srv->base);
}

void proxy_server_resume_paused(struct proxy_server *srv)
{
	struct proxy_conn *c, *next;
	for (c = TAILQ_FIRST(&srv->conns); c; c = next) {
		next = TAILQ_NEXT(c, link);
		if (c->client_paused)
			proxy_conn_update_flow(c);
	}
}

void proxy_server_register_conns(struct proxy_server *srv)
{
	srv->conn_progress = proxy_server_conn_progress;
	srv->conn_closed = conn_closed;
	srv->resume_paused = proxy_server_resume_paused;
}
