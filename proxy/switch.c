/*
 * switch.c — the data path after the switch (docs/switchover.md): this
 * sidecar serves a mirror's destination cluster behind its own addresses.
 *
 * The gate applies the mirror's SWITCH record (mirror/switch.c, read from
 * the state log like the fence, also at boot) and calls on_switch here,
 * once per process. From then on:
 *   - listen.kafka forwards to the destination's first bootstrap server, and
 *     every destination node N a response names is served at
 *     switch.host:switch.base_port + N by a listener of its own whose
 *     connections go to that node (listener.c, as gateway mode): a node id is
 *     only ever paired with an address that forwards to that node, on every
 *     sidecar (rewrite.c advertises it);
 *   - every client connection open at the switch is closed (they were paired
 *     with the source); the clients reconnect to the same addresses. A
 *     request a client sends on its old metadata to the wrong destination
 *     node is refused by that broker (NOT_LEADER_OR_FOLLOWER, NOT_COORDINATOR:
 *     retriable, and each makes the client refresh its metadata);
 *   - nothing is gated, fenced or clamped (hold.c, fence.c, clamp.c): every
 *     mirror copies the source, not the cluster served now;
 *   - the upstream TLS is switch.tls.
 * Ordering: the switch is refused unless the mirror's failover verified zero
 * RPO and its fence stands (mirror/switch.c), and the fence keeps every
 * sidecar refusing Produce to those topics on the source until it applies
 * the switch, so per partition the destination's log is the source's
 * acknowledged records followed by what clients write after the switch.
 * Loop thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/datapath.h"

static struct metric *m_serving, *m_closed;

static const struct metric_def switch_metrics[] = {
	{ &m_serving, METRIC_GAUGE, "syncgate_switch_serving_destination",
	  "1 once this sidecar serves a mirror's destination cluster (the switch applied), 0 while it "
	  "serves the source." },
	{ &m_closed, METRIC_COUNTER, "syncgate_switch_connections_closed_total",
	  "Client connections closed by the switch (each client reconnects to the destination)." },
};

/* The first `host:port` of a bootstrap list; 0, or -1 when it has none. */
static int first_bootstrap(const char *list, char *host, size_t hostcap, int *port)
{
	char one[300];
	size_t n = strcspn(list ? list : "", ",");
	if (n == 0 || n >= sizeof(one))
		return -1;
	memcpy(one, list, n);
	one[n] = '\0';
	struct conf_addr a = { 0 };
	const char *err = conf_addr_parse(one, false, &a);
	if (err || !a.host || strlen(a.host) >= hostcap) {
		free(a.host);
		return -1;
	}
	snprintf(host, hostcap, "%s", a.host);
	*port = a.port;
	free(a.host);
	return 0;
}

static void on_switch(void *arg, const struct conf_mirror *cm)
{
	struct proxy_server *srv = arg;
	METRIC_DEFS_GET(switch_metrics);
	if (srv->switched)
		return;
	char host[256];
	int port;
	if (srv->conf->switch_base_port <= 0) {
		LOG_E("switch_not_configured", "mirror=%s reason=\"the state log says mirror %s is switched, but "
		      "switch.base_port is not set here: this sidecar keeps forwarding to the source (the "
		      "failover fence still refuses Produce to its topics); configure switch.* and restart\"",
		      cm->name, cm->name);
		return;
	}
	if (first_bootstrap(cm->bootstrap, host, sizeof(host), &port) < 0) {
		LOG_E("switch_failed", "mirror=%s bootstrap=\"%s\" reason=\"no host:port in the mirror's "
		      "bootstrap list\"", cm->name, cm->bootstrap ? cm->bootstrap : "");
		return;
	}
	srv->switched = true;
	snprintf(srv->switch_mirror, sizeof(srv->switch_mirror), "%s", cm->name);
	proxy_switch_served_start(srv);
	metric_set(m_serving, 1);
	LOG_I("switch_serving_destination", "mirror=%s bootstrap=%s:%d node_listeners=%s:%d+id tls=%s",
	      cm->name, host, port, srv->conf->switch_host ? srv->conf->switch_host : "-",
	      srv->conf->switch_base_port, srv->switch_tls ? "on" : "off");
	proxy_listeners_switch(srv, host, port);
	size_t n = 0;
	struct proxy_conn *c;
	TAILQ_FOREACH(c, &srv->conns, link) {
		if (c->state == PROXY_CONN_CLOSING)
			continue;
		proxy_conn_close(c, PROXY_CLOSE_SWITCHED);
		n++;
	}
	metric_add(m_closed, (double)n);
	LOG_I("switch_connections_closed", "mirror=%s connections=%zu reason=\"paired with the source; the "
	      "clients reconnect to the same addresses and are served by the destination\"", cm->name, n);
}

void proxy_switch_register(struct proxy_server *srv)
{
	METRIC_DEFS_GET(switch_metrics);
	if (srv->gate)
		mirror_gate_on_switch(srv->gate, on_switch, srv);
}
