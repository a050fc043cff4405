/*
 * probe.h — the compatibility probe of an --add/--alter --sync call (KIP
 * "Command-Line Tool": source compatibility check; here also the
 * destination's ability to serve the gate): the destination topic exists
 * with the source's partition count, and for `offsets: mm2` the
 * offset-syncs topic exists. Private to mirror/ (ops.c, probe.c).
 */
#ifndef SYNCGATE_MIRROR_PROBE_H
#define SYNCGATE_MIRROR_PROBE_H

#include <librdkafka/rdkafka.h>
#include <pthread.h>

#include "mirror/internal.h"

struct mirror_op;

/* One probe: created and freed on the loop thread; its thread only fills
 * result and message, then posts MIRROR_MSG_PROBE_DONE. */
struct mirror_probe {
	struct mirror_probe *next;
	pthread_t th;
	struct mirror_bridge *bridge;
	struct mirror_op *op;       /* NULL once the op was cancelled */
	rd_kafka_conf_t *src_conf, *dst_conf;
	char *mirror, *src_topic, *dst_topic, *mm2_topic;
	int result;                 /* 0 compatible, 1 incompatible, 2 unreachable */
	char message[400];
};

/**
 * Start a probe of (l, topic) for `op` on its own thread, linked into
 * g->probes; the caller keeps it in op->probe. NULL when out of memory or
 * no thread could start (nothing started). Loop thread.
 */
struct mirror_probe *mirror_probe_start(struct mirror_gate *g, struct mirror_op *op, struct mirror_link *l,
					const char *topic);
/** Free a probe whose thread was joined (or never started). Loop thread. */
void mirror_probe_free(struct mirror_probe *p);

#endif
