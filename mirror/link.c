/*
 * link.c — one configured mirror on the loop side (struct mirror_link): its
 * creation with the compiled sync_topics and its worker thread, and applying
 * a reloaded config (mirrors added, removed, or changed; a worker restarts
 * only when a setting it reads changed). Loop thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mirror/internal.h"

/* seconds (Prometheus base unit) */
static const double latency_buckets[] = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5,
					 1, 2, 5, 10, 30, 60};
static const double release_buckets[] = {0.00005, 0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01,
					 0.02, 0.05, 0.1, 1};

struct mirror_link *mirror_link_new(struct mirror_gate *g, const struct conf_mirror *cm)
{
	struct mirror_link *l = calloc(1, sizeof(*l));
	if (!l || !(l->name = strdup(cm->name))) {
		free(l);
		return NULL;
	}
	l->gate = g;
	l->cm = cm;
	l->id = ++g->next_id;
	l->listed = -1;
	if (conf_mirror_sync_topics_compile(cm, &l->re, &l->nre) != 0) {
		free(l->name);
		free(l);
		return NULL;
	}
	char m[160], labels[200];
	mirror_label_escape(m, sizeof(m), cm->name);
	snprintf(labels, sizeof(labels), "mirror=\"%s\"", m);
	l->m_latency = metric_get(METRIC_HISTOGRAM, "syncgate_mirror_sync_replication_latency_seconds",
				  "KIP MirrorSyncReplicationLatencyMs, in seconds: held part registered -> this mirror has it",
				  labels, latency_buckets, sizeof(latency_buckets) / sizeof(latency_buckets[0]));
	l->m_release = metric_get(METRIC_HISTOGRAM, "syncgate_mirror_release_delay_seconds",
				  "syncgate's own share of a release: the worker read the progress value -> the held "
				  "part it satisfies is released on the event loop (bridge, loop, heap)",
				  labels, release_buckets, sizeof(release_buckets) / sizeof(release_buckets[0]));
	return l;
}

void mirror_link_start(struct mirror_gate *g, struct mirror_link *l)
{
	if ((g->flags & MIRROR_GATE_NO_WORKERS) || g->switched)
		return; /* switched: no mirror of the source gates anything (switch.c) */
	l->worker = mirror_worker_start(g->conf, l->cm, l->id, g->bridge);
	if (!l->worker)
		LOG_E("mirror_worker_start_failed", "mirror=%s reason=\"see previous errors; no progress reports\"",
		      l->name);
}

static void topic_free(struct mirror_tstate *t, void *arg)
{
	mirror_tstate_release_waiters(t);
	metric_set(t->m_effective, 0);
	mirror_tstate_free(t);
}

/* Stop gating with this link (async predicate) and free it. */
void mirror_link_free(struct mirror_link *l)
{
	if (l->worker)
		mirror_worker_stop(l->worker);
	mirror_commits_link_free(l);
	mirror_each_topic(NULL, l, topic_free, NULL);
	free(l->buckets);
	conf_topic_regexes_free(l->re, l->nre);
	free(l->name);
	free(l);
}

/* A kept link's topic under the reloaded config (`arg`: the worker restarts). */
static void topic_reconfigured(struct mirror_tstate *t, void *arg)
{
	struct mirror_link *l = t->link;
	mirror_tstate_set_desired(t, conf_topic_regexes_match(l->re, l->nre, t->topic) ? MIRROR_SYNC : MIRROR_ASYNC);
	if (*(const bool *)arg)
		for (int32_t p = 0; p < t->nparts_alloc; p++)
			if (t->parts[p]) /* new destination view: progress unknown again */
				mirror_pstate_forget_view(t->parts[p]);
}

int mirror_gate_reconfigure(struct mirror_gate *g, const struct conf *conf)
{
	struct mirror_link **links = calloc(conf->nmirrors ? conf->nmirrors : 1, sizeof(*links));
	regex_t **res = calloc(conf->nmirrors ? conf->nmirrors : 1, sizeof(*res));
	size_t *nres = calloc(conf->nmirrors ? conf->nmirrors : 1, sizeof(*nres));
	bool *isnew = calloc(conf->nmirrors ? conf->nmirrors : 1, sizeof(*isnew));
	if (!links || !res || !nres || !isnew)
		goto fail;
	/* Everything that can fail first, so a bad reload changes nothing. */
	for (size_t i = 0; i < conf->nmirrors; i++) {
		const struct conf_mirror *cm = &conf->mirrors[i];
		struct mirror_link *old = mirror_link_find(g, cm->name);
		if (old) {
			if (conf_mirror_sync_topics_compile(cm, &res[i], &nres[i]) != 0)
				goto fail;
			links[i] = old;
		} else if ((links[i] = mirror_link_new(g, cm)) != NULL) {
			isnew[i] = true;
		} else {
			goto fail;
		}
	}
	const struct conf *old_conf = g->conf;
	g->conf = conf;
	/* Removed mirrors: release their waiters at once (async predicate). */
	for (size_t j = 0; j < g->nlinks; j++) {
		bool kept = false;
		for (size_t i = 0; i < conf->nmirrors; i++)
			kept |= links[i] == g->links[j];
		if (!kept) {
			LOG_I("mirror_removed", "mirror=%s reason=\"config reload\"", g->links[j]->name);
			mirror_link_free(g->links[j]);
		}
	}
	for (size_t i = 0; i < conf->nmirrors; i++) {
		struct mirror_link *l = links[i];
		const struct conf_mirror *cm = &conf->mirrors[i];
		if (isnew[i]) {
			LOG_I("mirror_added", "mirror=%s reason=\"config reload\"", cm->name);
			continue; /* started below with the new conf */
		}
		bool restart = conf_mirror_worker_changed(old_conf, l->cm, conf, cm);
		l->cm = cm;
		conf_topic_regexes_free(l->re, l->nre);
		l->re = res[i];
		l->nre = nres[i];
		res[i] = NULL;
		mirror_each_topic(NULL, l, topic_reconfigured, &restart);
		if (restart && l->worker) {
			LOG_I("mirror_worker_restart", "mirror=%s reason=\"connection settings changed\"", l->name);
			mirror_worker_stop(l->worker);
			l->worker = NULL;
		}
		if (restart) {
			l->id = ++g->next_id;
			l->listed = -1;
			mirror_link_start(g, l);
		}
	}
	free(g->links);
	g->links = links;
	g->nlinks = conf->nmirrors;
	for (size_t i = 0; i < g->nlinks; i++)
		if (isnew[i]) {
			mirror_gate_replay_unapplied(g, g->links[i]->name);
			mirror_link_start(g, g->links[i]);
		}
	free(isnew);
	free(res);
	free(nres);
	mirror_gate_schedule_done(g);
	return 0;
fail:
	if (links && res && nres && isnew)
		for (size_t i = 0; i < conf->nmirrors; i++) {
			if (res[i])
				conf_topic_regexes_free(res[i], nres[i]);
			if (links[i] && isnew[i])
				mirror_link_free(links[i]);
		}
	free(isnew);
	free(links);
	free(res);
	free(nres);
	LOG_E("mirror_reconfigure_failed", "reason=\"out of memory or invalid sync_topics; old mirrors kept\"");
	return -1;
}

