/*
 * settings.c — the one settings table. Every configuration key is a row:
 * its path, type, storage, bounds, default and documentation. load.c parses
 * and validates with it, reference.c writes docs/configuration.md from it,
 * reload.c compares two confs with it. Add a key here and nowhere else
 * (except the struct field in conf.h).
 */
#include "conf/conf.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- value checks ---- */

static const char *check_file(const char *v, char *buf, size_t n)
{
	if (access(v, R_OK) != 0) {
		snprintf(buf, n, "cannot read '%s': %s", v, strerror(errno));
		return buf;
	}
	return NULL;
}

/* Kafka topic names: [a-zA-Z0-9._-], 1..249 characters. */
static const char *check_topic(const char *v, char *buf, size_t n)
{
	size_t len = strlen(v);
	if (len == 0 || len > 249)
		return "a topic name must have 1 to 249 characters";
	if (strcmp(v, ".") == 0 || strcmp(v, "..") == 0)
		return "'.' and '..' are not topic names";
	for (const char *p = v; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '.' || *p == '_' || *p == '-')) {
			snprintf(buf, n, "invalid character '%c' in topic name (allowed: letters, digits, '.', '_', '-')", *p);
			return buf;
		}
	return NULL;
}

/* Mirror names appear in metric labels, log lines, the state log and CLI
 * arguments: keep them plain. */
static const char *check_mirror_name(const char *v, char *buf, size_t n)
{
	size_t len = strlen(v);
	if (len == 0 || len > 64)
		return "a mirror name must have 1 to 64 characters";
	for (const char *p = v; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '.' || *p == '_' || *p == '-')) {
			snprintf(buf, n, "invalid character '%c' in mirror name (allowed: letters, digits, '.', '_', '-')", *p);
			return buf;
		}
	return NULL;
}

static const char *check_bootstrap(const char *v, char *buf, size_t n)
{
	if (!*v)
		return "empty bootstrap list";
	const char *p = v;
	for (;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		if (len == 0)
			return "empty entry in bootstrap list";
		for (size_t i = 0; i < len; i++)
			if (p[i] == ' ' || p[i] == '\t')
				return "spaces are not allowed in the bootstrap list";
		if (!comma)
			break;
		p = comma + 1;
	}
	(void)buf;
	(void)n;
	return NULL;
}

/* Only the placeholders in `allowed` ("{host}", "{id}", ...) may appear. */
static const char *check_placeholders(const char *v, const char *const *allowed, char *buf, size_t n)
{
	for (const char *p = strchr(v, '{'); p; p = strchr(p + 1, '{')) {
		bool ok = false;
		for (size_t i = 0; allowed[i]; i++)
			if (strncmp(p, allowed[i], strlen(allowed[i])) == 0)
				ok = true;
		if (!ok) {
			const char *end = strchr(p, '}');
			int len = end ? (int)(end - p + 1) : (int)strlen(p);
			snprintf(buf, n, "unknown placeholder '%.*s'", len, p);
			return buf;
		}
	}
	return NULL;
}

static const char *check_template(const char *v, char *buf, size_t n)
{
	static const char *const allowed[] = { "{host}", "{id}", NULL };
	const char *why = check_placeholders(v, allowed, buf, n);
	if (why)
		return why;
	/* Render with sample values; the result must be a host:port. */
	char sample[512];
	size_t o = 0;
	for (const char *p = v; *p && o + 16 < sizeof(sample);) {
		if (strncmp(p, "{host}", 6) == 0) { memcpy(sample + o, "h", 1); o += 1; p += 6; }
		else if (strncmp(p, "{id}", 4) == 0) { memcpy(sample + o, "1", 1); o += 1; p += 4; }
		else sample[o++] = *p++;
	}
	sample[o] = 0;
	struct conf_addr a;
	why = conf_addr_parse(sample, false, &a);
	if (why) {
		snprintf(buf, n, "does not render to host:port (%s)", why);
		return buf;
	}
	free(a.host);
	return NULL;
}

static const char *check_topic_name(const char *v, char *buf, size_t n)
{
	static const char *const allowed[] = { CONF_TOPIC_KEY, NULL };
	const char *why = check_placeholders(v, allowed, buf, n);
	if (why)
		return why;
	if (!strstr(v, CONF_TOPIC_KEY))
		return "must contain " CONF_TOPIC_KEY " (each source topic needs its own destination topic)";
	return NULL;
}

/* gate.timeout_answers: comma-separated `NAME[/VERSION-PREFIX]=error|hold|CODE`. */
static const char *check_timeout_answers(const char *v, char *buf, size_t n)
{
	for (const char *p = v; *p;) {
		while (*p == ',' || *p == ' ')
			p++;
		if (!*p)
			break;
		size_t len = strcspn(p, ",");
		const char *eq = memchr(p, '=', len);
		if (!eq || eq == p) {
			snprintf(buf, n, "'%.*s': expected NAME[/VERSION]=error|hold|CODE", (int)len, p);
			return buf;
		}
		const char *a = eq + 1;
		while (*a == ' ')
			a++;
		size_t alen = len - (size_t)(a - p);
		while (alen > 0 && a[alen - 1] == ' ')
			alen--;
		char *end;
		long code = strtol(a, &end, 10);
		bool word = (alen == 4 && !strncmp(a, "hold", 4)) || (alen == 5 && !strncmp(a, "error", 5));
		if (!word && (alen == 0 || end != a + alen || code < 1 || code > 32767)) {
			snprintf(buf, n, "'%.*s': the answer must be error, hold or an error code 1..32767", (int)len, p);
			return buf;
		}
		p += len;
	}
	return NULL;
}

/* ---- host:port ---- */

const char *conf_addr_parse(const char *s, bool port0, struct conf_addr *out)
{
	const char *host, *colon;
	size_t hlen;
	if (!s || !*s)
		return "empty address";
	if (s[0] == '[') {
		const char *rb = strchr(s, ']');
		if (!rb)
			return "missing ']' after IPv6 address";
		host = s + 1;
		hlen = (size_t)(rb - host);
		if (hlen == 0)
			return "empty host";
		if (rb[1] != ':')
			return "missing port (expected [ipv6]:port)";
		colon = rb + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return "missing port (expected host:port)";
		if (memchr(s, ':', (size_t)(colon - s)))
			return "an IPv6 address must be in brackets ([addr]:port)";
		host = s;
		hlen = (size_t)(colon - s);
		if (hlen == 0)
			return "empty host";
		for (size_t i = 0; i < hlen; i++)
			if (host[i] == ' ' || host[i] == '/' || host[i] == '[' || host[i] == ']')
				return "invalid character in host";
	}
	const char *ps = colon + 1;
	if (!*ps)
		return "missing port (expected host:port)";
	long port = 0;
	for (const char *p = ps; *p; p++) {
		if (*p < '0' || *p > '9')
			return "port is not a number";
		port = port * 10 + (*p - '0');
		if (port > 65535)
			return "port out of range (1..65535)";
	}
	if (port == 0 && !port0)
		return "port out of range (1..65535)";
	out->host = strndup(host, hlen);
	if (!out->host)
		return "out of memory";
	out->port = (int)port;
	return NULL;
}

char *conf_addr_format(const struct conf_addr *a, char *buf, size_t n)
{
	bool v6 = a->host && strchr(a->host, ':');
	snprintf(buf, n, v6 ? "[%s]:%d" : "%s:%d", a->host ? a->host : "", a->port);
	return buf;
}

/* ---- the table ---- */

static const char *const mode_names[] = { "sidecar", "gateway", NULL };
static const char *const offsets_names[] = { "preserved", "mm2", NULL };
static const char *const progress_names[] = { "poll", "tail", NULL };
static const char *const acks1_names[] = { "pass", "gate", NULL };
static const char *const txn_gate_names[] = { "data", "commit", "both", NULL };
static const char *const v14_names[] = { "auto", "never", NULL };
static const char *const consumers_names[] = { "clamp", "pass", NULL };
static const char *const isolation_names[] = { "read_uncommitted", "read_committed", NULL };
static const char *const level_names[] = { "error", "warn", "info", "debug", NULL };

_Static_assert(sizeof(enum conf_mode) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum conf_offsets) == sizeof(int), "enums are stored as int");

#define C(f) offsetof(struct conf, f)
#define M(f) offsetof(struct conf_mirror, f)
#define NONE CONF_F_NOOFFSET
#define SEC(path, off, fl, doc_) { path, CONF_T_SECTION, off, 0, fl, 0, 0, NULL, NULL, NULL, doc_ }
#define MS 1000LL
#define XSTR(x) STR(x)
#define STR(x) #x
#define W (CONF_F_LIVE | CONF_F_WORKER)
#define GiB (1024LL * 1024 * 1024)

const struct conf_setting conf_settings[] = {
	{ "mode", CONF_T_ENUM, C(mode), 0, 0, 0, 0, "sidecar", mode_names, NULL,
	  "`sidecar`: one syncgate in front of one broker (every client connection is paired with a "
	  "connection to `upstream.broker`). `gateway`: one process fronts the whole cluster with one "
	  "listener port per broker id (`advertise.base_port`); for development and small clusters." },

	SEC("listen", NONE, CONF_F_REQUIRED, "Where Kafka clients connect."),
	{ "listen.kafka", CONF_T_ADDR, C(listen_kafka), 0, CONF_F_REQUIRED | CONF_F_PORT0, 0, 0, NULL, NULL, NULL,
	  "Listener address for Kafka clients, `host:port` or `[ipv6]:port` (port 0: any free port)." },
	SEC("listen.tls", C(listen_tls.enabled), 0,
	    "Terminate client TLS. Present (even empty) = TLS on; then `cert` and `key` are required."),
	{ "listen.tls.cert", CONF_T_STRING, C(listen_tls.cert), 0, CONF_F_REQUIRED | CONF_F_LIVE, 0, 0, NULL, NULL, check_file,
	  "PEM server certificate (chain) file. Re-read on reload." },
	{ "listen.tls.key", CONF_T_STRING, C(listen_tls.key), 0, CONF_F_REQUIRED | CONF_F_LIVE, 0, 0, NULL, NULL, check_file,
	  "PEM private key file of `cert`. Re-read on reload." },
	{ "listen.tls.client_ca", CONF_T_STRING, C(listen_tls.client_ca), 0, CONF_F_LIVE, 0, 0, NULL, NULL, check_file,
	  "PEM CA bundle; when set, clients must present a certificate signed by it (mutual TLS)." },

	SEC("upstream", NONE, CONF_F_REQUIRED, "The Kafka broker(s) syncgate forwards to."),
	{ "upstream.broker", CONF_T_ADDR, C(upstream_broker), 0, CONF_F_REQUIRED | CONF_F_WORKER, 0, 0, NULL, NULL, NULL,
	  "Sidecar: the local broker. Gateway: any broker of the cluster (bootstrap). `host:port`." },
	{ "upstream.connect_timeout_ms", CONF_T_INT, C(upstream_connect_timeout_ms), 0, CONF_F_LIVE, 1, 600 * MS, "5000", NULL, NULL,
	  "Timeout of one upstream TCP (+TLS) connect, milliseconds." },
	{ "upstream.close_linger_ms", CONF_T_INT, C(upstream_close_linger_ms), 0, CONF_F_LIVE, 1, 600 * MS, "10000", NULL, NULL,
	  "After a client closes its connection, how long syncgate keeps the upstream connection to finish "
	  "the connect, deliver every byte the client sent and read the responses still owed (then discarded), "
	  "milliseconds. Past it the upstream connection is closed anyway. A client that only shut down its "
	  "write side (plaintext TCP half-close) still gets its responses without this limit; it applies from "
	  "the moment a write to that client fails." },
	{ "upstream.keepalive_ms", CONF_T_INT, C(upstream_keepalive_ms), 0, CONF_F_LIVE, 0, 600 * MS, "3000", NULL, NULL,
	  "While a connection holds Produce responses, syncgate sends the broker an internal ApiVersions "
	  "request on it this often (its response is consumed), so the broker's `connections.max.idle.ms` "
	  "does not close a connection idle only because of the hold. Keep it well below the broker's "
	  "`connections.max.idle.ms`; 0 turns it off." },
	SEC("upstream.tls", C(upstream_tls.enabled), CONF_F_WORKER,
	    "Originate TLS to the broker. Present (even empty) = TLS on, verified against the system trust store unless `ca` is set."),
	{ "upstream.tls.ca", CONF_T_STRING, C(upstream_tls.ca), 0, W, 0, 0, NULL, NULL, check_file,
	  "PEM CA bundle to verify the broker's certificate (default: system trust store)." },
	{ "upstream.tls.cert", CONF_T_STRING, C(upstream_tls.cert), 0, W, 0, 0, NULL, NULL, check_file,
	  "PEM client certificate for mutual TLS to the broker (with `key`)." },
	{ "upstream.tls.key", CONF_T_STRING, C(upstream_tls.key), 0, W, 0, 0, NULL, NULL, check_file,
	  "PEM private key of `cert`." },
	{ "upstream.tls.verify_hostname", CONF_T_BOOL, C(upstream_tls.verify_hostname), 0, W, 0, 0, "true", NULL, NULL,
	  "Check that the broker certificate names the host of `upstream.broker`." },

	SEC("source", NONE, 0,
	    "syncgate's own librdkafka clients on the source cluster: the state log producer and reader, "
	    "the decider consumer group, each mirror's source high-watermark client, the MirrorMaker 2 "
	    "offset-syncs reader and the compatibility probe. Kafka clients' own connections through "
	    "syncgate are not affected (their SASL passes through untouched)."),
	{ "source.properties", CONF_T_PROPS, C(source_props), C(nsource_props), W | CONF_F_SECRETS, 0, 0, NULL, NULL, NULL,
	  "librdkafka properties for syncgate's own source clients, applied on top of what `upstream.broker` "
	  "and `upstream.tls` set: SASL (`security.protocol: sasl_ssl`, `sasl.mechanisms: PLAIN`, "
	  "`SCRAM-SHA-256`, `SCRAM-SHA-512` or `OAUTHBEARER`, `sasl.username`, `sasl.password`, "
	  "`sasl.oauthbearer.*`), TLS and mutual TLS (`ssl.ca.location`, `ssl.certificate.location`, "
	  "`ssl.key.location`, `ssl.key.password`, ...). Values may be secrets: `${file:/path}` or "
	  "`${env:NAME}`; values of secret-named properties (`*password*`, `*secret*`, `*jaas*`, `ssl.key.pem`, "
	  "`sasl.oauthbearer.config`) are never logged. `bootstrap.servers` is not allowed (use "
	  "`upstream.broker`). A reload restarts the mirror workers with new values; the state-log and "
	  "decider clients keep theirs until a restart. Authentication failures are logged "
	  "(`source_auth_failed`) and named by `/readyz`." },

	SEC("advertise", NONE, 0,
	    "How clients see each broker: every broker address in a response is replaced by the syncgate that fronts it."),
	{ "advertise.template", CONF_T_STRING, C(advertise_template), 0, 0, 0, 0, NULL, NULL, check_template,
	  "Address advertised for a broker; `{host}` = the broker's advertised host, `{id}` = its node id. "
	  "Default: `{host}:<port of listen.kafka>`; gateway mode: the host of `listen.kafka` "
	  "(unless it is a wildcard address), port `base_port + id`." },
	{ "advertise.nodes", CONF_T_NODES, C(advertise_nodes), C(nadvertise_nodes), 0, 0, 0, NULL, NULL, NULL,
	  "Explicit map node id → `host:port`, e.g. `{1: \"kafka-1.example.com:19092\"}`; wins over `template` for the ids it names." },
	{ "advertise.base_port", CONF_T_INT, C(advertise_base_port), 0, 0, 1, 65535, NULL, NULL, NULL,
	  "Gateway mode only, and required there: node N is advertised and served at `base_port + N`." },

	SEC("switch", NONE, 0,
	    "Serving a mirror's destination cluster behind this sidecar's own addresses after "
	    "`syncgate-ctl switch` (or `failover --switch`): see docs/switchover.md. Without "
	    "`switch.base_port` this sidecar refuses to switch and keeps serving the source."),
	{ "switch.base_port", CONF_T_INT, C(switch_base_port), 0, 0, 1, 65535, NULL, NULL, NULL,
	  "After the switch, destination node N is advertised and served at `base_port + N` (a listener "
	  "per node, opened as each node first appears in a response); `listen.kafka` forwards to the "
	  "destination's first bootstrap server. Give every sidecar on a host its own range." },
	{ "switch.host", CONF_T_STRING, C(switch_host), 0, 0, 0, 0, NULL, NULL, NULL,
	  "Host advertised for the destination node listeners (the address clients reach this sidecar "
	  "at). Default: the host of `listen.kafka`; required when that is a wildcard address." },
	SEC("switch.tls", C(switch_tls.enabled), 0,
	    "Originate TLS to the destination's brokers after the switch. Present (even empty) = TLS on, "
	    "verified against the system trust store unless `ca` is set. Client SASL passes through "
	    "unchanged: the destination must accept the clients' credentials."),
	{ "switch.tls.ca", CONF_T_STRING, C(switch_tls.ca), 0, 0, 0, 0, NULL, NULL, check_file,
	  "PEM CA bundle to verify the destination brokers' certificates (default: system trust store)." },
	{ "switch.tls.cert", CONF_T_STRING, C(switch_tls.cert), 0, 0, 0, 0, NULL, NULL, check_file,
	  "PEM client certificate for mutual TLS to the destination (with `key`)." },
	{ "switch.tls.key", CONF_T_STRING, C(switch_tls.key), 0, 0, 0, 0, NULL, NULL, check_file,
	  "PEM private key of `cert`." },
	{ "switch.tls.verify_hostname", CONF_T_BOOL, C(switch_tls.verify_hostname), 0, 0, 0, 0, "true", NULL, NULL,
	  "Check that each destination broker's certificate names the host it is reached at." },

	SEC("limits", NONE, 0, "Memory and frame bounds; past them syncgate stops reading (backpressure). "
	    "Besides these, each connection pair buffers at most a fixed window (about 1 MiB toward "
	    "the client plus one 64 KiB read each way): responses syncgate does not rewrite stream "
	    "through it (record bytes spliced socket to socket when both sides are plaintext), "
	    "whatever their size."),
	{ "limits.max_frame_bytes", CONF_T_INT64, C(max_frame_bytes), 0, 0, 1024, 2147483647LL, "104857600", NULL, NULL,
	  "Largest frame syncgate buffers whole, bytes: every request, and the responses it rewrites "
	  "(Metadata, FindCoordinator, DescribeCluster, ApiVersions, Produce, consumer Fetch responses "
	  "it clamps buffered: v4–v11, or after a response that left records out, with the request's "
	  "`MaxBytes` lowered to fit). A larger one closes the connection with `frame_refused`. Responses streamed "
	  "through (Fetch and every other response not rewritten) have no size cap, nor do responses "
	  "of 64 KiB or less." },
	{ "limits.max_held_bytes_per_connection", CONF_T_INT64, C(max_held_bytes_per_connection), 0, 0, 1024, 1024 * GiB, "67108864", NULL, NULL,
	  "Bytes of held responses and of responses queued behind them (waiting for their turn) per "
	  "client connection; past it the client is not read. At most `max_held_bytes`." },
	{ "limits.max_held_bytes", CONF_T_INT64, C(max_held_bytes), 0, 0, 1024, 1024 * GiB, "1073741824", NULL, NULL,
	  "Bytes of held responses and of responses queued behind them in the whole process; past it "
	  "clients are not read." },
	{ "limits.max_connections", CONF_T_INT, C(max_connections), 0, CONF_F_LIVE, 0, 1000000, "10000", NULL, NULL,
	  "Client connections open at once (each also holds one upstream connection); a connection "
	  "accepted past it is closed at once (`connection_refused` reason=max_connections, "
	  "`syncgate_connections_refused_total`). Connections already open, and their held responses, "
	  "are never affected. 0: no cap." },
	{ "limits.max_connection_rate", CONF_T_INT, C(max_connection_rate), 0, CONF_F_LIVE, 0, 1000000, "0", NULL, NULL,
	  "Client connection attempts accepted per second (a token bucket holding one second's worth); "
	  "past it an accepted connection is closed at once (`connection_refused` reason=max_connection_rate). "
	  "0: no cap." },
	{ "limits.client_idle_ms", CONF_T_INT, C(client_idle_ms), 0, CONF_F_LIVE, 0, 24 * 3600 * MS, "600000", NULL, NULL,
	  "A client connection with nothing in flight (no request awaiting its response, no held "
	  "response, no bytes buffered either way) and no bytes to or from the client for this long, "
	  "milliseconds, is closed with its upstream connection (`client_idle_closed`, "
	  "`syncgate_client_idle_closes_total`), as the broker's `connections.max.idle.ms` (same default) "
	  "would. A connection that holds a Produce response or awaits any response is never closed by "
	  "it. 0: no idle timeout (the broker's own timer still closes an idle upstream connection, and "
	  "its client with it)." },

	SEC("gate", NONE, 0, "The synchronous-mirroring gate on Produce responses."),
	{ "gate.max_hold_ms", CONF_T_INT, C(gate_max_hold_ms), 0, CONF_F_LIVE, 1, 3600 * MS, "30000", NULL, NULL,
	  "Cap on a Produce request's `TimeoutMs`: a held response fails with `mirror_sync_replication_timeout` "
	  "after min(TimeoutMs, max_hold_ms) milliseconds." },
	{ "gate.max_commit_hold_ms", CONF_T_INT, C(gate_max_commit_hold_ms), 0, CONF_F_LIVE, 1, 3600 * MS, "8000", NULL, NULL,
	  "How long the answer to an `OffsetCommit` of a group in a mirror's `sync_groups` is held waiting for "
	  "that mirror's destination to store the same commit, milliseconds. Past it the committed partitions are "
	  "answered `COORDINATOR_LOAD_IN_PROGRESS` (14, retriable: the client commits again; the source's commit "
	  "stands). Keep it below the clients' request timeout (Java 30 s, librdkafka 60 s, franz-go 10 s + "
	  "the request's own)." },
	{ "gate.commit_retriable_code", CONF_T_INT16, C(gate_commit_retriable_code), 0, CONF_F_LIVE, 1, 32767, "14", NULL, NULL,
	  "The error code of the accepted partitions of an `OffsetCommit` the destinations did not store (see "
	  "`max_commit_hold_ms`). 14 `COORDINATOR_LOAD_IN_PROGRESS` by default; see docs/operating.md, Consumer groups, "
	  "for what each client does with it." },
	{ "gate.timeout_answers", CONF_T_STRING, C(gate_timeout_answers), 0, CONF_F_LIVE, 0, 0, NULL, NULL, check_timeout_answers,
	  "How a held Produce that reaches its deadline is answered, per client: a comma-separated list of "
	  "`NAME[/VERSION]=ANSWER`. NAME is the ClientSoftwareName of the client's ApiVersions v3+ request "
	  "(e.g. `apache-kafka-java`, `librdkafka`, `kafka-python`, `kgo`, `sarama`), compared without case, or, "
	  "for a client that sends none (KafkaJS; kafka-python 2.x on its produce connections), its client id, "
	  "whole or up to a `-` (`kafka-python` matches `kafka-python-producer-1`); VERSION, when given, is a "
	  "prefix of ClientSoftwareVersion. ANSWER: `error` (the sync error code, down-mapped to 20 for "
	  "Produce < 14: the KIP's behaviour and the default for every client), `hold` (no answer at the request's "
	  "deadline: the response stays held until the mirrors converge or `max_hold_ms` passes, so the client's "
	  "own timeout and retry decide), or an error code sent as it is. First match wins. See docs/clients.md." },
	{ "gate.acks1", CONF_T_ENUM, C(gate_acks1), 0, CONF_F_LIVE, 0, 0, "pass", acks1_names, NULL,
	  "`pass`: acks=1 responses are never held. `gate`: acks=1 is gated like acks=all." },
	{ "gate.transactions", CONF_T_ENUM, C(gate_transactions), 0, CONF_F_LIVE, 0, 0, "data", txn_gate_names, NULL,
	  "What a transaction waits for (docs/operating.md, Transactions). `data`: its Produce acks are held like "
	  "any others, its `EndTxn` passes (a committed transaction whose COMMIT markers have not reached a mirror "
	  "at failover is aborted there). `commit`: the `EndTxn(commit)` answer is held until every gating mirror "
	  "has, on every gated partition of the transaction, everything up to its COMMIT marker; transactional "
	  "batches (RecordBatch isTransactional) are acknowledged as the broker answers (works with mirrors that "
	  "copy only committed records). `both`: data acks and the commit are held. Aborts are never held." },
	{ "gate.max_txn_commit_hold_ms", CONF_T_INT, C(gate_max_txn_commit_hold_ms), 0, CONF_F_LIVE, 1, 3600 * MS, "8000", NULL, NULL,
	  "How long an `EndTxn(commit)` answer is held (`gate.transactions: commit | both`) waiting for the mirrors, "
	  "milliseconds. Past it the commit is answered `gate.error_codes.txn_commit_timeout` (the commit is decided "
	  "on the source; the client retries it and is answered from the coordinator's state, held again). Keep it "
	  "below the clients' request timeout (Java 30 s)." },
	{ "gate.advertise_produce_v14", CONF_T_ENUM, C(gate_advertise_produce_v14), 0, 0, 0, 0, "auto", v14_names, NULL,
	  "`auto`: advertise Produce v14 in ApiVersions when the broker serves v13. `never`: pass ApiVersions through." },
	SEC("gate.error_codes", NONE, 0,
	    "Kafka error codes for the KIP's new errors (provisional: the KIP leaves them TBD). "
	    "Clients that negotiated Produce < 14 get `NOT_ENOUGH_REPLICAS_AFTER_APPEND` (20) instead."),
	{ "gate.error_codes.mirror_sync_replication_timeout", CONF_T_INT16, C(code_mirror_sync_replication_timeout), 0, CONF_F_LIVE, 1, 32767, "190", NULL, NULL,
	  "`MIRROR_SYNC_REPLICATION_TIMEOUT`: the gate did not converge before the deadline." },
	{ "gate.error_codes.txn_commit_timeout", CONF_T_INT16, C(code_txn_commit_timeout), 0, CONF_F_LIVE, 1, 32767, "51", NULL, NULL,
	  "The error code of an `EndTxn(commit)` answer whose hold timed out (`gate.transactions: commit | both`): "
	  "`CONCURRENT_TRANSACTIONS` (51) by default, which the Java producer and librdkafka retry without "
	  "surfacing an error (docs/operating.md, Transactions)." },
	{ "gate.error_codes.not_enough_remote_replicas_after_append", CONF_T_INT16, C(code_not_enough_remote_replicas_after_append), 0, CONF_F_LIVE, 1, 32767, "191", NULL, NULL,
	  "`NOT_ENOUGH_REMOTE_REPLICAS_AFTER_APPEND`: a mirror's ISR is below its min.insync.replicas." },

	SEC("consumers", NONE, 0,
	    "Consumers through syncgate (KIP unified high watermark, invariant 1b): Fetch, ListOffsets and "
	    "OffsetForLeaderEpoch answers for a gated topic never reach past the mirrored high watermark "
	    "(the minimum progress of the mirrors that gate the topic)."),
	{ "consumers.clamp", CONF_T_ENUM, C(consumers_clamp), 0, CONF_F_LIVE, 0, 0, "clamp", consumers_names, NULL,
	  "`clamp`: consumers see only records every gating mirror has (records past the mirrored high watermark "
	  "are withheld, high watermarks and offsets clamped, an empty Fetch is held up to its `MaxWaitMs`). "
	  "`pass`: answers pass as the broker gives them (consumers may read records not yet mirrored)." },
	{ "consumers.exempt_client_ids", CONF_T_REGEXES, C(consumers_exempt_client_ids), C(nconsumers_exempt_client_ids), CONF_F_LIVE, 0, 0, NULL, NULL, NULL,
	  "Client ids never clamped, POSIX extended regular expressions matched against the whole client id: "
	  "mirror tools that read the source through syncgate (e.g. MirrorMaker 2's "
	  "`.*MirrorSourceConnector.*`), or they could never catch up. A client whose id looks like MirrorMaker's "
	  "and is not exempt is logged once (`consumer_clamp_mirror_reader`)." },
	{ "consumers.exempt_principals", CONF_T_REGEXES, C(consumers_exempt_principals), C(nconsumers_exempt_principals), CONF_F_LIVE, 0, 0, NULL, NULL, NULL,
	  "Principals never clamped, POSIX extended regular expressions matched against the whole name. TLS (with "
	  "`listen.tls.client_ca`: the client's verified certificate): the subject in RFC 2253 form (as Kafka's "
	  "default SSL principal, e.g. `CN=mm2,OU=dr,O=Example`) or its common name alone (`mm2`). SASL PLAIN and "
	  "SCRAM: the user name, read from the client's first SASL message and taken once the broker accepted it "
	  "(syncgate passes SASL through; GSSAPI and OAUTHBEARER users are not known to it). For mirror tools "
	  "identified by credentials rather than client id." },

	{ "mirrors", CONF_T_LIST, C(mirrors), C(nmirrors), CONF_F_LIVE, 0, 0, NULL, NULL, NULL,
	  "The registered mirrors (destination clusters), a list; names must be unique. Empty or absent: "
	  "syncgate only proxies. Mirrors may be added and removed by a reload." },
	{ "mirrors[].name", CONF_T_STRING, M(name), 0, CONF_F_REQUIRED | CONF_F_LIVE, 0, 0, NULL, NULL, check_mirror_name,
	  "The mirror's name, used by syncgate-ctl, metrics labels and messages: letters, digits, `.`, `_`, `-`." },
	{ "mirrors[].bootstrap", CONF_T_STRING, M(bootstrap), 0, CONF_F_REQUIRED | W, 0, 0, NULL, NULL, check_bootstrap,
	  "Destination bootstrap servers, comma-separated `host:port` (librdkafka `bootstrap.servers`)." },
	{ "mirrors[].properties", CONF_T_PROPS, M(props), M(nprops), W | CONF_F_SECRETS, 0, 0, NULL, NULL, NULL,
	  "librdkafka properties for the destination clients, a map of name → value (numbers and booleans "
	  "are passed as written). Values may be secrets: `${file:/path}` or `${env:NAME}`. "
	  "`bootstrap.servers` is not allowed here (use `bootstrap`)." },
	{ "mirrors[].topic_name", CONF_T_STRING, M(topic_name), 0, W, 0, 0, CONF_TOPIC_KEY, NULL, check_topic_name,
	  "Destination topic of a source topic; `{topic}` is the source topic name (e.g. `src.{topic}`)." },
	{ "mirrors[].offsets", CONF_T_ENUM, M(offsets), 0, W, 0, 0, "preserved", offsets_names, NULL,
	  "`preserved`: the mirror keeps source offsets (Cluster Linking, KIP-1279, ...), destination high watermark "
	  "compared directly. `mm2`: MirrorMaker 2, progress from its offset-syncs topic and, between syncs, from "
	  "matching the destination's records to the source's (docs/operating.md \"Adding a mirror\"); "
	  "MM2's default `offset.lag.max` works; 0 makes translated offsets of groups far behind closer." },
	{ "mirrors[].progress", CONF_T_ENUM, M(progress), 0, W, 0, 0, "poll", progress_names, NULL,
	  "With `offsets: preserved`: `poll` asks a partition's destination leader for its high watermark as soon as a "
	  "response is held on it, and again after each answer while one is (one request in flight per destination "
	  "leader); `tail` keeps a consumer at the end of the gated partitions. With `offsets: mm2` neither is used "
	  "(the offset-syncs topic is read by a consumer of its own): the setting is accepted and ignored (`--check-config` notes `tail`)." },
	{ "mirrors[].poll_interval_ms", CONF_T_INT, M(poll_interval_ms), 0, W, 1, 60 * MS, "5", NULL, NULL,
	  "`poll`: pause before asking a destination leader again after a failed progress request, milliseconds; "
	  "also the longest pause between successful ones while responses are held and nothing moves. These follow "
	  "each other back to back for " XSTR(CONF_POLL_BURST_MS) " ms after a held partition's destination high "
	  "watermark moved or a response was held on a new record, then pause 1, 2, 4 … ms up to this value: a "
	  "destination leader whose held partitions do not move (a stalled mirror) is asked at most "
	  "1000 / `poll_interval_ms` times a second (200 at the default), not as fast as it answers." },
	{ "mirrors[].mm2_offset_syncs_topic", CONF_T_STRING, M(mm2_offset_syncs_topic), 0, W, 0, 0, NULL, NULL, check_topic,
	  "With `offsets: mm2`: MirrorMaker 2's offset-syncs topic, read on the source cluster. "
	  "Default `mm2-offset-syncs.<name>.internal`, which is MM2's own default when this mirror's `name` equals "
	  "the MM2 target cluster alias; set it when they differ." },
	{ "mirrors[].mm2_isolation_level", CONF_T_ENUM, M(mm2_isolation_level), 0, CONF_F_LIVE, 0, 0, "read_uncommitted", isolation_names, NULL,
	  "With `offsets: mm2`: the isolation level MirrorMaker 2's source consumer runs with (MM2's "
	  "`source.consumer.isolation.level`; exactly-once MM2 needs `read_committed`). syncgate cannot see it, so say "
	  "it here (when MM2 reads through syncgate, an exempt reader fetching read_committed against this setting is "
	  "logged: `mirror_reader_read_committed`). `read_committed` with a SYNC topic: a transactional producer's commit can never happen (its data "
	  "acks wait for the mirror, the mirror waits for the COMMIT), so syncgate warns when such a topic is altered to "
	  "SYNC or registered SYNC at start (`mirror_mm2_read_committed_sync`); see docs/operating.md, Transactions." },
	{ "mirrors[].sync_topics", CONF_T_REGEXES, M(sync_topics), M(nsync_topics), W, 0, 0, NULL, NULL, NULL,
	  "Topics whose desired type is SYNC while the state log has no entry for them: a list of POSIX extended "
	  "regular expressions, each matched against the whole topic name." },
	{ "mirrors[].sync_groups", CONF_T_REGEXES, M(sync_groups), M(nsync_groups), CONF_F_LIVE, 0, 0, NULL, NULL, NULL,
	  "Consumer groups whose commits are synchronous with this mirror: a list of POSIX extended regular "
	  "expressions, each matched against the whole group id. An `OffsetCommit` of such a group through "
	  "syncgate that the source coordinator accepted is answered only once this mirror's destination stores "
	  "the same offsets (and metadata) for the same group, for the partitions of topics the mirror gates "
	  "(`mm2`: translated through the offset-syncs); see docs/operating.md, Consumer groups." },
	{ "mirrors[].consumers", CONF_T_ENUM, M(consumers), 0, CONF_F_LIVE, 0, 0, "clamp", consumers_names, NULL,
	  "`clamp`: this mirror's progress limits what consumers through syncgate see of the topics it gates "
	  "(with `consumers.clamp: clamp`). `pass`: it gates acks only." },
	{ "mirrors[].sync_topic_demote_timeout_ms", CONF_T_INT, M(sync_topic_demote_timeout_ms), 0, CONF_F_LIVE, 1, 86400 * MS, XSTR(CONF_DEMOTE_TIMEOUT_MS), NULL, NULL,
	  "KIP `mirror.sync.topic.demote.timeout.ms`: how long a SYNC topic may fail to converge before it is demoted to ASYNC, milliseconds." },

	SEC("state", NONE, 0, "The state log: the replicated record of mirror lifecycle decisions, a topic on the source cluster."),
	{ "state.topic", CONF_T_STRING, C(state_topic), 0, 0, 0, 0, "__syncgate_state", NULL, check_topic,
	  "State log topic (one partition; created if missing)." },
	{ "state.replication_factor", CONF_T_INT, C(state_replication_factor), 0, 0, 1, 32767, "3", NULL, NULL,
	  "Replication factor used when creating the state topic." },

	SEC("admin", NONE, 0, "The admin HTTP listener: /metrics, /healthz, /readyz and the API used by syncgate-ctl."),
	{ "admin.listen", CONF_T_ADDR, C(admin_listen), 0, CONF_F_PORT0, 0, 0, "127.0.0.1:9464", NULL, NULL,
	  "Admin listener address, `host:port` (port 0: any free port)." },
	{ "admin.max_connections", CONF_T_INT, C(admin_max_connections), 0, CONF_F_LIVE, 1, 10000, "64", NULL, NULL,
	  "Concurrent admin HTTP connections. At the cap the admin listener stops accepting: new "
	  "connections wait in the listen backlog until one closes (idle ones close after 30 s); "
	  "logged `admin_connections_at_cap`, counted in `syncgate_admin_connection_cap_reached_total`. "
	  "Keeps idle admin connections from using up the file descriptors the Kafka listener needs." },
	SEC("admin.tls", C(admin_tls.enabled), 0,
	    "Serve the admin listener over HTTPS. Present (even empty) = TLS on; then `cert` and `key` are "
	    "required. Plain HTTP to it is refused (the connection is closed, `admin_tls_error` logged)."),
	{ "admin.tls.cert", CONF_T_STRING, C(admin_tls.cert), 0, CONF_F_REQUIRED | CONF_F_LIVE, 0, 0, NULL, NULL, check_file,
	  "PEM server certificate (chain) file. Re-read on reload." },
	{ "admin.tls.key", CONF_T_STRING, C(admin_tls.key), 0, CONF_F_REQUIRED | CONF_F_LIVE, 0, 0, NULL, NULL, check_file,
	  "PEM private key file of `cert`. Re-read on reload." },
	{ "admin.tls.client_ca", CONF_T_STRING, C(admin_tls.client_ca), 0, CONF_F_LIVE, 0, 0, NULL, NULL, check_file,
	  "PEM CA bundle; when set, every admin request (`/metrics`, `/healthz` and `/readyz` included) needs a "
	  "client certificate signed by it (mutual TLS). Re-read on reload." },
	{ "admin.token_file", CONF_T_STRING, C(admin_token_file), 0, 0, 0, 0, NULL, NULL, check_file,
	  "File holding the bearer token required by mutating admin calls; absent: they are refused. "
	  "The file is read on every call, so a new token in the same file applies at once; "
	  "another path needs a restart." },

	SEC("log", NONE, 0, "Logging: one line per event to stderr, `<time> <LEVEL> <event> key=value ...`."),
	{ "log.level", CONF_T_ENUM, C(log_level), 0, CONF_F_LIVE, 0, 0, "info", level_names, NULL,
	  "Most verbose level written: `error`, `warn`, `info` or `debug`." },
};

const size_t conf_nsettings = sizeof(conf_settings) / sizeof(conf_settings[0]);

const struct conf_setting *conf_setting_find(const char *path)
{
	for (size_t i = 0; i < conf_nsettings; i++)
		if (strcmp(conf_settings[i].path, path) == 0)
			return &conf_settings[i];
	return NULL;
}


const char *conf_type_str(enum conf_type t)
{
	switch (t) {
	case CONF_T_SECTION: return "a mapping";
	case CONF_T_LIST: return "a list";
	case CONF_T_STRING: return "a string";
	case CONF_T_INT: case CONF_T_INT16: case CONF_T_INT64: return "an integer";
	case CONF_T_BOOL: return "a boolean";
	case CONF_T_ENUM: return "one of the listed values";
	case CONF_T_ADDR: return "a host:port";
	case CONF_T_REGEXES: return "a list of regular expressions";
	case CONF_T_PROPS: return "a mapping of properties";
	case CONF_T_NODES: return "a mapping of node id to host:port";
	case CONF_T_COUNT: break;
	}
	return "?";
}
