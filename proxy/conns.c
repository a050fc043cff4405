/*
 * conns.c — what a connection's progress means for the server's other
 * connections: a graceful shutdown closes a connection once its FIFO is
 * empty and ends with the last one; held bytes going down resume the
 * connections the global cap paused. Called by the connection files; kept
 * out of server.c so the server sits above its connections (no call cycle
 * through it). Loop thread.
 */
#include "proxy/proxy.h"

void proxy_server_conn_progress(struct proxy_server *srv, struct proxy_conn *c)
{
	if (srv->shutting_down && c->nfifo == 0 && c->client && c->tx.state == PROXY_RX_FRAME &&
	    (c->state == PROXY_CONN_OPEN || c->state == PROXY_CONN_CONNECTING))
		proxy_conn_drain_close(c, "shutdown");
}

void proxy_server_conn_closed(struct proxy_server *srv)
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
