/*
 * ctl_print.c — how syncgate-ctl prints the admin API's answers as tables
 * (--output table): --describe, the per-topic results of mutating calls,
 * and the failover/verify document. --output json prints them as received.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "proxy/cmd/ctl.h"

/* One note line per distinct stall reason of a topic's partitions (why acks
 * and promotion wait although the destination has the records). */
static void print_stalls(const json_t *t)
{
	size_t k, q;
	json_t *p, *r;
	json_array_foreach(json_object_get(t, "partitions"), k, p) {
		const char *why = json_string_value(json_object_get(p, "stall_reason"));
		bool first = true;
		json_array_foreach(json_object_get(t, "partitions"), q, r) {
			const char *w2 = json_string_value(json_object_get(r, "stall_reason"));
			if (q < k && w2 && why && !strcmp(w2, why))
				first = false;
		}
		if (!why || !first)
			continue;
		printf("  stalled:");
		json_array_foreach(json_object_get(t, "partitions"), q, r) {
			const char *w2 = json_string_value(json_object_get(r, "stall_reason"));
			if (w2 && !strcmp(w2, why))
				printf(" %lld", (long long)json_integer_value(json_object_get(r, "partition")));
		}
		printf(": %s%s\n", why, strstr(why, "offset-syncs") ?
		       " (the record match stopped, see the log's mirror_mm2_match_stopped; MirrorMaker 2 needs "
		       "offset.lag.max=0)" : "");
	}
}

void ctl_print_describe(const json_t *doc)
{
	const char *serving = json_string_value(json_object_get(doc, "serving"));
	if (serving && strcmp(serving, "source") != 0)
		printf("serving: the destination of mirror %s (switched)\n", serving);
	printf("%-12s %-28s %-8s %-9s %-8s %-9s %-8s %s\n", "MIRROR", "TOPIC", "DESIRED",
	       "EFFECTIVE", "RELEASED", "RECOVERY", "LAG", "DESTINATION OFFSETS (partition=offset)");
	size_t i, j, k;
	json_t *m, *t, *p;
	json_array_foreach(json_object_get(doc, "mirrors"), i, m) {
		json_array_foreach(json_object_get(m, "topics"), j, t) {
			char lag[24] = "?"; /* null: some partition's progress is unknown */
			const json_t *jl = json_object_get(t, "lag");
			if (json_is_integer(jl) && json_integer_value(jl) >= 0)
				snprintf(lag, sizeof(lag), "%lld", (long long)json_integer_value(jl));
			printf("%-12s %-28s %-8s %-9s %-8s %-9s %-8s ",
			       json_string_value(json_object_get(m, "name")),
			       json_string_value(json_object_get(t, "topic")),
			       json_string_value(json_object_get(t, "desired")),
			       json_string_value(json_object_get(t, "effective")),
			       json_is_true(json_object_get(t, "released")) ? "yes" : "no",
			       json_is_true(json_object_get(t, "recovery_pending")) ? "pending" : "-",
			       lag);
			json_array_foreach(json_object_get(t, "partitions"), k, p) {
				const char *why = json_string_value(json_object_get(p, "failing_reason"));
				const json_t *jp = json_object_get(p, "progress");
				char off[24] = "?";
				if (json_is_integer(jp) && json_integer_value(jp) >= 0)
					snprintf(off, sizeof(off), "%lld", (long long)json_integer_value(jp));
				printf("%s%lld=%s%s%s", k ? " " : "",
				       (long long)json_integer_value(json_object_get(p, "partition")), off,
				       why && *why ? "!" : "", why && *why ? why : "");
			}
			printf("\n");
			print_stalls(t);
			if (json_is_true(json_object_get(t, "fenced")))
				printf("  fenced for failover: Produce refused on every sidecar (syncgate-ctl unfence lifts it)\n");
		}
	}
}

/* Print a mutating call's per-topic results; returns 1 when any was REJECTED. */
int ctl_print_results(const json_t *doc)
{
	int rejected = 0;
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(doc, "topics"), i, t) {
		const char *result = json_string_value(json_object_get(t, "result"));
		const char *msg = json_string_value(json_object_get(t, "message"));
		printf("%-28s %-12s %s\n", json_string_value(json_object_get(t, "topic")),
		       result ? result : "?", msg ? msg : "");
		if (result && !strcmp(result, "REJECTED"))
			rejected = 1;
	}
	return rejected;
}

static const char *jstr(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

static void jnum(char *buf, size_t cap, const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	if (json_is_integer(v))
		snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
	else
		snprintf(buf, cap, "?");
}

/* Exit code of a failover/verify answer: 0 verified, 3 a cluster
 * unreachable, else 1. */
int ctl_failover_exit(const json_t *doc)
{
	if (json_is_string(json_object_get(doc, "unreachable")))
		return 3;
	return json_is_true(json_object_get(doc, "verified")) ? 0 : 1;
}

/* The failover/verify document as tables; returns the exit code. */
int ctl_print_failover(const json_t *doc)
{
	const char *mode = jstr(doc, "mode");
	bool dest_only = !strcmp(mode, "verify-destination-only");
	printf("mirror %s (offsets: %s), %s%s\n", jstr(doc, "mirror"), jstr(doc, "offsets"), mode,
	       json_is_true(json_object_get(doc, "fenced")) ? ", source fenced" : "");
	size_t i, k;
	json_t *p, *s;
	json_array_foreach(json_object_get(doc, "steps"), i, s) {
		json_t *a = json_object_get(s, "answer");
		printf("step %s (HTTP %lld):", jstr(s, "step"), (long long)json_integer_value(json_object_get(s, "status")));
		json_array_foreach(json_object_get(a, "topics"), k, p)
			printf(" %s=%s", jstr(p, "topic"), jstr(p, "result"));
		if (json_object_get(a, "error"))
			printf(" %s", jstr(a, "error"));
		printf("\n");
	}
	/* a dry run and verify sample the source once, when the drain starts
	 * (nothing is fenced: it moves on); the destination is read after */
	bool sampled = !strcmp(mode, "dry-run") || !strcmp(mode, "verify");
	printf("%-24s %-9s %-9s %-12s %-12s %-12s %-8s %s\n", "TOPIC", "PARTITION", "STATUS",
	       dest_only ? "CONFIRMED" : sampled ? "SRC HW@START" : "SOURCE HW", "DEST HW", "PROGRESS", "MISSING",
	       "DETAIL");
	json_array_foreach(json_object_get(doc, "partitions"), i, p) {
		char a[24], b[24], c[24], d[24];
		jnum(a, sizeof(a), p, dest_only ? "confirmed" : "target");
		jnum(b, sizeof(b), p, "destination_hw");
		jnum(c, sizeof(c), p, "progress");
		jnum(d, sizeof(d), p, "missing");
		printf("%-24s %-9lld %-9s %-12s %-12s %-12s %-8s %s\n", jstr(p, "topic"),
		       (long long)json_integer_value(json_object_get(p, "partition")), jstr(p, "status"), a, b, c, d,
		       jstr(p, "detail"));
	}
	if (sampled)
		printf("(SRC HW@START: the source high watermark when the drain started, the point the destination "
		       "had to reach; the source is not fenced, so it may be past it now. DEST HW and PROGRESS: read "
		       "after the drain)\n");
	if (json_array_size(json_object_get(doc, "groups"))) {
		printf("\n%-24s %-24s %-9s %-10s %-10s %-11s %s\n", "GROUP", "TOPIC", "PARTITION", "SOURCE", "DEST",
		       "ACTION", "NOTE");
		json_array_foreach(json_object_get(doc, "groups"), i, p) {
			char a[24], b[24];
			jnum(a, sizeof(a), p, "source_offset");
			jnum(b, sizeof(b), p, "destination_offset");
			printf("%-24s %-24s %-9lld %-10s %-10s %-11s %s\n", jstr(p, "group"), jstr(p, "topic"),
			       (long long)json_integer_value(json_object_get(p, "partition")), a, b, jstr(p, "action"),
			       jstr(p, "note"));
		}
	} else if (!strcmp(mode, "failover") || !strcmp(mode, "dry-run")) {
		printf("\nconsumer groups: none %s\n", json_is_true(json_object_get(doc, "verified"))
							      ? "committed offsets on these topics" : "moved (not verified)");
	}
	if (json_object_get(doc, "groups_note"))
		printf("consumer groups: %s\n", jstr(doc, "groups_note"));
	if (json_object_get(doc, "would_release"))
		printf("would release mirror %s for these topics (sticky Released marker) and keep the source fenced\n",
		       jstr(doc, "would_release"));
	if (json_is_true(json_object_get(doc, "released")))
		printf("released mirror %s; the source stays fenced until: syncgate-ctl unfence --mirror %s\n",
		       jstr(doc, "mirror"), jstr(doc, "mirror"));
	printf("\n%s\n", jstr(doc, "verdict"));
	return ctl_failover_exit(doc);
}

int ctl_switch_exit(const json_t *doc)
{
	return json_is_true(json_object_get(doc, "dry_run")) && !json_is_true(json_object_get(doc, "would_switch"));
}

int ctl_print_switch(const json_t *doc)
{
	bool dry = json_is_true(json_object_get(doc, "dry_run"));
	printf("mirror %s%s: serving %s\n", jstr(doc, "mirror"), dry ? " (dry run: nothing changed)" : "",
	       jstr(doc, "serving"));
	printf("  destination bootstrap: %s\n", jstr(doc, "destination_bootstrap"));
	printf("  node listeners:        %s\n", jstr(doc, "node_listeners"));
	printf("  clients:               %s\n", jstr(doc, "clients"));
	ctl_print_results(doc);
	if (dry)
		printf("would switch now: %s%s%s\n", json_is_true(json_object_get(doc, "would_switch")) ? "yes" : "no",
		       json_object_get(doc, "refused") ? " — " : "", jstr(doc, "refused"));
	return ctl_switch_exit(doc);
}
