/*
 * switch.c — the switch (docs/switchover.md): after a verified failover of
 * mirror M, every sidecar serves M's destination cluster behind its own
 * addresses, and no client is re-pointed.
 *
 * The operator's call (mirror_gate_switch) checks that the failover is on
 * record — every topic the state knows for M is fenced (the source takes
 * nothing new for it) and released (the release is the failover's last
 * step, written only after its verify said zero RPO) — then appends one
 * mirror-level SWITCH record (topic "*", a name no Kafka topic can have) and
 * answers once this sidecar has read it back. Every sidecar applies the
 * record like the fence (mirror_switch_apply): the gate remembers the
 * mirror, and the data path's hook (proxy/switch.c) re-points the sidecar.
 * A restarted sidecar applies it while it reads the log at boot. A sidecar
 * applies one switch per process; a later SWITCH record is logged and
 * ignored. Loop thread.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mirror/internal.h"

#define SWITCH_TIMEOUT_MS 10000 /* the state log must confirm within */
#define SWITCH_TOPIC "*"        /* the topic of a mirror-level record */

struct mirror_switch {
	struct mirror_gate *g;
	struct mirror_switch *next, **pprev;
	mirror_op_cb cb;
	void *arg;
	char *mirror;
	uint64_t seq;               /* of our record; 0: nothing written (answered at once) */
	int64_t deadline_ms;
	struct event *ev;           /* 100 ms: read back, deadline, deferred answer */
	bool answered;
	int status;
	char *body;
	json_t *doc;                /* the answer being built */
};

static void sw_free(struct mirror_switch *s)
{
	if (s->pprev) {
		*s->pprev = s->next;
		if (s->next)
			s->next->pprev = s->pprev;
	}
	if (s->ev)
		event_free(s->ev);
	json_decref(s->doc);
	free(s->mirror);
	free(s->body);
	free(s);
}

/* Decide the answer; delivered from s->ev (never inside a gate call). */
static void sw_answer(struct mirror_switch *s, int status, json_t *doc)
{
	if (s->answered) {
		json_decref(doc);
		return;
	}
	s->answered = true;
	s->status = status;
	s->body = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	event_active(s->ev, EV_TIMEOUT, 0);
}

static void sw_error(struct mirror_switch *s, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void sw_error(struct mirror_switch *s, int status, const char *fmt, ...)
{
	char msg[900];
	CONF_FORMAT_ARGS(msg, fmt);
	LOG_W("switch_refused", "mirror=%s status=%d reason=\"%s\"", s->mirror ? s->mirror : "-", status, msg);
	sw_answer(s, status, json_pack("{s:s}", "error", msg));
}

static void sw_check(struct mirror_switch *s, int64_t now)
{
	if (s->answered || !s->seq)
		return;
	struct mirror_gate *g = s->g;
	if (g->switched && strcmp(g->switched, s->mirror) == 0) {
		json_t *d = s->doc;
		s->doc = NULL;
		json_object_set_new(d, "serving", json_string(s->mirror));
		sw_answer(s, 200, d);
	} else if (g->switched) {
		sw_error(s, 409, "this sidecar already serves the destination of mirror %s", g->switched);
	} else if (now >= s->deadline_ms) {
		sw_error(s, 504, "the state log did not confirm within %d ms; the switch may still apply",
			 SWITCH_TIMEOUT_MS);
	}
}

static void sw_ev_cb(evutil_socket_t fd, short what, void *arg)
{
	struct mirror_switch *s = arg;
	sw_check(s, mirror_now_ms());
	if (!s->answered)
		return;
	s->cb(s->arg, s->status, s->body ? s->body : "{\"error\":\"out of memory\"}");
	sw_free(s);
}

/* Verdict of one topic of the mirror: NULL when the switch may go on. */
struct sw_ctx {
	json_t *topics;
	char refused[700];          /* the first topics that block the switch */
	size_t nblocked, nready;
};

static void sw_topic(struct mirror_tstate *t, void *arg)
{
	struct sw_ctx *c = arg;
	const char *why = NULL;
	if (t->ls.fenced && t->ls.released)
		c->nready++;
	else if (!t->ls.fenced && t->ls.effective == MIRROR_SYNC && !t->ls.released)
		why = "still gated: run syncgate-ctl failover first";
	else if (t->ls.fenced)
		why = "fenced but not released: its failover did not verify zero RPO";
	else
		why = "not failed over (not fenced): records acknowledged on the source may be missing on the "
		      "destination; fail it over too, or remove it from the mirror";
	json_array_append_new(c->topics, json_pack("{s:s, s:s, s:s}", "topic", t->topic, "result",
						   why ? "REFUSED" : "SWITCHED", "message",
						   why ? why : "verified zero RPO by the failover; served by the destination"));
	if (why) {
		size_t n = strlen(c->refused);
		if (n < sizeof(c->refused) - 80)
			snprintf(c->refused + n, sizeof(c->refused) - n, "%s%s (%s)", n ? "; " : "", t->topic, why);
		c->nblocked++;
	}
}

/* Append the SWITCH record of `l`; without a state log it applies at once. */
static uint64_t sw_append(struct mirror_gate *g, struct mirror_link *l)
{
	struct mirror_record r = {.kind = MIRROR_REC_SWITCH, .type = MIRROR_SYNC, .based_on = -1,
				  .origin = g->origin, .seq = ++g->seq};
	if (!g->log) {
		mirror_switch_apply(g, l, &r);
		return r.seq;
	}
	char key[400];
	snprintf(key, sizeof(key), "%s/%s", l->name, SWITCH_TOPIC);
	char *v = mirror_record_to_json(l->name, SWITCH_TOPIC, &r);
	if (!v || mirror_statelog_append(g->log, key, v) != 0)
		LOG_E("mirror_state_append_failed", "mirror=%s topic=%s op=SWITCH", l->name, SWITCH_TOPIC);
	free(v);
	return r.seq;
}

struct mirror_switch *mirror_gate_switch(struct mirror_gate *g, const char *mirror, bool dry_run,
					 mirror_op_cb cb, void *arg)
{
	struct mirror_switch *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->ev = event_new(g->base, -1, EV_PERSIST, sw_ev_cb, s);
	s->mirror = strdup(mirror ? mirror : "");
	s->doc = json_object();
	if (!s->ev || !s->mirror || !s->doc) {
		sw_free(s);
		return NULL;
	}
	struct timeval tv = {0, 100000};
	event_add(s->ev, &tv);
	s->g = g;
	s->cb = cb;
	s->arg = arg;
	s->deadline_ms = mirror_now_ms() + SWITCH_TIMEOUT_MS;
	s->next = g->switches;
	s->pprev = &g->switches;
	if (g->switches)
		g->switches->pprev = &s->next;
	g->switches = s;

	struct mirror_link *l = mirror ? mirror_link_find(g, mirror) : NULL;
	const struct conf *cf = g->conf;
	if (!l) {
		sw_error(s, 404, "unknown mirror %s (not in this sidecar's config)", mirror ? mirror : "(none)");
		return s;
	}
	if (!g->state_ready) {
		sw_error(s, 503, "the state log is not read yet (sidecar starting); retry");
		return s;
	}
	json_t *topics = json_array();
	json_object_set_new(s->doc, "mirror", json_string(l->name));
	json_object_set_new(s->doc, "dry_run", json_boolean(dry_run));
	json_object_set_new(s->doc, "destination_bootstrap", json_string(l->cm->bootstrap));
	char listeners[400];
	snprintf(listeners, sizeof(listeners), "destination node N at %s:%d+N on every sidecar; %s:%d forwards "
		 "to %s", cf->switch_host ? cf->switch_host : "-", cf->switch_base_port, cf->listen_kafka.host,
		 cf->listen_kafka.port, l->cm->bootstrap);
	json_object_set_new(s->doc, "node_listeners", json_string(listeners));
	json_object_set_new(s->doc, "clients", json_string(
		"every client connection of every sidecar is closed once; the clients reconnect to the same "
		"addresses and are served by the destination (no reconfiguration)"));
	json_object_set_new(s->doc, "topics", topics);
	if (g->switched) {
		json_object_set_new(s->doc, "serving", json_string(g->switched));
		if (strcmp(g->switched, l->name) != 0) {
			sw_error(s, 409, "this sidecar already serves the destination of mirror %s", g->switched);
			return s;
		}
		json_array_append_new(topics, json_pack("{s:s, s:s, s:s}", "topic", SWITCH_TOPIC, "result",
							"UNCHANGED", "message", "already serving this destination"));
		json_t *d = s->doc;
		s->doc = NULL;
		sw_answer(s, 200, d);
		return s;
	}
	json_object_set_new(s->doc, "serving", json_string("source"));
	if (cf->switch_base_port <= 0) {
		sw_error(s, 409, "switch.base_port is not configured on this sidecar: it cannot serve the "
			 "destination (configure switch.* on every sidecar first)");
		return s;
	}
	struct sw_ctx c = {.topics = topics};
	mirror_each_topic(NULL, l, sw_topic, &c);
	if (dry_run) { /* the plan, and whether it would go ahead now */
		bool go = !c.nblocked && c.nready;
		json_object_set_new(s->doc, "would_switch", json_boolean(go));
		if (!go)
			json_object_set_new(s->doc, "refused", json_string(c.nblocked ? c.refused
						: "no failed-over topic: run syncgate-ctl failover first"));
		json_t *d = s->doc;
		s->doc = NULL;
		sw_answer(s, 200, d);
		return s;
	}
	if (c.nblocked) {
		sw_error(s, 409, "mirror %s: %zu topic(s) not verified for the switch: %s", l->name, c.nblocked,
			 c.refused);
		return s;
	}
	if (c.nready == 0) {
		sw_error(s, 409, "mirror %s has no failed-over topic: run syncgate-ctl failover first", l->name);
		return s;
	}
	LOG_I("switch_requested", "mirror=%s destination=\"%s\" topics=%zu", l->name, l->cm->bootstrap, c.nready);
	s->seq = sw_append(g, l);
	sw_check(s, mirror_now_ms());
	return s;
}

void mirror_switch_apply(struct mirror_gate *g, struct mirror_link *l, const struct mirror_record *r)
{
	if (g->switched) {
		if (strcmp(g->switched, l->name) != 0)
			LOG_W("switch_record_ignored", "mirror=%s serving=%s reason=\"this sidecar already serves "
			      "another mirror's destination; one switch per process\"", l->name, g->switched);
		return;
	}
	if (!(g->switched = strdup(l->name))) {
		LOG_E("switch_apply_failed", "mirror=%s reason=\"out of memory\"", l->name);
		return;
	}
	LOG_I("switch_applied", "mirror=%s destination=\"%s\" replayed=%s origin=%016llx", l->name,
	      l->cm->bootstrap, g->state_ready ? "false" : "true", (unsigned long long)r->origin);
	/* every mirror measured the source against its destination: nothing of
	 * that is served any more (the destination now takes the clients' writes,
	 * and would read as "ahead of its source") */
	for (size_t i = 0; i < g->nlinks; i++)
		if (g->links[i]->worker) {
			mirror_worker_stop(g->links[i]->worker);
			g->links[i]->worker = NULL;
			LOG_I("mirror_progress_stopped", "mirror=%s reason=\"switched: this sidecar serves the "
			      "destination of mirror %s; no mirror of the source gates anything here\"",
			      g->links[i]->name, l->name);
		}
	if (g->on_switch)
		g->on_switch(g->on_switch_arg, l->cm);
	for (struct mirror_switch *s = g->switches; s; s = s->next)
		sw_check(s, mirror_now_ms());
}

void mirror_switch_cancel(struct mirror_switch *s)
{
	if (s)
		sw_free(s);
}

void mirror_switch_free_all(struct mirror_gate *g)
{
	while (g->switches)
		sw_free(g->switches);
	free(g->switched);
	g->switched = NULL;
}

void mirror_gate_on_switch(struct mirror_gate *g, void (*fn)(void *arg, const struct conf_mirror *cm),
			   void *arg)
{
	g->on_switch = fn;
	g->on_switch_arg = arg;
	struct mirror_link *l = g->switched ? mirror_link_find(g, g->switched) : NULL;
	if (fn && l) /* applied before the hook was registered */
		fn(arg, l->cm);
}

const char *mirror_gate_serving(const struct mirror_gate *g)
{
	return g->switched;
}
