/*
 * txn_offsets.c — a transaction's consumer-group offsets, synchronous with
 * its commit (gate.transactions: commit | both, a group some mirror lists in
 * `sync_groups`; docs/operating.md "Transactions").
 *
 * A TxnOffsetCommit (v0–v6; the offsets an exactly-once application such as
 * Kafka Streams commits inside its transaction) of such a group is read on
 * its way to the group coordinator and its offsets are kept by
 * transactional id and group — the transaction's pending offsets, a later
 * TxnOffsetCommit of the same partition replacing the offset. When this
 * sidecar holds the transaction's EndTxn(commit) (txn_hold.c) and every
 * gating mirror has the COMMIT markers, the offsets are written to every
 * gating mirror's destination group (mirror_gate_commit, as for a
 * synchronous OffsetCommit) and only then is the commit answered success.
 * Not stored in time (or refused): the timeout code, the offsets kept for
 * the client's retry. An EndTxn(abort) drops them; so does a TxnOffsetCommit
 * of another producer id or epoch for the same transactional id (a new
 * transaction this sidecar saw no end of). Only the sidecar of a broker
 * that is both the group's and the transaction's coordinator sees both
 * requests: elsewhere the offsets stay asynchronous (counted); so do those
 * of a v6 request naming a TopicId this sidecar does not know. Loop thread.
 */
#include <stdlib.h>
#include <string.h>

#include "proxy/datapath.h"

#define TXN_OFFSETS_MAX 256 /* (transactional id, group) entries kept; the oldest goes */

struct txn_offsets {
	char *txn_id, *group;
	int64_t producer_id;
	int16_t producer_epoch;
	struct mirror_commit_part *parts; /* topic and metadata owned */
	size_t nparts;
	uint64_t seq;                     /* age: the oldest is reused first */
};
static struct txn_offsets kept[TXN_OFFSETS_MAX];
static uint64_t kept_seq;

/* One held commit's stores, one per group (its outcome the worst of them). */
struct store_slot {
	struct proxy_txn_offsets_wait *w;
	struct mirror_commit *h;     /* NULL once it ended */
};
struct proxy_txn_offsets_wait {
	struct store_slot *slots;
	size_t n, left;
	enum mirror_commit_outcome worst;
	char detail[128];
	mirror_commit_cb cb;
	void *arg;
};

static struct metric *m_kept, *m_stored[MIRROR_COMMIT_OUTCOME_COUNT], *m_unread;

static void metrics_init(void)
{
	static const struct metric_def defs[] = {
		{ &m_kept, METRIC_COUNTER, "syncgate_txn_offset_commits_kept_total",
		  "TxnOffsetCommit requests of a sync_groups group kept for their transaction's held "
		  "EndTxn(commit) (gate.transactions commit or both)." },
		{ &m_unread, METRIC_COUNTER, "syncgate_txn_offset_commits_unread_total",
		  "TxnOffsetCommit requests syncgate could not read with gate.transactions commit or both (above "
		  "v6, malformed, a TopicId it does not know): their offsets are not synchronous." },
	};
	static const char *outcomes[MIRROR_COMMIT_OUTCOME_COUNT];
	if (m_kept)
		return;
	METRIC_DEFS_GET(defs);
	for (int i = 0; i < MIRROR_COMMIT_OUTCOME_COUNT; i++)
		outcomes[i] = mirror_commit_outcome_str((enum mirror_commit_outcome)i);
	metric_family_get(METRIC_COUNTER, "syncgate_txn_offset_stores_total",
			  "A held EndTxn(commit)'s group offsets written to the mirrors' destinations, by outcome.",
			  NULL, "outcome", outcomes, MIRROR_COMMIT_OUTCOME_COUNT, m_stored);
}

static void entry_clear(struct txn_offsets *t)
{
	for (size_t i = 0; i < t->nparts; i++) {
		free((char *)t->parts[i].topic);
		free((char *)t->parts[i].metadata);
	}
	free(t->parts);
	free(t->txn_id);
	free(t->group);
	memset(t, 0, sizeof(*t));
}

static struct txn_offsets *entry_find(const char *txn_id, const char *group)
{
	for (size_t i = 0; i < TXN_OFFSETS_MAX; i++)
		if (kept[i].txn_id && !strcmp(kept[i].txn_id, txn_id) && (!group || !strcmp(kept[i].group, group)))
			return &kept[i];
	return NULL;
}

static struct txn_offsets *entry_new(void)
{
	struct txn_offsets *oldest = &kept[0];
	for (size_t i = 0; i < TXN_OFFSETS_MAX; i++) {
		if (!kept[i].txn_id)
			return &kept[i];
		if (kept[i].seq < oldest->seq)
			oldest = &kept[i];
	}
	LOG_W("txn_offsets_forgotten", "transactional_id=%s group=%s reason=\"more than %d transactions with "
	      "pending group offsets: the oldest is forgotten and its commit's offsets are not synchronous\"",
	      oldest->txn_id, oldest->group, TXN_OFFSETS_MAX);
	entry_clear(oldest);
	return oldest;
}

void proxy_txn_offsets_drop(const char *txn_id)
{
	struct txn_offsets *t;
	while ((t = entry_find(txn_id, NULL)))
		entry_clear(t);
}

/* Set (topic, partition)'s offset in t; false on ENOMEM. */
static bool entry_put(struct txn_offsets *t, const char *topic, const struct codec_offset_commit_partition *p)
{
	struct mirror_commit_part *q = NULL;
	for (size_t i = 0; i < t->nparts && !q; i++)
		if (t->parts[i].partition == p->index && !strcmp(t->parts[i].topic, topic))
			q = &t->parts[i];
	if (!q) {
		struct mirror_commit_part *v = realloc(t->parts, (t->nparts + 1) * sizeof(*v));
		if (!v)
			return false;
		t->parts = v;
		q = &v[t->nparts];
		*q = (struct mirror_commit_part){ strdup(topic), p->index, 0, NULL };
		if (!q->topic)
			return false;
		t->nparts++;
	}
	char *meta = p->metadata ? strdup(p->metadata) : NULL;
	if (p->metadata && !meta)
		return false;
	free((char *)q->metadata);
	q->metadata = meta;
	q->offset = p->offset;
	return true;
}

bool proxy_txn_offsets_read(struct proxy_conn *c, struct evbuffer *in, size_t len,
			    const struct codec_request_header *h)
{
	const struct conf *cf = c->srv->conf;
	if (cf->gate_transactions == CONF_TXN_DATA || c->srv->switched || cf->nmirrors == 0)
		return false;
	metrics_init();
	struct codec_txn_offset_commit_request req;
	struct codec_iov iov[PROXY_MAX_IOV];
	int niov = proxy_buf_iov(in, 4 + h->len, len - h->len, iov, PROXY_MAX_IOV);
	if (niov < 0 || codec_txn_offset_commit_request_decode(iov, niov, h->api_version, &req) != CODEC_OK ||
	    !req.transactional_id || !req.group_id) {
		metric_add(m_unread, 1);
		LOG_D("txn_offsets_unread", "conn=%llu version=%d reason=\"a TxnOffsetCommit syncgate cannot read: "
		      "its offsets are not synchronous\"", (unsigned long long)c->id, h->api_version);
		codec_txn_offset_commit_request_free(&req);
		return false;
	}
	bool ok = mirror_gate_syncs_group(c->srv->gate, req.group_id);
	struct txn_offsets *t = ok ? entry_find(req.transactional_id, req.group_id) : NULL;
	if (t && (t->producer_id != req.producer_id || t->producer_epoch != req.producer_epoch)) {
		proxy_txn_offsets_drop(req.transactional_id); /* a new transaction: the old one ended unseen */
		t = NULL;
	}
	if (ok && !t) {
		t = entry_new();
		t->txn_id = strdup(req.transactional_id);
		t->group = strdup(req.group_id);
		t->producer_id = req.producer_id;
		t->producer_epoch = req.producer_epoch;
		ok = t->txn_id && t->group;
	}
	if (t)
		t->seq = ++kept_seq;
	bool named = true;
	for (size_t i = 0; ok && i < req.ntopics; i++) {
		const char *name = req.topics[i].name ? req.topics[i].name
						      : proxy_topic_ids_name(c->srv->topic_ids, req.topics[i].topic_id);
		named = named && name;
		for (size_t p = 0; ok && name && p < req.topics[i].npartitions; p++)
			ok = entry_put(t, name, &req.topics[i].partitions[p]);
	}
	if (t && !named) {
		metric_add(m_unread, 1);
		LOG_W("txn_offsets_unread", "conn=%llu transactional_id=%s reason=\"a TxnOffsetCommit names a TopicId "
		      "this sidecar does not know: the transaction's offsets are not synchronous\"",
		      (unsigned long long)c->id, req.transactional_id);
		entry_clear(t);
		ok = false;
	} else if (t && !ok) {
		/* out of memory: forgotten, so the commit's offsets are not held for (logged) */
		LOG_W("txn_offsets_forgotten", "conn=%llu transactional_id=%s reason=\"out of memory\"",
		      (unsigned long long)c->id, req.transactional_id);
		entry_clear(t);
	} else if (ok) {
		metric_add(m_kept, 1);
		LOG_D("txn_offsets_kept", "conn=%llu transactional_id=%s group=%s partitions=%zu",
		      (unsigned long long)c->id, req.transactional_id, req.group_id, t->nparts);
	}
	codec_txn_offset_commit_request_free(&req);
	return ok;
}

static void wait_free(struct proxy_txn_offsets_wait *w)
{
	for (size_t i = 0; i < w->n; i++)
		mirror_commit_cancel(w->slots[i].h);
	free(w->slots);
	free(w);
}

static void store_done_cb(void *arg, enum mirror_commit_outcome outcome, const char *detail)
{
	struct store_slot *slot = arg;
	struct proxy_txn_offsets_wait *w = slot->w;
	slot->h = NULL;
	metric_add(m_stored[outcome], 1);
	if (outcome != MIRROR_COMMIT_STORED && w->worst == MIRROR_COMMIT_STORED) {
		w->worst = outcome;
		snprintf(w->detail, sizeof(w->detail), "%s", detail ? detail : "");
	}
	if (--w->left)
		return;
	mirror_commit_cb cb = w->cb;
	void *cb_arg = w->arg;
	enum mirror_commit_outcome worst = w->worst;
	char why[sizeof(w->detail)];
	memcpy(why, w->detail, sizeof(why));
	wait_free(w);
	cb(cb_arg, worst, why);
}

int proxy_txn_offsets_store(struct proxy_server *srv, const char *txn_id, int64_t deadline_ms, mirror_commit_cb cb,
			    void *arg, struct proxy_txn_offsets_wait **out)
{
	*out = NULL;
	size_t n = 0;
	for (size_t i = 0; i < TXN_OFFSETS_MAX; i++)
		n += kept[i].txn_id && !strcmp(kept[i].txn_id, txn_id);
	if (!n)
		return 0;
	metrics_init();
	struct proxy_txn_offsets_wait *w = calloc(1, sizeof(*w));
	if (!w || !(w->slots = calloc(n, sizeof(*w->slots)))) {
		free(w);
		return -1;
	}
	w->cb = cb;
	w->arg = arg;
	for (size_t i = 0; i < TXN_OFFSETS_MAX; i++) {
		struct txn_offsets *t = &kept[i];
		if (!t->txn_id || strcmp(t->txn_id, txn_id) || !t->nparts)
			continue;
		struct store_slot *slot = &w->slots[w->n];
		slot->w = w;
		int rc = mirror_gate_commit(srv->gate, t->group, t->parts, t->nparts, deadline_ms, store_done_cb, slot,
					    &slot->h);
		if (rc < 0) {
			wait_free(w);
			return -1;
		}
		if (rc > 0) {
			w->n++;
			w->left++;
			LOG_D("txn_offsets_store", "transactional_id=%s group=%s partitions=%zu", txn_id, t->group,
			      t->nparts);
		} else {
			slot->h = NULL;
		}
	}
	if (!w->left) { /* no mirror gates these offsets: nothing to wait for */
		wait_free(w);
		return 0;
	}
	*out = w;
	return 1;
}

void proxy_txn_offsets_cancel(struct proxy_txn_offsets_wait *w)
{
	if (w)
		wait_free(w);
}
