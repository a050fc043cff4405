/*
 * Broker address rewriting in responses: Metadata, FindCoordinator,
 * DescribeCluster, ShareFetch/ShareAcknowledge NodeEndpoints and the KIP-951
 * tagged NodeEndpoints of Produce (v10+) and Fetch (v16+).
 *
 * Every endpoint on the wire is NodeId, Host, Port in a row. The walkers
 * below read each message up to its endpoints and hand every endpoint to a
 * rewriter, which asks the callback and emits the replacement bytes on the
 * fly: the splice runs from the first changed Host to the last changed Port,
 * and everything between is copied as it was. Nothing outside is touched.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"

struct rewriter {
	const struct codec_iov *iov;
	int niov;
	codec_endpoint_fn fn;
	void *ctx;
	struct codec_buf *ins;   /* replacement bytes for [start, cursor) */
	size_t start;            /* SIZE_MAX until an endpoint changed */
	size_t cursor;           /* end of what `ins` already covers */
	char *host;              /* NUL-terminated copy of the current Host */
	size_t host_cap;
};

/* Copy a Host slice into w->host (NUL-terminated). */
static bool rw_host_copy(struct rewriter *w, struct codec_reader *r, struct codec_slice s)
{
	size_t n = s.len > 0 ? (size_t)s.len : 0;
	if (n + 1 > w->host_cap) {
		char *p = realloc(w->host, n + 1);
		if (!p) {
			codec_reader_fail(r, CODEC_ERR_NOMEM);
			return false;
		}
		w->host = p;
		w->host_cap = n + 1;
	}
	struct codec_reader c;
	codec_reader_init(&c, w->iov, w->niov);
	codec_reader_seek(&c, s.off);
	codec_read_raw(&c, w->host, n);
	w->host[n] = '\0';
	return true;
}

/* Read NodeId, Host, Port at `r` and rewrite them if the callback says so. */
static void rw_endpoint(struct rewriter *w, struct codec_reader *r)
{
	int32_t NodeId = codec_read_i32(r);
	size_t host_off = r->off;
	struct codec_slice Host = codec_read_slice(r, false, false);
	int32_t Port = codec_read_i32(r);
	if (r->err || !rw_host_copy(w, r, Host))
		return;
	const char *new_host = NULL;
	int32_t new_port = Port;
	if (w->fn(w->ctx, NodeId, w->host, Port, &new_host, &new_port) != 0 || !new_host)
		return;
	if (new_port == Port && strcmp(new_host, w->host) == 0)
		return;
	if (w->start == SIZE_MAX)
		w->start = w->cursor = host_off;
	codec_write_iov(w->ins, w->iov, w->niov, w->cursor, host_off - w->cursor);
	w->ins->flexible = r->flexible;
	codec_write_str(w->ins, new_host);
	codec_write_i32(w->ins, new_port);
	w->cursor = r->off;
	if (w->ins->err)
		codec_reader_fail(r, w->ins->err);
}

/* Metadata v0–v13: ThrottleTimeMs (v3+), Brokers[NodeId, Host, Port, Rack (v1+)]. */
static void walk_metadata(struct rewriter *w, struct codec_reader *r, int16_t version)
{
	if (version >= 3)
		codec_read_i32(r);
	int32_t n = codec_read_array_len(r, false, 10);
	for (int32_t i = 0; i < n && !r->err; i++) {
		rw_endpoint(w, r);
		if (version >= 1)
			codec_read_slice(r, false, true); /* Rack */
		codec_read_tags(r, NULL, NULL, NULL);
	}
}

/* FindCoordinator v0–v3 single coordinator, v4+ Coordinators[]. */
static void walk_find_coordinator(struct rewriter *w, struct codec_reader *r, int16_t version)
{
	if (version >= 1)
		codec_read_i32(r); /* ThrottleTimeMs */
	if (version < 4) {
		codec_read_i16(r); /* ErrorCode */
		if (version >= 1)
			codec_read_slice(r, false, true); /* ErrorMessage */
		rw_endpoint(w, r);
		return;
	}
	int32_t n = codec_read_array_len(r, false, 14);
	for (int32_t i = 0; i < n && !r->err; i++) {
		codec_read_slice(r, false, false); /* Key */
		rw_endpoint(w, r);
		codec_read_i16(r);                  /* ErrorCode */
		codec_read_slice(r, false, true);  /* ErrorMessage */
		codec_read_tags(r, NULL, NULL, NULL);
	}
}

/* DescribeCluster v0–v2: Brokers[BrokerId, Host, Port, Rack, IsFenced (v2+)]. */
static void walk_describe_cluster(struct rewriter *w, struct codec_reader *r, int16_t version)
{
	codec_read_i32(r);                  /* ThrottleTimeMs */
	codec_read_i16(r);                  /* ErrorCode */
	codec_read_slice(r, false, true);   /* ErrorMessage */
	if (version >= 1)
		codec_read_i8(r);           /* EndpointType */
	codec_read_slice(r, false, false);  /* ClusterId */
	codec_read_i32(r);                  /* ControllerId */
	int32_t n = codec_read_array_len(r, false, 11);
	for (int32_t i = 0; i < n && !r->err; i++) {
		rw_endpoint(w, r);
		codec_read_slice(r, false, true); /* Rack */
		if (version >= 2)
			codec_read_bool(r);       /* IsFenced */
		codec_read_tags(r, NULL, NULL, NULL);
	}
}

/* NodeEndpoints[NodeId, Host, Port, Rack] (Produce, Fetch, ShareFetch, ShareAcknowledge). */
static void walk_node_endpoints(struct rewriter *w, struct codec_reader *r)
{
	int32_t n = codec_read_array_len(r, false, 11);
	for (int32_t i = 0; i < n && !r->err; i++) {
		rw_endpoint(w, r);
		codec_read_slice(r, false, true); /* Rack */
		codec_read_tags(r, NULL, NULL, NULL);
	}
}

/* LeaderIdAndEpoch as a plain (untagged) flexible struct. */
static void skip_leader(struct codec_reader *r)
{
	codec_read_i32(r); /* LeaderId */
	codec_read_i32(r); /* LeaderEpoch */
	codec_read_tags(r, NULL, NULL, NULL);
}

/* ShareFetch v1–v2 / ShareAcknowledge v1–v2 up to and including NodeEndpoints. */
static void walk_share(struct rewriter *w, struct codec_reader *r, int16_t api_key, int16_t version)
{
	bool fetch = api_key == CODEC_API_SHARE_FETCH;
	codec_read_i32(r);                /* ThrottleTimeMs */
	codec_read_i16(r);                /* ErrorCode */
	codec_read_slice(r, false, true); /* ErrorMessage */
	if (version >= (fetch ? 1 : 2))
		codec_read_i32(r);        /* AcquisitionLockTimeoutMs */
	int32_t ntopics = codec_read_array_len(r, false, 18);
	for (int32_t t = 0; t < ntopics && !r->err; t++) {
		codec_read_skip(r, 16); /* TopicId */
		int32_t np = codec_read_array_len(r, false, 12);
		for (int32_t i = 0; i < np && !r->err; i++) {
			codec_read_i32(r);                /* PartitionIndex */
			codec_read_i16(r);                /* ErrorCode */
			codec_read_slice(r, false, true); /* ErrorMessage */
			if (fetch) {
				codec_read_i16(r);                /* AcknowledgeErrorCode */
				codec_read_slice(r, false, true); /* AcknowledgeErrorMessage */
			}
			skip_leader(r);
			if (fetch) {
				codec_read_slice(r, true, true); /* Records */
				int32_t na = codec_read_array_len(r, false, 19);
				for (int32_t a = 0; a < na && !r->err; a++) {
					codec_read_skip(r, 18); /* FirstOffset, LastOffset, DeliveryCount */
					codec_read_tags(r, NULL, NULL, NULL);
				}
			}
			codec_read_tags(r, NULL, NULL, NULL);
		}
		codec_read_tags(r, NULL, NULL, NULL);
	}
	walk_node_endpoints(w, r);
}

/*
 * The top-level tagged section at `tags_off` (Produce v10+, Fetch v16+):
 * rewrite NodeEndpoints (tag 0, always first when present) and splice that
 * one field, its size prefix updated. Other tags are not touched.
 */
static enum codec_err rewrite_tagged(struct rewriter *w, size_t tags_off, struct codec_splice *out)
{
	struct codec_reader r;
	codec_reader_init(&r, w->iov, w->niov);
	r.flexible = true;
	codec_reader_seek(&r, tags_off);
	uint32_t count = codec_read_uvarint(&r);
	if (r.err || count == 0)
		return r.err;
	size_t field = r.off;
	uint32_t tag = codec_read_uvarint(&r);
	uint32_t size = codec_read_uvarint(&r);
	if (r.err || tag != 0)
		return r.err;
	size_t data = r.off;
	struct codec_reader sub;
	if (!codec_reader_sub(&r, size, &sub))
		return r.err;
	walk_node_endpoints(w, &sub);
	codec_reader_join(&r, &sub);
	if (r.err || w->start == SIZE_MAX)
		return r.err;
	/* New field = tag 0, new size, [data, start) + ins + [cursor, end). */
	size_t end = data + size;
	size_t len = (w->start - data) + w->ins->len + (end - w->cursor);
	struct codec_buf field_buf;
	codec_buf_init(&field_buf, w->ins->limit);
	codec_write_uvarint(&field_buf, 0);
	codec_write_uvarint(&field_buf, len > UINT32_MAX ? UINT32_MAX : (uint32_t)len);
	codec_write_iov(&field_buf, w->iov, w->niov, data, w->start - data);
	codec_write_raw(&field_buf, w->ins->data, w->ins->len);
	codec_write_iov(&field_buf, w->iov, w->niov, w->cursor, end - w->cursor);
	if (field_buf.err) {
		enum codec_err e = field_buf.err;
		codec_buf_free(&field_buf);
		return e;
	}
	codec_buf_free(w->ins);
	out->ins = field_buf;
	out->off = field;
	out->del = end - field;
	out->changed = true;
	return CODEC_OK;
}

/* Offset of the top-level tagged fields of a Produce v10+ or Fetch v16+ response. */
static enum codec_err tags_offset(int16_t api_key, int16_t api_version, const struct codec_iov *iov,
				  int niov, size_t *off)
{
	enum codec_err e;
	if (api_key == CODEC_API_PRODUCE) {
		struct codec_produce_response m;
		e = codec_produce_response_decode(iov, niov, api_version, &m);
		*off = m.tags_off;
		codec_produce_response_free(&m);
	} else {
		struct codec_fetch_response_scan s;
		e = codec_fetch_response_scan(iov, niov, api_version, &s);
		*off = s.tags_off;
		codec_fetch_response_scan_free(&s);
	}
	return e;
}

bool codec_response_has_endpoints(int16_t api_key, int16_t api_version)
{
	const struct codec_api *a = codec_api_get(api_key);
	return a && a->endpoints_from >= 0 && api_version >= a->endpoints_from;
}

/* Outer size limit for replacement bytes (hosts are ≤ 32 KiB each). */
#define REWRITE_LIMIT (64u << 20)

enum codec_err codec_response_rewrite_endpoints(int16_t api_key, int16_t api_version,
						const struct codec_iov *iov, int niov,
						codec_endpoint_fn fn, void *ctx,
						struct codec_splice *out)
{
	memset(out, 0, sizeof(*out));
	codec_buf_init(&out->ins, REWRITE_LIMIT);
	const struct codec_api *api = codec_api_get(api_key);
	if (!codec_response_has_endpoints(api_key, api_version) || api_version > api->decode_max ||
	    api_version < api->min_version)
		return CODEC_ERR_UNSUPPORTED;

	struct rewriter w = {iov, niov, fn, ctx, &out->ins, SIZE_MAX, 0, NULL, 0};
	struct codec_reader r;
	codec_reader_init(&r, iov, niov);
	r.flexible = codec_api_flexible(api_key, api_version);
	enum codec_err e;
	if (api_key == CODEC_API_PRODUCE || api_key == CODEC_API_FETCH) {
		size_t off = 0;
		e = tags_offset(api_key, api_version, iov, niov, &off);
		if (e == CODEC_OK)
			e = rewrite_tagged(&w, off, out);
	} else {
		if (api_key == CODEC_API_METADATA)
			walk_metadata(&w, &r, api_version);
		else if (api_key == CODEC_API_FIND_COORDINATOR)
			walk_find_coordinator(&w, &r, api_version);
		else if (api_key == CODEC_API_DESCRIBE_CLUSTER)
			walk_describe_cluster(&w, &r, api_version);
		else
			walk_share(&w, &r, api_key, api_version);
		e = r.err;
		if (e == CODEC_OK && w.start != SIZE_MAX) {
			out->changed = true;
			out->off = w.start;
			out->del = w.cursor - w.start;
		}
	}
	free(w.host);
	if (e != CODEC_OK) {
		codec_buf_free(&out->ins);
		out->changed = false;
	}
	return e;
}

/* ---- length-preserving rewrite of a streamed response's tail ------------ */

static size_t uvarint_len(uint32_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* One filler field `tag` of exactly `f` bytes (tag, minimal size, zeros); 0 when impossible. */
static size_t filler_one(uint8_t *p, uint32_t tag, size_t f)
{
	size_t tag_len = uvarint_len(tag);
	for (size_t vl = 1; vl <= 4; vl++) {
		if (f < tag_len + vl)
			return 0;
		size_t d = f - tag_len - vl;
		if (uvarint_len((uint32_t)d) != vl)
			continue;
		if (p) {
			size_t n = codec_put_uvarint(p, tag);
			n += codec_put_uvarint(p + n, (uint32_t)d);
			memset(p + n, 0, d);
		}
		return f;
	}
	return 0;
}

/* The smallest filler field: tag CODEC_TAG_FILLER - 1, size 0. */
#define FILLER_MIN 3

/*
 * Filler of exactly `gap` bytes in `k` fields (1 or 2; tags strictly
 * increasing: FILLER - 1 then FILLER); `p` NULL only checks. 0 when impossible.
 */
static size_t filler(uint8_t *p, uint32_t k, size_t gap)
{
	if (k == 1)
		return filler_one(p, CODEC_TAG_FILLER, gap);
	if (gap < FILLER_MIN || !filler_one(NULL, CODEC_TAG_FILLER, gap - FILLER_MIN))
		return 0;
	if (p) {
		filler_one(p, CODEC_TAG_FILLER - 1, FILLER_MIN);
		filler_one(p + FILLER_MIN, CODEC_TAG_FILLER, gap - FILLER_MIN);
	}
	return gap;
}

/*
 * Assemble count, `head` (the tag-0 field, may be empty), `rest` (the other
 * fields, verbatim) and filler fields into exactly `len` bytes at `out`.
 * Returns 0, or -1 when no filler fits (gaps of 1 or 2 bytes; one filler
 * field cannot fill a few sizes, e.g. 131, two can).
 */
static int assemble(uint8_t *out, size_t len, uint32_t count, const uint8_t *head, size_t head_len,
		    const struct codec_iov *iov, int niov, size_t rest_off, size_t rest_len)
{
	for (uint32_t k = 0; k <= 2; k++) {
		size_t base = uvarint_len(count + k) + head_len + rest_len;
		if (base > len)
			return -1;
		size_t gap = len - base;
		if ((k == 0) != (gap == 0))
			continue;
		if (k > 0 && !filler(NULL, k, gap))
			continue;
		size_t n = codec_put_uvarint(out, count + k);
		if (head_len)
			memcpy(out + n, head, head_len);
		n += head_len;
		struct codec_reader r;
		codec_reader_init(&r, iov, niov);
		codec_reader_seek(&r, rest_off);
		codec_read_raw(&r, out + n, rest_len);
		if (r.err)
			return -1;
		n += rest_len;
		if (k > 0)
			filler(out + n, k, gap);
		return 0;
	}
	return -1;
}

/*
 * Check a tagged-field section from `from` (after its count) to `len`:
 * `left` fields, strictly increasing tags above `prev` (-1: any), all below
 * the filler tags.
 */
static enum codec_err tags_check(struct codec_reader *r, size_t from, uint32_t left, int64_t prev,
				 size_t len)
{
	codec_reader_seek(r, from);
	for (uint32_t i = 0; i < left && !r->err; i++) {
		uint32_t tag = codec_read_uvarint(r);
		uint32_t size = codec_read_uvarint(r);
		codec_read_skip(r, size);
		if ((int64_t)tag <= prev)
			codec_reader_fail(r, CODEC_ERR_BAD_MSG);
		if (tag >= CODEC_TAG_FILLER - 1)
			codec_reader_fail(r, CODEC_ERR_UNSUPPORTED);
		prev = tag;
	}
	if (r->err)
		return r->err;
	return r->off == len ? CODEC_OK : CODEC_ERR_BAD_MSG;
}

enum codec_err codec_tags_grow(const struct codec_iov *iov, int niov, size_t len, size_t grow, uint8_t *out)
{
	struct codec_reader r;
	codec_reader_init(&r, iov, niov);
	r.flexible = true;
	uint32_t count = codec_read_uvarint(&r);
	size_t rest_off = r.off;
	enum codec_err e = r.err ? r.err : tags_check(&r, rest_off, count, -1, len);
	if (e != CODEC_OK)
		return e;
	if (assemble(out, len + grow, count, NULL, 0, iov, niov, rest_off, len - rest_off) < 0)
		return CODEC_ERR_LIMIT;
	return CODEC_OK;
}

enum codec_err codec_tags_rewrite_endpoints_fixed(const struct codec_iov *iov, int niov, size_t len,
						  codec_endpoint_fn fn, void *ctx, uint8_t *out,
						  bool *changed)
{
	*changed = false;
	struct codec_buf ins;
	codec_buf_init(&ins, REWRITE_LIMIT);
	struct rewriter w = {iov, niov, fn, ctx, &ins, SIZE_MAX, 0, NULL, 0};
	struct codec_splice s = { 0 };
	enum codec_err e = rewrite_tagged(&w, 0, &s);
	free(w.host);
	if (e != CODEC_OK || !s.changed) {
		codec_buf_free(&ins);
		codec_buf_free(&s.ins);
		return e;
	}
	/* the whole section must be `len` bytes; tag 0 comes first (rewrite_tagged) */
	struct codec_reader r;
	codec_reader_init(&r, iov, niov);
	r.flexible = true;
	uint32_t count = codec_read_uvarint(&r);
	size_t rest_off = s.off + s.del;
	if (r.err || s.off != r.off || rest_off > len) {
		codec_buf_free(&s.ins);
		return r.err ? r.err : CODEC_ERR_BAD_MSG;
	}
	/* tags after NodeEndpoints: increasing, all below the fillers' */
	e = count ? tags_check(&r, rest_off, count - 1, 0, len) : CODEC_ERR_BAD_MSG;
	if (e != CODEC_OK) {
		codec_buf_free(&s.ins);
		return e;
	}
	int rc = assemble(out, len, count, s.ins.data, s.ins.len, iov, niov, rest_off, len - rest_off);
	codec_buf_free(&s.ins);
	if (rc < 0) {
		/* tag 0, size 1, an empty compact array: no address at all */
		static const uint8_t empty[] = { 0, 1, 1 };
		rc = assemble(out, len, count, empty, sizeof(empty), iov, niov, rest_off, len - rest_off);
	}
	if (rc < 0)
		return CODEC_ERR_LIMIT;
	*changed = true;
	return CODEC_OK;
}
