/*
 * commits.c — synchronous consumer-group commits (docs/operating.md
 * "Consumer groups"). An OffsetCommit the source coordinator accepted, of a
 * group a mirror lists in `sync_groups`, is answered only once that
 * mirror's destination stored the same offsets for the same group: one
 * AlterConsumerGroupOffsets per mirror, on a destination admin client of
 * the mirror's own (created at its first commit). Results arrive on
 * librdkafka's thread, which only wakes the loop through the bridge
 * (MIRROR_MSG_COMMIT_RESULT); everything else runs on the loop thread.
 *
 * A commit ends at its deadline (one timer per commit), when every job
 * ended, or, for a mirror released, demoted or removed meanwhile, at once
 * (mirror_commits_topic_settled) — as held acks do.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "mirror/internal.h"
#include "mirror/wait.h"

/* A mirror's destination admin client for commits (struct mirror_link.commits). */
struct mirror_commits {
	uint64_t id;                 /* in its bridge messages: the link it belongs to */
	rd_kafka_t *rk;
	rd_kafka_queue_t *q;         /* admin results; its event callback wakes the loop */
	struct mirror_bridge *bridge;
};

/* One mirror's part of one commit. */
struct mirror_commit_job {
	struct mirror_link *l;       /* NULL once the mirror is gone */
	uint64_t id;                 /* the admin request's opaque */
	char **topics;               /* source topics it covers, malloc'd each */
	size_t ntopics;
	bool done;
};

struct mirror_commit {
	struct mirror_gate *g;
	struct mirror_commit *next;  /* g->commits */
	mirror_commit_cb cb;         /* NULL: cancelled */
	void *arg;
	struct event *timer;
	int64_t start_us;
	size_t njobs, pending;
	enum mirror_commit_outcome outcome;
	char detail[200];
	struct mirror_commit_job jobs[];
};

static struct metric *m_outcome[MIRROR_COMMIT_OUTCOME_COUNT], *m_latency, *m_parts[3], *m_groups;
static uint64_t next_job_id;

static const double latency_buckets[] = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5,
					 1, 2, 5, 10};

/* The groups counted by syncgate_group_commit_groups: sorted, malloc'd names. Loop thread. */
#define GROUPS_MAX 10000
#define GROUPS_MAX_STR "10,000"
static char **groups_seen;
static size_t ngroups_seen;

static int group_cmp(const void *key, const void *elem)
{
	return strcmp(key, *(char *const *)elem);
}

static void note_group(const char *group)
{
	if (ngroups_seen >= GROUPS_MAX ||
	    bsearch(group, groups_seen, ngroups_seen, sizeof(*groups_seen), group_cmp))
		return;
	if (!groups_seen && !(groups_seen = calloc(GROUPS_MAX, sizeof(*groups_seen))))
		return;
	size_t at = 0;
	while (at < ngroups_seen && strcmp(groups_seen[at], group) < 0)
		at++;
	char *copy = strdup(group);
	if (!copy)
		return;
	memmove(&groups_seen[at + 1], &groups_seen[at], (ngroups_seen - at) * sizeof(*groups_seen));
	groups_seen[at] = copy;
	metric_set(m_groups, (double)++ngroups_seen);
}

static void metrics_init(void)
{
	if (m_latency)
		return;
	const char *names[MIRROR_COMMIT_OUTCOME_COUNT];
	for (int o = 0; o < MIRROR_COMMIT_OUTCOME_COUNT; o++)
		names[o] = mirror_commit_outcome_str((enum mirror_commit_outcome)o);
	metric_family_get(METRIC_COUNTER, "syncgate_group_commits_total",
			  "Synchronous consumer-group commits (OffsetCommit held for the mirrors) by outcome", NULL,
			  "outcome", names, MIRROR_COMMIT_OUTCOME_COUNT, m_outcome);
	static const char *const parts[3] = {"written", "capped", "untranslatable"};
	metric_family_get(METRIC_COUNTER, "syncgate_group_commit_partitions_total",
			  "Committed partitions sent to a mirror's destination: as committed, capped at the mirror's "
			  "progress, or not written (mm2: no offset-sync at or below the offset)",
			  NULL, "kind", parts, 3, m_parts);
	m_groups = metric_get(METRIC_GAUGE, "syncgate_group_commit_groups",
			      "Distinct consumer groups whose commits this sidecar held for the mirrors since it "
			      "started (counted up to " GROUPS_MAX_STR ")", "", NULL, 0);
	m_latency = metric_get(METRIC_HISTOGRAM, "syncgate_group_commit_hold_seconds",
			       "Added latency of a synchronous group commit: the source coordinator's answer -> "
			       "every destination stored it", "", latency_buckets,
			       sizeof(latency_buckets) / sizeof(latency_buckets[0]));
}

const char *mirror_commit_outcome_str(enum mirror_commit_outcome o)
{
	switch (o) {
	case MIRROR_COMMIT_STORED: return "stored";
	case MIRROR_COMMIT_TIMEOUT: return "timeout";
	case MIRROR_COMMIT_ACTIVE: return "destination_active";
	case MIRROR_COMMIT_REFUSED: return "refused";
	case MIRROR_COMMIT_OUTCOME_COUNT: break;
	}
	return "?";
}

bool mirror_gate_syncs_group(struct mirror_gate *g, const char *group)
{
	for (size_t i = 0; g && i < g->nlinks; i++)
		if (conf_mirror_sync_group(g->links[i]->cm, group))
			return true;
	return false;
}

/* librdkafka thread: the results queue became non-empty. */
static void results_ready(rd_kafka_t *rk, void *opaque)
{
	(void)rk;
	struct mirror_commits *mc = opaque;
	mirror_bridge_post_msg(mc->bridge, MIRROR_MSG_COMMIT_RESULT, (int64_t)mc->id, NULL, NULL, 0);
}

static struct mirror_commits *commits_client(struct mirror_link *l)
{
	if (l->commits)
		return l->commits;
	struct mirror_commits *mc = calloc(1, sizeof(*mc));
	rd_kafka_conf_t *conf = mc ? mirror_dest_admin_conf(l->cm, "groups") : NULL;
	char err[256];
	if (!conf) {
		free(mc);
		return NULL;
	}
	mc->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
	if (!mc->rk) {
		rd_kafka_conf_destroy(conf);
		LOG_E("group_commit_client_failed", "mirror=%s reason=\"%s\"", l->name, err);
		free(mc);
		return NULL;
	}
	mc->id = ++l->gate->next_id;
	mc->bridge = l->gate->bridge;
	mc->q = rd_kafka_queue_new(mc->rk);
	rd_kafka_queue_cb_event_enable(mc->q, results_ready, mc);
	l->commits = mc;
	return mc;
}

static void client_destroy(void *arg)
{
	struct mirror_commits *mc = arg;
	rd_kafka_queue_cb_event_enable(mc->q, NULL, NULL);
	rd_kafka_event_t *ev;
	while ((ev = rd_kafka_queue_poll(mc->q, 0)))
		rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(mc->q);
	rd_kafka_destroy(mc->rk);
	free(mc);
}

static void commit_free(struct mirror_commit *c)
{
	for (struct mirror_commit **pp = &c->g->commits; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	if (c->timer)
		event_free(c->timer);
	for (size_t j = 0; j < c->njobs; j++) {
		for (size_t t = 0; t < c->jobs[j].ntopics; t++)
			free(c->jobs[j].topics[t]);
		free(c->jobs[j].topics);
	}
	free(c);
}

/* Every job ended (or the deadline passed): call back and free. */
static void commit_finish(struct mirror_commit *c)
{
	metrics_init();
	metric_add(m_outcome[c->outcome], 1);
	if (c->outcome == MIRROR_COMMIT_STORED)
		metric_observe(m_latency, (double)(mirror_now_ms() * 1000 - c->start_us) / 1e6);
	mirror_commit_cb cb = c->cb;
	void *arg = c->arg;
	char detail[sizeof(c->detail)];
	snprintf(detail, sizeof(detail), "%s", c->detail);
	enum mirror_commit_outcome o = c->outcome;
	commit_free(c);
	if (cb)
		cb(arg, o, detail);
}

/* Job j ended with `o` (STORED: stored, or its mirror no longer gates). */
static void job_end(struct mirror_commit *c, struct mirror_commit_job *j, enum mirror_commit_outcome o,
		    const char *why)
{
	if (j->done)
		return;
	j->done = true;
	if (o > c->outcome) {
		c->outcome = o;
		snprintf(c->detail, sizeof(c->detail), "mirror %s: %s", j->l ? j->l->name : "?", why);
	}
	if (--c->pending == 0)
		commit_finish(c);
}

static void deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct mirror_commit *c = arg;
	(void)fd;
	(void)what;
	if (c->pending == 0) { /* every job failed when it was sent */
		commit_finish(c);
		return;
	}
	for (size_t j = 0; j < c->njobs && c->pending; j++)
		if (!c->jobs[j].done) {
			if (c->jobs[j].l)
				LOG_W("group_commit_timeout", "mirror=%s reason=\"the destination did not confirm the commit "
				      "in time; answered retriable (COORDINATOR_LOAD_IN_PROGRESS)\"", c->jobs[j].l->name);
			bool last = c->pending == 1;
			job_end(c, &c->jobs[j], MIRROR_COMMIT_TIMEOUT, "the destination did not store the commit in time");
			if (last)
				return; /* c freed by the last job's end */
		}
}

/* Errors a destination group with members answers a commit from outside it. */
static bool group_has_members(rd_kafka_resp_err_t e)
{
	return e == RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID || e == RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION ||
	       e == RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS || e == RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID ||
	       (int)e == 110 /* FENCED_MEMBER_EPOCH */ || (int)e == 113 /* STALE_MEMBER_EPOCH */;
}

static struct mirror_commit_job *job_find(struct mirror_gate *g, uint64_t id, struct mirror_commit **owner)
{
	for (struct mirror_commit *c = g->commits; c; c = c->next)
		for (size_t j = 0; j < c->njobs; j++)
			if (c->jobs[j].id == id) {
				*owner = c;
				return &c->jobs[j];
			}
	return NULL;
}

/* One AlterConsumerGroupOffsets result. */
static void result_apply(struct mirror_gate *g, rd_kafka_event_t *ev)
{
	struct mirror_commit *c = NULL;
	struct mirror_commit_job *j = job_find(g, (uint64_t)(uintptr_t)rd_kafka_event_opaque(ev), &c);
	if (!j || j->done)
		return; /* ended meanwhile (deadline, cancelled, released) */
	rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
	char why[160];
	if (err) {
		snprintf(why, sizeof(why), "%s", rd_kafka_event_error_string(ev));
	} else {
		const rd_kafka_AlterConsumerGroupOffsets_result_t *res =
			rd_kafka_event_AlterConsumerGroupOffsets_result(ev);
		size_t n = 0;
		const rd_kafka_group_result_t **gr = res ? rd_kafka_AlterConsumerGroupOffsets_result_groups(res, &n) : NULL;
		const rd_kafka_error_t *ge = gr && n == 1 ? rd_kafka_group_result_error(gr[0]) : NULL;
		const rd_kafka_topic_partition_list_t *ps = gr && n == 1 ? rd_kafka_group_result_partitions(gr[0]) : NULL;
		if (!gr || n != 1) {
			err = RD_KAFKA_RESP_ERR__BAD_MSG;
			snprintf(why, sizeof(why), "no group in the answer");
		} else if (ge) {
			err = rd_kafka_error_code(ge);
			snprintf(why, sizeof(why), "%s", rd_kafka_error_string(ge));
		}
		for (int i = 0; !err && ps && i < ps->cnt; i++)
			if (ps->elems[i].err) {
				err = ps->elems[i].err;
				snprintf(why, sizeof(why), "%s [%" PRId32 "]: %s", ps->elems[i].topic, ps->elems[i].partition,
					 rd_kafka_err2str(err));
			}
	}
	if (!err) {
		job_end(c, j, MIRROR_COMMIT_STORED, "stored");
		return;
	}
	enum mirror_commit_outcome o = group_has_members(err) ? MIRROR_COMMIT_ACTIVE
				     : err == RD_KAFKA_RESP_ERR__TIMED_OUT || err == RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT
					       ? MIRROR_COMMIT_TIMEOUT
					       : MIRROR_COMMIT_REFUSED;
	static int64_t logged_ms = -1000000; /* one line a second at most: a failing destination fails them all */
	static uint64_t suppressed;
	int64_t now = mirror_now_ms();
	if (now - logged_ms >= 1000) {
		LOG_W("group_commit_failed", "mirror=%s outcome=%s reason=\"%s\"%s suppressed=%llu",
		      j->l ? j->l->name : "?", mirror_commit_outcome_str(o), why,
		      o == MIRROR_COMMIT_ACTIVE ? " hint=\"the group has members on the destination (consumers already "
						  "failed over?): their commits own its offsets there\"" : "",
		      (unsigned long long)suppressed);
		logged_ms = now;
		suppressed = 0;
	} else {
		suppressed++;
	}
	job_end(c, j, o, why);
}

void mirror_commits_results(struct mirror_gate *g, uint64_t id)
{
	struct mirror_commits *mc = NULL;
	for (size_t i = 0; i < g->nlinks && !mc; i++)
		if (g->links[i]->commits && g->links[i]->commits->id == id)
			mc = g->links[i]->commits;
	if (!mc)
		return; /* its mirror is gone: the reaper drops the rest */
	rd_kafka_event_t *ev;
	while ((ev = rd_kafka_queue_poll(mc->q, 0))) {
		if (rd_kafka_event_type(ev) == RD_KAFKA_EVENT_ALTERCONSUMERGROUPOFFSETS_RESULT)
			result_apply(g, ev);
		rd_kafka_event_destroy(ev);
	}
}

/* The destination offsets of this mirror's partitions of `parts`, as an
 * AlterConsumerGroupOffsets list (NULL when none). The topics it covers go
 * to j->topics. */
static rd_kafka_topic_partition_list_t *job_offsets(struct mirror_link *l, struct mirror_commit_job *j,
						    const struct mirror_commit_part *parts, size_t nparts)
{
	metrics_init();
	rd_kafka_topic_partition_list_t *list = NULL;
	const char *last = NULL;
	for (size_t i = 0; i < nparts; i++) {
		const struct mirror_commit_part *p = &parts[i];
		struct mirror_tstate *t = mirror_tstate_get(l, p->topic, false);
		if (!t || !mirror_tstate_gating(t) || p->offset < 0)
			continue;
		if (!last || strcmp(last, p->topic)) {
			bool have = false;
			for (size_t k = 0; k < j->ntopics && !have; k++)
				have = !strcmp(j->topics[k], p->topic);
			char **a = have ? j->topics : realloc(j->topics, (j->ntopics + 1) * sizeof(*a));
			if (!a || (!have && !(a[j->ntopics] = strdup(p->topic)))) {
				if (a)
					j->topics = a;
				goto fail;
			}
			j->topics = a;
			if (!have)
				j->ntopics++;
			last = p->topic;
		}
		int64_t off = p->offset;
		struct mirror_pstate *ps = mirror_pstate_get(t, p->partition, false);
		if (ps && ps->progress >= 0 && off > ps->progress) {
			off = ps->progress; /* never past a record the destination lacks */
			metric_add(m_parts[1], 1);
		}
		if (l->cm->offsets == CONF_OFFSETS_MM2) {
			off = l->worker ? mirror_worker_mm2_translate(l->worker, p->topic, p->partition, off) : -1;
			if (off < 0) {
				metric_add(m_parts[2], 1);
				continue; /* the destination keeps its older commit: read again, never skipped */
			}
		}
		char *dst = mirror_destination_topic(conf_mirror_topic_name(l->cm), p->topic);
		if (!dst || (!list && !(list = rd_kafka_topic_partition_list_new(8)))) {
			free(dst);
			goto fail;
		}
		rd_kafka_topic_partition_t *tp = rd_kafka_topic_partition_list_add(list, dst, p->partition);
		free(dst);
		tp->offset = off;
		if (p->metadata) {
			size_t n = strlen(p->metadata);
			if (!(tp->metadata = malloc(n ? n : 1)))
				goto fail;
			memcpy(tp->metadata, p->metadata, n);
			tp->metadata_size = n;
		}
		metric_add(m_parts[0], 1);
	}
	return list;
fail:
	if (list)
		rd_kafka_topic_partition_list_destroy(list);
	return (rd_kafka_topic_partition_list_t *)-1;
}

/* Send job j's offsets; 0 sent, 1 nothing to send, -1 failed. */
static int job_send(struct mirror_commit_job *j, const char *group,
		    const struct mirror_commit_part *parts, size_t nparts, int64_t deadline_ms)
{
	rd_kafka_topic_partition_list_t *list = job_offsets(j->l, j, parts, nparts);
	if (list == (rd_kafka_topic_partition_list_t *)-1)
		return -1;
	if (!list)
		return 1;
	struct mirror_commits *mc = commits_client(j->l);
	rd_kafka_AlterConsumerGroupOffsets_t *a = mc ? rd_kafka_AlterConsumerGroupOffsets_new(group, list) : NULL;
	rd_kafka_topic_partition_list_destroy(list);
	rd_kafka_AdminOptions_t *opt = a ? rd_kafka_AdminOptions_new(mc->rk, RD_KAFKA_ADMIN_OP_ALTERCONSUMERGROUPOFFSETS)
					 : NULL;
	if (!opt) {
		if (a)
			rd_kafka_AlterConsumerGroupOffsets_destroy(a);
		return -1;
	}
	int64_t left = deadline_ms - mirror_now_ms();
	char err[128];
	rd_kafka_AdminOptions_set_request_timeout(opt, (int)(left > 100 ? left : 100), err, sizeof(err));
	j->id = ++next_job_id;
	rd_kafka_AdminOptions_set_opaque(opt, (void *)(uintptr_t)j->id);
	rd_kafka_AlterConsumerGroupOffsets(mc->rk, &a, 1, opt, mc->q);
	rd_kafka_AdminOptions_destroy(opt);
	rd_kafka_AlterConsumerGroupOffsets_destroy(a);
	return 0;
}

int mirror_gate_commit(struct mirror_gate *g, const char *group, const struct mirror_commit_part *parts,
		       size_t nparts, int64_t deadline_ms, mirror_commit_cb cb, void *arg,
		       struct mirror_commit **out)
{
	*out = NULL;
	if (g->switched || !mirror_gate_syncs_group(g, group))
		return 0;
	struct mirror_commit *c = calloc(1, sizeof(*c) + g->nlinks * sizeof(c->jobs[0]));
	if (!c)
		return -1;
	c->g = g;
	c->cb = cb;
	c->arg = arg;
	c->start_us = mirror_now_ms() * 1000;
	for (size_t i = 0; i < g->nlinks; i++) {
		struct mirror_link *l = g->links[i];
		if (!conf_mirror_sync_group(l->cm, group) || (g->flags & MIRROR_GATE_NO_WORKERS))
			continue;
		struct mirror_commit_job *j = &c->jobs[c->njobs];
		j->l = l;
		int rc = job_send(j, group, parts, nparts, deadline_ms);
		if (rc == 1) {
			for (size_t t = 0; t < j->ntopics; t++)
				free(j->topics[t]);
			free(j->topics);
			memset(j, 0, sizeof(*j));
			continue; /* this mirror gates none of the partitions */
		}
		c->njobs++;
		if (rc < 0) { /* fail closed */
			j->done = true;
			c->outcome = MIRROR_COMMIT_REFUSED;
			snprintf(c->detail, sizeof(c->detail), "mirror %s: out of memory or no destination client", l->name);
		} else {
			c->pending++;
		}
	}
	if (c->njobs == 0) {
		free(c);
		return 0;
	}
	c->next = g->commits;
	g->commits = c;
	/* pending 0 (every job failed when sent): the timer answers at once, from the loop */
	int64_t left = c->pending ? deadline_ms - mirror_now_ms() : 0;
	struct timeval tv = {left > 0 ? left / 1000 : 0, left > 0 ? (left % 1000) * 1000 : 0};
	c->timer = evtimer_new(g->base, deadline_cb, c);
	if (!c->timer || evtimer_add(c->timer, &tv) != 0) {
		c->cb = NULL;
		commit_free(c);
		return -1;
	}
	note_group(group);
	*out = c;
	return 1;
}

void mirror_commit_cancel(struct mirror_commit *c)
{
	if (c)
		c->cb = NULL; /* ends as usual, without a callback */
}

void mirror_commits_topic_settled(struct mirror_tstate *t)
{
	if (mirror_tstate_gating(t))
		return;
	struct mirror_gate *g = t->link->gate;
	struct mirror_commit *next;
	for (struct mirror_commit *c = g->commits; c; c = next) {
		next = c->next;
		for (size_t k = 0; k < c->njobs; k++) {
			struct mirror_commit_job *j = &c->jobs[k];
			if (j->done || j->l != t->link)
				continue;
			bool gating = false;
			for (size_t i = 0; i < j->ntopics && !gating; i++) {
				struct mirror_tstate *o = mirror_tstate_get(j->l, j->topics[i], false);
				gating = o && mirror_tstate_gating(o);
			}
			if (!gating) {
				job_end(c, j, MIRROR_COMMIT_STORED, "no longer gates the topics");
				break; /* c may be freed */
			}
		}
	}
}

void mirror_commits_link_free(struct mirror_link *l)
{
	struct mirror_gate *g = l->gate;
	struct mirror_commit *next;
	for (struct mirror_commit *c = g->commits; c; c = next) {
		next = c->next;
		for (size_t k = 0; k < c->njobs; k++) {
			struct mirror_commit_job *j = &c->jobs[k];
			if (j->l != l)
				continue;
			j->l = NULL; /* the mirror is gone: it no longer holds the commit */
			if (!j->done)
				job_end(c, j, MIRROR_COMMIT_STORED, "removed"); /* may free c */
			break; /* one job per mirror */
		}
	}
	if (l->commits)
		mirror_reap_detached(client_destroy, l->commits);
	l->commits = NULL;
}

void mirror_commits_free_all(struct mirror_gate *g)
{
	while (g->commits) {
		g->commits->cb = NULL;
		commit_free(g->commits);
	}
}
