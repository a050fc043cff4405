/*
 * pidmap.h — producer ids on a switched sidecar (private to libsgproxy and
 * its unit tests; included by datapath.h). After the switch a sidecar never
 * forwards a producer id its broker (the destination) did not issue
 * (docs/switchover.md "Producer state"): an idempotent batch is rewritten to
 * a producer id and epoch the sidecar asked its own broker for
 * (InitProducerId on the client's upstream connection, ahead of the
 * Produce); a transactional batch passes only under a producer id the
 * broker issued to that TransactionalId through this sidecar, else the
 * Produce is refused INVALID_PRODUCER_ID_MAPPING. pidmap.c: the data path;
 * pidmap_map.c: the maps. Loop thread.
 */
#ifndef SYNCGATE_PROXY_PIDMAP_H
#define SYNCGATE_PROXY_PIDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct proxy_server;
struct proxy_conn;
struct proxy_entry;
struct evbuffer;
struct codec_iov;
struct codec_request_header;
struct codec_produce_request;

/* Keys each of the server's two maps keeps (oldest evicted past it). */
#define PROXY_PIDMAP_CAP 65536
/* TransactionTimeoutMs of syncgate's own InitProducerId: what the Java
 * producer sends without a TransactionalId (the broker does not check it
 * then; tests/codec/golden/java/init_producer_id_req_v5.hex, captured). */
#define PROXY_PIDMAP_TXN_TIMEOUT_MS INT32_MAX
/* InitProducerId attempts for one waiting Produce, the backoff between them
 * doubling from PROXY_PIDMAP_BACKOFF_MS up to 1 s (about 15 s in all, well
 * inside a client's request.timeout.ms) */
#define PROXY_PIDMAP_ATTEMPTS 20
#define PROXY_PIDMAP_BACKOFF_MS 50

/** How one InitProducerId that syncgate sent its broker ended (the metric's `outcome`). */
enum proxy_pid_outcome {
	PROXY_PID_ISSUED,      /* a producer id and epoch: the waiting Produce goes on rewritten */
	PROXY_PID_RETRIED,     /* a retriable error code (the broker is loading its producer id
				* block: COORDINATOR_LOAD_IN_PROGRESS after a start, …): asked
				* again after a backoff, the Produce still waiting */
	PROXY_PID_ERROR,       /* another error code, or retried PROXY_PIDMAP_ATTEMPTS times: the
				* connection closes */
	PROXY_PID_MALFORMED,   /* the answer could not be read: the connection closes */
	PROXY_PID_CLOSED,      /* the connection closed before the answer came */
	PROXY_PID_OUTCOME_COUNT
};

/**
 * The server's producer-id state: (client, producer id, epoch) → the
 * destination-issued (producer id, epoch) its idempotent batches go out
 * under, and destination-issued producer id → the TransactionalId it was
 * issued to. Each bounded to `cap` keys, the oldest evicted (a later batch
 * of an evicted key gets a fresh id: a retry may then be appended twice,
 * never lost; an evicted transactional id is refused until its producer
 * initialises again). NULL on ENOMEM. Free with proxy_pidmap_free (NULL ok).
 */
struct proxy_pidmap *proxy_pidmap_new(size_t cap);
void proxy_pidmap_free(struct proxy_pidmap *m);

/**
 * Who sent a batch, as the remap key tells clients apart: a hash of the
 * request's ClientId (`len` bytes) and the peer's host (c->peer without its
 * port). A producer id alone does not name one producer after the switch:
 * a source-issued id may equal one the destination issued to another client
 * through this sidecar (both usually at epoch 0), and one destination id for
 * both would let one's batch be taken for the other's retry. A producer's
 * retries come from the same host with the same ClientId. Pure.
 */
uint64_t proxy_pidmap_client(const char *client_id, size_t len, const char *peer);
/**
 * Remap lookup: the destination producer id and epoch for `client`'s
 * (`pid`, `epoch`). True when known. Pure.
 */
bool proxy_pidmap_lookup(const struct proxy_pidmap *m, uint64_t client, int64_t pid, int16_t epoch,
			 int64_t *dest_pid, int16_t *dest_epoch);
/** Remember `client`'s (`pid`, `epoch`) → (`dest_pid`, `dest_epoch`), evicting the oldest key when full. */
void proxy_pidmap_learn(struct proxy_pidmap *m, uint64_t client, int64_t pid, int16_t epoch, int64_t dest_pid,
			int16_t dest_epoch);
/** Keys in the remap map (tests). */
size_t proxy_pidmap_size(const struct proxy_pidmap *m);
/**
 * What names one appended batch of a producer in the `appended` map: a
 * 64-bit hash (never 0) of its topic, partition and first and last
 * sequence. Pure.
 */
uint64_t proxy_pidmap_batch_key(const char *topic, int32_t partition, int32_t first_seq, int32_t last_seq);
/**
 * Remember that the source appended the batch `batch` (proxy_pidmap_batch_key,
 * sequences `first_seq`..`last_seq`) of producer (`pid`, `epoch`) at
 * `base_offset` (retried.c learns it from the broker's Produce answer).
 * Bounded like the other maps (the oldest batch forgotten); the first call
 * allocates it; out of memory: nothing is remembered.
 */
void proxy_pidmap_appended_learn(struct proxy_pidmap *m, int64_t pid, int16_t epoch, uint64_t batch,
				 int32_t first_seq, int32_t last_seq, int64_t base_offset);
/** Whether that batch is remembered (its sequences checked too); `*base_offset` then. Pure. */
bool proxy_pidmap_appended_find(const struct proxy_pidmap *m, int64_t pid, int16_t epoch, uint64_t batch,
				int32_t first_seq, int32_t last_seq, int64_t *base_offset);
/** Batches in the appended map (tests). */
size_t proxy_pidmap_appended_size(const struct proxy_pidmap *m);
/**
 * Remember that the broker appended partition `q` of a gated Produce (an
 * idempotent, non-transactional batch run of topic `topic`) at
 * `base_offset`, for retried.c (hold.c calls it with the broker's answer,
 * before the switch; the map is made at the first call). Loop thread.
 */
struct proxy_produce_part;
void proxy_pidmap_note_appended(struct proxy_conn *c, const struct proxy_produce_part *q, const char *topic,
				int64_t base_offset);
/* How long a switched sidecar waits for the state log to give back its
 * claim of a destination producer id before it uses its own (pidmap_claim.c) */
#define PROXY_PIDMAP_CLAIM_MS 5000
struct mirror_producer_claim;
/**
 * The destination id `pc` this sidecar's own InitProducerId got for a
 * client producer, on a switched sidecar with a state log: appended as a
 * claim; the connection's Produce keeps waiting (c->pid_wait) until the
 * log's first claim of the key is learnt (every sidecar keeps the first) or
 * PROXY_PIDMAP_CLAIM_MS pass (then its own id). True: claimed, waiting.
 * False: no state log, or it could not be appended: learn `pc` now.
 * Loop thread.
 */
bool proxy_pidmap_claim(struct proxy_conn *c, const struct mirror_producer_claim *pc);
/** The Produce waiting on `c` is handled again (the client framing loop, deferred). Loop thread. */
void proxy_pidmap_resume(struct proxy_conn *c);
/** Register the gate's hook for the PRODUCER_ID records of the state log (server.c). */
void proxy_pidmap_claims_register(struct proxy_server *srv);
/** Remember that the broker issued `pid` to the TransactionalId whose hash is `txn_tag`. */
void proxy_pidmap_issue(struct proxy_pidmap *m, int64_t pid, uint64_t txn_tag);
/** Whether `pid` was issued to the TransactionalId whose hash is `txn_tag` (the last one it was). Pure. */
bool proxy_pidmap_issued_to(const struct proxy_pidmap *m, int64_t pid, uint64_t txn_tag);

/**
 * A Produce on a switched sidecar (srv->switched), after the fence and
 * before anything is forwarded; `in` holds the whole frame (`len` body
 * bytes), `req` is its decoded request. Returns
 *   0 — go on: no producer id to rewrite, or every idempotent batch now
 *       carries its destination-issued id and epoch (CRC-32C recomputed in
 *       place); transactional batches are of an id the broker issued;
 *   1 — the frame stays in `in` unconsumed: an InitProducerId went
 *       upstream ahead of it (INTERNAL entry) and c->pid_wait stops the
 *       connection's client framing until the answer
 *       (proxy_pidmap_answer), which handles the frame anew;
 *   2 — answered without forwarding (a transactional batch of an id not
 *       issued here: INVALID_PRODUCER_ID_MAPPING on every partition), the
 *       frame consumed;
 *  -1 — close the connection (a batch that is not a valid RecordBatch v2, a
 *       refused acks=0 request, ENOMEM).
 * Not switched: 0 at once, nothing looked at.
 */
int proxy_pidmap_produce(struct proxy_conn *c, struct evbuffer *in, size_t len,
			 const struct codec_request_header *h, int16_t wire_version,
			 const struct codec_produce_request *req);

/**
 * The broker's answer to syncgate's own InitProducerId (an INTERNAL entry
 * of `c`; `iov` its body): learn the mapping and let the waiting Produce be
 * handled again; on an error or an unreadable answer the connection closes
 * (the Produce is never forwarded with the client's id) and a WARN says why.
 */
void proxy_pidmap_answer(struct proxy_conn *c, struct proxy_entry *e, const struct codec_iov *iov, int niov);

/**
 * A client's own InitProducerId or EndTxn request (`in`: the whole frame,
 * `len` body bytes) on a switched sidecar: when it names a TransactionalId
 * (EndTxn: v5+, whose answer may carry a new producer id), `e` keeps it so
 * its response is read (proxy_pidmap_issued). 0, or -1 on ENOMEM.
 */
int proxy_pidmap_txn_request(struct proxy_conn *c, struct proxy_entry *e, struct evbuffer *in, size_t len,
			     const struct codec_request_header *h);
/** Whether the response to `e` is read for a producer id issued to a TransactionalId. */
bool proxy_pidmap_reads_response(const struct proxy_entry *e);
/**
 * The response to a request kept by proxy_pidmap_txn_request (`iov` its
 * body): the producer id it issued, if any, is recorded for the
 * TransactionalId (the last one it was issued to). It passes unchanged.
 */
void proxy_pidmap_issued(struct proxy_conn *c, struct proxy_entry *e, const struct codec_iov *iov, int niov);

/** A TransactionalId's hash: the issued map keeps these 8 bytes, not the string. */
uint64_t proxy_pidmap_txn_tag(const char *transactional_id);
/** The server's producer-id maps, made on first use (NULL on ENOMEM). */
struct proxy_pidmap *proxy_pidmap_of(struct proxy_server *srv);

/**
 * A client's EndTxn whose transaction the served cluster never saw
 * (pidmap_txn.c): what syncgate's own InitProducerId for its
 * TransactionalId gave, kept on the connection until the EndTxn, which
 * waits unread meanwhile, is handled again and answered with it.
 */
struct proxy_txn_abort {
	bool ready;           /* the answer came; the EndTxn of `tag` is answered with it */
	uint64_t tag;         /* proxy_pidmap_txn_tag of the TransactionalId */
	int16_t error_code;   /* 0, or the broker's error (answered as it is) */
	int64_t producer_id;  /* issued to the TransactionalId, -1 on an error */
	int16_t producer_epoch;
};

/**
 * A client's EndTxn (key 26; `in` the whole frame, `len` body bytes) on a
 * switched sidecar, before anything else handles it. A transaction whose
 * producer id the served cluster did not issue to its TransactionalId
 * through this sidecar was opened on the source, and no broker here can
 * end it (the destination's coordinator answers INVALID_PRODUCER_ID_MAPPING,
 * fatal to the Java producer):
 *   commit, v4+ — answered TRANSACTION_ABORTABLE (nothing of it after the
 *       switch was stored: its batches were refused), so the application
 *       aborts;
 *   abort, v5+ (transaction version 2, whose EndTxn answer gives the
 *       producer id and epoch of the next transaction) — syncgate asks the
 *       broker for a producer id for the TransactionalId (InitProducerId on
 *       the client's connection, the coordinator's) and answers the abort
 *       with success and that id: the producer goes on under an id this
 *       cluster issued, with no new InitProducerId of its own;
 *   abort, v4 (transaction version 1) — answered success; a client that
 *       must bump its epoch sends InitProducerId itself, and the broker,
 *       with no state for the TransactionalId, issues a new id;
 *   v0–v3 — passed to the broker unchanged.
 * Returns 0 (forward it as usual), 1 (the frame stays in `in` unconsumed,
 * c->pid_wait set, until proxy_pidmap_end_txn_answer), 2 (answered here,
 * the frame consumed), -1 (close: ENOMEM).
 */
int proxy_pidmap_end_txn(struct proxy_conn *c, struct evbuffer *in, size_t len, const struct codec_request_header *h);
/**
 * A client's AddPartitionsToTxn (key 24, v0–v3), AddOffsetsToTxn (key 25,
 * v0–v4) or TxnOffsetCommit (key 28, v4+) on a switched sidecar
 * (pidmap_txn.c; `in` the whole frame, `len` body bytes): when its producer
 * id was not issued to its TransactionalId through this sidecar, answered
 * here and not forwarded — AddPartitionsToTxn (every partition) and
 * AddOffsetsToTxn UNKNOWN_PRODUCER_ID (abortable, with a client epoch bump,
 * since KIP-360), TxnOffsetCommit TRANSACTION_ABORTABLE on every partition. Returns 0 (forward it),
 * 2 (answered, the frame consumed), -1 (close: ENOMEM).
 */
int proxy_pidmap_source_txn(struct proxy_conn *c, struct evbuffer *in, size_t len,
			     const struct codec_request_header *h);
/** Whether INTERNAL entry `e` is syncgate's InitProducerId for an EndTxn (not for a Produce). */
bool proxy_pidmap_end_txn_owns(const struct proxy_entry *e);
/**
 * The broker's answer to that InitProducerId (`iov` its body, niov < 0:
 * unreadable): kept in c->txn_abort, the issued id recorded for the
 * TransactionalId, and the waiting EndTxn handled again.
 */
void proxy_pidmap_end_txn_answer(struct proxy_conn *c, struct proxy_entry *e, const struct codec_iov *iov,
				 int niov);

/**
 * The InitProducerId version syncgate sends on `c`: the highest of v0–v5
 * the broker's ApiVersions answer on this connection allowed
 * (c->init_pid_max, learnt by response.c), v2 before any was seen.
 */
int16_t proxy_pidmap_version(const struct proxy_conn *c);

#endif
