/*
 * admin_conns.c — the cap on concurrent admin HTTP connections
 * (admin.max_connections), so that idle admin connections cannot use up the
 * process's file descriptors, which the Kafka data path shares.
 *
 * libevent 2.1's evhttp has no connection limit (evhttp_set_max_connections
 * is 2.2) and no hook when it accepts or frees a connection. What it offers:
 *   - evhttp_set_bevcb: evhttp asks us for each accepted connection's
 *     bufferevent (plain, or admin_tls.c's TLS one): +1, and a reference on
 *     the bufferevent, so it stays valid for us;
 *   - the bufferevent's callback argument, set by evhttp right after, is the
 *     evhttp_connection: read on the next loop turn (`fixup_ev`, before any
 *     I/O of the new connection), it gets evhttp_connection_set_closecb,
 *     which evhttp calls when it closes the connection: -1;
 *   - bufferevent_free clears all three of a bufferevent's callbacks (evhttp
 *     clears only the read one while it writes a response): a connection
 *     freed without its close callback (before the fixup, or on a path that
 *     skips it) is found by a sweep every SWEEP_MS and counted out then;
 *   - that one close callback is the count's: the admin calls that need to
 *     know of a close register through proxy_admin_conns_on_close, which
 *     chains theirs behind it;
 *   - evhttp_bind_socket_with_handle + evhttp_bound_socket_get_listener: at
 *     the cap the listener is disabled (evconnlistener_disable, which also
 *     ends libevent's accept loop at once), below it enabled again. New
 *     connections then wait in the kernel's listen backlog (not served, no
 *     file descriptor of ours) until an admin connection closes; evhttp's
 *     30 s timeout bounds how long an idle one holds its place.
 * (A pass-through filter bufferevent, whose free callback would count, is
 * not usable: evhttp 2.1.12 queues a response before it enables writing, and
 * a filter then never moves it.) Reaching the cap is logged
 * (`admin_connections_at_cap`, at most once a second) and counted
 * (syncgate_admin_connection_cap_reached_total); syncgate_admin_connections
 * is the gauge. Loop thread.
 */
#include <stdlib.h>

#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/listener.h>

#include "conf/conf.h"
#include "mirror/mirror.h"
#include "proxy/admin/admin.h"
#include "proxy/proxy.h"
#include "proxy/security.h"

#define SWEEP_MS 5000

/** One admin connection evhttp accepted. */
struct admin_conn {
	struct admin_conns *owner;
	struct bufferevent *bev;        /* one reference is ours */
	bool closecb_set;               /* its evhttp_connection has our close callback */
	struct evhttp_connection *evcon; /* known once closecb_set */
	void (*user_cb)(struct evhttp_connection *evcon, void *arg); /* proxy_admin_conns_on_close */
	void *user_arg;
	struct admin_conn *prev, *next;
};

struct admin_conns {
	struct event_base *base;
	struct admin_transport *transport;
	struct evconnlistener *listener; /* evhttp's, NULL until bound */
	int cap;                         /* admin.max_connections */
	size_t n;                        /* open connections */
	bool paused;                     /* listener disabled at the cap */
	struct admin_conn *head;
	struct event *fixup_ev;          /* new connections: set their close callback */
	struct event *sweep_ev;          /* connections freed without it */
	struct proxy_log_limit log_limit;
	struct metric *m_conns, *m_cap_reached;
};

/* Pause at the cap, resume below it. */
static void conns_check_cap(struct admin_conns *cs)
{
	metric_set(cs->m_conns, (double)cs->n);
	if (!cs->listener)
		return;
	if (!cs->paused && cs->n >= (size_t)cs->cap) {
		cs->paused = true;
		evconnlistener_disable(cs->listener);
		metric_add(cs->m_cap_reached, 1);
		uint64_t swallowed = 0;
		if (proxy_log_allow(&cs->log_limit, mirror_now_ms(), &swallowed))
			LOG_W("admin_connections_at_cap", "connections=%zu max_connections=%d suppressed_since_last_line=%llu "
			      "reason=\"new admin connections wait in the listen backlog until one closes (idle ones "
			      "close after 30 s); the Kafka listener is not affected\"", cs->n, cs->cap,
			      (unsigned long long)swallowed);
	} else if (cs->paused && cs->n < (size_t)cs->cap) {
		cs->paused = false;
		evconnlistener_enable(cs->listener);
		LOG_I("admin_connections_below_cap", "connections=%zu max_connections=%d", cs->n, cs->cap);
	}
}

static void conn_release(struct admin_conn *c)
{
	struct admin_conns *cs = c->owner;
	if (c->prev)
		c->prev->next = c->next;
	else
		cs->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	bufferevent_decref(c->bev);
	free(c);
	cs->n--;
	conns_check_cap(cs);
}

/* evhttp closes the connection (inside evhttp_connection_free or its reset). */
static void conn_closed_cb(struct evhttp_connection *evcon, void *arg)
{
	struct admin_conn *c = arg;
	void (*fn)(struct evhttp_connection *, void *) = c->user_cb;
	void *user_arg = c->user_arg;
	conn_release(c);
	if (fn)
		fn(evcon, user_arg);
}

/* Every callback of the bufferevent was cleared: evhttp freed the connection
 * (bufferevent_free clears all three; evhttp clears only the read callback
 * while it writes a response, which must not count as gone). */
static bool conn_gone(const struct admin_conn *c, void **evcon)
{
	bufferevent_data_cb readcb = NULL, writecb = NULL;
	bufferevent_event_cb eventcb = NULL;
	bufferevent_getcb(c->bev, &readcb, &writecb, &eventcb, evcon);
	return !readcb && !writecb && !eventcb;
}

void proxy_admin_conns_on_close(struct admin_conns *cs, struct evhttp_connection *evcon,
				void (*fn)(struct evhttp_connection *evcon, void *arg), void *arg)
{
	for (struct admin_conn *c = cs ? cs->head : NULL; c; c = c->next) {
		void *e = c->evcon;
		if (!c->closecb_set)
			bufferevent_getcb(c->bev, NULL, NULL, NULL, &e);
		if (e == evcon) {
			c->user_cb = fn;
			c->user_arg = arg;
			return;
		}
	}
	evhttp_connection_set_closecb(evcon, fn, arg); /* not counted (out of memory) */
}

static void fixup_cb(evutil_socket_t fd, short what, void *arg)
{
	struct admin_conns *cs = arg;
	struct admin_conn *c = cs->head, *next;
	for (; c; c = next) {
		next = c->next;
		if (c->closecb_set)
			continue;
		void *evcon = NULL;
		if (conn_gone(c, &evcon) || !evcon) {
			conn_release(c);
			continue;
		}
		evhttp_connection_set_closecb(evcon, conn_closed_cb, c);
		c->closecb_set = true;
		c->evcon = evcon;
	}
}

static void sweep_cb(evutil_socket_t fd, short what, void *arg)
{
	struct admin_conns *cs = arg;
	struct admin_conn *c = cs->head, *next;
	for (; c; c = next) {
		next = c->next;
		void *evcon = NULL;
		if (c->closecb_set && conn_gone(c, &evcon))
			conn_release(c);
	}
}

/* evhttp_set_bevcb: the bufferevent of a connection evhttp just accepted. */
static struct bufferevent *conn_new_bev(struct event_base *base, void *arg)
{
	struct admin_conns *cs = arg;
	struct bufferevent *bev = proxy_admin_transport_bev(cs->transport, base);
	struct admin_conn *c = bev ? calloc(1, sizeof(*c)) : NULL;
	if (!c)
		return bev; /* not counted (out of memory) */
	c->owner = cs;
	c->bev = bev;
	bufferevent_incref(bev);
	c->next = cs->head;
	if (cs->head)
		cs->head->prev = c;
	cs->head = c;
	cs->n++;
	event_active(cs->fixup_ev, EV_TIMEOUT, 0);
	conns_check_cap(cs);
	return bev;
}

struct admin_conns *proxy_admin_conns_new(struct event_base *base, struct evhttp *http,
					  struct admin_transport *transport, const struct conf *conf)
{
	struct admin_conns *cs = calloc(1, sizeof(*cs));
	if (!cs)
		return NULL;
	cs->base = base;
	cs->transport = transport;
	cs->cap = conf->admin_max_connections;
	cs->m_conns = metric_get(METRIC_GAUGE, "syncgate_admin_connections",
				 "Open admin HTTP connections (at most admin.max_connections).", "", NULL, 0);
	cs->m_cap_reached = metric_get(METRIC_COUNTER, "syncgate_admin_connection_cap_reached_total",
				       "Times the admin listener stopped accepting at admin.max_connections.",
				       "", NULL, 0);
	cs->fixup_ev = event_new(base, -1, 0, fixup_cb, cs);
	cs->sweep_ev = event_new(base, -1, EV_PERSIST, sweep_cb, cs);
	struct timeval tv = { SWEEP_MS / 1000, (SWEEP_MS % 1000) * 1000 };
	if (!cs->fixup_ev || !cs->sweep_ev || event_add(cs->sweep_ev, &tv) != 0) {
		proxy_admin_conns_free(cs);
		return NULL;
	}
	evhttp_set_bevcb(http, conn_new_bev, cs);
	return cs;
}

void proxy_admin_conns_bound(struct admin_conns *cs, struct evhttp_bound_socket *bound)
{
	cs->listener = bound ? evhttp_bound_socket_get_listener(bound) : NULL;
	conns_check_cap(cs);
}

void proxy_admin_conns_reconfigure(struct admin_conns *cs, const struct conf *conf)
{
	if (cs->cap != conf->admin_max_connections)
		LOG_I("admin_max_connections_changed", "from=%d to=%d", cs->cap, conf->admin_max_connections);
	cs->cap = conf->admin_max_connections;
	conns_check_cap(cs);
}

void proxy_admin_conns_free(struct admin_conns *cs)
{
	if (!cs)
		return;
	while (cs->head) { /* evhttp_free closed them all: their close callbacks ran */
		struct admin_conn *c = cs->head;
		cs->head = c->next;
		bufferevent_decref(c->bev);
		free(c);
	}
	if (cs->fixup_ev)
		event_free(cs->fixup_ev);
	if (cs->sweep_ev)
		event_free(cs->sweep_ev);
	free(cs);
}
