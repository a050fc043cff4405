/*
 * Client → broker: one complete request frame at a time. The frame is
 * forwarded byte-for-byte (the only in-place edit: a Produce v14 request goes
 * upstream as v13, identical on the wire), after recording what its response
 * will need: a FIFO entry (none for acks=0 Produce), the decoded Produce
 * request for the gate, the SASL mechanism of a SaslHandshake. A Produce v13
 * or Fetch v13+ request naming a TopicId this sidecar does not know is
 * preceded upstream by its own Metadata lookup (topic_lookup.c, an INTERNAL
 * entry) so the gate and the clamp can name the topic when the response
 * comes. On a switched sidecar a Produce's producer ids are rewritten first,
 * or the frame waits unread for syncgate's own InitProducerId (pidmap.c).
 * Loop thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/datapath.h"
#include "proxy/security.h"
#include "proxy/versions.h"

static struct metric *m_frames[2], *m_bytes_in, *m_acks0;

static void request_metrics_init(void)
{
	static const struct metric_def defs[] = {
		{ &m_bytes_in, METRIC_COUNTER, "syncgate_client_bytes_in_total", "Bytes received from clients." },
		{ &m_acks0, METRIC_COUNTER, "syncgate_produce_acks0_requests_total",
		  "acks=0 Produce requests (never gated, no response)." },
	};
	static const char *const apis[2] = { "Produce", "other" };
	if (m_bytes_in)
		return;
	METRIC_DEFS_GET(defs);
	metric_family_get(METRIC_COUNTER, "syncgate_requests_total", "Client requests by API.", NULL, "api", apis, 2,
			  m_frames);
}

void proxy_request_count(struct proxy_conn *c, size_t len, bool produce)
{
	(void)c;
	request_metrics_init();
	metric_add(m_bytes_in, (double)len + 4);
	metric_add(m_frames[produce ? 0 : 1], 1);
}

void proxy_request_count_acks0(void)
{
	request_metrics_init();
	metric_add(m_acks0, 1);
}

/* Which of the SASL v0 mechanisms take a known number of raw exchanges. */
int proxy_sasl_raw_exchanges(const char *mechanism)
{
	if (!mechanism)
		return -1;
	if (!strcmp(mechanism, "PLAIN") || !strcmp(mechanism, "OAUTHBEARER"))
		return 1;
	if (!strncmp(mechanism, "SCRAM-", 6))
		return 2;
	return -1; /* GSSAPI and others: until a frame looks like a Kafka request */
}

/*
 * After SaslHandshake v0, frames are raw tokens until authentication is done.
 * Returns true when this frame is a raw token.
 */
static bool sasl_raw_frame(struct proxy_conn *c, const struct codec_iov *iov, int niov)
{
	if (!c->sasl_raw)
		return false;
	if (c->sasl_raw_left > 0)
		return true;
	if (c->sasl_raw_left == 0) {
		c->sasl_raw = false;
		return false;
	}
	/* unknown count: a frame whose header parses as a known API is Kafka */
	struct codec_request_header h;
	if (codec_request_header_decode(iov, niov, &h) == CODEC_OK && codec_api_get(h.api_key) &&
	    h.api_version >= 0 && h.api_version < 100) {
		c->sasl_raw = false;
		return false;
	}
	return true;
}

/* Move the whole frame (size prefix included) to the upstream output. */
static void forward(struct proxy_conn *c, struct evbuffer *in, size_t len)
{
	proxy_write_through(c, false, in, len + 4);
}

/* Produce v14 is v13 on the wire: rewrite the header's ApiVersion in place. */
static void produce_v14_to_v13(struct evbuffer *in)
{
	unsigned char *p = evbuffer_pullup(in, 8);
	if (p) {
		p[6] = 0;
		p[7] = 13;
	}
}

/* Look up the TopicIds a Produce v13 request names that the map does not know. */
static int produce_lookup_ahead(struct proxy_conn *c, const struct codec_produce_request *req)
{
	bool unknown = c->nlookup_pending > 0;
	for (size_t t = 0; t < req->ntopics && !unknown; t++)
		unknown = !req->topics[t].name && !proxy_topic_ids_name(c->srv->topic_ids, req->topics[t].topic_id);
	if (!unknown)
		return 0; /* the usual case: every id known, nothing allocated */
	uint8_t (*ids)[16] = calloc(req->ntopics ? req->ntopics : 1, sizeof(*ids));
	size_t n = 0;
	if (!ids)
		return -1;
	for (size_t t = 0; t < req->ntopics; t++)
		if (!req->topics[t].name)
			memcpy(ids[n++], req->topics[t].topic_id, 16);
	int rc = proxy_topic_lookup_ahead(c, (const uint8_t (*)[16])ids, n);
	free(ids);
	return rc;
}

/*
 * Ahead of a request that is not a Produce: the TopicIds a consumer Fetch
 * v13+ names, and those the connection met unresolved in earlier responses,
 * are looked up before the request goes upstream (topic_lookup.c).
 */
static int fetch_lookup_ahead(struct proxy_conn *c, struct evbuffer *in, size_t len,
			      const struct codec_request_header *h)
{
	const struct conf *cf = c->srv->conf;
	if (cf->nmirrors == 0 || cf->consumers_clamp != CONF_CONSUMERS_CLAMP || c->srv->switched)
		return 0;
	uint8_t (*ids)[16] = NULL;
	size_t n = 0;
	if (h->api_key == CODEC_API_FETCH && h->api_version >= 13) {
		struct codec_iov iov[PROXY_MAX_IOV];
		int niov = proxy_buf_iov(in, 4 + h->len, len - h->len, iov, PROXY_MAX_IOV);
		if (niov < 0 || codec_fetch_request_topic_ids(iov, niov, h->api_version, &ids, &n) != CODEC_OK)
			n = 0; /* unreadable: the clamp fails closed on what it cannot name */
	} else if (c->nlookup_pending == 0) {
		return 0;
	}
	int rc = proxy_topic_lookup_ahead(c, (const uint8_t (*)[16])ids, n);
	free(ids);
	return rc;
}

static int handle_produce(struct proxy_conn *c, struct evbuffer *in, size_t len,
			  const struct codec_request_header *h)
{
	struct codec_iov iov[PROXY_MAX_IOV];
	size_t body = 4 + h->len;
	int niov = proxy_buf_iov(in, body, len - h->len, iov, PROXY_MAX_IOV);
	int16_t wire_version = h->api_version == CODEC_PRODUCE_V14 ? 13 : h->api_version;
	struct codec_produce_request *req = calloc(1, sizeof(*req));
	if (niov < 0 || !req) {
		free(req);
		return -1;
	}
	enum codec_err err = codec_produce_request_decode(iov, niov, wire_version, req);
	if (err != CODEC_OK) {
		uint64_t swallowed = 0;
		if (proxy_log_allow(&proxy_malformed_log, mirror_now_ms(), &swallowed))
			LOG_W("request_malformed", "conn=%llu peer=%s api=Produce version=%d error=%s offset=%zu "
			      "suppressed=%llu", (unsigned long long)c->id, c->peer, h->api_version,
			      codec_err_str(err), body + codec_err_offset(), (unsigned long long)swallowed);
		codec_produce_request_free(req);
		free(req);
		return -1;
	}
	/* a retry of what the source appended, while fenced: answered here (retried.c) */
	int replayed = proxy_retried_produce(c, in, len, h, wire_version, req);
	if (replayed != 0) {
		codec_produce_request_free(req);
		free(req);
		return replayed < 0 ? -1 : 0;
	}
	int fenced = proxy_fence_produce(c, in, len, h, wire_version, req); /* fenced: never forwarded */
	/* switched: producer ids rewritten, or the frame waits unread for one (pidmap.c) */
	int mapped = fenced == 0 ? proxy_pidmap_produce(c, in, len, h, wire_version, req) : 0;
	if (fenced != 0 || mapped != 0) {
		codec_produce_request_free(req);
		free(req);
		return fenced < 0 || mapped < 0 ? -1 : 0;
	}
	if (req->acks == 0) {
		/* no response will come: no FIFO slot, never gated */
		metric_add(m_acks0, 1);
		codec_produce_request_free(req);
		free(req);
		if (h->api_version == CODEC_PRODUCE_V14)
			produce_v14_to_v13(in);
		forward(c, in, len);
		return 0;
	}
	if (wire_version >= 13 && c->srv->conf->nmirrors > 0 && !c->srv->switched &&
	    produce_lookup_ahead(c, req) < 0) {
		codec_produce_request_free(req);
		free(req);
		return -1;
	}
	struct proxy_entry *e = proxy_entry_new(c, PROXY_ENTRY_KAFKA);
	if (!e) {
		codec_produce_request_free(req);
		free(req);
		return -1;
	}
	e->correlation_id = h->correlation_id;
	e->api_key = h->api_key;
	e->client_version = h->api_version;
	e->api_version = wire_version;
	/* the decoded request is large (tags, batch headers): keep a summary */
	e->produce = proxy_produce_sum_new(req);
	codec_produce_request_free(req);
	free(req);
	if (!e->produce)
		return -1;
	if (h->api_version == CODEC_PRODUCE_V14)
		produce_v14_to_v13(in);
	forward(c, in, len);
	return 0;
}

int proxy_request_handle(struct proxy_conn *c, struct evbuffer *in, size_t len)
{
	struct codec_iov iov[PROXY_MAX_IOV];
	struct codec_request_header h;
	request_metrics_init();
	bool again = c->pid_again; /* a Produce handled again after its InitProducerId (pidmap.c) */
	c->pid_again = false;
	if (!again)
		metric_add(m_bytes_in, (double)len + 4);

	/* the header is small: look at its first bytes only */
	size_t peek = len < 512 ? len : 512;
	int niov = proxy_buf_iov(in, 4, peek, iov, PROXY_MAX_IOV);
	if (niov < 0)
		return -1;
	if (sasl_raw_frame(c, iov, niov)) {
		struct proxy_entry *e = proxy_entry_new(c, PROXY_ENTRY_SASL_RAW);
		if (!e)
			return -1;
		if (!c->sasl_user[0] && len <= 1024) { /* the first token names the user */
			uint8_t tok[1024];
			struct codec_iov whole[PROXY_MAX_IOV];
			int nwhole = proxy_buf_iov(in, 4, len, whole, PROXY_MAX_IOV); /* iov: 512 B at most */
			struct codec_reader r;
			codec_reader_init(&r, whole, nwhole > 0 ? nwhole : 0);
			codec_read_raw(&r, tok, len);
			if (nwhole >= 0 && r.err == CODEC_OK)
				(void)codec_sasl_username(c->sasl_mech, tok, len, c->sasl_user, sizeof(c->sasl_user));
		}
		if (c->sasl_raw_left > 0)
			c->sasl_raw_left--;
		forward(c, in, len);
		return 0;
	}
	enum codec_err err = codec_request_header_decode(iov, niov, &h);
	if (err == CODEC_ERR_UNDERFLOW && peek < len) {
		niov = proxy_buf_iov(in, 4, len, iov, PROXY_MAX_IOV);
		err = niov < 0 ? CODEC_ERR_BAD_MSG : codec_request_header_decode(iov, niov, &h);
	}
	if (err != CODEC_OK) {
		uint64_t swallowed = 0;
		if (proxy_log_allow(&proxy_malformed_log, mirror_now_ms(), &swallowed))
			LOG_W("request_malformed", "conn=%llu peer=%s error=%s offset=%zu suppressed=%llu",
			      (unsigned long long)c->id, c->peer, codec_err_str(err), 4 + codec_err_offset(),
			      (unsigned long long)swallowed);
		return -1;
	}
	enum proxy_version_verdict known = proxy_request_version_check(c, &h);
	if (known == PROXY_VERSION_REFUSE)
		return -1;
	if (known == PROXY_VERSION_KNOWN)
		proxy_client_note(c, in, len, &h, iov, niov);
	if (h.api_key == CODEC_API_PRODUCE) {
		if (!again)
			metric_add(m_frames[0], 1);
		return handle_produce(c, in, len, &h);
	}
	if (!again)
		metric_add(m_frames[1], 1);
	if ((h.api_key == CODEC_API_END_TXN || h.api_key == CODEC_API_ADD_PARTITIONS_TO_TXN ||
	     h.api_key == CODEC_API_ADD_OFFSETS_TO_TXN || h.api_key == CODEC_API_TXN_OFFSET_COMMIT) &&
	    known == PROXY_VERSION_KNOWN) {
		/* switched: a transaction opened on the source is ended here (pidmap_txn.c) */
		int ended = h.api_key == CODEC_API_END_TXN ? proxy_pidmap_end_txn(c, in, len, &h)
							   : proxy_pidmap_source_txn(c, in, len, &h);
		if (ended != 0)
			return ended < 0 ? -1 : 0;
	}
	if (fetch_lookup_ahead(c, in, len, &h) < 0)
		return -1;
	/* a synchronous group's OffsetCommit: kept for its answer (commit_hold.c) */
	struct proxy_commit *commit = h.api_key == CODEC_API_OFFSET_COMMIT || h.api_key == CODEC_API_TXN_OFFSET_COMMIT
					      ? proxy_commit_read(c, in, len, &h)
					      : NULL;
	if (commit == (struct proxy_commit *)-1)
		return -1;
	/* an EndTxn(commit) with gate.transactions commit|both: asked about ahead of it (txn_hold.c) */
	struct proxy_txn *txn = known == PROXY_VERSION_KNOWN ? proxy_txn_read(c, in, len, &h) : NULL;
	if (txn == (struct proxy_txn *)-1)
		return -1;
	struct proxy_entry *e = proxy_entry_new(c, PROXY_ENTRY_KAFKA);
	if (!e) {
		struct proxy_entry tmp = {0};
		if (commit)
			proxy_commit_attach(&tmp, commit);
		else if (txn)
			proxy_txn_attach(&tmp, txn);
		if (tmp.release)
			tmp.release(c, &tmp);
		return -1;
	}
	if (commit)
		proxy_commit_attach(e, commit);
	if (txn)
		proxy_txn_attach(e, txn);
	e->correlation_id = h.correlation_id;
	e->api_key = h.api_key;
	e->api_version = e->client_version = h.api_version;
	if (known == PROXY_VERSION_PASS) {
		forward(c, in, len); /* too new to read (versions.c): unchanged */
		return 0;
	}
	if (h.api_key == CODEC_API_SASL_HANDSHAKE && h.api_version <= 1) {
		/* SaslHandshake v0–v1: Mechanism is the only field (int16 length + bytes) */
		niov = proxy_buf_iov(in, 4 + h.len, len - h.len, iov, PROXY_MAX_IOV);
		struct codec_reader r;
		if (niov < 0)
			return -1;
		codec_reader_init(&r, iov, niov);
		char *mech = codec_read_str(&r, false);
		snprintf(c->sasl_mech, sizeof(c->sasl_mech), "%s", mech ? mech : "");
		c->sasl_user[0] = '\0'; /* a new authentication (also KIP-368 re-authentication) */
		if (h.api_version == 0)
			e->sasl_mechanism = mech;
		else
			free(mech);
	}
	if (h.api_key == CODEC_API_SASL_AUTHENTICATE && !c->sasl_user[0]) {
		/* the first SaslAuthenticate of PLAIN/SCRAM names the user (consumers.exempt_principals) */
		uint8_t tok[1024];
		size_t n;
		niov = proxy_buf_iov(in, 4 + h.len, len - h.len, iov, PROXY_MAX_IOV);
		if (niov >= 0 &&
		    codec_sasl_authenticate_bytes(iov, niov, h.api_version, tok, sizeof(tok), &n) == CODEC_OK &&
		    codec_sasl_username(c->sasl_mech, tok, n, c->sasl_user, sizeof(c->sasl_user)) == 0)
			e->sasl_auth = true;
	}
	if ((h.api_key == CODEC_API_INIT_PRODUCER_ID || h.api_key == CODEC_API_END_TXN) &&
	    proxy_pidmap_txn_request(c, e, in, len, &h) < 0)
		return -1;
	if (proxy_clamp_request(c, e, in, len, &h) < 0)
		return -1;
	forward(c, in, len);
	return 0;
}
