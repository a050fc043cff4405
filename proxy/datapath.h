/*
 * datapath.h — the data path's own declarations (private to libsgproxy and
 * its unit tests): the correlation FIFO, connection pairs, listeners, the
 * server's state, and the files that frame, rewrite, hold, clamp and stream.
 * Its public face — server lifecycle, readiness, what the admin plane
 * (proxy/admin/) and the programs (proxy/cmd/) use — is proxy/proxy.h,
 * included here.
 *
 * Invariants (docs/architecture.md) kept here: responses leave a connection in
 * request order; no broker address reaches a client; frames we don't rewrite
 * pass byte-for-byte; held and buffered bytes are capped (past the caps we stop
 * reading from clients); bad input closes only its own connection.
 *
 * Threads: everything here runs on the single event-loop thread, except
 * syncgate-ctl (its own process).
 */
#ifndef SYNCGATE_PROXY_DATAPATH_H
#define SYNCGATE_PROXY_DATAPATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include <event2/event.h>
#include <event2/bufferevent.h>
#include <event2/buffer.h>
#include <event2/listener.h>
#include <openssl/ssl.h>

#include "codec/codec.h"
#include "conf/conf.h"
#include "mirror/mirror.h"
#include "proxy/proxy.h"
#include "proxy/tls.h"

struct proxy_server;
struct proxy_conn;
struct proxy_entry;

#include "proxy/topic_ids.h"
#include "proxy/produce_sum.h"
#include "proxy/pidmap.h"

/* ------------------------------------------------------------------------ */
/* Correlation FIFO                                                         */
/* ------------------------------------------------------------------------ */

/** Where a request's response stands. */
enum proxy_entry_state {
	PROXY_ENTRY_IN_FLIGHT, /* forwarded upstream, response not yet received */
	PROXY_ENTRY_STREAMING, /* response arriving, forwarded as it comes (stream.c): to the
				* client when at the FIFO head, else into `out` */
	PROXY_ENTRY_HELD,      /* response received, held by the sync gate */
	PROXY_ENTRY_READY,     /* response bytes in `out`, waiting for its turn */
	PROXY_ENTRY_STATE_COUNT
};
const char *proxy_entry_state_str(enum proxy_entry_state s);

/** What kind of exchange an entry is. */
enum proxy_entry_kind {
	PROXY_ENTRY_KAFKA,     /* an ordinary request/response */
	PROXY_ENTRY_INTERNAL,  /* syncgate's own request (internal.c): response consumed, not sent */
	PROXY_ENTRY_SASL_RAW,  /* a raw SASL token after SaslHandshake v0 */
};

/** The gate's view of one held partition (topic borrowed from the request). */
struct proxy_held_part {
	uint32_t topic;      /* index into the response's topics */
	uint32_t partition;  /* index into that topic's partitions */
};

/** One request awaiting (or holding) its response, in request order. */
struct proxy_entry {
	TAILQ_ENTRY(proxy_entry) link;
	enum proxy_entry_kind kind;
	enum proxy_entry_state state;
	int32_t correlation_id;
	int16_t api_key;
	int16_t api_version;       /* as sent upstream */
	int16_t client_version;    /* as the client sent it (Produce v14 → 13 upstream) */
	bool sasl_auth;            /* SaslAuthenticate naming a user (conn sasl_user): its answer
				    * confirms the principal (here: in the padding) */
	uint32_t nparts;           /* HELD: parts below (here: in the padding) */
	bool replayed;             /* a Produce answered from what the source appended before
				    * (retried.c), not from the broker: it vouches for nothing */
	int64_t arrival_ms;        /* mirror_now_ms() when the request arrived */
	struct proxy_produce_sum *produce; /* acks=all/1 Produce: what its response needs; owned */
	char *sasl_mechanism;      /* SaslHandshake request: mechanism asked for; owned */
	/* Frees what the layer above the FIFO attached to the entry — a held
	 * Produce response and its gate wait (hold.c), or clamp state (clamp.c;
	 * never both: Produce vs consumer APIs) — when the entry is freed, without
	 * fifo.c calling up into them. Set by the file that attaches the state
	 * (proxy_hold_produce, proxy_clamp_request); NULL: nothing attached. */
	void (*release)(struct proxy_conn *c, struct proxy_entry *e);
	/* HELD */
	struct proxy_conn *conn;               /* back pointer for the gate's callback */
	uint8_t *raw;                          /* the broker's response frame body (header
						* included), decoded again at release; owned.
						* INTERNAL TopicId lookup: the ids it asks
						* (topic_lookup.c, freed by its release);
						* InitProducerId: what pidmap.c keeps for its
						* answer (freed by its release) */
	uint32_t raw_len, hdr_len;
	struct mirror_wait_part *parts;        /* owned; topic names borrowed from `produce` or
						* the TopicId map; followed in the same allocation
						* by nparts struct proxy_held_part (hold.c) */
	struct mirror_wait *wait;
	size_t held_bytes;         /* response size counted against the hold caps */
	struct proxy_commit *commit; /* OffsetCommit of a synchronous group (commit_hold.c); owned */
	struct proxy_txn *txn;     /* EndTxn(commit) (txn_hold.c): owned; INTERNAL entries: borrowed */
	struct proxy_clamp *clamp; /* consumer Fetch/ListOffsets/OffsetForLeaderEpoch: clamp to the
				    * mirrored HW (clamp.c; HELD while a Fetch waits); owned */
	/* STREAMING, READY */
	struct evbuffer *out;      /* the response frame (or what arrived of it), size prefix
				    * included; NULL when it went straight to the client */
	size_t queued;             /* bytes of `out` counted in the queued-bytes caps */
};
TAILQ_HEAD(proxy_fifo, proxy_entry);

/* ------------------------------------------------------------------------ */
/* Connections                                                              */
/* ------------------------------------------------------------------------ */

/** How the frame arriving on one side moves to the other (stream.c). */
enum proxy_dir_state {
	PROXY_DIR_FRAME,       /* between frames, or a frame buffered whole before it is handled */
	PROXY_DIR_STREAM,      /* a frame forwarded as it arrives: structure parsed unit by unit,
				* record bytes passed without being looked at */
	PROXY_DIR_SPLICE,      /* record bytes moving socket → pipe → socket in the kernel */
	PROXY_DIR_STATE_COUNT
};
const char *proxy_dir_state_str(enum proxy_dir_state s);

/**
 * One direction's streamed frame: c->from_upstream a response from the
 * broker to the client, c->from_client a Produce request from the client to
 * the broker.
 */
struct proxy_stream_dir {
	enum proxy_dir_state state;
	struct proxy_entry *e;         /* the entry a response answers or a request opened; NULL:
				        * response dropped (client gone), request acks=0 */
	size_t frame;                  /* the frame's bytes, size prefix included */
	size_t left;                   /* bytes of the frame not consumed yet */
	size_t opaque;                 /* of those, bytes passed without parsing (records) */
	bool scan;                     /* response: a Fetch body walked unit by unit; request: always */
	struct codec_fetch_stream fs;  /* response */
	struct codec_produce_stream ps; /* request */
	struct codec_produce_request *req; /* request: what the scan saw, summarised at the end */
	int16_t client_version;        /* request: Produce version as the client sent it */
	int32_t correlation_id;        /* request */
	int pipe[2];                   /* splice pipe (read end, write end); -1 until needed */
	size_t pipe_cap;               /* pipe capacity, bytes */
	size_t in_pipe;                /* bytes in the pipe */
	struct event *ev_bulk;         /* response STREAM copying: our own 256 KiB reads of the
				        * plaintext upstream (a bufferevent reads 4 KiB at a time) */
	bool bulk;                     /* ev_bulk is reading instead of the bufferevent */
	bool wait_drain;               /* source reads off until the destination's output is
				        * written, so the rest can be spliced */
	struct event *ev_read;         /* SPLICE: upstream readable */
	struct event *ev_write;        /* SPLICE: client writable */
	/* response: a streamed Fetch the consumer clamp judges (clamp.c) */
	bool tail_rewrite;             /* v16+: the tail's NodeEndpoints are rewritten */
	bool clamp;                    /* partitions are judged as they pass */
	bool cl_changed;               /* something was rewritten or left out */
	char cl_topic[256];            /* the current topic (v12; TopicId in fs for v13+) */
	int64_t cl_keep_below;         /* the current partition keeps batches whose last offset is below */
	bool cl_part;                  /* the current partition is clamped (judged batch by batch) */
	int64_t cl_hw;                 /* its HighWatermark as the broker sent it */
	int64_t cl_end;                /* one past the last offset of its batches seen, -1 none */
	size_t cl_left;                /* its record bytes not judged yet (walked batch by batch) */
	size_t cl_skip;                /* of those, bytes of the batch being left out not drained yet */
	bool cl_drop;                  /* the rest of its records is left out */
	size_t cl_owed;                /* bytes left out of the frame: filler in the partition's tags */
	int64_t cl_records, cl_bytes;  /* records and bytes left out of the response so far */
};

/** Connection pair state. */
enum proxy_conn_state {
	PROXY_CONN_CONNECTING, /* client accepted, upstream connect in progress */
	PROXY_CONN_OPEN,       /* both sides up; frames flow */
	PROXY_CONN_DRAINING,   /* upstream closed: flush what's owed to the client, then close */
	PROXY_CONN_LINGERING,  /* client gone: deliver what it sent, read what is owed, then close */
	PROXY_CONN_HALF_CLOSED, /* client shut its write side: no more reads, every owed response
				 * still goes to it, then close */
	PROXY_CONN_CLOSING,    /* error or done: nothing moves any more, freed from close_ev */
	PROXY_CONN_STATE_COUNT
};
const char *proxy_conn_state_str(enum proxy_conn_state s);

/**
 * Why a connection pair closes (or drains, lingers, half-closes): the
 * `reason` of the conn_state / conn_close log lines and the `cause` label
 * of syncgate_connection_closes_total (counted once per pair, when it is
 * freed, with the last cause set). PROXY_CLOSE_NONE: still open.
 */
enum proxy_close_cause {
	PROXY_CLOSE_NONE,
	PROXY_CLOSE_CLIENT_CLOSED,               /* client closed */
	PROXY_CLOSE_CLIENT_ERROR,                /* client error */
	PROXY_CLOSE_CLIENT_HALF_CLOSED,          /* client half-closed */
	PROXY_CLOSE_CLIENT_HALF_CLOSE_DELIVERED, /* client half-closed: every response delivered */
	PROXY_CLOSE_CLIENT_MID_REQUEST,          /* client closed in the middle of a request */
	PROXY_CLOSE_CLIENT_IDLE,                 /* client idle (limits.client_idle_ms) */
	PROXY_CLOSE_CLIENT_FRAME_REFUSED,        /* client frame refused */
	PROXY_CLOSE_CLIENT_FRAME_MALFORMED,      /* malformed client frame */
	PROXY_CLOSE_UPSTREAM_CONNECT_TIMEOUT,    /* upstream connect timeout */
	PROXY_CLOSE_UPSTREAM_CONNECT_FAILED,     /* upstream connect failed */
	PROXY_CLOSE_UPSTREAM_CLOSED,             /* upstream closed */
	PROXY_CLOSE_UPSTREAM_CLOSED_CLIENT_GONE, /* upstream closed while the client was gone */
	PROXY_CLOSE_UPSTREAM_MID_RESPONSE,       /* upstream closed in the middle of a response */
	PROXY_CLOSE_UPSTREAM_MID_REQUEST,        /* upstream closed in the middle of a request */
	PROXY_CLOSE_UPSTREAM_FRAME_REFUSED,      /* upstream frame refused */
	PROXY_CLOSE_UPSTREAM_FRAME_MALFORMED,    /* malformed upstream frame */
	PROXY_CLOSE_HELD_PRODUCE_UNENCODABLE,    /* could not encode a held Produce response */
	PROXY_CLOSE_HELD_FETCH_UNCLAMPABLE,      /* could not clamp a held Fetch response */
	PROXY_CLOSE_PRODUCER_ID_REFUSED,         /* switched: the broker issued no producer id (pidmap.c) */
	PROXY_CLOSE_OUT_OF_MEMORY,               /* out of memory */
	PROXY_CLOSE_SHUTDOWN,                    /* shutdown */
	PROXY_CLOSE_SHUTDOWN_GRACE_EXPIRED,      /* shutdown grace period expired */
	PROXY_CLOSE_SWITCHED,                    /* the switch: served by the destination from now on */
	PROXY_CLOSE_CAUSE_COUNT
};
/** The metric label of a cause (snake_case), "?" out of range. Pure. */
const char *proxy_close_cause_label(enum proxy_close_cause c);
/** The log text of a cause ("" for NONE), "?" out of range. Pure. */
const char *proxy_close_cause_text(enum proxy_close_cause c);

/**
 * What the files below conn*.c ask of their connection, registered by conn_io.c
 * on every pair it creates (proxy_conn_new): stream.c, hold.c and clamp.c call up
 * through these, never directly (docs/architecture.md, no call cycle).
 * Loop thread.
 */
struct proxy_conn_ops {
	/* proxy_conn_close(): nothing moves any more, freed later from close_ev */
	void (*close)(struct proxy_conn *c, enum proxy_close_cause cause);
	/* the client closed or failed (a write to it failed): linger, deliver
	 * what it sent, read what is owed and drop it (stream.c: a splice to
	 * the client failed) */
	void (*client_gone)(struct proxy_conn *c, enum proxy_close_cause cause);
	/* proxy_conn_update_flow(): re-check the backpressure marks (clamp.c:
	 * a held Fetch response went out) */
	void (*update_flow)(struct proxy_conn *c);
	/* handle the frames waiting in the upstream input (stream.c: after a
	 * splice run or a bulk read) */
	void (*upstream_frames)(struct proxy_conn *c);
	/* handle the frames waiting in the client input (stream.c: after a
	 * splice run) */
	void (*client_frames)(struct proxy_conn *c);
};

/** A client connection paired 1:1 with an upstream broker connection. */
struct proxy_conn {
	TAILQ_ENTRY(proxy_conn) link;
	struct proxy_server *srv;
	const struct proxy_conn_ops *ops; /* conn_io.c's (proxy_conn_new): the upward calls from below */
	struct proxy_listener *lst;    /* where it was accepted (gateway: node id) */
	uint64_t id;                   /* for logs */
	char peer[64];                 /* client address, for logs */
	enum proxy_conn_state state;
	struct bufferevent *client;    /* owned; NULL once LINGERING */
	struct bufferevent *upstream;  /* owned; NULL once DRAINING */
	struct event *connect_timer;   /* upstream connect timeout */
	struct event *close_ev;        /* deferred close; LINGERING: also the linger deadline */
	struct event *idle_ev;         /* OPEN: limits.client_idle_ms check (conn.c) */
	int64_t last_io_ms;            /* mirror_now_ms() of the last client read or write, of the
					* FIFO emptying (last answer), or of the last idle check
					* that found the pair busy */
	struct proxy_fifo fifo;        /* requests awaiting responses, in order */
	size_t nfifo;
	size_t held_bytes;             /* bytes of held responses */
	size_t queued_bytes;           /* bytes of responses waiting behind the FIFO head */
	struct proxy_stream_dir from_upstream; /* the response arriving from the broker */
	struct proxy_stream_dir from_client; /* the Produce request arriving from the client */
	int sasl_raw_left;             /* raw SASL v0 exchanges still expected; -1 unknown count */
	bool sasl_raw;                 /* between SaslHandshake v0 and authentication end */
	bool client_paused;            /* client reads disabled by backpressure */
	bool upstream_paused;          /* upstream reads disabled by backpressure */
	bool upstream_up;              /* upstream connect (and TLS handshake) done */
	bool client_plain, upstream_plain; /* that side is plain TCP, no TLS (write_through.c) */
	enum proxy_close_cause close_cause; /* DRAINING, LINGERING, HALF_CLOSED, CLOSING: why */
	char client_name[64];          /* ClientSoftwareName, else the client id (client.c) */
	char client_version[32];       /* ClientSoftwareVersion */
	bool client_named;             /* client_name came from ApiVersions v3+ */
	char sasl_mech[32];            /* the last SaslHandshake's mechanism ("" none) */
	char sasl_user[128];           /* named in the client's first SASL message, not confirmed */
	char sasl_principal[128];      /* sasl_user once the broker accepted it ("" none) */
	bool clamp_lagging;            /* the last clamped Fetch response left records out: the next
					* one is buffered whole (and may be held), not streamed */
	uint8_t lookup_pending[PROXY_LOOKUP_PENDING][16]; /* TopicIds met unresolved in responses:
					* looked up ahead of the next request (topic_lookup.c) */
	uint8_t nlookup_pending;
	bool principal_exempt;         /* TLS certificate or SASL user matches consumers.exempt_principals */
	uint64_t principal_exempt_gen; /* srv->conf_gen + 1 it was decided under (0: decide again):
					* once per config and principal, which rarely change */
	bool pid_wait;                 /* switched: a Produce waits unread in the client input for
					* syncgate's own InitProducerId (pidmap.c): no client frame
					* is handled (nor read) until its answer */
	bool pid_again;                /* that answer came: the next frame handled is the same
					* Produce again (request.c does not count it twice) */
	bool pid_claiming;             /* pid_wait lasts until the state log gives back the first
					* claim of pid_claim's key (pidmap_claim.c) */
	struct mirror_producer_claim pid_claim; /* what this sidecar claimed: its own InitProducerId answer */
	struct proxy_txn_abort txn_abort; /* an EndTxn's answer from syncgate's own InitProducerId (pidmap_txn.c) */
	bool init_pid_known;           /* init_pid_max was learnt */
	int16_t init_pid_max;          /* the broker's highest InitProducerId version (its ApiVersions
					* answer on this connection, response.c) */
};
TAILQ_HEAD(proxy_conn_list, proxy_conn);

/** A listening socket; in gateway mode one per broker node id. */
struct proxy_listener {
	TAILQ_ENTRY(proxy_listener) link;
	struct proxy_server *srv;
	struct evconnlistener *ev;     /* NULL while paused (proxy_listeners_set_upstream) */
	char host[256];                /* where it listens */
	int port;
	int32_t node_id;               /* gateway: the broker it fronts; -1 sidecar (and the
					* gateway's bootstrap listener): upstream.broker */
	char upstream_host[256];       /* where its connections go */
	int upstream_port;
};
TAILQ_HEAD(proxy_listener_list, proxy_listener);

/**
 * TopicId → name map (topic_ids.c), learnt from this sidecar's own broker:
 * Metadata responses passing through, and syncgate's own Metadata lookups
 * injected ahead of a request that names an id it does not know
 * (topic_lookup.c).
 */
struct proxy_topic_ids;

/** The whole proxy: one per process, loop-thread owned. */
struct proxy_server {
	struct event_base *base;
	struct evdns_base *dns;        /* upstream host names */
	const struct conf *conf;       /* borrowed; swapped on reload */
	uint64_t conf_gen;             /* incremented at every applied reload */
	struct mirror_gate *gate;      /* borrowed */
	struct proxy_listener_list listeners;
	struct proxy_conn_list conns;
	SSL_CTX *client_tls;           /* NULL: plaintext listener */
	SSL_CTX *upstream_tls;         /* NULL: plaintext upstream */
	SSL_CTX *switch_tls;           /* switch.tls: to the destination after the switch; NULL plaintext */
	bool switched;                 /* this sidecar serves a mirror's destination (switch.c): every
					* connection goes there, nothing is gated, fenced or clamped,
					* producer ids are remapped (pidmap.c) */
	char switch_mirror[128];       /* that mirror ("" before the switch) */
	bool switch_first_served;      /* a response from the destination went to a client */
	struct proxy_topic_ids *topic_ids;
	size_t held_bytes;             /* global held bytes (limits.max_held_bytes) */
	size_t queued_bytes;           /* global queued bytes (with held_bytes: limits.max_held_bytes) */
	uint64_t bytes_since_trim;     /* response bytes moved through user space since malloc_trim */
	size_t nconns;
	uint64_t next_conn_id;
	bool shutting_down;
	struct proxy_pidmap *pidmap;   /* switched: producer ids (pidmap.c; made at first use); owned */
	struct event *shutdown_timer;
	struct event *keepalive_ev;    /* upstream.keepalive_ms: internal requests while holding */
	/* gateway mode: learn a broker a response names (listener.c's
	 * proxy_gateway_learn_broker, registered by proxy_server_new; the
	 * rewrite calls it without calling up into the listeners) */
	void (*learn_broker)(struct proxy_server *srv, int32_t node_id, const char *host, int32_t port);
	/* what a connection's progress means for the server (conns.c, which sits
	 * above conn.c), registered by proxy_server_register_conns: the
	 * connection files call these without calling up into conns.c.
	 * conn_progress: fifo.c after a flush, stream_request.c after a streamed request;
	 * conn_closed: conn.c after a free; resume_paused: fifo.c, hold.c,
	 * clamp.c, conn_io.c when held or queued bytes went down. */
	void (*conn_progress)(struct proxy_server *srv, struct proxy_conn *c);
	/* conn_io.c after a failed connect to upstream.broker: the admin plane
	 * probes it now (proxy_server_on_upstream_connect_failed; NULL without it) */
	void (*upstream_connect_failed)(void *arg);
	void *upstream_connect_failed_arg;
	void (*conn_closed)(struct proxy_server *srv);
	void (*resume_paused)(struct proxy_server *srv);
};

/* conns.c */
/**
 * Register conns.c's callbacks on `srv` (conn_progress, conn_closed,
 * resume_paused): proxy_server_new, and tests that build a server by hand.
 */
void proxy_server_register_conns(struct proxy_server *srv);
/** A connection's FIFO moved: during shutdown, close it once it is empty. */
void proxy_server_conn_progress(struct proxy_server *srv, struct proxy_conn *c);
/** Held bytes went down: let connections paused by the global cap read again. */
void proxy_server_resume_paused(struct proxy_server *srv);

/* listener.c */
int proxy_listener_open(struct proxy_server *srv, const char *host, int port,
			int32_t node_id, const char *up_host, int up_port);
/** Gateway mode: make sure a listener exists for every broker seen in Metadata. */
void proxy_gateway_learn_broker(struct proxy_server *srv, int32_t node_id,
				const char *host, int32_t port);
/**
 * The switch (switch.c): the listen.kafka listener forwards to `host:port`
 * (a destination bootstrap server) from now on, bound again if it was paused;
 * the node listeners of gateway mode (source brokers) are closed — the
 * destination's nodes get theirs at switch.base_port + id as they appear.
 */
void proxy_listeners_switch(struct proxy_server *srv, const char *host, int port);

/* switch.c */
/** Register the switch hook with the gate (proxy_server_new). */
void proxy_switch_register(struct proxy_server *srv);
/* switch_served.c */
/** The switch applied now: the first response is awaited (gauge -1). */
void proxy_switch_served_start(struct proxy_server *srv);
/** A response from the destination reaches a client: the first is logged, with its delay. */
void proxy_switch_served(struct proxy_server *srv);

/* buf.c */
/* Segments a frame may span before it is made contiguous (a copy): a 1 MiB
 * Fetch response arrives in a few hundred evbuffer chains. 16 bytes each. */
#define PROXY_MAX_IOV 512
/**
 * Point `iov` at bytes [off, off+len) of `buf` without copying (the range is
 * made contiguous only when it spans more than `max` segments). Returns the
 * segment count or -1. The iov is valid until `buf` changes.
 */
int proxy_buf_iov(struct evbuffer *buf, size_t off, size_t len, struct codec_iov *iov, int max);

/* conn.c, conn_frames.c, conn_io.c */
void proxy_conn_accept(struct proxy_listener *lst, evutil_socket_t fd,
		       const struct sockaddr *sa, int salen);
/**
 * Close the pair: nothing moves any more (CLOSING), the free happens from the
 * close event, never inside a callback that may still touch `c`.
 */
void proxy_conn_close(struct proxy_conn *c, enum proxy_close_cause cause);
/**
 * A pair over two connected plaintext sockets, OPEN at once (tests: the
 * upstream is a socketpair, not a broker). NULL on failure. Loop thread.
 */
struct proxy_conn *proxy_conn_new_fds(struct proxy_server *srv, evutil_socket_t client_fd,
				      evutil_socket_t upstream_fd);
/**
 * The server's pair whose id is `id` (a timer finds its connection again
 * this way: it may be gone by then), or NULL. O(connections); loop thread.
 */
struct proxy_conn *proxy_conn_by_id(struct proxy_server *srv, uint64_t id);
/** Free the pair now (server teardown, the close event). */
void proxy_conn_free(struct proxy_conn *c);
/** Stop reading, send what is owed to the client, then close (at once when LINGERING). */
void proxy_conn_drain_close(struct proxy_conn *c, enum proxy_close_cause cause);
/** Re-check backpressure marks after held bytes or buffers changed. */
void proxy_conn_update_flow(struct proxy_conn *c);
/**
 * Whether the pair has anything in flight (limits.client_idle_ms never
 * closes it then): a request awaiting its response (held, streaming, ready
 * or internal included), a frame half through either way, bytes queued
 * toward either side, or reads paused by backpressure. Pure; loop thread.
 */
bool proxy_conn_busy(const struct proxy_conn *c);
/**
 * The idle decision at `now_ms` for a timeout of `idle_ms` (> 0): 0 when the
 * pair is idle and has been for `idle_ms` (close it), else milliseconds
 * until the next check. A busy pair counts as active now (c->last_io_ms is
 * set to `now_ms`). Loop thread.
 */
int64_t proxy_conn_idle_left(struct proxy_conn *c, int idle_ms, int64_t now_ms);
/** (Re)arm the idle check of an OPEN pair from srv->conf (after a reload); 0 disarms. */
void proxy_conn_idle_arm(struct proxy_conn *c);

/* internal.c: syncgate's own requests on a client's upstream connection */
/** Whether an internal request of `api_key` awaits its response on `c`. */
bool proxy_internal_in_flight(const struct proxy_conn *c, int16_t api_key);
/**
 * Queue `frame` (size prefix included, correlation id -1) upstream behind an
 * INTERNAL FIFO entry: its response is consumed, never sent. 0 or -1.
 */
int proxy_internal_send(struct proxy_conn *c, const uint8_t *frame, size_t len,
			int16_t api_key, int16_t version);
/** Start the keepalive timer (upstream.keepalive_ms, read at each tick). 0 or -1. */
int proxy_keepalive_start(struct proxy_server *srv);

/* retried.c: a retry of a batch the source already appended (while the failover's fence stands) */
/**
 * A Produce whose every partition retries a remembered batch, while a topic
 * of it is fenced (never after the switch): answered here with the source's
 * offsets and held by the gate, never forwarded nor refused. 1 answered (the
 * frame consumed from `in`), 0 go on, -1 close (ENOMEM). Loop thread.
 */
int proxy_retried_produce(struct proxy_conn *c, struct evbuffer *in, size_t len, const struct codec_request_header *h,
			  int16_t wire_version, const struct codec_produce_request *req);

/* fifo.c */
/** A new IN_FLIGHT entry at the tail of c's FIFO (arrival_ms now); NULL on ENOMEM. */
struct proxy_entry *proxy_entry_new(struct proxy_conn *c, enum proxy_entry_kind kind);
/**
 * Unlink `e` from c's FIFO and free it with what it owns; what hold.c or
 * clamp.c attached goes first through e->release (a gate wait is
 * cancelled, held bytes given back).
 */
void proxy_entry_free(struct proxy_conn *c, struct proxy_entry *e);
/**
 * The one place an entry's state changes: logs the transition at debug.
 * READY counts `out` in the queued-bytes caps until it is flushed.
 */
void proxy_entry_set_state(struct proxy_conn *c, struct proxy_entry *e, enum proxy_entry_state s);
/** Count `n` more bytes of `e->out` as queued (a streamed response behind the head). */
void proxy_entry_queue(struct proxy_conn *c, struct proxy_entry *e, size_t n);
/** Move every READY entry at the head of the FIFO to the client, in order. */
void proxy_fifo_flush(struct proxy_conn *c);
/* Move `n` bytes from the front of `src` to the client (`to_client`) or the upstream: to the
 * socket at once when its output is empty and the pair allows it, the rest (all, otherwise) into
 * the bufferevent's output behind what waits there (write_through.c). Loop thread. */
void proxy_write_through(struct proxy_conn *c, bool to_client, struct evbuffer *src, size_t n);
/**
 * Encode `resp` as the whole response frame to the Produce request `h`
 * (size prefix, CorrelationId, the flexible header's empty tags, body) at
 * the end of `out`; `*hdr_len` = the header's bytes (4 or 5). 0, or -1 on
 * ENOMEM or an unencodable response. Loop thread.
 */
int proxy_fifo_produce_frame(struct proxy_conn *c, const struct codec_request_header *h, int16_t wire_version,
			     const struct codec_produce_response *resp, struct evbuffer *out, size_t *hdr_len);
/**
 * Answer the Produce request `h` (sent at `wire_version`) with `resp`,
 * written by syncgate, never forwarded: a READY entry at the tail of c's
 * FIFO holding the encoded frame (CorrelationId, the flexible header's
 * empty tags). `resp` stays the caller's. 0, or -1 on ENOMEM or an
 * unencodable response (nothing queued). Loop thread.
 */
int proxy_fifo_answer_produce(struct proxy_conn *c, const struct codec_request_header *h, int16_t wire_version,
			      const struct codec_produce_response *resp);
/**
 * proxy_fifo_answer_produce with every partition of `req` refused with
 * `code` and, per topic, the message `topic_msg(arg, topic, buf, n)` writes
 * into `buf` (n bytes). 0, or -1 (nothing queued). Loop thread.
 */
int proxy_fifo_refuse_produce(struct proxy_conn *c, const struct codec_request_header *h, int16_t wire_version,
			      const struct codec_produce_request *req, int16_t code,
			      void (*topic_msg)(void *arg, const struct codec_produce_topic_req *t, char *buf, size_t n),
			      void *arg);

/* request.c: one complete client frame of `len` body bytes at the head of `in` */
/** Count a client request of `len` body bytes in the metrics (`produce`: a Produce). */
void proxy_request_count(struct proxy_conn *c, size_t len, bool produce);
/** Count an acks=0 Produce request. */
void proxy_request_count_acks0(void);
/** Raw SASL token exchanges after SaslHandshake v0 for `mechanism`; -1 unknown. */
int proxy_sasl_raw_exchanges(const char *mechanism);
int proxy_request_handle(struct proxy_conn *c, struct evbuffer *frame, size_t len);

/* response.c: one complete upstream frame */
int proxy_response_handle(struct proxy_conn *c, struct evbuffer *frame, size_t len);
/**
 * A response of `len` body bytes starts at the head of `in` (not all there):
 * stream it when nothing in it is rewritten but the tail tags of Fetch v16+
 * (stream.c). Returns 1 when the stream started (c->from_upstream), 2 when it must be
 * buffered whole, 0 when more bytes are needed to decide, -1 on a bad frame.
 */
int proxy_response_stream_start(struct proxy_conn *c, struct evbuffer *in, size_t len);

/* stream.c: responses forwarded as they arrive, records spliced */
/* Frames above this are streamed when nothing but tail tags is rewritten. */
#define PROXY_STREAM_MIN (64u << 10)
/*
 * Produce requests above this stream upstream; smaller ones are buffered
 * whole. Measured (docs/benchmarks.md, 2026-12-01): a producer's requests are
 * ≤ 1 MiB (max.request.size) of ~16 KiB batches, and walking them batch by
 * batch costs more than the copy it could save (the client input is rarely
 * empty, so there is nothing to splice); streaming pays off for large
 * requests, and bounds memory for those above limits.max_frame_bytes.
 */
#define PROXY_STREAM_MIN_REQUEST (1u << 20)

/* hold.c, fence.c, clamp.c — the gate on the data path: proxy/gated.h (included below) */
/* client.c: who the client is, and the answer to its timed-out held Produce */
#define PROXY_ANSWER_ERROR 0   /* the sync error code (down-mapped), the KIP's behaviour */
#define PROXY_ANSWER_HOLD (-1) /* no answer at the request's deadline: hold to gate.max_hold_ms */
/**
 * Learn the client's software name and version from an ApiVersions v3+
 * request, or (until then) its client id from any request header. `iov`
 * covers the frame from its header on; `in` holds the whole frame.
 */
void proxy_client_note(struct proxy_conn *c, struct evbuffer *in, size_t len,
		       const struct codec_request_header *h, const struct codec_iov *iov, int niov);
/**
 * How a held Produce of this client that times out is answered
 * (`gate.timeout_answers`): PROXY_ANSWER_ERROR, PROXY_ANSWER_HOLD, or an
 * error code (> 0) sent as it is.
 */
int proxy_client_timeout_answer(const struct proxy_conn *c);

/* rewrite.c */
/** codec_endpoint_fn for this server's advertised addresses. */
int proxy_advertise_endpoint(void *srv, int32_t node_id, const char *host, int32_t port,
			     const char **out_host, int32_t *out_port);

/* topic_ids.c, topic_lookup.c: proxy/topic_ids.h */

#include "proxy/gated.h"

#endif
