/*
 * stream_clamp.c — the consumer clamp as a Fetch v12+ response streams
 * through (see the section comment below; clamp.c decides per partition).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include "proxy/datapath.h"
#include "proxy/security.h"
#include "proxy/stream.h"

/* ---- the consumer clamp, as the frame passes ---------------------
 *
 * A clamped partition (proxy_clamp_stream_partition: every gated one, whatever
 * its HighWatermark says — Kafka takes it before it reads the log, so batches
 * at or past it may come along) gets HighWatermark and LastStableOffset
 * lowered in place when above the mirrored HW, then its records are judged
 * batch by batch from their headers (codec_batch_peek: at most 61 bytes
 * looked at, the rest moves as opaque bytes, spliced when it can — at a batch
 * boundary with nothing in user space the next header is read from the
 * socket with recv(MSG_PEEK), proxy_st_cl_peek_kept, so kept batches go on spliced).
 * The frame's size prefix is already on its way, so what is left out keeps
 * its length:
 *  - the first batch left out: the Records length becomes 0 and the
 *    partition's tagged fields grow by what was cut (codec_tags_grow: a
 *    filler field every client skips) — a consumer never gets a record
 *    set without a whole batch (the Java client fails on one);
 *  - a later batch: it and everything after it in the partition become one
 *    batch cut short — its base offset, a length one byte beyond the
 *    record set, leader epoch and magic as sent, zeros after — which every
 *    client takes for the broker's own partial trailing batch (KIP-74).
 * Either way no record at or past the mirrored HW is readable. */

/* The current topic's name, or NULL and the TopicId (v13+). */
const char *proxy_st_cl_topic(struct proxy_stream_dir *resp, const uint8_t **id)
{
	*id = resp->fs.version >= 13 ? resp->fs.topic_id : NULL;
	return *id ? NULL : resp->cl_topic;
}

/* A TOPIC unit of `used` bytes at the head of `in`: keep its name (v12). */
void proxy_st_cl_topic_unit(struct proxy_stream_dir *resp, struct evbuffer *in)
{
	resp->cl_topic[0] = '\0';
	if (resp->fs.version >= 13 || resp->fs.topic.len <= 0)
		return;
	size_t n = (size_t)resp->fs.topic.len < sizeof(resp->cl_topic) - 1 ? (size_t)resp->fs.topic.len
									: sizeof(resp->cl_topic) - 1;
	struct evbuffer_ptr at;
	evbuffer_ptr_set(in, &at, resp->fs.topic.off, EVBUFFER_PTR_SET);
	evbuffer_copyout_from(in, &at, resp->cl_topic, n);
	resp->cl_topic[n] = '\0';
}

/*
 * A PARTITION unit of `used` bytes, `records` record bytes after it, at the
 * head of `in` (`saved`: the scan before it). Returns 1 when handled, 0 to
 * wait for the first batch header (the scan is put back), -1 on error.
 */
int proxy_st_cl_partition(struct proxy_conn *c, struct evbuffer *in, const struct codec_fetch_stream *saved,
			size_t used, size_t records)
{
	struct proxy_stream_dir *resp = &c->from_upstream;
	const struct codec_fetch_stream_part *p = &resp->fs.part;
	const uint8_t *id;
	const char *topic = proxy_st_cl_topic(resp, &id);
	int64_t limit, keep_below;
	/* the first batch header first, so the partition is judged once */
	size_t peek = records < CODEC_BATCH_PEEK ? records : CODEC_BATCH_PEEK;
	if (evbuffer_get_length(in) < used + peek) {
		resp->fs = *saved;
		return 0;
	}
	if (!proxy_clamp_stream_partition(c, topic, id, p, &limit, &keep_below)) {
		proxy_st_response_move(c, in, used);
		resp->left -= used;
		resp->opaque = records;
		return 1;
	}
	uint8_t *u = malloc(used + 1);
	if (!u)
		return proxy_st_response_bad(c, "partition", CODEC_ERR_NOMEM);
	evbuffer_copyout(in, u, used);
	size_t out_len = used;
	uint8_t b[8];
	if (p->high_watermark > limit) {
		codec_put_be64(b, limit);
		memcpy(u + p->hw_off, b, 8);
		resp->cl_changed = true;
	}
	if (p->last_stable_offset > limit) {
		codec_put_be64(b, limit);
		memcpy(u + p->lso_off, b, 8);
		resp->cl_changed = true;
	}
	resp->cl_keep_below = keep_below;
	resp->cl_part = true;
	resp->cl_hw = p->high_watermark;
	resp->cl_end = -1;
	resp->cl_left = records;
	resp->cl_skip = 0;
	resp->cl_drop = false;
	resp->cl_owed = 0;
	if (records >= 12) {
		uint8_t h[CODEC_BATCH_PEEK];
		struct evbuffer_ptr at;
		evbuffer_ptr_set(in, &at, used, EVBUFFER_PTR_SET);
		evbuffer_copyout_from(in, &at, h, peek);
		struct codec_batch_head first;
		codec_batch_peek(h, peek, records, &first);
		if (!codec_batch_kept(&first, keep_below)) {
			/* nothing kept: an empty record set, the rest is filler later */
			u[p->records_len_off] = 1; /* uvarint(0 + 1) */
			out_len = p->records_len_off + 1;
			resp->cl_owed = used - out_len + records;
			resp->cl_drop = true;
			resp->cl_changed = true;
		}
	} else {
		resp->cl_left = 0; /* fewer than 12 bytes hold no batch a client reads */
		resp->opaque = records;
	}
	proxy_st_response_emit(c, in, used, u, out_len);
	free(u);
	resp->left -= used;
	return 1;
}

/* Bytes of a batch header kept when the rest of a record set is left out:
 * baseOffset, batchLength (rewritten), partitionLeaderEpoch, magic. */
#define MASK_HEAD 17
/* Least batchLength a client accepts from a v2 header (librdkafka: the
 * 61-byte header less baseOffset and batchLength; Java: 14). */
#define MASK_MIN_LENGTH 49

/* Leave out the rest (`left` ≥ MASK_HEAD bytes, `h` its first bytes) of the
 * partition's records: one batch cut short, zeros after its header. */
static void cl_mask(struct proxy_conn *c, const uint8_t *h, size_t left)
{
	bool queue;
	struct evbuffer *dst = proxy_st_response_dest(c, &queue);
	c->from_upstream.cl_changed = true;
	if (!dst)
		return;
	static const uint8_t zeros[4096];
	uint8_t head[MASK_HEAD];
	memcpy(head, h, MASK_HEAD);
	/* at least one byte beyond the record set: the client waits for more */
	size_t blen = left - 12 + 1 > MASK_MIN_LENGTH ? left - 12 + 1 : MASK_MIN_LENGTH;
	head[8] = (uint8_t)(blen >> 24);
	head[9] = (uint8_t)(blen >> 16);
	head[10] = (uint8_t)(blen >> 8);
	head[11] = (uint8_t)blen;
	evbuffer_add(dst, head, MASK_HEAD);
	for (size_t n = MASK_HEAD; n < left;) {
		size_t k = left - n < sizeof(zeros) ? left - n : sizeof(zeros);
		evbuffer_add(dst, zeros, k);
		n += k;
	}
	if (queue)
		proxy_entry_queue(c, c->from_upstream.e, left);
}

/* Batch `b` of the current partition was seen: one past its last offset. */
static void cl_note_end(struct proxy_stream_dir *resp, const struct codec_batch_head *b)
{
	int64_t end = b->last < INT64_MAX ? b->last + 1 : INT64_MAX; /* a corrupt header stays in range */
	if (b->base >= 0 && b->last >= b->base && end > resp->cl_end)
		resp->cl_end = end;
}

/* The records of a clamped partition: judge the next batch, or drain what is
 * left out. Returns 1 on progress, 0 to wait for bytes. */
int proxy_st_cl_records(struct proxy_conn *c, struct evbuffer *in)
{
	struct proxy_stream_dir *resp = &c->from_upstream;
	size_t avail = evbuffer_get_length(in);
	if (resp->cl_skip > 0) {
		if (avail == 0)
			return 0;
		size_t n = avail < resp->cl_skip ? avail : resp->cl_skip;
		evbuffer_drain(in, n);
		resp->cl_skip -= n;
		resp->cl_left -= n;
		resp->left -= n;
		resp->cl_bytes += (int64_t)n;
		return 1;
	}
	size_t peek = resp->cl_left < CODEC_BATCH_PEEK ? resp->cl_left : CODEC_BATCH_PEEK;
	if (avail < peek)
		return 0;
	uint8_t h[CODEC_BATCH_PEEK];
	evbuffer_copyout(in, h, peek);
	struct codec_batch_head b;
	codec_batch_peek(h, peek, resp->cl_left, &b);
	cl_note_end(resp, &b);
	if (!resp->cl_drop && codec_batch_kept(&b, resp->cl_keep_below)) {
		resp->opaque = b.total;
		resp->cl_left -= b.total;
		return 1;
	}
	if (!resp->cl_drop && resp->cl_left < MASK_HEAD) {
		/* the broker's own partial trailing batch: no client reads it */
		resp->opaque = resp->cl_left;
		resp->cl_left = 0;
		return 1;
	}
	if (!resp->cl_drop) {
		cl_mask(c, h, resp->cl_left);
		resp->cl_drop = true;
	}
	if (!b.partial)
		resp->cl_records += b.records;
	resp->cl_skip = b.total;
	return 1;
}

/*
 * At a batch boundary of a clamped partition with nothing of the frame in
 * user space (the upstream input empty, or splicing): the next batch header
 * read from the plaintext upstream socket without taking it (recv MSG_PEEK,
 * at most 61 bytes); a kept batch becomes an opaque run, so kept batches go
 * on socket → pipe → client in the kernel, judged by their headers only.
 * False, nothing changed, when the header is not all there yet or the batch
 * is left out: proxy_st_cl_records() judges it once the bufferevent has read it.
 */
bool proxy_st_cl_peek_kept(struct proxy_conn *c)
{
	struct proxy_stream_dir *resp = &c->from_upstream;
	if (!resp->clamp || resp->cl_left == 0 || resp->cl_drop || resp->cl_skip > 0 || resp->opaque > 0 ||
	    c->srv->upstream_tls || c->srv->client_tls || !c->upstream || !c->upstream_up)
		return false;
	size_t peek = resp->cl_left < CODEC_BATCH_PEEK ? resp->cl_left : CODEC_BATCH_PEEK;
	uint8_t h[CODEC_BATCH_PEEK];
	ssize_t n = recv(bufferevent_getfd(c->upstream), h, peek, MSG_PEEK | MSG_DONTWAIT);
	if (n < 0 || (size_t)n < peek)
		return false;
	struct codec_batch_head b;
	codec_batch_peek(h, peek, resp->cl_left, &b);
	if (!codec_batch_kept(&b, resp->cl_keep_below))
		return false;
	cl_note_end(resp, &b);
	resp->opaque = b.total;
	resp->cl_left -= b.total;
	return true;
}

/* A PART_END unit of `used` bytes at the head of `in` after a partition that
 * left `cl_owed` bytes out: its tagged fields take the filler. */
int proxy_st_cl_part_end(struct proxy_conn *c, struct evbuffer *in, size_t used)
{
	struct proxy_stream_dir *resp = &c->from_upstream;
	struct codec_iov iov[PROXY_MAX_IOV];
	int niov = proxy_buf_iov(in, 0, used, iov, PROXY_MAX_IOV);
	if (niov < 0)
		return proxy_st_response_bad(c, "part_end", CODEC_ERR_NOMEM);
	struct codec_reader r;
	codec_reader_init(&r, iov, niov);
	r.flexible = true;
	codec_read_tags(&r, NULL, NULL, NULL); /* the partition's; the topic's may follow */
	size_t sec = r.off, grow = resp->cl_owed;
	uint8_t *out = malloc(sec + grow);
	enum codec_err err = r.err ? r.err : !out ? CODEC_ERR_NOMEM
				      : codec_tags_grow(iov, niov, sec, grow, out);
	if (err != CODEC_OK) {
		free(out);
		return proxy_st_response_bad(c, "part_end", err);
	}
	proxy_st_response_emit(c, in, sec, out, sec + grow);
	free(out);
	proxy_st_response_move(c, in, used - sec);
	resp->left -= used;
	resp->cl_owed = 0;
	return 1;
}
