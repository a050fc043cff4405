/*
 * tests/mirror/worker_fixture.h — the worker tests' mock clusters and gate
 * (worker_fixture.c), shared by the files of test_mirror_worker. Each
 * criterion test runs in its own process: start*() once, stop() at its end.
 */
#ifndef SYNCGATE_TESTS_MIRROR_WORKER_FIXTURE_H
#define SYNCGATE_TESTS_MIRROR_WORKER_FIXTURE_H

#include <event2/event.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "conf/conf.h"
#include "mirror/internal.h"
#include "mirror/mirror.h"
#include "mirror/worker.h"

/* The source and destination mock clusters, each with topic "orders" of
 * two partitions; the loop; the gate; its conf (mirror "mock-dr", `sync_topics`
 * "orders"). */
extern rd_kafka_mock_cluster_t *mc_src, *mc_dst;
extern struct event_base *base;
extern struct mirror_gate *g;
extern struct conf cfg;
extern struct conf_mirror mir;

/* Start the clusters and the gate: progress `mode`, `dst_brokers` destination
 * brokers (> 1: partition p led by broker p + 1), mirrors[].poll_interval_ms
 * `poll_interval_ms`. start_ex: 5 ms; start: and one destination broker. */
void start_with(enum conf_progress mode, int dst_brokers, int poll_interval_ms);
void start_ex(enum conf_progress mode, int dst_brokers);
void start(enum conf_progress mode);
void stop(void);
/* Run the loop for `ms` milliseconds. */
void run_ms(int ms);
/* Produce `n` one-byte records to "orders" partition `partition` of `mc`
 * (a producer of its own, flushed). */
void produce(rd_kafka_mock_cluster_t *mc, int32_t partition, int n);
/* syncgate_mirror_progress_requests_total of kind `kind` ("demand",
 * "background"), summed over the mirror's lanes. */
double lane_requests(const char *kind);
/* Promoted, progress of both partitions known (10 and 3), ISR known. */
void promoted(void);

/* A wait's callback record (on_out: calls counted, part 0's outcome). */
struct outrec {
	int calls;
	enum mirror_outcome outcome;
};
void on_out(void *arg, struct mirror_wait_part *parts, size_t nparts);

#endif
