/*
 * failover.c — failover in one command, and verification (KIP "Failover
 * Process", "Operator mitigation"; docs/operating.md "Failover").
 *
 * A failover of mirror M over the selected SYNC topics:
 *   1. fence: FENCE records (mirror_gate_fence, ops.c); every sidecar refuses
 *      Produce to the topics once it applied them (proxy/fence.c);
 *   2. drain: until M's progress reaches the source high watermark on every
 *      partition (bounded; stragglers reported);
 *   3. verify: per partition, source HW vs destination progress and, as a
 *      divergence check, the last data record on both sides (offset and a
 *      CRC-32C of key, value and headers);
 *   4. consumer offsets: committed offsets of the source groups on those
 *      topics copied to the destination (preserved: same offsets; mm2:
 *      translated through the offset-syncs, never past a record the
 *      destination lacks), skipping groups active on the destination;
 *   5. release: RELEASE records (mirror_gate_release_verified); the fence stays until
 *      syncgate-ctl unfence.
 * Steps 2–4 run on a job thread with its own librdkafka clients (blocking
 * calls); 1 and 5 are state-log records, i.e. admin calls of ops.c. A
 * failover that does not verify keeps the fence and releases nothing.
 * A verify is 2–3 without the fence; --dry-run is a verify that also lists
 * what 4 and 5 would do. A destination-only verify (source gone) compares
 * the destination HW with the offsets syncgate confirmed (this process's
 * figures and the ones passed in, e.g. from other sidecars' metrics).
 *
 * Threads: this file runs on the loop thread (steps 1 and 5, the answer);
 * steps 2–4 are failover_job.c and failover_offsets.c on the job thread.
 * The loop does not touch a job's fields while the job runs; the job
 * reports back through the bridge (MIRROR_MSG_FAILOVER_DONE,
 * mirror_failover_job_done). The shared state is in failover.h.
 */
#include <inttypes.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "mirror/failover.h"
#include "mirror/worker.h"

#define FO_DEFAULT_FAILOVER_MS 30000 /* drain bound of a failover */
#define FO_DEFAULT_VERIFY_MS 5000    /* catch-up bound of a verify */

static const char *const fo_status_str[] = {"OK", "MISSING", "DIVERGED", "UNKNOWN"};

static void fo_free(struct mirror_failover *f)
{
	if (f->pprev) {
		*f->pprev = f->next;
		if (f->next)
			f->next->pprev = f->pprev;
	}
	if (f->op)
		mirror_op_cancel(f->op);
	if (f->ev)
		event_free(f->ev);
	for (size_t i = 0; i < f->ntopics; i++) {
		for (int32_t k = 0; k < f->topics[i].npart; k++)
			free(f->topics[i].parts[k].syncs);
		free(f->topics[i].parts);
		free(f->topics[i].topic);
		free(f->topics[i].dst);
	}
	free(f->topics);
	for (size_t i = 0; i < f->nmoves; i++) {
		free(f->moves[i].group);
		free(f->moves[i].topic);
	}
	free(f->moves);
	if (f->src_conf)
		rd_kafka_conf_destroy(f->src_conf);
	if (f->dst_conf)
		rd_kafka_conf_destroy(f->dst_conf);
	if (f->mm2_conf)
		rd_kafka_conf_destroy(f->mm2_conf);
	if (f->match_conf)
		rd_kafka_conf_destroy(f->match_conf);
	json_decref(f->steps);
	free(f->mm2_topic);
	free(f->mirror);
	free(f->regex);
	conf_topic_regexes_free(f->sync_re, f->nsync_re);
	free(f->body);
	free(f);
}

static void fo_ev_cb(evutil_socket_t fd, short what, void *arg)
{
	struct mirror_failover *f = arg;
	if (f->cb)
		f->cb(f->arg, f->status, f->body ? f->body : "{\"error\":\"out of memory\"}");
	f->cb = NULL;
	if (!f->th_running)
		fo_free(f);
}

/* Answer (deferred to f->ev: never inside the call that started it). */
static void fo_answer(struct mirror_failover *f, int status, json_t *doc)
{
	if (f->phase == FO_ANSWERED) {
		json_decref(doc);
		return;
	}
	f->phase = FO_ANSWERED;
	f->status = status;
	f->body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	event_active(f->ev, EV_TIMEOUT, 0);
}

static void fo_error(struct mirror_failover *f, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fo_error(struct mirror_failover *f, int status, const char *fmt, ...)
{
	char msg[600];
	CONF_FORMAT_ARGS(msg, fmt);
	fo_answer(f, status, json_pack("{s:s}", "error", msg));
}

static json_t *jint(int64_t v)
{
	return v >= 0 ? json_integer(v) : json_null();
}

/* The verdict line: zero RPO, or the exact partitions and offsets. */
static json_t *verdict(struct mirror_failover *f)
{
	char buf[4096];
	size_t n = 0;
	if (f->verified) {
		if (f->dest_only)
			snprintf(buf, sizeof(buf), "every confirmed record is on %s (destination-only: offsets this "
				 "check was given; see docs/operating.md)", f->mirror);
		else
			snprintf(buf, sizeof(buf), "zero RPO: every acknowledged record is on %s", f->mirror);
		return json_string(buf);
	}
	if (f->error[0])
		return json_string(f->error);
	n += (size_t)snprintf(buf, sizeof(buf), "NOT verified:");
	int items = 0, more = 0;
	for (size_t i = 0; i < f->ntopics; i++)
		for (int32_t k = 0; k < f->topics[i].npart; k++) {
			struct fo_part *fp = &f->topics[i].parts[k];
			if (fp->status == FO_OK)
				continue;
			if (items++ >= FO_MAX_VERDICT_ITEMS) {
				more++;
				continue;
			}
			if (n < sizeof(buf))
				n += (size_t)snprintf(buf + n, sizeof(buf) - n, " %s[%d] %s%s%s;", f->topics[i].topic,
						      (int)fp->partition, fo_status_str[fp->status], fp->detail[0] ? ": " : "",
						      fp->detail);
		}
	if (more && n < sizeof(buf))
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, " and %d more", more);
	if (!items && n < sizeof(buf))
		snprintf(buf + n, sizeof(buf) - n, " no SYNC topic of mirror %s matches", f->mirror);
	return json_string(buf);
}

static void fo_finish(struct mirror_failover *f)
{
	json_t *parts = json_array(), *groups = json_array();
	for (size_t i = 0; i < f->ntopics; i++) {
		struct fo_topic *t = &f->topics[i];
		for (int32_t k = 0; k < t->npart; k++) {
			struct fo_part *fp = &t->parts[k];
			int64_t missing = fp->target >= 0 && fp->progress >= 0 && fp->target > fp->progress
						  ? fp->target - fp->progress : 0;
			if (f->dest_only)
				missing = fp->dst_hw >= 0 && fp->confirmed > fp->dst_hw ? fp->confirmed - fp->dst_hw : 0;
			json_t *p = json_pack("{s:s, s:s, s:i, s:s, s:o, s:o, s:o, s:o, s:o, s:I, s:s}", "topic", t->topic,
					      "destination_topic", t->dst, "partition", (int)fp->partition, "status",
					      fo_status_str[fp->status], "source_hw", jint(fp->src_hw), "destination_hw",
					      jint(fp->dst_hw), "progress", jint(fp->progress), "target", jint(fp->target),
					      "confirmed", jint(fp->confirmed), "missing", (json_int_t)missing, "detail",
					      fp->detail);
			if (p && fp->last_checked) {
				char cs[16], cd[16];
				snprintf(cs, sizeof(cs), "%08" PRIx32, fp->crc_src);
				snprintf(cd, sizeof(cd), "%08" PRIx32, fp->crc_dst);
				json_object_set_new(p, "last_record", json_pack("{s:o, s:s, s:o, s:s}", "source_offset",
					jint(fp->last_src_off), "source_crc", cs, "destination_offset",
					jint(fp->last_dst_off), "destination_crc", cd));
			}
			json_array_append_new(parts, p);
		}
	}
	for (size_t i = 0; i < f->nmoves; i++) {
		struct fo_move *m = &f->moves[i];
		json_array_append_new(groups, json_pack("{s:s, s:s, s:i, s:o, s:o, s:s, s:s}", "group", m->group,
							"topic", m->topic, "partition", (int)m->partition,
							"source_offset", jint(m->src_off), "destination_offset",
							jint(m->dst_off), "action", m->action, "note", m->note));
	}
	const char *mode = f->dest_only ? "verify-destination-only" : !f->failover ? "verify"
			   : f->dry_run ? "dry-run" : "failover";
	json_t *doc = json_pack("{s:s, s:s, s:s, s:b, s:o, s:b, s:b, s:b, s:o, s:o, s:O}", "mirror", f->mirror,
				"offsets", f->offsets == CONF_OFFSETS_MM2 ? "mm2" : "preserved", "mode", mode,
				"verified", f->verified && !f->error[0], "verdict", verdict(f), "drained", f->drained,
				"fenced", f->fencing, "released", f->released, "partitions", parts, "groups", groups,
				"steps", f->steps);
	if (doc && f->unreachable)
		json_object_set_new(doc, "unreachable", json_string(f->unreachable));
	if (doc && f->groups_note[0])
		json_object_set_new(doc, "groups_note", json_string(f->groups_note));
	if (doc && f->dry_run && f->verified)
		json_object_set_new(doc, "would_release", json_string(f->mirror));
	LOG_I("mirror_failover_done", "mirror=%s mode=%s verified=%s drained=%s released=%s groups=%zu", f->mirror,
	      mode, f->verified && !f->error[0] ? "true" : "false", f->drained ? "true" : "false",
	      f->released ? "true" : "false", f->nmoves);
	fo_answer(f, 200, doc);
}

static void step_answer(struct mirror_failover *f, const char *step, int status, const char *body)
{
	json_error_t e;
	json_t *j = json_loads(body, 0, &e);
	json_array_append_new(f->steps, json_pack("{s:s, s:i, s:o}", "step", step, "status", status,
						  "answer", j ? j : json_string(body)));
}

static void release_answered(void *arg, int status, const char *body)
{
	struct mirror_failover *f = arg;
	f->op = NULL;
	step_answer(f, "release", status, body);
	f->released = status == 200;
	if (!f->released)
		snprintf(f->error, sizeof(f->error), "verified, but the release failed (HTTP %d): run syncgate-ctl "
			 "--release-sync --mirror %s", status, f->mirror);
	fo_finish(f);
}

void mirror_failover_job_done(struct mirror_gate *g, struct mirror_failover *f)
{
	pthread_join(f->th, NULL);
	f->th_running = false;
	if (!f->cb) { /* cancelled */
		fo_free(f);
		return;
	}
	if (f->fencing && f->verified && !f->error[0]) {
		f->phase = FO_RELEASING;
		f->op = mirror_gate_release_verified(g, f->mirror, f->regex, release_answered, f);
		if (!f->op)
			fo_error(f, 500, "out of memory");
		return;
	}
	fo_finish(f);
}

static void start_job(struct mirror_failover *f)
{
	f->phase = FO_JOB;
	f->th_running = pthread_create(&f->th, NULL, mirror_failover_job_main, f) == 0;
	if (!f->th_running)
		fo_error(f, 500, "cannot start the failover job thread");
}

static void fence_answered(void *arg, int status, const char *body)
{
	struct mirror_failover *f = arg;
	f->op = NULL;
	step_answer(f, "fence", status, body);
	if (status != 200) {
		fo_error(f, status, "the fence failed (HTTP %d): %s", status, body);
		return;
	}
	start_job(f);
}

static int fo_add_topic(struct mirror_failover *f, const struct conf_mirror *cm, const char *topic)
{
	if (fo_topic_find(f, topic))
		return 0;
	struct fo_topic *a = realloc(f->topics, (f->ntopics + 1) * sizeof(*a));
	if (!a)
		return -1;
	f->topics = a;
	struct fo_topic *t = &a[f->ntopics];
	memset(t, 0, sizeof(*t));
	t->topic = strdup(topic);
	t->dst = mirror_destination_topic(conf_mirror_topic_name(cm), topic);
	f->ntopics++;
	return t->topic && t->dst ? 0 : -1;
}

/* destination-only: (topic, partition) gets confirmed offset `off` (max). */
static int fo_add_confirmed(struct mirror_failover *f, const struct conf_mirror *cm, const char *topic,
			    int32_t partition, int64_t off)
{
	if (fo_add_topic(f, cm, topic) != 0)
		return -1;
	struct fo_topic *t = fo_topic_find(f, topic);
	struct fo_part *fp = fo_part_find(t, partition);
	if (!fp) {
		struct fo_part *a = realloc(t->parts, (size_t)(t->npart + 1) * sizeof(*a));
		if (!a)
			return -1;
		t->parts = a;
		fp = &a[t->npart++];
		*fp = (struct fo_part){.partition = partition, .src_hw = -1, .dst_hw = -1, .progress = -1,
				       .target = -1, .confirmed = -1, .src_hw_after = -1};
	}
	if (off > fp->confirmed)
		fp->confirmed = off;
	return 0;
}

struct select_ctx {
	struct mirror_failover *f;
	const regex_t *re;
	bool oom;
};

/* A failover/verify covers the mirror's SYNC topics (desired or effective),
 * and the ones a (previous) failover released or fenced; destination-only:
 * every partition this process confirmed. */
static void select_topic(struct mirror_tstate *t, void *arg)
{
	struct select_ctx *c = arg;
	struct mirror_failover *f = c->f;
	if (c->re && regexec(c->re, t->topic, 0, NULL, 0) != 0)
		return;
	if (f->dest_only) {
		for (int32_t p = 0; p < t->nparts_alloc; p++)
			if (t->parts[p] && t->parts[p]->confirmed >= 0 &&
			    fo_add_confirmed(f, t->link->cm, t->topic, p, t->parts[p]->confirmed) != 0)
				c->oom = true;
		return;
	}
	if (t->ls.desired != MIRROR_SYNC && t->ls.effective != MIRROR_SYNC && !t->ls.released && !t->ls.fenced)
		return;
	if (fo_add_topic(f, t->link->cm, t->topic) != 0)
		c->oom = true;
}

static int topic_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fo_topic *)a)->topic, ((const struct fo_topic *)b)->topic);
}

static int part_cmp(const void *a, const void *b)
{
	return ((const struct fo_part *)a)->partition - ((const struct fo_part *)b)->partition;
}

struct mirror_failover *mirror_gate_failover(struct mirror_gate *g, const struct mirror_failover_req *req,
					     mirror_op_cb cb, void *arg)
{
	struct mirror_failover *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->g = g;
	f->bridge = g->bridge;
	f->cb = cb;
	f->arg = arg;
	f->ev = event_new(g->base, -1, 0, fo_ev_cb, f);
	f->steps = json_array();
	f->mirror = req->mirror ? strdup(req->mirror) : NULL;
	f->regex = req->topics_regex ? strdup(req->topics_regex) : NULL;
	f->failover = req->failover;
	f->dry_run = req->failover && req->dry_run;
	f->dest_only = !req->failover && req->destination_only;
	f->fencing = f->failover && !f->dry_run;
	f->timeout_ms = req->timeout_ms > 0 ? req->timeout_ms
					    : f->failover ? FO_DEFAULT_FAILOVER_MS : FO_DEFAULT_VERIFY_MS;
	atomic_init(&f->stop, false);
	if (!f->ev || !f->steps || (req->mirror && !f->mirror) || (req->topics_regex && !f->regex)) {
		fo_free(f);
		return NULL;
	}
	f->next = g->failovers;
	f->pprev = &g->failovers;
	if (g->failovers)
		g->failovers->pprev = &f->next;
	g->failovers = f;

	struct mirror_link *l = f->mirror ? mirror_link_find(g, f->mirror) : NULL;
	if (!l) {
		fo_error(f, 404, "unknown mirror %s (not in this sidecar's config)", f->mirror ? f->mirror : "(none)");
		return f;
	}
	if (!f->dest_only && !g->state_ready) {
		fo_error(f, 503, "the state log is not read yet (sidecar starting, or the source is gone: "
			 "use verify --destination-only); retry");
		return f;
	}
	f->offsets = l->cm->offsets;
	if (conf_mirror_sync_groups_compile(l->cm, &f->sync_re, &f->nsync_re) != 0) {
		fo_error(f, 500, "out of memory");
		return f;
	}
	regex_t re;
	if (f->regex) {
		char why[128];
		int rc = conf_topic_regex_compile(&re, f->regex, why, sizeof(why));
		if (rc != 0) {
			fo_error(f, rc == REG_ESPACE ? 500 : 400, "invalid --topics regex \"%s\"", f->regex);
			return f;
		}
	}
	struct select_ctx c = {.f = f, .re = f->regex ? &re : NULL};
	mirror_each_topic(NULL, l, select_topic, &c);
	for (size_t i = 0; f->dest_only && i < req->nconfirmed && !c.oom; i++) {
		const struct mirror_confirmed *x = &req->confirmed[i];
		if (x->topic && x->partition >= 0 && (!c.re || regexec(c.re, x->topic, 0, NULL, 0) == 0) &&
		    fo_add_confirmed(f, l->cm, x->topic, x->partition, x->offset) != 0)
			c.oom = true;
	}
	if (f->regex)
		regfree(&re);
	if (c.oom) {
		fo_error(f, 500, "out of memory");
		return f;
	}
	qsort(f->topics, f->ntopics, sizeof(*f->topics), topic_cmp);
	for (size_t i = 0; i < f->ntopics; i++)
		if (f->topics[i].npart > 1)
			qsort(f->topics[i].parts, (size_t)f->topics[i].npart, sizeof(*f->topics[i].parts), part_cmp);
	if (f->ntopics == 0) {
		fo_finish(f); /* not verified: nothing matches */
		return f;
	}
	f->dst_conf = mirror_dest_conf(l->cm);
	if (!f->dest_only)
		f->src_conf = mirror_source_conf(g->conf, l->name, "failover", false);
	if (f->offsets == CONF_OFFSETS_MM2 && !f->dest_only) {
		f->mm2_topic = conf_mirror_offset_syncs_topic(l->cm);
		f->mm2_conf = mirror_source_conf(g->conf, l->name, "failover-mm2", false);
		f->match_conf = mirror_match_dest_conf(l->cm);
	}
	if (!f->dst_conf || (!f->dest_only && !f->src_conf) ||
	    (f->offsets == CONF_OFFSETS_MM2 && !f->dest_only && (!f->mm2_topic || !f->mm2_conf || !f->match_conf))) {
		fo_error(f, 500, "cannot configure the clients");
		return f;
	}
	LOG_W("mirror_failover_start", "mirror=%s topics=%zu mode=%s timeout_ms=%d", f->mirror, f->ntopics,
	      f->dest_only ? "verify-destination-only" : !f->failover ? "verify" : f->dry_run ? "dry-run" : "failover",
	      f->timeout_ms);
	if (f->fencing) {
		f->phase = FO_FENCING;
		f->op = mirror_gate_fence(g, f->mirror, f->regex, true, fence_answered, f);
		if (!f->op)
			fo_error(f, 500, "out of memory");
		return f;
	}
	start_job(f);
	return f;
}

void mirror_failover_cancel(struct mirror_failover *f)
{
	if (!f)
		return;
	f->cb = NULL;
	if (f->op) {
		mirror_op_cancel(f->op);
		f->op = NULL;
	}
	if (f->th_running) {
		atomic_store(&f->stop, true); /* freed when the job reports back */
		return;
	}
	if (f->phase == FO_ANSWERED)
		event_del(f->ev);
	fo_free(f);
}

void mirror_failover_free_all(struct mirror_gate *g)
{
	while (g->failovers) {
		struct mirror_failover *f = g->failovers;
		if (f->th_running) {
			atomic_store(&f->stop, true);
			pthread_join(f->th, NULL); /* its bridge message is dropped with the bridge */
			f->th_running = false;
		}
		fo_free(f);
	}
}
