/*
 * commit_hold.c — synchronous consumer-group commits on the data path
 * (docs/operating.md "Consumer groups"). An OffsetCommit request (v2–v10)
 * of a group some mirror lists in `sync_groups` is kept on its FIFO entry;
 * when the source coordinator answers, the partitions it accepted go to the
 * gate (mirror_gate_commit), which writes them to every gating mirror's
 * destination, and the answer is held meanwhile — the FIFO keeps the
 * connection's order. Stored: the broker's answer, byte for byte. Not
 * stored in time (or refused): those partitions' ErrorCode becomes
 * COORDINATOR_LOAD_IN_PROGRESS, written in place (retriable: every client
 * commits again; the source's commit stands, ahead of the destination's).
 * Commits of other groups pass, counted as not gated; so do TxnOffsetCommit
 * requests, whose offsets txn_offsets.c keeps for the held EndTxn(commit)
 * (gate.transactions commit|both) — counted as not gated when not kept.
 * Loop thread.
 */
#include <stdlib.h>
#include <string.h>

#include "proxy/datapath.h"

/* What a kept OffsetCommit needs (struct proxy_entry.commit). */
struct proxy_commit {
	struct codec_offset_commit_request req;
	struct mirror_commit *wait;
	size_t *error_at;            /* body offsets of the accepted partitions' ErrorCode */
	size_t nerror_at;
};

static struct metric *m_held, *m_not_gated[2], *m_answered_retriable;

static void metrics_init(void)
{
	static const struct metric_def defs[] = {
		{ &m_held, METRIC_GAUGE, "syncgate_group_commits_held",
		  "OffsetCommit answers held now for the mirrors' destinations (sync_groups)." },
		{ &m_answered_retriable, METRIC_COUNTER, "syncgate_group_commit_retriable_answers_total",
		  "OffsetCommit answers whose accepted partitions were answered COORDINATOR_LOAD_IN_PROGRESS "
		  "because a destination did not store the commit (timeout, refused, group active there)." },
	};
	static const char *const apis[2] = { "OffsetCommit", "TxnOffsetCommit" };
	if (m_held)
		return;
	METRIC_DEFS_GET(defs);
	metric_family_get(METRIC_COUNTER, "syncgate_group_commits_not_gated_total",
			  "Offset commits seen that no mirror holds: OffsetCommit of a group no mirror lists in "
			  "sync_groups, and TxnOffsetCommit not kept for its transaction's held commit (gate.transactions: data, "
			  "another group, unreadable).",
			  NULL, "api", apis, 2, m_not_gated);
}

void proxy_commit_free(struct proxy_commit *pc)
{
	if (!pc)
		return;
	mirror_commit_cancel(pc->wait);
	codec_offset_commit_request_free(&pc->req);
	free(pc->error_at);
	free(pc);
}

/* Give back what a held answer counted against the hold caps. */
static void release_held_bytes(struct proxy_conn *c, struct proxy_entry *e)
{
	if (!e->held_bytes)
		return;
	c->held_bytes -= e->held_bytes;
	c->srv->held_bytes -= e->held_bytes;
	metric_add(m_held, -1);
	e->held_bytes = 0;
}

/* e->release: the entry is freed (answered, or its connection closes). */
static void commit_release(struct proxy_conn *c, struct proxy_entry *e)
{
	release_held_bytes(c, e);
	proxy_commit_free(e->commit);
	e->commit = NULL;
	free(e->raw);
	e->raw = NULL;
}

struct proxy_commit *proxy_commit_read(struct proxy_conn *c, struct evbuffer *in, size_t len,
				       const struct codec_request_header *h)
{
	metrics_init();
	if (h->api_key == CODEC_API_TXN_OFFSET_COMMIT) {
		if (!proxy_txn_offsets_read(c, in, len, h))
			metric_add(m_not_gated[1], 1);
		return NULL;
	}
	if (h->api_key != CODEC_API_OFFSET_COMMIT || c->srv->switched || c->srv->conf->nmirrors == 0)
		return NULL;
	struct proxy_commit *pc = calloc(1, sizeof(*pc));
	struct codec_iov iov[PROXY_MAX_IOV];
	int niov = proxy_buf_iov(in, 4 + h->len, len - h->len, iov, PROXY_MAX_IOV);
	if (!pc || niov < 0 ||
	    codec_offset_commit_request_decode(iov, niov, h->api_version, &pc->req) != CODEC_OK ||
	    !mirror_gate_syncs_group(c->srv->gate, pc->req.group_id)) {
		/* not a synchronous group (or unreadable: the broker answers it) */
		metric_add(m_not_gated[0], 1);
		proxy_commit_free(pc);
		return NULL;
	}
	/* v10 names topics by TopicId: the ones this sidecar does not know are
	 * asked of its broker ahead of the commit (topic_lookup.c) */
	size_t unknown = 0;
	for (size_t t = 0; t < pc->req.ntopics; t++)
		unknown += !pc->req.topics[t].name &&
			   !proxy_topic_ids_name(c->srv->topic_ids, pc->req.topics[t].topic_id);
	if (unknown) {
		uint8_t (*ids)[16] = calloc(unknown, sizeof(*ids));
		size_t n = 0;
		for (size_t t = 0; ids && t < pc->req.ntopics; t++)
			if (!pc->req.topics[t].name &&
			    !proxy_topic_ids_name(c->srv->topic_ids, pc->req.topics[t].topic_id))
				memcpy(ids[n++], pc->req.topics[t].topic_id, 16);
		int rc = ids ? proxy_topic_lookup_ahead(c, (const uint8_t (*)[16])ids, n) : -1;
		free(ids);
		if (rc < 0) {
			proxy_commit_free(pc);
			return (struct proxy_commit *)-1;
		}
	}
	return pc;
}

void proxy_commit_attach(struct proxy_entry *e, struct proxy_commit *pc)
{
	e->commit = pc;
	e->release = commit_release;
}

/* The request's partition (topic `name`, index) or NULL. */
static const struct codec_offset_commit_partition *request_partition(struct proxy_conn *c,
								     const struct proxy_commit *pc,
								     const char *name, int32_t index)
{
	for (size_t t = 0; t < pc->req.ntopics; t++) {
		const struct codec_offset_commit_topic *rt = &pc->req.topics[t];
		const char *n = rt->name ? rt->name : proxy_topic_ids_name(c->srv->topic_ids, rt->topic_id);
		if (!n || strcmp(n, name))
			continue;
		for (size_t p = 0; p < rt->npartitions; p++)
			if (rt->partitions[p].index == index)
				return &rt->partitions[p];
	}
	return NULL;
}

/* Write gate.commit_retriable_code (COORDINATOR_LOAD_IN_PROGRESS) over every accepted partition's ErrorCode. */
static void answer_retriable(struct proxy_conn *c, struct proxy_entry *e)
{
	int16_t code = c->srv->conf->gate_commit_retriable_code;
	uint8_t *body = e->raw + e->hdr_len;
	size_t len = e->raw_len - e->hdr_len;
	for (size_t i = 0; i < e->commit->nerror_at; i++)
		(void)codec_put_i16_at(body, len, e->commit->error_at[i], code);
	metric_add(m_answered_retriable, 1);
}

/* The kept frame becomes the entry's READY response. */
static int commit_ready(struct proxy_conn *c, struct proxy_entry *e)
{
	if (!(e->out = evbuffer_new()))
		return -1;
	uint32_t len = e->raw_len;
	uint8_t size[4] = { (uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8), (uint8_t)len };
	evbuffer_add(e->out, size, 4);
	evbuffer_add(e->out, e->raw, e->raw_len);
	free(e->raw);
	e->raw = NULL;
	proxy_entry_set_state(c, e, PROXY_ENTRY_READY);
	return 0;
}

static void commit_done_cb(void *arg, enum mirror_commit_outcome outcome, const char *detail)
{
	struct proxy_entry *e = arg;
	struct proxy_conn *c = e->conn;
	e->commit->wait = NULL;
	if (outcome != MIRROR_COMMIT_STORED) {
		LOG_D("group_commit_answered_retriable", "conn=%llu group=%s outcome=%s reason=\"%s\"",
		      (unsigned long long)c->id, e->commit->req.group_id, mirror_commit_outcome_str(outcome), detail);
		answer_retriable(c, e);
	}
	release_held_bytes(c, e);
	if (commit_ready(c, e) < 0) {
		c->ops->close(c, PROXY_CLOSE_HELD_PRODUCE_UNENCODABLE);
		return;
	}
	proxy_fifo_flush(c);
	c->srv->resume_paused(c->srv);
}

int proxy_commit_hold(struct proxy_conn *c, struct proxy_entry *e, struct evbuffer *in, size_t len,
		      size_t hdr_len, const struct codec_iov *iov, int niov)
{
	struct proxy_commit *pc = e->commit;
	struct codec_offset_commit_response resp;
	if (codec_offset_commit_response_decode(iov, niov, e->api_version, &resp) != CODEC_OK) {
		codec_offset_commit_response_free(&resp);
		return -1;
	}
	size_t n = 0;
	for (size_t t = 0; t < resp.ntopics; t++)
		n += resp.topics[t].npartitions;
	struct mirror_commit_part *parts = calloc(n ? n : 1, sizeof(*parts));
	pc->error_at = calloc(n ? n : 1, sizeof(*pc->error_at));
	if (!parts || !pc->error_at) {
		free(parts);
		codec_offset_commit_response_free(&resp);
		return -1;
	}
	size_t np = 0;
	for (size_t t = 0; t < resp.ntopics; t++) {
		const struct codec_offset_commit_tresp *rt = &resp.topics[t];
		const char *name = rt->name ? rt->name : proxy_topic_ids_name(c->srv->topic_ids, rt->topic_id);
		for (size_t p = 0; name && p < rt->npartitions; p++) {
			const struct codec_offset_commit_presp *rp = &rt->partitions[p];
			const struct codec_offset_commit_partition *q =
				rp->error_code == CODEC_ERROR_NONE ? request_partition(c, pc, name, rp->index) : NULL;
			if (!q)
				continue; /* broker errors pass unchanged */
			parts[np] = (struct mirror_commit_part){ name, rp->index, q->offset, q->metadata };
			pc->error_at[np++] = rp->error_at;
		}
	}
	pc->nerror_at = np;
	int held = np ? mirror_gate_commit(c->srv->gate, pc->req.group_id, parts, np,
					   mirror_now_ms() + c->srv->conf->gate_max_commit_hold_ms, commit_done_cb, e,
					   &pc->wait)
		      : 0;
	free(parts); /* the gate copied what it needs; names came from resp and the map */
	codec_offset_commit_response_free(&resp);
	if (held == 0)
		return 0;
	/* keep the frame (header and body) verbatim */
	if (!(e->raw = malloc(len)))
		return -1;
	evbuffer_drain(in, 4);
	evbuffer_remove(in, e->raw, len);
	e->raw_len = (uint32_t)len;
	e->hdr_len = (uint32_t)hdr_len;
	e->conn = c;
	if (held < 0) { /* out of memory in the gate: fail closed, retriable */
		answer_retriable(c, e);
		if (commit_ready(c, e) < 0)
			return -1;
		proxy_fifo_flush(c);
		return 1;
	}
	e->held_bytes = len + 4 + sizeof(*e) + sizeof(*pc) + np * sizeof(size_t);
	c->held_bytes += e->held_bytes;
	c->srv->held_bytes += e->held_bytes;
	metric_add(m_held, 1);
	proxy_entry_set_state(c, e, PROXY_ENTRY_HELD);
	return 1;
}
