/*
 * failover.c — failover in one command, and verification (issue 16; KIP
 * "Failover Process", "Operator mitigation"; docs/operating.md "Failover").
 *
 * A failover of mirror M over the selected SYNC topics:
 *   1. fence: FENCE records (mirror_gate_fence, ops.c); every sidecar refuses
 *      Produce to the topics once it applied them (proxy/fence.c);
 *   2. drain: until M's progress reaches the source high watermark on every
 *      partition (bounded; stragglers reported);
 *   3. verify: per partition, source HW vs destination progress and, as a
 *      divergence check, the last data record on both sides (offset and a
 *      CRC-32C of key, value and headers);
 *   4. consumer offsets: committed offsets of the source groups on those
 *      topics copied to the destination (preserved: same offsets; mm2:
 *      translated through the offset-syncs, never past a record the
 *      destination lacks), skipping groups active on the destination;
 *   5. release: RELEASE records (mirror_gate_release); the fence stays until
 *      syncgate-ctl unfence.
 * Steps 2–4 run on a job thread with its own librdkafka clients (blocking
 * calls); 1 and 5 are state-log records, i.e. admin calls of ops.c. A
 * failover that does not verify keeps the fence and releases nothing.
 * A verify is 2–3 without the fence; --dry-run is a verify that also lists
 * what 4 and 5 would do. A destination-only verify (source gone) compares
 * the destination HW with the offsets syncgate confirmed (this process's
 * figures and the ones passed in, e.g. from other sidecars' metrics).
 *
 * Threads: everything here runs on the loop thread except job_main() and
 * what it calls (marked "job thread"); the loop does not touch a job's
 * fields while the job runs, the job reports back through the bridge
 * (MIRROR_MSG_FAILOVER_DONE).
 */
#include <inttypes.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <regex.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mirror/internal.h"
#include "mirror/worker.h"

#define FO_DEFAULT_FAILOVER_MS 30000 /* drain bound of a failover */
#define FO_DEFAULT_VERIFY_MS 5000    /* catch-up bound of a verify */
#define FO_FENCE_SETTLE_MS 1000      /* other sidecars apply the fence within this */
#define FO_RPC_MS 5000
#define FO_TAIL_WINDOW 16            /* offsets searched for the last data record */
#define FO_MAX_VERDICT_ITEMS 20

enum fo_status { FO_OK, FO_MISSING, FO_DIVERGED, FO_UNKNOWN };
static const char *const fo_status_str[] = {"OK", "MISSING", "DIVERGED", "UNKNOWN"};

struct fo_sync {
	int64_t up, down;           /* MirrorMaker 2 offset-sync: source offset up is at down */
};

struct fo_part {
	int32_t partition;
	int64_t src_hw, dst_hw;     /* -1 unknown */
	int64_t src_hw_after;       /* source HW re-sampled after dst_hw: dst_hw above it is divergence */
	int64_t progress;           /* first source offset not on the destination, -1 unknown */
	int64_t target;             /* what progress must reach */
	int64_t confirmed;          /* destination-only: first offset after the last confirmed record */
	enum fo_status status;
	char detail[240];
	bool last_checked;          /* the last-record comparison ran */
	int64_t last_src_off, last_dst_off;
	uint32_t crc_src, crc_dst;
	struct fo_sync *syncs;      /* mm2, job thread; in offset-syncs order */
	size_t nsyncs, capsyncs;
};

struct fo_topic {
	char *topic, *dst;
	int32_t npart;
	struct fo_part *parts;
};

struct fo_move {
	char *group, *topic;
	int32_t partition;
	int64_t src_off, dst_off;
	const char *action;         /* moved | would move | skipped | failed */
	char note[160];
};

enum fo_phase { FO_FENCING, FO_JOB, FO_RELEASING, FO_ANSWERED };

struct mirror_failover {
	struct mirror_gate *g;
	struct mirror_bridge *bridge;
	struct mirror_failover *next, **pprev;
	mirror_op_cb cb;            /* NULL once cancelled */
	void *arg;
	char *mirror, *regex;
	bool failover, dry_run, dest_only, fencing;
	int timeout_ms;
	enum conf_offsets offsets;
	char *mm2_topic;
	rd_kafka_conf_t *src_conf, *dst_conf, *mm2_conf;
	struct fo_topic *topics;
	size_t ntopics;
	enum fo_phase phase;
	struct mirror_op *op;       /* the fence or release call in flight */
	json_t *steps;              /* answers of the fence and release calls */
	bool released;
	/* job */
	pthread_t th;
	bool th_running;
	atomic_bool stop;
	bool drained, verified;
	const char *unreachable;    /* "source" / "destination" */
	char error[600];
	struct fo_move *moves;
	size_t nmoves;
	char groups_note[300];
	/* answer */
	struct event *ev;
	int status;
	char *body;
};

/* ------------------------------------------------------------------------ */
/* Job thread                                                               */
/* ------------------------------------------------------------------------ */

/* CRC-32C (Castagnoli), bitwise. Any thread. */
static uint32_t crc32c(uint32_t crc, const void *buf, size_t n)
{
	const unsigned char *p = buf;
	crc = ~crc;
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = crc & 1 ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
	}
	return ~crc;
}

static uint32_t crc_len(uint32_t crc, const void *p, size_t n)
{
	uint32_t be = p ? (uint32_t)n : 0xffffffffu;
	unsigned char b[4] = {(unsigned char)(be >> 24), (unsigned char)(be >> 16), (unsigned char)(be >> 8),
			      (unsigned char)be};
	crc = crc32c(crc, b, 4);
	return p ? crc32c(crc, p, n) : crc;
}

/* What identifies a record's content across clusters: key, value, headers
 * (length-prefixed; a mirror copies them verbatim, offsets aside). */
static uint32_t record_crc(rd_kafka_message_t *m)
{
	uint32_t crc = crc_len(0, m->key, m->key_len);
	crc = crc_len(crc, m->payload, m->len);
	rd_kafka_headers_t *h = NULL;
	if (rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR && h) {
		const char *name;
		const void *val;
		size_t sz;
		for (size_t i = 0; rd_kafka_header_get_all(h, i, &name, &val, &sz) == RD_KAFKA_RESP_ERR_NO_ERROR; i++) {
			crc = crc_len(crc, name, strlen(name));
			crc = crc_len(crc, val, sz);
		}
	}
	return crc;
}

/* The last data record of partition p in [from, to) (to: exclusive), read
 * with the simple consumer. 1 found (*off, *crc), 0 none, -1 error. Job thread. */
static int read_last(rd_kafka_t *rk, const char *topic, int32_t p, int64_t from, int64_t to, int64_t *off,
		     uint32_t *crc, char *err, size_t errcap)
{
	if (from < 0)
		from = 0;
	if (to <= from)
		return 0;
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
	if (!rkt || rd_kafka_consume_start(rkt, p, from) != 0) {
		snprintf(err, errcap, "cannot read %s[%d]: %s", topic, (int)p, rd_kafka_err2str(rd_kafka_last_error()));
		if (rkt)
			rd_kafka_topic_destroy(rkt);
		return -1;
	}
	int found = 0;
	int64_t deadline = mirror_now_ms() + FO_RPC_MS;
	while (mirror_now_ms() < deadline) {
		rd_kafka_message_t *m = rd_kafka_consume(rkt, p, 500);
		if (!m)
			continue;
		bool end = false;
		if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
			end = true;
		} else if (m->err) {
			snprintf(err, errcap, "reading %s[%d]: %s", topic, (int)p, rd_kafka_message_errstr(m));
			found = -1;
			end = true;
		} else if (m->offset < to) {
			*off = m->offset;
			*crc = record_crc(m);
			found = 1;
			end = m->offset >= to - 1;
		} else {
			end = true;
		}
		rd_kafka_message_destroy(m);
		if (end)
			break;
	}
	rd_kafka_consume_stop(rkt, p);
	rd_kafka_topic_destroy(rkt);
	return found;
}

static struct fo_topic *fo_topic_find(struct mirror_failover *f, const char *topic)
{
	for (size_t i = 0; i < f->ntopics; i++)
		if (!strcmp(f->topics[i].topic, topic))
			return &f->topics[i];
	return NULL;
}

static struct fo_part *fo_part_find(struct fo_topic *t, int32_t partition)
{
	for (int32_t i = 0; t && i < t->npart; i++)
		if (t->parts[i].partition == partition)
			return &t->parts[i];
	return NULL;
}

/* Read the offset-syncs topic up to its current end (incremental). Job thread. */
static void mm2_read(struct mirror_failover *f, rd_kafka_t *c, int32_t nsyncparts)
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

/* The latest offset-sync of fp (greatest upstream), or NULL. */
static const struct fo_sync *mm2_latest(const struct fo_part *fp)
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

/* One round: every source HW first, then the destination (progress sampled
 * after the source HW, as the gate does). Job thread. */
static void measure(struct mirror_failover *f, rd_kafka_t *src, rd_kafka_t *dst)
{
	for (size_t i = 0; i < f->ntopics; i++) {
		struct fo_topic *t = &f->topics[i];
		for (int32_t k = 0; k < t->npart; k++) {
			int64_t lo, hi;
			struct fo_part *fp = &t->parts[k];
			fp->src_hw = -1;
			if (src && !rd_kafka_query_watermark_offsets(src, t->topic, fp->partition, &lo, &hi, FO_RPC_MS))
				fp->src_hw = hi;
		}
	}
	for (size_t i = 0; i < f->ntopics; i++) {
		struct fo_topic *t = &f->topics[i];
		for (int32_t k = 0; k < t->npart; k++) {
			int64_t lo, hi;
			struct fo_part *fp = &t->parts[k];
			fp->dst_hw = -1;
			rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(dst, t->dst, fp->partition, &lo, &hi,
										 FO_RPC_MS);
			if (!e)
				fp->dst_hw = hi;
			else
				snprintf(fp->detail, sizeof(fp->detail), "destination %s[%d]: %s", t->dst,
					 (int)fp->partition, rd_kafka_err2str(e));
			fp->src_hw_after = -1;
			if (src && f->offsets != CONF_OFFSETS_MM2 &&
			    !rd_kafka_query_watermark_offsets(src, t->topic, fp->partition, &lo, &hi, FO_RPC_MS))
				fp->src_hw_after = hi;
			if (f->offsets == CONF_OFFSETS_MM2) {
				const struct fo_sync *s = mm2_latest(fp);
				fp->progress = s ? s->up + 1 : -1;
			} else {
				fp->progress = fp->dst_hw;
			}
		}
	}
}

/* Every partition's progress reached its target. */
static bool caught_up(struct mirror_failover *f)
{
	for (size_t i = 0; i < f->ntopics; i++)
		for (int32_t k = 0; k < f->topics[i].npart; k++) {
			struct fo_part *fp = &f->topics[i].parts[k];
			if (fp->target < 0 || fp->progress < fp->target)
				return false;
		}
	return true;
}

/* The divergence check of one partition: the last data record below the
 * target on the source, and the record at the same place on the
 * destination (preserved: same offset; mm2: the latest offset-sync's pair). */
static void check_last(struct mirror_failover *f, rd_kafka_t *src, rd_kafka_t *dst, struct fo_topic *t,
		       struct fo_part *fp)
{
	char err[200];
	int64_t so = -1, doff = -1;
	uint32_t sc = 0, dc = 0;
	int64_t want;
	int rc;
	if (f->offsets == CONF_OFFSETS_MM2) {
		const struct fo_sync *s = mm2_latest(fp);
		if (!s)
			return;
		rc = read_last(src, t->topic, fp->partition, s->up, s->up + 1, &so, &sc, err, sizeof(err));
		want = s->down;
	} else {
		rc = read_last(src, t->topic, fp->partition, fp->target - FO_TAIL_WINDOW, fp->target, &so, &sc, err,
			       sizeof(err));
		want = so;
	}
	if (rc < 0) {
		fp->status = FO_UNKNOWN;
		snprintf(fp->detail, sizeof(fp->detail), "%s", err);
		return;
	}
	if (rc == 0) {
		snprintf(fp->detail, sizeof(fp->detail), "last record not compared: no data record among the last %d "
			 "offsets (transaction markers?)", FO_TAIL_WINDOW);
		return;
	}
	rc = read_last(dst, t->dst, fp->partition, want, want + 1, &doff, &dc, err, sizeof(err));
	fp->last_checked = true;
	fp->last_src_off = so;
	fp->crc_src = sc;
	fp->last_dst_off = rc == 1 ? doff : -1;
	fp->crc_dst = dc;
	if (rc < 0) {
		fp->status = FO_UNKNOWN;
		snprintf(fp->detail, sizeof(fp->detail), "%s", err);
	} else if (rc == 0 || doff != want || dc != sc) {
		fp->status = FO_DIVERGED;
		snprintf(fp->detail, sizeof(fp->detail),
			 "source record %" PRId64 " (crc %08" PRIx32 ") is not at destination offset %" PRId64
			 " (%s): the destination diverged or renumbered", so, sc, want,
			 rc == 0 ? "absent" : doff != want ? "another offset" : "different content");
	}
}

/* Per-partition verdicts after the drain. Job thread. */
static void judge(struct mirror_failover *f, rd_kafka_t *src, rd_kafka_t *dst)
{
	f->verified = true;
	for (size_t i = 0; i < f->ntopics; i++) {
		struct fo_topic *t = &f->topics[i];
		for (int32_t k = 0; k < t->npart; k++) {
			struct fo_part *fp = &t->parts[k];
			fp->status = FO_OK;
			if (f->dest_only) {
				if (f->offsets == CONF_OFFSETS_MM2) {
					fp->status = FO_UNKNOWN;
					snprintf(fp->detail, sizeof(fp->detail), "offsets: mm2 - destination offsets differ "
						 "and the offset-syncs are on the source: not provable without it");
				} else if (fp->dst_hw < 0) {
					fp->status = FO_UNKNOWN;
				} else if (fp->dst_hw < fp->confirmed) {
					fp->status = FO_MISSING;
					snprintf(fp->detail, sizeof(fp->detail), "destination HW %" PRId64 " < confirmed %"
						 PRId64 ": offsets %" PRId64 "..%" PRId64 " were confirmed but are gone",
						 fp->dst_hw, fp->confirmed, fp->dst_hw, fp->confirmed - 1);
				}
			} else if (fp->src_hw < 0 || fp->progress < 0 || fp->dst_hw < 0) {
				fp->status = FO_UNKNOWN;
				if (!fp->detail[0])
					snprintf(fp->detail, sizeof(fp->detail), "%s", fp->src_hw < 0 ? "source HW unknown"
						 : fp->dst_hw < 0 ? "destination HW unknown"
						 : "no offset-sync for this partition yet");
			} else if (fp->src_hw_after >= 0 && fp->dst_hw > fp->src_hw_after) {
				/* the source HW read after the destination's can only be higher
				 * than anything the mirror copied by then */
				fp->status = FO_DIVERGED;
				snprintf(fp->detail, sizeof(fp->detail), "destination HW %" PRId64 " > source HW %" PRId64
					 ": %" PRId64 " record(s) the source never had", fp->dst_hw, fp->src_hw_after,
					 fp->dst_hw - fp->src_hw_after);
			} else if (fp->progress < fp->target) {
				fp->status = FO_MISSING;
				snprintf(fp->detail, sizeof(fp->detail), "offsets %" PRId64 "..%" PRId64 " (%" PRId64
					 " record(s)) not on the destination", fp->progress, fp->target - 1,
					 fp->target - fp->progress);
			} else if (fp->target > 0) {
				fp->detail[0] = '\0';
				check_last(f, src, dst, t, fp);
			}
			if (fp->status != FO_OK)
				f->verified = false;
		}
	}
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
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m->note, sizeof(m->note), fmt, ap);
	va_end(ap);
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

/* Move (or, dry run, list) one group's committed offsets. Job thread. */
static void move_group(struct mirror_failover *f, rd_kafka_t *src, rd_kafka_t *dst, rd_kafka_queue_t *q,
		       const char *group)
{
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
		fo_move_add(f, group, t->dst, tp->partition, tp->offset, to, f->dry_run ? "would move" : "moved", "%s%s",
			    f->offsets == CONF_OFFSETS_MM2 ? "translated through the offset-syncs" : "same offset",
			    capped);
		rd_kafka_topic_partition_list_add(alter, t->dst, tp->partition)->offset = to;
	}
	rd_kafka_event_destroy(ev);
	if (alter->cnt > 0) {
		int active = group_active(dst, q, group);
		if (active != 0) {
			for (size_t i = first; i < f->nmoves; i++)
				if (f->moves[i].dst_off >= 0) {
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
				if (m->dst_off < 0)
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

/* Step 4: the committed offsets of every source group on the topics. Job thread. */
static void move_offsets(struct mirror_failover *f, rd_kafka_t *src, rd_kafka_t *dst)
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
		move_group(f, src, dst, dq, group);
	}
	rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(dq);
	rd_kafka_queue_destroy(q);
}

static rd_kafka_t *fo_client(rd_kafka_conf_t **conf, char *err, size_t errcap)
{
	if (!*conf)
		return NULL;
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, *conf, err, errcap);
	if (rk)
		*conf = NULL; /* owned by rk now */
	return rk;
}

/* Partition lists from source metadata (or, destination-only, the
 * confirmed figures already in place). 0, or -1 with f->error set. */
static int resolve_partitions(struct mirror_failover *f, rd_kafka_t *src, rd_kafka_t *dst)
{
	for (size_t i = 0; i < f->ntopics; i++) {
		struct fo_topic *t = &f->topics[i];
		char why[256];
		if (f->dest_only) {
			if (mirror_rk_partitions(dst, t->dst, why, sizeof(why)) == -2) {
				f->unreachable = "destination";
				snprintf(f->error, sizeof(f->error), "destination of mirror %s unreachable: %s", f->mirror, why);
				return -1;
			}
			continue;
		}
		int32_t n = mirror_rk_partitions(src, t->topic, why, sizeof(why));
		if (n == -2) {
			f->unreachable = "source";
			snprintf(f->error, sizeof(f->error), "source cluster unreachable: %s", why);
			return -1;
		}
		if (mirror_rk_partitions(dst, t->dst, why, sizeof(why)) == -2) {
			f->unreachable = "destination";
			snprintf(f->error, sizeof(f->error), "destination of mirror %s unreachable: %s", f->mirror, why);
			return -1;
		}
		n = n < 0 ? 0 : n;
		t->parts = calloc((size_t)(n ? n : 1), sizeof(*t->parts));
		if (!t->parts) {
			snprintf(f->error, sizeof(f->error), "out of memory");
			return -1;
		}
		t->npart = n;
		for (int32_t p = 0; p < n; p++)
			t->parts[p] = (struct fo_part){.partition = p, .src_hw = -1, .dst_hw = -1, .progress = -1,
						       .target = -1, .confirmed = -1, .src_hw_after = -1};
	}
	return 0;
}

static void *job_main(void *arg)
{
	struct mirror_failover *f = arg;
	char err[512];
	rd_kafka_t *src = f->dest_only ? NULL : fo_client(&f->src_conf, err, sizeof(err));
	rd_kafka_t *dst = fo_client(&f->dst_conf, err, sizeof(err));
	rd_kafka_t *mm2 = NULL;
	int32_t nsyncparts = 0;
	if ((!f->dest_only && !src) || !dst) {
		snprintf(f->error, sizeof(f->error), "cannot create a client: %.200s", err);
		goto out;
	}
	if (resolve_partitions(f, src, dst) != 0)
		goto out;
	if (f->offsets == CONF_OFFSETS_MM2 && !f->dest_only) {
		char why[256];
		mm2 = fo_client(&f->mm2_conf, err, sizeof(err));
		nsyncparts = mm2 ? mirror_rk_partitions(mm2, f->mm2_topic, why, sizeof(why)) : -1;
		if (nsyncparts <= 0) {
			snprintf(f->error, sizeof(f->error), "offset-syncs topic %s unreadable", f->mm2_topic);
			goto out;
		}
		rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(nsyncparts);
		for (int32_t p = 0; p < nsyncparts; p++)
			rd_kafka_topic_partition_list_add(l, f->mm2_topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
		rd_kafka_assign(mm2, l);
		rd_kafka_topic_partition_list_destroy(l);
	}
	int64_t start = mirror_now_ms(), deadline = start + f->timeout_ms;
	int64_t settle = start + (f->fencing ? FO_FENCE_SETTLE_MS : 0);
	for (bool first = true;; first = false) {
		if (mm2)
			mm2_read(f, mm2, nsyncparts);
		measure(f, src, dst);
		for (size_t i = 0; i < f->ntopics; i++)
			for (int32_t k = 0; k < f->topics[i].npart; k++) {
				struct fo_part *fp = &f->topics[i].parts[k];
				if (f->dest_only)
					fp->target = fp->confirmed;
				else if (first || f->fencing || fp->target < 0)
					fp->target = fp->src_hw; /* fenced: the HW stands still; else the first sample */
			}
		f->drained = caught_up(f);
		int64_t now = mirror_now_ms();
		if (f->dest_only || (f->drained && now >= settle) || now >= deadline || atomic_load(&f->stop))
			break;
		usleep(200000);
	}
	judge(f, src, dst);
	if (f->failover && !atomic_load(&f->stop) && (f->verified || f->dry_run))
		move_offsets(f, src, dst);
out:
	if (mm2) {
		rd_kafka_consumer_close(mm2);
		rd_kafka_destroy(mm2);
	}
	if (src)
		rd_kafka_destroy(src);
	if (dst)
		rd_kafka_destroy(dst);
	if (mirror_bridge_post_msg(f->bridge, MIRROR_MSG_FAILOVER_DONE, 0, f, NULL, 0) != 0)
		LOG_E("mirror_failover_post_failed", "mirror=%s reason=\"out of memory\"", f->mirror);
	return NULL;
}

/* ------------------------------------------------------------------------ */
/* Loop thread                                                              */
/* ------------------------------------------------------------------------ */

static void fo_free(struct mirror_failover *f)
{
	if (f->pprev) {
		*f->pprev = f->next;
		if (f->next)
			f->next->pprev = f->pprev;
	}
	if (f->op)
		mirror_op_cancel(f->op);
	if (f->ev)
		event_free(f->ev);
	for (size_t i = 0; i < f->ntopics; i++) {
		for (int32_t k = 0; k < f->topics[i].npart; k++)
			free(f->topics[i].parts[k].syncs);
		free(f->topics[i].parts);
		free(f->topics[i].topic);
		free(f->topics[i].dst);
	}
	free(f->topics);
	for (size_t i = 0; i < f->nmoves; i++) {
		free(f->moves[i].group);
		free(f->moves[i].topic);
	}
	free(f->moves);
	if (f->src_conf)
		rd_kafka_conf_destroy(f->src_conf);
	if (f->dst_conf)
		rd_kafka_conf_destroy(f->dst_conf);
	if (f->mm2_conf)
		rd_kafka_conf_destroy(f->mm2_conf);
	json_decref(f->steps);
	free(f->mm2_topic);
	free(f->mirror);
	free(f->regex);
	free(f->body);
	free(f);
}

static void fo_ev_cb(evutil_socket_t fd, short what, void *arg)
{
	struct mirror_failover *f = arg;
	if (f->cb)
		f->cb(f->arg, f->status, f->body ? f->body : "{\"error\":\"out of memory\"}");
	f->cb = NULL;
	if (!f->th_running)
		fo_free(f);
}

/* Answer (deferred to f->ev: never inside the call that started it). */
static void fo_answer(struct mirror_failover *f, int status, json_t *doc)
{
	if (f->phase == FO_ANSWERED) {
		json_decref(doc);
		return;
	}
	f->phase = FO_ANSWERED;
	f->status = status;
	f->body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	event_active(f->ev, EV_TIMEOUT, 0);
}

static void fo_error(struct mirror_failover *f, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fo_error(struct mirror_failover *f, int status, const char *fmt, ...)
{
	char msg[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fo_answer(f, status, json_pack("{s:s}", "error", msg));
}

static json_t *jint(int64_t v)
{
	return v >= 0 ? json_integer(v) : json_null();
}

/* The verdict line: zero RPO, or the exact partitions and offsets. */
static json_t *verdict(struct mirror_failover *f)
{
	char buf[4096];
	size_t n = 0;
	if (f->verified) {
		if (f->dest_only)
			snprintf(buf, sizeof(buf), "every confirmed record is on %s (destination-only: offsets this "
				 "check was given; see docs/operating.md)", f->mirror);
		else
			snprintf(buf, sizeof(buf), "zero RPO: every acknowledged record is on %s", f->mirror);
		return json_string(buf);
	}
	if (f->error[0])
		return json_string(f->error);
	n += (size_t)snprintf(buf, sizeof(buf), "NOT verified:");
	int items = 0, more = 0;
	for (size_t i = 0; i < f->ntopics; i++)
		for (int32_t k = 0; k < f->topics[i].npart; k++) {
			struct fo_part *fp = &f->topics[i].parts[k];
			if (fp->status == FO_OK)
				continue;
			if (items++ >= FO_MAX_VERDICT_ITEMS) {
				more++;
				continue;
			}
			if (n < sizeof(buf))
				n += (size_t)snprintf(buf + n, sizeof(buf) - n, " %s[%d] %s%s%s;", f->topics[i].topic,
						      (int)fp->partition, fo_status_str[fp->status], fp->detail[0] ? ": " : "",
						      fp->detail);
		}
	if (more && n < sizeof(buf))
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, " and %d more", more);
	if (!items && n < sizeof(buf))
		snprintf(buf + n, sizeof(buf) - n, " no SYNC topic of mirror %s matches", f->mirror);
	return json_string(buf);
}

static void fo_finish(struct mirror_failover *f)
{
	json_t *parts = json_array(), *groups = json_array();
	for (size_t i = 0; i < f->ntopics; i++) {
		struct fo_topic *t = &f->topics[i];
		for (int32_t k = 0; k < t->npart; k++) {
			struct fo_part *fp = &t->parts[k];
			int64_t missing = fp->target >= 0 && fp->progress >= 0 && fp->target > fp->progress
						  ? fp->target - fp->progress : 0;
			if (f->dest_only)
				missing = fp->dst_hw >= 0 && fp->confirmed > fp->dst_hw ? fp->confirmed - fp->dst_hw : 0;
			json_t *p = json_pack("{s:s, s:s, s:i, s:s, s:o, s:o, s:o, s:o, s:o, s:I, s:s}", "topic", t->topic,
					      "destination_topic", t->dst, "partition", (int)fp->partition, "status",
					      fo_status_str[fp->status], "source_hw", jint(fp->src_hw), "destination_hw",
					      jint(fp->dst_hw), "progress", jint(fp->progress), "target", jint(fp->target),
					      "confirmed", jint(fp->confirmed), "missing", (json_int_t)missing, "detail",
					      fp->detail);
			if (p && fp->last_checked) {
				char cs[16], cd[16];
				snprintf(cs, sizeof(cs), "%08" PRIx32, fp->crc_src);
				snprintf(cd, sizeof(cd), "%08" PRIx32, fp->crc_dst);
				json_object_set_new(p, "last_record", json_pack("{s:o, s:s, s:o, s:s}", "source_offset",
					jint(fp->last_src_off), "source_crc", cs, "destination_offset",
					jint(fp->last_dst_off), "destination_crc", cd));
			}
			json_array_append_new(parts, p);
		}
	}
	for (size_t i = 0; i < f->nmoves; i++) {
		struct fo_move *m = &f->moves[i];
		json_array_append_new(groups, json_pack("{s:s, s:s, s:i, s:o, s:o, s:s, s:s}", "group", m->group,
							"topic", m->topic, "partition", (int)m->partition,
							"source_offset", jint(m->src_off), "destination_offset",
							jint(m->dst_off), "action", m->action, "note", m->note));
	}
	const char *mode = f->dest_only ? "verify-destination-only" : !f->failover ? "verify"
			   : f->dry_run ? "dry-run" : "failover";
	json_t *doc = json_pack("{s:s, s:s, s:s, s:b, s:o, s:b, s:b, s:b, s:o, s:o, s:O}", "mirror", f->mirror,
				"offsets", f->offsets == CONF_OFFSETS_MM2 ? "mm2" : "preserved", "mode", mode,
				"verified", f->verified && !f->error[0], "verdict", verdict(f), "drained", f->drained,
				"fenced", f->fencing, "released", f->released, "partitions", parts, "groups", groups,
				"steps", f->steps);
	if (doc && f->unreachable)
		json_object_set_new(doc, "unreachable", json_string(f->unreachable));
	if (doc && f->groups_note[0])
		json_object_set_new(doc, "groups_note", json_string(f->groups_note));
	if (doc && f->dry_run && f->verified)
		json_object_set_new(doc, "would_release", json_string(f->mirror));
	LOG_I("mirror_failover_done", "mirror=%s mode=%s verified=%s drained=%s released=%s groups=%zu", f->mirror,
	      mode, f->verified && !f->error[0] ? "true" : "false", f->drained ? "true" : "false",
	      f->released ? "true" : "false", f->nmoves);
	fo_answer(f, 200, doc);
}

static void step_answer(struct mirror_failover *f, const char *step, int status, const char *body)
{
	json_error_t e;
	json_t *j = json_loads(body, 0, &e);
	json_array_append_new(f->steps, json_pack("{s:s, s:i, s:o}", "step", step, "status", status,
						  "answer", j ? j : json_string(body)));
}

static void release_answered(void *arg, int status, const char *body)
{
	struct mirror_failover *f = arg;
	f->op = NULL;
	step_answer(f, "release", status, body);
	f->released = status == 200;
	if (!f->released)
		snprintf(f->error, sizeof(f->error), "verified, but the release failed (HTTP %d): run syncgate-ctl "
			 "--release-sync --mirror %s", status, f->mirror);
	fo_finish(f);
}

void mirror_failover_job_done(struct mirror_gate *g, struct mirror_failover *f)
{
	pthread_join(f->th, NULL);
	f->th_running = false;
	if (!f->cb) { /* cancelled */
		fo_free(f);
		return;
	}
	if (f->fencing && f->verified && !f->error[0]) {
		f->phase = FO_RELEASING;
		f->op = mirror_gate_release(g, f->mirror, f->regex, release_answered, f);
		if (!f->op)
			fo_error(f, 500, "out of memory");
		return;
	}
	fo_finish(f);
}

static void start_job(struct mirror_failover *f)
{
	f->phase = FO_JOB;
	f->th_running = pthread_create(&f->th, NULL, job_main, f) == 0;
	if (!f->th_running)
		fo_error(f, 500, "cannot start the failover job thread");
}

static void fence_answered(void *arg, int status, const char *body)
{
	struct mirror_failover *f = arg;
	f->op = NULL;
	step_answer(f, "fence", status, body);
	if (status != 200) {
		fo_error(f, status, "the fence failed (HTTP %d): %s", status, body);
		return;
	}
	start_job(f);
}

static int fo_add_topic(struct mirror_failover *f, const struct conf_mirror *cm, const char *topic)
{
	if (fo_topic_find(f, topic))
		return 0;
	struct fo_topic *a = realloc(f->topics, (f->ntopics + 1) * sizeof(*a));
	if (!a)
		return -1;
	f->topics = a;
	struct fo_topic *t = &a[f->ntopics];
	memset(t, 0, sizeof(*t));
	t->topic = strdup(topic);
	t->dst = mirror_destination_topic(conf_mirror_topic_name(cm), topic);
	f->ntopics++;
	return t->topic && t->dst ? 0 : -1;
}

/* destination-only: (topic, partition) gets confirmed offset `off` (max). */
static int fo_add_confirmed(struct mirror_failover *f, const struct conf_mirror *cm, const char *topic,
			    int32_t partition, int64_t off)
{
	if (fo_add_topic(f, cm, topic) != 0)
		return -1;
	struct fo_topic *t = fo_topic_find(f, topic);
	struct fo_part *fp = fo_part_find(t, partition);
	if (!fp) {
		struct fo_part *a = realloc(t->parts, (size_t)(t->npart + 1) * sizeof(*a));
		if (!a)
			return -1;
		t->parts = a;
		fp = &a[t->npart++];
		*fp = (struct fo_part){.partition = partition, .src_hw = -1, .dst_hw = -1, .progress = -1,
				       .target = -1, .confirmed = -1, .src_hw_after = -1};
	}
	if (off > fp->confirmed)
		fp->confirmed = off;
	return 0;
}

struct select_ctx {
	struct mirror_failover *f;
	const regex_t *re;
	bool oom;
};

/* A failover/verify covers the mirror's SYNC topics (desired or effective),
 * and the ones a (previous) failover released or fenced; destination-only:
 * every partition this process confirmed. */
static void select_topic(struct mirror_tstate *t, void *arg)
{
	struct select_ctx *c = arg;
	struct mirror_failover *f = c->f;
	if (c->re && regexec(c->re, t->topic, 0, NULL, 0) != 0)
		return;
	if (f->dest_only) {
		for (int32_t p = 0; p < t->nparts_alloc; p++)
			if (t->parts[p] && t->parts[p]->confirmed >= 0 &&
			    fo_add_confirmed(f, t->link->cm, t->topic, p, t->parts[p]->confirmed) != 0)
				c->oom = true;
		return;
	}
	if (t->ls.desired != MIRROR_SYNC && t->ls.effective != MIRROR_SYNC && !t->ls.released && !t->ls.fenced)
		return;
	if (fo_add_topic(f, t->link->cm, t->topic) != 0)
		c->oom = true;
}

static int topic_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fo_topic *)a)->topic, ((const struct fo_topic *)b)->topic);
}

static int part_cmp(const void *a, const void *b)
{
	return ((const struct fo_part *)a)->partition - ((const struct fo_part *)b)->partition;
}

struct mirror_failover *mirror_gate_failover(struct mirror_gate *g, const struct mirror_failover_req *req,
					     mirror_op_cb cb, void *arg)
{
	struct mirror_failover *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->g = g;
	f->bridge = g->bridge;
	f->cb = cb;
	f->arg = arg;
	f->ev = event_new(g->base, -1, 0, fo_ev_cb, f);
	f->steps = json_array();
	f->mirror = req->mirror ? strdup(req->mirror) : NULL;
	f->regex = req->topics_regex ? strdup(req->topics_regex) : NULL;
	f->failover = req->failover;
	f->dry_run = req->failover && req->dry_run;
	f->dest_only = !req->failover && req->destination_only;
	f->fencing = f->failover && !f->dry_run;
	f->timeout_ms = req->timeout_ms > 0 ? req->timeout_ms
					    : f->failover ? FO_DEFAULT_FAILOVER_MS : FO_DEFAULT_VERIFY_MS;
	atomic_init(&f->stop, false);
	if (!f->ev || !f->steps || (req->mirror && !f->mirror) || (req->topics_regex && !f->regex)) {
		fo_free(f);
		return NULL;
	}
	f->next = g->failovers;
	f->pprev = &g->failovers;
	if (g->failovers)
		g->failovers->pprev = &f->next;
	g->failovers = f;

	struct mirror_link *l = f->mirror ? mirror_link_find(g, f->mirror) : NULL;
	if (!l) {
		fo_error(f, 404, "unknown mirror %s (not in this sidecar's config)", f->mirror ? f->mirror : "(none)");
		return f;
	}
	if (!f->dest_only && !g->state_ready) {
		fo_error(f, 503, "the state log is not read yet (sidecar starting, or the source is gone: "
			 "use verify --destination-only); retry");
		return f;
	}
	f->offsets = l->cm->offsets;
	regex_t re;
	if (f->regex) {
		char why[128];
		int rc = conf_topic_regex_compile(&re, f->regex, why, sizeof(why));
		if (rc != 0) {
			fo_error(f, rc == REG_ESPACE ? 500 : 400, "invalid --topics regex \"%s\"", f->regex);
			return f;
		}
	}
	struct select_ctx c = {.f = f, .re = f->regex ? &re : NULL};
	mirror_each_topic(NULL, l, select_topic, &c);
	for (size_t i = 0; f->dest_only && i < req->nconfirmed && !c.oom; i++) {
		const struct mirror_confirmed *x = &req->confirmed[i];
		if (x->topic && x->partition >= 0 && (!c.re || regexec(c.re, x->topic, 0, NULL, 0) == 0) &&
		    fo_add_confirmed(f, l->cm, x->topic, x->partition, x->offset) != 0)
			c.oom = true;
	}
	if (f->regex)
		regfree(&re);
	if (c.oom) {
		fo_error(f, 500, "out of memory");
		return f;
	}
	qsort(f->topics, f->ntopics, sizeof(*f->topics), topic_cmp);
	for (size_t i = 0; i < f->ntopics; i++)
		if (f->topics[i].npart > 1)
			qsort(f->topics[i].parts, (size_t)f->topics[i].npart, sizeof(*f->topics[i].parts), part_cmp);
	if (f->ntopics == 0) {
		fo_finish(f); /* not verified: nothing matches */
		return f;
	}
	f->dst_conf = mirror_dest_conf(l->cm);
	if (!f->dest_only)
		f->src_conf = mirror_source_conf(g->conf, l->name, "failover", false);
	if (f->offsets == CONF_OFFSETS_MM2 && !f->dest_only) {
		f->mm2_topic = conf_mirror_offset_syncs_topic(l->cm);
		f->mm2_conf = mirror_source_conf(g->conf, l->name, "failover-mm2", false);
	}
	if (!f->dst_conf || (!f->dest_only && !f->src_conf) ||
	    (f->offsets == CONF_OFFSETS_MM2 && !f->dest_only && (!f->mm2_topic || !f->mm2_conf))) {
		fo_error(f, 500, "cannot configure the clients");
		return f;
	}
	LOG_W("mirror_failover_start", "mirror=%s topics=%zu mode=%s timeout_ms=%d", f->mirror, f->ntopics,
	      f->dest_only ? "verify-destination-only" : !f->failover ? "verify" : f->dry_run ? "dry-run" : "failover",
	      f->timeout_ms);
	if (f->fencing) {
		f->phase = FO_FENCING;
		f->op = mirror_gate_fence(g, f->mirror, f->regex, true, fence_answered, f);
		if (!f->op)
			fo_error(f, 500, "out of memory");
		return f;
	}
	start_job(f);
	return f;
}

void mirror_failover_cancel(struct mirror_failover *f)
{
	if (!f)
		return;
	f->cb = NULL;
	if (f->op) {
		mirror_op_cancel(f->op);
		f->op = NULL;
	}
	if (f->th_running) {
		atomic_store(&f->stop, true); /* freed when the job reports back */
		return;
	}
	if (f->phase == FO_ANSWERED)
		event_del(f->ev);
	fo_free(f);
}

void mirror_failover_free_all(struct mirror_gate *g)
{
	while (g->failovers) {
		struct mirror_failover *f = g->failovers;
		if (f->th_running) {
			atomic_store(&f->stop, true);
			pthread_join(f->th, NULL); /* its bridge message is dropped with the bridge */
			f->th_running = false;
		}
		fo_free(f);
	}
}
