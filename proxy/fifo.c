/*
 * The per-connection correlation FIFO: one entry per request that expects a
 * response (acks=0 Produce takes none), in request order. Responses leave
 * only from the head, so a HELD entry holds everything behind it
 * (shared/DESIGN.md §3 invariant 2). Loop thread.
 */
#include <stdlib.h>

#include "proxy/proxy.h"

static const char *const entry_state_names[PROXY_ENTRY_STATE_COUNT] = {
	[PROXY_ENTRY_IN_FLIGHT] = "in_flight",
	[PROXY_ENTRY_HELD] = "held",
	[PROXY_ENTRY_READY] = "ready",
};

const char *proxy_entry_state_str(enum proxy_entry_state s)
{
	return s < PROXY_ENTRY_STATE_COUNT ? entry_state_names[s] : "?";
}

struct proxy_entry *proxy_entry_new(struct proxy_conn *c, enum proxy_entry_kind kind)
{
	struct proxy_entry *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->kind = kind;
	e->state = PROXY_ENTRY_IN_FLIGHT;
	e->arrival_ms = mirror_now_ms();
	TAILQ_INSERT_TAIL(&c->fifo, e, link);
	c->nfifo++;
	return e;
}

void proxy_entry_free(struct proxy_conn *c, struct proxy_entry *e)
{
	proxy_hold_cancel(c, e);
	proxy_clamp_free(e);
	TAILQ_REMOVE(&c->fifo, e, link);
	c->nfifo--;
	if (e->produce) {
		codec_produce_request_free(e->produce);
		free(e->produce);
	}
	free(e->sasl_mechanism);
	if (e->out)
		evbuffer_free(e->out);
	free(e);
}

void proxy_fifo_flush(struct proxy_conn *c)
{
	struct proxy_entry *e;
	if (!c->client)
		return;
	struct evbuffer *out = bufferevent_get_output(c->client);
	while ((e = TAILQ_FIRST(&c->fifo)) && e->state == PROXY_ENTRY_READY) {
		if (e->out)
			evbuffer_add_buffer(out, e->out);
		proxy_entry_free(c, e);
	}
	proxy_server_conn_progress(c->srv, c);
}
