/*
 * mirror/lifecycle.h — the mirror-type lifecycle of one (mirror, topic) as a
 * pure, deterministic state machine over state-log records (KIP "Registering
 * Sync Replica", "Unregistering", "Source-Side Release", "Recovery",
 * "ASYNC→SYNC Promotion"; docs/architecture.md).
 *
 * Every sidecar folds the same state log in the same order through
 * mirror_lifecycle_apply(), so every sidecar reaches the same state; a
 * conditional record that no longer holds (a promotion decided before a
 * release, a demotion decided on an older generation) is rejected by every
 * reader alike. No I/O, no clock, no globals: any thread.
 */
#ifndef SYNCGATE_MIRROR_LIFECYCLE_H
#define SYNCGATE_MIRROR_LIFECYCLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mirror/mirror.h"

/** What a state-log record asks for. */
enum mirror_rec_kind {
	MIRROR_REC_ALTER,    /* operator --add/--alter: set DesiredMirrorType */
	MIRROR_REC_REGISTER, /* decider: promotion at lag zero (KIP RegisterMirrorSyncTopic) */
	MIRROR_REC_RELEASE,  /* operator --release-sync: sticky Released marker */
	MIRROR_REC_DEMOTE,   /* decider: every partition failing for the demote timeout */
	MIRROR_REC_FENCE,    /* operator failover: Produce to the topic refused on every sidecar */
	MIRROR_REC_UNFENCE,  /* operator syncgate-ctl unfence: Produce accepted again */
	MIRROR_REC_SWITCH,   /* operator syncgate-ctl switch: every sidecar serves the mirror's
			      * destination (a mirror-level record, topic "*"; switch.c) */
	MIRROR_REC_PRODUCER_ID, /* a switched sidecar: a client producer's destination id; the first
				 * claim of a key wins on every sidecar (mirror-level; producer_claims.c) */
	MIRROR_REC_COUNT
};
const char *mirror_rec_kind_str(enum mirror_rec_kind k);
/** Parse "ALTER", "REGISTER", …; MIRROR_REC_COUNT when unknown. */
enum mirror_rec_kind mirror_rec_kind_parse(const char *s);

/** Why a record was rejected (KIP SyncRegistrationRejected{reason}, plus ours). */
enum mirror_reject {
	MIRROR_REJ_NONE,
	MIRROR_REJ_RELEASED_FRESH_PROMOTION_REQUIRED, /* REGISTER without RecoveryPromotion on a Released tuple */
	MIRROR_REJ_ALL_PARTITIONS_FAILING,            /* DEMOTE applied: reason of the topic-wide demote */
	MIRROR_REJ_NOT_DESIRED_SYNC,                  /* REGISTER while DesiredMirrorType is ASYNC */
	MIRROR_REJ_STALE_GENERATION,                  /* conditional record based on an older generation */
	MIRROR_REJ_FENCED,                            /* REGISTER while the topic is fenced (failover) */
	MIRROR_REJ_COUNT
};
const char *mirror_reject_str(enum mirror_reject r);

/** One (mirror, topic)'s lifecycle state (KIP names in comments). */
struct mirror_lstate {
	enum mirror_type desired;   /* DesiredMirrorType */
	enum mirror_type effective; /* EffectiveMirrorType (gates when SYNC and !released) */
	bool released;              /* sticky Released marker */
	bool recovery_pending;      /* pendingRecoveryPromotion: next REGISTER carries RecoveryPromotion */
	bool desired_logged;        /* an ALTER is in the log: the config no longer sets desired */
	bool fenced;                /* failover fence: Produce refused, no promotion (until UNFENCE) */
	int32_t retry_attempt;      /* RetryAttempt: rejected promotions in a row (backoff) */
	int64_t generation;         /* +1 on every applied change; conditional records name it */
};

/** One state-log record, without its (mirror, topic) key. */
struct mirror_record {
	enum mirror_rec_kind kind;
	enum mirror_type type;      /* ALTER */
	bool add;                   /* ALTER from --add (informational) */
	bool recovery;              /* REGISTER: RecoveryPromotion */
	int64_t based_on;           /* REGISTER/DEMOTE: generation decided on; -1 unconditional */
	uint64_t origin;            /* sidecar instance that wrote it (0 unknown) */
	uint64_t seq;               /* per-origin sequence number (admin calls wait for it) */
	struct mirror_producer_claim claim; /* PRODUCER_ID */
};

/** What applying one record did. */
struct mirror_apply_out {
	bool changed;               /* state changed (generation incremented) */
	enum mirror_reject reject;  /* MIRROR_REJ_NONE, or why the record did not apply
				     * (DEMOTE applied reports ALL_PARTITIONS_FAILING here
				     * with changed=true: it is a SyncRegistrationRejected) */
	bool count_rejected;        /* count in syncgate_sync_registration_rejected_total */
};

/** The state of a (mirror, topic) the log has never mentioned. */
struct mirror_lstate mirror_lstate_initial(enum mirror_type config_desired);

/**
 * Apply `r` to `s` (in place) by the rules below; fills `out`. Deterministic:
 * the same sequence of records from the same initial state gives the same
 * state on every reader. Pure; any thread.
 *   ALTER{t}:        desired := t, desired_logged; t ASYNC → effective ASYNC at once.
 *   REGISTER{rec}:   fenced → FENCED (no change: a failed-over topic is never
 *                    re-promoted on its old source); desired ASYNC → NOT_DESIRED_SYNC; released && !rec →
 *                    RELEASED_FRESH_PROMOTION_REQUIRED (effective ASYNC,
 *                    recovery_pending, retry_attempt+1); based_on stale →
 *                    STALE_GENERATION; else effective SYNC, released and
 *                    recovery_pending cleared, retry_attempt 0.
 *   RELEASE:         only when desired or effective is SYNC: released,
 *                    effective ASYNC, recovery_pending.
 *   DEMOTE{based_on}: only when effective SYNC and generation == based_on:
 *                    effective ASYNC, recovery_pending (ALL_PARTITIONS_FAILING).
 *   FENCE / UNFENCE: fenced := true / false (unconditional; the type is untouched).
 */
void mirror_lifecycle_apply(struct mirror_lstate *s, const struct mirror_record *r,
			    struct mirror_apply_out *out);

/** Backoff before the next promotion after `retry_attempt` rejections, ms:
 * 0 for 0, then 500 ms doubling, capped at 30 s. Pure. */
int64_t mirror_lifecycle_backoff_ms(int32_t retry_attempt);

/**
 * A record as the state log stores it: JSON {"v":1,"mirror","topic","op",
 * "type","add","recovery","based_on","origin","seq"} (malloc'd; NULL on
 * ENOMEM). Key of the Kafka record: "mirror/topic". Any thread.
 */
char *mirror_record_to_json(const char *mirror, const char *topic, const struct mirror_record *r);

/**
 * Parse a state-log value. Fills `r`, and `mirror`/`topic` (bounded copies).
 * Missing optional fields take defaults (type SYNC, recovery false,
 * based_on -1). Returns 0, or -1 when malformed (the record is skipped by
 * every reader alike). Any thread.
 */
int mirror_record_from_json(const char *buf, size_t len, char *mirror, size_t mirror_cap, char *topic,
			    size_t topic_cap, struct mirror_record *r);

#endif
