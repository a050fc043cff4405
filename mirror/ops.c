/*
 * ops.c — operator calls on the lifecycle (KIP "Command-Line Tool",
 * "Source-Side Release"): --add/--alter and --release-sync. A call writes
 * its records to the state log and is answered once this sidecar has read
 * them back and applied them (so every sidecar applies operator intents in
 * log order), with a per-topic result. Before --sync, a compatibility probe
 * of the destination runs (probe.c, a short-lived thread); its result
 * reaches the loop through the gate's bridge (mirror_ops_probe_done).
 *
 * Threads: loop thread.
 * Ownership: the gate owns its ops (g->ops) and probes (g->probes); an op
 * being probed is pointed at by its probe until the probe is done.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mirror/internal.h"
#include "mirror/probe.h"

#define OP_TIMEOUT_MS 10000   /* the state log must confirm within */
#define OP_PROMOTE_WAIT_MS 5000 /* lag zero at apply: wait this long for PROMOTED */

enum op_kind { OP_ALTER, OP_RELEASE, OP_FENCE, OP_UNFENCE };

struct op_item {
	char *mirror, *topic;
	uint64_t seq;               /* of our record; 0 before it was appended */
	bool applied;
	struct mirror_lstate before;
	bool changed;
	int64_t applied_ms;
	const char *result;         /* NULL until decided */
	char message[300];
};

struct mirror_op {
	struct mirror_gate *g;
	struct mirror_op *next, **pprev;
	mirror_op_cb cb;
	void *arg;
	enum op_kind kind;
	enum mirror_type type;
	bool add;
	struct op_item *items;
	size_t nitems;
	int64_t deadline_ms;
	struct event *ev;           /* 100 ms: promotion waits, deadline, deferred answer */
	bool answered;
	int status;
	char *body;
	char warning[800];
	struct mirror_probe *probe; /* while the compat probe runs */
};

/* ------------------------------------------------------------------------ */
/* Answers                                                                  */
/* ------------------------------------------------------------------------ */

static void op_free(struct mirror_op *op)
{
	if (op->pprev) {
		*op->pprev = op->next;
		if (op->next)
			op->next->pprev = op->pprev;
	}
	if (op->ev)
		event_free(op->ev);
	for (size_t i = 0; i < op->nitems; i++) {
		free(op->items[i].mirror);
		free(op->items[i].topic);
	}
	free(op->items);
	free(op->body);
	free(op);
}

/* Decide the answer; delivered from op->ev (never inside a gate call). */
static void op_answer(struct mirror_op *op, int status, json_t *doc)
{
	if (op->answered) {
		json_decref(doc);
		return;
	}
	op->answered = true;
	op->status = status;
	if (op->warning[0] && status == 200)
		json_object_set_new(doc, "warning", json_string(op->warning));
	op->body = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	event_active(op->ev, EV_TIMEOUT, 0);
}

static void op_error(struct mirror_op *op, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void op_error(struct mirror_op *op, int status, const char *fmt, ...)
{
	char msg[600];
	CONF_FORMAT_ARGS(msg, fmt);
	op_answer(op, status, json_pack("{s:s}", "error", msg));
}

/* Per-topic result of an applied item, or NULL: not decided yet. */
static const char *item_result(struct mirror_op *op, struct op_item *it, int64_t now)
{
	struct mirror_link *l = mirror_link_find(op->g, it->mirror);
	struct mirror_tstate *t = l ? mirror_tstate_get(l, it->topic, false) : NULL;
	if (!t) {
		snprintf(it->message, sizeof(it->message), "mirror %s removed meanwhile", it->mirror);
		return "REJECTED";
	}
	const char *added = op->add ? "added; " : "";
	if (op->kind == OP_FENCE || op->kind == OP_UNFENCE) {
		bool fence = op->kind == OP_FENCE;
		if (!it->changed) {
			snprintf(it->message, sizeof(it->message), fence ? "already fenced" : "not fenced");
			return "UNCHANGED";
		}
		snprintf(it->message, sizeof(it->message),
			 fence ? "fenced: every sidecar refuses Produce to it (retriable NOT_ENOUGH_REPLICAS)"
			       : "unfenced: Produce accepted again");
		return fence ? "FENCED" : "UNFENCED";
	}
	if (op->kind == OP_RELEASE) {
		if (!it->changed) {
			snprintf(it->message, sizeof(it->message), "not registered for sync (or already released)");
			return "UNCHANGED";
		}
		snprintf(it->message, sizeof(it->message),
			 "released: acks no longer wait for mirror %s (zero RPO lost until the recovery promotion)",
			 it->mirror);
		return "RELEASED";
	}
	if (op->type == MIRROR_ASYNC) {
		if (it->before.desired == MIRROR_ASYNC && it->before.effective == MIRROR_ASYNC) {
			snprintf(it->message, sizeof(it->message), "%salready ASYNC", added);
			return "UNCHANGED";
		}
		snprintf(it->message, sizeof(it->message),
			 "%sdemoted to ASYNC: held acks completed under the async predicate", added);
		return "DEMOTED";
	}
	if (t->ls.effective == MIRROR_SYNC) {
		if (it->before.effective == MIRROR_SYNC && it->before.desired == MIRROR_SYNC) {
			snprintf(it->message, sizeof(it->message), "%salready SYNC", added);
			return "UNCHANGED";
		}
		snprintf(it->message, sizeof(it->message), "%spromoted to SYNC: lag zero on every partition", added);
		return "PROMOTED";
	}
	if (t->ls.released) {
		snprintf(it->message, sizeof(it->message),
			 "%sreleased by source - recovery promotion pending lag drain", added);
		return "PENDING_LAG";
	}
	int64_t lag = mirror_tstate_lag(t, MIRROR_LAG_CURRENT, NULL);
	if (lag == 0 && now < it->applied_ms + OP_PROMOTE_WAIT_MS)
		return NULL; /* the decider promotes shortly */
	if (lag >= 0)
		snprintf(it->message, sizeof(it->message),
			 "%sdesired SYNC; promotion pending lag drain (lag %" PRId64 ")", added, lag);
	else
		snprintf(it->message, sizeof(it->message),
			 "%sdesired SYNC; promotion pending lag drain (lag unknown yet)", added);
	return "PENDING_LAG";
}

static void op_check(struct mirror_op *op, int64_t now)
{
	if (op->answered || op->probe)
		return;
	bool all = true;
	for (size_t i = 0; i < op->nitems; i++) {
		struct op_item *it = &op->items[i];
		if (!it->result && it->applied)
			it->result = item_result(op, it, now);
		all &= it->result != NULL;
	}
	if (all) {
		json_t *topics = json_array();
		for (size_t i = 0; i < op->nitems; i++) {
			char msg[1400];
			/* the warning in each message too: syncgate-ctl's table prints messages */
			snprintf(msg, sizeof(msg), "%s%s%s%s", op->items[i].message, op->warning[0] ? " (warning: " : "",
				 op->warning, op->warning[0] ? ")" : "");
			json_array_append_new(topics, json_pack("{s:s, s:s, s:s}", "topic", op->items[i].topic,
								"result", op->items[i].result, "message", msg));
		}
		op_answer(op, 200, json_pack("{s:o}", "topics", topics));
	} else if (now >= op->deadline_ms) {
		op_error(op, 504, "the state log did not confirm within %d ms; the change may still apply",
			 OP_TIMEOUT_MS);
	}
}

static void op_ev_cb(evutil_socket_t fd, short what, void *arg)
{
	struct mirror_op *op = arg;
	op_check(op, mirror_now_ms());
	if (!op->answered)
		return;
	op->cb(op->arg, op->status, op->body ? op->body : "{\"error\":\"out of memory\"}");
	op_free(op);
}

void mirror_ops_state_changed(struct mirror_gate *g)
{
	int64_t now = mirror_now_ms();
	for (struct mirror_op *op = g->ops; op; op = op->next)
		op_check(op, now);
}

void mirror_ops_record_applied(struct mirror_gate *g, struct mirror_tstate *t, const struct mirror_record *r,
			       const struct mirror_lstate *before, const struct mirror_apply_out *out)
{
	if (r->origin != g->origin)
		return;
	for (struct mirror_op *op = g->ops; op; op = op->next)
		for (size_t i = 0; i < op->nitems; i++) {
			struct op_item *it = &op->items[i];
			if (it->seq == r->seq && !it->applied) {
				it->applied = true;
				it->before = *before;
				it->changed = out->changed;
				it->applied_ms = mirror_now_ms();
				return;
			}
		}
}

static struct mirror_op *op_new(struct mirror_gate *g, enum op_kind kind, mirror_op_cb cb, void *arg)
{
	struct mirror_op *op = calloc(1, sizeof(*op));
	if (!op)
		return NULL;
	op->ev = event_new(g->base, -1, EV_PERSIST, op_ev_cb, op);
	if (!op->ev) {
		free(op);
		return NULL;
	}
	struct timeval tv = {0, 100000};
	event_add(op->ev, &tv);
	op->g = g;
	op->kind = kind;
	op->cb = cb;
	op->arg = arg;
	op->deadline_ms = mirror_now_ms() + OP_TIMEOUT_MS;
	op->next = g->ops;
	op->pprev = &g->ops;
	if (g->ops)
		g->ops->pprev = &op->next;
	g->ops = op;
	return op;
}

static int op_add_item(struct mirror_op *op, const char *mirror, const char *topic)
{
	struct op_item *a = realloc(op->items, (op->nitems + 1) * sizeof(*a));
	if (!a)
		return -1;
	op->items = a;
	struct op_item *it = &a[op->nitems];
	memset(it, 0, sizeof(*it));
	it->mirror = strdup(mirror);
	it->topic = strdup(topic);
	if (!it->mirror || !it->topic) {
		free(it->mirror);
		free(it->topic);
		return -1;
	}
	op->nitems++;
	return 0;
}

/* Write every item's record (the probe, if any, passed). */
static void op_submit(struct mirror_op *op)
{
	struct mirror_gate *g = op->g;
	op->deadline_ms = mirror_now_ms() + OP_TIMEOUT_MS;
	for (size_t i = 0; i < op->nitems; i++) {
		struct op_item *it = &op->items[i];
		struct mirror_link *l = mirror_link_find(g, it->mirror);
		struct mirror_tstate *t = l ? mirror_tstate_get(l, it->topic, true) : NULL;
		if (!t) {
			it->result = "REJECTED";
			snprintf(it->message, sizeof(it->message), "out of memory or mirror removed");
			continue;
		}
		static const enum mirror_rec_kind kinds[] = {
			[OP_ALTER] = MIRROR_REC_ALTER, [OP_RELEASE] = MIRROR_REC_RELEASE,
			[OP_FENCE] = MIRROR_REC_FENCE, [OP_UNFENCE] = MIRROR_REC_UNFENCE,
		};
		struct mirror_record r = {.kind = kinds[op->kind], .type = op->type, .add = op->add, .based_on = -1};
		it->seq = g->seq + 1; /* known before a local (no-log) apply runs inside append */
		mirror_gate_append(g, t, &r);
	}
	op_check(op, mirror_now_ms());
}

void mirror_ops_probe_done(struct mirror_gate *g, struct mirror_probe *p)
{
	pthread_join(p->th, NULL);
	for (struct mirror_probe **pp = &g->probes; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	struct mirror_op *op = p->op;
	if (op) {
		op->probe = NULL;
		LOG_I("mirror_compat_probe", "mirror=%s topic=%s result=%s message=\"%s\"", p->mirror, p->src_topic,
		      p->result == 0 ? "compatible" : p->result == 1 ? "incompatible" : "unreachable", p->message);
		if (p->result == 1) {
			op_error(op, 409, "%s", p->message);
		} else {
			if (p->result == 2) { /* after a warning set at the call, if any */
				size_t n = strlen(op->warning);
				snprintf(op->warning + n, sizeof(op->warning) - n, "%s%s", n ? "; " : "", p->message);
			}
			op_submit(op);
		}
	}
	mirror_probe_free(p);
}

void mirror_ops_free_all(struct mirror_gate *g)
{
	while (g->probes) {
		struct mirror_probe *p = g->probes;
		g->probes = p->next;
		pthread_join(p->th, NULL); /* its bridge message is dropped with the bridge */
		mirror_probe_free(p);
	}
	while (g->ops)
		op_free(g->ops);
}

/* ------------------------------------------------------------------------ */
/* Calls                                                                    */
/* ------------------------------------------------------------------------ */

static bool topic_name_ok(const char *t)
{
	size_t n = t ? strlen(t) : 0;
	if (n == 0 || n > 249 || !strcmp(t, ".") || !strcmp(t, ".."))
		return false;
	for (; *t; t++)
		if (!((*t >= 'a' && *t <= 'z') || (*t >= 'A' && *t <= 'Z') || (*t >= '0' && *t <= '9') ||
		      *t == '.' || *t == '_' || *t == '-'))
			return false;
	return true;
}

struct mirror_op *mirror_gate_alter(struct mirror_gate *g, const char *mirror, const char *topic,
				    enum mirror_type type, bool add, mirror_op_cb cb, void *arg)
{
	struct mirror_op *op = op_new(g, OP_ALTER, cb, arg);
	if (!op)
		return NULL;
	op->type = type;
	op->add = add;
	struct mirror_link *l = mirror ? mirror_link_find(g, mirror) : NULL;
	if (!l) {
		op_error(op, 404, "unknown mirror %s (not in this sidecar's config)", mirror ? mirror : "(none)");
		return op;
	}
	if (!topic_name_ok(topic)) {
		op_error(op, 400, "invalid topic name \"%s\"", topic ? topic : "");
		return op;
	}
	if (!g->state_ready) {
		op_error(op, 503, "the state log is not read yet (sidecar starting); retry");
		return op;
	}
	if (op_add_item(op, l->name, topic) != 0) {
		op_error(op, 500, "out of memory");
		return op;
	}
	if (type == MIRROR_SYNC && mirror_link_txn_hazard(l)) {
		/* a warning, not a refusal: topics without transactions are fine */
		snprintf(op->warning, sizeof(op->warning), "%s", MIRROR_TXN_HAZARD_TEXT);
		LOG_W("mirror_mm2_read_committed_sync", "mirror=%s topic=%s reason=\"altered to SYNC: "
		      MIRROR_TXN_HAZARD_TEXT "\"", l->name, topic);
	}
	if (type == MIRROR_SYNC && l->cm->offsets == CONF_OFFSETS_MM2 && g->unexempt_reader[0]) {
		size_t n = strlen(op->warning);
		snprintf(op->warning + n, sizeof(op->warning) - n, "%sclient %s, which looks like MirrorMaker 2, "
			 "reads the source through syncgate without an exemption: once the topic is SYNC its "
			 "fetches are clamped and the mirror cannot move (consumers.exempt_client_ids)",
			 n ? "; " : "", g->unexempt_reader);
	}
	if (type == MIRROR_SYNC && g->log) {
		if (!(op->probe = mirror_probe_start(op->g, op, l, topic)))
			op_error(op, 500, "cannot start the compatibility probe");
	} else {
		op_submit(op);
	}
	return op;
}

struct select_ctx {
	struct mirror_op *op;
	const regex_t *re;          /* --topics, or NULL: every topic */
	bool verified;              /* OP_RELEASE by a failover that verified zero RPO: fenced topics too */
};

/* Add (mirror, topic) to a --release-sync / fence when it is SYNC (desired
 * or effective) and matches; to an unfence when it is fenced. */
static void select_topic(struct mirror_tstate *t, void *arg)
{
	struct select_ctx *c = arg;
	if (c->op->answered)
		return; /* out of memory on an earlier topic */
	if (c->op->kind == OP_UNFENCE ? !t->ls.fenced
				      : t->ls.desired != MIRROR_SYNC && t->ls.effective != MIRROR_SYNC)
		return;
	if (c->re && regexec(c->re, t->topic, 0, NULL, 0) != 0)
		return;
	if (c->op->kind == OP_RELEASE && t->ls.fenced && !c->verified) {
		/* fenced and released means "its failover verified zero RPO" (the
		 * switch and retried.c rely on it): only that failover releases it */
		op_error(c->op, 409, "topic %s is fenced for a failover of mirror %s: only a failover that verified "
			 "zero RPO releases it (run syncgate-ctl failover again, or unfence it first)", t->topic,
			 t->link->name);
		return;
	}
	if (op_add_item(c->op, t->link->name, t->topic) != 0)
		op_error(c->op, 500, "out of memory");
}

/* One record for every selected topic of `mirror` (select_topic). */
static struct mirror_op *op_topics(struct mirror_gate *g, enum op_kind kind, const char *mirror,
				   const char *topics_regex, bool verified, mirror_op_cb cb, void *arg)
{
	struct mirror_op *op = op_new(g, kind, cb, arg);
	if (!op)
		return NULL;
	struct mirror_link *l = mirror ? mirror_link_find(g, mirror) : NULL;
	if (!l) {
		op_error(op, 404, "unknown mirror %s (not in this sidecar's config)", mirror ? mirror : "(none)");
		return op;
	}
	if (!g->state_ready) {
		op_error(op, 503, "the state log is not read yet (sidecar starting); retry");
		return op;
	}
	regex_t re;
	bool have_re = false;
	if (topics_regex) {
		char why[128];
		int rc = conf_topic_regex_compile(&re, topics_regex, why, sizeof(why));
		if (rc == REG_ESPACE) {
			op_error(op, 500, "out of memory");
			return op;
		}
		if (rc != 0) {
			op_error(op, 400, "invalid --topics regex \"%s\"", topics_regex);
			return op;
		}
		have_re = true;
	}
	struct select_ctx c = {.op = op, .re = have_re ? &re : NULL, .verified = verified};
	mirror_each_topic(NULL, l, select_topic, &c);
	if (have_re)
		regfree(&re);
	if (op->answered)
		return op;
	if (op->nitems == 0)
		snprintf(op->warning, sizeof(op->warning), "no %s topic of mirror %s matches%s%s",
			 kind == OP_UNFENCE ? "fenced" : "SYNC", l->name, topics_regex ? " " : "",
			 topics_regex ? topics_regex : "");
	op_submit(op);
	return op;
}

struct mirror_op *mirror_gate_release(struct mirror_gate *g, const char *mirror, const char *topics_regex,
				      mirror_op_cb cb, void *arg)
{
	return op_topics(g, OP_RELEASE, mirror, topics_regex, false, cb, arg);
}

struct mirror_op *mirror_gate_release_verified(struct mirror_gate *g, const char *mirror, const char *topics_regex,
					       mirror_op_cb cb, void *arg)
{
	return op_topics(g, OP_RELEASE, mirror, topics_regex, true, cb, arg);
}

struct mirror_op *mirror_gate_fence(struct mirror_gate *g, const char *mirror, const char *topics_regex,
				    bool fence, mirror_op_cb cb, void *arg)
{
	return op_topics(g, fence ? OP_FENCE : OP_UNFENCE, mirror, topics_regex, false, cb, arg);
}

void mirror_op_cancel(struct mirror_op *op)
{
	if (!op)
		return;
	if (op->probe)
		op->probe->op = NULL; /* the probe finishes alone */
	op_free(op);
}
