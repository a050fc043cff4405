/*
 * producer_claims.c — switched sidecars agree on each client producer's
 * destination producer id through the state log (docs/switchover.md
 * "Producer state").
 *
 * After the switch a sidecar forwards a client's idempotent batches under a
 * producer id the destination issued to it (proxy/pidmap.c). A client
 * reads Metadata from any sidecar and each advertises the destination's
 * nodes at its own listeners, so its retries can move to another sidecar;
 * under another destination id the destination would store them again. So
 * the sidecar that got an id appends a PRODUCER_ID record (mirror-level,
 * topic "*": client, producer id, epoch → destination id, epoch), every
 * sidecar hands every such record to the data path in log order
 * (g->on_claim), and the data path keeps the first claim of each key: the
 * same on every sidecar, and on a restarted one, which reads the log again.
 * Loop thread.
 */
#include <stdio.h>
#include <stdlib.h>

#include "mirror/internal.h"

#define CLAIM_TOPIC "*" /* the topic of a mirror-level record */

int mirror_gate_claim_producer(struct mirror_gate *g, const char *mirror, const struct mirror_producer_claim *pc)
{
	if (!g->log || !mirror || !*mirror)
		return -1;
	struct mirror_record r = { .kind = MIRROR_REC_PRODUCER_ID, .type = MIRROR_SYNC, .based_on = -1,
				   .origin = g->origin, .seq = ++g->seq, .claim = *pc };
	char key[300];
	snprintf(key, sizeof(key), "%s/%s", mirror, CLAIM_TOPIC);
	char *v = mirror_record_to_json(mirror, CLAIM_TOPIC, &r);
	int rc = v && mirror_statelog_append(g->log, key, v) == 0 ? 0 : -1;
	if (rc < 0)
		LOG_E("mirror_state_append_failed", "mirror=%s topic=%s op=PRODUCER_ID", mirror, CLAIM_TOPIC);
	free(v);
	return rc;
}

void mirror_producer_claim_apply(struct mirror_gate *g, struct mirror_link *l, const struct mirror_record *r)
{
	if (g->on_claim)
		g->on_claim(g->on_claim_arg, l->name, &r->claim);
}

void mirror_gate_on_producer_claim(struct mirror_gate *g,
				   void (*fn)(void *arg, const char *mirror, const struct mirror_producer_claim *pc),
				   void *arg)
{
	g->on_claim = fn;
	g->on_claim_arg = arg;
}
