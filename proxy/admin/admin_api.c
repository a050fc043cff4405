/*
 * admin_api.c — the mutating admin endpoints (KIP "Command-Line Tool";
 * the contract is proxy/cmd/syncgate-ctl.c's header comment):
 *   POST /v1/alter    {"mirror","topic","type":"SYNC|ASYNC","add":bool}
 *   POST /v1/release  {"mirror","topics":REGEX|null}
 *   POST /v1/fence    {"mirror","topics":REGEX|null,"fence":bool}   (unfence: false)
 *   POST /v1/failover {"mirror","topics","dry_run":bool,"timeout_ms":int}
 *   POST /v1/verify   {"mirror","topics","destination_only":bool,"timeout_ms":int,
 *                      "confirmed":[{"topic","partition","offset"}]}
 *   POST /v1/switch   {"mirror","dry_run":bool}                       (mirror/switch.c)
 * All need `Authorization: Bearer <token>` equal to the contents of
 * admin.token_file (read at each call, so the file can be rotated); without a
 * token file they are refused (403). Answers: 200
 * {"topics":[{"topic","result","message"}],"warning"?}, or 4xx/5xx
 * {"error": "..."} (409 when the compatibility probe finds the destination
 * unable to serve the gate). The work is done by the gate (mirror/ops.c);
 * the reply is sent when the gate answers, or never if the client went away.
 * Loop thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>

#include "conf/conf.h"
#include "mirror/mirror.h"
#include "proxy/admin/admin.h"
#include "proxy/proxy.h"

#define ADMIN_API_MAX_BODY 65536

struct admin_api {
	struct mirror_gate *gate;
	char *token_file;            /* copied at registration; NULL: mutating calls refused */
};

/* The admin connections' count: close callbacks go through it (admin_conns.c). */
static struct admin_conns *api_conns;

/* One call waiting for the gate. */
struct admin_call {
	struct evhttp_request *req;
	struct evhttp_connection *conn;
	struct mirror_op *op;
	struct mirror_failover *fo;  /* /v1/failover, /v1/verify */
	struct mirror_switch *sw;    /* /v1/switch */
};

static void reply_json(struct evhttp_request *req, int code, const char *body)
{
	struct evbuffer *b = evbuffer_new();
	if (!b) {
		evhttp_send_error(req, 500, "out of memory");
		return;
	}
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
	evbuffer_add(b, body, strlen(body));
	evhttp_send_reply(req, code, NULL, b); /* NULL: libevent's reason phrase for `code` */
	evbuffer_free(b);
}

static void reply_error(struct evhttp_request *req, int code, const char *msg)
{
	json_t *j = json_pack("{s:s}", "error", msg);
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	reply_json(req, code, s ? s : "{\"error\":\"out of memory\"}");
	free(s);
}

/* Constant-time compare of the presented token with the file's. */
static bool token_ok(const char *want, const char *got)
{
	size_t nw = strlen(want), ng = strlen(got);
	unsigned char d = nw != ng;
	for (size_t i = 0; i < nw; i++)
		d |= (unsigned char)want[i] ^ (unsigned char)(i < ng ? got[i] : 0);
	return d == 0;
}

/* 0 when authorized; otherwise replied already. */
static int authorize(struct admin_api *api, struct evhttp_request *req)
{
	if (!api->token_file) {
		reply_error(req, 403, "mutating admin calls are disabled: admin.token_file is not configured");
		return -1;
	}
	FILE *f = fopen(api->token_file, "r");
	char want[512];
	size_t n = f ? fread(want, 1, sizeof(want) - 1, f) : 0;
	if (f)
		fclose(f);
	while (n && (want[n - 1] == '\n' || want[n - 1] == '\r' || want[n - 1] == ' '))
		n--;
	want[n] = 0;
	if (n == 0) {
		LOG_E("admin_token_unreadable", "path=\"%s\"", api->token_file);
		reply_error(req, 403, "mutating admin calls are disabled: admin.token_file is unreadable or empty");
		return -1;
	}
	const char *h = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
	if (!h || strncmp(h, "Bearer ", 7) != 0 || !token_ok(want, h + 7)) {
		LOG_W("admin_unauthorized", "uri=\"%s\" reason=\"%s\"", evhttp_request_get_uri(req),
		      h ? "wrong token" : "no bearer token");
		reply_error(req, 401, h ? "invalid bearer token (compare with admin.token_file)"
					: "a bearer token is required: syncgate-ctl --token-file FILE (admin.token_file)");
		return -1;
	}
	return 0;
}

/* The request body as JSON, or NULL (replied). */
static json_t *read_body(struct evhttp_request *req)
{
	struct evbuffer *b = evhttp_request_get_input_buffer(req);
	size_t n = evbuffer_get_length(b);
	if (n > ADMIN_API_MAX_BODY) {
		reply_error(req, 400, "request body too large");
		return NULL;
	}
	char *buf = malloc(n + 1);
	if (!buf) {
		reply_error(req, 500, "out of memory");
		return NULL;
	}
	evbuffer_copyout(b, buf, n);
	json_error_t err;
	json_t *j = json_loadb(buf, n, 0, &err);
	free(buf);
	if (!json_is_object(j)) {
		char msg[300];
		snprintf(msg, sizeof(msg), "request body is not a JSON object: %s", j ? "wrong type" : err.text);
		json_decref(j);
		reply_error(req, 400, msg);
		return NULL;
	}
	return j;
}

static void call_closed(struct evhttp_connection *conn, void *arg)
{
	struct admin_call *c = arg;
	LOG_I("admin_call_abandoned", "reason=\"client closed the connection before the answer\"");
	mirror_op_cancel(c->op);
	mirror_failover_cancel(c->fo);
	mirror_switch_cancel(c->sw);
	free(c);
}

static void call_answered(void *arg, int status, const char *body)
{
	struct admin_call *c = arg;
	proxy_admin_conns_on_close(api_conns, c->conn, NULL, NULL);
	reply_json(c->req, status, body);
	free(c);
}

/* A call for `req`, or NULL (replied 500). */
static struct admin_call *call_new(struct evhttp_request *req)
{
	struct admin_call *c = calloc(1, sizeof(*c));
	if (!c) {
		reply_error(req, 500, "out of memory");
		return NULL;
	}
	c->req = req;
	c->conn = evhttp_request_get_connection(req);
	return c;
}

static void call_start(struct admin_call *c, struct mirror_op *op)
{
	if (!op) {
		reply_error(c->req, 500, "out of memory");
		free(c);
		return;
	}
	c->op = op; /* answered later, from the loop: never inside the gate call */
	proxy_admin_conns_on_close(api_conns, c->conn, call_closed, c);
}

/* The body of an authorized POST as a JSON object, or NULL (replied). */
static json_t *call_body(struct admin_api *api, struct evhttp_request *req)
{
	if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
		reply_error(req, 405, "use POST");
		return NULL;
	}
	if (authorize(api, req) != 0)
		return NULL;
	return read_body(req);
}

/* "topics": a regex, null or absent. */
static bool topics_ok(json_t *topics)
{
	return !topics || json_is_null(topics) || json_is_string(topics);
}

static const char *topics_str(json_t *topics)
{
	return json_is_string(topics) ? json_string_value(topics) : "(all)";
}

static void alter_cb(struct evhttp_request *req, void *arg)
{
	struct admin_api *api = arg;
	json_t *j = call_body(api, req);
	if (!j)
		return;
	const char *mirror = json_string_value(json_object_get(j, "mirror"));
	const char *topic = json_string_value(json_object_get(j, "topic"));
	const char *type = json_string_value(json_object_get(j, "type"));
	json_t *add = json_object_get(j, "add");
	struct admin_call *c;
	if (!mirror || !topic || !type || (strcmp(type, "SYNC") && strcmp(type, "ASYNC")) ||
	    (add && !json_is_boolean(add))) {
		reply_error(req, 400, "body: {\"mirror\":str,\"topic\":str,\"type\":\"SYNC\"|\"ASYNC\",\"add\":bool}");
	} else if ((c = call_new(req))) {
		LOG_I("admin_alter", "mirror=%s topic=%s type=%s add=%s", mirror, topic, type,
		      json_is_true(add) ? "true" : "false");
		call_start(c, mirror_gate_alter(api->gate, mirror, topic,
						strcmp(type, "SYNC") ? MIRROR_ASYNC : MIRROR_SYNC, json_is_true(add),
						call_answered, c));
	}
	json_decref(j);
}

static void release_cb(struct evhttp_request *req, void *arg)
{
	struct admin_api *api = arg;
	json_t *j = call_body(api, req);
	if (!j)
		return;
	const char *mirror = json_string_value(json_object_get(j, "mirror"));
	json_t *topics = json_object_get(j, "topics");
	struct admin_call *c;
	if (!mirror || !topics_ok(topics)) {
		reply_error(req, 400, "body: {\"mirror\":str,\"topics\":regex|null}");
	} else if ((c = call_new(req))) {
		LOG_W("admin_release_sync", "mirror=%s topics=\"%s\" reason=\"source-side release (destructive)\"",
		      mirror, topics_str(topics));
		call_start(c, mirror_gate_release(api->gate, mirror, json_string_value(topics), call_answered, c));
	}
	json_decref(j);
}

static void fence_cb(struct evhttp_request *req, void *arg)
{
	struct admin_api *api = arg;
	json_t *j = call_body(api, req);
	if (!j)
		return;
	const char *mirror = json_string_value(json_object_get(j, "mirror"));
	json_t *topics = json_object_get(j, "topics"), *fence = json_object_get(j, "fence");
	struct admin_call *c;
	if (!mirror || !topics_ok(topics) || !json_is_boolean(fence)) {
		reply_error(req, 400, "body: {\"mirror\":str,\"topics\":regex|null,\"fence\":bool}");
	} else if ((c = call_new(req))) {
		LOG_W("admin_fence", "mirror=%s topics=\"%s\" fence=%s", mirror, topics_str(topics),
		      json_is_true(fence) ? "true" : "false");
		call_start(c, mirror_gate_fence(api->gate, mirror, json_string_value(topics), json_is_true(fence),
						call_answered, c));
	}
	json_decref(j);
}

/* POST /v1/failover and /v1/verify (mirror/failover.c). */
static void failover_common(struct evhttp_request *req, struct admin_api *api, bool failover)
{
	json_t *j = call_body(api, req);
	if (!j)
		return;
	struct mirror_failover_req fr = {
		.mirror = json_string_value(json_object_get(j, "mirror")),
		.topics_regex = json_string_value(json_object_get(j, "topics")),
		.failover = failover,
		.dry_run = json_is_true(json_object_get(j, "dry_run")),
		.destination_only = json_is_true(json_object_get(j, "destination_only")),
		.timeout_ms = (int)json_integer_value(json_object_get(j, "timeout_ms")),
	};
	json_t *conf = json_object_get(j, "confirmed");
	size_t n = json_array_size(conf);
	struct mirror_confirmed *cf = n ? calloc(n, sizeof(*cf)) : NULL;
	for (size_t i = 0; cf && i < n; i++) {
		json_t *x = json_array_get(conf, i);
		cf[i] = (struct mirror_confirmed){json_string_value(json_object_get(x, "topic")),
						  (int32_t)json_integer_value(json_object_get(x, "partition")),
						  (int64_t)json_integer_value(json_object_get(x, "offset"))};
	}
	fr.confirmed = cf;
	fr.nconfirmed = cf ? n : 0;
	struct admin_call *c = NULL;
	if (!fr.mirror || !topics_ok(json_object_get(j, "topics")) || (n && !cf))
		reply_error(req, n && !cf ? 500 : 400,
			    "body: {\"mirror\":str,\"topics\":regex|null,\"dry_run\":bool,\"destination_only\":bool,"
			    "\"timeout_ms\":int,\"confirmed\":[{\"topic\",\"partition\",\"offset\"}]}");
	else if ((c = call_new(req)))
		LOG_W(failover ? "admin_failover" : "admin_verify", "mirror=%s topics=\"%s\" dry_run=%s "
		      "destination_only=%s", fr.mirror, fr.topics_regex ? fr.topics_regex : "(all)",
		      fr.dry_run ? "true" : "false", fr.destination_only ? "true" : "false");
	if (c)
		c->fo = mirror_gate_failover(api->gate, &fr, call_answered, c);
	free(cf); /* copied */
	json_decref(j);
	if (!c)
		return;
	if (!c->fo) {
		reply_error(req, 500, "out of memory");
		free(c);
		return;
	}
	/* the answer comes after the drain: keep the connection past admin's 30 s */
	evhttp_connection_set_timeout(c->conn, 120 + (fr.timeout_ms > 0 ? fr.timeout_ms / 1000 : 60));
	proxy_admin_conns_on_close(api_conns, c->conn, call_closed, c);
}

/* POST /v1/switch (mirror/switch.c). */
static void switch_cb(struct evhttp_request *req, void *arg)
{
	struct admin_api *api = arg;
	json_t *j = call_body(api, req);
	if (!j)
		return;
	const char *mirror = json_string_value(json_object_get(j, "mirror"));
	json_t *dry = json_object_get(j, "dry_run");
	struct admin_call *c;
	if (!mirror || (dry && !json_is_boolean(dry))) {
		reply_error(req, 400, "body: {\"mirror\":str,\"dry_run\":bool}");
	} else if ((c = call_new(req))) {
		LOG_W("admin_switch", "mirror=%s dry_run=%s", mirror, json_is_true(dry) ? "true" : "false");
		c->sw = mirror_gate_switch(api->gate, mirror, json_is_true(dry), call_answered, c);
		if (!c->sw) {
			reply_error(req, 500, "out of memory");
			free(c);
		} else {
			proxy_admin_conns_on_close(api_conns, c->conn, call_closed, c);
		}
	}
	json_decref(j);
}

static void failover_cb(struct evhttp_request *req, void *arg)
{
	failover_common(req, arg, true);
}

static void verify_cb(struct evhttp_request *req, void *arg)
{
	failover_common(req, arg, false);
}

void proxy_admin_api_register(struct evhttp *http, const struct conf *conf, struct mirror_gate *gate,
			      struct admin_conns *conns)
{
	/* Lives as long as the process (the admin listener is never re-created). */
	static struct admin_api api;
	api.gate = gate;
	api_conns = conns;
	free(api.token_file);
	api.token_file = conf->admin_token_file ? strdup(conf->admin_token_file) : NULL;
	evhttp_set_cb(http, "/v1/alter", alter_cb, &api);
	evhttp_set_cb(http, "/v1/release", release_cb, &api);
	evhttp_set_cb(http, "/v1/fence", fence_cb, &api);
	evhttp_set_cb(http, "/v1/failover", failover_cb, &api);
	evhttp_set_cb(http, "/v1/verify", verify_cb, &api);
	evhttp_set_cb(http, "/v1/switch", switch_cb, &api);
	if (!api.token_file)
		LOG_W("admin_mutations_disabled", "reason=\"admin.token_file not configured: /v1/alter and "
		      "/v1/release refuse every call\"");
}
