/*
 * limits.c — accept-time abuse bounds on the Kafka listeners:
 * limits.max_connections and limits.max_connection_rate. A refused
 * connection is closed right after accept, before any state exists for it,
 * so connections already open — and the Produce responses they hold — are
 * never touched. Loop thread (the helpers are pure).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>

#include "proxy/datapath.h"
#include "proxy/security.h"

bool proxy_rate_take(struct proxy_rate *r, int rate, int64_t now_ms)
{
	if (rate <= 0)
		return true;
	if (r->last_ms == 0) {
		r->tokens = rate;
	} else if (now_ms > r->last_ms) {
		r->tokens += (double)(now_ms - r->last_ms) * rate / 1000.0;
		if (r->tokens > rate)
			r->tokens = rate;
	}
	r->last_ms = now_ms > 0 ? now_ms : 1;
	if (r->tokens < 1.0)
		return false;
	r->tokens -= 1.0;
	return true;
}

struct proxy_log_limit proxy_malformed_log;

bool proxy_log_allow(struct proxy_log_limit *l, int64_t now_ms, uint64_t *suppressed)
{
	if (l->last_ms != 0 && now_ms - l->last_ms < (l->interval_ms > 0 ? l->interval_ms : 1000)) {
		l->suppressed++;
		return false;
	}
	if (suppressed)
		*suppressed = l->suppressed;
	l->suppressed = 0;
	l->last_ms = now_ms > 0 ? now_ms : 1;
	return true;
}

static void peer_str(const struct sockaddr *sa, char *out, size_t n)
{
	char host[INET6_ADDRSTRLEN] = "?";
	int port = 0;
	if (sa && sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
	} else if (sa && sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
	}
	snprintf(out, n, "%s:%d", host, port);
}

/* One process serves one proxy server: the admission state is the loop's. */
static struct proxy_rate accept_rate;
static struct proxy_log_limit refuse_log;

bool proxy_limits_admit(struct proxy_server *srv, const struct sockaddr *sa)
{
	static struct metric *m_refused[2];
	static const char *const reasons[2] = { "max_connections", "max_connection_rate" };
	const struct conf *cf = srv->conf;
	int64_t now = mirror_now_ms();
	int why = -1;
	if (cf->max_connections > 0 && srv->nconns >= (size_t)cf->max_connections)
		why = 0;
	else if (!proxy_rate_take(&accept_rate, cf->max_connection_rate, now))
		why = 1;
	if (why < 0)
		return true;
	if (!m_refused[why]) {
		char labels[64];
		snprintf(labels, sizeof(labels), "reason=\"%s\"", reasons[why]);
		m_refused[why] = metric_get(METRIC_COUNTER, "syncgate_connections_refused_total",
					    "Client connections closed at accept by limits.max_connections "
					    "or limits.max_connection_rate, by reason.", labels, NULL, 0);
	}
	metric_add(m_refused[why], 1);
	uint64_t swallowed = 0;
	if (proxy_log_allow(&refuse_log, now, &swallowed)) {
		char peer[80];
		peer_str(sa, peer, sizeof(peer));
		LOG_W("connection_refused", "peer=%s reason=%s connections=%zu limit=%d "
		      "refused_since_last_line=%llu", peer, reasons[why], srv->nconns,
		      why == 0 ? cf->max_connections : cf->max_connection_rate,
		      (unsigned long long)swallowed);
	}
	return false;
}
