/*
 * Unit tests of how a client's end is handled in proxy/conn_io.c (invariant 7,
 * docs/architecture.md): a client that shuts down its write side (half-close) still
 * reads every response it is owed, in order, and then the pair closes; a
 * client that really closed is found out by the failed write and takes the
 * client-gone path (the rest is read and dropped upstream); an EOF with
 * nothing owed, or in the middle of a request, closes as before. The client
 * and the broker are the test's ends of two socketpairs (plaintext).
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pair.h"

/* client_idle_ms is short: the idle timeout must not end a half-closed pair */
static const char *yaml =
	"mode: sidecar\n"
	"listen:\n  kafka: 127.0.0.1:19092\n"
	"upstream:\n  broker: 127.0.0.1:9092\n"
	"advertise:\n  template: \"127.0.0.1:19092\"\n"
	"mirrors: []\n"
	"limits:\n  client_idle_ms: 20\n";

/* ---- frames ------------------------------------------------------------------ */

static void be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* A Heartbeat v0 request frame (size prefix included): group "g", member "m". */
static size_t heartbeat_request(uint8_t *b, int32_t corr)
{
	static const uint8_t body[] = {
		0, 12, 0, 0,  /* Heartbeat v0 */
		0, 0, 0, 0,   /* correlation id, patched */
		0, 1, 't',    /* client id */
		0, 1, 'g',    /* GroupId */
		0, 0, 0, 1,   /* GenerationId */
		0, 1, 'm',    /* MemberId */
	};
	be32(b, sizeof(body));
	memcpy(b + 4, body, sizeof(body));
	be32(b + 8, (uint32_t)corr);
	return 4 + sizeof(body);
}

/* Its response: correlation id, ErrorCode `err` (a marker the test can see). */
static size_t heartbeat_response(uint8_t *b, int32_t corr, int16_t err)
{
	be32(b, 6);
	be32(b + 4, (uint32_t)corr);
	b[8] = (uint8_t)(err >> 8);
	b[9] = (uint8_t)err;
	return 10;
}

/* ---- I/O ------------------------------------------------------------------- */

static void write_all(int fd, const uint8_t *p, size_t n)
{
	cr_assert(eq(i64, (int64_t)(write(fd, p, n)), (int64_t)((ssize_t)n)));
}

/* Pump the loop until `fd` has given `n` bytes into `out` (or 2 s passed). */
static size_t read_n(struct fixture *f, int fd, uint8_t *out, size_t n)
{
	size_t have = 0;
	for (int i = 0; i < 2000 && have < n; i++) {
		event_base_loop(f->base, EVLOOP_NONBLOCK);
		ssize_t r = read(fd, out + have, n - have);
		if (r > 0)
			have += (size_t)r;
		else
			usleep(1000);
	}
	return have;
}

/* Pump the loop for about `ms` milliseconds. */
static void run_for(struct fixture *f, int ms)
{
	for (int i = 0; i < ms; i++) {
		event_base_loop(f->base, EVLOOP_NONBLOCK);
		usleep(1000);
	}
}

/* Pump the loop until the pair is freed (or 2 s passed). */
static void run_until_closed(struct fixture *f)
{
	for (int i = 0; i < 2000 && f->srv.nconns > 0; i++) {
		event_base_loop(f->base, EVLOOP_NONBLOCK);
		usleep(1000);
	}
	cr_assert(eq(i64, (int64_t)(f->srv.nconns), (int64_t)(0)), "the pair was never closed");
	f->c = NULL;
}

/* Whether `fd` reads end of stream now (nothing more before it). */
static bool at_eof(int fd)
{
	uint8_t x;
	return read(fd, &x, 1) == 0;
}

static double counter(const char *name, const char *labels)
{
	return metric_value(metric_get(METRIC_COUNTER, name, "", labels, NULL, 0));
}

/* Half-closes ended, all outcomes. */
static double half_closes(void)
{
	return counter("syncgate_client_half_closes_total", "outcome=\"delivered\"") +
	       counter("syncgate_client_half_closes_total", "outcome=\"client_gone\"");
}

/* Pairs closed with `cause` (syncgate_connection_closes_total). */
static double closes(enum proxy_close_cause cause)
{
	char labels[80];
	snprintf(labels, sizeof(labels), "cause=\"%s\"", proxy_close_cause_label(cause));
	return counter("syncgate_connection_closes_total", labels);
}

static double lingers_delivered(void)
{
	return counter("syncgate_client_close_lingers_total", "outcome=\"delivered\"");
}

/* The client sends two pipelined requests (correlation ids 1, 2); the broker reads both. */
static void two_requests(struct fixture *f)
{
	uint8_t req[64], got[128];
	size_t n = heartbeat_request(req, 1);
	heartbeat_request(req + n, 2);
	write_all(f->cl, req, 2 * n);
	cr_assert(eq(i64, (int64_t)(read_n(f, f->up, got, 2 * n)), (int64_t)(2 * n)), "both requests reach the broker");
	cr_assert_not(memcmp(got, req, 2 * n), "byte for byte");
	cr_assert(eq(i64, (int64_t)(f->c->nfifo), (int64_t)(2)));
}

/* ---- tests ----------------------------------------------------------------- */

Test(proxy_conn, half_closed_client_reads_every_response_then_the_pair_closes)
{
	struct fixture f;
	pair_init(&f, yaml);
	double hc = half_closes(), lingered = lingers_delivered();
	two_requests(&f);
	cr_assert(eq(i64, (int64_t)(shutdown(f.cl, SHUT_WR)), (int64_t)(0)));
	run_for(&f, 20);
	cr_assert(eq(i64, (int64_t)(f.c->state), (int64_t)(PROXY_CONN_HALF_CLOSED)));

	/* the broker takes its time: no idle close, no linger deadline */
	run_for(&f, 150);
	cr_assert(eq(i64, (int64_t)(f.srv.nconns), (int64_t)(1)), "closed while responses were owed");
	uint8_t resp[32], got[32];
	size_t n = heartbeat_response(resp, 1, 101);
	write_all(f.up, resp, n);
	cr_assert(eq(i64, (int64_t)(read_n(&f, f.cl, got, n)), (int64_t)(n)), "the first response reaches the client");
	cr_assert_not(memcmp(got, resp, n));
	cr_assert(eq(i64, (int64_t)(f.c->state), (int64_t)(PROXY_CONN_HALF_CLOSED)), "one response is still owed");

	run_for(&f, 50);
	heartbeat_response(resp, 2, 102);
	write_all(f.up, resp, n);
	cr_assert(eq(i64, (int64_t)(read_n(&f, f.cl, got, n)), (int64_t)(n)), "the second response reaches the client");
	cr_assert_not(memcmp(got, resp, n));
	run_until_closed(&f);
	cr_assert(at_eof(f.cl), "then the client sees the close");
	cr_assert(at_eof(f.up), "and the broker a clean one");
	cr_assert(eq(i64, (int64_t)(counter("syncgate_client_half_closes_total", "outcome=\"delivered\"")), (int64_t)(hc + 1)));
	cr_assert(eq(i64, (int64_t)(lingers_delivered()), (int64_t)(lingered)), "nothing was dropped");
	pair_fini(&f);
}

Test(proxy_conn, half_closed_client_reads_a_streamed_response_to_its_end)
{
	/* a response above PROXY_STREAM_MIN streams (spliced: no client write
	 * callback sees its end), the client reading it slowly */
	struct fixture f;
	pair_init(&f, yaml);
	uint8_t req[64];
	size_t n = heartbeat_request(req, 9);
	write_all(f.cl, req, n);
	cr_assert(eq(i64, (int64_t)(read_n(&f, f.up, req, n)), (int64_t)(n)));
	cr_assert(eq(i64, (int64_t)(shutdown(f.cl, SHUT_WR)), (int64_t)(0)));
	size_t total = 3u << 20;
	uint8_t *resp = malloc(total), *got = malloc(total);
	heartbeat_response(resp, 9, 0);
	be32(resp, (uint32_t)(total - 4));
	for (size_t i = 10; i < total; i++)
		resp[i] = (uint8_t)(i * 13);
	size_t sent = 0, have = 0;
	for (int i = 0; i < 100000 && have < total; i++) {
		ssize_t w = sent < total ? write(f.up, resp + sent, total - sent) : 0;
		if (w > 0)
			sent += (size_t)w;
		event_base_loop(f.base, EVLOOP_NONBLOCK);
		ssize_t r = read(f.cl, got + have, i % 2 ? 4096 : 1);
		if (r > 0)
			have += (size_t)r;
	}
	cr_assert(eq(i64, (int64_t)(have), (int64_t)(total)), "the whole response reaches the half-closed client");
	cr_assert_not(memcmp(got, resp, total));
	run_until_closed(&f);
	cr_assert(at_eof(f.cl));
	cr_assert(at_eof(f.up));
	free(resp);
	free(got);
	pair_fini(&f);
}

Test(proxy_conn, client_that_really_closed_takes_the_client_gone_path)
{
	struct fixture f;
	pair_init(&f, yaml);
	double lingered = lingers_delivered(), hc = half_closes();
	two_requests(&f);
	close(f.cl); /* an EOF like a half-close: only a write can tell */
	f.cl = -1;
	run_for(&f, 20);
	cr_assert(eq(i64, (int64_t)(f.c->state), (int64_t)(PROXY_CONN_HALF_CLOSED)));

	uint8_t resp[32];
	size_t n = heartbeat_response(resp, 1, 0);
	write_all(f.up, resp, n);
	for (int i = 0; i < 2000 && f.c->state == PROXY_CONN_HALF_CLOSED; i++) {
		event_base_loop(f.base, EVLOOP_NONBLOCK);
		usleep(1000);
	}
	cr_assert(eq(i64, (int64_t)(f.c->state), (int64_t)(PROXY_CONN_LINGERING)), "the failed write falls back to lingering");
	cr_assert_null(f.c->client);
	cr_assert(eq(i64, (int64_t)(f.c->nfifo), (int64_t)(1)), "the response still owed is awaited, to be dropped");

	heartbeat_response(resp, 2, 0);
	write_all(f.up, resp, n);
	run_until_closed(&f);
	cr_assert(at_eof(f.up), "the broker sees a clean close after its last response was read");
	cr_assert(eq(i64, (int64_t)(lingers_delivered()), (int64_t)(lingered + 1)));
	cr_assert(eq(i64, (int64_t)(counter("syncgate_client_half_closes_total", "outcome=\"client_gone\"")), (int64_t)(hc + 1)));
	cr_assert(eq(i64, (int64_t)(half_closes()), (int64_t)(hc + 1)), "counted once, as client_gone");
	pair_fini(&f);
}

Test(proxy_conn, eof_with_nothing_owed_closes_as_before)
{
	struct fixture f;
	pair_init(&f, yaml);
	double hc = half_closes(), lingered = lingers_delivered();
	double by_client = closes(PROXY_CLOSE_CLIENT_CLOSED), none = closes(PROXY_CLOSE_NONE);
	cr_assert(eq(i64, (int64_t)(shutdown(f.cl, SHUT_WR)), (int64_t)(0)));
	run_until_closed(&f);
	cr_assert(at_eof(f.cl));
	cr_assert(at_eof(f.up));
	cr_assert(eq(i64, (int64_t)(half_closes()), (int64_t)(hc)));
	cr_assert(eq(i64, (int64_t)(lingers_delivered()), (int64_t)(lingered + 1)));
	cr_assert(eq(dbl, closes(PROXY_CLOSE_CLIENT_CLOSED), by_client + 1), "closed by the client, counted once");
	cr_assert(eq(dbl, closes(PROXY_CLOSE_NONE), none), "a pair is never freed without a cause");
	pair_fini(&f);
}

Test(proxy_conn, every_close_cause_has_its_own_label_and_text)
{
	for (int a = 0; a < PROXY_CLOSE_CAUSE_COUNT; a++) {
		const char *la = proxy_close_cause_label((enum proxy_close_cause)a);
		cr_assert(ne(str, (char *)la, "?"), "cause %d has a label", a);
		cr_assert(a == PROXY_CLOSE_NONE || strlen(proxy_close_cause_text((enum proxy_close_cause)a)) > 0,
			  "cause %s has a text", la);
		for (int b = 0; b < a; b++)
			cr_assert(ne(str, (char *)la, (char *)proxy_close_cause_label((enum proxy_close_cause)b)));
	}
	cr_assert(eq(str, (char *)proxy_close_cause_label(PROXY_CLOSE_CAUSE_COUNT), "?"));
}

Test(proxy_conn, eof_in_the_middle_of_a_request_closes_as_before)
{
	struct fixture f;
	pair_init(&f, yaml);
	double hc = half_closes(), lingered = lingers_delivered();
	uint8_t req[64], got[64];
	size_t n = heartbeat_request(req, 1);
	heartbeat_request(req + n, 2);
	write_all(f.cl, req, n + 10); /* the second request cut short */
	cr_assert(eq(i64, (int64_t)(read_n(&f, f.up, got, n)), (int64_t)(n)));
	cr_assert(eq(i64, (int64_t)(shutdown(f.cl, SHUT_WR)), (int64_t)(0)));
	run_for(&f, 20);
	cr_assert(eq(i64, (int64_t)(f.c->state), (int64_t)(PROXY_CONN_LINGERING)), "no half-close for a client that stopped mid-frame");
	cr_assert(eq(i64, (int64_t)(half_closes()), (int64_t)(hc)));

	uint8_t resp[32];
	size_t m = heartbeat_response(resp, 1, 0);
	write_all(f.up, resp, m);
	run_until_closed(&f);
	cr_assert(at_eof(f.cl), "the client sees the close, no response");
	cr_assert(at_eof(f.up));
	cr_assert(eq(i64, (int64_t)(lingers_delivered()), (int64_t)(lingered + 1)));
	pair_fini(&f);
}
