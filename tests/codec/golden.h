/* Test helpers for codec/: golden frames (hex files) and generic round-trip checks. */
#ifndef SYNCGATE_TESTS_CODEC_GOLDEN_H
#define SYNCGATE_TESTS_CODEC_GOLDEN_H

#include "tests/codec/oracle/oracle.h"

/** A frame loaded from tests/codec/golden/<name>.hex: size prefix, header, body. */
struct golden {
	uint8_t *data;
	size_t len;
	size_t body_off;        /* first byte after the request/response header */
	int16_t api_key;
	int16_t version;
};

/** Load <name>.hex and locate the body (asserts on any failure). */
void golden_load(struct golden *g, const char *name, bool request, int16_t api_key, int16_t version);
/** golden_load() of <prefix>_v<version>.hex (e.g. "fetch_resp", 12). */
void golden_load_v(struct golden *g, const char *prefix, bool request, int16_t api_key, int16_t version);
void golden_free(struct golden *g);
/** The big-endian int64 at p. */
static inline int64_t golden_be64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return (int64_t)v;
}
/** Load a hex file into a new buffer; returns its length. */
size_t golden_read_hex(const char *path, uint8_t **out);

/** A message's decode/encode/free behind one shape, for the generic checks. */
struct msg_ops {
	const char *name;       /* golden file prefix: "produce_resp" */
	int16_t api_key;
	bool request;
	size_t size;            /* sizeof the decoded struct */
	enum codec_err (*decode)(const struct codec_iov *iov, int niov, int16_t v, void *out);
	/* NULL when the message has no encoder (scans). */
	enum codec_err (*encode)(const void *m, int16_t v, const struct codec_iov *src, int nsrc,
				 struct codec_buf *out);
	void (*free)(void *m);
};

/** Define `ident`, a struct msg_ops over codec functions `fn`_decode/_encode/_free. */
#define CODEC_TEST_OPS(ident, golden_name, key, is_req, type, fn)                               \
	static enum codec_err ident##_dec(const struct codec_iov *iov, int niov, int16_t v, void *m) \
	{                                                                                        \
		return fn##_decode(iov, niov, v, m);                                              \
	}                                                                                        \
	static enum codec_err ident##_enc(const void *m, int16_t v, const struct codec_iov *src,  \
					  int nsrc, struct codec_buf *o)                          \
	{                                                                                        \
		return fn##_encode(m, v, o);                                                      \
	}                                                                                        \
	static void ident##_free(void *m)                                                        \
	{                                                                                        \
		fn##_free(m);                                                                     \
	}                                                                                        \
	static const struct msg_ops ident = {golden_name, key, is_req, sizeof(type),             \
					     ident##_dec, ident##_enc, ident##_free}

/*
 * For golden <name>_v<v>: decode the body split in three segments and in
 * 1-byte segments, re-encode and compare with the original bytes; every
 * truncated prefix of the body fails cleanly (never CODEC_OK).
 */
void check_golden(const struct msg_ops *ops, int16_t v);
/** The same for a frame captured from real clients and brokers: golden/<dir>/<name>_v<v>.hex. */
void check_golden_in(const struct msg_ops *ops, const char *dir, int16_t v);

/** Body of a golden frame as one segment. */
struct codec_iov golden_body(const struct golden *g);

#endif
