/*
 * metrics.c — the metric registry and the Prometheus text exposition.
 *
 * Families and series are created under one mutex and never freed, so a
 * handle from metric_get() stays valid for the life of the process. Values
 * are updated lock-free: doubles live as their bit pattern in an
 * _Atomic uint64_t and are changed with compare-and-swap; histogram bucket
 * counts and the observation count are plain atomic integers.
 */
#include "conf/conf.h"

#include <math.h>
#include <stdio.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define METRIC_FAMILY_MAX_SERIES 1000

struct metric_family;

struct metric {
	struct metric_family *fam;  /* NULL for the discard sink */
	enum metric_type type;
	char *labels;               /* rendered label set without braces, "" for none */
	_Atomic uint64_t value;     /* counter/gauge: bits of a double */
	_Atomic uint64_t sum;       /* histogram: bits of a double */
	_Atomic uint64_t *counts;   /* histogram: per bucket (non-cumulative), [nbuckets] = +Inf */
	struct metric *next;        /* next series of the family, insertion order */
};

struct metric_family {
	char *name;
	char *help;                 /* escaped for the HELP line */
	enum metric_type type;
	double *buckets;            /* histogram upper bounds, ascending */
	size_t nbuckets;
	size_t nseries;             /* not counting the overflow series */
	struct metric *first, *last;
	struct metric *overflow;    /* the `overflow="true"` series, once needed */
	struct metric_family *next;
};

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct metric_family *reg_first, *reg_last;

/* Where misuse (bad name, type clash, out of memory) goes: updates are
 * accepted and never rendered, so callers need no NULL checks. */
static _Atomic uint64_t sink_counts[1];
static struct metric sink_scalar = { .labels = (char *)"" };
static struct metric sink_hist = { .type = METRIC_HISTOGRAM, .labels = (char *)"", .counts = sink_counts };

static uint64_t d2u(double d)
{
	uint64_t u;
	memcpy(&u, &d, sizeof(u));
	return u;
}

static double u2d(uint64_t u)
{
	double d;
	memcpy(&d, &u, sizeof(d));
	return d;
}

static void atomic_add_double(_Atomic uint64_t *p, double v)
{
	uint64_t old = atomic_load_explicit(p, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(p, &old, d2u(u2d(old) + v),
						      memory_order_relaxed, memory_order_relaxed))
		;
}

static bool valid_name(const char *s)
{
	if (!s || !*s)
		return false;
	for (const char *p = s; *p; p++) {
		char ch = *p;
		bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' || ch == ':' ||
			  (p != s && ch >= '0' && ch <= '9');
		if (!ok)
			return false;
	}
	return true;
}

/* HELP text escaping: backslash and newline. */
static char *help_escape(const char *s)
{
	size_t n = 0;
	for (const char *p = s; *p; p++)
		n += (*p == '\\' || *p == '\n') ? 2 : 1;
	char *out = malloc(n + 1), *o = out;
	if (!out)
		return NULL;
	for (const char *p = s; *p; p++) {
		if (*p == '\\') { *o++ = '\\'; *o++ = '\\'; }
		else if (*p == '\n') { *o++ = '\\'; *o++ = 'n'; }
		else *o++ = *p;
	}
	*o = 0;
	return out;
}

char *metric_label_escape(char *out, size_t n, const char *value)
{
	if (n == 0)
		return out;
	size_t o = 0;
	for (const char *p = value ? value : ""; *p; p++) {
		const char *rep = NULL;
		char one[2] = { *p, 0 };
		if (*p == '\\') rep = "\\\\";
		else if (*p == '"') rep = "\\\"";
		else if (*p == '\n') rep = "\\n";
		else rep = one;
		size_t l = strlen(rep);
		if (o + l >= n)
			break;
		memcpy(out + o, rep, l);
		o += l;
	}
	out[o] = 0;
	return out;
}

void metric_defs_get(const struct metric_def *defs, size_t n)
{
	if (n == 0 || *defs[0].out)
		return;
	for (size_t i = 0; i < n; i++)
		*defs[i].out = metric_get(defs[i].type, defs[i].name, defs[i].help, "", NULL, 0);
}

void metric_family_get(enum metric_type type, const char *name, const char *help, const char *prefix,
		       const char *key, const char *const *values, size_t n, struct metric **out)
{
	bool has_prefix = prefix && *prefix;
	for (size_t i = 0; i < n; i++) {
		char v[300], labels[640];
		metric_label_escape(v, sizeof(v), values[i]);
		snprintf(labels, sizeof(labels), "%s%s%s=\"%s\"", has_prefix ? prefix : "", has_prefix ? "," : "",
			 key, v);
		out[i] = metric_get(type, name, help, labels, NULL, 0);
	}
}

static struct metric *series_new(struct metric_family *f, const char *labels)
{
	struct metric *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->fam = f;
	m->type = f->type;
	m->labels = strdup(labels);
	if (f->type == METRIC_HISTOGRAM)
		m->counts = calloc(f->nbuckets + 1, sizeof(*m->counts));
	if (!m->labels || (f->type == METRIC_HISTOGRAM && !m->counts)) {
		free(m->labels);
		free((void *)m->counts);
		free(m);
		return NULL;
	}
	return m;
}

static struct metric *sink(enum metric_type type)
{
	return type == METRIC_HISTOGRAM ? &sink_hist : &sink_scalar;
}

struct metric *metric_get(enum metric_type type, const char *name, const char *help,
			  const char *labels, const double *buckets, size_t nbuckets)
{
	if (!labels)
		labels = "";
	if (!valid_name(name) || (type == METRIC_HISTOGRAM && (!buckets || nbuckets == 0))) {
		LOG_E("metric_invalid", "name=%s", name ? name : "(null)");
		return sink(type);
	}
	pthread_mutex_lock(&reg_mu);
	struct metric_family *f = reg_first;
	while (f && strcmp(f->name, name) != 0)
		f = f->next;
	struct metric *m = NULL;
	if (f && f->type != type) {
		pthread_mutex_unlock(&reg_mu);
		LOG_E("metric_type_clash", "name=%s", name);
		return sink(type);
	}
	if (!f) {
		f = calloc(1, sizeof(*f));
		if (!f)
			goto oom;
		f->name = strdup(name);
		f->help = help_escape(help ? help : "");
		f->type = type;
		if (type == METRIC_HISTOGRAM) {
			f->buckets = malloc(nbuckets * sizeof(*buckets));
			if (f->buckets)
				memcpy(f->buckets, buckets, nbuckets * sizeof(*buckets));
			f->nbuckets = nbuckets;
		}
		if (!f->name || !f->help || (type == METRIC_HISTOGRAM && !f->buckets)) {
			free(f->name);
			free(f->help);
			free(f->buckets);
			free(f);
			goto oom;
		}
		if (reg_last)
			reg_last->next = f;
		else
			reg_first = f;
		reg_last = f;
	}
	for (m = f->first; m; m = m->next)
		if (strcmp(m->labels, labels) == 0)
			break;
	if (!m && f->overflow && strcmp(f->overflow->labels, labels) == 0)
		m = f->overflow;
	if (!m && f->nseries >= METRIC_FAMILY_MAX_SERIES) {
		if (!f->overflow) {
			f->overflow = series_new(f, "overflow=\"true\"");
			if (!f->overflow)
				goto oom;
			LOG_W("metric_series_overflow", "family=%s max_series=%d", f->name,
			      METRIC_FAMILY_MAX_SERIES);
		}
		m = f->overflow;
	}
	if (!m) {
		m = series_new(f, labels);
		if (!m)
			goto oom;
		if (f->last)
			f->last->next = m;
		else
			f->first = m;
		f->last = m;
		f->nseries++;
	}
	pthread_mutex_unlock(&reg_mu);
	return m;
oom:
	pthread_mutex_unlock(&reg_mu);
	return sink(type);
}

void metric_add(struct metric *m, double v)
{
	if (!m || m->type == METRIC_HISTOGRAM || isnan(v))
		return;
	if (m->type == METRIC_COUNTER && v < 0)
		return; /* counters only go up */
	atomic_add_double(&m->value, v);
}

void metric_set(struct metric *m, double v)
{
	if (!m || m->type == METRIC_HISTOGRAM)
		return;
	atomic_store_explicit(&m->value, d2u(v), memory_order_relaxed);
}

void metric_observe(struct metric *m, double v)
{
	if (!m || m->type != METRIC_HISTOGRAM || isnan(v))
		return;
	size_t i = 0;
	if (m->fam) {
		const struct metric_family *f = m->fam;
		while (i < f->nbuckets && v > f->buckets[i])
			i++;
		atomic_add_double(&m->sum, v);
	}
	atomic_fetch_add_explicit(&m->counts[i], 1, memory_order_relaxed);
}

double metric_value(const struct metric *m)
{
	if (!m || m->type == METRIC_HISTOGRAM)
		return 0;
	return u2d(atomic_load_explicit(&((struct metric *)m)->value, memory_order_relaxed));
}

/* ---- rendering ---- */

struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	if (b->oom)
		return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if ((size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		size_t ncap = b->cap * 2 + (size_t)n;
		char *np = realloc(b->p, ncap);
		if (!np) {
			b->oom = true;
			return;
		}
		b->p = np;
		b->cap = ncap;
	}
}

/* Shortest text that reads back as the same double (Go's ParseFloat syntax). */
static const char *fmt_double(double d, char *buf, size_t n)
{
	if (isnan(d))
		return "NaN";
	if (isinf(d))
		return d > 0 ? "+Inf" : "-Inf";
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, n, "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	return buf;
}

static const char *type_str(enum metric_type t)
{
	switch (t) {
	case METRIC_COUNTER: return "counter";
	case METRIC_GAUGE: return "gauge";
	case METRIC_HISTOGRAM: return "histogram";
	}
	return "untyped";
}

static void render_series(struct sbuf *b, const struct metric_family *f, struct metric *m)
{
	char num[64], le[64];
	const char *sep = *m->labels ? "," : "";
	if (f->type != METRIC_HISTOGRAM) {
		double v = u2d(atomic_load_explicit(&m->value, memory_order_relaxed));
		if (*m->labels)
			sb_printf(b, "%s{%s} %s\n", f->name, m->labels, fmt_double(v, num, sizeof(num)));
		else
			sb_printf(b, "%s %s\n", f->name, fmt_double(v, num, sizeof(num)));
		return;
	}
	/* _count is the sum of the buckets read here, so +Inf == _count even
	 * while other threads observe. */
	uint64_t cum = 0;
	for (size_t i = 0; i <= f->nbuckets; i++) {
		cum += atomic_load_explicit(&m->counts[i], memory_order_relaxed);
		const char *bound = i < f->nbuckets ? fmt_double(f->buckets[i], le, sizeof(le)) : "+Inf";
		sb_printf(b, "%s_bucket{%s%sle=\"%s\"} %llu\n", f->name, m->labels, sep, bound,
			  (unsigned long long)cum);
	}
	double sum = u2d(atomic_load_explicit(&m->sum, memory_order_relaxed));
	const char *lb = *m->labels ? "{" : "", *rb = *m->labels ? "}" : "";
	sb_printf(b, "%s_sum%s%s%s %s\n", f->name, lb, m->labels, rb, fmt_double(sum, num, sizeof(num)));
	sb_printf(b, "%s_count%s%s%s %llu\n", f->name, lb, m->labels, rb, (unsigned long long)cum);
}

char *metrics_render(void)
{
	struct sbuf b = { .p = malloc(4096), .cap = 4096 };
	if (!b.p)
		return NULL;
	b.p[0] = 0;
	pthread_mutex_lock(&reg_mu);
	for (struct metric_family *f = reg_first; f; f = f->next) {
		if (*f->help)
			sb_printf(&b, "# HELP %s %s\n", f->name, f->help);
		sb_printf(&b, "# TYPE %s %s\n", f->name, type_str(f->type));
		for (struct metric *m = f->first; m; m = m->next)
			render_series(&b, f, m);
		if (f->overflow)
			render_series(&b, f, f->overflow);
	}
	pthread_mutex_unlock(&reg_mu);
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return b.p;
}
