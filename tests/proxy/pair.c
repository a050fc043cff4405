/* tests/proxy/pair.c — see pair.h. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pair.h"

void pair_init(struct fixture *f, const char *yaml)
{
	int a[2], b[2];
	memset(f, 0, sizeof(*f));
	signal(SIGPIPE, SIG_IGN); /* as proxy/cmd/syncgate.c: splice(2) has no MSG_NOSIGNAL */
	struct conf_errors errs = { 0 };
	f->conf = conf_load_string("t.yaml", yaml, strlen(yaml), &errs);
	if (!f->conf)
		conf_errors_print(&errs);
	cr_assert_not_null(f->conf);
	cr_assert(eq(i64, (int64_t)(socketpair(AF_UNIX, SOCK_STREAM, 0, a)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(socketpair(AF_UNIX, SOCK_STREAM, 0, b)), (int64_t)(0)));
	f->base = event_base_new();
	f->srv.base = f->base;
	f->srv.conf = f->conf;
	f->srv.topic_ids = proxy_topic_ids_new();
	TAILQ_INIT(&f->srv.conns);
	TAILQ_INIT(&f->srv.listeners);
	proxy_server_register_conns(&f->srv); /* as proxy_server_new */
	evutil_make_socket_nonblocking(a[0]);
	evutil_make_socket_nonblocking(b[0]);
	if (getenv("SG_TEST_DEBUG"))
		conf_log_set_level(LOG_DEBUG);
	f->c = proxy_conn_new_fds(&f->srv, a[0], b[0]);
	cr_assert_not_null(f->c);
	f->cl = a[1];
	f->up = b[1];
	fcntl(f->up, F_SETFL, O_NONBLOCK);
	fcntl(f->cl, F_SETFL, O_NONBLOCK);
}

void pair_fini(struct fixture *f)
{
	struct proxy_conn *c;
	while ((c = TAILQ_FIRST(&f->srv.conns)))
		proxy_conn_free(c);
	if (f->srv.gate)
		mirror_gate_free(f->srv.gate); /* a test's gate: before the loop it uses */
	proxy_topic_ids_free(f->srv.topic_ids);
	proxy_pidmap_free(f->srv.pidmap);
	event_base_free(f->base);
	conf_free(f->conf);
	if (f->cl >= 0)
		close(f->cl);
	if (f->up >= 0)
		close(f->up);
}

void pair_gate_progress(struct fixture *f, int32_t npartitions, int64_t progress)
{
	if (!f->srv.gate)
		f->srv.gate = mirror_gate_new_ex(f->base, f->conf, MIRROR_GATE_NO_WORKERS);
	cr_assert_not_null(f->srv.gate);
	for (int32_t p = 0; p < npartitions; p++) {
		struct mirror_report r = {
			.mirror = "dr", .topic = "orders", .partition = p, .npartitions = npartitions,
			.progress = progress, .source_hw = progress, .source_hw_after = progress, .isr = 3,
			.min_isr = 2,
		};
		cr_assert(eq(int, mirror_gate_inject_report(f->srv.gate, &r), 0));
	}
	for (int i = 0; i < 8; i++)
		event_base_loop(f->base, EVLOOP_NONBLOCK);
	for (int32_t p = 0; p < npartitions; p++) {
		int64_t mhw = -1;
		cr_assert(eq(int, mirror_gate_mirrored_hw(f->srv.gate, "orders", p, &mhw), 1), "orders[%d] gated", p);
		cr_assert(eq(i64, mhw, progress), "orders[%d] mirrored HW", p);
	}
}

void pair_frame_seal(struct codec_buf *b)
{
	cr_assert(eq(int, b->err, CODEC_OK), "the test frame was written whole");
	cr_assert(ge(sz, b->len, 4));
	uint32_t len = (uint32_t)(b->len - 4);
	b->data[0] = (uint8_t)(len >> 24);
	b->data[1] = (uint8_t)(len >> 16);
	b->data[2] = (uint8_t)(len >> 8);
	b->data[3] = (uint8_t)len;
}

size_t pair_request_to_broker(struct fixture *f, const struct codec_buf *b)
{
	cr_assert(eq(i64, (int64_t)(write(f->cl, b->data, b->len)), (int64_t)((ssize_t)b->len)));
	uint8_t tmp[4096];
	size_t got = 0;
	for (int i = 0; i < 200 && got < b->len; i++) {
		event_base_loop(f->base, EVLOOP_NONBLOCK);
		ssize_t r = read(f->up, tmp, sizeof(tmp));
		if (r > 0)
			got += (size_t)r;
	}
	return got;
}

size_t pair_end_drain(struct fixture *f, int fd, uint8_t *out, size_t cap)
{
	size_t got = 0;
	for (int i = 0; i < 60; i++) {
		event_base_loop(f->base, EVLOOP_NONBLOCK);
		ssize_t r = read(fd, out + got, cap - got);
		if (r > 0)
			got += (size_t)r;
	}
	return got;
}
