/*
 * retried.c — a retry of a batch the source already appended, around the
 * failover (docs/switchover.md "Producer state").
 *
 * An idempotent producer retries a batch, under the same producer id, epoch
 * and sequences, whenever it did not see the answer: the gate's answer timed
 * out (NOT_ENOUGH_REPLICAS_AFTER_APPEND or MIRROR_SYNC_REPLICATION_TIMEOUT,
 * the records appended but not yet mirrored), its own request.timeout.ms
 * fired, or the connection closed. The broker that appended the batch would
 * answer the retry as a duplicate at the first offset. But once the topic is
 * fenced for a failover the retry never reaches it (fence.c refuses it
 * NOT_ENOUGH_REPLICAS, "not appended", and the producer keeps retrying), and
 * after the switch it reaches the destination under another producer id
 * (pidmap.c), which appends it again: the record is stored twice.
 *
 * So this sidecar remembers, for the gated topics, each idempotent batch its
 * broker appended (producer id, epoch, topic, partition, sequences → base
 * offset, in the pidmap's bounded `appended` map: hold.c learns it from the
 * broker's own Produce answer, proxy_pidmap_note_appended), and a Produce
 * every one of whose partitions is a remembered batch is answered here
 * instead of being refused or forwarded:
 *   - fenced (not switched), a topic of the request fenced: the source's
 *     answer is written again (error 0, the remembered base offsets) and held
 *     by the gate like the broker's own (hold.c), so it is success only once
 *     every mirror has the records — e->replayed: it vouches for no source HW;
 *   - switched, every topic of the request failed over by the mirror served
 *     now: answered success at once (its failover verified the destination
 *     holds every record the source appended), at the remembered
 *     base offset when the mirror preserves offsets, else at -1 (unknown, as a
 *     broker answers a duplicate it holds no offset for).
 * A request mixing remembered and other batches goes on as before (refused
 * by the fence, forwarded after the switch). What this sidecar cannot know:
 * a batch its broker appended through another sidecar, or before this
 * process started. Loop thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/datapath.h"
#include "proxy/security.h"

enum retried_when { RETRIED_FENCED, RETRIED_SWITCHED, RETRIED_WHEN_COUNT };

static struct metric *m_answered[RETRIED_WHEN_COUNT];
static const char *const when_names[RETRIED_WHEN_COUNT] = { "fenced", "switched" };

static void retried_metrics_init(void)
{
	if (m_answered[0])
		return;
	metric_family_get(METRIC_COUNTER, "syncgate_produce_retries_answered_total",
			  "Produce requests retrying only batches the source had appended through this sidecar, "
			  "answered by syncgate with the offsets the source gave (held by the gate while fenced, at "
			  "once after the switch) instead of being refused by the fence or stored again.",
			  NULL, "when", when_names, RETRIED_WHEN_COUNT, m_answered);
}

static const char *req_topic_name(struct proxy_conn *c, const struct codec_produce_topic_req *t)
{
	return t->name ? t->name : proxy_topic_ids_name(c->srv->topic_ids, t->topic_id);
}

/* Whether the switched mirror keeps the source's offsets (the answer's base offsets are then exact). */
static bool switched_offsets_preserved(const struct proxy_server *srv)
{
	for (size_t i = 0; i < srv->conf->nmirrors; i++)
		if (!strcmp(srv->conf->mirrors[i].name, srv->switch_mirror))
			return srv->conf->mirrors[i].offsets == CONF_OFFSETS_PRESERVED;
	return false;
}

/*
 * The answer to `req` when every partition is a remembered batch: error 0 at
 * the remembered base offsets (-1 when !exact). 1 built, 0 not every one
 * remembered, -1 ENOMEM. `*fenced` = a topic of the request is fenced.
 */
static int build_answer(struct proxy_conn *c, const struct codec_produce_request *req, bool exact,
			struct codec_produce_response *resp, bool *fenced)
{
	*fenced = false;
	size_t nparts = 0;
	for (size_t t = 0; t < req->ntopics; t++) {
		const struct codec_produce_topic_req *rt = &req->topics[t];
		const char *name = req_topic_name(c, rt);
		if (!name || !rt->npartitions)
			return 0;
		const char *by = mirror_gate_fenced_by(c->srv->gate, name);
		if (c->srv->switched && (!by || strcmp(by, c->srv->switch_mirror) != 0))
			return 0; /* not failed over by the mirror served now: its destination may lack it */
		*fenced |= by != NULL;
		for (size_t p = 0; p < rt->npartitions; p++) {
			const struct codec_produce_partition_req *rp = &rt->partitions[p];
			int32_t first, last;
			int64_t base;
			if (!proxy_produce_batch_seqs(rp, &first, &last) || (rp->last_batch.attributes & 0x10) ||
			    !proxy_pidmap_appended_find(c->srv->pidmap, rp->last_batch.producer_id,
							rp->last_batch.producer_epoch,
							proxy_pidmap_batch_key(name, rp->index, first, last), first,
							last, &base))
				return 0;
			nparts++;
		}
	}
	if (!nparts)
		return 0;
	if (!(resp->topics = calloc(req->ntopics, sizeof(*resp->topics))))
		return -1;
	resp->ntopics = req->ntopics;
	for (size_t t = 0; t < req->ntopics; t++) {
		const struct codec_produce_topic_req *rt = &req->topics[t];
		const char *name = req_topic_name(c, rt);
		struct codec_produce_topic_resp *ot = &resp->topics[t];
		if ((rt->name && !(ot->name = strdup(rt->name))) ||
		    !(ot->partitions = calloc(rt->npartitions, sizeof(*ot->partitions))))
			return -1;
		memcpy(ot->topic_id, rt->topic_id, sizeof(ot->topic_id));
		ot->npartitions = rt->npartitions;
		for (size_t p = 0; p < rt->npartitions; p++) {
			const struct codec_produce_partition_req *rp = &rt->partitions[p];
			int32_t first = 0, last = 0;
			int64_t base = -1;
			proxy_produce_batch_seqs(rp, &first, &last);
			proxy_pidmap_appended_find(c->srv->pidmap, rp->last_batch.producer_id,
						   rp->last_batch.producer_epoch,
						   proxy_pidmap_batch_key(name, rp->index, first, last), first, last,
						   &base);
			ot->partitions[p] = (struct codec_produce_partition_resp){
				.index = rp->index, .error_code = CODEC_ERROR_NONE, .base_offset = exact ? base : -1,
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
	if (!held) { /* no longer gated (released): the answer as it is */
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
	if (!c->srv->gate || !c->srv->pidmap || req->acks == 0 || !proxy_pidmap_appended_size(c->srv->pidmap))
		return 0;
	bool switched = c->srv->switched, fenced;
	if (!switched && !mirror_gate_any_fenced(c->srv->gate))
		return 0; /* the broker de-duplicates its own retries: nothing looked up */
	struct codec_produce_response resp = { 0 };
	int built = build_answer(c, req, !switched || switched_offsets_preserved(c->srv), &resp, &fenced);
	int rc = built;
	if (built > 0 && !switched && !fenced)
		rc = 0; /* the broker takes the retry and answers it as the duplicate it is */
	else if (built > 0) {
		retried_metrics_init();
		rc = switched ? proxy_fifo_answer_produce(c, h, wire_version, &resp)
			      : hold_again(c, h, wire_version, req, &resp);
		if (rc == 0) {
			metric_add(m_answered[switched ? RETRIED_SWITCHED : RETRIED_FENCED], 1);
			static struct proxy_log_limit retried_log;
			uint64_t suppressed = 0;
			if (proxy_log_allow(&retried_log, mirror_now_ms(), &suppressed))
				LOG_I("produce_retry_answered", "conn=%llu peer=%s when=%s reason=\"every batch of "
				      "the request was appended by the source before; answered with its offsets, not "
				      "%s\" suppressed=%llu", (unsigned long long)c->id, c->peer,
				      when_names[switched ? RETRIED_SWITCHED : RETRIED_FENCED],
				      switched ? "stored again" : "refused", (unsigned long long)suppressed);
			evbuffer_drain(in, len + 4);
			proxy_fifo_flush(c);
			rc = 1;
		}
	}
	codec_produce_response_free(&resp);
	return rc;
}
