/*
 * tests/proxy/pair.h — a proxy_conn between two socketpairs, for the unit
 * tests of proxy/: the test holds the client's end (`cl`) and the broker's end
 * (`up`), both non-blocking; the connection runs on `base` under the config
 * parsed from a YAML text. SG_TEST_DEBUG=1 logs at debug.
 */
#ifndef SYNCGATE_TESTS_PROXY_PAIR_H
#define SYNCGATE_TESTS_PROXY_PAIR_H

#include "proxy/proxy.h"

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

#endif
