/*
 * worker.c — a mirror's progress worker: its threads (see worker.h), their
 * start and stop, and the demands of the loop. Blocking librdkafka calls live
 * in these threads, never on the event loop.
 *
 * Handles (created by the main thread before it starts the others,
 * destroyed after all ended):
 *   dst   consumer handle on the destination: Metadata (ISR), DescribeConfigs
 *         (min.insync.replicas), ListOffsets(END) via offsets_for_times, and
 *         in `tail` mode the consumer assigned to the gated partitions.
 *   src   consumer handle on the source (conf upstream.broker, upstream.tls):
 *         topic listing and source high watermarks (lag).
 *   mm2c  (`mm2` only) consumer of the offset-syncs topic on the source.
 * All use isolation.level=read_uncommitted: the high watermark, not the LSO.
 *
 * Schedule: topics every 5 s (sooner when a demanded topic is unknown), ISR
 * and MinISR every 3 s (isr thread), a background round every 1 s (source
 * HW of every partition; destination progress of those whose HW is ahead,
 * of all every 2 s), and demanded partitions at once and back to back while
 * pending (`poll`, lane.c: paced up to poll_interval_ms while nothing moves),
 * or as records arrive (`tail`, `mm2`). With
 * preserved offsets each destination read is followed by a source read of
 * the same partitions before it is reported (diverged.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mirror/mm2_match.h"
#include "mirror/worker.h"

static void wtopic_free(struct mirror_wtopic *t)
{
	if (t->dst_rkt)
		rd_kafka_topic_destroy(t->dst_rkt);
	for (int32_t p = 0; p < t->npart_alloc; p++) {
		free(t->parts[p].mm2_syncs);
		free(t->parts[p].mm2_recent);
	}
	free(t->parts);
	free(t->topic);
	free(t->dst);
}

/* Take the demands for topics the table did not know (main thread). */
static void take_demands(struct mirror_worker *w)
{
	pthread_mutex_lock(&w->mu);
	struct mirror_wdemand *dq = w->dq;
	size_t n = w->ndq;
	w->dq = NULL;
	w->ndq = w->capdq = 0;
	pthread_mutex_unlock(&w->mu);
	pthread_mutex_lock(&w->tmu);
	for (size_t i = 0; i < n; i++) {
		struct mirror_wtopic *t = mirror_worker_topic(w, dq[i].topic, false);
		if (!t) {
			t = mirror_worker_topic(w, dq[i].topic, true);
			w->list_now = true;
		}
		struct mirror_wpart *p = t ? mirror_wtopic_part(t, dq[i].partition) : NULL;
		if (p) {
			bool fresh = dq[i].need > p->need; /* a record past what was demanded */
			if (fresh)
				p->need = dq[i].need;
			if (dq[i].until_ms > p->until_ms)
				p->until_ms = dq[i].until_ms;
			if (dq[i].source_hw >= 0)
				p->src_acked = dq[i].source_hw;
			if (w->offsets == CONF_OFFSETS_PRESERVED && w->progress == CONF_PROGRESS_POLL)
				mirror_lane_demand(w, (uint32_t)(t - w->topics), dq[i].partition, fresh);
		}
		free(dq[i].topic);
	}
	pthread_mutex_unlock(&w->tmu);
	free(dq);
}

static int64_t now_ms(void)
{
	return mirror_now_ms();
}

static bool stopping(struct mirror_worker *w)
{
	pthread_mutex_lock(&w->mu);
	bool s = w->stop;
	pthread_mutex_unlock(&w->mu);
	return s;
}

/* Sleep until `until_ms`, a demand arrives, or stop. */
static void wait_until(struct mirror_worker *w, int64_t until_ms)
{
	pthread_mutex_lock(&w->mu);
	while (!w->stop && w->ndq == 0) {
		int64_t now = now_ms();
		if (now >= until_ms)
			break;
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		int64_t d = until_ms - now;
		ts.tv_sec += d / 1000;
		ts.tv_nsec += (d % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) == ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&w->mu);
}

static void *worker_main(void *arg)
{
	struct mirror_worker *w = arg;
	char errstr[512];
	w->dst = rd_kafka_new(RD_KAFKA_CONSUMER, w->dst_conf, errstr, sizeof(errstr));
	if (!w->dst)
		LOG_E("mirror_client_failed", "mirror=%s side=destination reason=\"%s\"", w->name, errstr);
	else
		w->dst_conf = NULL; /* owned by the handle now */
	w->src = rd_kafka_new(RD_KAFKA_CONSUMER, w->src_conf, errstr, sizeof(errstr));
	if (!w->src)
		LOG_E("mirror_client_failed", "mirror=%s side=source reason=\"%s\"", w->name, errstr);
	else
		w->src_conf = NULL;
	if (w->mm2_conf) {
		w->mm2c = rd_kafka_new(RD_KAFKA_CONSUMER, w->mm2_conf, errstr, sizeof(errstr));
		if (!w->mm2c)
			LOG_E("mirror_client_failed", "mirror=%s side=mm2-offset-syncs reason=\"%s\"", w->name, errstr);
		else
			w->mm2_conf = NULL;
	}
	if (!w->dst || !w->src || (w->offsets == CONF_OFFSETS_MM2 && !w->mm2c))
		return NULL; /* logged; the gate times out waits on this mirror */

	LOG_I("mirror_worker_started", "mirror=%s offsets=%s progress=%s", w->name,
	      w->offsets == CONF_OFFSETS_MM2 ? "mm2" : "preserved",
	      w->progress == CONF_PROGRESS_TAIL ? "tail" : "poll");
	w->isr_started = pthread_create(&w->isr_th, NULL, mirror_isr_main, w) == 0;
	if (w->offsets == CONF_OFFSETS_MM2) {
		w->tail_started = pthread_create(&w->tail_th, NULL, mirror_mm2_main, w) == 0;
		w->match_started = pthread_create(&w->match_th, NULL, mirror_mm2_match_main, w) == 0;
	}
	else if (w->progress == CONF_PROGRESS_TAIL)
		w->tail_started = pthread_create(&w->tail_th, NULL, mirror_tail_main, w) == 0;
	if (!w->isr_started)
		LOG_E("mirror_thread_failed", "mirror=%s thread=isr", w->name);
	if (!w->tail_started && (w->offsets == CONF_OFFSETS_MM2 || w->progress == CONF_PROGRESS_TAIL))
		LOG_E("mirror_thread_failed", "mirror=%s thread=tail", w->name);
	int64_t next_topics = 0, next_lag = 0;
	while (!stopping(w)) {
		take_demands(w);
		int64_t now = now_ms();
		if (now >= next_topics || w->list_now) {
			if (mirror_refresh_topics(w)) { /* readiness: a mirror tracking no topic has nothing to report */
				pthread_mutex_lock(&w->tmu);
				int64_t n = (int64_t)w->ntopics;
				pthread_mutex_unlock(&w->tmu);
				mirror_bridge_post_listed(w->bridge, w->link_id, n);
			}
			w->list_now = false;
			next_topics = now_ms() + MIRROR_W_TOPICS_MS;
		}
		if (now >= next_lag) {
			mirror_poll_background(w);
			next_lag = now_ms() + MIRROR_W_LAG_MS;
		}
		wait_until(w, next_topics < next_lag ? next_topics : next_lag);
	}
	pthread_mutex_lock(&w->tmu);
	w->halt = true;
	pthread_cond_signal(&w->isr_cv);
	pthread_mutex_unlock(&w->tmu);
	if (w->isr_started)
		pthread_join(w->isr_th, NULL);
	if (w->tail_started)
		pthread_join(w->tail_th, NULL);
	if (w->match_started)
		pthread_join(w->match_th, NULL);
	mirror_lanes_join(w);
	LOG_I("mirror_worker_stopped", "mirror=%s", w->name);
	return NULL;
}

/* ------------------------------------------------------------------------ */
/* Start / stop / demand (loop thread)                                      */
/* ------------------------------------------------------------------------ */

static int set_prop(rd_kafka_conf_t *c, const char *mirror, const char *name, const char *value, bool secret)
{
	char errstr[256];
	if (rd_kafka_conf_set(c, name, value, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) {
		LOG_E("mirror_property_invalid", "mirror=%s property=%s value=\"%s\" reason=\"%s\"", mirror, name,
		      secret ? "<secret>" : value, errstr);
		return -1;
	}
	return 0;
}

/* librdkafka's own log lines, as syncgate log events (any librdkafka thread). */
static void rdkafka_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
	enum log_level l = level <= 3 ? LOG_ERROR : level == 4 ? LOG_WARN : level <= 6 ? LOG_INFO : LOG_DEBUG;
	conf_log(l, "librdkafka", "client=%s facility=%s message=\"%s\"", rd_kafka_name(rk), fac, buf);
}

static rd_kafka_conf_t *base_conf(const char *mirror, const char *role, bool producer)
{
	rd_kafka_conf_t *c = rd_kafka_conf_new();
	rd_kafka_conf_set_log_cb(c, rdkafka_log_cb);
	char id[256], group[300];
	snprintf(id, sizeof(id), "syncgate-%s-%s", mirror, role);
	if (producer) {
		if (set_prop(c, mirror, "client.id", id, false) || set_prop(c, mirror, "log_level", "4", false)) {
			rd_kafka_conf_destroy(c);
			return NULL;
		}
		return c;
	}
	/* A group id is needed for assign(); we never subscribe nor commit. */
	snprintf(group, sizeof(group), "syncgate-%s-%s-%ld", mirror, role, (long)getpid());
	if (set_prop(c, mirror, "client.id", id, false) || set_prop(c, mirror, "group.id", group, false) ||
	    set_prop(c, mirror, "isolation.level", "read_uncommitted", false) ||
	    set_prop(c, mirror, "enable.auto.commit", "false", false) ||
	    set_prop(c, mirror, "enable.auto.offset.store", "false", false) ||
	    set_prop(c, mirror, "enable.partition.eof", "false", false) ||
	    set_prop(c, mirror, "log_level", "4", false)) {
		rd_kafka_conf_destroy(c);
		return NULL;
	}
	return c;
}

rd_kafka_conf_t *mirror_source_conf(const struct conf *conf, const char *mirror, const char *role,
				    bool producer)
{
	rd_kafka_conf_t *c = base_conf(mirror, role, producer);
	if (!c)
		return NULL;
	char bs[300];
	const char *host = conf->upstream_broker.host ? conf->upstream_broker.host : "127.0.0.1";
	snprintf(bs, sizeof(bs), strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, conf->upstream_broker.port);
	const struct conf_tls *t = &conf->upstream_tls;
	/* brokers that advertise an address syncgate cannot dial (route.c) */
	mirror_route_set_conf(conf);
	mirror_route_install(c);
	int rc = set_prop(c, mirror, "bootstrap.servers", bs, false);
	if (!rc && t->enabled) {
		rc |= set_prop(c, mirror, "security.protocol", "ssl", false);
		if (t->ca)
			rc |= set_prop(c, mirror, "ssl.ca.location", t->ca, false);
		if (t->cert)
			rc |= set_prop(c, mirror, "ssl.certificate.location", t->cert, false);
		if (t->key)
			rc |= set_prop(c, mirror, "ssl.key.location", t->key, false);
		rc |= set_prop(c, mirror, "ssl.endpoint.identification.algorithm",
			       t->verify_hostname ? "https" : "none", false);
	}
	for (size_t i = 0; i < conf->nsource_props && !rc; i++) /* source.properties win */
		rc |= set_prop(c, mirror, conf->source_props[i].name, conf->source_props[i].value,
			       conf->source_props[i].secret);
	mirror_source_errors_install(c);
	if (rc) {
		rd_kafka_conf_destroy(c);
		return NULL;
	}
	return c;
}

rd_kafka_conf_t *mirror_dest_conf(const struct conf_mirror *cm)
{
	rd_kafka_conf_t *c = base_conf(cm->name, "dst", false);
	if (!c)
		return NULL;
	int rc = set_prop(c, cm->name, "bootstrap.servers", cm->bootstrap, false);
	if (cm->progress == CONF_PROGRESS_TAIL) {
		/* Fetch responses are the progress signal. A consumer fetch at
		 * the end returns as soon as the high watermark lets new
		 * records through, so a long poll costs no latency — and an
		 * idle destination is asked twice a second (librdkafka 2.0.2
		 * has no fetch sessions: each Fetch names every partition). */
		rc |= set_prop(c, cm->name, "fetch.wait.max.ms", "500", false);
		rc |= set_prop(c, cm->name, "fetch.error.backoff.ms", "50", false);
	}
	for (size_t i = 0; i < cm->nprops && !rc; i++) /* mirror properties win */
		rc |= set_prop(c, cm->name, cm->props[i].name, cm->props[i].value, cm->props[i].secret);
	if (rc) {
		rd_kafka_conf_destroy(c);
		return NULL;
	}
	return c;
}

rd_kafka_conf_t *mirror_match_dest_conf(const struct conf_mirror *cm)
{
	rd_kafka_conf_t *c = mirror_dest_conf(cm);
	/* only records below the last stable offset (mm2_match.c); prefetch bounded */
	if (c && (set_prop(c, cm->name, "isolation.level", "read_committed", false) ||
		  set_prop(c, cm->name, "queued.max.messages.kbytes", "8192", false))) {
		rd_kafka_conf_destroy(c);
		return NULL;
	}
	return c;
}

rd_kafka_conf_t *mirror_dest_admin_conf(const struct conf_mirror *cm, const char *role)
{
	rd_kafka_conf_t *c = base_conf(cm->name, role, true);
	if (!c)
		return NULL;
	int rc = set_prop(c, cm->name, "bootstrap.servers", cm->bootstrap, false);
	for (size_t i = 0; i < cm->nprops && !rc; i++) /* mirror properties win */
		rc |= set_prop(c, cm->name, cm->props[i].name, cm->props[i].value, cm->props[i].secret);
	if (rc) {
		rd_kafka_conf_destroy(c);
		return NULL;
	}
	return c;
}

static void worker_free(struct mirror_worker *w)
{
	if (w->dst_conf)
		rd_kafka_conf_destroy(w->dst_conf);
	if (w->src_conf)
		rd_kafka_conf_destroy(w->src_conf);
	if (w->mm2_conf)
		rd_kafka_conf_destroy(w->mm2_conf);
	if (w->match_src_conf)
		rd_kafka_conf_destroy(w->match_src_conf);
	if (w->match_dst_conf)
		rd_kafka_conf_destroy(w->match_dst_conf);
	for (size_t i = 0; i < w->ndq; i++)
		free(w->dq[i].topic);
	free(w->dq);
	conf_topic_regexes_free(w->re, w->nre);
	free(w->name);
	free(w->topic_name);
	free(w->mm2_topic);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->tmu);
	pthread_cond_destroy(&w->isr_cv);
	free(w);
}

struct mirror_worker *mirror_worker_start(const struct conf *conf, const struct conf_mirror *cm,
					  uint64_t link_id, struct mirror_bridge *b)
{
	struct mirror_worker *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &ca);
	pthread_cond_init(&w->isr_cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&w->tmu, NULL);
	w->link_id = link_id;
	w->mm2_nparts = -1;
	w->bridge = b;
	w->offsets = cm->offsets;
	w->progress = cm->progress;
	w->poll_ms = cm->poll_interval_ms > 0 ? cm->poll_interval_ms : 5;
	w->name = strdup(cm->name);
	w->topic_name = strdup(conf_mirror_topic_name(cm));
	if (cm->offsets == CONF_OFFSETS_MM2) {
		w->mm2_topic = conf_mirror_offset_syncs_topic(cm);
		w->mm2_conf = mirror_source_conf(conf, cm->name, "mm2", false);
		w->match_src_conf = mirror_source_conf(conf, cm->name, "match", false);
		w->match_dst_conf = mirror_match_dest_conf(cm);
		/* the match reads the source as MM2 does: a read_committed MM2 copies no aborted record */
		if (!w->mm2_topic || !w->mm2_conf || !w->match_src_conf || !w->match_dst_conf ||
		    set_prop(w->match_src_conf, cm->name, "queued.max.messages.kbytes", "8192", false) ||
		    (cm->mm2_isolation_level == CONF_ISOLATION_READ_COMMITTED &&
		     set_prop(w->match_src_conf, cm->name, "isolation.level", "read_committed", false)))
			goto fail;
	}
	if (!w->name || !w->topic_name || conf_mirror_sync_topics_compile(cm, &w->re, &w->nre) != 0)
		goto fail;
	w->dst_conf = mirror_dest_conf(cm);
	w->src_conf = mirror_source_conf(conf, cm->name, "src", false);
	if (!w->dst_conf || !w->src_conf)
		goto fail;
	if (pthread_create(&w->th, NULL, worker_main, w) != 0)
		goto fail;
	return w;
fail:
	worker_free(w);
	return NULL;
}

/* Workers whose stop was asked and whose threads have not ended yet (all
 * gates of the process): mirror_worker_stop hands the join to a detached
 * reaper thread, so the loop never waits for a blocking call in flight. */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int n;
} reaping = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

/* Join the worker's threads, then destroy its clients (librdkafka's destroy
 * waits for its own broker threads: up to seconds). Any thread but the worker's. */
static void worker_finish(struct mirror_worker *w)
{
	pthread_join(w->th, NULL); /* it ends the other threads */
	for (size_t i = 0; i < w->ntopics; i++)
		wtopic_free(&w->topics[i]);
	free(w->topics);
	if (w->mm2c) {
		rd_kafka_consumer_close(w->mm2c);
		rd_kafka_destroy(w->mm2c);
	}
	if (w->dst) {
		if (w->progress == CONF_PROGRESS_TAIL)
			rd_kafka_consumer_close(w->dst);
		rd_kafka_destroy(w->dst);
	}
	if (w->src)
		rd_kafka_destroy(w->src);
	worker_free(w);
}

static void *worker_reap(void *arg)
{
	worker_finish(arg);
	pthread_mutex_lock(&reaping.mu);
	reaping.n--;
	pthread_cond_broadcast(&reaping.cv);
	pthread_mutex_unlock(&reaping.mu);
	return NULL;
}

struct reap_call {
	void (*fn)(void *arg);
	void *arg;
};

static void *reap_call_main(void *arg)
{
	struct reap_call rc = *(struct reap_call *)arg;
	free(arg);
	rc.fn(rc.arg);
	pthread_mutex_lock(&reaping.mu);
	reaping.n--;
	pthread_cond_broadcast(&reaping.cv);
	pthread_mutex_unlock(&reaping.mu);
	return NULL;
}

void mirror_reap_detached(void (*fn)(void *arg), void *arg)
{
	struct reap_call *rc = malloc(sizeof(*rc));
	pthread_attr_t attr;
	pthread_t th;
	bool started = false;
	if (rc && pthread_attr_init(&attr) == 0) {
		*rc = (struct reap_call){fn, arg};
		pthread_mutex_lock(&reaping.mu);
		reaping.n++;
		pthread_mutex_unlock(&reaping.mu);
		started = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0 &&
			  pthread_create(&th, &attr, reap_call_main, rc) == 0;
		pthread_attr_destroy(&attr);
		if (!started) {
			pthread_mutex_lock(&reaping.mu);
			reaping.n--;
			pthread_mutex_unlock(&reaping.mu);
		}
	}
	if (!started) {
		free(rc);
		fn(arg);
	}
}

int64_t mirror_worker_mm2_translate(struct mirror_worker *w, const char *topic, int32_t partition, int64_t offset)
{
	int64_t to = -1;
	pthread_mutex_lock(&w->tmu);
	struct mirror_wtopic *kt = mirror_worker_topic(w, topic, false);
	if (kt && partition >= 0 && partition < kt->npart_alloc) {
		const struct mirror_wpart *wp = &kt->parts[partition];
		to = mirror_mm2_translate(wp->mm2_syncs, wp->mm2_nsyncs, offset);
		/* a pair the record match proved at or below it, closer than the syncs: exact */
		const struct mirror_wsync *best = NULL;
		for (uint32_t i = 0; i < wp->mm2_nrecent; i++)
			if (wp->mm2_recent[i].up <= offset && (!best || wp->mm2_recent[i].up > best->up))
				best = &wp->mm2_recent[i];
		int64_t near = best ? best->down + (best->up == offset ? 0 : 1) : -1;
		if (near > to)
			to = near;
	}
	pthread_mutex_unlock(&w->tmu);
	return to;
}

void mirror_worker_stop(struct mirror_worker *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_mutex_lock(&reaping.mu);
	reaping.n++;
	pthread_mutex_unlock(&reaping.mu);
	pthread_attr_t attr;
	pthread_t th;
	bool started = pthread_attr_init(&attr) == 0;
	if (started) {
		started = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0 &&
			  pthread_create(&th, &attr, worker_reap, w) == 0;
		pthread_attr_destroy(&attr);
	}
	if (!started) {
		LOG_W("mirror_worker_stop_inline", "mirror=%s reason=\"no reaper thread: the loop waits\"", w->name);
		worker_reap(w);
	}
}

int mirror_workers_stopping(void)
{
	pthread_mutex_lock(&reaping.mu);
	int n = reaping.n;
	pthread_mutex_unlock(&reaping.mu);
	return n;
}

void mirror_workers_wait_stopped(void)
{
	pthread_mutex_lock(&reaping.mu);
	while (reaping.n > 0)
		pthread_cond_wait(&reaping.cv, &reaping.mu);
	pthread_mutex_unlock(&reaping.mu);
}

void mirror_worker_suspect(struct mirror_worker *w, const char *topic, int32_t partition)
{
	pthread_mutex_lock(&w->tmu);
	struct mirror_wtopic *kt = mirror_worker_topic(w, topic, false);
	if (kt && partition >= 0 && partition < kt->npart_alloc) {
		kt->parts[partition].confirmed = false;
		kt->parts[partition].confirm_from = w->read_seq + 1;
		kt->parts[partition].src_acked = -1; /* went back: what it vouched for is void */
	}
	pthread_mutex_unlock(&w->tmu);
}

void mirror_worker_demand(struct mirror_worker *w, const char *topic, int32_t partition,
			  int64_t need, int64_t until_ms, int64_t source_hw)
{
	/* A known partition goes straight to its leader's lane. */
	pthread_mutex_lock(&w->tmu);
	struct mirror_wtopic *kt = mirror_worker_topic(w, topic, false);
	if (kt && partition >= 0 && partition < kt->npart_alloc) {
		struct mirror_wpart *wp = &kt->parts[partition];
		bool fresh = need > wp->need; /* a record past what was demanded: back to back */
		if (fresh)
			wp->need = need;
		if (until_ms > wp->until_ms)
			wp->until_ms = until_ms;
		if (source_hw >= 0)
			wp->src_acked = source_hw;
		if (w->offsets == CONF_OFFSETS_PRESERVED && w->progress == CONF_PROGRESS_POLL)
			mirror_lane_demand(w, (uint32_t)(kt - w->topics), partition, fresh);
		pthread_mutex_unlock(&w->tmu);
		return;
	}
	pthread_mutex_unlock(&w->tmu);
	char *t = strdup(topic);
	if (!t)
		return;
	pthread_mutex_lock(&w->mu);
	if (w->ndq == w->capdq) {
		size_t cap = w->capdq ? w->capdq * 2 : 16;
		struct mirror_wdemand *a = realloc(w->dq, cap * sizeof(*a));
		if (!a) {
			pthread_mutex_unlock(&w->mu);
			free(t);
			return;
		}
		w->dq = a;
		w->capdq = cap;
	}
	w->dq[w->ndq++] = (struct mirror_wdemand){t, partition, need, until_ms, source_hw};
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}
