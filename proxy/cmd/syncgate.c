/*
 * syncgate — the sidecar process.
 *
 *   syncgate --config FILE            run
 *   syncgate --check-config FILE      validate and exit
 *   syncgate --print-config-reference write the configuration reference
 *
 * Exit codes: 0 clean stop, 1 runtime failure (listen, TLS, mirrors),
 * 2 configuration error or bad usage.
 * Signals: SIGTERM/SIGINT stop gracefully (in-flight requests get up to
 * SYNCGATE_GRACE_MS, 10 s by default; a second signal stops at once);
 * SIGHUP reloads the configuration file: it is read on a thread, then applied
 * on the loop without dropping connections (mirrors, sync topics, timeouts,
 * error codes, TLS files, log level). A changed restart setting (the settings
 * table says which) is logged as WARN and keeps its running value; the live
 * changes next to it still apply. An invalid file is logged as ERROR
 * (reload_rejected, then one reload_error line per `file:line:col` error)
 * and the running configuration stays in force.
 */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>
#include <event2/thread.h>
#include <openssl/ssl.h>

#include "conf/conf.h"
#include "mirror/mirror.h"
#include "proxy/admin/admin.h"
#include "proxy/cmd/version.h"
#include "proxy/proxy.h"

struct syncgate {
	struct event_base *base;
	struct conf *conf;            /* in force */
	struct conf **retired;        /* replaced by reloads; freed at exit */
	size_t nretired;
	struct mirror_gate *gate;
	struct proxy_server *srv;
	struct proxy_admin *admin;
	int grace_ms;
	int signals;
	/* SIGHUP reload: the file is read on a thread (blocking I/O, secrets),
	 * the result applied on the loop by `ev_loaded` */
	struct event *ev_loaded;      /* activated by the load thread when done */
	pthread_t loader;
	bool loading;                 /* `loader` runs (joined by loaded_cb or at exit) */
	bool load_again;              /* a SIGHUP came while loading */
	struct conf *loaded;          /* the load thread's result, NULL on errors */
	struct conf_errors load_errs;
	struct metric *m_reloads[2];  /* failure, success */
	struct metric *m_reload_ok, *m_reload_ts;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: syncgate --config FILE\n"
		"       syncgate --check-config FILE\n"
		"       syncgate --print-config-reference\n"
		"       syncgate --version\n");
}

/* Process-level series: build info, start time, reload outcomes. */
static void process_metrics_init(struct syncgate *sg)
{
	metric_set(metric_get(METRIC_GAUGE, "syncgate_build_info",
			      "Always 1; the version and git commit of the running syncgate as labels.",
			      "version=\"" SYNCGATE_VERSION "\",commit=\"" SYNCGATE_COMMIT "\"", NULL, 0), 1);
	metric_set(metric_get(METRIC_GAUGE, "syncgate_start_time_seconds",
			      "Start time of the process since the Unix epoch, seconds.", "", NULL, 0),
		   (double)time(NULL));
	static const char *const result[2] = { "failure", "success" };
	metric_family_get(METRIC_COUNTER, "syncgate_config_reloads_total", "Configuration reloads (SIGHUP) by result.",
			  NULL, "result", result, 2, sg->m_reloads);
	sg->m_reload_ok = metric_get(METRIC_GAUGE, "syncgate_config_last_reload_successful",
				     "1 when the last reload succeeded (or none was tried), 0 when it failed.",
				     "", NULL, 0);
	sg->m_reload_ts = metric_get(METRIC_GAUGE, "syncgate_config_last_reload_success_timestamp_seconds",
				     "When the configuration in force was loaded, seconds since the Unix epoch.",
				     "", NULL, 0);
	metric_set(sg->m_reload_ok, 1);
	metric_set(sg->m_reload_ts, (double)time(NULL));
}

static void reload_done(struct syncgate *sg, bool ok)
{
	metric_add(sg->m_reloads[ok], 1);
	metric_set(sg->m_reload_ok, ok);
	if (ok)
		metric_set(sg->m_reload_ts, (double)time(NULL));
}

/* libevent's own warnings, as syncgate log events. */
static void libevent_log_cb(int severity, const char *msg)
{
	enum log_level l = severity >= EVENT_LOG_ERR ? LOG_ERROR : severity == EVENT_LOG_WARN ? LOG_WARN
			 : severity == EVENT_LOG_MSG ? LOG_INFO : LOG_DEBUG;
	conf_log(l, "libevent", "message=\"%s\"", msg);
}

static void stop_cb(evutil_socket_t sig, short what, void *arg)
{
	struct syncgate *sg = arg;
	if (sg->signals++ > 0) {
		LOG_W("shutdown_forced", "signal=%d", (int)sig);
		event_base_loopbreak(sg->base);
		return;
	}
	proxy_server_shutdown(sg->srv, sg->grace_ms);
}

/* Log a rejected file: one summary line, then one line per error. */
static void log_rejected(const char *path, const struct conf_errors *errs)
{
	LOG_E("reload_rejected", "path=\"%s\" errors=%zu reason=\"invalid configuration; the running "
	      "configuration stays in force\"", path, errs->n);
	for (size_t i = 0; i < errs->n; i++) {
		const struct conf_error *e = &errs->v[i];
		char msg[512];
		metric_label_escape(msg, sizeof(msg), e->message);
		if (e->line > 0)
			LOG_E("reload_error", "at=\"%s:%d:%d\" message=\"%s\"", path, e->line, e->col, msg);
		else
			LOG_E("reload_error", "at=\"%s\" message=\"%s\"", path, msg);
	}
}

/*
 * Apply a reloaded conf (taken). Restart settings that changed are logged and
 * set back to their running values first (conf_reload_keep_restart), so what
 * is applied differs from the running conf in live settings only. Loop thread.
 */
static void reload_apply(struct syncgate *sg, struct conf *next)
{
	char names[512];
	ssize_t kept = conf_reload_keep_restart(sg->conf, next, names, sizeof(names));
	struct conf **r = kept >= 0 ? realloc(sg->retired, (sg->nretired + 1) * sizeof(*r)) : NULL;
	if (!r) {
		LOG_E("reload_failed", "path=\"%s\" reason=\"out of memory\"", next->path);
		conf_free(next);
		reload_done(sg, false);
		return;
	}
	sg->retired = r;
	if (kept > 0)
		LOG_W("reload_restart_required", "settings=\"%s\" reason=\"changed settings need a "
		      "restart; their running values stay in force\"", names);
	/* the proxy first: its TLS files are what most often fails to load */
	if (proxy_admin_reconfigure(sg->admin, next) < 0) {
		LOG_E("reload_failed", "path=\"%s\" reason=\"admin.tls files could not be loaded; the running "
		      "configuration stays in force\"", next->path);
		conf_free(next);
		reload_done(sg, false);
		return;
	}
	if (proxy_server_reconfigure(sg->srv, next) < 0) {
		proxy_admin_reconfigure(sg->admin, sg->conf);
		LOG_E("reload_failed", "path=\"%s\" reason=\"TLS files could not be loaded; the running "
		      "configuration stays in force\"", next->path);
		conf_free(next);
		reload_done(sg, false);
		return;
	}
	if (mirror_gate_reconfigure(sg->gate, next) < 0) {
		LOG_E("reload_failed", "path=\"%s\" reason=\"mirrors could not be reconfigured; the "
		      "running configuration stays in force\"", next->path);
		mirror_gate_reconfigure(sg->gate, sg->conf);
		proxy_server_reconfigure(sg->srv, sg->conf);
		proxy_admin_reconfigure(sg->admin, sg->conf);
		conf_free(next);
		reload_done(sg, false);
		return;
	}
	conf_log_set_level(next->log_level);
	sg->retired[sg->nretired++] = sg->conf;
	sg->conf = next;
	reload_done(sg, true);
	LOG_I("reloaded", "path=\"%s\" mirrors=%zu log_level=%s restart_required=%zd", next->path,
	      next->nmirrors, conf_log_level_str(next->log_level), kept);
}

/* The load thread: read the file, hand the result to the loop. */
static void *load_main(void *arg)
{
	struct syncgate *sg = arg;
	sg->loaded = conf_load(sg->conf->path, &sg->load_errs);
	event_active(sg->ev_loaded, EV_READ, 0);
	return NULL;
}

static void load_start(struct syncgate *sg)
{
	LOG_I("reload", "path=\"%s\"", sg->conf->path);
	sg->loaded = NULL;
	sg->load_errs = (struct conf_errors){ 0 };
	if (pthread_create(&sg->loader, NULL, load_main, sg) != 0) {
		LOG_E("reload_failed", "path=\"%s\" reason=\"cannot start the load thread\"",
		      sg->conf->path);
		reload_done(sg, false);
		return;
	}
	sg->loading = true;
}

static void loaded_cb(evutil_socket_t fd, short what, void *arg)
{
	struct syncgate *sg = arg;
	pthread_join(sg->loader, NULL);
	sg->loading = false;
	if (sg->loaded) {
		reload_apply(sg, sg->loaded);
	} else {
		log_rejected(sg->conf->path, &sg->load_errs);
		reload_done(sg, false);
	}
	sg->loaded = NULL;
	conf_errors_free(&sg->load_errs);
	if (sg->load_again) {
		sg->load_again = false;
		load_start(sg);
	}
}

static void reload_cb(evutil_socket_t sig, short what, void *arg)
{
	struct syncgate *sg = arg;
	if (sg->loading)
		sg->load_again = true; /* the file may have changed after the read began */
	else
		load_start(sg);
}

static int run(const char *path)
{
	struct syncgate sg = { .grace_ms = 10000 };
	const char *grace = getenv("SYNCGATE_GRACE_MS");
	if (grace)
		sg.grace_ms = atoi(grace);
	struct conf_errors errs = { 0 };
	sg.conf = conf_load(path, &errs);
	if (!sg.conf) {
		conf_errors_print(&errs);
		conf_errors_free(&errs);
		return 2;
	}
	conf_log_set_level(sg.conf->log_level);
	process_metrics_init(&sg);
	signal(SIGPIPE, SIG_IGN);
	evthread_use_pthreads();
	event_set_log_callback(libevent_log_cb);
	SSL_library_init();

	int rc = 1;
	struct event *ev_term = NULL, *ev_int = NULL, *ev_hup = NULL;
	sg.base = event_base_new();
	if (!sg.base)
		goto out;
	sg.gate = mirror_gate_new(sg.base, sg.conf);
	if (!sg.gate)
		goto out;
	sg.srv = proxy_server_new(sg.base, sg.conf, sg.gate);
	if (!sg.srv)
		goto out;
	sg.admin = proxy_admin_new(sg.base, sg.conf, sg.srv, sg.gate);
	if (!sg.admin)
		goto out;
	ev_term = evsignal_new(sg.base, SIGTERM, stop_cb, &sg);
	ev_int = evsignal_new(sg.base, SIGINT, stop_cb, &sg);
	ev_hup = evsignal_new(sg.base, SIGHUP, reload_cb, &sg);
	sg.ev_loaded = event_new(sg.base, -1, 0, loaded_cb, &sg);
	if (!ev_term || !ev_int || !ev_hup || !sg.ev_loaded)
		goto out;
	evsignal_add(ev_term, NULL);
	evsignal_add(ev_int, NULL);
	evsignal_add(ev_hup, NULL);
	LOG_I("started", "version=%s commit=%s mode=%s listen=%s:%d upstream=%s:%d mirrors=%zu",
	      SYNCGATE_VERSION, SYNCGATE_COMMIT,
	      sg.conf->mode == CONF_MODE_GATEWAY ? "gateway" : "sidecar", sg.conf->listen_kafka.host,
	      sg.conf->listen_kafka.port, sg.conf->upstream_broker.host, sg.conf->upstream_broker.port,
	      sg.conf->nmirrors);
	event_base_dispatch(sg.base);
	LOG_I("stopped", "connections=%zu", proxy_server_nconns(sg.srv));
	rc = 0;
out:
	if (sg.loading) {
		pthread_join(sg.loader, NULL);
		conf_free(sg.loaded);
		conf_errors_free(&sg.load_errs);
	}
	if (sg.ev_loaded)
		event_free(sg.ev_loaded);
	if (ev_term)
		event_free(ev_term);
	if (ev_int)
		event_free(ev_int);
	if (ev_hup)
		event_free(ev_hup);
	proxy_admin_free(sg.admin);
	proxy_server_free(sg.srv);
	mirror_gate_free(sg.gate);
	if (sg.base)
		event_base_free(sg.base);
	for (size_t i = 0; i < sg.nretired; i++)
		conf_free(sg.retired[i]);
	free(sg.retired);
	conf_free(sg.conf);
	return rc;
}

/* --check-config: load, print every error or a one-line summary. */
static int check_config(const char *path)
{
	struct conf_errors errs = { 0 };
	struct conf *c = conf_load(path, &errs);
	if (!c) {
		conf_errors_print(&errs);
		conf_errors_free(&errs);
		return 2;
	}
	printf("%s: OK (%zu mirrors)\n", path, c->nmirrors);
	/* valid but without effect: say so rather than accept it silently */
	for (size_t i = 0; i < c->nmirrors; i++)
		if (c->mirrors[i].offsets == CONF_OFFSETS_MM2 && c->mirrors[i].progress == CONF_PROGRESS_TAIL)
			printf("%s: note: mirrors[%zu] (%s): 'progress: tail' has no effect with 'offsets: mm2' "
			       "(progress comes from the offset-syncs topic and the record match)\n",
			       path, i, c->mirrors[i].name);
	conf_free(c);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check-config", required_argument, NULL, 'k' },
		{ "print-config-reference", no_argument, NULL, 'r' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	/* exactly one action, no operands: anything else is a usage error */
	int action = 0, o;
	const char *path = NULL;
	while ((o = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		if (o == '?' || action) {
			usage(stderr);
			return 2;
		}
		action = o;
		path = optarg;
	}
	if (optind < argc) {
		fprintf(stderr, "syncgate: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	switch (action) {
	case 'c':
		return run(path);
	case 'k':
		return check_config(path);
	case 'r':
		conf_reference_write(stdout);
		return 0;
	case 'V':
		printf("syncgate %s (commit %s)\n", SYNCGATE_VERSION, SYNCGATE_COMMIT);
		return 0;
	case 'h':
		usage(stdout);
		return 0;
	default:
		usage(stderr);
		return 2;
	}
}
