/*
 * stream.h — what the four files of the streaming data path share (private
 * to proxy/): stream.c (the response pump, its state and helpers),
 * stream_clamp.c (the consumer clamp as a Fetch response passes), splice.c
 * (splice and bulk reads, either direction) and stream_tx.c (Produce
 * requests streamed to the broker). Loop thread.
 */
#ifndef SYNCGATE_PROXY_STREAM_H
#define SYNCGATE_PROXY_STREAM_H

#include "proxy/datapath.h"

/* Opaque bytes worth a splice (below it two syscalls cost more than a copy). */
#define SPLICE_MIN (16u << 10)
/* Least bytes of a record run moved at once when copying (a bufferevent
 * read is at most 64 KiB, SINGLE_IO_MAX in conn.c). */
#define COALESCE (32u << 10)
/* Pipe size asked for (fs.pipe-max-size allows 1 MiB by default). */
#define PIPE_SIZE (1u << 20)

/* Streaming counters (stream.c; stream_metrics_init registers them). */
extern struct metric *proxy_st_m_streamed, *proxy_st_m_spliced, *proxy_st_m_tail_rewritten;

/* The records of a clamped partition: judge the next batch, or drain what is
 * left out. Returns 1 on progress, 0 to wait for bytes. */
int proxy_st_cl_records(struct proxy_conn *c, struct evbuffer *in);

/* See its definition. */
void proxy_st_bulk_stop(struct proxy_conn *c);

/* Move `n` bytes from the head of `in` to where the frame goes. */
void proxy_st_rx_move(struct proxy_conn *c, struct evbuffer *in, size_t n);

/* See its definition. */
int proxy_st_rx_bad(struct proxy_conn *c, const char *what, enum codec_err err);

/* `n` bytes of the frame (drained from `in`) go on as the `m` bytes `p`. */
void proxy_st_rx_emit(struct proxy_conn *c, struct evbuffer *in, size_t n, const uint8_t *p, size_t m);

/* Where the next bytes of the frame go: the client (head), the entry's `out`, or nowhere. */
struct evbuffer *proxy_st_rx_dest(struct proxy_conn *c, bool *queue);

/*
 * At a batch boundary of a clamped partition with nothing of the frame in
 * user space (the upstream input empty, or splicing): the next batch header
 * read from the plaintext upstream socket without taking it (recv MSG_PEEK,
 * at most 61 bytes); a kept batch becomes an opaque run, so kept batches go
 * on socket → pipe → client in the kernel, judged by their headers only.
 * False, nothing changed, when the header is not all there yet or the batch
 * is left out: proxy_st_cl_records() judges it once the bufferevent has read it.
 */
bool proxy_st_cl_peek_kept(struct proxy_conn *c);

/* The one place a direction's state changes. */
void proxy_st_st_set_state(struct proxy_conn *c, struct proxy_rx *st, enum proxy_rx_state s);

/*
 * Move opaque bytes source → pipe → destination until one side would
 * block. The pipe may be full before `pipe_cap` bytes (a pipe holds a
 * number of buffers, and a socket's pages may fill them partly), so the
 * source's read event is armed only while the pipe is empty: a full pipe and
 * a readable socket would otherwise wake the loop for nothing.
 */
int proxy_st_splice_pump(struct proxy_conn *c, struct proxy_rx *st);

/* Whether the opaque bytes still to come can move in the kernel now: both
 * sides plaintext and connected, nothing buffered in user space on either
 * side (so nothing is reordered), and enough bytes to be worth it. */
bool proxy_st_splice_possible(struct proxy_conn *c, struct proxy_rx *st);

/* See its definition. */
int proxy_st_splice_setup(struct proxy_conn *c, struct proxy_rx *st);

/* Enter SPLICE for `st` and run it; as proxy_st_splice_pump(). */
int proxy_st_splice_begin(struct proxy_conn *c, struct proxy_rx *st);

/* Reads back on after a wait for the destination (unless paused meanwhile). */
void proxy_st_splice_wait_end(struct proxy_conn *c, struct proxy_rx *st);

/*
 * The destination still has bytes to write (what was copied before): stop
 * reading the source until they are written, then splice the rest — else a
 * steady sender keeps the source's input non-empty and every byte is copied.
 */
bool proxy_st_splice_wait_drain(struct proxy_conn *c, struct proxy_rx *st);

/* Copying a long run from a plaintext upstream: read it here (see BULK_READ). */
void proxy_st_bulk_start(struct proxy_conn *c);

/* See its definition. */
bool proxy_st_st_paused(struct proxy_conn *c, struct proxy_rx *st);

/* Opaque bytes that may move in the kernel from here: the run, and in a
 * clamped partition its record bytes after it (kept batches go on spliced,
 * judged in the socket's buffer: proxy_st_cl_peek_kept). */
size_t proxy_st_splice_run_len(struct proxy_conn *c, const struct proxy_rx *st);

/*
 * A PARTITION unit of `used` bytes, `records` record bytes after it, at the
 * head of `in` (`saved`: the scan before it). Returns 1 when handled, 0 to
 * wait for the first batch header (the scan is put back), -1 on error.
 */
int proxy_st_cl_partition(struct proxy_conn *c, struct evbuffer *in, const struct codec_fetch_stream *saved,
			size_t used, size_t records);

/* The current topic's name, or NULL and the TopicId (v13+). */
const char *proxy_st_cl_topic(struct proxy_rx *rx, const uint8_t **id);

/* A PART_END unit of `used` bytes at the head of `in` after a partition that
 * left `cl_owed` bytes out: its tagged fields take the filler. */
int proxy_st_cl_part_end(struct proxy_conn *c, struct evbuffer *in, size_t used);

/* A TOPIC unit of `used` bytes at the head of `in`: keep its name (v12). */
void proxy_st_cl_topic_unit(struct proxy_rx *rx, struct evbuffer *in);

/* Leave SPLICE: our events off, the source bufferevent reads again. */
void proxy_st_splice_stop(struct proxy_conn *c, struct proxy_rx *st);

/* Drop whatever the pipe holds (its reader went away). */
void proxy_st_pipe_discard(struct proxy_rx *st);

/* See its definition. */
void proxy_st_st_events_free(struct proxy_rx *st);

/* See its definition. */
void proxy_st_stream_metrics_init(void);

#endif
