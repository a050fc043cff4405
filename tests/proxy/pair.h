/*
 * tests/proxy/pair.h — a proxy_conn between two socketpairs, for the unit
 * tests of proxy/: the test holds the client's end (`cl`) and the broker's end
 * (`up`), both non-blocking; the connection runs on `base` under the config
 * parsed from a YAML text. SG_TEST_DEBUG=1 logs at debug.
 */
#ifndef SYNCGATE_TESTS_PROXY_PAIR_H
#define SYNCGATE_TESTS_PROXY_PAIR_H

#include <stdint.h>

#include "proxy/datapath.h"

struct fixture {
	struct event_base *base;
	struct conf *conf;
	struct proxy_server srv;
	struct proxy_conn *c;
	int cl;   /* the client's end; close and set -1 to test a client close */
	int up;   /* the broker's end; likewise */
};

/* Set up `f` with the config `yaml` (Criterion asserts on any failure). */
void pair_init(struct fixture *f, const char *yaml);
/* Free the connections, a gate the test put in f->srv.gate, the config and the
 * test's ends still open. */
void pair_fini(struct fixture *f);

/* The mirror this fixture's configs name: `dr`, with `orders` desired SYNC
 * (the YAML below, plus any settings after it, e.g. limits). */
#define PAIR_GATED_YAML \
	"mode: sidecar\n" \
	"listen:\n  kafka: 127.0.0.1:19092\n" \
	"upstream:\n  broker: 127.0.0.1:9092\n" \
	"mirrors:\n  - name: dr\n    bootstrap: 127.0.0.1:1\n    sync_topics: [orders]\n"

/*
 * Give the pair a gate without worker threads (freed by pair_fini) unless it
 * has one, and make mirror dr's progress on partitions 0..npartitions-1 of
 * `orders` `progress` (an injected report, confirmed by the source as the
 * gate requires): afterwards the mirrored HW of each is `progress`.
 */
void pair_gate_progress(struct fixture *f, int32_t npartitions, int64_t progress);

/*
 * Frames the tests send are built with the codec's writer (codec_write_*)
 * into a codec_buf without a limit: PAIR_BUF for classic encoding,
 * PAIR_FLEX_BUF where codec_write_str() writes compact strings (flexible
 * versions). codec_buf_free() them.
 */
#define PAIR_BUF { .limit = SIZE_MAX }
#define PAIR_FLEX_BUF { .limit = SIZE_MAX, .flexible = true }

/* Set the size prefix of the frame in `b` (its first 4 bytes, written as a
 * placeholder) to the length of the rest. */
void pair_frame_seal(struct codec_buf *b);

/* Write the frame in `b` at the client's end (asserting it all goes) and run
 * the loop until the broker's end has read as many bytes, which it drops;
 * returns how many it read (less after 200 rounds without them). */
size_t pair_request_to_broker(struct fixture *f, const struct codec_buf *b);

/* Everything end `fd` of the pair can read now, after running the loop (60 rounds). */
size_t pair_end_drain(struct fixture *f, int fd, uint8_t *out, size_t cap);

#endif
