/*
 * testmirror — an offset-preserving Kafka mirror for syncgate's tests.
 *
 * Copies every partition of the given source topics, in order, to the same
 * partition of the same-named destination topic: key, value, headers and
 * timestamp. The destination producer is idempotent with acks=all and an
 * unlimited delivery timeout, so on a fresh, non-transactional destination
 * topic every record lands at the same offset it has on the source. It stands
 * in for offset-preserving links (Cluster Linking, Redpanda Shadowing,
 * WarpStream Orbit, AutoMQ Linking, KIP-1279) in integration tests.
 *
 * Resuming: it commits no position; it starts each partition at the
 * destination's high watermark (read_uncommitted), so a mirror killed and
 * started again continues exactly where the destination stands and offsets
 * stay identical. Records the killed instance had sent but whose delivery was
 * not confirmed may still land after that first read (a request already in
 * the broker, a follower that has not fetched it yet): so a partition whose
 * destination is not empty is copied only once its high watermark has not
 * moved for --settle-ms (default 1500; make it longer than the time a dead
 * destination follower can stay in the ISR when one may be down). Every
 * delivery report is checked: a record that landed at another offset than
 * its source offset is logged ("offsets diverged"), and is fatal (exit 3)
 * with --strict. Transactional source topics (control records leave offset
 * gaps) do not keep offsets. It reads read_uncommitted, and a consumer only
 * ever sees records below the source high watermark, i.e. records the
 * source already acknowledged to acks=all producers.
 *
 * A partition is copied only once it exists on both sides; with
 * --create-topics the destination topic is created (same partition count,
 * --rf replicas) when missing. New topics and partitions are discovered every
 * --refresh-ms.  Pause / resume: SIGSTOP / SIGCONT. Stops cleanly (flushes
 * what it has read) on SIGTERM or SIGINT. A record the destination refuses for
 * good (e.g. topic deleted) is fatal: it exits 3, because the offsets would
 * no longer match. A fatal error of the idempotent producer itself (librdkafka
 * gives up on its sequence state, e.g. after a destination leader change)
 * restarts the process in place (same pid), resuming as above.
 *
 * Build: cc -std=c11 -O2 -Wall -Wextra -o testmirror testmirror.c \
 *           $(pkg-config --cflags --libs rdkafka)
 * A --topic starting with '^' is a POSIX extended regex matched against the
 * source's topic names (topics starting with "__" never match a regex).
 *
 * Usage: testmirror --source BOOTSTRAP --dest BOOTSTRAP --topic T [--topic T2...]
 *                   [--create-topics [--rf N]] [--refresh-ms MS] [--settle-ms MS] [--strict] [--verbose]
 *                   [-S key=value (source consumer)] [-D key=value (dest producer)]
 * Thread: single-threaded main loop (librdkafka runs its own threads).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#define TM_MAX_TOPICS 1024
#define TM_MAX_PATTERNS 64
#define TM_MAX_PARTS 1024

/* One mirrored topic: how many of its partitions are assigned so far. */
struct tm_topic {
    char *tt_name;        /* topic name on both sides (owned) */
    int tt_assigned;      /* partitions 0..tt_assigned-1 are being copied */
    bool tt_create_tried; /* destination creation requested once already */
};

static volatile sig_atomic_t tm_stop;      /* set by SIGTERM / SIGINT */
static volatile int tm_fatal;              /* set by a failed delivery */
static volatile int tm_fatal_idempotence;  /* the producer's idempotence state is fatally broken */
static bool tm_verbose, tm_strict;
static int tm_settle_ms = 1500;
static int64_t tm_copied, tm_delivered, tm_diverged;

static void tm_log(const char *fmt, ...) {
    char ts[32];
    time_t now = time(NULL);
    struct tm tmv;
    va_list ap;
    strftime(ts, sizeof ts, "%H:%M:%S", localtime_r(&now, &tmv));
    fprintf(stderr, "[%s] testmirror: ", ts);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static void tm_on_signal(int sig) {
    (void)sig;
    tm_stop = 1;
}

static int64_t tm_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Delivery report (runs in rd_kafka_poll on the main thread). */
static void tm_on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk;
    (void)opaque;
    if (m->err) {
        tm_log("FATAL: delivery to %s [%" PRId32 "] failed: %s — offsets no longer match",
               rd_kafka_topic_name(m->rkt), m->partition, rd_kafka_err2str(m->err));
        tm_fatal = 1;
        return;
    }
    tm_delivered++;
    int64_t want = (int64_t)(intptr_t)m->_private; /* the source offset, see tm_copy */
    if (m->offset < 0) {
        /* persisted, offset not reported (e.g. a retried batch answered
         * DUPLICATE_SEQUENCE_NUMBER): nothing to compare */
    } else if (m->offset != want) {
        if (tm_diverged++ < 10 || tm_strict)
            tm_log("%soffsets diverged: %s [%" PRId32 "] source offset %" PRId64
                   " landed at destination offset %" PRId64,
                   tm_strict ? "FATAL: " : "", rd_kafka_topic_name(m->rkt), m->partition, want, m->offset);
        if (tm_strict)
            tm_fatal = 1;
    }
}

static void tm_on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
    (void)opaque;
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char buf[512];
        rd_kafka_fatal_error(rk, buf, sizeof buf);
        tm_log("FATAL: %s: %s", rd_kafka_name(rk), buf);
        tm_fatal = 1;
        tm_fatal_idempotence = 1;
    } else if (tm_verbose) {
        tm_log("%s: %s: %s", rd_kafka_name(rk), rd_kafka_err2name(err), reason);
    }
}

static void tm_set(rd_kafka_conf_t *conf, const char *kv) {
    char errstr[512], key[256];
    const char *eq = strchr(kv, '=');
    if (!eq || (size_t)(eq - kv) >= sizeof key) {
        tm_log("bad property '%s' (want key=value)", kv);
        exit(2);
    }
    memcpy(key, kv, (size_t)(eq - kv));
    key[eq - kv] = '\0';
    if (rd_kafka_conf_set(conf, key, eq + 1, errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
        tm_log("property %s: %s", key, errstr);
        exit(2);
    }
}

/* Partition count of `topic` in `md`: -1 when missing or in error. */
static int tm_md_parts(const rd_kafka_metadata_t *md, const char *topic) {
    for (int i = 0; i < md->topic_cnt; i++)
        if (strcmp(md->topics[i].topic, topic) == 0)
            return md->topics[i].err ? -1 : md->topics[i].partition_cnt;
    return -1;
}

static void tm_create_dest(rd_kafka_t *prod, const char *topic, int parts, int rf) {
    char errstr[512];
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, parts, rf, errstr, sizeof errstr);
    if (!nt) {
        tm_log("cannot create %s: %s", topic, errstr);
        return;
    }
    rd_kafka_queue_t *q = rd_kafka_queue_new(prod);
    rd_kafka_CreateTopics(prod, &nt, 1, NULL, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 15000);
    const rd_kafka_CreateTopics_result_t *res = ev ? rd_kafka_event_CreateTopics_result(ev) : NULL;
    if (!res) {
        tm_log("create %s on destination: %s", topic,
               ev ? rd_kafka_event_error_string(ev) : "timed out");
    } else {
        size_t n;
        const rd_kafka_topic_result_t **tr = rd_kafka_CreateTopics_result_topics(res, &n);
        rd_kafka_resp_err_t err = n ? rd_kafka_topic_result_error(tr[0]) : RD_KAFKA_RESP_ERR_NO_ERROR;
        if (err && err != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
            tm_log("create %s on destination: %s", topic, rd_kafka_topic_result_error_string(tr[0]));
        else
            tm_log("created destination topic %s (%d partitions, rf %d)", topic, parts, rf);
    }
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_NewTopic_destroy(nt);
}

/* Where to start copying topic[partition]: the destination's high
 * watermark once it has not moved for tm_settle_ms (0 at once when the
 * destination partition is empty); -1 when it cannot be read. */
static int64_t tm_resume_offset(rd_kafka_t *prod, const char *topic, int partition) {
    int64_t lo, hi, prev = -1, stable_since = 0;
    for (;;) {
        rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(prod, topic, partition, &lo, &hi, 5000);
        if (err) {
            tm_log("%s [%d]: destination high watermark: %s", topic, partition, rd_kafka_err2str(err));
            return -1;
        }
        int64_t now = tm_now_ms();
        if (hi == 0)
            return 0;
        if (hi != prev) {
            if (prev >= 0)
                tm_log("%s [%d]: destination high watermark moved %" PRId64 " -> %" PRId64 " (settling)",
                       topic, partition, prev, hi);
            prev = hi;
            stable_since = now;
        } else if (now - stable_since >= tm_settle_ms) {
            return hi;
        }
        if (tm_stop)
            return -1;
        rd_kafka_poll(prod, 100);
    }
}

/* Find partitions present on both sides and not yet assigned; assign them
 * at the destination's high watermark. Returns false on a metadata failure
 * (retried later). */
static regex_t tm_patterns[TM_MAX_PATTERNS];
static int tm_npatterns;

/* Track `name` (copied) unless tracked already or the table is full. */
static void tm_track(struct tm_topic *topics, int *ntopics, const char *name) {
    for (int i = 0; i < *ntopics; i++)
        if (!strcmp(topics[i].tt_name, name))
            return;
    if (*ntopics == TM_MAX_TOPICS) {
        tm_log("too many topics, ignoring %s", name);
        return;
    }
    topics[(*ntopics)++] = (struct tm_topic){.tt_name = strdup(name)};
}

static bool tm_discover(rd_kafka_t *cons, rd_kafka_t *prod, struct tm_topic *topics, int *ntopicsp,
                        bool create, int rf) {
    const rd_kafka_metadata_t *smd = NULL, *dmd = NULL;
    rd_kafka_resp_err_t err;
    bool ok = false;

    if ((err = rd_kafka_metadata(cons, 1, NULL, &smd, 5000))) {
        tm_log("source metadata: %s", rd_kafka_err2str(err));
        goto out;
    }
    if ((err = rd_kafka_metadata(prod, 1, NULL, &dmd, 5000))) {
        tm_log("destination metadata: %s", rd_kafka_err2str(err));
        goto out;
    }
    for (int i = 0; i < smd->topic_cnt; i++) {
        const char *name = smd->topics[i].topic;
        if (!strncmp(name, "__", 2))
            continue;
        for (int r = 0; r < tm_npatterns; r++)
            if (regexec(&tm_patterns[r], name, 0, NULL, 0) == 0) {
                tm_track(topics, ntopicsp, name);
                break;
            }
    }
    int ntopics = *ntopicsp;
    rd_kafka_topic_partition_list_t *add = rd_kafka_topic_partition_list_new(8);
    for (int t = 0; t < ntopics; t++) {
        struct tm_topic *tt = &topics[t];
        int sp = tm_md_parts(smd, tt->tt_name), dp = tm_md_parts(dmd, tt->tt_name);
        if (sp <= 0)
            continue;
        if (dp < 0 && create && !tt->tt_create_tried) {
            tt->tt_create_tried = true;
            tm_create_dest(prod, tt->tt_name, sp, rf);
            continue; /* picked up on the next round */
        }
        int both = sp < dp ? sp : dp;
        if (both > TM_MAX_PARTS)
            both = TM_MAX_PARTS;
        if (dp >= 0 && dp < sp && tt->tt_assigned < sp && tm_verbose)
            tm_log("%s: destination has %d partitions, source %d; copying %d", tt->tt_name, dp, sp, both);
        int first = tt->tt_assigned;
        for (int p = first; p < both; p++) {
            int64_t at = tm_resume_offset(prod, tt->tt_name, p);
            if (at < 0) { /* destination not answering: retried next round */
                both = p;
                break;
            }
            rd_kafka_topic_partition_list_add(add, tt->tt_name, p)->offset = at;
            if (at > 0 || tm_verbose)
                tm_log("%s [%d]: resuming at destination high watermark %" PRId64, tt->tt_name, p, at);
        }
        if (both > tt->tt_assigned) {
            tm_log("copying %s partitions %d..%d", tt->tt_name, tt->tt_assigned, both - 1);
            tt->tt_assigned = both;
        }
    }
    if (add->cnt > 0) {
        rd_kafka_error_t *e = rd_kafka_incremental_assign(cons, add);
        if (e) {
            tm_log("FATAL: assign: %s", rd_kafka_error_string(e));
            rd_kafka_error_destroy(e);
            tm_fatal = 1;
        }
    }
    rd_kafka_topic_partition_list_destroy(add);
    ok = true;
out:
    if (smd)
        rd_kafka_metadata_destroy(smd);
    if (dmd)
        rd_kafka_metadata_destroy(dmd);
    return ok;
}

/* Produce one consumed record to the same topic/partition, waiting while
 * the local queue is full. Returns false on stop/fatal. */
static bool tm_copy(rd_kafka_t *prod, const rd_kafka_message_t *m) {
    rd_kafka_headers_t *src_hdrs = NULL, *hdrs = NULL;
    rd_kafka_timestamp_type_t tstype;
    int64_t ts = rd_kafka_message_timestamp(m, &tstype);
    if (rd_kafka_message_headers(m, &src_hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR)
        hdrs = rd_kafka_headers_copy(src_hdrs);
    for (;;) {
        rd_kafka_resp_err_t err = rd_kafka_producev(
            prod, RD_KAFKA_V_TOPIC(rd_kafka_topic_name(m->rkt)), RD_KAFKA_V_PARTITION(m->partition),
            RD_KAFKA_V_KEY(m->key, m->key_len), RD_KAFKA_V_VALUE(m->payload, m->len),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_TIMESTAMP(ts > 0 ? ts : 0),
            RD_KAFKA_V_HEADERS(hdrs), RD_KAFKA_V_OPAQUE((void *)(intptr_t)m->offset), RD_KAFKA_V_END);
        if (!err) {
            tm_copied++;
            return true; /* headers now owned by librdkafka */
        }
        if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL && !tm_stop && !tm_fatal) {
            rd_kafka_poll(prod, 10);
            continue;
        }
        tm_log("FATAL: produce to %s [%" PRId32 "]: %s", rd_kafka_topic_name(m->rkt), m->partition,
               rd_kafka_err2str(err));
        if (hdrs)
            rd_kafka_headers_destroy(hdrs);
        tm_fatal = 1;
        return false;
    }
}

static void usage(void) {
    fprintf(stderr,
            "usage: testmirror --source BOOTSTRAP --dest BOOTSTRAP --topic T [--topic T2...]   (T: name or ^regex)\n"
            "                  [--create-topics [--rf N]] [--refresh-ms MS] [--settle-ms MS] [--strict] [--verbose]\n"
            "                  [-S key=value (source consumer)] [-D key=value (dest producer)]\n");
    exit(2);
}

int main(int argc, char **argv) {
    const char *src = NULL, *dst = NULL;
    struct tm_topic topics[TM_MAX_TOPICS];
    int ntopics = 0, npatterns_args = 0, rf = 1, refresh_ms = 500;
    bool create = false;
    char errstr[512];
    rd_kafka_conf_t *cconf = rd_kafka_conf_new(), *pconf = rd_kafka_conf_new();

    tm_set(cconf, "group.id=syncgate-testmirror"); /* required, never joined: we assign() */
    tm_set(cconf, "enable.auto.commit=false");
    tm_set(cconf, "enable.auto.offset.store=false");
    tm_set(cconf, "auto.offset.reset=earliest");
    tm_set(cconf, "isolation.level=read_uncommitted");
    tm_set(cconf, "fetch.wait.max.ms=10");
    tm_set(cconf, "fetch.error.backoff.ms=20");
    tm_set(cconf, "topic.metadata.refresh.interval.ms=5000");
    tm_set(cconf, "client.id=syncgate-testmirror");
    tm_set(pconf, "enable.idempotence=true");
    tm_set(pconf, "acks=all");
    tm_set(pconf, "linger.ms=0");
    tm_set(pconf, "message.timeout.ms=0"); /* retry forever: a gap would shift offsets */
    tm_set(pconf, "max.in.flight.requests.per.connection=5");
    tm_set(pconf, "client.id=syncgate-testmirror");

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (!strcmp(a, "--source") && has)
            src = argv[++i];
        else if (!strcmp(a, "--dest") && has)
            dst = argv[++i];
        else if (!strcmp(a, "--topic") && has) {
            const char *t = argv[++i];
            if (t[0] == '^') {
                if (tm_npatterns == TM_MAX_PATTERNS ||
                    regcomp(&tm_patterns[tm_npatterns], t, REG_EXTENDED | REG_NOSUB) != 0) {
                    tm_log("bad or too many topic regexes: %s", t);
                    return 2;
                }
                tm_npatterns++;
                npatterns_args++;
            } else {
                tm_track(topics, &ntopics, t);
            }
        } else if (!strcmp(a, "--create-topics"))
            create = true;
        else if (!strcmp(a, "--rf") && has)
            rf = atoi(argv[++i]);
        else if (!strcmp(a, "--refresh-ms") && has)
            refresh_ms = atoi(argv[++i]);
        else if (!strcmp(a, "--settle-ms") && has)
            tm_settle_ms = atoi(argv[++i]);
        else if (!strcmp(a, "--strict"))
            tm_strict = true;
        else if (!strcmp(a, "--verbose"))
            tm_verbose = true;
        else if (!strcmp(a, "-S") && has)
            tm_set(cconf, argv[++i]);
        else if (!strcmp(a, "-D") && has)
            tm_set(pconf, argv[++i]);
        else
            usage();
    }
    if (!src || !dst || ntopics + npatterns_args == 0 || rf < 1 || refresh_ms < 10 || tm_settle_ms < 0)
        usage();

    char bs[1024];
    snprintf(bs, sizeof bs, "bootstrap.servers=%s", src);
    tm_set(cconf, bs);
    snprintf(bs, sizeof bs, "bootstrap.servers=%s", dst);
    tm_set(pconf, bs);
    rd_kafka_conf_set_error_cb(cconf, tm_on_error);
    rd_kafka_conf_set_error_cb(pconf, tm_on_error);
    rd_kafka_conf_set_dr_msg_cb(pconf, tm_on_delivery);

    struct sigaction sa = {.sa_handler = tm_on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    rd_kafka_t *prod = rd_kafka_new(RD_KAFKA_PRODUCER, pconf, errstr, sizeof errstr);
    if (!prod) {
        tm_log("producer: %s", errstr);
        return 2;
    }
    rd_kafka_t *cons = rd_kafka_new(RD_KAFKA_CONSUMER, cconf, errstr, sizeof errstr);
    if (!cons) {
        tm_log("consumer: %s", errstr);
        return 2;
    }
    tm_log("started: %s -> %s, %d topic(s), %d regex(es), librdkafka %s", src, dst, ntopics, tm_npatterns,
           rd_kafka_version_str());

    int64_t next_discover = 0, next_report = tm_now_ms() + 5000, last_copied = 0;
    while (!tm_stop && !tm_fatal) {
        int64_t now = tm_now_ms();
        if (now >= next_discover) {
            tm_discover(cons, prod, topics, &ntopics, create, rf);
            next_discover = tm_now_ms() + refresh_ms;
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(cons, 5);
        if (m) {
            if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR)
                tm_copy(prod, m);
            else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                tm_log("consume %s [%" PRId32 "]: %s", m->rkt ? rd_kafka_topic_name(m->rkt) : "-",
                       m->partition, rd_kafka_message_errstr(m));
            rd_kafka_message_destroy(m);
        }
        rd_kafka_poll(prod, 0); /* delivery reports */
        if (tm_verbose && now >= next_report) {
            if (tm_copied != last_copied)
                tm_log("copied %" PRId64 ", delivered %" PRId64, tm_copied, tm_delivered);
            last_copied = tm_copied;
            next_report = now + 5000;
        }
    }

    tm_log("stopping: flushing %d in-flight record(s)", rd_kafka_outq_len(prod));
    rd_kafka_resp_err_t ferr = tm_fatal ? RD_KAFKA_RESP_ERR_NO_ERROR : rd_kafka_flush(prod, 10000);
    if (ferr)
        tm_log("flush: %s", rd_kafka_err2str(ferr));
    rd_kafka_consumer_close(cons);
    rd_kafka_destroy(cons);
    rd_kafka_destroy(prod);
    tm_log("stopped: copied %" PRId64 ", delivered %" PRId64 ", diverged %" PRId64, tm_copied, tm_delivered,
           tm_diverged);
    for (int t = 0; t < ntopics; t++)
        free(topics[t].tt_name);
    for (int r = 0; r < tm_npatterns; r++)
        regfree(&tm_patterns[r]);
    if (tm_fatal_idempotence && !tm_stop) {
        /* e.g. librdkafka's "rewound sequence number" after a destination
         * leader change: what reached the destination is a prefix of what we
         * sent, so start over like a restarted mirror, at the destination's
         * high watermarks. */
        tm_log("restarting: resuming at the destination's high watermarks");
        execv("/proc/self/exe", argv);
        tm_log("FATAL: re-exec: %s", strerror(errno));
    }
    return tm_fatal ? 3 : 0;
}
