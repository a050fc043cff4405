/*
 * tests/proxy/pidmap_frames.h — the frames the pidmap tests exchange
 * (tests/proxy/test_pidmap.c): Produce v9 requests with one valid
 * RecordBatch v2, the broker's answers, a client's InitProducerId and EndTxn.
 */
#ifndef SYNCGATE_TESTS_PROXY_PIDMAP_FRAMES_H
#define SYNCGATE_TESTS_PROXY_PIDMAP_FRAMES_H

#include "pair.h"

int32_t be32(const uint8_t *p);
int64_t be64(const uint8_t *p);
int16_t be16(const uint8_t *p);
/* One RecordBatch v2 with one record of `payload` bytes, its CRC-32C right, appended to `b`. */
void write_batch(struct codec_buf *b, int64_t pid, int16_t epoch, int32_t seq, bool txn, size_t payload);
/* A Produce v9 request (ClientId "java", acks -1): topic "t" partition 0, one
 * batch; returns the batch's offset in the frame (it ends 3 bytes before the frame). */
size_t produce_v9(struct codec_buf *b, int32_t corr, const char *txn_id, int64_t pid, int16_t epoch, int32_t seq,
		  bool txn, size_t payload);
/* The broker's Produce v9 answer to `corr`: no topics. */
void produce_answer(struct codec_buf *r, int32_t corr);
/* A Heartbeat v0 request (a frame behind a Produce; syncgate does nothing with it). */
void heartbeat(struct codec_buf *b, int32_t corr);
/* The broker's InitProducerId v`version` answer (correlation id -1). */
void init_pid_answer(struct codec_buf *b, int16_t version, int16_t err, int64_t pid, int16_t epoch);
/* The client's Produce response (v9) in `cl` (n bytes), answering `corr`: the error code of its one partition. */
int16_t produce_error(const uint8_t *cl, size_t n, int32_t corr);
/* The same answer's error code, and its base offset in `*base` (NULL: not wanted). */
int16_t produce_answer_of(const uint8_t *cl, size_t n, int32_t corr, int64_t *base);
/* A flexible request header v2 (ClientId "java") starting a fresh frame `b`. */
void client_header(struct codec_buf *b, int16_t key, int16_t version, int32_t corr);
/* A client's InitProducerId v4 with TransactionalId `txn`. */
void client_init_pid(struct codec_buf *b, int32_t corr, const char *txn);
/* A client's EndTxn v5 (commit) for `txn`, (`pid`, `epoch`). */
void client_end_txn(struct codec_buf *b, int32_t corr, const char *txn, int64_t pid, int16_t epoch);
/* A client's EndTxn v`version` (3..5: a flexible header) for `txn`, (`pid`, `epoch`), commit or abort. */
void client_end_txn_v(struct codec_buf *b, int32_t corr, int16_t version, const char *txn, int64_t pid,
		      int16_t epoch, bool committed);
/* The broker's EndTxn v5 answer to `corr`: no error, (`pid`, `epoch`). */
void end_txn_answer(struct codec_buf *b, int32_t corr, int64_t pid, int16_t epoch);

#endif
