/*
 * source_hw.c — the source's high watermarks of a few partitions, asked
 * now, for a caller on the loop thread (mirror_gate_source_hw): the commit
 * gate (proxy/txn_hold.c) asks it for the partitions of a transaction that
 * its sidecar's own broker does not lead, once the commit's markers are
 * written. One thread per gate, started at the first request, with one
 * source consumer handle of its own (isolation.level=read_uncommitted: the
 * high watermark, not the LSO); requests queue under a mutex, each partition
 * is asked of its leader (rd_kafka_query_watermark_offsets, blocking), and
 * the answer goes back through the bridge (MIRROR_MSG_SOURCE_HW). A request
 * cancelled meanwhile is freed unanswered.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "mirror/internal.h"

#define SOURCE_HW_RPC_MS 5000
#define SOURCE_HW_TRIES 3

struct mirror_source_hw_req {
	struct mirror_source_hw_req *next;
	mirror_source_hw_cb cb;
	void *arg;
	bool cancelled;             /* loop thread only */
	size_t n;
	int32_t *partitions;
	int64_t *hw;
	char **topics;
};

struct mirror_source_hw {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
	struct mirror_source_hw_req *head, *tail;
	struct mirror_bridge *bridge;
	rd_kafka_t *rk;
};

static void req_free(struct mirror_source_hw_req *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->topics[i]);
	free(r->topics);
	free(r->partitions);
	free(r->hw);
	free(r);
}

static void *source_hw_main(void *arg)
{
	struct mirror_source_hw *s = arg;
	for (;;) {
		pthread_mutex_lock(&s->mu);
		while (!s->head && !s->stop)
			pthread_cond_wait(&s->cv, &s->mu);
		if (s->stop) {
			pthread_mutex_unlock(&s->mu);
			return NULL;
		}
		struct mirror_source_hw_req *r = s->head;
		s->head = r->next;
		if (!s->head)
			s->tail = NULL;
		pthread_mutex_unlock(&s->mu);
		for (size_t i = 0; i < r->n; i++) {
			int64_t lo = -1, hi = -1;
			rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR__FAIL;
			for (int t = 0; t < SOURCE_HW_TRIES && e != RD_KAFKA_RESP_ERR_NO_ERROR; t++)
				e = rd_kafka_query_watermark_offsets(s->rk, r->topics[i], r->partitions[i], &lo, &hi,
								     SOURCE_HW_RPC_MS);
			r->hw[i] = e == RD_KAFKA_RESP_ERR_NO_ERROR ? hi : -1;
		}
		if (mirror_bridge_post_msg(s->bridge, MIRROR_MSG_SOURCE_HW, 0, r, NULL, 0) != 0)
			LOG_E("mirror_source_hw_post_failed", "reason=\"out of memory\"");
	}
}

static struct mirror_source_hw *start(struct mirror_gate *g)
{
	if (g->source_hw)
		return g->source_hw;
	struct mirror_source_hw *s = calloc(1, sizeof(*s));
	rd_kafka_conf_t *c = s ? mirror_source_conf(g->conf, "txn", "source-hw", false) : NULL;
	char err[256];
	if (c && !(s->rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, err, sizeof(err)))) {
		LOG_E("mirror_source_hw_client_failed", "reason=\"%s\"", err);
		rd_kafka_conf_destroy(c);
	}
	if (!s || !s->rk) {
		free(s);
		return NULL;
	}
	s->bridge = g->bridge;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	if (pthread_create(&s->th, NULL, source_hw_main, s) != 0) {
		rd_kafka_destroy(s->rk);
		free(s);
		return NULL;
	}
	return g->source_hw = s;
}

struct mirror_source_hw_req *mirror_gate_source_hw(struct mirror_gate *g, const char *const *topics,
						   const int32_t *partitions, size_t n, mirror_source_hw_cb cb,
						   void *arg)
{
	struct mirror_source_hw *s = n ? start(g) : NULL;
	struct mirror_source_hw_req *r = s ? calloc(1, sizeof(*r)) : NULL;
	if (!r)
		return NULL;
	r->cb = cb;
	r->arg = arg;
	r->topics = calloc(n, sizeof(*r->topics));
	r->partitions = malloc(n * sizeof(*r->partitions));
	r->hw = malloc(n * sizeof(*r->hw));
	if (!r->topics || !r->partitions || !r->hw) {
		req_free(r);
		return NULL;
	}
	for (size_t i = 0; i < n; i++, r->n++)
		if (!(r->topics[i] = strdup(topics[i]))) {
			req_free(r);
			return NULL;
		}
	memcpy(r->partitions, partitions, n * sizeof(*partitions));
	pthread_mutex_lock(&s->mu);
	if (s->tail)
		s->tail->next = r;
	else
		s->head = r;
	s->tail = r;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return r;
}

void mirror_source_hw_cancel(struct mirror_source_hw_req *r)
{
	if (r)
		r->cancelled = true;
}

void mirror_source_hw_done(struct mirror_gate *g, void *ptr)
{
	(void)g;
	struct mirror_source_hw_req *r = ptr;
	if (!r->cancelled)
		r->cb(r->arg, r->hw, r->n);
	req_free(r);
}

void mirror_source_hw_free(struct mirror_gate *g)
{
	struct mirror_source_hw *s = g->source_hw;
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->th, NULL);
	while (s->head) {
		struct mirror_source_hw_req *r = s->head;
		s->head = r->next;
		req_free(r);
	}
	rd_kafka_destroy(s->rk);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s);
	g->source_hw = NULL;
}
