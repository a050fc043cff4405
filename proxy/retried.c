/*
 * retried.c — a retry of a batch the source already appended, while the
 * failover's fence stands (docs/switchover.md "Producer state").
 *
 * An idempotent producer retries a batch, under the same producer id, epoch
 * and sequences, whenever it did not see the answer: the gate's answer timed
 * out (NOT_ENOUGH_REPLICAS_AFTER_APPEND or MIRROR_SYNC_REPLICATION_TIMEOUT,
 * the records appended but not yet mirrored), its own request.timeout.ms
 * fired, or the connection closed. The broker that appended the batch would
 * answer the retry as a duplicate at the first offset. But once the topic is
 * fenced for a failover the retry never reaches it: fence.c refuses it
 * NOT_ENOUGH_REPLICAS ("not appended"), the producer keeps retrying until the
 * switch, and then the destination appends it again under another producer
 * id (pidmap.c): the record is stored twice.
 *
 * So this sidecar remembers, for the gated topics, each idempotent batch its
 * broker appended (producer id, epoch, topic, partition, sequences → base
 * offset, in the pidmap's bounded `appended` map: hold.c learns it from the
 * broker's own Produce answer, proxy_pidmap_note_appended), and while a
 * topic of the request is fenced, a Produce every partition of which is a
 * remembered batch is answered here: the source's answer is written again
 * (error 0, the remembered base offsets) and held by the gate like the
 * broker's own (hold.c), so it is success only once every mirror has the
 * records (e->replayed: it vouches for no source HW). Before the switch
 * every producer id is the source's, so a remembered (id, epoch, sequences)
 * is that producer's batch. A fencing mirror that no longer gates the topic
 * (a verified failover released it; or it was demoted, altered to async, or
 * released after a drain that did not finish) must have confirmed progress
 * past the batch (mirror_gate_fenced_mirrored), else the fence refuses the
 * retry as before: never an answer for records a mirror may lack. After the
 * switch (applied, or recorded and refused here) nothing is answered from the
 * map: a client's producer id may then be one the destination issued, equal
 * to a source id the map remembers, and its first batch would be taken for
 * the other's retry — a false ack. A request mixing remembered and other
 * batches is refused by the fence as before. What this sidecar cannot know:
 * a batch its broker appended through another sidecar, or before this
 * process started. Loop thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/datapath.h"
#include "proxy/security.h"

static struct metric *m_answered;

static const struct metric_def retried_metrics[] = {
	{ &m_answered, METRIC_COUNTER, "syncgate_produce_retries_answered_total",
	  "Produce requests retrying only batches the source had appended through this sidecar, while their "
	  "topic is fenced for a failover: answered with the offsets the source gave, held by the gate until "
	  "mirrored, instead of refused by the fence (and stored again after the switch)." },
};

static const char *req_topic_name(struct proxy_conn *c, const struct codec_produce_topic_req *t)
{
	return t->name ? t->name : proxy_topic_ids_name(c->srv->topic_ids, t->topic_id);
}

/*
 * The answer to `req` when every partition is a remembered batch: error 0 at
 * the remembered base offsets, built in `resp` (the caller frees it on any
 * outcome). 1 built, 0 not every one remembered, -1 ENOMEM. `*fenced` = a
 * topic of the request is fenced.
 */
static int build_answer(struct proxy_conn *c, const struct codec_produce_request *req,
			struct codec_produce_response *resp, bool *fenced)
{
	*fenced = false;
	if (!req->ntopics)
		return 0;
	if (!(resp->topics = calloc(req->ntopics, sizeof(*resp->topics))))
		return -1;
	resp->ntopics = req->ntopics;
	for (size_t t = 0; t < req->ntopics; t++) {
		const struct codec_produce_topic_req *rt = &req->topics[t];
		struct codec_produce_topic_resp *ot = &resp->topics[t];
		const char *name = req_topic_name(c, rt);
		if (!name || !rt->npartitions)
			return 0;
		*fenced |= mirror_gate_fenced_by(c->srv->gate, name) != NULL;
		if ((rt->name && !(ot->name = strdup(rt->name))) ||
		    !(ot->partitions = calloc(rt->npartitions, sizeof(*ot->partitions))))
			return -1;
		memcpy(ot->topic_id, rt->topic_id, sizeof(ot->topic_id));
		ot->npartitions = rt->npartitions;
		for (size_t p = 0; p < rt->npartitions; p++) {
			const struct codec_produce_partition_req *rp = &rt->partitions[p];
			int32_t first, last;
			int64_t base;
			/* one batch (its summary is the last batch's), idempotent, not transactional */
			if (rp->nbatches != 1 || !proxy_produce_batch_seqs(rp, &first, &last) ||
			    (rp->last_batch.attributes & 0x10) ||
			    !proxy_pidmap_appended_find(c->srv->pidmap, rp->last_batch.producer_id,
							rp->last_batch.producer_epoch,
							proxy_pidmap_batch_key(name, rp->index, first, last), first,
							last, &base))
				return 0;
			/* a fencing mirror that stopped gating must be known to have the records */
			if (!mirror_gate_fenced_mirrored(c->srv->gate, name, rp->index,
							 base + ((int64_t)last - first) + 1))
				return 0;
			ot->partitions[p] = (struct codec_produce_partition_resp){
				.index = rp->index, .error_code = CODEC_ERROR_NONE, .base_offset = base,
				.log_append_time_ms = -1, .log_start_offset = -1 };
		}
	}
	return 1;
}

/* Fenced: the source's answer written again, then held by the gate as the broker's own (hold.c). */
static int hold_again(struct proxy_conn *c, const struct codec_request_header *h, int16_t wire_version,
		      const struct codec_produce_request *req, const struct codec_produce_response *resp)
{
	struct evbuffer *frame = evbuffer_new();
	struct proxy_entry *e = proxy_entry_new(c, PROXY_ENTRY_KAFKA);
	size_t hdr_len = 0;
	int rc = -1;
	if (!frame || !e || proxy_fifo_produce_frame(c, h, wire_version, resp, frame, &hdr_len) < 0)
		goto out;
	e->correlation_id = h->correlation_id;
	e->api_key = h->api_key;
	e->client_version = h->api_version;
	e->api_version = wire_version;
	e->replayed = true;
	if (!(e->produce = proxy_produce_sum_new(req)))
		goto out;
	size_t len = evbuffer_get_length(frame) - 4;
	struct codec_iov iov[PROXY_MAX_IOV];
	int niov = proxy_buf_iov(frame, 4 + hdr_len, len - hdr_len, iov, PROXY_MAX_IOV);
	int held = niov < 0 ? -1 : proxy_hold_produce(c, e, frame, len, hdr_len, iov, niov);
	if (held < 0)
		goto out;
	if (!held) { /* no longer gated (released): build_answer saw each fencing mirror has the records */
		e->out = frame;
		frame = NULL;
		proxy_entry_set_state(c, e, PROXY_ENTRY_READY);
	}
	e = NULL;
	rc = 0;
out:
	if (e)
		proxy_entry_free(c, e);
	if (frame)
		evbuffer_free(frame);
	return rc;
}

int proxy_retried_produce(struct proxy_conn *c, struct evbuffer *in, size_t len, const struct codec_request_header *h,
			  int16_t wire_version, const struct codec_produce_request *req)
{
	if (!c->srv->gate || c->srv->switched || mirror_gate_serving(c->srv->gate) || !c->srv->pidmap ||
	    req->acks == 0 ||
	    !proxy_pidmap_appended_size(c->srv->pidmap) || !mirror_gate_any_fenced(c->srv->gate))
		return 0; /* no fence: the broker de-duplicates its own retries; switched: see above */
	bool fenced;
	struct codec_produce_response resp = { 0 };
	int rc = build_answer(c, req, &resp, &fenced);
	if (rc > 0 && !fenced)
		rc = 0; /* not fenced: the broker takes the retry and answers it as the duplicate it is */
	else if (rc > 0 && (rc = hold_again(c, h, wire_version, req, &resp)) == 0) {
		METRIC_DEFS_GET(retried_metrics);
		metric_add(m_answered, 1);
		static struct proxy_log_limit retried_log;
		uint64_t suppressed = 0;
		if (proxy_log_allow(&retried_log, mirror_now_ms(), &suppressed))
			LOG_I("produce_retry_answered", "conn=%llu peer=%s suppressed=%llu reason=\"every batch of the "
			      "request was appended by the source before the fence; answered with its offsets once "
			      "mirrored, not refused\"", (unsigned long long)c->id, c->peer,
			      (unsigned long long)suppressed);
		evbuffer_drain(in, len + 4);
		proxy_fifo_flush(c);
		rc = 1;
	}
	codec_produce_response_free(&resp);
	return rc;
}
