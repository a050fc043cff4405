/*
 * A sidecar resolves TopicIds with its own broker before it decides
 * (docs/architecture.md, "What each sidecar learns from its own broker").
 *
 * Requests that name topics only by TopicId (Produce v13, Fetch v13+) may
 * come from a client whose Metadata went through another sidecar — or
 * through none since this one restarted. Before such a request is forwarded,
 * every id the map (topic_ids.c) does not know as LIVE is asked for with a
 * Metadata v12 request by TopicId on the same upstream connection (an
 * INTERNAL FIFO entry ahead of the request): the broker answers a
 * connection's requests in order, so the answer is learnt before the
 * request's response is judged. Ids a response names that its request did
 * not (an incremental fetch session) and that cannot be resolved are
 * remembered on the connection and looked up ahead of its next request.
 *
 * What is decided when an id still cannot be resolved
 * (proxy_topic_id_clamp_rule, proxy_topic_id_unresolved): records of a topic
 * no mirror gates are never withheld, those of a gated one always are.
 * Without its name, an id is known not to be gated when the map has a LIVE
 * id for every topic the gate clamps (the ids of the gated topics, learnt
 * from this broker) — the unresolved id is none of them. A GONE id (a
 * deleted topic) is gated when its former name is, and its records are then
 * withheld whole (the mirrored HW is the new topic's). Every such decision is
 * counted and warned. Loop thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/datapath.h"
#include "proxy/security.h"

#define LOOKUP_MAX_IDS 1024 /* ids in one lookup; more wait for the next request */

static struct metric *m_lookups, *m_unresolved[PROXY_TOPIC_ID_API_COUNT][PROXY_TOPIC_ID_DECISION_COUNT];
static struct proxy_log_limit unresolved_log;

static const char *const api_names[PROXY_TOPIC_ID_API_COUNT] = { "Fetch", "Produce" };
static const char *const decision_names[PROXY_TOPIC_ID_DECISION_COUNT] = { "passed", "withheld", "failed" };

static void lookup_metrics_init(void)
{
	if (m_lookups)
		return;
	m_lookups = metric_get(METRIC_COUNTER, "syncgate_topic_id_lookups_total",
			       "Metadata requests by TopicId that syncgate sent its broker ahead of a "
			       "request naming TopicIds it did not know.", "", NULL, 0);
	for (int a = 0; a < PROXY_TOPIC_ID_API_COUNT; a++) {
		char api[32];
		snprintf(api, sizeof(api), "api=\"%s\"", api_names[a]);
		metric_family_get(METRIC_COUNTER, "syncgate_topic_id_unresolved_total",
				  "Partitions whose TopicId syncgate could not resolve to a live topic with its "
				  "own broker when it decided on them.", api, "decision", decision_names,
				  PROXY_TOPIC_ID_DECISION_COUNT, m_unresolved[a]);
	}
}

/* The ids an in-flight lookup of an entry asks for (its e->release frees it). */
struct topic_lookup {
	size_t n;
	uint8_t ids[][16];
};

/* Whether a lookup in flight on `c` asks for `id` (answered before anything sent later). */
static bool asked(const struct proxy_conn *c, const uint8_t id[16])
{
	const struct proxy_entry *e;
	TAILQ_FOREACH(e, &c->fifo, link) {
		if (e->kind != PROXY_ENTRY_INTERNAL || e->api_key != CODEC_API_METADATA ||
		    e->state != PROXY_ENTRY_IN_FLIGHT || !e->raw)
			continue;
		const struct topic_lookup *l = (const struct topic_lookup *)e->raw;
		for (size_t i = 0; i < l->n; i++)
			if (memcmp(l->ids[i], id, 16) == 0)
				return true;
	}
	return false;
}

static bool listed(uint8_t (*v)[16], size_t n, const uint8_t id[16])
{
	for (size_t i = 0; i < n; i++)
		if (memcmp(v[i], id, 16) == 0)
			return true;
	return false;
}

static void want(struct proxy_conn *c, const uint8_t id[16], uint8_t (*out)[16], size_t cap, size_t *k)
{
	static const uint8_t zero[16];
	if (*k >= cap || memcmp(id, zero, 16) == 0 ||
	    proxy_topic_ids_resolve(c->srv->topic_ids, id, NULL) == PROXY_TOPIC_ID_LIVE ||
	    listed(out, *k, id) || asked(c, id))
		return;
	memcpy(out[(*k)++], id, 16);
}

size_t proxy_topic_lookup_wanted(struct proxy_conn *c, const uint8_t (*ids)[16], size_t n,
				 uint8_t (*out)[16], size_t cap)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		want(c, ids[i], out, cap, &k);
	for (size_t i = 0; i < c->nlookup_pending; i++)
		want(c, c->lookup_pending[i], out, cap, &k);
	return k;
}

static void lookup_release(struct proxy_conn *c, struct proxy_entry *e)
{
	(void)c;
	free(e->raw);
	e->raw = NULL;
}

int proxy_topic_lookup_ahead(struct proxy_conn *c, const uint8_t (*ids)[16], size_t n)
{
	lookup_metrics_init();
	if (n == 0 && c->nlookup_pending == 0)
		return 0;
	size_t cap = n + c->nlookup_pending < LOOKUP_MAX_IDS ? n + c->nlookup_pending : LOOKUP_MAX_IDS;
	struct topic_lookup *l = malloc(sizeof(*l) + cap * 16);
	if (!l)
		return -1;
	l->n = proxy_topic_lookup_wanted(c, ids, n, l->ids, cap);
	c->nlookup_pending = 0; /* asked now, known, or asked by a lookup in flight */
	if (l->n == 0) {
		free(l);
		return 0;
	}
	struct codec_buf b;
	codec_buf_init(&b, 64 + l->n * 32);
	if (codec_metadata_request_by_ids((const uint8_t (*)[16])l->ids, l->n, -1, "syncgate", &b) < 0 ||
	    proxy_internal_send(c, b.data, b.len, CODEC_API_METADATA, 12) < 0) {
		codec_buf_free(&b);
		free(l);
		return -1;
	}
	codec_buf_free(&b);
	struct proxy_entry *e = TAILQ_LAST(&c->fifo, proxy_fifo); /* the INTERNAL entry just queued */
	e->raw = (uint8_t *)l;
	e->release = lookup_release;
	metric_add(m_lookups, 1);
	LOG_D("topic_ids_learn", "conn=%llu ids=%zu reason=\"a request names TopicIds this sidecar does not "
	      "know: asking its broker first\"", (unsigned long long)c->id, l->n);
	return 0;
}

void proxy_topic_lookup_answer(struct proxy_conn *c, struct proxy_entry *e, const struct codec_iov *iov,
			       int niov)
{
	struct codec_metadata_topics t = { 0 };
	if (codec_metadata_response_topics(iov, niov, e->api_version, &t) != CODEC_OK) {
		LOG_W("topic_ids_lookup_failed", "conn=%llu reason=\"the broker's Metadata answer could not be "
		      "decoded\"", (unsigned long long)c->id);
		codec_metadata_topics_free(&t);
		return;
	}
	for (size_t i = 0; i < t.n; i++) {
		if (t.v[i].error_code == CODEC_ERROR_NONE && t.v[i].name)
			proxy_topic_ids_learn(c->srv->topic_ids, t.v[i].topic_id, t.v[i].name,
					      PROXY_TOPIC_ID_LOOKUP);
		else if (t.v[i].error_code == CODEC_ERROR_UNKNOWN_TOPIC_ID)
			proxy_topic_ids_forget(c->srv->topic_ids, t.v[i].topic_id);
	}
	codec_metadata_topics_free(&t);
}

static void uuid_str(const uint8_t id[16], char out[37])
{
	static const char hex[] = "0123456789abcdef";
	size_t k = 0;
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[k++] = '-';
		out[k++] = hex[id[i] >> 4];
		out[k++] = hex[id[i] & 15];
	}
	out[k] = '\0';
}

void proxy_topic_id_unresolved(struct proxy_conn *c, const uint8_t id[16], enum proxy_topic_id_state state,
			       enum proxy_topic_id_api api, enum proxy_topic_id_decision decision)
{
	lookup_metrics_init();
	metric_add(m_unresolved[api][decision], 1);
	bool pending = false;
	for (size_t i = 0; i < c->nlookup_pending && !pending; i++)
		pending = memcmp(c->lookup_pending[i], id, 16) == 0;
	if (!pending && c->nlookup_pending < PROXY_LOOKUP_PENDING)
		memcpy(c->lookup_pending[c->nlookup_pending++], id, 16);
	uint64_t swallowed = 0;
	if (!proxy_log_allow(&unresolved_log, mirror_now_ms(), &swallowed))
		return;
	char s[37];
	uuid_str(id, s);
	const char *former = NULL;
	(void)proxy_topic_ids_resolve(c->srv->topic_ids, id, &former);
	LOG_W("topic_id_unresolved", "conn=%llu peer=%s api=%s topic_id=%s state=%s former_topic=%s "
	      "decision=%s suppressed=%llu reason=\"%s\"", (unsigned long long)c->id, c->peer, api_names[api], s,
	      state == PROXY_TOPIC_ID_GONE ? "deleted" : "unknown", former ? former : "-",
	      decision_names[decision], (unsigned long long)swallowed,
	      state == PROXY_TOPIC_ID_GONE ? "the TopicId belongs to a deleted topic (its name has another id now)"
	      : "this sidecar's broker did not know the TopicId when asked; it is asked again ahead of the "
		"connection's next request");
}

static bool name_known(void *arg, const char *topic)
{
	return proxy_topic_ids_name_known(arg, topic);
}

int proxy_topic_id_clamp_rule(struct proxy_server *srv, enum proxy_topic_id_state state, const char *former,
			      int32_t partition, int64_t *mhw)
{
	*mhw = -1;
	if (state == PROXY_TOPIC_ID_GONE && former) {
		int64_t ignored;
		return mirror_gate_mirrored_hw(srv->gate, former, partition, &ignored) ? 1 : 0;
	}
	return mirror_gate_clamped_topics_all(srv->gate, name_known, srv->topic_ids) ? 0 : 1;
}
