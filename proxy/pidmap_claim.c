/*
 * pidmap_claim.c — one destination producer id per client producer on
 * every switched sidecar (docs/switchover.md "Producer state").
 *
 * A client's retries can reach another sidecar after the switch (it reads
 * Metadata from any of them, and each advertises the destination's nodes at
 * its own listeners). Were each sidecar to map the client's (producer id,
 * epoch) to an id of its own, the destination would store such a retry a
 * second time. So the id a sidecar's own InitProducerId got (pidmap.c) is
 * only a claim: it goes into the state log (mirror_gate_claim_producer) and
 * the Produce keeps waiting (c->pid_wait, c->pid_claiming) until the log
 * gives back the first claim of that (client, producer id, epoch) — this
 * sidecar's, or one another sidecar appended before it. Every sidecar learns
 * every claim in log order and keeps the first (claim_applied), so they all
 * map the client alike, and a restarted sidecar learns them again while it
 * reads the log. No state log (or it cannot be appended to): the sidecar's
 * own id, as before. A claim the log has not given back within
 * PROXY_PIDMAP_CLAIM_MS (the source cluster holding the log is unreachable)
 * falls back to the sidecar's own id, with a WARN: a retry through another
 * sidecar may then be stored twice, nothing is lost. Loop thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/datapath.h"
#include "proxy/security.h"

static struct metric *m_claims[3];
static const char *const claim_names[3] = { "own", "other", "timeout" };
enum { CLAIM_OWN, CLAIM_OTHER, CLAIM_TIMEOUT };

static void claim_metrics_init(void)
{
	if (m_claims[0])
		return;
	metric_family_get(METRIC_COUNTER, "syncgate_switch_producer_id_claims_total",
			  "Destination producer ids a switched sidecar claimed in the state log for a client "
			  "producer, by which one it then used: own (its claim was the first), other (another "
			  "sidecar's claim came first), timeout (the log gave nothing back in time: its own).",
			  NULL, "used", claim_names, 3, m_claims);
}

void proxy_pidmap_resume(struct proxy_conn *c)
{
	c->pid_wait = false;
	c->pid_claiming = false;
	c->pid_again = true;
	if (!c->client)
		return;
	c->ops->update_flow(c);
	if (evbuffer_get_length(bufferevent_get_input(c->client)) >= 4)
		bufferevent_trigger(c->client, EV_READ, BEV_OPT_DEFER_CALLBACKS);
}

static bool same_key(const struct mirror_producer_claim *a, const struct mirror_producer_claim *b)
{
	return a->client == b->client && a->producer_id == b->producer_id && a->epoch == b->epoch;
}

/* A record from the log (every sidecar's, in log order): the first of a key is kept. */
static void claim_applied(void *arg, const char *mirror, const struct mirror_producer_claim *pc)
{
	struct proxy_server *srv = arg;
	if (!srv->switched || strcmp(mirror, srv->switch_mirror) != 0)
		return; /* another destination's ids (the SWITCH record comes first in the log) */
	if (!srv->pidmap && !(srv->pidmap = proxy_pidmap_new(PROXY_PIDMAP_CAP)))
		return;
	int64_t pid;
	int16_t epoch;
	if (!proxy_pidmap_lookup(srv->pidmap, pc->client, pc->producer_id, pc->epoch, &pid, &epoch))
		proxy_pidmap_learn(srv->pidmap, pc->client, pc->producer_id, pc->epoch, pc->dest_producer_id,
				   pc->dest_epoch);
	struct proxy_conn *c, *next;
	for (c = TAILQ_FIRST(&srv->conns); c; c = next) {
		next = TAILQ_NEXT(c, link);
		if (!c->pid_claiming || !same_key(&c->pid_claim, pc) || c->state == PROXY_CONN_CLOSING)
			continue;
		claim_metrics_init();
		proxy_pidmap_lookup(srv->pidmap, pc->client, pc->producer_id, pc->epoch, &pid, &epoch);
		metric_add(m_claims[pid == c->pid_claim.dest_producer_id && epoch == c->pid_claim.dest_epoch
					    ? CLAIM_OWN : CLAIM_OTHER], 1);
		proxy_pidmap_resume(c);
	}
}

/* A claim still waiting after PROXY_PIDMAP_CLAIM_MS: the connection found again by id. */
struct claim_wait {
	struct proxy_server *srv;
	uint64_t conn;
	struct mirror_producer_claim pc;
};

static void claim_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct claim_wait *w = arg;
	(void)fd;
	(void)what;
	struct proxy_conn *c = proxy_conn_by_id(w->srv, w->conn);
	if (c && c->pid_claiming && same_key(&c->pid_claim, &w->pc) && c->state != PROXY_CONN_CLOSING) {
		int64_t pid;
		int16_t epoch;
		if (!proxy_pidmap_lookup(w->srv->pidmap, w->pc.client, w->pc.producer_id, w->pc.epoch, &pid, &epoch))
			proxy_pidmap_learn(w->srv->pidmap, w->pc.client, w->pc.producer_id, w->pc.epoch,
					   w->pc.dest_producer_id, w->pc.dest_epoch);
		claim_metrics_init();
		metric_add(m_claims[CLAIM_TIMEOUT], 1);
		static struct proxy_log_limit timeout_log;
		uint64_t suppressed = 0;
		if (proxy_log_allow(&timeout_log, mirror_now_ms(), &suppressed))
			LOG_W("producer_id_claim_timeout", "conn=%llu peer=%s producer_id=%lld epoch=%d "
			      "dest_producer_id=%lld timeout_ms=%d suppressed=%llu reason=\"the state log did not "
			      "give the claim back in time: this sidecar's own destination id is used; a retry "
			      "through another sidecar may be stored twice\"", (unsigned long long)c->id, c->peer,
			      (long long)w->pc.producer_id, w->pc.epoch, (long long)w->pc.dest_producer_id,
			      PROXY_PIDMAP_CLAIM_MS, (unsigned long long)suppressed);
		proxy_pidmap_resume(c);
	}
	free(w);
}

bool proxy_pidmap_claim(struct proxy_conn *c, const struct mirror_producer_claim *pc)
{
	struct proxy_server *srv = c->srv;
	if (!srv->gate || !srv->switched)
		return false;
	struct claim_wait *w = malloc(sizeof(*w));
	struct timeval tv = { PROXY_PIDMAP_CLAIM_MS / 1000, (PROXY_PIDMAP_CLAIM_MS % 1000) * 1000 };
	if (!w)
		return false;
	*w = (struct claim_wait){ .srv = srv, .conn = c->id, .pc = *pc };
	if (mirror_gate_claim_producer(srv->gate, srv->switch_mirror, pc) < 0 ||
	    event_base_once(srv->base, -1, EV_TIMEOUT, claim_timeout_cb, w, &tv) < 0) {
		free(w);
		return false;
	}
	c->pid_claim = *pc;
	c->pid_claiming = true; /* c->pid_wait stays */
	return true;
}

void proxy_pidmap_claims_register(struct proxy_server *srv)
{
	if (srv->gate)
		mirror_gate_on_producer_claim(srv->gate, claim_applied, srv);
}
