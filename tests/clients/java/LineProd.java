// LineProd: Java kafka-clients producer (2.8 .. 4.x) speaking the
// tests/clients protocol. Options: idempotent=0|1 request_timeout_ms retries
// delivery_timeout_ms.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.serialization.StringSerializer;

public class LineProd {
    static final Object LOCK = new Object();
    static int pending = 0;

    static void line(String s) {
        synchronized (LOCK) {
            System.out.println(s);
            System.out.flush();
        }
    }

    static void done(String s) {
        synchronized (LOCK) {
            System.out.println(s);
            System.out.flush();
            pending--;
            LOCK.notifyAll();
        }
    }

    static void waitAll() throws InterruptedException {
        synchronized (LOCK) {
            while (pending > 0) LOCK.wait();
        }
    }

    public static void main(String[] a) throws Exception {
        Map<String, String> o = new HashMap<>();
        for (int i = 2; i < a.length; i++) {
            String[] kv = a[i].split("=", 2);
            o.put(kv[0], kv[1]);
        }
        String topic = a[1];
        Properties p = new Properties();
        p.put("bootstrap.servers", a[0]);
        p.put("acks", "all");
        p.put("enable.idempotence", o.getOrDefault("idempotent", "1").equals("1") ? "true" : "false");
        p.put("request.timeout.ms", o.getOrDefault("request_timeout_ms", "3000"));
        p.put("delivery.timeout.ms", o.getOrDefault("delivery_timeout_ms", "120000"));
        p.put("retries", o.getOrDefault("retries", "2147483647"));
        p.put("retry.backoff.ms", "100");
        p.put("linger.ms", "5");
        p.put("max.in.flight.requests.per.connection", "5");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> prod = new KafkaProducer<>(p)) {
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
            String l;
            while ((l = in.readLine()) != null) {
                String[] f = l.trim().split("\\s+");
                if (f.length == 3 && f[0].equals("send")) {
                    final int part = Integer.parseInt(f[1]);
                    final String v = f[2];
                    synchronized (LOCK) { pending++; }
                    prod.send(new ProducerRecord<>(topic, part, null, v), (md, e) -> {
                        if (e == null) {
                            done("ACK " + md.partition() + " " + md.offset() + " " + v);
                        } else {
                            String code = e instanceof ApiException ? " code=" + Errors.forException(e).code() : "";
                            done("ERR " + part + " " + v + " " + e.getClass().getSimpleName() + code
                                 + " retriable=" + (e instanceof RetriableException) + " "
                                 + String.valueOf(e.getMessage()).replace('\n', ' '));
                        }
                    });
                } else if (f.length == 1 && f[0].equals("flush")) {
                    prod.flush();
                    waitAll();
                    line("FLUSHED");
                } else if (!f[0].isEmpty()) {
                    System.err.println("bad line " + l);
                    System.exit(2);
                }
            }
            prod.flush();
            waitAll();
        }
        line("DONE");
    }
}
