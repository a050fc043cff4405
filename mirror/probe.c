/*
 * probe.c — the compatibility probe (probe.h) on a short-lived thread
 * (librdkafka metadata calls block), and the metadata helpers that
 * failover_job.c shares (mirror_rk_partitions, mirror_rk_unreachable).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mirror/probe.h"
#include "mirror/worker.h"

#define PROBE_RPC_MS 4000

bool mirror_rk_unreachable(int e)
{
	return e == RD_KAFKA_RESP_ERR__TRANSPORT || e == RD_KAFKA_RESP_ERR__TIMED_OUT ||
	       e == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN || e == RD_KAFKA_RESP_ERR__RESOLVE;
}

int32_t mirror_rk_partitions(rd_kafka_t *rk, const char *topic, char *err, size_t errcap)
{
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_resp_err_t e = rkt ? rd_kafka_metadata(rk, 0, rkt, &md, PROBE_RPC_MS) : RD_KAFKA_RESP_ERR__FAIL;
	int32_t n;
	if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
		snprintf(err, errcap, "%s", rd_kafka_err2str(e));
		n = mirror_rk_unreachable(e) ? -2 : -1;
	} else if (md->topic_cnt < 1 || md->topics[0].err) {
		snprintf(err, errcap, "%s",
			 md->topic_cnt < 1 ? "no metadata" : rd_kafka_err2str(md->topics[0].err));
		n = -1;
	} else {
		n = md->topics[0].partition_cnt;
	}
	if (md)
		rd_kafka_metadata_destroy(md);
	if (rkt)
		rd_kafka_topic_destroy(rkt);
	return n;
}

static void *probe_main(void *arg)
{
	struct mirror_probe *p = arg;
	char errstr[512], why[256];
	rd_kafka_t *dst = rd_kafka_new(RD_KAFKA_CONSUMER, p->dst_conf, errstr, sizeof(errstr));
	if (dst)
		p->dst_conf = NULL;
	rd_kafka_t *src = rd_kafka_new(RD_KAFKA_CONSUMER, p->src_conf, errstr, sizeof(errstr));
	if (src)
		p->src_conf = NULL;
	int32_t dn = dst ? mirror_rk_partitions(dst, p->dst_topic, why, sizeof(why)) : -2;
	if (dn == -2) {
		p->result = 2;
		snprintf(p->message, sizeof(p->message),
			 "destination of mirror %s unreachable (%.120s): compatibility not checked", p->mirror,
			 dst ? why : errstr);
	} else if (dn == -1) {
		p->result = 1;
		snprintf(p->message, sizeof(p->message), "destination topic %s does not exist on mirror %s (%.120s)",
			 p->dst_topic, p->mirror, why);
	}
	if (p->result != 1 && src) {
		int32_t sn = mirror_rk_partitions(src, p->src_topic, why, sizeof(why));
		if (sn == -1) {
			p->result = 1;
			snprintf(p->message, sizeof(p->message), "source topic %s does not exist (%.120s)", p->src_topic,
				 why);
		} else if (sn >= 0 && dn >= 0 && sn != dn) {
			p->result = 1;
			snprintf(p->message, sizeof(p->message),
				 "partition count differs: source topic %s has %d, destination topic %s on mirror %s has %d",
				 p->src_topic, (int)sn, p->dst_topic, p->mirror, (int)dn);
		} else if (sn >= 0 && p->mm2_topic && mirror_rk_partitions(src, p->mm2_topic, why, sizeof(why)) == -1) {
			p->result = 1;
			snprintf(p->message, sizeof(p->message),
				 "offsets strategy mm2 unusable: offset-syncs topic %s does not exist on the source (%.120s)",
				 p->mm2_topic, why);
		}
	}
	if (dst)
		rd_kafka_destroy(dst);
	if (src)
		rd_kafka_destroy(src);
	if (mirror_bridge_post_msg(p->bridge, MIRROR_MSG_PROBE_DONE, 0, p, NULL, 0) != 0)
		LOG_E("mirror_probe_post_failed", "mirror=%s reason=\"out of memory\"", p->mirror);
	return NULL;
}

void mirror_probe_free(struct mirror_probe *p)
{
	if (p->src_conf)
		rd_kafka_conf_destroy(p->src_conf);
	if (p->dst_conf)
		rd_kafka_conf_destroy(p->dst_conf);
	free(p->mirror);
	free(p->src_topic);
	free(p->dst_topic);
	free(p->mm2_topic);
	free(p);
}

struct mirror_probe *mirror_probe_start(struct mirror_gate *g, struct mirror_op *op, struct mirror_link *l,
					const char *topic)
{
	struct mirror_probe *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->bridge = g->bridge;
	p->op = op;
	p->mirror = strdup(l->name);
	p->src_topic = strdup(topic);
	p->dst_topic = mirror_destination_topic(conf_mirror_topic_name(l->cm), topic);
	if (l->cm->offsets == CONF_OFFSETS_MM2)
		p->mm2_topic = conf_mirror_offset_syncs_topic(l->cm);
	p->dst_conf = mirror_dest_conf(l->cm);
	p->src_conf = mirror_source_conf(g->conf, l->name, "probe", false);
	if (!p->mirror || !p->src_topic || !p->dst_topic || !p->dst_conf || !p->src_conf ||
	    (l->cm->offsets == CONF_OFFSETS_MM2 && !p->mm2_topic) ||
	    pthread_create(&p->th, NULL, probe_main, p) != 0) {
		mirror_probe_free(p);
		return NULL;
	}
	p->next = g->probes;
	g->probes = p;
	return p;
}
