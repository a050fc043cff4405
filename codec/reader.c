/* Bounded reader over segments: integers, varints, strings, arrays, tags. */
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"

/* Where the last decode on this thread failed (codec_err_offset). */
static _Thread_local size_t last_err_off;

size_t codec_err_offset(void)
{
	return last_err_off;
}

void codec_reader_init(struct codec_reader *r, const struct codec_iov *iov, int niov)
{
	memset(r, 0, sizeof(*r));
	last_err_off = 0;
	r->iov = iov;
	r->niov = niov;
	for (int i = 0; i < niov; i++)
		r->len += iov[i].len;
}

enum codec_err codec_reader_fail(struct codec_reader *r, enum codec_err e)
{
	if (r->err == CODEC_OK && e != CODEC_OK) {
		r->err = e;
		r->err_off = last_err_off = r->off;
	}
	return r->err;
}

size_t codec_reader_remaining(const struct codec_reader *r)
{
	return r->len - r->off;
}

void codec_reader_seek(struct codec_reader *r, size_t off)
{
	if (r->err)
		return;
	if (off > r->len) {
		codec_reader_fail(r, CODEC_ERR_UNDERFLOW);
		return;
	}
	r->seg = 0;
	r->seg_off = off;
	r->off = off;
	while (r->seg < r->niov && r->seg_off >= r->iov[r->seg].len && r->seg_off > 0) {
		r->seg_off -= r->iov[r->seg].len;
		r->seg++;
	}
}

/* Copy (dst != NULL) or skip n bytes across segments; all or nothing. */
static bool reader_take(struct codec_reader *r, void *dst, size_t n)
{
	if (r->err)
		return false;
	if (n > r->len - r->off) {
		codec_reader_fail(r, CODEC_ERR_UNDERFLOW);
		return false;
	}
	uint8_t *d = dst;
	r->off += n;
	while (n > 0) {
		const struct codec_iov *v = &r->iov[r->seg];
		size_t avail = v->len - r->seg_off;
		size_t k = n < avail ? n : avail;
		if (d && k) {
			memcpy(d, v->base + r->seg_off, k);
			d += k;
		}
		n -= k;
		r->seg_off += k;
		if (r->seg_off == v->len && r->seg + 1 < r->niov) {
			r->seg++;
			r->seg_off = 0;
		}
	}
	return true;
}

void codec_read_raw(struct codec_reader *r, void *dst, size_t n)
{
	if (!reader_take(r, dst, n) && dst)
		memset(dst, 0, n);
}

void codec_read_skip(struct codec_reader *r, size_t n)
{
	reader_take(r, NULL, n);
}

static uint64_t read_be(struct codec_reader *r, size_t n)
{
	uint8_t b[8];
	const uint8_t *p = b;
	uint64_t v = 0;
	/* Fast path: within bounds, and inside the current segment (not its last byte). */
	if (!r->err && n <= r->len - r->off && r->seg < r->niov &&
	    r->iov[r->seg].len - r->seg_off > n) {
		p = r->iov[r->seg].base + r->seg_off;
		r->seg_off += n;
		r->off += n;
	} else if (!reader_take(r, b, n)) {
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

int8_t codec_read_i8(struct codec_reader *r)
{
	return (int8_t)read_be(r, 1);
}

int16_t codec_read_i16(struct codec_reader *r)
{
	return (int16_t)read_be(r, 2);
}

int32_t codec_read_i32(struct codec_reader *r)
{
	return (int32_t)read_be(r, 4);
}

int64_t codec_read_i64(struct codec_reader *r)
{
	return (int64_t)read_be(r, 8);
}

bool codec_read_bool(struct codec_reader *r)
{
	int8_t v = codec_read_i8(r);
	if (v != 0 && v != 1)
		codec_reader_fail(r, CODEC_ERR_BAD_MSG);
	return v == 1;
}

/* Unsigned LEB128 of at most `max_bytes` bytes, value below 2^bits. */
static uint64_t read_leb(struct codec_reader *r, int max_bytes, int bits)
{
	uint64_t v = 0;
	for (int i = 0; i < max_bytes; i++) {
		uint8_t b;
		if (!reader_take(r, &b, 1))
			return 0;
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			if (bits < 64 && (v >> bits) != 0)
				break;
			if (bits == 64 && i == 9 && b > 1)
				break;
			return v;
		}
	}
	codec_reader_fail(r, CODEC_ERR_BAD_MSG);
	return 0;
}

uint32_t codec_read_uvarint(struct codec_reader *r)
{
	return (uint32_t)read_leb(r, 5, 32);
}

int32_t codec_read_varint(struct codec_reader *r)
{
	uint32_t u = codec_read_uvarint(r);
	return (int32_t)((u >> 1) ^ (~(u & 1) + 1));
}

int64_t codec_read_varlong(struct codec_reader *r)
{
	uint64_t u = read_leb(r, 10, 64);
	return (int64_t)((u >> 1) ^ (~(u & 1) + 1));
}

void codec_read_uuid(struct codec_reader *r, uint8_t out[16])
{
	codec_read_raw(r, out, 16);
}

int32_t codec_read_length(struct codec_reader *r, bool bytes, bool nullable)
{
	int64_t len;
	if (r->flexible)
		len = (int64_t)codec_read_uvarint(r) - 1;
	else
		len = bytes ? codec_read_i32(r) : codec_read_i16(r);
	if (r->err)
		return 0;
	/* Strings are at most INT16_MAX bytes in the compact encoding too (as in Kafka). */
	if (len < -1 || (len == -1 && !nullable) || len > (bytes ? INT32_MAX : INT16_MAX)) {
		codec_reader_fail(r, CODEC_ERR_BAD_MSG);
		return 0;
	}
	return (int32_t)len;
}

struct codec_slice codec_read_slice(struct codec_reader *r, bool bytes, bool nullable)
{
	struct codec_slice s = {0, 0};
	int32_t len = codec_read_length(r, bytes, nullable);
	if (r->err)
		return s;
	s.off = r->off;
	s.len = len;
	if (len > 0)
		codec_read_skip(r, (size_t)len);
	if (r->err)
		s.len = 0;
	return s;
}

char *codec_read_str(struct codec_reader *r, bool nullable)
{
	struct codec_slice s = codec_read_slice(r, false, nullable);
	if (r->err || s.len < 0)
		return NULL;
	char *p = malloc((size_t)s.len + 1);
	if (!p) {
		codec_reader_fail(r, CODEC_ERR_NOMEM);
		return NULL;
	}
	size_t end = r->off;
	codec_reader_seek(r, s.off);
	codec_read_raw(r, p, (size_t)s.len);
	codec_reader_seek(r, end);
	p[s.len] = '\0';
	return p;
}

int32_t codec_read_array_len(struct codec_reader *r, bool nullable, size_t min_elem)
{
	int64_t n;
	if (r->flexible)
		n = (int64_t)codec_read_uvarint(r) - 1;
	else
		n = codec_read_i32(r);
	if (r->err)
		return 0;
	if (n < -1 || (n == -1 && !nullable)) {
		codec_reader_fail(r, CODEC_ERR_BAD_MSG);
		return 0;
	}
	if (n > CODEC_ARRAY_MAX) {
		codec_reader_fail(r, CODEC_ERR_LIMIT);
		return 0;
	}
	if (n > 0 && min_elem > 0 && (size_t)n > codec_reader_remaining(r) / min_elem) {
		codec_reader_fail(r, CODEC_ERR_UNDERFLOW);
		return 0;
	}
	return (int32_t)n;
}

void *codec_read_array(struct codec_reader *r, size_t elem_size, size_t min_wire, size_t *n,
		       codec_elem_read_fn fn, void *ctx)
{
	*n = 0;
	int32_t count = codec_read_array_len(r, false, min_wire);
	if (r->err || count <= 0)
		return NULL;
	uint8_t *v = calloc((size_t)count, elem_size);
	if (!v) {
		codec_reader_fail(r, CODEC_ERR_NOMEM);
		return NULL;
	}
	*n = (size_t)count;
	for (int32_t i = 0; i < count && !r->err; i++)
		fn(r, v + (size_t)i * elem_size, ctx);
	return v;
}

static void read_int32_elem(struct codec_reader *r, void *elem, void *ctx)
{
	*(int32_t *)elem = codec_read_i32(r);
}

void codec_read_int32s(struct codec_reader *r, struct codec_int32s *out)
{
	out->v = codec_read_array(r, sizeof(int32_t), 4, &out->n, read_int32_elem, NULL);
}

/* Append one unknown field (tag, size, data) verbatim to `keep`. */
static void tags_keep(struct codec_reader *r, struct codec_tags *keep, size_t start, size_t end)
{
	uint8_t *p = realloc(keep->raw, keep->len + (end - start));
	if (!p) {
		codec_reader_fail(r, CODEC_ERR_NOMEM);
		return;
	}
	keep->raw = p;
	codec_reader_seek(r, start);
	codec_read_raw(r, keep->raw + keep->len, end - start);
	keep->len += end - start;
	keep->count++;
}

void codec_read_tags(struct codec_reader *r, struct codec_tags *keep, codec_tag_fn fn, void *ctx)
{
	if (!r->flexible)
		return;
	uint32_t count = codec_read_uvarint(r);
	int64_t prev = -1;
	/* Each field is at least 2 bytes (tag, size). */
	if (!r->err && count > codec_reader_remaining(r) / 2)
		codec_reader_fail(r, CODEC_ERR_UNDERFLOW);
	for (uint32_t i = 0; i < count && !r->err; i++) {
		size_t start = r->off;
		uint32_t tag = codec_read_uvarint(r);
		uint32_t size = codec_read_uvarint(r);
		if (r->err)
			return;
		if ((int64_t)tag <= prev) {
			codec_reader_fail(r, CODEC_ERR_BAD_MSG);
			return;
		}
		prev = tag;
		if (size > codec_reader_remaining(r)) {
			codec_reader_fail(r, CODEC_ERR_UNDERFLOW);
			return;
		}
		if (fn) {
			struct codec_reader sub;
			codec_reader_sub(r, size, &sub);
			bool known = fn(ctx, &sub, tag, size);
			if (known) {
				codec_reader_join(r, &sub);
				continue;
			}
		}
		if (keep)
			tags_keep(r, keep, start, r->off + size);
		else
			codec_read_skip(r, size);
	}
}

bool codec_reader_sub(struct codec_reader *r, size_t n, struct codec_reader *sub)
{
	*sub = *r;
	if (r->err)
		return false;
	if (n > codec_reader_remaining(r)) {
		codec_reader_fail(r, CODEC_ERR_UNDERFLOW);
		*sub = *r;
		return false;
	}
	sub->len = r->off + n;
	return true;
}

void codec_reader_join(struct codec_reader *r, const struct codec_reader *sub)
{
	if (r->err)
		return;
	if (sub->err) {
		r->err = sub->err == CODEC_ERR_UNDERFLOW ? CODEC_ERR_BAD_MSG : sub->err;
		r->err_off = last_err_off = sub->err_off;
		return;
	}
	if (sub->off != sub->len) {
		codec_reader_seek(r, sub->off);
		codec_reader_fail(r, CODEC_ERR_BAD_MSG);
		return;
	}
	size_t len = r->len;
	*r = *sub;
	r->len = len;
}

void codec_tags_free(struct codec_tags *t)
{
	free(t->raw);
	memset(t, 0, sizeof(*t));
}

enum codec_err codec_reader_finish(struct codec_reader *r)
{
	if (!r->err && r->off != r->len)
		codec_reader_fail(r, CODEC_ERR_BAD_MSG);
	return r->err;
}

void codec_array_free(void *v, size_t n, size_t elem_size, void (*fn)(void *elem))
{
	if (fn)
		for (size_t i = 0; i < n; i++)
			fn((uint8_t *)v + i * elem_size);
	free(v);
}
