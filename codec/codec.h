/*
 * codec — the Kafka wire protocol, as far as syncgate must understand it.
 *
 * Pure functions: no I/O, no libevent, no globals but constant tables.
 * Field names follow the protocol spec (apache/kafka
 * clients/src/main/resources/common/message/<Name>.json).
 *
 * Reading: every decoder reads a frame *body* (the bytes after the 4-byte
 * size prefix) given as an array of segments (`struct codec_iov`), so a frame
 * held in a segmented buffer is decoded without being made contiguous; record
 * data is skipped, never copied. The first error is sticky and remembers its
 * offset; running out of bytes (CODEC_ERR_UNDERFLOW) and bad content
 * (CODEC_ERR_BAD_MSG) are different errors; array counts are checked against
 * limits before anything is allocated.
 *
 * Ownership: a decoded message owns its memory (strings, arrays) and is
 * released with its `_free` function. Encoders append to a `struct codec_buf`,
 * a growable buffer with a hard size limit.
 *
 * Threads: every function is thread-agnostic (no shared mutable state).
 */
/*
 * Message functions, one set per message for all its versions:
 *   codec_<msg>_decode(iov, niov, version, out): decode a whole body (the
 *     bytes after the request/response header). `out` is zeroed first and
 *     belongs to the caller afterwards: call codec_<msg>_free() whatever the
 *     result (what was decoded before an error is released too). Versions
 *     outside the message's range give CODEC_ERR_UNSUPPORTED; bytes left over
 *     give CODEC_ERR_BAD_MSG.
 *   codec_<msg>_encode(m, version, out): append the body to `out` (sets
 *     out->flexible); returns out->err. Unknown tagged fields go back
 *     verbatim, so decode then encode at the same version gives the same
 *     bytes (for the minimal varints Kafka writes, and strings without NUL).
 */
#ifndef SYNCGATE_CODEC_H
#define SYNCGATE_CODEC_H

/* One header per message family, each including the one before it. */
#include "codec/reader.h"    /* errors, segments, reader, writer, framing */
#include "codec/api.h"       /* API table, headers, error codes, ApiVersions, SASL */
#include "codec/endpoints.h" /* broker addresses: Metadata, FindCoordinator, DescribeCluster */
#include "codec/stream.h"    /* streaming scans (Fetch responses, Produce requests) */
#include "codec/produce.h"   /* Produce */
#include "codec/fetch.h"     /* Fetch, ListOffsets, OffsetForLeaderEpoch, the clamp */
#include "codec/groups.h"    /* OffsetCommit */
#include "codec/batch.h"     /* one RecordBatch in place: CRC-32C, producer fields */
#include "codec/txn.h"       /* DescribeTransactions, latest ListOffsets (the commit gate) */

#endif
