/*
 * clamp_who.c — which clients the consumer clamp applies to: none with
 * consumers.clamp: pass or no mirror; not to an exempt one (its verified TLS
 * certificate or broker-accepted SASL user in consumers.exempt_principals,
 * its client id in consumers.exempt_client_ids); warned about once per id
 * when an unexempt client looks like a mirror tool, or an exempt one reads
 * read_committed against an mm2 mirror set up read_uncommitted. Loop thread.
 */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/bufferevent_ssl.h>

#include "proxy/clamp.h"

/* Client ids that look like MirrorMaker 2 / Connect source tasks. */
static bool looks_like_mirror_reader(const char *id)
{
	static regex_t re;
	static int state; /* 0 not compiled, 1 ok, -1 failed */
	if (state == 0)
		state = regcomp(&re, "mirror.?maker|MirrorSourceConnector|connector-consumer-Mirror",
				REG_EXTENDED | REG_ICASE | REG_NOSUB) == 0 ? 1 : -1;
	return state == 1 && regexec(&re, id, 0, NULL, 0) == 0;
}

/* Client ids already warned about, for a once-per-id warning: the first 64
 * are remembered, later ones are warned about each time. Loop thread. */
struct seen_ids {
	char *id[64];
	size_t n;
};

/* True unless `id` is in `s`; remembers it while there is room. */
static bool first_sight(struct seen_ids *s, const char *id)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->id[i], id))
			return false;
	if (s->n < sizeof(s->id) / sizeof(s->id[0]) && (s->id[s->n] = strdup(id)) != NULL)
		s->n++;
	return true;
}

/* Warn once per client id (a bounded set of ids is remembered). */
static void warn_mirror_reader(struct proxy_conn *c, const char *id)
{
	mirror_gate_note_unexempt_reader(c->srv->gate, id); /* for --alter --sync's answer */
	static struct seen_ids seen;
	if (!first_sight(&seen, id))
		return;
	LOG_W("consumer_clamp_mirror_reader", "conn=%llu peer=%s client_id=\"%s\" reason=\"this client "
	      "looks like a mirror tool (MirrorMaker 2) reading the source through syncgate; its "
	      "fetches are clamped to what the mirrors already have, so it may never catch up: add "
	      "its client id to consumers.exempt_client_ids\"", (unsigned long long)c->id, c->peer, id);
}

/*
 * Whether the client's principal matches consumers.exempt_principals: its
 * verified TLS certificate (subject or CN) or the SASL user the broker
 * accepted (response.c). Decided once per config and principal.
 */
static bool principal_exempt(struct proxy_conn *c)
{
	const struct conf *cf = c->srv->conf;
	if (!cf->nconsumers_exempt_principals || !c->client)
		return false;
	if (c->principal_exempt_gen == c->srv->conf_gen + 1)
		return c->principal_exempt;
	char subject[512] = "", cn[256] = "";
	bool tls = c->srv->client_tls &&
		   proxy_tls_peer_subject(bufferevent_openssl_get_ssl(c->client), subject, sizeof(subject), cn,
					  sizeof(cn)) == 0;
	bool by_tls = tls && conf_consumer_exempt_principal(cf, subject, cn);
	bool by_sasl = !by_tls && c->sasl_principal[0] &&
		       conf_consumer_exempt_principal(cf, NULL, c->sasl_principal);
	c->principal_exempt = by_tls || by_sasl;
	c->principal_exempt_gen = c->srv->conf_gen + 1;
	if (by_tls)
		LOG_I("consumer_clamp_exempt_principal", "conn=%llu peer=%s subject=\"%s\" reason=\"the TLS "
		      "certificate matches consumers.exempt_principals: its fetches are not clamped\"",
		      (unsigned long long)c->id, c->peer, subject);
	else if (by_sasl)
		LOG_I("consumer_clamp_exempt_principal", "conn=%llu peer=%s sasl_user=\"%s\" reason=\"the SASL "
		      "user matches consumers.exempt_principals: its fetches are not clamped\"",
		      (unsigned long long)c->id, c->peer, c->sasl_principal);
	return c->principal_exempt;
}

/*
 * An exempt mirror reader fetching read_committed (an exactly-once MirrorMaker
 * 2): transactional producers' commits on its SYNC topics can never happen
 * (docs/operating.md, Transactions). Warned once per client id, since an
 * `offsets: mm2` mirror is configured as read_uncommitted (the default) —
 * then syncgate did not warn at --sync. Loop thread.
 */
void proxy_clamp_note_read_committed_reader(struct proxy_conn *c, const char *id)
{
	const struct conf *cf = c->srv->conf;
	const char *mirror = NULL;
	for (size_t m = 0; m < cf->nmirrors && !mirror; m++)
		if (cf->mirrors[m].offsets == CONF_OFFSETS_MM2 &&
		    cf->mirrors[m].mm2_isolation_level != CONF_ISOLATION_READ_COMMITTED)
			mirror = cf->mirrors[m].name;
	if (!mirror)
		return;
	static struct seen_ids seen;
	if (!first_sight(&seen, id))
		return;
	LOG_W("mirror_reader_read_committed", "conn=%llu peer=%s client_id=\"%s\" mirror=%s reason=\"an exempt "
	      "mirror reader fetches read_committed, but mirror %s is configured mm2_isolation_level: "
	      "read_uncommitted; if this is its MirrorMaker 2, transactional producers' commits on its SYNC topics "
	      "time out (their data acks wait for MM2, MM2 waits for the COMMIT): run MM2 read_uncommitted, or "
	      "set mm2_isolation_level: read_committed to be warned at --sync\"", (unsigned long long)c->id,
	      c->peer, id, mirror, mirror);
}

/* Counted in syncgate_consumer_exempt_requests_total. */
static enum proxy_clamp_who exempt(void)
{
	static struct metric *m;
	if (!m)
		m = metric_get(METRIC_COUNTER, "syncgate_consumer_exempt_requests_total",
			       "Consumer requests not clamped because their client id is in "
			       "consumers.exempt_client_ids or their TLS certificate matches "
			       "consumers.exempt_principals.", "", NULL, 0);
	metric_add(m, 1);
	return PROXY_CLAMP_EXEMPT;
}

enum proxy_clamp_who proxy_clamp_client(struct proxy_conn *c, const struct codec_iov *iov, int niov,
				       const struct codec_request_header *h, char *exempt_id, size_t cap)
{
	const struct conf *cf = c->srv->conf;
	if (cf->consumers_clamp != CONF_CONSUMERS_CLAMP || cf->nmirrors == 0)
		return PROXY_CLAMP_OFF;
	if (principal_exempt(c))
		return exempt();
	if (h->client_id.len <= 0)
		return PROXY_CLAMP_CLAMPED;
	char id[256];
	size_t n = (size_t)h->client_id.len < sizeof(id) - 1 ? (size_t)h->client_id.len : sizeof(id) - 1;
	struct codec_reader r;
	codec_reader_init(&r, iov, niov);
	codec_reader_seek(&r, h->client_id.off);
	codec_read_raw(&r, id, n);
	id[n] = '\0';
	if (conf_consumer_exempt(cf, id)) {
		snprintf(exempt_id, cap, "%s", id);
		return exempt();
	}
	if (looks_like_mirror_reader(id))
		warn_mirror_reader(c, id);
	return PROXY_CLAMP_CLAMPED;
}
