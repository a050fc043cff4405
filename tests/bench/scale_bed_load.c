/*
 * tests/bench/scale_bed_load.c — the scale bed's load: a paced producer
 * (scale_bed_wire.c: acks=all, no retries, no idempotence; every
 * `linger_ms` one Produce naming every partition due) through syncgate or
 * straight to the source mock, and a copier playing the offset-preserving
 * mirror: it asks the source mock for the end offsets of the partitions the
 * producer wrote to (ListOffsets, batched), and copies exactly the records
 * found there, in order, to the same partition of every destination mock
 * (after an optional delay). A destination therefore never runs ahead of the
 * source and, with no retries and no other writer, its offsets are the
 * source's. Every record keeps its timestamps (sent, seen on the source,
 * copy sent, on each destination, acknowledged) for load_stats().
 */
#include <stdatomic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/bench/scale_bed.h"

#define RESULTS_MAX 200000 /* partitions in one answer */

struct rec {
	int64_t t_send, t_seen, t_copy;   /* written under l->mu */
	_Atomic int64_t t_ack;            /* 0: not answered */
	_Atomic int64_t t_dst[BED_MAX_MIRRORS];
	int64_t off;                      /* the offset it must get: its rank in its partition */
	int32_t p;
	int32_t next;                     /* next record of the same partition, -1 */
	_Atomic int err;                  /* the answer's error (0: success) */
	_Atomic int ndst;                 /* destinations that have it */
};

struct part {
	int64_t sent;      /* records produced to it */
	int64_t seen;      /* records the copier found on the source */
	int32_t head;      /* the first record not yet seen on the source, -1 */
	int32_t tail;      /* the last record produced, -1 */
	bool queued;       /* in the pending ring */
	int32_t slot;      /* scratch while a request is built: its index there, -1 */
};

/* A request in flight: its partitions and, partition after partition, the
 * records of each (recs). */
struct inflight {
	int32_t corr;
	int nparts;
	struct wire_part *parts;
	int32_t *recs;
};

/* One pipelined connection and the thread reading its answers in order. */
struct conn {
	struct bed_load *l;
	int fd;
	int dst;               /* destination index, -1: source side (acks) */
	pthread_t reader;
	bool started;
	pthread_mutex_t mu;    /* the FIFO and corr */
	struct inflight *q;
	size_t qhead, qlen, qcap;
	int32_t corr;
	struct wire_buf out;   /* under the sender's lock (l->mu) */
};

struct bed_load {
	struct load_spec s;
	struct conn via, direct, dst[BED_MAX_MIRRORS];
	int lo_fd;             /* the copier's ListOffsets connection to the source */
	pthread_t copier;
	bool copier_started;
	_Atomic bool stop;
	char *value;

	pthread_mutex_t mu;  /* guards what follows and the records' plain fields */
	pthread_cond_t cv;
	struct rec *recs;
	int64_t nrecs;
	struct part *parts;
	int32_t *ring;       /* pending partitions, capacity partitions */
	int64_t ring_head, ring_len;
	int32_t *copyq;      /* records seen on the source, not yet copied; capacity max_records */
	int64_t cq_head, cq_len;

	_Atomic int64_t answered, copied;
	_Atomic int64_t src_mismatch, dst_mismatch, dst_failed, conn_errors;
};

/* One answer of connection c: every record of request f. */
static void answered(struct conn *c, struct inflight *f, const struct wire_result *res, int nres)
{
	struct bed_load *l = c->l;
	int64_t now = bed_now_ns();
	int k = 0;
	for (int i = 0; i < f->nparts; i++) {
		const struct wire_result *w = NULL;
		if (i < nres && res[i].partition == f->parts[i].partition)
			w = &res[i];
		for (int j = 0; !w && j < nres; j++)
			if (res[j].partition == f->parts[i].partition)
				w = &res[j];
		int err = !w ? -1 : w->err;
		for (int32_t n = 0; n < f->parts[i].count; n++, k++) {
			struct rec *r = &l->recs[f->recs[k]];
			bool off_ok = w && w->offset + n == r->off;
			if (c->dst < 0) {
				atomic_store(&r->err, err);
				if (!err && !off_ok)
					atomic_fetch_add(&l->src_mismatch, 1);
				atomic_store(&r->t_ack, now);
				atomic_fetch_add(&l->answered, 1);
			} else if (err) {
				atomic_fetch_add(&l->dst_failed, 1);
			} else {
				if (!off_ok)
					atomic_fetch_add(&l->dst_mismatch, 1);
				atomic_store(&r->t_dst[c->dst], now);
				if (atomic_fetch_add(&r->ndst, 1) + 1 == l->s.mirrors)
					atomic_fetch_add(&l->copied, 1);
			}
		}
	}
}

static void *reader_main(void *arg)
{
	struct conn *c = arg;
	struct wire_buf in = {0};
	struct wire_result *res = malloc(sizeof(*res) * RESULTS_MAX);
	while (res && wire_read(c->fd, &in) == 0) {
		pthread_mutex_lock(&c->mu);
		if (c->qlen == 0 || c->q[c->qhead].corr != wire_corr(&in)) {
			pthread_mutex_unlock(&c->mu);
			fprintf(stderr, "scale_bed: an answer out of order (correlation id %d)\n", wire_corr(&in));
			atomic_fetch_add(&c->l->conn_errors, 1);
			break;
		}
		struct inflight f = c->q[c->qhead];
		c->qhead = (c->qhead + 1) % c->qcap;
		c->qlen--;
		pthread_mutex_unlock(&c->mu);
		int n = wire_parse(in.data, in.len, 0, res, RESULTS_MAX);
		answered(c, &f, res, n < 0 ? 0 : n);
		free(f.parts);
		free(f.recs);
	}
	if (!atomic_load(&c->l->stop))
		atomic_fetch_add(&c->l->conn_errors, 1);
	free(res);
	free(in.data);
	return NULL;
}

static int conn_open(struct bed_load *l, struct conn *c, const char *hostport, int dst)
{
	c->l = l;
	c->dst = dst;
	pthread_mutex_init(&c->mu, NULL);
	if ((c->fd = wire_connect(hostport)) < 0) {
		fprintf(stderr, "scale_bed: cannot connect to %s\n", hostport);
		return -1;
	}
	if (pthread_create(&c->reader, NULL, reader_main, c) != 0)
		return -1;
	c->started = true;
	return 0;
}

static void conn_close(struct conn *c)
{
	if (c->fd > 0)
		shutdown(c->fd, SHUT_RDWR);
	if (c->started)
		pthread_join(c->reader, NULL);
	if (c->fd > 0)
		close(c->fd);
	for (size_t i = 0; i < c->qlen; i++) {
		free(c->q[(c->qhead + i) % c->qcap].parts);
		free(c->q[(c->qhead + i) % c->qcap].recs);
	}
	free(c->q);
	free(c->out.data);
	if (c->l)
		pthread_mutex_destroy(&c->mu);
}

/* Send a Produce of `nparts` partitions (records recs, partition after
 * partition) on c; takes ownership of parts and recs. 0 or -1. */
static int conn_send(struct conn *c, struct wire_part *parts, int nparts, int32_t *recs)
{
	struct bed_load *l = c->l;
	pthread_mutex_lock(&c->mu);
	if (c->qlen == c->qcap) {
		size_t cap = c->qcap ? c->qcap * 2 : 1024;
		struct inflight *q = malloc(cap * sizeof(*q));
		if (!q) {
			pthread_mutex_unlock(&c->mu);
			return -1;
		}
		for (size_t i = 0; i < c->qlen; i++)
			q[i] = c->q[(c->qhead + i) % c->qcap];
		free(c->q);
		c->q = q;
		c->qhead = 0;
		c->qcap = cap;
	}
	int32_t corr = ++c->corr;
	c->q[(c->qhead + c->qlen) % c->qcap] = (struct inflight){corr, nparts, parts, recs};
	c->qlen++;
	pthread_mutex_unlock(&c->mu);
	wire_produce(&c->out, corr, BED_TOPIC, parts, nparts, l->s.record_bytes, l->value, 30000);
	if (wire_write(c->fd, &c->out) != 0) {
		atomic_fetch_add(&l->conn_errors, 1);
		return -1;
	}
	return 0;
}

/* Group records idx[0..n) (in offset order within each partition) by
 * partition into parts + recs for conn_send (under l->mu). */
static int group(struct bed_load *l, const int32_t *idx, int64_t n, struct wire_part **pparts, int32_t **precs)
{
	struct wire_part *parts = malloc(sizeof(*parts) * (size_t)(n ? n : 1));
	int32_t *recs = malloc(sizeof(*recs) * (size_t)(n ? n : 1));
	int np = 0;
	if (!parts || !recs) {
		free(parts);
		free(recs);
		return -1;
	}
	for (int64_t i = 0; i < n; i++) {
		struct part *pt = &l->parts[l->recs[idx[i]].p];
		if (pt->slot < 0) {
			pt->slot = np;
			parts[np++] = (struct wire_part){l->recs[idx[i]].p, 0};
		}
		parts[pt->slot].count++;
	}
	int64_t *at = malloc(sizeof(*at) * (size_t)(np ? np : 1));
	if (!at) {
		free(parts);
		free(recs);
		return -1;
	}
	for (int i = 0, sum = 0; i < np; sum += parts[i].count, i++)
		at[i] = sum;
	for (int64_t i = 0; i < n; i++)
		recs[at[l->parts[l->recs[idx[i]].p].slot]++] = idx[i];
	for (int i = 0; i < np; i++)
		l->parts[parts[i].partition].slot = -1;
	free(at);
	*pparts = parts;
	*precs = recs;
	return np;
}

/* Records [seen, end) of partition p are on the source (under l->mu): they
 * become copies due at now + delay. */
static void seen_upto(struct bed_load *l, int32_t p, int64_t end, int64_t now)
{
	struct part *pt = &l->parts[p];
	while (pt->seen < end && pt->head >= 0) {
		struct rec *r = &l->recs[pt->head];
		r->t_seen = now;
		l->copyq[(l->cq_head + l->cq_len) % l->s.max_records] = pt->head;
		l->cq_len++;
		pt->head = r->next;
		pt->seen++;
	}
}

/* Send the copies that are due, one Produce per destination (under l->mu). */
static void copy_due(struct bed_load *l, int64_t now)
{
	int64_t delay = (int64_t)l->s.delay_ms * 1000000, n = 0;
	while (n < l->cq_len && l->recs[l->copyq[(l->cq_head + n) % l->s.max_records]].t_seen + delay <= now)
		n++;
	if (n == 0)
		return;
	int32_t *idx = malloc(sizeof(*idx) * (size_t)n);
	if (!idx)
		return;
	int64_t t = bed_now_ns();
	for (int64_t k = 0; k < n; k++) {
		idx[k] = l->copyq[(l->cq_head + k) % l->s.max_records];
		l->recs[idx[k]].t_copy = t;
	}
	l->cq_head = (l->cq_head + n) % l->s.max_records;
	l->cq_len -= n;
	for (int m = 0; m < l->s.mirrors; m++) {
		struct wire_part *parts;
		int32_t *recs;
		int np = group(l, idx, n, &parts, &recs);
		if (np < 0 || conn_send(&l->dst[m], parts, np, recs) != 0)
			atomic_fetch_add(&l->dst_failed, n);
	}
	free(idx);
}

static void *copier_main(void *arg)
{
	struct bed_load *l = arg;
	int32_t *batch = malloc(sizeof(*batch) * (size_t)l->s.partitions);
	struct wire_result *res = malloc(sizeof(*res) * (size_t)l->s.partitions);
	struct wire_buf out = {0}, in = {0};
	int32_t corr = 0;
	pthread_mutex_lock(&l->mu);
	while (batch && res && !atomic_load(&l->stop)) {
		copy_due(l, bed_now_ns());
		int n = 0;
		while (l->ring_len > 0) {
			batch[n++] = l->ring[l->ring_head];
			l->ring_head = (l->ring_head + 1) % l->s.partitions;
			l->ring_len--;
		}
		if (n == 0) {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_nsec += 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&l->cv, &l->mu, &ts);
			continue;
		}
		pthread_mutex_unlock(&l->mu);
		wire_list_offsets(&out, ++corr, BED_TOPIC, batch, n);
		int nr = -1;
		if (wire_write(l->lo_fd, &out) == 0 && wire_read(l->lo_fd, &in) == 0 && wire_corr(&in) == corr)
			nr = wire_parse(in.data, in.len, 2, res, l->s.partitions);
		int64_t now = bed_now_ns();
		pthread_mutex_lock(&l->mu);
		if (nr < 0) {
			fprintf(stderr, "scale_bed: the copier's ListOffsets to the source failed\n");
			atomic_fetch_add(&l->conn_errors, 1);
			break;
		}
		for (int k = 0; k < nr; k++)
			if (res[k].err == 0 && res[k].partition >= 0 && res[k].partition < l->s.partitions)
				seen_upto(l, res[k].partition, res[k].offset, now);
		for (int k = 0; k < n; k++) {
			struct part *pt = &l->parts[batch[k]];
			if (pt->seen < pt->sent) { /* still pending: back in the ring */
				l->ring[(l->ring_head + l->ring_len) % l->s.partitions] = batch[k];
				l->ring_len++;
			} else {
				pt->queued = false;
			}
		}
		copy_due(l, now);
		/* at most one source query per millisecond */
		int64_t wait = now + 1000000 - bed_now_ns();
		if (wait > 0) {
			pthread_mutex_unlock(&l->mu);
			struct timespec ts = {0, (long)wait};
			nanosleep(&ts, NULL);
			pthread_mutex_lock(&l->mu);
		}
	}
	pthread_mutex_unlock(&l->mu);
	free(batch), free(res), free(out.data), free(in.data);
	return NULL;
}

struct bed_load *load_new(const struct load_spec *s)
{
	struct bed_load *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->s = *s;
	l->lo_fd = -1;
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv, NULL);
	l->recs = calloc((size_t)s->max_records, sizeof(*l->recs));
	l->parts = calloc((size_t)s->partitions, sizeof(*l->parts));
	l->ring = calloc((size_t)s->partitions, sizeof(*l->ring));
	l->copyq = calloc((size_t)s->max_records, sizeof(*l->copyq));
	l->value = malloc((size_t)s->record_bytes + 1);
	if (!l->recs || !l->parts || !l->ring || !l->copyq || !l->value) {
		fprintf(stderr, "scale_bed: out of memory for %lld records\n", (long long)s->max_records);
		load_free(l);
		return NULL;
	}
	memset(l->value, 'x', (size_t)s->record_bytes);
	for (int32_t p = 0; p < s->partitions; p++)
		l->parts[p].head = l->parts[p].tail = l->parts[p].slot = -1;
	bool ok = conn_open(l, &l->via, s->via, -1) == 0 && conn_open(l, &l->direct, s->source, -1) == 0 &&
		  (l->lo_fd = wire_connect(s->source)) >= 0;
	for (int m = 0; ok && m < s->mirrors; m++)
		ok = conn_open(l, &l->dst[m], s->dst[m], m) == 0;
	if (!ok || pthread_create(&l->copier, NULL, copier_main, l) != 0) {
		load_free(l);
		return NULL;
	}
	l->copier_started = true;
	return l;
}

/* Produce the next `d` records in one request on c (under l->mu); the
 * number produced (fewer when the record table is full). */
static int64_t send_round(struct bed_load *l, struct conn *c, int64_t d)
{
	if (d > l->s.max_records - l->nrecs)
		d = l->s.max_records - l->nrecs;
	if (d <= 0)
		return 0;
	int32_t *idx = malloc(sizeof(*idx) * (size_t)d);
	if (!idx)
		return 0;
	for (int64_t k = 0; k < d; k++) {
		int64_t i = l->nrecs + k;
		int32_t p = (int32_t)(i % l->s.partitions);
		struct part *pt = &l->parts[p];
		struct rec *r = &l->recs[i];
		idx[k] = (int32_t)i;
		r->p = p;
		r->off = pt->sent++;
		r->next = -1;
		if (pt->tail >= 0)
			l->recs[pt->tail].next = (int32_t)i;
		if (pt->head < 0) /* everything before it already seen on the source */
			pt->head = (int32_t)i;
		pt->tail = (int32_t)i;
		if (!pt->queued) {
			pt->queued = true;
			l->ring[(l->ring_head + l->ring_len) % l->s.partitions] = p;
			l->ring_len++;
		}
	}
	l->nrecs += d;
	struct wire_part *parts;
	int32_t *recs;
	int np = group(l, idx, d, &parts, &recs);
	int64_t t = bed_now_ns();
	for (int64_t k = 0; k < d; k++)
		l->recs[idx[k]].t_send = t;
	if (np < 0 || conn_send(c, parts, np, recs) != 0)
		fprintf(stderr, "scale_bed: a produce request could not be sent\n");
	free(idx);
	return d;
}

int64_t load_phase(struct bed_load *l, bool direct, double seconds, int64_t *end)
{
	struct conn *c = direct ? &l->direct : &l->via;
	pthread_mutex_lock(&l->mu);
	int64_t first = l->nrecs;
	pthread_mutex_unlock(&l->mu);
	int64_t t0 = bed_now_ns(), n = (int64_t)(seconds * l->s.rate), k = 0;
	int64_t tick = (int64_t)(l->s.linger_ms > 0 ? l->s.linger_ms : 1) * 1000000;
	while (k < n) {
		struct timespec ts = {0, (long)tick};
		nanosleep(&ts, NULL);
		int64_t due = (int64_t)((double)(bed_now_ns() - t0) * l->s.rate / 1e9) + 1;
		if (due > n)
			due = n;
		if (due <= k)
			continue;
		pthread_mutex_lock(&l->mu);
		int64_t sent = send_round(l, c, due - k);
		pthread_cond_signal(&l->cv);
		pthread_mutex_unlock(&l->mu);
		if (sent == 0)
			break;
		k += sent;
	}
	*end = first + k;
	return first;
}

bool load_drain(struct bed_load *l, int timeout_ms)
{
	int64_t deadline = bed_now_ns() + (int64_t)timeout_ms * 1000000;
	for (;;) {
		pthread_mutex_lock(&l->mu);
		int64_t n = l->nrecs;
		pthread_mutex_unlock(&l->mu);
		if (atomic_load(&l->answered) >= n && atomic_load(&l->copied) >= n)
			return true;
		if (bed_now_ns() > deadline || atomic_load(&l->conn_errors))
			return false;
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
}

void load_free(struct bed_load *l)
{
	if (!l)
		return;
	atomic_store(&l->stop, true);
	if (l->copier_started) {
		pthread_mutex_lock(&l->mu);
		pthread_cond_signal(&l->cv);
		pthread_mutex_unlock(&l->mu);
		pthread_join(l->copier, NULL);
	}
	conn_close(&l->via);
	conn_close(&l->direct);
	for (int m = 0; m < l->s.mirrors; m++)
		conn_close(&l->dst[m]);
	if (l->lo_fd >= 0)
		close(l->lo_fd);
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->cv);
	free(l->recs), free(l->parts), free(l->ring), free(l->copyq), free(l->value), free(l);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Quantile q of the sorted v[0..n) (nearest rank), -1 if empty. */
static double quant(const double *v, int64_t n, double q)
{
	if (n == 0)
		return -1;
	int64_t k = (int64_t)(q * (double)n);
	return v[k >= n ? n - 1 : k];
}

void load_stats(struct bed_load *l, int64_t from, int64_t to, struct load_stats *st)
{
	memset(st, 0, sizeof(*st));
	int64_t n = to - from;
	size_t sz = sizeof(double) * (size_t)(n > 0 ? n : 1);
	double *ack = malloc(sz), *copy = malloc(sz), *share = malloc(sz), *sent = malloc(sz);
	int64_t na = 0, nc = 0, ns = 0;
	pthread_mutex_lock(&l->mu);
	for (int64_t i = from; ack && copy && share && sent && i < to; i++) {
		struct rec *r = &l->recs[i];
		st->records++;
		int64_t ta = atomic_load(&r->t_ack);
		int err = atomic_load(&r->err);
		if (!ta)
			st->unanswered++;
		else if (err) {
			if (!st->failed++)
				st->first_err = err;
		} else {
			st->acked++;
			ack[na++] = (double)(ta - r->t_send) / 1e6;
			if (!r->t_copy || ta < r->t_copy)
				st->early++;
		}
		int64_t td = 0;
		bool all = atomic_load(&r->ndst) == l->s.mirrors;
		for (int m = 0; all && m < l->s.mirrors; m++) {
			int64_t t = atomic_load(&r->t_dst[m]);
			td = t > td ? t : td;
		}
		if (all)
			copy[nc++] = (double)(td - r->t_send) / 1e6;
		if (all && ta && !err) {
			sent[ns] = (double)(ta - r->t_copy) / 1e6;
			share[ns++] = (double)(ta - td) / 1e6;
		}
	}
	if (n > 0)
		st->span_s = (double)(l->recs[to - 1].t_send - l->recs[from].t_send) / 1e9;
	pthread_mutex_unlock(&l->mu);
	if (ack && copy && share && sent) {
		qsort(sent, (size_t)ns, sizeof(double), cmp_d);
		qsort(ack, (size_t)na, sizeof(double), cmp_d);
		qsort(copy, (size_t)nc, sizeof(double), cmp_d);
		qsort(share, (size_t)ns, sizeof(double), cmp_d);
	}
	st->ack_p50 = quant(ack, na, 0.5);
	st->ack_p99 = quant(ack, na, 0.99);
	st->ack_max = na ? ack[na - 1] : -1;
	st->copy_p50 = quant(copy, nc, 0.5);
	st->copy_p99 = quant(copy, nc, 0.99);
	st->share_p50 = quant(share, ns, 0.5);
	st->share_p99 = quant(share, ns, 0.99);
	st->share_max = ns ? share[ns - 1] : -1;
	st->share_n = ns;
	st->sent_p50 = quant(sent, ns, 0.5);
	st->sent_p99 = quant(sent, ns, 0.99);
	free(ack), free(copy), free(share), free(sent);
}

void load_checks(struct bed_load *l, struct load_checks *c)
{
	c->src_offset_mismatch = atomic_load(&l->src_mismatch);
	c->conn_errors = atomic_load(&l->conn_errors);
	c->dst_offset_mismatch = atomic_load(&l->dst_mismatch);
	c->dst_failed = atomic_load(&l->dst_failed);
	c->copied = atomic_load(&l->copied);
}
