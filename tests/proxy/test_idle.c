/*
 * Unit tests of the client idle timeout in proxy/conn.c (limits.client_idle_ms):
 * an idle pair is closed; a pair with a request in flight, a held
 * response, or bytes queued either way is never closed, however long it
 * waits; traffic and reloads move the deadline. The client and the broker
 * are the test's ends of two socketpairs.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pair.h"

static void idle_yaml(char *yaml, size_t n, int idle_ms)
{
	snprintf(yaml, n,
		 "mode: sidecar\n"
		 "listen:\n  kafka: 127.0.0.1:19092\n"
		 "upstream:\n  broker: 127.0.0.1:9092\n"
		 "advertise:\n  template: \"127.0.0.1:19092\"\n"
		 "mirrors: []\n"
		 "limits:\n  client_idle_ms: %d\n", idle_ms);
}

static struct conf *load(int idle_ms)
{
	char yaml[512];
	idle_yaml(yaml, sizeof(yaml), idle_ms);
	struct conf_errors errs = { 0 };
	struct conf *cf = conf_load_string("t.yaml", yaml, strlen(yaml), &errs);
	cr_assert_not_null(cf);
	return cf;
}

static void fixture_init(struct fixture *f, int idle_ms)
{
	char yaml[512];
	idle_yaml(yaml, sizeof(yaml), idle_ms);
	pair_init(f, yaml);
}

static void fixture_fini(struct fixture *f)
{
	pair_fini(f);
}

static void stop_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	event_base_loopbreak(arg);
}

/* Run the loop for `ms` milliseconds (whatever else fires meanwhile). */
static void run_for(struct fixture *f, int ms)
{
	struct event *stop = evtimer_new(f->base, stop_cb, f->base);
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	evtimer_add(stop, &tv);
	event_base_dispatch(f->base);
	event_free(stop);
}

/* Whether `fd` saw EOF (the pair closed its end); drains what was sent. */
static bool eof(int fd)
{
	char b[4096];
	for (;;) {
		ssize_t r = read(fd, b, sizeof(b));
		if (r == 0)
			return true;
		if (r < 0)
			return errno != EAGAIN && errno != EWOULDBLOCK;
	}
}

/* Run the loop until the pair is freed (each pass waits for the next event). */
static void run_until_closed(struct fixture *f)
{
	for (int i = 0; i < 10000 && f->srv.nconns > 0; i++)
		event_base_loop(f->base, EVLOOP_ONCE);
	cr_assert(eq(i64, (int64_t)(f->srv.nconns), (int64_t)(0)), "the idle pair was never closed");
	f->c = NULL;
}

/* A small Fetch v16 response frame (size prefix included), no endpoints. */
static size_t fetch_response(uint8_t *b, int32_t corr)
{
	static const uint8_t body[] = {
		0, 0, 0, 0,  /* correlation id, patched */
		0,           /* header tags */
		0, 0, 0, 0,  /* ThrottleTimeMs */
		0, 0,        /* ErrorCode */
		0, 0, 0, 7,  /* SessionId */
		1,           /* Responses: none */
		0,           /* tags */
	};
	uint32_t n = sizeof(body);
	b[0] = 0; b[1] = 0; b[2] = 0; b[3] = (uint8_t)n;
	memcpy(b + 4, body, n);
	b[4] = (uint8_t)(corr >> 24); b[5] = (uint8_t)(corr >> 16);
	b[6] = (uint8_t)(corr >> 8); b[7] = (uint8_t)corr;
	return 4 + n;
}

static struct proxy_entry *fetch_entry(struct fixture *f, int32_t corr)
{
	struct proxy_entry *e = proxy_entry_new(f->c, PROXY_ENTRY_KAFKA);
	cr_assert_not_null(e);
	e->api_key = CODEC_API_FETCH;
	e->api_version = e->client_version = 16;
	e->correlation_id = corr;
	return e;
}

Test(idle, idle_pair_is_closed_and_counted)
{
	struct fixture f;
	fixture_init(&f, 30);
	cr_assert(event_pending(f.c->idle_ev, EV_TIMEOUT, NULL), "OPEN arms the idle check");
	run_until_closed(&f);
	cr_assert(eof(f.cl), "the client sees the close");
	cr_assert(eof(f.up), "the upstream connection is closed with it");
	struct metric *m = metric_get(METRIC_COUNTER, "syncgate_client_idle_closes_total", "", "",
				      NULL, 0);
	cr_assert(ge(i64, (int64_t)(metric_value(m)), (int64_t)(1)));
	fixture_fini(&f);
}

Test(idle, request_in_flight_is_never_closed_then_idles_out_after_the_answer)
{
	struct fixture f;
	fixture_init(&f, 20);
	fetch_entry(&f, 77); /* the broker has not answered yet */
	run_for(&f, 400);    /* twenty idle periods */
	cr_assert(eq(i64, (int64_t)(f.srv.nconns), (int64_t)(1)), "closed with a request in flight");
	cr_assert(eq(i64, (int64_t)(f.c->state), (int64_t)(PROXY_CONN_OPEN)));
	cr_assert_not(eof(f.cl));

	uint8_t frame[64];
	size_t n = fetch_response(frame, 77);
	cr_assert(eq(i64, (int64_t)(write(f.up, frame, n)), (int64_t)((ssize_t)n)));
	uint8_t got[64];
	size_t have = 0;
	for (int i = 0; i < 1000 && have < n; i++) {
		event_base_loop(f.base, EVLOOP_ONCE);
		ssize_t r = read(f.cl, got + have, sizeof(got) - have);
		if (r > 0)
			have += (size_t)r;
	}
	cr_assert(eq(i64, (int64_t)(have), (int64_t)(n)), "the response reaches the client");
	cr_assert_not(memcmp(got, frame, n));
	run_until_closed(&f); /* nothing in flight any more */
	cr_assert(eof(f.cl));
	fixture_fini(&f);
}

Test(idle, held_response_is_never_closed)
{
	struct fixture f;
	fixture_init(&f, 20);
	struct proxy_entry *e = fetch_entry(&f, 5);
	proxy_entry_set_state(f.c, e, PROXY_ENTRY_HELD); /* as the gate holds a Produce */
	run_for(&f, 400);
	cr_assert(eq(i64, (int64_t)(f.srv.nconns), (int64_t)(1)), "closed while holding a response");
	cr_assert_not(eof(f.cl));
	proxy_entry_free(f.c, e); /* the hold ended (answered) */
	run_until_closed(&f);
	fixture_fini(&f);
}

Test(idle, decision_counts_busy_as_activity)
{
	struct fixture f;
	fixture_init(&f, 0); /* no timer: the test drives the decision */
	cr_assert_not(event_pending(f.c->idle_ev, EV_TIMEOUT, NULL), "0 disables the check");
	struct proxy_conn *c = f.c;
	cr_assert_not(proxy_conn_busy(c));
	c->last_io_ms = 1000;
	cr_assert(eq(i64, (int64_t)(proxy_conn_idle_left(c, 100, 1040)), (int64_t)(60)));
	cr_assert(eq(i64, (int64_t)(proxy_conn_idle_left(c, 100, 1100)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(proxy_conn_idle_left(c, 100, 5000)), (int64_t)(0)));

	/* each busy condition, set then undone */
	static const char *const cases[] = { "client output", "upstream output", "paused",
					     "streaming", "in flight" };
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct proxy_entry *e = NULL;
		switch (i) {
		case 0: evbuffer_add(bufferevent_get_output(c->client), "x", 1); break;
		case 1: evbuffer_add(bufferevent_get_output(c->upstream), "x", 1); break;
		case 2: c->client_paused = true; break;
		case 3: c->from_client.state = PROXY_DIR_STREAM; break;
		case 4: e = fetch_entry(&f, 1); break;
		}
		c->last_io_ms = 1000;
		cr_assert(proxy_conn_busy(c), "%s", cases[i]);
		cr_assert(eq(i64, (int64_t)(proxy_conn_idle_left(c, 100, 9000)), (int64_t)(100)), "%s: closed while busy",
			     cases[i]);
		cr_assert(eq(i64, (int64_t)(c->last_io_ms), (int64_t)(9000)), "%s: busy counts as activity", cases[i]);
		switch (i) {
		case 0: /* fall through: written out by the loop (the start of a
			 * bufferevent's output is frozen to callers) */
		case 1:
			for (int k = 0; k < 100 && (evbuffer_get_length(bufferevent_get_output(c->client)) ||
						    evbuffer_get_length(bufferevent_get_output(c->upstream))); k++)
				event_base_loop(f.base, EVLOOP_NONBLOCK);
			break;
		case 2: c->client_paused = false; break;
		case 3: c->from_client.state = PROXY_DIR_FRAME; break;
		case 4: proxy_entry_free(c, e); break;
		}
		cr_assert_not(proxy_conn_busy(c), "%s undone", cases[i]);
		c->last_io_ms = 9000; /* a write is client traffic: it stamped the real clock */
		/* the full period again from the last busy check */
		cr_assert(eq(i64, (int64_t)(proxy_conn_idle_left(c, 100, 9050)), (int64_t)(50)), "%s", cases[i]);
	}
	fixture_fini(&f);
}

Test(idle, client_traffic_moves_the_deadline)
{
	struct fixture f;
	fixture_init(&f, 0);
	f.c->last_io_ms = 1;
	/* two bytes of a request header: read (not yet a frame), stamped */
	cr_assert(eq(i64, (int64_t)(write(f.cl, "\0\0", 2)), (int64_t)(2)));
	for (int i = 0; i < 100 && f.c->last_io_ms == 1; i++)
		event_base_loop(f.base, EVLOOP_NONBLOCK);
	cr_assert(gt(i64, (int64_t)(f.c->last_io_ms), (int64_t)(1)));
	fixture_fini(&f);
}

Test(idle, idle_time_counts_from_the_last_answer)
{
	/* a response spliced to the client passes no write callback: the idle
	 * period starts when the last entry leaves the FIFO */
	struct fixture f;
	fixture_init(&f, 0);
	struct proxy_entry *a = fetch_entry(&f, 1), *b = fetch_entry(&f, 2);
	f.c->last_io_ms = 1;
	proxy_entry_free(f.c, a);
	cr_assert(eq(i64, (int64_t)(f.c->last_io_ms), (int64_t)(1)), "still in flight: nothing to stamp");
	proxy_entry_free(f.c, b);
	cr_assert(gt(i64, (int64_t)(f.c->last_io_ms), (int64_t)(1)));
	fixture_fini(&f);
}

Test(idle, reload_arms_and_disarms)
{
	struct fixture f;
	fixture_init(&f, 0);
	cr_assert_not(event_pending(f.c->idle_ev, EV_TIMEOUT, NULL));
	struct conf *on = load(60000);
	cr_assert(eq(i64, (int64_t)(proxy_server_reconfigure(&f.srv, on)), (int64_t)(0)));
	cr_assert(event_pending(f.c->idle_ev, EV_TIMEOUT, NULL), "a reload that sets it arms it");
	cr_assert(eq(i64, (int64_t)(proxy_server_reconfigure(&f.srv, f.conf)), (int64_t)(0)));
	cr_assert_not(event_pending(f.c->idle_ev, EV_TIMEOUT, NULL), "0 disarms");
	fixture_fini(&f);
	conf_free(on);
}
