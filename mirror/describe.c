/*
 * describe.c — read-only views of the gate for the admin API and
 * syncgate-ctl --describe: per (mirror, topic) and (mirror, topic,
 * partition) figures, the whole gate as JSON, and the state log's status.
 * Changes nothing. Loop thread.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mirror/internal.h"

bool mirror_gate_state_ready(struct mirror_gate *g)
{
	return g->state_ready;
}

bool mirror_gate_is_decider(struct mirror_gate *g)
{
	return g->decider;
}

static void topic_info(struct mirror_link *l, const char *topic, const struct mirror_tstate *t,
		       struct mirror_topic_info *out)
{
	memset(out, 0, sizeof(*out));
	out->desired = t ? t->ls.desired : conf_topic_regexes_match(l->re, l->nre, topic) ? MIRROR_SYNC : MIRROR_ASYNC;
	out->effective = t ? t->ls.effective : MIRROR_ASYNC;
	out->released = t && t->ls.released;
	out->recovery_pending = t && t->ls.recovery_pending;
	out->retry_attempt = t ? t->ls.retry_attempt : 0;
	out->npartitions = t ? t->npart : -1;
	out->lag = -1;
	if (!t)
		return;
	out->failing_partitions = t->nfailing;
	out->stalled_partitions = t->nstalled;
	out->held = t->held;
	out->lag = mirror_tstate_lag(t, 0, NULL);
}

int mirror_gate_topic_info(struct mirror_gate *g, const char *mirror, const char *topic,
			   struct mirror_topic_info *out)
{
	struct mirror_link *l = mirror_link_find(g, mirror);
	if (!l)
		return -1;
	topic_info(l, topic, mirror_tstate_get(l, topic, false), out);
	return 0;
}

static void partition_info(const struct mirror_pstate *ps, struct mirror_partition_info *out)
{
	memset(out, 0, sizeof(*out));
	out->progress = ps ? ps->progress : -1;
	out->source_hw = ps ? ps->sampled_hw : -1;
	out->isr = ps ? ps->isr : -1;
	out->min_isr = ps ? ps->min_isr : -1;
	out->failing_since_ms = ps ? ps->failing_since_ms : -1;
	if (ps) {
		snprintf(out->reason, sizeof(out->reason), "%s", ps->reason);
		snprintf(out->stall, sizeof(out->stall), "%s", ps->stall);
		out->held = ps->nheap;
	}
}

int mirror_gate_partition_info(struct mirror_gate *g, const char *mirror, const char *topic,
			       int32_t partition, struct mirror_partition_info *out)
{
	struct mirror_link *l = mirror_link_find(g, mirror);
	if (!l)
		return -1;
	struct mirror_tstate *t = mirror_tstate_get(l, topic, false);
	partition_info(t ? mirror_pstate_get(t, partition, false) : NULL, out);
	return 0;
}

struct reported_ctx {
	bool seen;
	char *why;
	size_t n;
};

static void topic_reported(struct mirror_tstate *t, void *arg)
{
	struct reported_ctx *c = arg;
	for (int32_t p = 0; p < t->nparts_alloc; p++) {
		const struct mirror_pstate *ps = t->parts[p];
		if (!ps)
			continue;
		if (ps->failing_since_ms >= 0 && ps->reason[0])
			snprintf(c->why, c->n, "%s", ps->reason);
		if (ps->progress >= 0 || ps->isr >= 0 || ps->min_isr >= 0)
			c->seen = true;
	}
}

bool mirror_gate_mirror_reported(struct mirror_gate *g, const char *mirror, char *why, size_t n)
{
	struct mirror_link *l = mirror_link_find(g, mirror);
	struct reported_ctx c = {.why = why, .n = n};
	if (n)
		why[0] = '\0';
	if (l)
		mirror_each_topic(NULL, l, topic_reported, &c);
	return c.seen;
}

static void topic_gates(struct mirror_tstate *t, void *arg)
{
	if (t->ls.effective == MIRROR_SYNC || t->ls.desired == MIRROR_SYNC)
		*(bool *)arg = true;
}

bool mirror_gate_mirror_idle(struct mirror_gate *g, const char *mirror)
{
	struct mirror_link *l = mirror_link_find(g, mirror);
	if (!l || !g->state_ready)
		return false;
	if (g->switched)
		return true; /* serving a destination: no mirror gates anything here, and none reports */
	if (l->listed != 0)
		return false;
	bool gates = false;
	mirror_each_topic(NULL, l, topic_gates, &gates);
	return !gates;
}

static json_t *partition_json(int32_t p, const struct mirror_pstate *ps)
{
	int64_t lag = mirror_pstate_lag(ps);
	json_t *jp = json_object();
	json_object_set_new(jp, "partition", json_integer(p));
	json_object_set_new(jp, "progress", json_integer(ps->progress));
	json_object_set_new(jp, "source_hw", json_integer(ps->sampled_hw));
	json_object_set_new(jp, "lag", lag >= 0 ? json_integer(lag) : json_null());
	json_object_set_new(jp, "isr", json_integer(ps->isr));
	json_object_set_new(jp, "min_isr", json_integer(ps->min_isr));
	json_object_set_new(jp, "failing_reason", ps->failing_since_ms >= 0 ? json_string(ps->reason) : json_null());
	json_object_set_new(jp, "stall_reason", ps->stall[0] ? json_string(ps->stall) : json_null());
	json_object_set_new(jp, "held", json_integer(ps->nheap));
	json_object_set_new(jp, "confirmed", ps->confirmed >= 0 ? json_integer(ps->confirmed) : json_null());
	return jp;
}

struct describe_ctx {
	const char *topic;          /* filter, or NULL */
	json_t *topics;             /* the mirror's "topics" array */
};

static void topic_json(struct mirror_tstate *t, void *arg)
{
	struct describe_ctx *c = arg;
	struct mirror_link *l = t->link;
	if (c->topic && strcmp(c->topic, t->topic) != 0)
		return;
	struct mirror_topic_info ti;
	topic_info(l, t->topic, t, &ti);
	json_t *jt = json_object(), *parts = json_array();
	char *dst = mirror_destination_topic(l->cm->topic_name, t->topic);
	json_object_set_new(jt, "topic", json_string(t->topic));
	json_object_set_new(jt, "destination_topic", dst ? json_string(dst) : json_null());
	free(dst);
	json_object_set_new(jt, "desired", json_string(mirror_type_str(t->ls.desired)));
	json_object_set_new(jt, "effective", json_string(mirror_type_str(t->ls.effective)));
	json_object_set_new(jt, "released", json_boolean(t->ls.released));
	json_object_set_new(jt, "recovery_pending", json_boolean(t->ls.recovery_pending));
	json_object_set_new(jt, "fenced", json_boolean(t->ls.fenced));
	json_object_set_new(jt, "retry_attempt", json_integer(t->ls.retry_attempt));
	json_object_set_new(jt, "generation", json_integer(t->ls.generation));
	if (t->ls.released && t->ls.fenced)
		json_object_set_new(jt, "annotation", json_string("failed over: released, and fenced until syncgate-ctl unfence"));
	else if (t->ls.released)
		json_object_set_new(jt, "annotation", json_string("released by source - recovery in flight"));
	else if (t->ls.fenced)
		json_object_set_new(jt, "annotation", json_string("fenced for failover: Produce refused"));
	json_object_set_new(jt, "lag", ti.lag >= 0 ? json_integer(ti.lag) : json_null());
	json_object_set_new(jt, "failing_partitions", json_integer(t->nfailing));
	json_object_set_new(jt, "stalled_partitions", json_integer(t->nstalled));
	json_object_set_new(jt, "partitions", parts);
	for (int32_t p = 0; p < t->nparts_alloc; p++)
		if (t->parts[p])
			json_array_append_new(parts, partition_json(p, t->parts[p]));
	json_array_append_new(c->topics, jt);
}

char *mirror_gate_describe_json(struct mirror_gate *g, const char *mirror, const char *topic)
{
	json_t *root = json_object(), *mirrors = json_array();
	json_object_set_new(root, "mirrors", mirrors);
	json_object_set_new(root, "state_ready", json_boolean(g->state_ready));
	json_object_set_new(root, "decider", json_boolean(g->decider));
	/* which cluster this sidecar's clients reach: "source", or the mirror whose destination it serves */
	json_object_set_new(root, "serving", json_string(g->switched ? g->switched : "source"));
	for (size_t i = 0; i < g->nlinks; i++) {
		struct mirror_link *l = g->links[i];
		if (mirror && strcmp(mirror, l->name) != 0)
			continue;
		json_t *jm = json_object(), *topics = json_array();
		json_object_set_new(jm, "name", json_string(l->name));
		json_object_set_new(jm, "offsets", json_string(l->cm->offsets == CONF_OFFSETS_MM2 ? "mm2" : "preserved"));
		json_object_set_new(jm, "progress", json_string(l->cm->progress == CONF_PROGRESS_TAIL ? "tail" : "poll"));
		json_object_set_new(jm, "topics", topics);
		json_array_append_new(mirrors, jm);
		struct describe_ctx c = {.topic = topic, .topics = topics};
		mirror_each_topic(NULL, l, topic_json, &c);
	}
	char *s = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	return s;
}
