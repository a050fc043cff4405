/*
 * Broker → client: one complete response frame at a time, matched to the
 * FIFO head by correlation id. Frames pass byte-for-byte unless they carry
 * broker addresses (rewritten to syncgate addresses), are ApiVersions
 * (capped to what syncgate decodes; Produce v14 advertised), or are gated
 * Produce responses (held). Loop thread.
 */
#include <stdlib.h>
#include <string.h>

#include "proxy/datapath.h"
#include "proxy/stream.h"

static struct metric *m_bytes_out, *m_rewritten;

static const struct metric_def response_metrics[] = {
	{ &m_bytes_out, METRIC_COUNTER, "syncgate_upstream_bytes_in_total", "Bytes received from the broker." },
	{ &m_rewritten, METRIC_COUNTER, "syncgate_responses_rewritten_total",
	  "Responses whose broker addresses or versions were rewritten." },
};

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/*
 * Make the entry READY with the frame moved out of `in` unchanged, or — when
 * it is the FIFO head — straight to the client.
 */
static void respond_unchanged(struct proxy_conn *c, struct proxy_entry *e,
			      struct evbuffer *in, size_t len)
{
	if (e == TAILQ_FIRST(&c->fifo)) {
		proxy_write_through(c, true, in, len + 4);
		proxy_entry_set_state(c, e, PROXY_ENTRY_READY);
	} else {
		e->out = evbuffer_new();
		if (e->out)
			evbuffer_remove_buffer(in, e->out, len + 4);
		else
			evbuffer_drain(in, len + 4);
		proxy_entry_set_state(c, e, PROXY_ENTRY_READY);
	}
	proxy_fifo_flush(c);
}

/*
 * Replace bytes [body_off + s->off, +s->del) of the frame with s->ins and
 * make the entry READY. `in` loses the whole frame.
 */
static int respond_spliced(struct proxy_conn *c, struct proxy_entry *e, struct evbuffer *in,
			   size_t len, size_t body_off, const struct codec_splice *s)
{
	struct evbuffer *out = evbuffer_new();
	if (!out)
		return -1;
	size_t new_len = len - s->del + s->ins.len;
	uint8_t size[4];
	put_be32(size, (uint32_t)new_len);
	evbuffer_add(out, size, 4);
	evbuffer_drain(in, 4);
	evbuffer_remove_buffer(in, out, body_off + s->off);
	evbuffer_drain(in, s->del);
	evbuffer_add(out, s->ins.data, s->ins.len);
	evbuffer_remove_buffer(in, out, len - body_off - s->off - s->del);
	e->out = out;
	proxy_entry_set_state(c, e, PROXY_ENTRY_READY);
	metric_add(m_rewritten, 1);
	proxy_fifo_flush(c);
	return 0;
}

/* Learn TopicId → name from a client's Metadata response (v10+) from this broker. */
static void learn_topic_ids(struct proxy_conn *c, const struct codec_iov *iov, int niov,
			    int16_t version)
{
	if (version < 10)
		return;
	struct codec_metadata_topics t = { 0 };
	if (codec_metadata_response_topics(iov, niov, version, &t) == CODEC_OK)
		for (size_t i = 0; i < t.n; i++)
			if (t.v[i].error_code == CODEC_ERROR_NONE)
				proxy_topic_ids_learn(c->srv->topic_ids, t.v[i].topic_id, t.v[i].name,
						      PROXY_TOPIC_ID_SEEN);
	codec_metadata_topics_free(&t);
}

/*
 * The answer to an ApiVersions request newer than syncgate decodes
 * (versions.c passed it): what a broker answers a version it does not know,
 * UNSUPPORTED_VERSION in the v0 layout naming the ApiVersions versions it
 * serves (KIP-511) — here those syncgate decodes too: the broker's own
 * range when it answered that way, capped to CODEC_API_VERSIONS_MAX, else
 * 0 to CODEC_API_VERSIONS_MAX. The client retries with one of them, so no
 * client sees an answer syncgate did not rewrite. Returns 1 (`out` holds the
 * body), 0 on an encoding failure (the caller closes rather than forward).
 */
static int api_versions_too_new(const struct codec_iov *iov, int niov, struct codec_buf *out)
{
	struct codec_api_version_range own = {CODEC_API_API_VERSIONS, 0, CODEC_API_VERSIONS_MAX, {0}};
	struct codec_api_versions_response m = { 0 };
	struct codec_reader r;
	codec_reader_init(&r, iov, niov);
	bool v0_error = codec_read_i16(&r) == CODEC_ERROR_UNSUPPORTED_VERSION && r.err == CODEC_OK &&
			codec_api_versions_response_decode(iov, niov, 0, &m) == CODEC_OK;
	struct codec_api_version_range *range = &own;
	for (size_t i = 0; v0_error && i < m.napi_keys; i++)
		if (m.api_keys[i].api_key == CODEC_API_API_VERSIONS)
			range = &m.api_keys[i];
	if (range->max_version > CODEC_API_VERSIONS_MAX)
		range->max_version = CODEC_API_VERSIONS_MAX;
	if (range->min_version > range->max_version)
		range = &own; /* a broker that serves none syncgate knows: it answers the retry */
	struct codec_api_versions_response reply = {
		.error_code = CODEC_ERROR_UNSUPPORTED_VERSION, .api_keys = range, .napi_keys = 1, .v0_layout = true,
	};
	codec_buf_init(out, 1u << 16);
	int ok = codec_api_versions_response_encode(&reply, 0, out) == CODEC_OK;
	codec_api_versions_response_free(&m);
	if (!ok)
		codec_buf_free(out);
	return ok;
}

/*
 * ApiVersions: lower the max of every API syncgate decodes to what it can
 * decode (never below the broker's min, never raising a min), and offer
 * Produce v14 when the broker serves v13 (gate.advertise_produce_v14: auto).
 * The v0-layout UNSUPPORTED_VERSION reply passes unchanged.
 * Returns 1 when `out` holds a new body, 0 to forward unchanged.
 */
static int api_versions_rewrite(struct proxy_conn *c, const struct codec_iov *iov, int niov,
				int16_t version, struct codec_buf *out)
{
	struct codec_api_versions_response m = { 0 };
	int changed = 0;
	if (version > CODEC_API_VERSIONS_MAX)
		return api_versions_too_new(iov, niov, out);
	if (codec_api_versions_response_decode(iov, niov, version, &m) != CODEC_OK ||
	    m.v0_layout || m.error_code != 0) {
		codec_api_versions_response_free(&m);
		return 0;
	}
	for (size_t i = 0; i < m.napi_keys; i++) {
		struct codec_api_version_range *a = &m.api_keys[i];
		const struct codec_api *api = codec_api_get(a->api_key);
		if (a->api_key == CODEC_API_INIT_PRODUCER_ID) {
			/* the version syncgate's own InitProducerId uses (pidmap.c) */
			c->init_pid_max = a->max_version;
			c->init_pid_known = true;
		}
		if (a->api_key == CODEC_API_PRODUCE) {
			if (a->max_version >= 13 &&
			    c->srv->conf->gate_advertise_produce_v14 == CONF_V14_AUTO) {
				a->max_version = CODEC_PRODUCE_V14;
				changed = 1;
				continue;
			}
		}
		if (api && api->decode_max >= 0 && a->max_version > api->decode_max &&
		    api->decode_max >= a->min_version) {
			a->max_version = api->decode_max;
			changed = 1;
		}
	}
	if (changed) {
		codec_buf_init(out, 1u << 20);
		if (codec_api_versions_response_encode(&m, version, out) != CODEC_OK) {
			codec_buf_free(out);
			changed = 0;
		}
	}
	codec_api_versions_response_free(&m);
	return changed;
}

/* A response to syncgate's own request (internal.c): a Metadata response
 * answers a TopicId lookup (topic_lookup.c), an InitProducerId one gives a
 * switched client's producer its id (pidmap.c), DescribeTransactions and
 * ListOffsets ones tell a held commit about its transaction (txn_hold.c), a
 * keepalive's is dropped; nothing is sent. */
static void internal_response(struct proxy_conn *c, struct proxy_entry *e,
			      struct evbuffer *in, size_t len, size_t hdr_len)
{
	struct codec_iov iov[PROXY_MAX_IOV];
	int niov = e->api_key != CODEC_API_API_VERSIONS
			   ? proxy_buf_iov(in, 4 + hdr_len, len - hdr_len, iov, PROXY_MAX_IOV)
			   : -1;
	if (e->api_key == CODEC_API_INIT_PRODUCER_ID && proxy_pidmap_end_txn_owns(e))
		proxy_pidmap_end_txn_answer(c, e, iov, niov); /* a waiting EndTxn's answer (pidmap_txn.c) */
	else if (e->api_key == CODEC_API_INIT_PRODUCER_ID)
		proxy_pidmap_answer(c, e, iov, niov); /* closes the pair when no id came */
	else if (e->api_key == CODEC_API_DESCRIBE_TRANSACTIONS)
		proxy_txn_describe_answer(c, e, iov, niov); /* a held commit's transaction (txn_hold.c) */
	else if (e->api_key == CODEC_API_LIST_OFFSETS)
		proxy_txn_offsets_answer(c, e, iov, niov);
	else if (niov >= 0 && e->api_key == CODEC_API_METADATA)
		proxy_topic_lookup_answer(c, e, iov, niov);
	evbuffer_drain(in, len + 4);
	proxy_entry_set_state(c, e, PROXY_ENTRY_READY);
	proxy_fifo_flush(c);
}

/* The oldest entry whose response is awaited, or NULL (logged: a response
 * nobody asked for). */
static struct proxy_entry *in_flight_head(struct proxy_conn *c, size_t len)
{
	struct proxy_entry *e;
	TAILQ_FOREACH(e, &c->fifo, link)
		if (e->state == PROXY_ENTRY_IN_FLIGHT)
			return e;
	LOG_W("response_unexpected", "conn=%llu peer=%s size=%zu", (unsigned long long)c->id, c->peer, len);
	return NULL;
}

/*
 * The broker accepted the SASL message that named c->sasl_user: that user is
 * the connection's principal (consumers.exempt_principals). Sound because a
 * SASL listener serves no other request before authentication succeeds and
 * closes the connection when it fails; a listener without SASL never
 * answers SaslAuthenticate with ErrorCode 0.
 */
static void sasl_principal_confirmed(struct proxy_conn *c)
{
	if (!c->sasl_user[0] || !strcmp(c->sasl_principal, c->sasl_user))
		return;
	snprintf(c->sasl_principal, sizeof(c->sasl_principal), "%s", c->sasl_user);
	c->principal_exempt_gen = 0; /* decide the exemption again */
}

/*
 * How the response to entry `e` is handled: read (buffered whole and
 * decoded, rewritten or judged), or streamed as it arrives (stream: judged
 * or rewritten on the way; neither: byte for byte). Decided from the API
 * table's columns (codec_api.does, endpoints_from) and what the request left
 * on the entry — the one place the buffered path (proxy_response_handle)
 * and the streaming decision (proxy_response_stream_start) ask.
 */
struct response_plan {
	bool body;    /* the body is read once any clamp ran: endpoints, ApiVersions, SASL, a held Produce */
	bool buffer;  /* the frame is buffered whole first (a body read that cannot stream, a clamp) */
	bool scan;    /* streamed, it is judged or rewritten on the way (a large Fetch) */
};

static struct response_plan response_plan(const struct proxy_entry *e)
{
	const struct codec_api *a = codec_api_get(e->api_key);
	unsigned does = a ? a->does : 0;
	int16_t key = e->api_key, version = e->api_version;
	bool endpoints = codec_response_has_endpoints(key, version);
	struct response_plan p = {false, false, false};
	if (does & CODEC_DOES_READ_RESPONSE) {
		/* SaslHandshake: only v0 starts raw tokens; SaslAuthenticate: only
		 * while the principal is unknown (request.c set e->sasl_auth) */
		p.body = key == CODEC_API_SASL_HANDSHAKE ? version == 0
		       : key == CODEC_API_SASL_AUTHENTICATE ? e->sasl_auth
		       : key == CODEC_API_INIT_PRODUCER_ID || key == CODEC_API_END_TXN
			       ? proxy_pidmap_reads_response(e) || e->txn != NULL
		       : key == CODEC_API_OFFSET_COMMIT ? e->commit != NULL
		       : true;
	}
	if ((does & CODEC_DOES_HOLD) && e->produce)
		p.body = true; /* a gated Produce: its summary says which partitions */
	if (endpoints)
		p.body = true;
	bool clamped = (does & CODEC_DOES_CLAMP) && e->clamp;
	bool clamp_streams = clamped && proxy_clamp_streams(e);
	if (does & CODEC_DOES_STREAM)
		p.scan = clamp_streams || (endpoints && !clamped);
	p.buffer = (p.body && !p.scan) || (clamped && !clamp_streams);
	return p;
}

int proxy_response_handle(struct proxy_conn *c, struct evbuffer *in, size_t len)
{
	METRIC_DEFS_GET(response_metrics);
	metric_add(m_bytes_out, (double)len + 4);
	struct proxy_entry *e = in_flight_head(c, len);
	if (!e)
		return -1;
	if (c->srv->switched && !c->srv->switch_first_served && e->kind == PROXY_ENTRY_KAFKA)
		proxy_switch_served(c->srv);
	if (!c->client) {
		/* LINGERING: the client is gone, nobody reads this response */
		evbuffer_drain(in, len + 4);
		proxy_entry_free(c, e);
		return 0;
	}
	if (e->kind == PROXY_ENTRY_SASL_RAW) {
		/* the broker answered a raw token (a failed one closes instead) */
		sasl_principal_confirmed(c);
		respond_unchanged(c, e, in, len);
		return 0;
	}

	struct codec_iov iov[PROXY_MAX_IOV];
	size_t peek = len < 64 ? len : 64;
	int niov = proxy_buf_iov(in, 4, peek, iov, PROXY_MAX_IOV);
	int32_t correlation_id;
	size_t hdr_len;
	if (niov < 0 || codec_response_header_decode(iov, niov, e->api_key, e->api_version,
						     &correlation_id, &hdr_len) != CODEC_OK)
		return -1;
	if (correlation_id != e->correlation_id) {
		LOG_W("correlation_mismatch", "conn=%llu api=%s expected=%d got=%d",
		      (unsigned long long)c->id, codec_api_name(e->api_key), e->correlation_id,
		      correlation_id);
		return -1;
	}
	if (e->kind == PROXY_ENTRY_INTERNAL) {
		internal_response(c, e, in, len, hdr_len);
		return 0;
	}

	if (e->clamp) {
		/* consumers see only mirrored records (clamp.c) */
		int rc = proxy_clamp_response(c, e, in, len, hdr_len);
		if (rc != 0)
			return rc < 0 ? -1 : 0;
	}
	int16_t key = e->api_key, version = e->api_version;
	bool sasl_v0 = key == CODEC_API_SASL_HANDSHAKE && version == 0;
	bool endpoints = codec_response_has_endpoints(key, version);
	if (!response_plan(e).body) {
		respond_unchanged(c, e, in, len);
		return 0;
	}
	size_t body_off = 4 + hdr_len;
	niov = proxy_buf_iov(in, body_off, len - hdr_len, iov, PROXY_MAX_IOV);
	if (niov < 0)
		return -1;

	if (sasl_v0) {
		/* ErrorCode first: on success the raw token exchange starts */
		struct codec_reader r;
		codec_reader_init(&r, iov, niov);
		if (codec_read_i16(&r) == 0 && r.err == CODEC_OK) {
			c->sasl_raw = true;
			c->sasl_raw_left = proxy_sasl_raw_exchanges(e->sasl_mechanism);
		}
		respond_unchanged(c, e, in, len);
		return 0;
	}
	if (e->sasl_auth) {
		/* SaslAuthenticate: ErrorCode first */
		struct codec_reader r;
		codec_reader_init(&r, iov, niov);
		if (codec_read_i16(&r) == 0 && r.err == CODEC_OK)
			sasl_principal_confirmed(c);
		respond_unchanged(c, e, in, len);
		return 0;
	}
	if (key == CODEC_API_PRODUCE) {
		int held = proxy_hold_produce(c, e, in, len, hdr_len, iov, niov);
		if (held < 0)
			return -1;
		if (held)
			return 0;
	}
	if (key == CODEC_API_OFFSET_COMMIT && e->commit) {
		int held = proxy_commit_hold(c, e, in, len, hdr_len, iov, niov);
		if (held < 0)
			return -1;
		if (held)
			return 0;
	}
	if (key == CODEC_API_END_TXN && e->txn) {
		int held = proxy_txn_hold(c, e, in, len, hdr_len, iov, niov);
		if (held < 0)
			return -1;
		if (held)
			return 0;
	}
	if (key == CODEC_API_API_VERSIONS) {
		struct codec_splice s = { 0 };
		if (api_versions_rewrite(c, iov, niov, version, &s.ins)) {
			s.changed = true;
			s.del = len - hdr_len;
			int rc = respond_spliced(c, e, in, len, hdr_len, &s);
			codec_buf_free(&s.ins);
			return rc;
		}
		if (version > CODEC_API_VERSIONS_MAX)
			return -1; /* never an answer syncgate could not read */
		respond_unchanged(c, e, in, len);
		return 0;
	}
	if (key == CODEC_API_METADATA)
		learn_topic_ids(c, iov, niov, version);
	if (key == CODEC_API_INIT_PRODUCER_ID || key == CODEC_API_END_TXN)
		proxy_pidmap_issued(c, e, iov, niov); /* switched: a transactional id's producer id */
	if (!endpoints) {
		respond_unchanged(c, e, in, len);
		return 0;
	}
	struct codec_splice s = { 0 };
	enum codec_err err = codec_response_rewrite_endpoints(key, version, iov, niov,
							      proxy_advertise_endpoint, c->srv, &s);
	if (err != CODEC_OK) {
		/* never forward an address we could not rewrite */
		LOG_W("response_malformed", "conn=%llu api=%s version=%d error=%s offset=%zu",
		      (unsigned long long)c->id, codec_api_name(key), version, codec_err_str(err),
		      body_off + codec_err_offset());
		codec_buf_free(&s.ins);
		return -1;
	}
	int rc = 0;
	if (s.changed)
		rc = respond_spliced(c, e, in, len, hdr_len, &s);
	else
		respond_unchanged(c, e, in, len);
	codec_buf_free(&s.ins);
	return rc;
}

int proxy_response_stream_start(struct proxy_conn *c, struct evbuffer *in, size_t len)
{
	METRIC_DEFS_GET(response_metrics);
	struct proxy_entry *e = in_flight_head(c, len);
	if (!e)
		return -1;
	if (e->kind == PROXY_ENTRY_INTERNAL)
		return 2;
	size_t hdr_len = 0;
	bool scan = false;
	if (e->kind == PROXY_ENTRY_KAFKA) {
		int16_t key = e->api_key, version = e->api_version;
		struct response_plan plan = response_plan(e);
		if (plan.buffer)
			return 2; /* rewritten: buffered whole (limits.max_frame_bytes) */
		struct codec_iov iov[PROXY_MAX_IOV];
		size_t avail = evbuffer_get_length(in) - 4;
		size_t peek = len < 64 ? len : 64;
		if (avail < peek)
			return 0;
		int niov = proxy_buf_iov(in, 4, peek, iov, PROXY_MAX_IOV);
		int32_t correlation_id;
		scan = plan.scan;
		enum codec_err err = niov < 0 ? CODEC_ERR_BAD_MSG
					      : codec_response_header_decode(iov, niov, key, version,
									     &correlation_id, &hdr_len);
		if (err == CODEC_ERR_UNDERFLOW && peek < len)
			return 2; /* a header longer than 64 bytes (tags): rare, buffer whole */
		if (err != CODEC_OK)
			return -1;
		if (correlation_id != e->correlation_id) {
			LOG_W("correlation_mismatch", "conn=%llu api=%s expected=%d got=%d",
			      (unsigned long long)c->id, codec_api_name(key), e->correlation_id,
			      correlation_id);
			return -1;
		}
	}
	metric_add(m_bytes_out, (double)len + 4);
	proxy_stream_response_start(c, e, len, hdr_len, scan);
	return 1;
}
