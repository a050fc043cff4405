/*
 * pidmap.c — producer ids on a switched sidecar (proxy/pidmap.h;
 * docs/switchover.md "Producer state").
 *
 * The destination issues producer ids on its own from 0, so a client's
 * source-issued id is often in use there by another producer, and a batch
 * whose (id, epoch, sequence) equals one of that producer's last five is
 * answered success at that producer's offset and stored nowhere — a false
 * ack. So once srv->switched, no producer id the destination did not issue
 * goes upstream:
 *   - every idempotent, non-transactional batch (producerId >= 0, attribute
 *     bit 4 clear) is rewritten to a (producer id, epoch) the sidecar asked
 *     its broker for — even one whose id the destination issued to the
 *     client itself (a fresh id is unique there; it costs one InitProducerId).
 *     Per (client, producer id, epoch) one InitProducerId — the client
 *     told apart by its ClientId and host (proxy_pidmap_client: a source id
 *     may equal one the destination issued to another client) — sent as an INTERNAL
 *     entry on the client's own upstream connection (the client's SASL
 *     identity) ahead of the Produce, which stays unread in the client input
 *     (c->pid_wait) until the answer. Retries of a batch go out under the same
 *     id, so the broker de-duplicates them; the client's base sequence stays
 *     (a fresh id has no state: the broker takes any first sequence, then
 *     checks the rest in order);
 *   - a transactional batch passes unchanged only under an id the broker
 *     issued to the request's TransactionalId through this sidecar since the
 *     switch (the client's own InitProducerId response, read on its way, or an
 *     EndTxn v5 one carrying a new id when the epoch ran out, KIP-890);
 *     else the Produce is answered INVALID_PRODUCER_ID_MAPPING (49) on every
 *     partition and not forwarded: the application's transaction aborts and
 *     initTransactions() gets it an id here;
 *   - non-idempotent batches (producerId -1) pass unchanged.
 * An InitProducerId answered with a retriable error (a broker that just
 * started answers COORDINATOR_LOAD_IN_PROGRESS until it holds an id block)
 * is sent again after a backoff while the Produce waits. One that fails
 * otherwise, or too often, closes the connection: the Produce waiting
 * for it and every request behind it were never forwarded, and the client
 * retries them in order on a new connection (an error answer to the one
 * Produce would let the requests behind it go out first under a fresh id).
 * The bounded maps themselves: pidmap_map.c. Loop thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/datapath.h"
#include "proxy/security.h"

#define TXN_BIT 0x10 /* RecordBatch attributes: transactional */

/* FNV-1a over `n` bytes, continuing `h` (0xcbf29ce484222325 to start). */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	for (const uint8_t *b = p; n--; b++)
		h = (h ^ *b) * 0x100000001b3ull;
	return h;
}

uint64_t proxy_pidmap_txn_tag(const char *s)
{
	return fnv(0xcbf29ce484222325ull, s, strlen(s));
}

uint64_t proxy_pidmap_client(const char *client_id, size_t len, const char *peer)
{
	const char *colon = strrchr(peer, ':');
	uint64_t h = fnv(0xcbf29ce484222325ull, client_id, len);
	h = fnv(h, "", 1);
	return fnv(h, peer, colon ? (size_t)(colon - peer) : strlen(peer));
}

struct proxy_pidmap *proxy_pidmap_of(struct proxy_server *srv)
{
	if (!srv->pidmap)
		srv->pidmap = proxy_pidmap_new(PROXY_PIDMAP_CAP);
	return srv->pidmap;
}

void proxy_pidmap_note_appended(struct proxy_conn *c, const struct proxy_produce_part *q, const char *topic,
				int64_t base_offset)
{
	struct proxy_pidmap *m = proxy_pidmap_of(c->srv);
	if (!m || !q->idempotent || q->transactional || !topic || base_offset < 0)
		return;
	proxy_pidmap_appended_learn(m, q->producer_id, q->producer_epoch,
				    proxy_pidmap_batch_key(topic, q->partition, q->first_seq, q->last_seq),
				    q->first_seq, q->last_seq, base_offset);
}

/* ---- metrics and logs ------------------------------------------------------ */

static struct metric *m_remapped, *m_refused, *m_requests[PROXY_PID_OUTCOME_COUNT];
static const char *const outcome_names[PROXY_PID_OUTCOME_COUNT] = { "issued", "retried", "error", "malformed",
								      "closed" };
static struct proxy_log_limit remap_log, failed_log, refused_log, retry_log;

static void pidmap_metrics_init(void)
{
	static const struct metric_def defs[] = {
		{ &m_remapped, METRIC_COUNTER, "syncgate_switch_producer_ids_remapped_total",
		  "Idempotent record batches a switched sidecar forwarded under a producer id and epoch its "
		  "broker issued to it instead of the client's." },
		{ &m_refused, METRIC_COUNTER, "syncgate_switch_transactional_refused_total",
		  "Produce requests a switched sidecar refused (TRANSACTION_ABORTABLE from Produce v11, "
		  "INVALID_PRODUCER_ID_MAPPING below): a transactional batch of a producer id its broker did "
		  "not issue through it." },
	};
	if (m_remapped)
		return;
	METRIC_DEFS_GET(defs);
	metric_family_get(METRIC_COUNTER, "syncgate_switch_producer_id_requests_total",
			  "InitProducerId requests a switched sidecar sent its broker for a client's idempotent "
			  "producer, by how they ended.", NULL, "outcome", outcome_names, PROXY_PID_OUTCOME_COUNT,
			  m_requests);
}

/* ---- the Produce path -------------------------------------------------------- */

/* What an INTERNAL InitProducerId asks for (its e->raw; freed by its release). */
struct pid_ask {
	uint64_t client;
	int64_t pid;
	int16_t epoch;
	int attempt;     /* 1 for the first */
};

static void ask_release(struct proxy_conn *c, struct proxy_entry *e)
{
	(void)c;
	if (e->state == PROXY_ENTRY_IN_FLIGHT) {
		pidmap_metrics_init();
		metric_add(m_requests[PROXY_PID_CLOSED], 1);
	}
	free(e->raw);
	e->raw = NULL;
}

int16_t proxy_pidmap_version(const struct proxy_conn *c)
{
	if (!c->init_pid_known)
		return 2;
	return c->init_pid_max > 5 ? 5 : c->init_pid_max;
}

static int ask(struct proxy_conn *c, uint64_t client, int64_t pid, int16_t epoch, int attempt)
{
	struct pid_ask *a = malloc(sizeof(*a));
	struct codec_buf b;
	codec_buf_init(&b, 256);
	int16_t version = proxy_pidmap_version(c);
	if (!a ||
	    codec_init_producer_id_request_frame(version, -1, "syncgate", NULL, PROXY_PIDMAP_TXN_TIMEOUT_MS, &b) < 0 ||
	    proxy_internal_send(c, b.data, b.len, CODEC_API_INIT_PRODUCER_ID, version) < 0) {
		codec_buf_free(&b);
		free(a);
		return -1;
	}
	codec_buf_free(&b);
	*a = (struct pid_ask){ .client = client, .pid = pid, .epoch = epoch, .attempt = attempt };
	struct proxy_entry *e = TAILQ_LAST(&c->fifo, proxy_fifo); /* the INTERNAL entry just queued */
	e->raw = (uint8_t *)a;
	e->release = ask_release;
	c->pid_wait = true;
	LOG_D("producer_id_ask", "conn=%llu producer_id=%lld epoch=%d version=%d attempt=%d",
	      (unsigned long long)c->id, (long long)pid, epoch, version, attempt);
	return 0;
}

static int32_t be32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
}

static int64_t be64(const uint8_t *p)
{
	return (int64_t)((uint64_t)(uint32_t)be32(p) << 32 | (uint32_t)be32(p + 4));
}

/* How the batches of a request stand. */
struct walk {
	uint64_t client;        /* proxy_pidmap_client() of the request's sender */
	bool rewrite;           /* pass 2: rewrite the idempotent batches */
	bool unmapped;          /* an idempotent key with no destination id yet (the first: below) */
	int64_t want_pid;
	int16_t want_epoch;
	bool refused;           /* a transactional batch of an id not issued here */
	int64_t refused_pid;
	size_t rewritten;
};

/*
 * Walk the batches of one partition's records (`rec`, `n` bytes, contiguous
 * and writable). -1: not a well-formed RecordBatch v2 (the connection closes).
 */
static int walk_records(struct proxy_server *srv, uint8_t *rec, size_t n, const char *txn_id, struct walk *w)
{
	for (size_t off = 0; off < n;) {
		uint8_t *b = rec + off;
		if (n - off < CODEC_BATCH_HEADER_LEN)
			return -1;
		if (b[CODEC_BATCH_MAGIC_AT] != 2)
			return 0; /* a legacy message set: no producer id; the broker refuses it */
		int32_t blen = be32(b + CODEC_BATCH_LENGTH_AT);
		if (blen < 0 || (size_t)blen > n - off - 12)
			return -1;
		size_t total = (size_t)blen + 12;
		off += total;
		int64_t pid = be64(b + CODEC_BATCH_PRODUCER_ID_AT);
		int16_t epoch = (int16_t)(b[CODEC_BATCH_EPOCH_AT] << 8 | b[CODEC_BATCH_EPOCH_AT + 1]);
		int16_t attrs = (int16_t)(b[CODEC_BATCH_ATTRIBUTES_AT] << 8 | b[CODEC_BATCH_ATTRIBUTES_AT + 1]);
		if (pid < 0)
			continue; /* not idempotent: passes unchanged */
		if (codec_batch_check(b, total) != CODEC_OK)
			return -1;
		if (attrs & TXN_BIT) {
			if (!txn_id || !proxy_pidmap_issued_to(srv->pidmap, pid, proxy_pidmap_txn_tag(txn_id))) {
				w->refused = true;
				w->refused_pid = pid;
			}
			continue;
		}
		int64_t dest_pid;
		int16_t dest_epoch;
		if (!proxy_pidmap_lookup(srv->pidmap, w->client, pid, epoch, &dest_pid, &dest_epoch)) {
			if (!w->unmapped) {
				w->unmapped = true;
				w->want_pid = pid;
				w->want_epoch = epoch;
			}
			continue;
		}
		if (w->rewrite) {
			if (codec_batch_set_producer(b, total, dest_pid, dest_epoch) != CODEC_OK)
				return -1;
			w->rewritten++;
		}
	}
	return 0;
}

static int walk_request(struct proxy_server *srv, uint8_t *body, const struct codec_produce_request *req,
			struct walk *w)
{
	for (size_t t = 0; t < req->ntopics; t++)
		for (size_t p = 0; p < req->topics[t].npartitions; p++) {
			struct codec_slice s = req->topics[t].partitions[p].records;
			if (s.len > 0 && walk_records(srv, body + s.off, (size_t)s.len, req->transactional_id, w) < 0)
				return -1;
		}
	return 0;
}

static void refused_msg(void *arg, const struct codec_produce_topic_req *t, char *buf, size_t n)
{
	snprintf(buf, n, "syncgate: this sidecar now serves another cluster, which did not issue this producer "
		 "id; initialise the transactional producer again");
}

static int refuse_transactional(struct proxy_conn *c, struct evbuffer *in, size_t len,
				const struct codec_request_header *h, int16_t wire_version,
				const struct codec_produce_request *req, int64_t pid)
{
	pidmap_metrics_init();
	metric_add(m_refused, 1);
	uint64_t suppressed = 0;
	if (proxy_log_allow(&refused_log, mirror_now_ms(), &suppressed))
		LOG_W("transactional_producer_id_refused", "conn=%llu peer=%s producer_id=%lld transactional_id=%s "
		      "acks=%d action=%s suppressed=%llu reason=\"a transactional batch of a producer id this "
		      "cluster did not issue through this sidecar since the switch\"", (unsigned long long)c->id,
		      c->peer, (long long)pid, req->transactional_id ? req->transactional_id : "-", req->acks,
		      req->acks == 0	       ? "close (acks=0: no response to refuse with)"
		      : h->api_version >= 11 ? "refused TRANSACTION_ABORTABLE"
					       : "refused INVALID_PRODUCER_ID_MAPPING",
		      (unsigned long long)suppressed);
	if (req->acks == 0)
		return -1;
	/* Produce v11+ clients know TRANSACTION_ABORTABLE: abort and go on with the
	 * same transactional id (its abort is then answered by proxy_pidmap_end_txn) */
	int16_t code = h->api_version >= 11 ? CODEC_ERROR_TRANSACTION_ABORTABLE : CODEC_ERROR_INVALID_PRODUCER_ID_MAPPING;
	if (proxy_fifo_refuse_produce(c, h, wire_version, req, code,
				      refused_msg, NULL) < 0)
		return -1;
	evbuffer_drain(in, len + 4);
	proxy_fifo_flush(c);
	return 2;
}

int proxy_pidmap_produce(struct proxy_conn *c, struct evbuffer *in, size_t len,
			 const struct codec_request_header *h, int16_t wire_version,
			 const struct codec_produce_request *req)
{
	struct proxy_server *srv = c->srv;
	if (!srv->switched)
		return 0;
	bool records = false;
	for (size_t t = 0; t < req->ntopics && !records; t++)
		for (size_t p = 0; p < req->topics[t].npartitions && !records; p++)
			records = req->topics[t].partitions[p].records.len > 0;
	if (!records)
		return 0;
	if (!proxy_pidmap_of(srv))
		return -1;
	uint8_t *frame = evbuffer_pullup(in, (ssize_t)len + 4); /* batches are rewritten in place */
	if (!frame)
		return -1;
	uint8_t *body = frame + 4 + h->len;
	struct walk w = { 0 };
	const struct codec_slice *id = &h->client_id;
	w.client = proxy_pidmap_client(id->len > 0 ? (const char *)frame + 4 + id->off : "",
				       id->len > 0 ? (size_t)id->len : 0, c->peer);
	if (walk_request(srv, body, req, &w) < 0) {
		uint64_t suppressed = 0;
		if (proxy_log_allow(&proxy_malformed_log, mirror_now_ms(), &suppressed))
			LOG_W("request_malformed", "conn=%llu peer=%s api=Produce version=%d error=\"a record batch "
			      "with a producer id is not a valid RecordBatch v2 (length, CRC-32C): its producer id "
			      "cannot be rewritten\" suppressed=%llu", (unsigned long long)c->id, c->peer,
			      h->api_version, (unsigned long long)suppressed);
		return -1;
	}
	if (w.refused)
		return refuse_transactional(c, in, len, h, wire_version, req, w.refused_pid);
	if (w.unmapped)
		return ask(c, w.client, w.want_pid, w.want_epoch, 1) < 0 ? -1 : 1;
	w.rewrite = true;
	if (walk_request(srv, body, req, &w) < 0)
		return -1;
	if (w.rewritten) {
		pidmap_metrics_init();
		metric_add(m_remapped, (double)w.rewritten);
	}
	return 0;
}


/* Error codes after which the broker may issue an id when asked again. */
static bool retriable(int16_t code)
{
	return code == CODEC_ERROR_REQUEST_TIMED_OUT || code == CODEC_ERROR_COORDINATOR_LOAD_IN_PROGRESS ||
	       code == CODEC_ERROR_COORDINATOR_NOT_AVAILABLE || code == CODEC_ERROR_NOT_COORDINATOR;
}

/* A retry waiting for its backoff: the connection is found again by id (it
 * may be gone by then; event_base_once frees nothing of ours). */
struct pid_retry {
	struct proxy_server *srv;
	uint64_t conn;
	struct pid_ask ask;
};

static void retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct pid_retry *r = arg;
	(void)fd;
	(void)what;
	struct proxy_conn *c = proxy_conn_by_id(r->srv, r->conn);
	if (c && c->pid_wait && c->upstream && c->client &&
	    (c->state == PROXY_CONN_OPEN || c->state == PROXY_CONN_CONNECTING) &&
	    ask(c, r->ask.client, r->ask.pid, r->ask.epoch, r->ask.attempt + 1) < 0)
		c->ops->close(c, PROXY_CLOSE_OUT_OF_MEMORY);
	free(r);
}

/* Ask again after the backoff; false when it cannot be scheduled. */
static bool retry_later(struct proxy_conn *c, const struct pid_ask *a)
{
	struct pid_retry *r = malloc(sizeof(*r));
	if (!r)
		return false;
	*r = (struct pid_retry){ .srv = c->srv, .conn = c->id, .ask = *a };
	int ms = PROXY_PIDMAP_BACKOFF_MS << (a->attempt < 5 ? a->attempt - 1 : 5);
	if (ms > 1000)
		ms = 1000;
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	if (event_base_once(c->srv->base, -1, EV_TIMEOUT, retry_cb, r, &tv) < 0) {
		free(r);
		return false;
	}
	return true;
}

void proxy_pidmap_answer(struct proxy_conn *c, struct proxy_entry *e, const struct codec_iov *iov, int niov)
{
	pidmap_metrics_init();
	const struct pid_ask *a = (const struct pid_ask *)e->raw;
	struct codec_init_producer_id_response r = { 0 };
	enum codec_err err = niov < 0 ? CODEC_ERR_BAD_MSG
				      : codec_init_producer_id_response_decode(iov, niov, e->api_version, &r);
	enum proxy_pid_outcome outcome = err != CODEC_OK ? PROXY_PID_MALFORMED
					 : r.error_code != 0 || r.producer_id < 0 ? PROXY_PID_ERROR
					 : PROXY_PID_ISSUED;
	if (outcome == PROXY_PID_ERROR && a && retriable(r.error_code) && a->attempt < PROXY_PIDMAP_ATTEMPTS &&
	    retry_later(c, a)) {
		metric_add(m_requests[PROXY_PID_RETRIED], 1);
		uint64_t suppressed = 0;
		if (proxy_log_allow(&retry_log, mirror_now_ms(), &suppressed))
			LOG_I("producer_id_request_retry", "conn=%llu peer=%s producer_id=%lld epoch=%d "
			      "error_code=%d attempt=%d suppressed=%llu reason=\"the broker cannot issue a producer "
			      "id yet (e.g. loading its id block after a start); the Produce waits\"",
			      (unsigned long long)c->id, c->peer, (long long)a->pid, a->epoch, r.error_code,
			      a->attempt, (unsigned long long)suppressed);
		codec_init_producer_id_response_free(&r);
		return; /* c->pid_wait stays: nothing more of the client is handled meanwhile */
	}
	metric_add(m_requests[outcome], 1);
	if (outcome == PROXY_PID_ISSUED && a && proxy_pidmap_of(c->srv)) {
		struct mirror_producer_claim pc = { a->client, a->pid, a->epoch, r.producer_id, r.producer_epoch };
		bool claimed = proxy_pidmap_claim(c, &pc); /* waits for the log's first claim of the key */
		if (!claimed) /* no state log: this sidecar's own id */
			proxy_pidmap_learn(c->srv->pidmap, a->client, a->pid, a->epoch, r.producer_id,
					   r.producer_epoch);
		uint64_t suppressed = 0;
		if (proxy_log_allow(&remap_log, mirror_now_ms(), &suppressed))
			LOG_I("producer_id_remapped", "conn=%llu peer=%s producer_id=%lld epoch=%d "
			      "dest_producer_id=%lld dest_epoch=%d claimed=%s suppressed=%llu reason=\"switched: the "
			      "client's idempotent batches go out under a producer id this cluster issued (claimed: "
			      "the state log's first claim of it is used)\"",
			      (unsigned long long)c->id, c->peer, (long long)a->pid, a->epoch,
			      (long long)r.producer_id, r.producer_epoch, claimed ? "true" : "false",
			      (unsigned long long)suppressed);
		codec_init_producer_id_response_free(&r);
		if (!claimed)
			proxy_pidmap_resume(c);
		return;
	}
	uint64_t suppressed = 0;
	if (proxy_log_allow(&failed_log, mirror_now_ms(), &suppressed))
		LOG_W("producer_id_request_failed", "conn=%llu peer=%s producer_id=%lld epoch=%d outcome=%s "
		      "error_code=%d decode=%s suppressed=%llu action=\"close the connection: the Produce waiting "
		      "for it is never forwarded with the client's producer id; the client retries\"",
		      (unsigned long long)c->id, c->peer, a ? (long long)a->pid : -1LL, a ? a->epoch : -1,
		      outcome_names[outcome], err == CODEC_OK ? r.error_code : -1, codec_err_str(err),
		      (unsigned long long)suppressed);
	codec_init_producer_id_response_free(&r);
	c->pid_wait = true; /* nothing more of the client is handled */
	c->ops->close(c, outcome == PROXY_PID_ERROR ? PROXY_CLOSE_PRODUCER_ID_REFUSED
						     : PROXY_CLOSE_UPSTREAM_FRAME_MALFORMED);
}

/* ---- transactional ids issued through this sidecar --------------------------- */

/* A client's InitProducerId with a TransactionalId: its e->raw (freed by its release). */
struct txn_ask {
	uint64_t tag;
};

static void txn_release(struct proxy_conn *c, struct proxy_entry *e)
{
	(void)c;
	free(e->raw);
	e->raw = NULL;
}

/* The TransactionalId of a client's InitProducerId (NULL: none, idempotent
 * only) or EndTxn v5+ request (earlier answers issue no id); malloc'd. */
static char *txn_request_id(const struct codec_iov *iov, int niov, const struct codec_request_header *h)
{
	char *id = NULL;
	if (h->api_key == CODEC_API_INIT_PRODUCER_ID) {
		struct codec_init_producer_id_request m = { 0 };
		if (codec_init_producer_id_request_decode(iov, niov, h->api_version, &m) == CODEC_OK)
			id = m.transactional_id, m.transactional_id = NULL;
		codec_init_producer_id_request_free(&m);
	} else if (h->api_key == CODEC_API_END_TXN && h->api_version >= 5) {
		struct codec_end_txn_request m = { 0 };
		if (codec_end_txn_request_decode(iov, niov, h->api_version, &m) == CODEC_OK)
			id = m.transactional_id, m.transactional_id = NULL;
		codec_end_txn_request_free(&m);
	}
	return id;
}

int proxy_pidmap_txn_request(struct proxy_conn *c, struct proxy_entry *e, struct evbuffer *in, size_t len,
			     const struct codec_request_header *h)
{
	if (!c->srv->switched || h->api_version > 5)
		return 0;
	struct codec_iov iov[PROXY_MAX_IOV];
	int niov = proxy_buf_iov(in, 4 + h->len, len - h->len, iov, PROXY_MAX_IOV);
	char *id = niov < 0 ? NULL : txn_request_id(iov, niov, h);
	if (!id)
		return 0; /* none, or unreadable: the broker answers it; nothing issued here */
	struct txn_ask *t = malloc(sizeof(*t));
	if (!t) {
		free(id);
		return -1;
	}
	t->tag = proxy_pidmap_txn_tag(id);
	free(id);
	e->raw = (uint8_t *)t;
	e->release = txn_release;
	return 0;
}

bool proxy_pidmap_reads_response(const struct proxy_entry *e)
{
	return e->kind == PROXY_ENTRY_KAFKA && e->raw &&
	       (e->api_key == CODEC_API_INIT_PRODUCER_ID || e->api_key == CODEC_API_END_TXN);
}

void proxy_pidmap_issued(struct proxy_conn *c, struct proxy_entry *e, const struct codec_iov *iov, int niov)
{
	const struct txn_ask *t = (const struct txn_ask *)e->raw;
	if (!proxy_pidmap_reads_response(e))
		return;
	int16_t err = -1;
	int64_t pid = -1;
	int16_t epoch = -1;
	if (e->api_key == CODEC_API_INIT_PRODUCER_ID) {
		struct codec_init_producer_id_response r = { 0 };
		if (codec_init_producer_id_response_decode(iov, niov, e->api_version, &r) == CODEC_OK)
			err = r.error_code, pid = r.producer_id, epoch = r.producer_epoch;
		codec_init_producer_id_response_free(&r);
	} else {
		struct codec_end_txn_response r = { 0 };
		if (codec_end_txn_response_decode(iov, niov, e->api_version, &r) == CODEC_OK)
			err = r.error_code, pid = r.producer_id, epoch = r.producer_epoch;
		codec_end_txn_response_free(&r);
	}
	if (err == 0 && pid >= 0 && proxy_pidmap_of(c->srv)) {
		proxy_pidmap_issue(c->srv->pidmap, pid, t->tag);
		LOG_D("producer_id_issued", "conn=%llu api=%s producer_id=%lld epoch=%d", (unsigned long long)c->id,
		      codec_api_name(e->api_key), (long long)pid, epoch);
	}
}
