/*
 * advertise.c — the syncgate address that fronts a broker node (advertise.*
 * settings, docs/architecture.md). One rule for the proxy's response rewriting
 * and for routing syncgate's own clients (mirror/route.c). Thread-agnostic.
 */
#include "conf/conf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int conf_advertised_addr(const struct conf *cf, int32_t node_id, const char *host,
			 char *out, size_t outsz)
{
	char buf[512], *h;
	int p;
	if (cf->mode == CONF_MODE_GATEWAY) {
		template_expand(cf->advertise_template ? cf->advertise_template
						       : cf->listen_kafka.host,
				node_id, host, buf, sizeof(buf));
		split_host_port(buf, &h, &p);
		p = cf->advertise_base_port + node_id;
	} else {
		for (size_t i = 0; i < cf->nadvertise_nodes; i++) {
			if (cf->advertise_nodes[i].node_id == node_id) {
				h = cf->advertise_nodes[i].addr.host;
				p = cf->advertise_nodes[i].addr.port;
				goto found;
			}
		}
		/* no template: "{host}" — the broker's host name, our listen port */
		template_expand(cf->advertise_template ? cf->advertise_template : "{host}", node_id,
				host, buf, sizeof(buf));
		split_host_port(buf, &h, &p);
		if (p <= 0)
			p = cf->listen_kafka.port;
	}
found:
	if (strlen(h) >= outsz)
		return -1;
	memcpy(out, h, strlen(h) + 1);
	return p;
}
