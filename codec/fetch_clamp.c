/*
 * Fetch (key 1) clamp to the mirrored high watermark (KIP unified
 * sourceHW; invariant 1b, docs/architecture.md), v4–v18, and the request
 * fields the clamp needs (ReplicaId, MaxWaitMs).
 *
 * The clamp never copies or re-encodes a record: it returns in-place edits
 * (codec_edits) — HighWatermark and LastStableOffset overwritten, a
 * partition's Records length prefix rewritten (int32, or uvarint(len+1) in
 * flexible versions, whose size may change) and the tail of its record set
 * cut at a batch boundary. Every batch of a gated partition is judged by its
 * header, whatever the partition's HighWatermark says (codec_fetch_clamp_limit).
 * Everything else (AbortedTransactions,
 * PreferredReadReplica, DivergingEpoch, CurrentLeader, SnapshotId,
 * NodeEndpoints and unknown tagged fields) stays byte for byte.
 */
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"

#define FETCH_MIN 4
#define FETCH_MAX 18
#define FETCH_TOPIC_IDS 13
#define FETCH_REPLICA_STATE 15   /* ReplicaId moves into the ReplicaState tag */

/* RecordBatch v2 header: baseOffset(8) batchLength(4) partitionLeaderEpoch(4)
 * magic(1) crc(4) attributes(2) lastOffsetDelta(4) … recordsCount(4) at 57. */
#define BATCH_LOG_OVERHEAD 12
#define BATCH_MAGIC_OFF 16
#define BATCH_LAST_DELTA_OFF 23
#define BATCH_RECORDS_COUNT_OFF 57
#define BATCH_V2_HEADER 61

/* ---- edits -------------------------------------------------------------- */

int codec_edits_add(struct codec_edits *e, size_t off, size_t del, const uint8_t *ins, size_t ins_len)
{
	if (ins_len > sizeof(e->v[0].ins))
		return -1;
	if (e->n && off < e->v[e->n - 1].off + e->v[e->n - 1].del)
		return -1; /* out of order or overlapping */
	if (e->n == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 16;
		struct codec_edit *v = realloc(e->v, cap * sizeof(*v));
		if (!v)
			return -1;
		e->v = v;
		e->cap = cap;
	}
	struct codec_edit *d = &e->v[e->n++];
	d->off = off;
	d->del = del;
	d->ins_len = (uint8_t)ins_len;
	if (ins_len)
		memcpy(d->ins, ins, ins_len);
	e->delta += (int64_t)ins_len - (int64_t)del;
	return 0;
}

void codec_edits_free(struct codec_edits *e)
{
	free(e->v);
	memset(e, 0, sizeof(*e));
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* An int64 field at `off` overwritten with `v`. */
static void edit_i64(struct codec_reader *r, struct codec_edits *e, size_t off, int64_t v)
{
	uint8_t b[8];
	codec_put_be64(b, v);
	if (codec_edits_add(e, off, 8, b, 8) != 0)
		codec_reader_fail(r, CODEC_ERR_NOMEM);
}

/* ---- request ------------------------------------------------------------ */

static bool replica_state_tag(void *ctx, struct codec_reader *r, uint32_t tag, uint32_t size)
{
	struct codec_fetch_request_info *out = ctx;
	if (tag != 1)
		return false;
	out->replica_id = codec_read_i32(r);  /* ReplicaState.ReplicaId */
	codec_read_i64(r);                    /* ReplicaEpoch */
	codec_read_tags(r, NULL, NULL, NULL);
	return true;
}

enum codec_err codec_fetch_request_info(const struct codec_iov *iov, int niov, int16_t version,
					struct codec_fetch_request_info *out)
{
	struct codec_reader r;
	bool started = codec_decode_start(&r, iov, niov, CODEC_API_FETCH, version, FETCH_MIN, FETCH_MAX, out,
					  sizeof(*out));
	out->replica_id = -1;
	if (!started)
		return CODEC_ERR_UNSUPPORTED;
	if (version < FETCH_REPLICA_STATE)
		out->replica_id = codec_read_i32(&r);
	out->max_wait_ms = codec_read_i32(&r);
	codec_read_i32(&r); /* MinBytes */
	out->max_bytes_off = r.off;
	out->max_bytes = codec_read_i32(&r);
	out->isolation_level = codec_read_i8(&r);
	if (version >= 7) {
		out->session_id = codec_read_i32(&r);
		out->session_epoch = codec_read_i32(&r);
	}
	int32_t nt = codec_read_array_len(&r, false, 5);
	for (int32_t t = 0; t < nt && !r.err; t++) {
		if (version >= FETCH_TOPIC_IDS)
			codec_read_skip(&r, 16);
		else
			codec_read_slice(&r, false, false);
		int32_t np = codec_read_array_len(&r, false, 16);
		for (int32_t p = 0; p < np && !r.err; p++) {
			codec_read_i32(&r);                 /* Partition */
			if (version >= 9)
				codec_read_i32(&r);         /* CurrentLeaderEpoch */
			codec_read_i64(&r);                 /* FetchOffset */
			if (version >= 12)
				codec_read_i32(&r);         /* LastFetchedEpoch */
			if (version >= 5)
				codec_read_i64(&r);         /* LogStartOffset */
			codec_read_i32(&r);                 /* PartitionMaxBytes */
			codec_read_tags(&r, NULL, NULL, NULL);
			out->npartitions++;
		}
		codec_read_tags(&r, NULL, NULL, NULL);
	}
	if (version >= 7) {
		int32_t nf = codec_read_array_len(&r, false, 5);
		for (int32_t t = 0; t < nf && !r.err; t++) {
			if (version >= FETCH_TOPIC_IDS)
				codec_read_skip(&r, 16);
			else
				codec_read_slice(&r, false, false);
			struct codec_int32s parts;
			codec_read_int32s(&r, &parts);
			free(parts.v);
			codec_read_tags(&r, NULL, NULL, NULL);
		}
	}
	if (version >= 11)
		codec_read_slice(&r, false, false); /* RackId */
	codec_read_tags(&r, NULL, replica_state_tag, out);
	return codec_reader_finish(&r);
}

/* ---- response ----------------------------------------------------------- */

struct clamp_ctx {
	int16_t version;
	codec_clamp_fn fn;
	void *fn_ctx;
	struct codec_fetch_clamp *out;
	size_t topic;              /* index of the topic being read */
	const char *name;          /* its name (v4–v12) */
	const uint8_t *id;         /* its id (v13+) */
	size_t cap;                /* allocated parts */
};

/* Read `n` bytes at absolute body offset `off` (zeroes when out of range). */
static void peek(const struct codec_reader *r, size_t off, void *dst, size_t n)
{
	struct codec_reader c = *r;
	c.err = CODEC_OK;
	c.len = r->len;
	codec_reader_seek(&c, off);
	codec_read_raw(&c, dst, n);
}

static int64_t peek_i64(const struct codec_reader *r, size_t off)
{
	uint8_t b[8];
	peek(r, off, b, 8);
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | b[i];
	return (int64_t)v;
}

static int32_t peek_i32(const struct codec_reader *r, size_t off)
{
	uint8_t b[4];
	peek(r, off, b, 4);
	return (int32_t)((uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]);
}

static struct codec_fetch_clamp_part *part_new(struct codec_reader *r, struct clamp_ctx *c)
{
	struct codec_fetch_clamp *o = c->out;
	if (o->nparts == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 8;
		struct codec_fetch_clamp_part *v = realloc(o->parts, cap * sizeof(*v));
		if (!v) {
			codec_reader_fail(r, CODEC_ERR_NOMEM);
			return NULL;
		}
		o->parts = v;
		c->cap = cap;
	}
	struct codec_fetch_clamp_part *p = &o->parts[o->nparts++];
	memset(p, 0, sizeof(*p));
	p->topic = c->topic;
	return p;
}

void codec_batch_peek(const uint8_t *h, size_t avail, size_t left, struct codec_batch_head *out)
{
	uint8_t b[CODEC_BATCH_PEEK];
	memset(b, 0, sizeof(b));
	memcpy(b, h, avail < sizeof(b) ? avail : sizeof(b));
	struct codec_iov iov = { b, sizeof(b) };
	struct codec_reader r;
	codec_reader_init(&r, &iov, 1);
	int64_t base = left >= 8 ? peek_i64(&r, 0) : -1;
	int32_t blen = left >= BATCH_LOG_OVERHEAD ? peek_i32(&r, 8) : -1;
	size_t total = blen >= 0 ? BATCH_LOG_OVERHEAD + (size_t)blen : left;
	bool partial = blen < 0 || total > left;  /* a trailing batch cut by the broker */
	int8_t magic = left > BATCH_MAGIC_OFF ? (int8_t)b[BATCH_MAGIC_OFF] : 2;
	int64_t last;
	int32_t count = 0;
	if (magic < 2) {
		last = base;               /* legacy entry: offset of its last message */
		count = 1;
	} else if (magic == 2 && left >= BATCH_LAST_DELTA_OFF + 4) {
		int32_t delta = peek_i32(&r, BATCH_LAST_DELTA_OFF);
		/* a corrupt base or delta would overflow: treat as "too short to tell" */
		last = base >= 0 && delta >= 0 && base <= INT64_MAX - delta ? base + delta : base;
		if (!partial && blen + BATCH_LOG_OVERHEAD >= BATCH_V2_HEADER)
			count = peek_i32(&r, BATCH_RECORDS_COUNT_OFF);
		else
			count = (int32_t)(last - base + 1);
	} else {
		last = base;               /* too short to tell, or unknown magic */
	}
	out->base = base;
	out->last = last;
	out->total = partial ? left : total;
	out->partial = partial;
	out->records = count > 0 ? count : 0;
}

bool codec_batch_kept(const struct codec_batch_head *b, int64_t keep_below)
{
	return keep_below >= 0 && b->base >= 0 && b->last < keep_below;
}

/*
 * Walk a record set [off, off+len): batches whose last offset is below
 * `limit` (limit < 0: none) are kept, from the first one that is not, all
 * are dropped. Sets the kept length, the drop figures and records_end in `p`.
 */
static void walk_records(const struct codec_reader *r, size_t off, size_t len, int64_t limit,
			 struct codec_fetch_clamp_part *p)
{
	size_t pos = 0;
	bool dropping = false;
	p->kept_len = 0;
	while (pos < len) {
		size_t left = len - pos;
		uint8_t h[CODEC_BATCH_PEEK];
		size_t avail = left < sizeof(h) ? left : sizeof(h);
		peek(r, off + pos, h, avail);
		struct codec_batch_head b;
		codec_batch_peek(h, avail, left, &b);
		/* one past the batch's last offset (INT64_MAX stays: a corrupt header) */
		int64_t end = b.last < INT64_MAX ? b.last + 1 : INT64_MAX;
		if (b.base >= 0 && b.last >= b.base && end > p->records_end)
			p->records_end = end;
		if (!dropping && codec_batch_kept(&b, limit)) {
			p->kept_len = pos + b.total;
			p->batches_kept++;
		} else {
			if (!dropping)
				p->wait_above = b.last >= b.base ? b.last : b.base;
			dropping = true;
			if (!b.partial) {
				p->batches_dropped++;
				p->records_dropped += b.records;
			}
		}
		pos += b.total;
	}
	if (dropping)
		p->bytes_dropped = (int64_t)(len - p->kept_len);
}

bool codec_fetch_clamp_limit(int gated, int64_t mirrored_hw, int64_t log_start_offset,
			     int64_t *limit, int64_t *keep_below)
{
	/* unknown progress: nothing is known mirrored; the log start is */
	*limit = mirrored_hw >= 0 ? mirrored_hw : (log_start_offset > 0 ? log_start_offset : 0);
	*keep_below = mirrored_hw >= 0 ? mirrored_hw : -1;
	/* a HighWatermark at or below the mirrored HW proves nothing about the
	 * batches (taken before the read): every gated partition is judged */
	return gated > 0;
}

static void clamp_partition(struct codec_reader *r, struct clamp_ctx *c)
{
	struct codec_fetch_clamp *o = c->out;
	int32_t PartitionIndex = codec_read_i32(r);
	int16_t ErrorCode = codec_read_i16(r);
	size_t hw_off = r->off;
	int64_t HighWatermark = codec_read_i64(r);
	size_t lso_off = r->off;
	int64_t LastStableOffset = codec_read_i64(r);
	int64_t LogStartOffset = c->version >= 5 ? codec_read_i64(r) : 0;
	int32_t naborted = codec_read_array_len(r, true, 16);
	for (int32_t i = 0; i < naborted && !r->err; i++) {
		codec_read_i64(r); /* ProducerId */
		codec_read_i64(r); /* FirstOffset */
		codec_read_tags(r, NULL, NULL, NULL);
	}
	if (c->version >= 11)
		codec_read_i32(r); /* PreferredReadReplica */
	size_t prefix_off = r->off;
	struct codec_slice Records = codec_read_slice(r, true, true);
	size_t prefix_len = Records.len >= 0 ? Records.off - prefix_off : r->off - prefix_off;
	codec_read_tags(r, NULL, NULL, NULL);
	size_t blob = Records.len > 0 ? (size_t)Records.len : 0;
	if (r->err || ErrorCode != CODEC_ERROR_NONE) {
		o->record_bytes_left += blob;
		return; /* broker errors pass unchanged */
	}
	int64_t mhw = -1, limit, keep_below;
	int gated = c->fn(c->fn_ctx, c->name, c->id, PartitionIndex, &mhw);
	if (!codec_fetch_clamp_limit(gated, mhw, LogStartOffset, &limit, &keep_below)) {
		o->record_bytes_left += blob;
		return;
	}
	struct codec_fetch_clamp_part *p = part_new(r, c);
	if (!p)
		return;
	p->partition = PartitionIndex;
	p->broker_hw = HighWatermark;
	p->mirrored_hw = mhw;
	p->records_end = -1;
	p->wait_above = -1;
	if (HighWatermark > limit)
		edit_i64(r, &o->edits, hw_off, limit);
	if (LastStableOffset > limit)
		edit_i64(r, &o->edits, lso_off, limit);
	if (Records.len > 0) {
		walk_records(r, Records.off, (size_t)Records.len, keep_below, p);
		if (p->kept_len < (size_t)Records.len) {
			uint8_t b[8];
			size_t n;
			if (r->flexible) {
				n = codec_put_uvarint(b, (uint32_t)p->kept_len + 1);
			} else {
				put_be32(b, (uint32_t)p->kept_len);
				n = 4;
			}
			if (codec_edits_add(&o->edits, prefix_off, prefix_len, b, n) != 0 ||
			    codec_edits_add(&o->edits, Records.off + p->kept_len,
					    (size_t)Records.len - p->kept_len, NULL, 0) != 0)
				codec_reader_fail(r, CODEC_ERR_NOMEM);
		}
	}
	o->record_bytes_left += Records.len > 0 ? p->kept_len : 0;
	o->batches_kept += p->batches_kept;
	o->batches_dropped += p->batches_dropped;
	o->records_dropped += p->records_dropped;
	o->bytes_dropped += p->bytes_dropped;
}

static void clamp_part(struct codec_reader *r, void *ctx, size_t topic)
{
	struct clamp_ctx *c = ctx;
	c->topic = topic;
	c->name = c->version >= FETCH_TOPIC_IDS ? NULL : c->out->topic_names[topic];
	c->id = c->version >= FETCH_TOPIC_IDS ? c->out->topic_ids[topic] : NULL;
	clamp_partition(r, c);
}

enum codec_err codec_fetch_response_clamp(const struct codec_iov *iov, int niov, int16_t version,
					  codec_clamp_fn fn, void *fn_ctx,
					  struct codec_fetch_clamp *out)
{
	struct codec_reader r;
	memset(out, 0, sizeof(*out));
	struct clamp_ctx c = {version, fn, fn_ctx, out, 0, NULL, NULL, 0};
	if (codec_fetch_response_walk(&r, iov, niov, version, &out->topic_names, &out->topic_ids, &out->ntopics,
				      clamp_part, &c) != CODEC_OK)
		return CODEC_ERR_UNSUPPORTED;
	codec_read_tags(&r, NULL, NULL, NULL);
	return codec_reader_finish(&r);
}

void codec_fetch_clamp_free(struct codec_fetch_clamp *c)
{
	if (c->topic_names)
		for (size_t i = 0; i < c->ntopics; i++)
			free(c->topic_names[i]);
	free(c->topic_names);
	free(c->topic_ids);
	free(c->parts);
	codec_edits_free(&c->edits);
	memset(c, 0, sizeof(*c));
}
