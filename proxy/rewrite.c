/*
 * Advertised addresses: the syncgate address that fronts a broker node id
 * (docs/architecture.md, invariant 3; the rule is conf_advertised_addr(),
 * shared with the routing of syncgate's own clients). Sidecar mode:
 * `advertise.nodes[id]` when given, else `advertise.template` with {host} = the broker's
 * advertised host and {id} = the node id ("{host}" when unset; the port
 * defaults to listen.kafka's). Gateway mode: the template's host
 * (or the listen host) and port `advertise.base_port + id`; a listener for
 * the node is opened as it is first seen. Loop thread.
 */
#include "proxy/datapath.h"

int proxy_advertise_endpoint(void *arg, int32_t node_id, const char *host, int32_t port,
			     const char **out_host, int32_t *out_port)
{
	struct proxy_server *srv = arg;
	static char buf[512]; /* loop thread only; borrowed until the codec call returns */

	if ((srv->conf->mode == CONF_MODE_GATEWAY || srv->switched) && srv->learn_broker)
		srv->learn_broker(srv, node_id, host, port);
	if (srv->switched) { /* a destination node: its listener on this sidecar (switch.c) */
		snprintf(buf, sizeof(buf), "%s", srv->conf->switch_host ? srv->conf->switch_host : "");
		*out_host = buf;
		*out_port = srv->conf->switch_base_port + node_id;
		return 0;
	}
	int p = conf_advertised_addr(srv->conf, node_id, host, buf, sizeof(buf));
	if (p < 0)
		return -1;
	*out_host = buf;
	*out_port = p;
	return 0;
}
