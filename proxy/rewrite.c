/*
 * Advertised addresses: the syncgate address that fronts a broker node id
 * (shared/DESIGN.md §1, invariant 3). Sidecar mode: `advertise.nodes[id]`
 * when given, else `advertise.template` with {host} = the broker's
 * advertised host and {id} = the node id ("{host}" when unset; the port
 * defaults to listen.kafka's). Gateway mode: the template's host
 * (or the listen host) and port `advertise.base_port + id`; a listener for
 * the node is opened as it is first seen. Loop thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/proxy.h"

/* Expand the template into `out` ("host:port" or "host"). */
static void template_expand(const char *tpl, int32_t node_id, const char *host,
			    char *out, size_t outsz)
{
	size_t o = 0;
	for (const char *p = tpl; *p && o + 1 < outsz;) {
		if (!strncmp(p, "{host}", 6)) {
			o += (size_t)snprintf(out + o, outsz - o, "%s", host);
			p += 6;
		} else if (!strncmp(p, "{id}", 4)) {
			o += (size_t)snprintf(out + o, outsz - o, "%d", node_id);
			p += 4;
		} else {
			out[o++] = *p++;
		}
		if (o >= outsz)
			o = outsz - 1;
	}
	out[o] = 0;
}

/* Split "host:port" / "[v6]:port" in place; port -1 when absent. */
static void split_host_port(char *s, char **host, int *port)
{
	char *colon = strrchr(s, ':');
	*port = -1;
	*host = s;
	if (s[0] == '[') {
		char *end = strchr(s, ']');
		if (end) {
			*end = 0;
			*host = s + 1;
			if (end[1] == ':')
				*port = atoi(end + 2);
		}
		return;
	}
	if (colon && strchr(s, ':') == colon) {
		*colon = 0;
		*port = atoi(colon + 1);
	}
}

int proxy_advertise_endpoint(void *arg, int32_t node_id, const char *host, int32_t port,
			     const char **out_host, int32_t *out_port)
{
	struct proxy_server *srv = arg;
	const struct conf *cf = srv->conf;
	static char buf[512]; /* loop thread only; borrowed until the codec call returns */

	if (cf->mode == CONF_MODE_GATEWAY) {
		proxy_gateway_learn_broker(srv, node_id, host, port);
		char *h;
		int p;
		template_expand(cf->advertise_template ? cf->advertise_template
						       : cf->listen_kafka.host,
				node_id, host, buf, sizeof(buf));
		split_host_port(buf, &h, &p);
		*out_host = h;
		*out_port = cf->advertise_base_port + node_id;
		return 0;
	}
	for (size_t i = 0; i < cf->nadvertise_nodes; i++) {
		if (cf->advertise_nodes[i].node_id == node_id) {
			*out_host = cf->advertise_nodes[i].addr.host;
			*out_port = cf->advertise_nodes[i].addr.port;
			return 0;
		}
	}
	char *h;
	int p;
	/* no template: "{host}" — the broker's host name, our listen port */
	template_expand(cf->advertise_template ? cf->advertise_template : "{host}", node_id, host,
			buf, sizeof(buf));
	split_host_port(buf, &h, &p);
	*out_host = h;
	*out_port = p > 0 ? p : cf->listen_kafka.port;
	return 0;
}
