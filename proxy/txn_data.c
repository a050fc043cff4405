/*
 * txn_data.c — what this sidecar remembers of transactions for the commit
 * gate (txn_hold.c): the partitions of each commit it held (by
 * transactional id, until answered success: a retry after the timeout
 * answer, or on another connection, waits for the same partitions although
 * the coordinator forgets them once the commit completes), and the last data
 * offset of each open transaction on each gated partition, learnt from this sidecar's own broker's Produce answers
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

void proxy_txn_parts_free(struct codec_txn_partition *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((char *)p[i].topic);
	free(p);
}

bool proxy_txn_parts_add(struct codec_txn_partition **parts, size_t *n, const char *topic, int32_t partition)
{
	for (size_t i = 0; i < *n; i++)
		if ((*parts)[i].partition == partition && !strcmp((*parts)[i].topic, topic))
			return true;
	struct codec_txn_partition *v = realloc(*parts, (*n + 1) * sizeof(*v));
	char *t = v ? strdup(topic) : NULL;
	if (v)
		*parts = v;
	if (!t)
		return false;
	/* kept grouped by topic for the ListOffsets request */
	size_t at = *n;
	for (size_t i = *n; i > 0; i--)
		if (!strcmp(v[i - 1].topic, topic)) {
			at = i;
			break;
		}
	memmove(v + at + 1, v + at, (*n - at) * sizeof(*v));
	v[at] = (struct codec_txn_partition){ t, partition };
	(*n)++;
	return true;
}

#define TXN_REMEMBER 256 /* transactional ids of commits held and not yet answered success */

struct txn_memory {
	char *txn_id;
	struct codec_txn_partition *parts;
	size_t nparts;
};
static struct txn_memory remembered[TXN_REMEMBER];
static size_t remembered_next;

static struct txn_memory *memory_find(const char *txn_id)
{
	for (size_t i = 0; i < TXN_REMEMBER; i++)
		if (remembered[i].txn_id && !strcmp(remembered[i].txn_id, txn_id))
			return &remembered[i];
	return NULL;
}

static void memory_clear(struct txn_memory *m)
{
	free(m->txn_id);
	for (size_t i = 0; i < m->nparts; i++)
		free((char *)m->parts[i].topic);
	free(m->parts);
	memset(m, 0, sizeof(*m));
}

void proxy_txn_forget(const char *txn_id)
{
	struct txn_memory *m = memory_find(txn_id);
	if (m)
		memory_clear(m);
}

void proxy_txn_remember(const char *txn_id, const struct codec_txn_partition *parts, size_t n)
{
	struct txn_memory *m = memory_find(txn_id);
	if (!m) {
		m = &remembered[remembered_next];
		remembered_next = (remembered_next + 1) % TXN_REMEMBER;
	}
	memory_clear(m);
	m->parts = calloc(n ? n : 1, sizeof(*m->parts));
	m->txn_id = strdup(txn_id);
	if (!m->parts || !m->txn_id) {
		memory_clear(m); /* not remembered: a retry is held to its deadline */
		return;
	}
	for (size_t i = 0; i < n; i++, m->nparts++)
		if (!(m->parts[i].topic = strdup(parts[i].topic))) {
			memory_clear(m);
			return;
		} else {
			m->parts[i].partition = parts[i].partition;
		}
}

const struct codec_txn_partition *proxy_txn_remembered(const char *txn_id, size_t *n)
{
	const struct txn_memory *m = memory_find(txn_id);
	*n = m ? m->nparts : 0;
	return m ? m->parts : NULL;
}
