/*
 * failover_match.c — the failover's `offsets: mm2` drain proved by record
 * match (mirror/mm2_match.h): past a partition's latest offset-sync, the
 * source records up to the source HW and the destination records up to the
 * destination HW are fingerprinted and matched in order, as the gate's
 * match thread does; the last proved pair joins the partition's syncs, so
 * the drain, the last-record comparison and the consumer-offset
 * translation all go by it. The destination is read with a read_committed
 * client (only records below its last stable offset). Job thread only.
 */
#include <stdlib.h>

#include "mirror/failover.h"
#include "mirror/mm2_match.h"

#define FO_MATCH_MAX 200000 /* records read per side and partition (a drain is near its end) */
#define FO_MATCH_PAIRS 1000 /* proved pairs kept per partition and round */

/* Records from <= offset < to of (topic, p), in order, fingerprinted into
 * *out (malloc'd); how many. Stops early at the partition's end, an error
 * or FO_RPC_MS: what was read is a contiguous prefix all the same. */
static size_t read_fps(rd_kafka_t *rk, const char *topic, int32_t p, int64_t from, int64_t to,
		       struct mirror_mrec **out)
{
	*out = NULL;
	size_t n = 0, cap = 0;
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
	if (!rkt || to <= from || rd_kafka_consume_start(rkt, p, from) != 0) {
		if (rkt)
			rd_kafka_topic_destroy(rkt);
		return 0;
	}
	int64_t deadline = mirror_now_ms() + FO_RPC_MS;
	while (mirror_now_ms() < deadline && n < FO_MATCH_MAX) {
		rd_kafka_message_t *m = rd_kafka_consume(rkt, p, 500);
		if (!m)
			continue;
		bool end = m->err || m->offset >= to;
		if (!end) {
			if (n == cap) {
				size_t nc = cap ? 2 * cap : 1024;
				struct mirror_mrec *a = realloc(*out, nc * sizeof(*a));
				if (!a)
					end = true;
				else
					*out = a, cap = nc;
			}
			if (!end && mirror_mm2_fingerprint(m, (*out)[n].fp) == 0)
				(*out)[n++].offset = m->offset;
			else
				end = true;
			end = end || m->offset >= to - 1;
		}
		rd_kafka_message_destroy(m);
		if (end)
			break;
	}
	rd_kafka_consume_stop(rkt, p);
	rd_kafka_topic_destroy(rkt);
	return n;
}

void mirror_failover_mm2_prove(rd_kafka_t *src, rd_kafka_t *dstc, const struct fo_topic *t, struct fo_part *fp)
{
	const struct fo_sync *s = mirror_failover_mm2_latest(fp);
	if (!s || fp->src_hw <= s->up + 1 || fp->dst_hw <= s->down + 1)
		return; /* no anchor, nothing past it on the source, or nothing copied past it */
	struct mirror_mrec *sr, *dr;
	size_t ns = read_fps(src, t->topic, fp->partition, s->up + 1, fp->src_hw, &sr);
	size_t nd = read_fps(dstc, t->dst, fp->partition, s->down + 1, fp->dst_hw, &dr);
	size_t si = 0, di = 0;
	size_t *at = calloc(ns ? ns : 1, sizeof(*at));
	if (at)
		mirror_mm2_match(sr, ns, dr, nd, &si, &di, ns, at);
	/* the proved pairs join the syncs: every one up to FO_MATCH_PAIRS (the
	 * consumer-offset translation is then exact for them), else evenly spaced,
	 * the last always */
	size_t step = si > FO_MATCH_PAIRS ? si / FO_MATCH_PAIRS + 1 : 1;
	for (size_t k = si % step ? si % step - 1 : step - 1; k < si; k += step) {
		if (fp->nsyncs == fp->capsyncs) {
			size_t nc = fp->capsyncs ? 2 * fp->capsyncs : 64;
			struct fo_sync *a = realloc(fp->syncs, nc * sizeof(*a));
			if (!a)
				break;
			fp->syncs = a, fp->capsyncs = nc;
		}
		fp->syncs[fp->nsyncs++] = (struct fo_sync){sr[k].offset, dr[at[k]].offset};
	}
	free(at);
	free(sr);
	free(dr);
}
