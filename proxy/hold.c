/*
 * The hold of gated Produce responses (docs/architecture.md). For each
 * partition of an acks=all (or, with gate.acks1: gate, acks=1) Produce
 * response with ErrorCode NONE whose topic has a gating mirror, the gate
 * waits until every such mirror has the partition's last offset
 * (BaseOffset + Σ(lastOffsetDelta+1) − 1). Then failed partitions get the
 * sync error codes — down-mapped for request versions below 14 — BaseOffset
 * −1 and a message naming the mirror, and the response becomes READY.
 * Broker errors pass unchanged and are never held. Loop thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/datapath.h"
#include "proxy/security.h"

static struct metric *m_held, *m_held_bytes, *m_unknown_id, *m_downmapped;

/* outcomes of gated partitions: syncgate_gate_partition_outcomes_total (mirror/) */
static const struct metric_def hold_metrics[] = {
	{ &m_held, METRIC_GAUGE, "syncgate_held_responses", "Produce responses held by the sync gate now." },
	{ &m_held_bytes, METRIC_GAUGE, "syncgate_held_bytes", "Bytes of Produce responses held by the sync gate now." },
	{ &m_unknown_id, METRIC_COUNTER, "syncgate_unknown_topic_id_partitions_total",
	  "Produce partitions failed safe because their TopicId could not be resolved to a name." },
	{ &m_downmapped, METRIC_COUNTER, "syncgate_downmapped_errors_total",
	  "Sync error codes down-mapped to NOT_ENOUGH_REPLICAS_AFTER_APPEND for Produce versions below 14." },
};

/* The source topic name of a request/response topic (v13: by TopicId). */
static const char *topic_name(struct proxy_conn *c, const char *name, const uint8_t id[16])
{
	return name ? name : proxy_topic_ids_name(c->srv->topic_ids, id);
}

static bool acks_gated(const struct proxy_conn *c, int16_t acks)
{
	return acks == -1 || (acks == 1 && c->srv->conf->gate_acks1 == CONF_ACKS1_GATE);
}

struct proxy_produce_sum *proxy_produce_sum_new(const struct codec_produce_request *req)
{
	size_t nparts = 0, names = 0;
	for (size_t t = 0; t < req->ntopics; t++) {
		nparts += req->topics[t].npartitions;
		if (req->topics[t].name)
			names += strlen(req->topics[t].name) + 1;
	}
	size_t size = sizeof(struct proxy_produce_sum) + nparts * sizeof(struct proxy_produce_part) +
		      req->ntopics * sizeof(struct proxy_produce_topic) + names;
	struct proxy_produce_sum *s = malloc(size);
	if (!s)
		return NULL;
	s->acks = req->acks;
	s->timeout_ms = req->timeout_ms;
	s->ntopics = (uint32_t)req->ntopics;
	s->nparts = (uint32_t)nparts;
	struct proxy_produce_topic *topics = (struct proxy_produce_topic *)(s->parts + nparts);
	char *name = (char *)(topics + req->ntopics);
	size_t i = 0;
	for (size_t t = 0; t < req->ntopics; t++) {
		const struct codec_produce_topic_req *rt = &req->topics[t];
		topics[t].name = NULL;
		memcpy(topics[t].topic_id, rt->topic_id, 16);
		if (rt->name) {
			size_t n = strlen(rt->name) + 1;
			memcpy(name, rt->name, n);
			topics[t].name = name;
			name += n;
		}
		for (size_t p = 0; p < rt->npartitions; p++) {
			const struct codec_produce_partition_req *rp = &rt->partitions[p];
			struct proxy_produce_part *q = &s->parts[i++];
			*q = (struct proxy_produce_part){
				(uint32_t)t, rp->index, rp->offset_span, (rp->last_batch.attributes & 0x10) != 0,
				rp->last_batch.producer_id, rp->last_batch.producer_epoch, false, -1, -1 };
			q->idempotent = proxy_produce_batch_seqs(rp, &q->first_seq, &q->last_seq);
		}
	}
	return s;
}

bool proxy_produce_batch_seqs(const struct codec_produce_partition_req *p, int32_t *first, int32_t *last)
{
	const struct codec_record_batch *b = &p->last_batch;
	if (p->nbatches < 1 || b->magic != 2 || b->producer_id < 0 || b->base_sequence < 0 ||
	    p->offset_span < 1 || p->offset_span > INT32_MAX)
		return false;
	const int64_t wrap = (int64_t)INT32_MAX + 1;
	int64_t l = ((int64_t)b->base_sequence + b->last_offset_delta) % wrap;
	*last = (int32_t)l;
	*first = (int32_t)(((l - (p->offset_span - 1)) % wrap + wrap) % wrap);
	return true;
}

/* The request's partition `index` of `topic`, and the topic's name as kept in the summary. */
static const struct proxy_produce_part *request_partition(struct proxy_conn *c,
							  const struct proxy_produce_sum *req,
							  const char *topic, int32_t index,
							  const char **kept_name)
{
	for (uint32_t i = 0; i < req->nparts; i++) {
		const struct proxy_produce_part *q = &req->parts[i];
		const struct proxy_produce_topic *rt = &proxy_produce_sum_topics(req)[q->topic];
		const char *name = topic_name(c, rt->name, rt->topic_id);
		if (q->partition == index && name && !strcmp(name, topic)) {
			*kept_name = name;
			return q;
		}
	}
	return NULL;
}

static bool any_topic_gated(struct proxy_conn *c, const struct proxy_produce_sum *req)
{
	for (uint32_t t = 0; t < req->ntopics; t++) {
		const struct proxy_produce_topic *rt = &proxy_produce_sum_topics(req)[t];
		const char *name = topic_name(c, rt->name, rt->topic_id);
		/* an id not learnt yet may name a gated topic: decode to find out */
		if (!name || mirror_gate_is_gated(c->srv->gate, name))
			return true;
	}
	return false;
}

/*
 * A transactional batch (RecordBatch attributes bit 4) that timed out
 * waiting for an `offsets: mm2` mirror: an MM2 that copies only committed
 * records (exactly-once, read_committed) waits for a COMMIT the producer
 * cannot send before these acks — a deadlock (README, Transactions).
 * Counted every time (syncgate_mirror_transactional_batch_timeouts_total,
 * per mirror); logged at most once a minute.
 */
static void warn_txn_timeout(struct proxy_conn *c, struct proxy_entry *e, size_t i)
{
	static struct proxy_log_limit txn_log = {.interval_ms = 60000};
	const struct mirror_wait_part *wp = &e->parts[i];
	const char *kept;
	const struct proxy_produce_part *q = request_partition(c, e->produce, wp->topic, wp->partition, &kept);
	if (!q || !q->transactional)
		return;
	const struct conf *cf = c->srv->conf;
	for (size_t m = 0; m < cf->nmirrors; m++) {
		const struct conf_mirror *mi = &cf->mirrors[m];
		size_t n = mi->name ? strlen(mi->name) : 0;
		/* the gate's timeout message starts "mirror NAME: " (the slowest one) */
		const char *msg = mirror_wait_part_message(wp);
		if (mi->offsets != CONF_OFFSETS_MM2 || !n || strncmp(msg, "mirror ", 7) ||
		    strncmp(msg + 7, mi->name, n) || msg[7 + n] != ':')
			continue;
		char name[160], labels[200];
		metric_label_escape(name, sizeof(name), mi->name);
		snprintf(labels, sizeof(labels), "mirror=\"%s\"", name);
		metric_add(metric_get(METRIC_COUNTER, "syncgate_mirror_transactional_batch_timeouts_total",
				      "Held transactional Produce partitions (RecordBatch isTransactional) that "
				      "timed out waiting for an offsets: mm2 mirror; a MirrorMaker 2 reading "
				      "read_committed cannot copy them before the COMMIT that waits for their "
				      "acks (log gate_txn_timeout_mm2).", labels, NULL, 0), 1);
		uint64_t suppressed = 0;
		if (proxy_log_allow(&txn_log, mirror_now_ms(), &suppressed))
			LOG_W("gate_txn_timeout_mm2", "conn=%llu topic=%s partition=%d mirror=%s hint=\"a held "
			      "transactional batch timed out waiting for a MirrorMaker 2 mirror: if MM2 reads "
			      "read_committed (exactly-once), it waits for the COMMIT that waits for these acks; "
			      "run MM2 read_uncommitted or keep transactional topics ASYNC\" suppressed=%llu",
			      (unsigned long long)c->id, wp->topic, wp->partition, mi->name,
			      (unsigned long long)suppressed);
		return;
	}
}

/* Where held part i is in the response: the positions follow the parts in
 * the same allocation (one malloc per held response, not two). */
static inline struct proxy_held_part *held_pos(struct proxy_entry *e, size_t i)
{
	return (struct proxy_held_part *)(e->parts + e->nparts) + i;
}

/* Decode the kept response again, patch it and encode it into a READY frame. */
static int hold_finish(struct proxy_conn *c, struct proxy_entry *e)
{
	struct proxy_server *srv = c->srv;
	struct codec_sync_codes codes = {
		.mirror_sync_replication_timeout = srv->conf->code_mirror_sync_replication_timeout,
		.not_enough_remote_replicas_after_append =
			srv->conf->code_not_enough_remote_replicas_after_append,
	};
	struct codec_produce_response resp;
	struct codec_iov iov = { e->raw + e->hdr_len, e->raw_len - e->hdr_len };
	if (codec_produce_response_decode(&iov, 1, e->api_version, &resp) != CODEC_OK) {
		codec_produce_response_free(&resp);
		return -1;
	}
	int rc = -1;
	for (size_t i = 0; i < e->nparts; i++) {
		struct mirror_wait_part *wp = &e->parts[i];
		if (wp->outcome == MIRROR_SATISFIED)
			continue;
		int16_t code = wp->outcome == MIRROR_TIMEOUT ? codes.mirror_sync_replication_timeout
							      : codes.not_enough_remote_replicas_after_append;
		int16_t sent = codec_produce_error_downmap(code, e->client_version, &codes);
		int answer = wp->outcome == MIRROR_TIMEOUT ? proxy_client_timeout_answer(c) : 0;
		if (answer > 0)
			sent = code = (int16_t)answer; /* gate.timeout_answers: as configured */
		if (sent != code)
			metric_add(m_downmapped, 1);
		const struct proxy_held_part *pos = held_pos(e, i);
		struct codec_produce_partition_resp *p = &resp.topics[pos->topic].partitions[pos->partition];
		if (codec_produce_partition_fail(p, sent, mirror_wait_part_message(wp)) < 0)
			goto out;
		if (wp->outcome == MIRROR_TIMEOUT)
			warn_txn_timeout(c, e, i);
		/* one line a second at most: a paused mirror fails every partition
		 * of every request (the counters have them all) */
		static struct proxy_log_limit failed_log;
		uint64_t suppressed = 0;
		if (proxy_log_allow(&failed_log, mirror_now_ms(), &suppressed))
			LOG_W("produce_partition_failed", "conn=%llu topic=%s partition=%d last_offset=%lld "
			      "code=%d reason=\"%s\" suppressed=%llu", (unsigned long long)c->id, wp->topic,
			      wp->partition, (long long)wp->last_offset, sent, mirror_wait_part_message(wp),
			      (unsigned long long)suppressed);
	}
	for (size_t i = 0; i < resp.nnode_endpoints; i++) {
		struct codec_node_endpoint *n = &resp.node_endpoints[i];
		const char *host;
		int32_t port;
		if (proxy_advertise_endpoint(srv, n->node_id, n->host, n->port, &host, &port) == 0) {
			char *h = strdup(host);
			if (!h)
				goto out;
			free(n->host);
			n->host = h;
			n->port = port;
		}
	}
	struct codec_buf body;
	codec_buf_init(&body, (size_t)srv->conf->max_frame_bytes);
	if (codec_produce_response_encode(&resp, e->api_version, &body) != CODEC_OK ||
	    !(e->out = evbuffer_new())) {
		codec_buf_free(&body);
		goto out;
	}
	size_t len = e->hdr_len + body.len;
	uint8_t size[4] = { (uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8),
			    (uint8_t)len };
	evbuffer_add(e->out, size, 4);
	evbuffer_add(e->out, e->raw, e->hdr_len); /* the response header, verbatim */
	evbuffer_add(e->out, body.data, body.len);
	codec_buf_free(&body);
	proxy_entry_set_state(c, e, PROXY_ENTRY_READY);
	rc = 0;
out:
	codec_produce_response_free(&resp);
	return rc;
}

/* Give back the held bytes and let paused readers go on. */
static void hold_release_bytes(struct proxy_conn *c, struct proxy_entry *e)
{
	if (!e->held_bytes)
		return;
	c->held_bytes -= e->held_bytes;
	c->srv->held_bytes -= e->held_bytes;
	metric_add(m_held, -1);
	metric_add(m_held_bytes, -(double)e->held_bytes);
	e->held_bytes = 0;
}

/* Free what a held response kept (after it became READY, or on cancel). */
static void hold_drop_raw(struct proxy_entry *e)
{
	free(e->raw);
	mirror_wait_parts_clear(e->parts, e->nparts);
	free(e->parts);
	e->raw = NULL;
	e->parts = NULL;
	e->nparts = 0;
}

/* e->release of an entry hold.c kept state in: cancel the wait without
 * sending and free what was held (its connection is closing, or the entry
 * is freed once answered). */
static void hold_release(struct proxy_conn *c, struct proxy_entry *e)
{
	if (e->wait) {
		mirror_wait_cancel(e->wait);
		e->wait = NULL;
	}
	hold_release_bytes(c, e);
	hold_drop_raw(e);
}

static void hold_done_cb(void *arg, struct mirror_wait_part *parts, size_t nparts)
{
	struct proxy_entry *e = arg;
	struct proxy_conn *c = e->conn;
	(void)parts;
	(void)nparts;
	e->wait = NULL;
	hold_release_bytes(c, e);
	if (hold_finish(c, e) < 0) {
		c->ops->close(c, PROXY_CLOSE_HELD_PRODUCE_UNENCODABLE);
		return;
	}
	hold_drop_raw(e);
	proxy_fifo_flush(c);
	c->srv->resume_paused(c->srv);
}

int proxy_hold_produce(struct proxy_conn *c, struct proxy_entry *e, struct evbuffer *in,
		       size_t len, size_t hdr_len, const struct codec_iov *iov, int niov)
{
	METRIC_DEFS_GET(hold_metrics);
	const struct proxy_produce_sum *req = e->produce;
	if (c->srv->switched || !acks_gated(c, req->acks) || !any_topic_gated(c, req))
		return 0; /* switched: every mirror copies the source, not the cluster served now */
	/* decoded only to decide; what is held is the raw frame (decoded again at release) */
	struct codec_produce_response resp;
	if (codec_produce_response_decode(iov, niov, e->api_version, &resp) != CODEC_OK) {
		codec_produce_response_free(&resp);
		return -1;
	}
	size_t n = 0;
	for (size_t t = 0; t < resp.ntopics; t++)
		n += resp.topics[t].npartitions;
	/* parts[n], then their positions pos[n]; shrunk to nparts below */
	e->parts = calloc(n ? n : 1, sizeof(*e->parts) + sizeof(struct proxy_held_part));
	if (!e->parts) {
		codec_produce_response_free(&resp);
		return -1;
	}
	e->release = hold_release; /* the entry's free cancels the wait and frees the parts */
	struct proxy_held_part *pos = (struct proxy_held_part *)(e->parts + n);
	e->nparts = 0;
	for (size_t t = 0; t < resp.ntopics; t++) {
		struct codec_produce_topic_resp *rt = &resp.topics[t];
		const char *name = topic_name(c, rt->name, rt->topic_id);
		for (size_t p = 0; p < rt->npartitions; p++) {
			struct codec_produce_partition_resp *rp = &rt->partitions[p];
			if (rp->error_code != CODEC_ERROR_NONE)
				continue; /* broker errors pass unchanged, never held */
			if (!name) {
				/* a TopicId nobody told us about: fail safe, never ack */
				struct mirror_wait_part *wp = &e->parts[e->nparts];
				wp->topic = "?";
				wp->partition = rp->index;
				wp->outcome = MIRROR_TIMEOUT;
				mirror_wait_part_set_message(wp, "syncgate: unknown TopicId, cannot confirm mirrors");
				metric_add(m_unknown_id, 1);
				proxy_topic_id_unresolved(c, rt->topic_id,
							  proxy_topic_ids_resolve(c->srv->topic_ids, rt->topic_id, NULL),
							  PROXY_TOPIC_ID_API_PRODUCE, PROXY_TOPIC_ID_FAILED);
				pos[e->nparts++] = (struct proxy_held_part){ (uint32_t)t, (uint32_t)p };
				continue;
			}
			if (!mirror_gate_is_gated(c->srv->gate, name))
				continue;
			const char *kept = NULL;
			const struct proxy_produce_part *q =
				request_partition(c, req, name, rp->index, &kept);
			if (!q || q->offset_span <= 0 || rp->base_offset < 0)
				continue; /* nothing appended: nothing to wait for */
			if (q->idempotent && !q->transactional && !e->replayed)
				proxy_pidmap_note_appended(c, q, kept, rp->base_offset);
			if (q->transactional && c->srv->conf->gate_transactions != CONF_TXN_DATA)
				proxy_txn_note_data(q->producer_id, kept, rp->index, rp->base_offset + q->offset_span - 1);
			if (q->transactional && c->srv->conf->gate_transactions == CONF_TXN_COMMIT)
				continue; /* gate.transactions: commit — the EndTxn waits instead (txn_hold.c) */
			struct mirror_wait_part *wp = &e->parts[e->nparts];
			wp->topic = kept; /* the request summary's (or the TopicId map's) */
			wp->partition = rp->index;
			wp->last_offset = rp->base_offset + q->offset_span - 1;
			wp->committed = req->acks == -1 && !e->replayed;
			wp->outcome = MIRROR_PENDING;
			pos[e->nparts++] = (struct proxy_held_part){ (uint32_t)t, (uint32_t)p };
		}
	}
	codec_produce_response_free(&resp);
	if (e->nparts == 0) {
		/* nothing gated after all: forward the original bytes */
		free(e->parts);
		e->parts = NULL;
		return 0;
	}
	/* the positions right after the parts kept; shrink to what is held */
	memmove(held_pos(e, 0), pos, e->nparts * sizeof(*pos));
	if (e->nparts < n) {
		void *p = realloc(e->parts, e->nparts * (sizeof(*e->parts) + sizeof(*pos)));
		if (p)
			e->parts = p;
	}
	/* keep the frame (header and body) verbatim */
	e->raw = malloc(len);
	if (!e->raw)
		return -1;
	evbuffer_drain(in, 4);
	evbuffer_remove(in, e->raw, len);
	e->raw_len = (uint32_t)len;
	e->hdr_len = (uint32_t)hdr_len;

	e->conn = c;
	e->held_bytes = len + 4 + sizeof(*e) + e->nparts * (sizeof(*e->parts) + sizeof(struct proxy_held_part));
	c->held_bytes += e->held_bytes;
	c->srv->held_bytes += e->held_bytes;
	metric_add(m_held, 1);
	metric_add(m_held_bytes, (double)e->held_bytes);

	int32_t timeout = req->timeout_ms > 0 ? req->timeout_ms : 0;
	/* release a little before the client's own request timeout fires, so
	 * it gets the error code rather than a disconnect */
	timeout -= timeout / 10 < 1000 ? timeout / 10 : 1000;
	if (timeout > c->srv->conf->gate_max_hold_ms ||
	    proxy_client_timeout_answer(c) == PROXY_ANSWER_HOLD)
		timeout = c->srv->conf->gate_max_hold_ms;
	proxy_entry_set_state(c, e, PROXY_ENTRY_HELD);
	/* parts already failed safe (unknown TopicId) are left as they are by the gate */
	e->wait = mirror_gate_wait_since(c->srv->gate, e->parts, e->nparts, e->arrival_ms,
					 e->arrival_ms + timeout, hold_done_cb, e);
	if (!e->wait) {
		/* resolved at once (or every part failed safe above) */
		hold_release_bytes(c, e);
		if (hold_finish(c, e) < 0)
			return -1;
		hold_drop_raw(e);
		proxy_fifo_flush(c);
	}
	return 1;
}
