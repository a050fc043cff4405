/*
 * bridge.c — worker threads → event loop. Reports are appended to a
 * mutex-protected list; the first report into an empty list writes one byte
 * to a non-blocking pipe whose read end is a libevent read event on the loop.
 * A pipe (rather than event_active() from another thread) works whether or
 * not the event_base was created after evthread_use_pthreads(). The loop
 * side hands each message to the `deliver` callback its owner (the gate)
 * registered, so the bridge knows nothing above it. One wake-up delivers at
 * most BRIDGE_BATCH messages and then lets the loop serve its connections
 * before the rest (a background round of 100,000 partitions is 100,000
 * reports).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mirror/internal.h"

#define BRIDGE_BATCH 4096 /* messages delivered per loop iteration */

struct mirror_bridge {
	mirror_bridge_deliver_cb deliver;
	mirror_bridge_drained_cb drained;
	void *arg;                  /* of both callbacks */
	int fds[2];                 /* [0] read end (loop), [1] write end (workers) */
	struct event *ev;
	pthread_mutex_t mu;
	struct mirror_msg *head, **tail; /* under mu */
	bool signalled;             /* under mu: a byte is in the pipe */
};

static void bridge_cb(evutil_socket_t fd, short what, void *arg)
{
	struct mirror_bridge *b = arg;
	char buf[64];
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	pthread_mutex_lock(&b->mu);
	struct mirror_msg *m = b->head, **cut = &b->head;
	for (int i = 0; i < BRIDGE_BATCH && *cut; i++)
		cut = &(*cut)->next;
	b->head = *cut; /* the rest stays queued, in order, ahead of newer messages */
	*cut = NULL;
	if (!b->head)
		b->tail = &b->head;
	bool more = b->head != NULL;
	b->signalled = more;
	pthread_mutex_unlock(&b->mu);
	while (m) {
		struct mirror_msg *next = m->next;
		b->deliver(b->arg, m);
		free(m);
		m = next;
	}
	b->drained(b->arg);
	if (more) { /* the pipe again: the next epoll round serves the sockets too */
		char c = 1;
		if (write(b->fds[1], &c, 1) < 0 && errno != EAGAIN)
			LOG_W("mirror_bridge_wake_failed", "reason=\"%s\"", strerror(errno));
	}
}

struct mirror_bridge *mirror_bridge_new(struct event_base *base, mirror_bridge_deliver_cb deliver,
				       mirror_bridge_drained_cb drained, void *arg)
{
	struct mirror_bridge *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->deliver = deliver;
	b->drained = drained;
	b->arg = arg;
	b->tail = &b->head;
	if (pipe2(b->fds, O_NONBLOCK | O_CLOEXEC) != 0) {
		LOG_E("mirror_bridge_failed", "reason=\"pipe: %s\"", strerror(errno));
		free(b);
		return NULL;
	}
	pthread_mutex_init(&b->mu, NULL);
	b->ev = event_new(base, b->fds[0], EV_READ | EV_PERSIST, bridge_cb, b);
	if (!b->ev || event_add(b->ev, NULL) != 0) {
		mirror_bridge_free(b);
		return NULL;
	}
	return b;
}

void mirror_bridge_free(struct mirror_bridge *b)
{
	if (!b)
		return;
	if (b->ev)
		event_free(b->ev);
	close(b->fds[0]);
	close(b->fds[1]);
	struct mirror_msg *m = b->head;
	while (m) {
		struct mirror_msg *next = m->next;
		free(m);
		m = next;
	}
	pthread_mutex_destroy(&b->mu);
	free(b);
}

static int enqueue(struct mirror_bridge *b, struct mirror_msg *m);

static char *copy_str(char **p, const char *s)
{
	if (!s)
		return NULL;
	size_t n = strlen(s) + 1;
	char *d = *p;
	memcpy(d, s, n);
	*p += n;
	return d;
}

int mirror_bridge_post(struct mirror_bridge *b, uint64_t link_id, const struct mirror_report *r)
{
	size_t extra = (r->mirror ? strlen(r->mirror) + 1 : 0) + (r->topic ? strlen(r->topic) + 1 : 0) +
		       (r->error ? strlen(r->error) + 1 : 0) + (r->stall ? strlen(r->stall) + 1 : 0);
	struct mirror_msg *m = calloc(1, sizeof(*m) + extra);
	if (!m)
		return -1;
	m->kind = MIRROR_MSG_REPORT;
	m->link_id = link_id;
	m->r = *r;
	char *p = (char *)(m + 1);
	m->r.mirror = copy_str(&p, r->mirror);
	m->r.topic = copy_str(&p, r->topic);
	m->r.error = copy_str(&p, r->error);
	m->r.stall = copy_str(&p, r->stall);
	return enqueue(b, m);
}

int mirror_bridge_post_msg(struct mirror_bridge *b, enum mirror_msg_kind kind, int64_t offset, void *ptr,
			   const void *data, size_t len)
{
	struct mirror_msg *m = calloc(1, sizeof(*m) + len + 1);
	if (!m)
		return -1;
	m->kind = kind;
	m->offset = offset;
	m->ptr = ptr;
	m->data = (char *)(m + 1);
	if (len)
		memcpy(m->data, data, len);
	m->len = len;
	return enqueue(b, m);
}

int mirror_bridge_post_listed(struct mirror_bridge *b, uint64_t link_id, int64_t ntopics)
{
	struct mirror_msg *m = calloc(1, sizeof(*m));
	if (!m)
		return -1;
	m->kind = MIRROR_MSG_LISTED;
	m->link_id = link_id;
	m->offset = ntopics;
	return enqueue(b, m);
}

/* Append `m` (owned by the queue from now on) and wake the loop. */
static int enqueue(struct mirror_bridge *b, struct mirror_msg *m)
{
	bool wake = false;
	pthread_mutex_lock(&b->mu);
	*b->tail = m;
	b->tail = &m->next;
	if (!b->signalled) {
		b->signalled = true;
		wake = true;
	}
	pthread_mutex_unlock(&b->mu);
	if (wake) {
		char c = 1;
		/* EAGAIN: the pipe is full, so the loop is already woken. */
		if (write(b->fds[1], &c, 1) < 0 && errno != EAGAIN)
			LOG_W("mirror_bridge_wake_failed", "reason=\"%s\"", strerror(errno));
	}
	return 0;
}
