/* Golden-frame loading and the generic round-trip / truncation checks. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"

size_t golden_read_hex(const char *path, uint8_t **out)
{
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "cannot open %s", path);
	size_t cap = 4096, n = 0;
	uint8_t *b = malloc(cap);
	int hi = -1, c;
	while ((c = fgetc(f)) != EOF) {
		int d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			continue;
		if (hi < 0) {
			hi = d;
			continue;
		}
		if (n == cap)
			b = realloc(b, cap *= 2);
		b[n++] = (uint8_t)(hi << 4 | d);
		hi = -1;
	}
	fclose(f);
	*out = b;
	return n;
}

void golden_load_v(struct golden *g, const char *prefix, bool request, int16_t api_key, int16_t version)
{
	char name[64];
	snprintf(name, sizeof(name), "%s_v%d", prefix, version);
	golden_load(g, name, request, api_key, version);
}

void golden_load(struct golden *g, const char *name, bool request, int16_t api_key, int16_t version)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s.hex", GOLDEN_DIR, name);
	memset(g, 0, sizeof(*g));
	g->len = golden_read_hex(path, &g->data);
	g->api_key = api_key;
	g->version = version;
	struct codec_iov all = {g->data, g->len};
	size_t body_len;
	cr_assert(eq(i64, (int64_t)(codec_frame_peek(&all, 1, 1 << 30, &body_len)), (int64_t)(CODEC_OK)));
	cr_assert(eq(i64, (int64_t)(body_len + 4), (int64_t)(g->len)), "%s: size prefix %zu, file %zu", name, body_len, g->len);
	struct codec_iov frame = {g->data + 4, g->len - 4};
	size_t hlen;
	if (request) {
		struct codec_request_header h;
		cr_assert(eq(i64, (int64_t)(codec_request_header_decode(&frame, 1, &h)), (int64_t)(CODEC_OK)), "%s header", name);
		cr_assert(eq(i64, (int64_t)(h.api_key), (int64_t)(api_key)));
		cr_assert(eq(i64, (int64_t)(h.api_version), (int64_t)(version)));
		if (!strchr(name, '/')) /* generated frames; captured ones keep theirs */
			cr_assert(eq(i64, (int64_t)(h.correlation_id), (int64_t)(42 + version)));
		hlen = h.len;
	} else {
		int32_t corr;
		cr_assert(eq(i64, (int64_t)(codec_response_header_decode(&frame, 1, api_key, version, &corr, &hlen)), (int64_t)(CODEC_OK)), "%s header", name);
		if (!strchr(name, '/'))
			cr_assert(eq(i64, (int64_t)(corr), (int64_t)(42 + version)));
	}
	g->body_off = 4 + hlen;
}

void golden_free(struct golden *g)
{
	free(g->data);
	memset(g, 0, sizeof(*g));
}

struct codec_iov golden_body(const struct golden *g)
{
	struct codec_iov v = {g->data + g->body_off, g->len - g->body_off};
	return v;
}

/* Decode `iov`, re-encode, compare with `want`. */
static void roundtrip(const struct msg_ops *ops, int16_t v, const struct codec_iov *iov, int niov,
		      const uint8_t *want, size_t want_len, const char *what)
{
	void *m = calloc(1, ops->size);
	enum codec_err e = ops->decode(iov, niov, v, m);
	cr_assert(eq(i64, (int64_t)(e), (int64_t)(CODEC_OK)), "%s_v%d (%s): decode: %s", ops->name, v, what, codec_err_str(e));
	if (ops->encode) {
		struct codec_buf out;
		codec_buf_init(&out, 1 << 26);
		e = ops->encode(m, v, iov, niov, &out);
		cr_assert(eq(i64, (int64_t)(e), (int64_t)(CODEC_OK)), "%s_v%d: encode: %s", ops->name, v, codec_err_str(e));
		cr_assert(eq(i64, (int64_t)(out.len), (int64_t)(want_len)), "%s_v%d: encoded %zu bytes, want %zu", ops->name, v,
			     out.len, want_len);
		cr_assert(want_len == 0 || memcmp(out.data, want, want_len) == 0, "%s_v%d: bytes differ", ops->name,
			  v);
		codec_buf_free(&out);
	}
	ops->free(m);
	free(m);
}

void check_golden(const struct msg_ops *ops, int16_t v)
{
	check_golden_in(ops, NULL, v);
}

void check_golden_in(const struct msg_ops *ops, const char *dir, int16_t v)
{
	char name[160];
	snprintf(name, sizeof(name), "%s%s%s_v%d", dir ? dir : "", dir ? "/" : "", ops->name, v);
	struct golden g;
	golden_load(&g, name, ops->request, ops->api_key, v);
	struct codec_iov body = golden_body(&g);

	/* Three segments with uneven cuts. */
	size_t a = body.len / 3, b = body.len / 3 + body.len / 5;
	struct codec_iov three[3] = {
		{body.base, a}, {body.base + a, b - a}, {body.base + b, body.len - b}};
	roundtrip(ops, v, three, 3, body.base, body.len, "3 segments");

	/* One byte per segment. */
	struct codec_iov *bytes = calloc(body.len ? body.len : 1, sizeof(*bytes));
	for (size_t i = 0; i < body.len; i++)
		bytes[i] = (struct codec_iov){body.base + i, 1};
	roundtrip(ops, v, bytes, (int)body.len, body.base, body.len, "1-byte segments");
	free(bytes);

	/* Every truncated prefix fails cleanly; a copy so ASan sees reads past it. */
	for (size_t n = 0; n < body.len; n++) {
		uint8_t *p = malloc(n ? n : 1);
		memcpy(p, body.base, n);
		struct codec_iov t = {p, n};
		void *m = calloc(1, ops->size);
		enum codec_err e = ops->decode(&t, 1, v, m);
		cr_assert(ne(i64, (int64_t)(e), (int64_t)(CODEC_OK)), "%s: prefix of %zu/%zu bytes decoded", name, n, body.len);
		cr_assert(e == CODEC_ERR_UNDERFLOW || e == CODEC_ERR_BAD_MSG, "%s: prefix %zu: %s",
			  name, n, codec_err_str(e));
		ops->free(m);
		free(m);
		free(p);
	}
	golden_free(&g);
}
