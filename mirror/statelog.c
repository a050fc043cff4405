/*
 * statelog.c — the state log (docs/architecture.md; KIP __mirror_state): an ordered
 * Kafka topic on the SOURCE cluster (conf state.topic, one partition) that
 * every sidecar of the cluster reads from the beginning at boot and then
 * tails, folding its records with the same deterministic rules
 * (lifecycle.c), so all sidecars agree on every (mirror, topic)'s type.
 *
 * One thread owns three librdkafka handles on the source (upstream.broker,
 * upstream.tls, as the progress workers' source client):
 *   prod    idempotent acks=all producer; records are appended by the loop
 *           thread (rd_kafka_producev is non-blocking and thread-safe) and
 *           the thread serves its delivery reports.
 *   tail    consumer assigned to partition 0 from the beginning, no commits;
 *           every record goes to the loop through the gate's bridge, then
 *           "caught up" once the boot high watermark was read.
 *   decider consumer in group "syncgate-decider-<topic>", subscribed to the
 *           topic: the member that holds partition 0 takes the automatic
 *           decisions (promotion REGISTER, timeout DEMOTE); the others only
 *           apply. Its only job is membership; its messages are dropped.
 * The topic is created when missing (replication factor state.replication_factor
 * capped by the broker count, retention.ms=-1, cleanup.policy=delete).
 */
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mirror/internal.h"

struct mirror_statelog {
	pthread_t th;
	pthread_mutex_t mu;
	bool stop;                  /* under mu */
	char *topic;
	int rf;
	struct mirror_bridge *bridge;
	rd_kafka_t *prod;           /* created on start (loop thread); producev from the loop */
	rd_kafka_conf_t *tail_conf, *dec_conf; /* consumed by the thread */
	/* thread only */
	rd_kafka_t *tail, *dec;
	int64_t boot_hw;
	bool caught_up;
	bool started;               /* thread running */
};

static bool stopping(struct mirror_statelog *s)
{
	pthread_mutex_lock(&s->mu);
	bool v = s->stop;
	pthread_mutex_unlock(&s->mu);
	return v;
}

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	if (m->err)
		LOG_E("mirror_state_append_failed", "topic=%s reason=\"%s\"", rd_kafka_topic_name(m->rkt),
		      rd_kafka_err2str(m->err));
}

static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *parts,
			 void *opaque)
{
	struct mirror_statelog *s = opaque;
	bool holds = false;
	if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
		for (int i = 0; i < parts->cnt; i++)
			holds |= parts->elems[i].partition == 0 && strcmp(parts->elems[i].topic, s->topic) == 0;
		rd_kafka_assign(rk, parts);
	} else {
		rd_kafka_assign(rk, NULL);
	}
	mirror_bridge_post_msg(s->bridge, MIRROR_MSG_DECIDER, holds ? 1 : 0, NULL, NULL, 0);
}

static int set(rd_kafka_conf_t *c, const char *name, const char *value)
{
	char errstr[256];
	if (rd_kafka_conf_set(c, name, value, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) {
		LOG_E("mirror_state_property_invalid", "property=%s reason=\"%s\"", name, errstr);
		return -1;
	}
	return 0;
}

/* Create the topic when missing; 0 when it exists now. Thread. */
static int ensure_topic(struct mirror_statelog *s)
{
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_resp_err_t e = rd_kafka_metadata(s->prod, 1, NULL, &md, 5000);
	if (e) {
		LOG_W("mirror_state_metadata_failed", "topic=%s reason=\"%s\"", s->topic, rd_kafka_err2str(e));
		return -1;
	}
	mirror_route_learn(md);
	bool exists = false;
	for (int i = 0; i < md->topic_cnt; i++)
		exists |= strcmp(md->topics[i].topic, s->topic) == 0 && !md->topics[i].err;
	int brokers = md->broker_cnt;
	rd_kafka_metadata_destroy(md);
	if (exists)
		return 0;
	int rf = s->rf > 0 ? s->rf : 1;
	if (brokers > 0 && rf > brokers)
		rf = brokers;
	char errstr[256];
	rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(s->topic, 1, rf, errstr, sizeof(errstr));
	if (!nt) {
		LOG_E("mirror_state_topic_invalid", "topic=%s reason=\"%s\"", s->topic, errstr);
		return -1;
	}
	rd_kafka_NewTopic_set_config(nt, "retention.ms", "-1");
	rd_kafka_NewTopic_set_config(nt, "cleanup.policy", "delete");
	rd_kafka_queue_t *q = rd_kafka_queue_new(s->prod);
	rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(s->prod, RD_KAFKA_ADMIN_OP_CREATETOPICS);
	rd_kafka_AdminOptions_set_operation_timeout(o, 5000, errstr, sizeof(errstr));
	rd_kafka_CreateTopics(s->prod, &nt, 1, o, q);
	rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 10000);
	int rc = -1;
	if (ev) {
		const rd_kafka_CreateTopics_result_t *res = rd_kafka_event_CreateTopics_result(ev);
		size_t n = 0;
		const rd_kafka_topic_result_t **tr = res ? rd_kafka_CreateTopics_result_topics(res, &n) : NULL;
		rd_kafka_resp_err_t te = rd_kafka_event_error(ev);
		if (!te && n == 1)
			te = rd_kafka_topic_result_error(tr[0]);
		if (!te || te == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
			LOG_I("mirror_state_topic_created", "topic=%s replication_factor=%d existed=%s", s->topic, rf,
			      te ? "true" : "false");
			rc = 0;
		} else {
			LOG_W("mirror_state_topic_create_failed", "topic=%s reason=\"%s\"", s->topic,
			      rd_kafka_err2str(te));
		}
		rd_kafka_event_destroy(ev);
	}
	rd_kafka_AdminOptions_destroy(o);
	rd_kafka_queue_destroy(q);
	rd_kafka_NewTopic_destroy(nt);
	return rc;
}

static void sleep_ms(struct mirror_statelog *s, int ms)
{
	for (int i = 0; i < ms / 50 && !stopping(s); i++)
		usleep(50000);
}

static void *statelog_main(void *arg)
{
	struct mirror_statelog *s = arg;
	char errstr[512];
	while (!stopping(s) && ensure_topic(s) != 0)
		sleep_ms(s, 1000);
	s->tail = rd_kafka_new(RD_KAFKA_CONSUMER, s->tail_conf, errstr, sizeof(errstr));
	if (!s->tail) {
		LOG_E("mirror_state_client_failed", "role=tail reason=\"%s\"", errstr);
		return NULL;
	}
	s->tail_conf = NULL;
	rd_kafka_conf_set_opaque(s->dec_conf, s);
	rd_kafka_conf_set_rebalance_cb(s->dec_conf, rebalance_cb);
	s->dec = rd_kafka_new(RD_KAFKA_CONSUMER, s->dec_conf, errstr, sizeof(errstr));
	if (!s->dec) {
		LOG_E("mirror_state_client_failed", "role=decider reason=\"%s\"", errstr);
		return NULL;
	}
	s->dec_conf = NULL;
	rd_kafka_poll_set_consumer(s->dec);
	/* Boot high watermark: "caught up" once read up to it. */
	int64_t lo = 0, hi = -1;
	while (!stopping(s)) {
		rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(s->tail, s->topic, 0, &lo, &hi, 5000);
		if (!e)
			break;
		LOG_W("mirror_state_watermark_failed", "topic=%s reason=\"%s\"", s->topic, rd_kafka_err2str(e));
		sleep_ms(s, 500);
	}
	s->boot_hw = hi;
	LOG_I("mirror_state_log_reading", "topic=%s records=%" PRId64, s->topic, hi - lo);
	if (hi <= lo) {
		s->caught_up = true;
		mirror_bridge_post_msg(s->bridge, MIRROR_MSG_STATE_CAUGHT_UP, hi, NULL, NULL, 0);
	}
	rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(tp, s->topic, 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
	rd_kafka_assign(s->tail, tp);
	rd_kafka_topic_partition_list_destroy(tp);
	rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(sub, s->topic, RD_KAFKA_PARTITION_UA);
	rd_kafka_resp_err_t se = rd_kafka_subscribe(s->dec, sub);
	rd_kafka_topic_partition_list_destroy(sub);
	if (se)
		LOG_E("mirror_state_decider_subscribe_failed", "reason=\"%s\"", rd_kafka_err2str(se));

	while (!stopping(s)) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(s->tail, 20);
		if (m) {
			if (!m->err) {
				if (mirror_bridge_post_msg(s->bridge, MIRROR_MSG_STATE_RECORD, m->offset, NULL, m->payload,
							   m->payload ? m->len : 0) != 0)
					LOG_E("mirror_state_record_dropped", "offset=%" PRId64 " reason=\"out of memory\"",
					      m->offset);
				if (!s->caught_up && m->offset + 1 >= s->boot_hw) {
					s->caught_up = true;
					mirror_bridge_post_msg(s->bridge, MIRROR_MSG_STATE_CAUGHT_UP, m->offset, NULL, NULL, 0);
				}
			} else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
				LOG_W("mirror_state_read_failed", "topic=%s reason=\"%s\"", s->topic,
				      rd_kafka_message_errstr(m));
			}
			rd_kafka_message_destroy(m);
		}
		rd_kafka_message_t *d = rd_kafka_consumer_poll(s->dec, 0);
		if (d)
			rd_kafka_message_destroy(d);
		rd_kafka_poll(s->prod, 0);
	}
	return NULL;
}

struct mirror_statelog *mirror_statelog_start(const struct conf *conf, struct mirror_bridge *b)
{
	struct mirror_statelog *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	pthread_mutex_init(&s->mu, NULL);
	s->bridge = b;
	s->rf = conf->state_replication_factor;
	s->topic = strdup(conf->state_topic ? conf->state_topic : "__syncgate_state");
	rd_kafka_conf_t *pc = mirror_source_conf(conf, "state", "producer", true);
	s->tail_conf = mirror_source_conf(conf, "state", "tail", false);
	s->dec_conf = mirror_source_conf(conf, "state", "decider", false);
	char group[400], errstr[512];
	snprintf(group, sizeof(group), "syncgate-decider-%s", s->topic ? s->topic : "");
	if (!s->topic || !pc || !s->tail_conf || !s->dec_conf ||
	    set(pc, "enable.idempotence", "true") || set(pc, "acks", "all") || set(pc, "linger.ms", "0") ||
	    set(s->tail_conf, "fetch.wait.max.ms", "20") || set(s->tail_conf, "fetch.error.backoff.ms", "100") ||
	    set(s->dec_conf, "group.id", group) || set(s->dec_conf, "session.timeout.ms", "6000") ||
	    set(s->dec_conf, "heartbeat.interval.ms", "1000") || set(s->dec_conf, "auto.offset.reset", "latest") ||
	    set(s->dec_conf, "fetch.wait.max.ms", "500"))
		goto fail;
	rd_kafka_conf_set_dr_msg_cb(pc, dr_cb);
	s->prod = rd_kafka_new(RD_KAFKA_PRODUCER, pc, errstr, sizeof(errstr));
	if (!s->prod) {
		LOG_E("mirror_state_client_failed", "role=producer reason=\"%s\"", errstr);
		goto fail;
	}
	pc = NULL;
	if (pthread_create(&s->th, NULL, statelog_main, s) != 0)
		goto fail;
	s->started = true;
	LOG_I("mirror_state_log_started", "topic=%s decider_group=%s", s->topic, group);
	return s;
fail:
	if (pc)
		rd_kafka_conf_destroy(pc);
	mirror_statelog_stop(s);
	return NULL;
}

void mirror_statelog_stop(struct mirror_statelog *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	pthread_mutex_unlock(&s->mu);
	if (s->started)
		pthread_join(s->th, NULL);
	if (s->dec) {
		rd_kafka_consumer_close(s->dec); /* leave the group: another sidecar decides at once */
		rd_kafka_destroy(s->dec);
	}
	if (s->tail) {
		rd_kafka_consumer_close(s->tail);
		rd_kafka_destroy(s->tail);
	}
	if (s->prod) {
		rd_kafka_flush(s->prod, 2000);
		rd_kafka_destroy(s->prod);
	}
	if (s->tail_conf)
		rd_kafka_conf_destroy(s->tail_conf);
	if (s->dec_conf)
		rd_kafka_conf_destroy(s->dec_conf);
	pthread_mutex_destroy(&s->mu);
	free(s->topic);
	free(s);
}

int mirror_statelog_append(struct mirror_statelog *s, const char *key, const char *value)
{
	rd_kafka_resp_err_t e = rd_kafka_producev(s->prod, RD_KAFKA_V_TOPIC(s->topic), RD_KAFKA_V_PARTITION(0),
						  RD_KAFKA_V_KEY(key, strlen(key)),
						  RD_KAFKA_V_VALUE((void *)value, strlen(value)),
						  RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
	if (e) {
		LOG_E("mirror_state_append_failed", "topic=%s reason=\"%s\"", s->topic, rd_kafka_err2str(e));
		return -1;
	}
	return 0;
}
