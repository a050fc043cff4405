/*
 * txn_hold.c — "commit means mirrored" (gate.transactions: commit | both;
 * docs/operating.md "Transactions"). The answer to an EndTxn(commit) leaves
 * syncgate only once every gating mirror has, on every gated partition of
 * the transaction, everything up to and including its COMMIT marker.
 *
 * Everything is learnt from this sidecar's own broker — the transaction's
 * coordinator, since EndTxn goes there — with syncgate's own requests on the
 * client's upstream connection (INTERNAL FIFO entries, internal.c):
 *  1. DescribeTransactions, sent ahead of the EndTxn: the broker serves a
 *     connection's requests one at a time, so it answers with the state
 *     right before the EndTxn — Ongoing, with every partition the
 *     transaction has (TV1: AddPartitionsToTxn; TV2: added by the Produce
 *     verification; both before the producer may send EndTxn, which follows
 *     its acknowledged sends). Once the commit completes, the coordinator
 *     forgets the list: a retry after a timeout answer is asked again but the
 *     list is also remembered here (by transactional id, until answered
 *     success).
 *  2. After the broker's success answer (held): DescribeTransactions again,
 *     every TXN_POLL_MS, until the state is no longer PrepareCommit — the
 *     coordinator leaves it only once every partition leader appended the
 *     COMMIT marker with acks=all, so each marker is below its partition's
 *     high watermark from then on.
 *  3. ListOffsets (latest, read_uncommitted: the high watermark) of those
 *     partitions; HW − 1 ≥ the marker's offset is the last offset waited for
 *     (mirror_gate_wait, as a held Produce waits) — for a topic only `offsets:
 *     mm2` mirrors gate, the transaction's last data record (txn_data.c).
 * A partition this broker does not lead (ListOffsets answers
 * NOT_LEADER_OR_FOLLOWER) is asked of its leader by the gate's source client
 * (mirror_gate_source_hw, also after the markers); what cannot be learnt
 * holds the commit to its deadline (fail closed). Then the transaction's
 * offsets of sync_groups groups, if this sidecar saw them (txn_offsets.c),
 * are stored on the destinations before the answer. At the deadline it is answered
 * gate.error_codes.txn_commit_timeout (default CONCURRENT_TRANSACTIONS, which
 * clients retry; the commit is decided and the retry is answered from the
 * coordinator's state — and held again). Never answered success before the
 * mirrors have it. Aborts are never held. Loop thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/datapath.h"

#define TXN_POLL_MS 10        /* between DescribeTransactions while PrepareCommit */
#define TXN_LOG_PARTS 8       /* partitions named in a log line */
#define ASK_SOURCE (-3)       /* a part's last_offset until the source client answers for it */

enum txn_phase {
	TXN_ASKED,    /* DescribeTransactions sent ahead of the EndTxn; no answer yet */
	TXN_DESCRIBED,/* the partition list is known (or unknowable: `unknown`) */
	TXN_POLL,     /* the broker answered success: waiting for the markers */
	TXN_OFFSETS,  /* ListOffsets in flight */
	TXN_SOURCE_HW,/* the source client asked for the partitions this broker does not lead */
	TXN_WAIT,     /* on the gate */
};

/* An EndTxn(commit) whose answer may be held (struct proxy_entry.txn on its entry; INTERNAL entries of
 * its own requests point at it too, borrowed, cleared when it is freed). */
struct proxy_txn {
	char *txn_id;
	int64_t producer_id;
	enum txn_phase phase;
	bool unknown;                  /* the partitions could not be learnt: held to the deadline */
	bool want_send;                /* a request to send on the next timer tick */
	struct codec_txn_partition *parts; /* gated partitions, topics owned */
	size_t nparts;
	struct mirror_wait_part *wparts;
	struct mirror_wait *wait;
	struct mirror_source_hw_req *hw_req;
	struct proxy_txn_offsets_wait *offsets; /* the group offsets being stored (txn_offsets.c) */
	bool offsets_asked;            /* the markers are mirrored: the offsets went to the destinations */
	size_t *asked;                 /* the parts hw_req asks for */
	struct event *timer;           /* polls and the deadline */
	int64_t held_ms, deadline_ms;
	struct proxy_conn *c;
	struct proxy_entry *e;
};

static struct metric *m_held, *m_latency, *m_timeouts, *m_not_held[2], *m_passed_unknown;
static const double latency_buckets[] = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30};

static void metrics_init(void)
{
	static const struct metric_def defs[] = {
		{ &m_held, METRIC_GAUGE, "syncgate_txn_commits_held",
		  "EndTxn(commit) answers held now until the mirrors have the transaction's COMMIT markers." },
		{ &m_timeouts, METRIC_COUNTER, "syncgate_txn_commit_timeouts_total",
		  "Held EndTxn(commit) answers that reached gate.max_txn_commit_hold_ms and were answered "
		  "gate.error_codes.txn_commit_timeout (the client retries the commit)." },
		{ &m_passed_unknown, METRIC_COUNTER, "syncgate_txn_commit_partitions_unknown_total",
		  "Held EndTxn(commit) answers whose partitions or marker offsets syncgate could not learn from its "
		  "own broker (held to the deadline: fail closed)." },
	};
	static const char *const why[2] = { "abort", "not_gated" };
	if (m_held)
		return;
	METRIC_DEFS_GET(defs);
	m_latency = metric_get(METRIC_HISTOGRAM, "syncgate_txn_commit_hold_seconds",
			       "Time an EndTxn(commit) answer was held for the mirrors (the latency it added), "
			       "seconds; answered success or the timeout code.", "", latency_buckets,
			       sizeof(latency_buckets) / sizeof(latency_buckets[0]));
	metric_family_get(METRIC_COUNTER, "syncgate_txn_end_not_held_total",
			  "EndTxn requests seen in gate.transactions commit or both that were not held: aborts, and "
			  "commits of transactions with no gated partition.", NULL, "reason", why, 2, m_not_held);
}

/* The INTERNAL entries still pointing at pt forget it (their answers are dropped). */
static void detach_internal(struct proxy_txn *pt)
{
	struct proxy_entry *e;
	TAILQ_FOREACH(e, &pt->c->fifo, link)
		if (e->kind == PROXY_ENTRY_INTERNAL && e->txn == pt)
			e->txn = NULL;
}

static void txn_free(struct proxy_txn *pt)
{
	if (!pt)
		return;
	if (pt->c)
		detach_internal(pt);
	if (pt->wait)
		mirror_wait_cancel(pt->wait);
	mirror_source_hw_cancel(pt->hw_req);
	proxy_txn_offsets_cancel(pt->offsets);
	free(pt->asked);
	if (pt->wparts) {
		mirror_wait_parts_clear(pt->wparts, pt->nparts);
		free(pt->wparts);
	}
	if (pt->timer)
		event_free(pt->timer);
	proxy_txn_parts_free(pt->parts, pt->nparts);
	free(pt->txn_id);
	free(pt);
}

static void held_end(struct proxy_txn *pt)
{
	struct proxy_entry *e = pt->e;
	if (!e || !e->held_bytes)
		return;
	pt->c->held_bytes -= e->held_bytes;
	pt->c->srv->held_bytes -= e->held_bytes;
	e->held_bytes = 0;
	metric_add(m_held, -1);
	metric_observe(m_latency, (double)(mirror_now_ms() - pt->held_ms) / 1000.0);
}

/* e->release: the entry is freed (answered, or its connection closes). */
static void txn_release(struct proxy_conn *c, struct proxy_entry *e)
{
	(void)c;
	if (e->txn) {
		held_end(e->txn);
		txn_free(e->txn);
	}
	e->txn = NULL;
	free(e->raw);
	e->raw = NULL;
}

/* Queue syncgate's own request for pt on its connection (an INTERNAL entry pointing at pt). */
static int send_internal(struct proxy_txn *pt, struct codec_buf *b, int16_t key, int16_t version)
{
	if (proxy_internal_send(pt->c, b->data, b->len, key, version) < 0)
		return -1;
	TAILQ_LAST(&pt->c->fifo, proxy_fifo)->txn = pt;
	return 0;
}

static int send_describe(struct proxy_txn *pt)
{
	struct codec_buf b;
	codec_buf_init(&b, 64 + strlen(pt->txn_id));
	int rc = codec_describe_transactions_request(pt->txn_id, -1, "syncgate", &b) < 0 ||
		 send_internal(pt, &b, CODEC_API_DESCRIBE_TRANSACTIONS, CODEC_DESCRIBE_TRANSACTIONS_VERSION) < 0
		 ? -1 : 0;
	codec_buf_free(&b);
	return rc;
}

struct proxy_txn *proxy_txn_read(struct proxy_conn *c, struct evbuffer *in, size_t len,
				 const struct codec_request_header *h)
{
	const struct conf *cf = c->srv->conf;
	if (h->api_key != CODEC_API_END_TXN || cf->gate_transactions == CONF_TXN_DATA || c->srv->switched ||
	    cf->nmirrors == 0)
		return NULL;
	metrics_init();
	struct codec_iov iov[PROXY_MAX_IOV];
	struct codec_end_txn_request req;
	int niov = proxy_buf_iov(in, 4 + h->len, len - h->len, iov, PROXY_MAX_IOV);
	if (niov < 0 || codec_end_txn_request_decode(iov, niov, h->api_version, &req) != CODEC_OK ||
	    !req.transactional_id) {
		codec_end_txn_request_free(&req);
		return NULL; /* the broker answers it */
	}
	if (!req.committed) {
		metric_add(m_not_held[0], 1);
		if (req.transactional_id)
			proxy_txn_offsets_drop(req.transactional_id);
		codec_end_txn_request_free(&req);
		return NULL;
	}
	struct proxy_txn *pt = calloc(1, sizeof(*pt));
	if (!pt) {
		codec_end_txn_request_free(&req);
		return (struct proxy_txn *)-1;
	}
	pt->txn_id = req.transactional_id;
	req.transactional_id = NULL;
	pt->producer_id = req.producer_id;
	pt->c = c;
	codec_end_txn_request_free(&req);
	/* asked before the EndTxn is forwarded: answered with the state right before it */
	if (send_describe(pt) < 0) {
		txn_free(pt);
		return (struct proxy_txn *)-1;
	}
	return pt;
}

void proxy_txn_attach(struct proxy_entry *e, struct proxy_txn *pt)
{
	e->txn = pt;
	pt->e = e;
	e->release = txn_release;
}

/* The list of partitions still waiting, for a log line. */
static void waiting_str(const struct proxy_txn *pt, char *out, size_t n)
{
	size_t k = 0, shown = 0, left = 0;
	out[0] = '\0';
	for (size_t i = 0; i < pt->nparts; i++) {
		if (pt->wparts && pt->wparts[i].outcome == MIRROR_SATISFIED)
			continue;
		if (shown++ >= TXN_LOG_PARTS) {
			left++;
			continue;
		}
		int w = snprintf(out + k, n - k, "%s%s-%d", k ? "," : "", pt->parts[i].topic, pt->parts[i].partition);
		if (w < 0 || (size_t)w >= n - k)
			break;
		k += (size_t)w;
	}
	if (left && k < n)
		snprintf(out + k, n - k, ",+%zu", left);
}

static void answer(struct proxy_txn *pt, bool ok);

static void offsets_stored_cb(void *arg, enum mirror_commit_outcome outcome, const char *detail)
{
	struct proxy_txn *pt = arg;
	pt->offsets = NULL;
	if (outcome != MIRROR_COMMIT_STORED)
		LOG_W("txn_commit_offsets_not_stored", "conn=%llu transactional_id=%s outcome=%s detail=\"%s\"",
		      (unsigned long long)pt->c->id, pt->txn_id, mirror_commit_outcome_str(outcome), detail);
	answer(pt, outcome == MIRROR_COMMIT_STORED);
}

/* The kept answer becomes READY: as the broker sent it, or with the timeout code; success only once
 * the transaction's group offsets (if any) are stored on the destinations too. */
static void answer(struct proxy_txn *pt, bool ok)
{
	struct proxy_conn *c = pt->c;
	struct proxy_entry *e = pt->e;
	if (pt->wait) {
		mirror_wait_cancel(pt->wait);
		pt->wait = NULL;
	}
	event_del(pt->timer);
	if (ok && !pt->offsets_asked) {
		pt->offsets_asked = true;
		int rc = proxy_txn_offsets_store(c->srv, pt->txn_id, pt->deadline_ms, offsets_stored_cb, pt,
						 &pt->offsets);
		if (rc > 0)
			return; /* offsets_stored_cb answers */
		ok = rc == 0;
	}
	uint8_t *body = e->raw + e->hdr_len;
	size_t blen = e->raw_len - e->hdr_len;
	char waiting[512];
	waiting_str(pt, waiting, sizeof(waiting));
	if (ok) {
		proxy_txn_forget(pt->txn_id);
		proxy_txn_offsets_drop(pt->txn_id);
		LOG_D("txn_commit_released", "conn=%llu transactional_id=%s partitions=%zu held_ms=%lld",
		      (unsigned long long)c->id, pt->txn_id, pt->nparts, (long long)(mirror_now_ms() - pt->held_ms));
	} else {
		/* ThrottleTimeMs (int32), then ErrorCode */
		(void)codec_put_i16_at(body, blen, 4, c->srv->conf->code_txn_commit_timeout);
		metric_add(m_timeouts, 1);
		LOG_W("txn_commit_timeout", "conn=%llu transactional_id=%s code=%d waiting=%s unknown=%s held_ms=%lld "
		      "reason=\"the mirrors do not have the transaction's %s yet; the commit is decided on the source "
		      "and the client retries it\"", (unsigned long long)c->id, pt->txn_id,
		      c->srv->conf->code_txn_commit_timeout, waiting[0] ? waiting : pt->offsets_asked ? "offsets" : "-",
		      pt->unknown ? "yes" : "no", (long long)(mirror_now_ms() - pt->held_ms),
		      pt->offsets_asked ? "group offsets" : "COMMIT markers");
	}
	held_end(pt);
	struct evbuffer *out = evbuffer_new();
	if (!out) {
		c->ops->close(c, PROXY_CLOSE_HELD_PRODUCE_UNENCODABLE);
		return;
	}
	uint32_t len = e->raw_len;
	uint8_t size[4] = { (uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8), (uint8_t)len };
	evbuffer_add(out, size, 4);
	evbuffer_add(out, e->raw, e->raw_len);
	e->out = out;
	free(e->raw);
	e->raw = NULL;
	proxy_entry_set_state(c, e, PROXY_ENTRY_READY);
	proxy_fifo_flush(c);
	c->srv->resume_paused(c->srv);
}

static void arm(struct proxy_txn *pt, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	evtimer_add(pt->timer, &tv);
}

static int send_offsets(struct proxy_txn *pt)
{
	struct codec_buf b;
	size_t cap = 64;
	for (size_t i = 0; i < pt->nparts; i++)
		cap += 32 + strlen(pt->parts[i].topic); /* a topic's name at most once per partition */
	codec_buf_init(&b, cap);
	int rc = codec_list_offsets_latest_request(pt->parts, pt->nparts, 0, -1, "syncgate", &b) < 0 ||
		 send_internal(pt, &b, CODEC_API_LIST_OFFSETS, CODEC_TXN_LIST_OFFSETS_VERSION) < 0
		 ? -1 : 0;
	codec_buf_free(&b);
	return rc;
}

/* Polls (a request queued for when the connection can take one) and the deadline. */
static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_txn *pt = arg;
	struct proxy_conn *c = pt->c;
	(void)fd;
	(void)what;
	int64_t now = mirror_now_ms();
	if (now >= pt->deadline_ms) {
		answer(pt, false);
		return;
	}
	int64_t next = pt->deadline_ms - now;
	if (pt->want_send) {
		/* never in the middle of a request streaming upstream */
		if ((c->state == PROXY_CONN_OPEN || c->state == PROXY_CONN_HALF_CLOSED) && !c->sasl_raw &&
		    c->from_client.state == PROXY_DIR_FRAME) {
			int rc = pt->phase == TXN_POLL ? send_describe(pt) : send_offsets(pt);
			if (rc < 0) {
				c->ops->close(c, PROXY_CLOSE_HELD_PRODUCE_UNENCODABLE);
				return;
			}
			pt->want_send = false;
		} else if (next > 2) {
			next = 2;
		}
	}
	arm(pt, (int)next);
}

static void ask_soon(struct proxy_txn *pt, int ms)
{
	pt->want_send = true;
	arm(pt, ms);
}

void proxy_txn_describe_answer(struct proxy_conn *c, struct proxy_entry *ie, const struct codec_iov *iov, int niov)
{
	struct proxy_txn *pt = ie->txn;
	if (!pt)
		return;
	struct codec_describe_transactions_response r;
	enum codec_err err = niov < 0 ? CODEC_ERR_BAD_MSG : codec_describe_transactions_response_decode(iov, niov, &r);
	const struct codec_txn_state *s = err == CODEC_OK && r.nstates == 1 && r.states[0].error_code == 0 &&
					  r.states[0].state ? &r.states[0] : NULL;
	if (pt->phase == TXN_ASKED) {
		pt->phase = TXN_DESCRIBED;
		if (!s) {
			pt->unknown = true;
			LOG_W("txn_commit_partitions_unknown", "conn=%llu transactional_id=%s error=%d reason=\"the "
			      "coordinator's DescribeTransactions answer gave no state; a successful commit is held to "
			      "gate.max_txn_commit_hold_ms\"", (unsigned long long)c->id, pt->txn_id,
			      err != CODEC_OK ? -2 : r.nstates ? r.states[0].error_code : -3);
		}
		for (size_t t = 0; s && t < s->ntopics; t++)
			for (size_t p = 0; s->topics[t].name && p < s->topics[t].partitions.n; p++)
				if (mirror_gate_is_gated(c->srv->gate, s->topics[t].name) &&
				    !proxy_txn_parts_add(&pt->parts, &pt->nparts, s->topics[t].name,
							 s->topics[t].partitions.v[p]))
					pt->unknown = true;
		/* Ongoing: the first EndTxn of this transaction (a commit remembered from before is
		 * complete: the producer began another). Otherwise a retry of a commit decided already
		 * (its first EndTxn held, answered the timeout code, or lost with its connection): once
		 * complete the coordinator has forgotten the partitions, so they come from what this
		 * sidecar remembered when it held the first one — and without that, they are unknown. */
		size_t nm = 0;
		const struct codec_txn_partition *m = proxy_txn_remembered(pt->txn_id, &nm);
		if (s && !strcmp(s->state, "Ongoing")) {
			proxy_txn_forget(pt->txn_id);
		} else if (m) {
			for (size_t i = 0; i < nm; i++)
				if (!proxy_txn_parts_add(&pt->parts, &pt->nparts, m[i].topic, m[i].partition))
					pt->unknown = true;
		} else if (s && !pt->unknown) {
			pt->unknown = true;
			LOG_W("txn_commit_partitions_unknown", "conn=%llu transactional_id=%s state=%s reason=\"a retried "
			      "commit this sidecar did not hold first: the coordinator no longer lists its partitions; "
			      "a successful answer is held to gate.max_txn_commit_hold_ms and answered the timeout code "
			      "(fail closed)\"", (unsigned long long)c->id, pt->txn_id, s->state);
		}
	} else if (pt->phase == TXN_POLL) {
		if (s && strcmp(s->state, "PrepareCommit") != 0) {
			pt->phase = TXN_OFFSETS; /* the markers are written: ask the offsets */
			ask_soon(pt, 0);
		} else {
			ask_soon(pt, TXN_POLL_MS); /* still preparing (or not answered): ask again */
		}
	}
	codec_describe_transactions_response_free(&r);
}

static void wait_done_cb(void *arg, struct mirror_wait_part *parts, size_t nparts)
{
	struct proxy_txn *pt = arg;
	pt->wait = NULL;
	bool ok = !pt->unknown;
	for (size_t i = 0; i < nparts; i++)
		ok = ok && parts[i].outcome == MIRROR_SATISFIED;
	if (ok || !pt->unknown)
		answer(pt, ok); /* a part that failed (ISR short, gate deadline) answers the timeout code now */
	/* unknown partitions: the deadline timer answers */
}

static void offset_cb(void *arg, const char *topic, int32_t partition, int16_t error, int64_t offset)
{
	struct proxy_txn *pt = arg;
	for (size_t i = 0; i < pt->nparts; i++) {
		struct mirror_wait_part *wp = &pt->wparts[i];
		if (pt->parts[i].partition != partition || strcmp(pt->parts[i].topic, topic))
			continue;
		int64_t data;
		if (error == CODEC_ERROR_NONE && offset >= 0 && proxy_txn_mm2_only(pt->c->srv, topic)) {
			/* MirrorMaker 2 copies no markers: its offset-syncs reach the last data record */
			if (proxy_txn_last_data(pt->producer_id, topic, partition, &data) && data < offset) {
				wp->last_offset = data;
				wp->outcome = MIRROR_PENDING;
			}
		} else if (error == CODEC_ERROR_NONE && offset >= 0) {
			wp->last_offset = offset - 1; /* the HW is past the marker */
			wp->outcome = offset > 0 ? MIRROR_PENDING : MIRROR_SATISFIED;
		}
		if (error != CODEC_ERROR_NONE && !proxy_txn_mm2_only(pt->c->srv, topic))
			wp->last_offset = ASK_SOURCE; /* another broker leads it: the source client asks it */
		else if (error != CODEC_ERROR_NONE)
			LOG_W("txn_commit_partition_not_learnt", "conn=%llu transactional_id=%s topic=%s partition=%d "
			      "error=%d reason=\"this sidecar's broker did not answer the partition's high watermark "
			      "(it leads it only when error=0); the commit is held to its deadline\"",
			      (unsigned long long)pt->c->id, pt->txn_id, topic, partition, error);
	}
}

/* Every part learnt (or not: `unknown`) goes to the gate. */
static void start_wait(struct proxy_txn *pt)
{
	for (size_t i = 0; i < pt->nparts; i++)
		if (pt->wparts[i].outcome == MIRROR_TIMEOUT) {
			pt->unknown = true;
			pt->wparts[i].outcome = MIRROR_SATISFIED; /* not waited for: `unknown` holds the answer */
			pt->wparts[i].last_offset = -2;
		}
	if (pt->unknown)
		metric_add(m_passed_unknown, 1);
	pt->phase = TXN_WAIT;
	pt->wait = mirror_gate_wait(pt->c->srv->gate, pt->wparts, pt->nparts, pt->deadline_ms, wait_done_cb, pt);
	if (!pt->wait)
		wait_done_cb(pt, pt->wparts, pt->nparts);
}

static void source_hw_cb(void *arg, const int64_t *hw, size_t n)
{
	struct proxy_txn *pt = arg;
	pt->hw_req = NULL;
	for (size_t k = 0; k < n; k++) {
		struct mirror_wait_part *wp = &pt->wparts[pt->asked[k]];
		if (hw[k] >= 0) {
			wp->last_offset = hw[k] - 1; /* sampled after the markers were written: past them */
			wp->outcome = hw[k] > 0 ? MIRROR_PENDING : MIRROR_SATISFIED;
		} else {
			LOG_W("txn_commit_partition_not_learnt", "conn=%llu transactional_id=%s topic=%s partition=%d "
			      "reason=\"the source client could not read the partition's high watermark from its "
			      "leader; the commit is held to its deadline\"", (unsigned long long)pt->c->id, pt->txn_id,
			      wp->topic, wp->partition);
		}
	}
	start_wait(pt);
}

void proxy_txn_offsets_answer(struct proxy_conn *c, struct proxy_entry *ie, const struct codec_iov *iov, int niov)
{
	struct proxy_txn *pt = ie->txn;
	if (!pt || pt->phase != TXN_OFFSETS)
		return;
	/* every part unknown (TIMEOUT) until the answer names it */
	for (size_t i = 0; i < pt->nparts; i++)
		pt->wparts[i] = (struct mirror_wait_part){ pt->parts[i].topic, -1, pt->parts[i].partition, true,
							  MIRROR_TIMEOUT, NULL };
	if (niov < 0 || codec_list_offsets_response_each(iov, niov, offset_cb, pt) != CODEC_OK)
		pt->unknown = true;
	/* partitions led by other brokers: asked of their leaders by the source client */
	size_t n = 0;
	const char **topics = calloc(pt->nparts, sizeof(*topics));
	int32_t *partitions = calloc(pt->nparts, sizeof(*partitions));
	pt->asked = calloc(pt->nparts, sizeof(*pt->asked));
	for (size_t i = 0; topics && partitions && pt->asked && i < pt->nparts; i++)
		if (pt->wparts[i].outcome == MIRROR_TIMEOUT && pt->wparts[i].last_offset == ASK_SOURCE) {
			topics[n] = pt->parts[i].topic;
			partitions[n] = pt->parts[i].partition;
			pt->asked[n++] = i;
		}
	if (n)
		pt->hw_req = mirror_gate_source_hw(c->srv->gate, topics, partitions, n, source_hw_cb, pt);
	free(topics);
	free(partitions);
	if (pt->hw_req) {
		pt->phase = TXN_SOURCE_HW;
		LOG_D("txn_commit_source_hw", "conn=%llu transactional_id=%s partitions=%zu reason=\"led by other "
		      "brokers: asked of their leaders\"", (unsigned long long)c->id, pt->txn_id, n);
		return;
	}
	start_wait(pt);
}

int proxy_txn_hold(struct proxy_conn *c, struct proxy_entry *e, struct evbuffer *in, size_t len, size_t hdr_len,
		   const struct codec_iov *iov, int niov)
{
	struct proxy_txn *pt = e->txn;
	struct codec_end_txn_response resp;
	if (codec_end_txn_response_decode(iov, niov, e->api_version, &resp) != CODEC_OK) {
		codec_end_txn_response_free(&resp);
		return -1;
	}
	int16_t error = resp.error_code;
	codec_end_txn_response_free(&resp);
	if (error != CODEC_ERROR_NONE)
		return 0; /* the broker's error passes unchanged */
	if (pt->phase != TXN_DESCRIBED) /* the describe answer always comes first (same connection) */
		pt->unknown = true;
	if (pt->nparts == 0 && !pt->unknown) {
		metric_add(m_not_held[1], 1);
		proxy_txn_forget(pt->txn_id);
		proxy_txn_offsets_drop(pt->txn_id); /* nothing gated: its offsets are not held either */
		return 0;
	}
	if (pt->unknown)
		metric_add(m_passed_unknown, 1);
	pt->wparts = calloc(pt->nparts ? pt->nparts : 1, sizeof(*pt->wparts));
	pt->timer = evtimer_new(c->srv->base, timer_cb, pt);
	if (!(e->raw = malloc(len)) || !pt->wparts || !pt->timer)
		return -1;
	evbuffer_drain(in, 4);
	evbuffer_remove(in, e->raw, len);
	e->raw_len = (uint32_t)len;
	e->hdr_len = (uint32_t)hdr_len;
	e->conn = c;
	e->held_bytes = len + 4 + sizeof(*e) + sizeof(*pt) + pt->nparts * (sizeof(*pt->parts) + sizeof(*pt->wparts));
	c->held_bytes += e->held_bytes;
	c->srv->held_bytes += e->held_bytes;
	metric_add(m_held, 1);
	pt->held_ms = mirror_now_ms();
	pt->deadline_ms = e->arrival_ms + c->srv->conf->gate_max_txn_commit_hold_ms;
	proxy_entry_set_state(c, e, PROXY_ENTRY_HELD);
	pt->phase = TXN_POLL;
	if (!pt->unknown)
		proxy_txn_remember(pt->txn_id, pt->parts, pt->nparts); /* a retry (another connection, a timeout answer) waits for the same partitions */
	if (pt->nparts)
		ask_soon(pt, 0);
	else
		arm(pt, (int)(pt->deadline_ms > pt->held_ms ? pt->deadline_ms - pt->held_ms : 0));
	LOG_D("txn_commit_held", "conn=%llu transactional_id=%s partitions=%zu", (unsigned long long)c->id,
	      pt->txn_id, pt->nparts);
	return 1;
}
