/*
 * Request versions newer than syncgate understands. Every API whose
 * handling depends on reading it (an API table row with `does` or an
 * endpoints_from, codec/api.c) decodes every version the newest Kafka it
 * follows serves; a request above that row's decode_max is counted
 * (syncgate_unknown_api_version_total{api}), warned (request_version_unknown,
 * at most one line in 10 s per API) and then either refused — the connection is
 * closed before anything is forwarded — or forwarded unchanged with nothing
 * read from it, as proxy_request_version_check says per API. Well-behaved
 * clients never get here for any API but ApiVersions: syncgate lowers every
 * such API's advertised maximum to its decode_max (response.c). Loop thread.
 */
#include "proxy/datapath.h"
#include "proxy/security.h"
#include "proxy/versions.h"

/* Whether the check judges row `a`: syncgate decodes, rewrites or judges it. */
static bool judged(const struct codec_api *a)
{
	return a && (a->does || a->endpoints_from >= 0);
}

/* One series and one log limiter (a line in 10 s) per judged row, by API key. */
static struct metric *m_unknown[CODEC_API_KEY_MAX + 1];
static struct proxy_log_limit unknown_log[CODEC_API_KEY_MAX + 1];

static void unknown_init(void)
{
	const char *names[CODEC_API_KEY_MAX + 1];
	struct metric *series[CODEC_API_KEY_MAX + 1];
	int16_t keys[CODEC_API_KEY_MAX + 1];
	size_t n = 0;
	for (int16_t k = 0; k <= CODEC_API_KEY_MAX; k++) {
		unknown_log[k].interval_ms = 10000;
		if (judged(codec_api_get(k)))
			keys[n] = k, names[n++] = codec_api_name(k);
	}
	metric_family_get(METRIC_COUNTER, "syncgate_unknown_api_version_total",
			  "Requests of a version newer than syncgate understands, by API "
			  "(refused or passed unchanged, see the request_version_unknown log line).",
			  NULL, "api", names, n, series);
	for (size_t i = 0; i < n; i++)
		m_unknown[keys[i]] = series[i];
}

/* Whether the consumer clamp may have to cut this connection's answers. */
static bool clamp_may_apply(const struct proxy_conn *c)
{
	const struct conf *cf = c->srv->conf;
	return cf->nmirrors > 0 && cf->consumers_clamp == CONF_CONSUMERS_CLAMP && !c->srv->switched;
}

/* Whether gate.transactions holds EndTxn(commit) answers here (commit|both). */
static bool commit_gated(const struct proxy_conn *c)
{
	const struct conf *cf = c->srv->conf;
	return cf->nmirrors > 0 && cf->gate_transactions != CONF_TXN_DATA && !c->srv->switched;
}

enum proxy_version_verdict proxy_request_version_check(struct proxy_conn *c,
							const struct codec_request_header *h)
{
	const struct codec_api *a = codec_api_get(h->api_key);
	if (!judged(a) || a->decode_max < 0 || h->api_version <= a->decode_max)
		return PROXY_VERSION_KNOWN; /* byte for byte anyway, or understood */
	enum proxy_version_verdict v = PROXY_VERSION_REFUSE;
	const char *why;
	if (a->does & CODEC_DOES_HOLD) {
		/* a Produce the gate cannot read could be acknowledged unmirrored */
		why = "the gate could not hold its response";
	} else if (a->endpoints_from >= 0 && h->api_version >= a->endpoints_from) {
		/* its answer names brokers syncgate could not rewrite (no bypass) */
		why = "its response's broker addresses could not be rewritten";
	} else if (a->does & CODEC_DOES_CLAMP) {
		/* an unclamped answer could show a consumer unmirrored records */
		if (!clamp_may_apply(c))
			v = PROXY_VERSION_PASS, why = "nothing is clamped here";
		else
			why = "the consumer clamp could not cut its answer";
	} else if (h->api_key == CODEC_API_API_VERSIONS) {
		/* the broker's answer is replaced by an UNSUPPORTED_VERSION reply naming
		 * the versions syncgate knows (response.c), as a broker answers a
		 * version it does not know: the client retries with one it can read,
		 * and the client software name is learnt from that retry */
		v = PROXY_VERSION_PASS, why = "answered UNSUPPORTED_VERSION: the client retries lower";
	} else if (h->api_key == CODEC_API_END_TXN && commit_gated(c)) {
		/* gate.transactions commit|both: an EndTxn(commit) it cannot read would
		 * be answered success before the mirrors have the transaction. Closed
		 * like a broker closes a version it does not serve: an error answer
		 * would have to be written in a layout syncgate does not know */
		why = "the commit gate could not hold its answer";
	} else if (h->api_key == CODEC_API_INIT_PRODUCER_ID || h->api_key == CODEC_API_END_TXN) {
		/* read only on a switched sidecar: the producer id the destination
		 * issues would not be mapped, and the producer's Produce refused */
		if (!c->srv->switched)
			v = PROXY_VERSION_PASS, why = "producer ids are read only once switched";
		else
			why = "the producer id it issues could not be mapped";
	} else if (h->api_key == CODEC_API_SASL_HANDSHAKE || h->api_key == CODEC_API_SASL_AUTHENTICATE) {
		/* the principal is not learnt, so consumers.exempt_principals does
		 * not exempt the connection (clamped: fail closed); raw tokens
		 * follow only SaslHandshake v0 */
		v = PROXY_VERSION_PASS, why = "the principal is not learnt (not exempt by principal)";
	} else {
		/* a row this check has no rule for yet: fail closed */
		why = "syncgate could not read what it acts on";
	}
	if (!m_unknown[CODEC_API_PRODUCE])
		unknown_init();
	metric_add(m_unknown[h->api_key], 1);
	uint64_t suppressed = 0;
	if (proxy_log_allow(&unknown_log[h->api_key], mirror_now_ms(), &suppressed))
		LOG_W("request_version_unknown", "conn=%llu peer=%s api=%s version=%d understood=%d action=%s "
		      "reason=\"%s\" suppressed=%llu", (unsigned long long)c->id, c->peer, a->name,
		      h->api_version, a->decode_max, v == PROXY_VERSION_PASS ? "pass" : "refuse", why,
		      (unsigned long long)suppressed);
	return v;
}
