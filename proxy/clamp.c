/*
 * Consumers see only mirrored records (KIP "High Watermark
 * Advancement", the unified sourceHW; invariant 1b, docs/architecture.md).
 *
 * A consumer's Fetch (ReplicaId < 0: followers and brokers are never
 * touched), ListOffsets and OffsetForLeaderEpoch response is clamped to the
 * mirrored high watermark of each gated partition (mirror_gate_mirrored_hw):
 * HighWatermark/LastStableOffset/offsets above it come down to it, record
 * batches at or past it are left out whole — every batch of a gated
 * partition is judged, even when the response's own HighWatermark is not
 * above the mirrored HW (Kafka takes it before it reads the log, so a
 * response may carry batches at or past it). The frame is rebuilt by moving
 * the broker's buffer segments around a few rewritten header fields
 * (codec_edits): no record is copied or re-encoded.
 *
 * Streamed: a Fetch v12+ response is judged as it streams
 * (stream.c) while the connection's last clamped response left nothing out
 * — the mirrors keep up, the usual case — so the request's MaxBytes stays
 * and record bytes are spliced. Once one left records out the connection's
 * next response is buffered whole (MaxBytes lowered to fit
 * limits.max_frame_bytes) so that it can be held, until one leaves nothing
 * out again.
 *
 * No busy loop: a Fetch response that clamping leaves without any record,
 * while the request's MaxWaitMs has not elapsed, is HELD (within the held
 * bytes caps; the FIFO keeps responses in order) until the mirrored HW
 * passes the first withheld batch (mirror_gate_hw_watch) or MaxWaitMs
 * passes; then it is clamped again — with the HW of that moment — and sent.
 *
 * Who is clamped: clamp_who.c. Mirrors with `consumers: pass` do not
 * count; ShareFetch is not clamped (documented exception, counted). Loop
 * thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/clamp.h"
#include "proxy/datapath.h"
#include "proxy/security.h"

struct proxy_clamp;

static void clamp_release(struct proxy_conn *c, struct proxy_entry *e);

/* One mirrored-HW watch of a held Fetch response (the callback's argument). */
struct clamp_watch {
	struct proxy_clamp *k;
	struct mirror_hw_watch *w;               /* NULL once fired or cancelled */
};

/* Clamp state of one consumer request; a Fetch response may be held. */
struct proxy_clamp {
	struct proxy_conn *c;
	struct proxy_entry *e;
	int16_t api_key;
	int32_t max_wait_ms;                     /* Fetch */
	bool stream;                             /* Fetch v12+: judged as it streams (stream.c) */
	struct codec_list_offsets_request *lo;   /* ListOffsets: the decoded request (may be NULL) */
	/* HELD Fetch */
	struct evbuffer *frame;                  /* the broker's frame, size prefix included */
	size_t len, hdr_len;
	struct clamp_watch *watches;             /* one per partition with withheld batches */
	size_t nwatches;
	struct event *timer;
	size_t held_bytes;
};

static struct metric *m_held_now, *m_held_total, *m_records, *m_bytes, *m_clamped, *m_share,
	*m_fetches, *m_streamed;

static const struct metric_def clamp_metrics[] = {
	{ &m_held_now, METRIC_GAUGE, "syncgate_consumer_fetches_held",
	  "Consumer Fetch responses held now: clamped to the mirrored high watermark they had no "
	  "record left, held until it moves or MaxWaitMs passes." },
	{ &m_held_total, METRIC_COUNTER, "syncgate_consumer_fetches_held_total",
	  "Consumer Fetch responses held (see syncgate_consumer_fetches_held)." },
	{ &m_records, METRIC_COUNTER, "syncgate_consumer_records_withheld_total",
	  "Records left out of consumer Fetch responses because they were past the mirrored high "
	  "watermark (counted per response; a record may be withheld from several)." },
	{ &m_bytes, METRIC_COUNTER, "syncgate_consumer_bytes_withheld_total",
	  "Record bytes left out of consumer Fetch responses (past the mirrored high watermark)." },
	{ &m_clamped, METRIC_COUNTER, "syncgate_consumer_responses_clamped_total",
	  "Consumer Fetch, ListOffsets and OffsetForLeaderEpoch responses changed by the clamp to "
	  "the mirrored high watermark." },
	{ &m_share, METRIC_COUNTER, "syncgate_consumer_share_fetch_unclamped_total",
	  "ShareFetch requests forwarded without the clamp (share groups are not clamped to the "
	  "mirrored high watermark)." },
	{ &m_fetches, METRIC_COUNTER, "syncgate_consumer_fetch_requests_total",
	  "Consumer Fetch requests subject to the clamp to the mirrored high watermark." },
	{ &m_streamed, METRIC_COUNTER, "syncgate_consumer_fetches_streamed_total",
	  "Consumer Fetch responses clamped as they streamed (above 64 KiB, v12+, while the "
	  "connection's last clamped response left nothing out)." },
};

/*
 * Clamp distance (broker HW − mirrored HW) of a clamped partition, per
 * topic: the broker HW is at least `records_end` (one past the last offset
 * it returned, -1 none) whatever its HighWatermark said, since Kafka takes
 * that before it reads the log. Set only when there is a distance (as before
 * the partition was judged at all), so a partition whose batches are all
 * mirrored costs no metric lookup.
 */
static void set_distance(const char *topic, int64_t broker_hw, int64_t records_end, int64_t mhw)
{
	if (records_end > broker_hw)
		broker_hw = records_end;
	if (!topic || broker_hw < 0 || (mhw >= 0 && broker_hw <= mhw))
		return;
	char t[300], labels[320];
	metric_label_escape(t, sizeof(t), topic);
	snprintf(labels, sizeof(labels), "topic=\"%s\"", t);
	struct metric *m = metric_get(METRIC_GAUGE, "syncgate_consumer_clamp_distance_offsets",
				      "Broker high watermark minus mirrored high watermark in the last "
				      "clamped consumer Fetch of a partition of the topic (records a "
				      "consumer cannot see yet).", labels, NULL, 0);
	metric_set(m, (double)(mhw >= 0 ? broker_hw - mhw : broker_hw));
}

/*
 * A clamped Fetch response is buffered whole (a cut changes the frame's size
 * prefix, which precedes everything): lower the request's MaxBytes so the
 * broker's answer fits limits.max_frame_bytes, leaving room for the
 * structure around the records. A first record batch larger than MaxBytes
 * still comes whole (KIP-74) and is refused if above the limit.
 */
static void lower_max_bytes(struct proxy_conn *c, struct evbuffer *in, size_t off, int32_t max_bytes)
{
	int64_t limit = c->srv->conf->max_frame_bytes;
	int64_t margin = limit / 8 > (64 << 10) ? limit / 8 : (64 << 10);
	int64_t want = limit - margin > 1024 ? limit - margin : 1024;
	if (max_bytes <= want)
		return;
	unsigned char *p = evbuffer_pullup(in, (ev_ssize_t)(off + 4));
	if (!p)
		return;
	p[off] = (unsigned char)(want >> 24);
	p[off + 1] = (unsigned char)(want >> 16);
	p[off + 2] = (unsigned char)(want >> 8);
	p[off + 3] = (unsigned char)want;
	static struct proxy_log_limit lowered_log = {.interval_ms = 10000};
	uint64_t suppressed = 0;
	if (proxy_log_allow(&lowered_log, mirror_now_ms(), &suppressed))
		LOG_I("fetch_max_bytes_lowered", "conn=%llu peer=%s from=%d to=%lld reason=\"clamped "
		      "Fetch responses are buffered whole, up to limits.max_frame_bytes=%lld\" suppressed=%llu",
		      (unsigned long long)c->id, c->peer, max_bytes, (long long)want, (long long)limit,
		      (unsigned long long)suppressed);
}

int proxy_clamp_request(struct proxy_conn *c, struct proxy_entry *e, struct evbuffer *in,
			size_t len, const struct codec_request_header *h)
{
	METRIC_DEFS_GET(clamp_metrics);
	int16_t key = h->api_key, version = h->api_version;
	const struct codec_api *api = codec_api_get(key);
	if (!api || !(api->does & (CODEC_DOES_CLAMP | CODEC_DOES_COUNT)))
		return 0; /* the API table says which answers the clamp cuts (or counts) */
	if (c->srv->switched)
		return 0; /* the destination itself is served: every record it has is its own */
	struct codec_iov iov[PROXY_MAX_IOV];
	int niov = proxy_buf_iov(in, 4, len, iov, PROXY_MAX_IOV);
	if (niov < 0)
		return -1;
	char exempt_id[256] = "";
	enum proxy_clamp_who who = proxy_clamp_client(c, iov, niov, h, exempt_id, sizeof(exempt_id));
	if (who != PROXY_CLAMP_CLAMPED) {
		struct codec_iov ebody[PROXY_MAX_IOV];
		struct codec_fetch_request_info fi;
		int n = exempt_id[0] && key == CODEC_API_FETCH ? codec_iov_skip(iov, niov, h->len, ebody, PROXY_MAX_IOV)
							       : -1;
		if (n >= 0 && codec_fetch_request_info(ebody, n, version, &fi) == CODEC_OK &&
		    fi.replica_id < 0 && fi.isolation_level == 1)
			proxy_clamp_note_read_committed_reader(c, exempt_id);
		return 0;
	}
	if (key == CODEC_API_SHARE_FETCH) {
		metric_add(m_share, 1);
		return 0;
	}
	struct codec_iov body[PROXY_MAX_IOV];
	int nbody = codec_iov_skip(iov, niov, h->len, body, PROXY_MAX_IOV);
	if (nbody < 0)
		return -1;
	struct proxy_clamp *k = calloc(1, sizeof(*k));
	if (!k)
		return -1;
	k->c = c;
	k->e = e;
	k->api_key = key;
	if (key == CODEC_API_FETCH) {
		struct codec_fetch_request_info fi;
		enum codec_err err = codec_fetch_request_info(body, nbody, version, &fi);
		if (err == CODEC_OK && fi.replica_id >= 0) {
			free(k); /* a follower or a broker: never touched */
			return 0;
		}
		metric_add(m_fetches, 1);
		/* unreadable: still clamp (fail closed), without holding */
		k->max_wait_ms = err == CODEC_OK && fi.max_wait_ms > 0 ? fi.max_wait_ms : 0;
		/* v12+ (tagged fields take the filler of what is left out) streams
		 * while the mirrors keep up; else the response is buffered whole */
		k->stream = err == CODEC_OK && version >= 12 && !c->clamp_lagging;
		if (err == CODEC_OK && !k->stream)
			lower_max_bytes(c, in, 4 + h->len + fi.max_bytes_off, fi.max_bytes);
	} else if (key == CODEC_API_LIST_OFFSETS) {
		k->lo = calloc(1, sizeof(*k->lo));
		if (k->lo && codec_list_offsets_request_decode(body, nbody, version, k->lo) != CODEC_OK) {
			codec_list_offsets_request_free(k->lo);
			free(k->lo);
			k->lo = NULL; /* answers are clamped as "latest" queries */
		} else if (k->lo && k->lo->replica_id >= 0) {
			codec_list_offsets_request_free(k->lo);
			free(k->lo);
			free(k);
			return 0;
		}
	} else if (codec_offset_for_leader_epoch_replica_id(body, nbody, version) >= 0) {
		free(k);
		return 0;
	}
	e->clamp = k;
	e->release = clamp_release;
	return 0;
}

/* ---- the clamp ---------------------------------------------------------- */

/*
 * codec_clamp_fn: the mirrored HW of (topic, partition). A Fetch v13+
 * partition names its topic by TopicId only, resolved with the map this
 * sidecar learnt from its own broker (its lookup ran ahead of the request,
 * topic_lookup.c); one it still cannot resolve is decided by
 * proxy_topic_id_clamp_rule (never withheld unless it may be gated), counted
 * and warned.
 */
static int clamp_hw_fn(void *ctx, const char *topic, const uint8_t *topic_id, int32_t partition,
		       int64_t *mhw)
{
	struct proxy_conn *c = ctx;
	if (!topic && topic_id) {
		const char *name = NULL;
		enum proxy_topic_id_state st = proxy_topic_ids_resolve(c->srv->topic_ids, topic_id, &name);
		if (st == PROXY_TOPIC_ID_LIVE) {
			topic = name;
		} else {
			int gated = proxy_topic_id_clamp_rule(c->srv, st, name, partition, mhw);
			proxy_topic_id_unresolved(c, topic_id, st, PROXY_TOPIC_ID_API_FETCH,
						  gated ? PROXY_TOPIC_ID_WITHHELD : PROXY_TOPIC_ID_PASSED);
			return gated;
		}
	}
	if (!topic) {
		*mhw = -1; /* no name and no id (malformed): fail closed */
		return 1;
	}
	int gated = mirror_gate_mirrored_hw(c->srv->gate, topic, partition, mhw);
	LOG_D("consumer_clamp", "conn=%llu topic=%s partition=%d gated=%d mirrored_hw=%lld",
	      (unsigned long long)c->id, topic, partition, gated, (long long)*mhw);
	return gated;
}

/*
 * Build the clamped frame: `src` holds the whole frame (size prefix
 * included, `len` body+header bytes, header `hdr_len`); the edits (body
 * offsets) and an optional splice `s` after them are applied while the
 * other bytes move from `src` to the new buffer. `src` loses the frame.
 */
static struct evbuffer *rebuild(struct evbuffer *src, size_t len, size_t hdr_len,
				const struct codec_edits *ed, const struct codec_splice *s)
{
	struct evbuffer *out = evbuffer_new();
	if (!out)
		return NULL;
	int64_t new_len = (int64_t)len + ed->delta;
	if (s && s->changed)
		new_len += (int64_t)s->ins.len - (int64_t)s->del;
	uint8_t size[4] = { (uint8_t)(new_len >> 24), (uint8_t)(new_len >> 16), (uint8_t)(new_len >> 8),
			    (uint8_t)new_len };
	evbuffer_add(out, size, 4);
	evbuffer_drain(src, 4);
	size_t body = hdr_len, pos = 0; /* pos: frame bytes (after the prefix) consumed */
	for (size_t i = 0; i <= ed->n; i++) {
		size_t off, del;
		const uint8_t *ins;
		size_t ins_len;
		if (i < ed->n) {
			off = body + ed->v[i].off;
			del = ed->v[i].del;
			ins = ed->v[i].ins;
			ins_len = ed->v[i].ins_len;
		} else if (s && s->changed) {
			off = body + s->off;
			del = s->del;
			ins = s->ins.data;
			ins_len = s->ins.len;
		} else {
			break;
		}
		evbuffer_remove_buffer(src, out, off - pos);
		evbuffer_drain(src, del);
		if (ins_len)
			evbuffer_add(out, ins, ins_len);
		pos = off + del;
	}
	evbuffer_remove_buffer(src, out, len - pos);
	return out;
}

/* Fetch v16+: broker addresses in NodeEndpoints, rewritten as response.c does. */
static enum codec_err endpoints_splice(struct proxy_conn *c, int16_t version,
				       const struct codec_iov *iov, int niov, struct codec_splice *s)
{
	memset(s, 0, sizeof(*s));
	if (!codec_response_has_endpoints(CODEC_API_FETCH, version))
		return CODEC_OK;
	return codec_response_rewrite_endpoints(CODEC_API_FETCH, version, iov, niov,
						proxy_advertise_endpoint, c->srv, s);
}

static void count_clamp(const struct codec_fetch_clamp *fc, struct proxy_conn *c)
{
	metric_add(m_records, (double)fc->records_dropped);
	metric_add(m_bytes, (double)fc->bytes_dropped);
	for (size_t i = 0; i < fc->nparts; i++) {
		const struct codec_fetch_clamp_part *p = &fc->parts[i];
		const char *name = fc->topic_names[p->topic];
		if (!name)
			name = proxy_topic_ids_name(c->srv->topic_ids, fc->topic_ids[p->topic]);
		set_distance(name, p->broker_hw, p->records_end, p->mirrored_hw);
	}
}

static void held_release_bytes(struct proxy_clamp *k)
{
	if (!k->held_bytes)
		return;
	k->c->held_bytes -= k->held_bytes;
	k->c->srv->held_bytes -= k->held_bytes;
	metric_add(m_held_now, -1);
	k->held_bytes = 0;
}

static void held_stop(struct proxy_clamp *k)
{
	for (size_t i = 0; i < k->nwatches; i++)
		mirror_hw_watch_cancel(k->watches[i].w);
	free(k->watches);
	k->watches = NULL;
	k->nwatches = 0;
	if (k->timer) {
		event_free(k->timer);
		k->timer = NULL;
	}
	held_release_bytes(k);
}

/* Clamp the held frame again, with the mirrored HW of now, and send it. */
static void held_release(struct proxy_clamp *k)
{
	struct proxy_conn *c = k->c;
	struct proxy_entry *e = k->e;
	held_stop(k);
	struct codec_iov iov[PROXY_MAX_IOV];
	int niov = proxy_buf_iov(k->frame, 4 + k->hdr_len, k->len - k->hdr_len, iov, PROXY_MAX_IOV);
	struct codec_fetch_clamp fc;
	struct codec_splice s = { 0 };
	enum codec_err err = niov < 0 ? CODEC_ERR_BAD_MSG
				      : codec_fetch_response_clamp(iov, niov, e->api_version, clamp_hw_fn, c, &fc);
	if (err == CODEC_OK)
		err = endpoints_splice(c, e->api_version, iov, niov, &s);
	if (err == CODEC_OK) {
		count_clamp(&fc, c);
		e->out = rebuild(k->frame, k->len, k->hdr_len, &fc.edits, &s);
		metric_add(m_clamped, 1);
	}
	codec_fetch_clamp_free(&fc);
	codec_buf_free(&s.ins);
	evbuffer_free(k->frame);
	k->frame = NULL;
	if (err != CODEC_OK || !e->out) {
		c->ops->close(c, PROXY_CLOSE_HELD_FETCH_UNCLAMPABLE);
		return;
	}
	proxy_entry_set_state(c, e, PROXY_ENTRY_READY);
	proxy_fifo_flush(c);
	c->srv->resume_paused(c->srv);
	c->ops->update_flow(c);
}

static void held_watch_cb(void *arg)
{
	struct clamp_watch *cw = arg;
	cw->w = NULL; /* fired: already freed by the gate; held_stop() cancels the others */
	held_release(cw->k);
}

static void held_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	held_release(arg);
}

/*
 * Hold the Fetch response (moved from `in`) until a watched partition's
 * mirrored HW passes its first withheld batch, or `deadline_ms`. Returns 1
 * when held, 0 when it cannot be (caps, memory): the caller sends it now.
 */
static int held_start(struct proxy_conn *c, struct proxy_clamp *k, struct evbuffer *in, size_t len,
		      size_t hdr_len, const struct codec_fetch_clamp *fc, int64_t deadline_ms)
{
	const struct conf *cf = c->srv->conf;
	size_t cost = len + 4 + sizeof(*k) + fc->nparts * sizeof(*k->watches);
	if (c->held_bytes + cost > (size_t)cf->max_held_bytes_per_connection ||
	    c->srv->held_bytes + cost > (size_t)cf->max_held_bytes)
		return 0;
	k->watches = calloc(fc->nparts ? fc->nparts : 1, sizeof(*k->watches));
	k->frame = evbuffer_new();
	k->timer = evtimer_new(c->srv->base, held_timer_cb, k);
	if (!k->watches || !k->frame || !k->timer)
		goto fail;
	int64_t now = mirror_now_ms();
	for (size_t i = 0; i < fc->nparts; i++) {
		const struct codec_fetch_clamp_part *p = &fc->parts[i];
		if (p->batches_dropped == 0 && p->bytes_dropped == 0)
			continue;
		const char *name = fc->topic_names[p->topic];
		if (!name)
			name = proxy_topic_ids_name(c->srv->topic_ids, fc->topic_ids[p->topic]);
		if (!name)
			continue; /* unknown TopicId: the deadline releases it */
		struct clamp_watch *cw = &k->watches[k->nwatches];
		cw->k = k;
		cw->w = mirror_gate_hw_watch(c->srv->gate, name, p->partition, p->wait_above,
					     deadline_ms, held_watch_cb, cw);
		if (!cw->w)
			goto fail;
		k->nwatches++;
	}
	int64_t d = deadline_ms - now;
	struct timeval tv = { d / 1000, (d % 1000) * 1000 };
	evtimer_add(k->timer, &tv);
	evbuffer_remove_buffer(in, k->frame, len + 4);
	k->len = len;
	k->hdr_len = hdr_len;
	k->held_bytes = cost;
	c->held_bytes += cost;
	c->srv->held_bytes += cost;
	metric_add(m_held_now, 1);
	metric_add(m_held_total, 1);
	proxy_entry_set_state(c, k->e, PROXY_ENTRY_HELD);
	return 1;
fail:
	held_stop(k);
	if (k->frame)
		evbuffer_free(k->frame);
	k->frame = NULL;
	return 0;
}

static int clamp_fetch(struct proxy_conn *c, struct proxy_entry *e, struct evbuffer *in, size_t len,
		       size_t hdr_len, const struct codec_iov *iov, int niov)
{
	struct proxy_clamp *k = e->clamp;
	struct codec_fetch_clamp fc;
	enum codec_err err = codec_fetch_response_clamp(iov, niov, e->api_version, clamp_hw_fn, c, &fc);
	if (err != CODEC_OK) {
		/* never forward records we could not judge */
		LOG_W("response_malformed", "conn=%llu api=Fetch version=%d error=%s offset=%zu reason=\"clamp\"",
		      (unsigned long long)c->id, e->api_version, codec_err_str(err), 4 + hdr_len + codec_err_offset());
		codec_fetch_clamp_free(&fc);
		return -1;
	}
	c->clamp_lagging = fc.bytes_dropped > 0;
	if (fc.edits.n == 0) {
		codec_fetch_clamp_free(&fc);
		return 0; /* nothing past the mirrored HW: the usual path (endpoints) */
	}
	int64_t deadline = e->arrival_ms + k->max_wait_ms;
	if (fc.record_bytes_left == 0 && fc.bytes_dropped > 0 && mirror_now_ms() < deadline &&
	    held_start(c, k, in, len, hdr_len, &fc, deadline)) {
		count_clamp(&fc, c);
		codec_fetch_clamp_free(&fc);
		return 1;
	}
	struct codec_splice s;
	err = endpoints_splice(c, e->api_version, iov, niov, &s);
	if (err == CODEC_OK) {
		count_clamp(&fc, c);
		e->out = rebuild(in, len, hdr_len, &fc.edits, &s);
		metric_add(m_clamped, 1);
	}
	codec_fetch_clamp_free(&fc);
	codec_buf_free(&s.ins);
	if (err != CODEC_OK || !e->out)
		return -1;
	proxy_entry_set_state(c, e, PROXY_ENTRY_READY);
	proxy_fifo_flush(c);
	return 1;
}

int proxy_clamp_response(struct proxy_conn *c, struct proxy_entry *e, struct evbuffer *in,
			 size_t len, size_t hdr_len)
{
	struct proxy_clamp *k = e->clamp;
	if (!k)
		return 0;
	struct codec_iov iov[PROXY_MAX_IOV];
	int niov = proxy_buf_iov(in, 4 + hdr_len, len - hdr_len, iov, PROXY_MAX_IOV);
	if (niov < 0)
		return -1;
	if (k->api_key == CODEC_API_FETCH)
		return clamp_fetch(c, e, in, len, hdr_len, iov, niov);
	struct codec_offsets_clamp oc;
	enum codec_err err = k->api_key == CODEC_API_LIST_OFFSETS
		? codec_list_offsets_response_clamp(iov, niov, e->api_version, k->lo, clamp_hw_fn, c, &oc)
		: codec_offset_for_leader_epoch_response_clamp(iov, niov, e->api_version, clamp_hw_fn, c, &oc);
	if (err != CODEC_OK) {
		LOG_W("response_malformed", "conn=%llu api=%s version=%d error=%s offset=%zu reason=\"clamp\"",
		      (unsigned long long)c->id, codec_api_name(k->api_key), e->api_version,
		      codec_err_str(err), 4 + hdr_len + codec_err_offset());
		codec_edits_free(&oc.edits);
		return -1;
	}
	if (oc.edits.n == 0) {
		codec_edits_free(&oc.edits);
		return 0;
	}
	e->out = rebuild(in, len, hdr_len, &oc.edits, NULL);
	codec_edits_free(&oc.edits);
	if (!e->out)
		return -1;
	metric_add(m_clamped, 1);
	proxy_entry_set_state(c, e, PROXY_ENTRY_READY);
	proxy_fifo_flush(c);
	return 1;
}

/* ---- streamed (stream.c walks the frame) --------------------------------- */

bool proxy_clamp_streams(const struct proxy_entry *e)
{
	return e->clamp && e->clamp->stream;
}

bool proxy_clamp_stream_partition(struct proxy_conn *c, const char *topic, const uint8_t *topic_id,
				  const struct codec_fetch_stream_part *p, int64_t *limit,
				  int64_t *keep_below)
{
	if (p->error_code != CODEC_ERROR_NONE)
		return false; /* broker errors pass unchanged */
	int64_t mhw = -1;
	int gated = clamp_hw_fn(c, topic, topic_id, p->partition, &mhw);
	return codec_fetch_clamp_limit(gated, mhw, p->log_start_offset, limit, keep_below);
}

void proxy_clamp_stream_partition_end(struct proxy_conn *c, const char *topic, const uint8_t *topic_id,
				      int64_t broker_hw, int64_t records_end, int64_t keep_below)
{
	if (!topic && topic_id)
		topic = proxy_topic_ids_name(c->srv->topic_ids, topic_id);
	set_distance(topic, broker_hw, records_end, keep_below);
}

void proxy_clamp_stream_done(struct proxy_conn *c, bool changed, int64_t records, int64_t bytes)
{
	c->clamp_lagging = bytes > 0;
	metric_add(m_streamed, 1);
	metric_add(m_records, (double)records);
	metric_add(m_bytes, (double)bytes);
	if (changed)
		metric_add(m_clamped, 1);
}

/* e->release of an entry with clamp state: the held frame, watches, timer. */
static void clamp_release(struct proxy_conn *c, struct proxy_entry *e)
{
	struct proxy_clamp *k = e->clamp;
	(void)c;
	if (!k)
		return;
	held_stop(k);
	if (k->frame)
		evbuffer_free(k->frame);
	if (k->lo) {
		codec_list_offsets_request_free(k->lo);
		free(k->lo);
	}
	free(k);
	e->clamp = NULL;
}
