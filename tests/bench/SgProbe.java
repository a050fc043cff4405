/*
 * SgProbe — microsecond-resolution produce latency probe for syncgate's
 * benchmarks (tests/bench/run.sh). kafka-producer-perf-test reports latency
 * in whole milliseconds, too coarse for "≤ 0.3 ms added p99", so the latency
 * figures come from here; throughput comes from ProducerPerformance.
 *
 * One JVM, one warmed-up producer per target, the targets measured in
 * alternating segments (round r measures them in rotated order), so JIT and
 * machine noise hit every target alike.
 *
 *   java -cp 'kafka-libs/*:CLASSDIR' SgProbe
 *        --target NAME=BOOTSTRAP[,TOPIC] ...   (TOPIC default: --topic)
 *        --topic T --partitions P --size BYTES --acks 1|all --inflight N
 *        --rate MSGS_PER_S --count N_PER_SEGMENT --rounds R --warmup N
 *        [--src-tail BOOTSTRAP] [--dst-tail BOOTSTRAP]   (gate split, partition 0 only)
 *        [--sync-tail BOOTSTRAP,OFFSET_SYNCS_TOPIC]      (mm2: when its offset-sync is readable)
 *        --out FILE
 *
 * Output FILE, one line per record:
 *   target round partition offset send_ns ack_ns src_seen_ns dst_seen_ns sync_seen_ns
 * (ns from System.nanoTime, one clock; *_seen_ns = -1 without a tail;
 * sync_seen_ns: the first MirrorMaker 2 offset-sync of partition 0 with
 * upstream offset ≥ the record's was read from the source). A
 * tail is a KafkaConsumer at the end of partition 0 of the topic on that
 * cluster; it sees a record when the cluster's high watermark passes it
 * (read_uncommitted, fetch.max.wait.ms 500 long-poll wakes on HW advance).
 * Errors print to stderr and count in the summary line on stdout.
 */
import java.io.*;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;

import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.*;

public class SgProbe {
    static final class Rec {
        String target; int round; int partition; long offset = -1;
        long send, ack = -1;
    }

    static final class Tail implements Runnable {
        final KafkaConsumer<byte[], byte[]> c;
        final ConcurrentHashMap<Long, Long> seen = new ConcurrentHashMap<>();
        volatile boolean stop;
        Tail(String bootstrap, String topic) {
            Properties p = new Properties();
            p.put("bootstrap.servers", bootstrap);
            p.put("group.id", "sgprobe-" + UUID.randomUUID());
            p.put("enable.auto.commit", "false");
            p.put("isolation.level", "read_uncommitted");
            p.put("fetch.max.wait.ms", "500");
            p.put("fetch.min.bytes", "1");
            c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToEnd(List.of(tp));
            c.position(tp);
        }
        public void run() {
            while (!stop) {
                ConsumerRecords<byte[], byte[]> rs = c.poll(Duration.ofMillis(100));
                long now = System.nanoTime();
                for (ConsumerRecord<byte[], byte[]> r : rs)
                    seen.putIfAbsent(r.offset(), now);
            }
            c.close();
        }
    }

    /** Offset-syncs of (topic, partition 0): upstream offset → first seen, from the end. */
    static final class SyncTail implements Runnable {
        final KafkaConsumer<byte[], byte[]> c;
        final String topic;
        final ConcurrentSkipListMap<Long, Long> seen = new ConcurrentSkipListMap<>();
        volatile boolean stop;
        SyncTail(String bootstrap, String syncTopic, String topic) {
            this.topic = topic;
            Properties p = new Properties();
            p.put("bootstrap.servers", bootstrap);
            p.put("group.id", "sgprobe-" + UUID.randomUUID());
            p.put("enable.auto.commit", "false");
            p.put("fetch.max.wait.ms", "500");
            p.put("fetch.min.bytes", "1");
            c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
            List<TopicPartition> tps = new ArrayList<>();
            for (org.apache.kafka.common.PartitionInfo pi : c.partitionsFor(syncTopic))
                tps.add(new TopicPartition(syncTopic, pi.partition()));
            c.assign(tps);
            c.seekToEnd(tps);
            for (TopicPartition tp : tps) c.position(tp);
        }
        public void run() {
            while (!stop) {
                ConsumerRecords<byte[], byte[]> rs = c.poll(Duration.ofMillis(100));
                long now = System.nanoTime();
                for (ConsumerRecord<byte[], byte[]> r : rs) {
                    java.nio.ByteBuffer k = java.nio.ByteBuffer.wrap(r.key()), v = java.nio.ByteBuffer.wrap(r.value());
                    byte[] t = new byte[k.getShort()];
                    k.get(t);
                    if (!new String(t, java.nio.charset.StandardCharsets.UTF_8).equals(topic) || k.getInt() != 0)
                        continue;
                    seen.putIfAbsent(v.getLong(), now);
                }
            }
            c.close();
        }
        /** When the first sync with upstream ≥ offset was seen, -1 if none. */
        long seenFor(long offset) {
            long best = -1;
            for (Map.Entry<Long, Long> e : seen.tailMap(offset, true).entrySet())
                if (best < 0 || e.getValue() < best) best = e.getValue();
            return best;
        }
    }

    public static void main(String[] a) throws Exception {
        LinkedHashMap<String, String[]> targets = new LinkedHashMap<>();
        String topic = null, acks = "all", out = null, srcTail = null, dstTail = null, syncTail = null;
        int partitions = 1, size = 100, inflight = 5, count = 1000, rounds = 3, warmup = 300;
        double rate = 500;
        for (int i = 0; i < a.length; i++) {
            switch (a[i]) {
                case "--target": {
                    String[] kv = a[++i].split("=", 2);
                    targets.put(kv[0], kv[1].split(",", 2));
                    break;
                }
                case "--topic": topic = a[++i]; break;
                case "--partitions": partitions = Integer.parseInt(a[++i]); break;
                case "--size": size = Integer.parseInt(a[++i]); break;
                case "--acks": acks = a[++i]; break;
                case "--inflight": inflight = Integer.parseInt(a[++i]); break;
                case "--rate": rate = Double.parseDouble(a[++i]); break;
                case "--count": count = Integer.parseInt(a[++i]); break;
                case "--rounds": rounds = Integer.parseInt(a[++i]); break;
                case "--warmup": warmup = Integer.parseInt(a[++i]); break;
                case "--src-tail": srcTail = a[++i]; break;
                case "--dst-tail": dstTail = a[++i]; break;
                case "--sync-tail": syncTail = a[++i]; break;
                case "--out": out = a[++i]; break;
                default: throw new IllegalArgumentException("unknown option " + a[i]);
            }
        }
        byte[] value = new byte[size];
        new Random(1).nextBytes(value);
        Map<String, KafkaProducer<byte[], byte[]>> prods = new LinkedHashMap<>();
        for (Map.Entry<String, String[]> t : targets.entrySet()) {
            Properties p = new Properties();
            p.put("bootstrap.servers", t.getValue()[0]);
            p.put("acks", acks);
            p.put("enable.idempotence", acks.equals("all") ? "true" : "false");
            p.put("max.in.flight.requests.per.connection", Integer.toString(inflight));
            p.put("linger.ms", "0");
            p.put("request.timeout.ms", "60000");
            p.put("delivery.timeout.ms", "120000");
            prods.put(t.getKey(), new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer()));
        }
        Tail st = srcTail != null ? new Tail(srcTail, topic) : null;
        Tail dt = dstTail != null ? new Tail(dstTail, topic) : null;
        for (Tail t : new Tail[] {st, dt})
            if (t != null) { Thread th = new Thread(t); th.setDaemon(true); th.start(); }
        SyncTail yt = syncTail != null ? new SyncTail(syncTail.split(",", 2)[0], syncTail.split(",", 2)[1], topic) : null;
        if (yt != null) { Thread th = new Thread(yt); th.setDaemon(true); th.start(); }

        List<Rec> all = Collections.synchronizedList(new ArrayList<>());
        AtomicLong errors = new AtomicLong();
        List<String> names = new ArrayList<>(targets.keySet());
        // warm-up: every target, not recorded
        for (String n : names) {
            String tp = targets.get(n).length > 1 ? targets.get(n)[1] : topic;
            List<Future<RecordMetadata>> fs = new ArrayList<>();
            for (int i = 0; i < warmup; i++)
                fs.add(prods.get(n).send(new ProducerRecord<>(tp, i % partitions, null, value)));
            for (Future<RecordMetadata> f : fs) f.get();
        }
        long intervalNs = rate > 0 ? (long) (1e9 / rate) : 0;
        for (int r = 0; r < rounds; r++) {
            for (int k = 0; k < names.size(); k++) {
                String n = names.get((k + r) % names.size());
                String tp = targets.get(n).length > 1 ? targets.get(n)[1] : topic;
                KafkaProducer<byte[], byte[]> prod = prods.get(n);
                CountDownLatch done = new CountDownLatch(count);
                long next = System.nanoTime();
                for (int i = 0; i < count; i++) {
                    if (intervalNs > 0) {
                        long now;
                        while ((now = System.nanoTime()) < next) {
                            long d = next - now;
                            if (d > 200_000) LockSupport_parkNanos(d - 100_000);
                        }
                        next += intervalNs;
                    }
                    Rec rec = new Rec();
                    rec.target = n; rec.round = r; rec.partition = i % partitions;
                    rec.send = System.nanoTime();
                    prod.send(new ProducerRecord<>(tp, rec.partition, null, value), (md, e) -> {
                        rec.ack = System.nanoTime();
                        if (e != null) {
                            errors.incrementAndGet();
                            System.err.println("error: " + e);
                        } else {
                            rec.offset = md.offset();
                        }
                        done.countDown();
                    });
                    all.add(rec);
                }
                done.await(300, TimeUnit.SECONDS);
            }
        }
        if (st != null || dt != null || yt != null) Thread.sleep(300); // late tail arrivals
        for (KafkaProducer<byte[], byte[]> p : prods.values()) p.close();
        if (st != null) st.stop = true;
        if (dt != null) dt.stop = true;
        if (yt != null) yt.stop = true;
        try (PrintWriter w = new PrintWriter(new BufferedWriter(new FileWriter(out)))) {
            synchronized (all) {
                for (Rec r : all) {
                    long s = st != null && r.partition == 0 ? st.seen.getOrDefault(r.offset, -1L) : -1;
                    long d = dt != null && r.partition == 0 ? dt.seen.getOrDefault(r.offset, -1L) : -1;
                    long y = yt != null && r.partition == 0 && r.offset >= 0 ? yt.seenFor(r.offset) : -1;
                    w.println(r.target + " " + r.round + " " + r.partition + " " + r.offset + " "
                              + r.send + " " + r.ack + " " + s + " " + d + " " + y);
                }
            }
        }
        System.out.println("records " + all.size() + " errors " + errors.get());
        System.exit(0);
    }

    static void LockSupport_parkNanos(long ns) {
        java.util.concurrent.locks.LockSupport.parkNanos(ns);
    }
}
