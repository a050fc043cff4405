/*
 * fence.c — the failover fence in the Produce path (docs/operating.md
 * "Failover"). A Produce request naming a topic that a mirror's failover
 * fenced (mirror_gate_fenced_by) is answered here and never forwarded, so
 * the old source appends nothing new — for every acks value:
 *   acks=all / acks=1: every partition of the request answers
 *     NOT_ENOUGH_REPLICAS (19) with a message naming the fence: retriable in
 *     every client, it means "not appended" (unlike ..._AFTER_APPEND), so an
 *     idempotent producer keeps its sequence state and retries without a
 *     metadata refresh storm (NOT_LEADER_OR_FOLLOWER would send every client
 *     to Metadata in a loop while the fence stands). Partitions of unfenced
 *     topics in the same request get the same code (the request is refused
 *     whole: it is never split).
 *   acks=0: there is no response to carry an error, and dropping the records
 *     silently is not allowed: the connection is closed (the client sees a
 *     disconnect and reconnects).
 * While any fence stands, a Produce v13 naming a TopicId this sidecar cannot
 * resolve may be writing to a fenced topic: it is refused the same way
 * (NOT_ENOUGH_REPLICAS, acks=0: closed) while a lookup (topic_lookup.c) asks
 * the broker, so the client's retry is decided by name.
 * Loop thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/datapath.h"
#include "proxy/security.h"

static struct metric *m_refused, *m_parts;

static const struct metric_def fence_metrics[] = {
	{ &m_refused, METRIC_COUNTER, "syncgate_produce_fenced_requests_total",
	  "Produce requests refused because a topic is fenced for failover (answered "
	  "NOT_ENOUGH_REPLICAS, or acks=0: connection closed)." },
	{ &m_parts, METRIC_COUNTER, "syncgate_produce_fenced_partitions_total",
	  "Produce partitions refused because of a failover fence." },
};

static const char *req_topic_name(struct proxy_conn *c, const struct codec_produce_topic_req *t)
{
	return t->name ? t->name : proxy_topic_ids_name(c->srv->topic_ids, t->topic_id);
}

/* Why the fence refuses a Produce, per topic of the request. */
struct refusal {
	struct proxy_conn *c;
	const char *fenced_topic, *mirror; /* mirror NULL: an unresolved TopicId while a fence stands */
};

static void refusal_msg(void *arg, const struct codec_produce_topic_req *t, char *buf, size_t n)
{
	const struct refusal *r = arg;
	const char *name = req_topic_name(r->c, t);
	if (!r->mirror)
		snprintf(buf, n, "syncgate: a failover fence stands and this request names a TopicId not "
			 "resolved yet; retry");
	else if (name && mirror_gate_fenced_by(r->c->srv->gate, name))
		snprintf(buf, n, "syncgate: topic %s is fenced for the failover of mirror %s; produce to the new "
			 "primary (syncgate-ctl unfence lifts the fence)", name, r->mirror);
	else
		snprintf(buf, n, "syncgate: refused with partitions of topic %s, fenced for the failover of mirror "
			 "%s, in the same request", r->fenced_topic, r->mirror);
}

/* The Produce response refusing every partition of `req` (NOT_ENOUGH_REPLICAS), as a READY entry. */
static int answer_refused(struct proxy_conn *c, const struct codec_request_header *h, int16_t wire_version,
			  const struct codec_produce_request *req, const char *fenced_topic, const char *mirror)
{
	struct refusal r = { c, fenced_topic, mirror };
	if (proxy_fifo_refuse_produce(c, h, wire_version, req, CODEC_ERROR_NOT_ENOUGH_REPLICAS, refusal_msg, &r) < 0)
		return -1;
	size_t nparts = 0;
	for (size_t t = 0; t < req->ntopics; t++)
		nparts += req->topics[t].npartitions;
	metric_add(m_parts, (double)nparts);
	return 0;
}

int proxy_fence_produce(struct proxy_conn *c, struct evbuffer *in, size_t len, const struct codec_request_header *h,
			int16_t wire_version, const struct codec_produce_request *req)
{
	if (!c->srv->gate || c->srv->switched)
		return 0; /* switched: the fence was the source's; the destination takes the topic now */
	const char *mirror = NULL, *topic = NULL;
	bool unresolved = false;
	for (size_t t = 0; t < req->ntopics && !mirror; t++) {
		topic = req_topic_name(c, &req->topics[t]);
		mirror = topic ? mirror_gate_fenced_by(c->srv->gate, topic) : NULL;
		unresolved |= !topic;
	}
	if (!mirror && unresolved && mirror_gate_any_fenced(c->srv->gate)) {
		/* a TopicId this sidecar cannot name may be a fenced topic: refused
		 * (retriable) while its broker is asked; the retry is decided by name */
		for (size_t t = 0; t < req->ntopics; t++)
			if (!req_topic_name(c, &req->topics[t]))
				proxy_topic_id_unresolved(c, req->topics[t].topic_id,
							  proxy_topic_ids_resolve(c->srv->topic_ids,
										  req->topics[t].topic_id, NULL),
							  PROXY_TOPIC_ID_API_PRODUCE, PROXY_TOPIC_ID_FAILED);
		if (req->acks == 0 || proxy_topic_lookup_ahead(c, NULL, 0) < 0)
			return -1;
		METRIC_DEFS_GET(fence_metrics);
		metric_add(m_refused, 1);
		if (answer_refused(c, h, wire_version, req, "?", NULL) < 0)
			return -1;
		evbuffer_drain(in, len + 4);
		proxy_fifo_flush(c);
		return 1;
	}
	if (!mirror)
		return 0;
	METRIC_DEFS_GET(fence_metrics);
	metric_add(m_refused, 1);
	/* one line a second at most: a producer retries in a loop */
	static struct proxy_log_limit fenced_log;
	uint64_t suppressed = 0;
	if (proxy_log_allow(&fenced_log, mirror_now_ms(), &suppressed))
		LOG_W("produce_fenced", "conn=%llu peer=%s topic=%s mirror=%s acks=%d action=%s suppressed=%llu",
		      (unsigned long long)c->id, c->peer, topic, mirror, req->acks,
		      req->acks == 0 ? "close (acks=0: no response to refuse with)" : "refused NOT_ENOUGH_REPLICAS",
		      (unsigned long long)suppressed);
	if (req->acks == 0)
		return -1;
	if (answer_refused(c, h, wire_version, req, topic, mirror) < 0)
		return -1;
	evbuffer_drain(in, len + 4);
	proxy_fifo_flush(c);
	return 1;
}
