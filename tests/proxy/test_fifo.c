/*
 * Unit tests of proxy/fifo.c and proxy_buf_iov() (conn.c): responses leave a
 * connection only from the FIFO head, in request order, whatever order they
 * became ready in; a frame range is viewed across evbuffer segments (and
 * made contiguous when too fragmented). The client side is one end of a
 * socketpair driven by a libevent loop.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy/datapath.h"

struct fixture {
	struct event_base *base;
	struct proxy_server srv;
	struct proxy_conn c;
	int peer; /* the test's end of the socketpair */
};

static void fixture_init(struct fixture *f)
{
	int sv[2];
	memset(f, 0, sizeof(*f));
	cr_assert(eq(i64, (int64_t)(socketpair(AF_UNIX, SOCK_STREAM, 0, sv)), (int64_t)(0)));
	f->base = event_base_new();
	f->srv.base = f->base;
	proxy_server_register_conns(&f->srv); /* as proxy_server_new */
	f->c.srv = &f->srv;
	TAILQ_INIT(&f->c.fifo);
	f->c.client = bufferevent_socket_new(f->base, sv[0], BEV_OPT_CLOSE_ON_FREE);
	f->peer = sv[1];
}

static void fixture_fini(struct fixture *f)
{
	struct proxy_entry *e;
	while ((e = TAILQ_FIRST(&f->c.fifo)))
		proxy_entry_free(&f->c, e);
	bufferevent_free(f->c.client);
	event_base_free(f->base);
	close(f->peer);
}

/* Make `e` READY with `text` as its response bytes. */
static void ready(struct proxy_entry *e, const char *text)
{
	e->out = evbuffer_new();
	evbuffer_add(e->out, text, strlen(text));
	e->state = PROXY_ENTRY_READY;
}

/* Run the loop until the client output is written; return what the peer got. */
static size_t drain_peer(struct fixture *f, char *buf, size_t n)
{
	event_base_loop(f->base, EVLOOP_NONBLOCK);
	ssize_t got = recv(f->peer, buf, n - 1, MSG_DONTWAIT);
	buf[got > 0 ? got : 0] = 0;
	return got > 0 ? (size_t)got : 0;
}

Test(proxy_fifo, later_ready_responses_wait_behind_a_held_head)
{
	struct fixture f;
	char buf[64];
	fixture_init(&f);
	struct proxy_entry *e1 = proxy_entry_new(&f.c, PROXY_ENTRY_KAFKA);
	struct proxy_entry *e2 = proxy_entry_new(&f.c, PROXY_ENTRY_KAFKA);
	struct proxy_entry *e3 = proxy_entry_new(&f.c, PROXY_ENTRY_KAFKA);
	e1->state = PROXY_ENTRY_HELD;
	ready(e3, "C");
	ready(e2, "B");
	proxy_fifo_flush(&f.c);
	cr_assert(eq(i64, (int64_t)(drain_peer(&f, buf, sizeof(buf))), (int64_t)(0)), "nothing overtakes the held head");
	cr_assert(eq(i64, (int64_t)(f.c.nfifo), (int64_t)(3)));
	ready(e1, "A");
	proxy_fifo_flush(&f.c);
	drain_peer(&f, buf, sizeof(buf));
	cr_assert_str_eq(buf, "ABC");
	cr_assert(eq(i64, (int64_t)(f.c.nfifo), (int64_t)(0)));
	fixture_fini(&f);
}

Test(proxy_fifo, internal_entry_sends_nothing_and_releases_the_next)
{
	struct fixture f;
	char buf[64];
	fixture_init(&f);
	struct proxy_entry *in = proxy_entry_new(&f.c, PROXY_ENTRY_INTERNAL);
	struct proxy_entry *e = proxy_entry_new(&f.c, PROXY_ENTRY_KAFKA);
	ready(e, "P");
	proxy_fifo_flush(&f.c);
	cr_assert(eq(i64, (int64_t)(drain_peer(&f, buf, sizeof(buf))), (int64_t)(0)));
	in->state = PROXY_ENTRY_READY; /* its response was consumed: no bytes */
	proxy_fifo_flush(&f.c);
	drain_peer(&f, buf, sizeof(buf));
	cr_assert_str_eq(buf, "P");
	fixture_fini(&f);
}

Test(proxy_buf_iov, views_a_range_across_segments)
{
	static char data[100];
	struct evbuffer *b = evbuffer_new();
	for (int i = 0; i < 100; i++) { /* 100 one-byte segments */
		data[i] = (char)('a' + i % 26);
		evbuffer_add_reference(b, &data[i], 1, NULL, NULL);
	}
	struct codec_iov iov[PROXY_MAX_IOV];
	int n = proxy_buf_iov(b, 3, 10, iov, PROXY_MAX_IOV);
	cr_assert(gt(i64, (int64_t)(n), (int64_t)(0)));
	char got[11] = { 0 };
	size_t o = 0;
	for (int i = 0; i < n; i++) {
		memcpy(got + o, iov[i].base, iov[i].len);
		o += iov[i].len;
	}
	cr_assert(eq(i64, (int64_t)(o), (int64_t)(10)));
	cr_assert_str_eq(got, "defghijklm");
	/* more segments than iovs: made contiguous, same bytes */
	n = proxy_buf_iov(b, 0, 90, iov, 4);
	cr_assert(n >= 1 && n <= 4);
	cr_assert(eq(i64, (int64_t)(((const char *)iov[0].base)[0]), (int64_t)('a')));
	cr_assert(eq(i64, (int64_t)(proxy_buf_iov(b, 95, 10, iov, PROXY_MAX_IOV)), (int64_t)(-1)), "past the end");
	evbuffer_free(b);
}
