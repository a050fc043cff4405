/*
 * TopicId → topic name map of one sidecar, learnt from its own broker:
 * Metadata responses passing through its connections (a client's Metadata,
 * PROXY_TOPIC_ID_SEEN) and the answers to its own lookups sent ahead of a
 * request that names an id it does not know (topic_lookup.c,
 * PROXY_TOPIC_ID_LOOKUP).
 *
 * A topic deleted and recreated under the same name gets a new TopicId:
 * each name has at most one LIVE id — the last one learnt — and every
 * earlier id of that name is GONE (a deleted topic: its records are never
 * attributed to the new one). A Metadata answer that a slower connection
 * delivers late cannot bring a GONE id back; only a lookup can (it was
 * answered on the connection whose request it precedes). A lookup answered
 * UNKNOWN_TOPIC_ID makes a LIVE id GONE (the broker deleted the topic).
 *
 * Names are interned: one allocation per name ever seen, never freed before
 * the map (hold.c borrows them for held Produce responses). Both tables are
 * append-only open addressing. Loop thread.
 */
#include <stdlib.h>
#include <string.h>

#include "proxy/datapath.h"

/* One topic name and its LIVE id (if any). */
struct topic_name {
	char *name;
	uint8_t id[16];
	bool has_id;
};

struct proxy_topic_ids {
	struct id_slot {
		uint8_t id[16];
		struct topic_name *n;    /* NULL: empty slot */
	} *ids;
	size_t ids_cap, nids;            /* power of two */
	struct topic_name **names;       /* NULL: empty slot */
	size_t names_cap, nnames;        /* power of two */
	void (*on_recreated)(void *arg, const char *name); /* proxy_topic_ids_on_recreated */
	void *on_recreated_arg;
};

static size_t id_hash(const uint8_t id[16])
{
	uint64_t h;
	memcpy(&h, id + 8, sizeof(h)); /* UUID v4 bits are already random */
	return (size_t)(h ^ (h >> 29));
}

static size_t name_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return (size_t)(h ^ (h >> 31));
}

static bool id_is_zero(const uint8_t id[16])
{
	static const uint8_t zero[16];
	return memcmp(id, zero, 16) == 0;
}

struct proxy_topic_ids *proxy_topic_ids_new(void)
{
	struct proxy_topic_ids *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->ids_cap = m->names_cap = 64;
	m->ids = calloc(m->ids_cap, sizeof(*m->ids));
	m->names = calloc(m->names_cap, sizeof(*m->names));
	if (!m->ids || !m->names) {
		proxy_topic_ids_free(m);
		return NULL;
	}
	return m;
}

void proxy_topic_ids_free(struct proxy_topic_ids *m)
{
	if (!m)
		return;
	for (size_t i = 0; m->names && i < m->names_cap; i++)
		if (m->names[i]) {
			free(m->names[i]->name);
			free(m->names[i]);
		}
	free(m->names);
	free(m->ids);
	free(m);
}

static struct id_slot *id_slot(struct id_slot *v, size_t cap, const uint8_t id[16])
{
	size_t mask = cap - 1;
	for (size_t i = id_hash(id) & mask;; i = (i + 1) & mask)
		if (!v[i].n || memcmp(v[i].id, id, 16) == 0)
			return &v[i];
}

static struct topic_name **name_slot(struct topic_name **v, size_t cap, const char *name)
{
	size_t mask = cap - 1;
	for (size_t i = name_hash(name) & mask;; i = (i + 1) & mask)
		if (!v[i] || strcmp(v[i]->name, name) == 0)
			return &v[i];
}

/* Room for one more entry in each table (grown at 3/4); false when full. */
static bool ids_room(struct proxy_topic_ids *m)
{
	if ((m->nids + 1) * 4 <= m->ids_cap * 3)
		return true;
	size_t cap = m->ids_cap * 2;
	struct id_slot *v = calloc(cap, sizeof(*v));
	if (!v)
		return false; /* stay at this size; lookups still terminate */
	for (size_t i = 0; i < m->ids_cap; i++)
		if (m->ids[i].n)
			*id_slot(v, cap, m->ids[i].id) = m->ids[i];
	free(m->ids);
	m->ids = v;
	m->ids_cap = cap;
	return true;
}

static bool names_room(struct proxy_topic_ids *m)
{
	if ((m->nnames + 1) * 4 <= m->names_cap * 3)
		return true;
	size_t cap = m->names_cap * 2;
	struct topic_name **v = calloc(cap, sizeof(*v));
	if (!v)
		return false;
	for (size_t i = 0; i < m->names_cap; i++)
		if (m->names[i])
			*name_slot(v, cap, m->names[i]->name) = m->names[i];
	free(m->names);
	m->names = v;
	m->names_cap = cap;
	return true;
}

/* The interned entry of `name`, created when absent; NULL on ENOMEM. */
static struct topic_name *intern(struct proxy_topic_ids *m, const char *name)
{
	struct topic_name **s = name_slot(m->names, m->names_cap, name);
	if (*s)
		return *s;
	if (!names_room(m))
		return NULL;
	s = name_slot(m->names, m->names_cap, name);
	struct topic_name *n = calloc(1, sizeof(*n));
	if (!n || !(n->name = strdup(name))) {
		free(n);
		return NULL;
	}
	*s = n;
	m->nnames++;
	return n;
}

static bool live(const struct topic_name *n, const uint8_t id[16])
{
	return n->has_id && memcmp(n->id, id, 16) == 0;
}

/* The one setter of a name's LIVE id: every other id of the name is GONE. */
static void set_live(struct topic_name *n, const uint8_t id[16])
{
	memcpy(n->id, id, 16);
	n->has_id = true;
}

void proxy_topic_ids_learn(struct proxy_topic_ids *m, const uint8_t id[16], const char *name,
			   enum proxy_topic_id_source src)
{
	if (!name || !*name || id_is_zero(id))
		return;
	struct id_slot *s = id_slot(m->ids, m->ids_cap, id);
	if (s->n) {
		/* ids are never reused for another name; a GONE id comes back only
		 * when this sidecar's own lookup says so */
		if (!live(s->n, id) && src == PROXY_TOPIC_ID_LOOKUP)
			set_live(s->n, id);
		return;
	}
	struct topic_name *n = intern(m, name);
	if (!n || !ids_room(m))
		return;
	s = id_slot(m->ids, m->ids_cap, id);
	memcpy(s->id, id, 16);
	s->n = n;
	m->nids++;
	bool recreated = n->has_id; /* the name had another live id: deleted and created again */
	set_live(n, id);
	if (recreated && m->on_recreated)
		m->on_recreated(m->on_recreated_arg, name);
}

void proxy_topic_ids_on_recreated(struct proxy_topic_ids *m, void (*fn)(void *arg, const char *name), void *arg)
{
	m->on_recreated = fn;
	m->on_recreated_arg = arg;
}

void proxy_topic_ids_forget(struct proxy_topic_ids *m, const uint8_t id[16])
{
	struct id_slot *s = id_slot(m->ids, m->ids_cap, id);
	if (s->n && live(s->n, id))
		s->n->has_id = false;
}

enum proxy_topic_id_state proxy_topic_ids_resolve(const struct proxy_topic_ids *m, const uint8_t id[16],
						  const char **name)
{
	const struct id_slot *s = id_slot(m->ids, m->ids_cap, id);
	if (name)
		*name = s->n ? s->n->name : NULL;
	if (!s->n)
		return PROXY_TOPIC_ID_UNKNOWN;
	return live(s->n, id) ? PROXY_TOPIC_ID_LIVE : PROXY_TOPIC_ID_GONE;
}

const char *proxy_topic_ids_name(const struct proxy_topic_ids *m, const uint8_t id[16])
{
	const char *name;
	return proxy_topic_ids_resolve(m, id, &name) == PROXY_TOPIC_ID_LIVE ? name : NULL;
}

bool proxy_topic_ids_name_known(const struct proxy_topic_ids *m, const char *name)
{
	struct topic_name *const *s = name_slot(m->names, m->names_cap, name);
	return *s && (*s)->has_id;
}
