/*
 * syncgate-ctl — the operator CLI, modelled on the KIP's
 * kafka-cluster-mirrors.sh. It talks to one sidecar's admin API over HTTP
 * (libevent's evhttp client); every sidecar of a source cluster shares the
 * state log, so any of them will do.
 *
 *   syncgate-ctl [--admin [https://]HOST:PORT|PORT] [--cacert FILE [--cert FILE --key FILE]]
 *                [--token-file FILE] [--output table|json] VERB
 *     --describe [--mirror M] [--topic T]
 *     --add --mirror M --topic T [--sync]
 *     --alter --mirror M --topic T --sync|--async
 *     --release-sync --mirror M [--topics REGEX]
 *     failover --mirror M [--topics REGEX] [--dry-run] [--timeout-ms N] [--switch]
 *     verify --mirror M [--topics REGEX] [--timeout-ms N]
 *            [--destination-only [--confirmed FILE]...]
 *     unfence --mirror M [--topics REGEX]
 *     switch --mirror M [--dry-run]
 * (the words may also be given as --failover, --verify, --unfence; failover
 * --switch runs switch after a verified failover)
 *
 * Admin API (JSON, bearer token on mutating calls):
 *   GET  /v1/mirrors?mirror=M&topic=T                 describe
 *   POST /v1/alter   {"mirror","topic","type":"SYNC|ASYNC","add":bool}
 *   POST /v1/release {"mirror","topics":REGEX|null}
 *   POST /v1/fence   {"mirror","topics":REGEX|null,"fence":bool}
 *   POST /v1/failover {"mirror","topics","dry_run","timeout_ms"}
 *   POST /v1/verify  {"mirror","topics","destination_only","timeout_ms","confirmed":[…]}
 *   POST /v1/switch  {"mirror","dry_run"}
 * A mutating call answers {"topics":[{"topic","result","message"}]} with
 * result one of PROMOTED, PENDING_LAG, DEMOTED, RELEASED, FENCED, UNFENCED,
 * UNCHANGED, REJECTED; failover/verify answer mirror/mirror.h's
 * mirror_gate_failover() document.
 *
 * HTTPS (admin.tls): with `https://` in --admin, or --cacert/--cert; the
 * server certificate is verified against --cacert (default: the system
 * store) and must name HOST; --cert/--key present a client certificate
 * (admin.tls.client_ca, mutual TLS).
 *
 * Exit codes: 0 success (failover/verify: verified); 1 the sidecar refused
 * or failed the request (or a topic was REJECTED; failover/verify: not
 * verified); 2 bad usage; 3 the admin API, or (failover/verify) the source
 * or destination cluster, could not be reached.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <openssl/err.h>

#include "proxy/cmd/ctl.h"
#include "proxy/cmd/version.h"
#include "proxy/tls.h"

enum verb { VERB_NONE, VERB_DESCRIBE, VERB_ADD, VERB_ALTER, VERB_RELEASE, VERB_FAILOVER, VERB_VERIFY, VERB_UNFENCE,
	    VERB_SWITCH };

struct ctl {
	enum verb verb;
	const char *admin;      /* host:port */
	const char *token_file;
	bool tls;               /* https:// or --cacert/--cert given */
	const char *cacert, *cert, *key;
	char tls_error[256];    /* the handshake's failure, for the message */
	const char *mirror, *topic, *topics;
	int type;               /* 0 unset, 1 SYNC, 2 ASYNC */
	bool json;
	bool dry_run, destination_only;
	bool then_switch;       /* failover --switch */
	long timeout_ms;        /* failover/verify; 0: the sidecar's default */
	const char *confirmed[16]; /* verify --destination-only --confirmed FILE */
	int nconfirmed;
	/* response */
	struct event_base *base;
	struct bufferevent *bev; /* HTTPS: the connection's, while a call runs */
	int status;
	char *body;
	int waited_s;           /* failover/verify: seconds waited, for the progress line */
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: syncgate-ctl [--admin [https://]HOST:PORT|PORT] [--cacert FILE] [--cert FILE --key FILE]\n"
		"                    [--token-file FILE] [--output table|json] VERB\n"
		"  --describe [--mirror M] [--topic T]      mirror types, lag, destination offsets\n"
		"  --add --mirror M --topic T [--sync]      register a topic (desired SYNC with --sync)\n"
		"  --alter --mirror M --topic T --sync|--async\n"
		"                                           promote (at lag zero) or demote at once\n"
		"  --release-sync --mirror M [--topics REGEX]\n"
		"                                           source-side release (destructive)\n"
		"  failover --mirror M [--topics REGEX] [--dry-run] [--timeout-ms N] [--switch]\n"
		"                                           fence, drain, verify zero RPO, move consumer\n"
		"                                           offsets, release (--dry-run: drain and verify only)\n"
		"  verify --mirror M [--topics REGEX] [--timeout-ms N]\n"
		"         [--destination-only [--confirmed FILE]...]\n"
		"                                           compare source and destination per partition\n"
		"  unfence --mirror M [--topics REGEX]      lift a failover's fence (Produce accepted again)\n"
		"  switch --mirror M [--dry-run]            after a verified failover: every sidecar serves the\n"
		"                                           destination at the same addresses (failover --switch:\n"
		"                                           both in one command)\n"
		"defaults: --admin 127.0.0.1:9464 (a bare PORT: 127.0.0.1:PORT), --token-file $SYNCGATE_TOKEN_FILE\n"
		"HTTPS: https:// in --admin, or --cacert (server CA; default the system store);\n"
		"       --cert/--key: client certificate for admin.tls.client_ca (mutual TLS)\n"
		"exit codes: 0 ok (verified), 1 refused/failed/rejected/not verified, 2 usage,\n"
		"            3 admin API (failover/verify: source or destination) unreachable\n");
}

static char *read_token(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char buf[512];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
		n--;
	buf[n] = 0;
	return strdup(buf);
}

static void done_cb(struct evhttp_request *req, void *arg)
{
	struct ctl *c = arg;
	unsigned long e = c->bev ? bufferevent_get_openssl_error(c->bev) : 0;
	if (!e)
		e = ERR_peek_last_error();
	if (e && !c->tls_error[0])
		ERR_error_string_n(e, c->tls_error, sizeof(c->tls_error));
	if (req) {
		c->status = evhttp_request_get_response_code(req);
		struct evbuffer *b = evhttp_request_get_input_buffer(req);
		size_t n = evbuffer_get_length(b);
		c->body = malloc(n + 1);
		if (c->body) {
			evbuffer_remove(b, c->body, n);
			c->body[n] = 0;
		}
	}
	event_base_loopexit(c->base, NULL);
}

/* While a failover or verify call runs (fence, drain up to --timeout-ms,
 * verify, offsets), one line to stderr every CTL_PROGRESS_S seconds, so
 * that a long drain is not silence. stdout keeps only the answer. */
#define CTL_PROGRESS_S 5

static void progress_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct ctl *c = arg;
	c->waited_s += CTL_PROGRESS_S;
	char bound[64] = "the sidecar's default bound";
	if (c->timeout_ms > 0)
		snprintf(bound, sizeof(bound), "at most %ld s", (c->timeout_ms + 999) / 1000);
	fprintf(stderr, "syncgate-ctl: %s of mirror %s: the sidecar is %s (%d s so far, drain %s)\n",
		c->verb == VERB_FAILOVER ? (c->dry_run ? "dry-run failover" : "failover") : "verify", c->mirror,
		c->verb == VERB_FAILOVER && !c->dry_run ? "fencing, draining and verifying"
							: "waiting for the destination to catch up, then verifying",
		c->waited_s, bound);
}

/* One HTTP request; returns 0 with c->status/c->body set, or -1 unreachable. */
static int http_call(struct ctl *c, const char *method, const char *path, const char *body)
{
	char host[256];
	snprintf(host, sizeof(host), "%s", c->admin);
	char *colon = strrchr(host, ':');
	if (!colon)
		return -1;
	*colon = 0;
	int port = atoi(colon + 1);
	struct event_base *base = event_base_new();
	struct evhttp_connection *conn = NULL;
	struct bufferevent *bev = NULL;
	SSL_CTX *ctx = NULL;
	if (base && c->tls) {
		struct conf_tls t = { .enabled = true, .ca = (char *)c->cacert, .cert = (char *)c->cert,
				      .key = (char *)c->key };
		ctx = proxy_tls_client_ctx(&t, "--cacert/--cert");
		SSL *ssl = ctx ? SSL_new(ctx) : NULL;
		if (ssl && proxy_tls_client_name(ssl, host, true) == 0)
			bev = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
							     BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
		else
			SSL_free(ssl);
		if (bev) {
			bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
			c->bev = bev;
		}
	}
	if (base && (!c->tls || bev))
		conn = evhttp_connection_base_bufferevent_new(base, NULL, bev, host, (uint16_t)port);
	if (!conn) {
		if (bev)
			bufferevent_free(bev);
		if (base)
			event_base_free(base);
		SSL_CTX_free(ctx);
		return -1;
	}
	/* failover/verify answer after the drain (bounded by --timeout-ms) */
	evhttp_connection_set_timeout(conn, 60 + (int)(c->timeout_ms > 0 ? c->timeout_ms / 1000 : 60));
	c->base = base;
	struct evhttp_request *req = evhttp_request_new(done_cb, c);
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	evhttp_add_header(h, "Host", host);
	evhttp_add_header(h, "Accept", "application/json");
	char *token = c->token_file ? read_token(c->token_file) : NULL;
	if (token) {
		char auth[600];
		snprintf(auth, sizeof(auth), "Bearer %s", token);
		evhttp_add_header(h, "Authorization", auth);
		free(token);
	}
	if (body) {
		evhttp_add_header(h, "Content-Type", "application/json");
		evbuffer_add(evhttp_request_get_output_buffer(req), body, strlen(body));
	}
	c->status = 0;
	evhttp_make_request(conn, req, strcmp(method, "POST") ? EVHTTP_REQ_GET : EVHTTP_REQ_POST,
			    path);
	struct event *progress = NULL;
	if (c->verb == VERB_FAILOVER || c->verb == VERB_VERIFY) {
		c->waited_s = 0;
		progress = event_new(base, -1, EV_PERSIST, progress_cb, c);
		struct timeval every = { CTL_PROGRESS_S, 0 };
		if (progress)
			event_add(progress, &every);
	}
	event_base_dispatch(base);
	if (progress)
		event_free(progress);
	evhttp_connection_free(conn);
	event_base_free(base);
	SSL_CTX_free(ctx);
	c->bev = NULL;
	return c->status ? 0 : -1;
}

/* Confirmed offsets from FILE: Prometheus text (syncgate_mirror_confirmed_offset
 * lines of mirror M, e.g. every sidecar's last /metrics scrape) or plain
 * "topic partition offset" lines; the highest figure per partition wins on
 * the sidecar. Appends to `arr`; -1 when unreadable. */
static int read_confirmed(const struct ctl *c, const char *path, json_t *arr)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "syncgate-ctl: %s: %s\n", path, strerror(errno));
		return -1;
	}
	char line[2048];
	while (fgets(line, sizeof(line), f)) {
		char topic[512], mirror[256];
		int part;
		long long off;
		double v;
		if (!strncmp(line, "syncgate_mirror_confirmed_offset{", 33)) {
			const char *m = strstr(line, "mirror=\""), *t = strstr(line, "topic=\""),
				   *p = strstr(line, "partition=\""), *end = strchr(line, '}');
			if (!m || !t || !p || !end || sscanf(m + 8, "%255[^\"]", mirror) != 1 ||
			    sscanf(t + 7, "%511[^\"]", topic) != 1 || sscanf(p + 11, "%d", &part) != 1 ||
			    sscanf(end + 1, "%lf", &v) != 1 || strcmp(mirror, c->mirror))
				continue;
			off = (long long)v;
		} else if (line[0] == '#' || sscanf(line, "%511s %d %lld", topic, &part, &off) != 3) {
			continue;
		}
		json_array_append_new(arr, json_pack("{s:s, s:i, s:I}", "topic", topic, "partition", part,
						     "offset", (json_int_t)off));
	}
	fclose(f);
	return 0;
}

static int run(struct ctl *c)
{
	char path[1024];
	char *body = NULL;
	const char *method = "POST";
	if (c->verb == VERB_DESCRIBE) {
		method = "GET";
		char *em = c->mirror ? evhttp_encode_uri(c->mirror) : NULL;
		char *et = c->topic ? evhttp_encode_uri(c->topic) : NULL;
		snprintf(path, sizeof(path), "/v1/mirrors%s%s%s%s%s", em || et ? "?" : "",
			 em ? "mirror=" : "", em ? em : "", et ? (em ? "&topic=" : "topic=") : "",
			 et ? et : "");
		free(em);
		free(et);
	} else if (c->verb == VERB_FAILOVER || c->verb == VERB_VERIFY) {
		snprintf(path, sizeof(path), c->verb == VERB_FAILOVER ? "/v1/failover" : "/v1/verify");
		json_t *arr = json_array();
		for (int i = 0; i < c->nconfirmed; i++)
			if (read_confirmed(c, c->confirmed[i], arr) != 0) {
				json_decref(arr);
				return 2;
			}
		json_t *j = json_pack("{s:s, s:s?, s:b, s:b, s:I, s:o}", "mirror", c->mirror, "topics", c->topics,
				      "dry_run", c->dry_run, "destination_only", c->destination_only, "timeout_ms",
				      (json_int_t)c->timeout_ms, "confirmed", arr);
		body = json_dumps(j, JSON_COMPACT);
		json_decref(j);
	} else if (c->verb == VERB_SWITCH) {
		snprintf(path, sizeof(path), "/v1/switch");
		json_t *j = json_pack("{s:s, s:b}", "mirror", c->mirror, "dry_run", c->dry_run);
		body = json_dumps(j, JSON_COMPACT);
		json_decref(j);
	} else if (c->verb == VERB_UNFENCE) {
		snprintf(path, sizeof(path), "/v1/fence");
		json_t *j = json_pack("{s:s, s:s?, s:b}", "mirror", c->mirror, "topics", c->topics, "fence", 0);
		body = json_dumps(j, JSON_COMPACT);
		json_decref(j);
	} else if (c->verb == VERB_RELEASE) {
		snprintf(path, sizeof(path), "/v1/release");
		json_t *j = json_pack("{s:s, s:s?}", "mirror", c->mirror, "topics", c->topics);
		body = json_dumps(j, JSON_COMPACT);
		json_decref(j);
	} else {
		snprintf(path, sizeof(path), "/v1/alter");
		json_t *j = json_pack("{s:s, s:s, s:s, s:b}", "mirror", c->mirror, "topic", c->topic,
				      "type", c->type == 1 ? "SYNC" : "ASYNC", "add",
				      c->verb == VERB_ADD);
		body = json_dumps(j, JSON_COMPACT);
		json_decref(j);
	}
	int rc = http_call(c, method, path, body);
	free(body);
	if (rc < 0) {
		fprintf(stderr, "syncgate-ctl: cannot reach the admin API at %s%s%s%s\n", c->admin,
			c->tls ? " over HTTPS" : "", c->tls_error[0] ? ": " : "", c->tls_error);
		if (!c->tls)
			fprintf(stderr, "syncgate-ctl: if the admin listener has admin.tls, use --admin "
				"https://HOST:PORT and --cacert FILE\n");
		return 3;
	}
	json_error_t jerr;
	json_t *doc = c->body ? json_loads(c->body, 0, &jerr) : NULL;
	if (c->status != 200) {
		const char *msg = doc ? json_string_value(json_object_get(doc, "error")) : NULL;
		fprintf(stderr, "syncgate-ctl: %s: HTTP %d: %s\n", path, c->status,
			msg ? msg : (c->body ? c->body : ""));
		json_decref(doc);
		return 1;
	}
	if (!doc) {
		fprintf(stderr, "syncgate-ctl: bad JSON from the admin API: %s\n", jerr.text);
		return 1;
	}
	int out = 0;
	if (c->verb == VERB_FAILOVER || c->verb == VERB_VERIFY) {
		if (c->json)
			printf("%s\n", c->body);
		out = c->json ? ctl_failover_exit(doc) : ctl_print_failover(doc);
		json_decref(doc);
		return out;
	}
	if (c->verb == VERB_SWITCH) {
		if (c->json)
			printf("%s\n", c->body);
		out = c->json ? ctl_switch_exit(doc) : ctl_print_switch(doc);
		json_decref(doc);
		return out;
	}
	if (c->verb == VERB_DESCRIBE && c->mirror && !json_array_size(json_object_get(doc, "mirrors"))) {
		fprintf(stderr, "syncgate-ctl: unknown mirror %s\n", c->mirror);
		json_decref(doc);
		return 1;
	}
	if (c->json)
		printf("%s\n", c->body);
	else if (c->verb == VERB_DESCRIBE)
		ctl_print_describe(doc);
	if (c->verb != VERB_DESCRIBE) {
		if (c->json) {
			size_t i;
			json_t *t;
			json_array_foreach(json_object_get(doc, "topics"), i, t) {
				const char *r = json_string_value(json_object_get(t, "result"));
				if (r && !strcmp(r, "REJECTED"))
					out = 1;
			}
		} else {
			out = ctl_print_results(doc);
		}
	}
	json_decref(doc);
	return out;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "admin", required_argument, NULL, 'a' },
		{ "token-file", required_argument, NULL, 'k' },
		{ "cacert", required_argument, NULL, 'C' },
		{ "cert", required_argument, NULL, 'E' },
		{ "key", required_argument, NULL, 'K' },
		{ "output", required_argument, NULL, 'o' },
		{ "describe", no_argument, NULL, 'D' },
		{ "add", no_argument, NULL, 'A' },
		{ "alter", no_argument, NULL, 'L' },
		{ "release-sync", no_argument, NULL, 'R' },
		{ "mirror", required_argument, NULL, 'm' },
		{ "topic", required_argument, NULL, 't' },
		{ "topics", required_argument, NULL, 'T' },
		{ "sync", no_argument, NULL, 's' },
		{ "async", no_argument, NULL, 'y' },
		{ "failover", no_argument, NULL, 'F' },
		{ "verify", no_argument, NULL, 'v' },
		{ "unfence", no_argument, NULL, 'U' },
		{ "switch", no_argument, NULL, 'S' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "destination-only", no_argument, NULL, 'd' },
		{ "timeout-ms", required_argument, NULL, 'w' },
		{ "confirmed", required_argument, NULL, 'c' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct ctl c = { .admin = "127.0.0.1:9464", .token_file = getenv("SYNCGATE_TOKEN_FILE") };
	int o, verbs = 0;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case 'a': c.admin = optarg; break;
		case 'k': c.token_file = optarg; break;
		case 'C': c.cacert = optarg; c.tls = true; break;
		case 'E': c.cert = optarg; c.tls = true; break;
		case 'K': c.key = optarg; break;
		case 'o':
			if (strcmp(optarg, "json") && strcmp(optarg, "table")) {
				usage(stderr);
				return 2;
			}
			c.json = !strcmp(optarg, "json");
			break;
		case 'D': c.verb = VERB_DESCRIBE; verbs++; break;
		case 'A': c.verb = VERB_ADD; verbs++; break;
		case 'L': c.verb = VERB_ALTER; verbs++; break;
		case 'R': c.verb = VERB_RELEASE; verbs++; break;
		case 'm': c.mirror = optarg; break;
		case 't': c.topic = optarg; break;
		case 'T': c.topics = optarg; break;
		case 's': c.type = c.type == 2 ? -1 : 1; break;
		case 'y': c.type = c.type == 1 ? -1 : 2; break;
		case 'F': c.verb = VERB_FAILOVER; verbs++; break;
		case 'v': c.verb = VERB_VERIFY; verbs++; break;
		case 'U': c.verb = VERB_UNFENCE; verbs++; break;
		case 'S': c.then_switch = true; break;
		case 'n': c.dry_run = true; break;
		case 'd': c.destination_only = true; break;
		case 'w': {
			char *end;
			errno = 0;
			c.timeout_ms = strtol(optarg, &end, 10);
			if (errno || *end || c.timeout_ms <= 0 || c.timeout_ms > 3600000) {
				fprintf(stderr, "syncgate-ctl: --timeout-ms takes 1..3600000\n");
				return 2;
			}
			break;
		}
		case 'c':
			if (c.nconfirmed >= (int)(sizeof(c.confirmed) / sizeof(c.confirmed[0]))) {
				fprintf(stderr, "syncgate-ctl: at most 16 --confirmed files\n");
				return 2;
			}
			c.confirmed[c.nconfirmed++] = optarg;
			break;
		case 'V': printf("syncgate-ctl %s (commit %s)\n", SYNCGATE_VERSION, SYNCGATE_COMMIT); return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	/* verbs as words: syncgate-ctl failover --mirror M (getopt moved them last) */
	for (; optind < argc; optind++) {
		static const struct { const char *w; enum verb v; } words[] = {
			{"failover", VERB_FAILOVER}, {"verify", VERB_VERIFY}, {"unfence", VERB_UNFENCE},
			{"describe", VERB_DESCRIBE}, {"switch", VERB_SWITCH},
		};
		size_t k = 0;
		while (k < sizeof(words) / sizeof(words[0]) && strcmp(argv[optind], words[k].w))
			k++;
		if (k == sizeof(words) / sizeof(words[0]))
			break;
		c.verb = words[k].v;
		verbs++;
	}
	if (!strncmp(c.admin, "https://", 8)) {
		c.admin += 8;
		c.tls = true;
	} else if (!strncmp(c.admin, "http://", 7)) {
		c.admin += 7;
	}
	static char local[32];
	if (*c.admin && strspn(c.admin, "0123456789") == strlen(c.admin) && strlen(c.admin) <= 5) {
		/* a bare port: this host's loopback, as admin.listen's default is */
		snprintf(local, sizeof(local), "127.0.0.1:%s", c.admin);
		c.admin = local;
	}
	const char *bad = NULL;
	if (c.then_switch && verbs == 0) { /* --switch alone: the switch verb */
		c.verb = VERB_SWITCH;
		c.then_switch = false;
		verbs = 1;
	}
	if (!c.cert != !c.key)
		bad = "--cert and --key go together";
	else if (verbs != 1 || optind != argc)
		bad = "give exactly one of --describe, --add, --alter, --release-sync, failover, verify, unfence, "
		      "switch";
	else if ((c.verb == VERB_FAILOVER || c.verb == VERB_VERIFY || c.verb == VERB_UNFENCE ||
		  c.verb == VERB_SWITCH) && !c.mirror)
		bad = "failover, verify, unfence and switch need --mirror";
	else if (c.dry_run && c.verb != VERB_FAILOVER && c.verb != VERB_SWITCH)
		bad = "--dry-run goes with failover and switch";
	else if (c.then_switch && c.verb != VERB_FAILOVER)
		bad = "--switch goes with failover (or use the switch verb)";
	else if ((c.destination_only || c.nconfirmed) && c.verb != VERB_VERIFY)
		bad = "--destination-only and --confirmed go with verify";
	else if (c.nconfirmed && !c.destination_only)
		bad = "--confirmed goes with --destination-only";
	else if (c.timeout_ms && c.verb != VERB_FAILOVER && c.verb != VERB_VERIFY)
		bad = "--timeout-ms goes with failover and verify";
	else if (c.type < 0)
		bad = "--sync and --async exclude each other";
	else if ((c.verb == VERB_ADD || c.verb == VERB_ALTER) && (!c.mirror || !c.topic))
		bad = "--add and --alter need --mirror and --topic";
	else if (c.verb == VERB_ALTER && !c.type)
		bad = "--alter needs --sync or --async";
	else if (c.verb == VERB_ADD && c.type == 2)
		bad = "--add takes --sync or nothing (ASYNC)";
	else if (c.verb == VERB_RELEASE && !c.mirror)
		bad = "--release-sync needs --mirror";
	if (bad) {
		fprintf(stderr, "syncgate-ctl: %s\n", bad);
		usage(stderr);
		return 2;
	}
	if (c.verb == VERB_ADD && !c.type)
		c.type = 2;
	int rc = run(&c);
	if (c.then_switch && (rc == 0 || c.dry_run)) {
		/* failover --switch: the switch once the failover verified (--dry-run: its plan) */
		free(c.body);
		c.body = NULL;
		c.verb = VERB_SWITCH;
		if (!c.json)
			printf("\nswitch:\n");
		int src = run(&c);
		rc = rc ? rc : c.dry_run ? 0 : src;
	} else if (c.then_switch) {
		fprintf(stderr, "syncgate-ctl: the failover did not verify: not switching\n");
	}
	free(c.body);
	return rc;
}
