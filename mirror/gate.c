/*
 * gate.c — the sync gate as a whole (KIP "High Watermark Advancement",
 * "Errors", "ASYNC→SYNC Promotion"): creating and freeing it with its links,
 * bridge, state log and timers, and dispatching what the bridge delivers
 * (progress reports, state-log records, decider changes, probe results) to
 * the files that handle them. The gate's parts, bottom-up:
 *   store.c        (mirror, topic, partition) state, lag, the topic walk
 *   wait.c         held waits; settle.c: the only release (mirror_tstate_gating/settle)
 *   transitions.c  type transitions, state-log apply/append, the decider
 *   report.c       destination progress reports
 *   link.c         one mirror's setup; config reload
 *   describe.c     read-only views
 * Everything here runs on the event-loop thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mirror/internal.h"

/* The bridge's delivery: one message from a worker, the state log or a
 * probe thread, on the loop thread. */
static void gate_apply(void *arg, const struct mirror_msg *m)
{
	struct mirror_gate *g = arg;
	switch (m->kind) {
	case MIRROR_MSG_REPORT:
		mirror_gate_apply_report(g, m);
		break;
	case MIRROR_MSG_STATE_RECORD:
		mirror_gate_apply_record(g, m->data, m->len, m->offset);
		break;
	case MIRROR_MSG_STATE_CAUGHT_UP:
		if (!g->state_ready)
			LOG_I("mirror_state_log_caught_up", "topic=%s", g->conf->state_topic ? g->conf->state_topic : "?");
		g->state_ready = true;
		metric_set(g->m_state_ready, 1);
		mirror_settle_all(g, NULL); /* held while the log was read: the end state decides */
		mirror_gate_tick(g);
		break;
	case MIRROR_MSG_DECIDER:
		if (g->decider != (m->offset != 0))
			LOG_I("mirror_decider_changed", "decider=%s", m->offset ? "true" : "false");
		g->decider = m->offset != 0;
		metric_set(g->m_decider, g->decider);
		mirror_gate_tick(g);
		break;
	case MIRROR_MSG_PROBE_DONE:
		mirror_ops_probe_done(g, m->ptr);
		break;
	case MIRROR_MSG_FAILOVER_DONE:
		mirror_failover_job_done(g, m->ptr);
		break;
	case MIRROR_MSG_SOURCE_HW:
		mirror_source_hw_done(g, m->ptr);
		break;
	case MIRROR_MSG_COMMIT_RESULT:
		mirror_commits_results(g, (uint64_t)m->offset);
		break;
	case MIRROR_MSG_LISTED:
		for (size_t i = 0; i < g->nlinks; i++)
			if (g->links[i]->id == m->link_id) /* else a stopped worker's */
				g->links[i]->listed = m->offset;
		break;
	}
}

/* The bridge drained its queue: lag and promotion of the topics reported
 * on, then the callbacks of waits resolved. */
static void gate_drained(void *arg)
{
	mirror_gate_reports_drained(arg);
	mirror_gate_flush_done(arg);
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct mirror_gate *g = arg;
	mirror_gate_tick(g);
	mirror_gate_flush_done(g);
}

struct mirror_gate *mirror_gate_new_ex(struct event_base *base, const struct conf *conf, unsigned flags)
{
	struct mirror_gate *g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->base = base;
	g->conf = conf;
	g->flags = flags;
	const char *outcomes[MIRROR_OUTCOME_COUNT];
	for (int o = 0; o < MIRROR_OUTCOME_COUNT; o++)
		outcomes[o] = mirror_outcome_str((enum mirror_outcome)o);
	metric_family_get(METRIC_COUNTER, "syncgate_gate_partition_outcomes_total",
			  "Held Produce partitions by how the gate resolved them", NULL, "outcome", outcomes,
			  MIRROR_OUTCOME_COUNT, g->m_outcome);
	g->m_decider = metric_get(METRIC_GAUGE, "syncgate_state_decider",
				  "1 when this sidecar takes automatic lifecycle decisions (holds the state partition)",
				  "", NULL, 0);
	g->m_state_ready = metric_get(METRIC_GAUGE, "syncgate_state_log_ready",
				      "1 once the state log was read up to its high watermark at boot", "", NULL, 0);
	{
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		g->origin = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 16) ^
			    (uint64_t)(uintptr_t)g;
	}
	/* admin calls (ops.c) learn of applied records through these hooks */
	g->on_record_applied = mirror_ops_record_applied;
	g->on_state_changed = mirror_ops_state_changed;
	g->bridge = mirror_bridge_new(base, gate_apply, gate_drained, g);
	g->tick_ev = event_new(base, -1, EV_PERSIST, tick_cb, g);
	if (mirror_waits_init(g) != 0 || !g->bridge || !g->tick_ev)
		goto fail;
	{
		struct timeval tv = {0, 250000};
		event_add(g->tick_ev, &tv);
	}
	if ((flags & MIRROR_GATE_NO_WORKERS) || !conf->state_topic) {
		/* No state log (unit tests; a loaded config always names one):
		 * this gate decides and applies its own records at once. */
		g->state_ready = g->decider = true;
		if (flags & MIRROR_GATE_STATE_PENDING)
			g->state_ready = false;
	} else if (!(g->log = mirror_statelog_start(conf, g->bridge))) {
		goto fail;
	}
	metric_set(g->m_decider, g->decider);
	metric_set(g->m_state_ready, g->state_ready);
	if (conf->nmirrors) {
		g->links = calloc(conf->nmirrors, sizeof(*g->links));
		if (!g->links)
			goto fail;
	}
	for (size_t i = 0; i < conf->nmirrors; i++) {
		struct mirror_link *l = mirror_link_new(g, &conf->mirrors[i]);
		if (!l)
			goto fail;
		g->links[g->nlinks++] = l;
	}
	for (size_t i = 0; i < g->nlinks; i++)
		mirror_link_start(g, g->links[i]);
	return g;
fail:
	LOG_E("mirror_gate_new_failed", "reason=\"out of memory or invalid sync_topics\"");
	mirror_gate_free(g);
	return NULL;
}

struct mirror_gate *mirror_gate_new(struct event_base *base, const struct conf *conf)
{
	return mirror_gate_new_ex(base, conf, 0);
}

void mirror_gate_free(struct mirror_gate *g)
{
	if (!g)
		return;
	mirror_statelog_stop(g->log); /* before the bridge it posts to */
	g->log = NULL;
	mirror_failover_free_all(g);  /* joins job threads; cancels their admin calls */
	mirror_ops_free_all(g);       /* joins probe threads (they post to the bridge) */
	mirror_switch_free_all(g);
	mirror_commits_free_all(g);
	mirror_source_hw_free(g);     /* joins its thread (it posts to the bridge) */
	mirror_hw_free(g);
	/* Pending waits are freed without callback; detach them first. */
	while (g->waits)
		mirror_wait_cancel(g->waits);
	for (size_t i = 0; i < g->nlinks; i++)
		mirror_link_free(g->links[i]);
	mirror_waits_free(g); /* resolved waits (no callback), the timers */
	free(g->links);
	for (size_t i = 0; i < g->nunapplied; i++)
		free(g->unapplied[i]);
	free(g->unapplied);
	if (g->tick_ev)
		event_free(g->tick_ev);
	mirror_workers_wait_stopped(); /* they post to the bridge until they end */
	mirror_bridge_free(g->bridge);
	free(g);
}

int mirror_gate_inject_report(struct mirror_gate *g, const struct mirror_report *r)
{
	return mirror_bridge_post(g->bridge, 0, r);
}

int mirror_gate_inject_record(struct mirror_gate *g, const char *json, int64_t offset)
{
	if (!json)
		return mirror_bridge_post_msg(g->bridge, MIRROR_MSG_STATE_CAUGHT_UP, -1, NULL, NULL, 0);
	return mirror_bridge_post_msg(g->bridge, MIRROR_MSG_STATE_RECORD, offset, NULL, json, strlen(json));
}

