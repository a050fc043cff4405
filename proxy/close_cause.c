/*
 * close_cause.c — names of enum proxy_close_cause: the metric label and the
 * log text of why a connection pair closed. Pure.
 */
#include "proxy/datapath.h"

static const struct {
	const char *label, *text;
} causes[PROXY_CLOSE_CAUSE_COUNT] = {
	[PROXY_CLOSE_NONE] = {"none", ""},
	[PROXY_CLOSE_CLIENT_CLOSED] = {"client_closed", "client closed"},
	[PROXY_CLOSE_CLIENT_ERROR] = {"client_error", "client error"},
	[PROXY_CLOSE_CLIENT_HALF_CLOSED] = {"client_half_closed", "client half-closed"},
	[PROXY_CLOSE_CLIENT_HALF_CLOSE_DELIVERED] = {"client_half_close_delivered", "client half-closed: every response delivered"},
	[PROXY_CLOSE_CLIENT_MID_REQUEST] = {"client_closed_mid_request", "client closed in the middle of a request"},
	[PROXY_CLOSE_CLIENT_IDLE] = {"client_idle", "client idle (limits.client_idle_ms)"},
	[PROXY_CLOSE_CLIENT_FRAME_REFUSED] = {"client_frame_refused", "client frame refused"},
	[PROXY_CLOSE_CLIENT_FRAME_MALFORMED] = {"client_frame_malformed", "malformed client frame"},
	[PROXY_CLOSE_UPSTREAM_CONNECT_TIMEOUT] = {"upstream_connect_timeout", "upstream connect timeout"},
	[PROXY_CLOSE_UPSTREAM_CONNECT_FAILED] = {"upstream_connect_failed", "upstream connect failed"},
	[PROXY_CLOSE_UPSTREAM_CLOSED] = {"upstream_closed", "upstream closed"},
	[PROXY_CLOSE_UPSTREAM_CLOSED_CLIENT_GONE] = {"upstream_closed_client_gone", "upstream closed while the client was gone"},
	[PROXY_CLOSE_UPSTREAM_MID_RESPONSE] = {"upstream_closed_mid_response", "upstream closed in the middle of a response"},
	[PROXY_CLOSE_UPSTREAM_MID_REQUEST] = {"upstream_closed_mid_request", "upstream closed in the middle of a request"},
	[PROXY_CLOSE_UPSTREAM_FRAME_REFUSED] = {"upstream_frame_refused", "upstream frame refused"},
	[PROXY_CLOSE_UPSTREAM_FRAME_MALFORMED] = {"upstream_frame_malformed", "malformed upstream frame"},
	[PROXY_CLOSE_HELD_PRODUCE_UNENCODABLE] = {"held_produce_unencodable", "could not encode a held Produce response"},
	[PROXY_CLOSE_HELD_FETCH_UNCLAMPABLE] = {"held_fetch_unclampable", "could not clamp a held Fetch response"},
	[PROXY_CLOSE_PRODUCER_ID_REFUSED] = {"producer_id_refused", "switched: the broker issued no producer id for a client's idempotent batches"},
	[PROXY_CLOSE_OUT_OF_MEMORY] = {"out_of_memory", "out of memory"},
	[PROXY_CLOSE_SHUTDOWN] = {"shutdown", "shutdown"},
	[PROXY_CLOSE_SHUTDOWN_GRACE_EXPIRED] = {"shutdown_grace_expired", "shutdown grace period expired"},
	[PROXY_CLOSE_SWITCHED] = {"switched", "switched to the destination: the client reconnects to it"},
};

const char *proxy_close_cause_label(enum proxy_close_cause c)
{
	return (unsigned)c < PROXY_CLOSE_CAUSE_COUNT && causes[c].label ? causes[c].label : "?";
}

const char *proxy_close_cause_text(enum proxy_close_cause c)
{
	return (unsigned)c < PROXY_CLOSE_CAUSE_COUNT && causes[c].text ? causes[c].text : "?";
}
