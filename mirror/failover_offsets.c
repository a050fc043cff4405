/*
 * failover_offsets.c — what a failover reads of MirrorMaker 2's
 * offset-syncs (progress and the offset translation) and step 4, the
 * consumer-offset moves: every source group's committed offsets on the
 * failed-over topics written to the destination (preserved: same offsets;
 * mm2: translated, never past a record the destination lacks), skipping
 * groups active on the destination. Job thread only.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "mirror/failover.h"
#include "mirror/worker.h"

/* Read the offset-syncs topic up to its current end (incremental). Job thread. */
void mirror_failover_mm2_read(struct mirror_failover *f, rd_kafka_t *c, int32_t nsyncparts)
{
	int64_t deadline = mirror_now_ms() + FO_RPC_MS;
	int64_t *hi = calloc((size_t)(nsyncparts > 0 ? nsyncparts : 1), sizeof(*hi));
	if (!hi)
		return;
	for (int32_t p = 0; p < nsyncparts; p++) {
		int64_t lo;
		if (rd_kafka_query_watermark_offsets(c, f->mm2_topic, p, &lo, &hi[p], FO_RPC_MS))
			hi[p] = -1;
	}
	char topic[256];
	while (mirror_now_ms() < deadline && !atomic_load(&f->stop)) {
		bool done = true;
		rd_kafka_topic_partition_list_t *pos = rd_kafka_topic_partition_list_new(nsyncparts);
		for (int32_t p = 0; p < nsyncparts; p++)
			rd_kafka_topic_partition_list_add(pos, f->mm2_topic, p);
		rd_kafka_position(c, pos);
		for (int32_t p = 0; p < nsyncparts; p++)
			if (hi[p] > 0 && pos->elems[p].offset < hi[p])
				done = false;
		rd_kafka_topic_partition_list_destroy(pos);
		if (done)
			break;
		rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 200);
		if (!m || m->err) {
			if (m)
				rd_kafka_message_destroy(m);
			continue;
		}
		int32_t part;
		int64_t up, down;
		struct fo_part *fp = NULL;
		if (mirror_mm2_parse(m->key, m->key_len, m->payload, m->len, topic, sizeof(topic), &part, &up,
				     &down) == 0)
			fp = fo_part_find(fo_topic_find(f, topic), part);
		if (fp) {
			if (fp->nsyncs == fp->capsyncs) {
				size_t n = fp->capsyncs ? 2 * fp->capsyncs : 64;
				struct fo_sync *a = realloc(fp->syncs, n * sizeof(*a));
				if (a) {
					fp->syncs = a;
					fp->capsyncs = n;
				}
			}
			if (fp->nsyncs < fp->capsyncs)
				fp->syncs[fp->nsyncs++] = (struct fo_sync){up, down};
		}
		rd_kafka_message_destroy(m);
	}
	free(hi);
}

const struct fo_sync *mirror_failover_mm2_latest(const struct fo_part *fp)
{
	const struct fo_sync *best = NULL;
	for (size_t i = 0; i < fp->nsyncs; i++)
		if (!best || fp->syncs[i].up > best->up)
			best = &fp->syncs[i];
	return best;
}

/* MirrorMaker 2's translation of a committed source offset (its
 * OffsetSyncStore rule): the sync with the greatest upstream ≤ committed;
 * downstream, +1 when the committed offset is past it. -1: no such sync. */
static int64_t mm2_translate(const struct fo_part *fp, int64_t committed)
{
	const struct fo_sync *best = NULL;
	for (size_t i = 0; i < fp->nsyncs; i++)
		if (fp->syncs[i].up <= committed && (!best || fp->syncs[i].up > best->up))
			best = &fp->syncs[i];
	if (!best)
		return -1;
	return best->down + (committed == best->up ? 0 : 1);
}


static int fo_move_add(struct mirror_failover *f, const char *group, const char *topic, int32_t p, int64_t so,
		       int64_t dof, const char *action, const char *fmt, ...) __attribute__((format(printf, 8, 9)));
static int fo_move_add(struct mirror_failover *f, const char *group, const char *topic, int32_t p, int64_t so,
		       int64_t dof, const char *action, const char *fmt, ...)
{
	struct fo_move *a = realloc(f->moves, (f->nmoves + 1) * sizeof(*a));
	if (!a)
		return -1;
	f->moves = a;
	struct fo_move *m = &a[f->nmoves];
	memset(m, 0, sizeof(*m));
	m->group = strdup(group);
	m->topic = strdup(topic);
	m->partition = p;
	m->src_off = so;
	m->dst_off = dof;
	m->action = action;
	CONF_FORMAT_ARGS(m->note, fmt);
	f->nmoves++;
	return 0;
}

/* Wait for one admin result event of `type` on q. Job thread. */
static rd_kafka_event_t *admin_wait(rd_kafka_queue_t *q, rd_kafka_event_type_t type)
{
	int64_t deadline = mirror_now_ms() + 3 * FO_RPC_MS;
	while (mirror_now_ms() < deadline) {
		rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 500);
		if (!ev)
			continue;
		if (rd_kafka_event_type(ev) == type)
			return ev;
		rd_kafka_event_destroy(ev);
	}
	return NULL;
}

/* Whether `group` has members on the destination (1), not (0), unknown (-1). */
static int group_active(rd_kafka_t *dst, rd_kafka_queue_t *q, const char *group)
{
	const char *groups[1] = {group};
	rd_kafka_DescribeConsumerGroups(dst, groups, 1, NULL, q);
	rd_kafka_event_t *ev = admin_wait(q, RD_KAFKA_EVENT_DESCRIBECONSUMERGROUPS_RESULT);
	if (!ev)
		return -1;
	int active = -1;
	const rd_kafka_DescribeConsumerGroups_result_t *res = rd_kafka_event_DescribeConsumerGroups_result(ev);
	size_t n = 0;
	const rd_kafka_ConsumerGroupDescription_t **d =
		res && !rd_kafka_event_error(ev) ? rd_kafka_DescribeConsumerGroups_result_groups(res, &n) : NULL;
	if (d && n == 1) {
		const rd_kafka_error_t *e = rd_kafka_ConsumerGroupDescription_error(d[0]);
		if (!e || rd_kafka_error_code(e) == RD_KAFKA_RESP_ERR_GROUP_ID_NOT_FOUND)
			active = !e && rd_kafka_ConsumerGroupDescription_member_count(d[0]) > 0;
	}
	rd_kafka_event_destroy(ev);
	return active;
}

/* `group`'s committed offsets on `rk` (a copy, caller destroys), NULL when unknown. */
static rd_kafka_topic_partition_list_t *group_offsets(rd_kafka_t *rk, rd_kafka_queue_t *q, const char *group)
{
	rd_kafka_ListConsumerGroupOffsets_t *req = rd_kafka_ListConsumerGroupOffsets_new(group, NULL);
	rd_kafka_ListConsumerGroupOffsets(rk, &req, 1, NULL, q);
	rd_kafka_ListConsumerGroupOffsets_destroy(req);
	rd_kafka_event_t *ev = admin_wait(q, RD_KAFKA_EVENT_LISTCONSUMERGROUPOFFSETS_RESULT);
	if (!ev)
		return NULL;
	const rd_kafka_ListConsumerGroupOffsets_result_t *res = rd_kafka_event_ListConsumerGroupOffsets_result(ev);
	size_t n = 0;
	const rd_kafka_group_result_t **gr = res ? rd_kafka_ListConsumerGroupOffsets_result_groups(res, &n) : NULL;
	const rd_kafka_topic_partition_list_t *parts = gr && n == 1 && !rd_kafka_group_result_error(gr[0])
							       ? rd_kafka_group_result_partitions(gr[0]) : NULL;
	rd_kafka_topic_partition_list_t *copy = parts ? rd_kafka_topic_partition_list_copy(parts) : NULL;
	rd_kafka_event_destroy(ev);
	return copy;
}

/* Committed offset of (topic, partition) in l, -1 when none. */
static int64_t offset_in(const rd_kafka_topic_partition_list_t *l, const char *topic, int32_t partition)
{
	for (int i = 0; l && i < l->cnt; i++)
		if (l->elems[i].partition == partition && !strcmp(l->elems[i].topic, topic))
			return l->elems[i].offset;
	return -1;
}

/* Move (or, dry run, list) one group's committed offsets; `compare`
 * (verify): only a synchronous group's, compared, nothing written. A
 * synchronous group (sync_groups) whose destination offset already equals
 * the move is verified, not moved. Job thread. */
static void move_group(struct mirror_failover *f, rd_kafka_t *src, rd_kafka_t *dst, rd_kafka_queue_t *q,
		       const char *group, bool compare)
{
	bool sync = conf_topic_regexes_match(f->sync_re, f->nsync_re, group);
	if (compare && !sync)
		return;
	rd_kafka_ListConsumerGroupOffsets_t *req = rd_kafka_ListConsumerGroupOffsets_new(group, NULL);
	rd_kafka_ListConsumerGroupOffsets(src, &req, 1, NULL, q);
	rd_kafka_ListConsumerGroupOffsets_destroy(req);
	rd_kafka_event_t *ev = admin_wait(q, RD_KAFKA_EVENT_LISTCONSUMERGROUPOFFSETS_RESULT);
	if (!ev) {
		fo_move_add(f, group, "*", -1, -1, -1, "failed", "listing its offsets on the source timed out");
		return;
	}
	const rd_kafka_ListConsumerGroupOffsets_result_t *res = rd_kafka_event_ListConsumerGroupOffsets_result(ev);
	size_t n = 0;
	const rd_kafka_group_result_t **gr = res ? rd_kafka_ListConsumerGroupOffsets_result_groups(res, &n) : NULL;
	const rd_kafka_topic_partition_list_t *parts = gr && n == 1 && !rd_kafka_group_result_error(gr[0])
							       ? rd_kafka_group_result_partitions(gr[0]) : NULL;
	rd_kafka_topic_partition_list_t *alter = rd_kafka_topic_partition_list_new(8);
	rd_kafka_topic_partition_list_t *now = sync && parts ? group_offsets(dst, q, group) : NULL;
	size_t first = f->nmoves;
	for (int i = 0; parts && i < parts->cnt; i++) {
		const rd_kafka_topic_partition_t *tp = &parts->elems[i];
		struct fo_topic *t = fo_topic_find(f, tp->topic);
		struct fo_part *fp = fo_part_find(t, tp->partition);
		if (!fp || tp->offset < 0)
			continue;
		int64_t to = f->offsets == CONF_OFFSETS_MM2 ? mm2_translate(fp, tp->offset) : tp->offset;
		if (to < 0) {
			fo_move_add(f, group, t->topic, tp->partition, tp->offset, -1, "skipped",
				    "no offset-sync at or below %" PRId64 ": cannot translate", tp->offset);
			continue;
		}
		const char *capped = "";
		if (fp->dst_hw >= 0 && to > fp->dst_hw) {
			to = fp->dst_hw; /* never past a record the destination lacks */
			capped = " (capped at the destination HW)";
		}
		if (sync) {
			int64_t d = offset_in(now, t->dst, tp->partition);
			if (compare) {
				fo_move_add(f, group, t->dst, tp->partition, tp->offset, d, d == to ? "in step" : "differs",
					    "synchronous group: the source's commit is %" PRId64 " on the destination%s", to,
					    now ? "" : " (its offsets could not be read)");
				continue;
			}
			if (d == to) {
				fo_move_add(f, group, t->dst, tp->partition, tp->offset, to, "verified",
					    "synchronous group: the destination already has this commit");
				continue;
			}
			capped = d >= 0 ? " (synchronous group behind on the destination)" : capped;
		}
		fo_move_add(f, group, t->dst, tp->partition, tp->offset, to, f->dry_run ? "would move" : "moved", "%s%s",
			    f->offsets == CONF_OFFSETS_MM2 ? "translated through the offset-syncs" : "same offset",
			    capped);
		rd_kafka_topic_partition_list_add(alter, t->dst, tp->partition)->offset = to;
	}
	rd_kafka_event_destroy(ev);
	if (now)
		rd_kafka_topic_partition_list_destroy(now);
	if (alter->cnt > 0) {
		int active = group_active(dst, q, group);
		if (active != 0) {
			for (size_t i = first; i < f->nmoves; i++)
				if (f->moves[i].dst_off >= 0 && strcmp(f->moves[i].action, "verified")) {
					f->moves[i].action = "skipped";
					snprintf(f->moves[i].note, sizeof(f->moves[i].note), "%s",
						 active > 0 ? "group active on the destination: its members own their positions"
							    : "group state on the destination unknown");
				}
		} else if (!f->dry_run) {
			rd_kafka_AlterConsumerGroupOffsets_t *a = rd_kafka_AlterConsumerGroupOffsets_new(group, alter);
			rd_kafka_AlterConsumerGroupOffsets(dst, &a, 1, NULL, q);
			rd_kafka_AlterConsumerGroupOffsets_destroy(a);
			rd_kafka_event_t *aev = admin_wait(q, RD_KAFKA_EVENT_ALTERCONSUMERGROUPOFFSETS_RESULT);
			const rd_kafka_AlterConsumerGroupOffsets_result_t *ares =
				aev ? rd_kafka_event_AlterConsumerGroupOffsets_result(aev) : NULL;
			size_t an = 0;
			const rd_kafka_group_result_t **agr =
				ares ? rd_kafka_AlterConsumerGroupOffsets_result_groups(ares, &an) : NULL;
			const rd_kafka_error_t *ge = agr && an == 1 ? rd_kafka_group_result_error(agr[0]) : NULL;
			const rd_kafka_topic_partition_list_t *ap =
				agr && an == 1 ? rd_kafka_group_result_partitions(agr[0]) : NULL;
			for (size_t i = first; i < f->nmoves; i++) {
				struct fo_move *m = &f->moves[i];
				if (m->dst_off < 0 || !strcmp(m->action, "verified"))
					continue;
				rd_kafka_resp_err_t pe = RD_KAFKA_RESP_ERR_NO_ERROR;
				for (int k = 0; ap && k < ap->cnt; k++)
					if (!strcmp(ap->elems[k].topic, m->topic) && ap->elems[k].partition == m->partition)
						pe = ap->elems[k].err;
				if (!aev || ge || pe) {
					m->action = "failed";
					snprintf(m->note, sizeof(m->note), "%s",
						 !aev ? "timed out" : ge ? rd_kafka_error_string(ge) : rd_kafka_err2str(pe));
				}
			}
			if (aev)
				rd_kafka_event_destroy(aev);
		}
	}
	rd_kafka_topic_partition_list_destroy(alter);
}

/* Every source group's offsets on the topics: moved (compare: compared). */
static void each_group(struct mirror_failover *f, rd_kafka_t *src, rd_kafka_t *dst, bool compare)
{
	rd_kafka_queue_t *q = rd_kafka_queue_new(src);
	rd_kafka_ListConsumerGroups(src, NULL, q);
	rd_kafka_event_t *ev = admin_wait(q, RD_KAFKA_EVENT_LISTCONSUMERGROUPS_RESULT);
	if (!ev) {
		snprintf(f->groups_note, sizeof(f->groups_note), "listing the source's consumer groups timed out");
		rd_kafka_queue_destroy(q);
		return;
	}
	const rd_kafka_ListConsumerGroups_result_t *res = rd_kafka_event_ListConsumerGroups_result(ev);
	size_t n = 0;
	const rd_kafka_ConsumerGroupListing_t **l = res ? rd_kafka_ListConsumerGroups_result_valid(res, &n) : NULL;
	rd_kafka_queue_t *dq = rd_kafka_queue_new(dst);
	for (size_t i = 0; l && i < n && !atomic_load(&f->stop); i++) {
		const char *group = rd_kafka_ConsumerGroupListing_group_id(l[i]);
		if (!strncmp(group, "syncgate-", 9))
			continue; /* our own (decider, clients): never commit */
		move_group(f, src, dst, dq, group, compare);
	}
	rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(dq);
	rd_kafka_queue_destroy(q);
}

/* Step 4: the committed offsets of every source group on the topics. Job thread. */
void mirror_failover_move_offsets(struct mirror_failover *f, rd_kafka_t *src, rd_kafka_t *dst)
{
	each_group(f, src, dst, false);
}

void mirror_failover_compare_offsets(struct mirror_failover *f, rd_kafka_t *src, rd_kafka_t *dst)
{
	each_group(f, src, dst, true);
}
