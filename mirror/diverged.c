/*
 * diverged.c — offsets `preserved`: do the destination's offsets name the
 * source's records?
 *
 * Offsets are preserved, so a destination HW read before a source HW sample
 * is at most that sample, and source samples never go back — unless the
 * source partition was deleted and recreated, or truncated (unclean leader
 * election), or someone wrote records straight to the destination partition
 * (not through the mirror). Then the destination's offsets name other
 * records, and a release by them would be a false ack. Hence the rule every
 * progress report obeys: a destination HW D read at time t is reported as
 * progress only with a source HW sampled at or after t that is ≥ D
 * (mirror_wread.source_after; the gate checks it again, report.c), or —
 * for a held partition — with the source HW the source's own acks=all
 * answer vouched for before t, when that is ≥ D: HWs never go back, and a
 * source that went back (recreated, truncated) answers its new records
 * with lower offsets, which then vouch for less than D. The cost: while
 * waits answered before the source went back are still pending, their
 * vouched reads keep confirming the old destination HW until a source
 * sample shows the source went back (the background round, within its
 * sweep; a lane's source read would have shown it at the next read) — the
 * same bound as for a partition nothing waits on. The lanes
 * (lane.c) send their source ListOffsets right after the destination's, the
 * background round (progress.c) reports a partition at lag zero only by a
 * progress read before its source sample.
 *
 * A partition's progress is reported only once *confirmed* (a progress read
 * before a sample was at most it: the first read after a worker starts
 * confirms), and a partition is *diverged* — its reports become failures
 * (mirror_worker_report) — while a progress read before a sample is above it
 * or the source went back; a later read with the destination at or below the
 * source ends it. What HWs cannot tell: records written to the destination
 * while the mirror lags the source by more than their count (the destination
 * is not ahead then), and records produced after the source went back while
 * the source has grown past the destination again.
 * Any worker thread, w->tmu held.
 */
#include "mirror/worker.h"

bool mirror_source_gone(rd_kafka_resp_err_t err)
{
	return err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART || err == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION ||
	       err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
}

bool mirror_check_diverged(struct mirror_worker *w, struct mirror_wtopic *t, int32_t p, int64_t before,
			   const struct mirror_wsample *s, uint64_t seq)
{
	struct mirror_wpart *wp = &t->parts[p];
	int64_t hw = s->hw;
	if (hw < 0 && wp->seen_src_hw < 0) { /* never seen: nothing to compare yet */
		wp->confirmed = false;
		return false;
	}
	/* "went back" only against a sample answered before this one was asked
	 * (a lane's and the background round's requests may cross) */
	bool later = s->sent_us >= wp->seen_src_done_us;
	bool back = hw < 0 || (later && hw < wp->seen_src_hw);
	bool ahead = hw >= 0 && before >= 0 && before > hw;
	if (back || ahead) {
		if (!wp->diverged)
			LOG_E("mirror_destination_ahead_of_source", "mirror=%s topic=%s partition=%d destination_hw=%lld "
			      "source_hw=%lld previous_source_hw=%lld reason=\"the destination's records at these "
			      "offsets are other records: records were written straight to the destination partition "
			      "(not by the mirror), or the source partition was recreated or truncated\" action=\"no "
			      "ack uses this partition's progress until the destination is at or below the source: "
			      "stop writing to the destination topic except through the mirror, recreate it and mirror "
			      "again, or stop gating the topic (--alter --async)\"", w->name, t->topic, (int)p,
			      (long long)before, (long long)hw, (long long)wp->seen_src_hw);
		wp->diverged = true;
		wp->confirmed = false;
	} else if (before >= 0 && seq >= wp->confirm_from) {
		if (wp->diverged)
			LOG_I("mirror_destination_no_longer_ahead", "mirror=%s topic=%s partition=%d "
			      "destination_hw=%lld source_hw=%lld", w->name, t->topic, (int)p, (long long)before,
			      (long long)hw);
		wp->diverged = false;
		wp->confirmed = true;
	}
	if (hw >= 0 && later) {
		wp->seen_src_hw = hw;
		wp->seen_src_done_us = s->done_us;
	}
	if (wp->diverged) /* the gate forgets its progress now, not at the next read */
		mirror_worker_report(w, t, p, -1, hw, -1, -1, NULL);
	return wp->diverged;
}
