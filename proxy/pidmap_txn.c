/*
 * pidmap_txn.c — the end of a transaction opened on the source, on a
 * switched sidecar (proxy/pidmap.h; docs/switchover.md "Producer state").
 *
 * A transaction open at the switch has a producer id the source issued.
 * Its batches after the switch are refused (pidmap.c: TRANSACTION_ABORTABLE
 * for Produce v11+), so nothing of it reaches the destination; what is left
 * is its EndTxn, which the destination's coordinator cannot answer but
 * with INVALID_PRODUCER_ID_MAPPING — fatal to the Java producer, so the
 * application would have to build a new one. Instead:
 *   - a commit (EndTxn v4+) is answered TRANSACTION_ABORTABLE: the
 *     transaction cannot commit here; the application aborts it;
 *   - an abort of transaction version 1 (EndTxn v4) is answered done: the
 *     Java producer then bumps its epoch with its own InitProducerId, which
 *     the destination answers with an id of its own;
 *   - an abort with transaction version 2 (EndTxn v5+: its answer gives
 *     the producer id and epoch of the next transaction, KIP-890) is
 *     answered success with a producer id the destination issued to the
 *     same TransactionalId: syncgate's own InitProducerId (that id, a
 *     60 s transaction timeout, the Java producer's default) goes on the
 *     client's connection — the one to the transaction coordinator — while
 *     the EndTxn waits unread (c->pid_wait), then the EndTxn is handled
 *     again and answered from c->txn_abort. The id is recorded as issued to
 *     the TransactionalId, so the next transaction's batches pass.
 * The transaction's other requests are answered here too (the
 * destination's coordinators answer INVALID_PRODUCER_ID_MAPPING, fatal to
 * the Java producer), so a transaction that adds a partition or sends its
 * consumer offsets after the switch is aborted the same way:
 * AddPartitionsToTxn v0–v3 and AddOffsetsToTxn (transaction version 1)
 * with UNKNOWN_PRODUCER_ID, which makes the Java producer abort and then
 * bump its epoch (a new id from the destination);
 * TxnOffsetCommit v4+ (version 2 sends it straight to the group
 * coordinator) with TRANSACTION_ABORTABLE, its abort then the EndTxn v5
 * above.
 * The abort is true to the served cluster: nothing of the transaction is
 * on it but what the mirror copied before the switch, which the mirror's
 * own promotion ends. Loop thread.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "proxy/datapath.h"
#include "proxy/security.h"

/* TransactionTimeoutMs of syncgate's own InitProducerId for a TransactionalId
 * (the client's own setting is not known here: the Java producer's default) */
#define TXN_ABORT_TIMEOUT_MS 60000

enum end_txn_outcome { ENDED_COMMIT_REFUSED, ENDED_ABORT_ANSWERED, ENDED_ABORT_FAILED, ENDED_REFUSED,
		      ENDED_COUNT };

static struct metric *m_ended[ENDED_COUNT];
static const char *const ended_names[ENDED_COUNT] = { "commit_refused", "abort_answered", "abort_failed",
						      "refused" };
static struct proxy_log_limit ended_log;

static void metrics_init(void)
{
	if (m_ended[0])
		return;
	metric_family_get(METRIC_COUNTER, "syncgate_switch_source_transaction_answers_total",
			  "EndTxn, AddOffsetsToTxn and TxnOffsetCommit requests of a transaction opened on the "
			  "source, answered by a switched sidecar (docs/switchover.md \"Transactions\"), by outcome.",
			  NULL, "outcome", ended_names, ENDED_COUNT, m_ended);
}

/* What syncgate's own InitProducerId for an EndTxn asks for (its e->raw). */
struct abort_ask {
	uint64_t tag;
};

static void abort_release(struct proxy_conn *c, struct proxy_entry *e)
{
	(void)c;
	free(e->raw);
	e->raw = NULL;
}

bool proxy_pidmap_end_txn_owns(const struct proxy_entry *e)
{
	return e->release == abort_release;
}

/* Queue the response body `body` to the request `h` and consume its frame (`len` body bytes). */
static int answer_body(struct proxy_conn *c, struct evbuffer *in, size_t len, const struct codec_request_header *h,
		       const struct codec_buf *body)
{
	struct proxy_entry *e = proxy_entry_new(c, PROXY_ENTRY_KAFKA);
	if (!e || !(e->out = evbuffer_new()) || body->err)
		goto fail;
	bool flexible = codec_response_header_version(h->api_key, h->api_version) >= 1;
	size_t n = (flexible ? 5 : 4) + body->len;
	uint32_t corr = (uint32_t)h->correlation_id;
	uint8_t pre[9] = { (uint8_t)(n >> 24),	  (uint8_t)(n >> 16),	 (uint8_t)(n >> 8),    (uint8_t)n,
			   (uint8_t)(corr >> 24), (uint8_t)(corr >> 16), (uint8_t)(corr >> 8), (uint8_t)corr, 0 };
	if (evbuffer_add(e->out, pre, flexible ? 9 : 8) < 0 || evbuffer_add(e->out, body->data, body->len) < 0)
		goto fail;
	e->correlation_id = h->correlation_id;
	e->api_key = h->api_key;
	e->api_version = e->client_version = h->api_version;
	proxy_entry_set_state(c, e, PROXY_ENTRY_READY);
	evbuffer_drain(in, len + 4);
	proxy_fifo_flush(c);
	return 2;
fail:
	if (e)
		proxy_entry_free(c, e);
	return -1;
}

/* Queue EndTxn response `r` to the request `h` and consume its frame. */
static int answer(struct proxy_conn *c, struct evbuffer *in, size_t len, const struct codec_request_header *h,
		  const struct codec_end_txn_response *r)
{
	struct codec_buf body;
	codec_buf_init(&body, 256);
	int rc = codec_end_txn_response_encode(r, h->api_version, &body) == CODEC_OK
			 ? answer_body(c, in, len, h, &body)
			 : -1;
	codec_buf_free(&body);
	return rc;
}

static void log_ended(const struct proxy_conn *c, const struct codec_end_txn_request *m, const char *outcome,
		      const struct codec_end_txn_response *r)
{
	uint64_t suppressed = 0;
	if (proxy_log_allow(&ended_log, mirror_now_ms(), &suppressed))
		LOG_I("source_transaction_ended", "conn=%llu peer=%s transactional_id=%s producer_id=%lld epoch=%d "
		      "commit=%s outcome=%s error_code=%d new_producer_id=%lld new_epoch=%d suppressed=%llu "
		      "reason=\"a transaction opened on the source, which this sidecar no longer serves: it "
		      "cannot commit here; its abort starts the next transaction under an id this cluster "
		      "issued\"", (unsigned long long)c->id, c->peer, m->transactional_id, (long long)m->producer_id,
		      m->producer_epoch, m->committed ? "true" : "false", outcome, r->error_code,
		      (long long)r->producer_id, r->producer_epoch, (unsigned long long)suppressed);
}

/* Send syncgate's own InitProducerId for `txn_id` ahead of the waiting EndTxn. */
static int ask(struct proxy_conn *c, const char *txn_id, uint64_t tag)
{
	struct abort_ask *a = malloc(sizeof(*a));
	struct codec_buf b;
	codec_buf_init(&b, 256);
	int16_t version = proxy_pidmap_version(c);
	if (!a || codec_init_producer_id_request_frame(version, -1, "syncgate", txn_id, TXN_ABORT_TIMEOUT_MS, &b) < 0 ||
	    proxy_internal_send(c, b.data, b.len, CODEC_API_INIT_PRODUCER_ID, version) < 0) {
		codec_buf_free(&b);
		free(a);
		return -1;
	}
	codec_buf_free(&b);
	a->tag = tag;
	struct proxy_entry *e = TAILQ_LAST(&c->fifo, proxy_fifo); /* the INTERNAL entry just queued */
	e->raw = (uint8_t *)a;
	e->release = abort_release;
	c->txn_abort = (struct proxy_txn_abort){ .tag = tag };
	c->pid_wait = true;
	return 1;
}

int proxy_pidmap_end_txn(struct proxy_conn *c, struct evbuffer *in, size_t len, const struct codec_request_header *h)
{
	if (!c->srv->switched || h->api_version < 4 || h->api_version > 5)
		return 0;
	struct codec_iov iov[PROXY_MAX_IOV];
	int niov = proxy_buf_iov(in, 4 + h->len, len - h->len, iov, PROXY_MAX_IOV);
	struct codec_end_txn_request m = { 0 };
	int rc = 0;
	struct proxy_pidmap *map = proxy_pidmap_of(c->srv);
	if (!map)
		return -1;
	if (niov < 0 || codec_end_txn_request_decode(iov, niov, h->api_version, &m) != CODEC_OK || !m.transactional_id)
		goto out; /* the broker answers what it cannot read */
	uint64_t tag = proxy_pidmap_txn_tag(m.transactional_id);
	/* the answer to our own ask first: the id it recorded as issued may be
	 * the very number the source gave this producer (both clusters count
	 * producer ids from their own start) */
	bool answered = h->api_version == 5 && !m.committed && c->txn_abort.ready && c->txn_abort.tag == tag;
	if (!answered && proxy_pidmap_issued_to(map, m.producer_id, tag))
		goto out; /* a transaction of this cluster */
	metrics_init();
	struct codec_end_txn_response r = { .error_code = CODEC_ERROR_TRANSACTION_ABORTABLE, .producer_id = -1,
					    .producer_epoch = -1 };
	if (m.committed) {
		metric_add(m_ended[ENDED_COMMIT_REFUSED], 1);
		log_ended(c, &m, "commit_refused", &r);
		rc = answer(c, in, len, h, &r);
	} else if (h->api_version < 5) {
		/* v4 (transaction version 1): the abort is answered done, no id in it; a
		 * client that must bump its epoch asks InitProducerId itself, which the
		 * destination answers with an id of its own (it has no state for it) */
		r.error_code = CODEC_ERROR_NONE;
		metric_add(m_ended[ENDED_ABORT_ANSWERED], 1);
		log_ended(c, &m, ended_names[ENDED_ABORT_ANSWERED], &r);
		rc = answer(c, in, len, h, &r);
	} else if (answered) {
		r.error_code = c->txn_abort.error_code;
		r.producer_id = c->txn_abort.producer_id;
		r.producer_epoch = c->txn_abort.producer_epoch;
		c->txn_abort = (struct proxy_txn_abort){ 0 };
		enum end_txn_outcome o = r.error_code == 0 ? ENDED_ABORT_ANSWERED : ENDED_ABORT_FAILED;
		metric_add(m_ended[o], 1);
		log_ended(c, &m, ended_names[o], &r);
		rc = answer(c, in, len, h, &r);
	} else {
		rc = ask(c, m.transactional_id, tag);
	}
out:
	codec_end_txn_request_free(&m);
	return rc;
}

void proxy_pidmap_end_txn_answer(struct proxy_conn *c, struct proxy_entry *e, const struct codec_iov *iov,
				 int niov)
{
	const struct abort_ask *a = (const struct abort_ask *)e->raw;
	struct codec_init_producer_id_response r = { 0 };
	struct proxy_txn_abort t = { .ready = true, .tag = a ? a->tag : 0, .error_code = CODEC_ERROR_UNKNOWN_SERVER_ERROR,
				     .producer_id = -1, .producer_epoch = -1 };
	if (niov >= 0 && codec_init_producer_id_response_decode(iov, niov, e->api_version, &r) == CODEC_OK) {
		t.error_code = r.error_code;
		if (r.error_code == 0 && r.producer_id >= 0) {
			t.producer_id = r.producer_id;
			t.producer_epoch = r.producer_epoch;
			struct proxy_pidmap *map = proxy_pidmap_of(c->srv);
			if (map)
				proxy_pidmap_issue(map, r.producer_id, t.tag);
		} else if (r.error_code == 0) {
			t.error_code = CODEC_ERROR_UNKNOWN_SERVER_ERROR;
		}
	}
	codec_init_producer_id_response_free(&r);
	c->txn_abort = t;
	proxy_pidmap_resume(c); /* the EndTxn is handled again: answered from c->txn_abort */
}

/* Log and answer `code` to the request `h` of (`txn_id`, `pid`), its body in `body`. */
static int refuse_request(struct proxy_conn *c, struct evbuffer *in, size_t len, const struct codec_request_header *h,
			  const char *txn_id, int64_t pid, int16_t code, const struct codec_buf *body)
{
	metrics_init();
	metric_add(m_ended[ENDED_REFUSED], 1);
	uint64_t suppressed = 0;
	if (proxy_log_allow(&ended_log, mirror_now_ms(), &suppressed))
		LOG_I("source_transaction_ended", "conn=%llu peer=%s transactional_id=%s producer_id=%lld api=%s "
		      "outcome=refused error_code=%d suppressed=%llu reason=\"a request of a "
		      "transaction opened on the source, which this sidecar no longer serves: it cannot commit "
		      "here; the application aborts it\"", (unsigned long long)c->id, c->peer, txn_id, (long long)pid,
		      codec_api_name(h->api_key), code, (unsigned long long)suppressed);
	return answer_body(c, in, len, h, body);
}

int proxy_pidmap_source_txn(struct proxy_conn *c, struct evbuffer *in, size_t len,
			     const struct codec_request_header *h)
{
	if (!c->srv->switched || (h->api_key == CODEC_API_TXN_OFFSET_COMMIT && h->api_version < 4) ||
	    (h->api_key == CODEC_API_ADD_PARTITIONS_TO_TXN && h->api_version > 3))
		return 0; /* TxnOffsetCommit below v4 does not know TRANSACTION_ABORTABLE; AddPartitionsToTxn
			   * v4+ is between brokers: the broker answers */
	struct proxy_pidmap *map = proxy_pidmap_of(c->srv);
	if (!map)
		return -1;
	struct codec_iov iov[PROXY_MAX_IOV];
	int niov = proxy_buf_iov(in, 4 + h->len, len - h->len, iov, PROXY_MAX_IOV);
	if (niov < 0)
		return 0; /* the broker answers what it cannot read */
	struct codec_buf body;
	codec_buf_init(&body, 256);
	int rc = 0;
	if (h->api_key == CODEC_API_ADD_PARTITIONS_TO_TXN) {
		struct codec_add_partitions_to_txn_request m = { 0 };
		if (codec_add_partitions_to_txn_request_decode(iov, niov, h->api_version, &m) == CODEC_OK &&
		    m.transactional_id &&
		    !proxy_pidmap_issued_to(map, m.producer_id, proxy_pidmap_txn_tag(m.transactional_id)))
			rc = codec_add_partitions_to_txn_response_encode(&m, CODEC_ERROR_UNKNOWN_PRODUCER_ID,
									 h->api_version, &body) == CODEC_OK
				     ? refuse_request(c, in, len, h, m.transactional_id, m.producer_id,
						      CODEC_ERROR_UNKNOWN_PRODUCER_ID, &body)
				     : -1;
		codec_add_partitions_to_txn_request_free(&m);
	} else if (h->api_key == CODEC_API_ADD_OFFSETS_TO_TXN) {
		struct codec_add_offsets_to_txn_request m = { 0 };
		if (codec_add_offsets_to_txn_request_decode(iov, niov, h->api_version, &m) == CODEC_OK &&
		    m.transactional_id &&
		    !proxy_pidmap_issued_to(map, m.producer_id, proxy_pidmap_txn_tag(m.transactional_id)))
			rc = codec_add_offsets_to_txn_response_encode(CODEC_ERROR_UNKNOWN_PRODUCER_ID, h->api_version,
								      &body) == CODEC_OK
				     ? refuse_request(c, in, len, h, m.transactional_id, m.producer_id,
						      CODEC_ERROR_UNKNOWN_PRODUCER_ID, &body)
				     : -1;
		codec_add_offsets_to_txn_request_free(&m);
	} else if (h->api_key == CODEC_API_TXN_OFFSET_COMMIT) {
		struct codec_txn_offset_commit_request m = { 0 };
		if (codec_txn_offset_commit_request_decode(iov, niov, h->api_version, &m) == CODEC_OK &&
		    m.transactional_id &&
		    !proxy_pidmap_issued_to(map, m.producer_id, proxy_pidmap_txn_tag(m.transactional_id)))
			rc = codec_txn_offset_commit_response_encode(&m, CODEC_ERROR_TRANSACTION_ABORTABLE, h->api_version,
								     &body) == CODEC_OK
				     ? refuse_request(c, in, len, h, m.transactional_id, m.producer_id,
						      CODEC_ERROR_TRANSACTION_ABORTABLE, &body)
				     : -1;
		codec_txn_offset_commit_request_free(&m);
	}
	codec_buf_free(&body);
	return rc;
}
