/*
 * Unit tests of proxy/topic_ids.c (the TopicId map: one LIVE id per name, a
 * recreated topic's old id GONE, no resurrection by a late passive answer)
 * and proxy/topic_lookup.c (which ids are looked up ahead of a request, the
 * Metadata v12 lookup on the wire ahead of the Fetch, its answer learnt, and
 * the clamp's rule for an id that cannot be resolved).
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pair.h"

static void id_of(uint8_t id[16], int k)
{
	memset(id, 0, 16);
	id[0] = (uint8_t)(k >> 8);
	id[1] = (uint8_t)k;
	id[8] = (uint8_t)(k * 37 + 1); /* the hash reads the second half */
	id[15] = 0x5a;
}

Test(topic_ids, learn_resolve_and_unknown)
{
	struct proxy_topic_ids *m = proxy_topic_ids_new();
	uint8_t x[16], y[16];
	id_of(x, 1);
	id_of(y, 2);
	const char *name = "?";
	cr_assert(eq(i64, (int64_t)(proxy_topic_ids_resolve(m, x, &name)), (int64_t)(PROXY_TOPIC_ID_UNKNOWN)));
	cr_assert_null(name);
	proxy_topic_ids_learn(m, x, "orders", PROXY_TOPIC_ID_SEEN);
	cr_assert(eq(i64, (int64_t)(proxy_topic_ids_resolve(m, x, &name)), (int64_t)(PROXY_TOPIC_ID_LIVE)));
	cr_assert_str_eq(name, "orders");
	cr_assert_str_eq(proxy_topic_ids_name(m, x), "orders");
	cr_assert(proxy_topic_ids_name_known(m, "orders"));
	cr_assert_not(proxy_topic_ids_name_known(m, "other"));
	cr_assert_null(proxy_topic_ids_name(m, y));
	static const uint8_t zero[16];
	proxy_topic_ids_learn(m, zero, "zero", PROXY_TOPIC_ID_LOOKUP);
	cr_assert_not(proxy_topic_ids_name_known(m, "zero"), "a zero id (before Metadata v10) is ignored");
	proxy_topic_ids_free(m);
}

Test(topic_ids, recreated_topic_old_id_gone_and_not_resurrected_by_a_late_answer)
{
	struct proxy_topic_ids *m = proxy_topic_ids_new();
	uint8_t old[16], cur[16];
	id_of(old, 10);
	id_of(cur, 11);
	proxy_topic_ids_learn(m, old, "orders", PROXY_TOPIC_ID_SEEN);
	const char *kept = proxy_topic_ids_name(m, old);
	/* deleted and recreated: a Metadata answer names the new id */
	proxy_topic_ids_learn(m, cur, "orders", PROXY_TOPIC_ID_SEEN);
	const char *name = NULL;
	cr_assert(eq(i64, (int64_t)(proxy_topic_ids_resolve(m, old, &name)), (int64_t)(PROXY_TOPIC_ID_GONE)));
	cr_assert_str_eq(name, "orders", "a GONE id keeps its former name");
	cr_assert_null(proxy_topic_ids_name(m, old), "the old id is not attributed to the new topic");
	cr_assert(eq(i64, (int64_t)(proxy_topic_ids_name(m, cur)), (int64_t)(kept)), "one interned name: borrowed pointers stay valid");
	/* a slower connection's answer from before the recreation comes late */
	proxy_topic_ids_learn(m, old, "orders", PROXY_TOPIC_ID_SEEN);
	cr_assert(eq(i64, (int64_t)(proxy_topic_ids_resolve(m, old, NULL)), (int64_t)(PROXY_TOPIC_ID_GONE)));
	cr_assert(eq(i64, (int64_t)(proxy_topic_ids_resolve(m, cur, NULL)), (int64_t)(PROXY_TOPIC_ID_LIVE)));
	/* only this sidecar's own lookup may say which is current */
	proxy_topic_ids_learn(m, old, "orders", PROXY_TOPIC_ID_LOOKUP);
	cr_assert(eq(i64, (int64_t)(proxy_topic_ids_resolve(m, old, NULL)), (int64_t)(PROXY_TOPIC_ID_LIVE)));
	cr_assert(eq(i64, (int64_t)(proxy_topic_ids_resolve(m, cur, NULL)), (int64_t)(PROXY_TOPIC_ID_GONE)));
	proxy_topic_ids_free(m);
}

Test(topic_ids, lookup_unknown_topic_id_makes_a_live_id_gone)
{
	struct proxy_topic_ids *m = proxy_topic_ids_new();
	uint8_t x[16], y[16];
	id_of(x, 20);
	id_of(y, 21);
	proxy_topic_ids_learn(m, x, "gone", PROXY_TOPIC_ID_SEEN);
	proxy_topic_ids_forget(m, x);
	proxy_topic_ids_forget(m, y); /* never known: nothing */
	cr_assert(eq(i64, (int64_t)(proxy_topic_ids_resolve(m, x, NULL)), (int64_t)(PROXY_TOPIC_ID_GONE)));
	cr_assert(eq(i64, (int64_t)(proxy_topic_ids_resolve(m, y, NULL)), (int64_t)(PROXY_TOPIC_ID_UNKNOWN)));
	cr_assert_not(proxy_topic_ids_name_known(m, "gone"));
	proxy_topic_ids_free(m);
}

Test(topic_ids, grows_and_keeps_every_pair)
{
	struct proxy_topic_ids *m = proxy_topic_ids_new();
	char name[32];
	uint8_t id[16];
	for (int k = 0; k < 3000; k++) {
		id_of(id, k);
		snprintf(name, sizeof(name), "t%d", k % 1000); /* each name recreated twice */
		proxy_topic_ids_learn(m, id, name, PROXY_TOPIC_ID_SEEN);
	}
	for (int k = 0; k < 3000; k++) {
		id_of(id, k);
		const char *n = NULL;
		snprintf(name, sizeof(name), "t%d", k % 1000);
		cr_assert(eq(i64, (int64_t)(proxy_topic_ids_resolve(m, id, &n)), (int64_t)(k >= 2000 ? PROXY_TOPIC_ID_LIVE : PROXY_TOPIC_ID_GONE)),
			     "id %d", k);
		cr_assert_str_eq(n, name);
	}
	proxy_topic_ids_free(m);
}

/* ---- the lookup ahead of a Fetch, on a connection ------------------------ */

static const char *yaml = PAIR_GATED_YAML "advertise:\n  template: \"127.0.0.1:19092\"\n";

/* A consumer Fetch v17 naming `n` TopicIds (partition 0 each). */
static void fetch_v17(struct codec_buf *b, int32_t correlation_id, uint8_t (*ids)[16], size_t n)
{
	b->len = 0;
	codec_write_i32(b, 0);
	codec_write_i16(b, CODEC_API_FETCH);
	codec_write_i16(b, 17);
	codec_write_i32(b, correlation_id);
	codec_write_i16(b, 4);
	codec_write_raw(b, "java", 4);
	codec_write_i8(b, 0);                  /* header tags */
	codec_write_i32(b, 500);               /* MaxWaitMs */
	codec_write_i32(b, 1);                 /* MinBytes */
	codec_write_i32(b, 1 << 20);           /* MaxBytes */
	codec_write_i8(b, 0);                  /* IsolationLevel */
	codec_write_i32(b, 0);                 /* SessionId */
	codec_write_i32(b, -1);                /* SessionEpoch */
	codec_write_i8(b, (uint8_t)(n + 1));   /* Topics */
	for (size_t i = 0; i < n; i++) {
		codec_write_raw(b, ids[i], 16);
		codec_write_i8(b, 2);          /* one partition */
		codec_write_i32(b, 0);
		codec_write_i32(b, -1);
		codec_write_i64(b, 0);
		codec_write_i32(b, -1);
		codec_write_i64(b, -1);
		codec_write_i32(b, 1 << 20);
		codec_write_i8(b, 0);
		codec_write_i8(b, 0);          /* topic tags */
	}
	codec_write_i8(b, 1);                  /* ForgottenTopicsData */
	codec_write_i8(b, 1);                  /* RackId "" */
	codec_write_i8(b, 0);
	pair_frame_seal(b);
}

/* Everything the broker's end can read now (after running the loop). */
static size_t broker_read(struct fixture *f, uint8_t *out, size_t cap)
{
	size_t got = 0;
	for (int i = 0; i < 50; i++) {
		event_base_loop(f->base, EVLOOP_NONBLOCK);
		ssize_t r = read(f->up, out + got, cap - got);
		if (r > 0)
			got += (size_t)r;
	}
	return got;
}

static int32_t be32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
}

/* The frames of `p` (n bytes): count them, note each one's ApiKey. */
static size_t frames(const uint8_t *p, size_t n, int16_t *keys, size_t cap, size_t *first_len)
{
	size_t k = 0;
	for (size_t off = 0; off + 8 <= n && k < cap; k++) {
		size_t len = (size_t)be32(p + off);
		keys[k] = (int16_t)(p[off + 4] << 8 | p[off + 5]);
		if (k == 0)
			*first_len = len + 4;
		off += len + 4;
	}
	return k;
}

/* The broker's answer to a lookup: Metadata v12, `n` topics named. */
static void metadata_v12_answer(struct codec_buf *b, uint8_t (*ids)[16], const char **names, const int16_t *errors,
				size_t n)
{
	b->len = 0;
	codec_write_i32(b, 0);
	codec_write_i32(b, -1);     /* CorrelationId */
	codec_write_i8(b, 0);       /* header tags */
	codec_write_i32(b, 0);      /* ThrottleTimeMs */
	codec_write_i8(b, 1);       /* Brokers: none */
	codec_write_i8(b, 0);       /* ClusterId null */
	codec_write_i32(b, 1);      /* ControllerId */
	codec_write_i8(b, (uint8_t)(n + 1));
	for (size_t i = 0; i < n; i++) {
		codec_write_i16(b, errors[i]);
		if (names[i]) {
			codec_write_i8(b, (uint8_t)(strlen(names[i]) + 1));
			codec_write_raw(b, names[i], strlen(names[i]));
		} else {
			codec_write_i8(b, 0);
		}
		codec_write_raw(b, ids[i], 16);
		codec_write_i8(b, 0);        /* IsInternal */
		codec_write_i8(b, 1);        /* Partitions: none */
		codec_write_i32(b, INT32_MIN);
		codec_write_i8(b, 0);
	}
	codec_write_i8(b, 0);
	pair_frame_seal(b);
}

Test(topic_lookup, fetch_naming_unknown_ids_is_preceded_by_one_lookup_for_them)
{
	struct fixture f;
	pair_init(&f, yaml);
	uint8_t ids[3][16];
	for (int i = 0; i < 3; i++)
		id_of(ids[i], 100 + i);
	proxy_topic_ids_learn(f.srv.topic_ids, ids[1], "known", PROXY_TOPIC_ID_SEEN);
	struct codec_buf req = PAIR_BUF;
	fetch_v17(&req, 7, ids, 3);
	cr_assert(eq(i64, (int64_t)(write(f.cl, req.data, req.len)), (int64_t)((ssize_t)req.len)));
	uint8_t up[16384];
	size_t n = broker_read(&f, up, sizeof(up));
	int16_t keys[4];
	size_t first = 0;
	cr_assert(eq(i64, (int64_t)(frames(up, n, keys, 4, &first)), (int64_t)(2)), "a lookup, then the Fetch");
	cr_assert(eq(i64, (int64_t)(keys[0]), (int64_t)(CODEC_API_METADATA)));
	cr_assert(eq(i64, (int64_t)(keys[1]), (int64_t)(CODEC_API_FETCH)));
	cr_assert(eq(i64, (int64_t)(n - first), (int64_t)(req.len)), "the Fetch goes upstream byte for byte");
	cr_assert_not(memcmp(up + first, req.data, req.len));
	/* Metadata v12, correlation id -1, two topics by id (the known one not asked) */
	cr_assert(eq(i64, (int64_t)(up[6]), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(up[7]), (int64_t)(12)));
	cr_assert(eq(i64, (int64_t)(be32(up + 8)), (int64_t)(-1)));
	size_t topics = 4 + 2 + 2 + 4 + 2 + 8 + 1;
	cr_assert(eq(i64, (int64_t)(up[topics]), (int64_t)(3)), "compact array of 2");
	cr_assert_not(memcmp(up + topics + 1, ids[0], 16));
	cr_assert(eq(i64, (int64_t)(up[topics + 17]), (int64_t)(0)), "Name null");
	cr_assert_not(memcmp(up + topics + 19, ids[2], 16));

	/* a second Fetch while the lookup is in flight: nothing asked again */
	fetch_v17(&req, 8, ids, 3);
	cr_assert(eq(i64, (int64_t)(write(f.cl, req.data, req.len)), (int64_t)((ssize_t)req.len)));
	n = broker_read(&f, up, sizeof(up));
	cr_assert(eq(i64, (int64_t)(frames(up, n, keys, 4, &first)), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(keys[0]), (int64_t)(CODEC_API_FETCH)));

	/* the broker answers the lookup: one id is a topic, one it does not know */
	struct codec_buf ans = PAIR_BUF;
	uint8_t asked[2][16];
	memcpy(asked[0], ids[0], 16);
	memcpy(asked[1], ids[2], 16);
	const char *names[2] = { "orders", NULL };
	const int16_t errs[2] = { 0, CODEC_ERROR_UNKNOWN_TOPIC_ID };
	metadata_v12_answer(&ans, asked, names, errs, 2);
	cr_assert(eq(i64, (int64_t)(write(f.up, ans.data, ans.len)), (int64_t)((ssize_t)ans.len)));
	for (int i = 0; i < 20; i++)
		event_base_loop(f.base, EVLOOP_NONBLOCK);
	cr_assert_str_eq(proxy_topic_ids_name(f.srv.topic_ids, ids[0]), "orders");
	cr_assert(eq(i64, (int64_t)(proxy_topic_ids_resolve(f.srv.topic_ids, ids[2], NULL)), (int64_t)(PROXY_TOPIC_ID_UNKNOWN)));
	uint8_t cl[256];
	cr_assert(le(i64, (int64_t)(read(f.cl, cl, sizeof(cl))), (int64_t)(0)), "the lookup's answer never reaches the client");

	/* the id the broker did not know is asked again ahead of the next Fetch */
	uint8_t wanted[4][16];
	cr_assert(eq(i64, (int64_t)(proxy_topic_lookup_wanted(f.c, (const uint8_t (*)[16])ids, 3, wanted, 4)), (int64_t)(1)));
	cr_assert_not(memcmp(wanted[0], ids[2], 16));
	codec_buf_free(&req);
	codec_buf_free(&ans);
	pair_fini(&f);
}

Test(topic_lookup, ids_met_unresolved_in_a_response_are_asked_ahead_of_the_next_request)
{
	struct fixture f;
	pair_init(&f, yaml);
	uint8_t id[16], out[PROXY_LOOKUP_PENDING + 1][16];
	id_of(id, 300);
	cr_assert(eq(i64, (int64_t)(proxy_topic_lookup_wanted(f.c, NULL, 0, out, 4)), (int64_t)(0)));
	proxy_topic_id_unresolved(f.c, id, PROXY_TOPIC_ID_UNKNOWN, PROXY_TOPIC_ID_API_FETCH,
				  PROXY_TOPIC_ID_WITHHELD);
	proxy_topic_id_unresolved(f.c, id, PROXY_TOPIC_ID_UNKNOWN, PROXY_TOPIC_ID_API_FETCH,
				  PROXY_TOPIC_ID_WITHHELD);
	cr_assert(eq(i64, (int64_t)(f.c->nlookup_pending), (int64_t)(1)), "remembered once");
	cr_assert(eq(i64, (int64_t)(proxy_topic_lookup_wanted(f.c, NULL, 0, out, 4)), (int64_t)(1)));
	/* any next request (here a Fetch naming another, known, id) is preceded by the lookup */
	uint8_t known[1][16];
	id_of(known[0], 301);
	proxy_topic_ids_learn(f.srv.topic_ids, known[0], "orders", PROXY_TOPIC_ID_SEEN);
	struct codec_buf req = PAIR_BUF;
	fetch_v17(&req, 9, known, 1);
	cr_assert(eq(i64, (int64_t)(write(f.cl, req.data, req.len)), (int64_t)((ssize_t)req.len)));
	uint8_t up[8192];
	size_t n = broker_read(&f, up, sizeof(up)), first = 0;
	int16_t keys[4];
	cr_assert(eq(i64, (int64_t)(frames(up, n, keys, 4, &first)), (int64_t)(2)));
	cr_assert(eq(i64, (int64_t)(keys[0]), (int64_t)(CODEC_API_METADATA)));
	cr_assert(eq(i64, (int64_t)(f.c->nlookup_pending), (int64_t)(0)));
	codec_buf_free(&req);
	pair_fini(&f);
}

/* ---- the clamp's rule for an id it cannot name -------------------------- */

/* A gate where orders[0] is SYNC on mirror dr with mirrored HW 50. */
static void gate_fixture(struct fixture *f)
{
	pair_init(f, yaml);
	pair_gate_progress(f, 1, 50);
}

Test(topic_lookup, unresolved_id_is_withheld_only_while_it_may_be_a_gated_topic)
{
	struct fixture f;
	gate_fixture(&f);
	int64_t mhw = 7;
	/* the gated topic's id is not known: an unknown id may be it */
	cr_assert(eq(i64, (int64_t)(proxy_topic_id_clamp_rule(&f.srv, PROXY_TOPIC_ID_UNKNOWN, NULL, 0, &mhw)), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(mhw), (int64_t)(-1)), "withheld whole");
	/* the sidecar learnt the gated topic's id from its broker: an unknown id is another topic */
	uint8_t orders[16], other[16];
	id_of(orders, 400);
	id_of(other, 401);
	proxy_topic_ids_learn(f.srv.topic_ids, orders, "orders", PROXY_TOPIC_ID_LOOKUP);
	cr_assert(eq(i64, (int64_t)(proxy_topic_id_clamp_rule(&f.srv, PROXY_TOPIC_ID_UNKNOWN, NULL, 0, &mhw)), (int64_t)(0)),
		     "an ungated topic's records are never withheld");
	/* a deleted topic's id: gated when its former name is, never with the new topic's HW */
	cr_assert(eq(i64, (int64_t)(proxy_topic_id_clamp_rule(&f.srv, PROXY_TOPIC_ID_GONE, "orders", 0, &mhw)), (int64_t)(1)));
	cr_assert(eq(i64, (int64_t)(mhw), (int64_t)(-1)));
	cr_assert(eq(i64, (int64_t)(proxy_topic_id_clamp_rule(&f.srv, PROXY_TOPIC_ID_GONE, "plain", 0, &mhw)), (int64_t)(0)));
	/* orders recreated and its new id not learnt yet: unknown ids may be it again */
	proxy_topic_ids_forget(f.srv.topic_ids, orders);
	cr_assert(eq(i64, (int64_t)(proxy_topic_id_clamp_rule(&f.srv, PROXY_TOPIC_ID_UNKNOWN, NULL, 0, &mhw)), (int64_t)(1)));
	(void)other;
	pair_fini(&f);
}

Test(topic_lookup, while_the_state_log_is_read_every_unresolved_id_is_withheld)
{
	struct fixture f;
	pair_init(&f, yaml);
	struct mirror_gate *g = mirror_gate_new_ex(f.base, f.conf, MIRROR_GATE_NO_WORKERS | MIRROR_GATE_STATE_PENDING);
	cr_assert_not_null(g);
	f.srv.gate = g;
	uint8_t orders[16];
	id_of(orders, 500);
	proxy_topic_ids_learn(f.srv.topic_ids, orders, "orders", PROXY_TOPIC_ID_LOOKUP);
	int64_t mhw = 0;
	cr_assert(eq(i64, (int64_t)(proxy_topic_id_clamp_rule(&f.srv, PROXY_TOPIC_ID_UNKNOWN, NULL, 0, &mhw)), (int64_t)(1)),
		     "every topic is clamped until the state log is read");
	cr_assert(eq(i64, (int64_t)(mirror_gate_inject_record(g, NULL, -1)), (int64_t)(0)));
	for (int i = 0; i < 4; i++)
		event_base_loop(f.base, EVLOOP_NONBLOCK);
	cr_assert(eq(i64, (int64_t)(proxy_topic_id_clamp_rule(&f.srv, PROXY_TOPIC_ID_UNKNOWN, NULL, 0, &mhw)), (int64_t)(0)));
	pair_fini(&f);
}
