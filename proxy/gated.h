/*
 * gated.h — where the gate meets the data path (included by proxy/datapath.h
 * after its types): hold.c holds gated acks=all Produce responses, fence.c
 * refuses Produce to topics fenced for failover, clamp.c cuts consumers'
 * Fetch / ListOffsets / OffsetForLeaderEpoch answers to the mirrored high
 * watermark. Loop thread.
 */
#ifndef SYNCGATE_PROXY_GATED_H
#define SYNCGATE_PROXY_GATED_H

#include "proxy/datapath.h"

/* hold.c: gated Produce responses */
/**
 * Decide whether a Produce response must be held; if so register it with the
 * gate and set the entry HELD (or READY when resolved at once), consuming
 * the frame from `in`; otherwise the caller forwards it. `iov` covers the
 * body after the `hdr_len`-byte response header. Returns 1 when taken, 0 when
 * not, -1 on a malformed response.
 */
int proxy_hold_produce(struct proxy_conn *c, struct proxy_entry *e, struct evbuffer *in,
		       size_t len, size_t hdr_len, const struct codec_iov *iov, int niov);

/* commit_hold.c: synchronous consumer-group commits */
struct proxy_commit;
/**
 * A client request was framed (header `h`, `len` body bytes at the head of
 * `in`, not consumed): for an OffsetCommit of a group some mirror lists in
 * `sync_groups`, the decoded request (to attach to its entry with
 * proxy_commit_attach); TopicIds it names that this sidecar does not know
 * are looked up ahead of it (an INTERNAL entry, so call before the
 * request's own entry is made). NULL: nothing to keep (counted when a
 * commit is not gated); (struct proxy_commit *)-1: out of memory (close).
 */
struct proxy_commit *proxy_commit_read(struct proxy_conn *c, struct evbuffer *in, size_t len,
				       const struct codec_request_header *h);
/** Free a request proxy_commit_read() kept that no entry took (NULL is fine). */
void proxy_commit_free(struct proxy_commit *pc);
/** Keep `pc` on entry `e` (owned; freed with the entry). */
void proxy_commit_attach(struct proxy_entry *e, struct proxy_commit *pc);
/**
 * The OffsetCommit response of an entry with a kept request: the partitions
 * the coordinator accepted go to the gate; held (HELD, 1: the frame is
 * consumed from `in`), or 0 when no mirror gates them (the caller forwards
 * it), -1 on a malformed response (close).
 */
int proxy_commit_hold(struct proxy_conn *c, struct proxy_entry *e, struct evbuffer *in, size_t len,
		      size_t hdr_len, const struct codec_iov *iov, int niov);

/* txn_hold.c: commit means mirrored (gate.transactions: commit | both) */
struct proxy_txn;
/**
 * A client request was framed (header `h`, `len` body bytes at the head of
 * `in`, not consumed): for an EndTxn(commit) while gate.transactions is
 * commit or both, the state its answer needs (attach it with
 * proxy_txn_attach); a DescribeTransactions of its transactional id is sent
 * ahead of it (an INTERNAL entry: call before the request's own entry is
 * made). NULL: nothing to hold (an abort, mode data, unreadable);
 * (struct proxy_txn *)-1: out of memory (close).
 */
struct proxy_txn *proxy_txn_read(struct proxy_conn *c, struct evbuffer *in, size_t len,
				 const struct codec_request_header *h);
/** Keep `pt` on entry `e` (owned; freed with the entry). */
void proxy_txn_attach(struct proxy_entry *e, struct proxy_txn *pt);
/**
 * The EndTxn response of an entry with a proxy_txn: a success answer of a
 * transaction with gated partitions is held (1, the frame consumed from
 * `in`) until the mirrors have its COMMIT markers or the hold times out;
 * 0: not held (the caller forwards it); -1 malformed or out of memory (close).
 */
int proxy_txn_hold(struct proxy_conn *c, struct proxy_entry *e, struct evbuffer *in, size_t len, size_t hdr_len,
		   const struct codec_iov *iov, int niov);
/**
 * A transactional batch of producer `producer_id` on a gated (topic,
 * partition) was answered success with last offset `last_offset`: the last
 * data record of its transaction there so far (what an `offsets: mm2`
 * mirror is waited for at the commit — MirrorMaker 2 copies no markers).
 * Learnt from this sidecar's own broker's Produce answers; bounded, the
 * oldest forgotten. Loop thread.
 */
void proxy_txn_note_data(int64_t producer_id, const char *topic, int32_t partition, int64_t last_offset);
/** The last data offset noted for (producer_id, topic, partition) into *last_offset; false: unknown. */
bool proxy_txn_last_data(int64_t producer_id, const char *topic, int32_t partition, int64_t *last_offset);
/** Add (topic, partition) to the list *parts of *n (topic copied) unless there, kept grouped by topic; false on ENOMEM. */
bool proxy_txn_parts_add(struct codec_txn_partition **parts, size_t *n, const char *topic, int32_t partition);
/** Free such a list. */
void proxy_txn_parts_free(struct codec_txn_partition *p, size_t n);
/** Remember the partitions of a held commit of `txn_id` (copied; the oldest of 256 goes). */
void proxy_txn_remember(const char *txn_id, const struct codec_txn_partition *parts, size_t n);
/** Forget them (the commit was answered success, or a new transaction began). */
void proxy_txn_forget(const char *txn_id);
/** The partitions remembered for `txn_id` (n of them, borrowed until the next call) or NULL. */
const struct codec_txn_partition *proxy_txn_remembered(const char *txn_id, size_t *n);
/** True when every mirror gating `topic` now uses `offsets: mm2` (and one does). */
bool proxy_txn_mm2_only(struct proxy_server *srv, const char *topic);
/** The answer of syncgate's own DescribeTransactions (INTERNAL entry `ie`); `niov` < 0: unreadable. */
void proxy_txn_describe_answer(struct proxy_conn *c, struct proxy_entry *ie, const struct codec_iov *iov, int niov);
/** The answer of syncgate's own ListOffsets of a held commit's partitions (INTERNAL entry `ie`). */
void proxy_txn_offsets_answer(struct proxy_conn *c, struct proxy_entry *ie, const struct codec_iov *iov, int niov);

/* txn_offsets.c: a transaction's group offsets, stored on the destinations before its commit is answered */
struct proxy_txn_offsets_wait;
/**
 * A TxnOffsetCommit request (v0–v6, `len` body bytes at the head of `in`):
 * with gate.transactions commit|both and its group in some mirror's
 * sync_groups, its offsets are kept for the transaction (true); false: not
 * kept (not such a group, data mode, unreadable — counted).
 */
bool proxy_txn_offsets_read(struct proxy_conn *c, struct evbuffer *in, size_t len,
			    const struct codec_request_header *h);
/**
 * Write the offsets kept for `txn_id` to every gating mirror's destination
 * group (mirror_gate_commit, by `deadline_ms`): 0 none to wait for; 1 held,
 * `cb(arg, worst outcome, detail)` follows once (never from inside this
 * call) and *out is the handle for _cancel; -1 out of memory. The offsets
 * stay kept (for a retry) until proxy_txn_offsets_drop.
 */
int proxy_txn_offsets_store(struct proxy_server *srv, const char *txn_id, int64_t deadline_ms, mirror_commit_cb cb,
			    void *arg, struct proxy_txn_offsets_wait **out);
/** Forget a store in flight: its `cb` is not called (NULL is fine). */
void proxy_txn_offsets_cancel(struct proxy_txn_offsets_wait *w);
/** Forget the offsets kept for `txn_id` (its commit was answered success, or it aborted). */
void proxy_txn_offsets_drop(const char *txn_id);

/* fence.c: the failover fence */
/**
 * A decoded Produce request (`len` body bytes at the head of `in`, header
 * `h`, `wire_version` as sent upstream) naming a topic fenced for failover
 * (mirror_gate_fenced_by) is refused here, never forwarded: 1 answered
 * (NOT_ENOUGH_REPLICAS on every partition; the frame is consumed), -1 close
 * the connection (acks=0: no response to refuse with), 0 not fenced.
 */
int proxy_fence_produce(struct proxy_conn *c, struct evbuffer *in, size_t len, const struct codec_request_header *h,
			int16_t wire_version, const struct codec_produce_request *req);
/* clamp.c: consumers see only mirrored records (invariant 1b) */
/**
 * A client request was framed (header `h`, `len` body bytes at the head of
 * `in`, not consumed): decide whether its response is clamped — Fetch with
 * ReplicaId < 0, ListOffsets and OffsetForLeaderEpoch of consumers, unless
 * consumers.clamp is `pass` or the client id is exempt — and keep what the
 * clamp needs in `e`. Returns 0, or -1 (out of memory; close).
 */
int proxy_clamp_request(struct proxy_conn *c, struct proxy_entry *e, struct evbuffer *in,
			size_t len, const struct codec_request_header *h);
/**
 * The response of an entry with a clamp: clamp it and make the entry READY
 * (1), or HELD (1) when a Fetch has no record left and MaxWaitMs has not
 * passed; 0 when nothing changes (the caller goes on: endpoints); -1 on a
 * malformed response (close: never forward records not judged).
 */
int proxy_clamp_response(struct proxy_conn *c, struct proxy_entry *e, struct evbuffer *in,
			 size_t len, size_t hdr_len);
/**
 * Whether the entry's Fetch response may be clamped as it streams (v12+,
 * decided with the request: the connection's last clamped response left
 * nothing out). Such a request's MaxBytes is not lowered.
 */
bool proxy_clamp_streams(const struct proxy_entry *e);
/**
 * A streamed clamped Fetch response reached partition `p` of topic `topic`
 * (name, or NULL and `topic_id`): returns whether it is clamped — gated:
 * then every batch is judged, whatever its HighWatermark says — with
 * *limit (HighWatermark/LastStableOffset at most) and *keep_below (batches
 * whose last offset is below are kept; -1 none) — codec_fetch_clamp_limit().
 */
bool proxy_clamp_stream_partition(struct proxy_conn *c, const char *topic, const uint8_t *topic_id,
				  const struct codec_fetch_stream_part *p, int64_t *limit,
				  int64_t *keep_below);
/**
 * The records of a clamped partition of a streamed Fetch response are
 * judged: its HighWatermark as the broker sent it, `records_end` one past
 * the last offset of its batches (-1 none), `keep_below` as
 * proxy_clamp_stream_partition() gave it. For the clamp distance metric.
 */
void proxy_clamp_stream_partition_end(struct proxy_conn *c, const char *topic, const uint8_t *topic_id,
				      int64_t broker_hw, int64_t records_end, int64_t keep_below);
/**
 * A streamed clamped Fetch response is through: `changed` whether anything
 * was rewritten, `records`/`bytes` left out of it (metrics; a response that
 * left records out makes the connection's next one buffered and holdable).
 */
void proxy_clamp_stream_done(struct proxy_conn *c, bool changed, int64_t records, int64_t bytes);

#endif
