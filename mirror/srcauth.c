/*
 * srcauth.c — what syncgate's own source clients (state log, decider,
 * source high watermarks, MM2 offset-syncs, probes; source.properties) learn
 * about their credentials: librdkafka's authentication and TLS failures
 * (RD_KAFKA_RESP_ERR__AUTHENTICATION, __SSL) are logged once per distinct
 * reason per minute as `source_auth_failed` and kept, so /readyz can name
 * them. librdkafka's reasons never carry the password or key.
 *
 * Threads: the error callback runs on librdkafka threads; the record is
 * under a mutex and may be read from any thread.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "mirror/internal.h"

#define SRCAUTH_RELOG_MS 60000

static pthread_mutex_t auth_mu = PTHREAD_MUTEX_INITIALIZER;
static char auth_why[300];     /* last failure, "" none */
static int64_t auth_at_ms;     /* mirror_now_ms() of it */
static int64_t auth_logged_ms; /* when `auth_why` was last logged */

static void note_failure(rd_kafka_t *rk, int err, const char *reason)
{
	int64_t now = mirror_now_ms();
	pthread_mutex_lock(&auth_mu);
	bool same = !strcmp(auth_why, reason);
	snprintf(auth_why, sizeof(auth_why), "%s", reason);
	auth_at_ms = now;
	bool log = !same || now - auth_logged_ms >= SRCAUTH_RELOG_MS;
	if (log)
		auth_logged_ms = now;
	pthread_mutex_unlock(&auth_mu);
	if (log)
		LOG_E("source_auth_failed", "client=%s error=%s reason=\"%s\" hint=\"check source.properties "
		      "(security.protocol, sasl.*, ssl.*) and upstream.tls\"", rd_kafka_name(rk),
		      rd_kafka_err2name(err), reason);
}

static void source_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
	(void)opaque;
	if (err == RD_KAFKA_RESP_ERR__AUTHENTICATION || err == RD_KAFKA_RESP_ERR__SSL)
		note_failure(rk, err, reason);
	else
		LOG_D("source_client_error", "client=%s error=%s reason=\"%s\"", rd_kafka_name(rk),
		      rd_kafka_err2name(err), reason);
}

/*
 * librdkafka's log lines of a source client, as syncgate log events (the
 * same mapping as worker.c's rdkafka_log_cb). The error callback is only
 * served by rd_kafka_poll(), which some source clients never call, so
 * authentication and TLS failures are also recognised here, from the broker
 * thread's FAIL line.
 */
static void source_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
	enum log_level l = level <= 3 ? LOG_ERROR : level == 4 ? LOG_WARN : level <= 6 ? LOG_INFO : LOG_DEBUG;
	conf_log(l, "librdkafka", "client=%s facility=%s message=\"%s\"", rd_kafka_name(rk), fac, buf);
	if (level > 3 || strcmp(fac, "FAIL"))
		return;
	if (strstr(buf, "SASL authentication error") || strstr(buf, "Authentication failed"))
		note_failure((rd_kafka_t *)rk, RD_KAFKA_RESP_ERR__AUTHENTICATION, buf);
	else if (strstr(buf, "SSL handshake failed"))
		note_failure((rd_kafka_t *)rk, RD_KAFKA_RESP_ERR__SSL, buf);
}

void mirror_source_errors_install(struct rd_kafka_conf_s *c)
{
	rd_kafka_conf_set_error_cb(c, source_error_cb);
	rd_kafka_conf_set_log_cb(c, source_log_cb);
}

bool mirror_source_auth_failure(char *why, size_t n, int64_t within_ms)
{
	pthread_mutex_lock(&auth_mu);
	bool recent = auth_why[0] && mirror_now_ms() - auth_at_ms <= within_ms;
	if (recent)
		snprintf(why, n, "%s", auth_why);
	pthread_mutex_unlock(&auth_mu);
	return recent;
}
