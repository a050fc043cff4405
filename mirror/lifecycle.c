/*
 * lifecycle.c — the pure (mirror, topic) lifecycle state machine and the
 * state-log record codec (see mirror/lifecycle.h). No I/O; any thread.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mirror/lifecycle.h"

const char *mirror_type_str(enum mirror_type t)
{
	return t == MIRROR_SYNC ? "SYNC" : t == MIRROR_ASYNC ? "ASYNC" : "?";
}

const char *mirror_rec_kind_str(enum mirror_rec_kind k)
{
	static const char *const s[MIRROR_REC_COUNT] = {
		[MIRROR_REC_ALTER] = "ALTER",
		[MIRROR_REC_REGISTER] = "REGISTER",
		[MIRROR_REC_RELEASE] = "RELEASE",
		[MIRROR_REC_DEMOTE] = "DEMOTE",
		[MIRROR_REC_FENCE] = "FENCE",
		[MIRROR_REC_UNFENCE] = "UNFENCE",
		[MIRROR_REC_SWITCH] = "SWITCH",
		[MIRROR_REC_PRODUCER_ID] = "PRODUCER_ID",
	};
	return (unsigned)k < MIRROR_REC_COUNT ? s[k] : "?";
}

enum mirror_rec_kind mirror_rec_kind_parse(const char *s)
{
	for (int k = 0; s && k < MIRROR_REC_COUNT; k++)
		if (strcmp(s, mirror_rec_kind_str((enum mirror_rec_kind)k)) == 0)
			return (enum mirror_rec_kind)k;
	return MIRROR_REC_COUNT;
}

const char *mirror_reject_str(enum mirror_reject r)
{
	static const char *const s[MIRROR_REJ_COUNT] = {
		[MIRROR_REJ_NONE] = "NONE",
		[MIRROR_REJ_RELEASED_FRESH_PROMOTION_REQUIRED] = "RELEASED_FRESH_PROMOTION_REQUIRED",
		[MIRROR_REJ_ALL_PARTITIONS_FAILING] = "ALL_PARTITIONS_FAILING",
		[MIRROR_REJ_NOT_DESIRED_SYNC] = "NOT_DESIRED_SYNC",
		[MIRROR_REJ_STALE_GENERATION] = "STALE_GENERATION",
		[MIRROR_REJ_FENCED] = "FENCED",
	};
	return (unsigned)r < MIRROR_REJ_COUNT ? s[r] : "?";
}

struct mirror_lstate mirror_lstate_initial(enum mirror_type config_desired)
{
	return (struct mirror_lstate){
		.desired = config_desired,
		.effective = MIRROR_ASYNC,
	};
}

static bool lstate_eq(const struct mirror_lstate *a, const struct mirror_lstate *b)
{
	return a->desired == b->desired && a->effective == b->effective && a->released == b->released &&
	       a->recovery_pending == b->recovery_pending && a->desired_logged == b->desired_logged &&
	       a->retry_attempt == b->retry_attempt && a->generation == b->generation && a->fenced == b->fenced;
}

static bool stale(const struct mirror_lstate *s, const struct mirror_record *r)
{
	return r->based_on >= 0 && r->based_on != s->generation;
}

void mirror_lifecycle_apply(struct mirror_lstate *s, const struct mirror_record *r,
			    struct mirror_apply_out *out)
{
	struct mirror_lstate before = *s;
	memset(out, 0, sizeof(*out));
	switch (r->kind) {
	case MIRROR_REC_ALTER:
		s->desired = r->type == MIRROR_SYNC ? MIRROR_SYNC : MIRROR_ASYNC;
		s->desired_logged = true;
		if (s->desired == MIRROR_ASYNC)
			s->effective = MIRROR_ASYNC; /* demotion is immediate */
		break;
	case MIRROR_REC_REGISTER:
		if (s->fenced) {
			out->reject = MIRROR_REJ_FENCED;
		} else if (s->desired != MIRROR_SYNC) {
			out->reject = MIRROR_REJ_NOT_DESIRED_SYNC;
		} else if (s->released && !r->recovery) {
			/* KIP: MIRROR_SYNC_RELEASED_REQUIRES_FRESH_PROMOTION, then the
			 * topic-wide demote path sets pendingRecoveryPromotion. */
			out->reject = MIRROR_REJ_RELEASED_FRESH_PROMOTION_REQUIRED;
			out->count_rejected = true;
			s->effective = MIRROR_ASYNC;
			s->recovery_pending = true;
			s->retry_attempt++;
		} else if (s->effective == MIRROR_SYNC && !s->released) {
			/* already registered: nothing to do */
		} else if (stale(s, r)) {
			out->reject = MIRROR_REJ_STALE_GENERATION;
		} else {
			s->effective = MIRROR_SYNC;
			s->released = false;
			s->recovery_pending = false;
			s->retry_attempt = 0;
		}
		break;
	case MIRROR_REC_RELEASE:
		if (s->effective != MIRROR_SYNC && (s->released || s->desired != MIRROR_SYNC))
			break; /* nothing registered (or already released) */
		s->released = true;
		s->effective = MIRROR_ASYNC;
		s->recovery_pending = true;
		break;
	case MIRROR_REC_DEMOTE:
		if (s->effective != MIRROR_SYNC)
			break;
		if (stale(s, r)) {
			out->reject = MIRROR_REJ_STALE_GENERATION;
			break;
		}
		out->reject = MIRROR_REJ_ALL_PARTITIONS_FAILING;
		out->count_rejected = true;
		s->effective = MIRROR_ASYNC;
		s->recovery_pending = true;
		break;
	case MIRROR_REC_FENCE:
	case MIRROR_REC_UNFENCE:
		s->fenced = r->kind == MIRROR_REC_FENCE;
		break;
	default:
		break;
	}
	out->changed = !lstate_eq(&before, s);
	if (out->changed)
		s->generation = before.generation + 1;
}

int64_t mirror_lifecycle_backoff_ms(int32_t retry_attempt)
{
	if (retry_attempt <= 0)
		return 0;
	int64_t ms = 500;
	for (int32_t i = 1; i < retry_attempt && ms < 30000; i++)
		ms *= 2;
	return ms < 30000 ? ms : 30000;
}

char *mirror_record_to_json(const char *mirror, const char *topic, const struct mirror_record *r)
{
	char origin[24];
	snprintf(origin, sizeof(origin), "%016" PRIx64, r->origin);
	json_t *j = json_pack("{s:i, s:s, s:s, s:s, s:s, s:b, s:b, s:I, s:s, s:I}", "v", 1, "mirror", mirror,
			      "topic", topic, "op", mirror_rec_kind_str(r->kind), "type",
			      mirror_type_str(r->type), "add", r->add, "recovery", r->recovery, "based_on",
			      (json_int_t)r->based_on, "origin", origin, "seq", (json_int_t)r->seq);
	if (!j)
		return NULL;
	if (r->kind == MIRROR_REC_PRODUCER_ID) {
		char client[24];
		snprintf(client, sizeof(client), "%016" PRIx64, r->claim.client);
		json_t *c = json_pack("{s:s, s:I, s:i, s:I, s:i}", "client", client, "producer_id",
				      (json_int_t)r->claim.producer_id, "epoch", (int)r->claim.epoch,
				      "dest_producer_id", (json_int_t)r->claim.dest_producer_id, "dest_epoch",
				      (int)r->claim.dest_epoch);
		if (!c || json_object_update(j, c) != 0) {
			json_decref(c);
			json_decref(j);
			return NULL;
		}
		json_decref(c);
	}
	char *s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return s;
}

int mirror_record_from_json(const char *buf, size_t len, char *mirror, size_t mirror_cap, char *topic,
			    size_t topic_cap, struct mirror_record *r)
{
	json_error_t err;
	json_t *j = json_loadb(buf, len, 0, &err);
	if (!json_is_object(j)) {
		json_decref(j);
		return -1;
	}
	const char *m = json_string_value(json_object_get(j, "mirror"));
	const char *t = json_string_value(json_object_get(j, "topic"));
	const char *op = json_string_value(json_object_get(j, "op"));
	const char *type = json_string_value(json_object_get(j, "type"));
	const char *origin = json_string_value(json_object_get(j, "origin"));
	json_t *based = json_object_get(j, "based_on"), *seq = json_object_get(j, "seq");
	memset(r, 0, sizeof(*r));
	r->kind = mirror_rec_kind_parse(op);
	int rc = -1;
	if (!m || !t || !*m || !*t || strlen(m) >= mirror_cap || strlen(t) >= topic_cap ||
	    r->kind == MIRROR_REC_COUNT)
		goto out;
	if (type && strcmp(type, "SYNC") != 0 && strcmp(type, "ASYNC") != 0)
		goto out;
	snprintf(mirror, mirror_cap, "%s", m);
	snprintf(topic, topic_cap, "%s", t);
	r->type = type && strcmp(type, "ASYNC") == 0 ? MIRROR_ASYNC : MIRROR_SYNC;
	r->add = json_is_true(json_object_get(j, "add"));
	r->recovery = json_is_true(json_object_get(j, "recovery"));
	r->based_on = json_is_integer(based) ? (int64_t)json_integer_value(based) : -1;
	r->seq = json_is_integer(seq) ? (uint64_t)json_integer_value(seq) : 0;
	r->origin = origin ? strtoull(origin, NULL, 16) : 0;
	if (r->kind == MIRROR_REC_PRODUCER_ID) {
		const char *client = json_string_value(json_object_get(j, "client"));
		json_t *pid = json_object_get(j, "producer_id"), *ep = json_object_get(j, "epoch");
		json_t *dpid = json_object_get(j, "dest_producer_id"), *dep = json_object_get(j, "dest_epoch");
		if (!client || !json_is_integer(pid) || !json_is_integer(ep) || !json_is_integer(dpid) ||
		    !json_is_integer(dep) || json_integer_value(dpid) < 0)
			goto out;
		r->claim = (struct mirror_producer_claim){ strtoull(client, NULL, 16), (int64_t)json_integer_value(pid),
							   (int16_t)json_integer_value(ep),
							   (int64_t)json_integer_value(dpid),
							   (int16_t)json_integer_value(dep) };
	}
	rc = 0;
out:
	json_decref(j);
	return rc;
}
