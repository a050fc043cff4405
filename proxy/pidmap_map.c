/*
 * pidmap_map.c — the bounded maps of proxy/pidmap.h: (client, producer id,
 * epoch) → destination (producer id, epoch), and destination producer id →
 * the TransactionalId (hash) it was issued to, and (source producer id,
 * epoch, batch) → the offset the source appended that batch at (made at
 * its first use, before the switch too). Each a ring in insertion
 * order (the oldest evicted when full) indexed by an open-addressing hash
 * table (linear probing, backward-shift deletion): O(1) per batch, no
 * allocation after proxy_pidmap_new. Pure data; loop thread.
 */
#include <stdlib.h>

#include "proxy/datapath.h"

/* One key → value, in a ring kept in insertion order (the oldest evicted). */
struct pm_slot {
	int64_t key;       /* client producer id (remap), destination producer id (issued) */
	uint64_t key_client; /* who the client is (remap: client_ident()); 0 (issued) */
	int16_t key_epoch; /* client epoch (remap); 0 (issued) */
	int16_t epoch;     /* destination epoch (remap); unused (issued) */
	int64_t pid;       /* destination producer id (remap); unused (issued) */
	uint64_t tag;      /* the TransactionalId's hash (issued) */
};

struct pm_table {
	size_t cap, n, head;   /* ring capacity, keys, index of the oldest */
	struct pm_slot *ring;
	uint32_t *index;       /* open addressing, linear probing: ring index + 1, 0 empty */
	size_t mask;           /* index slots - 1 (a power of two ≥ 2 cap) */
};

struct proxy_pidmap {
	struct pm_table remap;  /* (client pid, epoch) → (destination pid, epoch) */
	struct pm_table issued; /* destination pid → TransactionalId hash */
	struct pm_table appended; /* (source pid, epoch, batch key) → base offset (pid), the
				   * batch's sequences (tag) to check; its ring made at first use */
};

static uint64_t mix(int64_t key, int16_t epoch, uint64_t client)
{
	uint64_t x = (uint64_t)key ^ ((uint64_t)(uint16_t)epoch << 48) ^ client * 0x9e3779b97f4a7c15ull ^
		     0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static int table_init(struct pm_table *t, size_t cap)
{
	size_t slots = 2;
	while (slots < 2 * cap)
		slots <<= 1;
	t->cap = cap;
	t->n = t->head = 0;
	t->mask = slots - 1;
	t->ring = calloc(cap, sizeof(*t->ring));
	t->index = calloc(slots, sizeof(*t->index));
	return t->ring && t->index ? 0 : -1;
}

/* The index slot holding (key, epoch), or the empty slot where it would go. */
static size_t table_find(const struct pm_table *t, int64_t key, int16_t epoch, uint64_t client)
{
	size_t i = (size_t)mix(key, epoch, client) & t->mask;
	for (; t->index[i]; i = (i + 1) & t->mask) {
		const struct pm_slot *s = &t->ring[t->index[i] - 1];
		if (s->key == key && s->key_epoch == epoch && s->key_client == client)
			break;
	}
	return i;
}

static const struct pm_slot *table_get(const struct pm_table *t, int64_t key, int16_t epoch, uint64_t client)
{
	if (!t->ring)
		return NULL;
	size_t i = table_find(t, key, epoch, client);
	return t->index[i] ? &t->ring[t->index[i] - 1] : NULL;
}

/* Take slot i out of the index, shifting back the probes that passed over it. */
static void index_delete(struct pm_table *t, size_t i)
{
	t->index[i] = 0;
	for (size_t j = (i + 1) & t->mask; t->index[j]; j = (j + 1) & t->mask) {
		const struct pm_slot *s = &t->ring[t->index[j] - 1];
		size_t home = (size_t)mix(s->key, s->key_epoch, s->key_client) & t->mask;
		/* j's entry may move to i when its home is not cyclically in (i, j] */
		bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
		if (!stays) {
			t->index[i] = t->index[j];
			t->index[j] = 0;
			i = j;
		}
	}
}

/* The slot for (key, epoch): found, or a new one (the oldest evicted when full). */
static struct pm_slot *table_put(struct pm_table *t, int64_t key, int16_t epoch, uint64_t client)
{
	size_t i = table_find(t, key, epoch, client);
	if (t->index[i])
		return &t->ring[t->index[i] - 1];
	if (t->n == t->cap) {
		struct pm_slot *old = &t->ring[t->head];
		index_delete(t, table_find(t, old->key, old->key_epoch, old->key_client));
		t->head = (t->head + 1) % t->cap;
		t->n--;
		i = table_find(t, key, epoch, client); /* the shift may have moved the empty slot */
	}
	size_t r = (t->head + t->n) % t->cap;
	t->n++;
	t->ring[r] = (struct pm_slot){ .key = key, .key_epoch = epoch, .key_client = client };
	t->index[i] = (uint32_t)r + 1;
	return &t->ring[r];
}

struct proxy_pidmap *proxy_pidmap_new(size_t cap)
{
	struct proxy_pidmap *m = calloc(1, sizeof(*m));
	if (!m || cap == 0 || cap > UINT32_MAX / 4 || table_init(&m->remap, cap) < 0 ||
	    table_init(&m->issued, cap) < 0) {
		proxy_pidmap_free(m);
		return NULL;
	}
	return m;
}

void proxy_pidmap_free(struct proxy_pidmap *m)
{
	if (!m)
		return;
	free(m->remap.ring);
	free(m->remap.index);
	free(m->issued.ring);
	free(m->issued.index);
	free(m->appended.ring);
	free(m->appended.index);
	free(m);
}

bool proxy_pidmap_lookup(const struct proxy_pidmap *m, uint64_t client, int64_t pid, int16_t epoch,
			 int64_t *dest_pid, int16_t *dest_epoch)
{
	const struct pm_slot *s = m ? table_get(&m->remap, pid, epoch, client) : NULL;
	if (s) {
		*dest_pid = s->pid;
		*dest_epoch = s->epoch;
	}
	return s != NULL;
}

void proxy_pidmap_learn(struct proxy_pidmap *m, uint64_t client, int64_t pid, int16_t epoch, int64_t dest_pid,
			int16_t dest_epoch)
{
	struct pm_slot *s = table_put(&m->remap, pid, epoch, client);
	s->pid = dest_pid;
	s->epoch = dest_epoch;
}

size_t proxy_pidmap_size(const struct proxy_pidmap *m)
{
	return m ? m->remap.n : 0;
}

void proxy_pidmap_issue(struct proxy_pidmap *m, int64_t pid, uint64_t txn_tag)
{
	table_put(&m->issued, pid, 0, 0)->tag = txn_tag;
}

bool proxy_pidmap_issued_to(const struct proxy_pidmap *m, int64_t pid, uint64_t txn_tag)
{
	const struct pm_slot *s = m ? table_get(&m->issued, pid, 0, 0) : NULL;
	return s && s->tag == txn_tag;
}

uint64_t proxy_pidmap_batch_key(const char *topic, int32_t partition, int32_t first_seq, int32_t last_seq)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (const unsigned char *b = (const unsigned char *)topic; *b; b++)
		h = (h ^ *b) * 0x100000001b3ull;
	uint32_t v[3] = { (uint32_t)partition, (uint32_t)first_seq, (uint32_t)last_seq };
	for (size_t i = 0; i < 3; i++)
		for (int k = 0; k < 32; k += 8)
			h = (h ^ ((v[i] >> k) & 0xff)) * 0x100000001b3ull;
	return h | 1; /* never 0 */
}

static uint64_t seq_tag(int32_t first_seq, int32_t last_seq)
{
	return (uint64_t)(uint32_t)first_seq << 32 | (uint32_t)last_seq;
}

void proxy_pidmap_appended_learn(struct proxy_pidmap *m, int64_t pid, int16_t epoch, uint64_t batch,
				 int32_t first_seq, int32_t last_seq, int64_t base_offset)
{
	if (!m->appended.ring && table_init(&m->appended, m->remap.cap) < 0) {
		free(m->appended.ring);
		free(m->appended.index);
		m->appended = (struct pm_table){ 0 };
		return; /* out of memory: nothing remembered (a retry may then be stored twice) */
	}
	struct pm_slot *s = table_put(&m->appended, pid, epoch, batch);
	s->pid = base_offset;
	s->tag = seq_tag(first_seq, last_seq);
}

bool proxy_pidmap_appended_find(const struct proxy_pidmap *m, int64_t pid, int16_t epoch, uint64_t batch,
				int32_t first_seq, int32_t last_seq, int64_t *base_offset)
{
	const struct pm_slot *s = m ? table_get(&m->appended, pid, epoch, batch) : NULL;
	if (!s || s->tag != seq_tag(first_seq, last_seq))
		return false;
	*base_offset = s->pid;
	return true;
}

size_t proxy_pidmap_appended_size(const struct proxy_pidmap *m)
{
	return m ? m->appended.n : 0;
}
