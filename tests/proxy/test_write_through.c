/*
 * Unit tests of proxy/write_through.c: a frame for a side whose output is
 * empty is on that socket before the loop runs again; where the
 * bufferevent's output must carry it (bytes already waiting there, a
 * streamed direction, a TLS side, an upstream still connecting) it goes
 * behind what waits, in order, and the loop delivers it.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <string.h>
#include <sys/socket.h>

#include "tests/proxy/pair.h"

#define YAML "mode: sidecar\nlisten:\n  kafka: 127.0.0.1:19092\nupstream:\n  broker: 127.0.0.1:9092\n"

/* What end `fd` can read right now, without running the loop. */
static size_t read_now(int fd, uint8_t *out, size_t cap)
{
	ssize_t n = recv(fd, out, cap, MSG_DONTWAIT);
	return n > 0 ? (size_t)n : 0;
}

static struct evbuffer *bytes(const char *s)
{
	struct evbuffer *b = evbuffer_new();
	cr_assert_not_null(b);
	evbuffer_add(b, s, strlen(s));
	return b;
}

Test(proxy_write_through, empty_output_is_written_at_once_to_either_side)
{
	struct fixture f;
	pair_init(&f, YAML);
	uint8_t got[64];
	struct evbuffer *src = bytes("request-frame+rest");
	proxy_write_through(f.c, false, src, strlen("request-frame"));
	cr_assert(eq(sz, read_now(f.up, got, sizeof(got)), strlen("request-frame")));
	cr_assert(eq(int, memcmp(got, "request-frame", 13), 0));
	cr_assert(eq(sz, evbuffer_get_length(src), strlen("+rest")), "only n bytes taken from the source");
	cr_assert(eq(sz, evbuffer_get_length(bufferevent_get_output(f.c->upstream)), 0));
	evbuffer_free(src);

	src = bytes("response-frame");
	proxy_write_through(f.c, true, src, evbuffer_get_length(src));
	cr_assert(eq(sz, read_now(f.cl, got, sizeof(got)), strlen("response-frame")));
	cr_assert(eq(sz, evbuffer_get_length(src), 0));
	evbuffer_free(src);
	pair_fini(&f);
}

Test(proxy_write_through, bytes_already_waiting_keep_their_place)
{
	struct fixture f;
	pair_init(&f, YAML);
	evbuffer_add(bufferevent_get_output(f.c->client), "first,", 6);
	struct evbuffer *src = bytes("second");
	proxy_write_through(f.c, true, src, 6);
	uint8_t got[64];
	cr_assert(eq(sz, read_now(f.cl, got, sizeof(got)), 0), "nothing jumps the output");
	size_t n = pair_end_drain(&f, f.cl, got, sizeof(got));
	cr_assert(eq(sz, n, 12));
	cr_assert(eq(int, memcmp(got, "first,second", 12), 0));
	evbuffer_free(src);
	pair_fini(&f);
}

/* `n` bytes of `src` written while `set` says so: none reach `fd` at once, all
 * wait in the side's output, and the loop delivers them once it is undone. */
static void through_the_output(struct fixture *f, bool to_client, bool *flag, bool value)
{
	uint8_t got[64];
	int fd = to_client ? f->cl : f->up;
	struct bufferevent *bev = to_client ? f->c->client : f->c->upstream;
	struct evbuffer *src = bytes("waits");
	*flag = value;
	proxy_write_through(f->c, to_client, src, 5);
	cr_assert(eq(sz, read_now(fd, got, sizeof(got)), 0));
	cr_assert(eq(sz, evbuffer_get_length(bufferevent_get_output(bev)), 5));
	*flag = !value;
	cr_assert(eq(sz, pair_end_drain(f, fd, got, sizeof(got)), 5), "the loop delivers it");
	cr_assert(eq(int, memcmp(got, "waits", 5), 0));
	evbuffer_free(src);
}

Test(proxy_write_through, a_streamed_direction_a_tls_side_or_a_connecting_upstream_use_the_output)
{
	struct fixture f;
	pair_init(&f, YAML);
	f.c->from_upstream.state = PROXY_DIR_STREAM; /* a response streaming to the client */
	struct evbuffer *src = bytes("queued");
	uint8_t got[64];
	proxy_write_through(f.c, true, src, 6);
	cr_assert(eq(sz, read_now(f.cl, got, sizeof(got)), 0));
	cr_assert(eq(sz, evbuffer_get_length(bufferevent_get_output(f.c->client)), 6));
	f.c->from_upstream.state = PROXY_DIR_FRAME;
	cr_assert(eq(sz, pair_end_drain(&f, f.cl, got, sizeof(got)), 6));
	evbuffer_free(src);

	through_the_output(&f, true, &f.c->client_plain, false);     /* TLS: through OpenSSL */
	through_the_output(&f, false, &f.c->upstream_plain, false);
	through_the_output(&f, false, &f.c->upstream_up, false);     /* still connecting */
	pair_fini(&f);
}
