/*
 * mirror/mm2_match.h — `offsets: mm2` progress proved by matching records
 * (mirror/mm2_match.c, mirror/mm2_fingerprint.c; docs/operating.md
 * "MirrorMaker 2"). mirror/ internal.
 *
 * An offset-sync (U, D) says destination record D is source record U.
 * MirrorMaker 2 copies one source partition in order into one destination
 * partition, keeping each record's key, value, timestamp and headers; so
 * the source records after U appear after D on the destination, in the same
 * order, possibly with re-copies of records already copied (a task restart
 * resends from its last committed position). Matching the two sequences by
 * a fingerprint of those four fields proves "destination offset D' holds
 * source offset U'" without waiting for MirrorMaker 2 to write a sync.
 */
#ifndef SYNCGATE_MIRROR_MM2_MATCH_H
#define SYNCGATE_MIRROR_MM2_MATCH_H

#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#define MIRROR_MFP_LEN 16 /* fingerprint bytes (SHA-256, truncated) */

/** One record of a matched partition: its offset and fingerprint. */
struct mirror_mrec {
	int64_t offset;
	unsigned char fp[MIRROR_MFP_LEN];
};

/** Why mirror_mm2_match stopped. */
enum mirror_match_stop {
	MIRROR_MATCH_MORE,    /* one side has no further record yet: read more */
	MIRROR_MATCH_GAP,     /* a destination record is a later source record: one in between is
			       * not on the destination (filtered, an aborted transaction MM2 skipped) */
	MIRROR_MATCH_FOREIGN, /* a destination record is no source record read since the anchor:
			       * another writer, or a re-copy from before the anchor */
	MIRROR_MATCH_STOP_COUNT
};
/** "more", "gap", "foreign" (logs, metrics labels). */
const char *mirror_match_stop_str(enum mirror_match_stop s);

/**
 * Fingerprint of a consumed record (key, value, timestamp, headers; null
 * and empty are told apart) into fp[MIRROR_MFP_LEN]. 0, or −1 when the
 * digest cannot be computed (ENOMEM: the caller stops proving). Any thread.
 */
int mirror_mm2_fingerprint(const rd_kafka_message_t *m, unsigned char fp[MIRROR_MFP_LEN]);

/**
 * Match source records src[0..ns) (in offset order, the first after the
 * anchor's source offset) with destination records dst[0..nd) (in order,
 * the first after the anchor's destination offset), continuing from *si, *di:
 * src[0..*si) are matched, dst[0..*di) consumed. Each source record matches
 * the next destination record with its fingerprint; a destination record
 * in between must equal an already matched source record (at most
 * `recopy_window` back), a re-copy, or matching stops. On return src[0..*si)
 * are proved on the destination, src[*si − 1] at dst[*di − 1]; `at` (NULL,
 * or ns entries): at[i] = the dst index of src[i]'s copy, for each i matched
 * in this call. Pure.
 */
enum mirror_match_stop mirror_mm2_match(const struct mirror_mrec *src, size_t ns, const struct mirror_mrec *dst,
					size_t nd, size_t *si, size_t *di, size_t recopy_window, size_t *at);

struct mirror_worker;
/** The match thread of an `mm2` worker (pthread start routine; arg: the worker). Ends at w->halt. */
void *mirror_mm2_match_main(void *arg);

#endif
