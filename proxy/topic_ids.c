/*
 * TopicId → topic name map, learnt from Metadata responses passing through
 * any connection (Produce v13 names topics by id only). Append-only open
 * addressing table; names are owned by the map and stay valid until it is
 * freed. Loop thread.
 */
#include <stdlib.h>
#include <string.h>

#include "proxy/proxy.h"

struct proxy_topic_ids {
	struct topic_id_slot {
		uint8_t id[16];
		char *name;   /* NULL: empty slot */
	} *slots;
	size_t cap;   /* power of two */
	size_t n;
};

static size_t topic_id_hash(const uint8_t id[16])
{
	uint64_t h;
	memcpy(&h, id + 8, sizeof(h)); /* UUID v4 bits are already random */
	return (size_t)(h ^ (h >> 29));
}

static bool topic_id_is_zero(const uint8_t id[16])
{
	static const uint8_t zero[16];
	return memcmp(id, zero, 16) == 0;
}

struct proxy_topic_ids *proxy_topic_ids_new(void)
{
	struct proxy_topic_ids *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->cap = 64;
	m->slots = calloc(m->cap, sizeof(*m->slots));
	if (!m->slots) {
		free(m);
		return NULL;
	}
	return m;
}

void proxy_topic_ids_free(struct proxy_topic_ids *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->cap; i++)
		free(m->slots[i].name);
	free(m->slots);
	free(m);
}

static struct topic_id_slot *topic_id_slot(const struct proxy_topic_ids *m, const uint8_t id[16])
{
	size_t mask = m->cap - 1;
	for (size_t i = topic_id_hash(id) & mask;; i = (i + 1) & mask) {
		struct topic_id_slot *s = &m->slots[i];
		if (!s->name || memcmp(s->id, id, 16) == 0)
			return s;
	}
}

static void topic_ids_grow(struct proxy_topic_ids *m)
{
	struct proxy_topic_ids bigger = { .cap = m->cap * 2 };
	bigger.slots = calloc(bigger.cap, sizeof(*bigger.slots));
	if (!bigger.slots)
		return; /* stay at this size; lookups still work */
	for (size_t i = 0; i < m->cap; i++)
		if (m->slots[i].name)
			*topic_id_slot(&bigger, m->slots[i].id) = m->slots[i];
	free(m->slots);
	m->slots = bigger.slots;
	m->cap = bigger.cap;
}

void proxy_topic_ids_learn(struct proxy_topic_ids *m, const uint8_t id[16], const char *name)
{
	if (!name || topic_id_is_zero(id))
		return;
	struct topic_id_slot *s = topic_id_slot(m, id);
	if (s->name) /* ids are never reused for another name */
		return;
	if ((m->n + 1) * 4 > m->cap * 3) {
		topic_ids_grow(m);
		if ((m->n + 1) * 4 > m->cap * 3)
			return; /* could not grow: keep lookups terminating */
		s = topic_id_slot(m, id);
	}
	char *copy = strdup(name);
	if (!copy)
		return;
	memcpy(s->id, id, 16);
	s->name = copy;
	m->n++;
}

const char *proxy_topic_ids_name(const struct proxy_topic_ids *m, const uint8_t id[16])
{
	return topic_id_slot(m, id)->name;
}
