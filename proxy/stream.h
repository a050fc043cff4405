/*
 * stream.h — the streaming data path (private to proxy/). Its entry points
 * (conn*.c, response.c) come first; then what its files share:
 * stream_pump.c (the one pump, either direction), stream.c (the response
 * direction's state, helpers and per-direction pieces), stream_request.c
 * (the Produce request direction's pieces), stream_clamp.c (the consumer
 * clamp as a Fetch response passes) and splice.c (splice and bulk reads,
 * either direction). Loop thread.
 */
#ifndef SYNCGATE_PROXY_STREAM_H
#define SYNCGATE_PROXY_STREAM_H

#include "proxy/datapath.h"

/* ---- entry points ---------------------------------------------------------- */

/**
 * Start streaming the `len`-byte frame at the head of the upstream input for
 * `e` (its response header is `hdr_len` bytes; `scan`: a Fetch body walked
 * unit by unit — v16+ to rewrite its tail tags, v12+ when the consumer clamp
 * judges it as it passes: proxy_clamp_streams()).
 */
void proxy_stream_response_start(struct proxy_conn *c, struct proxy_entry *e, size_t len,
				 size_t hdr_len, bool scan);
/**
 * A request of `len` body bytes starts at the head of the client input:
 * stream it when it is a Produce request above PROXY_STREAM_MIN_REQUEST. Returns 1
 * when the stream started (c->from_client), 2 when it must be buffered whole, 0 when
 * more bytes are needed to decide, -1 on a bad frame.
 */
int proxy_stream_request_start(struct proxy_conn *c, size_t len);
/**
 * Move what can move of the frame streaming in one direction: the response
 * in c->from_upstream (`from_upstream`, broker → client) or the Produce
 * request in c->from_client (client → broker). Returns 1 when the frame is
 * done (the direction back to FRAME), 0 when waiting (bytes, the peer, the
 * kernel), -1 when the connection is closing.
 */
int proxy_stream_pump(struct proxy_conn *c, bool from_upstream);
/** The client went away: drop the rest of the streamed response as it comes. */
void proxy_stream_client_gone(struct proxy_conn *c);
/** Release both directions' splice pipes and events (before either socket closes). */
void proxy_stream_free(struct proxy_conn *c);

/* ---- shared by the streaming files ------------------------------------------ */

/* Opaque bytes worth a splice (below it two syscalls cost more than a copy). */
#define SPLICE_MIN (16u << 10)
/* Least bytes of a record run moved at once when copying (a bufferevent
 * read is at most 64 KiB, SINGLE_IO_MAX in conn_io.c). */
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
void proxy_st_response_move(struct proxy_conn *c, struct evbuffer *in, size_t n);

/* See its definition. */
int proxy_st_response_bad(struct proxy_conn *c, const char *what, enum codec_err err);

/* `n` bytes of the frame (drained from `in`) go on as the `m` bytes `p`. */
void proxy_st_response_emit(struct proxy_conn *c, struct evbuffer *in, size_t n, const uint8_t *p, size_t m);

/* Where the next bytes of the frame go: the client (head), the entry's `out`, or nowhere. */
struct evbuffer *proxy_st_response_dest(struct proxy_conn *c, bool *queue);

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
void proxy_st_dir_set_state(struct proxy_conn *c, struct proxy_stream_dir *st, enum proxy_dir_state s);

/*
 * Move opaque bytes source → pipe → destination until one side would
 * block. The pipe may be full before `pipe_cap` bytes (a pipe holds a
 * number of buffers, and a socket's pages may fill them partly), so the
 * source's read event is armed only while the pipe is empty: a full pipe and
 * a readable socket would otherwise wake the loop for nothing.
 */
int proxy_st_splice_pump(struct proxy_conn *c, struct proxy_stream_dir *st);

/* Whether the opaque bytes still to come can move in the kernel now: both
 * sides plaintext and connected, nothing buffered in user space on either
 * side (so nothing is reordered), and enough bytes to be worth it. */
bool proxy_st_splice_possible(struct proxy_conn *c, struct proxy_stream_dir *st);

/* See its definition. */
int proxy_st_splice_setup(struct proxy_conn *c, struct proxy_stream_dir *st);

/* Enter SPLICE for `st` and run it; as proxy_st_splice_pump(). */
int proxy_st_splice_begin(struct proxy_conn *c, struct proxy_stream_dir *st);

/* Reads back on after a wait for the destination (unless paused meanwhile). */
void proxy_st_splice_wait_end(struct proxy_conn *c, struct proxy_stream_dir *st);

/*
 * The destination still has bytes to write (what was copied before): stop
 * reading the source until they are written, then splice the rest — else a
 * steady sender keeps the source's input non-empty and every byte is copied.
 */
bool proxy_st_splice_wait_drain(struct proxy_conn *c, struct proxy_stream_dir *st);

/* Copying a long run from a plaintext upstream: read it here (see BULK_READ). */
void proxy_st_bulk_start(struct proxy_conn *c);

/* See its definition. */
bool proxy_st_dir_paused(struct proxy_conn *c, struct proxy_stream_dir *st);

/* Opaque bytes that may move in the kernel from here: the run, and in a
 * clamped partition its record bytes after it (kept batches go on spliced,
 * judged in the socket's buffer: proxy_st_cl_peek_kept). */
size_t proxy_st_splice_run_len(struct proxy_conn *c, const struct proxy_stream_dir *st);

/*
 * A PARTITION unit of `used` bytes, `records` record bytes after it, at the
 * head of `in` (`saved`: the scan before it). Returns 1 when handled, 0 to
 * wait for the first batch header (the scan is put back), -1 on error.
 */
int proxy_st_cl_partition(struct proxy_conn *c, struct evbuffer *in, const struct codec_fetch_stream *saved,
			size_t used, size_t records);

/* The current topic's name, or NULL and the TopicId (v13+). */
const char *proxy_st_cl_topic(struct proxy_stream_dir *resp, const uint8_t **id);

/* A PART_END unit of `used` bytes at the head of `in` after a partition that
 * left `cl_owed` bytes out: its tagged fields take the filler. */
int proxy_st_cl_part_end(struct proxy_conn *c, struct evbuffer *in, size_t used);

/* A TOPIC unit of `used` bytes at the head of `in`: keep its name (v12). */
void proxy_st_cl_topic_unit(struct proxy_stream_dir *resp, struct evbuffer *in);

/* Leave SPLICE: our events off, the source bufferevent reads again. */
void proxy_st_splice_stop(struct proxy_conn *c, struct proxy_stream_dir *st);

/* Drop whatever the pipe holds (its reader went away). */
void proxy_st_pipe_discard(struct proxy_stream_dir *st);

/* See its definition. */
void proxy_st_dir_events_free(struct proxy_stream_dir *st);

/* See its definition. */
void proxy_st_stream_metrics_init(void);

/* The per-direction pieces of proxy_stream_pump() (stream_pump.c); each as
 * its definition says. The response direction's (stream.c): */
int proxy_st_response_finish(struct proxy_conn *c);
bool proxy_st_response_copy_later(struct proxy_conn *c, size_t avail);
int proxy_st_response_unit(struct proxy_conn *c, struct evbuffer *in, size_t avail);
/* The request direction's (stream_request.c): */
int proxy_st_request_finish(struct proxy_conn *c);
void proxy_st_request_copy(struct proxy_conn *c, struct evbuffer *in, size_t n);
int proxy_st_request_unit(struct proxy_conn *c, struct evbuffer *in, size_t avail);

#endif
