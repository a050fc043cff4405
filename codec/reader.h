/*
 * codec/reader.h — errors, segments (struct codec_iov), the reader and the writer every message uses. Part of codec/codec.h (include that); see its
 * opening comment for the conventions (segments, sticky errors, ownership).
 */
#ifndef SYNCGATE_CODEC_READER_H
#define SYNCGATE_CODEC_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CODEC_WUR __attribute__((warn_unused_result))

/* ------------------------------------------------------------------------ */
/* Errors, segments, reader, writer                                         */
/* ------------------------------------------------------------------------ */

/** Decoder/encoder outcome. 0 is success. */
enum codec_err {
	CODEC_OK = 0,
	CODEC_ERR_UNDERFLOW,   /* need more bytes (truncated input) */
	CODEC_ERR_BAD_MSG,     /* malformed: negative length, bad varint, tags out of order, trailing bytes */
	CODEC_ERR_LIMIT,       /* a count or size above its limit, or the output buffer's limit */
	CODEC_ERR_UNSUPPORTED, /* api key or version this codec does not decode */
	CODEC_ERR_NOMEM,       /* allocation failed */
	CODEC_ERR__COUNT
};
/** Static description of `e`. */
const char *codec_err_str(enum codec_err e);
/**
 * Where the last decode on this thread failed: the byte offset (from the
 * start of the iov it was given) of its reader's first error, like errno —
 * read it right after a decoder returned an error (not meaningful for
 * CODEC_ERR_UNSUPPORTED or CODEC_ERR_NOMEM). The proxy logs it as offset=.
 * Any thread.
 */
size_t codec_err_offset(void);

/** One contiguous piece of a frame. Borrowed; must outlive the decode call. */
struct codec_iov {
	const uint8_t *base;
	size_t len;
};

/**
 * Bounded reader over segments. Reads return everything asked for or set the
 * sticky error; after an error every read returns zero values.
 */
struct codec_reader {
	const struct codec_iov *iov;
	int niov;
	int seg;          /* current segment */
	size_t seg_off;   /* offset inside the current segment */
	size_t off;       /* absolute offset from the start */
	size_t len;       /* total bytes */
	enum codec_err err;
	size_t err_off;   /* offset of the first error */
	bool flexible;    /* compact strings/arrays and tagged fields (set per message) */
};

/** Start reading `niov` segments (borrowed) at offset 0, classic encoding. */
void codec_reader_init(struct codec_reader *r, const struct codec_iov *iov, int niov);

/** Growable output buffer with a hard limit (curl dynbuf style). */
struct codec_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
	size_t limit;   /* growing past it sets err = CODEC_ERR_LIMIT */
	enum codec_err err;
	bool flexible;  /* encoders set it: compact strings/arrays, tagged fields */
};
/** Empty buffer that may grow to `limit` bytes; codec_buf_free() releases it. */
void codec_buf_init(struct codec_buf *b, size_t limit);
void codec_buf_free(struct codec_buf *b);

/** A byte range inside a frame body: a string or bytes field, not copied. */
struct codec_slice {
	size_t off;   /* absolute offset in the body */
	int32_t len;  /* -1 for null */
};

/** A list of int32 (ReplicaNodes, IsrNodes, OfflineReplicas…). Owned. */
struct codec_int32s {
	int32_t *v;
	size_t n;
};

/** Tagged fields this codec does not know, kept verbatim for re-encoding. */
struct codec_tags {
	uint8_t *raw;   /* the encoded fields (tag, size, data)… without the count */
	size_t len;
	uint32_t count;
};

/*
 * Reader primitives. Each returns the value read, or a zero value once the
 * reader's sticky error is set (check `r->err` after a run of reads).
 * Strings, bytes and arrays use the compact (flexible) encoding when
 * `r->flexible` is set, the classic one otherwise.
 */

/** Most elements any array may declare (CODEC_ERR_LIMIT above it). */
#define CODEC_ARRAY_MAX (1 << 24)

/** Set the sticky error `e` at the current offset unless one is set; returns r->err. */
enum codec_err codec_reader_fail(struct codec_reader *r, enum codec_err e);
/** Bytes left to read. */
size_t codec_reader_remaining(const struct codec_reader *r);
/** Position the reader at absolute body offset `off` (backwards too); UNDERFLOW past the end. */
void codec_reader_seek(struct codec_reader *r, size_t off);

/**
 * A reader bounded to the next `n` bytes of `r` (the parent does not move);
 * CODEC_ERR_UNDERFLOW on `r` when fewer remain. Returns false on error.
 */
bool codec_reader_sub(struct codec_reader *r, size_t n, struct codec_reader *sub);
/**
 * Continue `r` after `sub`, which must have consumed all its bytes: running
 * out inside it, or leaving bytes unread, is CODEC_ERR_BAD_MSG on `r` (its
 * bytes were all there); other errors carry over.
 */
void codec_reader_join(struct codec_reader *r, const struct codec_reader *sub);

/** Big-endian fixed-width integers. */
int8_t codec_read_i8(struct codec_reader *r);
int16_t codec_read_i16(struct codec_reader *r);
int32_t codec_read_i32(struct codec_reader *r);
int64_t codec_read_i64(struct codec_reader *r);
/** Kafka bool: 0 or 1; anything else is CODEC_ERR_BAD_MSG. */
bool codec_read_bool(struct codec_reader *r);
/** Unsigned varint (≤ 5 bytes; longer or above 32 bits: CODEC_ERR_BAD_MSG). */
uint32_t codec_read_uvarint(struct codec_reader *r);
/** Zigzag varint (int32) and varlong (int64, ≤ 10 bytes). */
int32_t codec_read_varint(struct codec_reader *r);
int64_t codec_read_varlong(struct codec_reader *r);
/** 16 raw bytes (Uuid). */
void codec_read_uuid(struct codec_reader *r, uint8_t out[16]);
/** Copy `n` bytes out (all or none). */
void codec_read_raw(struct codec_reader *r, void *dst, size_t n);
/** Skip `n` bytes without copying (UNDERFLOW if fewer remain). */
void codec_read_skip(struct codec_reader *r, size_t n);
/**
 * A string (int16 / compact length) or, with `bytes`, a bytes field (int32 /
 * compact length) as a slice of the body, skipped and not copied. A null
 * value is CODEC_ERR_BAD_MSG unless `nullable`; a length below -1 always is,
 * and so is a string longer than INT16_MAX (compact too, as in Kafka).
 */
struct codec_slice codec_read_slice(struct codec_reader *r, bool bytes, bool nullable);
/**
 * Only the length prefix of such a field (the value is not skipped): -1 for
 * null, else the length; the same errors as codec_read_slice (then 0).
 * For callers that stream the value themselves (codec/stream.c).
 */
int32_t codec_read_length(struct codec_reader *r, bool bytes, bool nullable);
/** A string copied into a new NUL-terminated allocation (NULL for null or error). */
char *codec_read_str(struct codec_reader *r, bool nullable);
/**
 * An array count (int32 / compact), -1 for a null array (BAD_MSG unless
 * `nullable`). Counts whose elements cannot fit in the remaining bytes at
 * `min_elem` bytes each give CODEC_ERR_UNDERFLOW, counts above
 * CODEC_ARRAY_MAX CODEC_ERR_LIMIT — before the caller allocates anything.
 */
int32_t codec_read_array_len(struct codec_reader *r, bool nullable, size_t min_elem);

/**
 * Known-tag handler: read the field's `size` bytes from `r` and return true,
 * or return false to keep the field verbatim as unknown.
 */
typedef bool (*codec_tag_fn)(void *ctx, struct codec_reader *r, uint32_t tag, uint32_t size);
/**
 * Read a tagged-field section; does nothing unless `r->flexible`. Tags must be strictly
 * increasing and a handler must consume exactly the field's size
 * (CODEC_ERR_BAD_MSG otherwise). Unknown fields are appended to `keep`
 * (skipped when `keep` is NULL). `fn` may be NULL.
 */
void codec_read_tags(struct codec_reader *r, struct codec_tags *keep, codec_tag_fn fn, void *ctx);
/** Release preserved tagged fields. */
void codec_tags_free(struct codec_tags *t);

/** Reads one array element into `elem` (zeroed beforehand). */
typedef void (*codec_elem_read_fn)(struct codec_reader *r, void *elem, void *ctx);
/**
 * Read a non-nullable array of `elem_size`-byte elements, each at least
 * `min_wire` bytes on the wire: the count is checked (see
 * codec_read_array_len), then a zeroed array is allocated and filled by `fn`.
 * Returns the array (NULL when empty) and sets *n to its length even when an
 * element fails, so the caller's free function releases what was read.
 */
void *codec_read_array(struct codec_reader *r, size_t elem_size, size_t min_wire, size_t *n,
		       codec_elem_read_fn fn, void *ctx);
/** Read an int32 array (non-nullable). */
void codec_read_int32s(struct codec_reader *r, struct codec_int32s *out);
/** End of a message: bytes left over are CODEC_ERR_BAD_MSG. Returns r->err. */
enum codec_err codec_reader_finish(struct codec_reader *r);
/** Free an array read by codec_read_array, calling `fn` (if any) on each element. */
void codec_array_free(void *v, size_t n, size_t elem_size, void (*fn)(void *elem));

/* Writer primitives: append to `b`; after an error they do nothing. */
void codec_write_raw(struct codec_buf *b, const void *p, size_t n);
/** Big-endian integers, Kafka bool, (zigzag) varints, Uuid. */
void codec_write_i8(struct codec_buf *b, int8_t v);
void codec_write_i16(struct codec_buf *b, int16_t v);
void codec_write_i32(struct codec_buf *b, int32_t v);
void codec_write_i64(struct codec_buf *b, int64_t v);
void codec_write_bool(struct codec_buf *b, bool v);
void codec_write_uvarint(struct codec_buf *b, uint32_t v);
/** Unsigned varint of `v` at `p` (room for 5 bytes); returns its length. For
 * edits in place, outside a codec_buf. */
size_t codec_put_uvarint(uint8_t *p, uint32_t v);
/** Big-endian int64 `v` at `p` (8 bytes), for edits in place. */
void codec_put_be64(uint8_t *p, int64_t v);
void codec_write_varint(struct codec_buf *b, int32_t v);
void codec_write_varlong(struct codec_buf *b, int64_t v);
void codec_write_uuid(struct codec_buf *b, const uint8_t v[16]);
/** A string of `len` bytes (-1: null), compact when `b->flexible`. */
void codec_write_strn(struct codec_buf *b, const char *s, int32_t len);
/** A NUL-terminated string; NULL writes a null string. */
void codec_write_str(struct codec_buf *b, const char *s);
/** An array count (-1: null), compact when `b->flexible`. */
void codec_write_array_len(struct codec_buf *b, int32_t n);
/** Copy `len` bytes at body offset `off` of a segmented body. */
void codec_write_iov(struct codec_buf *b, const struct codec_iov *iov, int niov, size_t off, size_t len);
/** Copy a slice of a segmented body with its length prefix (string, or `bytes`). */
void codec_write_slice(struct codec_buf *b, const struct codec_iov *iov, int niov,
		       struct codec_slice s, bool bytes);

/** Writes one array element. */
typedef void (*codec_elem_write_fn)(struct codec_buf *b, const void *elem, void *ctx);
/** Write an array: count, then `fn` on each of the `n` elements. */
void codec_write_array(struct codec_buf *b, const void *v, size_t n, size_t elem_size,
		       codec_elem_write_fn fn, void *ctx);
/** Write an int32 array. */
void codec_write_int32s(struct codec_buf *b, const struct codec_int32s *a);

/** A known tagged field to encode: its tag and its encoded value. */
struct codec_tag_out {
	uint32_t tag;
	const uint8_t *data;
	size_t len;
};
/**
 * Write a tagged-field section: `known` (sorted by tag) merged in tag order
 * with the preserved `unknown` fields (may be NULL). Does nothing unless
 * `b->flexible`.
 */
void codec_write_tags(struct codec_buf *b, const struct codec_tag_out *known, size_t nknown,
		      const struct codec_tags *unknown);

/* ------------------------------------------------------------------------ */
/* Framing                                                                  */
/* ------------------------------------------------------------------------ */

/**
 * The segments of `in` after its first `skip` bytes (e.g. a frame body past
 * its header), written to `out` (at most `max_out`); returns the count, or
 * -1 when `skip` is past the end or `out` is too small. Borrowed like `in`.
 */
int codec_iov_skip(const struct codec_iov *in, int nin, size_t skip, struct codec_iov *out, int max_out);

#endif
