/* Bounded growable output buffer and the encoders of the wire primitives. */
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"

void codec_buf_init(struct codec_buf *b, size_t limit)
{
	memset(b, 0, sizeof(*b));
	b->limit = limit;
}

void codec_buf_free(struct codec_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

/* Room for n more bytes, or the sticky error. */
static bool buf_reserve(struct codec_buf *b, size_t n)
{
	if (b->err)
		return false;
	if (n > b->limit || b->len > b->limit - n) {
		b->err = CODEC_ERR_LIMIT;
		return false;
	}
	if (b->len + n <= b->cap)
		return true;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + n)
		cap = cap > SIZE_MAX / 2 ? b->len + n : cap * 2;
	if (cap > b->limit)
		cap = b->limit;
	uint8_t *p = realloc(b->data, cap);
	if (!p) {
		b->err = CODEC_ERR_NOMEM;
		return false;
	}
	b->data = p;
	b->cap = cap;
	return true;
}

void codec_write_raw(struct codec_buf *b, const void *p, size_t n)
{
	if (n == 0 || !buf_reserve(b, n))
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

static void write_be(struct codec_buf *b, uint64_t v, size_t n)
{
	if (!buf_reserve(b, n))
		return;
	for (size_t i = 0; i < n; i++)
		b->data[b->len + i] = (uint8_t)(v >> (8 * (n - 1 - i)));
	b->len += n;
}

void codec_write_i8(struct codec_buf *b, int8_t v)
{
	write_be(b, (uint8_t)v, 1);
}

void codec_write_i16(struct codec_buf *b, int16_t v)
{
	write_be(b, (uint16_t)v, 2);
}

void codec_write_i32(struct codec_buf *b, int32_t v)
{
	write_be(b, (uint32_t)v, 4);
}

void codec_write_i64(struct codec_buf *b, int64_t v)
{
	write_be(b, (uint64_t)v, 8);
}

void codec_write_bool(struct codec_buf *b, bool v)
{
	codec_write_i8(b, v ? 1 : 0);
}

static void write_leb(struct codec_buf *b, uint64_t v)
{
	uint8_t d[10];
	size_t n = 0;
	while (v >= 0x80) {
		d[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	d[n++] = (uint8_t)v;
	codec_write_raw(b, d, n);
}

size_t codec_put_uvarint(uint8_t *p, uint32_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

void codec_put_be64(uint8_t *p, int64_t v)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v = (int64_t)((uint64_t)v >> 8);
	}
}

void codec_write_uvarint(struct codec_buf *b, uint32_t v)
{
	write_leb(b, v);
}

void codec_write_varint(struct codec_buf *b, int32_t v)
{
	write_leb(b, ((uint32_t)v << 1) ^ (uint32_t)(v >> 31));
}

void codec_write_varlong(struct codec_buf *b, int64_t v)
{
	write_leb(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

void codec_write_uuid(struct codec_buf *b, const uint8_t v[16])
{
	codec_write_raw(b, v, 16);
}

/* Length prefix of a string (int16) or bytes (int32) field, compact when flexible. */
static void write_len(struct codec_buf *b, int32_t len, bool bytes)
{
	if (b->flexible)
		codec_write_uvarint(b, (uint32_t)len + 1);
	else if (bytes)
		codec_write_i32(b, len);
	else
		codec_write_i16(b, (int16_t)len);
}

void codec_write_strn(struct codec_buf *b, const char *s, int32_t len)
{
	if (len > INT16_MAX) {
		if (!b->err)
			b->err = CODEC_ERR_LIMIT;
		return;
	}
	write_len(b, len < 0 ? -1 : len, false);
	if (len > 0)
		codec_write_raw(b, s, (size_t)len);
}

void codec_write_str(struct codec_buf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	codec_write_strn(b, s, !s ? -1 : n > INT16_MAX ? INT16_MAX + 1 : (int32_t)n);
}

void codec_write_array_len(struct codec_buf *b, int32_t n)
{
	write_len(b, n, true);
}

void codec_write_array(struct codec_buf *b, const void *v, size_t n, size_t elem_size,
		       codec_elem_write_fn fn, void *ctx)
{
	if (n > CODEC_ARRAY_MAX) {
		if (!b->err)
			b->err = CODEC_ERR_LIMIT;
		return;
	}
	codec_write_array_len(b, (int32_t)n);
	for (size_t i = 0; i < n && !b->err; i++)
		fn(b, (const uint8_t *)v + i * elem_size, ctx);
}

static void write_int32_elem(struct codec_buf *b, const void *elem, void *ctx)
{
	codec_write_i32(b, *(const int32_t *)elem);
}

void codec_write_int32s(struct codec_buf *b, const struct codec_int32s *a)
{
	codec_write_array(b, a->v, a->n, sizeof(int32_t), write_int32_elem, NULL);
}

void codec_write_iov(struct codec_buf *b, const struct codec_iov *iov, int niov, size_t off, size_t len)
{
	if (len == 0)
		return;
	struct codec_reader r;
	codec_reader_init(&r, iov, niov);
	codec_reader_seek(&r, off);
	if (r.err || len > codec_reader_remaining(&r) || !buf_reserve(b, len)) {
		if (!b->err)
			b->err = CODEC_ERR_UNDERFLOW;
		return;
	}
	codec_read_raw(&r, b->data + b->len, len);
	b->len += len;
}

void codec_write_slice(struct codec_buf *b, const struct codec_iov *iov, int niov,
		       struct codec_slice s, bool bytes)
{
	write_len(b, s.len, bytes);
	if (s.len > 0)
		codec_write_iov(b, iov, niov, s.off, (size_t)s.len);
}

/* Tag number of the preserved field at raw[*pos]; advances *pos past it. */
static uint32_t raw_tag_next(const struct codec_tags *t, size_t *pos, size_t *start)
{
	struct codec_iov v = {t->raw, t->len};
	struct codec_reader r;
	codec_reader_init(&r, &v, 1);
	codec_reader_seek(&r, *pos);
	*start = *pos;
	uint32_t tag = codec_read_uvarint(&r);
	uint32_t size = codec_read_uvarint(&r);
	codec_read_skip(&r, size);
	*pos = r.off;
	return tag;
}

void codec_write_tags(struct codec_buf *b, const struct codec_tag_out *known, size_t nknown,
		      const struct codec_tags *unknown)
{
	if (!b->flexible)
		return;
	uint32_t nunknown = unknown ? unknown->count : 0;
	codec_write_uvarint(b, (uint32_t)nknown + nunknown);
	size_t pos = 0, start = 0, k = 0;
	for (uint32_t u = 0; u <= nunknown; u++) {
		/* Known fields that sort before the next unknown one (or all that remain). */
		uint32_t tag = u < nunknown ? raw_tag_next(unknown, &pos, &start) : UINT32_MAX;
		for (; k < nknown && (known[k].tag < tag || u == nunknown); k++) {
			codec_write_uvarint(b, known[k].tag);
			codec_write_uvarint(b, (uint32_t)known[k].len);
			codec_write_raw(b, known[k].data, known[k].len);
		}
		if (u < nunknown)
			codec_write_raw(b, unknown->raw + start, pos - start);
	}
}
