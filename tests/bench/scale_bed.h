/*
 * tests/bench/scale_bed.h — the stand-in scale bed (scale_bed.c): librdkafka
 * mock clusters as the source and the destinations, the real syncgate binary
 * in front of the source, a paced producer through syncgate and a copier that
 * plays the offset-preserving mirror. Shared by scale_bed.c (orchestration
 * and report), scale_bed_sg.c (the syncgate child process and its figures)
 * and scale_bed_load.c (producer, copier, per-record timestamps).
 */
#ifndef SYNCGATE_TESTS_BENCH_SCALE_BED_H
#define SYNCGATE_TESTS_BENCH_SCALE_BED_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <stddef.h>

#define BED_MAX_MIRRORS 3
#define BED_TOPIC "scale"

/* Monotonic clock, nanoseconds. */
int64_t bed_now_ns(void);

/* ---- the syncgate child (scale_bed_sg.c) -------------------------------- */

/* What to write into syncgate's YAML: the source mock broker (node id 1) and
 * one destination bootstrap per mirror (mirror i is named "d<i+1>"). Strings
 * are borrowed. */
struct sg_spec {
	const char *binary;     /* path of the syncgate executable */
	const char *dir;        /* directory for syncgate.yaml and syncgate.log (exists) */
	const char *source;     /* host:port of the source mock's broker */
	const char *dst[BED_MAX_MIRRORS];
	int mirrors;
	const char *progress;   /* "poll" or "tail" */
};

/* A running syncgate: its pid and the ports chosen for it. */
struct sg_proc {
	pid_t pid;
	int port;       /* Kafka listener (127.0.0.1) */
	int admin_port; /* admin HTTP (127.0.0.1) */
};

/* Writes the config, starts syncgate (stderr to DIR/syncgate.log; it gets
 * SIGKILL if this process dies) and waits up to `timeout_ms` for both
 * listeners. 0, or -1 with a message on stderr (the child is stopped then). */
int sg_start(const struct sg_spec *s, struct sg_proc *out, int timeout_ms);
/* SIGTERM, up to 10 s for it to exit, then SIGKILL; reaps it. Returns its
 * wait status, or -1 if it had already gone (out->pid 0 after). */
int sg_stop(struct sg_proc *p);
/* Whether the child is still running (reaps it if not). */
bool sg_alive(struct sg_proc *p);
/* utime+stime of the process, seconds (-1 if unreadable). */
double sg_cpu_s(pid_t pid);
/* VmRSS of the process, KiB (-1 if unreadable). */
long sg_rss_kib(pid_t pid);
/* GET `path` on the admin listener: a malloc'd NUL-terminated body (caller
 * frees), NULL on failure. */
char *sg_http_get(int admin_port, const char *path);
/* Sum of the samples of metric `name` (exact family name, no suffix) whose
 * label set contains every `"..."`-free substring of `labels` separated by
 * ',' (NULL or "": all). `text` is a /metrics body. */
double sg_metric_sum(const char *text, const char *name, const char *labels);
/* Number of mirrors reporting topic BED_TOPIC effective SYNC in the admin
 * /v1/mirrors answer (-1 if the admin call failed). */
int sg_sync_count(int admin_port);

/* A Prometheus histogram summed over its label sets: cumulative counts per
 * upper bound `le` (seconds), ascending. */
#define SG_HIST_MAX 64
struct sg_hist {
	int n;
	double le[SG_HIST_MAX];
	double cum[SG_HIST_MAX];
	double count;
	double sum;
};
/* Parse histogram family `name` out of a /metrics body (empty if absent). */
void sg_hist_read(const char *text, const char *name, struct sg_hist *h);
/* Upper bound (seconds) of the bucket holding quantile q of (b − a); -1 if
 * empty, +inf as 1e300. */
double sg_hist_quantile(const struct sg_hist *a, const struct sg_hist *b, double q);

/* ---- the bed's Kafka client (scale_bed_wire.c) -------------------------- */

/* A growable byte buffer; `oom` sticks once an append failed. Zero it to
 * start; free(data) when done. */
struct wire_buf {
	uint8_t *data;
	size_t len, cap;
	bool oom;
};
/* One partition of a Produce request: `count` records in one batch. */
struct wire_part {
	int32_t partition;
	int32_t count;
};
/* One partition of an answer: Produce (base offset) or ListOffsets (offset). */
struct wire_result {
	int32_t partition;
	int16_t err;
	int64_t offset;
};
/* Encode a Produce v3 (acks=all, no transaction) of `n` partitions of
 * `topic`, `parts[i].count` records of `record_bytes` bytes of `value` each,
 * into b (replacing its content). */
void wire_produce(struct wire_buf *b, int32_t corr, const char *topic, const struct wire_part *parts, int n,
		  int record_bytes, const char *value, int32_t timeout_ms);
/* Encode a ListOffsets v1 (latest) of `n` partitions of `topic` into b. */
void wire_list_offsets(struct wire_buf *b, int32_t corr, const char *topic, const int32_t *parts, int n);
/* Parse a Produce v3 (api 0) or ListOffsets v1 (api 2) response body (b of
 * wire_read) into out[0..max): the number of partitions, -1 if malformed. */
int wire_parse(const uint8_t *body, size_t len, int16_t api, struct wire_result *out, int max);
/* A blocking TCP connection (TCP_NODELAY) to host:port; -1 on failure. */
int wire_connect(const char *hostport);
/* Write the whole buffer; 0 or -1. */
int wire_write(int fd, const struct wire_buf *b);
/* Read one response frame's body (correlation id first) into b; 0 or -1. */
int wire_read(int fd, struct wire_buf *b);
/* The correlation id of a body read by wire_read. */
int32_t wire_corr(const struct wire_buf *b);

/* ---- the load (scale_bed_load.c) ----------------------------------------- */

/* How the load runs. `rate` records/s of `record_bytes` each, round-robin
 * over `partitions`; the copier copies what it finds on the source to every
 * destination after `delay_ms`. Strings borrowed. */
struct load_spec {
	int partitions;
	int mirrors;
	const char *via;                   /* bootstrap of syncgate */
	const char *source;                /* bootstrap of the source mock (direct) */
	const char *dst[BED_MAX_MIRRORS];  /* bootstraps of the destination mocks */
	int rate;
	int record_bytes;
	int delay_ms;
	int linger_ms;                     /* the producer sends what is due every linger_ms, one
					    * request (the Java producer's linger.ms) */
	int64_t max_records;               /* capacity of the record table */
};

struct bed_load; /* opaque: the clients, the threads and the record table */

/* Connects (to syncgate, the source mock and every destination mock) and
 * starts the copier. NULL with a message on failure. */
struct bed_load *load_new(const struct load_spec *s);
/* Produces at the rate for `seconds`, through syncgate (`direct` false) or
 * straight to the source mock; returns the index of the first record and
 * sets *end to one past the last. Blocks for the phase's duration. */
int64_t load_phase(struct bed_load *l, bool direct, double seconds, int64_t *end);
/* Waits up to `timeout_ms` for every record produced so far to be answered
 * and copied to every destination. true when all are. */
bool load_drain(struct bed_load *l, int timeout_ms);
/* Stops the copier and destroys the clients. */
void load_free(struct bed_load *l);

/* Figures over records [from, to). Latencies in ms (-1: none). */
struct load_stats {
	int64_t records;     /* produced in the range */
	int64_t acked;       /* answered with success */
	int64_t failed;      /* answered with an error */
	int first_err;       /* Kafka error code of the first failure */
	int64_t unanswered;
	double ack_p50, ack_p99, ack_max;       /* send → ack */
	double copy_p50, copy_p99;              /* send → on every destination */
	/* on every destination → ack: from the copier's last delivery report (a
	 * late bound for "on the destination": the ack can come first, < 0) and
	 * from the moment the copies were sent (an early bound) */
	double share_p50, share_p99, share_max;
	double sent_p50, sent_p99;
	int64_t share_n;     /* records with both timestamps */
	int64_t early;       /* acknowledged before the copier had even sent every copy: false acks */
	double span_s;       /* first send → last send, seconds */
};
void load_stats(struct bed_load *l, int64_t from, int64_t to, struct load_stats *st);

/* Offset checks over the whole run: answers (source and destinations) whose
 * offset was not the one expected, and copies that failed. */
struct load_checks {
	int64_t src_offset_mismatch;
	int64_t dst_offset_mismatch;
	int64_t dst_failed;
	int64_t copied;   /* records on every destination */
	int64_t conn_errors; /* connections lost, answers out of order */
};
void load_checks(struct bed_load *l, struct load_checks *c);

#endif
