/*
 * conf — syncgate's settings and its observability base.
 *
 *  - Configuration: the YAML file (see deploy/systemd/syncgate.yaml and
 *    docs/configuration.md) parsed with libyaml into `struct conf`, driven by
 *    one settings table that gives parsing, defaults, validation and the
 *    reference document. Errors are reported as `file:line:col: message`, all
 *    at once.
 *  - Logging: leveled, one line per event, key=value, to stderr.
 *  - Metrics: a small registry of counters, gauges and histograms rendered in
 *    the Prometheus text exposition format.
 *
 * Threads: conf_load() and conf_free() may be called from any thread; a
 * loaded `struct conf` is immutable and shared read-only (a reload builds a
 * new one and swaps it on the event-loop thread). Logging and metric updates
 * are thread-safe (librdkafka and mirror worker threads use them too).
 */
#ifndef SYNCGATE_CONF_H
#define SYNCGATE_CONF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <regex.h>
#include <stdio.h>
#include <sys/types.h>

/* ------------------------------------------------------------------------ */
/* Configuration                                                            */
/* ------------------------------------------------------------------------ */

/** Deployment mode (config `mode`). */
enum conf_mode {
	CONF_MODE_SIDECAR, /* in front of one broker */
	CONF_MODE_GATEWAY, /* one process, one listener port per broker id */
};

/** Offset strategy of a mirror (config `mirrors[].offsets`). */
enum conf_offsets {
	CONF_OFFSETS_PRESERVED, /* destination offsets == source offsets */
	CONF_OFFSETS_MM2,       /* MirrorMaker 2 offset-syncs topic */
};

/** How `preserved` progress is gathered (config `mirrors[].progress`). */
enum conf_progress {
	CONF_PROGRESS_POLL, /* ListOffsets(latest) via offsets_for_times */
	CONF_PROGRESS_TAIL, /* consumer at the end of gated partitions */
};

/** acks=1 Produce policy (config `gate.acks1`). */
enum conf_acks1 {
	CONF_ACKS1_PASS, /* acks=1 responses are never held */
	CONF_ACKS1_GATE, /* acks=1 is gated like acks=all */
};

/** What the gate holds for transactions (config `gate.transactions`). */
enum conf_txn_gate {
	CONF_TXN_DATA,   /* transactional data acks held like any others; EndTxn passes */
	CONF_TXN_COMMIT, /* transactional data acks pass; EndTxn(commit) held until mirrored */
	CONF_TXN_BOTH,   /* both held */
};

/** Whether to advertise Produce v14 (config `gate.advertise_produce_v14`). */
enum conf_v14 {
	CONF_V14_AUTO,  /* when the broker serves Produce v13 */
	CONF_V14_NEVER,
};

/** Consumers' view of gated topics (config `consumers.clamp`, `mirrors[].consumers`). */
enum conf_consumers {
	CONF_CONSUMERS_CLAMP, /* Fetch/ListOffsets/OffsetForLeaderEpoch clamped to the mirrored HW */
	CONF_CONSUMERS_PASS,  /* answered as the broker does (consumers may see unmirrored records) */
};

/** How a MirrorMaker 2 mirror reads the source (config `mirrors[].mm2_isolation_level`). */
enum conf_isolation {
	CONF_ISOLATION_READ_UNCOMMITTED, /* MM2's default: copies records before their COMMIT */
	CONF_ISOLATION_READ_COMMITTED,   /* exactly-once MM2: copies only committed records */
};

/** A `host:port` pair; host is owned by the enclosing conf. */
struct conf_addr {
	char *host;
	int port;
};

/** TLS settings, for either side (fields unused by a side stay NULL). */
struct conf_tls {
	bool enabled;          /* the `tls:` block is present */
	char *cert;            /* PEM certificate (server side, or client cert) */
	char *key;             /* PEM private key */
	char *client_ca;       /* listener: require client certs signed by this */
	char *ca;              /* upstream: CA bundle to verify the broker */
	bool verify_hostname;  /* upstream: default true */
};

/** One `key: value` librdkafka property (values may come from secrets). */
struct conf_prop {
	char *name;
	char *value;  /* secret-resolved; never log it */
	bool secret;  /* came from ${file:...} or ${env:...} */
};

/** One registered mirror (destination cluster). KIP: "mirror" / link. */
struct conf_mirror {
	char *name;                 /* used by CLI, metrics and error messages */
	char *bootstrap;            /* destination bootstrap servers */
	struct conf_prop *props;    /* librdkafka properties for destination clients */
	size_t nprops;
	char *topic_name;           /* destination topic pattern, CONF_TOPIC_KEY by default */
	enum conf_offsets offsets;
	enum conf_progress progress;
	int poll_interval_ms;       /* default 5 */
	char *mm2_offset_syncs_topic; /* default "mm2-offset-syncs.<name>.internal" */
	enum conf_isolation mm2_isolation_level; /* as MM2 is configured (told, not detected) */
	char **sync_topics;         /* POSIX extended regexes, anchored (whole name) */
	size_t nsync_topics;
	int sync_topic_demote_timeout_ms; /* CONF_DEMOTE_TIMEOUT_MS by default */
	void *sync_topics_re;       /* compiled sync_topics (internal); use conf_mirror_sync_topic() */
	enum conf_consumers consumers; /* whether its progress clamps consumers (default clamp) */
	char **sync_groups;         /* consumer groups whose commits are synchronous: anchored EREs */
	size_t nsync_groups;
	void *sync_groups_re;       /* compiled sync_groups (internal); use conf_mirror_sync_group() */
};

/** The whole configuration. Immutable once loaded. */
struct conf {
	char *path;                 /* file it came from */
	enum conf_mode mode;

	struct conf_addr listen_kafka;  /* listen.kafka */
	struct conf_tls listen_tls;     /* listen.tls */

	struct conf_addr upstream_broker; /* upstream.broker */
	int upstream_connect_timeout_ms;  /* default 5000 */
	int upstream_close_linger_ms;     /* after a client closes, default 10000 */
	int upstream_keepalive_ms;        /* internal request while holds exist; 0 off; default 3000 */
	struct conf_tls upstream_tls;     /* upstream.tls */

	char *advertise_template;   /* advertise.template, "{host}" / "{id}" */
	struct conf_advertise_node {
		int32_t node_id;
		struct conf_addr addr;
	} *advertise_nodes;         /* advertise.nodes (optional explicit map) */
	size_t nadvertise_nodes;
	int advertise_base_port;    /* gateway mode: node N served at base_port + N */

	/* switch.*: serving a mirror's destination after the switch (docs/switchover.md) */
	int switch_base_port;       /* destination node N served at base_port + N; 0: no switch */
	char *switch_host;          /* host advertised for those listeners (default: listen.kafka's) */
	struct conf_tls switch_tls; /* TLS from syncgate to the destination's brokers */

	int64_t max_frame_bytes;                /* default 104857600 */
	int64_t max_held_bytes_per_connection;  /* default 67108864 */
	int64_t max_held_bytes;                 /* default 1073741824 */
	int max_connections;        /* limits.max_connections: client connections; 0 no cap */
	int max_connection_rate;    /* limits.max_connection_rate: accepts per second; 0 no cap */
	int client_idle_ms;         /* limits.client_idle_ms: close idle client connections; 0 off */

	int gate_max_hold_ms;       /* cap on a Produce request's TimeoutMs, default 30000 */
	int gate_max_commit_hold_ms; /* a held OffsetCommit answer's deadline, default 8000 */
	int16_t gate_commit_retriable_code; /* error code of a commit the destinations did not store (14) */
	enum conf_acks1 gate_acks1;
	enum conf_txn_gate gate_transactions; /* gate.transactions, default data */
	int gate_max_txn_commit_hold_ms; /* a held EndTxn(commit) answer's deadline, default 8000 */
	int16_t code_txn_commit_timeout; /* gate.error_codes.txn_commit_timeout, default 51 */
	enum conf_v14 gate_advertise_produce_v14;
	int16_t code_mirror_sync_replication_timeout;         /* default 190 */
	int16_t code_not_enough_remote_replicas_after_append; /* default 191 */
	char *gate_timeout_answers; /* "NAME[/VERSION]=error|hold|CODE, ..."; NULL: error for all */

	struct conf_mirror *mirrors;
	size_t nmirrors;

	enum conf_consumers consumers_clamp;  /* consumers.clamp, default clamp */
	char **consumers_exempt_client_ids;   /* consumers.exempt_client_ids (anchored EREs) */
	size_t nconsumers_exempt_client_ids;
	void *consumers_exempt_re;            /* compiled; use conf_consumer_exempt() */
	char **consumers_exempt_principals;   /* consumers.exempt_principals (anchored EREs) */
	size_t nconsumers_exempt_principals;
	void *consumers_exempt_principals_re; /* compiled; use conf_consumer_exempt_principal() */

	char *state_topic;          /* default "__syncgate_state" */
	int state_replication_factor; /* default 3 */

	struct conf_prop *source_props; /* source.properties: librdkafka properties of syncgate's
					 * own source clients (secret-resolved) */
	size_t nsource_props;

	struct conf_addr admin_listen; /* default 127.0.0.1:9464 */
	int admin_max_connections;  /* concurrent admin HTTP connections, default 64 */
	struct conf_tls admin_tls;     /* admin.tls: HTTPS (and mTLS) on admin.listen */
	char *admin_token_file;     /* NULL: mutating admin calls refused */

	int log_level;              /* enum log_level */
};

/** One configuration error, `file:line:col: message`. */
struct conf_error {
	int line, col;  /* 1-based; 0 when not tied to a position */
	char *message;
};

/** The errors of one failed load; print with conf_errors_print(). */
struct conf_errors {
	char *path;
	struct conf_error *v;
	size_t n;
};

/**
 * Parse and validate the YAML file at `path`.
 * Returns a new conf (caller frees with conf_free()) or NULL with every error
 * found appended to `errs` (caller frees with conf_errors_free()); `errs`
 * starts zeroed ({0}), its `path` is set to `path` if still NULL; NULL
 * `errs` discards the errors. Defaults are applied; computed defaults:
 * advertise_template = "{host}:<listen_kafka.port>", mirrors[].
 * mm2_offset_syncs_topic = "mm2-offset-syncs.<name>.internal".
 * Secrets (`${file:PATH}`, `${env:NAME}`, in mirrors[].properties and source.properties) are
 * resolved here; files named by TLS and token settings must be readable.
 * Blocking file I/O; any thread (not the event loop on a reload: load on a
 * worker, swap on the loop).
 */
struct conf *conf_load(const char *path, struct conf_errors *errs)
	__attribute__((warn_unused_result));

/** Same as conf_load() on an in-memory document (tests); `name` labels errors. */
struct conf *conf_load_string(const char *name, const char *yaml, size_t len,
			      struct conf_errors *errs)
	__attribute__((warn_unused_result));

/** Free a conf from conf_load(); NULL is fine. Secret values are zeroed first. */
void conf_free(struct conf *c);

/**
 * Print each error as `file:line:col: message\n` to stderr (an error with no
 * position, line == 0, prints as `file: message`). Errors are kept sorted by
 * position. Any thread.
 */
void conf_errors_print(const struct conf_errors *errs);
/** Same as conf_errors_print() to `out`. */
void conf_errors_write(const struct conf_errors *errs, FILE *out);
/** Free the messages and path; `errs` itself is the caller's and is reset to empty. */
void conf_errors_free(struct conf_errors *errs);
/**
 * Append one error (printf-style message; never pass a secret value).
 * `line`/`col` 1-based, 0 for none. Out of memory: the error is dropped and
 * a fixed "out of memory" entry is kept instead. Any thread (one `errs` per
 * thread).
 */
void conf_errors_add(struct conf_errors *errs, int line, int col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/**
 * The body of a printf-style message setter: inside a variadic function
 * whose last named parameter is `fmt`, format its arguments into the char
 * array `buf` (cut to sizeof(buf) − 1 characters, always NUL-terminated).
 * `buf` must be an array, not a pointer. Any thread.
 */
#define CONF_FORMAT_ARGS(buf, fmt)                                \
	do {                                                      \
		va_list conf_fa_ap;                               \
		va_start(conf_fa_ap, fmt);                        \
		vsnprintf((buf), sizeof(buf), (fmt), conf_fa_ap); \
		va_end(conf_fa_ap);                               \
	} while (0)

/**
 * Whether a librdkafka property of this name holds a secret whatever its
 * source (`sasl.password`, `ssl.key.password`, `*.secret`, PEM key
 * material, ...): its value is never logged nor printed. Any thread.
 */
bool conf_prop_name_sensitive(const char *name);

/** True when `client_id` matches consumers.exempt_client_ids (NULL never does). Any thread. */
bool conf_consumer_exempt(const struct conf *c, const char *client_id);

/**
 * True when a client's principal matches consumers.exempt_principals: a
 * pattern matches the whole RFC 2253 subject of its TLS certificate
 * (`subject`, e.g. "CN=mm2,O=Example", Kafka's default SSL principal name) or
 * a name alone (`name`: the certificate's common name, or the SASL user).
 * Either may be NULL. Any thread.
 */
bool conf_consumer_exempt_principal(const struct conf *c, const char *subject, const char *name);

/** In `mirrors[].topic_name`: the source topic name. */
#define CONF_TOPIC_KEY "{topic}"
/** Default of `mirrors[].sync_topic_demote_timeout_ms`, milliseconds. */
#define CONF_DEMOTE_TIMEOUT_MS 30000
/** `progress: poll`: how long a destination leader is asked back to back after
 * a held partition's HW moved or a new record was held, before the pauses
 * that `mirrors[].poll_interval_ms` caps (mirror/lane.c), milliseconds. */
#define CONF_POLL_BURST_MS 20

/** The mirror's destination topic pattern (`topic_name`, or its default). Any thread. */
const char *conf_mirror_topic_name(const struct conf_mirror *m);

/**
 * The mirror's MirrorMaker 2 offset-syncs topic: `mm2_offset_syncs_topic`,
 * or its default "mm2-offset-syncs.<name>.internal". malloc'd (caller
 * frees); NULL on ENOMEM. Any thread.
 */
char *conf_mirror_offset_syncs_topic(const struct conf_mirror *m);

/** `sync_topic_demote_timeout_ms`, or its default when unset (≤ 0), ms. Any thread. */
int conf_mirror_demote_timeout_ms(const struct conf_mirror *m);

/**
 * Compile one `sync_topics` pattern (or any topic regex) as a POSIX ERE
 * anchored to the whole name, "^(pattern)$", into `re` (regfree() it).
 * Returns 0, or the regcomp() error with its text in `why` (`n` bytes).
 * The one place topic regexes are compiled. Any thread.
 */
int conf_topic_regex_compile(regex_t *re, const char *pattern, char *why, size_t n);

/**
 * Compile every `sync_topics` pattern of `m` into a new array (*out, *nout;
 * free with conf_topic_regexes_free()) — for a thread that outlives the conf
 * it was started with. 0, or -1 (logged) on a bad pattern or ENOMEM. Any thread.
 */
int conf_mirror_sync_topics_compile(const struct conf_mirror *m, regex_t **out, size_t *nout);
/** The same for `sync_groups` (consumer group ids). */
int conf_mirror_sync_groups_compile(const struct conf_mirror *m, regex_t **out, size_t *nout);
/** Whether `topic` matches one of `n` compiled regexes. Any thread. */
bool conf_topic_regexes_match(const regex_t *re, size_t n, const char *topic);
void conf_topic_regexes_free(regex_t *re, size_t n);

/**
 * Whether a mirror worker serving `a` (under conf `ca`) must restart to serve
 * `b` (under `cb`): some setting the table marks CONF_F_WORKER differs.
 * Any thread.
 */
bool conf_mirror_worker_changed(const struct conf *ca, const struct conf_mirror *a,
				const struct conf *cb, const struct conf_mirror *b);

/**
 * Whether `topic` (a source topic name) matches one of the mirror's
 * `sync_topics` (each an anchored POSIX ERE, compiled at load). Any thread.
 */
bool conf_mirror_sync_topic(const struct conf_mirror *m, const char *topic);

/**
 * Whether consumer group `group` matches one of the mirror's `sync_groups`
 * (anchored POSIX EREs, compiled at load): its OffsetCommit answers wait
 * until the mirror's destination stores the same commit. Any thread.
 */
bool conf_mirror_sync_group(const struct conf_mirror *m, const char *group);

/**
 * Write the generated configuration reference (markdown, the content of
 * docs/configuration.md) to `out`; wire it to `syncgate
 * --print-config-reference`. Any thread.
 */
void conf_reference_write(FILE *out);

/**
 * Which settings differ between `old` and `new` that a reload cannot apply
 * live (the settings table marks each one live or restart). Writes their
 * names, comma-separated, into `buf` (truncated to `n`) and returns how many
 * there are; 0 means the new conf can be swapped in as is. Any thread.
 */
size_t conf_reload_check(const struct conf *old, const struct conf *new_conf,
			 char *buf, size_t n);

/**
 * conf_reload_check(), and also set each restart setting that differs back to
 * its value in `old` (deep copies into `new_conf`), so that `new_conf` can be
 * applied by a reload without changing anything that needs a restart.
 * Returns how many were kept, or -1 when out of memory (then `new_conf` is
 * still a valid conf to free, but must not be applied). Any thread.
 */
ssize_t conf_reload_keep_restart(const struct conf *old, struct conf *new_conf,
				 char *buf, size_t n)
	__attribute__((warn_unused_result));

/**
 * Parse `host:port` or `[ipv6]:port` (port 1..65535, or 0 when `port0`).
 * On success fills `out` (out->host is malloc'd, caller frees) and returns
 * NULL; otherwise returns a static reason ("missing port", ...). Any thread.
 */
const char *conf_addr_parse(const char *s, bool port0, struct conf_addr *out)
	__attribute__((warn_unused_result));
/** Format `a` as `host:port`, bracketing IPv6 hosts, into `buf`; returns buf. */
char *conf_addr_format(const struct conf_addr *a, char *buf, size_t n);

/**
 * The syncgate address that fronts broker `node_id`, whose own advertised
 * host is `host`, per advertise.* (sidecar: `advertise.nodes`, else the
 * template, port defaulting to listen.kafka's; gateway: port base_port + id).
 * Writes the host into `out` and returns the port, or -1 when `out` is too
 * small. Thread-agnostic.
 */
int conf_advertised_addr(const struct conf *cf, int32_t node_id, const char *host,
			 char *out, size_t outsz);

/* ------------------------------------------------------------------------ */
/* Logging                                                                  */
/* ------------------------------------------------------------------------ */

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG, LOG_LEVEL_COUNT };

/** Set the threshold (default LOG_INFO); messages above it are dropped. Any thread. */
void conf_log_set_level(enum log_level lvl);
enum log_level conf_log_get_level(void);
/** Parse "error|warn|info|debug"; returns -1 on anything else. */
int conf_log_level_parse(const char *s);
/** "error", "warn", "info", "debug" (the config spelling); "?" if out of range. */
const char *conf_log_level_str(enum log_level lvl);
/** Send log lines to `fd` instead of stderr (2); tests use a pipe. Any thread. */
void conf_log_set_fd(int fd);

/**
 * Write one line: `<iso8601 time> <LEVEL> <event> key=value ...`.
 * `fmt` holds the key=value part; values with spaces should be quoted by the
 * caller ("reason=\"%s\""). Any thread; lines never interleave.
 */
void conf_log(enum log_level lvl, const char *event, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define LOG_E(event, ...) conf_log(LOG_ERROR, event, __VA_ARGS__)
#define LOG_W(event, ...) conf_log(LOG_WARN, event, __VA_ARGS__)
#define LOG_I(event, ...) conf_log(LOG_INFO, event, __VA_ARGS__)
#define LOG_D(event, ...) \
	do { if (conf_log_get_level() >= LOG_DEBUG) conf_log(LOG_DEBUG, event, __VA_ARGS__); } while (0)

/* ------------------------------------------------------------------------ */
/* Metrics (Prometheus text exposition)                                     */
/* ------------------------------------------------------------------------ */

enum metric_type { METRIC_COUNTER, METRIC_GAUGE, METRIC_HISTOGRAM };

/** One time series (family + label values). Never freed; handles stay valid. */
struct metric;

/**
 * Find or create a series. `name` is the family (e.g.
 * "syncgate_frames_total"), `help` its HELP text (first registration wins),
 * `labels` the rendered label set without braces (e.g.
 * `api_key="Produce"`, or "" for none); label values must already be
 * escaped. Histograms use `buckets` (ascending upper bounds, +Inf implied);
 * NULL for other types. A family holds at most 1000 series: past that the
 * extra series collapse into one with labels `overflow="true"` (bounded
 * cardinality). Any thread; cache the handle on hot paths.
 */
struct metric *metric_get(enum metric_type type, const char *name, const char *help,
			  const char *labels, const double *buckets, size_t nbuckets);

/** Counter/gauge add (gauges may go down). Lock-free. Any thread. */
void metric_add(struct metric *m, double v);
/** Gauge set. Lock-free. Any thread. */
void metric_set(struct metric *m, double v);
/** Histogram observation. Lock-free. Any thread. */
void metric_observe(struct metric *m, double v);
/** Current value (counter/gauge) — for tests and /readyz. */
double metric_value(const struct metric *m);

/**
 * Render every series in the text exposition format (version 0.0.4) into a
 * malloc'd NUL-terminated string; caller frees. NULL when out of memory.
 * Families and series appear in registration order. Any thread (takes the
 * registry mutex; updates are not blocked).
 */
char *metrics_render(void);

/**
 * Escape a label value for metric_get()'s `labels` (backslash, double quote
 * and newline become \\, \" and \n). Writes at most `n` bytes including the
 * NUL into `out` (truncating on a character boundary); returns `out`.
 * Any thread.
 */
char *metric_label_escape(char *out, size_t n, const char *value);

/** One unlabelled counter or gauge series of a module, for metric_defs_get(). */
struct metric_def {
	struct metric **out;    /* where the handle goes */
	enum metric_type type;  /* METRIC_COUNTER or METRIC_GAUGE */
	const char *name;       /* family name */
	const char *help;       /* HELP text (first registration wins) */
};

/**
 * Register a module's unlabelled counter and gauge series once: does nothing
 * when `*defs[0].out` is set already, else metric_get()s each of the `n`
 * rows in order (their order in the exposition). Not locked against a
 * concurrent first call: call from the one thread that owns the handles.
 */
void metric_defs_get(const struct metric_def *defs, size_t n);
/** metric_defs_get() over a whole array of struct metric_def. */
#define METRIC_DEFS_GET(defs) metric_defs_get((defs), sizeof(defs) / sizeof((defs)[0]))

/**
 * Register one counter or gauge family with its HELP and `n` series:
 * `out[i]` is the series labelled `prefix,key="values[i]"` (`prefix` is a
 * rendered label set without braces, already escaped, or NULL / "" for
 * none; `values[i]` is escaped here). Series appear in the exposition in
 * the order of `values`. Any thread.
 */
void metric_family_get(enum metric_type type, const char *name, const char *help, const char *prefix,
		       const char *key, const char *const *values, size_t n, struct metric **out);

/* ------------------------------------------------------------------------ */
/* Settings table (conf/ internals; read by the reference generator, the    */
/* reload check and tests). One row per key; see conf/settings.c.           */
/* ------------------------------------------------------------------------ */

enum conf_type {
	CONF_T_SECTION, /* a mapping of further keys; `offset` (if any) = bool "present" */
	CONF_T_LIST,    /* `mirrors`: a list of mappings (struct conf_mirror) */
	CONF_T_STRING,  /* char * */
	CONF_T_INT,     /* int, bounded by min/max */
	CONF_T_INT16,   /* int16_t, bounded */
	CONF_T_INT64,   /* int64_t, bounded */
	CONF_T_BOOL,    /* bool: true | false */
	CONF_T_ENUM,    /* an enum stored as int; `names` indexed by value */
	CONF_T_ADDR,    /* struct conf_addr from "host:port" */
	CONF_T_REGEXES, /* char ** + size_t count: list of POSIX ERE */
	CONF_T_PROPS,   /* struct conf_prop * + size_t count: free string map */
	CONF_T_NODES,   /* advertise.nodes: node id -> host:port */
	CONF_T_COUNT
};

#define CONF_F_REQUIRED 0x1u /* must be present when its parent mapping is */
#define CONF_F_LIVE     0x2u /* a reload applies a change without restart */
#define CONF_F_PORT0    0x4u /* CONF_T_ADDR: port 0 (ephemeral) allowed */
#define CONF_F_SECRETS  0x8u /* value may use ${file:PATH} / ${env:NAME} */
#define CONF_F_WORKER   0x10u /* read by the mirror workers: a live change restarts them */
#define CONF_F_NOOFFSET ((size_t)-1)

/** One configuration key. */
struct conf_setting {
	const char *path;   /* "gate.max_hold_ms"; per mirror "mirrors[].name" */
	enum conf_type type;
	size_t offset;      /* into struct conf, or struct conf_mirror for mirrors[].* */
	size_t count_offset;/* CONF_T_REGEXES/PROPS/NODES: the size_t count field */
	unsigned flags;     /* CONF_F_* */
	int64_t min, max;   /* integer bounds (inclusive) */
	const char *def;    /* default as YAML text, NULL: none (or computed, see doc) */
	const char *const *names; /* CONF_T_ENUM: value names, NULL-terminated */
	/* Extra check of a string value; NULL when fine, else a message (may use buf). */
	const char *(*check)(const char *value, char *buf, size_t n);
	const char *doc;    /* one paragraph, markdown */
};

extern const struct conf_setting conf_settings[];
extern const size_t conf_nsettings;
/** Setting by exact path, or NULL. */
const struct conf_setting *conf_setting_find(const char *path);
/**
 * For an unknown `key` under `prefix` (a settings path: "" top level,
 * "gate", "mirrors[]"): the name of the sibling setting closest to it, when
 * within an edit distance of 2 (a swap of two neighbours counts 1) and less
 * than half the key's length; NULL if none. Points into the table. Pure.
 */
const char *conf_setting_near(const char *prefix, const char *key);
/** Whether setting `s` differs between two bases (a struct conf, or a
 * struct conf_mirror for "mirrors[]." settings). Any thread. */
bool conf_setting_differs(const struct conf_setting *s, const void *a, const void *b);
/** Human name of a type for messages and the reference ("an integer"). */
const char *conf_type_str(enum conf_type t);

/**
 * Expand `${file:PATH}` (contents, one trailing newline stripped) and
 * `${env:NAME}` in `in`. Returns a malloc'd string, sets *secret when any
 * reference was expanded; on failure returns NULL with a message in `err`
 * that names the file or variable but never a value. Any thread.
 */
char *conf_secrets_expand(const char *in, bool *secret, char *err, size_t errn)
	__attribute__((warn_unused_result));

#endif
