/*
 * proxy/topic_ids.h — TopicIds resolved with this sidecar's own broker: the
 * TopicId → name map (topic_ids.c) and the lookups sent ahead of requests
 * that name ids it does not know (topic_lookup.c). Included by proxy/datapath.h.
 * Loop thread.
 */
#ifndef SYNCGATE_PROXY_TOPIC_IDS_H
#define SYNCGATE_PROXY_TOPIC_IDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec/codec.h"

struct proxy_server;
struct proxy_conn;
struct proxy_entry;
struct proxy_topic_ids;

/** TopicIds a connection keeps after meeting them unresolved in responses, to
 * look them up ahead of its next request (topic_lookup.c). */
#define PROXY_LOOKUP_PENDING 8

/* topic_ids.c: TopicId → name, learnt from this sidecar's own broker */
/** Where a (TopicId, name) pair came from. */
enum proxy_topic_id_source {
	PROXY_TOPIC_ID_SEEN,    /* a client's Metadata response passing through */
	PROXY_TOPIC_ID_LOOKUP,  /* syncgate's own lookup (topic_lookup.c), answered ahead of the
				 * request it precedes on the same connection */
};
/** What the map says about a TopicId. */
enum proxy_topic_id_state {
	PROXY_TOPIC_ID_UNKNOWN, /* never learnt */
	PROXY_TOPIC_ID_LIVE,    /* the current id of its name */
	PROXY_TOPIC_ID_GONE,    /* its name now has another id, or a lookup found it deleted */
};
/** An empty map; NULL on ENOMEM. */
struct proxy_topic_ids *proxy_topic_ids_new(void);
/**
 * Have `fn(arg, name)` called when `name` is learnt with a new TopicId while
 * it had another live one (this broker deleted and created the topic again):
 * what was measured of the old topic must not count for the new one.
 */
void proxy_topic_ids_on_recreated(struct proxy_topic_ids *m, void (*fn)(void *arg, const char *name), void *arg);
void proxy_topic_ids_free(struct proxy_topic_ids *m);
/**
 * `id` is the TopicId of topic `name` (both borrowed; a zero id or empty name
 * is ignored): it becomes its name's LIVE id and the name's earlier id GONE.
 * A GONE id is made LIVE again only by a PROXY_TOPIC_ID_LOOKUP answer (a late
 * SEEN answer of a slower connection cannot undo a recreation). On ENOMEM the
 * pair is not learnt. Loop thread.
 */
void proxy_topic_ids_learn(struct proxy_topic_ids *m, const uint8_t id[16], const char *name,
			   enum proxy_topic_id_source src);
/** A lookup answered UNKNOWN_TOPIC_ID for `id`: a LIVE id becomes GONE. */
void proxy_topic_ids_forget(struct proxy_topic_ids *m, const uint8_t id[16]);
/** The state of `id`; *name (may be NULL): its name (LIVE) or former name (GONE), else NULL. */
enum proxy_topic_id_state proxy_topic_ids_resolve(const struct proxy_topic_ids *m, const uint8_t id[16],
						  const char **name);
/** The name of a LIVE TopicId, or NULL. Names stay valid until the map is freed. */
const char *proxy_topic_ids_name(const struct proxy_topic_ids *m, const uint8_t id[16]);
/** Whether topic `name` has a LIVE id in the map. */
bool proxy_topic_ids_name_known(const struct proxy_topic_ids *m, const char *name);

/* topic_lookup.c: resolve TopicIds with this sidecar's own broker before deciding */
/** Why a TopicId could not be resolved when a decision needed its name. */
enum proxy_topic_id_api {
	PROXY_TOPIC_ID_API_FETCH,      /* a consumer Fetch v13+ response (clamp.c) */
	PROXY_TOPIC_ID_API_PRODUCE,    /* a Produce v13 response (hold.c) or request (fence.c) */
	PROXY_TOPIC_ID_API_COUNT,
};
/** What was done with the partitions of an id that could not be resolved. */
enum proxy_topic_id_decision {
	PROXY_TOPIC_ID_PASSED,         /* not a gated topic: passed unchanged */
	PROXY_TOPIC_ID_WITHHELD,       /* may be a gated topic: records withheld (fail closed) */
	PROXY_TOPIC_ID_FAILED,         /* Produce: failed safe, never acknowledged or refused */
	PROXY_TOPIC_ID_DECISION_COUNT,
};
/**
 * Which of `ids` (n of them, borrowed) and of c's pending ids the map does not
 * know as LIVE and no lookup in flight on `c` already asks: written to `out`
 * (capacity `cap`, distinct). Returns how many. Pure over the map; loop thread.
 */
size_t proxy_topic_lookup_wanted(struct proxy_conn *c, const uint8_t (*ids)[16], size_t n,
				 uint8_t (*out)[16], size_t cap);
/**
 * Before a request naming TopicIds (`ids`, n) is forwarded on `c`: send a
 * Metadata v12 request for the ones proxy_topic_lookup_wanted() returns (an
 * INTERNAL entry, ahead in the FIFO and on the wire, so its answer is learnt
 * before the request's response is judged). Nothing when none is wanted.
 * 0, or -1 on ENOMEM (close the pair). Loop thread.
 */
int proxy_topic_lookup_ahead(struct proxy_conn *c, const uint8_t (*ids)[16], size_t n);
/** The Metadata answer to a lookup (body after the header): learnt. */
void proxy_topic_lookup_answer(struct proxy_conn *c, struct proxy_entry *e,
			       const struct codec_iov *iov, int niov);
/**
 * A decision needed the name of `id` and the map has none (`state` UNKNOWN or
 * GONE): counted (syncgate_topic_id_unresolved_total{api,decision}), warned
 * (rate-limited), and remembered on `c` so that its next request is preceded
 * by a lookup. Loop thread.
 */
void proxy_topic_id_unresolved(struct proxy_conn *c, const uint8_t id[16], enum proxy_topic_id_state state,
			       enum proxy_topic_id_api api, enum proxy_topic_id_decision decision);
/**
 * The clamp's rule for a TopicId the map has no LIVE name for (UNKNOWN or
 * GONE; `former`: a GONE id's old name): 1 gated (*mhw = -1, withhold every
 * record), 0 not gated. A GONE id is a deleted topic: gated when its former
 * name is. An UNKNOWN id is not gated only when the gate clamps no topic
 * without a LIVE id in the map — then it cannot be one of them — and the
 * state log has been read. Loop thread.
 */
int proxy_topic_id_clamp_rule(struct proxy_server *srv, enum proxy_topic_id_state state, const char *former,
			      int32_t partition, int64_t *mhw);

#endif
