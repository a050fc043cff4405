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
 * SIGHUP reloads the configuration file.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/thread.h>
#include <openssl/ssl.h>

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
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: syncgate --config FILE\n"
		"       syncgate --check-config FILE\n"
		"       syncgate --print-config-reference\n"
		"       syncgate --version\n");
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

static void reload_cb(evutil_socket_t sig, short what, void *arg)
{
	struct syncgate *sg = arg;
	struct conf_errors errs = { 0 };
	struct conf *next = conf_load(sg->conf->path, &errs);
	if (!next) {
		LOG_E("reload_rejected", "path=\"%s\" errors=%zu first=\"%s\"", sg->conf->path, errs.n,
		      errs.n ? errs.v[0].message : "");
		conf_errors_print(&errs);
		conf_errors_free(&errs);
		return;
	}
	struct conf **r = realloc(sg->retired, (sg->nretired + 1) * sizeof(*r));
	if (!r) {
		conf_free(next);
		return;
	}
	sg->retired = r;
	if (mirror_gate_reconfigure(sg->gate, next) < 0 ||
	    proxy_server_reconfigure(sg->srv, next) < 0) {
		/* keep the old settings where the new ones could not be applied */
		LOG_E("reload_failed", "path=\"%s\"", next->path);
		mirror_gate_reconfigure(sg->gate, sg->conf);
		proxy_server_reconfigure(sg->srv, sg->conf);
		conf_free(next);
		return;
	}
	conf_log_set_level(next->log_level);
	sg->retired[sg->nretired++] = sg->conf;
	sg->conf = next;
	LOG_I("reloaded", "path=\"%s\" mirrors=%zu", next->path, next->nmirrors);
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
	signal(SIGPIPE, SIG_IGN);
	evthread_use_pthreads();
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
	if (!ev_term || !ev_int || !ev_hup)
		goto out;
	evsignal_add(ev_term, NULL);
	evsignal_add(ev_int, NULL);
	evsignal_add(ev_hup, NULL);
	LOG_I("started", "version=%s mode=%s listen=%s:%d upstream=%s:%d mirrors=%zu", SYNCGATE_VERSION,
	      sg.conf->mode == CONF_MODE_GATEWAY ? "gateway" : "sidecar", sg.conf->listen_kafka.host,
	      sg.conf->listen_kafka.port, sg.conf->upstream_broker.host, sg.conf->upstream_broker.port,
	      sg.conf->nmirrors);
	event_base_dispatch(sg.base);
	LOG_I("stopped", "connections=%zu", sg.srv->nconns);
	rc = 0;
out:
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
	int o;
	while ((o = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (o) {
		case 'c':
			return run(optarg);
		case 'k': {
			struct conf_errors errs = { 0 };
			struct conf *c = conf_load(optarg, &errs);
			if (!c) {
				conf_errors_print(&errs);
				conf_errors_free(&errs);
				return 2;
			}
			printf("%s: OK (%zu mirrors)\n", optarg, c->nmirrors);
			conf_free(c);
			return 0;
		}
		case 'r':
			conf_reference_write(stdout);
			return 0;
		case 'V':
			printf("syncgate %s\n", SYNCGATE_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	usage(stderr);
	return 2;
}
