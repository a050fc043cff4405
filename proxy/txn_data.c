/*
 * txn_data.c — the last data offset of each open transaction on each gated
 * partition, learnt from this sidecar's own broker's Produce answers
 * (hold.c calls proxy_txn_note_data for every successful transactional
 * batch while gate.transactions is commit or both). An `offsets: mm2`
 * mirror is waited for up to it at the commit (txn_hold.c): MirrorMaker 2
 * copies records, never the COMMIT marker, and writes an offset-sync only for
 * a record it copied, so the marker's own offset is never reached. A bounded
 * ring: the oldest entry goes; a sidecar that did not see the transaction's
 * Produce answers (restarted, or not the partition leader's) does not know
 * it, and the commit is then held to its deadline (fail closed). Loop thread.
 */
#include <stdlib.h>
#include <string.h>

#include "proxy/datapath.h"

#define TXN_DATA_SLOTS 4096

struct txn_data {
	int64_t producer_id;
	int32_t partition;
	int64_t last_offset;
	char *topic;
};
static struct txn_data slots[TXN_DATA_SLOTS];
static size_t next_slot;

static struct txn_data *find(int64_t producer_id, const char *topic, int32_t partition)
{
	for (size_t i = 0; i < TXN_DATA_SLOTS; i++)
		if (slots[i].topic && slots[i].producer_id == producer_id && slots[i].partition == partition &&
		    !strcmp(slots[i].topic, topic))
			return &slots[i];
	return NULL;
}

void proxy_txn_note_data(int64_t producer_id, const char *topic, int32_t partition, int64_t last_offset)
{
	if (!topic || producer_id < 0)
		return;
	struct txn_data *d = find(producer_id, topic, partition);
	if (d) {
		if (last_offset > d->last_offset)
			d->last_offset = last_offset;
		return;
	}
	char *t = strdup(topic);
	if (!t)
		return; /* not known: the commit is held to its deadline */
	d = &slots[next_slot];
	next_slot = (next_slot + 1) % TXN_DATA_SLOTS;
	free(d->topic);
	*d = (struct txn_data){ producer_id, partition, last_offset, t };
}

bool proxy_txn_last_data(int64_t producer_id, const char *topic, int32_t partition, int64_t *last_offset)
{
	const struct txn_data *d = find(producer_id, topic, partition);
	if (d)
		*last_offset = d->last_offset;
	return d != NULL;
}

bool proxy_txn_mm2_only(struct proxy_server *srv, const char *topic)
{
	const struct conf *cf = srv->conf;
	size_t mm2 = 0, other = 0;
	for (size_t m = 0; m < cf->nmirrors; m++) {
		struct mirror_topic_info ti;
		if (!cf->mirrors[m].name || mirror_gate_topic_info(srv->gate, cf->mirrors[m].name, topic, &ti) < 0 ||
		    ti.effective != MIRROR_SYNC || ti.released)
			continue;
		if (cf->mirrors[m].offsets == CONF_OFFSETS_MM2)
			mm2++;
		else
			other++;
	}
	return mm2 > 0 && other == 0;
}
