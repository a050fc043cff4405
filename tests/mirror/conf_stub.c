/*
 * conf_stub.c — a private stand-in for conf/'s logging and metrics, linked
 * into the mirror tests only while conf/ has no sources in the build
 * (tests/mirror/meson.build decides). Same signatures as conf/conf.h.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"

struct metric {
	struct metric *next;
	enum metric_type type;
	char *name, *labels;
	double value;
	unsigned long count;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct metric *all;
static enum log_level level = LOG_WARN;

void conf_log_set_level(enum log_level lvl) { level = lvl; }
enum log_level conf_log_get_level(void) { return level; }

void conf_log(enum log_level lvl, const char *event, const char *fmt, ...)
{
	if (lvl > level)
		return;
	va_list ap;
	va_start(ap, fmt);
	pthread_mutex_lock(&mu);
	fprintf(stderr, "%d %s ", (int)lvl, event);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	pthread_mutex_unlock(&mu);
	va_end(ap);
}

struct metric *metric_get(enum metric_type type, const char *name, const char *help,
			  const char *labels, const double *buckets, size_t nbuckets)
{
	pthread_mutex_lock(&mu);
	struct metric *m;
	for (m = all; m; m = m->next)
		if (strcmp(m->name, name) == 0 && strcmp(m->labels, labels) == 0)
			break;
	if (!m) {
		m = calloc(1, sizeof(*m));
		m->type = type;
		m->name = strdup(name);
		m->labels = strdup(labels);
		m->next = all;
		all = m;
	}
	pthread_mutex_unlock(&mu);
	return m;
}

void metric_add(struct metric *m, double v) { pthread_mutex_lock(&mu); m->value += v; pthread_mutex_unlock(&mu); }
void metric_set(struct metric *m, double v) { pthread_mutex_lock(&mu); m->value = v; pthread_mutex_unlock(&mu); }
void metric_observe(struct metric *m, double v)
{
	pthread_mutex_lock(&mu);
	m->value += v;
	m->count++;
	pthread_mutex_unlock(&mu);
}
double metric_value(const struct metric *m) { return m->type == METRIC_HISTOGRAM ? (double)m->count : m->value; }
